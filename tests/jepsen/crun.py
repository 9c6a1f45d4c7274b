"""The harness's cluster mode (`run.py --mode cluster`, README.md "Cluster mode"): clients that route by slot and
follow MOVED, the cluster nemesis, healing and the final read-back. The control plane fails over by itself; the
harness only breaks things and watches."""

import json
import os
import random
import re
import signal
import threading
import time
import traceback

import redis
from redis.crc import key_slot

import cchecker
import drive
import rcluster as rc
from ruviotest.resp import parse_info_flat as parse_info
from ruviotest.wait import wait_for

BASE_FAULTS = ("kill", "stop", "partition", "partition-leader", "leader-kill", "leader-kill-failover", "failover",
               "failover-force")
ALL_FAULTS = BASE_FAULTS + ("migrate", "migrateslots")
PROFILES = {
    "all": ALL_FAULTS,
    # CI: what the binary must survive on every run (graceful failovers twice as likely). `migrateslots` (the
    # atomic path) is not in it yet: adding a kind changes every seed's schedule, and CI's seed is chosen for
    # what it draws (README).
    "ci": BASE_FAULTS + ("migrate", "failover"),
}
LISTS_PER_CLIENT = 8
# Slots the `migrate` fault moves between primaries: a quarter of the writes go to keys of these (hash tags),
# so every move carries keys and races writes. Their ops have no shard group (check (g) is per fixed group).
MIGRATING_TAGS = ["{m%d}" % i for i in range(6)]
MIGRATING_SLOTS = [key_slot(t.encode()) for t in MIGRATING_TAGS]
# what happens half way through a move: nothing, or a fault to one side (then redis-cli --cluster fix ends it)
MIGRATE_MID = (None, "kill-source", "kill-target", "failover-source", "failover-target")


def draw_schedule(seed, duration, faults):
    """[(t, kind, params)], a pure function of the seed. Hosts are named by position (pick 0..2) or by role
    (the leader's host); `hold` is how long the fault lasts."""
    def params(rng, kind):
        p = {"pick": rng.randrange(3), "hold": rng.uniform(0.5, 5.0)}
        if kind.startswith("leader-kill"):
            p["after_ms"] = rng.choice((0, 5, 20, 50))
        if kind == "migrate":
            p.update(slot=rng.randrange(len(MIGRATING_SLOTS)), to=rng.randrange(2), mid=rng.choice(MIGRATE_MID))
        if kind == "migrateslots":
            p.update(slot=rng.randrange(len(MIGRATING_SLOTS)), to=rng.randrange(2))
        return p
    return drive.schedule(seed, duration, faults, params)


class Run(drive.Run):
    def __init__(self, opts):
        super().__init__(opts)
        self.slots = {}            # slot -> (ip, port), the clients' shared routing table
        self.slots_lock = threading.Lock()
        self.migrating = False     # the schedule moves slots (writes go to MIGRATING_TAGS too)

    def refresh_slots(self):
        """Load the routing table from CLUSTER SLOTS of the first node that answers (as cluster clients do)."""
        nodes = self.cluster.nodes()
        random.shuffle(nodes)
        for h, p in nodes:
            if not h.reachable():
                continue
            try:
                c = redis.Redis(host=h.ip, port=p, socket_timeout=1, socket_connect_timeout=1)
                reply = c.execute_command("CLUSTER", "SLOTS")
                c.close()
            except (redis.exceptions.RedisError, OSError):
                continue
            table = {}
            for r in reply:
                ip = r[2][0].decode() if isinstance(r[2][0], bytes) else r[2][0]
                for s in range(int(r[0]), int(r[1]) + 1):
                    table[s] = (ip, int(r[2][1]))
            with self.slots_lock:
                self.slots.update(table)
            return True
        return False


class Client(threading.Thread):
    """Writes through per-node connections routed by slot, following MOVED (a redirection is recorded as a
    refusal, and the next write goes where it points). Each write is pipelined with `INFO replication` and
    `WAIT 1 <wait-ms>`; every answer is recorded."""

    def __init__(self, run, cid):
        super().__init__(daemon=True)
        self.run_ = run
        self.cid = cid
        self.rng = random.Random(run.opts.seed * 1000 + cid)
        self.conns = {}
        self.seq = 0

    def conn(self, addr):
        c = self.conns.get(addr)
        if c is None:
            c = redis.Redis(host=addr[0], port=addr[1], socket_timeout=self.run_.opts.op_timeout,
                            socket_connect_timeout=1, decode_responses=True, single_connection_client=True)
            c.set_response_callback("INFO", rc.cl._raw)
            c.set_response_callback("CLUSTER", rc.cl._raw)
            self.conns[addr] = c
        return c

    def drop(self, addr):
        c = self.conns.pop(addr, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def draw(self):
        r = self.run_
        self.seq += 1
        val = "%d:%d:%d" % (r.opts.seed, self.cid, self.seq)
        tag = self.rng.choice(MIGRATING_TAGS) if r.migrating and self.rng.random() < 0.25 else ""
        if self.rng.random() < 0.3:
            kind, key = "push", "%sl:%d:%d" % (tag, self.cid, self.rng.randrange(LISTS_PER_CLIENT))
        else:
            kind, key = "set", "%sk:%d:%d" % (tag, self.cid, self.seq)
        slot = key_slot(key.encode())
        group = -1 if tag else r.cluster.group_of(slot)
        return cchecker.Op(c=self.cid, kind=kind, key=key, val=val, slot=slot, group=group, t0=r.now())

    def run(self):
        r = self.run_
        gap = r.opts.clients / float(r.opts.rate)
        while not r.stop_clients.is_set():
            op = self.draw()
            with r.slots_lock:
                addr = r.slots.get(op.slot)
            if addr is None:
                r.refresh_slots()
                time.sleep(0.1)
                continue
            op.node = "%s:%d" % addr
            try:
                self.attempt(addr, op)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                self.drop(addr)
                if "connecting to" in str(e) or "Connection refused" in str(e):   # nothing sent: no operation
                    r.refresh_slots()
                    time.sleep(0.1)
                    continue
                op.st, op.err = "unknown", "%s: %s" % (type(e).__name__, e)
            except Exception as e:                # a bug in the harness must not pass as a system failure
                op.st, op.err = "unknown", "harness: %r" % e
                self.drop(addr)
            op.t1 = r.now()
            op.acked = op.st == "ok" and (r.opts.ack == "sync" or (op.got or 0) >= 1)
            with r.lock:
                op.i = len(r.ops)
                r.ops.append(op)
            if op.st != "ok":
                if op.err and op.err.startswith("MOVED"):
                    parts = op.err.split()
                    ip, _, port = parts[2].rpartition(":")
                    with r.slots_lock:
                        r.slots[int(parts[1])] = (ip, int(port))
                else:
                    r.refresh_slots()
                    time.sleep(0.05)
            elif gap:
                time.sleep(gap)
        for a in list(self.conns):
            self.drop(a)

    def attempt(self, addr, op):
        c = self.conn(addr)
        p = c.pipeline(transaction=False)
        if op.kind == "set":
            p.execute_command("SET", op.key, op.val)
        else:
            p.execute_command("RPUSH", op.key, op.val)
        p.execute_command("INFO", "replication")
        p.execute_command("CLUSTER", "INFO")
        if self.run_.opts.ack == "wait":
            p.execute_command("WAIT", 1, self.run_.opts.wait_ms)
        res = p.execute(raise_on_error=False)
        x = res[0]
        if isinstance(x, redis.exceptions.ResponseError):
            op.st = "fail" if cchecker.error_is_definite(x) else "unknown"
            op.err = str(x)[:200]
        elif isinstance(x, Exception):
            raise x
        else:
            op.st = "ok" if (x in (True, "OK") or isinstance(x, int)) else "unknown"
        info = res[1] if isinstance(res[1], str) else None
        if info:
            i = parse_info(info)
            op.role = i.get("role")
            op.replid = i.get("master_replid")
            op.repl_epoch = int(i["repl_epoch"]) if i.get("repl_epoch", "").isdigit() else None
            off = i.get("master_repl_offset", "")
            op.lsn = int(off) if off.lstrip("-").isdigit() else None
        ci = rc.parse_kv(res[2]) if isinstance(res[2], str) else {}
        if str(ci.get("cluster_my_epoch", "")).isdigit():
            op.epoch = int(ci["cluster_my_epoch"])
        if len(res) > 3 and isinstance(res[3], int):
            op.got = res[3]


class Nemesis:
    def __init__(self, run):
        self.run = run
        self.c = run.cluster

    def apply(self, kind, p):
        getattr(self, "f_" + kind.replace("-", "_"))(p)
        self.settle()

    def settle(self):
        """Wait (bounded) until the control plane has put the cluster right again: not an invariant, but the
        next fault should find a cluster, not the wreck of the last one. What it took is an event."""
        t0 = time.monotonic()
        try:
            wait_for(lambda: self.c.settled(need_replicas=True), timeout=self.run.opts.settle_timeout, interval=0.2,
                     what="the cluster settled")
            self.run.event("settled", "settled in %.1fs: %s" % (time.monotonic() - t0, self.describe()))
        except AssertionError:
            self.run.event("unsettled", "not settled after %ds: %s" % (self.run.opts.settle_timeout,
                                                                      self.describe()))

    def describe(self):
        """The primaries and replicas as one reachable node sees them, and the log's leader."""
        for h, p in self.c.nodes():
            if not h.reachable():
                continue
            try:
                v = self.c.view(h.ip, p, timeout=1)
            except (redis.exceptions.RedisError, OSError):
                continue
            parts = []
            for k, n in sorted(v.items(), key=lambda x: x[1]["addr"]):
                role = "P" if "master" in n["flags"] else "R(%s)" % v.get(n["primary"], {}).get("addr", "?")
                parts.append("%s %s e%s%s" % (n["addr"], role, n["epoch"],
                                              " " + ",".join(f for f in n["flags"] if "fail" in f)
                                              if any("fail" in f for f in n["flags"]) else ""))
            lead = self.c.leader()
            return "leader %s; %s" % (lead, "; ".join(parts))
        return "no node answers"

    def host(self, p):
        return self.c.hosts[p["pick"] % len(self.c.hosts)]

    def restart(self, h, why):
        try:
            h.start()
            self.run.event("start", "%s up %s" % (h, why), node=h.name)
        except Exception as e:
            self.run.event("start-failed", "%s did not come up %s: %s" % (h, why, str(e)[-600:]), node=h.name)

    def f_kill(self, p):
        h = self.host(p)
        self.run.event("kill", "kill -9 %s for %.1fs (%s)" % (h, p["hold"], self.describe()), node=h.name)
        h.kill9()
        time.sleep(p["hold"])
        self.restart(h, "after kill -9")

    def f_stop(self, p):
        h = self.host(p)
        self.run.event("stop", "SIGSTOP %s for %.1fs" % (h, p["hold"]), node=h.name)
        h.signal(signal.SIGSTOP)
        h.stopped = True
        time.sleep(p["hold"])
        h.signal(signal.SIGCONT)
        h.stopped = False
        self.run.event("cont", "SIGCONT %s" % h, node=h.name)

    def partition(self, h, what, hold):
        self.run.event("partition", "partition %s (%s) off the others for %.1fs" % (h, what, hold), node=h.name)
        h.h.link_down()
        h.partitioned = True
        time.sleep(hold)
        h.h.link_up()
        h.partitioned = False
        self.run.event("heal", "link of %s up" % h, node=h.name)

    def f_partition(self, p):
        """A minority of the voter set: a host that does not lead the log (if there is one leader)."""
        lead = self.c.leader()
        others = [h for h in self.c.hosts if h is not lead]
        self.partition(others[p["pick"] % len(others)], "a follower of the log", p["hold"])

    def f_partition_leader(self, p):
        lead = self.c.leader() or self.host(p)
        self.partition(lead, "the log's leader", p["hold"])

    def send_async(self, ip, port, args):
        """Send a command without waiting for it; the reply (or error) becomes an event when it comes."""
        def go():
            kind = "change-reply"
            try:
                reply = rc.cmd(ip, port, *args, timeout=15)
            except redis.exceptions.ResponseError as e:
                kind, reply = "refused", "error: %s" % e
            except (redis.exceptions.RedisError, OSError) as e:     # the kill: no answer
                kind, reply = "change-unanswered", "error: %s" % e
            kw = {"epoch": int(reply.split()[1])} if str(reply).startswith("BUMPED ") else {}
            self.run.event(kind, "%s on %s:%d answered %s" % (" ".join(args), ip, port, reply), **kw)
        t = threading.Thread(target=go, daemon=True)
        t.start()
        return t

    def replicas(self):
        """[(host, port, primary addr)] of the replicas, from a reachable node's view."""
        for h, p in self.c.nodes():
            if h.reachable():
                try:
                    v = self.c.view(h.ip, p, timeout=1)
                except (redis.exceptions.RedisError, OSError):
                    continue
                return [(self.c.host_of(n["ip"]), n["port"], v.get(n["primary"], {}).get("addr"))
                        for n in v.values() if "slave" in n["flags"] and self.c.host_of(n["ip"])]
        return []

    def f_leader_kill(self, p):
        """The log's leader killed while it commits a topology change: CLUSTER FAILOVER on a replica (of another
        host) or CLUSTER BUMPEPOCH on a node of the leader's host, then kill -9 of the leader's host."""
        lead = self.c.leader()
        if lead is None:
            self.run.event("skip", "leader-kill: no single leader (%s)" % self.describe())
            return
        if p.get("change") == "failover":
            reps = [r for r in self.replicas() if r[0] is not lead]
            if not reps:
                self.run.event("skip", "leader-kill: no replica off the leader's host")
                return
            h, port, prim = reps[p["pick"] % len(reps)]
            args = ["CLUSTER", "FAILOVER"]
        else:
            h, port, prim, args = lead, rc.PORTS[p["pick"] % 2], None, ["CLUSTER", "BUMPEPOCH"]
        self.run.event("topology", "%s on %s:%d%s, then kill -9 of the leader %s after %d ms" % (
            " ".join(args), h, port, " (replica of %s)" % prim if prim else "", lead, p["after_ms"]), node=lead.name)
        t = self.send_async(h.ip, port, args)
        time.sleep(p["after_ms"] / 1000.0)
        lead.kill9()
        self.run.event("kill", "kill -9 leader %s for %.1fs" % (lead, p["hold"]), node=lead.name)
        time.sleep(p["hold"])
        self.restart(lead, "after kill -9 (leader)")
        t.join(20)

    def f_leader_kill_failover(self, p):
        self.f_leader_kill(dict(p, change="failover"))

    def f_migrate(self, p):
        Migrate(self).go(p)

    def f_migrateslots(self, p):
        Migrate(self).atomic(p)

    def f_failover_force(self, p):
        self.f_failover(dict(p, force=True))

    def f_failover(self, p):
        reps = self.replicas()
        if not reps:
            self.run.event("skip", "failover: no replica")
            return
        h, port, prim = reps[p["pick"] % len(reps)]
        args = ["CLUSTER", "FAILOVER"] + (["FORCE"] if p.get("force") else [])
        try:
            reply = rc.cmd(h.ip, port, *args, timeout=15)
        except (redis.exceptions.RedisError, OSError) as e:
            reply = "error: %s" % e
        self.run.event("topology" if reply in ("OK", True) else "refused", "%s on %s:%d (replica of %s): %s" % (
            " ".join(args), h, port, prim, reply), node=h.name)


class Migrate:
    """The `migrate` fault: one slot of MIGRATING_SLOTS moved to another primary Redis's way, as redis-cli's
    reshard does it (SETSLOT IMPORTING on the target, MIGRATING on the source, GETKEYSINSLOT + MIGRATE in
    batches, SETSLOT NODE on the target then the source) while the clients write to it; with `mid`, one side
    is killed or failed over half way, and `redis-cli --cluster fix` (the operator's tool) ends the move."""

    def __init__(self, nem):
        self.nem = nem
        self.run = nem.run
        self.c = nem.c

    def primaries(self):
        for h, port in self.c.nodes():
            if h.reachable():
                try:
                    v = self.c.view(h.ip, port, timeout=2)
                except (redis.exceptions.RedisError, OSError):
                    continue
                return [dict(n, id=k) for k, n in v.items()
                        if "master" in n["flags"] and "fail" not in ",".join(n["flags"])]
        return []

    def go(self, p):
        slot = MIGRATING_SLOTS[p["slot"]]
        prim = self.primaries()
        src = next((n for n in prim if slot in rc.slot_set(n["slots"])), None)
        others = [n for n in prim if n["id"] != (src or {}).get("id") and n["slots"]]
        if src is None or not others:
            self.run.event("skip", "migrate: no owner of slot %d or no other primary" % slot)
            return
        dst = others[p["to"] % len(others)]
        s, d = (src["ip"], src["port"]), (dst["ip"], dst["port"])
        self.run.event("migrate", "move slot %d from %s to %s%s" % (
            slot, src["addr"], dst["addr"], ", %s half way" % p["mid"] if p.get("mid") else ""))
        try:
            rc.cmd(*d, "CLUSTER", "SETSLOT", slot, "IMPORTING", src["id"], timeout=10)
            rc.cmd(*s, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst["id"], timeout=10)
            moved, mid_done = 0, not p.get("mid")
            while True:
                keys = rc.cmd(*s, "CLUSTER", "GETKEYSINSLOT", slot, 20, timeout=10)
                if not keys:
                    break
                rc.cmd(*s, "MIGRATE", dst["ip"], dst["port"], "", 0, 5000, "KEYS", *keys, timeout=15)
                moved += len(keys)
                if not mid_done and moved >= 20:
                    mid_done = True
                    self.mid(p, src, dst)
                    self.fix("after %s" % p["mid"])
                    return
            if not mid_done:
                self.mid(p, src, dst)
                self.fix("after %s" % p["mid"])
                return
            rc.cmd(*d, "CLUSTER", "SETSLOT", slot, "NODE", dst["id"], timeout=10)
            rc.cmd(*s, "CLUSTER", "SETSLOT", slot, "NODE", dst["id"], timeout=10)
            self.run.event("migrated", "slot %d now on %s (%d keys moved)" % (slot, dst["addr"], moved))
        except (redis.exceptions.RedisError, OSError) as e:
            self.run.event("migrate-failed", "moving slot %d: %s" % (slot, str(e)[:300]))
            self.fix("after a failed step")

    def atomic(self, p):
        """The `migrateslots` fault: the slot moved with CLUSTER MIGRATESLOTS (issue 18's atomic path) while the
        clients write to it; the job is awaited (bounded) and its outcome recorded. Other faults may hit it
        later in the schedule only (one fault at a time); a failed job leaves the slot on its source."""
        slot = MIGRATING_SLOTS[p["slot"]]
        prim = self.primaries()
        src = next((n for n in prim if slot in rc.slot_set(n["slots"])), None)
        others = [n for n in prim if n["id"] != (src or {}).get("id") and n["slots"]]
        if src is None or not others:
            self.run.event("skip", "migrateslots: no owner of slot %d or no other primary" % slot)
            return
        dst = others[p["to"] % len(others)]
        s = (src["ip"], src["port"])
        self.run.event("migrate", "MIGRATESLOTS slot %d from %s to %s" % (slot, src["addr"], dst["addr"]))
        try:
            rc.cmd(*s, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", slot, slot, "NODE", dst["id"], timeout=10)
            deadline, job = time.monotonic() + 60, {}
            while time.monotonic() < deadline:
                entries = rc.cmd(*s, "CLUSTER", "GETSLOTMIGRATIONS", timeout=10)
                e = entries[-1] if entries else []
                job = e if isinstance(e, dict) else dict(zip(e[0::2], e[1::2]))
                job = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                       for k, v in job.items()}
                if job.get("state") in ("success", "failed", "cancelled"):
                    break
                time.sleep(0.05)  # (a poll's pace, bounded by the deadline)
            ok = job.get("state") == "success"
            self.run.event("migrated" if ok else "migrate-failed", "MIGRATESLOTS slot %d: %s %s" % (
                slot, job.get("state", "no job"), job.get("message", "")))
        except (redis.exceptions.RedisError, OSError) as e:
            self.run.event("migrate-failed", "MIGRATESLOTS slot %d: %s" % (slot, str(e)[:300]))

    def mid(self, p, src, dst):
        side = src if p["mid"].endswith("source") else dst
        h = self.c.host_of(side["ip"])
        if p["mid"].startswith("kill"):
            self.run.event("kill", "kill -9 %s (%s of the move) for %.1fs" % (h, p["mid"][5:], p["hold"]),
                           node=h.name)
            h.kill9()
            time.sleep(p["hold"])
            self.nem.restart(h, "after kill -9 mid-move")
            return
        reps = [r for r in self.nem.replicas() if r[2] == side["addr"]]
        if not reps:
            self.run.event("skip", "no replica of %s to fail over" % side["addr"])
            return
        rh, rport, _ = reps[0]
        try:
            reply = rc.cmd(rh.ip, rport, "CLUSTER", "FAILOVER", timeout=15)
        except (redis.exceptions.RedisError, OSError) as e:
            reply = "error: %s" % e
        self.run.event("topology", "CLUSTER FAILOVER on %s:%d (replica of the move's %s %s): %s" % (
            rh, rport, p["mid"][9:], side["addr"], reply), node=rh.name)

    def fix(self, why):
        """redis-cli --cluster fix from a host that answers, once the cluster settled (bounded)."""
        self.nem.settle()
        for h in self.c.hosts:
            if not h.reachable() or not h.alive():
                continue
            try:
                r = h.h.run(["timeout", "120", "redis-cli", "--cluster", "fix", "%s:%d" % (h.ip, rc.PORTS[0]),
                             "--cluster-yes"], timeout=130, input="yes\n")
            except Exception as e:     # noqa: BLE001 (recorded; the final checks judge the outcome)
                self.run.event("fix", "redis-cli --cluster fix %s: %s" % (why, e))
                return
            # a failed fix's output, less its colours: the steps it took before the error (owner, cases,
            # DELSLOTS/SETSLOT, the keys moved) are what tells a topology window from a refusal
            out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout or "")
            self.run.event("fix", "redis-cli --cluster fix %s: exit %d%s" % (
                why, r.returncode, "" if r.returncode == 0 else ": " + out[-2000:]))
            return


def close_open_slots(run):
    """Healing: a move a fault left open is closed with redis-cli --cluster fix (at most twice)."""
    for _ in range(2):
        open_ = False
        for h, port in run.cluster.nodes():
            try:
                for line in rc.cmd(h.ip, port, "CLUSTER", "NODES", timeout=5).splitlines():
                    if "myself" in line and "[" in line:
                        open_ = True
            except (redis.exceptions.RedisError, OSError):
                continue
        if not open_:
            return
        Migrate(Nemesis(run)).fix("(heal: a slot still open)")


def heal(run):
    c = run.cluster
    nem = Nemesis(run)
    for h in c.hosts:
        if h.stopped:
            h.signal(signal.SIGCONT)
            h.stopped = False
        if h.partitioned:
            h.h.link_up()
            h.partitioned = False
    for h in c.hosts:
        if not h.alive():
            nem.restart(h, "(heal)")
    run.event("healed", "all processes up, links up: %s" % nem.describe())
    if run.migrating:
        close_open_slots(run)

    def converged():
        v = c.settled(need_replicas=True)
        if not v:
            return None
        try:
            for k, n in v.items():
                if "slave" not in n[1]:
                    continue
                pa = v[n[2]][0]
                pip, _, pport = pa.rpartition(":")
                ip, _, port = n[0].rpartition(":")
                pi = parse_info(rc.cmd(pip, int(pport), "INFO", "replication", timeout=2))
                ri = parse_info(rc.cmd(ip, int(port), "INFO", "replication", timeout=2))
                if ri.get("slave_repl_offset") != pi.get("master_repl_offset"):
                    return None
                if rc.cmd(pip, int(pport), "DEBUG", "DIGEST") != rc.cmd(ip, int(port), "DEBUG", "DIGEST"):
                    return None
        except (redis.exceptions.RedisError, OSError):
            return None
        return v
    why = ""
    try:
        view = wait_for(converged, timeout=run.opts.heal_timeout, interval=0.25,
                        what="one view, a synced replica per primary, equal digests")
    except AssertionError as e:
        view, why = None, str(e)[:500]
    run.event("converge", "converged: %s (%s)" % (view is not None, nem.describe()))
    canary = canaries(c)
    run.event("canary", "a write with WAIT 1 on every primary, PING on every node: %s" % canary)
    return read_back(run, view is not None, why, canary)


def canaries(c):
    problems = []
    try:
        v = c.view(c.hosts[0].ip, rc.PORTS[0])
    except (redis.exceptions.RedisError, OSError) as e:
        return "no view: %s" % e
    for k, n in v.items():
        if "master" not in n["flags"] or not n["slots"]:
            continue
        first = min(rc.slot_set(n["slots"]))
        key = next("canary:%d" % i for i in range(100000) if key_slot(b"canary:%d" % i) == first)
        try:
            cc = rc.client(n["ip"], n["port"], 15)
            cc.set(key, "1")
            got = cc.execute_command("WAIT", 1, 10000)
            cc.delete(key)
            cc.execute_command("WAIT", 1, 10000)
            cc.close()
            if got != 1:
                problems.append("%s: WAIT 1 answered %s" % (n["addr"], got))
        except redis.exceptions.RedisError as e:
            problems.append("%s: %s" % (n["addr"], e))
    for h, p in c.nodes():
        try:
            rc.cmd(h.ip, p, "PING", timeout=5)
        except redis.exceptions.RedisError as e:
            problems.append("%s:%d does not answer PING: %s" % (h, p, e))
    return "; ".join(problems) or "ok"


# Refusals a healthy node may answer for a moment after healing (its write lease renewing after a host's
# SIGCONT bumped the log's term, say): the read-back asks such a node again, bounded by READ_BACK_TIMEOUT.
TRANSIENT = ("CLUSTERDOWN", "TRYAGAIN", "LOADING")
READ_BACK_TIMEOUT = 10


def read_node(h, p, keys):
    """One node's view, digest and what it holds of the keys of the slots it serves (raises on any error)."""
    d = {}
    cc = rc.client(h.ip, p, 10)
    try:
        v = rc.parse_nodes(cc.execute_command("CLUSTER", "NODES"))
        me = next(n for n in v.values() if n["myself"])
        owner = v.get(me["primary"]) if "slave" in me["flags"] else me
        served = rc.slot_set(owner["slots"]) if owner else set()
        ci = rc.parse_kv(cc.execute_command("CLUSTER", "INFO"))
        d.update(view=v, served=sorted(served), primary_addr=owner["addr"] if owner is not me else None,
                 cluster_state=ci.get("cluster_state"), current_epoch=int(ci.get("cluster_current_epoch", -1)),
                 digest=cc.execute_command("DEBUG", "DIGEST"),
                 slots_reply=redis.Redis(host=h.ip, port=p, socket_timeout=10).execute_command("CLUSTER", "SLOTS"))
        d["slots_reply"] = [[x.decode() if isinstance(x, bytes) else x for x in r[:2]] +
                            [[y.decode() if isinstance(y, bytes) else y for y in n[:3]] for n in r[2:]]
                            for r in d["slots_reply"]]
        cc.execute_command("READONLY")
        mine = [(k, o.kind) for k, o in keys.items() if o.slot in served]
        values, lists = {}, {}
        for i in range(0, len(mine), 500):
            chunk = mine[i:i + 500]
            pl = cc.pipeline(transaction=False)
            for k, kind in chunk:
                if kind == "set":
                    pl.execute_command("GET", k)
                else:
                    pl.execute_command("LRANGE", k, 0, -1)
            for (k, kind), x in zip(chunk, pl.execute()):
                if kind == "set" and x is not None:
                    values[k] = x
                elif kind == "push" and x:
                    lists[k] = x
        d.update(values=values, lists=lists)
    finally:
        cc.close()
    return d


def read_back(run, converged, why, canary):
    """What every node holds of what the clients wrote (keys of the slots it serves), its view and its digest.
    A node that refuses with a transient error (TRANSIENT) is read again until it answers, for at most
    READ_BACK_TIMEOUT seconds (an event says so); one that still refuses is reported as unreadable (check (e))."""
    c = run.cluster
    final = {"converged": converged, "why": why, "canary": canary, "nodes": {}}
    keys = {}
    for o in run.ops:
        keys.setdefault(o.key, o)
    for h, p in c.nodes():
        addr = "%s:%d" % (h.ip, p)
        refused = []

        def attempt():
            try:
                return read_node(h, p, keys)
            except redis.exceptions.ResponseError as e:
                if not any(w in str(e) for w in TRANSIENT):
                    raise
                refused.append(str(e))
                return None
        try:
            d = wait_for(attempt, timeout=READ_BACK_TIMEOUT, interval=0.2, what="%s to be read" % addr)
            if refused:
                run.event("read-back", "%s refused %d time(s) before it was read (first: %s)" % (
                    addr, len(refused), refused[0][:200]), node=h.name)
        except AssertionError:
            d = {"error": "refused for %ss: %s" % (READ_BACK_TIMEOUT, refused[-1])}
        except (redis.exceptions.RedisError, OSError, StopIteration) as e:
            d = {"error": "%s: %s" % (type(e).__name__, e)}
        final["nodes"][addr] = d
    return final


def run_once(opts):
    faults = PROFILES.get(opts.faults) or tuple(f for f in opts.faults.split(",") if f)
    unknown = [f for f in faults if f not in ALL_FAULTS]
    if unknown:
        raise SystemExit("unknown cluster faults %s (known: %s)" % (unknown, ",".join(ALL_FAULTS)))
    os.makedirs(opts.out, exist_ok=True)
    schedule = draw_schedule(opts.seed, opts.duration, faults)
    run = Run(opts)
    run.migrating = any(kind in ("migrate", "migrateslots") for _, kind, _ in schedule)
    print("jepsen (cluster): seed %d, %ds, faults %s, %d scheduled, ack %s, out %s" % (
        opts.seed, opts.duration, ",".join(faults), len(schedule), opts.ack, opts.out), flush=True)
    run.cluster = c = rc.RCluster(opts, os.path.join(opts.out, "work"))
    nem = Nemesis(run)
    clients = []
    final = None
    try:
        c.create()
        run.t0 = time.monotonic()
        run.event("setup", "3 hosts x 2 shards, --cluster-replicas 1; groups %s; %s" % (c.ranges, nem.describe()))
        if not run.refresh_slots():
            raise RuntimeError("no node answers CLUSTER SLOTS")
        clients = [Client(run, i) for i in range(opts.clients)]
        drive.play(run, clients, schedule, nem, opts.duration, opts.op_timeout)
        final = heal(run)
    except Exception:
        run.event("harness-error", traceback.format_exc())
        raise
    finally:
        run.stop_clients.set()
        drive.teardown(c, c.hosts, opts.out)
        with open(os.path.join(opts.out, "history.json"), "w") as f:
            json.dump({"mode": "cluster", "seed": opts.seed, "duration": opts.duration, "schedule": schedule,
                       "events": run.events, "final": final, "ops": [o.to_json() for o in run.ops]}, f,
                      default=list)
    ok, lines, summary = cchecker.check(run.ops, run.events, final)
    summary.update(seed=opts.seed, duration=opts.duration, faults=",".join(faults), mode="cluster", ack=opts.ack)
    drive.report(opts.out, ok, lines, summary, run.events,
                 "RUVIO_BIN=%s python3 tests/jepsen/run.py --mode cluster --seed %d --duration %d --faults %s "
                 "--ack %s" % (rc.cl.netns_bin(), opts.seed, opts.duration, ",".join(faults), opts.ack))
    return ok, summary
