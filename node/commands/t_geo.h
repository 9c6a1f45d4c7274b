/* node/commands/t_geo.h: geo commands on sorted sets. Members live in a KS_ZSET whose
 * scores are 52-bit interleaved geohashes (26 bits of longitude over
 * -180..180, 26 of latitude over -85.05112878..85.05112878), so the keys are
 * ordinary sorted sets with the same scores Redis stores. */
#pragma once
#include "node/commands/cmds.h"

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

CMD_HANDLER(geoadd); CMD_HANDLER(geopos); CMD_HANDLER(geodist); CMD_HANDLER(geohash);
CMD_HANDLER(geosearch); CMD_HANDLER(geosearchstore); CMD_HANDLER(georadius);
CMD_HANDLER(georadiusbymember); CMD_HANDLER(georadius_ro); CMD_HANDLER(georadiusbymember_ro);
int geo_georadius_keys(int argc, struct rv_str *argv, int *out, int max);
