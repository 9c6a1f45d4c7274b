/* node/obs/metrics.h: per-shard observability state and its readers.
 *
 * The hot path (cmd_call) only bumps the shard's own counters: calls, TSC
 * cycles and one latency-histogram bucket per command (struct cmd_stat), and
 * compares the handler time with one threshold; slower commands take
 * metrics_slow() (slowlog, latency monitor). Other threads (INFO node,
 * GET /metrics) read the counters with relaxed loads: every value is a whole
 * 64-bit word, but values of one scrape are not a snapshot of one instant
 * (a histogram's _count is the sum of its buckets, so it is always consistent
 * with them). Gauges that need the shard's structures (keys, clients) are
 * published by the shard's timer, so they are up to 1/hz seconds old. */
#pragma once
#include "node/core/shard.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct cfg;
struct conn;
struct cmd_spec;
struct node;
struct rv_str;
struct slowlog;
struct latency;

/* Settings the hot path reads (node-wide, updated by CONFIG SET). */
struct metrics_hot {
    _Atomic uint64_t slow_cycles;  /* handler times >= this take metrics_slow() */
    _Atomic uint64_t us_mul;       /* µs = cycles * us_mul >> 32 */
    atomic_bool track;             /* latency-tracking */
    _Atomic uint64_t event_cycles; /* latency-monitor-threshold; UINT64_MAX = off */
};
extern struct metrics_hot metrics_hot;

/* Histogram bucket of a handler time in TSC cycles (see CMD_LAT_BUCKETS). */
static inline unsigned
metrics_bucket(uint64_t cycles, uint64_t us_mul)
{
    uint64_t us = (uint64_t)(((unsigned __int128)cycles * us_mul) >> 32);
    /* The bit length of us (0 for 0) without a branch: one bsr. */
    unsigned b = 63u - (unsigned)__builtin_clzll((us << 1) | 1);
    return b < CMD_LAT_BUCKETS ? b : CMD_LAT_BUCKETS - 1;
}

/* Recompute the hot settings from a config snapshot (start-up, CONFIG SET). */
void metrics_apply_cfg(const struct cfg *c);
/* A command whose handler took `cycles`, at least metrics_hot.slow_cycles. */
void metrics_slow(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
                  uint64_t cycles);

/* Other latency events ("aof-write"): time them only while the monitor is on. */
static inline bool
metrics_events_on(void)
{
    return atomic_load_explicit(&metrics_hot.event_cycles, memory_order_relaxed) != UINT64_MAX;
}
void metrics_event(struct shard *s, const char *event, uint64_t cycles);

struct metrics *metrics_create(void);
void metrics_destroy(struct metrics *m);
void metrics_cron(struct shard *s); /* publish gauges */
/* count error replies with this code (their first word) were sent */
void metrics_error(struct shard *s, const char *code, uint32_t count);
void metrics_reset(struct shard *s); /* CONFIG RESETSTAT: error counts */
struct slowlog *metrics_slowlog(struct shard *s);
struct latency *metrics_latency(struct shard *s);

/* INFO sections. */
void metrics_info_errorstats(struct shard *s, struct buf *b);
void metrics_info_latencystats(struct shard *s, struct buf *b);
void metrics_info_node(struct shard *s, struct buf *b);
/* Prometheus text exposition of shards [from, to) of the node. */
void metrics_prometheus(struct buf *b, struct node *n, unsigned from, unsigned to);

/* The /metrics endpoint: its own thread and event_base. start binds (errors
 * name the address); stop joins the thread. */
int metrics_http_start(struct node *n, const char *addr, char *err, size_t errsz);
void metrics_http_stop(void);
