#!/usr/bin/python3
"""Cluster benchmark (issue 16): Ruvio Cluster against a Redis 7 Cluster on three hosts made of network namespaces,
the same client load through a cluster client; throughput and server CPU per operation, paired rounds.

Layout (tests/multihost/test_cluster_hosts.py's, with its namespaces from tests/multihost/netns.py): hosts h0 h1 h2
on a bridge, two cluster nodes on each (ports 7000 and 7001), made one cluster with `redis-cli --cluster create
... --cluster-replicas R` (R=1: a replica per primary, on another host, three primaries; R=0: six primaries).
  ruvio   one process per host: `ruvio --shards 2 --cluster-enabled yes --durability memory` (the topology in
          the Raft log on the bus port)
  redis   two `redis-server --cluster-enabled yes --save '' --appendonly no` per host
No persistence on either side. Every server process is pinned to CPU 0, the client to CPU 1 (taskset); on the
2-core machine the servers of all three hosts share that one core, so the figure is the cluster's total cost.

Load, from the root namespace (through the bridge): `redis-benchmark --cluster` (redis-tools 7.x) against h0:7000,
-c 50 -d 64 -r 1000000 (random keys; in cluster mode each request's key carries a hash tag of a random slot of the
node the client talks to, so the keys spread over all 16384 slots), tests SET then GET, at pipeline 1 and 16.

A round: for each kind (the order alternates from round to round) start the six nodes afresh, create the cluster,
wait until it is settled (every node cluster_state:ok, every replica linked), warm up (an unmeasured SET run),
then run every test at every pipeline depth; stop. Per run: ops/s (redis-benchmark --csv), and server CPU per
operation = the sum over all server processes of utime+stime (/proc/PID/stat, 10 ms ticks) and of the schedstat
run time (ns; threads that exited are not in it), before and after, divided by the requests. Reported: medians
over the rounds and ratios ruvio/redis (throughput) and redis/ruvio (CPU per op; above 1: ruvio is cheaper), with
the issue's bar of 1.2. Both run with cluster-node-timeout 15000 (Redis's default; --node-timeout). A run in
which a server answered an error (ruvio refuses writes with CLUSTERDOWN while its host's write lease from the
topology log's quorum has lapsed, which a starved core can cause) is stopped at the first error (redis-benchmark
--cluster 7.0 would retry it forever), recorded with the error and left out of the medians; the summary counts
them. A machine shared with other work is noisy: `foreign_cpu_util` records the CPU used by
anything else during each run (as tests/bench/bench.py does). redis-benchmark is one thread: where its
`client_cpu_util` is near 1 the client set the rate, and the CPU per operation is the figure to compare.

Needs root, iproute2 (`ip netns`), redis-server and redis-tools 7.x, a built ruvio.

Usage:
  sudo /usr/bin/python3 tests/bench/cluster.py --out tests/bench/results-cluster.json       (~15 min)
       [--bin build/ruvio] [--rounds 5] [--replicas 1,0] [--pipelines 1,16] [--tests set,get]
       [-n1 200000] [-n16 1000000] [--clients 50] [--quiet-wait 5]
  quick validation (~1 min): --rounds 1 -n1 20000 -n16 100000 --replicas 1
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "multihost"))

import redis  # noqa: E402

import bench  # noqa: E402  (CPU counters, bounded runs, redis-benchmark's CSV, machine info)
import netns  # noqa: E402
import test_cluster_hosts as hosts  # noqa: E402  (the layout: HOSTS, PORTS, ruvio_argv, topology, client)
from ruviotest.wait import wait_for  # noqa: E402

KINDS = ("ruvio", "redis")


def log(msg):
    bench.log(msg)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pinned(argv, cpus=None):
    return ["taskset", "-c", str(cpus or bench.SERVER_CPU)] + [str(a) for a in argv]


def start(kind, net, tag, ruvio_bin, node_timeout, ports=hosts.PORTS, cpus=None):
    """Start the cluster nodes of kind on every host, each in a new directory (tag: round and layout), at
    ports (one ruvio process of len(ports) shards per host, one redis-server per port), pinned to cpus
    (default bench.SERVER_CPU; a dict: per host name); returns the server processes once all answer."""
    procs = []
    for h in net:
        hcpus = cpus.get(h.name) if isinstance(cpus, dict) else cpus
        if kind == "ruvio":
            d = os.path.join(net.workdir, "%s-%s-%s" % (tag, kind, h.name))
            os.makedirs(d, exist_ok=True)
            argv = hosts.ruvio_argv(h, d)
            argv[0] = ruvio_bin
            argv[argv.index("--cluster-node-timeout") + 1] = node_timeout
            argv[argv.index("--shards") + 1] = len(ports)
            argv[argv.index("--port") + 1] = ports[0]
            procs.append(h.spawn(pinned(argv + ["--durability", "memory"], hcpus),
                                 log="%s-ruvio-%s" % (tag, h.name)))
            continue
        for port in ports:
            d = os.path.join(net.workdir, "%s-%s-%s-%d" % (tag, kind, h.name, port))
            os.makedirs(d, exist_ok=True)
            procs.append(h.spawn(pinned(
                ["redis-server", "--port", port, "--bind", h.ip, "--protected-mode", "no", "--dir", d,
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", node_timeout, "--save", "", "--appendonly", "no",
                 "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"], hcpus),
                log="%s-redis-%s-%d" % (tag, h.name, port)))

    def up():
        for p in procs:
            if p.poll() is not None:
                with open(p.log_path, errors="replace") as f:
                    raise bench.BenchError("%s exited with %s:\n%s" % (p.host, p.returncode, f.read()[-3000:]))
        return all(h.can_reach(h, port) for h in net for port in ports)
    wait_for(up, timeout=30, what="%s: every node answering PING" % kind, error=bench.BenchError)
    return procs


def create(net, replicas, ports=hosts.PORTS):
    """redis-cli --cluster create of the nodes at ports on every host (primaries first, one per host), then
    wait until the cluster is settled."""
    addrs = ["%s:%d" % (h.ip, p) for p in ports for h in net]
    t0 = time.monotonic()
    r = net["h0"].run(["timeout", "90", "redis-cli", "--cluster", "create", *addrs, "--cluster-replicas",
                       replicas, "--cluster-yes"], timeout=100)
    if r.returncode != 0 or "[OK] All 16384 slots covered." not in r.stdout:
        raise bench.BenchError("redis-cli --cluster create failed:\n%s%s\n%s" % (r.stdout, r.stderr,
                                                                                hosts.processes(net)[-3000:]))
    took = time.monotonic() - t0
    want = ["primary"] * (len(addrs) - 3 * replicas) + ["replica"] * (3 * replicas)

    def settled():
        for h in net:
            for port in ports:
                if hosts.info(h.ip, port).get("cluster_state") != "ok":
                    return False
        topo = hosts.topology(net)
        if sorted(t[2] for t in topo.values()) != want:
            return False
        for ip, port, role, _, _ in topo.values():
            if role == "replica":
                c = hosts.client(ip, port)
                try:
                    if c.info("replication").get("master_link_status") != "up":
                        return False
                finally:
                    c.close()
        return True
    wait_for(settled, timeout=60, interval=0.2, what="cluster settled (state ok, replicas linked)",
             error=bench.BenchError)
    return took


def server_cpu(procs):
    """(utime+stime ns, schedstat ns) summed over the server processes."""
    return (sum(bench.stat_cpu_ns(p.pid) for p in procs), sum(bench.cpu_ns(p.pid) for p in procs))


class LoadError(bench.BenchError):
    """A run that got error replies (CLUSTERDOWN, MOVED, ...): it is recorded and left out of the medians."""


def bounded_load(argv, timeout):
    """Run redis-benchmark; (rc, stdout, stderr, None), or (..., the first error line) when a server answered
    an error: redis-benchmark --cluster 7.0 then refetches the slots and, if they did not change, retries
    forever, so it is stopped at once. Killed after timeout seconds in any case."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    err, bad = [], []

    def watch():
        for raw in p.stderr:
            line = raw.decode(errors="replace")
            err.append(line)
            if line.startswith("Error from server") and not bad:
                bad.append(line.strip())
                kill()

    def kill():
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    out = []
    readers = [threading.Thread(target=watch, daemon=True),
               threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)]
    for t in readers:
        t.start()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill()
        p.wait(timeout=10)
        if not bad:
            bad.append("timed out after %ds" % timeout)
    for t in readers:
        t.join(5)
    return p.returncode, b"".join(out).decode(errors="replace"), "".join(err), (bad[0] if bad else None)


def run_load(net, procs, test, n, pipeline, clients, timeout):
    h0 = net["h0"]
    argv = ["taskset", "-c", bench.CLIENT_CPU, "redis-benchmark", "--cluster", "-h", h0.ip, "-p",
            str(hosts.PORTS[0]), "-n", str(n), "-c", str(clients), "-P", str(pipeline), "-d", "64",
            "-r", "1000000", "-t", test.lower(), "--csv", "-q"]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ps0 = bench.proc_stat()
    s0, c0 = server_cpu(procs)
    t0 = time.monotonic()
    rc, out, err, bad = bounded_load(argv, timeout)
    wall = time.monotonic() - t0
    if bad is not None:
        raise LoadError("redis-benchmark %s -P%d: %s" % (test, pipeline, bad))
    s1, c1 = server_cpu(procs)
    ps1 = bench.proc_stat()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)     # redis-benchmark's CPU (s)
    dead = [p for p in procs if p.poll() is not None]
    if dead:
        raise bench.BenchError("server exited during %s:\n%s" % (test, hosts.processes(net)))
    rps = bench._parse_rps(out, test)
    if rc != 0 or not rps:
        raise bench.BenchError("redis-benchmark rc=%d, no rate for %s: %s %s" % (rc, test, out[-600:], err[-600:]))
    if "ERR" in out or "MOVED" in err or "CLUSTERDOWN" in err:
        log("  warning: redis-benchmark reported errors: %s" % (out + err)[-300:].strip())
    busy = ps1["busy"] - ps0["busy"]
    # CPU used on the machine by anything but these servers and this client (other users' work; the
    # kernel's network path is partly counted here too, as softirq time of no process)
    foreign = max(0.0, busy - (s1 - s0) / 1e9 - client)
    p50, p99 = bench._parse_latency(out, test)
    return {"rps": rps, "requests": n, "wall_s": round(wall, 3),
            "server_cpu_ns_per_op": (s1 - s0) / n, "server_schedstat_ns_per_op": (c1 - c0) / n,
            "server_cpu_util": round((s1 - s0) / 1e9 / wall, 3) if wall else None,
            "client_cpu_util": round(client / wall, 3) if wall else None,
            "foreign_cpu_util": round(foreign / wall, 3) if wall else None,
            "p50_ms": p50, "p99_ms": p99}


def check(net, kind):
    """redis-benchmark does not read its replies: a cluster client writes and reads, and the primaries hold
    keys (every primary took some of the load)."""
    rc = hosts.cluster_client(net)
    try:
        for i in range(200):
            rc.set("bench:check:%d" % i, i)
        if any(rc.get("bench:check:%d" % i) != str(i) for i in range(200)):
            raise bench.BenchError("%s: a cluster client read back other values" % kind)
    finally:
        rc.close()
    sizes = {"%s:%d" % t[:2]: hosts.cmd(t[0], t[1], "DBSIZE") for t in hosts.topology(net).values()
             if t[2] == "primary"}
    if not all(v > 200 for v in sizes.values()):
        raise bench.BenchError("%s: a primary holds (almost) no keys after the load: %s" % (kind, sizes))
    return sizes


def one_round(args, net, rnd, replicas, kind):
    procs = start(kind, net, "r%d-R%d" % (rnd, replicas), args.bin, args.node_timeout)
    try:
        took = create(net, replicas)
        try:
            run_load(net, procs, "SET", args.warmup, 16, args.clients, args.timeout)     # warm-up, not measured
        except LoadError as e:
            log("round %d R=%d %-5s warm-up failed: %s" % (rnd, replicas, kind, e))
        if args.quiet_wait and not bench.wait_quiet(0.25, args.quiet_wait):
            log("  machine still busy; running anyway")
        res = {"create_s": round(took, 2), "runs": {}}
        for p in args.pipelines:
            for t in args.tests:
                n = args.n1 if p == 1 else args.n16
                try:
                    r = run_load(net, procs, t, n, p, args.clients, args.timeout)
                except LoadError as e:
                    log("round %d R=%d %-5s %-4s P%-2d failed: %s" % (rnd, replicas, kind, t, p, e))
                    res["runs"]["%s_P%d" % (t, p)] = {"error": str(e)}
                    continue
                res["runs"]["%s_P%d" % (t, p)] = r
                log("round %d R=%d %-5s %-4s P%-2d %9.0f ops/s %7.0f ns/op (server CPU) client %.2f foreign %.2f"
                    % (rnd, replicas, kind, t, p, r["rps"], r["server_cpu_ns_per_op"], r["client_cpu_util"],
                       r["foreign_cpu_util"]))
        try:
            res["dbsize_per_primary"] = check(net, kind)
        except (bench.BenchError, OSError, redis.RedisError) as e:      # recorded; the round's runs count
            log("round %d R=%d %-5s check failed: %s" % (rnd, replicas, kind, e))
            res["check_error"] = str(e)[:500]
        return res
    finally:
        for p in procs:
            net.stop(p)


def summarize(rounds, args):
    out = {}
    for replicas in args.replicas:
        layout = {}
        for p in args.pipelines:
            for t in args.tests:
                key = "%s_P%d" % (t, p)
                every = {k: [r[replicas][k]["runs"].get(key, {"error": "not run"}) for r in rounds
                             if k in r.get(replicas, {})] for k in KINDS}
                runs = {k: [x for x in every[k] if "error" not in x] for k in KINDS}
                rps = {k: med([x["rps"] for x in runs[k]]) for k in KINDS}
                cpu = {k: med([x["server_cpu_ns_per_op"] for x in runs[k]]) for k in KINDS}
                # per-round ratios (paired: both runs of the round good), then their median
                pairs = [(r[replicas]["ruvio"]["runs"].get(key, {}), r[replicas]["redis"]["runs"].get(key, {}))
                         for r in rounds if "ruvio" in r.get(replicas, {}) and "redis" in r.get(replicas, {})]
                pairs = [(a, b) for a, b in pairs if "rps" in a and "rps" in b]
                pr = [a["rps"] / b["rps"] for a, b in pairs]
                pc = [b["server_cpu_ns_per_op"] / a["server_cpu_ns_per_op"] for a, b in pairs
                      if a["server_cpu_ns_per_op"] > 0]
                layout[key] = {
                    "failed_runs": {k: len(every[k]) - len(runs[k]) for k in KINDS}, "pairs": len(pairs),
                    "rps": rps, "server_cpu_ns_per_op": cpu,
                    "throughput_ratio": med(pr), "throughput_ratio_range": [min(pr), max(pr)] if pr else None,
                    "cpu_per_op_ratio": med(pc), "cpu_per_op_ratio_range": [min(pc), max(pc)] if pc else None,
                    "meets_1_2": bool(pr and pc and med(pr) >= 1.2 and med(pc) >= 1.2),
                    "foreign_cpu_util_max": max([x["foreign_cpu_util"] for k in KINDS for x in runs[k]] or [0]),
                }
        out["replicas_%d" % replicas] = layout
    return out


def print_summary(summary):
    print("\nCluster throughput: medians; ratio = ruvio/redis ops/s and redis/ruvio server CPU per op")
    for layout, tests in summary.items():
        print("\n%s (servers on CPU %s, redis-benchmark --cluster on CPU %s)" % (layout, bench.SERVER_CPU,
                                                                              bench.CLIENT_CPU))
        print("%-8s %12s %12s %7s %11s %11s %7s %5s %s" % ("test", "ruvio ops/s", "redis ops/s", "ratio",
                                                       "ruvio ns/op", "redis ns/op", "ratio", ">=1.2",
                                                       "failed runs"))
        for key, s in tests.items():
            print("%-8s %12.0f %12.0f %7.2f %11.0f %11.0f %7.2f %5s %s"
                  % (key, s["rps"]["ruvio"] or 0, s["rps"]["redis"] or 0, s["throughput_ratio"] or 0,
                     s["server_cpu_ns_per_op"]["ruvio"] or 0, s["server_cpu_ns_per_op"]["redis"] or 0,
                     s["cpu_per_op_ratio"] or 0, "yes" if s["meets_1_2"] else "no",
                     " ".join("%s %d" % kv for kv in s["failed_runs"].items())))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, help="JSON results file")
    ap.add_argument("--bin", default=os.environ.get("RUVIO_BIN", os.path.join(REPO, "build", "ruvio")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--replicas", default="1,0", help="layouts: --cluster-replicas values, in order (1 is the issue's)")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("-n1", type=int, default=200000, help="requests per run at pipeline 1")
    ap.add_argument("-n16", type=int, default=1000000, help="requests per run at pipeline 16")
    ap.add_argument("--warmup", type=int, default=100000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--node-timeout", type=int, default=15000,
                    help="cluster-node-timeout (ms) of both (15000: Redis's default)")
    ap.add_argument("--timeout", type=int, default=300, help="bound on one redis-benchmark run (s)")
    ap.add_argument("--quiet-wait", type=float, default=5.0, help="wait up to this long for a quiet machine (0: no)")
    a = ap.parse_args(argv)
    a.replicas = [int(x) for x in a.replicas.split(",")]
    a.pipelines = [int(x) for x in a.pipelines.split(",")]
    a.tests = [x.strip().upper() for x in a.tests.split(",")]
    if any(r not in (0, 1) for r in a.replicas):
        ap.error("--replicas: 0 or 1")
    return a


def main(argv=None):
    args = parse_args(argv)
    why = netns.unavailable()
    if why:
        sys.exit("cluster benchmark: %s" % why)
    for tool in ("redis-server", "redis-cli", "redis-benchmark", "taskset"):
        if shutil.which(tool) is None:
            sys.exit("cluster benchmark: %s is not installed (scripts/deps.sh test)" % tool)
    if not os.path.exists(args.bin):
        sys.exit("cluster benchmark: no ruvio binary at %s (--bin)" % args.bin)
    args.bin = os.path.abspath(args.bin)
    net = netns.Net.create(hosts.HOSTS)
    results = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": bench.machine_info(), "args": vars(args),
               "pinning": {"servers_cpu": bench.SERVER_CPU, "client_cpu": bench.CLIENT_CPU},
               "layout": "3 netns hosts x 2 cluster nodes (ports %s); ruvio: 1 process x 2 shards per host, "
                         "redis: 2 redis-server per host" % (hosts.PORTS,),
               "rounds": []}
    try:
        for rnd in range(args.rounds):
            rr = {}
            for replicas in args.replicas:
                order = KINDS if rnd % 2 == 0 else KINDS[::-1]
                rr[replicas] = {kind: one_round(args, net, rnd, replicas, kind) for kind in order}
            results["rounds"].append(rr)
            results["summary"] = summarize(results["rounds"], args)
            with open(args.out, "w") as f:       # after every round: a stopped run keeps what it measured
                json.dump(results, f, indent=1, sort_keys=True)
    finally:
        net.close()
        shutil.rmtree(net.workdir, ignore_errors=True)
    results["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    print_summary(results["summary"])
    print("\nresults: %s" % args.out)


if __name__ == "__main__":
    main()
