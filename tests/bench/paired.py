#!/usr/bin/python3
"""Paired redis-benchmark rounds for workloads bench.py's fixed tests do not cover (stdlib only; bench.py's
servers, CPU accounting and bounded runs).

Workloads (--workload):
  evalsha  EVALSHA of a two-call rate-limiter script (INCR the key, EXPIRE it, return the count) on random keys
           (`rl:__rand_int__`, -r --keyspace). Checked after each run: the counts of all rl:* keys add up to the
           requests sent, and every such key has a TTL.
  tls      SET then GET (-d --dsize, random keys) over TLS: both servers get a tls-port with a certificate made
           at run time by Debian's openssl (a CA, a server pair, a client pair; client certificates required),
           redis-benchmark connects with --tls. Checked: DBSIZE > 0 after SET and a sample value has -d bytes.

For every round, pipeline depth and workload the two servers run one after the other (the first alternates
per round), each fresh, pinned to CPU 0, redis-benchmark to CPU 1. Figures: requests/s (redis-benchmark) and
the server's CPU time (schedstat, all threads) per request. Ratios are per round (ruvio rps / redis rps, redis
CPU/op / ruvio CPU/op: above 1 favours Ruvio), reported as the median over rounds.

    /usr/bin/python3 tests/bench/paired.py --ruvio-bin build/ruvio --workload evalsha --rounds 5
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402
from bench import BenchError, Conn, Server, cpu_ns, free_port, log, run_bounded  # noqa: E402

SCRIPT = ("local n = redis.call('INCR', KEYS[1]) "
          "redis.call('EXPIRE', KEYS[1], ARGV[1]) "
          "return n")


def openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


def make_certs(d):
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=bench-ca")
    for name, cn in (("server", "localhost"), ("client", "client")):
        openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", "/CN=" + cn)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", name + ".pem", "-days", "2", "-extfile", name + ".ext")
    return {k: os.path.join(d, k) for k in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


class Workload:
    """What one run sends (redis-benchmark arguments after the connection options) and how it is checked."""

    def __init__(self, args):
        self.args = args
        self.certs = None
        self.tls_port = {}

    def server_cmd(self, name, template):
        return template

    def runs(self):
        """[(run name, redis-benchmark arguments)] for one server."""
        raise NotImplementedError

    def prepare(self, srv):
        pass

    def check(self, srv, run, issued):
        pass

    def conn_args(self, srv):
        return ["-h", "127.0.0.1", "-p", str(srv.port)]


class EvalSha(Workload):
    def prepare(self, srv):
        c = Conn(srv.port)
        try:
            sha = c.call("SCRIPT", "LOAD", SCRIPT)
            if not isinstance(sha, bytes) or len(sha) != 40:
                raise BenchError("%s: SCRIPT LOAD replied %r" % (srv.name, sha))
            self.sha = sha.decode()
            r = c.call("EVALSHA", self.sha, "1", "rl:check", "60")
            if r != 1 or c.call("DEL", "rl:check") != 1:
                raise BenchError("%s: EVALSHA check replied %r" % (srv.name, r))
        finally:
            c.close()

    def runs(self):
        return [("EVALSHA", ["-r", str(self.args.keyspace), "EVALSHA", self.sha, "1", "rl:__rand_int__", "3600"])]

    def check(self, srv, run, issued):
        c = Conn(srv.port, timeout=60)
        try:
            total, keys, cursor = 0, 0, b"0"
            while True:
                cursor, batch = c.call("SCAN", cursor, "MATCH", "rl:*", "COUNT", "1000")
                if batch:
                    vals = c.call("MGET", *batch)
                    total += sum(int(v) for v in vals)
                    keys += len(batch)
                    ttl = c.call("TTL", batch[0])
                    if not isinstance(ttl, int) or ttl <= 0:
                        raise BenchError("%s: %r has TTL %r" % (srv.name, batch[0], ttl))
                if cursor in (b"0", "0"):
                    break
            if total != issued:
                raise BenchError("%s: rl:* counts add up to %d, %d requests were sent" % (srv.name, total, issued))
            c.call("FLUSHALL")
            return {"keys": keys}
        finally:
            c.close()


class Tls(Workload):
    def __init__(self, args):
        super().__init__(args)
        self.dir = tempfile.mkdtemp(prefix="ruvio-bench-tls-")
        self.certs = make_certs(self.dir)

    def server_cmd(self, name, template):
        port = free_port()
        self.tls_port[name] = port
        c = self.certs
        return template + (" --tls-port %d --tls-cert-file %s --tls-key-file %s --tls-ca-cert-file %s"
                           % (port, c["server.pem"], c["server.key"], c["ca.pem"]))

    def conn_args(self, srv):
        c = self.certs
        return ["-h", "127.0.0.1", "-p", str(self.tls_port[srv.name]), "--tls", "--cacert", c["ca.pem"],
                "--cert", c["client.pem"], "--key", c["client.key"]]

    def runs(self):
        common = ["-r", str(self.args.keyspace), "-d", str(self.args.dsize)]
        return [("SET", common + ["-t", "set"]), ("GET", common + ["-t", "get"])]

    def check(self, srv, run, issued):
        c = Conn(srv.port)
        try:
            n = c.call("DBSIZE")
            if not isinstance(n, int) or n <= 0:
                raise BenchError("%s: DBSIZE %r after %s" % (srv.name, n, run))
            k = c.call("RANDOMKEY")
            v = c.call("GET", k)
            if not isinstance(v, bytes) or len(v) != self.args.dsize:
                raise BenchError("%s: %r holds %r" % (srv.name, k, v))
            return {"keys": n}
        finally:
            c.close()

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


WORKLOADS = {"evalsha": EvalSha, "tls": Tls}


def one_run(srv, wl, run, extra, p, args):
    issued = bench.issued_requests(args.requests, p)
    argv = (["taskset", "-c", bench.CLIENT_CPU, "redis-benchmark"] + wl.conn_args(srv)
            + ["-n", str(args.requests), "-c", str(args.clients), "-P", str(p), "--csv", "-q"] + extra)
    c0, t0 = cpu_ns(srv.pid), time.monotonic()
    try:
        rc, out, err = run_bounded(argv, args.timeout)
    except subprocess.TimeoutExpired:
        raise BenchError("redis-benchmark %s -P%d against %s timed out" % (run, p, srv.name))
    wall, cpu = time.monotonic() - t0, cpu_ns(srv.pid) - c0
    if rc != 0 or not srv.alive():
        raise BenchError("%s %s: rc=%d alive=%s %s %s" % (srv.name, run, rc, srv.alive(), out[-300:], err[-300:]))
    rps = None
    for line in out.splitlines():
        parts = [x.strip('"') for x in line.split('","')]
        if len(parts) >= 2 and parts[0] not in ("test", ""):
            try:
                rps = float(parts[1])
            except ValueError:
                pass
    if not rps:
        raise BenchError("%s %s: cannot parse %r %r" % (srv.name, run, out[-300:], err[-300:]))
    if "ERR" in out or "ERR" in err or "error" in err.lower():
        raise BenchError("%s %s: redis-benchmark reported errors: %s" % (srv.name, run, (out + err)[-300:]))
    res = {"rps": rps, "requests": issued, "wall_s": round(wall, 3), "server_cpu_ns_per_op": cpu / issued}
    res.update(wl.check(srv, run, issued) or {})
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ruvio-bin", default=os.path.join(bench.REPO, "build", "ruvio"))
    ap.add_argument("--ruvio-cmd", default=bench.DEFAULT_RUVIO_CMD)
    ap.add_argument("--redis-cmd", default=bench.DEFAULT_REDIS_CMD)
    ap.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pipelines", default="1,16", help="comma-separated pipeline depths")
    ap.add_argument("--keyspace", type=int, default=100000)
    ap.add_argument("--dsize", type=int, default=64)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per redis-benchmark run")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    args.ruvio_bin = os.path.abspath(args.ruvio_bin)
    args.pipelines = [int(x) for x in args.pipelines.split(",")]
    wl = WORKLOADS[args.workload](args)
    templates = {"ruvio": args.ruvio_cmd, "redis": args.redis_cmd}
    rounds = {}  # rounds[P][run][server] = [per-round results]
    try:
        for r in range(args.rounds):
            order = ["ruvio", "redis"] if r % 2 == 0 else ["redis", "ruvio"]
            for p in args.pipelines:
                for name in order:
                    with Server(name, wl.server_cmd(name, templates[name]), args.ruvio_bin) as srv:
                        wl.prepare(srv)
                        for run, extra in wl.runs():
                            res = one_run(srv, wl, run, extra, p, args)
                            rounds.setdefault(p, {}).setdefault(run, {"ruvio": [], "redis": []})[name].append(res)
                            log("round %d P=%d %-7s %-5s %10.0f rps %8.0f ns/op" % (
                                r + 1, p, run, name, res["rps"], res["server_cpu_ns_per_op"]))
    finally:
        if hasattr(wl, "close"):
            wl.close()
    summary = {}
    print("| P | run | ruvio rps | redis rps | rps ratio | ruvio CPU ns/op | redis CPU ns/op | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for p, runs in rounds.items():
        for run, by in runs.items():
            med = lambda k, s: statistics.median(x[k] for x in by[s])  # noqa: E731
            rps_ratio = statistics.median(a["rps"] / b["rps"] for a, b in zip(by["ruvio"], by["redis"]))
            cpu_ratio = statistics.median(b["server_cpu_ns_per_op"] / a["server_cpu_ns_per_op"]
                                          for a, b in zip(by["ruvio"], by["redis"]))
            summary.setdefault(str(p), {})[run] = {"rps_ratio": rps_ratio, "cpu_ratio": cpu_ratio}
            print("| %d | %s | %.0f | %.0f | **%.2f×** | %.0f | %.0f | **%.2f×** |" % (
                p, run, med("rps", "ruvio"), med("rps", "redis"), rps_ratio,
                med("server_cpu_ns_per_op", "ruvio"), med("server_cpu_ns_per_op", "redis"), cpu_ratio))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "date": datetime.datetime.utcnow().isoformat() + "Z",
                       "machine": bench.machine_info(), "rounds": rounds, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        log("paired.py: %s" % e)
        sys.exit(1)
