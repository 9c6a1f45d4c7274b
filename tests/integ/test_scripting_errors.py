"""Errors inside scripts (issue 17, third round): how INFO errorstats and commandstats count them, where
their replies say they happened, Lua's pcall, and the client-side helpers built on scripts and streams
(redis-py's Script objects, its xautoclaim).

Shared with redis-server (reference mode): the counts and texts below are Redis 7.0's, read from Debian's
redis-server. The one difference LuaJIT still forces (the lost frame of a tail call inside a nested function) is
pinned ruvio_only."""
import hashlib

import pytest
import redis

from conftest import IS_REDIS, resp_error


def stats(r):
    """errorstat code -> count, and (command, field) -> value, for deltas."""
    errs = {}
    for k, v in r.info("errorstats").items():   # (redis-py leaves "count=N" unparsed)
        errs[k[len("errorstat_"):]] = int(v["count"] if isinstance(v, dict) else v.split("=")[1])
    cmds = {}
    for k, v in r.info("commandstats").items():
        for f in ("calls", "failed_calls", "rejected_calls"):
            cmds[(k[len("cmdstat_"):], f)] = int(v.get(f, 0))
    return errs, cmds


def delta(before, after):
    errs = {k: n - before[0].get(k, 0) for k, n in after[0].items() if n != before[0].get(k, 0)}
    cmds = {k: n - before[1].get(k, 0) for k, n in after[1].items() if n != before[1].get(k, 0)}
    return errs, cmds


def run(r, body, *keys):
    """EVAL body; its reply (or the ResponseError's text) and the stats' deltas (the INFO calls' own
    commandstats left out)."""
    before = stats(r)
    try:
        got = r.eval(body, len(keys), *keys)
    except redis.exceptions.ResponseError as e:
        got = ("error", str(e))
    errs, cmds = delta(before, stats(r))
    cmds = {k: v for k, v in cmds.items() if k[0] != "info"}
    return got, errs, cmds


# (body, the reply's kind, errorstats deltas, EVAL's failed_calls, INCR's (calls, failed_calls))
CASES = [
    # a failed redis.call: counted once (by INCR), EVAL failed
    ("return redis.call('incr', KEYS[1])", "error", {"ERR": 1}, 1, (1, 1)),
    # returned by pcall: the same
    ("return redis.pcall('incr', KEYS[1])", "error", {"ERR": 1}, 1, (1, 1)),
    # caught and dropped: INCR's count stays, EVAL did not fail
    ("local e = redis.pcall('incr', KEYS[1]) return 1", "value", {"ERR": 1}, 0, (1, 1)),
    # Lua's pcall around redis.call: likewise
    ("local ok, e = pcall(redis.call, 'incr', KEYS[1]) return 1", "value", {"ERR": 1}, 0, (1, 1)),
    # pcall's error re-raised: still once
    ("local e = redis.pcall('incr', KEYS[1]) error(e)", "error", {"ERR": 1}, 1, (1, 1)),
    # nested in an array: once, and EVAL failed
    ("return {1, redis.pcall('incr', KEYS[1])}", "value", {"ERR": 1}, 1, (1, 1)),
    # two of them: failed_calls counts each (Redis 7.0)
    ("return {redis.pcall('incr', KEYS[1]), redis.pcall('incr', KEYS[1])}", "value", {"ERR": 2}, 2, (2, 2)),
    # one caught, then one raised
    ("redis.pcall('incr', KEYS[1]) return redis.call('incr', KEYS[1])", "error", {"ERR": 2}, 1, (2, 2)),
    # the script's own errors: counted by EVAL, under their codes
    ("return redis.error_reply('MY custom')", "error", {"MY": 1}, 1, (0, 0)),
    ("return {err='XYZ boom'}", "error", {"XYZ": 1}, 1, (0, 0)),
    ("error({err='XYZ boom'})", "error", {"XYZ": 1}, 1, (0, 0)),
    ("return {redis.error_reply('AA b'), redis.error_reply('CC d')}", "value", {"AA": 1, "CC": 1}, 1, (0, 0)),
    ("return {redis.pcall('incr', KEYS[1]), redis.error_reply('CC d')}", "value", {"ERR": 1, "CC": 1}, 2, (1, 1)),
    ("local e = redis.error_reply('X y') return 1", "value", {}, 0, (0, 0)),
    ("return x", "error", {"ERR": 1}, 1, (0, 0)),
    ("return (", "error", {"ERR": 1}, 1, (0, 0)),
    # calls refused before running: counted at once, even when caught
    ("redis.pcall('nosuchcommand') return 1", "value", {"ERR": 1}, 0, (0, 0)),
    ("return redis.call('nosuchcommand')", "error", {"ERR": 1}, 1, (0, 0)),
    # bad arguments to redis.pcall are not a call: counted only if returned
    ("redis.pcall() return 1", "value", {}, 0, (0, 0)),
    ("return redis.pcall()", "error", {"ERR": 1}, 1, (0, 0)),
]


@pytest.mark.parametrize("body,kind,errs,eval_failed,incr", CASES)
def test_errorstats_and_commandstats_of_script_errors(r, body, kind, errs, eval_failed, incr):
    r.set("s", "not a number")
    got, derrs, dcmds = run(r, body, "s")
    assert (got[0] if isinstance(got, tuple) else "value") == kind, got
    assert derrs == errs, (got, derrs, dcmds)
    assert dcmds.get(("eval", "calls")) == 1
    assert dcmds.get(("eval", "failed_calls"), 0) == eval_failed, (got, dcmds)
    assert (dcmds.get(("incr", "calls"), 0), dcmds.get(("incr", "failed_calls"), 0)) == incr, dcmds


def test_refused_calls_count_by_their_code(r):
    """A write refused for lack of memory counts OOM (SET's rejected_calls), caught or not."""
    old = r.config_get("maxmemory")["maxmemory"]
    r.config_set("maxmemory", 1)
    try:
        got, errs, cmds = run(r, "redis.pcall('set', KEYS[1], 'v') return 1", "k")
        assert (got, errs) == (1, {"OOM": 1})
        assert cmds.get(("set", "rejected_calls")) == 1 and cmds.get(("eval", "failed_calls"), 0) == 0
        got, errs, cmds = run(r, "return redis.call('set', KEYS[1], 'v')", "k")
        assert got[1].endswith("command not allowed when used memory > 'maxmemory'. script: %s, on @user_script:1."
                               % r.script_load("return redis.call('set', KEYS[1], 'v')"))
        assert errs == {"OOM": 1} and cmds.get(("eval", "failed_calls")) == 1
    finally:
        r.config_set("maxmemory", old)


def test_fcall_errors_count_once(r):
    r.set("s", "x")
    r.function_load("#!lua name=errlib\n"
                    "redis.register_function('bump', function(keys, args) return redis.call('incr', keys[1]) end)",
                    replace=True)
    before = stats(r)
    msg = resp_error(r.fcall, "bump", 1, "s")
    assert msg == "value is not an integer or out of range script: bump, on @user_function:2."
    errs, cmds = delta(before, stats(r))
    assert errs == {"ERR": 1}
    assert (cmds.get(("fcall", "failed_calls")), cmds.get(("incr", "failed_calls"))) == (1, 1)
    r.function_delete("errlib")


def test_errorstats_are_listed_in_code_order(r):
    r.config_resetstat()
    r.eval("return {redis.error_reply('ZZZ z'), redis.error_reply('AAA a'), redis.error_reply('MMM m')}", 0)
    text = r.execute_command("INFO", "errorstats")
    if isinstance(text, dict):      # (redis-py parses INFO)
        names = list(text)
    else:
        names = [ln.split(":")[0] for ln in text.splitlines() if ln.startswith("errorstat_")]
    assert names == ["errorstat_AAA", "errorstat_MMM", "errorstat_ZZZ"]


# --------------------------------------------------------------------------------------------- texts

def test_error_locations(r):
    r.set("s", "x")
    sha = r.script_load("return redis.call('incr', KEYS[1])")
    assert resp_error(r.evalsha, sha, 1, "s") == \
        "value is not an integer or out of range script: %s, on @user_script:1." % sha
    body = "local a = 1\nlocal b = redis.call('incr', KEYS[1])\nreturn b"
    sha = r.script_load(body)
    assert resp_error(r.evalsha, sha, 1, "s") == \
        "value is not an integer or out of range script: %s, on @user_script:2." % sha
    body = "local function f()\n  return x\nend\nreturn f()"
    sha = r.script_load(body)
    assert resp_error(r.evalsha, sha, 0) == \
        "user_script:2: Script attempted to access nonexistent global variable 'x' script: %s, " \
        "on @user_script:2." % sha
    sha = r.script_load("local function f() error('boom') end return f()")
    assert resp_error(r.evalsha, sha, 0) == "user_script:1: boom script: %s, on @user_script:1." % sha
    sha = r.script_load("return redis.call('nosuchcommand')")
    assert resp_error(r.evalsha, sha, 0) == \
        "Unknown Redis command called from script script: %s, on @user_script:1." % sha
    sha = r.script_load("error()")
    assert resp_error(r.evalsha, sha, 0) == "nil script: %s, on @user_script:1." % sha


@pytest.mark.ruvio_only
def test_raised_table_with_metamethods_is_read_raw(r):
    """A raised table whose __index errors (Redis 7.0 crashes on error({}) alone): the reply reads its
    fields raw and the server stays up."""
    body = "error(setmetatable({}, {__index=function(t, k) if k == 'source' then return nil end error('x') end}))"
    msg = resp_error(r.eval, body, 0)
    assert msg.startswith("unknown error script: ") and msg.endswith(", on @user_script:1."), msg
    assert resp_error(r.eval, "error(setmetatable({err='E1 x'}, {__index=function() error('y') end}))", 0) \
        .startswith("E1 x script: ")
    assert r.ping()


# LuaJIT compiles `return f(...)` into a tail call that leaves no frame of the returning function; Ruvio compiles
# such returns of a script's main chunk and of a registered function's body as `return (f(...))`
# (node/commands/script_src.c), so an error raised by a C function on that line is placed as Redis places it.
TAIL_CASES = [
    # (body, the error's text before " script: <sha>", the line Redis names)
    ("local a = 1\n\nreturn redis.call('incr', KEYS[1])", "value is not an integer or out of range", 3),
    ("local a = 1\nreturn error('x')", "user_script:2: x", 2),
    ("local a = 1\nreturn error({err='MY x'})", "MY x", 2),
    ("local a = 1\nreturn string.rep()",
     "user_script:2: bad argument #1 to 'rep' (string expected, got no value)", 2),
    ("local a = 1\nif a == 1 then\n  return redis.call('incr', KEYS[1])\nend", "value is not an integer or out of range",
     3),
    ("local a = 1\nif a == 2 then\n  return 1\nelse\n  return redis.call('incr',\n    KEYS[1])\nend",
     "value is not an integer or out of range", 5),
    ("local a = 1\nrepeat\n  return redis.call('incr', KEYS[1]);\nuntil true", "value is not an integer or out of range",
     3),
    ("local a = 1\nreturn redis.call('incr', KEYS[1]) -- return it\n", "value is not an integer or out of range", 2),
    ("#!lua\nlocal a = 1\nreturn redis.call('incr', KEYS[1])", "value is not an integer or out of range", 3),
]


@pytest.mark.parametrize("body,msg,line", TAIL_CASES)
def test_tail_call_on_a_later_line_is_located(r, body, msg, line):
    """A multi-line script whose last `return` calls a C function that raises: Redis names the return's line."""
    r.set("s", "x")
    sha = r.script_load(body)
    assert resp_error(r.evalsha, sha, 1, "s") == "%s script: %s, on @user_script:%d." % (msg, sha, line)
    assert resp_error(r.eval, body, 1, "s") == "%s script: %s, on @user_script:%d." % (msg, sha, line)


def test_tail_call_rewrite_keeps_results(r):
    """`return (f())` for `return f()` changes no result a client sees: the first value, nil for none, the same
    SHA, and returns of several values or inside functions stay as written."""
    r.delete("n")
    body = "local a = 1\nreturn redis.call('incr', KEYS[1])"
    assert r.eval(body, 1, "n") == 1
    assert r.script_load(body) == hashlib.sha1(body.encode()).hexdigest()
    assert r.eval("local t = {}\nreturn unpack({7, 8, 9})", 0) == 7
    assert r.eval("local f = function() end\nreturn f()", 0) is None
    assert r.eval("local f = function() return 'a', 'b' end\nreturn f(), 2", 0) == "a"
    assert r.eval("local function g(x) return tostring(x) end\nreturn g(5)", 0) == "5"
    assert r.eval("local s = 'return f()'\nreturn string.upper(s) --[[ return g() ]]", 0) == "RETURN F()"
    assert r.eval("local t = {}\nfor i = 1, 3 do t[i] = i end\nreturn t", 0) == [1, 2, 3]
    assert r.eval("local x = 0\nwhile true do x = x + 1 if x == 3 then return tostring(x) end end", 0) == "3"


def test_tail_call_in_a_registered_function_is_located(r):
    """The body of a function given to redis.register_function (positional or callback=): as Redis."""
    code = ("#!lua name=taillib\n"
            "redis.register_function('tail_incr', function(keys, args)\n"
            "  local a = 1\n"
            "  return redis.call('incr', keys[1])\n"
            "end)\n"
            "redis.register_function{function_name='tail_err', callback=function(keys, args)\n"
            "  if #keys == 0 then\n"
            "    return error('boom')\n"
            "  end\n"
            "  return redis.call('get', keys[1])\n"
            "end}\n")
    r.function_flush()
    try:
        assert r.function_load(code) == "taillib"
        lib = r.function_list(library="taillib", withcode=True)[0]     # (a flat list in RESP2)
        assert dict(zip(lib[::2], lib[1::2]))["library_code"] == code   # the code as loaded
        r.set("s", "x")
        assert resp_error(r.fcall, "tail_incr", 1, "s") == \
            "value is not an integer or out of range script: tail_incr, on @user_function:4."
        assert resp_error(r.fcall, "tail_err", 0) == \
            "user_function:8: boom script: tail_err, on @user_function:8."
        assert r.fcall("tail_err", 1, "s") == "x"
        r.set("c", 1)
        assert r.fcall("tail_incr", 1, "c") == 2
    finally:
        r.function_flush()


@pytest.mark.ruvio_only
def test_tail_call_in_a_nested_function_stays_unlocated(r):
    """A `return redis.call(...)` inside a function of the script keeps its tail call (another caller could use
    all its values), so LuaJIT leaves no frame of it and the error is placed at the line that called the
    function. Redis 7.0: `value is not an integer or out of range script: <sha>, on @user_script:2.`
    (the return's line). docs/scripting.md says so."""
    r.set("s", "x")
    sha = r.script_load("local function g()\n  return redis.call('incr', KEYS[1])\nend\nlocal v = g()\nreturn v")
    assert resp_error(r.evalsha, sha, 1, "s") == \
        "value is not an integer or out of range script: %s, on @user_script:4." % sha


@pytest.mark.ruvio_only
def test_tail_call_in_a_function_registered_by_name_stays_unlocated(r):
    """The same in a library function registered by name (not a literal): FCALL calls it directly, so no Lua
    frame is left and a multi-line function's error has no location. Redis 7.0:
    `value is not an integer or out of range script: byname, on @user_function:4.`"""
    code = ("#!lua name=bynamelib\n"
            "local function h(keys, args)\n"
            "  local a = 1\n"
            "  return redis.call('incr', keys[1])\n"
            "end\n"
            "redis.register_function('byname', h)\n")
    r.function_flush()
    try:
        assert r.function_load(code) == "bynamelib"
        r.set("s", "x")
        assert resp_error(r.fcall, "byname", 1, "s") == "value is not an integer or out of range script: byname"
    finally:
        r.function_flush()


def test_lua_pcall_catches_the_error_text(r):
    """Redis 7's pcall: a redis.call error is caught as its text (scripts match it with string.find)."""
    r.set("s", "x")
    assert r.eval("local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), type(e), e}",
                  1, "s") == ["false", "string", "ERR value is not an integer or out of range"]
    assert r.eval("local ok, e = pcall(redis.call, 'lpush', KEYS[1], 'v') "
                  "if string.find(e, 'WRONGTYPE') then return 'wrong type' end return e", 1, "s") == "wrong type"
    assert r.eval("local ok, e = pcall(error, {err='MY text'}) return e", 0) == "MY text"
    assert r.eval("local ok, e = pcall(error, {code=1}) return type(e)", 0) == "table"
    assert r.eval("local ok, e = pcall(error, 'plain', 0) return e", 0) == "plain"
    assert r.eval("return {pcall(function(a, b) return a + b, 'x' end, 1, 2)}", 0) == [1, 3, "x"]
    assert r.eval("return {pcall(nil)}", 0) == [None, "attempt to call a nil value"]
    assert r.eval("return {pcall()}", 0) == [None, "attempt to call a boolean value"]


# --------------------------------------------------------------------------------------------- client helpers

def test_redis_py_register_script_falls_back_from_noscript(r):
    r.script_flush()
    bump = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert r.script_exists(bump.sha) == [False]
    msg = resp_error(r.evalsha, bump.sha, 1, "ctr", 1)      # what redis-py's fallback catches
    assert msg == "No matching script. Please use EVAL."
    assert bump(keys=["ctr"], args=[5]) == 5                 # EVALSHA -> NOSCRIPT -> EVAL
    assert r.script_exists(bump.sha) == [True]               # EVAL cached it
    assert bump(keys=["ctr"], args=[2]) == 7
    r.script_flush()
    assert bump(keys=["ctr"], args=[1]) == 8


@pytest.mark.parametrize("transaction", [False, True])
def test_redis_py_script_in_a_pipeline_loads_it_first(r, transaction):
    r.script_flush()
    bump = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    fail = r.register_script("return redis.call('incr', KEYS[1])")
    r.set("txt", "x")
    with r.pipeline(transaction=transaction) as p:
        bump(keys=["ctr"], args=[2], client=p)               # not loaded: the pipeline loads it
        p.get("ctr")
        bump(keys=["ctr"], args=[3], client=p)
        fail(keys=["txt"], client=p)
        got = p.execute(raise_on_error=False)
    assert got[:3] == [2, "2", 5]
    assert isinstance(got[3], redis.exceptions.ResponseError)
    assert str(got[3]).startswith("value is not an integer or out of range script: %s" % fail.sha)
    assert r.script_exists(bump.sha, fail.sha) == [True, True]


def test_redis_py_xautoclaim_recovers_a_dead_consumers_entries(r):
    ids = [r.xadd("jobs", {"n": str(i)}) for i in range(5)]
    r.xgroup_create("jobs", "workers", id="0")
    got = r.xreadgroup("workers", "dead", {"jobs": ">"}, count=5)
    assert [i for i, _ in got[0][1]] == ids                 # read, never acknowledged
    r.xdel("jobs", ids[1])                                  # deleted while pending
    nxt, claimed, deleted = r.xautoclaim("jobs", "workers", "alive", min_idle_time=0, count=2)
    assert [i for i, _ in claimed] == [ids[0]] and claimed[0][1] == {"n": "0"}
    assert deleted == [ids[1]] and nxt == ids[2]
    justid = r.xautoclaim("jobs", "workers", "alive", min_idle_time=0, start_id=nxt, count=2, justid=True)
    assert justid == [ids[2], ids[3]]
    nxt, claimed, deleted = r.xautoclaim("jobs", "workers", "alive", min_idle_time=0, start_id=ids[4])
    assert (nxt, [i for i, _ in claimed], deleted) == ("0-0", [ids[4]], [])
    # idle time not reached: nothing moves
    assert r.xautoclaim("jobs", "workers", "other", min_idle_time=3_600_000) == ["0-0", [], []]
    pending = r.xpending_range("jobs", "workers", min="-", max="+", count=10)
    assert [(p["message_id"], p["consumer"]) for p in pending] == [(i, "alive") for i in (ids[0],) + tuple(ids[2:])]
    assert r.xack("jobs", "workers", *[p["message_id"] for p in pending]) == 4
    assert r.xpending("jobs", "workers")["pending"] == 0
