"""Client-side caching: CLIENT TRACKING (default mode, BCAST/PREFIX, OPTIN/OPTOUT, NOLOOP, REDIRECT), CLIENT
CACHING, GETREDIR, TRACKINGINFO, and the invalidation messages (RESP3 pushes, RESP2 __redis__:invalidate).

Shared with redis-server (RUVIO_TARGET=redis). The python3-redis here is 4.3.4: it has neither protocol=3 nor a
client-side cache, so RESP3 is spoken through the raw-socket helper (HELLO 3, pushes read as Push)."""

import time

import pytest

from conftest import IS_REDIS, Push, RespError, parse_info, poll_until

INV = b"__redis__:invalidate"


def info_int(conn, section, field):
    return int(parse_info(conn.cmd("INFO", section).decode())[section][field])


def resp3(raw):
    c = raw.new()
    c.cmd("HELLO", "3")
    return c


def read_push(c):
    msg = c.read_reply()
    assert isinstance(msg, Push), msg
    return list(msg)


def invalidated_keys(c, want, what="invalidations"):
    """Read pushes until the keys in `want` were all announced (BCAST may split them); bounded by the socket
    timeout of each read."""
    got = set()
    while not set(want) <= got:
        kind, keys = read_push(c)
        assert kind == b"invalidate"
        got.update(keys)
    return got


def test_resp3_default_mode_invalidates_once(raw):
    c = resp3(raw)
    w = raw.new()
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    w.cmd("SET", "k1", "v")
    assert c.cmd("GET", "k1") == b"v"
    assert c.cmd("MGET", "k2", "k3") == [None, None]
    w.cmd("SET", "k1", "x")
    assert read_push(c) == [b"invalidate", [b"k1"]]
    w.cmd("SET", "k1", "y")          # forgotten after the first invalidation
    w.cmd("SET", "k3", "z")
    assert read_push(c) == [b"invalidate", [b"k3"]]
    assert c.cmd("PING") == "PONG"
    assert c.nothing_pending()


def test_own_write_and_noloop(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd("GET", "a")
    assert c.cmd("SET", "a", "1") == "OK"      # the reply first, then the push
    assert read_push(c) == [b"invalidate", [b"a"]]
    assert c.cmd("CLIENT", "TRACKING", "ON", "NOLOOP") == "OK"
    c.cmd("GET", "a")
    assert c.cmd("SET", "a", "2") == "OK"
    assert c.nothing_pending()
    w = raw.new()
    w.cmd("SET", "a", "3")
    c.cmd("GET", "a")
    w.cmd("SET", "a", "4")
    assert read_push(c) == [b"invalidate", [b"a"]]


def test_transaction_push_after_exec_reply(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd("GET", "t")
    c.cmd("MULTI")
    c.cmd("SET", "t", "1")
    assert c.cmd("EXEC") == ["OK"]
    assert read_push(c) == [b"invalidate", [b"t"]]


def test_resp2_redirect_to_pubsub_client(raw):
    sub = raw.new()
    sub_id = sub.cmd("CLIENT", "ID")
    assert sub.cmd("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", INV, 1]
    c = raw.new()
    assert c.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(sub_id)) == "OK"
    assert c.cmd("CLIENT", "GETREDIR") == sub_id
    c.cmd("GET", "a")
    c.cmd("GET", "b")
    w = raw.new()
    w.cmd("MSET", "a", "1", "b", "2")
    got = set()
    for _ in range(2):
        kind, ch, keys = sub.read_reply()
        assert (kind, ch) == (b"message", INV)
        got.update(keys)
    assert got == {b"a", b"b"}
    c.cmd("GET", "a")
    w.cmd("FLUSHALL")
    assert sub.read_reply() == [b"message", INV, None]     # a flush: null, "drop everything"


def test_redirect_broken(raw):
    tgt = raw.new()
    tid = tgt.cmd("CLIENT", "ID")
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(tid)) == "OK"
    c.cmd("GET", "k")
    tgt.close()
    poll_until(lambda: "id=%d " % tid not in raw.cmd("CLIENT", "LIST").decode(), what="target gone")
    raw.cmd("SET", "k", "1")
    assert read_push(c) == [b"tracking-redir-broken", tid]
    info = c.cmd("CLIENT", "TRACKINGINFO")
    assert info[b"flags"] == {b"on", b"broken_redirect"}
    assert info[b"redirect"] == tid
    cid = c.cmd("CLIENT", "ID")
    line = c.cmd("CLIENT", "LIST", "ID", str(cid))
    assert " flags=tR " in str(line) and " redir=%d " % tid in str(line)


def test_bcast_prefixes(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "obj:") == "OK"
    w = raw.new()
    w.cmd("SET", "user:1", "a")                # never read: announced anyway
    assert invalidated_keys(c, {b"user:1"}) == {b"user:1"}
    w.cmd("SET", "other", "x")
    w.cmd("MSET", "obj:1", "1", "obj:2", "2", "user:2", "3")
    # one message per prefix, holding that prefix's keys
    got = {tuple(sorted(read_push(c)[1])) for _ in range(2)}
    assert got == {(b"obj:1", b"obj:2"), (b"user:2",)}
    assert c.nothing_pending()
    info = c.cmd("CLIENT", "TRACKINGINFO")
    assert info[b"flags"] == {b"on", b"bcast"}
    assert sorted(info[b"prefixes"]) == [b"obj:", b"user:"]
    assert info_int(raw, "stats", "tracking_total_prefixes") == 2


def test_bcast_without_prefix_announces_every_key(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON", "BCAST") == "OK"
    raw.cmd("SET", "anything", "1")
    assert invalidated_keys(c, {b"anything"}) == {b"anything"}
    assert c.cmd("CLIENT", "TRACKINGINFO")[b"prefixes"] == [b""]


def test_optin_and_optout(raw):
    c = resp3(raw)
    w = raw.new()
    assert c.cmd("CLIENT", "TRACKING", "ON", "OPTIN") == "OK"
    c.cmd("GET", "notcached")
    assert c.cmd("CLIENT", "CACHING", "YES") == "OK"
    c.cmd("GET", "cached")
    c.cmd("GET", "notcached2")              # CACHING lasted one command
    w.cmd("MSET", "notcached", "1", "cached", "1", "notcached2", "1")
    assert read_push(c) == [b"invalidate", [b"cached"]]
    assert c.nothing_pending()
    assert c.cmd("CLIENT", "TRACKING", "OFF") == "OK"
    assert c.cmd("CLIENT", "TRACKING", "ON", "OPTOUT") == "OK"
    c.cmd("GET", "x")
    assert c.cmd("CLIENT", "CACHING", "NO") == "OK"
    c.cmd("GET", "y")
    w.cmd("MSET", "x", "1", "y", "1")
    assert read_push(c) == [b"invalidate", [b"x"]]
    assert c.nothing_pending()


def test_optin_caching_covers_a_transaction(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON", "OPTIN") == "OK"
    c.cmd("CLIENT", "CACHING", "YES")
    c.cmd("MULTI")
    c.cmd("GET", "m1")
    c.cmd("GET", "m2")
    assert c.cmd("EXEC") == [None, None]
    raw.cmd("MSET", "m1", "1", "m2", "2")
    assert invalidated_keys(c, {b"m1", b"m2"}) == {b"m1", b"m2"}


def test_expiry_invalidates(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    raw.cmd("SET", "e", "1", "PX", "500")      # (room for a slow machine to read it first)
    assert c.cmd("GET", "e") == b"1"
    # active expiry deletes it (no one reads it again): the push comes by itself
    assert read_push(c) == [b"invalidate", [b"e"]]


def test_flushdb_sends_null_resp3(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd("GET", "f")
    raw.cmd("FLUSHDB")
    assert read_push(c) == [b"invalidate", None]
    assert info_int(raw, "stats", "tracking_total_keys") == 0


def test_trackinginfo_getredir_and_info_fields(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKINGINFO") == {b"flags": {b"off"}, b"redirect": -1, b"prefixes": []}
    assert c.cmd("CLIENT", "GETREDIR") == -1
    assert c.cmd("CLIENT", "TRACKING", "ON", "OPTIN") == "OK"
    assert c.cmd("CLIENT", "GETREDIR") == 0
    c.cmd("CLIENT", "CACHING", "YES")
    assert c.cmd("CLIENT", "TRACKINGINFO") == {b"flags": {b"on", b"optin", b"caching-yes"}, b"redirect": 0,
                                               b"prefixes": []}
    c.cmd("GET", "i1")
    two = raw.new()
    two.cmd("CLIENT", "TRACKING", "ON")
    two.cmd("GET", "i1")
    two.cmd("GET", "i2")
    assert info_int(raw, "clients", "tracking_clients") == 2
    assert info_int(raw, "stats", "tracking_total_keys") == 2
    assert info_int(raw, "stats", "tracking_total_items") == 3
    cid = c.cmd("CLIENT", "ID")
    assert " flags=t " in str(c.cmd("CLIENT", "LIST", "ID", str(cid))) or " flags=t " in str(
        c.cmd("CLIENT", "INFO"))
    # RESP2 shape of TRACKINGINFO
    assert two.cmd("CLIENT", "TRACKINGINFO") == [b"flags", [b"on"], b"redirect", 0, b"prefixes", []]
    assert c.cmd("RESET") == "RESET"
    assert c.cmd("CLIENT", "GETREDIR") == -1
    assert info_int(raw, "clients", "tracking_clients") == 1


ERRORS = [
    (("ON", "REDIRECT", "999999"), "ERR The client ID you want redirect to does not exist"),
    (("ON", "REDIRECT", "abc"), "ERR value is not an integer or out of range"),
    (("ON", "PREFIX", "a"), "ERR PREFIX option requires BCAST mode to be enabled"),
    (("ON", "OPTIN", "OPTOUT"), "ERR You can't specify both OPTIN mode and OPTOUT mode"),
    (("ON", "BCAST", "OPTIN"), "ERR OPTIN and OPTOUT are not compatible with BCAST"),
    (("ON", "BCAST", "PREFIX", "a", "PREFIX", "ab"),
     "ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap."),
    (("MAYBE",), "ERR syntax error"),
    (("ON", "FOO"), "ERR syntax error"),
    (("ON", "PREFIX"), "ERR syntax error"),
]


@pytest.mark.parametrize("args,err", ERRORS)
def test_tracking_errors(raw, args, err):
    assert raw.cmd("CLIENT", "TRACKING", *args) == RespError(err)
    assert raw.cmd("CLIENT", "TRACKINGINFO")[1] == [b"off"]


def test_mode_switch_and_caching_errors(raw):
    assert raw.cmd("CLIENT", "CACHING", "YES") == RespError(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
    assert raw.cmd("CLIENT", "TRACKING", "ON", "OPTIN") == "OK"
    assert raw.cmd("CLIENT", "CACHING", "NO") == RespError(
        "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    assert raw.cmd("CLIENT", "CACHING", "MAYBE") == RespError("ERR syntax error")
    assert raw.cmd("CLIENT", "TRACKING", "ON", "OPTOUT") == RespError(
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling "
        "it with a different mode.")
    assert raw.cmd("CLIENT", "TRACKING", "ON", "BCAST") == RespError(
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling "
        "it with a different mode.")
    assert raw.cmd("CLIENT", "TRACKING", "OFF") == "OK"
    assert raw.cmd("CLIENT", "TRACKING", "ON") == "OK"
    assert raw.cmd("CLIENT", "CACHING", "YES") == RespError(
        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    assert raw.cmd("CLIENT", "TRACKING", "OFF") == "OK"
    assert raw.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab") == "OK"
    assert raw.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a") == RespError(
        "ERR Prefix 'a' overlaps with an existing prefix 'ab'. Prefixes for a single client must not overlap.")


def test_resp2_without_redirect_gets_nothing(raw):
    c = raw.new()
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd("GET", "q")
    raw.cmd("SET", "q", "1")
    assert c.cmd("PING") == "PONG"
    assert c.nothing_pending()


@pytest.mark.ruvio_only  # a node of several shards is Ruvio's (each shard a port of its own)
def test_redirect_and_bcast_across_shards(start_server):
    srv = start_server("--shards", "3")
    sub = srv.raw(port=srv.port + 2)
    sub_id = sub.cmd("CLIENT", "ID")
    assert sub.cmd("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", INV, 1]
    # a key of shard 0 (the others answer MOVED for it)
    s0 = srv.raw(port=srv.port)
    key = next(k for k in ("k%d" % i for i in range(200)) if not str(s0.cmd("GET", k)).startswith("MOVED"))
    c = srv.raw(port=srv.port)
    assert c.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(sub_id)) == "OK"
    assert c.cmd("CLIENT", "GETREDIR") == sub_id
    assert c.cmd("GET", key) is None
    c.cmd("SET", key, "1")
    assert sub.read_reply() == [b"message", INV, [key.encode()]]
    # the target goes: the next invalidation finds it gone and the RESP3 client is told
    r3 = srv.raw(port=srv.port)
    r3.cmd("HELLO", "3")
    assert r3.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(sub_id)) == "OK"
    r3.cmd("GET", key)
    sub.close()
    poll_until(lambda: "id=%d " % sub_id not in srv.raw(port=srv.port + 2).cmd("CLIENT", "LIST").decode(),
               what="target closed")
    c.cmd("SET", key, "2")
    assert read_push(r3) == [b"tracking-redir-broken", sub_id]
    # BCAST on shard 1 hears writes made on every shard
    b = srv.raw(port=srv.port + 1)
    b.cmd("HELLO", "3")
    assert b.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "k") == "OK"

    def announced():
        srv.raw(port=srv.port).cmd("SET", key, "3")
        return b.nothing_pending(wait=0.1) is False
    poll_until(announced, what="BCAST registration reached shard 0")
    assert read_push(b) == [b"invalidate", [key.encode()]]


def test_script_reads_and_writes(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    # the keys a script's commands read are the caller's
    assert c.cmd("EVAL", "return redis.call('get', KEYS[1])", "1", "sk") is None
    raw.cmd("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "sk")
    assert read_push(c) == [b"invalidate", [b"sk"]]


def test_lazy_expiry_of_a_read_key(raw):
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    raw.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        raw.cmd("SET", "lz", "1", "PX", "500")
        assert c.cmd("GET", "lz") == b"1"
        poll_until(lambda: raw.cmd("PTTL", "lz") < 0, what="deadline passed")
        # a read of it (lazy expiry; PTTL may be the one) deletes it: the tracking client hears of it
        assert raw.cmd("GET", "lz") is None
        assert read_push(c) == [b"invalidate", [b"lz"]]
    finally:
        raw.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_eviction_invalidates(start_server):
    srv = start_server("--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru")
    c = srv.raw()
    c.cmd("HELLO", "3")
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    w = srv.raw()
    w.cmd("SET", "ev", "1", "EX", "3600")       # the only key eviction may take
    assert c.cmd("GET", "ev") == b"1"
    val = "x" * 10000
    for i in range(2000):                       # ~20 MB at most: past the budget well before
        w.cmd("SET", "fill:%d" % i, val)
        if w.cmd("EXISTS", "ev") == 0:
            break
    assert w.cmd("EXISTS", "ev") == 0
    assert read_push(c) == [b"invalidate", [b"ev"]]


def test_keys_expiring_under_a_multi_key_read(raw):
    """The reader's own MGET meets its tracked keys expired: the pushes never split the reply (Redis 7.0 sends
    them before it, Ruvio after it)."""
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    raw.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        t0 = time.monotonic()
        raw.cmd("SET", "x1", "1", "PX", "1000")
        raw.cmd("SET", "x2", "2", "PX", "1000")
        assert c.cmd("MGET", "x1", "x2") == [b"1", b"2"]
        # past the deadlines, which nothing else reads: waiting on the clock, not on another party
        time.sleep(max(0.0, t0 + 1.1 - time.monotonic()))
        c.send(b"*3\r\n$4\r\nMGET\r\n$2\r\nx1\r\n$2\r\nx2\r\n")
        pushes, reply = [], None
        while reply is None or len(pushes) < 2:
            msg = c.read_reply()
            if isinstance(msg, Push):
                pushes.append(list(msg))
            else:
                assert reply is None, msg
                reply = msg
        assert reply == [None, None]
        assert sorted(p[1][0] for p in pushes) == [b"x1", b"x2"]
    finally:
        raw.cmd("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_redirect_twice_and_off_with_options(raw):
    me = raw.cmd("CLIENT", "ID")
    assert raw.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(me), "REDIRECT", "abc") == RespError(
        "ERR A client can only redirect to a single other client")
    assert raw.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "a") == RespError(
        "ERR Prefix 'a' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap.")
    assert raw.cmd("CLIENT", "TRACKING", "OFF", "PREFIX", "a", "OPTIN") == "OK"
    # redirecting to itself is allowed
    assert raw.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(me)) == "OK"
    assert raw.cmd("CLIENT", "GETREDIR") == me


def test_tracking_table_max_keys(raw):
    """As Redis's own test: lowering the limit forgets keys, each with an invalidation."""
    old = raw.cmd("CONFIG", "GET", "tracking-table-max-keys")[1]
    c = resp3(raw)
    try:
        assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
        assert c.cmd("MGET", "mk1", "mk2", "mk3") == [None, None, None]
        assert raw.cmd("CONFIG", "SET", "tracking-table-max-keys", "1") == "OK"
        got = set()
        while len(got) < 2:       # two of the three are forgotten (Redis does it in its cron: bounded reads)
            kind, keys = read_push(c)
            assert kind == b"invalidate"
            got.update(keys)
        assert got < {b"mk1", b"mk2", b"mk3"}
        poll_until(lambda: info_int(raw, "stats", "tracking_total_keys") <= 1, what="table trimmed")
    finally:
        raw.cmd("CONFIG", "SET", "tracking-table-max-keys", old)


# Writes that change nothing invalidate nothing (Redis signals a key only when it really modified it). Each case:
# (setup, the tracked read, the write). The write runs, then a real write of a second tracked key: the first push
# must be that key's, so a wrong invalidation cannot hide behind a timeout.
NOOP_WRITES = [
    ([["SET", "nk", "v"]], ["GET", "nk"], ["SET", "nk", "w", "NX"]),
    ([], ["GET", "nk"], ["SET", "nk", "w", "XX"]),
    ([["SET", "nk", "v"]], ["GET", "nk"], ["SET", "nk", "w", "NX", "GET"]),
    ([["SET", "nk", "v"]], ["GET", "nk"], ["SETNX", "nk", "w"]),
    ([["SET", "nk", "v"]], ["GET", "nk"], ["MSETNX", "nk", "w", "nk2", "x"]),
    ([], ["GET", "nk"], ["DEL", "nk"]),
    ([["SET", "nk3", "v"]], ["GET", "nk"], ["DEL", "nk", "nk3"]),      # only the key it deleted
    ([], ["GET", "nk"], ["UNLINK", "nk"]),
    ([], ["GET", "nk"], ["GETDEL", "nk"]),
    ([["SET", "nk", "v"]], ["GET", "nk"], ["GETEX", "nk", "PERSIST"]),
    ([["SET", "nk", "v"]], ["GET", "nk"], ["PERSIST", "nk"]),
    ([], ["GET", "nk"], ["EXPIRE", "nk", "100"]),
    ([["SET", "nk", "v"], ["SET", "nk3", "w"]], ["GET", "nk"], ["COPY", "nk3", "nk"]),
    ([["SET", "nk", "\x00"]], ["GET", "nk"], ["SETBIT", "nk", "0", "0"]),
    ([["PFADD", "nk", "a"]], ["PFCOUNT", "nk"], ["PFADD", "nk", "a"]),
    ([["SADD", "nk", "a"]], ["SMEMBERS", "nk"], ["SADD", "nk", "a"]),
    ([["SADD", "nk", "a"]], ["SMEMBERS", "nk"], ["SREM", "nk", "b"]),
    ([["SADD", "nk", "a"], ["SADD", "nk3", "b"]], ["SMEMBERS", "nk"], ["SMOVE", "nk3", "nk", "zz"]),
    ([["HSET", "nk", "f", "v"]], ["HGETALL", "nk"], ["HSETNX", "nk", "f", "w"]),
    ([["HSET", "nk", "f", "v"]], ["HGETALL", "nk"], ["HDEL", "nk", "g"]),
    ([["ZADD", "nk", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["ZADD", "nk", "1", "a"]),
    ([["ZADD", "nk", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["ZADD", "nk", "NX", "2", "a"]),
    ([["ZADD", "nk", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["ZREM", "nk", "b"]),
    ([["ZADD", "nk", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["ZREMRANGEBYSCORE", "nk", "5", "6"]),
    ([["RPUSH", "nk", "a"]], ["LRANGE", "nk", "0", "-1"], ["LREM", "nk", "0", "b"]),
    ([["RPUSH", "nk", "a"]], ["LRANGE", "nk", "0", "-1"], ["LINSERT", "nk", "BEFORE", "zz", "b"]),
    ([], ["LRANGE", "nk", "0", "-1"], ["LPUSHX", "nk", "a"]),
    ([], ["LRANGE", "nk", "0", "-1"], ["LPOP", "nk"]),
    ([], ["LRANGE", "nk", "0", "-1"], ["RPOPLPUSH", "nk3", "nk"]),
    ([["RPUSH", "nk3", "a"]], ["LRANGE", "nk", "0", "-1"], ["LMPOP", "2", "nk", "nk3", "LEFT"]),  # only the popped key
    ([], ["LRANGE", "nk", "0", "-1"], ["LMPOP", "2", "nk", "nk3", "LEFT"]),
    ([["ZADD", "nk3", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["ZMPOP", "2", "nk", "nk3", "MIN"]),
    ([["RPUSH", "nk3", "a"]], ["LRANGE", "nk", "0", "-1"], ["BLMPOP", "0", "2", "nk", "nk3", "LEFT"]),
    ([["ZADD", "nk3", "1", "a"]], ["ZRANGE", "nk", "0", "-1"], ["BZPOPMIN", "nk", "nk3", "0"]),
    ([["SADD", "nk", "a"], ["SADD", "nk3", "a"]], ["SMEMBERS", "nk"], ["SMOVE", "nk3", "nk", "a"]),  # already there
]


@pytest.mark.parametrize("setup,read,write", NOOP_WRITES, ids=[" ".join(w[2]) for w in NOOP_WRITES])
def test_write_that_changes_nothing_does_not_invalidate(raw, setup, read, write):
    for s in setup:
        raw.cmd(*s)
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd(*read)
    c.cmd("GET", "sentinel")
    r = raw.cmd(*write)
    assert not isinstance(r, RespError), r
    raw.cmd("SET", "sentinel", "1")
    assert read_push(c) == [b"invalidate", [b"sentinel"]]


# ... and writes that do change the key (or rewrite it in place) still do, as Redis.
CHANGING_WRITES = [
    ([["SET", "ck", "v"]], ["GET", "ck"], ["SET", "ck", "v"]),                 # same value: rewritten
    ([["HSET", "ck", "f", "v"]], ["HGETALL", "ck"], ["HSET", "ck", "f", "v"]),
    ([["SET", "ck", "v", "EX", "100"]], ["GET", "ck"], ["PERSIST", "ck"]),
    ([["SET", "ck", "1"]], ["GET", "ck"], ["INCRBY", "ck", "0"]),
    ([["SET", "ck", "v"], ["SET", "ck3", "w"]], ["GET", "ck"], ["DEL", "ck3", "ck"]),
    ([["SADD", "ck", "a"]], ["SMEMBERS", "ck"], ["SADD", "ck", "a", "b"]),
    ([["RPUSH", "ck", "a"]], ["LRANGE", "ck", "0", "-1"], ["LSET", "ck", "0", "a"]),
    ([["RPUSH", "ck", "a"]], ["LRANGE", "ck", "0", "-1"], ["LMPOP", "2", "ck3", "ck", "LEFT"]),
    ([["ZADD", "ck", "1", "a"]], ["ZRANGE", "ck", "0", "-1"], ["ZMPOP", "2", "ck3", "ck", "MAX"]),
    ([["SADD", "ck3", "a"], ["SADD", "ck", "a"]], ["SMEMBERS", "ck"], ["SMOVE", "ck", "ck3", "a"]),
]


@pytest.mark.parametrize("setup,read,write", CHANGING_WRITES, ids=[" ".join(w[2]) for w in CHANGING_WRITES])
def test_write_that_changes_the_key_invalidates(raw, setup, read, write):
    for s in setup:
        raw.cmd(*s)
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    c.cmd(*read)
    raw.cmd(*write)
    assert read_push(c) == [b"invalidate", [b"ck"]]


def test_swapdb_does_not_invalidate(raw):
    """Redis 7.0 sends nothing on SWAPDB (its table holds key names, whatever the database)."""
    raw.cmd("SET", "sw", "0")
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    assert c.cmd("GET", "sw") == b"0"
    c.cmd("GET", "sentinel")
    assert raw.cmd("SWAPDB", "0", "1") == "OK"
    raw.cmd("SWAPDB", "0", "1")
    raw.cmd("SET", "sentinel", "1")
    assert read_push(c) == [b"invalidate", [b"sentinel"]]


@pytest.mark.ruvio_only  # a node of several shards is Ruvio's
def test_flush_reaches_bcast_clients_of_every_shard(start_server):
    """A flush empties its own shard only (each shard is a cluster node): its tracking clients and the BCAST
    clients of every shard (who hear every shard's writes) get the null; a default-mode client of another shard
    keeps its keys, which the flush did not touch."""
    srv = start_server("--shards", "3")
    s0, s1 = srv.raw(port=srv.port), srv.raw(port=srv.port + 1)
    key0 = next(k for k in ("k%d" % i for i in range(300)) if not str(s0.cmd("GET", k)).startswith("MOVED"))
    key1 = next(k for k in ("k%d" % i for i in range(300)) if not str(s1.cmd("GET", k)).startswith("MOVED"))
    d0 = srv.raw(port=srv.port)
    d0.cmd("HELLO", "3")
    assert d0.cmd("CLIENT", "TRACKING", "ON") == "OK"
    d0.cmd("GET", key0)
    d1 = srv.raw(port=srv.port + 1)
    d1.cmd("HELLO", "3")
    assert d1.cmd("CLIENT", "TRACKING", "ON") == "OK"
    d1.cmd("GET", key1)
    b = srv.raw(port=srv.port + 2)
    b.cmd("HELLO", "3")
    assert b.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "k") == "OK"

    def registered():
        s0.cmd("SET", key0, "1")
        return b.nothing_pending(wait=0.1) is False
    poll_until(registered, what="BCAST registration reached shard 0")
    d0.read_reply()                         # (key0's invalidation of the probe writes)
    assert s0.cmd("FLUSHALL") == "OK"
    assert read_push(d0) == [b"invalidate", None]
    for _ in range(100):                    # the probes' announcements first, then the flush
        kind, keys = read_push(b)
        assert kind == b"invalidate"
        if keys is None:
            break
    else:
        pytest.fail("the BCAST client of shard 2 never got the flush")
    s1.cmd("SET", key1, "x")
    assert read_push(d1) == [b"invalidate", [key1.encode()]]


def test_many_bcast_prefixes(raw):
    """Hundreds of prefixes of several lengths, of two clients: each key reaches the client of every prefix it
    starts with, one message per (client, prefix); turning tracking off forgets them all."""
    a = resp3(raw)
    args = []
    for i in range(300):
        args += ["PREFIX", "p%d:" % i]
    assert a.cmd("CLIENT", "TRACKING", "ON", "BCAST", *args) == "OK"
    b = resp3(raw)
    assert b.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p1") == "OK"
    assert info_int(raw, "stats", "tracking_total_prefixes") == 301
    raw.cmd("MSET", "p5:x", "1", "p123:y", "2", "p1:z", "3", "other", "4", "p300:no", "5")
    got = sorted(read_push(a)[1] for _ in range(3))
    assert got == [[b"p123:y"], [b"p1:z"], [b"p5:x"]]
    assert read_push(b) == [b"invalidate", [b"p123:y", b"p1:z"]]
    assert a.cmd("CLIENT", "TRACKING", "OFF") == "OK"
    assert info_int(raw, "stats", "tracking_total_prefixes") == 1
    raw.cmd("SET", "p5:x", "2")
    raw.cmd("SET", "p1q", "2")
    assert read_push(b) == [b"invalidate", [b"p1q"]]
    assert a.nothing_pending(wait=0.05)


@pytest.mark.ruvio_only  # Redis matches each key against every prefix in turn: its cost grows with them
def test_bcast_match_cost_does_not_grow_with_the_prefixes(raw):
    """20,000 prefixes cost a write about what one does (a lookup per distinct prefix length, not a compare per
    prefix). Best of three pipelined runs each, with a wide margin: the linear match took ~70x longer here."""
    w = raw.new()

    def run():
        n = 20000
        batch = b"".join(b"*3\r\n$3\r\nSET\r\n$9\r\nzz:%06d\r\n$1\r\nv\r\n" % i for i in range(n))
        t0 = time.monotonic()
        w.send(batch)
        for _ in range(n):
            assert w.read_reply() == "OK"
        return time.monotonic() - t0

    one = resp3(raw)
    assert one.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:") == "OK"
    t_one = min(run() for _ in range(3))
    many = resp3(raw)
    for j in range(0, 20000, 1000):
        args = []
        for i in range(j, j + 1000):
            args += ["PREFIX", "q%d:" % i]
        assert many.cmd("CLIENT", "TRACKING", "ON", "BCAST", *args) == "OK"
    assert info_int(raw, "stats", "tracking_total_prefixes") == 20001
    t_many = min(run() for _ in range(3))
    assert t_many < 3 * t_one + 0.3, (t_one, t_many)


def test_changes_nothing_inside_scripts_and_transactions(raw):
    """The same rule for the commands of a script and of MULTI/EXEC: only the keys really modified."""
    raw.cmd("SET", "a", "1")
    raw.cmd("SADD", "s", "x")
    c = resp3(raw)
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    for read in (["GET", "a"], ["GET", "b"], ["SMEMBERS", "s"], ["GET", "sentinel"]):
        c.cmd(*read)
    assert raw.cmd("EVAL", "redis.call('sadd', KEYS[1], 'x'); return redis.call('del', KEYS[2])",
                   "2", "s", "b") == 0
    raw.cmd("MULTI")
    raw.cmd("SADD", "s", "x")
    raw.cmd("DEL", "b", "a")
    assert raw.cmd("EXEC") == [0, 1]
    raw.cmd("SET", "sentinel", "1")
    assert read_push(c) == [b"invalidate", [b"a"]]
    assert read_push(c) == [b"invalidate", [b"sentinel"]]
