"""json-max-packed-bytes: the size up to which a JSON document is packed in its key's entry (issue 20).

Ruvio's own key (RedisJSON has no packed form): like Redis's `hash-max-listpack-value`, it only chooses the
encoding, never a reply. A root write packs a document whose packed form fits; 0 never packs; raising it
packs bigger documents. Whether a document is packed shows in MEMORY USAGE (a tree costs several times its
text: 32-byte nodes; the packed form about its text).

ruvio_only: redis-server here has no RedisJSON module."""
import json

import pytest

pytestmark = pytest.mark.ruvio_only

SMALL = '{"name":"user-000001","active":true,"score":42,"meta":{"value":"abcdefghij","n":7}}'
NUMS = json.dumps({"a": list(range(300))}, separators=(",", ":"))   # packed: about 600 bytes


def J(c, *args):
    return c.execute_command(*args)


def packed(c, key):
    return c.memory_usage(key) < 3 * len(J(c, "JSON.GET", key))


def test_default_limit_and_range(start_server):
    c = start_server().client()
    assert c.config_get("json-max-packed-bytes") == {"json-max-packed-bytes": "512"}
    J(c, "JSON.SET", "s", "$", SMALL)
    J(c, "JSON.SET", "n", "$", NUMS)
    assert packed(c, "s") and not packed(c, "n")
    for bad in ("-1", "65537", "x"):
        with pytest.raises(Exception, match="json-max-packed-bytes"):
            c.config_set("json-max-packed-bytes", bad)
    assert c.config_get("json-max-packed-bytes") == {"json-max-packed-bytes": "512"}


def test_config_set_changes_what_root_writes_store(start_server):
    c = start_server().client()
    J(c, "JSON.SET", "s", "$", SMALL)
    assert c.config_set("json-max-packed-bytes", "0")
    J(c, "JSON.SET", "t", "$", SMALL)
    assert packed(c, "s") and not packed(c, "t")       # existing keys keep their form until rewritten
    assert J(c, "JSON.SET", "s", "$.score", "43") == "OK"
    assert not packed(c, "s")                           # a write stores it again: a tree now
    assert c.config_set("json-max-packed-bytes", "4096")
    J(c, "JSON.SET", "n", "$", NUMS)
    assert packed(c, "n")
    assert J(c, "JSON.ARRAPPEND", "n", "$.a", "300") == [301]
    assert packed(c, "n")
    assert J(c, "JSON.GET", "n", "$.a[-1]") == "[300]"
    assert J(c, "JSON.GET", "n") == NUMS[:-2] + ",300]}"
    assert J(c, "JSON.GET", "s") == SMALL.replace("42", "43")


def test_limit_from_the_command_line(start_server):
    c = start_server("--json-max-packed-bytes", "1024").client()
    J(c, "JSON.SET", "n", "$", NUMS)
    assert packed(c, "n")
    assert J(c, "JSON.GET", "n", "$.a[299]") == "[299]"
