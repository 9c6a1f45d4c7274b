/* node/core/shard_int.h: the fields of a shard. For node/core/shard.c (the
 * state and its accessors) and node/server/shard.c (the thread, its loop,
 * listeners and timers) only; every other module goes through shard.h. */
#pragma once
#include "node/core/shard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHARD_MAX_LISTEN 16
#define SHARD_SAMPLES 16

/* Per-second rates from one timer interval. */
struct shard_sample {
    double ops, in, out;
};

struct shard {
    struct shard_env env; /* first: shard_env() is a cast */
    struct event_base *base;
    uint64_t cfg_version;
    uint64_t topo_version;
    uint64_t stat_gen;
    int lfds[SHARD_MAX_LISTEN];
    struct event *levs[SHARD_MAX_LISTEN];
    bool ltls[SHARD_MAX_LISTEN]; /* a tls-port listener */
    int nlisten;
    int wakefd;
    struct event *wakeev;
    struct event *cronev;
    struct event *rehashev;
    struct event *evictev; /* while over a memory budget: evict a slice every ms */
    pthread_t thread;
    int cpu;
    atomic_bool done;
    unsigned slot_lo, slot_hi;
    uint64_t next_conn_id;
    struct conn *conns;
    size_t nconns;
    struct conn *pending;
    bool stopping;
    int64_t stop_deadline_ms;
    uint64_t rnd;
    int64_t clock_floor; /* recovery: the clock never goes below replayed time */
    atomic_ulong pubsub_subs;
    _Atomic(struct shard_msg *) inbox;
    struct shard_sample samples[SHARD_SAMPLES];
    unsigned sample_idx;
    uint64_t last_sample_ms;
    struct shard_sample last;
};
_Static_assert(offsetof(struct shard, env) == 0, "shard_env(s) casts s");
