"""ACL users and rules, AUTH/HELLO, requirepass, `user` config lines, rename-command and protected mode.

Most tests run against redis-server too (RUVIO_TARGET=redis). Debian's redis-server is 7.0, whose NOPERM
texts predate 7.2's; ruvio answers 7.2's, so the NOPERM assertions accept 7.0's wording only on Redis. Under
ruvio the module's server has two shards, and the cross-shard tests use the second port."""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import time

import pytest
import redis

from conftest import IS_REDIS, REDIS_BIN, RUVIO_BIN, RawConn, RespError, launch

SHARDS = 1 if IS_REDIS else 2


@pytest.fixture(scope="module")
def srv():
    if os.environ.get("RUVIO_ADDR"):
        pytest.skip("needs its own server process (RUVIO_ADDR set)")
    s = launch([] if IS_REDIS else ["--shards", SHARDS])
    yield s
    s.stop()
    shutil.rmtree(s.workdir, ignore_errors=True)


@pytest.fixture(autouse=True)
def clean(request):
    if "srv" not in request.fixturenames:
        yield
        return
    s = request.getfixturevalue("srv")

    def reset():
        a = s.raw()
        a.cmd("AUTH", "default", "pw")       # tests that set a default password use "pw"
        for u in a.cmd("ACL", "USERS"):
            if u != b"default":
                a.cmd("ACL", "DELUSER", u)
        a.cmd("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all")
        a.cmd("ACL", "LOG", "RESET")
        a.close()
        for p in s.ports:
            c = s.client(port=p)
            c.flushall()
            c.close()

    reset()
    yield
    reset()


def raw(srv, port=None):
    return srv.raw(port=port)


def login(srv, user, password, port=None):
    c = srv.raw(port=port)
    assert c.cmd("AUTH", user, password) == "OK"
    return c


def sha(p):
    return hashlib.sha256(p.encode()).hexdigest()


def key_on_port(srv, port_index, prefix="k"):
    """A key owned by the shard listening on srv.ports[port_index] (any key on one shard)."""
    if SHARDS == 1:
        return prefix + "0"
    c = srv.client(port=srv.ports[port_index])
    for i in range(10000):
        k = "%s%d" % (prefix, i)
        slot = c.execute_command("CLUSTER", "KEYSLOT", k)
        lo = port_index * 16384 // SHARDS
        hi = (port_index + 1) * 16384 // SHARDS - 1
        if lo <= slot <= hi:
            c.close()
            return k
    raise AssertionError("no key found")


_TAGS = {}


def K(srv, name, port_index=0):
    """name inside a hash tag owned by shard port_index, so a plain command needs no redirection."""
    if SHARDS == 1:
        return name
    if port_index not in _TAGS:
        _TAGS[port_index] = key_on_port(srv, port_index, "t")
    return "{%s}%s" % (_TAGS[port_index], name)


def assert_noperm_cmd(err, user, cmd):
    assert isinstance(err, RespError), err
    if IS_REDIS and err.startswith("NOPERM this user"):
        assert err == "NOPERM this user has no permissions to run the '%s' command" % cmd
    else:
        assert err == "NOPERM User %s has no permissions to run the '%s' command" % (user, cmd)


def assert_noperm_key(err):
    assert isinstance(err, RespError), err
    assert err in ("NOPERM No permissions to access a key",
                   "NOPERM this user has no permissions to access one of the keys used as arguments")


def assert_noperm_chan(err):
    assert isinstance(err, RespError), err
    assert err in ("NOPERM No permissions to access a channel",
                   "NOPERM this user has no permissions to access one of the channels used as arguments")


WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "NOAUTH Authentication required."


# ---------------------------------------------------------------------------------------------------------------
# users and the description commands

def test_default_user(srv):
    c = raw(srv)
    assert c.cmd("ACL", "LIST") == [b"user default on nopass ~* &* +@all"]
    assert c.cmd("ACL", "USERS") == [b"default"]
    assert c.cmd("ACL", "WHOAMI") == b"default"
    u = c.cmd("ACL", "GETUSER", "default")
    d = dict(zip(u[::2], u[1::2]))
    assert d[b"flags"] == [b"on", b"nopass"]
    assert d[b"passwords"] == []
    assert d[b"commands"] == b"+@all"
    assert d[b"keys"] == b"~*"
    assert d[b"channels"] == b"&*"


def test_new_user_is_off_with_nothing(srv):
    c = raw(srv)
    assert c.cmd("ACL", "SETUSER", "bob") == "OK"
    assert b"user bob off resetchannels -@all" in c.cmd("ACL", "LIST")
    assert c.cmd("ACL", "USERS") == [b"bob", b"default"]
    u = c.cmd("ACL", "GETUSER", "bob")
    d = dict(zip(u[::2], u[1::2]))
    assert d[b"flags"] == [b"off"]
    assert d[b"commands"] == b"-@all"
    assert d[b"keys"] == b""
    assert d[b"channels"] == b""
    assert c.cmd("ACL", "GETUSER", "nosuch") is None


def test_list_format(srv):
    c = raw(srv)
    assert c.cmd("ACL", "SETUSER", "alice", "on", ">p1", "~cached:*", "%R~r:*", "&ch*", "+get", "-@all",
                 "+set") == "OK"
    line = "user alice on #%s ~cached:* %%R~r:* resetchannels &ch* -@all +set" % sha("p1")
    assert c.cmd("ACL", "LIST") == [line.encode(), b"user default on nopass ~* &* +@all"]
    assert c.cmd("ACL", "SETUSER", "bob", "+@all", "-@dangerous", "~*", "allchannels") == "OK"
    assert b"user bob off ~* &* +@all -@dangerous" in c.cmd("ACL", "LIST")


def test_setuser_errors(srv):
    c = raw(srv)
    assert c.cmd("ACL", "SETUSER", "x", "foo") == "ERR Error in ACL SETUSER modifier 'foo': Syntax error"
    assert c.cmd("ACL", "SETUSER", "x", "+nosuch") == \
        "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    assert c.cmd("ACL", "SETUSER", "x", "+@nosuch") == \
        "ERR Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"
    for r in ("#abc", "!abc", "#" + "A" * 64):
        assert c.cmd("ACL", "SETUSER", "x", r) == \
            "ERR Error in ACL SETUSER modifier '%s': The password hash must be exactly 64 characters and " \
            "contain only lowercase hexadecimal characters" % r
    assert c.cmd("ACL", "SETUSER", "x", "%X~a") == "ERR Error in ACL SETUSER modifier '%X~a': Syntax error"
    assert c.cmd("ACL", "SETUSER", "a b", "on") == "ERR Usernames can't contain spaces or null characters"
    err = c.cmd("ACL", "SETUSER", "x", "~*", "~foo")
    assert err.startswith("ERR Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern")
    err = c.cmd("ACL", "SETUSER", "x", "&*", "&foo")
    assert err.startswith("ERR Error in ACL SETUSER modifier '&foo': Adding a pattern after the * pattern")
    # all-or-nothing: a failing rule leaves the user as it was
    assert c.cmd("ACL", "SETUSER", "y", "on", "+get", "bogus").startswith("ERR")
    assert c.cmd("ACL", "GETUSER", "y") is None


def test_deluser(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "a")
    c.cmd("ACL", "SETUSER", "b")
    assert c.cmd("ACL", "DELUSER", "a", "b", "nosuch") == 2
    assert c.cmd("ACL", "DELUSER", "nosuch") == 0
    assert c.cmd("ACL", "DELUSER", "default") == "ERR The 'default' user cannot be removed"
    assert c.cmd("ACL", "USERS") == [b"default"]


def test_acl_cat(srv):
    c = raw(srv)
    cats = [x.decode() for x in c.cmd("ACL", "CAT")]
    for want in ("keyspace", "read", "write", "string", "list", "hash", "set", "sortedset", "bitmap",
                 "hyperloglog", "geo", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
                 "connection", "transaction", "scripting", "stream"):
        assert want in cats
    string = [x.decode() for x in c.cmd("ACL", "CAT", "string")]
    assert "get" in string and "set" in string and "lpush" not in string
    dangerous = [x.decode() for x in c.cmd("ACL", "CAT", "dangerous")]
    assert "flushall" in dangerous and "keys" in dangerous and "get" not in dangerous
    assert c.cmd("ACL", "CAT", "nosuch") == "ERR Unknown category 'nosuch'"


def test_genpass(srv):
    c = raw(srv)
    p = c.cmd("ACL", "GENPASS")
    assert re.fullmatch(rb"[0-9a-f]{64}", p)
    assert p != c.cmd("ACL", "GENPASS")
    assert re.fullmatch(rb"[0-9a-f]{8}", c.cmd("ACL", "GENPASS", "32"))
    assert re.fullmatch(rb"[0-9a-f]{2}", c.cmd("ACL", "GENPASS", "5"))
    for bad in ("0", "-1", "4097"):
        assert c.cmd("ACL", "GENPASS", bad) == "ERR ACL GENPASS argument must be the number of bits for the " \
            "output password, a positive number up to 4096"
    assert c.cmd("ACL", "GENPASS", "x") == "ERR value is not an integer or out of range"


def test_help_and_unknown_subcommand(srv):
    c = raw(srv)
    h = c.cmd("ACL", "HELP")
    assert h[0].startswith("ACL <subcommand>") and any("SETUSER" in x for x in h)
    assert c.cmd("ACL", "NOSUCH") == "ERR unknown subcommand 'NOSUCH'. Try ACL HELP."


# ---------------------------------------------------------------------------------------------------------------
# authentication

def test_auth_forms(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "alice", "on", ">secret", "+@all", "~*")
    assert c.cmd("AUTH", "alice", "wrong") == WRONGPASS
    assert c.cmd("AUTH", "nosuch", "secret") == WRONGPASS
    assert c.cmd("AUTH", "alice", "secret") == "OK"
    assert c.cmd("ACL", "WHOAMI") == b"alice"
    # AUTH <password> authenticates the default user, which has no password here
    assert c.cmd("AUTH", "x") == "ERR AUTH <password> called without any password configured for the " \
        "default user. Are you sure your configuration is correct?"
    assert c.cmd("AUTH", "default", "anything") == "OK"   # nopass: any password
    assert c.cmd("ACL", "WHOAMI") == b"default"
    h = c.cmd("HELLO", "3", "AUTH", "alice", "secret")
    assert h[b"proto"] == 3 if isinstance(h, dict) else True
    assert c.cmd("ACL", "WHOAMI") == b"alice"
    assert c.cmd("HELLO", "2", "AUTH", "alice", "bad") == WRONGPASS
    assert c.cmd("ACL", "WHOAMI") == b"alice"
    assert c.cmd("RESET") == "RESET"
    assert c.cmd("ACL", "WHOAMI") == b"default"


def test_redis_py_username_password(srv):
    srv.client().execute_command("ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@read", "+@write",
                                 "+ping")
    r = srv.client(username="app", password="pw")
    k = "app:" + key_on_port(srv, 0)
    assert r.set(k, "v") is True
    assert r.get(k) == "v"
    with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
        srv.client(username="app", password="nope").ping()


def test_on_off(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "bob", ">pw", "+@all", "~*")
    assert c.cmd("AUTH", "bob", "pw") == WRONGPASS          # off
    c.cmd("ACL", "SETUSER", "bob", "on")
    assert c.cmd("AUTH", "bob", "pw") == "OK"


def test_password_rules(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "u", "on", ">a", ">b", "+@all")

    def pw():
        u = c.cmd("ACL", "GETUSER", "u")
        return dict(zip(u[::2], u[1::2]))[b"passwords"]

    assert sorted(pw()) == sorted([sha("a").encode(), sha("b").encode()])
    assert raw(srv).cmd("AUTH", "u", "a") == "OK"
    assert raw(srv).cmd("AUTH", "u", "b") == "OK"
    c.cmd("ACL", "SETUSER", "u", "<a")
    assert raw(srv).cmd("AUTH", "u", "a") == WRONGPASS
    assert c.cmd("ACL", "SETUSER", "u", "<zzz") == "ERR Error in ACL SETUSER modifier '<zzz': The password " \
        "you are trying to remove from the user does not exist"
    c.cmd("ACL", "SETUSER", "u", "#" + sha("c"))
    assert raw(srv).cmd("AUTH", "u", "c") == "OK"
    c.cmd("ACL", "SETUSER", "u", "!" + sha("c"))
    assert raw(srv).cmd("AUTH", "u", "c") == WRONGPASS
    c.cmd("ACL", "SETUSER", "u", "nopass")
    assert pw() == []
    assert raw(srv).cmd("AUTH", "u", "whatever") == "OK"
    c.cmd("ACL", "SETUSER", "u", "resetpass")
    assert raw(srv).cmd("AUTH", "u", "whatever") == WRONGPASS
    assert raw(srv).cmd("AUTH", "u", "b") == WRONGPASS


# ---------------------------------------------------------------------------------------------------------------
# command rules

def test_command_rules(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "&*", "+get")
    c = login(srv, "u", "p")
    x, l = K(srv, "x"), K(srv, "l")
    assert c.cmd("GET", x) is None
    assert_noperm_cmd(c.cmd("SET", x, "1"), "u", "set")
    admin.cmd("ACL", "SETUSER", "u", "+@string")
    assert c.cmd("SET", x, "1") == "OK"
    assert_noperm_cmd(c.cmd("LPUSH", l, "1"), "u", "lpush")
    admin.cmd("ACL", "SETUSER", "u", "-@string")
    assert_noperm_cmd(c.cmd("GET", x), "u", "get")
    admin.cmd("ACL", "SETUSER", "u", "allcommands")
    assert c.cmd("LPUSH", l, "1") == 1
    admin.cmd("ACL", "SETUSER", "u", "-lpush")
    assert_noperm_cmd(c.cmd("LPUSH", l, "1"), "u", "lpush")
    assert c.cmd("RPUSH", l, "1") == 2
    admin.cmd("ACL", "SETUSER", "u", "nocommands")
    assert_noperm_cmd(c.cmd("RPUSH", l, "1"), "u", "rpush")
    assert_noperm_cmd(c.cmd("PING"), "u", "ping")
    # AUTH, HELLO, QUIT and RESET stay allowed
    assert c.cmd("AUTH", "u", "p") == "OK"
    admin.cmd("ACL", "SETUSER", "u", "+@all", "-@dangerous")
    assert_noperm_cmd(c.cmd("FLUSHALL"), "u", "flushall")
    assert_noperm_cmd(c.cmd("KEYS", "*"), "u", "keys")
    assert c.cmd("GET", x) == b"1"


def test_subcommand_rules(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "-@all", "+config|get", "+client")
    c = login(srv, "u", "p")
    assert c.cmd("CONFIG", "GET", "maxclients")[0] == b"maxclients"
    assert_noperm_cmd(c.cmd("CONFIG", "SET", "maxclients", "100"), "u", "config|set")
    assert isinstance(c.cmd("CLIENT", "ID"), int)
    admin.cmd("ACL", "SETUSER", "u", "-client|id")
    assert_noperm_cmd(c.cmd("CLIENT", "ID"), "u", "client|id")
    assert c.cmd("CLIENT", "GETNAME") is None


def test_allcommands_plus_minus_rule_text(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "u", "+@all", "-get", "-@dangerous")
    u = c.cmd("ACL", "GETUSER", "u")
    assert sorted(dict(zip(u[::2], u[1::2]))[b"commands"].split()) == [b"+@all", b"-@dangerous", b"-get"]
    c.cmd("ACL", "SETUSER", "u", "nocommands", "+set")
    u = c.cmd("ACL", "GETUSER", "u")
    assert dict(zip(u[::2], u[1::2]))[b"commands"] == b"-@all +set"


def test_denied_inside_multi_aborts_exec(srv):
    raw(srv).cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "+multi", "+exec", "+get")
    c = login(srv, "u", "p")
    x = K(srv, "x")
    assert c.cmd("MULTI") == "OK"
    assert c.cmd("GET", x) == "QUEUED"
    assert_noperm_cmd(c.cmd("SET", x, "1"), "u", "set")
    assert c.cmd("EXEC").startswith("EXECABORT")


def test_exec_checks_acls_again(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "+multi", "+exec", "+get", "+set")
    c = login(srv, "u", "p")
    x = K(srv, "x")
    assert c.cmd("MULTI") == "OK"
    assert c.cmd("SET", x, "1") == "QUEUED"
    assert c.cmd("GET", x) == "QUEUED"
    admin.cmd("ACL", "SETUSER", "u", "-set")
    res = c.cmd("EXEC")
    pre = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " \
          "This command is no longer allowed for the following reason: "
    assert res[0] in (pre + "User u has no permissions to run the 'set' command",
                      pre + "no permission to execute the command or subcommand")   # Redis 7.0's words
    assert res[1] is None
    log = [dict(zip(e[::2], e[1::2])) for e in admin.cmd("ACL", "LOG")]
    assert log[0][b"object"] == b"set" and log[0][b"context"] == b"multi"


def test_reset_rule(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "&*", "+@all")
    c.cmd("ACL", "SETUSER", "u", "reset")
    line = [x for x in c.cmd("ACL", "LIST") if x.startswith(b"user u ")][0]
    assert line == b"user u off sanitize-payload resetchannels -@all"
    u = c.cmd("ACL", "GETUSER", "u")
    assert dict(zip(u[::2], u[1::2]))[b"flags"] == [b"off", b"sanitize-payload"]


def test_dryrun(srv):
    c = raw(srv)
    c.cmd("ACL", "SETUSER", "u", "on", "nopass", "~k*", "+get")
    assert c.cmd("ACL", "DRYRUN", "u", "GET", "k1") == "OK"
    assert c.cmd("ACL", "DRYRUN", "u", "SET", "k1", "v").endswith(b"permissions to run the 'set' command")
    assert c.cmd("ACL", "DRYRUN", "u", "GET", "x").endswith(b"permissions to access the 'x' key")
    assert c.cmd("ACL", "DRYRUN", "nosuch", "GET", "x") == "ERR User 'nosuch' not found"
    assert c.cmd("ACL", "DRYRUN", "u", "NOSUCH") == "ERR Command 'NOSUCH' not found"


# ---------------------------------------------------------------------------------------------------------------
# keys and channels

def test_key_patterns(srv):
    admin = raw(srv)
    k = key_on_port(srv, 0, "foo:")
    other = key_on_port(srv, 0, "bar:")
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~foo:*")
    c = login(srv, "u", "p")
    assert c.cmd("SET", k, "1") == "OK"
    assert c.cmd("GET", k) == b"1"
    assert_noperm_key(c.cmd("GET", other))
    assert_noperm_key(c.cmd("SET", other, "1"))
    if SHARDS == 1:
        assert_noperm_key(c.cmd("MSET", k, "1", other, "2"))
    assert c.cmd("PING") == "PONG"                     # keyless commands need no pattern
    admin.cmd("ACL", "SETUSER", "u", "resetkeys")
    assert_noperm_key(c.cmd("GET", k))
    admin.cmd("ACL", "SETUSER", "u", "allkeys")
    assert c.cmd("GET", other) is None
    assert_noperm_key(admin.cmd("ACL", "SETUSER", "u", "resetkeys", "%R~foo:*") and c.cmd("SET", k, "2"))


def test_read_write_key_patterns(srv):
    admin = raw(srv)
    r = key_on_port(srv, 0, "r:")
    w = key_on_port(srv, 0, "w:")
    admin.cmd("SET", r, "x")
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "%R~r:*", "%W~w:*")
    c = login(srv, "u", "p")
    assert c.cmd("GET", r) == b"x"
    assert_noperm_key(c.cmd("SET", r, "y"))
    assert c.cmd("SET", w, "y") == "OK"
    assert_noperm_key(c.cmd("GET", w))
    u = admin.cmd("ACL", "GETUSER", "u")
    assert dict(zip(u[::2], u[1::2]))[b"keys"] == b"%R~r:* %W~w:*"


def test_channel_patterns(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~*", "resetchannels", "&news.*")
    c = login(srv, "u", "p")
    assert c.cmd("PUBLISH", "news.1", "hi") == 0
    assert_noperm_chan(c.cmd("PUBLISH", "sports", "hi"))
    assert_noperm_chan(c.cmd("SUBSCRIBE", "sports"))
    assert_noperm_chan(c.cmd("PSUBSCRIBE", "news.1*"))    # patterns must match literally
    s = login(srv, "u", "p")
    assert s.cmd("PSUBSCRIBE", "news.*") == [b"psubscribe", b"news.*", 1]
    s2 = login(srv, "u", "p")
    assert s2.cmd("SUBSCRIBE", "news.x") == [b"subscribe", b"news.x", 1]
    admin.cmd("ACL", "SETUSER", "u", "allchannels")
    assert c.cmd("PUBLISH", "sports", "hi") == 0
    u = admin.cmd("ACL", "GETUSER", "u")
    assert dict(zip(u[::2], u[1::2]))[b"channels"] == b"&*"


def test_subscriber_losing_its_channel_is_closed(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~*", "&*")
    c = login(srv, "u", "p")
    assert c.cmd("SUBSCRIBE", "news") == [b"subscribe", b"news", 1]
    p = login(srv, "u", "p")
    assert p.cmd("PSUBSCRIBE", "sp*") == [b"psubscribe", b"sp*", 1]
    admin.cmd("ACL", "SETUSER", "u", "resetchannels", "&new*", "&sp*")    # both still allowed
    assert c.nothing_pending(0.2) and p.nothing_pending(0.1)
    assert admin.cmd("PUBLISH", "news", "m") >= 1
    assert c.read_reply() == [b"message", b"news", b"m"]
    admin.cmd("ACL", "SETUSER", "u", "resetchannels", "&sp*")              # news revoked
    assert c.read_until_closed(timeout=5) == b""
    assert p.nothing_pending(0.2)
    admin.cmd("ACL", "SETUSER", "u", "resetchannels", "&spam")             # sp* no longer literally allowed
    assert p.read_until_closed(timeout=5) == b""


# ---------------------------------------------------------------------------------------------------------------
# lifecycle: deleted/disabled users, ACL LOG

def test_deleted_user_is_disconnected(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~*")
    c = login(srv, "u", "p")
    assert c.cmd("PING") == "PONG"
    assert admin.cmd("ACL", "DELUSER", "u") == 1
    with pytest.raises(Exception):
        c.cmd("PING")
        c.cmd("PING")


def test_disabled_user_keeps_open_connections(srv):
    """As Redis: `off` stops new logins; connections already logged in go on working."""
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~*")
    c = login(srv, "u", "p")
    admin.cmd("ACL", "SETUSER", "u", "off")
    assert c.cmd("PING") == "PONG"
    assert raw(srv).cmd("AUTH", "u", "p") == WRONGPASS


def test_client_list_and_kill_by_user(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "+@all", "~*")
    c = login(srv, "u", "p")
    assert b" user=u " in c.cmd("CLIENT", "INFO")
    assert b" user=default " in admin.cmd("CLIENT", "INFO")
    assert admin.cmd("CLIENT", "KILL", "USER", "nosuch") == "ERR No such user 'nosuch'"
    assert admin.cmd("CLIENT", "KILL", "USER", "u") == 1
    with pytest.raises(Exception):
        c.cmd("PING")
        c.cmd("PING")
    assert admin.cmd("PING") == "PONG"


def test_acl_log(srv):
    admin = raw(srv)
    admin.cmd("ACL", "SETUSER", "u", "on", ">p", "~k*", "+get")
    assert raw(srv).cmd("AUTH", "u", "bad") == WRONGPASS
    c = login(srv, "u", "p")
    c.cmd("SET", "k", "1")
    c.cmd("SET", "k", "1")
    c.cmd("GET", "other")
    log = admin.cmd("ACL", "LOG")
    entries = [dict(zip(e[::2], e[1::2])) for e in log]
    assert [(e[b"reason"], e[b"object"]) for e in entries] == [(b"key", b"other"), (b"command", b"set"),
                                                               (b"auth", b"AUTH")]
    assert entries[1][b"count"] == 2
    assert entries[0][b"username"] == b"u" and entries[0][b"context"] == b"toplevel"
    assert b"addr=" in entries[0][b"client-info"]
    assert len(admin.cmd("ACL", "LOG", "1")) == 1
    assert admin.cmd("ACL", "LOG", "RESET") == "OK"
    assert admin.cmd("ACL", "LOG") == []


# ---------------------------------------------------------------------------------------------------------------
# requirepass and the default user

def test_requirepass_is_the_default_users_password(start_server):
    s = start_server("--requirepass", "s3cret")
    c = s.raw()
    assert c.cmd("GET", "x") == NOAUTH
    assert c.cmd("ACL", "WHOAMI") == NOAUTH
    assert c.cmd("AUTH", "wrong") == WRONGPASS
    assert c.cmd("AUTH", "s3cret") == "OK"
    u = c.cmd("ACL", "GETUSER", "default")
    d = dict(zip(u[::2], u[1::2]))
    assert d[b"flags"] == [b"on"] and d[b"passwords"] == [sha("s3cret").encode()]
    c2 = s.raw()
    assert c2.cmd("AUTH", "default", "s3cret") == "OK"
    # CONFIG SET requirepass changes the default user's password
    assert c.cmd("CONFIG", "SET", "requirepass", "other") == "OK"
    assert s.raw().cmd("AUTH", "s3cret") == WRONGPASS
    assert s.raw().cmd("AUTH", "other") == "OK"
    assert c.cmd("CONFIG", "SET", "requirepass", "") == "OK"
    assert s.raw().cmd("GET", "x") is None             # nopass again: no AUTH needed
    u = c.cmd("ACL", "GETUSER", "default")
    assert dict(zip(u[::2], u[1::2]))[b"flags"] == [b"on", b"nopass"]


def test_default_user_password_via_setuser(srv):
    admin = raw(srv)
    assert admin.cmd("ACL", "SETUSER", "default", "resetpass", ">pw") == "OK"
    fresh = raw(srv)
    assert fresh.cmd("PING") == NOAUTH
    assert fresh.cmd("AUTH", "pw") == "OK"
    assert admin.cmd("PING") == "PONG"                 # already logged in
    admin.cmd("ACL", "SETUSER", "default", "nopass")
    assert raw(srv).cmd("PING") == "PONG"


def test_hello_needs_auth(srv):
    raw(srv).cmd("ACL", "SETUSER", "default", "resetpass", ">pw")
    c = raw(srv)
    assert c.cmd("HELLO", "2").startswith("NOAUTH HELLO must be called with the client already authenticated")
    h = c.cmd("HELLO", "2", "AUTH", "default", "pw")
    assert b"proto" in h
    assert c.cmd("PING") == "PONG"


def test_unauthenticated_cannot_read_config(srv):
    raw(srv).cmd("ACL", "SETUSER", "default", "resetpass", ">pw")
    c = raw(srv)
    for cmd in (("CONFIG", "GET", "requirepass"), ("CLIENT", "LIST"), ("COMMAND", "COUNT"),
                ("ACL", "LIST")):
        assert c.cmd(*cmd) == NOAUTH


# ---------------------------------------------------------------------------------------------------------------
# node-wide: every shard port

@pytest.mark.ruvio_only
def test_setuser_applies_on_every_shard(srv):
    p0, p1 = srv.ports
    a0 = srv.raw(port=p0)
    assert a0.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "+get", "+set") == "OK"
    c1 = login(srv, "u", "p", port=p1)             # created on shard 0, used on shard 1 at once
    k1 = key_on_port(srv, 1)
    assert c1.cmd("SET", k1, "v") == "OK"
    assert srv.raw(port=p1).cmd("ACL", "LIST") == a0.cmd("ACL", "LIST")
    # a change made on shard 1 is seen by shard 0's next command
    a1 = srv.raw(port=p1)
    c0 = login(srv, "u", "p", port=p0)
    k0 = key_on_port(srv, 0)
    assert c0.cmd("GET", k0) is None
    assert a1.cmd("ACL", "SETUSER", "u", "-get") == "OK"
    assert_noperm_cmd(c0.cmd("GET", k0), "u", "get")
    assert a1.cmd("ACL", "SETUSER", "u", "resetkeys", "~x*") == "OK"
    assert_noperm_key(c0.cmd("SET", k0, "v"))
    # deleting on shard 1 closes the user's connection on shard 0
    assert a1.cmd("ACL", "DELUSER", "u") == 1
    with pytest.raises(Exception):
        c0.cmd("PING")
        c0.cmd("PING")
    # requirepass-style default password set on one shard guards the other
    assert a0.cmd("ACL", "SETUSER", "default", "resetpass", ">pw") == "OK"
    fresh = srv.raw(port=p1)
    assert fresh.cmd("PING") == NOAUTH
    assert fresh.cmd("AUTH", "pw") == "OK"
    # the ACL log is node-wide
    assert fresh.cmd("AUTH", "u", "x") == WRONGPASS
    log = a0.cmd("ACL", "LOG")
    assert any(dict(zip(e[::2], e[1::2]))[b"username"] == b"u" for e in log)


@pytest.mark.ruvio_only
def test_many_setusers_while_serving(srv):
    """Snapshots are replaced while other shards serve: no crash, the last rules win everywhere."""
    p0, p1 = srv.ports
    a0 = srv.raw(port=p0)
    a0.cmd("ACL", "SETUSER", "u", "on", ">p", "~*", "+@all")
    c1 = login(srv, "u", "p", port=p1)
    k1 = key_on_port(srv, 1)
    for i in range(300):
        a0.cmd("ACL", "SETUSER", "u", "-get" if i % 2 else "+get")
        r = c1.cmd("GET", k1)
        if i % 2:
            assert_noperm_cmd(r, "u", "get")
        else:
            assert r is None


# ---------------------------------------------------------------------------------------------------------------
# config file: user lines and rename-command

def _conf(tmp_path, text):
    p = tmp_path / "ruvio.conf"
    p.write_text(text)
    return str(p)


def test_user_lines_in_config(start_server, tmp_path):
    conf = _conf(tmp_path, "user alice on >pw ~a* +get +set\nuser bob off nopass +@all\n")
    extra = [] if IS_REDIS else ["--shards", "2"]
    # the config file goes first on the command line (redis-server and ruvio agree on that)
    binary = REDIS_BIN if IS_REDIS else RUVIO_BIN
    argv = [binary, conf, "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}"] + extra
    if IS_REDIS:
        argv += ["--save", "", "--appendonly", "no"]
    s = start_server(argv=argv, nports=SHARDS)
    for i, port in enumerate(s.ports):
        c = login(s, "alice", "pw", port=port)
        a1, b1 = key_on_port(s, i, "a"), key_on_port(s, i, "b")
        assert c.cmd("GET", a1) is None
        assert_noperm_key(c.cmd("GET", b1))
        assert_noperm_cmd(c.cmd("DEL", a1), "alice", "del")
        assert c.cmd("SET", a1, "v") == "OK"
        assert s.raw(port=port).cmd("AUTH", "bob", "x") == WRONGPASS
    lst = s.raw().cmd("ACL", "LIST")
    alice = [x for x in lst if x.startswith(b"user alice ")][0].split()
    assert alice[:5] == [b"user", b"alice", b"on", b"#" + sha("pw").encode(), b"~a*"]
    assert sorted(alice[5:]) == [b"+get", b"+set", b"-@all", b"resetchannels"]
    assert b"user bob off nopass resetchannels +@all" in lst


@pytest.mark.ruvio_only
def test_bad_user_line_stops_startup(start_server, tmp_path):
    conf = _conf(tmp_path, "user alice on +nosuchcmd\n")
    s = start_server(argv=[RUVIO_BIN, conf, "--port", "{port}", "--dir", "{dir}"], expect_fail=True)
    assert s.returncode == 1
    assert "nosuchcmd" in s.stderr() and "Unknown command or category name in ACL" in s.stderr()
    conf = _conf(tmp_path, "user alice on\nuser alice +get\n")
    s = start_server(argv=[RUVIO_BIN, conf, "--port", "{port}", "--dir", "{dir}"], expect_fail=True)
    assert s.returncode == 1 and "Duplicate user found" in s.stderr()


def test_rename_command(start_server, tmp_path):
    conf = _conf(tmp_path, 'rename-command FLUSHALL ""\nrename-command CONFIG mycfg\n')
    binary = REDIS_BIN if IS_REDIS else RUVIO_BIN
    argv = [binary, conf, "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}"]
    if IS_REDIS:
        argv += ["--save", "", "--appendonly", "no"]
    s = start_server(argv=argv)
    c = s.raw()
    assert c.cmd("FLUSHALL") == "ERR unknown command 'FLUSHALL', with args beginning with: "
    assert c.cmd("CONFIG", "GET", "maxclients") == \
        "ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxclients' "
    assert c.cmd("MYCFG", "GET", "maxclients") == [b"maxclients", b"10000"]
    assert c.cmd("mycfg", "SET", "maxclients", "500") == "OK"
    assert c.cmd("SET", "k", "v") == "OK"
    assert c.cmd("FLUSHDB") == "OK"                       # only FLUSHALL is gone


@pytest.mark.ruvio_only
def test_rename_command_survives_restart_with_wal(start_server, tmp_path):
    """Renamed writes are logged under the real name, so recovery replays them."""
    conf = _conf(tmp_path, "rename-command SET put\n")
    datadir = str(tmp_path / "data")
    os.mkdir(datadir)
    argv = [RUVIO_BIN, conf, "--port", "{port}", "--bind", "127.0.0.1", "--dir", datadir,
            "--durability", "always"]
    s = start_server(argv=argv)
    c = s.raw()
    assert c.cmd("SET", "k", "v").startswith("ERR unknown command 'SET'")
    assert c.cmd("PUT", "k", "v") == "OK"
    s.stop()
    s2 = start_server(argv=argv)
    assert s2.raw().cmd("GET", "k") == b"v"


# ---------------------------------------------------------------------------------------------------------------
# protected mode

def _non_loopback_ipv4():
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", line)
        if m and not m.group(1).startswith("127."):
            return m.group(1)
    return None


DENIED_PREFIX = "DENIED Redis is running in protected mode because protected mode is enabled"
DENIED = (
    "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the "
    "default user. In this mode connections are only accepted from the loopback interface. If you want to connect "
    "from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode "
    "sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the "
    "same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. "
    "Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by "
    "editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the "
    "server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' "
    "option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above "
    "things in order for the server to start accepting connections from the outside.\r\n").encode()


def _start_unbound(start_server, *extra):
    """A server with no `bind` at all (all addresses), so protected mode applies."""
    if IS_REDIS:
        argv = [REDIS_BIN, "--port", "{port}", "--dir", "{dir}", "--save", "", "--appendonly", "no"]
    else:
        argv = [RUVIO_BIN, "--port", "{port}", "--dir", "{dir}"]
    return start_server(argv=argv + list(extra))


def test_protected_mode(start_server):
    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    s = _start_unbound(start_server)
    # loopback clients are served
    assert s.raw().cmd("PING") == "PONG"
    # others get Redis's DENIED text and are closed
    c = s.raw()
    c.close()
    far = RawConn(ip, s.port)
    far.send(b"PING\r\n")
    data = far.read_until_closed(timeout=5)
    assert data == DENIED, data[:200]
    far.close()
    # with a password for the default user they may connect (and must AUTH)
    s.raw().cmd("CONFIG", "SET", "requirepass", "pw")
    far = RawConn(ip, s.port)
    assert far.cmd("PING") == NOAUTH
    assert far.cmd("AUTH", "pw") == "OK"
    far.close()
    s.raw().cmd("AUTH", "pw")
    # protected-mode no: no password needed from anywhere
    a = s.raw()
    a.cmd("AUTH", "pw")
    assert a.cmd("CONFIG", "SET", "requirepass", "") == "OK"
    a.cmd("CONFIG", "SET", "protected-mode", "no")
    far = RawConn(ip, s.port)
    assert far.cmd("PING") == "PONG"
    far.close()


def test_protected_mode_lifted_by_explicit_bind(start_server):
    """Ruvio follows its spec (Redis 6's rule): an explicit bind serves other hosts without a password.
    Redis 7 keeps protected mode whatever bind says; this test is Ruvio's."""
    if IS_REDIS:
        pytest.skip("Redis 7 applies protected mode whatever bind says")
    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    s = start_server(argv=[RUVIO_BIN, "--port", "{port}", "--dir", "{dir}", "--bind", "127.0.0.1", ip])
    far = RawConn(ip, s.port)
    assert far.cmd("PING") == "PONG"
    far.close()
    assert s.raw().cmd("CONFIG", "SET", "protected-mode", "yes") == "OK"
    far = RawConn(ip, s.port)
    assert far.cmd("PING") == "PONG"
    far.close()


# ---------------------------------------------------------------------------------------------------------------
# aclfile, ACL LOAD, ACL SAVE

NO_ACLFILE = ("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the "
              "ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) "
              "in order to store users in the Redis configuration.")
ACL_WARNING = ". WARNING: ACL errors detected, no change to the previously active ACL rules was performed"


def test_acl_load_save_without_aclfile(srv):
    c = raw(srv)
    assert c.cmd("ACL", "LOAD") == NO_ACLFILE
    assert c.cmd("ACL", "SAVE") == NO_ACLFILE


def _start_with_aclfile(start_server, path, *extra):
    binary = REDIS_BIN if IS_REDIS else RUVIO_BIN
    argv = [binary, "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--aclfile", str(path)]
    if IS_REDIS:
        argv += ["--save", "", "--appendonly", "no"]
    nports = int(extra[extra.index("--shards") + 1]) if "--shards" in extra else 1
    return start_server(argv=argv + list(extra), nports=nports)


def test_aclfile_load_and_save(start_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user alice on >pw ~a* +get\n\nuser bob off\n")
    s = _start_with_aclfile(start_server, path)
    c = s.raw()
    assert c.cmd("ACL", "USERS") == [b"alice", b"bob", b"default"]
    assert login(s, "alice", "pw").cmd("GET", "a1") is None
    # SAVE writes ACL LIST's lines; a restart (or ACL LOAD) reads them back
    assert c.cmd("ACL", "SETUSER", "carol", "on", ">c", "+@all", "~*") == "OK"
    listed = c.cmd("ACL", "LIST")
    assert c.cmd("ACL", "SAVE") == "OK"
    assert path.read_text().splitlines() == [x.decode() for x in listed]
    # LOAD replaces every user with the file's
    path.write_text("user dave on nopass +ping\n")
    assert c.cmd("ACL", "LOAD") == "OK"
    assert c.cmd("ACL", "USERS") == [b"dave", b"default"]
    assert s.raw().cmd("AUTH", "carol", "c") == WRONGPASS
    # errors change nothing
    path.write_text("user dave on +nosuch\n")
    assert c.cmd("ACL", "LOAD") == "ERR %s:1: Error in applying operation '+nosuch': Unknown command or category " \
        "name in ACL%s" % (path, ACL_WARNING)
    path.write_text("user erin on\nfoo bar\n")
    assert c.cmd("ACL", "LOAD") == "ERR %s:2 should start with user keyword followed by the username%s" \
        % (path, ACL_WARNING)
    path.write_text("user erin on\nuser erin off\n")
    assert c.cmd("ACL", "LOAD") == "ERR WARNING: Duplicate user 'erin' found on line 2%s" % ACL_WARNING
    assert c.cmd("ACL", "USERS") == [b"dave", b"default"]
    # the default user is kept unless the file declares it
    path.write_text("user default on >x ~* +@all\n")
    assert c.cmd("ACL", "LOAD") == "OK"
    assert s.raw().cmd("PING") == NOAUTH
    assert c.cmd("ACL", "LIST") == [("user default on #%s ~* resetchannels +@all" % sha("x")).encode()]
    path.unlink()
    assert c.cmd("ACL", "LOAD") == "ERR Error loading ACLs, opening file '%s': No such file or directory" % path


@pytest.mark.ruvio_only
def test_aclfile_on_every_shard_and_startup_errors(start_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user alice on >pw ~* +get\n")
    s = _start_with_aclfile(start_server, path, "--shards", "2")
    assert len(s.ports) == 2
    for port in s.ports:
        assert login(s, "alice", "pw", port=port).cmd("SET", "k", "v").startswith("NOPERM")
    path.write_text("user alice on >pw ~* +get +set\n")
    assert s.raw(port=s.ports[1]).cmd("ACL", "LOAD") == "OK"
    k0 = key_on_port(s, 0)
    assert login(s, "alice", "pw", port=s.ports[0]).cmd("SET", k0, "v") == "OK"
    s.stop()
    missing = tmp_path / "nope.acl"
    f = start_server(argv=[RUVIO_BIN, "--port", "{port}", "--dir", "{dir}", "--aclfile", str(missing)],
                     expect_fail=True)
    assert f.returncode == 1 and "Error loading ACLs, opening file" in f.stderr()
    conf = _conf(tmp_path, "aclfile %s\nuser bob on\n" % path)
    f = start_server(argv=[RUVIO_BIN, conf, "--port", "{port}", "--dir", "{dir}"], expect_fail=True)
    assert f.returncode == 1 and "aclfile" in f.stderr()


@pytest.mark.ruvio_only   # INFO's acl_access_denied_* are Redis 7.2's; the reference here is 7.0
def test_info_stats_acl_denied_counters(start_server):
    srv = start_server()
    c = srv.client()
    c.execute_command("ACL", "SETUSER", "ro", "on", ">pw", "~*", "+get")
    u = srv.client()
    u.execute_command("AUTH", "ro", "pw")
    with pytest.raises(redis.exceptions.ResponseError):
        u.set("k", "v")
    with pytest.raises(redis.exceptions.ResponseError):
        u.execute_command("AUTH", "ro", "wrong")
    st = c.info("stats")
    assert st["acl_access_denied_cmd"] >= 1 and st["acl_access_denied_auth"] >= 1
    assert "acl_access_denied_key" in st and "acl_access_denied_channel" in st
