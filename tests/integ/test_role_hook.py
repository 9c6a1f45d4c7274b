"""on_role_change (issue 5): run from a background thread, in order, bounded in time, never blocking a shard.
Triggered by hand with DEBUG ROLE-CHANGE-HOOK (replication calls the same hook_role_change())."""

import os
import shutil
import stat
import tempfile
import time

import pytest
import redis

from conftest import poll_until

pytestmark = pytest.mark.ruvio_only

SCRIPT = """#!/bin/sh
# records its arguments; "slow" sleeps first, "hang" never ends, "fail" exits 3
case "$1" in
  slow) sleep 1 ;;
  hang) sleep 60 ;;
  fail) echo "$@" >> "{out}"; exit 3 ;;
  term) trap - TERM; kill -TERM $$; sleep 5 ;;
esac
echo "$@" >> "{out}"
"""


@pytest.fixture
def hook(start_server):
    d = tempfile.mkdtemp(prefix="ruvio-hook-")
    out = os.path.join(d, "calls.txt")
    path = os.path.join(d, "hook with space.sh")
    with open(path, "w") as f:
        f.write(SCRIPT.replace("{out}", out))
    os.chmod(path, stat.S_IRWXU)

    def start(*extra):
        srv = start_server("--enable-debug-command", "yes", "--on_role_change", path, *extra)
        return srv, srv.client()

    start.out = out
    start.calls = lambda: open(out).read().splitlines() if os.path.exists(out) else []
    yield start
    shutil.rmtree(d, ignore_errors=True)


def fire(c, *args):
    return c.execute_command("DEBUG", "ROLE-CHANGE-HOOK", *args)


def test_hook_gets_its_arguments(hook):
    srv, c = hook()
    assert fire(c, "master", "slave", 7, "10.213.0.2", 6379)
    poll_until(lambda: hook.calls() == ["master slave 7 10.213.0.2 6379"], timeout=5, what="the hook's output")
    poll_until(lambda: "exited with status 0" in srv.stderr(), timeout=5, what="the hook's exit in the log")


def test_hooks_run_in_order_without_blocking_the_shard(hook):
    srv, c = hook()
    t0 = time.monotonic()
    fire(c, "slow", "a", 1, "h", 1)
    fire(c, "fast", "b", 2, "h", 2)
    fire(c, "fast", "c", 3, "h", 3)
    assert c.ping()
    assert time.monotonic() - t0 < 0.5           # the 1 s sleep of the first hook is not on the request path
    assert hook.calls() == []
    poll_until(lambda: len(hook.calls()) == 3, timeout=10, what="three hook runs")
    assert [l.split()[1] for l in hook.calls()] == ["a", "b", "c"]


def test_hung_hook_is_killed_and_the_next_runs(hook):
    srv, c = hook("--on_role_change_timeout", "1")
    t0 = time.monotonic()
    fire(c, "hang", "x", 1, "h", 1)
    fire(c, "after", "y", 2, "h", 2)
    poll_until(lambda: hook.calls() == ["after y 2 h 2"], timeout=10, what="the hook after the hung one")
    assert time.monotonic() - t0 < 8
    assert "killed after the 1 s limit" in srv.stderr()


def test_failures_are_logged(hook):
    srv, c = hook()
    fire(c, "fail", "z", 9, "h", 1)
    poll_until(lambda: "exited with status 3" in srv.stderr(), timeout=5, what="the exit status in the log")
    # the hook starts with SIGTERM deliverable (the node blocks it in its own threads)
    fire(c, "term", "z", 9, "h", 1)
    poll_until(lambda: "terminated by signal 15" in srv.stderr(), timeout=5, what="SIGTERM reaching the hook")
    assert c.ping()


def test_missing_executable_and_no_hook(hook, start_server):
    srv = start_server("--enable-debug-command", "yes", "--on_role_change", "/nonexistent/hook")
    c = srv.client()
    assert fire(c, "master", "slave", 1, "h", 1)
    poll_until(lambda: "on_role_change: cannot run '/nonexistent/hook'" in srv.stderr(), timeout=5,
               what="the spawn error in the log")
    assert c.ping()
    plain = start_server("--enable-debug-command", "yes").client()
    assert fire(plain, "master", "slave", 1, "h", 1)       # no hook configured: nothing to run


def test_hook_config_is_not_live(hook):
    srv, c = hook()
    assert c.config_get("on_role_change")["on_role_change"].endswith("hook with space.sh")
    with pytest.raises(redis.exceptions.ResponseError, match="can't set immutable config"):
        c.config_set("on_role_change", "/bin/true")
    c.config_set("on_role_change_timeout", 3)
    with pytest.raises(redis.exceptions.ResponseError):
        fire(c, "a", "b", "notanumber", "h", 1)
    with pytest.raises(redis.exceptions.ResponseError):
        fire(c, "a", "b", 1, "h")


def test_real_role_changes_run_the_hook(hook, start_server):
    """REPLICAOF host port and REPLICAOF NO ONE run the hook once per node (shard 0), with the epoch and
    the new primary's address (the node's own once it is the primary)."""
    primary = start_server("--shards", "2")
    srv, c = hook("--shards", "2")
    assert c.execute_command("REPLICAOF", "127.0.0.1", primary.port) == "OK"
    poll_until(lambda: len(hook.calls()) == 1, timeout=5, what="the hook after REPLICAOF")
    old, new, epoch, host, port = hook.calls()[0].split()
    assert (old, new, host, int(port)) == ("master", "slave", "127.0.0.1", primary.port)
    poll_until(lambda: c.info("replication").get("master_link_status") == "up", timeout=10, what="link up")
    assert c.execute_command("REPLICAOF", "NO", "ONE") == "OK"
    poll_until(lambda: len(hook.calls()) == 2, timeout=5, what="the hook after REPLICAOF NO ONE")
    old, new, epoch2, host, port = hook.calls()[1].split()
    assert (old, new, int(port)) == ("slave", "master", srv.port)
    assert int(epoch2) == int(c.info("replication")["repl_epoch"]) and int(epoch2) > int(epoch)
    time.sleep(0.3)
    assert len(hook.calls()) == 2        # once per node, not once per shard
