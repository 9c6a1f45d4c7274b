"""Node.js cluster clients unchanged (issue 16): ioredis's Cluster and node-redis's createCluster against a cluster
with a replica per primary, replica reads on (ioredis scaleReads 'slave', node-redis useReplicas: both send
READONLY to replicas), through a CLUSTER FAILOVER that the test triggers while the client writes and reads.

Each client runs tests/clients/cluster_client.js (its libraries pinned in tests/clients/package-lock.json,
installed by `scripts/deps.sh test` with `npm ci`); every line it prints is JSON. The tests skip when node or
tests/clients/node_modules is missing (as its own ctest, that session then exits with the skip code).

Against ruvio: three processes of two shards on loopback (three "hosts"), made one cluster by `redis-cli --cluster
create --cluster-replicas 1`. Reference mode (RUVIO_TARGET=redis): six redis-server --cluster-enabled yes, the
same create, the same assertions."""

import json
import os
import shutil
import subprocess
import threading

import pytest
import redis
from redis.crc import key_slot

from conftest import HOST, IS_REDIS, REPO, TIMEOUT, free_ports, launch, poll_until

CLIENTS = os.path.join(REPO, "tests", "clients")
SCRIPT = os.path.join(CLIENTS, "cluster_client.js")
NODE = shutil.which("node")
LIBS = {"ioredis": "ioredis", "node-redis": "redis"}
NODE_TIMEOUT_MS = 2000
KEYS = 300
SCRIPT_TIMEOUT = 120     # the whole client run: bounded, generous for a loaded 2-core machine


def _missing():
    if NODE is None:
        return "node is not installed (scripts/deps.sh test installs nodejs and npm)"
    for lib in LIBS.values():
        if not os.path.isfile(os.path.join(CLIENTS, "node_modules", lib, "package.json")):
            return "tests/clients/node_modules/%s is missing (run `npm ci` in tests/clients, or scripts/deps.sh test)" \
                % lib
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def client(port):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT,
                       decode_responses=True)


def cmd(port, *args):
    c = client(port)
    try:
        return c.execute_command(*args)
    finally:
        c.close()


def roles(port):
    """{node id: (port, 'master'|'slave', primary id)} from CLUSTER NODES of the node at port."""
    out = {}
    for line in cmd(port, "CLUSTER", "NODES").strip().splitlines():
        f = line.split()
        out[f[0]] = (int(f[1].split("@")[0].rsplit(":", 1)[1]), "master" if "master" in f[2] else "slave", f[3])
    return out


def get_calls(port):
    """GETs the node at port executed (INFO commandstats; redis-py parses each entry into a dict)."""
    c = client(port)
    try:
        return int(c.info("commandstats").get("cmdstat_get", {}).get("calls", 0))
    finally:
        c.close()


class Cluster:
    def __init__(self):
        self.servers = []
        self.ports = []

    def start(self):
        common = ["--cluster-enabled", "yes", "--cluster-node-timeout", NODE_TIMEOUT_MS]
        if IS_REDIS:
            for _ in range(6):
                self.servers.append(launch(common + ["--cluster-config-file", "nodes.conf"],
                                           port=free_ports(1, also_bus=True)))
            self.ports = [s.port for s in self.servers]
            addrs = self.ports
        else:
            for _ in range(3):      # a host: one process, two shards (nodes)
                self.servers.append(launch(["--shards", 2] + common, port=free_ports(2, also_bus=True)))
            self.ports = [s.port + k for s in self.servers for k in range(2)]
            addrs = [s.port + k for k in range(2) for s in self.servers]    # a primary per host first
        r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, p) for p in addrs],
                            "--cluster-replicas", "1", "--cluster-yes"], timeout=90,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        self.wait_settled()
        # Redis lists a replica in CLUSTER SLOTS only once its replication offset is above 0 (it took some
        # data): one write per primary, then every node lists a replica beside each primary
        for nid, (port, role, _) in roles(self.ports[0]).items():
            if role == "master":
                c = client(port)
                for k in range(20000):
                    if c.execute_command("CLUSTER", "COUNTKEYSINSLOT", key_slot(b"seed%d" % k)) == 0 and \
                            self.owner(key_slot(b"seed%d" % k)) == port:
                        assert c.set("seed%d" % k, "x")
                        break
                c.close()

        def listed():
            return all(len(r) >= 4 for p in self.ports for r in cmd(p, "CLUSTER", "SLOTS"))
        poll_until(listed, timeout=30, interval=0.1, what="a replica beside each primary in CLUSTER SLOTS")
        return self

    def owner(self, slot):
        for r in cmd(self.ports[0], "CLUSTER", "SLOTS"):
            if r[0] <= slot <= r[1]:
                return r[2][1]
        return None

    def wait_settled(self):
        """Every node sees three primaries and three replicas, every replica linked to its primary, and
        every node says cluster_state:ok."""
        def settled():
            for p in self.ports:
                rs = roles(p)
                if sorted(v[1] for v in rs.values()) != ["master"] * 3 + ["slave"] * 3:
                    return False
                info = dict(l.split(":", 1) for l in cmd(p, "CLUSTER", "INFO").splitlines() if ":" in l)
                if info.get("cluster_state") != "ok":
                    return False
            for nid, (port, role, prim) in roles(self.ports[0]).items():
                if role == "slave":
                    r = cmd(port, "ROLE")
                    if r[0] != "slave" or r[3] != "connected":
                        return False
            return True
        poll_until(settled, timeout=30, interval=0.1, what="three primaries, three linked replicas, state ok")

    def leads_log(self, port):
        """ruvio: the process of the node at port leads the topology log (its host proposes topology changes
        itself; the other hosts have theirs forwarded)."""
        if IS_REDIS:
            return False
        info = dict(l.split(":", 1) for l in cmd(port, "CLUSTER", "INFO").splitlines() if ":" in l)
        return info.get("topology_log_leader") == "1"

    def failover_target(self, i):
        """The i-th replica (modulo 3) in a fixed order: first those on hosts that do not lead the topology
        log, so that the promotion is proposed through another host; (id, (port, role, primary id))."""
        reps = sorted(self.replicas().items(), key=lambda kv: (self.leads_log(kv[1][0]), kv[1][0]))
        return reps[i % len(reps)]

    def replicas(self):
        return {nid: v for nid, v in roles(self.ports[0]).items() if v[1] == "slave"}

    def stop(self):
        for s in self.servers:
            s.stop()


@pytest.fixture
def cluster():
    """A fresh cluster per test: one client's failover does not leave the next a cluster in transition."""
    c = Cluster()
    try:
        yield c.start()
    finally:
        c.stop()


def lines_of(proc, sink):
    for line in proc.stdout:
        sink.append(line)


def next_json(proc, sink, seen, timeout):
    """The next JSON line the script printed (bounded); AssertionError with its output if none came."""
    def got():
        return len(sink) > seen or proc.poll() is not None
    poll_until(got, timeout=timeout, interval=0.05, what="a line from the client script")
    if len(sink) <= seen:
        proc.wait(timeout=10)
        raise AssertionError("client script exited with %s:\n%s\n%s" % (proc.returncode, "".join(sink),
                                                                        proc.stderr.read()[-4000:]))
    line = sink[seen]
    try:
        return json.loads(line)
    except ValueError:
        raise AssertionError("not JSON from the client script: %r" % line)


@pytest.mark.parametrize("lib", sorted(LIBS))
def test_cluster_client_reads_replicas_and_survives_failover(cluster, lib):
    reps = cluster.replicas()
    rep_ports = [v[0] for v in reps.values()]
    gets0 = {p: get_calls(p) for p in rep_ports}
    proc = subprocess.Popen([NODE, SCRIPT, lib, "%s:%d" % (HOST, cluster.ports[0]), "--keys", str(KEYS),
                             "--prefix", "cc"], cwd=CLIENTS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out = []
    reader = threading.Thread(target=lines_of, args=(proc, out), daemon=True)
    reader.start()
    try:
        ready = next_json(proc, out, 0, SCRIPT_TIMEOUT)
        assert ready["phase"] == "ready" and ready["writes"] == KEYS, ready
        # replica reads: the replicas execute GETs (READONLY accepted), not only MOVED them on (a client may
        # learn of the replicas at its first slot refresh, so this is waited for while the client runs)
        def served():
            return sum(get_calls(p) - gets0[p] for p in rep_ports)
        poll_until(lambda: served() > 0, timeout=30, interval=0.2, what="a GET executed by a replica")

        # CLUSTER FAILOVER on a replica while the client writes and reads
        rid, (rport, _, pid) = cluster.failover_target(sorted(LIBS).index(lib))
        assert cmd(rport, "CLUSTER", "FAILOVER") in ("OK", True)

        def swapped():
            v = roles(rport)
            return v[rid][1] == "master" and v[pid][1:] == ("slave", rid)
        poll_until(swapped, timeout=30, interval=0.05, what="replica %d promoted by CLUSTER FAILOVER" % rport)
        cluster.wait_settled()
        before = len(out)
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        done = next_json(proc, out, before, SCRIPT_TIMEOUT)
        assert proc.wait(timeout=30) == 0, done
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    print("\n%s: %s" % (lib, json.dumps(done)))
    assert done["phase"] == "done", done
    assert done["lost_count"] == 0 and done["wrong_count"] == 0, done
    assert done["keys"] == 2 * KEYS and done["during"] > 0, done
    assert done["writes"] == 2 * KEYS + done["during"], done
    # the promoted node serves its slots as a primary now, and the client's writes went there too
    assert cmd(rport, "ROLE")[0] == "master"
