/* node/features/monitor.h: MONITOR. Every command a node runs is shown, as
 * Redis's line `+<unix s>.<us> [<db> <client addr | lua>] "arg" ...`, to the
 * MONITOR connections of every shard of the node (a node is one keyspace to
 * its users, whichever shard port they connected to). Lines of other shards
 * arrive through their inboxes, so between shards they are not in time order.
 * While no connection of the node monitors, this costs one relaxed load per
 * command (monitor_on). */
#pragma once
#include "node/core/node.h"
#include "node/core/shard.h"

#include <stdatomic.h>
#include <stdbool.h>

struct conn;
struct cmd_spec;
struct rv_str;

static inline bool
monitor_on(const struct shard_env *env)
{
    return atomic_load_explicit(&env->node->monitors, memory_order_relaxed) != 0;
}

/* MONITOR: c receives the lines from now on (it keeps running commands). */
void monitor_add(struct conn *c);
/* Leave monitor mode (RESET, and the connection closing). No-op if not one. */
void monitor_release(struct conn *c);
/* Show a command c ran (or, for CMD_SKIP_MONITOR ones, is about to run).
 * AUTH's, HELLO's and MIGRATE's secrets are shown as "(redacted)". */
void monitor_feed(struct conn *c, const struct cmd_spec *cmd, int argc, const struct rv_str *argv);
/* Free the shard's state (its connections are closed). */
void monitor_shard_destroy(struct shard *s);
/* MONITOR connections of s. */
size_t monitor_count(const struct shard *s);
