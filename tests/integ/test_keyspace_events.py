"""Keyspace notifications (notify-keyspace-events): the config's parsing and the events each command publishes
on __keyspace@<db>__:<key> and __keyevent@<db>__:<event>, shared with redis-server (RUVIO_TARGET=redis) except
where marked ruvio_only.

A subscriber listens on a second connection; after the commands under test the writer PUBLISHes a marker on
the subscriber's other channel, and the events are read (bounded waits) until the marker arrives, so every test
sees exactly the events its commands published, in order, without sleeping."""

import shutil
import threading
import time

import pytest

from conftest import launch, poll_until, resp_error

MARK = "ksn-test-mark"
WAIT = 10.0


@pytest.fixture(scope="module")
def srv():
    s = launch(["--enable-debug-command", "yes"])
    yield s
    s.stop()
    shutil.rmtree(s.workdir, ignore_errors=True)


@pytest.fixture
def r(srv):
    c = srv.client()
    c.flushall()
    c.config_set("notify-keyspace-events", "KEA")
    yield c
    c.config_set("notify-keyspace-events", "")
    c.close()


class Sub:
    """A pattern subscriber to every keyspace and keyevent channel, plus the marker channel."""

    def __init__(self, server, port=None, pattern="__key*__:*"):
        self.c = server.client(port=port)
        self.ps = self.c.pubsub()
        self.ps.psubscribe(pattern)
        self.ps.subscribe(MARK)
        got = 0
        deadline = time.monotonic() + WAIT
        while got < 2:
            assert time.monotonic() < deadline, "no subscribe confirmations"
            m = self.ps.get_message(timeout=1.0)
            if m and m["type"] in ("psubscribe", "subscribe"):
                got += 1

    def collect(self, writer, marks=1):
        """Events up to the writer's marker: [(channel, message)]."""
        writer.publish(MARK, "end")
        out = []
        deadline = time.monotonic() + WAIT
        seen = 0
        while seen < marks:
            assert time.monotonic() < deadline, "marker not received; got %r" % out
            m = self.ps.get_message(timeout=1.0)
            if m is None or m["type"] not in ("message", "pmessage"):
                continue
            if m["channel"] == MARK:
                seen += 1
                continue
            out.append((m["channel"], m["data"]))
        return out

    def wait_for(self, channel, timeout=WAIT):
        """Events until one on channel arrives (events a timer publishes, such as active expiry)."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, "no event on %s; got %r" % (channel, out)
            m = self.ps.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                out.append((m["channel"], m["data"]))
                if m["channel"] == channel:
                    return out

    def close(self):
        self.ps.close()
        self.c.close()


@pytest.fixture
def sub(srv, r):
    s = Sub(srv)
    yield s
    s.close()


def space(events, db=0):
    """The keyspace events: [(key, event)]; checks each has its keyevent twin, in order."""
    ks = [(ch.split(":", 1)[1], msg) for ch, msg in events if ch.startswith("__keyspace@%d__:" % db)]
    ke = [(msg, ch.split(":", 1)[1]) for ch, msg in events if ch.startswith("__keyevent@%d__:" % db)]
    assert ks == ke, events
    return ks


# ------------------------------------------------------------------------------------------------ config


@pytest.mark.parametrize("given,shown", [
    ("", ""), ("K", "K"), ("E", "E"), ("KEA", "AKE"), ("AKE", "AKE"), ("Ex", "xE"), ("x", "x"),
    ("KEg$lshzxed", "g$lshzxedKE"), ("g$lshzxetmd", "Am"), ("dtK", "tdK"), ("$g", "g$"), ("Kn", "nK"),
    ("KEAm", "AKEm"), ("KKEE", "KE"),
])
def test_config_is_normalised_as_redis_shows_it(r, given, shown):
    assert r.config_set("notify-keyspace-events", given)
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": shown}


@pytest.mark.parametrize("bad", ["KEq", "K E", "kea", "KEA m", "1"])
def test_config_refuses_unknown_letters(r, bad):
    r.config_set("notify-keyspace-events", "K$")
    msg = resp_error(r.config_set, "notify-keyspace-events", bad)
    assert msg == ("CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                   "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "$K"}


@pytest.mark.ruvio_only
def test_config_keeps_new_beside_all(r):
    # Redis 7.0 shows "AKE" here and loses n on a rewrite; Ruvio keeps it
    r.config_set("notify-keyspace-events", "KEAn")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKEn"}


def test_config_file_value(start_server):
    s = start_server("--notify-keyspace-events", "Elg")
    c = s.client()
    assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "glE"}


def test_only_enabled_classes_and_channels(srv, r, sub):
    r.config_set("notify-keyspace-events", "Kl")
    r.set("s", "1")
    r.lpush("l", "a")
    assert sub.collect(r) == [("__keyspace@0__:l", "lpush")]
    r.config_set("notify-keyspace-events", "E$")
    r.set("s", "2")
    r.lpush("l", "b")
    assert sub.collect(r) == [("__keyevent@0__:set", "s")]
    r.config_set("notify-keyspace-events", "A")  # classes without K or E deliver nothing
    r.set("s", "3")
    assert sub.collect(r) == []


# ------------------------------------------------------------------------------------------------ key misses


def test_key_miss_events(r, sub):
    r.config_set("notify-keyspace-events", "Km")
    r.get("g")
    r.exists("e")
    r.type("t")
    r.ttl("tt")
    r.hget("h", "f")
    r.lrange("l", 0, 1)
    r.zscore("z", "m")
    r.smembers("s")
    r.set("sg", "v", get=True)
    r.mget("m1", "m2")
    r.geopos("gp", "m")
    r.strlen("sl")
    r.object("encoding", "oe")  # OBJECT does not notify
    r.set("hit", "1")
    r.get("hit")
    assert sub.collect(r) == [("__keyspace@0__:" + k, "keymiss") for k in
                              ["g", "e", "t", "tt", "h", "l", "z", "s", "sg", "m1", "m2", "gp", "sl"]]


# ------------------------------------------------------------------------------------------------ new keys


def test_new_key_events(r, sub):
    r.config_set("notify-keyspace-events", "KEn$lshzt")
    r.set("s", "1")
    r.set("s", "2")  # exists: no "new"
    r.lpush("l", "a")
    r.hset("h", "f", "v")
    r.sadd("st", "m")
    r.zadd("z", {"m": 1})
    r.xadd("x", {"f": "v"})
    r.incr("n")
    assert space(sub.collect(r)) == [
        ("s", "new"), ("s", "set"), ("s", "set"), ("l", "new"), ("l", "lpush"), ("h", "new"), ("h", "hset"),
        ("st", "new"), ("st", "sadd"), ("z", "new"), ("z", "zadd"), ("x", "new"), ("x", "xadd"),
        ("n", "new"), ("n", "incrby")]
    r.config_set("notify-keyspace-events", "KEgn$")
    r.set("a", "1")
    r.rename("a", "s")  # onto an existing key: Redis adds it anew
    r.copy("s", "l", replace=True)
    r.copy("s", "c")
    r.copy("s", "h", destination_db=4, replace=True)
    r.restore("r", 0, r.dump("s"))
    r.restore("r", 0, r.dump("s"), replace=True)
    r.move("c", 6)
    events = sub.collect(r)
    assert space(events) == [
        ("a", "new"), ("a", "set"), ("s", "new"), ("a", "rename_from"), ("s", "rename_to"), ("l", "new"),
        ("l", "copy_to"), ("c", "new"), ("c", "copy_to"), ("r", "new"), ("r", "restore"), ("r", "new"),
        ("r", "restore"), ("c", "move_from")]
    assert space(events, 4) == [("h", "new"), ("h", "copy_to")]
    assert space(events, 6) == [("c", "new"), ("c", "move_to")]
    r.config_set("notify-keyspace-events", "KE$")  # n off again: no "new"
    r.set("t", "1")
    assert space(sub.collect(r)) == [("t", "set")]


def test_new_key_events_from_the_config_file_in_another_database(start_server):
    s = start_server("--notify-keyspace-events", "KEn$")
    c = s.client(db=3)
    sub = Sub(s)
    try:
        c.set("k", "v")
        assert space(sub.collect(c), 3) == [("k", "new"), ("k", "set")]
    finally:
        sub.close()
        c.close()


# ------------------------------------------------------------------------------------------------ generic


def test_generic_events(r, sub):
    r.set("a", "1")
    r.expire("a", 100)
    r.persist("a")
    r.rename("a", "b")
    r.copy("b", "c")
    r.delete("b", "c", "missing")
    r.set("d", "1")
    r.unlink("d")
    r.set("e", "1")
    r.pexpireat("e", 1000)  # in the past: deleted
    assert space(sub.collect(r)) == [
        ("a", "set"), ("a", "expire"), ("a", "persist"), ("a", "rename_from"), ("b", "rename_to"),
        ("c", "copy_to"), ("b", "del"), ("c", "del"), ("d", "set"), ("d", "del"), ("e", "set"), ("e", "del")]


def test_no_event_when_nothing_changes(r, sub):
    r.set("a", "1")
    r.expire("missing", 10)
    r.persist("a")
    r.expire("a", 10, nx=True)
    r.expire("a", 20, nx=True)
    r.delete("missing")
    r.set("a", "2", nx=True)
    assert space(sub.collect(r)) == [("a", "set"), ("a", "expire")]


def test_restore_and_move_between_databases(r, sub):
    r.rpush("l", "x", "y")
    payload = r.dump("l")
    r.restore("m", 0, payload)
    r.move("m", 2)
    r.copy("l", "n", destination_db=3)
    events = sub.collect(r)
    assert space(events) == [("l", "rpush"), ("m", "restore"), ("m", "move_from")]
    assert space(events, 2) == [("m", "move_to")]
    assert space(events, 3) == [("n", "copy_to")]


def test_restore_with_a_ttl_fires_restore_only(r, sub):
    """Redis 7.0 publishes "restore" alone, TTL or not (no "expire"); a deadline already past stores nothing."""
    r.set("s", "v")
    payload = r.dump("s")
    r.restore("t1", 100000, payload)
    r.restore("t1", 200000, payload, replace=True)
    r.restore("t2", int(time.time() * 1000) + 100000, payload, absttl=True)
    r.restore("t3", 1, payload, absttl=True)           # (long past: nothing stored, nothing published)
    assert r.exists("t3") == 0
    assert 0 < r.pttl("t1") <= 200000
    assert space(sub.collect(r)) == [("s", "set"), ("t1", "restore"), ("t1", "restore"), ("t2", "restore")]


def test_expired_in_a_numbered_database(srv, sub):
    """An expiry (active, or lazy from a read) of a key of database 3 is published on database 3's channels,
    whichever database the node's other clients use."""
    c3 = srv.client(db=3)
    c0 = srv.client()
    try:
        c0.config_set("notify-keyspace-events", "KEA")
        c3.set("x3", "v", px=20)
        c0.set("x0", "v")                              # (a command of database 0 runs last)
        got = sub.wait_for("__keyevent@3__:expired")
        assert ("__keyspace@3__:x3", "expired") in got
        assert not [e for e in got if e[0].startswith("__keyevent@0__:expired")], got
        c0.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        try:
            c3.set("y3", "v", px=1)
            time.sleep(0.05)  # past the 1 ms deadline (the clock, not synchronisation)
            assert c3.get("y3") is None
            assert space(sub.collect(c3), 3) == [("y3", "set"), ("y3", "expire"), ("y3", "expired")]
        finally:
            c0.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    finally:
        c3.flushdb()
        c3.close()
        c0.close()


def test_other_database(srv, sub):
    c = srv.client(db=5)
    c.config_set("notify-keyspace-events", "KEA")
    c.set("k", "v")
    c.delete("k")
    events = sub.collect(c)
    assert events == [("__keyspace@5__:k", "set"), ("__keyevent@5__:set", "k"),
                      ("__keyspace@5__:k", "del"), ("__keyevent@5__:del", "k")]
    c.close()


def test_expired_lazily(r, sub):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.set("k", "v", px=1)
        time.sleep(0.05)  # past the 1 ms deadline (the clock, not synchronisation)
        assert r.get("k") is None
        assert space(sub.collect(r)) == [("k", "set"), ("k", "expire"), ("k", "expired")]
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_expired_actively(r, sub):
    r.set("k", "v", px=20)
    got = sub.wait_for("__keyevent@0__:expired")
    assert ("__keyspace@0__:k", "expired") in got
    assert ("__keyevent@0__:expired", "k") in got


def test_evicted(start_server):
    s = start_server("--maxmemory-policy", "allkeys-random")
    c = s.client()
    c.config_set("notify-keyspace-events", "Ee")
    sub = Sub(s)
    try:
        for i in range(200):
            c.set("key:%d" % i, "x" * 1000)
        used = c.info("memory")["used_memory"]
        c.config_set("maxmemory", str(used - 100 * 1024))
        c.set("one-more", "x")  # a write past the budget evicts
        got = sub.wait_for("__keyevent@0__:evicted")
        assert got[-1][1].startswith("key:") or got[-1][1] == "one-more"
    finally:
        sub.close()
        c.close()


# ------------------------------------------------------------------------------------------------ strings


def test_string_events(r, sub):
    r.set("s", "1", ex=100)
    r.setex("t", 100, "v")
    r.mset({"m1": "a", "m2": "b"})
    r.append("s", "x")
    r.append("new", "x")
    r.incr("n")
    r.decrby("n", 3)
    r.incrbyfloat("f", 1.5)
    r.setrange("s", 0, "z")
    r.getset("s", "q")
    r.getex("s", ex=50)
    r.getex("s", persist=True)
    r.getdel("s")
    r.setnx("t", "no")
    assert space(sub.collect(r)) == [
        ("s", "set"), ("s", "expire"), ("t", "set"), ("t", "expire"), ("m1", "set"), ("m2", "set"),
        ("s", "append"), ("new", "append"), ("n", "incrby"), ("n", "incrby"), ("f", "incrbyfloat"),
        ("s", "setrange"), ("s", "set"), ("s", "expire"), ("s", "persist"), ("s", "del")]


# ------------------------------------------------------------------------------------------------ lists


def test_list_events(r, sub):
    r.lpush("l", "a", "b")
    r.rpush("l", "c")
    r.lpushx("missing", "x")
    r.lset("l", 0, "B")
    r.linsert("l", "before", "a", "z")
    r.lrem("l", 0, "z")
    r.lrem("l", 0, "nothing")
    r.ltrim("l", 0, 1)
    r.lmove("l", "m", "LEFT", "RIGHT")
    r.rpoplpush("l", "m")
    r.lpop("m")
    r.rpop("m")
    assert space(sub.collect(r)) == [
        ("l", "lpush"), ("l", "rpush"), ("l", "lset"), ("l", "linsert"), ("l", "lrem"), ("l", "ltrim"),
        ("m", "rpush"), ("l", "lpop"), ("m", "lpush"), ("l", "rpop"), ("l", "del"),
        ("m", "lpop"), ("m", "rpop"), ("m", "del")]


def test_blocked_pop_fires_when_served(srv, r, sub):
    b = srv.client()
    b.config_set("notify-keyspace-events", "KEA")
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("v", b.blpop(["q"], timeout=5)))
    t.start()
    poll_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the client blocked")
    r.rpush("q", "x")
    t.join(10)
    assert result["v"] == ("q", "x")
    assert space(sub.collect(r)) == [("q", "rpush"), ("q", "lpop"), ("q", "del")]
    b.close()


# ------------------------------------------------------------------------------------------------ hashes


def test_hash_events(r, sub):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.hset("h", "a", "1")  # nothing new, still an event (as Redis)
    r.hsetnx("h", "a", "x")
    r.hsetnx("h", "c", "3")
    r.hincrby("h", "a", 2)
    r.hincrbyfloat("h", "b", 0.5)
    r.hdel("h", "missing")
    r.hdel("h", "a", "b")
    r.hdel("h", "c")
    assert space(sub.collect(r)) == [
        ("h", "hset"), ("h", "hset"), ("h", "hset"), ("h", "hincrby"), ("h", "hincrbyfloat"), ("h", "hdel"),
        ("h", "hdel"), ("h", "del")]


# ------------------------------------------------------------------------------------------------ sets


def test_set_events(r, sub):
    r.sadd("s", "a", "b", "c")
    r.sadd("s", "a")
    r.srem("s", "zz")
    r.srem("s", "a")
    r.smove("s", "t", "b")
    r.sadd("u", "x")
    r.smove("u", "t", "x")
    r.spop("s")
    r.sadd("s", "1", "2", "3")
    r.spop("s", 2)
    r.spop("s", 5)
    r.sadd("p", "1", "2")
    r.sadd("q", "2", "3")
    r.sinterstore("i", ["p", "q"])
    r.sunionstore("n", ["p", "q"])
    r.sdiffstore("d", ["p", "q"])
    r.sdiffstore("i", ["p", "p"])  # empty result: the destination goes
    assert space(sub.collect(r)) == [
        ("s", "sadd"), ("s", "srem"), ("s", "srem"), ("t", "sadd"), ("u", "sadd"), ("u", "srem"), ("u", "del"),
        ("t", "sadd"), ("s", "spop"), ("s", "del"), ("s", "sadd"), ("s", "spop"), ("s", "spop"), ("s", "del"),
        ("p", "sadd"), ("q", "sadd"), ("i", "sinterstore"), ("n", "sunionstore"), ("d", "sdiffstore"),
        ("i", "del")]


# ------------------------------------------------------------------------------------------------ sorted sets


def test_zset_events(r, sub):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    r.zadd("z", {"a": 1})
    r.zadd("z", {"a": 10}, nx=True)
    r.zincrby("z", 1, "a")
    r.zrem("z", "nope")
    r.zrem("z", "a")
    r.zremrangebyrank("z", 0, 0)
    r.zremrangebyscore("z", 3, 3)
    r.zadd("l", {"a": 0, "b": 0, "c": 0})
    r.zremrangebylex("l", "[a", "[a")
    r.zpopmin("z")
    r.zpopmax("z")
    r.zadd("x", {"m": 1})
    r.zunionstore("u", ["x", "l"])
    r.zinterstore("i", ["x", "l"])
    r.zrangestore("rs", "l", 0, 0)
    r.zdiffstore("u", ["x", "x"])
    assert space(sub.collect(r)) == [
        ("z", "zadd"), ("z", "zincr"), ("z", "zrem"), ("z", "zremrangebyrank"), ("z", "zremrangebyscore"),
        ("l", "zadd"), ("l", "zremrangebylex"), ("z", "zpopmin"), ("z", "zpopmax"), ("z", "del"),
        ("x", "zadd"), ("u", "zunionstore"), ("rs", "zrangestore"), ("u", "del")]


# ------------------------------------------------------------------------------------------------ streams


def test_stream_events(r, sub):
    r.xadd("x", {"f": "1"}, id="1-1")
    r.xadd("x", {"f": "2"}, id="2-1")
    r.xadd("x", {"f": "3"}, id="3-1", maxlen=2, approximate=False)
    r.xadd("nomk", {"f": "1"}, nomkstream=True)
    r.xdel("x", "9-9")
    r.xdel("x", "2-1")
    r.xtrim("x", maxlen=5)
    r.xtrim("x", maxlen=0)
    r.execute_command("XSETID", "x", "10-1")
    r.xgroup_create("x", "g", id="0")
    r.xgroup_create("y", "g", id="$", mkstream=True)
    r.xgroup_setid("x", "g", id="0")
    r.xgroup_createconsumer("x", "g", "c1")
    r.xgroup_createconsumer("x", "g", "c1")
    r.xadd("x", {"f": "4"}, id="11-1")
    r.xreadgroup("g", "c2", {"x": ">"})
    r.xclaim("x", "g", "c3", 0, ["11-1"])
    r.xgroup_delconsumer("x", "g", "c1")
    r.xgroup_destroy("x", "g")
    r.xgroup_destroy("x", "g")
    assert space(sub.collect(r)) == [
        ("x", "xadd"), ("x", "xadd"), ("x", "xadd"), ("x", "xtrim"), ("x", "xdel"), ("x", "xtrim"),
        ("x", "xsetid"), ("x", "xgroup-create"), ("y", "xgroup-create"), ("x", "xgroup-setid"),
        ("x", "xgroup-createconsumer"), ("x", "xadd"), ("x", "xgroup-createconsumer"),
        ("x", "xgroup-createconsumer"), ("x", "xgroup-delconsumer"), ("x", "xgroup-destroy")]


# ------------------------------------------------------------------------------------------------ bitmaps, HLL, geo, SORT


def test_bitmap_and_hll_events(r, sub):
    r.setbit("b", 7, 1)
    r.setbit("b", 7, 1)  # unchanged: no event (Redis 7)
    r.bitfield("b").set("u8", 0, 255).execute()
    r.bitfield("b").set("u8", 0, 255).execute()  # unchanged
    r.bitfield("b").incrby("u2", 0, 1, overflow="FAIL").execute()  # overflows: nothing written
    r.bitop("AND", "d", "b", "b")
    r.bitop("AND", "d", "missing")
    r.pfadd("h", "a")
    r.pfadd("h", "a")
    r.pfadd("h2", "b")
    r.pfmerge("m", "h", "h2")
    assert space(sub.collect(r)) == [
        ("b", "setbit"), ("b", "setbit"), ("d", "set"), ("d", "del"), ("h", "pfadd"),
        ("h2", "pfadd"), ("m", "pfadd")]


def test_geo_and_sort_store_events(r, sub):
    r.geoadd("g", [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"])
    r.geoadd("g", [13.361389, 38.115556, "Palermo"])
    r.georadius("g", 15, 37, 200, unit="km", store="gr")
    r.execute_command("GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km")
    r.execute_command("GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km")
    r.rpush("l", "3", "1", "2")
    r.sort("l", store="sorted")
    r.sort("missing", store="sorted")
    assert space(sub.collect(r)) == [
        ("g", "zadd"), ("gr", "georadiusstore"), ("gs", "geosearchstore"), ("gs", "del"), ("l", "rpush"),
        ("sorted", "sortstore"), ("sorted", "del")]


@pytest.mark.ruvio_only  # RedisJSON is a module; Debian's redis-server has no JSON commands
def test_json_events_use_the_module_class(r, sub):
    r.config_set("notify-keyspace-events", "Kd")
    r.execute_command("JSON.SET", "j", "$", '{"a":1}')
    r.execute_command("JSON.SET", "j", "$.b", "2")
    r.execute_command("JSON.SET", "j", "$.a", "3", "NX")  # exists: nothing set
    r.execute_command("JSON.DEL", "j", "$.b")
    r.execute_command("JSON.DEL", "j", "$.zz")
    r.set("s", "1")  # a string class event, not enabled
    assert sub.collect(r) == [("__keyspace@0__:j", "json.set"), ("__keyspace@0__:j", "json.set"),
                              ("__keyspace@0__:j", "json.del")]


def test_mpop_events(r, sub):
    r.rpush("l", "a", "b", "c")
    r.execute_command("LMPOP", 2, "missing", "l", "RIGHT", "COUNT", 2)
    r.execute_command("LMPOP", 1, "l", "LEFT", "COUNT", 5)
    r.zadd("z", {"a": 1, "b": 2})
    r.execute_command("ZMPOP", 1, "z", "MAX")
    r.execute_command("BZMPOP", 1, 1, "z", "MIN")
    assert space(sub.collect(r)) == [
        ("l", "rpush"), ("l", "rpop"), ("l", "lpop"), ("l", "del"), ("z", "zadd"), ("z", "zpopmax"),
        ("z", "zpopmin"), ("z", "del")]


def test_blocked_zpop_and_blmove_fire_when_served(srv, r, sub):
    b = srv.client()
    result = {}

    def waiter():
        result["z"] = b.bzpopmin(["z"], timeout=5)
        result["m"] = b.blmove("src", "dst", 5, "LEFT", "RIGHT")

    t = threading.Thread(target=waiter)
    t.start()
    poll_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the client blocked on z")
    r.zadd("z", {"m": 1})
    poll_until(lambda: "z" in result, what="bzpopmin served")
    poll_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the client blocked on src")
    r.rpush("src", "x")
    t.join(10)
    assert result["m"] == "x"
    assert space(sub.collect(r)) == [
        ("z", "zadd"), ("z", "zpopmin"), ("z", "del"), ("src", "rpush"), ("dst", "rpush"), ("src", "lpop"),
        ("src", "del")]
    b.close()


# ------------------------------------------------------------------------------------------------ MULTI


def test_multi_fires_per_command_in_order(r, sub):
    p = r.pipeline(transaction=True)
    p.set("a", "1")
    p.lpush("l", "x")
    p.delete("a")
    p.execute()
    assert space(sub.collect(r)) == [("a", "set"), ("l", "lpush"), ("a", "del")]


def test_script_fires_per_command(r, sub):
    r.eval("redis.call('set', KEYS[1], '1'); redis.call('incr', KEYS[1])", 1, "k")
    assert space(sub.collect(r)) == [("k", "set"), ("k", "incrby")]


# ------------------------------------------------------------------------------------------------ shards


@pytest.mark.ruvio_only
def test_subscriber_on_another_shard(start_server):
    s = start_server("--shards", "2")
    w = s.client()
    slot = w.execute_command("CLUSTER", "KEYSLOT", "k0")
    key = "k0"
    i = 0
    while slot >= 8192:  # a key of shard 0 (slots 0..8191 of two)
        i += 1
        key = "k%d" % i
        slot = w.execute_command("CLUSTER", "KEYSLOT", key)
    w.config_set("notify-keyspace-events", "KEA")
    sub = Sub(s, port=s.port + 1)
    try:
        w.set(key, "v")
        w.delete(key)
        assert space(sub.collect(w)) == [(key, "set"), (key, "del")]
    finally:
        sub.close()
        w.close()


@pytest.mark.ruvio_only
def test_wal_recovery_with_events_on_every_shard(start_server, tmp_path):
    # WAL recovery runs each shard's writes before the later shards exist: its events must not reach
    # for a shard that is not there yet
    args = ("--dir", str(tmp_path), "--durability", "everysec", "--shards", "2",
            "--notify-keyspace-events", "KEAn")
    s = start_server(*args)
    c = s.client()
    for i in range(50):
        try:
            c.set("k%d" % i, "v")
        except Exception:
            pass  # keys of the other shard answer MOVED here
    c2 = s.client(port=s.port + 1)
    for i in range(50):
        try:
            c2.lpush("l%d" % i, "v")
        except Exception:
            pass
    c.close()
    c2.close()
    s.stop()
    s = start_server(*args)
    c = s.client()
    assert c.ping() is True
    assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKEn"}
    c.close()


def test_replica_publishes_the_writes_it_applies(start_server):
    p = start_server()
    rep = start_server("--replicaof", "127.0.0.1", str(p.port))
    w = p.client()
    rc = rep.client()
    try:
        poll_until(lambda: rc.info("replication").get("master_link_status") == "up", timeout=10,
                   what="the replica linked")
        rc.config_set("notify-keyspace-events", "KA")
        sub = Sub(rep)
        w.set("a", "1")
        w.lpush("l", "x")
        w.delete("a")
        got = []
        deadline = time.monotonic() + WAIT
        while len(got) < 3:
            assert time.monotonic() < deadline, "replica events: %r" % got
            m = sub.ps.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                got.append((m["channel"], m["data"]))
        assert got == [("__keyspace@0__:a", "set"), ("__keyspace@0__:l", "lpush"), ("__keyspace@0__:a", "del")]
        sub.close()
    finally:
        w.close()
        rc.close()
