"""Synchronous replication (min-sync-replicas, docs/replication.md): a write's reply waits until that many
replicas applied it; with fewer good replicas writes are refused up front; a write not acknowledged within
min-sync-replicas-timeout is never reported as success (its connection is closed)."""

import signal
import socket
import threading
import time

import pytest
import redis

from conftest import HOST, poll_until, resp_error
from ruviotest import repl, procs

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]

DURABILITY = ["memory", "everysec", "always"]


def sync_on(c, n=1):
    """Until the primary's shard runs in synchronous mode (CONFIG SET applies at the next cron tick)."""
    poll_until(lambda: c.info("replication").get("sync_replicas") == n, timeout=5, what="sync_replicas:%d" % n)


def pair(start_server, durability, *extra):
    primary = start_server("--durability", durability, *extra)
    replica = start_server("--durability", durability)
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=10)
    return primary, replica, p, r


class Call(threading.Thread):
    """fn() in a thread: .result is its value or the exception it raised."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result = fn, None
        self.start()

    def run(self):
        try:
            self.result = self.fn()
        except Exception as e:  # noqa: BLE001 (the test inspects it)
            self.result = e


@pytest.mark.parametrize("durability", DURABILITY)
def test_write_reply_waits_for_the_replica(start_server, durability):
    primary, replica, p, r = pair(start_server, durability)
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p)
    assert p.set("k0", "v0") is True
    assert r.get("k0") == "v0"  # acknowledged: the replica applied it before the reply
    w = primary.client(socket_timeout=20)
    g = primary.client(socket_timeout=20)
    procs.pause(replica.proc.pid)
    try:
        wr = Call(lambda: w.set("k1", "v1"))
        wr.join(1.0)
        assert wr.is_alive(), "the write was answered (%r) while its replica was stopped" % (wr.result,)
        # a read that may see the unreplicated write waits too
        rd = Call(lambda: g.get("k1"))
        rd.join(0.3)
        assert rd.is_alive(), "a read of the unreplicated write was answered: %r" % (rd.result,)
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    wr.join(10)
    rd.join(10)
    assert wr.result is True and rd.result == "v1"
    assert r.get("k1") == "v1"
    w.close()
    g.close()


@pytest.mark.parametrize("durability", DURABILITY)
def test_no_replica_refuses_writes(start_server, durability):
    srv = start_server("--durability", durability, "--min-sync-replicas", "1")
    c = srv.client()
    assert c.info("replication")["sync_replicas"] == 1
    assert resp_error(c.set, "k", "v") == "NOREPLICAS Not enough good replicas to write."
    assert c.get("k") is None  # reads go on
    # CONFIG SET on the fly, both ways
    assert c.config_set("min-sync-replicas", 0)
    poll_until(lambda: "sync_replicas" not in c.info("replication"), timeout=5, what="sync off")
    assert c.set("k", "v") is True
    assert c.config_set("min-sync-replicas", 2)
    poll_until(lambda: c.info("replication").get("sync_replicas") == 2, timeout=5, what="sync on")
    assert resp_error(c.set, "k", "w") == "NOREPLICAS Not enough good replicas to write."
    assert c.get("k") == "v"


def test_two_needed_one_connected_refuses(start_server):
    primary, replica, p, r = pair(start_server, "memory")
    assert p.config_set("min-sync-replicas", 2)
    sync_on(p, 2)
    assert resp_error(p.set, "k", "v") == "NOREPLICAS Not enough good replicas to write."
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p, 1)
    assert p.set("k", "v") is True and r.get("k") == "v"


@pytest.mark.parametrize("durability", DURABILITY)
def test_unacked_write_times_out_closed(start_server, durability):
    primary, replica, p, r = pair(start_server, durability, "--min-sync-replicas-timeout", "500")
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p)
    assert p.set("k0", "v0") is True
    w = primary.client(socket_timeout=20)
    procs.pause(replica.proc.pid)
    try:
        wr = Call(lambda: w.set("k1", "v1"))
        wr.join(15)
        assert not wr.is_alive(), "the held write was neither answered nor closed"
        # not a success: the connection was closed (outcome unknown)
        assert isinstance(wr.result, redis.exceptions.ConnectionError), repr(wr.result)
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    w.close()
    # (not asked while the replica was stopped: INFO's output depends on the unacknowledged write too)
    assert int(p.info("persistence")["sync_repl_closed_clients"]) >= 1
    # the write itself stays on the primary and reaches the replica once it runs again
    repl.wait_offset(p, r, timeout=10)
    assert r.get("k1") == "v1"
    assert p.set("k2", "v2") is True  # acknowledged again


def test_config_set_zero_releases_held_writes(start_server):
    primary, replica, p, r = pair(start_server, "memory")
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p)
    w = primary.client(socket_timeout=20)
    procs.pause(replica.proc.pid)
    try:
        wr = Call(lambda: w.set("k1", "v1"))
        wr.join(0.5)
        assert wr.is_alive()
        assert p.config_set("min-sync-replicas", 0)  # the operator goes back to asynchronous replication
        wr.join(5)
        assert wr.result is True
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    w.close()


def test_demoted_primary_closes_its_waiting_writers(start_server):
    """A primary made a replica while a write waits for its replica: the write is not its to acknowledge any
    more (the new primary's history decides), so the client is closed at once, not after the timeout."""
    primary, replica, p, r = pair(start_server, "memory", "--min-sync-replicas-timeout", "60000")
    other = start_server()
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p)
    w = primary.client(socket_timeout=20)
    procs.pause(replica.proc.pid)
    try:
        wr = Call(lambda: w.set("k1", "v1"))
        wr.join(0.5)
        assert wr.is_alive()
        t0 = time.monotonic()
        assert p.replicaof(HOST, other.port) == "OK"
        wr.join(10)
        assert isinstance(wr.result, redis.exceptions.ConnectionError), repr(wr.result)
        assert time.monotonic() - t0 < 10
    finally:
        replica.proc.send_signal(signal.SIGCONT)
    w.close()


@pytest.mark.parametrize("durability", ["memory", "always"])
def test_demotion_in_the_same_batch_as_a_write_does_not_release_it(start_server, durability):
    """A write and the shard's demotion in one read (the race jepsen found: a reply produced in the same loop as
    the demotion was not held yet, and the flush after it released it, though no replica had it). The writer must
    not read +OK: its connection is closed."""
    primary, replica, p, r = pair(start_server, durability, "--min-sync-replicas-timeout", "60000")
    other = start_server()
    assert p.config_set("min-sync-replicas", 1)
    sync_on(p)
    procs.pause(replica.proc.pid)
    try:
        s = socket.create_connection((HOST, primary.port), timeout=3)
        s.sendall(b"SET k1 v1\r\nREPLICAOF %s %d\r\n" % (HOST.encode(), other.port))
        got = b""
        while True:
            try:
                chunk = s.recv(4096)
            except (ConnectionResetError, socket.timeout):
                break  # (unfixed, the connection stays open after its two +OKs)
            if not chunk:
                break
            got += chunk
        s.close()
        assert not got.startswith(b"+OK"), "the unreplicated write was acknowledged: %r" % got
        assert p.info("persistence").get("sync_repl_closed_clients", 0) >= 1
    finally:
        replica.proc.send_signal(signal.SIGCONT)
