/* node/obs/latency.h: the shard's latency monitor (LATENCY LATEST/HISTORY/RESET):
 * named events ("command", "fast-command") at least latency-monitor-threshold
 * ms long, one sample per second per event (the largest), the last 160 kept.
 * Only the shard's thread touches it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct latency;
struct rv_str;

struct latency *latency_create(void);
void latency_destroy(struct latency *l);
void latency_add(struct latency *l, const char *event, int64_t unix_s, uint64_t ms);

/* Reading the events (LATENCY LATEST/HISTORY/DOCTOR): events are numbered
 * 0 .. latency_count() - 1 until the next latency_add or latency_reset. */
struct latency_info {
    const char *name;
    int64_t latest_time;  /* unix seconds */
    uint64_t latest, max; /* ms */
    uint32_t nsamples;
};
struct latency_sample {
    int64_t time; /* unix seconds */
    uint64_t ms;
};
size_t latency_count(const struct latency *l); /* 0 for NULL */
void latency_at(const struct latency *l, size_t i, struct latency_info *out);
/* The number of the event called exactly name, -1 if none (HISTORY and GRAPH:
 * Redis looks them up in a dict that compares bytes). */
int latency_find(const struct latency *l, const char *name, size_t n);
/* Sample k of event i, oldest first (k < its nsamples). */
struct latency_sample latency_sample_at(const struct latency *l, size_t i, uint32_t k);
/* Drop the events named in names[0..n-1], compared case-insensitively as
 * Redis's RESET does, every event when n is 0; returns how many. */
size_t latency_reset(struct latency *l, int n, const struct rv_str *names);
