"""List commands (validated against redis-server 7.0.15; encoding names follow Redis 7.2+, so those are ruvio-only)."""

import random

import pytest

from conftest import resp_error

NOTINT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
RANK0 = ("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
         "or use negative to start from the end of the list")


# ------------------------------------------------------------------------------------------------ push / pop

def test_push_and_range(r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "x", "y") == 5
    assert r.lrange("l", 0, -1) == ["y", "x", "a", "b", "c"]
    assert r.llen("l") == 5
    assert r.type("l") == "list"


def test_pushx(r):
    assert r.lpushx("l", "a") == 0
    assert r.execute_command("RPUSHX", "l", "a", "b") == 0
    assert r.exists("l") == 0
    r.rpush("l", "m")
    assert r.lpushx("l", "a", "b") == 3
    assert r.rpushx("l", "z") == 4
    assert r.lrange("l", 0, -1) == ["b", "a", "m", "z"]


def test_integers_round_trip(r):
    vals = ["0", "1", "-1", "127", "128", "-4096", "4095", "4096", "-4097", "32767", "-32768",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808", "007", "-0", "+1",
            " 1", "1.5", "", "18446744073709551616", "1099511627776", "-549755813888"]
    r.rpush("l", *vals)
    assert r.lrange("l", 0, -1) == vals
    for i, v in enumerate(vals):
        assert r.lindex("l", i) == v
    assert r.lpos("l", "007") == vals.index("007")
    assert r.lpos("l", "7") is None
    assert r.lpos("l", "-0") == vals.index("-0")
    assert r.lpos("l", "0") == 0


def test_binary_and_long_values(rb):
    vals = [b"\x00\xff\r\n", b"x" * 63, b"y" * 64, b"z" * 4095, b"w" * 4096, b"v" * 70000]
    rb.rpush("l", *vals)
    assert rb.lrange("l", 0, -1) == vals
    assert rb.rpop("l") == vals[-1]
    assert rb.lpop("l") == vals[0]


def test_pop(r):
    r.rpush("l", "a", "b", "c", "d")
    assert r.lpop("l") == "a"
    assert r.rpop("l") == "d"
    assert r.lpop("l", 1) == ["b"]
    assert r.rpop("l", 5) == ["c"]
    assert r.exists("l") == 0
    assert r.lpop("l") is None


def test_pop_count_shapes(raw):
    raw.cmd("RPUSH", "l", "a", "b", "c")
    assert raw.cmd_raw("LPOP", "l", "0") == b"*0\r\n"
    assert raw.cmd_raw("RPOP", "l", "2") == b"*2\r\n$1\r\nc\r\n$1\r\nb\r\n"
    assert raw.cmd_raw("LPOP", "nol", "0") == b"*-1\r\n"
    assert raw.cmd_raw("LPOP", "nol", "2") == b"*-1\r\n"
    assert raw.cmd_raw("RPOP", "nol") == b"$-1\r\n"
    assert raw.cmd("LPOP", "l", "-1") == "ERR value is out of range, must be positive"
    assert raw.cmd("LPOP", "l", "x") == "ERR value is out of range, must be positive"
    assert raw.cmd("LPOP", "l", "1", "2") == "ERR wrong number of arguments for 'lpop' command"
    assert raw.cmd("RPOP", "l", "1", "2") == "ERR wrong number of arguments for 'rpop' command"


def test_null_shapes_resp3(raw):
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("LPOP", "nol", "2") == b"_\r\n"
    assert raw.cmd_raw("LPOP", "nol") == b"_\r\n"
    assert raw.cmd_raw("LINDEX", "nol", "0") == b"_\r\n"
    assert raw.cmd_raw("LMPOP", "1", "nol", "LEFT") == b"_\r\n"
    assert raw.cmd_raw("LPOS", "nol", "a") == b"_\r\n"
    assert raw.cmd_raw("LMOVE", "nol", "d", "LEFT", "LEFT") == b"_\r\n"
    assert raw.cmd_raw("RPUSH", "l", "a") == b":1\r\n"
    assert raw.cmd_raw("LRANGE", "l", "0", "-1") == b"*1\r\n$1\r\na\r\n"


def test_wrongtype(r):
    r.set("s", "x")
    for fn, args in [(r.lpush, ("s", "a")), (r.rpushx, ("s", "a")), (r.lpop, ("s",)), (r.llen, ("s",)),
                     (r.lrange, ("s", 0, -1)), (r.lindex, ("s", 0)), (r.lset, ("s", 0, "a")),
                     (r.linsert, ("s", "before", "a", "b")), (r.lrem, ("s", 0, "a")), (r.ltrim, ("s", 0, 1)),
                     (r.lpos, ("s", "a")), (r.rpoplpush, ("s", "d"))]:
        assert resp_error(fn, *args) == WRONGTYPE, fn
    assert r.get("s") == "x"


def test_arity(raw):
    for cmd in ["LPUSH l", "RPUSH l", "LPUSHX l", "LLEN", "LRANGE l 0", "LINDEX l", "LSET l 0",
                "LINSERT l before a", "LREM l 0", "LTRIM l 0", "LPOS l", "LMOVE a b LEFT", "RPOPLPUSH a",
                "LMPOP 1 l", "LPOP"]:
        parts = cmd.split()
        assert raw.cmd(*parts) == "ERR wrong number of arguments for '%s' command" % parts[0].lower()


# ------------------------------------------------------------------------------------------------ read

def test_lrange_bounds(r):
    r.rpush("l", *"abcde")
    assert r.lrange("l", 1, 2) == ["b", "c"]
    assert r.lrange("l", -2, -1) == ["d", "e"]
    assert r.lrange("l", -100, 100) == list("abcde")
    assert r.lrange("l", 3, 1) == []
    assert r.lrange("l", 5, 10) == []
    assert r.lrange("l", -100, -6) == []
    assert r.lrange("nol", 0, -1) == []
    assert resp_error(r.lrange, "l", "a", 1) == NOTINT
    assert resp_error(r.lrange, "nol", 0, "1.5") == NOTINT


def test_lindex(r):
    r.rpush("l", *"abc")
    assert r.lindex("l", 0) == "a"
    assert r.lindex("l", -1) == "c"
    assert r.lindex("l", -3) == "a"
    assert r.lindex("l", 3) is None
    assert r.lindex("l", -4) is None
    assert r.lindex("nol", 0) is None
    assert resp_error(r.lindex, "l", "x") == NOTINT


def test_lpos(r):
    r.rpush("l", "a", "b", "c", "1", "2", "3", "c", "c")
    assert r.lpos("l", "c") == 2
    assert r.lpos("l", "c", rank=2) == 6
    assert r.lpos("l", "c", rank=-1) == 7
    assert r.lpos("l", "c", rank=-3) == 2
    assert r.lpos("l", "c", rank=4) is None
    assert r.lpos("l", "c", count=0) == [2, 6, 7]
    assert r.lpos("l", "c", count=2) == [2, 6]
    assert r.lpos("l", "c", count=2, rank=-1) == [7, 6]
    assert r.lpos("l", "c", count=0, maxlen=7) == [2, 6]
    assert r.lpos("l", "c", rank=-1, maxlen=1) == 7
    assert r.lpos("l", "a", rank=-1, maxlen=2) is None
    assert r.lpos("l", "z", count=0) == []
    assert r.lpos("l", "2") == 4
    assert r.lpos("nol", "a") is None
    assert r.lpos("nol", "a", count=2) == []


def test_lpos_errors(raw):
    raw.cmd("RPUSH", "l", "a")
    assert raw.cmd("LPOS", "l", "a", "RANK", "0") == RANK0
    assert raw.cmd("LPOS", "nol", "a", "RANK", "0") == RANK0
    assert raw.cmd("LPOS", "l", "a", "RANK", "x") == "ERR " + NOTINT
    assert raw.cmd("LPOS", "l", "a", "COUNT", "-1") == "ERR COUNT can't be negative"
    assert raw.cmd("LPOS", "l", "a", "COUNT", "x") == "ERR COUNT can't be negative"
    assert raw.cmd("LPOS", "l", "a", "MAXLEN", "-1") == "ERR MAXLEN can't be negative"
    assert raw.cmd("LPOS", "l", "a", "MAXLEN", "x") == "ERR MAXLEN can't be negative"
    assert raw.cmd("LPOS", "l", "a", "COUNT") == "ERR syntax error"
    assert raw.cmd("LPOS", "l", "a", "FOO", "1") == "ERR syntax error"
    assert raw.cmd("LPOS", "l", "a", "RANK", "1", "RANK", "2") is None
    raw.cmd("SET", "s", "x")
    assert raw.cmd("LPOS", "s", "a", "RANK", "0") == RANK0
    assert raw.cmd("LPOS", "s", "a") == WRONGTYPE


# ------------------------------------------------------------------------------------------------ write

def test_lset(r):
    r.rpush("l", "a", "b", "c")
    assert r.lset("l", 1, "B") is True
    assert r.lset("l", -1, "C" * 100) is True
    assert r.lrange("l", 0, -1) == ["a", "B", "C" * 100]
    assert resp_error(r.lset, "l", 3, "x") == "index out of range"
    assert resp_error(r.lset, "l", -4, "x") == "index out of range"
    assert resp_error(r.lset, "nol", 0, "x") == "no such key"
    assert resp_error(r.lset, "nol", "x", "x") == "no such key"
    assert resp_error(r.lset, "l", "x", "x") == NOTINT
    assert r.exists("nol") == 0


def test_linsert(r):
    r.rpush("l", "a", "b", "c")
    assert r.linsert("l", "before", "b", "x") == 4
    assert r.linsert("l", "AFTER", "c", "y") == 5
    assert r.linsert("l", "before", "a", "0") == 6
    assert r.lrange("l", 0, -1) == ["0", "a", "x", "b", "c", "y"]
    assert r.linsert("l", "before", "zz", "q") == -1
    assert r.linsert("nol", "before", "a", "q") == 0
    assert r.exists("nol") == 0
    assert resp_error(r.linsert, "l", "middle", "a", "q") == "syntax error"
    r.set("s", "x")
    assert resp_error(r.linsert, "s", "middle", "a", "q") == "syntax error"


def test_lrem(r):
    r.rpush("l", "a", "b", "a", "c", "a", "1", "a")
    assert r.lrem("l", 2, "a") == 2
    assert r.lrange("l", 0, -1) == ["b", "c", "a", "1", "a"]
    assert r.lrem("l", -1, "a") == 1
    assert r.lrange("l", 0, -1) == ["b", "c", "a", "1"]
    assert r.lrem("l", 0, "1") == 1
    assert r.lrem("l", 0, "zz") == 0
    assert r.lrem("nol", 0, "a") == 0
    assert resp_error(r.lrem, "l", "x", "a") == NOTINT
    assert r.lrem("l", 0, "b") + r.lrem("l", 0, "c") + r.lrem("l", 0, "a") == 3
    assert r.exists("l") == 0


def test_ltrim(r):
    r.rpush("l", *"abcdef")
    assert r.ltrim("l", 1, -2) is True
    assert r.lrange("l", 0, -1) == list("bcde")
    assert r.ltrim("l", -2, 100) is True
    assert r.lrange("l", 0, -1) == list("de")
    assert r.ltrim("l", 5, 10) is True
    assert r.exists("l") == 0
    r.rpush("l", *"abc")
    assert r.ltrim("l", 2, 1) is True
    assert r.exists("l") == 0
    assert r.ltrim("nol", 0, 1) is True
    assert resp_error(r.ltrim, "l", "a", 1) == NOTINT


def test_lmove_and_rpoplpush(r):
    r.rpush("src", "a", "b", "c")
    assert r.lmove("src", "dst", "LEFT", "RIGHT") == "a"
    assert r.lmove("src", "dst", "RIGHT", "LEFT") == "c"
    assert r.lrange("dst", 0, -1) == ["c", "a"]
    assert r.rpoplpush("src", "dst") == "b"
    assert r.exists("src") == 0
    assert r.lrange("dst", 0, -1) == ["b", "c", "a"]
    assert r.lmove("src", "dst", "LEFT", "LEFT") is None
    assert r.rpoplpush("src", "dst") is None
    assert r.exists("src") == 0


def test_lmove_same_key_rotation(r):
    r.rpush("l", "1", "2", "3")
    assert r.rpoplpush("l", "l") == "3"
    assert r.lrange("l", 0, -1) == ["3", "1", "2"]
    assert r.lmove("l", "l", "LEFT", "RIGHT") == "3"
    assert r.lrange("l", 0, -1) == ["1", "2", "3"]
    r.delete("l")
    r.rpush("l", "only")
    assert r.lmove("l", "l", "LEFT", "LEFT") == "only"
    assert r.lrange("l", 0, -1) == ["only"]


def test_lmove_errors(raw):
    raw.cmd("RPUSH", "l", "a")
    raw.cmd("SET", "s", "x")
    assert raw.cmd("LMOVE", "l", "l", "MIDDLE", "LEFT") == "ERR syntax error"
    assert raw.cmd("LMOVE", "s", "l", "LEFT", "LEFT") == WRONGTYPE
    assert raw.cmd("LMOVE", "l", "s", "LEFT", "LEFT") == WRONGTYPE
    assert raw.cmd("LMOVE", "nol", "s", "LEFT", "LEFT") is None
    assert raw.cmd("LRANGE", "l", "0", "-1") == [b"a"]


def test_lmpop(r):
    r.rpush("a", "1", "2", "3")
    r.rpush("b", "x")
    assert r.execute_command("LMPOP", 2, "nol", "a", "LEFT") == ["a", ["1"]]
    assert r.execute_command("LMPOP", 2, "a", "b", "RIGHT", "COUNT", 10) == ["a", ["3", "2"]]
    assert r.exists("a") == 0
    assert r.execute_command("LMPOP", 2, "a", "b", "left", "count", 1) == ["b", ["x"]]
    assert r.execute_command("LMPOP", 2, "a", "b", "LEFT") is None


def test_lmpop_errors(raw):
    raw.cmd("RPUSH", "l", "a")
    raw.cmd("SET", "s", "x")
    nk = "ERR numkeys should be greater than 0"
    cnt = "ERR count should be greater than 0"
    assert raw.cmd("LMPOP", "0", "l", "LEFT") == nk
    assert raw.cmd("LMPOP", "-1", "l", "LEFT") == nk
    assert raw.cmd("LMPOP", "x", "l", "LEFT") == nk
    assert raw.cmd("LMPOP", "2", "l", "LEFT") == "ERR syntax error"
    assert raw.cmd("LMPOP", "99999999999999", "l", "LEFT") == "ERR syntax error"
    assert raw.cmd("LMPOP", "1", "l", "MIDDLE") == "ERR syntax error"
    assert raw.cmd("LMPOP", "1", "l", "LEFT", "COUNT", "0") == cnt
    assert raw.cmd("LMPOP", "1", "l", "LEFT", "COUNT", "x") == cnt
    assert raw.cmd("LMPOP", "1", "l", "LEFT", "COUNT") == "ERR syntax error"
    assert raw.cmd("LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "2") == "ERR syntax error"
    assert raw.cmd("LMPOP", "1", "l", "LEFT", "FOO") == "ERR syntax error"
    assert raw.cmd("LMPOP", "2", "s", "l", "LEFT") == WRONGTYPE
    assert raw.cmd("LMPOP", "2", "l", "s", "LEFT") == [b"l", [b"a"]]


def test_lmpop_getkeys(raw):
    assert raw.cmd("COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT") == [b"a", b"b"]
    info = raw.cmd("COMMAND", "INFO", "LMPOP")[0]
    assert info[1] == -4 and info[3:6] == [0, 0, 0]
    assert "movablekeys" in info[2]


# ------------------------------------------------------------------------------------------------ generic commands

def test_copy_rename_del(r):
    r.rpush("l", *[str(i) for i in range(300)])
    assert r.copy("l", "l2") is True
    r.rpush("l2", "new")
    assert r.llen("l") == 300 and r.llen("l2") == 301
    assert r.rename("l", "l3") is True
    assert r.lrange("l3", 0, 2) == ["0", "1", "2"]
    assert r.delete("l2", "l3") == 2
    r.rpush("e", "a")
    r.expire("e", 100)
    r.rpush("e", "b")
    assert r.ttl("e") > 0


def test_memory_usage(r):
    r.rpush("l", "a")
    assert r.memory_usage("l") > 0


def test_keyspace_hits(r):
    r.config_resetstat()
    r.rpush("l", "a")
    r.llen("l")
    r.lrange("nol", 0, -1)
    info = r.info("stats")
    assert info["keyspace_hits"] == 1 and info["keyspace_misses"] == 1


# ------------------------------------------------------------------------------------------------ encodings

@pytest.mark.ruvio_only
def test_encoding_conversion_by_size(r):
    r.rpush("l", "a")
    assert r.object("encoding", "l") == "listpack"
    r.rpush("l", *["x" * 60] * 200)       # ~12 KB > 8 KB (list-max-listpack-size -2)
    assert r.object("encoding", "l") == "quicklist"
    r.ltrim("l", 0, 0)
    assert r.object("encoding", "l") == "quicklist"   # never converts back
    assert r.lrange("l", 0, -1) == ["a"]


@pytest.mark.ruvio_only
def test_encoding_big_lset_and_linsert(r):
    r.rpush("l", "a", "b")
    r.lset("l", 0, "x" * 9000)
    assert r.object("encoding", "l") == "quicklist"
    assert r.lrange("l", 0, -1) == ["x" * 9000, "b"]
    r.rpush("m", "a", "b")
    r.linsert("m", "after", "a", "y" * 9000)
    assert r.object("encoding", "m") == "quicklist"
    assert r.lrange("m", 0, -1) == ["a", "y" * 9000, "b"]


@pytest.mark.ruvio_only
def test_encoding_by_count(start_server):
    srv = start_server("--list-max-listpack-size", "4")
    c = srv.client()
    c.rpush("l", "1", "2", "3", "4")
    assert c.object("encoding", "l") == "listpack"
    c.rpush("l", "5")
    assert c.object("encoding", "l") == "quicklist"
    c.close()


def test_model_random_ops(r):
    """Random operations on a list spread over many nodes, checked against a Python model."""
    rnd = random.Random(7)
    model = []
    r.config_set("list-max-listpack-size", "4")
    try:
        for step in range(1500):
            op = rnd.randrange(9)
            v = rnd.choice(["a", "b", str(rnd.randrange(-300, 300)), "x" * rnd.randrange(0, 40)])
            if op == 0:
                r.lpush("l", v); model.insert(0, v)
            elif op in (1, 2):
                r.rpush("l", v); model.append(v)
            elif op == 3 and model:
                assert r.lpop("l") == model.pop(0)
            elif op == 4 and model:
                n = rnd.randrange(1, 4)
                got = r.rpop("l", n)
                exp = [model.pop() for _ in range(min(n, len(model)))]
                assert got == exp
            elif op == 5 and model:
                piv = rnd.choice(model)
                r.linsert("l", "after", piv, v)
                model.insert(model.index(piv) + 1, v)
            elif op == 6 and model:
                cnt = rnd.randrange(-2, 3)
                exp_removed = 0
                if cnt >= 0:
                    lim = cnt or len(model)
                    i = 0
                    while i < len(model) and exp_removed < lim:
                        if model[i] == v:
                            model.pop(i); exp_removed += 1
                        else:
                            i += 1
                else:
                    i = len(model) - 1
                    while i >= 0 and exp_removed < -cnt:
                        if model[i] == v:
                            model.pop(i); exp_removed += 1
                        i -= 1
                assert r.lrem("l", cnt, v) == exp_removed
            elif op == 7 and model:
                i = rnd.randrange(-len(model), len(model))
                r.lset("l", i, v); model[i] = v
            elif op == 8 and len(model) > 10 and rnd.random() < 0.1:
                a, b = rnd.randrange(0, 5), rnd.randrange(-5, -1)
                r.ltrim("l", a, b)
                model = model[a:len(model) + b + 1]
            if step % 50 == 0:
                assert r.lrange("l", 0, -1) == model
                assert r.llen("l") == len(model)
                if model:
                    i = rnd.randrange(len(model))
                    assert r.lindex("l", i) == model[i]
                    assert r.lindex("l", -1 - i) == model[-1 - i]
        assert r.lrange("l", 0, -1) == model
    finally:
        r.config_set("list-max-listpack-size", "-2")
