#!/usr/bin/python3
"""Ruvio vs Redis benchmark: paired throughput rounds, server CPU per op, memory per key.

Stdlib only.  Run with Debian's /usr/bin/python3.  See docs/BENCHMARKS.md.

Throughput
    For every round r and pipeline depth P: start a fresh server, do an
    unmeasured warm-up, run every selected test once with redis-benchmark,
    stop it; then the same for the other server.  The server that goes first
    alternates from round to round.  Only one server is alive at a time.
    Servers are pinned to CPU 0 and redis-benchmark to CPU 1 (taskset).
    Per run we record rps (redis-benchmark --csv) and the CPU time the server
    consumed during the run (sum of /proc/PID/task/*/schedstat field 1, ns),
    i.e. server CPU ns per request.

Suites (--suite)
    core  (default) PING_MBULK SET GET INCR MSET; memory loads SET, INCR.
    types LPUSH RPUSH LPOP RPOP SADD SPOP HSET ZADD LRANGE_100/300/600;
          memory loads HSET, ZADD, SADD (string members), SADD (int members).
    all   both.
    Replies of the type tests are checked before/after each run (LLEN,
    SCARD, HGET, ZSCORE, LRANGE length); pops run against a non-empty
    list/set; the LPUSH prefill that redis-benchmark runs before LRANGE_* is
    excluded from the server CPU figure (CPU snapshot at its CSV line).

Memory
    For each server and each load (1M SET with 64-byte values, 1M INCR
    counters; for the types suite 80k hashes/zsets/sets of 4 elements) a
    fresh server: RSS idle, load over one raw connection at pipeline 200
    (every reply verified), DBSIZE check, settle 1 s, RSS again.

The "ruvio" side can be any command line (--ruvio-cmd), which is how the
script is validated with redis-server standing in for both sides.
"""

import argparse
import atexit
import datetime
import json
import math
import os
import platform
import resource
import selectors
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))

from ruviotest.net import free_port  # noqa: E402,F401  (churn.py and the others use bench.free_port too)
from ruviotest import procs  # noqa: E402
from ruviotest.procs import rss_kib  # noqa: E402
from ruviotest.resp import encode_command as resp_cmd  # noqa: E402
from ruviotest.wait import wait_for  # noqa: E402

DEFAULT_RUVIO_CMD = ("{bin} --port {port} --bind 127.0.0.1 --dir {dir} "
                     "--shards 1 --durability memory")
DEFAULT_REDIS_CMD = ("redis-server --port {port} --save '' --appendonly no "
                     "--bind 127.0.0.1 --dir {dir}")
CORE_TESTS = ["PING_MBULK", "SET", "GET", "INCR", "MSET"]
TYPES_TESTS = ["LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "SPOP", "HSET", "ZADD",
               "LRANGE_100", "LRANGE_300", "LRANGE_600"]
TESTS = CORE_TESTS  # historical name: the default (core) test list
ALL_TESTS = CORE_TESTS + TYPES_TESTS
SUITES = {"core": CORE_TESTS, "types": TYPES_TESTS, "all": ALL_TESTS}
SUITE_OF = dict([(t, "core") for t in CORE_TESTS] + [(t, "types") for t in TYPES_TESTS])
# LRANGE_N returns N elements per request, so it is 10-60x slower than a
# plain command; by default it runs n/divisor requests (not below
# LRANGE_MIN_N) so a run takes about as long as the others (--lrange-full: n).
LRANGE_LEN = {"LRANGE_100": 100, "LRANGE_300": 300, "LRANGE_600": 600}
LRANGE_DIVISOR = {"LRANGE_100": 10, "LRANGE_300": 20, "LRANGE_600": 40}
LRANGE_MIN_N = 2000
# tests for which redis-benchmark runs an extra LPUSH phase first
PREFILL_TESTS = set(LRANGE_LEN)
# memory loads per suite
CORE_MEM = ["set", "incr"]
TYPES_MEM = ["hset", "zadd", "sadd", "sadd_int"]
SERVER_CPU = "0"
CLIENT_CPU = "1"
CLK_TCK = os.sysconf("SC_CLK_TCK")

MAX_FOREIGN_SHOWN = [0.15]
_live = []  # Server objects still running; killed at exit / on signals


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------
# RESP helpers (raw sockets, bounded timeouts)
# --------------------------------------------------------------------------

class Conn:
    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise BenchError("server closed the connection")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read_reply(self):
        """Parse one RESP2/3 reply into python values (errors -> BenchError obj)."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+",):
            return rest.decode()
        if t == b"-":
            return BenchError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t in (b"*", b">", b"~"):
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        if t == b"%":
            n = int(rest)
            return [self.read_reply() for _ in range(2 * n)]
        if t == b"_":
            return None
        raise BenchError("unexpected RESP type byte %r" % t)

    def call(self, *args):
        self.sock.sendall(resp_cmd(*args))
        return self.read_reply()

    def expect_simple_batch(self, expected_one, count):
        """Read `count` single-line replies and require each == expected_one."""
        want = expected_one * count
        while self.buf.count(b"\r\n") < count:
            self._fill()
        # replies are single-line, so the first `count` CRLFs delimit them
        end = 0
        for _ in range(count):
            end = self.buf.index(b"\r\n", end) + 2
        got, self.buf = self.buf[:end], self.buf[end:]
        if got != want:
            for j, line in enumerate(got.split(b"\r\n")[:count]):
                if line + b"\r\n" != expected_one:
                    raise BenchError("reply %d of batch: expected %r, got %r"
                                     % (j, expected_one, line[:200]))
            raise BenchError("batch reply mismatch")


# --------------------------------------------------------------------------
# Process helpers
# --------------------------------------------------------------------------

def cpu_ns(pid):
    """CPU time of all live threads of pid in ns (schedstat field 1)."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except FileNotFoundError:
        raise BenchError("server process %d vanished" % pid)
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # thread exited between listdir and open
    return total


def stat_cpu_ns(pid):
    """utime+stime (incl. exited threads) from /proc/PID/stat, in ns (tick resolution)."""
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime=14, stime=15 -> indexes 11, 12
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // CLK_TCK


def rss_bytes(pid):
    kib = rss_kib(pid)
    if not kib:
        raise BenchError("no VmRSS for pid %d" % pid)
    return kib * 1024


def proc_stat():
    """Machine CPU counters from /proc/stat in seconds:
    busy = user+nice+system (task time, all CPUs), irq = irq+softirq on the
    server's CPU, steal = hypervisor steal (all CPUs)."""
    out = {"busy": 0.0, "irq": 0.0, "steal": 0.0}
    try:
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu"):
                    break
                f_ = line.split()
                v = [int(x) for x in f_[1:9]]
                if f_[0] == "cpu":
                    out["busy"] = (v[0] + v[1] + v[2]) / CLK_TCK
                    out["steal"] = v[7] / CLK_TCK
                elif f_[0] == "cpu" + SERVER_CPU:
                    out["irq"] = (v[5] + v[6]) / CLK_TCK
    except (OSError, ValueError, IndexError):
        pass
    return out


def nthreads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except FileNotFoundError:
        return 0


class Server:
    def __init__(self, name, cmd_template, ruvio_bin, startup_timeout=20.0):
        self.name = name
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ruvio-bench-%s-" % name)
        cmd = cmd_template.format(bin=ruvio_bin, port=self.port, dir=self.dir)
        self.argv = ["taskset", "-c", SERVER_CPU] + shlex.split(cmd)
        self.logpath = os.path.join(self.dir, "server.log")
        self.proc = None
        self.startup_timeout = startup_timeout

    def start(self):
        logf = open(self.logpath, "wb")
        try:
            # taskset execs the server, so proc.pid is the server's pid.
            # New session: a terminal ^C reaches only us; we stop it in order.
            self.proc = subprocess.Popen(self.argv, cwd=self.dir, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        except FileNotFoundError as e:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise BenchError("cannot start %s: %s" % (self.name, e))
        finally:
            logf.close()
        _live.append(self)

        def pong():
            if self.proc.poll() is not None:
                raise BenchError("%s exited with %s during startup" % (self.name, self.proc.returncode))
            try:
                c = Conn(self.port, timeout=2.0)
                try:
                    r = c.call("PING")
                finally:
                    c.close()
                return r if r == "PONG" else None
            except (OSError, BenchError):
                return None
        try:
            wait_for(pong, timeout=self.startup_timeout, interval=0.05, what="%s answering PONG" % self.name,
                     error=BenchError)
        except BenchError as e:
            raise BenchError("%s:\n%s" % (e, self.log_tail()))
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=2000):
        try:
            with open(self.logpath, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return "(no log)"

    def stop(self):
        procs.stop(self.proc, grace=10)
        if self in _live:
            _live.remove(self)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _cleanup():
    for s in list(_live):
        try:
            s.stop()
        except Exception:
            pass


atexit.register(_cleanup)


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through finally/with blocks


def _stream_output(p, timeout, on_line):
    """Read p's stdout/stderr until EOF (bounded by timeout), calling
    on_line(line, chunk_no) for each complete stdout line as it arrives;
    chunk_no identifies the read() that delivered it."""
    deadline = time.monotonic() + timeout
    bufs = {"out": [], "err": []}
    pending = b""
    chunk = 0
    with selectors.DefaultSelector() as sel:
        sel.register(p.stdout, selectors.EVENT_READ, "out")
        sel.register(p.stderr, selectors.EVENT_READ, "err")
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(p.args, timeout)
            for key, _ in sel.select(timeout=left):
                data = os.read(key.fileobj.fileno(), 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                bufs[key.data].append(data)
                if key.data == "out":
                    chunk += 1
                    pending += data
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        on_line(line.decode(errors="replace"), chunk)
    p.wait(timeout=max(0.1, deadline - time.monotonic()))
    p.stdout.close()
    p.stderr.close()
    return b"".join(bufs["out"]), b"".join(bufs["err"])


def run_bounded(argv, timeout, on_line=None):
    """Run argv, return (rc, stdout, stderr); kill it on timeout or exception.
    With on_line, stdout lines are also passed to on_line(line, chunk_no)
    while the process runs (see _stream_output)."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        if on_line is None:
            out, err = p.communicate(timeout=timeout)
        else:
            on_line.proc = p
            out, err = _stream_output(p, timeout, on_line)
    except BaseException:
        p.kill()
        try:
            p.communicate(timeout=10)
        except Exception:
            pass
        raise
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


# --------------------------------------------------------------------------
# Throughput
# --------------------------------------------------------------------------

def sanity_check(srv):
    """Guard against a server that answers fast but wrong (redis-benchmark
    does not check replies)."""
    c = Conn(srv.port)
    try:
        checks = [
            (("PING",), "PONG"),
            (("SET", "bench:sanity", "v" * 64), "OK"),
            (("GET", "bench:sanity"), b"v" * 64),
            (("INCR", "bench:ctr"), 1),
            (("MSET", "bench:a", "1", "bench:b", "2"), "OK"),
            (("GET", "bench:b"), b"2"),
            (("DEL", "bench:sanity", "bench:ctr", "bench:a", "bench:b"), 4),
        ]
        for args, want in checks:
            got = c.call(*args)
            if got != want:
                raise BenchError("%s sanity: %s -> %r, expected %r"
                                 % (srv.name, " ".join(args[:2]), got, want))
    finally:
        c.close()


def wait_quiet(threshold, max_wait, window=0.3):
    """Wait (bounded) until the machine's CPU use over a short window is below
    `threshold` cores (our idle server counts too; it should be ~0)."""
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = proc_stat()["busy"], time.monotonic()
        time.sleep(window)
        load = (proc_stat()["busy"] - b0) / (time.monotonic() - t0)
        if load <= threshold:
            return True
        if time.monotonic() >= deadline:
            return False


class _PhaseMarker:
    """on_line callback for redis-benchmark runs that have a prefill phase
    (LRANGE_*: "LPUSH (needed to benchmark LRANGE)").  At every CSV line of
    an earlier phase it snapshots the server's CPU counters, so the measured
    window can start where the test itself starts."""

    def __init__(self, srv, test):
        self.srv, self.test, self.proc = srv, test, None
        self.marks = []       # snapshots at earlier phases' CSV lines
        self.test_chunk = None

    def __call__(self, line, chunk):
        name = line.split('","')[0].strip('"')
        if not name or name == "test":
            return  # CSV header / blank
        if name.split(" ")[0].upper() == self.test:
            self.test_chunk = chunk
            return
        cli = None
        try:
            cli = stat_cpu_ns(self.proc.pid) / 1e9  # redis-benchmark's own CPU so far
        except (OSError, ValueError, IndexError):
            pass
        self.marks.append({"t": time.monotonic(), "cpu": cpu_ns(self.srv.pid),
                           "stat": stat_cpu_ns(self.srv.pid), "ps": proc_stat(),
                           "client_cpu_s": cli, "chunk": chunk, "line": line})


def _parse_rps(out, name):
    rps = None
    for line in out.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) >= 2 and parts[0].split(" ")[0].upper() == name:
            rps = float(parts[1])
    return rps


def _parse_latency(out, name):
    """(p50, p99) in ms from redis-benchmark's --csv line, or (None, None)."""
    for line in out.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) >= 7 and parts[0].split(" ")[0].upper() == name:
            try:
                return float(parts[4]), float(parts[6])
            except ValueError:
                pass
    return None, None


def redis_benchmark(srv, test, n, pipeline, clients, dsize, timeout):
    argv = ["taskset", "-c", CLIENT_CPU, "redis-benchmark", "-h", "127.0.0.1",
            "-p", str(srv.port), "-n", str(n), "-c", str(clients), "-P", str(pipeline),
            "-d", str(dsize), "-t", test.lower(), "--csv", "-q"]
    marker = None
    if test in PREFILL_TESTS and shutil.which("stdbuf"):
        # line-buffered stdout, so the prefill's CSV line arrives when it ends
        argv[3:3] = ["stdbuf", "-oL"]
        marker = _PhaseMarker(srv, test)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ps0 = proc_stat()
    c0, s0 = cpu_ns(srv.pid), stat_cpu_ns(srv.pid)
    t0 = time.monotonic()
    try:
        rc, out, err = run_bounded(argv, timeout, on_line=marker)
    except subprocess.TimeoutExpired:
        raise BenchError("redis-benchmark %s -P%d against %s timed out after %ds "
                         "(server alive: %s)" % (test, pipeline, srv.name, timeout, srv.alive()))
    t1 = time.monotonic()
    wall = t1 - t0
    c1, s1 = cpu_ns(srv.pid), stat_cpu_ns(srv.pid)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ps1 = proc_stat()
    if not srv.alive():
        raise BenchError("%s died during %s:\n%s" % (srv.name, test, srv.log_tail()))
    if rc != 0:
        raise BenchError("redis-benchmark rc=%d: %s %s" % (rc, out[-500:], err[-500:]))
    rps = _parse_rps(out, test)
    if rps is None or rps <= 0:
        raise BenchError("cannot parse redis-benchmark output for %s: %r %r"
                         % (test, out[-500:], err[-500:]))
    if "ERR" in out or "ERR" in err:
        log("  warning: redis-benchmark reported errors: %s" % (out + err)[-300:].strip())
    client_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    prefill = None
    if test in PREFILL_TESTS:
        prefill = {"requests": n, "rps": _parse_rps(out, "LPUSH"), "excluded": False}
        m = marker.marks[-1] if marker and marker.marks else None
        if m is None or m["chunk"] == marker.test_chunk or m["client_cpu_s"] is None:
            # the prefill line arrived together with the test's line (or not at
            # all): cannot split, the figure includes the prefill
            log("  warning: %s: cannot separate redis-benchmark's LPUSH prefill; "
                "server CPU/op includes it" % test)
        else:
            prefill.update({"excluded": True, "wall_s": round(m["t"] - t0, 4),
                            "server_cpu_ns": m["cpu"] - c0,
                            "server_cpu_ns_per_op": (m["cpu"] - c0) / n})
            # the measured window starts at the end of the prefill
            t0, c0, s0, ps0 = m["t"], m["cpu"], m["stat"], m["ps"]
            wall = t1 - t0
            client_cpu = max(0.0, client_cpu - m["client_cpu_s"])
    cpu = c1 - c0
    # CPU used on the machine by anything other than this server and this
    # client (other users' builds, tests...): contaminates the run.
    foreign = (ps1["busy"] - ps0["busy"]) - cpu / 1e9 - client_cpu
    res = {
        "rps": rps,
        "requests": n,
        "wall_s": round(wall, 4),
        "server_cpu_ns": cpu,
        "server_cpu_ns_per_op": cpu / n,
        "server_stat_cpu_ns_per_op": (s1 - s0) / n,  # cross-check, 10 ms resolution
        "server_cpu_util": round(cpu / 1e9 / wall, 3) if wall > 0 else None,
        "client_cpu_util": round(client_cpu / wall, 3) if wall > 0 else None,
        "server_threads": nthreads(srv.pid),
        "steal_s": round(ps1["steal"] - ps0["steal"], 3),
        "server_core_irq_ns_per_op": (ps1["irq"] - ps0["irq"]) * 1e9 / n,
        "foreign_cpu_util": round(max(0.0, foreign) / wall, 3) if wall > 0 else None,
    }
    res["p50_ms"], res["p99_ms"] = _parse_latency(out, test)
    if prefill is not None:
        res["prefill"] = prefill
    return res


# --- data-type tests: state preparation and reply verification ------------
#
# redis-benchmark never looks at replies, so for the type tests the script
# checks the server's state around every run with its own connection:
# (n here is what the server gets: -n rounded up to a multiple of -P)
#   LPUSH/RPUSH   LLEN mylist grows by exactly n
#   LPOP/RPOP     mylist is topped up to >= n elements first (so no pop hits
#                 an empty list), then LLEN shrinks by exactly n
#   SADD          SISMEMBER myset element:__rand_int__ == 1
#   SPOP          myset is topped up to >= n members first, SCARD shrinks by n
#   HSET          HGET myhash element:__rand_int__ is a -d sized payload
#   ZADD          ZSCORE myzset element:__rand_int__ == 0
#   LRANGE_N      mylist has >= N elements before; afterwards EXISTS mylist,
#                 LLEN grew by n (the prefill) and LRANGE 0 N-1 returns N
#                 elements of -d bytes
# (without -r, redis-benchmark sends "__rand_int__" literally; its -d payload
# is random bytes in 7.x, so only its length is checked)

BENCH_MEMBER = b"element:__rand_int__"


def _pipeline_calls(c, cmds):
    """Send several commands at once and return their replies (BenchError
    objects for error replies)."""
    c.sock.sendall(b"".join(resp_cmd(*a) for a in cmds))
    return [c.read_reply() for _ in cmds]


def _checked(srv, what, got, ok):
    if isinstance(got, BenchError) or not ok(got):
        raise BenchError("%s: %s -> %r" % (srv.name, what, got))
    return got


def _topup(srv, c, cmd, key, need, make, tag):
    """Add `need` elements to key with variadic `cmd` (1000 per command)."""
    batch, cmds = 1000, []
    for base in range(0, need, batch):
        cmds.append([cmd, key] + [make(tag, i) for i in range(base, min(base + batch, need))])
        if len(cmds) == 20 or base + batch >= need:
            for r, a in zip(_pipeline_calls(c, cmds), cmds):
                _checked(srv, "%s %s (%d elements)" % (cmd, key, len(a) - 2), r,
                         lambda v: isinstance(v, int))
            cmds = []


def types_pre(srv, test, n, dsize, timeout, topups):
    """Prepare the server for a type test (n: commands the server will get);
    returns the state to compare."""
    if test not in TYPES_TESTS:
        return None
    c = Conn(srv.port, timeout=timeout)
    try:
        st = {}
        if test in ("LPUSH", "RPUSH", "LPOP", "RPOP") or test in LRANGE_LEN:
            llen = _checked(srv, "LLEN mylist", c.call("LLEN", "mylist"),
                            lambda v: isinstance(v, int))
            # pops: >= n elements; LRANGE_N: >= N once redis-benchmark's own
            # LPUSH prefill (n elements) has run
            want = n if test in ("LPOP", "RPOP") else LRANGE_LEN.get(test, 0) - n
            if llen < want:
                _topup(srv, c, "RPUSH", "mylist", want - llen,
                       lambda tag, i: b"x" * dsize, None)
                st["topped_up"] = want - llen
                llen = _checked(srv, "LLEN mylist after top-up", c.call("LLEN", "mylist"),
                                lambda v: v == want)
            st["llen_before"] = llen
        elif test == "SPOP":
            card = _checked(srv, "SCARD myset", c.call("SCARD", "myset"),
                            lambda v: isinstance(v, int))
            if card < n:
                topups[0] += 1
                _topup(srv, c, "SADD", "myset", n - card,
                       lambda tag, i: b"spop:%d:%d" % (tag, i), topups[0])
                st["topped_up"] = n - card
                card = _checked(srv, "SCARD myset after top-up", c.call("SCARD", "myset"),
                                lambda v: v == n)
            st["scard_before"] = card
        return st
    finally:
        c.close()


def types_post(srv, test, n, dsize, timeout, st):
    """Verify the server's state after a type test; returns what was seen."""
    if test not in TYPES_TESTS:
        return None
    c = Conn(srv.port, timeout=timeout)
    try:
        out = dict(st or {})
        if test in ("LPUSH", "RPUSH", "LPOP", "RPOP") or test in LRANGE_LEN:
            sign = -1 if test in ("LPOP", "RPOP") else 1
            want = st["llen_before"] + sign * n
            out["mylist_exists"] = _checked(srv, "EXISTS mylist after %s" % test,
                                            c.call("EXISTS", "mylist"),
                                            lambda v: v == (1 if want > 0 else 0))
            out["llen_after"] = _checked(
                srv, "LLEN mylist after %s -n %d (before: %d, expected %d)"
                % (test, n, st["llen_before"], want), c.call("LLEN", "mylist"),
                lambda v: v == want)
            if test in LRANGE_LEN:
                k = LRANGE_LEN[test]
                got = c.call("LRANGE", "mylist", "0", str(k - 1))
                _checked(srv, "LRANGE mylist 0 %d" % (k - 1), got,
                         lambda v: isinstance(v, list) and len(v) == k
                         and all(isinstance(x, bytes) and len(x) == dsize for x in v))
        elif test == "SADD":
            out["sismember"] = _checked(srv, "SISMEMBER myset %s after SADD" % BENCH_MEMBER.decode(),
                                        c.call("SISMEMBER", "myset", BENCH_MEMBER),
                                        lambda v: v == 1)
        elif test == "SPOP":
            want = st["scard_before"] - n
            out["scard_after"] = _checked(
                srv, "SCARD myset after SPOP -n %d (before: %d, expected %d)"
                % (n, st["scard_before"], want), c.call("SCARD", "myset"),
                lambda v: v == want)
        elif test == "HSET":
            _checked(srv, "HGET myhash %s after HSET" % BENCH_MEMBER.decode(),
                     c.call("HGET", "myhash", BENCH_MEMBER),
                     lambda v: isinstance(v, bytes) and len(v) == dsize)
            out["hlen"] = c.call("HLEN", "myhash")
        elif test == "ZADD":
            _checked(srv, "ZSCORE myzset %s after ZADD" % BENCH_MEMBER.decode(),
                     c.call("ZSCORE", "myzset", BENCH_MEMBER),
                     lambda v: isinstance(v, bytes) and float(v) == 0.0)
            out["zcard"] = c.call("ZCARD", "myzset")
        return out
    finally:
        c.close()


def types_sanity_check(srv):
    """Replies of the data-type commands the types suite uses."""
    c = Conn(srv.port)
    ks = ("bench:l", "bench:s", "bench:h", "bench:z")
    try:
        c.call("DEL", *ks)
        checks = [
            (("LPUSH", "bench:l", "a"), lambda v: v == 1),
            (("RPUSH", "bench:l", "b", "c"), lambda v: v == 3),
            (("LRANGE", "bench:l", "0", "-1"), lambda v: v == [b"a", b"b", b"c"]),
            (("LRANGE", "bench:l", "0", "1"), lambda v: v == [b"a", b"b"]),
            (("LLEN", "bench:l"), lambda v: v == 3),
            (("LPOP", "bench:l"), lambda v: v == b"a"),
            (("RPOP", "bench:l"), lambda v: v == b"c"),
            (("RPOP", "bench:l"), lambda v: v == b"b"),
            (("LPOP", "bench:l"), lambda v: v is None),
            (("EXISTS", "bench:l"), lambda v: v == 0),
            (("SADD", "bench:s", "m1", "m2"), lambda v: v == 2),
            (("SADD", "bench:s", "m1"), lambda v: v == 0),
            (("SCARD", "bench:s"), lambda v: v == 2),
            (("SPOP", "bench:s"), lambda v: v in (b"m1", b"m2")),
            (("SCARD", "bench:s"), lambda v: v == 1),
            (("SISMEMBER", "bench:s", "zz"), lambda v: v == 0),
            (("HSET", "bench:h", "f", "v"), lambda v: v == 1),
            (("HSET", "bench:h", "f", "w", "g", "x"), lambda v: v == 1),
            (("HGET", "bench:h", "f"), lambda v: v == b"w"),
            (("HLEN", "bench:h"), lambda v: v == 2),
            (("ZADD", "bench:z", "1.5", "a", "2", "b"), lambda v: v == 2),
            (("ZADD", "bench:z", "0", "a"), lambda v: v == 0),
            (("ZSCORE", "bench:z", "a"), lambda v: isinstance(v, bytes) and float(v) == 0.0),
            (("ZSCORE", "bench:z", "b"), lambda v: isinstance(v, bytes) and float(v) == 2.0),
            (("ZCARD", "bench:z"), lambda v: v == 2),
            (("DEL",) + ks, lambda v: v == 3),
        ]
        for args, ok in checks:
            got = c.call(*args)
            if isinstance(got, BenchError) or not ok(got):
                raise BenchError("%s sanity: %s -> %r" % (srv.name, " ".join(args), got))
    finally:
        c.close()


def test_requests(test, n, args, pipeline):
    """Requests for one run of `test` (LRANGE_* are scaled down by default,
    to a multiple of the pipeline depth)."""
    if test in LRANGE_DIVISOR and not args.lrange_full:
        nt = max(n // LRANGE_DIVISOR[test], min(n, LRANGE_MIN_N))
        return -(-nt // pipeline) * pipeline
    return n


def issued_requests(n, pipeline):
    """redis-benchmark hands out requests a whole pipeline at a time, so the
    server gets ceil(n/P)*P commands (not n) when P does not divide n."""
    return -(-n // pipeline) * pipeline


def test_timeout(test, n, args):
    if args.bench_timeout:
        return int(args.bench_timeout)
    if test in LRANGE_LEN:
        # prefill + N elements per reply: budget ~N/20 plain requests each
        return int(60 + n * (1 + LRANGE_LEN[test] / 20) / 1000)
    return int(60 + n / 1000)


def throughput(args, cmds):
    # results[P][test][server] = list of per-round dicts (index = round)
    results = {}
    for p in args.pipelines:
        results[p] = {t: {"ruvio": [], "redis": []} for t in args.tests}
    for r in range(args.rounds):
        order = ["ruvio", "redis"] if r % 2 == 0 else ["redis", "ruvio"]
        for p in args.pipelines:
            n = args.n_p1 if p == 1 else args.n
            timeout = int(args.bench_timeout or (60 + n / 1000))
            for name in order:
                with Server(name, cmds[name], args.ruvio_bin) as srv:
                    sanity_check(srv)
                    if any(t in TYPES_TESTS for t in args.tests):
                        types_sanity_check(srv)
                    topups = [0]
                    # unmeasured warm-up: fault in buffers, settle the allocator
                    redis_benchmark(srv, "PING_MBULK", max(1000, n // 20), p,
                                    args.clients, args.dsize, timeout)
                    for t in args.tests:
                        nt = test_requests(t, n, args, p)
                        ni = issued_requests(nt, p)
                        tt = test_timeout(t, nt, args)
                        for attempt in range(args.retries + 1):
                            st = types_pre(srv, t, ni, args.dsize, args.socket_timeout, topups)
                            if args.quiet_wait > 0 and not wait_quiet(args.max_foreign,
                                                                      args.quiet_wait):
                                log("  machine still busy after %.0fs; running anyway"
                                    % args.quiet_wait)
                            res = redis_benchmark(srv, t, nt, p, args.clients, args.dsize,
                                                  tt)
                            chk = types_post(srv, t, ni, args.dsize, args.socket_timeout, st)
                            if chk is not None:
                                res["check"] = chk
                            res["attempt"] = attempt
                            res["contaminated"] = res["foreign_cpu_util"] > args.max_foreign
                            log("round %d/%d P%-2d %-10s %-5s %10.0f rps %7.0f ns/op "
                                "(srv cpu %.2f, client cpu %.2f, foreign %.2f)%s%s"
                                % (r + 1, args.rounds, p, t, name, res["rps"],
                                   res["server_cpu_ns_per_op"], res["server_cpu_util"],
                                   res["client_cpu_util"], res["foreign_cpu_util"],
                                   check_note(t, res),
                                   "  <- other load on the machine" if res["contaminated"]
                                   else ""))
                            if not res["contaminated"]:
                                break
                        results[p][t][name].append(res)
    return results


def check_note(test, res):
    """Short progress-log note on the verified state of a type test."""
    chk = res.get("check")
    if not chk:
        return ""
    note = ""
    if "llen_after" in chk:
        note = " [mylist LLEN %d->%d" % (chk["llen_before"], chk["llen_after"])
    elif "scard_after" in chk:
        note = " [myset SCARD %d->%d" % (chk["scard_before"], chk["scard_after"])
    else:
        note = " [reply checked"
    if chk.get("topped_up"):
        note += ", topped up %d" % chk["topped_up"]
    if "prefill" in res and res["prefill"]["excluded"]:
        note += ", prefill excluded"
    return note + "]"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize_throughput(results):
    summary = {}
    for p, per_test in results.items():
        rows = {}
        for t, runs in per_test.items():
            a, b = runs["ruvio"], runs["redis"]
            rps_ratios = [x["rps"] / y["rps"] for x, y in zip(a, b)]
            cpu_ratios = [y["server_cpu_ns_per_op"] / x["server_cpu_ns_per_op"]
                          for x, y in zip(a, b) if x["server_cpu_ns_per_op"] > 0]
            rows[t] = {
                "ruvio_rps_median": statistics.median(x["rps"] for x in a),
                "redis_rps_median": statistics.median(y["rps"] for y in b),
                "rps_ratio_median": statistics.median(rps_ratios),
                "rps_ratio_min": min(rps_ratios),
                "rps_ratio_max": max(rps_ratios),
                "ruvio_cpu_ns_per_op_median": statistics.median(x["server_cpu_ns_per_op"] for x in a),
                "redis_cpu_ns_per_op_median": statistics.median(y["server_cpu_ns_per_op"] for y in b),
                "cpu_ratio_median": statistics.median(cpu_ratios) if cpu_ratios else None,
                "cpu_ratio_min": min(cpu_ratios) if cpu_ratios else None,
                "cpu_ratio_max": max(cpu_ratios) if cpu_ratios else None,
                "ruvio_client_cpu_util_median": statistics.median(x["client_cpu_util"] for x in a),
                "redis_client_cpu_util_median": statistics.median(y["client_cpu_util"] for y in b),
                "rounds": len(rps_ratios),
                "requests": a[0]["requests"] if a else None,
                "prefill_excluded": (all(x.get("prefill", {}).get("excluded") for x in a + b)
                                     if t in PREFILL_TESTS else None),
                "suite": SUITE_OF.get(t),
            }
        suites = {}
        for name in SUITES:
            if name == "all":
                continue
            sel = [v for t, v in rows.items() if SUITE_OF.get(t) == name]
            if sel:
                suites[name] = {
                    "tests": [t for t in rows if SUITE_OF.get(t) == name],
                    "rps_ratio_geomean": geomean([v["rps_ratio_median"] for v in sel]),
                    "cpu_ratio_geomean": geomean([v["cpu_ratio_median"] for v in sel]),
                }
        summary[p] = {
            "tests": rows,
            "rps_ratio_geomean": geomean([v["rps_ratio_median"] for v in rows.values()]),
            "cpu_ratio_geomean": geomean([v["cpu_ratio_median"] for v in rows.values()]),
            "suites": suites,
            "contaminated_runs": sum(x["contaminated"] for runs in per_test.values()
                                     for side in runs.values() for x in side),
            "steal_s_total": round(sum(x["steal_s"] for runs in per_test.values()
                                       for side in runs.values() for x in side), 3),
        }
    return summary


def print_throughput(summary):
    hdr = ("%-10s %11s %11s %7s %13s  %9s %9s %7s %13s  %5s"
           % ("test", "ruvio rps", "redis rps", "rps x", "(min..max)",
              "ruvio ns", "redis ns", "cpu x", "(min..max)", "cli%"))
    for p, s in summary.items():
        print("\nThroughput, pipeline %d  (rps x = ruvio/redis; cpu x = redis/ruvio "
              "server CPU ns per op, >1 means ruvio is cheaper; medians over rounds)" % p)
        print(hdr)
        print("-" * len(hdr))
        suites = s.get("suites", {})
        for sname, sv in suites.items():
            for t in sv["tests"]:
                v = s["tests"][t]
                cr = v["cpu_ratio_median"]
                print("%-10s %11.0f %11.0f %7.3f %13s  %9.0f %9.0f %7s %13s  %5.0f" % (
                    t, v["ruvio_rps_median"], v["redis_rps_median"], v["rps_ratio_median"],
                    "(%.3f..%.3f)" % (v["rps_ratio_min"], v["rps_ratio_max"]),
                    v["ruvio_cpu_ns_per_op_median"], v["redis_cpu_ns_per_op_median"],
                    "%.3f" % cr if cr else "n/a",
                    "(%.3f..%.3f)" % (v["cpu_ratio_min"], v["cpu_ratio_max"]) if cr else "",
                    100 * max(v["ruvio_client_cpu_util_median"],
                              v["redis_client_cpu_util_median"])))
            if len(suites) > 1:
                print("%-10s %11s %11s %7.3f %13s  %9s %9s %7.3f" % (
                    "geo " + sname, "", "", sv["rps_ratio_geomean"], "", "", "",
                    sv["cpu_ratio_geomean"] or float("nan")))
        print("%-10s %11s %11s %7.3f %13s  %9s %9s %7.3f" % (
            "geomean", "", "", s["rps_ratio_geomean"], "", "", "",
            s["cpu_ratio_geomean"] or float("nan")))
        scaled = ["%s n=%d" % (t, v["requests"]) for t, v in s["tests"].items()
                  if t in LRANGE_LEN and v.get("requests") is not None]
        if scaled:
            excl = all(s["tests"][t]["prefill_excluded"] for t in s["tests"] if t in LRANGE_LEN)
            print("(%s; redis-benchmark's LPUSH prefill before each LRANGE run is %s)"
                  % (", ".join(scaled), "excluded from the CPU figures" if excl else
                     "INCLUDED in the CPU figures of some runs (could not be separated)"))
        print("(hypervisor steal during these runs: %.2f s)" % s["steal_s_total"])
        if s["contaminated_runs"]:
            print("WARNING: %d runs kept despite foreign CPU load > %.2f cores after retries; "
                  "the machine was not quiet, treat these figures with care"
                  % (s["contaminated_runs"], MAX_FOREIGN_SHOWN[0]))
    print("(cli% = redis-benchmark CPU utilisation on its core; ~100 means the client is the bottleneck)")


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------

def value_for(i):
    v = b"v%d:" % i
    return v + b"x" * (64 - len(v))


def hash_value(i, j):
    """Distinct field values, 8..16 bytes long ("<i>:<j>:" padded with v)."""
    v = b"%d:%d:" % (i, j)
    return v + b"v" * max(0, 8 + (i + j) % 9 - len(v))


def zscore_for(i, j):
    """Distinct float scores: "<i>.<j+1>"."""
    return b"%d.%d" % (i, j + 1)


# memory loads: label, elements per key, the reply every command must get
MEM_LOADS = {
    "set": ("SET k<i> <64-byte value>", 1, b"+OK\r\n"),
    "incr": ("INCR c<i> (counter = 1)", 1, b":1\r\n"),
    "hset": ("HSET h<i> f0..f3 (8-16 B)", 4, b":4\r\n"),
    "zadd": ("ZADD z<i> 4 float/m0..m3", 4, b":4\r\n"),
    "sadd": ("SADD s<i> member:0..3", 4, b":4\r\n"),
    "sadd_int": ("SADD n<i> 4 integers", 4, b":4\r\n"),
}


def mem_command(kind, i):
    """The one command that creates key i of a memory load."""
    if kind == "set":
        k = b"k%d" % i
        return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(k), k, value_for(i))
    if kind == "incr":
        k = b"c%d" % i
        return b"*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n" % (len(k), k)
    if kind == "hset":  # one HSET with 4 field/value pairs -> :4
        args = [b"HSET", b"h%d" % i]
        for j in range(4):
            args += [b"f%d" % j, hash_value(i, j)]
        return resp_cmd(*args)
    if kind == "zadd":
        args = [b"ZADD", b"z%d" % i]
        for j in range(4):
            args += [zscore_for(i, j), b"m%d" % j]
        return resp_cmd(*args)
    if kind == "sadd":  # short non-integer strings: no intset
        return resp_cmd(b"SADD", b"s%d" % i, *[b"member:%d" % j for j in range(4)])
    if kind == "sadd_int":  # integers: intset-eligible
        return resp_cmd(b"SADD", b"n%d" % i, *[b"%d" % (4 * i + j) for j in range(4)])
    raise ValueError(kind)


def mem_spot_check(c, kind, i):
    """[(what, got, want)] for key i of a load."""
    if kind == "set":
        return [("GET k%d" % i, c.call("GET", b"k%d" % i), value_for(i))]
    if kind == "incr":
        return [("GET c%d" % i, c.call("GET", b"c%d" % i), b"1")]
    if kind == "hset":
        return [("HGET h%d f3" % i, c.call("HGET", b"h%d" % i, b"f3"), hash_value(i, 3)),
                ("HLEN h%d" % i, c.call("HLEN", b"h%d" % i), 4)]
    if kind == "zadd":
        got = c.call("ZSCORE", b"z%d" % i, b"m2")
        want = float(zscore_for(i, 2))
        return [("ZSCORE z%d m2" % i, float(got) if isinstance(got, bytes) else got, want),
                ("ZCARD z%d" % i, c.call("ZCARD", b"z%d" % i), 4)]
    if kind == "sadd":
        return [("SISMEMBER s%d member:2" % i, c.call("SISMEMBER", b"s%d" % i, b"member:2"), 1),
                ("SCARD s%d" % i, c.call("SCARD", b"s%d" % i), 4)]
    if kind == "sadd_int":
        m = b"%d" % (4 * i + 1)
        return [("SISMEMBER n%d %s" % (i, m.decode()), c.call("SISMEMBER", b"n%d" % i, m), 1),
                ("SCARD n%d" % i, c.call("SCARD", b"n%d" % i), 4)]
    raise ValueError(kind)


def load_keys(srv, kind, count, pipeline, timeout):
    c = Conn(srv.port, timeout=timeout)
    try:
        expect = MEM_LOADS[kind][2]
        for base in range(0, count, pipeline):
            parts = [mem_command(kind, i) for i in range(base, min(base + pipeline, count))]
            c.sock.sendall(b"".join(parts))
            try:
                c.expect_simple_batch(expect, len(parts))
            except BenchError as e:
                raise BenchError("%s: %s load, keys %d..%d: %s"
                                 % (srv.name, kind, base, base + len(parts) - 1, e))
        n = c.call("DBSIZE")
        if n != count:
            raise BenchError("%s: DBSIZE %r after loading %d keys" % (srv.name, n, count))
        # spot-check a few values
        for i in (0, count // 2, count - 1):
            for what, got, want in mem_spot_check(c, kind, i):
                if got != want:
                    raise BenchError("%s: spot check %s: %r != %r" % (srv.name, what, got, want))
    finally:
        c.close()


def memory_kinds(args):
    kinds = []
    if args.suite in ("core", "all"):
        kinds += CORE_MEM
    if args.suite in ("types", "all"):
        kinds += TYPES_MEM
    return kinds


def memory(args, cmds):
    res = {}
    for kind in memory_kinds(args):
        keys = args.keys if kind in CORE_MEM else args.type_keys
        res[kind] = {}
        for name in ("ruvio", "redis"):
            with Server(name, cmds[name], args.ruvio_bin) as srv:
                time.sleep(args.settle)
                idle = rss_bytes(srv.pid)
                t0 = time.monotonic()
                load_keys(srv, kind, keys, args.mem_pipeline, args.socket_timeout)
                load_s = time.monotonic() - t0
                time.sleep(args.settle)
                after = rss_bytes(srv.pid)
                res[kind][name] = {
                    "rss_idle": idle, "rss_after": after,
                    "bytes_per_key": (after - idle) / keys,
                    "load_s": round(load_s, 2),
                }
                log("memory %-4s %-5s idle %7.1f MB  after %7.1f MB  %6.1f B/key  (load %.1fs)"
                    % (kind, name, idle / 1e6, after / 1e6, (after - idle) / keys, load_s))
        a, b = res[kind]["ruvio"]["bytes_per_key"], res[kind]["redis"]["bytes_per_key"]
        res[kind]["ratio_ruvio_over_redis"] = a / b if b > 0 else None
        res[kind]["keys"] = keys
        res[kind]["elements_per_key"] = MEM_LOADS[kind][1]
        res[kind]["command"] = MEM_LOADS[kind][0]
    return res


def print_memory(res, keys, type_keys=None):
    hdr = "%-26s %10s %10s %10s %10s %7s" % ("load", "ruvio idle", "ruvio B/k",
                                             "redis idle", "redis B/k", "ratio")
    groups = [(CORE_MEM, "Memory, %d keys, RSS delta per key" % keys),
              (TYPES_MEM, "Memory, %s keys x 4 elements, RSS delta per key"
               % (type_keys if type_keys is not None else "?"))]
    for kinds, title in groups:
        sel = [k for k in kinds if k in res]
        if not sel:
            continue
        print("\n%s (ratio = ruvio/redis, <1 means ruvio is smaller)" % title)
        print(hdr)
        print("-" * len(hdr))
        for kind in sel:
            v = res[kind]
            r = v["ratio_ruvio_over_redis"]
            print("%-26s %8.1fMB %10.1f %8.1fMB %10.1f %7s" % (
                MEM_LOADS[kind][0], v["ruvio"]["rss_idle"] / 1e6, v["ruvio"]["bytes_per_key"],
                v["redis"]["rss_idle"] / 1e6, v["redis"]["bytes_per_key"],
                "%.3f" % r if r else "n/a"))


# --------------------------------------------------------------------------

def machine_info():
    info = {"kernel": platform.release(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["cpus"] = os.cpu_count()
    try:
        with open("/etc/debian_version") as f:
            info["debian_version"] = f.read().strip()
    except OSError:
        pass
    try:
        rc, out, _ = run_bounded(["redis-server", "--version"], 10)
        info["redis_server"] = out.strip()
    except Exception:
        pass
    return info


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ruvio-bin", default=os.environ.get("RUVIO_BIN",
                                                          os.path.join(REPO, "build", "ruvio")),
                    help="ruvio binary (env RUVIO_BIN; default build/ruvio)")
    ap.add_argument("--ruvio-cmd", default=DEFAULT_RUVIO_CMD,
                    help="command line template for the 'ruvio' side; placeholders "
                         "{bin} {port} {dir} (default: %(default)s)")
    ap.add_argument("--redis-cmd", default=DEFAULT_REDIS_CMD,
                    help="command line template for the 'redis' side (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--suite", choices=sorted(SUITES), default="core",
                    help="core: %s (default); types: %s; all: both. Also selects the "
                         "memory loads (core: SET, INCR; types: HSET, ZADD, SADD, SADD-int)"
                         % (" ".join(CORE_TESTS), " ".join(TYPES_TESTS)))
    ap.add_argument("--tests", default=None,
                    help="comma list from %s (default: the suite's tests)" % ",".join(ALL_TESTS))
    ap.add_argument("--lrange-full", action="store_true",
                    help="run LRANGE_100/300/600 with the full -n/--n-p1 requests "
                         "(default: n/10, n/20, n/40, at least %d)" % LRANGE_MIN_N)
    ap.add_argument("--pipelines", default="16,1", help="comma list of -P values (default 16,1)")
    ap.add_argument("-n", "--n", type=int, default=1_000_000,
                    help="requests per run at pipeline > 1 (default 1000000)")
    ap.add_argument("--n-p1", type=int, default=200_000,
                    help="requests per run at pipeline 1 (default 200000)")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--dsize", type=int, default=64)
    ap.add_argument("--keys", type=int, default=1_000_000, help="keys per memory load")
    ap.add_argument("--type-keys", type=int, default=80_000,
                    help="keys per memory load of the types suite (4 elements each; "
                         "default 80000, also with --quick)")
    ap.add_argument("--mem-pipeline", type=int, default=200)
    ap.add_argument("--settle", type=float, default=1.0, help="seconds before RSS samples")
    ap.add_argument("--socket-timeout", type=float, default=30.0)
    ap.add_argument("--bench-timeout", type=int, default=0,
                    help="per redis-benchmark run, seconds (default 60 + n/1000)")
    ap.add_argument("--max-foreign", type=float, default=0.15,
                    help="a run during which other processes used more than this many "
                         "cores is retried (default 0.15)")
    ap.add_argument("--retries", type=int, default=2,
                    help="retries of a run disturbed by foreign load (default 2)")
    ap.add_argument("--quiet-wait", type=float, default=10.0,
                    help="before each run wait up to this many seconds for the machine "
                         "to be quiet (0 disables; default 10)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 round, -n 100000, --n-p1 20000, 100000 keys")
    ap.add_argument("--only-memory", action="store_true")
    ap.add_argument("--only-throughput", action="store_true")
    ap.add_argument("--json", default=None,
                    help="output path (default tests/bench/results/bench-<date>.json)")
    ap.add_argument("--label", default="", help="free text stored in the JSON")
    a = ap.parse_args(argv)
    if a.quick:
        a.rounds, a.n, a.n_p1, a.keys = 1, 100_000, 20_000, 100_000
    if a.tests is None:
        a.tests = list(SUITES[a.suite])
    else:
        a.tests = [t.strip().upper() for t in a.tests.split(",") if t.strip()]
    bad = [t for t in a.tests if t not in ALL_TESTS]
    if bad:
        ap.error("unknown tests %s" % bad)
    if a.type_keys < 1:
        ap.error("--type-keys must be >= 1")
    a.pipelines = [int(p) for p in a.pipelines.split(",") if p.strip()]
    if a.only_memory and a.only_throughput:
        ap.error("--only-memory and --only-throughput are exclusive")
    if a.rounds < 1:
        ap.error("--rounds must be >= 1")
    MAX_FOREIGN_SHOWN[0] = a.max_foreign
    if a.json is None:
        a.json = os.path.join(HERE, "results", "bench-%s.json"
                              % datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # explicit: SIGINT may arrive ignored when started in the background
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    cmds = {"ruvio": args.ruvio_cmd, "redis": args.redis_cmd}
    if "{bin}" in args.ruvio_cmd and not os.access(args.ruvio_bin, os.X_OK):
        log("error: ruvio binary %s not found/executable (use --ruvio-bin, RUVIO_BIN "
            "or --ruvio-cmd)" % args.ruvio_bin)
        return 2
    for tool in ("taskset", "redis-benchmark", "redis-server"):
        if shutil.which(tool) is None:
            log("error: %s not on PATH" % tool)
            return 2
    if os.cpu_count() < 2:
        log("warning: fewer than 2 CPUs; server and client will share a core")
    out = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "label": args.label,
        "machine": machine_info(),
        "config": {k: v for k, v in vars(args).items()},
        "commands": {k: v.format(bin=args.ruvio_bin, port="P", dir="D") for k, v in cmds.items()},
    }
    t_start = time.monotonic()
    try:
        if not args.only_memory:
            raw = throughput(args, cmds)
            summ = summarize_throughput(raw)
            out["throughput_runs"] = {str(p): v for p, v in raw.items()}
            out["throughput"] = {str(p): v for p, v in summ.items()}
            print_throughput(summ)
        if not args.only_throughput:
            mem = memory(args, cmds)
            out["memory"] = mem
            print_memory(mem, args.keys, args.type_keys)
    except BenchError as e:
        log("error: %s" % e)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        _cleanup()
    out["runtime_s"] = round(time.monotonic() - t_start, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
    print("\nruntime %.0f s; results written to %s" % (out["runtime_s"], args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
