"""Fixtures for the Ruvio integration suite.

The suite runs against either a real redis-server (RUVIO_TARGET=redis, used to validate that every expectation
encodes Redis's actual behaviour) or the ruvio binary (default; RUVIO_BIN, else <repo>/build/ruvio).
RUVIO_ADDR=host:port reuses an already running server; tests that need their own process are then skipped.

redis-py 4.3.4 error surfacing: a reply "-ERR foo" raises ResponseError("foo") (the "ERR " prefix is stripped, and
likewise for NOAUTH/NOPERM/...; some ERR texts map to subclasses such as AuthenticationError). Codes it does not know
(WRONGPASS, CROSSSLOT, MOVED, NOPROTO, ...) keep the full line.  The raw-socket helper (RawConn) always returns the
full error line, so exact-wire assertions use it.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

TARGET = os.environ.get("RUVIO_TARGET", "ruvio").lower()
IS_REDIS = TARGET == "redis"
ADDR = os.environ.get("RUVIO_ADDR")
REPO = Path(__file__).resolve().parents[2]
RUVIO_BIN = os.environ.get("RUVIO_BIN", str(REPO / "build" / "ruvio"))
REDIS_BIN = os.environ.get("REDIS_SERVER_BIN", shutil.which("redis-server") or "/usr/bin/redis-server")
HOST = "127.0.0.1"
TIMEOUT = 10          # every socket / client timeout, and the start-up PING deadline
STOP_GRACE = 5        # SIGTERM grace before SIGKILL


def pytest_configure(config):
    config.addinivalue_line("markers", "ruvio_only: behaviour specific to ruvio; skipped when RUVIO_TARGET=redis")
    config.addinivalue_line("markers", "own_server: the test starts its own server process(es)")


def pytest_collection_modifyitems(config, items):
    skip_ruvio = pytest.mark.skip(reason="ruvio-only expectation (RUVIO_TARGET=redis)")
    for item in items:
        if IS_REDIS and "ruvio_only" in item.keywords:
            item.add_marker(skip_ruvio)


# --------------------------------------------------------------------------------------------------------------
# ports

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(n, also_bus=False):
    """Base of n consecutive free ports (and, with also_bus, base+10000.. free too, for a redis cluster bus)."""
    for _ in range(200):
        base = free_port()
        if base + n + (10000 if also_bus else 0) >= 65535:
            continue
        ports = list(range(base, base + n))
        if also_bus:
            ports += [p + 10000 for p in range(base, base + n)]
        if all(_port_free(p) for p in ports):
            return base
    raise RuntimeError("no run of %d free ports" % n)


# --------------------------------------------------------------------------------------------------------------
# raw RESP socket

class RespError(str):
    """An error reply (-... or !...), full text including the code, e.g. 'ERR syntax error'."""


class Verbatim(str):
    def __new__(cls, fmt, text):
        o = super().__new__(cls, text)
        o.fmt = fmt
        return o


class Push(list):
    pass


class ConnClosed(Exception):
    pass


def parse_info(text):
    """INFO text -> {section (lower case): {field: value}}; every line must be a header or field:value."""
    out, cur = {}, None
    for line in text.split("\r\n"):
        if not line:
            continue
        if line.startswith("# "):
            cur = line[2:].lower()
            out[cur] = {}
            continue
        assert cur is not None, "field before any section header: %r" % line
        k, sep, v = line.partition(":")
        assert sep == ":", "bad INFO line %r" % line
        out[cur][k] = v
    return out


def encode_command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn:
    """A plain socket speaking RESP2/RESP3, returning parsed replies or exact reply bytes."""

    def __init__(self, host, port, timeout=TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.timeout = timeout
        self.buf = b""
        self._raw = None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def cmd(self, *args):
        self.send(encode_command(*args))
        return self.read_reply()

    def cmd_raw(self, *args):
        self.send(encode_command(*args))
        return self.read_reply_raw()

    # ---- low-level reads
    def _fill(self, timeout=None):
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        finally:
            if timeout is not None:
                self.sock.settimeout(self.timeout)
        if not data:
            raise ConnClosed("connection closed by server (buffered %r)" % self.buf[:200])
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                self._raw.append(line + b"\r\n")
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        self._raw.append(data + b"\r\n")
        return data

    def _parse(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._parse() for _ in range(n)]
            if t == b"~":
                return set(_hashable(x) for x in items)
            if t == b">":
                return Push(items)
            return items
        if t == b"%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._parse()
                d[_hashable(k)] = self._parse()
            return d
        if t == b"|":  # attribute: skip it, return the following reply
            n = int(rest)
            for _ in range(2 * n):
                self._parse()
            return self._parse()
        if t == b"_":
            return None
        if t == b",":
            return float(rest.decode().replace("inf", "inf"))
        if t == b"#":
            return rest == b"t"
        if t == b"(":
            return int(rest)
        if t == b"!":
            return RespError(self._exact(int(rest)).decode())
        if t == b"=":
            data = self._exact(int(rest))
            return Verbatim(data[:3].decode(), data[4:].decode())
        raise AssertionError("unknown RESP type byte in line %r" % line)

    def read_reply(self):
        self._raw = []
        return self._parse()

    def read_reply_raw(self):
        """Exact bytes of the next complete reply."""
        self._raw = []
        self._parse()
        return b"".join(self._raw)

    def read_bytes(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_until_closed(self, timeout=TIMEOUT):
        """Everything the server sends until it closes the connection; fails if it stays open past timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection still open after %ss (got %r)" % (timeout, self.buf[:200]))
            try:
                self._fill(timeout=left)
            except ConnClosed:
                data, self.buf = self.buf, b""
                return data
            except socket.timeout:
                continue

    def nothing_pending(self, wait=0.2):
        """True if no bytes arrive within `wait` seconds (used for CLIENT REPLY OFF checks)."""
        if self.buf:
            return False
        try:
            self._fill(timeout=wait)
        except socket.timeout:
            return True
        return False


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(i) for i in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    if isinstance(x, set):
        return frozenset(x)
    return x


# --------------------------------------------------------------------------------------------------------------
# server processes

def _ping_once(host, port, timeout=1.0):
    """True once the server answers a PING with any RESP reply (PONG, or NOAUTH with requirepass)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            data = s.recv(64)
            return data[:1] in (b"+", b"-")
    except OSError:
        return False


class Server:
    def __init__(self, host, port, proc=None, workdir=None, ports=None, stdout_path=None, stderr_path=None):
        self.host = host
        self.port = port
        self.ports = ports or [port]
        self.proc = proc
        self.workdir = workdir
        self.stdout_path = stdout_path
        self.stderr_path = stderr_path
        self.extra = []        # other processes owned by this server (redis cluster nodes)

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def client(self, port=None, **kw):
        kw.setdefault("socket_timeout", TIMEOUT)
        kw.setdefault("socket_connect_timeout", TIMEOUT)
        kw.setdefault("decode_responses", True)
        return redis.Redis(host=self.host, port=port or self.port, **kw)

    def raw(self, port=None, timeout=TIMEOUT):
        return RawConn(self.host, port or self.port, timeout=timeout)

    def stderr(self):
        if self.stderr_path and os.path.exists(self.stderr_path):
            with open(self.stderr_path, "r", errors="replace") as f:
                return f.read()
        return ""

    def stdout(self):
        if self.stdout_path and os.path.exists(self.stdout_path):
            with open(self.stdout_path, "r", errors="replace") as f:
                return f.read()
        return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        for p in [self.proc] + self.extra:
            if p is None or p.poll() is not None:
                continue
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=STOP_GRACE)
            except ProcessLookupError:
                pass


def _spawn(argv, workdir, env=None, tag="srv"):
    out = os.path.join(workdir, "%s.stdout" % tag)
    err = os.path.join(workdir, "%s.stderr" % tag)
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=workdir,
                                env=env if env is not None else os.environ.copy())
    return proc, out, err


def _wait_ready(proc, ports, deadline_s=TIMEOUT):
    deadline = time.monotonic() + deadline_s
    pending = list(ports)
    while pending:
        if proc.poll() is not None:
            return False
        if _ping_once(HOST, pending[0]):
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class StartFailed(Exception):
    pass


def _server_argv(port, datadir, args):
    if IS_REDIS:
        return [REDIS_BIN, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--dir", datadir] + list(args)
    if not os.path.exists(RUVIO_BIN):
        pytest.fail("ruvio binary not found at %s (set RUVIO_BIN or build it)" % RUVIO_BIN)
    # Redis's own test suite runs with DEBUG enabled too; tests of the default pass their own value.
    dbg = [] if "--enable-debug-command" in args else ["--enable-debug-command", "yes"]
    return [RUVIO_BIN, "--port", str(port), "--bind", HOST, "--dir", datadir] + dbg + list(args)


def launch(args=(), expect_fail=False, env=None, argv=None, nports=None, port=None, exit_timeout=5):
    """Start a server; returns a Server.  With expect_fail, waits (bounded) for the process to exit and returns
    the Server with .returncode set instead of waiting for PING.  `argv` replaces the whole command line (use
    '{port}'/'{dir}' placeholders); `nports` reserves that many consecutive ports (ruvio --shards N)."""
    args = [str(a) for a in args]
    if nports is None:
        nports = 1
        if "--shards" in args:
            nports = int(args[args.index("--shards") + 1])
    last_err = ""
    for attempt in range(3):
        workdir = tempfile.mkdtemp(prefix="ruvio-integ-")
        datadir = os.path.join(workdir, "data")
        os.mkdir(datadir)
        p = port if port is not None else (free_ports(nports) if nports > 1 else free_port())
        if argv is not None:
            cmd = [a.replace("{port}", str(p)).replace("{dir}", datadir).replace("{workdir}", workdir)
                   for a in argv]
        else:
            cmd = _server_argv(p, datadir, args)
        proc, out, err = _spawn(cmd, workdir, env=env)
        srv = Server(HOST, p, proc, workdir, ports=list(range(p, p + nports)), stdout_path=out, stderr_path=err)
        srv.datadir = datadir
        srv.cmdline = cmd
        if expect_fail:
            srv.returncode = srv.wait_exit(exit_timeout)
            if srv.returncode is None:
                srv.stop()
            return srv
        if _wait_ready(proc, srv.ports):
            return srv
        exited = proc.poll() is not None
        last_err = ("exited with status %s; " % proc.returncode if exited else "still running; ") + \
            srv.stderr()[-2000:] + srv.stdout()[-2000:]
        srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        # retry only when another process grabbed the free port we picked (a bind race)
        if port is not None or not exited or "in use" not in last_err:
            break
    raise StartFailed("server did not answer PING on %s within %ss: %s\n%s"
                      % (srv.ports, TIMEOUT, " ".join(cmd), last_err))


# --------------------------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope="session")
def server():
    if ADDR:
        host, _, port = ADDR.rpartition(":")
        yield Server(host or HOST, int(port))
        return
    srv = launch()
    try:
        yield srv
    finally:
        died = srv.proc is not None and srv.proc.poll() is not None
        srv.stop()
        if died:    # the shared server must outlive the session: keep and show its last words
            print("\nshared server exited early (status %r); workdir kept: %s\n%s"
                  % (srv.proc.returncode, srv.workdir, srv.stderr()[-4000:]), file=sys.stderr)
        else:
            shutil.rmtree(srv.workdir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _flush_between_tests(request):
    if "server" in request.fixturenames:
        srv = request.getfixturevalue("server")
        c = srv.client()
        try:
            c.flushall()
        finally:
            c.close()
    yield


@pytest.fixture
def r(server):
    c = server.client()
    yield c
    c.close()


@pytest.fixture
def rb(server):
    """Client without response decoding (binary values)."""
    c = server.client(decode_responses=False)
    yield c
    c.close()


@pytest.fixture
def raw(server):
    conns = []

    def make(timeout=TIMEOUT):
        c = server.raw(timeout=timeout)
        conns.append(c)
        return c

    c = make()
    c.new = make
    yield c
    for x in conns:
        x.close()


@pytest.fixture
def start_server():
    """Factory: start_server(*args, expect_fail=False, env=None, argv=None) -> Server.  Processes are stopped
    at teardown.  Skipped when RUVIO_ADDR points at an external server."""
    if ADDR:
        pytest.skip("needs its own server process (RUVIO_ADDR set)")
    started = []

    def start(*args, **kw):
        srv = launch(args, **kw)
        started.append(srv)
        return srv

    yield start
    for s in started:
        s.stop()
        shutil.rmtree(s.workdir, ignore_errors=True)


def poll_until(fn, timeout=5.0, interval=0.02, what="condition"):
    """Poll fn() until truthy, bounded; returns the last value or fails."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s (last=%r)" % (timeout, what, v))
        time.sleep(interval)


def resp_error(fn, *args, **kw):
    """Run a redis-py call that must fail; return the exception's message (prefix-stripped as redis-py does)."""
    with pytest.raises(redis.exceptions.ResponseError) as ei:
        fn(*args, **kw)
    return str(ei.value)
