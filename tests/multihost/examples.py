"""The deploy/examples configs, made runnable: tokens substituted. Every key must be known to the binary (the
examples must not rot)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
RUVIO_BIN = os.environ.get("RUVIO_BIN", str(REPO / "build" / "ruvio"))
NODES = ("primary", "replica1", "replica2")
PASSWORD = "s3cret-ruvio"
PORT = 6379
SENTINEL_PORT = 26379


def tokens(ips, password=PASSWORD):
    """ips: dict with primary, replica1, replica2 -> address."""
    return {"@PRIMARY_IP@": ips["primary"], "@REPLICA1_IP@": ips["replica1"], "@REPLICA2_IP@": ips["replica2"],
            "@PASSWORD@": password}


def substitute(text, toks):
    for k, v in toks.items():
        text = text.replace(k, v)
    assert "@" not in "".join(l.split("#")[0] for l in text.splitlines()), "unsubstituted token left: %s" % text
    return text


def node_config(name, toks):
    """deploy/examples/<name>.conf, substituted."""
    return substitute((EXAMPLES / ("%s.conf" % name)).read_text(), toks)


def sentinel_config(i, toks):
    """deploy/examples/sentinel<i>.conf (i = 1..3), substituted."""
    return substitute((EXAMPLES / ("sentinel%d.conf" % i)).read_text(), toks)


def node_argv(conf_path, datadir, *extra):
    """How tests start an example: its file, then flags for what is host-specific (data dir, log to stderr)
    plus what tests need (DEBUG DIGEST)."""
    return [RUVIO_BIN, conf_path, "--dir", datadir, "--logfile", "", "--enable-debug-command", "yes"] + list(extra)
