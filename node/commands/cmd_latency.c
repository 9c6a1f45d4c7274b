/* node/commands/cmd_latency.c: LATENCY LATEST/HISTORY/RESET/DOCTOR/HISTOGRAM/HELP. The events are
 * node/obs/latency.c; the histograms are the shard's command statistics. */
#include "base/buf.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/obs/latency.h"
#include "node/obs/metrics.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void
cmd_latency_latest(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    size_t n = latency_count(l);
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        struct latency_info e;
        latency_at(l, i, &e);
        reply_array(c, 4);
        reply_bulk_cstr(c, e.name);
        reply_int(c, e.latest_time);
        reply_int(c, (int64_t)e.latest);
        reply_int(c, (int64_t)e.max);
    }
}

void
cmd_latency_history(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    int i = latency_find(l, argv[2].p, argv[2].len);
    if (i < 0) {
        reply_array(c, 0);
        return;
    }
    struct latency_info e;
    latency_at(l, (size_t)i, &e);
    reply_array(c, e.nsamples);
    for (uint32_t k = 0; k < e.nsamples; k++) {
        struct latency_sample sm = latency_sample_at(l, (size_t)i, k);
        reply_array(c, 2);
        reply_int(c, sm.time);
        reply_int(c, (int64_t)sm.ms);
    }
}

/* LATENCY RESET [event ...]: the number of events reset. */
void
cmd_latency_reset(struct conn *c, int argc, struct rv_str *argv)
{
    reply_int(c, (int64_t)latency_reset(metrics_latency(c->shard), argc - 2, argv + 2));
}

/* The events' part of LATENCY DOCTOR; true when one of them is a command event. */
static bool
doctor_events(struct latency *l, struct buf *b)
{
    char line[512];
    bool cmds = false;
    for (size_t i = 0; i < latency_count(l); i++) {
        struct latency_info e;
        latency_at(l, i, &e);
        uint64_t sum = 0;
        for (uint32_t k = 0; k < e.nsamples; k++) {
            sum += latency_sample_at(l, i, k).ms;
        }
        int n = snprintf(
            line, sizeof(line),
            "%d. %s: %u latency spikes (average %llu ms, worst %llu ms, latest %llu ms).\n",
            (int)i + 1, e.name, e.nsamples, (unsigned long long)(e.nsamples ? sum / e.nsamples : 0),
            (unsigned long long)e.max, (unsigned long long)e.latest);
        buf_append(b, line, (size_t)n);
        cmds |= strstr(e.name, "command") != NULL;
    }
    return cmds;
}

/* A short human report: each event's figures and the usual advice. */
void
cmd_latency_doctor(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    const struct cfg *cfg = c->env->cfg;
    struct buf b;
    char line[512];
    buf_init(&b);
    if (cfg->obs.latency_monitor_threshold == 0 && latency_count(l) == 0) {
        int n =
            snprintf(line, sizeof(line),
                     "The latency monitor is disabled on this shard: set "
                     "latency-monitor-threshold <milliseconds> with CONFIG SET to enable it.\n");
        buf_append(&b, line, (size_t)n);
    } else if (latency_count(l) == 0) {
        int n = snprintf(line, sizeof(line),
                         "No latency spikes of %lld ms or more were observed on shard %u.\n",
                         (long long)cfg->obs.latency_monitor_threshold, c->env->id);
        buf_append(&b, line, (size_t)n);
    } else {
        int n = snprintf(line, sizeof(line),
                         "Latency spikes observed on shard %u (threshold %lld ms):\n\n", c->env->id,
                         (long long)cfg->obs.latency_monitor_threshold);
        buf_append(&b, line, (size_t)n);
        if (doctor_events(l, &b)) {
            n = snprintf(
                line, sizeof(line),
                "\nAdvice: check SLOWLOG GET for the slow commands; avoid O(N) commands on "
                "large values (KEYS, SMEMBERS, LRANGE 0 -1, ...) on a shared shard.\n");
            buf_append(&b, line, (size_t)n);
        }
    }
    reply_verbatim(c, b.data, b.len);
    buf_deinit(&b);
}

/* LATENCY HISTOGRAM [command ...]: per command, calls and the cumulative
 * count at each power-of-two µs bound (Redis's reply shape). */
void
cmd_latency_histogram(struct conn *c, int argc, struct rv_str *argv)
{
    struct cmd_stat *cs = c->env->cmdstats;
    size_t h = reply_defer(c);
    size_t n = 0;
    for (uint32_t id = 0; id < cmd_id_count(); id++) {
        const struct cmd_stat *st = &cs[id];
        uint64_t total = 0;
        for (int b = 0; b < CMD_LAT_BUCKETS; b++) {
            total += st->hist[b];
        }
        if (total == 0) {
            continue;
        }
        char full[96];
        cmd_fullname(cmd_by_id(id), full, sizeof(full));
        bool want = argc == 2;
        for (int a = 2; a < argc && !want; a++) {
            want = strlen(full) == argv[a].len && strncasecmp(full, argv[a].p, argv[a].len) == 0;
        }
        if (!want) {
            continue;
        }
        n++;
        reply_bulk_cstr(c, full);
        reply_map(c, 2);
        reply_bulk_cstr(c, "calls");
        reply_int(c, (int64_t)st->calls);
        reply_bulk_cstr(c, "histogram_usec");
        size_t nb = 0;
        for (int b = 0; b < CMD_LAT_BUCKETS; b++) {
            nb += st->hist[b] != 0;
        }
        reply_map(c, nb);
        uint64_t cum = 0;
        for (int b = 0; b < CMD_LAT_BUCKETS; b++) {
            cum += st->hist[b];
            if (st->hist[b]) {
                reply_int(c, (int64_t)1 << b);
                reply_int(c, (int64_t)cum);
            }
        }
    }
    reply_defer_map(c, h, n);
}

void
cmd_latency_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        NULL,
    };
    reply_help(c, "LATENCY", lines);
}
