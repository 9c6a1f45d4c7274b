/* node/features/pause.h: CLIENT PAUSE and UNPAUSE, for the whole node (every
 * shard). A held client's command is not refused: its input stops at that
 * command, which is parsed again, in arrival order on its shard, once the
 * pause ends (when it runs out, on the shard's next timer tick, or at once on
 * CLIENT UNPAUSE). WRITE holds writes and the commands that may cause one
 * (CMD_MAY_REPLICATE: EVAL, PUBLISH, ...; EXEC when a queued command is
 * either); ALL holds every command. MONITOR connections and internal replays
 * are never held. While a pause lasts, active expiry and eviction stop.
 * FAILOVER's own pause of writers (replication/) is a separate mechanism. */
#pragma once
#include "node/core/node.h"
#include "node/core/shard.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct conn;
struct cmd_spec;

/* One relaxed load: is any pause set (perhaps already run out)? */
static inline bool
pause_set(const struct shard_env *env)
{
    return atomic_load_explicit(&env->node->client_pause, memory_order_relaxed) != 0;
}

/* A pause is in effect now (expiry and eviction wait). */
bool pause_active(const struct shard_env *env);
/* The dispatcher, before running or queueing cmd: true when c is held. */
bool pause_hold(struct conn *c, const struct cmd_spec *cmd);
/* CLIENT PAUSE: until end_ms (unix ms); a pause in effect is only extended
 * (the later end, and ALL over WRITE), as Redis does. */
void pause_start(struct shard_env *env, int64_t end_ms, bool all);
/* CLIENT UNPAUSE: every shard resumes its held clients. */
void pause_stop(struct shard_env *env);
/* The shard's timer: resume the held clients once the pause has run out. */
void pause_tick(struct shard *s);
/* Free the shard's state (its connections are closed). */
void pause_shard_destroy(struct shard *s);
/* The connection closes: forget it. */
void pause_release(struct conn *c);
