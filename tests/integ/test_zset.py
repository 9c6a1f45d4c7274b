"""Sorted-set commands (validated against redis 7.0.15; WITHSCORE on ZRANK is 7.2 and ruvio-only here)."""

import pytest

from conftest import resp_error

SYNTAX = "syntax error"
NOTFLOAT = "value is not a valid float"
NOTINT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


@pytest.fixture(params=["listpack", "skiplist"])
def enc(request, r):
    """Run a test under both encodings (zset-max-listpack-entries 128 or 0)."""
    old = r.config_get("zset-max-listpack-entries")["zset-max-listpack-entries"]
    r.config_set("zset-max-listpack-entries", 128 if request.param == "listpack" else 0)
    yield request.param
    r.config_set("zset-max-listpack-entries", old)


def test_zadd_basic_and_encoding(r, raw, enc):
    assert r.zadd("z", {"a": 1, "b": 2, "c": 0.1}) == 3
    assert r.object("encoding", "z") == enc
    assert r.zcard("z") == 3
    assert raw.cmd("ZSCORE", "z", "c") == b"0.10000000000000001"
    assert r.zadd("z", {"a": 5}) == 0
    assert r.zadd("z", {"a": 6, "d": 1}, ch=True) == 2
    assert r.zrange("z", 0, -1, withscores=True) == [("c", 0.1), ("d", 1), ("b", 2), ("a", 6)]


def test_zadd_options_and_errors(r, raw):
    r.zadd("z", {"a": 1})
    assert r.execute_command("ZADD", "z", "XX", "1", "new") == 0
    assert r.execute_command("ZADD", "z", "NX", "5", "a") == 0
    assert r.execute_command("ZADD", "z", "GT", "CH", "0", "a", "10", "b") == 1
    assert r.execute_command("ZADD", "z", "LT", "CH", "0", "a") == 1
    assert raw.cmd("ZADD", "z", "INCR", "2.5", "a") == b"2.5"
    assert raw.cmd("ZADD", "z", "NX", "INCR", "1", "a") is None
    assert r.execute_command("ZADD", "nokey", "XX", "1", "a") == 0
    assert r.exists("nokey") == 0
    cases = [
        (("ZADD", "z", "XX", "NX", "1", "a"), "ERR XX and NX options at the same time are not compatible"),
        (("ZADD", "z", "GT", "LT", "1", "a"), "ERR GT, LT, and/or NX options at the same time are not compatible"),
        (("ZADD", "z", "GT", "NX", "1", "a"), "ERR GT, LT, and/or NX options at the same time are not compatible"),
        (("ZADD", "z", "INCR", "1", "a", "2", "b"), "ERR INCR option supports a single increment-element pair"),
        (("ZADD", "z", "nan", "a"), "ERR value is not a valid float"),
        (("ZADD", "z", "1e400", "a"), "ERR value is not a valid float"),
        (("ZADD", "z", "1", "a", "2"), "ERR syntax error"),
        (("ZINCRBY", "z", "x", "a"), "ERR value is not a valid float"),
    ]
    for cmd, err in cases:
        assert raw.cmd(*cmd) == err, cmd
    r.zadd("inf", {"a": float("inf")})
    assert raw.cmd("ZINCRBY", "inf", "-inf", "a") == "ERR resulting score is not a number (NaN)"
    assert raw.cmd("ZADD", "fresh", "INCR", "-inf", "x") == b"-inf"
    r.set("s", "x")
    assert raw.cmd("ZADD", "s", "1", "a") == WRONGTYPE


def test_scores_format(r, raw, enc):
    r.zadd("z", {"a": 0.1, "b": float("inf"), "c": -3, "d": 1e20, "e": 1.5})
    assert raw.cmd("ZSCORE", "z", "b") == b"inf"
    assert raw.cmd("ZSCORE", "z", "d") == b"1e+20"
    assert raw.cmd("ZMSCORE", "z", "a", "nope", "c") == [b"0.10000000000000001", None, b"-3"]
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("ZSCORE", "z", "e") == b",1.5\r\n"
    assert raw.cmd_raw("ZSCORE", "z", "nope") == b"_\r\n"
    assert raw.cmd_raw("ZRANGE", "z", "0", "1", "WITHSCORES") == b"*2\r\n*2\r\n$1\r\nc\r\n,-3\r\n*2\r\n$1\r\na\r\n,0.10000000000000001\r\n"


def test_zrem_deletes_empty_key(r, enc):
    r.zadd("z", {"a": 1, "b": 2})
    assert r.zrem("z", "a", "x") == 1
    assert r.zrem("z", "b") == 1
    assert r.exists("z") == 0
    assert r.zrem("z", "b") == 0


def test_ranks(r, raw, enc):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrank("z", "a") == 0
    assert r.zrevrank("z", "a") == 2
    assert r.zrank("z", "x") is None
    assert r.zrank("nokey", "x") is None


@pytest.mark.ruvio_only
def test_zrank_withscore(r, raw):
    r.zadd("z", {"a": 1, "b": 2.5})
    assert raw.cmd("ZRANK", "z", "b", "WITHSCORE") == [1, b"2.5"]
    assert raw.cmd("ZREVRANK", "z", "b", "WITHSCORE") == [0, b"2.5"]
    assert raw.cmd("ZRANK", "z", "x", "WITHSCORE") is None
    assert raw.cmd("ZRANK", "z", "b", "FOO") == "ERR syntax error"


def test_zrange_family(r, raw, enc):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert r.zrange("z", -2, -1) == ["d", "e"]
    assert r.zrange("z", 3, 1) == []
    assert r.zrevrange("z", 0, 1) == ["e", "d"]
    assert raw.cmd("ZRANGE", "z", "(1", "3", "BYSCORE") == [b"b", b"c"]
    assert raw.cmd("ZRANGE", "z", "+inf", "(2", "BYSCORE", "REV", "LIMIT", "1", "2") == [b"d", b"c"]
    assert raw.cmd("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2") == []
    assert raw.cmd("ZRANGEBYSCORE", "z", "(", "2") == [b"a", b"b"]
    assert raw.cmd("ZREVRANGEBYSCORE", "z", "4", "2", "WITHSCORES") == [b"d", b"4", b"c", b"3", b"b", b"2"]
    assert raw.cmd("ZRANGE", "z", "0", "1", "LIMIT", "0", "1") == \
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
    assert raw.cmd("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES") == \
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
    assert raw.cmd("ZRANGEBYSCORE", "z", "x", "1") == "ERR min or max is not a float"
    assert raw.cmd("ZRANGEBYSCORE", "z", "0", "1", "REV") == "ERR syntax error"
    assert raw.cmd("ZRANGE", "z", "a", "1") == "ERR " + NOTINT
    assert r.zcount("z", "(1", 4) == 3
    assert r.zcount("z", 5, 1) == 0


def test_lex(r, raw, enc):
    r.zadd("l", {m: 0 for m in ["a", "b", "c", "d", "e"]})
    assert raw.cmd("ZRANGEBYLEX", "l", "[b", "(d") == [b"b", b"c"]
    assert raw.cmd("ZREVRANGEBYLEX", "l", "+", "-", "LIMIT", "1", "2") == [b"d", b"c"]
    assert raw.cmd("ZRANGE", "l", "(a", "+", "BYLEX") == [b"b", b"c", b"d", b"e"]
    assert raw.cmd("ZLEXCOUNT", "l", "-", "+") == 5
    assert raw.cmd("ZLEXCOUNT", "l", "[c", "[b") == 0
    assert raw.cmd("ZRANGEBYLEX", "l", "a", "b") == "ERR min or max not valid string range item"
    assert raw.cmd("ZREMRANGEBYLEX", "l", "[a", "[b") == 2
    assert raw.cmd("ZRANGE", "l", "0", "-1") == [b"c", b"d", b"e"]


def test_remrange(r, enc):
    r.zadd("z", {c: i for i, c in enumerate("abcdefg")})
    assert r.zremrangebyrank("z", 0, 1) == 2
    assert r.zremrangebyscore("z", "(2", 4) == 2
    assert r.zrange("z", 0, -1) == ["c", "f", "g"]
    assert r.zremrangebyrank("z", 0, -1) == 3
    assert r.exists("z") == 0


def test_pops(r, raw, enc):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert raw.cmd("ZPOPMIN", "z") == [b"a", b"1"]
    assert raw.cmd("ZPOPMAX", "z", "2") == [b"d", b"4", b"c", b"3"]
    assert raw.cmd("ZPOPMIN", "z", "-1") == "ERR value is out of range, must be positive"
    assert raw.cmd("ZPOPMIN", "nokey") == []
    raw.cmd("HELLO", "3")
    assert raw.cmd("ZPOPMIN", "z", "5") == [[b"b", 2.0]]
    assert r.exists("z") == 0
    r.zadd("z", {"a": 1})
    assert raw.cmd("ZPOPMIN", "z") == [b"a", 1.0]


def test_zmpop(r, raw, enc):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert raw.cmd("ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "2") == [b"z", [[b"c", b"3"], [b"b", b"2"]]]
    assert raw.cmd("ZMPOP", "1", "nokey", "MIN") is None
    assert raw.cmd("ZMPOP", "0", "z", "MIN") == "ERR numkeys should be greater than 0"
    assert raw.cmd("ZMPOP", "1", "z", "MIN", "COUNT", "0") == "ERR count should be greater than 0"
    assert raw.cmd("ZMPOP", "1", "z", "FOO") == "ERR syntax error"
    assert raw.cmd("ZMPOP", "1", "z", "MIN") == [b"z", [[b"a", b"1"]]]
    assert r.exists("z") == 0


def test_setops(r, raw, enc):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    assert r.zunion(["a", "b"], withscores=True) == [("x", 1), ("y", 12), ("z", 23), ("w", 30)]
    assert raw.cmd("ZUNION", "2", "a", "b", "WEIGHTS", "2", "3", "AGGREGATE", "MAX", "WITHSCORES") == \
        [b"x", b"2", b"y", b"30", b"z", b"60", b"w", b"90"]
    assert raw.cmd("ZINTER", "2", "a", "b", "AGGREGATE", "MIN", "WITHSCORES") == [b"y", b"2", b"z", b"3"]
    assert raw.cmd("ZDIFF", "2", "a", "b", "WITHSCORES") == [b"x", b"1"]
    assert raw.cmd("ZINTERCARD", "2", "a", "b") == 2
    assert raw.cmd("ZINTERCARD", "2", "a", "b", "LIMIT", "1") == 1
    assert raw.cmd("ZINTER", "3", "a", "b", "nokey") == []
    assert raw.cmd("ZUNIONSTORE", "out", "2", "a", "b") == 4
    assert r.zrange("out", 0, -1, withscores=True) == [("x", 1), ("y", 12), ("z", 23), ("w", 30)]
    assert raw.cmd("ZDIFFSTORE", "out", "2", "a", "a") == 0
    assert r.exists("out") == 0
    errs = [
        (("ZUNIONSTORE", "d", "0", "a"), "ERR at least 1 input key is needed for 'zunionstore' command"),
        (("ZINTERCARD", "0", "a"), "ERR at least 1 input key is needed for 'zintercard' command"),
        (("ZINTERCARD", "1", "a", "LIMIT", "-1"), "ERR LIMIT can't be negative"),
        (("ZUNION", "2", "a"), "ERR syntax error"),
        (("ZUNION", "1", "a", "WEIGHTS", "x"), "ERR weight value is not a float"),
        (("ZUNION", "1", "a", "AGGREGATE", "foo"), "ERR syntax error"),
        (("ZDIFF", "1", "a", "WEIGHTS", "1"), "ERR syntax error"),
        (("ZDIFFSTORE", "d", "1", "a", "WITHSCORES"), "ERR syntax error"),
    ]
    for cmd, err in errs:
        assert raw.cmd(*cmd) == err, cmd
    r.set("str", "x")
    assert raw.cmd("ZUNION", "2", "a", "str") == WRONGTYPE


def test_inf_aggregate_is_zero(r):
    r.zadd("p", {"m": float("inf")})
    r.zadd("n", {"m": float("-inf")})
    assert r.zunion(["p", "n"], withscores=True) == [("m", 0)]


def test_zrangestore(r, raw, enc):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert raw.cmd("ZRANGESTORE", "d", "z", "1", "-1") == 2
    assert r.zrange("d", 0, -1, withscores=True) == [("b", 2), ("c", 3)]
    assert raw.cmd("ZRANGESTORE", "d", "z", "(1", "+inf", "BYSCORE", "LIMIT", "1", "1") == 1
    assert r.zrange("d", 0, -1) == ["c"]
    assert raw.cmd("ZRANGESTORE", "d", "nokey", "0", "-1") == 0
    assert r.exists("d") == 0
    assert raw.cmd("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES") == "ERR syntax error"


def test_store_result_encoding(r):
    old = r.config_get("zset-max-listpack-entries")["zset-max-listpack-entries"]
    try:
        r.config_set("zset-max-listpack-entries", 4)
        r.zadd("big", {"m%d" % i: i for i in range(10)})
        assert r.object("encoding", "big") == "skiplist"
        r.zrangestore("small", "big", 0, 2)
        assert r.object("encoding", "small") == "listpack"
        r.zunionstore("u", ["big"])
        assert r.object("encoding", "u") == "skiplist"
        r.zremrangebyrank("big", 0, 7)
        assert r.object("encoding", "big") == "skiplist"
    finally:
        r.config_set("zset-max-listpack-entries", old)


def test_value_threshold(r):
    r.zadd("z", {"x" * 64: 1})
    assert r.object("encoding", "z") == "listpack"
    r.zadd("z", {"y" * 65: 1})
    assert r.object("encoding", "z") == "skiplist"


def test_zrandmember(r, raw, enc):
    assert r.zrandmember("nokey") is None
    assert raw.cmd("ZRANDMEMBER", "nokey", "3") == []
    members = {"m%d" % i: i for i in range(50)}
    r.zadd("z", members)
    assert r.zrandmember("z") in members
    got = r.zrandmember("z", 20)
    assert len(got) == 20 and len(set(got)) == 20 and set(got) <= set(members)
    got = r.zrandmember("z", 40)
    assert len(set(got)) == 40
    assert sorted(r.zrandmember("z", 100)) == sorted(members)
    assert len(r.zrandmember("z", -100)) == 100
    ws = raw.cmd("ZRANDMEMBER", "z", "5", "WITHSCORES")
    assert len(ws) == 10 and all(int(ws[i + 1]) == members[ws[i].decode()] for i in range(0, 10, 2))
    assert raw.cmd("ZRANDMEMBER", "z", "1", "FOO") == "ERR syntax error"
    assert raw.cmd("ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES") == "ERR value is out of range"


def test_zscan(r, raw, enc):
    members = {"m%d" % i: i for i in range(300 if enc == "skiplist" else 100)}
    r.zadd("z", members)
    seen = {}
    cursor = "0"
    for _ in range(10000):
        cursor, items = raw.cmd("ZSCAN", "z", cursor, "COUNT", "20")
        cursor = cursor.decode()
        for i in range(0, len(items), 2):
            seen[items[i].decode()] = int(items[i + 1])
        if cursor == "0":
            break
    assert seen == members
    cursor, items = raw.cmd("ZSCAN", "z", "0", "MATCH", "m1?", "COUNT", "1000")
    assert {items[i].decode() for i in range(0, len(items), 2)} == {"m%d" % i for i in range(10, 20)}
    assert raw.cmd("ZSCAN", "z", "x") == "ERR invalid cursor"
    assert raw.cmd("ZSCAN", "z", "0", "COUNT", "0") == "ERR syntax error"


def test_wrongtype(r, raw):
    r.set("s", "x")
    for cmd in [("ZCARD", "s"), ("ZSCORE", "s", "a"), ("ZRANGE", "s", "0", "-1"), ("ZPOPMIN", "s"),
                ("ZREM", "s", "a"), ("ZCOUNT", "s", "0", "1"), ("ZSCAN", "s", "0"), ("ZRANDMEMBER", "s")]:
        assert raw.cmd(*cmd) == WRONGTYPE, cmd


def test_generic_integration(r, enc):
    r.zadd("z", {"a": 1, "b": 2})
    assert r.type("z") == "zset"
    assert r.copy("z", "z2")
    assert r.zrange("z2", 0, -1, withscores=True) == [("a", 1), ("b", 2)]
    assert r.object("encoding", "z2") == enc
    assert r.memory_usage("z") > 0


def test_large_set_ranks(r):
    n = 5000
    pipe = r.pipeline(transaction=False)
    for i in range(0, n, 500):
        pipe.zadd("big", {"m%05d" % j: j % 97 for j in range(i, i + 500)})
    pipe.execute()
    expect = sorted(("m%05d" % j for j in range(n)), key=lambda m: (int(m[1:]) % 97, m))
    assert r.zrange("big", 0, -1) == expect
    for i in (0, 1, 999, 2500, n - 1):
        assert r.zrank("big", expect[i]) == i
    assert r.zrange("big", 1234, 1240) == expect[1234:1241]
    assert r.zrevrange("big", 10, 12) == expect[::-1][10:13]
    assert r.zcount("big", 10, 20) == sum(1 for j in range(n) if 10 <= j % 97 <= 20)
