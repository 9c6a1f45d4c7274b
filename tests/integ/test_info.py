"""INFO and CONFIG."""

import fnmatch

import pytest

from conftest import ADDR, parse_info, poll_until, resp_error


def info(raw, *sections):
    text = raw.cmd("INFO", *sections)
    assert isinstance(text, bytes)
    text = text.decode()
    return parse_info(text), text


def field(raw, section, name):
    return info(raw, section)[0][section][name]


# ---------------------------------------------------------------------------------------------------- INFO

def test_info_default_sections(raw):
    secs, text = info(raw)
    for s in ("server", "clients", "memory", "stats", "cpu", "keyspace"):
        assert s in secs, "section %s missing from default INFO" % s
    assert "commandstats" not in secs
    assert text.endswith("\r\n")


def test_info_all_and_everything(raw):
    for arg in ("all", "everything"):
        secs, _ = info(raw, arg)
        for s in ("server", "clients", "memory", "stats", "cpu", "keyspace"):
            assert s in secs


def test_info_server(raw, server):
    secs, _ = info(raw, "server")
    assert list(secs) == ["server"]
    s = secs["server"]
    assert s["redis_version"].count(".") == 2
    assert int(s["tcp_port"]) == server.port
    assert int(s["process_id"]) > 0
    assert int(s["uptime_in_seconds"]) >= 0
    assert len(s["run_id"]) == 40


def test_info_section_case_insensitive(raw):
    secs, _ = info(raw, "SERVER")
    assert list(secs) == ["server"]


def test_info_multiple_sections(raw):
    secs, _ = info(raw, "server", "clients")
    assert list(secs) == ["server", "clients"]


def test_info_unknown_section_empty(raw):
    assert raw.cmd("INFO", "nosuchsection") == b""


def test_info_clients(raw):
    others = [raw.new() for _ in range(3)]
    for o in others:
        assert o.cmd("PING") == "PONG"
    n = int(field(raw, "clients", "connected_clients"))
    assert n >= 4
    for o in others:
        o.close()
    poll_until(lambda: int(field(raw, "clients", "connected_clients")) <= n - 3, timeout=5,
               what="connected_clients to drop")


def test_info_memory(raw):
    m = info(raw, "memory")[0]["memory"]
    before = int(m["used_memory"])
    assert before > 0
    assert "used_memory_human" in m
    raw.cmd("SET", "big", "x" * (2 * 1024 * 1024))
    after = int(field(raw, "memory", "used_memory"))
    assert after >= before + 2 * 1024 * 1024 - 65536


def test_info_stats_commands_processed(raw):
    a = int(field(raw, "stats", "total_commands_processed"))
    for _ in range(10):
        raw.cmd("PING")
    b = int(field(raw, "stats", "total_commands_processed"))
    # 10 PINGs plus the first INFO itself
    assert b - a == 11


def test_info_stats_keyspace_hits_misses(raw):
    raw.cmd("SET", "k", "v")
    s = info(raw, "stats")[0]["stats"]
    h0, m0 = int(s["keyspace_hits"]), int(s["keyspace_misses"])
    raw.cmd("GET", "k")
    raw.cmd("GET", "k")
    raw.cmd("GET", "missing")
    raw.cmd("MGET", "k", "missing", "missing2")
    s = info(raw, "stats")[0]["stats"]
    assert int(s["keyspace_hits"]) - h0 == 3
    assert int(s["keyspace_misses"]) - m0 == 3


def test_info_stats_fields(raw):
    s = info(raw, "stats")[0]["stats"]
    for f in ("total_connections_received", "total_commands_processed", "keyspace_hits", "keyspace_misses",
              "expired_keys", "evicted_keys", "instantaneous_ops_per_sec", "total_net_input_bytes",
              "total_net_output_bytes"):
        assert f in s and int(float(s[f])) >= 0


def test_info_keyspace(raw):
    assert info(raw, "keyspace")[0] == {"keyspace": {}}
    raw.cmd("MSET", "a", "1", "b", "2", "c", "3")
    raw.cmd("EXPIRE", "a", "100")
    ks = info(raw, "keyspace")[0]["keyspace"]
    assert list(ks) == ["db0"]
    parts = dict(p.split("=") for p in ks["db0"].split(","))
    assert list(parts) == ["keys", "expires", "avg_ttl"]
    assert parts["keys"] == "3" and parts["expires"] == "1"
    assert int(parts["avg_ttl"]) >= 0


def test_info_keyspace_redis_py(r):
    r.mset({"a": 1, "b": 2})
    r.expire("b", 100)
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 2 and ks["db0"]["expires"] == 1


def test_info_cpu(raw):
    c = info(raw, "cpu")[0]["cpu"]
    assert float(c["used_cpu_sys"]) >= 0
    assert float(c["used_cpu_user"]) >= 0


def test_info_cluster(raw):
    assert info(raw, "cluster")[0] == {"cluster": {"cluster_enabled": "0"}}


def test_info_expired_keys(raw):
    e0 = int(field(raw, "stats", "expired_keys"))
    raw.cmd("SET", "e", "1", "PX", "1")
    poll_until(lambda: raw.cmd("EXISTS", "e") == 0, timeout=5, what="expiry")
    assert int(field(raw, "stats", "expired_keys")) == e0 + 1


# ---------------------------------------------------------------------------------------------------- CONFIG GET

def _config_get(raw, *patterns):
    reply = raw.cmd("CONFIG", "GET", *patterns)
    assert isinstance(reply, list) and len(reply) % 2 == 0
    return {reply[i].decode(): reply[i + 1].decode() for i in range(0, len(reply), 2)}


def test_config_get_port(raw, server):
    assert _config_get(raw, "port") == {"port": str(server.port)}


def test_config_get_redis_py(r, server):
    assert r.config_get("port") == {"port": str(server.port)}


def test_config_get_bind_dir(raw, server):
    d = _config_get(raw, "bind")
    assert d["bind"].split()[0] == "127.0.0.1"
    if not ADDR:
        assert _config_get(raw, "dir")["dir"] == server.datadir


def test_config_get_glob(raw):
    d = _config_get(raw, "*max*")
    assert "proto-max-bulk-len" in d
    assert all(fnmatch.fnmatchcase(k, "*max*") for k in d)
    d = _config_get(raw, "proto-max-bulk-le?")
    assert list(d) == ["proto-max-bulk-len"]


def test_config_get_case_insensitive(raw):
    # Redis 7.0 echoes a non-glob name as given; compare case-insensitively
    assert [k.lower() for k in _config_get(raw, "PORT")] == ["port"]


def test_config_get_multiple(raw):
    d = _config_get(raw, "port", "hz", "timeout")
    assert set(d) == {"port", "hz", "timeout"}


def test_config_get_unknown(raw):
    assert raw.cmd("CONFIG", "GET", "nosuchparam") == []
    assert raw.cmd("CONFIG", "GET", "nosuch*") == []


def test_config_get_defaults(raw):
    d = _config_get(raw, "timeout", "proto-max-bulk-len", "client-query-buffer-limit")
    assert d == {"timeout": "0", "proto-max-bulk-len": "536870912", "client-query-buffer-limit": "1073741824"}


def test_config_arity(raw):
    assert raw.cmd("CONFIG", "GET") == "ERR wrong number of arguments for 'config|get' command"
    assert raw.cmd("CONFIG", "SET", "hz") == "ERR wrong number of arguments for 'config|set' command"
    assert raw.cmd("CONFIG", "FOO") == "ERR unknown subcommand 'FOO'. Try CONFIG HELP."


# ---------------------------------------------------------------------------------------------------- CONFIG SET

@pytest.mark.parametrize("key, value, expect, default", [
    ("timeout", "30", "30", "0"),
    ("hz", "20", "20", "10"),
    ("proto-max-bulk-len", "2mb", "2097152", "536870912"),
    ("client-query-buffer-limit", "2mb", "2097152", "1073741824"),
    ("proto-max-bulk-len", "3000000", "3000000", "536870912"),
])
def test_config_set(raw, key, value, expect, default):
    try:
        assert raw.cmd("CONFIG", "SET", key, value) == "OK"
        assert _config_get(raw, key) == {key: expect}
    finally:
        assert raw.cmd("CONFIG", "SET", key, default) == "OK"
    assert _config_get(raw, key) == {key: default}


def test_config_set_multiple(raw):
    try:
        assert raw.cmd("CONFIG", "SET", "timeout", "10", "hz", "15") == "OK"
        assert _config_get(raw, "timeout", "hz") == {"timeout": "10", "hz": "15"}
    finally:
        raw.cmd("CONFIG", "SET", "timeout", "0", "hz", "10")


def test_config_set_unknown(raw):
    assert raw.cmd("CONFIG", "SET", "foo", "bar") == \
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"


def test_config_set_unknown_is_atomic(raw):
    assert raw.cmd("CONFIG", "SET", "timeout", "20", "foo", "bar") == \
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    assert _config_get(raw, "timeout") == {"timeout": "0"}


def test_config_set_bad_value(raw):
    assert raw.cmd("CONFIG", "SET", "timeout", "abc") == \
        "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
    err = raw.cmd("CONFIG", "SET", "proto-max-bulk-len", "100")
    assert err.startswith("ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - ")
    assert _config_get(raw, "timeout", "proto-max-bulk-len") == {"timeout": "0", "proto-max-bulk-len": "536870912"}


def test_config_set_redis_py_error(r):
    assert resp_error(r.config_set, "nosuchkey", "1") == \
        "Unknown option or number of arguments for CONFIG SET - 'nosuchkey'"


def test_config_set_proto_max_bulk_len_live(start_server):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "proto-max-bulk-len", "1mb") == "OK"
    with srv.raw() as c:
        c.send(b"*2\r\n$4\r\nECHO\r\n$2000000\r\n")
        assert c.read_until_closed() == b"-ERR Protocol error: invalid bulk length\r\n"
    with srv.raw() as c:
        assert c.cmd("PING") == "PONG"


def test_config_set_timeout_live(start_server):
    srv = start_server()
    with srv.raw() as admin:
        assert admin.cmd("CONFIG", "SET", "timeout", "1") == "OK"
    with srv.raw() as idle:
        assert idle.cmd("PING") == "PONG"
        # the idle client is closed by the server once idle for more than 1 s (bounded wait)
        assert idle.read_until_closed(timeout=10) == b""
    with srv.raw() as admin:
        assert admin.cmd("CONFIG", "SET", "timeout", "0") == "OK"


# ---------------------------------------------------------------------------------------------------- RESETSTAT

def test_config_resetstat(raw):
    raw.cmd("SET", "k", "v")
    for _ in range(5):
        raw.cmd("GET", "k")
        raw.cmd("GET", "missing")
    assert raw.cmd("CONFIG", "RESETSTAT") == "OK"
    s = info(raw, "stats")[0]["stats"]
    assert int(s["keyspace_hits"]) == 0
    assert int(s["keyspace_misses"]) == 0
    assert int(s["expired_keys"]) == 0
    # only the INFO that produced this output has been counted
    assert int(s["total_commands_processed"]) <= 1
    # data is untouched
    assert raw.cmd("GET", "k") == b"v"
