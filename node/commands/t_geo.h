/* node/commands/t_geo.h: geo commands on sorted sets; the geohash math and the
 * search are node/types/geo.h. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/geo.h"

CMD_HANDLER(geoadd);
CMD_HANDLER(geopos);
CMD_HANDLER(geodist);
CMD_HANDLER(geohash);
CMD_HANDLER(geosearch);
CMD_HANDLER(geosearchstore);
CMD_HANDLER(georadius);
CMD_HANDLER(georadiusbymember);
CMD_HANDLER(georadius_ro);
CMD_HANDLER(georadiusbymember_ro);
int geo_georadius_keys(int argc, struct rv_str *argv, int *out, int max);
