"""What a replication peer says is bounded (issue 14, item 14; docs/replication.md "Trusting the peer").

A fake primary or a fake replica written here speaks the replication protocol (proto/repl.proto, packed by hand:
python3-protobuf is not a dependency) to one real ruvio process: frame lengths, keys_hint and Ack.applied from the
peer never become allocations or positions, and a malformed record closes the link before it reaches the WAL."""

import socket
import struct
import threading
import time

import pytest

from conftest import HOST, poll_until

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]

REPLID = "ab" * 20


# ---- protobuf, by hand (field numbers from proto/repl.proto) ----

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def f_int(no, v):
    return varint(no << 3) + varint(v) if v else b""


def f_bytes(no, v):
    if isinstance(v, str):
        v = v.encode()
    return varint(no << 3 | 2) + varint(len(v)) + v


def msg(no, body):
    """One framed ReplMsg whose oneof field `no` holds body: u32 little-endian length, then the message."""
    m = f_bytes(no, body)
    return struct.pack("<I", len(m)) + m


def welcome():
    return msg(2, f_bytes(1, REPLID) + f_int(2, 1) + f_int(4, 1))


def cont(from_lsn):
    return msg(3, f_bytes(1, REPLID) + f_int(2, 1) + f_int(3, from_lsn))


def full_begin(lsn, keys_hint):
    return msg(4, f_bytes(1, REPLID) + f_int(2, 1) + f_int(3, lsn) + f_int(4, keys_hint))


def full_chunk(frames):
    return msg(5, f_bytes(1, frames))


def full_end(lsn, keys):
    return msg(6, f_int(1, lsn) + f_int(2, keys))


def records(first, count, frames):
    return msg(7, f_int(1, first) + f_int(2, count) + f_bytes(3, frames))


def cmd(*args):
    out = varint(len(args))
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += varint(len(a)) + a
    return out


def payload(*cmds, raw=b""):
    """A WAL_P_CMDS payload: kind 1, u32 command count, the commands (raw: bytes appended as they are)."""
    n = len(cmds) + (1 if raw else 0)
    return b"\x01" + struct.pack("<I", n) + b"".join(cmds) + raw


def unsealed(lsn, pay):
    """A record frame as a memory-mode primary ships it: no CRC, WAL_LSN_UNSEALED set (wal/wal.h)."""
    return struct.pack("<IIQq", len(pay), 0, lsn | 1 << 63, int(time.time() * 1000)) + pay


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def sealed(lsn, pay):
    """A record frame as a durable primary ships it: CRC-32C over LSN, timestamp and payload."""
    tail = struct.pack("<Qq", lsn, int(time.time() * 1000)) + pay
    return struct.pack("<II", len(pay), crc32c(tail)) + tail


# ---- a fake primary: one connection at a time, driven by a script ----

class FakePrimary:
    """Listens; for each connection answers the replica's RESP handshake, sends Welcome, reads its Hello and
    then calls script(sock). closed is set when the replica closed the connection (recv returned nothing)."""

    def __init__(self, script):
        self.script = script
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind((HOST, 0))
        self.ls.listen(4)
        self.ls.settimeout(0.2)
        self.port = self.ls.getsockname()[1]
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.hello = threading.Event()
        self.conns = 0
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _read_handshake(self, c):
        got = b""
        while got.count(b"RVSYNC") == 0:
            chunk = c.recv(4096)
            if not chunk:
                raise OSError("closed in the handshake")
            got += chunk
        c.sendall(b"+OK\r\n" * got.count(b"*"))          # one reply per command (REPLCONF, RVSYNC)
        c.sendall(welcome())
        hdr = b""
        while len(hdr) < 4:
            hdr += c.recv(4 - len(hdr))
        n = struct.unpack("<I", hdr)[0]
        body = b""
        while len(body) < n:
            body += c.recv(n - len(body))
        self.hello.set()

    def _run(self):
        while not self.stop.is_set():
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns += 1
            c.settimeout(5)
            try:
                self._read_handshake(c)
                self.script(c)
                while not self.stop.is_set():             # until the replica closes it
                    try:
                        if not c.recv(65536):
                            self.closed.set()
                            break
                    except socket.timeout:
                        continue
            except OSError:
                self.closed.set()
            c.close()

    def close(self):
        self.stop.set()
        self.t.join(10)
        self.ls.close()


@pytest.fixture
def fake_primary():
    made = []

    def make(script):
        f = FakePrimary(script)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


def used_memory(c):
    return c.info("memory")["used_memory"]


def test_replica_grows_a_frame_as_its_bytes_arrive(start_server, fake_primary):
    """A frame that announces 600 MB (under repl-frame-limit) and sends 16 bytes costs the replica about those
    bytes, not 600 MB reserved up front."""
    def script(c):
        c.sendall(struct.pack("<I", 600 << 20) + b"\x3a" + b"\x00" * 15)

    fp = fake_primary(script)
    replica = start_server("--repl-timeout", "60")
    r = replica.client()
    before = used_memory(r)
    r.replicaof(HOST, fp.port)
    assert fp.hello.wait(5)
    time.sleep(0.3)                              # the replica has read the header and the 16 bytes
    assert r.ping() is True
    grew = used_memory(r) - before
    assert grew < 32 << 20, "the replica reserved %d bytes for a frame of 16 bytes" % grew
    assert r.replicaof("no", "one") == "OK"


def test_replica_closes_the_link_on_a_frame_over_the_limit(start_server, fake_primary):
    """A frame length past repl-frame-limit closes the link at once, logged with the limit's name; nothing is
    allocated for it."""
    def script(c):
        c.sendall(struct.pack("<I", 0xFFFFFF00) + b"\x3a\x00")

    fp = fake_primary(script)
    replica = start_server("--repl-timeout", "60")
    r = replica.client()
    before = used_memory(r)
    r.replicaof(HOST, fp.port)
    assert fp.closed.wait(5), "the replica kept a link that announced a 4 GB frame"
    assert r.ping() is True
    assert used_memory(r) - before < 32 << 20
    poll_until(lambda: "repl-frame-limit" in replica.stderr() + replica.stdout(), timeout=5,
               what="the log line naming repl-frame-limit")
    assert r.replicaof("no", "one") == "OK"


def test_replica_bounds_keys_hint(start_server, fake_primary):
    """keys_hint only pre-sizes the table, capped: a primary announcing 2^40 keys and sending one gets a replica
    with that one key, not an allocation of terabytes."""
    frames = unsealed(0, payload(cmd("SET", "hinted", "1")))

    def script(c):
        c.sendall(full_begin(0, 1 << 40) + full_chunk(frames) + full_end(0, 1))

    fp = fake_primary(script)
    replica = start_server()
    r = replica.client()
    before = used_memory(r)
    r.replicaof(HOST, fp.port)
    poll_until(lambda: r.get("hinted") == "1", timeout=5, what="the synced key")
    assert r.dbsize() == 1
    assert used_memory(r) - before < 96 << 20
    assert r.replicaof("no", "one") == "OK"


@pytest.mark.parametrize("frame", [unsealed, sealed])
def test_replica_refuses_a_malformed_record_before_its_wal(start_server, fake_primary, frame):
    """A record whose payload is malformed (one good command, then garbage) closes the link and is not logged
    (the replica's last LSN stays at the good record before it). Unsealed (no CRC), none of its commands runs;
    a sealed one's CRC proves the bytes are the primary's own, so it is not parsed twice (docs/replication.md)."""
    good = frame(1, payload(cmd("SET", "a", "1")))
    bad = frame(2, payload(cmd("SET", "b", "1"), raw=b"\x05\xff\xff"))

    def script(c):
        if fp.conns == 1:
            c.sendall(cont(1) + records(1, 2, good + bad))

    fp = fake_primary(script)
    replica = start_server("--durability", "everysec")
    r = replica.client()
    r.replicaof(HOST, fp.port)
    assert fp.closed.wait(5), "the replica kept the link after a malformed record"
    poll_until(lambda: r.get("a") == "1", timeout=5, what="the good record")
    if frame is unsealed:
        assert r.get("b") is None
    assert r.info("replication")["slave_repl_offset"] == 1
    poll_until(lambda: "malformed payload at LSN 2" in replica.stderr() + replica.stdout(), timeout=5,
               what="the log line")
    assert r.replicaof("no", "one") == "OK"


# ---- a fake replica against a real primary ----

def read_frame(s):
    def exact(n):
        got = b""
        while len(got) < n:
            chunk = s.recv(n - len(got))
            if not chunk:
                raise EOFError("closed")
            got += chunk
        return got
    return exact(struct.unpack("<I", exact(4))[0])


def fake_replica(primary_port, ri):
    """RVSYNC, then a Hello that continues the primary's history (ri: its INFO replication) after its last LSN:
    returns the socket once Continue came."""
    s = socket.create_connection((HOST, primary_port), timeout=5)
    s.sendall(b"*1\r\n$6\r\nRVSYNC\r\n")
    got = b""
    while b"+OK\r\n" not in got:
        got += s.recv(5 - len(got))
    read_frame(s)                                    # Welcome
    hello = (f_bytes(1, "cd" * 20) + f_int(3, 1) + f_bytes(4, ri["master_replid"]) + f_int(5, ri["repl_epoch"]) +
             f_int(6, ri["master_repl_offset"]) + f_int(7, 1))
    s.sendall(msg(1, hello))
    while read_frame(s)[:1] != b"\x1a":              # until Continue (field 3)
        pass
    return s


def test_primary_refuses_an_ack_past_what_it_sent(start_server):
    """An Ack for records never sent closes the link (logged) and never counts for WAIT."""
    primary = start_server()
    p = primary.client()
    p.set("a", "1")
    ri = p.info("replication")
    last = ri["master_repl_offset"]
    s = fake_replica(primary.port, ri)
    try:
        poll_until(lambda: p.info("replication")["connected_slaves"] == 1, timeout=5, what="the link")
        s.sendall(msg(8, f_int(1, last + 1000) + f_int(2, last + 1000)))
        p.set("b", "1")
        assert p.wait(1, 200) == 0
        poll_until(lambda: p.info("replication")["connected_slaves"] == 0, timeout=5,
                   what="the link closed after a bogus ack")
        poll_until(lambda: "past the last record sent" in primary.stderr() + primary.stdout(), timeout=5,
                   what="the log line")
    finally:
        s.close()


def test_primary_takes_an_ack_of_what_it_sent(start_server):
    """The same fake replica acking exactly what it was sent keeps its link and counts for WAIT."""
    primary = start_server()
    p = primary.client()
    p.set("a", "1")
    ri = p.info("replication")
    last = ri["master_repl_offset"]
    s = fake_replica(primary.port, ri)
    try:
        p.set("b", "1")
        s.settimeout(5)
        while True:                                  # the Records message carrying LSN last + 1
            f = read_frame(s)
            if f[:1] == b"\x3a":
                break
        s.sendall(msg(8, f_int(1, last + 1)))
        assert p.wait(1, 2000) == 1
        assert p.info("replication")["connected_slaves"] == 1
    finally:
        s.close()
