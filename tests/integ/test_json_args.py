"""Arguments after the ones a JSON command takes (issue 20), as RedisJSON replies.

Read from RedisJSON/RedisJSON's src/commands.rs, both the 2.x one (commands registered without an
arity, each handler reading its arguments with next_arg) and the later one (redis_json/src/commands.rs,
commands declared with an arity that Redis checks first):
- JSON.DEL/FORGET, TYPE, STRLEN, ARRLEN, OBJKEYS, OBJLEN, RESP, DEBUG MEMORY read at most a path and
  ignore what follows; JSON.CLEAR takes `path ...` and clears at the first only; JSON.STRAPPEND reads
  `[path] value` and ignores the rest; JSON.ARRPOP reads `[path [index]]` (its `args.done()` is commented
  out), and an index that is not an integer is -1 (`next_i64().unwrap_or(-1)`): the last element.
- JSON.SET reads NX, XX and FORMAT after the value, anything else `ERR syntax error`; JSON.MERGE reads
  FORMAT only (same error), before it opens the key, and replies nil when find_paths leaves nothing to
  change (a member whose parent does not exist).
- JSON.ARRINDEX calls `args.done()`: the arity error. JSON.NUMINCRBY, NUMMULTBY (4), TOGGLE (3) and
  ARRTRIM (5) have a fixed arity in the later RedisJSON (the 2.x one ignored extra arguments); Ruvio keeps
  the arity error.
- JSON.GET reads every other argument as a path.

ruvio_only: redis-server here has no RedisJSON module."""
import pytest

from conftest import resp_error

pytestmark = pytest.mark.ruvio_only

DOC = '{"a":[1,2,3],"o":{"x":1},"p":{"y":2},"s":"ab","n":5,"b":true}'


def J(c, *args):
    return c.execute_command(*args)


def arity(cmd):
    return "wrong number of arguments for '%s' command" % cmd


def test_extra_arguments_are_ignored_where_redisjson_reads_no_further(r):
    J(r, "JSON.SET", "d", "$", DOC)
    assert J(r, "JSON.TYPE", "d", "$.o", "x", "y") == ["object"]
    assert J(r, "JSON.STRLEN", "d", "$.s", "junk") == [2]
    assert J(r, "JSON.ARRLEN", "d", "$.a", "junk") == [3]
    assert J(r, "JSON.OBJLEN", "d", "$.o", "junk") == [1]
    assert J(r, "JSON.OBJKEYS", "d", "$.o", "junk") == [["x"]]
    assert J(r, "JSON.RESP", "d", "$.n", "junk") == [5]
    assert J(r, "JSON.DEBUG", "MEMORY", "d", "$.n", "junk") == J(r, "JSON.DEBUG", "MEMORY", "d", "$.n")
    assert J(r, "JSON.STRAPPEND", "d", "$.s", '"c"', "junk") == [3]
    assert J(r, "JSON.ARRPOP", "d", "$.a", "0", "junk") == ["1"]
    assert J(r, "JSON.CLEAR", "d", "$.o", "$.p") == 1                  # the first path only
    assert J(r, "JSON.DEL", "d", "$.b", "$.n") == 1                    # the first path only
    assert J(r, "JSON.FORGET", "d", "$.zz", "$.n") == 0
    assert J(r, "JSON.GET", "d") == '{"a":[2,3],"o":{},"p":{"y":2},"s":"abc","n":5}'


def test_arrpop_index_that_is_not_an_integer_is_the_last(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1,2,3]}')
    assert J(r, "JSON.ARRPOP", "d", "$.a", "abc") == ["3"]
    assert J(r, "JSON.ARRPOP", "d", ".a", "1.5") == "2"
    assert J(r, "JSON.GET", "d") == '{"a":[1]}'


def test_get_reads_every_other_argument_as_a_path(r):
    J(r, "JSON.SET", "d", "$", '{"a":1}')
    assert J(r, "JSON.GET", "d", "$", "extra", "junk") == '{"$":[{"a":1}],"extra":[],"junk":[]}'
    assert resp_error(J, r, "JSON.GET", "d", ".a", "extra") == "Path 'extra' does not exist"


def test_set_and_merge_options(r):
    J(r, "JSON.SET", "d", "$", DOC)
    for opts in (("junk",), ("NX", "XX"), ("NX", "junk"), ("FORMAT", "JSON", "junk")):
        assert resp_error(J, r, "JSON.SET", "d", "$.n", "1", *opts) == "syntax error"
    for opts in (("junk",), ("NX",), ("XX",), ("FORMAT", "JSON", "junk")):
        assert resp_error(J, r, "JSON.MERGE", "d", "$.o", "{}", *opts) == "syntax error"
    assert resp_error(J, r, "JSON.MERGE", "d", "$.o", "{}", "FORMAT") == arity("json.merge")
    assert resp_error(J, r, "JSON.MERGE", "d", "$.o", "{}", "FORMAT", "XML") == "wrong format XML"
    # options are read before the key is opened
    J(r, "SET", "str", "v")
    assert resp_error(J, r, "JSON.MERGE", "str", "$", "{}", "junk") == "syntax error"
    assert J(r, "JSON.MERGE", "d", "$.o", '{"y":2}', "FORMAT", "JSON") == "OK"
    assert J(r, "JSON.MERGE", "d", "$.o", '{"z":3}', "format", "JSON", "FORMAT", "JSON") == "OK"
    assert J(r, "JSON.GET", "d", "$.o") == '[{"x":1,"y":2,"z":3}]'


def test_merge_with_nothing_to_change_is_nil(r):
    J(r, "JSON.SET", "d", "$", DOC)
    assert J(r, "JSON.MERGE", "d", "$.nope.x", "1") is None
    assert J(r, "JSON.MERGE", "d", "$.n.x", "1") is None
    assert J(r, "JSON.MERGE", "d", "$.o.y", "1") == "OK"


@pytest.mark.parametrize("args,cmd", [
    (("JSON.ARRINDEX", "d", "$.a", "1", "0", "2", "junk"), "json.arrindex"),
    (("JSON.NUMINCRBY", "d", "$.n", "1", "junk"), "json.numincrby"),
    (("JSON.NUMMULTBY", "d", "$.n", "1", "junk"), "json.nummultby"),
    (("JSON.TOGGLE", "d", "$.b", "junk"), "json.toggle"),
    (("JSON.ARRTRIM", "d", "$.a", "0", "1", "junk"), "json.arrtrim"),
])
def test_fixed_arity_commands(r, args, cmd):
    J(r, "JSON.SET", "d", "$", DOC)
    before = J(r, "JSON.GET", "d")
    assert resp_error(J, r, *args) == arity(cmd)
    assert J(r, "JSON.GET", "d") == before
