"""JSON documents moving between nodes (issue 20, docs/json.md "Everywhere else a key goes"): MIGRATE of
packed and tree documents with their TTL between two ruvio processes, and a slot holding JSON keys moved by
redis-cli --cluster reshard (the fixtures of test_cluster_migrate.py). A moved document must read back the
same with JSON.GET, keep its deadline and its key type, and stay writable on the target.

ruvio_only: redis-server here has no RedisJSON module (see test_json.py). Ruvio's MIGRATE sends DUMP's
payload, which for a document is its rebuild command (`JSON.SET key $ <text>`), so it lands packed when it
fits, whatever its form on the source."""
import json

import pytest
import redis
from redis.crc import key_slot

from conftest import HOST, launch
from test_cluster_migrate import Cluster, _cli, client

pytestmark = pytest.mark.ruvio_only

SMALL = '{"name":"user-1","active":true,"score":42,"n":[1,-2,3.5,18446744073709551615],"e":"\\u00e9\\n"}'
BIG = json.dumps({"items": [{"i": i, "s": "x" * 40} for i in range(40)], "u": 18446744073709551615,
                  "d": 1e300, "nested": {"a": {"b": [None, False, "\u00e9"]}}}, separators=(",", ":"))


def J(c, *args):
    return c.execute_command(*args)


def canon(text):
    return json.loads(text)


@pytest.fixture
def pair():
    src, dst = launch(), launch()
    try:
        yield client(src.port), client(dst.port), src.port, dst.port
    finally:
        src.stop()
        dst.stop()


def test_migrate_moves_packed_and_tree_documents_with_ttl(pair):
    s, d, sport, dport = pair
    assert J(s, "JSON.SET", "small", "$", SMALL) == "OK"              # packed (fits 512 bytes)
    assert J(s, "JSON.SET", "big", "$", BIG) == "OK"                  # tree (past the limit)
    assert J(s, "JSON.SET", "shrunk", "$", SMALL) == "OK"             # a tree that shrank back: stays a tree
    assert J(s, "JSON.SET", "shrunk", "$.pad", json.dumps("p" * 700)) == "OK"
    assert J(s, "JSON.DEL", "shrunk", "$.pad") == 1
    assert s.memory_usage("shrunk") > 3 * len(SMALL) > s.memory_usage("small")
    assert s.pexpire("small", 100000) and s.pexpire("big", 200000)
    want = {k: J(s, "JSON.GET", k) for k in ("small", "big", "shrunk")}
    assert canon(want["small"]) == canon(SMALL) and canon(want["big"]) == canon(BIG)
    assert J(s, "MIGRATE", HOST, dport, "small", 0, 5000) == "OK"
    assert J(s, "MIGRATE", HOST, dport, "", 0, 5000, "KEYS", "big", "shrunk") == "OK"
    assert s.exists("small", "big", "shrunk") == 0
    for k, text in want.items():
        assert J(d, "JSON.GET", k) == text                            # byte for byte, numbers exact
        assert d.type(k) == "ReJSON-RL"
    assert 90000 < d.pttl("small") <= 100000 and 190000 < d.pttl("big") <= 200000 and d.pttl("shrunk") == -1
    assert J(d, "JSON.GET", "big", "$.items[39].i") == "[39]" and J(d, "JSON.GET", "small", ".n[3]") == \
        "18446744073709551615"
    # still documents on the target: writes below the root work, and they move back with COPY/REPLACE
    assert J(d, "JSON.NUMINCRBY", "small", "$.score", 1) == "[43]"
    assert J(d, "JSON.ARRAPPEND", "big", "$.items", '{"i":40}') == [41]
    assert J(s, "JSON.SET", "small", "$", "1") == "OK"
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        J(d, "MIGRATE", HOST, sport, "small", 0, 5000, "COPY")
    assert J(d, "MIGRATE", HOST, sport, "", 0, 5000, "COPY", "REPLACE",
             "KEYS", "small", "big") == "OK"
    assert J(s, "JSON.GET", "small", "$.score") == "[43]" and J(s, "JSON.ARRLEN", "big", "$.items") == [41]
    assert 0 < s.pttl("small") <= 100000 and d.exists("small", "big") == 2


def test_reshard_moves_a_slot_holding_json_documents():
    """redis-cli --cluster reshard moves 5 slots of node 0 to node 1 (its first ones, as redis-cli takes them;
    the test checks whichever moved) holding packed and tree documents with and without a TTL: each comes back
    from its owner with the same text (a moved one from node 1), and the old owner holds none that moved."""
    cl = Cluster(hosts=True)
    try:
        before = cl.slot_map()
        mine = [s for s in range(16384) if before[s] == 0][:5]
        docs = {}
        for slot in mine:
            n = 0
            for i in range(200000):
                k = "j%d" % i
                if key_slot(k.encode()) != slot:
                    continue
                docs[k] = (SMALL if n % 2 == 0 else BIG, n % 3 == 0)
                n += 1
                if n == 4:
                    break
        assert len(docs) == 20
        for k, (text, ttl) in docs.items():
            c = client(cl.ports[0])
            assert J(c, "JSON.SET", k, "$", text) == "OK"
            if ttl:
                assert c.pexpire(k, 300000)
        code, out = _cli("--cluster", "reshard", "%s:%d" % (HOST, cl.ports[0]), "--cluster-from", cl.ids[0],
                         "--cluster-to", cl.ids[1], "--cluster-slots", "5", "--cluster-yes")
        assert code == 0, out
        after = cl.slot_map()
        assert after.count(1) == before.count(1) + 5
        moved = [k for k in docs if after[key_slot(k.encode())] == 1]
        assert moved, "redis-cli moved none of node 0's first slots"
        for k, (text, ttl) in docs.items():
            c = client(cl.ports[after[key_slot(k.encode())]])
            assert canon(J(c, "JSON.GET", k)) == canon(text) and c.type(k) == "ReJSON-RL"
            assert (0 < c.pttl(k) <= 300000) if ttl else c.pttl(k) == -1
            assert J(c, "JSON.SET", k, "$.moved", "true") == "OK"
        s = client(cl.ports[0])
        assert all(s.execute_command("CLUSTER", "COUNTKEYSINSLOT", key_slot(k.encode())) == 0 for k in moved)
        code, out = _cli("--cluster", "check", "%s:%d" % (HOST, cl.ports[2]))
        assert code == 0 and "[WARNING]" not in out and "[ERR]" not in out, out
    finally:
        cl.stop()
