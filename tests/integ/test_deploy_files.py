"""deploy/: the systemd unit is well-formed and says what docs/deploy.md promises; every example config
starts a node (the multi-host tests run them for real in network namespaces, tests/multihost)."""

import configparser
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, RUVIO_BIN, free_ports, wait_for

sys.path.insert(0, str(REPO / "tests" / "multihost"))
import examples  # noqa: E402

pytestmark = pytest.mark.ruvio_only
UNIT = REPO / "deploy" / "ruvio.service"


def unit():
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str
    cp.read(UNIT)
    return cp


def test_unit_file_contract():
    svc = unit()["Service"]
    assert svc["Type"] == "notify"
    assert svc["ExecStart"].split()[1] == "/etc/ruvio/ruvio.conf"
    assert svc["Restart"] == "on-failure"
    assert int(svc["LimitNOFILE"]) >= 65536
    assert svc["User"] == "ruvio" and svc["Group"] == "ruvio"
    assert svc["ProtectSystem"] == "strict"
    # the data dir and the config dir (CONFIG REWRITE) stay writable under ProtectSystem=strict
    assert set(svc["ReadWritePaths"].split()) >= {"/var/lib/ruvio", "/etc/ruvio"}
    assert svc["StateDirectory"] == "ruvio"
    text = open(examples.EXAMPLES / "primary.conf").read()
    assert "dir /var/lib/ruvio" in text


def test_unit_file_verifies():
    sa = shutil.which("systemd-analyze")
    if sa is None:
        pytest.skip("systemd-analyze not installed")
    d = tempfile.mkdtemp(prefix="ruvio-unit-")
    try:
        path = os.path.join(d, "ruvio.service")
        with open(path, "w") as f:
            f.write(open(UNIT).read().replace("/usr/bin/ruvio", RUVIO_BIN))
        r = subprocess.run([sa, "verify", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stdout
        assert "ruvio.service" not in r.stdout, r.stdout     # no warning about our unit
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("name", examples.NODES)
def test_example_config_starts(start_server, name):
    toks = examples.tokens({"primary": "127.0.0.1", "replica1": "127.0.0.1", "replica2": "127.0.0.1"})
    text = examples.node_config(name, toks)
    d = tempfile.mkdtemp(prefix="ruvio-example-")
    try:
        conf = os.path.join(d, "ruvio.conf")
        with open(conf, "w") as f:
            f.write(text)
        srv = start_server(argv=examples.node_argv(conf, "{dir}", "--port", "{port}", "--bind", "127.0.0.1"))
        c = srv.client(password=examples.PASSWORD)
        assert c.ping()
        assert c.config_get("durability") == {"durability": "everysec"}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_sentinel_examples_are_complete():
    toks = examples.tokens({"primary": "10.0.0.1", "replica1": "10.0.0.2", "replica2": "10.0.0.3"})
    for i in (1, 2, 3):
        text = examples.sentinel_config(i, toks)
        assert "sentinel monitor ruvio-main 10.0.0.1 6379 2" in text
        assert "sentinel auth-pass ruvio-main %s" % examples.PASSWORD in text
        assert "bind 10.0.0.%d 127.0.0.1" % i in text


# -- deploy/cluster: the three-host cluster example -----------------------------------------------------------

CLUSTER = REPO / "deploy" / "cluster"
HOSTS = (1, 2, 3)


def cluster_config(i, ips):
    """deploy/cluster/host<i>.conf with @HOST1_IP@.. replaced by ips[0..2]."""
    text = (CLUSTER / ("host%d.conf" % i)).read_text()
    for j, ip in zip(HOSTS, ips):
        text = text.replace("@HOST%d_IP@" % j, ip)
    assert "@" not in "".join(line.split("#")[0] for line in text.splitlines()), text
    return text


def config_keys(text):
    out = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            k, _, v = line.partition(" ")
            assert k not in out, "%s given twice" % k
            out[k] = v.strip()
    return out


def create_command():
    """The `redis-cli --cluster create` line of deploy/cluster/README.md, as a list of words."""
    lines = [line.strip() for line in (CLUSTER / "README.md").read_text().splitlines()
             if line.strip().startswith("redis-cli --cluster create")]
    assert len(lines) == 1, lines
    return lines[0].split()


def test_cluster_example_configs_and_create_command_agree():
    ips = ("10.0.0.1", "10.0.0.2", "10.0.0.3")
    nodes, first = [], []
    for i, ip in zip(HOSTS, ips):
        k = config_keys(cluster_config(i, ips))
        assert k["cluster-enabled"] == "yes" and k["cluster-config-file"] == "nodes.conf"
        assert int(k["cluster-node-timeout"]) >= 1000 and k["dir"] == "/var/lib/ruvio"
        assert k["cluster-announce-ip"] == ip and k["bind"].split()[0] == ip
        port, shards = int(k["port"]), int(k["shards"])
        nodes += ["%s:%d" % (ip, port + s) for s in range(shards)]
        first.append("%s:%d" % (ip, port))
    words = create_command()
    addrs = [w.replace("@HOST%d_IP@" % j, ip) for w in words[3:] if not w.startswith("--")
             for j, ip in zip(HOSTS, ips) if "@HOST%d_IP@" % j in w]
    assert words[:3] == ["redis-cli", "--cluster", "create"]
    assert sorted(addrs) == sorted(nodes) and len(addrs) == len(nodes) == 6, (addrs, nodes)
    # the primaries first, one per host: redis-cli takes the first len/(replicas+1) as primaries
    assert addrs[:3] == first, addrs
    assert words[words.index("--cluster-replicas") + 1] == "1"
    # the same systemd unit runs a cluster host: the config file and the data dir it names
    svc = unit()["Service"]
    assert svc["ExecStart"].split()[1] == "/etc/ruvio/ruvio.conf" and svc["StateDirectory"] == "ruvio"


def test_cluster_example_creates_a_cluster(start_server):
    """The three configs, each on its own loopback address (127.0.0.1..3; ports from the test's pool), made one
    cluster by the README's own command: three primaries with a replica each on another host."""
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli not installed")
    ips = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
    srvs = []
    for i, ip in zip(HOSTS, ips):
        d = tempfile.mkdtemp(prefix="ruvio-cluster-example-")
        conf = os.path.join(d, "ruvio.conf")
        with open(conf, "w") as f:
            f.write(cluster_config(i, ips))
        # the host's address and loopback, as in the file; loopback is where the test harness pings
        bind = ip if ip == "127.0.0.1" else "%s 127.0.0.1" % ip
        srvs.append(start_server(argv=[RUVIO_BIN, conf, "--dir", "{dir}", "--port", "{port}", "--logfile", "",
                                       "--bind", bind], nports=2, port=free_ports(2, also_bus=True)))
        srvs[-1].confdir = d
    try:
        words = create_command()
        for j, (ip, srv) in enumerate(zip(ips, srvs), 1):
            words = [w.replace("@HOST%d_IP@:7000" % j, "%s:%d" % (ip, srv.port))
                      .replace("@HOST%d_IP@:7001" % j, "%s:%d" % (ip, srv.port + 1)) for w in words]
        r = subprocess.run(["timeout", "60"] + words + ["--cluster-yes"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=70)
        assert r.returncode == 0, r.stdout + "\n".join(s.stderr()[-2000:] for s in srvs)
        c = srvs[0].client(decode_responses=True)

        def formed():
            nodes = [line.split() for line in c.execute_command("CLUSTER", "NODES").splitlines()]
            prim = {f[0]: f[1].split(":")[0] for f in nodes if "master" in f[2]}
            reps = [(f[1].split(":")[0], f[3]) for f in nodes if "slave" in f[2]]
            return len(prim) == 3 and len(reps) == 3 and all(r[1] in prim and prim[r[1]] != r[0] for r in reps)
        wait_for(formed, timeout=20, what="three primaries, each with a replica on another host")
        info = dict(line.split(":", 1) for line in c.execute_command("CLUSTER", "INFO").split() if ":" in line)
        assert info["cluster_state"] == "ok" and info["cluster_known_nodes"] == "6", info
        assert info["topology_log_voters"] == "3", info
        assert c.config_get("cluster-node-timeout") == {"cluster-node-timeout": "5000"}
    finally:
        for s in srvs:
            shutil.rmtree(s.confdir, ignore_errors=True)
