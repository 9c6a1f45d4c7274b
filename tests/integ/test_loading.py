"""Start-up loading (issue 19, docs/durability.md "Loading at start-up"): while a node loads its data it accepts
connections, answers -LOADING to every command without the `loading` flag, and INFO persistence shows loading:1 with
Redis's progress fields.

The load is made slow deterministically with Redis's test knob `key-load-delay` (microseconds slept per key/record
loaded); CONFIG SET (which carries the loading flag) sets it back to 0 to let the load finish, so no test depends on
how fast anything runs. Against redis-server the same data is an RDB file (`--rdbcompression no`, 1 KB values, and
`loading-process-events-interval-bytes 1024`, so that Redis serves its clients between every key); against Ruvio it
is the WAL of a `durability everysec` node."""

import os
import shutil
import signal

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import (HOST, IS_REDIS, REDIS_BIN, TIMEOUT, RawConn, RespError, _server_argv, _spawn, free_port,
                      free_ports, launch, poll_until)
from ruviotest.resp import parse_info_flat

pytestmark = pytest.mark.own_server

LOADING = "LOADING Redis is loading the dataset in memory"
NKEYS = 2000
SLOW_US = 100000    # 0.1 s per key: loading all of them would take 200 s, far past every test here

if IS_REDIS:
    MAKE_ARGS = ("--rdbcompression", "no")
    SLOW_ARGS = ("--key-load-delay", str(SLOW_US), "--loading-process-events-interval-bytes", "1024")
else:
    MAKE_ARGS = ("--durability", "everysec")
    SLOW_ARGS = ("--durability", "everysec", "--key-load-delay", str(SLOW_US))


def fill(srv, port=None, tag=""):
    """NKEYS keys of 1 KB and foo=bar (prefixed by tag), saved where the next start loads them from (Redis: SAVE to
    dump.rdb; Ruvio: the WAL, written and synced on the clean stop)."""
    c = srv.client(port=port)
    pipe = c.pipeline(transaction=False)
    for i in range(NKEYS):
        pipe.set("%skey:%d" % (tag, i), "v" * 1000)
    pipe.set(tag + "foo", "bar")
    pipe.execute()
    if IS_REDIS:
        c.save()
    c.close()


def persistence(c):
    """INFO persistence over a RawConn, numbers as numbers."""
    out = {}
    for k, v in parse_info_flat(c.cmd("INFO", "persistence").decode()).items():
        try:
            out[k] = float(v) if "." in v else int(v)
        except ValueError:
            out[k] = v
    return out


def answered(port):
    """The first reply to PING on a new connection (None while nothing answers)."""
    try:
        with RawConn(HOST, port, timeout=2) as c:
            return c.cmd("PING")
    except OSError:
        return None


class Slow:
    """A server started on a data directory, loading it slowly; not waited for (it answers -LOADING)."""

    def __init__(self, datadir, workdir, args, nports=1, cluster=False):
        self.port = free_ports(nports, also_bus=True) if cluster else free_ports(nports) if nports > 1 else free_port()
        self.ports = list(range(self.port, self.port + nports))
        argv = _server_argv(self.port, datadir, [str(a) for a in args])
        self.proc, _, self.err = _spawn(argv, workdir, tag="slow%d" % self.port)
        poll_until(lambda: self.proc.poll() is not None or all(answered(p) is not None for p in self.ports),
                   timeout=TIMEOUT, what="the loading server to answer")
        assert self.proc.poll() is None, open(self.err).read()[-2000:]

    def client(self, **kw):
        kw.setdefault("socket_timeout", TIMEOUT)
        kw.setdefault("socket_connect_timeout", TIMEOUT)
        kw.setdefault("decode_responses", True)
        return redis.Redis(host=HOST, port=self.port, **kw)

    def finish_loading(self):
        with RawConn(HOST, self.port) as c:
            assert c.cmd("CONFIG", "SET", "key-load-delay", "0") == "OK"
        poll_until(lambda: self.info()["loading"] == 0, timeout=TIMEOUT, what="loading to end")

    def info(self, port=None):
        with RawConn(HOST, port or self.port) as c:
            return persistence(c)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)


@pytest.fixture
def loading(start_server, tmp_path):
    """factory(nports=1) -> a Slow server loading NKEYS keys (plus foo=bar) written by a first run."""
    slow = []

    def make(nports=1, args=()):
        extra = ("--shards", str(nports)) if nports > 1 else ()
        first = start_server(*MAKE_ARGS, *extra)
        if nports == 1:
            fill(first)
        for i, p in enumerate(first.ports if nports > 1 else []):
            # a hash tag of shard i's slots (shard i of n owns an equal share of 16384, in order)
            c = first.client(port=p)
            tag = next(t for t in ("t%d" % n for n in range(1000)) if c.cluster("keyslot", t) * nports // 16384 == i)
            c.close()
            fill(first, port=p, tag="{%s}" % tag)
        first.stop()
        assert first.proc.returncode == 0
        s = Slow(first.datadir, str(tmp_path), SLOW_ARGS + extra + tuple(args), nports=nports)
        s.datadir = first.datadir
        slow.append(s)
        return s

    yield make
    for s in slow:
        s.stop()


def test_commands_while_loading(loading):
    srv = loading()
    with RawConn(HOST, srv.port) as c:
        # PING carries no `loading` flag in Redis 7.0 (COMMAND INFO PING): it is refused too
        assert c.cmd("PING") == RespError(LOADING)
        assert c.cmd("GET", "foo") == RespError(LOADING)
        assert c.cmd("SET", "foo", "other") == RespError(LOADING)
        assert c.cmd("DBSIZE") == RespError(LOADING)
        # commands flagged `loading` run
        assert c.cmd("ECHO", "hi") == b"hi"
        assert c.cmd("CLIENT", "SETNAME", "loader") == "OK"
        assert c.cmd("CLIENT", "GETNAME") == b"loader"
        assert c.cmd("CONFIG", "GET", "key-load-delay") == [b"key-load-delay", str(SLOW_US).encode()]
        assert c.cmd("SELECT", "0") == "OK"
        assert parse_info_flat(c.cmd("INFO", "replication").decode())["role"] == "master"
        everything = parse_info_flat(c.cmd("INFO", "everything").decode())
        assert everything["loading"] == "1" and "used_memory" in everything
        # a transaction: the refused command aborts it, as any rejected command does
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("GET", "foo") == RespError(LOADING)
        assert c.cmd("EXEC") == RespError("EXECABORT Transaction discarded because of previous errors.")
    inf = srv.info()
    assert inf["loading"] == 1
    assert inf["async_loading"] == 0
    assert inf["loading_total_bytes"] > NKEYS * 1000
    assert 0 <= inf["loading_loaded_bytes"] < inf["loading_total_bytes"]
    assert 0 <= inf["loading_loaded_perc"] < 100
    assert inf["loading_start_time"] > 0
    assert inf["loading_eta_seconds"] >= 0
    srv.finish_loading()
    with RawConn(HOST, srv.port) as c:
        assert c.cmd("PING") == "PONG"
        assert c.cmd("GET", "foo") == b"bar"
        assert c.cmd("DBSIZE") == NKEYS + 1
        inf = persistence(c)
    assert inf["loading"] == 0
    for f in ("loading_start_time", "loading_total_bytes", "loading_loaded_bytes", "loading_loaded_perc",
              "loading_eta_seconds"):
        assert f not in inf, f


def test_a_replica_answers_as_one_while_it_loads(loading):
    """A node started with replicaof reports that role while it loads (its primary is not reachable: no link yet)."""
    primary = free_port()
    srv = loading(args=("--replicaof", "%s %d" % (HOST, primary)))
    with RawConn(HOST, srv.port) as c:
        assert c.cmd("ROLE") == [b"slave", HOST.encode(), primary, b"connect", -1]
        repl = parse_info_flat(c.cmd("INFO", "replication").decode())
        assert (repl["role"], repl["master_host"], repl["master_port"]) == ("slave", HOST, str(primary))
        assert repl["master_link_status"] == "down"
        assert persistence(c)["loading"] == 1
    srv.finish_loading()
    with RawConn(HOST, srv.port) as c:
        role = c.cmd("ROLE")
        assert role[:3] == [b"slave", HOST.encode(), primary] and role[3] in (b"connect", b"connecting")


def test_a_connection_made_while_loading_is_served_after_it(loading):
    srv = loading()
    with RawConn(HOST, srv.port) as c:
        assert c.cmd("GET", "foo") == RespError(LOADING)
        srv.finish_loading()
        assert c.cmd("GET", "foo") == b"bar"
        assert c.cmd("CLIENT", "GETNAME") is None


def test_redis_py_retries_through_loading(loading):
    """redis-py raises BusyLoadingError for -LOADING; a client configured to retry on it gets the value once the
    load ends. The backoff of the first retry ends the load (CONFIG SET key-load-delay 0), so the retry path is
    taken every time, whatever the timing."""
    srv = loading()
    retries = []

    class EndLoadOnRetry(NoBackoff):
        def compute(self, failures):
            retries.append(failures)
            if failures == 1:
                srv.finish_loading()
            return 0.02

    c = srv.client(retry=Retry(EndLoadOnRetry(), 50), retry_on_error=[redis.exceptions.BusyLoadingError])
    try:
        assert c.get("foo") == "bar"
    finally:
        c.close()
    assert retries and retries[0] == 1
    plain = srv.client()
    try:
        assert plain.get("key:7") == "v" * 1000
    finally:
        plain.close()


def test_kill_during_loading_loses_nothing(loading, start_server):
    srv = loading()
    assert srv.info()["loading"] == 1
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=TIMEOUT)
    again = start_server(*MAKE_ARGS, "--dir", srv.datadir)
    c = again.client()
    try:
        assert c.dbsize() == NKEYS + 1
        assert c.get("foo") == "bar"
        assert c.get("key:%d" % (NKEYS - 1)) == "v" * 1000
        assert c.info("persistence")["loading"] == 0
    finally:
        c.close()


def test_shutdown_while_loading(loading, start_server):
    """SHUTDOWN carries the loading flag: the node exits at once (Redis: without saving), and the next start
    loads everything."""
    srv = loading()
    with RawConn(HOST, srv.port) as c:
        c.send(b"SHUTDOWN NOSAVE\r\n")
    assert srv.proc.wait(timeout=TIMEOUT) == 0
    again = start_server(*MAKE_ARGS, "--dir", srv.datadir)
    c = again.client()
    try:
        assert c.dbsize() == NKEYS + 1
    finally:
        c.close()


@pytest.mark.ruvio_only
def test_every_shard_answers_while_loading(loading):
    """Ruvio: all the shards' ports answer while any shard loads, and the node stays loading until all are."""
    srv = loading(nports=2)
    for p in srv.ports:
        with RawConn(HOST, p) as c:
            assert c.cmd("GET", "foo") == RespError(LOADING)    # (not MOVED: nothing is routed while loading)
            assert c.cmd("CLUSTER", "KEYSLOT", "foo") == 12182
        assert srv.info(port=p)["loading"] == 1
    srv.finish_loading()
    total = 0
    for p in srv.ports:
        with RawConn(HOST, p) as c:
            total += c.cmd("DBSIZE")
        assert srv.info(port=p)["loading"] == 0
    assert total == 2 * (NKEYS + 1)


@pytest.mark.ruvio_only
def test_key_load_delay_is_a_config_key(start_server):
    srv = start_server()
    c = srv.client()
    try:
        assert c.config_get("key-load-delay") == {"key-load-delay": "0"}
        assert c.config_set("key-load-delay", -10)
        assert c.config_get("key-load-delay") == {"key-load-delay": "-10"}
    finally:
        c.close()


@pytest.mark.ruvio_only
def test_a_replica_of_a_loading_primary_syncs_once_it_is_loaded(loading, start_server):
    """The replica's handshake gets -LOADING (logged, retried); nothing syncs from a half-loaded primary."""
    srv = loading()
    replica = start_server("--replicaof", HOST, srv.port)
    c = replica.client()
    try:
        poll_until(lambda: "handshake refused: LOADING" in replica.stdout() + replica.stderr(), timeout=TIMEOUT,
                   what="the replica to be refused")
        assert c.info("replication")["master_link_status"] == "down"
        assert c.dbsize() == 0
        srv.finish_loading()
        poll_until(lambda: c.info("replication")["master_link_status"] == "up", timeout=30,
                   what="the link to come up")
        assert c.dbsize() == NKEYS + 1
        assert c.get("foo") == "bar"
    finally:
        c.close()


@pytest.mark.ruvio_only
def test_cluster_mode_while_loading(start_server, tmp_path):
    """Cluster mode: a shard adopts the topology once the node is loaded, so the CLUSTER subcommands that read it
    answer -LOADING meanwhile (never the view of a node without cluster support)."""
    conf = str(tmp_path / "nodes.conf")
    cluster = ("--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--cluster-config-file", conf)
    first = start_server("--durability", "everysec", *cluster)
    c = first.client()
    assert c.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383) == "OK"
    poll_until(lambda: c.cluster("info")["cluster_state"] == "ok", timeout=TIMEOUT, what="cluster_state:ok")
    poll_until(lambda: c.set("{t}foo", "bar"), timeout=TIMEOUT, what="a write taken")
    c.close()
    fill(first, tag="{t}")
    first.stop()
    assert first.proc.returncode == 0
    srv = Slow(first.datadir, str(tmp_path), ("--durability", "everysec", "--key-load-delay", str(SLOW_US)) + cluster,
               cluster=True)
    try:
        with RawConn(HOST, srv.port) as r:
            for sub in ("INFO", "SLOTS", "NODES", "MYID"):
                assert r.cmd("CLUSTER", sub) == RespError(LOADING), sub
            assert r.cmd("GET", "{t}foo") == RespError(LOADING)
        srv.finish_loading()
        c = srv.client()
        poll_until(lambda: c.cluster("info")["cluster_state"] == "ok", timeout=TIMEOUT, what="cluster_state:ok")
        assert c.get("{t}foo") == "bar"
        assert c.dbsize() == NKEYS + 1
        c.close()
    finally:
        srv.stop()


@pytest.mark.ruvio_only
@pytest.mark.skipif(not os.path.exists(REDIS_BIN), reason="needs Debian's redis-server")
def test_loading_a_redis_rdb_file(tmp_path):
    """An RDB import at start-up (dir/dbfilename) is loading too: -LOADING, and the file's size as the total."""
    redis_srv = launch(argv=[REDIS_BIN, "--port", "{port}", "--bind", HOST, "--save", "", "--appendonly", "no",
                             "--dir", "{dir}"])
    try:
        fill(redis_srv)
        redis_srv.client().save()
        rdb = os.path.join(redis_srv.datadir, "dump.rdb")
        datadir = tmp_path / "data"
        datadir.mkdir()
        shutil.copy(rdb, str(datadir / "dump.rdb"))
    finally:
        redis_srv.stop()
        shutil.rmtree(redis_srv.workdir, ignore_errors=True)
    srv = Slow(str(datadir), str(tmp_path), ("--key-load-delay", str(SLOW_US)))
    try:
        with RawConn(HOST, srv.port) as c:
            assert c.cmd("GET", "foo") == RespError(LOADING)
        inf = srv.info()
        assert inf["loading"] == 1
        assert inf["loading_total_bytes"] == os.path.getsize(str(datadir / "dump.rdb"))
        assert 0 < inf["loading_loaded_bytes"] < inf["loading_total_bytes"]
        srv.finish_loading()
        c = srv.client()
        assert c.get("foo") == "bar"
        assert c.dbsize() == NKEYS + 1
        c.close()
    finally:
        srv.stop()
