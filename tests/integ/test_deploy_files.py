"""deploy/: the systemd unit is well-formed and says what docs/deploy.md promises; every example config
starts a node (the multi-host tests run them for real in network namespaces, tests/multihost)."""

import configparser
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, RUVIO_BIN

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
