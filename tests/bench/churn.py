#!/usr/bin/python3
"""Memory churn: ruvio vs Debian's redis-server in the same run, resident memory only.

Stdlib only (reuses bench.py's server launcher: each server pinned to CPU 0, one at a time).
For each server, a fresh process goes through:

  idle        RSS after start-up
  passes      --passes SET/DEL passes: SET --keys keys with values cycling through 16..3000 bytes
              (pipelined), then DEL them all; RSS sampled after every batch (peak) and at the end
  reconnects  --reconnects connect / PING / close cycles, half of them leaving a partial command behind
  slow        --slow clients each send --burst PINGs and never read the replies; RSS while they wait
  fill        SET --fill-keys 1000-byte values (the peak), then FLUSHALL and RSS at +1 s and +5 s,
              then MEMORY PURGE
  budget      (with --budget MB) a fresh server with maxmemory MB and allkeys-lru takes 3x that in
              1000-byte SETs; peak RSS and evicted keys

Target: ruvio no worse than Redis on every line.  See docs/BENCHMARKS.md ("Memory churn").
"""
import argparse
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (Server, Conn, resp_cmd, rss_bytes)

SIZES = [16, 100, 500, 1000, 3000]


def mb(n):
    return "%.1f" % (n / 1048576.0)


class Sampler:
    def __init__(self, pid):
        self.pid = pid
        self.peak = 0

    def __call__(self):
        r = bench.rss_bytes(self.pid)
        self.peak = max(self.peak, r)
        return r


def set_batch(conn, keys, sizes):
    out = []
    for k, n in zip(keys, sizes):
        out.append(bench.resp_cmd("SET", k, b"x" * n))
    conn.sock.sendall(b"".join(out))
    conn.expect_simple_batch(b"+OK\r\n", len(keys))


def del_batch(conn, keys):
    conn.sock.sendall(bench.resp_cmd("DEL", *keys))
    r = conn.read_reply()
    if not isinstance(r, int):
        raise bench.BenchError("DEL replied %r" % (r,))


def info_field(conn, section, field):
    txt = conn.call("INFO", section)
    for line in txt.decode().split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def run_churn(name, cmd, args):
    res = {}
    with bench.Server(name, cmd, args.ruvio_bin) as srv:
        rss = Sampler(srv.pid)
        time.sleep(0.5)
        res["idle"] = rss()
        c = bench.Conn(srv.port, timeout=30)
        batch = 500
        for p in range(args.passes):
            for lo in range(0, args.keys, batch):
                keys = ["p%d:%d" % (p, i) for i in range(lo, min(lo + batch, args.keys))]
                set_batch(c, keys, [SIZES[i % len(SIZES)] for i in range(lo, lo + len(keys))])
                if (lo // batch) % 20 == 0:
                    rss()
            rss()
            for lo in range(0, args.keys, batch):
                del_batch(c, ["p%d:%d" % (p, i) for i in range(lo, min(lo + batch, args.keys))])
        time.sleep(1.0)
        res["after_passes"] = rss()
        # reconnects
        for i in range(args.reconnects):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            if i % 2:
                s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nabc")   # a partial bulk left behind
            else:
                s.sendall(b"PING\r\n")
                s.recv(16)
            s.close()
        time.sleep(1.0)
        res["after_reconnects"] = rss()
        # slow clients: PING bursts whose replies are never read
        slow = []
        burst = b"PING\r\n" * args.burst
        for _ in range(args.slow):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            s.sendall(burst)
            slow.append(s)
        time.sleep(1.0)
        res["slow_clients"] = rss()
        for s in slow:
            s.close()
        time.sleep(1.0)
        res["after_slow"] = rss()
        # one big fill, FLUSHALL, decay
        val_batch = 1000
        for lo in range(0, args.fill_keys, val_batch):
            n = min(val_batch, args.fill_keys - lo)
            set_batch(c, ["f%d" % i for i in range(lo, lo + n)], [1000] * n)
            if (lo // val_batch) % 20 == 0:
                rss()
        res["filled"] = rss()
        c.call("FLUSHALL")
        t0 = time.monotonic()
        time.sleep(1.0)
        res["flush_1s"] = rss()
        time.sleep(max(0.0, 5.0 - (time.monotonic() - t0)))
        res["flush_5s"] = rss()
        c.call("MEMORY", "PURGE")
        time.sleep(0.2)
        res["purged"] = rss()
        res["peak"] = rss.peak
        c.close()
    return res


def run_budget(name, cmd, args):
    budget = args.budget * 1048576
    cmd = cmd + " --maxmemory %d --maxmemory-policy allkeys-lru" % budget
    with bench.Server(name, cmd, args.ruvio_bin) as srv:
        rss = Sampler(srv.pid)
        time.sleep(0.5)
        idle = rss()
        c = bench.Conn(srv.port, timeout=30)
        total = 3 * budget // 1000
        for lo in range(0, total, 1000):
            n = min(1000, total - lo)
            set_batch(c, ["b%d" % i for i in range(lo, lo + n)], [1000] * n)
            if (lo // 1000) % 5 == 0:
                rss()
        time.sleep(1.0)
        end = rss()
        evicted = info_field(c, "stats", "evicted_keys")
        used = info_field(c, "memory", "used_memory")
        c.close()
    return {"idle": idle, "peak": rss.peak, "end": end, "evicted": evicted, "used_memory": used}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ruvio-bin", default=os.environ.get("RUVIO_BIN", os.path.join(bench.REPO, "build", "ruvio")))
    ap.add_argument("--ruvio-cmd", default=bench.DEFAULT_RUVIO_CMD)
    ap.add_argument("--redis-cmd", default=bench.DEFAULT_REDIS_CMD)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--keys", type=int, default=100_000, help="keys per SET/DEL pass")
    ap.add_argument("--reconnects", type=int, default=2000)
    ap.add_argument("--slow", type=int, default=20, help="slow clients")
    ap.add_argument("--burst", type=int, default=100_000, help="unread PINGs per slow client")
    ap.add_argument("--fill-keys", type=int, default=200_000)
    ap.add_argument("--budget", type=int, default=0, help="also run the maxmemory check with this many MB")
    ap.add_argument("--only", choices=["churn", "budget"], default=None)
    args = ap.parse_args()

    servers = [("ruvio", args.ruvio_cmd), ("redis", args.redis_cmd)]
    if args.only != "budget":
        rows = {name: run_churn(name, cmd, args) for name, cmd in servers}
        print("\nMemory churn (RSS, MB)   passes=%d x %d keys, %d reconnects, %d slow x %d PINGs, fill %d x 1000 B"
              % (args.passes, args.keys, args.reconnects, args.slow, args.burst, args.fill_keys))
        print("%-22s %10s %10s %8s" % ("phase", "ruvio", "redis", "ratio"))
        for k in ("idle", "after_passes", "after_reconnects", "slow_clients", "after_slow", "filled", "peak",
                  "flush_1s", "flush_5s", "purged"):
            a, b = rows["ruvio"][k], rows["redis"][k]
            print("%-22s %10s %10s %8.2f" % (k, mb(a), mb(b), a / b if b else 0))
    if args.budget and args.only != "churn":
        rows = {name: run_budget(name, cmd, args) for name, cmd in servers}
        print("\nBudget: maxmemory %d MB, allkeys-lru, %d MB of 1000-byte SETs" % (args.budget, 3 * args.budget))
        print("%-22s %10s %10s" % ("", "ruvio", "redis"))
        for k in ("idle", "peak", "end"):
            print("%-22s %10s %10s" % ("rss_" + k + " MB", mb(rows["ruvio"][k]), mb(rows["redis"][k])))
        print("%-22s %10s %10s" % ("used_memory MB", mb(int(rows["ruvio"]["used_memory"])),
                                   mb(int(rows["redis"]["used_memory"]))))
        print("%-22s %10s %10s" % ("evicted_keys", rows["ruvio"]["evicted"], rows["redis"]["evicted"]))


if __name__ == "__main__":
    try:
        main()
    finally:
        for s in list(bench._live):
            s.stop()
