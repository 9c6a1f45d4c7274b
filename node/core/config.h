/* node/core/config.h: redis.conf-style configuration.
 *
 * Sources, later ones win: built-in defaults, the config file (argv[1] when it
 * does not start with "--", else $RUVIO_CONFIG), $RUVIO_DATA_DIR, then
 * "--key value..." flags. Keys are case-insensitive and '-' and '_' are
 * interchangeable. A struct cfg is an immutable snapshot: CONFIG SET builds a
 * new one and publishes it; each shard picks it up at a safe point. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cfg_durability { CFG_DUR_MEMORY = 0, CFG_DUR_EVERYSEC = 1, CFG_DUR_ALWAYS = 2 };
enum cfg_obl_class { CFG_OBL_NORMAL = 0, CFG_OBL_REPLICA = 1, CFG_OBL_PUBSUB = 2 };
enum cfg_supervised { CFG_SUP_NO = 0, CFG_SUP_UPSTART = 1, CFG_SUP_SYSTEMD = 2, CFG_SUP_AUTO = 3 };
enum cfg_protected { CFG_PROT_NO = 0, CFG_PROT_YES = 1, CFG_PROT_LOCAL = 2 };
enum cfg_loglevel {
    CFG_LOG_DEBUG = 0,
    CFG_LOG_VERBOSE = 1,
    CFG_LOG_NOTICE = 2,
    CFG_LOG_WARNING = 3
};

/* Listening and clients (node/server, node/core/conn). */
struct cfg_net {
    int64_t port;
    char *bind;         /* space-separated addresses; "*" = all IPv4 */
    bool bind_explicit; /* set by file/flag (protected mode needs to know) */
    bool protected_mode;
    int64_t maxclients;
    int64_t timeout; /* idle client timeout, seconds, 0 = never */
    int64_t tcp_keepalive;
    int64_t tcp_backlog;
    int64_t proto_max_bulk_len;
    int64_t client_query_buffer_limit;
    char *client_output_buffer_limit; /* Redis syntax: "<class> <hard> <soft> <secs>" ... */
    int64_t obl_hard[3], obl_soft[3], obl_secs[3]; /* parsed, by enum cfg_obl_class */
    int64_t obl_check[3]; /* smallest non-zero of hard and soft, INT64_MAX when both are 0 */
};

/* TLS (docs/operations.md; Redis's names). */
struct cfg_tls {
    int64_t port; /* tls-port: shard i listens on port + i; 0 = no TLS listener */
    char *cert_file, *key_file, *key_file_pass;
    char *client_cert_file, *client_key_file;
    char *ca_cert_file, *ca_cert_dir;
    int64_t auth_clients; /* enum tls_auth (base/tls.h): no, yes, optional */
    char *protocols, *ciphers, *ciphersuites;
    bool prefer_server_ciphers;
    bool replication; /* replicas connect to their primary over TLS */
    bool cluster;     /* the cluster bus over TLS (refused: not built) */
};

/* Cluster mode (docs/cluster.md; Redis's names). */
struct cfg_cluster {
    bool enabled;
    char *config_file;     /* this host's identity (node ids), relative to dir */
    int64_t node_timeout;  /* ms */
    int64_t port;          /* the bus (consensus) port; 0 = port + 10000 */
    char *announce_ip;     /* address in MOVED and CLUSTER SLOTS/SHARDS/NODES; "" = the local one */
    int64_t announce_port; /* 0 = the shard's own port */
    int64_t announce_bus_port;
    char *announce_hostname;
    bool require_full_coverage;
    bool allow_reads_when_down;
    bool replica_no_failover;
};

/* The process and its shards (node/server). */
struct cfg_node {
    int64_t shards;
    char *shard_cpus; /* "" or a CPU list: "0,1,2" or "0-3" */
    int64_t hz;
    int64_t busy_reply_threshold; /* ms a script runs before others get -BUSY (lua-time-limit) */
    int64_t databases;
    int64_t shutdown_timeout; /* seconds to finish replies in flight on SIGTERM */
    int64_t active_expire_effort;
    int64_t supervised;           /* enum cfg_supervised: sd_notify when systemd/auto */
    int64_t enable_debug_command; /* enum cfg_protected: who may run DEBUG */
    char *on_role_change; /* executable run on role changes (node/features/hook.h), "" = none */
    int64_t on_role_change_timeout; /* seconds before the hook is killed */
    char *rename_commands;          /* `rename-command <name> <new>`: "name new" ("" = disabled) */
    char *notify_keyspace_events;   /* Redis's class letters, normalised as CONFIG GET shows them */
    int64_t notify_flags; /* CFG_NKE_* bits; 0 unless K or E is set (nothing to deliver) */
};

/* notify-keyspace-events classes (node/features/ksnotify.h), Redis's letters. */
enum cfg_nke {
    CFG_NKE_KEYSPACE = 1 << 0,  /* K */
    CFG_NKE_KEYEVENT = 1 << 1,  /* E */
    CFG_NKE_GENERIC = 1 << 2,   /* g */
    CFG_NKE_STRING = 1 << 3,    /* $ */
    CFG_NKE_LIST = 1 << 4,      /* l */
    CFG_NKE_SET = 1 << 5,       /* s */
    CFG_NKE_HASH = 1 << 6,      /* h */
    CFG_NKE_ZSET = 1 << 7,      /* z */
    CFG_NKE_EXPIRED = 1 << 8,   /* x */
    CFG_NKE_EVICTED = 1 << 9,   /* e */
    CFG_NKE_STREAM = 1 << 10,   /* t */
    CFG_NKE_MODULE = 1 << 11,   /* d */
    CFG_NKE_KEY_MISS = 1 << 12, /* m (not in A) */
    CFG_NKE_NEW = 1 << 13,      /* n (not in A) */
};

/* Logging and observability (base/log.c, node/obs). */
struct cfg_obs {
    int64_t loglevel; /* enum cfg_loglevel */
    char *logfile;
    int64_t log_queue_lines;
    int64_t slowlog_log_slower_than; /* µs; < 0 off, 0 logs every command */
    int64_t slowlog_max_len;
    int64_t latency_monitor_threshold; /* ms; 0 off */
    bool latency_tracking;             /* per-command latency histograms */
    char *latency_tracking_info_percentiles;
    char *metrics_address; /* "host:port" serves GET /metrics; "" off */
};

/* Durability (node/persist, wal/). */
struct cfg_persist {
    int64_t durability; /* enum cfg_durability */
    bool appendonly;    /* Redis alias: yes = durability from appendfsync */
    int64_t appendfsync;
    char *save; /* accepted for redis.conf compatibility; unused until checkpoints */
    char *dir;
    char *dbfilename;             /* a Redis RDB file in dir, loaded at start into an empty node */
    bool rdb_load;                /* rdb-load-at-start: off = never load dbfilename */
    int64_t wal_segment_bytes;    /* rotate WAL segments past this size */
    int64_t checkpoint_wal_bytes; /* checkpoint once the WAL grew this much (0 = never) */
    int64_t wal_sync_min_interval_us; /* always: 0 = adaptive sync pacing, N = fixed, -1 = off */
    bool wal_accept_loss;             /* recovery keeps the valid prefix of a corrupt file */
    int64_t key_load_delay; /* tests: µs slept per record loaded at start (<0: 1 µs every -N) */
};

/* Users (node/features/acl). */
struct cfg_acl {
    char *requirepass;
    char *aclfile;   /* ACL users file ("" = none); ACL LOAD/SAVE use it */
    char *acl_users; /* `user <name> <rules...>`: "name rules..." */
};

/* Compact-encoding thresholds of the collection types (node/types; Redis's names). */
struct cfg_enc {
    int64_t list_max_listpack_size; /* > 0 entries per node, < 0: -1..-5 = 4..64 KiB */
    int64_t list_compress_depth;
    int64_t hash_max_listpack_entries;
    int64_t hash_max_listpack_value;
    int64_t set_max_intset_entries;
    int64_t set_max_listpack_entries;
    int64_t set_max_listpack_value;
    int64_t zset_max_listpack_entries;
    int64_t zset_max_listpack_value;
    int64_t json_max_packed_bytes; /* JSON documents packed in their entry up to this (0: never) */
};

/* Memory budgets and eviction (node/features/evict). */
struct cfg_mem {
    int64_t maxmemory;
    char *maxmemory_policy;
    int64_t maxmemory_samples;
    int64_t maxmemory_eviction_tenacity;
    int64_t lfu_log_factor;
    int64_t lfu_decay_time;
    int64_t max_shard_bytes;   /* budget of each shard (0 = none) */
    int64_t max_process_bytes; /* budget of all shards together (0 = none) */

    int64_t tracking_table_max_keys; /* CLIENT TRACKING's keys per shard (0 = no limit) */

    /* Big values freed by the lazy-free thread (node/core/lazyfree.h), by cause. */
    bool lazyfree_lazy_eviction;
    bool lazyfree_lazy_expire;
    bool lazyfree_lazy_server_del; /* overwrites, RENAME's destination, internal deletes */
    bool lazyfree_lazy_user_del;   /* DEL behaves as UNLINK */
    bool lazyfree_lazy_user_flush; /* FLUSHALL/FLUSHDB/... without SYNC or ASYNC are ASYNC */
};

/* Replication (replication/, node/server/repl_host.c; Redis's names). */
struct cfg_repl {
    char *replicaof; /* "host port" or "" */
    char *masterauth;
    char *masteruser;
    int64_t repl_backlog_size;
    int64_t repl_timeout;       /* seconds */
    int64_t repl_frame_limit;   /* largest message a replica takes from its primary */
    int64_t repl_backlog_ttl;   /* seconds a gone replica's WAL position is kept */
    int64_t repl_ship_delay_us; /* records batched for replicas at most this long under load */
    bool replica_read_only;
    bool replica_serve_stale_data;
    bool replica_lazy_flush; /* a full sync frees the replaced keys on the lazy-free thread */
    int64_t replica_priority;
    char *replica_announce_ip;
    int64_t replica_announce_port;
    int64_t min_replicas_to_write;
    int64_t min_replicas_max_lag; /* seconds */
    /* synchronous replication (docs/replication.md): a write is acknowledged
     * once this many replicas applied it; held at most the timeout (ms) */
    int64_t min_sync_replicas;
    int64_t min_sync_replicas_timeout;
};

/* One snapshot: a group per module, each reads its own. */
struct cfg {
    struct cfg_net net;
    struct cfg_node node;
    struct cfg_obs obs;
    struct cfg_persist persist;
    struct cfg_acl acl;
    struct cfg_enc enc;
    struct cfg_mem mem;
    struct cfg_repl repl;
    struct cfg_cluster cluster;
    struct cfg_tls tls;
};

/* Parse argv/env into a fresh snapshot. On error writes one line naming the
 * key, where it came from and why into err and returns NULL. */
struct cfg *cfg_load(int argc, char **argv, char *err, size_t errsz);
struct cfg *cfg_dup(const struct cfg *c);
void cfg_destroy(struct cfg *c);
const char *cfg_file(void); /* the config file used, "" if none */

/* CONFIG GET: calls fn for every key matching the glob pattern, with its
 * canonical name and the value formatted as CONFIG GET shows it. */
typedef void cfg_visit_fn(void *arg, const char *name, const char *value);
void cfg_get(const struct cfg *c, const char *pattern, size_t plen, cfg_visit_fn *fn, void *arg);
/* CONFIG SET one key on c (a private copy). Returns 0, or -1 with a Redis
 * error text in err ("ERR Unknown option ...", "ERR CONFIG SET failed ..."). */
int cfg_set(struct cfg *c, const char *name, size_t nlen, const char *val, size_t vlen, char *err,
            size_t errsz);
/* CONFIG REWRITE: rewrite the config file the node started with so that it
 * gives c's values: comments, unknown keys and unchanged lines stay as they
 * are, changed keys are rewritten in place, others that differ from their
 * defaults are appended. Temp file + fsync + rename. Returns 0, or -1 with a
 * Redis error text in err. Safe to call from several shards at once. */
int cfg_rewrite(const struct cfg *c, char *err, size_t errsz);
/* Set a key the node itself changes at run time, live or not (REPLICAOF sets
 * "replicaof" to "host port" or ""), on c (a private copy, then published), so
 * that CONFIG GET and CONFIG REWRITE show it. Returns 0, or -1 for an unknown
 * key or invalid value. */
int cfg_set_state(struct cfg *c, const char *name, const char *val);
/* true when the key exists and can be changed at run time. */
bool cfg_is_live(const char *name, size_t nlen);
/* Parse a CPU list for shard_cpus: fills cpus (at most max); returns count or -1. */
int cfg_cpu_list(const char *s, int *cpus, int max);
/* Redis memory units: 1k=1000 1kb=1024 1m 1mb 1g 1gb; false when invalid. */
bool cfg_parse_mem(const char *s, int64_t *out);
