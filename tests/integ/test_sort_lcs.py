"""SORT, SORT_RO and LCS (issue 19): Redis 7.0's replies and errors, shared with redis-server (reference mode);
durability and replication of SORT ... STORE are ruvio-only."""

import subprocess

import pytest
import redis

from conftest import HOST, encode_command, poll_until
from ruviotest import repl

NOTNUM = "One or more scores can't be converted into double"


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def test_numeric_sort_and_order(r):
    r.rpush("l", 3, 10, 1, "2.5", "-4", "1e2")
    assert r.execute_command("SORT", "l") == ["-4", "1", "2.5", "3", "10", "1e2"]
    assert r.execute_command("SORT", "l", "DESC") == ["1e2", "10", "3", "2.5", "1", "-4"]
    assert r.execute_command("SORT_RO", "l", "ASC") == ["-4", "1", "2.5", "3", "10", "1e2"]
    # equal scores: by the elements' bytes
    r.rpush("eq", "1.0", "1", "01")
    assert r.execute_command("SORT", "eq") == ["01", "1", "1.0"]
    # strtod's rules: leading spaces, inf and hex pass; "" is 0
    r.rpush("odd", "inf", "-inf", "0x10", " 5", "")
    assert r.execute_command("SORT", "odd") == ["-inf", "", " 5", "0x10", "inf"]
    r.sadd("s", 5, 3, 9)
    r.zadd("z", {"7": 1, "2": 2, "5": 3})
    assert r.execute_command("SORT", "s") == ["3", "5", "9"]
    assert r.execute_command("SORT", "z") == ["2", "5", "7"]
    assert r.execute_command("SORT", "missing") == []


@pytest.mark.parametrize("bad", ["abc", "5 ", "1e-400", "nan", "1x"])
def test_not_a_number(r, bad):
    r.rpush("l", 1, bad)
    assert err(r.execute_command, "SORT", "l") == NOTNUM
    assert err(r.execute_command, "SORT", "l", "STORE", "dst") == NOTNUM
    assert r.exists("dst") == 0


def test_alpha_is_byte_order(r):
    r.rpush("l", "b", "B", "a", "\xff", "ab", "")
    assert r.execute_command("SORT", "l", "ALPHA") == ["", "B", "a", "ab", "b", "\xff"]
    assert r.execute_command("SORT", "l", "ALPHA", "DESC") == ["\xff", "b", "ab", "a", "B", ""]
    r.sadd("s", "pear", "apple", "fig")
    assert r.execute_command("SORT", "s", "ALPHA", "LIMIT", 1, 1) == ["fig"]


def test_limit(r):
    r.rpush("l", 5, 1, 4, 2, 3)
    big = 2**63 - 1
    cases = [((0, 2), ["1", "2"]), ((3, 10), ["4", "5"]), ((-5, 2), ["1", "2"]), ((0, -1), ["1", "2", "3", "4", "5"]),
             ((2, 0), []), ((5, 1), []), ((big, big), []), ((1, big), ["2", "3", "4", "5"]),
             ((-big - 1, -1), ["1", "2", "3", "4", "5"])]
    for (off, cnt), want in cases:
        assert r.execute_command("SORT", "l", "LIMIT", off, cnt) == want, (off, cnt)
    assert r.execute_command("SORT", "l", "LIMIT", 1, 2, "DESC") == ["4", "3"]
    assert err(r.execute_command, "SORT", "l", "LIMIT", "x", 1) == "value is not an integer or out of range"
    assert err(r.execute_command, "SORT", "l", "LIMIT", 1, "9223372036854775808") == \
        "value is not an integer or out of range"
    assert err(r.execute_command, "SORT", "l", "LIMIT", 1) == "syntax error"


def test_by_nosort_keeps_native_order(r):
    r.rpush("l", 3, 1, 2)
    assert r.execute_command("SORT", "l", "BY", "nosort") == ["3", "1", "2"]
    assert r.execute_command("SORT", "l", "BY", "nosort", "DESC") == ["2", "1", "3"]
    assert r.execute_command("SORT", "l", "BY", "nosort", "LIMIT", 1, 5) == ["1", "2"]
    assert r.execute_command("SORT", "l", "BY", "nosort", "LIMIT", 0, 1, "DESC") == ["2"]
    r.zadd("z", {"a": 3, "b": 1, "c": 2})
    assert r.execute_command("SORT", "z", "BY", "nosort") == ["b", "c", "a"]
    assert r.execute_command("SORT", "z", "BY", "nosort", "LIMIT", 1, 5) == ["c", "a"]
    assert r.execute_command("SORT", "z", "BY", "nosort", "DESC", "LIMIT", 1, 1) == ["c"]
    assert r.execute_command("SORT", "z", "BY", "nosort", "LIMIT", 3, 1) == []
    # a set has no order of its own: BY nosort returns its members in some order ...
    r.sadd("s", "x", "z", "y")
    assert sorted(r.execute_command("SORT", "s", "BY", "nosort")) == ["x", "y", "z"]
    # ... but is sorted (ALPHA) when stored, so that the stored list is deterministic
    assert r.execute_command("SORT", "s", "BY", "nosort", "STORE", "d") == 3
    assert r.lrange("d", 0, -1) == ["x", "y", "z"]
    # nosort skips the numeric conversion
    r.rpush("w", "x", "y")
    assert r.execute_command("SORT", "w", "BY", "nosort") == ["x", "y"]


def test_by_pattern_and_hash_field(r):
    r.rpush("l", "a", "b", "c", "d")
    r.mset({"w_a": 3, "w_b": 1, "w_c": 2})            # w_d missing: weight 0
    assert r.execute_command("SORT", "l", "BY", "w_*") == ["d", "b", "c", "a"]
    assert r.execute_command("SORT", "l", "BY", "w_*", "DESC") == ["a", "c", "b", "d"]
    r.hset("h_a", "f", "z")
    r.hset("h_b", "f", "x")
    r.hset("h_c", "g", "y")                            # no field f: missing
    assert r.execute_command("SORT", "l", "BY", "h_*->f", "ALPHA") == ["c", "d", "b", "a"]
    assert r.execute_command("SORT", "l", "BY", "h_*->f", "ALPHA", "DESC") == ["a", "b", "c", "d"]
    assert r.execute_command("SORT", "l", "BY", "h_*->f", "ALPHA", "LIMIT", 2, 2) == ["b", "a"]
    # a key of another type counts as missing; a non-number weight is an error
    r.rpush("n", "1", "2")
    r.sadd("k_1", "x")
    r.set("k_2", "5")
    assert r.execute_command("SORT", "n", "BY", "k_*", "DESC") == ["2", "1"]
    r.set("k_1", "oops")
    assert err(r.execute_command, "SORT", "n", "BY", "k_*") == NOTNUM
    # ALPHA BY with equal values keeps a list's order
    r.rpush("t", "q", "p", "r")
    assert r.execute_command("SORT", "t", "BY", "none_*", "ALPHA") == ["q", "p", "r"]


def test_get_patterns(r):
    r.rpush("l", "1", "2", "3")
    r.mset({"o_1": "one", "o_3": "three"})
    r.hset("h_2", mapping={"name": "two"})
    assert r.execute_command("SORT", "l", "GET", "o_*") == ["one", None, "three"]
    assert r.execute_command("SORT", "l", "GET", "#", "GET", "o_*", "GET", "h_*->name", "DESC") == \
        ["3", "three", None, "2", None, "two", "1", "one", None]
    assert r.execute_command("SORT", "l", "GET", "fixed", "LIMIT", 0, 1) == [None]   # no '*': always nil
    assert r.execute_command("SORT", "l", "GET", "h_*->", "LIMIT", 0, 1) == [None]   # "h_1->" is a key name
    r.set("h_1->", "literal")
    assert r.execute_command("SORT", "l", "GET", "h_*->", "LIMIT", 0, 1) == ["literal"]
    assert r.execute_command("SORT", "missing", "GET", "#") == []
    assert r.execute_command("SORT", "l", "GET", "o_*", "STORE", "d") == 3
    assert r.lrange("d", 0, -1) == ["one", "", "three"]          # nil is stored as ""


def test_store(r):
    r.rpush("l", 2, 3, 1)
    r.set("d", "old")
    r.expire("d", 100)
    assert r.execute_command("SORT", "l", "STORE", "d") == 3
    assert r.lrange("d", 0, -1) == ["1", "2", "3"] and r.ttl("d") == -1
    assert r.execute_command("SORT", "l", "DESC", "LIMIT", 0, 2, "STORE", "d") == 2
    assert r.lrange("d", 0, -1) == ["3", "2"]
    # the last STORE wins; an empty result deletes the destination
    assert r.execute_command("SORT", "l", "STORE", "x", "STORE", "d", "LIMIT", 5, 5) == 0
    assert r.exists("d", "x") == 0
    assert r.execute_command("SORT", "missing", "STORE", "d") == 0
    # the destination may be the source
    assert r.execute_command("SORT", "l", "STORE", "l") == 3
    assert r.lrange("l", 0, -1) == ["1", "2", "3"]
    r.zadd("z", {"b": 1, "a": 2})
    assert r.execute_command("SORT", "z", "ALPHA", "STORE", "dz") == 2
    assert r.type("dz") == "list" and r.lrange("dz", 0, -1) == ["a", "b"]


def test_syntax_and_type_errors(r):
    r.set("str", "x")
    r.hset("h", "f", "v")
    r.rpush("l", 1)
    for k in ("str", "h"):
        assert err(r.execute_command, "SORT", k).startswith("WRONGTYPE")
        assert err(r.execute_command, "SORT_RO", k).startswith("WRONGTYPE")
    assert err(r.execute_command, "SORT", "l", "BOGUS") == "syntax error"
    assert err(r.execute_command, "SORT", "l", "GET") == "syntax error"
    assert err(r.execute_command, "SORT", "l", "BY") == "syntax error"
    assert err(r.execute_command, "SORT", "l", "STORE") == "syntax error"
    assert err(r.execute_command, "SORT_RO", "l", "STORE", "d") == "syntax error"
    assert err(r.execute_command, "SORT", "str", "BOGUS") == "syntax error"   # options first
    assert err(r.execute_command, "SORT") == "wrong number of arguments for 'sort' command"


def test_command_keys_and_info(raw):
    gk = lambda *a: [k.decode() for k in raw.cmd("COMMAND", "GETKEYS", *a)]
    assert gk("SORT", "l") == ["l"]
    assert gk("SORT", "l", "STORE", "d", "GET", "x", "STORE", "e", "BY", "y", "LIMIT", 1, 2) == ["l", "e"]
    assert gk("SORT", "l", "GET", "store", "STORE", "d") == ["l", "d"]
    assert gk("SORT", "l", "STORE", "GET", "x") == ["l", "GET"]    # STORE does not skip its argument
    assert gk("SORT_RO", "l", "GET", "x") == ["l"]
    assert gk("LCS", "a", "b", "LEN") == ["a", "b"]
    sort, sort_ro, lcs = raw.cmd("COMMAND", "INFO", "sort", "sort_ro", "lcs")
    assert sort[1] == -2 and {"write", "denyoom", "movablekeys"} <= set(sort[2]) and sort[3:6] == [1, 1, 1]
    assert sort_ro[1] == -2 and {"readonly", "movablekeys"} <= set(sort_ro[2]) and sort_ro[3:6] == [1, 1, 1]
    assert lcs[1] == -3 and "readonly" in lcs[2] and lcs[3:6] == [1, 2, 1]


def test_lcs_replies(r):
    r.mset({"a": "ohmytext", "b": "mynewtext"})
    assert r.execute_command("LCS", "a", "b") == "mytext"
    assert r.execute_command("LCS", "a", "b", "LEN") == 6
    assert r.execute_command("LCS", "a", "b", "IDX") == \
        ["matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len", 6]
    assert r.execute_command("LCS", "a", "b", "IDX", "WITHMATCHLEN") == \
        ["matches", [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]], "len", 6]
    assert r.execute_command("LCS", "a", "b", "IDX", "MINMATCHLEN", 4, "WITHMATCHLEN") == \
        ["matches", [[[4, 7], [5, 8], 4]], "len", 6]
    assert r.execute_command("LCS", "a", "b", "IDX", "MINMATCHLEN", -3) == \
        ["matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len", 6]
    assert r.execute_command("LCS", "a", "nokey") == ""
    assert r.execute_command("LCS", "nokey", "nokey2", "LEN") == 0
    assert r.execute_command("LCS", "a", "nokey", "IDX") == ["matches", [], "len", 0]
    r.mset({"x": "AAAA", "y": "AA"})
    assert r.execute_command("LCS", "x", "y", "IDX", "WITHMATCHLEN") == \
        ["matches", [[[2, 3], [0, 1], 2]], "len", 2]
    r.set("n", 12345)
    r.set("m", 2348)
    assert r.execute_command("LCS", "n", "m") == "234"


def test_lcs_resp3(raw):
    raw.cmd("MSET", "a", "ohmytext", "b", "mynewtext")
    raw.cmd("HELLO", "3")
    assert raw.cmd("LCS", "a", "b", "IDX", "WITHMATCHLEN") == \
        {b"matches": [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]], b"len": 6}
    assert raw.cmd("LCS", "a", "b", "LEN") == 6
    assert raw.cmd("SORT", "nokey", "GET", "#") == []


def test_lcs_errors(r):
    r.mset({"a": "abc", "b": "abd"})
    r.rpush("l", 1)
    assert err(r.execute_command, "LCS", "a", "b", "IDX", "LEN") == \
        "If you want both the length and indexes, please just use IDX."
    assert err(r.execute_command, "LCS", "a", "b", "BOGUS") == "syntax error"
    assert err(r.execute_command, "LCS", "a", "b", "MINMATCHLEN") == "syntax error"
    assert err(r.execute_command, "LCS", "a", "b", "MINMATCHLEN", "x") == "value is not an integer or out of range"
    assert err(r.execute_command, "LCS", "a", "l") == "The specified keys must contain string values"
    assert err(r.execute_command, "LCS", "l", "a", "BOGUS") == "The specified keys must contain string values"
    assert err(r.execute_command, "LCS", "a") == "wrong number of arguments for 'lcs' command"


def test_lcs_memory_bound(r):
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    r.config_set("proto-max-bulk-len", 1024 * 1024)
    try:
        r.mset({"a": "x" * 600, "b": "y" * 600})           # 601*601*4 > 1 MiB
        assert err(r.execute_command, "LCS", "a", "b") == \
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
        r.mset({"a": "x" * 400, "b": "x" * 400})           # 401*401*4 < 1 MiB
        assert r.execute_command("LCS", "a", "b", "LEN") == 400
    finally:
        r.config_set("proto-max-bulk-len", old)


# ---------------------------------------------------------------- cluster restrictions


@pytest.mark.ruvio_only
@pytest.mark.own_server
def test_multi_shard_refuses_patterns(start_server):
    srv = start_server("--shards", "2")
    c = redis.RedisCluster(host=HOST, port=srv.port, decode_responses=True, socket_timeout=10)
    try:
        c.rpush("{t}l", 2, 1)
        nodes = c.get_node_from_key("{t}l")
        raw = c.get_redis_connection(nodes)
        assert raw.execute_command("SORT", "{t}l") == ["1", "2"]
        assert raw.execute_command("SORT", "{t}l", "BY", "nosort") == ["2", "1"]
        with pytest.raises(redis.ResponseError, match="^BY option of SORT denied in Cluster mode.$"):
            raw.execute_command("SORT", "{t}l", "BY", "{t}w_*")
        with pytest.raises(redis.ResponseError, match="^GET option of SORT denied in Cluster mode.$"):
            raw.execute_command("SORT_RO", "{t}l", "GET", "#")
        assert raw.execute_command("SORT", "{t}l", "STORE", "{t}d") == 2
        assert raw.lrange("{t}d", 0, -1) == ["1", "2"]
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):
            raw.execute_command("SORT", "{t}l", "STORE", "{u}d")
        c.set("{t}a", "abc")
        assert raw.execute_command("LCS", "{t}a", "{t}b") == ""
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):
            raw.execute_command("LCS", "{t}a", "{u}b")
    finally:
        c.close()


@pytest.mark.ruvio_only
@pytest.mark.own_server
def test_cluster_mode_refuses_patterns(start_server):
    srv = start_server("--shards", "3", "--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
    out = subprocess.run(["redis-cli", "--cluster", "create"] + ["%s:%d" % (HOST, p) for p in srv.ports]
                         + ["--cluster-yes"], timeout=60, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert out.returncode == 0, out.stdout
    c = redis.RedisCluster(host=HOST, port=srv.port, decode_responses=True, socket_timeout=10)
    try:
        poll_until(lambda: c.cluster_info()["cluster_state"] == "ok", timeout=20, what="cluster ok")
        c.rpush("{t}l", 2, 1)
        raw = c.get_redis_connection(c.get_node_from_key("{t}l"))
        assert raw.execute_command("SORT", "{t}l", "BY", "nosort") == ["2", "1"]
        with pytest.raises(redis.ResponseError, match="^BY option of SORT denied in Cluster mode.$"):
            raw.execute_command("SORT", "{t}l", "BY", "{t}w_*")       # a hash tag does not help in 7.0
        with pytest.raises(redis.ResponseError, match="^GET option of SORT denied in Cluster mode.$"):
            raw.execute_command("SORT", "{t}l", "GET", "#")
        assert raw.execute_command("SORT", "{t}l", "STORE", "{t}d") == 2
        with pytest.raises(redis.exceptions.ClusterCrossSlotError):
            raw.execute_command("SORT", "{t}l", "STORE", "{u}d")
    finally:
        c.close()


# ---------------------------------------------------------------- durability and replication


def _sort_data(c):
    c.sadd("s", *["m%03d" % i for i in range(300)])        # a hashtable: its order is the process's hash seed
    c.rpush("l", *["%d" % ((i * 37) % 101) for i in range(60)])
    c.zadd("z", {"m%03d" % i: i % 3 for i in range(0, 50, 2)})
    for i in range(0, 300, 3):
        c.hset("w_%d" % i, "f", "same")                   # many ALPHA ties
        c.hset("w_m%03d" % i, "f", "same")


def _sort_store(c):
    c.execute_command("SORT", "s", "BY", "nosort", "STORE", "d1")
    c.execute_command("SORT", "l", "BY", "w_*->f", "ALPHA", "LIMIT", 5, 30, "STORE", "d2")
    c.execute_command("SORT", "s", "DESC", "ALPHA", "BY", "w_*->f", "GET", "#", "GET", "w_*->f", "STORE", "d3")
    c.execute_command("SORT", "z", "BY", "w_*->f", "ALPHA", "STORE", "d4")
    c.execute_command("SORT", "l", "LIMIT", 100, 1, "STORE", "d1x")     # empty: nothing stored


def _lists(c):
    return {k: c.lrange(k, 0, -1) for k in ("d1", "d2", "d3", "d4")}


@pytest.mark.ruvio_only
@pytest.mark.own_server
def test_sort_store_survives_restart(start_server, tmp_path):
    d = str(tmp_path / "data")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    _sort_data(c)
    c.save()                                   # the data from a checkpoint, the SORTs from the WAL
    _sort_store(c)
    want = _lists(c)
    assert len(want["d1"]) == 300 and len(want["d2"]) == 30 and len(want["d3"]) == 600 and len(want["d4"]) == 25
    assert want["d1"] == sorted(want["d1"])
    c.close()
    srv.stop()
    again = start_server("--dir", d, "--durability", "always", port=srv.port)
    c = again.client()
    assert _lists(c) == want and c.exists("d1x") == 0
    c.close()


@pytest.mark.ruvio_only
@pytest.mark.own_server
def test_sort_store_reaches_replica(start_server):
    primary = start_server()
    replica = start_server()
    p, r = primary.client(), replica.client()
    _sort_data(p)                              # reaches the replica by the full sync
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=10)
    _sort_store(p)                             # and these by the stream
    repl.wait_offset(p, r, timeout=10)
    assert _lists(r) == _lists(p)
    assert r.exists("d1x") == 0
    p.close()
    r.close()


def test_acl_restricted_keys_refuse_by_and_get(server, r):
    r.execute_command("ACL", "SETUSER", "sorter", "on", "nopass", "~l*", "+@all")
    r.execute_command("ACL", "SETUSER", "reader", "on", "nopass", "%R~*", "+@all")
    c = server.client(username="sorter", password="x")
    d = server.client(username="reader", password="x")
    try:
        r.rpush("l", 2, 1)
        assert c.execute_command("SORT", "l", "BY", "nosort") == ["2", "1"]
        assert err(c.execute_command, "SORT", "l", "BY", "w_*") == \
            "BY option of SORT denied due to insufficient ACL permissions."
        assert err(c.execute_command, "SORT_RO", "l", "GET", "#") == \
            "GET option of SORT denied due to insufficient ACL permissions."
        assert d.execute_command("SORT_RO", "l", "BY", "w_*", "GET", "#") == ["1", "2"]
    finally:
        c.close()
        d.close()
        r.execute_command("ACL", "DELUSER", "sorter", "reader")


def test_sort_key_specs(raw):
    sort, sort_ro = raw.cmd("COMMAND", "INFO", "sort", "sort_ro")
    first = [b"flags", ["RO", "access"], b"begin_search", [b"type", b"index", b"spec", [b"index", 1]],
             b"find_keys", [b"type", b"range", b"spec", [b"lastkey", 0, b"keystep", 1, b"limit", 0]]]
    by_get = [b"notes", b"For the optional BY/GET keyword. It is marked 'unknown' because the key names derive "
              b"from the content of the key we sort", b"flags", ["RO", "access"],
              b"begin_search", [b"type", b"unknown", b"spec", []], b"find_keys", [b"type", b"unknown", b"spec", []]]
    store = [b"notes", b"For the optional STORE keyword. It is marked 'unknown' because the keyword can appear "
             b"anywhere in the argument array", b"flags", ["OW", "update"],
             b"begin_search", [b"type", b"unknown", b"spec", []], b"find_keys", [b"type", b"unknown", b"spec", []]]
    assert sort[8] == [first, by_get, store]
    assert sort_ro[8] == [first, by_get]


def test_store_wakes_a_blocked_pop(raw):
    raw.cmd("RPUSH", "src", "3", "1", "2")
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "dst", "10"))
    poll_until(lambda: int(raw.cmd("INFO", "clients").split(b"blocked_clients:")[1].split(b"\r")[0]) >= 1,
               what="a blocked client")
    assert raw.cmd("SORT", "src", "STORE", "dst") == 3
    assert waiter.read_reply() == [b"dst", b"1"]
    assert raw.cmd("LRANGE", "dst", "0", "-1") == [b"2", b"3"]
