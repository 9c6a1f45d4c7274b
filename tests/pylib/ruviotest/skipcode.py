"""pytest plugin (`-p ruviotest.skipcode`): a session in which tests ran and every one was skipped exits with
SKIPPED_EXIT instead of 0, so ctest (SKIP_RETURN_CODE) reports the multi-host tests that cannot run here (no
root, no `ip netns`) as skipped, not passed. Any pass, failure or error keeps pytest's own status."""

SKIPPED_EXIT = 77

_counts = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _counts[report.outcome] = _counts.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _counts.get("skipped") and set(_counts) == {"skipped"}:
        session.exitstatus = SKIPPED_EXIT
