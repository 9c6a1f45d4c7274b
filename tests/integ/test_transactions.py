"""MULTI / EXEC / DISCARD / WATCH / UNWATCH, validated against redis-server."""

import time

import pytest
import redis

from conftest import poll_until


def test_multi_exec_runs_queued_commands(raw):
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("SET", "a", "1") == "QUEUED"
    assert raw.cmd("INCR", "a") == "QUEUED"
    assert raw.cmd("GET", "a") == "QUEUED"
    assert raw.cmd("EXEC") == ["OK", 2, b"2"]


def test_exec_keeps_going_after_a_runtime_error(raw):
    raw.cmd("SET", "s", "notanumber")
    raw.cmd("MULTI")
    assert raw.cmd("INCR", "s") == "QUEUED"
    assert raw.cmd("SET", "t", "x") == "QUEUED"
    res = raw.cmd("EXEC")
    assert str(res[0]) == "ERR value is not an integer or out of range"
    assert res[1] == "OK"
    assert raw.cmd("GET", "t") == b"x"


def test_queue_errors_abort_exec(raw):
    raw.cmd("MULTI")
    assert str(raw.cmd("NOSUCHCMD", "x")).startswith("ERR unknown command 'NOSUCHCMD'")
    assert raw.cmd("SET", "k", "v") == "QUEUED"
    assert str(raw.cmd("GET")) == "ERR wrong number of arguments for 'get' command"
    assert str(raw.cmd("EXEC")) == "EXECABORT Transaction discarded because of previous errors."
    assert raw.cmd("GET", "k") is None
    # the connection is out of MULTI again
    assert str(raw.cmd("EXEC")) == "ERR EXEC without MULTI"


def test_discard_and_errors_outside_multi(raw):
    assert str(raw.cmd("EXEC")) == "ERR EXEC without MULTI"
    assert str(raw.cmd("DISCARD")) == "ERR DISCARD without MULTI"
    raw.cmd("MULTI")
    assert str(raw.cmd("MULTI")) == "ERR MULTI calls can not be nested"
    raw.cmd("SET", "k", "v")
    assert raw.cmd("DISCARD") == "OK"
    assert raw.cmd("GET", "k") is None


def test_watch_inside_multi_is_refused(raw):
    raw.cmd("MULTI")
    assert str(raw.cmd("WATCH", "k")) == "ERR WATCH inside MULTI is not allowed"
    assert raw.cmd("SET", "k", "1") == "QUEUED"
    assert raw.cmd("EXEC") == ["OK"]


def test_watch_detects_another_clients_write(raw):
    other = raw.new()
    raw.cmd("SET", "w", "1")
    assert raw.cmd("WATCH", "w") == "OK"
    assert other.cmd("SET", "w", "2") == "OK"
    raw.cmd("MULTI")
    raw.cmd("SET", "w", "3")
    assert raw.cmd("EXEC") is None
    assert raw.cmd("GET", "w") == b"2"


def test_watch_detects_delete_and_flush(raw):
    other = raw.new()
    for cmd in (("DEL", "w"), ("FLUSHALL",), ("FLUSHDB",)):
        raw.cmd("SET", "w", "1")
        raw.cmd("WATCH", "w")
        other.cmd(*cmd)
        raw.cmd("MULTI")
        raw.cmd("SET", "w", "3")
        assert raw.cmd("EXEC") is None, cmd


def test_watch_untouched_key_lets_exec_run(raw):
    other = raw.new()
    raw.cmd("SET", "w", "1")
    raw.cmd("WATCH", "w", "w2")
    other.cmd("SET", "unrelated", "x")
    raw.cmd("MULTI")
    raw.cmd("INCR", "w")
    assert raw.cmd("EXEC") == [2]


def test_writes_that_change_nothing_leave_watch_alone(raw):
    """Redis signals a key only when a write changed it: EXPIRE of a missing key or with a failed GT,
    GETEX without options, SPOP of a missing set or of count 0 leave a WATCH on it intact."""
    other = raw.new()
    raw.cmd("SET", "w", "1")
    raw.cmd("SADD", "s", "m")
    assert raw.cmd("WATCH", "w", "gone", "s") == "OK"
    assert other.cmd("EXPIRE", "gone", "100") == 0
    assert other.cmd("EXPIRE", "w", "100", "GT") == 0
    assert other.cmd("GETEX", "w") == b"1"
    assert other.cmd("SPOP", "gone") is None
    assert other.cmd("SPOP", "s", "0") == []
    raw.cmd("MULTI")
    raw.cmd("INCR", "w")
    assert raw.cmd("EXEC") == [2]
    # and one that changes something still aborts it
    raw.cmd("WATCH", "w")
    assert other.cmd("EXPIRE", "w", "100") == 1
    raw.cmd("MULTI")
    raw.cmd("INCR", "w")
    assert raw.cmd("EXEC") is None


def test_own_writes_before_multi_invalidate(raw):
    raw.cmd("WATCH", "w")
    raw.cmd("SET", "w", "mine")
    raw.cmd("MULTI")
    raw.cmd("GET", "w")
    assert raw.cmd("EXEC") is None


def test_unwatch_and_exec_clear_watches(raw):
    other = raw.new()
    raw.cmd("WATCH", "w")
    assert raw.cmd("UNWATCH") == "OK"
    other.cmd("SET", "w", "x")
    raw.cmd("MULTI")
    raw.cmd("GET", "w")
    assert raw.cmd("EXEC") == [b"x"]
    # EXEC unwatched everything: a later write does not affect the next transaction
    raw.cmd("WATCH", "w")
    raw.cmd("MULTI")
    raw.cmd("GET", "w")
    assert raw.cmd("EXEC") == [b"x"]
    other.cmd("SET", "w", "y")
    raw.cmd("MULTI")
    raw.cmd("GET", "w")
    assert raw.cmd("EXEC") == [b"y"]


def test_watched_key_expiring_aborts_exec(raw):
    raw.cmd("SET", "w", "1", "PX", "50")
    raw.cmd("WATCH", "w")
    poll_until(lambda: raw.new().cmd("EXISTS", "w") == 0, what="key to expire")
    raw.cmd("MULTI")
    raw.cmd("SET", "w", "2")
    assert raw.cmd("EXEC") is None


def test_discard_unwatches(raw):
    other = raw.new()
    raw.cmd("WATCH", "w")
    raw.cmd("MULTI")
    raw.cmd("DISCARD")
    other.cmd("SET", "w", "x")
    raw.cmd("MULTI")
    raw.cmd("GET", "w")
    assert raw.cmd("EXEC") == [b"x"]


def test_redis_py_transaction_with_watch(r):
    r.set("counter", 10)
    with r.pipeline() as p:
        p.watch("counter")
        v = int(p.get("counter"))
        p.multi()
        p.set("counter", v + 1)
        assert p.execute() == [True]
    assert r.get("counter") == "11"
    other = redis.Redis(host=r.connection_pool.connection_kwargs["host"],
                        port=r.connection_pool.connection_kwargs["port"], socket_timeout=10)
    with r.pipeline() as p:
        p.watch("counter")
        other.set("counter", 100)
        p.multi()
        p.incr("counter")
        with pytest.raises(redis.WatchError):
            p.execute()
    other.close()
    assert r.get("counter") == "100"


def test_reset_leaves_multi(raw):
    raw.cmd("MULTI")
    raw.cmd("SET", "k", "v")
    assert raw.cmd("RESET") == "RESET"
    assert str(raw.cmd("EXEC")) == "ERR EXEC without MULTI"
    assert raw.cmd("GET", "k") is None


def test_exec_in_resp3_and_queued_replies(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("MULTI")
    assert raw.cmd("GET", "nokey") == "QUEUED"
    assert raw.cmd("EXEC") == [None]
