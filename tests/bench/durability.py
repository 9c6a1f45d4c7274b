#!/usr/bin/env python3
"""Durability benchmark (issue 4): WAL modes against Redis's AOF, and recovery time.

Throughput: SET, one shard, -c 50 -P 16 -d 64 (redis-benchmark's default key), server on CPU 0 and
redis-benchmark on CPU 1, paired rounds (the order alternates), for these pairs:

  everysec      ruvio --durability everysec   vs redis --appendonly yes --appendfsync everysec
  always        ruvio --durability always     vs redis --appendonly yes --appendfsync always
  ev_vs_mem     ruvio --durability everysec   vs ruvio --durability memory   (the cost of the WAL)
  memory        ruvio --durability memory     vs redis --appendonly no       (unchanged baseline)

Reported per pair: median rps ratio, median server CPU/op ratio (other / ruvio), each side's
median p99 latency.

Recovery: load K 64-byte keys, SAVE (checkpoint), write R more SETs of new keys (WAL records),
kill -9, restart on the same directory and time until PING answers; also INFO's loading_time_ms
and the replay rate (K + R) / loading time.

Usage: tests/bench/durability.py [--rounds 3] [-n 1000000] [--pairs everysec,always,...]
       [--recovery-keys 1000000] [--recovery-records 1000000] [--no-recovery] [--json out.json]
       [--ruvio-arg=--wal_sync_min_interval_us --ruvio-arg=-1]   (extra ruvio arguments, every pair)

The always-mode p99 check alone (issue 4): --pairs always --no-recovery --rounds 5 --json out.json
"""
import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from ruviotest.resp import parse_info_flat  # noqa: E402  (tests/pylib: on the path through bench)

RUVIO = "{bin} --port {port} --bind 127.0.0.1 --dir {dir} --shards 1 --durability %s"
REDIS = ("redis-server --port {port} --bind 127.0.0.1 --dir {dir} --save '' "
         "--appendonly %s --appendfsync %s")
PAIRS = {
    "everysec": (RUVIO % "everysec", REDIS % ("yes", "everysec")),
    "always": (RUVIO % "always", REDIS % ("yes", "always")),
    "ev_vs_mem": (RUVIO % "everysec", RUVIO % "memory"),
    "memory": (RUVIO % "memory", REDIS % ("no", "everysec")),
}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run_pairs(args):
    out = {}
    extra = " ".join(shlex.quote(a) for a in args.ruvio_arg or [])
    for pair in args.pairs:
        ours, other = PAIRS[pair]
        if extra:
            ours = ours + " " + extra
            other = other + " " + extra if other.startswith("{bin}") else other
        runs = {"ruvio": [], "other": []}
        for r in range(args.rounds):
            order = [("ruvio", ours), ("other", other)]
            if r % 2:
                order.reverse()
            for name, tmpl in order:
                with bench.Server(name, tmpl, args.ruvio_bin) as srv:
                    bench.sanity_check(srv)
                    bench.redis_benchmark(srv, "PING_MBULK", 20000, 16, 50, 64, 120)
                    if not bench.wait_quiet(0.10, args.quiet_wait):
                        bench.log("  machine still busy; running anyway")
                    res = bench.redis_benchmark(srv, "SET", args.n, 16, 50, 64, 600)
                    res["wal"] = wal_stats(srv)
                    runs[name].append(res)
                    bench.log("%-9s round %d %-5s %9.0f rps %6.0f ns/op p50 %.2f p99 %.2f ms (foreign %.2f)"
                              % (pair, r + 1, name, res["rps"], res["server_cpu_ns_per_op"],
                                 res["p50_ms"] or -1, res["p99_ms"] or -1, res["foreign_cpu_util"]))
                    if res["wal"]:
                        bench.log("          fsyncs %(wal_fsyncs)s slow %(wal_fsyncs_slow)s paced "
                                  "%(wal_fsyncs_paced)s max %(wal_fsync_max_us)s us, pre-zeroed segments "
                                  "%(wal_prezeroed_segments)s" % res["wal"])
        rps_ratio = [a["rps"] / b["rps"] for a, b in zip(runs["ruvio"], runs["other"])]
        cpu_ratio = [b["server_cpu_ns_per_op"] / a["server_cpu_ns_per_op"]
                     for a, b in zip(runs["ruvio"], runs["other"])]
        out[pair] = {
            "ruvio_cmd": ours, "other_cmd": other,
            "rps_ratio_median": med(rps_ratio), "rps_ratios": rps_ratio,
            "cpu_ratio_median": med(cpu_ratio),
            "ruvio_rps_median": med([x["rps"] for x in runs["ruvio"]]),
            "other_rps_median": med([x["rps"] for x in runs["other"]]),
            "ruvio_p50_ms_median": med([x["p50_ms"] for x in runs["ruvio"]]),
            "other_p50_ms_median": med([x["p50_ms"] for x in runs["other"]]),
            "ruvio_p99_ms_median": med([x["p99_ms"] for x in runs["ruvio"]]),
            "other_p99_ms_median": med([x["p99_ms"] for x in runs["other"]]),
            "runs": runs,
        }
    return out


def wal_stats(srv):
    """ruvio's WAL counters after a run (INFO persistence), {} for Redis."""
    c = bench.Conn(srv.port, timeout=10)
    try:
        info = c.call("INFO", "persistence")
    finally:
        c.close()
    if isinstance(info, bytes):
        info = info.decode()
    keys = ("wal_fsyncs", "wal_fsyncs_slow", "wal_fsyncs_paced", "wal_fsync_max_us", "wal_prezeroed_segments")
    fields = parse_info_flat(info)
    return {k: int(fields[k]) for k in keys if k in fields}


def load_sets(port, prefix, count, start=0, pipeline=2000):
    c = bench.Conn(port, timeout=60)
    try:
        val = b"x" * 64
        for base in range(start, start + count, pipeline):
            parts = []
            for i in range(base, min(base + pipeline, start + count)):
                k = b"%s%d" % (prefix, i)
                parts.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(k), k, val))
            c.sock.sendall(b"".join(parts))
            c.expect_simple_batch(b"+OK\r\n", len(parts))
    finally:
        c.close()


def recovery(args):
    d = tempfile.mkdtemp(prefix="ruvio-bench-recovery-")
    port = bench.free_port()
    argv = ["taskset", "-c", bench.SERVER_CPU, args.ruvio_bin, "--port", str(port), "--bind",
            "127.0.0.1", "--dir", d, "--durability", "everysec"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ping(port, 20)
        load_sets(port, b"ck:", args.recovery_keys)
        c = bench.Conn(port, timeout=120)
        assert c.call("SAVE") == "OK"
        c.close()
        load_sets(port, b"wal:", args.recovery_records)
        bench.wait_for(lambda: wal_synced(port), timeout=10, interval=0.02, error=bench.BenchError,
                       what="everysec: the sync to cover everything")
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ping(port, 120)
        ready = time.monotonic() - t0
        c = bench.Conn(port, timeout=10)
        info = c.call("INFO", "persistence")
        if isinstance(info, bytes):
            info = info.decode()
        dbsize = c.call("DBSIZE")
        c.close()
    finally:
        p.terminate()
        p.wait(20)
        subprocess.run(["rm", "-rf", d])
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    load_ms = int(fields["loading_time_ms"])
    total = args.recovery_keys + args.recovery_records
    res = {"keys_in_checkpoint": int(fields["loading_keys"]),
           "wal_records": int(fields["loading_wal_records"]), "dbsize": dbsize,
           "restart_to_ping_s": round(ready, 3), "loading_time_s": load_ms / 1000,
           "replay_rate_per_s": round(total / (load_ms / 1000)) if load_ms else None}
    if dbsize != total:
        raise bench.BenchError("recovery: DBSIZE %r, expected %d" % (dbsize, total))
    return res


def wal_synced(port):
    """INFO persistence: the WAL is on disk up to its last record."""
    c = bench.Conn(port, timeout=10)
    try:
        info = c.call("INFO", "persistence")
    finally:
        c.close()
    f = parse_info_flat(info.decode() if isinstance(info, bytes) else info)
    return f.get("wal_durable_lsn") is not None and f.get("wal_durable_lsn") == f.get("wal_last_lsn")


def wait_ping(port, timeout):
    def pong():
        try:
            c = bench.Conn(port, timeout=2)
            try:
                return c.call("PING") == "PONG"
            finally:
                c.close()
        except (OSError, bench.BenchError):
            return False
    bench.wait_for(pong, timeout=timeout, interval=0.01, what="server on port %d answering PONG" % port,
                   error=bench.BenchError)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ruvio-bin", default=os.environ.get("RUVIO_BIN", "build/ruvio"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--pairs", default="everysec,always,ev_vs_mem,memory")
    ap.add_argument("--recovery-keys", type=int, default=1000000)
    ap.add_argument("--recovery-records", type=int, default=1000000)
    ap.add_argument("--no-recovery", action="store_true")
    ap.add_argument("--ruvio-arg", action="append",
                    help="extra ruvio argument for every pair (repeat; e.g. --ruvio-arg=--wal_sync_min_interval_us)")
    ap.add_argument("--quiet-wait", type=float, default=20.0)
    ap.add_argument("--json", default="/tmp/ruvio-durability-bench.json")
    args = ap.parse_args()
    args.pairs = [x for x in args.pairs.split(",") if x]
    args.ruvio_bin = os.path.abspath(args.ruvio_bin)
    out = {"machine": bench.machine_info(), "config": vars(args)}
    try:
        out["throughput"] = run_pairs(args)
        if not args.no_recovery:
            out["recovery"] = recovery(args)
    finally:
        bench._cleanup()
    print("\nSET -P 16 -c 50 -d 64, %d rounds (medians)" % args.rounds)
    print("%-10s %12s %12s %9s %9s %10s %10s" % ("pair", "ruvio rps", "other rps", "rps ratio",
                                                  "cpu ratio", "ruvio p99", "other p99"))
    for pair, v in out["throughput"].items():
        print("%-10s %12.0f %12.0f %9.3f %9.3f %10.2f %10.2f" % (
            pair, v["ruvio_rps_median"], v["other_rps_median"], v["rps_ratio_median"],
            v["cpu_ratio_median"], v["ruvio_p99_ms_median"] or -1, v["other_p99_ms_median"] or -1))
    if "recovery" in out:
        print("recovery: %s" % json.dumps(out["recovery"]))
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print("results written to %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
