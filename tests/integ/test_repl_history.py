"""Replication histories (issue 14): a node never continues a history it cannot vouch for, a full sync
switches a durable replica's data directory in one step, and no reply waits for a position that will not come.
See docs/replication.md ("Promotion and history ids", "Full sync") and docs/durability.md."""

import os
import signal
import time

import pytest
import redis

from conftest import HOST, poll_until

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]


def info(c, section="replication"):
    return c.info(section)


def wait_link_up(c, timeout=10):
    poll_until(lambda: info(c).get("master_link_status") == "up", timeout=timeout, what="master_link_status:up")


def wait_offset(p, r, timeout=10):
    target = info(p)["master_repl_offset"]
    poll_until(lambda: info(r).get("slave_repl_offset", -1) >= target, timeout=timeout,
               what="replica offset >= %d" % target)


def test_divergent_full_sync_in_always_keeps_answering(start_server):
    """Finding 12: an old primary that took unacknowledged writes past the fork point is full-synced by the
    new primary; applying the new primary's next records must not hold its replies forever."""
    a = start_server("--durability", "always")
    b = start_server("--durability", "always", "--replicaof", "%s %d" % (HOST, a.port))
    c = start_server("--durability", "always", "--replicaof", "%s %d" % (HOST, a.port))
    ca, cb, cc = a.client(), b.client(), c.client()
    for i in range(50):
        ca.set("k%d" % i, i)
    wait_link_up(cb)
    wait_link_up(cc)
    wait_offset(ca, cb)
    wait_offset(ca, cc)
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        assert cb.replicaof("no", "one") == "OK"
        assert cc.replicaof(HOST, b.port) == "OK"
        wait_link_up(cc)
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    for i in range(5):
        ca.set("lost%d" % i, i)                 # nobody acknowledges these: past the fork point
    assert ca.replicaof(HOST, b.port) == "OK"
    wait_link_up(ca)
    assert ca.ping() is True
    for i in range(5):
        cb.set("after%d" % i, i)
    wait_offset(cb, ca)
    fresh = a.client(socket_timeout=3)
    assert fresh.ping() is True                 # used to hang here (held for a durable LSN never asked for)
    assert fresh.get("after4") == "4" and fresh.get("lost0") is None
    assert ca.ping() is True
    assert fresh.replicaof(HOST, c.port) == "OK"   # a later REPLICAOF is answered too


def _fill(c, n, prefix="k", value="v"):
    pipe = c.pipeline(transaction=False)
    for i in range(n):
        pipe.set("%s%d" % (prefix, i), "%s%d" % (value, i))
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def test_crash_at_the_end_of_a_durable_full_sync_restarts(start_server, tmp_path):
    """Finding 7: a replica dies at its first checkpoint's rename after a full sync (ckpt-rename failpoint, for
    a kill or power loss at that moment). It used to refuse to start ("WAL records 1..L are missing"); now it
    starts, empty, and full-syncs again."""
    primary = start_server("--durability", "everysec")          # LSNs count every write: L = 20000
    p = primary.client()
    _fill(p, 20000)
    rdir = str(tmp_path / "replica")
    args = ("--dir", rdir, "--durability", "everysec", "--replicaof", "%s %d" % (HOST, primary.port))
    env = dict(os.environ, RUVIO_FAILPOINT="ckpt-rename")
    crashing = start_server(*args, env=env)
    assert crashing.wait_exit(15) == 77           # the failpoint's exit status
    p.set("after", "1")
    again = start_server(*args, port=crashing.port)
    r = again.client()
    wait_link_up(r)
    wait_offset(p, r)
    assert r.dbsize() == 20001 and r.get("k19999") == "v19999" and r.get("after") == "1"
    assert "was interrupted before its data set was checkpointed" in again.stderr() + again.stdout()
    assert p.info("stats")["sync_full"] == 2
    poll_until(lambda: r.info("persistence")["checkpoint_lsn"] > 0, timeout=10, what="checkpoint")
    assert not os.path.exists(os.path.join(rdir, "shard-0", "rebase"))

