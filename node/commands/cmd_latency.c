/* node/commands/cmd_latency.c: LATENCY LATEST/HISTORY/GRAPH/RESET/DOCTOR/HISTOGRAM/HELP. The events are
 * node/obs/latency.c; the histograms are the shard's command statistics. */
#include "base/buf.h"
#include "base/mem.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/obs/latency.h"
#include "node/obs/metrics.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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

/* LATENCY GRAPH draws an event's samples as Redis does: 80 columns a band,
 * 4 rows of 3 levels each ("_o#", '|' below a column's top), then a blank
 * row and each sample's age written downwards ("4s", "12m", "3h", "2d"). */
enum { GRAPH_COLS = 80, GRAPH_ROWS = 4, GRAPH_LEVELS = 3, AGE_LEN = 24 };

static void
graph_age(int64_t age, char out[AGE_LEN])
{
    age = age < 0 ? 0 : age;
    if (age < 60) {
        snprintf(out, AGE_LEN, "%llds", (long long)age);
    } else if (age < 3600) {
        snprintf(out, AGE_LEN, "%lldm", (long long)(age / 60));
    } else if (age < 86400) {
        snprintf(out, AGE_LEN, "%lldh", (long long)(age / 3600));
    } else {
        snprintf(out, AGE_LEN, "%lldd", (long long)(age / 86400));
    }
}

/* One band: samples [from, from + n) with their levels (0 .. 11) and ages. */
static void
graph_band(struct buf *b, const int *level, char (*age)[AGE_LEN], size_t from, size_t n)
{
    for (int row = 0; row < GRAPH_ROWS; row++) {
        int base = (GRAPH_ROWS - 1 - row) * GRAPH_LEVELS; /* the row's lowest level */
        for (size_t j = from; j < from + n; j++) {
            int k = level[j] - base;
            buf_putc(b, k < 0 ? ' ' : k < GRAPH_LEVELS ? "_o#"[k] : '|');
        }
        buf_putc(b, '\n');
    }
    size_t longest = 0;
    for (size_t j = from; j < from + n; j++) {
        longest = strlen(age[j]) > longest ? strlen(age[j]) : longest;
    }
    for (size_t row = 0; row <= longest; row++) { /* row 0: the blank margin */
        for (size_t j = from; j < from + n; j++) {
            buf_putc(b, row > 0 && row <= strlen(age[j]) ? age[j][row - 1] : ' ');
        }
        buf_putc(b, '\n');
    }
}

void
cmd_latency_graph(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    int i = latency_find(l, argv[2].p, argv[2].len);
    if (i < 0) {
        reply_errf(c, "ERR No samples available for event '%.*s'", (int)argv[2].len, argv[2].p);
        return;
    }
    struct latency_info e;
    latency_at(l, (size_t)i, &e);
    uint32_t n = e.nsamples;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t ms = latency_sample_at(l, (size_t)i, k).ms;
        lo = ms < lo ? ms : lo;
        hi = ms > hi ? ms : hi;
    }
    uint64_t span = hi > lo ? hi - lo : 1;
    int top = GRAPH_ROWS * GRAPH_LEVELS - 1;
    int *level = rv_malloc(sizeof(int) * (n ? n : 1));
    char(*age)[AGE_LEN] = rv_malloc(AGE_LEN * (size_t)(n ? n : 1));
    int64_t now = (int64_t)time(NULL);
    for (uint32_t k = 0; k < n; k++) {
        struct latency_sample sm = latency_sample_at(l, (size_t)i, k);
        uint64_t lv = (sm.ms - lo) * (uint64_t)(top + 1) / span;
        level[k] = lv > (uint64_t)top ? top : (int)lv;
        graph_age(now - sm.time, age[k]);
    }
    struct buf b;
    buf_init(&b);
    buf_appendf(&b, "%s - high %llu ms, low %llu ms (all time high %llu ms)\n", e.name,
                (unsigned long long)hi, (unsigned long long)(n ? lo : 0),
                (unsigned long long)e.max);
    for (int k = 0; k < GRAPH_COLS; k++) {
        buf_putc(&b, '-');
    }
    buf_putc(&b, '\n');
    for (size_t from = 0; from < n; from += GRAPH_COLS) {
        graph_band(&b, level, age, from, n - from < GRAPH_COLS ? n - from : GRAPH_COLS);
    }
    reply_verbatim(c, b.data, b.len);
    buf_deinit(&b);
    rv_free(level);
    rv_free(age);
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
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
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
