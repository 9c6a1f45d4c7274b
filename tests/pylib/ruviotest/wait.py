"""Bounded waits on a condition: a test that sleeps "long enough" is either slow or flaky; one that polls the
thing it waits for is neither."""

import time


def wait_for(fn, timeout=10.0, interval=0.1, what="condition", error=AssertionError):
    """Poll fn() every `interval` seconds until it returns something truthy, and return that; after `timeout`
    seconds raise `error` naming `what` and the last value. fn may raise to give up at once."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise error("timed out after %ss waiting for %s (last=%r)" % (timeout, what, v))
        time.sleep(interval)


def wal_durable(c):
    """True when the node behind redis-py client c has its WAL on disk up to its last record (INFO persistence:
    wal_durable_lsn == wal_last_lsn); under everysec that is after the next sync, instead of a sleep of 1 s+."""
    i = c.info("persistence")
    return i["wal_durable_lsn"] == i["wal_last_lsn"]


def wait_durable(c, timeout=5.0, interval=0.02):
    wait_for(lambda: wal_durable(c), timeout=timeout, interval=interval, what="the WAL synced to its last record")
