"""MIGRATE of big keys (issue 18, docs/cluster.md "Moving slots"): a key bigger than one chunk (slotmig_chunk.h:
1,024 elements or 256 KiB) goes in chunks on the source shard's loop, the client waiting, into a staging value
on the target that no command sees, which becomes the key at once (RESTORE-STAGE COMMIT). The chunking, the
staging value and DEBUG MIGRATE-HOLD / MIGRATE-STAGING are Ruvio's; the replies are Redis's."""

import socket
import threading
import time

import pytest
import redis
from redis.crc import key_slot

from conftest import HOST, TIMEOUT, encode_command, launch, poll_until
from test_cluster_atomic_migrate import asleep

pytestmark = pytest.mark.ruvio_only

HASH_FIELDS = 200000
ELEMS = 20000
BIG_STRING = 20 << 20


def client(port, **kw):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, **kw)


def digest(r, key):
    return r.execute_command("DEBUG", "DIGEST-VALUE", key)[0]


def staging(r):
    return r.execute_command("DEBUG", "MIGRATE-STAGING")


def fill_hash(r, key, n):
    p = r.pipeline(transaction=False)
    for i in range(0, n, 10000):
        p.hset(key, mapping={"f%d" % k: k for k in range(i, min(n, i + 10000))})
    p.execute()


@pytest.fixture
def pair():
    src, dst = launch(), launch()
    try:
        yield src, dst
    finally:
        src.stop()
        dst.stop()


def test_big_keys_move_in_chunks_with_their_ttl(pair):
    """A 200k-field hash, a big set, sorted set and list, a 20 MB string: every element arrives, with the TTL;
    the source's keys go and the target keeps no staging value."""
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    fill_hash(s, "h", HASH_FIELDS)
    s.sadd("st", *range(ELEMS))
    s.zadd("z", {"m%d" % i: i / 3 for i in range(ELEMS)})
    s.rpush("l", *range(ELEMS))
    s.set("str", b"ab" * (BIG_STRING // 2))
    s.set("small", "v")
    keys = ["h", "st", "z", "l", "str", "small"]
    for k in keys:
        assert s.pexpire(k, 600000)
    want = {k: digest(s, k) for k in keys}
    assert s.execute_command("MIGRATE", HOST, dst.port, "h", 0, 10000) == b"OK"
    assert s.execute_command("MIGRATE", HOST, dst.port, "", 0, 10000, "KEYS", "st", "z", "nosuch", "l", "str",
                             "small") == b"OK"
    assert s.dbsize() == 0
    assert {k: digest(d, k) for k in keys} == want
    assert d.hlen("h") == HASH_FIELDS and d.strlen("str") == BIG_STRING and d.zscore("z", "m3") == 1.0
    for k in keys:
        assert 500000 < d.pttl(k) <= 600000, k
    assert staging(d) == 0
    # COPY keeps the source's; BUSYKEY unless REPLACE (and the staging value does not stay)
    fill_hash(d, "h2", 5000)
    assert d.execute_command("MIGRATE", HOST, src.port, "h2", 0, 10000, "COPY") == b"OK"
    assert d.hlen("h2") == 5000 and s.hlen("h2") == 5000 and s.pttl("h2") == -1
    d.hset("h2", "extra", "1")
    with pytest.raises(redis.ResponseError) as e:
        d.execute_command("MIGRATE", HOST, src.port, "h2", 0, 10000)
    assert str(e.value) == "Target instance replied with error: BUSYKEY Target key name already exists."
    assert d.hlen("h2") == 5001 and s.hlen("h2") == 5000
    poll_until(lambda: staging(s) == 0, timeout=10, what="the refused staging value dropped")
    assert d.execute_command("MIGRATE", HOST, src.port, "h2", 0, 10000, "REPLACE") == b"OK"
    assert d.exists("h2") == 0 and s.hlen("h2") == 5001


def _start_migrate(port, *args):
    """MIGRATE on a connection of its own, in a thread: [reply or exception] once it ends."""
    out = []

    def run():
        try:
            out.append(client(port).execute_command("MIGRATE", *args))
        except Exception as e:     # noqa: BLE001 (the test reads what it got)
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_the_key_is_hidden_until_it_is_whole_and_the_source_serves_meanwhile(pair):
    """Held after its first chunk, the key is nowhere on the target (KEYS, SCAN, DBSIZE, EXISTS, RANDOMKEY,
    TYPE); then, the target asleep (DEBUG SLEEP), the source still answers PING well under a second while
    MIGRATE waits; a write to the key meanwhile is not lost (its value is sent again)."""
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    fill_hash(s, "big", 50000)
    s.pexpire("big", 600000)
    assert s.execute_command("DEBUG", "MIGRATE-HOLD", 1) == b"OK"
    t, out = _start_migrate(src.port, HOST, dst.port, "big", 0, 20000)
    poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
    assert d.keys("*") == [] and d.dbsize() == 0 and d.exists("big") == 0 and d.randomkey() is None
    assert d.scan(0, count=1000) == (0, []) and d.type("big") == b"none"
    assert t.is_alive() and s.ping() and s.hlen("big") == 50000
    s.hset("big", "written", "meanwhile")
    slept = []

    def sleeper():
        t0 = time.monotonic()
        client(dst.port).execute_command("DEBUG", "SLEEP", 2)
        slept.append(time.monotonic() - t0)

    sl = threading.Thread(target=sleeper, daemon=True)
    sl.start()
    poll_until(lambda: asleep(dst.port), timeout=10, interval=0.01, what="the target asleep")
    assert s.execute_command("DEBUG", "MIGRATE-HOLD", 0) == b"OK"
    worst, pings = 0.0, 0
    while sl.is_alive():
        t0 = time.monotonic()
        assert s.ping()
        worst = max(worst, time.monotonic() - t0)
        pings += 1
        time.sleep(0.01)  # (a pace, not a synchronisation)
    assert slept and slept[0] >= 2
    assert pings > 0 and worst < 1.0, (pings, worst)
    t.join(TIMEOUT)
    assert out == [b"OK"], out
    assert d.hlen("big") == 50001 and d.hget("big", "written") == b"meanwhile" and d.pttl("big") > 500000
    assert s.exists("big") == 0 and staging(d) == 0


def test_a_key_rewritten_meanwhile_goes_as_it_is_now(pair):
    """The big hash is replaced by a small string while its chunks go: the string is what arrives."""
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    fill_hash(s, "k", 5000)
    s.execute_command("DEBUG", "MIGRATE-HOLD", 1)
    t, out = _start_migrate(src.port, HOST, dst.port, "k", 0, 10000)
    poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
    s.delete("k")
    s.set("k", "now a string")
    s.execute_command("DEBUG", "MIGRATE-HOLD", 0)
    t.join(TIMEOUT)
    assert out == [b"OK"], out
    assert d.get("k") == b"now a string" and s.exists("k") == 0
    poll_until(lambda: staging(d) == 0, timeout=10, what="the staging value gone")


def test_a_client_that_goes_leaves_the_key_here_and_no_staging_there(tmp_path):
    """The MIGRATE client disconnects mid-transfer: the source keeps its key and serves, the target drops the
    staging value, logged: its replica drops it too, and a restart of the target from its WAL has none."""
    src = launch()
    dst = launch(["--dir", str(tmp_path), "--durability", "always"])
    rep = launch(["--replicaof", "%s %d" % (HOST, dst.port)])
    try:
        s, d, r = client(src.port), client(dst.port), client(rep.port)
        poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
                   what="the replica linked")
        fill_hash(s, "big", 20000)
        s.execute_command("DEBUG", "MIGRATE-HOLD", 1)
        raw = socket.create_connection((HOST, src.port), timeout=TIMEOUT)
        raw.sendall(encode_command("MIGRATE", HOST, dst.port, "big", 0, 10000))
        poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
        poll_until(lambda: staging(r) == 1, timeout=10, what="the replica stages it too")
        assert r.exists("big") == 0 and r.dbsize() == 0
        raw.close()
        poll_until(lambda: staging(d) == 0, timeout=10, what="the target drops the staging value")
        poll_until(lambda: staging(r) == 0, timeout=10, what="the replica drops it too")
        s.execute_command("DEBUG", "MIGRATE-HOLD", 0)
        assert s.hlen("big") == 20000 and d.exists("big") == 0 and s.ping()
        dst.stop()
        dst = launch(["--dir", str(tmp_path), "--durability", "always"])
        d = client(dst.port)
        assert staging(d) == 0 and d.dbsize() == 0
        # and the key then moves, the replica ending with it
        rep.stop()
        rep = launch(["--replicaof", "%s %d" % (HOST, dst.port)])
        r = client(rep.port)
        # (linked first: a full sync while the key is staged would miss it, docs/cluster.md's known gap)
        poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
                   what="the new replica linked")
        assert s.execute_command("MIGRATE", HOST, dst.port, "big", 0, 10000) == b"OK"
        want = digest(d, "big")
        poll_until(lambda: r.exists("big") == 1 and digest(r, "big") == want, timeout=20,
                   what="the replica has the key")
        assert staging(r) == 0 and r.hlen("big") == 20000
    finally:
        rep.stop()
        dst.stop()
        src.stop()


def test_a_killed_source_leaves_no_key_and_no_staging_on_the_target(pair):
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    s.set("str", b"x" * (3 << 20))
    s.execute_command("DEBUG", "MIGRATE-HOLD", 1)
    t, out = _start_migrate(src.port, HOST, dst.port, "str", 0, 10000)
    poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
    src.proc.kill()
    poll_until(lambda: staging(d) == 0, timeout=10, what="the target drops the staging value")
    assert d.exists("str") == 0 and d.dbsize() == 0
    t.join(TIMEOUT)
    assert len(out) == 1 and isinstance(out[0], Exception)


def test_a_target_restarted_mid_transfer_shows_no_half_built_key(tmp_path):
    """The target dies (kill -9) with a staging value in its WAL: after the restart the key is not there and
    MIGRATE answered an IOERR; the source still has the key, which then moves."""
    src = launch()
    dst = launch(["--dir", str(tmp_path), "--durability", "always"])
    try:
        s, d = client(src.port), client(dst.port)
        fill_hash(s, "big", 20000)
        s.execute_command("DEBUG", "MIGRATE-HOLD", 1)
        t, out = _start_migrate(src.port, HOST, dst.port, "big", 0, 10000)
        poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
        dst.proc.kill()
        t.join(TIMEOUT)
        assert len(out) == 1 and str(out[0]).startswith("IOERR error or timeout"), out
        s.execute_command("DEBUG", "MIGRATE-HOLD", 0)
        dst.stop()
        dst = launch(["--dir", str(tmp_path), "--durability", "always"])
        d = client(dst.port)
        assert d.dbsize() == 0 and d.exists("big") == 0 and d.keys("*") == []
        assert s.hlen("big") == 20000
        assert s.execute_command("MIGRATE", HOST, dst.port, "big", 0, 10000, "REPLACE") == b"OK"
        assert d.hlen("big") == 20000 and s.exists("big") == 0
    finally:
        dst.stop()
        src.stop()


def test_a_checkpoint_and_a_full_sync_mid_transfer_keep_the_staging_value(tmp_path):
    """A checkpoint of the target (SAVE) and a full sync of a new replica of it, both while a big key is staged:
    each holds the staging value (its state record), so the COMMIT that comes after them finds it whole, on the
    replica and in the target's restart from that checkpoint (kill -9). Before, both lacked the key."""
    src = launch()
    dst = launch(["--dir", str(tmp_path), "--durability", "always"])
    rep = None
    try:
        s, d = client(src.port), client(dst.port)
        fill_hash(s, "big", 20000)
        s.execute_command("DEBUG", "MIGRATE-HOLD", 1)
        t, out = _start_migrate(src.port, HOST, dst.port, "big", 0, 10000)
        poll_until(lambda: staging(d) == 1, timeout=10, what="the first chunk staged")
        assert d.execute_command("SAVE") is True
        rep = launch(["--replicaof", "%s %d" % (HOST, dst.port)])
        r = client(rep.port)
        poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
                   what="the replica linked")
        assert staging(r) == 1 and r.dbsize() == 0
        s.execute_command("DEBUG", "MIGRATE-HOLD", 0)
        t.join(TIMEOUT)
        assert out == [b"OK"], out
        assert d.hlen("big") == 20000 and s.exists("big") == 0
        want = digest(d, "big")
        poll_until(lambda: r.exists("big") == 1, timeout=20, what="the replica has the key")
        assert digest(r, "big") == want and staging(r) == 0
        dst.proc.kill()
        dst.stop()
        dst = launch(["--dir", str(tmp_path), "--durability", "always"])
        d = client(dst.port)
        assert d.hlen("big") == 20000 and digest(d, "big") == want and staging(d) == 0
    finally:
        if rep is not None:
            rep.stop()
        dst.stop()
        src.stop()


def test_cluster_migrate_of_a_big_key_into_an_importing_slot():
    """SETSLOT IMPORTING / MIGRATING, then MIGRATE of a big hash (its chunks run on the importing slot
    without ASKING), then SETSLOT NODE: the target owns the slot and the key."""
    from test_cluster_migrate import Cluster
    cl = Cluster(hosts=True)
    try:
        tag = next("{b%d}" % k for k in range(100000) if cl.owner(key_slot(("{b%d}" % k).encode())) == 0)
        slot = key_slot(tag.encode())
        s, d = client(cl.ports[0]), client(cl.ports[1])
        key = tag + "hash"
        fill_hash(s, key, 30000)
        s.zadd(tag + "z", {"m%d" % i: i for i in range(5000)})
        want = digest(s, key)
        assert d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cl.ids[0]) == b"OK"
        assert s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cl.ids[1]) == b"OK"
        assert s.execute_command("MIGRATE", HOST, cl.ports[1], "", 0, 10000, "KEYS", key, tag + "z") == b"OK"
        assert s.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        for p in cl.ports[:2]:
            assert client(p).execute_command("CLUSTER", "SETSLOT", slot, "NODE", cl.ids[1]) == b"OK"
        poll_until(lambda: cl.owner(slot, cl.ports[1]) == 1, timeout=20, what="the target owns the slot")
        assert digest(d, key) == want and d.zcard(tag + "z") == 5000 and staging(d) == 0
    finally:
        cl.stop()


def test_redis_cli_reshard_moves_a_slot_holding_a_big_key():
    """redis-cli --cluster reshard of one slot (the source's first, which redis-cli takes first) holding a big
    hash and small keys: MIGRATE moves the hash in chunks, --cluster check is clean."""
    import subprocess
    from test_cluster_migrate import Cluster
    cl = Cluster(hosts=True)
    try:
        first = cl.slot_map().index(0)
        tag = next("{r%d}" % k for k in range(1000000) if key_slot(("{r%d}" % k).encode()) == first)
        s, d = client(cl.ports[0]), client(cl.ports[1])
        fill_hash(s, tag + "h", 30000)
        for i in range(20):
            s.set("%ss%d" % (tag, i), i)
        want = digest(s, tag + "h")
        r = subprocess.run(["redis-cli", "--cluster", "reshard", "%s:%d" % (HOST, cl.ports[0]), "--cluster-from",
                            cl.ids[0], "--cluster-to", cl.ids[1], "--cluster-slots", "1", "--cluster-yes"],
                           timeout=120, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout
        assert cl.slot_map()[first] == 1
        assert digest(d, tag + "h") == want and d.execute_command("CLUSTER", "COUNTKEYSINSLOT", first) == 21
        assert s.execute_command("CLUSTER", "COUNTKEYSINSLOT", first) == 0 and staging(d) == 0
        r = subprocess.run(["redis-cli", "--cluster", "check", "%s:%d" % (HOST, cl.ports[2])], timeout=60,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        assert r.returncode == 0 and "[WARNING]" not in r.stdout and "[ERR]" not in r.stdout, r.stdout
    finally:
        cl.stop()


def test_big_key_auth_errors_come_from_the_target():
    """AUTH / AUTH2 go first on the link, as on the blocking path; the target's refusal is the reply and the
    key stays on the source. (Without AUTH the target closes the link at the first chunk's big argument, as
    Redis 7 does to an unauthenticated client: IOERR.)"""
    src, dst = launch(), launch(["--requirepass", "pw"])
    try:
        s = client(src.port)
        d = client(dst.port, password="pw")
        fill_hash(s, "h", 5000)
        with pytest.raises(redis.ResponseError) as e:
            s.execute_command("MIGRATE", HOST, dst.port, "h", 0, 10000)
        assert str(e.value).startswith(("Target instance replied with error: ", "IOERR error or timeout")), e.value
        with pytest.raises(redis.ResponseError) as e:
            s.execute_command("MIGRATE", HOST, dst.port, "h", 0, 10000, "AUTH", "bad")
        assert str(e.value).startswith("Target instance replied with error: WRONGPASS")
        assert s.hlen("h") == 5000 and d.exists("h") == 0
        poll_until(lambda: staging(d) == 0, timeout=10, what="no staging value left")
        assert s.execute_command("MIGRATE", HOST, dst.port, "h", 0, 10000, "AUTH2", "default", "pw") == b"OK"
        assert d.hlen("h") == 5000 and s.exists("h") == 0
    finally:
        src.stop()
        dst.stop()


def test_commands_pipelined_after_an_asynchronous_migrate_wait_for_it(pair):
    """The client's input waits while its MIGRATE runs: a GET pipelined behind it runs after it, in order."""
    src, dst = pair
    s = client(src.port)
    fill_hash(s, "h", 5000)
    s.set("after", "x")
    raw = socket.create_connection((HOST, src.port), timeout=TIMEOUT)
    try:
        raw.sendall(encode_command("MIGRATE", HOST, dst.port, "h", 0, 10000) + encode_command("EXISTS", "h") +
                    encode_command("GET", "after"))
        got = b""
        deadline = time.monotonic() + TIMEOUT
        while got.count(b"\r\n") < 4 and time.monotonic() < deadline:
            got += raw.recv(4096)
        assert got == b"+OK\r\n:0\r\n$1\r\nx\r\n"
    finally:
        raw.close()
    assert client(dst.port).hlen("h") == 5000


def test_the_sources_deletion_of_a_big_key_is_logged(tmp_path):
    """The source's DEL of a big key it moved is in its WAL: after a restart the key is still gone (COPY's
    is still there)."""
    dst = launch()
    src = launch(["--dir", str(tmp_path), "--durability", "always"])
    try:
        s = client(src.port)
        fill_hash(s, "moved", 5000)
        fill_hash(s, "copied", 5000)
        assert s.execute_command("MIGRATE", HOST, dst.port, "moved", 0, 10000) == b"OK"
        assert s.execute_command("MIGRATE", HOST, dst.port, "copied", 0, 10000, "COPY") == b"OK"
        src.stop()
        src = launch(["--dir", str(tmp_path), "--durability", "always"])
        s = client(src.port)
        assert s.keys("*") == [b"copied"] and s.hlen("copied") == 5000
        assert sorted(client(dst.port).keys("*")) == [b"copied", b"moved"]
    finally:
        src.stop()
        dst.stop()
