"""JSON documents (issue 20), the gaps a second round closed: JSON.MERGE with a null at the root, the bound on a
JSONPath evaluation's work (several `..` steps, scanning filter operands), and RedisJSON 2.x's exact error
texts for the common commands.

ruvio_only: the redis-server here has no RedisJSON module. The expected behaviour comes from RedisJSON's
source and tests (its merge: a patch that is not an object replaces the target, RFC 7386; its legacy-path
errors "ERR Path '<path>' does not exist or not an array" and the like; serde_json's parse errors, replied
without an ERR prefix)."""
import json
import signal
import socket
import time

import pytest

from conftest import encode_command, resp_error

pytestmark = pytest.mark.ruvio_only


def J(c, *args):
    return c.execute_command(*args)


# ------------------------------------------------------------------------------------- MERGE null at the root

def test_merge_null_at_root_makes_the_document_null(r):
    J(r, "JSON.SET", "d", "$", '{"a":1,"b":[2]}')
    assert J(r, "JSON.MERGE", "d", "$", "null") == "OK"
    assert J(r, "JSON.GET", "d") == "null"              # the key stays, holding JSON null
    assert J(r, "JSON.TYPE", "d") == "null"
    assert r.type("d") == "ReJSON-RL"
    assert r.exists("d") == 1
    # merging an object into null starts from an empty object (RFC 7386)
    assert J(r, "JSON.MERGE", "d", "$", '{"x":{"y":null,"z":1}}') == "OK"
    assert J(r, "JSON.GET", "d") == '{"x":{"z":1}}'
    # the legacy root too
    assert J(r, "JSON.MERGE", "d", ".", "null") == "OK"
    assert J(r, "JSON.GET", "d") == "null"


def test_merge_null_creates_a_null_document_and_sets_members_to_null(r):
    assert J(r, "JSON.MERGE", "new", "$", "null") == "OK"
    assert J(r, "JSON.GET", "new", "$") == "[null]"
    J(r, "JSON.SET", "d", "$", '{"a":{"b":1},"c":2}')
    assert J(r, "JSON.MERGE", "d", "$.a", "null") == "OK"     # a matched value becomes null...
    assert J(r, "JSON.GET", "d") == '{"a":null,"c":2}'
    assert J(r, "JSON.MERGE", "d", "$", '{"c":null}') == "OK"  # ...a null member of a patch deletes
    assert J(r, "JSON.GET", "d") == '{"a":null}'
    # a missing member whose parent exists takes the value as it is, null too (RedisJSON's merge into
    # nothing is a set)
    assert J(r, "JSON.MERGE", "d", "$.nope", "null") == "OK"
    assert J(r, "JSON.GET", "d") == '{"a":null,"nope":null}'
    J(r, "JSON.MERGE", "d", "$.x.y", "null")                  # no parent: nothing set
    assert J(r, "JSON.GET", "d") == '{"a":null,"nope":null}'


def test_merge_null_root_survives_a_restart(start_server, tmp_path):
    """The WAL logs the merge as its arguments; replaying it (and a checkpoint of the null document) gives
    the same null document."""
    d = str(tmp_path / "p")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    J(c, "JSON.SET", "d", "$", '{"a":[1,2,3]}')
    J(c, "JSON.MERGE", "d", "$", "null")
    J(c, "JSON.MERGE", "n", "$", "null")
    srv.proc.send_signal(signal.SIGKILL)                  # the WAL replays the writes
    srv.proc.wait(timeout=5)
    srv2 = start_server("--dir", d, "--durability", "always")
    c2 = srv2.client()
    assert [J(c2, "JSON.GET", k) for k in ("d", "n")] == ["null", "null"]
    assert c2.type("d") == "ReJSON-RL"
    assert c2.save()                                      # and from a checkpoint alone
    srv2.stop()
    c3 = start_server("--dir", d, "--durability", "always").client()
    assert [J(c3, "JSON.GET", k) for k in ("d", "n")] == ["null", "null"]


# ------------------------------------------------------------------------------- the bound on `..` and filters

def deep_chain(n):
    return '{"a":' * n + "1" + "}" * n


def test_recursive_descent_within_the_bound(r):
    J(r, "JSON.SET", "deep", "$", deep_chain(127))
    assert len(json.loads(J(r, "JSON.GET", "deep", "$..a"))) == 127
    assert len(json.loads(J(r, "JSON.GET", "deep", "$..a..a"))) == 127 * 126 // 2
    n = 100000
    J(r, "JSON.SET", "big", "$", json.dumps({"arr": [{"x": i, "y": [i]} for i in range(n)]}))
    assert len(json.loads(J(r, "JSON.GET", "big", "$..x"))) == n          # one scan: any size
    assert len(json.loads(J(r, "JSON.GET", "big", "$..*"))) == 1 + 4 * n
    assert J(r, "JSON.GET", "big", "$..[?(@.x == 99999)].y") == "[[99999]]"


def test_recursive_descent_past_the_bound_is_a_clear_error(r):
    J(r, "JSON.SET", "deep", "$", deep_chain(127))
    before = J(r, "JSON.GET", "deep")
    t0 = time.monotonic()
    for path in ("$..a..a..a..a", "$..*..*..*..*..*..*..*..*", "$..a..a..a..a..a..a..a..a..a..a"):
        assert resp_error(J, r, "JSON.GET", "deep", path) == \
            "JSONPath evaluation exceeds its limit of 16 steps per node"
    # the same on every command that evaluates a path, and writes change nothing
    for cmd in (("JSON.SET", "deep", "$..a..a..a..a", "0"), ("JSON.DEL", "deep", "$..a..a..a..a"),
                ("JSON.NUMINCRBY", "deep", "$..a..a..a..a", "1"), ("JSON.TYPE", "deep", "$..a..a..a..a"),
                ("JSON.MERGE", "deep", "$..a..a..a..a", "{}"), ("JSON.CLEAR", "deep", "$..a..a..a..a"),
                ("JSON.TOGGLE", "deep", "$..a..a..a..a"), ("JSON.ARRAPPEND", "deep", "$..a..a..a..a", "1"),
                ("JSON.OBJKEYS", "deep", "$..a..a..a..a"), ("JSON.STRLEN", "deep", "$..a..a..a..a")):
        assert "exceeds its limit" in resp_error(J, r, *cmd), cmd
    assert J(r, "JSON.GET", "deep") == before
    # JSON.MGET replies the error in that key's place
    got = r.execute_command("JSON.MGET", "deep", "$..a..a..a..a", )
    assert isinstance(got[0], Exception) and "exceeds its limit" in str(got[0])
    assert time.monotonic() - t0 < 60                     # bounded work (seconds even on a loaded machine)
    assert r.ping()


def test_filter_with_a_scanning_operand_is_bounded(r):
    n = 20000
    J(r, "JSON.SET", "d", "$", json.dumps({"arr": [{"x": i} for i in range(n)]}))
    assert J(r, "JSON.GET", "d", "$.arr[?(@.x == $.arr[-1].x)].x") == "[%d]" % (n - 1)   # fixed operand: linear
    # an operand that scans the array for every element is quadratic: stopped
    assert "exceeds its limit" in resp_error(J, r, "JSON.GET", "d", "$.arr[?(@.x == $.arr[*].x)].x")
    assert "exceeds its limit" in resp_error(J, r, "JSON.GET", "d", "$.arr[?(@.x == $..x)]")


def test_chained_unions_are_bounded(r):
    J(r, "JSON.SET", "u", "$", "[[[[1]]]]")
    union = "[" + ",".join(["0"] * 2000) + "]"
    # 2000 x 2000 x 2000 lookups without a single match: stopped
    assert "exceeds its limit" in resp_error(J, r, "JSON.GET", "u", "$" + union * 3 + "[5]")
    assert J(r, "JSON.GET", "u", "$[0][0][0,0]") == "[[1],[1]]"


# ----------------------------------------------------------------------------------------------- error texts

def test_legacy_path_errors_match_redisjson(raw):
    assert raw.cmd("JSON.SET", "d", "$", '{"s":"a","n":1,"b":true,"a":[1],"o":{}}') == "OK"
    cases = [
        (("JSON.TOGGLE", "d", ".s"), b"-ERR Path '$.s' does not exist or not a bool"),
        (("JSON.TOGGLE", "d", ".zz"), b"-ERR Path '$.zz' does not exist or not a bool"),
        (("JSON.STRAPPEND", "d", ".n", '"x"'), b"-ERR Path '$.n' does not exist or not a string"),
        (("JSON.NUMINCRBY", "d", "s", "1"), b"-ERR Path '$.s' does not exist or does not contains a number"),
        (("JSON.NUMMULTBY", "d", ".b", "2"), b"-ERR Path '$.b' does not exist or does not contains a number"),
        (("JSON.ARRAPPEND", "d", ".s", "1"), b"-ERR Path '.s' does not exist or not an array"),
        (("JSON.ARRINSERT", "d", ".s", "0", "1"), b"-ERR Path '$.s' does not exist or not an array"),
        (("JSON.ARRPOP", "d", ".s"), b"-ERR Path '$.s' does not exist or not an array"),
        (("JSON.ARRTRIM", "d", ".", "0", "1"), b"-ERR Path '$' does not exist or not an array"),
        (("JSON.ARRLEN", "d", ".s"), b"-ERR Path '.s' does not exist or not an array"),
        (("JSON.ARRLEN", "d", ".zz"), b"-ERR Path '.zz' does not exist"),
        (("JSON.OBJKEYS", "d", ".s"), b"-ERR Path '$.s' does not exist or not an object"),
        (("JSON.STRLEN", "d", ".n"), b"-WRONGTYPE wrong type of path value - expected string but found integer"),
        (("JSON.OBJLEN", "d", ".n"), b"-WRONGTYPE wrong type of path value - expected object but found integer"),
        (("JSON.GET", "d", ".zz"), b"-ERR Path '.zz' does not exist"),
        (("JSON.SET", "nokey", "$.a", "1"), b"-ERR new objects must be created at the root"),
        (("JSON.MERGE", "nokey", "$.a", "1"), b"-ERR new objects must be created at the root"),
        (("JSON.ARRAPPEND", "nokey", "$", "1"),
         b"-ERR could not perform this operation on a key that doesn't exist"),
    ]
    for args, want in cases:
        assert raw.cmd_raw(*args) == want + b"\r\n", args
    assert raw.cmd("JSON.GET", "d") == b'{"s":"a","n":1,"b":true,"a":[1],"o":{}}'      # nothing changed
    assert raw.cmd_raw("JSON.OBJKEYS", "d", ".zz") == b"$-1\r\n"                       # a missing path: nil
    assert raw.cmd_raw("JSON.TOGGLE", "d", ".b") == b"$5\r\nfalse\r\n"


def test_parse_errors_are_serde_json_texts_without_err(raw):
    raw.cmd("JSON.SET", "d", "$", "{}")
    cases = [
        ("{", b"-EOF while parsing an object at line 1 column 1"),
        ("[1,2", b"-EOF while parsing a list at line 1 column 4"),
        ("", b"-EOF while parsing a value at line 1 column 0"),
        ("x", b"-expected value at line 1 column 1"),
        ('{"a" 1}', b"-expected `:` at line 1 column 6"),
        ("[1,]", b"-trailing comma at line 1 column 4"),
        ("{1:2}", b"-key must be a string at line 1 column 2"),
        ("[1] 2", b"-trailing characters at line 1 column 5"),
    ]
    for text, want in cases:
        assert raw.cmd_raw("JSON.SET", "d", "$.a", text) == want + b"\r\n", text
    assert raw.cmd("JSON.GET", "d") == b"{}"


def test_reads_of_a_missing_key_match_redisjson(raw):
    """Legacy paths reply nil; `$` paths fail as RedisJSON's do (its STRLEN/ARRLEN/OBJKEYS say the key does
    not exist, OBJLEN names the path, ARRINDEX names the path for either syntax)."""
    nokey = b"-ERR could not perform this operation on a key that doesn't exist\r\n"
    cases = [
        (("JSON.STRLEN", "nokey", "$"), nokey),
        (("JSON.ARRLEN", "nokey", "$.a"), nokey),
        (("JSON.OBJKEYS", "nokey", "$"), nokey),
        (("JSON.OBJLEN", "nokey", "$.a"), b"-ERR Path '$.a' does not exist or not an object\r\n"),
        (("JSON.ARRINDEX", "nokey", "$.a", "1"), b"-ERR Path '$.a' does not exist\r\n"),
        (("JSON.ARRINDEX", "nokey", ".a", "1"), b"-ERR Path '.a' does not exist\r\n"),
        (("JSON.STRLEN", "nokey"), b"$-1\r\n"),
        (("JSON.ARRLEN", "nokey", ".a"), b"$-1\r\n"),
        (("JSON.OBJKEYS", "nokey"), b"$-1\r\n"),
        (("JSON.OBJLEN", "nokey"), b"$-1\r\n"),
        (("JSON.GET", "nokey", "$"), b"$-1\r\n"),
        (("JSON.TYPE", "nokey", "$"), b"$-1\r\n"),
    ]
    for args, want in cases:
        assert raw.cmd_raw(*args) == want, args


# ---------------------------------------------------------------------------- large match replies vs limits

def test_large_match_reply_is_cut_by_the_output_buffer_limit(start_server):
    """`$..*` writes every match whole, so its reply can be many times the document (here 156 KB of document,
    561 KB of reply). The reply is built whole, as Redis builds any reply and RedisJSON serialises its reply
    into one string, and then counts against client-output-buffer-limit like any other: past the normal
    class's hard limit the client is closed without getting any of it and the buffer is freed, while
    other clients and smaller replies go on."""
    srv = start_server("--client-output-buffer-limit", "normal 256kb 0 0")
    r = srv.client()
    doc = {"l%d" % i: {"a": [{"b": "x" * 50, "c": [1, 2, 3]} for _ in range(20)]} for i in range(100)}
    J(r, "JSON.SET", "d", "$", json.dumps(doc))
    before = int(r.info("stats")["client_output_buffer_limit_disconnections"])
    mem_before = int(r.info("memory")["used_memory"])
    assert len(J(r, "JSON.GET", "d", "$.l7")) < 8192                  # under the limit: replied
    s = socket.create_connection((srv.host, srv.port), timeout=30)
    try:
        s.sendall(encode_command("JSON.GET", "d", "$..*"))
        got = 0
        while True:                                                   # EOF, bounded by the socket timeout
            b = s.recv(1 << 20)
            if not b:
                break
            got += len(b)
    finally:
        s.close()
    assert got < 256 * 1024
    assert int(r.info("stats")["client_output_buffer_limit_disconnections"]) == before + 1
    assert int(r.info("memory")["used_memory"]) < mem_before + 256 * 1024
    r.config_set("client-output-buffer-limit", "normal 0 0 0")
    assert len(J(r, "JSON.GET", "d", "$..*")) > 500_000             # the same reply, unlimited
