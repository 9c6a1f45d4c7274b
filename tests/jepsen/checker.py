"""The checker of the Jepsen harness: given the history of operations (what each client sent, what it was
answered, and the node's replication state read right after), the operator's events and what every node holds
after healing, it verifies the invariants listed in tests/jepsen/README.md and explains each failure.

Pure functions over plain data, so a history written by run.py can be checked again offline:
    python3 tests/jepsen/checker.py DIR/history.json"""

import json
import math
import sys

ZERO_ID = "0" * 40
DEFINITE = ("READONLY", "NOREPLICAS", "MISCONF", "MASTERDOWN", "EXECABORT", "LOADING", "NOSCRIPT", "WRONGTYPE")


class Op:
    """One client operation. st: ok (acknowledged), fail (refused with an error that means not applied), unknown
    (timeout, connection lost, other error: it may or may not have happened). role/replid/epoch/lsn come from
    `INFO replication` read on the same connection right after the write (lsn: master_repl_offset then, the
    write's LSN or an upper bound of it)."""
    __slots__ = ("i", "c", "kind", "keys", "val", "node", "t0", "t1", "st", "err", "want", "got",
                 "role", "replid", "epoch", "lsn")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def to_json(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def durable(self, durability):
        """Acknowledged with `durability always` and WAIT answered with at least the replicas asked for."""
        return (self.st == "ok" and durability == "always" and (self.want or 0) >= 1 and self.got is not None
                and self.got >= self.want)

    def short(self):
        return ("#%d c%d %s %s on %s at t=%.2fs: %s%s, WAIT %s->%s, role=%s epoch=%s replid=%s lsn=%s" %
                (self.i, self.c, self.kind, ",".join(self.keys), self.node, self.t1 or self.t0, self.st,
                 " (%s)" % self.err if self.err else "", self.want, self.got, self.role, self.epoch,
                 (self.replid or "?")[:8], self.lsn))


def error_is_definite(err):
    """An error reply (text, or redis-py's exception, which drops the code of the errors it maps to a class)
    that means the write was not applied (Redis's refusals)."""
    if type(err).__name__ in ("ReadOnlyError", "ExecAbortError", "BusyLoadingError", "NoScriptError"):
        return True
    return str(err).split(" ", 1)[0].upper() in DEFINITE


def in_history(replid, lsn, final_replid, lineage):
    """True when the write (replid, lsn) belongs to the final primary's history: its replid is the final one,
    or an ancestor reached through (replid2, second_repl_offset) links and lsn is below every fork point."""
    if replid is None or lsn is None:
        return False
    cur, limit, seen = final_replid, math.inf, set()
    while cur and cur not in seen:
        if cur == replid:
            return lsn < limit
        seen.add(cur)
        link = lineage.get(cur)
        if not link:
            return False
        cur, fork = link
        limit = min(limit, fork)
    return False


def near(events, t, window=6.0):
    return [e for e in events if abs(e["t"] - t) <= window]


def check(ops, events, final, durability, lineage, max_list=15):
    """final: {"primary": name, "converged": bool, "canary": str, "nodes": {name: {"digest", "dbsize", "info",
    "values": {key: value}}}}. Returns (ok, report lines, summary dict)."""
    nodes = final["nodes"]
    names = sorted(nodes)
    prim = final.get("primary")
    final_replid = (nodes.get(prim, {}).get("info") or {}).get("master_replid")
    failures = []
    lines = []
    summary = {"ops": len(ops), "ok": 0, "fail": 0, "unknown": 0, "durable": 0, "events": {}}
    for e in events:
        summary["events"][e["kind"]] = summary["events"].get(e["kind"], 0) + 1
    for o in ops:
        summary[o.st] = summary.get(o.st, 0) + 1
        if o.durable(durability):
            summary["durable"] += 1

    # a node that could not be read is reported once, under (c), and left out of the per-write checks
    readable = [n for n in names if nodes[n].get("values") is not None]

    def present(o, n):
        vals = nodes[n].get("values")
        return vals is not None and all(vals.get(k) == o.val for k in o.keys)

    def absent(o, n):
        vals = nodes[n].get("values")
        return vals is not None and all(k not in vals for k in o.keys)

    def lost_report(title, lost):
        lines.append("%s: %d" % (title, len(lost)))
        shown, ev = lost[:max_list], []
        for o, missing_on in shown:
            lines.append("    %s; missing on %s" % (o.short(), ",".join(missing_on)))
            ev += [e for e in near(events, o.t1 or o.t0) if e not in ev]
        if len(lost) > len(shown):
            t = [o.t1 or o.t0 for o, _ in lost]
            lines.append("    ... %d more, acknowledged between t=%.2fs and t=%.2fs" % (len(lost) - len(shown), min(t),
                                                                                     max(t)))
        if ev:
            lines.append("    faults and operator steps within 6 s of those shown:")
            lines.extend("        t=%.2fs %s" % (e["t"], e["desc"]) for e in sorted(ev, key=lambda e: e["t"]))

    # (a) durable acknowledgements survive
    lost = [(o, [n for n in readable if not present(o, n)]) for o in ops if o.durable(durability)]
    lost = [x for x in lost if x[1]]
    summary["durable_lost"] = len(lost)
    if lost:
        failures.append("a")
        lost_report("(a) FAIL writes acknowledged under durability always + WAIT satisfied, missing", lost)
    else:
        lines.append("(a) ok: %d durable acknowledged writes all present on every node" % summary["durable"])

    # (b) acknowledged writes of the current history are on every node
    hist = [o for o in ops if o.st == "ok" and o.role == "master" and in_history(o.replid, o.lsn, final_replid,
                                                                                   lineage)]
    in_hist = set(hist)
    outside = [o for o in ops if o.st == "ok" and o not in in_hist]
    lost = [(o, [n for n in readable if not present(o, n)]) for o in hist]
    lost = [x for x in lost if x[1]]
    summary["history_acked"] = len(hist)
    summary["history_lost"] = len(lost)
    summary["acked_outside_history"] = len(outside)
    summary["acked_outside_history_lost"] = sum(1 for o in outside if not all(present(o, n) for n in readable))
    if lost:
        failures.append("b")
        lost_report("(b) FAIL writes acknowledged in the final history (replid %s and its ancestors), missing" %
                    (final_replid or "?")[:8], lost)
    else:
        lines.append("(b) ok: %d acknowledged writes of the final history present on every node (%d acknowledged "
                     "outside it, e.g. by a deposed primary or with an unknown position; %d of those gone)" %
                     (len(hist), len(outside), summary["acked_outside_history_lost"]))

    # (c) all nodes hold the same data
    digests = {n: nodes[n].get("digest") for n in names}
    sizes = {n: nodes[n].get("dbsize") for n in names}
    diff = []
    for o in ops:
        seen = set(tuple(nodes[n]["values"].get(k) for k in o.keys) for n in readable)
        if len(seen) > 1:
            diff.append(o)
    if len(set(digests.values())) != 1 or None in digests.values() or not final.get("converged") or diff:
        failures.append("c")
        for n in names:
            if n not in readable:
                lines.append("(c) FAIL %s could not be read after healing: %s" % (n, nodes[n].get("error")))
        lines.append("(c) FAIL nodes differ (converged=%s): digests %s, dbsize %s; %d written keys differ among the "
                     "nodes read" %
                     (final.get("converged"), digests, sizes, len(diff)))
        for o in diff[:max_list]:
            lines.append("    %s; holders: %s" % (o.short(), ",".join(n for n in readable if present(o, n)) or "none"))
    else:
        lines.append("(c) ok: %d nodes, digest %s, %s keys" % (len(names), digests[names[0]], sizes[names[0]]))

    # (d) no two nodes accepted writes in one epoch that both survive (a node that continues under a new replid
    # in the same epoch, e.g. after an unclean restart, is one node: listed, not a failure)
    by_epoch = {}
    for o in ops:
        if o.st == "ok" and o.role == "master" and o.epoch is not None:
            d = by_epoch.setdefault(o.epoch, {}).setdefault(o.node, {"replids": set(), "survive": 0, "acked": 0})
            d["replids"].add(o.replid)
            d["acked"] += 1
            if prim in nodes and present(o, prim):
                d["survive"] += 1
    bad = {e: h for e, h in by_epoch.items() if sum(1 for x in h.values() if x["survive"]) > 1}
    shared = {e: h for e, h in by_epoch.items() if len(h) > 1 or any(len(x["replids"]) > 1 for x in h.values())}
    summary["epochs"] = len(by_epoch)
    summary["epochs_with_two_writers"] = sum(1 for h in by_epoch.values() if len(h) > 1)
    summary["epochs_with_two_histories"] = len(shared)
    if bad:
        failures.append("d")
        lines.append("(d) FAIL epochs in which two nodes accepted writes that both survive: %d" % len(bad))
    else:
        lines.append("(d) ok: %d epochs with acknowledged writes, none with writes of two nodes surviving%s" %
                     (len(by_epoch), " (%d epochs saw two writers or histories)" % len(shared) if shared else ""))
    for e, h in sorted(shared.items())[:max_list]:
        lines.append("    epoch %s: %s" % (e, "; ".join("%s as replid %s: %d acked, %d survive" % (
            n, ",".join(sorted((r or "?")[:8] for r in x["replids"])), x["acked"], x["survive"])
            for n, x in sorted(h.items()))))

    # (e) refused writes never appear
    ghost = [(o, [n for n in readable if not absent(o, n)]) for o in ops if o.st == "fail"]
    ghost = [x for x in ghost if x[1]]
    summary["refused_present"] = len(ghost)
    if ghost:
        failures.append("e")
        lines.append("(e) FAIL writes answered with a refusal (READONLY, NOREPLICAS, MISCONF, EXECABORT, ...) "
                     "present: %d" % len(ghost))
        for o, on in ghost[:max_list]:
            lines.append("    %s; present on %s" % (o.short(), ",".join(on)))
    else:
        lines.append("(e) ok: %d refused writes, none present" % summary["fail"])

    # (f) transactions are all or nothing, (g) no value nobody wrote
    torn, wrong = [], []
    for o in ops:
        for n in names:
            vals = nodes[n].get("values")
            if vals is None:
                continue
            got = [vals.get(k) for k in o.keys]
            if any(v is not None and v != o.val for v in got):
                wrong.append((o, n))
            if o.kind == "txn" and len(set(v == o.val for v in got)) > 1:
                torn.append((o, n))
    if torn:
        failures.append("f")
        lines.append("(f) FAIL transactions present in part: %d" % len(torn))
        for o, n in torn[:max_list]:
            lines.append("    %s on %s" % (o.short(), n))
    else:
        lines.append("(f) ok: every MULTI/EXEC all or nothing on every node")
    extra = {n: (nodes[n].get("dbsize") or 0) - sum(1 for v in (nodes[n].get("values") or {}).values())
             for n in names}
    if wrong or any(v > 0 for v in extra.values()):
        failures.append("g")
        lines.append("(g) FAIL values or keys nobody wrote: %d wrong values; keys beyond the written ones per "
                     "node %s" % (len(wrong), extra))
        for o, n in wrong[:max_list]:
            lines.append("    %s on %s holds %s" % (o.short(), n, [nodes[n]["values"].get(k) for k in o.keys]))
    else:
        lines.append("(g) ok: no key or value that no client wrote")

    # (h) after healing the cluster serves a replicated write
    if final.get("canary") != "ok":
        failures.append("h")
        lines.append("(h) FAIL after healing (SET + WAIT 2 on the primary %s, PING on every node): %s" % (
            prim, final.get("canary")))
    else:
        lines.append("(h) ok: after healing the primary %s took a write that both replicas acknowledged, every node "
                     "answers" % prim)

    # (i) a restarted node comes back in the role the operator gave it (REPLICAOF + CONFIG REWRITE, FAILOVER)
    lost_roles = [e for e in events if e["kind"] == "role-lost"]
    summary["repairs"] = sum(1 for e in events if e["kind"] == "repair")
    if lost_roles:
        failures.append("i")
        lines.append("(i) FAIL nodes restarted in another role than they had: %d" % len(lost_roles))
        for e in lost_roles[:max_list]:
            lines.append("    t=%.2fs %s" % (e["t"], e["desc"]))
    else:
        lines.append("(i) ok: every restarted node came back in its role (%d operator repairs in all)" %
                     summary["repairs"])
    summary["failed"] = failures
    return not failures, lines, summary


def load(path):
    with open(path) as f:
        h = json.load(f)
    ops = [Op(**o) for o in h["ops"]]
    lineage = {k: tuple(v) for k, v in h["lineage"].items()}
    return ops, h["events"], h["final"], h["durability"], lineage


if __name__ == "__main__":
    ops, events, final, durability, lineage = load(sys.argv[1])
    ok, lines, summary = check(ops, events, final, durability, lineage)
    print("\n".join(lines))
    print(json.dumps(summary, default=str))
    sys.exit(0 if ok else 1)
