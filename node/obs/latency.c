/* node/obs/latency.c: latency events (LATENCY is in node/commands/cmd_latency.c). */
#include "node/obs/latency.h"

#include "base/mem.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define LATENCY_EVENTS 16
#define LATENCY_HISTORY 160

struct latency_event {
    char name[32];
    int64_t latest_time;
    uint64_t latest, max;
    uint32_t nsamples, next; /* ring of samples, oldest at next when full */
    struct {
        int64_t time;
        uint64_t ms;
    } samples[LATENCY_HISTORY];
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

void
latency_add(struct latency *l, const char *event, int64_t unix_s, uint64_t ms)
{
    int at = latency_find(l, event, strlen(event));
    struct latency_event *e = at >= 0 ? l->ev[at] : NULL;
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

size_t
latency_count(const struct latency *l)
{
    return l ? (size_t)l->n : 0;
}

void
latency_at(const struct latency *l, size_t i, struct latency_info *out)
{
    const struct latency_event *e = l->ev[i];
    *out = (struct latency_info){ e->name, e->latest_time, e->latest, e->max, e->nsamples };
}

int
latency_find(const struct latency *l, const char *name, size_t n)
{
    for (int i = 0; l && i < l->n; i++) {
        if (strlen(l->ev[i]->name) == n && memcmp(l->ev[i]->name, name, n) == 0) {
            return i;
        }
    }
    return -1;
}

struct latency_sample
latency_sample_at(const struct latency *l, size_t i, uint32_t k)
{
    const struct latency_event *e = l->ev[i];
    uint32_t first = e->nsamples < LATENCY_HISTORY ? 0 : e->next;
    uint32_t at = (first + k) % LATENCY_HISTORY;
    return (struct latency_sample){ e->samples[at].time, e->samples[at].ms };
}

size_t
latency_reset(struct latency *l, int n, const struct rv_str *names)
{
    size_t reset = 0;
    for (int i = 0; i < l->n;) {
        bool hit = n == 0;
        for (int a = 0; a < n && !hit; a++) {
            hit = strlen(l->ev[i]->name) == names[a].len &&
                  strncasecmp(l->ev[i]->name, names[a].p, names[a].len) == 0;
        }
        if (hit) {
            rv_free(l->ev[i]);
            l->ev[i] = l->ev[--l->n];
            reset++;
        } else {
            i++;
        }
    }
    return reset;
}
