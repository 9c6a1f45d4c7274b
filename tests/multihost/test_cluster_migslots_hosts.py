"""Atomic slot migration (CLUSTER MIGRATESLOTS, issue 18) across hosts made of network namespaces, with a fault
half way: the target's host is cut off the network while a held job streams to it (a partition between source
and target; the target's host also loses the topology log), then the link comes back. A client writes to the
moving slots throughout (INCR and RPUSH, every acknowledged write recorded). Afterwards: the source owns and
serves the slots with every acknowledged write exactly once, and the target, whose import ended without a
source that said committing, holds no copy. Ruvio-only (Redis 7.0 has no MIGRATESLOTS)."""

import threading
import time

import pytest
import redis
from redis.crc import key_slot

import test_cluster_hosts
from ruviotest.wait import wait_for
from test_cluster_hosts import (PORTS, REFERENCE, client, cluster_net, cmd, create_cluster,  # noqa: F401
                                start_nodes, topology)

pytestmark = pytest.mark.skipif(REFERENCE, reason="CLUSTER MIGRATESLOTS is ruvio's")

NSLOTS = 4


# The source's shard waits for the target (up to 5 s per network step, docs/cluster.md "The source waits"):
# while the target is cut off, its replies may take that long.
SLOW = 20


def jobs(ip, port):
    c = client(ip, port, timeout=SLOW)
    try:
        entries = c.execute_command("CLUSTER", "GETSLOTMIGRATIONS")
    finally:
        c.close()
    return [e if isinstance(e, dict) else dict(zip(e[0::2], e[1::2])) for e in entries]


def last(ip, port):
    j = jobs(ip, port)
    return j[-1] if j else {}


class Writer(threading.Thread):
    """INCR and RPUSH to keys of the moving slots on the source, each sent until a reply says it ran (TRYAGAIN
    and CLUSTERDOWN say it did not: retried)."""

    def __init__(self, ip, port, tags):
        super().__init__(daemon=True)
        self.ip, self.port, self.tags = ip, port, tags
        self.stop_flag = threading.Event()
        self.incrs, self.pushes, self.count, self.error = {}, {}, 0, None

    def send(self, c, *args):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                return c.execute_command(*args)
            except redis.ResponseError as e:
                if not str(e).startswith(("TRYAGAIN", "CLUSTERDOWN")):
                    raise
                time.sleep(0.005)  # (a retry's pace, not a synchronisation)
        raise AssertionError("%r never ran" % (args,))

    def run(self):
        c = client(self.ip, self.port, timeout=SLOW)
        try:
            i = 0
            while not self.stop_flag.is_set():
                tag = self.tags[i % len(self.tags)]
                ck, lk = "%sc%d" % (tag, i % 8), "%sw%d" % (tag, i % 8)
                self.send(c, "INCR", ck)
                self.incrs[ck] = self.incrs.get(ck, 0) + 1
                self.send(c, "RPUSH", lk, "u%d" % i)
                self.pushes.setdefault(lk, []).append("u%d" % i)
                i += 1
                self.count = i
        except Exception as e:  # reported by the test
            self.error = e
        finally:
            c.close()

    def more(self, n):
        want = self.count + n
        wait_for(lambda: self.count >= want or self.error is not None, timeout=60, interval=0.01,
                 what="%d acknowledged writes" % want)
        assert self.error is None, self.error

    def finish(self):
        self.stop_flag.set()
        self.join(30)
        assert not self.is_alive() and self.error is None, self.error


def test_partition_of_the_target_mid_move(cluster_net, monkeypatch):
    net = cluster_net
    argv = test_cluster_hosts.ruvio_argv  # (DEBUG SLOTMIG-HOLD holds the job half way)
    monkeypatch.setattr(test_cluster_hosts, "ruvio_argv", lambda h, d: argv(h, d) + ["--enable-debug-command", "yes"])
    start_nodes(net)
    create_cluster(net, replicas=0)
    h0, h1 = net["h0"], net["h1"]
    topo = topology(net)
    src_id = next(i for i, t in topo.items() if t[:2] == (h0.ip, PORTS[0]))
    dst_id = next(i for i, t in topo.items() if t[:2] == (h1.ip, PORTS[0]))
    lo = int(topo[src_id][4][0].split("-")[0])
    hi = lo + NSLOTS - 1
    tags = []
    for s in range(lo, hi + 1):
        tags.append(next("{p%d}" % k for k in range(1000000) if key_slot(b"{p%d}" % k) == s))
    src = client(h0.ip, PORTS[0], timeout=SLOW)
    for i in range(400):
        src.set("%sk%d" % (tags[i % NSLOTS], i), "v%d" % i)
    w = Writer(h0.ip, PORTS[0], tags)
    w.start()
    w.more(50)
    assert src.execute_command("DEBUG", "SLOTMIG-HOLD", 1) in ("OK", True)
    assert src.execute_command("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", lo, hi, "NODE", dst_id) in ("OK", True)
    wait_for(lambda: last(h0.ip, PORTS[0]).get("state") == "streaming", timeout=30, interval=0.05,
             what="the job streaming")
    wait_for(lambda: last(h1.ip, PORTS[0]).get("operation") == "IMPORT", timeout=30, interval=0.05,
             what="the import on the target")
    h1.link_down()
    try:
        wait_for(lambda: last(h0.ip, PORTS[0]).get("state") == "failed", timeout=60, interval=0.1,
                 what="the job to fail")
        w.more(50)  # the source takes writes to the slots again
    finally:
        h1.link_up()
    wait_for(lambda: last(h1.ip, PORTS[0]).get("state") in ("failed", "cancelled"), timeout=60, interval=0.1,
             what="the target's import to end")
    w.more(20)
    w.finish()
    dst = client(h1.ip, PORTS[0])
    wait_for(lambda: "cluster_state:ok" in cmd(h1.ip, PORTS[0], "CLUSTER", "INFO"), timeout=30, interval=0.1,
             what="the target's host back in the cluster")
    for s in range(lo, hi + 1):
        assert dst.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0
        assert dst.execute_command("CLUSTER", "GETKEYSINSLOT", s, 10) == []
    for h in net:
        for a, b, *nodes in cmd(h.ip, PORTS[0], "CLUSTER", "SLOTS"):
            if a <= hi and b >= lo:
                assert (nodes[0][0], nodes[0][1]) == (h0.ip, PORTS[0]), (h, a, b, nodes)
    for i in range(400):
        assert src.get("%sk%d" % (tags[i % NSLOTS], i)) == "v%d" % i
    for k, n in w.incrs.items():
        assert src.get(k) == str(n), k
    for k, vals in w.pushes.items():
        assert src.lrange(k, 0, -1) == vals, k
    src.close()
    dst.close()
