/* node/commands/cmd_server.c: INFO, CONFIG, TIME, SHUTDOWN. INFO describes the shard that
 * received the command (Redis Cluster clients see each shard as a node);
 * memory and CPU figures of the whole process are labelled as such. */
#include "node/features/acl.h"
#include "base/buf.h"
#include "base/mem.h"
#define LOG_MODULE "server"
#include "base/log.h"
#include "node/commands/cmds.h"
#include "node/commands/script.h"
#include "node/core/conn.h"
#include "node/features/evict.h"
#include "node/features/monitor.h"
#include "node/features/tracking.h"
#include "node/keyspace/ks.h"
#include "node/obs/metrics.h"
#include "node/core/node.h"
#include "node/persist/persist.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/obs/slowlog.h"
#include "replication/repl.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define RV_REDIS_VERSION "7.4.0"

static void
info_server(struct conn *c, struct buf *b)
{
    struct shard *s = c->shard;
    struct node *n = shard_env(s)->node;
    struct utsname u;
    struct timeval tv;
    uname(&u);
    gettimeofday(&tv, NULL);
    int64_t up = (shard_env(s)->now_ms - n->start_ms) / 1000;
    buf_appendf(
        b,
        "# Server\r\nredis_version:%s\r\nruvio_version:%s\r\nredis_git_sha1:00000000\r\n"
        "redis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:%s\r\nos:%s %s %s\r\narch_bits:64\r\n"
        "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\n"
        "atomicvar_api:c11-builtin\r\ngcc_version:%d.%d.%d\r\nprocess_id:%d\r\n"
        "process_supervised:no\r\nrun_id:%s\r\ntcp_port:%d\r\nserver_time_usec:%lld\r\n"
        "uptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\nhz:%lld\r\nconfigured_hz:%lld\r\n"
        "lru_clock:%lld\r\nexecutable:%s\r\nconfig_file:%s\r\nio_threads_active:0\r\n"
        "listener0:name=tcp,bind=%s,port=%d\r\nshard_id:%u\r\nshards:%u\r\n\r\n",
        RV_REDIS_VERSION, RUVIO_VERSION, shard_multi(s) ? "cluster" : "standalone", u.sysname,
        u.release, u.machine, __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__, (int)getpid(),
        n->run_id, node_shard_port(n, shard_env(s)->id),
        (long long)tv.tv_sec * 1000000 + tv.tv_usec, (long long)up, (long long)(up / 86400),
        (long long)shard_env(s)->cfg->node.hz, (long long)shard_env(s)->cfg->node.hz,
        (long long)(tv.tv_sec & ((1 << 24) - 1)), n->executable, n->config_file,
        shard_env(s)->cfg->net.bind, node_shard_port(n, shard_env(s)->id), shard_env(s)->id,
        n->nshards);
}

static void
info_clients(struct conn *c, struct buf *b)
{
    size_t blocked = 0, paused = 0, pubsub = 0;
    for (struct conn *o = shard_conn_first(c->shard); o; o = o->next) {
        blocked += (o->flags & CONN_BLOCKED) != 0; /* (with those CLIENT PAUSE holds, as Redis) */
        paused += (o->flags & CONN_CPAUSED) != 0;
        pubsub += (o->flags & CONN_PUBSUB) != 0;
    }
    buf_appendf(b,
                "# Clients\r\nconnected_clients:%zu\r\ncluster_connections:0\r\nmaxclients:%lld\r\n"
                "client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\n"
                "blocked_clients:%zu\r\ntracking_clients:%zu\r\nclients_in_timeout_table:%zu\r\n"
                "pubsub_clients:%zu\r\nmonitor_clients:%zu\r\n\r\n",
                shard_conn_count(c->shard), (long long)c->env->cfg->net.maxclients, blocked,
                tracking_clients(c->shard), blocked - paused, pubsub, monitor_count(c->shard));
}

static void
info_memory(struct conn *c, struct buf *b)
{
    evict_info_memory(c->shard, b); /* node/features/evict.c */
    if (b->len >= 2 && memcmp(b->data + b->len - 2, "\r\n", 2) == 0) {
        b->len -= 2; /* (the section's closing blank line: the script lines go before it) */
    }
    script_info_memory(c->shard, b); /* node/commands/script.c */
    buf_append(b, "\r\n", 2);
}

static void
info_persistence(struct conn *c, struct buf *b)
{
    persist_info(c->shard, b);
}

static void
info_stats(struct conn *c, struct buf *b)
{
    struct shard_stats *st = &c->env->stats;
    const struct ks_stats *ks = ks_stats(c->env->dbs[0]); /* (active expiry's figures: db 0's) */
    buf_appendf(b,
                "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                "instantaneous_ops_per_sec:%.0f\r\ntotal_net_input_bytes:%llu\r\n"
                "total_net_output_bytes:%llu\r\ninstantaneous_input_kbps:%.2f\r\n"
                "instantaneous_output_kbps:%.2f\r\n"
                "rejected_connections:%llu\r\nexpired_keys:%llu\r\nexpired_stale_perc:%.2f\r\n"
                "expire_cycle_cpu_milliseconds:%llu\r\nevicted_keys:%llu\r\nkeyspace_hits:%llu\r\n"
                "keyspace_misses:%llu\r\npubsub_channels:0\r\npubsub_patterns:0\r\n"
                "client_query_buffer_limit_disconnections:%llu\r\n"
                "client_output_buffer_limit_disconnections:%llu\r\ntotal_error_replies:%llu\r\n"
                "protocol_errors:%llu\r\n",
                (unsigned long long)st->conns_received, (unsigned long long)st->commands,
                shard_ops_per_sec(c->shard), (unsigned long long)st->net_input_bytes,
                (unsigned long long)st->net_output_bytes, shard_input_kbps(c->shard),
                shard_output_kbps(c->shard), (unsigned long long)st->conns_rejected,
                (unsigned long long)(shard_expired_keys(c->env) - st->expired_keys_base),
                (double)ks->expired_stale_perc,
                (unsigned long long)(ks->expire_cycle_time_us / 1000),
                (unsigned long long)st->evicted_keys, (unsigned long long)st->keyspace_hits,
                (unsigned long long)st->keyspace_misses,
                (unsigned long long)st->client_qbuf_limit_disconnections,
                (unsigned long long)st->client_output_limit_disconnections,
                (unsigned long long)st->total_error_replies,
                (unsigned long long)st->protocol_errors);
    /* Reopen the section for the observability counters (kept apart so the
     * Redis fields above stay one block). */
    b->len -= 2;
    size_t tk, ti, tp;
    tracking_totals(c->shard, &tk, &ti, &tp);
    buf_appendf(
        b,
        "total_forks:0\r\nlatest_fork_usec:0\r\nmigrate_cached_sockets:0\r\n"
        "slave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\n"
        "active_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\n"
        "current_active_defrag_time:0\r\ntracking_total_keys:%zu\r\ntracking_total_items:%zu\r\n"
        "tracking_total_prefixes:%zu\r\nunexpected_error_replies:%llu\r\n"
        "dump_payload_sanitizations:0\r\nio_threaded_reads_processed:0\r\n"
        "io_threaded_writes_processed:0\r\nlog_lines_dropped:%llu\r\nslowlog_len:%zu\r\n",
        tk, ti, tp, (unsigned long long)st->unexpected_errors, (unsigned long long)log_dropped(),
        slowlog_len(metrics_slowlog(c->shard)));
    uint64_t denied[4];
    acl_denied_counts(denied);
    buf_appendf(b,
                "acl_access_denied_auth:%llu\r\nacl_access_denied_cmd:%llu\r\n"
                "acl_access_denied_key:%llu\r\nacl_access_denied_channel:%llu\r\n",
                (unsigned long long)denied[0], (unsigned long long)denied[1],
                (unsigned long long)denied[2], (unsigned long long)denied[3]);
    repl_info_stats(persist_repl(c->shard), b);
    buf_appendf(b, "\r\n");
}

static void
info_replication(struct conn *c, struct buf *b)
{
    struct repl *r = persist_repl(c->shard);
    char host[256];
    int port;
    if (cmd_repl_loading_primary(c, host, sizeof(host), &port)) {
        /* replication attaches once the shard is loaded: the configured role */
        buf_appendf(b,
                    "# Replication\r\nrole:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\n"
                    "master_link_status:down\r\n\r\n",
                    host, port);
        return;
    }
    if (r == NULL && persist_hot(c->persist)->loading) {
        buf_appendf(b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n");
        return;
    }
    repl_info(r, b);
}

static double
tv_sec(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void
info_cpu(struct conn *c, struct buf *b)
{
    struct rusage self, th;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_THREAD, &th);
    struct rusage kids;
    getrusage(RUSAGE_CHILDREN, &kids);
    /* Redis's main thread is the one that runs commands: here, this shard's. */
    buf_appendf(b,
                "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\nused_cpu_sys_children:%.6f\r\n"
                "used_cpu_user_children:%.6f\r\nused_cpu_sys_main_thread:%.6f\r\n"
                "used_cpu_user_main_thread:%.6f\r\nused_cpu_sys_shard:%.6f\r\n"
                "used_cpu_user_shard:%.6f\r\n\r\n",
                tv_sec(self.ru_stime), tv_sec(self.ru_utime), tv_sec(kids.ru_stime),
                tv_sec(kids.ru_utime), tv_sec(th.ru_stime), tv_sec(th.ru_utime),
                tv_sec(th.ru_stime), tv_sec(th.ru_utime));
}

static void
info_commandstats(struct conn *c, struct buf *b)
{
    struct cmd_stat *cs = c->env->cmdstats;
    double tpu = shard_tsc_per_us();
    buf_appendf(b, "# Commandstats\r\n");
    for (uint32_t id = 0; id < cmd_id_count(); id++) {
        if (cs[id].calls == 0 && cs[id].rejected == 0) {
            continue;
        }
        char full[96];
        cmd_fullname(cmd_by_id(id), full, sizeof(full));
        double usec = tpu > 0 ? (double)cs[id].cycles / tpu : 0;
        buf_appendf(b,
                    "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                    "failed_calls=%llu\r\n",
                    full, (unsigned long long)cs[id].calls, (unsigned long long)usec,
                    cs[id].calls ? usec / (double)cs[id].calls : 0.0,
                    (unsigned long long)cs[id].rejected, (unsigned long long)cs[id].failed);
    }
    buf_appendf(b, "\r\n");
}

static void
info_cluster(struct conn *c, struct buf *b)
{
    buf_appendf(b, "# Cluster\r\ncluster_enabled:%d\r\n\r\n",
                shard_multi(c->shard) || c->env->topo != NULL ? 1 : 0);
}

static void
info_keyspace(struct conn *c, struct buf *b)
{
    buf_appendf(b, "# Keyspace\r\n");
    db_info_keyspace(c, b);
    buf_appendf(b, "\r\n");
}

static void
info_errorstats(struct conn *c, struct buf *b)
{
    metrics_info_errorstats(c->shard, b);
}

static void
info_latencystats(struct conn *c, struct buf *b)
{
    metrics_info_latencystats(c->shard, b);
}

static void
info_node(struct conn *c, struct buf *b)
{
    metrics_info_node(c->shard, b);
}

static void
info_shards(struct conn *c, struct buf *b)
{
    unsigned lo, hi;
    shard_slots(c->shard, &lo, &hi);
    buf_appendf(
        b, "# Shards\r\nshard_id:%u\r\nshards:%u\r\nshard_slots:%u-%u\r\nshard_keys:%zu\r\n\r\n",
        c->env->id, c->env->node->nshards, lo, hi, shard_keys(c->env, NULL));
}

typedef void info_fn(struct conn *c, struct buf *b);

static const struct {
    const char *name;
    info_fn *fn;
    bool dflt; /* part of plain INFO */
} sections[] = {
    { "server", info_server, true },
    { "clients", info_clients, true },
    { "memory", info_memory, true },
    { "persistence", info_persistence, true },
    { "stats", info_stats, true },
    { "replication", info_replication, true },
    { "cpu", info_cpu, true },
    { "commandstats", info_commandstats, false },
    { "cluster", info_cluster, true },
    { "keyspace", info_keyspace, true },
    { "shards", info_shards, true },
    { "errorstats", info_errorstats, true },
    { "latencystats", info_latencystats, false },
    { "node", info_node, false },
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

void
cmd_info(struct conn *c, int argc, struct rv_str *argv)
{
    bool want[NSECTIONS] = { false };
    for (int a = 1; a < argc; a++) {
        if (cmd_arg_is(argv[a], "prometheus")) {
            /* Another format altogether: this shard's series, nothing else. */
            struct shard *s = c->shard;
            struct buf b;
            buf_init(&b);
            metrics_prometheus(&b, shard_env(s)->node, shard_env(s)->id, shard_env(s)->id + 1);
            reply_verbatim(c, b.data, b.len);
            buf_deinit(&b);
            return;
        }
    }
    if (argc == 1) {
        for (size_t i = 0; i < NSECTIONS; i++) {
            want[i] = sections[i].dflt;
        }
    }
    for (int a = 1; a < argc; a++) {
        bool all = cmd_arg_is(argv[a], "all") || cmd_arg_is(argv[a], "everything");
        for (size_t i = 0; i < NSECTIONS; i++) {
            if (all || (cmd_arg_is(argv[a], "default") && sections[i].dflt) ||
                cmd_arg_is(argv[a], sections[i].name)) {
                want[i] = true;
            }
        }
    }
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < NSECTIONS; i++) {
        if (want[i]) {
            sections[i].fn(c, &b);
        }
    }
    if (b.len >= 2) {
        b.len -= 2; /* no blank line after the last section */
    }
    reply_verbatim(c, b.data ? b.data : "", b.len);
    buf_deinit(&b);
}

/* ---- CONFIG ---- */

struct cfg_get_ctx {
    struct conn *c;
    size_t n;
    const char *seen[64];
    size_t nseen;
};

static void
cfg_get_visit(void *arg, const char *name, const char *value)
{
    struct cfg_get_ctx *x = arg;
    for (size_t i = 0; i < x->nseen; i++) {
        if (x->seen[i] == name) {
            return;
        }
    }
    if (x->nseen < 64) {
        x->seen[x->nseen++] = name;
    }
    reply_bulk_cstr(x->c, name);
    reply_bulk_cstr(x->c, value);
    x->n++;
}

void
cmd_config_get(struct conn *c, int argc, struct rv_str *argv)
{
    struct cfg_get_ctx x = { .c = c };
    size_t h = reply_defer(c);
    for (int i = 2; i < argc; i++) {
        cfg_get(c->env->cfg, argv[i].p, argv[i].len, cfg_get_visit, &x);
    }
    reply_defer_map(c, h, x.n);
}

void
cmd_config_set(struct conn *c, int argc, struct rv_str *argv)
{
    char err[512];
    if ((argc - 2) % 2 != 0) {
        reply_err_arity(c, "config|set");
        return;
    }
    struct node *n = c->env->node;
    struct cfg *next = cfg_dup(c->env->cfg);
    for (int i = 2; i < argc; i += 2) {
        for (int j = 2; j < i; j += 2) {
            if (argv[j].len == argv[i].len && strncasecmp(argv[j].p, argv[i].p, argv[i].len) == 0) {
                reply_errf(c,
                           "ERR CONFIG SET failed (possibly related to argument '%.*s') - "
                           "duplicate parameter",
                           (int)argv[i].len, argv[i].p);
                cfg_destroy(next);
                return;
            }
        }
        if (cfg_set(next, argv[i].p, argv[i].len, argv[i + 1].p, argv[i + 1].len, err,
                    sizeof(err)) != 0) {
            reply_errf(c, "%s", err);
            cfg_destroy(next);
            return;
        }
    }
    /* Any tls-* key set (even to the same file: that is how certificates are
     * rotated) rebuilds the TLS contexts, as in Redis. */
    for (int i = 2; i < argc; i += 2) {
        if (argv[i].len > 4 && strncasecmp(argv[i].p, "tls-", 4) == 0) {
            if (node_tls_apply(next, err, sizeof(err)) != 0) {
                log_warn("Failed to update TLS configuration: %s", err);
                reply_errf(c,
                           "ERR CONFIG SET failed (possibly related to argument '%.*s') - Unable "
                           "to update TLS configuration. Check server logs.",
                           (int)argv[i].len, argv[i].p);
                cfg_destroy(next);
                return;
            }
            break;
        }
    }
    log_set_level((int)next->obs.loglevel);
    metrics_apply_cfg(next);
    bool pass_changed = strcmp(c->env->cfg->acl.requirepass, next->acl.requirepass) != 0;
    node_publish_cfg(n, next);
    if (pass_changed) {
        acl_set_requirepass(next->acl.requirepass); /* the default user's password (acl.h) */
    }
    shard_adopt_cfg(c->shard);
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != c->shard) {
            shard_wake(n->shards[i]);
        }
    }
    reply_ok(c);
}

void
cmd_config_rewrite(struct conn *c, int argc, struct rv_str *argv)
{
    char err[512];
    /* The newest snapshot: a CONFIG SET on another shard may not be adopted here yet. */
    if (cfg_rewrite(atomic_load(&c->env->node->cfg), err, sizeof(err)) != 0) {
        log_warn("CONFIG REWRITE failed: %s", err);
        reply_errf(c, "%s", err);
        return;
    }
    log_notice("CONFIG REWRITE executed with success.");
    reply_ok(c);
}

void
cmd_config_resetstat(struct conn *c, int argc, struct rv_str *argv)
{
    struct node *n = c->env->node;
    atomic_fetch_add(&n->stat_gen, 1);
    shard_reset_stats(c->shard);
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != c->shard) {
            shard_wake(n->shards[i]);
        }
    }
    reply_ok(c);
}

void
cmd_config_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        NULL,
    };
    reply_help(c, "CONFIG", lines);
}

void
cmd_time(struct conn *c, int argc, struct rv_str *argv)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    reply_array(c, 2);
    reply_bulk_int(c, tv.tv_sec);
    reply_bulk_int(c, tv.tv_usec);
}

void
cmd_shutdown(struct conn *c, int argc, struct rv_str *argv)
{
    for (int i = 1; i < argc; i++) {
        if (cmd_arg_is(argv[i], "abort")) {
            reply_errf(c, "ERR No shutdown in progress.");
            return;
        }
        if (!cmd_arg_is(argv[i], "nosave") && !cmd_arg_is(argv[i], "save") &&
            !cmd_arg_is(argv[i], "now") && !cmd_arg_is(argv[i], "force")) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (cmd_arg_is(argv[i], "save")) {
            atomic_store(&c->env->node->save_on_exit, true);
        }
    }
    /* Like Redis, a successful SHUTDOWN sends no reply: the connection closes. */
    kill(getpid(), SIGTERM);
    conn_close_after_reply(c);
}

void
cmd_memory_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        NULL,
    };
    reply_help(c, "MEMORY", lines);
}
