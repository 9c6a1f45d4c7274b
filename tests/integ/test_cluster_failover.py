"""CLUSTER FAILOVER on every replica of a three-process cluster, then back (issue 16, docs/cluster.md): the
hand-over happens in the data plane first and its PROMOTE is committed afterwards, so these pin down the two
paths the jepsen cluster mode found broken:
- a replica whose host does not lead the topology log (its PROMOTE must reach the leader's host, and the roles
  the data plane swapped must not be undone by the topology in the meantime);
- a primary that is not shard 0 of its process (FAILOVER TO finds its target by the node's own port)."""

import subprocess
import threading

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from conftest import HOST, TIMEOUT, free_ports, launch, poll_until
from test_cluster_mode import _roles, client, info

pytestmark = pytest.mark.ruvio_only


def _leads(port):
    return info(port)["topology_log_leader"] == "1"


def _failover(ports, rport):
    """CLUSTER FAILOVER on the replica at rport; wait until every process shows it as the primary and the data
    plane agrees on both sides."""
    rid = client(rport).execute_command("CLUSTER", "MYID")
    old = _roles(rport)[rid][2]
    assert client(rport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)

    def done():
        for p in ports:
            v = _roles(p)
            if v[rid][1] != "master" or v[old][1:3] != ("slave", rid):
                return False
        oport = _roles(rport)[old][0]
        # (linked, not only configured: a FAILOVER back needs its replica connected)
        return (client(rport).execute_command("ROLE")[0] == "master"
                and client(oport).execute_command("ROLE")[:4] == ["slave", HOST, rport, "connected"])
    poll_until(done, timeout=20, what="CLUSTER FAILOVER on %d committed everywhere" % rport)
    return old


def test_failover_from_any_host_and_back_under_writes(tmp_path):
    ports = [free_ports(2, also_bus=True) for _ in range(3)]
    srvs = [launch(["--shards", 2, "--cluster-enabled", "yes", "--cluster-node-timeout", "3000", "--dir",
                    str(tmp_path / ("h%d" % i)), "--durability", "everysec"], port=p) for i, p in enumerate(ports)]
    stop = threading.Event()
    acked, errors = [], []
    try:
        addrs = ["%s:%d" % (HOST, p + k) for k in range(2) for p in ports]
        r = subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "1",
                            "--cluster-yes"], timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        every = [p + k for p in ports for k in range(2)]
        for p in every:
            poll_until(lambda: client(p).execute_command("ROLE")[0] == "master"
                       or client(p).execute_command("ROLE")[3] == "connected", timeout=15,
                       what="replica %d linked" % p)

        def writer():
            rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[0])], decode_responses=True,
                              socket_timeout=TIMEOUT, cluster_error_retry_attempts=10)
            i = 0
            while not stop.is_set():
                try:
                    rc.set("w%d" % i, i)
                    acked.append(i)
                except (redis.RedisError, OSError) as e:
                    errors.append(repr(e))
                i += 1
            rc.close()
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        # the replicas whose host does not lead the log first: their PROMOTE goes to another host
        reps = [v[0] for v in _roles(ports[0]).values() if v[1] == "slave"]
        reps.sort(key=lambda p: _leads(p))
        assert not _leads(reps[0]), "every replica is on the leader's host?"
        olds = [(_failover(every, rp), rp) for rp in reps]
        # and back: the old primaries take their slots again (now some primaries are shard 1 of their process)
        for old, rp in olds:
            oport = _roles(rp)[old][0]
            _failover(every, oport)
        stop.set()
        th.join(timeout=30)
        assert acked, errors[-5:]
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, ports[1])], decode_responses=True, socket_timeout=TIMEOUT)
        missing = [i for i in acked if rc.get("w%d" % i) != str(i)]
        assert missing == [], "acknowledged writes lost: %s" % missing[:10]
        assert all(info(p)["cluster_state"] == "ok" for p in every)
        rc.close()
    finally:
        stop.set()
        for s in srvs:
            s.stop()
