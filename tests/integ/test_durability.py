"""Durability (issue 4): what the WAL logs, checkpoints, recovery, the config surface.

Every test starts real ruvio processes on a data directory it owns and restarts them on it."""
import glob
import os
import signal
import threading
import time

import pytest
import redis

from conftest import poll_until

pytestmark = pytest.mark.ruvio_only


def start(start_server, d, mode, *extra):
    return start_server("--dir", str(d), "--durability", mode, *extra)


def kill9(srv):
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=5)


def restart(start_server, srv, d, mode, *extra, hard=False):
    if hard:
        kill9(srv)
    else:
        srv.stop()
    return start(start_server, d, mode, *extra)


def persistence(c):
    return c.info("persistence")


def snapshot_state(c):
    """Every key with its type, value and absolute deadline."""
    kw = c.connection_pool.connection_kwargs
    c = redis.Redis(host=kw["host"], port=kw["port"], socket_timeout=10)
    out = {}
    for k in c.scan_iter(count=1000):
        t = c.type(k)
        t = t.decode()
        if t == "string":
            v = c.get(k)
        elif t == "list":
            v = c.lrange(k, 0, -1)
        elif t == "hash":
            v = sorted(c.hgetall(k).items())
        elif t == "set":
            v = sorted(c.smembers(k))
        elif t == "zset":
            v = c.zrange(k, 0, -1, withscores=True)
        else:
            v = t
        out[k] = (t, v, c.execute_command("PEXPIRETIME", k))
    return out


def fill_all_types(c, n=3):
    for i in range(n):
        c.set("s%d" % i, "v%d" % i)
        c.incr("n%d" % i)
        c.rpush("l%d" % i, *["e%d" % j for j in range(5 + i * 200)])
        c.hset("h%d" % i, mapping={"f%d" % j: "v%d" % j for j in range(3 + i * 100)})
        c.sadd("st%d" % i, *["m%d" % j for j in range(4 + i * 150)])
        c.sadd("si%d" % i, *range(4 + i * 600))
        c.zadd("z%d" % i, {"m%d" % j: j / 3 for j in range(4 + i * 150)})
    c.set("ttl", "x", px=500000)
    c.hset("hf", mapping={"a": "1", "b": "2"})
    c.execute_command("HPEXPIRE", "hf", 400000, "FIELDS", 1, "a")
    c.pfadd("hll", *["x%d" % i for i in range(100)])
    c.setbit("bits", 100, 1)


@pytest.mark.parametrize("mode", ["everysec", "always"])
def test_restart_recovers_every_type_from_wal(start_server, tmp_path, mode):
    srv = start(start_server, tmp_path, mode)
    c = srv.client()
    fill_all_types(c)
    before = snapshot_state(c)
    assert persistence(c)["durability"] == mode
    assert persistence(c)["aof_enabled"] == 1
    srv2 = restart(start_server, srv, tmp_path, mode)
    c2 = srv2.client()
    assert snapshot_state(c2) == before
    info = persistence(c2)
    assert info["loading_wal_records"] > 20
    assert info["loading_replay_errors"] == 0
    assert c2.execute_command("HPEXPIRETIME", "hf", "FIELDS", 2, "a", "b")[0] > 0
    assert c2.execute_command("HPEXPIRETIME", "hf", "FIELDS", 2, "a", "b")[1] == -1


@pytest.mark.parametrize("mode", ["everysec", "always"])
def test_checkpoint_then_wal_then_kill9(start_server, tmp_path, mode):
    srv = start(start_server, tmp_path, mode)
    c = srv.client()
    fill_all_types(c)
    assert c.save() is True
    lastsave = c.lastsave()
    assert abs(lastsave.timestamp() - time.time()) < 10
    info = persistence(c)
    assert info["checkpoint_lsn"] == info["wal_last_lsn"] and info["rdb_saves"] == 1
    # writes after the checkpoint come from the WAL
    c.rpush("l0", "after")
    c.delete("s1")
    c.set("new", "1")
    if mode == "everysec":
        poll_until(lambda: persistence(c)["wal_durable_lsn"] == persistence(c)["wal_last_lsn"], timeout=5,
                   what="everysec sync")
    before = snapshot_state(c)
    srv2 = restart(start_server, srv, tmp_path, mode, hard=True)
    c2 = srv2.client()
    assert snapshot_state(c2) == before
    info = persistence(c2)
    assert info["loading_keys"] == len(before) - 1 + 1   # s1 deleted after, new added after
    assert info["loading_wal_records"] == 3
    ckpts = glob.glob(str(tmp_path / "shard-0" / "ckpt-*.ckpt"))
    assert len(ckpts) == 1


def test_wal_segments_covered_by_checkpoint_are_deleted(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec", "--wal_segment_bytes", "8kb")
    c = srv.client()
    for i in range(2000):
        c.set("k%d" % i, "x" * 50)
    segs = glob.glob(str(tmp_path / "shard-0" / "wal-*.log"))
    assert len(segs) > 5
    assert persistence(c)["wal_segments"] == len(segs)
    c.bgsave()
    poll_until(lambda: persistence(c)["rdb_saves"] == 1, what="bgsave done")
    segs = glob.glob(str(tmp_path / "shard-0" / "wal-*.log"))
    assert len(segs) == 1
    srv2 = restart(start_server, srv, tmp_path, "everysec", "--wal_segment_bytes", "8kb")
    assert srv2.client().dbsize() == 2000


def test_relative_ttls_are_logged_as_deadlines(start_server, tmp_path):
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    c.set("a", "1", ex=100)
    c.set("b", "1", px=100000)
    c.setex("c", 100, "1")
    c.psetex("d", 100000, "1")
    c.set("e", "1")
    c.expire("e", 100)
    c.set("f", "1")
    c.pexpire("f", 100000)
    c.set("g", "1")
    c.getex("g", ex=100)
    want = {k: c.execute_command("PEXPIRETIME", k) for k in "abcdefg"}
    time.sleep(1.1)
    srv2 = restart(start_server, srv, tmp_path, "always")
    c2 = srv2.client()
    # identical absolute deadlines: nothing re-based on the replay time
    assert {k: c2.execute_command("PEXPIRETIME", k) for k in "abcdefg"} == want
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert b"PXAT" in wal and b"PEXPIREAT" in wal
    assert b"SETEX" not in wal.upper() and b"\x06EXPIRE" not in wal


def test_nondeterministic_writes_replay_exactly(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec")
    c = srv.client()
    c.sadd("s", *range(100))
    popped = c.spop("s", 10)
    one = c.spop("s")
    assert len(popped) == 10 and one is not None
    c.set("f", "10.5")
    assert c.incrbyfloat("f", 0.1) == pytest.approx(10.6)
    tok = c.execute_command("SEMAPHORE", "sem", 2, 100000)
    before = snapshot_state(c)
    srv2 = restart(start_server, srv, tmp_path, "everysec")
    c2 = srv2.client()
    assert snapshot_state(c2) == before
    # the holder token issued before the restart is still the holder's
    assert c2.execute_command("SEMAPHORE", "sem", "RELEASE", tok) == 1
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert b"SPOP" not in wal and b"SREM" in wal and b"INCRBYFLOAT" not in wal


def test_served_blocking_pop_is_logged_as_plain_pop(start_server, tmp_path):
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    res = {}

    def waiter():
        w = srv.client()
        res["v"] = w.blpop(["q1", "q2"], timeout=5)
        res["z"] = w.bzpopmin("zq", timeout=5)
        res["m"] = w.blmove("src", "dst", 5, "LEFT", "RIGHT")

    def blocked_on(step):                # the waiter got the reply before `step` and now blocks again
        return lambda: step in res and c.info("clients")["blocked_clients"] == 1

    t = threading.Thread(target=waiter)
    t.start()
    poll_until(lambda: c.info("clients")["blocked_clients"] == 1, what="BLPOP blocked")
    c.rpush("q2", "a", "b")
    poll_until(blocked_on("v"), what="BZPOPMIN blocked")
    c.zadd("zq", {"m": 1, "n": 2})
    poll_until(blocked_on("z"), what="BLMOVE blocked")
    c.rpush("src", "x", "y")
    t.join(10)
    assert res["v"] == ("q2", "a") and res["z"] == ("zq", "m", 1.0) and res["m"] == "x"
    c.rpush("q1", "p")
    assert c.blpop(["q1"], timeout=1) == ("q1", "p")     # served at once
    before = snapshot_state(c)
    srv2 = restart(start_server, srv, tmp_path, "always")
    assert snapshot_state(srv2.client()) == before
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert b"BLPOP" not in wal and b"BZPOPMIN" not in wal and b"BLMOVE" not in wal


def test_handlers_report_what_they_did(start_server, tmp_path):
    """A write that changed nothing writes no record; one whose arguments do not say what it did is
    logged as the plain command that redoes it (the handler reports it, nothing is read back from
    the reply), and recovery rebuilds exactly the same data."""
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    c.sadd("s", "a", "b", "c")
    c.set("str", "v")
    lsn = persistence(c)["wal_last_lsn"]
    assert c.expire("missing", 100) is False
    assert c.expire("str", 100, gt=True) is False            # no deadline: GT does nothing
    assert c.getex("missing", ex=100) is None
    assert c.getex("str") == "v"                              # no option: nothing to change
    assert c.spop("missing") is None
    assert c.spop("s", 0) == []
    assert c.execute_command("BLMPOP", "0.05", 1, "nolist", "LEFT") is None   # timed out
    assert c.execute_command("BZPOPMIN", "nozset", "0.05") is None
    assert persistence(c)["wal_last_lsn"] == lsn
    # what was taken, computed or made absolute
    c.rpush("l", 1, 2, 3, 4, 5)
    c.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert c.execute_command("BLMPOP", 1, 2, "nolist", "l", "RIGHT", "COUNT", 2) == ["l", ["5", "4"]]
    assert c.execute_command("BZMPOP", 1, 1, "z", "MAX", "COUNT", 2) == ["z", [["c", "3"], ["b", "2"]]]
    assert c.brpoplpush("l", "l2", 1) == "3"
    assert c.brpop(["nolist", "l"], 1) == ("l", "2")
    c.pexpire("str", 100000)
    assert c.getex("str", persist=True) == "v"
    c.set("ex", "x")
    assert c.getex("ex", px=50000) == "x"
    c.set("gone", "x")
    assert c.getex("gone", pxat=1) == "x"                     # a past deadline deletes it
    c.set("gone2", "x")
    assert c.expireat("gone2", 1) is True
    assert len(c.spop("s", 10)) == 3                          # all of them: the key goes
    before = snapshot_state(c)
    assert set(before) == {b"l", b"l2", b"z", b"str", b"ex"}
    srv2 = restart(start_server, srv, tmp_path, "always", hard=True)
    assert snapshot_state(srv2.client()) == before
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    for name in (b"BLMPOP", b"BZMPOP", b"BRPOPLPUSH", b"BRPOP", b"GETEX", b"SPOP", b"\x08EXPIREAT"):
        assert name not in wal.upper(), name
    assert b"LMOVE" in wal and b"ZPOPMAX" in wal and b"PERSIST" in wal


def test_exec_is_one_record_all_or_nothing(start_server, tmp_path):
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    c.set("before", "1")
    p = c.pipeline(transaction=True)
    p.set("t1", "a")
    p.set("t2", "b")
    p.incr("t3")
    p.execute()
    info = persistence(c)
    assert info["wal_last_lsn"] == 2          # SET, then one record for the whole EXEC
    srv.stop()
    # cut the transaction's record in half: recovery drops all of it
    seg = sorted(glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))[-1]
    size = os.path.getsize(seg)
    os.truncate(seg, size - 10)
    srv2 = start(start_server, tmp_path, "always")
    c2 = srv2.client()
    assert c2.get("before") == "1"
    assert c2.exists("t1", "t2", "t3") == 0
    assert persistence(c2)["loading_torn_tails"] == 1
    assert "torn record" in srv2.stderr() + srv2.stdout()


def test_expiry_is_logged_as_del(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec")
    c = srv.client()
    c.set("gone", "1", px=50)
    c.set("lazy", "1", px=50)
    time.sleep(0.3)
    assert c.get("lazy") is None
    poll_until(lambda: c.dbsize() == 0, what="active expiry")
    srv.stop()
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert wal.count(b"DEL") >= 2 and b"gone" in wal and b"lazy" in wal


def test_checkpoint_is_consistent_under_concurrent_writes(start_server, tmp_path):
    """Copy-on-write: keys written while BGSAVE runs are saved with their value at the checkpoint's LSN;
    the WAL after it replays the rest exactly once (INCR would double-count otherwise)."""
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    n = 200000
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set("c%d" % i, 0)
        if i % 5000 == 4999:
            p.execute()
    p.execute()
    c.bgsave()
    expect = {}
    writes = 0
    while persistence(c)["rdb_bgsave_in_progress"] == 1 or writes < 3000:
        p = c.pipeline(transaction=False)
        for j in range(300):
            k = "c%d" % ((writes * 7919) % n)
            p.incr(k)
            expect[k] = (expect.get(k) or 0) + 1
            writes += 1
        p.delete("c%d" % (writes % n))
        expect["c%d" % (writes % n)] = None
        p.set("new%d" % writes, "x")
        expect["new%d" % writes] = "x"
        p.execute()
        assert writes < 5_000_000
    assert persistence(c)["rdb_saves"] == 1
    srv2 = restart(start_server, srv, tmp_path, "always", hard=True)
    c2 = srv2.client()
    info = persistence(c2)
    assert info["loading_keys"] > 0 and info["loading_wal_records"] > 0
    keys = list(expect)
    got = []
    for i in range(0, len(keys), 1000):
        got += c2.mget(keys[i:i + 1000])
    for k, v in zip(keys, got):
        want = expect[k]
        if want is None:
            assert v is None, k
        elif isinstance(want, int):
            assert v == str(want), k
        else:
            assert v == want, k
    assert c2.get("c%d" % (n - 1)) in ("0", None) or int(c2.get("c%d" % (n - 1))) >= 0


def test_flushall_during_checkpoint(start_server, tmp_path):
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    p = c.pipeline(transaction=False)
    for i in range(100000):
        p.set("k%d" % i, "v")
    p.execute()
    c.bgsave()
    c.flushall()
    c.set("after", "1")
    poll_until(lambda: persistence(c)["rdb_bgsave_in_progress"] == 0, what="checkpoint done")
    srv2 = restart(start_server, srv, tmp_path, "always", hard=True)
    c2 = srv2.client()
    assert c2.dbsize() == 1 and c2.get("after") == "1"


def test_memory_mode_writes_no_wal_but_save_works(start_server, tmp_path):
    srv = start(start_server, tmp_path, "memory")
    c = srv.client()
    c.set("a", "1")
    info = persistence(c)
    assert info["aof_enabled"] == 0 and info["wal_last_lsn"] == 0
    assert glob.glob(str(tmp_path / "shard-0" / "wal-*.log")) == []
    assert info["rdb_last_save_time"] == 0
    c.save()
    c.set("b", "2")          # not logged: lost on restart, as without AOF in Redis
    srv2 = restart(start_server, srv, tmp_path, "memory")
    c2 = srv2.client()
    assert c2.get("a") == "1" and c2.get("b") is None


def test_multi_shard_restart(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec", "--shards", "3")
    rc = redis.RedisCluster(host="127.0.0.1", port=srv.port, decode_responses=True)
    for i in range(300):
        rc.set("k%d" % i, i)
    rc.close()
    srv.stop()
    assert sorted(os.listdir(tmp_path)) == ["layout", "shard-0", "shard-1", "shard-2"]
    srv2 = start(start_server, tmp_path, "everysec", "--shards", "3")
    rc = redis.RedisCluster(host="127.0.0.1", port=srv2.port, decode_responses=True)
    assert all(rc.get("k%d" % i) == str(i) for i in range(300))
    rc.close()


def test_appendonly_aliases(start_server, tmp_path):
    srv = start_server("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always")
    c = srv.client()
    assert persistence(c)["durability"] == "always"
    assert c.config_get("durability")["durability"] == "always"
    srv.stop()
    srv = start_server("--dir", str(tmp_path), "--appendonly", "yes")
    assert persistence(srv.client())["durability"] == "everysec"
    srv.stop()
    bad = start_server("--dir", str(tmp_path), "--durability", "everysec", "--appendonly", "yes",
                       "--appendfsync", "always", expect_fail=True)
    assert bad.returncode not in (None, 0)
    assert "appendfsync" in bad.stderr() and "conflicts" in bad.stderr()
    bad = start_server("--dir", str(tmp_path), "--durability", "sometimes", expect_fail=True)
    assert bad.returncode not in (None, 0) and "durability" in bad.stderr()


def test_bgsave_errors_and_info_fields(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec")
    c = srv.client()
    with pytest.raises(redis.ResponseError, match="syntax error"):
        c.execute_command("BGSAVE", "NOW")
    assert c.execute_command("BGSAVE", "SCHEDULE")
    poll_until(lambda: persistence(c)["rdb_bgsave_in_progress"] == 0, what="bgsave")
    assert c.execute_command("BGREWRITEAOF")
    poll_until(lambda: persistence(c)["rdb_saves"] == 2, what="second checkpoint")
    info = persistence(c)
    for f in ("loading", "rdb_changes_since_last_save", "rdb_last_save_time", "rdb_last_bgsave_status",
              "aof_enabled", "aof_last_write_status", "wal_last_lsn", "wal_durable_lsn", "checkpoint_lsn"):
        assert f in info, f
    assert info["rdb_last_bgsave_status"] == "ok"
    with pytest.raises(redis.ResponseError, match="not allowed"):
        p = c.pipeline(transaction=True)
        p.execute_command("SAVE")
        p.execute()


def _check_bin():
    from conftest import RUVIO_BIN
    path = os.path.join(os.path.dirname(RUVIO_BIN), "ruvio-check")
    if not os.path.exists(path):
        pytest.fail("ruvio-check not built next to %s" % RUVIO_BIN)
    return path


def test_ruvio_check(start_server, tmp_path):
    import json
    import subprocess
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    for i in range(50):
        c.set("k%d" % i, i)
    c.save()
    for i in range(50, 80):
        c.set("k%d" % i, i)
    srv.stop()
    chk = _check_bin()
    out = subprocess.run([chk, "--json", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    rep = json.loads(out.stdout)[0]
    assert rep["status"] == "ok" and rep["checkpoint_lsn"] == 50 and rep["checkpoint_keys"] == 50
    assert rep["last_valid_lsn"] == 80 and rep["records"] == 30
    seg = sorted(glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))[-1]
    os.truncate(seg, os.path.getsize(seg) - 3)
    out = subprocess.run([chk, str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "torn tail" in out.stdout
    out = subprocess.run([chk, "--fix", "--json", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and json.loads(out.stdout)[0]["last_valid_lsn"] == 79
    # a flipped byte inside the first record: corruption, named with its offset
    data = bytearray(open(seg, "rb").read())
    data[32 + 30] ^= 0xFF
    open(seg, "wb").write(bytes(data))
    out = subprocess.run([chk, str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "corrupt at offset 32" in out.stdout, out.stdout


def _cluster(srv):
    return redis.RedisCluster(host="127.0.0.1", port=srv.port, decode_responses=True)


@pytest.mark.parametrize("mode", ["everysec", "memory"])
def test_restart_with_another_shard_count_redistributes(start_server, tmp_path, mode):
    srv = start(start_server, tmp_path, mode, "--shards", "3")
    rc = _cluster(srv)
    for i in range(3000):
        rc.set("k%d" % i, i)
    rc.rpush("{tag}list", *range(100))
    rc.set("exp", "1", px=300000)
    rc.close()
    if mode == "memory":
        for port in srv.ports:
            redis.Redis(port=port).save()
    srv.stop()
    # 3 -> 1: every key lands in the single shard
    srv1 = start(start_server, tmp_path, mode)
    c = srv1.client()
    assert c.dbsize() == 3002
    assert c.get("k2999") == "2999" and c.lrange("{tag}list", 0, -1) == [str(i) for i in range(100)]
    assert 0 < c.pttl("exp") <= 300000
    assert "redistributed 3002 keys from 3 to 1" in srv1.stderr() + srv1.stdout()
    assert sorted(x for x in os.listdir(tmp_path) if x.startswith("shard")) == ["shard-0"]
    c.set("added", "x")
    if mode == "memory":
        c.save()
    srv1.stop()
    # 1 -> 2: keys follow their slots; CLUSTER routing finds every one
    srv2 = start(start_server, tmp_path, mode, "--shards", "2")
    rc = _cluster(srv2)
    assert all(rc.get("k%d" % i) == str(i) for i in range(0, 3000, 7))
    assert rc.get("added") == "x"
    total = sum(redis.Redis(port=p).dbsize() for p in srv2.ports)
    assert total == 3003
    for p in srv2.ports:      # each shard holds only keys of its own slots
        r = redis.Redis(port=p, decode_responses=True)
        for k in r.scan_iter(count=1000):
            assert r.exists(k) == 1   # MOVED if the key were in the wrong shard
    rc.close()
    assert open(tmp_path / "layout").read().strip() == "shards 2"


def test_interrupted_redistribution_resumes(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec", "--shards", "2")
    rc = _cluster(srv)
    for i in range(500):
        rc.set("k%d" % i, i)
    rc.close()
    srv.stop()
    # as if a crash happened after the old data was moved aside: partial new dirs exist
    os.mkdir(tmp_path / "resharding")
    for k in range(2):
        os.rename(tmp_path / ("shard-%d" % k), tmp_path / "resharding" / ("shard-%d" % k))
    os.mkdir(tmp_path / "shard-0")
    open(tmp_path / "shard-0" / "wal-00000000000000000001.log", "wb").write(b"garbage")
    srv1 = start(start_server, tmp_path, "everysec")
    assert srv1.client().dbsize() == 500
    assert not os.path.exists(tmp_path / "resharding")


def test_shutdown_save_writes_a_checkpoint(start_server, tmp_path):
    srv = start(start_server, tmp_path, "everysec", "--shards", "2")
    rc = _cluster(srv)
    for i in range(200):
        rc.set("k%d" % i, i)
    rc.close()
    c = redis.Redis(port=srv.port)
    try:
        c.execute_command("SHUTDOWN", "SAVE")
    except redis.ConnectionError:
        pass
    assert srv.wait_exit(10) == 0
    for k in range(2):
        ck = glob.glob(str(tmp_path / ("shard-%d" % k) / "ckpt-*.ckpt"))
        assert len(ck) == 1
    srv2 = start(start_server, tmp_path, "everysec", "--shards", "2")
    info = [redis.Redis(port=p).info("persistence") for p in srv2.ports]
    assert sum(i["loading_keys"] for i in info) == 200
    assert sum(i["loading_wal_records"] for i in info) == 0


def _random_ops(c, rng, nkeys, count):
    """A seeded mix of writes over every type (and multi-key commands)."""
    p = c.pipeline(transaction=False)
    for _ in range(count):
        k = rng.randrange(nkeys)
        op = rng.randrange(16)
        if op == 0:
            p.set("s%d" % k, rng.randrange(1000))
        elif op == 1:
            p.incrby("s%d" % k, 3)
        elif op == 2:
            p.rpush("l%d" % k, *[rng.randrange(100) for _ in range(rng.randrange(1, 5))])
        elif op == 3:
            p.lpop("l%d" % k)
        elif op == 4:
            p.hset("h%d" % k, "f%d" % rng.randrange(20), rng.randrange(100))
        elif op == 5:
            p.hincrby("h%d" % k, "n", 1)
        elif op == 6:
            p.sadd("t%d" % k, *[rng.randrange(50) for _ in range(3)])
        elif op == 7:
            p.srem("t%d" % k, rng.randrange(50))
        elif op == 8:
            p.zadd("z%d" % k, {"m%d" % rng.randrange(30): rng.random()})
        elif op == 9:
            p.zincrby("z%d" % k, 1.5, "m0")
        elif op == 10:
            p.delete("s%d" % k, "l%d" % k)
        elif op == 11:
            p.mset({"s%d" % rng.randrange(nkeys): "m" for _ in range(100)})
        elif op == 12:
            p.rename("s%d" % k, "s%d" % rng.randrange(nkeys)) if rng.random() < 0.5 else p.exists("s0")
        elif op == 13:
            p.expire("s%d" % k, 1000)
        elif op == 14:
            p.lmove("l%d" % k, "l%d" % rng.randrange(nkeys), "LEFT", "RIGHT")
        else:
            p.sinterstore("t%d" % k, ["t%d" % rng.randrange(nkeys), "t%d" % rng.randrange(nkeys)])
    try:
        p.execute(raise_on_error=False)
    except redis.ResponseError:
        pass


def test_checkpoint_under_random_writes_of_every_type(start_server, tmp_path):
    """The checkpoint plus the WAL after it equal the live state, whatever the writes during it."""
    import random
    rng = random.Random(1234)
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    _random_ops(c, rng, 3000, 60000)
    for _ in range(3):
        c.bgsave()
        while persistence(c)["rdb_bgsave_in_progress"] == 1:
            _random_ops(c, rng, 3000, 2000)
        _random_ops(c, rng, 3000, 3000)
    assert persistence(c)["rdb_saves"] == 3
    before = snapshot_state(c)
    srv2 = restart(start_server, srv, tmp_path, "always", hard=True)
    c2 = srv2.client()
    assert persistence(c2)["loading_replay_errors"] == 0
    after = snapshot_state(c2)
    assert after.keys() == before.keys()
    assert after == before


def test_restore_ttl_is_logged_absolute(start_server, tmp_path):
    srv = start(start_server, tmp_path, "always")
    c = srv.client()
    c.rpush("src", "a", "b")
    payload = c.dump("src")
    c.restore("dst", 100000, payload)
    want = c.execute_command("PEXPIRETIME", "dst")
    time.sleep(0.3)
    srv2 = restart(start_server, srv, tmp_path, "always")
    c2 = srv2.client()
    assert c2.execute_command("PEXPIRETIME", "dst") == want
    assert c2.lrange("dst", 0, -1) == ["a", "b"]
    wal = b"".join(open(p, "rb").read() for p in glob.glob(str(tmp_path / "shard-0" / "wal-*.log")))
    assert b"ABSTTL" in wal
