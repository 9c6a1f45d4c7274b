/* replication/repl.h: primary/replica replication of one shard
 * (docs/replication.md).
 *
 * Each shard of a replica node follows the same-numbered shard of its primary
 * node (primary base port + i). The stream is the shard's WAL record stream:
 * the same LSNs and payloads recovery replays, so a replica applies exactly
 * what a restart would. Offsets shown by INFO/ROLE/WAIT are LSNs.
 *
 * Everything here runs on the shard's thread; the commands
 * (node/commands/cmd_repl.c) run REPLICAOF and FAILOVER on every shard. The
 * shard itself is reached only through replication/repl_host.h. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct repl;

/* The hot flags. backlog: a backlog collects records (a replica ever
 * connected, or this shard follows a primary). guard: a write may be refused
 * here (replica, fenced, FAILOVER, min-replicas-to-write, min-sync-replicas),
 * so writes ask repl_refuse_write. sync: synchronous replication on this
 * primary (min-sync-replicas > 0): replies wait until sync_lsn covers what
 * they depend on; sync_lsn, the highest LSN that many replicas applied, only
 * grows while sync is on. sync_cut: != 0 when sync ended because the shard
 * became a replica: replies held past sync_cut - 1 must not be released
 * (persist.c closes them; repl_sync_take_cut). Must stay first in struct repl. */
struct repl_hot {
    bool backlog;
    bool guard;
    bool sync;
    uint64_t sync_lsn;
    uint64_t sync_cut;
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

static inline bool
repl_sync_on(const struct repl *r)
{
    return ((const struct repl_hot *)(const void *)r)->sync;
}
static inline uint64_t
repl_sync_lsn(const struct repl *r)
{
    return ((const struct repl_hot *)(const void *)r)->sync_lsn;
}
/* persist.c: the demotion cut (see struct repl_hot), once; 0 when none. */
uint64_t repl_sync_take_cut(struct repl *r);

/* persist.c: create the shard's state after recovery (starts following the
 * configured replicaof), tear down at exit. host: the shard, handed to the
 * operations repl_host_set installed (replication/repl_host.h). */
struct repl *repl_attach(void *host);
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
/* A write from client c: true when refused (-READONLY / -NOREPLICAS replied
 * through the host's client_error) or paused (FAILOVER). */
bool repl_refuse_write(struct repl *r, void *c);
/* snap.c, before a write while a full sync walks: copy the key's value at
 * the snapshot LSN first (or restart the walk for a keyless write). */
void repl_touch(struct repl *r, const char *key, size_t len);
void repl_all_changed(struct repl *r);
/* snap.c: a checkpoint covering lsn may drop WAL segments up to the LSN returned
 * (connected replicas and a full sync in progress keep theirs). */
uint64_t repl_retain_lsn(struct repl *r, uint64_t lsn);
/* c is closing while blocked (WAIT). */
void repl_conn_gone(struct repl *r, void *c);
/* INFO replication / INFO stats lines (r NULL: none). */
void repl_info(struct repl *r, struct buf *b);
void repl_info_stats(struct repl *r, struct buf *b);
bool repl_is_replica(const struct repl *r);
/* CLIENT LIST / CLIENT KILL: this shard's replication links, shown as Redis
 * shows its replica clients (flags=S, on a primary) and its master client
 * (flags=M, on a replica). types: REPL_CT_* bits. */
#define REPL_CT_REPLICA 1u
#define REPL_CT_MASTER 2u
void repl_client_list(struct repl *r, unsigned types, const int64_t *ids, int nids,
                      struct buf *out);
/* Close the links of those types matching id (> 0) and addr (NULL: any);
 * a killed master link reconnects as after any link failure. Returns how many. */
long repl_client_kill(struct repl *r, unsigned types, int64_t id, const struct rv_str *addr);

/* ---- what the commands (node/commands/cmd_repl.c) ask; r is never NULL ---- */

/* REPLICAOF on one shard (the command runs it on each): no_one promotes;
 * RV_EIO when the promotion's state could not be saved (still a replica;
 * repl_state_error says why). */
int repl_follow(struct repl *r, bool no_one, const char *host, int port);
/* Already a replica of host port. */
bool repl_follows(const struct repl *r, const char *host, int port);
/* Cluster mode: follow the one node at host:port, whatever the shard numbers
 * and counts of the two processes. */
int repl_follow_node(struct repl *r, const char *host, int port);
bool repl_follows_node(const struct repl *r, const char *host, int port);
const char *repl_state_error(const struct repl *r);
/* replicaof goes to CONFIG (and with rewrite the config file): the host's publish_role. */
void repl_publish_role(struct repl *r, const char *val, bool rewrite);

/* ROLE. */
struct repl_role {
    bool replica;
    const char *host; /* replica: the primary node's host and this shard's port */
    int port;
    const char *state; /* replica: connect, connecting, sync, connected */
    uint64_t offset;   /* the last LSN */
};
void repl_role(const struct repl *r, struct repl_role *out);
/* The online replicas, in order (ROLE, INFO). */
typedef void repl_peer_fn(void *arg, const char *ip, int port, uint64_t ack);
void repl_each_replica(const struct repl *r, repl_peer_fn *fn, void *arg);

/* WAIT (aof false, need_local -1) / WAITAOF: for records up to lsn (the
 * client's own last, or 0: the shard's last). DONE fills *local and *acked
 * (at once with no_block); BLOCKED: the client waits (the host's
 * client_wake replies later). */
enum repl_wait_rc { REPL_WAIT_DONE, REPL_WAIT_BLOCKED, REPL_WAIT_REPLICA, REPL_WAIT_NO_WAL };
enum repl_wait_rc repl_wait(struct repl *r, void *c, uint64_t lsn, bool aof, long need,
                            long need_local, int64_t timeout_ms, bool no_block, long *local,
                            long *acked);

/* RVSYNC: the client's connection (fd, a dup the link owns) becomes a
 * replication link; pre holds its unsent replies (taken over), tls its TLS
 * session (taken over, moved to fd) or NULL. */
struct repl_client_info {
    uint64_t id;
    const char *addr, *laddr, *user;
    int64_t ctime_ms;
};
struct tls;
void repl_accept(struct repl *r, int fd, struct tls *tls, const struct repl_client_info *ci,
                 struct buf *pre);

/* FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]. */
struct repl_failover_req {
    bool abort, to, force;
    char host[256];
    int port;
    int64_t timeout_ms;
};
bool repl_failover_active(const struct repl *r);
/* NULL when a failover can start on this shard, else Redis's error text. */
const char *repl_failover_check(struct repl *r, const struct repl_failover_req *q);
/* Start (or abort) on this shard (the command runs it on each). */
void repl_failover_apply(struct repl *r, const struct repl_failover_req *q);
