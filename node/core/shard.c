/* node/core/shard.c: a shard's state as every layer sees it: its keyspace,
 * config snapshot, clock, counters, connections, inbox and the per-module
 * state slots. The thread, its loop and timers are node/server/shard.c. */
#include "node/core/shard_int.h"

#include "base/clock.h"
#include "base/mem.h"
#include "base/rand.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "cluster/topo.h"
#include "node/core/node.h"
#include "node/core/persist_hot.h"
#include "node/keyspace/ks.h"
#include "node/types/obj.h"

#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

/* Set by the server before it creates a shard (shard_set_hooks): never NULL
 * while a shard exists. */
static struct shard_hooks hooks;

void
shard_set_hooks(const struct shard_hooks *h)
{
    hooks = *h;
}

void
shard_key_miss(struct shard_env *env, const char *key, size_t len)
{
    if (hooks.key_miss != NULL) {
        hooks.key_miss(env, key, len);
    }
}

static double tsc_per_us = 0;

double
shard_tsc_per_us(void)
{
    return tsc_per_us;
}

void
shard_calibrate_tsc(void)
{
    if (tsc_per_us > 0) {
        return;
    }
    uint64_t t0 = clock_mono_us(), c0 = __rdtsc();
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    uint64_t t1 = clock_mono_us(), c1 = __rdtsc();
    tsc_per_us = t1 > t0 ? (double)(c1 - c0) / (double)(t1 - t0) : 1000.0;
}

void
shard_adopt_cfg(struct shard *s)
{
    uint64_t g = atomic_load_explicit(&s->env.node->stat_gen, memory_order_relaxed);
    if (g != s->stat_gen) {
        s->stat_gen = g;
        shard_reset_stats(s);
    }
    uint64_t v = atomic_load_explicit(&s->env.node->cfg_version, memory_order_acquire);
    if (v != s->cfg_version) {
        s->cfg_version = v;
        s->env.cfg = atomic_load(&s->env.node->cfg);
        hooks.cfg_adopted(s);
    }
    v = atomic_load_explicit(&s->env.node->topo_version, memory_order_acquire);
    /* (not while the node loads: the control plane must not act on a
     * half-loaded shard; shard_main adopts it first thing) */
    if (__builtin_expect(v != s->topo_version, 0) &&
        !atomic_load_explicit(&s->env.node->loading, memory_order_relaxed)) {
        /* a reference of our own, and where this shard's node is in it */
        struct node *n = s->env.node;
        s->topo_version = v;
        s->env.topo_gen = v;
        topo_put(s->env.topo);
        s->env.topo = node_topo_get(n);
        s->env.topo_me = s->env.topo ? topo_find(s->env.topo, n->ids[s->env.id], TOPO_ID_LEN) : -1;
        hooks.topo_adopted(s);
    }
}

void
shard_post(struct shard *to, struct shard_msg *m)
{
    /* The message's bytes move to the receiver's charge (it frees them). */
    rv_mem_thread_adjust(-(long long)rv_usable_size(m));
    struct shard_msg *head = atomic_load_explicit(&to->inbox, memory_order_relaxed);
    do {
        m->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&to->inbox, &head, m, memory_order_release,
                                                    memory_order_relaxed));
    if (head == NULL) {
        shard_wake(to);
    }
}

void
shard_sample_rates(struct shard *s, int64_t now)
{
    if (s->last_sample_ms == 0 || now <= (int64_t)s->last_sample_ms) {
        s->last_sample_ms = (uint64_t)now;
        s->last = (struct shard_sample){ (double)s->env.stats.commands,
                                         (double)s->env.stats.net_input_bytes,
                                         (double)s->env.stats.net_output_bytes };
        return;
    }
    double dt = (double)(now - (int64_t)s->last_sample_ms) / 1000.0;
    struct shard_sample cur = { (double)s->env.stats.commands, (double)s->env.stats.net_input_bytes,
                                (double)s->env.stats.net_output_bytes };
    struct shard_sample *smp = &s->samples[s->sample_idx++ % SHARD_SAMPLES];
    smp->ops = cur.ops >= s->last.ops ? (cur.ops - s->last.ops) / dt : 0;
    smp->in = cur.in >= s->last.in ? (cur.in - s->last.in) / dt : 0;
    smp->out = cur.out >= s->last.out ? (cur.out - s->last.out) / dt : 0;
    s->last = cur;
    s->last_sample_ms = (uint64_t)now;
}

static double
sample_mean(const struct shard *s, size_t off)
{
    double sum = 0;
    for (unsigned i = 0; i < SHARD_SAMPLES; i++) {
        sum += *(const double *)((const char *)&s->samples[i] + off);
    }
    return sum / SHARD_SAMPLES;
}

double
shard_ops_per_sec(const struct shard *s)
{
    return sample_mean(s, offsetof(struct shard_sample, ops));
}
double
shard_input_kbps(const struct shard *s)
{
    return sample_mean(s, offsetof(struct shard_sample, in)) / 1024;
}
double
shard_output_kbps(const struct shard *s)
{
    return sample_mean(s, offsetof(struct shard_sample, out)) / 1024;
}

void
shard_wake(struct shard *s)
{
    uint64_t one = 1;
    if (s->wakefd >= 0) {
        ssize_t w = write(s->wakefd, &one, sizeof(one));
        (void)w;
    }
}

struct ks **
shard_swap_dbs(struct shard *s, struct ks **dbs)
{
    struct ks **o = s->env.dbs;
    if (o != NULL && o[0] != NULL && ks_counts_slots(o[0])) {
        ks_count_slots(dbs[0], true);
    }
    s->env.dbs = dbs;
    s->env.ks = dbs[0];
    s->env.db = 0;
    return o;
}

void
shard_dbs_init(struct shard_env *env, struct ks *db0, unsigned n)
{
    env->ndbs = n < 1 ? 1 : n;
    env->dbs = rv_calloc(env->ndbs, sizeof(*env->dbs));
    env->dbs[0] = db0;
    env->ks = db0;
    env->db = 0;
}

void
shard_dbs_free(struct shard_env *env)
{
    for (unsigned i = 0; env->dbs != NULL && i < env->ndbs; i++) {
        ks_destroy(env->dbs[i]);
    }
    rv_free(env->dbs);
    env->dbs = NULL;
    env->ks = NULL;
}

uint64_t
shard_expired_keys(const struct shard_env *env)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < env->ndbs; i++) {
        n += env->dbs[i] != NULL ? ks_stats(env->dbs[i])->expired_keys : 0;
    }
    return n;
}

bool
shard_lazy_offer(void *arg, const struct ks_entry *e, void *ptr, ks_free_fn *fn)
{
    struct shard_env *env = arg;
    const struct obj_ops *ops = obj_ops_of(ks_entry_type(e));
    size_t effort = ops != NULL && ops->effort != NULL ? ops->effort(e) : 1;
    if (effort <= LAZYFREE_EFFORT) {
        return false;
    }
    /* what the value holds outside its entry: eviction counts it as freed already */
    long long bytes = ops->mem != NULL ? (long long)ops->mem(e) : 0;
    return lazyfree_put(env->node->lazyfree, &env->lazy, fn, ptr, 1, bytes);
}

unsigned
shard_lazy_mask(const struct cfg *cfg)
{
    return (cfg->mem.lazyfree_lazy_server_del ? KS_FREE_SERVER : 0) |
           (cfg->mem.lazyfree_lazy_expire ? KS_FREE_EXPIRE : 0) |
           (cfg->mem.lazyfree_lazy_eviction ? KS_FREE_EVICT : 0);
}

void
shard_lazy_put(struct shard_env *env, ks_free_fn *fn, void *ptr, uint64_t objects)
{
    if (!lazyfree_put(env->node->lazyfree, &env->lazy, fn, ptr, objects, 0)) {
        fn(ptr);
    }
}

size_t
shard_keys(const struct shard_env *env, size_t *expires)
{
    size_t n = 0, x = 0;
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            n += ks_size(env->dbs[i]);
            x += ks_expires_size(env->dbs[i]);
        }
    }
    if (expires != NULL) {
        *expires = x;
    }
    return n;
}

struct ks *
shard_db(struct shard_env *env, unsigned i)
{
    if (env->dbs[i] == NULL) {
        env->dbs[i] = ks_create(rand_u64(), rand_u64());
        ks_inherit(env->dbs[i], env->dbs[0]);
    }
    return env->dbs[i];
}

void
shard_use_db(struct shard_env *env, unsigned i)
{
    env->ks = shard_db(env, i);
    env->db = i;
    ks_set_clock(env->ks, env->now_ms);
}
struct event_base *
shard_base(const struct shard *s)
{
    return s->base;
}
bool
shard_multi(const struct shard *s)
{
    return s->env.node->nshards > 1;
}
struct conn *
shard_conn_first(struct shard *s)
{
    return s->conns;
}

void
shard_wake_all(struct node *n, struct shard *except)
{
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != except && n->shards[i] != NULL) { /* (NULL: still being created) */
            shard_wake(n->shards[i]);
        }
    }
}

void
shard_pubsub_count_add(struct shard *s, long delta)
{
    atomic_fetch_add_explicit(&s->pubsub_subs, (unsigned long)delta, memory_order_relaxed);
}

unsigned long
shard_pubsub_count(const struct shard *s)
{
    return atomic_load_explicit(&((struct shard *)s)->pubsub_subs, memory_order_relaxed);
}
size_t
shard_conn_count(const struct shard *s)
{
    return s->nconns;
}

int64_t
shard_refresh_clock(struct shard *s)
{
    int64_t now = clock_unix_ms();
    s->env.now_ms = now > s->clock_floor ? now : s->clock_floor;
    ks_set_clock(s->env.ks, s->env.now_ms); /* (another database's, when switched to) */
    return s->env.now_ms;
}

void
shard_reset_stats(struct shard *s)
{
    /* The shard that ran CONFIG RESETSTAT has reset for this generation: its
     * next config check must not reset again (and wipe what ran since). */
    s->stat_gen = atomic_load_explicit(&s->env.node->stat_gen, memory_order_relaxed);
    memset(&s->env.stats, 0, sizeof(s->env.stats));
    s->env.stats.expired_keys_base = shard_expired_keys(&s->env);
    s->env.stats.expired_keys_all = s->env.stats.expired_keys_base;
    memset(s->samples, 0, sizeof(s->samples));
    s->last_sample_ms = 0;
    memset(s->env.cmdstats, 0, cmd_id_count() * sizeof(*s->env.cmdstats));
    hooks.stats_reset(s);
}

bool
shard_owns_slot(const struct shard *s, unsigned slot)
{
    return slot >= s->slot_lo && slot <= s->slot_hi;
}

void
shard_slots(const struct shard *s, unsigned *lo, unsigned *hi)
{
    *lo = s->slot_lo;
    *hi = s->slot_hi;
}

uint64_t
shard_next_conn_id(struct shard *s)
{
    /* Ids are unique across the node: shard i hands out i+1, i+1+N, ... */
    uint64_t id = s->next_conn_id;
    s->next_conn_id += s->env.node->nshards;
    return id;
}

void
shard_conn_link(struct shard *s, struct conn *c)
{
    c->prev = NULL;
    c->next = s->conns;
    if (s->conns) {
        s->conns->prev = c;
    }
    s->conns = c;
    s->nconns++;
    atomic_fetch_add_explicit(&s->env.node->nclients, 1,
                              memory_order_relaxed); /* maxclients is node-wide */
}

void
shard_conn_unlink(struct shard *s, struct conn *c)
{
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    s->nconns--;
    atomic_fetch_sub_explicit(&s->env.node->nclients, 1, memory_order_relaxed);
    if (c->flags & CONN_PENDING) {
        struct conn **pp = &s->pending;
        while (*pp && *pp != c) {
            pp = &(*pp)->pnext;
        }
        if (*pp) {
            *pp = c->pnext;
        }
        c->flags &= ~CONN_PENDING;
    }
}


void
shard_set_clock(struct shard *s, int64_t ms)
{
    s->env.now_ms = ms;
    ks_set_clock(s->env.ks, ms);
}

void
shard_set_clock_floor(struct shard *s, int64_t ms)
{
    s->clock_floor = ms;
}

void
shard_want_write(struct shard *s, struct conn *c)
{
    if (rv_unlikely(c->persist != NULL && persist_hot(c->persist)->wal)) {
        hooks.output(c);
    }
    /* A connection waiting for EV_WRITE is flushed by that event, unless it
     * must be closed now (killed, or over its output limit). */
    if (!(c->flags & (CONN_PENDING | CONN_REPLAY)) &&
        (!(c->flags & CONN_WRITE_WAIT) || (c->flags & CONN_CLOSE_ASAP))) {
        c->flags |= CONN_PENDING;
        c->pnext = s->pending;
        s->pending = c;
    }
}
