/* node/obs/latency.c: latency events and the LATENCY command. */
#include "node/obs/latency.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/obs/metrics.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define LATENCY_EVENTS 16
#define LATENCY_HISTORY 160

struct latency_event {
    char name[32];
    int64_t latest_time;
    uint64_t latest, max;
    uint32_t nsamples, next;               /* ring of samples, oldest at next when full */
    struct { int64_t time; uint64_t ms; } samples[LATENCY_HISTORY];
};

struct latency {
    struct latency_event *ev[LATENCY_EVENTS];
    int n;
};

struct latency *
latency_create(void)
{
    return rv_calloc(1, sizeof(struct latency));
}

void
latency_destroy(struct latency *l)
{
    if (l) {
        for (int i = 0; i < l->n; i++) {
            rv_free(l->ev[i]);
        }
        rv_free(l);
    }
}

static struct latency_event *
find(struct latency *l, const char *name, size_t n)
{
    for (int i = 0; l && i < l->n; i++) {
        if (strlen(l->ev[i]->name) == n && strncasecmp(l->ev[i]->name, name, n) == 0) {
            return l->ev[i];
        }
    }
    return NULL;
}

void
latency_add(struct latency *l, const char *event, int64_t unix_s, uint64_t ms)
{
    struct latency_event *e = find(l, event, strlen(event));
    if (e == NULL) {
        if (l->n == LATENCY_EVENTS) {
            return;
        }
        e = rv_calloc(1, sizeof(*e));
        snprintf(e->name, sizeof(e->name), "%s", event);
        l->ev[l->n++] = e;
    }
    e->latest_time = unix_s;
    e->latest = ms;
    if (ms > e->max) {
        e->max = ms;
    }
    /* One sample per second: a second event in the same second keeps the larger. */
    uint32_t last = (e->next + LATENCY_HISTORY - 1) % LATENCY_HISTORY;
    if (e->nsamples > 0 && e->samples[last].time == unix_s) {
        if (ms > e->samples[last].ms) {
            e->samples[last].ms = ms;
        }
        return;
    }
    e->samples[e->next].time = unix_s;
    e->samples[e->next].ms = ms;
    e->next = (e->next + 1) % LATENCY_HISTORY;
    if (e->nsamples < LATENCY_HISTORY) {
        e->nsamples++;
    }
}

void
cmd_latency_latest(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    reply_array(c, (size_t)l->n);
    for (int i = 0; i < l->n; i++) {
        struct latency_event *e = l->ev[i];
        reply_array(c, 4);
        reply_bulk_cstr(c, e->name);
        reply_int(c, e->latest_time);
        reply_int(c, (int64_t)e->latest);
        reply_int(c, (int64_t)e->max);
    }
}

void
cmd_latency_history(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency_event *e = find(metrics_latency(c->shard), argv[2].p, argv[2].len);
    if (e == NULL) {
        reply_array(c, 0);
        return;
    }
    reply_array(c, e->nsamples);
    uint32_t first = e->nsamples < LATENCY_HISTORY ? 0 : e->next;
    for (uint32_t i = 0; i < e->nsamples; i++) {
        uint32_t k = (first + i) % LATENCY_HISTORY;
        reply_array(c, 2);
        reply_int(c, e->samples[k].time);
        reply_int(c, (int64_t)e->samples[k].ms);
    }
}

/* LATENCY RESET [event ...]: the number of events reset. */
void
cmd_latency_reset(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    int reset = 0;
    for (int i = 0; i < l->n;) {
        bool hit = argc == 2;
        for (int a = 2; a < argc && !hit; a++) {
            hit = strlen(l->ev[i]->name) == argv[a].len &&
                  strncasecmp(l->ev[i]->name, argv[a].p, argv[a].len) == 0;
        }
        if (hit) {
            rv_free(l->ev[i]);
            l->ev[i] = l->ev[--l->n];
            reset++;
        } else {
            i++;
        }
    }
    reply_int(c, reset);
}

/* A short human report: each event's figures and the usual advice. */
void
cmd_latency_doctor(struct conn *c, int argc, struct rv_str *argv)
{
    struct latency *l = metrics_latency(c->shard);
    const struct cfg *cfg = shard_cfg(c->shard);
    struct buf b;
    char line[512];
    buf_init(&b);
    if (cfg->latency_monitor_threshold == 0 && l->n == 0) {
        int n = snprintf(line, sizeof(line),
                         "The latency monitor is disabled on this shard: set "
                         "latency-monitor-threshold <milliseconds> with CONFIG SET to enable it.\n");
        buf_append(&b, line, (size_t)n);
    } else if (l->n == 0) {
        int n = snprintf(line, sizeof(line),
                         "No latency spikes of %lld ms or more were observed on shard %u.\n",
                         (long long)cfg->latency_monitor_threshold, shard_id(c->shard));
        buf_append(&b, line, (size_t)n);
    } else {
        int n = snprintf(line, sizeof(line), "Latency spikes observed on shard %u (threshold %lld ms):\n\n",
                         shard_id(c->shard), (long long)cfg->latency_monitor_threshold);
        buf_append(&b, line, (size_t)n);
        bool cmds = false;
        for (int i = 0; i < l->n; i++) {
            struct latency_event *e = l->ev[i];
            uint64_t sum = 0;
            uint32_t first = e->nsamples < LATENCY_HISTORY ? 0 : e->next;
            for (uint32_t k = 0; k < e->nsamples; k++) {
                sum += e->samples[(first + k) % LATENCY_HISTORY].ms;
            }
            n = snprintf(line, sizeof(line),
                         "%d. %s: %u latency spikes (average %llu ms, worst %llu ms, latest %llu ms).\n",
                         i + 1, e->name, e->nsamples,
                         (unsigned long long)(e->nsamples ? sum / e->nsamples : 0),
                         (unsigned long long)e->max, (unsigned long long)e->latest);
            buf_append(&b, line, (size_t)n);
            cmds |= strstr(e->name, "command") != NULL;
        }
        if (cmds) {
            n = snprintf(line, sizeof(line),
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
    struct cmd_stat *cs = shard_cmdstats(c->shard);
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
