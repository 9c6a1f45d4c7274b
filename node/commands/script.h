/* node/commands/script.h: Lua scripting (EVAL and friends), one LuaJIT state
 * per shard thread, created on first use (docs/scripting.md).
 *
 * A script runs atomically on its shard. Its redis.call()s go through the
 * server's cmd_call path (the command table, arity, ACL, WRONGTYPE, stats,
 * WATCH, wake-ups) on the calling connection, flagged as inside EXEC, so its
 * writes are logged to the WAL and to replicas as their effects in one
 * record, the same way as MULTI/EXEC (node/persist/persist.c). */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct shard;
struct buf;
struct cmd_spec;

/* EVAL / EVALSHA (sha true) with argv as the client sent it; ro: EVAL_RO. */
void script_eval(struct conn *c, int argc, struct rv_str *argv, bool sha, bool ro);
/* SCRIPT LOAD: compile and cache; replies the sha (or the compile error). */
void script_load(struct conn *c, struct rv_str body);
/* SCRIPT EXISTS for one sha. */
bool script_exists(struct conn *c, struct rv_str sha);
/* SCRIPT FLUSH: drop every cached script and start a fresh Lua state. */
void script_flush(struct conn *c);
/* SCRIPT KILL: -NOTBUSY / -UNKILLABLE / +OK (-BUSY while a function runs). */
void script_kill(struct conn *c);
/* FUNCTION KILL: the same for a running function (node/commands/function.c). */
void script_kill_function(struct conn *c);
/* While busy: whether what runs is a function (-BUSY then names FUNCTION KILL). */
bool script_busy_fcall(const struct shard *s);
/* Whether a script is running on c's shard past busy-reply-threshold (the
 * dispatcher then answers -BUSY to everything but the few allowed commands). */
bool script_busy(const struct shard *s);
/* While busy: whether cmd may run anyway. SHUTDOWN NOSAVE may (as Redis): it
 * stops the script (a script that wrote: the process exits at once, its
 * writes never logged). */
bool script_busy_allows(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
/* INFO memory lines (used_memory_vm_eval, ...) for this shard. */
void script_info_memory(struct shard *s, struct buf *b);
/* Free the shard's state (shard exit). */
void script_shard_free(struct shard *s);

/* While a script is busy, the shard serves its other clients from the Lua
 * hook: the server provides the function that reads and dispatches what
 * arrived on them (node/server), set once before any shard starts. */
typedef void script_poll_fn(struct shard *s, struct conn *running);
void script_set_poll(script_poll_fn *fn);
