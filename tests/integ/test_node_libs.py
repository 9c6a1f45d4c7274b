"""Real Node.js libraries unchanged (issue 17): BullMQ queues and workers, bee-queue, and node-redis scripts
(createClient's `scripts` option with defineScript, EVALSHA with its EVAL fallback).

Each scenario is a function of a script in tests/clients (bullmq_scenarios.js, beequeue_scenarios.js,
node_redis_scripts.js), run as `node <script> <port> <scenario> <host>` against the suite's server: it prints
"ok <scenario>" and exits 0, or names the mismatch on stderr and exits 1 (tests/clients/scenario.js holds what the
scripts share). Every wait inside a script is bounded,
and so is the run. The libraries are pinned in tests/clients/package-lock.json (`npm ci` there, run by
`scripts/deps.sh test`); the tests skip when node or tests/clients/node_modules is missing.

Some of the BullMQ scenarios run again on a three-node cluster, through ioredis's Cluster with a hash-tagged
prefix (as BullMQ's docs ask). A last test runs some of them against a durable primary with a replica: the
replica ends with the same keys and values (the libraries' scripts are logged and streamed as their effects),
and so does the primary after a restart from its log.

Reference mode (RUVIO_TARGET=redis) runs the same scenarios against redis-server.""" 

import os
import shutil
import subprocess

import pytest
import redis

from conftest import HOST, IS_REDIS, REPO, launch, poll_until

CLIENTS = os.path.join(REPO, "tests", "clients")
NODE = shutil.which("node")
LIBS = ("bullmq", "bee-queue", "redis")
RUN_TIMEOUT = 90        # one scenario: its own deadline is 50 s; generous for a loaded 2-core machine

SCENARIOS = [
    ("bullmq_scenarios.js", s) for s in ("basic", "delayed", "priorities", "retries", "flow", "events", "scheduler",
                                         "ratelimit", "pause", "progress", "stalled", "manage", "advanced")
] + [
    ("beequeue_scenarios.js", s) for s in ("basic", "retry", "delayed", "stalled")
] + [
    ("node_redis_scripts.js", s) for s in ("fallback", "replies", "multi")
]


def _missing():
    if NODE is None:
        return "node is not installed (scripts/deps.sh test installs nodejs and npm)"
    for lib in LIBS:
        if not os.path.isfile(os.path.join(CLIENTS, "node_modules", lib, "package.json")):
            return "tests/clients/node_modules/%s is missing (run `npm ci` in tests/clients, or scripts/deps.sh test)" \
                % lib
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def run_scenario(port, script, scenario, env=None):
    try:
        p = subprocess.run([NODE, os.path.join(CLIENTS, script), str(port), scenario, HOST], cwd=CLIENTS,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired as e:
        raise AssertionError("%s %s ran past %d s:\n%s\n%s" % (script, scenario, RUN_TIMEOUT, e.stdout, e.stderr))
    assert p.returncode == 0 and p.stdout.strip().endswith("ok " + scenario), \
        "%s %s exited %d:\n%s\n%s" % (script, scenario, p.returncode, p.stdout[-4000:], p.stderr[-4000:])


LIB_OF = {"bullmq_scenarios.js": "bullmq", "beequeue_scenarios.js": "beequeue", "node_redis_scripts.js": "noderedis"}


@pytest.mark.parametrize("script,scenario", SCENARIOS, ids=["%s-%s" % (LIB_OF[s], n) for s, n in SCENARIOS])
def test_node_library_scenario(server, r, script, scenario):
    try:
        run_scenario(server.port, script, scenario)
    except AssertionError as e:  # what the server held and who was connected, to tell why
        state = ["%s %s %r" % (k, r.type(k), _value(r, k)) for k in sorted(r.keys("*"))[:60]]
        clients = [" ".join("%s=%s" % kv for kv in sorted(cl.items()) if kv[0] in ("id", "cmd", "flags", "age",
                                                                                   "idle", "sub", "name"))
                   for cl in r.client_list()]
        raise AssertionError("%s\nkeys:\n%s\nclients:\n%s" % (e, "\n".join(state), "\n".join(clients)))
    assert r.ping()


def _value(r, k):
    t = r.type(k)
    if t == "list":
        return r.lrange(k, 0, 20)
    if t == "hash":
        return {f: v[:200] for f, v in list(r.hgetall(k).items())[:20]}
    if t == "set":
        return sorted(r.smembers(k))[:20]
    if t == "zset":
        return r.zrange(k, 0, 20, withscores=True)
    if t == "string":
        return r.get(k)[:200]
    return None


# The scenarios of the durability test: scripts with cjson/cmsgpack, streams (the events BullMQ adds), delayed and
# prioritised sets, flows across queues, a job that delays itself, node-redis's EVAL fallback.
DURABLE_SCENARIOS = [("bullmq_scenarios.js", "retries"), ("bullmq_scenarios.js", "flow"),
                     ("bullmq_scenarios.js", "advanced"),
                     ("beequeue_scenarios.js", "retry"), ("node_redis_scripts.js", "fallback")]
DEBUG = ["--enable-debug-command", "yes"]


def snapshot(srv):
    """{key: DEBUG DIGEST-VALUE} of the keys without a TTL (a key with one, a lock or a job's stall guard, may
    expire between two reads)."""
    c = srv.client()
    try:
        out = {}
        for k in c.keys("*"):
            if c.pttl(k) == -1:
                out[k] = c.execute_command("DEBUG", "DIGEST-VALUE", k)
        return out
    finally:
        c.close()


def test_library_state_same_on_replica_and_after_restart(start_server, tmp_path):
    durable = ["--appendonly", "yes"] if IS_REDIS else ["--durability", "everysec"]
    data = str(tmp_path / "primary")
    os.mkdir(data)
    primary = start_server("--dir", data, *durable, *DEBUG)
    replica = start_server(*DEBUG)
    rc = replica.client()
    assert rc.replicaof(HOST, primary.port) == "OK"
    poll_until(lambda: rc.info("replication").get("master_link_status") == "up", timeout=20, what="replica link up")
    for script, scenario in DURABLE_SCENARIOS:
        run_scenario(primary.port, script, scenario)
    want = snapshot(primary)
    assert len(want) > 20, want        # the libraries left their queues' keys behind
    poll_until(lambda: snapshot(replica) == want, timeout=20, interval=0.1, what="the replica to hold the same keys")
    primary.stop()
    again = start_server("--dir", data, *durable, *DEBUG)
    poll_until(lambda: loaded(again), timeout=30, interval=0.1, what="the restarted primary to load its data")
    assert snapshot(again) == want


def loaded(srv):
    """False while the server answers -LOADING (Redis reads its AOF after it starts answering)."""
    c = srv.client()
    try:
        c.dbsize()
        return True
    except redis.exceptions.BusyLoadingError:
        return False
    finally:
        c.close()


# BullMQ on a cluster: its scripts reach keys they do not declare (a flow's parent in another queue), all in the
# slot of the prefix's hash tag; the blocking pops and the events stream go through the cluster client too.
CLUSTER_SCENARIOS = ("flow", "events", "advanced")


@pytest.fixture
def cluster_ports():
    """Three primaries covering every slot: one ruvio process of three shards, or three redis-servers."""
    common = ["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"]
    if IS_REDIS:
        servers = [launch(common + ["--cluster-config-file", "nodes.conf"]) for _ in range(3)]
        ports = [s.port for s in servers]
    else:
        servers = [launch(["--shards", 3] + common)]
        ports = servers[0].ports
    try:
        r = subprocess.run(["redis-cli", "--cluster", "create", *["%s:%d" % (HOST, p) for p in ports],
                            "--cluster-yes"], timeout=60, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout

        def ok():
            for p in ports:
                c = servers[0].client(port=p)
                try:
                    if "cluster_state:ok" not in c.execute_command("CLUSTER", "INFO"):
                        return False
                finally:
                    c.close()
            return True
        poll_until(ok, timeout=30, interval=0.1, what="cluster_state:ok on every node")
        yield ports
    finally:
        for s in servers:
            s.stop()


@pytest.mark.own_server
def test_bullmq_on_a_cluster(cluster_ports):
    for scenario in CLUSTER_SCENARIOS:
        run_scenario(cluster_ports[0], "bullmq_scenarios.js", scenario, env={"BMQ_CLUSTER": "1"})
