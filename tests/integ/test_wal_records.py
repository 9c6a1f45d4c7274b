"""WAL record boundaries (issue 14, findings 4 and 11): a checkpoint never splits a record, and records too
large for the format are refused before anything is written.

Every test starts real ruvio processes on a data directory it owns and restarts them on it."""
import signal

import pytest

from conftest import encode_command, poll_until

pytestmark = pytest.mark.ruvio_only


def start(start_server, d, mode, *extra):
    return start_server("--dir", str(d), "--durability", mode, *extra)


def kill9(srv):
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=5)


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
