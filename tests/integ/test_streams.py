"""Streams without consumer groups: XADD XRANGE XREVRANGE XLEN XDEL XTRIM XREAD XSETID (issue 17, first
round), validated against redis-server 7.0.15. XREAD's `+` is 7.4 (ruvio only); restart, replica and the
log's effects are ruvio only. Every wait is bounded."""

import signal
import time

import pytest

from conftest import encode_command, poll_until

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BADID = "ERR Invalid stream ID specified as stream command argument"
TOP = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
NOTINT = "ERR value is not an integer or out of range"
MAXU = "18446744073709551615"


def entries(reply):
    return [(i.decode(), [x.decode() for x in fv]) for i, fv in reply]


def fill(raw, key, n, start=1):
    for i in range(start, start + n):
        raw.cmd("XADD", key, "%d-0" % i, "f", str(i))


def blocked_count(conn):
    for line in conn.cmd("INFO", "clients").decode().splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    return -1


def wait_blocked(conn, n=1):
    poll_until(lambda: blocked_count(conn) >= n, what="%d blocked client(s)" % n)


# ------------------------------------------------------------------ XADD


def test_xadd_ids(raw):
    assert raw.cmd("XADD", "s", "1-1", "f", "v") == b"1-1"
    assert raw.cmd("XADD", "s", "1-1", "f", "v") == TOP
    assert raw.cmd("XADD", "s", "1-0", "f", "v") == TOP
    assert raw.cmd("XADD", "s", "1-*", "f", "v") == b"1-2"
    assert raw.cmd("XADD", "s", "5-*", "f", "v") == b"5-0"
    assert raw.cmd("XADD", "s", "5-*", "f", "v") == b"5-1"
    assert raw.cmd("XADD", "s", "4-*", "f", "v") == TOP
    assert raw.cmd("XADD", "s", "7", "f", "v") == b"7-0"
    new = raw.cmd("XADD", "s", "*", "a", "b", "c", "d")
    ms, seq = new.decode().split("-")
    assert abs(int(ms) - time.time() * 1000) < 60000 and seq == "0"
    assert raw.cmd("XLEN", "s") == 6
    assert raw.cmd("TYPE", "s") == "stream"
    assert raw.cmd("OBJECT", "ENCODING", "s") == b"stream"
    assert isinstance(raw.cmd("MEMORY", "USAGE", "s"), int)


def test_xadd_errors(raw):
    assert raw.cmd("XADD", "s", "0-0", "f", "v") == "ERR The ID specified in XADD must be greater than 0-0"
    assert raw.cmd("EXISTS", "s") == 0
    assert raw.cmd("XADD", "s", "1", "a") == "ERR wrong number of arguments for 'xadd' command"
    assert raw.cmd("XADD", "s", "1", "a", "b", "c") == "ERR wrong number of arguments for 'xadd' command"
    assert raw.cmd("XADD", "s", "NOMKSTREAM") == "ERR wrong number of arguments for 'xadd' command"
    for bad in ("abc", "1-x", "-1", "1-2-3", "", "1-*-", "x-1"):
        assert raw.cmd("XADD", "s", bad, "a", "b") == BADID, bad
    assert raw.cmd("XADD", "s", "MAXLEN", "-1", "*", "a", "b") == "ERR The MAXLEN argument must be >= 0."
    assert raw.cmd("XADD", "s", "MAXLEN", "x", "*", "a", "b") == NOTINT
    assert raw.cmd("XADD", "s", "LIMIT", "5", "*", "a", "b") == \
        "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
    assert raw.cmd("XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "a", "b") == \
        "ERR syntax error, LIMIT cannot be used without the special ~ option"
    assert raw.cmd("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "*", "a", "b") == \
        "ERR The LIMIT argument must be >= 0."
    assert raw.cmd("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "a", "b") == \
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
    assert raw.cmd("XADD", "s", "MINID", "x", "*", "a", "b") == BADID
    assert raw.cmd("EXISTS", "s") == 0
    raw.cmd("SET", "str", "x")
    assert raw.cmd("XADD", "str", "*", "a", "b") == WRONGTYPE
    assert raw.cmd("XLEN", "str") == WRONGTYPE
    assert raw.cmd("XRANGE", "str", "-", "+") == WRONGTYPE
    raw.cmd("XADD", "s", "1-0", "a", "b")
    assert raw.cmd("GET", "s") == WRONGTYPE
    assert raw.cmd("LPUSH", "s", "x") == WRONGTYPE


def test_big_fields_and_values(raw):
    name, val = "n" * 70000, "v" * 100000
    for i in range(1, 4):
        assert raw.cmd("XADD", "big", "%d-0" % i, name, val, "f%d" % i, "x") == b"%d-0" % i
    got = raw.cmd("XREVRANGE", "big", "+", "-")
    assert [e[0] for e in got] == [b"3-0", b"2-0", b"1-0"]
    assert got[2][1] == [name.encode(), val.encode(), b"f1", b"x"]
    assert raw.cmd("XDEL", "big", "2-0") == 1
    assert [e[0] for e in raw.cmd("XRANGE", "big", "-", "+")] == [b"1-0", b"3-0"]


def test_xadd_last_possible_id(raw):
    top = MAXU + "-" + MAXU
    assert raw.cmd("XADD", "s", top, "a", "b") == top.encode()
    ex = "ERR The stream has exhausted the last possible ID, unable to add more items"
    assert raw.cmd("XADD", "s", "*", "a", "b") == ex
    assert raw.cmd("XADD", "s", "1-1", "a", "b") == ex
    assert raw.cmd("XADD", "m", MAXU + "-*", "a", "b") == (MAXU + "-0").encode()
    assert raw.cmd("XADD", "m", MAXU + "-*", "a", "b") == (MAXU + "-1").encode()


def test_xadd_nomkstream(raw):
    assert raw.cmd("XADD", "s", "NOMKSTREAM", "*", "a", "b") is None
    assert raw.cmd("EXISTS", "s") == 0
    raw.cmd("XADD", "s", "1-0", "a", "b")
    assert raw.cmd("XADD", "s", "NOMKSTREAM", "2-0", "a", "b") == b"2-0"
    assert raw.cmd("XLEN", "s") == 2


def test_xadd_trims(raw):
    fill(raw, "s", 10)
    assert raw.cmd("XADD", "s", "MAXLEN", "3", "11-0", "f", "11") == b"11-0"
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "-", "+"))] == ["9-0", "10-0", "11-0"]
    assert raw.cmd("XADD", "s", "MAXLEN", "=", "2", "12-0", "f", "12") == b"12-0"
    assert raw.cmd("XLEN", "s") == 2
    assert raw.cmd("XADD", "s", "MINID", "12", "13-0", "f", "13") == b"13-0"
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "-", "+"))] == ["12-0", "13-0"]
    assert raw.cmd("XADD", "s", "MAXLEN", "0", "14-0", "f", "14") == b"14-0"
    assert raw.cmd("XLEN", "s") == 0
    assert raw.cmd("EXISTS", "s") == 1
    assert raw.cmd("XADD", "s", "14-0", "f", "v") == TOP


def test_approximate_trims_remove_whole_nodes(raw):
    # 100 entries a node, as Redis's stream-node-max-entries: ~ only frees whole nodes
    for i in range(1, 251):
        raw.cmd("XADD", "s", "%d-0" % i, "f", "v")
    assert raw.cmd("XADD", "s", "MAXLEN", "~", "200", "251-0", "f", "v") == b"251-0"
    assert raw.cmd("XLEN", "s") == 251
    assert raw.cmd("XTRIM", "s", "MAXLEN", "~", "10") == 200
    assert raw.cmd("XLEN", "s") == 51
    assert raw.cmd("XRANGE", "s", "-", "+", "COUNT", "1")[0][0] == b"201-0"
    assert raw.cmd("XTRIM", "s", "MINID", "~", "250") == 0
    assert raw.cmd("XTRIM", "s", "MINID", "250") == 49
    assert raw.cmd("XLEN", "s") == 2
    for i in range(300, 600):
        raw.cmd("XADD", "l", "%d-0" % i, "f", "v")
    assert raw.cmd("XTRIM", "l", "MAXLEN", "~", "0", "LIMIT", "150") == 100
    assert raw.cmd("XTRIM", "l", "MAXLEN", "~", "0", "LIMIT", "50") == 0
    assert raw.cmd("XLEN", "l") == 200


# ---------------------------------------------------------- XRANGE & co.


def test_xrange_xrevrange(raw):
    fill(raw, "s", 5)
    raw.cmd("XADD", "s", "5-1", "other", "fields", "x", "y")
    assert entries(raw.cmd("XRANGE", "s", "-", "+")) == [
        ("1-0", ["f", "1"]), ("2-0", ["f", "2"]), ("3-0", ["f", "3"]), ("4-0", ["f", "4"]),
        ("5-0", ["f", "5"]), ("5-1", ["other", "fields", "x", "y"])]
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "2", "4"))] == ["2-0", "3-0", "4-0"]
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "5", "5"))] == ["5-0", "5-1"]
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "(2-0", "(4-0"))] == ["3-0"]
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "(5-0", "+"))] == ["5-1"]
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "-", "+", "COUNT", "2"))] == ["1-0", "2-0"]
    assert [i for i, _ in entries(raw.cmd("XREVRANGE", "s", "+", "-", "COUNT", "2"))] == ["5-1", "5-0"]
    assert [i for i, _ in entries(raw.cmd("XREVRANGE", "s", "4", "(2"))] == ["4-0", "3-0"]
    assert raw.cmd("XREVRANGE", "s", "-", "+") == []
    assert raw.cmd("XRANGE", "s", "4", "2") == []
    assert raw.cmd("XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert raw.cmd("XRANGE", "s", "-", "+", "COUNT", "-1") is None
    assert raw.cmd("XRANGE", "nokey", "-", "+") == []
    assert raw.cmd("XRANGE", "nokey", "-", "+", "COUNT", "0") == []


def test_xrange_errors(raw):
    fill(raw, "s", 2)
    assert raw.cmd("XRANGE", "s", "x", "+") == BADID
    assert raw.cmd("XRANGE", "s", "(-", "+") == BADID
    assert raw.cmd("XRANGE", "s", "-", "(+") == BADID
    assert raw.cmd("XRANGE", "s", "(%s-%s" % (MAXU, MAXU), "+") == "ERR invalid start ID for the interval"
    assert raw.cmd("XRANGE", "s", "-", "(0-0") == "ERR invalid end ID for the interval"
    assert raw.cmd("XRANGE", "s", "-", "+", "foo") == "ERR syntax error"
    assert raw.cmd("XRANGE", "s", "-", "+", "COUNT") == "ERR syntax error"
    assert raw.cmd("XRANGE", "s", "-", "+", "COUNT", "x") == NOTINT
    assert raw.cmd("XRANGE", "s", "-") == "ERR wrong number of arguments for 'xrange' command"


def test_xlen_xdel(raw):
    fill(raw, "s", 5)
    assert raw.cmd("XDEL", "s", "5-0", "5-0", "9-9") == 1
    assert raw.cmd("XDEL", "s", "1", "2-0") == 2
    assert raw.cmd("XDEL", "s", "x") == BADID
    assert raw.cmd("XDEL", "nokey", "1-1") == 0
    assert raw.cmd("XLEN", "s") == 2
    assert raw.cmd("XLEN", "nokey") == 0
    assert [i for i, _ in entries(raw.cmd("XRANGE", "s", "-", "+"))] == ["3-0", "4-0"]
    assert raw.cmd("XADD", "s", "5-0", "f", "v") == TOP      # the last id stays
    assert raw.cmd("XDEL", "s", "3-0", "4-0") == 2
    assert raw.cmd("EXISTS", "s") == 1                       # an empty stream stays
    assert raw.cmd("XRANGE", "s", "-", "+") == []


def test_xtrim(raw):
    fill(raw, "s", 5)
    assert raw.cmd("XTRIM", "s") == "ERR wrong number of arguments for 'xtrim' command"
    assert raw.cmd("XTRIM", "s", "MAXLEN") == "ERR wrong number of arguments for 'xtrim' command"
    assert raw.cmd("XTRIM", "s", "foo", "1") == "ERR syntax error"
    assert raw.cmd("XTRIM", "s", "MAXLEN", "3", "LIMIT", "1") == \
        "ERR syntax error, LIMIT cannot be used without the special ~ option"
    assert raw.cmd("XTRIM", "s", "MAXLEN", "~", "3", "LIMIT", "-1") == "ERR The LIMIT argument must be >= 0."
    assert raw.cmd("XTRIM", "s", "MINID", "x") == BADID
    assert raw.cmd("XTRIM", "s", "MAXLEN", "-1") == "ERR The MAXLEN argument must be >= 0."
    assert raw.cmd("XTRIM", "s", "MAXLEN", "1", "extra") == "ERR syntax error"
    assert raw.cmd("XTRIM", "s", "MAXLEN", "~", "3") == 0
    assert raw.cmd("XTRIM", "s", "MAXLEN", "=", "3") == 2
    assert raw.cmd("XTRIM", "s", "MINID", "4") == 1
    assert raw.cmd("XTRIM", "s", "MINID", "4") == 0
    assert raw.cmd("XTRIM", "nokey", "MAXLEN", "1") == 0
    assert raw.cmd("EXISTS", "nokey") == 0
    raw.cmd("SET", "str", "x")
    assert raw.cmd("XTRIM", "str", "MAXLEN", "1") == WRONGTYPE


def test_xsetid(raw):
    fill(raw, "s", 5)
    assert raw.cmd("XSETID", "nokey", "1-1") == "ERR no such key"
    assert raw.cmd("XSETID", "s", "1-1") == \
        "ERR The ID specified in XSETID is smaller than the target stream top item"
    assert raw.cmd("XSETID", "s", "10-0", "ENTRIESADDED", "0") == \
        "ERR The entries_added specified in XSETID is smaller than the target stream length"
    assert raw.cmd("XSETID", "s", "10-0", "ENTRIESADDED", "-1") == "ERR entries_added must be positive"
    assert raw.cmd("XSETID", "s", "10-0", "MAXDELETEDID", "11-0") == \
        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
    assert raw.cmd("XSETID", "s", "10-0", "foo") == "ERR syntax error"
    assert raw.cmd("XSETID", "s", "*") == BADID
    assert raw.cmd("XSETID", "s", "10-0", "ENTRIESADDED", "100", "MAXDELETEDID", "9-0") == "OK"
    assert raw.cmd("XADD", "s", "10-0", "f", "v") == TOP
    assert raw.cmd("XADD", "s", "10-*", "f", "v") == b"10-1"
    assert raw.cmd("XSETID", "s", "20") == "OK"
    assert raw.cmd("XADD", "s", "20-*", "f", "v") == b"20-1"
    raw.cmd("XDEL", "s", "20-1", "10-1", "1-0", "2-0", "3-0", "4-0", "5-0")
    assert raw.cmd("XSETID", "s", "2-0") == "OK"             # empty: no top-item check (7.0)
    assert raw.cmd("XADD", "s", "3-0", "f", "v") == b"3-0"


# ------------------------------------------------------------------ XREAD


def test_xread(raw):
    fill(raw, "a", 3)
    fill(raw, "b", 2, start=10)
    assert raw.cmd("XREAD", "STREAMS", "a", "b", "2", "0") == [
        [b"a", [[b"3-0", [b"f", b"3"]]]], [b"b", [[b"10-0", [b"f", b"10"]], [b"11-0", [b"f", b"11"]]]]]
    assert raw.cmd("XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "10") == [
        [b"a", [[b"1-0", [b"f", b"1"]]]], [b"b", [[b"11-0", [b"f", b"11"]]]]]
    assert raw.cmd("XREAD", "COUNT", "0", "STREAMS", "a", "0-0")[0][1][2][0] == b"3-0"
    assert raw.cmd("XREAD", "COUNT", "-1", "STREAMS", "a", "0-0")[0][1][2][0] == b"3-0"
    assert raw.cmd("XREAD", "STREAMS", "a", "$") is None
    assert raw.cmd("XREAD", "STREAMS", "a", "3") is None
    assert raw.cmd("XREAD", "STREAMS", "nokey", "0") is None
    assert raw.cmd("XREAD", "STREAMS", "nokey", "a", "$", "2-0") == [[b"a", [[b"3-0", [b"f", b"3"]]]]]
    raw.cmd("XADD", "d", "1-0", "f", "v")
    raw.cmd("XADD", "d", "2-0", "f", "v")
    raw.cmd("XDEL", "d", "2-0")
    assert raw.cmd("XREAD", "STREAMS", "d", "1-0") is None      # only deleted entries after 1-0
    many = ["k%d" % i for i in range(2000)]
    assert raw.cmd("XREAD", "STREAMS", *many, "a", *(["0"] * 2000), "2") == [[b"a", [[b"3-0", [b"f", b"3"]]]]]
    raw.cmd("HELLO", "3")
    assert raw.cmd("XREAD", "STREAMS", "a", "2") == {b"a": [[b"3-0", [b"f", b"3"]]]}
    assert raw.cmd("XREAD", "STREAMS", "a", "3") is None


def test_xread_errors(raw):
    fill(raw, "a", 1)
    raw.cmd("SET", "str", "x")
    arity = "ERR wrong number of arguments for 'xread' command"
    assert raw.cmd("XREAD") == arity
    assert raw.cmd("XREAD", "STREAMS") == arity
    assert raw.cmd("XREAD", "STREAMS", "a") == arity
    assert raw.cmd("XREAD", "STREAMS", "a", "b", "0") == \
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
    assert raw.cmd("XREAD", "BLOCK", "-1", "STREAMS", "a", "0") == "ERR timeout is negative"
    assert raw.cmd("XREAD", "BLOCK", "x", "STREAMS", "a", "0") == "ERR timeout is not an integer or out of range"
    assert raw.cmd("XREAD", "COUNT", "x", "STREAMS", "a", "0") == NOTINT
    assert raw.cmd("XREAD", "STREAMS", "a", "x") == BADID
    assert raw.cmd("XREAD", "STREAMS", "a", "-") == BADID
    assert raw.cmd("XREAD", "STREAMS", "a", "(1-0") == BADID
    assert raw.cmd("XREAD", "foo", "STREAMS", "a", "0") == "ERR syntax error"
    assert raw.cmd("XREAD", "COUNT", "1", "a", "0") == "ERR syntax error"
    assert raw.cmd("XREAD", "STREAMS", "str", "0") == WRONGTYPE
    assert raw.cmd("XREAD", "BLOCK", "100", "STREAMS", "str", "0") == WRONGTYPE


@pytest.mark.ruvio_only
def test_xread_plus_is_the_last_entry(raw):
    # Redis 7.4: `+` reads the last entry
    fill(raw, "a", 3)
    assert raw.cmd("XREAD", "STREAMS", "a", "+") == [[b"a", [[b"3-0", [b"f", b"3"]]]]]
    assert raw.cmd("XREAD", "STREAMS", "nokey", "+") is None


def test_xread_block_woken_by_xadd(raw):
    fill(raw, "a", 1)
    waiter = raw.new()
    waiter.send(encode_command("XREAD", "BLOCK", "5000", "STREAMS", "other", "a", "$", "$"))
    wait_blocked(raw)
    assert raw.cmd("XADD", "a", "2-0", "x", "y") == b"2-0"
    assert waiter.read_reply() == [[b"a", [[b"2-0", [b"x", b"y"]]]]]
    assert blocked_count(raw) == 0


def test_xread_block_dollar_is_the_id_at_blocking_time(raw):
    fill(raw, "a", 1)
    waiter = raw.new()
    waiter.send(encode_command("XREAD", "BLOCK", "5000", "STREAMS", "a", "$"))
    wait_blocked(raw)
    raw.cmd("DEL", "a")
    assert raw.cmd("XADD", "a", "2-0", "c", "d") == b"2-0"   # after 1-0, the id `$` stood for
    assert waiter.read_reply() == [[b"a", [[b"2-0", [b"c", b"d"]]]]]


def test_xread_block_from_exec_and_pipelined(raw):
    waiter = raw.new()
    waiter.send(encode_command("XREAD", "BLOCK", "0", "STREAMS", "a", "0") + encode_command("PING"))
    wait_blocked(raw)
    raw.cmd("MULTI")
    raw.cmd("XADD", "a", "1-0", "f", "v")
    raw.cmd("XADD", "a", "2-0", "f", "w")
    assert raw.cmd("EXEC") == [b"1-0", b"2-0"]
    assert waiter.read_reply() == [[b"a", [[b"1-0", [b"f", b"v"]], [b"2-0", [b"f", b"w"]]]]]
    assert waiter.read_reply() == "PONG"


def test_xread_block_times_out_with_nil(raw):
    t = time.monotonic()
    assert raw.cmd("XREAD", "BLOCK", "200", "STREAMS", "a", "$") is None
    assert time.monotonic() - t >= 0.15
    raw.cmd("HELLO", "3")
    assert raw.cmd("XREAD", "BLOCK", "50", "STREAMS", "a", "$") is None


def test_xread_block_stays_blocked_on_delete_and_type_change(raw):
    fill(raw, "a", 1)
    waiter = raw.new()
    waiter.send(encode_command("XREAD", "BLOCK", "700", "STREAMS", "a", "$"))
    wait_blocked(raw)
    raw.cmd("DEL", "a")
    raw.cmd("SET", "a", "x")
    assert blocked_count(raw) == 1
    assert waiter.read_reply() is None                       # Redis 7.0: the timeout, not an error


def test_xread_block_in_multi_does_not_block(raw):
    raw.cmd("MULTI")
    raw.cmd("XREAD", "BLOCK", "0", "STREAMS", "a", "$")
    assert raw.cmd("EXEC") == [None]


# ------------------------------------------------------ DUMP and friends


def test_dump_restore_round_trip(raw):
    fill(raw, "s", 150)
    raw.cmd("XADD", "s", "200-0", "other", "x", "more", "y")
    raw.cmd("XDEL", "s", "3-0", "120-0")
    raw.cmd("XSETID", "s", "300-0", "ENTRIESADDED", "500", "MAXDELETEDID", "250-0")
    want = raw.cmd("XRANGE", "s", "-", "+")
    payload = raw.cmd("DUMP", "s")
    assert raw.cmd("RESTORE", "t", "0", payload) == "OK"
    assert raw.cmd("XRANGE", "t", "-", "+") == want
    assert raw.cmd("XADD", "t", "300-0", "f", "v") == TOP
    assert raw.cmd("XADD", "t", "300-*", "f", "v") == b"300-1"
    raw.cmd("XTRIM", "s", "MAXLEN", "0")
    assert raw.cmd("RESTORE", "e", "0", raw.cmd("DUMP", "s")) == "OK"
    assert raw.cmd("XLEN", "e") == 0 and raw.cmd("TYPE", "e") == "stream"
    assert raw.cmd("XADD", "e", "300-0", "f", "v") == TOP
    bad = bytearray(payload)
    bad[len(bad) // 2] ^= 0x55
    assert raw.cmd("RESTORE", "u", "0", bytes(bad)) == "ERR DUMP payload version or checksum are wrong"
    assert raw.cmd("EXISTS", "u") == 0
    assert raw.cmd("COPY", "t", "c") == 1
    assert raw.cmd("XRANGE", "c", "-", "+") == raw.cmd("XRANGE", "t", "-", "+")
    wide = [x for i in range(300) for x in ("field%d" % i, "v" * (i % 7))]
    raw.cmd("XADD", "w", "1-0", *wide)                       # one entry of 300 fields
    assert raw.cmd("RESTORE", "w2", "0", raw.cmd("DUMP", "w")) == "OK"
    assert raw.cmd("XRANGE", "w2", "-", "+") == raw.cmd("XRANGE", "w", "-", "+")


# ------------------------------------------------------ restart, replica


def stream_state(c):
    return [c.execute_command("XRANGE", k, "-", "+") for k in ("s", "t")], c.execute_command("DEBUG", "DIGEST")


def holes(c):
    """Per key, 250 entries in nodes of 100, 100 and 50, then half of the first node deleted: a rebuild
    (checkpoint, full sync) packs them anew, so an approximate trim replayed as its arguments there would
    trim differently (and a `*` id replayed as `*` would differ anyway)."""
    for k in ("s", "t"):
        for i in range(250):
            c.execute_command("XADD", k, "*", "a", str(i), "b", "x")
        ids = [e[0] for e in c.execute_command("XRANGE", k, "-", "+", "COUNT", "50")]
        assert c.execute_command("XDEL", k, *ids) == 50


def stream_writes(c):
    c.execute_command("XADD", "s", "MAXLEN", "~", "120", "*", "f", "x")  # frees the half-empty node
    for i in range(100):
        c.execute_command("XADD", "s", "*", "f", str(i))
    assert c.execute_command("XTRIM", "t", "MAXLEN", "~", "120") == 50
    c.execute_command("XADD", "t", "*", "z", "z")
    assert c.xlen("s") == 251 and c.xlen("t") == 151


@pytest.mark.ruvio_only
def test_restart_keeps_ids_and_entries(start_server, tmp_path):
    d = str(tmp_path / "p")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    holes(c)
    assert c.save()                                      # the checkpoint packs t's entries anew
    stream_writes(c)
    want = stream_state(c)
    srv.proc.send_signal(signal.SIGKILL)                 # acknowledged writes are on disk: the WAL
    srv.proc.wait(timeout=5)
    srv2 = start_server("--dir", d, "--durability", "always")
    c2 = srv2.client()
    assert stream_state(c2) == want
    assert c2.save()                                     # and from a checkpoint alone
    srv2.stop()
    srv3 = start_server("--dir", d, "--durability", "always")
    assert stream_state(srv3.client()) == want
    no_sanitizer_report(srv2, srv3)


@pytest.mark.ruvio_only
def test_replica_keeps_ids_and_entries(start_server):
    p = start_server()
    c = p.client()
    holes(c)
    rs = start_server("--replicaof", "127.0.0.1 %d" % p.port)
    r = rs.client()
    poll_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20,
               what="replica link up")
    stream_writes(c)
    want = stream_state(c)
    poll_until(lambda: stream_state(r) == want, timeout=10, what="replica streams")
    no_sanitizer_report(p, rs)


@pytest.mark.ruvio_only
def test_resharding_keeps_streams(start_server, tmp_path):
    import redis
    d = str(tmp_path / "rs")
    srv = start_server("--dir", d, "--durability", "always", "--shards", "2")
    rc = redis.RedisCluster(host=srv.host, port=srv.port, socket_timeout=10, decode_responses=True)
    keys = ["st%d" % i for i in range(12)]
    for k in keys:
        for i in range(130):
            rc.execute_command("XADD", k, "*", "f", str(i), "g", k)
        rc.execute_command("XDEL", k, *[e[0] for e in rc.execute_command("XRANGE", k, "-", "+", "COUNT", "7")])
    want = {k: rc.execute_command("XRANGE", k, "-", "+") for k in keys}
    last = {k: rc.execute_command("XREVRANGE", k, "+", "-", "COUNT", "1")[0][0] for k in keys}
    rc.close()
    srv.stop()
    srv3 = start_server("--dir", d, "--durability", "always", "--shards", "3")
    rc = redis.RedisCluster(host=srv3.host, port=srv3.port, socket_timeout=10, decode_responses=True)
    assert {k: rc.execute_command("XRANGE", k, "-", "+") for k in keys} == want
    for k in keys:
        assert resp_err(lambda: rc.execute_command("XADD", k, last[k], "f", "v")) == TOP
    rc.close()
    no_sanitizer_report(srv3)


def no_sanitizer_report(*servers):
    for srv in servers:
        out = srv.stderr() + srv.stdout()
        assert "ERROR: AddressSanitizer" not in out and "runtime error:" not in out, out[-3000:]


def resp_err(fn):
    try:
        fn()
    except Exception as e:  # redis.ResponseError
        return "ERR " + str(e) if not str(e).startswith(("ERR", "WRONGTYPE")) else str(e)
    return None
