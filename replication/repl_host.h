/* replication/repl_host.h: what replication needs from the shard it runs in
 * (its host), owned by replication. The node implements it
 * (node/server/repl_host.c) and installs it once with repl_host_set() before
 * any shard attaches; each shard's replication state then calls it through
 * r->ops with r->host, the shard, as an opaque pointer. Replication sits
 * below the node: it never calls the node by name.
 *
 * Every operation runs on the shard's thread. Clients (WAIT, paused writers,
 * refused writes) are opaque pointers too: replication keeps them and hands
 * them back, never looks inside. The hot paths cost one indirect call per
 * batch of records (apply_begin/apply_end) or per command applied, none per
 * byte. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct wal;

/* Fixed for the shard's life: read once at repl_attach. */
struct repl_host_info {
    unsigned shard, nshards; /* this shard's number, the node's shard count */
    const char *run_id;      /* the node's run id (40 hex), as long as the node lives */
    bool memory;             /* no durability: no repl.state, no WAL */
    const char *dir;         /* the shard's data directory, as long as the shard lives */
    bool log_maybe_short;    /* the last run ended uncleanly or recovery cut the log */
    bool cluster;            /* cluster mode: links go node to node (FAILOVER's hand-over too) */
};

/* The configuration values replication reads, as the shard sees them now
 * (CONFIG SET applies at once). Strings live as long as the snapshot they
 * came from (the node keeps every snapshot); NULL or "" when unset. */
struct repl_cfg {
    const char *replicaof, *masterauth, *masteruser;
    const char *replica_announce_ip, *cluster_announce_ip, *bind;
    int64_t port, tls_port, replica_announce_port;
    bool tls_replication;
    int64_t repl_backlog_size, repl_timeout, repl_frame_limit, repl_backlog_ttl;
    int64_t repl_ship_delay_us, wal_segment_bytes;
    int64_t replica_priority, min_replicas_to_write, min_replicas_max_lag;
    int64_t min_sync_replicas; /* synchronous replication: replicas that must ack a write */
    int64_t obl_hard, obl_soft, obl_secs; /* client-output-buffer-limit replica */
    bool replica_read_only, replica_serve_stale_data;
};

/* A key of the served keyspace, as a full sync's walk sees it. */
#define REPL_NO_EXPIRE (-1)
struct repl_key {
    struct rv_str key; /* a view, valid during the callback */
    int64_t expire_ms; /* unix ms, or REPL_NO_EXPIRE */
    const void *entry; /* the host's, for rebuild */
    unsigned db;       /* its numbered database: its records start with SELECT when not 0 */
};
typedef void repl_key_fn(void *arg, const struct repl_key *k);
/* One command of a key's rebuild (its value as commands). */
typedef void repl_cmd_fn(void *arg, int argc, const struct rv_str *argv);

/* Client state bits (client_state). */
#define REPL_CL_MULTI 1u  /* queueing a MULTI */
#define REPL_CL_EXEC 2u   /* running EXEC's commands */
#define REPL_CL_REPLAY 4u /* a socketless replay client */

/* How a client replication held is released (client_wake). */
enum repl_wake {
    REPL_WAKE_RESUME,  /* a paused write: parse it again */
    REPL_WAKE_WAIT,    /* WAIT's reply: acked */
    REPL_WAKE_WAITAOF, /* WAITAOF's reply: [local, acked] */
    REPL_WAKE_ERROR,   /* an error reply (err) */
};

struct repl_host_ops {
    void (*info)(void *host, struct repl_host_info *out);
    /* The configuration snapshot's identity (a new one for every change),
     * and its values: cfg is asked again only when the identity changed. */
    const void *(*cfg_id)(void *host);
    void (*cfg)(void *host, struct repl_cfg *out);
    /* The shard's clock: cached, and refreshed (returns it). */
    struct event_base *(*base)(void *host); /* the shard's event loop (once it runs) */
    /* tls-replication: a reference to the TLS client context (tls_ctx_unref
     * it), or NULL for plain TCP. */
    struct tls_ctx *(*tls_client)(void *host);
    int64_t (*now_ms)(void *host);
    int64_t (*refresh_clock)(void *host);
    uint64_t (*next_client_id)(void *host); /* ids of master links (CLIENT LIST) */
    void (*count_obl_close)(void *host);    /* INFO client_output_limit_disconnections */

    /* The WAL (NULL in memory mode; changes only at a full sync's rebase). */
    struct wal *(*wal)(void *host);
    uint64_t (*last_lsn)(void *host);
    uint64_t (*durable_lsn)(void *host);
    /* Memory mode, replica: records up to lsn - 1 were applied. */
    void (*set_next_lsn)(void *host, uint64_t lsn);

    /* The shard's role and write guards (the flags writes test). */
    void (*log_on)(void *host);                 /* build records from now on (a backlog exists) */
    void (*set_role)(void *host, bool replica); /* replica: no records of its own, no expiry */
    void (*set_guard)(void *host, bool on);     /* writes ask repl_refuse_write */
    void (*set_stale)(void *host, bool on);     /* -MASTERDOWN for data commands */
    /* Config state and the node's hook: replicaof ("host port" or "") shown
     * by CONFIG GET, with rewrite the config file too; the hook once per node. */
    void (*publish_role)(void *host, const char *val, bool rewrite);
    void (*role_hook)(void *host, const char *old_role, const char *new_role, uint64_t epoch,
                      const char *addr, int port);
    void (*unblock_all)(void *host, const char *err); /* blocked clients get err */

    /* Clients. */
    unsigned (*client_state)(void *host, void *c); /* REPL_CL_* */
    void (*client_error)(void *host, void *c, const char *text);
    void (*client_pause)(void *host, void *c); /* block; parse the command again later */
    void (*client_wake)(void *host, void *c, enum repl_wake how, long local, long acked,
                        const char *err);

    /* Applying records: begin and end once per batch; commands run on the
     * shard's current keyspace with the records' clock (set_clock). */
    void *(*replay_open)(void *host);
    void (*replay_close)(void *rp);
    bool (*replay_exec)(void *rp, int argc, const struct rv_str *argv, char *err, size_t errsz);
    /* A record starts: its commands run in database 0 until one SELECTs another. */
    void (*replay_record)(void *rp);
    void (*apply_begin)(void *host, bool stream);
    void (*set_clock)(void *host, int64_t ms);
    void (*apply_end)(void *host, bool stream);

    /* A full sync's keyspace, loaded beside the served one: new (NULL: drop
     * ld), entered for a chunk and left, then installed in its place. */
    void *(*load_new)(void *host, size_t keys_hint);
    void (*load_drop)(void *host, void *ld);
    void *(*load_enter)(void *host, void *ld); /* returns the served one, for load_leave */
    void (*load_leave)(void *host, void *served);
    void (*load_install)(void *host, void *ld);
    /* The data directory around the switch (persist_rebase_begin/_rebase). */
    int (*rebase_begin)(void *host, uint64_t lsn, char *err, size_t errsz);
    int (*rebase)(void *host, uint64_t lsn, char *err, size_t errsz);

    /* The served keyspace as it was when a full sync's walk began: the node's
     * snapshot iterator (the one checkpoints use). snap_next emits up to count
     * keys through fn and returns true once the walk is complete; snap_touch,
     * called before a write changes a key, emits it first, with its value at
     * the snapshot, if the walk has not reached it. Copy-on-write while on. */
    size_t (*keys)(void *host);
    void *(*snap_begin)(void *host, repl_key_fn *fn, void *arg);
    bool (*snap_next)(void *host, void *snap, unsigned count);
    void (*snap_touch)(void *host, void *snap, const char *key, size_t len);
    void (*snap_end)(void *host, void *snap);
    void (*rebuild)(void *host, const void *entry, repl_cmd_fn *fn, void *arg);
    /* Node state kept beside the keyspace (the function libraries): the
     * commands that make the replica's the same, a full sync's first record.
     * NULL: none. */
    void (*state)(void *host, repl_cmd_fn *fn, void *arg);
    void (*set_cow)(void *host, bool on);
};

/* Once, before the first repl_attach. */
void repl_host_set(const struct repl_host_ops *ops);
