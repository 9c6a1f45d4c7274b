"""Observability: INFO sections and counters, latencystats, errorstats, the Prometheus exposition (INFO prometheus
and GET /metrics), SLOWLOG, LATENCY, CLIENT LIST fields, COMMAND COUNT and the bounded log queue."""

import math
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import IS_REDIS, RespError, encode_command, free_port, parse_info, poll_until


def info(conn, *sections):
    """INFO parsed into {section: {field: value}} (conn: a RawConn)."""
    return parse_info(txt(conn.cmd("INFO", *sections)))


def txt(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def kv(v):
    """'calls=3,usec=5' -> {'calls': '3', 'usec': '5'}"""
    return dict(p.split("=", 1) for p in v.split(","))


# ------------------------------------------------------------------------------------------- Prometheus parser

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)( -?\d+)?$" % NAME)
LABEL_PAIR = re.compile(r'(%s)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)' % LABEL)


def parse_value(s):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    assert re.match(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$", s), "bad sample value %r" % s
    return float(s)


def parse_labels(s):
    labels, pos = {}, 0
    while pos < len(s):
        m = LABEL_PAIR.match(s, pos)
        assert m, "bad label set {%s} at %d" % (s, pos)
        assert m.group(1) not in labels, "duplicate label %s" % m.group(1)
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def parse_exposition(text):
    """A strict parser for the Prometheus text format 0.0.4: returns {family: {"type", "help", "samples":
    [(name, labels, value)]}}. Fails on: unknown comment forms, TYPE/HELP twice or TYPE after samples,
    interleaved families, duplicate series, bad names/labels/values, counters not ending in _total, histogram
    buckets that are not cumulative or whose +Inf differs from _count."""
    assert text.endswith("\n"), "exposition must end with a newline"
    fams, order, current, seen = {}, [], None, set()

    def family_of(name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and base in fams and fams[base]["type"] == "histogram":
                return base
        return name

    for line in text[:-1].split("\n"):
        assert line.strip() == line and line, "blank or padded line %r" % line
        if line.startswith("#"):
            m = re.match(r"^# (HELP|TYPE) (%s) (.*)$" % NAME, line)
            assert m, "unexpected comment line %r" % line
            kind, name, rest = m.groups()
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            if name not in order:
                order.append(name)
            key = kind.lower()
            assert f[key] is None, "second %s for %s" % (kind, name)
            assert not f["samples"], "%s for %s after its samples" % (kind, name)
            if kind == "TYPE":
                assert rest in ("counter", "gauge", "histogram", "summary", "untyped"), line
            f[key] = rest
            current = name
            continue
        m = SAMPLE.match(line)
        assert m, "bad sample line %r" % line
        name, _, lab, value = m.group(1), m.group(2), m.group(3) or "", m.group(4)
        labels = parse_labels(lab)
        fam = family_of(name)
        assert fam in fams and fams[fam]["type"], "sample %r without a TYPE line" % line
        assert fam == current, "family %s interleaved (current %s)" % (fam, current)
        series = (name, tuple(sorted(labels.items())))
        assert series not in seen, "duplicate series %r" % (series,)
        seen.add(series)
        fams[fam]["samples"].append((name, labels, parse_value(value)))

    for name, f in fams.items():
        assert f["type"] and f["help"], "family %s lacks TYPE or HELP" % name
        if f["type"] == "counter":
            assert name.endswith("_total"), "counter %s must end in _total" % name
            assert all(v >= 0 for _, _, v in f["samples"])
        if f["type"] == "histogram":
            groups = {}
            for sname, labels, v in f["samples"]:
                rest = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
                g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
                if sname == name + "_bucket":
                    g["buckets"].append((parse_value(labels["le"]), v))
                elif sname == name + "_sum":
                    g["sum"] = v
                elif sname == name + "_count":
                    g["count"] = v
                else:
                    raise AssertionError("histogram %s has sample %s" % (name, sname))
            for rest, g in groups.items():
                les = [le for le, _ in g["buckets"]]
                counts = [c for _, c in g["buckets"]]
                assert les == sorted(les) and len(set(les)) == len(les), "le not increasing in %r" % (rest,)
                assert les[-1] == math.inf, "no +Inf bucket in %r" % (rest,)
                assert counts == sorted(counts), "buckets not cumulative in %r" % (rest,)
                assert g["count"] == counts[-1], "+Inf bucket != _count in %r" % (rest,)
                assert g["sum"] is not None and g["sum"] >= 0
    return fams


def series(fams, name, **labels):
    """The value of one series (exact labels)."""
    fam = name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in fams:
            fam = name[: -len(suffix)]
    for sname, lab, v in fams[fam]["samples"]:
        if sname == name and lab == {k: str(x) for k, x in labels.items()}:
            return v
    raise KeyError("%s%r not found" % (name, labels))


def test_parser_rejects_bad_expositions():
    good = "# HELP a_total x\n# TYPE a_total counter\na_total{shard=\"0\"} 1\n"
    parse_exposition(good)
    bad = [
        good.replace("a_total{", "a_total {"),                              # space before labels
        good.replace("\"0\"", "0"),                                         # unquoted label value
        good + "a_total{shard=\"0\"} 2\n",                                  # duplicate series
        good.replace("# TYPE a_total counter", "# TYPE a_total countr"),   # bad type
        good.replace("a_total", "a"),                                       # counter without _total
        good + "# HELP b x\n# TYPE b gauge\nb 1\na_total{shard=\"1\"} 1\n",  # interleaved family
        good[:-1],                                                          # no final newline
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
    ]
    for text in bad:
        with pytest.raises(AssertionError):
            parse_exposition(text)


def promtool_check(text):
    """Second opinions: the official Python client's parser (python3-prometheus-client, scripts/deps.sh test)
    and promtool check metrics, each when installed."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        text_string_to_metric_families = None
    if text_string_to_metric_families is not None:
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        assert fams["ruvio_command_duration_seconds"].type == "histogram"
        assert fams["ruvio_commands_processed"].type == "counter"   # the client strips _total
    tool = shutil.which("promtool")
    if tool is None:
        return
    p = subprocess.run([tool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    # promtool exits 3 for lint warnings only (e.g. naming advice); 1 is a parse error
    assert p.returncode in (0, 3), p.stderr.decode()[-2000:]


# ------------------------------------------------------------------------------------------------------ INFO

@pytest.mark.ruvio_only
def test_info_sections(raw):
    every = info(raw, "everything")
    for s in ("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "commandstats",
              "errorstats", "latencystats", "keyspace", "shards", "node"):
        assert s in every, "section %s missing from INFO everything" % s
    default = info(raw)
    assert "errorstats" in default and "server" in default
    for s in ("commandstats", "latencystats", "node"):
        assert s not in default
    assert list(info(raw, "latencystats")) == ["latencystats"]
    assert list(info(raw, "node")) == ["node"]


def test_info_counters_move(raw):
    before = info(raw, "stats")["stats"]
    raw.cmd("SET", "obs:k", "v")
    for _ in range(5):
        raw.cmd("GET", "obs:k")
        raw.cmd("GET", "obs:missing")
    after = info(raw, "stats")["stats"]
    assert int(after["total_commands_processed"]) >= int(before["total_commands_processed"]) + 11
    assert int(after["keyspace_hits"]) >= int(before["keyspace_hits"]) + 5
    assert int(after["keyspace_misses"]) >= int(before["keyspace_misses"]) + 5
    assert int(after["total_net_input_bytes"]) > int(before["total_net_input_bytes"])
    assert int(after["total_net_output_bytes"]) > int(before["total_net_output_bytes"])
    cpu = info(raw, "cpu")["cpu"]
    assert float(cpu["used_cpu_user"]) >= 0 and float(cpu["used_cpu_sys"]) >= 0
    cs = kv(info(raw, "commandstats")["commandstats"]["cmdstat_get"])
    assert int(cs["calls"]) >= 10 and float(cs["usec_per_call"]) >= 0


@pytest.mark.ruvio_only
def test_info_stats_observability_fields(raw):
    st = info(raw, "stats")["stats"]
    assert int(st["log_lines_dropped"]) >= 0
    assert int(st["slowlog_len"]) >= 0


def test_errorstats(raw):
    raw.cmd("CONFIG", "RESETSTAT")
    assert isinstance(raw.cmd("NOSUCHCOMMAND"), RespError)
    raw.cmd("SET", "obs:str", "x")
    assert isinstance(raw.cmd("LPUSH", "obs:str", "a"), RespError)
    assert isinstance(raw.cmd("LPUSH", "obs:str", "a"), RespError)
    es = info(raw, "errorstats")["errorstats"]
    assert kv(es["errorstat_ERR"])["count"] == "1"
    assert kv(es["errorstat_WRONGTYPE"])["count"] == "2"
    st = info(raw, "stats")["stats"]
    assert int(st["total_error_replies"]) == 3
    cs = info(raw, "commandstats")["commandstats"]
    assert kv(cs["cmdstat_lpush"])["failed_calls"] == "2"
    raw.cmd("CONFIG", "RESETSTAT")
    assert "errorstat_WRONGTYPE" not in info(raw, "errorstats")["errorstats"]


def test_unknown_subcommand_is_an_error_not_a_rejected_call(raw):
    """An unknown subcommand is an error reply but no command's call: INFO commandstats gets no line for the
    container (node-redis's RESP3 handshake sends CLIENT MAINT_NOTIFICATIONS, which neither server knows)."""
    raw.cmd("CONFIG", "RESETSTAT")
    got = raw.cmd("CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type", "internal-ip")
    assert isinstance(got, RespError) and str(got).startswith("ERR unknown subcommand 'MAINT_NOTIFICATIONS'.")
    assert kv(info(raw, "errorstats")["errorstats"]["errorstat_ERR"])["count"] == "1"
    assert int(info(raw, "stats")["stats"]["total_error_replies"]) == 1
    cs = info(raw, "commandstats")["commandstats"]
    assert not [k for k in cs if k.startswith("cmdstat_client")], cs


def test_latencystats(start_server):
    srv = start_server()
    with srv.raw() as c:
        for i in range(200):
            c.cmd("SET", "k%d" % i, "v")
            c.cmd("GET", "k%d" % i)
        ls = info(c, "latencystats")["latencystats"]
        assert "latency_percentiles_usec_get" in ls and "latency_percentiles_usec_set" in ls
        p = kv(ls["latency_percentiles_usec_get"])
        assert list(p) == ["p50", "p99", "p99.9"]
        vals = [float(p[k]) for k in ("p50", "p99", "p99.9")]
        assert vals == sorted(vals) and vals[0] >= 0 and vals[-1] < 1e6
        assert c.cmd("CONFIG", "SET", "latency-tracking-info-percentiles", "50 90 100") == "OK"
        p = kv(info(c, "latencystats")["latencystats"]["latency_percentiles_usec_get"])
        assert list(p) == ["p50", "p90", "p100"]
        err = c.cmd("CONFIG", "SET", "latency-tracking-info-percentiles", "50 101")
        assert isinstance(err, RespError)
        if not IS_REDIS:
            hist = c.cmd("LATENCY", "HISTOGRAM", "get")
            hist = dict(zip(hist[::2], hist[1::2]))
            calls = dict(zip(hist[b"get"][::2], hist[b"get"][1::2]))
            assert calls[b"calls"] == 200
            buckets = calls[b"histogram_usec"]
            assert buckets[-1] == 200 and buckets[1::2] == sorted(buckets[1::2])
        # tracking off: the histograms stop moving
        assert c.cmd("CONFIG", "SET", "latency-tracking", "no") == "OK"
        for i in range(10):
            c.cmd("GET", "k%d" % i)
        assert "latency_percentiles_usec_get" not in info(c, "latencystats")["latencystats"]


@pytest.mark.ruvio_only
def test_info_node_aggregates_shards(start_server):
    srv = start_server("--shards", "2")
    c0, c1 = srv.raw(port=srv.ports[0]), srv.raw(port=srv.ports[1])
    try:
        for _ in range(30):
            c1.cmd("PING")
        for _ in range(10):
            c0.cmd("PING")
        node = info(c0, "node")["node"]
        assert node["node_shards"] == "2"
        s0 = kv(node["shard0"])
        s1 = kv(node["shard1"])
        assert int(s0["port"]) == srv.ports[0] and int(s1["port"]) == srv.ports[1]
        assert int(s1["commands"]) >= 30 and int(s0["commands"]) >= 10
        assert int(node["node_total_commands_processed"]) >= 40
        # the shard's own view counts only its commands
        assert int(info(c0, "stats")["stats"]["total_commands_processed"]) < 30
        poll_until(lambda: int(info(c1, "node")["node"]["node_connected_clients"]) >= 2, what="clients gauge")
    finally:
        c0.close()
        c1.close()


# ------------------------------------------------------------------------------------------------ Prometheus

@pytest.mark.ruvio_only
def test_info_prometheus_parses(raw):
    raw.cmd("SET", "obs:p", "1")
    raw.cmd("GET", "obs:p")
    text = txt(raw.cmd("INFO", "prometheus"))
    fams = parse_exposition(text)
    promtool_check(text)
    for name in ("ruvio_commands_processed_total", "ruvio_connected_clients", "ruvio_keys",
                 "ruvio_command_calls_total", "ruvio_command_duration_seconds", "ruvio_log_lines_dropped_total",
                 "ruvio_errors_total"):
        assert name in fams, name
    assert fams["ruvio_command_duration_seconds"]["type"] == "histogram"
    shards = {lab.get("shard") for f in fams.values() for _, lab, _ in f["samples"] if "shard" in lab}
    assert shards == {"0"}
    assert series(fams, "ruvio_command_calls_total", shard=0, cmd="get") >= 1
    assert series(fams, "ruvio_command_duration_seconds_count", shard=0, cmd="get") >= 1


def scrape(port, path="/metrics"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as resp:
        assert resp.status == 200
        ctype = resp.headers.get("Content-Type")
        assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, ctype
        return resp.read().decode()


@pytest.mark.ruvio_only
def test_metrics_http_two_shards(start_server):
    mport = free_port()
    srv = start_server("--shards", "2", "--metrics_address", "127.0.0.1:%d" % mport)
    fams = parse_exposition(scrape(mport))
    for name, f in fams.items():
        if name.startswith("ruvio_") and f["type"] in ("counter", "gauge") and name not in (
                "ruvio_shards", "ruvio_uptime_seconds", "ruvio_used_memory_bytes", "ruvio_log_lines_dropped_total",
                "ruvio_errors_total", "ruvio_command_calls_total", "ruvio_command_failed_calls_total",
                "ruvio_command_rejected_calls_total"):
            assert {lab["shard"] for _, lab, _ in f["samples"]} == {"0", "1"}, name
    before = series(fams, "ruvio_commands_processed_total", shard=1)
    with srv.raw(port=srv.ports[1]) as c1:
        for _ in range(25):
            c1.cmd("PING")
        key = next(k for k in ("k%d" % i for i in range(100)) if c1.cmd("CLUSTER", "KEYSLOT", k) >= 8192)
        assert c1.cmd("SET", key, "1") == "OK"   # a slot of shard 1 of 2
        text = scrape(mport)
        promtool_check(text)
        fams = parse_exposition(text)
        assert series(fams, "ruvio_commands_processed_total", shard=1) >= before + 27
        assert series(fams, "ruvio_command_calls_total", shard=1, cmd="ping") >= 25
        assert series(fams, "ruvio_command_duration_seconds_count", shard=1, cmd="ping") >= 25
        assert series(fams, "ruvio_command_duration_seconds_bucket", shard=1, cmd="ping", le="+Inf") >= 25
        assert series(fams, "ruvio_shards") == 2
        own = parse_exposition(txt(c1.cmd("INFO", "prometheus")))   # INFO prometheus: this shard only
        assert {lab["shard"] for f in own.values() for _, lab, _ in f["samples"] if "shard" in lab} == {"1"}
        assert set(own) == set(fams)
        poll_until(lambda: series(parse_exposition(scrape(mport)), "ruvio_keys", shard=1) == 1, what="keys gauge")
        poll_until(lambda: series(parse_exposition(scrape(mport)), "ruvio_connected_clients", shard=1) >= 1,
                   what="clients gauge")
    with pytest.raises(urllib.error.HTTPError) as ei:
        scrape(mport, "/nothing")
    assert ei.value.code == 404
    assert srv.alive()


@pytest.mark.ruvio_only
def test_metrics_scrapes_under_load(start_server):
    """Scrapes while both shards run pipelined writes: always well-formed, counters never go back."""
    import threading
    mport = free_port()
    srv = start_server("--shards", "2", "--metrics_address", "127.0.0.1:%d" % mport)
    stop = threading.Event()
    errors = []

    def load(port):
        try:
            with srv.raw(port=port) as c:
                keys = [k for k in ("l%d" % i for i in range(400)) if (c.cmd("CLUSTER", "KEYSLOT", k) >= 8192)
                        == (port == srv.ports[1])][:50]
                batch = b"".join(encode_command("SET", k, "v") for k in keys)
                while not stop.is_set():
                    c.send(batch)
                    for _ in keys:
                        assert c.read_reply() == "OK"
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=load, args=(p,)) for p in srv.ports]
    for t in threads:
        t.start()
    try:
        last = {0: 0, 1: 0}
        for _ in range(15):
            fams = parse_exposition(scrape(mport))
            for i in (0, 1):
                v = series(fams, "ruvio_commands_processed_total", shard=i)
                assert v >= last[i]
                last[i] = v
            time.sleep(0.05)
        assert last[0] > 0 and last[1] > 0
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    assert not errors, errors
    assert srv.alive()


@pytest.mark.ruvio_only
def test_metrics_address_in_use_fails_start(start_server):
    mport = free_port()
    first = start_server("--metrics_address", "127.0.0.1:%d" % mport)
    bad = start_server("--metrics_address", "127.0.0.1:%d" % mport, expect_fail=True)
    assert bad.returncode not in (None, 0)
    assert "metrics_address" in bad.stderr()
    bad2 = start_server("--metrics_address", "nocolon", expect_fail=True)
    assert bad2.returncode not in (None, 0) and "metrics_address" in bad2.stderr()
    assert first.alive()


# --------------------------------------------------------------------------------------------------- SLOWLOG

def test_slowlog_records_and_truncates(start_server):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0") == "OK"
        assert c.cmd("CLIENT", "SETNAME", "obsclient") == "OK"
        assert c.cmd("SLOWLOG", "RESET") == "OK"
        c.cmd("SET", "obs:slow", "v")
        c.cmd("SET", "obs:long", "x" * 200)
        c.cmd("RPUSH", "obs:many", *[str(i) for i in range(40)])
        entries = c.cmd("SLOWLOG", "GET", "-1")
        byname = {}
        for e in entries:
            assert len(e) == 6
            eid, ts, us, args, addr, name = e
            assert isinstance(eid, int) and abs(ts - time.time()) < 60 and us >= 0
            assert name == b"obsclient" and addr.startswith(b"127.0.0.1:")
            byname.setdefault(args[0].lower(), []).append(args)
        sets = byname[b"set"]
        assert [b"SET", b"obs:slow", b"v"] in sets
        long_arg = [a for a in sets if a[1] == b"obs:long"][0][2]
        assert long_arg == b"x" * 128 + b"... (72 more bytes)"
        many = byname[b"rpush"][0]
        assert len(many) == 32
        assert many[:3] == [b"RPUSH", b"obs:many", b"0"]
        assert many[-1] == b"... (11 more arguments)"
        ids = [e[0] for e in entries]
        assert ids == sorted(ids, reverse=True)   # newest first
        assert len(c.cmd("SLOWLOG", "GET", "2")) == 2
        assert len(c.cmd("SLOWLOG", "GET")) <= 10
        assert isinstance(c.cmd("SLOWLOG", "GET", "-2"), RespError)
        assert c.cmd("SLOWLOG", "LEN") >= 4
        assert c.cmd("CONFIG", "SET", "slowlog-max-len", "3") == "OK"
        c.cmd("PING")
        assert c.cmd("SLOWLOG", "LEN") <= 3
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "-1") == "OK"
        assert c.cmd("SLOWLOG", "RESET") == "OK"
        c.cmd("PING")
        assert c.cmd("SLOWLOG", "LEN") == 0
        assert isinstance(c.cmd("SLOWLOG", "HELP"), list)


def test_slowlog_redacts_secrets(start_server):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0") == "OK"
        c.cmd("AUTH", "sekrit1")
        c.cmd("AUTH", "someuser", "sekrit2")
        c.cmd("HELLO", "2", "AUTH", "default", "sekrit3")
        c.cmd("CONFIG", "SET", "requirepass", "sekrit4", "slowlog-max-len", "100")
        c.cmd("AUTH", "sekrit4")
        args = [e[3] for e in c.cmd("SLOWLOG", "GET", "-1")]
        flat = b" ".join(a for entry in args for a in entry)
        assert b"sekrit" not in flat, args
        assert [b"AUTH", b"(redacted)", b"(redacted)"] in args
        assert [b"HELLO", b"2", b"AUTH", b"(redacted)", b"(redacted)"] in args
        assert [b"CONFIG", b"SET", b"requirepass", b"(redacted)", b"slowlog-max-len", b"100"] in args


def test_slowlog_threshold(start_server):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "1000000") == "OK"
        c.cmd("SLOWLOG", "RESET")
        for _ in range(20):
            c.cmd("PING")
        assert c.cmd("SLOWLOG", "LEN") == 0
        assert c.cmd("CONFIG", "GET", "slowlog-max-len") == [b"slowlog-max-len", b"128"]


def test_commandstats_time_each_command_of_a_pipeline_apart(start_server):
    """A pipeline is timed with one clock read per command (each runs from the end of the one before):
    a slow command's time stays its own, and neither the pause before a batch nor the one between
    batches is charged to anybody."""
    srv = start_server()
    with srv.raw() as c:
        # (a RESETSTAT once also wiped, at the shard's next config check, what ran after it)
        assert c.cmd("CONFIG", "RESETSTAT") == "OK"
        c.send(encode_command("DEBUG", "SLEEP", "0.2") + encode_command("PING") + encode_command("ECHO", "x"))
        assert c.read_reply() == "OK" and c.read_reply() == "PONG" and c.read_reply() == b"x"
        time.sleep(0.3)
        c.send(encode_command("PING") + encode_command("ECHO", "y"))
        assert c.read_reply() == "PONG" and c.read_reply() == b"y"
        stats = info(c, "commandstats")["commandstats"]
        # Redis 7.0 counts DEBUG as one command; 7.2 (and Ruvio) per subcommand
        dbg = "debug" if IS_REDIS and "cmdstat_debug" in stats else "debug|sleep"
        debug, ping, echo = (kv_stat(stats, n) for n in (dbg, "ping", "echo"))
        assert debug["calls"] == 1 and 190000 <= debug["usec"] < 2000000
        assert ping["calls"] == 2 and ping["usec"] < 20000
        assert echo["calls"] == 2 and echo["usec"] < 20000


def kv_stat(stats, name):
    return {k: float(x) for k, x in kv(stats["cmdstat_" + name]).items()}


# --------------------------------------------------------------------------------------------------- LATENCY

@pytest.mark.ruvio_only
def test_latency_monitor(start_server):
    srv = start_server()
    with srv.raw() as c:
        assert c.cmd("LATENCY", "LATEST") == []
        assert "disabled" in txt(c.cmd("LATENCY", "DOCTOR"))
        assert c.cmd("CONFIG", "SET", "latency-monitor-threshold", "50") == "OK"
        assert c.cmd("DEBUG", "SLEEP", "0.12") == "OK"
        latest = c.cmd("LATENCY", "LATEST")
        assert len(latest) == 1
        name, ts, last, worst = latest[0]
        assert name == b"command" and abs(ts - time.time()) < 60 and 100 <= last <= worst < 5000
        hist = c.cmd("LATENCY", "HISTORY", "command")
        assert len(hist) == 1 and hist[0][1] >= 100
        assert c.cmd("LATENCY", "HISTORY", "nosuchevent") == []
        doctor = txt(c.cmd("LATENCY", "DOCTOR"))
        assert "command" in doctor and "SLOWLOG" in doctor
        # fast commands stay under the threshold: no fast-command event
        for _ in range(20):
            c.cmd("GET", "x")
        assert [e[0] for e in c.cmd("LATENCY", "LATEST")] == [b"command"]
        assert c.cmd("LATENCY", "RESET", "nosuch") == 0
        assert c.cmd("LATENCY", "RESET") == 1
        assert c.cmd("LATENCY", "LATEST") == []
        # a fast command can spike too: GET of a 32 MB value copies it into the reply
        rc = srv.client(decode_responses=False)
        assert rc.set("big", b"x" * (32 << 20))
        assert c.cmd("CONFIG", "SET", "latency-monitor-threshold", "1") == "OK"
        assert len(rc.get("big")) == 32 << 20
        rc.close()
        assert b"fast-command" in [e[0] for e in c.cmd("LATENCY", "LATEST")]
        assert c.cmd("LATENCY", "RESET", "fast-command", "command") >= 1
        assert isinstance(c.cmd("LATENCY", "HELP"), list)
        # slowlog saw the sleep too (default threshold 10 ms)
        e = [e for e in c.cmd("SLOWLOG", "GET", "-1") if e[3][0] == b"DEBUG"][0]
        assert e[3] == [b"DEBUG", b"SLEEP", b"0.12"] and e[2] >= 100000


def test_latency_event_names_are_case_sensitive(start_server):
    """LATENCY HISTORY and GRAPH find an event by its exact name, as Redis (its events dict compares bytes):
    "COMMAND" is no event there; RESET matches names ignoring case, as Redis's does."""
    srv = start_server("--enable-debug-command", "yes")
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "latency-monitor-threshold", "10") == "OK"
        assert c.cmd("DEBUG", "SLEEP", "0.05") == "OK"   # at least 50 ms: over the threshold whatever the load
        assert [e[0] for e in c.cmd("LATENCY", "LATEST")] == [b"command"]
        assert c.cmd("LATENCY", "HISTORY", "COMMAND") == []
        assert c.cmd("LATENCY", "HISTORY", "Command") == []
        assert len(c.cmd("LATENCY", "HISTORY", "command")) == 1
        err = c.cmd("LATENCY", "GRAPH", "COMMAND")
        assert isinstance(err, RespError) and str(err) == "ERR No samples available for event 'COMMAND'"
        assert c.cmd("LATENCY", "GRAPH", "command").startswith(b"command - high")
        assert c.cmd("LATENCY", "RESET", "COMMAND") == 1    # RESET compares names ignoring case (strcasecmp)
        assert c.cmd("LATENCY", "LATEST") == []
        assert c.cmd("LATENCY", "RESET", "command") == 0


@pytest.mark.ruvio_only
def test_latency_aof_write_event(start_server):
    srv = start_server("--durability", "everysec")
    with srv.raw() as c:
        assert c.cmd("CONFIG", "SET", "latency-monitor-threshold", "1") == "OK"
        rc = srv.client(decode_responses=False)
        assert rc.set("big", b"x" * (48 << 20))   # one 48 MB WAL record: its write() takes well over 1 ms
        rc.close()
        events = {e[0]: e for e in c.cmd("LATENCY", "LATEST")}
        assert b"aof-write" in events and events[b"aof-write"][2] >= 1
        assert len(c.cmd("LATENCY", "HISTORY", "aof-write")) >= 1


# ---------------------------------------------------------------------------------------- CLIENT / COMMAND

# Redis 7.0's fields; 7.2 added watch, lib-name and lib-ver (checked below on ruvio only: 7.0 lacks SETINFO).
REDIS_CLIENT_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
                       "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem",
                       "tot-mem", "events", "cmd", "user", "redir", "resp"]


def client_fields(line):
    return dict(p.split("=", 1) for p in line.strip().split(" "))


def test_client_list_fields(raw):
    assert raw.cmd("CLIENT", "SETNAME", "obsname") == "OK"
    f = client_fields(txt(raw.cmd("CLIENT", "INFO")))
    for k in REDIS_CLIENT_FIELDS:
        assert k in f, "CLIENT INFO lacks %s" % k
    assert f["name"] == "obsname" and f["cmd"] == "client|info" and f["resp"] == "2"
    assert f["addr"].startswith("127.0.0.1:") and int(f["fd"]) > 0 and f["flags"] == "N"
    lines = [l for l in txt(raw.cmd("CLIENT", "LIST")).split("\n") if l]
    mine = [client_fields(l) for l in lines if "name=obsname" in l]
    assert len(mine) == 1 and mine[0]["id"] == f["id"]
    for k in REDIS_CLIENT_FIELDS:
        assert k in mine[0]


def test_client_list_multi_fields(raw):
    """multi= counts the commands queued by a MULTI (-1 outside one), multi-mem= their memory."""
    other = raw.new()
    assert raw.cmd("CLIENT", "SETNAME", "txn") == "OK"
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("SET", "k", "v" * 1000) == "QUEUED" and raw.cmd("INCR", "n") == "QUEUED"

    def mine():
        lines = [client_fields(l) for l in txt(other.cmd("CLIENT", "LIST")).split("\n") if "name=txn" in l]
        assert len(lines) == 1
        return lines[0]
    f = mine()
    assert f["multi"] == "2" and int(f["multi-mem"]) >= 1000 and "x" in f["flags"]
    assert raw.cmd("EXEC") == ["OK", 1]
    f = mine()
    assert f["multi"] == "-1" and f["multi-mem"] == "0"


@pytest.mark.ruvio_only
def test_client_setinfo_and_watch_fields(raw):
    assert raw.cmd("CLIENT", "SETINFO", "LIB-NAME", "obslib") == "OK"
    assert raw.cmd("CLIENT", "SETINFO", "lib-ver", "1.2.3") == "OK"
    assert raw.cmd("WATCH", "w1", "w2") == "OK"
    f = client_fields(txt(raw.cmd("CLIENT", "INFO")))
    assert f["lib-name"] == "obslib" and f["lib-ver"] == "1.2.3" and f["watch"] == "2"
    raw.cmd("UNWATCH")
    assert raw.cmd("CLIENT", "SETINFO", "LIB-VER", "") == "OK"
    f = client_fields(txt(raw.cmd("CLIENT", "INFO")))
    assert f["watch"] == "0" and f["lib-ver"] == "" and f["lib-name"] == "obslib"
    err = raw.cmd("CLIENT", "SETINFO", "LIB-NAME", "bad name")
    assert isinstance(err, RespError) and "lib-name cannot contain spaces" in err
    err = raw.cmd("CLIENT", "SETINFO", "nosuch", "x")
    assert isinstance(err, RespError) and "Unrecognized option 'nosuch'" in err


def test_command_count(raw):
    n = raw.cmd("COMMAND", "COUNT")
    assert isinstance(n, int) and n == len(raw.cmd("COMMAND"))
    names = {e[0] for e in raw.cmd("COMMAND")}
    for name in (b"slowlog", b"latency", b"info", b"client"):
        assert name in names


# ------------------------------------------------------------------------------------------------- logging

@pytest.mark.ruvio_only
def test_log_queue_drops_instead_of_blocking(start_server, tmp_path):
    logfile = tmp_path / "ruvio.log"
    mport = free_port()
    srv = start_server("--log_queue_lines", "2", "--logfile", str(logfile),
                       "--metrics_address", "127.0.0.1:%d" % mport)
    n = 20000
    with srv.raw() as c:
        base = int(info(c, "stats")["stats"]["log_lines_dropped"])   # start-up lines may already be dropped
        c.send(b"".join(encode_command("DEBUG", "LOG", "flood %d" % i) for i in range(n)))
        t0 = time.monotonic()
        for _ in range(n):
            r = c.read_reply()
            assert r == "OK"
        with srv.raw() as other:
            assert other.cmd("PING") == "PONG"
        assert time.monotonic() - t0 < 30
        total = int(info(c, "stats")["stats"]["log_lines_dropped"])
        dropped = total - base
        assert 0 < dropped < n
        fams = parse_exposition(scrape(mport))
        assert series(fams, "ruvio_log_lines_dropped_total") >= total

        def written():
            return logfile.read_text(errors="replace").count("DEBUG LOG: flood")

        poll_until(lambda: written() + dropped >= n, what="log writer to drain")
        assert written() + dropped == n
    line = [l for l in logfile.read_text().splitlines() if "DEBUG LOG: flood" in l][0]
    # pid:M dd Mon yyyy hh:mm:ss.mmm <mark> [shard 0] server: message
    assert re.match(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} # \[shard 0\] server: DEBUG LOG: flood \d+$",
                    line), line


@pytest.mark.ruvio_only
def test_ruvio_log_module_filter(start_server, tmp_path):
    quiet = tmp_path / "quiet.log"
    srv = start_server("--logfile", str(quiet), env=dict(os.environ, RUVIO_LOG="warning"))
    srv.stop()
    assert "Ready to accept" not in quiet.read_text()
    loud = tmp_path / "loud.log"
    srv = start_server("--logfile", str(loud), env=dict(os.environ, RUVIO_LOG="warning,main=notice"))
    poll_until(lambda: "Ready to accept" in loud.read_text(), what="main module notice line")
    assert re.search(r"\* \[main\] main: Ready to accept", loud.read_text())
    assert "Accepted" not in loud.read_text()
    verbose = tmp_path / "verbose.log"
    srv = start_server("--logfile", str(verbose), env=dict(os.environ, RUVIO_LOG="warning,shard=verbose"))
    with srv.raw() as c:
        assert c.cmd("PING") == "PONG"
    poll_until(lambda: re.search(r"- \[shard 0\] shard: Accepted 127\.0\.0\.1:\d+", verbose.read_text()),
               what="a verbose line from the shard module")
    assert "Ready to accept" not in verbose.read_text()
    bad = start_server(env=dict(os.environ, RUVIO_LOG="loud"), expect_fail=True)
    assert bad.returncode not in (None, 0) and "RUVIO_LOG" in bad.stderr()
