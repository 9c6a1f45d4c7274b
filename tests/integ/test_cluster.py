"""Cluster mode.

Against ruvio: one process started with `--shards 3`; ports base, base+1, base+2 are each a shard (a cluster
node).  Against Redis (RUVIO_TARGET=redis) the same tests run on a real 3-master Redis cluster on three consecutive
ports, built with `redis-cli --cluster create`, so every expectation here is checked against Redis's cluster code.
"""

import os
import shutil
import subprocess
import tempfile

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from conftest import (ADDR, HOST, IS_REDIS, REDIS_BIN, TIMEOUT, Server, _spawn, _wait_ready, free_ports,
                      launch, poll_until)

NSHARDS = 3


def _cluster_info(port):
    c = redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True)
    try:
        text = c.execute_command("CLUSTER", "INFO")
    finally:
        c.close()
    if isinstance(text, dict):
        return {k: str(v) for k, v in text.items()}
    return dict(line.split(":", 1) for line in text.strip().split("\r\n") if ":" in line)


def _start_redis_cluster():
    base = free_ports(NSHARDS, also_bus=True)
    workdir = tempfile.mkdtemp(prefix="ruvio-integ-cluster-")
    procs = []
    for i in range(NSHARDS):
        port = base + i
        d = os.path.join(workdir, "n%d" % i)
        os.mkdir(d)
        proc, out, err = _spawn([REDIS_BIN, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly",
                                 "no", "--dir", d, "--cluster-enabled", "yes", "--cluster-config-file",
                                 "nodes.conf", "--cluster-node-timeout", "5000"], d, tag="node")
        procs.append(proc)
    srv = Server(HOST, base, procs[0], workdir, ports=list(range(base, base + NSHARDS)))
    srv.extra = procs[1:]
    for i, p in enumerate(procs):
        if not _wait_ready(p, [base + i]):
            srv.stop()
            raise RuntimeError("redis cluster node %d did not start" % i)
    subprocess.run(["redis-cli", "--cluster", "create"] + ["%s:%d" % (HOST, base + i) for i in range(NSHARDS)]
                   + ["--cluster-yes"], check=True, timeout=30, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)

    def converged():
        for i in range(NSHARDS):
            info = _cluster_info(base + i)
            if info.get("cluster_state") != "ok" or info.get("cluster_known_nodes") != str(NSHARDS):
                return False
            c = redis.Redis(host=HOST, port=base + i, socket_timeout=TIMEOUT)
            try:
                if len(c.execute_command("CLUSTER", "SLOTS")) != NSHARDS:
                    return False
            finally:
                c.close()
        return True

    poll_until(converged, timeout=20, interval=0.1, what="redis cluster to converge")
    return srv


def _start_ruvio_cluster_mode():
    """cluster-enabled yes: the same three nodes, made a cluster the way Redis's are (redis-cli --cluster create)."""
    base = free_ports(NSHARDS, also_bus=True)
    srv = launch(["--shards", str(NSHARDS), "--cluster-enabled", "yes", "--cluster-node-timeout", "5000"],
                 port=base)
    r = subprocess.run(["redis-cli", "--cluster", "create"] + ["%s:%d" % (HOST, base + i) for i in range(NSHARDS)]
                       + ["--cluster-yes"], timeout=30, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        infos = [_cluster_info(base + i) for i in range(NSHARDS)]
        srv.stop()
        raise AssertionError("redis-cli --cluster create failed:\n%s\n%s" % (r.stdout, infos))
    return srv


# Against ruvio, every test runs twice: on the fixed slot ranges of a multi-shard node (cluster-enabled no) and in
# cluster mode (cluster-enabled yes, slots assigned by redis-cli through the topology log).
@pytest.fixture(scope="module", params=["shards", "cluster-enabled"])
def cluster(request):
    if ADDR:
        pytest.skip("needs its own server processes (RUVIO_ADDR set)")
    if IS_REDIS and request.param != "shards":
        pytest.skip("one Redis cluster is enough")
    if IS_REDIS:
        srv = _start_redis_cluster()
    elif request.param == "shards":
        srv = launch(["--shards", str(NSHARDS)])
    else:
        srv = _start_ruvio_cluster_mode()
    yield srv
    srv.stop()
    shutil.rmtree(srv.workdir, ignore_errors=True)


@pytest.fixture
def nodes(cluster):
    """One decoded client per shard port; all shards flushed."""
    cs = [cluster.client(port=p) for p in cluster.ports]
    for c in cs:
        c.flushall()
    yield cs
    for c in cs:
        c.close()


def slot_owner_map(client):
    """{slot range (start, end): port} from CLUSTER SLOTS."""
    out = {}
    for entry in _raw_slots(client):
        out[(entry[0], entry[1])] = entry[2][1]
    return out


def _raw_slots(client):
    conn = client.connection_pool.get_connection("CLUSTER")
    try:
        conn.send_command("CLUSTER", "SLOTS")
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def owner_port(client, slot):
    for (s, e), port in slot_owner_map(client).items():
        if s <= slot <= e:
            return port
    raise AssertionError("slot %d not covered" % slot)


def key_on_other_shard(client, my_port, prefix="k"):
    for i in range(10000):
        k = "%s%d" % (prefix, i)
        p = owner_port(client, key_slot(k.encode()))
        if p != my_port:
            return k, p
    raise AssertionError("no key found on another shard")


def key_on_shard(client, port, prefix="own"):
    for i in range(10000):
        k = "%s%d" % (prefix, i)
        if owner_port(client, key_slot(k.encode())) == port:
            return k
    raise AssertionError("no key found on shard %d" % port)


# ---------------------------------------------------------------------------------------------------- KEYSLOT

def test_keyslot_known_values(nodes):
    c = nodes[0]
    assert c.execute_command("CLUSTER", "KEYSLOT", "foo") == 12182
    assert c.execute_command("CLUSTER", "KEYSLOT", "bar") == 5061
    assert c.execute_command("CLUSTER", "KEYSLOT", "") == 0
    assert c.execute_command("CLUSTER", "KEYSLOT", "{user1}:a") == \
        c.execute_command("CLUSTER", "KEYSLOT", "{user1}:b") == \
        c.execute_command("CLUSTER", "KEYSLOT", "user1")


@pytest.mark.parametrize("key", ["a", "hello world", "{}foo", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}",
                                 "{a", "a}", "}{", "{user1000}.following", "\xe9t\xe9",
                                 pytest.param("x" * 300, id="x*300")])
def test_keyslot_matches_crc16(nodes, key):
    assert nodes[0].execute_command("CLUSTER", "KEYSLOT", key) == key_slot(key.encode())


def test_keyslot_many(nodes):
    c = nodes[1]
    with c.pipeline(transaction=False) as p:
        for i in range(500):
            p.execute_command("CLUSTER", "KEYSLOT", "key:%d" % i)
        slots = p.execute()
    assert slots == [key_slot(("key:%d" % i).encode()) for i in range(500)]


# ---------------------------------------------------------------------------------------------------- topology

def test_cluster_slots(nodes, cluster):
    ports = set(cluster.ports)
    for c in nodes:
        entries = sorted(_raw_slots(c), key=lambda e: e[0])
        assert len(entries) == NSHARDS
        expect_start = 0
        seen_ports = set()
        for e in entries:
            start, end, master = e[0], e[1], e[2]
            assert start == expect_start and end >= start
            expect_start = end + 1
            assert master[0] in ("127.0.0.1", b"127.0.0.1")
            assert master[1] in ports
            node_id = master[2].decode() if isinstance(master[2], bytes) else master[2]
            assert len(node_id) == 40
            seen_ports.add(master[1])
        assert expect_start == 16384
        assert seen_ports == ports


def test_cluster_slots_same_on_every_node(nodes):
    views = [sorted(tuple((e[0], e[1], e[2][1])) for e in _raw_slots(c)) for c in nodes]
    assert views[0] == views[1] == views[2]


def test_cluster_myid(nodes):
    ids = [c.execute_command("CLUSTER", "MYID") for c in nodes]
    for i in ids:
        assert len(i) == 40 and all(ch in "0123456789abcdef" for ch in i)
    assert len(set(ids)) == NSHARDS


def _parse_nodes(text):
    out = []
    for line in text.strip().split("\n"):
        f = line.split(" ")
        out.append({"id": f[0], "addr": f[1], "flags": f[2].split(","), "master": f[3], "link": f[7],
                    "slots": f[8:]})
    return out


def _raw_nodes(c):
    conn = c.connection_pool.get_connection("CLUSTER")
    try:
        conn.send_command("CLUSTER", "NODES")
        return conn.read_response()
    finally:
        c.connection_pool.release(conn)


def test_cluster_nodes(nodes, cluster):
    for c, port in zip(nodes, cluster.ports):
        entries = _parse_nodes(_raw_nodes(c))
        assert len(entries) == NSHARDS
        myself = [e for e in entries if "myself" in e["flags"]]
        assert len(myself) == 1
        assert myself[0]["id"] == c.execute_command("CLUSTER", "MYID")
        assert myself[0]["addr"].split("@")[0] == "127.0.0.1:%d" % port
        covered = 0
        addrs = set()
        for e in entries:
            assert "master" in e["flags"]
            assert e["master"] == "-"
            assert e["link"] == "connected"
            addrs.add(e["addr"].split("@")[0])
            for rng in e["slots"]:
                a, _, b = rng.partition("-")
                covered += (int(b) if b else int(a)) - int(a) + 1
        assert covered == 16384
        assert addrs == {"127.0.0.1:%d" % p for p in cluster.ports}


def _flat_to_dict(x):
    if isinstance(x, dict):
        return x
    return {(x[i].decode() if isinstance(x[i], bytes) else x[i]): x[i + 1] for i in range(0, len(x), 2)}


def test_cluster_shards(nodes, cluster):
    shards = nodes[0].execute_command("CLUSTER", "SHARDS")
    assert len(shards) == NSHARDS
    covered = 0
    ports = set()
    for sh in shards:
        sh = _flat_to_dict(sh)
        slots = sh["slots"]
        assert len(slots) % 2 == 0
        for i in range(0, len(slots), 2):
            covered += int(slots[i + 1]) - int(slots[i]) + 1
        assert len(sh["nodes"]) == 1
        node = _flat_to_dict(sh["nodes"][0])
        ports.add(int(node["port"]))
        assert node["ip"] in ("127.0.0.1", b"127.0.0.1")
        assert node["role"] in ("master", b"master")
        assert node["health"] in ("online", b"online")
    assert covered == 16384
    assert ports == set(cluster.ports)


def test_cluster_info(nodes):
    for c in nodes:
        info = _cluster_info(c.connection_pool.connection_kwargs["port"])
        assert info["cluster_state"] == "ok"
        assert info["cluster_slots_assigned"] == "16384"
        assert info["cluster_slots_ok"] == "16384"
        assert info["cluster_known_nodes"] == str(NSHARDS)
        assert info["cluster_size"] == str(NSHARDS)


def test_info_cluster_enabled(nodes):
    for c in nodes:
        assert c.info("cluster") == {"cluster_enabled": 1}


def test_cluster_unknown_subcommand(nodes):
    with pytest.raises(redis.exceptions.ResponseError) as ei:
        nodes[0].execute_command("CLUSTER", "FOOBAR")
    assert str(ei.value) == "unknown subcommand 'FOOBAR'. Try CLUSTER HELP."


# ---------------------------------------------------------------------------------------------------- redirection

def test_moved(nodes, cluster):
    c = nodes[0]
    key, port = key_on_other_shard(c, cluster.ports[0])
    slot = key_slot(key.encode())
    with cluster.raw(port=cluster.ports[0]) as conn:
        assert conn.cmd("GET", key) == "MOVED %d 127.0.0.1:%d" % (slot, port)
        assert conn.cmd("SET", key, "v") == "MOVED %d 127.0.0.1:%d" % (slot, port)
        # the owner accepts it
    with cluster.raw(port=port) as conn:
        assert conn.cmd("SET", key, "v") == "OK"
        assert conn.cmd("GET", key) == b"v"


def test_moved_for_every_shard(nodes, cluster):
    for i, port in enumerate(cluster.ports):
        key, owner = key_on_other_shard(nodes[i], port, prefix="mv%d_" % i)
        with pytest.raises(redis.exceptions.ResponseError) as ei:
            nodes[i].get(key)
        assert str(ei.value) == "MOVED %d 127.0.0.1:%d" % (key_slot(key.encode()), owner)


def test_own_keys_served_locally(nodes, cluster):
    for i, port in enumerate(cluster.ports):
        k = key_on_shard(nodes[i], port)
        assert nodes[i].set(k, "here") is True
        assert nodes[i].get(k) == "here"
        assert nodes[i].dbsize() == 1


def test_crossslot(nodes, cluster):
    a, b = "a", "b"
    assert key_slot(b"a") != key_slot(b"b")
    owner = owner_port(nodes[0], key_slot(b"a"))
    with cluster.raw(port=owner) as conn:
        assert conn.cmd("MSET", a, "1", b, "2") == "CROSSSLOT Keys in request don't hash to the same slot"
        assert conn.cmd("MGET", a, b) == "CROSSSLOT Keys in request don't hash to the same slot"
        assert conn.cmd("DEL", a, b) == "CROSSSLOT Keys in request don't hash to the same slot"
        assert conn.cmd("EXISTS", a) == 0


def test_crossslot_on_any_node(cluster):
    for port in cluster.ports:
        with cluster.raw(port=port) as conn:
            reply = conn.cmd("MSET", "a", "1", "b", "2")
            assert reply.startswith("CROSSSLOT Keys in request don't hash to the same slot")


def test_hash_tag_multikey(nodes, cluster):
    slot = key_slot(b"{tag}")
    port = owner_port(nodes[0], slot)
    c = nodes[cluster.ports.index(port)]
    assert c.mset({"{tag}a": "1", "{tag}b": "2", "{tag}c": "3"}) is True
    assert c.mget("{tag}a", "{tag}b", "{tag}c") == ["1", "2", "3"]
    assert c.delete("{tag}a", "{tag}b") == 2


# ---------------------------------------------------------------------------------------------------- clients

def test_redis_py_cluster_client(nodes, cluster):
    rc = RedisCluster(host=HOST, port=cluster.ports[0], socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT,
                      decode_responses=True)
    try:
        for i in range(200):
            assert rc.set("rc:%d" % i, str(i)) is True
        for i in range(200):
            assert rc.get("rc:%d" % i) == str(i)
        assert rc.mset({"{grp}x": "1", "{grp}y": "2"}) is True
        assert rc.mget("{grp}x", "{grp}y", "{grp}z") == ["1", "2", None]
        assert rc.mget_nonatomic(["rc:1", "rc:2", "rc:3", "nosuch"]) == ["1", "2", "3", None]
    finally:
        rc.close()
    sizes = [c.dbsize() for c in nodes]
    assert sum(sizes) == 202
    assert all(s > 0 for s in sizes)


def test_redis_cli_follows_moved(nodes, cluster):
    key, port = key_on_other_shard(nodes[0], cluster.ports[0], prefix="cli")
    base = str(cluster.ports[0])
    out = subprocess.run(["redis-cli", "-c", "-h", HOST, "-p", base, "SET", key, "via-cli"], capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out
    out = subprocess.run(["redis-cli", "-c", "-h", HOST, "-p", base, "GET", key], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.stdout.strip() == "via-cli"
    assert nodes[cluster.ports.index(port)].get(key) == "via-cli"


# ---------------------------------------------------------------------------------------------------- cluster disabled

def test_cluster_disabled_standalone(raw):
    for sub in (["INFO"], ["SLOTS"], ["NODES"], ["MYID"], ["KEYSLOT", "foo"], ["SHARDS"]):
        assert raw.cmd("CLUSTER", *sub) == "ERR This instance has cluster support disabled"


@pytest.mark.ruvio_only
def test_cluster_disabled_one_shard(start_server):
    srv = start_server("--shards", "1")
    with srv.raw() as c:
        assert c.cmd("CLUSTER", "INFO") == "ERR This instance has cluster support disabled"
        assert c.cmd("CLUSTER", "SLOTS") == "ERR This instance has cluster support disabled"
        info = c.cmd("INFO", "cluster").decode()
        assert "cluster_enabled:0" in info
        assert c.cmd("MSET", "a", "1", "b", "2") == "OK"
