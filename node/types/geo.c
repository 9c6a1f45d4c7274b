/* node/types/geo.c: geohash math and the spatial search over a sorted set
 * (see geo.h); the GEO* commands are node/commands/t_geo.c.
 *
 * A search picks the finest geohash level whose cells are at least as large
 * as the shape's half extents, so the shape's bounding box touches at most
 * 3x3 cells; each cell is one score range of the set. Candidates are then
 * filtered by exact distance (haversine, or the box test). */
#include "node/types/geo.h"

#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEO_LAT_RANGE (GEO_LAT_MAX - GEO_LAT_MIN)
#define GEO_LON_RANGE (GEO_LON_MAX - GEO_LON_MIN)
#define GEO_CELLS (1u << GEO_STEP_MAX)

/* ------------------------------------------------------------------ geohash math */

static uint64_t
spread32(uint32_t v)
{
    uint64_t x = v;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | (x << 2)) & 0x3333333333333333ull;
    x = (x | (x << 1)) & 0x5555555555555555ull;
    return x;
}

static uint32_t
squash64(uint64_t x)
{
    x &= 0x5555555555555555ull;
    x = (x | (x >> 1)) & 0x3333333333333333ull;
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FFull;
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFFull;
    x = (x | (x >> 16)) & 0x00000000FFFFFFFFull;
    return (uint32_t)x;
}

uint64_t
geo_interleave(uint32_t lat, uint32_t lon)
{
    return spread32(lat) | (spread32(lon) << 1);
}

void
geo_deinterleave(uint64_t bits, uint32_t *lat, uint32_t *lon)
{
    *lat = squash64(bits);
    *lon = squash64(bits >> 1);
}

bool
geo_valid(double lon, double lat)
{
    return lon >= GEO_LON_MIN && lon <= GEO_LON_MAX && lat >= GEO_LAT_MIN && lat <= GEO_LAT_MAX;
}

/* Cell index of v in [lo, hi] at 26 steps; v == hi gives 2^26, as Redis. */
static uint32_t
cell_of(double v, double lo, double hi)
{
    double off = (v - lo) / (hi - lo);
    off *= (double)GEO_CELLS;
    return (uint32_t)off;
}

static uint64_t
encode_in(double lon, double lat, double latlo, double lathi)
{
    return geo_interleave(cell_of(lat, latlo, lathi), cell_of(lon, GEO_LON_MIN, GEO_LON_MAX));
}

uint64_t
geo_encode(double lon, double lat)
{
    return encode_in(lon, lat, GEO_LAT_MIN, GEO_LAT_MAX);
}

static double
cell_mid(uint32_t i, double lo, double hi)
{
    double span = hi - lo;
    double a = lo + ((double)i / (double)GEO_CELLS) * span;
    double b = lo + ((double)(i + 1) / (double)GEO_CELLS) * span;
    return (a + b) / 2;
}

static double
clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void
geo_decode(uint64_t bits, double *lon, double *lat)
{
    uint32_t ila, ilo;
    geo_deinterleave(bits, &ila, &ilo);
    *lon = clampd(cell_mid(ilo, GEO_LON_MIN, GEO_LON_MAX), GEO_LON_MIN, GEO_LON_MAX);
    *lat = clampd(cell_mid(ila, GEO_LAT_MIN, GEO_LAT_MAX), GEO_LAT_MIN, GEO_LAT_MAX);
}

static double
rad(double deg)
{
    return deg * (M_PI / 180.0);
}

static double
lat_dist(double lat1, double lat2)
{
    return GEO_EARTH_RADIUS_M * fabs(rad(lat2) - rad(lat1));
}

double
geo_dist(double lon1, double lat1, double lon2, double lat2)
{
    double la1 = rad(lat1), la2 = rad(lat2);
    double v = sin((rad(lon2) - rad(lon1)) / 2);
    if (v == 0.0) {
        return lat_dist(lat1, lat2);
    }
    double u = sin((la2 - la1) / 2);
    double a = u * u + cos(la1) * cos(la2) * v * v;
    return 2.0 * GEO_EARTH_RADIUS_M * asin(sqrt(a));
}

void
geo_hash_str(uint64_t bits, char out[12])
{
    static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
    double lon, lat;
    geo_decode(bits, &lon, &lat);
    uint64_t h = encode_in(lon, lat, -90.0, 90.0);
    for (int i = 0; i < 11; i++) {
        /* 52 bits fill ten characters and two bits of the eleventh; Redis writes '0'. */
        out[i] = i == 10 ? '0' : alphabet[(h >> (52 - (i + 1) * 5)) & 0x1f];
    }
    out[11] = '\0';
}

/* ------------------------------------------------------------------ search */

struct range {
    uint64_t lo, hi; /* [lo, hi) of scores */
};

/* Distance of (lon, lat) from the centre when inside the shape. */
static bool
shape_has(const struct geo_shape *s, double lon, double lat, double *dist)
{
    if (!s->box) {
        *dist = geo_dist(s->lon, s->lat, lon, lat);
        return *dist <= s->radius;
    }
    if (lat_dist(lat, s->lat) > s->h / 2) {
        return false;
    }
    if (geo_dist(lon, lat, s->lon, lat) > s->w / 2) {
        return false;
    }
    *dist = geo_dist(s->lon, s->lat, lon, lat);
    return true;
}

static bool
pred_ge(const void *arg, double score, const char *m, size_t mlen)
{
    (void)m;
    (void)mlen;
    return score >= *(const double *)arg;
}

static void
hits_push(struct geo_hits *h, const struct geo_hit *x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = rv_realloc(h->v, h->cap * sizeof(*h->v));
    }
    h->v[h->n++] = *x;
}

static bool
hits_full(const struct geo_hits *h)
{
    return h->limit != 0 && h->n >= h->limit;
}

static void
scan_range(const struct zset *z, struct range r, const struct geo_shape *s, struct geo_hits *h)
{
    double lo = (double)r.lo, hi = (double)r.hi;
    size_t rank = zset_lower(z, pred_ge, &lo);
    if (rank >= zset_len(z) || hits_full(h)) {
        return;
    }
    struct zset_it it;
    zset_it_init(&it, z, rank);
    do {
        struct rv_str m;
        struct geo_hit x;
        zset_it_get(&it, &m, &x.score);
        if (x.score >= hi) {
            break;
        }
        geo_decode((uint64_t)x.score, &x.lon, &x.lat);
        if (shape_has(s, x.lon, x.lat, &x.dist)) {
            x.m = m.p;
            x.mlen = m.len;
            hits_push(h, &x);
        }
    } while (!hits_full(h) && zset_it_next(&it));
    zset_it_done(&it);
}

static int
range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Half extents of the shape's bounding box in degrees; dlon < 0 means all longitudes. */
static void
shape_extent(const struct geo_shape *s, double *dlat, double *dlon)
{
    double R = GEO_EARTH_RADIUS_M, sn;
    if (!s->box) {
        *dlat = s->radius / R * (180.0 / M_PI);
        double cl = cos(rad(s->lat));
        sn = cl > 0 ? sin(fmin(s->radius / R, M_PI / 2)) / cl : 2;
        *dlon = sn >= 1 ? -1 : asin(sn) * (180.0 / M_PI);
    } else {
        *dlat = (s->h / 2) / R * (180.0 / M_PI);
        double top = fabs(s->lat) + *dlat;
        double cl = top >= 90 ? 0 : cos(rad(top));
        sn = cl > 0 ? sin(fmin(s->w / 2 / (2 * R), M_PI / 2)) / cl : 2;
        *dlon = sn >= 1 ? -1 : 2 * asin(sn) * (180.0 / M_PI);
    }
    *dlat = *dlat * 1.0001 + 1e-9;
    if (*dlon >= 0) {
        *dlon = *dlon * 1.0001 + 1e-9;
    }
}

/* Cell indices [a, b] at step st covering [v - d, v + d] of lo..hi (unclamped). */
static void
idx_span(double v, double d, double lo, double hi, int st, int64_t *a, int64_t *b)
{
    double n = (double)((uint64_t)1 << st);
    *a = (int64_t)floor((v - d - lo) / (hi - lo) * n);
    *b = (int64_t)floor((v + d - lo) / (hi - lo) * n);
}

void
geo_collect(const struct zset *z, const struct geo_shape *s, struct geo_hits *h)
{
    double dlat, dlon;
    shape_extent(s, &dlat, &dlon);
    int st = GEO_STEP_MAX;
    while (st > 0) {
        double n = (double)((uint64_t)1 << st);
        if (GEO_LAT_RANGE / n >= dlat && dlon >= 0 && GEO_LON_RANGE / n >= dlon) {
            break;
        }
        st--;
    }
    int64_t cells = (int64_t)1 << st;
    int64_t la, lb, oa, ob;
    idx_span(s->lat, dlat, GEO_LAT_MIN, GEO_LAT_MAX, st, &la, &lb);
    idx_span(s->lon, dlon < 0 ? 0 : dlon, GEO_LON_MIN, GEO_LON_MAX, st, &oa, &ob);
    /* Index 2^st holds values exactly at the top of a range (lat 85.05112878, lon 180). */
    uint32_t lat_i[8], lon_i[8];
    size_t nla = 0, nlo = 0;
    la = la < 0 ? 0 : la;
    lb = lb >= cells - 1 ? cells : lb;
    for (int64_t i = la; i <= lb && nla < 8; i++) {
        lat_i[nla++] = (uint32_t)i;
    }
    bool edge = false;
    if (dlon < 0 || ob - oa + 2 >= cells) {
        oa = 0;
        ob = cells - 1;
    }
    for (int64_t k = oa; k <= ob && nlo < 7; k++) {
        int64_t i = ((k % cells) + cells) % cells;
        lon_i[nlo++] = (uint32_t)i;
        edge |= i == 0 || i == cells - 1;
    }
    if (edge) {
        lon_i[nlo++] = (uint32_t)cells;
    }
    struct range rs[64];
    size_t nr = 0;
    int shift = 52 - 2 * st;
    for (size_t i = 0; i < nla; i++) {
        for (size_t k = 0; k < nlo; k++) {
            uint64_t b = geo_interleave(lat_i[i], lon_i[k]);
            rs[nr].lo = b << shift;
            rs[nr].hi = (b + 1) << shift;
            nr++;
        }
    }
    qsort(rs, nr, sizeof(rs[0]), range_cmp);
    size_t m = 0;
    for (size_t i = 0; i < nr; i++) {
        if (m > 0 && rs[i].lo <= rs[m - 1].hi) {
            if (rs[i].hi > rs[m - 1].hi) {
                rs[m - 1].hi = rs[i].hi;
            }
        } else {
            rs[m++] = rs[i];
        }
    }
    for (size_t i = 0; i < m && !hits_full(h); i++) {
        scan_range(z, rs[i], s, h);
    }
}

int
geo_hit_asc(const void *a, const void *b)
{
    const struct geo_hit *x = a, *y = b;
    return x->dist < y->dist ? -1 : x->dist > y->dist;
}

int
geo_hit_desc(const void *a, const void *b)
{
    return geo_hit_asc(b, a);
}
