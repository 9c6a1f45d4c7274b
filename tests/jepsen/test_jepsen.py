"""CI wrapper of the Jepsen harness (README.md): a few seeds of the `ci` fault profile, every invariant checked.

    RUVIO_JEPSEN_SEEDS=1,2        seeds (one test each)
    RUVIO_JEPSEN_DURATION=60      seconds of faults per seed (3600 for a long run)
    RUVIO_JEPSEN_FAULTS=ci        a profile (ci, all) or a comma list of faults
    RUVIO_JEPSEN_OUT=DIR          keep each seed's history in DIR/seed-N (default: a temporary folder, kept
                                  only when the seed fails)"""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run as jepsen  # noqa: E402
import netns  # noqa: E402

SEEDS = [int(s) for s in os.environ.get("RUVIO_JEPSEN_SEEDS", "1,2").split(",") if s.strip()]
DURATION = int(os.environ.get("RUVIO_JEPSEN_DURATION", "60"))
FAULTS = os.environ.get("RUVIO_JEPSEN_FAULTS", "ci")


@pytest.mark.parametrize("seed", SEEDS)
def test_jepsen(seed):
    why = netns.unavailable()
    if why:
        pytest.skip(why)
    if not os.path.exists(jepsen.cl.netns_bin()):
        pytest.fail("ruvio binary not found at %s (set RUVIO_BIN or build it)" % jepsen.cl.netns_bin())
    keep = os.environ.get("RUVIO_JEPSEN_OUT")
    out = os.path.join(keep, "seed-%d" % seed) if keep else tempfile.mkdtemp(prefix="ruvio-jepsen-%d-" % seed)
    opts = jepsen.parse(["--seed", str(seed), "--duration", str(DURATION), "--faults", FAULTS, "--out", out])
    ok, summary = jepsen.run_once(opts)
    assert summary["ops"] > 0 and summary["ok"] > 0, "no write was acknowledged: %s" % summary
    assert ok, "invariants %s failed with seed %d; history in %s (the report is printed above)" % (
        summary["failed"], seed, out)
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
