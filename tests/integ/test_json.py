"""JSON documents (JSON.* commands, issue 20): replies and errors as RedisJSON 2.x documents them.

ruvio_only: redis-server here has no RedisJSON module, so there is no reference to run against; the
expected replies come from RedisJSON's command documentation."""
import json
import os
import signal

import pytest
import redis

from conftest import poll_until, resp_error

pytestmark = pytest.mark.ruvio_only

DOC = '{"a":"b","b":[{"a":2},{"a":5},{"a":"c"}]}'


def J(c, *args):
    return c.execute_command(*args)


# ------------------------------------------------------------------ SET / GET


def test_set_get_root_and_paths(r):
    assert J(r, "JSON.SET", "doc", "$", DOC) == "OK"
    assert J(r, "JSON.GET", "doc") == DOC
    assert J(r, "JSON.GET", "doc", "$") == "[" + DOC + "]"
    assert J(r, "JSON.GET", "doc", ".b[1].a") == "5"            # legacy: one value
    assert J(r, "JSON.GET", "doc", "$.b[1].a") == "[5]"         # JSONPath: an array
    assert J(r, "JSON.GET", "doc", "$..a") == '["b",2,5,"c"]'
    assert json.loads(J(r, "JSON.GET", "doc", "$.a", "$.b[0]")) == {"$.a": ["b"], "$.b[0]": [{"a": 2}]}
    assert json.loads(J(r, "JSON.GET", "doc", ".a", "b[0].a")) == {".a": "b", "b[0].a": 2}
    assert J(r, "JSON.GET", "doc", "$.nope") == "[]"
    assert "does not exist" in resp_error(J, r, "JSON.GET", "doc", ".nope")
    assert J(r, "JSON.GET", "missing") is None


def test_get_format(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1,{"b":null}],"e":{},"f":[]}')
    got = J(r, "JSON.GET", "d", "INDENT", "\t", "NEWLINE", "\n", "SPACE", " ")
    assert got == '{\n\t"a": [\n\t\t1,\n\t\t{\n\t\t\t"b": null\n\t\t}\n\t],\n\t"e": {},\n\t"f": []\n}'
    assert J(r, "JSON.GET", "d", "SPACE", " ", ".e") == "{}"


def test_set_nx_xx_and_new_members(r):
    assert J(r, "JSON.SET", "d", "$", '{"a":1}', "XX") is None
    assert J(r, "JSON.SET", "d", "$", '{"a":1}', "NX") == "OK"
    assert J(r, "JSON.SET", "d", "$", '{"a":2}', "NX") is None
    assert J(r, "JSON.SET", "d", "$.a", "3", "XX") == "OK"
    assert J(r, "JSON.SET", "d", "$.b", "[1]", "XX") is None
    assert J(r, "JSON.SET", "d", "$.b", '{"c":[1]}') == "OK"      # a new member of an existing object
    assert J(r, "JSON.SET", "d", "$.x.y", "1") is None              # no parent: nothing set
    assert J(r, "JSON.SET", "d", ".b.c[0]", '"s"') == "OK"
    assert J(r, "JSON.GET", "d") == '{"a":3,"b":{"c":["s"]}}'
    assert resp_error(J, r, "JSON.SET", "new", "$.a", "1") == "new objects must be created at the root"
    assert resp_error(J, r, "JSON.SET", "d", "$", "1", "NX", "XX") == "syntax error"


def test_numbers_keep_their_value(r):
    J(r, "JSON.SET", "n", "$", '[9223372036854775807,-9223372036854775808,1.0,1e2,0.1,1e300,1.5e-7,'
                                 '123456.789,-0.0,2.5E+3]')
    assert J(r, "JSON.GET", "n") == ('[9223372036854775807,-9223372036854775808,1.0,100.0,0.1,1e300,'
                                     '1.5e-7,123456.789,-0.0,2500.0]')
    J(r, "JSON.SET", "u", "$", "[18446744073709551615,9223372036854775808]")  # unsigned 64-bit: exact
    assert J(r, "JSON.GET", "u") == "[18446744073709551615,9223372036854775808]"
    assert J(r, "JSON.GET", "u", "$[?(@ > 9223372036854775807)]") == "[18446744073709551615,9223372036854775808]"
    assert J(r, "JSON.NUMINCRBY", "u", "$[1]", "1") == "[9.223372036854776e18]"
    J(r, "JSON.SET", "i", "$", "9007199254740993")                      # above 2^53: exact
    assert J(r, "JSON.NUMINCRBY", "i", "$", "1") == "[9007199254740994]"


def test_malformed_json_changes_nothing(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1,2]}')
    for bad in ['{"a":', '[1,2', '{"a" 1}', "[1,]", "01", '"\x01"', "tru", "{'a':1}", "[1] 2", ""]:
        e = resp_error(J, r, "JSON.SET", "d", "$.a", bad)
        assert " at line " in e, (bad, e)
    assert J(r, "JSON.GET", "d") == '{"a":[1,2]}'
    assert J(r, "JSON.SET", "s", "$", '"\\u00e9\\ud83d\\ude00\\n\\"x\\\\"') == "OK"
    assert json.loads(J(r, "JSON.GET", "s")) == '\u00e9\U0001F600\n"x\\'


def test_depth_limit(r):
    ok = "[" * 128 + "]" * 128
    assert J(r, "JSON.SET", "d", "$", ok) == "OK"
    e = resp_error(J, r, "JSON.SET", "d", "$", "[" * 129 + "]" * 129)
    assert "recursion limit exceeded" in e
    J(r, "JSON.SET", "e", "$", '{"a":{"b":1}}')
    assert "nesting depth" in resp_error(J, r, "JSON.SET", "e", "$.a.b", ok)
    assert "nesting depth" in resp_error(J, r, "JSON.ARRAPPEND", "d", "$" + "[0]" * 127, "[]")
    assert J(r, "JSON.GET", "e") == '{"a":{"b":1}}'


def test_wrongtype_and_type(r):
    r.set("str", "x")
    assert resp_error(J, r, "JSON.GET", "str").startswith("WRONGTYPE")
    assert resp_error(J, r, "JSON.SET", "str", "$", "1").startswith("WRONGTYPE")
    J(r, "JSON.SET", "d", "$", '{"a":1,"b":1.5,"c":"s","d":true,"e":null,"f":[],"g":{}}')
    assert r.type("d") == "ReJSON-RL"
    assert J(r, "JSON.TYPE", "d") == "object"
    assert J(r, "JSON.TYPE", "d", "$.*") == ["integer", "number", "string", "boolean", "null", "array",
                                             "object"]
    assert J(r, "JSON.TYPE", "d", ".nope") is None
    assert J(r, "JSON.TYPE", "missing") is None
    assert r.object("encoding", "d") == "raw"
    assert r.memory_usage("d") > 0


# ------------------------------------------------------------------ paths


def test_jsonpath_features(r):
    J(r, "JSON.SET", "s", "$", json.dumps({
        "store": {"book": [
            {"category": "reference", "author": "Nigel Rees", "title": "Sayings", "price": 8.95},
            {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword", "price": 12.99},
            {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553",
             "price": 8.99},
            {"category": "fiction", "author": "J. R. R. Tolkien", "title": "LOTR", "isbn": "0-395",
             "price": 22.99}],
            "bicycle": {"color": "red", "price": 19.95}}}))

    def get(p):
        return json.loads(J(r, "JSON.GET", "s", p))
    assert get("$.store.book[*].author") == ["Nigel Rees", "Evelyn Waugh", "Herman Melville",
                                              "J. R. R. Tolkien"]
    assert get("$..author") == get("$.store.book[*].author")
    assert get("$.store.*")[1] == {"color": "red", "price": 19.95}
    assert get("$..price") == [8.95, 12.99, 8.99, 22.99, 19.95]
    assert get("$..book[2].title") == ["Moby Dick"]
    assert get("$..book[-1].title") == ["LOTR"]
    assert get("$..book[0,1].title") == ["Sayings", "Sword"]
    assert get("$..book[:2].title") == ["Sayings", "Sword"]
    assert get("$..book[1:].title") == ["Sword", "Moby Dick", "LOTR"]
    assert get("$..book[::2].title") == ["Sayings", "Moby Dick"]
    assert get("$..book[-2:].title") == ["Moby Dick", "LOTR"]
    assert get("$..book[::-1].title") == ["LOTR", "Moby Dick", "Sword", "Sayings"]
    assert get("$..book[?(@.isbn)].title") == ["Moby Dick", "LOTR"]
    assert get("$..book[?(@.price<10)].title") == ["Sayings", "Moby Dick"]
    assert get("$..book[?(@.price < 10 && @.category == 'fiction')].title") == ["Moby Dick"]
    assert get('$..book[?(@.price > 20 || @.author == "Nigel Rees")].title') == ["Sayings", "LOTR"]
    assert get('$..book[?(@.author =~ "^J")].title') == ["LOTR"]
    assert get("$..book[?(!(@.price < 10))].title") == ["Sword", "LOTR"]
    assert get("$..book[?(@.price > $.store.bicycle.price)].title") == ["LOTR"]
    assert get("$.store['bicycle']['color']") == ["red"]
    assert get('$["store"].bicycle.color') == ["red"]
    assert get("$.store.book[99]") == []
    assert J(r, "JSON.GET", "s", "store.bicycle.color") == '"red"'
    assert J(r, "JSON.GET", "s", '["store"]["bicycle"].price') == "19.95"
    for bad in ["$.store[", "$..", "$[?(@.a ==)]", "$[1:2", "$.a[?(@.x =~ 1)]"]:
        assert resp_error(J, r, "JSON.GET", "s", bad).startswith("Error occurred on position "), bad


# ------------------------------------------------------------------ the other commands


def test_del_forget_clear_toggle(r):
    J(r, "JSON.SET", "doc", "$", '{"a":1,"nested":{"a":2,"b":3}}')
    assert J(r, "JSON.DEL", "doc", "$..a") == 2
    assert J(r, "JSON.GET", "doc") == '{"nested":{"b":3}}'
    assert J(r, "JSON.FORGET", "doc", "$.nope") == 0
    assert J(r, "JSON.DEL", "doc") == 1
    assert r.exists("doc") == 0
    assert J(r, "JSON.DEL", "doc") == 0
    J(r, "JSON.SET", "d", "$", '{"arr":[[1],[2,[3]]]}')
    assert J(r, "JSON.DEL", "d", "$..[0]") == 4                  # nested matches: deepest first
    assert J(r, "JSON.GET", "d") == '{"arr":[[[]]]}'
    J(r, "JSON.SET", "doc", "$", '{"obj":{"a":1,"b":2},"arr":[1,2,3],"str":"foo","bool":true,'
                                 '"int":42,"float":3.14}')
    assert J(r, "JSON.CLEAR", "doc", "$.*") == 4
    assert J(r, "JSON.GET", "doc") == '{"obj":{},"arr":[],"str":"foo","bool":true,"int":0,"float":0}'
    assert J(r, "JSON.TOGGLE", "doc", "$.bool") == [0]
    assert J(r, "JSON.TOGGLE", "doc", "$.str") == [None]
    assert J(r, "JSON.TOGGLE", "doc", ".bool") == "true"
    assert resp_error(J, r, "JSON.TOGGLE", "doc", ".str") == "Path '$.str' does not exist or not a bool"
    assert resp_error(J, r, "JSON.CLEAR", "nokey") == "could not perform this operation on a key that doesn't exist"


def test_strings_and_numbers(r):
    J(r, "JSON.SET", "doc", "$", '{"a":"foo","nested":{"a":"hello"},"nested2":{"a":31}}')
    assert J(r, "JSON.STRAPPEND", "doc", "$..a", '"baz"') == [6, 8, None]
    assert J(r, "JSON.STRLEN", "doc", "$..a") == [6, 8, None]
    assert J(r, "JSON.STRLEN", "doc", ".a") == 6
    assert J(r, "JSON.STRAPPEND", "doc", ".a", '"!"') == 7
    assert resp_error(J, r, "JSON.STRAPPEND", "doc", ".a", "1").startswith("WRONGTYPE")
    assert resp_error(J, r, "JSON.STRLEN", "doc", ".nested").startswith("WRONGTYPE")
    J(r, "JSON.SET", "n", ".", '{"a":"b","b":[{"a":2},{"a":5},{"a":"c"}]}')
    assert J(r, "JSON.NUMINCRBY", "n", "$.a", "2") == "[null]"
    assert J(r, "JSON.NUMINCRBY", "n", "$..a", "2") == "[null,4,7,null]"
    assert J(r, "JSON.NUMMULTBY", "n", "$..a", "2") == "[null,8,14,null]"
    assert J(r, "JSON.NUMINCRBY", "n", ".b[0].a", "0.5") == "8.5"
    assert J(r, "JSON.NUMINCRBY", "n", ".b[0].a", "0.5") == "9.0"
    assert resp_error(J, r, "JSON.NUMINCRBY", "n", ".a", "1") == \
        "Path '$.a' does not exist or does not contains a number"
    assert "does not exist" in resp_error(J, r, "JSON.NUMINCRBY", "n", ".zz", "1")
    J(r, "JSON.SET", "big", "$", "9223372036854775807")
    assert J(r, "JSON.NUMINCRBY", "big", "$", "1") == "[9.223372036854776e18]"   # overflow: a double
    J(r, "JSON.SET", "f", "$", "1e308")
    assert "not a number" in resp_error(J, r, "JSON.NUMMULTBY", "f", "$", "10")
    assert J(r, "JSON.GET", "f") == "1e308"


def test_arrays(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1],"b":{"a":[1,2]},"c":"x"}')
    assert J(r, "JSON.ARRAPPEND", "d", "$..a", '"x"', "null") == [3, 4]
    assert J(r, "JSON.ARRAPPEND", "d", ".a", "true") == 4
    assert J(r, "JSON.ARRAPPEND", "d", "$.c", "1") == [None]
    assert J(r, "JSON.ARRLEN", "d", "$..a") == [4, 4]
    assert J(r, "JSON.ARRLEN", "d", ".a") == 4
    assert resp_error(J, r, "JSON.ARRLEN", "missing", "$") == \
        "could not perform this operation on a key that doesn't exist"
    assert J(r, "JSON.ARRLEN", "missing", ".a") is None                   # legacy: nil
    assert J(r, "JSON.ARRINDEX", "d", "$.a", '"x"') == [1]
    assert J(r, "JSON.ARRINDEX", "d", ".a", "null", "0", "2") == -1
    assert J(r, "JSON.ARRINDEX", "d", ".a", "null", "-2") == 2
    assert J(r, "JSON.ARRINSERT", "d", "$.a", "0", "0", "-1") == [6]
    assert J(r, "JSON.ARRINSERT", "d", ".a", "-1", '"y"') == 7
    assert J(r, "JSON.GET", "d", ".a") == '[0,-1,1,"x",null,"y",true]'
    assert "out of bounds" in resp_error(J, r, "JSON.ARRINSERT", "d", ".a", "99", "1")
    assert J(r, "JSON.ARRPOP", "d", ".a") == "true"
    assert J(r, "JSON.ARRPOP", "d", "$.a", "0") == ["0"]
    assert J(r, "JSON.ARRPOP", "d", "$.a", "99") == ['"y"']
    assert J(r, "JSON.ARRTRIM", "d", "$.a", "1", "-2") == [2]
    assert J(r, "JSON.GET", "d", ".a") == '[1,"x"]'
    assert J(r, "JSON.ARRTRIM", "d", ".a", "5", "9") == 0
    assert J(r, "JSON.ARRPOP", "d", ".a") is None
    assert J(r, "JSON.ARRPOP", "d", "$.c") == [None]
    assert resp_error(J, r, "JSON.ARRPOP", "d", ".c") == "Path '$.c' does not exist or not an array"
    assert "doesn't exist" in resp_error(J, r, "JSON.ARRAPPEND", "nokey", "$", "1")


def test_objects_merge_resp(r):
    J(r, "JSON.SET", "d", "$", '{"a":[3],"nested":{"a":{"b":2,"c":1}}}')
    assert J(r, "JSON.OBJKEYS", "d", "$..a") == [None, ["b", "c"]]
    assert J(r, "JSON.OBJKEYS", "d") == ["a", "nested"]
    assert J(r, "JSON.OBJLEN", "d", "$..a") == [None, 2]
    assert J(r, "JSON.OBJLEN", "d", ".nested") == 1
    assert J(r, "JSON.MERGE", "d", "$", '{"a":null,"nested":{"a":{"c":null,"d":[1]}},"z":{"y":1}}') == "OK"
    assert J(r, "JSON.GET", "d") == '{"nested":{"a":{"b":2,"d":[1]}},"z":{"y":1}}'
    assert J(r, "JSON.MERGE", "d", "$.nested.a.b", "7") == "OK"
    assert J(r, "JSON.MERGE", "d", "$.new", '{"k":1}') == "OK"       # missing member: set
    assert J(r, "JSON.GET", "d", "$.nested.a.b", "$.new") == '{"$.nested.a.b":[7],"$.new":[{"k":1}]}'
    assert J(r, "JSON.MERGE", "m", "$", '{"a":{"b":null,"c":1}}') == "OK"
    assert J(r, "JSON.GET", "m") == '{"a":{"c":1}}'
    J(r, "JSON.SET", "r", "$", '{"a":[1,"x",1.5,true,null],"o":{"k":"v"}}')
    assert J(r, "JSON.RESP", "r") == ["{", "a", ["[", 1, "x", "1.5", "true", None], "o", ["{", "k", "v"]]
    assert J(r, "JSON.RESP", "r", "$.o.k") == ["v"]
    assert J(r, "JSON.DEBUG", "MEMORY", "r") > 0
    assert len(J(r, "JSON.DEBUG", "MEMORY", "r", "$..*")) == 8
    assert J(r, "JSON.DEBUG", "HELP")


def test_mget_mset(r):
    assert J(r, "JSON.MSET", "{t}a", "$", '{"a":1}', "{t}b", "$", '{"a":2}') == "OK"
    assert J(r, "JSON.MGET", "{t}a", "{t}b", "{t}c", "$.a") == ["[1]", "[2]", None]
    assert J(r, "JSON.MGET", "{t}a", "{t}b", ".a") == ["1", "2"]
    assert J(r, "JSON.MSET", "{t}a", "$.b", "2", "{t}c", "$", "[]") == "OK"
    assert J(r, "JSON.GET", "{t}a") == '{"a":1,"b":2}'
    # all or nothing: a bad value in the last triple leaves the first unapplied
    assert " at line " in resp_error(J, r, "JSON.MSET", "{t}a", "$.a", "5", "{t}b", "$", "{bad")
    assert J(r, "JSON.GET", "{t}a", ".a") == "1"
    assert "wrong number" in resp_error(J, r, "JSON.MSET", "{t}a", "$", "1", "{t}b")


def test_big_object_index_and_order(r):
    body = ",".join('"k%d":%d' % (i, i) for i in range(2000))
    J(r, "JSON.SET", "o", "$", "{" + body + "}")
    assert J(r, "JSON.GET", "o", ".k1234") == "1234"
    assert J(r, "JSON.DEL", "o", "$.k5") == 1
    assert J(r, "JSON.GET", "o", ".k1999") == "1999"
    assert J(r, "JSON.SET", "o", "$.k5", '"back"') == "OK"
    keys = J(r, "JSON.OBJKEYS", "o")
    assert len(keys) == 2000 and keys[-1] == "k5" and keys[0] == "k0"


# ------------------------------------------------------------------ the client library, keys elsewhere


def test_redis_py_json_api(r):
    j = r.json()
    assert j.set("doc", "$", {"name": "x", "tags": ["a"], "n": 1, "nested": {"ok": True}})
    assert j.get("doc") == {"name": "x", "tags": ["a"], "n": 1, "nested": {"ok": True}}
    assert j.get("doc", "$.name") == ["x"]
    assert j.get("doc", ".n") == 1
    assert j.arrappend("doc", "$.tags", "b", "c") == [3]
    assert j.arrlen("doc", "$.tags") == [3]
    assert j.arrindex("doc", "$.tags", "c") == [2]
    assert j.arrinsert("doc", "$.tags", 0, "z") == [4]
    assert j.arrpop("doc", "$.tags") == ['"c"']      # redis-py 4.3 leaves a `$` reply's items as JSON text
    assert j.arrtrim("doc", "$.tags", 0, 1) == [2]
    assert j.numincrby("doc", "$.n", 2) == [3]
    assert j.nummultby("doc", "$.n", 2) == [6]
    assert j.strappend("doc", "yz", "$.name") == [3]
    assert j.strlen("doc", "$.name") == [3]
    assert j.toggle("doc", "$.nested.ok") == [0]
    assert sorted(j.objkeys("doc", "$")[0]) == ["n", "name", "nested", "tags"]
    assert j.objlen("doc", "$") == [4]
    assert j.type("doc", "$.tags") == ["array"]
    assert j.mget(["doc", "nope"], "$.n") == [[6], None]
    assert j.clear("doc", "$.tags") == 1
    assert j.delete("doc", "$.nested") == 1
    assert j.get("doc") == {"name": "xyz", "tags": [], "n": 6}
    assert j.resp("doc", "$.n") == [6]
    assert j.debug("MEMORY", "doc", "$") [0] > 0
    assert j.forget("doc") == 1
    assert j.get("doc") is None


def test_dump_restore_copy_rename(r):
    J(r, "JSON.SET", "d", "$", '{"a":[1,2.5,"x"],"b":{"c":null}}')
    payload = r.dump("d")
    r.restore("d2", 0, payload)
    assert J(r, "JSON.GET", "d2") == J(r, "JSON.GET", "d")
    assert r.type("d2") == "ReJSON-RL"
    bad = bytearray(payload)
    bad[5] ^= 0xff
    with pytest.raises(redis.exceptions.ResponseError):
        r.restore("d3", 0, bytes(bad))
    assert r.exists("d3") == 0
    assert r.copy("d", "d4")
    J(r, "JSON.SET", "d4", "$.a[0]", "9")
    assert J(r, "JSON.GET", "d", "$.a[0]") == "[1]"                  # a deep copy
    r.rename("d4", "d5")
    assert J(r, "JSON.GET", "d5", "$.a[0]") == "[9]"
    r.expire("d5", 100)
    J(r, "JSON.SET", "d5", "$.a", "[]")
    assert r.ttl("d5") > 0                                            # changes keep the deadline


def test_multi_exec_and_scripts(r):
    p = r.pipeline(transaction=True)
    p.execute_command("JSON.SET", "t", "$", '{"n":1}')
    p.execute_command("JSON.NUMINCRBY", "t", "$.n", "1")
    p.execute_command("JSON.GET", "t")
    assert p.execute() == ["OK", "[2]", '{"n":2}']
    assert r.eval("return redis.call('JSON.GET', KEYS[1], '$.n')", 1, "t") == "[2]"


def json_state(c, keys):
    return {k: c.execute_command("JSON.GET", k) for k in keys}


def json_writes(c):
    c.execute_command("JSON.SET", "j1", "$", '{"a":[1,2,3],"s":"x","o":{"k":1}}')
    c.execute_command("JSON.ARRAPPEND", "j1", "$.a", "4")
    c.execute_command("JSON.STRAPPEND", "j1", "$.s", '"yz"')
    c.execute_command("JSON.NUMINCRBY", "j1", "$.o.k", "1.5")
    c.execute_command("JSON.MERGE", "j1", "$", '{"o":{"m":[true]}}')
    c.execute_command("JSON.DEL", "j1", "$.a[0]")
    c.execute_command("JSON.ARRPOP", "j1", "$.a")
    c.execute_command("JSON.SET", "j2", "$", '[' + ",".join(str(i) for i in range(300)) + ']')
    c.execute_command("JSON.ARRTRIM", "j2", "$", "10", "20")
    c.execute_command("JSON.TOGGLE", "j1", "$.o.m[0]")


def test_restart_keeps_documents(start_server, tmp_path):
    d = str(tmp_path / "p")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    c.execute_command("JSON.SET", "j0", "$", '{"before":"checkpoint"}')
    assert c.save()
    json_writes(c)
    keys = ["j0", "j1", "j2"]
    want = json_state(c, keys)
    assert want["j1"] == '{"a":[2,3],"s":"xyz","o":{"k":2.5,"m":[false]}}'
    srv.proc.send_signal(signal.SIGKILL)                  # the WAL replays the writes
    srv.proc.wait(timeout=5)
    srv2 = start_server("--dir", d, "--durability", "always")
    c2 = srv2.client()
    assert json_state(c2, keys) == want
    assert c2.type("j1") == "ReJSON-RL"
    assert c2.save()                                      # and from a checkpoint alone
    srv2.stop()
    srv3 = start_server("--dir", d, "--durability", "always")
    assert json_state(srv3.client(), keys) == want


def test_replica_keeps_documents(start_server):
    p = start_server()
    c = p.client()
    c.execute_command("JSON.SET", "j0", "$", '{"before":"sync"}')
    rs = start_server("--replicaof", "127.0.0.1 %d" % p.port)
    rc = rs.client()
    poll_until(lambda: rc.info("replication").get("master_link_status") == "up", timeout=20,
               what="replica link up")
    json_writes(c)
    keys = ["j0", "j1", "j2"]
    want = json_state(c, keys)
    poll_until(lambda: json_state(rc, keys) == want, timeout=10, what="replica documents")


def test_field_write_logs_a_small_record(start_server, tmp_path):
    """A field SET on a large document appends about the field's size to the WAL, not the document's."""
    d = str(tmp_path / "w")
    srv = start_server("--dir", d, "--durability", "always")
    c = srv.client()
    c.execute_command("JSON.SET", "big", "$", json.dumps({"bulk": "x" * (1 << 20), "meta": {"value": 1}}))

    def wal_bytes():
        return int(c.info("persistence")["wal_bytes"])
    before = wal_bytes()
    for i in range(50):
        c.execute_command("JSON.SET", "big", "$.meta.value", str(i))
        c.execute_command("JSON.MERGE", "big", "$.meta", '{"value":"%d"}' % i)
    grown = wal_bytes() - before
    assert grown < 50 * 2 * 1000, grown


def test_resp3_shapes(raw):
    raw.cmd("HELLO", "3")
    assert raw.cmd("JSON.SET", "d", "$", '{"n":1,"s":"ab","a":[1]}') == "OK"        # simple string
    assert raw.cmd("JSON.GET", "d") == b'{"n":1,"s":"ab","a":[1]}'            # default path: legacy `.`
    assert raw.cmd("JSON.GET", "d", ".n") == b"1"
    assert raw.cmd_raw("JSON.NUMINCRBY", "d", "$.n", "1") == b"*1\r\n:2\r\n"
    assert raw.cmd_raw("JSON.NUMINCRBY", "d", "$.n", "0.5") == b"*1\r\n,2.5\r\n"
    assert raw.cmd_raw("JSON.NUMINCRBY", "d", "$.s", "1") == b"*1\r\n_\r\n"
    assert raw.cmd_raw("JSON.NUMINCRBY", "d", ".n", "1") == b"$3\r\n3.5\r\n"    # legacy: text
    assert raw.cmd_raw("JSON.TYPE", "d", "$.n") == b"*1\r\n*1\r\n+number\r\n"
    # no path: the legacy root under RESP3 too (RedisJSON's Path::default)
    assert raw.cmd_raw("JSON.STRLEN", "d").startswith(b"-WRONGTYPE")
    assert raw.cmd_raw("JSON.OBJLEN", "d") == b":3\r\n"
    assert raw.cmd_raw("JSON.TYPE", "d") == b"*1\r\n+object\r\n"
    assert raw.cmd_raw("JSON.OBJKEYS", "d") == b"*3\r\n$1\r\nn\r\n$1\r\ns\r\n$1\r\na\r\n"
    assert raw.cmd_raw("JSON.GET", "missing") == b"_\r\n"


def test_maxmemory_refuses_growth_not_reads(start_server):
    srv = start_server("--maxmemory", "40mb", "--maxmemory-policy", "noeviction")
    c = srv.client()
    c.execute_command("JSON.SET", "d", "$", '{"a":[]}')
    chunk = '"' + "x" * 100000 + '"'
    with pytest.raises(redis.exceptions.ResponseError) as ei:
        for _ in range(2000):
            c.execute_command("JSON.ARRAPPEND", "d", "$.a", chunk)
    assert str(ei.value).startswith("OOM")
    assert c.execute_command("JSON.ARRLEN", "d", ".a") > 0                 # reads still work
    assert c.execute_command("JSON.DEL", "d", "$.a[0]") == 1                # and deletes


def test_removing_many_children_is_one_pass(r):
    """DEL of every element, or a MERGE deleting most members, costs each parent once: 200,000
    removals one at a time (O(n) each) would take minutes; the client's timeout bounds the test."""
    n = 200000
    J(r, "JSON.SET", "a", "$", "[" + ",".join(str(i) for i in range(n)) + "]")
    assert J(r, "JSON.DEL", "a", "$[*]") == n
    assert J(r, "JSON.GET", "a") == "[]"
    J(r, "JSON.SET", "o", "$", "{" + ",".join('"k%d":%d' % (i, i) for i in range(n)) + "}")
    assert J(r, "JSON.DEL", "o", "$[?(@ > 9)]") == n - 10
    assert J(r, "JSON.OBJLEN", "o", ".") == 10
    J(r, "JSON.SET", "o", "$", "{" + ",".join('"k%d":%d' % (i, i) for i in range(n)) + "}")
    patch = "{" + ",".join('"k%d":null' % i for i in range(1, n)) + ',"new":1}'
    assert J(r, "JSON.MERGE", "o", "$", patch) == "OK"
    assert J(r, "JSON.GET", "o") == '{"k0":0,"new":1}'
    assert J(r, "JSON.GET", "o", ".new") == "1"
