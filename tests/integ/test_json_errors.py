"""JSON errors as RedisJSON 2.x replies them (issue 20): malformed paths, JSON.DEBUG's subcommands, and
JSON.MSET's all-or-nothing checks.

ruvio_only: redis-server here has no RedisJSON module. The path error texts are RedisJSON's (its json_path
compile(): "Error occurred on position N, ..." with the pest grammar's expected tokens); the two quoted from
RedisJSON's tracker and docs are marked."""
import pytest

from conftest import resp_error

pytestmark = pytest.mark.ruvio_only

NAME = "expected one of the following: <string>, '*'."
BRACKET = ("expected one of the following: '<string>[,<string>,...]', '<number>', ['start:end:steps'], "
           "'*'.")


def J(c, *args):
    return c.execute_command(*args)


@pytest.mark.parametrize("path,err", [
    # RedisJSON issue #948 (2.4.6), verbatim
    ("$.a[$]", 'Error occurred on position 4, "$.a[ ---->>>> $]", ' + BRACKET),
    # RedisJSON's JSON.SET docs: a path ending in `..`
    ("$..", 'Error occurred on position 3, "$.. <<<<----", ' + NAME),
    ("$.", 'Error occurred on position 2, "$. <<<<----", ' + NAME),
    ("$.a.]", 'Error occurred on position 4, "$.a. ---->>>> ]", ' + NAME),
    ("$[", 'Error occurred on position 2, "$[ <<<<----", ' + BRACKET),
    ("$[]", 'Error occurred on position 2, "$[ ---->>>> ]", ' + BRACKET),
    ("$['a", 'Error occurred on position 2, "$[ ---->>>> \'a", ' + BRACKET),
    ("$[1,]", "Error occurred on position 4, \"$[1, ---->>>> ]\", expected one of the following: "
              "'<number>'."),
    # legacy paths are read as JSONPath after `$` and named so (RedisJSON's Path::new)
    (".a.", 'Error occurred on position 4, "$.a. <<<<----", ' + NAME),
    ("a[", 'Error occurred on position 4, "$.a[ <<<<----", ' + BRACKET),
    # json_path's grammar: a legacy `[` is `$.[`; a quoted name only inside brackets
    ("[", 'Error occurred on position 3, "$.[ <<<<----", ' + BRACKET),
    ("[]", 'Error occurred on position 3, "$.[ ---->>>> ]", ' + BRACKET),
    ("$.'a'", 'Error occurred on position 2, "$. ---->>>> \'a\'", ' + NAME),
    (".'a'", 'Error occurred on position 2, "$. ---->>>> \'a\'", ' + NAME),
    ('$.."a"', 'Error occurred on position 3, "$.. ---->>>> \"a\"", ' + NAME),
    ("$'a'", "Error occurred on position 1, \"$ ---->>>> 'a'\", expected one of the following: "
             "EOI, root."),
])
def test_malformed_path_errors(r, path, err):
    J(r, "JSON.SET", "d", "$", '{"a":[1,2]}')
    assert resp_error(J, r, "JSON.GET", "d", path) == err
    assert resp_error(J, r, "JSON.SET", "d", path, "1") == err
    assert resp_error(J, r, "JSON.DEL", "d", path) == err
    assert J(r, "JSON.GET", "d") == '{"a":[1,2]}'


def test_dotless_first_step_and_dotted_brackets(r):
    # json_path's grammar: `$` ~ root, whose first element may be a bare name or `*`; `.[`
    J(r, "JSON.SET", "d", "$", '{"a":{"b":[1,2]},"c":[{"x":1},{"x":2}]}')
    assert J(r, "JSON.GET", "d", "$a") == '[{"b":[1,2]}]'
    assert J(r, "JSON.GET", "d", "$a.b.[1]") == "[2]"
    assert J(r, "JSON.GET", "d", "$*") == J(r, "JSON.GET", "d", "$.*")
    assert J(r, "JSON.GET", "d", "$c[?(@x == 2)]") == '[{"x":2}]'
    assert J(r, "JSON.GET", "d", "$.c[?@.x>1]") == '[{"x":2}]'       # `?` ~ filter, no parentheses
    assert resp_error(J, r, "JSON.GET", "d", "$.c[?@.x>]").startswith("Error occurred on position 9")
    assert "does not exist" in resp_error(J, r, "JSON.GET", "d", "[0]")   # parsed; no match
    assert J(r, "JSON.SET", "d", "$a.n", "5") == "OK"
    assert J(r, "JSON.GET", "d", "a.n") == "5"
    J(r, "JSON.SET", "l", "$", "[10,20]")
    assert J(r, "JSON.GET", "l", "[1]") == "20"             # legacy `[1]` is `$.[1]`


def test_set_on_missing_key_checks_root_before_path(r):
    # RedisJSON 2.x's json_set: the key's type, the value, then on a missing key the root
    # error (XX: nil) without compiling the path
    r.set("s", "str")
    root = "new objects must be created at the root"
    assert resp_error(J, r, "JSON.SET", "nokey", "$.", "1") == root
    assert resp_error(J, r, "JSON.SET", "nokey", "$[?(", "1") == root
    assert resp_error(J, r, "JSON.SET", "nokey", "$.a", "1") == root
    assert J(r, "JSON.SET", "nokey", "$.", "1", "XX") is None
    assert "EOF while parsing" in resp_error(J, r, "JSON.SET", "nokey", "$.", "{")
    assert "WRONGTYPE" in resp_error(J, r, "JSON.SET", "s", "$.", "{")
    assert r.exists("nokey") == 0
    # an existing key: the path is compiled and its error replied
    J(r, "JSON.SET", "d", "$", "{}")
    assert resp_error(J, r, "JSON.SET", "d", "$.", "1").startswith("Error occurred on position 2")
    assert J(r, "JSON.GET", "d") == "{}"


def test_empty_path_is_read_as_dollar_dot(r):
    """RedisJSON 2.x's Path::new (src/redisjson.rs) turns a path not starting with `$` into JSONPath by
    prefixing `$.` (`.` alone is `$`), so "" becomes `$.`, a syntax error, not the root: JSON.SET on an
    existing key replies the path error (json_set compiles it), on a missing key the root error (it compares
    the path with `$` first). Ruvio reads "" that way in every command (where a malformed path is an error:
    legacy JSON.TYPE replies nil and a multi-path JSON.GET leaves it out, test_json_keyfirst.py)."""
    J(r, "JSON.SET", "d", "$", '{"a":[1,2]}')
    err = 'Error occurred on position 2, "$. <<<<----", ' + NAME
    for cmd in (("JSON.GET", "d", ""), ("JSON.SET", "d", "", "1"), ("JSON.DEL", "d", ""),
                ("JSON.ARRLEN", "d", "")):
        assert resp_error(J, r, *cmd) == err, cmd
    assert J(r, "JSON.TYPE", "d", "") is None
    assert J(r, "JSON.GET", "d", "", "a") == '{"a":[1,2]}'
    assert resp_error(J, r, "JSON.SET", "nokey", "", "1") == "new objects must be created at the root"
    assert J(r, "JSON.SET", "nokey", "", "1", "XX") is None
    assert r.exists("nokey") == 0 and J(r, "JSON.GET", "d") == '{"a":[1,2]}'
    assert J(r, "JSON.GET", "d", ".") == '{"a":[1,2]}' and J(r, "JSON.TYPE", "d") == "object"


def test_set_options_as_redisjson_parses_them(r):
    """RedisJSON 2.x's json_set (src/commands.rs) reads its options before opening the key: NX or XX only
    while neither was given (so `NX NX` is a syntax error too), FORMAT <fmt> (Format::from_str is
    case-sensitive: "JSON"; another name replies `ERR wrong format <name>`; FORMAT without its argument
    is the arity error), anything else `ERR syntax error`, even on a key of another type."""
    r.set("s", "str")
    J(r, "JSON.SET", "d", "$", '{"a":1}')
    for opts in (("NX", "NX"), ("XX", "XX"), ("XX", "NX"), ("nx", "xx"), ("foo",), ("NX", "foo"), ("1",)):
        assert resp_error(J, r, "JSON.SET", "d", "$.a", "2", *opts) == "syntax error", opts
        assert resp_error(J, r, "JSON.SET", "s", "$", "2", *opts) == "syntax error", opts
    assert resp_error(J, r, "JSON.SET", "d", "$.a", "2", "FORMAT", "json") == "wrong format json"
    assert resp_error(J, r, "JSON.SET", "d", "$.a", "2", "FORMAT", "XMLX") == "wrong format XMLX"
    assert resp_error(J, r, "JSON.SET", "d", "$.a", "2", "FORMAT") == \
        "wrong number of arguments for 'json.set' command"
    assert J(r, "JSON.GET", "d") == '{"a":1}'
    assert J(r, "JSON.SET", "d", "$.a", "2", "format", "JSON") == "OK"
    assert J(r, "JSON.SET", "d", "$.a", "3", "FORMAT", "JSON", "XX") == "OK"
    assert J(r, "JSON.SET", "d", "$.b", "4", "NX", "FORMAT", "JSON", "FORMAT", "JSON") == "OK"
    assert J(r, "JSON.SET", "d", "$.b", "5", "nx") is None
    assert J(r, "JSON.GET", "d") == '{"a":3,"b":4}'
    assert "WRONGTYPE" in resp_error(J, r, "JSON.SET", "s", "$", "2", "XX", "FORMAT", "JSON")


def test_path_error_has_no_err_prefix(r):
    J(r, "JSON.SET", "d", "$", "{}")
    with pytest.raises(Exception) as e:
        J(r, "JSON.GET", "d", "$.")
    assert str(e.value).startswith("Error occurred on position 2")


def test_debug_unknown_subcommand_and_help(r):
    assert resp_error(J, r, "JSON.DEBUG", "NOPE") == "unknown subcommand - try `JSON.DEBUG HELP`"
    assert resp_error(J, r, "JSON.DEBUG", "nope", "k") == "unknown subcommand - try `JSON.DEBUG HELP`"
    help_ = ["MEMORY <key> [path] - reports memory usage", "HELP                - this message"]
    assert J(r, "JSON.DEBUG", "HELP") == help_
    assert J(r, "JSON.DEBUG", "help", "extra") == help_      # RedisJSON ignores what follows
    assert "wrong number of arguments" in resp_error(J, r, "JSON.DEBUG")


@pytest.mark.parametrize("bad,err", [
    (("b", "$", "{"), "EOF while parsing an object at line 1 column 1"),
    (("b", "$.", "1"), "Error occurred on position 2"),
    (("s", "$", "1"), "WRONGTYPE"),
    (("nokey", "$.x", "1"), "new objects must be created at the root"),
    (("a", "$.x", "[" * 128 + "]" * 128), "nesting depth exceeds the limit of 128"),   # a's copy
    (("e", "$.x", "[" * 128 + "]" * 128), "nesting depth exceeds the limit of 128"),   # e in place
])
def test_mset_is_all_or_nothing(r, bad, err):
    J(r, "JSON.SET", "a", "$", '{"x":1}')
    J(r, "JSON.SET", "e", "$", '{"x":1}')
    r.set("s", "str")
    got = resp_error(J, r, "JSON.MSET", "a", "$.x", "2", "a", "$.y", "3", "c", "$", "[]", *bad)
    assert err in got
    assert J(r, "JSON.GET", "a") == '{"x":1}'
    assert J(r, "JSON.GET", "e") == '{"x":1}'
    assert r.exists("c", "nokey") == 0


def test_mset_same_key_several_times(r):
    J(r, "JSON.SET", "a", "$", '{"x":1}')
    # later triples see what earlier ones did to the same key
    assert J(r, "JSON.MSET", "n", "$", '{"p":{}}', "n", "$.p.q", "1", "a", "$.x", "2", "a", "$.y", "[]",
             "a", "$.y", '"z"') == "OK"
    assert J(r, "JSON.GET", "n") == '{"p":{"q":1}}'
    assert J(r, "JSON.GET", "a") == '{"x":2,"y":"z"}'
    # a key created at the root by an earlier triple, then refused below: nothing at all
    assert "nesting depth" in resp_error(J, r, "JSON.MSET", "m", "$", '{"d":0}', "a", "$.x", "3",
                                         "m", "$.d", "[" * 128 + "]" * 128)
    assert r.exists("m") == 0
    assert J(r, "JSON.GET", "a") == '{"x":2,"y":"z"}'
    # the root replaced in the middle: the later triple applies to the new document
    assert J(r, "JSON.MSET", "a", "$.x", "9", "a", "$", '{"w":0}', "a", "$.v", "1") == "OK"
    assert J(r, "JSON.GET", "a") == '{"w":0,"v":1}'


def test_mset_keeps_ttl_and_large_documents(r):
    big = '{"arr":[' + ",".join(str(i) for i in range(300)) + '],"x":0}'
    J(r, "JSON.SET", "big", "$", big)
    r.expire("big", 1000)
    assert J(r, "JSON.MSET", "big", "$.x", "1", "big", "$.arr[0]", '"f"') == "OK"
    assert J(r, "JSON.GET", "big", "$.x", "$.arr[0]") == '{"$.x":[1],"$.arr[0]":["f"]}'
    assert 0 < r.ttl("big") <= 1000
