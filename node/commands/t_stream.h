/* node/commands/t_stream.h: the stream commands (node/commands/t_stream.c); the
 * stream object is node/types/stream.h. */
#pragma once
#include "node/commands/cmds.h" /* CMD_HANDLER */
#include "node/core/cmd.h"

CMD_HANDLER(xadd);
CMD_HANDLER(xrange);
CMD_HANDLER(xrevrange);
CMD_HANDLER(xlen);
CMD_HANDLER(xdel);
CMD_HANDLER(xtrim);
CMD_HANDLER(xread);
CMD_HANDLER(xsetid);
/* XREAD's keys: the first half of what follows STREAMS. */
int stream_xread_keys(int argc, struct rv_str *argv, int *out, int max);
