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
