"""WAL records (issue 14, findings 4 and 9): a checkpoint never splits a record; recovery cuts a gap in the
unsynced tail and refuses damage to records a later sync barrier proves were synced.

Every test starts real ruvio processes on a data directory it owns and restarts them on it."""
import glob
import os
import signal
import struct

import pytest

from conftest import encode_command, poll_until

pytestmark = pytest.mark.ruvio_only


def start(start_server, d, mode, *extra):
    return start_server("--dir", str(d), "--durability", mode, *extra)


def kill9(srv):
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=5)
    no_sanitizer_report(srv)


def no_sanitizer_report(srv):
    out = srv.stderr() + srv.stdout()
    assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out[-3000:]


@pytest.mark.parametrize("mode", ["always", "everysec"])
def test_flushall_in_exec_while_checkpoint_runs(start_server, tmp_path, mode):
    # FLUSHALL restarts a running checkpoint, which starts a new WAL segment; inside EXEC the transaction's
    # record is still open then. It must end up whole in one segment, and the restart must come after it.
    srv = start(start_server, tmp_path, mode)
    c = srv.client()
    c.mset({"k%d" % i: "v" for i in range(2000)})
    raw = srv.raw()
    raw.send(b"".join(encode_command(*a) for a in (
        ("BGSAVE",), ("MULTI",), ("SET", "a", "1"), ("FLUSHALL",), ("SET", "b", "2"), ("INCR", "n"),
        ("EXEC",), ("SET", "after", "3"))))
    replies = [raw.read_reply() for _ in range(8)]
    assert replies[0] == "Background saving started"
    assert replies[6] == ["OK", "OK", "OK", 1]
    poll_until(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0, what="checkpoint done")
    assert c.info("persistence")["rdb_last_bgsave_status"] == "ok"
    c.incr("n")
    want = {"b": "2", "n": "2", "after": "3"}
    kill9(srv)
    srv2 = start(start_server, tmp_path, mode)
    c2 = srv2.client()
    assert {k: c2.get(k) for k in c2.keys("*")} == want
    # and once more from the checkpoint the restart wrote
    c2.save()
    srv2.stop()
    srv3 = start(start_server, tmp_path, mode)
    c3 = srv3.client()
    assert {k: c3.get(k) for k in c3.keys("*")} == want



def test_bgsave_inside_exec_starts_once_the_record_is_sealed(start_server, tmp_path):
    # With the automatic trigger off, BGSAVE inside EXEC used to wait for it: the checkpoint never ran.
    srv = start(start_server, tmp_path, "everysec", "--checkpoint_wal_bytes", "0")
    c = srv.client()
    p = c.pipeline(transaction=True)
    p.set("x", "1")
    p.bgsave()
    p.incr("n")
    assert p.execute() == [True, True, 1]
    poll_until(lambda: c.info("persistence")["rdb_saves"] == 1, what="the checkpoint asked for in EXEC")
    ckpts = glob.glob(str(tmp_path / "shard-0" / "ckpt-*.ckpt"))
    assert [os.path.basename(x) for x in ckpts] == ["ckpt-%020d.ckpt" % 1]   # it covers the EXEC record
    kill9(srv)
    c2 = start(start_server, tmp_path, "everysec").client()
    assert c2.get("x") == "1" and c2.get("n") == "1"

BARRIER = 0x80000000
SEG_HDR, REC_HDR = 32, 24


def records(path):
    """(offset, raw length field) of each record of a segment, up to its zero tail."""
    data = open(path, "rb").read()
    off, out = SEG_HDR, []
    while off + REC_HDR <= len(data):
        raw = struct.unpack_from("<I", data, off)[0]
        if raw == 0:
            break
        out.append((off, raw))
        off += REC_HDR + (raw & ~BARRIER)
    return out


def twelve_acknowledged_writes(start_server, d):
    """always: one SET per wave, each written after the previous one was synced (so each has the barrier);
    then kill -9. Returns the last segment's path."""
    srv = start(start_server, d, "always")
    c = srv.client()
    for i in range(1, 13):
        c.set("k%d" % i, "v")
    kill9(srv)
    seg = sorted(glob.glob(str(d / "shard-0" / "wal-*.log")))[-1]
    recs = records(seg)
    assert len(recs) == 12 and all(raw & BARRIER for _, raw in recs), recs
    return seg, recs


def patch(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def test_gap_in_the_unsynced_tail_is_cut_as_torn(start_server, tmp_path):
    # Records 9..12 as one wave that power loss caught before its sync: no barrier after its first record,
    # and the page of record 10 never reached the disk while 11 and 12 did.
    seg, recs = twelve_acknowledged_writes(start_server, tmp_path)
    for off, raw in recs[9:]:
        patch(seg, off, struct.pack("<I", raw & ~BARRIER))
    off10, raw10 = recs[9]
    patch(seg, off10, bytes(REC_HDR + (raw10 & ~BARRIER)))
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    assert sorted(c.keys("*"), key=lambda k: int(k[1:])) == ["k%d" % i for i in range(1, 10)]
    assert c.info("persistence")["loading_torn_tails"] == 1
    log = srv.stderr() + srv.stdout()
    assert "torn record at offset %d" % off10 in log, log[-2000:]
    assert "2 well-formed records (LSN 11..12) with no sync barrier" in log, log[-2000:]
    c.set("after", "1")          # the log continues at LSN 10
    kill9(srv)
    srv2 = start(start_server, tmp_path, "always")
    assert srv2.client().dbsize() == 10


def test_damage_before_a_sync_barrier_refuses_to_start(start_server, tmp_path):
    seg, recs = twelve_acknowledged_writes(start_server, tmp_path)
    off5, raw5 = recs[4]
    patch(seg, off5, bytes(REC_HDR + (raw5 & ~BARRIER)))   # record 6 onwards carry barriers: 5 was synced
    srv = start_server("--dir", str(tmp_path), "--durability", "always", expect_fail=True)
    assert srv.returncode not in (None, 0)
    log = srv.stderr() + srv.stdout()
    assert "is corrupt at offset %d" % off5 in log, log[-2000:]


def test_unsynced_stretch_across_a_rotation_is_cut_and_the_last_segment_set_aside(start_server, tmp_path):
    # Power loss soon after a rotation: the end of the segment before the last and all of the last one were
    # never synced (no barriers there), and a page of the former was lost.
    srv = start(start_server, tmp_path, "always", "--wal_segment_bytes", "4096")
    c = srv.client()
    for i in range(1, 241):
        c.set("k%d" % i, "v" * 20)
    kill9(srv)
    segs = sorted(glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert len(segs) >= 3, segs
    seg_a, seg_b = segs[-2], segs[-1]
    first_a = int(os.path.basename(seg_a)[4:24])
    recs_a, recs_b = records(seg_a), records(seg_b)
    assert len(recs_a) >= 3 and recs_b, (recs_a, recs_b)
    j = len(recs_a) - 2
    for off, raw in recs_a[j:]:
        patch(seg_a, off, struct.pack("<I", raw & ~BARRIER))
    for off, raw in recs_b:
        patch(seg_b, off, struct.pack("<I", raw & ~BARRIER))
    off_j, raw_j = recs_a[j]
    patch(seg_a, off_j, bytes(REC_HDR + (raw_j & ~BARRIER)))
    srv2 = start(start_server, tmp_path, "always", "--wal_segment_bytes", "4096")
    c2 = srv2.client()
    kept = first_a + j - 1
    assert c2.dbsize() == kept and c2.exists("k%d" % kept) and not c2.exists("k%d" % (kept + 1))
    log = srv2.stderr() + srv2.stdout()
    assert "torn record at offset %d" % off_j in log and "set aside" in log, log[-2000:]
    assert os.path.exists(seg_b + ".discarded") and not os.path.exists(seg_b)
    c2.set("after", "1")
    kill9(srv2)
    assert start(start_server, tmp_path, "always", "--wal_segment_bytes", "4096").client().dbsize() == kept + 1


def _ckpt_records(path):
    """Records of a checkpoint file before its end record (header 48 bytes; a record: u32 length with the
    sync-barrier bit, u32 crc, u64 lsn, u64 time, then the payload, whose first byte is its kind)."""
    with open(path, "rb") as f:
        data = f.read()
    off, n = 48, 0
    while off + 24 <= len(data):
        ln = struct.unpack_from("<I", data, off)[0] & 0x7FFFFFFF
        if data[off + 24] == 2:               # WAL_P_END
            return n
        n += 1
        off += 24 + ln
    raise AssertionError("no end record in %s" % path)


def test_a_long_key_is_split_across_records(start_server, tmp_path):
    """Finding 11, the other half: a key whose rebuild commands pass 32 MB goes on in further records, in a
    checkpoint and in a full sync's frames, so no key meets the record length limit (2 GiB) or a replica's
    repl-frame-limit; the records rebuild it exactly (restart and replica digests)."""
    d = tmp_path / "p"
    p = start(start_server, d, "everysec")
    c = p.client()
    big = "x" * (1 << 20)
    for i in range(40):                       # 40 MB of fields in one hash: two records
        c.hset("h", "f%d" % i, big + str(i))
    c.rpush("l", *range(100))
    c.set("s", "v")
    assert c.save()
    ckpt = sorted(glob.glob(str(d / "shard-0" / "*.ckpt")))[-1]
    assert _ckpt_records(ckpt) == 4           # h twice, l, s (one record per key before)
    digest = c.execute_command("DEBUG", "DIGEST")
    r = start_server("--replicaof", "127.0.0.1 %d" % p.port).client()
    poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
               what="replica link up")
    poll_until(lambda: r.execute_command("DEBUG", "DIGEST") == digest, timeout=10, what="replica digest")
    assert r.hlen("h") == 40 and r.hget("h", "f39") == big + "39"
    p.stop()
    again = start(start_server, d, "everysec")
    assert again.client().execute_command("DEBUG", "DIGEST") == digest
    no_sanitizer_report(again)
