"""Geo commands on sorted sets: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH[STORE], GEORADIUS[BYMEMBER][_RO]
(docs/commands-geo.md). Every expectation was checked against redis-server 7.0.15."""

import math
import random

import pytest

from conftest import RespError

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
PALERMO = ("13.361389", "38.115556", "Palermo")
CATANIA = ("15.087269", "37.502669", "Catania")
P_COORD = ["13.36138933897018433", "38.11555639549629859"]
C_COORD = ["15.08726745843887329", "37.50266842333162032"]


@pytest.fixture
def g(r):
    """The plain client without redis-py's GEO* reply callbacks (they expect its own keyword arguments)."""
    for name in [k for k in r.response_callbacks if k.upper().startswith("GEO")]:
        del r.response_callbacks[name]
    return r


def sicily(g):
    assert g.execute_command("GEOADD", "Sicily", *PALERMO, *CATANIA) == 2


def err(raw, *args):
    rep = raw.cmd(*args)
    assert isinstance(rep, RespError), rep
    return str(rep)


def test_geoadd_scores_are_redis_geohashes(g):
    sicily(g)
    assert g.type("Sicily") == "zset"
    assert g.zrange("Sicily", 0, -1, withscores=True) == [("Palermo", 3479099956230698.0),
                                                          ("Catania", 3479447370796909.0)]
    assert g.execute_command("GEOADD", "Sicily", *PALERMO) == 0
    assert g.execute_command("GEOADD", "Sicily", "-180", "-85.05112878", "sw") == 1
    assert g.zscore("Sicily", "sw") == 0


def test_geoadd_options(g):
    sicily(g)
    assert g.execute_command("GEOADD", "Sicily", "XX", "CH", "13.5", "38.1", "Palermo", "1", "1", "new") == 1
    assert g.zcard("Sicily") == 2
    assert g.execute_command("GEOADD", "Sicily", "NX", "13", "38", "Palermo", "1", "1", "new") == 1
    assert g.execute_command("GEOPOS", "Sicily", "Palermo")[0] != P_COORD[:1]
    assert g.execute_command("GEOADD", "Sicily", "CH", "NX", "13", "38", "p2") == 1
    assert g.execute_command("GEOADD", "nokey", "XX", "1", "1", "a") == 0
    assert g.exists("nokey") == 0


def test_geoadd_errors(g, raw):
    assert err(raw, "GEOADD", "k", "200", "10", "x") == "ERR invalid longitude,latitude pair 200.000000,10.000000"
    assert err(raw, "GEOADD", "k", "180", "85.05112879", "x") == \
        "ERR invalid longitude,latitude pair 180.000000,85.051129"
    assert err(raw, "GEOADD", "k", "abc", "10", "x") == "ERR value is not a valid float"
    assert err(raw, "GEOADD", "k", "nx", "xx", "1", "1", "a") == "ERR syntax error"
    assert err(raw, "GEOADD", "k", "ch", "1", "1") == "ERR syntax error"
    assert err(raw, "GEOADD", "k", "1", "1") == "ERR wrong number of arguments for 'geoadd' command"
    assert g.exists("k") == 0
    g.set("s", "v")
    assert err(raw, "GEOADD", "s", "1", "1", "a") == WRONGTYPE


def test_geopos(g, raw):
    sicily(g)
    assert g.execute_command("GEOPOS", "Sicily", "Palermo", "nope", "Catania") == [P_COORD, None, C_COORD]
    assert raw.cmd_raw("GEOPOS", "nokey", "a") == b"*1\r\n*-1\r\n"
    assert raw.cmd_raw("GEOPOS", "Sicily", "Palermo") == \
        b"*1\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("GEOPOS", "Sicily", "Palermo", "x") == \
        b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"


def test_geopos_edges_clamped(g):
    g.execute_command("GEOADD", "k", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw")
    assert g.execute_command("GEOPOS", "k", "ne", "sw") == [
        ["180", "85.0511287799999991"], ["-179.99999731779098511", "-85.05112751263942528"]]
    assert g.execute_command("GEOHASH", "k", "ne", "sw") == ["bp05b5048p0", "00bh0hbj200"]


def test_geodist(g, raw):
    sicily(g)
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "Catania") == "166274.1516"
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "Catania", "KM") == "166.2742"
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "Catania", "mi") == "103.3182"
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "Catania", "ft") == "545518.8700"
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "Palermo") == "0.0000"
    assert g.execute_command("GEODIST", "Sicily", "Palermo", "nope") is None
    assert g.execute_command("GEODIST", "nokey", "a", "b") is None
    assert err(raw, "GEODIST", "Sicily", "Palermo", "Catania", "yd") == \
        "ERR unsupported unit provided. please use M, KM, FT, MI"
    assert err(raw, "GEODIST", "Sicily", "Palermo", "Catania", "km", "x") == "ERR syntax error"


def test_geohash(g):
    sicily(g)
    assert g.execute_command("GEOHASH", "Sicily", "Palermo", "Catania", "nope") == ["sqc8b49rny0", "sqdtr74hyu0", None]
    assert g.execute_command("GEOHASH", "nokey", "a", "b") == [None, None]


def test_geosearch_replies(g, raw):
    sicily(g)
    full = g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC",
                             "WITHCOORD", "WITHDIST", "WITHHASH")
    assert full == [["Catania", "56.4413", 3479447370796909, C_COORD],
                    ["Palermo", "190.4424", 3479099956230698, P_COORD]]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "DESC",
                             "WITHDIST") == [["Palermo", "190.4424"], ["Catania", "56.4413"]]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "200", "200", "km",
                             "WITHDIST") == [["Catania", "56.4413"]]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "100", "100", "km", "ASC",
                             "WITHDIST") == [["Palermo", "0.0000"]]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                             "COUNT", "1", "WITHDIST") == [["Catania", "56.4413"]]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                             "COUNT", "1", "DESC") == ["Palermo"]
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                             "COUNT", "5", "ANY", "ASC") == ["Catania", "Palermo"]
    assert g.execute_command("GEOSEARCH", "nokey", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km") == []
    assert g.execute_command("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMMEMBER", "Palermo",
                             "BYRADIUS", "1", "km") == ["Palermo"]
    raw.cmd("HELLO", "3")
    assert raw.cmd_raw("GEOSEARCH", "Sicily", "FROMLONLAT", "13", "38", "BYRADIUS", "100", "km", "WITHDIST",
                       "WITHCOORD", "WITHHASH") == (b"*1\r\n*4\r\n$7\r\nPalermo\r\n$7\r\n34.1601\r\n"
                                                    b":3479099956230698\r\n*2\r\n,13.36138933897018433\r\n"
                                                    b",38.11555639549629859\r\n")


def test_geosearch_errors(g, raw):
    sicily(g)
    k = ("GEOSEARCH", "Sicily")
    assert err(raw, *k, "FROMMEMBER", "nope", "BYRADIUS", "1", "km") == "ERR could not decode requested zset member"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "0") == "ERR COUNT must be > 0"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "abc") == \
        "ERR value is not an integer or out of range"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ANY") == \
        "ERR the ANY argument requires COUNT argument"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "WITHDIST", "ASC") == \
        "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"
    assert err(raw, "geosearch", "Sicily", "BYRADIUS", "10", "km", "WITHDIST", "ASC") == \
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km") == \
        "ERR syntax error"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km") == \
        "ERR syntax error"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "10") == "ERR syntax error"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "x") == "ERR syntax error"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km") == "ERR radius cannot be negative"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km") == \
        "ERR height or width cannot be negative"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "abc", "km") == "ERR need numeric radius"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYBOX", "1", "abc", "km") == "ERR need numeric height"
    assert err(raw, *k, "FROMLONLAT", "15", "37", "BYRADIUS", "1", "furlong") == \
        "ERR unsupported unit provided. please use M, KM, FT, MI"
    assert err(raw, *k, "FROMLONLAT", "15", "200", "BYRADIUS", "1", "km") == \
        "ERR invalid longitude,latitude pair 15.000000,200.000000"
    g.set("s", "v")
    assert err(raw, "GEOSEARCH", "s", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km") == WRONGTYPE


def test_geosearchstore(g, raw):
    sicily(g)
    assert g.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km") == 2
    assert g.zrange("d", 0, -1, withscores=True) == g.zrange("Sicily", 0, -1, withscores=True)
    assert g.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                             "STOREDIST") == 2
    assert g.zrange("d", 0, -1, withscores=True) == [("Catania", 56.441257870158204),
                                                     ("Palermo", 190.44242984775784)]
    assert g.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
                             "COUNT", "1") == 1
    assert g.zrange("d", 0, -1) == ["Catania"]
    assert g.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km") == 0
    assert g.exists("d") == 0
    g.zadd("d", {"x": 1})
    assert g.execute_command("GEOSEARCHSTORE", "d", "nokey", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km") == 0
    assert g.exists("d") == 0
    assert err(raw, "GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
               "WITHDIST") == "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
    assert g.execute_command("GEOSEARCHSTORE", "Sicily", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1",
                             "km") == 1
    assert g.zrange("Sicily", 0, -1) == ["Palermo"]


def test_georadius_family(g, raw):
    sicily(g)
    assert g.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "ASC") == \
        [["Catania", "56.4413"], ["Palermo", "190.4424"]]
    assert g.execute_command("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHDIST", "DESC",
                             "COUNT", "1") == [["Palermo", "190.4424"]]
    assert g.execute_command("GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHDIST", "WITHCOORD",
                             "WITHHASH", "DESC") == [["Catania", "166.2742", 3479447370796909, C_COORD],
                                                      ["Palermo", "0.0000", 3479099956230698, P_COORD]]
    assert g.execute_command("GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "100", "km") == ["Palermo"]
    assert g.execute_command("GEORADIUSBYMEMBER", "nokey", "x", "1", "km") == []
    assert g.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "d") == 2
    assert g.zrange("d", 0, -1, withscores=True) == [("Catania", 56.441257870158204),
                                                     ("Palermo", 190.44242984775784)]
    assert g.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d") == 2
    assert g.zscore("d", "Palermo") == 3479099956230698
    assert g.execute_command("GEORADIUS", "nokey", "15", "37", "200", "km", "STORE", "d") == 0
    assert g.exists("d") == 0
    assert err(raw, "GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "WITHDIST") == \
        "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
    assert err(raw, "GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "d") == "ERR syntax error"
    assert err(raw, "GEORADIUS", "Sicily", "15", "37", "200", "km", "BYBOX", "1", "1", "km") == "ERR syntax error"
    assert err(raw, "GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE") == "ERR syntax error"
    assert err(raw, "GEORADIUS", "Sicily", "15", "200", "1", "km") == \
        "ERR invalid longitude,latitude pair 15.000000,200.000000"
    assert err(raw, "GEORADIUSBYMEMBER", "Sicily", "nope", "1", "km") == "ERR could not decode requested zset member"
    assert raw.cmd("COMMAND", "GETKEYS", "GEORADIUS", "k", "1", "1", "1", "km", "STORE", "d") == [b"k", b"d"]
    assert raw.cmd("COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "k", "FROMMEMBER", "m", "BYRADIUS", "1",
                   "km") == [b"d", b"k"]


def haversine(lo1, la1, lo2, la2):
    la1, la2 = math.radians(la1), math.radians(la2)
    u = math.sin((la2 - la1) / 2)
    v = math.sin(math.radians(lo2 - lo1) / 2)
    return 2 * 6372797.560856 * math.asin(math.sqrt(u * u + math.cos(la1) * math.cos(la2) * v * v))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_geosearch_matches_brute_force(g, seed):
    rnd = random.Random(seed)
    clon, clat = rnd.uniform(-170, 170), rnd.uniform(-80, 80)
    spread = [0.05, 1, 10][seed - 1]
    args = []
    for i in range(300):      # past zset-max-listpack-entries: the tree form
        args += ["%.6f" % max(-179.99, min(179.99, clon + rnd.uniform(-spread, spread))),
                 "%.6f" % max(-85, min(85, clat + rnd.uniform(-spread, spread))), "m%d" % i]
    assert g.execute_command("GEOADD", "k", *args) == 300
    assert g.object("encoding", "k") == "skiplist"
    names = ["m%d" % i for i in range(300)]
    pos = g.execute_command("GEOPOS", "k", *names)
    points = {m: (float(p[0]), float(p[1])) for m, p in zip(names, pos)}
    for _ in range(15):
        lon = float("%.6f" % max(-180, min(180, clon + rnd.uniform(-spread, spread))))
        lat = float("%.6f" % max(-85, min(85, clat + rnd.uniform(-spread, spread))))
        radius = float("%.3f" % (spread * 111000 * rnd.uniform(0.05, 1)))
        got = g.execute_command("GEOSEARCH", "k", "FROMLONLAT", repr(lon), repr(lat), "BYRADIUS", repr(radius), "m",
                                "ASC", "WITHDIST")
        dist = {m: haversine(lon, lat, *p) for m, p in points.items()}
        edge = {m for m, d in dist.items() if abs(d - radius) < 0.5}
        want = {m for m, d in dist.items() if d <= radius}
        assert {x[0] for x in got} - edge == want - edge
        for m, d in got:
            assert abs(float(d) - dist[m]) < 0.0002
        dists = [float(x[1]) for x in got]
        assert dists == sorted(dists)
