"""Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT * COMMAND *."""

import shutil

import pytest
import redis

from conftest import ADDR, RespError, launch, resp_error

WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "NOAUTH Authentication required."


@pytest.fixture(scope="module")
def auth_server():
    if ADDR:
        pytest.skip("needs its own server process (RUVIO_ADDR set)")
    srv = launch(["--requirepass", "secret"])
    yield srv
    srv.stop()
    shutil.rmtree(srv.workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- PING / ECHO

def test_ping(r):
    assert r.ping() is True
    assert r.execute_command("PING") is True


def test_ping_with_message(raw):
    assert raw.cmd_raw("PING", "hello") == b"$5\r\nhello\r\n"
    assert raw.cmd_raw("PING") == b"+PONG\r\n"


def test_ping_too_many_args(raw):
    assert raw.cmd("PING", "a", "b") == "ERR wrong number of arguments for 'ping' command"


def test_echo(r):
    assert r.echo("hello world") == "hello world"
    assert r.echo("") == ""


def test_echo_binary(rb):
    v = b"a\x00b\r\nc\xff"
    assert rb.echo(v) == v


def test_echo_arity(raw):
    assert raw.cmd("ECHO") == "ERR wrong number of arguments for 'echo' command"
    assert raw.cmd("ECHO", "a", "b") == "ERR wrong number of arguments for 'echo' command"


def test_command_names_case_insensitive(raw):
    assert raw.cmd("pInG") == "PONG"
    assert raw.cmd("set", "k", "v") == "OK"
    assert raw.cmd("GeT", "k") == b"v"


def test_unknown_command(raw):
    reply = raw.cmd("NOSUCHCMD", "a", "b")
    assert isinstance(reply, RespError)
    assert reply.startswith("ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' ")


# ---------------------------------------------------------------------------------------------------- HELLO

HELLO_KEYS = ["server", "version", "proto", "id", "mode", "role", "modules"]


def _pairs(flat):
    assert len(flat) % 2 == 0
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def test_hello_2(raw):
    reply = raw.cmd("HELLO", "2")
    assert isinstance(reply, list)
    d = _pairs(reply)
    assert list(d.keys()) == HELLO_KEYS
    assert d["proto"] == 2
    assert isinstance(d["id"], int) and d["id"] > 0
    assert d["role"] == b"master"
    assert d["modules"] == []


def test_hello_no_args_keeps_resp2(raw):
    d = _pairs(raw.cmd("HELLO"))
    assert d["proto"] == 2


def test_hello_3_map_reply(raw):
    data = raw.cmd_raw("HELLO", "3")
    assert data.startswith(b"%7\r\n$6\r\nserver\r\n")
    assert b"$5\r\nproto\r\n:3\r\n" in data
    assert data.endswith(b"$7\r\nmodules\r\n*0\r\n")
    # after HELLO 3 the connection speaks RESP3: null is '_', HELLO is a map
    assert raw.cmd_raw("GET", "nokey") == b"_\r\n"
    d = raw.cmd("HELLO", "3")
    assert isinstance(d, dict) and list(d.keys()) == [k.encode() for k in HELLO_KEYS]
    assert d[b"proto"] == 3


def test_hello_3_then_2(raw):
    raw.cmd("HELLO", "3")
    data = raw.cmd_raw("HELLO", "2")
    assert data.startswith(b"*14\r\n")
    assert raw.cmd_raw("GET", "nokey") == b"$-1\r\n"


def test_hello_id_matches_client_id(raw):
    d = _pairs(raw.cmd("HELLO", "2"))
    assert d["id"] == raw.cmd("CLIENT", "ID")


def test_hello_unsupported_protocol(raw):
    assert raw.cmd("HELLO", "4") == "NOPROTO unsupported protocol version"
    assert raw.cmd("HELLO", "1") == "NOPROTO unsupported protocol version"


def test_hello_bad_protocol_arg(raw):
    assert raw.cmd("HELLO", "abc") == "ERR Protocol version is not an integer or out of range"


def test_hello_setname(raw):
    d = _pairs(raw.cmd("HELLO", "2", "SETNAME", "myconn"))
    assert d["proto"] == 2
    assert raw.cmd("CLIENT", "GETNAME") == b"myconn"


def test_hello_auth_without_password_configured(raw):
    # the default user is 'nopass' when no requirepass is set: any password is accepted
    d = _pairs(raw.cmd("HELLO", "2", "AUTH", "default", "whatever"))
    assert d["proto"] == 2
    assert raw.cmd("AUTH", "default", "whatever") == "OK"


# ---------------------------------------------------------------------------------------------------- AUTH

def test_auth_without_password_configured(raw):
    assert raw.cmd("AUTH", "foo") == ("ERR AUTH <password> called without any password configured for the "
                                      "default user. Are you sure your configuration is correct?")


def test_auth_syntax(raw):
    assert raw.cmd("AUTH", "a", "b", "c") == "ERR syntax error"
    assert raw.cmd("AUTH") == "ERR wrong number of arguments for 'auth' command"


def test_auth_required(auth_server):
    with auth_server.raw() as c:
        assert c.cmd("GET", "foo") == NOAUTH
        assert c.cmd("PING") == NOAUTH
        assert c.cmd("SET", "foo", "bar") == NOAUTH


def test_auth_wrong_password(auth_server):
    with auth_server.raw() as c:
        assert c.cmd_raw("AUTH", "nope") == b"-" + WRONGPASS.encode() + b"\r\n"
        assert c.cmd("AUTH", "default", "nope") == WRONGPASS
        assert c.cmd("GET", "foo") == NOAUTH


def test_auth_ok(auth_server):
    with auth_server.raw() as c:
        assert c.cmd("AUTH", "secret") == "OK"
        assert c.cmd("PING") == "PONG"
        assert c.cmd("SET", "foo", "bar") == "OK"
        assert c.cmd("GET", "foo") == b"bar"
    with auth_server.raw() as c:
        assert c.cmd("AUTH", "default", "secret") == "OK"
        assert c.cmd("GET", "foo") == b"bar"
        assert c.cmd("DEL", "foo") == 1


def test_auth_redis_py(auth_server):
    c = auth_server.client(password="secret")
    try:
        assert c.ping() is True
    finally:
        c.close()
    c = auth_server.client()
    try:
        with pytest.raises(redis.exceptions.AuthenticationError) as ei:
            c.get("x")
        assert str(ei.value) == "Authentication required."
    finally:
        c.close()


def test_hello_requires_auth(auth_server):
    with auth_server.raw() as c:
        reply = c.cmd("HELLO", "3")
        assert isinstance(reply, RespError) and reply.startswith("NOAUTH HELLO must be called with the client "
                                                                  "already authenticated")
        assert c.cmd("HELLO", "3", "AUTH", "default", "bad") == WRONGPASS


def test_hello_auth_setname(auth_server):
    with auth_server.raw() as c:
        d = c.cmd("HELLO", "3", "AUTH", "default", "secret", "SETNAME", "app1")
        assert isinstance(d, dict) and d[b"proto"] == 3
        assert c.cmd("CLIENT", "GETNAME") == b"app1"
        assert c.cmd("PING") == "PONG"


def test_auth_quit_allowed_unauthenticated(auth_server):
    with auth_server.raw() as c:
        c.send(b"*1\r\n$4\r\nQUIT\r\n")
        assert c.read_until_closed() == b"+OK\r\n"


# ---------------------------------------------------------------------------------------------------- SELECT

def test_select_0(r, raw):
    assert raw.cmd("SELECT", "0") == "OK"
    assert raw.cmd("SET", "a", "1") == "OK"
    assert r.get("a") == "1"


def test_select_out_of_range(raw):
    # redis has 16 databases: 16 and -1 are out of range
    assert raw.cmd("SELECT", "16") == "ERR DB index is out of range"
    assert raw.cmd("SELECT", "-1") == "ERR DB index is out of range"


def test_select_not_integer(raw):
    assert raw.cmd("SELECT", "abc") == "ERR value is not an integer or out of range"


def test_select_arity(raw):
    assert raw.cmd("SELECT") == "ERR wrong number of arguments for 'select' command"


def test_select_1(raw):
    # 16 databases by default, as Redis (tests/integ/test_databases.py)
    assert raw.cmd("SELECT", "1") == "OK"


def test_select_1_redis_py_message(r):
    msg = resp_error(r.execute_command, "SELECT", "16")
    assert msg == "DB index is out of range"


# ---------------------------------------------------------------------------------------------------- QUIT / RESET

def test_quit(raw):
    raw.send(b"*1\r\n$4\r\nQUIT\r\n")
    assert raw.read_until_closed() == b"+OK\r\n"


def test_quit_inline_after_pipeline(raw):
    raw.send(b"PING\r\nQUIT\r\nPING\r\n")
    assert raw.read_until_closed() == b"+PONG\r\n+OK\r\n"


def test_reset(raw):
    assert raw.cmd("CLIENT", "SETNAME", "before") == "OK"
    assert isinstance(raw.cmd("HELLO", "3"), dict)
    assert raw.cmd_raw("RESET") == b"+RESET\r\n"
    # back to RESP2 (null bulk), name cleared
    assert raw.cmd_raw("CLIENT", "GETNAME") == b"$-1\r\n"
    assert raw.cmd("PING") == "PONG"


def test_reset_client_reply(raw):
    raw.send(b"CLIENT REPLY OFF\r\n")
    raw.send(b"RESET\r\n")
    raw.send(b"PING\r\n")
    # RESET turns replies back on; whether RESET itself answers depends on order, so look for the PONG
    out = b""
    while not out.endswith(b"+PONG\r\n"):
        out += raw.read_bytes(1)
    assert out in (b"+PONG\r\n", b"+RESET\r\n+PONG\r\n")


# ---------------------------------------------------------------------------------------------------- CLIENT

def test_client_id(raw):
    a = raw.cmd("CLIENT", "ID")
    other = raw.new()
    b = other.cmd("CLIENT", "ID")
    assert isinstance(a, int) and isinstance(b, int)
    assert a > 0 and b > a
    assert raw.cmd("CLIENT", "ID") == a


def test_client_setname_getname(raw):
    assert raw.cmd_raw("CLIENT", "GETNAME") == b"$-1\r\n"
    assert raw.cmd("CLIENT", "SETNAME", "worker-1") == "OK"
    assert raw.cmd("CLIENT", "GETNAME") == b"worker-1"
    # the empty name clears it
    assert raw.cmd("CLIENT", "SETNAME", "") == "OK"
    assert raw.cmd("CLIENT", "GETNAME") is None


def test_client_setname_invalid(raw):
    for bad in ("a b", "a\nb", "x\x01"):
        assert raw.cmd("CLIENT", "SETNAME", bad) == \
            "ERR Client names cannot contain spaces, newlines or special characters."


def test_client_setname_redis_py(r):
    assert r.client_setname("pyclient") is True
    assert r.client_getname() == "pyclient"


def test_client_list(raw):
    raw.cmd("CLIENT", "SETNAME", "lister")
    my_id = raw.cmd("CLIENT", "ID")
    other = raw.new()
    other_id = other.cmd("CLIENT", "ID")
    text = raw.cmd("CLIENT", "LIST")
    assert isinstance(text, bytes)
    lines = text.decode().split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    by_id = {}
    for line in lines:
        fields = dict(f.split("=", 1) for f in line.split(" "))
        by_id[int(fields["id"])] = fields
    assert my_id in by_id and other_id in by_id
    mine = by_id[my_id]
    assert mine["name"] == "lister"
    host, port = raw.sock.getsockname()
    assert mine["addr"] == "%s:%d" % (host, port)
    assert mine["cmd"] == "client|list"
    assert by_id[other_id]["name"] == ""


def test_client_list_redis_py(r):
    r.client_setname("pylist")
    names = [c["name"] for c in r.client_list()]
    assert "pylist" in names


def test_client_info(raw):
    raw.cmd("CLIENT", "SETNAME", "inf")
    text = raw.cmd("CLIENT", "INFO").decode()
    assert text.endswith("\n") and text.count("\n") == 1
    fields = dict(f.split("=", 1) for f in text.strip().split(" "))
    assert int(fields["id"]) == raw.cmd("CLIENT", "ID")
    assert fields["name"] == "inf"
    host, port = raw.sock.getsockname()
    assert fields["addr"] == "%s:%d" % (host, port)
    assert fields["cmd"] == "client|info"


def test_client_kill_id(raw):
    victim = raw.new()
    vid = victim.cmd("CLIENT", "ID")
    assert raw.cmd("CLIENT", "KILL", "ID", str(vid)) == 1
    assert victim.read_until_closed() == b""
    assert raw.cmd("CLIENT", "KILL", "ID", str(vid)) == 0


def test_client_kill_addr_new_form(raw):
    victim = raw.new()
    assert victim.cmd("PING") == "PONG"
    host, port = victim.sock.getsockname()
    assert raw.cmd("CLIENT", "KILL", "ADDR", "%s:%d" % (host, port)) == 1
    assert victim.read_until_closed() == b""


def test_client_kill_addr_old_form(raw):
    victim = raw.new()
    assert victim.cmd("PING") == "PONG"
    host, port = victim.sock.getsockname()
    assert raw.cmd("CLIENT", "KILL", "%s:%d" % (host, port)) == "OK"
    assert victim.read_until_closed() == b""
    assert raw.cmd("CLIENT", "KILL", "%s:%d" % (host, port)) == "ERR No such client"


def test_client_kill_errors(raw):
    assert raw.cmd("CLIENT", "KILL", "ID", "999999999") == 0
    assert raw.cmd("CLIENT", "KILL", "ADDR", "1.2.3.4:5") == 0
    assert raw.cmd("CLIENT", "KILL", "1.2.3.4:5") == "ERR No such client"
    assert raw.cmd("CLIENT", "KILL", "ID", "abc") == "ERR client-id should be greater than 0"
    assert raw.cmd("CLIENT", "KILL", "foo", "bar") == "ERR syntax error"


def test_client_kill_self(raw):
    my_id = raw.cmd("CLIENT", "ID")
    # the filter form skips the calling client unless SKIPME no
    assert raw.cmd("CLIENT", "KILL", "ID", str(my_id)) == 0
    raw.send(b"CLIENT KILL ID %d SKIPME no\r\n" % my_id)
    # the reply may or may not be flushed before the close
    assert raw.read_until_closed() in (b"", b":1\r\n")


def test_client_no_evict(raw):
    assert raw.cmd("CLIENT", "NO-EVICT", "on") == "OK"
    assert raw.cmd("CLIENT", "NO-EVICT", "off") == "OK"
    assert raw.cmd("CLIENT", "NO-EVICT", "maybe") == "ERR syntax error"


def test_client_reply_off_on(raw):
    raw.send(b"CLIENT REPLY OFF\r\n")
    raw.send(b"PING\r\n")
    raw.send(b"SET replyoff 1\r\n")
    raw.send(b"CLIENT REPLY ON\r\n")
    # the first bytes after turning replies back on are the ON's +OK: nothing before it was answered
    assert raw.read_reply_raw() == b"+OK\r\n"
    assert raw.cmd("GET", "replyoff") == b"1"


def test_client_reply_off_silent(raw):
    raw.send(b"CLIENT REPLY OFF\r\nPING\r\nECHO x\r\n")
    assert raw.nothing_pending(0.3)


def test_client_reply_skip(raw):
    raw.send(b"CLIENT REPLY SKIP\r\n")
    raw.send(b"ECHO skipped\r\n")
    raw.send(b"ECHO shown\r\n")
    assert raw.read_reply_raw() == b"$5\r\nshown\r\n"
    assert raw.cmd("PING") == "PONG"


def test_client_reply_bad_arg(raw):
    assert raw.cmd("CLIENT", "REPLY", "foo") == "ERR syntax error"


def test_client_unknown_subcommand(raw):
    assert raw.cmd("CLIENT", "FOO") == "ERR unknown subcommand 'FOO'. Try CLIENT HELP."


# ---------------------------------------------------------------------------------------------------- COMMAND

def test_command_count(raw):
    n = raw.cmd("COMMAND", "COUNT")
    assert isinstance(n, int) and n > 20
    # COMMAND LIST also names subcommands as 'parent|sub'
    assert len([c for c in raw.cmd("COMMAND", "LIST") if b"|" not in c]) == n
    assert len(raw.cmd("COMMAND")) == n


def test_command_list(raw):
    names = set(raw.cmd("COMMAND", "LIST"))
    for name in (b"get", b"set", b"ping", b"del", b"mset", b"command", b"client", b"config", b"info"):
        assert name in names


def test_command_info_get(raw):
    reply = raw.cmd("COMMAND", "INFO", "get")
    assert len(reply) == 1
    entry = reply[0]
    assert entry[:6] == [b"get", 2, ["readonly", "fast"], 1, 1, 1]


def test_command_info_multi_and_unknown(raw):
    reply = raw.cmd("COMMAND", "INFO", "set", "nosuchcommand", "PING")
    assert len(reply) == 3
    assert reply[0][:2] == [b"set", -3]
    assert reply[1] is None
    assert reply[2][:2] == [b"ping", -1]


def _command_table(raw):
    table = {}
    for entry in raw.cmd("COMMAND"):
        table[entry[0].decode()] = entry
    return table


def test_command_table_key_specs(raw):
    t = _command_table(raw)
    assert t["get"][1:2] + t["get"][3:6] == [2, 1, 1, 1]
    assert t["set"][1:2] + t["set"][3:6] == [-3, 1, 1, 1]
    assert t["mset"][1:2] + t["mset"][3:6] == [-3, 1, -1, 2]
    assert t["del"][1:2] + t["del"][3:6] == [-2, 1, -1, 1]
    assert t["ping"][1:2] + t["ping"][3:6] == [-1, 0, 0, 0]
    assert "write" in t["set"][2]
    assert "readonly" in t["get"][2]


def test_command_table_redis_py(r):
    t = r.command()
    assert t["get"]["arity"] == 2
    assert t["get"]["first_key_pos"] == 1 and t["get"]["last_key_pos"] == 1 and t["get"]["step_count"] == 1
    assert t["set"]["arity"] == -3


def test_command_docs(raw):
    reply = raw.cmd("COMMAND", "DOCS", "get")
    assert isinstance(reply, list) and len(reply) == 2
    assert reply[0] == b"get"
    doc = reply[1]
    assert isinstance(doc, list)
    assert b"summary" in doc[0::2]


def test_command_getkeys(raw):
    assert raw.cmd("COMMAND", "GETKEYS", "SET", "k1", "v") == [b"k1"]
    assert raw.cmd("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == [b"a", b"b"]
    assert raw.cmd("COMMAND", "GETKEYS", "DEL", "x", "y", "z") == [b"x", b"y", b"z"]
    assert raw.cmd("COMMAND", "GETKEYS", "GET", "g") == [b"g"]


def test_command_getkeys_errors(raw):
    assert raw.cmd("COMMAND", "GETKEYS", "PING", "x") == "ERR The command has no key arguments"
    assert raw.cmd("COMMAND", "GETKEYS", "NOSUCH", "x") == "ERR Invalid command specified"
    assert raw.cmd("COMMAND", "GETKEYS", "GET") == "ERR wrong number of arguments for 'command|getkeys' command"
    assert raw.cmd("COMMAND", "GETKEYS", "GET", "a", "b") == "ERR Invalid number of arguments specified for command"
