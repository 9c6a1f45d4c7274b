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
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import redis

# The shared helpers (tests/pylib/ruviotest), for a direct `python3 -m pytest tests/integ/...` and ctest alike.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))

from ruviotest import procs  # noqa: E402
from ruviotest.net import HOST, free_port, free_ports, ping_once  # noqa: E402,F401
from ruviotest.paths import REPO, ruvio_bin  # noqa: E402,F401
from ruviotest.resp import (ConnClosed, Push, RawConn, RespError, Verbatim, encode_command,  # noqa: E402,F401
                            parse_info)
from ruviotest.wait import wait_for  # noqa: E402

TARGET = os.environ.get("RUVIO_TARGET", "ruvio").lower()
IS_REDIS = TARGET == "redis"
ADDR = os.environ.get("RUVIO_ADDR")
RUVIO_BIN = ruvio_bin()
REDIS_BIN = os.environ.get("REDIS_SERVER_BIN", shutil.which("redis-server") or "/usr/bin/redis-server")
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
# server processes

def _ping_once(host, port, timeout=1.0):
    return ping_once(host, port, timeout)


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
            procs.stop(p, STOP_GRACE)
        if SANITIZED and self.proc is not None:
            report = sanitizer_report(self.stderr())
            assert not report, "the server's sanitizer report:\n" + report


# Under the sanitizers (CI's second stage) a memory error or undefined behaviour aborts the server, but a test
# that no longer talks to it (or is stopping it) would not notice: each server's stderr is checked when it
# stops. Leak reports are not (an exit after a refused start frees nothing, by design).
SANITIZED = os.environ.get("RUVIO_SANITIZED", "0").upper() in ("1", "ON", "TRUE")
_SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer")


def sanitizer_report(text):
    """The first sanitizer report in a server's stderr ("" when none), trimmed."""
    for mark in _SANITIZER_MARKS:
        i = text.find(mark)
        if i >= 0:
            return text[max(0, i - 200):i + 3000]
    return ""


def _spawn(argv, workdir, env=None, tag="srv"):
    out = os.path.join(workdir, "%s.stdout" % tag)
    err = os.path.join(workdir, "%s.stderr" % tag)
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=workdir,
                                env=env if env is not None else os.environ.copy())
    return proc, out, err


def _wait_ready(proc, ports, deadline_s=TIMEOUT):
    return procs.wait_ready(proc, HOST, ports, timeout=deadline_s, interval=0.02)


class StartFailed(Exception):
    pass


def _server_argv(port, datadir, args):
    # Redis's own test suite runs with DEBUG enabled too; tests of the default pass their own value.
    dbg = [] if "--enable-debug-command" in args else ["--enable-debug-command", "yes"]
    if IS_REDIS:
        return [REDIS_BIN, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--dir", datadir] + dbg + list(args)
    if not os.path.exists(RUVIO_BIN):
        pytest.fail("ruvio binary not found at %s (set RUVIO_BIN or build it)" % RUVIO_BIN)
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
    cluster = "--cluster-enabled" in args and args[args.index("--cluster-enabled") + 1:][:1] == ["yes"]
    last_err = ""
    for attempt in range(3):
        workdir = tempfile.mkdtemp(prefix="ruvio-integ-")
        datadir = os.path.join(workdir, "data")
        os.mkdir(datadir)
        if port is not None:
            p = port
        elif cluster:  # its bus ports (client port + 10000) must be free, and exist
            p = free_ports(nports, also_bus=True)
        else:
            p = free_ports(nports) if nports > 1 else free_port()
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
    """Poll fn() until truthy, bounded; returns the last value or fails (ruviotest.wait.wait_for, with the
    suite's shorter defaults)."""
    return wait_for(fn, timeout=timeout, interval=interval, what=what)


def resp_error(fn, *args, **kw):
    """Run a redis-py call that must fail; return the exception's message (prefix-stripped as redis-py does)."""
    with pytest.raises(redis.exceptions.ResponseError) as ei:
        fn(*args, **kw)
    return str(ei.value)
