/* node/core/shard_int.h: the fields of a shard. For node/core/shard.c (the
 * state and its accessors) and node/server/shard.c (the thread, its loop,
 * listeners and timers) only; every other module goes through shard.h. */
#pragma once
#include "node/core/shard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SHARD_MAX_LISTEN 8
#define SHARD_SAMPLES 16

/* Per-second rates from one timer interval. */
struct shard_sample {
    double ops, in, out;
};

struct shard {
    unsigned id;
    struct node *node;
    struct event_base *base;
    struct ks *ks;
    const struct cfg *cfg;
    uint64_t cfg_version;
    uint64_t stat_gen;
    int lfds[SHARD_MAX_LISTEN];
    struct event *levs[SHARD_MAX_LISTEN];
    int nlisten;
    int wakefd;
    struct event *wakeev;
    struct event *cronev;
    struct event *rehashev;
    struct event *evictev; /* while over a memory budget: evict a slice every ms */
    pthread_t thread;
    int cpu;
    atomic_bool done;
    int64_t now_ms;
    unsigned slot_lo, slot_hi;
    uint64_t next_conn_id;
    struct conn *conns;
    size_t nconns;
    struct conn *pending;
    bool stopping;
    int64_t stop_deadline_ms;
    uint64_t rnd;
    struct shard_stats stats;
    struct cmd_stat *cmdstats;
    struct dict *watched;
    struct pubsub *pubsub;
    struct block_shard *blocking;
    struct hash_ttl_index *hash_ttl;
    struct metrics *metrics;
    struct persist *persist;
    struct acl_snap *acl;
    uint64_t acl_gen;
    struct evict *evict;
    int64_t clock_floor; /* recovery: the clock never goes below replayed time */
    atomic_ulong pubsub_subs;
    _Atomic(struct shard_msg *) inbox;
    struct shard_sample samples[SHARD_SAMPLES];
    unsigned sample_idx;
    uint64_t last_sample_ms;
    struct shard_sample last;
};
