"""Where JSON.SET, JSON.MSET and JSON.MERGE may add a value that no match took (issue 20).

RedisJSON 2.x decides it in `KeyValue::find_paths` / `find_add_paths` (src/key_value.rs; src/commands.rs
before 2.6), read from RedisJSON/RedisJSON's source:
- a path that matched replaces its matches (unless NX); with XX and no match the reply is nil;
- otherwise (no match, or NX) the path must be static (json_path's `Query::is_static`: every step one
  member or one index, no `..`, `*`, slice, filter or union of several), else `Err wrong static path`
  (its text as it replies it, `Err`, not `ERR`), even under NX where the path matched;
- a static path ending in an index that matched nothing replies `ERR array index out of range` (the
  legacy form is read as `$` + path, negative indexes too); under NX an index that exists is nil;
- a static path ending in a member adds it to its parent when that is an object, else nil.
JSON.MERGE uses the same find_paths (SetOptions::MergeExisting); JSON.MSET calls it per triple before it
parses the triple's value (json_mset), so these errors come first and nothing is changed.

ruvio_only: redis-server here has no RedisJSON module."""
import json

import pytest

from conftest import resp_error

pytestmark = pytest.mark.ruvio_only

STATIC = "Err wrong static path"
INDEX = "array index out of range"  # redis-py strips the "ERR " prefix
DOC = '{"a":[1,2],"o":{"x":1},"n":3,"e":[],"l":[{"x":1},{"y":2}]}'


def J(c, *args):
    return c.execute_command(*args)


def load(r, key, tree):
    """The document, packed (small) or, with tree, past the packed size as a tree."""
    doc = json.loads(DOC)
    if tree:
        doc["pad"] = "x" * 600
    J(r, "JSON.SET", key, "$", json.dumps(doc, separators=(",", ":")))
    return J(r, "JSON.GET", key)


@pytest.mark.parametrize("tree", [False, True])
@pytest.mark.parametrize("path", ["$.a[2]", "$.a[5]", "$.a[-3]", ".a[2]", "a[5]", ".a[-3]", "$['a'][2]",
                                  "$.e[0]", "$.e[-1]", "$.o[0]", "$.n[0]", "$.missing[0]", "$.o.x[1]",
                                  "$[0]", "$.l[0].x[0]"])
def test_index_out_of_range(r, tree, path):
    before = load(r, "d", tree)
    assert resp_error(J, r, "JSON.SET", "d", path, "9") == INDEX
    assert resp_error(J, r, "JSON.SET", "d", path, "9", "NX") == INDEX
    assert J(r, "JSON.SET", "d", path, "9", "XX") is None
    assert resp_error(J, r, "JSON.MERGE", "d", path, "9") == INDEX
    assert J(r, "JSON.GET", "d") == before


@pytest.mark.parametrize("tree", [False, True])
def test_index_that_exists(r, tree):
    load(r, "d", tree)
    assert J(r, "JSON.SET", "d", "$.a[-1]", "7") == "OK"
    assert J(r, "JSON.SET", "d", ".a[0]", "5") == "OK"
    assert J(r, "JSON.SET", "d", "$.a[0]", "6", "NX") is None
    assert J(r, "JSON.GET", "d", "$.a") == "[[5,7]]"


@pytest.mark.parametrize("tree", [False, True])
@pytest.mark.parametrize("path", ["$..zz", "$.*.zz", "$.l[*].zz", "$.e[*]", "$.a[5,6]", "$['o','q'].zz",
                                  "$.e[0:2]", "$.a[?(@ > 5)]", "$..a[9]", ".*.zz", "..zz"])
def test_wildcards_do_not_add(r, tree, path):
    before = load(r, "d", tree)
    assert resp_error(J, r, "JSON.SET", "d", path, "9") == STATIC
    assert resp_error(J, r, "JSON.SET", "d", path, "9", "NX") == STATIC
    assert J(r, "JSON.SET", "d", path, "9", "XX") is None
    assert resp_error(J, r, "JSON.MERGE", "d", path, "9") == STATIC
    assert J(r, "JSON.GET", "d") == before


@pytest.mark.parametrize("tree", [False, True])
def test_wildcards_replace_what_they_match(r, tree):
    load(r, "d", tree)
    assert J(r, "JSON.SET", "d", "$..x", "0") == "OK"
    assert J(r, "JSON.GET", "d", "$..x") == "[0,0]"
    assert J(r, "JSON.SET", "d", "$.a[*]", "4", "XX") == "OK"
    assert J(r, "JSON.GET", "d", "$.a") == "[[4,4]]"
    # NX takes find_add_paths whatever matched: a wildcard path is refused even where it matched
    assert resp_error(J, r, "JSON.SET", "d", "$..x", "1", "NX") == STATIC
    assert J(r, "JSON.GET", "d", "$..x") == "[0,0]"


@pytest.mark.parametrize("tree", [False, True])
def test_static_paths_add_members(r, tree):
    load(r, "d", tree)
    assert J(r, "JSON.SET", "d", "$.o.y", "2") == "OK"
    assert J(r, "JSON.SET", "d", "$['o']['z']", "3", "NX") == "OK"
    assert J(r, "JSON.SET", "d", "$.l[1].x", "4") == "OK"
    assert J(r, "JSON.SET", "d", "l[-2].w", "5") == "OK"
    assert J(r, "JSON.SET", "d", "$.o.y", "9", "NX") is None           # exists
    assert J(r, "JSON.SET", "d", "$.n.y", "9") is None                 # parent not an object
    assert J(r, "JSON.SET", "d", "$.missing.y", "9") is None           # no parent
    assert J(r, "JSON.GET", "d", "$.o", "$.l") == '{"$.o":[{"x":1,"y":2,"z":3}],' \
                                                 '"$.l":[[{"x":1,"w":5},{"y":2,"x":4}]]}'


def test_mset_checks_the_path_before_the_value_and_changes_nothing(r):
    before = load(r, "d", False)
    J(r, "JSON.SET", "e", "$", "{}")
    assert resp_error(J, r, "JSON.MSET", "e", "$.k", "1", "d", "$.a[9]", "1") == INDEX
    assert resp_error(J, r, "JSON.MSET", "e", "$.k", "1", "d", "$..zz", "1") == STATIC
    # json_mset runs find_paths before it parses the triple's value
    assert resp_error(J, r, "JSON.MSET", "d", "$.a[9]", "{bad") == INDEX
    assert resp_error(J, r, "JSON.MSET", "d", "$.*.zz", "{bad") == STATIC
    # a key named twice: each triple's place is found on the document as it was
    assert resp_error(J, r, "JSON.MSET", "d", "$.o.k", "1", "d", "$.o.k[0]", "2") == INDEX
    assert J(r, "JSON.GET", "d") == before
    assert J(r, "JSON.GET", "e") == "{}"
    assert J(r, "JSON.MSET", "e", "$.k", "1", "d", "$.a[1]", "8", "d", "$.o.y", "2") == "OK"
    assert J(r, "JSON.GET", "d", "$.a", "$.o") == '{"$.a":[[1,8]],"$.o":[{"x":1,"y":2}]}'
    assert J(r, "JSON.GET", "e") == '{"k":1}'
