"""node-redis's JSON API unchanged (issue 20): client.json.* from @redis/json, the package the pinned `redis`
5.x in tests/clients brings, against ruvio's native JSON documents.

Each scenario is a function of tests/clients/node_redis_json.js, run as `node node_redis_json.js <port>
<scenario> <host>`: it prints "ok <scenario>" and exits 0, or names the mismatch on stderr and exits 1. Every
wait inside it is bounded (20 s), and so is the run. Scenarios: documents (set/get with paths and several
paths, NX/XX, mGet, mSet, del, forget, type), values (strLen/strAppend, numIncrBy/numMultBy, toggle, clear,
merge including a null at the root), containers (arrAppend/arrIndex/arrInsert/arrLen/arrPop/arrTrim,
objKeys/objLen), resp3 (the same API over RESP3) and multi (JSON commands queued in MULTI).

ruvio_only: the redis-server here has no RedisJSON module, so there is no reference to run against; the
expected replies follow RedisJSON 2.x's documentation and tests. Skipped when node or the pinned libraries
(tests/clients/node_modules: `npm ci` there, or scripts/deps.sh test) are missing."""

import os
import shutil
import subprocess

import pytest

from conftest import HOST, REPO

CLIENTS = os.path.join(REPO, "tests", "clients")
NODE = shutil.which("node")
SCRIPT = "node_redis_json.js"
RUN_TIMEOUT = 60        # one scenario: its own deadline is 20 s; generous for a loaded 2-core machine
SCENARIOS = ("documents", "values", "containers", "resp3", "multi")


def _missing():
    if NODE is None:
        return "node is not installed (scripts/deps.sh test installs nodejs and npm)"
    for lib in ("redis", os.path.join("@redis", "json")):
        if not os.path.isfile(os.path.join(CLIENTS, "node_modules", lib, "package.json")):
            return "tests/clients/node_modules/%s is missing (run `npm ci` in tests/clients, or scripts/deps.sh " \
                   "test)" % lib
    return None


pytestmark = [pytest.mark.ruvio_only, pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_node_redis_json(server, r, scenario):
    try:
        p = subprocess.run([NODE, os.path.join(CLIENTS, SCRIPT), str(server.port), scenario, HOST], cwd=CLIENTS,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("%s %s ran past %d s:\n%s\n%s" % (SCRIPT, scenario, RUN_TIMEOUT, e.stdout, e.stderr))
    assert p.returncode == 0 and p.stdout.strip().endswith("ok " + scenario), \
        "%s %s exited %d:\n%s\n%s" % (SCRIPT, scenario, p.returncode, p.stdout[-4000:], p.stderr[-4000:])
    assert r.ping()
