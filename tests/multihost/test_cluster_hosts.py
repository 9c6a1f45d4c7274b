"""Cluster across hosts (issue 16): three hosts made of network namespaces (h0 h1 h2), two cluster nodes on each
(ports 7000 and 7001), made one cluster with `redis-cli --cluster create` and written through redis-py's
RedisCluster from the test process.

Against ruvio (the default) each host is one process of two shards (`--shards 2 --cluster-enabled yes`): the
topology lives in a Raft log on the bus port (docs/cluster.md), so the tests also partition a host away from the
log and kill -9 the log's leader. In both modes (the suite's reference mode, RUVIO_TARGET=redis: six redis-server
--cluster-enabled yes) a cluster with `--cluster-replicas 1` and kill -9 of a primary under a write load times
the window in which its slots took no writes, Redis's figure beside ours."""

import os
import threading
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

import examples
import mh_fixtures  # (also puts tests/pylib on the path)
from ruviotest.wait import wait_for

TARGET = os.environ.get("RUVIO_TARGET", "ruvio").lower()
REFERENCE = TARGET == "redis"
PORTS = (7000, 7001)
NODE_TIMEOUT_MS = 2000
HOSTS = ("h0", "h1", "h2")
REPLICAS = 1 if REFERENCE else 0
# kill -9 of the log's leader: raft's election timeout is a quarter of the node timeout (randomised 1x..2x),
# so a new leader within 1 s is expected; the bound leaves room for a loaded 2-core machine
ELECTION_BOUND_S = NODE_TIMEOUT_MS / 1000 * 2 + 6

ruvio_only = pytest.mark.skipif(REFERENCE, reason="the topology log (Raft) is ruvio's: Redis has no log leader")


@pytest.fixture
def cluster_net():
    yield from mh_fixtures.hosts(HOSTS, need_bin=not REFERENCE)


def client(ip, port, timeout=5):
    return redis.Redis(host=ip, port=port, socket_timeout=timeout, socket_connect_timeout=timeout,
                       decode_responses=True)


def cmd(ip, port, *args):
    c = client(ip, port)
    try:
        return c.execute_command(*args)
    finally:
        c.close()


def info(ip, port):
    text = cmd(ip, port, "CLUSTER", "INFO")
    return dict(line.split(":", 1) for line in text.strip().splitlines() if ":" in line)


def view(ip, port):
    """A node's CLUSTER NODES as comparable lines: id, address, flags (less `myself`), primary, config epoch,
    slots; not the ping/pong times and link state, which differ from node to node."""
    out = []
    for line in cmd(ip, port, "CLUSTER", "NODES").strip().splitlines():
        f = line.split()
        flags = ",".join(x for x in f[2].split(",") if x != "myself")
        out.append(" ".join([f[0], f[1], flags, f[3], f[6]] + f[8:]))
    return sorted(out)


def ruvio_argv(h, d):
    return [examples.RUVIO_BIN, "--shards", len(PORTS), "--cluster-enabled", "yes", "--bind", h.ip,
            "--port", PORTS[0], "--dir", d, "--cluster-node-timeout", NODE_TIMEOUT_MS]


def start_host(net, h):
    """ruvio: one process of two shards on host h, its state in <workdir>/<host>; returns the process once both
    shards answer PING from the host's own namespace."""
    d = os.path.join(net.workdir, h.name)
    os.makedirs(d, exist_ok=True)
    p = h.spawn(ruvio_argv(h, d), log="ruvio-%s" % h.name)

    def up():
        if p.poll() is not None:
            with open(p.log_path, errors="replace") as f:
                raise AssertionError("%s exited with %s:\n%s" % (h, p.returncode, f.read()[-20000:]))
        return all(h.can_reach(h, port) for port in PORTS)
    wait_for(up, timeout=20, what="%s:%s up" % (h.ip, PORTS))
    return p


def start_nodes(net):
    """Returns {(host name, port): proc}: for ruvio both ports of a host map to its one process."""
    procs = {}
    if not REFERENCE:
        for h in net:
            p = start_host(net, h)
            procs.update({(h.name, port): p for port in PORTS})
        return procs
    for h in net:
        for port in PORTS:
            d = os.path.join(net.workdir, "%s-%d" % (h.name, port))
            os.makedirs(d, exist_ok=True)
            procs[(h.name, port)] = h.spawn(
                ["redis-server", "--port", port, "--bind", h.ip, "--protected-mode", "no", "--dir", d,
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", NODE_TIMEOUT_MS, "--save", "", "--appendonly", "no",
                 "--repl-diskless-sync-delay", "0"],
                log="node-%s-%d" % (h.name, port))
    for h in net:
        for port in PORTS:
            wait_for(lambda: h.can_reach(h, port), timeout=10, what="%s:%d up" % (h.ip, port))
    return procs


def processes(net):
    """What became of every node process, with the tail of the log of one that exited (for failure messages)."""
    out = []
    for p in net.procs:
        if p.poll() is None:
            out.append("%s pid %d: running" % (p.host.name, p.pid))
            continue
        with open(p.log_path, errors="replace") as f:
            tail = f.read()[-3000:]
        out.append("%s pid %d: exited with %s; log tail:\n%s" % (p.host.name, p.pid, p.returncode, tail))
    return "\n".join(out)


def create_cluster(net, replicas=REPLICAS):
    addrs = ["%s:%d" % (h.ip, p) for p in PORTS for h in net]   # primaries first: one per host
    t0 = time.monotonic()
    r = net["h0"].run(["timeout", "60", "redis-cli", "--cluster", "create", *addrs, "--cluster-replicas",
                       replicas, "--cluster-yes"], timeout=70)
    assert r.returncode == 0, r.stdout + r.stderr + "\n" + processes(net)
    print("\nredis-cli --cluster create (replicas %d): %.2f s" % (replicas, time.monotonic() - t0))
    r = net["h0"].run(["timeout", "30", "redis-cli", "--cluster", "check", addrs[0]], timeout=40)
    assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout + r.stderr
    assert "[ERR]" not in r.stdout and "[WARNING]" not in r.stdout, r.stdout
    if not REFERENCE and replicas == 0:
        return addrs
    # the replicas' roles reach every node a little after create returns
    wait_for(lambda: sorted(t[2] for t in topology(net).values()) == ["primary"] * 3 + ["replica"] * 3,
             timeout=15, what="three primaries and three replicas in CLUSTER NODES")

    def synced():   # a replica that never finished its first sync may not take over (Redis's validity rule)
        for ip, port, role, _, _ in topology(net).values():
            if role == "replica":
                c = client(ip, port)
                up = c.info("replication").get("master_link_status") == "up"
                c.close()
                if not up:
                    return False
        for h in net:   # (and the cluster up everywhere: a host's write lease may lapse while create commits)
            for p in PORTS:
                if "cluster_state:ok" not in cmd(h.ip, p, "CLUSTER", "INFO"):
                    return False
        return True
    wait_for(synced, timeout=20, what="every replica in sync with its primary and the cluster up")
    return addrs


def topology(net):
    """{node id: (ip, port, role, primary id, [slot ranges])} from CLUSTER NODES of the first node."""
    out = {}
    for line in cmd(net["h0"].ip, PORTS[0], "CLUSTER", "NODES").splitlines():
        f = line.split()
        addr = f[1].split("@")[0]
        ip, port = addr.rsplit(":", 1)
        role = "primary" if "master" in f[2] else "replica"
        out[f[0]] = (ip, int(port), role, f[3], f[8:])
    return out


def slot_count(ranges):
    n = 0
    for r in ranges:
        if r.startswith("["):       # a migrating/importing slot, not an owned one
            continue
        a, _, b = r.partition("-")
        n += int(b or a) - int(a) + 1
    return n


def same_views(hosts):
    """The one CLUSTER NODES view every node of these hosts shows, or None while they differ."""
    views = {(h.name, p): view(h.ip, p) for h in hosts for p in PORTS}
    return next(iter(views.values())) if len(set(map(tuple, views.values()))) == 1 else None


def cluster_client(net):
    return RedisCluster(startup_nodes=[ClusterNode(h.ip, p) for h in net for p in PORTS], socket_timeout=2,
                        socket_connect_timeout=2, decode_responses=True)


def test_create_across_hosts_and_write_through_a_cluster_client(cluster_net):
    start_nodes(cluster_net)
    addrs = create_cluster(cluster_net)
    topo = topology(cluster_net)
    assert len(topo) == 6
    assert sorted("%s:%d" % t[:2] for t in topo.values()) == sorted(addrs)
    assert sum(slot_count(t[4]) for t in topo.values()) == 16384
    primaries = {i: t for i, t in topo.items() if t[2] == "primary"}
    if REFERENCE:
        assert len(primaries) == 3 and len({t[0] for t in primaries.values()}) == 3     # one primary per host
        for i, t in topo.items():
            if t[2] == "replica":
                assert topo[t[3]][0] != t[0], "replica %s on its primary's host" % i  # anti-affinity
    else:
        assert len(primaries) == 6 and all(slot_count(t[4]) > 2000 for t in primaries.values()), topo
        # every node of every host shows the same six nodes, addresses, epochs and slots
        v = wait_for(lambda: same_views(cluster_net), timeout=10, what="one CLUSTER NODES view on all six nodes")
        assert len(v) == 6, v
        for h in cluster_net:
            for p in PORTS:
                i = info(h.ip, p)
                assert i["cluster_state"] == "ok" and i["cluster_known_nodes"] == "6", (h, p, i)
                assert i["cluster_slots_assigned"] == "16384", (h, p, i)
        assert info(cluster_net["h0"].ip, PORTS[0])["topology_log_voters"] == "3"
    rc = cluster_client(cluster_net)
    for i in range(2000):
        rc.set("k%d" % i, i)
    assert all(rc.get("k%d" % i) == str(i) for i in range(2000))
    n = rc.dbsize(target_nodes=RedisCluster.PRIMARIES)
    assert (sum(n.values()) if isinstance(n, dict) else n) == 2000
    rc.close()
    # each primary holds only keys of its own slots, and they add up
    per_node = {i: cmd(t[0], t[1], "DBSIZE") for i, t in primaries.items()}
    assert sum(per_node.values()) == 2000 and all(x > 0 for x in per_node.values()), per_node


def leaders(hosts):
    """Names of the hosts that say they lead the topology log (CLUSTER INFO of their first node)."""
    out = []
    for h in hosts:
        try:
            if info(h.ip, PORTS[0], )["topology_log_leader"] == "1":
                out.append(h.name)
        except (redis.ConnectionError, redis.TimeoutError):
            pass
    return out


def one_leader(hosts):
    ls = leaders(hosts)
    return ls[0] if len(ls) == 1 else None


def epoch(h, port=PORTS[0]):
    return int(info(h.ip, port)["cluster_current_epoch"])


def bump(h):
    """CLUSTER BUMPEPOCH on a node of host h (it must lead the log); returns the new current epoch. As in Redis,
    a node whose config epoch is already the greatest answers STILL: then the host's other node is asked."""
    before = epoch(h)
    replies = []
    for port in PORTS:
        r = cmd(h.ip, port, "CLUSTER", "BUMPEPOCH")
        replies.append(r)
        if r.startswith("BUMPED"):
            assert r == "BUMPED %d" % (before + 1), replies
            return before + 1
        assert r == "STILL %d" % before, replies
    raise AssertionError("no node of %s bumped the epoch: %s" % (h, replies))


def in_ns_info(h):
    """CLUSTER INFO of host h's first node, asked from inside its namespace (h may be cut off the bridge)."""
    r = h.redis_cli(h, PORTS[0], "CLUSTER", "INFO")
    assert r.returncode == 0, r.stdout + r.stderr
    return dict(line.split(":", 1) for line in r.stdout.strip().splitlines() if ":" in line)


@ruvio_only
def test_partition_then_kill9_of_the_log_leader(cluster_net):
    procs = start_nodes(cluster_net)
    create_cluster(cluster_net)
    hosts = list(cluster_net)
    wait_for(lambda: all(info(h.ip, PORTS[0])["topology_log_voters"] == "3" for h in hosts), timeout=20,
             what="three voters on every host")
    lead = cluster_net[wait_for(lambda: one_leader(hosts), timeout=10, what="one leader of the topology log")]
    full = wait_for(lambda: same_views(hosts), timeout=10, what="one CLUSTER NODES view on all six nodes")
    assert len(full) == 6, full

    # 1. a follower host is cut off: the two others keep a leader and commit; the cut-off one cannot
    cut = next(h for h in hosts if h is not lead)
    rest = [h for h in hosts if h is not cut]
    e0 = epoch(lead)
    term0 = int(info(lead.ip, PORTS[0])["topology_log_term"])
    cut.link_down()
    try:
        assert not cluster_net["h0" if cut.name != "h0" else "h1"].can_reach(cut, PORTS[0]), "partition not in place"
        lead2 = cluster_net[wait_for(lambda: one_leader(rest), timeout=ELECTION_BOUND_S,
                                     what="a leader among the two connected hosts")]
        print("\n%s cut off: %s leads (it led before: %s), term %s (was %d)"
              % (cut.name, lead2.name, lead2 is lead, info(lead2.ip, PORTS[0])["topology_log_term"], term0))
        e1 = bump(lead2)
        e2 = bump(lead2)
        for h in rest:
            for p in PORTS:
                wait_for(lambda: int(info(h.ip, p)["cluster_current_epoch"]) == e2, timeout=10,
                         what="epoch %d on %s:%d" % (e2, h.ip, p))
        # the cut-off host still runs, follows no leader and has not seen the new epochs
        ci = in_ns_info(cut)
        assert ci["topology_log_leader"] == "0" and int(ci["cluster_current_epoch"]) == e0, ci
        r = cut.redis_cli(cut, PORTS[0], "CLUSTER", "BUMPEPOCH")
        assert "CLUSTERDOWN" in r.stdout + r.stderr, r.stdout + r.stderr   # not a leader: refused, not hung
        # its lease ran out: its cluster is down, as a Redis node's in a minority, and keyed reads are refused
        wait_for(lambda: in_ns_info(cut)["cluster_state"] == "fail", timeout=10, what="cluster_state:fail cut off")
        r = cut.redis_cli(cut, PORTS[0], "GET", "somekey")
        assert "CLUSTERDOWN The cluster is down" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        cut.link_up()
    assert e1 == e0 + 1
    # healed: the cut-off host catches up, and still only one host leads
    for p in PORTS:
        wait_for(lambda: epoch(cut, p) == e2, timeout=20, what="%s:%d catching up to epoch %d" % (cut.ip, p, e2))
    # (one sample of all three hosts: a second one, of the two, raced with the cut host's nodes' fail flags
    # being cleared once they answer again, and saw the views in flux)
    assert wait_for(lambda: same_views(hosts), timeout=10, what="one view after healing")
    healed = cluster_net[wait_for(lambda: one_leader(hosts), timeout=ELECTION_BOUND_S, what="one leader after healing")]
    print("healed: %s leads, term %s" % (healed.name, info(healed.ip, PORTS[0])["topology_log_term"]))

    # 2. kill -9 of the log leader's process: another host leads within the bound
    lead = healed
    rest = [h for h in hosts if h is not lead]
    cluster_net.kill9(procs[(lead.name, PORTS[0])])
    t0 = time.monotonic()       # the process is gone (reaped)
    new = cluster_net[wait_for(lambda: one_leader(rest), timeout=ELECTION_BOUND_S, interval=0.02,
                               what="a new leader of the topology log")]
    took = time.monotonic() - t0
    print("\nnew topology log leader %s %.2f s after kill -9 of %s (node timeout %d ms, bound %.0f s)"
          % (new.name, took, lead.name, NODE_TIMEOUT_MS, ELECTION_BOUND_S))
    info_new = info(new.ip, PORTS[0])
    assert info_new["cluster_known_nodes"] == "6" and int(info_new["topology_log_term"]) > 0
    e3 = bump(new)
    for h in rest:
        for p in PORTS:
            wait_for(lambda: int(info(h.ip, p)["cluster_current_epoch"]) == e3, timeout=10,
                     what="epoch %d on %s:%d" % (e3, h.ip, p))

    # 3. the killed process restarted from its dir: the same nodes, a follower, caught up
    p = start_host(cluster_net, lead)
    procs.update({(lead.name, port): p for port in PORTS})
    for port in PORTS:
        wait_for(lambda: epoch(lead, port) == e3, timeout=20, what="%s:%d catching up" % (lead.ip, port))
    assert wait_for(lambda: same_views(hosts), timeout=10, what="one view after the restart") == same_views(rest)
    assert sorted(l.split()[0] for l in same_views(hosts)) == sorted(l.split()[0] for l in full)  # same node ids
    i = info(lead.ip, PORTS[0])
    assert i["topology_log_leader"] == "0" and i["cluster_state"] == "ok" and i["topology_log_voters"] == "3", i
    assert leaders(hosts) == [new.name]
    # and the cluster serves every slot again (the restarted host's shards start empty: durability memory)
    rc = cluster_client(cluster_net)
    for k in range(500):
        rc.set("after%d" % k, k)
    assert all(rc.get("after%d" % k) == str(k) for k in range(500))
    rc.close()


def test_two_hosts_meet_the_first_at_once(cluster_net):
    """What redis-cli does, but the two other hosts' MEETs sent at the same time (Redis accepts MEETs in any
    order): all six nodes end up with one view (and, for ruvio, three voters of the topology log)."""
    start_nodes(cluster_net)
    nodes = [(h, p) for p in PORTS for h in cluster_net]
    for i, (h, p) in enumerate(nodes):
        assert cmd(h.ip, p, "CLUSTER", "ADDSLOTSRANGE", i * 16384 // 6, (i + 1) * 16384 // 6 - 1) == "OK"
        assert cmd(h.ip, p, "CLUSTER", "SET-CONFIG-EPOCH", i + 1) == "OK"
    h0 = cluster_net["h0"]
    replies = {}

    def meet(h):
        c = client(h.ip, PORTS[0], timeout=30)
        try:
            replies[h.name] = c.execute_command("CLUSTER", "MEET", h0.ip, PORTS[0])
        except redis.RedisError as e:
            replies[h.name] = repr(e)
        finally:
            c.close()
    threads = [threading.Thread(target=meet, args=(cluster_net[n],), daemon=True) for n in ("h1", "h2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(35)
    assert replies == {"h1": "OK", "h2": "OK"}, "%s\n%s" % (replies, processes(cluster_net))
    if REFERENCE:   # the other nodes of a host meet through gossip
        for h, p in nodes[1:]:
            cmd(h.ip, p, "CLUSTER", "MEET", h0.ip, PORTS[0])
    v = wait_for(lambda: same_views(cluster_net), timeout=15, what="one CLUSTER NODES view on all six nodes")
    assert len(v) == 6, v
    if not REFERENCE:
        wait_for(lambda: info(h0.ip, PORTS[0])["topology_log_voters"] == "3", timeout=10, what="three voters")


def test_primary_kill9_failover_window(cluster_net):
    """Both: replicas on other hosts (--cluster-replicas 1), a writer on one primary's slots through a cluster
    client, kill -9 of that primary's process; the window in which its slots took no writes is printed. For
    ruvio the process is a whole host (its other node, a replica, goes too), and the log's leader (h0) fails the
    primary over after cluster-node-timeout."""
    procs = start_nodes(cluster_net)
    create_cluster(cluster_net, replicas=1)
    topo = topology(cluster_net)
    victim_id, (vip, vport, _, _, slots) = next((i, t) for i, t in topo.items()
                                                if t[2] == "primary" and t[0] != cluster_net["h0"].ip)
    first = int(slots[0].split("-")[0])
    c0 = client(cluster_net["h0"].ip, PORTS[0])
    key = next(k for k in ("fk%d" % i for i in range(100000)) if c0.execute_command("CLUSTER", "KEYSLOT", k) == first)
    c0.close()
    stop = threading.Event()
    ok_times, lock, errors = [], threading.Lock(), []

    def writer():
        rc = cluster_client(cluster_net)
        i = 0
        while not stop.is_set():
            try:
                rc.set(key, i)
                with lock:
                    ok_times.append(time.monotonic())
                i += 1
            except (redis.exceptions.RedisError, OSError) as e:
                errors.append(repr(e)[:200])
                time.sleep(0.02)
                try:                        # a fresh client asks the live nodes for the slots again
                    rc.close()
                    rc = cluster_client(cluster_net)
                except (redis.exceptions.RedisError, OSError):
                    pass
            time.sleep(0.005)
        rc.close()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    wait_for(lambda: len(ok_times) > 20, timeout=10, what="writes flowing")
    host = next(h for h in cluster_net if h.ip == vip)
    cluster_net.kill9(procs[(host.name, vport)])
    t0 = time.monotonic()   # the process is gone (reaped): a write that succeeds from here went to another node
    bound = NODE_TIMEOUT_MS / 1000 * 2 + 10
    try:
        wait_for(lambda: any(x > t0 + 0.05 for x in ok_times), timeout=bound,
                 what="writes to the killed primary's slots succeed again")
    finally:
        print("\nafter the kill:", {i: t[:4] for i, t in topology(cluster_net).items()}, errors[-3:])
    stop.set()
    t.join(10)
    with lock:
        before = max(x for x in ok_times if x <= t0)
        after = min(x for x in ok_times if x > t0)
    window = after - before
    print("\nfailover window (kill -9 of a primary, node timeout %d ms): %.2f s" % (NODE_TIMEOUT_MS, window))
    topo2 = topology(cluster_net)
    promoted = [i for i, tt in topo2.items() if tt[2] == "primary" and tt[4] and tt[4][0] == slots[0]]
    assert promoted and promoted[0] != victim_id, "no replica took the killed primary's slots"
    assert window < bound


@pytest.fixture
def cluster_net4():
    yield from mh_fixtures.hosts(HOSTS + ("h3",), need_bin=True)


def redis_cli(net, *args, timeout=60):
    r = net["h0"].run(["timeout", str(timeout), "redis-cli", "--cluster", *args], timeout=timeout + 10)
    return r.returncode, r.stdout + r.stderr


@ruvio_only
def test_del_node_and_a_voter_replaced(cluster_net4):
    """Three voter hosts (create with replicas) and a fourth that joins as a learner (add-node; its second node made a
    replica). del-node of that replica, with redis-cli unchanged: every other node answers its FORGET, and
    the node, reset, knows only itself. Then a voter host is killed for good: its primary is failed over, its
    nodes are forgotten (CLUSTER FORGET on every live node: redis-cli cannot reach a dead node), the log's leader
    removes the host from the log's servers and makes the learner host a voter, so that with one of the two old
    voters cut off the log still commits (the new voter's vote counts). Last, the fourth host's nodes are all
    deleted and the host stopped: it leaves the log's servers too."""
    net = cluster_net4
    first3 = [net[n] for n in HOSTS]
    procs = {}
    for h in first3:
        p = start_host(net, h)
        procs.update({(h.name, port): p for port in PORTS})
    addrs = ["%s:%d" % (h.ip, p) for p in PORTS for h in first3]
    rc, out = redis_cli(net, "create", *addrs, "--cluster-replicas", "1", "--cluster-yes")
    assert rc == 0 and "[OK] All 16384 slots covered." in out, out
    h0, h3 = net["h0"], net["h3"]
    wait_for(lambda: info(h0.ip, PORTS[0])["topology_log_voters"] == "3", timeout=20, what="three voters")
    p3 = start_host(net, h3)
    procs.update({(h3.name, port): p3 for port in PORTS})
    rc, out = redis_cli(net, "add-node", "%s:%d" % (h3.ip, PORTS[0]), "%s:%d" % (h0.ip, PORTS[0]))
    assert rc == 0, out
    # (add-node brings in the whole host: its second node is known already, and made a replica directly)
    assert cmd(h3.ip, PORTS[1], "CLUSTER", "REPLICATE", cmd(h0.ip, PORTS[0], "CLUSTER", "MYID")) == "OK"
    wait_for(lambda: info(h0.ip, PORTS[0])["topology_log_learners"] == "1", timeout=20, what="h3 a learner")
    wait_for(lambda: len(same_views(net) or []) == 8, timeout=20, what="one view of eight nodes")

    # del-node of h3's replica
    rid = cmd(h3.ip, PORTS[1], "CLUSTER", "MYID")
    rc, out = redis_cli(net, "del-node", "%s:%d" % (h0.ip, PORTS[0]), rid)
    assert rc == 0 and "[ERR]" not in out, out
    for h in net:
        for p in PORTS:
            if (h, p) != (h3, PORTS[1]):
                wait_for(lambda: rid not in cmd(h.ip, p, "CLUSTER", "NODES"), timeout=10,
                         what="%s:%d forgot the deleted node" % (h.ip, p))
    assert info(h3.ip, PORTS[1])["cluster_known_nodes"] == "1"
    assert cmd(h3.ip, PORTS[1], "ROLE")[0] == "master" and cmd(h3.ip, PORTS[1], "DBSIZE") == 0
    assert info(h0.ip, PORTS[0])["topology_log_learners"] == "1"   # h3 still has a node: still a server

    # a voter host killed for good (not the log's leader, which keeps things simple to follow)
    lead = net[wait_for(lambda: one_leader(first3), timeout=10, what="one leader")]
    dead = next(h for h in first3 if h is not lead)
    topo = topology(net)
    dead_ids = [i for i, t in topo.items() if t[0] == dead.ip]
    net.kill9(procs[(dead.name, PORTS[0])])
    live = [h for h in net if h is not dead]
    wait_for(lambda: all(t[2] == "replica" or not t[4] for i, t in topology(net).items() if i in dead_ids),
             timeout=NODE_TIMEOUT_MS / 1000 * 2 + 10, what="the dead host's primary failed over")
    for i in dead_ids:
        for h in live:
            for p in PORTS:
                if (h, p) != (h3, PORTS[1]):   # (the reset node knows only itself)
                    assert cmd(h.ip, p, "CLUSTER", "FORGET", i) == "OK", (h, p, i)
    t0 = time.monotonic()

    def replaced():
        i = info(lead.ip, PORTS[0])
        return i["topology_log_voters"] == "3" and i["topology_log_learners"] == "0" and i
    i = wait_for(replaced, timeout=NODE_TIMEOUT_MS / 1000 * 3 + 20, what="h3 a voter in the dead host's place")
    print("\nvoter replaced %.2f s after its nodes were forgotten: %s" % (time.monotonic() - t0, i))
    assert i["cluster_known_nodes"] == "5" and i["cluster_state"] == "ok", i   # 8, less the reset one and 2 dead
    rc, out = redis_cli(net, "check", "%s:%d" % (lead.ip, PORTS[0]))
    assert rc == 0 and "[OK] All 16384 slots covered." in out and "[ERR]" not in out, out

    # the new voter's vote counts: one old voter cut off, the leader and h3 still commit
    others = [h for h in first3 if h is not dead]
    cut = next(h for h in others if h is not lead)
    cut.link_down()
    try:
        wait_for(lambda: one_leader([lead, h3]), timeout=ELECTION_BOUND_S, what="a leader among the old leader and h3")
        before = epoch(h3)
        # h3's first node (added empty, config epoch 0) is not the greatest: BUMPED, committed through the leader
        assert cmd(h3.ip, PORTS[0], "CLUSTER", "BUMPEPOCH") == "BUMPED %d" % (before + 1)
        e = before + 1
        wait_for(lambda: epoch(h3) == e and epoch(lead) == e, timeout=10, what="the change on both voters")
    finally:
        cut.link_up()
    wait_for(lambda: epoch(cut) == e, timeout=20, what="the cut-off host catching up")

    # h3 leaves for good: its other node deleted too (all its nodes reset), then the host stopped; the leader
    # removes it from the log's servers, and the two voters left keep committing
    mid = cmd(h3.ip, PORTS[0], "CLUSTER", "MYID")
    rc, out = redis_cli(net, "del-node", "%s:%d" % (h0.ip, PORTS[0]), mid)
    assert rc == 0 and "[ERR]" not in out, out
    net.kill9(procs[(h3.name, PORTS[0])])
    olds = [lead, cut]
    wait_for(lambda: all(info(h.ip, PORTS[0])["topology_log_voters"] == "2" for h in olds),
             timeout=NODE_TIMEOUT_MS / 1000 * 3 + 20, what="h3 removed from the log's servers")
    now_lead = net[wait_for(lambda: one_leader(olds), timeout=ELECTION_BOUND_S, what="a leader of the two")]
    e2 = bump(now_lead)
    wait_for(lambda: all(epoch(h) == e2 for h in olds), timeout=10, what="committed by the two voters left")
    assert all(info(h.ip, PORTS[0])["cluster_known_nodes"] == "4" for h in olds)

