/* replication/repl.h: primary/replica replication of one shard
 * (docs/replication.md).
 *
 * Each shard of a replica node follows the same-numbered shard of its primary
 * node (primary base port + i). The stream is the shard's WAL record stream:
 * the same LSNs and payloads recovery replays, so a replica applies exactly
 * what a restart would. Offsets shown by INFO/ROLE/WAIT are LSNs.
 *
 * Everything here runs on the shard's thread; REPLICAOF reaches the other
 * shards with shard_post(). */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shard;
struct conn;
struct buf;
struct repl;

/* The hot flags. backlog: a backlog collects records (a replica ever
 * connected, or this shard follows a primary). guard: a write may be refused
 * here (replica, fenced, FAILOVER, min-replicas-to-write), so writes ask
 * repl_refuse_write. Must stay first in struct repl. */
struct repl_hot {
    bool backlog;
    bool guard;
};
static inline bool
repl_backlog_on(const struct repl *r)
{
    return ((const struct repl_hot *)(const void *)r)->backlog;
}
static inline bool
repl_guard_on(const struct repl *r)
{
    return ((const struct repl_hot *)(const void *)r)->guard;
}

/* persist.c: create the shard's state after recovery (starts following the
 * configured replicaof), tear down at exit. */
void repl_attach(struct shard *s);
void repl_destroy(struct repl *r);
/* persist.c: a sealed record frame (WAL framing) was produced. */
void repl_feed_slow(struct repl *r, const uint8_t *frame, size_t len);
static inline void
repl_feed(struct repl *r, const uint8_t *frame, size_t len)
{
    if (repl_backlog_on(r)) {
        repl_feed_slow(r, frame, len);
    }
}
/* persist.c, memory mode with a backlog: record lsn holding one command,
 * built in place at the backlog's end (what rec_close + repl_feed would
 * produce, without the staging copy). */
void repl_log_cmd(struct repl *r, uint64_t lsn, int64_t ts_ms, int argc, const struct rv_str *argv);
/* persist.c, once per loop: ship new records to the replicas. */
void repl_before_poll(struct repl *r);
void repl_cron(struct repl *r);
/* Recompute the guard flags (this one and the persist one) after a change of
 * role, fencing, FAILOVER state or min-replicas-to-write. */
void repl_guard_update(struct repl *r);
/* A write from client c: true (with -READONLY / -NOREPLICAS replied) when refused. */
bool repl_refuse_write(struct repl *r, struct conn *c);
/* snap.c, before a write while a full sync walks: copy the key's value at
 * the snapshot LSN first (or restart the walk for a keyless write). */
void repl_touch(struct repl *r, const char *key, size_t len);
void repl_all_changed(struct repl *r);
/* snap.c: a checkpoint covering lsn may drop WAL segments up to the LSN returned
 * (connected replicas and a full sync in progress keep theirs). */
uint64_t repl_retain_lsn(struct repl *r, uint64_t lsn);
/* c is closing while blocked (WAIT). */
void repl_conn_gone(struct repl *r, struct conn *c);
/* INFO replication / INFO stats lines. */
void repl_info(struct shard *s, struct buf *b);
void repl_info_stats(struct shard *s, struct buf *b);
bool repl_is_replica(struct shard *s);
/* CLIENT LIST / CLIENT KILL: this shard's replication links, shown as Redis
 * shows its replica clients (flags=S, on a primary) and its master client
 * (flags=M, on a replica). types: REPL_CT_* bits. */
#define REPL_CT_REPLICA 1u
#define REPL_CT_MASTER 2u
void repl_client_list(struct shard *s, unsigned types, const int64_t *ids, int nids, struct buf *out);
/* Close the links of those types matching id (> 0) and addr (NULL: any);
 * a killed master link reconnects as after any link failure. Returns how many. */
long repl_client_kill(struct shard *s, unsigned types, int64_t id, const struct rv_str *addr);
