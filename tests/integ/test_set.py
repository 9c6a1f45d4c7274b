"""Set commands (validated against redis 7.0.15; the 7.2 listpack encoding is ruvio only)."""

import pytest

from conftest import resp_error

NOTINT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_sadd_srem_smembers(r):
    assert r.sadd("s", "a", "b", "a") == 2
    assert r.sadd("s", "b", "c") == 1
    assert r.smembers("s") == {"a", "b", "c"}
    assert r.scard("s") == 3
    assert r.srem("s", "a", "zz") == 1
    assert r.srem("nokey", "a") == 0
    assert r.srem("s", "b", "c") == 2
    assert r.exists("s") == 0
    assert r.smembers("nokey") == set()
    assert r.scard("nokey") == 0
    assert r.type(r.sadd("t", "x") and "t") == "set"


def test_sadd_arity(raw):
    assert raw.cmd("SADD", "s") == "ERR wrong number of arguments for 'sadd' command"


def test_ismember(r):
    r.sadd("s", "1", "a", "-5")
    assert r.sismember("s", "1") is True
    assert r.sismember("s", "01") is False
    assert r.sismember("s", "-5") is True
    assert r.sismember("nokey", "a") is False
    assert r.smismember("s", ["a", "x", "1"]) == [1, 0, 1]
    assert r.smismember("nokey", ["a", "b"]) == [0, 0]


def test_resp3_types(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("SADD", "s", "1")
    assert raw.cmd_raw("SMEMBERS", "s") == b"~1\r\n$1\r\n1\r\n"
    assert raw.cmd_raw("SMEMBERS", "nokey") == b"~0\r\n"
    assert raw.cmd_raw("SPOP", "nokey", "2") == b"~0\r\n"
    assert raw.cmd_raw("SRANDMEMBER", "s", "5") == b"*1\r\n$1\r\n1\r\n"
    assert raw.cmd_raw("SRANDMEMBER", "nokey") == b"_\r\n"
    assert raw.cmd_raw("SUNION", "s") == b"~1\r\n$1\r\n1\r\n"
    assert raw.cmd_raw("SPOP", "s", "1") == b"~1\r\n$1\r\n1\r\n"


def test_wrongtype(r):
    r.set("str", "x")
    r.sadd("s", "a")
    for fn, args in [(r.sadd, ("str", "a")), (r.srem, ("str", "a")), (r.smembers, ("str",)),
                     (r.sismember, ("str", "a")), (r.scard, ("str",)), (r.spop, ("str",)),
                     (r.srandmember, ("str",)), (r.sinter, ("s", "str")), (r.sinter, ("nokey", "str")),
                     (r.sunion, ("s", "str")), (r.sdiff, ("s", "str")), (r.smove, ("s", "str", "a")),
                     (r.sinterstore, ("d", "s", "str")), (r.smismember, ("str", ["a"]))]:
        assert resp_error(fn, *args) == WRONGTYPE
    assert r.smembers("s") == {"a"}


def test_spop(r, raw):
    assert r.spop("nokey") is None
    assert r.spop("nokey", 2) == []
    r.sadd("s", "1", "2", "3", "a")
    m = r.spop("s")
    assert m in {"1", "2", "3", "a"}
    assert r.scard("s") == 3
    got = r.spop("s", 2)
    assert len(set(got)) == 2
    assert r.scard("s") == 1
    assert r.spop("s", 0) == []
    assert r.spop("s", 5) != []
    assert r.exists("s") == 0
    r.sadd("s", "x")
    assert raw.cmd("SPOP", "s", "-1") == "ERR value is out of range, must be positive"
    assert raw.cmd("SPOP", "s", "x") == "ERR value is out of range, must be positive"
    assert raw.cmd("SPOP", "s", "1", "2") == "ERR syntax error"


def test_spop_large(r):
    members = {"m%d" % i for i in range(2000)}
    r.sadd("s", *members)
    popped = set(r.spop("s", 1500))
    assert len(popped) == 1500 and popped <= members
    assert r.smembers("s") == members - popped


def test_srandmember(r, raw):
    assert r.srandmember("nokey") is None
    assert r.srandmember("nokey", 2) == []
    r.sadd("s", "1", "2", "3")
    assert r.srandmember("s") in {"1", "2", "3"}
    assert sorted(r.srandmember("s", 5)) == ["1", "2", "3"]
    got = r.srandmember("s", 2)
    assert len(set(got)) == 2
    assert len(r.srandmember("s", -7)) == 7
    assert r.srandmember("s", 0) == []
    assert r.scard("s") == 3
    assert raw.cmd("SRANDMEMBER", "s", "1", "2") == "ERR syntax error"
    assert raw.cmd("SRANDMEMBER", "s", "-9223372036854775808") == (
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    big = {"m%d" % i for i in range(1000)}
    r.sadd("b", *big)
    got = r.srandmember("b", 10)
    assert len(set(got)) == 10 and set(got) <= big
    got = r.srandmember("b", 800)
    assert len(set(got)) == 800 and set(got) <= big


def test_smove(r):
    r.sadd("a", "1", "2")
    r.sadd("b", "x")
    assert r.smove("a", "b", "1") is True
    assert r.smembers("a") == {"2"}
    assert r.smembers("b") == {"1", "x"}
    assert r.smove("a", "b", "zz") is False
    assert r.smove("a", "c", "2") is True
    assert r.exists("a") == 0
    assert r.smembers("c") == {"2"}
    assert r.smove("nokey", "c", "2") is False
    assert r.smove("c", "c", "2") is True
    assert r.smove("c", "c", "9") is False
    r.set("str", "x")
    assert r.smove("nokey", "str", "1") is False


def test_algebra(r):
    r.sadd("a", "1", "2", "3", "x")
    r.sadd("b", "2", "3", "4")
    r.sadd("c", "3", "x", "y")
    assert r.sinter("a", "b") == {"2", "3"}
    assert r.sinter("a", "b", "c") == {"3"}
    assert r.sinter("a", "nokey") == set()
    assert r.sunion("a", "b", "nokey") == {"1", "2", "3", "4", "x"}
    assert r.sdiff("a", "b") == {"1", "x"}
    assert r.sdiff("a", "b", "c") == {"1"}
    assert r.sdiff("nokey", "a") == set()
    assert r.sdiff("a", "nokey") == {"1", "2", "3", "x"}


def test_store_variants(r):
    r.sadd("a", "1", "2", "3")
    r.sadd("b", "2", "3", "4")
    assert r.sinterstore("d", "a", "b") == 2
    assert r.smembers("d") == {"2", "3"}
    assert r.sunionstore("d", "a", "b") == 4
    assert r.smembers("d") == {"1", "2", "3", "4"}
    assert r.sdiffstore("d", "a", "b") == 1
    assert r.smembers("d") == {"1"}
    r.set("d", "string")
    assert r.sunionstore("d", "a") == 3
    assert r.type("d") == "set"
    assert r.sinterstore("d", "a", "nokey") == 0
    assert r.exists("d") == 0
    # destination among the sources
    assert r.sdiffstore("a", "a", "b") == 1
    assert r.smembers("a") == {"1"}
    r.set("e", "v")
    r.expire("e", 100)
    assert r.sunionstore("e", "b") == 3
    assert r.ttl("e") == -1


def test_sintercard(r, raw):
    r.sadd("a", "1", "2", "3", "4")
    r.sadd("b", "2", "3", "4", "5")
    assert r.sintercard(2, ["a", "b"]) == 3
    assert r.sintercard(2, ["a", "b"], limit=2) == 2
    assert r.sintercard(2, ["a", "b"], limit=0) == 3
    assert r.sintercard(2, ["a", "nokey"]) == 0
    assert raw.cmd("SINTERCARD", "0", "a") == "ERR numkeys should be greater than 0"
    assert raw.cmd("SINTERCARD", "x", "a") == "ERR numkeys should be greater than 0"
    assert raw.cmd("SINTERCARD", "3", "a") == "ERR Number of keys can't be greater than number of args"
    assert raw.cmd("SINTERCARD", "1", "a", "LIMIT", "-1") == "ERR LIMIT can't be negative"
    assert raw.cmd("SINTERCARD", "1", "a", "LIMIT", "x") == "ERR LIMIT can't be negative"
    assert raw.cmd("SINTERCARD", "1", "a", "FOO", "1") == "ERR syntax error"
    assert raw.cmd("COMMAND", "GETKEYS", "SINTERCARD", "2", "a", "b", "LIMIT", "1") == [b"a", b"b"]


def test_sscan(r, raw):
    assert raw.cmd("SSCAN", "nokey", "0") == [b"0", []]
    r.sadd("s", "1", "2", "10")
    cur, items = r.sscan("s", 0, match="1*")
    assert cur == 0 and sorted(items) == ["1", "10"]
    big = {"m%d" % i for i in range(1000)}
    r.sadd("b", *big)
    seen, cur = set(), 0
    while True:
        cur, items = r.sscan("b", cur, count=37)
        seen.update(items)
        if cur == 0:
            break
    assert seen == big
    assert raw.cmd("SSCAN", "s", "x") == "ERR invalid cursor"
    assert raw.cmd("SSCAN", "s", "0", "COUNT", "0") == "ERR syntax error"
    assert raw.cmd("SSCAN", "s", "0", "MATCH") == "ERR syntax error"
    assert raw.cmd("SSCAN", "s", "0", "NOVALUES") == "ERR syntax error"


def test_intset_encoding(start_server):
    srv = start_server("--set-max-intset-entries", "4")
    r = srv.client()
    r.sadd("s", "1", "-2", "300000", "9223372036854775807")
    assert r.object("encoding", "s") == "intset"
    assert r.smembers("s") == {"1", "-2", "300000", "9223372036854775807"}
    r.sadd("s", "5")
    assert r.object("encoding", "s") == "hashtable"
    r.sadd("t", "01")
    assert r.object("encoding", "t") != "intset"
    r.close()


@pytest.mark.ruvio_only
def test_listpack_encoding(start_server):
    srv = start_server("--set-max-listpack-entries", "4", "--set-max-listpack-value", "8")
    r = srv.client()
    r.sadd("s", "a", "b", "1")
    assert r.object("encoding", "s") == "listpack"
    r.sadd("s", "c")
    assert r.object("encoding", "s") == "listpack"
    r.sadd("s", "d")
    assert r.object("encoding", "s") == "hashtable"
    r.sadd("i", "1", "2")
    assert r.object("encoding", "i") == "intset"
    r.sadd("i", "x")
    assert r.object("encoding", "i") == "listpack"
    assert r.smembers("i") == {"1", "2", "x"}
    r.sadd("l", "a")
    r.sadd("l", "123456789")
    assert r.object("encoding", "l") == "hashtable"
    r.close()


def test_binary_members(rb):
    ms = {b"\x00", b"\xff\r\n", b"", b"-0", b"18446744073709551616"}
    rb.sadd("s", *ms)
    assert rb.smembers("s") == ms
    assert rb.sismember("s", b"") is True


def test_copy_and_memory_usage(r):
    r.sadd("s", "a", "b")
    assert r.copy("s", "s2") is True
    r.srem("s2", "a")
    assert r.smembers("s") == {"a", "b"}
    assert r.memory_usage("s") > 0
