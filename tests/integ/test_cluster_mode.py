"""Cluster mode on one host (issue 16, docs/cluster.md): cluster-enabled yes, the topology in a Raft log of this
host, the node identities in cluster-config-file. A new node knows only itself until redis-cli --cluster create
(ADDSLOTS, SET-CONFIG-EPOCH, MEET) makes the host's nodes one cluster; topology-changing commands reply once the
change is committed, with Redis's error texts; the topology and the identities survive restarts and kill -9."""

import os
import signal
import subprocess
import threading
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from conftest import HOST, TIMEOUT, free_ports, launch, poll_until
from ruviotest import procs

pytestmark = pytest.mark.ruvio_only
N = 3


def start(datadir=None, port=None, *extra):
    base = port or free_ports(N, also_bus=True)
    args = ["--shards", N, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000", *extra]
    if datadir:
        srv = launch(args + ["--dir", datadir], port=base)
    else:
        srv = launch(args, port=base)
    return srv


def client(port):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True)


def info(port):
    text = client(port).execute_command("CLUSTER", "INFO")
    return dict(line.split(":", 1) for line in text.strip().split("\r\n") if ":" in line)


def nodes(port):
    out = {}
    for line in client(port).execute_command("CLUSTER", "NODES").strip().split("\n"):
        f = line.split()
        out[f[0]] = f
    return out


def create(srv):
    r = subprocess.run(["redis-cli", "--cluster", "create"] + ["%s:%d" % (HOST, p) for p in srv.ports]
                       + ["--cluster-yes"], timeout=60, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    assert "[OK] All 16384 slots covered." in r.stdout, r.stdout
    return r.stdout


def test_a_new_node_knows_only_itself():
    srv = start()
    try:
        ids = set()
        for p in srv.ports:
            i = info(p)
            assert i["cluster_state"] == "fail" and i["cluster_known_nodes"] == "1"
            assert i["cluster_slots_assigned"] == "0" and i["cluster_my_epoch"] == "0"
            ns = nodes(p)
            assert len(ns) == 1
            (nid, f), = ns.items()
            assert f[1] == "%s:%d@%d" % (HOST, p, srv.port + 10000) and f[2] == "myself,master"
            assert client(p).execute_command("CLUSTER", "MYID") == nid and len(nid) == 40
            assert len(client(p).execute_command("CLUSTER", "MYSHARDID")) == 40
            ids.add(nid)
        assert len(ids) == N
        assert client(srv.port).info("cluster")["cluster_enabled"] == 1
        with pytest.raises(redis.ResponseError, match="CLUSTERDOWN Hash slot not served"):
            client(srv.port).set("foo", "bar")
    finally:
        srv.stop()


def test_redis_cli_create_then_clients_and_errors():
    srv = start()
    try:
        create(srv)
        views = [nodes(p) for p in srv.ports]
        assert all(set(v) == set(views[0]) for v in views) and len(views[0]) == N
        epochs = sorted(int(f[6]) for f in views[0].values())
        assert epochs == [1, 2, 3]                            # SET-CONFIG-EPOCH from redis-cli, before MEET
        for p in srv.ports:
            assert info(p)["cluster_state"] == "ok" and info(p)["cluster_known_nodes"] == str(N)
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, srv.port)], decode_responses=True, socket_timeout=TIMEOUT)
        for i in range(300):
            rc.set("k%d" % i, i)
        assert [rc.get("k%d" % i) for i in range(0, 300, 7)] == [str(i) for i in range(0, 300, 7)]
        assert sum(client(p).dbsize() for p in srv.ports) == 300
        rc.close()
        c = client(srv.port)
        with pytest.raises(redis.ResponseError, match="^Slot 0 is already busy$"):
            c.execute_command("CLUSTER", "ADDSLOTS", 0)
        with pytest.raises(redis.ResponseError, match="^Invalid or out of range slot$"):
            c.execute_command("CLUSTER", "ADDSLOTS", 16384)
        with pytest.raises(redis.ResponseError, match="^Slot 5 specified multiple times$"):
            c.execute_command("CLUSTER", "DELSLOTS", 5, 5)
        with pytest.raises(redis.ResponseError, match="^start slot number 9 is greater than end slot number 3$"):
            c.execute_command("CLUSTER", "ADDSLOTSRANGE", 9, 3)
        with pytest.raises(redis.ResponseError, match="only when the node does not know any other node"):
            c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", 9)
        with pytest.raises(redis.ResponseError, match="can't forget myself"):
            c.execute_command("CLUSTER", "FORGET", c.execute_command("CLUSTER", "MYID"))
        # a change through the log: slots given back and taken again, seen by every node
        assert c.execute_command("CLUSTER", "DELSLOTSRANGE", 0, 9) == "OK"
        with pytest.raises(redis.ResponseError, match="^Slot 3 is already unassigned$"):
            c.execute_command("CLUSTER", "DELSLOTS", 3)
        for p in srv.ports:
            assert info(p)["cluster_slots_assigned"] == "16374" and info(p)["cluster_state"] == "fail"
        assert c.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 9) == "OK"
        assert info(srv.ports[2])["cluster_state"] == "ok"
        top = max(int(f[6]) for f in nodes(srv.port).values())
        assert c.execute_command("CLUSTER", "BUMPEPOCH") == "STILL 1" if top == 1 else True
        other = client(srv.ports[1])
        assert other.execute_command("CLUSTER", "BUMPEPOCH") == "BUMPED %d" % (top + 1)
        assert info(srv.ports[1])["cluster_my_epoch"] == str(top + 1)
        assert info(srv.port)["cluster_current_epoch"] == str(top + 1)
        nobody = free_ports(1)
        with pytest.raises(redis.ResponseError, match="^cannot reach %s:%d: Connection refused$" % (HOST, nobody)):
            c.execute_command("CLUSTER", "MEET", HOST, nobody)
        assert info(srv.port)["cluster_known_nodes"] == str(N)                # nothing changed
        assert c.execute_command("CLUSTER", "MEET", HOST, srv.ports[2]) == "OK"   # already met
        assert c.execute_command("CLUSTER", "SAVECONFIG") == "OK"
        assert c.execute_command("CLUSTER", "COUNT-FAILURE-REPORTS", views[0].popitem()[0]) == 0
    finally:
        srv.stop()


def test_topology_and_identity_survive_restart_and_kill9(tmp_path):
    d = str(tmp_path / "data")
    base = free_ports(N, also_bus=True)
    srv = start(d, base)
    try:
        create(srv)
        before = {p: sorted(" ".join(f) for f in nodes(p).values()) for p in srv.ports}
        assert os.path.exists(os.path.join(d, "nodes.conf"))
    finally:
        srv.stop()
    srv = start(d, base)
    try:
        poll_until(lambda: info(srv.port)["cluster_state"] == "ok", timeout=10, what="cluster ok after restart")
        assert {p: sorted(" ".join(f) for f in nodes(p).values()) for p in srv.ports} == before
        c = client(srv.port)
        assert c.execute_command("CLUSTER", "DELSLOTS", 100) == "OK"     # committed (fsynced) before the reply
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
    finally:
        srv.stop()
    srv = start(d, base)
    try:
        poll_until(lambda: info(srv.port)["cluster_slots_assigned"] == "16383", timeout=10,
                   what="the change acknowledged before kill -9, after restart")
        assert set(nodes(srv.port)) == set(before[srv.port][i].split()[0] for i in range(N))
    finally:
        srv.stop()


def test_bad_identity_file_is_refused(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "nodes.conf").write_text("host zz\n")
    srv = launch(["--shards", N, "--cluster-enabled", "yes", "--dir", str(d)], expect_fail=True,
                 port=free_ports(N, also_bus=True))
    assert srv.returncode == 1
    assert "not a line of a cluster identity file" in open(srv.stderr_path).read()


def _leaders(srvs):
    out = []
    for s in srvs:
        try:
            if info(s.port)["topology_log_leader"] == "1":
                out.append(s)
        except (redis.ConnectionError, redis.TimeoutError):
            pass
    return out


def test_three_hosts_join_fail_over_the_log_and_rejoin(tmp_path):
    """Three processes (hosts) of two shards on loopback: redis-cli --cluster create joins them (MEET to another
    host sends RVCLUSTER JOIN; the joining host then follows the first host's log), writes go through a cluster
    client, kill -9 of the log's leader elects another host within the bound, and the killed host restarts as a
    follower with the same view."""
    ports = [free_ports(2, also_bus=True) for _ in range(3)]
    dirs = [str(tmp_path / ("h%d" % i)) for i in range(3)]
    srvs = [launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--dir", d],
                   port=p) for p, d in zip(ports, dirs)]
    try:
        addrs = ["%s:%d" % (HOST, p + k) for k in range(2) for p in ports]     # one primary per host first
        r = subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-yes"], timeout=90,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        views = {p + k: sorted(" ".join(f[:3] + f[6:]).replace("myself,", "") for f in nodes(p + k).values())
                 for p in ports for k in range(2)}
        assert len(set(map(tuple, views.values()))) == 1 and len(next(iter(views.values()))) == 6
        poll_until(lambda: info(ports[0])["topology_log_voters"] == "3", timeout=20, what="three voters")
        assert len(_leaders(srvs)) == 1
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[1])], decode_responses=True,
                          socket_timeout=TIMEOUT)
        for i in range(300):
            rc.set("k%d" % i, i)
        rc.close()
        assert sum(client(p + k).dbsize() for p in ports for k in range(2)) == 300
        # a change made on a host that does not lead the log is forwarded to one that does
        follower = next(s for s in srvs if s not in _leaders(srvs))
        top = int(info(follower.port)["cluster_current_epoch"])
        assert client(follower.port + 1).execute_command("CLUSTER", "BUMPEPOCH") == "BUMPED %d" % (top + 1)
        # redis-cli --cluster add-node, through a node of a host that does not lead: the join goes to the leader
        ports.append(free_ports(2, also_bus=True))
        dirs.append(str(tmp_path / "h3"))
        srvs.append(launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                            "--dir", dirs[3]], port=ports[3]))
        r = subprocess.run(["redis-cli", "--cluster", "add-node", "%s:%d" % (HOST, ports[3]),
                            "%s:%d" % (HOST, follower.port)], timeout=60, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] New node added correctly." in r.stdout, r.stdout
        for p in ports:
            poll_until(lambda: info(p)["cluster_known_nodes"] == "8", timeout=10, what="8 nodes everywhere")
        assert info(ports[3])["cluster_slots_assigned"] == "16384" and info(ports[3])["cluster_state"] == "ok"
        poll_until(lambda: info(ports[0])["topology_log_learners"] == "1", timeout=20,
                   what="the fourth host as a learner (3 voters already)")
        # the log's leader dies: the others elect one of themselves and keep serving the topology
        leader = _leaders(srvs)[0]
        li = srvs.index(leader)
        leader.proc.send_signal(signal.SIGKILL)
        leader.proc.wait(timeout=10)
        rest = [s for s in srvs if s is not leader]
        poll_until(lambda: len(_leaders(rest)) == 1, timeout=10, what="a new leader of the topology log")
        nl = _leaders(rest)[0]
        assert len(nodes(nl.port)) == 8 and info(nl.port)["cluster_known_nodes"] == "8"
        top = int(info(nl.port)["cluster_current_epoch"])
        assert client(nl.port).execute_command("CLUSTER", "BUMPEPOCH") == "BUMPED %d" % (top + 1)
        for s in rest:
            poll_until(lambda: info(s.port)["cluster_current_epoch"] == str(top + 1), timeout=5,
                       what="the new epoch on every live host")
        # back: same identity, a follower, the same view plus the epoch committed while it was away
        srvs[li] = launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                           "--dir", dirs[li]], port=ports[li])
        poll_until(lambda: info(ports[li])["cluster_current_epoch"] == str(top + 1), timeout=20,
                   what="the restarted host catching up")
        assert info(ports[li])["topology_log_leader"] == "0" and info(ports[li])["cluster_state"] == "ok"
        assert sorted(nodes(ports[li])) == sorted(nodes(nl.port))
    finally:
        for s in srvs:
            s.stop()


def test_join_refused_when_a_slot_is_owned_on_both_hosts():
    a, b = start(), start()
    try:
        assert client(a.port).execute_command("CLUSTER", "ADDSLOTS", 7) == "OK"
        assert client(b.port).execute_command("CLUSTER", "ADDSLOTSRANGE", 5, 9) == "OK"
        with pytest.raises(redis.ResponseError, match="^Slot 7 is already busy$"):
            client(b.port).execute_command("CLUSTER", "MEET", HOST, a.port)
        # both stay as they were: b still leads its own log and knows only itself
        assert info(b.port)["cluster_known_nodes"] == "1" and info(b.port)["topology_log_leader"] == "1"
        assert info(a.port)["cluster_known_nodes"] == "1"
        assert client(b.port).execute_command("CLUSTER", "DELSLOTS", 7) == "OK"
        assert client(b.port).execute_command("CLUSTER", "MEET", HOST, a.port) == "OK"
        # hosts join whole: every node of both now knows every other (Redis needs a MEET per node)
        for p in a.ports + b.ports:
            assert info(p)["cluster_known_nodes"] == str(2 * N) and info(p)["cluster_slots_assigned"] == "5"
    finally:
        a.stop()
        b.stop()


def _roles(port):
    """{node id: (port, role, primary id, slots)} from CLUSTER NODES."""
    out = {}
    for nid, f in nodes(port).items():
        out[nid] = (int(f[1].split("@")[0].rsplit(":", 1)[1]), "master" if "master" in f[2] else "slave",
                    f[3], f[8:])
    return out


def test_replicas_reads_and_manual_failover(tmp_path):
    """redis-cli --cluster create --cluster-replicas 1 over three processes: every replica node's shard follows
    its primary node (whatever the shard numbers), READONLY reads are served by replicas, CLUSTER FAILOVER hands
    a primary's slots to its replica with every acknowledged write (the primary pauses writes until the replica
    has them), and TAKEOVER does it without the primary."""
    ports = [free_ports(2, also_bus=True) for _ in range(3)]
    srvs = [launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--dir",
                    str(tmp_path / ("h%d" % i)), "--durability", "everysec"], port=p) for i, p in enumerate(ports)]
    try:
        addrs = ["%s:%d" % (HOST, p + k) for k in range(2) for p in ports]
        r = subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "1",
                            "--cluster-yes"], timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        roles = _roles(ports[0])
        prim = {nid: v for nid, v in roles.items() if v[1] == "master"}
        reps = {nid: v for nid, v in roles.items() if v[1] == "slave"}
        # (seen once in CI under ASan on a loaded machine, not reproduced since: two primaries, one holding two
        # ranges; the output and the logs say how next time)
        assert len(prim) == 3 and len(reps) == 3 and all(v[3] for v in prim.values()), (
            roles, r.stdout, "\n".join(s.stderr()[-4000:] for s in srvs))
        assert sorted(v[2] for v in reps.values()) == sorted(prim)
        for nid, (port, _, pid, _) in reps.items():
            poll_until(lambda: client(port).execute_command("ROLE")[:4] == ["slave", HOST, prim[pid][0], "connected"],
                       timeout=10, what="replica %d linked to its primary" % port)
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[0])], decode_responses=True, socket_timeout=TIMEOUT)
        for i in range(300):
            rc.set("k%d" % i, i)
        for nid, (port, _, pid, _) in reps.items():
            poll_until(lambda: client(port).dbsize() == client(prim[pid][0]).dbsize(), timeout=10,
                       what="replica %d has its primary's keys" % port)
        # a replica: READONLY reads of its primary's slots, MOVED for writes
        rport, rpid = next((v[0], v[2]) for v in reps.values())
        key = client(prim[rpid][0]).keys("*")[0]                 # one of its primary's keys
        raw = client(rport)
        with pytest.raises(redis.ResponseError, match="^MOVED .* %s:%d$" % (HOST, prim[rpid][0])):
            raw.get(key)
        assert raw.execute_command("READONLY") in ("OK", True) and raw.get(key) == key[1:]
        with pytest.raises(redis.ResponseError, match="^MOVED"):
            raw.set(key, "x")
        with pytest.raises(redis.ResponseError, match="^You should send CLUSTER FAILOVER to a replica$"):
            client(prim[rpid][0]).execute_command("CLUSTER", "FAILOVER")
        with pytest.raises(redis.ResponseError, match="^Can't replicate myself$"):
            client(rport).execute_command("CLUSTER", "REPLICATE", client(rport).execute_command("CLUSTER", "MYID"))
        # CLUSTER FAILOVER: the replica takes the slots and the old primary follows it; nothing acknowledged is lost
        old_slots = prim[rpid][3]
        assert client(rport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)
        rid = client(rport).execute_command("CLUSTER", "MYID")

        def swapped():
            v = _roles(ports[1])
            return v[rid][1] == "master" and v[rid][3] == old_slots and v[rpid][1:3] == ("slave", rid)
        poll_until(swapped, timeout=15, what="the replica promoted in the topology")
        poll_until(lambda: client(prim[rpid][0]).execute_command("ROLE")[:2] == ["slave", HOST], timeout=10,
                   what="the old primary following the new one")
        rc.close()
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[2])], decode_responses=True, socket_timeout=TIMEOUT)
        assert all(rc.get("k%d" % i) == str(i) for i in range(300))
        rc.set(key, "after-failover")
        assert client(rport).get(key) == "after-failover"
        # TAKEOVER on another replica: committed at once, without its primary
        tport, tpid = next((v[0], v[2]) for v in reps.values() if v[0] != rport)
        tid = client(tport).execute_command("CLUSTER", "MYID")
        assert client(tport).execute_command("CLUSTER", "FAILOVER", "TAKEOVER") in ("OK", True)
        assert _roles(tport)[tid][1] == "master" and _roles(tport)[tpid][1:3] == ("slave", tid)
        poll_until(lambda: client(tport).execute_command("ROLE")[0] == "master", timeout=10, what="takeover")
        assert info(ports[0])["cluster_state"] == "ok"
        rc.close()
    finally:
        for s in srvs:
            s.stop()


def _cluster3(tmp_path, timeout_ms=2000):
    """Three processes: each one's first node a primary (redis-cli --cluster create), its second node a replica of
    the next process's primary, so every primary has its replica on another host."""
    # (launch picks each process's ports, bus ports included, and starts it again on ports another test took)
    srvs = [launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", timeout_ms, "--dir",
                    str(tmp_path / ("h%d" % i)), "--durability", "everysec"]) for i in range(3)]
    ports = [s.port for s in srvs]
    r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, p) for p in ports], "--cluster-yes"],
                       timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
    ids = [client(p).execute_command("CLUSTER", "MYID") for p in ports]
    for i, p in enumerate(ports):
        assert client(p + 1).execute_command("CLUSTER", "REPLICATE", ids[(i + 1) % 3]) in ("OK", True)
    for p in ports:
        poll_until(lambda: client(p + 1).execute_command("ROLE")[3] == "connected", timeout=10,
                   what="replica %d linked" % (p + 1))
    return ports, srvs


def test_automatic_failover_after_kill9_and_the_write_lease(tmp_path):
    """A primary's process killed: the topology log's leader promotes its replica after cluster-node-timeout (the
    window is printed), the old node is flagged fail and comes back as a replica. A primary's process paused
    (SIGSTOP, a host cut off) past the timeout: its replica is promoted, and when it resumes its lease has run
    out, so it answers no write (CLUSTERDOWN, then MOVED): no slot has two primaries taking writes."""
    ports, srvs = _cluster3(tmp_path)
    try:
        leader_port = next(p for p in ports if info(p)["topology_log_leader"] == "1")
        assert leader_port == ports[0]                 # the first host of the create leads the log
        victim, vport = 2, ports[2]                    # a primary whose replica is on the second host
        vid = client(vport).execute_command("CLUSTER", "MYID")
        slots = _roles(vport)[vid][3]
        lo = int(slots[0].split("-")[0])
        key = next("fk%d" % i for i in range(200000) if key_slot(b"fk%d" % i) == lo)
        rep = next(nid for nid, v in _roles(leader_port).items() if v[2] == vid)
        assert client(vport).set(key, "before")
        srvs[victim].proc.send_signal(signal.SIGKILL)
        srvs[victim].proc.wait(timeout=10)
        t0 = time.monotonic()
        lp = leader_port

        def promoted():
            v = _roles(lp)
            return v[rep][1] == "master" and v[rep][3] == slots
        poll_until(promoted, timeout=10, interval=0.02, what="the replica promoted")
        window = time.monotonic() - t0
        print("\nautomatic failover after kill -9 (node timeout 2000 ms): %.2f s" % window)
        assert window < 2 * 2.0 + 1
        assert "fail" in _roles(lp)[vid][1] or "fail" in nodes(lp)[vid][2]
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, lp)], decode_responses=True, socket_timeout=TIMEOUT)
        rc.set(key, "after")
        assert rc.get(key) == "after"
        rc.close()
        # back: a replica of the node that took over, no longer flagged
        srvs[victim] = launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", 2000,
                               "--dir", str(tmp_path / ("h%d" % victim)), "--durability", "everysec"],
                              port=ports[victim])
        poll_until(lambda: nodes(lp)[vid][2] == "slave" and nodes(lp)[vid][3] == rep, timeout=15,
                   what="the old primary back as a replica")
        poll_until(lambda: client(vport).execute_command("ROLE")[3] == "connected", timeout=15, what="it follows")
        # pause the process now holding that primary (a host cut off): failover, then its writes are refused
        holder = next(i for i, p in enumerate(ports) if rep in (client(p).execute_command("CLUSTER", "MYID"),
                                                                client(p + 1).execute_command("CLUSTER", "MYID")))
        assert ports[holder] == ports[1] != lp
        hport = next(ports[holder] + k for k in range(2)
                     if client(ports[holder] + k).execute_command("CLUSTER", "MYID") == rep)
        procs.pause(srvs[holder].proc.pid)
        try:
            poll_until(lambda: _roles(lp)[rep][1] == "slave", timeout=10, what="the paused primary replaced")
        finally:
            srvs[holder].proc.send_signal(signal.SIGCONT)
        with pytest.raises(redis.ResponseError, match="^(CLUSTERDOWN|MOVED)"):
            client(hport).set(key, "split-brain")
        poll_until(lambda: _roles(hport)[rep][1] == "slave", timeout=10, what="the resumed host sees the change")
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, lp)], decode_responses=True, socket_timeout=TIMEOUT)
        assert rc.get(key) == "after"
        rc.close()
    finally:
        for s in srvs:
            s.stop()


def _cli(*args, timeout=90):
    r = subprocess.run(["redis-cli", "--cluster", *args], timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def test_forget_reset_and_del_node_on_one_host(tmp_path):
    """CLUSTER FORGET and RESET with Redis's errors, and redis-cli --cluster del-node unchanged: it sends FORGET to
    every other node (the first removes the node from the one topology; the others answer OK, as Redis's ban list
    lets them) and then CLUSTER RESET SOFT to the node, which becomes an empty primary knowing only itself; it can
    be added again (add-node), and RESET HARD gives it a new id."""
    args = ["--shards", 4, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--dir", str(tmp_path),
            "--durability", "everysec"]
    srv = launch(args, port=free_ports(4, also_bus=True))
    try:
        p0, p3 = srv.ports[0], srv.ports[3]
        rc, out = _cli("create", *["%s:%d" % (HOST, p) for p in srv.ports[:3]], "--cluster-yes")
        assert rc == 0 and "[OK] All 16384 slots covered." in out, out
        rc, out = _cli("add-node", "%s:%d" % (HOST, p3), "%s:%d" % (HOST, p0), "--cluster-slave",
                       "--cluster-master-id", client(p0).execute_command("CLUSTER", "MYID"))
        assert rc == 0, out
        c0, c3 = client(p0), client(p3)
        id0, id3 = c0.execute_command("CLUSTER", "MYID"), c3.execute_command("CLUSTER", "MYID")
        poll_until(lambda: c3.execute_command("ROLE")[:4] == ["slave", HOST, p0, "connected"], timeout=10,
                   what="the added replica follows its primary")
        key = next("k%d" % i for i in range(100000) if client(p0).execute_command(
            "CLUSTER", "COUNTKEYSINSLOT", key_slot(b"k%d" % i)) == 0 and _owns(p0, key_slot(b"k%d" % i)))
        assert c0.set(key, "v")
        # --cluster info and call, unchanged (call runs on every node, replicas included)
        rc, out = _cli("info", "%s:%d" % (HOST, p0))
        assert rc == 0 and "[OK] 1 keys in 3 masters." in out, out
        assert "%s:%d (%s...) -> 1 keys | " % (HOST, p0, client(p0).execute_command("CLUSTER", "MYID")[:8]) in out
        assert " | 1 slaves." in out, out
        poll_until(lambda: c3.dbsize() == 1, timeout=10, what="the replica has the key")
        rc, out = _cli("call", "%s:%d" % (HOST, p0), "DBSIZE")
        assert rc == 0 and sorted(out.split(">>> Calling")[1].split("\n")[1:5]) == sorted(
            "%s:%d: %d" % (HOST, p, 1 if p in (p0, p3) else 0) for p in srv.ports), out
        # FORGET's and RESET's errors
        with pytest.raises(redis.ResponseError, match="^Unknown node 0123456789012345678901234567890123456789$"):
            c0.execute_command("CLUSTER", "FORGET", "0123456789012345678901234567890123456789")
        with pytest.raises(redis.ResponseError, match="^I tried hard but I can't forget myself...$"):
            c0.execute_command("CLUSTER", "FORGET", id0)
        with pytest.raises(redis.ResponseError, match="^Can't forget my master!$"):
            c3.execute_command("CLUSTER", "FORGET", id0)
        with pytest.raises(redis.ResponseError, match="syntax error"):
            c0.execute_command("CLUSTER", "RESET", "MEDIUM")
        with pytest.raises(redis.ResponseError,
                           match="^CLUSTER RESET can't be called with master nodes containing keys$"):
            c0.execute_command("CLUSTER", "RESET")
        poll_until(lambda: c3.dbsize() == c0.dbsize(), timeout=10, what="the replica has its primary's keys")
        # del-node of the replica, unchanged redis-cli
        rc, out = _cli("del-node", "%s:%d" % (HOST, p0), id3)
        assert rc == 0 and "Sending CLUSTER RESET SOFT to the deleted node" in out, out
        for p in srv.ports[:3]:
            assert id3 not in nodes(p) and info(p)["cluster_known_nodes"] == "3"
        assert list(nodes(p3)) == [id3] and info(p3)["cluster_known_nodes"] == "1"
        assert nodes(p3)[id3][2] == "myself,master" and c3.dbsize() == 0
        assert c3.execute_command("ROLE")[0] == "master"
        rc, out = _cli("check", "%s:%d" % (HOST, p0))
        assert rc == 0 and "[OK] All 16384 slots covered." in out and "[ERR]" not in out, out
        # within Redis's 60 s ban window FORGET of it still answers OK; it is added back with add-node
        assert c0.execute_command("CLUSTER", "FORGET", id3) in ("OK", True)
        rc, out = _cli("add-node", "%s:%d" % (HOST, p3), "%s:%d" % (HOST, p0))
        assert rc == 0, out
        poll_until(lambda: id3 in nodes(p0) and info(p3)["cluster_known_nodes"] == "4", timeout=10,
                   what="the node added back")
        # RESET HARD: a new node id, config epoch 0, known only to itself
        assert c3.execute_command("CLUSTER", "RESET", "HARD") in ("OK", True)
        new = c3.execute_command("CLUSTER", "MYID")
        assert new != id3 and len(new) == 40 and list(nodes(p3)) == [new]
        assert nodes(p3)[new][6] == "0" and id3 not in nodes(p0) and new not in nodes(p0)
        srv.stop()
        srv = launch(args, port=p0)   # the new id was written to cluster-config-file
        assert client(p3).execute_command("CLUSTER", "MYID") == new and list(nodes(p3)) == [new]
        assert client(p3).dbsize() == 0 and client(p0).get(key) == "v"   # the reset replica's flush was logged
        assert id3 not in nodes(p0) and len(nodes(p0)) == 3
    finally:
        srv.stop()


def _owns(port, slot):
    me = client(port).execute_command("CLUSTER", "MYID")
    for lo, hi, *owners in client(port).execute_command("CLUSTER", "SLOTS"):
        if lo <= slot <= hi:
            return owners[0][2] == me
    return False


def test_topology_commands_inside_multi_exec_and_redis_cli_fix():
    """redis-cli --cluster fix covers an unassigned slot as clusterManagerSetSlotOwner does: MULTI, CLUSTER
    DELSLOTS (its error is tolerated), ADDSLOTS, BUMPEPOCH, EXEC. The topology commands of a transaction are
    proposed in order at EXEC, which replies once they committed, each command's own reply in its place."""
    srv = start()
    try:
        create(srv)
        c = client(srv.port)
        slot = next(lo for lo, hi, *o in c.execute_command("CLUSTER", "SLOTS")
                    if o[0][2] == c.execute_command("CLUSTER", "MYID"))
        assert c.execute_command("CLUSTER", "DELSLOTS", slot) == "OK"
        p = c.pipeline(transaction=True)
        p.execute_command("CLUSTER", "DELSLOTS", slot)
        p.execute_command("CLUSTER", "ADDSLOTS", slot)
        p.ping()
        p.execute_command("CLUSTER", "BUMPEPOCH")
        out = p.execute(raise_on_error=False)
        assert isinstance(out[0], redis.ResponseError) and str(out[0]) == "Slot %d is already unassigned" % slot
        assert out[1] in ("OK", True) and out[2] is True and out[3].startswith(("BUMPED", "STILL")), out
        for p_ in srv.ports:
            assert info(p_)["cluster_state"] == "ok"
        # redis-cli --cluster fix: the slot uncovered again, then covered by fix's transaction
        assert c.execute_command("CLUSTER", "DELSLOTS", slot) == "OK"
        r = subprocess.run(["redis-cli", "--cluster", "fix", "%s:%d" % (HOST, srv.port), "--cluster-yes"],
                           input="yes\n", timeout=60, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "Covering slot %d" % slot in r.stdout, r.stdout
        poll_until(lambda: all(info(p_)["cluster_state"] == "ok" for p_ in srv.ports), timeout=10,
                   what="every slot covered after fix")
        assert c.ping()   # the connection that ran EXEC still serves commands in order
    finally:
        srv.stop()


def test_requirepass_with_masterauth_keeps_the_lease_and_fails_over(tmp_path):
    """requirepass on every host, masterauth (Redis's name) set to it: the hosts' own connections to each other
    (the monitor's RVCLUSTER STATUS and PINGs, joins, replication) authenticate, so the write lease is renewed
    (writes keep working well past it) and a killed primary is failed over."""
    pw = "s3cret pass"
    ports = [free_ports(2, also_bus=True) for _ in range(3)]

    def host(i):
        return launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", 2000, "--dir",
                       str(tmp_path / ("h%d" % i)), "--requirepass", pw, "--masterauth", pw], port=ports[i])
    srvs = [host(i) for i in range(3)]

    def cl(port):
        return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True, password=pw)
    try:
        r = subprocess.run(["redis-cli", "-a", pw, "--no-auth-warning", "--cluster", "create",
                            *["%s:%d" % (HOST, p) for p in ports], "--cluster-yes"],
                           timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        ids = [cl(p).execute_command("CLUSTER", "MYID") for p in ports]
        for i, p in enumerate(ports):
            assert cl(p + 1).execute_command("CLUSTER", "REPLICATE", ids[(i + 1) % 3]) in ("OK", True)
        for p in ports:
            poll_until(lambda: cl(p + 1).execute_command("ROLE")[3] == "connected", timeout=10,
                       what="replica %d linked with masterauth" % (p + 1))
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[0])], decode_responses=True,
                          socket_timeout=TIMEOUT, password=pw)
        t_end = time.monotonic() + 3.0        # past the lease (half the node timeout) several times
        i = 0
        while time.monotonic() < t_end:
            rc.set("lease%d" % i, i)          # CLUSTERDOWN here if a host's lease was not renewed
            i += 1
            time.sleep(0.05)
        rc.close()
        vid = ids[2]
        rep = next(nid for nid, v in _roles_pw(ports[0], pw).items() if v[2] == vid)
        srvs[2].proc.send_signal(signal.SIGKILL)
        srvs[2].proc.wait(timeout=10)
        poll_until(lambda: _roles_pw(ports[0], pw)[rep][1] == "master", timeout=12, what="the replica promoted")
    finally:
        for s in srvs:
            s.stop()


def _roles_pw(port, pw):
    c = redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True, password=pw)
    out = {}
    for line in c.execute_command("CLUSTER", "NODES").strip().split("\n"):
        f = line.split()
        out[f[0]] = (f[1], "master" if "master" in f[2] else "slave", f[3])
    c.close()
    return out


def test_allow_reads_when_down():
    """The cluster is down (a slot unassigned with cluster-require-full-coverage yes): keyed commands get Redis's
    CLUSTERDOWN; with cluster-allow-reads-when-down yes reads are served and writes refused with Redis's text."""
    srv = start()
    try:
        create(srv)
        c = client(srv.port)
        myid = c.execute_command("CLUSTER", "MYID")
        ranges = [(lo, hi) for lo, hi, *o in c.execute_command("CLUSTER", "SLOTS") if o[0][2] == myid]
        lo, hi = ranges[0]
        key = next("r%d" % i for i in range(100000) if lo < key_slot(b"r%d" % i) <= hi)
        assert c.set(key, "v")
        assert c.execute_command("CLUSTER", "DELSLOTS", lo) == "OK"     # another slot of this node unassigned
        poll_until(lambda: info(srv.port)["cluster_state"] == "fail", timeout=5, what="cluster_state:fail")
        with pytest.raises(redis.ResponseError, match="^CLUSTERDOWN The cluster is down$"):
            c.get(key)
        with pytest.raises(redis.ResponseError, match="^CLUSTERDOWN The cluster is down$"):
            c.set(key, "w")
        assert c.config_set("cluster-allow-reads-when-down", "yes")
        assert c.get(key) == "v"
        with pytest.raises(redis.ResponseError,
                           match="^CLUSTERDOWN The cluster is down and only accepts read commands$"):
            c.set(key, "w")
        assert c.config_set("cluster-require-full-coverage", "no")      # Redis: then the cluster is up
        assert c.set(key, "w") and c.get(key) == "w"
        assert c.config_set("cluster-require-full-coverage", "yes")
        assert c.config_set("cluster-allow-reads-when-down", "no")
        assert c.execute_command("CLUSTER", "ADDSLOTS", lo) == "OK"
        assert c.get(key) == "w"
    finally:
        srv.stop()


def test_replica_no_failover(tmp_path):
    """cluster-replica-no-failover yes on the host of a primary's only replica: the nodes of that host carry
    Redis's nofailover flag, and when the primary's process is killed the leader does not promote the replica
    (its slots stay down); CLUSTER FAILOVER TAKEOVER sent to it by hand still promotes it, as in Redis."""
    ports = [free_ports(2, also_bus=True) for _ in range(3)]

    def host(i, *extra):
        return launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", 2000, "--dir",
                       str(tmp_path / ("h%d" % i)), *extra], port=ports[i])
    srvs = [host(0), host(1, "--cluster-replica-no-failover", "yes"), host(2)]
    try:
        r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, p) for p in ports],
                            "--cluster-yes"], timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        assert r.returncode == 0, r.stdout
        ids = [client(p).execute_command("CLUSTER", "MYID") for p in ports]
        for i, p in enumerate(ports):
            assert client(p + 1).execute_command("CLUSTER", "REPLICATE", ids[(i + 1) % 3]) in ("OK", True)
        rep = client(ports[1] + 1).execute_command("CLUSTER", "MYID")    # host 1's replica of host 2's primary
        poll_until(lambda: "nofailover" in nodes(ports[0])[rep][2], timeout=10, what="the nofailover flag")
        assert all("nofailover" not in f[2] for nid, f in nodes(ports[0]).items()
                   if f[1].split("@")[0].endswith(":%d" % (ports[0] + 1)))
        poll_until(lambda: client(ports[1] + 1).execute_command("ROLE")[3] == "connected", timeout=10,
                   what="the replica linked")
        # CLUSTER LINKS: the leader's monitor connections to every node of the other hosts, Redis's fields
        others = {client(p + k).execute_command("CLUSTER", "MYID") for p in ports[1:] for k in (0, 1)}
        poll_until(lambda: {l["node"] for l in _links(ports[0])} == others, timeout=10, what="the leader's links")
        for l in _links(ports[0]):
            assert l["direction"] == "to" and int(l["create-time"]) > 1e12 and l["events"] == "r", l
            assert int(l["send-buffer-allocated"]) == 0 and int(l["send-buffer-used"]) == 0, l
        srvs[2].proc.send_signal(signal.SIGKILL)
        srvs[2].proc.wait(timeout=10)
        poll_until(lambda: "fail" in nodes(ports[0])[ids[2]][2].split(","), timeout=10,
                   what="the killed primary flagged fail")
        time.sleep(2.0)   # a further node timeout: a promotion would have happened by now
        assert "slave" in nodes(ports[0])[rep][2].split(",")
        assert client(ports[1] + 1).execute_command("CLUSTER", "FAILOVER", "TAKEOVER") in ("OK", True)
        poll_until(lambda: "master" in nodes(ports[0])[rep][2], timeout=10, what="the manual takeover")
    finally:
        for s in srvs:
            s.stop()


def _links(port):
    out = []
    for l in client(port).execute_command("CLUSTER", "LINKS"):
        out.append(l if isinstance(l, dict) else dict(zip(l[::2], l[1::2])))
    return out


def _open_move(ports, prefix):
    """A move of the first slot of the first process's primary to the second's, Redis's way: 20 keys of it set
    (and replicated), the target IMPORTING, the source MIGRATING. Returns (node ids, slot, keys)."""
    ids = [client(p).execute_command("CLUSTER", "MYID") for p in ports]
    src, dst = ports[0], ports[1]
    slot = int(_roles(src)[ids[0]][3][0].split("-")[0])
    tag = next("{%s%d}" % (prefix, i) for i in range(200000) if key_slot(b"{%s%d}" % (prefix.encode(), i)) == slot)
    keys = ["%sk%d" % (tag, i) for i in range(20)]
    for i, k in enumerate(keys):
        assert client(src).set(k, i)
    assert client(src).execute_command("WAIT", 1, 10000) == 1
    assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[0]) in ("OK", True)
    assert client(src).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[1]) in ("OK", True)
    return ids, slot, keys


def test_keys_left_on_a_node_that_does_not_serve_their_slot_can_be_migrated_out(tmp_path):
    """A node holding keys of a slot that another node serves, with no state open for it (what a move cut short
    by a failover and redis-cli --cluster fix can leave: fix sets IMPORTING on every node with keys, and the
    topology keeps one importer per slot): MIGRATE moves them to the owner, as fix's "Moving all the slot keys to
    its owner" needs. Redis answers MOVED unless the slot is open on the node."""
    ports, srvs = _cluster3(tmp_path)
    try:
        src, dst = ports[0], ports[1]
        ids, slot, keys = _open_move(ports, "o")
        assert client(src).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys[:5]) in ("OK", True)
        assert client(src).execute_command("CLUSTER", "SETSLOT", slot, "STABLE") in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "STABLE") in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 5
        with pytest.raises(redis.ResponseError, match="^MOVED %d " % slot):
            client(dst).get(keys[0])
        assert client(dst).execute_command("MIGRATE", HOST, src, "", 0, 5000, "KEYS", *keys[:5]) in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        assert client(src).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 20
        assert [client(src).get(k) for k in keys] == [str(i) for i in range(20)]
    finally:
        for s in srvs:
            s.stop()


def test_a_new_primary_drops_the_keys_a_migration_target_holds(tmp_path):
    """What a source that dies between a MIGRATE's RESTORE on the target and its own DEL leaves: its replica
    still holds keys the target has too. Once promoted, the replica asks the target which keys of the slots it
    migrates are there, and drops its copies (logged, so its own replica drops them as well) before it serves
    the slot; meanwhile their commands get TRYAGAIN. No key is then served by two nodes, and the copy written on
    the target keeps its value through the rest of the move."""
    ports, srvs = _cluster3(tmp_path)
    try:
        src, dst = ports[0], ports[1]
        rport = ports[2] + 1                                 # the source's replica (on the third process)
        ids, slot, keys = _open_move(ports, "d")
        # the target's half of a MIGRATE of keys 0..7 (the source's DEL never made): RESTORE after ASKING, as
        # MIGRATE sends it; then a client writes one of them on the target (the source would ASK it there)
        raw = redis.Redis(host=HOST, port=src, socket_timeout=TIMEOUT)
        pipe = redis.Redis(host=HOST, port=dst, socket_timeout=TIMEOUT).pipeline(transaction=False)
        for k in keys[:8]:
            pipe.execute_command("ASKING")
            pipe.execute_command("RESTORE", k, 0, raw.dump(k))
        pipe.execute_command("ASKING")
        pipe.set(keys[0], "written on the target")
        assert all(x in (True, b"OK", "OK") for x in pipe.execute())
        raw.close()
        assert client(rport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)
        rid = client(rport).execute_command("CLUSTER", "MYID")
        poll_until(lambda: _roles(dst)[rid][1] == "master" and client(rport).execute_command("ROLE")[0] == "master",
                   timeout=15, what="the source's replica promoted")

        def served_here(k):
            try:
                client(rport).get(k)
                return True
            except redis.ResponseError as e:
                if str(e).startswith("TRYAGAIN"):
                    return None
                assert str(e) == "ASK %d %s:%d" % (slot, HOST, dst), str(e)
                return False
        poll_until(lambda: served_here(keys[0]) is False, timeout=20, what="the new primary to drop its copy")
        assert [served_here(k) for k in keys] == [False] * 8 + [True] * 12
        assert client(rport).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 12
        # the deletions were logged: the old primary, now the new one's replica, drops them too
        poll_until(lambda: client(src).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 12, timeout=20,
                   what="the old primary to follow the deletions")
        # the move ends with each key once, the one written on the target with its new value
        assert client(rport).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys[8:]) in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[1]) in ("OK", True)
        assert client(rport).execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[1]) in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 20
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[2])], decode_responses=True, socket_timeout=TIMEOUT)
        assert [rc.get(k) for k in keys] == ["written on the target"] + [str(i) for i in range(1, 20)]
        rc.close()
    finally:
        for s in srvs:
            s.stop()


def _writes_go_on(acked, more=20):
    """Wait (bounded) until the writer thread got `more` acknowledgements beyond those it has now: it kept
    writing after what the test just did (a count of writes over a fixed time fails on a loaded machine)."""
    n0 = sum(len(v) for v in acked.values())
    poll_until(lambda: sum(len(v) for v in acked.values()) >= n0 + more, timeout=30, interval=0.05,
               what="the writer's acknowledged writes to go on")


def test_fix_after_a_failover_of_the_target_under_writes(tmp_path):
    """A move half done when the target fails over, then `redis-cli --cluster fix` while a cluster client keeps
    appending to the slot's lists. fix sees keys on the (new) target, picks the source as the owner by key count,
    sends it SETSLOT STABLE and moves the target's keys back. A source that is STABLE while the target still
    imports from it keeps sending missing keys there (-ASK), so a write to a key already moved is not made a
    second copy on the source (which made fix fail with "keys in both nodes having different values" and lost
    the writes of one copy). After fix: one owner, every acknowledged append exactly once, in order."""
    ports, srvs = _cluster3(tmp_path)
    stop = threading.Event()
    try:
        ids = [client(p).execute_command("CLUSTER", "MYID") for p in ports]
        src, dst = ports[0], ports[1]
        tport = ports[0] + 1                                 # the target's replica (on the first process)
        slot = int(_roles(src)[ids[0]][3][0].split("-")[0])
        tag = next("{f%d}" % i for i in range(200000) if key_slot(b"{f%d}" % i) == slot)
        keys = ["%sl%d" % (tag, i) for i in range(60)]
        for i, k in enumerate(keys):
            assert client(src).rpush(k, "init")
        acked = {k: [] for k in keys}
        unknown = set()

        def writer():
            rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[2])], decode_responses=True,
                              socket_timeout=TIMEOUT)
            n = 0
            while not stop.is_set():
                k, v = keys[n % len(keys)], "w%d" % n
                try:
                    rc.rpush(k, v)
                    acked[k].append(v)
                except Exception:                       # noqa: BLE001 (redis-py's cluster errors are not all RedisError)
                    unknown.add(v)
                n += 1
            rc.close()
        th = threading.Thread(target=writer)
        th.start()
        assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[0]) in ("OK", True)
        assert client(src).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[1]) in ("OK", True)
        half = client(src).execute_command("CLUSTER", "GETKEYSINSLOT", slot, 20)
        assert client(src).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *half) in ("OK", True)
        assert client(tport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)
        tid = client(tport).execute_command("CLUSTER", "MYID")
        every = [q for p in ports for q in (p, p + 1)]
        poll_until(lambda: all(_roles(q)[tid][1] == "master" and _roles(q)[ids[1]][1] == "slave" for q in every),
                   timeout=20, what="every node to know the target's replica promoted")
        r = subprocess.run(["redis-cli", "--cluster", "fix", "%s:%d" % (HOST, ports[2]), "--cluster-yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90)
        _writes_go_on(acked)                                 # writes after the fix too
        stop.set()
        th.join(timeout=30)
        assert r.returncode == 0, r.stdout[-3000:]
        assert client(src).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 60
        assert client(tport).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        for k in keys:
            got = client(src).lrange(k, 0, -1)
            assert got[0] == "init" and len(set(got)) == len(got), (k, got)
            assert [v for v in got[1:] if v not in unknown] == acked[k], (k, got, acked[k])
    finally:
        stop.set()
        for s in srvs:
            s.stop()


def test_slot_states_survive_a_failover_of_the_source(tmp_path):
    """A move Redis's way under way (source MIGRATING, target IMPORTING, some keys moved) when the source fails
    over: the states live in the topology log, so the new primary (which has the source's data) is MIGRATING
    now and the target IMPORTING from it; the move is finished from the new primary with nothing lost (Redis
    drops the states with the failover and needs redis-cli --cluster fix)."""
    ports, srvs = _cluster3(tmp_path)
    try:
        src, dst = ports[0], ports[1]
        rport = ports[2] + 1                                 # the source's replica (on the third process)
        ids, slot, keys = _open_move(ports, "m")
        assert client(src).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys[:8]) in ("OK", True)
        assert client(src).execute_command("WAIT", 1, 10000) == 1
        assert client(rport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)
        rid = client(rport).execute_command("CLUSTER", "MYID")
        poll_until(lambda: _roles(dst)[rid][1] == "master" and client(rport).execute_command("ROLE")[0] == "master",
                   timeout=15, what="the source's replica promoted")

        def myline(port):
            return next(l for l in client(port).execute_command("CLUSTER", "NODES").strip().split("\n")
                        if "myself" in l.split()[2])
        assert myline(rport).endswith(" [%d->-%s]" % (slot, ids[1])), myline(rport)
        assert myline(dst).endswith(" [%d-<-%s]" % (slot, rid)), myline(dst)
        # the routing rules hold on the new source: present keys run there, moved ones are ASKed for
        assert client(rport).get(keys[10]) == "10"
        with pytest.raises(redis.ResponseError, match="^ASK %d %s:%d$" % (slot, HOST, dst)):
            client(rport).get(keys[0])
        # finish the move from the new primary
        assert client(rport).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys[8:]) in ("OK", True)
        assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[1]) in ("OK", True)
        assert client(rport).execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[1]) in ("OK", True)
        assert "[" not in myline(rport) and "[" not in myline(dst)
        assert client(dst).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 20
        assert client(rport).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[2])], decode_responses=True, socket_timeout=TIMEOUT)
        assert [rc.get(k) for k in keys] == [str(i) for i in range(20)]
        rc.close()
    finally:
        for s in srvs:
            s.stop()


def test_fix_after_a_failover_of_the_source_under_writes(tmp_path):
    """A move half done when the source fails over (CLUSTER FAILOVER on its replica), a cluster client appending to
    the slot's lists all along, then `redis-cli --cluster fix` (issue 18, the Jepsen harness's `migrate` fault with
    `failover-source`). Between the replica's take-over and the commit of its PROMOTE (which hands it the source's
    MIGRATING state) and after it, a key already moved must not be created again on the new primary: a direct
    write there answers MOVED (to the old primary, while the promotion is not committed), TRYAGAIN (the check
    against the target) or ASK, never OK. fix then ends the move on one owner (redis-cli 7.0 picks the new
    primary by key count, makes it STABLE and moves the target's keys back) with every acknowledged append once,
    in order."""
    ports, srvs = _cluster3(tmp_path)
    stop = threading.Event()
    try:
        ids = [client(p).execute_command("CLUSTER", "MYID") for p in ports]
        src, dst = ports[0], ports[1]
        rport = ports[2] + 1                                 # the source's replica (on the third process)
        slot = int(_roles(src)[ids[0]][3][0].split("-")[0])
        tag = next("{s%d}" % i for i in range(200000) if key_slot(b"{s%d}" % i) == slot)
        keys = ["%sl%d" % (tag, i) for i in range(60)]
        for k in keys:
            assert client(src).rpush(k, "init")
        assert client(src).execute_command("WAIT", 1, 10000) == 1
        acked = {k: [] for k in keys}
        unknown = set()

        def writer():
            rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[2])], decode_responses=True,
                              socket_timeout=TIMEOUT)
            n = 0
            while not stop.is_set():
                k, v = keys[n % len(keys)], "w%d" % n
                try:
                    rc.rpush(k, v)
                    acked[k].append(v)
                except Exception:                       # noqa: BLE001 (redis-py's cluster errors are not all RedisError)
                    unknown.add(v)
                n += 1
            rc.close()
        th = threading.Thread(target=writer)
        th.start()
        assert client(dst).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[0]) in ("OK", True)
        assert client(src).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[1]) in ("OK", True)
        half = client(src).execute_command("CLUSTER", "GETKEYSINSLOT", slot, 20)
        assert client(src).execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *half) in ("OK", True)
        moved = half[0]
        rid = client(rport).execute_command("CLUSTER", "MYID")
        probe = client(rport)
        answers = []

        def probe_moved_key():
            """One RPUSH of a moved key straight to the new primary; True once it answers ASK as the source."""
            try:
                probe.rpush(moved, "probe")
                answers.append("OK")
            except redis.ResponseError as e:
                answers.append(str(e).split(" ")[0])
            return answers[-1] == "ASK" and _roles(rport)[rid][1] == "master"
        assert probe_moved_key() is False and answers == ["MOVED"]
        fo = threading.Thread(target=lambda: client(rport).execute_command("CLUSTER", "FAILOVER"))
        fo.start()
        poll_until(probe_moved_key, timeout=20, what="the new primary to answer ASK for a moved key")
        fo.join(timeout=30)
        assert "OK" not in answers, answers
        assert set(answers) <= {"MOVED", "TRYAGAIN", "ASK"}, answers
        every = [q for p in ports for q in (p, p + 1)]
        poll_until(lambda: all(_roles(q)[rid][1] == "master" and _roles(q)[ids[0]][1] == "slave" for q in every),
                   timeout=20, what="every node to know the source's replica promoted")
        r = subprocess.run(["redis-cli", "--cluster", "fix", "%s:%d" % (HOST, ports[2]), "--cluster-yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90)
        _writes_go_on(acked)                                 # the writer wrote through the whole fix
        stop.set()
        th.join(timeout=30)
        assert r.returncode == 0, r.stdout[-3000:]
        # fix picks the owner by key count (this redis-cli: the new primary, made STABLE, the target's keys moved
        # back to it; or the target, the rest moved there): the keys are all on the slot's owner, once
        def serves(ranges):
            return any(int(r.split("-")[0]) <= slot <= int(r.split("-")[-1]) for r in ranges if r[0] != "[")
        owner = next(q for q, role, _, sl in _roles(rport).values() if role == "master" and serves(sl))
        assert owner in (rport, dst), (owner, r.stdout[-3000:])
        assert client(owner).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 60, r.stdout[-3000:]
        for q in (rport, dst):
            if q != owner:
                assert client(q).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0, r.stdout[-3000:]
        for k in keys:
            got = client(owner).lrange(k, 0, -1)
            assert got[0] == "init" and len(set(got)) == len(got), (k, got)
            assert [v for v in got[1:] if v not in unknown] == acked[k], (k, got, acked[k])
    finally:
        stop.set()
        for s in srvs:
            s.stop()
