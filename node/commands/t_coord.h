/* node/commands/t_coord.h: coordination commands (Ruvio-specific): INCRBY ... MAX,
 * SEMAPHORE, LEASE, ONCE and LIMIT; the semaphore object is node/types/coord.h. */
#pragma once
#include "node/core/cmd.h"
#include "node/commands/cmds.h" /* CMD_HANDLER */
#include "node/types/coord.h"

/* INCRBY key increment MAX limit: called by cmd_incrby when argc > 3. */
void coord_incrby_max(struct conn *c, int argc, struct rv_str *argv);

CMD_HANDLER(semaphore);
CMD_HANDLER(lease);
CMD_HANDLER(once);
CMD_HANDLER(limit);
