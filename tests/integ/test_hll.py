"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE (docs/commands-hll.md)."""

import pytest

from conftest import resp_error

INVALID = "WRONGTYPE Key is not a valid HyperLogLog string value."
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def near(est, n, tol=0.03):
    return abs(est - n) <= max(1, n * tol)


def test_pfadd_reply_and_create(r):
    assert r.execute_command("PFADD", "h") == 1          # created
    assert r.execute_command("PFADD", "h") == 0
    assert r.type("h") == "string"
    assert r.execute_command("PFADD", "h", "a") == 1
    assert r.execute_command("PFADD", "h", "a") == 0
    assert r.execute_command("PFADD", "h", "a", "b", "c") == 1
    assert r.execute_command("PFADD", "h", "c", "b") == 0
    assert r.pfcount("h") == 3
    assert r.execute_command("PFADD", "new", "x") == 1


def test_pfcount_missing_and_small(r):
    assert r.pfcount("nope") == 0
    assert r.pfcount("nope", "nope2") == 0
    r.pfadd("h", *["e%d" % i for i in range(10)])
    assert r.pfcount("h") == 10
    assert r.pfcount("h", "nope") == 10
    assert r.exists("nope") == 0


def test_pfcount_union_does_not_modify(r, rb):
    r.pfadd("a", *["x%d" % i for i in range(0, 600)])
    r.pfadd("b", *["x%d" % i for i in range(300, 900)])
    assert near(r.pfcount("a"), 600)
    ga, gb = rb.get("a"), rb.get("b")
    assert near(r.pfcount("a", "b"), 900)
    assert rb.get("a") == ga and rb.get("b") == gb
    assert near(r.pfcount("a"), 600) and near(r.pfcount("b"), 600)


def test_large_cardinality(r):
    p = r.pipeline(transaction=False)
    for base in range(0, 50000, 1000):
        p.pfadd("big", *["el:%d" % i for i in range(base, base + 1000)])
    p.execute()
    assert near(r.pfcount("big"), 50000, 0.02)
    r.pfadd("big", *["el:%d" % i for i in range(0, 1000)])   # repeats change nothing much
    assert near(r.pfcount("big"), 50000, 0.02)


def test_pfmerge(r):
    r.pfadd("a", *["x%d" % i for i in range(0, 2000)])
    r.pfadd("b", *["x%d" % i for i in range(1000, 3000)])
    assert r.pfmerge("d", "a", "b") is True
    assert near(r.pfcount("d"), 3000)
    assert r.pfcount("d") == r.pfcount("a", "b")
    # destkey is a source too
    r.pfadd("c", *["y%d" % i for i in range(500)])
    r.pfmerge("c", "a")
    assert near(r.pfcount("c"), 2500)
    # missing sources are empty
    assert r.pfmerge("e", "nope") is True
    assert r.exists("e") == 1 and r.pfcount("e") == 0


def test_pfmerge_no_sources_creates(r):
    assert r.execute_command("PFMERGE", "m") in (b"OK", "OK", True)
    assert r.type("m") == "string"
    assert r.pfcount("m") == 0
    r.pfadd("m2", "a", "b")
    r.execute_command("PFMERGE", "m2")
    assert r.pfcount("m2") == 2


def test_pfmerge_keeps_ttl(r):
    r.pfadd("d", "a")
    r.expire("d", 1000)
    r.pfadd("s", "b")
    r.pfmerge("d", "s")
    assert 0 < r.ttl("d") <= 1000
    assert r.pfcount("d") == 2


def test_wrongtype(r, raw):
    r.rpush("l", "a")
    for cmd in (("PFADD", "l", "a"), ("PFADD", "l"), ("PFCOUNT", "l"), ("PFCOUNT", "nope", "l"),
                ("PFMERGE", "l"), ("PFMERGE", "d", "l")):
        assert raw.cmd(*cmd) == WRONGTYPE, cmd
    assert r.exists("d") == 0
    assert r.lrange("l", 0, -1) == ["a"]


def test_not_a_hll_string(r, raw):
    r.set("s", "foo")
    r.set("i", 12345)
    r.set("long", "x" * 20000)
    for k in ("s", "i", "long"):
        for cmd in (("PFADD", k, "a"), ("PFADD", k), ("PFCOUNT", k), ("PFCOUNT", "nope", k),
                    ("PFMERGE", k), ("PFMERGE", "d", k)):
            assert raw.cmd(*cmd) == INVALID, cmd
    assert r.get("s") == "foo" and r.get("i") == "12345"
    assert r.exists("d") == 0


def test_corrupted_value_rejected(rb, raw):
    rb.pfadd("h", "a", "b", "c")
    v = rb.get("h")
    rb.setrange("h", 0, "Z")                # break the magic
    assert raw.cmd("PFCOUNT", "h") == INVALID
    assert raw.cmd("PFADD", "h", "z") == INVALID
    rb.set("h", v[:3])                      # truncated header
    assert raw.cmd("PFCOUNT", "h") == INVALID


def test_value_is_a_copyable_string(r):
    r.pfadd("h", *["x%d" % i for i in range(100)])
    r.copy("h", "h2")
    assert r.pfcount("h2") == r.pfcount("h")
    r.rename("h2", "h3")
    assert r.pfcount("h3") == r.pfcount("h")


def test_arity(r):
    for cmd in ("PFADD", "PFCOUNT", "PFMERGE"):
        assert "wrong number of arguments" in resp_error(r.execute_command, cmd)


def test_command_info(raw):
    info = raw.cmd("COMMAND", "INFO", "pfadd", "pfcount", "pfmerge")
    by = {x[0].decode() if isinstance(x[0], bytes) else x[0]: x for x in info}
    assert by["pfadd"][1] == -2 and by["pfcount"][1] == -2 and by["pfmerge"][1] == -2
    assert (by["pfadd"][3], by["pfadd"][4], by["pfadd"][5]) == (1, 1, 1)
    assert (by["pfcount"][3], by["pfcount"][4]) == (1, -1)
    assert (by["pfmerge"][3], by["pfmerge"][4]) == (1, -1)


@pytest.mark.ruvio_only
def test_small_hll_is_small(r):
    r.pfadd("h")
    assert r.strlen("h") == 8
    r.pfadd("h", "a", "b", "c")
    assert r.strlen("h") == 8 + 3 * 3
    r.pfadd("big", *["x%d" % i for i in range(5000)])
    assert r.strlen("big") == 12296           # dense
    r.pfmerge("m", "h")
    assert r.strlen("m") == 17                # merge of small stays sparse


@pytest.mark.ruvio_only
def test_redis_hll_bytes_rejected(r, raw):
    # A Redis sparse HLL header ("HYLL", encoding 1): not Ruvio's format.
    r.set("h", b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x7f\xff")
    assert raw.cmd("PFCOUNT", "h") == INVALID
