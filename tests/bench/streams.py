#!/usr/bin/python3
"""Stream consumer groups: server CPU per operation, Ruvio vs redis-server (stdlib only; bench.py's servers,
connections and CPU accounting).

For each round the two servers run one after the other (the first alternates), pinned to CPU 0 as in
bench.py. Each gets the same work over one raw connection: XADD of --entries small entries (pipelined),
then a consumer loop of XREADGROUP GROUP g c COUNT --count STREAMS s > followed by one XACK of the ids it got,
pipelined --pipeline loops deep, until every entry was read and acknowledged. Every reply is checked (ids
read in order, XACK counts, an empty PEL at the end). The figure is the server's CPU time (schedstat) per
entry for each phase; the ratio is redis / ruvio (above 1: Ruvio uses less CPU).

Memory (--memory-entries N, 0 to skip): each server, fresh, gets N entries `XADD ms * f v` (pipelined, every
reply checked, XLEN checked); the figure is INFO's used_memory after minus before, per entry, and the ratio
ruvio / redis (below 1: Ruvio uses less memory).

    /usr/bin/python3 tests/bench/streams.py --ruvio-bin build/ruvio [--entries 200000] [--rounds 3]
        [--memory-entries 1000000]
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402
from bench import BenchError, Conn, Server, cpu_ns, resp_cmd  # noqa: E402


def pipelined(c, cmds):
    c.sock.sendall(b"".join(resp_cmd(*a) for a in cmds))
    return [c.read_reply() for _ in cmds]


def xadd_phase(c, n, batch=500):
    for base in range(0, n, batch):
        cmds = [("XADD", "s", "*", "f", "v%d" % i) for i in range(base, min(n, base + batch))]
        for r in pipelined(c, cmds):
            if not isinstance(r, bytes):
                raise BenchError("XADD replied %r" % (r,))


def consume_phase(c, n, count, depth):
    """XREADGROUP + XACK until n entries are read and acknowledged; returns the XREADGROUP calls."""
    done, calls, last = 0, 0, None
    while done < n:
        reads = pipelined(c, [("XREADGROUP", "GROUP", "g", "c", "COUNT", str(count), "STREAMS", "s", ">")]
                          * depth)
        calls += depth
        acks = []
        for r in reads:
            if r is None:
                continue
            if isinstance(r, BenchError) or r[0][0] != b"s":
                raise BenchError("XREADGROUP replied %r" % (r,))
            ids = [e[0] for e in r[0][1]]
            for i in ids:
                if last is not None and i <= last and len(i) == len(last):
                    raise BenchError("ids out of order: %r after %r" % (i, last))
                last = i
            acks.append(("XACK", "s", "g") + tuple(ids))
        if not acks:
            raise BenchError("no entries left after %d of %d" % (done, n))
        for a, r in zip(acks, pipelined(c, acks)):
            if r != len(a) - 3:
                raise BenchError("XACK replied %r for %d ids" % (r, len(a) - 3))
            done += r
    return calls


def used_memory(c):
    info = c.call("INFO", "memory")
    for line in info.decode().splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    raise BenchError("no used_memory in INFO")


def run_memory(name, template, ruvio_bin, n, batch=1000):
    with Server(name, template, ruvio_bin) as srv:
        c = Conn(srv.port, timeout=60)
        try:
            before = used_memory(c)
            for base in range(0, n, batch):
                for r in pipelined(c, [("XADD", "ms", "*", "f", "v")] * min(batch, n - base)):
                    if not isinstance(r, bytes):
                        raise BenchError("XADD replied %r" % (r,))
            if c.call("XLEN", "ms") != n:
                raise BenchError("XLEN is not %d" % n)
            after = used_memory(c)
            usage = c.call("MEMORY", "USAGE", "ms")
        finally:
            c.close()
    return {"entries": n, "bytes_per_entry": (after - before) / n, "memory_usage": usage}


def run_one(name, template, ruvio_bin, args):
    with Server(name, template, ruvio_bin) as srv:
        c = Conn(srv.port, timeout=30)
        try:
            t0 = cpu_ns(srv.pid)
            xadd_phase(c, args.entries)
            t1 = cpu_ns(srv.pid)
            if c.call("XGROUP", "CREATE", "s", "g", "0") != "OK":
                raise BenchError("XGROUP CREATE failed")
            t2 = cpu_ns(srv.pid)
            calls = consume_phase(c, args.entries, args.count, args.pipeline)
            t3 = cpu_ns(srv.pid)
            pend = c.call("XPENDING", "s", "g")
            if pend[0] != 0:
                raise BenchError("PEL not empty at the end: %r" % (pend,))
        finally:
            c.close()
    return {"xadd_ns_per_entry": (t1 - t0) / args.entries,
            "readack_ns_per_entry": (t3 - t2) / args.entries,
            "xreadgroup_calls": calls}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ruvio-bin", default=os.path.join(bench.REPO, "build", "ruvio"))
    ap.add_argument("--ruvio-cmd", default=bench.DEFAULT_RUVIO_CMD)
    ap.add_argument("--redis-cmd", default=bench.DEFAULT_REDIS_CMD)
    ap.add_argument("--entries", type=int, default=200000)
    ap.add_argument("--count", type=int, default=10, help="XREADGROUP COUNT")
    ap.add_argument("--pipeline", type=int, default=16, help="XREADGROUP calls in flight")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--memory-entries", type=int, default=1000000)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    mem = {}
    if args.memory_entries > 0:
        for name, tmpl in (("ruvio", args.ruvio_cmd), ("redis", args.redis_cmd)):
            mem[name] = run_memory(name, tmpl, os.path.abspath(args.ruvio_bin), args.memory_entries)
            bench.log("memory %s: %s" % (name, json.dumps(mem[name])))
        mem["ratio"] = mem["ruvio"]["bytes_per_entry"] / mem["redis"]["bytes_per_entry"]
        print("%-22s ruvio %8.2f B   redis %8.2f B   ruvio/redis %.2f" % (
            "memory_per_entry", mem["ruvio"]["bytes_per_entry"], mem["redis"]["bytes_per_entry"], mem["ratio"]))
    res = {"ruvio": [], "redis": []}
    for r in range(args.rounds):
        order = [("ruvio", args.ruvio_cmd), ("redis", args.redis_cmd)]
        if r % 2:
            order.reverse()
        for name, tmpl in order:
            res[name].append(run_one(name, tmpl, os.path.abspath(args.ruvio_bin), args))
            bench.log("round %d %s: %s" % (r + 1, name, json.dumps(res[name][-1])))
    out = {"args": vars(args), "memory": mem, "rounds": res, "median": {}}
    for name in res:
        out["median"][name] = {k: statistics.median(x[k] for x in res[name])
                               for k in ("xadd_ns_per_entry", "readack_ns_per_entry")}
    for k in ("xadd_ns_per_entry", "readack_ns_per_entry"):
        a, b = out["median"]["ruvio"][k], out["median"]["redis"][k]
        out["median"]["ratio_" + k] = b / a if a else None
        print("%-22s ruvio %8.0f ns  redis %8.0f ns  redis/ruvio %.2fx" % (k, a, b, b / a if a else 0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
