"""Synchronous replication in cluster mode (min-sync-replicas, docs/cluster.md "Synchronous replication"):
three netns hosts, one ruvio process of two shards (two cluster nodes) each, `--cluster-replicas 1`, and
min-sync-replicas 1 on every node. Writer threads INCR counters and RPUSH unique values, recording every
acknowledged op; after a CLUSTER FAILOVER, a kill -9 of a primary's host, or a primary's host cut off, every
acknowledged op is there exactly once.

Each op is sent once, on a connection of its own node's pool that RedisCluster routes to (its slot map), never
retried: RedisCluster's own retry after a connection error would send an INCR twice, so "counter <= attempts"
could not be checked."""

import collections
import os
import random
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster

import test_cluster_hosts
from test_cluster_hosts import (PORTS, NODE_TIMEOUT_MS, REFERENCE, cluster_client, cmd, create_cluster,
                                one_leader, start_host, start_nodes)
from ruviotest.wait import wait_for

cluster_net = test_cluster_hosts.cluster_net   # the fixture: three netns hosts
SANITIZED = os.environ.get("RUVIO_SANITIZED", "0").upper() in ("1", "ON", "TRUE")
# Under the sanitizers CI has no time for it (the release stage runs it, and tests/integ/test_sync_repl.py covers
# the same server code under ASan).
pytestmark = [pytest.mark.skipif(REFERENCE, reason="min-sync-replicas is ruvio's"),
              pytest.mark.skipif(SANITIZED, reason="release builds only (CI's time)")]

SYNC_TIMEOUT_MS = 3000
THREADS = 4


def topology(net, skip=()):
    """{node id: (ip, port, role, primary id, [slot ranges])} from CLUSTER NODES of the first host (not in
    skip) that answers."""
    err = None
    for h in net:
        if h.ip in skip:
            continue
        try:
            text = cmd(h.ip, PORTS[0], "CLUSTER", "NODES")
        except (redis.exceptions.RedisError, OSError) as e:
            err = e
            continue
        out = {}
        for line in text.splitlines():
            f = line.split()
            ip, port = f[1].split("@")[0].rsplit(":", 1)
            out[f[0]] = (ip, int(port), "primary" if "master" in f[2] else "replica", f[3], f[8:])
        return out
    raise AssertionError("no host answers CLUSTER NODES: %r" % err)


def taken_over(net, vid, slots, skip=()):
    """Another node serves vid's slots."""
    return any(t[2] == "primary" and t[4] == slots and i != vid for i, t in topology(net, skip).items())


def nodes(net):
    return [(h.ip, p) for h in net for p in PORTS]


def set_sync(net, n):
    for ip, port in nodes(net):
        assert cmd(ip, port, "CONFIG", "SET", "min-sync-replicas", n) == "OK"
        assert cmd(ip, port, "CONFIG", "SET", "min-sync-replicas-timeout", SYNC_TIMEOUT_MS) == "OK"

    def on():
        for ip, port, role, _, _ in topology(net).values():
            if role == "primary":
                i = redis.Redis(host=ip, port=port, socket_timeout=5, decode_responses=True)
                try:
                    if int(i.info("replication").get("sync_replicas", 0)) != n:
                        return False
                finally:
                    i.close()
        return True
    if n:
        wait_for(on, timeout=10, what="sync_replicas:%d on every primary" % n)


def replicas_synced(net):
    """Every replica linked to its primary and every node's cluster up (cluster_state:ok: its host holds the
    write lease, which a burst of topology changes such as create's can let lapse for a moment)."""
    for ip, port, role, _, _ in topology(net).values():
        c = redis.Redis(host=ip, port=port, socket_timeout=5, decode_responses=True)
        try:
            if role == "replica" and c.info("replication").get("master_link_status") != "up":
                return False
            if "cluster_state:ok" not in c.execute_command("CLUSTER", "INFO"):
                return False
        finally:
            c.close()
    return True


def keys_per_primary(net, prefix, per):
    """per keys for each primary's slots: [key]."""
    owners = []
    for _, _, role, _, ranges in topology(net).values():
        if role != "primary":
            continue
        rs = []
        for r in ranges:
            if not r.startswith("["):
                a, _, b = r.partition("-")
                rs.append((int(a), int(b or a)))
        owners.append(rs)
    out = []
    for rs in owners:
        got, i = 0, 0
        while got < per:
            k = "%s%d" % (prefix, i)
            i += 1
            s = redis.crc.key_slot(k.encode())
            if any(a <= s <= b for a, b in rs):
                out.append(k)
                got += 1
    return out


class Load:
    """THREADS writers; per counter key: attempts and acks; per list value: attempted, acked."""

    def __init__(self, net):
        self.net = net
        self.counters = keys_per_primary(net, "cnt", 2)
        self.lists = keys_per_primary(net, "lst", 1)
        self.lock = threading.Lock()
        self.attempts = collections.Counter()
        self.acks = collections.Counter()
        self.pushed = set()
        self.acked_values = collections.defaultdict(list)
        self.errors = collections.Counter()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(t,), daemon=True) for t in range(THREADS)]
        for t in self.threads:
            t.start()

    def acked(self):
        with self.lock:
            return sum(self.acks.values()) + sum(len(v) for v in self.acked_values.values())

    def run(self, t):
        rnd = random.Random(t)
        rc = None
        i = 0
        while not self.stop.is_set():
            if rc is None:
                try:
                    rc = RedisCluster(startup_nodes=[redis.cluster.ClusterNode(ip, p) for ip, p in nodes(self.net)],
                                      socket_timeout=SYNC_TIMEOUT_MS / 1000 + 3, socket_connect_timeout=2,
                                      decode_responses=True)
                except (redis.exceptions.RedisError, OSError):
                    time.sleep(0.1)
                    continue
            incr = rnd.random() < 0.5
            key = rnd.choice(self.counters if incr else self.lists)
            val = "%d:%d" % (t, i)
            i += 1
            with self.lock:
                if incr:
                    self.attempts[key] += 1
                else:
                    self.pushed.add((key, val))
            try:
                conn = rc.get_redis_connection(rc.get_node_from_key(key))
                conn.execute_command("INCR", key) if incr else conn.execute_command("RPUSH", key, val)
                with self.lock:
                    if incr:
                        self.acks[key] += 1
                    else:
                        self.acked_values[key].append(val)
            except redis.exceptions.ResponseError as e:   # refused (MOVED, NOREPLICAS, CLUSTERDOWN): not run
                with self.lock:
                    self.errors[type(e).__name__ if type(e) is not redis.exceptions.ResponseError
                                else str(e).split()[0]] += 1
                if isinstance(e, redis.exceptions.MovedError):
                    rc.close()
                    rc = None
                time.sleep(0.02)
            except (redis.exceptions.RedisError, OSError) as e:   # outcome unknown
                with self.lock:
                    self.errors[type(e).__name__] += 1
                rc.close()
                rc = None
                time.sleep(0.05)
        if rc is not None:
            rc.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(SYNC_TIMEOUT_MS / 1000 + 10)
        assert not any(t.is_alive() for t in self.threads), "a writer hung"

    def check(self):
        """Every acknowledged op present exactly once; nothing beyond what was attempted."""
        rc = cluster_client(self.net)
        try:
            lost = []
            for k in self.counters:
                v = int(rc.get(k) or 0)
                if not self.acks[k] <= v <= self.attempts[k]:
                    lost.append("%s=%d acked %d attempted %d" % (k, v, self.acks[k], self.attempts[k]))
            for k in self.lists:
                have = collections.Counter(rc.lrange(k, 0, -1))
                for val in self.acked_values[k]:
                    if have[val] != 1:
                        lost.append("%s: acked %s present %d times" % (k, val, have[val]))
                extra = [v for v, n in have.items() if n > 1 or (k, v) not in self.pushed]
                if extra:
                    lost.append("%s: values never pushed or twice: %s" % (k, extra[:5]))
        finally:
            rc.close()
        print("\nacked %d ops; errors %s" % (self.acked(), dict(self.errors)))
        return lost


def wait_acked_more(load, n, timeout, what):
    base = load.acked()
    wait_for(lambda: load.acked() >= base + n, timeout=timeout, what=what)


def sync_cluster(net, n=1):
    procs = start_nodes(net)
    create_cluster(net, replicas=1)
    set_sync(net, n)
    return procs


@pytest.mark.parametrize("how", ["default", "FORCE"])
def test_cluster_failover_under_load_loses_no_acked_write(cluster_net, how):
    """default: the hand-over (nothing lost even asynchronously); FORCE: no hand-over, and with R = N = 1 the
    replica applied every write its primary acknowledged."""
    sync_cluster(cluster_net)
    load = Load(cluster_net)
    try:
        wait_acked_more(load, 100, 20, "writes flowing")
        topo = topology(cluster_net)
        rid, (rip, rport, _, pid, _) = next((i, t) for i, t in topo.items() if t[2] == "replica")
        assert cmd(rip, rport, "CLUSTER", "FAILOVER", *([] if how == "default" else [how])) == "OK"
        wait_for(lambda: topology(cluster_net)[rid][2] == "primary", timeout=15, what="the replica took over")
        wait_for(lambda: topology(cluster_net)[pid][2] == "replica", timeout=15, what="the old primary follows")
        wait_for(lambda: replicas_synced(cluster_net), timeout=20, what="every replica in sync")
        wait_acked_more(load, 100, 20, "writes flowing after the failover")
    finally:
        load.finish()
    lost = load.check()
    assert not lost, lost


def kill_primary_host(net, procs, n):
    """kill -9 of a host (not the log's leader) that has a primary, under load; the leader fails it over;
    then the host restarts (empty: durability memory) and rejoins. Returns the list of lost acked ops."""
    hosts = list(net)
    lead = wait_for(lambda: one_leader(hosts), timeout=10, what="one log leader")
    topo = topology(net)
    vid, (vip, vport, _, _, _) = next((i, t) for i, t in topo.items()
                                      if t[2] == "primary" and t[0] != net[lead].ip)
    assert not n or int(cmd(vip, vport, "CONFIG", "GET", "min-sync-replicas")[1]) == n
    host = next(h for h in hosts if h.ip == vip)
    load = Load(net)
    try:
        wait_acked_more(load, 100, 20, "writes flowing")
        net.kill9(procs[(host.name, vport)])
        wait_for(lambda: taken_over(net, vid, topo[vid][4], skip=(vip,)),
                 timeout=NODE_TIMEOUT_MS / 1000 * 3 + 10, what="the killed primary's replica promoted")
        p = start_host(net, host)
        procs.update({(host.name, port): p for port in PORTS})
        wait_for(lambda: replicas_synced(net), timeout=30, what="every replica in sync after the restart")
        wait_acked_more(load, 50, 20, "writes flowing after the restart")
    finally:
        load.finish()
    return load.check()


def test_kill9_of_a_primary_host_loses_no_acked_write(cluster_net):
    procs = sync_cluster(cluster_net)
    lost = kill_primary_host(cluster_net, procs, 1)
    assert not lost, lost


@pytest.mark.skipif(not os.environ.get("RUVIO_SYNC_DEMO"), reason="a demonstration (RUVIO_SYNC_DEMO=1): "
                    "asynchronous replication may lose acknowledged writes; it does not always")
def test_kill9_without_sync_mode_demo(cluster_net):
    procs = sync_cluster(cluster_net, n=0)
    lost = kill_primary_host(cluster_net, procs, 0)
    print("\nmin-sync-replicas 0: %d acknowledged op(s) lost: %s" % (len(lost), lost[:5]))


def test_partitioned_primary_stops_and_rejoins_dropping_its_tail(cluster_net):
    sync_cluster(cluster_net)
    hosts = list(cluster_net)
    lead = wait_for(lambda: one_leader(hosts), timeout=10, what="one log leader")
    topo = topology(cluster_net)
    vid, (vip, vport, _, _, _) = next((i, t) for i, t in topo.items()
                                      if t[2] == "primary" and t[0] != cluster_net[lead].ip)
    cut = next(h for h in hosts if h.ip == vip)
    key = keys_per_primary_of(cluster_net, vid)
    # a writer inside the cut host's namespace, on its own primary, before and across the cut: the write in
    # flight when the link goes is applied there and never reaches the replica
    w = cut.spawn(["timeout", "8", "redis-cli", "-h", vip, "-p", vport, "-r", "100000", "-i", "0.01", "INCR", key],
                  log="tail-writer")
    c = redis.Redis(host=vip, port=vport, socket_timeout=5, decode_responses=True)
    wait_for(lambda: int(c.get(key) or 0) > 20, timeout=10, what="the in-host writer running")
    c.close()
    cut.link_down()
    t0 = time.monotonic()
    try:
        # within the lease (half the node timeout) plus a margin its primary refuses writes
        seen = []

        def refused():
            r = cut.redis_cli(cut, vport, "INCR", key, timeout=SYNC_TIMEOUT_MS // 1000 + 3)
            seen.append((r.stdout + r.stderr).strip())
            return "CLUSTERDOWN" in seen[-1] or "NOREPLICAS" in seen[-1]
        try:
            wait_for(refused, timeout=NODE_TIMEOUT_MS / 1000 + 10, what="the cut-off primary refusing writes")
        finally:
            print("\nINCR on the cut-off primary answered, in turn: %s" % seen)
        stopped = time.monotonic() - t0
        # none acknowledged: the one in flight at the cut is closed (its replica never acked), later ones refused
        assert all(not x.isdigit() for x in seen), seen
        wait_for(lambda: taken_over(cluster_net, vid, topo[vid][4], skip=(vip,)),
                 timeout=NODE_TIMEOUT_MS / 1000 * 3 + 10, what="a replica promoted for the cut-off primary")
        print("\ncut-off primary refused writes %.2f s after the cut" % stopped)
    finally:
        cut.link_up()
        cluster_net.stop(w)
    # healed: the old primary follows the new one, and what it had past the new history is dropped
    wait_for(lambda: topology(cluster_net)[vid][2] == "replica", timeout=20, what="the old primary a replica")
    wait_for(lambda: replicas_synced(cluster_net), timeout=30, what="the old primary in sync")
    new_id = topology(cluster_net)[vid][3]
    nip, nport = topology(cluster_net)[new_id][:2]
    st = redis.Redis(host=nip, port=nport, socket_timeout=5, decode_responses=True)
    try:
        assert int(st.info("stats")["sync_full_divergent"]) >= 1, st.info("stats")
    finally:
        st.close()
    with open(next(p.log_path for p in cluster_net.procs if p.host is not cut and p.poll() is None
                   and p.host.ip == nip), errors="replace") as f:
        assert "dropped by a full sync" in f.read()
    old = redis.Redis(host=vip, port=vport, socket_timeout=5, decode_responses=True)
    new = redis.Redis(host=nip, port=nport, socket_timeout=5, decode_responses=True)
    try:
        assert old.execute_command("READONLY") is True   # (a cluster replica serves reads after READONLY)
        wait_for(lambda: old.get(key) == new.get(key), timeout=10, what="the old primary converged")
    finally:
        old.close()
        new.close()


def keys_per_primary_of(net, node_id):
    ranges = topology(net)[node_id][4]
    rs = []
    for r in ranges:
        if not r.startswith("["):
            a, _, b = r.partition("-")
            rs.append((int(a), int(b or a)))
    i = 0
    while True:
        k = "tail%d" % i
        s = redis.crc.key_slot(k.encode())
        if any(a <= s <= b for a, b in rs):
            return k
        i += 1


PORTS3 = (7000, 7001, 7002)


def start_host3(net, h):
    """One process of three shards (ports 7000-7002) on host h, DEBUG enabled."""
    d = os.path.join(net.workdir, h.name)
    os.makedirs(d, exist_ok=True)
    p = h.spawn([test_cluster_hosts.examples.RUVIO_BIN, "--shards", 3, "--cluster-enabled", "yes", "--bind", h.ip,
                 "--port", PORTS3[0], "--dir", d, "--cluster-node-timeout", NODE_TIMEOUT_MS,
                 "--enable-debug-command", "yes", "--min-sync-replicas", 1], log="ruvio-%s" % h.name)
    wait_for(lambda: all(h.can_reach(h, port) for port in PORTS3), timeout=20, what="%s up" % h.name)
    return p


def test_failover_waits_for_enough_replicas_to_answer(cluster_net):
    """R = 2 replicas, N = 1: the leader promotes only once R - N + 1 = 2 of them answer ROLE. One replica's
    shard is blocked (DEBUG SLEEP) when its primary's host is killed: no promotion until it answers again."""
    procs = {h.name: start_host3(cluster_net, h) for h in cluster_net}
    addrs = ["%s:%d" % (h.ip, p) for p in PORTS3 for h in cluster_net]
    r = cluster_net["h0"].run(["timeout", "60", "redis-cli", "--cluster", "create", *addrs, "--cluster-replicas",
                               2, "--cluster-yes"], timeout=70)
    assert r.returncode == 0, r.stdout + r.stderr
    hosts = list(cluster_net)
    wait_for(lambda: sorted(t[2] for t in topology(cluster_net).values()) == ["primary"] * 3 + ["replica"] * 6,
             timeout=20, what="three primaries and six replicas")
    wait_for(lambda: replicas_synced(cluster_net), timeout=30, what="every replica in sync")
    lead = cluster_net[wait_for(lambda: one_leader(hosts), timeout=10, what="one log leader")]
    topo = topology(cluster_net)
    vid, (vip, vport, _, _, slots) = next((i, t) for i, t in topo.items() if t[2] == "primary" and t[0] != lead.ip)
    reps = [(i, t) for i, t in topo.items() if t[3] == vid]
    assert len(reps) == 2 and all(t[0] != vip for _, t in reps), reps
    # the replica to block: not on the leader's host and not its host's first node (the lease asks that one)
    blocked = [(i, t) for i, t in reps if t[0] != lead.ip and t[1] != PORTS3[0]]
    if not blocked:
        pytest.skip("the layout leaves no replica to block without touching the lease (%s)" % reps)
    bid, (bip, bport, _, _, _) = blocked[0]
    # an acknowledged write on the victim's slots
    key = keys_per_primary_of(cluster_net, vid)
    c = redis.Redis(host=vip, port=vport, socket_timeout=5, decode_responses=True)
    assert c.incr(key) == 1
    c.close()
    sleep_s = NODE_TIMEOUT_MS / 1000 * 3 + 2
    sleeper = redis.Redis(host=bip, port=bport, socket_timeout=sleep_s + 10, decode_responses=True)
    done = threading.Event()

    def block():
        try:
            sleeper.execute_command("DEBUG", "SLEEP", sleep_s)
        finally:
            done.set()
    threading.Thread(target=block, daemon=True).start()
    victim = next(h for h in hosts if h.ip == vip)
    cluster_net.kill9(procs[victim.name])
    t0 = time.monotonic()
    log_path = procs[lead.name].log_path

    def refused_logged():
        with open(log_path, errors="replace") as f:
            return "promoting needs 2" in f.read()
    wait_for(refused_logged, timeout=sleep_s, what="the leader refusing to promote with one replica answering")
    assert not done.is_set(), "the blocked replica woke before the check (a loaded machine?)"
    assert not taken_over(cluster_net, vid, slots, skip=(vip,)), "promoted with one of two replicas answering"
    wait_for(done.is_set, timeout=sleep_s + 10, what="the blocked replica awake")
    wait_for(lambda: taken_over(cluster_net, vid, slots, skip=(vip,)), timeout=NODE_TIMEOUT_MS / 1000 * 3 + 10,
             what="a replica promoted once both answer")
    print("\npromoted %.2f s after the kill (one replica blocked for %.0f s)" % (time.monotonic() - t0, sleep_s))
    sleeper.close()
    new_id = next(i for i, t in topology(cluster_net, skip=(vip,)).items() if t[2] == "primary" and t[4] == slots)
    nip, nport = topology(cluster_net, skip=(vip,))[new_id][:2]
    n = redis.Redis(host=nip, port=nport, socket_timeout=5, decode_responses=True)
    try:
        assert n.get(key) == "1"
    finally:
        n.close()
