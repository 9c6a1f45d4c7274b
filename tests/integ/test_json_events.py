"""JSON writes and the rest of the server (issue 20): the keyspace events every JSON write publishes, named as
RedisJSON's (its tests/pytest/test_keyspace_notifications.py), in the module class `d`, and the CLIENT
TRACKING invalidations they send.

ruvio_only: redis-server here has no RedisJSON module. Events are read up to a marker the writer publishes
(test_keyspace_events.Sub): no sleeps, bounded waits."""
import shutil

import pytest

from conftest import Push, launch, resp_error
from test_keyspace_events import Sub, space

pytestmark = pytest.mark.ruvio_only


@pytest.fixture(scope="module")
def srv():
    s = launch()
    yield s
    s.stop()
    shutil.rmtree(s.workdir, ignore_errors=True)


@pytest.fixture
def r(srv):
    c = srv.client()
    c.flushall()
    c.config_set("notify-keyspace-events", "KEd")
    yield c
    c.config_set("notify-keyspace-events", "")
    c.close()


@pytest.fixture
def sub(srv, r):
    s = Sub(srv)
    yield s
    s.close()


def J(c, *args):
    return c.execute_command(*args)


def test_every_json_write_publishes_its_event(r, sub):
    J(r, "JSON.SET", "j", "$", '{"s":"ab","n":1,"b":true,"a":[1,2,3],"o":{"x":1}}')
    J(r, "JSON.SET", "j", "$.s", '"cd"')
    J(r, "JSON.STRAPPEND", "j", "$.s", '"e"')
    J(r, "JSON.NUMINCRBY", "j", "$.n", "2")
    J(r, "JSON.NUMMULTBY", "j", ".n", "3")
    J(r, "JSON.TOGGLE", "j", "$.b")
    J(r, "JSON.TOGGLE", "j", ".b")                      # the legacy form has its own code path
    J(r, "JSON.ARRAPPEND", "j", "$.a", "4")
    J(r, "JSON.ARRINSERT", "j", "$.a", "0", "0")
    J(r, "JSON.ARRPOP", "j", "$.a")
    J(r, "JSON.ARRTRIM", "j", "$.a", "0", "1")
    J(r, "JSON.CLEAR", "j", "$.o")
    J(r, "JSON.MERGE", "j", "$", '{"m":1}')
    J(r, "JSON.MERGE", "new", "$", '{"m":1}')            # a new key
    J(r, "JSON.MSET", "j", "$.m", "2", "k", "$", "[]")
    J(r, "JSON.DEL", "j", "$.m")
    J(r, "JSON.FORGET", "j", "$.s")
    J(r, "JSON.DEL", "k")                                # the whole key
    assert space(sub.collect(r)) == [
        ("j", "json.set"), ("j", "json.set"), ("j", "json.strappend"), ("j", "json.numincrby"),
        ("j", "json.nummultby"), ("j", "json.toggle"), ("j", "json.toggle"), ("j", "json.arrappend"),
        ("j", "json.arrinsert"), ("j", "json.arrpop"), ("j", "json.arrtrim"), ("j", "json.clear"),
        ("j", "json.merge"), ("new", "json.merge"), ("j", "json.mset"), ("k", "json.mset"),
        ("j", "json.del"), ("j", "json.del"), ("k", "json.del")]


def test_writes_that_change_nothing_and_reads_publish_nothing(r, sub):
    J(r, "JSON.SET", "j", "$", '{"s":"ab","n":1,"e":[],"o":{}}')
    sub.collect(r)
    J(r, "JSON.STRAPPEND", "j", "$.n", '"x"')           # not a string: [nil]
    J(r, "JSON.NUMINCRBY", "j", "$.s", "1")             # not a number
    J(r, "JSON.TOGGLE", "j", "$.s")                     # not a boolean
    J(r, "JSON.ARRAPPEND", "j", "$.s", "1")             # not an array
    J(r, "JSON.ARRPOP", "j", "$.e")                     # empty
    J(r, "JSON.CLEAR", "j", "$.o")                      # already empty
    J(r, "JSON.DEL", "j", "$.nope")
    J(r, "JSON.SET", "j", "$.s", '"x"', "NX")           # exists
    J(r, "JSON.MERGE", "j", "$.a.b", "1")               # no parent: nothing set
    for read in (("JSON.GET", "j"), ("JSON.STRLEN", "j", "$.s"), ("JSON.ARRLEN", "j", "$.e"),
                 ("JSON.OBJKEYS", "j"), ("JSON.TYPE", "j"), ("JSON.MGET", "j", "$"),
                 ("JSON.DEBUG", "MEMORY", "j")):
        J(r, *read)
    assert sub.collect(r) == []


def test_refused_mset_publishes_nothing(r, sub):
    assert "EOF while parsing" in resp_error(J, r, "JSON.MSET", "a", "$", "1", "b", "$", "{")
    assert sub.collect(r) == []


def resp3(raw):
    c = raw.new()
    c.cmd("HELLO", "3")
    return c


@pytest.mark.parametrize("write", [
    ("JSON.SET", "t", "$.n", "5"),
    ("JSON.NUMINCRBY", "t", "$.n", "1"),
    ("JSON.STRAPPEND", "t", "$.s", '"x"'),
    ("JSON.ARRAPPEND", "t", "$.a", "1"),
    ("JSON.TOGGLE", "t", "$.b"),
    ("JSON.CLEAR", "t", "$.a"),
    ("JSON.MERGE", "t", "$", '{"z":1}'),
    ("JSON.MSET", "t", "$.n", "7"),
    ("JSON.DEL", "t", "$.s"),
])
def test_json_writes_invalidate_tracked_keys(raw, write):
    c = resp3(raw)
    w = raw.new()
    w.cmd("JSON.SET", "t", "$", '{"n":1,"s":"a","a":[0],"b":false}')
    assert c.cmd("CLIENT", "TRACKING", "ON") == "OK"
    assert c.cmd("JSON.GET", "t", "$.n") == b"[1]"
    w.cmd(*write)
    msg = c.read_reply()
    assert isinstance(msg, Push) and list(msg) == [b"invalidate", [b"t"]], msg


def test_mset_publishes_once_per_triple_that_changed_its_key(r, sub):
    J(r, "JSON.SET", "a", "$", '{"x":1}')
    sub.collect(r)
    J(r, "JSON.MSET", "a", "$.x", "2", "a", "$.nope.q", "1", "a", "$.y", "3", "b", "$", "1")
    assert space(sub.collect(r)) == [("a", "json.mset"), ("a", "json.mset"), ("b", "json.mset")]
    # both add `z` to the document as it was: the second finds it there and changes nothing (dict_add)
    J(r, "JSON.MSET", "a", "$.z", "1", "a", "$.z", "2")
    assert space(sub.collect(r)) == [("a", "json.mset")]
    assert J(r, "JSON.GET", "a", "$.z") == "[1]"


def test_mset_events_follow_the_triples_order(r, sub):
    """RedisJSON 2.x's json_mset (src/commands.rs) applies the triples in their order and publishes
    `json.mset` for a triple's key when that triple changed it: a key named twice gets its events at its
    triples' places, not together."""
    J(r, "JSON.SET", "a", "$", '{"x":1}')
    sub.collect(r)
    J(r, "JSON.MSET", "a", "$.x", "2", "b", "$", "1", "a", "$.nope.q", "1", "c", "$", "2", "a", "$.y", "3")
    assert space(sub.collect(r)) == [("a", "json.mset"), ("b", "json.mset"), ("c", "json.mset"),
                                     ("a", "json.mset")]
    J(r, "JSON.MSET", "b", "$", "3", "a", "$", "4", "b", "$", "5")
    assert space(sub.collect(r)) == [("b", "json.mset"), ("a", "json.mset"), ("b", "json.mset")]
    assert J(r, "JSON.GET", "b") == "5" and J(r, "JSON.GET", "a") == "4"
