#!/usr/bin/env python3
"""tests/bench/lazyfree_stall.py: the longest stall of a shard while it frees big values (issues 18/19,
docs/BENCHMARKS.md "Lazy freeing").

A second process sends PING to the shard in a loop, one at a time, and reports the longest round trip seen
while the main process runs the operation under test:

  del / unlink   DEL or UNLINK of one hash of --fields fields (default 1,000,000)
  flush          FLUSHALL SYNC or ASYNC of --keys keys
  slot           three one-shard cluster nodes; --keys keys of one slot on the first, then that slot given
                 to the second with SETSLOT NODE sent to the second: the first learns it lost the slot and
                 deletes its keys (the dirty-slot rule), timed until COUNTKEYSINSLOT answers 0 there

  lazyfree_stall.py [--ruvio-bin build/ruvio] [--fields N] [--keys N] [--runs 3] [--only del,unlink,...]

Standard library, redis-py and redis-cli only. Servers run in their own session in a temporary directory
and are stopped (SIGTERM, then SIGKILL) when the script ends; every socket and subprocess has a timeout.
"""

import argparse
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import redis

HOST = "127.0.0.1"


def free_port():
    while True:
        with socket.socket() as s:
            s.bind((HOST, 0))
            p = s.getsockname()[1]
        if p + 10000 < 65535:
            with socket.socket() as b:
                try:
                    b.bind((HOST, p + 10000))
                except OSError:
                    continue
            return p


class Server:
    def __init__(self, binary, args):
        self.dir = tempfile.mkdtemp(prefix="lzbench")
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", HOST, "--dir", self.dir,
                                      "--durability", "memory", "--logfile", os.path.join(self.dir, "log"),
                                      *map(str, args)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.r = redis.Redis(host=HOST, port=self.port, socket_timeout=60)
        end = time.time() + 20
        while True:
            try:
                self.r.ping()
                break
            except redis.ConnectionError:
                if time.time() > end:
                    raise
                time.sleep(0.05)

    def stop(self):
        try:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def pinger(port, stop, out):
    r = redis.Redis(host=HOST, port=port, socket_timeout=60)
    worst = 0.0
    n = 0
    while not stop.is_set():
        t = time.perf_counter()
        r.ping()
        worst = max(worst, time.perf_counter() - t)
        n += 1
    out.put((worst, n))


def timed(port, fn):
    """Runs fn() while another process pings port; (longest PING round trip in ms, fn's seconds)."""
    stop, out = mp.Event(), mp.Queue()
    p = mp.Process(target=pinger, args=(port, stop, out))
    p.start()
    time.sleep(0.3)  # (the pinger is connected and pinging)
    t = time.perf_counter()
    fn()
    took = time.perf_counter() - t
    time.sleep(0.2)
    stop.set()
    worst, n = out.get(timeout=60)
    p.join(timeout=10)
    return worst * 1000, took


def fill_hash(r, key, fields):
    p = r.pipeline(transaction=False)
    for i in range(0, fields, 1000):
        p.hset(key, mapping={"f%d" % j: j for j in range(i, min(fields, i + 1000))})
        if len(p) >= 100:
            p.execute()
    p.execute()


def bench_del(binary, fields, cmd):
    s = Server(binary, ["--shards", 1])
    try:
        fill_hash(s.r, "h", fields)
        assert s.r.hlen("h") == fields
        return timed(s.port, lambda: s.r.execute_command(cmd, "h"))
    finally:
        s.stop()


def bench_flush(binary, keys, mode):
    s = Server(binary, ["--shards", 1])
    try:
        p = s.r.pipeline(transaction=False)
        for i in range(keys):
            p.set("k%d" % i, i)
            if len(p) >= 10000:
                p.execute()
        p.execute()
        return timed(s.port, lambda: s.r.execute_command("FLUSHALL", mode))
    finally:
        s.stop()


def bench_slot(binary, keys):
    common = ["--shards", 1, "--cluster-enabled", "yes", "--cluster-node-timeout", 5000]
    servers = [Server(binary, common) for _ in range(3)]
    try:
        r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, s.port) for s in servers],
                            "--cluster-yes"], timeout=90, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        a, b = servers[0], servers[1]
        ids = [s.r.execute_command("CLUSTER", "MYID").decode() for s in servers]
        end = time.time() + 30
        while any(s.r.execute_command("CLUSTER", "INFO").decode().find("cluster_state:ok") < 0 for s in servers):
            assert time.time() < end, "cluster state"
            time.sleep(0.1)
        slot = a.r.execute_command("CLUSTER", "SLOTS")[0][0]  # (the first node's first range: its slot)
        for lo, hi, node, *_ in a.r.execute_command("CLUSTER", "SLOTS"):
            if node[1] == a.port:
                slot = lo
                break
        tag = next("{t%d}" % k for k in range(1000000)
                   if a.r.execute_command("CLUSTER", "KEYSLOT", "{t%d}" % k) == slot)
        p = a.r.pipeline(transaction=False)
        for i in range(keys):
            p.set("%s%d" % (tag, i), i)
            if len(p) >= 10000:
                p.execute()
        p.execute()
        assert a.r.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == keys

        def give_away():
            b.r.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[0])
            a.r.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[1])
            b.r.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[1])
            end = time.time() + 120
            while a.r.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) != 0:
                assert time.time() < end, "the source dropping the slot's keys"
                time.sleep(0.01)

        res = timed(a.port, give_away)
        end = time.time() + 10
        line = ""
        while "deleted" not in line and time.time() < end:
            with open(os.path.join(a.dir, "log"), errors="replace") as f:
                line = next((x for x in f if "another node owns now" in x), "")
            time.sleep(0.05)
        print("  source log: " + line.strip().split("cluster: ")[-1], flush=True)
        return res
    finally:
        for s in servers:
            s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ruvio-bin", default=os.environ.get("RUVIO_BIN", "build/ruvio"))
    ap.add_argument("--fields", type=int, default=1000000)
    ap.add_argument("--keys", type=int, default=300000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="del,unlink,flush-sync,flush-async,slot")
    a = ap.parse_args()
    only = a.only.split(",")
    cases = {
        "del": lambda: bench_del(a.ruvio_bin, a.fields, "DEL"),
        "unlink": lambda: bench_del(a.ruvio_bin, a.fields, "UNLINK"),
        "flush-sync": lambda: bench_flush(a.ruvio_bin, a.keys, "SYNC"),
        "flush-async": lambda: bench_flush(a.ruvio_bin, a.keys, "ASYNC"),
        "slot": lambda: bench_slot(a.ruvio_bin, a.keys),
    }
    for name in only:
        res = [cases[name]() for _ in range(a.runs)]
        print("%-12s longest PING (ms): %s   operation (s): %s" % (
            name, " ".join("%.1f" % w for w, _ in res), " ".join("%.3f" % t for _, t in res)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
