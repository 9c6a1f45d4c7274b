"""MONITOR, CLIENT PAUSE/UNPAUSE, CLIENT REPLY, CLIENT NO-TOUCH, CLIENT LIST/INFO fields, COMMAND
GETKEYSANDFLAGS/LIST/COUNT and LOLWUT (issue 19, point 3).

Run against ruvio and, in reference mode (RUVIO_TARGET=redis), against redis-server 7.0; tests marked
ruvio_only cover what Redis 7.0 lacks (NO-TOUCH is 7.2) or Ruvio's own shape (shards).  Every wait is
bounded; "nothing arrived" checks wait a short, fixed time for something that, if the server were wrong,
would arrive at once.
"""

import re
import threading
import time

import pytest
import redis

from conftest import IS_REDIS, encode_command, poll_until, resp_error

LINE = re.compile(r'^(\d+)\.(\d{6}) \[0 ([^\]]+)\] (.*)$')


def monitor_lines(m, n):
    """The next n monitor lines of raw connection m, as (client, args text)."""
    out = []
    for _ in range(n):
        line = m.read_reply()
        mt = LINE.match(line)
        assert mt, "not a monitor line: %r" % line
        out.append((mt.group(3), mt.group(4)))
    return out


def start_monitor(raw):
    m = raw.new()
    assert m.cmd("MONITOR") == "OK"
    return m


def my_addr(c):
    return c.client_info()["addr"]


# ---------------------------------------------------------------------------------------------------- MONITOR

def test_monitor_line_format_and_quoting(raw, r):
    m = start_monitor(raw)
    addr = my_addr(r)
    r.set("k", "v")
    r.get("k")
    r.set("a b", 'x"y\n\\\x01\xe9')
    lines = monitor_lines(m, 4)
    assert lines[0] == (addr, '"CLIENT" "INFO"')
    assert lines[1] == (addr, '"SET" "k" "v"')
    assert lines[2] == (addr, '"GET" "k"')
    assert lines[3] == (addr, '"SET" "a b" "x\\"y\\n\\\\\\x01\\xc3\\xa9"')


def test_monitor_timestamp_is_now(raw, r):
    m = start_monitor(raw)
    before = time.time()
    r.ping()
    line = m.read_reply()
    mt = LINE.match(line)
    assert mt and mt.group(4) == '"PING"'
    ts = float(mt.group(1) + "." + mt.group(2))
    assert before - 5 <= ts <= time.time() + 5


def test_monitor_multi_exec_and_scripts(raw, r):
    m = start_monitor(raw)
    addr = my_addr(r)
    p = r.pipeline(transaction=True)
    p.set("k", "v")
    p.get("k")
    assert p.execute() == [True, "v"]
    assert r.eval("redis.call('set', KEYS[1], 'b'); return redis.call('get', KEYS[1])", 1, "a") == "b"
    lines = monitor_lines(m, 8)   # (the first is redis-py's CLIENT INFO)
    got = [t for _, t in lines[1:]]
    assert got[:4] == ['"MULTI"', '"SET" "k" "v"', '"GET" "k"', '"EXEC"']
    assert got[4].startswith('"EVAL" "redis.call(') and got[4].endswith('"1" "a"')
    assert all(c == addr for c, _ in lines[1:6])
    assert lines[6:8] == [("lua", '"set" "a" "b"'), ("lua", '"get" "a"')]


def test_monitor_redacts_secrets_and_hides_admin(raw, r):
    m = start_monitor(raw)
    addr = my_addr(r)
    with pytest.raises(redis.exceptions.ResponseError):
        r.execute_command("AUTH", "someone", "secret")
    with pytest.raises(redis.exceptions.ResponseError):
        r.execute_command("HELLO", "3", "AUTH", "someone", "secret")
    r.config_get("maxmemory")          # admin: not shown
    r.execute_command("CLIENT", "LIST")  # admin: not shown
    r.echo("after")
    lines = monitor_lines(m, 4)
    assert lines[1:] == [
        (addr, '"AUTH" "(redacted)" "(redacted)"'),
        (addr, '"HELLO" "3" "AUTH" "(redacted)" "(redacted)"'),
        (addr, '"ECHO" "after"'),
    ]


def test_monitor_own_commands_reset_and_repeat(raw, r):
    m = start_monitor(raw)
    m.send(b"MONITOR\r\n")       # a second MONITOR: no reply at all
    assert m.cmd("PING") == "PONG"
    assert LINE.match(m.read_reply()).group(4) == '"PING"'
    assert m.cmd("RESET") == "RESET"    # leaves monitor mode (RESET itself is not shown)
    r.set("x", "1")
    assert m.cmd("PING") == "PONG"
    assert m.nothing_pending(0.2)


def test_monitor_in_transaction_refused(raw):
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("MONITOR") == "QUEUED"
    assert raw.cmd("EXEC") == ["ERR MONITOR isn't allowed for DENY BLOCKING client"]


def test_monitor_client_list_flags(raw, r):
    m = start_monitor(raw)
    mid = None
    for line in r.execute_command("CLIENT", "LIST").splitlines():
        if "cmd=monitor" in line:
            mid = line
    assert mid is not None and " flags=O " in mid


@pytest.mark.ruvio_only   # (Redis has no monitor count in INFO)
def test_monitor_info_count(raw, r):
    assert r.info("clients")["monitor_clients"] == 0
    m = start_monitor(raw)
    assert r.info("clients")["monitor_clients"] == 1
    assert LINE.match(m.read_reply())           # (that INFO)
    assert m.cmd("RESET") == "RESET"
    assert r.info("clients")["monitor_clients"] == 0


def test_pause_counts_held_clients_as_blocked(raw, r, unpause):
    assert r.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    w = raw.new()
    w.send(encode_command("SET", "k", "1"))
    poll_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the held writer counted")
    assert r.info("clients")["clients_in_timeout_table"] == 0
    r.execute_command("CLIENT", "UNPAUSE")
    assert w.read_reply() == "OK"
    assert r.info("clients")["blocked_clients"] == 0


def test_monitor_quit_closes(raw, r):
    m = start_monitor(raw)
    m.send(b"QUIT\r\n")
    assert m.read_until_closed(timeout=10).startswith(b"+OK\r\n")
    r.ping()


def test_monitor_redis_py(server, r):
    other = server.client()
    addr = my_addr(other)
    with r.monitor() as mon:
        other.set("foo", "bar")
        other.eval("return redis.call('get', 'foo')", 0)
        got = [mon.next_command() for _ in range(3)]
    other.close()
    assert got[0]["command"] == "SET foo bar" and got[0]["db"] == 0
    assert "%s:%s" % (got[0]["client_address"], got[0]["client_port"]) == addr
    assert got[1]["command"].startswith("EVAL ")
    assert got[2]["command"] == "get foo" and got[2]["client_type"] == "lua"


@pytest.mark.ruvio_only
def test_monitor_sees_every_shard(start_server):
    srv = start_server("--shards", "2")
    mon = srv.raw(port=srv.ports[0])
    assert mon.cmd("MONITOR") == "OK"
    other = srv.client(port=srv.ports[1])
    key = next(k for k in ("k%d" % i for i in range(1000))
               if other.execute_command("CLUSTER", "KEYSLOT", k) >= 8192)
    other.set(key, "v")     # served by shard 1
    want = '"SET" "%s" "v"' % key
    for _ in range(1100):   # (after the CLUSTER KEYSLOT lines; each read bounded by the socket timeout)
        if monitor_lines(mon, 1)[0][1] == want:
            break
    else:
        pytest.fail("SET on shard 1 not shown to a monitor of shard 0")
    other.close()
    mon.close()


# ---------------------------------------------------------------------------------------------------- PAUSE

@pytest.fixture
def unpause(r):
    yield
    r.execute_command("CLIENT", "UNPAUSE")


def test_pause_errors(r):
    assert resp_error(r.execute_command, "CLIENT", "PAUSE", "100", "foo") == \
        "CLIENT PAUSE mode must be WRITE or ALL"
    assert resp_error(r.execute_command, "CLIENT", "PAUSE", "-1") == "timeout is negative"
    assert resp_error(r.execute_command, "CLIENT", "PAUSE", "abc") == \
        "timeout is not an integer or out of range"
    assert resp_error(r.execute_command, "CLIENT", "Pause", "10", "WRITE", "x") == \
        "unknown subcommand or wrong number of arguments for 'Pause'. Try CLIENT HELP."
    assert "wrong number of arguments" in resp_error(r.execute_command, "CLIENT", "UNPAUSE", "x")
    assert r.execute_command("CLIENT", "UNPAUSE") == "OK"   # nothing paused: still OK


def test_pause_write_holds_writer_readers_go_on(server, raw, r, unpause):
    r.set("k", "0")
    ctl = server.client()
    assert ctl.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    writer = raw.new()
    writer.send(b"SET k 1\r\nINCR k\r\nGET k\r\n")     # the pipeline waits at its first write
    other = raw.new()
    other.send(b"SET j 1\r\n")
    t0 = time.monotonic()
    for _ in range(20):
        assert r.get("k") == "0"                         # readers are not held
    assert time.monotonic() - t0 < 5
    assert writer.nothing_pending(0.3) and other.nothing_pending(0.05)
    assert ctl.execute_command("CLIENT", "UNPAUSE") == "OK"
    assert writer.read_reply() == "OK"
    assert writer.read_reply() == 2
    assert writer.read_reply() == b"2"
    assert other.read_reply() == "OK"
    assert r.get("j") == "1"
    ctl.close()


def test_pause_write_holds_may_replicate(raw, r, unpause):
    assert r.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    pub = raw.new()
    pub.send(b"PUBLISH ch m\r\n")
    ev = raw.new()
    ev.send(encode_command("EVAL", "return 1", "0"))
    assert r.execute_command("EVAL_RO", "return 2", 0) == 2   # read-only script: not held
    assert pub.nothing_pending(0.3) and ev.nothing_pending(0.05)
    r.execute_command("CLIENT", "UNPAUSE")
    assert pub.read_reply() == 0
    assert ev.read_reply() == 1


def test_pause_write_holds_exec_of_writes(raw, r, unpause):
    tx = raw.new()
    assert tx.cmd("MULTI") == "OK"
    assert tx.cmd("SET", "k", "v") == "QUEUED"
    ro = raw.new()
    assert ro.cmd("MULTI") == "OK"
    assert ro.cmd("GET", "k") == "QUEUED"
    assert r.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    tx.send(b"EXEC\r\n")
    assert ro.cmd("EXEC") == [None]            # a read-only transaction runs
    assert tx.nothing_pending(0.3)
    r.execute_command("CLIENT", "UNPAUSE")
    assert tx.read_reply() == ["OK"]
    assert r.get("k") == "v"


@pytest.mark.ruvio_only   # (redis-server 7.0.15 crashes on this)
def test_client_unblock_leaves_held_client(raw, r, unpause):
    w = raw.new()
    wid = w.cmd("CLIENT", "ID")
    assert r.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    w.send(encode_command("SET", "k", "1"))
    poll_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the held writer")
    assert r.execute_command("CLIENT", "UNBLOCK", wid) == 0
    assert r.execute_command("CLIENT", "UNBLOCK", wid, "ERROR") == 0
    assert w.nothing_pending(0.2)
    r.execute_command("CLIENT", "UNPAUSE")
    assert w.read_reply() == "OK"


def test_pause_inside_transaction_starts_after_exec(raw, r, unpause):
    tx = raw.new()
    assert tx.cmd("MULTI") == "OK"
    assert tx.cmd("SET", "a", "1") == "QUEUED"
    assert tx.cmd("CLIENT", "PAUSE", "60000", "WRITE") == "QUEUED"
    assert tx.cmd("SET", "b", "1") == "QUEUED"
    assert tx.cmd("EXEC") == ["OK", "OK", "OK"]     # the transaction runs whole
    assert r.mget("a", "b") == ["1", "1"]
    w = raw.new()
    w.send(encode_command("SET", "c", "1"))          # ... and the pause holds the next writer
    assert w.nothing_pending(0.3)
    r.execute_command("CLIENT", "UNPAUSE")
    assert w.read_reply() == "OK"


def test_pause_all_holds_reads_until_timeout(raw, r):
    r.set("k", "v")
    assert r.execute_command("CLIENT", "PAUSE", "400", "ALL") == "OK"
    t0 = time.monotonic()
    rd = raw.new()
    rd.send(b"GET k\r\n")
    assert rd.read_reply() == b"v"              # after the pause ran out (bounded by the socket timeout)
    assert time.monotonic() - t0 >= 0.2


def test_pause_all_then_unpause_from_monitor(raw, r):
    # Monitors are never held (in Redis they are replicas), so one can end a pause ALL.
    m = start_monitor(raw)
    assert r.execute_command("CLIENT", "PAUSE", "60000") == "OK"       # default: ALL
    rd = raw.new()
    rd.send(b"PING\r\n")
    assert rd.nothing_pending(0.3)
    assert m.cmd("CLIENT", "UNPAUSE") == "OK"
    assert rd.read_reply() == "PONG"


def test_pause_syntax_errors_answered_at_once(raw, r):
    m = start_monitor(raw)      # (never held: it ends the pause below)
    assert r.execute_command("CLIENT", "PAUSE", "60000", "ALL") == "OK"
    c = raw.new()
    assert c.cmd("NOSUCHCOMMAND").startswith("ERR unknown command")
    assert c.cmd("GET").startswith("ERR wrong number of arguments")
    c.send(b"PING\r\n")
    assert c.nothing_pending(0.3)
    assert m.cmd("CLIENT", "UNPAUSE") == "OK"
    assert c.read_reply() == "PONG"


def test_pause_stops_active_expiry(r, unpause):
    r.set("k", "v", px=100)
    assert r.execute_command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    time.sleep(0.6)                     # several timer ticks past the deadline (no lookup of k)
    assert r.dbsize() == 1
    assert r.get("k") is None           # reads as expired, but is not deleted while paused
    assert r.exists("k") == 0
    assert r.dbsize() == 1
    assert r.info("stats")["expired_keys"] == 0
    r.execute_command("CLIENT", "UNPAUSE")
    poll_until(lambda: r.dbsize() == 0, timeout=10, what="active expiry after the pause")


# ---------------------------------------------------------------------------------------------------- REPLY

def test_client_reply_off_skip_on_raw(raw):
    raw.send(b"CLIENT REPLY OFF\r\nSET a 1\r\nGET a\r\n")
    assert raw.nothing_pending(0.3)
    raw.send(b"CLIENT REPLY ON\r\n")
    assert raw.read_reply() == "OK"
    raw.send(b"CLIENT REPLY SKIP\r\nINCR a\r\nGET a\r\n")
    assert raw.read_reply() == b"2"             # SKIP's own reply and INCR's are not sent
    assert raw.nothing_pending(0.2)
    assert raw.cmd("CLIENT", "REPLY", "bogus") == "ERR syntax error"


# ---------------------------------------------------------------------------------------------------- NO-TOUCH

@pytest.mark.ruvio_only   # CLIENT NO-TOUCH is Redis 7.2
def test_client_no_touch(server, r):
    r.config_set("maxmemory-policy", "allkeys-lfu")
    try:
        r.set("k", "v")
        nt = server.client()
        assert nt.execute_command("CLIENT", "NO-TOUCH", "ON") == "OK"
        assert " flags=T " in " " + nt.execute_command("CLIENT", "INFO").strip() + " "
        f0 = r.object("freq", "k")
        for _ in range(5):
            assert nt.get("k") == "v"
        assert r.object("freq", "k") == f0      # its reads did not count
        assert nt.touch("k") == 1               # TOUCH still touches
        f1 = r.object("freq", "k")
        assert f1 > f0
        assert nt.execute_command("CLIENT", "NO-TOUCH", "OFF") == "OK"
        for _ in range(200):    # (LFU counts past 5 with probability 1/11 per access)
            nt.get("k")
        assert r.object("freq", "k") > f1
        assert "syntax error" in resp_error(nt.execute_command, "CLIENT", "NO-TOUCH", "maybe")
        nt.close()
    finally:
        r.config_set("maxmemory-policy", "noeviction")


def test_client_no_evict(r):
    assert r.execute_command("CLIENT", "NO-EVICT", "ON") == "OK"
    assert "e" in r.client_info()["flags"]
    assert r.execute_command("CLIENT", "NO-EVICT", "OFF") == "OK"
    assert "syntax error" in resp_error(r.execute_command, "CLIENT", "NO-EVICT", "x")


# ---------------------------------------------------------------------------------------------------- LIST / INFO

REDIS70_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
                  "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem",
                  "tot-mem", "events", "cmd", "user", "redir", "resp"]


def test_client_info_has_redis_fields_in_order(r):
    line = r.execute_command("CLIENT", "INFO").strip()
    names = [kv.split("=", 1)[0] for kv in line.split(" ")]
    assert names[:len(REDIS70_FIELDS)] == REDIS70_FIELDS
    info = dict(kv.split("=", 1) for kv in line.split(" "))
    assert info["cmd"] == "client|info" and info["flags"] == "N" and info["db"] == "0"
    assert info["resp"] == "2" and info["user"] == "default" and info["multi"] == "-1"


def test_client_list_filters(server, r):
    other = server.client()
    oid = other.client_id()
    me = r.client_id()
    lines = r.execute_command("CLIENT", "LIST", "ID", str(oid)).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("id=%d " % oid)
    both = r.execute_command("CLIENT", "LIST", "ID", str(oid), str(me)).strip().splitlines()
    assert sorted(int(x.split(" ")[0][3:]) for x in both) == sorted([oid, me])
    normal = r.execute_command("CLIENT", "LIST", "TYPE", "normal")
    assert "id=%d " % me in normal
    assert r.execute_command("CLIENT", "LIST", "TYPE", "pubsub") == ""
    assert resp_error(r.execute_command, "CLIENT", "LIST", "TYPE", "foo") == "Unknown client type 'foo'"
    assert resp_error(r.execute_command, "CLIENT", "LIST", "ID", "abc") == "Invalid client ID"
    assert resp_error(r.execute_command, "CLIENT", "LIST", "ID", str(me), "x") == "Invalid client ID"
    assert resp_error(r.execute_command, "CLIENT", "LIST", "TYPE", "normal", "ID", "1") == "syntax error"
    assert resp_error(r.execute_command, "CLIENT", "LIST", "TYPE") == "syntax error"
    assert r.execute_command("CLIENT", "LIST", "ID", "0") == ""
    assert r.execute_command("CLIENT", "LIST", "ID", "-5") == ""
    # 100 ids (no fixed cap)
    many = r.execute_command("CLIENT", "LIST", "ID", *([str(10 ** 9 + i) for i in range(99)] + [str(me)]))
    assert many.startswith("id=%d " % me) and len(many.strip().splitlines()) == 1
    other.close()


def test_client_list_type_pubsub(server, r):
    sub = server.client()
    ps = sub.pubsub()
    ps.subscribe("ch")
    poll_until(lambda: r.execute_command("PUBSUB", "NUMSUB", "ch")[1] == 1, what="the subscription")
    pubsub = r.execute_command("CLIENT", "LIST", "TYPE", "pubsub").strip().splitlines()
    assert len(pubsub) == 1 and " sub=1 " in pubsub[0] and " flags=P " in pubsub[0]
    normal = r.execute_command("CLIENT", "LIST", "TYPE", "normal")
    assert " sub=1 " not in normal and "id=%d " % r.client_id() in normal
    ps.close()
    sub.close()


# ---------------------------------------------------------------------------------------------------- COMMAND
# (through RawConn: redis-py parses every COMMAND reply as COMMAND's own)

def test_command_getkeysandflags(raw):
    got = raw.cmd("COMMAND", "GETKEYSANDFLAGS", "LMOVE", "a", "b", "LEFT", "RIGHT")
    assert [k for k, _ in got] == [b"a", b"b"]
    for _, flags in got:
        assert len(flags) >= 2 and flags[0] in ("RW", "RO", "OW", "RM")
    assert raw.cmd("COMMAND", "GETKEYSANDFLAGS", "GET", "x") == [[b"x", ["RO", "access"]]]
    assert [k for k, _ in raw.cmd("COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b", "c")] == [b"a", b"b", b"c"]
    assert raw.cmd("COMMAND", "GETKEYSANDFLAGS", "NOSUCH", "a") == "ERR Invalid command specified"
    assert raw.cmd("COMMAND", "GETKEYSANDFLAGS", "GET", "a", "b") == \
        "ERR Invalid number of arguments specified for command"
    assert raw.cmd("COMMAND", "GETKEYSANDFLAGS", "PING", "a") == "ERR The command has no key arguments"


def test_command_count_list_info_agree(raw, r):
    names = [n.decode() for n in raw.cmd("COMMAND", "LIST")]
    top = [n for n in names if "|" not in n]
    assert raw.cmd("COMMAND", "COUNT") == len(top) == len(raw.cmd("COMMAND"))
    for n in ("monitor", "lolwut", "client|pause", "client|unpause", "client|no-evict", "client|reply",
              "command|getkeysandflags", "command|docs"):
        assert n in names
    assert IS_REDIS or "client|no-touch" in names
    info = r.execute_command("COMMAND", "INFO", "monitor", "client|pause")
    assert info["monitor"]["arity"] == 1 and "admin" in info["monitor"]["flags"]
    assert info["client|pause"]["arity"] == -3
    assert "skip_monitor" in r.execute_command("COMMAND", "INFO", "eval")["eval"]["flags"]


def test_command_list_filterby(raw):
    def lst(*a):
        return set(n.decode() for n in raw.cmd("COMMAND", "LIST", "FILTERBY", *a))
    cl = lst("PATTERN", "client*")
    assert "client" in cl and "client|pause" in cl and "get" not in cl
    hll = lst("ACLCAT", "hyperloglog")
    assert {"pfadd", "pfcount", "pfmerge"} <= hll and "get" not in hll
    assert lst("ACLCAT", "nosuchcat") == set()
    assert lst("MODULE", "nosuchmodule") == set()
    assert raw.cmd("COMMAND", "LIST", "FILTERBY", "NOPE", "x") == "ERR syntax error"


def test_command_docs_summary(raw):
    docs = raw.cmd("COMMAND", "DOCS", "get", "client|pause")
    docs = {docs[i].decode(): docs[i + 1] for i in range(0, len(docs), 2)}
    get = {docs["get"][i].decode(): docs["get"][i + 1] for i in range(0, len(docs["get"]), 2)}
    assert get["group"] == b"string" and get["since"] == b"1.0.0" and get["complexity"] == b"O(1)"
    assert get["summary"]
    pause = {docs["client|pause"][i].decode(): docs["client|pause"][i + 1]
             for i in range(0, len(docs["client|pause"]), 2)}
    assert pause["group"] == b"connection"


def test_lolwut(r):
    out = r.execute_command("LOLWUT", "VERSION", "1")
    assert " ver. " in out
    assert "not an integer" in resp_error(r.execute_command, "LOLWUT", "VERSION", "x")
