"""The system under test for the Jepsen harness: three ruvio nodes (`n1` primary, `n2`, `n3` replicas) on
three hosts made of network namespaces (tests/multihost/netns.py), each with its data directory on its own
small tmpfs (so a full disk is one ballast file) and a delaying proxy (proxy.py) in its namespace through
which it reaches the other nodes for replication, and the faults applied to them. The harness is the
operator: it knows which node it made primary and repoints the others (`REPLICAOF`).

Every wait is bounded; Cluster.close() stops every process, unmounts the tmpfs and removes the namespaces."""

import json
import os
import signal
import subprocess
import sys

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "multihost"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))

import netns  # noqa: E402
from ruviotest.paths import ruvio_bin  # noqa: E402
from ruviotest.procs import read_tail  # noqa: E402
from ruviotest.resp import parse_info_flat as parse_info  # noqa: E402
from ruviotest.wait import wait_for  # noqa: E402

NAMES = ("n1", "n2", "n3")
PORT = 6379
PROXY_BASE = 7000          # on host X, 127.0.0.1:7000+j forwards to node j's 6379 (j = 1..3)
CLIENT_TIMEOUT = 5


def _raw(resp, **kw):
    return resp.decode() if isinstance(resp, bytes) else resp


def client(ip, timeout=CLIENT_TIMEOUT):
    c = redis.Redis(host=ip, port=PORT, socket_timeout=timeout, socket_connect_timeout=timeout,
                    decode_responses=True)
    c.set_response_callback("INFO", _raw)
    return c


class Node:
    def __init__(self, cluster, index, host):
        self.cluster = cluster
        self.index = index             # 1-based
        self.name = host.name
        self.host = host
        self.ip = host.ip
        self.dir = os.path.join(cluster.workdir, self.name)
        self.data = os.path.join(self.dir, "data")
        self.conf = os.path.join(self.dir, "ruvio.conf")
        self.proxy_mode = os.path.join(self.dir, "proxy.json")
        self.ballast = os.path.join(self.data, "ballast")
        self.proc = None
        self.proxy = None
        self.stopped = False           # SIGSTOPped
        self.partitioned = False
        self.mounted = False
        self.restarts = 0

    def __repr__(self):
        return self.name

    def via(self):
        """(host, port) other nodes use to replicate from this one: their own proxy's port for it."""
        return ("127.0.0.1", PROXY_BASE + self.index)

    def client(self, timeout=CLIENT_TIMEOUT):
        return client(self.ip, timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=4000):
        return read_tail(getattr(self.proc, "log_path", None), n)

    def write_conf(self, replicaof, opts):
        lines = ["bind %s 127.0.0.1" % self.ip, "port %d" % PORT, "shards 1", "dir %s" % self.data,
                 "durability %s" % opts.durability, "enable-debug-command yes", "loglevel notice",
                 "repl-timeout %d" % opts.repl_timeout,
                 "min-replicas-to-write %d" % opts.min_replicas, "min-replicas-max-lag 5"]
        if replicaof is not None:
            lines.append("replicaof %s %d" % replicaof.via())
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self, wait=True):
        self.proc = self.host.spawn([netns_bin(), self.conf, "--logfile", ""], log="ruvio-%s" % self.name)
        self.stopped = False
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=20):
        def up():
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.returncode, self.log_tail()))
            try:
                return self.client(1).ping()
            except redis.exceptions.RedisError:
                return False
        wait_for(up, timeout=timeout, what="%s answering PING" % self.name)

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, AttributeError):
            pass

    def set_proxy(self, mode, ms=0):
        tmp = self.proxy_mode + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"mode": mode, "ms": ms}, f)
        os.replace(tmp, self.proxy_mode)

    def fill_disk(self):
        """Fill the tmpfs with a ballast file; returns the bytes taken."""
        st = os.statvfs(self.data)
        free = st.f_bavail * st.f_frsize
        with open(self.ballast, "wb") as f:
            try:
                os.posix_fallocate(f.fileno(), 0, free)
            except OSError:
                pass
        try:
            with open(self.ballast, "ab") as f:       # what fallocate left (rounding): fill to ENOSPC
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        except OSError:
            pass
        return os.path.getsize(self.ballast)

    def free_disk(self):
        try:
            os.unlink(self.ballast)
            return True
        except FileNotFoundError:
            return False

    def info(self, timeout=CLIENT_TIMEOUT):
        """INFO replication as {field: str}, or None when the node does not answer."""
        try:
            i = parse_info(self.client(timeout).execute_command("INFO", "replication"))
        except redis.exceptions.RedisError:
            return None
        self.cluster.note_info(i)
        return i


def netns_bin():
    return ruvio_bin()


class Cluster:
    def __init__(self, opts, workdir):
        self.opts = opts
        self.workdir = workdir
        self.net = None
        self.nodes = []
        self.primary = None            # the node the operator (harness) made primary
        self.lineage = {}              # replid -> (replid2, second_repl_offset), from every INFO read

    def note_info(self, info):
        """Learn a link between histories: a node at replid R that continues replid2 up to second_repl_offset."""
        r, r2 = info.get("master_replid"), info.get("master_replid2")
        if r and r2 and r2 != "0" * 40 and r2 != r and info.get("second_repl_offset", "").lstrip("-").isdigit():
            self.lineage.setdefault(r, (r2, int(info["second_repl_offset"])))

    def __getitem__(self, name):
        return next(n for n in self.nodes if n.name == name)

    def by_via(self, host, port):
        """The node a replica's ROLE (host, port) names: a proxy port or a node's own address."""
        for n in self.nodes:
            if (str(host), int(port)) in (n.via(), (n.ip, PORT)):
                return n
        return None

    @staticmethod
    def unmount_stale():
        """Unmount the tmpfs data directories of earlier runs whose harness process is gone (killed by a
        ctest timeout, say): their data would otherwise hold memory until reboot."""
        try:
            with open("/proc/mounts") as f:
                mounts = [line.split()[1] for line in f if line.startswith("tmpfs ")]
        except OSError:
            return
        for m in mounts:
            work = os.path.dirname(os.path.dirname(m))
            if os.path.basename(m) != "data" or os.path.basename(os.path.dirname(m)) not in NAMES:
                continue
            try:
                with open(os.path.join(work, "owner.pid")) as f:
                    pid = int(f.read())
            except (OSError, ValueError):
                continue
            if not netns._pid_alive(pid):
                subprocess.run(["umount", "-l", m], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20)

    def create(self):
        self.unmount_stale()
        os.makedirs(self.workdir, exist_ok=True)
        with open(os.path.join(self.workdir, "owner.pid"), "w") as f:
            f.write(str(os.getpid()))
        self.net = netns.Net.create(NAMES, workdir=self.workdir)
        self.nodes = [Node(self, i + 1, h) for i, h in enumerate(self.net)]
        for n in self.nodes:
            os.makedirs(n.data, exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % self.opts.disk_mb, "tmpfs", n.data],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
            if r.returncode != 0:
                raise RuntimeError("mount tmpfs on %s: %s" % (n.data, r.stdout.strip()))
            n.mounted = True
            n.set_proxy("pass")
            maps = ["%d=%s:%d" % (m.via()[1], m.ip, PORT) for m in self.nodes if m is not n]
            n.proxy = n.host.spawn([sys.executable, os.path.join(HERE, "proxy.py"), "--control", n.proxy_mode]
                                   + maps, log="proxy-%s" % n.name)
        self.primary = self.nodes[0]
        for n in self.nodes:
            n.write_conf(None if n is self.primary else self.primary, self.opts)
            n.start(wait=False)
        for n in self.nodes:
            n.wait_ready()

    def close(self):
        if self.net is not None:
            for n in self.nodes:
                if n.stopped:
                    n.signal(signal.SIGCONT)
            self.net.close()
        for n in self.nodes:
            if n.mounted:
                subprocess.run(["umount", "-l", n.data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20)
                n.mounted = False

    def leftovers(self):
        return self.net.leftovers() if self.net else []

    # -- roles, as the operator sees them --------------------------------------------------------------

    def roles(self):
        """{node: ('master', epoch, info) | ('slave', upstream node or None, info) | None (no answer)}."""
        out = {}
        for n in self.nodes:
            i = n.info(timeout=2) if n.alive() and not n.stopped and not n.partitioned else None
            if i is None:
                out[n] = None
            elif i.get("role") == "master":
                out[n] = ("master", int(i.get("repl_epoch", 0)), i)
            else:
                out[n] = ("slave", self.by_via(i.get("master_host", ""), i.get("master_port", 0) or 0), i)
        return out

    def replicaof(self, n, target):
        """REPLICAOF through n's proxy (target None: NO ONE), then CONFIG REWRITE as Sentinel does, so a restart
        keeps the role. Returns the replies or the error text."""
        try:
            c = n.client(10)
            if target is None:
                r = c.execute_command("REPLICAOF", "NO", "ONE")
            else:
                r = c.execute_command("REPLICAOF", *target.via())
        except redis.exceptions.RedisError as e:
            return "error: %s" % e
        return "%s, %s" % (r, self.rewrite(n))

    def rewrite(self, n):
        try:
            return "CONFIG REWRITE %s" % n.client(10).execute_command("CONFIG", "REWRITE")
        except redis.exceptions.RedisError as e:
            return "CONFIG REWRITE error: %s" % e

    def expected_role(self, n):
        """The role the operator gave n: ('master', None) or ('slave', primary)."""
        return ("master", None) if n is self.primary else ("slave", self.primary)
