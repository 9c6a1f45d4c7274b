/* node/core/config.c: the configuration table and its parsers. Only this file and
 * main.c may print-and-exit; here errors are returned as one line of text. */
#include "node/core/config.h"

#include "base/glob.h"
#include "base/mem.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum cfg_kind { K_INT, K_MEM, K_BOOL, K_STR, K_ENUM };

struct cfg_key {
    const char *name;  /* canonical name, as CONFIG GET shows it */
    const char *alias; /* another accepted name, or NULL */
    enum cfg_kind kind;
    size_t off;
    const char *def;
    int64_t min, max;
    bool live;
    const char *const *enums; /* K_ENUM: value names, index = stored value */
};

static const char *const dur_names[] = { "memory", "everysec", "always", NULL };
static const char *const fsync_names[] = { "no", "everysec", "always", NULL };
static const char *const log_names[] = { "debug", "verbose", "notice", "warning", NULL };
static const char *const sup_names[] = { "no", "upstart", "systemd", "auto", NULL };
static const char *const prot_names[] = { "no", "yes", "local", NULL };
static const char *const tls_auth_names[] = { "no", "yes", "optional", NULL };

#define F(field) offsetof(struct cfg, field)
#define GB (1024ll * 1024 * 1024)
/* The only list of configuration keys. */
/* clang-format off */
static const struct cfg_key cfg_keys[] = {
    { "port", NULL, K_INT, F(net.port), "6379", 0, 65535, false, NULL },
    { "bind", NULL, K_STR, F(net.bind), "*", 0, 0, false, NULL },
    { "protected-mode", NULL, K_BOOL, F(net.protected_mode), "yes", 0, 1, true, NULL },
    { "shards", NULL, K_INT, F(node.shards), "1", 1, 1024, false, NULL },
    { "shard_cpus", NULL, K_STR, F(node.shard_cpus), "", 0, 0, false, NULL },
    { "durability", NULL, K_ENUM, F(persist.durability), "memory", 0, 0, false, dur_names },
    { "appendonly", NULL, K_BOOL, F(persist.appendonly), "no", 0, 1, false, NULL },
    { "appendfsync", NULL, K_ENUM, F(persist.appendfsync), "everysec", 0, 0, false, fsync_names },
    { "save", NULL, K_STR, F(persist.save), "", 0, 0, true, NULL },
    { "wal_segment_bytes", NULL, K_MEM, F(persist.wal_segment_bytes), "64mb", 4096, INT64_MAX, false, NULL },
    { "checkpoint_wal_bytes", NULL, K_MEM, F(persist.checkpoint_wal_bytes), "256mb", 0, INT64_MAX, true, NULL },
    { "wal_sync_min_interval_us", NULL, K_INT, F(persist.wal_sync_min_interval_us), "-1", -1, 1000000, false, NULL },
    { "wal_accept_loss", NULL, K_BOOL, F(persist.wal_accept_loss), "no", 0, 1, false, NULL },
    { "key-load-delay", NULL, K_INT, F(persist.key_load_delay), "0", INT_MIN, INT_MAX, true, NULL },
    { "dir", "data_dir", K_STR, F(persist.dir), "./data", 0, 0, false, NULL },
    { "dbfilename", NULL, K_STR, F(persist.dbfilename), "dump.rdb", 0, 0, false, NULL },
    { "rdb-load-at-start", NULL, K_BOOL, F(persist.rdb_load), "yes", 0, 1, false, NULL },
    { "requirepass", NULL, K_STR, F(acl.requirepass), "", 0, 0, true, NULL },
    { "maxclients", NULL, K_INT, F(net.maxclients), "10000", 1, 1000000, true, NULL },
    { "timeout", NULL, K_INT, F(net.timeout), "0", 0, INT_MAX, true, NULL },
    { "tcp-keepalive", NULL, K_INT, F(net.tcp_keepalive), "300", 0, INT_MAX, true, NULL },
    { "tcp-backlog", NULL, K_INT, F(net.tcp_backlog), "511", 0, INT_MAX, false, NULL },
    { "hz", NULL, K_INT, F(node.hz), "10", 1, 500, true, NULL },
    { "busy-reply-threshold", "lua-time-limit", K_INT, F(node.busy_reply_threshold), "5000", 0, INT64_MAX, true, NULL },
    { "proto-max-bulk-len", NULL, K_MEM, F(net.proto_max_bulk_len), "512mb", 1024 * 1024, INT64_MAX, true, NULL },
    { "client-query-buffer-limit", NULL, K_MEM, F(net.client_query_buffer_limit), "1gb", 1024 * 1024, INT64_MAX, true, NULL },
    { "loglevel", NULL, K_ENUM, F(obs.loglevel), "notice", 0, 0, true, log_names },
    { "logfile", NULL, K_STR, F(obs.logfile), "", 0, 0, false, NULL },
    { "slowlog-log-slower-than", NULL, K_INT, F(obs.slowlog_log_slower_than), "10000", INT64_MIN, INT64_MAX, true, NULL },
    { "slowlog-max-len", NULL, K_INT, F(obs.slowlog_max_len), "128", 0, INT64_MAX, true, NULL },
    { "latency-monitor-threshold", NULL, K_INT, F(obs.latency_monitor_threshold), "0", 0, INT64_MAX, true, NULL },
    { "latency-tracking", NULL, K_BOOL, F(obs.latency_tracking), "yes", 0, 1, true, NULL },
    { "latency-tracking-info-percentiles", NULL, K_STR, F(obs.latency_tracking_info_percentiles), "50 99 99.9", 0, 0, true, NULL },
    { "metrics_address", NULL, K_STR, F(obs.metrics_address), "", 0, 0, false, NULL },
    { "log_queue_lines", NULL, K_INT, F(obs.log_queue_lines), "1024", 1, 1000000, false, NULL },
    { "databases", NULL, K_INT, F(node.databases), "16", 1, 1048576, false, NULL },
    { "cluster-enabled", NULL, K_BOOL, F(cluster.enabled), "no", 0, 1, false, NULL },
    { "cluster-config-file", NULL, K_STR, F(cluster.config_file), "nodes.conf", 0, 0, false, NULL },
    { "cluster-node-timeout", NULL, K_INT, F(cluster.node_timeout), "15000", 100, INT_MAX, true, NULL },
    { "cluster-port", NULL, K_INT, F(cluster.port), "0", 0, 65535, false, NULL },
    { "cluster-announce-ip", NULL, K_STR, F(cluster.announce_ip), "", 0, 0, true, NULL },
    { "cluster-announce-port", NULL, K_INT, F(cluster.announce_port), "0", 0, 65535, true, NULL },
    { "cluster-announce-bus-port", NULL, K_INT, F(cluster.announce_bus_port), "0", 0, 65535, true, NULL },
    { "cluster-announce-hostname", NULL, K_STR, F(cluster.announce_hostname), "", 0, 0, true, NULL },
    { "cluster-require-full-coverage", NULL, K_BOOL, F(cluster.require_full_coverage), "yes", 0, 1, true, NULL },
    { "cluster-allow-reads-when-down", NULL, K_BOOL, F(cluster.allow_reads_when_down), "no", 0, 1, true, NULL },
    { "cluster-replica-no-failover", "cluster-slave-no-failover", K_BOOL, F(cluster.replica_no_failover), "no", 0, 1, true, NULL },
    { "shutdown-timeout", NULL, K_INT, F(node.shutdown_timeout), "10", 0, 3600, true, NULL },
    { "active-expire-effort", NULL, K_INT, F(node.active_expire_effort), "1", 1, 10, true, NULL },
    { "on_role_change", NULL, K_STR, F(node.on_role_change), "", 0, 0, false, NULL },
    { "on_role_change_timeout", NULL, K_INT, F(node.on_role_change_timeout), "10", 1, 3600, true, NULL },
    { "supervised", NULL, K_ENUM, F(node.supervised), "auto", 0, 0, false, sup_names },
    { "enable-debug-command", NULL, K_ENUM, F(node.enable_debug_command), "no", 0, 0, false, prot_names },
    { "list-max-listpack-size", "list-max-ziplist-size", K_INT, F(enc.list_max_listpack_size), "-2", -5, INT_MAX, true, NULL },
    { "list-compress-depth", NULL, K_INT, F(enc.list_compress_depth), "0", 0, INT_MAX, true, NULL },
    { "hash-max-listpack-entries", "hash-max-ziplist-entries", K_INT, F(enc.hash_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "hash-max-listpack-value", "hash-max-ziplist-value", K_INT, F(enc.hash_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "set-max-intset-entries", NULL, K_INT, F(enc.set_max_intset_entries), "512", 0, INT_MAX, true, NULL },
    { "set-max-listpack-entries", NULL, K_INT, F(enc.set_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "set-max-listpack-value", NULL, K_INT, F(enc.set_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "zset-max-listpack-entries", "zset-max-ziplist-entries", K_INT, F(enc.zset_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "zset-max-listpack-value", "zset-max-ziplist-value", K_INT, F(enc.zset_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "json-max-packed-bytes", NULL, K_INT, F(enc.json_max_packed_bytes), "512", 0, 65536, true, NULL },
    { "client-output-buffer-limit", NULL, K_STR, F(net.client_output_buffer_limit), "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60", 0, 0, true, NULL },
    { "maxmemory", NULL, K_MEM, F(mem.maxmemory), "0", 0, INT64_MAX, true, NULL },
    { "notify-keyspace-events", NULL, K_STR, F(node.notify_keyspace_events), "", 0, 0, true, NULL },
    { "maxmemory-policy", NULL, K_STR, F(mem.maxmemory_policy), "noeviction", 0, 0, true, NULL },
    { "aclfile", NULL, K_STR, F(acl.aclfile), "", 0, 0, false, NULL },
    { "maxmemory-samples", NULL, K_INT, F(mem.maxmemory_samples), "5", 1, 64, true, NULL },
    { "maxmemory-eviction-tenacity", NULL, K_INT, F(mem.maxmemory_eviction_tenacity), "10", 0, 100, true, NULL },
    { "lfu-log-factor", NULL, K_INT, F(mem.lfu_log_factor), "10", 0, INT_MAX, true, NULL },
    { "lfu-decay-time", NULL, K_INT, F(mem.lfu_decay_time), "1", 0, INT_MAX, true, NULL },
    { "tracking-table-max-keys", NULL, K_INT, F(mem.tracking_table_max_keys), "1000000", 0, INT64_MAX, true, NULL },
    { "lazyfree-lazy-eviction", NULL, K_BOOL, F(mem.lazyfree_lazy_eviction), "no", 0, 1, true, NULL },
    { "lazyfree-lazy-expire", NULL, K_BOOL, F(mem.lazyfree_lazy_expire), "no", 0, 1, true, NULL },
    { "lazyfree-lazy-server-del", NULL, K_BOOL, F(mem.lazyfree_lazy_server_del), "no", 0, 1, true, NULL },
    { "lazyfree-lazy-user-del", NULL, K_BOOL, F(mem.lazyfree_lazy_user_del), "no", 0, 1, true, NULL },
    { "lazyfree-lazy-user-flush", NULL, K_BOOL, F(mem.lazyfree_lazy_user_flush), "no", 0, 1, true, NULL },
    { "max_shard_bytes", NULL, K_MEM, F(mem.max_shard_bytes), "0", 0, INT64_MAX, true, NULL },
    { "max_process_bytes", NULL, K_MEM, F(mem.max_process_bytes), "0", 0, INT64_MAX, true, NULL },
    { "replicaof", "slaveof", K_STR, F(repl.replicaof), "", 0, 0, false, NULL },
    { "masterauth", NULL, K_STR, F(repl.masterauth), "", 0, 0, true, NULL },
    { "masteruser", NULL, K_STR, F(repl.masteruser), "", 0, 0, true, NULL },
    { "repl-backlog-size", NULL, K_MEM, F(repl.repl_backlog_size), "16mb", 16384, INT64_MAX, true, NULL },
    { "repl-timeout", NULL, K_INT, F(repl.repl_timeout), "60", 1, INT_MAX, true, NULL },
    { "repl-frame-limit", NULL, K_MEM, F(repl.repl_frame_limit), "1gb", 1024 * 1024, 0xffffffffll, true, NULL },
    { "repl-backlog-ttl", NULL, K_INT, F(repl.repl_backlog_ttl), "3600", 0, INT_MAX, true, NULL },
    { "repl-ship-delay-us", NULL, K_INT, F(repl.repl_ship_delay_us), "1000", 0, 1000000, true, NULL },
    { "replica-read-only", "slave-read-only", K_BOOL, F(repl.replica_read_only), "yes", 0, 1, true, NULL },
    { "replica-serve-stale-data", "slave-serve-stale-data", K_BOOL, F(repl.replica_serve_stale_data), "yes", 0, 1, true, NULL },
    { "replica-lazy-flush", "slave-lazy-flush", K_BOOL, F(repl.replica_lazy_flush), "no", 0, 1, true, NULL },
    { "replica-priority", "slave-priority", K_INT, F(repl.replica_priority), "100", 0, INT_MAX, true, NULL },
    { "replica-announce-ip", "slave-announce-ip", K_STR, F(repl.replica_announce_ip), "", 0, 0, true, NULL },
    { "replica-announce-port", "slave-announce-port", K_INT, F(repl.replica_announce_port), "0", 0, 65535, true, NULL },
    { "min-replicas-to-write", "min-slaves-to-write", K_INT, F(repl.min_replicas_to_write), "0", 0, INT_MAX, true, NULL },
    { "min-replicas-max-lag", "min-slaves-max-lag", K_INT, F(repl.min_replicas_max_lag), "10", 0, INT_MAX, true, NULL },
    { "min-sync-replicas", NULL, K_INT, F(repl.min_sync_replicas), "0", 0, 64, true, NULL },
    { "min-sync-replicas-timeout", NULL, K_INT, F(repl.min_sync_replicas_timeout), "10000", 1, INT_MAX, true, NULL },
    { "tls-port", NULL, K_INT, F(tls.port), "0", 0, 65535, false, NULL },
    { "tls-cert-file", NULL, K_STR, F(tls.cert_file), "", 0, 0, true, NULL },
    { "tls-key-file", NULL, K_STR, F(tls.key_file), "", 0, 0, true, NULL },
    { "tls-key-file-pass", NULL, K_STR, F(tls.key_file_pass), "", 0, 0, true, NULL },
    { "tls-client-cert-file", NULL, K_STR, F(tls.client_cert_file), "", 0, 0, true, NULL },
    { "tls-client-key-file", NULL, K_STR, F(tls.client_key_file), "", 0, 0, true, NULL },
    { "tls-ca-cert-file", NULL, K_STR, F(tls.ca_cert_file), "", 0, 0, true, NULL },
    { "tls-ca-cert-dir", NULL, K_STR, F(tls.ca_cert_dir), "", 0, 0, true, NULL },
    { "tls-auth-clients", NULL, K_ENUM, F(tls.auth_clients), "yes", 0, 0, true, tls_auth_names },
    { "tls-protocols", NULL, K_STR, F(tls.protocols), "", 0, 0, true, NULL },
    { "tls-ciphers", NULL, K_STR, F(tls.ciphers), "", 0, 0, true, NULL },
    { "tls-ciphersuites", NULL, K_STR, F(tls.ciphersuites), "", 0, 0, true, NULL },
    { "tls-prefer-server-ciphers", NULL, K_BOOL, F(tls.prefer_server_ciphers), "no", 0, 1, true, NULL },
    { "tls-replication", NULL, K_BOOL, F(tls.replication), "no", 0, 1, true, NULL },
    { "tls-cluster", NULL, K_BOOL, F(tls.cluster), "no", 0, 1, false, NULL },
};
/* clang-format on */
#undef F
#define NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

static char cfg_file_path[4096];

const char *
cfg_file(void)
{
    return cfg_file_path;
}

/* Case-insensitive, '-' == '_'. */
static bool
key_eq(const char *canon, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && canon[i]; i++) {
        char a = canon[i] == '_' ? '-' : canon[i];
        char b = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
        if (a != b) {
            return false;
        }
    }
    return i == n && canon[i] == '\0';
}

static const struct cfg_key *
key_find(const char *s, size_t n)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (key_eq(cfg_keys[i].name, s, n) ||
            (cfg_keys[i].alias && key_eq(cfg_keys[i].alias, s, n))) {
            return &cfg_keys[i];
        }
    }
    return NULL;
}

bool
cfg_parse_mem(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-' || isspace((unsigned char)*s)) {
        return false;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) {
        return false;
    }
    unsigned long long mul = 1;
    if (*end) {
        static const struct {
            const char *u;
            unsigned long long m;
        } units[] = {
            { "b", 1 },
            { "k", 1000ull },
            { "kb", 1024ull },
            { "m", 1000000ull },
            { "mb", 1048576ull },
            { "g", 1000000000ull },
            { "gb", 1073741824ull },
        };
        size_t i;
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strcasecmp(end, units[i].u) == 0) {
                mul = units[i].m;
                break;
            }
        }
        if (i == sizeof(units) / sizeof(units[0])) {
            return false;
        }
    }
    if (v > (unsigned long long)INT64_MAX / mul) {
        return false;
    }
    *out = (int64_t)(v * mul);
    return true;
}

static bool
parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s)) {
        return false;
    }
    long long v = strtoll(s, &end, 10);
    if (errno || *end) {
        return false;
    }
    *out = v;
    return true;
}

int
cfg_cpu_list(const char *s, int *cpus, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0 || a > 4095) {
            return -1;
        }
        s = end;
        b = a;
        if (*s == '-') {
            s++;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b > 4095) {
                return -1;
            }
            s = end;
        }
        for (long i = a; i <= b; i++) {
            if (n == max) {
                return -1;
            }
            cpus[n++] = (int)i;
        }
        if (*s == ',' || *s == ' ') {
            s++;
        } else if (*s) {
            return -1;
        }
    }
    return n;
}

/* Validate and store one value; returns NULL or a static reason. */
static const char *
key_store(struct cfg *c, const struct cfg_key *k, const char *v)
{
    char *base = (char *)c;
    int64_t n;

    switch (k->kind) {
    case K_INT:
        if (!parse_int(v, &n)) {
            return "argument couldn't be parsed into an integer";
        }
        if (n < k->min || n > k->max) {
            return "argument must be between the allowed minimum and maximum";
        }
        *(int64_t *)(base + k->off) = n;
        return NULL;
    case K_MEM:
        if (!cfg_parse_mem(v, &n)) {
            return "argument must be a memory value";
        }
        if (n < k->min || n > k->max) {
            return "argument must be between the allowed minimum and maximum";
        }
        *(int64_t *)(base + k->off) = n;
        return NULL;
    case K_BOOL:
        if (strcasecmp(v, "yes") == 0) {
            *(bool *)(base + k->off) = true;
        } else if (strcasecmp(v, "no") == 0) {
            *(bool *)(base + k->off) = false;
        } else {
            return "argument must be 'yes' or 'no'";
        }
        return NULL;
    case K_ENUM:
        for (int i = 0; k->enums[i]; i++) {
            if (strcasecmp(v, k->enums[i]) == 0) {
                *(int64_t *)(base + k->off) = i;
                return NULL;
            }
        }
        return "argument(s) must be one of the allowed values";
    case K_STR: {
        char **slot = (char **)(base + k->off);
        rv_free(*slot);
        *slot = rv_strndup(v, strlen(v));
        return NULL;
    }
    }
    return "unsupported";
}

/* "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60": any subset of the
 * classes, in groups of four, as redis.conf writes it. */
static const char *
parse_obl(struct cfg *c)
{
    char buf[512];
    char *save = NULL, *tok[64];
    int n = 0;
    snprintf(buf, sizeof(buf), "%s", c->net.client_output_buffer_limit);
    for (char *t = strtok_r(buf, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save)) {
        tok[n++] = t;
    }
    if (n % 4 != 0) {
        return "expected groups of '<class> <hard limit> <soft limit> <soft seconds>'";
    }
    for (int i = 0; i < n; i += 4) {
        int cls;
        int64_t hard, soft, secs;
        if (strcasecmp(tok[i], "normal") == 0) {
            cls = CFG_OBL_NORMAL;
        } else if (strcasecmp(tok[i], "slave") == 0 || strcasecmp(tok[i], "replica") == 0) {
            cls = CFG_OBL_REPLICA;
        } else if (strcasecmp(tok[i], "pubsub") == 0) {
            cls = CFG_OBL_PUBSUB;
        } else {
            return "class must be normal, replica (slave) or pubsub";
        }
        if (!cfg_parse_mem(tok[i + 1], &hard) || !cfg_parse_mem(tok[i + 2], &soft) ||
            !parse_int(tok[i + 3], &secs) || secs < 0) {
            return "limits must be memory values and seconds a non-negative integer";
        }
        c->net.obl_hard[cls] = hard;
        c->net.obl_soft[cls] = soft;
        c->net.obl_secs[cls] = secs;
    }
    for (int cls = 0; cls < 3; cls++) {
        int64_t h = c->net.obl_hard[cls] > 0 ? c->net.obl_hard[cls] : INT64_MAX;
        int64_t s = c->net.obl_soft[cls] > 0 ? c->net.obl_soft[cls] : INT64_MAX;
        c->net.obl_check[cls] = h < s ? h : s;
    }
    return NULL;
}

/* Observability keys: percentiles are numbers in [0, 100]; metrics_address is host:port. */
static const char *
check_obs(const struct cfg *c, const char **key)
{
    const char *p = c->obs.latency_tracking_info_percentiles;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno != 0 || v < 0 || v > 100 || (*end && *end != ' ')) {
            *key = "latency-tracking-info-percentiles";
            return "expected space-separated percentiles between 0 and 100";
        }
        p = end;
        while (*p == ' ') {
            p++;
        }
    }
    const char *colon = strrchr(c->obs.metrics_address, ':');
    if (c->obs.metrics_address[0]) {
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        if (colon == NULL || colon == c->obs.metrics_address || colon[1] == '\0' || *end != '\0' ||
            port < 0 || port > 65535) {
            *key = "metrics_address";
            return "expected host:port";
        }
    }
    return NULL;
}

/* notify-keyspace-events: Redis's letters, any order; stored as Redis 7.0's
 * CONFIG GET shows them ("A" for all of g$lshzxetd, classes, then K, E, m). */
static const char *
parse_nke(struct cfg *c)
{
    static const char letters[] = "g$lshzxetdn";
    enum {
        ALL = CFG_NKE_GENERIC | CFG_NKE_STRING | CFG_NKE_LIST | CFG_NKE_SET | CFG_NKE_HASH |
              CFG_NKE_ZSET | CFG_NKE_EXPIRED | CFG_NKE_EVICTED | CFG_NKE_STREAM | CFG_NKE_MODULE
    };
    static const int bits[] = { CFG_NKE_GENERIC, CFG_NKE_STRING, CFG_NKE_LIST,    CFG_NKE_SET,
                                CFG_NKE_HASH,    CFG_NKE_ZSET,   CFG_NKE_EXPIRED, CFG_NKE_EVICTED,
                                CFG_NKE_STREAM,  CFG_NKE_MODULE, CFG_NKE_NEW };
    int64_t f = 0;
    for (const char *p = c->node.notify_keyspace_events; *p; p++) {
        const char *at = strchr(letters, *p);
        if (*p == 'A') {
            f |= ALL;
        } else if (*p == 'K') {
            f |= CFG_NKE_KEYSPACE;
        } else if (*p == 'E') {
            f |= CFG_NKE_KEYEVENT;
        } else if (*p == 'm') {
            f |= CFG_NKE_KEY_MISS;
        } else if (at != NULL) {
            f |= bits[at - letters];
        } else {
            return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
        }
    }
    char out[sizeof(letters) + 4];
    size_t n = 0;
    if ((f & ALL) == ALL) {
        out[n++] = 'A';
    }
    for (size_t i = 0; letters[i] && (f & ALL) != ALL; i++) {
        if (f & bits[i]) {
            out[n++] = letters[i];
        }
    }
    if (f & CFG_NKE_KEYSPACE) {
        out[n++] = 'K';
    }
    if (f & CFG_NKE_KEYEVENT) {
        out[n++] = 'E';
    }
    if (f & CFG_NKE_KEY_MISS) {
        out[n++] = 'm';
    }
    if ((f & ALL) == ALL && (f & CFG_NKE_NEW)) {
        out[n++] = 'n'; /* (Redis 7.0 drops it here, and so loses it on a rewrite) */
    }
    out[n] = '\0';
    if (strcmp(out, c->node.notify_keyspace_events) != 0) {
        rv_free(c->node.notify_keyspace_events);
        c->node.notify_keyspace_events = rv_strndup(out, n);
    }
    c->node.notify_flags = (f & (CFG_NKE_KEYSPACE | CFG_NKE_KEYEVENT)) ? f : 0;
    return NULL;
}

/* Cross-key checks that apply to a whole snapshot. */
static const char *
cfg_check(struct cfg *c, const char **key)
{
    const char *why = parse_obl(c);
    if (why) {
        *key = "client-output-buffer-limit";
        return why;
    }
    if ((why = check_obs(c, key)) != NULL) {
        return why;
    }
    if ((why = parse_nke(c)) != NULL) {
        *key = "notify-keyspace-events";
        return why;
    }
    int cpus[1024];
    if (c->node.shard_cpus[0] && cfg_cpu_list(c->node.shard_cpus, cpus, 1024) < 0) {
        *key = "shard_cpus";
        return "expected a CPU list such as '0,1,2' or '0-3'";
    }
    if (c->persist.appendonly) {
        /* Redis names: appendonly yes + appendfsync always|everysec|no ("no"
         * still writes every record; the syncer runs every second). */
        int64_t want = c->persist.appendfsync == 2 ? CFG_DUR_ALWAYS : CFG_DUR_EVERYSEC;
        if (c->persist.durability != CFG_DUR_MEMORY && c->persist.durability != want) {
            *key = "appendfsync";
            return "conflicts with 'durability': set one or the other";
        }
        c->persist.durability = want;
    }
    if (c->net.port + c->node.shards - 1 > 65535) {
        *key = "shards";
        return "port + shards - 1 exceeds 65535";
    }
    if (c->tls.port != 0) {
        if (c->tls.port + c->node.shards - 1 > 65535) {
            *key = "tls-port";
            return "tls-port + shards - 1 exceeds 65535";
        }
        if (c->tls.port < c->net.port + c->node.shards &&
            c->net.port < c->tls.port + c->node.shards) {
            *key = "tls-port";
            return "the TLS ports overlap the ports of 'port'";
        }
    }
    if (c->tls.cluster && c->cluster.enabled && (c->tls.port == 0 || !c->tls.replication)) {
        /* The nodes announce their TLS ports, which replicas reach over TLS only. */
        *key = "tls-cluster";
        return "tls-cluster yes needs tls-port and tls-replication yes in cluster mode";
    }
    static const char *const policies[] = { "noeviction",      "allkeys-lru",  "allkeys-lfu",
                                            "allkeys-random",  "volatile-lru", "volatile-lfu",
                                            "volatile-random", "volatile-ttl", NULL };
    size_t pi;
    for (pi = 0; policies[pi] && strcasecmp(c->mem.maxmemory_policy, policies[pi]) != 0; pi++) {
    }
    if (policies[pi] == NULL) {
        *key = "maxmemory-policy";
        return "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
               "volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction";
    }
    if (strcmp(c->mem.maxmemory_policy, policies[pi]) != 0) {
        rv_free(c->mem.maxmemory_policy); /* CONFIG GET shows the canonical lower case */
        c->mem.maxmemory_policy = rv_strndup(policies[pi], strlen(policies[pi]));
    }
    return NULL;
}

static char *
str_join_line(char *list, const char *line)
{
    size_t a = list ? strlen(list) : 0, b = strlen(line);
    char *out = rv_malloc(a + b + 2);
    if (a) {
        memcpy(out, list, a);
    }
    memcpy(out + a, line, b);
    out[a + b] = '\n';
    out[a + b + 1] = '\0';
    rv_free(list);
    return out;
}

/* `user` and `rename-command` may repeat, so they are collected as lines;
 * acl_init() and cmd_rename() validate them at start-up. */
static int
apply_repeatable(struct cfg *c, const char *key, const char *const *vals, int nvals,
                 const char *where, char *err, size_t errsz)
{
    char line[4096] = "";
    size_t off = 0;
    if (strcasecmp(key, "rename-command") == 0 || strcasecmp(key, "rename_command") == 0) {
        if (nvals != 2 || strchr(vals[0], ' ') || strchr(vals[1], ' ')) {
            snprintf(err, errsz,
                     "config error at %s: 'rename-command': expected <name> <new name> "
                     "(\"\" disables the command)",
                     where);
            return -1;
        }
        snprintf(line, sizeof(line), "%s %s", vals[0], vals[1]);
        c->node.rename_commands = str_join_line(c->node.rename_commands, line);
        return 0;
    }
    if (nvals < 1) {
        snprintf(err, errsz, "config error at %s: 'user': expected <name> [rules ...]", where);
        return -1;
    }
    for (int i = 0; i < nvals; i++) {
        int w = snprintf(line + off, sizeof(line) - off, "%s%s", i ? " " : "", vals[i]);
        if (w < 0 || (size_t)w >= sizeof(line) - off || strchr(vals[i], '\n')) {
            snprintf(err, errsz, "config error at %s: 'user': line too long", where);
            return -1;
        }
        off += (size_t)w;
    }
    c->acl.acl_users = str_join_line(c->acl.acl_users, line);
    return 0;
}

static struct cfg *
cfg_defaults(void)
{
    struct cfg *c = rv_calloc(1, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++) {
        const char *why = key_store(c, &cfg_keys[i], cfg_keys[i].def);
        (void)why;
    }
    (void)parse_obl(c); /* derived fields, so defaults format as a parsed config does */
    return c;
}

struct cfg *
cfg_dup(const struct cfg *src)
{
    struct cfg *c = rv_malloc(sizeof(*c));
    memcpy(c, src, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++) {
        if (cfg_keys[i].kind == K_STR) {
            char **slot = (char **)((char *)c + cfg_keys[i].off);
            *slot = rv_strndup(*slot, strlen(*slot));
        }
    }
    c->acl.acl_users = src->acl.acl_users
                           ? rv_strndup(src->acl.acl_users, strlen(src->acl.acl_users))
                           : NULL;
    c->node.rename_commands = src->node.rename_commands
                                  ? rv_strndup(src->node.rename_commands,
                                               strlen(src->node.rename_commands))
                                  : NULL;
    return c;
}

void
cfg_destroy(struct cfg *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < NKEYS; i++) {
        if (cfg_keys[i].kind == K_STR) {
            rv_free(*(char **)((char *)c + cfg_keys[i].off));
        }
    }
    rv_free(c->acl.acl_users);
    rv_free(c->node.rename_commands);
    rv_free(c);
}

/* Split a config line into words: whitespace separated, "double quotes" with
 * C escapes (\n \r \t \" \\ \xHH), 'single quotes' with \' only. Returns the
 * word count, or -1 for unbalanced quotes. Words are written into out. */
static int
split_line(const char *s, char words[][1024], int max)
{
    int n = 0;
    for (;;) {
        while (*s && isspace((unsigned char)*s)) {
            s++;
        }
        if (!*s || *s == '#') {
            return n;
        }
        if (n == max) {
            return -1;
        }
        char *w = words[n];
        size_t len = 0;
        char q = 0;
        if (*s == '"' || *s == '\'') {
            q = *s++;
        }
        while (*s && (q || !isspace((unsigned char)*s))) {
            char ch = *s++;
            if (q && ch == q) {
                q = 0;
                if (*s && !isspace((unsigned char)*s)) {
                    return -1;
                }
                break;
            }
            if (q == '"' && ch == '\\' && *s) {
                ch = *s++;
                switch (ch) {
                case 'n': ch = '\n'; break;
                case 'r': ch = '\r'; break;
                case 't': ch = '\t'; break;
                case 'x':
                    if (isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1])) {
                        char hex[3] = { s[0], s[1], 0 };
                        ch = (char)strtol(hex, NULL, 16);
                        s += 2;
                    }
                    break;
                default: break;
                }
            } else if (q == '\'' && ch == '\\' && *s == '\'') {
                ch = *s++;
            }
            if (len + 1 < 1024) {
                w[len++] = ch;
            }
        }
        if (q) {
            return -1;
        }
        w[len] = '\0';
        n++;
    }
}

/* Keys whose value is several words on the line (not one quoted string):
 * "bind a b", "replicaof host port". */
static bool
key_multiword(const struct cfg_key *k)
{
    return strcmp(k->name, "bind") == 0 || strcmp(k->name, "replicaof") == 0;
}

/* Apply "key value..." from a source; where names the source for errors. */
static int
apply_kv(struct cfg *c, const char *key, const char *const *vals, int nvals, const char *where,
         char *err, size_t errsz)
{
    if (strcasecmp(key, "user") == 0 || strcasecmp(key, "rename-command") == 0 ||
        strcasecmp(key, "rename_command") == 0) {
        return apply_repeatable(c, key, vals, nvals, where, err, errsz);
    }
    const struct cfg_key *k = key_find(key, strlen(key));
    if (k == NULL) {
        snprintf(err, errsz, "config error at %s: '%s': unknown config key", where, key);
        return -1;
    }
    char joined[4096] = "";
    size_t off = 0;
    for (int i = 0; i < nvals; i++) {
        off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s%s", i ? " " : "", vals[i]);
        if (off >= sizeof(joined)) {
            snprintf(err, errsz, "config error at %s: '%s': value too long", where, k->name);
            return -1;
        }
    }
    if (nvals == 0 && k->kind != K_STR) {
        snprintf(err, errsz, "config error at %s: '%s': missing value", where, k->name);
        return -1;
    }
    if (nvals > 1 && !key_multiword(k)) {
        snprintf(err, errsz, "config error at %s: '%s': expected one value, got %d", where, k->name,
                 nvals);
        return -1;
    }
    const char *why = key_store(c, k, joined);
    if (why) {
        snprintf(err, errsz, "config error at %s: '%s': invalid value '%s' (%s)", where, k->name,
                 joined, why);
        return -1;
    }
    if (strcmp(k->name, "bind") == 0) {
        c->net.bind_explicit = true;
    }
    return 0;
}

static int
load_file(struct cfg *c, const char *path, char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errsz, "config error at %s: cannot open config file: %s", path,
                 strerror(errno));
        return -1;
    }
    char line[8192];
    static char words[64][1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char where[4200];
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        int n = split_line(line, words, 64);
        if (n < 0) {
            snprintf(err, errsz, "config error at %s: unbalanced quotes or too many words", where);
            rc = -1;
        } else if (n > 0) {
            const char *vals[63];
            for (int i = 1; i < n; i++) {
                vals[i - 1] = words[i];
            }
            rc = apply_kv(c, words[0], vals, n - 1, where, err, errsz);
        }
    }
    fclose(f);
    return rc;
}

struct cfg *
cfg_load(int argc, char **argv, char *err, size_t errsz)
{
    struct cfg *c = cfg_defaults();
    int i = 1;
    const char *file = getenv("RUVIO_CONFIG");

    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        file = argv[1];
        i = 2;
    }
    cfg_file_path[0] = '\0';
    if (file && *file) {
        snprintf(cfg_file_path, sizeof(cfg_file_path), "%s", file);
        if (load_file(c, file, err, errsz) != 0) {
            goto fail;
        }
    }
    const char *dd = getenv("RUVIO_DATA_DIR");
    if (dd && *dd) {
        const char *v[1] = { dd };
        if (apply_kv(c, "dir", v, 1, "$RUVIO_DATA_DIR", err, errsz) != 0) {
            goto fail;
        }
    }
    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
            snprintf(err, errsz, "config error at argument %d: expected --key, got '%s'", i,
                     argv[i]);
            goto fail;
        }
        const char *key = argv[i] + 2;
        const char *vals[64];
        int n = 0;
        i++;
        while (i < argc && strncmp(argv[i], "--", 2) != 0 && n < 64) {
            vals[n++] = argv[i++];
        }
        char where[300];
        snprintf(where, sizeof(where), "--%s", key);
        if (apply_kv(c, key, vals, n, where, err, errsz) != 0) {
            goto fail;
        }
    }
    const char *bad;
    const char *why = cfg_check(c, &bad);
    if (why) {
        snprintf(err, errsz, "config error: '%s': %s", bad, why);
        goto fail;
    }
    return c;
fail:
    cfg_destroy(c);
    return NULL;
}

static void
format_value(const struct cfg *c, const struct cfg_key *k, char *out, size_t outsz)
{
    const char *base = (const char *)c;
    switch (k->kind) {
    case K_INT:
    case K_MEM: snprintf(out, outsz, "%lld", (long long)*(const int64_t *)(base + k->off)); break;
    case K_BOOL: snprintf(out, outsz, "%s", *(const bool *)(base + k->off) ? "yes" : "no"); break;
    case K_ENUM: snprintf(out, outsz, "%s", k->enums[*(const int64_t *)(base + k->off)]); break;
    case K_STR:
        if (k->off == offsetof(struct cfg, net.client_output_buffer_limit)) {
            /* as Redis shows it: every class, in bytes */
            snprintf(out, outsz, "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld",
                     (long long)c->net.obl_hard[CFG_OBL_NORMAL],
                     (long long)c->net.obl_soft[CFG_OBL_NORMAL],
                     (long long)c->net.obl_secs[CFG_OBL_NORMAL],
                     (long long)c->net.obl_hard[CFG_OBL_REPLICA],
                     (long long)c->net.obl_soft[CFG_OBL_REPLICA],
                     (long long)c->net.obl_secs[CFG_OBL_REPLICA],
                     (long long)c->net.obl_hard[CFG_OBL_PUBSUB],
                     (long long)c->net.obl_soft[CFG_OBL_PUBSUB],
                     (long long)c->net.obl_secs[CFG_OBL_PUBSUB]);
            break;
        }
        snprintf(out, outsz, "%s", *(char *const *)(base + k->off));
        break;
    }
}

void
cfg_get(const struct cfg *c, const char *pattern, size_t plen, cfg_visit_fn *fn, void *arg)
{
    char val[4096];
    for (size_t i = 0; i < NKEYS; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        bool by_name = glob_match(pattern, plen, k->name, strlen(k->name), true);
        if (by_name || (k->alias && glob_match(pattern, plen, k->alias, strlen(k->alias), true))) {
            format_value(c, k, val, sizeof(val));
            fn(arg, by_name ? k->name : k->alias, val); /* (as Redis: the name asked for) */
        }
    }
}

bool
cfg_is_live(const char *name, size_t nlen)
{
    const struct cfg_key *k = key_find(name, nlen);
    return k && k->live;
}

int
cfg_set_state(struct cfg *c, const char *name, const char *val)
{
    const struct cfg_key *k = key_find(name, strlen(name));
    return k != NULL && key_store(c, k, val) == NULL ? 0 : -1;
}

int
cfg_set(struct cfg *c, const char *name, size_t nlen, const char *val, size_t vlen, char *err,
        size_t errsz)
{
    const struct cfg_key *k = key_find(name, nlen);
    if (k == NULL) {
        snprintf(err, errsz, "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'",
                 (int)nlen, name);
        return -1;
    }
    if (!k->live) {
        snprintf(
            err, errsz,
            "ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config",
            k->name);
        return -1;
    }
    char *v = rv_strndup(val, vlen);
    const char *why = key_store(c, k, v);
    rv_free(v);
    if (why == NULL) {
        const char *bad;
        why = cfg_check(c, &bad);
    }
    if (why) {
        snprintf(err, errsz, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
                 k->name, why);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ CONFIG REWRITE */

struct rv_sbuf {
    char *p;
    size_t len, cap;
};

static void
sb_add(struct rv_sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        b->p = rv_realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void
sb_str(struct rv_sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* "name value" as the parser reads it back: quoted when needed. */
static void
fmt_line(struct rv_sbuf *out, const struct cfg_key *k, const char *v)
{
    bool plain = *v != '\0';
    for (const char *p = v; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch <= ' ' || ch >= 127 || ch == '"' || ch == '\'' || ch == '\\' || ch == '#') {
            plain = plain && key_multiword(k) && ch == ' ';
        }
    }
    sb_str(out, k->name);
    sb_str(out, " ");
    if (plain) {
        sb_str(out, v);
    } else {
        sb_str(out, "\"");
        for (const char *p = v; *p; p++) {
            unsigned char ch = (unsigned char)*p;
            char esc[8];
            if (ch == '"' || ch == '\\') {
                snprintf(esc, sizeof(esc), "\\%c", ch);
            } else if (ch == '\n') {
                snprintf(esc, sizeof(esc), "\\n");
            } else if (ch == '\r') {
                snprintf(esc, sizeof(esc), "\\r");
            } else if (ch == '\t') {
                snprintf(esc, sizeof(esc), "\\t");
            } else if (ch < ' ' || ch >= 127) {
                snprintf(esc, sizeof(esc), "\\x%02x", ch);
            } else {
                esc[0] = (char)ch;
                esc[1] = '\0';
            }
            sb_str(out, esc);
        }
        sb_str(out, "\"");
    }
    sb_str(out, "\n");
}

#define REWRITE_MARK "# Generated by CONFIG REWRITE"

/* The old file as lines (each ending in '\n'), with the cfg_keys index of
 * each line's key (-1 for comments, blanks and unknown keys). */
struct rw_file {
    char **lines;
    int *owner;
    size_t n, cap;
    mode_t mode;
    bool has_mark;
};

static char rw_words[64][1024]; /* split_line scratch; under rw_lock */

static void
rw_add(struct rw_file *f, const char *line, size_t n)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        f->lines = rv_realloc(f->lines, f->cap * sizeof(*f->lines));
        f->owner = rv_realloc(f->owner, f->cap * sizeof(*f->owner));
    }
    bool nl = n > 0 && line[n - 1] == '\n';
    char *l = rv_malloc(n + 2);
    memcpy(l, line, n);
    if (!nl) {
        l[n++] = '\n';
    }
    l[n] = '\0';
    f->owner[f->n] = -1;
    int nw = split_line(l, rw_words, 64);
    if (nw > 0) {
        const struct cfg_key *k = key_find(rw_words[0], strlen(rw_words[0]));
        f->owner[f->n] = k ? (int)(k - cfg_keys) : -1;
    }
    if (strncmp(l, REWRITE_MARK, strlen(REWRITE_MARK)) == 0) {
        f->has_mark = true;
    }
    f->lines[f->n++] = l;
}

/* A missing file reads as empty (Redis does the same). */
static int
rw_read(struct rw_file *f, const char *path)
{
    FILE *fp = fopen(path, "r");
    f->mode = 0644;
    if (fp == NULL) {
        return errno == ENOENT ? 0 : -1;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0) {
        f->mode = st.st_mode & 07777;
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    while ((n = getline(&line, &lcap, fp)) >= 0) {
        rw_add(f, line, (size_t)n);
    }
    free(line); /* getline's buffer comes from libc */
    fclose(fp);
    return 0;
}

static void
rw_free(struct rw_file *f)
{
    for (size_t l = 0; l < f->n; l++) {
        rv_free(f->lines[l]);
    }
    rv_free(f->lines);
    rv_free(f->owner);
}

/* true when the file's line gives k the value val (as parsed at start-up). */
static bool
rw_line_gives(const char *line, const struct cfg_key *k, const char *val)
{
    char perr[256], fval[4096];
    const char *vals[63];
    int nw = split_line(line, rw_words, 64);
    for (int w = 1; w < nw; w++) {
        vals[w - 1] = rw_words[w];
    }
    struct cfg *d = cfg_defaults();
    bool same = nw > 0 &&
                apply_kv(d, rw_words[0], vals, nw - 1, "rewrite", perr, sizeof(perr)) == 0;
    if (same) {
        format_value(d, k, fval, sizeof(fval));
        same = strcmp(val, fval) == 0;
    }
    cfg_destroy(d);
    return same;
}

/* The new text: per key, keep its lines, rewrite its last line (dropping
 * earlier duplicates), or append it when it differs from the default. */
static void
rw_plan(const struct cfg *c, struct rw_file *f, struct rv_sbuf *out)
{
    static char dropped[] = "";
    char val[4096], dval[4096];
    struct rv_sbuf tail = { 0 };
    char **repl = rv_calloc(f->n ? f->n : 1, sizeof(*repl)); /* NULL: keep; dropped: drop */
    struct cfg *defs = cfg_defaults();

    for (size_t i = 0; i < NKEYS; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        format_value(c, k, val, sizeof(val));
        format_value(defs, k, dval, sizeof(dval));
        ssize_t last = -1;
        for (size_t l = 0; l < f->n; l++) {
            if (f->owner[l] == (int)i) {
                last = (ssize_t)l;
            }
        }
        if (last < 0) {
            if (strcmp(val, dval) != 0) {
                fmt_line(&tail, k, val);
            }
            continue;
        }
        if (rw_line_gives(f->lines[last], k, val)) {
            continue;
        }
        for (size_t l = 0; l < (size_t)last; l++) {
            if (f->owner[l] == (int)i) {
                repl[l] = dropped;
            }
        }
        if (val[0] == '\0' && strcmp(val, dval) == 0) {
            repl[last] = dropped; /* back to an empty default: the line goes */
        } else {
            struct rv_sbuf one = { 0 };
            fmt_line(&one, k, val);
            repl[last] = one.p;
        }
    }
    cfg_destroy(defs);
    for (size_t l = 0; l < f->n; l++) {
        sb_str(out, repl[l] ? repl[l] : f->lines[l]);
        if (repl[l] && repl[l] != dropped) {
            rv_free(repl[l]);
        }
    }
    rv_free(repl);
    if (tail.len > 0) {
        if (!f->has_mark) {
            sb_str(out, REWRITE_MARK "\n");
        }
        sb_add(out, tail.p, tail.len);
    }
    rv_free(tail.p);
}

/* Temp file beside path, fsync, rename over, fsync the directory. */
static int
rw_write(const char *path, const char *text, size_t len, mode_t mode)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.rewrite-%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        off += (size_t)w;
    }
    errno = 0;
    bool ok = off == len && fchmod(fd, mode) == 0 && fsync(fd) == 0;
    int e = errno ? errno : EIO;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        slash[slash == dir ? 1 : 0] = '\0';
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

int
cfg_rewrite(const struct cfg *c, char *err, size_t errsz)
{
    static pthread_mutex_t rw_lock = PTHREAD_MUTEX_INITIALIZER;
    char path[PATH_MAX];
    struct rw_file f = { 0 };
    struct rv_sbuf out = { 0 };
    int rc = -1;

    if (cfg_file_path[0] == '\0') {
        snprintf(err, errsz, "ERR The server is running without a config file");
        return -1;
    }
    pthread_mutex_lock(&rw_lock);
    /* Rewrite the file a symlink points at, not the link. */
    if (realpath(cfg_file_path, path) == NULL) {
        snprintf(path, sizeof(path), "%s", cfg_file_path);
    }
    if (rw_read(&f, path) == 0) {
        rw_plan(c, &f, &out);
        rc = rw_write(path, out.p ? out.p : "", out.len, f.mode);
    }
    if (rc != 0) {
        snprintf(err, errsz, "ERR Rewriting config file: %s", strerror(errno));
    }
    rw_free(&f);
    rv_free(out.p);
    pthread_mutex_unlock(&rw_lock);
    return rc;
}
