"""JSON commands look at the key before they compile the path (issue 20), and a malformed path is an error only
where RedisJSON 2.x makes it one.

ruvio_only: the redis-server here has no RedisJSON module. What RedisJSON 2.x does, read in its source
(src/commands.rs for 2.0-2.4; redis_json/src/commands.rs and key_value.rs for 2.6-2.8, the same in each):
every command opens the key (a key of another type fails there) and looks at its value before it compiles
the path, so a missing key replies as it always does, whatever the path: JSON.GET, JSON.TYPE and JSON.RESP
nil, JSON.DEL 0, JSON.DEBUG MEMORY 0 (legacy) or [] (`$`), the reads that fail on a missing key with a `$` path
(STRLEN, ARRLEN, OBJKEYS: "could not perform this operation on a key that doesn't exist"; OBJLEN: "Path
'<path>' does not exist or not an object"; ARRINDEX, either syntax: "Path '<path>' does not exist") fail so,
the writes fail with the key error, JSON.MERGE (like JSON.SET) with the root error. On an existing key the
path's syntax error is replied, except where RedisJSON reads any failure of a legacy path as no match:
json_type_legacy (`get_type(path).map_or(Null)`), json_obj_keys_legacy (`get_first(path)` `_ => Null`) and
KeyValue::obj_len (`get_first` failing is `NoneExisting`, nil). JSON.MGET compiles the path per key and turns
any failure into nil (`map_or(RedisValue::Null, ...)`), so a malformed path is an array of nils, never an error.
A JSON.GET with several paths leaves out a path that does not compile (KeyValue::to_json_multi: "If we can't
compile the path, we can't continue", `return acc`), the others still deciding legacy or `$` form; a legacy
path that matches nothing fails the whole reply ("Path '<path>' does not exist"), a `$` path replies []
(tests/pytest/test_multi.py, testSetAndGetCommands). JSON.TYPE under RESP3 wraps its reply, a nil too, in
one array (json_type: `if is_resp3(ctx) { Ok(vec![value].into()) }`; tests/pytest/test_resp3.py,
test_resp_json_type: a missing key is `[None]`)."""
import pytest

from conftest import resp_error

pytestmark = pytest.mark.ruvio_only

NOKEY = "could not perform this operation on a key that doesn't exist"
ROOT = "new objects must be created at the root"
# malformed: after a step, inside brackets, in a filter, a legacy trailing dot, a bare bracket
BAD_NEW = ["$.a[", "$..[?(@.a==)]", "$."]
BAD_LEGACY = [".a.", "[", "a[?(@.x>)]"]


def J(c, *args):
    return c.execute_command(*args)


@pytest.mark.parametrize("path", BAD_NEW + BAD_LEGACY)
def test_missing_key_replies_before_the_path_is_read(r, path):
    legacy = not path.startswith("$")
    assert J(r, "JSON.GET", "nokey", path) is None
    assert J(r, "JSON.GET", "nokey", path, "$.a", ".b") is None
    assert J(r, "JSON.GET", "nokey", "INDENT", " ", path) is None
    assert J(r, "JSON.MGET", "nokey", "nokey2", path) == [None, None]
    assert J(r, "JSON.TYPE", "nokey", path) is None
    assert J(r, "JSON.RESP", "nokey", path) is None
    assert J(r, "JSON.DEL", "nokey", path) == 0
    assert J(r, "JSON.FORGET", "nokey", path) == 0
    assert J(r, "JSON.DEBUG", "MEMORY", "nokey", path) == (0 if legacy else [])
    for cmd in ("JSON.STRLEN", "JSON.ARRLEN", "JSON.OBJKEYS"):
        if legacy:
            assert J(r, cmd, "nokey", path) is None, cmd
        else:
            assert resp_error(J, r, cmd, "nokey", path) == NOKEY, cmd
    if legacy:
        assert J(r, "JSON.OBJLEN", "nokey", path) is None
    else:
        assert resp_error(J, r, "JSON.OBJLEN", "nokey", path) == \
            "Path '%s' does not exist or not an object" % path
    assert resp_error(J, r, "JSON.ARRINDEX", "nokey", path, "1") == "Path '%s' does not exist" % path
    for cmd in (("JSON.NUMINCRBY", "nokey", path, "1"), ("JSON.NUMMULTBY", "nokey", path, "2"),
                ("JSON.TOGGLE", "nokey", path), ("JSON.STRAPPEND", "nokey", path, '"x"'),
                ("JSON.ARRAPPEND", "nokey", path, "1"), ("JSON.ARRINSERT", "nokey", path, "0", "1"),
                ("JSON.ARRPOP", "nokey", path), ("JSON.ARRTRIM", "nokey", path, "0", "1"),
                ("JSON.CLEAR", "nokey", path)):
        assert resp_error(J, r, *cmd) == NOKEY, cmd
    assert resp_error(J, r, "JSON.MERGE", "nokey", path, "{}") == ROOT
    assert resp_error(J, r, "JSON.SET", "nokey", path, "{}") == ROOT
    assert resp_error(J, r, "JSON.MSET", "nokey", path, "{}") == ROOT
    assert r.exists("nokey", "nokey2") == 0


def test_key_of_another_type_fails_before_the_path(r):
    r.set("s", "str")
    for cmd in (("JSON.GET", "s", "$.a["), ("JSON.TYPE", "s", ".a."), ("JSON.DEL", "s", "$."),
                ("JSON.STRLEN", "s", "$.a["), ("JSON.OBJLEN", "s", ".a."), ("JSON.CLEAR", "s", "$."),
                ("JSON.MERGE", "s", "$.", "{}"), ("JSON.DEBUG", "MEMORY", "s", "$.")):
        assert resp_error(J, r, *cmd).startswith("WRONGTYPE"), cmd
    assert J(r, "JSON.MGET", "s", "$.a[") == [None]


def test_value_parsed_at_a_match_comes_after_the_key(r):
    """RedisJSON 2.x's STRAPPEND, NUMINCRBY and NUMMULTBY hand the value on to the change of each match
    (str_append, incr_by/mult_by parse it there), after json_*_impl/_legacy opened the key: a missing key
    or a key of another type fails before a malformed value is read."""
    r.set("s", "str")
    for cmd in (("JSON.STRAPPEND", "nokey", "$", "{"), ("JSON.STRAPPEND", "nokey", "{"),
                ("JSON.NUMINCRBY", "nokey", "$.a", "x"), ("JSON.NUMMULTBY", "nokey", ".a", "[")):
        assert resp_error(J, r, *cmd) == NOKEY, cmd
        assert resp_error(J, r, cmd[0], "s", *cmd[2:]).startswith("WRONGTYPE"), cmd
    assert r.exists("nokey") == 0


def test_existing_key_malformed_path(r):
    doc = '{"a":[1,2],"o":{"x":1},"s":"t"}'
    J(r, "JSON.SET", "d", "$", doc)
    err = resp_error(J, r, "JSON.GET", "d", "$.a[")
    assert err.startswith("Error occurred on position 4")
    for path in BAD_NEW + BAD_LEGACY:
        legacy = not path.startswith("$")
        for cmd in (("JSON.GET", "d", path), ("JSON.RESP", "d", path), ("JSON.DEL", "d", path),
                    ("JSON.STRLEN", "d", path), ("JSON.ARRLEN", "d", path), ("JSON.CLEAR", "d", path),
                    ("JSON.DEBUG", "MEMORY", "d", path), ("JSON.ARRINDEX", "d", path, "1"),
                    ("JSON.TOGGLE", "d", path), ("JSON.NUMINCRBY", "d", path, "1"),
                    ("JSON.ARRAPPEND", "d", path, "1"), ("JSON.MERGE", "d", path, "{}"),
                    ("JSON.SET", "d", path, "1"), ("JSON.MSET", "d", path, "1")):
            assert resp_error(J, r, *cmd).startswith("Error occurred on position"), (cmd, path)
        # legacy TYPE, OBJKEYS and OBJLEN read a failing path as no match; `$` ones reply the error
        for cmd in ("JSON.TYPE", "JSON.OBJKEYS", "JSON.OBJLEN"):
            if legacy:
                assert J(r, cmd, "d", path) is None, (cmd, path)
            else:
                assert resp_error(J, r, cmd, "d", path).startswith("Error occurred on position"), (cmd, path)
        # MGET: nil for every key, never an error
        assert J(r, "JSON.MGET", "d", "nokey", "d", path) == [None, None, None]
    # the value is read before the path (JSON.MERGE, as JSON.SET)
    assert resp_error(J, r, "JSON.MERGE", "d", "$.a[", "{") == "EOF while parsing an object at line 1 column 1"
    assert resp_error(J, r, "JSON.SET", "d", "$.a[", "{") == "EOF while parsing an object at line 1 column 1"
    assert J(r, "JSON.GET", "d") == doc
    assert J(r, "JSON.MGET", "d", "$.o.x") == ["[1]"]          # a good path still reads


def test_multi_path_get_leaves_out_paths_that_do_not_compile(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1,2],"o":{"x":1}}')
    assert J(r, "JSON.GET", "d", "$.a", "$.a[") == '{"$.a":[[1,2]]}'
    assert J(r, "JSON.GET", "d", ".a", ".a.") == '{".a":[1,2]}'                 # all legacy: values
    assert J(r, "JSON.GET", "d", ".a.", "$.o") == '{"$.o":[{"x":1}]}'           # a `$` path: arrays
    assert J(r, "JSON.GET", "d", ".a", "$..[?(@.a==)]") == '{".a":[[1,2]]}'     # the bad one counts as `$`
    assert J(r, "JSON.GET", "d", "$.a[", "[") == "{}"
    assert J(r, "JSON.GET", "d", "NEWLINE", "\n", ".o", "$.") == '{\n".o":[\n{\n"x":1\n}\n]\n}'     # `$.` is `$`
    # a legacy path matching nothing fails the reply, a `$` path matching nothing is []
    assert resp_error(J, r, "JSON.GET", "d", ".a", ".nope", ".a.") == "Path '.nope' does not exist"
    assert J(r, "JSON.GET", "d", "$.a", "$.nope", "$.") == '{"$.a":[[1,2]],"$.nope":[]}'
    # one path alone: its error
    assert resp_error(J, r, "JSON.GET", "d", ".a.").startswith("Error occurred on position 4")


def test_resp3_type_wraps_nil_too(raw):
    raw.cmd("HELLO", "3")
    assert raw.cmd("JSON.SET", "d", "$", '{"a":[1]}') == "OK"
    assert raw.cmd_raw("JSON.TYPE", "nokey") == b"*1\r\n_\r\n"
    assert raw.cmd_raw("JSON.TYPE", "nokey", "$.a") == b"*1\r\n_\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", ".nope") == b"*1\r\n_\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", ".a.") == b"*1\r\n_\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", ".a") == b"*1\r\n+array\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", "$.a") == b"*1\r\n*1\r\n+array\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", "$.nope") == b"*1\r\n*0\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d", "$.a[").startswith(b"-Error occurred on position 4")


def test_get_format_option_without_its_argument_is_the_arity_error(r):
    """RedisJSON 2.x's json_get reads INDENT/NEWLINE/SPACE's argument with next_str()?, whose error on a
    missing argument is RedisError::WrongArity; the options are read before the key is opened."""
    J(r, "JSON.SET", "d", "$", "{}")
    for opt in ("INDENT", "newline", "Space"):
        for key in ("d", "nokey"):
            assert resp_error(J, r, "JSON.GET", key, "$", opt) == \
                "wrong number of arguments for 'json.get' command", (opt, key)


def test_resp_replies_doubles_as_redis_does(raw):
    """RedisJSON 2.x's JSON.RESP (KeyValue::resp_serialize_inner) replies a double as RedisValue::Float,
    which redis-module-rs's Context::reply sends with RedisModule_ReplyWithDouble: Redis's own double reply,
    a bulk string of "%.17g" under RESP2 (Redis 7.0's addReplyDouble: 2.0 is "2", 0.1 is
    "0.10000000000000001") and a RESP3 double, where JSON.GET writes the number's JSON text ("2.0", "0.1").
    Integers stay integers, booleans simple strings, null nil (its tests/pytest/test_multi.py
    testRespCommand: -19.5 as '-19.5')."""
    assert raw.cmd("JSON.SET", "d", "$", '{"a":[2.0,0.1,-19.5,3,true,null]}') == "OK"
    want2 = (b"*7\r\n+[\r\n$1\r\n2\r\n$19\r\n0.10000000000000001\r\n$5\r\n-19.5\r\n:3\r\n+true\r\n"
             b"$-1\r\n")
    assert raw.cmd_raw("JSON.RESP", "d", ".a") == want2
    assert raw.cmd_raw("JSON.RESP", "d", "$.a[0]") == b"*1\r\n$1\r\n2\r\n"
    assert raw.cmd("JSON.GET", "d", "$.a[0:2]") == b"[2.0,0.1]"
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("JSON.RESP", "d", ".a") == \
        b"*7\r\n+[\r\n,2\r\n,0.10000000000000001\r\n,-19.5\r\n:3\r\n+true\r\n_\r\n"
