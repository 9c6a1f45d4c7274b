"""Hash-field expiration (Redis 7.4: HEXPIRE family, HTTL, HPERSIST).

redis 7.0.15 lacks these commands, so the replies follow the 7.4 docs: ruvio only."""

import time

import pytest

from conftest import poll_until

pytestmark = pytest.mark.ruvio_only

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def ex(r, *args):
    return r.execute_command(*args)


def test_plain_hash_keeps_listpack(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert r.object("encoding", "h") == "listpack"
    assert ex(r, "HTTL", "h", "FIELDS", "2", "a", "zz") == [-1, -2]
    assert r.object("encoding", "h") == "listpack"


def test_hexpire_reply_codes(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert ex(r, "HEXPIRE", "h", "100", "FIELDS", "2", "a", "nope") == [1, -2]
    assert r.object("encoding", "h") == "hashtable"
    assert ex(r, "HEXPIRE", "h", "0", "FIELDS", "1", "b") == [2]
    assert r.hget("h", "b") is None
    assert r.hlen("h") == 2
    assert ex(r, "HEXPIRE", "nokey", "10", "FIELDS", "2", "a", "b") == [-2, -2]
    ttl = ex(r, "HTTL", "h", "FIELDS", "3", "a", "c", "zz")
    assert 99 <= ttl[0] <= 100 and ttl[1:] == [-1, -2]
    assert 99000 <= ex(r, "HPTTL", "h", "FIELDS", "1", "a")[0] <= 100000


def test_hpexpire_and_at_forms(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    now_ms = int(time.time() * 1000)
    at = now_ms + 500000
    assert ex(r, "HPEXPIREAT", "h", str(at), "FIELDS", "1", "a") == [1]
    assert ex(r, "HPEXPIRETIME", "h", "FIELDS", "2", "a", "b") == [at, -1]
    assert ex(r, "HEXPIRETIME", "h", "FIELDS", "1", "a") == [at // 1000]
    assert ex(r, "HEXPIREAT", "h", str(at // 1000 + 100), "FIELDS", "1", "b") == [1]
    assert ex(r, "HEXPIRETIME", "h", "FIELDS", "1", "b") == [at // 1000 + 100]
    assert ex(r, "HPEXPIRE", "h", "300000", "FIELDS", "1", "b") == [1]
    assert 299000 <= ex(r, "HPTTL", "h", "FIELDS", "1", "b")[0] <= 300000
    assert ex(r, "HEXPIREAT", "h", "1", "FIELDS", "1", "b") == [2]
    assert ex(r, "HPEXPIREAT", "h", "1", "FIELDS", "1", "a") == [2]
    assert r.exists("h") == 0


def test_conditions(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert ex(r, "HEXPIRE", "h", "100", "XX", "FIELDS", "1", "a") == [0]
    assert ex(r, "HEXPIRE", "h", "100", "GT", "FIELDS", "1", "a") == [0]
    assert ex(r, "HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a") == [1]
    assert ex(r, "HEXPIRE", "h", "200", "NX", "FIELDS", "1", "a") == [0]
    assert ex(r, "HEXPIRE", "h", "200", "xx", "FIELDS", "1", "a") == [1]
    assert ex(r, "HEXPIRE", "h", "100", "GT", "FIELDS", "1", "a") == [0]
    assert ex(r, "HEXPIRE", "h", "300", "GT", "FIELDS", "1", "a") == [1]
    assert ex(r, "HEXPIRE", "h", "400", "LT", "FIELDS", "1", "a") == [0]
    assert ex(r, "HEXPIRE", "h", "50", "LT", "FIELDS", "2", "a", "b") == [1, 1]
    assert ex(r, "HEXPIRE", "h", "0", "XX", "FIELDS", "1", "b") == [2]


def test_hpersist(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    ex(r, "HEXPIRE", "h", "100", "FIELDS", "1", "a")
    assert ex(r, "HPERSIST", "h", "FIELDS", "3", "a", "b", "zz") == [1, -1, -2]
    assert ex(r, "HTTL", "h", "FIELDS", "1", "a") == [-1]
    assert ex(r, "HPERSIST", "nokey", "FIELDS", "1", "a") == [-2]


def test_hset_clears_field_ttl(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    ex(r, "HEXPIRE", "h", "100", "FIELDS", "2", "a", "b")
    r.hset("h", "a", "9")
    assert ex(r, "HTTL", "h", "FIELDS", "2", "a", "b")[0] == -1
    r.hdel("h", "b")
    r.hset("h", "b", "3")
    assert ex(r, "HTTL", "h", "FIELDS", "1", "b") == [-1]


def test_lazy_expiry_hides_fields(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert ex(r, "HPEXPIRE", "h", "50", "FIELDS", "1", "a") == [1]
    time.sleep(0.15)
    assert r.hget("h", "a") is None
    assert r.hgetall("h") == {"b": "2"}
    assert r.hlen("h") == 1
    assert r.hexists("h", "a") == 0
    assert ex(r, "HTTL", "h", "FIELDS", "1", "a") == [-2]


def test_last_field_expiry_deletes_key(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert ex(r, "HPEXPIRE", "h", "50", "FIELDS", "2", "a", "b") == [1, 1]
    time.sleep(0.15)
    assert r.hlen("h") == 0
    assert r.exists("h") == 0


def test_active_expiry(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.hset("g", mapping={"x": "1"})
    ex(r, "HPEXPIRE", "h", "30", "FIELDS", "1", "a")
    ex(r, "HPEXPIRE", "g", "30", "FIELDS", "1", "x")
    # EXISTS does not reap fields: only the background sweep can delete g.
    poll_until(lambda: r.exists("g") == 0, timeout=5.0, what="active hash field expiry")
    assert r.hgetall("h") == {"b": "2"}


def test_errors(r, raw):
    r.hset("h", "a", "1")
    r.set("s", "x")
    assert raw.cmd("HEXPIRE", "h", "10", "FIELDS", "0", "a") == \
        "ERR Parameter `numFields` should be greater than 0"
    assert raw.cmd("HEXPIRE", "h", "10", "FIELDS", "2", "a") == \
        "ERR The `numfields` parameter must match the number of arguments"
    assert raw.cmd("HTTL", "h", "FIELDS", "3", "a") == \
        "ERR The `numfields` parameter must match the number of arguments"
    assert raw.cmd("HEXPIRE", "h", "-1", "FIELDS", "1", "a") == \
        "ERR invalid expire time, must be >= 0"
    assert raw.cmd("HEXPIRE", "h", "xx", "FIELDS", "1", "a") == \
        "ERR value is not an integer or out of range"
    assert raw.cmd("HEXPIRE", "h", "10", "ZZ", "FIELDS", "1", "a").startswith(
        "ERR Mandatory argument FIELDS is missing")
    assert raw.cmd("HEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "a") == \
        "ERR invalid expire time in 'hexpire' command"
    assert raw.cmd("HEXPIRE", "s", "10", "FIELDS", "1", "a") == WRONGTYPE
    assert raw.cmd("HTTL", "s", "FIELDS", "1", "a") == WRONGTYPE
    assert raw.cmd("HPERSIST", "s", "FIELDS", "1", "a") == WRONGTYPE
    assert raw.cmd("HEXPIRE", "h", "10", "FIELDS") == \
        "ERR wrong number of arguments for 'hexpire' command"
