"""Stream consumer groups: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO (issue 17), validated
against redis-server 7.0.15 (the suite's reference mode). Restart, replica and resharding are ruvio only. Every
wait is bounded."""

import signal
import threading
import time

import pytest

from conftest import encode_command, poll_until

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BADID = "ERR Invalid stream ID specified as stream command argument"
NOTINT = "ERR value is not an integer or out of range"
NOKEY = ("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the "
         "MKSTREAM option to create an empty stream automatically.")


def fill(raw, key, n, start=1):
    for i in range(start, start + n):
        raw.cmd("XADD", key, "%d-1" % i, "f", str(i))


def kv(reply):
    """A RESP2 flat key/value array as a dict (bytes keys decoded)."""
    return {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def groups(raw, key):
    return {g[b"name"].decode(): g for g in
            [{k.encode(): v for k, v in kv(x).items()} for x in raw.cmd("XINFO", "GROUPS", key)]}


def lag_read(raw, key, group):
    g = groups(raw, key)[group]
    return g[b"entries-read"], g[b"lag"]


def blocked_count(conn):
    for line in conn.cmd("INFO", "clients").decode().splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    return -1


def wait_blocked(conn, n=1):
    poll_until(lambda: blocked_count(conn) >= n, what="%d blocked client(s)" % n)


def no_sanitizer_report(*servers):
    for srv in servers:
        out = srv.stderr() + srv.stdout()
        assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out[-3000:]


# ------------------------------------------------------------------ XGROUP


def test_xgroup_create_and_errors(raw):
    fill(raw, "s", 3)
    assert raw.cmd("XGROUP", "CREATE", "s", "g", "0") == "OK"
    assert raw.cmd("XGROUP", "CREATE", "s", "g", "0") == "BUSYGROUP Consumer Group name already exists"
    assert raw.cmd("XGROUP", "CREATE", "nos", "g", "0") == NOKEY
    assert raw.cmd("XGROUP", "CREATE", "nos", "g", "$", "MKSTREAM") == "OK"
    assert raw.cmd("TYPE", "nos") == "stream" and raw.cmd("XLEN", "nos") == 0
    assert raw.cmd("XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "-2") == \
        "ERR value for ENTRIESREAD must be positive or -1"
    assert raw.cmd("XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "x") == NOTINT
    assert raw.cmd("XGROUP", "CREATE", "s", "g5", "0", "FOO").startswith(
        "ERR unknown subcommand or wrong number of arguments for 'CREATE'")
    assert raw.cmd("XGROUP", "CREATE", "s", "g6", "bad") == BADID
    assert raw.cmd("XGROUP", "CREATECONSUMER", "s", "g", "c1") == 1
    assert raw.cmd("XGROUP", "CREATECONSUMER", "s", "g", "c1") == 0
    assert raw.cmd("XGROUP", "CREATECONSUMER", "s", "nog", "c1") == "NOGROUP No such consumer group 'nog' for key name 's'"
    assert raw.cmd("XGROUP", "CREATECONSUMER", "nokey", "g", "c1") == NOKEY
    assert raw.cmd("XGROUP", "SETID", "s", "nog", "0") == "NOGROUP No such consumer group 'nog' for key name 's'"
    assert raw.cmd("XGROUP", "DESTROY", "s", "nog") == 0
    assert raw.cmd("XGROUP", "DELCONSUMER", "s", "g", "nobody") == 0
    raw.cmd("SET", "str", "x")
    assert raw.cmd("XGROUP", "CREATE", "str", "g", "0") == WRONGTYPE
    assert raw.cmd("XGROUP", "CREATE", "str", "g", "0", "MKSTREAM") == WRONGTYPE
    help_ = raw.cmd("XGROUP", "HELP")
    assert any(b"CREATECONSUMER" in (h if isinstance(h, bytes) else h.encode()) for h in help_)
    assert raw.cmd("XGROUP", "DESTROY", "s", "g") == 1
    assert raw.cmd("XINFO", "GROUPS", "s") == []


def test_xgroup_groups_and_consumers_in_name_order(raw):
    fill(raw, "s", 1)
    for g in ("b", "a", "ab", "c"):
        raw.cmd("XGROUP", "CREATE", "s", g, "0")
    assert [x[1] for x in raw.cmd("XINFO", "GROUPS", "s")] == [b"a", b"ab", b"b", b"c"]
    for c in ("z", "y", "yy", "a"):
        raw.cmd("XGROUP", "CREATECONSUMER", "s", "a", c)
    assert [x[1] for x in raw.cmd("XINFO", "CONSUMERS", "s", "a")] == [b"a", b"y", b"yy", b"z"]


# -------------------------------------------------------------- XREADGROUP


def test_xreadgroup_new_history_and_ack(raw):
    fill(raw, "s", 3)
    raw.cmd("XGROUP", "CREATE", "s", "g", "0")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">") == \
        [[b"s", [[b"1-1", [b"f", b"1"]]]]]
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">") == \
        [[b"s", [[b"2-1", [b"f", b"2"]], [b"3-1", [b"f", b"3"]]]]]
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">") is None
    # history: the consumer's own pending entries after the id; each read counts a delivery
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "0") == \
        [[b"s", [[b"2-1", [b"f", b"2"]], [b"3-1", [b"f", b"3"]]]]]
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", "2-1") == \
        [[b"s", [[b"3-1", [b"f", b"3"]]]]]
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", "0") == [[b"s", []]]
    assert raw.cmd("XPENDING", "s", "g") == [3, b"1-1", b"3-1", [[b"c", b"1"], [b"c2", b"2"]]]
    rows = raw.cmd("XPENDING", "s", "g", "-", "+", "10")
    assert [(r[0], r[1], r[3]) for r in rows] == [(b"1-1", b"c", 1), (b"2-1", b"c2", 2), (b"3-1", b"c2", 3)]
    assert raw.cmd("XPENDING", "s", "g", "-", "+", "10", "c") == [[b"1-1", b"c", rows[0][2], 1]] or \
        raw.cmd("XPENDING", "s", "g", "-", "+", "10", "c")[0][:2] == [b"1-1", b"c"]
    assert raw.cmd("XPENDING", "s", "g", "-", "+", "10", "nobody") == []
    assert raw.cmd("XPENDING", "s", "g", "(1-1", "+", "1") [0][0] == b"2-1"
    assert raw.cmd("XPENDING", "s", "g", "IDLE", "3600000", "-", "+", "10") == []
    assert raw.cmd("XPENDING", "s", "g", "-", "+") == "ERR syntax error"
    assert raw.cmd("XPENDING", "nos", "g") == "NOGROUP No such key 'nos' or consumer group 'g'"
    assert raw.cmd("XACK", "s", "g", "1-1", "9-9") == 1
    assert raw.cmd("XACK", "s", "g", "1-1") == 0
    assert raw.cmd("XACK", "s", "g", "bad") == BADID
    assert raw.cmd("XACK", "nokey", "g", "1-1") == 0
    assert raw.cmd("XPENDING", "s", "g")[:3] == [2, b"2-1", b"3-1"]
    # a pending entry deleted from the stream reads as [id, nil] in history
    raw.cmd("XDEL", "s", "2-1")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", "0") == \
        [[b"s", [[b"2-1", None], [b"3-1", [b"f", b"3"]]]]]
    assert [x[3] for x in raw.cmd("XPENDING", "s", "g", "-", "+", "10")] == [2, 4]


def test_xreadgroup_noack_and_several_streams(raw):
    fill(raw, "a", 2)
    fill(raw, "b", 1)
    raw.cmd("XGROUP", "CREATE", "a", "g", "0")
    raw.cmd("XGROUP", "CREATE", "b", "g", "$")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "a", "b", ">", ">") == \
        [[b"a", [[b"1-1", [b"f", b"1"]], [b"2-1", [b"f", b"2"]]]]]
    assert raw.cmd("XPENDING", "a", "g")[0] == 0
    assert groups(raw, "a")["g"][b"last-delivered-id"] == b"2-1"
    raw.cmd("XADD", "b", "5-1", "x", "y")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">") == \
        [[b"b", [[b"5-1", [b"x", b"y"]]]]]
    raw.cmd("HELLO", "3")
    raw.cmd("XADD", "a", "9-1", "z", "z")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">") == \
        {b"a": [[b"9-1", [b"z", b"z"]]]}


def test_xreadgroup_errors(raw):
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "0")
    raw.cmd("SET", "str", "x")
    assert raw.cmd("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">") == \
        "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nos", ">") == \
        "NOGROUP No such key 'nos' or consumer group 'g' in XREADGROUP with GROUP option"
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">") == WRONGTYPE
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$").startswith(
        "ERR The $ ID is meaningless in the context of XREADGROUP")
    assert raw.cmd("XREAD", "STREAMS", "s", ">") == \
        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
    assert raw.cmd("XREADGROUP", "STREAMS", "s", ">") == "ERR wrong number of arguments for 'xreadgroup' command"
    assert raw.cmd("XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">") == \
        "ERR Missing GROUP option for XREADGROUP"
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "a", "b").startswith("ERR Unbalanced")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "1-x") == BADID
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">") == NOTINT
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">") == "ERR timeout is negative"
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">") == "ERR syntax error"
    # an empty read creates no consumer
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">") is None
    assert [x[1] for x in raw.cmd("XINFO", "CONSUMERS", "s", "g")] == [b"c"]


# ------------------------------------------------------ lag and entries-read


def test_lag_and_entries_read(raw):
    fill(raw, "s", 5)
    raw.cmd("XGROUP", "CREATE", "s", "g", "0")
    raw.cmd("XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "0")
    assert lag_read(raw, "s", "g") == (None, 5)
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    raw.cmd("XREADGROUP", "GROUP", "h", "c", "COUNT", "2", "STREAMS", "s", ">")
    assert lag_read(raw, "s", "g") == (2, 3)
    assert lag_read(raw, "s", "h") == (2, 3)
    raw.cmd("XDEL", "s", "4-1")                        # a tombstone ahead: lag unknown
    assert lag_read(raw, "s", "g") == (2, None)
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert lag_read(raw, "s", "g") == (None, None)
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert lag_read(raw, "s", "g") == (5, 0)           # at the last id: exact again
    raw.cmd("XDEL", "s", "1-1")
    raw.cmd("XREADGROUP", "GROUP", "h", "c", "STREAMS", "s", ">")
    assert lag_read(raw, "s", "h") == (5, 0)
    raw.cmd("XADD", "s", "6-1", "x", "1")
    assert lag_read(raw, "s", "h") == (5, 1)
    raw.cmd("XTRIM", "s", "MAXLEN", "0")
    assert lag_read(raw, "s", "h") == (5, 1)
    raw.cmd("XGROUP", "CREATE", "s", "k", "0")
    assert lag_read(raw, "s", "k") == (None, 0)
    raw.cmd("XGROUP", "SETID", "s", "k", "3-1")
    assert lag_read(raw, "s", "k") == (None, 0)
    raw.cmd("XGROUP", "SETID", "s", "k", "0", "ENTRIESREAD", "100")
    assert lag_read(raw, "s", "k") == (100, -94)        # as Redis 7.0: no upper bound check
    raw.cmd("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    assert lag_read(raw, "e", "g") == (None, 0)
    raw.cmd("XADD", "e", "1-1", "a", "b")
    assert lag_read(raw, "e", "g") == (None, 1)
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", ">")
    assert lag_read(raw, "e", "g") == (1, 0)


# ------------------------------------------------------ XCLAIM, XAUTOCLAIM


def test_xclaim_options(raw):
    fill(raw, "f", 3)
    raw.cmd("XGROUP", "CREATE", "f", "g", "0")
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "f", ">")
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "JUSTID") == [b"1-1"]
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "2-1", "RETRYCOUNT", "7") == [[b"2-1", [b"f", b"2"]]]
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "9-9", "FORCE") == []
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "3-1", "FORCE", "LASTID", "7-7") == [[b"3-1", [b"f", b"3"]]]
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "3-1", "TIME", "5", "JUSTID") == [b"3-1"]
    assert groups(raw, "f")["g"][b"last-delivered-id"] == b"7-7"
    rows = raw.cmd("XPENDING", "f", "g", "-", "+", "10")
    assert [(r[0], r[1], r[3]) for r in rows] == [(b"1-1", b"d", 1), (b"2-1", b"d", 7), (b"3-1", b"d", 2)]
    assert rows[2][2] > 1000000                       # TIME 5: delivered in 1970
    assert raw.cmd("XCLAIM", "f", "g", "e", "3600000", "1-1", "JUSTID") == []     # not idle enough
    assert raw.cmd("XCLAIM", "f", "g", "e", "0", "1-1", "IDLE", "-5", "JUSTID", "BOGUS") == \
        "ERR Unrecognized XCLAIM option 'BOGUS'"
    assert raw.cmd("XCLAIM", "f", "g", "d", "abc", "3-1") == "ERR Invalid min-idle-time argument for XCLAIM"
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "IDLE", "x") == "ERR Invalid IDLE option argument for XCLAIM"
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "TIME", "x") == "ERR Invalid TIME option argument for XCLAIM"
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "RETRYCOUNT", "x") == \
        "ERR Invalid RETRYCOUNT option argument for XCLAIM"
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "LASTID", "x") == BADID
    assert raw.cmd("XCLAIM", "f", "nog", "d", "0", "1-1") == "NOGROUP No such key 'f' or consumer group 'nog'"
    # IDLE sets the delivery time in the past
    raw.cmd("XCLAIM", "f", "g", "d", "0", "1-1", "IDLE", "500000", "JUSTID")
    assert raw.cmd("XPENDING", "f", "g", "IDLE", "400000", "-", "+", "10")[0][0] == b"1-1"
    # a deleted entry is dropped from the PEL
    raw.cmd("XDEL", "f", "2-1")
    assert raw.cmd("XCLAIM", "f", "g", "e", "0", "2-1") == []
    assert raw.cmd("XPENDING", "f", "g")[0] == 2
    # FORCE makes an entry pending that was not: its count starts at 1, and this delivery counts
    raw.cmd("XADD", "f", "8-1", "f", "8")
    assert raw.cmd("XCLAIM", "f", "g", "d", "0", "8-1", "FORCE") == [[b"8-1", [b"f", b"8"]]]
    assert raw.cmd("XPENDING", "f", "g", "8-1", "8-1", "1")[0][3] == 2


def test_xautoclaim(raw):
    fill(raw, "f", 5)
    raw.cmd("XGROUP", "CREATE", "f", "g", "0")
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "f", ">")
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "0", "COUNT", "2") == \
        [b"3-1", [[b"1-1", [b"f", b"1"]], [b"2-1", [b"f", b"2"]]], []]
    raw.cmd("XDEL", "f", "3-1", "4-1")
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "3-1", "COUNT", "2", "JUSTID") == [b"5-1", [], [b"3-1", b"4-1"]]
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "(4-1", "JUSTID") == [b"0-0", [b"5-1"], []]
    assert raw.cmd("XAUTOCLAIM", "f", "g", "e", "3600000", "0") == [b"0-0", [], []]
    assert raw.cmd("XPENDING", "f", "g") == [3, b"1-1", b"5-1", [[b"d", b"3"]]]
    rows = raw.cmd("XPENDING", "f", "g", "-", "+", "10")
    assert [r[3] for r in rows] == [2, 2, 1]           # JUSTID does not count a delivery
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "0", "COUNT", "0") == "ERR COUNT must be > 0"
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "x", "0") == "ERR Invalid min-idle-time argument for XAUTOCLAIM"
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "x") == BADID
    assert raw.cmd("XAUTOCLAIM", "f", "g", "d", "0", "0", "FOO") == "ERR syntax error"
    assert raw.cmd("XAUTOCLAIM", "f", "nog", "d", "0", "0") == "NOGROUP No such key 'f' or consumer group 'nog'"


def test_consumer_recovery_with_xautoclaim(server):
    """A worker reads jobs and dies before acknowledging; another takes them over with XAUTOCLAIM."""
    r = server.client()
    for i in range(20):
        r.xadd("jobs", {"n": i})
    r.xgroup_create("jobs", "workers", id="0")
    got = r.xreadgroup("workers", "w1", {"jobs": ">"}, count=8)        # w1 dies holding 8 jobs
    assert len(got[0][1]) == 8
    done = []
    for _ in range(20):
        batch = r.xreadgroup("workers", "w2", {"jobs": ">"}, count=3)
        if not batch:
            break
        for mid, fields in batch[0][1]:
            done.append(int(fields["n"]))
            r.xack("jobs", "workers", mid)
    assert sorted(done) == list(range(8, 20))
    time.sleep(0.05)                                                    # the idle threshold below is 20 ms
    cursor, claimed = "0-0", []
    while True:
        cursor, msgs, deleted = r.xautoclaim("jobs", "workers", "w2", 20, cursor, count=3)
        assert deleted == []
        for mid, fields in msgs:
            claimed.append(int(fields["n"]))
            r.xack("jobs", "workers", mid)
        if cursor == "0-0":
            break
    assert sorted(claimed) == list(range(8))
    assert r.xpending("jobs", "workers")["pending"] == 0
    info = {c["name"]: c["pending"] for c in r.xinfo_consumers("jobs", "workers")}
    assert info == {"w1": 0, "w2": 0}
    assert r.xgroup_delconsumer("jobs", "workers", "w1") == 0
    r.close()


def test_redis_py_workers_in_threads(server):
    """Two worker threads blocked in XREADGROUP share a producer's jobs, each job exactly once."""
    prod = server.client()
    prod.xgroup_create("q", "g", id="$", mkstream=True)
    seen, lock = [], threading.Lock()
    stop = threading.Event()

    def work(name):
        c = server.client()
        while not stop.is_set():
            res = c.xreadgroup("g", name, {"q": ">"}, count=5, block=100)
            for _, msgs in res or []:
                for mid, f in msgs:
                    with lock:
                        seen.append(int(f["n"]))
                    c.xack("q", "g", mid)
        c.close()

    ts = [threading.Thread(target=work, args=("w%d" % i,)) for i in range(2)]
    for t in ts:
        t.start()
    for i in range(200):
        prod.xadd("q", {"n": i})
    poll_until(lambda: len(seen) >= 200, timeout=15, what="all jobs done")
    stop.set()
    for t in ts:
        t.join(timeout=5)
    assert sorted(seen) == list(range(200))
    assert prod.xpending("q", "g")["pending"] == 0
    prod.close()


# ------------------------------------------------------------------- XINFO


def test_xinfo(raw):
    fill(raw, "s", 3)
    raw.cmd("XGROUP", "CREATE", "s", "g", "0")
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    info = kv(raw.cmd("XINFO", "STREAM", "s"))
    assert list(info) == ["length", "radix-tree-keys", "radix-tree-nodes", "last-generated-id",
                          "max-deleted-entry-id", "entries-added", "recorded-first-entry-id", "groups",
                          "first-entry", "last-entry"]
    assert info["length"] == 3 and info["groups"] == 1 and info["entries-added"] == 3
    assert info["first-entry"] == [b"1-1", [b"f", b"1"]] and info["last-entry"] == [b"3-1", [b"f", b"3"]]
    full = kv(raw.cmd("XINFO", "STREAM", "s", "FULL", "COUNT", "2"))
    assert full["entries"] == [[b"1-1", [b"f", b"1"]], [b"2-1", [b"f", b"2"]]]
    g = kv(full["groups"][0])
    assert list(g) == ["name", "last-delivered-id", "entries-read", "lag", "pel-count", "pending", "consumers"]
    assert (g["name"], g["last-delivered-id"], g["entries-read"], g["lag"], g["pel-count"]) == \
        (b"g", b"1-1", 1, 2, 1)
    assert [(p[0], p[1], p[3]) for p in g["pending"]] == [(b"1-1", b"c", 1)]
    cons = kv(g["consumers"][0])
    assert list(cons) == ["name", "seen-time", "pel-count", "pending"]
    assert cons["pending"][0][0] == b"1-1" and cons["pending"][0][1] == g["pending"][0][2]
    assert len(kv(raw.cmd("XINFO", "STREAM", "s", "FULL"))["entries"]) == 3
    assert raw.cmd("XINFO", "STREAM", "s", "FOO").startswith("ERR unknown subcommand or wrong number of arguments")
    assert raw.cmd("XINFO", "STREAM", "nos") == "ERR no such key"
    assert raw.cmd("XINFO", "GROUPS", "nos") == "ERR no such key"
    assert raw.cmd("XINFO", "CONSUMERS", "s", "nog") == "NOGROUP No such consumer group 'nog' for key name 's'"
    c = kv(raw.cmd("XINFO", "CONSUMERS", "s", "g")[0])
    assert list(c) == ["name", "pending", "idle"] and c["pending"] == 1
    raw.cmd("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    e = kv(raw.cmd("XINFO", "STREAM", "e"))
    assert e["first-entry"] is None and e["last-entry"] is None and e["groups"] == 1
    raw.cmd("HELLO", "3")
    m = raw.cmd("XINFO", "STREAM", "s")
    assert isinstance(m, dict) and m[b"groups"] == 1


def test_memory_usage_counts_the_pel(raw):
    for i in range(500):
        raw.cmd("XADD", "s", "%d-1" % (i + 1), "f", "v")
    before = raw.cmd("MEMORY", "USAGE", "s")
    raw.cmd("XGROUP", "CREATE", "s", "g", "0")
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    after = raw.cmd("MEMORY", "USAGE", "s")
    assert after - before >= 500 * 16


# -------------------------------------------------------------- blocking


def test_blocked_xreadgroup_woken_by_xadd(raw):
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    waiter = raw.new()
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("XADD", "s", "2-1", "b", "2")
    assert waiter.read_reply() == [[b"s", [[b"2-1", [b"b", b"2"]]]]]
    assert raw.cmd("XPENDING", "s", "g")[:3] == [1, b"2-1", b"2-1"]


def test_blocked_xreadgroup_errors_on_delete_destroy_and_type_change(raw):
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    waiter = raw.new()
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("DEL", "s")
    assert waiter.read_reply() == "UNBLOCKED the stream key no longer exists"
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("XGROUP", "DESTROY", "s", "g")
    assert waiter.read_reply() == "NOGROUP the consumer group this client was blocked on no longer exists"
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("XGROUP", "CREATECONSUMER", "s", "g", "other")   # a write that serves nothing: still waiting
    assert blocked_count(raw) == 1
    raw.cmd("DEL", "s")
    raw.cmd("SET", "s", "x")
    assert waiter.read_reply() == "UNBLOCKED the stream key no longer exists"
    assert blocked_count(raw) == 0


def test_blocked_xreadgroup_woken_from_exec(raw):
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    waiter = raw.new()
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("MULTI")
    raw.cmd("XADD", "s", "2-1", "a", "1")
    raw.cmd("XADD", "s", "3-1", "b", "2")
    assert raw.cmd("EXEC") == [b"2-1", b"3-1"]
    assert waiter.read_reply() == [[b"s", [[b"2-1", [b"a", b"1"]], [b"3-1", [b"b", b"2"]]]]]
    # XADD then DEL in one transaction: the waiter finds no key
    waiter.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"))
    wait_blocked(raw)
    raw.cmd("MULTI")
    raw.cmd("XADD", "s", "4-1", "a", "1")
    raw.cmd("DEL", "s")
    assert raw.cmd("EXEC") == [b"4-1", 1]
    assert waiter.read_reply() == "UNBLOCKED the stream key no longer exists"


def test_xreadgroup_block_timeout_and_in_multi(raw):
    fill(raw, "s", 1)
    raw.cmd("XGROUP", "CREATE", "s", "g", "$")
    t = time.monotonic()
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "200", "STREAMS", "s", ">") is None
    assert time.monotonic() - t >= 0.15
    assert raw.cmd("XINFO", "CONSUMERS", "s", "g") == []
    raw.cmd("MULTI")
    raw.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert raw.cmd("EXEC") == [None]
    # history ids never block
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0") == [[b"s", []]]


# ------------------------------------------------------ DUMP, restart, replica


def group_state(c, key="s"):
    """Everything about the groups that must survive: XINFO STREAM FULL (delivery and seen times included)."""
    return c.execute_command("XINFO", "STREAM", key, "FULL", "COUNT", "0")


def make_groups(c, key="s"):
    for i in range(150):
        c.execute_command("XADD", key, "*", "n", str(i))
    c.execute_command("XGROUP", "CREATE", key, "g", "0")
    c.execute_command("XGROUP", "CREATE", key, "h", "$", "ENTRIESREAD", "150")
    c.execute_command("XGROUP", "CREATE", key, "empty", "0")
    c.execute_command("XGROUP", "CREATECONSUMER", key, "g", "idle-one")
    c.execute_command("XREADGROUP", "GROUP", "g", "a", "COUNT", "70", "STREAMS", key, ">")
    c.execute_command("XREADGROUP", "GROUP", "g", "b", "COUNT", "10", "STREAMS", key, ">")
    c.execute_command("XREADGROUP", "GROUP", "g", "a", "COUNT", "5", "STREAMS", key, "0")
    ids = [e[0] for e in c.execute_command("XRANGE", key, "-", "+", "COUNT", "3")]
    c.execute_command("XACK", key, "g", *ids)
    fourth = c.execute_command("XRANGE", key, "-", "+", "COUNT", "4")[3][0]
    c.execute_command("XCLAIM", key, "g", "b", "0", fourth, "RETRYCOUNT", "9", "IDLE", "1234")
    c.execute_command("XDEL", key, c.execute_command("XRANGE", key, "-", "+", "COUNT", "5")[4][0])  # pending, deleted


def test_dump_restore_keeps_groups(raw, server):
    c = server.client(decode_responses=False)
    make_groups(c)
    want = group_state(c)
    assert c.execute_command("RESTORE", "t", "0", c.execute_command("DUMP", "s")) == b"OK"
    assert group_state(c, "t") == want
    assert c.execute_command("COPY", "s", "u") == 1
    assert group_state(c, "u") == want
    c.close()


@pytest.mark.ruvio_only
def test_restore_of_a_payload_without_groups(raw):
    fill(raw, "s", 3)
    payload = raw.cmd("DUMP", "s")
    assert raw.cmd("RESTORE", "t", "0", payload) == "OK"
    assert raw.cmd("XINFO", "GROUPS", "t") == []


@pytest.mark.ruvio_only
def test_restart_keeps_groups(start_server, tmp_path):
    d = str(tmp_path / "p")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client(decode_responses=False)
    make_groups(c, "t")                                # t: in the checkpoint
    assert c.save()
    make_groups(c, "s")                                # s: in the WAL only
    c.execute_command("XAUTOCLAIM", "t", "g", "z", "0", "0", "COUNT", "7")
    want = (group_state(c, "s"), group_state(c, "t"))
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=5)
    srv2 = start_server("--dir", d, "--durability", "always")
    c2 = srv2.client(decode_responses=False)
    assert (group_state(c2, "s"), group_state(c2, "t")) == want
    assert c2.save()
    srv2.stop()
    srv3 = start_server("--dir", d, "--durability", "always")
    c3 = srv3.client(decode_responses=False)
    assert (group_state(c3, "s"), group_state(c3, "t")) == want
    no_sanitizer_report(srv2, srv3)


@pytest.mark.ruvio_only
def test_replica_keeps_groups(start_server):
    p = start_server()
    c = p.client(decode_responses=False)
    make_groups(c, "t")                                # before the replica: the full sync carries it
    rs = start_server("--replicaof", "127.0.0.1 %d" % p.port)
    r = rs.client(decode_responses=False)
    poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
               what="replica link up")
    make_groups(c, "s")                                # after: the stream of effects carries it
    c.execute_command("XGROUP", "SETID", "s", "h", "0", "ENTRIESREAD", "3")
    waiter = p.raw(timeout=10)                         # a woken XREADGROUP is logged when it serves
    c.execute_command("XGROUP", "CREATE", "s", "late", "$")
    waiter.send(encode_command("XREADGROUP", "GROUP", "late", "w", "BLOCK", "5000", "STREAMS", "s", ">"))
    poll_until(lambda: c.info("clients")["blocked_clients"] == 1, what="blocked reader")
    c.execute_command("XADD", "s", "*", "wake", "up")
    assert len(waiter.read_reply()[0][1]) == 1
    waiter.close()
    c.execute_command("XGROUP", "DELCONSUMER", "t", "g", "b")
    want = (group_state(c, "s"), group_state(c, "t"))
    poll_until(lambda: (group_state(r, "s") if r.exists("s") else None, group_state(r, "t")) == want,
               timeout=10, what="replica groups")
    no_sanitizer_report(p, rs)


@pytest.mark.ruvio_only
def test_resharding_keeps_groups(start_server, tmp_path):
    import redis
    d = str(tmp_path / "rs")
    srv = start_server("--dir", d, "--durability", "always", "--shards", "2")
    rc = redis.RedisCluster(host=srv.host, port=srv.port, socket_timeout=10, decode_responses=False)
    keys = ["gs%d" % i for i in range(8)]
    for k in keys:
        make_groups(rc, k)
    want = {k: group_state(rc, k) for k in keys}
    rc.close()
    srv.stop()
    srv3 = start_server("--dir", d, "--durability", "always", "--shards", "3")
    rc = redis.RedisCluster(host=srv3.host, port=srv3.port, socket_timeout=10, decode_responses=False)
    assert {k: group_state(rc, k) for k in keys} == want
    got = rc.xreadgroup("g", "b", {keys[0]: ">"}, count=1)
    assert got and len(got[0][1]) == 1                 # the group reads on where it was
    rc.close()
    no_sanitizer_report(srv3)


def test_xreadgroup_in_scripts(raw):
    raw.cmd("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for cmd in ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0"), ("XREAD", "BLOCK", "0"):
        script = "return redis.call(%s, 'STREAMS', KEYS[1], ARGV[1])" % ", ".join("'%s'" % a for a in cmd)
        got = raw.cmd("EVAL", script, "1", "s", ">" if cmd[0] == "XREADGROUP" else "$")
        assert got.startswith("ERR %s command is not allowed with BLOCK option from scripts" % cmd[0])
    raw.cmd("XADD", "s", "1-1", "a", "b")
    got = raw.cmd("EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', KEYS[1], '>')", "1", "s")
    assert got == [[b"s", [[b"1-1", [b"a", b"b"]]]]]
    assert raw.cmd("XPENDING", "s", "g")[:3] == [1, b"1-1", b"1-1"]


def test_blocked_consumers_are_served_in_order_one_entry_each(raw):
    raw.cmd("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    w1, w2 = raw.new(), raw.new()
    w1.send(encode_command("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw, 1)
    w2.send(encode_command("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "5000", "STREAMS", "s", ">"))
    wait_blocked(raw, 2)
    raw.cmd("XADD", "s", "1-1", "a", "1")
    assert w1.read_reply() == [[b"s", [[b"1-1", [b"a", b"1"]]]]]
    assert blocked_count(raw) == 1                         # c2 found nothing new and waits on
    raw.cmd("XADD", "s", "2-1", "b", "2")
    assert w2.read_reply() == [[b"s", [[b"2-1", [b"b", b"2"]]]]]
    assert raw.cmd("XPENDING", "s", "g") == [2, b"1-1", b"2-1", [[b"c1", b"1"], [b"c2", b"1"]]]


# ------------------------------------------------------ differential run against redis-server


def _diff_op(rnd, nid):
    """One random group operation (nid: [the last id's ms], moved on by XADD/XSETID)."""
    g, cons = rnd.choice(["g1", "g2"]), rnd.choice(["a", "b", "c"])
    rid = "%d-0" % rnd.randint(1, nid[0] + 1)
    op = rnd.randrange(15)
    if op < 3:
        nid[0] += 1
        return ("XADD", "s", "%d-0" % nid[0], "f", str(nid[0]))
    return [("XDEL", "s", rid),
            ("XREADGROUP", "GROUP", g, cons, "COUNT", str(rnd.randint(1, 4)), "STREAMS", "s", ">"),
            ("XREADGROUP", "GROUP", g, cons, "NOACK", "COUNT", "2", "STREAMS", "s", ">"),
            ("XREADGROUP", "GROUP", g, cons, "COUNT", "3", "STREAMS", "s", rnd.choice(["0", rid])),
            ("XACK", "s", g, rid, "%d-0" % rnd.randint(1, nid[0] + 1)),
            ("XCLAIM", "s", g, cons, "0", rid) + tuple(rnd.sample(["JUSTID", "FORCE"], rnd.randint(0, 2))),
            ("XAUTOCLAIM", "s", g, cons, "0", rid, "COUNT", str(rnd.randint(1, 5)), "JUSTID")[:8 + rnd.randint(0, 1)],
            ("XGROUP", "SETID", "s", g, rnd.choice([rid, "$", "0"]), "ENTRIESREAD", str(rnd.randint(0, nid[0])))
            [:5 + 2 * (rnd.random() < .3)],
            ("XGROUP", "DELCONSUMER", "s", g, cons),
            ("XGROUP", "DESTROY", "s", g) if rnd.random() < .3 else
            ("XGROUP", "CREATE", "s", g, rnd.choice([rid, "$", "0"]), "ENTRIESREAD", str(rnd.randint(-1, nid[0])))
            [:5 + 2 * (rnd.random() < .3)],
            ("XTRIM", "s", "MAXLEN", str(rnd.randint(0, 20))),
            ("XREADGROUP", "GROUP", g, cons, "STREAMS", "s", ">")][op - 3]


@pytest.mark.ruvio_only
def test_random_group_operations_match_redis(server, start_server):
    """Random XADD/XDEL/XTRIM/XREADGROUP/XACK/XCLAIM/XAUTOCLAIM/XGROUP sequences, each step's reply and then
    XINFO GROUPS (lag, entries-read), XINFO CONSUMERS and XPENDING (idle times aside) equal redis-server's."""
    import random
    import shutil
    import redis
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    ref = start_server(argv=["redis-server", "--port", "{port}", "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", "{dir}"])
    pair = [redis.Redis(host=s.host, port=s.port, socket_timeout=10) for s in (ref, server)]
    for c in pair:
        c.response_callbacks.clear()

    def both(*args):
        out = []
        for c in pair:
            try:
                out.append(c.execute_command(*args))
            except redis.ResponseError as e:
                out.append("error: %s" % e)
        return out

    for seed in range(6):
        rnd, nid = random.Random(seed), [1]
        both("FLUSHALL")
        both("XADD", "s", "1-0", "f", "v")
        both("XGROUP", "CREATE", "s", "g1", "0")
        both("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "0")
        for step in range(200):
            cmd = _diff_op(rnd, nid)
            a, b = both(*cmd)
            assert a == b, (seed, step, cmd)
            a, b = both("XINFO", "GROUPS", "s")
            assert a == b, (seed, step, cmd, "XINFO GROUPS")
            for g in ("g1", "g2"):
                a, b = both("XINFO", "CONSUMERS", "s", g)
                if not isinstance(a, str):
                    a, b = [[x[1], x[3]] for x in a], [[x[1], x[3]] for x in b]
                assert a == b, (seed, step, cmd, "XINFO CONSUMERS")
                a, b = both("XPENDING", "s", g, "-", "+", "1000")
                if not isinstance(a, str):
                    a, b = [[x[0], x[1], x[3]] for x in a], [[x[0], x[1], x[3]] for x in b]
                assert a == b, (seed, step, cmd, "XPENDING")
    for c in pair:
        c.close()
