"""Cluster mode on one host (issue 16, docs/cluster.md): cluster-enabled yes, the topology in a Raft log of this
host, the node identities in cluster-config-file. A new node knows only itself until redis-cli --cluster create
(ADDSLOTS, SET-CONFIG-EPOCH, MEET) makes the host's nodes one cluster; topology-changing commands reply once the
change is committed, with Redis's error texts; the topology and the identities survive restarts and kill -9."""

import os
import signal
import subprocess

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from conftest import HOST, TIMEOUT, free_ports, launch, poll_until

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
        with pytest.raises(redis.ResponseError, match="not supported yet"):
            c.execute_command("CLUSTER", "MEET", "10.99.99.99", 7000)
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
