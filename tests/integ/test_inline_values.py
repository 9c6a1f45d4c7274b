"""Small hashes, sets and sorted sets stored inline in their keyspace entry: the generic commands
(EXPIRE, PERSIST, RENAME, COPY, MEMORY USAGE) and conversions to the large layout keep values and
deadlines. Replies are Redis's; the encoding checks are Ruvio's (Redis 7.0 has no listpack sets)."""

import pytest

from conftest import IS_REDIS


def fill(r, kind, key, n, prefix="e"):
    if kind == "hash":
        r.hset(key, mapping={"%s%d" % (prefix, i): "v%d" % i for i in range(n)})
    elif kind == "set":
        r.sadd(key, *["%s%d" % (prefix, i) for i in range(n)])
    else:
        r.zadd(key, {"%s%d" % (prefix, i): i + 0.5 for i in range(n)})


def content(r, kind, key):
    if kind == "hash":
        return r.hgetall(key)
    if kind == "set":
        return r.smembers(key)
    return r.zrange(key, 0, -1, withscores=True)


def size(r, kind, key):
    return {"hash": r.hlen, "set": r.scard, "zset": r.zcard}[kind](key)


SMALL = {"hash": "listpack", "set": "listpack", "zset": "listpack"}
BIG = {"hash": "hashtable", "set": "hashtable", "zset": "skiplist"}
KINDS = ["hash", "set", "zset"]


def check_enc(r, key, want):
    if not IS_REDIS:
        assert r.object("encoding", key) == want


@pytest.mark.parametrize("kind", KINDS)
def test_expire_persist_rename_keep_value(r, kind):
    fill(r, kind, "k", 5)
    want = content(r, kind, "k")
    assert r.expire("k", 1000)
    assert content(r, kind, "k") == want
    fill(r, kind, "k", 8, prefix="x")                     # grows with a deadline
    assert 990 <= r.ttl("k") <= 1000
    want = content(r, kind, "k")
    assert r.persist("k")
    assert r.ttl("k") == -1
    assert r.expire("k", 500)
    assert r.rename("k", "a-much-longer-key-name-than-before")
    assert content(r, kind, "a-much-longer-key-name-than-before") == want
    assert 490 <= r.ttl("a-much-longer-key-name-than-before") <= 500
    check_enc(r, "a-much-longer-key-name-than-before", SMALL[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_copy_is_independent(r, kind):
    fill(r, kind, "src", 4)
    r.expire("src", 1000)
    assert r.copy("src", "dst") == 1
    assert content(r, kind, "dst") == content(r, kind, "src")
    assert 990 <= r.ttl("dst") <= 1000
    fill(r, kind, "dst", 3, prefix="new")
    assert size(r, kind, "src") == 4
    assert size(r, kind, "dst") == 7
    check_enc(r, "dst", SMALL[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_conversion_keeps_deadline_and_members(r, kind):
    fill(r, kind, "k", 10)
    r.pexpire("k", 100000)
    check_enc(r, "k", SMALL[kind])
    fill(r, kind, "k", 200, prefix="b")                   # past the entries threshold
    check_enc(r, "k", BIG[kind])
    assert 99000 <= r.pttl("k") <= 100000
    assert size(r, kind, "k") == 210


@pytest.mark.parametrize("kind", KINDS)
def test_long_element_converts(r, kind):
    fill(r, kind, "k", 3)
    long = "L" * 100                                      # > *-max-listpack-value (64)
    if kind == "hash":
        r.hset("k", "f", long)
        assert r.hget("k", "f") == long
    elif kind == "set":
        r.sadd("k", long)
        assert r.sismember("k", long)
    else:
        r.zadd("k", {long: 7})
        assert r.zscore("k", long) == 7
    check_enc(r, "k", BIG[kind])
    assert size(r, kind, "k") == 4


@pytest.mark.parametrize("kind", KINDS)
def test_grow_and_shrink_cycles(r, kind):
    for round_ in range(3):
        fill(r, kind, "k", 100, prefix="r%d_" % round_)
        check_enc(r, "k", SMALL[kind])
        for i in range(99):
            m = "r%d_%d" % (round_, i)
            if kind == "hash":
                assert r.hdel("k", m) == 1
            elif kind == "set":
                assert r.srem("k", m) == 1
            else:
                assert r.zrem("k", m) == 1
        assert size(r, kind, "k") == round_ + 1           # the last element of each round is left
    for round_ in range(3):
        m = "r%d_99" % round_
        if kind == "hash":
            r.hdel("k", m)
        elif kind == "set":
            r.srem("k", m)
        else:
            r.zrem("k", m)
    assert r.exists("k") == 0


@pytest.mark.parametrize("kind", KINDS)
def test_memory_usage_counts_inline_bytes(r, kind):
    fill(r, kind, "small", 4)
    fill(r, kind, "big", 300)
    small = r.memory_usage("small")
    assert 24 < small < 400
    assert r.memory_usage("big") > 10 * small


def test_set_commands_between_inline_sets(r):
    r.sadd("a", "x", "y", "z")
    r.sadd("b", "y", "z", "w")
    assert r.smove("a", "b", "x") == 1
    assert r.smembers("a") == {"y", "z"}
    assert r.smembers("b") == {"x", "y", "z", "w"}
    assert r.smove("a", "a", "y") == 1                    # same key: a membership test
    assert r.smembers("a") == {"y", "z"}
    assert r.smove("a", "c", "y") == 1                    # creates c
    assert r.smembers("c") == {"y"}
    assert r.sinterstore("a", "a", "b") == 1              # destination is also a source
    assert r.smembers("a") == {"z"}
    assert r.sunionstore("u", "a", "b", "c") == 4
    check_enc(r, "u", "listpack")
    assert r.spop("c") == "y"
    assert r.exists("c") == 0
    r.sadd("n", 1, 2, 3)
    check_enc(r, "n", "intset")
    r.sadd("n", "word")                                   # intset -> inline listpack
    check_enc(r, "n", "listpack")
    assert r.smembers("n") == {"1", "2", "3", "word"}


def test_zset_commands_between_inline_sets(r):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "w": 20})
    assert r.zunionstore("u", ["a", "b"]) == 4
    check_enc(r, "u", "listpack")
    assert r.zrange("u", 0, -1, withscores=True) == [("x", 1), ("z", 3), ("y", 12), ("w", 20)]
    assert r.zinterstore("a", ["a", "b"]) == 1            # destination is also a source
    assert r.zrange("a", 0, -1, withscores=True) == [("y", 12)]
    assert r.zincrby("b", 5, "w") == 25
    assert r.zpopmin("b") == [("y", 10)]
    assert r.zpopmax("b") == [("w", 25)]
    assert r.exists("b") == 0
    r.zadd("r", {"m%d" % i: i for i in range(20)})
    assert r.zremrangebyscore("r", 5, 14) == 10
    assert r.zrangestore("r", "r", 0, 4) == 5             # onto itself
    assert r.zrange("r", 0, -1) == ["m0", "m1", "m2", "m3", "m4"]
    r.execute_command("GEOADD", "g", 13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania")
    check_enc(r, "g", "listpack")
    assert round(r.geodist("g", "Palermo", "Catania", "km"), 3) == 166.274
    assert r.execute_command("GEOSEARCHSTORE", "g", "g", "FROMMEMBER", "Palermo", "BYRADIUS", 10,
                             "km") == 1
    assert r.zrange("g", 0, -1) == ["Palermo"]


def test_hash_commands_on_inline_hash(r):
    r.hset("h", mapping={"a": "1", "b": "two", "c": "3"})
    assert r.hincrby("h", "a", 41) == 42
    assert r.hincrbyfloat("h", "c", 0.5) == 3.5
    assert r.hsetnx("h", "b", "x") == 0
    assert r.hsetnx("h", "d", "x" * 60) == 1
    assert r.hstrlen("h", "d") == 60
    assert r.hgetall("h") == {"a": "42", "b": "two", "c": "3.5", "d": "x" * 60}
    assert r.hdel("h", "a", "b", "c", "d") == 4
    assert r.exists("h") == 0
