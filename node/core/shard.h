/* node/core/shard.h: one shard = one thread with its own libevent loop, listening
 * socket (base port + id), connections, keyspace and slot range. Nothing on
 * the request path is shared with other shards or locked.
 *
 * Loop: for (;;) { shard_before_poll(); event_base_loop(EVLOOP_ONCE); }
 * Read handlers parse and execute and leave replies in connection buffers;
 * shard_before_poll() writes every pending connection once. */
#pragma once
#include "node/core/config.h"
#include "node/core/lazyfree.h"
#include "node/keyspace/ks.h"

#include <stdbool.h>
#include <stdint.h>

struct shard;
struct node;
struct ks;
struct conn;
struct event_base;

struct shard_stats {
    uint64_t conns_received;
    uint64_t conns_rejected;
    uint64_t commands;
    uint64_t net_input_bytes;
    uint64_t net_output_bytes;
    uint64_t keyspace_hits;
    uint64_t keyspace_misses;
    uint64_t unexpected_errors;
    uint64_t total_error_replies;
    uint64_t client_qbuf_limit_disconnections;
    uint64_t protocol_errors;
    uint64_t client_output_limit_disconnections;
    uint64_t expired_keys_base; /* shard_expired_keys() at the last CONFIG RESETSTAT */
    uint64_t expired_keys_all; /* shard_expired_keys(), as of the last timer tick (other threads) */
    uint64_t evicted_keys;
};

/* Latency histogram buckets (metrics.h): bucket b counts handler times in
 * [2^(b-1), 2^b) µs, bucket 0 those under 1 µs, the last everything longer. */
#define CMD_LAT_BUCKETS 24

/* Written only by the shard's thread; other threads (INFO node, /metrics)
 * read the words with relaxed loads. */
struct cmd_stat {
    uint64_t calls;
    uint64_t cycles;                /* TSC cycles spent in the handler */
    uint64_t failed;                /* handler replied with an error */
    uint64_t rejected;              /* refused before running (arity, auth, routing) */
    uint64_t hist[CMD_LAT_BUCKETS]; /* latency-tracking yes */
};

/* What code on a shard's thread reads of its shard, as plain fields: a
 * handler reaches it as c->env, other code as shard_env(s). Only that thread
 * writes it (other threads read the counters with relaxed loads). The rest of
 * the shard (thread, loop, listeners, inbox, connections) is the server's. */
struct shard_env {
    unsigned id;
    struct node *node;
    struct ks *ks; /* the keyspace of the running command: dbs[db] */
    /* Numbered databases (SELECT): dbs[0] always exists, the others are
     * created on first use (NULL until then); ndbs is `databases` (1 in
     * cluster mode and on multi-shard nodes). The dispatcher points ks at the
     * connection's database around each command; everywhere else it is db 0. */
    struct ks **dbs;
    unsigned ndbs;
    unsigned db;
    const struct cfg *cfg; /* the adopted config snapshot */
    int64_t now_ms;        /* cached clock, refreshed per read batch */
    struct shard_stats stats;
    struct cmd_stat *cmdstats; /* indexed by cmd_spec.id */
    struct metrics *metrics;   /* slowlog, latency events, error counts (obs) */
    /* Each module's state on this shard, created by that module (with the
     * shard, or on first use: NULL until then). */
    struct persist *persist;              /* persistence (node/persist) */
    struct evict *evict;                  /* memory charge and budgets (features/evict) */
    struct block_shard *blocking;         /* blocked clients (features/block) */
    struct dict *watched;                 /* WATCHed keys (features/multi) */
    struct pubsub *pubsub;                /* subscriptions (features/pubsub) */
    struct hash_ttl_index *hash_ttl;      /* hash keys with timed fields (types/hash), db 0 */
    struct hash_ttl_index **hash_ttl_dbs; /* ... of the other databases (NULL until used) */
    struct script_shard *scripts;   /* Lua state and script cache (commands/script), or NULL */
    struct acl_snap *acl;           /* the ACL snapshot connections point into (features/acl) */
    struct monitor_shard *monitors; /* MONITOR connections (features/monitor), or NULL */
    struct pause_shard *paused;     /* clients held by CLIENT PAUSE (features/pause), or NULL */
    uint64_t acl_gen;               /* ... taken at this acl_gen */

    struct trk_shard *tracking; /* CLIENT TRACKING (features/tracking), or NULL: nobody tracks */
    /* cluster-enabled yes: the adopted topology snapshot (one reference held),
     * and the index of this shard's node in it (-1: not in it yet). */
    struct topo *topo;
    int topo_me;
    struct slotmig *slotmig;    /* CLUSTER MIGRATESLOTS (commands/slotmig.h), or NULL */
    struct mstage *mstage;      /* MIGRATE's staging values (commands/migrate_stage.h), or NULL */
    struct mig_async *migasync; /* MIGRATE's jobs on the loop (commands/migrate_async.h), or NULL */
    uint64_t topo_gen;          /* node->topo_version of the adopted snapshot */
    struct lazyfree_acct lazy;  /* what this shard gave the lazy-free thread */
};
static inline struct shard_env *
shard_env(const struct shard *s)
{
    return (struct shard_env *)(uintptr_t)s; /* the first member of struct shard */
}

void shard_wake(struct shard *s); /* any thread: re-check shutdown/config */
/* Numbered databases. shard_db: database i, created (with database 0's
 * settings) on first use. shard_use_db: point env->ks at database i. */
struct ks *shard_db(struct shard_env *env, unsigned i);
void shard_use_db(struct shard_env *env, unsigned i);
/* Allocate the database table (databases; db 0 given). */
void shard_dbs_init(struct shard_env *env, struct ks *db0, unsigned n);
void shard_dbs_free(struct shard_env *env);
/* Keys expired in every database (their counters; the shard's thread only). */
uint64_t shard_expired_keys(const struct shard_env *env);
/* Lazy freeing. The keyspaces' hook (a ks_lazy_fn; arg: the shard_env): a
 * pointer value of more than LAZYFREE_EFFORT allocations goes to the node's
 * lazy-free thread. shard_lazy_mask: the causes (enum ks_free_why) cfg's
 * lazyfree-lazy-* keys ask for. shard_lazy_put: hand fn(ptr) over (objects
 * counted), or run it now when the thread refuses. */
bool shard_lazy_offer(void *arg, const struct ks_entry *e, void *ptr, ks_free_fn *fn);
unsigned shard_lazy_mask(const struct cfg *cfg);
void shard_lazy_put(struct shard_env *env, ks_free_fn *fn, void *ptr, uint64_t objects);
/* Keys (and keys with a deadline) of every database. */
size_t shard_keys(const struct shard_env *env, size_t *expires);
/* Replication: install another set of databases (a full sync loaded beside
 * the old one: ndbs keyspaces, db 0 non-NULL); returns the old set. */
struct ks **shard_swap_dbs(struct shard *s, struct ks **dbs);
struct event_base *shard_base(const struct shard *s);
int64_t shard_refresh_clock(struct shard *s);
/* Replay: run with a record's clock. Recovery: the clock never goes below ms. */
void shard_set_clock(struct shard *s, int64_t ms);
void shard_set_clock_floor(struct shard *s, int64_t ms);
struct persist;
void shard_reset_stats(struct shard *s);
/* Rates over the last ~1.6 s, sampled by the shard's timer (INFO instantaneous_*). */
double shard_ops_per_sec(const struct shard *s);
double shard_input_kbps(const struct shard *s);
double shard_output_kbps(const struct shard *s);
bool shard_multi(const struct shard *s); /* more than one shard in the node */
bool shard_owns_slot(const struct shard *s, unsigned slot);
void shard_slots(const struct shard *s, unsigned *lo, unsigned *hi);
uint64_t shard_next_conn_id(struct shard *s);
double shard_tsc_per_us(void);
/* Adopt the newest published config snapshot, and reset the counters when
 * another shard ran CONFIG RESETSTAT: from the shard's timer and wake-ups,
 * and at once after CONFIG SET. */
void shard_adopt_cfg(struct shard *s);

/* What the layers above the shard's state do on its events, set once by the
 * server before any shard starts (the state cannot call up into them). */
struct shard_hooks {
    void (*output)(struct conn *c);       /* output queued while a WAL is open (persistence) */
    void (*cfg_adopted)(struct shard *s); /* a new config snapshot was adopted (eviction budgets) */
    void (*stats_reset)(struct shard *s); /* CONFIG RESETSTAT (metrics) */
    void (*topo_adopted)(struct shard *s); /* a new topology (cluster mode: replication roles) */
    /* a read lookup missed while notify-keyspace-events has m (keyspace notifications) */
    void (*key_miss)(struct shard_env *env, const char *key, size_t len);
};
/* Run the key_miss hook (node/core/lookup.h calls it only while m is set). */
void shard_key_miss(struct shard_env *env, const char *key, size_t len);
void shard_set_hooks(const struct shard_hooks *h);
/* Measure the time-stamp counter's rate once (the first shard created does). */
void shard_calibrate_tsc(void);
/* Sample the per-second rates (the shard's timer). */
void shard_sample_rates(struct shard *s, int64_t now);

/* Messages between shards: posted by any thread, run on the receiving shard's
 * thread (which then owns and frees the message). Lock-free: a push onto an
 * atomic list, and one eventfd wake-up when the list was empty. */
struct shard_msg {
    struct shard_msg *next;
    void (*run)(struct shard *s, struct shard_msg *m);
};
void shard_post(struct shard *to, struct shard_msg *m);

/* Pub/Sub state of the shard (pubsub.c creates it on first use), and the
 * number of subscriptions it holds, readable from other shards (relaxed): a
 * publisher skips shards with none. */
struct pubsub;
void shard_pubsub_count_add(struct shard *s, long delta);
unsigned long shard_pubsub_count(const struct shard *s);

/* Slowlog, latency events, error counts and published gauges (metrics.c);
 * created with the shard. */
struct metrics;

/* Hash keys with timed fields (t_hash.c creates it on first HEXPIRE). */
struct hash_ttl_index;

/* Memory charge, budgets and eviction (evict.c; created with the shard). */
struct evict;

/* Blocked clients of the shard (block.c creates it on first use). */
struct block_shard;

/* The shard's WATCH table (multi.c creates it on first use; NULL until then). */
struct dict;

/* The ACL snapshot this shard's connections point into, and the acl_gen it
 * was taken at (acl.c; adopted once per read batch when acl_gen moved). */
struct acl_snap;
/* Wake every shard but except (any thread): they re-check config and ACLs. */
void shard_wake_all(struct node *n, struct shard *except);

/* Connection bookkeeping (conn.c). */
void shard_conn_link(struct shard *s, struct conn *c);
void shard_conn_unlink(struct shard *s, struct conn *c);
struct conn *shard_conn_first(struct shard *s);
size_t shard_conn_count(const struct shard *s);
void shard_want_write(struct shard *s, struct conn *c);
