"""DUMP and RESTORE: every type, small and large encodings, key and field TTLs, options and errors.

The payload format is each server's own, so tests only round-trip payloads through the same server and
never compare bytes. Field TTLs (Redis 7.4) and SEMAPHORE are Ruvio-only."""

import time

import pytest

from conftest import IS_REDIS, RespError, poll_until

BAD_PAYLOAD = "DUMP payload version or checksum are wrong"
BUSY = "BUSYKEY Target key name already exists."


def ex(r, *args):
    return r.execute_command(*args)


def roundtrip(rb, key, dst, check_encoding=True):
    """DUMP key, RESTORE it as dst, and return the payload."""
    enc = rb.object("encoding", key)
    payload = rb.dump(key)
    assert isinstance(payload, bytes) and len(payload) > 10
    assert ex(rb, "RESTORE", dst, 0, payload) == b"OK"
    assert rb.type(dst) == rb.type(key)
    if check_encoding:
        assert rb.object("encoding", dst) == enc
    assert rb.ttl(dst) == -1
    return payload


# ---------------------------------------------------------------- each type


def test_dump_missing_key_is_nil(rb):
    assert rb.dump("nokey") is None


@pytest.mark.parametrize("value", [b"hello", b"12345", b"-7", b"", b"x" * 5000, bytes(range(256))])
def test_string(rb, value):
    rb.set("s", value)
    roundtrip(rb, "s", "d")
    assert rb.get("d") == value


@pytest.mark.parametrize("n", [5, 3000])
def test_list(rb, n):
    items = [b"e%d" % i for i in range(n)] + [b"17", b"-3", b"", b"y" * 300]
    rb.rpush("l", *items)
    roundtrip(rb, "l", "d")
    assert rb.lrange("d", 0, -1) == items
    if not IS_REDIS:                                       # Redis 7.0 lists are always quicklists
        assert rb.object("encoding", "d") == (b"listpack" if n < 100 else b"quicklist")


@pytest.mark.parametrize("n", [4, 1000])
def test_hash(rb, n):
    m = {b"f%d" % i: b"v%d" % i for i in range(n)}
    m[b"12"] = b"34"
    m[b"empty"] = b""
    rb.hset("h", mapping=m)
    roundtrip(rb, "h", "d")
    assert rb.hgetall("d") == m
    assert rb.object("encoding", "d") == (b"listpack" if n < 100 else b"hashtable")


@pytest.mark.parametrize("members", [
    [b"1", b"2", b"-5", b"1000000"],                       # intset
    [b"a", b"b", b"member:3", b"4"],                       # listpack
    [b"%d" % i for i in range(1000)],                      # big intset / hashtable
    [b"m%d" % i for i in range(1000)],                     # hashtable
])
def test_set(rb, members):
    rb.sadd("s", *members)
    roundtrip(rb, "s", "d")
    assert rb.smembers("d") == set(members)


@pytest.mark.parametrize("n", [4, 1000])
def test_zset(rb, n):
    scores = {b"m%d" % i: i * 1.5 - 7 for i in range(n)}
    scores.update({b"pi": 3.141592653589793, b"tiny": 5e-324, b"third": 1 / 3, b"big": 1.7976931348623157e308,
                   b"ninf": float("-inf"), b"pinf": float("inf"), b"negz": -0.0, b"exp": 1e21})
    rb.zadd("z", scores)
    roundtrip(rb, "z", "d")
    got = rb.zrange("d", 0, -1, withscores=True)
    assert got == rb.zrange("z", 0, -1, withscores=True)
    assert dict(got) == {k: float(v) for k, v in scores.items()}
    assert rb.object("encoding", "d") == (b"listpack" if n < 100 else b"skiplist")
    # exact doubles: the score strings the server gives back are identical too
    for m in (b"pi", b"tiny", b"third", b"big"):
        assert rb.zscore("d", m) == scores[m]


def test_geo_positions_exact(rb):
    ex(rb, "GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
    roundtrip(rb, "g", "d")
    assert ex(rb, "GEOPOS", "d", "Palermo", "Catania") == ex(rb, "GEOPOS", "g", "Palermo", "Catania")
    assert ex(rb, "GEODIST", "d", "Palermo", "Catania") == ex(rb, "GEODIST", "g", "Palermo", "Catania")


@pytest.mark.ruvio_only
@pytest.mark.parametrize("n", [4, 1000])
def test_hash_field_ttls(rb, n):
    rb.hset("h", mapping={b"f%d" % i: b"v%d" % i for i in range(n)})
    when = int(time.time() * 1000) + 100000
    assert ex(rb, "HPEXPIREAT", "h", when, "FIELDS", 2, "f0", "f3") == [1, 1]
    assert ex(rb, "HPEXPIREAT", "h", when + 5, "FIELDS", 1, "f1") == [1]
    roundtrip(rb, "h", "d")
    assert ex(rb, "HPEXPIRETIME", "d", "FIELDS", 5, "f0", "f1", "f2", "f3", "nope") == [when, when + 5, -1, when, -2]
    assert rb.hlen("d") == n
    assert rb.object("encoding", "d") == b"hashtable"


@pytest.mark.ruvio_only
def test_hash_field_ttl_expires_after_restore(rb):
    rb.hset("h", mapping={"a": "1", "b": "2"})
    ex(rb, "HPEXPIRE", "h", 50, "FIELDS", 1, "a")
    payload = rb.dump("h")
    assert ex(rb, "RESTORE", "d", 0, payload) == b"OK"
    poll_until(lambda: rb.hlen("d") == 1, what="field a of d to expire")
    assert rb.hgetall("d") == {b"b": b"2"}


@pytest.mark.ruvio_only
def test_semaphore(rb):
    toks = [ex(rb, "SEMAPHORE", "sem", 10, 100000) for _ in range(3)]
    ex(rb, "SEMAPHORE", "sem", "RENEW", toks[1], 200000)
    roundtrip(rb, "sem", "d", check_encoding=True)
    assert ex(rb, "SEMAPHORE", "d", "COUNT") == 3
    for t in toks:
        assert ex(rb, "SEMAPHORE", "d", "RENEW", t, 1000) == 1
    # the token sequence continues: a new holder's token is new to both
    t4 = ex(rb, "SEMAPHORE", "d", 10, 1000)
    assert t4 not in toks
    assert ex(rb, "SEMAPHORE", "d", "RELEASE", toks[0]) == 1
    assert ex(rb, "SEMAPHORE", "d", "COUNT") == 3


@pytest.mark.ruvio_only
def test_semaphore_many_holders(rb):
    toks = [ex(rb, "SEMAPHORE", "sem", 1000, 100000) for _ in range(150)]
    roundtrip(rb, "sem", "d")
    assert ex(rb, "SEMAPHORE", "d", "COUNT") == 150
    assert all(ex(rb, "SEMAPHORE", "d", "RELEASE", t) == 1 for t in toks)
    assert rb.exists("d") == 0


# ---------------------------------------------------------------- key TTL and options


def test_restore_ttl_relative_and_absolute(rb):
    rb.set("s", "v")
    p = rb.dump("s")
    assert ex(rb, "RESTORE", "a", 100000, p) == b"OK"
    assert 99000 <= rb.pttl("a") <= 100000
    when = int(time.time() * 1000) + 50000
    assert ex(rb, "RESTORE", "b", when, p, "ABSTTL") == b"OK"
    assert ex(rb, "PEXPIRETIME", "b") == when
    assert ex(rb, "RESTORE", "c", 0, p) == b"OK"
    assert rb.ttl("c") == -1


def test_dump_does_not_carry_ttl(rb):
    rb.set("s", "v", ex=100)
    assert ex(rb, "RESTORE", "d", 0, rb.dump("s")) == b"OK"
    assert rb.ttl("d") == -1


def test_restore_ttl_in_the_past(rb):
    rb.rpush("l", "a", "b")
    p = rb.dump("l")
    assert ex(rb, "RESTORE", "gone", 1, p, "ABSTTL") == b"OK"
    assert rb.exists("gone") == 0
    # with REPLACE an existing key is deleted and nothing created
    rb.set("old", "x")
    assert ex(rb, "RESTORE", "old", 1000, p, "ABSTTL", "REPLACE") == b"OK"
    assert rb.exists("old") == 0


def test_busykey_and_replace(rb):
    rb.set("s", "v1")
    rb.rpush("l", "x")
    p = rb.dump("s")
    with pytest.raises(Exception) as ei:
        ex(rb, "RESTORE", "l", 0, p)
    assert BUSY in str(ei.value)
    assert rb.lrange("l", 0, -1) == [b"x"]
    assert ex(rb, "RESTORE", "l", 0, p, "REPLACE") == b"OK"
    assert rb.get("l") == b"v1"
    # REPLACE of a collection by a collection does not merge
    rb.delete("l")
    rb.hset("h1", mapping={"a": "1"})
    rb.hset("h2", mapping={"b": "2"})
    assert ex(rb, "RESTORE", "h2", 0, rb.dump("h1"), "REPLACE") == b"OK"
    assert rb.hgetall("h2") == {b"a": b"1"}


def test_replace_keeps_nothing_of_old_ttl(rb):
    rb.set("k", "old", ex=1000)
    assert ex(rb, "RESTORE", "k", 0, rb.dump("k"), "REPLACE") == b"OK"
    assert rb.ttl("k") == -1


def test_idletime_and_freq(rb):
    rb.set("s", "v")
    p = rb.dump("s")
    assert ex(rb, "RESTORE", "a", 0, p, "IDLETIME", 1000) == b"OK"
    assert 999 <= rb.object("idletime", "a") <= 1001
    assert ex(rb, "RESTORE", "b", 0, p, "FREQ", 10) == b"OK"
    assert rb.get("b") == b"v"


def test_errors(r, rb):
    rb.set("s", "v")
    p = rb.dump("s")
    cases = [
        (("RESTORE", "d", -1, p), "Invalid TTL value, must be >= 0"),
        (("RESTORE", "d", "abc", p), "value is not an integer or out of range"),
        (("RESTORE", "d", 0, p, "BOGUS"), "syntax error"),
        (("RESTORE", "d", 0, p, "IDLETIME"), "syntax error"),
        (("RESTORE", "d", 0, p, "IDLETIME", -1), "Invalid IDLETIME value, must be >= 0"),
        (("RESTORE", "d", 0, p, "FREQ", 256), "Invalid FREQ value, must be >= 0 and <= 255"),
        (("RESTORE", "d", 0, p, "IDLETIME", 1, "FREQ", 1), "syntax error"),
        (("RESTORE", "d", 0, b"garbage"), BAD_PAYLOAD),
        (("RESTORE", "d", 0, b""), BAD_PAYLOAD),
        (("RESTORE", "d"), "wrong number of arguments for 'restore' command"),
        (("DUMP",), "wrong number of arguments for 'dump' command"),
    ]
    for args, msg in cases:
        with pytest.raises(Exception) as ei:
            ex(rb, *args)
        assert msg in str(ei.value), (args, str(ei.value))
    assert rb.exists("d") == 0


def test_busykey_checked_before_ttl(rb):
    rb.set("s", "v")
    with pytest.raises(Exception) as ei:
        ex(rb, "RESTORE", "s", -1, rb.dump("s"))
    assert BUSY in str(ei.value)


@pytest.mark.parametrize("kind", ["string", "list", "hash", "set", "zset"])
def test_corrupted_payload_leaves_key_untouched(rb, kind):
    if kind == "string":
        rb.set("src", "value")
    elif kind == "list":
        rb.rpush("src", *[b"e%d" % i for i in range(200)])
    elif kind == "hash":
        rb.hset("src", mapping={"a": "1", "b": "2"})
    elif kind == "set":
        rb.sadd("src", "a", "b", "c")
    else:
        rb.zadd("src", {"a": 1, "b": 2})
    p = rb.dump("src")
    rb.set("dst", "keep")
    # every byte of short payloads; the head, middle and trailer of long ones
    where = sorted(set(range(min(len(p), 60))) | set(range(max(0, len(p) - 20), len(p))) | {len(p) // 2})
    for i in where:
        bad = bytearray(p)
        bad[i] ^= 0x41
        with pytest.raises(Exception) as ei:
            ex(rb, "RESTORE", "dst", 0, bytes(bad), "REPLACE")
        assert BAD_PAYLOAD in str(ei.value), i
    assert rb.get("dst") == b"keep"
    for cut in (1, 5, 10, len(p) - 1):
        with pytest.raises(Exception) as ei:
            ex(rb, "RESTORE", "dst", 0, p[:cut], "REPLACE")
        assert BAD_PAYLOAD in str(ei.value)
    assert rb.get("dst") == b"keep"


def test_restore_inside_multi(rb):
    rb.sadd("s", "a", "b")
    p = rb.dump("s")
    pipe = rb.pipeline(transaction=True)
    pipe.execute_command("RESTORE", "d", 0, p)
    pipe.scard("d")
    assert pipe.execute() == [b"OK", 2]


def test_restore_wakes_blocked_pop(server, rb):
    rb.rpush("l", "x", "y")
    p = rb.dump("l")
    rb.delete("l")
    blocker = server.raw()
    try:
        blocker.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nw\r\n$1\r\n5\r\n")
        poll_until(lambda: rb.info("clients")["blocked_clients"] == 1, what="client to block")
        assert ex(rb, "RESTORE", "w", 0, p) == b"OK"
        assert blocker.read_reply() == [b"w", b"x"]
    finally:
        blocker.close()
    assert rb.lrange("w", 0, -1) == [b"y"]


def test_resp3(raw, rb):
    rb.zadd("z", {"a": 1.5, "b": 2})
    rb.hset("h", mapping={"f": "v"})
    raw.cmd("HELLO", "3")
    assert raw.cmd("DUMP", "nokey") is None
    assert raw.cmd_raw("DUMP", "nokey") == b"_\r\n"
    p = raw.cmd("DUMP", "z")
    assert isinstance(p, bytes)
    assert raw.cmd("RESTORE", "z2", "0", p) == "OK"
    assert raw.cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES") == [[b"a", 1.5], [b"b", 2.0]]
    err = raw.cmd("RESTORE", "z2", "0", p)
    assert isinstance(err, RespError) and str(err) == BUSY
    err = raw.cmd("RESTORE", "z3", "0", b"x" + p)
    assert isinstance(err, RespError) and str(err) == "ERR " + BAD_PAYLOAD
    p = raw.cmd("DUMP", "h")
    assert raw.cmd("RESTORE", "h2", "0", p) == "OK"
    assert raw.cmd("HGETALL", "h2") == {b"f": b"v"}


def test_command_info(raw):
    info = raw.cmd("COMMAND", "INFO", "dump", "restore")
    assert info[0][0] == b"dump" and info[0][1] == 2
    assert info[1][0] == b"restore" and info[1][1] == -4
