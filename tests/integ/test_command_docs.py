"""COMMAND DOCS' group, since, doc_flags, deprecated_since, replaced_by and history, as Redis 7.0 gives them, for
a sample of commands; shared with redis-server (RUVIO_TARGET=redis), so the expectations are Redis's own words.
Summaries, complexities and argument trees are Ruvio's (docs/commands.md) and are not compared here.

Also COMMAND LIST: the commands of Redis 7.0's list that Ruvio does not have are the ones docs/commands.md
explains (checked against the reference server when there is one to ask)."""

import re
import shutil
import subprocess

import pytest

from conftest import HOST, IS_REDIS, REPO, RawConn, free_port, ping_once, wait_for

# Fields in the order Redis 7.0 replies them (summary and complexity left out).
SAMPLE = {
    "get": [("since", "1.0.0"), ("group", "string")],
    "zadd": [("since", "1.2.0"), ("group", "sorted-set"), ("history", [
        ["2.4.0", "Accepts multiple elements."],
        ["3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."],
        ["6.2.0", "Added the `GT` and `LT` options."]])],
    "bzpopmin": [("since", "5.0.0"), ("group", "sorted-set"), ("history", [
        ["6.0.0", "`timeout` is interpreted as a double instead of an integer."]])],
    "hset": [("since", "2.0.0"), ("group", "hash"), ("history", [
        ["4.0.0", "Accepts multiple `field` and `value` arguments."]])],
    "getset": [("since", "1.0.0"), ("group", "string"), ("doc_flags", ["deprecated"]),
               ("deprecated_since", "6.2.0"), ("replaced_by", "`SET` with the `!GET` argument")],
    "georadius": [("since", "3.2.0"), ("group", "geo"), ("doc_flags", ["deprecated"]),
                  ("deprecated_since", "6.2.0"),
                  ("replaced_by", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument"),
                  ("history", [["6.2.0", "Added the `ANY` option for `COUNT`."],
                               ["7.0.0", "Added support for uppercase unit names."]])],
    "xsetid": [("since", "5.0.0"), ("group", "stream"), ("history", [
        ["7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments."]])],
    "cluster|slaves": [("since", "3.0.0"), ("group", "cluster"), ("doc_flags", ["deprecated"]),
                       ("deprecated_since", "5.0.0"), ("replaced_by", "`CLUSTER REPLICAS`")],
    "cluster|replicas": [("since", "5.0.0"), ("group", "cluster")],
    "restore-asking": [("since", "3.0.0"), ("group", "server"), ("doc_flags", ["syscmd"]), ("history", [
        ["3.0.0", "Added the `REPLACE` modifier."], ["5.0.0", "Added the `ABSTTL` modifier."],
        ["5.0.0", "Added the `IDLETIME` and `FREQ` options."]])],
    "latency|history": [("since", "2.8.13"), ("group", "server")],
}


def decode(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [decode(i) for i in x]
    return x


def pairs(flat):
    return [(decode(flat[i]), flat[i + 1]) for i in range(0, len(flat), 2)]


def test_command_docs_metadata_as_redis(raw):
    reply = raw.cmd("COMMAND", "DOCS", *SAMPLE)
    docs = dict(pairs(reply))
    assert sorted(docs) == sorted(SAMPLE)
    for name, want in SAMPLE.items():
        got = [(k, decode(v)) for k, v in pairs(docs[name])
               if k not in ("summary", "complexity", "arguments", "subcommands")]
        assert got == want, name


def test_command_docs_fields_present_as_redis(raw):
    """Which of arguments and subcommands each command's docs have: Redis 7.0 gives none for COMMAND GETKEYS,
    GETKEYSANDFLAGS and REPLCONF's arguments, nor DEBUG's subcommands."""
    want = {
        "command|getkeys": [], "command|getkeysandflags": [], "replconf": [], "debug": [],
        "get": ["arguments"], "command": ["subcommands"], "command|info": ["arguments"],
        "xgroup": ["subcommands"], "config|set": ["arguments"],
    }
    docs = dict(pairs(raw.cmd("COMMAND", "DOCS", *want)))
    assert sorted(docs) == sorted(want)
    for name, fields in want.items():
        got = [k for k, _ in pairs(docs[name]) if k in ("arguments", "subcommands")]
        assert got == fields, name
    sub = dict(pairs(dict(pairs(raw.cmd("COMMAND", "DOCS", "command")))["command"]))["subcommands"]
    body = dict(pairs(dict(pairs(sub))["command|getkeys"]))
    assert "arguments" not in body and body["since"] == b"2.8.13"


def test_command_docs_resp3_types(raw):
    c = raw.new()
    c.cmd("HELLO", "3")
    # RESP3: doc_flags and history are sets; a history entry is an array of two bulk strings
    body = c.cmd_raw("COMMAND", "DOCS", "getset", "hset")
    assert b"$9\r\ndoc_flags\r\n~1\r\n+deprecated\r\n" in body
    assert (b"$7\r\nhistory\r\n~1\r\n*2\r\n$5\r\n4.0.0\r\n$47\r\n"
            b"Accepts multiple `field` and `value` arguments.\r\n") in body


def test_cluster_slaves_answers_as_cluster_replicas(raw):
    info = {decode(e[0]): e for e in raw.cmd("COMMAND", "INFO", "cluster|slaves", "cluster|replicas")}
    assert info["cluster|slaves"][1] == info["cluster|replicas"][1] == 3
    assert raw.cmd("CLUSTER", "SLAVES", "x") == raw.cmd("CLUSTER", "REPLICAS", "x")


MISSING_ROW = re.compile(r"^\| `([A-Z][A-Z| _-]*)` \| ")


def documented_missing():
    """The commands named by docs/commands.md's table of Redis commands Ruvio does not have, as COMMAND LIST
    names them ("script|debug")."""
    text = (REPO / "docs" / "commands.md").read_text()
    section = text.split("## Redis commands Ruvio does not have", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        m = MISSING_ROW.match(line)
        if m:
            names.add(m.group(1).lower().replace(" ", "|"))
    return names


def test_documented_missing_commands(raw):
    """Against Ruvio: none of them is there; against Redis: every one of them is (so the list names real
    commands)."""
    listed = {decode(n) for n in raw.cmd("COMMAND", "LIST")}
    missing = documented_missing()
    assert len(missing) >= 5
    if IS_REDIS:
        assert missing <= listed, sorted(missing - listed)
    else:
        assert not (missing & listed), sorted(missing & listed)


@pytest.mark.ruvio_only
def test_every_redis_command_is_there_or_explained(raw, tmp_path):
    """Redis 7.0's COMMAND LIST, asked of a throwaway redis-server: each name Ruvio lacks is in the table."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("no redis-server to ask")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: ping_once(HOST, port), timeout=10, what="redis-server up")
        with RawConn(HOST, port) as ref:
            theirs = {decode(n) for n in ref.cmd("COMMAND", "LIST")}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    ours = {decode(n) for n in raw.cmd("COMMAND", "LIST")}
    assert theirs - ours == documented_missing()


def arg_tree(args):
    """COMMAND DOCS' arguments as lists of (field, value) in reply order, flags sorted."""
    out = []
    for a in args:
        row = []
        for k, v in pairs(a):
            if k == "arguments":
                row.append((k, arg_tree(v)))
            elif k == "flags":
                row.append((k, sorted(decode(v))))
            else:
                row.append((k, decode(v)))
        out.append(row)
    return out


def tok(name, token, since=None, flags=None):
    row = [("name", name), ("type", "pure-token"), ("token", token)]
    return row + ([("since", since)] if since else []) + ([("flags", flags)] if flags else [])


# Redis 7.0's argument trees (names, types, tokens, per-argument since, flags), in its field order.
ARG_TREES = {
    "set": [
        [("name", "key"), ("type", "key"), ("key_spec_index", 0)], [("name", "value"), ("type", "string")],
        [("name", "condition"), ("type", "oneof"), ("since", "2.6.12"), ("flags", ["optional"]),
         ("arguments", [tok("nx", "NX"), tok("xx", "XX")])],
        tok("get", "GET", "6.2.0", ["optional"]),
        [("name", "expiration"), ("type", "oneof"), ("flags", ["optional"]), ("arguments", [
            [("name", "seconds"), ("type", "integer"), ("token", "EX"), ("since", "2.6.12")],
            [("name", "milliseconds"), ("type", "integer"), ("token", "PX"), ("since", "2.6.12")],
            [("name", "unix-time-seconds"), ("type", "unix-time"), ("token", "EXAT"), ("since", "6.2.0")],
            [("name", "unix-time-milliseconds"), ("type", "unix-time"), ("token", "PXAT"), ("since", "6.2.0")],
            tok("keepttl", "KEEPTTL", "6.0.0")])]],
    "getex": [
        [("name", "key"), ("type", "key"), ("key_spec_index", 0)],
        [("name", "expiration"), ("type", "oneof"), ("flags", ["optional"]), ("arguments", [
            [("name", "seconds"), ("type", "integer"), ("token", "EX")],
            [("name", "milliseconds"), ("type", "integer"), ("token", "PX")],
            [("name", "unix-time-seconds"), ("type", "unix-time"), ("token", "EXAT")],
            [("name", "unix-time-milliseconds"), ("type", "unix-time"), ("token", "PXAT")],
            tok("persist", "PERSIST")])]],
    "xadd": [
        [("name", "key"), ("type", "key"), ("key_spec_index", 0)],
        tok("nomkstream", "NOMKSTREAM", "6.2.0", ["optional"]),
        [("name", "trim"), ("type", "block"), ("flags", ["optional"]), ("arguments", [
            [("name", "strategy"), ("type", "oneof"),
             ("arguments", [tok("maxlen", "MAXLEN"), tok("minid", "MINID", "6.2.0")])],
            [("name", "operator"), ("type", "oneof"), ("flags", ["optional"]),
             ("arguments", [tok("equal", "="), tok("approximately", "~")])],
            [("name", "threshold"), ("type", "string")],
            [("name", "count"), ("type", "integer"), ("token", "LIMIT"), ("since", "6.2.0"),
             ("flags", ["optional"])]])],
        [("name", "id_or_auto"), ("type", "oneof"),
         ("arguments", [tok("auto_id", "*"), [("name", "id"), ("type", "string")]])],
        [("name", "field_value"), ("type", "block"), ("flags", ["multiple"]),
         ("arguments", [[("name", "field"), ("type", "string")], [("name", "value"), ("type", "string")]])]],
    "copy": [
        [("name", "source"), ("type", "key"), ("key_spec_index", 0)],
        [("name", "destination"), ("type", "key"), ("key_spec_index", 1)],
        [("name", "destination-db"), ("type", "integer"), ("token", "DB"), ("flags", ["optional"])],
        tok("replace", "REPLACE", None, ["optional"])],
    "client|pause": [
        [("name", "timeout"), ("type", "integer")],
        [("name", "mode"), ("type", "oneof"), ("since", "6.2.0"), ("flags", ["optional"]),
         ("arguments", [tok("write", "WRITE"), tok("all", "ALL")])]],
}


def test_command_docs_argument_trees_as_redis(raw):
    """Argument names Redis gives groups ("condition", not one made of "nx" and "xx"), per-argument since,
    types and a second key's key_spec_index, in Redis's field order."""
    docs = dict(pairs(raw.cmd("COMMAND", "DOCS", *ARG_TREES)))
    assert sorted(docs) == sorted(ARG_TREES)
    for name, want in ARG_TREES.items():
        assert arg_tree(dict(pairs(docs[name]))["arguments"]) == want, name


# Commands whose trees still differ from Redis 7.0's, and why (docs/commands.md, "COMMAND DOCS"): Ruvio's
# extra arguments (INCRBY ... MAX, ZRANK WITHSCORE, ...) or groupings its syntax strings give differently.
ARG_TREES_DIFFER = {
    "bitfield_ro", "client|kill", "client|list", "config|get", "failover", "geohash", "geopos",
    "georadius", "georadiusbymember", "geosearch", "geosearchstore", "hscan", "incrby", "migrate",
    "pfmerge", "psubscribe", "replicaof", "slaveof", "xinfo|stream", "xread", "xreadgroup", "xtrim", "zrank",
    "zrevrank",
}


@pytest.mark.ruvio_only
def test_command_docs_arguments_match_redis_server(raw, tmp_path):
    """Every command both servers know: the argument trees match a throwaway redis-server 7.0's, but for the
    listed ones (scripts/docs_diff.py reports what differs in them)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("no redis-server to ask")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: ping_once(HOST, port), timeout=10, what="redis-server up")
        with RawConn(HOST, port) as ref:
            if not decode(ref.cmd("INFO", "server")).count("redis_version:7.0."):
                pytest.skip("the reference is not redis-server 7.0")
            theirs = flat_docs(ref.cmd("COMMAND", "DOCS"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    ours = flat_docs(raw.cmd("COMMAND", "DOCS"))
    differ = {n for n in set(ours) & set(theirs)
              if arg_tree(ours[n].get("arguments", [])) != arg_tree(theirs[n].get("arguments", []))}
    assert differ == ARG_TREES_DIFFER


def flat_docs(reply):
    """{full name: {field: value}}, subcommands included as "parent|sub"."""
    out = {}
    for name, body in pairs(reply):
        fields = dict(pairs(body))
        out[name] = fields
        if "subcommands" in fields:
            out.update(flat_docs(fields["subcommands"]))
    return out
