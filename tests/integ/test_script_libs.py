"""Lua libraries of the scripts' sandbox (issue 17): `struct` and `cmsgpack` (written in Ruvio from their formats)
and `bit` (LuaJIT's).  Every expectation is redis-server 7.0's output for the same script, byte for byte: the
file runs in reference mode too."""
import random
import re

import pytest
import redis


# (script, Redis 7.0's reply; ("ERR", text) for an error, the script's sha left out)
CASES = [
    ("return struct.pack('>I', 1)",
     b'\x00\x00\x00\x01'),
    ("return struct.pack('<i', -2)",
     b'\xfe\xff\xff\xff'),
    ("return struct.pack('>bBhHlLT', -1, 255, -300, 65535, -5, 7, 9)",
     b'\xff\xff\xfe\xd4\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfb\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\t'),
    ("return struct.pack('>i3', -2)",
     b'\xff\xff\xfe'),
    ("return struct.pack('!>bi4', 1, 2)",
     b'\x01\x00\x00\x00\x00\x00\x00\x02'),
    ("return struct.pack('!2<bd', 1, 2.5)",
     b'\x01\x00\x00\x00\x00\x00\x00\x00\x04@'),
    ("return struct.pack('<fd', 1.5, -0.1)",
     b'\x00\x00\xc0?\x9a\x99\x99\x99\x99\x99\xb9\xbf'),
    ("return struct.pack('>s', 'abc')",
     b'abc\x00'),
    ("return struct.pack('c5', 'abcdefg')",
     b'abcde'),
    ("return struct.pack('>Ic0', 3, 'xyz')",
     b'\x00\x00\x00\x03xyz'),
    ("return struct.pack('x x')",
     b'\x00\x00'),
    ("return {struct.unpack('>I', '\\0\\0\\1\\2')}",
     [258, 5]),
    ("return {struct.unpack('<h', '\\255\\255')}",
     [-1, 3]),
    ("return {struct.unpack('>bB', '\\255\\255')}",
     [-1, 255, 3]),
    ("return {struct.unpack('>Ic0', '\\0\\0\\0\\3xyzw')}",
     [b'xyz', 8]),
    ("return {struct.unpack('s', 'ab\\0cd')}",
     [b'ab', 4]),
    ("return {struct.unpack('>I', '\\0\\0\\0\\1\\0\\0\\0\\2', 5)}",
     [2, 9]),
    ("return {struct.unpack('<d', struct.pack('<d', 2.5))}",
     [2, 9]),
    ("return {struct.unpack('!>bi', struct.pack('!>bi', 7, -9))}",
     [7, -9, 9]),
    ("return struct.size('>iIbhd')",
     19),
    ("return struct.size('!idb')",
     17),
    ("return struct.size('c7')",
     7),
    ("return {pcall(struct.size, 's')}",
     [None, b"bad argument #1 to '?' (option 's' has no fixed size)"]),
    ("return {pcall(struct.pack, 'z', 1)}",
     [None, b"bad argument #1 to '?' (invalid format option 'z')"]),
    ("return {pcall(struct.unpack, '>I', 'ab')}",
     [None, b"bad argument #2 to '?' (data string too short)"]),
    ("return {pcall(struct.pack, 'i33', 1)}",
     [None, b'integral size 33 is larger than limit of 32']),
    ("return {pcall(struct.pack, '!3i', 1)}",
     [None, b'alignment 3 is not a power of 2']),
    ("return {pcall(struct.unpack, 's', 'abc')}",
     [None, b'unfinished string in data']),
    ("return {pcall(struct.unpack, 'c0', 'abc')}",
     [None, b"format 'c0' needs a previous size"]),
    ("return {pcall(struct.pack, 'c5', 'ab')}",
     [None, b"bad argument #3 to '?' (string too short)"]),
    ('return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)',
     b'\x01\xff\x7f\xcc\x80\xcc\xff\xcd\x01\x00\xcd\xff\xff\xce\x00\x01\x00\x00\xce\xff\xff\xff\xff\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xe0\xd0\xdf\xd0\x80\xd1\xff\x7f\xd1\x80\x00\xd2\xff\xff\x7f\xff\xd2\x80\x00\x00\x00\xd3\xff\xff\xff\xff\x7f\xff\xff\xff'),
    ('return cmsgpack.pack(1.5, 0.1, -2.25, 1e300, true, false, nil)',
     b'\xca?\xc0\x00\x00\xcb?\xb9\x99\x99\x99\x99\x99\x9a\xca\xc0\x10\x00\x00\xcb~7\xe4<\x88\x00u\x9c\xc3\xc2\xc0'),
    ("return cmsgpack.pack('', 'abc', string.rep('x', 31), string.rep('y', 32), string.rep('z', 256))",
     b'\xa0\xa3abc\xbfxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xd9 yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\xda\x01\x00zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'),
    ("local p = cmsgpack.pack(string.rep('w', 65535), string.rep('v', 65536)) return {#p, p:sub(1, 8), p:sub(65537, 65545), redis.sha1hex(p)}",
     [131079, b'\xda\xff\xffwwwww', b'ww\xdb\x00\x01\x00\x00vv', b'4636957b7a48eefa0c892c910eabf9b123da5ee2']),
    ('return cmsgpack.pack({}, {1, 2, 3}, {a=1}, {1, nil, 3}, {[2]=1}, {{{1}}})',
     b'\x90\x93\x01\x02\x03\x81\xa1a\x01\x82\x01\x01\x03\x03\x81\x02\x01\x91\x91\x91\x01'),
    ('return cmsgpack.pack({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16})',
     b'\xdc\x00\x10\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10'),
    ('local t = {} local c = t for i=1,20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)',
     b'\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0'),
    ("return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, {x='y'}, true, 1.5))}",
     [1, b'a', [1, 2], [], 1, 1]),
    ('return cmsgpack.unpack(cmsgpack.pack({1,2,{3}}))',
     [1, 2, [3]]),
    ('return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}',
     [1, 1]),
    ('return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}',
     [2, 2]),
    ('return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}',
     [-1, 3]),
    ('return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}',
     [2, 1, 2]),
    ('return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5, 1)}',
     [-1, 2, 3]),
    ("return {pcall(cmsgpack.unpack, '\\205\\1')}",
     [None, b'Missing bytes in input.']),
    ("return {pcall(cmsgpack.unpack, '\\193')}",
     [None, b'Bad data format in input.']),
    ('return {pcall(cmsgpack.pack)}',
     [None, b"bad argument #0 to '?' (MessagePack pack needs input.)"]),
    ("return {pcall(cmsgpack.unpack_one, 'a', 5)}",
     [None, b'Start offset 5 greater than input length 1.']),
    ("return {cmsgpack.unpack('\\196\\3abc\\217\\1d\\208\\255\\209\\255\\0\\211\\255\\255\\255\\255\\255\\255\\255\\255\\207\\0\\0\\0\\0\\0\\0\\1\\0')}",
     ('ERR', 'user_script:1: Bad data format in input. script: <sha>')),
    ('return cmsgpack.unpack(cmsgpack.pack(1e300)) == 1e300',
     1),
    ('return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(3, 1), bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.tohex(255), bit.tohex(-1, 4), bit.tobit(2^32 + 5), bit.rol(1, 33), bit.bswap(0x12345678)}',
     [15, 3, 2, -1, -2147483648, 15, -16, b'000000ff', b'ffff', 5, 2, 2018915346]),
]


@pytest.mark.parametrize("script, want", CASES, ids=[str(i) for i in range(len(CASES))])
def test_same_bytes_as_redis(server, script, want):
    c = server.client(decode_responses=False)
    try:
        got = c.eval(script, 0)
    except redis.exceptions.ResponseError as e:
        got = ("ERR", re.sub(r"script: [0-9a-f]{40}, on @user_script:1\.", "script: <sha>", str(e)))
    finally:
        c.close()
    assert got == want


def test_libraries_are_read_only(r):
    for lib in ("struct", "cmsgpack", "bit"):
        msg = str(pytest.raises(redis.exceptions.ResponseError, r.eval, "%s.pack = nil" % lib, 0).value)
        assert "Attempt to modify a readonly table" in msg


def test_cmsgpack_round_trip_in_a_function(server):
    c = server.client()
    c.function_flush()
    try:
        c.function_load("#!lua name=mp\nredis.register_function('mp_store', function(keys, args)\n"
                        "  redis.call('set', keys[1], cmsgpack.pack({args[1], tonumber(args[2])}))\n"
                        "  local v = cmsgpack.unpack(redis.call('get', keys[1])) return {v[1], v[2] * 2}\n"
                        "end)")
        assert c.fcall("mp_store", 1, "mpk", "name", 21) == ["name", 42]
        assert c.execute_command("STRLEN", "mpk") == 7     # 0x92 0xa4 'name' 0x15
        assert c.fcall("mp_store", 1, "mpk", "x", -1.5) == ["x", -3]
    finally:
        c.function_flush()
        c.close()


def test_deep_or_garbage_input_is_an_error_not_a_crash(r):
    deep = "return {pcall(cmsgpack.unpack, string.rep(string.char(0x91), 100000) .. string.char(1))}"
    assert r.eval(deep, 0) == [None, "stack overflow (in function mp_decode_to_lua_array)"]
    rnd = random.Random(17)
    script = ("local ok1 = pcall(cmsgpack.unpack, ARGV[1]) local ok2 = pcall(cmsgpack.unpack_limit, ARGV[1], 3, 1) "
              "local ok3 = pcall(struct.unpack, ARGV[2], ARGV[1]) local ok4 = pcall(struct.pack, ARGV[2], 1, 'ab') "
              "local ok5 = pcall(struct.size, ARGV[2]) return 1")
    for _ in range(300):
        data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
        fmt = "".join(rnd.choice("<>!=xbBhHlLTiIfdsc0123456789 z") for _ in range(rnd.randrange(8)))
        assert r.eval(script, 0, data, fmt) == 1
    assert r.ping() is True
