"""Moving slots Redis's way (issue 18, docs/cluster.md "Moving slots"): CLUSTER SETSLOT MIGRATING / IMPORTING /
STABLE / NODE (consensus proposals in ruvio, answered once committed), CLUSTER NODES' [slot->-id] / [slot-<-id],
the ASK / ASKING / TRYAGAIN / MOVED routing rules while a slot is open, MIGRATE, and redis-cli --cluster reshard
under a concurrent writer. Every test runs against redis-server clusters too (RUVIO_TARGET=redis)."""

import os
import subprocess
import threading
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from conftest import HOST, IS_REDIS, TIMEOUT, RawConn, RespError, encode_command, free_ports, launch, poll_until

# redis-cli's reshard and rebalance drive the same SETSLOT/MIGRATE code the other tests here run; under the
# sanitizers CI has no time for their hundreds of slots (the release stage runs them).
RELEASE_ONLY = pytest.mark.skipif(os.environ.get("RUVIO_SANITIZED", "0").upper() in ("1", "ON", "TRUE"),
                                  reason="release builds only (CI's time)")


def client(port):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True)


class Cluster:
    """Three primaries without replicas: three redis-servers, or ruvio hosts (one process of three shards, or
    three processes of one shard each with hosts=True), made one cluster by redis-cli --cluster create."""

    def __init__(self, hosts=False, extra=()):
        self.servers = []
        common = ["--cluster-enabled", "yes", "--cluster-node-timeout", 2000] + list(extra)
        if IS_REDIS:
            for _ in range(3):
                self.servers.append(launch(common + ["--cluster-config-file", "nodes.conf"],
                                           port=free_ports(1, also_bus=True)))
            self.ports = [s.port for s in self.servers]
        elif hosts:
            for _ in range(3):
                self.servers.append(launch(["--shards", 1] + common, port=free_ports(1, also_bus=True)))
            self.ports = [s.port for s in self.servers]
        else:
            self.servers.append(launch(["--shards", 3] + common, port=free_ports(3, also_bus=True)))
            self.ports = list(self.servers[0].ports)
        r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, p) for p in self.ports],
                            "--cluster-yes"], timeout=90, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        self.ids = [client(p).execute_command("CLUSTER", "MYID") for p in self.ports]
        poll_until(lambda: all(self.info(p)["cluster_state"] == "ok" and self.info(p)["cluster_known_nodes"] == "3"
                               for p in self.ports), timeout=30, interval=0.1, what="cluster state ok everywhere")

    def info(self, port):
        text = client(port).execute_command("CLUSTER", "INFO")
        return dict(line.split(":", 1) for line in text.strip().split("\r\n") if ":" in line)

    def owner(self, slot, port=None):
        """Index of the node that owns slot, as the node at port (default: the first) sees it."""
        for lo, hi, *nodes in client(port or self.ports[0]).execute_command("CLUSTER", "SLOTS"):
            if lo <= slot <= hi:
                return self.ports.index(nodes[0][1])
        return None

    def slot_map(self, port=None):
        """The owner index of every slot, as the node at port sees it."""
        m = [None] * 16384
        for lo, hi, *nodes in client(port or self.ports[0]).execute_command("CLUSTER", "SLOTS"):
            m[lo:hi + 1] = [self.ports.index(nodes[0][1])] * (hi - lo + 1)
        return m

    def myline(self, i):
        for line in client(self.ports[i]).execute_command("CLUSTER", "NODES").strip().split("\n"):
            if "myself" in line.split()[2]:
                return line
        raise AssertionError("no myself line")

    def stop(self):
        for s in self.servers:
            s.stop()


@pytest.fixture
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.stop()


def tag_of(cl, src):
    """A hash tag whose slot node src owns."""
    for k in range(100000):
        tag = "{t%d}" % k
        if cl.owner(key_slot(tag.encode())) == src:
            return tag, key_slot(tag.encode())
    raise AssertionError("no tag")


def addr(cl, i):
    return "%s:%d" % (HOST, cl.ports[i])


def setslot(cl, i, *args):
    return client(cl.ports[i]).execute_command("CLUSTER", "SETSLOT", *args)


def test_setslot_states_errors_and_nodes_format(cluster):
    cl = cluster
    tag, slot = tag_of(cl, 0)
    a, b = cl.ids[0], cl.ids[1]
    ca = client(cl.ports[0])
    cb = client(cl.ports[1])

    def err(c, *args):
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("CLUSTER", "SETSLOT", *args)
        return str(e.value)

    assert err(cb, slot, "MIGRATING", a) == "I'm not the owner of hash slot %d" % slot
    assert err(ca, slot, "IMPORTING", b) == "I'm already the owner of hash slot %d" % slot
    assert err(ca, slot, "MIGRATING", "abc") == "I don't know about node abc"
    assert err(cb, slot, "IMPORTING", "abc") == "I don't know about node abc"
    assert err(ca, slot, "NODE", "abc") == "Unknown node abc"
    for bad in [(slot, "FOO"), (slot, "STABLE", "x"), (slot, "MIGRATING"), (slot, "NODE", a, "x")]:
        assert err(ca, *bad) == "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
    for bad in (16384, -1, "abc"):
        assert err(ca, bad, "STABLE") == "Invalid or out of range slot"
    # a key of the slot on its owner: the slot cannot be given away
    assert ca.set(tag + "k", "v")
    assert err(ca, slot, "NODE", b) == ("Can't assign hashslot %d to a different node while I still hold keys "
                                        "for this hash slot." % slot)
    # the states, in CLUSTER NODES of the node that received them
    assert setslot(cl, 1, slot, "IMPORTING", a) in ("OK", True)
    assert setslot(cl, 0, slot, "MIGRATING", b) in ("OK", True)
    assert cl.myline(0).endswith(" [%d->-%s]" % (slot, b)), cl.myline(0)
    assert cl.myline(1).endswith(" [%d-<-%s]" % (slot, a)), cl.myline(1)
    assert "[" not in cl.myline(2)
    assert setslot(cl, 0, slot, "MIGRATING", b) in ("OK", True)     # again: unchanged
    assert setslot(cl, 0, slot, "STABLE") in ("OK", True)
    assert setslot(cl, 1, slot, "STABLE") in ("OK", True)
    assert "[" not in cl.myline(0) and "[" not in cl.myline(1)
    assert cl.owner(slot) == 0 and ca.get(tag + "k") == "v"


def test_setslot_inside_multi(cluster):
    """redis-cli may send SETSLOT in a transaction: each reply in its place once committed."""
    cl = cluster
    tag, slot = tag_of(cl, 0)
    p = client(cl.ports[0]).pipeline(transaction=True)
    p.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cl.ids[1])
    p.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cl.ids[1])
    p.ping()
    out = p.execute(raise_on_error=False)
    assert out[0] in ("OK", True) and out[2] is True, out
    assert isinstance(out[1], redis.ResponseError) and str(out[1]) == "I'm already the owner of hash slot %d" % slot
    assert cl.myline(0).endswith(" [%d->-%s]" % (slot, cl.ids[1]))


def test_ask_asking_tryagain_moved(cluster):
    cl = cluster
    tag, slot = tag_of(cl, 0)
    a, b = cl.ids[0], cl.ids[1]
    ca = client(cl.ports[0])
    assert ca.set(tag + "k1", "v1") and ca.set(tag + "k2", "v2")
    assert ca.set(tag + "gone", "x", px=1)           # expired: missing, as for Redis's lookup
    early = RawConn(HOST, cl.ports[0])                # a transaction queued before the slot opens
    assert early.cmd("MULTI") == "OK" and early.cmd("SET", tag + "late", "x") == "QUEUED"
    assert early.cmd("GET", tag + "k1") == "QUEUED"
    assert setslot(cl, 1, slot, "IMPORTING", a) in ("OK", True)
    assert setslot(cl, 0, slot, "MIGRATING", b) in ("OK", True)
    ask = "ASK %d %s" % (slot, addr(cl, 1))
    moved = "MOVED %d %s" % (slot, addr(cl, 0))
    tryagain = "TRYAGAIN Multiple keys request during rehashing of slot"
    time.sleep(0.01)
    # EXEC routes the transaction again, as one request: some keys missing, TRYAGAIN; it is discarded
    assert early.cmd("EXEC") == RespError(tryagain)
    assert early.cmd("EXEC") == RespError("ERR EXEC without MULTI")
    early.close()
    with RawConn(HOST, cl.ports[0]) as src, RawConn(HOST, cl.ports[1]) as dst:
        # the source: keys present run, all missing ASK, some missing TRYAGAIN
        assert src.cmd("GET", tag + "k1") == b"v1"
        assert src.cmd("MGET", tag + "k1", tag + "k2") == [b"v1", b"v2"]
        assert src.cmd("SET", tag + "k1", "v1b") == "OK"
        assert src.cmd("GET", tag + "nokey") == RespError(ask)
        assert src.cmd("SET", tag + "new", "x") == RespError(ask)
        assert src.cmd("GET", tag + "gone") == RespError(ask)
        assert src.cmd("MGET", tag + "n1", tag + "n2") == RespError(ask)
        assert src.cmd("MGET", tag + "k1", tag + "n2") == RespError(tryagain)
        assert src.cmd("DEL", tag + "k2", tag + "n2") == RespError(tryagain)
        # the target: MOVED without ASKING; after ASKING one command runs
        assert dst.cmd("GET", tag + "k1") == RespError(moved)
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("SET", tag + "new", "n") == "OK"
        assert dst.cmd("GET", tag + "new") == RespError(moved)    # one-shot
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("GET", tag + "new") == b"n"
        # RESTORE-ASKING (a cluster node's MIGRATE) runs on the importing target without ASKING
        payload = src.cmd("DUMP", tag + "k1")
        assert dst.cmd("RESTORE", tag + "r1", 0, payload) == RespError(moved)
        assert dst.cmd("RESTORE-ASKING", tag + "r1", 0, payload) == "OK"
        assert dst.cmd("ASKING") == "OK" and dst.cmd("GET", tag + "r1") == b"v1b"
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("MGET", tag + "new", tag + "other") == RespError(tryagain)
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("MGET", tag + "new", tag + "new") == [b"n", b"n"]
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("PING") == "PONG"                            # a command without keys uses it up too
        assert dst.cmd("GET", tag + "new") == RespError(moved)
        # ASKING before MULTI covers the transaction's commands
        assert dst.cmd("ASKING") == "OK"
        assert dst.cmd("MULTI") == "OK"
        assert dst.cmd("APPEND", tag + "new", "2") == "QUEUED"
        assert dst.cmd("GET", tag + "new") == "QUEUED"
        assert dst.cmd("EXEC") == [2, b"n2"]
        assert dst.cmd("GET", tag + "new") == RespError(moved)
        # the source runs the key the target does not have; other slots are not affected
        assert src.cmd("GET", tag + "k1") == b"v1b"
        other = next("x%d" % k for k in range(10000) if cl.owner(key_slot(b"x%d" % k)) == 0)
        assert src.cmd("GET", other) is None
        # a node not involved answers MOVED to the owner
        assert RawConn(HOST, cl.ports[2]).cmd("GET", tag + "nokey") == RespError(moved)
        # READONLY does not change a primary's answers
        assert dst.cmd("READONLY") == "OK"
        assert dst.cmd("GET", tag + "k1") == RespError(moved)
    # a transaction queued on the source while it still had the key
    late = RawConn(HOST, cl.ports[0])
    assert late.cmd("MULTI") == "OK" and late.cmd("SET", tag + "k1", "zz") == "QUEUED"
    # finishing by hand: the source's keys moved (deleted there, set on the target after ASKING), then NODE
    ca.delete(tag + "k1", tag + "k2")
    assert setslot(cl, 1, slot, "NODE", b) in ("OK", True)
    assert setslot(cl, 0, slot, "NODE", b) in ("OK", True)
    poll_until(lambda: cl.owner(slot, cl.ports[0]) == 1 and cl.owner(slot, cl.ports[2]) == 1, timeout=10,
               what="the slot owned by the target everywhere")
    assert "[" not in cl.myline(0) and "[" not in cl.myline(1)
    assert client(cl.ports[1]).get(tag + "new") == "n2"
    # its EXEC is redirected to the new owner, not run on the old one
    assert late.cmd("EXEC") == RespError("MOVED %d %s" % (slot, addr(cl, 1)))
    assert sum(1 for k in ca.scan_iter() if key_slot(k.encode()) == slot) == 0
    assert late.cmd("EXEC") == RespError("ERR EXEC without MULTI")
    late.close()

    assert RawConn(HOST, cl.ports[0]).cmd("GET", tag + "new") == RespError("MOVED %d %s" % (slot, addr(cl, 1)))


# ---------------------------------------------------------------------------------------------------- MIGRATE

@pytest.fixture
def pair():
    """A source and a target server (two of the same kind: the payload is each implementation's own)."""
    src = launch()
    dst = launch(["--requirepass", "pw"])
    try:
        yield src, dst
    finally:
        src.stop()
        dst.stop()


def test_migrate_moves_keys_with_ttl_and_options(pair):
    src, dst = pair
    s = client(src.port)
    d = redis.Redis(host=HOST, port=dst.port, password="pw", socket_timeout=TIMEOUT, decode_responses=True)
    mig = lambda *a: s.execute_command("MIGRATE", HOST, dst.port, *a)  # noqa: E731
    # authentication errors come from the target (first: Redis caches an authenticated connection)
    s.set("k", "v")
    with pytest.raises(redis.ResponseError) as e:
        mig("k", 0, 2000)
    assert str(e.value) == "Target instance replied with error: NOAUTH Authentication required."
    with pytest.raises(redis.ResponseError) as e:
        mig("k", 0, 2000, "AUTH", "bad")
    assert str(e.value).startswith("Target instance replied with error: WRONGPASS")
    assert s.get("k") == "v" and d.exists("k") == 0
    assert s.set("str", "v", px=100000) and s.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert s.rpush("l", "x", "y", "z") == 3 and s.zadd("z", {"m": 1.5}) == 1
    assert mig("str", 0, 2000, "AUTH", "pw") in ("OK", True)
    assert s.exists("str") == 0 and d.get("str") == "v" and 90000 < d.pttl("str") <= 100000
    # KEYS, a missing key among them; COPY keeps the source's
    assert mig("", 0, 2000, "COPY", "AUTH2", "default", "pw", "KEYS", "h", "nosuch", "l") in ("OK", True)
    assert s.exists("h", "l") == 2 and d.hgetall("h") == {"a": "1", "b": "2"} and d.lrange("l", 0, -1) == list("xyz")
    assert d.pttl("h") == -1
    # the target has them: BUSYKEY unless REPLACE; the source keeps the keys the target refused
    s.hset("h", "c", "3")
    with pytest.raises(redis.ResponseError) as e:
        mig("h", 0, 2000, "AUTH", "pw")
    assert str(e.value) == "Target instance replied with error: BUSYKEY Target key name already exists."
    assert s.exists("h") == 1
    assert mig("", 0, 2000, "REPLACE", "AUTH", "pw", "KEYS", "h", "l", "z") in ("OK", True)
    assert s.exists("h", "l", "z") == 0 and d.hlen("h") == 3 and d.zscore("z", "m") == 1.5
    assert mig("nosuch", 0, 2000, "AUTH", "pw") == "NOKEY"
    assert mig("", 0, 2000, "KEYS", "a", "b") == "NOKEY"


def test_migrate_argument_and_io_errors(pair):
    src, dst = pair
    s = client(src.port)
    s.set("k", "v")

    def err(*a):
        with pytest.raises(redis.ResponseError) as e:
            s.execute_command("MIGRATE", *a)
        return str(e.value)

    assert err(HOST, dst.port, "k", 0, 100, "KEYS", "a") == \
        "When using MIGRATE KEYS option, the key argument must be set to the empty string"
    assert err(HOST, dst.port, "k", 0, 100, "FOO") == "syntax error"
    assert err(HOST, dst.port, "k", 0, "x") == "value is not an integer or out of range"
    assert err(HOST, dst.port, "k", "x", 100) == "value is not an integer or out of range"
    # nothing listens: the failure shows at the first write, as in Redis
    assert err(HOST, _closed_port(), "k", 0, 300) == \
        "IOERR error or timeout writing to target instance"
    # a target that never answers: bounded by the timeout
    import socket
    lsn = socket.socket()
    lsn.bind((HOST, 0))
    lsn.listen(4)
    try:
        t0 = time.monotonic()
        assert err(HOST, lsn.getsockname()[1], "k", 0, 300) == "IOERR error or timeout reading to target instance"
        assert time.monotonic() - t0 < 5
    finally:
        lsn.close()
    assert s.get("k") == "v" and s.ping()


def _closed_port():
    import socket
    so = socket.socket()
    so.bind((HOST, 0))
    port = so.getsockname()[1]
    so.close()
    return port


@pytest.mark.ruvio_only
def test_migrate_deletion_is_logged(tmp_path):
    """The source's deletions are logged like DEL: after a restart from its WAL the keys are still gone."""
    dst = launch()
    src = launch(["--dir", str(tmp_path), "--durability", "always"])
    try:
        s = client(src.port)
        for i in range(5):
            s.set("k%d" % i, i)
        assert s.execute_command("MIGRATE", HOST, dst.port, "", 0, 2000, "KEYS", "k1", "k2") in ("OK", True)
        assert s.execute_command("MIGRATE", HOST, dst.port, "k3", 0, 2000, "COPY") in ("OK", True)
        src.stop()
        src = launch(["--dir", str(tmp_path), "--durability", "always"])
        s = client(src.port)
        assert sorted(s.keys()) == ["k0", "k3", "k4"]
        assert sorted(client(dst.port).keys()) == ["k1", "k2", "k3"]
    finally:
        src.stop()
        dst.stop()


# ---------------------------------------------------------------------------------------------------- reshard

def _cli(*args, timeout=120, input=None):
    r = subprocess.run(["redis-cli", *args], timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, input=input, stdin=None if input is not None else subprocess.DEVNULL)
    return r.returncode, r.stdout


@RELEASE_ONLY
def test_redis_cli_reshard_under_a_writer():
    """redis-cli --cluster reshard moves 100 slots (SETSLOT, GETKEYSINSLOT, MIGRATE, SETSLOT NODE) of a cluster
    holding keys while a cluster client writes (following MOVED and ASK); every acknowledged write is there
    afterwards, --cluster check is clean, and the keys of the moved slots are on the target only."""
    cl = Cluster(hosts=True)
    try:
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[0])], decode_responses=True,
                          socket_timeout=TIMEOUT)
        for i in range(3000):
            assert rc.set("pre%d" % i, i)
        acked = {}
        counted = [0, 0]        # [acknowledged INCRs, attempted INCRs]
        stop = threading.Event()
        failures = []

        def writer():
            w = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[1])], decode_responses=True,
                             socket_timeout=TIMEOUT)
            i = 0
            while not stop.is_set():
                k = "w%d" % i
                try:
                    if w.set(k, i):
                        acked[k] = str(i)
                except Exception as e:     # noqa: BLE001 (a refused write is not acknowledged)
                    failures.append((k, repr(e)))
                try:
                    counted[1] += 1
                    w.incr("{ctr}%d" % (i % 7))
                    counted[0] += 1
                except Exception as e:     # noqa: BLE001
                    failures.append((None, repr(e)))
                i += 1
            w.close()

        before = cl.slot_map()
        th = threading.Thread(target=writer)
        th.start()
        try:
            code, out = _cli("--cluster", "reshard", "%s:%d" % (HOST, cl.ports[0]), "--cluster-from", cl.ids[0],
                             "--cluster-to", cl.ids[1], "--cluster-slots", "100", "--cluster-yes")
            assert code == 0, out
            time.sleep(0.3)             # (the writer keeps going across the end of the move)
        finally:
            stop.set()
            th.join(timeout=60)
        assert not th.is_alive()
        assert len(acked) > 50, (len(acked), failures[:5])
        code, out = _cli("--cluster", "check", "%s:%d" % (HOST, cl.ports[2]))
        assert code == 0 and "[OK] All nodes agree about slots configuration." in out, out
        assert "[OK] All 16384 slots covered." in out and "[WARNING]" not in out and "[ERR]" not in out, out
        m = cl.slot_map()
        assert m == cl.slot_map(cl.ports[1]) == cl.slot_map(cl.ports[2])
        assert m.count(1) == before.count(1) + 100 and m.count(0) == before.count(0) - 100
        assert fetch(cl, acked) == acked                  # every acknowledged write, with its value
        pre = {"pre%d" % i: str(i) for i in range(3000)}
        assert fetch(cl, pre) == pre
        total = sum(int(rc.get("{ctr}%d" % j) or 0) for j in range(7))
        assert counted[0] <= total <= counted[1]
        # no key left behind: each node holds keys of its own slots only, and no key twice
        for i, p in enumerate(cl.ports):
            for k in client(p).scan_iter(count=1000):
                assert m[key_slot(k.encode())] == i, (k, i)
        lost_replies = sum(1 for v in fetch(cl, {k: None for k, _ in failures if k}).values() if v is not None)
        ctrs = sum(1 for j in range(7) if rc.get("{ctr}%d" % j) is not None)
        assert sum(client(p).dbsize() for p in cl.ports) == 3000 + len(acked) + lost_replies + ctrs
        rc.close()
    finally:
        cl.stop()


def fetch(cl, keys):
    """{key: value} read from each key's owner, in pipelines (no redirect: the owners are settled)."""
    by = {}
    m = cl.slot_map()
    for k in keys:
        by.setdefault(cl.ports[m[key_slot(k.encode())]], []).append(k)
    out = {}
    for p, ks in by.items():
        pipe = client(p).pipeline(transaction=False)
        for k in ks:
            pipe.get(k)
        out.update(zip(ks, pipe.execute()))
    return out


@RELEASE_ONLY
def test_redis_cli_rebalance_by_weight(cluster):
    """redis-cli --cluster rebalance with a weight moves slots (and their keys) to the heavier node."""
    cl = cluster
    rc = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[0])], decode_responses=True, socket_timeout=TIMEOUT)
    data = {"k%d" % i: str(i) for i in range(2000)}
    for k, v in data.items():
        assert rc.set(k, v)
    before = cl.slot_map()
    code, out = _cli("--cluster", "rebalance", "%s:%d" % (HOST, cl.ports[0]), "--cluster-weight",
                     "%s=1.2" % cl.ids[0], "--cluster-yes", timeout=300)
    assert code == 0 and "Moving" in out, out
    m = cl.slot_map()
    assert m.count(0) > before.count(0) + 500 and sum(m.count(i) for i in range(3)) == 16384
    assert fetch(cl, data) == data
    assert sum(client(p).dbsize() for p in cl.ports) == len(data)
    code, out = _cli("--cluster", "check", "%s:%d" % (HOST, cl.ports[1]))
    assert code == 0 and "[WARNING]" not in out and "[OK] All 16384 slots covered." in out, out
    rc.close()


def test_blocked_client_is_redirected_when_its_slot_moves(cluster):
    """A client blocked on a key of a slot that moves away gets MOVED to the new owner (Redis: clientsCron)."""
    cl = cluster
    tag, slot = tag_of(cl, 0)
    with RawConn(HOST, cl.ports[0]) as blocked:
        blocked.send(encode_command("BLPOP", tag + "q", 0))
        poll_until(lambda: client(cl.ports[0]).info("clients")["blocked_clients"] == 1, timeout=10,
                   what="the client blocked")
        assert setslot(cl, 1, slot, "IMPORTING", cl.ids[0]) in ("OK", True)
        assert setslot(cl, 0, slot, "MIGRATING", cl.ids[1]) in ("OK", True)
        assert setslot(cl, 1, slot, "NODE", cl.ids[1]) in ("OK", True)
        assert setslot(cl, 0, slot, "NODE", cl.ids[1]) in ("OK", True)
        assert blocked.read_reply() == RespError("MOVED %d %s" % (slot, addr(cl, 1)))
        assert blocked.cmd("PING") == "PONG"


@RELEASE_ONLY
def test_redis_cli_fix_closes_a_half_moved_slot(cluster):
    """A reshard stopped half way (the source MIGRATING, the target IMPORTING, some keys already moved):
    redis-cli --cluster check reports the open slot, --cluster fix finishes the move (the rest of the keys
    go to the target, which is given the slot), and check is clean afterwards with every key in place."""
    cl = cluster
    tag, slot = tag_of(cl, 0)
    ca = client(cl.ports[0])
    data = {"%sk%d" % (tag, i): str(i) for i in range(40)}
    for k, v in data.items():
        assert ca.set(k, v)
    assert setslot(cl, 1, slot, "IMPORTING", cl.ids[0]) in ("OK", True)
    assert setslot(cl, 0, slot, "MIGRATING", cl.ids[1]) in ("OK", True)
    moved = sorted(data)[:15]
    assert ca.execute_command("MIGRATE", HOST, cl.ports[1], "", 0, 5000, "KEYS", *moved) in ("OK", True)
    code, out = _cli("--cluster", "check", addr(cl, 2))
    assert "[WARNING]" in out and "open slot" in out.lower() and str(slot) in out, out
    code, out = _cli("--cluster", "fix", addr(cl, 2), "--cluster-yes", timeout=120)
    assert code == 0, out
    code, out = _cli("--cluster", "check", addr(cl, 2))
    assert code == 0 and "[WARNING]" not in out and "[ERR]" not in out, out
    assert "[OK] All 16384 slots covered." in out, out
    owner = cl.owner(slot)
    assert owner == cl.owner(slot, cl.ports[1]) == cl.owner(slot, cl.ports[2]) in (0, 1)
    assert "[" not in cl.myline(0) and "[" not in cl.myline(1)
    assert fetch(cl, data) == data
    assert client(cl.ports[1 - owner]).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert client(cl.ports[owner]).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == len(data)


@RELEASE_ONLY
def test_redis_cli_fix_assigns_an_uncovered_slot(cluster):
    """A slot that no node serves (CLUSTER DELSLOTS on its owner): check reports it, fix gives it to a node
    (redis-cli's "Fixing slots coverage"), and the cluster serves the slot again."""
    cl = cluster
    tag, slot = tag_of(cl, 2)
    assert client(cl.ports[2]).execute_command("CLUSTER", "DELSLOTS", slot) in ("OK", True)
    for p in cl.ports[:2]:       # Redis: each node forgets it itself; ruvio: one commit did it everywhere
        try:
            client(p).execute_command("CLUSTER", "DELSLOTS", slot)
        except redis.ResponseError as e:
            assert str(e) == "Slot %d is already unassigned" % slot, e
    poll_until(lambda: all(cl.owner(slot, p) is None for p in cl.ports), timeout=20, interval=0.1,
               what="slot %d unassigned everywhere" % slot)
    code, out = _cli("--cluster", "check", addr(cl, 0))
    assert "[ERR] Not all 16384 slots are covered by nodes." in out, out
    code, out = _cli("--cluster", "fix", addr(cl, 0), "--cluster-yes", timeout=120, input="yes\n")
    assert code == 0 and "Fixing slots coverage" in out, out
    poll_until(lambda: all(cl.owner(slot, p) is not None for p in cl.ports), timeout=20, interval=0.1,
               what="slot %d assigned everywhere" % slot)
    owner = cl.owner(slot)
    assert cl.slot_map() == cl.slot_map(cl.ports[1]) == cl.slot_map(cl.ports[2])
    rc = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[0])], decode_responses=True, socket_timeout=TIMEOUT)
    assert rc.set(tag + "x", "1") and rc.get(tag + "x") == "1"
    assert client(cl.ports[owner]).get(tag + "x") == "1"
    rc.close()
    code, out = _cli("--cluster", "check", addr(cl, 1))
    assert code == 0 and "[OK] All 16384 slots covered." in out and "[ERR]" not in out, out


def test_slot_given_away_with_keys_left_drops_them(cluster):
    """SETSLOT NODE sent to the target (not the source, which refuses while it holds keys) gives a slot away
    with keys still on the source: as in Redis, the source deletes them once it learns it lost the slot
    (they are unreachable there: MOVED), and COUNTKEYSINSLOT / DBSIZE stop counting them."""
    cl = cluster
    tag, slot = tag_of(cl, 0)
    other_tag = next(t for t in ("{o%d}" % k for k in range(100000))
                     if key_slot(t.encode()) != slot and cl.owner(key_slot(t.encode())) == 0)
    ca = client(cl.ports[0])
    for i in range(25):
        assert ca.set("%sk%d" % (tag, i), i)
    assert ca.set(other_tag + "stay", "1")
    keep = ca.dbsize()
    assert ca.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 25
    assert setslot(cl, 1, slot, "IMPORTING", cl.ids[0]) in ("OK", True)
    assert setslot(cl, 0, slot, "MIGRATING", cl.ids[1]) in ("OK", True)
    assert setslot(cl, 1, slot, "NODE", cl.ids[1]) in ("OK", True)
    poll_until(lambda: cl.owner(slot, cl.ports[0]) == 1, timeout=20, interval=0.1,
               what="the source learning that slot %d moved" % slot)
    poll_until(lambda: ca.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0, timeout=20, interval=0.1,
               what="the source dropping the keys of slot %d" % slot)
    assert ca.dbsize() == keep - 25
    assert ca.get(other_tag + "stay") == "1"
    assert client(cl.ports[1]).execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    with pytest.raises(redis.ResponseError, match="MOVED %d" % slot):
        ca.get("%sk0" % tag)


@RELEASE_ONLY
def test_add_a_host_then_drain_and_remove_it():
    """docs/cluster.md's runbook, steps as written, under a cluster client's writes: add a host (add-node), give
    it slots (reshard), then drain it (rebalance with its weight 0) and remove it (del-node). Every acknowledged
    write is there afterwards, the drained node holds no key, and the three that stay agree on every slot."""
    cl = Cluster(hosts=True)
    extra = None
    try:
        common = ["--cluster-enabled", "yes", "--cluster-node-timeout", 2000]
        if IS_REDIS:
            # (Redis turns a primary that gave away its last slot into a replica, mid-rebalance; Ruvio does not)
            extra = launch(common + ["--cluster-config-file", "nodes.conf", "--cluster-allow-replica-migration",
                                     "no"], port=free_ports(1, also_bus=True))
        else:
            extra = launch(["--shards", 1] + common, port=free_ports(1, also_bus=True))
        code, out = _cli("--cluster", "add-node", "%s:%d" % (HOST, extra.port), addr(cl, 1))
        assert code == 0 and "[OK] New node added correctly." in out, out
        new_id = client(extra.port).execute_command("CLUSTER", "MYID")
        poll_until(lambda: all(cl.info(p)["cluster_known_nodes"] == "4" for p in cl.ports + [extra.port]),
                   timeout=30, interval=0.1, what="4 nodes known everywhere")

        def agreed():   # redis-cli refuses to move slots until then (Redis: gossip; Ruvio: at once)
            return "[OK] All nodes agree about slots configuration." in _cli("--cluster", "check", addr(cl, 0))[1]
        poll_until(agreed, timeout=30, interval=0.2, what="every node agreeing about the slots")
        code, out = _cli("--cluster", "reshard", addr(cl, 0), "--cluster-from", cl.ids[0], "--cluster-to", new_id,
                         "--cluster-slots", "60", "--cluster-yes")
        assert code == 0, out
        poll_until(lambda: all(cl.info(p)["cluster_state"] == "ok" for p in cl.ports + [extra.port]),
                   timeout=30, interval=0.1, what="cluster state ok everywhere (Redis: gossip)")
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[0])], decode_responses=True,
                          socket_timeout=TIMEOUT)
        for i in range(1500):
            assert rc.set("pre%d" % i, i)
        assert client(extra.port).dbsize() > 0
        acked, failures, stop = {}, [], threading.Event()

        def writer():
            w = RedisCluster(startup_nodes=[ClusterNode(HOST, cl.ports[2])], decode_responses=True,
                             socket_timeout=TIMEOUT)
            i = 0
            while not stop.is_set():
                try:
                    if w.set("w%d" % i, i):
                        acked["w%d" % i] = str(i)
                except Exception as e:     # noqa: BLE001 (a refused write is not acknowledged)
                    failures.append(repr(e))
                i += 1
            w.close()

        poll_until(agreed, timeout=30, interval=0.2, what="every node agreeing about the slots")
        th = threading.Thread(target=writer)
        th.start()
        try:
            code, out = _cli("--cluster", "rebalance", addr(cl, 0), "--cluster-weight", "%s=0" % new_id,
                             "--cluster-yes", timeout=300)
            assert code == 0 and "Moving" in out, out
        finally:
            stop.set()
            th.join(timeout=60)
        assert not th.is_alive() and len(acked) > 20, (len(acked), failures[:5])
        assert client(extra.port).dbsize() == 0
        m = cl.slot_map()               # (an owner other than the three would raise here)
        assert None not in m and m == cl.slot_map(cl.ports[1]) == cl.slot_map(cl.ports[2])
        code, out = _cli("--cluster", "del-node", addr(cl, 0), new_id)
        assert code == 0, out
        poll_until(lambda: all(cl.info(p)["cluster_known_nodes"] == "3" for p in cl.ports), timeout=30,
                   interval=0.1, what="3 nodes known by those that stay")
        extra.stop()
        code, out = _cli("--cluster", "check", addr(cl, 1))
        assert code == 0 and "[OK] All 16384 slots covered." in out, out
        assert "[WARNING]" not in out and "[ERR]" not in out, out
        pre = {"pre%d" % i: str(i) for i in range(1500)}
        assert fetch(cl, pre) == pre
        assert fetch(cl, acked) == acked
        rc.close()
    finally:
        if extra is not None:
            extra.stop()
        cl.stop()
