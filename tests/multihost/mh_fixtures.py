"""Fixtures for multi-host tests (see README.md): `net` (three namespaces on a bridge), `example_nodes` (ruvio
started from deploy/examples in each), `sentinels` (redis-sentinel from deploy/examples in each).

A test file imports them: `from mh_fixtures import net, example_nodes, sentinels  # noqa: F401`. (Not a
conftest.py: tests/integ's conftest is imported as `conftest` by its tests, and two would clash when pytest
collects both folders in one run.)"""

import os
import shutil
import sys

import pytest
import redis

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

import examples  # noqa: E402
import netns  # noqa: E402
from ruviotest.wait import wait_for  # noqa: E402

CLIENT_TIMEOUT = 20      # above the WAIT timeouts below: sanitizer builds on 2 cores catch up slowly


def hosts(names, need_bin=True):
    """A fixture's body: namespaces `names` on one bridge (netns.Net), removed at teardown and checked gone;
    skipped where namespaces are unavailable, failed when the ruvio binary is missing (need_bin)."""
    why = netns.unavailable()
    if why:
        pytest.skip(why)
    if need_bin and not os.path.exists(examples.RUVIO_BIN):
        pytest.fail("ruvio binary not found at %s (set RUVIO_BIN or build it)" % examples.RUVIO_BIN)
    n = netns.Net.create(names)
    try:
        yield n
    finally:
        n.close()
        left = n.leftovers()
        shutil.rmtree(n.workdir, ignore_errors=True)
        assert not left, "namespaces/links left behind: %s" % left


class Node:
    """One ruvio process on one host."""

    def __init__(self, net, host, conf_path, datadir, extra):
        self.net = net
        self.host = host
        self.name = host.name
        self.ip = host.ip
        self.port = examples.PORT
        self.password = examples.PASSWORD
        self.conf_path = conf_path
        self.datadir = datadir
        self.extra = list(extra)
        self.env = None            # environment of the process (None: the test's)
        self.proc = None

    def __repr__(self):
        return "Node(%s %s:%d)" % (self.name, self.ip, self.port)

    def start(self, wait=True):
        self.proc = self.host.spawn(examples.node_argv(self.conf_path, self.datadir, *self.extra),
                                    log="ruvio-%s" % self.name, env=self.env)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=15):
        def up():
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %s:\n%s" % (self, self.proc.returncode, self.log()[-20000:]))
            try:
                c = self.client(socket_timeout=1, socket_connect_timeout=1)
                ok = c.ping()
                c.close()
                return ok
            except redis.exceptions.RedisError:
                return False
        wait_for(up, timeout=timeout, what="%s answering PING" % self)

    def client(self, **kw):
        """redis-py client from the test process (through the bridge), authenticated."""
        kw.setdefault("socket_timeout", CLIENT_TIMEOUT)
        kw.setdefault("socket_connect_timeout", CLIENT_TIMEOUT)
        kw.setdefault("decode_responses", True)
        return redis.Redis(host=self.ip, port=self.port, password=self.password, **kw)

    def stop(self):
        if self.proc is not None:
            return self.net.stop(self.proc)

    def kill9(self):
        self.net.kill9(self.proc)

    def log(self):
        try:
            with open(self.proc.log_path, errors="replace") as f:
                return f.read()
        except (OSError, AttributeError):
            return ""


@pytest.fixture
def net():
    """Three hosts `primary`, `replica1`, `replica2` (netns.Net); everything is removed at teardown."""
    yield from hosts(examples.NODES)


@pytest.fixture
def example_nodes(net):
    """Factory: example_nodes(*extra_flags, start=True) -> {name: Node}, one ruvio per host started from
    deploy/examples/<name>.conf with the hosts' addresses substituted."""
    def make(*extra, start=True):
        toks = examples.tokens({h.name: h.ip for h in net})
        nodes = {}
        for h in net:
            d = os.path.join(net.workdir, h.name)
            os.makedirs(os.path.join(d, "data"), exist_ok=True)
            text = examples.node_config(h.name, toks)
            conf = os.path.join(d, "ruvio.conf")
            with open(conf, "w") as f:
                f.write(text)
            nodes[h.name] = Node(net, h, conf, os.path.join(d, "data"), extra)
        if start:
            for node in nodes.values():
                node.start(wait=False)
            for node in nodes.values():
                node.wait_ready()
        return nodes
    return make


@pytest.fixture
def sentinels(net):
    """Factory: sentinels() -> [host, proc, client] x 3: redis-sentinel from deploy/examples/sentinel<i>.conf on
    host i (primary, replica1, replica2). Start the nodes first."""
    binary = shutil.which("redis-sentinel") or "/usr/bin/redis-sentinel"
    if not os.path.exists(binary):
        pytest.skip("redis-sentinel is not installed (scripts/deps.sh test)")

    def make():
        toks = examples.tokens({h.name: h.ip for h in net})
        out = []
        for i, h in enumerate(net, start=1):
            d = os.path.join(net.workdir, "sentinel%d" % i)
            os.makedirs(d, exist_ok=True)
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w") as f:
                f.write(examples.sentinel_config(i, toks))
            p = h.spawn([binary, conf, "--dir", d, "--logfile", ""], log="sentinel%d" % i)
            c = redis.Redis(host=h.ip, port=examples.SENTINEL_PORT, socket_timeout=CLIENT_TIMEOUT,
                            socket_connect_timeout=CLIENT_TIMEOUT, decode_responses=True)
            out.append((h, p, c))

        def up(c=None):
            try:
                return all(x[2].ping() for x in out)
            except redis.exceptions.RedisError:
                return False
        wait_for(up, timeout=15, what="three sentinels answering PING")
        return out
    return make
