/* node/commands/t_bitmap.h: bitmap commands; the bit helpers are node/types/bitmap.h. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/bitmap.h"

CMD_HANDLER(setbit);
CMD_HANDLER(getbit);
CMD_HANDLER(bitcount);
CMD_HANDLER(bitpos);
CMD_HANDLER(bitop);
CMD_HANDLER(bitfield);
CMD_HANDLER(bitfield_ro);
