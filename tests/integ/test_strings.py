"""String commands."""

import time

import pytest

from conftest import resp_error

NOTINT = "value is not an integer or out of range"
NOTFLOAT = "value is not a valid float"
SYNTAX = "syntax error"
OVERFLOW = "increment or decrement would overflow"
MAXI = 9223372036854775807
MINI = -9223372036854775808


def expire_err(cmd):
    return "invalid expire time in '%s' command" % cmd


# ---------------------------------------------------------------------------------------------------- GET / SET

def test_get_set(r):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.set("k", "v2") is True
    assert r.get("k") == "v2"


def test_set_empty_value(r):
    assert r.set("k", "") is True
    assert r.get("k") == ""
    assert r.exists("k") == 1


def test_set_raw_replies(raw):
    assert raw.cmd_raw("SET", "k", "v") == b"+OK\r\n"
    assert raw.cmd_raw("GET", "k") == b"$1\r\nv\r\n"
    assert raw.cmd_raw("GET", "missing") == b"$-1\r\n"


def test_get_set_arity(raw):
    assert raw.cmd("GET") == "ERR wrong number of arguments for 'get' command"
    assert raw.cmd("GET", "a", "b") == "ERR wrong number of arguments for 'get' command"
    assert raw.cmd("SET", "a") == "ERR wrong number of arguments for 'set' command"


def test_set_ex(r):
    assert r.set("k", "v", ex=100) is True
    assert 99 <= r.ttl("k") <= 100


def test_set_px(r):
    assert r.set("k", "v", px=100000) is True
    assert 99000 <= r.pttl("k") <= 100000


def test_set_exat(r):
    at = int(time.time()) + 1000
    assert r.set("k", "v", exat=at) is True
    assert r.expiretime("k") == at


def test_set_pxat(r):
    at = int(time.time() * 1000) + 1000000
    assert r.set("k", "v", pxat=at) is True
    assert r.execute_command("PEXPIRETIME", "k") == at


def test_set_ex_in_past_exat(r):
    assert r.set("k", "v", exat=int(time.time()) - 100) is True
    assert r.get("k") is None


def test_set_nx(r):
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == "1"


def test_set_xx(r):
    assert r.set("k", "1", xx=True) is None
    assert r.get("k") is None
    r.set("k", "0")
    assert r.set("k", "1", xx=True) is True
    assert r.get("k") == "1"


def test_set_nx_xx_raw(raw):
    assert raw.cmd_raw("SET", "k", "1", "NX") == b"+OK\r\n"
    assert raw.cmd_raw("SET", "k", "1", "NX") == b"$-1\r\n"
    assert raw.cmd_raw("SET", "k2", "1", "XX") == b"$-1\r\n"


def test_set_clears_ttl(r):
    r.set("k", "v", ex=100)
    r.set("k", "v2")
    assert r.ttl("k") == -1


def test_set_keepttl(r):
    r.set("k", "v", ex=100)
    assert r.set("k", "v2", keepttl=True) is True
    assert r.get("k") == "v2"
    assert 99 <= r.ttl("k") <= 100


def test_set_get_option(r):
    assert r.set("k", "new", get=True) is None
    assert r.set("k", "newer", get=True) == "new"
    assert r.get("k") == "newer"


def test_set_get_with_nx_xx(raw):
    # Redis 7.0 allows GET together with NX / XX
    assert raw.cmd("SET", "k", "1", "NX", "GET") is None
    assert raw.cmd("SET", "k", "2", "NX", "GET") == b"1"
    assert raw.cmd("GET", "k") == b"1"
    assert raw.cmd("SET", "k", "3", "XX", "GET") == b"1"
    assert raw.cmd("SET", "nokey", "3", "XX", "GET") is None
    assert raw.cmd("EXISTS", "nokey") == 0


def test_set_options_case_insensitive(raw):
    assert raw.cmd("SET", "k", "v", "ex", "100", "nx") == "OK"
    assert raw.cmd("TTL", "k") in (99, 100)


@pytest.mark.parametrize("opts", [
    ["NX", "XX"],
    ["EX", "10", "PX", "100"],
    ["EX", "10", "EXAT", "100000000000"],
    ["PX", "10", "PXAT", "100000000000"],
    ["KEEPTTL", "EX", "10"],
    ["EX", "10", "KEEPTTL"],
    ["KEEPTTL", "PXAT", "100000000000"],
    ["FOO"],
    ["EX"],
    ["NX", "NX", "XX"],
])
def test_set_syntax_errors(raw, opts):
    assert raw.cmd("SET", "k", "v", *opts) == "ERR syntax error"
    assert raw.cmd("EXISTS", "k") == 0


@pytest.mark.parametrize("opts", [
    ["EX", "0"], ["EX", "-1"], ["PX", "0"], ["PX", "-5"], ["EXAT", "0"], ["PXAT", "0"],
    ["EX", str(MAXI)], ["PX", str(MAXI)],
])
def test_set_invalid_expire(raw, opts):
    assert raw.cmd("SET", "k", "v", *opts) == "ERR invalid expire time in 'set' command"
    assert raw.cmd("EXISTS", "k") == 0


def test_set_expire_not_integer(raw):
    assert raw.cmd("SET", "k", "v", "EX", "abc") == "ERR value is not an integer or out of range"
    assert raw.cmd("SET", "k", "v", "PX", "1.5") == "ERR value is not an integer or out of range"


def test_set_redis_py_error_text(r):
    assert resp_error(r.set, "k", "v", ex=0) == expire_err("set")


# ---------------------------------------------------------------------------------------------------- SETNX SETEX PSETEX

def test_setnx(r):
    assert r.setnx("k", "1") is True
    assert r.setnx("k", "2") is False
    assert r.get("k") == "1"


def test_setex(r):
    assert r.setex("k", 100, "v") is True
    assert r.get("k") == "v"
    assert 99 <= r.ttl("k") <= 100


def test_psetex(r):
    assert r.psetex("k", 100000, "v") is True
    assert r.get("k") == "v"
    assert 99000 <= r.pttl("k") <= 100000


def test_setex_errors(raw):
    assert raw.cmd("SETEX", "k", "0", "v") == "ERR invalid expire time in 'setex' command"
    assert raw.cmd("SETEX", "k", "-1", "v") == "ERR invalid expire time in 'setex' command"
    assert raw.cmd("PSETEX", "k", "0", "v") == "ERR invalid expire time in 'psetex' command"
    assert raw.cmd("SETEX", "k", "abc", "v") == "ERR value is not an integer or out of range"
    assert raw.cmd("SETEX", "k", "10") == "ERR wrong number of arguments for 'setex' command"
    assert raw.cmd("EXISTS", "k") == 0


# ---------------------------------------------------------------------------------------------------- MGET MSET MSETNX

def test_mget(r):
    r.set("a", "1")
    r.set("c", "3")
    assert r.mget("a", "b", "c") == ["1", None, "3"]


def test_mset(r):
    assert r.mset({"a": "1", "b": "2", "c": "3"}) is True
    assert r.mget("a", "b", "c") == ["1", "2", "3"]


def test_mset_same_key_last_wins(raw):
    assert raw.cmd("MSET", "a", "1", "a", "2") == "OK"
    assert raw.cmd("GET", "a") == b"2"


def test_mset_clears_ttl(r):
    r.set("a", "1", ex=100)
    r.mset({"a": "2"})
    assert r.ttl("a") == -1


def test_mset_arity(raw):
    assert raw.cmd("MSET", "a") == "ERR wrong number of arguments for 'mset' command"
    assert raw.cmd("MSET", "a", "1", "b") == "ERR wrong number of arguments for 'mset' command"
    assert raw.cmd("MSETNX", "a", "1", "b") == "ERR wrong number of arguments for 'msetnx' command"
    assert raw.cmd("MGET") == "ERR wrong number of arguments for 'mget' command"
    assert raw.cmd("EXISTS", "a") == 0


def test_msetnx(r):
    assert r.msetnx({"a": "1", "b": "2"}) is True
    assert r.msetnx({"b": "x", "c": "3"}) is False
    assert r.mget("a", "b", "c") == ["1", "2", None]


# ---------------------------------------------------------------------------------------------------- GETSET GETDEL GETEX

def test_getset(r):
    assert r.getset("k", "1") is None
    assert r.getset("k", "2") == "1"
    assert r.get("k") == "2"


def test_getset_clears_ttl(r):
    r.set("k", "1", ex=100)
    r.getset("k", "2")
    assert r.ttl("k") == -1


def test_getdel(r):
    r.set("k", "v")
    assert r.getdel("k") == "v"
    assert r.exists("k") == 0
    assert r.getdel("k") is None


def test_getex_no_options(r):
    r.set("k", "v", ex=100)
    assert r.getex("k") == "v"
    assert 99 <= r.ttl("k") <= 100
    assert r.getex("missing") is None


def test_getex_ex_px(r):
    r.set("k", "v")
    assert r.getex("k", ex=100) == "v"
    assert 99 <= r.ttl("k") <= 100
    assert r.getex("k", px=50000) == "v"
    assert 49000 <= r.pttl("k") <= 50000


def test_getex_exat_pxat(r):
    r.set("k", "v")
    at = int(time.time()) + 500
    assert r.getex("k", exat=at) == "v"
    assert r.expiretime("k") == at
    pat = int(time.time() * 1000) + 600000
    assert r.getex("k", pxat=pat) == "v"
    assert r.execute_command("PEXPIRETIME", "k") == pat


def test_getex_persist(r):
    r.set("k", "v", ex=100)
    assert r.getex("k", persist=True) == "v"
    assert r.ttl("k") == -1


def test_getex_errors(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("GETEX", "k", "EX", "0") == "ERR invalid expire time in 'getex' command"
    assert raw.cmd("GETEX", "k", "PX", "-1") == "ERR invalid expire time in 'getex' command"
    assert raw.cmd("GETEX", "k", "PERSIST", "EX", "10") == "ERR syntax error"
    assert raw.cmd("GETEX", "k", "EX", "10", "PX", "10") == "ERR syntax error"
    assert raw.cmd("GETEX", "k", "FOO") == "ERR syntax error"
    assert raw.cmd("GETEX", "k", "EX", "x") == "ERR value is not an integer or out of range"
    assert raw.cmd("TTL", "k") == -1


def test_getex_past_deletes(r):
    r.set("k", "v")
    assert r.getex("k", exat=int(time.time()) - 10) == "v"
    assert r.exists("k") == 0


# ---------------------------------------------------------------------------------------------------- APPEND STRLEN

def test_append(r):
    assert r.append("k", "hello") == 5
    assert r.append("k", " world") == 11
    assert r.get("k") == "hello world"


def test_append_keeps_ttl(r):
    r.set("k", "a", ex=100)
    r.append("k", "b")
    assert 99 <= r.ttl("k") <= 100


def test_append_to_integer(r):
    r.set("k", 12)
    assert r.append("k", "34") == 4
    assert r.get("k") == "1234"
    assert r.incr("k") == 1235


def test_strlen(r):
    assert r.strlen("missing") == 0
    r.set("k", "hello")
    assert r.strlen("k") == 5
    r.set("n", 12345)
    assert r.strlen("n") == 5


# ---------------------------------------------------------------------------------------------------- INCR family

def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incr("n") == 2
    assert r.decr("n") == 1
    assert r.decr("m") == -1
    assert r.incrby("n", 10) == 11
    assert r.decrby("n", 20) == -9
    assert r.incrby("n", -1) == -10
    assert r.get("n") == "-10"


def test_incr_raw_reply(raw):
    assert raw.cmd_raw("INCR", "n") == b":1\r\n"
    assert raw.cmd_raw("INCRBY", "n", "-5") == b":-4\r\n"


def test_incr_keeps_ttl(r):
    r.set("n", 5, ex=100)
    r.incr("n")
    assert 99 <= r.ttl("n") <= 100


@pytest.mark.parametrize("value", ["abc", "1.5", " 1", "1 ", "", "0x10", "99999999999999999999", "+1"])
def test_incr_not_integer(r, value):
    r.set("n", value)
    assert resp_error(r.incr, "n") == NOTINT
    assert r.get("n") == value


def test_incr_leading_zero_and_sign(raw):
    raw.cmd("SET", "n", "-0")
    assert raw.cmd("INCR", "n") == "ERR value is not an integer or out of range"
    raw.cmd("SET", "n", "007")
    assert raw.cmd("INCR", "n") == "ERR value is not an integer or out of range"
    raw.cmd("SET", "n", "-7")
    assert raw.cmd("INCR", "n") == -6


def test_incrby_bad_increment(raw):
    assert raw.cmd("INCRBY", "n", "abc") == "ERR value is not an integer or out of range"
    assert raw.cmd("DECRBY", "n", "1.5") == "ERR value is not an integer or out of range"
    assert raw.cmd("INCRBY", "n", "9223372036854775808") == "ERR value is not an integer or out of range"


def test_incr_overflow(raw):
    raw.cmd("SET", "n", str(MAXI))
    assert raw.cmd("INCR", "n") == "ERR increment or decrement would overflow"
    assert raw.cmd("INCRBY", "n", "1") == "ERR increment or decrement would overflow"
    assert raw.cmd("GET", "n") == str(MAXI).encode()
    raw.cmd("SET", "n", str(MINI))
    assert raw.cmd("DECR", "n") == "ERR increment or decrement would overflow"
    assert raw.cmd("INCRBY", "n", "-1") == "ERR increment or decrement would overflow"
    assert raw.cmd("INCR", "n") == MINI + 1


def test_decrby_min_int(raw):
    raw.cmd("SET", "n", "0")
    assert raw.cmd("DECRBY", "n", str(MINI)) == "ERR decrement would overflow"


def test_incr_extremes(r):
    r.set("n", MAXI - 1)
    assert r.incr("n") == MAXI
    r.set("n", MINI + 1)
    assert r.decr("n") == MINI


def test_incrbyfloat(r):
    assert r.incrbyfloat("f", 1.5) == 1.5
    assert r.incrbyfloat("f", 0.25) == 1.75
    assert r.incrbyfloat("f", -2) == -0.25
    assert r.get("f") == "-0.25"


def test_incrbyfloat_formatting(raw):
    assert raw.cmd("INCRBYFLOAT", "f", "10.50") == b"10.5"
    assert raw.cmd("INCRBYFLOAT", "f", "0.5") == b"11"
    assert raw.cmd("GET", "f") == b"11"
    raw.cmd("SET", "g", "5.0e3")
    assert raw.cmd("INCRBYFLOAT", "g", "2.0e2") == b"5200"
    raw.cmd("SET", "h", "3")
    assert raw.cmd("INCRBYFLOAT", "h", "1.1") == b"4.1"


def test_incrbyfloat_on_integer_keeps_incr_working(r):
    r.set("n", 10)
    assert r.incrbyfloat("n", 5) == 15.0
    assert r.get("n") == "15"
    assert r.incr("n") == 16


def test_incrbyfloat_errors(raw):
    raw.cmd("SET", "s", "abc")
    assert raw.cmd("INCRBYFLOAT", "s", "1") == "ERR value is not a valid float"
    raw.cmd("SET", "f", "1")
    assert raw.cmd("INCRBYFLOAT", "f", "abc") == "ERR value is not a valid float"
    assert raw.cmd("INCRBYFLOAT", "f", "") == "ERR value is not a valid float"
    assert raw.cmd("INCRBYFLOAT", "f", "inf") == "ERR increment would produce NaN or Infinity"
    assert raw.cmd("INCRBYFLOAT", "f", "-inf") == "ERR increment would produce NaN or Infinity"
    assert raw.cmd("GET", "f") == b"1"


def test_incrbyfloat_nan_value(raw):
    raw.cmd("SET", "f", "nan")
    assert raw.cmd("INCRBYFLOAT", "f", "1") == "ERR value is not a valid float"


def test_incrbyfloat_keeps_ttl(r):
    r.set("f", "1.5", ex=100)
    r.incrbyfloat("f", 1)
    assert 99 <= r.ttl("f") <= 100


# ---------------------------------------------------------------------------------------------------- GETRANGE SETRANGE

def test_getrange(r):
    r.set("k", "Hello World")
    assert r.getrange("k", 0, 4) == "Hello"
    assert r.getrange("k", -5, -1) == "World"
    assert r.getrange("k", 0, -1) == "Hello World"
    assert r.getrange("k", 6, 1000) == "World"
    assert r.getrange("k", 5, 3) == ""
    assert r.getrange("k", -100, 2) == "Hel"
    assert r.getrange("k", 100, 200) == ""
    assert r.getrange("missing", 0, -1) == ""


def test_getrange_integer_value(r):
    r.set("n", 123456)
    assert r.getrange("n", 1, 3) == "234"


def test_getrange_bad_args(raw):
    raw.cmd("SET", "k", "v")
    assert raw.cmd("GETRANGE", "k", "a", "1") == "ERR value is not an integer or out of range"
    assert raw.cmd("GETRANGE", "k", "0") == "ERR wrong number of arguments for 'getrange' command"


def test_setrange(r):
    r.set("k", "Hello World")
    assert r.setrange("k", 6, "Redis") == 11
    assert r.get("k") == "Hello Redis"


def test_setrange_pads_with_zero_bytes(rb):
    assert rb.setrange("k", 5, b"x") == 6
    assert rb.get("k") == b"\x00\x00\x00\x00\x00x"
    rb.set("s", b"ab")
    assert rb.setrange("s", 4, b"cd") == 6
    assert rb.get("s") == b"ab\x00\x00cd"


def test_setrange_empty_value(r):
    assert r.setrange("missing", 10, "") == 0
    assert r.exists("missing") == 0
    r.set("k", "abc")
    assert r.setrange("k", 10, "") == 3
    assert r.get("k") == "abc"


def test_setrange_errors(raw):
    raw.cmd("SET", "k", "abc")
    assert raw.cmd("SETRANGE", "k", "-1", "x") == "ERR offset is out of range"
    assert raw.cmd("SETRANGE", "k", "536870912", "x") == \
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    assert raw.cmd("SETRANGE", "k", "536870911", "xx") == \
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    assert raw.cmd("SETRANGE", "k", "abc", "x") == "ERR value is not an integer or out of range"
    assert raw.cmd("GET", "k") == b"abc"


def test_setrange_redis_py_messages(r):
    assert resp_error(r.setrange, "k", -1, "x") == "offset is out of range"
    assert resp_error(r.setrange, "k", 536870912, "x") == \
        "string exceeds maximum allowed size (proto-max-bulk-len)"


# ---------------------------------------------------------------------------------------------------- binary safety, size

def test_binary_keys_and_values(rb):
    k = b"key\x00with\r\nnul"
    v = b"\x00\x01\x02\r\n\xff\xfe value \r\n\x00"
    assert rb.set(k, v) is True
    assert rb.get(k) == v
    assert rb.strlen(k) == len(v)
    assert rb.exists(k) == 1
    assert rb.get(b"key") is None
    assert rb.append(k, b"\x00") == len(v) + 1
    assert rb.getrange(k, 0, 2) == b"\x00\x01\x02"


def test_all_byte_values(rb):
    v = bytes(range(256))
    rb.set(b"bytes", v)
    assert rb.get(b"bytes") == v
    rb.mset({bytes([i]): bytes([i]) * 3 for i in range(256)})
    assert rb.mget([bytes([i]) for i in range(256)]) == [bytes([i]) * 3 for i in range(256)]


def test_large_value(rb):
    v = bytes(range(256)) * 4096 + b"tail"  # 1 MiB + 4 bytes
    assert rb.set(b"big", v) is True
    assert rb.get(b"big") == v
    assert rb.strlen(b"big") == len(v)
    assert rb.append(b"big", v) == 2 * len(v)
    assert rb.getrange(b"big", len(v) - 4, len(v) + 1) == b"tail\x00\x01"


def test_large_value_4mb(rb):
    v = b"x" * (4 * 1024 * 1024 + 7)
    assert rb.set(b"big", v) is True
    assert rb.get(b"big") == v


def test_large_key(rb):
    k = b"k" * 100000
    rb.set(k, b"v")
    assert rb.get(k) == b"v"
    assert rb.delete(k) == 1


# ---------------------------------------------------------------------------------------------------- encodings

def test_object_encoding_int(r):
    r.set("n", 12345)
    assert r.object("encoding", "n") == "int"
    r.set("neg", -42)
    assert r.object("encoding", "neg") == "int"
    r.set("max", MAXI)
    assert r.object("encoding", "max") == "int"


def test_object_encoding_embstr(r):
    r.set("s", "hello")
    assert r.object("encoding", "s") == "embstr"
    r.set("s44", "x" * 44)
    assert r.object("encoding", "s44") == "embstr"
    # not a canonical integer representation
    r.set("lz", "0123")
    assert r.object("encoding", "lz") == "embstr"
    r.set("big", "99999999999999999999")
    assert r.object("encoding", "big") == "embstr"


def test_object_encoding_raw(r):
    r.set("s45", "x" * 45)
    assert r.object("encoding", "s45") == "raw"
    r.set("a", "hello")
    r.append("a", "x")
    assert r.object("encoding", "a") == "raw"


def test_object_encoding_after_incr(r):
    r.set("n", "10")
    r.incr("n")
    assert r.object("encoding", "n") == "int"
