"""FAILOVER and fencing (issue 14, findings 2, 3, 8 and 13; docs/replication.md "FAILOVER", "Epoch fencing").

Real primary and replica processes on loopback. Each test is a few seconds at most."""

import os
import signal
import time

import pytest
import redis

from conftest import HOST, RUVIO_BIN, free_ports, poll_until, resp_error
from ruviotest import repl, procs

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]

READONLY_ABORT = "Transaction discarded because of: READONLY You can't write against a read only replica."
UNBLOCKED = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"


def info(c):
    return c.info("replication")


def wait_link_up(replica, timeout=10):
    c = replica.client()
    try:
        repl.wait_link_up(c, timeout=timeout, what="link up")
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
    # one error per refused EXEC, as Redis counts it (ERR: the EXEC without MULTI)
    assert p.info("errorstats") == {"errorstat_EXECABORT": "count=1", "errorstat_ERR": "count=1"}


@pytest.mark.parametrize("how", ["failover", "replicaof"])
def test_blocked_writers_are_unblocked_by_a_demotion(start_server, how):
    primary, replica, p, r = linked_pair(start_server)
    with primary.raw() as c, primary.raw() as w:
        c.send(b"*6\r\n$6\r\nBLMOVE\r\n$3\r\nsrc\r\n$3\r\ndst\r\n$4\r\nLEFT\r\n$5\r\nRIGHT\r\n$1\r\n0\r\n")
        poll_until(lambda: p.info("clients")["blocked_clients"] == 1, timeout=5, what="client blocked")
        assert w.cmd("SET", "w", "1") == "OK"
        w.send(b"*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$1\r\n0\r\n")         # one replica: waits forever
        assert w.nothing_pending(0.1)
        demote(how, primary, replica, p, r)
        assert c.read_reply() == UNBLOCKED
        assert w.read_reply() == UNBLOCKED
        r.rpush("src", "x")                                    # replicated to the old primary
        poll_until(lambda: p.llen("src") == 1, timeout=5, what="record applied")
        assert c.cmd("PING") == "PONG"
    assert p.exists("dst") == 0 and r.exists("dst") == 0


# ---------------------------------------------------------------- finding 2: FAILOVER lasts

def start_at(start_server, conf, port, datadir, *extra, **kw):
    """A durable node with a fixed port and data directory (so it can be restarted), from a config file
    when conf is given."""
    argv = [RUVIO_BIN] + ([conf] if conf else []) + [
        "--port", str(port), "--bind", HOST, "--dir", datadir, "--durability", "everysec",
        "--enable-debug-command", "yes"] + list(extra)
    return start_server(argv=argv, port=port, **kw)


def failover_to(p, r, primary, replica):
    assert p.execute_command("FAILOVER", "TO", HOST, replica.port, "TIMEOUT", 5000) == "OK"
    poll_until(lambda: info(r)["role"] == "master", timeout=10, what="target promoted")
    poll_until(lambda: info(p)["master_failover_state"] == "no-failover", timeout=10, what="failover done")
    assert info(p)["role"] == "slave" and info(p)["master_port"] == replica.port


def test_failover_roles_reach_config_get_and_the_config_files_and_survive_restarts(start_server, tmp_path):
    pport, rport = free_ports(1), None
    pdir, rdir = str(tmp_path / "p"), str(tmp_path / "r")
    os.mkdir(pdir), os.mkdir(rdir)
    pconf, rconf = str(tmp_path / "p.conf"), str(tmp_path / "r.conf")
    open(pconf, "w").write("# primary\n")
    primary = start_at(start_server, pconf, pport, pdir)
    rport = free_ports(1)
    open(rconf, "w").write("# replica\nreplicaof %s %d\n" % (HOST, pport))
    replica = start_at(start_server, rconf, rport, rdir)
    wait_link_up(replica)
    p, r = primary.client(), replica.client()
    p.set("before", "1")
    failover_to(p, r, primary, replica)
    assert p.config_get("replicaof") == {"replicaof": "%s %d" % (HOST, rport)}
    assert r.config_get("replicaof") == {"replicaof": ""}
    assert "replicaof %s %d" % (HOST, rport) in open(pconf).read().splitlines()
    assert not [l for l in open(rconf).read().splitlines() if l.startswith("replicaof")]
    epoch = info(r)["repl_epoch"]
    primary.stop()
    replica.stop()
    primary = start_at(start_server, pconf, pport, pdir)      # the old primary first: it must not take writes
    p = primary.client()
    assert info(p)["role"] == "slave" and info(p)["master_port"] == rport
    assert resp_error(p.set, "x", "1") == "You can't write against a read only replica."
    replica = start_at(start_server, rconf, rport, rdir)
    r = replica.client()
    assert info(r)["role"] == "master" and info(r)["repl_epoch"] == epoch
    r.set("after", "1")
    wait_link_up(primary)
    poll_until(lambda: p.get("after") == "1", timeout=10, what="new write on the old primary")
    assert p.get("before") == "1"


def test_old_primary_without_a_config_file_restarts_as_a_replica_of_the_new_one(start_server, tmp_path):
    """No config file: repl.state keeps the role, so the restarted old primary follows the new one instead of
    taking writes under its history and epoch."""
    pport, pdir = free_ports(1), str(tmp_path / "p")
    os.mkdir(pdir)
    primary = start_at(start_server, None, pport, pdir)
    replica = start_server("--durability", "everysec")
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, pport) == "OK"
    wait_link_up(replica)
    failover_to(p, r, primary, replica)
    primary.stop()
    primary = start_at(start_server, None, pport, pdir)
    p = primary.client()
    assert info(p)["role"] == "slave" and info(p)["master_port"] == replica.port
    assert resp_error(p.set, "x", "1") == "You can't write against a read only replica."
    poll_until(lambda: p.config_get("replicaof") == {"replicaof": "%s %d" % (HOST, replica.port)}, timeout=5,
               what="CONFIG GET replicaof")
    wait_link_up(primary)
    r.set("after", "1")
    poll_until(lambda: p.get("after") == "1", timeout=10, what="new write on the old primary")
    assert p.replicaof("no", "one") == "OK"          # the operator can still make it a primary


# ---------------------------------------------------------------- finding 8: fencing and repl.state

def test_fencing_survives_a_restart(start_server, tmp_path):
    pport, pdir = free_ports(1), str(tmp_path / "p")
    os.mkdir(pdir)
    primary = start_at(start_server, None, pport, pdir)
    replica = start_server()
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, pport) == "OK"
    wait_link_up(replica)
    assert r.replicaof("no", "one") == "OK"           # epoch 1
    assert r.replicaof(HOST, pport) == "OK"           # its Hello tells the old primary: fenced
    fenced = "This node was fenced: replication epoch 1 exists (this node is at 0); point it at the " \
             "current primary with REPLICAOF."
    poll_until(lambda: info(p)["role"] == "master" and _set_error(p) == fenced, timeout=10, what="fenced")
    replica.stop()
    primary.stop()
    primary = start_at(start_server, None, pport, pdir)
    assert _set_error(primary.client()) == fenced


def _set_error(c):
    try:
        c.set("x", "1")
        return None
    except redis.exceptions.ResponseError as e:
        return str(e)


def test_two_promotions_from_one_epoch_fence_each_other(start_server):
    """Both replicas of one primary are promoted (epoch 0 -> 1 on each): the one with the greater replid
    wins; the other is fenced as soon as a node that followed the winner says Hello to it."""
    primary = start_server()
    a, b = start_server(), start_server()
    for n in (a, b):
        assert n.client().replicaof(HOST, primary.port) == "OK"
        wait_link_up(n)
    for n in (a, b):
        assert n.client().replicaof("no", "one") == "OK"
    ia, ib = info(a.client()), info(b.client())
    assert ia["repl_epoch"] == ib["repl_epoch"] == 1 and ia["master_replid"] != ib["master_replid"]
    win, lose = (a, b) if ia["master_replid"] > ib["master_replid"] else (b, a)
    x = start_server()
    xc = x.client()
    assert xc.replicaof(HOST, win.port) == "OK"
    wait_link_up(x)
    assert xc.replicaof(HOST, lose.port) == "OK"      # its Hello carries the winner's history
    poll_until(lambda: _set_error(lose.client()) is not None, timeout=10, what="loser fenced")
    assert _set_error(lose.client()).startswith("This node was fenced: replication epoch 1 exists")
    assert win.client().set("x", "1") is True
    assert info(xc)["master_link_status"] == "down"   # it does not follow the loser either


def test_promotion_is_refused_when_its_state_cannot_be_saved(start_server):
    primary = start_server()
    replica = start_server("--durability", "everysec")
    r = replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    wait_link_up(replica)
    tmp = os.path.join(replica.datadir, "shard-0", "repl.state.tmp")
    os.mkdir(tmp)                                     # fopen(tmp, "w") fails, even for root
    err = resp_error(r.replicaof, "no", "one")
    assert err.startswith("REPLICAOF NO ONE refused: cannot write ") and "Is a directory" in err, err
    assert err.endswith("; this node stays a replica")
    assert info(r)["role"] == "slave" and info(r)["repl_epoch"] == 0
    assert r.config_get("replicaof") == {"replicaof": "%s %d" % (HOST, primary.port)}
    os.rmdir(tmp)
    assert r.replicaof("no", "one") == "OK"
    assert info(r)["role"] == "master" and info(r)["repl_epoch"] == 1


def test_replid2_and_its_offset_survive_a_restart(start_server, tmp_path):
    primary = start_server()
    primary.client().set("k", "v")
    rport, rdir = free_ports(1), str(tmp_path / "r")
    os.mkdir(rdir)
    replica = start_at(start_server, None, rport, rdir, "--replicaof", "%s %d" % (HOST, primary.port))
    wait_link_up(replica)
    r = replica.client()
    assert r.replicaof("no", "one") == "OK"
    before = {k: info(r)[k] for k in ("master_replid", "master_replid2", "second_repl_offset", "repl_epoch")}
    assert before["second_repl_offset"] > 0
    replica.stop()
    replica = start_at(start_server, None, rport, rdir)
    after = {k: info(replica.client())[k] for k in before}
    assert after == before


# ---------------------------------------------------------------- finding 13: complete or roll back

@pytest.mark.parametrize("site,who", [("failover-promote-refused", "target"),
                                      ("failover-promote-unsent", "primary")])
def test_failover_rolls_back_when_the_target_does_not_take_over(start_server, site, who):
    """The target refuses Promote, or the link closes before Promote leaves: the target reconnects to the
    old primary as its replica at the old epoch, and the old primary takes writes again (paused writers
    included); no node is left a replica of a replica."""
    env = dict(os.environ, RUVIO_FAILPOINT=site)
    primary = start_server(env=env if who == "primary" else None)
    replica = start_server(env=env if who == "target" else None)
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    wait_link_up(replica)
    p.set("before", "1")
    with primary.raw() as w:
        assert p.execute_command("FAILOVER", "TO", HOST, replica.port, "TIMEOUT", 5000) == "OK"
        poll_until(lambda: info(p)["master_failover_state"] == "no-failover", timeout=10, what="failover over")
        w.send(b"*3\r\n$3\r\nSET\r\n$6\r\nduring\r\n$1\r\n1\r\n")
        assert w.read_reply() == "OK"
    assert info(p)["role"] == "master" and info(p)["repl_epoch"] == 0
    assert info(r)["role"] == "slave" and info(r)["master_port"] == primary.port
    assert p.config_get("replicaof") == {"replicaof": ""}
    assert "FAILOVER rolled back" in primary.stderr() + primary.stdout()
    p.set("after", "1")
    wait_link_up(replica)
    poll_until(lambda: r.get("after") == "1", timeout=10, what="writes flow to the target again")
    assert r.get("during") == "1"


def test_failover_whose_target_dies_on_promote_waits_then_rolls_back_when_it_returns(start_server, tmp_path):
    """No word from the target: after 5 s the old primary's paused writers get -READONLY and it stays the
    target's replica (nobody takes writes that could be lost); the target restarts unpromoted (its repl.state
    says it follows the old primary), connects back, and the old primary rolls back."""
    primary = start_server()
    tport, tdir = free_ports(1), str(tmp_path / "t")
    os.mkdir(tdir)
    target = start_at(start_server, None, tport, tdir, env=dict(os.environ, RUVIO_FAILPOINT="failover-promote-crash"))
    p = primary.client()
    assert target.client().replicaof(HOST, primary.port) == "OK"
    wait_link_up(target)
    with primary.raw(timeout=15) as w, primary.raw(timeout=15) as x:
        assert x.cmd("MULTI") == "OK" and x.cmd("SET", "q", "1") == "QUEUED"
        assert p.execute_command("FAILOVER", "TO", HOST, tport, "TIMEOUT", 5000) == "OK"
        assert target.wait_exit(5) == 77
        poll_until(lambda: info(p)["master_failover_state"] == "failover-in-progress", timeout=5, what="handed over")
        t0 = time.monotonic()
        w.send(b"*3\r\n$3\r\nSET\r\n$6\r\nduring\r\n$1\r\n1\r\n")       # paused, then refused
        x.send(b"*1\r\n$4\r\nEXEC\r\n")                                       # the same
        assert w.read_reply() == "READONLY You can't write against a read only replica."
        assert x.read_reply() == "EXECABORT " + READONLY_ABORT
        assert time.monotonic() - t0 > 3
    assert info(p)["role"] == "slave" and info(p)["master_failover_state"] == "failover-in-progress"
    target = start_at(start_server, None, tport, tdir)
    poll_until(lambda: info(p)["role"] == "master", timeout=10, what="rolled back")
    assert info(p)["master_failover_state"] == "no-failover" and p.set("after", "1") is True
    t = target.client()
    assert info(t)["role"] == "slave" and info(t)["repl_epoch"] == 0
    wait_link_up(target)
    poll_until(lambda: t.get("after") == "1", timeout=10, what="writes flow to the target again")


def test_forced_failover_to_a_stopped_target_completes_or_rolls_back(start_server):
    """No failpoint: the target is stopped (SIGSTOP) while the primary queues more than the socket buffers
    hold, so at FORCE's deadline the Promote sits behind records the link never delivers (the link is
    closed with them; here it always rolled back). Whatever the target gets, the pair ends with exactly one
    primary that the other follows (before: both replicas of each other, for good)."""
    primary, replica, p, r = linked_pair(start_server)
    procs.pause(replica.proc.pid)
    try:
        pipe = p.pipeline(transaction=False)
        for i in range(2000):
            pipe.set("big%d" % i, "x" * 10000)                 # 20 MB behind a stopped reader
        pipe.execute()
        assert p.execute_command("FAILOVER", "TO", HOST, replica.port, "FORCE", "TIMEOUT", 300) == "OK"
        poll_until(lambda: info(p)["role"] == "slave", timeout=10, what="handed over")
    finally:
        replica.proc.send_signal(signal.SIGCONT)

    def settled():
        roles = sorted((info(p)["role"], info(r)["role"]))
        return roles == ["master", "slave"] and info(p)["master_failover_state"] == "no-failover"
    poll_until(settled, timeout=15, what="one primary, one replica")
    new, old = (r, p) if info(r)["role"] == "master" else (p, r)
    new.set("after", "1")
    poll_until(lambda: old.get("after") == "1", timeout=10, what="the other follows the primary")
