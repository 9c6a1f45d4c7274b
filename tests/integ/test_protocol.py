"""Wire protocol: inline commands, pipelining, RESP3 encodings, protocol errors and limits, a malformed-input
mini-fuzz.  Everything here uses raw sockets."""

import random

import pytest

from conftest import ConnClosed, RespError, encode_command


def assert_closed_with(conn, expected):
    """The server answers `expected` (exact bytes) and then closes the connection."""
    assert conn.read_until_closed() == expected


def assert_server_ok(server):
    with server.raw() as c:
        assert c.cmd("PING") == "PONG"
        assert c.cmd("SET", "alive", "1") == "OK"
        assert c.cmd("GET", "alive") == b"1"


# ---------------------------------------------------------------------------------------------------- inline

def test_inline_ping(raw):
    raw.send(b"PING\r\n")
    assert raw.read_reply_raw() == b"+PONG\r\n"


def test_inline_lf_only(raw):
    raw.send(b"PING\n")
    assert raw.read_reply_raw() == b"+PONG\r\n"


def test_inline_arguments(raw):
    raw.send(b"SET   k1    v1  \r\nGET k1\r\n")
    assert raw.read_reply_raw() == b"+OK\r\n"
    assert raw.read_reply_raw() == b"$2\r\nv1\r\n"


def test_inline_quotes(raw):
    raw.send(b"SET \"a b\" 'c d'\r\n")
    assert raw.read_reply() == "OK"
    assert raw.cmd("GET", "a b") == b"c d"


def test_inline_escapes(raw):
    raw.send(b"SET \"k\\x41\\n\" \"q\\\"x\\t\"\r\n")
    assert raw.read_reply() == "OK"
    assert raw.cmd("GET", "kA\n") == b"q\"x\t"
    raw.send(b"SET 'single \\' quote' v\r\n")
    assert raw.read_reply() == "OK"
    assert raw.cmd("GET", "single ' quote") == b"v"


def test_inline_empty_lines_ignored(raw):
    raw.send(b"\r\n\r\n\nPING\r\n")
    assert raw.read_reply_raw() == b"+PONG\r\n"


def test_inline_unknown_command(raw):
    raw.send(b"FOOBAR x\r\n")
    reply = raw.read_reply()
    assert isinstance(reply, RespError)
    assert reply.startswith("ERR unknown command 'FOOBAR', with args beginning with: 'x' ")
    assert raw.cmd("PING") == "PONG"


def test_inline_unbalanced_quotes(server, raw):
    raw.send(b"SET \"a b\r\n")
    assert_closed_with(raw, b"-ERR Protocol error: unbalanced quotes in request\r\n")
    assert_server_ok(server)


def test_inline_unbalanced_single_quotes(server, raw):
    raw.send(b"SET 'a\r\n")
    assert_closed_with(raw, b"-ERR Protocol error: unbalanced quotes in request\r\n")
    assert_server_ok(server)


def test_inline_too_big(server, raw):
    raw.send(b"a" * (64 * 1024 + 100))
    assert_closed_with(raw, b"-ERR Protocol error: too big inline request\r\n")
    assert_server_ok(server)


def test_inline_long_but_terminated(raw):
    v = "x" * 30000
    raw.send(b"SET k " + v.encode() + b"\r\n")
    assert raw.read_reply() == "OK"
    assert raw.cmd("STRLEN", "k") == 30000


# ---------------------------------------------------------------------------------------------------- multibulk

def test_multibulk_basic(raw):
    raw.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
    assert raw.read_reply_raw() == b"+OK\r\n"
    raw.send(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    assert raw.read_reply_raw() == b"$5\r\nhello\r\n"


def test_multibulk_empty_and_zero_count(raw):
    # *0 and *-1 are skipped silently
    raw.send(b"*0\r\n*-1\r\nPING\r\n")
    assert raw.read_reply_raw() == b"+PONG\r\n"


def test_multibulk_empty_argument(raw):
    raw.send(b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n")
    assert raw.read_reply_raw() == b"+OK\r\n"
    assert raw.cmd_raw("GET", "") == b"$0\r\n\r\n"


def test_split_across_packets(raw):
    data = encode_command("SET", "split", "v" * 100) + encode_command("GET", "split")
    for i in range(len(data)):
        raw.send(data[i:i + 1])
    assert raw.read_reply_raw() == b"+OK\r\n"
    assert raw.read_reply() == b"v" * 100


def test_large_bulk_in_chunks(raw):
    v = bytes(range(256)) * 8192  # 2 MiB
    data = encode_command("SET", "big", v)
    for i in range(0, len(data), 7001):
        raw.send(data[i:i + 7001])
    assert raw.read_reply() == "OK"
    assert raw.cmd("GET", "big") == v


def test_pipeline_1000(raw):
    out = []
    for i in range(1000):
        out.append(encode_command("SET", "p%d" % i, str(i)) if i % 2 == 0 else encode_command("INCR", "ctr"))
    raw.send(b"".join(out))
    for i in range(1000):
        if i % 2 == 0:
            assert raw.read_reply() == "OK"
        else:
            assert raw.read_reply() == (i + 1) // 2
    assert raw.cmd("GET", "ctr") == b"500"
    assert raw.cmd("DBSIZE") == 501


def test_pipeline_inline_and_multibulk_mixed(raw):
    raw.send(b"PING\r\n" + encode_command("ECHO", "a") + b"ECHO b\r\n" + encode_command("PING"))
    assert raw.read_reply_raw() == b"+PONG\r\n"
    assert raw.read_reply_raw() == b"$1\r\na\r\n"
    assert raw.read_reply_raw() == b"$1\r\nb\r\n"
    assert raw.read_reply_raw() == b"+PONG\r\n"


def test_pipeline_large_replies(raw):
    v = "y" * 10000
    raw.cmd("SET", "big", v)
    raw.send(encode_command("GET", "big") * 500)
    for _ in range(500):
        assert raw.read_reply() == v.encode()


def test_pipeline_error_does_not_stop(raw):
    raw.send(encode_command("SET", "k", "v") + encode_command("INCR", "k") + encode_command("GET", "k"))
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == "ERR value is not an integer or out of range"
    assert raw.read_reply() == b"v"


# ---------------------------------------------------------------------------------------------------- RESP2 / RESP3 encodings

def test_resp2_null_encodings(raw):
    assert raw.cmd_raw("GET", "nokey") == b"$-1\r\n"
    assert raw.cmd_raw("MGET", "nokey", "nokey2") == b"*2\r\n$-1\r\n$-1\r\n"


def test_resp3_null(raw):
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("GET", "nokey") == b"_\r\n"
    raw.cmd("SET", "a", "1")
    assert raw.cmd_raw("MGET", "a", "nokey") == b"*2\r\n$1\r\n1\r\n_\r\n"


def test_resp3_hello_map(raw):
    data = raw.cmd_raw("HELLO", "3")
    assert data.startswith(b"%7\r\n")


def test_resp3_scalars_unchanged(raw):
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("SET", "n", "5") == b"+OK\r\n"
    assert raw.cmd_raw("INCR", "n") == b":6\r\n"
    assert raw.cmd_raw("GET", "n") == b"$1\r\n6\r\n"
    assert raw.cmd_raw("TTL", "nokey") == b":-2\r\n"
    assert raw.cmd_raw("EXISTS", "n") == b":1\r\n"
    assert raw.cmd_raw("INCR", "nokey-str") == b":1\r\n"


def test_resp3_incrbyfloat_is_bulk(raw):
    # INCRBYFLOAT replies with a bulk string even in RESP3 (not a ',' double)
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("INCRBYFLOAT", "f", "1.5") == b"$3\r\n1.5\r\n"


def test_resp3_config_get_map(raw, server):
    raw.cmd("HELLO", "3")
    port = str(server.port).encode()
    assert raw.cmd_raw("CONFIG", "GET", "port") == b"%1\r\n$4\r\nport\r\n$" + b"%d" % len(port) + b"\r\n" + \
        port + b"\r\n"


def test_resp3_errors_unchanged(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("SET", "s", "x")
    assert raw.cmd_raw("INCR", "s") == b"-ERR value is not an integer or out of range\r\n"


def test_resp3_scan_and_time_arrays(raw):
    raw.cmd("HELLO", "3")
    raw.cmd("SET", "a", "1")
    assert raw.cmd_raw("SCAN", "0", "COUNT", "100") == b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n"
    assert raw.cmd_raw("TIME").startswith(b"*2\r\n$")


# ---------------------------------------------------------------------------------------------------- protocol errors

@pytest.mark.parametrize("data, expected", [
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    (b"*2\r\n$4\r\nECHO\r\n:5\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
])
def test_protocol_errors_close(server, raw, data, expected):
    raw.send(data)
    assert_closed_with(raw, expected)
    assert_server_ok(server)


def test_protocol_error_after_valid_commands(server, raw):
    raw.send(b"PING\r\n" + encode_command("SET", "before", "1") + b"*1\r\nx\r\n")
    assert_closed_with(raw, b"+PONG\r\n+OK\r\n-ERR Protocol error: expected '$', got 'x'\r\n")
    assert_server_ok(server)
    with server.raw() as c:
        assert c.cmd("GET", "before") == b"1"


@pytest.mark.ruvio_only
def test_multibulk_count_limit_ruvio(server, raw):
    # ruvio caps the argument count at 1024*1024 (Redis 7.0 allows up to INT_MAX)
    raw.send(b"*1048577\r\n")
    assert_closed_with(raw, b"-ERR Protocol error: invalid multibulk length\r\n")
    assert_server_ok(server)


def test_multibulk_count_at_limit_accepted(raw):
    # 1024*1024 arguments is allowed: send the header, then abandon the connection (no error reply)
    raw.send(b"*1048576\r\n$4\r\nECHO\r\n")
    assert raw.nothing_pending(0.3)


def test_bulk_over_proto_max_bulk_len(start_server):
    srv = start_server("--proto-max-bulk-len", "1mb")
    with srv.raw() as c:
        c.send(b"*2\r\n$4\r\nECHO\r\n$1048577\r\n")
        assert_closed_with(c, b"-ERR Protocol error: invalid bulk length\r\n")
    with srv.raw() as c:
        v = b"z" * 1048576
        assert c.cmd("ECHO", v) == v
    assert_server_ok(srv)


def test_query_buffer_limit(start_server):
    srv = start_server("--client-query-buffer-limit", "1mb")
    with srv.raw() as c:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
        try:
            c.send(b"x" * 1500000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = c.read_until_closed()
        # Redis closes without a reply; ruvio may first send a protocol error line
        assert out == b"" or (out.startswith(b"-ERR Protocol error") and out.endswith(b"\r\n")
                              and out.count(b"\r\n") == 1), out
    assert_server_ok(srv)
    with srv.raw() as c:
        assert c.cmd("EXISTS", "k") == 0


def test_second_client_unaffected_by_protocol_error(server, raw):
    other = raw.new()
    assert other.cmd("SET", "x", "1") == "OK"
    raw.send(b"*1\r\n$abc\r\n")
    assert_closed_with(raw, b"-ERR Protocol error: invalid bulk length\r\n")
    assert other.cmd("GET", "x") == b"1"


# ---------------------------------------------------------------------------------------------------- mini-fuzz

_FUZZ_BASES = [
    encode_command("SET", "fz", "value"),
    encode_command("GET", "fz"),
    encode_command("MSET", "a", "1", "b", "2"),
    encode_command("INCRBY", "n", "5"),
    encode_command("ECHO", "hello"),
    encode_command("APPEND", "fz", "x"),
    encode_command("GETRANGE", "fz", "0", "-1"),
    b"PING\r\n",
    b"SET \"a b\" 'c'\r\n",
    b"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n",
]


def _fuzz_case(rng):
    kind = rng.random()
    if kind < 0.3:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200)))
    if kind < 0.45:
        # random RESP-ish tokens
        toks = [b"*", b"$", b"\r\n", b"-1", b"0", b"3", b"99999999999", b"PING", b"x", b":", b"+", b"\n", b"\r",
                b"\"", b"'", b"\\", b" ", b"%", b"~", b"_"]
        return b"".join(rng.choice(toks) for _ in range(rng.randint(1, 40)))
    data = bytearray(rng.choice(_FUZZ_BASES) * rng.randint(1, 3))
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        pos = rng.randrange(len(data) + 1)
        if op < 0.4 and data:
            data[min(pos, len(data) - 1)] = rng.getrandbits(8)
        elif op < 0.7:
            data[pos:pos] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 5)))
        elif data:
            del data[pos:pos + rng.randint(1, 5)]
    return bytes(data)


def test_mini_fuzz(server):
    rng = random.Random(0x5EED)
    for i in range(300):
        case = _fuzz_case(rng)
        with server.raw(timeout=5) as c:
            try:
                c.send(case)
                # sometimes wait for whatever the server answers to this input before disconnecting
                if i % 10 == 0:
                    c.nothing_pending(0.01)
            except (OSError, ConnClosed):
                pass
    assert_server_ok(server)
    if server.proc is not None:
        assert server.alive()
