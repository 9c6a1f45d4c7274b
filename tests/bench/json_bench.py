#!/usr/bin/env python3
"""tests/bench/json_bench.py: JSON document costs on one ruvio shard (issue 20's benchmark list).

Measures server CPU per operation (utime + stime of the ruvio process from /proc, divided by the
operations redis-benchmark sent), which a shared or noisy machine disturbs far less than req/s, and
reports req/s too. Workloads, after the seed report's:
  small: 20,000 keys of an 87-byte object; root SET/GET, field GET ($.score) and field SET;
  plain: GET of a string the size of the field (the 1.5x target's baseline);
  large: one document {"meta":{"value":"..."},"bulk":"<N bytes>"} for N = 1 KiB, 64 KiB, 1 MiB;
         field GET/SET/MERGE on meta.value (the 2x-of-1-KiB target) and root GET;
  memory: used_memory per key for 100,000 keys holding the 87-byte object as JSON and as a string.
Usage: RUVIO_BIN=build/ruvio python3 tests/bench/json_bench.py [--requests N] [--json out.json]
       [--server-cpu 0 --client-cpu 1]   (pins ruvio and redis-benchmark with taskset)
       [--field-rounds K]                 (K alternating GET / field GET rounds, before and after the field SETs)"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

DOC = '{"name":"user-000001","active":true,"score":42,"meta":{"value":"abcdefghij","n":7}}'
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


PIN = {"server": [], "client": []}


def bench(port, pid, n, args, clients=50, pipeline=16):
    c0 = cpu_s(pid)
    t0 = time.monotonic()
    out = subprocess.run(PIN["client"] + ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", str(clients), "-P",
                          str(pipeline), "-q", "--csv"] + args, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    cpu = cpu_s(pid) - c0
    return {"cpu_us_per_op": cpu / n * 1e6, "req_s": n / wall, "raw": out.stdout.strip()[-200:]}


def field_rounds(res, form, port, pid, n, rounds):
    """Alternating rounds of a plain GET and a field JSON.GET ($.score): the 1.5x target's ratio."""
    if rounds <= 0:
        return
    get, field = [], []
    for _ in range(rounds):
        get.append(bench(port, pid, n, ["-r", "20000", "GET", "str:__rand_int__"])["cpu_us_per_op"])
        field.append(bench(port, pid, n, ["-r", "20000", "JSON.GET", "doc:__rand_int__", "$.score"])
                     ["cpu_us_per_op"])
    ratios = sorted(f / g for f, g in zip(field, get))
    res["field GET / GET rounds, " + form] = {
        "get_us": get, "field_us": field, "ratio_median": round(ratios[len(ratios) // 2], 3),
        "ratio_of_medians": round(sorted(field)[rounds // 2] / sorted(get)[rounds // 2], 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--json")
    ap.add_argument("--field-rounds", type=int, default=0,
                    help="extra alternating GET / field GET rounds, before and after the field SETs")
    ap.add_argument("--server-cpu", type=int)
    ap.add_argument("--client-cpu", type=int)
    a = ap.parse_args()
    for who, cpu in (("server", a.server_cpu), ("client", a.client_cpu)):
        if cpu is not None:
            PIN[who] = ["taskset", "-c", str(cpu)]
    binp = os.environ.get("RUVIO_BIN", "build/ruvio")
    d = tempfile.mkdtemp(prefix="jsonbench")
    port = free_port()
    proc = subprocess.Popen(PIN["server"] + [binp, "--port", str(port), "--bind", "127.0.0.1", "--dir", d],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = redis.Redis(port=port)
    for _ in range(200):
        try:
            c.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    res = {}
    n = a.requests
    try:
        p = c.pipeline(transaction=False)
        for i in range(20000):
            p.execute_command("JSON.SET", "doc:%012d" % i, "$", DOC)
        p.execute()
        r = ["-r", "20000"]
        res["small root SET"] = bench(port, proc.pid, n, r + ["JSON.SET", "doc:__rand_int__", "$", DOC])
        res["small root GET"] = bench(port, proc.pid, n, r + ["JSON.GET", "doc:__rand_int__"])
        res["small field GET"] = bench(port, proc.pid, n, r + ["JSON.GET", "doc:__rand_int__", "$.score"])
        for i in range(20000):
            p.execute_command("SET", "str:%012d" % i, "42")
        p.execute()
        field_rounds(res, "packed", port, proc.pid, n, a.field_rounds)
        res["small field SET"] = bench(port, proc.pid, n, r + ["JSON.SET", "doc:__rand_int__", "$.score", "7"])
        res["plain GET, 2-byte string"] = bench(port, proc.pid, n, r + ["GET", "str:__rand_int__"])
        res["small field GET .score (legacy)"] = bench(port, proc.pid, n,
                                                       r + ["JSON.GET", "doc:__rand_int__", ".score"])
        field_rounds(res, "after field SETs", port, proc.pid, n, a.field_rounds)
        for size, label in ((1 << 10, "1KiB"), (64 << 10, "64KiB"), (1 << 20, "1MiB")):
            c.execute_command("JSON.SET", "big", "$", json.dumps({"meta": {"value": "0123456789ab"},
                                                                  "bulk": "x" * size}))
            res[label + " field GET"] = bench(port, proc.pid, n, ["JSON.GET", "big", "$.meta.value"], 25, 8)
            res[label + " field SET"] = bench(port, proc.pid, n,
                                              ["JSON.SET", "big", "$.meta.value", '"123456789012"'], 25, 8)
            res[label + " field MERGE"] = bench(port, proc.pid, n,
                                                ["JSON.MERGE", "big", "$.meta", '{"value":"x"}'], 25, 8)
            rn = max(200, n // (size // 1024) // 4)
            res[label + " root GET"] = bench(port, proc.pid, rn, ["JSON.GET", "big"], 25, 8)
        c.flushall()
        m0 = int(c.info("memory")["used_memory"])
        for i in range(100000):
            p.execute_command("SET", "s%06d" % i, DOC)
            if i % 1000 == 999:
                p.execute()
        m1 = int(c.info("memory")["used_memory"])
        c.flushall()
        m2 = int(c.info("memory")["used_memory"])
        for i in range(100000):
            p.execute_command("JSON.SET", "j%06d" % i, "$", DOC)
            if i % 1000 == 999:
                p.execute()
        m3 = int(c.info("memory")["used_memory"])
        res["memory per key"] = {"string": (m1 - m0) / 1e5, "json": (m3 - m2) / 1e5}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)
    for k, v in res.items():
        if "cpu_us_per_op" in v:
            print("%-34s %8.3f us CPU/op %12.0f req/s" % (k, v["cpu_us_per_op"], v["req_s"]))
        else:
            print("%-34s %s" % (k, v))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
