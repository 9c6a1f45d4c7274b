#!/usr/bin/python3
"""The longest stall of the source shard while CLUSTER MIGRATESLOTS moves a big hash (issue 18: under 10 ms for a
1M-element hash; docs/BENCHMARKS.md, "Atomic slot migration: the source's longest stall").

Three ruvio processes on loopback (one shard each, `--cluster-enabled yes --durability memory`, cluster-node-timeout
15000 as Redis's default), made one cluster by `redis-cli --cluster create`. Node 0 gets, in one slot, a hash of
--fields fields (f<i> -> v<i>) and --small small string keys. One client connection to node 0 then sends PING and
GET of a small key of another slot, alternately, one at a time, and records each round trip:
  baseline   --baseline seconds without a migration;
  move       from CLUSTER MIGRATESLOTS of that slot to node 1 until node 0's job says `success` (the copy, the
             big hash in chunks, the fence and the commit);
  after      --after seconds from then on: node 0 deletes its copies of the moved slot (topology.c's dirty-slot
             rule), the big hash in one go.
Reported per phase: requests, p50, p99, p99.9 and max latency (ms), and the move's duration; the move is also
split by the job's state as last read (copy: connecting/snapshot/streaming; commit: committing, which includes
the source's deletion of its copies once it adopted the change). The job's state is
read every 50 ms on a second connection, outside the measured loop. The client is one Python thread, so its own
pauses (the GIL, the collector, a busy machine) count as server latency: the figures are upper bounds.

With --path migrate, Redis's path instead: SETSLOT IMPORTING / MIGRATING, then MIGRATE of the hash alone from a
second connection (phase `move`: until MIGRATE replies; no `after`). --path migrate-sync sends that MIGRATE
inside MULTI/EXEC, where Ruvio keeps the blocking path (the whole value in one RESTORE, the shard waiting): the
figure before the asynchronous MIGRATE.

Usage:
  /usr/bin/python3 tests/bench/migrate_stall.py [--bin build/ruvio] [--fields 1000000] [--small 10000]
       [--baseline 5] [--after 5] [--port 7300] [--path migrateslots|migrate|migrate-sync] [--out results.json]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import redis
from redis.crc import key_slot

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def start(bin_path, ports, workdir):
    procs = []
    for p in ports:
        d = os.path.join(workdir, str(p))
        os.makedirs(d)
        argv = [bin_path, "--port", str(p), "--bind", "127.0.0.1", "--dir", d, "--shards", "1",
                "--cluster-enabled", "yes", "--cluster-node-timeout", "15000", "--durability", "memory",
                "--enable-debug-command", "yes"]
        procs.append(subprocess.Popen(argv, stdout=open(os.path.join(d, "out"), "w"), stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 30
    for p in ports:
        while True:
            try:
                redis.Redis(port=p, socket_timeout=2).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    r = subprocess.run(["redis-cli", "--cluster", "create", *["127.0.0.1:%d" % p for p in ports], "--cluster-yes"],
                       timeout=120, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
    deadline = time.monotonic() + 60
    while not all("cluster_state:ok" in redis.Redis(port=p, decode_responses=True).execute_command("CLUSTER", "INFO")
                  for p in ports):
        assert time.monotonic() < deadline, "cluster not ok"
        time.sleep(0.1)
    return procs


def slot_owner(c, slot):
    for lo, hi, *nodes in c.execute_command("CLUSTER", "SLOTS"):
        if lo <= slot <= hi:
            return nodes[0][1]
    return None


def tag_of(c, port, avoid=None):
    """A hash tag whose slot node `port` owns (not the slot avoid)."""
    for k in range(1000000):
        tag = "{b%d}" % k
        s = key_slot(tag.encode())
        if s != avoid and slot_owner(c, s) == port:
            return tag, s
    raise AssertionError("no tag")


def fill(c, tag, fields, small):
    p = c.pipeline(transaction=False)
    for at in range(0, fields, 1000):
        p.hset(tag + "hash", mapping={"f%d" % i: "v%d" % i for i in range(at, min(at + 1000, fields))})
        if len(p) >= 50:
            p.execute()
    for i in range(small):
        p.set("%ss%d" % (tag, i), "x" * 20)
        if len(p) >= 1000:
            p.execute()
    p.execute()


def stats(lat, seconds=None):
    lat = sorted(lat)
    n = len(lat)
    if n == 0:
        return {"requests": 0}

    def q(f):
        return round(lat[min(n - 1, int(f * n))] * 1000, 3)

    out = {"requests": n, "p50_ms": q(0.5), "p99_ms": q(0.99), "p999_ms": q(0.999),
           "max_ms": round(lat[-1] * 1000, 3)}
    if seconds is not None:
        out["seconds"] = round(seconds, 3)
    return out


def job_state(c):
    jobs = c.execute_command("CLUSTER", "GETSLOTMIGRATIONS")
    if not jobs:
        return None
    j = jobs[-1]
    j = j if isinstance(j, dict) else dict(zip(j[0::2], j[1::2]))
    return j["state"], j["message"]


def measure(cli, key, until, phase=None):
    """PING and GET in turn until until() (checked every 50 ms) is true; the round trips in seconds (and, with
    phase, each one's phase as phase() said at the last check)."""
    lat = []
    next_check = time.monotonic() + 0.05
    i = 0
    ph = phase() if phase else None
    while True:
        t0 = time.perf_counter()
        if i & 1:
            cli.get(key)
        else:
            cli.ping()
        d = time.perf_counter() - t0
        lat.append(d if phase is None else (d, ph))
        i += 1
        now = time.monotonic()
        if now >= next_check:
            if until(now):
                return lat
            ph = phase() if phase else None
            next_check = now + 0.05


def migrate_key(a, res, ports, ids, slot, tag, cli, key):
    """Redis's path: the hash alone, by MIGRATE (inside MULTI/EXEC for migrate-sync), timed by the probe loop."""
    import threading
    dst = redis.Redis(port=ports[1], decode_responses=True)
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[0])
    redis.Redis(port=ports[0]).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[1])
    out = []

    def run():
        m = redis.Redis(port=ports[0], decode_responses=True, socket_timeout=600)
        args = ("MIGRATE", "127.0.0.1", ports[1], tag + "hash", 0, 60000)
        if a.path == "migrate-sync":
            p = m.pipeline(transaction=True)
            p.execute_command(*args)
            out.append(p.execute()[0])
        else:
            out.append(m.execute_command(*args))

    t0 = time.monotonic()
    th = threading.Thread(target=run)
    th.start()
    lat = measure(cli, key, lambda now: not th.is_alive())
    took = time.monotonic() - t0
    th.join()
    res["path"] = a.path
    res["migrate_reply"] = str(out[0]) if out else None
    res["move"] = stats(lat, took)
    log("move (%s, %.2f s): %s" % (res["migrate_reply"], took, res["move"]))
    asking = redis.Redis(port=ports[1], decode_responses=True, single_connection_client=True)
    asking.execute_command("ASKING")
    res["target_hlen"] = asking.hlen(tag + "hash")
    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "ruvio"))
    ap.add_argument("--fields", type=int, default=1000000)
    ap.add_argument("--small", type=int, default=10000)
    ap.add_argument("--baseline", type=float, default=5)
    ap.add_argument("--after", type=float, default=5)
    ap.add_argument("--port", type=int, default=7300)
    ap.add_argument("--path", choices=("migrateslots", "migrate", "migrate-sync"), default="migrateslots")
    ap.add_argument("--out")
    a = ap.parse_args()
    ports = [a.port, a.port + 1, a.port + 2]
    workdir = tempfile.mkdtemp(prefix="ruvio-migstall-")
    procs = start(a.bin, ports, workdir)
    try:
        src = redis.Redis(port=ports[0], decode_responses=True)
        ctl = redis.Redis(port=ports[0], decode_responses=True)
        ids = [redis.Redis(port=p, decode_responses=True).execute_command("CLUSTER", "MYID") for p in ports]
        tag, slot = tag_of(src, ports[0])
        other, _ = tag_of(src, ports[0], avoid=slot)
        log("filling: a hash of %d fields and %d small keys in slot %d" % (a.fields, a.small, slot))
        fill(src, tag, a.fields, a.small)
        src.set(other + "probe", "p")
        cli = redis.Redis(port=ports[0], decode_responses=True)
        key = other + "probe"
        res = {"fields": a.fields, "small": a.small, "bin": a.bin}
        t_end = time.monotonic() + a.baseline
        res["baseline"] = stats(measure(cli, key, lambda now: now >= t_end), a.baseline)
        log("baseline: %s" % res["baseline"])
        if a.path != "migrateslots":
            migrate_key(a, res, ports, ids, slot, tag, cli, key)
            return
        t0 = time.monotonic()
        ctl.execute_command("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", ids[1])
        state = {}

        def moved(now):
            st = job_state(ctl)
            state["last"] = st
            return st is not None and st[0] in ("success", "failed", "cancelled")

        lat = measure(cli, key, moved, phase=lambda: (state.get("last") or ("connecting",))[0])
        took = time.monotonic() - t0
        res["move"] = stats([d for d, _ in lat], took)
        res["move_state"] = state["last"][0]
        log("move (%s, %.2f s): %s" % (state["last"][0], took, res["move"]))
        # by the job's state as last read (50 ms granularity): the copy, then the commit and the source's
        # deletion of its copies once it adopted the change (the state turns success after that)
        for name, states in (("copy", ("connecting", "snapshot", "streaming")), ("commit", ("committing", "success"))):
            res["move_" + name] = stats([d for d, p in lat if p in states])
            log("  %s: %s" % (name, res["move_" + name]))
        t_end = time.monotonic() + a.after
        res["after"] = stats(measure(cli, key, lambda now: now >= t_end), a.after)
        log("after: %s" % res["after"])
        dst = redis.Redis(port=ports[1], decode_responses=True)
        res["target_hlen"] = dst.hlen(tag + "hash")
        res["source_dbsize_after"] = src.dbsize()
        print(json.dumps(res, indent=1))
        if a.out:
            with open(a.out, "w") as f:
                json.dump(res, f, indent=1)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
