"""The cluster-mode checker (cchecker.py) on hand-made histories: each invariant holds on a clean one and fails on
one that breaks it. No namespaces; milliseconds. (ctest jepsen_parts.)"""

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cchecker import Op, check  # noqa: E402

A, B, C, D, E, F = ("%s" % x * 40 for x in "abcdef")
ADDR = {A: "10.0.0.1:7000", B: "10.0.0.2:7000", C: "10.0.0.3:7000", D: "10.0.0.2:7001", E: "10.0.0.3:7001",
        F: "10.0.0.1:7001"}
SLOTS = {A: ["0-5460"], B: ["5461-10922"], C: ["10923-16383"]}
REPLICA_OF = {D: A, E: B, F: C}


def view(epochs=None):
    v = {}
    for i, (k, addr) in enumerate(sorted(ADDR.items())):
        prim = k in SLOTS
        v[k] = {"addr": addr, "ip": addr.split(":")[0], "port": int(addr.split(":")[1]),
                "flags": ["master"] if prim else ["slave"], "primary": "-" if prim else REPLICA_OF[k],
                "epoch": (epochs or {}).get(k, i + 1), "slots": SLOTS.get(k, []), "myself": False, "link": "connected"}
    return v


def final(data, epochs=None, canary="ok", digests=None):
    """data: {primary id: {"values": {...}, "lists": {...}}}, copied to its replica."""
    nodes = {}
    for k, addr in ADDR.items():
        owner = k if k in SLOTS else REPLICA_OF[k]
        a, _, b = SLOTS[owner][0].partition("-")
        d = copy.deepcopy(data.get(owner, {}))
        d.setdefault("values", {})
        d.setdefault("lists", {})
        d.update(view=view(epochs), served=list(range(int(a), int(b) + 1)), cluster_state="ok", current_epoch=6,
                 digest=(digests or {}).get(addr, owner[:4]), slots_reply=[[0, 1]],
                 primary_addr=None if owner == k else ADDR[owner])
        nodes[addr] = d
    return {"converged": True, "canary": canary, "nodes": nodes}


def op(i, kind="set", key="k", val=None, slot=100, group=0, node=ADDR[A], st="ok", got=1, epoch=1, t=None):
    t = i if t is None else t
    return Op(i=i, c=0, kind=kind, key=key, val=val or "v%d" % i, slot=slot, group=group, node=node, t0=t,
              t1=t + 0.1, st=st, err=None if st == "ok" else "CLUSTERDOWN The cluster is down", got=got,
              epoch=epoch, acked=st == "ok" and got >= 1)


def run(ops, fin):
    ok, lines, summary = check(ops, [{"t": 0.5, "kind": "kill", "desc": "kill -9 n1"}], fin)
    return ok, "\n".join(lines), summary


def test_clean_history_passes():
    ops = [op(0, key="k0"), op(1, "push", "l", "e1"), op(2, "push", "l", "e2", got=0), op(3, key="k3", st="fail")]
    ok, text, s = run(ops, final({A: {"values": {"k0": "v0"}, "lists": {"l": ["e1", "e2"]}}}))
    assert ok, text
    assert s["acked"] == 2 and s["fail"] == 1


def test_lost_acknowledged_write_fails_a():
    ok, text, _ = run([op(0, key="k0")], final({A: {}}))
    assert not ok and "FAIL (a)" in text and "k0" in text


def test_write_missing_on_the_replica_fails_a():
    fin = final({A: {"values": {"k0": "v0"}}})
    fin["nodes"][ADDR[D]]["values"] = {}
    ok, text, _ = run([op(0, key="k0")], fin)
    assert not ok and "FAIL (a)" in text and ADDR[D] in text


def test_element_twice_fails_a_and_b():
    ok, text, _ = run([op(0, "push", "l", "e1")], final({A: {"lists": {"l": ["e1", "e1"]}}}))
    assert not ok and "FAIL (a)" in text and "FAIL (b)" in text


def test_refused_write_present_fails_c():
    ok, text, _ = run([op(0, key="k0", st="fail")], final({A: {"values": {"k0": "v0"}}}))
    assert not ok and "FAIL (c)" in text


def test_value_nobody_wrote_fails_d():
    ok, text, _ = run([], final({A: {"values": {"zz": "x"}}}))
    assert not ok and "FAIL (d)" in text


def test_views_that_differ_or_share_an_epoch_fail_e():
    fin = final({})
    fin["nodes"][ADDR[B]]["view"][A]["slots"] = []
    ok, text, _ = run([], fin)
    assert not ok and "FAIL (e)" in text and "disagree" in text
    ok, text, _ = run([], final({}, epochs={A: 3, B: 3}))
    assert not ok and "FAIL (e)" in text and "share a config epoch" in text


def test_replica_behind_fails_f():
    ok, text, _ = run([], final({}, digests={ADDR[D]: "other"}))
    assert not ok and "FAIL (f)" in text


def test_two_writers_fail_g():
    # one group, two nodes answering writes in one epoch
    ok, text, _ = run([op(0, key="k0", node=ADDR[A], epoch=5), op(1, key="k1", node=ADDR[D], epoch=5, got=0)],
                      final({A: {"values": {"k0": "v0"}}}))
    assert not ok and "FAIL (g)" in text
    # the old primary answering a write after the new one (higher epoch) had answered one
    ok, text, _ = run([op(0, key="k0", node=ADDR[D], epoch=7, got=0, t=1),
                       op(1, key="k1", node=ADDR[A], epoch=1, got=0, t=3)], final({}))
    assert not ok and "FAIL (g)" in text and "started after" in text
    # the other order (a failover) is fine
    ok, text, _ = run([op(0, key="k0", node=ADDR[A], epoch=1, got=0, t=1),
                       op(1, key="k1", node=ADDR[D], epoch=7, got=0, t=3)], final({}))
    assert ok, text


def test_dead_canary_fails_h():
    ok, text, _ = run([], final({}, canary="10.0.0.1:7000: CLUSTERDOWN"))
    assert not ok and "FAIL (h)" in text


def test_undone_bumpepoch_fails_j():
    ev = {"t": 1, "kind": "change-reply", "desc": "CLUSTER BUMPEPOCH answered BUMPED 7", "epoch": 7}
    ok, lines, _ = check([], [ev], final({}))
    assert not ok and "FAIL (j)" in "\n".join(lines)
    ok, lines, _ = check([], [dict(ev, epoch=6)], final({}))
    assert ok, lines


class _Host:
    ip, name = "10.0.0.1", "n1"


class _Run:
    """What crun.read_back uses of a run: one node, no ops, the events it records."""

    def __init__(self):
        self.ops, self.events = [], []
        self.cluster = type("C", (), {"nodes": lambda _self: [(_Host(), 7000)]})()

    def event(self, kind, desc, **kw):
        self.events.append(dict(kind=kind, desc=desc, **kw))


def _refusing(err):
    import redis

    def read_node(h, p, keys):
        raise redis.exceptions.ResponseError(err)
    return read_node


def test_read_back_asks_a_refusing_node_again_then_reports_it(monkeypatch):
    import crun
    import redis
    answers = [redis.exceptions.ResponseError("CLUSTERDOWN The cluster is down")] * 2 + [{"values": {}}]

    def read_node(h, p, keys):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a
    monkeypatch.setattr(crun, "read_node", read_node)
    r = _Run()
    got = crun.read_back(r, True, "", "ok")
    assert got["nodes"]["10.0.0.1:7000"] == {"values": {}}
    assert [e["kind"] for e in r.events] == ["read-back"] and "refused 2 time(s)" in r.events[0]["desc"]
    # a refusal that lasts past the bound: unreadable, so check (e) fails
    monkeypatch.setattr(crun, "READ_BACK_TIMEOUT", 0.3)
    monkeypatch.setattr(crun, "read_node", _refusing("CLUSTERDOWN The cluster is down"))
    got = crun.read_back(_Run(), True, "", "ok")
    assert "refused for" in got["nodes"]["10.0.0.1:7000"]["error"]
    ok, text, _ = run([], got)
    assert not ok and "FAIL (e)" in text and "could not be read" in text
    # any other error is not asked again
    monkeypatch.setattr(crun, "read_node", _refusing("ERR unknown command"))
    got = crun.read_back(_Run(), True, "", "ok")
    assert got["nodes"]["10.0.0.1:7000"]["error"] == "ResponseError: ERR unknown command"
