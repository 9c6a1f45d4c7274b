"""The checker on hand-made histories: each invariant holds on a clean one and fails, with the operations named,
on one that breaks it. No namespaces needed; milliseconds."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checker import Op, check, in_history  # noqa: E402

R1, R2, R3 = "a" * 40, "b" * 40, "c" * 40


def op(i, key, st="ok", node="n1", want=1, got=1, epoch=0, replid=R1, lsn=None, kind="set", keys=None):
    return Op(i=i, c=0, kind=kind, keys=keys or [key], val="v" + key, node=node, t0=i, t1=i + 0.1, st=st,
              err=None if st == "ok" else "READONLY x", want=want, got=got, role="master", replid=replid,
              epoch=epoch, lsn=i + 1 if lsn is None else lsn)


def final(values, digests=None, primary="n1", replid=R1, canary="ok", converged=True, dbsize=None):
    nodes = {}
    for n, vals in values.items():
        nodes[n] = {"digest": (digests or {}).get(n, "d"), "dbsize": len(vals) if dbsize is None else dbsize,
                    "info": {"master_replid": replid}, "values": vals}
    return {"primary": primary, "converged": converged, "canary": canary, "nodes": nodes}


def same(vals):
    return {n: dict(vals) for n in ("n1", "n2", "n3")}


def run(ops, fin, lineage=None, durability="always"):
    ok, lines, summary = check(ops, [{"t": 0.5, "kind": "kill", "desc": "kill -9 n1"}], fin, durability,
                               lineage or {})
    return ok, "\n".join(lines), summary


def test_clean_history_passes():
    ops = [op(0, "k0"), op(1, "k1", want=0, got=None), op(2, "k2", st="fail")]
    ok, text, s = run(ops, final(same({"k0": "vk0", "k1": "vk1"})))
    assert ok, text
    assert s["durable"] == 1 and s["history_acked"] == 2 and s["failed"] == []


def test_a_durable_write_lost():
    ops = [op(0, "k0"), op(1, "k1")]
    ok, text, s = run(ops, final(same({"k0": "vk0"})))
    assert not ok and "a" in s["failed"] and s["durable_lost"] == 1
    assert "#1 c0 set k1 on n1" in text and "missing on n1,n2,n3" in text and "kill -9 n1" in text


def test_a_not_durable_under_everysec_or_without_wait():
    ops = [op(0, "k0", want=0, got=None), op(1, "k1", want=2, got=1)]
    assert run(ops, final(same({})), durability="always")[2]["durable"] == 0
    assert run([op(0, "k0")], final(same({})), durability="everysec")[2]["durable"] == 0


def test_b_history_lost_on_one_node_and_c_diverged():
    ops = [op(0, "k0", want=0, got=None)]
    vals = same({"k0": "vk0"})
    del vals["n2"]["k0"]
    ok, text, s = run(ops, final(vals, digests={"n1": "x", "n2": "y", "n3": "x"}))
    assert set(s["failed"]) >= {"b", "c"} and "missing on n2" in text and "holders: n1,n3" in text


def test_b_lineage_through_replid2():
    # R1 up to LSN 10 is shared with R2 (promoted at second_repl_offset 11), and R2 with R3 up to 20
    lineage = {R2: (R1, 11), R3: (R2, 21)}
    assert in_history(R1, 10, R3, lineage) and not in_history(R1, 11, R3, lineage)
    assert in_history(R2, 20, R3, lineage) and not in_history(R2, 21, R3, lineage)
    assert in_history(R3, 500, R3, lineage) and not in_history("d" * 40, 1, R3, lineage)
    assert not in_history(R1, None, R3, lineage)
    ops = [op(0, "k0", want=0, replid=R1, lsn=5), op(1, "k1", want=0, replid=R1, lsn=12, node="n2")]
    ok, text, s = run(ops, final(same({"k0": "vk0"}), replid=R3), lineage)
    assert ok, text                          # k1 was the deposed primary's tail: counted, not required
    assert s["acked_outside_history"] == 1 and s["acked_outside_history_lost"] == 1


def test_d_two_nodes_in_one_epoch_both_survive():
    ops = [op(0, "k0", want=0, epoch=3, replid=R1), op(1, "k1", want=0, epoch=3, replid=R2, node="n2")]
    ok, text, s = run(ops, final(same({"k0": "vk0", "k1": "vk1"})))
    assert "d" in s["failed"] and "epoch 3: n1 as replid aaaaaaaa" in text
    ops[1].epoch = 4
    assert "d" not in run(ops, final(same({"k0": "vk0", "k1": "vk1"})))[2]["failed"]


def test_d_one_node_two_histories_in_one_epoch_is_listed_not_failed():
    ops = [op(0, "k0", want=0, epoch=0, replid=R1), op(1, "k1", want=0, epoch=0, replid=R2)]
    ok, text, s = run(ops, final(same({"k0": "vk0", "k1": "vk1"})))
    assert ok and s["epochs_with_two_histories"] == 1 and "n1 as replid aaaaaaaa,bbbbbbbb" in text


def test_e_refused_write_present():
    ok, text, s = run([op(0, "k0", st="fail")], final(same({"k0": "vk0"})))
    assert "e" in s["failed"]
    assert "present on n1,n2,n3" in text


def test_f_torn_transaction():
    t = op(0, "a", kind="txn", keys=["a", "at"])
    t.val = "v"
    ok, text, s = run([t], final(same({"a": "v"})))
    assert "f" in s["failed"] and "present in part" in text


def test_g_unknown_key_or_value():
    ok, text, s = run([op(0, "k0")], final(same({"k0": "other"})))
    assert "g" in s["failed"] and "holds ['other']" in text
    ok, text, s = run([op(0, "k0")], final(same({"k0": "vk0"}), dbsize=2))
    assert "g" in s["failed"]


def test_h_liveness():
    ok, text, s = run([op(0, "k0")], final(same({"k0": "vk0"}), canary="error: Timeout reading from socket"))
    assert s["failed"] == ["h"] and "Timeout reading" in text


def test_i_role_lost_on_restart():
    ev = [{"t": 1.0, "kind": "role-lost", "desc": "n1 restarted after SIGTERM as primary, but the operator had made "
           "it replica of n2"}, {"t": 1.1, "kind": "repair", "desc": "n1 is a primary"}]
    ok, lines, s = check([op(0, "k0")], ev, final(same({"k0": "vk0"})), "always", {})
    assert s["failed"] == ["i"] and s["repairs"] == 1 and "replica of n2" in "\n".join(lines)


def test_unreadable_node_reported_once_under_c():
    fin = final(same({"k0": "vk0"}))
    fin["nodes"]["n2"].update(values=None, digest=None, dbsize=None, error="Timeout reading from socket")
    ok, text, s = run([op(0, "k0"), op(1, "k1", st="fail")], fin)
    assert s["failed"] == ["c"] and "n2 could not be read after healing: Timeout reading" in text
    assert s["durable_lost"] == 0 and s["refused_present"] == 0
