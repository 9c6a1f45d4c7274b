/* node/commands/t_set.h: the set commands (SADD, SINTER, ...); the set object is
 * node/types/set.h. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/set.h"

/* Key positions of SINTERCARD: "numkeys key [key ...]". */
int set_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max);

CMD_HANDLER(sadd);
CMD_HANDLER(srem);
CMD_HANDLER(smembers);
CMD_HANDLER(sismember);
CMD_HANDLER(smismember);
CMD_HANDLER(scard);
CMD_HANDLER(spop);
CMD_HANDLER(srandmember);
CMD_HANDLER(smove);
CMD_HANDLER(sinter);
CMD_HANDLER(sintercard);
CMD_HANDLER(sunion);
CMD_HANDLER(sdiff);
CMD_HANDLER(sinterstore);
CMD_HANDLER(sunionstore);
CMD_HANDLER(sdiffstore);
CMD_HANDLER(sscan);
