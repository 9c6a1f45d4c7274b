"""Numbered databases (issue 19, point 1; docs/commands.md#databases): SELECT, MOVE, SWAPDB, COPY ... DB,
FLUSHDB/FLUSHALL, INFO keyspace, WATCH and blocking per database. Runs against redis-server too; the
restart, checkpoint, replica and cluster-mode tests need ruvio's own configuration (ruvio_only)."""

import threading

import pytest
import redis

from conftest import HOST, poll_until, resp_error
from ruviotest import repl


def dec(v):
    """A raw reply with bulk strings as str (RawConn gives arrays' bulks as bytes)."""
    if isinstance(v, list):
        return [dec(x) for x in v]
    return v.decode() if isinstance(v, bytes) else v


def keyspace(c):
    """INFO keyspace as {db index: keys}."""
    return {int(k[2:]): v["keys"] for k, v in c.info("keyspace").items()}


@pytest.fixture
def db(server):
    """A factory of clients bound to one database each (redis-py sends SELECT on connect)."""
    made = []

    def make(n, **kw):
        c = server.client(db=n, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# ------------------------------------------------------------------------------------------------- SELECT


def test_select_every_index_and_errors(raw):
    for i in (0, 1, 9, 15):
        assert raw.cmd("SELECT", str(i)) == "OK"
    assert raw.cmd("SELECT", "16") == "ERR DB index is out of range"
    assert raw.cmd("SELECT", "-1") == "ERR DB index is out of range"
    assert raw.cmd("SELECT", "99999999999999999999") == "ERR value is not an integer or out of range"
    assert raw.cmd("SELECT", "1.5") == "ERR value is not an integer or out of range"
    assert raw.cmd("SELECT") == "ERR wrong number of arguments for 'select' command"


def test_keys_are_isolated_between_databases(raw, r):
    assert raw.cmd("SELECT", "3") == "OK"
    assert raw.cmd("SET", "k", "three") == "OK"
    assert raw.cmd("RPUSH", "l", "a", "b") == 2
    assert raw.cmd("PEXPIRE", "l", "100000") == 1
    assert raw.cmd("DBSIZE") == 2
    assert sorted(dec(raw.cmd("KEYS", "*"))) == ["k", "l"]
    assert dec(raw.cmd("RANDOMKEY")) in ("k", "l")
    cursor, keys = dec(raw.cmd("SCAN", "0", "COUNT", "100"))
    assert cursor == "0" and sorted(keys) == ["k", "l"]
    # database 0 (the plain client) sees none of it
    assert r.get("k") is None and r.dbsize() == 0 and r.keys("*") == [] and r.randomkey() is None
    r.set("k", "zero")
    assert dec(raw.cmd("GET", "k")) == "three"
    assert raw.cmd("SELECT", "0") == "OK"
    assert dec(raw.cmd("GET", "k")) == "zero"
    ks = keyspace(r)
    assert ks == {0: 1, 3: 2}
    assert r.info("keyspace")["db3"]["expires"] == 1


def test_redis_py_db9_end_to_end(db, r):
    c9 = db(9)
    c9.set("job", "x")
    c9.hset("h", mapping={"f": "v"})
    assert c9.get("job") == "x" and c9.hgetall("h") == {"f": "v"}
    assert r.get("job") is None
    # a pool: every connection of it selects db 9
    pool_client = db(9, single_connection_client=False)
    assert [pool_client.get("job") for _ in range(3)] == ["x", "x", "x"]
    info = c9.client_info()
    assert int(info["db"]) == 9
    assert any(int(x["db"]) == 9 for x in r.client_list())


def test_reset_returns_to_db0(raw, r):
    r.set("k", "zero")
    assert raw.cmd("SELECT", "5") == "OK"
    assert raw.cmd("GET", "k") is None
    assert raw.cmd("RESET") == "RESET"
    assert dec(raw.cmd("GET", "k")) == "zero"


def test_hello_and_auth_keep_the_database(raw, r):
    r.set("k", "zero")
    assert raw.cmd("SELECT", "2") == "OK"
    assert raw.cmd("SET", "k", "two") == "OK"
    raw.cmd("HELLO", "2")
    assert dec(raw.cmd("GET", "k")) == "two"


# --------------------------------------------------------------------------------------------------- MOVE


def test_move(db, r):
    c1 = db(1)
    r.set("a", "1")
    r.pexpire("a", 100000)
    assert r.move("a", 1) is True
    assert r.exists("a") == 0
    assert c1.get("a") == "1"
    assert 0 < c1.pttl("a") <= 100000
    # missing source, existing destination: 0, nothing changes
    assert r.move("nope", 1) is False
    r.set("a", "other")
    assert r.move("a", 1) is False
    assert r.get("a") == "other" and c1.get("a") == "1"
    # every type travels (inline and pointer values)
    r.rpush("l", *range(300))
    r.hset("h", mapping={"f": "v"})
    r.zadd("z", {"m": 1.5})
    r.sadd("s", *range(1000))
    r.xadd("x", {"f": "v"}, id="1-1")
    for k in ("l", "h", "z", "s", "x"):
        assert r.move(k, 1) is True
    assert c1.llen("l") == 300 and c1.hget("h", "f") == "v" and c1.zscore("z", "m") == 1.5
    assert c1.scard("s") == 1000 and c1.xlen("x") == 1
    assert r.dbsize() == 1


def test_move_errors(raw):
    assert raw.cmd("SET", "a", "1") == "OK"
    assert raw.cmd("MOVE", "a", "0") == "ERR source and destination objects are the same"
    assert raw.cmd("MOVE", "a", "16") == "ERR DB index is out of range"
    assert raw.cmd("MOVE", "a", "-1") == "ERR DB index is out of range"
    assert raw.cmd("MOVE", "a", "x") == "ERR value is not an integer or out of range"
    assert raw.cmd("MOVE", "a") == "ERR wrong number of arguments for 'move' command"


# ----------------------------------------------------------------------------------------------- COPY DB


def test_copy_to_another_db(db, r):
    c4 = db(4)
    r.set("s", "v")
    r.zadd("z", {"a": 1, "b": 2})
    r.pexpire("z", 100000)
    assert r.copy("s", "s", destination_db=4) is True  # same name, other database: allowed
    assert r.copy("z", "z2", destination_db=4) is True
    assert c4.get("s") == "v" and c4.zrange("z2", 0, -1, withscores=True) == [("a", 1.0), ("b", 2.0)]
    assert 0 < c4.pttl("z2") <= 100000
    assert r.get("s") == "v"  # the source stays
    r.set("s", "new")
    assert r.copy("s", "s", destination_db=4) is False
    assert r.copy("s", "s", destination_db=4, replace=True) is True
    assert c4.get("s") == "new"
    # the copies are independent
    c4.zadd("z2", {"c": 3})
    assert r.zcard("z") == 2


def test_copy_db_errors(raw):
    assert raw.cmd("SET", "a", "1") == "OK"
    assert raw.cmd("COPY", "a", "a") == "ERR source and destination objects are the same"
    assert raw.cmd("COPY", "a", "a", "DB", "0") == "ERR source and destination objects are the same"
    assert raw.cmd("COPY", "a", "b", "DB", "16") == "ERR DB index is out of range"
    assert raw.cmd("COPY", "a", "b", "DB", "x") == "ERR value is not an integer or out of range"


# ------------------------------------------------------------------------------------------------ SWAPDB


def test_swapdb(db, r):
    c1 = db(1)
    r.set("a", "zero")
    c1.set("b", "one")
    c1.pexpire("b", 100000)
    assert r.swapdb(0, 1) is True
    assert r.get("b") == "one" and r.get("a") is None and 0 < r.pttl("b") <= 100000
    assert c1.get("a") == "zero"
    assert keyspace(r) == {0: 1, 1: 1}
    assert r.swapdb(3, 3) is True
    assert r.swapdb(0, 5) is True  # with an empty one
    assert r.dbsize() == 0 and db(5).get("b") == "one"


def test_swapdb_errors(raw):
    assert raw.cmd("SWAPDB", "0", "16") == "ERR DB index is out of range"
    assert raw.cmd("SWAPDB", "-1", "0") == "ERR DB index is out of range"
    assert raw.cmd("SWAPDB", "x", "0") == "ERR invalid first DB index"
    assert raw.cmd("SWAPDB", "0", "x") == "ERR invalid second DB index"
    assert raw.cmd("SWAPDB", "0") == "ERR wrong number of arguments for 'swapdb' command"


def blpop_in_thread(c, key, out, timeout=10):
    def run():
        out.append(c.blpop(key, timeout=timeout))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def wait_blocked(r, n):
    poll_until(lambda: r.info("clients")["blocked_clients"] == n, timeout=10, what="%d blocked" % n)


def test_blocking_is_per_database(db, r):
    c2 = db(2)
    out = []
    t = blpop_in_thread(c2, "q", out)
    wait_blocked(r, 1)
    r.rpush("q", "db0")  # another database's q: the client keeps waiting
    c3 = db(3)
    c3.rpush("q", "db3")
    assert t.is_alive()
    assert r.lrange("q", 0, -1) == ["db0"]
    db(2).rpush("q", "db2")
    t.join(10)
    assert out == [("q", "db2")]
    wait_blocked(r, 0)


def test_swapdb_wakes_blocked_clients(db, r):
    c2 = db(2)
    out = []
    t = blpop_in_thread(c2, "q", out)
    wait_blocked(r, 1)
    r.rpush("q", "from0")
    r.swapdb(0, 2)  # q now exists in database 2
    t.join(10)
    assert out == [("q", "from0")]
    assert db(2).exists("q") == 0 and r.exists("q") == 0


def test_move_wakes_blocked_client_of_destination(db, r):
    c6 = db(6)
    out = []
    t = blpop_in_thread(c6, "q", out)
    wait_blocked(r, 1)
    r.rpush("q", "moved")
    assert r.move("q", 6) is True
    t.join(10)
    assert out == [("q", "moved")]


# ------------------------------------------------------------------------------------------------- WATCH


def test_watch_is_per_database(db, r):
    c1 = db(1)
    other = db(0)
    p = c1.pipeline()
    p.watch("k")
    other.set("k", "db0 write")  # same name, another database: the transaction goes through
    p.multi()
    p.set("k", "db1")
    assert p.execute() == [True]
    assert c1.get("k") == "db1" and r.get("k") == "db0 write"
    p = c1.pipeline()
    p.watch("k")
    db(1).set("k", "changed")
    p.multi()
    p.set("k", "lost")
    with pytest.raises(redis.exceptions.WatchError):
        p.execute()


def watch_then(c, key, change):
    """WATCH key on c, run change() from elsewhere, then try a transaction: True when EXEC was refused."""
    p = c.pipeline()
    p.watch(key)
    change()
    p.multi()
    p.set(key, "y")
    try:
        p.execute()
        return False
    except redis.exceptions.WatchError:
        return True
    finally:
        p.reset()


def test_watch_invalidated_by_move_swapdb_flushdb(db, r):
    c1 = db(1)
    # MOVE onto the watched key of database 1
    r.set("k", "v")
    assert watch_then(c1, "k", lambda: r.move("k", 1)) is True
    r.flushall()
    # SWAPDB brings a key into the watched database (as Redis: a key present in either)
    r.set("k", "v")
    assert watch_then(c1, "k", lambda: r.swapdb(0, 1)) is True
    r.flushall()
    # FLUSHDB of the watched database, the key present
    c1.set("k", "v")
    assert watch_then(c1, "k", lambda: db(1).flushdb()) is True


# ------------------------------------------------------------------------------------------------- MULTI


def test_select_inside_multi(raw, r):
    r.set("k", "zero")
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("GET", "k") == "QUEUED"
    assert raw.cmd("SELECT", "7") == "QUEUED"
    assert raw.cmd("SET", "k", "seven") == "QUEUED"
    assert raw.cmd("GET", "k") == "QUEUED"
    assert dec(raw.cmd("EXEC")) == ["zero", "OK", "OK", "seven"]
    assert dec(raw.cmd("GET", "k")) == "seven"  # the SELECT lasts after EXEC
    assert r.get("k") == "zero"


# -------------------------------------------------------------------------------------------- FLUSHDB/ALL


def test_flushdb_vs_flushall(db, r):
    c1, c2 = db(1), db(2)
    r.set("a", 1)
    c1.set("b", 1)
    c2.set("c", 1)
    assert c1.flushdb() is True
    assert c1.dbsize() == 0 and r.dbsize() == 1 and c2.dbsize() == 1
    assert c2.flushdb(asynchronous=True) is True
    assert c2.dbsize() == 0 and r.dbsize() == 1
    c1.set("b", 1)
    assert c1.flushall() is True
    assert r.dbsize() == 0 and c1.dbsize() == 0
    assert keyspace(r) == {}


def test_expiry_in_another_database(db, r):
    expired0 = r.info("stats")["expired_keys"]
    c5 = db(5)
    c5.set("t", "v", px=50)
    poll_until(lambda: c5.exists("t") == 0, timeout=5, what="key of db 5 expired")
    # active expiry too: a key never read again leaves INFO keyspace
    c5.set("t2", "v", px=50)
    poll_until(lambda: 5 not in keyspace(r), timeout=10, what="db 5 emptied by active expiry")
    assert r.info("stats")["expired_keys"] - expired0 == 2  # INFO counts every database's
    assert c5.info("stats")["expired_keys"] - expired0 == 2


# ---------------------------------------------------------------------------------------- ruvio-only


def dbs_state(c, n=16):
    """{db: {key: (type, value)}} of every non-empty database, read through SELECT."""
    out = {}
    for i in range(n):
        c.execute_command("SELECT", i)
        keys = sorted(c.keys("*"))
        if not keys:
            continue
        d = {}
        for k in keys:
            t = c.type(k)
            if t == "string":
                v = c.get(k)
            elif t == "list":
                v = c.lrange(k, 0, -1)
            elif t == "hash":
                v = c.hgetall(k)
            elif t == "zset":
                v = c.zrange(k, 0, -1, withscores=True)
            else:
                v = sorted(c.smembers(k))
            d[k] = (t, v)
        out[i] = d
    c.execute_command("SELECT", 0)
    return out


def fill(c):
    c.set("a", "zero")
    c.execute_command("SELECT", 3)
    c.set("a", "three")
    c.rpush("l", *range(200))
    c.hset("h", mapping={"f%d" % i: i for i in range(300)})
    c.execute_command("SELECT", 15)
    c.zadd("z", {"m%d" % i: i for i in range(10)})
    c.sadd("s", "x", "y")
    c.set("gone", "v")
    c.move("gone", 7)
    c.execute_command("SELECT", 9)
    c.set("w", "v")
    c.swapdb(9, 10)
    c.execute_command("SELECT", 0)
    # one transaction across databases: one record, SELECTs inside it
    p = c.pipeline(transaction=True)
    p.set("t0", "zero")
    p.execute_command("SELECT", 11)
    p.set("t11", "eleven")
    p.execute_command("SELECT", 0)
    p.execute()


@pytest.mark.ruvio_only
@pytest.mark.parametrize("checkpoint", [False, True])
def test_restart_recovers_every_database(start_server, tmp_path, checkpoint):
    args = ("--dir", str(tmp_path), "--durability", "always")
    srv = start_server(*args)
    c = srv.client()
    fill(c)
    if checkpoint:
        assert c.save() is True
        c.execute_command("SELECT", 4)
        c.set("after", "ckpt")  # a WAL record after the checkpoint
        c.execute_command("SELECT", 0)
    before = dbs_state(c)
    assert set(before) == ({0, 3, 7, 10, 11, 15} | ({4} if checkpoint else set()))
    c.close()
    srv.stop()
    srv2 = start_server(*args)
    c2 = srv2.client()
    assert dbs_state(c2) == before
    c2.close()


@pytest.mark.ruvio_only
def test_replica_has_every_database(start_server):
    primary = start_server()
    p = primary.client()
    fill(p)  # before the replica: a full sync carries it
    replica = start_server()
    r = replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=15)
    # and after: the stream carries it
    p.execute_command("SELECT", 12)
    p.set("streamed", "v")
    p.move("streamed", 13)
    p.execute_command("SELECT", 0)
    repl.wait_offset(p, r, timeout=15)
    assert dbs_state(r) == dbs_state(p)
    assert 13 in dbs_state(r)
    p.close()
    r.close()


@pytest.mark.ruvio_only
def test_databases_config(start_server):
    srv = start_server("--databases", "4")
    c = srv.client()
    assert c.config_get("databases") == {"databases": "4"}
    assert resp_error(c.execute_command, "SELECT", 4) == "DB index is out of range"
    assert c.execute_command("SELECT", 3) is True
    assert resp_error(c.config_set, "databases", "8") == (
        "CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")


@pytest.mark.ruvio_only
def test_cluster_mode_has_db0_only(start_server):
    srv = start_server("--shards", "2")
    c = srv.client()
    assert resp_error(c.execute_command, "SELECT", 1) == "SELECT is not allowed in cluster mode"
    assert c.execute_command("SELECT", 0) is True
    assert resp_error(c.execute_command, "SWAPDB", 0, 1) == "SWAPDB is not allowed in cluster mode"
    assert resp_error(c.execute_command, "MOVE", "b", 1) == "MOVE is not allowed in cluster mode"


@pytest.mark.ruvio_only
def test_wal_selects_only_for_other_databases(start_server, tmp_path):
    # docs/durability.md#numbered-databases: a record starts in database 0; SELECT only precedes a write of another
    srv = start_server("--dir", str(tmp_path), "--durability", "always")
    c = srv.client()
    c.set("a", "1")
    c.rpush("l", "x")
    segs = lambda: b"".join(open(p, "rb").read() for p in sorted(tmp_path.glob("shard-0/wal-*.log")))
    assert segs() and b"SELECT" not in segs()  # a db-0-only log is what it was before
    c.execute_command("SELECT", 3)
    c.set("b", "2")
    c.set("b2", "2")  # each record selects again
    c.execute_command("SELECT", 0)
    c.set("c", "3")
    assert segs().count(b"SELECT") == 2
    assert segs().count(b"\x06SELECT\x013") == 2


@pytest.mark.ruvio_only
def test_resharding_refuses_keys_outside_db0(start_server, tmp_path):
    # a node of several shards has database 0 only: its keys of database 2 would have nowhere to go
    args = ("--dir", str(tmp_path), "--durability", "always")
    srv = start_server(*args)
    c = srv.client()
    c.set("a", "zero")
    c.execute_command("SELECT", 2)
    c.set("b", "two")
    c.close()
    srv.stop()
    bad = start_server(*args, "--shards", "2", expect_fail=True, exit_timeout=15)
    assert bad.returncode not in (None, 0)
    assert "holds keys in database 2" in bad.stderr() + bad.stdout()
    # nothing was lost: the former layout still starts (resuming the redistribution) with both databases
    srv2 = start_server(*args)
    assert dbs_state(srv2.client()) == {0: {"a": ("string", "zero")}, 2: {"b": ("string", "two")}}


@pytest.mark.ruvio_only
def test_replica_with_fewer_databases_skips_never_misplaces(start_server):
    primary = start_server()
    replica = start_server("--databases", "4")
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=15)
    p.execute_command("SELECT", 10)
    p.set("k", "ten")
    p.execute_command("SELECT", 0)
    p.set("z", "zero")
    repl.wait_offset(p, r, timeout=15)
    assert dbs_state(r, 4) == {0: {"z": ("string", "zero")}}


@pytest.mark.ruvio_only
def test_expiry_of_recovered_database_reaches_replica(start_server, tmp_path):
    # database 5 is re-created by recovery: its expiries must be logged (DEL in database 5) like db 0's
    args = ("--dir", str(tmp_path), "--durability", "always")
    primary = start_server(*args)
    c = primary.client()
    c.execute_command("SELECT", 5)
    c.set("k", "v", px=4000)
    c.close()
    primary.stop()
    primary = start_server(*args)
    p = primary.client(db=5)
    replica = start_server()
    r = replica.client(db=5)
    assert r.replicaof(HOST, primary.port) == "OK"
    repl.wait_link_up(r, timeout=15)
    repl.wait_offset(primary.client(), replica.client(), timeout=15)
    # a replica keeps an expired key (hidden) until the primary's DEL: dbsize counts it until then
    poll_until(lambda: p.dbsize() == 0, timeout=20, what="primary expired the key")
    poll_until(lambda: r.dbsize() == 0, timeout=20, what="replica got the DEL of database 5")


@pytest.mark.ruvio_only
def test_checkpoint_while_moving_between_databases(start_server, tmp_path):
    # copy-on-write across databases: MOVE/COPY ... DB change a key of another database than the command's
    args = ("--dir", str(tmp_path), "--durability", "everysec")
    srv = start_server(*args)
    c = srv.client()
    for d in (0, 1):
        c.execute_command("SELECT", d)
        p = c.pipeline(transaction=False)
        for i in range(20000):
            p.set("k%d" % i, "db%d-%d" % (d, i))
        p.execute()
    c.execute_command("SELECT", 0)
    c.bgsave()
    for i in range(0, 20000, 50):
        c.move("k%d" % i, 2)
        c.copy("k%d" % (i + 1), "k%d" % (i + 1), destination_db=1, replace=True)
    poll_until(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0, timeout=30, what="checkpoint")
    assert c.info("persistence")["rdb_last_bgsave_status"] == "ok"
    c.set("after", "1")
    before = strings_state(c, 3)
    assert len(before[2]) == 400 and len(before[1]) == 20000
    c.close()
    srv.stop()
    srv2 = start_server(*args)
    c2 = srv2.client()
    assert strings_state(c2, 3) == before
    # and from a checkpoint alone
    c2.save()
    srv2.stop()
    srv3 = start_server(*args)
    assert strings_state(srv3.client(), 3) == before


def strings_state(c, n):
    """{db: {key: value}} of databases 0..n-1 holding strings only (MGET: fast for many keys)."""
    out = {}
    for i in range(n):
        c.execute_command("SELECT", i)
        keys = sorted(c.keys("*"))
        out[i] = dict(zip(keys, c.mget(keys))) if keys else {}
    c.execute_command("SELECT", 0)
    return out
