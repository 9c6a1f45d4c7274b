/* tests/unit/types/test_geo.c: geohash interleaving, encode/decode, the
 * GEOHASH string and haversine distances (expected values taken from Redis
 * 7.0.15 replies). */
#include "node/types/geo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

Test(geo, interleave_roundtrip)
{
    cr_assert_eq(geo_interleave(1, 0), 1u);
    cr_assert_eq(geo_interleave(0, 1), 2u);
    cr_assert_eq(geo_interleave(0xFFFFFFFFu, 0), 0x5555555555555555ull);
    cr_assert_eq(geo_interleave(0, 0xFFFFFFFFu), 0xAAAAAAAAAAAAAAAAull);
    uint32_t vals[] = { 0, 1, 2, 12345, 0x3FFFFFF, 0x4000000, 0xDEADBEEF, 0xFFFFFFFF };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
            uint32_t la, lo;
            geo_deinterleave(geo_interleave(vals[i], vals[j]), &la, &lo);
            cr_assert_eq(la, vals[i]);
            cr_assert_eq(lo, vals[j]);
        }
    }
}

Test(geo, encode_matches_redis_scores)
{
    cr_assert_eq(geo_encode(13.361389, 38.115556), 3479099956230698ull);
    cr_assert_eq(geo_encode(15.087269, 37.502669), 3479447370796909ull);
    cr_assert_eq(geo_encode(-180, -85.05112878), 0ull);
    cr_assert_lt(geo_encode(179.999999, 85.05112877), 1ull << 52);
}

Test(geo, decode_is_cell_centre)
{
    double lon, lat;
    char buf[64];
    geo_decode(3479099956230698ull, &lon, &lat);
    snprintf(buf, sizeof(buf), "%.17Lf", (long double)lon);
    cr_assert_str_eq(buf, "13.36138933897018433");
    snprintf(buf, sizeof(buf), "%.17Lf", (long double)lat);
    cr_assert_str_eq(buf, "38.11555639549629859");
    /* Round trip: decoding then encoding gives the same cell. */
    double pts[][2] = { { 0, 0 }, { -122.27652, 37.805186 }, { 179.9, -85 }, { -179.9, 85 } };
    for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
        uint64_t h = geo_encode(pts[i][0], pts[i][1]);
        geo_decode(h, &lon, &lat);
        cr_assert_eq(geo_encode(lon, lat), h);
        cr_assert_lt(fabs(lon - pts[i][0]), 1e-5);
        cr_assert_lt(fabs(lat - pts[i][1]), 1e-5);
    }
    /* Values at the top edge are clamped back into range. */
    geo_decode(geo_encode(180, 85.05112878), &lon, &lat);
    cr_assert_eq(lon, 180.0);
    cr_assert_eq(lat, GEO_LAT_MAX);
}

Test(geo, valid_range)
{
    cr_assert(geo_valid(180, 85.05112878));
    cr_assert(geo_valid(-180, -85.05112878));
    cr_assert_not(geo_valid(180.0000001, 0));
    cr_assert_not(geo_valid(0, 85.05112879));
    cr_assert_not(geo_valid(0, -90));
}

Test(geo, hash_strings)
{
    char buf[12];
    geo_hash_str(3479099956230698ull, buf);
    cr_assert_str_eq(buf, "sqc8b49rny0");
    geo_hash_str(3479447370796909ull, buf);
    cr_assert_str_eq(buf, "sqdtr74hyu0");
    geo_hash_str(geo_encode(180, 85.05112878), buf);
    cr_assert_str_eq(buf, "bp05b5048p0");
    geo_hash_str(geo_encode(-180, -85.05112878), buf);
    cr_assert_str_eq(buf, "00bh0hbj200");
}

Test(geo, haversine)
{
    double lon1, lat1, lon2, lat2;
    char buf[64];
    geo_decode(3479099956230698ull, &lon1, &lat1);
    geo_decode(3479447370796909ull, &lon2, &lat2);
    snprintf(buf, sizeof(buf), "%.4f", geo_dist(lon1, lat1, lon2, lat2));
    cr_assert_str_eq(buf, "166274.1516");
    cr_assert_eq(geo_dist(1, 2, 1, 2), 0.0);
    cr_assert_float_eq(geo_dist(0, 0, 0, 1), GEO_EARTH_RADIUS_M * M_PI / 180, 1e-6);
    cr_assert_float_eq(geo_dist(0, 0, 180, 0), GEO_EARTH_RADIUS_M * M_PI, 1e-3);
    cr_assert_float_eq(geo_dist(10, 20, 30, 40), geo_dist(30, 40, 10, 20), 1e-9);
}
