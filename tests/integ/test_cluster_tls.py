"""The cluster bus over mutual TLS (issue 19, docs/cluster.md and docs/operations.md): with tls-cluster yes the
topology log's Raft connections run over TLS, each side presenting its certificate and checking the other's
against tls-ca-cert-file. Three processes form a cluster with replicas, take writes and fail over; a plaintext
connection to a bus port, a host whose bus is plaintext and one whose certificate another CA signed are all
refused (logged, the hosts go on). Certificates are made at test time with openssl (test_tls.py's helpers)."""

import os
import shutil
import socket
import ssl
import subprocess

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from conftest import HOST, TIMEOUT, free_ports, launch, poll_until
from test_tls import _ca, _cert

pytestmark = [pytest.mark.ruvio_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tlsbus"))
    _ca(d, "ca")
    _ca(d, "rogue")
    _cert(d, "node", "ca", "node", ip=HOST)
    _cert(d, "intruder", "rogue", "intruder", ip=HOST)
    return d


def _host(certs, tmp_path, name, cert="node", tls_cluster="yes", shards=2, port=None):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    base = port or free_ports(shards, also_bus=True)
    tls_port = free_ports(shards)
    srv = launch(["--shards", shards, "--cluster-enabled", "yes", "--cluster-node-timeout", "3000",
                  "--dir", str(tmp_path / name), "--durability", "everysec",
                  "--tls-port", tls_port, "--tls-cert-file", p(cert + ".pem"), "--tls-key-file", p(cert + ".key"),
                  "--tls-ca-cert-file", p("ca.pem"), "--tls-cluster", tls_cluster, "--tls-replication", "yes",
                  "--loglevel", "verbose"], port=base)
    srv.tls_port = tls_port
    return srv


def _tls(certs):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    return dict(ssl=True, ssl_ca_certs=p("ca.pem"), ssl_certfile=p("node.pem"), ssl_keyfile=p("node.key"),
                ssl_cert_reqs="required")


def _cli(certs, *args):
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    return subprocess.run(["redis-cli", "--tls", "--cacert", p("ca.pem"), "--cert", p("node.pem"), "--key",
                           p("node.key"), *[str(a) for a in args]], timeout=90, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def _bus_refused(srv, what):
    poll_until(lambda: "cluster bus: connection from" in srv.stdout() + srv.stderr(), timeout=15,
               what="%s logged as refused" % what)


def _c(certs, port):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT, decode_responses=True, **_tls(certs))


def _roles(certs, port):
    """{node id: (port, role, primary id, slots)} from CLUSTER NODES over TLS."""
    out = {}
    for line in _c(certs, port).execute_command("CLUSTER", "NODES").strip().split("\n"):
        f = line.split()
        out[f[0]] = (int(f[1].split("@")[0].rsplit(":", 1)[1]), "master" if "master" in f[2] else "slave",
                     f[3], f[8:])
    return out


def _state(certs, port):
    return "cluster_state:ok" in _c(certs, port).execute_command("CLUSTER", "INFO")


def test_bus_over_tls_create_replicas_writes_failover(certs, tmp_path):
    """redis-cli --cluster create --tls on the TLS ports; the nodes announce them (CLUSTER NODES, SHARDS'
    tls-port), the replicas replicate over TLS, RedisCluster(ssl=True) and redis-cli -c --tls write, a reshard
    moves keys (MIGRATE over TLS), a failover is committed through the TLS bus."""
    srvs = [_host(certs, tmp_path, "h%d" % i) for i in range(3)]
    tports = [s.tls_port for s in srvs]
    try:
        addrs = ["%s:%d" % (HOST, p + k) for k in range(2) for p in tports]
        r = _cli(certs, "--cluster", "create", *addrs, "--cluster-replicas", "1", "--cluster-yes")
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        roles = _roles(certs, tports[0])
        assert sorted(v[0] for v in roles.values()) == sorted(p + k for p in tports for k in range(2))
        shards = _c(certs, tports[0]).execute_command("CLUSTER", "SHARDS")
        ports = sorted(nd[nd.index("tls-port") + 1] for sh in shards for nd in sh[3])
        assert ports == sorted(p + k for p in tports for k in range(2)), shards
        reps = {nid: v for nid, v in roles.items() if v[1] == "slave"}
        assert len(reps) == 3
        for nid, v in reps.items():
            poll_until(lambda: _c(certs, v[0]).execute_command("ROLE")[:4]
                       == ["slave", HOST, roles[v[2]][0], "connected"], timeout=15,
                       what="replica %d linked over TLS" % v[0])
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, tports[0])], decode_responses=True,
                          socket_timeout=TIMEOUT, **_tls(certs))
        for i in range(100):
            rc.set("k%d" % i, i)
        r = _cli(certs, "-c", "-p", tports[1], "set", "cli-key", "v")
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout
        # a reshard: redis-cli's MIGRATEs between nodes run over TLS too
        low = [k for k in ("m%d" % i for i in range(3000)) if key_slot(k.encode()) < 20][:10]
        for k in low:
            rc.set(k, k)
        src = next(nid for nid, v in roles.items() if v[1] == "master" and v[3][0].startswith("0-"))
        dst = next(nid for nid, v in roles.items() if v[1] == "master" and nid != src)
        r = _cli(certs, "--cluster", "reshard", "%s:%d" % (HOST, tports[0]), "--cluster-from", src,
                 "--cluster-to", dst, "--cluster-slots", 20, "--cluster-yes")
        assert r.returncode == 0 and "[ERR]" not in r.stdout, r.stdout[-3000:]
        assert sum(_c(certs, roles[dst][0]).execute_command("CLUSTER", "COUNTKEYSINSLOT", sl)
                   for sl in range(20)) == len(low)
        assert all(rc.get(k) == k for k in low) and all(rc.get("k%d" % i) == str(i) for i in range(100))
        # a failover: its PROMOTE is committed through the log, over the TLS bus
        rport, rpid = next((v[0], v[2]) for v in reps.values())
        rid = _c(certs, rport).execute_command("CLUSTER", "MYID")
        assert _c(certs, rport).execute_command("CLUSTER", "FAILOVER") in ("OK", True)
        poll_until(lambda: all(_roles(certs, p)[rid][1] == "master" and _roles(certs, p)[rpid][1:3] == ("slave", rid)
                               for p in tports), timeout=20, what="the failover committed on every host")
        poll_until(lambda: _c(certs, roles[rpid][0]).execute_command("ROLE")[:3] == ["slave", HOST, rport],
                   timeout=15, what="the old primary following the new one")
        rc.close()
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, tports[1])], decode_responses=True,
                          socket_timeout=TIMEOUT, **_tls(certs))
        assert all(rc.get("k%d" % i) == str(i) for i in range(100)) and rc.get("cli-key") == "v"
        rc.set("after", "1")
        rc.close()
        assert all(_state(certs, p) for p in tports)
    finally:
        for s in srvs:
            s.stop()


def _bus_try(certs, port, cert):
    """A TLS connection to a bus port with cert (None: none): True when the bus accepted the handshake and
    kept the connection after a bogus hello (it must not)."""
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    ctx = ssl.create_default_context(cafile=p("ca.pem"))
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(p(cert + ".pem"), p(cert + ".key"))
    try:
        with socket.create_connection((HOST, port), timeout=TIMEOUT) as raw:
            with ctx.wrap_socket(raw) as s:
                s.settimeout(TIMEOUT)
                s.sendall(b"PING\r\n" * 4)
                return s.recv(64) != b""
    except (ssl.SSLError, OSError):
        return False


def test_bus_refuses_plaintext_unknown_ca_and_no_certificate(certs, tmp_path):
    """Every bad connection to a bus port ends alone, logged: plaintext, a certificate another CA signed, none,
    and a good certificate followed by something that is not a Ruvio bus hello. A host whose bus is plaintext
    (tls-cluster no) or whose certificate another CA signed cannot join. The cluster goes on."""
    a = _host(certs, tmp_path, "a", shards=3)
    bus = a.port + 10000
    try:
        r = _cli(certs, "--cluster", "create", *["%s:%d" % (HOST, a.tls_port + k) for k in range(3)],
                 "--cluster-yes")
        assert "[OK] All 16384 slots covered." in r.stdout, r.stdout
        with socket.create_connection((HOST, bus), timeout=TIMEOUT) as s:
            s.settimeout(TIMEOUT)
            s.sendall(b"PING\r\n")
            try:
                got = s.recv(64)
            except (ConnectionResetError, socket.timeout):
                got = b""
            assert got[:1] != b"+"
        _bus_refused(a, "plaintext")
        assert not _bus_try(certs, bus, "intruder")
        assert not _bus_try(certs, bus, None)
        assert not _bus_try(certs, bus, "node")
        # (the bus may close a connection before its log line is out: wait for the lines, bounded)
        def logged():
            log = a.stdout() + a.stderr()
            return log.count("cluster bus: connection from") >= 4 and "not a Ruvio cluster bus hello" in log
        poll_until(logged, timeout=TIMEOUT, interval=0.05,
                   what="four refused bus connections logged:\n" + (a.stdout() + a.stderr())[-3000:])
        for intruder in ("plaintext", "rogue"):
            b = _host(certs, tmp_path, "b-" + intruder, shards=1, cert="intruder" if intruder == "rogue" else "node",
                      tls_cluster="no" if intruder == "plaintext" else "yes")
            try:
                with pytest.raises(redis.ResponseError):
                    redis.Redis(host=HOST, port=b.port, socket_timeout=30).execute_command(
                        "CLUSTER", "MEET", HOST, a.tls_port)
                assert b.alive()
            finally:
                b.stop()
        assert _state(certs, a.tls_port) and len(_roles(certs, a.tls_port)) == 3 and a.alive()
        # CONFIG SET of a tls-* key applies to the next bus connections: trusting the other CA, the bus now
        # takes the intruder's handshake (and refuses only its hello)
        hellos = lambda: (a.stdout() + a.stderr()).count("not a Ruvio cluster bus hello")  # noqa: E731
        assert hellos() == 1
        assert _c(certs, a.tls_port).config_set("tls-ca-cert-file", os.path.join(certs, "rogue.pem"))
        assert not _bus_try(certs, bus, "intruder")
        poll_until(lambda: hellos() == 2, timeout=15, what="the intruder's handshake taken after the reload")
    finally:
        a.stop()


@pytest.mark.parametrize("missing", ["tls-port", "tls-replication"])
def test_tls_cluster_needs_the_tls_port_and_tls_replication(certs, tmp_path, missing):
    """The nodes announce their TLS ports, which replicas reach over TLS only: in cluster mode tls-cluster yes
    without a tls-port or without tls-replication yes stops the start with the reason."""
    p = lambda n: os.path.join(certs, n)  # noqa: E731
    args = ["--cluster-enabled", "yes", "--tls-cert-file", p("node.pem"), "--tls-key-file", p("node.key"),
            "--tls-ca-cert-file", p("ca.pem"), "--tls-cluster", "yes"]
    if missing != "tls-port":
        args += ["--tls-port", free_ports(1)]
    if missing != "tls-replication":
        args += ["--tls-replication", "yes"]
    srv = launch(args, expect_fail=True)
    assert srv.returncode not in (None, 0)
    assert "tls-cluster yes needs tls-port and tls-replication yes in cluster mode" in srv.stderr() + srv.stdout()


def _jobs(certs, port):
    out = []
    for e in _c(certs, port).execute_command("CLUSTER", "GETSLOTMIGRATIONS"):
        out.append(e if isinstance(e, dict) else dict(zip(e[0::2], e[1::2])))
    return out


def test_atomic_slot_migration_over_tls(certs, tmp_path):
    """CLUSTER MIGRATESLOTS between hosts with tls-cluster yes: the source's link to the target is a TLS
    session that the source's loop writes and reads without waiting (docs/cluster.md "Atomic slot
    migration"). 4.5 MB of values (more than the link's window) and a hash of 20,000 fields (in chunks) move,
    and every key reads back from the target."""
    srvs = [_host(certs, tmp_path, "a%d" % i, shards=1) for i in range(3)]
    tports = [s.tls_port for s in srvs]
    try:
        r = _cli(certs, "--cluster", "create", *["%s:%d" % (HOST, p) for p in tports], "--cluster-yes")
        assert r.returncode == 0 and "[OK] All 16384 slots covered." in r.stdout, r.stdout
        poll_until(lambda: all(_state(certs, p) for p in tports), timeout=30, what="cluster_state ok")
        roles = _roles(certs, tports[0])
        src = next(nid for nid, v in roles.items() if v[3][0].startswith("0-"))
        dst = next(nid for nid in roles if nid != src)
        sc, dc = _c(certs, roles[src][0]), _c(certs, roles[dst][0])
        keys = [k for k in ("t%d" % i for i in range(20000)) if key_slot(k.encode()) < 20][:384]
        p = sc.pipeline(transaction=False)
        for i, k in enumerate(keys):
            p.set(k, ("%03d" % i) * 4096)
        hkey = next(k for k in ("h%d" % i for i in range(20000)) if key_slot(k.encode()) < 20)
        for i in range(0, 20000, 1000):
            p.hset(hkey, mapping={"f%d" % j: "v%d" % j for j in range(i, i + 1000)})
        p.execute()
        assert sc.execute_command("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", 0, 19, "NODE", dst) in ("OK", True)
        poll_until(lambda: _jobs(certs, roles[src][0])[-1]["state"] in ("success", "failed", "cancelled"),
                   timeout=120, interval=0.05, what="the migration to end")
        job = _jobs(certs, roles[src][0])[-1]
        assert job["state"] == "success", job
        poll_until(lambda: _roles(certs, roles[dst][0])[dst][3][0].startswith("0-"), timeout=15,
                   what="the target owns slot 0")
        assert all(dc.get(k) == ("%03d" % i) * 4096 for i, k in enumerate(keys))
        assert dc.hlen(hkey) == 20000 and dc.hget(hkey, "f19999") == "v19999"
        assert sum(dc.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) for s in range(20)) == len(keys) + 1
    finally:
        for s in srvs:
            s.stop()
