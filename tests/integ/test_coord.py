"""Coordination commands (Ruvio only): INCRBY ... MAX, SEMAPHORE, LEASE, ONCE, LIMIT."""

import re

import pytest

from conftest import poll_until, resp_error

pytestmark = pytest.mark.ruvio_only

NOTINT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "syntax error"


def cmd(r, *a):
    return r.execute_command(*a)


def keys_in_info(r):
    ks = r.info("keyspace")
    return sum(v["keys"] for v in ks.values()) if ks else 0


# ------------------------------------------------------------ INCRBY ... MAX

def incrmax(raw, key, by, limit):
    # the raw client: redis-py's INCRBY callback cannot parse a null reply
    return raw.cmd("INCRBY", key, str(by), "MAX", str(limit))


def test_incrby_max(r, raw):
    assert incrmax(raw, "c", 5, 10) == 5
    assert raw.cmd("INCRBY", "c", "5", "max", "10") == 10
    assert incrmax(raw, "c", 1, 10) is None
    assert r.get("c") == "10"
    assert incrmax(raw, "c", -3, 5) is None    # 7 > 5
    assert incrmax(raw, "c", -5, 5) == 5       # a negative increment within the limit
    assert incrmax(raw, "c", 0, 5) == 5
    assert incrmax(raw, "c", -10, -5) == -5
    assert incrmax(raw, "new", 11, 10) is None
    assert r.exists("new") == 0
    assert incrmax(raw, "new2", 10, 10) == 10
    assert r.incrby("plain", 3) == 3           # the plain form is unchanged


def test_incrby_max_keeps_ttl_and_refusal_writes_nothing(r, raw):
    r.set("c", 9, px=100000)
    ttl = r.pttl("c")
    assert incrmax(raw, "c", 5, 10) is None
    assert r.get("c") == "9"
    assert 0 < r.pttl("c") <= ttl
    assert incrmax(raw, "c", 1, 10) == 10
    assert 0 < r.pttl("c") <= ttl


def test_incrby_max_errors(r, raw):
    assert NOTINT in resp_error(cmd, r, "INCRBY", "c", "x", "MAX", 10)
    assert SYNTAX in resp_error(cmd, r, "INCRBY", "c", 1, "MAX")
    assert SYNTAX in resp_error(cmd, r, "INCRBY", "c", 1, "MAX", "x")
    assert SYNTAX in resp_error(cmd, r, "INCRBY", "c", 1, "MIN", 5)
    assert SYNTAX in resp_error(cmd, r, "INCRBY", "c", 1, "MAX", 5, "MAX", 6)
    r.set("s", "abc")
    assert NOTINT in resp_error(cmd, r, "INCRBY", "s", 1, "MAX", 5)
    r.set("big", 2**63 - 1)
    assert "overflow" in resp_error(cmd, r, "INCRBY", "big", 1, "MAX", 5)
    r.sadd("set", "a")
    assert WRONGTYPE in resp_error(cmd, r, "INCRBY", "set", 1, "MAX", 5)
    assert raw.cmd("INCRBY", "c") == "ERR wrong number of arguments for 'incrby' command"


def test_incrby_max_resp3_null(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("SET", "c", "10")
    assert raw.cmd_raw("INCRBY", "c", "1", "MAX", "10") == b"_\r\n"
    raw.cmd("HELLO", "2")
    assert raw.cmd_raw("INCRBY", "c", "1", "MAX", "10") == b"$-1\r\n"


# ---------------------------------------------------------------- SEMAPHORE

def test_semaphore_acquire_release_count(r):
    t1 = cmd(r, "SEMAPHORE", "sem", 2, 100000)
    t2 = cmd(r, "SEMAPHORE", "sem", 2, 100000)
    assert re.fullmatch(r"[0-9a-f]{1,16}", t1) and re.fullmatch(r"[0-9a-f]{1,16}", t2)
    assert t1 != t2
    assert cmd(r, "SEMAPHORE", "sem", "COUNT") == 2
    assert cmd(r, "SEMAPHORE", "sem", 2, 100000) is None
    assert cmd(r, "SEMAPHORE", "sem", 3, 100000) is not None   # a larger limit admits
    assert cmd(r, "SEMAPHORE", "sem", "count") == 3
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t1) == 1
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t1) == 0
    assert cmd(r, "SEMAPHORE", "sem", "COUNT") == 2
    assert cmd(r, "SEMAPHORE", "nokey", "COUNT") == 0
    assert cmd(r, "SEMAPHORE", "nokey", "RELEASE", t2) == 0
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", "zz") == 0
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t2.upper() if t2.upper() != t2 else "0" + t2) == 0
    assert r.type("sem") == "coord"
    assert r.object("encoding", "sem") == "semaphore"
    assert r.memory_usage("sem") > 0


def test_semaphore_last_release_deletes_key(r):
    t = cmd(r, "SEMAPHORE", "sem", 1, 100000)
    assert r.exists("sem") == 1
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t) == 1
    assert r.exists("sem") == 0


def test_semaphore_full_writes_nothing(r):
    cmd(r, "SEMAPHORE", "sem", 1, 100000)
    before = r.pttl("sem")
    assert cmd(r, "SEMAPHORE", "sem", 1, 900000) is None
    assert r.pttl("sem") <= before
    assert cmd(r, "SEMAPHORE", "sem", "COUNT") == 1


def test_semaphore_key_ttl_follows_latest_holder(r):
    t1 = cmd(r, "SEMAPHORE", "sem", 5, 10000)
    assert 0 < r.pttl("sem") <= 10000
    t2 = cmd(r, "SEMAPHORE", "sem", 5, 50000)
    assert 10000 < r.pttl("sem") <= 50000
    assert cmd(r, "SEMAPHORE", "sem", "RENEW", t2, 2000) == 1
    assert 2000 < r.pttl("sem") <= 10000      # back to t1's deadline
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t1) == 1
    assert 0 < r.pttl("sem") <= 2000
    assert cmd(r, "SEMAPHORE", "sem", "RENEW", "ffff", 2000) == 0


def test_semaphore_holders_expire(r):
    t1 = cmd(r, "SEMAPHORE", "sem", 2, 150)
    cmd(r, "SEMAPHORE", "sem", 2, 100000)
    assert cmd(r, "SEMAPHORE", "sem", 2, 100000) is None
    poll_until(lambda: cmd(r, "SEMAPHORE", "sem", "COUNT") == 1, what="holder expiry")
    assert cmd(r, "SEMAPHORE", "sem", "RENEW", t1, 1000) == 0
    assert cmd(r, "SEMAPHORE", "sem", "RELEASE", t1) == 0
    assert cmd(r, "SEMAPHORE", "sem", 2, 100000) is not None
    assert cmd(r, "SEMAPHORE", "sem", "COUNT") == 2


def test_semaphore_idle_key_disappears(r):
    cmd(r, "SEMAPHORE", "sem", 3, 100)
    cmd(r, "SEMAPHORE", "sem", 3, 150)
    poll_until(lambda: r.exists("sem") == 0, what="idle semaphore expiry")
    t = cmd(r, "SEMAPHORE", "sem", 1, 100000)
    assert t is not None and cmd(r, "SEMAPHORE", "sem", "COUNT") == 1


def test_semaphore_errors(r, raw):
    assert SYNTAX in resp_error(cmd, r, "SEMAPHORE", "sem", "x", 100)
    assert SYNTAX in resp_error(cmd, r, "SEMAPHORE", "sem", "COUNT", 1)
    assert SYNTAX in resp_error(cmd, r, "SEMAPHORE", "sem", "RENEW", "a")
    assert SYNTAX in resp_error(cmd, r, "SEMAPHORE", "sem", 1, 2, 3)
    assert SYNTAX in resp_error(cmd, r, "SEMAPHORE", "sem", "NOPE")
    assert "invalid limit" in resp_error(cmd, r, "SEMAPHORE", "sem", 0, 100)
    assert "invalid limit" in resp_error(cmd, r, "SEMAPHORE", "sem", -1, 100)
    assert NOTINT in resp_error(cmd, r, "SEMAPHORE", "sem", 1, "x")
    assert "invalid expire time in 'semaphore'" in resp_error(cmd, r, "SEMAPHORE", "sem", 1, 0)
    assert "invalid expire time in 'semaphore'" in resp_error(cmd, r, "SEMAPHORE", "sem", 1, 2**63 - 1)
    assert "invalid expire time" in resp_error(cmd, r, "SEMAPHORE", "sem", "RENEW", "a", -5)
    assert r.exists("sem") == 0
    r.set("str", "v")
    for args in ((1, 1000), ("COUNT",), ("RELEASE", "a"), ("RENEW", "a", 100)):
        assert WRONGTYPE in resp_error(cmd, r, "SEMAPHORE", "str", *args)
    assert raw.cmd("SEMAPHORE", "k") == "ERR wrong number of arguments for 'semaphore' command"


def test_semaphore_resp3_null(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("SEMAPHORE", "sem", "1", "100000")
    assert raw.cmd_raw("SEMAPHORE", "sem", "1", "100000") == b"_\r\n"


def test_semaphore_copy_and_rename(r):
    t = cmd(r, "SEMAPHORE", "sem", 2, 100000)
    assert r.copy("sem", "sem2") == 1
    assert cmd(r, "SEMAPHORE", "sem2", "COUNT") == 1
    assert cmd(r, "SEMAPHORE", "sem2", "RELEASE", t) == 1
    assert cmd(r, "SEMAPHORE", "sem", "COUNT") == 1


# -------------------------------------------------------------------- LEASE

def test_lease_acquire_renew_refuse_release(r):
    assert cmd(r, "LEASE", "l", "alice", "PX", 100000) == 1
    assert r.get("l") == "alice" and r.type("l") == "string"
    assert cmd(r, "LEASE", "l", "bob", "PX", 100000) == 0
    assert cmd(r, "LEASE", "l", "alice", "PX", 200000) == 1
    assert 100000 < r.pttl("l") <= 200000
    assert cmd(r, "LEASE", "l", "RELEASE", "bob") == 0
    assert cmd(r, "LEASE", "l", "RELEASE", "alice") == 1
    assert r.exists("l") == 0
    assert cmd(r, "LEASE", "l", "RELEASE", "alice") == 0
    assert cmd(r, "LEASE", "l", "bob", "px", 1000) == 1


def test_lease_without_deadline(r):
    assert cmd(r, "LEASE", "l", "42") == 1
    assert r.pttl("l") == -1
    assert cmd(r, "LEASE", "l", "42", "PX", 5000) == 1
    assert 0 < r.pttl("l") <= 5000
    assert cmd(r, "LEASE", "l", "42") == 1      # renew without PX: no deadline
    assert r.pttl("l") == -1
    assert cmd(r, "LEASE", "l", "43") == 0
    assert cmd(r, "LEASE", "x", "RELEASE") == 1  # a holder named RELEASE
    assert r.get("x") == "RELEASE"


def test_lease_refusal_writes_nothing(r):
    cmd(r, "LEASE", "l", "alice", "PX", 100000)
    before = r.pttl("l")
    assert cmd(r, "LEASE", "l", "bob", "PX", 900000) == 0
    assert cmd(r, "LEASE", "l", "bob") == 0
    assert r.get("l") == "alice" and 0 < r.pttl("l") <= before


def test_lease_expires(r):
    assert cmd(r, "LEASE", "l", "alice", "PX", 100) == 1
    assert cmd(r, "LEASE", "l", "bob", "PX", 100000) == 0
    poll_until(lambda: cmd(r, "LEASE", "l", "bob", "PX", 100000) == 1, what="lease expiry")
    assert r.get("l") == "bob"


def test_lease_errors(r, raw):
    assert SYNTAX in resp_error(cmd, r, "LEASE", "l", "a", "EX", 10)
    assert SYNTAX in resp_error(cmd, r, "LEASE", "l", "a", "PX")
    assert SYNTAX in resp_error(cmd, r, "LEASE", "l", "a", "PX", 10, "x")
    assert NOTINT in resp_error(cmd, r, "LEASE", "l", "a", "PX", "x")
    assert "invalid expire time in 'lease'" in resp_error(cmd, r, "LEASE", "l", "a", "PX", 0)
    r.rpush("list", "a")
    assert WRONGTYPE in resp_error(cmd, r, "LEASE", "list", "a")
    assert WRONGTYPE in resp_error(cmd, r, "LEASE", "list", "RELEASE", "a")
    assert raw.cmd("LEASE", "l") == "ERR wrong number of arguments for 'lease' command"


# --------------------------------------------------------------------- ONCE

def test_once(r):
    assert cmd(r, "ONCE", "o", 100000) == 1
    assert r.get("o") == "1"
    ttl = r.pttl("o")
    assert 0 < ttl <= 100000
    assert cmd(r, "ONCE", "o", 900000) == 0
    assert r.pttl("o") <= ttl                 # not extended
    r.set("p", "x")
    assert cmd(r, "ONCE", "p", 1000) == 0
    assert r.get("p") == "x" and r.pttl("p") == -1


def test_once_expires(r):
    assert cmd(r, "ONCE", "o", 100) == 1
    poll_until(lambda: cmd(r, "ONCE", "o", 100000) == 1, what="once window end")
    assert cmd(r, "ONCE", "o", 100000) == 0


def test_once_errors(r, raw):
    assert NOTINT in resp_error(cmd, r, "ONCE", "o", "x")
    assert "invalid expire time in 'once'" in resp_error(cmd, r, "ONCE", "o", -1)
    r.hset("h", "f", "v")
    assert WRONGTYPE in resp_error(cmd, r, "ONCE", "h", 100)
    assert raw.cmd("ONCE", "o") == "ERR wrong number of arguments for 'once' command"
    assert raw.cmd("ONCE", "o", "1", "2") == "ERR wrong number of arguments for 'once' command"
    assert keys_in_info(r) == 1


# -------------------------------------------------------------------- LIMIT

def test_limit_window(r):
    ok, rem, reset = cmd(r, "LIMIT", "rl", 3, 100000)
    assert (ok, rem) == (1, 2) and 99000 < reset <= 100000
    assert cmd(r, "LIMIT", "rl", 3, 100000)[:2] == [1, 1]
    assert cmd(r, "LIMIT", "rl", 3, 100000)[:2] == [1, 0]
    ttl = r.pttl("rl")
    ok, rem, reset = cmd(r, "LIMIT", "rl", 3, 100000)
    assert (ok, rem) == (0, 0) and 0 < reset <= ttl
    assert r.get("rl") == "3"
    assert r.pttl("rl") <= ttl                # refusal writes nothing
    assert cmd(r, "LIMIT", "rl", 5, 100000)[:2] == [1, 1]   # a larger max admits
    assert r.type("rl") == "string"


def test_limit_window_resets(r):
    assert cmd(r, "LIMIT", "rl", 1, 150)[0] == 1
    assert cmd(r, "LIMIT", "rl", 1, 150)[0] == 0
    poll_until(lambda: cmd(r, "LIMIT", "rl", 1, 100000)[0] == 1, what="window end")
    ok, rem, reset = cmd(r, "LIMIT", "rl", 1, 100000)
    assert (ok, rem) == (0, 0) and reset > 1000


def test_limit_key_without_ttl(r):
    r.set("rl", 1)
    assert cmd(r, "LIMIT", "rl", 1, 1000) == [0, 0, -1]
    assert r.pttl("rl") == -1
    ok, rem, reset = cmd(r, "LIMIT", "rl", 2, 5000)
    assert (ok, rem) == (1, 0) and 0 < reset <= 5000
    assert 0 < r.pttl("rl") <= 5000


def test_limit_errors(r, raw):
    assert NOTINT in resp_error(cmd, r, "LIMIT", "rl", "x", 100)
    assert "invalid max in 'limit'" in resp_error(cmd, r, "LIMIT", "rl", 0, 100)
    assert NOTINT in resp_error(cmd, r, "LIMIT", "rl", 1, "x")
    assert "invalid expire time in 'limit'" in resp_error(cmd, r, "LIMIT", "rl", 1, 0)
    r.set("s", "abc")
    assert NOTINT in resp_error(cmd, r, "LIMIT", "s", 1, 100)
    r.sadd("set", "a")
    assert WRONGTYPE in resp_error(cmd, r, "LIMIT", "set", 1, 100)
    assert raw.cmd("LIMIT", "rl", "1") == "ERR wrong number of arguments for 'limit' command"
    assert keys_in_info(r) == 2


def test_limit_resp3(raw):
    raw.cmd("HELLO", "3")
    reply = raw.cmd("LIMIT", "rl", "2", "100000")
    assert reply[:2] == [1, 1]


# ------------------------------------------------------------------ COMMAND

def test_command_info_and_docs(raw):
    for name, arity in (("semaphore", -3), ("lease", -3), ("once", 3), ("limit", 4), ("incrby", -3)):
        info = raw.cmd("COMMAND", "INFO", name)
        assert info[0][0] in (name, name.encode()) and info[0][1] == arity
    assert "MAX" in str(raw.cmd("COMMAND", "DOCS", "incrby"))
