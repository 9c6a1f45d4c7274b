"""Redis data in (issue 19, point 4): RESTORE takes the payloads of Redis's DUMP for every type, MIGRATE from a
Redis node works, and ruvio-rdb turns a Redis RDB file into commands for `redis-cli --pipe`.

Every payload and RDB file is made at test time by Debian's redis-server 7.0 (nothing is copied into the
repo), except those of encodings Redis 7 no longer writes (ziplist, zipmap, the first quicklist, text
scores), which are built here from their documented layouts. In reference mode the target is a redis-server
too, so the expectations are Redis's own."""

import os
import struct
import subprocess

import pytest
import redis

from conftest import HOST, REDIS_BIN, TIMEOUT, launch

pytestmark = pytest.mark.skipif(not os.path.exists(REDIS_BIN), reason="needs Debian's redis-server")


def _redis():
    return launch(argv=[REDIS_BIN, "--port", "{port}", "--bind", HOST, "--save", "", "--appendonly", "no",
                        "--dir", "{dir}"])


@pytest.fixture(scope="module")
def source():
    srv = _redis()
    try:
        yield srv
    finally:
        srv.stop()


def _client(port):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT)


def fill(c):
    """One key of every type and encoding Redis 7.0 writes."""
    c.flushall()
    c.set("str:embstr", "hello")
    c.set("str:int", "12345")
    c.set("str:neg", "-7")
    c.set("str:lzf", "abc" * 40000)               # compressed by DUMP (LZF)
    c.set("str:bin", bytes(range(256)) * 3)
    c.rpush("list:lp", "a", "1", "bb", str(2 ** 40), "-3", "")
    c.rpush("list:quick", *[("e%d" % i) * 10 for i in range(3000)])
    c.rpush("list:plain", "x" * 20000, "y")        # a node holding one big element
    c.sadd("set:intset", 1, 2, 3, -5, 2 ** 40)
    c.sadd("set:hash", "a", "b", "c")
    c.sadd("set:big", *["m%d" % i for i in range(1000)])
    c.zadd("zset:lp", {"a": 1.5, "b": 2, "c": -1e300, "d": float("inf"), "e": float("-inf")})
    c.zadd("zset:skip", {"m%d" % i: i * 0.1 for i in range(1000)})
    c.hset("hash:lp", mapping={"f1": "v1", "f2": "12", "3": "x", "empty": ""})
    c.hset("hash:ht", mapping={"f%d" % i: "v" * i for i in range(600)})
    c.xadd("stream:s", {"a": "1", "b": "2"})
    c.xadd("stream:s", {"a": "3", "b": "4"})           # same fields as the master entry
    c.xadd("stream:s", {"c": "5"}, id="999999999999999-1")
    for i in range(300):
        c.xadd("stream:many", {"n": i, "s": "str%d" % i})
    c.xdel("stream:many", *[e[0] for e in c.xrange("stream:many", count=10)])
    c.xadd("stream:empty", {"f": "v"})
    c.xdel("stream:empty", c.xrange("stream:empty")[0][0])


def same_value(a, b, k):
    t = a.type(k)
    assert b.type(k) == t, k
    if t == b"string":
        return a.get(k) == b.get(k)
    if t == b"list":
        return a.lrange(k, 0, -1) == b.lrange(k, 0, -1)
    if t == b"set":
        return a.smembers(k) == b.smembers(k)
    if t == b"zset":
        return a.zrange(k, 0, -1, withscores=True) == b.zrange(k, 0, -1, withscores=True)
    if t == b"hash":
        return a.hgetall(k) == b.hgetall(k)
    if t == b"stream":
        return a.xrange(k) == b.xrange(k) and a.xlen(k) == b.xlen(k)
    raise AssertionError("unexpected type %r" % t)


def test_restore_takes_every_redis_7_payload(source, r, rb):
    src = _client(source.port)
    fill(src)
    keys = sorted(src.keys())
    assert len(keys) == 18
    for k in keys:
        assert r.restore(k, 0, src.dump(k)) in ("OK", b"OK"), k
    for k in keys:
        assert same_value(src, rb, k), k
    # the last id is kept: a smaller explicit id is refused, as on the source
    for c in (src, rb):
        with pytest.raises(redis.ResponseError) as e:
            c.xadd("stream:empty", {"f": "v"}, id="1-1")
        assert "equal or smaller" in str(e.value)
    # TTL, REPLACE and BUSYKEY work as for any payload
    d = src.dump("str:embstr")
    with pytest.raises(redis.ResponseError) as e:
        r.restore("str:embstr", 0, d)
    assert str(e.value) == "BUSYKEY Target key name already exists."
    assert r.restore("str:embstr", 5000, d, replace=True) == "OK"
    assert 0 < r.pttl("str:embstr") <= 5000


def _payload(type_byte, body, version=9):
    """A DUMP payload as Redis builds it: type, value, RDB version, CRC-64 (Jones, reflected) of all before."""
    data = bytes([type_byte]) + body + struct.pack("<H", version)
    return data + struct.pack("<Q", _crc64(data))


def _crc64_table():
    poly, tab = 0x95AC9329AC4BC9B5, []
    for i in range(256):
        v = i
        for _ in range(8):
            v = (v >> 1) ^ poly if v & 1 else v >> 1
        tab.append(v)
    return tab


_TAB = _crc64_table()


def _crc64(data, crc=0):
    for b in data:
        crc = _TAB[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def test_crc64_is_redis_one():
    assert _crc64(b"123456789") == 0xE9C6D914C4B8D9CA   # the check value Redis's crc64 test uses


def _rdb_str(b):
    assert len(b) < 64
    return bytes([len(b)]) + b


def _ziplist(items):
    """Redis 6's ziplist: zlbytes, zltail, zllen, entries (prevlen, encoding, data), 0xFF."""
    entries, prev, offs = b"", 0, []
    for it in items:
        if isinstance(it, int):
            if 0 <= it <= 12:
                enc = bytes([0xF1 + it])
            elif -128 <= it < 128:
                enc = b"\xfe" + struct.pack("<b", it)
            elif -2 ** 15 <= it < 2 ** 15:
                enc = b"\xc0" + struct.pack("<h", it)
            elif -2 ** 31 <= it < 2 ** 31:
                enc = b"\xd0" + struct.pack("<i", it)
            else:
                enc = b"\xe0" + struct.pack("<q", it)
        else:
            enc = (bytes([len(it)]) if len(it) < 64 else struct.pack(">H", 0x4000 | len(it))) + it
        e = (bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)) + enc
        offs.append(len(entries))
        entries += e
        prev = len(e)
    tail = 10 + (offs[-1] if offs else 0)
    total = 10 + len(entries) + 1
    return struct.pack("<IIH", total, tail, len(items)) + entries + b"\xff"


def _blob(b):
    """An RDB string of any length (6-bit, 14-bit or 32-bit length)."""
    if len(b) < 64:
        return bytes([len(b)]) + b
    if len(b) < 16384:
        return struct.pack(">H", 0x4000 | len(b)) + b
    return b"\x80" + struct.pack(">I", len(b)) + b


OLD_ENCODINGS = [
    # (what, type, body, the value it must become)
    ("list as a linked list", 1, b"\x03" + _rdb_str(b"a") + _rdb_str(b"b") + b"\xc0\x07", ["a", "b", "7"]),
    ("list as a ziplist", 10, _blob(_ziplist([b"x", 5, -300, 2 ** 40, b"y" * 100])),
     ["x", "5", "-300", str(2 ** 40), "y" * 100]),
    ("list as a quicklist of ziplists", 14,
     b"\x02" + _blob(_ziplist([b"a", 1])) + _blob(_ziplist([b"b", 70000])), ["a", "1", "b", "70000"]),
    ("hash as a ziplist", 13, _blob(_ziplist([b"f1", b"v1", b"n", 42])), {"f1": "v1", "n": "42"}),
    ("hash as a zipmap", 9, _blob(b"\x02" + b"\x02f1\x02\x00v1" + b"\x01g\x03\x01abcZ" + b"\xff"),
     {"f1": "v1", "g": "abc"}),
    ("hash as a table", 4, b"\x01" + _rdb_str(b"k") + _rdb_str(b"v"), {"k": "v"}),
    ("zset as a ziplist", 12, _blob(_ziplist([b"a", b"1.5", b"b", 3])), [("a", 1.5), ("b", 3.0)]),
    ("zset with text scores", 3, b"\x02" + _rdb_str(b"m") + b"\x032.5" + _rdb_str(b"n") + b"\xfe",
     [("m", 2.5), ("n", float("inf"))]),
    ("set as a table", 2, b"\x02" + _rdb_str(b"p") + _rdb_str(b"q"), {"p", "q"}),
]


@pytest.mark.parametrize("what,typ,body,want", OLD_ENCODINGS, ids=[x[0] for x in OLD_ENCODINGS])
def test_restore_takes_redis_6_encodings(r, what, typ, body, want):
    assert r.restore("old", 0, _payload(typ, body, version=9)) == "OK"
    t = r.type("old")
    if t == "list":
        assert r.lrange("old", 0, -1) == want
    elif t == "hash":
        assert r.hgetall("old") == want
    elif t == "zset":
        assert r.zrange("old", 0, -1, withscores=True) == want
    else:
        assert t == "set" and r.smembers("old") == want


@pytest.mark.parametrize("payload,err", [
    (_payload(0, _rdb_str(b"v"))[:-1] + bytes([_payload(0, _rdb_str(b"v"))[-1] ^ 1]),
     "DUMP payload version or checksum are wrong"),
    (_payload(0, _rdb_str(b"v"), version=200), "DUMP payload version or checksum are wrong"),
    (_payload(10, _blob(struct.pack("<I", 99) + _ziplist([b"x"])[4:])), "Bad data format"),  # zlbytes lies
    (_payload(0, b"\xc3\x05\x10" + b"\x01ab"), "Bad data format"),      # LZF that does not give 16 bytes
    # Redis reads a value that runs past its end into the payload's trailer, and ignores bytes after it;
    # Ruvio refuses both
    pytest.param(_payload(0, b"\x05ab"), "Bad data format", marks=pytest.mark.ruvio_only),   # 5 said, 2 given
    pytest.param(_payload(2, b"\x02" + _rdb_str(b"p")), "Bad data format", marks=pytest.mark.ruvio_only),
    pytest.param(_payload(0, _rdb_str(b"v") + b"junk"), "Bad data format", marks=pytest.mark.ruvio_only),
])
def test_restore_refuses_bad_redis_payloads(r, payload, err):
    with pytest.raises(redis.ResponseError) as e:
        r.restore("bad", 0, payload)
    assert str(e.value) == err
    assert r.exists("bad") == 0


def test_migrate_from_a_redis_node(source, server):
    src = _client(source.port)
    fill(src)
    src.pexpire("str:int", 60000)
    keys = sorted(k.decode() for k in src.keys())
    want = {k: src.dump(k) for k in keys}
    before = {k: src.type(k) for k in keys}
    assert src.execute_command("MIGRATE", server.host, server.port, "", 0, TIMEOUT * 1000,
                               "COPY", "KEYS", *keys) == b"OK"
    dst = _client(server.port)
    for k in keys:
        assert dst.type(k) == before[k]
        assert same_value(src, dst, k), k
    assert 0 < dst.pttl("str:int") <= 60000
    assert want == {k: src.dump(k) for k in keys}    # COPY: the source keeps them
    # without COPY the source deletes what the target took
    assert src.execute_command("MIGRATE", server.host, server.port, "str:embstr", 0, TIMEOUT * 1000,
                               "REPLACE") == b"OK"
    assert src.exists("str:embstr") == 0 and dst.get("str:embstr") == b"hello"


@pytest.mark.ruvio_only  # ruvio-rdb is Ruvio's tool
def test_ruvio_rdb_loads_a_redis_rdb_file(source, server):
    tool = os.path.join(os.path.dirname(os.environ.get("RUVIO_BIN", "build/ruvio")), "ruvio-rdb")
    if not os.path.exists(tool):
        pytest.skip("ruvio-rdb is not built next to ruvio")
    src = _client(source.port)
    fill(src)
    src.set("ttl", "x", px=100000)
    src.function_load("#!lua name=lib\nredis.register_function('f', function() return 1 end)", replace=True)
    src.save()
    rdb = os.path.join(source.datadir, "dump.rdb")
    chk = subprocess.run([tool, "--check", rdb], capture_output=True, text=True, timeout=TIMEOUT)
    assert chk.returncode == 0, chk.stderr
    assert chk.stdout.startswith("keys 19 (expired, left out: 0; other slots: 0), databases 1, functions 1"), chk.stdout
    out = subprocess.run([tool, rdb], capture_output=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    # the commands, run as redis-cli --pipe would (here without FUNCTION LOAD where it is not built yet)
    dst = _client(server.port)
    cmds = _parse_resp_commands(out.stdout)
    assert [c[0] for c in cmds].count(b"RESTORE") == 19
    for c in cmds:
        if c[0] == b"FUNCTION":
            continue
        assert dst.execute_command(*c) in (b"OK", True)
    for k in src.keys():
        assert same_value(src, dst, k), k
    assert 0 < dst.pttl("ttl") <= 100000
    # --slots: one shard's share
    from redis.crc import key_slot
    half = subprocess.run([tool, "--slots", "0-8191", rdb], capture_output=True, timeout=TIMEOUT)
    got = sorted(c[1] for c in _parse_resp_commands(half.stdout) if c[0] == b"RESTORE")
    assert got == sorted(k for k in src.keys() if key_slot(k) <= 8191) and 0 < len(got) < 19
    # a corrupt file is refused before anything is written
    data = open(rdb, "rb").read()
    bad = os.path.join(source.datadir, "bad.rdb")
    with open(bad, "wb") as f:
        f.write(data[:len(data) // 2])
    out = subprocess.run([tool, bad], capture_output=True, timeout=TIMEOUT)
    assert out.returncode == 2 and out.stderr.startswith(b"ruvio-rdb: ")
    with open(bad, "wb") as f:
        f.write(data[:-1] + bytes([data[-1] ^ 1]))
    out = subprocess.run([tool, bad], capture_output=True, timeout=TIMEOUT)
    assert out.returncode == 2 and b"wrong checksum" in out.stderr and out.stdout == b""


def _parse_resp_commands(data):
    cmds, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b"*"
        j = data.index(b"\r\n", i)
        n, i = int(data[i + 1:j]), j + 2
        argv = []
        for _ in range(n):
            j = data.index(b"\r\n", i)
            ln = int(data[i + 1:j])
            argv.append(data[j + 2:j + 2 + ln])
            i = j + 2 + ln + 2
        cmds.append(argv)
    return cmds


def fill_groups(c, key="stream:g"):
    """A stream with consumer groups: pending entries (one delivered three times, one whose entry was deleted),
    a consumer without pending entries, a group without consumers."""
    for i in range(5):
        c.xadd(key, {"n": i}, id="%d-1" % (i + 1))
    c.xgroup_create(key, "g1", id="0")
    c.xgroup_create(key, "g2", id="2-1")
    c.xreadgroup("g1", "alice", {key: ">"}, count=3)
    c.xreadgroup("g1", "bob", {key: ">"}, count=1)
    c.xgroup_createconsumer(key, "g1", "carol")
    for _ in range(2):
        c.xclaim(key, "g1", "alice", 0, ["2-1"])
    c.xack(key, "g1", "3-1")
    c.xdel(key, "1-1")


def _pairs(v):
    return {v[i]: v[i + 1] for i in range(0, len(v), 2)} if isinstance(v, list) else dict(v)


def _xinfo_full(c, key):
    """XINFO STREAM FULL's groups, each consumer keeping only the fields Redis 7.0 has."""
    info = _pairs(c.execute_command("XINFO", "STREAM", key, "FULL"))
    groups = []
    for g in info["groups"]:
        g = _pairs(g)
        g["consumers"] = [{k: v for k, v in _pairs(x).items() if k in ("name", "seen-time", "pel-count", "pending")}
                          for x in g["consumers"]]
        groups.append(g)
    return info["length"], info["last-generated-id"], groups


def test_restore_takes_a_redis_stream_with_groups(source, r):
    src = redis.Redis(host=HOST, port=source.port, socket_timeout=TIMEOUT, decode_responses=True)
    src.flushall()
    fill_groups(src)
    assert r.restore("stream:g", 0, src.dump("stream:g")) == "OK"
    assert _xinfo_full(r, "stream:g") == _xinfo_full(src, "stream:g")
    for g in ("g1", "g2"):
        assert r.xinfo_groups("stream:g") == src.xinfo_groups("stream:g")
        assert r.xpending("stream:g", g) == src.xpending("stream:g", g)
        got = r.xpending_range("stream:g", g, "-", "+", 10)
        want = src.xpending_range("stream:g", g, "-", "+", 10)
        strip = lambda v: [(e["message_id"], e["consumer"], e["times_delivered"]) for e in v]
        assert strip(got) == strip(want) and len(want) == (3 if g == "g1" else 0)
        # delivery times are kept: the idle times agree within the time the test took
        for a, b in zip(got, want):
            assert abs(a["time_since_delivered"] - b["time_since_delivered"]) < TIMEOUT * 1000
    # the group works on: a new entry is delivered, a pending one acknowledged
    assert r.xack("stream:g", "g1", "2-1") == 1
    r.xadd("stream:g", {"n": 9}, id="9-1")
    assert r.xreadgroup("g1", "bob", {"stream:g": ">"}) == [["stream:g", [("5-1", {"n": "4"}), ("9-1", {"n": "9"})]]]


# ---------------------------------------------------------------------------------------------------------------
# A Redis RDB file loaded at start-up (dir/dbfilename, as Redis): Redis loads its own dump.rdb the same way, so
# the first test runs against both.

LIB = "#!lua name=rdblib\nredis.register_function('rdbf', function() return 7 end)"


def _make_rdb(source, dest, dbs=(0, 3), expiring=True):
    """Fills the source (every type, a stream with groups, TTLs, databases `dbs`, a function library, a key that
    will have expired when loaded), saves it and copies its dump.rdb into dest; returns the expired key's
    deadline (s, monotonic) or 0."""
    import shutil
    import time
    src = _client(source.port)
    fill(src)
    fill_groups(src)
    src.set("ttl", "x", px=100000)
    src.function_load(LIB, replace=True)
    for db in dbs:
        if db != 0:
            c = redis.Redis(host=HOST, port=source.port, db=db, socket_timeout=TIMEOUT)
            c.hset("h%d" % db, mapping={"f": "v%d" % db})
            c.set("s%d" % db, "in %d" % db, px=200000)
    until = 0
    if expiring:
        src.set("soon", "gone", px=1500)
        until = time.monotonic() + 1.5
    src.save()
    os.makedirs(dest, exist_ok=True)
    shutil.copy(os.path.join(source.datadir, "dump.rdb"), os.path.join(dest, "dump.rdb"))
    return until


def _wait_past(until):
    import time
    while time.monotonic() < until + 0.1:   # wall time for the key's deadline to pass, not a server event
        time.sleep(0.05)


def test_rdb_file_loads_at_start_up(source, start_server, tmp_path):
    d = str(tmp_path / "data")
    _wait_past(_make_rdb(source, d))
    srv = start_server("--dir", d)
    src, dst = _client(source.port), _client(srv.port)
    keys = sorted(src.keys())
    assert b"soon" not in keys and len(keys) == 20
    assert sorted(dst.keys()) == keys
    for k in keys:
        assert same_value(src, dst, k), k
    assert 50000 < dst.pttl("ttl") <= 100000   # (kept, not restarted: generous for a loaded machine)
    for db in (3,):
        a = redis.Redis(host=HOST, port=source.port, db=db, socket_timeout=TIMEOUT)
        b = redis.Redis(host=HOST, port=srv.port, db=db, socket_timeout=TIMEOUT)
        assert sorted(b.keys()) == sorted(a.keys()) == [b"h3", b"s3"]
        assert b.hgetall("h3") == {b"f": b"v3"} and 150000 < b.pttl("s3") <= 200000
    s, t = srv.client(), source.client()
    assert _xinfo_full(s, "stream:g") == _xinfo_full(t, "stream:g")
    assert s.xpending("stream:g", "g1") == t.xpending("stream:g", "g1")
    assert s.fcall("rdbf", 0) == 7


def _shard_port(srv, n, key):
    from redis.crc import key_slot
    slot = key_slot(key.encode() if isinstance(key, str) else key)
    return next(srv.port + i for i in range(n) if i * 16384 // n <= slot <= (i + 1) * 16384 // n - 1)


@pytest.mark.ruvio_only  # shards, and a restart that must not load the file again (Redis reloads dump.rdb)
def test_rdb_file_loads_once_into_shards(source, start_server, tmp_path):
    d = str(tmp_path / "data")
    _wait_past(_make_rdb(source, d, dbs=(0,)))
    src = _client(source.port)
    keys = sorted(k.decode() for k in src.keys())
    srv = start_server("--dir", d, "--shards", 3, "--appendonly", "yes")
    log = srv.stdout() + srv.stderr()
    assert "database 0: %d keys loaded" % len(keys) in log, log
    sizes = [srv.client(port=srv.port + i).dbsize() for i in range(3)]
    assert sum(sizes) == len(keys) and all(sizes), sizes     # every shard got its share
    for k in keys:
        c = redis.Redis(host=HOST, port=_shard_port(srv, 3, k), socket_timeout=TIMEOUT)
        assert same_value(src, c, k), k
    g = srv.client(port=_shard_port(srv, 3, "stream:g"))
    assert _xinfo_full(g, "stream:g") == _xinfo_full(source.client(), "stream:g")
    # changes after the load survive a restart, and the file is not loaded again
    srv.client(port=_shard_port(srv, 3, "str:int")).delete("str:int")
    srv.client(port=_shard_port(srv, 3, "new")).set("new", "1")
    srv.stop()
    again = start_server("--dir", d, "--shards", 3, "--appendonly", "yes")
    assert "the data directory holds data already" in again.stdout() + again.stderr()
    assert sum(again.client(port=again.port + i).dbsize() for i in range(3)) == len(keys)
    assert again.client(port=_shard_port(again, 3, "str:int")).exists("str:int") == 0
    assert again.client(port=_shard_port(again, 3, "new")).get("new") == "1"
    assert 0 < again.client(port=_shard_port(again, 3, "ttl")).pttl("ttl") <= 100000


@pytest.mark.ruvio_only  # Redis refuses to start on a corrupt dump.rdb too, with its own message
def test_rdb_file_refused_when_corrupt_or_out_of_reach(source, start_server, tmp_path):
    d = str(tmp_path / "data")
    _make_rdb(source, d, expiring=False)
    path = os.path.join(d, "dump.rdb")
    good = open(path, "rb").read()
    # keys in database 3 on a node of several shards (database 0 only): refused, nothing written
    srv = start_server("--dir", d, "--shards", 2, expect_fail=True, exit_timeout=TIMEOUT)
    assert srv.returncode == 1
    assert "keys in databases this node lacks" in srv.stderr(), srv.stderr()
    for bad, why in ((good[:len(good) // 2], "malformed value at byte"),
                     (good[:-1] + bytes([good[-1] ^ 1]), "wrong checksum")):
        with open(path, "wb") as f:
            f.write(bad)
        srv = start_server("--dir", d, expect_fail=True, exit_timeout=TIMEOUT)
        assert srv.returncode == 1, why
        err = srv.stderr()
        assert "dump.rdb: " in err and why in err and "refusing to start" in err, err
        assert not any(n.startswith("shard-") and os.listdir(os.path.join(d, n)) and
                       any(f.startswith("ckpt-") for f in os.listdir(os.path.join(d, n)))
                       for n in os.listdir(d)), "a refused file left a checkpoint"
    # turned off: the node starts empty and leaves the file alone
    srv = start_server("--dir", d, "--rdb-load-at-start", "no")
    assert srv.client().dbsize() == 0
    assert open(path, "rb").read() == bad
    # a replica does not load it (it syncs from its primary)
    with open(path, "wb") as f:
        f.write(good)
    import shutil
    os.makedirs(str(tmp_path / "rep"))
    shutil.copy(path, str(tmp_path / "rep" / "dump.rdb"))
    primary = start_server()
    rep = start_server("--dir", str(tmp_path / "rep"), "--replicaof", primary.host, primary.port)
    assert "this node is a replica" in rep.stdout() + rep.stderr()
    assert rep.client().dbsize() == 0


def _stream_with_group(consumers=True):
    """A Redis 7.0 stream payload (type 19) built by hand: entry 5-0 added and deleted, group g at 5-0 with
    5-0 pending (delivered twice, at a fixed time), owned by consumer c, or by no one."""
    rid = struct.pack(">QQ", 5, 0)
    # nodes, length, last id, first id, max deleted id, entries added
    body = b"\x00\x00" + b"\x05\x00" + b"\x00\x00" + b"\x05\x00" + b"\x01"
    body += b"\x01" + _rdb_str(b"g") + b"\x05\x00" + b"\x01"                     # a group: name, last id, entries-read
    body += b"\x01" + rid + struct.pack("<q", 1700000000000) + b"\x02"         # its PEL
    if consumers:
        body += b"\x01" + _rdb_str(b"c") + struct.pack("<q", 1700000001000) + b"\x01" + rid
    else:
        body += b"\x00"
    return _payload(19, body, version=10)


def test_restore_takes_a_hand_made_stream_group(r):
    assert r.restore("sg", 0, _stream_with_group()) == "OK"
    assert r.xlen("sg") == 0
    assert r.xpending("sg", "g") == {"pending": 1, "min": "5-0", "max": "5-0",
                                     "consumers": [{"name": "c", "pending": 1}]}
    e = r.xpending_range("sg", "g", "-", "+", 10)
    assert [(x["message_id"], x["consumer"], x["times_delivered"]) for x in e] == [("5-0", "c", 2)]
    import time
    assert abs(e[0]["time_since_delivered"] - (time.time() * 1000 - 1700000000000)) < 60000


@pytest.mark.ruvio_only  # Redis checks a PEL entry's owner only with sanitize-dump-payload yes
def test_restore_refuses_a_pending_entry_without_owner(r):
    with pytest.raises(redis.ResponseError) as e:
        r.restore("sg", 0, _stream_with_group(consumers=False))
    assert str(e.value) == "Bad data format"
    assert r.exists("sg") == 0


@pytest.mark.ruvio_only  # RUVIO_FAILPOINT: a kill between two shards' checkpoints of the load
def test_rdb_load_interrupted_is_redone(source, start_server, tmp_path):
    d = str(tmp_path / "data")
    _make_rdb(source, d, dbs=(0,), expiring=False)
    src = _client(source.port)
    keys = sorted(k.decode() for k in src.keys())
    env = dict(os.environ, RUVIO_FAILPOINT="rdbload-ckpt")
    srv = start_server("--dir", d, "--shards", 3, "--appendonly", "yes", env=env, expect_fail=True,
                       exit_timeout=TIMEOUT)
    assert srv.returncode == 77, srv.stderr()
    assert os.path.exists(os.path.join(d, "rdb-loading"))
    again = start_server("--dir", d, "--shards", 3, "--appendonly", "yes")
    assert "was interrupted" in again.stdout() + again.stderr()
    assert not os.path.exists(os.path.join(d, "rdb-loading"))
    assert sum(again.client(port=again.port + i).dbsize() for i in range(3)) == len(keys)
    for k in keys:   # each key once: lists and streams not doubled
        c = redis.Redis(host=HOST, port=_shard_port(again, 3, k), socket_timeout=TIMEOUT)
        assert same_value(src, c, k), k
