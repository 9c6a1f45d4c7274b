/* node/commands/t_hll.h: HyperLogLog commands (PFADD, PFCOUNT, PFMERGE); the
 * sketch is node/types/hll.h. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/hll.h"

/* The reply to a string that is not a sketch. */
#define HLL_ERR_INVALID "WRONGTYPE Key is not a valid HyperLogLog string value."

CMD_HANDLER(pfadd);
CMD_HANDLER(pfcount);
CMD_HANDLER(pfmerge);
