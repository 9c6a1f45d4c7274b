"""DEBUG DIGEST / DIGEST-VALUE / SLEEP / SET-ACTIVE-EXPIRE / HELP (issue 5: the replication tests compare
shards with DEBUG DIGEST).  The digest must not depend on insertion order nor on encodings; most tests here
hold for redis-server too (RUVIO_TARGET=redis), which has the same contract."""

import time

import pytest

import conftest
import redis

from conftest import IS_REDIS, poll_until, resp_error

ZERO = "0" * 40
DEADLINE = int(time.time() * 1000) + 3600_000      # one absolute deadline for both servers
DBG = ("--enable-debug-command", "yes")
# Thresholds of 0 force the scalable layouts (hashtable / skiplist / quicklist) from the first element.
BIG = ("--hash-max-listpack-entries", "0", "--set-max-intset-entries", "0", "--zset-max-listpack-entries", "0",
       "--list-max-listpack-size", "1") + (() if IS_REDIS else ("--set-max-listpack-entries", "0"))


def dataset(forward=True):
    """(command, args) to run in order; reversed/shuffled element order when forward is False."""
    def order(xs):
        return list(xs) if forward else list(reversed(list(xs)))

    cmds = []
    keys = order(range(40))
    for i in keys:
        cmds.append(("SET", "str:%d" % i, "value-%d" % i))
        cmds.append(("SET", "int:%d" % i, str(i * 1000 - 7)))
    cmds.append(("RPUSH", "list", *["e%d" % i for i in range(30)]))      # order is content: never reversed
    cmds.append(("RPUSH", "list:int", *[str(i) for i in range(5)]))
    for m in order(range(20)):
        cmds.append(("SADD", "set:int", str(m)))
        cmds.append(("SADD", "set:str", "m%d" % m))
        cmds.append(("HSET", "hash", "f%d" % m, "v%d" % m))
        cmds.append(("ZADD", "zset", str(m % 7 + 0.5), "z%d" % m))
    for m in order(range(300)):
        cmds.append(("SADD", "set:big", "b%d" % m))
        cmds.append(("HSET", "hash:big", "f%d" % m, "x" * (m % 90)))
        cmds.append(("ZADD", "zset:big", str(m * 1.25), "z%d" % m))
    cmds.append(("PEXPIREAT", "str:3", str(DEADLINE)))
    return cmds


def load(c, cmds):
    p = c.pipeline(transaction=False)
    for cmd in cmds:
        p.execute_command(*cmd)
    p.execute()


@pytest.fixture
def two(start_server):
    a = start_server(*DBG)
    b = start_server(*(DBG + BIG))
    ca, cb = a.client(), b.client()
    yield ca, cb
    ca.close()
    cb.close()


def test_empty_digest_is_zeros(start_server):
    c = start_server(*DBG).client()
    assert c.execute_command("DEBUG", "DIGEST") == ZERO
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "nokey") == [ZERO]
    assert c.execute_command("DEBUG", "DIGEST-VALUE") == []
    c.set("k", "v")
    d = c.execute_command("DEBUG", "DIGEST")
    assert len(d) == 40 and d != ZERO and all(ch in "0123456789abcdef" for ch in d)
    c.delete("k")
    assert c.execute_command("DEBUG", "DIGEST") == ZERO


def test_same_data_other_order_and_encoding(two):
    ca, cb = two
    load(ca, dataset(True))
    t = int(time.time() * 1000) // 1000 * 1000 + 7200_000
    ca.pexpireat("hash", t)
    load(cb, dataset(False))
    cb.pexpireat("hash", t)
    # the test is only meaningful when the layouts really differ
    for key, small in (("hash", "listpack"), ("set:int", "intset"), ("set:str", "listpack"), ("zset", "listpack")):
        if IS_REDIS and key == "set:str":      # redis 7.0 has no listpack sets
            continue
        assert ca.object("encoding", key) == small
        assert cb.object("encoding", key) in ("hashtable", "skiplist")
    keys = sorted(ca.keys("*"))
    assert sorted(cb.keys("*")) == keys
    assert ca.execute_command("DEBUG", "DIGEST-VALUE", *keys) == cb.execute_command("DEBUG", "DIGEST-VALUE", *keys)
    da, db = ca.execute_command("DEBUG", "DIGEST"), cb.execute_command("DEBUG", "DIGEST")
    assert da == db != ZERO


def test_value_changes_change_digest(two):
    ca, cb = two
    load(ca, dataset(True))
    load(cb, dataset(True))
    base = ca.execute_command("DEBUG", "DIGEST")
    assert cb.execute_command("DEBUG", "DIGEST") == base
    for change, undo in [
        (("HSET", "hash", "f3", "other"), ("HSET", "hash", "f3", "v3")),
        (("SREM", "set:big", "b7"), ("SADD", "set:big", "b7")),
        (("ZADD", "zset", "99", "z1"), ("ZADD", "zset", "1.5", "z1")),
        (("SET", "int:5", "4993"), ("SET", "int:5", "4993")),        # same value written again: no change
        (("LSET", "list", "0", "e1"), ("LSET", "list", "0", "e0")),
        (("RENAME", "str:1", "str:1b"), ("RENAME", "str:1b", "str:1")),
    ]:
        cb.execute_command(*change)
        after = cb.execute_command("DEBUG", "DIGEST")
        if change == undo:
            assert after == base
            continue
        assert after != base, change
        cb.execute_command(*undo)
        assert cb.execute_command("DEBUG", "DIGEST") == base, undo


def test_list_order_matters_set_order_does_not(start_server):
    c = start_server(*DBG).client()
    c.rpush("l1", "a", "b", "c")
    c.rpush("l2", "c", "b", "a")
    c.sadd("s1", "a", "b", "c")
    c.sadd("s2", "c", "b", "a")
    c.hset("h1", mapping={"a": "1", "b": "2"})
    c.hset("h2", mapping={"a": "2", "b": "1"})     # same fields and values, other pairing
    l1, l2, s1, s2, h1, h2 = c.execute_command("DEBUG", "DIGEST-VALUE", "l1", "l2", "s1", "s2", "h1", "h2")
    assert l1 != l2
    assert s1 == s2
    assert h1 != h2
    # a string and a one-element list holding the same bytes differ (the type is part of the digest)
    c.set("str", "a")
    c.rpush("lst", "a")
    a, b = c.execute_command("DEBUG", "DIGEST-VALUE", "str", "lst")
    assert a != b


@pytest.mark.ruvio_only
def test_ttl_is_part_of_the_dataset_digest(two):
    ca, cb = two
    t = int(time.time() * 1000) + 3600_000
    for c in (ca, cb):
        c.set("k", "v")
        c.pexpireat("k", t)
        c.hset("h", mapping={"f": "1", "g": "2"})
        c.execute_command("HPEXPIREAT", "h", t, "FIELDS", 1, "f")
    assert ca.execute_command("DEBUG", "DIGEST") == cb.execute_command("DEBUG", "DIGEST")
    cb.pexpireat("k", t + 1)
    assert ca.execute_command("DEBUG", "DIGEST") != cb.execute_command("DEBUG", "DIGEST")
    # DIGEST-VALUE is about the value: the key's own deadline is not in it, a field's deadline is
    assert ca.execute_command("DEBUG", "DIGEST-VALUE", "k") == cb.execute_command("DEBUG", "DIGEST-VALUE", "k")
    cb.pexpireat("k", t)
    cb.execute_command("HPEXPIREAT", "h", t + 5, "FIELDS", 1, "f")
    assert ca.execute_command("DEBUG", "DIGEST-VALUE", "h") != cb.execute_command("DEBUG", "DIGEST-VALUE", "h")
    cb.persist("k")
    assert ca.execute_command("DEBUG", "DIGEST") != cb.execute_command("DEBUG", "DIGEST")


def test_debug_disabled_by_default(start_server):
    # the fixtures enable DEBUG (as Redis's test suite does): start without that flag
    c = start_server(argv=[conftest.RUVIO_BIN, "--port", "{port}", "--bind", conftest.HOST, "--dir", "{dir}"]).client()
    msg = resp_error(c.execute_command, "DEBUG", "DIGEST")
    assert msg.startswith("DEBUG command not allowed. If the enable-debug-command option is set to \"local\"")
    assert c.config_get("enable-debug-command") == {"enable-debug-command": "no"}


def test_debug_local(start_server):
    c = start_server("--enable-debug-command", "local").client()     # the suite connects over 127.0.0.1
    assert c.execute_command("DEBUG", "DIGEST") == ZERO


def test_sleep_help_and_errors(start_server):
    c = start_server(*DBG).client()
    t0 = time.monotonic()
    assert c.execute_command("DEBUG", "SLEEP", "0.3") in (True, "OK")
    assert time.monotonic() - t0 >= 0.29
    assert c.execute_command("DEBUG", "SLEEP", "0") in (True, "OK")
    help_lines = c.execute_command("DEBUG", "HELP")
    assert any("DIGEST" in line for line in help_lines)
    msg = resp_error(c.execute_command, "DEBUG", "NOSUCHTHING")
    assert "nosuchthing" in msg.lower() and "Try DEBUG HELP." in msg
    if not IS_REDIS:                     # redis-server reads "abc" as 0 seconds; ruvio refuses it
        with pytest.raises(redis.exceptions.ResponseError):
            c.execute_command("DEBUG", "SLEEP", "abc")
    with pytest.raises(redis.exceptions.ResponseError):
        c.execute_command("DEBUG")


def test_set_active_expire(start_server):
    c = start_server(*DBG, "--hz", "100").client()
    assert c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0") in (True, "OK")
    c.set("gone", "1", px=30)
    time.sleep(0.4)
    assert c.dbsize() == 1                 # expired but never touched: still counted
    assert c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1") in (True, "OK")
    poll_until(lambda: c.dbsize() == 0, timeout=5, what="active expiry after re-enabling it")


OUT_OF_RANGE = "value is out of range, must be positive"


def test_populate_creates_missing_keys_and_leaves_existing_ones(start_server):
    """DEBUG POPULATE count [prefix] [size], as redis-server 7.0: key:N = value:N, existing keys untouched."""
    c = start_server(*DBG).client()
    assert c.execute_command("DEBUG", "POPULATE", "3") in (True, "OK")
    assert c.dbsize() == 3
    assert [c.get("key:%d" % i) for i in range(3)] == ["value:0", "value:1", "value:2"]
    assert c.set("key:4", "mine")
    assert c.execute_command("DEBUG", "POPULATE", "6") in (True, "OK")
    assert c.dbsize() == 6 and c.get("key:4") == "mine" and c.get("key:5") == "value:5"
    assert c.execute_command("DEBUG", "POPULATE", "0") in (True, "OK")
    assert c.dbsize() == 6
    assert c.execute_command("DEBUG", "POPULATE", "2", "p") in (True, "OK")
    assert c.get("p:1") == "value:1" and c.type("p:1") == "string" and c.ttl("p:1") == -1
    c.close()


def test_populate_size_cuts_or_zero_pads_the_value(start_server):
    c = start_server(*DBG).client(decode_responses=False)
    assert c.execute_command("DEBUG", "POPULATE", "2", "pad", "10") in (True, b"OK")
    assert c.get("pad:0") == b"value:0\x00\x00\x00" and c.get("pad:1") == b"value:1\x00\x00\x00"
    assert c.execute_command("DEBUG", "POPULATE", "12", "cut", "3") in (True, b"OK")
    assert c.get("cut:11") == b"val" and c.strlen("cut:0") == 3
    assert c.execute_command("DEBUG", "POPULATE", "1", "zero", "0") in (True, b"OK")
    assert c.get("zero:0") == b"value:0"
    # the name is formatted into 128 bytes: a longer one is cut at 127
    assert c.execute_command("DEBUG", "POPULATE", "1", "x" * 200) in (True, b"OK")
    assert c.keys("xx*") == [b"x" * 127]
    c.close()


def test_populate_errors(start_server):
    c = start_server(*DBG).client()
    for args in (("-1",), ("x",), ("1", "p", "-1"), ("1", "p", "y")):
        assert resp_error(c.execute_command, "DEBUG", "POPULATE", *args) == OUT_OF_RANGE
    assert resp_error(c.execute_command, "DEBUG", "POPULATE", "1", "a", "1", "extra") == (
        "unknown subcommand or wrong number of arguments for 'POPULATE'. Try DEBUG HELP.")
    assert c.dbsize() == 0
    c.close()


def test_populate_touches_watched_keys(start_server):
    """Each key it creates is signalled as modified (Redis's signalModifiedKey): a WATCH on it fails EXEC; a WATCH
    on a key it leaves alone does not."""
    srv = start_server(*DBG)
    c, w = srv.client(), srv.client()
    c.set("key:1", "mine")
    for watched, aborts in (("key:0", True), ("key:1", False), ("key:9", False)):
        c.delete("key:0")
        p = w.pipeline(transaction=True)
        p.watch(watched)
        assert c.execute_command("DEBUG", "POPULATE", "2") in (True, "OK")
        p.multi()
        p.ping()
        if aborts:
            with pytest.raises(redis.WatchError):
                p.execute()
        else:
            assert p.execute() == [True]
        p.reset()
    c.close()
    w.close()


@pytest.mark.ruvio_only
def test_populate_is_logged_as_sets_for_the_wal_and_replicas(start_server, tmp_path):
    """Ruvio logs each created key as a SET (Redis does not propagate DEBUG POPULATE): a replica gets the keys
    and the data directory keeps them across a restart."""
    from ruviotest import repl
    d = tmp_path / "data"
    d.mkdir()
    args = DBG + ("--durability", "everysec")
    primary = start_server("--dir", str(d), *args)
    replica = start_server(*DBG)
    p, r = primary.client(), replica.client()
    assert r.replicaof(conftest.HOST, primary.port) in (True, "OK")
    repl.wait_link_up(r)
    p.set("key:2", "mine")
    assert p.execute_command("DEBUG", "POPULATE", "100", "key", "20") in (True, "OK")
    repl.wait_offset(p, r)
    assert r.dbsize() == 100 and r.get("key:2") == "mine"
    assert r.execute_command("DEBUG", "DIGEST") == p.execute_command("DEBUG", "DIGEST")
    digest = p.execute_command("DEBUG", "DIGEST")
    p.close()
    r.close()
    primary.stop()
    again = start_server("--dir", str(d), *args).client()
    poll_until(lambda: again.dbsize() == 100, timeout=10, what="the data directory reloaded")
    assert again.execute_command("DEBUG", "DIGEST") == digest
    assert again.get("key:99") == "value:99" + "\0" * 12
    again.close()


NOREPLICAS = "NOREPLICAS Not enough good replicas to write."
READONLY = "READONLY You can't write against a read only replica."


def test_populate_is_not_refused_over_maxmemory(start_server):
    """Not denyoom, as Redis: over a noeviction budget SET is refused, POPULATE runs."""
    srv = start_server(*DBG, "--maxmemory-policy", "noeviction")
    raw = srv.raw()
    assert raw.cmd("SET", "a", "1") == "OK"
    assert raw.cmd("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert raw.cmd("SET", "b", "1") == "OOM command not allowed when used memory > 'maxmemory'."
    assert raw.cmd("DEBUG", "POPULATE", "3") == "OK"
    assert raw.cmd("DBSIZE") == 4
    assert raw.cmd("CONFIG", "SET", "maxmemory", "0") == "OK"
    raw.close()


def test_populate_and_min_replicas_to_write(start_server):
    """Redis lets DEBUG POPULATE (not a write there, not propagated) through min-replicas-to-write; Ruvio logs
    and replicates what it creates, so it is refused as SET is (docs/commands.md)."""
    srv = start_server(*DBG, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
    raw = srv.raw()
    poll_until(lambda: raw.cmd("SET", "a", "1") == NOREPLICAS, timeout=5, what="the min-replicas guard on")
    if IS_REDIS:
        assert raw.cmd("DEBUG", "POPULATE", "3") == "OK"
        assert raw.cmd("DBSIZE") == 3
    else:
        assert raw.cmd("DEBUG", "POPULATE", "3") == NOREPLICAS
        assert raw.cmd("DBSIZE") == 0
    raw.close()


def test_populate_on_a_replica(start_server):
    """On a read-only replica Redis 7.0 populates its own dataset (nothing propagated); Ruvio's POPULATE is a
    logged write, refused with READONLY as SET is, so a replica holds its primary's data only."""
    srv = start_server(*DBG)
    raw = srv.raw()
    dead = conftest.free_port()            # nothing listens there: the link stays down
    assert raw.cmd("REPLICAOF", conftest.HOST, str(dead)) == "OK"
    try:
        assert raw.cmd("SET", "a", "1") == READONLY
        if IS_REDIS:
            assert raw.cmd("DEBUG", "POPULATE", "3") == "OK"
            assert raw.cmd("DBSIZE") == 3
        else:
            assert raw.cmd("DEBUG", "POPULATE", "3") == READONLY
            assert raw.cmd("DBSIZE") == 0
    finally:
        assert raw.cmd("REPLICAOF", "NO", "ONE") == "OK"
        raw.close()


@pytest.mark.ruvio_only
def test_populate_refused_once_the_wal_refuses_writes(start_server, tmp_path):
    """After a failed fsync the WAL refuses writes (MISCONF); POPULATE is refused the same way and logs
    nothing: the last LSN does not move."""
    import os
    env = os.environ.copy()
    env["RUVIO_FAILPOINT"] = "wal-sync-eio"
    srv = start_server(*DBG, "--dir", str(tmp_path), "--durability", "everysec", env=env)
    c = srv.client()
    assert c.set("a", "1")
    poll_until(lambda: c.info("persistence")["wal_fsync_error"] != "none", timeout=5,
               what="the everysec sync to fail")
    lsn = c.info("persistence")["wal_last_lsn"]
    raw = srv.raw()
    set_err = raw.cmd("SET", "b", "1")
    assert set_err.startswith("MISCONF") and "fsync" in set_err, set_err
    assert raw.cmd("DEBUG", "POPULATE", "5") == set_err
    assert raw.cmd("DBSIZE") == 1
    assert c.info("persistence")["wal_last_lsn"] == lsn
    raw.close()
    c.close()
