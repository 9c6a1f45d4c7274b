/* node/obs/metrics.c: slow-command hook, error counts, published gauges, INFO
 * errorstats/latencystats/node, the Prometheus exposition and the /metrics
 * HTTP thread. See metrics.h for what is read without locks and how. */
#include "node/obs/metrics.h"

#define LOG_MODULE "metrics"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/obs/latency.h"
#include "node/core/node.h"
#include "node/obs/slowlog.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_ERRORS 128 /* distinct error codes tracked, as Redis */

struct metrics_hot metrics_hot = {
    .slow_cycles = UINT64_MAX, .us_mul = 0, .track = true, .event_cycles = UINT64_MAX
};

struct error_stat {
    char code[32];
    uint64_t count;
};

struct metrics {
    struct slowlog *slowlog;
    struct latency *latency;
    /* Error codes: entries below nerrors are complete (release/acquire), so
     * other threads can read them. */
    struct error_stat errors[METRICS_MAX_ERRORS];
    _Atomic uint32_t nerrors;
    /* Gauges published by the shard's timer. */
    _Atomic uint64_t keys, expires, clients, blocked, slowlog_len;
};

static uint64_t
ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Keys expired since CONFIG RESETSTAT; a reset racing with the two loads
 * reads as 0, never as a wrapped-around count. */
static uint64_t
expired_since_reset(struct shard *s)
{
    uint64_t base = ld(&shard_env(s)->stats.expired_keys_base);
    uint64_t all = ld(&shard_env(s)->stats.expired_keys_all); /* (published by the shard's timer) */
    return all > base ? all - base : 0;
}

void
metrics_apply_cfg(const struct cfg *c)
{
    double tpu = shard_tsc_per_us();
    if (tpu <= 0) {
        tpu = 1000;
    }
    uint64_t slow = UINT64_MAX;
    if (c->obs.slowlog_log_slower_than >= 0) {
        slow = (uint64_t)((double)c->obs.slowlog_log_slower_than * tpu);
    }
    uint64_t ev = UINT64_MAX;
    if (c->obs.latency_monitor_threshold > 0) {
        ev = (uint64_t)((double)c->obs.latency_monitor_threshold * 1000.0 * tpu);
        slow = ev < slow ? ev : slow;
    }
    atomic_store_explicit(&metrics_hot.event_cycles, ev, memory_order_relaxed);
    atomic_store_explicit(&metrics_hot.us_mul, (uint64_t)(4294967296.0 / tpu),
                          memory_order_relaxed);
    atomic_store_explicit(&metrics_hot.track, c->obs.latency_tracking, memory_order_relaxed);
    atomic_store_explicit(&metrics_hot.slow_cycles, slow, memory_order_relaxed);
}

struct metrics *
metrics_create(void)
{
    struct metrics *m = rv_calloc(1, sizeof(*m));
    m->slowlog = slowlog_create();
    m->latency = latency_create();
    return m;
}

void
metrics_destroy(struct metrics *m)
{
    if (m) {
        slowlog_destroy(m->slowlog);
        latency_destroy(m->latency);
        rv_free(m);
    }
}

struct slowlog *
metrics_slowlog(struct shard *s)
{
    return shard_env(s)->metrics->slowlog;
}
struct latency *
metrics_latency(struct shard *s)
{
    return shard_env(s)->metrics->latency;
}

void
metrics_slow(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
             uint64_t cycles)
{
    struct shard *s = c->shard;
    struct metrics *m = shard_env(s)->metrics;
    const struct cfg *cfg = shard_env(s)->cfg;
    double tpu = shard_tsc_per_us();
    uint64_t us = tpu > 0 ? (uint64_t)((double)cycles / tpu) : 0;
    int64_t now_s = shard_env(s)->now_ms / 1000;
    if (c->flags & CONN_REPLAY) {
        return; /* recovery, not a client's command */
    }
    if (cfg->obs.slowlog_log_slower_than >= 0 && us >= (uint64_t)cfg->obs.slowlog_log_slower_than &&
        !(cmd->flags & CMD_SKIP_SLOWLOG)) {
        slowlog_add(m->slowlog, c, cmd, argc, argv, us, now_s, (size_t)cfg->obs.slowlog_max_len);
    }
    uint64_t ms = us / 1000;
    if (cfg->obs.latency_monitor_threshold > 0 &&
        ms >= (uint64_t)cfg->obs.latency_monitor_threshold) {
        latency_add(m->latency, (cmd->flags & CMD_FAST) ? "fast-command" : "command", now_s, ms);
    }
}

void
metrics_event(struct shard *s, const char *event, uint64_t cycles)
{
    double tpu = shard_tsc_per_us();
    uint64_t ms = tpu > 0 ? (uint64_t)((double)cycles / tpu / 1000.0) : 0;
    int64_t thr = shard_env(s)->cfg->obs.latency_monitor_threshold;
    if (thr > 0 && ms >= (uint64_t)thr) {
        latency_add(shard_env(s)->metrics->latency, event, shard_env(s)->now_ms / 1000, ms);
    }
}

void
metrics_error(struct shard *s, const char *code, uint32_t count)
{
    struct metrics *m = shard_env(s)->metrics;
    size_t len = strlen(code);
    if (len >= sizeof(m->errors[0].code)) {
        len = sizeof(m->errors[0].code) - 1;
    }
    uint32_t ne = atomic_load_explicit(&m->nerrors, memory_order_relaxed);
    for (uint32_t i = 0; i < ne; i++) {
        struct error_stat *e = &m->errors[i];
        if (strncmp(e->code, code, len) == 0 && e->code[len] == '\0') {
            __atomic_store_n(&e->count, e->count + count, __ATOMIC_RELAXED);
            return;
        }
    }
    if (ne == METRICS_MAX_ERRORS) {
        return; /* like Redis: new codes past the limit are not tracked */
    }
    memcpy(m->errors[ne].code, code, len);
    m->errors[ne].code[len] = '\0';
    m->errors[ne].count = count;
    atomic_store_explicit(&m->nerrors, ne + 1, memory_order_release);
}

void
metrics_reset(struct shard *s)
{
    struct metrics *m = shard_env(s)->metrics;
    uint32_t ne = atomic_load_explicit(&m->nerrors, memory_order_relaxed);
    for (uint32_t i = 0; i < ne; i++) {
        __atomic_store_n(&m->errors[i].count, 0, __ATOMIC_RELAXED);
    }
}

void
metrics_cron(struct shard *s)
{
    struct metrics *m = shard_env(s)->metrics;
    size_t expires, keys = shard_keys(shard_env(s), &expires);
    size_t blocked = 0;
    for (struct conn *c = shard_conn_first(s); c; c = c->next) {
        blocked += (c->flags & CONN_BLOCKED) != 0;
    }
    atomic_store_explicit(&m->keys, keys, memory_order_relaxed);
    atomic_store_explicit(&m->expires, expires, memory_order_relaxed);
    atomic_store_explicit(&m->clients, shard_conn_count(s), memory_order_relaxed);
    atomic_store_explicit(&m->blocked, blocked, memory_order_relaxed);
    atomic_store_explicit(&m->slowlog_len, slowlog_len(m->slowlog), memory_order_relaxed);
}

/* ---- INFO ---- */

void
metrics_info_errorstats(struct shard *s, struct buf *b)
{
    struct metrics *m = shard_env(s)->metrics;
    buf_appendf(b, "# Errorstats\r\n");
    uint32_t ne = atomic_load_explicit(&m->nerrors, memory_order_acquire);
    /* in the order of their codes, as Redis's (a radix tree) */
    uint32_t order[METRICS_MAX_ERRORS];
    for (uint32_t i = 0; i < ne; i++) {
        uint32_t j = i;
        for (; j > 0 && strcmp(m->errors[order[j - 1]].code, m->errors[i].code) > 0; j--) {
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
    for (uint32_t k = 0; k < ne; k++) {
        const struct error_stat *e = &m->errors[order[k]];
        if (e->count) {
            buf_appendf(b, "errorstat_%s:count=%llu\r\n", e->code, (unsigned long long)e->count);
        }
    }
    buf_appendf(b, "\r\n");
}

/* The value below which a fraction p of the samples fall, interpolated
 * linearly inside the power-of-two bucket that holds it. */
static double
hist_percentile(const uint64_t *hist, uint64_t total, double p)
{
    double target = p / 100.0 * (double)total;
    if (target < 1) {
        target = 1;
    }
    uint64_t cum = 0;
    for (int b = 0; b < CMD_LAT_BUCKETS; b++) {
        if (hist[b] == 0) {
            continue;
        }
        if ((double)(cum + hist[b]) >= target) {
            double lo = b == 0 ? 0 : (double)(1ull << (b - 1));
            double hi = (double)(1ull << b);
            double frac = (target - (double)cum) / (double)hist[b];
            return lo + frac * (hi - lo);
        }
        cum += hist[b];
    }
    return (double)(1ull << (CMD_LAT_BUCKETS - 1));
}

void
metrics_info_latencystats(struct shard *s, struct buf *b)
{
    const struct cfg *cfg = shard_env(s)->cfg;
    double pct[16];
    int np = 0;
    for (const char *p = cfg->obs.latency_tracking_info_percentiles; *p && np < 16;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p) {
            break;
        }
        pct[np++] = v;
        p = end;
        while (*p == ' ') {
            p++;
        }
    }
    buf_appendf(b, "# Latencystats\r\n");
    struct cmd_stat *cs = shard_env(s)->cmdstats;
    for (uint32_t id = 0; cfg->obs.latency_tracking && id < cmd_id_count(); id++) {
        uint64_t total = 0;
        for (int k = 0; k < CMD_LAT_BUCKETS; k++) {
            total += cs[id].hist[k];
        }
        if (total == 0) {
            continue;
        }
        char full[96], line[512];
        cmd_fullname(cmd_by_id(id), full, sizeof(full));
        int n = snprintf(line, sizeof(line), "latency_percentiles_usec_%s:", full);
        for (int i = 0; i < np && n > 0 && (size_t)n < sizeof(line); i++) {
            n += snprintf(line + n, sizeof(line) - (size_t)n, "%sp%g=%.3f", i ? "," : "", pct[i],
                          hist_percentile(cs[id].hist, total, pct[i]));
        }
        buf_appendf(b, "%s\r\n", line);
    }
    buf_appendf(b, "\r\n");
}

/* Node-wide totals: every shard's counters (relaxed loads) and gauges. */
void
metrics_info_node(struct shard *self, struct buf *b)
{
    struct node *n = shard_env(self)->node;
    uint64_t conns = 0, rejected = 0, cmds = 0, in = 0, out = 0, hits = 0, misses = 0, errs = 0;
    uint64_t expired = 0, keys = 0, expires = 0, clients = 0, blocked = 0;
    for (unsigned i = 0; i < n->nshards; i++) {
        struct shard *s = n->shards[i];
        struct shard_stats *st = &shard_env(s)->stats;
        struct metrics *m = shard_env(s)->metrics;
        conns += ld(&st->conns_received);
        rejected += ld(&st->conns_rejected);
        cmds += ld(&st->commands);
        in += ld(&st->net_input_bytes);
        out += ld(&st->net_output_bytes);
        hits += ld(&st->keyspace_hits);
        misses += ld(&st->keyspace_misses);
        errs += ld(&st->total_error_replies);
        expired += expired_since_reset(s);
        keys += atomic_load_explicit(&m->keys, memory_order_relaxed);
        expires += atomic_load_explicit(&m->expires, memory_order_relaxed);
        clients += atomic_load_explicit(&m->clients, memory_order_relaxed);
        blocked += atomic_load_explicit(&m->blocked, memory_order_relaxed);
    }
    buf_appendf(
        b,
        "# Node\r\nnode_shards:%u\r\nnode_connected_clients:%llu\r\nnode_blocked_clients:%llu\r\n"
        "node_keys:%llu\r\nnode_expires:%llu\r\nnode_total_connections_received:%llu\r\n"
        "node_rejected_connections:%llu\r\nnode_total_commands_processed:%llu\r\n"
        "node_total_net_input_bytes:%llu\r\nnode_total_net_output_bytes:%llu\r\n"
        "node_keyspace_hits:%llu\r\nnode_keyspace_misses:%llu\r\nnode_expired_keys:%llu\r\n"
        "node_total_error_replies:%llu\r\nnode_log_lines_dropped:%llu\r\n",
        n->nshards, (unsigned long long)clients, (unsigned long long)blocked,
        (unsigned long long)keys, (unsigned long long)expires, (unsigned long long)conns,
        (unsigned long long)rejected, (unsigned long long)cmds, (unsigned long long)in,
        (unsigned long long)out, (unsigned long long)hits, (unsigned long long)misses,
        (unsigned long long)expired, (unsigned long long)errs, (unsigned long long)log_dropped());
    for (unsigned i = 0; i < n->nshards; i++) {
        struct shard *s = n->shards[i];
        struct metrics *m = shard_env(s)->metrics;
        unsigned lo, hi;
        shard_slots(s, &lo, &hi);
        buf_appendf(b, "shard%u:port=%d,slots=%u-%u,keys=%llu,clients=%llu,commands=%llu\r\n", i,
                    node_shard_port(n, i), lo, hi,
                    (unsigned long long)atomic_load_explicit(&m->keys, memory_order_relaxed),
                    (unsigned long long)atomic_load_explicit(&m->clients, memory_order_relaxed),
                    (unsigned long long)ld(&shard_env(s)->stats.commands));
    }
    buf_appendf(b, "\r\n");
}

/* ---- Prometheus text exposition (format 0.0.4) ---- */

static void
family(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values escape backslash, double quote and newline. */
static void
label_value(char *out, size_t outsz, const char *s)
{
    size_t o = 0;
    for (; *s && o + 3 < outsz; s++) {
        if (*s == '\\' || *s == '"') {
            out[o++] = '\\';
            out[o++] = *s;
        } else if (*s == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

enum stat_field {
    SF_CONNS,
    SF_REJECTED,
    SF_CMDS,
    SF_IN,
    SF_OUT,
    SF_HITS,
    SF_MISSES,
    SF_ERRS,
    SF_PROTO,
    SF_QBUF,
    SF_OBL,
    SF_EXPIRED
};

static uint64_t
stat_value(struct shard *s, enum stat_field f)
{
    struct shard_stats *st = &shard_env(s)->stats;
    switch (f) {
    case SF_CONNS: return ld(&st->conns_received);
    case SF_REJECTED: return ld(&st->conns_rejected);
    case SF_CMDS: return ld(&st->commands);
    case SF_IN: return ld(&st->net_input_bytes);
    case SF_OUT: return ld(&st->net_output_bytes);
    case SF_HITS: return ld(&st->keyspace_hits);
    case SF_MISSES: return ld(&st->keyspace_misses);
    case SF_ERRS: return ld(&st->total_error_replies);
    case SF_PROTO: return ld(&st->protocol_errors);
    case SF_QBUF: return ld(&st->client_qbuf_limit_disconnections);
    case SF_OBL: return ld(&st->client_output_limit_disconnections);
    case SF_EXPIRED: return expired_since_reset(s);
    }
    return 0;
}

static const struct {
    const char *name;
    enum stat_field f;
    const char *help;
} counters[] = {
    { "ruvio_connections_received_total", SF_CONNS, "Connections accepted." },
    { "ruvio_rejected_connections_total", SF_REJECTED, "Connections refused (maxclients)." },
    { "ruvio_commands_processed_total", SF_CMDS, "Commands executed." },
    { "ruvio_net_input_bytes_total", SF_IN, "Bytes read from clients." },
    { "ruvio_net_output_bytes_total", SF_OUT, "Bytes written to clients." },
    { "ruvio_keyspace_hits_total", SF_HITS, "Key lookups that found the key." },
    { "ruvio_keyspace_misses_total", SF_MISSES, "Key lookups that did not find the key." },
    { "ruvio_error_replies_total", SF_ERRS, "Error replies sent." },
    { "ruvio_protocol_errors_total", SF_PROTO, "Connections closed for a protocol error." },
    { "ruvio_client_query_buffer_limit_disconnections_total", SF_QBUF,
      "Clients closed for exceeding client-query-buffer-limit." },
    { "ruvio_client_output_buffer_limit_disconnections_total", SF_OBL,
      "Clients closed for exceeding client-output-buffer-limit." },
    { "ruvio_expired_keys_total", SF_EXPIRED, "Keys removed by expiry." },
};

enum gauge_field { GF_KEYS, GF_EXPIRES, GF_CLIENTS, GF_BLOCKED, GF_SLOWLOG };

static const struct {
    const char *name;
    enum gauge_field f;
    const char *help;
} gauges[] = {
    { "ruvio_keys", GF_KEYS, "Keys in the shard." },
    { "ruvio_expiring_keys", GF_EXPIRES, "Keys with a time to live." },
    { "ruvio_connected_clients", GF_CLIENTS, "Client connections." },
    { "ruvio_blocked_clients", GF_BLOCKED, "Clients waiting in a blocking command." },
    { "ruvio_slowlog_length", GF_SLOWLOG, "Entries in the slow log." },
};

static uint64_t
gauge_value(struct shard *s, enum gauge_field f)
{
    struct metrics *m = shard_env(s)->metrics;
    switch (f) {
    case GF_KEYS: return atomic_load_explicit(&m->keys, memory_order_relaxed);
    case GF_EXPIRES: return atomic_load_explicit(&m->expires, memory_order_relaxed);
    case GF_CLIENTS: return atomic_load_explicit(&m->clients, memory_order_relaxed);
    case GF_BLOCKED: return atomic_load_explicit(&m->blocked, memory_order_relaxed);
    case GF_SLOWLOG: return atomic_load_explicit(&m->slowlog_len, memory_order_relaxed);
    }
    return 0;
}

static void
cmd_stat_copy(const struct cmd_stat *src, struct cmd_stat *dst)
{
    dst->calls = ld(&src->calls);
    dst->cycles = ld(&src->cycles);
    dst->failed = ld(&src->failed);
    dst->rejected = ld(&src->rejected);
    for (int k = 0; k < CMD_LAT_BUCKETS; k++) {
        dst->hist[k] = ld(&src->hist[k]);
    }
}

/* The node's own series, then each shard's gauges, counters and error counts. */
static void
prom_shards(struct buf *b, struct node *n, unsigned from, unsigned to)
{
    family(b, "ruvio_shards", "gauge", "Shards in the node.");
    buf_appendf(b, "ruvio_shards %u\n", n->nshards);
    family(b, "ruvio_uptime_seconds", "gauge", "Seconds since the node started.");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    buf_appendf(b, "ruvio_uptime_seconds %lld\n",
                (long long)(((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - n->start_ms) /
                            1000));
    family(b, "ruvio_used_memory_bytes", "gauge", "Bytes allocated by the process (all shards).");
    buf_appendf(b, "ruvio_used_memory_bytes %zu\n", rv_mem_allocated());
    family(b, "ruvio_log_lines_dropped_total", "counter",
           "Log lines dropped because the log queue was full.");
    buf_appendf(b, "ruvio_log_lines_dropped_total %llu\n", (unsigned long long)log_dropped());

    for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
        family(b, gauges[g].name, "gauge", gauges[g].help);
        for (unsigned i = from; i < to; i++) {
            buf_appendf(b, "%s{shard=\"%u\"} %llu\n", gauges[g].name, i,
                        (unsigned long long)gauge_value(n->shards[i], gauges[g].f));
        }
    }
    for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
        family(b, counters[k].name, "counter", counters[k].help);
        for (unsigned i = from; i < to; i++) {
            buf_appendf(b, "%s{shard=\"%u\"} %llu\n", counters[k].name, i,
                        (unsigned long long)stat_value(n->shards[i], counters[k].f));
        }
    }
    family(b, "ruvio_errors_total", "counter", "Error replies by error code (INFO errorstats).");
    for (unsigned i = from; i < to; i++) {
        struct metrics *m = shard_env(n->shards[i])->metrics;
        uint32_t ne = atomic_load_explicit(&m->nerrors, memory_order_acquire);
        for (uint32_t e = 0; e < ne; e++) {
            char code[80];
            label_value(code, sizeof(code), m->errors[e].code);
            buf_appendf(b, "ruvio_errors_total{shard=\"%u\",error=\"%s\"} %llu\n", i, code,
                        (unsigned long long)ld(&m->errors[e].count));
        }
    }
}

/* Calls, failed and rejected calls per command of shards [from, to); copy
 * holds their stats, nids per shard. */
static void
prom_command_counters(struct buf *b, const struct cmd_stat *copy, size_t nids, unsigned from,
                      unsigned to)
{
    static const struct {
        const char *name;
        size_t off;
        const char *help;
    } per_cmd[] = {
        { "ruvio_command_calls_total", offsetof(struct cmd_stat, calls), "Calls of the command." },
        { "ruvio_command_failed_calls_total", offsetof(struct cmd_stat, failed),
          "Calls that replied with an error." },
        { "ruvio_command_rejected_calls_total", offsetof(struct cmd_stat, rejected),
          "Calls refused before running (arity, auth, routing)." },
    };
    for (size_t k = 0; k < sizeof(per_cmd) / sizeof(per_cmd[0]); k++) {
        family(b, per_cmd[k].name, "counter", per_cmd[k].help);
        for (unsigned i = from; i < to; i++) {
            for (size_t id = 0; id < nids; id++) {
                const struct cmd_stat *st = &copy[(i - from) * nids + id];
                if (st->calls == 0 && st->rejected == 0) {
                    continue;
                }
                char full[96];
                cmd_fullname(cmd_by_id((uint32_t)id), full, sizeof(full));
                buf_appendf(b, "%s{shard=\"%u\",cmd=\"%s\"} %llu\n", per_cmd[k].name, i, full,
                            (unsigned long long)*(const uint64_t *)((const char *)st +
                                                                    per_cmd[k].off));
            }
        }
    }
}

/* The handler-time histogram per command (as prom_command_counters); tpu: TSC ticks per µs. */
static void
prom_command_histograms(struct buf *b, const struct cmd_stat *copy, size_t nids, unsigned from,
                        unsigned to, double tpu)
{
    family(b, "ruvio_command_duration_seconds", "histogram",
           "Time spent in the command's handler (latency-tracking).");
    for (unsigned i = from; i < to; i++) {
        for (size_t id = 0; id < nids; id++) {
            const struct cmd_stat *st = &copy[(i - from) * nids + id];
            uint64_t total = 0;
            for (int k = 0; k < CMD_LAT_BUCKETS; k++) {
                total += st->hist[k];
            }
            if (total == 0) {
                continue;
            }
            char full[96];
            cmd_fullname(cmd_by_id((uint32_t)id), full, sizeof(full));
            uint64_t cum = 0;
            for (int k = 0; k < CMD_LAT_BUCKETS - 1; k++) {
                cum += st->hist[k];
                buf_appendf(
                    b,
                    "ruvio_command_duration_seconds_bucket{shard=\"%u\",cmd=\"%s\",le=\"%.9g\"} %llu\n",
                    i, full, (double)(1ull << k) / 1e6, (unsigned long long)cum);
            }
            buf_appendf(
                b,
                "ruvio_command_duration_seconds_bucket{shard=\"%u\",cmd=\"%s\",le=\"+Inf\"} %llu\n",
                i, full, (unsigned long long)total);
            buf_appendf(b, "ruvio_command_duration_seconds_sum{shard=\"%u\",cmd=\"%s\"} %.9g\n", i,
                        full, tpu > 0 ? (double)st->cycles / tpu / 1e6 : 0.0);
            buf_appendf(b, "ruvio_command_duration_seconds_count{shard=\"%u\",cmd=\"%s\"} %llu\n",
                        i, full, (unsigned long long)total);
        }
    }
}

void
metrics_prometheus(struct buf *b, struct node *n, unsigned from, unsigned to)
{
    double tpu = shard_tsc_per_us();
    prom_shards(b, n, from, to);
    /* Per-command series: one copy of each shard's stats, so every family
     * of a command agrees. */
    size_t nids = cmd_id_count();
    struct cmd_stat *copy = rv_malloc(sizeof(*copy) * nids * (to > from ? to - from : 1));
    for (unsigned i = from; i < to; i++) {
        struct cmd_stat *cs = shard_env(n->shards[i])->cmdstats;
        for (size_t id = 0; id < nids; id++) {
            cmd_stat_copy(&cs[id], &copy[(i - from) * nids + id]);
        }
    }
    prom_command_counters(b, copy, nids, from, to);
    prom_command_histograms(b, copy, nids, from, to, tpu);
    rv_free(copy);
}

/* ---- GET /metrics ---- */

struct metrics_http {
    struct node *node;
    struct event_base *base;
    struct evhttp *http;
    struct event *tick;
    pthread_t thread;
    atomic_bool stop;
};

static struct metrics_http *http_srv;

static void
on_metrics(struct evhttp_request *req, void *arg)
{
    struct metrics_http *h = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
        evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
        evhttp_send_error(req, 405, "Method Not Allowed");
        return;
    }
    struct buf b;
    buf_init(&b);
    metrics_prometheus(&b, h->node, 0, h->node->nshards);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add(out, b.data, b.len);
    buf_deinit(&b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

static void
on_other(struct evhttp_request *req, void *arg)
{
    evhttp_send_error(req, 404, "Not Found");
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http *h = arg;
    if (atomic_load(&h->stop) || atomic_load(&h->node->shutdown)) {
        event_base_loopexit(h->base, NULL);
    }
}

static void *
http_main(void *arg)
{
    struct metrics_http *h = arg;
    pthread_setname_np(pthread_self(), "ruvio-metrics");
    event_base_dispatch(h->base);
    return NULL;
}

int
metrics_http_start(struct node *n, const char *addr, char *err, size_t errsz)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || (size_t)(colon - addr) >= sizeof(host)) {
        snprintf(err, errsz, "config error: 'metrics_address': expected host:port, got '%s'", addr);
        return -1;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    int port = atoi(colon + 1);
    struct metrics_http *h = rv_calloc(1, sizeof(*h));
    h->node = n;
    h->base = event_base_new();
    h->http = h->base ? evhttp_new(h->base) : NULL;
    if (h->http == NULL) {
        snprintf(err, errsz, "metrics_address: cannot create the HTTP server");
        goto fail;
    }
    evhttp_set_cb(h->http, "/metrics", on_metrics, h);
    evhttp_set_gencb(h->http, on_other, h);
    evhttp_set_timeout(h->http, 10);
    if (evhttp_bind_socket_with_handle(h->http, host, (uint16_t)port) == NULL) {
        snprintf(err, errsz, "config error: 'metrics_address': cannot listen on %s: %s", addr,
                 strerror(errno));
        goto fail;
    }
    h->tick = event_new(h->base, -1, EV_PERSIST, on_tick, h);
    struct timeval tv = { 0, 100 * 1000 };
    event_add(h->tick, &tv);
    if (pthread_create(&h->thread, NULL, http_main, h) != 0) {
        snprintf(err, errsz, "metrics_address: cannot start the HTTP thread");
        goto fail;
    }
    http_srv = h;
    log_notice("serving GET /metrics on %s", addr);
    return 0;
fail:
    if (h->tick) {
        event_free(h->tick);
    }
    if (h->http) {
        evhttp_free(h->http);
    }
    if (h->base) {
        event_base_free(h->base);
    }
    rv_free(h);
    return -1;
}

void
metrics_http_stop(void)
{
    struct metrics_http *h = http_srv;
    if (h == NULL) {
        return;
    }
    atomic_store(&h->stop, true);
    pthread_join(h->thread, NULL);
    event_free(h->tick);
    evhttp_free(h->http);
    event_base_free(h->base);
    rv_free(h);
    http_srv = NULL;
}
