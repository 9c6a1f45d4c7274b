"""Exact introspection (issue 19, point 3): LATENCY GRAPH, the structure of COMMAND DOCS and INFO persistence's
loading fields. Shared with redis-server (reference mode) unless marked ruvio_only."""

import re

import pytest

from conftest import poll_until, resp_error


def txt(x):
    return x.decode() if isinstance(x, bytes) else str(x)


# --------------------------------------------------------------------------------------------- LATENCY GRAPH

def age_label(age):
    age = max(age, 0)
    for unit, secs in (("d", 86400), ("h", 3600), ("m", 60)):
        if age >= secs:
            return "%d%s" % (age // secs, unit)
    return "%ds" % age


def next_second(c):
    """Wait (bounded) until the server's clock enters a new second, so the next spike gets a sample of its own."""
    start = int(c.time()[0])
    poll_until(lambda: int(c.time()[0]) > start, timeout=5, what="the server's next second")


def check_graph(graph, hist, now_range):
    """The chart of hist ([[unix_s, ms], ...] oldest first): header, rule, 4 rows of levels, a blank row and each
    sample's age written downwards; ages are checked against the server time range the graph was drawn in."""
    lines = graph.split("\n")
    assert lines[-1] == "", "the graph ends with a newline"
    lines = lines[:-1]
    vals = [ms for _, ms in hist]
    lo, hi = min(vals), max(vals)
    m = re.match(r"^command - high (\d+) ms, low (\d+) ms \(all time high (\d+) ms\)$", lines[0])
    assert m, lines[0]
    assert int(m.group(1)) == hi and int(m.group(2)) == lo and int(m.group(3)) >= hi
    assert lines[1] == "-" * 80
    span = max(hi - lo, 1)
    levels = [min((v - lo) * 12 // span, 11) for v in vals]
    assert len(vals) <= 80, "one band"
    rows = lines[2:]
    for r in range(4):
        want = ""
        for lv in levels:
            k = lv - (3 - r) * 3
            want += " " if k < 0 else ("_o#"[k] if k < 3 else "|")
        assert rows[r] == want, "row %d: %r != %r in\n%s" % (r, rows[r], want, graph)
    assert rows[4] == " " * len(vals)
    labels = ["".join(row[j] for row in rows[5:]).rstrip() for j in range(len(vals))]
    for (t, _), lab in zip(hist, labels):
        assert lab in {age_label(now - t) for now in now_range}, (lab, t, now_range, graph)
    longest = max(len(x) for x in labels)
    assert len(rows) == 5 + longest and all(len(row) == len(vals) for row in rows)


def test_latency_graph(start_server):
    srv = start_server("--enable-debug-command", "yes")
    c = srv.client()
    try:
        assert resp_error(c.execute_command, "LATENCY", "GRAPH", "command") == \
            "No samples available for event 'command'"
        assert "wrong number of arguments" in resp_error(c.execute_command, "LATENCY", "GRAPH")
        assert c.config_set("latency-monitor-threshold", "1")
        # three spikes in three different seconds: the smallest, the largest, and one between
        for secs in ("0.05", "0.35", "0.2"):
            next_second(c)
            assert c.execute_command("DEBUG", "SLEEP", secs)
        hist = c.execute_command("LATENCY", "HISTORY", "command")
        assert len(hist) >= 2 and max(ms for _, ms in hist) >= 300
        t0 = int(c.time()[0])
        graph = txt(c.execute_command("LATENCY", "GRAPH", "command"))
        t1 = int(c.time()[0])
        check_graph(graph, hist, range(t0, t1 + 1))
        if len(hist) == 3:  # (two spikes can share a second on a loaded machine)
            rows = graph.split("\n")[2:6]
            assert [row[0] for row in rows] == [" ", " ", " ", "_"]   # the lowest sample: bottom level
            assert [row[1] for row in rows] == ["#", "|", "|", "|"]   # the highest: the top level
        # an unknown event, and the event after a reset
        assert "No samples available for event 'nosuch'" in resp_error(c.execute_command, "LATENCY", "GRAPH",
                                                                         "nosuch")
        assert c.config_set("latency-monitor-threshold", "0")    # (nothing recorded after the reset)
        assert c.execute_command("LATENCY", "RESET") >= 1        # (a loaded machine may have other events)
        assert resp_error(c.execute_command, "LATENCY", "GRAPH", "command") == \
            "No samples available for event 'command'"
        assert any(txt(x).startswith("GRAPH") for x in c.execute_command("LATENCY", "HELP"))
    finally:
        c.close()


def test_latency_graph_single_sample(start_server):
    srv = start_server("--enable-debug-command", "yes")
    c = srv.client()
    try:
        assert c.config_set("latency-monitor-threshold", "1")
        assert c.execute_command("DEBUG", "SLEEP", "0.05")
        hist = c.execute_command("LATENCY", "HISTORY", "command")
        t0 = int(c.time()[0])
        graph = txt(c.execute_command("LATENCY", "GRAPH", "command"))
        t1 = int(c.time()[0])
        assert len(hist) == 1
        check_graph(graph, hist, range(t0, t1 + 1))
        assert graph.split("\n")[2:7] == [" ", " ", " ", "_", " "]   # high == low: the bottom level
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------- COMMAND DOCS

ARG_TYPES = {"key", "string", "integer", "double", "pattern", "unix-time", "pure-token", "oneof", "block"}
ARG_FIELDS = {"name", "type", "key_spec_index", "token", "summary", "since", "flags", "deprecated_since",
              "display_text", "arguments"}
ARG_FLAGS = {"optional", "multiple", "multiple_token"}


def as_map(x):
    """A RESP2 flat [k, v, ...] list as a dict (RESP3 maps already are)."""
    if isinstance(x, dict):
        return x
    assert isinstance(x, list) and len(x) % 2 == 0, x
    return {txt(x[i]): x[i + 1] for i in range(0, len(x), 2)}


def docs(r, *names):
    return {k: as_map(v) for k, v in as_map(r.execute_command("COMMAND DOCS", *names)).items()}


def check_args(args, path):
    """Every argument is a map of Redis's fields; groups have members; returns {name: arg} of this level."""
    out = {}
    assert isinstance(args, list) and args, path
    for a in args:
        a = as_map(a)
        assert {"name", "type"} <= set(a) <= ARG_FIELDS, (path, a)
        assert a["type"] in ARG_TYPES, (path, a)
        if a["type"] == "pure-token":
            assert "token" in a, (path, a)
        if a["type"] == "key":
            assert isinstance(a.get("key_spec_index", 0), int), (path, a)
        if "flags" in a:
            assert set(a["flags"]) <= ARG_FLAGS and a["flags"], (path, a)
        if a["type"] in ("oneof", "block"):
            kids = check_args(a["arguments"], path + "/" + a["name"])
            assert a["type"] == "block" or len(kids) >= 2 or len(a["arguments"]) >= 2, (path, a)
            a["arguments"] = [as_map(k) for k in a["arguments"]]
        else:
            assert "arguments" not in a, (path, a)
        out.setdefault(a["name"], a)
    return out


def find(args, pred):
    """All arguments (depth first) for which pred holds."""
    hits = []
    for a in args:
        a = as_map(a)
        if pred(a):
            hits.append(a)
        if "arguments" in a:
            hits += find(a["arguments"], pred)
    return hits


def by_token(args, token):
    hits = find(args, lambda a: a.get("token") == token)
    assert len(hits) == 1, (token, hits)
    return hits[0]


def parent_of(args, child):
    return find(args, lambda a: any(as_map(k) is child or as_map(k) == child for k in a.get("arguments", [])))[0]


def test_command_docs_fields(r):
    d = docs(r, "get", "set", "zadd", "xadd", "client|kill", "dbsize", "client")
    assert set(d) == {"get", "set", "zadd", "xadd", "client|kill", "dbsize", "client"}
    for name, doc in d.items():
        assert {"summary", "since", "group", "complexity"} <= set(doc), name
        assert "syntax" not in doc
    assert "arguments" not in d["dbsize"]          # no arguments: no field
    assert "arguments" not in d["client"] and "subcommands" in d["client"]
    get = check_args(d["get"]["arguments"], "get")
    assert list(get) == ["key"] and get["key"]["type"] == "key" and get["key"]["key_spec_index"] == 0
    for name in ("set", "zadd", "xadd", "client|kill"):
        check_args(d[name]["arguments"], name)


def test_command_docs_set(r):
    args = docs(r, "set")["set"]["arguments"]
    top = [as_map(a) for a in args]
    assert [a["type"] for a in top[:2]] == ["key", "string"] and top[0]["name"] == "key"
    nx, xx = by_token(args, "NX"), by_token(args, "XX")
    assert nx["type"] == xx["type"] == "pure-token"
    cond = parent_of(args, nx)
    assert cond["type"] == "oneof" and cond["flags"] == ["optional"] and cond in top
    assert by_token(args, "GET")["flags"] == ["optional"]
    ex = by_token(args, "EX")
    assert ex["type"] == "integer" and "flags" not in ex
    assert by_token(args, "PXAT")["type"] == "unix-time"
    expiration = parent_of(args, ex)
    assert expiration["type"] == "oneof" and expiration["flags"] == ["optional"]
    assert {as_map(a).get("token") for a in expiration["arguments"]} == {"EX", "PX", "EXAT", "PXAT", "KEEPTTL"}


def test_command_docs_zadd_xadd(r):
    args = docs(r, "zadd")["zadd"]["arguments"]
    score = find(args, lambda a: a["name"] == "score")[0]
    assert score["type"] == "double"
    block = parent_of(args, score)   # score member [score member ...]: one repeated block
    assert block["type"] == "block" and block["flags"] == ["multiple"]
    assert [as_map(a)["name"] for a in block["arguments"]] == ["score", "member"]
    assert parent_of(args, by_token(args, "GT"))["flags"] == ["optional"]

    args = docs(r, "xadd")["xadd"]["arguments"]
    assert by_token(args, "NOMKSTREAM")["flags"] == ["optional"]
    auto = by_token(args, "*")
    ids = parent_of(args, auto)
    assert ids["type"] == "oneof" and {as_map(a)["name"] for a in ids["arguments"]} >= {"id"}
    trim = parent_of(args, parent_of(args, by_token(args, "MAXLEN")))
    assert trim["type"] == "block" and trim["flags"] == ["optional"]
    assert by_token(args, "LIMIT")["type"] == "integer"
    field = find(args, lambda a: a["name"] == "field")[0]
    assert parent_of(args, field)["flags"] == ["multiple"]


def test_command_docs_client_kill(r):
    args = docs(r, "client|kill")["client|kill"]["arguments"]
    assert len(args) == 1
    flt = as_map(args[0])
    assert flt["type"] == "oneof"
    kinds = [as_map(a) for a in flt["arguments"]]
    assert kinds[0]["name"] == "ip:port" and kinds[0]["type"] == "string"
    new = kinds[1]
    assert new["type"] in ("oneof", "block") and "multiple" in new.get("flags", []) + flt.get("flags", [])
    for tok in ("ID", "ADDR", "LADDR", "SKIPME", "USER", "TYPE"):
        a = by_token(args, tok)
        assert parent_of(args, a) is new or parent_of(args, a) == new
    assert by_token(args, "ID")["type"] == "integer"
    assert {as_map(a)["token"] for a in by_token(args, "TYPE")["arguments"]} >= {"NORMAL", "MASTER", "PUBSUB"}


# ------------------------------------------------------------------------------------ INFO persistence: loading

def persistence(c):
    return c.info("persistence")


def test_info_loading_fields_after_restart(start_server):
    """After start-up loading: loading:0, async_loading:0, and the keys the last load read (a SAVE's RDB for
    Redis, the checkpoint for Ruvio); a fresh server loaded none."""
    srv = start_server()
    c = srv.client()
    try:
        p = persistence(c)
        assert p["loading"] == 0 and p["async_loading"] == 0
        assert p["rdb_last_load_keys_loaded"] == 0 and p["rdb_last_load_keys_expired"] == 0
        for i in range(5):
            assert c.set("k%d" % i, "v")
        assert c.save()
    finally:
        c.close()
    datadir = srv.datadir
    srv.stop()
    again = start_server("--dir", datadir)
    c = again.client()
    try:
        assert c.dbsize() == 5
        p = persistence(c)
        assert p["loading"] == 0 and p["async_loading"] == 0
        assert p["rdb_last_load_keys_loaded"] == 5 and p["rdb_last_load_keys_expired"] == 0
        assert "loading_start_time" not in p   # Redis shows the progress fields only while loading
    finally:
        c.close()


def test_command_docs_every_command(r):
    """Every command's and subcommand's arguments (when it has any) are a well-formed tree."""
    every = docs(r)
    assert len(every) > 100
    seen = 0
    for name, doc in every.items():
        assert {"summary", "since", "group"} <= set(doc), name   # (Redis's LOLWUT has no complexity)
        subs = doc.get("subcommands")
        for sub, sdoc in (as_map(subs).items() if subs else []):
            sdoc = as_map(sdoc)
            if "arguments" in sdoc:
                check_args(sdoc["arguments"], sub)
                seen += 1
        if "arguments" in doc:
            check_args(doc["arguments"], name)
            seen += 1
    assert seen > 150


def test_command_docs_argument_types(r):
    d = docs(r, "blpop", "client|pause", "xread", "expireat", "zrangebyscore", "keys", "getrange")
    def arg(cmd, name):
        hits = find(d[cmd]["arguments"], lambda a: a["name"] == name)
        assert hits, (cmd, name, d[cmd]["arguments"])
        return hits[0]
    assert arg("blpop", "timeout")["type"] == "double"          # fractional seconds
    assert arg("blpop", "key")["flags"] == ["multiple"]
    assert arg("client|pause", "timeout")["type"] == "integer"
    assert by_token(d["xread"]["arguments"], "BLOCK")["type"] == "integer"
    assert by_token(d["xread"]["arguments"], "COUNT")["flags"] == ["optional"]
    assert arg("expireat", "unix-time-seconds")["type"] == "unix-time"
    assert arg("zrangebyscore", "min")["type"] == "double"
    assert arg("keys", "pattern")["type"] == "pattern"
    assert [as_map(a)["type"] for a in d["getrange"]["arguments"]] == ["key", "integer", "integer"]
