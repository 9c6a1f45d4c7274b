"""Three (or more) "hosts" as Linux network namespaces on one bridge, for multi-host tests (issue 5).

    net = Net.create(["primary", "replica1", "replica2"])   # 10.213.X.1, .2, .3 on a fresh bridge
    p = net["primary"].spawn([ruvio, conf], log="primary")  # runs inside the namespace
    net["replica1"].run(["redis-cli", "-h", net["primary"].ip, "PING"])
    net["replica2"].link_down(); ...; net["replica2"].link_up()   # partition and heal
    net.close()                                             # processes, namespaces, links: all gone

The test process itself reaches every host through the bridge, which gets the address .254 (so redis-py
works without entering a namespace); a host whose link is down is unreachable from there too.

Every name carries a per-run random suffix and the creating pid: namespaces `rvmh-<pid>-<suffix>-<i>`,
bridge `rvb<suffix>`, host-side veths `rvv<suffix><i>`. A state file per run lives in STATE_DIR; at
start-up `cleanup_stale()` removes what runs whose process is gone left behind (a crashed or killed pytest).
Cleanup is registered with atexit and is idempotent, so a failing test still leaves nothing.

Needs root and iproute2 with `ip netns`; `unavailable()` says why not, for pytest.skip.
"""

import atexit
import ipaddress
import json
import os
import random
import shutil
import signal
import subprocess
import sys

PREFIX = "rvmh"
STATE_DIR = "/run/ruvio-multihost" if os.path.isdir("/run") else "/tmp/ruvio-multihost"
CMD_TIMEOUT = 20
# Debian's interpreter has python3-redis; the one running pytest may be another.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _ip(*args, check=True, timeout=CMD_TIMEOUT):
    r = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def unavailable():
    """None when namespaces can be used here, else the reason (for pytest.skip)."""
    if os.geteuid() != 0:
        return "multi-host tests need root (network namespaces)"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    probe = "%s-probe-%d" % (PREFIX, os.getpid())
    try:
        r = _ip("netns", "add", probe, check=False)
        if r.returncode != 0:
            return "ip netns add failed: %s" % r.stderr.strip()
        _ip("netns", "del", probe, check=False)
        r = _ip("link", "add", "rvbprobe%d" % (os.getpid() % 10000), "type", "bridge", check=False)
        if r.returncode != 0:
            return "cannot create a bridge: %s" % r.stderr.strip()
        _ip("link", "del", "rvbprobe%d" % (os.getpid() % 10000), check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "ip netns unavailable: %s" % e
    return None


def _die_with_parent():
    """preexec_fn: SIGKILL this child when the test process dies (even by SIGKILL, e.g. a ctest timeout);
    `ip netns exec` execs the command in the same process, so the setting reaches it."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))     # PR_SET_PDEATHSIG
    except Exception:
        pass


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_ns_pids(ns):
    """SIGKILL whatever still runs inside namespace ns."""
    r = _ip("netns", "pids", ns, check=False)
    for tok in r.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def _remove(state):
    for ns in state.get("namespaces", []):
        _kill_ns_pids(ns)
    for ns in state.get("namespaces", []):
        _ip("netns", "del", ns, check=False)
    for link in state.get("links", []):
        _ip("link", "del", link, check=False)       # usually gone with its namespace's peer


def cleanup_stale():
    """Remove namespaces/links of earlier runs whose creating process is gone. Returns what was removed."""
    removed = []
    if os.path.isdir(STATE_DIR):
        for name in os.listdir(STATE_DIR):
            path = os.path.join(STATE_DIR, name)
            try:
                with open(path) as f:
                    state = json.load(f)
            except (OSError, ValueError):
                continue
            if _pid_alive(int(state.get("pid", 0))):
                continue
            _remove(state)
            removed += state.get("namespaces", []) + state.get("links", [])
            try:
                os.unlink(path)
            except OSError:
                pass
    # namespaces without a state file (it was lost): the pid is in the name
    r = _ip("netns", "list", check=False)
    for line in r.stdout.splitlines():
        ns = line.split()[0] if line.split() else ""
        parts = ns.split("-")
        if len(parts) >= 4 and parts[0] == PREFIX and parts[1].isdigit() and not _pid_alive(int(parts[1])):
            _kill_ns_pids(ns)
            _ip("netns", "del", ns, check=False)
            removed.append(ns)
    return removed


class Host:
    def __init__(self, net, index, name, ns, ip, veth):
        self.net = net
        self.index = index
        self.name = name
        self.ns = ns
        self.ip = ip
        self.veth = veth           # host-side end, in the root namespace, on the bridge

    def __repr__(self):
        return "Host(%s %s ns=%s)" % (self.name, self.ip, self.ns)

    def argv(self, argv):
        return ["ip", "netns", "exec", self.ns] + [str(a) for a in argv]

    def run(self, argv, timeout=CMD_TIMEOUT, check=False, input=None):
        """Run argv inside the namespace to completion (bounded); returns CompletedProcess (text)."""
        return subprocess.run(self.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, check=check, input=input)

    def spawn(self, argv, log=None, env=None, cwd=None):
        """Start a long-running process inside the namespace, in its own process group; stdout and stderr
        go to <net.workdir>/<log>.log. It is stopped by net.close() (or stop())."""
        log = log or "%s-%d" % (self.name, len(self.net.procs))
        path = os.path.join(self.net.workdir, log + ".log")
        with open(path, "ab") as out:
            p = subprocess.Popen(self.argv(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, cwd=cwd, start_new_session=True,
                                 preexec_fn=_die_with_parent)
        p.log_path = path
        p.host = self
        self.net.procs.append(p)
        return p

    def python(self, code, timeout=CMD_TIMEOUT):
        """Run python3 -c code inside the namespace (redis-py is importable); returns CompletedProcess."""
        return self.run([PYTHON, "-c", code], timeout=timeout)

    def redis_cli(self, target, port, *args, password=None, timeout=5):
        """redis-cli run inside this namespace against target (a Host or an address); returns CompletedProcess."""
        addr = target.ip if isinstance(target, Host) else target
        argv = ["timeout", str(timeout), "redis-cli", "-h", addr, "-p", str(port)]
        if password:
            argv += ["--no-auth-warning", "-a", password]
        return self.run(argv + [str(a) for a in args], timeout=timeout + 5)

    def can_reach(self, target, port, password=None, timeout=2):
        """True when a PING from this namespace to target:port is answered with PONG."""
        r = self.redis_cli(target, port, "PING", password=password, timeout=timeout)
        return r.returncode == 0 and r.stdout.strip() == "PONG"

    def link_down(self):
        """Partition: cut this host off the bridge (from every other host and from the test process)."""
        _ip("link", "set", self.veth, "down")

    def link_up(self):
        _ip("link", "set", self.veth, "up")


class Net:
    def __init__(self):
        self.hosts = []
        self.procs = []
        self.bridge = None
        self.workdir = None
        self.state_path = None
        self.closed = False
        self.subnet = None
        self.client_ip = None

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.hosts[key]
        for h in self.hosts:
            if h.name == key:
                return h
        raise KeyError(key)

    def __iter__(self):
        return iter(self.hosts)

    @staticmethod
    def _pick_subnet():
        used = _ip("-4", "route", "show", check=False).stdout + _ip("-4", "addr", "show", check=False).stdout
        for _ in range(50):
            net = ipaddress.ip_network("10.213.%d.0/24" % random.randint(1, 254))
            if str(net.network_address)[:-1] not in used:
                return net
        raise RuntimeError("no free 10.213.x.0/24 subnet")

    def _save(self):
        os.makedirs(STATE_DIR, exist_ok=True)
        state = {"pid": os.getpid(), "namespaces": [h.ns for h in self.hosts],
                 "links": [h.veth for h in self.hosts] + ([self.bridge] if self.bridge else [])}
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self.state_path)

    @classmethod
    def create(cls, names=("primary", "replica1", "replica2"), workdir=None):
        """Build len(names) hosts .1, .2, ... on a new bridge; the test process gets .254."""
        cleanup_stale()
        net = cls()
        suffix = "%06x" % random.getrandbits(24)
        net.workdir = workdir or "/tmp/ruvio-multihost-%s" % suffix
        os.makedirs(net.workdir, exist_ok=True)
        net.subnet = cls._pick_subnet()
        net.bridge = "rvb" + suffix
        net.state_path = os.path.join(STATE_DIR, "%s.json" % suffix)
        atexit.register(net.close)
        hosts = [Host(net, i, name, "%s-%d-%s-%d" % (PREFIX, os.getpid(), suffix, i),
                      str(net.subnet.network_address + i + 1), "rvv%s%d" % (suffix, i))
                 for i, name in enumerate(names)]
        try:
            net.hosts = hosts          # recorded before creation, so a half-built net is cleaned up too
            net._save()
            _ip("link", "add", net.bridge, "type", "bridge")
            _ip("link", "set", net.bridge, "up")
            net.client_ip = str(net.subnet.network_address + 254)
            _ip("addr", "add", "%s/%d" % (net.client_ip, net.subnet.prefixlen), "dev", net.bridge)
            for h in hosts:
                peer = "rvp%s%d" % (suffix, h.index)
                _ip("netns", "add", h.ns)
                _ip("link", "add", h.veth, "type", "veth", "peer", "name", peer)
                _ip("link", "set", peer, "netns", h.ns)
                _ip("-n", h.ns, "link", "set", peer, "name", "eth0")
                _ip("-n", h.ns, "addr", "add", "%s/%d" % (h.ip, net.subnet.prefixlen), "dev", "eth0")
                _ip("-n", h.ns, "link", "set", "eth0", "up")
                _ip("-n", h.ns, "link", "set", "lo", "up")
                _ip("link", "set", h.veth, "master", net.bridge)
                _ip("link", "set", h.veth, "up")
        except Exception:
            net.close()
            raise
        return net

    def stop(self, p, grace=5):
        """SIGTERM p's process group, SIGKILL after grace seconds; returns the exit status."""
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=grace)
        return p.returncode

    def kill9(self, p):
        """kill -9 (a crash): the process group at once."""
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=CMD_TIMEOUT)

    def close(self):
        """Stop every process, delete namespaces, veths and the bridge. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            try:
                self.stop(p, grace=3)
            except Exception:
                pass
        try:
            _remove({"namespaces": [h.ns for h in self.hosts],
                     "links": [h.veth for h in self.hosts] + ([self.bridge] if self.bridge else [])})
        except Exception:
            pass
        if self.state_path:
            try:
                os.unlink(self.state_path)
            except OSError:
                pass

    def leftovers(self):
        """Namespaces and links of this net that still exist (empty after close())."""
        names = set(l.split()[0] for l in _ip("netns", "list", check=False).stdout.splitlines() if l.split())
        links = _ip("-o", "link", "show", check=False).stdout
        left = [h.ns for h in self.hosts if h.ns in names]
        left += [x for x in [h.veth for h in self.hosts] + [self.bridge] if x and (" %s:" % x in links or
                                                                                " %s@" % x in links)]
        return left
