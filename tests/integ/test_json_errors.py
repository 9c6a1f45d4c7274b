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
    (("e", "$.", "1"), "Error occurred on position 2"),
    (("b", "$.", "1"), "new objects must be created at the root"),   # a new key: no path compiled
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
    """RedisJSON 2.x's json_mset (src/commands.rs, 2.6 and 2.8) finds every triple's targets on the key as it
    was before the command (KeyValue::find_paths, each triple in turn, before any is applied; a key that did
    not exist takes root triples only: "new objects must be created at the root"), then applies the triples
    in order by concrete path (apply_updates: set_value replaces what the path still leads to, dict_add adds
    a member only to an object that does not have it yet), so a later triple does not see what an earlier
    one added, but does see a value an earlier one replaced."""
    J(r, "JSON.SET", "a", "$", '{"x":1}')
    # both triples add `y` to the document as it was: the first one wins (dict_add skips a present member)
    assert J(r, "JSON.MSET", "a", "$.x", "2", "a", "$.y", "[]", "a", "$.y", '"z"') == "OK"
    assert J(r, "JSON.GET", "a") == '{"x":2,"y":[]}'
    # `$.o.p` had no parent before the command: the object the first triple adds is not there for it
    assert J(r, "JSON.MSET", "a", "$.o", "{}", "a", "$.o.p", "1") == "OK"
    assert J(r, "JSON.GET", "a") == '{"x":2,"y":[],"o":{}}'
    # a set replaces what an earlier triple put at the same place
    assert J(r, "JSON.MSET", "a", "$.x", "3", "a", "$.x", "4") == "OK"
    assert J(r, "JSON.GET", "a", "$.x") == "[4]"
    # a path found before is followed again in the replaced value: `$.y[0]` now leads to the new array's first
    J(r, "JSON.SET", "a", "$.y", "[5]")
    assert J(r, "JSON.MSET", "a", "$.y", "[7,8]", "a", "$.y[0]", "9") == "OK"
    assert J(r, "JSON.GET", "a", "$.y") == "[[9,8]]"
    # ... and a path that no longer leads anywhere changes nothing
    assert J(r, "JSON.MSET", "a", "$.y", "{}", "a", "$.y[1]", "0") == "OK"
    assert J(r, "JSON.GET", "a") == '{"x":4,"y":{},"o":{}}'
    # a new key: a triple below the root fails even after a root triple for it, and nothing is applied
    assert resp_error(J, r, "JSON.MSET", "a", "$.x", "5", "n", "$", '{"p":{}}', "n", "$.p.q", "1") == \
        "new objects must be created at the root"
    assert r.exists("n") == 0 and J(r, "JSON.GET", "a") == '{"x":4,"y":{},"o":{}}'
    assert J(r, "JSON.MSET", "n", "$", "1", "n", "$", '{"p":{}}') == "OK"     # root triples apply in order
    assert J(r, "JSON.GET", "n") == '{"p":{}}'
    # a refusal after a root triple of an existing key: nothing at all
    J(r, "JSON.SET", "m", "$", '{"d":0}')
    assert "nesting depth" in resp_error(J, r, "JSON.MSET", "m", "$", '{"d":1}', "a", "$.x", "6",
                                         "m", "$.d", "[" * 128 + "]" * 128)
    assert J(r, "JSON.GET", "m") == '{"d":0}' and J(r, "JSON.GET", "a") == '{"x":4,"y":{},"o":{}}'
    # the root replaced in the middle: a later triple adds to the new document (its parent, the root,
    # was found before)
    assert J(r, "JSON.MSET", "a", "$.x", "9", "a", "$", '{"w":0}', "a", "$.v", "1") == "OK"
    assert J(r, "JSON.GET", "a") == '{"w":0,"v":1}'
    # the order of the checks in a triple: the key's type, the path, then the value
    r.set("s", "str")
    assert resp_error(J, r, "JSON.MSET", "a", "$.", "{", "s", "$", "1").startswith("Error occurred")
    assert resp_error(J, r, "JSON.MSET", "a", "$.w", "{", "a", "$.", "1").startswith("EOF while parsing")
    assert resp_error(J, r, "JSON.MSET", "s", "$.", "{").startswith("WRONGTYPE")
    assert resp_error(J, r, "JSON.MSET", "nokey", "$.", "{") == "new objects must be created at the root"


def test_mset_keeps_ttl_and_large_documents(r):
    big = '{"arr":[' + ",".join(str(i) for i in range(300)) + '],"x":0}'
    J(r, "JSON.SET", "big", "$", big)
    r.expire("big", 1000)
    assert J(r, "JSON.MSET", "big", "$.x", "1", "big", "$.arr[0]", '"f"') == "OK"
    assert J(r, "JSON.GET", "big", "$.x", "$.arr[0]") == '{"$.x":[1],"$.arr[0]":["f"]}'
    assert 0 < r.ttl("big") <= 1000
