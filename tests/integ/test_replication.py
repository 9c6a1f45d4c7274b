"""Replication (issue 5, docs/replication.md): real primary and replica processes on loopback.

Link breaks are made with a small TCP proxy between the replica and the primary (cut = close every proxied
connection; block = refuse new ones), so partial resyncs can be observed without restarting anything."""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
import redis

from conftest import HOST, free_port, poll_until, resp_error
from ruviotest import repl, procs
from ruviotest.wait import wait_durable

pytestmark = [pytest.mark.ruvio_only, pytest.mark.own_server]


def info(c, section="replication"):
    return c.info(section)


def wait_link_up(replica, timeout=10):
    c = replica.client()
    try:
        repl.wait_link_up(c, timeout=timeout)
    finally:
        c.close()


def linked_pair(start_server):
    """A primary and a replica with its link up: (primary, replica, primary client, replica client)."""
    primary = start_server()
    replica = start_server()
    p, r = primary.client(), replica.client()
    assert r.replicaof(HOST, primary.port) == "OK"
    wait_link_up(replica)
    return primary, replica, p, r


def wait_offset(primary, replica, timeout=10, password=None):
    """Until the replica applied everything the primary produced so far."""
    p, r = primary.client(password=password), replica.client()
    try:
        repl.wait_offset(p, r, timeout=timeout)
    finally:
        p.close()
        r.close()


def stats(c):
    s = c.info("stats")
    return s["sync_full"], s["sync_partial_ok"], s["sync_partial_err"]


class Proxy:
    """Forwards 127.0.0.1:<port> to a target port (one proxy per shard port, consecutive)."""

    def __init__(self, target_base, nports=1):
        self.target_base = target_base
        self.nports = nports
        self.blocked = False
        self.conns = []
        self.lock = threading.Lock()
        self.stopping = False
        self.listeners = []
        for _ in range(50):
            base = free_port()
            try:
                ls = []
                for i in range(nports):
                    s = socket.socket()
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((HOST, base + i))
                    s.listen(16)
                    s.settimeout(0.2)
                    ls.append(s)
                self.listeners = ls
                self.port = base
                break
            except OSError:
                for s in ls:
                    s.close()
        self.threads = [threading.Thread(target=self._accept, args=(i,), daemon=True) for i in range(nports)]
        for t in self.threads:
            t.start()

    def _accept(self, i):
        ls = self.listeners[i]
        while not self.stopping:
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if self.blocked:
                c.close()
                continue
            try:
                u = socket.create_connection((HOST, self.target_base + i), timeout=2)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self):
        self.stopping = True
        self.cut()
        for s in self.listeners:
            s.close()


@pytest.fixture
def proxies():
    made = []

    def make(target, nports=1):
        p = Proxy(target, nports)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def test_full_sync_then_stream_and_readonly(start_server):
    primary = start_server()
    replica = start_server()
    p, r = primary.client(), replica.client()
    for i in range(500):
        p.set("k%d" % i, "v%d" % i)
    p.rpush("list", "a", "b", "c")
    p.hset("h", mapping={"f1": "1", "f2": "2"})
    p.zadd("z", {"m1": 1.5, "m2": 2.5})
    p.sadd("s", "x", "y")
    p.set("ttl", "v", ex=1000)
    assert r.replicaof(HOST, primary.port) == "OK"
    wait_link_up(replica)
    wait_offset(primary, replica)
    assert r.dbsize() == p.dbsize()
    assert r.get("k499") == "v499"
    assert r.lrange("list", 0, -1) == ["a", "b", "c"]
    assert r.hgetall("h") == {"f1": "1", "f2": "2"}
    assert r.zrange("z", 0, -1, withscores=True) == [("m1", 1.5), ("m2", 2.5)]
    assert r.smembers("s") == {"x", "y"}
    assert 990 <= r.ttl("ttl") <= 1000
    # live stream, including rewritten effects (INCRBYFLOAT, SPOP, relative TTLs)
    p.set("live", "1")
    p.incrbyfloat("f", 1.5)
    p.lpush("list", "z")
    p.delete("k0")
    p.expire("k1", 500)
    popped = p.spop("s")
    wait_offset(primary, replica)
    assert r.get("live") == "1"
    assert r.get("f") == "1.5"
    assert r.lrange("list", 0, -1) == ["z", "a", "b", "c"]
    assert r.exists("k0") == 0
    assert 490 <= r.ttl("k1") <= 500
    assert r.smembers("s") == {"x", "y"} - {popped}
    # read-only, with Redis's error text (checked on the wire)
    with replica.raw() as raw:
        assert raw.cmd("SET", "a", "b") == "READONLY You can't write against a read only replica."
        assert raw.cmd("MULTI") == "OK"
        assert raw.cmd("DEL", "k2") == "READONLY You can't write against a read only replica."
    ri, pi = info(r), info(p)
    assert ri["role"] == "slave" and ri["master_port"] == primary.port and ri["master_sync_in_progress"] == 0
    assert ri["master_replid"] == pi["master_replid"] and len(pi["master_replid"]) == 40
    assert pi["connected_slaves"] == 1 and pi["repl_backlog_active"] == 1
    assert pi["slave0"]["port"] == replica.port and pi["slave0"]["state"] == "online"
    assert pi["slave0"]["ip"] == HOST
    # the primary learns the replica's offset from its acks: one per cron tick (as Redis's once a second)
    poll_until(lambda: info(p)["slave0"]["offset"] == pi["master_repl_offset"], timeout=3,
               what="the primary's view of the replica's offset")
    assert p.role()[0] == "master" and r.role()[:4] == ["slave", HOST, primary.port, "connected"]
    assert r.replicaof(HOST, primary.port) == "OK Already connected to specified master"
    assert stats(p) == (1, 0, 0)


def test_wait_counts_replicas(start_server):
    primary = start_server()
    p = primary.client()
    p.set("a", "1")
    t0 = time.monotonic()
    assert p.wait(1, 200) == 0               # no replica: times out with 0
    assert time.monotonic() - t0 >= 0.15
    assert p.wait(0, 0) == 0
    reps = [start_server(), start_server()]
    for rep in reps:
        rep.client().replicaof(HOST, primary.port)
    for rep in reps:
        wait_link_up(rep)
    p.set("b", "2")
    assert p.wait(2, 5000) == 2
    assert p.wait(1, 5000) >= 1
    assert "WAIT cannot be used with replica instances" in resp_error(reps[0].client().wait, 1, 10)
    # WAITAOF on a memory primary: Redis's error for numlocal
    assert "appendonly is disabled" in resp_error(p.execute_command, "WAITAOF", 1, 0, 10)
    assert p.execute_command("WAITAOF", 0, 0, 10) == [0, 0]


def test_wait_asks_for_an_ack_instead_of_waiting_for_the_tick(start_server):
    """Replicas ack once per cron tick (100 ms at hz 10); a waiting WAIT asks
    for an ack at once. 40 write+WAIT round trips would take about 2 s if each
    WAIT waited for the tick."""
    primary = start_server()
    replica = start_server()
    p = primary.client()
    replica.client().replicaof(HOST, primary.port)
    wait_link_up(replica)
    t0 = time.monotonic()
    for i in range(40):
        p.set("w%d" % i, "v")
        assert p.wait(1, 5000) == 1
    took = time.monotonic() - t0
    assert took < 1.0, "40 SET+WAIT took %.2f s" % took
    # without a WAIT the primary still learns the offset within a tick or so
    p.set("x", "y")
    off = info(p)["master_repl_offset"]
    poll_until(lambda: info(p)["slave0"]["offset"] == off, timeout=3, what="slave0 offset from a tick ack")


def test_waitaof_counts_durable_replicas(start_server, tmp_path):
    """WAITAOF numreplicas counts only replicas whose own WAL made the write
    durable: an everysec replica answers within about a second, a memory one never."""
    primary = start_server()
    durable = start_server("--dir", str(tmp_path / "d"), "--durability", "everysec")
    volatile = start_server()
    p = primary.client()
    for rep in (durable, volatile):
        rep.client().replicaof(HOST, primary.port)
        wait_link_up(rep)
    for i in range(3):
        p.set("a%d" % i, "1")
        t0 = time.monotonic()
        assert p.execute_command("WAITAOF", 0, 1, 5000) == [0, 1]
        assert time.monotonic() - t0 < 2.5
    t0 = time.monotonic()
    assert p.execute_command("WAITAOF", 0, 2, 300) == [0, 1]      # the memory replica never counts
    assert time.monotonic() - t0 >= 0.25


def test_expired_keys_hidden_until_primary_deletes(start_server):
    primary, replica, p, r = linked_pair(start_server)
    p.set("gone", "v", px=400)
    p.set("stay", "v")
    wait_offset(primary, replica)
    procs.pause(primary.proc.pid)     # no DEL can come while it is stopped
    try:
        time.sleep(0.6)
        assert r.get("gone") is None              # hidden: its deadline passed
        assert r.exists("gone") == 0
        assert r.dbsize() == 2                    # but not deleted by the replica's clock
    finally:
        os.kill(primary.proc.pid, signal.SIGCONT)
    # the primary expires it (lazily here) and the DEL arrives
    assert p.get("gone") is None
    poll_until(lambda: r.dbsize() == 1, timeout=5, what="DEL from the primary")


def test_partial_resync_after_link_break(start_server, proxies):
    primary = start_server()
    proxy = proxies(primary.port)
    replica = start_server()
    p, r = primary.client(), replica.client()
    p.set("before", "1")
    r.replicaof(HOST, proxy.port)
    wait_link_up(replica)
    wait_offset(primary, replica)
    assert stats(p) == (1, 0, 0)
    proxy.blocked = True
    proxy.cut()
    poll_until(lambda: info(r)["master_link_status"] == "down", timeout=5, what="link down")
    for i in range(100):
        p.set("during%d" % i, i)
    assert r.get("during99") is None
    proxy.blocked = False
    wait_link_up(replica)
    wait_offset(primary, replica)
    assert r.get("during99") == "99"
    assert stats(p) == (1, 1, 0)
    assert info(r)["slave_repl_offset"] == info(p)["master_repl_offset"]


def test_past_the_backlog_full_sync(start_server, proxies):
    primary = start_server("--repl-backlog-size", "16kb")
    proxy = proxies(primary.port)
    replica = start_server()
    p, r = primary.client(), replica.client()
    r.replicaof(HOST, proxy.port)
    wait_link_up(replica)
    proxy.blocked = True
    proxy.cut()
    poll_until(lambda: info(r)["master_link_status"] == "down", timeout=5, what="link down")
    for i in range(2000):                       # ~100 KB of records: far past 16 KB
        p.set("k%d" % i, "x" * 20)
    pi = info(p)
    assert pi["repl_backlog_first_byte_offset"] > 1
    assert pi["repl_backlog_histlen"] < 2000
    proxy.blocked = False
    wait_link_up(replica)
    wait_offset(primary, replica)
    assert r.dbsize() == 2000
    full, ok, err = stats(p)
    assert (full, ok, err) == (2, 0, 1)


def test_promotion_keeps_data_and_replid2(start_server):
    primary = start_server()
    replica = start_server()
    other = start_server()
    p, r, o = primary.client(), replica.client(), other.client()
    r.replicaof(HOST, primary.port)
    o.replicaof(HOST, primary.port)
    wait_link_up(replica)
    wait_link_up(other)
    for i in range(50):
        p.set("k%d" % i, i)
    wait_offset(primary, replica)
    wait_offset(primary, other)
    old = info(p)
    primary.stop()
    assert r.replicaof("no", "one") == "OK"
    ri = info(r)
    assert ri["role"] == "master"
    assert ri["master_replid2"] == old["master_replid"]
    assert ri["second_repl_offset"] == old["master_repl_offset"] + 1
    assert ri["master_replid"] != old["master_replid"]
    assert ri["repl_epoch"] == old["repl_epoch"] + 1
    assert r.get("k49") == "49"
    r.set("new", "1")                           # accepts writes
    # the other replica, re-pointed, continues with a partial resync (PSYNC2-like)
    o.replicaof(HOST, replica.port)
    wait_link_up(other)
    wait_offset(replica, other)
    assert o.get("new") == "1" and o.get("k0") == "0"
    assert stats(r) == (0, 1, 0)
    assert info(o)["master_replid"] == ri["master_replid"]
    assert r.replicaof("no", "one") == "OK"     # already a primary: nothing changes
    assert info(r)["master_replid"] == ri["master_replid"]


def test_multi_shard_replicates_shard_by_shard(start_server):
    primary = start_server("--shards", "2")
    replica = start_server("--shards", "2")
    keys = ["key:%d" % i for i in range(200)]
    pc = redis.RedisCluster(host=HOST, port=primary.port, decode_responses=True, socket_timeout=10)
    for k in keys:
        pc.set(k, k)
    replica.client().replicaof(HOST, primary.port)       # every shard follows primary port + i
    for i, port in enumerate(replica.ports):
        c = replica.client(port=port)
        poll_until(lambda: info(c).get("master_link_status") == "up", timeout=10, what="shard link up")
        assert info(c)["master_port"] == primary.port + i        # the port shard i follows
        assert c.role()[:3] == ["slave", HOST, primary.port + i]
    for i, port in enumerate(primary.ports):
        pcl, rcl = primary.client(port=port), replica.client(port=replica.ports[i])
        target = info(pcl)["master_repl_offset"]
        poll_until(lambda: info(rcl)["slave_repl_offset"] >= target, timeout=10, what="shard caught up")
        assert pcl.dbsize() == rcl.dbsize() > 0
    rc = redis.RedisCluster(host=HOST, port=replica.port, decode_responses=True, socket_timeout=10,
                            read_from_replicas=False)
    assert all(rc.get(k) == k for k in keys[:50])
    pc.close()
    rc.close()


def test_shard_count_mismatch_is_refused(start_server):
    primary = start_server("--shards", "2")
    replica = start_server()
    r = replica.client()
    r.replicaof(HOST, primary.port)
    poll_until(lambda: "shard count mismatch" in replica.stderr() + replica.stdout(), timeout=5,
               what="mismatch logged")
    assert info(r)["master_link_status"] == "down"


def test_replicaof_in_config_and_auth(start_server):
    primary = start_server("--requirepass", "sekret")
    p = primary.client(password="sekret")
    p.set("a", "1")
    replica = start_server("--replicaof", "%s %d" % (HOST, primary.port), "--masterauth", "sekret")
    wait_link_up(replica)
    wait_offset(primary, replica, password="sekret")
    assert replica.client().get("a") == "1"
    bad = start_server("--replicaof", "%s %d" % (HOST, primary.port), "--masterauth", "wrong")
    poll_until(lambda: "replication link to %s:%d" % (HOST, primary.port) in bad.stderr() + bad.stdout(),
               timeout=5, what="the refused AUTH logged")
    assert info(bad.client())["master_link_status"] == "down"


def test_min_replicas_to_write(start_server):
    primary = start_server("--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
    p = primary.client()
    poll_until(lambda: info(p).get("min_slaves_good_slaves") == 0, timeout=3, what="guard on")
    with primary.raw() as raw:
        assert raw.cmd("SET", "a", "1") == "NOREPLICAS Not enough good replicas to write."
    replica = start_server()
    replica.client().replicaof(HOST, primary.port)
    wait_link_up(replica)
    poll_until(lambda: info(p).get("min_slaves_good_slaves") == 1, timeout=5, what="one good replica")
    assert p.set("a", "1") is True


@pytest.mark.parametrize("how", ["term", "kill9"])
def test_durable_replica_restarts_and_resumes(start_server, tmp_path, how):
    primary = start_server()
    p = primary.client()
    for i in range(300):
        p.set("k%d" % i, i)
    rdir = str(tmp_path / "replica")
    args = ("--dir", rdir, "--durability", "everysec", "--replicaof", "%s %d" % (HOST, primary.port))
    replica = start_server(*args)
    wait_link_up(replica)
    for i in range(300, 400):
        p.set("k%d" % i, i)
    wait_offset(primary, replica)
    if how == "kill9":
        wait_durable(replica.client())           # everysec: let one sync cover the stream
        replica.proc.kill()
        replica.proc.wait(5)
    else:
        replica.stop()
    for i in range(400, 450):
        p.set("k%d" % i, i)
    assert stats(p) == (1, 0, 0)
    again = start_server(*args, port=replica.port)
    wait_link_up(again)
    wait_offset(primary, again)
    r = again.client()
    assert r.dbsize() == 450 and r.get("k449") == "449" and r.get("k0") == "0"
    assert stats(p) == (1, 1, 0)                  # partial: the records after its own WAL
    assert info(r)["master_replid"] == info(p)["master_replid"]


def _contents(c):
    out = {}
    cur = 0
    while True:
        cur, keys = c.scan(cur, count=2000)
        if keys:
            pipe = c.pipeline(transaction=False)
            for k in keys:
                pipe.dump(k)
            for k, v in zip(keys, pipe.execute()):
                out[k] = v
        if cur == 0:
            return out


def test_full_sync_under_writes_is_consistent(start_server):
    """The full sync walks the keyspace while the primary serves writes (copy-on-write at the sync LSN)."""
    primary = start_server()
    p = primary.client()
    n = 60000
    pipe = p.pipeline(transaction=False)
    for i in range(n):
        pipe.set("k%d" % i, 1000000000 + i)
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    for i in range(200):
        p.rpush("list%d" % i, *range(20))
    stop = threading.Event()
    done = []

    def writer():
        w = primary.client()
        i = 0
        while not stop.is_set():
            w.incr("k%d" % (i * 7919 % n))
            w.rpush("list%d" % (i % 200), i)
            w.delete("k%d" % ((i * 104729) % n))
            w.set("new%d" % i, i)
            i += 1
        done.append(i)
        w.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    replica = start_server()
    r = replica.client()
    r.replicaof(HOST, primary.port)
    wait_link_up(replica, timeout=30)
    time.sleep(0.3)
    stop.set()
    t.join(10)
    assert done and done[0] > 0
    wait_offset(primary, replica, timeout=30)
    pc, rc = primary.client(decode_responses=False), replica.client(decode_responses=False)
    a, b = _contents(pc), _contents(rc)
    assert len(a) == len(b)
    assert a == b


def test_writable_replica_keeps_local_writes_out_of_the_stream(start_server):
    primary, replica, p, r = linked_pair(start_server)
    r.config_set("replica-read-only", "no")
    assert r.set("local", "x") is True
    before = info(r)["slave_repl_offset"]
    p.set("a", "1")
    wait_offset(primary, replica)
    assert info(r)["slave_repl_offset"] == before + 1      # the local write took no LSN
    assert r.get("a") == "1" and r.get("local") == "x"
    assert info(r)["master_link_status"] == "up"


def test_old_primary_back_as_replica_drops_its_divergent_tail(start_server, proxies):
    old = start_server()
    proxy = proxies(old.port)
    new = start_server()
    o, n = old.client(), new.client()
    for i in range(20):
        o.set("k%d" % i, i)
    n.replicaof(HOST, proxy.port)
    wait_link_up(new)
    wait_offset(old, new)
    proxy.blocked = True                        # a partition: the old primary goes on alone
    proxy.cut()
    poll_until(lambda: info(n)["master_link_status"] == "down", timeout=5, what="link down")
    for i in range(5):
        o.set("lost%d" % i, i)                  # never reached the new primary
    n.replicaof("no", "one")
    n.set("after", "1")
    o.replicaof(HOST, new.port)                 # the old primary comes back as a replica
    wait_link_up(old)
    wait_offset(new, old)
    assert o.get("after") == "1" and o.get("k19") == "19"
    assert all(o.get("lost%d" % i) is None for i in range(5))
    assert info(o)["master_replid"] == info(n)["master_replid"]
    assert stats(n) == (1, 0, 1)
    poll_until(lambda: "records past the fork point" in new.stderr() + new.stdout(), timeout=5,
               what="divergent tail logged")


def test_stale_primary_is_fenced_by_a_newer_epoch(start_server, proxies):
    old = start_server()
    proxy = proxies(old.port)
    new, other = start_server(), start_server()
    o, n, x = old.client(), new.client(), other.client()
    o.set("a", "1")
    n.replicaof(HOST, proxy.port)
    x.replicaof(HOST, old.port)
    wait_link_up(new)
    wait_link_up(other)
    proxy.blocked = True
    proxy.cut()
    n.replicaof("no", "one")                    # epoch 1
    x.replicaof(HOST, new.port)                 # learns epoch 1
    wait_link_up(other)
    assert info(x)["repl_epoch"] == 1
    assert o.set("b", "2") is True              # the old primary does not know yet
    x.replicaof(HOST, old.port)                 # pointed back at the stale primary by mistake
    poll_until(lambda: "stale primary" in other.stderr() + other.stdout(), timeout=5, what="refused")
    assert info(x)["master_link_status"] == "down"
    with old.raw() as raw:
        poll_until(lambda: str(raw.cmd("SET", "c", "3")).startswith("READONLY This node was fenced"),
                   timeout=5, what="old primary fenced")
    assert o.get("a") == "1"                    # reads still served
    o.replicaof(HOST, new.port)                 # brought back: follows the new primary, unfenced
    wait_link_up(old)
    assert info(o)["repl_epoch"] == 1


def test_failover_switch_over_under_load_loses_no_acknowledged_write(start_server):
    primary, replica, p, r = linked_pair(start_server)
    acked, errors = [], []
    stop = threading.Event()

    def writer():
        w = primary.client()
        i = 0
        while not stop.is_set():
            try:
                w.set("w%d" % i, i)
                acked.append(i)
            except redis.exceptions.ReadOnlyError as e:
                errors.append("READONLY " + str(e))
                break
            except redis.exceptions.ResponseError as e:
                errors.append(str(e))
            i += 1
        w.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    poll_until(lambda: len(acked) > 200, timeout=10, what="writes flowing")
    assert p.execute_command("FAILOVER", "TO", HOST, replica.port, "TIMEOUT", 5000) == "OK"
    poll_until(lambda: info(r)["role"] == "master", timeout=10, what="replica promoted")
    t.join(10)
    stop.set()
    assert errors == ["READONLY You can't write against a read only replica."]
    assert info(p)["role"] == "slave" and info(p)["master_port"] == replica.port
    missing = [i for i in acked if r.get("w%d" % i) is None]
    assert missing == []
    assert r.set("after", "1") is True
    wait_link_up(primary)
    wait_offset(replica, primary)
    assert p.get("after") == "1"
    assert stats(r) == (0, 1, 0)                  # the old primary continued with a partial resync
    assert info(r)["master_failover_state"] == "no-failover"


def test_failover_errors_and_abort(start_server, proxies):
    primary = start_server()
    p = primary.client()
    assert resp_error(p.execute_command, "FAILOVER") == "FAILOVER requires connected replicas."
    assert resp_error(p.execute_command, "FAILOVER", "ABORT") == "FAILOVER is not in progress."
    assert "force option requires" in resp_error(p.execute_command, "FAILOVER", "TO", HOST, 1, "FORCE")
    assert resp_error(p.execute_command, "FAILOVER", "TIMEOUT", 0) == "FAILOVER timeout must be greater than 0"
    proxy = proxies(primary.port)
    replica = start_server()
    r = replica.client()
    r.replicaof(HOST, proxy.port)
    wait_link_up(replica)
    assert resp_error(p.execute_command, "FAILOVER", "TO", HOST, 1) == \
        "FAILOVER target HOST and PORT is not a replica."
    assert resp_error(r.execute_command, "FAILOVER") == "FAILOVER is not valid when server is a replica."
    # a target that cannot catch up: the timeout aborts, paused writes then run
    procs.pause(replica.proc.pid)
    try:
        p.set("x", "1")
        assert p.execute_command("FAILOVER", "TIMEOUT", 300) == "OK"
        assert info(p)["master_failover_state"] == "waiting-for-sync"
        t0 = time.monotonic()
        assert p.set("y", "2") is True            # paused, then executed after the abort
        assert time.monotonic() - t0 >= 0.2
        assert info(p)["master_failover_state"] == "no-failover" and info(p)["role"] == "master"
        assert p.execute_command("FAILOVER", "TIMEOUT", 5000) == "OK"
        assert p.execute_command("FAILOVER", "ABORT") == "OK"
        assert info(p)["master_failover_state"] == "no-failover"
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)


@pytest.mark.parametrize("limit", [None, "replica 64kb 0 0"])
def test_durable_primary_serves_old_positions_from_its_wal(start_server, proxies, limit):
    # with a tiny replica output limit: the records read back from the WAL (8 MB, past what the socket
    # takes at once) count like a snapshot, not against the limit, or the link would close on every try
    extra = ("--client-output-buffer-limit", limit) if limit else ()
    primary = start_server("--durability", "everysec", "--repl-backlog-size", "16kb", *extra)
    proxy = proxies(primary.port)
    replica = start_server()
    p, r = primary.client(), replica.client()
    r.replicaof(HOST, proxy.port)
    wait_link_up(replica)
    proxy.blocked = True
    proxy.cut()
    poll_until(lambda: info(r)["master_link_status"] == "down", timeout=5, what="link down")
    n, size = (2000, 20) if limit is None else (20000, 400)
    pipe = p.pipeline(transaction=False)
    for i in range(n):                          # far past the 16 KB ring, all in the WAL
        pipe.set("k%d" % i, "x" * size)
    pipe.execute()
    assert info(p)["repl_backlog_first_byte_offset"] > 1
    proxy.blocked = False
    wait_link_up(replica)
    wait_offset(primary, replica, timeout=30)
    assert r.dbsize() == n
    assert stats(p) == (1, 1, 0)
    assert p.info("stats")["client_output_buffer_limit_disconnections"] == 0


def test_durable_primary_restart_keeps_replid_and_continues(start_server, tmp_path):
    pdir = str(tmp_path / "primary")
    primary = start_server("--dir", pdir, "--durability", "everysec")
    p = primary.client()
    for i in range(100):
        p.set("k%d" % i, i)
    replica = start_server("--replicaof", "%s %d" % (HOST, primary.port))
    wait_link_up(replica)
    wait_offset(primary, replica)
    replid = info(p)["master_replid"]
    primary.stop()
    again = start_server("--dir", pdir, "--durability", "everysec", port=primary.port)
    a = again.client()
    assert info(a)["master_replid"] == replid
    a.set("after", "1")
    wait_link_up(replica)
    wait_offset(again, replica)
    assert replica.client().get("after") == "1"
    assert stats(a) == (0, 1, 0)                 # no full sync after the primary's restart


def test_chained_replica(start_server):
    a = start_server()
    b = start_server()
    c = start_server()
    ac, bc, cc = a.client(), b.client(), c.client()
    ac.set("x", "1")
    bc.replicaof(HOST, a.port)
    wait_link_up(b)
    cc.replicaof(HOST, b.port)                  # a replica of a replica
    wait_link_up(c)
    for i in range(100):
        ac.set("k%d" % i, i)
    wait_offset(a, b)
    wait_offset(a, c)
    assert cc.get("x") == "1" and cc.get("k99") == "99"
    assert info(cc)["master_replid"] == info(ac)["master_replid"]


def _frame(payload):
    return len(payload).to_bytes(4, "little") + payload


def test_malformed_replication_input_never_hurts_the_server(start_server):
    primary = start_server()
    p = primary.client()
    p.set("a", "1")
    bad_inputs = [
        b"\xff\xff\xff\xff",                     # a frame longer than anything a replica sends
        _frame(b"\x0a\x05\xff\xff\xff\xff\xff"),  # truncated protobuf
        _frame(b"\x0a\x02\x18\x07"),              # Hello for 7 shards: refused
        _frame(b"\x42\x04\x08\xff\xff\x03"),      # an Ack before any Hello
        _frame(b""),                              # an empty message
        b"\x00\x00\x00",                          # then the connection ends mid-header
    ]
    for data in bad_inputs:
        s = socket.create_connection((HOST, primary.port), timeout=5)
        s.sendall(b"*1\r\n$6\r\nRVSYNC\r\n")
        s.settimeout(5)
        got = b""
        while b"+OK\r\n" not in got:
            chunk = s.recv(4096)
            assert chunk
            got += chunk
        s.sendall(data)
        time.sleep(0.05)
        s.close()
    assert p.get("a") == "1"
    assert info(p)["connected_slaves"] == 0 or poll_until(lambda: info(p)["connected_slaves"] == 0,
                                                          timeout=5, what="links dropped")


def test_replica_survives_a_primary_that_sends_garbage(start_server):
    ls = socket.socket()
    ls.bind((HOST, 0))
    ls.listen(4)
    port = ls.getsockname()[1]
    stop = threading.Event()
    served = []

    def fake_primary():
        ls.settimeout(0.2)
        n = 0
        while not stop.is_set():
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            c.settimeout(2)
            try:
                c.recv(65536)
                payloads = [b"+OK\r\n+OK\r\n" + _frame(b"\x12\x04\x20\x01\x18\x00" + b"\xff" * 10),
                            b"+OK\r\n+OK\r\n" + b"\x10\x00\x00\x00" + b"\x00" * 16,
                            b"-ERR nope\r\n",
                            b"+OK\r\n+OK\r\n" + _frame(b"\x3a\x06\x08\x05\x10\x01\x1a\x00")]
                c.sendall(payloads[n % len(payloads)])
                n += 1
                served.append(n)
                time.sleep(0.1)
            except OSError:
                pass
            c.close()

    t = threading.Thread(target=fake_primary, daemon=True)
    t.start()
    try:
        replica = start_server()
        r = replica.client()
        r.replicaof(HOST, port)
        poll_until(lambda: len(served) >= 4, timeout=10, what="several attempts, each with bad input")
        assert r.ping() is True
        assert info(r)["master_link_status"] == "down"
        assert r.replicaof("no", "one") == "OK"
        assert r.set("ok", "1") is True
    finally:
        stop.set()
        t.join(5)
        ls.close()


def test_failover_on_a_multi_shard_node(start_server):
    primary = start_server("--shards", "2")
    replica = start_server("--shards", "2")
    pc = redis.RedisCluster(host=HOST, port=primary.port, decode_responses=True, socket_timeout=10)
    keys = ["key:%d" % i for i in range(100)]
    for k in keys:
        pc.set(k, k)
    pc.close()
    replica.client().replicaof(HOST, primary.port)
    for port in replica.ports:
        c = replica.client(port=port)
        poll_until(lambda: info(c).get("master_link_status") == "up", timeout=10, what="shard link up")
    assert primary.client().execute_command("FAILOVER", "TO", HOST, replica.port, "TIMEOUT", 5000) == "OK"
    for i, port in enumerate(replica.ports):
        c = replica.client(port=port)
        poll_until(lambda: info(c)["role"] == "master", timeout=10, what="shard %d promoted" % i)
        o = primary.client(port=primary.ports[i])
        poll_until(lambda: info(o).get("master_link_status") == "up", timeout=10, what="old shard follows")
        assert info(o)["master_port"] == replica.port + i
    rc = redis.RedisCluster(host=HOST, port=replica.port, decode_responses=True, socket_timeout=10)
    assert all(rc.get(k) == k for k in keys)
    rc.set("after", "1")
    rc.close()


MASTERDOWN = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."


def test_replica_serve_stale_data_no_answers_masterdown(start_server, proxies):
    """replica-serve-stale-data no: while the link is not up (connecting, syncing, down after being up) only the
    commands Redis flags `stale` run; the others get Redis's -MASTERDOWN. `yes` serves the old data."""
    primary = start_server()
    proxy = proxies(primary.port)
    replica = start_server("--replica-serve-stale-data", "no")
    p, r = primary.client(), replica.client()
    p.set("k", "v")
    proxy.blocked = True                        # the link cannot come up
    with replica.raw() as raw:
        assert raw.cmd("GET", "k") is None      # not a replica yet: unaffected
        assert raw.cmd("REPLICAOF", HOST, proxy.port) == "OK"
        assert raw.cmd("GET", "k") == MASTERDOWN
        assert raw.cmd("DBSIZE") == MASTERDOWN
        assert raw.cmd("SET", "a", "b") == "READONLY You can't write against a read only replica."
        assert raw.cmd("PING") == "PONG"
        assert raw.cmd("ECHO", "x") == b"x"
        assert b"master_link_status:down" in raw.cmd("INFO", "replication")
        assert raw.cmd("ROLE")[0] == b"slave"
        assert raw.cmd("CONFIG", "GET", "replica-serve-stale-data") == [b"replica-serve-stale-data", b"no"]
        assert raw.cmd("MULTI") == "OK"
        assert raw.cmd("GET", "k") == MASTERDOWN
        assert raw.cmd("EXEC").startswith("EXECABORT")
    proxy.blocked = False
    wait_link_up(replica)
    wait_offset(primary, replica)
    assert r.get("k") == "v"
    queued = replica.raw()
    assert queued.cmd("MULTI") == "OK" and queued.cmd("GET", "k") == "QUEUED"
    # down after having been up
    proxy.blocked = True
    proxy.cut()
    poll_until(lambda: info(r)["master_link_status"] == "down", timeout=5, what="link down")
    # a transaction queued while the link was up is refused whole (Redis checks EXEC's queued commands)
    assert queued.cmd("EXEC") == "EXECABORT Transaction discarded because of: " + MASTERDOWN
    queued.close()
    with replica.raw() as raw:
        assert raw.cmd("GET", "k") == MASTERDOWN
        assert raw.cmd("CONFIG", "SET", "replica-serve-stale-data", "yes") == "OK"
        # yes (the default): the old data is served again (applied at the shard's next tick)
        poll_until(lambda: raw.cmd("GET", "k") == b"v", timeout=5, what="stale data served")
        assert raw.cmd("CONFIG", "SET", "replica-serve-stale-data", "no") == "OK"
        poll_until(lambda: raw.cmd("GET", "k") == MASTERDOWN, timeout=5, what="MASTERDOWN again")
        # a promoted node is no replica: everything runs at once
        assert raw.cmd("REPLICAOF", "NO", "ONE") == "OK"
        assert raw.cmd("GET", "k") == b"v"


def _burst(port, n):
    """n pipelined SETs of 64-byte values from 50 clients (redis-benchmark), or one redis-py pipeline."""
    bench = shutil.which("redis-benchmark")
    if bench:
        subprocess.run([bench, "-h", HOST, "-p", str(port), "-t", "set", "-n", str(n), "-P", "100", "-d", "64",
                        "-r", "100000", "-q"], check=True, timeout=120, stdout=subprocess.DEVNULL)
        return
    c = redis.Redis(host=HOST, port=port, socket_timeout=30)
    for b in range(0, n, 5000):
        pipe = c.pipeline(transaction=False)
        for i in range(b, min(n, b + 5000)):
            pipe.set("key:%d" % (i % 100000), "x" * 64)
        pipe.execute()
    c.close()


def test_connected_replica_survives_a_burst_larger_than_the_backlog(start_server):
    """A burst far bigger than repl-backlog-size does not drop a connected replica: what it has not been sent
    yet moves to its output buffer (Redis: bounded by client-output-buffer-limit replica), no resync."""
    primary, replica, p, r = linked_pair(start_server)
    assert p.config_set("repl-backlog-size", "16kb")
    time.sleep(0.5)                             # the ring adopts it at the shard's next cron tick
    before = stats(p)
    assert before == (1, 0, 0)
    _burst(primary.port, 200000)
    wait_offset(primary, replica, timeout=60)
    pi = info(p)
    assert pi["repl_backlog_first_byte_offset"] > 1000          # the ring did drop what the burst pushed out
    assert stats(p) == before, primary.stderr()[-2000:]          # no resync of any kind
    assert pi["connected_slaves"] == 1
    assert info(r)["slave_repl_offset"] == pi["master_repl_offset"]
    assert r.execute_command("DEBUG", "DIGEST") == p.execute_command("DEBUG", "DIGEST")
    assert r.dbsize() == p.dbsize() > 1000
    assert p.info("stats")["client_output_buffer_limit_disconnections"] == 0
    assert "fell out of the backlog" not in primary.stderr() + primary.stdout()


def test_replica_over_its_output_buffer_limit_is_dropped_and_resyncs(start_server):
    """client-output-buffer-limit replica <hard>: a stopped replica whose unsent output passes the hard limit is
    disconnected (logged and counted as Redis does); once it runs again it resyncs and catches up."""
    primary = start_server("--client-output-buffer-limit", "replica 64kb 0 0")
    replica = start_server()
    p, r = primary.client(), replica.client()
    p.set("first", "1")
    r.replicaof(HOST, primary.port)
    wait_link_up(replica)
    wait_offset(primary, replica)
    procs.pause(replica.proc.pid)
    try:
        deadline = time.monotonic() + 60
        big = "x" * 4000
        i = 0
        # more than the kernel's socket buffers can hold: the primary's own output buffer has to grow
        while info(p)["connected_slaves"] == 1:
            assert time.monotonic() < deadline, "the stopped replica was never disconnected"
            pipe = p.pipeline(transaction=False)
            for _ in range(500):
                pipe.set("big:%d" % (i % 3000), big)
                i += 1
            pipe.execute()
        assert p.info("stats")["client_output_buffer_limit_disconnections"] >= 1
        # closed once the kernel's buffers and then the 64 KB filled, not only when the 16 MB backlog wrapped
        assert i * len(big) < 16 << 20, "disconnected after %d bytes" % (i * len(big))
        poll_until(lambda: "scheduled to be closed ASAP for overcoming of output buffer limits"
                   in primary.stderr() + primary.stdout(), timeout=5, what="the log line")
        p.set("last", "1")
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    try:
        wait_offset(primary, replica, timeout=30)
    except AssertionError as e:
        raise AssertionError("%s\nprimary:\n%s\nreplica:\n%s" % (e, (primary.stderr() + primary.stdout())[-3000:],
                                                          (replica.stderr() + replica.stdout())[-3000:]))
    assert r.get("last") == "1"
    assert r.execute_command("DEBUG", "DIGEST") == p.execute_command("DEBUG", "DIGEST")
    # the resync's catch-up (megabytes from the backlog, or a snapshot) does not count against the 64 KB:
    # one disconnection in all
    assert p.info("stats")["client_output_buffer_limit_disconnections"] == 1, primary.stderr()[-3000:]


def test_replication_links_in_client_list_and_client_kill_type(start_server):
    """CLIENT LIST shows the links as Redis shows replica (flags=S) and master (flags=M) clients; CLIENT KILL TYPE
    replica / master (or ID) closes them and the replica continues with a partial resync."""
    primary = start_server()
    replica = start_server()
    p, r = primary.client(), replica.client()
    p.set("a", "1")
    r.replicaof(HOST, primary.port)
    wait_link_up(replica)
    wait_offset(primary, replica)
    reps = p.client_list(_type="replica")
    assert len(reps) == 1 and reps[0]["flags"] == "S" and reps[0]["cmd"] == "rvsync", reps
    assert [c for c in p.client_list() if c["flags"] == "S"] == reps            # in the plain list too
    assert all(c["flags"] != "S" for c in p.client_list(_type="normal"))
    assert p.client_list(_type="master") == []
    ms = r.client_list(_type="master")
    assert len(ms) == 1 and ms[0]["flags"] == "M" and ms[0]["addr"] == "%s:%d" % (HOST, primary.port), ms
    assert r.client_list(_type="replica") == []
    # CLIENT KILL TYPE replica on the primary
    assert p.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    assert info(p)["connected_slaves"] == 0
    p.set("b", "2")
    wait_link_up(replica)
    wait_offset(primary, replica)
    poll_until(lambda: info(p)["connected_slaves"] == 1, timeout=5, what="replica back")
    assert stats(p) == (1, 1, 0) and r.get("b") == "2"
    # CLIENT KILL ID with the link's id
    rid = p.client_list(_type="replica")[0]["id"]
    assert p.client_kill_filter(_id=rid) == 1
    poll_until(lambda: stats(p)[1] == 2, timeout=10, what="second partial resync")
    # CLIENT KILL TYPE master on the replica: it reconnects at once
    mid = r.client_list(_type="master")[0]["id"]
    assert r.client_kill_filter(_type="master") == 1
    p.set("c", "3")
    wait_offset(primary, replica)
    assert r.get("c") == "3" and stats(p) == (1, 3, 0)
    assert r.client_list(_type="master")[0]["id"] != mid     # a new connection
    assert r.execute_command("CLIENT", "KILL", "TYPE", "slave") == 0


def test_ship_delay_batches_under_load_but_not_after_quiet_or_for_wait(start_server):
    """repl-ship-delay-us: a write after a quiet spell ships at once; one right behind it waits for the delay
    (here 1 s, to be measurable on a loaded machine); a WAIT ships at once; CONFIG SET applies live (0 = every
    turn)."""
    primary = start_server("--repl-ship-delay-us", "1000000")
    replica = start_server()
    p, r = primary.client(), replica.client()
    assert p.config_get("repl-ship-delay-us") == {"repl-ship-delay-us": "1000000"}
    r.replicaof(HOST, primary.port)
    wait_link_up(replica)
    wait_offset(primary, replica)
    time.sleep(1.2)                                    # a quiet spell longer than the delay

    t0 = time.monotonic()
    p.set("quiet", "1")
    poll_until(lambda: r.get("quiet") == "1", timeout=5, interval=0.005, what="the write after a quiet spell")
    assert time.monotonic() - t0 < 0.6, "a write after a quiet spell waited for the delay"

    t1 = time.monotonic()
    p.set("behind", "1")                               # within 1 s of the last ship: batched
    time.sleep(0.1)
    assert r.get("behind") is None, "a write right behind another was shipped before the delay"
    poll_until(lambda: r.get("behind") == "1", timeout=5, interval=0.005, what="the batched write")
    waited = time.monotonic() - t1
    assert 0.1 < waited < 3.0, waited                  # the timer shipped it (about 1 s after the first)

    p.set("waited", "1")                               # again right behind a ship, but a WAIT asks for it
    t2 = time.monotonic()
    assert p.wait(1, 5000) == 1
    assert time.monotonic() - t2 < 0.6, "WAIT waited for the ship delay"
    assert r.get("waited") == "1"

    p.config_set("repl-ship-delay-us", "0")
    p.set("now1", "1")
    p.set("now2", "1")
    poll_until(lambda: r.get("now2") == "1", timeout=5, interval=0.005, what="a write with the delay off")
    assert r.execute_command("DEBUG", "DIGEST") == p.execute_command("DEBUG", "DIGEST")


def test_stream_of_alternating_command_names_applies_each(start_server):
    """A replica reuses the last command looked up when the next name has the same bytes: names of one
    length that differ in a single byte (first, middle or last) must never be taken for each other."""
    primary, replica, p, r = linked_pair(start_server)
    pipe = p.pipeline(transaction=False)
    for i in range(300):
        pipe.incr("n")
        pipe.decr("m")                      # 4 bytes: the first differs
        pipe.lpush("l", i)
        pipe.rpush("l", -i)                 # 5 bytes
        pipe.incrby("a", 2)
        pipe.decrby("b", 3)                 # 6 bytes
        pipe.hset("h", "f%d" % i, i)
        pipe.hdel("h", "f%d" % (i - 1))     # HSET/HDEL: the last two differ
        pipe.sadd("s", i)
        pipe.srem("s", i - 1)
        pipe.set("k%d" % i, i)
        pipe.delete("k%d" % (i - 2))        # SET/DEL: first and last differ
        pipe.append("ap", "x")
    pipe.execute()
    wait_offset(primary, replica)
    for k in ("n", "m", "a", "b", "ap", "k299", "k298", "k297"):
        assert r.get(k) == p.get(k), k
    assert r.lrange("l", 0, -1) == p.lrange("l", 0, -1)
    assert r.hgetall("h") == p.hgetall("h") == {"f299": "299"}
    assert r.smembers("s") == p.smembers("s") == {"299"}
    assert r.dbsize() == p.dbsize()


def test_replica_times_runs_of_replicated_commands(start_server):
    """A replica times each run of the same replicated command as a whole and charges it evenly: calls and
    total time stay exact per command, and a slow command between two runs keeps its own time."""
    primary, replica, p, r = linked_pair(start_server)
    pipe = p.pipeline(transaction=False)
    for i in range(0, 300000, 5000):
        pipe.sadd("big", *("member:%d" % j for j in range(i, i + 5000)))
    pipe.execute()
    wait_offset(primary, replica, timeout=30)
    assert r.scard("big") == 300000
    assert r.config_resetstat()
    pipe = p.pipeline(transaction=False)
    for i in range(200):
        pipe.set("a%d" % i, i)
    pipe.delete("big")                      # freeing 300k members: milliseconds, in one call
    for i in range(200):
        pipe.set("b%d" % i, i)
    pipe.execute()
    wait_offset(primary, replica)
    st = r.info("commandstats")
    assert st["cmdstat_set"]["calls"] == 400
    assert st["cmdstat_del"]["calls"] == 1
    assert st["cmdstat_del"]["usec"] >= 1000, st
    # per call: a run's window also holds whatever paused the replica meanwhile (a busy CI machine)
    assert st["cmdstat_set"]["usec_per_call"] * 50 < st["cmdstat_del"]["usec"], st
    hist = r.execute_command("LATENCY", "HISTOGRAM", "set", "del")
    hist = dict(zip(hist[::2], hist[1::2]))
    for name, calls in (("set", 400), ("del", 1)):
        h = dict(zip(hist[name][::2], hist[name][1::2]))
        assert h["calls"] == calls
        assert h["histogram_usec"][-1] == calls     # cumulative: every call in a bucket
    assert r.dbsize() == p.dbsize() == 400


def test_chained_replica_survives_a_burst_larger_than_its_primarys_backlog(start_server):
    """A replica's own replicas (chained) are kept like a primary's: when a read from upstream brings more than
    repl-backlog-size, what a sub-replica has not been sent moves to its output buffer before the backlog drops
    it; no resync, nothing dropped silently."""
    a = start_server()
    b = start_server("--repl-backlog-size", "16kb")
    c = start_server()
    ac, bc, cc = a.client(), b.client(), c.client()
    bc.replicaof(HOST, a.port)
    wait_link_up(b)
    cc.replicaof(HOST, b.port)
    wait_link_up(c)
    before = stats(bc)
    assert before == (1, 0, 0)
    _burst(a.port, 200000)
    wait_offset(a, b, timeout=60)
    wait_offset(a, c, timeout=60)
    assert info(bc)["repl_backlog_first_byte_offset"] > 1000      # b's ring did drop what the burst pushed out
    assert stats(bc) == before, b.stderr()[-2000:]                 # c was never resynced
    assert "fell out of the backlog" not in b.stderr() + b.stdout()
    assert cc.execute_command("DEBUG", "DIGEST") == ac.execute_command("DEBUG", "DIGEST")


@pytest.mark.parametrize("ttl", [3600, 0])
def test_checkpoint_keeps_the_wal_a_disconnected_replica_needs(start_server, proxies, ttl):
    """A checkpoint while a replica is away keeps the WAL segments holding the records it lacks (it was
    connected less than repl-backlog-ttl seconds ago, and its catch-up is small), so it comes back with a
    partial resync read back from the WAL. With repl-backlog-ttl 0 they are dropped and it full-syncs."""
    primary = start_server("--durability", "everysec", "--repl-backlog-size", "16kb",
                           "--repl-backlog-ttl", str(ttl))
    proxy = proxies(primary.port)
    replica = start_server()
    p, r = primary.client(), replica.client()
    p.set("first", "1")
    r.replicaof(HOST, proxy.port)
    wait_link_up(replica)
    wait_offset(primary, replica)
    proxy.blocked = True
    proxy.cut()
    poll_until(lambda: info(p)["connected_slaves"] == 0, timeout=5, what="the primary saw the link go")
    pipe = p.pipeline(transaction=False)
    for i in range(2000):                       # far past the 16 KB ring
        pipe.set("k%d" % i, "x" * 20)
    pipe.execute()
    assert p.save() is True                     # a checkpoint covering all of it
    proxy.blocked = False
    wait_link_up(replica)
    wait_offset(primary, replica, timeout=30)
    assert r.dbsize() == 2001
    assert stats(p) == ((1, 1, 0) if ttl else (2, 0, 1)), primary.stderr()[-2000:]
