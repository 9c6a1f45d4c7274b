"""Keyspace (generic) commands."""

import time

import pytest

from conftest import poll_until, resp_error

NOTINT = "value is not an integer or out of range"


# ---------------------------------------------------------------------------------------------------- DEL UNLINK EXISTS TYPE

def test_del(r):
    r.mset({"a": 1, "b": 2, "c": 3})
    assert r.delete("a", "b", "missing") == 2
    assert r.exists("a", "b", "c") == 1
    assert r.delete("a") == 0


def test_del_same_key_twice(r):
    r.set("a", 1)
    assert r.delete("a", "a") == 1


def test_unlink(r):
    r.mset({"a": 1, "b": 2})
    assert r.unlink("a", "b", "c") == 2
    assert r.dbsize() == 0


def test_exists_counts_duplicates(r):
    r.set("a", 1)
    assert r.exists("a", "a", "a", "missing") == 3
    assert r.exists("missing") == 0


def test_del_arity(raw):
    assert raw.cmd("DEL") == "ERR wrong number of arguments for 'del' command"
    assert raw.cmd("EXISTS") == "ERR wrong number of arguments for 'exists' command"


def test_type(r, raw):
    r.set("s", "v")
    r.set("n", 1)
    assert r.type("s") == "string"
    assert r.type("n") == "string"
    assert r.type("missing") == "none"
    assert raw.cmd_raw("TYPE", "s") == b"+string\r\n"
    assert raw.cmd_raw("TYPE", "missing") == b"+none\r\n"


# ---------------------------------------------------------------------------------------------------- EXPIRE family

def test_expire_and_ttl(r):
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.pttl("k") == -1
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert 99000 <= r.pttl("k") <= 100000
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2


def test_expire_missing_key(r):
    assert r.expire("missing", 100) is False
    assert r.pexpire("missing", 100) is False
    assert r.expireat("missing", int(time.time()) + 100) is False
    assert r.pexpireat("missing", int(time.time() * 1000) + 100) is False


def test_pexpire(r):
    r.set("k", "v")
    assert r.pexpire("k", 100000) is True
    assert 99000 <= r.pttl("k") <= 100000
    assert 99 <= r.ttl("k") <= 100


def test_expireat_pexpireat(r):
    r.set("k", "v")
    at = int(time.time()) + 1000
    assert r.expireat("k", at) is True
    assert r.expiretime("k") == at
    assert r.execute_command("PEXPIRETIME", "k") == at * 1000
    base = (int(time.time()) + 2000) * 1000
    assert r.pexpireat("k", base + 700) is True
    assert r.execute_command("PEXPIRETIME", "k") == base + 700
    # EXPIRETIME rounds to the nearest second
    assert r.expiretime("k") == base // 1000 + 1
    r.pexpireat("k", base + 300)
    assert r.expiretime("k") == base // 1000


def test_ttl_rounds_to_nearest_second(r):
    r.set("k", "v")
    r.pexpire("k", 100900)
    assert r.ttl("k") == 101
    r.pexpire("k", 100100)
    assert r.ttl("k") == 100


def test_expiretime_no_ttl_and_missing(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("EXPIRETIME", "k") == -1
    assert raw.cmd("PEXPIRETIME", "k") == -1
    assert raw.cmd("EXPIRETIME", "missing") == -2
    assert raw.cmd("PEXPIRETIME", "missing") == -2


def test_expire_zero_or_negative_deletes(r):
    r.mset({"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.expire("a", 0) is True
    assert r.expire("b", -10) is True
    assert r.pexpire("c", -1) is True
    assert r.expireat("d", int(time.time()) - 10) is True
    assert r.dbsize() == 0


def test_expire_nx(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("EXPIRE", "k", "100", "NX") == 1
    assert raw.cmd("EXPIRE", "k", "200", "NX") == 0
    assert raw.cmd("TTL", "k") in (99, 100)


def test_expire_xx(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("EXPIRE", "k", "100", "XX") == 0
    assert raw.cmd("TTL", "k") == -1
    raw.cmd("EXPIRE", "k", "100")
    assert raw.cmd("EXPIRE", "k", "200", "XX") == 1
    assert raw.cmd("TTL", "k") in (199, 200)


def test_expire_gt(raw):
    raw.cmd("SET", "k", "v")
    # no TTL counts as infinite: GT never applies
    assert raw.cmd("EXPIRE", "k", "100", "GT") == 0
    raw.cmd("EXPIRE", "k", "100")
    assert raw.cmd("EXPIRE", "k", "50", "GT") == 0
    assert raw.cmd("EXPIRE", "k", "200", "GT") == 1
    assert raw.cmd("TTL", "k") in (199, 200)


def test_expire_lt(raw):
    raw.cmd("SET", "k", "v")
    # no TTL counts as infinite: LT always applies
    assert raw.cmd("EXPIRE", "k", "100", "LT") == 1
    assert raw.cmd("EXPIRE", "k", "200", "LT") == 0
    assert raw.cmd("EXPIRE", "k", "50", "LT") == 1
    assert raw.cmd("TTL", "k") in (49, 50)


def test_expire_xx_gt_combination(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("EXPIRE", "k", "100", "XX", "GT") == 0
    raw.cmd("EXPIRE", "k", "100")
    assert raw.cmd("EXPIRE", "k", "200", "XX", "GT") == 1


def test_pexpire_options(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("PEXPIRE", "k", "100000", "NX") == 1
    assert raw.cmd("PEXPIRE", "k", "200000", "NX") == 0
    assert raw.cmd("PEXPIREAT", "k", str(int(time.time() * 1000) + 500000), "GT") == 1
    assert raw.cmd("EXPIREAT", "k", str(int(time.time()) + 10), "LT") == 1


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_option_errors(raw, cmd):
    raw.cmd("SET", "k", "v")
    assert raw.cmd(cmd, "k", "100", "NX", "XX") == \
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    assert raw.cmd(cmd, "k", "100", "NX", "GT") == \
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    assert raw.cmd(cmd, "k", "100", "GT", "LT") == "ERR GT and LT options at the same time are not compatible"
    assert raw.cmd(cmd, "k", "100", "FOO") == "ERR Unsupported option FOO"
    assert raw.cmd(cmd, "k", "abc") == "ERR value is not an integer or out of range"
    assert raw.cmd("TTL", "k") == -1


def test_expire_overflow(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("EXPIRE", "k", "9223372036854775807") == "ERR invalid expire time in 'expire' command"
    assert raw.cmd("EXPIRE", "k", "922337203685477580") == "ERR invalid expire time in 'expire' command"
    assert raw.cmd("PEXPIRE", "k", "9223372036854775807") == "ERR invalid expire time in 'pexpire' command"
    assert raw.cmd("EXPIREAT", "k", "9223372036854775807") == "ERR invalid expire time in 'expireat' command"
    assert raw.cmd("TTL", "k") == -1


def test_expire_redis_py_message(r):
    r.set("k", "v")
    assert resp_error(r.execute_command, "EXPIRE", "k", "10", "GT", "LT") == \
        "GT and LT options at the same time are not compatible"


def test_persist(r):
    r.set("k", "v", ex=100)
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.persist("k") is False
    assert r.persist("missing") is False


def test_key_expires(r):
    r.set("k", "v", px=100)
    poll_until(lambda: r.get("k") is None, timeout=5, what="key to expire")
    assert r.exists("k") == 0
    assert r.ttl("k") == -2


def test_overwrite_after_expire(r):
    r.set("k", "v", px=50)
    poll_until(lambda: r.exists("k") == 0, timeout=5, what="key to expire")
    assert r.set("k", "new", nx=True) is True
    assert r.ttl("k") == -1


def test_active_expiry(r):
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.set("exp:%d" % i, "v", px=50)
        p.execute()
    # never touch the keys: only the server's background expiry can remove them
    poll_until(lambda: r.dbsize() == 0, timeout=5, interval=0.05, what="active expiry of 200 keys")


# ---------------------------------------------------------------------------------------------------- KEYS

@pytest.fixture
def keys_data(r):
    names = ["hello", "hallo", "hxllo", "hllo", "heeeello", "hbllo", "hcllo", "hdllo",
             "h*llo", "h?llo", "h[llo", "a", "ab", "abc", "x\\y"]
    r.mset({n: 1 for n in names})
    return names


@pytest.mark.parametrize("pattern, expected", [
    ("*", None),
    ("h?llo", ["hello", "hallo", "hxllo", "hbllo", "hcllo", "hdllo", "h*llo", "h?llo", "h[llo"]),
    ("h*llo", ["hello", "hallo", "hxllo", "hllo", "heeeello", "hbllo", "hcllo", "hdllo", "h*llo",
               "h?llo", "h[llo"]),
    ("h[ae]llo", ["hello", "hallo"]),
    ("h[a-c]llo", ["hallo", "hbllo", "hcllo"]),
    ("h[^e]llo", ["hallo", "hxllo", "hbllo", "hcllo", "hdllo", "h*llo", "h?llo", "h[llo"]),
    ("h\\*llo", ["h*llo"]),
    ("h\\?llo", ["h?llo"]),
    ("h\\[llo", ["h[llo"]),
    ("a*", ["a", "ab", "abc"]),
    ("a?", ["ab"]),
    ("???", ["abc", "x\\y"]),
    ("x\\\\y", ["x\\y"]),
    ("nomatch*", []),
    ("abc", ["abc"]),
])
def test_keys_patterns(r, keys_data, pattern, expected):
    if expected is None:
        expected = keys_data
    assert sorted(r.keys(pattern)) == sorted(expected)


def test_keys_empty_db(r):
    assert r.keys("*") == []


def test_keys_skips_expired(r):
    r.set("live", 1)
    r.set("dead", 1, px=1)
    poll_until(lambda: r.pttl("dead") == -2, timeout=5, what="expiry")
    assert r.keys("*") == ["live"]


# ---------------------------------------------------------------------------------------------------- SCAN

def scan_all(r, **kw):
    seen = []
    cursor = 0
    rounds = 0
    while True:
        cursor, keys = r.scan(cursor=cursor, **kw)
        seen.extend(keys)
        rounds += 1
        assert rounds < 100000
        if cursor == 0:
            return seen


def test_scan_empty(raw):
    assert raw.cmd("SCAN", "0") == [b"0", []]


def test_scan_completeness_5000(r):
    with r.pipeline(transaction=False) as p:
        for i in range(5000):
            p.set("key:%d" % i, i)
        p.execute()
    seen = scan_all(r, count=100)
    assert set(seen) == {"key:%d" % i for i in range(5000)}


def test_scan_default_count(r):
    with r.pipeline(transaction=False) as p:
        for i in range(300):
            p.set("k%d" % i, i)
        p.execute()
    assert set(scan_all(r)) == {"k%d" % i for i in range(300)}


def test_scan_match(r):
    with r.pipeline(transaction=False) as p:
        for i in range(500):
            p.set("user:%d" % i, i)
            p.set("item:%d" % i, i)
        p.execute()
    seen = scan_all(r, match="user:*", count=50)
    assert set(seen) == {"user:%d" % i for i in range(500)}
    assert set(scan_all(r, match="item:1?", count=50)) == {"item:1%d" % i for i in range(10)}


def test_scan_type(r):
    r.mset({"s%d" % i: i for i in range(50)})
    assert set(scan_all(r, _type="string", count=20)) == {"s%d" % i for i in range(50)}
    assert scan_all(r, _type="hash", count=20) == []


def test_scan_while_mutating(r):
    stable = {"stable:%d" % i for i in range(2000)}
    r.mset({k: 1 for k in stable})
    seen = set()
    cursor = 0
    step = 0
    while True:
        cursor, keys = r.scan(cursor=cursor, count=50)
        seen.update(keys)
        # churn other keys between calls: add a batch, delete an older one
        with r.pipeline(transaction=False) as p:
            for j in range(40):
                p.set("churn:%d:%d" % (step, j), 1)
            if step >= 2:
                p.delete(*["churn:%d:%d" % (step - 2, j) for j in range(40)])
            p.execute()
        step += 1
        assert step < 10000
        if cursor == 0:
            break
    assert stable <= seen


def test_scan_errors(raw):
    assert raw.cmd("SCAN", "abc") == "ERR invalid cursor"
    assert raw.cmd("SCAN", "0", "COUNT", "0") == "ERR syntax error"
    assert raw.cmd("SCAN", "0", "COUNT", "abc") == "ERR value is not an integer or out of range"
    assert raw.cmd("SCAN", "0", "FOO") == "ERR syntax error"
    assert raw.cmd("SCAN", "0", "MATCH") == "ERR syntax error"


def test_scan_reply_shape(raw):
    raw.cmd("SET", "a", "1")
    reply = raw.cmd("SCAN", "0", "COUNT", "1000")
    assert reply == [b"0", [b"a"]]


# ---------------------------------------------------------------------------------------------------- RANDOMKEY

def test_randomkey(r):
    assert r.randomkey() is None
    r.mset({"a": 1, "b": 2, "c": 3})
    for _ in range(20):
        assert r.randomkey() in ("a", "b", "c")


def test_randomkey_single(raw):
    assert raw.cmd_raw("RANDOMKEY") == b"$-1\r\n"
    raw.cmd("SET", "only", "1")
    assert raw.cmd("RANDOMKEY") == b"only"


# ---------------------------------------------------------------------------------------------------- RENAME RENAMENX

def test_rename(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b") is True
    assert r.exists("a") == 0
    assert r.get("b") == "1"
    assert 99 <= r.ttl("b") <= 100


def test_rename_overwrites(r):
    r.set("a", "1")
    r.set("b", "2", ex=100)
    r.rename("a", "b")
    assert r.get("b") == "1"
    assert r.ttl("b") == -1


def test_rename_same_key(r):
    r.set("a", "1")
    assert r.rename("a", "a") is True
    assert r.get("a") == "1"


def test_rename_missing(raw, r):
    assert raw.cmd("RENAME", "missing", "x") == "ERR no such key"
    assert raw.cmd("RENAMENX", "missing", "x") == "ERR no such key"
    assert resp_error(r.rename, "missing", "x") == "no such key"


def test_renamenx(r):
    r.set("a", "1")
    r.set("b", "2")
    assert r.renamenx("a", "b") is False
    assert r.get("a") == "1"
    assert r.renamenx("a", "c") is True
    assert r.get("c") == "1"
    assert r.exists("a") == 0


# ---------------------------------------------------------------------------------------------------- COPY

def test_copy(r):
    r.set("a", "1", ex=100)
    assert r.copy("a", "b") is True
    assert r.get("b") == "1"
    assert r.get("a") == "1"
    assert 99 <= r.ttl("b") <= 100


def test_copy_existing_destination(r):
    r.set("a", "1")
    r.set("b", "2")
    assert r.copy("a", "b") is False
    assert r.get("b") == "2"
    assert r.copy("a", "b", replace=True) is True
    assert r.get("b") == "1"


def test_copy_missing_source(r):
    assert r.copy("missing", "b") is False
    assert r.exists("b") == 0


def test_copy_db_0(raw):
    raw.cmd("SET", "a", "1")
    assert raw.cmd("COPY", "a", "b", "DB", "0") == 1
    assert raw.cmd("GET", "b") == b"1"
    assert raw.cmd("COPY", "a", "b", "DB", "0", "REPLACE") == 1


def test_copy_errors(raw):
    raw.cmd("SET", "a", "1")
    assert raw.cmd("COPY", "a", "a") == "ERR source and destination objects are the same"
    assert raw.cmd("COPY", "a", "b", "DB", "abc") == "ERR value is not an integer or out of range"
    assert raw.cmd("COPY", "a", "b", "DB", "-1") == "ERR DB index is out of range"
    assert raw.cmd("COPY", "a", "b", "FOO") == "ERR syntax error"
    assert raw.cmd("EXISTS", "b") == 0


def test_copy_is_independent(r):
    r.set("a", "x")
    r.copy("a", "b")
    r.append("b", "y")
    assert r.get("a") == "x"
    assert r.get("b") == "xy"


# ---------------------------------------------------------------------------------------------------- TOUCH OBJECT

def test_touch(r):
    r.mset({"a": 1, "b": 2})
    assert r.touch("a", "b", "missing") == 2


def test_object_encoding_missing(raw):
    assert raw.cmd("OBJECT", "ENCODING", "missing") is None


def test_object_freq_without_lfu(raw):
    raw.cmd("SET", "a", "1")
    assert raw.cmd("OBJECT", "FREQ", "a") == (
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust.")


def test_object_idletime(raw):
    raw.cmd("SET", "a", "1")
    idle = raw.cmd("OBJECT", "IDLETIME", "a")
    assert isinstance(idle, int) and 0 <= idle <= 2
    assert raw.cmd("OBJECT", "IDLETIME", "missing") is None


def test_object_unknown_subcommand(raw):
    raw.cmd("SET", "a", "1")
    assert raw.cmd("OBJECT", "FOO", "a") == "ERR unknown subcommand 'FOO'. Try OBJECT HELP."


# ---------------------------------------------------------------------------------------------------- DBSIZE FLUSH

def test_dbsize(r):
    assert r.dbsize() == 0
    r.mset({"a": 1, "b": 2})
    assert r.dbsize() == 2
    r.delete("a")
    assert r.dbsize() == 1


def test_flushdb(r):
    r.mset({"a": 1, "b": 2})
    r.set("c", 3, ex=100)
    assert r.flushdb() is True
    assert r.dbsize() == 0
    assert r.get("c") is None


@pytest.mark.parametrize("mode", [[], ["SYNC"], ["ASYNC"], ["sync"]])
def test_flushall_modes(raw, mode):
    raw.cmd("MSET", "a", "1", "b", "2")
    assert raw.cmd("FLUSHALL", *mode) == "OK"
    assert raw.cmd("DBSIZE") == 0
    raw.cmd("MSET", "a", "1", "b", "2")
    assert raw.cmd("FLUSHDB", *mode) == "OK"
    assert raw.cmd("DBSIZE") == 0


def test_flush_bad_arg(raw):
    raw.cmd("SET", "a", "1")
    assert raw.cmd("FLUSHALL", "FOO") == "ERR syntax error"
    assert raw.cmd("FLUSHDB", "FOO") == "ERR syntax error"
    assert raw.cmd("DBSIZE") == 1


def test_flushall_large(r):
    with r.pipeline(transaction=False) as p:
        for i in range(20000):
            p.set("f:%d" % i, "x" * 20)
        p.execute()
    assert r.dbsize() == 20000
    assert r.flushall(asynchronous=True) is True
    assert r.dbsize() == 0
    r.set("after", 1)
    assert r.get("after") == "1"


# ---------------------------------------------------------------------------------------------------- TIME MEMORY

def test_time(raw):
    reply = raw.cmd("TIME")
    assert isinstance(reply, list) and len(reply) == 2
    secs, usecs = int(reply[0]), int(reply[1])
    assert abs(secs - time.time()) < 5
    assert 0 <= usecs < 1000000


def test_memory_usage(r, raw):
    r.set("a", "v")
    n = r.memory_usage("a")
    assert isinstance(n, int) and n > 0
    r.set("big", "x" * 100000)
    assert r.memory_usage("big") >= 100000
    assert raw.cmd("MEMORY", "USAGE", "missing") is None
