"""The three-host harness itself (issue 5): ruvio started from deploy/examples in three network namespaces,
reachable from each other, partitions that block traffic and heal, sentinels from deploy/examples, and
cleanup that leaves nothing behind."""

import os
import shutil
import subprocess

import pytest
import redis

import examples
import netns
from mh_fixtures import example_nodes, net, sentinels  # noqa: F401 (pytest fixtures)
from ruviotest.wait import wait_durable, wait_for  # (mh_fixtures put tests/pylib on the path)


def test_examples_start_and_reach_each_other(net, example_nodes):
    nodes = example_nodes()
    for n in nodes.values():
        assert n.client().ping()
    for a in net:
        for b in net:
            if a is not b:
                assert a.can_reach(b, examples.PORT, password=examples.PASSWORD), "%s -> %s" % (a, b)
    # the examples require the password
    r = net["replica1"].redis_cli(net["primary"], examples.PORT, "PING")
    assert "NOAUTH" in r.stdout + r.stderr
    # and redis-py inside a namespace works too (what a client on that host would run)
    code = ("import redis; c = redis.Redis(host=%r, port=%d, password=%r, socket_timeout=5); "
            "c.set('from-replica2', 'x'); print(c.get('from-replica2').decode())"
            % (net["primary"].ip, examples.PORT, examples.PASSWORD))
    r = net["replica2"].python(code)
    assert r.returncode == 0 and r.stdout.strip() == "x", r.stderr
    assert nodes["primary"].client().get("from-replica2") == "x"
    # a node listens on its host's address only (and loopback): the test process reaches it via the bridge
    assert nodes["replica2"].client().config_get("bind")["bind"] == "%s 127.0.0.1" % net["replica2"].ip


def test_partition_blocks_and_heal_restores(net, example_nodes):
    nodes = example_nodes()
    p, r1, r2 = net["primary"], net["replica1"], net["replica2"]
    c2 = nodes["replica2"].client(socket_timeout=1, socket_connect_timeout=1)
    assert c2.ping()
    r2.link_down()
    try:
        assert not p.can_reach(r2, examples.PORT, password=examples.PASSWORD, timeout=2)
        assert not r1.can_reach(r2, examples.PORT, password=examples.PASSWORD, timeout=2)
        assert not r2.can_reach(p, examples.PORT, password=examples.PASSWORD, timeout=2)
        with pytest.raises(redis.exceptions.RedisError):
            c2.ping()
        # the rest of the network is unaffected
        assert p.can_reach(r1, examples.PORT, password=examples.PASSWORD)
        assert nodes["replica2"].proc.poll() is None       # the partitioned node keeps running
    finally:
        r2.link_up()
    wait_for(lambda: p.can_reach(r2, examples.PORT, password=examples.PASSWORD), timeout=15,
             what="primary reaching replica2 after the heal")
    assert r2.can_reach(p, examples.PORT, password=examples.PASSWORD)
    assert nodes["replica2"].client().ping()


def test_kill9_and_restart_a_node(net, example_nodes):
    nodes = example_nodes()
    n = nodes["primary"]             # writable whether or not the replicas follow it
    c = n.client()
    c.set("k", "v")
    wait_durable(c)                    # durability everysec: the record is synced within a second
    n.kill9()
    assert not net["replica1"].can_reach(net["primary"], examples.PORT, password=examples.PASSWORD)
    n.start()
    assert n.client().get("k") == "v"


def test_sentinels_monitor_the_primary(net, example_nodes, sentinels):
    nodes = example_nodes()
    sents = sentinels()
    for h, proc, c in sents:
        assert c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "ruvio-main") == \
            [net["primary"].ip, str(examples.PORT)]
    # the sentinels find each other through the hello channel on the Ruvio primary (PUBLISH/SUBSCRIBE)
    def all_know_two():
        try:
            return all(len(c.execute_command("SENTINEL", "SENTINELS", "ruvio-main")) == 2 for _, _, c in sents)
        except redis.exceptions.RedisError:
            return False
    wait_for(all_know_two, timeout=30, interval=0.5, what="every sentinel seeing the other two")
    flags = dict(zip(*[iter(sents[0][2].execute_command("SENTINEL", "MASTER", "ruvio-main"))] * 2))["flags"]
    assert flags == "master", flags           # not s_down / o_down: INFO, PING and AUTH work for Sentinel


def test_role_change_hook_moves_a_vip(net, example_nodes):
    """deploy/examples/on-role-change.sh as on_role_change: the VIP follows the primary role."""
    vip = str(net.subnet.network_address + 100)
    envfile = os.path.join(net.workdir, "vip.env")
    with open(envfile, "w") as f:
        f.write("RUVIO_VIP=%s/%d\nRUVIO_VIP_DEV=eth0\n" % (vip, net.subnet.prefixlen))
    nodes = example_nodes(start=False)
    for n in nodes.values():
        # the node listens on the VIP before it holds it (what docs/deploy.md prescribes)
        n.host.run(["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_nonlocal_bind"], check=True)
        n.extra += ["--on_role_change", str(examples.EXAMPLES / "on-role-change.sh"),
                    "--bind", n.ip, "127.0.0.1", vip]
        n.env = dict(os.environ, RUVIO_VIP_ENV=envfile)
        n.start()

    def holds_vip(h):
        return (" %s/" % vip) in h.run(["ip", "-4", "addr", "show", "dev", "eth0"]).stdout

    def via_vip(client_host):
        """The name of the node answering on the VIP (told apart by its own address in `bind`)."""
        client_host.run(["ip", "neigh", "flush", "all"])       # no gratuitous ARP here (no arping)
        r = client_host.redis_cli(vip, examples.PORT, "CONFIG", "GET", "bind", password=examples.PASSWORD,
                                  timeout=2)
        words = r.stdout.split()
        return next((h.name for h in net if len(words) > 1 and words[1] == h.ip), None)

    p, r1, r2 = net["primary"], net["replica1"], net["replica2"]
    nodes["primary"].client().execute_command("DEBUG", "ROLE-CHANGE-HOOK", "slave", "master", 1, p.ip, 6379)
    wait_for(lambda: holds_vip(p), timeout=10, what="the primary taking the VIP")
    wait_for(lambda: via_vip(r2) == "primary", timeout=10, what="the VIP answering from the primary")

    # failover: the old primary is demoted, replica1 promoted; the VIP moves with the role
    nodes["primary"].client().execute_command("DEBUG", "ROLE-CHANGE-HOOK", "master", "slave", 2, r1.ip, 6379)
    nodes["replica1"].client().execute_command("DEBUG", "ROLE-CHANGE-HOOK", "slave", "master", 2, r1.ip, 6379)
    wait_for(lambda: holds_vip(r1) and not holds_vip(p), timeout=10, what="the VIP moving to replica1")
    wait_for(lambda: via_vip(r2) == "replica1", timeout=10, what="the VIP answering from replica1")
    assert "VIP %s/%d taken on eth0" % (vip, net.subnet.prefixlen) in nodes["replica1"].log()
    assert "exited with status 0" in nodes["primary"].log()


def test_cleanup_leaves_nothing():
    why = netns.unavailable()
    if why:
        pytest.skip(why)
    n = netns.Net.create(["a", "b"])
    p = n["a"].spawn(["sleep", "300"])
    inner = n["b"].spawn(["sh", "-c", "sleep 300 & sleep 300"])
    assert n.leftovers()
    n.close()
    assert p.poll() is not None and inner.poll() is not None
    assert n.leftovers() == []
    n.close()                                   # idempotent
    shutil.rmtree(n.workdir, ignore_errors=True)

    # a run that died without cleaning up: its namespaces are removed by the next cleanup_stale()
    dead = subprocess.Popen(["true"])
    dead.wait(timeout=10)
    stale = "%s-%d-0badc0-0" % (netns.PREFIX, dead.pid)
    subprocess.run(["ip", "netns", "add", stale], check=True, timeout=10)
    try:
        assert stale in netns.cleanup_stale()
    finally:
        subprocess.run(["ip", "netns", "del", stale], timeout=10, stderr=subprocess.DEVNULL)
    assert stale not in subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True,
                                       timeout=10).stdout
