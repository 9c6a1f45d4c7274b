"""The checker of the harness's cluster mode (README.md, "Cluster mode"): pure functions over the history the
clients recorded and what every node holds after healing, so a history can be checked again offline:
    python3 tests/jepsen/cchecker.py DIR/history.json"""

import json
import sys
from collections import Counter

NSLOTS = 16384
# error replies that mean the write was not applied: a cluster's refusals and redirections besides
# replication's (checker.DEFINITE)
DEFINITE = ("READONLY", "NOREPLICAS", "MISCONF", "MASTERDOWN", "LOADING", "WRONGTYPE", "MOVED", "ASK",
            "TRYAGAIN", "CLUSTERDOWN", "CROSSSLOT")


class Op:
    """One write. kind: set (a unique key) or push (RPUSH of a unique element to a shared list). st: ok (the
    write's own reply was OK / a length), fail (refused: not applied), unknown. got: WAIT 1's answer. epoch:
    the node's config epoch (`CLUSTER INFO` cluster_my_epoch); repl_epoch, replid, lsn, role: its `INFO
    replication`; both read right after the write on the same connection.
    acked: what counts as acknowledged (ok, and WAIT >= 1 or, with --ack sync, the reply alone)."""
    __slots__ = ("i", "c", "kind", "key", "val", "slot", "group", "node", "t0", "t1", "st", "err", "got", "role",
                 "epoch", "repl_epoch", "replid", "lsn", "acked")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def to_json(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def short(self):
        return ("#%s c%s %s %s=%s slot %s on %s t=%.2f..%.2fs: %s%s, WAIT->%s, role=%s config epoch=%s replid=%s "
                "lsn=%s" %
                (self.i, self.c, self.kind, self.key, self.val, self.slot, self.node, self.t0 or 0, self.t1 or 0,
                 self.st, " (%s)" % self.err if self.err else "", self.got, self.role, self.epoch,
                 (self.replid or "?")[:8], self.lsn))


def error_is_definite(err):
    if type(err).__name__ in ("ReadOnlyError", "BusyLoadingError", "ClusterDownError", "MovedError", "AskError",
                              "TryAgainError"):
        return True
    return str(err).split(" ", 1)[0].upper() in DEFINITE


def near(events, t, window=6.0):
    return [e for e in events if abs(e["t"] - t) <= window]


def topology_problems(final):
    """Every node answered; one CLUSTER NODES view (less `myself` and link state) and one CLUSTER SLOTS on all
    of them; every slot owned by exactly one primary; the primaries' config epochs distinct; cluster_state ok;
    every primary has a replica, on another host."""
    out = []
    nodes = final.get("nodes", {})
    views, slots_replies = {}, {}
    for addr, d in sorted(nodes.items()):
        if d.get("error"):
            out.append("%s could not be read: %s" % (addr, d["error"]))
            continue
        views[addr] = json.dumps({k: (n["addr"], n["flags"], n["primary"], n["epoch"], n["slots"])
                                  for k, n in sorted(d["view"].items())}, sort_keys=True)
        slots_replies[addr] = json.dumps(sorted(map(json.dumps, d.get("slots_reply") or [])))
        if d.get("cluster_state") != "ok":
            out.append("%s: cluster_state %s" % (addr, d.get("cluster_state")))
    if len(set(views.values())) > 1:
        out.append("the nodes disagree on CLUSTER NODES: %s" % "; ".join(
            "%s sees %s" % (a, v) for a, v in sorted(views.items())))
    if len(set(slots_replies.values())) > 1:
        out.append("the nodes disagree on CLUSTER SLOTS")
    if not views:
        return out + ["no node could be read"]
    view = json.loads(next(iter(views.values())))
    owner = {}
    prim = {k: n for k, n in view.items() if "master" in n[1]}
    for k, n in prim.items():
        for r in n[4]:
            if r.startswith("["):
                continue
            a, _, b = r.partition("-")
            for s in range(int(a), int(b or a) + 1):
                owner.setdefault(s, []).append(k)
    multi = [s for s, o in owner.items() if len(o) > 1]
    if multi:
        out.append("%d slots owned by two primaries (e.g. slot %d: %s)" % (len(multi), multi[0], owner[multi[0]]))
    if len(owner) != NSLOTS:
        out.append("%d slots have no primary" % (NSLOTS - len(owner)))
    eps = [n[3] for n in prim.values() if n[4]]
    if len(eps) != len(set(eps)):
        out.append("primaries share a config epoch: %s" % {k[:8]: n[3] for k, n in prim.items()})
    for k, n in prim.items():
        if not n[4]:
            continue
        reps = [r for r, m in view.items() if m[2] == k and "slave" in m[1]]
        if not reps:
            out.append("primary %s (%s) has no replica" % (k[:8], n[0]))
        for r in reps:
            if view[r][0].rpartition(":")[0] == n[0].rpartition(":")[0]:
                out.append("replica %s (%s) is on its primary's host (%s)" % (r[:8], view[r][0], n[0]))
    return out


def check(ops, events, final, max_list=15):
    """Returns (ok, report lines, summary). The invariants are listed in README.md ("Cluster mode")."""
    lines, failed = [], []
    ops = [o if isinstance(o, Op) else Op(**o) for o in ops]
    nodes = final.get("nodes", {}) if final else {}
    # which nodes serve each group at the end: the owning primary and its replicas
    readable = {a: d for a, d in nodes.items() if not d.get("error")}

    def holders(slot):
        return [a for a, d in readable.items() if slot in set(d.get("served") or [])]

    def report(name, title, bad):
        if bad:
            failed.append(name)
            lines.append("FAIL (%s) %s: %d" % (name, title, len(bad)))
            for o, why in bad[:max_list]:
                lines.append("   %s: %s" % (o.short() if isinstance(o, Op) else o, why))
                if isinstance(o, Op):
                    for e in near(events, o.t1 or o.t0 or 0):
                        lines.append("      [%7.2fs] %s" % (e["t"], e["desc"]))
        else:
            lines.append("ok   (%s) %s" % (name, title))

    counters = {}     # (node, list key) -> Counter of its elements: a long run's lists hold thousands

    def count(d, o):
        if o.kind == "set":
            return 1 if (d.get("values") or {}).get(o.key) == o.val else 0
        k = (id(d), o.key)
        if k not in counters:
            counters[k] = Counter((d.get("lists") or {}).get(o.key, []))
        return counters[k][o.val]

    # (a) every acknowledged write, exactly once, on the primary and every replica of its slot
    bad = []
    for o in ops:
        if not o.acked:
            continue
        hs = holders(o.slot)
        if not hs:
            bad.append((o, "no readable node serves slot %s" % o.slot))
        for a in hs:
            n = count(readable[a], o)
            if n != 1:
                bad.append((o, "%s holds it %d times" % (a, n)))
    report("a", "every acknowledged write present exactly once on every node of its slot", bad)

    # (b) nothing twice, acknowledged or not: a list element appears at most once on any node
    bad = []
    for a, d in readable.items():
        for k, vs in (d.get("lists") or {}).items():
            dup = sorted(v for v, n in Counter(vs).items() if n > 1)
            if dup:
                bad.append(("%s %s" % (a, k), "elements twice: %s" % dup[:10]))
    report("b", "no write applied twice", bad)

    # (c) a write answered with a refusal is nowhere; (d) no value that no client wrote
    bad = []
    for o in ops:
        if o.st == "fail":
            for a, d in readable.items():
                if count(d, o):
                    bad.append((o, "refused, yet present on %s" % a))
    report("c", "no refused write present", bad)
    written = {(o.key, o.val) for o in ops if o.st != "fail"}
    bad = []
    for a, d in readable.items():
        for k, v in (d.get("values") or {}).items():
            if (k, v) not in written:
                bad.append(("%s %s=%s" % (a, k, v), "no client wrote it"))
        for k, vs in (d.get("lists") or {}).items():
            for v in vs:
                if (k, v) not in written:
                    bad.append(("%s %s" % (a, k), "element %s: no client wrote it" % v))
    report("d", "no value that no client wrote", bad)

    # (e) one topology: every slot owned by exactly one primary, the same CLUSTER NODES/SLOTS on every node
    report("e", "one topology on every node, each slot with one primary, distinct config epochs",
           [(p, "") for p in (topology_problems(final) if final else ["no final state"])])

    # (f) convergence: each replica holds what its primary holds (DEBUG DIGEST)
    bad = []
    for a, d in readable.items():
        p = d.get("primary_addr")
        if p and p in readable and readable[p].get("digest") != d.get("digest"):
            bad.append((a, "digest %s, its primary %s has %s" % (d.get("digest"), p, readable[p].get("digest"))))
    if final and not final.get("converged"):
        bad.append(("cluster", "did not converge within the heal timeout: %s" % final.get("why")))
    report("f", "replicas converged with their primaries", bad)

    # (g) no two primaries took writes for one shard group in overlapping windows: writes answered OK by two
    # nodes in one epoch, or a write started on a node after another node had answered one at a higher epoch
    bad = []
    by_group = {}
    for o in ops:
        if o.st == "ok" and o.epoch is not None and o.group is not None and o.group >= 0:
            by_group.setdefault(o.group, []).append(o)
    for g, gops in by_group.items():
        first_at = {}             # (node, epoch) -> earliest end of a write answered OK there
        nodes_at = {}
        for o in gops:
            nodes_at.setdefault(o.epoch, set()).add(o.node)
            k = (o.node, o.epoch)
            first_at[k] = min(first_at.get(k, 1e18), o.t1)
        for e, ns in nodes_at.items():
            if len(ns) > 1:
                bad.append(("group %d" % g, "epoch %s: writes answered OK by %s" % (e, sorted(ns))))
        for o in gops:
            newer = [(k, t) for k, t in first_at.items() if k[0] != o.node and k[1] > o.epoch and t < o.t0]
            if newer:
                (n, e), t = min(newer, key=lambda x: x[1])
                bad.append((o, "started after %s answered a write at epoch %s (t=%.2fs)" % (n, e, t)))
    report("g", "no shard group with two primaries taking writes at once", bad)

    # (h) live after healing: a write with WAIT 1 to every primary; every node answers
    canary = final.get("canary") if final else "no final state"
    report("h", "the cluster takes writes after healing", [] if canary == "ok" else [("canary", canary)])

    # (i) the harness could do what it meant to (a host that did not restart, a create that failed)
    bad = [(e["desc"], "") for e in events if e["kind"] in ("start-failed", "harness-error")]
    report("i", "every host restarted", bad)

    # (j) a topology change that was answered is never undone: every epoch a BUMPEPOCH answered (BUMPED n) is at
    # most the final current epoch of every node (the leader may have been killed right after answering)
    bad = []
    for e in events:
        if e.get("epoch") is not None:
            for a, d in readable.items():
                if d.get("current_epoch", -1) < e["epoch"]:
                    bad.append((e["desc"], "%s ends at current epoch %s" % (a, d.get("current_epoch"))))
    report("j", "no answered topology change undone", bad)

    acked = [o for o in ops if o.acked]
    summary = {"ops": len(ops), "ok": sum(o.st == "ok" for o in ops), "acked": len(acked),
               "fail": sum(o.st == "fail" for o in ops), "unknown": sum(o.st == "unknown" for o in ops),
               "topology_changes": sum(e["kind"] == "topology" for e in events),
               "refused_changes": sum(e["kind"] == "refused" for e in events), "failed": failed}
    return not failed, lines, summary


def load(path):
    with open(path) as f:
        h = json.load(f)
    return h["ops"], h["events"], h["final"]


if __name__ == "__main__":
    ok, lines, summary = check(*load(sys.argv[1]))
    print("\n".join(lines))
    print(json.dumps(summary))
    sys.exit(0 if ok else 1)
