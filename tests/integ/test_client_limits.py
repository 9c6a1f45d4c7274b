"""Client limits and bad actors: client-output-buffer-limit (normal and pubsub classes, hard and soft), maxclients,
timeout and TCP keepalive. A client that floods without reading is closed at its limit while the shard keeps
answering everyone else quickly."""

import re
import socket
import subprocess
import threading
import time

import pytest

from conftest import IS_REDIS, encode_command, poll_until

MAXCLIENTS_ERR = b"-ERR max number of clients reached\r\n"


def info_stats(c):
    return c.info("stats")


def _flood_without_reading(host, port, payload, rcvbuf=4096):
    """Connect with a tiny receive buffer, send payload from a thread (the server may close on us), never read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect((host, port))
    result = {}

    def send():
        try:
            s.sendall(payload)
            result["sent"] = True
        except OSError as e:            # closed by the server mid-send: what we expect
            result["error"] = e

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return s, t, result


def _gone_from_client_list(r, s, timeout=20):
    """Wait, without reading from s (reading would drain its backlog), until the server dropped it."""
    me = "%s:%d" % s.getsockname()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(c["addr"] != me for c in r.client_list()):
            return True
        time.sleep(0.05)
    return False


def _closed_by_server(s, timeout=10):
    """Drain what the server sent; True once it closed the connection (EOF or reset)."""
    s.settimeout(0.5)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not s.recv(1 << 20):
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, OSError):
            return True
    return False


# PING with a 200-byte message: 100,000 of them are ~21 MB of replies, far more than the kernel's socket buffers
# (up to 4 MB on loopback) can hide, so the server's own output buffer has to grow.
FLOOD = encode_command("PING", "x" * 200)


def _ping_latencies(client, stop, out):
    while not stop.is_set():
        t0 = time.perf_counter()
        assert client.ping() is True
        out.append(time.perf_counter() - t0)


def test_unread_ping_flood_is_closed_at_the_normal_hard_limit(start_server):
    srv = start_server("--client-output-buffer-limit", "normal 256kb 128kb 60")
    r = srv.client()
    lat = []
    stop = threading.Event()
    pinger = threading.Thread(target=_ping_latencies, args=(srv.client(), stop, lat), daemon=True)
    pinger.start()
    poll_until(lambda: lat, what="the pinger's first PING")
    before = int(info_stats(r)["client_output_buffer_limit_disconnections"]) if not IS_REDIS else 0
    s, t, res = _flood_without_reading(srv.host, srv.port, FLOOD * 100_000)
    try:
        assert _gone_from_client_list(r, s), "the flooding client was never disconnected"
        assert _closed_by_server(s, timeout=10)
        t.join(10)
        time.sleep(0.2)
    finally:
        stop.set()
        pinger.join(10)
        s.close()
    if not IS_REDIS:
        after = int(info_stats(r)["client_output_buffer_limit_disconnections"])
        assert after == before + 1
    # the shard stayed responsive for the other client all along
    assert len(lat) >= 20
    lat.sort()
    p99 = lat[int(len(lat) * 0.99) - 1]
    print("ping samples=%d p99=%.2fms" % (len(lat), p99 * 1000))
    assert p99 < 0.050, "PING p99 %.1f ms while a client flooded the shard" % (p99 * 1000)
    assert r.ping() is True


def test_normal_soft_limit_needs_its_seconds(start_server):
    srv = start_server("--client-output-buffer-limit", "normal 0 64kb 1")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect((srv.host, srv.port))
    try:
        s.sendall(FLOOD * 40_000)                      # ~8 MB of replies: over the soft limit
        time.sleep(0.3)
        s.sendall(encode_command("PING"))              # still within its second: not closed
        time.sleep(0.2)
        r = srv.client()
        assert len(r.client_list()) == 2
        time.sleep(1.2)
        try:
            s.sendall(encode_command("PING") * 10)     # over the soft limit for more than 1 s now
        except OSError:
            pass
        assert _gone_from_client_list(r, s, timeout=10)
        assert _closed_by_server(s, timeout=10)
    finally:
        s.close()


def test_pubsub_subscriber_that_never_reads_is_closed(start_server):
    srv = start_server("--client-output-buffer-limit", "pubsub 256kb 64kb 60")
    sub = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.settimeout(10)
    sub.connect((srv.host, srv.port))
    sub.sendall(encode_command("SUBSCRIBE", "news"))
    r = srv.client()
    poll_until(lambda: r.pubsub_numsub("news")[0][1] == 1, what="subscription")
    lat = []
    msg = "x" * 1024
    deadline = time.monotonic() + 20
    receivers = 1
    while receivers and time.monotonic() < deadline:       # publish until the subscriber is dropped
        t0 = time.perf_counter()
        receivers = r.publish("news", msg)
        lat.append(time.perf_counter() - t0)
    assert receivers == 0, "subscriber never dropped"
    assert _closed_by_server(sub, timeout=10)
    sub.close()
    lat.sort()
    assert lat[int(len(lat) * 0.99) - 1] < 0.050
    if not IS_REDIS:
        assert int(info_stats(r)["client_output_buffer_limit_disconnections"]) >= 1


def test_output_limit_config_set_and_get(start_server):
    srv = start_server()
    r = srv.client()
    assert r.config_set("client-output-buffer-limit", "normal 1mb 512kb 5 pubsub 2mb 1mb 10") is True
    got = r.config_get("client-output-buffer-limit")["client-output-buffer-limit"]
    assert got == "normal 1048576 524288 5 slave 268435456 67108864 60 pubsub 2097152 1048576 10"
    with pytest.raises(Exception):
        r.config_set("client-output-buffer-limit", "nosuch 1 1 1")
    with pytest.raises(Exception):
        r.config_set("client-output-buffer-limit", "normal 1mb 512kb")
    # the new limit applies at once: a small hard limit closes an unread flood
    r.config_set("client-output-buffer-limit", "normal 64kb 0 0")
    s, t, _ = _flood_without_reading(srv.host, srv.port, FLOOD * 50_000)
    try:
        assert _gone_from_client_list(r, s)
        assert _closed_by_server(s, timeout=10)
    finally:
        s.close()
        t.join(10)


def test_maxclients(start_server):
    extra = [] if IS_REDIS else ["--shards", "2"]
    srv = start_server("--maxclients", "3", *extra)
    keep = [srv.raw(port=srv.ports[i % len(srv.ports)]) for i in range(3)]
    for c in keep:
        assert c.cmd("PING") == "PONG"
    # the limit is node-wide: the 4th client is refused on any shard port
    for port in srv.ports:
        s = socket.create_connection((srv.host, port), timeout=10)
        s.settimeout(10)
        data = b""
        while True:
            chunk = s.recv(1024)
            if not chunk:
                break
            data += chunk
        s.close()
        assert data == MAXCLIENTS_ERR
    keep.pop().close()
    poll_until(lambda: _ping_ok(srv), what="a free slot after a client left")
    for c in keep:
        c.close()


def _ping_ok(srv):
    try:
        with srv.raw(timeout=2) as c:
            return c.cmd("PING") == "PONG"
    except Exception:
        return False


def test_timeout_closes_idle_clients_but_not_subscribers_or_blocked(start_server):
    srv = start_server("--timeout", "1", "--hz", "50")
    idle = srv.raw()
    assert idle.cmd("PING") == "PONG"
    sub = srv.raw()
    assert sub.cmd("SUBSCRIBE", "ch")[0] == b"subscribe"
    blocked = srv.raw()
    blocked.send(encode_command("BLPOP", "nolist", "0"))
    busy = srv.raw()
    t_end = time.monotonic() + 2.5
    while time.monotonic() < t_end:                  # an active client is never idle
        assert busy.cmd("PING") == "PONG"
        time.sleep(0.2)
    idle.read_until_closed(timeout=5)                # closed, nothing sent
    # the subscriber and the blocked client are still there
    r = srv.client()
    assert r.publish("ch", "hi") == 1
    assert sub.read_reply() == [b"message", b"ch", b"hi"]
    r.rpush("nolist", "v")
    assert blocked.read_reply() == [b"nolist", b"v"]


@pytest.mark.ruvio_only
def test_tcp_keepalive_is_set_on_client_sockets(start_server):
    srv = start_server("--tcp-keepalive", "60")
    c = srv.raw()
    assert c.cmd("PING") == "PONG"
    try:
        out = subprocess.run(["ss", "-tnoH", "state", "established", "( sport = :%d )" % srv.port],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("ss (iproute2) not available")
    assert "keepalive" in out, out
    m = re.search(r"timer:\(keepalive,(\d+)(min|sec|ms)?", out)
    assert m, out
    srv2 = start_server("--tcp-keepalive", "0")
    c2 = srv2.raw()
    assert c2.cmd("PING") == "PONG"
    out = subprocess.run(["ss", "-tnoH", "state", "established", "( sport = :%d )" % srv2.port],
                         capture_output=True, text=True, timeout=5).stdout
    assert "keepalive" not in out, out
