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
