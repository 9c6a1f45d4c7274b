/* node/commands/t_stream_group.h: the consumer-group commands
 * (node/commands/t_stream_group.c); the group structures are
 * node/types/stream_group.h. */
#pragma once
#include "node/commands/cmds.h" /* CMD_HANDLER */
#include "node/core/cmd.h"

CMD_HANDLER(xgroup_create);
CMD_HANDLER(xgroup_setid);
CMD_HANDLER(xgroup_destroy);
CMD_HANDLER(xgroup_createconsumer);
CMD_HANDLER(xgroup_delconsumer);
CMD_HANDLER(xgroup_help);
CMD_HANDLER(xgroupload);
CMD_HANDLER(xack);
CMD_HANDLER(xpending);
CMD_HANDLER(xclaim);
CMD_HANDLER(xautoclaim);
CMD_HANDLER(xinfo_stream);
CMD_HANDLER(xinfo_groups);
CMD_HANDLER(xinfo_consumers);
CMD_HANDLER(xinfo_help);
CMD_HANDLER(xreadgroup);
/* XREADGROUP's keys: the first half of what follows STREAMS. */
int stream_xreadgroup_keys(int argc, struct rv_str *argv, int *out, int max);
