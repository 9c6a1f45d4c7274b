/* node/types/geo.h: geohash math and the spatial search of the geo commands
 * (node/commands/t_geo.c). Members live in a KS_ZSET whose
 * scores are 52-bit interleaved geohashes (26 bits of longitude over
 * -180..180, 26 of latitude over -85.05112878..85.05112878), so the keys are
 * ordinary sorted sets with the same scores Redis stores. */
#pragma once
#include "node/types/zset_enc.h"

#include <stdbool.h>
#include <stdint.h>

#define GEO_LON_MIN (-180.0)
#define GEO_LON_MAX 180.0
#define GEO_LAT_MIN (-85.05112878)
#define GEO_LAT_MAX 85.05112878
#define GEO_STEP_MAX 26
#define GEO_EARTH_RADIUS_M 6372797.560856

/* True when (lon, lat) may be stored. */
bool geo_valid(double lon, double lat);
/* Interleaved cell of (lon, lat) at 26 steps per axis, lat bits even, lon bits odd. */
uint64_t geo_encode(double lon, double lat);
/* Centre of the cell bits, clamped to the valid range. */
void geo_decode(uint64_t bits, double *lon, double *lat);
/* Great-circle (haversine) distance in metres. */
double geo_dist(double lon1, double lat1, double lon2, double lat2);
/* GEOHASH's 11-character standard geohash of a stored score; out gets a NUL. */
void geo_hash_str(uint64_t bits, char out[12]);
/* Spread the 32 bits of lat onto even positions and lon onto odd ones, and back. */
uint64_t geo_interleave(uint32_t lat, uint32_t lon);
void geo_deinterleave(uint64_t bits, uint32_t *lat, uint32_t *lon);

/* ---- search ---- */
/* A circle (radius) or a box (w x h) around (lon, lat). */
struct geo_shape {
    bool box;
    double lon, lat; /* centre */
    double radius;   /* metres */
    double w, h;     /* metres */
    double conv;     /* metres per unit of the request */
};

struct geo_hit {
    const char *m;
    size_t mlen;
    double score, dist, lon, lat;
};

struct geo_hits {
    struct geo_hit *v;
    size_t n, cap;
    size_t limit; /* stop after this many (ANY); 0 = no limit */
};

/* Appends to h the members of z inside s (stops at h->limit when set). */
void geo_collect(const struct zset *z, const struct geo_shape *s, struct geo_hits *h);
/* qsort comparators of struct geo_hit by distance. */
int geo_hit_asc(const void *a, const void *b);
int geo_hit_desc(const void *a, const void *b);
