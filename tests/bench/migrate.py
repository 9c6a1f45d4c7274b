#!/usr/bin/python3
"""Slot migration benchmark (issue 18): the time to move 10 % of the slots (1,638) of a 3-host cluster holding
N keys, Ruvio's atomic path (CLUSTER MIGRATESLOTS) against `redis-cli --cluster reshard` on a Redis 7 Cluster
on the same network namespaces, and a cluster client's latency during the move against the same client
without a move.

Layout: hosts h0 h1 h2 (tests/multihost/netns.py, built by tests/bench/cluster.py's helpers), ONE cluster node
per host at port 7000, three primaries, no replicas, made one cluster by `redis-cli --cluster create`:
  ruvio   `ruvio --shards 1 --cluster-enabled yes --durability memory` per host
  redis   `redis-server --cluster-enabled yes --save '' --appendonly no` per host
One node per host (not cluster.py's two) so that both sides move the slots between two processes on two hosts
with one event loop each: a ruvio process of two shards would be compared with two redis-servers, and a move
between the two shards of one process would not cross the network. Both run with cluster-node-timeout 15000.
Every server is pinned to the server CPUs (--server-cpus, default 0: the three share one core, as in
cluster.py, so the figure is the cluster's total cost; `2/3/4` gives each host its own), the latency clients to
--client-cpu (default 1), redis-cli (the reshard tool and the fill) to --tool-cpu (default: CPU 2 when the
machine has one, else the client's CPU). The JSON records the choice.

A round, for each kind (the order rotates from round to round), on a fresh cluster:
1. Fill N keys `k:<i>` (spread over all 16384 slots by their CRC16) with string values of 16-64 bytes:
   `redis-cli --pipe` per node with the keys of its slots, the three at once. Not measured. Then check that the
   DBSIZEs add up to N.
2. Move slots 0-1637 (the first 10 %, one contiguous range, owned by h0's node, the first one `--cluster
   create` fills) to h1's node (--from, --to, --slots: another move), while the latency clients (below) run:
     ruvio        `CLUSTER MIGRATESLOTS SLOTSRANGE 0 1637 NODE <h1>` sent to h0, then GETSLOTMIGRATIONS polled
                  (every 10 ms) until the job's state is success (the time each state was first seen is
                  recorded), then every node's CLUSTER SLOTS polled until all give 0-1637 to h1.
     redis-pP     `redis-cli --cluster reshard h0 --cluster-from <h0> --cluster-to <h1> --cluster-slots 1638
                  --cluster-yes --cluster-pipeline P` (P = 10, redis-cli's default, and the --redis-pipelines
                  others: operators raise it), then the same CLUSTER SLOTS poll. reshard takes a source's
                  slots in ascending order, so it moves the same slots 0-1637.
     ruvio-reshard-pP (only with --kinds): the same reshard against ruvio (Redis's path, SETSLOT + MIGRATE).
   The move's time: from sending the command to every node agreeing. Then: the DBSIZEs add up to N again (polled,
   bounded: a source may delete the keys it gave away a little after the change), COUNTKEYSINSLOT of every
   moved slot on the target equals the keys generated for it, and the source holds none.
3. Latency: two client processes (`migrate.py client`, redis-py's RedisCluster, which follows MOVED, ASK and
   TRYAGAIN), pinned to the client CPU, one on 1,000 keys of the moving slots and one on 1,000 keys of other
   slots (so that a write held on a moving slot does not stop the sampling of the others), each sending one
   command at a time: a pass of GETs over its keys, then a pass of SETs (a value of the same size), and so
   on. An operation that raises (redis-py gives up on TRYAGAIN after 16 tries, about 0.4 s) is retried until
   it succeeds (bounded: 60 s), and its latency is the time until it did, the exceptions counted by type.
   Phase `during`: from just before the move starts to the moment every node agrees. Phase `without`: after
   the checks, for as long as the move took (at least --min-without s, so that p99 has samples). Per phase:
   p50/p99/p99.9/max over both clients' operations and for each client; the ratio p99 during / without uses
   the worse of the two clients' p99 in each phase (the client held on a moving slot takes fewer samples, so
   a pooled p99 would understate it).

Reported: per kind, medians over rounds of the move time, of the per-round ratios redis-pP / ruvio (paired
rounds: the same round's runs), and of the latencies and the per-round ratios p99 during / p99 without. Also
per run: server CPU time during the move (utime+stime of the servers, /proc), `foreign_cpu_util` (CPU used by
anything but the servers, the client and the tool during the move, in cores: other users of the machine).

Needs root, iproute2 (`ip netns`), taskset, redis-server and redis-tools 7.x, python3-redis, a built ruvio.

Usage:
  sudo /usr/bin/python3 tests/bench/migrate.py --out tests/bench/results-migrate.json        (3M keys, 5 rounds)
       [--bin build/ruvio] [--rounds 5] [--keys 3000000] [--kinds ruvio,redis-p10,redis-p1000]
       [--server-cpus 0] [--client-cpu 1] [--tool-cpu 2] [--min-without 5] [--quiet-wait 5]
       [--slots 1638] [--from h0] [--to h1] [--keep-logs DIR]
  on a quiet box with >= 5 CPUs: --server-cpus 2/3/4 --tool-cpu 0 (each host its own core)
  quick mode (~2.5 min on a busy 2-core box): --keys 100000 --rounds 1
"""

import argparse
import array
import binascii
import datetime
import json
import logging
import os
import signal
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import redis  # noqa: E402

import cluster  # noqa: E402  (start, create; puts tests/multihost on the path)
import bench  # noqa: E402
import netns  # noqa: E402
import test_cluster_hosts as hosts  # noqa: E402
from ruviotest.wait import wait_for  # noqa: E402

SLOTS = 16384
PORT = hosts.PORTS[0]
MOVE = (0, 1637)                # 10 % of the slots: the first 1,638, all owned by h0's node after create
FIRST_SLOT = {"h0": 0, "h1": 5461, "h2": 10923}     # of each host's node after `--cluster create`
SAMPLE_KEYS = 1000              # the latency client's keys per group (moving slots, other slots)
OP_BOUND_S = 60                 # an operation retried for longer is an error of the run


def log(msg):
    bench.log(msg)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def key(i):
    return b"k:%d" % i


def value(i):
    return (b"v%d:" % i).ljust(16 + i % 49, b"x")       # 16..64 bytes


def slot_of(i):
    return binascii.crc_hqx(key(i), 0) & (SLOTS - 1)      # keys without a {tag}: Redis's key slot


def slots_of(n):
    """The slot of every key 0..n-1, as an array of uint16."""
    return array.array("H", (slot_of(i) for i in range(n)))


# ----------------------------------------------------------------------------------------------- topology

def slot_owners(ip, port, only=(0, SLOTS - 1)):
    """{slot: "ip:port"} of node ip:port's CLUSTER SLOTS (primaries), for the slots of the range only."""
    out = {}
    for ent in hosts.cmd(ip, port, "CLUSTER", "SLOTS"):
        lo, hi, prim = max(int(ent[0]), only[0]), min(int(ent[1]), only[1]), ent[2]
        addr = "%s:%d" % (prim[0], int(prim[1]))
        for s in range(lo, hi + 1):
            out[s] = addr
    return out


def node_ids(net):
    """{"ip:port": node id} of the primaries."""
    return {"%s:%d" % (t[0], t[1]): nid for nid, t in hosts.topology(net).items() if t[2] == "primary"}


def all_agree(net, target):
    """Every node's CLUSTER SLOTS gives the moved slots to target ("ip:port")."""
    for h in net:
        owners = slot_owners(h.ip, PORT, MOVE)
        if any(owners.get(s) != target for s in range(MOVE[0], MOVE[1] + 1)):
            return False
    return True


def dbsizes(net):
    return {h.name: hosts.cmd(h.ip, PORT, "DBSIZE") for h in net}


# --------------------------------------------------------------------------------------------------- fill

def fill(net, slots, cpu, timeout):
    """SET every key through `redis-cli --pipe` to its slot's owner, one redis-cli per node, all at once.
    Returns the seconds it took."""
    owners = slot_owners(net["h0"].ip, PORT)
    by_node = {}
    for i, s in enumerate(slots):
        by_node.setdefault(owners[s], []).append(i)
    errors = []

    def one(addr, idx):
        ip, port = addr.rsplit(":", 1)
        p = subprocess.Popen(["taskset", "-c", cpu, "redis-cli", "-h", ip, "-p", port, "--pipe"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        watchdog = threading.Timer(timeout, p.kill)
        watchdog.start()
        try:
            for a in range(0, len(idx), 5000):
                p.stdin.write(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                                       % (len(key(i)), key(i), len(value(i)), value(i))
                                       for i in idx[a:a + 5000]))
            p.stdin.close()
            out = p.stdout.read().decode(errors="replace")
            p.wait()
            if p.returncode != 0 or "errors: 0, replies: %d" % len(idx) not in out:
                errors.append("%s: redis-cli --pipe rc=%s: %s" % (addr, p.returncode, out[-500:]))
        except (OSError, ValueError) as e:
            errors.append("%s: %s" % (addr, e))
        finally:
            watchdog.cancel()
            if p.poll() is None:
                p.kill()
                p.wait()
    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=kv, daemon=True) for kv in by_node.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    if errors or any(t.is_alive() for t in threads):
        raise bench.BenchError("fill failed: %s" % "; ".join(errors or ["a redis-cli did not end"]))
    took = time.monotonic() - t0
    sizes = dbsizes(net)
    if sum(sizes.values()) != len(slots):
        raise bench.BenchError("after the fill the DBSIZEs are %s, not %d in all" % (sizes, len(slots)))
    return took


# ------------------------------------------------------------------------------------ the latency client

def pct(xs, q):
    """The q-quantile of the sorted list xs (nearest rank)."""
    if not xs:
        return None
    return xs[min(len(xs) - 1, max(0, int(round(q * len(xs) + 0.5)) - 1))]


def lat_summary(lat):
    lat = sorted(lat)
    if not lat:
        return {"ops": 0}
    return {"ops": len(lat), "p50_us": pct(lat, 0.50), "p99_us": pct(lat, 0.99), "p999_us": pct(lat, 0.999),
            "max_us": lat[-1], "mean_us": round(sum(lat) / len(lat), 1)}


def client_main(argv):
    """`migrate.py client --nodes ip:port,... --keys N --slots S --group moving|other`: one latency client (a
    process of its own), on keys of the moving slots or of the others. Prints `ready` once its keys are chosen
    and its connections open; then each stdin line `phase NAME` starts a phase and `end` ends it, printing
    the phase's latencies (us) as one JSON line; EOF ends the process."""
    global MOVE
    import redis
    from redis.cluster import ClusterNode, RedisCluster
    logging.getLogger("redis").disabled = True      # redis-py logs every redirect with a traceback
    logging.getLogger("redis.cluster").disabled = True
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--slots", type=int, required=True)
    ap.add_argument("--lo", type=int, required=True)
    ap.add_argument("--group", choices=("moving", "other"), required=True)
    a = ap.parse_args(argv)
    MOVE = (a.lo, a.lo + a.slots - 1)
    mine = []
    for i in range(a.keys):
        if (MOVE[0] <= slot_of(i) <= MOVE[1]) == (a.group == "moving"):
            mine.append(i)
            if len(mine) == SAMPLE_KEYS:
                break
    nodes = [ClusterNode(*n.rsplit(":", 1)) for n in a.nodes.split(",")]
    rc = RedisCluster(startup_nodes=nodes, socket_timeout=5, socket_connect_timeout=5)
    for i in mine[:100]:      # connections open before the first phase
        rc.get(key(i))
    state = {"phase": None, "stop": False}
    cv = threading.Condition()

    def reader():
        for line in sys.stdin:
            with cv:
                w = line.split()
                state["phase"] = w[1] if w and w[0] == "phase" else None
                cv.notify_all()
        with cv:
            state["stop"] = True
            state["phase"] = None
            cv.notify_all()
    threading.Thread(target=reader, daemon=True).start()
    print("ready", flush=True)
    n = 0
    while True:
        with cv:
            while state["phase"] is None and not state["stop"]:
                cv.wait()
            if state["stop"]:
                return
            name = state["phase"]
        lat, errs, failed = [], {}, 0
        while state["phase"] == name:
            i = mine[n % len(mine)]
            setop = (n // len(mine)) % 2 == 1     # a pass of GETs over the keys, then a pass of SETs
            t0 = time.perf_counter_ns()
            while True:
                try:
                    if setop:
                        rc.set(key(i), value(i))
                    elif rc.get(key(i)) != value(i):
                        errs["wrong value"] = errs.get("wrong value", 0) + 1
                    break
                except (redis.RedisError, OSError) as e:
                    errs[type(e).__name__] = errs.get(type(e).__name__, 0) + 1
                    if time.perf_counter_ns() - t0 > OP_BOUND_S * 1e9:
                        failed += 1
                        break
                    time.sleep(0.001)       # (a retry's pace)
            lat.append((time.perf_counter_ns() - t0) // 1000)
            n += 1
        print(json.dumps({"phase": name, "lat_us": lat, "errors": errs, "failed_ops": failed}), flush=True)


class Client:
    """The controller's handle on one latency client process (group: moving or other)."""

    def __init__(self, net, nkeys, cpu, group):
        nodes = ",".join("%s:%d" % (h.ip, PORT) for h in net)
        self.p = subprocess.Popen(["taskset", "-c", cpu, netns.PYTHON, os.path.abspath(__file__), "client",
                                   "--nodes", nodes, "--keys", str(nkeys), "--slots", str(MOVE[1] - MOVE[0] + 1),
                                   "--lo", str(MOVE[0]),
                                   "--group", group],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                  start_new_session=True)
        self._expect("ready", 60)

    def _expect(self, what, timeout):
        box = []
        t = threading.Thread(target=lambda: box.append(self.p.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not box or not box[0]:
            self.close()
            raise bench.BenchError("latency client: no %s within %ds (rc %s)" % (what, timeout, self.p.poll()))
        return box[0].strip()

    def begin(self, name):
        self.p.stdin.write("phase %s\n" % name)
        self.p.stdin.flush()

    def end(self):
        self.p.stdin.write("end\n")
        self.p.stdin.flush()
        return json.loads(self._expect("phase figures", OP_BOUND_S + 30))

    def cpu_ns(self):
        try:
            return bench.stat_cpu_ns(self.p.pid)
        except OSError:
            return 0

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait(timeout=10)


class Clients:
    """Two latency clients, on keys of the moving slots and of the others, so that a write held on a moving
    slot does not stop the sampling of the others."""

    GROUPS = ("moving", "other")

    def __init__(self, net, nkeys, cpu):
        self.c = []
        try:
            for g in self.GROUPS:
                self.c.append(Client(net, nkeys, cpu, g))
        except BaseException:
            self.close()
            raise

    def begin(self, name):
        for c in self.c:
            c.begin(name)

    def end(self):
        res = dict(zip(self.GROUPS, (c.end() for c in self.c)))
        out = {g: lat_summary(r["lat_us"]) for g, r in res.items()}
        out["all"] = lat_summary([x for r in res.values() for x in r["lat_us"]])
        out["errors"] = {}
        for r in res.values():
            for k, v in r["errors"].items():
                out["errors"][k] = out["errors"].get(k, 0) + v
        out["failed_ops"] = sum(r["failed_ops"] for r in res.values())
        return out

    def cpu_ns(self):
        return sum(c.cpu_ns() for c in self.c)

    def close(self):
        for c in self.c:
            c.close()


# --------------------------------------------------------------------------------------------------- move

def move_atomic(net, src, dst, ids, timeout):
    """CLUSTER MIGRATESLOTS on the source, then GETSLOTMIGRATIONS until the job ends; {state: seconds after
    the command when first seen}, and the job's last entry."""
    ip, port = src.rsplit(":", 1)
    c = hosts.client(ip, int(port), timeout=10)
    try:
        t0 = time.monotonic()
        r = c.execute_command("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", MOVE[0], MOVE[1], "NODE", ids[dst])
        if r not in ("OK", True):
            raise bench.BenchError("MIGRATESLOTS answered %r" % (r,))
        seen = {}

        def ended():
            jobs = c.execute_command("CLUSTER", "GETSLOTMIGRATIONS")
            if not jobs:
                return None
            j = jobs[-1]
            j = j if isinstance(j, dict) else dict(zip(j[0::2], j[1::2]))
            seen.setdefault(j["state"], round(time.monotonic() - t0, 3))
            return j if j["state"] in ("success", "failed", "cancelled") else None
        job = wait_for(ended, timeout=timeout, interval=0.01, what="the MIGRATESLOTS job to end",
                       error=bench.BenchError)
        if job["state"] != "success":
            raise bench.BenchError("MIGRATESLOTS ended %s: %s" % (job["state"], job))
        return seen, job
    finally:
        c.close()


def move_reshard(net, src, dst, ids, pipeline, cpu, timeout):
    argv = ["taskset", "-c", cpu, "redis-cli", "--cluster", "reshard", src, "--cluster-from", ids[src],
            "--cluster-to", ids[dst], "--cluster-slots", str(MOVE[1] - MOVE[0] + 1), "--cluster-yes",
            "--cluster-pipeline", str(pipeline)]
    rc, out, err = bench.run_bounded(argv, timeout)
    if rc != 0 or "[ERR]" in out:
        raise bench.BenchError("redis-cli --cluster reshard rc=%d:\n%s\n%s" % (rc, out[-2000:], err[-1000:]))
    return {"moved_slot_lines": out.count("Moving slot ")}


def check_moved(net, slots, src, dst):
    """DBSIZEs add up to N again (polled: a source may delete what it gave away just after the change), the
    target holds every key generated for each moved slot, the source none."""
    n = len(slots)
    sizes = wait_for(lambda: (lambda s: s if sum(s.values()) == n else None)(dbsizes(net)), timeout=60,
                     interval=0.05, what="the DBSIZEs to add up to %d" % n, error=bench.BenchError)
    want = [0] * SLOTS
    for s in slots:
        want[s] += 1
    moved = range(MOVE[0], MOVE[1] + 1)
    got = {}
    for addr in (src, dst):
        ip, port = addr.rsplit(":", 1)
        c = hosts.client(ip, int(port), timeout=30)
        try:
            p = c.pipeline(transaction=False)
            for s in moved:
                p.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
            got[addr] = p.execute()
        finally:
            c.close()
    bad = [s for s, k in zip(moved, got[dst]) if k != want[s]]
    if bad:
        raise bench.BenchError("the target's COUNTKEYSINSLOT differs for %d slots (slot %d: %d, want %d)"
                               % (len(bad), bad[0], got[dst][bad[0] - MOVE[0]], want[bad[0]]))
    if any(got[src]):
        raise bench.BenchError("the source still holds %d keys of the moved slots" % sum(got[src]))
    return {"dbsize": sizes, "moved_keys": sum(want[s] for s in moved)}


# -------------------------------------------------------------------------------------------------- round

def kind_parts(kind):
    """"ruvio" -> ("ruvio", None); "redis-p10" -> ("redis", 10); "ruvio-reshard-p10" -> ("ruvio", 10)."""
    if kind == "ruvio":
        return "ruvio", None
    server, _, p = kind.rpartition("-p")
    return ("ruvio" if server == "ruvio-reshard" else server), int(p)


def one_round(args, net, rnd, kind, slots):
    server, pipeline = kind_parts(kind)
    cpus = args.server_cpus.split("/")
    cpus = {h.name: cpus[i % len(cpus)] for i, h in enumerate(net)}
    procs = cluster.start(server, net, "r%d-%s" % (rnd, kind), args.bin, args.node_timeout, ports=(PORT,),
                          cpus=cpus)
    client = None
    try:
        cluster.create(net, 0, ports=(PORT,))
        res = {"fill_s": round(fill(net, slots, args.tool_cpu, args.timeout), 2)}
        ids = node_ids(net)
        src, dst = "%s:%d" % (net[args.source].ip, PORT), "%s:%d" % (net[args.target].ip, PORT)
        owners = slot_owners(net["h0"].ip, PORT)
        if any(owners[s] != src for s in range(MOVE[0], MOVE[1] + 1)):
            raise bench.BenchError("%s's node does not own slots %d-%d after create" % ((args.source,) + MOVE))
        if server == "ruvio":      # whether the source's commit goes to the topology log's leader on its host
            res["source_leads_log"] = hosts.info(*src.rsplit(":", 1)).get("topology_log_leader")
        client = Clients(net, len(slots), args.client_cpu)
        if args.quiet_wait and not bench.wait_quiet(0.25, args.quiet_wait):
            log("  machine still busy; running anyway")
        ps0, cpu0, cl0 = bench.proc_stat(), cluster.server_cpu(procs)[0], client.cpu_ns()
        ru0 = os.times()
        client.begin("during")
        t0 = time.monotonic()
        if pipeline is None:
            res["states_s"], job = move_atomic(net, src, dst, ids, args.timeout)
            res["job"] = {k: job.get(k) for k in ("name", "slot_ranges", "state", "message")}
        else:
            res["reshard"] = move_reshard(net, src, dst, ids, pipeline, args.tool_cpu, args.timeout)
        wait_for(lambda: all_agree(net, dst), timeout=60, interval=0.01, what="every node to agree on the move",
                 error=bench.BenchError)
        move = time.monotonic() - t0
        during = client.end()
        ps1, cpu1, cl1 = bench.proc_stat(), cluster.server_cpu(procs)[0], client.cpu_ns()
        ru1 = os.times()
        tool = (ru1.children_user - ru0.children_user) + (ru1.children_system - ru0.children_system)
        busy = ps1["busy"] - ps0["busy"]
        res.update({"move_s": round(move, 3), "server_cpu_s": round((cpu1 - cpu0) / 1e9, 3),
                    "client_cpu_util": round((cl1 - cl0) / 1e9 / move, 3),
                    "foreign_cpu_util": round(max(0.0, busy - (cpu1 - cpu0) / 1e9 - (cl1 - cl0) / 1e9 - tool)
                                              / move, 3)})
        res["check"] = check_moved(net, slots, src, dst)
        client.begin("without")
        time.sleep(max(move, args.min_without))      # (the measurement window, as long as the move's)
        without = client.end()
        res["latency"] = {"during": during, "without": without}
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise bench.BenchError("a server exited:\n%s" % hosts.processes(net))
        return res
    finally:
        if client is not None:
            client.close()
        for p in procs:
            net.stop(p)


def worst_p99(lat):
    """The higher p99 of the two clients' (moving slots, others): each client waits for its own operations, so
    one held on a moving slot takes fewer samples and would weigh less in a pooled p99."""
    xs = [lat[g].get("p99_us") for g in Clients.GROUPS if lat[g].get("p99_us") is not None]
    return max(xs) if xs else None


def summarize(rounds, kinds):
    out = {}
    for k in kinds:
        runs = [r[k] for r in rounds if "move_s" in r.get(k, {})]
        s = {"runs": len(runs), "failed": sum(1 for r in rounds if "error" in r.get(k, {})),
             "move_s": med([r["move_s"] for r in runs]),
             "move_s_range": [min(r["move_s"] for r in runs), max(r["move_s"] for r in runs)] if runs else None,
             "server_cpu_s": med([r["server_cpu_s"] for r in runs]),
             "foreign_cpu_util_max": max([r["foreign_cpu_util"] for r in runs] or [0])}
        for ph in ("during", "without"):
            for g in ("all",) + Clients.GROUPS:
                for f in ("p50_us", "p99_us", "max_us", "ops"):
                    s["%s_%s_%s" % (ph, g, f)] = med([r["latency"][ph][g].get(f) for r in runs])
            s["%s_worst_p99_us" % ph] = med([worst_p99(r["latency"][ph]) for r in runs])
            s["%s_errors" % ph] = sum(sum(r["latency"][ph]["errors"].values()) for r in runs)
            s["%s_failed_ops" % ph] = sum(r["latency"][ph]["failed_ops"] for r in runs)
        ratios = [worst_p99(r["latency"]["during"]) / worst_p99(r["latency"]["without"]) for r in runs
                  if worst_p99(r["latency"]["without"])]
        s["p99_ratio_during_without"] = med(ratios)
        if k != "ruvio" and "ruvio" in kinds:
            pr = [r[k]["move_s"] / r["ruvio"]["move_s"] for r in rounds
                  if "move_s" in r.get(k, {}) and "move_s" in r.get("ruvio", {})]
            s["move_ratio_vs_ruvio"] = med(pr)
            s["move_ratio_vs_ruvio_range"] = [min(pr), max(pr)] if pr else None
        out[k] = s
    return out


def print_summary(summary, nkeys):
    print("\nMoving slots %d-%d of a 3-host cluster of %d keys; medians over rounds. Latency in us; p99 of the"
          " client on moving slots (mov) and on the others (oth); p99x: the worse p99 during / the worse"
          " without" % (MOVE + (nkeys,)))
    print("%-17s %7s %6s %6s | %6s %8s %8s %8s | %6s %8s %8s %8s | %6s %s" % (
        "kind", "move s", "ratio", "CPU s", "p50", "p99 mov", "p99 oth", "max", "p50", "p99 mov", "p99 oth",
        "max", "p99x", "errors"))
    print("%-17s %7s %6s %6s | %-33s | %-33s |" % ("", "", "", "", "during the move", "without a move"))
    for k, s in summary.items():
        if not s["runs"]:
            print("%-17s no successful run (%d failed)" % (k, s["failed"]))
            continue
        print("%-17s %7.2f %6s %6.2f | %6d %8d %8d %8d | %6d %8d %8d %8d | %6.2f %d+%d" % (
            k, s["move_s"], "%.2f" % s["move_ratio_vs_ruvio"] if s.get("move_ratio_vs_ruvio") else "-",
            s["server_cpu_s"], s["during_all_p50_us"], s["during_moving_p99_us"], s["during_other_p99_us"],
            s["during_all_max_us"], s["without_all_p50_us"], s["without_moving_p99_us"],
            s["without_other_p99_us"], s["without_all_max_us"], s["p99_ratio_during_without"] or 0,
            s["during_errors"], s["without_errors"]))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, help="JSON results file")
    ap.add_argument("--bin", default=os.environ.get("RUVIO_BIN", os.path.join(cluster.REPO, "build", "ruvio")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keys", type=int, default=3000000)
    ap.add_argument("--slots", type=int, default=1638, help="slots moved: the source's first ones (1638: 10 %%)")
    ap.add_argument("--from", dest="source", default="h0", choices=sorted(FIRST_SLOT),
                    help="the source host (h0's node leads the topology log: --from h1 has the source forward "
                         "its commit)")
    ap.add_argument("--to", dest="target", default="h1", choices=sorted(FIRST_SLOT))
    ap.add_argument("--kinds", default=None, help="default: ruvio, then redis-pP for each --redis-pipelines P")
    ap.add_argument("--redis-pipelines", default="10,1000", help="redis-cli --cluster-pipeline values")
    ap.add_argument("--server-cpus", default=bench.SERVER_CPU,
                    help="taskset CPU list of every server, or one per host separated by / (h0/h1/h2: 2/3/4)")
    ap.add_argument("--client-cpu", default=bench.CLIENT_CPU)
    ap.add_argument("--tool-cpu", default=None, help="redis-cli's CPU (default: 2 if there is one, else the "
                                                     "client's)")
    ap.add_argument("--min-without", type=float, default=5.0, help="shortest phase without a move (s)")
    ap.add_argument("--node-timeout", type=int, default=15000, help="cluster-node-timeout (ms) of both")
    ap.add_argument("--timeout", type=int, default=1800, help="bound on the fill and on one move (s)")
    ap.add_argument("--quiet-wait", type=float, default=5.0, help="wait up to this long for a quiet machine (0: no)")
    ap.add_argument("--keep-logs", default=None, help="copy the servers' logs into this directory at the end")
    a = ap.parse_args(argv)
    a.kinds = (a.kinds.split(",") if a.kinds else
               ["ruvio"] + ["redis-p%d" % int(p) for p in a.redis_pipelines.split(",")])
    for k in a.kinds:
        try:
            kind_parts(k)
        except ValueError:
            ap.error("--kinds: ruvio, redis-pN or ruvio-reshard-pN, not %r" % k)
    if not 1 <= a.slots <= 5460:
        ap.error("--slots: 1..5460 (at most the slots a node owns after create)")
    if a.source == a.target:
        ap.error("--from and --to: two hosts")
    if a.tool_cpu is None:
        a.tool_cpu = "2" if (os.cpu_count() or 1) > 2 else a.client_cpu
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["client"]:
        return client_main(argv[1:])
    global MOVE
    args = parse_args(argv)
    MOVE = (FIRST_SLOT[args.source], FIRST_SLOT[args.source] + args.slots - 1)
    why = netns.unavailable()
    if why:
        sys.exit("migrate benchmark: %s" % why)
    for tool in ("redis-server", "redis-cli", "taskset"):
        if shutil.which(tool) is None:
            sys.exit("migrate benchmark: %s is not installed (scripts/deps.sh test)" % tool)
    if any(kind_parts(k)[0] == "ruvio" for k in args.kinds) and not os.path.exists(args.bin):
        sys.exit("migrate benchmark: no ruvio binary at %s (--bin)" % args.bin)
    args.bin = os.path.abspath(args.bin)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, bench._on_signal)      # unwinds through the finally below
    signal.signal(signal.SIGHUP, bench._on_signal)
    slots = slots_of(args.keys)
    net = netns.Net.create(hosts.HOSTS)
    results = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": bench.machine_info(), "args": vars(args), "moved_slots": list(MOVE),
               "pinning": {"servers": args.server_cpus, "client": args.client_cpu, "tool": args.tool_cpu},
               "layout": "3 netns hosts x 1 cluster node (port %d), 3 primaries, no replicas; ruvio --shards 1 "
                         "--durability memory, redis-server --save '' --appendonly no" % PORT,
               "rounds": []}
    try:
        for rnd in range(args.rounds):
            kinds = args.kinds[rnd % len(args.kinds):] + args.kinds[:rnd % len(args.kinds)]
            rr = {}
            for kind in kinds:
                log("round %d %s: %d keys" % (rnd, kind, args.keys))
                try:
                    rr[kind] = one_round(args, net, rnd, kind, slots)
                except (bench.BenchError, redis.RedisError, OSError, subprocess.SubprocessError) as e:
                    # recorded; the other kinds of the round go on
                    log("round %d %s failed: %s" % (rnd, kind, e))
                    rr[kind] = {"error": str(e)[:3000]}
                    continue
                r = rr[kind]
                log("round %d %-14s fill %.1f s, move %.2f s (server CPU %.2f s, foreign %.2f); p99 %d us "
                    "during, %d us without; client errors %d" % (
                        rnd, kind, r["fill_s"], r["move_s"], r["server_cpu_s"], r["foreign_cpu_util"],
                        r["latency"]["during"]["all"]["p99_us"], r["latency"]["without"]["all"]["p99_us"],
                        sum(r["latency"]["during"]["errors"].values())))
            results["rounds"].append(rr)
            results["summary"] = summarize(results["rounds"], args.kinds)
            with open(args.out, "w") as f:       # after every round: a stopped run keeps what it measured
                json.dump(results, f, indent=1, sort_keys=True)
    finally:
        net.close()
        if args.keep_logs:
            os.makedirs(args.keep_logs, exist_ok=True)
            for name in os.listdir(net.workdir):
                if name.endswith(".log"):
                    shutil.copy(os.path.join(net.workdir, name), args.keep_logs)
        shutil.rmtree(net.workdir, ignore_errors=True)
    results["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    print_summary(results["summary"], args.keys)
    print("\nresults: %s" % args.out)


if __name__ == "__main__":
    main()
