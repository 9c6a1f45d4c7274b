#!/usr/bin/env python3
"""Jepsen-style adversarial test of Ruvio replication (tests/jepsen/README.md).

    python3 tests/jepsen/run.py --seed 7 --duration 60 --out /tmp/jepsen-7 [--faults kill,stop,...]

Three ruvio nodes on three network-namespace hosts; clients write unique keys through redis-py and record
every answer; a nemesis applies faults from a schedule drawn from the seed; then everything is healed and
checker.py verifies the invariants. Exit status 0 when they all hold, 1 when one fails (the report, the seed
and the path of the full history are printed), 2 when the harness itself could not run."""

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import traceback

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import cluster as cl  # noqa: E402
import drive  # noqa: E402
import netns  # noqa: E402  (put on the path by cluster)
from ruviotest.wait import wait_for  # noqa: E402  (tests/pylib: put on the path by cluster)

ALL_FAULTS = ("kill", "stop", "partition", "delay", "stall", "disk", "restart", "failover", "promote")
PROFILES = {
    "all": ALL_FAULTS,
    # CI: what the fixed binary must survive on every run; still every invariant is checked
    "ci": ("kill", "stop", "partition", "delay", "restart", "failover"),
}


def draw_schedule(seed, duration, faults):
    """The fault schedule, a pure function of the seed: [(t, kind, params)] with targets named by role
    ("primary", or the replica at position `pick` among the replicas), so a rerun with the same seed applies
    the same faults to the same roles."""
    def params(rng, kind):
        p = {"target": rng.choice(("primary", "replica")), "pick": rng.randrange(2), "hold": rng.uniform(0.5, 5.0)}
        if kind in ("delay",):
            p["ms"] = rng.choice((20, 100, 400, 1500))
        if kind == "promote":
            p["isolate"] = rng.choice(("stop", "partition", "kill"))
        if kind == "failover":
            p["to"] = rng.random() < 0.5
        return p
    return drive.schedule(seed, duration, faults, params)


class Run(drive.Run):
    def note_info(self, info):
        self.cluster.note_info(info)


# -- clients ---------------------------------------------------------------------------------------------------

class Client(threading.Thread):
    """Writes unique keys to the node the operator calls primary (draw() says what); every answer is recorded
    in run.ops. Its random choices come from its own generator seeded from the run's seed."""

    def __init__(self, run, cid):
        super().__init__(daemon=True)
        self.run_ = run
        self.cid = cid
        self.rng = random.Random(run.opts.seed * 1000 + cid)
        self.conns = {}
        self.seq = 0

    def conn(self, node):
        c = self.conns.get(node.name)
        if c is None:
            c = redis.Redis(host=node.ip, port=cl.PORT, socket_timeout=self.run_.opts.op_timeout,
                            socket_connect_timeout=2, decode_responses=True, single_connection_client=True)
            c.set_response_callback("INFO", cl._raw)
            self.conns[node.name] = c
        return c

    def drop(self, node):
        c = self.conns.pop(node.name, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def run(self):
        r = self.run_
        gap = r.opts.clients / float(r.opts.rate)
        node = None
        while not r.stop_clients.is_set():
            # a client keeps writing to the node it has until that fails, as real clients do: so a deposed
            # primary that still takes writes gets them
            node = node or r.cluster.primary
            if node is None:
                time.sleep(0.05)
                continue
            ops = self.draw(node)
            hold = self.rng.choice((0, 0, 0.01, 0.2)) if ops[0].kind == "txn" else 0
            try:
                self.attempt(node, ops, hold)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                self.drop(node)
                if "connecting to" in str(e):     # nothing was sent: not an operation
                    node = None
                    time.sleep(0.1)
                    continue
                self.outcome(ops, "unknown", "%s: %s" % (type(e).__name__, e))
            except redis.exceptions.ResponseError as e:
                self.outcome(ops, "fail" if checker.error_is_definite(e) else "unknown",
                             ("%s: %s" % (type(e).__name__, e))[:200])
                self.drop(node)                   # a MULTI may be left open
            except Exception as e:                # a bug in the harness must not pass as a system failure
                self.outcome(ops, "unknown", "harness: %r" % e)
                self.drop(node)
            t1 = r.now()
            with r.lock:
                for op in ops:
                    op.t1 = t1
                    op.i = len(r.ops)
                    r.ops.append(op)
            if any(op.st != "ok" for op in ops):
                node = None
                time.sleep(0.05)
            elif gap:
                time.sleep(gap * len(ops))
        for name in list(self.conns):
            self.drop(r.cluster[name])

    def draw(self, node):
        """The next operation(s): a SET (80 %), a pipelined burst of 5 to --burst SETs (10 %) or a MULTI (10 %)."""
        r = self.run_
        x = self.rng.random()
        kind, n = ("txn", 1) if x < 0.1 else ("burst", self.rng.randint(5, r.opts.burst)) if x < 0.2 else ("set", 1)
        want = self.rng.choice(r.opts.wait)
        ops = []
        for _ in range(n):
            self.seq += 1
            keys = ["j:%d:%d" % (self.cid, self.seq)] + (["j:%d:%dt" % (self.cid, self.seq)] if kind == "txn" else [])
            ops.append(checker.Op(c=self.cid, kind=kind, keys=keys, val="%d:%d:%d" % (r.opts.seed, self.cid, self.seq),
                                  node=node.name, t0=r.now(), want=want))
        return ops

    @staticmethod
    def outcome(ops, st, err):
        for op in ops:
            if op.st is None:
                op.st, op.err = st, err

    def attempt(self, node, ops, hold):
        c = self.conn(node)
        want = ops[0].want
        if ops[0].kind != "txn":
            p = c.pipeline(transaction=False)
            for op in ops:
                p.execute_command("SET", op.keys[0], op.val)
            p.execute_command("INFO", "replication")
            if want:
                p.execute_command("WAIT", want, self.run_.opts.wait_ms)
            res = p.execute(raise_on_error=False)
            for op, x in zip(ops, res):
                if isinstance(x, redis.exceptions.ResponseError):
                    op.st = "fail" if checker.error_is_definite(x) else "unknown"
                    op.err = ("%s: %s" % (type(x).__name__, x))[:200]
                elif isinstance(x, Exception):
                    raise x
                else:
                    op.st = "ok" if x in (True, "OK") else "unknown"
            info = res[len(ops)]
            info = cl.parse_info(info) if isinstance(info, str) else None
            waited = res[len(ops) + 1] if want else None
        else:
            op = ops[0]
            c.execute_command("MULTI")
            c.execute_command("SET", op.keys[0], op.val)
            if hold:
                time.sleep(hold)
            c.execute_command("SET", op.keys[1], op.val)
            out = c.execute_command("EXEC")
            if not isinstance(out, list) or len(out) != 2 or any(isinstance(x, Exception) for x in out):
                raise redis.exceptions.ResponseError("EXECABORT (harness) EXEC answered %r" % (out,))
            op.st = "ok"
            info = cl.parse_info(c.execute_command("INFO", "replication"))
            waited = c.execute_command("WAIT", want, self.run_.opts.wait_ms) if want else None
        for op in ops:
            if info:
                op.role = info.get("role")
                op.replid = info.get("master_replid")
                op.epoch = int(info["repl_epoch"]) if info.get("repl_epoch", "").isdigit() else None
                off = info.get("master_repl_offset", "")
                op.lsn = int(off) if off.lstrip("-").isdigit() else None
            op.got = waited if isinstance(waited, int) else None
        if info:
            self.run_.note_info(info)


# -- nemesis ---------------------------------------------------------------------------------------------------

class Nemesis:
    def __init__(self, run):
        self.run = run
        self.c = run.cluster

    def target(self, p):
        if p["target"] == "primary" and self.c.primary is not None:
            return self.c.primary
        reps = [n for n in self.c.nodes if n is not self.c.primary]
        return reps[p["pick"] % len(reps)]

    def apply(self, kind, p):
        getattr(self, "f_" + kind)(p)
        self.normalise()

    def f_kill(self, p):
        n = self.target(p)
        self.run.event("kill", "kill -9 %s (%s)" % (n, role_of(self.c, n)), node=n.name)
        n.signal(signal.SIGKILL)
        n.proc.wait(timeout=10)
        time.sleep(p["hold"])
        self.restart_node(n, "after kill -9")

    def f_restart(self, p):
        n = self.target(p)
        self.run.event("restart", "restart %s (SIGTERM, %s)" % (n, role_of(self.c, n)), node=n.name)
        self.c.net.stop(n.proc, grace=10)
        self.restart_node(n, "after SIGTERM")

    def restart_node(self, n, why, expect=None):
        n.start(wait=False)
        try:
            n.wait_ready(timeout=30)
        except Exception as e:
            self.run.event("start-failed", "%s did not come up %s: %s" % (n, why, str(e)[-600:]), node=n.name)
            return
        i = n.info(5) or {}
        want = expect or self.c.expected_role(n)
        got = (i.get("role"), self.c.by_via(i.get("master_host", ""), i.get("master_port") or 0)
               if i.get("role") == "slave" else None)
        self.run.event("start", "%s up %s: %s" % (n, why, self.desc_role(got)), node=n.name)
        if i and got != want:
            self.run.event("role-lost", "%s restarted %s as %s, but the operator had made it %s (epoch %s, replid "
                           "%s)" % (n, why, self.desc_role(got), self.desc_role(want), i.get("repl_epoch"),
                                    (i.get("master_replid") or "?")[:8]), node=n.name)

    @staticmethod
    def desc_role(r):
        return "primary" if r[0] == "master" else "replica of %s" % r[1] if r[0] == "slave" else "unknown (%s)" % (r,)

    def f_stop(self, p):
        n = self.target(p)
        self.run.event("stop", "SIGSTOP %s (%s) for %.1fs" % (n, role_of(self.c, n), p["hold"]), node=n.name)
        n.signal(signal.SIGSTOP)
        n.stopped = True
        time.sleep(p["hold"])
        n.signal(signal.SIGCONT)
        n.stopped = False
        self.run.event("cont", "SIGCONT %s" % n, node=n.name)

    def f_partition(self, p):
        n = self.target(p)
        self.run.event("partition", "partition %s (%s) off the others for %.1fs" % (n, role_of(self.c, n),
                                                                                   p["hold"]), node=n.name)
        n.host.link_down()
        n.partitioned = True
        time.sleep(p["hold"])
        n.host.link_up()
        n.partitioned = False
        self.run.event("heal", "link of %s up" % n, node=n.name)

    def proxy_fault(self, p, mode, ms=0):
        if p["target"] == "primary":         # every replication link (each replica's proxy carries its own)
            on = [n for n in self.c.nodes if n is not self.c.primary]
        else:
            on = [self.target(p)]
        what = "delay %d ms" % ms if mode == "delay" else "stall (black hole)"
        self.run.event(mode, "%s on the replication links of %s for %.1fs (links made by FAILOVER bypass the "
                       "proxy)" % (what, ",".join(map(str, on)), p["hold"]), nodes=[n.name for n in on])
        for n in on:
            n.set_proxy(mode, ms)
        time.sleep(p["hold"])
        for n in on:
            n.set_proxy("pass")
        self.run.event("heal", "proxies of %s pass" % ",".join(map(str, on)))

    def f_delay(self, p):
        self.proxy_fault(p, "delay", p["ms"])

    def f_stall(self, p):
        self.proxy_fault(p, "stall")

    def f_disk(self, p):
        n = self.target(p)
        size = n.fill_disk()
        self.run.event("disk", "disk of %s (%s) full (ballast %d bytes) for %.1fs" % (n, role_of(self.c, n), size,
                                                                                    p["hold"]), node=n.name)
        time.sleep(p["hold"])
        n.free_disk()
        self.run.event("heal", "ballast on %s removed" % n, node=n.name)

    def f_failover(self, p):
        old = self.c.primary
        reps = [n for n in self.c.nodes if n is not old]
        to = reps[p["pick"] % 2] if p["to"] else None
        args = ["FAILOVER"] + (["TO", to.ip, cl.PORT] if to else []) + ["TIMEOUT", 5000]
        try:
            reply = old.client(10).execute_command(*args)
        except redis.exceptions.RedisError as e:
            reply = "error: %s" % e
        self.run.event("failover", "%s on %s: %s" % (" ".join(map(str, args)), old, reply), node=old.name)

        def settled():
            roles = self.c.roles()
            m = [n for n, r in roles.items() if r and r[0] == "master"]
            fo = (roles.get(old) or ("", "", {}))[2].get("master_failover_state", "no-failover")
            return m if len(m) == 1 and fo == "no-failover" else None
        try:
            m = wait_for(settled, timeout=10, interval=0.1, what="one primary after FAILOVER")
            self.c.primary = m[0]
            self.run.event("failover-done", "primary now %s (epoch %s); %s" % (
                m[0], self.epoch(m[0]), ", ".join("%s %s" % (n, self.c.rewrite(n)) for n in self.c.nodes)),
                node=m[0].name)
        except AssertionError as e:
            self.run.event("failover-stuck", "no single primary 10 s after FAILOVER: %s" % self.describe(), err=str(e))

    def f_promote(self, p):
        old = self.c.primary
        how = p["isolate"]
        self.run.event("promote", "isolate primary %s (%s), promote a replica with REPLICAOF NO ONE" % (old, how),
                       node=old.name)
        if how == "stop":
            old.signal(signal.SIGSTOP)
            old.stopped = True
        elif how == "partition":
            old.host.link_down()
            old.partitioned = True
        else:
            old.signal(signal.SIGKILL)
            old.proc.wait(timeout=10)
        time.sleep(0.3)
        best, off = None, -1
        for n in self.c.nodes:
            if n is old:
                continue
            i = n.info(2)
            o = int(i.get("slave_repl_offset", i.get("master_repl_offset", -1))) if i else -1
            if i and o > off:
                best, off = n, o
        if best is None:
            self.run.event("promote-skipped", "no replica answers; healing %s" % old)
        else:
            reply = self.c.replicaof(best, None)
            self.c.primary = best
            self.run.event("promoted", "REPLICAOF NO ONE on %s (offset %d): %s, epoch now %s" %
                           (best, off, reply, self.epoch(best)), node=best.name)
            for n in self.c.nodes:
                if n not in (old, best):
                    self.run.event("repoint", "REPLICAOF %s on %s: %s" % (best, n, self.c.replicaof(n, best)),
                                   node=n.name)
        time.sleep(p["hold"])
        if how == "stop":
            old.signal(signal.SIGCONT)
            old.stopped = False
        elif how == "partition":
            old.host.link_up()
            old.partitioned = False
        else:
            self.restart_node(old, "(old primary)", expect=("master", None))
        if best is not None:
            self.run.event("repoint", "old primary %s back: REPLICAOF %s: %s" % (old, best,
                                                                               self.c.replicaof(old, best)),
                           node=old.name)

    def epoch(self, n):
        i = n.info(2)
        return i.get("repl_epoch") if i else "?"

    def describe(self):
        out = []
        for n, r in self.c.roles().items():
            if r is None:
                out.append("%s: no answer" % n)
            elif r[0] == "master":
                out.append("%s: master epoch %s replid %s" % (n, r[1], r[2].get("master_replid", "?")[:8]))
            else:
                out.append("%s: replica of %s (%s) epoch %s" % (n, r[1], r[2].get("master_link_status"),
                                                                 r[2].get("repl_epoch")))
        return "; ".join(out)

    def normalise(self, final=False):
        """The operator's check after each fault: one primary (the one the operator chose, while it is one),
        every other node following it. What had to be repaired is recorded as a `repair` event."""
        roles = self.c.roles()
        for r in roles.values():
            if r:
                self.run.note_info(r[2])
        masters = [n for n, r in roles.items() if r and r[0] == "master"]
        p = self.c.primary
        if p not in masters:
            if masters:
                p = max(masters, key=lambda n: roles[n][1])
                self.run.event("repair", "operator's primary %s is not one (%s); taking %s" % (
                    self.c.primary, self.describe(), p), node=p.name)
            elif roles.get(p) is not None or final:
                self.run.event("repair", "no primary at all (%s): REPLICAOF NO ONE on %s: %s" % (
                    self.describe(), p, self.c.replicaof(p, None)), node=p.name)
            self.c.primary = p
        for n, r in roles.items():
            if n is p or r is None:
                continue
            if r[0] == "master" or r[1] is not p:
                self.run.event("repair", "%s %s; REPLICAOF %s: %s" % (
                    n, "is a primary (epoch %s)" % r[1] if r[0] == "master" else "follows %s" % r[1], p,
                    self.c.replicaof(n, p)), node=n.name)


def role_of(c, n):
    return "primary" if n is c.primary else "replica"


# -- heal, converge, read back ---------------------------------------------------------------------------------

def heal(run):
    c = run.cluster
    nem = Nemesis(run)
    for n in c.nodes:
        if n.stopped:
            n.signal(signal.SIGCONT)
            n.stopped = False
        if n.partitioned:
            n.host.link_up()
            n.partitioned = False
        n.set_proxy("pass")
        n.free_disk()
    for n in c.nodes:
        if not n.alive():
            nem.restart_node(n, "(heal)")
    run.event("healed", "all processes up, links up, proxies pass, ballast gone: %s" % nem.describe())
    nem.normalise(final=True)
    p = c.primary
    canary = "not tried"
    try:
        pc = p.client(15)
        pc.set("j:canary", "1")
        got = pc.execute_command("WAIT", 2, 10000)
        canary = "ok" if got == 2 else "WAIT 2 answered %s" % got
        pc.delete("j:canary")
    except redis.exceptions.RedisError as e:
        canary = "error on %s: %s" % (p, e)
    problems = [] if canary == "ok" else [canary]
    for n in c.nodes:
        try:
            n.client(5).ping()
        except redis.exceptions.RedisError as e:
            problems.append("%s does not answer PING: %s" % (n, e))
    canary = "; ".join(problems) or "ok"
    run.event("canary", "SET + WAIT 2 on %s, PING on every node: %s" % (p, canary))

    def converged():
        infos = {n: n.info(2) for n in c.nodes}
        if any(i is None for i in infos.values()):
            return None
        off = infos[p].get("master_repl_offset")
        for n, i in infos.items():
            if n is not p and (i.get("master_link_status") != "up" or i.get("slave_repl_offset") != off):
                return None
        try:
            ds = set(n.client(5).execute_command("DEBUG", "DIGEST") for n in c.nodes)
        except redis.exceptions.RedisError:
            return None
        return len(ds) == 1
    ok = False
    try:
        ok = bool(wait_for(converged, timeout=run.opts.heal_timeout, interval=0.25,
                           what="replicas at the primary's offset with equal digests"))
    except AssertionError:
        pass
    run.event("converge", "converged: %s (%s)" % (ok, nem.describe()))
    final = {"primary": p.name, "converged": ok, "canary": canary, "nodes": {}}
    keys = [k for o in run.ops for k in o.keys]
    for n in c.nodes:
        d = {"digest": None, "dbsize": None, "info": n.info(5), "values": None}
        try:
            nc = n.client(10)
            d["digest"] = nc.execute_command("DEBUG", "DIGEST")
            d["dbsize"] = nc.dbsize()
            vals = {}
            for i in range(0, len(keys), 1000):
                chunk = keys[i:i + 1000]
                for k, v in zip(chunk, nc.mget(chunk)):
                    if v is not None:
                        vals[k] = v
            d["values"] = vals
        except redis.exceptions.RedisError as e:
            d["error"] = str(e)
        final["nodes"][n.name] = d
    return final


def run_once(opts):
    faults = PROFILES.get(opts.faults) or tuple(f for f in opts.faults.split(",") if f)
    unknown = [f for f in faults if f not in ALL_FAULTS]
    if unknown:
        raise SystemExit("unknown faults %s (known: %s)" % (unknown, ",".join(ALL_FAULTS)))
    os.makedirs(opts.out, exist_ok=True)
    schedule = draw_schedule(opts.seed, opts.duration, faults)
    run = Run(opts)
    print("jepsen: seed %d, %ds, faults %s, %d scheduled, out %s" % (opts.seed, opts.duration, ",".join(faults),
                                                                     len(schedule), opts.out), flush=True)
    run.cluster = c = cl.Cluster(opts, os.path.join(opts.out, "work"))
    nem = Nemesis(run)
    clients = []
    final = None
    try:
        c.create()
        run.event("setup", "n1 primary, n2 n3 replicas via proxies; durability %s" % opts.durability)
        wait_for(lambda: c.primary.info(2) and c.primary.info(2).get("connected_slaves") == "2",
                 timeout=20, what="two replicas connected")
        clients = [Client(run, i) for i in range(opts.clients)]
        drive.play(run, clients, schedule, nem, opts.duration, opts.op_timeout)
        final = heal(run)
    except Exception:
        run.event("harness-error", traceback.format_exc())
        raise
    finally:
        run.stop_clients.set()
        drive.teardown(c, c.nodes, opts.out)
        save(run, opts, schedule, final)
    ok, lines, summary = checker.check(run.ops, run.events, final, opts.durability, c.lineage)
    summary.update(seed=opts.seed, duration=opts.duration, faults=",".join(faults))
    drive.report(opts.out, ok, lines, summary, run.events,
                 "RUVIO_BIN=%s python3 tests/jepsen/run.py %s" % (cl.netns_bin(), rerun_args(opts, faults)))
    return ok, summary


def run_mode(opts):
    """run_once of the mode --mode names."""
    if opts.mode == "cluster":
        import crun
        return crun.run_once(opts)
    return run_once(opts)


def rerun_args(opts, faults):
    return "--seed %d --duration %d --faults %s --durability %s --clients %d --rate %g --wait %s --wait-ms %d " \
        "--burst %d --min-replicas %d --repl-timeout %d" % (
            opts.seed, opts.duration, ",".join(faults), opts.durability, opts.clients, opts.rate,
            ",".join(map(str, opts.wait)), opts.wait_ms, opts.burst, opts.min_replicas, opts.repl_timeout)


def save(run, opts, schedule, final):
    h = {"seed": opts.seed, "duration": opts.duration, "durability": opts.durability, "schedule": schedule,
         "events": run.events, "lineage": run.cluster.lineage, "final": final, "ops": [o.to_json() for o in run.ops]}
    with open(os.path.join(opts.out, "history.json"), "w") as f:
        json.dump(h, f, default=list)


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--duration", type=int, default=int(os.environ.get("RUVIO_JEPSEN_DURATION", 60)))
    ap.add_argument("--out", default=None)
    ap.add_argument("--faults", default="all", help="a profile (%s) or a comma list of %s" % (
        ",".join(PROFILES), ",".join(ALL_FAULTS)))
    ap.add_argument("--durability", default="always", choices=("always", "everysec", "memory"))
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rate", type=float, default=300, help="writes per second, all clients together (at most)")
    ap.add_argument("--wait", default="0,1,2", help="WAIT numreplicas values the clients pick from")
    ap.add_argument("--wait-ms", type=int, default=1000)
    ap.add_argument("--burst", type=int, default=40, help="largest pipelined burst of SETs (at least 5)")
    ap.add_argument("--min-replicas", type=int, default=0, help="min-replicas-to-write on every node")
    ap.add_argument("--repl-timeout", type=int, default=5)
    ap.add_argument("--op-timeout", type=float, default=5)
    ap.add_argument("--heal-timeout", type=int, default=60)
    ap.add_argument("--disk-mb", type=int, default=256)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--mode", default="replication", choices=("replication", "cluster"),
                    help="replication: one primary, two replicas, the harness as operator (the default); cluster: "
                    "3 hosts x 2 shards, cluster-enabled, the control plane fails over (crun.py)")
    ap.add_argument("--ack", default="wait", choices=("wait", "sync"),
                    help="cluster mode: what acknowledges a write: WAIT 1 after it (wait), or its own reply with "
                    "min-sync-replicas 1 on every node (sync; needs synchronous replication in the binary)")
    ap.add_argument("--node-timeout", type=int, default=2000, help="cluster mode: cluster-node-timeout (ms)")
    ap.add_argument("--settle-timeout", type=int, default=15,
                    help="cluster mode: how long to wait after each fault for the cluster to settle (s)")
    o = ap.parse_args(argv)
    o.wait = [int(x) for x in o.wait.split(",")]
    o.burst = max(5, o.burst)
    o.out = o.out or "/tmp/ruvio-jepsen-%s%d" % ("cluster-" if o.mode == "cluster" else "", o.seed)
    return o


def main(argv=None):
    opts = parse(argv)
    why = netns.unavailable()
    if why:
        print("jepsen: cannot run: %s" % why)
        return 2
    try:
        ok, _ = run_mode(opts)
    except Exception:
        traceback.print_exc()
        print("jepsen: the harness could not complete (seed %d); see %s" % (opts.seed, opts.out))
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
