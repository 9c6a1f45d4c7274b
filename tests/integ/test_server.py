"""Process-level behaviour: signals, configuration files, flags, environment, start-up failures.

ruvio's configuration sources (node/core/config.h): built-in defaults, the config file (argv[1] when it does not start
with "--", else $RUVIO_CONFIG), $RUVIO_DATA_DIR, then "--key value" flags; later sources win.  Start-up errors are
one stderr line:
    ruvio: config error at <file>:<line>: '<key>': <reason>
    ruvio: config error at --<key>: '<key>': <reason>
    ruvio: shard <i>: cannot listen on <addr>:<port> ('port'): <strerror>
"""

import os
import signal
import socket

import pytest

from conftest import HOST, IS_REDIS, REDIS_BIN, RUVIO_BIN, free_port, free_ports, poll_until

EXIT_TIMEOUT = 5


def server_bin():
    return REDIS_BIN if IS_REDIS else RUVIO_BIN


def base_flags():
    """Flags every started process needs besides port/bind/dir."""
    return ["--save", "", "--appendonly", "no"] if IS_REDIS else []


def write_conf(srv_dir, name, lines):
    path = os.path.join(srv_dir, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.fixture
def confdir(tmp_path):
    return str(tmp_path)


# ---------------------------------------------------------------------------------------------------- signals

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_clean_exit_with_client_connected(start_server, sig):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("SET", "k", "v") == "OK"
        srv.proc.send_signal(sig)
        rc = srv.wait_exit(EXIT_TIMEOUT)
        assert rc == 0, "exit status %r after %s (stderr: %s)" % (rc, sig.name, srv.stderr()[-500:])
        # the client sees the connection end
        assert c.read_until_closed(timeout=EXIT_TIMEOUT) == b""


def test_sigterm_idle_server(start_server):
    srv = start_server()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.wait_exit(EXIT_TIMEOUT) == 0


def test_sigterm_during_pipeline_load(start_server):
    srv = start_server()
    c = srv.raw()
    try:
        c.send(b"SET k v\r\n" * 5000)
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.wait_exit(EXIT_TIMEOUT) == 0
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------- config files

def test_config_file_comments_blank_lines_quotes(start_server, confdir):
    port = free_port()
    datadir = os.path.join(confdir, "data")
    os.mkdir(datadir)
    lines = ["# a comment line", "", "   # indented comment", "port %d" % port, "", 'bind "127.0.0.1"',
             "dir '%s'" % datadir, "timeout 7"]
    if IS_REDIS:
        lines += ['save ""', "appendonly no"]
    conf = write_conf(confdir, "good.conf", lines)
    srv = start_server(argv=[server_bin(), conf], port=port)
    with srv.raw() as c:
        reply = c.cmd("CONFIG", "GET", "timeout")
        assert reply == [b"timeout", b"7"]
        assert c.cmd("CONFIG", "GET", "dir") == [b"dir", datadir.encode()]
        assert c.cmd("CONFIG", "GET", "bind")[1].split()[0] == b"127.0.0.1"


def test_config_file_flags_override(start_server, confdir):
    file_port = free_port()
    flag_port = free_port()
    conf = write_conf(confdir, "ovr.conf", ["port %d" % file_port, "bind 127.0.0.1", "timeout 5"])
    srv = start_server(argv=[server_bin(), conf, "--port", str(flag_port), "--dir", "{dir}", "--timeout", "9"]
                       + base_flags(), port=flag_port)
    with srv.raw() as c:
        assert c.cmd("CONFIG", "GET", "port") == [b"port", str(flag_port).encode()]
        assert c.cmd("CONFIG", "GET", "timeout") == [b"timeout", b"9"]


def test_config_unknown_key_fails(start_server, confdir):
    conf = write_conf(confdir, "bad.conf", ["# first line", "port %d" % free_port(), "nosuchkey 1", "timeout 0"])
    srv = start_server(argv=[server_bin(), conf], expect_fail=True)
    assert srv.returncode is not None, "server did not exit within %ss" % EXIT_TIMEOUT
    assert srv.returncode != 0
    out = srv.stderr() + srv.stdout()
    assert "nosuchkey" in out and "3" in out


@pytest.mark.ruvio_only
def test_config_unknown_key_message(start_server, confdir):
    conf = write_conf(confdir, "bad.conf", ["# first line", "port %d" % free_port(), "nosuchkey 1", "timeout 0"])
    srv = start_server(argv=[RUVIO_BIN, conf], expect_fail=True)
    assert srv.returncode not in (None, 0)
    err = srv.stderr()
    line = [l for l in err.splitlines() if "config error" in l]
    assert line, err
    assert line[0].startswith("ruvio: config error at %s:3: 'nosuchkey': " % conf), err
    assert "unknown" in line[0]


@pytest.mark.ruvio_only
def test_config_bad_port_value_message(start_server, confdir):
    conf = write_conf(confdir, "badport.conf", ["bind 127.0.0.1", "port abc"])
    srv = start_server(argv=[RUVIO_BIN, conf], expect_fail=True)
    assert srv.returncode not in (None, 0)
    err = srv.stderr()
    assert "ruvio: config error at %s:2: 'port': " % conf in err, err


def test_config_bad_port_value_fails(start_server, confdir):
    conf = write_conf(confdir, "badport.conf", ["bind 127.0.0.1", "port abc"])
    srv = start_server(argv=[server_bin(), conf], expect_fail=True)
    assert srv.returncode not in (None, 0)
    out = srv.stderr() + srv.stdout()
    assert "port" in out and "2" in out


@pytest.mark.ruvio_only
def test_flag_unknown_key_message(start_server):
    srv = start_server("--nosuchflag", "1", expect_fail=True)
    assert srv.returncode not in (None, 0)
    err = srv.stderr()
    assert "ruvio: config error at --nosuchflag: 'nosuchflag': " in err, err
    assert "unknown" in err


@pytest.mark.ruvio_only
def test_flag_bad_value_message(start_server):
    srv = start_server("--hz", "abc", expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert "ruvio: config error at --hz: 'hz': " in srv.stderr(), srv.stderr()


@pytest.mark.ruvio_only
def test_config_file_missing(start_server, confdir):
    path = os.path.join(confdir, "does-not-exist.conf")
    srv = start_server(argv=[RUVIO_BIN, path], expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert path in srv.stderr()


@pytest.mark.ruvio_only
def test_config_unbalanced_quotes(start_server, confdir):
    conf = write_conf(confdir, "quotes.conf", ["bind 127.0.0.1", 'dir "/tmp'])
    srv = start_server(argv=[RUVIO_BIN, conf], expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert "ruvio: config error at %s:2: " % conf in srv.stderr(), srv.stderr()


# ---------------------------------------------------------------------------------------------------- port clash

@pytest.fixture
def occupied_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, 0))
    s.listen(1)
    yield s.getsockname()[1]
    s.close()


def test_port_clash_fails(start_server, occupied_port):
    srv = start_server(argv=[server_bin(), "--port", str(occupied_port), "--bind", HOST, "--dir", "{dir}"]
                       + base_flags(), expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert str(occupied_port) in srv.stderr() + srv.stdout()


@pytest.mark.ruvio_only
def test_port_clash_message(start_server, occupied_port):
    srv = start_server(argv=[RUVIO_BIN, "--port", str(occupied_port), "--bind", HOST, "--dir", "{dir}"],
                       expect_fail=True)
    assert srv.returncode not in (None, 0)
    err = srv.stderr()
    assert "ruvio: shard 0: cannot listen on 127.0.0.1:%d ('port'): Address already in use" % occupied_port \
        in err, err


# ---------------------------------------------------------------------------------------------------- environment

@pytest.mark.ruvio_only
def test_ruvio_config_env(start_server, confdir):
    port = free_port()
    conf = write_conf(confdir, "env.conf", ["port %d" % port, "bind 127.0.0.1", "hz 25"])
    env = dict(os.environ, RUVIO_CONFIG=conf)
    srv = start_server(argv=[RUVIO_BIN, "--dir", "{dir}"], env=env, port=port)
    with srv.raw() as c:
        assert c.cmd("CONFIG", "GET", "port") == [b"port", str(port).encode()]
        assert c.cmd("CONFIG", "GET", "hz") == [b"hz", b"25"]


@pytest.mark.ruvio_only
def test_ruvio_config_env_bad_file(start_server, confdir):
    conf = write_conf(confdir, "envbad.conf", ["bind 127.0.0.1", "bogus yes"])
    env = dict(os.environ, RUVIO_CONFIG=conf)
    srv = start_server(argv=[RUVIO_BIN, "--port", str(free_port()), "--dir", "{dir}"], env=env, expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert "ruvio: config error at %s:2: 'bogus': " % conf in srv.stderr(), srv.stderr()


@pytest.mark.ruvio_only
def test_ruvio_data_dir_env(start_server, confdir):
    port = free_port()
    datadir = os.path.join(confdir, "envdata")
    os.mkdir(datadir)
    env = dict(os.environ, RUVIO_DATA_DIR=datadir)
    env.pop("RUVIO_CONFIG", None)
    srv = start_server(argv=[RUVIO_BIN, "--port", str(port), "--bind", HOST], env=env, port=port)
    with srv.raw() as c:
        assert c.cmd("CONFIG", "GET", "dir") == [b"dir", datadir.encode()]


@pytest.mark.ruvio_only
def test_dir_flag_overrides_data_dir_env(start_server, confdir):
    port = free_port()
    envdir = os.path.join(confdir, "envdata")
    os.mkdir(envdir)
    env = dict(os.environ, RUVIO_DATA_DIR=envdir)
    srv = start_server(argv=[RUVIO_BIN, "--port", str(port), "--bind", HOST, "--dir", "{dir}"], env=env, port=port)
    with srv.raw() as c:
        assert c.cmd("CONFIG", "GET", "dir") == [b"dir", srv.datadir.encode()]


def test_restart_same_port_after_exit(start_server):
    srv = start_server()
    port = srv.port
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.wait_exit(EXIT_TIMEOUT) == 0
    # the listening port is released (SO_REUSEADDR): a new server can bind it right away
    srv2 = start_server(port=port)
    with srv2.raw() as c:
        assert c.cmd("PING") == "PONG"
    poll_until(lambda: srv2.alive(), timeout=1, what="second server alive")


@pytest.mark.skipif(IS_REDIS, reason="ruvio's start-up and its data directory")
def test_sigterm_at_any_moment_of_start_up_is_a_clean_exit(tmp_path):
    """SIGTERM/SIGINT are blocked before the first thread starts and taken only by main: a signal that comes
    while the node is loading or just starting is never fatal (-15) and loses nothing (docs/operations.md)."""
    import subprocess

    port = free_ports(2)     # (both shards' ports: a busy port + 1 would keep the second from starting)
    log = tmp_path / "ruvio.log"
    argv = [RUVIO_BIN, "--port", str(port), "--bind", HOST, "--dir", str(tmp_path / "data"), "--shards", "2",
            "--durability", "always", "--logfile", str(log)]

    procs = []

    def start():
        if log.exists():
            log.unlink()
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return procs[-1]

    try:
        _sigterm_during_start_up(start, log, port)
    finally:
        for p in procs:  # a failed assertion leaves no server behind
            if p.poll() is None:
                p.kill()
                p.wait(timeout=EXIT_TIMEOUT)


def _sigterm_during_start_up(start, log, port):
    import time

    import redis as redis_py

    p = start()
    try:
        poll_until(lambda: all(_ping(port + i) for i in (0, 1)), timeout=30, what="both shards answer")
    except AssertionError as e:
        raise AssertionError("%s; exit status %s; log:\n%s" % (e, p.poll(), log.read_text()[-3000:]
                                                               if log.exists() else "(none)")) from None
    keys = 0
    for i in (0, 1):
        r = redis_py.Redis(host=HOST, port=port + i, socket_timeout=10)
        # a hash tag of this shard's slots (shard i of 2 owns [i*8192, i*8192+8191])
        tag = next(t for t in (f"t{n}" for n in range(1000)) if r.cluster("keyslot", t) // 8192 == i)
        pipe = r.pipeline(transaction=False)
        for k in range(20000):
            pipe.set(f"{{{tag}}}:{k}", "v" * 32)
        pipe.execute()
        keys += r.dbsize()
        r.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=EXIT_TIMEOUT * 6) == 0
    # The log file is opened right after the signals are blocked (a signal before main runs ends any
    # program): from then on, during loading (two shards of 20,000 keys to replay) or just after it.
    for delay in (0, 0.002, 0.01, 0.03, 0.1, 0.3):
        p = start()
        poll_until(log.exists, timeout=10, what="the log file opened")
        time.sleep(delay)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=EXIT_TIMEOUT * 6) == 0, f"SIGTERM {delay} s after the log opened"
    p = start()
    poll_until(lambda: all(_ping(port + i) for i in (0, 1)), timeout=20, what="both shards answer")
    total = 0
    for i in (0, 1):
        r = redis_py.Redis(host=HOST, port=port + i, socket_timeout=10)
        total += r.dbsize()
        r.close()
    assert total == keys
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=EXIT_TIMEOUT * 6) == 0


def _ping(port):
    try:
        with socket.create_connection((HOST, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False
