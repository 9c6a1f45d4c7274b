"""FAILOVER and fencing (issue 14, findings 2, 3, 8 and 13; docs/replication.md "FAILOVER", "Epoch fencing").

Real primary and replica processes on loopback. Each test is a few seconds at most."""

import os
import time

import pytest
import redis

from conftest import HOST, poll_until, resp_error

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]

READONLY_ABORT = "Transaction discarded because of: READONLY You can't write against a read only replica."
UNBLOCKED = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"


def info(c):
    return c.info("replication")


def wait_link_up(replica, timeout=10):
    c = replica.client()
    try:
        poll_until(lambda: info(c).get("master_link_status") == "up", timeout=timeout, what="link up")
    finally:
        c.close()


def linked_pair(start_server, *args):
    primary = start_server(*args)
    replica = start_server(*args)
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    wait_link_up(replica)
    return primary, replica, p, r


def demote(how, primary, replica, p, r):
    """Make the primary a replica of the other node: FAILOVER TO it, or REPLICAOF (as Sentinel does)."""
    if how == "failover":
        assert p.execute_command("FAILOVER", "TO", HOST, replica.port, "TIMEOUT", 5000) == "OK"
        poll_until(lambda: info(r)["role"] == "master", timeout=10, what="target promoted")
    else:
        assert r.replicaof("no", "one") == "OK"
        assert p.replicaof(HOST, replica.port) == "OK"
    poll_until(lambda: info(p)["role"] == "slave", timeout=10, what="old primary demoted")


# ---------------------------------------------------------------- finding 3: nothing queued runs after a demotion

@pytest.mark.parametrize("how", ["failover", "replicaof"])
def test_exec_with_queued_writes_is_refused_after_a_demotion(start_server, how):
    primary, replica, p, r = linked_pair(start_server)
    with primary.raw() as c, primary.raw() as reads:
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("SET", "k", "v") == "QUEUED"
        assert reads.cmd("MULTI") == "OK"
        assert reads.cmd("GET", "k") == "QUEUED"
        demote(how, primary, replica, p, r)
        assert c.cmd("EXEC") == "EXECABORT " + READONLY_ABORT
        assert c.cmd("EXEC") == "ERR EXEC without MULTI"       # discarded, as Redis
        assert reads.cmd("EXEC") == [None]                     # a read-only transaction still runs
    assert p.exists("k") == 0 and r.exists("k") == 0


@pytest.mark.parametrize("how", ["failover", "replicaof"])
def test_blocked_writers_are_unblocked_by_a_demotion(start_server, how):
    primary, replica, p, r = linked_pair(start_server)
    with primary.raw() as c:
        c.send(b"*6\r\n$6\r\nBLMOVE\r\n$3\r\nsrc\r\n$3\r\ndst\r\n$4\r\nLEFT\r\n$5\r\nRIGHT\r\n$1\r\n0\r\n")
        poll_until(lambda: p.info("clients")["blocked_clients"] == 1, timeout=5, what="client blocked")
        demote(how, primary, replica, p, r)
        assert c.read_reply() == UNBLOCKED
        r.rpush("src", "x")                                    # replicated to the old primary
        poll_until(lambda: p.llen("src") == 1, timeout=5, what="record applied")
        assert c.cmd("PING") == "PONG"
    assert p.exists("dst") == 0 and r.exists("dst") == 0
