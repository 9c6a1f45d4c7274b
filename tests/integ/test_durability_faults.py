"""Durability under faults (issue 4): failpoints, disk full, fsync EIO, corrupt and torn files.

Every test starts its own ruvio processes on a data directory it owns, kills or breaks them, restarts on the
same directory and checks what came back.  The crash-test helpers (pipelined writer, prefix check) live in
tests/crash/crashlib.py, shared with the kill -9 harness tests/crash/kill9.py.  Every wait is bounded.

- failpoints: RUVIO_FAILPOINT=<site> makes the server _exit(77) at that site; after a restart without it the
  keyspace must be exactly k:1..k:m, m <= keys sent, and m >= every key whose +OK was read.
- disk full: the data directory on a small tmpfs (skipped when mount is not permitted); -MISCONF naming
  ENOSPC, reads keep working, the held reply is released and writes resume once space is freed, and every
  acknowledged write survives a kill -9 and restart.
- fsync EIO (RUVIO_FAILPOINT=wal-sync-eio): writes refused with a -MISCONF naming fsync, reads work, INFO says
  why; in always mode no +OK for a write the failed sync should have covered.
- corruption: a bad record in the middle of the WAL, a corrupt length field, a bad segment header, a corrupt
  checkpoint stop start-up with a message naming the file (and offset); --wal_accept_loss yes keeps the valid
  prefix; a torn last record is cut off and counted in loading_torn_tails.
"""
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ConnClosed, RawConn, RespError, poll_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "crash"))
from crashlib import PipelinedWriter, check_prefix  # noqa: E402

pytestmark = pytest.mark.ruvio_only

SEG_HDR = 32
CKPT_HDR = 48
REC_HDR = 24
EXIT_WAIT = 10           # bound on waiting for a failpoint to fire


# --------------------------------------------------------------------------------------------------------------
# helpers

def env_with(**kw):
    env = os.environ.copy()
    env.pop("RUVIO_FAILPOINT", None)
    env.update(kw)
    return env


def start(start_server, d, mode, *extra, env=None, **kw):
    return start_server("--dir", str(d), "--durability", mode, *extra, env=env or env_with(), **kw)


def info(srv):
    c = srv.client()
    try:
        return {k: str(v) for k, v in c.info("persistence").items()}
    finally:
        c.close()


def shard_dir(d):
    return Path(d) / "shard-0"


def segments(d):
    return sorted(shard_dir(d).glob("wal-*.log"))


def checkpoints(d):
    return sorted(shard_dir(d).glob("ckpt-*.ckpt"))


def records(path, hdr=SEG_HDR):
    """(offset, length of the whole record) of every framed record in a segment or checkpoint."""
    data = Path(path).read_bytes()
    out = []
    off = hdr
    while off + REC_HDR <= len(data):
        if data[off:off + REC_HDR] == bytes(REC_HDR):
            break                                  # the zero tail of a pre-zeroed segment
        (n,) = struct.unpack_from("<I", data, off)
        n &= 0x7fffffff                            # the top bit is the sync barrier flag
        if off + REC_HDR + n > len(data):
            break
        out.append((off, REC_HDR + n))
        off += REC_HDR + n
    return out


def flip(path, off, mask=0x40):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ mask]))


def server_output(srv):
    return srv.stderr() + srv.stdout()


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def assert_no_sanitizer_report(*servers):
    for srv in servers:
        out = server_output(srv)
        hits = [m for m in SANITIZER_MARKS if m in out]
        assert not hits, "sanitizer report in %s: %s" % (" ".join(srv.cmdline[:1]), out[-3000:])


def write_keys(srv, n, first=1, batch=1000):
    """SET k:i i for i in first..first+n-1, every one acknowledged; batch commands per round trip."""
    c = srv.client()
    try:
        for lo in range(first, first + n, batch):
            p = c.pipeline(transaction=False)
            for i in range(lo, min(first + n, lo + batch)):
                p.set("k:%d" % i, i)
            assert all(p.execute())
    finally:
        c.close()


def assert_prefix(srv, sent_hi, acked, expect_m=None):
    c = srv.client()
    try:
        m, problems = check_prefix(c, sent_hi)
    finally:
        c.close()
    assert not problems, problems
    assert m >= acked, "acknowledged k:1..k:%d but only k:1..k:%d recovered" % (acked, m)
    if expect_m is not None:
        assert m == expect_m, "expected exactly k:1..k:%d, found k:1..k:%d" % (expect_m, m)
    return m


def assert_recovered(srv, m):
    """The restarted server replayed its WAL: not loading, resumed at the LSN of the last key."""
    inf = info(srv)
    assert inf["loading"] == "0"
    assert int(inf["wal_last_lsn"]) == m, inf          # one record per SET, no checkpoint here
    if m:
        assert int(inf["loading_wal_records"]) + int(inf["loading_keys"]) > 0, inf
    return inf


def make_wal(start_server, d, n, *extra, mode="always", batch=1000):
    """A data directory holding k:1..k:n (one record each), written by a server that then stopped cleanly."""
    srv = start(start_server, d, mode, *extra)
    write_keys(srv, n, batch=batch)
    srv.stop()
    assert srv.proc.returncode == 0, server_output(srv)[-2000:]
    return srv


# --------------------------------------------------------------------------------------------------------------
# failpoints: die at the site, restart without it, the keyspace is a prefix holding every acknowledged key

WAL_SITES = ["wal-append", "wal-sync", "wal-rotate"]
CKPT_SITES = ["ckpt-write", "ckpt-rename"]


@pytest.mark.parametrize("mode", ["always", "everysec"])
@pytest.mark.parametrize("site", WAL_SITES + CKPT_SITES)
def test_failpoint_then_recovery_keeps_a_prefix(start_server, tmp_path, site, mode):
    d = tmp_path / "data"
    extra = ["--wal_segment_bytes", "64kb"] if site == "wal-rotate" else []     # a few waves, then rotate
    srv = start(start_server, d, mode, *extra, env=env_with(RUVIO_FAILPOINT=site))
    w = PipelinedWriter(srv.port, window=256).start()
    try:
        if site in CKPT_SITES:
            # enough keys that the checkpoint writes more than one chunk, then BGSAVE while writing goes on
            assert w.wait_acked(40000, timeout=15), "no progress: acked=%d (%s)" % (w.acked, server_output(srv))
            b = RawConn(srv.host, srv.port, timeout=2)
            try:
                b.send(b"*1\r\n$6\r\nBGSAVE\r\n")
            finally:
                b.close()
        rc = srv.wait_exit(EXIT_WAIT)
    finally:
        w.finish(timeout=5)
    assert rc == 77, "expected the failpoint to exit 77, got %s; acked=%d: %s" % (rc, w.acked,
                                                                               server_output(srv)[-1500:])
    assert "failpoint %s: exiting" % site in server_output(srv)
    assert w.nerrors == 0, w.errors
    if site == "wal-append" or (site == "wal-sync" and mode == "always"):
        # nothing was written (append) / nothing was ever synced (sync, always): nothing may be acknowledged
        assert w.acked == 0, "acked %d writes that were never %s" % (
            w.acked, "written" if site == "wal-append" else "synced")
    if site in CKPT_SITES:
        assert checkpoints(d) == [], "a checkpoint was published although the process died writing it"

    again = start(start_server, d, mode)
    m = assert_prefix(again, w.sent_hi, w.acked, expect_m=0 if site == "wal-append" else None)
    inf = assert_recovered(again, m)
    if site in CKPT_SITES:
        assert inf["checkpoint_lsn"] == "0"
        assert list(shard_dir(d).glob("ckpt-*.tmp")) == [], "the unfinished checkpoint was not removed"
    # the recovered server takes writes and a second restart gives the same keyspace
    c = again.client()
    assert c.set("k:%d" % (m + 1), m + 1)
    c.close()
    again.stop()
    third = start(start_server, d, mode)
    assert_prefix(third, m + 1, m + 1, expect_m=m + 1)
    third.stop()
    assert_no_sanitizer_report(srv, again, third)


@pytest.mark.parametrize("mode", ["everysec", "always"])
def test_replies_flow_while_a_client_keeps_pipelining(start_server, tmp_path, mode):
    """Group commit must release a reply once its own wave is durable, even while the same client keeps
    sending: a client that never pauses must not wait for a moment when the WAL has caught up with it."""
    srv = start(start_server, tmp_path / "data", mode)
    w = PipelinedWriter(srv.port).start()             # no window: never waits for replies
    try:
        first = w.wait_acked(1, timeout=5)
        sent_then = w.sent_hi
        more = first and w.wait_acked(w.acked + 1000, timeout=5)
        still_sending = w._tx.is_alive()
        got = w.acked
    finally:
        w.finish(timeout=5)
    assert w.nerrors == 0, w.errors
    assert first, ("%s: no reply at all within 5 s while the client kept pipelining (k:1..k:%d sent): replies "
                   "wait for the WAL to catch up with everything the client sent since" % (mode, sent_then))
    assert still_sending
    assert more, "%s: replies stopped at k:%d while the client kept pipelining" % (mode, got)


# --------------------------------------------------------------------------------------------------------------
# disk full

@pytest.fixture(params=["tmpfs", "ext4"])
def small_fs(tmp_path, request):
    """A 4 MiB tmpfs, or an 8 MiB ext4 image on a loop device (there, unlike tmpfs, always mode would pre-zero
    segments if there were room: this checks the fallback to growing segments on a real disk filesystem);
    skipped where mount is not permitted.  Unmounted at teardown (lazily if still busy)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if request.param == "tmpfs":
        cmd = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)]
    else:
        img = tmp_path / "fs.img"
        with open(img, "wb") as f:
            f.truncate(8 << 20)
        try:
            mk = subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            pytest.skip("cannot make an ext4 image: %r" % (e,))
        if mk.returncode != 0:
            pytest.skip("cannot make an ext4 image: %s" % mk.stderr.strip())
        cmd = ["mount", "-o", "loop", str(img), str(mnt)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip("cannot mount a tmpfs for the disk-full test: %r" % (e,))
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs for the disk-full test (needs root or CAP_SYS_ADMIN): %s"
                    % (r.stderr.strip() or r.returncode))
    holders = []
    try:
        yield mnt, holders
    finally:
        for srv in holders:              # a server with files open there keeps the mount busy
            srv.stop()
        u = subprocess.run(["umount", str(mnt)], capture_output=True, timeout=10)
        if u.returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)


def fill_leaving(mnt, filler, left):
    st = os.statvfs(mnt)
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize   # root may use reserved blocks
    assert free > left, (free, left)
    filler.write_bytes(b"\0" * (free - left))


def _read_reply_or_full(a, b, deadline):
    """A's next reply, or None once B sees INFO persistence report a WAL write error (A's reply is held)."""
    while time.monotonic() < deadline:
        try:
            return _reply_within(a, 0.2)
        except TimeoutError:
            pass
        if "wal_write_error:none" not in ask(b, "INFO", "persistence").decode():
            return None
    raise AssertionError("neither a reply nor a WAL write error within the deadline")


@pytest.mark.parametrize("mode", ["everysec", "always"])
def test_disk_full_refuses_writes_keeps_reads_and_resumes(start_server, small_fs, mode):
    mnt, holders = small_fs
    d = mnt / "data"
    d.mkdir()
    filler = mnt / "filler"
    fill_leaving(mnt, filler, 1 << 20)              # leaves about 1 MiB for the WAL
    srv = start(start_server, d, mode)
    holders.append(srv)
    a = srv.raw(timeout=5)
    b = srv.raw(timeout=5)
    val = "v" * 1000
    acked = 0
    held = None
    deadline = time.monotonic() + 20
    for i in range(1, 5000):
        a.send(_set("f:%d" % i, val))
        r = _read_reply_or_full(a, b, deadline)
        if r is None:
            held = i
            break
        assert r == "OK", "write %d before the disk filled: %r" % (i, r)
        acked = i
    assert held is not None, "1 MiB free but 5000 writes of 1 KB all fit?"

    # writes on another connection are refused with the cause; reads keep working
    r = ask(b, "SET", "other", "1")
    assert isinstance(r, RespError) and r.startswith("MISCONF") and "No space left on device" in r, r
    assert ask(b, "GET", "f:1") == val.encode()
    assert ask(b, "GET", "f:%d" % acked) == val.encode()
    inf = ask(b, "INFO", "persistence").decode()
    assert "wal_write_error:No space left on device" in inf, inf
    # the write that could not be logged is not acknowledged while the disk is full
    assert a.nothing_pending(wait=0.3), "a reply left before its record was written: %r" % a.buf

    # space comes back: the held reply is released and writes resume without a restart
    filler.unlink()
    r = a.read_reply()
    assert r == "OK", r
    acked = held
    poll_until(lambda: ask(b, "SET", "after", "1") == "OK", timeout=5, what="writes to resume")
    inf = ask(b, "INFO", "persistence").decode()
    assert "wal_write_error:none" in inf, inf
    a.close()
    b.close()

    # every acknowledged write survives a kill -9 and a restart
    srv.proc.send_signal(signal.SIGKILL)
    srv.wait_exit(5)
    again = start(start_server, d, mode)
    holders.append(again)
    c = again.client()
    try:
        for lo in range(1, acked + 1, 500):
            keys = ["f:%d" % i for i in range(lo, min(acked, lo + 499) + 1)]
            vals = c.mget(keys)
            missing = [k for k, v in zip(keys, vals) if v != val]
            assert not missing, "acknowledged writes lost after the restart: %s" % missing[:5]
        assert c.get("after") == "1"
    finally:
        c.close()


def test_checkpoint_on_a_full_disk_fails_cleanly(start_server, small_fs):
    """BGSAVE that runs out of space: the checkpoint fails and is removed, the WAL and the keyspace are intact,
    writes go on once the temporary file is gone, and a restart recovers everything from the WAL."""
    mnt, holders = small_fs
    d = mnt / "data"
    d.mkdir()
    fill_leaving(mnt, mnt / "filler", 3 << 19)                             # ~1.5 MiB left
    srv = start(start_server, d, "always")
    holders.append(srv)
    c = srv.client()
    val = "v" * 1000
    n = 900                                    # ~0.9 MiB of WAL; the checkpoint needs as much again
    for lo in range(1, n + 1, 100):
        p = c.pipeline(transaction=False)
        for i in range(lo, min(n, lo + 99) + 1):
            p.set("f:%d" % i, val)
        assert all(p.execute())
    with pytest.raises(Exception) as ei:
        c.save()
    assert "No space left on device" in str(ei.value), str(ei.value)
    inf = info(srv)
    assert inf["rdb_last_bgsave_status"] == "err", inf
    assert inf["checkpoint_in_progress"] == "0", inf
    assert checkpoints(d) == [] and list(shard_dir(d).glob("*.tmp")) == []
    assert c.get("f:1") == val and c.dbsize() == n
    assert c.set("after", "1")
    c.close()
    srv.proc.send_signal(signal.SIGKILL)
    srv.wait_exit(5)
    again = start(start_server, d, "always")
    holders.append(again)
    c = again.client()
    try:
        assert c.dbsize() == n + 1
        assert c.get("f:%d" % n) == val and c.get("after") == "1"
    finally:
        c.close()


def _set(k, v):
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k.encode(), len(v), v.encode())


def _reply_within(conn, t):
    """conn's next reply if it starts arriving within t seconds; TimeoutError (socket.timeout) otherwise."""
    if b"\r\n" not in conn.buf:
        conn._fill(timeout=t)
    return conn.read_reply()


def ask(conn, *args):
    """conn.cmd(*args), failing with a clear message when the reply does not come within conn's timeout."""
    try:
        return conn.cmd(*args)
    except TimeoutError:
        raise AssertionError("no reply to %s within %ss (the shard holds this connection's reply)"
                             % (" ".join(map(str, args))[:60], conn.timeout)) from None


# --------------------------------------------------------------------------------------------------------------
# fsync EIO

def test_fsync_eio_everysec_refuses_writes_and_keeps_reads(start_server, tmp_path):
    srv = start(start_server, tmp_path / "data", "everysec", env=env_with(RUVIO_FAILPOINT="wal-sync-eio"))
    c = srv.client()
    assert c.set("a", "1")
    poll_until(lambda: info(srv)["wal_fsync_error"] != "none", timeout=5, what="the everysec sync to fail")
    with pytest.raises(Exception) as ei:
        c.set("b", "2")
    msg = str(ei.value)
    assert msg.startswith("MISCONF") and "fsync" in msg, msg
    assert c.get("a") == "1"
    assert c.get("b") is None
    assert c.dbsize() == 1
    inf = info(srv)
    assert inf["wal_fsync_error"] == "Input/output error", inf
    # the logger writes from its own thread: the line may follow the INFO field by a moment
    poll_until(lambda: "fdatasync failed" in server_output(srv), timeout=5, what="the log line")
    # still refused later (no retry that could hide lost data)
    with pytest.raises(Exception) as ei:
        c.incr("n")
    assert "fsync" in str(ei.value)
    c.close()


def test_fsync_eio_always_never_acknowledges_and_keeps_reads(start_server, tmp_path):
    srv = start(start_server, tmp_path / "data", "always", env=env_with(RUVIO_FAILPOINT="wal-sync-eio"))
    a = srv.raw(timeout=5)
    a.send(_set("a", "1"))                      # its sync fails: this write is never durable
    b = srv.raw(timeout=5)
    # the cause is visible and reads answer (on a connection that never wrote)
    poll_until(lambda: "wal_fsync_error:none" not in ask(b, "INFO", "persistence").decode(), timeout=5,
               what="the sync to fail")
    assert ask(b, "GET", "nosuchkey") is None
    r = ask(b, "SET", "b", "2")
    assert isinstance(r, RespError) and r.startswith("MISCONF") and "fsync" in r, r
    # the first write's client never sees +OK: an error, a closed connection or nothing
    try:
        r = _reply_within(a, 0.5)
        assert r != "OK", "+OK for a write whose fsync failed"
    except (TimeoutError, ConnClosed, OSError):
        pass
    a.close()
    b.close()


# --------------------------------------------------------------------------------------------------------------
# corruption and torn tails

N = 300


def test_crc_mismatch_mid_wal_stops_startup_naming_file_and_offset(start_server, tmp_path):
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    recs = records(seg)
    assert len(recs) == N
    off, ln = recs[N // 2]                     # k:151's record
    flip(seg, off + REC_HDR + (ln - REC_HDR) // 2)     # a payload byte
    bad = start(start_server, d, "always", expect_fail=True)
    assert bad.returncode not in (None, 0), "started on a WAL with a corrupt record in the middle"
    out = server_output(bad)
    assert seg.name in out and ("offset %d" % off) in out, out[-2000:]
    assert "wal" in out.lower() and "accept" in out.lower(), out[-2000:]

    srv = start(start_server, d, "always", "--wal_accept_loss", "yes")
    m = assert_prefix(srv, N, 0, expect_m=N // 2)
    assert_recovered(srv, m)
    assert seg.name in server_output(srv)
    # the valid prefix is now the WAL: writes continue from it, and a plain restart works
    c = srv.client()
    assert c.set("k:%d" % (m + 1), m + 1)
    c.close()
    srv.stop()
    again = start(start_server, d, "always")
    assert_prefix(again, m + 1, m + 1, expect_m=m + 1)
    again.stop()
    assert_no_sanitizer_report(bad, srv, again)


def test_corrupt_length_field_mid_wal_is_not_a_torn_tail(start_server, tmp_path):
    """A length field damaged in the middle of the last segment makes the record look longer than the file.
    The records after it were written (and acknowledged): this is corruption, not a torn tail to cut off."""
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    off, _ = records(seg)[N // 2]
    flip(seg, off + 3, 0x10)                    # high byte of the u32 length: now far past the end
    bad = start(start_server, d, "always", expect_fail=True)
    out = server_output(bad)
    assert bad.returncode not in (None, 0), (
        "started (cutting %d acknowledged records as a 'torn tail'): %s" % (N - N // 2, out[-1500:]))
    assert seg.name in out and ("offset %d" % off) in out, out[-2000:]


def test_crc_mismatch_at_the_end_of_an_older_segment_stops_startup(start_server, tmp_path):
    """Only the tail of the last segment may be torn; a bad last record of an older one is corruption."""
    d = tmp_path / "data"
    make_wal(start_server, d, N, "--wal_segment_bytes", "4096", batch=10)
    segs = segments(d)
    assert len(segs) >= 3, segs
    first = segs[0]
    off, ln = records(first)[-1]
    flip(first, off + ln - 1)
    bad = start(start_server, d, "always", "--wal_segment_bytes", "4096", expect_fail=True)
    assert bad.returncode not in (None, 0), "started with a corrupt record at the end of %s" % first.name
    out = server_output(bad)
    assert first.name in out and ("offset %d" % off) in out, out[-2000:]


def test_corrupt_header_of_the_last_segment_stops_startup(start_server, tmp_path):
    """A last segment with records and a damaged header is not 'an empty segment from a crash': deleting it
    would drop acknowledged writes."""
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    size = seg.stat().st_size
    flip(seg, 20)                              # inside the first-LSN field, covered by the header CRC
    bad = start(start_server, d, "always", expect_fail=True)
    out = server_output(bad)
    left = [p.name for p in segments(d)]
    assert bad.returncode not in (None, 0), (
        "started with a damaged segment header (segments now %s, %d acknowledged keys): %s"
        % (left, N, out[-1500:]))
    assert seg.name in out, out[-2000:]
    assert seg.exists() and seg.stat().st_size == size


def test_torn_last_record_is_cut_off_and_counted(start_server, tmp_path):
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    off, ln = records(seg)[-1]
    os.truncate(seg, off + ln - 3)             # the last record (k:300) loses its last bytes
    srv = start(start_server, d, "always")
    inf = info(srv)
    assert inf["loading_torn_tails"] == "1", inf
    m = assert_prefix(srv, N, N - 1, expect_m=N - 1)
    assert_recovered(srv, m)
    out = server_output(srv)
    assert seg.name in out and "torn" in out, out[-2000:]
    assert seg.stat().st_size == off, "the torn record was not cut off the file"
    srv.stop()
    again = start(start_server, d, "always")
    assert info(again)["loading_torn_tails"] == "0"
    assert_prefix(again, N, N - 1, expect_m=N - 1)
    again.stop()
    assert_no_sanitizer_report(srv, again)


def test_zero_filled_tail_is_a_clean_end(start_server, tmp_path):
    """Segments in always mode are pre-zeroed files written in place: zeros after the last record are the
    unwritten rest of the segment, the end of the log, not a torn record.  Recovery gives the space back."""
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    size = seg.stat().st_size
    with open(seg, "ab") as f:                 # what a kill -9 leaves of a pre-zeroed segment
        f.write(b"\0" * 65536)
    srv = start(start_server, d, "always")
    assert info(srv)["loading_torn_tails"] == "0"
    assert_prefix(srv, N, N, expect_m=N)
    assert_recovered(srv, N)
    assert seg.stat().st_size == size, "the zero tail was not cut back to the last record"
    inf = info(srv)
    assert inf["wal_fsyncs_paced"] == "0" and inf["wal_fsyncs_slow"].isdigit(), inf
    out = server_output(srv)
    assert "torn" not in out, out[-2000:]


@pytest.mark.parametrize("junk", ["garbage", "partial-record"])
def test_garbage_inside_the_zeroed_area_is_a_torn_tail(start_server, tmp_path, junk):
    """Bytes after the last record that do not form a record, with only zeros after them: the write of the
    last wave did not complete.  It is cut off (counted as a torn tail) and the next start is clean."""
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    (seg,) = segments(d)
    size = seg.stat().st_size
    off, ln = records(seg)[-1]
    last = seg.read_bytes()[off:off + ln]
    if junk == "garbage":
        tail = bytes((i * 37 + 11) % 251 + 1 for i in range(100))
    else:
        tail = last[:REC_HDR] + last[REC_HDR:REC_HDR + 3]   # a record header and the first payload bytes
    with open(seg, "ab") as f:
        f.write(tail + b"\0" * 65536)
    srv = start(start_server, d, "always")
    assert info(srv)["loading_torn_tails"] == "1"
    assert_prefix(srv, N, N, expect_m=N)
    assert_recovered(srv, N)
    assert seg.stat().st_size == size, "the torn bytes were not cut off"
    srv.stop()
    again = start(start_server, d, "always")
    assert info(again)["loading_torn_tails"] == "0"
    assert_prefix(again, N, N, expect_m=N)


def test_kill9_with_prezeroed_segment_keeps_every_acknowledged_write(start_server, tmp_path):
    """always mode, small segments so pre-zeroed ones are in use: kill -9 with one open, restart, every
    acknowledged key is there, no torn tail is reported (the zero tail is a clean end) and the segment is cut
    back to its records."""
    d = tmp_path / "data"
    seg_arg = ["--wal_segment_bytes", "64kb"]
    srv = start(start_server, d, "always", *seg_arg)
    acked = 0
    deadline = time.monotonic() + 20
    zeroed = None
    while zeroed is None and time.monotonic() < deadline:
        write_keys(srv, 200, first=acked + 1, batch=50)
        acked += 200
        cur = segments(d)[-1]
        if cur.stat().st_size >= 64 * 1024 and cur.read_bytes()[-4096:] == bytes(4096):
            zeroed = cur
        time.sleep(0.01)
    assert zeroed is not None, "no pre-zeroed segment in use after %d writes: %s" % (
        acked, [(p.name, p.stat().st_size) for p in segments(d)])
    write_keys(srv, 10, first=acked + 1, batch=10)        # acknowledged while that segment is open
    acked += 10
    inf = info(srv)
    assert int(inf["wal_prezeroed_segments"]) >= 1 and int(inf["wal_fsyncs"]) >= 1, inf
    srv.proc.kill()
    srv.proc.wait(10)
    cur = segments(d)[-1]
    assert cur.read_bytes()[-4096:] == b"\0" * 4096, "expected the open segment's zero tail on disk"
    again = start(start_server, d, "always", *seg_arg)
    assert info(again)["loading_torn_tails"] == "0"
    assert_prefix(again, acked, acked, expect_m=acked)
    assert_recovered(again, acked)
    last, size = cur, cur.stat().st_size
    recs = records(last)
    assert recs and size == recs[-1][0] + recs[-1][1], (size, recs[-1:])
    again.stop()
    assert again.proc.returncode == 0
    assert not (shard_dir(d) / "wal-spare.tmp").exists(), "the spare outlived a clean shutdown"


def test_kill9_harness_with_prezeroed_segments(tmp_path):
    """tests/crash/kill9.py in always mode with 256 KiB segments (pre-zeroed ones are in use within the
    first milliseconds): every restart holds a prefix with every acknowledged key."""
    harness = Path(__file__).resolve().parents[1] / "crash" / "kill9.py"
    r = subprocess.run([sys.executable, str(harness), "--mode", "always", "--trials", "4", "--seed", "99",
                        "--bin", os.environ.get("RUVIO_BIN", "build/ruvio"), "--workdir", str(tmp_path),
                        "--server-arg=--wal_segment_bytes", "--server-arg=256kb"],
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_sync_min_interval_config(start_server, tmp_path):
    """An explicit wal_sync_min_interval_us spaces every sync: 40 one-at-a-time SETs (one sync each) take at
    least 39 intervals, INFO counts paced syncs, and every write is there after a kill -9."""
    srv = start(start_server, tmp_path / "data", "always", "--wal_sync_min_interval_us", "20000")
    c = srv.client()
    try:
        assert c.config_get("wal_sync_min_interval_us") == {"wal_sync_min_interval_us": "20000"}
        t0 = time.monotonic()
        for i in range(1, 41):
            assert c.set("k:%d" % i, i)
        took = time.monotonic() - t0
        inf = info(srv)
    finally:
        c.close()
    assert took >= 39 * 0.020 * 0.95, took
    assert int(inf["wal_fsyncs_paced"]) >= 20, inf          # a sync slower than 20 ms needs no pacing
    srv.proc.kill()
    srv.proc.wait(10)
    again = start(start_server, tmp_path / "data", "always")
    assert_prefix(again, 40, 40, expect_m=40)
    bad = start(start_server, tmp_path / "data2", "always", "--wal_sync_min_interval_us", "-2",
                expect_fail=True)
    assert bad.returncode not in (None, 0)


@pytest.mark.parametrize("where", ["middle", "header"])
def test_corrupt_checkpoint_stops_startup_naming_the_file(start_server, tmp_path, where):
    d = tmp_path / "data"
    srv = start(start_server, d, "always")
    write_keys(srv, N)
    c = srv.client()
    assert c.save()
    c.close()
    srv.stop()
    (ck,) = checkpoints(d)
    recs = records(ck, CKPT_HDR)
    assert len(recs) == N + 1                  # one per key and the end record
    if where == "middle":
        off, ln = recs[N // 2]
        flip(ck, off + ln - 2)
    else:
        off = 0
        flip(ck, 30)                           # inside the covered-LSN field
    bad = start(start_server, d, "always", expect_fail=True)
    assert bad.returncode not in (None, 0), "started on a corrupt checkpoint"
    out = server_output(bad)
    assert ck.name in out and ("offset %d" % off) in out, out[-2000:]
    assert ck.exists(), "the corrupt checkpoint was removed"
    assert_no_sanitizer_report(bad)


@pytest.mark.parametrize("which", ["first-segment", "first-after-checkpoint"])
def test_missing_segment_is_not_silently_skipped(start_server, tmp_path, which):
    """Recovery must start at LSN 1 (no checkpoint) or at the checkpoint's LSN + 1: a missing segment there is
    a gap of acknowledged writes, exactly like one in the middle (which stops start-up as out of sequence)."""
    d = tmp_path / "data"
    seg = ["--wal_segment_bytes", "4096"]
    srv = start(start_server, d, "always", *seg)
    write_keys(srv, N, batch=10)
    if which == "first-after-checkpoint":
        c = srv.client()
        assert c.save()
        c.close()
        write_keys(srv, N, first=N + 1, batch=10)
    srv.stop()
    segs = segments(d)
    if which == "first-segment":
        victim = segs[0]
    else:
        (ck,) = checkpoints(d)
        ck_lsn = int(ck.name[5:25])
        victim = [p for p in segs if int(p.name[4:24]) > ck_lsn][0]
    assert len(segs) >= 2, segs
    victim.unlink()
    bad = start(start_server, d, "always", *seg, expect_fail=True)
    out = server_output(bad)
    assert bad.returncode not in (None, 0), (
        "started without %s (LSN %d onwards missing): %s" % (victim.name, int(victim.name[4:24]), out[-1500:]))
    assert "LSN" in out or "segment" in out, out[-2000:]


def test_partial_header_of_an_empty_last_segment_is_removed(start_server, tmp_path):
    """A crash right after creating a segment can leave it shorter than its header: that one may go."""
    d = tmp_path / "data"
    make_wal(start_server, d, N)
    segs = segments(d)
    last = segs[-1]
    if records(last):
        nxt = shard_dir(d) / ("wal-%020d.log" % (N + 1))
        nxt.write_bytes(segs[0].read_bytes()[:10])
    else:
        os.truncate(last, 10)
    srv = start(start_server, d, "always")
    assert_prefix(srv, N, N, expect_m=N)
    assert_recovered(srv, N)
