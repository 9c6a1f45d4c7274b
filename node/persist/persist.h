/* node/persist/persist.h: a shard's durability: the WAL glue (what each write logs),
 * group commit (replies held until their records are written or synced),
 * checkpoints (consistent snapshots taken while serving) and recovery.
 *
 * What is logged: every write command that did not reply an error, as the
 * effects that replay deterministically with the record's timestamp as the
 * clock: relative TTLs become absolute (PEXPIREAT, SET ... PXAT), SPOP becomes
 * SREM of what was popped, INCRBYFLOAT the resulting SET, a served blocking
 * pop the matching non-blocking pop, a SEMAPHORE change the resulting holder
 * set; expiries are logged as DEL; the writes of one EXEC form one record.
 * The details and the guarantees of each mode are in docs/durability.md. */
#pragma once
#include "node/core/persist_hot.h"
#include "node/types/obj.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shard;
struct conn;
struct cmd_spec;
struct buf;
struct persist;

/* The shard's persistence state on data_dir/shard-<i>, before its data is
 * loaded: its connections get -LOADING (persist_hot.loading) until
 * persist_serve(). 0, or -1 with err. */
int persist_create(struct shard *s, char *err, size_t errsz);
/* Recover the shard's data directory (newest checkpoint, then the WAL after
 * it), open the WAL for appending and attach replication. Runs on main's
 * thread before the shard's own starts (loading.h). On error writes a message
 * naming the file and offset and returns -1. */
int persist_load(struct shard *s, char *err, size_t errsz);
/* The node finished loading: the shard's commands run from now on. */
void persist_serve(struct shard *s);
/* The same on another directory; readonly opens no WAL (resharding's source). */
int persist_open_dir(struct shard *s, const char *dir, bool readonly, char *err, size_t errsz);
/* Write a checkpoint now (resharding); 0 or -1 with err. */
int persist_save_now(struct shard *s, char *err, size_t errsz);
/* Write and sync what is staged; stop background work. */
void persist_close(struct shard *s);

/* Node state the layers above keep beside the keyspace (FUNCTION's
 * libraries): fn emits the commands that rebuild a shard's, written as each
 * checkpoint's first record (nothing when it emits none). Set once, before
 * any shard starts. */
typedef void persist_state_fn(struct shard *s, obj_emit_fn *fn, void *arg);
void persist_set_state_fn(persist_state_fn *fn);
/* State of one shard (an open slot import, node/commands/slotmig_import.c):
 * fn emits its rebuild commands, written in each checkpoint's first record
 * after the node state's. Not carried by resharding (a shard's own). Set
 * once, before any shard starts. */
void persist_set_shard_state_fn(persist_state_fn *fn);
/* Told of every key that expiry or eviction deletes on a shard, while serving
 * (not while loading), before it goes (client tracking). Set once, before any
 * shard starts. */
typedef void persist_gone_fn(struct shard *s, struct rv_str key);
void persist_set_gone_fn(persist_gone_fn *fn);

/* Told of every write command this shard logs while serving as a primary,
 * as logged (the effect a handler reported, a served blocking command's pop,
 * each write of a script or an EXEC, an expiry's or eviction's DEL), with the
 * database it ran in; argv is valid for the call only. Works in every
 * durability mode: where nothing else needs records (memory mode with no
 * replication backlog) logging is turned on for the tap alone, and records
 * are then not built, only reported. CLUSTER MIGRATESLOTS collects the keys
 * written to moving slots with it (node/commands/cmd_migslots.c). One tap
 * per shard; fn NULL removes it. */
typedef void persist_tap_fn(void *arg, unsigned db, int argc, const struct rv_str *argv);
void persist_set_tap(struct shard *s, persist_tap_fn *fn, void *arg);

/* Logs one command that no client's command carries (the end of a slot
 * import, node/commands/slotmig_import.c) as database 0's, into the record
 * open on the shard or as a record of its own, as expiry logs its DELs:
 * nothing while loading, on a replica (its primary's stream carries its
 * records), or when nothing logs. argv is valid for the call only. */
void persist_log_cmd(struct shard *s, int argc, const struct rv_str *argv);

/* ---- hooks on the command path ---- */
/* Before a write command runs: copy-on-write for a checkpoint in progress. */
void persist_before_write(struct conn *c, const struct cmd_spec *cmd, int argc,
                          struct rv_str *argv);
/* Before a write changes key in database db, other than the running
 * command's (MOVE, COPY ... DB): copy-on-write for a checkpoint. */
void persist_touch_db(struct conn *c, unsigned db, struct rv_str key);
/* After a write command that changed something ran: log what its handler
 * reported (c->effect, node/core/effect.h), or its arguments. */
void persist_log(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
/* End of EXEC: seal the transaction's record. */
void persist_exec_end(struct conn *c);
/* Before a write runs (durable or logging for replicas): true, with an
 * error replied, when its record (with the open EXEC record so far) would
 * be over WAL_MAX_REC. persist_rec_need: that size bound, for open bytes
 * already in the record (0: a new record). */
bool persist_refuse_size(struct conn *c, int argc, const struct rv_str *argv);
uint64_t persist_rec_need(uint64_t open, int argc, const struct rv_str *argv);
/* A write that cannot be logged now: replies -MISCONF and returns true. */
bool persist_refuse_write(struct conn *c);
/* c produced output: it may leave only once the WAL covers what c could see. */
void persist_note_output(struct conn *c);
/* conn_flush: how many of c's unread output bytes may be written now; when
 * not all, c is queued and flushed again once the WAL has moved on. */
size_t persist_flush_limit(struct conn *c);
void persist_conn_gone(struct conn *c);
/* Shard loop, before polling: write staged records, start syncs, release held clients. */
void persist_before_poll(struct shard *s);
void persist_cron(struct shard *s);
/* True while the shard is replaying its data directory. */
bool persist_loading(const struct shard *s);

/* The commands that rebuild e: its value, then its deadline. */
void persist_rebuild_entry(const struct ks_entry *e, obj_emit_fn *fn, void *arg);

/* Replication, at the end of a full sync at LSN lsn, in two steps around the
 * switch of keyspaces (docs/durability.md, "Full sync on a durable replica").
 * persist_rebase_begin, before the new data set is served: marks the data
 * directory as being replaced (a crash from here restarts as an empty node,
 * which full-syncs again) and deletes the old WAL and checkpoints; when the
 * marker cannot be written nothing changed, after that the WAL stays closed.
 * persist_rebase, once the new data set is served and the
 * new history id saved: the WAL continues at lsn + 1 and a background
 * checkpoint at lsn starts; the marker goes when a checkpoint covers lsn, and
 * until then persist_durable_lsn() reports nothing durable. Memory mode: only
 * the LSN counter moves. Both: 0, or -1 with err. */
int persist_rebase_begin(struct shard *s, uint64_t lsn, char *err, size_t errsz);
int persist_rebase(struct shard *s, uint64_t lsn, char *err, size_t errsz);
/* What a restart would recover: the WAL's durable LSN, or 0 while a full
 * sync's data set has no checkpoint yet (or with no WAL). */
uint64_t persist_durable_lsn(struct shard *s);
/* The shard's replication state (replication/repl.h); NULL until attached. */
struct repl;
struct repl *persist_repl(struct shard *s);
/* A full sync applies records to the keyspace it loads beside the served one
 * (on) or is done with it (off): checkpoint and full-sync copy-on-write only
 * concern the served keyspace. */
void persist_side_load(struct shard *s, bool on);
/* A keyspace that will replace the shard's: log its expiries like the current one's. */
struct ks;
void persist_hook_ks(struct shard *s, struct ks *ks);
/* The shard's data directory (data_dir/shard-<i>). */
const char *persist_dir(struct shard *s);

/* What replication's host (node/server/repl_host.c) sets and reads
 * (persist_repl.c): memory mode, the WAL, a replica's next LSN in memory
 * mode, building records for a backlog, the role, the write guard
 * (min-replicas-to-write, read-only replica), -MASTERDOWN for stale reads,
 * and copy-on-write for a full sync's walk. */
struct wal;
bool persist_memory_mode(struct shard *s);
struct wal *persist_wal(struct shard *s);
void persist_set_next_lsn(struct shard *s, uint64_t lsn);
void persist_repl_log_on(struct shard *s);
void persist_repl_set_replica(struct shard *s, bool replica);
void persist_repl_set_guard(struct shard *s, bool on);
void persist_repl_set_stale(struct shard *s, bool on);
void persist_repl_set_cow(struct shard *s, bool on);
/* With durability on: the previous run of this data directory ended without
 * a clean shutdown (kill, crash, power loss), or recovery cut its log (a torn
 * tail, wal-accept-loss): the recovered log may end before records the shard
 * had already sent to replicas. */
bool persist_log_maybe_short(struct shard *s);
/* Last LSN produced or applied (records count, not bytes). */
uint64_t persist_last_lsn(struct shard *s);

/* INFO persistence. */
void persist_info(struct shard *s, struct buf *b);
