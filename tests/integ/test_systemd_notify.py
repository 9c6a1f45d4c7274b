"""sd_notify (deploy/ruvio.service is Type=notify): READY=1 only once recovery finished and every shard
port answers, STATUS= while loading, STOPPING=1 on shutdown; nothing without $NOTIFY_SOCKET."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import HOST, RUVIO_BIN, _ping_once, free_ports, poll_until

pytestmark = pytest.mark.ruvio_only


class Notify:
    """An AF_UNIX datagram socket standing in for systemd's notify socket."""

    def __init__(self, d):
        self.path = os.path.join(d, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.msgs = []

    def until(self, field, timeout=20):
        """Read datagrams until one holds `field` (e.g. READY=1); returns that datagram's lines."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s within %ss; got %r" % (field, timeout, self.msgs))
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            lines = data.split("\n")
            self.msgs.append(lines)
            if field in lines:
                return lines

    def close(self):
        self.sock.close()


@pytest.fixture
def env():
    d = tempfile.mkdtemp(prefix="ruvio-notify-")
    procs = []
    n = Notify(d)

    def start(*args, notify=True, shards=1):
        port = free_ports(shards) if shards > 1 else free_ports(1)
        e = os.environ.copy()
        e.pop("NOTIFY_SOCKET", None)
        if notify:
            e["NOTIFY_SOCKET"] = n.path
        argv = [RUVIO_BIN, "--port", str(port), "--bind", HOST, "--dir", os.path.join(d, "data"),
                "--shards", str(shards)] + [str(a) for a in args]
        err = open(os.path.join(d, "stderr-%d" % len(procs)), "wb")
        p = subprocess.Popen(argv, env=e, stdout=err, stderr=err, stdin=subprocess.DEVNULL)
        err.close()
        procs.append(p)
        return p, port

    start.notify = n
    start.dir = d
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=5)
    n.close()
    shutil.rmtree(d, ignore_errors=True)


def test_ready_only_when_every_port_answers(env):
    p, port = env(shards=3)
    ready = env.notify.until("READY=1")
    # at READY time every shard port already answers (no retries: one PING each)
    for i in range(3):
        assert _ping_once(HOST, port + i, timeout=2.0), "shard %d not answering at READY" % i
    assert any(l.startswith("STATUS=Ready") for l in ready)
    assert "MAINPID=%d" % p.pid in ready
    loading = [m for m in env.notify.msgs if "STATUS=Loading shard 1/3" in m]
    assert loading and env.notify.msgs.index(loading[0]) < len(env.notify.msgs) - 1
    p.send_signal(signal.SIGTERM)
    stopping = env.notify.until("STOPPING=1")
    assert "STATUS=Shutting down" in stopping
    assert p.wait(timeout=15) == 0


def test_ready_after_loading_the_data(env):
    n = 60000
    p, port = env("--durability", "everysec", notify=False)
    poll_until(lambda: _ping_once(HOST, port), timeout=10, what="PING answered")
    c = redis.Redis(host=HOST, port=port, socket_timeout=30)
    for start in range(0, n, 5000):
        pipe = c.pipeline(transaction=False)
        for i in range(start, start + 5000):
            pipe.set("key:%d" % i, "v" * 64)
        pipe.execute()
    c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=20) == 0
    assert env.notify.msgs == []           # notify=False: that run never wrote to the socket

    p2, port2 = env("--durability", "everysec")
    env.notify.until("READY=1")
    # nothing of the recovery is left to do once READY came: the whole keyspace is there
    c = redis.Redis(host=HOST, port=port2, socket_timeout=10)
    assert c.dbsize() == n
    assert c.info("persistence")["loading"] == 0
    statuses = [l for m in env.notify.msgs for l in m if l.startswith("STATUS=")]
    assert statuses[0] == "STATUS=Loading shard 1/1"
    c.close()


def test_supervised_no_and_no_socket(env):
    p, port = env("--supervised", "no")
    poll_until(lambda: _ping_once(HOST, port), timeout=10, what="PING answered")
    env.notify.sock.settimeout(0.3)
    with pytest.raises(socket.timeout):
        env.notify.sock.recv(4096)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=15) == 0
    # without NOTIFY_SOCKET the node starts and stops as usual (sd_notify is a no-op)
    p2, port2 = env(notify=False)
    poll_until(lambda: _ping_once(HOST, port2), timeout=10, what="PING answered")
    p2.send_signal(signal.SIGTERM)
    assert p2.wait(timeout=15) == 0
