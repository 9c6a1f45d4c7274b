/* node/features/multi.h: MULTI/EXEC/DISCARD and WATCH (optimistic locking).
 *
 * Queued commands are copied out of the read buffer into the connection's
 * transaction state. WATCH registers keys in the shard's watch table; the
 * dispatcher calls multi_touch() after every write command that changed
 * something, which flags the connections watching the keys it modified (the
 * same keys CLIENT TRACKING invalidates) so their EXEC fails. A key that existed when watched
 * and has expired or vanished by EXEC time also fails it, so expiry and
 * eviction invalidate a WATCH as in Redis. Nothing here costs anything on
 * the request path while no connection of the shard watches a key.
 *
 * The commands (node/commands/cmd_multi.c) check their preconditions and
 * reply; what they do to the transaction state is here. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct shard;
struct cmd_spec;

/* Queue cmd for EXEC and reply +QUEUED. */
void multi_queue(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
/* A command sent inside MULTI was refused: EXEC will answer EXECABORT. */
void multi_flag_error(struct conn *c);
/* Keys c watches (CLIENT LIST watch=). */
size_t multi_watch_count(const struct conn *c);
/* Commands queued by c's MULTI, -1 outside one; *bytes: their memory
 * (CLIENT LIST multi=, multi-mem=). */
long multi_queued(const struct conn *c, size_t *bytes);
/* The i-th queued command of c's transaction; false past the last (cluster
 * routing checks them all again at EXEC, as Redis does). */
bool multi_queued_cmd(const struct conn *c, size_t i, const struct cmd_spec **cmd, int *argc,
                      struct rv_str **argv);
/* Drop the transaction and every watch of c (DISCARD, RESET, close). */
void multi_release(struct conn *c);
/* After a write command: flag the watchers of the keys it modified, as Redis
 * signals them; cmd is cmd_effective's (DEL: the keys it deleted; a multi-key
 * pop: the key it popped from) and cmd_written_keys narrows it (a store: its
 * destination, not its sources);
 * a keyless write none but DEBUG, which flags every watcher of the shard.
 * Writes that changed nothing are not passed here. */
void multi_touch(struct shard *s, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
/* A write changed key in database db other than the running command's (MOVE, COPY ... DB). */
void multi_touch_db(struct shard *s, unsigned db, struct rv_str key);

/* Before database db is emptied (FLUSHDB, FLUSHALL; with = -1) or gets
 * database with's keys (SWAPDB): as Redis 7.0, flag the watchers of db's keys
 * that exist in it now or in with, not those of keys missing in both. */
void multi_touch_flush(struct shard *s, unsigned db, int with);

/* WATCH keys[0..n-1] (already watched ones are skipped); not inside MULTI. */
void multi_watch(struct conn *c, int n, const struct rv_str *keys);
/* A key c watches was written since WATCH (EXEC would fail). */
bool multi_watch_dirty(const struct conn *c);
/* UNWATCH: forget every key c watches. */
void multi_unwatch(struct conn *c);
/* MULTI: commands are queued from now on; not inside MULTI. */
void multi_begin(struct conn *c);

/* Whether EXEC may run c's transaction now, checked in this order. */
enum multi_verdict {
    MULTI_RUN,
    MULTI_OOM,          /* over maxmemory, a queued command may grow memory */
    MULTI_HELD,         /* the write gate refused (replied EXECABORT, transaction
                           * dropped) or paused it (no reply: EXEC runs again later) */
    MULTI_STALE,        /* stale replica, a queued command may not run on one */
    MULTI_ABORTED,      /* a command was refused while queueing */
    MULTI_WATCH_FAILED, /* a watched key changed */
};
/* Inside MULTI only. Every verdict but MULTI_RUN and MULTI_HELD leaves the
 * transaction for the caller to reply and multi_release(). */
enum multi_verdict multi_exec_check(struct conn *c);
/* Run the queued commands (after MULTI_RUN): EXEC's reply is the array of
 * their replies. Ends the transaction. */
void multi_exec_run(struct conn *c);
/* EXEC stopped at a topology command waiting for its commit (exec_from in
 * multi.c), whose reply was just written: run the rest. true while it waits
 * again (the client's input stays paused). */
bool multi_exec_resume(struct conn *c);
