/* node/features/evict.c: memory charging, budgets and eviction (see evict.h). */
#include "node/features/evict.h"

#include "node/features/ksnotify.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/mem.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/core/node.h"
#include "node/core/shard.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define EV_POOL 16

static const char *const policy_names[] = {
    "noeviction",   "allkeys-lru",  "allkeys-lfu",     "allkeys-random",
    "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
};
#define NPOLICIES (sizeof(policy_names) / sizeof(policy_names[0]))

/* A candidate: its key (a private copy) and how good a victim it is. */
struct ev_cand {
    uint64_t score;
    const void *ent; /* the entry when sampled: a cheap duplicate check only */
    char *key;
    size_t klen, cap;
};

struct evict {
    struct evict_hot hot;  /* first: evict_hot() casts */
    unsigned next_db;      /* numbered databases: where the next pick samples (round robin) */
    const struct cfg *cfg; /* the snapshot the fields below come from */
    int policy;
    long long shard_limit; /* 0 = none */
    long long process_limit;
    unsigned samples;
    uint64_t slice_us; /* per admission; 0 = unbounded */
    long long carry;
    _Atomic long long published; /* the charge at this shard's last check (others read it) */
    _Atomic long long pub_peak;  /* peak, for other shards' INFO */
    long long peak;
    uint64_t evicted;
    uint64_t rnd;
    unsigned npool;
    struct ev_cand pool[EV_POOL]; /* ascending score; slots >= npool keep spare buffers */
};

int
evict_policy_parse(const char *name)
{
    for (size_t i = 0; i < NPOLICIES; i++) {
        if (strcasecmp(name, policy_names[i]) == 0) {
            return (int)i;
        }
    }
    return -1;
}

const char *
evict_policy_name(int policy)
{
    return policy >= 0 && (size_t)policy < NPOLICIES ? policy_names[policy] : "noeviction";
}

struct evict *
evict_create(void)
{
    struct evict *ev = rv_calloc(1, sizeof(*ev));
    ev->rnd = clock_mono_us() * 0x9e3779b97f4a7c15ull | 1;
    return ev;
}

void
evict_destroy(struct evict *ev)
{
    if (ev == NULL) {
        return;
    }
    for (unsigned i = 0; i < EV_POOL; i++) {
        rv_free(ev->pool[i].key);
    }
    rv_free(ev);
}

void
evict_add_carry(struct evict *ev, long long bytes)
{
    ev->carry += bytes;
}

static uint64_t
ev_rand(struct evict *ev)
{
    ev->rnd ^= ev->rnd << 13;
    ev->rnd ^= ev->rnd >> 7;
    ev->rnd ^= ev->rnd << 17;
    return ev->rnd;
}

/* Time slice of one admission for a tenacity of 0..100: 50 us per step up to
 * 10 (500 us at the default), then 15% more per step; 100 = no limit. */
static uint64_t
slice_for(int64_t tenacity)
{
    if (tenacity >= 100) {
        return 0;
    }
    if (tenacity <= 10) {
        return (uint64_t)(tenacity < 1 ? 1 : tenacity) * 50;
    }
    double us = 500;
    for (int64_t i = 10; i < tenacity; i++) {
        us *= 1.15;
    }
    return (uint64_t)us;
}

/* Re-derive limits and policy after a config change (one pointer compare otherwise). */
static struct evict *
ev_of(struct shard *s)
{
    struct evict *ev = shard_env(s)->evict;
    if (rv_unlikely(ev->cfg != shard_env(s)->cfg)) {
        evict_adopt_cfg(s);
    }
    return ev;
}

void
evict_adopt_cfg(struct shard *s)
{
    struct evict *ev = shard_env(s)->evict;
    const struct cfg *cfg = shard_env(s)->cfg;
    ev->cfg = cfg;
    int p = evict_policy_parse(cfg->mem.maxmemory_policy);
    p = p < 0 ? EVICT_NOEVICTION : p;
    if (p != ev->policy) {
        ev->npool = 0; /* scores of another policy do not compare */
    }
    ev->policy = p;
    unsigned n = shard_env(s)->node->nshards;
    long long lim = cfg->mem.maxmemory > 0 ? (long long)(cfg->mem.maxmemory / (n ? n : 1)) : 0;
    if (cfg->mem.max_shard_bytes > 0 && (lim == 0 || cfg->mem.max_shard_bytes < lim)) {
        lim = cfg->mem.max_shard_bytes;
    }
    ev->shard_limit = lim;
    ev->process_limit = cfg->mem.max_process_bytes;
    ev->samples = (unsigned)cfg->mem.maxmemory_samples;
    ev->slice_us = slice_for(cfg->mem.maxmemory_eviction_tenacity);
    bool lfu = ev->policy == EVICT_ALLKEYS_LFU || ev->policy == EVICT_VOLATILE_LFU;
    for (unsigned i = 0; i < shard_env(s)->ndbs; i++) {
        if (shard_env(s)->dbs[i] != NULL) {
            ks_set_lfu(shard_env(s)->dbs[i], lfu, (unsigned)cfg->mem.lfu_log_factor,
                       (unsigned)cfg->mem.lfu_decay_time);
            ks_set_lazy(shard_env(s)->dbs[i], shard_lazy_offer, shard_env(s), shard_lazy_mask(cfg));
        }
    }
    ev->hot.armed = ev->shard_limit > 0 || ev->process_limit > 0;
}

/* This thread's net bytes, less what the lazy-free thread has freed for it
 * since (taken back into the thread's count). */
static long long
charge(struct shard *s)
{
    long long back = lazyfree_acct_take_bytes(&shard_env(s)->lazy);
    if (back != 0) {
        rv_mem_thread_adjust(-back);
    }
    return rv_mem_thread_net() + (shard_env(s)->evict)->carry;
}

long long
evict_shard_used(struct shard *s)
{
    return charge(s);
}

/* The other shards' charges as they last published them. */
static long long
others_used(struct shard *s)
{
    struct node *n = shard_env(s)->node;
    long long sum = 0;
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != NULL && n->shards[i] != s) {
            sum += atomic_load_explicit(&(shard_env(n->shards[i])->evict)->published,
                                        memory_order_relaxed);
        }
    }
    return sum;
}

long long
evict_node_used(struct shard *s)
{
    return evict_shard_used(s) + others_used(s);
}

static void
ev_publish(struct evict *ev, long long used)
{
    atomic_store_explicit(&ev->published, used, memory_order_relaxed);
    atomic_store_explicit(&ev->pub_peak, ev->peak, memory_order_relaxed);
}

/* ---------------------------------------------------------------- the pool */

static bool
policy_volatile(int p)
{
    return p >= EVICT_VOLATILE_LRU;
}

/* Higher = better victim. Expired keys first. */
static uint64_t
score_of(struct evict *ev, struct ks *ks, const struct ks_entry *e, int64_t now)
{
    int64_t dl = ks_entry_expire(e);
    if (dl != KS_NO_EXPIRE && dl <= now) {
        return UINT64_MAX;
    }
    switch (ev->policy) {
    case EVICT_ALLKEYS_LFU:
    case EVICT_VOLATILE_LFU: return 255 - ks_entry_freq(ks, e, now);
    case EVICT_VOLATILE_TTL: return UINT64_MAX - 1 - (uint64_t)dl;
    default: return ks_entry_idle_ms(e, now);
    }
}

static void
pool_insert(struct evict *ev, const struct ks_entry *e, struct rv_str key, uint64_t score)
{
    unsigned n = ev->npool, p;
    if (n == EV_POOL && score <= ev->pool[0].score) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        /* A key is in the pool only as the entry it was sampled as (or one freed
         * and reused since: then the bytes decide). */
        if (ev->pool[i].ent == e && ev->pool[i].klen == key.len &&
            memcmp(ev->pool[i].key, key.p, key.len) == 0) {
            return;
        }
    }
    for (p = 0; p < n && ev->pool[p].score <= score; p++) {
    }
    struct ev_cand spare;
    if (n < EV_POOL) {
        spare = ev->pool[n]; /* a free slot: shift [p, n) right */
        memmove(&ev->pool[p + 1], &ev->pool[p], (n - p) * sizeof(spare));
        ev->npool++;
    } else {
        spare = ev->pool[0]; /* full: drop the worst, shift [1, p) left */
        memmove(&ev->pool[0], &ev->pool[1], (p - 1) * sizeof(spare));
        p--;
    }
    if (spare.cap < key.len) {
        spare.key = rv_realloc(spare.key, key.len);
        spare.cap = key.len;
    }
    memcpy(spare.key, key.p, key.len);
    spare.klen = key.len;
    spare.score = score;
    spare.ent = e;
    ev->pool[p] = spare;
}

/* The next victim, or NULL when no key qualifies. */
static struct ks_entry *
pick(struct evict *ev, struct ks *ks, int64_t now)
{
    bool vol = policy_volatile(ev->policy);
    if (ev->policy == EVICT_ALLKEYS_RANDOM || ev->policy == EVICT_VOLATILE_RANDOM) {
        return vol ? ks_random_volatile(ks, ev_rand(ev)) : ks_random(ks, ev_rand(ev));
    }
    for (unsigned i = 0; i < ev->samples; i++) {
        struct ks_entry *e = vol ? ks_random_volatile(ks, ev_rand(ev)) : ks_random(ks, ev_rand(ev));
        if (e == NULL) {
            break;
        }
        pool_insert(ev, e, ks_entry_key(e), score_of(ev, ks, e, now));
    }
    while (ev->npool > 0) {
        struct ev_cand *cd = &ev->pool[--ev->npool];
        struct ks_entry *e = ks_peek(ks, cd->key, cd->klen);
        if (e != NULL && (!vol || ks_entry_expire(e) != KS_NO_EXPIRE)) {
            return e;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- budgets */

enum ev_result { EV_OK, EV_PARTIAL, EV_FAIL };

/* What eviction weighs against the budget: the charge less the values
 * already handed to the lazy-free thread and not freed yet. They are on their
 * way out; counting them made a burst of lazy evictions take far more keys
 * than the budget needed (all of them, at worst) while the thread worked.
 * Read after charge(), which took the bytes freed so far (lazyfree.h). */
static long long
leaving(struct shard *s, long long used)
{
    return used - lazyfree_acct_pending_bytes(&shard_env(s)->lazy);
}

static bool
over_budget(const struct evict *ev, long long used, long long others)
{
    return (ev->shard_limit > 0 && used > ev->shard_limit) ||
           (ev->process_limit > 0 && used + others > ev->process_limit);
}

/* Evict until under budget, for at most slice_us (0 = no limit). */
static enum ev_result
ev_run(struct shard *s, struct evict *ev, uint64_t slice_us)
{
    long long others = ev->process_limit > 0 ? others_used(s) : 0;
    long long used = charge(s);
    if (used > ev->peak) {
        ev->peak = used;
    }
    if (!over_budget(ev, leaving(s, used), others)) {
        return EV_OK;
    }
    if (ev->policy == EVICT_NOEVICTION) {
        ev_publish(ev, used);
        return EV_FAIL;
    }
    struct shard_env *env = shard_env(s);
    unsigned was = env->db;
    int64_t now = env->now_ms;
    uint64_t t0 = clock_mono_us();
    unsigned n = 0;
    enum ev_result r = EV_OK;
    while (over_budget(ev, leaving(s, used), others)) {
        struct ks_entry *e = NULL;
        /* every database is a candidate, in turn (the WAL logs its DEL as that db's) */
        for (unsigned tries = 0; tries < env->ndbs && e == NULL; tries++) {
            unsigned d = ev->next_db++ % env->ndbs;
            if (env->dbs[d] != NULL && ks_size(env->dbs[d]) != 0) {
                shard_use_db(env, d);
                e = pick(ev, env->ks, now);
            }
        }
        if (e == NULL) {
            r = n ? EV_PARTIAL : EV_FAIL;
            break;
        }
        ksn_event(env, KSN_EVICTED, "evicted", ks_entry_key(e));
        ks_evict(env->ks, e);
        n++;
        used = charge(s);
        if ((n & 15) == 0 && slice_us && clock_mono_us() - t0 >= slice_us) {
            r = over_budget(ev, leaving(s, used), others) ? EV_PARTIAL : EV_OK;
            break;
        }
    }
    shard_use_db(env, was);
    ev->evicted += n;
    shard_env(s)->stats.evicted_keys += n;
    ev_publish(ev, used);
    return r;
}

bool
evict_admit(struct shard *s)
{
    struct evict *ev = ev_of(s);
    if (!ev->hot.armed) {
        return true;
    }
    return ev_run(s, ev, ev->slice_us) != EV_FAIL;
}

bool
evict_cron(struct shard *s)
{
    struct evict *ev = ev_of(s);
    long long used = charge(s);
    if (used > ev->peak) {
        ev->peak = used;
    }
    ev_publish(ev, used);
    if (ev->shard_limit > 0 || ev->process_limit > 0) {
        /* At most half of each millisecond while over: clients keep being served. */
        uint64_t slice = ev->slice_us == 0 || ev->slice_us > 500 ? 500 : ev->slice_us;
        return ev_run(s, ev, slice) == EV_PARTIAL;
    }
    return false;
}

uint64_t
evict_evicted_keys(struct shard *s)
{
    return (shard_env(s)->evict)->evicted;
}
long long
evict_peak(struct shard *s)
{
    return (shard_env(s)->evict)->peak;
}

bool
evict_lfu(struct shard *s)
{
    struct evict *ev = ev_of(s);
    return ev->policy == EVICT_ALLKEYS_LFU || ev->policy == EVICT_VOLATILE_LFU;
}

long long
evict_shard_limit(struct shard *s)
{
    return ev_of(s)->shard_limit;
}

size_t
evict_clients_mem(struct shard *s)
{
    size_t sum = 0;
    for (struct conn *c = shard_conn_first(s); c; c = c->next) {
        sum += c->rbuf.cap + c->wbuf.cap;
    }
    return sum;
}

/* ---------------------------------------------------------------- INFO */

static const char *
human(char out[32], double v)
{
    static const char *const units[] = { "B", "K", "M", "G", "T" };
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, 32, "%.2f%s", v, units[u]);
    return out;
}

void
evict_info_memory(struct shard *s, struct buf *b)
{
    struct evict *ev = ev_of(s);
    const struct cfg *cfg = shard_env(s)->cfg;
    long long mine = evict_shard_used(s), node = mine + others_used(s);
    size_t rss = rv_mem_rss(), alloc = rv_mem_allocated();
    char h[4][32];
    if (mine > ev->peak) {
        ev->peak = mine;
    }
    ev_publish(ev, mine);
    /* The node's peak: the sum of the shards' peaks bounds it from above; the
     * current total from below. */
    long long peak = node;
    {
        struct node *n = shard_env(s)->node;
        long long sum = 0;
        for (unsigned i = 0; i < n->nshards; i++) {
            sum += n->shards[i] == s
                       ? ev->peak
                       : atomic_load_explicit(&(shard_env(n->shards[i])->evict)->pub_peak,
                                              memory_order_relaxed);
        }
        if (sum > peak) {
            peak = sum;
        }
    }
    buf_appendf(b, "# Memory\r\nused_memory:%lld\r\nused_memory_human:%s\r\n", node,
                human(h[0], (double)node));
    buf_appendf(b, "used_memory_rss:%zu\r\nused_memory_rss_human:%s\r\n", rss,
                human(h[1], (double)rss));
    buf_appendf(b,
                "used_memory_peak:%lld\r\nused_memory_peak_human:%s\r\n"
                "used_memory_peak_perc:%.2f%%\r\n",
                peak, human(h[2], (double)peak),
                peak > 0 ? 100.0 * (double)node / (double)peak : 0.0);
    buf_appendf(b, "allocator_allocated:%zu\r\nallocator_active:%zu\r\nallocator_resident:%zu\r\n",
                alloc, rv_mem_active(), rv_mem_resident());
    long long sysmem = (long long)sysconf(_SC_PHYS_PAGES) * (long long)sysconf(_SC_PAGESIZE);
    buf_appendf(b, "total_system_memory:%lld\r\ntotal_system_memory_human:%s\r\n", sysmem,
                human(h[3], (double)sysmem));
    buf_appendf(b, "maxmemory:%lld\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n",
                (long long)cfg->mem.maxmemory, human(h[3], (double)cfg->mem.maxmemory),
                evict_policy_name(ev->policy));
    buf_appendf(b, "mem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\n",
                node > 0 ? (double)rss / (double)node : 0.0, (long long)rss - node);
    buf_appendf(b, "mem_clients_normal:%zu\r\nmem_allocator:%s\r\n", evict_clients_mem(s),
                rv_mem_allocator());
    buf_appendf(b, "lazyfree_pending_objects:%llu\r\nlazyfreed_objects:%llu\r\n",
                (unsigned long long)lazyfree_acct_pending(&shard_env(s)->lazy),
                (unsigned long long)lazyfree_acct_freed(&shard_env(s)->lazy));
    buf_appendf(b,
                "shard_used_memory:%lld\r\nshard_used_memory_human:%s\r\n"
                "shard_used_memory_peak:%lld\r\n",
                mine, human(h[0], (double)mine), ev->peak);
    buf_appendf(b,
                "shard_maxmemory:%lld\r\nmax_shard_bytes:%lld\r\nmax_process_bytes:%lld\r\n"
                "maxmemory_samples:%lld\r\nmemory_scope:node\r\n\r\n",
                ev->shard_limit, (long long)cfg->mem.max_shard_bytes,
                (long long)cfg->mem.max_process_bytes, (long long)cfg->mem.maxmemory_samples);
}
