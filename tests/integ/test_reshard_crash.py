"""Resharding is crash-safe (issue 14, finding 5).

A 2-shard data directory is restarted with 3 shards and the process dies at each step of the redistribution
and of its cleanup (RUVIO_FAILPOINT=<site>: _exit(77) there, standing in for kill -9). The next start, with the
new shard count or with the old one, holds exactly the data set that was written: every key, type, value and
deadline. A short randomized kill -9 loop runs too; RUVIO_RESHARD_KILLS=N runs N kills on a larger data set."""
import collections
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import _server_argv, free_ports, launch

pytestmark = pytest.mark.ruvio_only

NKEYS = 3000
EXIT_WAIT = 15

# every step, in the order a redistribution reaches them
SITES = [
    "reshard-move-aside",      # one old shard directory moved into resharding.tmp, not the others
    "reshard-moved",           # resharding.tmp renamed to resharding (the old data is set aside)
    "reshard-redistribute",    # one old shard rebuilt into the new ones, not the other
    "reshard-ckpt",            # one new shard checkpointed, not the others
    "reshard-layout",          # every new shard checkpointed, layout written, resharding/ not yet renamed
    "reshard-commit",          # resharding/ renamed to resharding.old (the new data is complete)
    "reshard-cleanup",         # the old data partly deleted
]

# a kill at the first site, then again while the next start repairs what it left
TWICE = [
    ("reshard-move-aside", "reshard-undo"),         # moving the old directories back from resharding.tmp
    ("reshard-redistribute", "reshard-discard"),    # deleting the partial new directories
    ("reshard-cleanup", "reshard-cleanup"),         # deleting resharding.old at start-up
]


def env_with(**kw):
    env = os.environ.copy()
    env.pop("RUVIO_FAILPOINT", None)
    env.update(kw)
    return env


def start(d, nshards, env=None, **kw):
    return launch(("--dir", str(d), "--durability", "everysec", "--shards", str(nshards)),
                  env=env or env_with(), **kw)


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def stop(srv):
    """Stop srv and remove its workdir; fails on a sanitizer report in its output (the ASan build)."""
    srv.stop()
    out = srv.stderr() + srv.stdout()
    shutil.rmtree(srv.workdir, ignore_errors=True)
    hits = [m for m in SANITIZER_MARKS if m in out]
    assert not hits, "sanitizer report: %s" % out[-3000:]


def state(srv):
    """Every key of every shard: key -> (type, value, PEXPIRETIME); a key in two shards fails."""
    out = {}
    for port in srv.ports:
        c = redis.Redis(host=srv.host, port=port, socket_timeout=10)
        keys = list(c.scan_iter(count=1000))
        p = c.pipeline(transaction=False)
        for k in keys:
            p.type(k)
            p.execute_command("PEXPIRETIME", k)
        meta = p.execute()
        p = c.pipeline(transaction=False)
        for i, k in enumerate(keys):
            t = meta[2 * i].decode()
            {"string": p.get, "list": lambda k: p.lrange(k, 0, -1), "hash": p.hgetall,
             "set": p.smembers, "zset": lambda k: p.zrange(k, 0, -1, withscores=True)}[t](k)
        vals = p.execute()
        for i, k in enumerate(keys):
            assert k not in out, "key %r is in two shards" % k
            v = vals[i]
            out[k] = (meta[2 * i], sorted(v.items()) if isinstance(v, dict) else
                      sorted(v) if isinstance(v, set) else v, meta[2 * i + 1])
        c.close()
    return out


def write_data(srv, nkeys):
    rc = redis.RedisCluster(host=srv.host, port=srv.port, socket_timeout=10)
    p = rc.pipeline()
    for i in range(nkeys):
        p.set("k%d" % i, "v%d" % i)
    p.execute()
    rc.rpush("{t}list", *range(200))
    rc.hset("{t}hash", mapping={"f%d" % i: i for i in range(50)})
    rc.sadd("set", *range(40))
    rc.zadd("zset", {"m%d" % i: i for i in range(30)})
    rc.set("ttl", "x", px=600000)
    rc.close()


@pytest.fixture(scope="module")
def template():
    """A 2-shard data directory (everysec, clean shutdown) and its state, built once."""
    base = tempfile.mkdtemp(prefix="ruvio-reshard-")
    d = os.path.join(base, "data")
    srv = start(d, 2)
    try:
        write_data(srv, NKEYS)
        want = state(srv)
    finally:
        stop(srv)
    assert srv.proc.returncode == 0
    assert len(want) == NKEYS + 5
    yield d, want
    shutil.rmtree(base, ignore_errors=True)


def leftovers(d):
    return sorted(x for x in os.listdir(d) if x.startswith("resharding"))


def check_start(d, nshards, want):
    """Start on d with nshards: it must come up holding exactly want, with nothing left aside."""
    srv = start(d, nshards)
    try:
        got = state(srv)
        missing = [k for k in want if k not in got]
        assert not missing, "%d of %d keys missing after the restart, e.g. %r\n%s" % (
            len(missing), len(want), missing[:5], srv.stderr()[-2000:])
        assert got == want
        assert leftovers(d) == []
        shards = sorted(x for x in os.listdir(d) if x.startswith("shard-"))
        assert shards == ["shard-%d" % k for k in range(nshards)]
    finally:
        stop(srv)
    assert open(os.path.join(d, "layout")).read().strip() == "shards %d" % nshards


def die_at(d, nshards, site):
    srv = start(d, nshards, env=env_with(RUVIO_FAILPOINT=site), expect_fail=True, exit_timeout=EXIT_WAIT)
    out = srv.stderr() + srv.stdout()
    shutil.rmtree(srv.workdir, ignore_errors=True)
    assert not [m for m in SANITIZER_MARKS if m in out], out[-3000:]
    assert srv.returncode == 77, "expected the failpoint %s to exit 77, got %s: %s" % (
        site, srv.returncode, out[-2000:])
    assert "failpoint %s: exiting" % site in out


@pytest.mark.parametrize("again", [3, 2], ids=["restart-3", "restart-2"])
@pytest.mark.parametrize("site", SITES)
def test_kill_at_each_step_restarts_complete(template, tmp_path, site, again):
    d = tmp_path / "data"
    shutil.copytree(template[0], d)
    die_at(d, 3, site)
    check_start(d, again, template[1])


@pytest.mark.parametrize("first,second", TWICE, ids=["-".join(t) for t in TWICE])
def test_kill_while_repairing_an_interrupted_one(template, tmp_path, first, second):
    d = tmp_path / "data"
    shutil.copytree(template[0], d)
    die_at(d, 3, first)
    die_at(d, 3, second)
    check_start(d, 3, template[1])


def test_randomized_kill9_during_redistribution(template, tmp_path):
    """kill -9 at a random moment of a redistribution, restart with another count, check; repeat.
    RUVIO_RESHARD_KILLS=N (default 4) kills; with N > 4 the data set is larger (a longer window to hit)."""
    kills = int(os.environ.get("RUVIO_RESHARD_KILLS", "4"))
    rnd = random.Random(int(os.environ.get("RUVIO_RESHARD_SEED", str(int(time.time())))))
    d = tmp_path / "data"
    if kills > 4:
        srv = start(d, 2)
        try:
            write_data(srv, 100000)
            want = state(srv)
        finally:
            stop(srv)
    else:
        shutil.copytree(template[0], d)
        want = template[1]
    found = collections.Counter()      # what each kill left: resharding*, or "-" for nothing
    counts = [2, 3, 1, 4]
    n = 2
    for i in range(kills):
        target = rnd.choice([c for c in counts if c != n])
        argv = _server_argv(free_ports(target), str(d), ["--durability", "everysec", "--shards", str(target)])
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env_with())
        time.sleep(rnd.uniform(0, 0.15 if kills <= 4 else 0.8))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        found[",".join(leftovers(d)) or "-"] += 1
        n = rnd.choice(counts)
        check_start(d, n, want)
    print("kills: %d; left behind: %s" % (kills, dict(found)))
