"""Lua scripting (issue 17, first round): EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT LOAD/EXISTS/FLUSH/KILL.

Shared with redis-server (reference mode) except where marked ruvio_only (restarts, replicas, shards)."""
import threading
import time

import pytest
import redis

from conftest import HOST, IS_REDIS, poll_until, resp_error
from ruviotest import repl


def sha_of(r, body):
    return r.script_load(body)


# --------------------------------------------------------------------------------------------- conversions

def test_lua_to_resp2_conversions(r):
    assert r.eval("return 1", 0) == 1
    assert r.eval("return 3.99", 0) == 3                    # numbers are truncated to integers
    assert r.eval("return -3.99", 0) == -3
    assert r.eval("return 'a'", 0) == "a"
    assert r.eval("return true", 0) == 1
    assert r.eval("return false", 0) is None
    assert r.eval("return nil", 0) is None
    assert r.eval("return {1, 2, 3.7, nil, 5}", 0) == [1, 2, 3]   # truncated at the first nil
    assert r.eval("return {1, 'a', {2, 3}, true, false}", 0) == [1, "a", [2, 3], 1, None]
    assert r.eval("return {ok='fine'}", 0) == "fine"
    assert r.eval("return redis.status_reply('x')", 0) == "x"
    assert r.eval("return {double=3.5}", 0) == "3.5"         # RESP2: a bulk string
    assert r.eval("return {map={a=1}}", 0) == ["a", 1]


def test_resp2_to_lua_conversions(r):
    r.set("s", "v")
    r.hset("h", mapping={"a": "1"})
    # nil bulk -> false, integer -> number, status -> {ok=...}, array -> table
    assert r.eval("return type(redis.call('get', 'nokey'))", 0) == "boolean"
    assert r.eval("return redis.call('get', 'nokey') == false", 0) == 1
    assert r.eval("return type(redis.call('exists', 's'))", 0) == "number"
    assert r.eval("return redis.call('set', 'x', 1)['ok']", 0) == "OK"
    assert r.eval("return redis.call('hgetall', 'h')", 0) == ["a", "1"]
    assert r.eval("return redis.call('set', 'n', 1.5)", 0) == "OK"
    assert r.get("n") == "1.5"
    assert r.eval("return redis.call('set', 'n', 10)", 0) == "OK"
    assert r.get("n") == "10"


def test_resp3_conversions(server):
    """A RESP3 client (HELLO 3; the raw helper returns bulk strings as bytes)."""
    with server.raw() as c:
        assert c.cmd("HELLO", "3")[b"proto"] == 3
        assert c.cmd("EVAL", "return {1, 'a', true, false}", "0") == [1, b"a", 1, None]
        assert c.cmd("EVAL", "return nil", "0") is None
        assert c.cmd("EVAL", "return {map={a=1, b={1, 2}}}", "0") == {b"a": 1, b"b": [1, 2]}
        assert c.cmd("EVAL", "return {set={a=true, b=true}}", "0") == {b"a", b"b"}
        assert c.cmd("EVAL", "return {double=3.5}", "0") == 3.5
        assert c.cmd("EVAL", "return {big_number='12345678901234567890'}", "0") == 12345678901234567890
        v = c.cmd("EVAL", "return {verbatim_string={format='txt', string='hello'}}", "0")
        assert v == "hello" and v.fmt == "txt"
        c.cmd("HSET", "h", "a", "1")
        c.cmd("ZADD", "z", "1.5", "m")
        # setresp(3): commands' RESP3 replies reach Lua as map/double/nil
        assert c.cmd("EVAL", "redis.setresp(3); return redis.call('hgetall', 'h')", "0") == {b"a": b"1"}
        assert c.cmd("EVAL", "redis.setresp(3); return redis.call('hgetall', 'h')['map']['a']", "0") == b"1"
        assert c.cmd("EVAL", "redis.setresp(3); return redis.call('zscore', 'z', 'm')", "0") == 1.5
        assert c.cmd("EVAL", "redis.setresp(3); return type(redis.call('get', 'nokey'))", "0") == b"nil"
        assert c.cmd("EVAL", "return redis.call('zscore', 'z', 'm')", "0") == b"1.5"
        assert c.cmd("EVAL", "redis.setresp(3); local d = redis.call('zscore', 'z', 'm'); "
                             "return {type(d), d.double}", "0") == [b"table", 1]
        err = c.cmd("EVAL", "redis.setresp(4)", "0")
        assert err.startswith("ERR RESP version must be 2 or 3. script: ")


# --------------------------------------------------------------------------------------------- the redis lib

def test_keys_argv_call_pcall(r):
    assert r.eval("return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", 2, "k1", "k2", "a1", "a2") == ["k1", "k2", "a1", 2]
    assert r.eval("redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])", 1, "k", "v") == "v"
    r.set("str", "x")
    # pcall returns the error as a table; call raises it
    assert r.eval("local e = redis.pcall('incr', KEYS[1]); return e['err']", 1, "str") == \
        "ERR value is not an integer or out of range"
    assert r.eval("local e = redis.pcall('lpush', KEYS[1], 'a'); return e['err']", 1, "str").startswith("WRONGTYPE")
    msg = resp_error(r.eval, "return redis.call('lpush', KEYS[1], 'a')", 1, "str")
    assert msg.startswith("WRONGTYPE Operation against a key holding the wrong kind of value script: ")
    assert r.eval("return redis.sha1hex('')", 0) == "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert r.eval("return redis.replicate_commands()", 0) == 1
    assert r.eval("redis.set_repl(redis.REPL_ALL); return 1", 0) == 1
    assert r.eval("redis.log(redis.LOG_WARNING, 'from a script'); return 1", 0) == 1
    assert r.eval("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", 0) == [0, 1, 2, 3]
    assert r.eval("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_ALL}", 0) == [0, 1, 2, 3]
    assert r.eval("return type(redis.REDIS_VERSION) == 'string' and redis.REDIS_VERSION_NUM > 0x070000", 0) == 1
    assert r.eval("return {bit.band(7, 3), bit.bor(1, 2), bit.tohex(255, 2)}", 0) == [3, 3, "ff"]


def test_error_replies(server):
    with server.raw() as c:
        assert c.cmd("EVAL", "return {err='x'}", "0") == "x"
        assert c.cmd("EVAL", "return redis.error_reply('oops')", "0") == "ERR oops"
        assert c.cmd("EVAL", "return redis.error_reply('E1 oops')", "0") == "E1 oops"
        assert c.cmd("EVAL", "return redis.error_reply('-E1 oops')", "0") == "E1 oops"
        sha = c.cmd("SCRIPT", "LOAD", "error('boom')").decode()
        assert c.cmd("EVALSHA", sha, "0") == "ERR user_script:1: boom script: %s, on @user_script:1." % sha
        sha = c.cmd("SCRIPT", "LOAD", "error({err='My code'})").decode()
        assert c.cmd("EVALSHA", sha, "0") == "My code script: %s, on @user_script:1." % sha
        sha = c.cmd("SCRIPT", "LOAD", "\nerror(redis.error_reply('MY thing'))").decode()
        assert c.cmd("EVALSHA", sha, "0") == "MY thing script: %s, on @user_script:2." % sha
        assert c.cmd("EVAL", "return 1+", "0") == \
            "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'"
        assert c.cmd("EVAL", "local x = redis.call('nosuch')", "0").startswith(
            "ERR Unknown Redis command called from script script: ")
        assert c.cmd("EVAL", "local x = redis.call('get')", "0").startswith(
            "ERR Wrong number of args calling Redis command from script script: ")
        assert c.cmd("EVAL", "local x = redis.call()", "0").startswith(
            "ERR Please specify at least one argument for this redis lib call script: ")
        assert c.cmd("EVAL", "local x = redis.call('get', {})", "0").startswith(
            "ERR Lua redis lib command arguments must be strings or integers script: ")
        assert c.cmd("EVAL", "return 1", "-1") == "ERR Number of keys can't be negative"
        assert c.cmd("EVAL", "return 1", "5", "a") == "ERR Number of keys can't be greater than number of args"
        assert c.cmd("EVAL", "return 1", "x") == "ERR value is not an integer or out of range"
        assert c.cmd("EVALSHA", "0123456789012345678901234567890123456789", "0") == \
            "NOSCRIPT No matching script. Please use EVAL."
        assert c.cmd("EVALSHA", "abc", "0") == "NOSCRIPT No matching script. Please use EVAL."


def test_sandbox(server):
    with server.raw() as c:
        for body, want in [
            ("x = 1", "ERR user_script:1: Attempt to modify a readonly table script: "),
            ("redis.call = 1", "ERR user_script:1: Attempt to modify a readonly table script: "),
            ("string.foo = 1", "ERR user_script:1: Attempt to modify a readonly table script: "),
            ("return y", "ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: "),
            ("return os", "ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: "),
            ("return io", "ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: "),
            ("return loadfile", "ERR user_script:1: Script attempted to access nonexistent global variable "
                                "'loadfile' script: "),
            ("return dofile", "ERR user_script:1: Script attempted to access nonexistent global variable "
                              "'dofile' script: "),
            ("return require", "ERR user_script:1: Script attempted to access nonexistent global variable "
                               "'require' script: "),
            ("return getfenv", "ERR user_script:1: Script attempted to access nonexistent global variable "
                               "'getfenv' script: "),
            ("_G.x = 1", "ERR user_script:1: Attempt to modify a readonly table script: "),
            ("rawset(_G, 'x', 1)", "ERR Attempt to modify a readonly table script: "),
            ("rawset(redis, 'call', 1)", "ERR Attempt to modify a readonly table script: "),
        ]:
            got = c.cmd("EVAL", body, "0")
            assert isinstance(got, str) and got.startswith(want), (body, got)
        # locals are fine, and nothing leaks between scripts
        assert c.cmd("EVAL", "local t = {} t.x = 1 rawset(t, 'y', 2) return t.x + t.y", "0") == 3
        assert c.cmd("EVAL", "return type(_G.string)", "0") == b"table"
        assert c.cmd("EVAL", "return cjson.decode(cjson.encode({a={1, 2}}))['a'][2]", "0") == 2


def test_commands_refused_in_scripts(r):
    for body in ["return redis.call('multi')", "return redis.call('blpop', 'l', 0)",
                 "return redis.call('eval', 'return 1', 0)", "return redis.call('subscribe', 'ch')",
                 "return redis.call('config', 'set', 'maxmemory', '1')", "return redis.call('watch', 'k')"]:
        msg = resp_error(r.eval, body, 0)
        assert msg.startswith("This Redis command is not allowed from script script: "), (body, msg)
    # BLMPOP is allowed (Redis 7.0) and never blocks in a script
    assert r.eval("return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", 1, "bl") is None
    r.rpush("bl", "a")
    assert r.eval("return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", 1, "bl") == ["bl", ["a"]]
    msg = resp_error(r.eval_ro if hasattr(r, "eval_ro") else
                     (lambda *a: r.execute_command("EVAL_RO", *a)), "return redis.call('set', KEYS[1], 'b')", 1, "a")
    assert msg.startswith("Write commands are not allowed from read-only scripts. script: ")
    assert r.exists("a") == 0
    r.set("a", "1")
    assert r.execute_command("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "a") == "1"
    sha = r.script_load("return redis.call('get', KEYS[1])")
    assert r.execute_command("EVALSHA_RO", sha, 1, "a") == "1"


def test_refused_calls_count_as_rejected_in_commandstats(r):
    """A call a script makes that is refused before it runs (arity, a write in a read-only script) counts in
    the called command's rejected_calls, even when the script catches it with pcall; one that ran and failed
    counts in failed_calls (node-redis and BullMQ scripts surfaced the difference in INFO commandstats)."""
    def stat(name, field):
        return int(r.info("commandstats").get("cmdstat_" + name, {}).get(field, 0))

    fields = ("calls", "rejected_calls", "failed_calls")
    before = {(n, f): stat(n, f) for n in ("get", "set", "incr") for f in fields}

    def delta(n, f):
        return stat(n, f) - before[(n, f)]
    assert r.eval("redis.pcall('get') return 1", 0) == 1                         # swallowed: still rejected
    assert resp_error(r.eval, "return redis.pcall('get', 'a', 'b')", 0).startswith(
        "Wrong number of args calling Redis command from script")
    assert resp_error(r.eval, "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')", 1, "rk").startswith(
        "Write commands are not allowed from read-only scripts.")
    assert resp_error(r.eval, "return redis.pcall('nosuchcommand')", 0).startswith(
        "Unknown Redis command called from script")
    r.set("rs", "text")
    assert resp_error(r.eval, "return redis.pcall('incr', KEYS[1])", 1, "rs") == \
        "value is not an integer or out of range"
    assert (delta("get", "rejected_calls"), delta("get", "calls")) == (2, 0)
    assert (delta("set", "rejected_calls"), delta("set", "calls")) == (1, 1)    # (the call: redis-py's SET)
    assert (delta("incr", "rejected_calls"), delta("incr", "failed_calls"), delta("incr", "calls")) == (0, 1, 1)


def test_shebang_flags(server):
    with server.raw() as c:
        got = c.cmd("EVAL", "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'b')", "1", "a")
        assert got.startswith("ERR Write commands are not allowed from read-only scripts. script: ")
        c.cmd("SET", "a", "1")
        assert c.cmd("EVAL", "#!lua flags=no-writes,allow-oom\nreturn redis.call('get', KEYS[1])", "1", "a") == b"1"
        assert c.cmd("EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "a") == b"1"
        assert c.cmd("EVAL_RO", "#!lua\nreturn 1", "0") == "ERR Can not execute a script with write flag using *_ro command."
        assert c.cmd("EVAL", "#!lua\nreturn redis.call('set', KEYS[1], 'c')", "1", "a") == "OK"
        assert c.cmd("EVAL", "#!lua flags=bogus\nreturn 1", "0") == "ERR Unexpected flag in script shebang: bogus"
        assert c.cmd("EVAL", "#!lua name=x\nreturn 1", "0") == "ERR Unknown lua shebang option: name=x"
        assert c.cmd("EVAL", "#!luax\nreturn 1", "0") == "ERR Unexpected engine in script shebang: #!luax"
        assert c.cmd("EVAL", "#!lua flags=\nreturn 2", "0") == 2
        sha = c.cmd("SCRIPT", "LOAD", "#!lua\nerror('x')").decode()      # line numbers count the shebang
        assert c.cmd("EVALSHA", sha, "0") == "ERR user_script:2: x script: %s, on @user_script:2." % sha


# --------------------------------------------------------------------------------------------- SCRIPT

def test_script_load_exists_flush(r):
    body = "return 'loaded'"
    sha = r.script_load(body)
    assert sha == r.eval("return redis.sha1hex(ARGV[1])", 0, body)
    assert r.script_exists(sha, "f" * 40, sha.upper()) == [True, False, True]
    assert r.evalsha(sha, 0) == "loaded"
    assert r.evalsha(sha.upper(), 0) == "loaded"
    assert r.script_flush() is True
    assert r.script_exists(sha) == [False]
    assert resp_error(r.evalsha, sha, 0) == "No matching script. Please use EVAL."
    r.eval(body, 0)                                   # EVAL caches it
    assert r.script_exists(sha) == [True]
    assert r.execute_command("SCRIPT", "FLUSH", "ASYNC") == "OK"
    assert r.execute_command("SCRIPT", "FLUSH", "SYNC") == "OK"
    assert r.script_exists(sha) == [False]
    assert resp_error(r.execute_command, "SCRIPT", "FLUSH", "LATER") == "SCRIPT FLUSH only support SYNC|ASYNC option"
    assert resp_error(r.execute_command, "SCRIPT", "LOAD", "return +") .startswith(
        "Error compiling script (new function): user_script:1:")
    assert resp_error(r.execute_command, "SCRIPT", "KILL") == "NOTBUSY No scripts in execution right now."


def test_info_memory_counts_scripts(r):
    r.script_flush()
    before = r.info("memory")
    assert before["number_of_cached_scripts"] == 0
    for i in range(3):
        r.script_load("return %d" % i)
    after = r.info("memory")
    assert after["number_of_cached_scripts"] == 3
    assert after["used_memory_scripts_eval"] > 0
    assert after["used_memory_vm_eval"] > 0


@pytest.mark.ruvio_only
def test_script_memory_is_charged_to_the_shard(r):
    """The Lua state allocates through the shard's allocator: used_memory (and maxmemory) sees it."""
    r.script_flush()
    before = r.info("memory")
    for i in range(2000):
        r.script_load("local t = {} for i = 1, 10 do t[i] = 'x%d' .. i end return #t" % i)
    after = r.info("memory")
    vm = after["used_memory_vm_eval"] - before["used_memory_vm_eval"]
    assert vm > 1000000
    assert after["shard_used_memory"] - before["shard_used_memory"] > vm // 2
    r.script_flush()
    assert r.info("memory")["used_memory_vm_eval"] < before["used_memory_vm_eval"] + vm // 2


def test_config_busy_reply_threshold(r):
    old = r.config_get("busy-reply-threshold")["busy-reply-threshold"]
    try:
        assert r.config_set("lua-time-limit", 1234)
        assert r.config_get("busy-reply-threshold")["busy-reply-threshold"] == "1234"
        assert r.config_get("lua-time-limit")["lua-time-limit"] == "1234"
    finally:
        r.config_set("busy-reply-threshold", old)


# --------------------------------------------------------------------------------------------- clients' uses

def test_redis_py_script_objects(r):
    r.script_flush()
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["ctr"], args=[5]) == 5      # EVALSHA answers NOSCRIPT, then redis-py loads it
    assert incr_by(keys=["ctr"], args=[2]) == 7
    assert r.script_exists(incr_by.sha) == [True]
    r.script_flush()
    assert incr_by(keys=["ctr"], args=[1]) == 8      # reloaded after a flush
    with r.pipeline() as p:
        incr_by(keys=["ctr"], args=[1], client=p)
        incr_by(keys=["ctr"], args=[1], client=p)
        assert p.execute() == [9, 10]


RATE_LIMIT = """
local current = redis.call('INCR', KEYS[1])
if current == 1 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if current > tonumber(ARGV[1]) then
    return 0
end
return 1
"""


def test_rate_limiter(r):
    limit = r.register_script(RATE_LIMIT)
    got = [limit(keys=["rl:user1"], args=[3, 60000]) for _ in range(5)]
    assert got == [1, 1, 1, 0, 0]
    assert 0 < r.pttl("rl:user1") <= 60000
    assert r.get("rl:user1") == "5"
    assert limit(keys=["rl:user2"], args=[3, 60000]) == 1


UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
else
    return 0
end
"""


def test_compare_and_delete_lock_release(r):
    unlock = r.register_script(UNLOCK)
    assert r.set("lock:res", "token-a", nx=True, px=30000)
    assert not r.set("lock:res", "token-b", nx=True, px=30000)
    assert unlock(keys=["lock:res"], args=["token-b"]) == 0      # not the holder: kept
    assert r.get("lock:res") == "token-a"
    assert unlock(keys=["lock:res"], args=["token-a"]) == 1
    assert r.exists("lock:res") == 0
    assert unlock(keys=["lock:res"], args=["token-a"]) == 0      # false == 'x' -> no error on a missing key
    # redis-py's own Lock releases with a script of its own
    lk = r.lock("lock:py", timeout=10)
    assert lk.acquire(blocking=False)
    assert r.exists("lock:py") == 1
    lk.release()
    assert r.exists("lock:py") == 0


def test_eval_inside_multi(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", "1")
        p.eval("return redis.call('incr', KEYS[1])", 1, "a")
        p.get("a")
        assert p.execute() == [True, 2, "2"]


# --------------------------------------------------------------------------------------------- BUSY, SCRIPT KILL

def _run_in_thread(fn):
    out = {}

    def go():
        try:
            out["ok"] = fn()
        except Exception as e:          # noqa: BLE001 (the test asserts on it)
            out["err"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def test_script_kill_busy_script(start_server):
    srv = start_server()
    a, b = srv.client(), srv.client()
    b.ping()                                    # connected before the script starts
    b.config_set("busy-reply-threshold", 100)
    t, out = _run_in_thread(lambda: a.eval("local i = 0 while true do i = i + 1 end", 0))

    def busy():
        try:
            b.ping()
            return False
        except redis.exceptions.BusyLoadingError:
            return False
        except redis.exceptions.ResponseError as e:
            return str(e).startswith("BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                                     "SHUTDOWN NOSAVE.")
    poll_until(busy, timeout=10, what="BUSY from a second client")
    late = srv.client()                        # a connection made while the script runs is served too
    assert resp_error(late.ping).startswith("BUSY ")
    assert b.script_kill() is True
    t.join(10)
    assert not t.is_alive()
    assert "err" in out and str(out["err"]).startswith("Script killed by user with SCRIPT KILL...")
    assert late.ping() is True
    assert b.ping() is True
    assert a.ping() is True
    assert resp_error(b.script_kill) == "NOTBUSY No scripts in execution right now."


def test_script_that_wrote_is_unkillable(start_server):
    srv = start_server()
    a, b = srv.client(socket_timeout=120), srv.client()
    b.ping()
    b.config_set("busy-reply-threshold", 100)
    # writes, then runs for a while (bounded: 1-3 s), then ends by itself
    body = ("redis.call('set', KEYS[1], 'v') local n = tonumber(ARGV[1]) local i = 0 "
            "while i < n do i = i + 1 end return i")
    t, out = _run_in_thread(lambda: a.eval(body, 1, "w", 60000000))

    def unkillable():
        try:
            b.script_kill()
            return False
        except redis.exceptions.ResponseError as e:
            if str(e).startswith("NOTBUSY"):
                return False
            return str(e)
    try:
        msg = poll_until(unkillable, timeout=10, what="UNKILLABLE")
    except AssertionError as e:
        raise AssertionError("%s; the script's client: %r; config %r; log %s" % (
            e, out, b.config_get("busy-reply-threshold"), srv.stderr()[-1500:] + srv.stdout()[-1500:]))
    assert msg.startswith("UNKILLABLE Sorry the script already executed write commands against the dataset.")
    t.join(120)
    assert not t.is_alive() and out.get("ok") == 60000000, out
    assert b.get("w") == "v"


@pytest.mark.parametrize("wrote", [False, True])
def test_shutdown_nosave_stops_a_busy_script(start_server, wrote):
    srv = start_server()
    a, b = srv.client(), srv.client()
    b.ping()
    b.config_set("busy-reply-threshold", 100)
    body = ("redis.call('set', KEYS[1], 'v') " if wrote else "") + "local i = 0 while true do i = i + 1 end"
    t, out = _run_in_thread(lambda: a.eval(body, 1, "w"))

    def busy():
        try:
            b.ping()
            return False
        except redis.exceptions.ResponseError as e:
            return str(e).startswith("BUSY ")
    poll_until(busy, timeout=10, what="BUSY")
    assert resp_error(b.execute_command, "SHUTDOWN").startswith("BUSY ")     # only with NOSAVE
    with pytest.raises(redis.exceptions.ConnectionError):
        b.execute_command("SHUTDOWN", "NOSAVE")
    assert srv.proc.wait(timeout=20) is not None
    t.join(10)
    assert not t.is_alive() and "err" in out


# --------------------------------------------------------------------------------------------- the log (ruvio only)

EFFECTS = """
redis.call('SET', KEYS[1], 'plain')
local n = redis.call('INCR', KEYS[2])
local t = redis.call('TIME')
redis.call('SET', KEYS[3], t[1] .. '.' .. t[2] .. ':' .. tostring(math.random()))
redis.call('RPUSH', KEYS[4], n, 'x', 'y')
redis.call('SPOP', KEYS[5])
redis.call('EXPIRE', KEYS[1], 1000)
return n
"""
EFFECT_KEYS = ["e:plain", "e:ctr", "e:time", "e:list", "e:set"]


def state(c):
    return {
        "plain": c.get("e:plain"), "ctr": c.get("e:ctr"), "time": c.get("e:time"),
        "list": c.lrange("e:list", 0, -1), "set": c.smembers("e:set"), "ttl": c.ttl("e:plain") > 900,
    }


@pytest.mark.ruvio_only
def test_script_effects_survive_restart_as_one_record(start_server, tmp_path):
    args = ("--dir", str(tmp_path), "--durability", "always")
    srv = start_server(*args)
    c = srv.client()
    c.sadd("e:set", "a", "b", "c", "d")
    for _ in range(3):
        c.eval(EFFECTS, len(EFFECT_KEYS), *EFFECT_KEYS)
    before = state(c)
    assert before["ctr"] == "3" and len(before["set"]) == 1
    srv.stop()
    srv2 = start_server(*args)
    c2 = srv2.client()
    assert state(c2) == before
    info = c2.info("persistence")
    assert info["loading_replay_errors"] == 0
    assert info["loading_wal_records"] == 4      # SADD, then one record per script


@pytest.mark.ruvio_only
def test_shutdown_nosave_drops_a_busy_scripts_writes(start_server, tmp_path):
    """The script's writes were never logged: after a restart none of them is there."""
    args = ("--dir", str(tmp_path), "--durability", "always")
    srv = start_server(*args)
    a, b = srv.client(), srv.client()
    b.set("before", "1")
    b.config_set("busy-reply-threshold", 100)
    body = "redis.call('set', KEYS[1], 'v') redis.call('incr', 'before') while true do end"
    t, out = _run_in_thread(lambda: a.eval(body, 1, "w"))

    def busy():
        try:
            b.ping()
            return False
        except redis.exceptions.ResponseError as e:
            return str(e).startswith("BUSY ")
    poll_until(busy, timeout=10, what="BUSY")
    with pytest.raises(redis.exceptions.ConnectionError):
        b.execute_command("SHUTDOWN", "NOSAVE")
    assert srv.proc.wait(timeout=20) is not None
    t.join(10)
    c = start_server(*args).client()
    assert c.get("before") == "1" and c.exists("w") == 0


@pytest.mark.ruvio_only
def test_script_effects_reach_a_replica(start_server):
    primary, replica = start_server(), start_server()
    p, r = primary.client(), replica.client()
    p.sadd("e:set", "a", "b", "c", "d")
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=10)
    for _ in range(3):
        p.eval(EFFECTS, len(EFFECT_KEYS), *EFFECT_KEYS)
    repl.wait_offset(p, r, timeout=10)
    assert state(r) == state(p)
    # a replica refuses a script's write, and runs read-only scripts
    msg = resp_error(r.eval, "return redis.call('set', KEYS[1], 'x')", 1, "e:plain")
    assert msg.startswith("You can't write against a read only replica. script: ")   # (redis-py drops READONLY)
    assert r.eval("return redis.call('get', KEYS[1])", 1, "e:plain") == "plain"


@pytest.mark.ruvio_only
def test_multi_shard_keys_must_hash_to_the_shard(start_server):
    srv = start_server("--shards", "2")
    c = srv.client()
    # {a} and {b} hash to slots 15495 and 3300: different shards of two
    with srv.raw() as raw:
        assert raw.cmd("EVAL", "return 1", "2", "{a}1", "{b}1") == "CROSSSLOT Keys in request don't hash to the same slot"
    port_b = srv.ports[0]
    port_a = srv.ports[1]
    cb = srv.client(port=port_b)
    assert cb.eval("redis.call('set', KEYS[1], 'x'); return redis.call('get', KEYS[1])", 1, "{b}1") == "x"
    msg = resp_error(cb.eval, "return redis.call('get', 'bar')", 1, "{b}1")   # slot 5061, same shard
    assert msg.startswith("Script attempted to access keys that do not hash to the same slot script: ")
    msg = resp_error(cb.eval, "return redis.call('get', '{a}1')", 0)
    assert msg.startswith("Script attempted to access a non local key in a cluster node script: ")
    assert srv.client(port=port_a).eval("return redis.call('set', '{a}1', 'y')", 0) == "OK"
    del c


# --------------------------------------------------------------------------------------------- the dispatcher's path

def test_acl_applies_inside_scripts(server, r):
    r.acl_setuser("scriptuser", enabled=True, nopass=True, commands=["+@all", "-set"], keys=["*"])
    try:
        r.acl_log_reset()
        u = server.client(username="scriptuser", password="x")
        assert u.eval("return redis.pcall('set', KEYS[1], 'b')['err']", 1, "a") == \
            "ERR The user executing the script can't run this command or subcommand"
        msg = resp_error(u.eval, "local x = redis.call('set', KEYS[1], 'b')", 1, "a")
        assert msg.startswith("The user executing the script can't run this command or subcommand script: ")
        assert u.eval("return redis.call('get', KEYS[1])", 1, "a") is None
        entry = r.acl_log(count=1)[0]
        assert entry["context"] == "lua" and entry["object"] == "set" and entry["username"] == "scriptuser"
        u.close()
    finally:
        r.acl_deluser("scriptuser")


def test_script_writes_invalidate_watch_and_wake_blocked_clients(server, r):
    w = server.client()
    with w.pipeline(transaction=True) as p:
        p.watch("wk")
        p.multi()
        p.set("wk", "from-exec")
        r.eval("return redis.call('set', KEYS[1], 'from-script')", 1, "wk")
        with pytest.raises(redis.exceptions.WatchError):
            p.execute()
    assert r.get("wk") == "from-script"
    t, out = _run_in_thread(lambda: w.blpop("bq", timeout=10))
    poll_until(lambda: r.info("clients")["blocked_clients"] >= 1, timeout=10, what="a blocked client")
    r.eval("redis.call('rpush', KEYS[1], 'x'); redis.call('rpush', KEYS[1], 'y')", 1, "bq")
    t.join(10)
    assert out.get("ok") == ("bq", "x") or out.get("ok") == ["bq", "x"]
    assert r.lrange("bq", 0, -1) == ["y"]
    w.close()
