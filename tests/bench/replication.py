#!/usr/bin/python3
"""Replication benchmark (issue 5): primary throughput with a replica attached, replica lag, full sync time.

Everything on loopback, one shard, no persistence (ruvio --durability memory, redis --save '' --appendonly no).
The primary is pinned to CPU 0; redis-benchmark, the load generator, the probe and the replica to CPU 1
(taskset), as tests/bench/bench.py does, so the primary's CPU is its own.

Throughput (paired, rounds alternate the order): redis-benchmark SET -c 50 -P 16 -d 64 against the primary of
  redis_repl   redis-server primary + one redis-server replica
  ruvio_repl   ruvio primary + one ruvio replica
  ruvio_alone  ruvio primary, no replica
By default every configuration is started once, up front, and each round runs redis-benchmark (-n 300000, about
half a second) against each of them in turn: a round's ratios are taken seconds apart, so the host's drift (which
on shared machines moves throughput by 30 % within a minute) mostly cancels, and the ratio is the median of the
rounds' ratios (16 rounds). --sequential starts each configuration afresh for each run instead (the method of
rounds 1-4 in docs/BENCHMARKS.md). After each run against a primary with a replica, the next run waits until the
replica reached the primary's offset and the same DBSIZE, so that its apply never spills into another run.
Reported: median rps, ratios ruvio_repl/redis_repl and ruvio_repl/ruvio_alone with their spread over the rounds,
primary and replica CPU ns/op. --variant NAME=ARGS (with --variant-bin NAME=PATH) adds a ruvio primary + replica
whose primary gets ARGS (or that runs another build), measured in the same rounds: a knob's or a change's
effect, paired. With two CPUs the replica has to share one: by default the client's (--replica-cpus), so in the
*_repl runs redis-benchmark gets only what the replica leaves of CPU 1 (in ruvio_alone it is the bottleneck
at ~100% of CPU 1): compare the primaries' CPU ns/op too, which does not depend on that.

--primary-cpu-quota P caps each primary at P% of CPU 0 (cgroup v1 CFS quota, 10 ms period), in all the
configurations alike: the primary then sets the rate whether or not a replica is attached, and CPU 1 has room for
the client and the replica together. This stands in for a replica on its own host, which two CPUs cannot give,
and measures what the issue's ratio is about: the primary's cost of having a replica. --redis-alone adds a run of
redis-server without a replica, for Redis's own ratio on the same machine.

Lag (per server kind): a load generator process sends pipelined SETs of 64-byte values at a fixed rate (half of
the median max SET rate measured above for that kind with a replica: batches every 1 ms); meanwhile a probe
every 10 ms does SET lagprobe:<n> <n> on the primary and then polls GET lagprobe:<n> on the replica (busy loop,
one connection) until it is there. lag = time the replica first shows the value - time the primary's +OK arrived
(so it includes one replica round trip, ~50-100 us here). Reported p50/p99/max over the probes. In this test
the replica may run on either CPU (--lag-replica-cpus): on CPU 1 alone it would compete with the Python load
generator, and the figure would be the generator's, not replication's.

Full sync: the primary is loaded with K keys of 64 bytes (pipelined SETs), an empty replica is started, REPLICAOF
is sent and the time until INFO replication shows master_link_status:up and DBSIZE equals K is measured (polled
every 5 ms). Redis runs with repl-diskless-sync yes and repl-diskless-sync-delay 0.

Usage: tests/bench/replication.py [--rounds 16] [-n 300000] [--sequential] [--lag-seconds 10]
       [--sync-keys 1000000] [--redis-alone] [--primary-cpu-quota 50] [--variant NAME=ARGS [--variant-bin NAME=PATH]]
       [--json tests/bench/results-replication.json]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import durability  # noqa: E402  (load_sets)
from ruviotest.resp import parse_info_flat  # noqa: E402  (tests/pylib: on the path through bench)

RUVIO = "{bin} --port {port} --bind 127.0.0.1 --dir {dir} --shards 1 --durability memory"
REDIS = ("redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' --appendonly no "
         "--repl-diskless-sync yes --repl-diskless-sync-delay 0")
KINDS = {"redis": REDIS, "ruvio": RUVIO}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else None


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def info(port, section):
    c = bench.Conn(port, timeout=10)
    try:
        s = text(c.call("INFO", section))
    finally:
        c.close()
    return parse_info_flat(s)


def call(port, *args):
    c = bench.Conn(port, timeout=30)
    try:
        return c.call(*args)
    finally:
        c.close()


def primary_cmd(kind, args, cfg=""):
    """The primary's command line: --ruvio-arg values go to ruvio primaries only, a --variant's to its own."""
    extra = " ".join(shlex.quote(a) for a in args.ruvio_arg) if kind == "ruvio" else ""
    if cfg.startswith("ruvio_repl_"):
        extra += " " + dict(args.variant)[cfg[len("ruvio_repl_"):]]
    return KINDS[kind] + (" " + extra if extra else "")


def replica_server(kind, args, cpus=bench.CLIENT_CPU, binary=None):
    srv = bench.Server(kind + "-replica", KINDS[kind], binary or args.ruvio_bin)
    srv.argv[2] = cpus                      # taskset -c <cpus>: by default the replica shares the client's CPU
    return srv


def follow(replica, primary_port, timeout):
    """REPLICAOF the primary; returns seconds until master_link_status:up."""
    t0 = time.monotonic()
    r = call(replica.port, "REPLICAOF", "127.0.0.1", str(primary_port))
    if text(r) != "OK":
        raise bench.BenchError("REPLICAOF: %r" % (r,))
    try:
        bench.wait_for(lambda: info(replica.port, "replication").get("master_link_status") == "up",
                       timeout=timeout, interval=0.005, what="%s's link up" % replica.name, error=bench.BenchError)
    except bench.BenchError as e:
        raise bench.BenchError("%s:\n%s" % (e, replica.log_tail()))
    return time.monotonic() - t0


def caught_up(primary, replica, timeout=60):
    """Wait until the replica's offset is the primary's and DBSIZE is equal; returns seconds waited."""
    t0 = time.monotonic()

    def same():
        pi, ri = info(primary.port, "replication"), info(replica.port, "replication")
        return ri.get("master_link_status") == "up" and ri.get("slave_repl_offset") == pi.get("master_repl_offset") \
            and call(primary.port, "DBSIZE") == call(replica.port, "DBSIZE")
    bench.wait_for(same, timeout=timeout, interval=0.01, what="%s to catch up with %s" % (replica.name, primary.name),
                   error=bench.BenchError)
    return time.monotonic() - t0


CGROUP = "/sys/fs/cgroup/cpu/ruvio-bench-primary"


def cpu_quota(pid, pct, name=""):
    """Cap process pid (all its threads) at pct% of one CPU: cgroup v1 cpu controller, CFS quota per 10 ms.
    Each name gets its own cgroup (the interleaved mode runs its primaries side by side)."""
    cg = CGROUP + ("-" + name if name else "")
    os.makedirs(cg, exist_ok=True)
    with open(os.path.join(cg, "cpu.cfs_period_us"), "w") as f:
        f.write("10000")
    with open(os.path.join(cg, "cpu.cfs_quota_us"), "w") as f:
        f.write(str(int(pct * 100)))
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def setup(cfg, args):
    """Start cfg's primary (and replica, online): returns (primary, replica or None)."""
    kind = "redis" if cfg.startswith("redis") else "ruvio"
    binary = dict(args.variant_bin).get(cfg[len("ruvio_repl_"):]) if cfg.startswith("ruvio_repl_") else None
    binary = os.path.abspath(binary) if binary else args.ruvio_bin
    prim = bench.Server(cfg, primary_cmd(kind, args, cfg), binary).start()
    rep = None
    try:
        if args.primary_cpu_quota:
            cpu_quota(prim.pid, args.primary_cpu_quota, cfg)
        if not cfg.endswith("_alone"):
            rep = replica_server(kind, args, args.replica_cpus, binary).start()
            follow(rep, prim.port, 30)
        bench.sanity_check(prim)
        bench.redis_benchmark(prim, "PING_MBULK", 20000, 16, 50, 64, 120)
    except BaseException:
        for srv in (rep, prim):
            if srv is not None:
                srv.stop()
        raise
    return prim, rep


def measure(prim, rep, n):
    """One redis-benchmark SET run against prim; with a replica, waits until it caught up (so that its apply
    does not spill into the next run) and charges it the replica's CPU."""
    rc0 = bench.cpu_ns(rep.pid) if rep is not None else 0
    res = bench.redis_benchmark(prim, "SET", n, 16, 50, 64, 600)
    if rep is not None:
        res["replica_catch_up_s"] = round(caught_up(prim, rep), 3)
        # the replica's CPU for applying the run (its catch-up included; a few INFO/DBSIZE polls too)
        res["replica_cpu_ns_per_op"] = (bench.cpu_ns(rep.pid) - rc0) / n
        res["replica_link"] = info(rep.port, "replication").get("master_link_status")
    return res


def one_run(cfg, args):
    prim, rep = setup(cfg, args)
    try:
        if not bench.wait_quiet(0.10, args.quiet_wait):
            bench.log("  machine still busy; running anyway")
        return measure(prim, rep, args.n)
    finally:
        for srv in (rep, prim):
            if srv is not None:
                srv.stop()


def throughput(args):
    cfgs = ["ruvio_repl", "redis_repl", "ruvio_alone"] + (["redis_alone"] if args.redis_alone else []) + \
        ["ruvio_repl_" + name for name, _ in args.variant]
    runs = {c: [] for c in cfgs}
    live = {}
    try:
        if args.interleave:
            # every configuration up at once, idle but for its own bursts: the ratios of a round are taken
            # seconds apart, so the host's drift (which swamps a few percent over a minute) mostly cancels
            for cfg in cfgs:
                live[cfg] = setup(cfg, args)
        for r in range(args.rounds):
            order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
            if args.interleave and not bench.wait_quiet(0.10, min(args.quiet_wait, 2.0)):
                bench.log("  machine still busy; running anyway")
            for cfg in order:
                res = measure(*live[cfg], args.n) if args.interleave else one_run(cfg, args)
                runs[cfg].append(res)
                bench.log("round %d %-11s %9.0f rps %6.0f ns/op (primary) p99 %.2f ms foreign %.2f catch-up %s s"
                          % (r + 1, cfg, res["rps"], res["server_cpu_ns_per_op"], res["p99_ms"] or -1,
                             res["foreign_cpu_util"], res.get("replica_catch_up_s")))
    finally:
        for prim, rep in live.values():
            for srv in (rep, prim):
                if srv is not None:
                    srv.stop()
    out = {"runs": runs, "mode": "interleaved" if args.interleave else "sequential"}
    for c in cfgs:
        out[c] = {"rps_median": med([x["rps"] for x in runs[c]]),
                  "replica_cpu_ns_per_op_median": med([x.get("replica_cpu_ns_per_op") for x in runs[c]]),
                  "cpu_ns_per_op_median": med([x["server_cpu_ns_per_op"] for x in runs[c]]),
                  "p99_ms_median": med([x["p99_ms"] for x in runs[c]])}

    def ratios(a, b, key="rps", inv=False):
        xs = [(y[key] / x[key]) if inv else (x[key] / y[key]) for x, y in zip(runs[a], runs[b])]
        return xs

    def summary(xs):
        return {"median": med(xs), "p25": pct(xs, 25), "p75": pct(xs, 75), "min": min(xs), "max": max(xs)}

    pairs = {"ratio_ruvio_repl_vs_redis_repl": ratios("ruvio_repl", "redis_repl"),
             "ratio_ruvio_repl_vs_ruvio_alone": ratios("ruvio_repl", "ruvio_alone"),
             "ratio_ruvio_repl_vs_ruvio_alone_cpu": ratios("ruvio_repl", "ruvio_alone", "server_cpu_ns_per_op",
                                                           inv=True)}
    if args.redis_alone:
        pairs["ratio_redis_repl_vs_redis_alone"] = ratios("redis_repl", "redis_alone")
    for name, _ in args.variant:
        pairs["ratio_ruvio_repl_%s_vs_ruvio_alone" % name] = ratios("ruvio_repl_" + name, "ruvio_alone")
        pairs["ratio_ruvio_repl_%s_vs_ruvio_alone_cpu" % name] = ratios("ruvio_repl_" + name, "ruvio_alone",
                                                                         "server_cpu_ns_per_op", inv=True)
    for k, xs in pairs.items():
        out[k] = med(xs)
        out[k + "_spread"] = summary(xs)
    return out


# ---- lag ------------------------------------------------------------------

def loadgen_main(port, rate, seconds):
    """Child process: pipelined SETs at `rate` per second for `seconds` (batches every 1 ms); prints the count."""
    val = b"v" * 64
    nkeys = 10000
    per_ms = max(1, int(rate / 1000))
    cmds = [b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(k), k, val)
            for k in (b"key:%06d" % i for i in range(nkeys))]
    c = bench.Conn(port, timeout=30)
    sent = 0
    pending = 0
    t0 = time.monotonic()
    pos = 0
    while True:
        now = time.monotonic() - t0
        if now >= seconds:
            break
        due = int(now * rate) - sent
        if due > 0:
            n = min(due, per_ms * 4)
            if pos + n > nkeys:
                pos = 0
            c.sock.sendall(b"".join(cmds[pos:pos + n]))
            pos += n
            sent += n
            pending += n
        # drain what has arrived (each reply is +OK\r\n, 5 bytes)
        while pending:
            c.sock.setblocking(False)
            try:
                data = c.sock.recv(1 << 20)
            except BlockingIOError:
                data = None
            finally:
                c.sock.setblocking(True)
            if not data:
                break
            c.buf += data
            got = len(c.buf) // 5
            c.buf = c.buf[got * 5:]
            pending -= got
        time.sleep(0.0005)
    c.sock.settimeout(30)
    while pending > 0:
        c.buf += c.sock.recv(1 << 20)
        got = len(c.buf) // 5
        c.buf = c.buf[got * 5:]
        pending -= got
    elapsed = time.monotonic() - t0
    print(json.dumps({"sent": sent, "seconds": round(elapsed, 3), "rate": round(sent / elapsed)}))


def lag(kind, rate, args):
    with bench.Server(kind + "-lag", primary_cmd(kind, args), args.ruvio_bin) as prim:
        rep = replica_server(kind, args, args.lag_replica_cpus).start()
        try:
            follow(rep, prim.port, 30)
            gen = subprocess.Popen(["taskset", "-c", bench.CLIENT_CPU, sys.executable, os.path.abspath(__file__),
                                    "--_loadgen", str(prim.port), str(int(rate)), str(args.lag_seconds)],
                                   stdout=subprocess.PIPE, text=True)
            time.sleep(0.5)                      # let the rate settle
            pc, rc = bench.Conn(prim.port, timeout=10), bench.Conn(rep.port, timeout=10)
            lags, misses = [], 0
            t_end = time.monotonic() + args.lag_seconds - 1.0
            n = 0
            while time.monotonic() < t_end:
                n += 1
                key, v = "lagprobe:%d" % n, str(n)
                if text(pc.call("SET", key, v)) != "OK":
                    raise bench.BenchError("probe SET failed")
                t_ack = time.monotonic()
                while True:
                    got = rc.call("GET", key)
                    if text(got) == v:
                        lags.append(time.monotonic() - t_ack)
                        break
                    if time.monotonic() - t_ack > 5:
                        misses += 1
                        break
                time.sleep(0.01)
            pc.close()
            rc.close()
            out, _ = gen.communicate(timeout=args.lag_seconds + 60)
            gen_res = json.loads(out.strip().splitlines()[-1])
        finally:
            rep.stop()
    ms = [x * 1000 for x in lags]
    return {"target_rate": int(rate), "achieved_rate": gen_res["rate"], "probes": len(ms), "misses": misses,
            "p50_ms": round(pct(ms, 50), 3), "p99_ms": round(pct(ms, 99), 3), "max_ms": round(max(ms), 3)}


# ---- full sync ------------------------------------------------------------

def full_sync(kind, args):
    with bench.Server(kind + "-sync", KINDS[kind], args.ruvio_bin) as prim:
        durability.load_sets(prim.port, b"fs:", args.sync_keys)
        if call(prim.port, "DBSIZE") != args.sync_keys:
            raise bench.BenchError("load: DBSIZE %r" % call(prim.port, "DBSIZE"))
        rep = replica_server(kind, args).start()
        try:
            t0 = time.monotonic()
            link = follow(rep, prim.port, 120)
            bench.wait_for(lambda: call(rep.port, "DBSIZE") == args.sync_keys, timeout=t0 + 120 - time.monotonic(),
                           interval=0.005, what="full sync: DBSIZE %d" % args.sync_keys, error=bench.BenchError)
            total = time.monotonic() - t0
        finally:
            rep.stop()
    return {"keys": args.sync_keys, "link_up_s": round(link, 3), "dbsize_equal_s": round(total, 3)}


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--_loadgen":
        loadgen_main(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ruvio-bin", default=os.environ.get("RUVIO_BIN", "build/ruvio"))
    ap.add_argument("--rounds", type=int, default=None, help="default: 16 interleaved, 3 sequential")
    ap.add_argument("-n", type=int, default=None, help="SETs per run; default: 300000 interleaved, 1000000 "
                    "sequential")
    ap.add_argument("--lag-seconds", type=float, default=10.0)
    ap.add_argument("--replica-cpus", default=bench.CLIENT_CPU,
                    help="taskset CPU list of the replica in the throughput runs (default: the client's CPU)")
    ap.add_argument("--lag-replica-cpus", default="0,1",
                    help="taskset CPU list of the replica in the lag test (default: either CPU)")
    ap.add_argument("--lag-rate", type=float, default=0, help="SET/s of the lag test (default: half the max)")
    ap.add_argument("--sync-keys", type=int, default=1000000)
    ap.add_argument("--ruvio-arg", action="append", default=[],
                    help="extra argument for ruvio primaries (repeat: --ruvio-arg=--repl-ship-delay-us --ruvio-arg=0)")
    ap.add_argument("--redis-alone", action="store_true",
                    help="also run redis-server without a replica (Redis's own with/without ratio, for reference)")
    ap.add_argument("--primary-cpu-quota", type=float, default=0,
                    help="cap every primary at this %% of one CPU (cgroup v1 CFS quota) in the throughput runs, so "
                         "that the primary, not the client's CPU shared with the replica, sets the rate: the "
                         "2-CPU stand-in for a replica on its own host (needs root)")
    ap.add_argument("--sequential", dest="interleave", action="store_false",
                    help="start each configuration afresh for each of its runs (rounds of a few seconds each), "
                         "instead of the default: every configuration up at once, short runs alternating between "
                         "them, so that each round's ratios are taken seconds apart (drift-proof on a noisy host)")
    ap.add_argument("--variant", action="append", default=[], type=lambda v: tuple(v.split("=", 1)),
                    metavar="NAME=ARGS", help="also run a ruvio primary + replica whose primary gets ARGS (e.g. "
                    "d2000='--repl-ship-delay-us 2000'), reported beside ruvio_repl: a knob's effect, paired")
    ap.add_argument("--variant-bin", action="append", default=[], type=lambda v: tuple(v.split("=", 1)),
                    metavar="NAME=PATH", help="the --variant NAME runs this ruvio binary (primary and replica): "
                    "two builds compared side by side")
    ap.add_argument("--skip", default="", help="comma list of throughput,lag,sync")
    ap.add_argument("--quiet-wait", type=float, default=20.0)
    ap.add_argument("--json", default="/tmp/ruvio-replication-bench.json")
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = 16 if args.interleave else 3
    if args.n is None:
        args.n = 300000 if args.interleave else 1000000
    args.ruvio_bin = os.path.abspath(args.ruvio_bin)
    skip = set(x for x in args.skip.split(",") if x)
    out = {"machine": bench.machine_info(), "config": vars(args)}
    try:
        if "throughput" not in skip:
            out["throughput"] = throughput(args)
        if "lag" not in skip:
            out["lag"] = {}
            for kind in ("ruvio", "redis"):
                maxr = out.get("throughput", {}).get("%s_repl" % kind, {}).get("rps_median") or 400000
                out["lag"][kind] = lag(kind, args.lag_rate or maxr / 2, args)
                bench.log("lag %s: %s" % (kind, out["lag"][kind]))
        if "sync" not in skip:
            out["full_sync"] = {}
            for kind in ("ruvio", "redis"):
                out["full_sync"][kind] = full_sync(kind, args)
                bench.log("full sync %s: %s" % (kind, out["full_sync"][kind]))
    finally:
        bench._cleanup()
    t = out.get("throughput")
    if t:
        print("\nSET -c 50 -P 16 -d 64, %d %s rounds of %d (medians)" % (args.rounds, t["mode"], args.n))
        for c in [k for k in ("ruvio_repl", "redis_repl", "ruvio_alone", "redis_alone") if k in t] + \
                ["ruvio_repl_" + name for name, _ in args.variant]:
            print("%-12s %10.0f rps %7.0f primary CPU ns/op %7.0f replica CPU ns/op  p99 %.2f ms" % (
                c, t[c]["rps_median"], t[c]["cpu_ns_per_op_median"], t[c]["replica_cpu_ns_per_op_median"] or 0,
                t[c]["p99_ms_median"] or -1))
        print("ruvio_repl / redis_repl  %.3f (target >= 1.10)" % t["ratio_ruvio_repl_vs_redis_repl"])
        sp = t["ratio_ruvio_repl_vs_ruvio_alone_spread"]
        print("ruvio_repl / ruvio_alone %.3f (target >= 0.90; rounds p25 %.3f p75 %.3f, min %.3f max %.3f); "
              "primary CPU/op alone / with replica %.3f" % (
                  t["ratio_ruvio_repl_vs_ruvio_alone"], sp["p25"], sp["p75"], sp["min"], sp["max"],
                  t["ratio_ruvio_repl_vs_ruvio_alone_cpu"]))
        if "ratio_redis_repl_vs_redis_alone" in t:
            print("redis_repl / redis_alone %.3f (reference)" % t["ratio_redis_repl_vs_redis_alone"])
        for name, a in args.variant:
            k = "ratio_ruvio_repl_%s_vs_ruvio_alone" % name
            print("variant %s (%s) / ruvio_alone %.3f (rounds p25 %.3f p75 %.3f); CPU/op %.3f" % (
                name, a, t[k], t[k + "_spread"]["p25"], t[k + "_spread"]["p75"], t[k + "_cpu"]))
    for kind, v in out.get("lag", {}).items():
        print("lag %-5s at %d SET/s (achieved %d): p50 %.2f ms p99 %.2f ms max %.2f ms (%d probes)" % (
            kind, v["target_rate"], v["achieved_rate"], v["p50_ms"], v["p99_ms"], v["max_ms"], v["probes"]))
    for kind, v in out.get("full_sync", {}).items():
        print("full sync %-5s %d keys: link up %.2f s, DBSIZE equal %.2f s" % (
            kind, v["keys"], v["link_up_s"], v["dbsize_equal_s"]))
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print("results written to %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
