"""Hash commands (validated against redis 7.0.15; NOVALUES is 7.4: ruvio only)."""

import pytest

from conftest import resp_error

NOTINT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def test_hset_hget_basic(r):
    assert r.hset("h", mapping={"a": "1", "b": "x"}) == 2
    assert r.hset("h", mapping={"a": "2", "c": "3"}) == 1
    assert r.hget("h", "a") == "2"
    assert r.hget("h", "zz") is None
    assert r.hget("nokey", "a") is None
    assert r.hlen("h") == 3
    assert r.hlen("nokey") == 0
    assert r.type("h") == "hash"


def test_hset_arity(raw):
    assert raw.cmd("HSET", "h", "a") == "ERR wrong number of arguments for 'hset' command"
    assert raw.cmd("HSET", "h", "a", "1", "b") == "ERR wrong number of arguments for 'hset' command"
    assert raw.cmd("HMSET", "h", "a") == "ERR wrong number of arguments for 'hmset' command"
    assert raw.cmd("EXISTS", "h") == 0


def test_hmset_hmget_hsetnx(r, raw):
    assert raw.cmd("HMSET", "h", "a", "1", "b", "2") == "OK"
    assert r.hmget("h", ["a", "zz", "b"]) == ["1", None, "2"]
    assert r.hmget("nokey", ["a"]) == [None]
    assert r.hsetnx("h", "a", "9") == 0
    assert r.hsetnx("h", "n", "9") == 1
    assert r.hget("h", "n") == "9"
    assert r.hsetnx("new", "f", "v") == 1
    assert r.hgetall("new") == {"f": "v"}


def test_hgetall_keys_vals(r):
    assert r.hgetall("nokey") == {}
    assert r.hkeys("nokey") == []
    assert r.hvals("nokey") == []
    r.hset("h", mapping={"a": "1", "b": "2", "c": "-3"})
    assert r.hgetall("h") == {"a": "1", "b": "2", "c": "-3"}
    assert sorted(r.hkeys("h")) == ["a", "b", "c"]
    assert sorted(r.hvals("h")) == ["-3", "1", "2"]


def test_hgetall_resp3_map(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("HSET", "h", "a", "1")
    assert raw.cmd_raw("HGETALL", "h") == b"%1\r\n$1\r\na\r\n$1\r\n1\r\n"
    assert raw.cmd_raw("HGETALL", "nokey") == b"%0\r\n"
    assert raw.cmd_raw("HGET", "h", "zz") == b"_\r\n"


def test_hgetall_resp2_flat(raw):
    raw.cmd("HSET", "h", "a", "1")
    assert raw.cmd_raw("HGETALL", "h") == b"*2\r\n$1\r\na\r\n$1\r\n1\r\n"


def test_hdel_deletes_key_when_empty(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.hdel("h", "a", "zz", "a") == 1
    assert r.exists("h") == 1
    assert r.hdel("h", "b") == 1
    assert r.exists("h") == 0
    assert r.hdel("nokey", "a") == 0


def test_hexists_hstrlen(r):
    r.hset("h", mapping={"a": "hello", "n": "-12345"})
    assert r.hexists("h", "a") is True
    assert r.hexists("h", "zz") is False
    assert r.hexists("nokey", "a") is False
    assert r.hstrlen("h", "a") == 5
    assert r.hstrlen("h", "n") == 6
    assert r.hstrlen("h", "zz") == 0
    assert r.hstrlen("nokey", "a") == 0


def test_wrongtype(r):
    r.set("s", "x")
    for fn, args in [(r.hget, ("s", "a")), (r.hset, ("s", "a", "1")), (r.hgetall, ("s",)),
                     (r.hdel, ("s", "a")), (r.hlen, ("s",)), (r.hincrby, ("s", "a", 1)),
                     (r.hrandfield, ("s",)), (r.hmget, ("s", ["a"])), (r.hkeys, ("s",)),
                     (r.hexists, ("s", "a")), (r.hstrlen, ("s", "a")), (r.hsetnx, ("s", "a", "1"))]:
        assert resp_error(fn, *args) == WRONGTYPE
    assert r.get("s") == "x"


def test_hincrby(r, raw):
    assert r.hincrby("h", "a", 5) == 5
    assert r.hincrby("h", "a", -7) == -2
    r.hset("h", "s", "foo")
    assert raw.cmd("HINCRBY", "h", "s", "1") == "ERR hash value is not an integer"
    assert raw.cmd("HINCRBY", "h", "a", "x") == "ERR " + NOTINT
    r.hset("h", "big", "9223372036854775807")
    assert raw.cmd("HINCRBY", "h", "big", "1") == "ERR increment or decrement would overflow"
    r.hset("h", "sp", " 1")
    assert raw.cmd("HINCRBY", "h", "sp", "1") == "ERR hash value is not an integer"
    assert raw.cmd("HINCRBY", "nokey", "a", "x") == "ERR " + NOTINT
    assert r.exists("nokey") == 0


def test_hincrbyfloat(r, raw):
    assert raw.cmd("HINCRBYFLOAT", "h", "x", "1.0e1") == b"10"
    assert raw.cmd("HINCRBYFLOAT", "h", "x", "5.0000000000000000001") == b"15"
    assert raw.cmd("HINCRBYFLOAT", "h", "x", "-0.5") == b"14.5"
    assert raw.cmd("HINCRBYFLOAT", "h", "x", "x") == "ERR value is not a valid float"
    assert raw.cmd("HINCRBYFLOAT", "h", "x", "inf") == "ERR value is NaN or Infinity"
    assert raw.cmd("HINCRBYFLOAT", "h", "y", "1e5000") == "ERR value is not a valid float"
    r.hset("h", "s", "foo")
    assert raw.cmd("HINCRBYFLOAT", "h", "s", "1") == "ERR hash value is not a float"
    r.hset("h", "i", "3")
    assert raw.cmd("HINCRBYFLOAT", "h", "i", "0.25") == b"3.25"
    assert r.hget("h", "i") == "3.25"


def test_hrandfield(r, raw):
    assert r.hrandfield("nokey") is None
    assert r.hrandfield("nokey", 3) == []
    fields = {"f%d" % i: str(i) for i in range(5)}
    r.hset("h", mapping=fields)
    assert r.hrandfield("h") in fields
    assert sorted(r.hrandfield("h", 10)) == sorted(fields)
    got = r.hrandfield("h", 3)
    assert len(got) == 3 and len(set(got)) == 3 and set(got) <= set(fields)
    got = r.hrandfield("h", -20)
    assert len(got) == 20 and set(got) <= set(fields)
    assert r.hrandfield("h", 0) == []
    flat = r.hrandfield("h", 2, withvalues=True)
    assert len(flat) == 4
    for k, v in zip(flat[0::2], flat[1::2]):
        assert fields[k] == v
    assert raw.cmd("HRANDFIELD", "h", "1", "WITHVALUE") == "ERR syntax error"
    assert raw.cmd("HRANDFIELD", "h", "x") == "ERR " + NOTINT
    assert raw.cmd("HRANDFIELD", "h", "-9223372036854775808") == (
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    assert raw.cmd("HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES") == "ERR value is out of range"


def test_hrandfield_resp3_pairs(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("HSET", "h", "a", "1")
    assert raw.cmd_raw("HRANDFIELD", "h", "-2", "WITHVALUES") == (
        b"*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n")
    assert raw.cmd_raw("HRANDFIELD", "h", "1") == b"*1\r\n$1\r\na\r\n"
    assert raw.cmd_raw("HRANDFIELD", "nokey") == b"_\r\n"


def test_hrandfield_large_hash(r):
    r.hset("h", mapping={"f%d" % i: "v%d" % i for i in range(1000)})
    got = r.hrandfield("h", 10, withvalues=True)
    keys = got[0::2]
    assert len(set(keys)) == 10
    for k, v in zip(keys, got[1::2]):
        assert v == "v" + k[1:]
    assert len(set(r.hrandfield("h", 900))) == 900
    assert len(r.hrandfield("h", -50)) == 50


def test_hscan_small_and_large(r, raw):
    assert raw.cmd("HSCAN", "nokey", "0") == [b"0", []]
    r.hset("h", mapping={"a": "1", "b": "2", "ab": "3"})
    cur, items = r.hscan("h", 0)
    assert cur == 0 and items == {"a": "1", "b": "2", "ab": "3"}
    cur, items = r.hscan("h", 0, match="a*")
    assert items == {"a": "1", "ab": "3"}
    big = {"field:%d" % i: str(i) for i in range(1000)}
    r.hset("big", mapping=big)
    seen = {}
    cur = 0
    while True:
        cur, items = r.hscan("big", cur, count=50)
        seen.update(items)
        if cur == 0:
            break
    assert seen == big
    assert dict(r.hscan_iter("big", match="field:99*")) == {k: v for k, v in big.items()
                                                            if k.startswith("field:99")}
    assert raw.cmd("HSCAN", "h", "x") == "ERR invalid cursor"
    assert raw.cmd("HSCAN", "h", "0", "COUNT", "0") == "ERR syntax error"
    assert raw.cmd("HSCAN", "h", "0", "COUNT", "x") == "ERR " + NOTINT
    assert raw.cmd("HSCAN", "h", "0", "MATCH") == "ERR syntax error"


@pytest.mark.ruvio_only
def test_hscan_novalues(r, raw):
    r.hset("h", mapping={"a": "1", "b": "2"})
    reply = raw.cmd("HSCAN", "h", "0", "NOVALUES")
    assert reply[0] == b"0" and sorted(reply[1]) == [b"a", b"b"]
    r.hset("big", mapping={"f%d" % i: "v" for i in range(300)})
    fields, cur = set(), "0"
    while True:
        cur, items = raw.cmd("HSCAN", "big", cur, "NOVALUES", "COUNT", "100")
        fields.update(items)
        if cur == b"0":
            break
    assert fields == {b"f%d" % i for i in range(300)}


def test_encoding_conversion(start_server):
    srv = start_server("--hash-max-listpack-entries", "4", "--hash-max-listpack-value", "8")
    r = srv.client()
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
    assert r.object("encoding", "h") == "listpack"
    r.hset("h", "e", "5")
    assert r.object("encoding", "h") == "hashtable"
    r.hdel("h", "a", "b", "c", "d")
    assert r.object("encoding", "h") == "hashtable"
    r.hset("v", "a", "12345678")
    assert r.object("encoding", "v") == "listpack"
    r.hset("v", "a", "123456789")
    assert r.object("encoding", "v") == "hashtable"
    assert r.hget("v", "a") == "123456789"
    r.hset("f", "longfield", "1")
    assert r.object("encoding", "f") == "hashtable"
    r.close()


def test_binary_and_integer_like_values(rb):
    vals = {b"\x00bin\xff": b"\r\n\x00", b"1": b"-0", b"01": b"9223372036854775808", b"": b""}
    rb.hset("h", mapping=vals)
    assert rb.hgetall("h") == vals
    assert rb.hget("h", b"1") == b"-0"
    assert rb.hstrlen("h", b"01") == 19


def test_copy_and_memory_usage(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.copy("h", "h2") is True
    assert r.hgetall("h2") == {"a": "1", "b": "2"}
    r.hset("h2", "a", "9")
    assert r.hget("h", "a") == "1"
    assert r.memory_usage("h") > 0
