"""Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO (Redis 7.0 semantics)."""

import pytest

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOTINT = "ERR value is not an integer or out of range"
BIT_OFFSET = "ERR bit offset is not an integer or out of range"
BIT_VALUE = "ERR bit is not an integer or out of range"
BF_TYPE = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."


def test_setbit_getbit(r, rb):
    assert r.setbit("b", 7, 1) == 0
    assert r.setbit("b", 7, 1) == 1
    assert rb.get("b") == b"\x01"
    assert r.setbit("b", 100, 1) == 0
    assert r.strlen("b") == 13
    assert r.getbit("b", 100) == 1
    assert r.getbit("b", 99) == 0
    assert r.getbit("b", 100000) == 0
    assert r.getbit("missing", 5) == 0
    assert r.setbit("b", 7, 0) == 1
    assert r.getbit("b", 7) == 0


def test_setbit_on_int_encoded_and_keeps_ttl(r, rb):
    r.set("n", "12")                 # "1" = 0x31, "2" = 0x32
    assert r.getbit("n", 2) == 1
    assert r.setbit("n", 0, 1) == 0
    assert rb.get("n") == b"\xb12"
    r.set("t", "x", ex=100)
    r.setbit("t", 30, 1)
    assert 0 < r.ttl("t") <= 100


def test_setbit_getbit_errors(r, raw):
    c = raw
    assert c.cmd("SETBIT", "b", "-1", "1") == BIT_OFFSET
    assert c.cmd("SETBIT", "b", "x", "1") == BIT_OFFSET
    assert c.cmd("SETBIT", "b", "4294967296", "1") == BIT_OFFSET
    assert c.cmd("SETBIT", "b", "0", "2") == BIT_VALUE
    assert c.cmd("SETBIT", "b", "0", "x") == BIT_VALUE
    assert c.cmd("GETBIT", "b", "-1") == BIT_OFFSET
    assert c.cmd("GETBIT", "b", "1.5") == BIT_OFFSET
    r.lpush("l", "a")
    assert c.cmd("SETBIT", "l", "0", "1") == WRONGTYPE
    assert c.cmd("SETBIT", "l", "0", "2") == BIT_VALUE      # arguments are checked first
    assert c.cmd("GETBIT", "l", "0") == WRONGTYPE
    assert r.exists("b") == 0


def test_offset_limit_follows_proto_max_bulk_len(r, raw):
    c = raw
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    try:
        r.config_set("proto-max-bulk-len", 1048576)
        assert c.cmd("SETBIT", "b", str(8 * 1048576), "1") == BIT_OFFSET
        assert c.cmd("BITFIELD", "b", "SET", "u8", "#1048576", "1") == BIT_OFFSET
        assert c.cmd("SETBIT", "b", str(8 * 1048576 - 1), "1") == 0
        assert r.strlen("b") == 1048576
    finally:
        r.config_set("proto-max-bulk-len", old)


def test_bitcount(r, raw):
    c = raw
    r.set("s", "foobar")
    assert r.bitcount("s") == 26
    assert r.bitcount("s", 0, 0) == 4
    assert r.bitcount("s", 1, 1) == 6
    assert r.bitcount("s", -2, -1) == 7
    assert r.bitcount("s", 5, 30) == 4
    assert c.cmd("BITCOUNT", "s", "1", "1", "BYTE") == 6
    assert c.cmd("BITCOUNT", "s", "5", "30", "BIT") == 17
    assert c.cmd("BITCOUNT", "s", "-200", "-100") == 4     # both clamp to byte 0
    assert c.cmd("BITCOUNT", "s", "-100", "-200") == 0     # negative start > end: empty
    assert c.cmd("BITCOUNT", "s", "3", "1") == 0
    assert c.cmd("BITCOUNT", "s", "-1", "-1", "bit") == 0
    assert c.cmd("BITCOUNT", "missing") == 0
    r.set("e", "")
    assert c.cmd("BITCOUNT", "e", "0", "-1") == 0


def test_bitcount_errors(r, raw):
    c = raw
    r.set("s", "foobar")
    assert c.cmd("BITCOUNT", "s", "0") == SYNTAX
    assert c.cmd("BITCOUNT", "s", "1", "2", "3", "4") == SYNTAX
    assert c.cmd("BITCOUNT", "s", "0", "1", "foo") == SYNTAX
    assert c.cmd("BITCOUNT", "s", "x", "1", "foo") == NOTINT   # start/end before the unit
    assert c.cmd("BITCOUNT", "missing", "0") == 0               # 7.0: a missing key answers first
    r.lpush("l", "a")
    assert c.cmd("BITCOUNT", "l") == WRONGTYPE
    assert c.cmd("BITCOUNT", "l", "0", "x") == WRONGTYPE


def test_bitcount_large(r, rb):
    data = bytes((i * 37) & 0xFF for i in range(100003))
    rb.set("big", data)
    assert r.bitcount("big") == sum(bin(x).count("1") for x in data)
    assert rb.execute_command("BITCOUNT", "big", 13, 99999, "BIT") == \
        sum((data[i >> 3] >> (7 - (i & 7))) & 1 for i in range(13, 100000))


def test_bitpos(r, rb, raw):
    c = raw
    rb.set("f", b"\xff\xf0\x00")
    assert r.bitpos("f", 0) == 12
    assert r.bitpos("f", 1) == 0
    assert r.bitpos("f", 1, 2) == -1
    assert r.bitpos("f", 0, 0, 0) == -1                      # end given: no clear bit in range
    rb.set("ones", b"\xff\xff")
    assert r.bitpos("ones", 0) == 16                          # end not given: padded with zeros
    assert r.bitpos("ones", 0, 0) == 16
    assert r.bitpos("ones", 0, 1) == 16
    assert r.bitpos("ones", 0, 0, -1) == -1
    assert c.cmd("BITPOS", "ones", "0", "3", "BIT") == NOTINT  # "BIT" taken as end
    assert c.cmd("BITPOS", "ones", "0", "3", "-1", "BIT") == -1
    assert c.cmd("BITPOS", "f", "0", "3", "-1", "bit") == 12
    assert c.cmd("BITPOS", "f", "1", "3", "11", "bit") == 3
    assert c.cmd("BITPOS", "f", "1", "12", "-1", "BIT") == -1
    assert c.cmd("BITPOS", "f", "1", "-100", "-200") == 0     # no empty-range shortcut, both clamp to 0
    assert c.cmd("BITPOS", "f", "0", "5") == -1               # start past the end
    assert r.bitpos("missing", 0) == 0
    assert r.bitpos("missing", 1) == -1
    r.set("e", "")
    assert r.bitpos("e", 0) == -1
    assert r.bitpos("e", 1) == -1
    rb.set("long", b"\x00" * 1000 + b"\x02")
    assert r.bitpos("long", 1) == 8006
    assert r.bitpos("long", 1, 500) == 8006
    assert c.cmd("BITPOS", "long", "1", "4001", "8006", "BIT") == 8006


def test_bitpos_errors(r, raw):
    c = raw
    r.set("s", "foobar")
    assert c.cmd("BITPOS", "s", "2") == "ERR The bit argument must be 1 or 0."
    assert c.cmd("BITPOS", "s", "x") == NOTINT
    assert c.cmd("BITPOS", "missing", "x") == NOTINT
    assert c.cmd("BITPOS", "missing", "1", "x") == -1         # 7.0: a missing key answers before the range
    assert c.cmd("BITPOS", "s", "1", "x") == NOTINT
    assert c.cmd("BITPOS", "s", "1", "0", "x") == NOTINT
    assert c.cmd("BITPOS", "s", "1", "0", "x", "foo") == SYNTAX  # unit checked before end
    assert c.cmd("BITPOS", "s", "1", "0", "1", "bit", "x") == SYNTAX
    r.lpush("l", "a")
    assert c.cmd("BITPOS", "l", "1") == WRONGTYPE
    assert c.cmd("BITPOS", "l", "3") == "ERR The bit argument must be 1 or 0."


def test_bitop(r, rb, raw):
    c = raw
    rb.set("a", b"\xff\x0f\xaa")
    rb.set("b", b"\x0f")
    assert r.bitop("AND", "d", "a", "b") == 3
    assert rb.get("d") == b"\x0f\x00\x00"
    assert r.bitop("OR", "d", "a", "b") == 3
    assert rb.get("d") == b"\xff\x0f\xaa"
    assert r.bitop("XOR", "d", "a", "b", "missing") == 3
    assert rb.get("d") == b"\xf0\x0f\xaa"
    assert r.bitop("NOT", "d", "b") == 1
    assert rb.get("d") == b"\xf0"
    assert c.cmd("BITOP", "and", "a", "a", "b") == 3        # destination among the sources
    assert rb.get("a") == b"\x0f\x00\x00"
    r.set("n", "12")
    assert r.bitop("OR", "d", "n") == 2
    assert rb.get("d") == b"12"
    big = bytes(range(256)) * 41
    rb.set("x", big)
    rb.set("y", big[::-1])
    assert r.bitop("XOR", "d", "x", "y") == len(big)
    assert rb.get("d") == bytes(p ^ q for p, q in zip(big, big[::-1]))


def test_bitop_empty_result_deletes_dest(r):
    r.set("d", "old", ex=100)
    assert r.bitop("OR", "d", "m1", "m2") == 0
    assert r.exists("d") == 0
    r.lpush("d", "x")
    r.set("e", "")
    assert r.bitop("NOT", "d", "e") == 0
    assert r.exists("d") == 0
    r.lpush("d", "x")
    r.set("s", "a")
    assert r.bitop("AND", "d", "s") == 1      # overwrites a non-string destination
    assert r.type("d") == "string"
    r.set("d2", "v", ex=100)
    r.bitop("OR", "d2", "s")
    assert r.ttl("d2") == -1


def test_bitop_errors(r, raw):
    c = raw
    r.set("s", "a")
    r.lpush("l", "x")
    assert c.cmd("BITOP", "NOT", "d", "s", "s") == "ERR BITOP NOT must be called with a single source key."
    assert c.cmd("BITOP", "NAND", "d", "s") == SYNTAX
    assert c.cmd("BITOP", "AND", "d", "s", "l") == WRONGTYPE
    assert c.cmd("BITOP", "AND", "d") == "ERR wrong number of arguments for 'bitop' command"
    assert r.exists("d") == 0


def test_bitfield_basic(r, rb, raw):
    c = raw
    assert c.cmd("BITFIELD", "k", "SET", "i8", "0", "100", "GET", "i8", "0") == [0, 100]
    assert c.cmd("BITFIELD", "k", "INCRBY", "i8", "0", "27", "GET", "u8", "0") == [127, 127]
    assert c.cmd("BITFIELD", "k", "INCRBY", "i8", "0", "1") == [-128]          # WRAP by default
    assert c.cmd("BITFIELD", "k", "SET", "u4", "#1", "15", "GET", "u16", "0") == [0, 0x8F00]
    assert rb.get("k") == b"\x8f"
    assert c.cmd("BITFIELD", "k", "GET", "u8", "1000") == [0]
    assert r.strlen("k") == 1
    assert c.cmd("BITFIELD", "k") == []
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "SAT") == []
    assert c.cmd("BITFIELD", "missing", "GET", "i64", "0") == [0]
    assert r.exists("missing") == 0
    assert c.cmd("BITFIELD", "w", "SET", "i64", "3", "-2", "GET", "i64", "3", "GET", "u63", "3") == \
        [0, -2, (1 << 63) - 1]
    assert r.strlen("w") == 9
    assert c.cmd("BITFIELD", "w", "get", "i8", "0", "get", "u8", "8") == [31, 255]
    assert c.cmd("BITFIELD", "w", "GET", "I8", "0") == BF_TYPE          # the type letter is lower case only
    assert c.cmd("BITFIELD", "w", "GET", "U8", "0") == BF_TYPE


def test_bitfield_overflow(r, raw):
    c = raw
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u2", "0", "10", "INCRBY", "i4", "4", "-100") == \
        [3, -8]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "WRAP", "INCRBY", "u2", "0", "1") == [0]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "4", "GET", "u2", "0") == [None, 0]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "i8", "8", "128", "SET", "i8", "8", "127") == \
        [None, 0]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "8", "-1", "GET", "u8", "8") == [127, 255]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "WRAP", "SET", "i8", "8", "300", "GET", "i8", "8") == [-1, 44]
    assert c.cmd("BITFIELD", "k", "OVERFLOW", "SAT", "SET", "i8", "8", "-9223372036854775808", "GET", "i8", "8") \
        == [44, 127]
    assert c.cmd("BITFIELD", "k64", "OVERFLOW", "SAT", "SET", "i64", "0", "-9223372036854775808",
                 "INCRBY", "i64", "0", "-1", "INCRBY", "i64", "0", "9223372036854775807") == \
        [0, -9223372036854775808, -1]
    assert c.cmd("BITFIELD", "k64", "OVERFLOW", "WRAP", "SET", "i64", "0", "9223372036854775807",
                 "INCRBY", "i64", "0", "1") == [-1, -9223372036854775808]
    assert c.cmd("BITFIELD", "k64", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1") == [-9223372036854775808]
    assert c.cmd("BITFIELD", "z", "OVERFLOW", "SAT", "INCRBY", "u63", "0", "-1") == [0]
    # FAIL still creates the key, as Redis does
    assert c.cmd("BITFIELD", "new", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "10") == [None]
    assert r.exists("new") == 1


def test_bitfield_errors(r, raw):
    c = raw
    r.set("s", "foobar")
    assert c.cmd("BITFIELD", "s", "GET", "i65", "0") == BF_TYPE
    assert c.cmd("BITFIELD", "s", "GET", "u64", "0") == BF_TYPE
    assert c.cmd("BITFIELD", "s", "GET", "i0", "0") == BF_TYPE
    assert c.cmd("BITFIELD", "s", "GET", "x8", "0") == BF_TYPE
    assert c.cmd("BITFIELD", "s", "GET", "u8", "-1") == BIT_OFFSET
    assert c.cmd("BITFIELD", "s", "GET", "u8", "#-1") == BIT_OFFSET
    assert c.cmd("BITFIELD", "s", "GET", "u8", "#x") == BIT_OFFSET
    assert c.cmd("BITFIELD", "s", "GET", "u8", "#288230376151711744") == BIT_OFFSET
    assert c.cmd("BITFIELD", "s", "GET") == SYNTAX
    assert c.cmd("BITFIELD", "s", "GET", "u8", "0", "OVERFLOW") == SYNTAX
    assert c.cmd("BITFIELD", "s", "SET", "u8", "0") == SYNTAX
    assert c.cmd("BITFIELD", "s", "FOO", "u8", "0") == SYNTAX
    assert c.cmd("BITFIELD", "s", "OVERFLOW", "foo") == "ERR Invalid OVERFLOW type specified"
    assert c.cmd("BITFIELD", "s", "SET", "u8", "0", "x") == NOTINT
    assert c.cmd("BITFIELD", "s", "INCRBY", "u8", "0", "1.5") == NOTINT
    r.lpush("l", "a")
    assert c.cmd("BITFIELD", "l", "GET", "u8", "0") == WRONGTYPE
    assert c.cmd("BITFIELD", "l", "SET", "u8", "0", "1") == WRONGTYPE
    assert c.cmd("BITFIELD", "l", "SET", "u8", "0", "x") == NOTINT
    assert r.get("s") == "foobar"


def test_bitfield_ro(r, raw):
    c = raw
    r.set("s", "foobar")
    assert c.cmd("BITFIELD_RO", "s", "GET", "u8", "0", "GET", "i4", "#3") == [ord("f"), -1]
    assert c.cmd("BITFIELD_RO", "s", "GET", "u8", "0", "OVERFLOW", "FAIL") == [ord("f")]
    assert c.cmd("BITFIELD_RO", "s") == []
    assert c.cmd("BITFIELD_RO", "missing", "GET", "u8", "0") == [0]
    assert c.cmd("BITFIELD_RO", "s", "SET", "u8", "0", "1") == "ERR BITFIELD_RO only supports the GET subcommand"
    assert c.cmd("BITFIELD_RO", "s", "GET", "u8", "0", "INCRBY", "u8", "0", "1") == \
        "ERR BITFIELD_RO only supports the GET subcommand"
    assert c.cmd("BITFIELD_RO", "s", "GET", "u64", "0") == BF_TYPE
    r.lpush("l", "a")
    assert c.cmd("BITFIELD_RO", "l", "GET", "u8", "0") == WRONGTYPE
    assert r.get("s") == "foobar"


def test_bitmap_commands_in_command_info(raw):
    info = raw.cmd("COMMAND", "INFO", "setbit", "bitop", "bitfield_ro")
    assert [x[1] for x in info] == [4, -4, -2]
    assert info[1][3:6] == [2, -1, 1]
