"""Blocking list commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP and CLIENT UNBLOCK, validated against
redis-server. Every wait is bounded: the socket timeout is 10 s and the blocking timeouts are short."""

import time

import pytest

from conftest import encode_command, poll_until


def blocked_count(conn):
    info = conn.cmd("INFO", "clients")
    text = info if isinstance(info, str) else (info.text if hasattr(info, "text") else info.decode())
    for line in text.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    return -1


def wait_blocked(conn, n=1):
    poll_until(lambda: blocked_count(conn) >= n, what="%d blocked client(s)" % n)


def test_blpop_serves_at_once_when_data_exists(raw):
    raw.cmd("RPUSH", "l", "a", "b")
    assert raw.cmd("BLPOP", "none", "l", "1") == [b"l", b"a"]
    assert raw.cmd("BRPOP", "l", "1") == [b"l", b"b"]
    assert raw.cmd("EXISTS", "l") == 0


def test_blpop_times_out_with_null(raw):
    t = time.monotonic()
    assert raw.cmd("BLPOP", "empty", "0.2") is None
    assert time.monotonic() - t >= 0.15
    raw.cmd("HELLO", "3")
    assert raw.cmd("BLPOP", "empty", "0.05") is None
    assert raw.cmd("BLMOVE", "empty", "d", "LEFT", "LEFT", "0.05") is None


def test_blpop_woken_by_push(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "q", "5"))
    wait_blocked(raw)
    assert raw.cmd("LPUSH", "q", "job") == 1
    assert waiter.read_reply() == [b"q", b"job"]
    assert raw.cmd("EXISTS", "q") == 0


def test_waiters_are_served_in_fifo_order(raw):
    w1, w2, w3 = raw.new(), raw.new(), raw.new()
    for w in (w1, w2, w3):
        w.send(encode_command("BRPOP", "q", "5"))
        wait_blocked(raw, [w1, w2, w3].index(w) + 1)
    raw.cmd("RPUSH", "q", "a", "b")
    assert w1.read_reply() == [b"q", b"b"]
    assert w2.read_reply() == [b"q", b"a"]
    raw.cmd("RPUSH", "q", "c")
    assert w3.read_reply() == [b"q", b"c"]


def test_pipelined_commands_wait_behind_the_blocked_one(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "q", "5") + encode_command("SET", "after", "1"))
    wait_blocked(raw)
    assert raw.cmd("GET", "after") is None
    raw.cmd("RPUSH", "q", "x")
    assert waiter.read_reply() == [b"q", b"x"]
    assert waiter.read_reply() == "OK"
    assert raw.cmd("GET", "after") == b"1"


def test_blmove_and_brpoplpush(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLMOVE", "src", "dst", "RIGHT", "LEFT", "5"))
    wait_blocked(raw)
    raw.cmd("RPUSH", "src", "1", "2")
    assert waiter.read_reply() == b"2"
    assert raw.cmd("LRANGE", "dst", "0", "-1") == [b"2"]
    assert raw.cmd("BRPOPLPUSH", "src", "dst", "1") == b"1"
    assert raw.cmd("LRANGE", "dst", "0", "-1") == [b"1", b"2"]


def test_lmove_target_wakes_a_waiter(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "target", "5"))
    wait_blocked(raw)
    raw.cmd("RPUSH", "src", "v")
    assert raw.cmd("LMOVE", "src", "target", "LEFT", "LEFT") == b"v"
    assert waiter.read_reply() == [b"target", b"v"]


def test_push_inside_multi_wakes_after_exec(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "q", "5"))
    wait_blocked(raw)
    raw.cmd("MULTI")
    raw.cmd("RPUSH", "q", "a")
    raw.cmd("RPUSH", "q", "b")
    raw.cmd("LLEN", "q")
    # the transaction is atomic: the waiter is served only after EXEC
    assert raw.cmd("EXEC") == [1, 2, 2]
    assert waiter.read_reply() == [b"q", b"a"]
    assert raw.cmd("LRANGE", "q", "0", "-1") == [b"b"]


def test_blocking_inside_multi_does_not_block(raw):
    raw.cmd("MULTI")
    raw.cmd("BLPOP", "q", "0")
    raw.cmd("BLMOVE", "q", "d", "LEFT", "LEFT", "0")
    assert raw.cmd("EXEC") == [None, None]


def test_blmpop(raw):
    assert raw.cmd("BLMPOP", "0.05", "2", "a", "b", "LEFT") is None
    raw.cmd("RPUSH", "b", "1", "2", "3")
    assert raw.cmd("BLMPOP", "1", "2", "a", "b", "RIGHT", "COUNT", "2") == [b"b", [b"3", b"2"]]
    waiter = raw.new()
    waiter.send(encode_command("BLMPOP", "5", "1", "c", "LEFT", "COUNT", "5"))
    wait_blocked(raw)
    raw.cmd("RPUSH", "c", "x", "y")
    assert waiter.read_reply() == [b"c", [b"x", b"y"]]
    assert str(raw.cmd("BLMPOP", "1", "0", "a", "LEFT")) == "ERR numkeys should be greater than 0"
    assert str(raw.cmd("BLMPOP", "1", "1", "a", "UP")) == "ERR syntax error"
    assert str(raw.cmd("BLMPOP", "1", "1", "a", "LEFT", "COUNT", "0")) == "ERR count should be greater than 0"


def test_timeout_errors(raw):
    assert str(raw.cmd("BLPOP", "q", "-1")) == "ERR timeout is negative"
    assert str(raw.cmd("BLPOP", "q", "abc")) == "ERR timeout is not a float or out of range"


def test_wrongtype(raw):
    raw.cmd("SET", "s", "v")
    assert str(raw.cmd("BLPOP", "s", "1")).startswith("WRONGTYPE")


def test_client_unblock(raw):
    waiter = raw.new()
    wid = waiter.cmd("CLIENT", "ID")
    waiter.send(encode_command("BLPOP", "q", "0"))
    wait_blocked(raw)
    assert raw.cmd("CLIENT", "UNBLOCK", wid) == 1
    assert waiter.read_reply() is None
    waiter.send(encode_command("BLPOP", "q", "0"))
    wait_blocked(raw)
    assert raw.cmd("CLIENT", "UNBLOCK", wid, "ERROR") == 1
    assert str(waiter.read_reply()) == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert raw.cmd("CLIENT", "UNBLOCK", wid) == 0


def test_disconnected_waiter_is_cleaned_up(raw):
    waiter = raw.new()
    waiter.send(encode_command("BLPOP", "q", "0"))
    wait_blocked(raw)
    waiter.close()
    poll_until(lambda: blocked_count(raw) == 0, what="waiter cleaned up")
    raw.cmd("RPUSH", "q", "kept")
    assert raw.cmd("LRANGE", "q", "0", "-1") == [b"kept"]


def test_bzpopmin_bzpopmax(raw):
    raw.cmd("ZADD", "z", "1", "a", "2", "b")
    assert raw.cmd("BZPOPMIN", "nokey", "z", "1") == [b"z", b"a", b"1"]
    assert raw.cmd("BZPOPMAX", "z", "1") == [b"z", b"b", b"2"]
    assert raw.cmd("BZPOPMIN", "z", "0.05") is None
    waiter = raw.new()
    waiter.send(encode_command("BZPOPMAX", "z", "5"))
    wait_blocked(raw)
    raw.cmd("ZADD", "z", "5", "x", "7", "y")
    assert waiter.read_reply() == [b"z", b"y", b"7"]
    raw.cmd("HELLO", "3")
    assert raw.cmd("BZPOPMIN", "z", "1") == [b"z", b"x", 5.0]


def test_bzmpop(raw):
    assert raw.cmd("BZMPOP", "0.05", "1", "z", "MIN") is None
    raw.cmd("ZADD", "z", "1", "a", "2", "b", "3", "c")
    assert raw.cmd("BZMPOP", "1", "2", "none", "z", "MAX", "COUNT", "2") == [b"z", [[b"c", b"3"], [b"b", b"2"]]]
    waiter = raw.new()
    waiter.send(encode_command("BZMPOP", "5", "1", "w", "MIN"))
    wait_blocked(raw)
    raw.cmd("ZADD", "w", "9", "m")
    assert waiter.read_reply() == [b"w", [[b"m", b"9"]]]
    assert str(raw.cmd("BZMPOP", "1", "1", "z", "UP")) == "ERR syntax error"
