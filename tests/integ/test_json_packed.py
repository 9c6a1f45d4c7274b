"""JSON documents kept packed inline (small ones, node/types/json_pack.h) behave exactly as the tree form.

A small document is packed; writes decode it, change it and store it again, packed while it fits (a
document that grew past the limit is a tree). Every command must reply the same for both forms, and the
deadline, copies, DUMP and restarts must not notice.

ruvio_only: redis-server here has no RedisJSON module (see test_json.py)."""
import json
import signal

import pytest
import redis

from conftest import resp_error

pytestmark = pytest.mark.ruvio_only

DOCS = [
    '{"name":"user-000001","active":true,"score":42,"meta":{"value":"abcdefghij","n":7}}',
    '{"a":[1,-2,3.5,1e300,-0.0,9223372036854775807,18446744073709551615,-9223372036854775808],'
    '"s":"q\\"uo\\\\te\\n\\u0001\\u00e9","n":null,"t":true,"f":false,"o":{},"e":[],"a1":{"b_2":[{"c":1}]}}',
    '[1,[2,[3]],{"x":"y"}]',
    '"just a string"',
    '12345',
]

PATHS = ["$", ".", "$.score", ".score", "score", "$.meta.value", "meta.n", "$.missing", "$.a1.b_2",
         "$.a[1]", "$..c", "$.*", "$.a1.b_2[0].c", "$.meta.value.deeper", "$.name.x", "$[1][1]"]


def J(c, *args):
    return c.execute_command(*args)


def treeify(r, key):
    """Turns key's document into the tree form with the same value: it grows past the packed size
    (stored as a tree) and shrinks back in place. Scalar roots cannot: they stay packed."""
    doc = json.loads(J(r, "JSON.GET", key))
    pad = json.dumps("x" * 600)
    if isinstance(doc, dict):
        J(r, "JSON.SET", key, "$.__t", pad)
        assert J(r, "JSON.DEL", key, "$.__t") == 1
    elif isinstance(doc, list):
        J(r, "JSON.ARRAPPEND", key, "$", pad)
        assert J(r, "JSON.DEL", key, "$[-1]") == 1
    else:
        return
    assert r.memory_usage(key) > 3 * len(J(r, "JSON.GET", key))


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except redis.exceptions.ResponseError as e:
        return ("err", str(e))


def reads(r, key, path):
    out = []
    for cmd in (("JSON.GET",), ("JSON.TYPE",), ("JSON.RESP",), ("JSON.STRLEN",), ("JSON.ARRLEN",),
                ("JSON.OBJLEN",), ("JSON.OBJKEYS",)):
        out.append(outcome(J, r, *cmd, key, path))
    out.append(outcome(J, r, "JSON.GET", key, path, "INDENT", "  ", "NEWLINE", "\n"))
    out.append(outcome(J, r, "JSON.GET", key, path, "$.name"))
    out.append(outcome(J, r, "JSON.MGET", key, "nokey", path))
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_packed_and_tree_reply_the_same(r, doc):
    J(r, "JSON.SET", "p", "$", doc)
    J(r, "JSON.SET", "t", "$", doc)
    treeify(r, "t")
    assert J(r, "JSON.GET", "p") == J(r, "JSON.GET", "t")
    for path in PATHS:
        assert reads(r, "p", path) == reads(r, "t", path), path
    assert r.memory_usage("p") > 0 and r.memory_usage("t") > 0
    assert J(r, "JSON.DEBUG", "MEMORY", "p") > 0


def test_small_documents_cost_about_their_text(r):
    doc = DOCS[0]
    J(r, "JSON.SET", "j", "$", doc)
    r.set("s", doc)
    assert r.memory_usage("j") <= r.memory_usage("s")
    assert 0 < J(r, "JSON.DEBUG", "MEMORY", "j") < len(doc)          # the packed bytes
    assert J(r, "JSON.DEBUG", "MEMORY", "j", "$.meta.n") == [2]      # tag + varint
    treeify(r, "j")
    assert r.memory_usage("j") > 2 * r.memory_usage("s")  # the tree: why small ones are packed
    assert J(r, "JSON.DEBUG", "MEMORY", "j") > 2 * len(doc)
    J(r, "JSON.SET", "j", "$", doc)                         # a root SET packs it again
    assert r.memory_usage("j") <= r.memory_usage("s")
    big = json.dumps({"k%d" % i: "v" * 20 for i in range(40)})
    J(r, "JSON.SET", "big", "$", big)                       # past the packed size: a tree
    assert r.memory_usage("big") > len(big)
    assert J(r, "JSON.GET", "big") == big.replace(" ", "")
    assert J(r, "JSON.GET", "big", "$.k39") == '["' + "v" * 20 + '"]'


def test_deadline_kept_across_forms(r):
    J(r, "JSON.SET", "k", "$", DOCS[0])
    r.expire("k", 1000)
    J(r, "JSON.NUMINCRBY", "k", "$.score", "1")             # re-packed
    assert 0 < r.ttl("k") <= 1000
    J(r, "JSON.DEL", "k", "$.active")                        # re-packed
    assert 0 < r.ttl("k") <= 1000
    assert J(r, "JSON.GET", "k", "$.score") == "[43]" and J(r, "JSON.GET", "k", "$.active") == "[]"
    J(r, "JSON.SET", "k", "$", '{"x":1}')                   # tree -> packed, deadline kept
    assert 0 < r.ttl("k") <= 1000
    assert J(r, "JSON.SET", "k", "$", '{"x":2}', "NX") is None
    assert J(r, "JSON.SET", "k", "$", '{"x":3}', "XX") == "OK"
    assert J(r, "JSON.GET", "k") == '{"x":3}' and 0 < r.ttl("k") <= 1000
    assert J(r, "JSON.SET", "new", "$", '{"x":1}', "XX") is None
    assert r.exists("new") == 0
    r.set("str", "v")
    assert "WRONGTYPE" in resp_error(J, r, "JSON.SET", "str", "$", "1")
    assert "WRONGTYPE" in resp_error(J, r, "JSON.GET", "str", "$.a")
    assert "WRONGTYPE" in resp_error(J, r, "JSON.GET", "str")
    assert J(r, "JSON.MGET", "str", "k", "$.x") == [None, "[3]"]


def test_get_fast_path_edges(r):
    J(r, "JSON.SET", "d", "$", '{"a":[{"b":1}],"indent":5,"x1":{"_y":"z"}}')
    assert J(r, "JSON.GET", "d", "$.x1._y") == '["z"]'
    assert J(r, "JSON.GET", "d", "x1._y") == '"z"'
    assert J(r, "JSON.GET", "d", "$.a.b") == "[]"           # a key step on an array
    assert J(r, "JSON.GET", "d", "$.nope") == "[]"
    assert resp_error(J, r, "JSON.GET", "d", ".nope")      # a legacy path that misses fails
    assert resp_error(J, r, "JSON.GET", "d", "indent")      # an option without its value
    assert J(r, "JSON.GET", "d", "$.indent") == "[5]"
    assert J(r, "JSON.GET", "nokey", "$.a") is None
    assert J(r, "JSON.MGET", "d", "nokey", "$.x1") == ['[{"_y":"z"}]', None]


def test_copy_dump_and_restart_of_packed_documents(start_server, tmp_path):
    d = str(tmp_path / "p")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    for i, doc in enumerate(DOCS):
        J(c, "JSON.SET", "k%d" % i, "$", doc)
    c.expire("k0", 1000)
    assert c.copy("k0", "c0")
    J(c, "JSON.SET", "c0", "$.score", "1")
    assert J(c, "JSON.GET", "k0", "$.score") == "[42]"     # the copy is its own
    c.restore("r0", 0, c.dump("k1"))
    assert J(c, "JSON.GET", "r0") == J(c, "JSON.GET", "k1")
    keys = ["k%d" % i for i in range(len(DOCS))] + ["c0", "r0"]
    want = {k: J(c, "JSON.GET", k) for k in keys}
    srv.proc.send_signal(signal.SIGKILL)                     # the WAL replays them
    srv.proc.wait(timeout=5)
    srv2 = start_server("--dir", d, "--durability", "always")
    c2 = srv2.client()
    assert {k: J(c2, "JSON.GET", k) for k in keys} == want
    assert 0 < c2.ttl("k0") <= 1000
    assert c2.memory_usage("k0") <= 200                    # packed again after the replay
    assert c2.save()                                        # and from a checkpoint alone
    srv2.stop()
    srv3 = start_server("--dir", d, "--durability", "always")
    c3 = srv3.client()
    assert {k: J(c3, "JSON.GET", k) for k in keys} == want


def test_field_set_keeps_small_documents_packed(r):
    doc = DOCS[0]
    r.set("s", doc)
    small = r.memory_usage("s")
    for key in ("p", "t"):
        J(r, "JSON.SET", key, "$", doc)
    treeify(r, "t")
    r.expire("p", 1000)
    steps = [("$.score", "7", ()), ("$.meta.n", '"x"', ()), ("$.new", "[1,2]", ()),
             ("$.new", "3", ("NX",)), ("$.absent", "3", ("XX",)), ("$.meta.value", "null", ("XX",)),
             ("$..n", "5", ()), ("$.a.b.c", "1", ()), ("$.new[5]", "1", ()), (".legacy", '{"k":1}', ())]
    for path, value, opts in steps:
        got = [outcome(J, r, "JSON.SET", key, path, value, *opts) for key in ("p", "t")]
        assert got[0] == got[1], (path, got)
        assert J(r, "JSON.GET", "p") == J(r, "JSON.GET", "t"), path
    r.set("final", J(r, "JSON.GET", "p"))
    assert r.memory_usage("p") <= r.memory_usage("final")   # still packed: no more than its text
    assert 0 < r.ttl("p") <= 1000
    J(r, "JSON.SET", "p", "$.grow", json.dumps("g" * 600))   # past the packed size: the tree
    assert r.memory_usage("p") > 600
    assert 0 < r.ttl("p") <= 1000
    assert json.loads(J(r, "JSON.GET", "p", "$.grow")) == ["g" * 600]
    J(r, "JSON.SET", "q", "$", doc)                          # a depth error leaves it unchanged
    assert "nesting" in resp_error(J, r, "JSON.SET", "q", "$.score", "[" * 128 + "]" * 128)
    assert J(r, "JSON.GET", "q") == doc and r.memory_usage("q") <= small


def test_writes_keep_small_documents_packed(r):
    doc = '{"n":1,"f":1.5,"s":"ab","a":[1,2,3],"b":true,"o":{"a":[]}}'
    r.set("str", doc)
    small = r.memory_usage("str")
    for key in ("p", "t"):
        J(r, "JSON.SET", key, "$", doc)
    treeify(r, "t")
    r.expire("p", 1000)
    steps = [("JSON.NUMINCRBY", "$.n", "2"), ("JSON.NUMMULTBY", "$..f", "3"), ("JSON.NUMINCRBY", ".n", "1"),
             ("JSON.NUMINCRBY", "$.s", "1"), ("JSON.NUMINCRBY", "$.n", "1e308"),
             ("JSON.NUMMULTBY", "$.n", "1e308"), ("JSON.STRAPPEND", "$.s", '"cd"'),
             ("JSON.STRAPPEND", ".s", '"e"'), ("JSON.ARRAPPEND", "$.a", "4", '"x"'),
             ("JSON.ARRAPPEND", "$..a", "[1]"), ("JSON.ARRINSERT", "$.a", "0", "0"),
             ("JSON.ARRINSERT", ".a", "99", "0"), ("JSON.ARRPOP", "$.a"), ("JSON.ARRPOP", ".a", "0"),
             ("JSON.ARRTRIM", "$.a", "1", "2"), ("JSON.TOGGLE", "$.b"), ("JSON.STRLEN", "$.s"),
             ("JSON.ARRAPPEND", "$.a", "[" * 127 + "]" * 127), ("JSON.ARRPOP", "$.missing"),
             ("JSON.TOGGLE", ".b"), ("JSON.MERGE", "$", '{"o":{"m":1},"n":null}'),
             ("JSON.MERGE", "$.o", '{"z":[1]}'), ("JSON.MERGE", "$.new", '{"k":2}'), ("JSON.CLEAR", "$.o"),
             ("JSON.DEL", "$.f"), ("JSON.FORGET", ".s"), ("JSON.DEL", "$.nothing"), ("JSON.MSET", "$.m", "5"),
             ("JSON.CLEAR", "$.nothing")]
    for step in steps:
        got = [outcome(J, r, step[0], key, *step[1:]) for key in ("p", "t")]
        assert got[0] == got[1], (step, got)
        assert J(r, "JSON.GET", "p") == J(r, "JSON.GET", "t"), step
    r.set("final", J(r, "JSON.GET", "p"))
    assert r.memory_usage("p") <= r.memory_usage("final")   # still packed: no more than its text
    assert 0 < r.ttl("p") <= 1000
    J(r, "JSON.ARRAPPEND", "p", "$.a", json.dumps("g" * 600))  # past the packed size: the tree
    assert r.memory_usage("p") > 600 and 0 < r.ttl("p") <= 1000
    assert J(r, "JSON.ARRLEN", "p", "$.a") == [J(r, "JSON.ARRLEN", "t", ".a") + 1]
    assert J(r, "JSON.GET", "p", "$.a[-1]") == '["' + "g" * 600 + '"]'
    J(r, "JSON.ARRPOP", "p", "$.a")                            # shrunk: the tree stays until a root SET
    assert J(r, "JSON.GET", "p") == J(r, "JSON.GET", "t") and r.memory_usage("p") > small


def test_array_writes_on_another_type_reply_once(r):
    r.set("s", "v")
    for cmd in (("JSON.ARRAPPEND", "s", "$", "1"), ("JSON.ARRINSERT", "s", "$", "0", "1"),
                ("JSON.NUMINCRBY", "s", "$", "1")):
        assert "WRONGTYPE" in resp_error(J, r, *cmd)
        assert r.ping() is True                              # no second reply queued behind it
