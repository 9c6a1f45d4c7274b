"""FUNCTION and FCALL (issue 17, functions part): libraries, their errors, DUMP/RESTORE, STATS/KILL, and
libraries as node state (every shard, restarts, checkpoints, replicas).

Shared with redis-server (reference mode) except where marked ruvio_only (restarts, replicas, shards, our
DUMP payload).  Redis lists libraries and functions in its dictionaries' order: LIST is compared as sets."""
import threading

import pytest
import redis

from conftest import HOST, poll_until, resp_error
from ruviotest import repl

LIB = """#!lua name=lib1
local function set(keys, args) return redis.call('set', keys[1], args[1]) end
redis.register_function('f_set', set)
redis.register_function{function_name='f_get', callback=function(keys, args)
  return redis.call('get', keys[1]) end, description='reads', flags={'no-writes', 'allow-oom'}}
redis.register_function('f_boom', function(keys, args)
  error('boom')
end)
redis.register_function('f_global', function(keys, args)
  x = 1
end)
redis.register_function('f_keys', function(keys, args)
  return KEYS
end)
redis.register_function('f_echo', function(keys, args)
  return {#keys, #args, keys[1] or false, args[1] or false, string.rep('a', 2)}
end)
"""

RATE_LIMITER = """#!lua name=ratelimit
-- a fixed-window limiter: KEYS[1] counts the window's calls; ARGV: limit, window (ms)
local function allow(keys, args)
  local limit = tonumber(args[1])
  local n = redis.call('incr', keys[1])
  if n == 1 then redis.call('pexpire', keys[1], args[2]) end
  if n > limit then return {0, redis.call('pttl', keys[1])} end
  return {1, limit - n}
end
redis.register_function('rl_allow', allow)
redis.register_function{function_name='rl_peek', callback=function(keys, args)
  return tonumber(redis.call('get', keys[1]) or '0') end, flags={'no-writes'}}
"""

LOCK = """#!lua name=lock
redis.register_function('lock_acquire', function(keys, args)
  return redis.call('set', keys[1], args[1], 'NX', 'PX', args[2])
end)
-- compare-and-delete: only the holder's token releases the lock
redis.register_function('lock_release', function(keys, args)
  if redis.call('get', keys[1]) == args[1] then return redis.call('del', keys[1]) end
  return 0
end)
"""


@pytest.fixture
def fr(server):
    c = server.client()
    c.function_flush()
    yield c
    c.function_flush()
    c.close()


def load_err(c, code, replace=False):
    return resp_error(c.function_load, code, replace=replace)


def norm_list(reply):
    """FUNCTION LIST as {library: (engine, {function: (description, flags)}, code)} (order-free)."""
    out = {}
    for lib in reply:
        d = dict(zip(lib[::2], lib[1::2])) if isinstance(lib, list) else lib
        funcs = {}
        for f in d["functions"]:
            fd = dict(zip(f[::2], f[1::2])) if isinstance(f, list) else f
            funcs[fd["name"]] = (fd["description"], frozenset(fd["flags"]))
        out[d["library_name"]] = (d["engine"], funcs, d.get("library_code"))
    return out


# --------------------------------------------------------------------------------------------- LOAD and FCALL

def test_load_and_call(fr):
    assert fr.function_load(LIB) == "lib1"
    assert fr.fcall("f_set", 1, "k", "v") == "OK"
    assert fr.fcall("f_get", 1, "k") == "v"
    assert fr.fcall_ro("f_get", 1, "k") == "v"
    assert fr.fcall("f_echo", 1, "k", "a1", "a2") == [1, 2, "k", "a1", "aa"]
    assert fr.fcall("f_echo", 0) == [0, 0, None, None, "aa"]
    assert resp_error(fr.function_load, LIB) == "Library 'lib1' already exists"
    assert fr.function_load(LIB.replace("'v'", "'w'"), replace=True) == "lib1"


def test_fcall_errors(fr):
    fr.function_load(LIB)
    assert resp_error(fr.fcall, "nosuch", 0) == "Function not found"
    assert resp_error(fr.fcall, "f_set", -1) == "Number of keys can't be negative"
    assert resp_error(fr.fcall, "f_set", 3, "a") == "Number of keys can't be greater than number of args"
    assert resp_error(fr.fcall, "f_set", "x") == "Bad number of keys provided"
    assert resp_error(fr.fcall_ro, "f_set", 1, "k", "v") == \
        "Can not execute a script with write flag using *_ro command."
    assert resp_error(fr.fcall, "f_boom", 0) == "user_function:7: boom script: f_boom, on @user_function:7."
    assert resp_error(fr.fcall, "f_global", 0) == \
        "user_function:10: Attempt to modify a readonly table script: f_global, on @user_function:10."
    assert resp_error(fr.fcall, "f_keys", 0) == ("user_function:13: Script attempted to access nonexistent "
                                                 "global variable 'KEYS' script: f_keys, on @user_function:13.")
    # a read-only function's write
    fr.function_load("#!lua name=ro\nredis.register_function{function_name='ro_w', callback=function(k, a)\n"
                     "  local r = redis.pcall('set', k[1], 'x') return r['err'] end, flags={'no-writes'}}")
    assert fr.fcall("ro_w", 1, "k") == "ERR Write commands are not allowed from read-only scripts."


@pytest.mark.parametrize("code, err", [
    ("return 1", "Missing library metadata"),
    ("#!lua name=x", "Invalid library metadata"),
    ("#!foo name=x\nredis.register_function('f', function() end)", "Engine 'foo' not found"),
    ("#!lua name=a-b\nredis.register_function('f', function() end)",
     "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
    ("#!lua name=x name=y\nredis.register_function('f', function() end)",
     "Invalid metadata value, name argument was given multiple times"),
    ("#!lua name=x\n", "No functions registered"),
    ("#!lua name=x\nreturn (", "Error compiling function: user_function:2: unexpected symbol near '<eof>'"),
])
def test_load_metadata_and_compile_errors(fr, code, err):
    assert load_err(fr, code) == err


PFX = "Error registering functions: ERR "


@pytest.mark.parametrize("body, err", [
    # the load-time sandbox: only redis.register_function, redis.log and the constants
    ("redis.call('set', 'a', 'b')", "user_function:2: Script attempted to access nonexistent global variable 'call'"),
    ("redis.pcall('ping')", "user_function:2: Script attempted to access nonexistent global variable 'pcall'"),
    ("local a = math.floor(1)", "user_function:2: Script attempted to access nonexistent global variable 'math'"),
    ("local s = string.rep('a', 2)",
     "user_function:2: Script attempted to access nonexistent global variable 'string'"),
    ("error('x')", "user_function:2: Script attempted to access nonexistent global variable 'error'"),
    ("x = 1", "user_function:2: Attempt to modify a readonly table"),
    ("while true do end", "FUNCTION LOAD timeout"),
    # register_function's arguments
    ("redis.register_function()", "wrong number of arguments to redis.register_function"),
    ("redis.register_function('a', 'b', 'c')", "wrong number of arguments to redis.register_function"),
    ("redis.register_function('f')", "calling redis.register_function with a single argument is only applicable "
                                     "to Lua table (representing named arguments)."),
    ("redis.register_function('f', 'x')", "second argument to redis.register_function must be a function"),
    ("redis.register_function{[1]=2}", "unknown argument given to redis.register_function"),
    ("redis.register_function{function_name='f', callback=function() end, foo=1}",
     "unknown argument given to redis.register_function"),
    ("redis.register_function{callback=function() end}", "redis.register_function must get a function name argument"),
    ("redis.register_function{function_name='f'}", "redis.register_function must get a callback argument"),
    ("redis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
     "flags argument to redis.register_function must be a table representing function flags"),
    ("redis.register_function{function_name='f', callback=function() end, flags={'no-writes', 'bad'}}",
     "unknown flag given"),
    ("redis.register_function('f-1', function() end)",
     "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
    ("redis.register_function('f', function() end)\nredis.register_function('f', function() end)",
     "Function already exists in the library"),
])
def test_load_time_errors(fr, body, err):
    assert load_err(fr, "#!lua name=x\n" + body) == PFX + err
    assert fr.function_list() == []


def test_load_time_allows_log_and_constants(fr):
    code = ("#!lua name=x\nredis.log(redis.LOG_NOTICE, 'loading x') local v = redis.REDIS_VERSION\n"
            "local n = redis.REDIS_VERSION_NUM\nredis.register_function('f', function() return 1 end)")
    assert fr.function_load(code) == "x"
    assert fr.fcall("f", 0) == 1


def test_function_name_taken_by_another_library(fr):
    fr.function_load(LIB)
    assert load_err(fr, "#!lua name=lib2\nredis.register_function('f_set', function() end)") == \
        "Function f_set already exists"
    # a failed REPLACE leaves the old library as it was
    assert load_err(fr, "#!lua name=lib1\nreturn (", replace=True).startswith("Error compiling function")
    assert fr.fcall("f_set", 1, "k", "v") == "OK"
    # REPLACE may drop functions of the old version, and the names are free again
    fr.function_load("#!lua name=lib1\nredis.register_function('only', function() return 2 end)", replace=True)
    assert resp_error(fr.fcall, "f_set", 1, "k", "v") == "Function not found"
    assert fr.function_load("#!lua name=lib2\nredis.register_function('f_set', function() return 3 end)") == "lib2"
    assert fr.fcall("f_set", 0) == 3


def test_load_option_errors(server, fr):
    with server.raw() as c:
        assert c.cmd("FUNCTION", "LOAD", "nosuch", "x") == "ERR Unknown option given: nosuch"
        assert c.cmd("FUNCTION", "LOAD", "REPLACE") == "ERR Missing library metadata"


# --------------------------------------------------------------------------------------------- LIST, DELETE, FLUSH

def test_list(fr):
    fr.function_load(LIB)
    fr.function_load(LOCK)
    got = norm_list(fr.function_list())
    assert set(got) == {"lib1", "lock"}
    engine, funcs, code = got["lib1"]
    assert engine == "LUA" and code is None
    assert funcs["f_get"] == ("reads", frozenset({"no-writes", "allow-oom"}))
    assert funcs["f_set"] == (None, frozenset())
    assert set(funcs) == {"f_set", "f_get", "f_boom", "f_global", "f_keys", "f_echo"}
    got = norm_list(fr.function_list(library="l*", withcode=True))
    assert got["lib1"][2] == LIB and got["lock"][2] == LOCK
    assert set(norm_list(fr.function_list(library="lo?k"))) == {"lock"}
    assert fr.function_list(library="nope*") == []


def test_list_resp3(server, fr):
    fr.function_load(LIB)
    with server.raw() as c:
        c.cmd("HELLO", "3")
        libs = c.cmd("FUNCTION", "LIST", "LIBRARYNAME", "lib1")
        assert len(libs) == 1 and libs[0][b"library_name"] == b"lib1" and libs[0][b"engine"] == b"LUA"
        funcs = {f[b"name"]: f for f in libs[0][b"functions"]}
        assert funcs[b"f_set"][b"description"] is None and funcs[b"f_set"][b"flags"] == set()
        assert funcs[b"f_get"][b"flags"] == {"no-writes", "allow-oom"}     # status strings, as Redis
    with server.raw() as c:                                               # RESP2: the same, flat
        lib = c.cmd("FUNCTION", "LIST", "LIBRARYNAME", "lib1")[0]
        funcs = {f[1]: f for f in lib[5]}
        assert funcs[b"f_set"][2:] == [b"description", None, b"flags", []]
        assert funcs[b"f_get"][2:4] == [b"description", b"reads"] and set(funcs[b"f_get"][5]) == {"no-writes",
                                                                                                  "allow-oom"}
        assert c.cmd("FUNCTION", "STATS")[:2] == [b"running_script", None]


def test_list_argument_errors(server, fr):
    with server.raw() as c:
        assert c.cmd("FUNCTION", "LIST", "LIBRARYNAME") == "ERR library name argument was not given"
        assert c.cmd("FUNCTION", "LIST", "foo") == "ERR Unknown argument foo"
        assert c.cmd("FUNCTION", "LIST", "WITHCODE", "WITHCODE") == "ERR Unknown argument WITHCODE"


def test_delete_and_flush(server, fr):
    fr.function_load(LIB)
    fr.function_load(LOCK)
    assert resp_error(fr.function_delete, "nope") == "Library not found"
    assert fr.function_delete("lib1") is True
    assert resp_error(fr.fcall, "f_set", 1, "k", "v") == "Function not found"
    assert set(norm_list(fr.function_list())) == {"lock"}
    assert fr.function_load(LIB) == "lib1"              # its names are free again
    assert fr.function_flush("SYNC") is True
    assert fr.function_list() == []
    fr.function_load(LIB)
    assert fr.function_flush("ASYNC") is True
    assert fr.function_list() == []
    with server.raw() as c:
        assert c.cmd("FUNCTION", "FLUSH", "bad") == "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"


# --------------------------------------------------------------------------------------------- DUMP and RESTORE

def test_dump_restore(server, fr):
    fr.function_load(LIB)
    fr.function_load(LOCK)
    with server.raw() as c:
        payload = c.cmd("FUNCTION", "DUMP")
        before = norm_list(fr.function_list(withcode=True))
        assert c.cmd("FUNCTION", "FLUSH") == "OK"
        assert c.cmd("FUNCTION", "RESTORE", payload) == "OK"
        assert norm_list(fr.function_list(withcode=True)) == before
        # APPEND (the default) refuses a library that exists, and changes nothing
        err = c.cmd("FUNCTION", "RESTORE", payload)
        assert isinstance(err, str) and err.startswith("ERR Library ") and "already exists" in err
        assert c.cmd("FUNCTION", "RESTORE", payload, "APPEND").startswith("ERR Library ")
        assert norm_list(fr.function_list(withcode=True)) == before
        assert c.cmd("FUNCTION", "RESTORE", payload, "REPLACE") == "OK"
        fr.function_load("#!lua name=other\nredis.register_function('o', function() return 1 end)")
        assert c.cmd("FUNCTION", "RESTORE", payload, "FLUSH") == "OK"
        assert norm_list(fr.function_list(withcode=True)) == before
        # a conflict with another library's function: nothing changes
        fr.function_flush()
        fr.function_load("#!lua name=clash\nredis.register_function('lock_release', function() return 1 end)")
        assert c.cmd("FUNCTION", "RESTORE", payload, "REPLACE") == "ERR Function lock_release already exists"
        assert set(norm_list(fr.function_list())) == {"clash"}
        assert fr.fcall("lock_release", 0) == 1
        assert c.cmd("FUNCTION", "RESTORE", payload, "bad") == \
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
        assert c.cmd("FUNCTION", "RESTORE", "garbage") == "ERR DUMP payload version or checksum are wrong"
        assert c.cmd("FUNCTION", "RESTORE", payload[:-1] + bytes([payload[-1] ^ 1])) == \
            "ERR DUMP payload version or checksum are wrong"


# Redis 7.0.15's FUNCTION DUMP of one library (#!lua name=r\nredis.register_function('r', function() return 1 end))
REDIS_PAYLOAD = (b"\xf5@B#!lua name=r\nredis.register_function('r', function() return 1 end)\n"
                 b"\x00\xaf\x10O#\xa1\xb2\x97\x08")


@pytest.mark.ruvio_only
def test_restore_of_a_redis_payload_or_a_damaged_one_is_a_clean_error(server, fr):
    fr.function_load(LIB)
    with server.raw() as c:
        assert c.cmd("FUNCTION", "RESTORE", REDIS_PAYLOAD) == "ERR DUMP payload version or checksum are wrong"
        payload = c.cmd("FUNCTION", "DUMP")
        for cut in range(0, len(payload), max(1, len(payload) // 40)):
            assert c.cmd("FUNCTION", "RESTORE", payload[:cut], "FLUSH") == \
                "ERR DUMP payload version or checksum are wrong"
        assert set(norm_list(fr.function_list())) == {"lib1"}


# --------------------------------------------------------------------------------------------- STATS and KILL

def test_stats(fr):
    st = fr.function_stats()
    assert st[0] == "running_script" and st[1] is None and st[2] == "engines"
    fr.function_load(LIB)
    fr.function_load(LOCK)
    engines = fr.function_stats()[3]
    lua = dict(zip(engines[1][::2], engines[1][1::2]))
    assert engines[0] == "LUA" and lua == {"libraries_count": 2, "functions_count": 8}


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


def test_function_kill_and_busy(start_server):
    srv = start_server()
    a, b = srv.client(), srv.client()
    b.function_load("#!lua name=spin\nredis.register_function('spin', function(k, a)\n"
                    "  local i = 0 while true do i = i + 1 end end)")
    assert resp_error(b.function_kill) == "NOTBUSY No scripts in execution right now."
    b.config_set("busy-reply-threshold", 100)
    t, out = _run_in_thread(lambda: a.fcall("spin", 0, "x1"))

    def busy():
        try:
            b.ping()
            return False
        except redis.exceptions.ResponseError as e:
            return str(e) == "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    poll_until(busy, timeout=10, what="BUSY naming FUNCTION KILL")
    st = b.function_stats()
    running = dict(zip(st[1][::2], st[1][1::2]))
    assert running["name"] == "spin" and running["command"] == ["FCALL", "spin", "0", "x1"]
    assert running["duration_ms"] >= 100
    assert resp_error(b.script_kill) == \
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    assert b.function_kill() == "OK"
    t.join(10)
    assert not t.is_alive()
    assert str(out.get("err", "")).startswith("Script killed by user with SCRIPT KILL... script: spin, on "
                                              "@user_function:")
    assert b.ping() is True and a.ping() is True
    assert b.function_stats()[1] is None


# --------------------------------------------------------------------------------------------- libraries at work

def test_rate_limiter(fr):
    assert fr.function_load(RATE_LIMITER) == "ratelimit"
    got = [fr.fcall("rl_allow", 1, "rl:user1", 3, 60000) for _ in range(5)]
    assert [g[0] for g in got] == [1, 1, 1, 0, 0]
    assert [g[1] for g in got[:3]] == [2, 1, 0]
    assert 0 < got[4][1] <= 60000                    # refused: the window's remaining ms
    assert fr.fcall_ro("rl_peek", 1, "rl:user1") == 5
    assert fr.fcall("rl_allow", 1, "rl:user2", 3, 60000) == [1, 2]   # another user's window
    assert 0 < fr.pttl("rl:user1") <= 60000


def test_compare_and_delete_lock(fr):
    fr.function_load(LOCK)
    assert fr.fcall("lock_acquire", 1, "lk", "tok-a", 30000) == "OK"
    assert fr.fcall("lock_acquire", 1, "lk", "tok-b", 30000) is None   # held
    assert fr.fcall("lock_release", 1, "lk", "tok-b") == 0              # not the holder's token
    assert fr.get("lk") == "tok-a"
    assert fr.fcall("lock_release", 1, "lk", "tok-a") == 1
    assert fr.exists("lk") == 0
    assert fr.fcall("lock_acquire", 1, "lk", "tok-b", 30000) == "OK"


# --------------------------------------------------------------------------------------------- node state

@pytest.mark.ruvio_only
def test_a_library_loaded_on_one_shard_runs_on_every_shard(start_server):
    """The reply comes once every shard has the change: the next command on any port sees it."""
    srv = start_server("--shards", "3")
    c0 = srv.client(port=srv.ports[0])
    assert c0.function_load(LOCK) == "lock"
    for port in srv.ports:
        c = srv.client(port=port)
        assert norm_list(c.function_list()).keys() == {"lock"}
        key = next(k for k in ("k%d" % i for i in range(100)) if _owns(c, k))
        assert c.fcall("lock_acquire", 1, key, "t", 30000) == "OK"
        assert c.fcall("lock_release", 1, key, "t") == 1
    # a change through another shard's port reaches the first
    c2 = srv.client(port=srv.ports[2])
    assert c2.function_delete("lock") is True
    assert c0.function_list() == []
    assert c2.function_load(LIB) == "lib1"
    assert set(norm_list(c0.function_list())) == {"lib1"}
    assert c2.function_restore(c2.function_dump(), "REPLACE") is True
    assert set(norm_list(srv.client(port=srv.ports[1]).function_list())) == {"lib1"}
    assert c2.function_flush() is True
    assert c0.function_list() == []
    # a pipeline's changes come back in order, each after every shard has it
    p = c0.pipeline(transaction=False)
    p.function_load(LOCK)
    p.function_delete("lock")
    p.function_load(RATE_LIMITER)
    assert p.execute() == ["lock", True, "ratelimit"]
    assert set(norm_list(c2.function_list())) == {"ratelimit"}
    # inside MULTI the changes are EXEC's (one record); the other shards follow at once
    t = c0.pipeline(transaction=True)
    t.function_delete("ratelimit")
    t.function_load(LOCK)
    assert t.execute() == [True, "lock"]
    poll_until(lambda: set(norm_list(c2.function_list())) == {"lock"}, timeout=10, what="EXEC's changes on shard 2")


def _owns(c, key):
    try:
        c.get(key)
        return True
    except redis.exceptions.ResponseError:      # MOVED: another shard's key
        return False


@pytest.mark.ruvio_only
@pytest.mark.parametrize("checkpoint", [False, True])
def test_libraries_survive_a_restart(start_server, tmp_path, checkpoint):
    """From the WAL, or (after SAVE, which drops the log it covers) from the checkpoint, on every shard."""
    args = ("--dir", str(tmp_path), "--durability", "always", "--shards", "2")
    srv = start_server(*args)
    c = srv.client(port=srv.ports[1])
    c.function_load(LIB)
    c.function_load(LOCK)
    c.function_delete("lib1")
    c.function_load(RATE_LIMITER)
    c0 = srv.client(port=srv.ports[0])
    assert set(norm_list(c0.function_list())) == {"lock", "ratelimit"}
    want = norm_list(c.function_list(withcode=True))
    if checkpoint:
        for port in srv.ports:
            assert srv.client(port=port).save() is True
    srv.stop()
    srv2 = start_server(*args)
    for port in srv2.ports:
        c = srv2.client(port=port)
        assert norm_list(c.function_list(withcode=True)) == want
        info = c.info("persistence")
        assert info["loading_replay_errors"] == 0
        if checkpoint:          # nothing left in the log: the libraries came from the checkpoint
            assert info["loading_wal_records"] == 0
    assert srv2.client(port=srv2.ports[0]).fcall("rl_allow", 1, "{b}rl", 2, 60000) == [1, 1]


@pytest.mark.ruvio_only
def test_libraries_survive_a_change_of_shard_count(start_server, tmp_path):
    srv = start_server("--dir", str(tmp_path), "--durability", "always", "--shards", "2")
    c = srv.client()
    c.function_load(LOCK)
    c.set("k", "v")
    poll_until(lambda: srv.client(port=srv.ports[1]).function_list() != [], timeout=10, what="shard 1")
    want = norm_list(c.function_list(withcode=True))
    srv.stop()
    srv2 = start_server("--dir", str(tmp_path), "--durability", "always", "--shards", "3")
    for port in srv2.ports:
        assert norm_list(srv2.client(port=port).function_list(withcode=True)) == want
    srv2.stop()
    srv3 = start_server("--dir", str(tmp_path), "--durability", "always", "--shards", "3")
    assert norm_list(srv3.client(port=srv3.ports[2]).function_list(withcode=True)) == want


@pytest.mark.ruvio_only
def test_libraries_reach_a_replica_and_survive_a_failover(start_server):
    primary, replica = start_server(), start_server()
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=10)
    p.function_load(LIB)
    p.function_load(LOCK)
    p.function_delete("lib1")
    p.function_load(RATE_LIMITER)
    repl.wait_offset(p, r, timeout=10)
    assert norm_list(r.function_list(withcode=True)) == norm_list(p.function_list(withcode=True))
    assert resp_error(r.function_load, LIB).startswith("You can't write against a read only replica")
    assert r.fcall_ro("rl_peek", 1, "rl:x") == 0
    # the replica takes over: its libraries are there and run writes
    assert r.replicaof("NO", "ONE") == "OK"
    assert r.fcall("rl_allow", 1, "rl:x", 2, 60000) == [1, 1]
    assert r.fcall("lock_acquire", 1, "lk", "t", 30000) == "OK"


@pytest.mark.ruvio_only
@pytest.mark.parametrize("primary_has", [True, False])
def test_a_full_sync_makes_the_replicas_libraries_the_primarys(start_server, tmp_path, primary_has):
    primary = start_server("--shards", "2")
    replica = start_server("--shards", "2", "--dir", str(tmp_path), "--durability", "always")
    p, r = primary.client(), replica.client()
    if primary_has:
        p.function_load(LOCK)
        poll_until(lambda: primary.client(port=primary.ports[1]).function_list() != [], timeout=10,
                   what="lock on the primary's shard 1")
    r.function_load(LIB)            # the replica's own, before it follows: replaced
    poll_until(lambda: replica.client(port=replica.ports[1]).function_list() != [], timeout=10,
               what="lib1 on the replica's shard 1")
    assert r.replicaof(HOST, primary.port) == "OK"
    for pp, rp in zip(primary.ports, replica.ports):
        pc, rc = primary.client(port=pp), replica.client(port=rp)
        repl.wait_link_up(rc, timeout=10)
        repl.wait_offset(pc, rc, timeout=10)
        assert norm_list(rc.function_list(withcode=True)) == norm_list(pc.function_list(withcode=True))
    # and a durable replica keeps them over a restart
    want = [norm_list(replica.client(port=rp).function_list(withcode=True)) for rp in replica.ports]
    replica.stop()
    replica2 = start_server("--shards", "2", "--dir", str(tmp_path), "--durability", "always")
    assert [norm_list(replica2.client(port=rp).function_list(withcode=True)) for rp in replica2.ports] == want


@pytest.mark.ruvio_only
def test_info_memory_counts_functions(start_server):
    srv = start_server()
    c = srv.client()
    before = c.info("memory")
    assert before["used_memory_functions_caches"] == 0
    c.function_load(LIB)
    after = c.info("memory")
    assert after["used_memory_vm_functions"] > 0
    assert after["used_memory_functions_caches"] >= len(LIB)
    assert after["number_of_functions"] == 6 and after["number_of_libraries"] == 1
    assert after["used_memory_vm_total"] == after["used_memory_vm_eval"] + after["used_memory_vm_functions"]
    c.function_flush()
    assert c.info("memory")["used_memory_functions_caches"] == 0


def test_load_and_restore_are_refused_over_maxmemory(start_server):
    srv = start_server()
    c = srv.client()
    c.function_load(LOCK)
    payload = c.function_dump()
    c.config_set("maxmemory", 1)
    try:
        assert resp_error(c.function_load, LIB) == "OOM command not allowed when used memory > 'maxmemory'."
        assert resp_error(c.function_restore, payload, "REPLACE") == \
            "OOM command not allowed when used memory > 'maxmemory'."
        assert c.function_delete("lock") is True       # (not denyoom: frees memory)
    finally:
        c.config_set("maxmemory", 0)
    assert c.function_load(LIB) == "lib1"


def test_fcall_inside_multi(fr):
    fr.function_load(LOCK)
    p = fr.pipeline(transaction=True)
    p.fcall("lock_acquire", 1, "m", "t", 30000)
    p.fcall("lock_release", 1, "m", "t")
    assert p.execute() == ["OK", 1]


def test_fcall_is_refused_in_scripts(fr):
    fr.function_load(LOCK)
    msg = resp_error(fr.eval, "return redis.call('fcall', 'lock_release', 1, 'k', 't')", 1, "k")
    assert msg.startswith("This Redis command is not allowed from script")


def test_function_help(fr):
    lines = fr.execute_command("FUNCTION", "HELP")
    assert lines[0] == "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "LOAD [REPLACE] <FUNCTION CODE>" in lines and lines[-1] == "    Prints this help."
