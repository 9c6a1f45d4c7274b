"""TLS on client connections (issue 19, point 5), with Redis's names: tls-port, tls-cert-file, tls-key-file,
tls-ca-cert-file, tls-auth-clients, tls-protocols, tls-ciphers/-ciphersuites, and certificate reload by CONFIG
SET. Certificates are made at test time with Debian's openssl (a CA, the server's, a client's, and a client's
from another CA). Every test passes against redis-server 7.0 (built with TLS) too."""

import os
import shutil
import socket
import ssl
import subprocess

import pytest
import redis

from conftest import HOST, IS_REDIS, TIMEOUT, free_port, launch

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".pem",
             "-days", "2", "-subj", "/CN=" + name, cwd=d)


def _cert(d, name, ca, cn, ip=None):
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
             "-subj", "/CN=" + cn, cwd=d)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:%s%s\n" % (cn, ",IP:" + ip if ip else ""))
    _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
             "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", ext, cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tls"))
    _ca(d, "ca")
    _ca(d, "rogue")
    _cert(d, "server", "ca", "localhost", ip=HOST)
    _cert(d, "server2", "ca", "second.example")
    _cert(d, "client", "ca", "client")
    _cert(d, "intruder", "rogue", "intruder")
    return d


def _start(certs, *extra):
    tls_port = free_port()
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    srv = launch(["--tls-port", tls_port, "--tls-cert-file", p("server.pem"), "--tls-key-file", p("server.key"),
                  "--tls-ca-cert-file", p("ca.pem"), *extra])
    srv.tls_port = tls_port
    return srv


@pytest.fixture(scope="module")
def tls_server(certs):
    srv = _start(certs)
    try:
        yield srv
    finally:
        srv.stop()


def _client(srv, certs, cert="client", **kw):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    args = dict(host=HOST, port=srv.tls_port, ssl=True, ssl_ca_certs=p("ca.pem"), ssl_cert_reqs="required",
                socket_timeout=TIMEOUT, decode_responses=True)
    if cert:
        args.update(ssl_certfile=p(cert + ".pem"), ssl_keyfile=p(cert + ".key"))
    args.update(kw)
    return redis.Redis(**args)


def _handshake(srv, certs, cert="client", max_version=None):
    """A raw TLS connection; returns (the server certificate's CN, PING's reply) or raises."""
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(os.path.join(certs, cert + ".pem"), os.path.join(certs, cert + ".key"))
    if max_version:
        ctx.maximum_version = max_version
    with socket.create_connection((HOST, srv.tls_port), timeout=TIMEOUT) as raw:
        with ctx.wrap_socket(raw) as s:
            cn = dict(x[0] for x in s.getpeercert()["subject"])["commonName"]
            s.sendall(b"PING\r\n")
            reply = s.recv(64)
            return cn, reply


def test_commands_over_tls(tls_server, certs):
    c = _client(tls_server, certs)
    assert c.set("k", "v") and c.get("k") == "v"
    big = "x" * (3 * 1024 * 1024 + 7)                 # many TLS records each way
    assert c.set("big", big) and c.get("big") == big
    pipe = c.pipeline(transaction=False)
    for i in range(2000):
        pipe.set("p%d" % i, i)
    pipe.mget(["p%d" % i for i in range(2000)])
    out = pipe.execute()
    assert out[:2000] == [True] * 2000 and out[2000] == [str(i) for i in range(2000)]
    # the same keyspace as the plain port
    plain = redis.Redis(host=HOST, port=tls_server.port, socket_timeout=TIMEOUT, decode_responses=True)
    assert plain.get("k") == "v"
    assert _handshake(tls_server, certs) == ("localhost", b"+PONG\r\n")


def test_records_read_ahead_are_all_answered(tls_server, certs):
    """Fifty PING records reach the server in one TCP write: it reads them together (OpenSSL's read-ahead) and must
    answer all of them although the socket has nothing more to signal."""
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    ctx.check_hostname = False
    ctx.load_cert_chain(os.path.join(certs, "client.pem"), os.path.join(certs, "client.key"))
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out)
    with socket.create_connection((HOST, tls_server.tls_port), timeout=TIMEOUT) as raw:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(out.read())
                data = raw.recv(65536)
                assert data, "closed during the handshake"
                inc.write(data)
        for _ in range(50):
            tls.write(b"PING\r\n")  # one record each
        raw.sendall(out.read())       # the handshake's end and the fifty records, in one write
        got = b""
        while got.count(b"+PONG\r\n") < 50:
            try:
                got += tls.read(65536)
            except ssl.SSLWantReadError:
                data = raw.recv(65536)  # (socket timeout: a stalled server fails the test)
                assert data, "closed after %r" % got
                inc.write(data)
        assert got == b"+PONG\r\n" * 50


def test_redis_cli_tls(tls_server, certs):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    out = subprocess.run(["redis-cli", "-h", HOST, "-p", str(tls_server.tls_port), "--tls", "--cacert", p("ca.pem"),
                          "--cert", p("client.pem"), "--key", p("client.key"), "SET", "cli", "yes"],
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert out.stdout.strip() == "OK", out.stderr
    assert _client(tls_server, certs).get("cli") == "yes"


def test_client_certificates_are_required_by_default(tls_server, certs):
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        cn, reply = _handshake(tls_server, certs, cert=None)
        assert reply == b""                                # TLS 1.3: refused after the handshake
        raise ConnectionError("closed")
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        cn, reply = _handshake(tls_server, certs, cert="intruder")   # signed by another CA
        assert reply == b""
        raise ConnectionError("closed")
    assert _client(tls_server, certs).ping()                 # the server goes on serving


def test_plaintext_on_the_tls_port_is_refused(tls_server, certs):
    with socket.create_connection((HOST, tls_server.tls_port), timeout=TIMEOUT) as s:
        s.sendall(b"PING\r\n")
        got = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    assert b"PONG" not in got
    assert _client(tls_server, certs).ping()


def test_auth_clients_no_and_optional(certs):
    for mode in ("no", "optional"):
        srv = _start(certs, "--tls-auth-clients", mode)
        try:
            assert _client(srv, certs, cert=None).ping()
            assert _client(srv, certs).ping()
            if mode == "optional":          # a certificate given must still verify
                with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                    _, reply = _handshake(srv, certs, cert="intruder")
                    assert reply == b""
                    raise ConnectionError("closed")
        finally:
            srv.stop()


def test_protocols_and_ciphersuites(certs):
    srv = _start(certs, "--tls-protocols", "TLSv1.3", "--tls-ciphersuites", "TLS_AES_256_GCM_SHA384")
    try:
        assert _handshake(srv, certs)[1] == b"+PONG\r\n"
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            _handshake(srv, certs, max_version=ssl.TLSVersion.TLSv1_2)
    finally:
        srv.stop()


def test_certificate_reload_by_config_set(certs):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    srv = _start(certs)
    try:
        c = _client(srv, certs)
        assert _handshake(srv, certs)[0] == "localhost"
        # a certificate whose key is not the configured one: refused, nothing changes
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("CONFIG", "SET", "tls-cert-file", p("server2.pem"))
        assert "Unable to update TLS configuration. Check server logs." in str(e.value)
        assert c.config_get("tls-cert-file") == {"tls-cert-file": p("server.pem")}
        assert _handshake(srv, certs)[0] == "localhost"
        # both at once (one CONFIG SET): new connections get the new certificate, the open one goes on
        assert c.execute_command("CONFIG", "SET", "tls-cert-file", p("server2.pem"),
                                 "tls-key-file", p("server2.key")) == "OK"
        assert _handshake(srv, certs)[0] == "second.example"
        assert c.ping()
        assert c.config_get("tls-cert-file") == {"tls-cert-file": p("server2.pem")}
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("CONFIG", "SET", "tls-cert-file", p("missing.pem"))
        assert "Unable to update TLS configuration. Check server logs." in str(e.value)
        assert _handshake(srv, certs)[0] == "second.example"
    finally:
        srv.stop()


def test_bad_tls_configuration_refuses_to_start(certs):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    srv = launch(["--tls-port", free_port(), "--tls-cert-file", p("missing.pem"), "--tls-key-file", p("server.key"),
                  "--tls-ca-cert-file", p("ca.pem")], expect_fail=True, exit_timeout=10)
    assert srv.returncode not in (None, 0)
    if not IS_REDIS:
        assert "Failed to load certificate" in srv.stderr()


def test_replication_over_tls(certs):
    """tls-replication yes: the replica connects to its primary's TLS port with its client certificate."""
    from conftest import poll_until
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    primary = _start(certs)
    replica = None
    try:
        replica = _start(certs, "--tls-replication", "yes", "--tls-client-cert-file", p("client.pem"),
                         "--tls-client-key-file", p("client.key"), "--replicaof", HOST, primary.tls_port)
        pc = _client(primary, certs)
        rc = _client(replica, certs)
        pc.set("a", "1")
        big = "y" * (2 * 1024 * 1024)
        pc.set("big", big)
        pipe = pc.pipeline(transaction=False)
        for i in range(3000):
            pipe.rpush("list", i)
        pipe.execute()
        poll_until(lambda: rc.llen("list") == 3000, timeout=TIMEOUT, what="the list on the replica")
        assert rc.get("a") == "1" and rc.get("big") == big
        info = rc.info("replication")
        assert info["master_link_status"] == "up" and info["master_port"] == primary.tls_port
        # the replica announces its TLS port, which is where a FAILOVER's old primary will connect
        info = pc.info("replication")
        assert info["connected_slaves"] == 1 and info["slave0"]["port"] == replica.tls_port
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()


def test_replication_over_tls_refuses_an_unknown_server(certs, tmp_path):
    """A primary whose certificate no configured CA signed: the link stays down, nothing is replicated."""
    from conftest import poll_until
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    primary = _start(certs, "--tls-auth-clients", "no")
    replica = None
    try:
        replica = _start(certs, "--tls-replication", "yes", "--tls-ca-cert-file", p("rogue.pem"),
                         "--replicaof", HOST, primary.tls_port)
        _client(primary, certs).set("secret", "x")
        rc = redis.Redis(host=HOST, port=replica.port, socket_timeout=TIMEOUT, decode_responses=True)
        poll_until(lambda: rc.info("replication")["master_link_status"] == "down", timeout=TIMEOUT,
                   what="the link reported down")
        assert rc.get("secret") is None
    finally:
        if replica is not None:
            replica.stop()
        primary.stop()
