"""MULTI / EXEC / DISCARD / WATCH / UNWATCH, validated against redis-server."""

import time

import pytest
import redis

from conftest import RespError, encode_command, poll_until


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
    # the key must still be live when WATCH runs: PTTL after WATCH says so, else retry with a longer TTL
    for ttl in (100, 400, 1600, 6400):
        raw.cmd("SET", "w", "1", "PX", str(ttl))
        raw.cmd("WATCH", "w")
        if raw.cmd("PTTL", "w") > 0:
            break
        raw.cmd("UNWATCH")
    else:
        pytest.fail("the key expired before WATCH every time")
    poll_until(lambda: raw.new().cmd("EXISTS", "w") == 0, timeout=10, what="key to expire")
    raw.cmd("MULTI")
    raw.cmd("SET", "w", "2")
    assert raw.cmd("EXEC") is None


# (setup, watched key, the other client's write, whether EXEC then aborts): WATCH is touched by exactly the keys a
# write modified (Redis's signalModifiedKey, the keys CLIENT TRACKING invalidates), checked against redis-server
SIGNALLED = [
    ([("SADD", "s1", "a"), ("SADD", "s2", "a")], "s1", ("SINTERSTORE", "d", "s1", "s2"), False),
    ([("SADD", "s1", "a"), ("SADD", "s2", "a")], "d", ("SINTERSTORE", "d", "s1", "s2"), True),
    ([("SADD", "s1", "a"), ("SADD", "s2", "b")], "d", ("SINTERSTORE", "d", "s1", "s2"), False),
    ([("ZADD", "z", "1", "a")], "z", ("ZUNIONSTORE", "d", "1", "z"), False),
    ([("SET", "k", "v")], "k", ("COPY", "k", "c"), False),
    ([("SET", "k", "v")], "c", ("COPY", "k", "c"), True),
    ([("SET", "k", "v"), ("SET", "c", "x")], "c", ("COPY", "k", "c"), False),
    ([("PFADD", "h1", "a")], "h1", ("PFMERGE", "h2", "h1"), False),
    ([("PFADD", "h1", "a")], "h2", ("PFMERGE", "h2", "h1"), True),
    # a PFCOUNT whose cached estimate is fresh (Redis) writes nothing: the difference is in docs/commands-hll.md
    ([("PFADD", "h1", "a"), ("PFCOUNT", "h1")], "h1", ("PFCOUNT", "h1"), False),
    ([("PFADD", "h1", "a"), ("PFCOUNT", "h1")], "h1", ("PFADD", "h1", "b"), True),
    ([("PFADD", "h1", "a"), ("PFCOUNT", "h1")], "h1", ("PFADD", "h1", "a"), False),
    ([("SET", "s", "ab")], "s", ("BITOP", "OR", "b", "s"), False),
    ([("RPUSH", "l", "1")], "l", ("SORT", "l", "STORE", "d"), False),
    ([("GEOADD", "g", "1", "1", "m")], "g", ("GEORADIUS", "g", "1", "1", "10", "km", "STORE", "r"), False),
    ([("GEOADD", "g", "1", "1", "m")], "g", ("GEOADD", "g", "1", "1", "m"), False),
    ([("SET", "k", "v")], "k", ("SET", "k", "v"), True),
    ([("HSET", "h", "f", "v")], "h", ("HSET", "h", "f", "v"), True),
    ([("SET", "k", "1")], "k", ("INCRBY", "k", "0"), True),
    ([("SET", "k", "1")], "k", ("APPEND", "k", ""), True),
    ([("SADD", "s", "a")], "s", ("SADD", "s", "a"), False),
    ([("SET", "k", "v")], "k", ("SET", "k", "x", "NX"), False),
    ([], "k", ("MSET", "k", "1", "j", "2"), True),
    ([("SET", "j", "1")], "k", ("MSETNX", "k", "1", "j", "2"), False),
    ([], "k", ("FUNCTION", "LOAD", "REPLACE",
               "#!lua name=watchlib\nredis.register_function('f', function() return 1 end)"), False),
    ([], "k", ("EXPIRE", "k", "100"), False),
    ([], "k", ("DEL", "k"), False),
    ([], "k", ("UNLINK", "k"), False),
    ([], "k", ("GETDEL", "k"), False),
    ([("SET", "k", "v")], "k", ("RENAME", "k", "k"), False),
    ([("SET", "k", "v")], "k", ("SETRANGE", "k", "0", ""), False),
    ([("SET", "k", "1")], "k", ("PERSIST", "k"), False),
    ([("SET", "k", "1")], "k", ("TOUCH", "k"), False),
    ([("SET", "k", "1")], "k", ("MOVE", "k", "1"), True),
    ([], "l", ("LMOVE", "l", "m", "LEFT", "LEFT"), False),
    ([("RPUSH", "l", "a")], "l", ("LREM", "l", "0", "zz"), False),
    ([("XADD", "x", "1-1", "f", "1")], "x", ("XGROUP", "CREATE", "x", "g", "0"), False),
    ([("XADD", "x", "1-1", "f", "1")], "x", ("XSETID", "x", "5-1"), False),
    ([], "x", ("XGROUP", "CREATE", "x", "g", "0", "MKSTREAM"), True),
    ([("XADD", "x", "1-1", "f", "1"), ("XGROUP", "CREATE", "x", "g", "0")], "x",
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"), False),
    ([("XADD", "x", "1-1", "f", "1"), ("XGROUP", "CREATE", "x", "g", "0"),
      ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")], "x", ("XACK", "x", "g", "1-1"), False),
    # multi-key deletes touch the keys they deleted; multi-key pops the key they popped from, nothing when empty
    ([("SET", "a", "1")], "a", ("DEL", "a", "b"), True),
    ([("SET", "a", "1")], "b", ("DEL", "a", "b"), False),
    ([("SET", "a", "1")], "a", ("UNLINK", "b", "a"), True),
    ([("SET", "a", "1")], "b", ("UNLINK", "b", "a"), False),
    ([("SET", "a", "1"), ("SET", "b", "1"), ("SET", "c", "1")], "c", ("DEL", "a", "b", "c"), True),
    ([("SET", "c", "1")], "c", ("DEL", "a", "b", "c"), True),
    ([("SET", "a", "1"), ("SET", "c", "1")], "b", ("DEL", "a", "b", "c"), False),
    ([("SET", "b", "1"), ("SET", "c", "1")], "c", ("UNLINK", "a", "b", "c"), True),
    ([("RPUSH", "l2", "x")], "l1", ("BLPOP", "l1", "l2", "0"), False),
    ([("RPUSH", "l2", "x")], "l2", ("BLPOP", "l1", "l2", "0"), True),
    ([("RPUSH", "l2", "x")], "l1", ("BRPOP", "l1", "l2", "0"), False),
    ([("RPUSH", "l2", "x")], "l1", ("LMPOP", "2", "l1", "l2", "LEFT"), False),
    ([("RPUSH", "l2", "x", "y")], "l2", ("LMPOP", "2", "l1", "l2", "RIGHT", "COUNT", "5"), True),
    ([("RPUSH", "l2", "x")], "l1", ("BLMPOP", "0", "2", "l1", "l2", "LEFT"), False),
    ([("RPUSH", "l2", "x")], "l2", ("BLMPOP", "0", "2", "l1", "l2", "LEFT"), True),
    ([], "l1", ("LMPOP", "2", "l1", "l2", "LEFT"), False),
    ([("ZADD", "z2", "1", "m")], "z1", ("BZPOPMIN", "z1", "z2", "0"), False),
    ([("ZADD", "z2", "1", "m")], "z2", ("BZPOPMIN", "z1", "z2", "0"), True),
    ([("ZADD", "z2", "1", "m")], "z1", ("BZPOPMAX", "z1", "z2", "0"), False),
    ([("ZADD", "z2", "1", "m")], "z1", ("ZMPOP", "2", "z1", "z2", "MIN"), False),
    ([("ZADD", "z2", "1", "m", "2", "n")], "z2", ("ZMPOP", "2", "z1", "z2", "MAX", "COUNT", "5"), True),
    ([("ZADD", "z2", "1", "m")], "z1", ("BZMPOP", "0", "2", "z1", "z2", "MIN"), False),
    ([("ZADD", "z2", "1", "m")], "z2", ("BZMPOP", "0", "2", "z1", "z2", "MIN"), True),
    ([], "z1", ("ZMPOP", "2", "z1", "z2", "MIN"), False),
    ([("SET", "a", "1")], "b", ("EVAL", "redis.call('del', KEYS[1], KEYS[2])", "2", "a", "b"), False),
    ([("SET", "a", "1")], "a", ("EVAL", "redis.call('del', KEYS[1], KEYS[2])", "2", "a", "b"), True),
    ([("RPUSH", "l2", "x")], "l1", ("EVAL", "return redis.call('lmpop', 2, KEYS[1], KEYS[2], 'left')", "2", "l1", "l2"),
     False),
    # expiry: only a deadline that changed (or deleted the key) touches
    ([("SET", "k", "v")], "k", ("EXPIRE", "k", "100", "NX"), True),
    ([("SET", "k", "v"), ("EXPIRE", "k", "100")], "k", ("EXPIRE", "k", "200", "NX"), False),
    ([("SET", "k", "v")], "k", ("EXPIRE", "k", "-1"), True),
    ([("SET", "k", "v")], "k", ("PEXPIREAT", "k", "1"), True),
    ([("SET", "k", "v"), ("EXPIRE", "k", "100")], "k", ("PERSIST", "k"), True),
    ([("SET", "k", "v")], "k", ("GETEX", "k", "PERSIST"), False),
    ([("SET", "k", "v")], "k", ("GETEX", "k", "EX", "100"), True),
    # renames and moves: source and destination when something moved
    ([("SET", "k", "v")], "k", ("RENAME", "k", "n"), True),
    ([("SET", "k", "v")], "n", ("RENAME", "k", "n"), True),
    ([("SET", "k", "v")], "n", ("RENAMENX", "k", "n"), True),
    ([("SET", "k", "v"), ("SET", "n", "v")], "k", ("RENAMENX", "k", "n"), False),
    ([("SET", "k", "v"), ("SET", "n", "v")], "n", ("RENAMENX", "k", "n"), False),
    ([("SADD", "s", "a")], "s", ("SMOVE", "s", "d", "a"), True),
    ([("SADD", "s", "a")], "d", ("SMOVE", "s", "d", "a"), True),
    ([("SADD", "s", "a")], "d", ("SMOVE", "s", "d", "b"), False),
    ([("SADD", "s", "a"), ("SADD", "d", "a")], "d", ("SMOVE", "s", "d", "a"), False),
    ([("SADD", "s", "a"), ("SADD", "d", "a")], "s", ("SMOVE", "s", "d", "a"), True),
    ([("RPUSH", "l", "a")], "l", ("LMOVE", "l", "m", "LEFT", "LEFT"), True),
    ([("RPUSH", "l", "a")], "m", ("LMOVE", "l", "m", "LEFT", "LEFT"), True),
    ([("RPUSH", "l", "a")], "m", ("BLMOVE", "l", "m", "LEFT", "LEFT", "0"), True),
    ([("RPUSH", "l", "a")], "m", ("RPOPLPUSH", "l", "m"), True),
]


@pytest.mark.parametrize("setup,key,write,aborts", SIGNALLED,
                         ids=lambda v: " ".join(v)[:40] if isinstance(v, tuple) else None)
def test_watch_is_touched_by_the_keys_a_write_modified(raw, setup, key, write, aborts):
    other = raw.new()
    for c in setup:
        other.cmd(*c)
    assert raw.cmd("WATCH", key) == "OK"
    reply = other.cmd(*write)
    assert not isinstance(reply, RespError), reply
    raw.cmd("MULTI")
    raw.cmd("PING")
    assert (raw.cmd("EXEC") is None) == aborts


def blocked_clients(conn):
    info = conn.cmd("INFO", "clients")
    text = info.decode() if isinstance(info, bytes) else str(info)
    return int(text.split("blocked_clients:")[1].split()[0])


# (the blocked pop, the write that serves it, the watched key, whether EXEC then aborts): a client blocked on several
# keys and served later touches the key it popped from (and a move's destination), not the others it waited on
SERVED = [
    (("BLPOP", "l1", "l2", "10"), ("RPUSH", "l2", "x"), "l1", False),
    (("BLPOP", "l1", "l2", "10"), ("RPUSH", "l2", "x"), "l2", True),
    (("BRPOP", "l1", "l2", "10"), ("RPUSH", "l2", "x", "y"), "l1", False),
    (("BLMPOP", "10", "2", "l1", "l2", "LEFT"), ("RPUSH", "l2", "x"), "l1", False),
    (("BLMPOP", "10", "2", "l1", "l2", "LEFT"), ("RPUSH", "l2", "x"), "l2", True),
    (("BLMOVE", "l2", "d", "LEFT", "LEFT", "10"), ("RPUSH", "l2", "x"), "d", True),
    (("BLMOVE", "l2", "d", "LEFT", "LEFT", "10"), ("RPUSH", "l2", "x"), "l1", False),
    (("BRPOPLPUSH", "l2", "d", "10"), ("RPUSH", "l2", "x"), "d", True),
    (("BLMOVE", "l1", "d", "RIGHT", "LEFT", "10"), ("LPUSH", "l1", "x"), "d", True),
    (("BZPOPMIN", "z1", "z2", "10"), ("ZADD", "z2", "1", "m"), "z1", False),
    (("BZPOPMAX", "z1", "z2", "10"), ("ZADD", "z2", "1", "m"), "z2", True),
    (("BZMPOP", "10", "2", "z1", "z2", "MIN"), ("ZADD", "z2", "1", "m"), "z1", False),
    (("BZMPOP", "10", "2", "z1", "z2", "MIN"), ("ZADD", "z2", "1", "m"), "z2", True),
]


@pytest.mark.parametrize("pop,push,key,aborts", SERVED,
                         ids=lambda v: " ".join(v)[:40] if isinstance(v, tuple) else None)
def test_watch_and_a_blocked_pop_served_later(raw, pop, push, key, aborts):
    waiter, pusher = raw.new(), raw.new()
    assert raw.cmd("WATCH", key) == "OK"
    waiter.send(encode_command(*pop))
    poll_until(lambda: blocked_clients(raw) == 1, what="the pop blocked")
    assert not isinstance(pusher.cmd(*push), RespError)
    assert waiter.read_reply() is not None
    raw.cmd("MULTI")
    raw.cmd("PING")
    assert (raw.cmd("EXEC") is None) == aborts


def exec_after(raw, key, *cmds, db=0):
    """EXEC's reply (None: aborted) after WATCH key in db and another client's cmds (run in database 0 first)."""
    other = raw.new()
    raw.cmd("SELECT", str(db))
    assert raw.cmd("WATCH", key) == "OK"
    for c in cmds:
        assert not isinstance(other.cmd(*c), RespError), c
    raw.cmd("MULTI")
    raw.cmd("PING")
    return raw.cmd("EXEC")


def test_multi_key_writes_inside_exec_touch_what_they_modified(raw):
    """As Redis 7.0: inside another client's transaction too, DEL touches the keys it deleted and a multi-key pop
    the key it popped from."""
    other = raw.new()
    other.cmd("SET", "a", "1")
    other.cmd("RPUSH", "l2", "x")
    assert exec_after(raw, "b", ("MULTI",), ("DEL", "a", "b"), ("BLPOP", "l1", "l2", "0"), ("EXEC",)) == ["PONG"]
    other.cmd("SET", "a", "1")
    assert exec_after(raw, "a", ("MULTI",), ("DEL", "a", "b"), ("EXEC",)) is None


def test_flush_touches_only_watched_keys_that_exist(raw):
    """As Redis 7.0: FLUSHDB and FLUSHALL flag the watchers of the keys they delete, not of missing keys, and
    FLUSHDB of another database leaves a watch alone."""
    other = raw.new()
    other.cmd("SET", "o", "1")
    assert exec_after(raw, "k", ("FLUSHDB",)) == ["PONG"]
    for flush in (("FLUSHDB",), ("FLUSHALL",), ("FLUSHDB", "ASYNC")):
        other.cmd("SET", "k", "1")
        assert exec_after(raw, "k", flush) is None, flush
        other.cmd("SET", "o", "1")
        assert exec_after(raw, "k", flush) is not None, flush
    other.cmd("SET", "k", "1")
    assert exec_after(raw, "k", ("SELECT", "1"), ("FLUSHDB",), ("SELECT", "0")) is not None
    assert exec_after(raw, "k", ("SELECT", "1"), ("SET", "k", "1"), ("SELECT", "0"), ("FLUSHALL",), db=1) is None


def test_swapdb_touches_watched_keys_present_in_either_database(raw):
    other = raw.new()
    other.cmd("SET", "o", "1")
    assert exec_after(raw, "k", ("SWAPDB", "0", "1")) is not None
    other.cmd("FLUSHALL")
    other.cmd("SET", "k", "1")
    assert exec_after(raw, "k", ("SWAPDB", "0", "1")) is None  # k goes away
    assert exec_after(raw, "k", ("SWAPDB", "0", "1")) is None  # k comes back
    assert exec_after(raw, "k", ("SWAPDB", "1", "1")) is not None
    assert exec_after(raw, "k", ("SWAPDB", "0", "1"), db=1) is None  # k arrives in database 1


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
