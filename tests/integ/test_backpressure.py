"""A client that sends far more than it reads: the server stops reading it once a bounded amount of output
waits, keeps serving everyone else, and answers every command once the client reads."""

import os
import socket
import time

import pytest

from conftest import encode_command, poll_until
from ruviotest.procs import rss_kib

pytestmark = pytest.mark.ruvio_only


def test_pipelining_without_reading_stays_bounded(start_server):
    srv = start_server()
    r = srv.client()
    value = b"x" * (1 << 20)
    r.set("big", value)
    base = rss_kib(srv.proc.pid)

    n = 400                      # 400 MiB of replies if the server buffered them all
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.sendall(encode_command("GET", "big") * n)
    time.sleep(1.0)              # let the server produce what it will before pausing
    grown = rss_kib(srv.proc.pid) - base
    if os.environ.get("RUVIO_SANITIZED", "0") not in ("1", "ON", "TRUE"):
        # ASan's quarantine keeps freed memory resident, so RSS says nothing there.
        assert grown < 200 * 1024, "server buffered %d KiB for one slow reader" % grown

    # Everyone else is still served while the slow reader is paused.
    assert r.ping() is True
    assert r.get("big") == value.decode()

    # Then every reply arrives, complete and in order.
    want = b"$%d\r\n" % len(value) + value + b"\r\n"
    got = 0
    buf = bytearray()
    deadline = time.monotonic() + 60
    while got < n and time.monotonic() < deadline:
        chunk = s.recv(1 << 20)
        assert chunk, "connection closed after %d replies" % got
        buf += chunk
        while len(buf) >= len(want):
            assert bytes(buf[:len(want)]) == want
            del buf[:len(want)]
            got += 1
    s.close()
    assert got == n
    poll_until(lambda: r.ping(), what="server alive")
