/* node/core/lookup.h: the keyspace lookups commands use, with Redis's semantics:
 * read lookups count keyspace hits/misses and touch the access clock; write
 * lookups do neither; both expire a key whose deadline has passed. */
#pragma once
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/core/shard.h"

#include <stdbool.h>

static inline bool
entry_expired(const struct ks_entry *e, int64_t now)
{
    int64_t dl = ks_entry_expire(e);
    return dl != KS_NO_EXPIRE && dl <= now;
}

static inline void
lookup_count(struct conn *c, bool hit)
{
    struct shard_stats *st = &c->env->stats;
    if (hit) {
        st->keyspace_hits++;
    } else {
        st->keyspace_misses++;
    }
}

/* A read lookup missed: the "keymiss" keyspace notification when its class
 * (m) is on (node/features/ksnotify.h; one flag test otherwise). */
static inline void
lookup_missed(struct shard_env *env, struct rv_str k)
{
    if (rv_unlikely(env->cfg->node.notify_flags & CFG_NKE_KEY_MISS)) {
        shard_key_miss(env, k.p, k.len);
    }
}

/* Read lookup (Redis lookupKeyRead). */
static inline struct ks_entry *
lookup_read(struct conn *c, struct rv_str k)
{
    struct ks_entry *e = ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
    lookup_count(c, e != NULL);
    if (e == NULL) {
        lookup_missed(c->env, k);
    }
    return e;
}

/* Write lookup (Redis lookupKeyWrite). */
static inline struct ks_entry *
lookup_write(struct conn *c, struct rv_str k)
{
    return ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
}

/* Expires but leaves the access clock alone (LOOKUP_NOTOUCH: TYPE, TTL, OBJECT);
 * with stats, a miss is counted and notified (OBJECT: lookup_object). */
static inline struct ks_entry *
lookup_notouch(struct conn *c, struct rv_str k, bool stats)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = ks_peek(ks, k.p, k.len);
    if (e != NULL && entry_expired(e, c->env->now_ms)) {
        e = ks_lookup(ks, k.p, k.len, c->env->now_ms); /* deletes it */
    }
    if (stats) {
        lookup_count(c, e != NULL);
        if (e == NULL) {
            lookup_missed(c->env, k);
        }
    }
    return e;
}

/* As lookup_notouch with stats, without the keymiss notification (Redis's
 * LOOKUP_NONOTIFY: OBJECT). */
static inline struct ks_entry *
lookup_object(struct conn *c, struct rv_str k)
{
    struct ks_entry *e = lookup_notouch(c, k, false);
    lookup_count(c, e != NULL);
    return e;
}
