"""The system under test of the harness's cluster mode (`run.py --mode cluster`, README.md): three hosts made of
network namespaces (`n1` `n2` `n3`), each running ONE ruvio process with two shards and `cluster-enabled yes`
(so six Redis Cluster nodes, on ports 7000 and 7001 of each host), made one cluster by `redis-cli --cluster
create ... --cluster-replicas 1`. The harness is not the operator here: the control plane (the topology log's
leader) fails primaries over by itself.

Every wait is bounded; RCluster.close() stops every process, unmounts the tmpfs and removes the namespaces."""

import os
import signal
import subprocess
import sys

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster as cl  # noqa: E402  (puts tests/multihost and tests/pylib on the path)
import netns  # noqa: E402
from ruviotest.resp import parse_info_flat as parse_info  # noqa: E402
from ruviotest.wait import wait_for  # noqa: E402

NAMES = cl.NAMES
PORTS = (7000, 7001)
NSLOTS = 16384


def client(ip, port, timeout=5):
    c = redis.Redis(host=ip, port=port, socket_timeout=timeout, socket_connect_timeout=timeout,
                    decode_responses=True)
    c.set_response_callback("INFO", cl._raw)
    c.set_response_callback("CLUSTER", cl._raw)
    return c


def cmd(ip, port, *args, timeout=5):
    c = client(ip, port, timeout)
    try:
        return c.execute_command(*args)
    finally:
        c.close()


def parse_kv(text):
    return dict(line.split(":", 1) for line in str(text).strip().splitlines() if ":" in line)


def parse_nodes(text):
    """CLUSTER NODES as {id: dict(addr, ip, port, flags, primary, epoch, slots, myself)}."""
    out = {}
    for line in str(text).strip().splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        addr = f[1].split("@")[0].split(",")[0]
        ip, _, port = addr.rpartition(":")
        flags = [x for x in f[2].split(",") if x != "myself"]
        out[f[0]] = {"addr": addr, "ip": ip, "port": int(port or 0), "flags": sorted(flags), "primary": f[3],
                     "epoch": int(f[6]) if f[6].isdigit() else f[6], "slots": f[8:], "myself": "myself" in f[2],
                     "link": f[7]}
    return out


def slot_set(ranges):
    s = set()
    for r in ranges:
        if r.startswith("["):
            continue
        a, _, b = r.partition("-")
        s.update(range(int(a), int(b or a) + 1))
    return s


class Host:
    def __init__(self, rc, index, h):
        self.rc = rc
        self.index = index
        self.name = h.name
        self.h = h
        self.ip = h.ip
        self.dir = os.path.join(rc.workdir, self.name)
        self.data = os.path.join(self.dir, "data")
        self.conf = os.path.join(self.dir, "ruvio.conf")
        self.proc = None
        self.stopped = False
        self.partitioned = False
        self.mounted = False

    def __repr__(self):
        return self.name

    def addrs(self):
        return ["%s:%d" % (self.ip, p) for p in PORTS]

    def write_conf(self, opts):
        lines = ["bind %s 127.0.0.1" % self.ip, "port %d" % PORTS[0], "shards %d" % len(PORTS),
                 "cluster-enabled yes", "cluster-config-file nodes.conf",
                 "cluster-node-timeout %d" % opts.node_timeout, "dir %s" % self.data,
                 "durability %s" % opts.durability, "enable-debug-command yes", "loglevel notice"]
        # `--ack sync`: synchronous replication; a write's own OK is then its acknowledgement (no WAIT).
        if opts.ack == "sync":
            lines.append("min-sync-replicas 1")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def reachable(self):
        return self.alive() and not self.stopped and not self.partitioned

    def start(self, timeout=30):
        self.proc = self.h.spawn([cl.netns_bin(), self.conf, "--logfile", ""], log="ruvio-%s" % self.name)
        self.stopped = False

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.returncode,
                                                               cl.read_tail(self.proc.log_path, 4000)))
            try:
                return all(cmd(self.ip, p, "PING", timeout=1) for p in PORTS)
            except redis.exceptions.RedisError:
                return False
        wait_for(up, timeout=timeout, interval=0.1, what="%s answering PING on both ports" % self.name)

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, AttributeError):
            pass

    def kill9(self):
        self.signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def cluster_info(self, port=PORTS[0], timeout=2):
        try:
            return parse_kv(cmd(self.ip, port, "CLUSTER", "INFO", timeout=timeout))
        except redis.exceptions.RedisError:
            return None


class RCluster:
    def __init__(self, opts, workdir):
        self.opts = opts
        self.workdir = workdir
        self.net = None
        self.hosts = []
        self.ranges = []          # the slot ranges `create` gave the three first primaries: one shard group each

    def __getitem__(self, name):
        return next(h for h in self.hosts if h.name == name)

    def host_of(self, ip):
        return next((h for h in self.hosts if h.ip == ip), None)

    def create(self):
        cl.Cluster.unmount_stale()
        os.makedirs(self.workdir, exist_ok=True)
        with open(os.path.join(self.workdir, "owner.pid"), "w") as f:
            f.write(str(os.getpid()))
        self.net = netns.Net.create(NAMES, workdir=self.workdir)
        self.hosts = [Host(self, i, h) for i, h in enumerate(self.net)]
        for h in self.hosts:
            os.makedirs(h.data, exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % self.opts.disk_mb, "tmpfs", h.data],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
            if r.returncode != 0:
                raise RuntimeError("mount tmpfs on %s: %s" % (h.data, r.stdout.strip()))
            h.mounted = True
            h.write_conf(self.opts)
        for h in self.hosts:
            h.start()
        # primaries first, one per host (redis-cli puts the replicas on other hosts: its anti-affinity by IP)
        addrs = ["%s:%d" % (h.ip, p) for p in PORTS for h in self.hosts]
        r = self.hosts[0].h.run(["timeout", "60", "redis-cli", "--cluster", "create", *addrs, "--cluster-replicas",
                                 "1", "--cluster-yes"], timeout=70)
        if r.returncode != 0:
            raise RuntimeError("redis-cli --cluster create failed:\n%s%s" % (r.stdout[-3000:], r.stderr[-2000:]))
        wait_for(lambda: self.settled(need_replicas=True), timeout=30, interval=0.2,
                 what="three primaries with a synced replica each, one view on all six nodes")
        view = self.view(self.hosts[0].ip, PORTS[0])
        self.ranges = sorted(sorted(slot_set(n["slots"])) for n in view.values() if n["slots"])
        self.ranges = [(r[0], r[-1]) for r in self.ranges]
        return r.stdout

    def group_of(self, slot):
        for i, (a, b) in enumerate(self.ranges):
            if a <= slot <= b:
                return i
        return -1

    def close(self):
        if self.net is not None:
            for h in self.hosts:
                if h.stopped:
                    h.signal(signal.SIGCONT)
                if h.partitioned:
                    h.h.link_up()
            self.net.close()
        for h in self.hosts:
            if h.mounted:
                subprocess.run(["umount", "-l", h.data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20)
                h.mounted = False

    def leftovers(self):
        return self.net.leftovers() if self.net else []

    # -- what the cluster says ----------------------------------------------------------------------------

    @staticmethod
    def view(ip, port, timeout=2):
        return parse_nodes(cmd(ip, port, "CLUSTER", "NODES", timeout=timeout))

    def leaders(self):
        """Hosts (reachable from the harness) whose CLUSTER INFO says they lead the topology log."""
        out = []
        for h in self.hosts:
            if h.reachable():
                i = h.cluster_info(timeout=1)
                if i and i.get("topology_log_leader") == "1":
                    out.append(h)
        return out

    def leader(self):
        ls = self.leaders()
        return ls[0] if len(ls) == 1 else None

    def nodes(self):
        """[(host, port)] of every node."""
        return [(h, p) for h in self.hosts for p in PORTS]

    def settled(self, need_replicas=False):
        """The cluster as a whole is well: every node answers, one CLUSTER NODES view (ids, addresses, flags,
        primaries, epochs, slots) everywhere, cluster_state ok everywhere, every slot served; with need_replicas,
        also three primaries each with a replica whose link is up. Returns the view or None."""
        views = []
        try:
            for h, p in self.nodes():
                if not h.reachable():
                    return None
                v = self.view(h.ip, p, timeout=1)
                if any("fail" in n["flags"] or "fail?" in n["flags"] for n in v.values()):
                    return None
                views.append({k: (n["addr"], n["flags"], n["primary"], n["epoch"],
                                  [r for r in n["slots"] if not r.startswith("[")])    # (a node's own open slots)
                              for k, n in v.items()})
                i = parse_kv(cmd(h.ip, p, "CLUSTER", "INFO", timeout=1))
                if i.get("cluster_state") != "ok":
                    return None
            if any(v != views[0] for v in views):
                return None
            v = views[0]
            prim = [k for k, n in v.items() if "master" in n[1]]
            if need_replicas:
                reps = [k for k, n in v.items() if "slave" in n[1]]
                if len(prim) != 3 or len(reps) != 3 or set(v[k][2] for k in reps) != set(prim):
                    return None
                for k in reps:
                    ip, _, port = v[k][0].rpartition(":")
                    ri = parse_info(cmd(ip, int(port), "INFO", "replication", timeout=1))
                    if ri.get("master_link_status") != "up":
                        return None
        except (redis.exceptions.RedisError, OSError, ValueError):
            return None
        return views[0]
