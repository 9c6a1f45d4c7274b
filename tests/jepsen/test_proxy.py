"""proxy.py on loopback, without namespaces: it forwards both ways, delays by at least the configured time,
holds everything while stalled and lets it through once back to pass. About a second."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))

from ruviotest.net import free_port  # noqa: E402


def echo_server():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")],
                             daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return srv


def set_mode(path, **m):
    with open(path + ".tmp", "w") as f:
        json.dump(m, f)
    os.replace(path + ".tmp", path)


def roundtrip(s, data, timeout=5):
    s.settimeout(timeout)
    t = time.monotonic()
    s.sendall(data)
    got = b""
    while len(got) < len(data):
        got += s.recv(4096)
    return got, time.monotonic() - t


def test_proxy_pass_delay_stall():
    srv = echo_server()
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        ctl = os.path.join(d, "mode.json")
        set_mode(ctl, mode="pass")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "proxy.py"), "--control", ctl,
                              "%d=127.0.0.1:%d" % (port, srv.getsockname()[1])], stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().startswith("proxy ready")
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            assert roundtrip(s, b"hello")[0] == b"hello"
            set_mode(ctl, mode="delay", ms=150)
            time.sleep(0.2)                                     # the proxy reads the file every 20 ms
            got, took = roundtrip(s, b"slow")
            assert got == b"slow" and took >= 0.3, took         # 150 ms each way
            set_mode(ctl, mode="stall")
            time.sleep(0.2)
            s.sendall(b"held")
            s.settimeout(0.5)
            try:
                early = s.recv(4096)
            except socket.timeout:
                early = b""
            assert early == b""
            set_mode(ctl, mode="pass")
            s.settimeout(5)
            got = b""
            while len(got) < 4:
                got += s.recv(4096)
            assert got == b"held"
            s.close()
        finally:
            p.terminate()
            p.wait(timeout=5)
            srv.close()
