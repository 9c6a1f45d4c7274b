"""Which writes signal a change, as Redis 7.0 does: the keyspace events a write publishes and the tracking
invalidations it sends, checked together. A write that changed nothing publishes nothing and invalidates nothing;
a store whose result is empty deletes its destination (a `del` event) or, when there was none, does nothing; a
store invalidates its destination only, not the keys it read; the commands that change only a stream's consumer
groups publish their event but invalidate nothing. Shared with redis-server (RUVIO_TARGET=redis), except the
hash-field expiry events (Redis 7.4: Debian's 7.0 has no HEXPIRE).

One connection listens to every keyevent channel and, through a BCAST tracking client redirected to it, to
__redis__:invalidate; after each command the writer publishes a marker on that connection's third channel and
the signals are read (bounded waits) up to it, so each command is checked for exactly what it sent."""

import shutil
import time

import pytest

from conftest import launch, poll_until

MARK = "signals-test-mark"
WAIT = 10.0


@pytest.fixture(scope="module")
def srv():
    s = launch(["--enable-debug-command", "yes"])
    yield s
    s.stop()
    shutil.rmtree(s.workdir, ignore_errors=True)


class Signals:
    """Keyevents as (key, event) and invalidations as ("inv", (keys...)), in arrival order."""

    def __init__(self, srv):
        self.w = srv.client()
        self.w.flushall()
        self.w.config_set("notify-keyspace-events", "KEA")
        self.l = srv.client()
        lid = self.l.client_id()
        self.ps = self.l.pubsub()
        self.ps.psubscribe("__keyevent@0__:*")
        self.ps.subscribe(MARK, "__redis__:invalidate")
        got = 0
        deadline = time.monotonic() + WAIT
        while got < 3:
            assert time.monotonic() < deadline, "no subscribe confirmations"
            m = self.ps.get_message(timeout=1.0)
            if m and m["type"] in ("psubscribe", "subscribe"):
                got += 1
        self.t = srv.client()
        assert self.t.execute_command("CLIENT", "TRACKING", "ON", "REDIRECT", lid, "BCAST") == "OK"

    def read(self):
        self.w.publish(MARK, "end")
        out = []
        deadline = time.monotonic() + WAIT
        while True:
            assert time.monotonic() < deadline, "marker not received; got %r" % out
            m = self.ps.get_message(timeout=1.0)
            if m is None or m["type"] not in ("message", "pmessage"):
                continue
            if m["channel"] == MARK:
                return out
            if m["channel"] == "__redis__:invalidate":
                out.append(("inv", tuple(m["data"])))
            else:
                out.append((m["data"], m["channel"].split(":", 1)[1]))

    def run(self, *cmd, **opts):
        """The reply of cmd and the signals it sent (opts: redis-py's reply parsing options)."""
        reply = self.w.execute_command(*cmd, **opts)
        return reply, self.read()

    def setup(self, *cmds):
        for c in cmds:
            self.w.execute_command(*c)
        self.read()

    def close(self):
        self.w.config_set("notify-keyspace-events", "")
        self.ps.close()
        for c in (self.t, self.l, self.w):
            c.close()


@pytest.fixture
def sig(srv):
    s = Signals(srv)
    yield s
    s.close()


def stored(key, event):
    return [(key, event), ("inv", (key,))]


GEO = ("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")


def test_geoadd_that_changes_nothing_signals_nothing(sig):
    assert sig.run(*GEO) == (2, stored("g", "zadd"))
    assert sig.run(*GEO) == (0, [])
    assert sig.run("GEOADD", "g", "XX", "13.361389", "38.115556", "Palermo") == (0, [])
    assert sig.run("GEOADD", "g", "NX", "1", "1", "Palermo") == (0, [])
    assert sig.run("GEOADD", "nog", "XX", "1", "1", "a") == (0, [])
    assert sig.run("EXISTS", "nog") == (0, [])
    assert sig.run("GEOADD", "g", "CH", "1", "1", "Palermo") == (1, stored("g", "zadd"))


def test_geo_stores(sig):
    sig.setup(GEO, ("SET", "d", "x"))
    far = ("FROMLONLAT", "0", "0", "BYRADIUS", "1", "km")
    assert sig.run("GEOSEARCHSTORE", "d", "g", *far) == (0, stored("d", "del"))
    assert sig.run("GEOSEARCHSTORE", "d", "g", *far) == (0, [])           # nothing to delete
    assert sig.run("GEOSEARCHSTORE", "d", "missing", *far) == (0, [])
    near = ("FROMLONLAT", "15", "37", "BYRADIUS", "200", "km")
    assert sig.run("GEOSEARCHSTORE", "d", "g", *near) == (2, stored("d", "geosearchstore"))
    st = {"store": True}
    assert sig.run("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "r", **st) == (2, stored("r", "georadiusstore"))
    assert sig.run("GEORADIUS", "g", "0", "0", "1", "km", "STOREDIST", "r", **st) == (0, stored("r", "del"))
    assert sig.run("GEORADIUS", "g", "0", "0", "1", "km", "STORE", "r", **st) == (0, [])
    assert sig.run("GEORADIUSBYMEMBER", "g", "Palermo", "1", "km", "STORE", "r", **st) == (
        1, stored("r", "georadiusstore"))


def test_set_stores(sig):
    sig.setup(("SADD", "a", "1", "2"), ("SADD", "b", "3"), ("SET", "d", "x"))
    assert sig.run("SINTERSTORE", "d", "a", "b") == (0, stored("d", "del"))
    assert sig.run("SINTERSTORE", "d", "a", "b") == (0, [])
    assert sig.run("SUNIONSTORE", "e", "m1", "m2") == (0, [])
    assert sig.run("SDIFFSTORE", "e", "a", "a") == (0, [])
    assert sig.run("SUNIONSTORE", "u", "a", "b") == (3, stored("u", "sunionstore"))
    assert sig.run("SINTERSTORE", "u", "a") == (2, stored("u", "sinterstore"))
    assert sig.run("SDIFFSTORE", "u", "a", "b") == (2, stored("u", "sdiffstore"))
    assert sig.run("SMOVE", "a", "b", "zz") == (0, [])


def test_zset_stores(sig):
    sig.setup(("ZADD", "a", "1", "x"), ("ZADD", "b", "2", "y"), ("SET", "d", "x"))
    assert sig.run("ZUNIONSTORE", "d", "1", "m") == (0, stored("d", "del"))
    assert sig.run("ZINTERSTORE", "d", "2", "a", "b") == (0, [])
    assert sig.run("ZDIFFSTORE", "d", "2", "a", "a") == (0, [])
    assert sig.run("ZRANGESTORE", "d", "a", "5", "6") == (0, [])
    assert sig.run("ZUNIONSTORE", "u", "2", "a", "b") == (2, stored("u", "zunionstore"))
    assert sig.run("ZINTERSTORE", "i", "2", "a", "a") == (1, stored("i", "zinterstore"))
    assert sig.run("ZDIFFSTORE", "f", "2", "a", "b") == (1, stored("f", "zdiffstore"))
    assert sig.run("ZRANGESTORE", "r", "a", "0", "-1") == (1, stored("r", "zrangestore"))
    assert sig.run("ZRANGESTORE", "r", "a", "5", "6") == (0, stored("r", "del"))


def test_sort_store_and_bitop(sig):
    sig.setup(("RPUSH", "l", "3", "1"), ("SET", "d", "x"), ("SET", "s", "ab"))
    assert sig.run("SORT", "l", "STORE", "d") == (2, stored("d", "sortstore"))
    assert sig.run("SORT", "l", "LIMIT", "5", "1", "STORE", "d") == (0, stored("d", "del"))
    assert sig.run("SORT", "missing", "STORE", "d") == (0, [])
    assert sig.run("BITOP", "OR", "b", "s") == (2, stored("b", "set"))
    assert sig.run("BITOP", "AND", "b", "missing") == (0, stored("b", "del"))
    assert sig.run("BITOP", "NOT", "b", "missing") == (0, [])
    assert sig.run("PFADD", "h1", "a") == (1, stored("h1", "pfadd"))
    assert sig.run("PFMERGE", "h2", "h1") == (True, stored("h2", "pfadd"))


def test_generic_and_string_no_ops(sig):
    sig.setup(("SET", "k", "v"), ("SET", "o", "w"))
    assert sig.run("RENAME", "k", "k") == (True, [])
    assert sig.run("RENAMENX", "k", "k") == (0, [])
    assert sig.run("RENAMENX", "k", "o") == (0, [])
    assert sig.run("COPY", "k", "c") == (1, stored("c", "copy_to"))
    assert sig.run("COPY", "k", "c") == (0, [])
    assert sig.run("SETRANGE", "k", "0", "") == (1, [])
    assert sig.run("SETRANGE", "nok", "0", "") == (0, [])
    assert sig.run("SETRANGE", "k", "0", "x") == (1, stored("k", "setrange"))


def test_stream_writes(sig):
    sig.setup(("XADD", "x", "1-1", "f", "1"), ("XADD", "x", "2-1", "f", "1"))
    assert sig.run("XADD", "nomk", "NOMKSTREAM", "*", "f", "1") == (None, [])
    assert sig.run("XTRIM", "x", "MAXLEN", "5") == (0, [])
    assert sig.run("XDEL", "x", "9-9") == (0, [])
    assert sig.run("XDEL", "x", "1-1") == (1, stored("x", "xdel"))
    assert sig.run("XADD", "x", "3-1", "f", "1") == ("3-1", stored("x", "xadd"))
    assert sig.run("XTRIM", "x", "MAXLEN", "1") == (1, stored("x", "xtrim"))


def test_stream_group_changes_publish_but_do_not_invalidate(sig):
    sig.setup(("XADD", "x", "1-1", "f", "1"))
    assert sig.run("XSETID", "x", "5-1") == ("OK", [("x", "xsetid")])
    assert sig.run("XGROUP", "CREATE", "x", "g", "0") == ("OK", [("x", "xgroup-create")])
    assert sig.run("XGROUP", "CREATECONSUMER", "x", "g", "c") == (1, [("x", "xgroup-createconsumer")])
    assert sig.run("XGROUP", "CREATECONSUMER", "x", "g", "c") == (0, [])
    assert sig.run("XGROUP", "SETID", "x", "g", "0") == ("OK", [("x", "xgroup-setid")])
    reply, signals = sig.run("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">")
    assert len(reply) == 1 and signals == [("x", "xgroup-createconsumer")]
    assert sig.run("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", "0")[1] == []
    assert sig.run("XCLAIM", "x", "g", "c3", "0", "1-1", "JUSTID")[1] == [("x", "xgroup-createconsumer")]
    assert sig.run("XAUTOCLAIM", "x", "g", "c2", "0", "0", "JUSTID")[1] == []
    assert sig.run("XACK", "x", "g", "1-1") == (1, [])
    assert sig.run("XGROUP", "DELCONSUMER", "x", "g", "c3") == (0, [("x", "xgroup-delconsumer")])
    assert sig.run("XGROUP", "DESTROY", "x", "g") == (1, [("x", "xgroup-destroy")])
    assert sig.run("XGROUP", "DESTROY", "x", "g") == (0, [])
    # a group made with MKSTREAM creates the key: that is signalled
    assert sig.run("XGROUP", "CREATE", "y", "g", "$", "MKSTREAM") == ("OK", stored("y", "xgroup-create"))


# ------------------------------------------------------------------ hash fields (Redis 7.4; ruvio only here)


@pytest.mark.ruvio_only
def test_hash_field_ttl_events(sig):
    sig.setup(("HSET", "h", "a", "1", "b", "2", "c", "3"))
    assert sig.run("HEXPIRE", "h", "100", "FIELDS", "2", "a", "zz") == ([1, -2], stored("h", "hexpire"))
    assert sig.run("HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a") == ([0], [])
    assert sig.run("HPEXPIRE", "h", "200000", "FIELDS", "1", "b") == ([1], stored("h", "hexpire"))
    assert sig.run("HPEXPIREAT", "h", "99999999999999", "FIELDS", "1", "b") == ([1], stored("h", "hexpire"))
    assert sig.run("HPERSIST", "h", "FIELDS", "1", "a") == ([1], stored("h", "hpersist"))
    assert sig.run("HPERSIST", "h", "FIELDS", "2", "a", "zz") == ([-1, -2], [])
    assert sig.run("HEXPIRE", "nokey", "10", "FIELDS", "1", "a") == ([-2], [])
    assert sig.run("HPERSIST", "nokey", "FIELDS", "1", "a") == ([-2], [])
    # a time in the past deletes the field: "hdel", then "del" with the last one
    assert sig.run("HEXPIRE", "h", "0", "FIELDS", "1", "c") == ([2], stored("h", "hdel"))
    assert sig.run("HEXPIREAT", "h", "1", "FIELDS", "2", "a", "b") == (
        [2, 2], [("h", "hdel"), ("h", "del"), ("inv", ("h",))])


@pytest.mark.ruvio_only
def test_hexpired_when_fields_expire_lazily(sig):
    assert sig.w.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
    try:
        sig.setup(("HSET", "h", "a", "1", "b", "2"), ("HSET", "g", "a", "1"))
        assert sig.run("HPEXPIRE", "h", "1", "FIELDS", "1", "a") == ([1], stored("h", "hexpire"))
        assert sig.run("HPEXPIRE", "g", "1", "FIELDS", "1", "a") == ([1], stored("g", "hexpire"))
        poll_until(lambda: sig.w.hget("h", "a") is None, what="field a of h expired")
        assert sig.read() == [("h", "hexpired"), ("inv", ("h",))]
        poll_until(lambda: sig.w.hlen("g") == 0, what="field a of g expired")
        assert sig.read() == [("g", "hexpired"), ("g", "del"), ("inv", ("g",))]
    finally:
        sig.w.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.mark.ruvio_only
def test_hexpired_when_fields_expire_actively(sig):
    sig.setup(("HSET", "h", "a", "1"))
    assert sig.run("HPEXPIRE", "h", "1", "FIELDS", "1", "a") == ([1], stored("h", "hexpire"))
    out = []
    deadline = time.monotonic() + WAIT
    while ("h", "del") not in out:     # the sweep runs on the shard's timer; no read touches h
        assert time.monotonic() < deadline, "no expiry signals; got %r" % out
        m = sig.ps.get_message(timeout=0.5)
        if m and m["type"] == "pmessage":
            out.append((m["data"], m["channel"].split(":", 1)[1]))
        elif m and m["type"] == "message" and m["channel"] == "__redis__:invalidate":
            out.append(("inv", tuple(m["data"])))
    out += sig.read()
    assert out == [("h", "hexpired"), ("h", "del"), ("inv", ("h",))]
