"""The deploy/examples configs, made runnable: tokens substituted, and (until replication is merged) the
replication keys this binary does not know yet stripped."""

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
RUVIO_BIN = os.environ.get("RUVIO_BIN", str(REPO / "build" / "ruvio"))
NODES = ("primary", "replica1", "replica2")
PASSWORD = "s3cret-ruvio"
PORT = 6379
SENTINEL_PORT = 26379

# TODO(lead, at the h/repl merge): delete PENDING_KEYS and the stripping below. These are the keys
# deploy/examples use that h/repl adds to node/config.c; a binary without them would refuse the examples.
# Any other unknown key fails the tests (the examples must not rot).
PENDING_KEYS = {"replicaof", "slaveof", "masterauth", "masteruser", "replica-read-only", "replica-serve-stale-data",
                "replica-priority", "replica-announce-ip", "replica-announce-port", "min-replicas-to-write",
                "min-replicas-max-lag", "repl-backlog-size", "repl-timeout"}


def tokens(ips, password=PASSWORD):
    """ips: dict with primary, replica1, replica2 -> address."""
    return {"@PRIMARY_IP@": ips["primary"], "@REPLICA1_IP@": ips["replica1"], "@REPLICA2_IP@": ips["replica2"],
            "@PASSWORD@": password}


def substitute(text, toks):
    for k, v in toks.items():
        text = text.replace(k, v)
    assert "@" not in "".join(l.split("#")[0] for l in text.splitlines()), "unsubstituted token left: %s" % text
    return text


def _norm(key):
    return key.lower().replace("_", "-")


_known = None


def ruvio_config_keys(binary=RUVIO_BIN):
    """The config key names this ruvio binary accepts (CONFIG GET * on a throwaway loopback instance)."""
    global _known
    if _known is not None:
        return _known
    d = tempfile.mkdtemp(prefix="ruvio-keys-")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import redis
        deadline = time.monotonic() + 10
        while True:
            try:
                c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, decode_responses=True)
                _known = {_norm(k) for k in c.config_get("*")}
                c.close()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or p.poll() is not None:
                    raise
                time.sleep(0.05)
    finally:
        p.terminate()
        p.wait(timeout=10)
        subprocess.run(["rm", "-rf", d], timeout=10)
    return _known


def runnable(text, known=None):
    """(text without the pending keys this binary lacks, [stripped lines])."""
    known = ruvio_config_keys() if known is None else known
    out, stripped = [], []
    for line in text.splitlines(keepends=True):
        words = line.split("#", 1)[0].split()
        if words and _norm(words[0]) not in known and _norm(words[0]) in PENDING_KEYS:
            stripped.append(line.strip())
            out.append("# stripped until replication is merged: " + line)
            continue
        out.append(line)
    return "".join(out), stripped


def node_config(name, toks, known=None):
    """deploy/examples/<name>.conf, substituted and runnable: (text, stripped lines)."""
    return runnable(substitute((EXAMPLES / ("%s.conf" % name)).read_text(), toks), known)


def sentinel_config(i, toks):
    """deploy/examples/sentinel<i>.conf (i = 1..3), substituted."""
    return substitute((EXAMPLES / ("sentinel%d.conf" % i)).read_text(), toks)


def node_argv(conf_path, datadir, *extra):
    """How tests start an example: its file, then flags for what is host-specific (data dir, log to stderr)
    plus what tests need (DEBUG DIGEST)."""
    return [RUVIO_BIN, conf_path, "--dir", datadir, "--logfile", "", "--enable-debug-command", "yes"] + list(extra)
