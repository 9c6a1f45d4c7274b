/* node/keyspace/rh.h: the robin hood hash table under the keyspace (ks.c) and
 * the collection dicts (dict.c), private to node/keyspace.
 *
 * Open addressing with linear probing, robin hood insertion and backward-shift
 * deletion, no tombstones, no wraparound. A table has n home slots followed by
 * a small overflow area and one always-empty sentinel slot, so probes never
 * need a bounds check. home(h) = (h * n) >> 64 (fastrange), which is monotonic
 * in h for any n, so sizes are not powers of two.
 *
 * A slot is one uint64_t: bits 0-44 the entry pointer >> 3 (entries are at
 * least 8-aligned and below 2^48), bits 45-55 an 11-bit tag from the low bits
 * of the hash (independent of the home, which comes from the high bits), bits
 * 56-63 the probe distance + 1 (0 = empty). Keeping the distance in the slot
 * instead of more tag bits is deliberate: robin hood insertion, backward-shift
 * deletion, early-terminating lookups and SCAN all need each resident's home,
 * and this gives it without touching the entry or rehashing its key. A lookup
 * compares tag and distance together (19 bits, exact for a key at our home),
 * so a false dereference happens about once per 2^11 probes.
 *
 * Robin hood keeps every cluster sorted by home; a lookup stops as soon as a
 * resident is closer to its home than we are to ours. Distances are capped at
 * 254 and the overflow area is finite: an insert that would exceed either
 * grows the table at once (rare).
 *
 * Resizing is incremental (struct rh: two tables). Growing (load > 0.9) or
 * shrinking (load < 0.1) allocates a table for count / 0.7 and moves the old
 * table's entries in slot order, a few per write and more when the owner asks
 * (rh_migrate). Lookups search both tables; inserts go to the new one.
 *
 * A shrink can overflow its target even at load 0.7 when the keys left are
 * not spread over the hash space: deletions in hash order (SCAN-driven, as
 * the deletion of a given-away cluster slot, or active expiry) leave every
 * survivor above the deletion point, so the small table's homes for them are
 * crowded many to a slot. Such a shrink is abandoned, never rebuilt in one go
 * (rh_shrink_abandon): the two tables swap roles, the big one, still holding
 * the entries not moved yet, takes inserts again, and the few moved entries
 * go back to it incrementally; no shrink restarts until the count halved
 * (rh.shrink_below) or the owner says the deletions are over (rh_shrink_retry). Only a table that overflows while growing is rebuilt
 * synchronously (env->rebuilds), which takes crowded inserts (tests only).
 *
 * Everything is static inline so that each owner gets its own copy with its
 * constant struct rh_ops folded in: the lookup (rh_find, always inlined)
 * compiles to the same code as a table written for one entry type. Entries are
 * opaque here; the owner supplies their hash and key comparison. */
#pragma once
#include "base/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

__extension__ typedef unsigned __int128 rh_u128;

#define RH_PTR_MASK ((UINT64_C(1) << 45) - 1)
#define RH_TAG_SHIFT 45
#define RH_TAG_MASK (UINT64_C(0x7ff) << RH_TAG_SHIFT)
#define RH_D_SHIFT 56
#define RH_D_ONE (UINT64_C(1) << RH_D_SHIFT)
#define RH_HI_MASK (~RH_PTR_MASK)
#define RH_D1_MAX 255u /* stored distance + 1 never exceeds 254: see rh_tab_find */

struct rh_tab {
    uint64_t *slots; /* cap + 1 slots; slots[cap] stays 0 */
    size_t n;        /* home slots */
    size_t cap;      /* n + overflow */
    size_t count;
};

struct rh {
    struct rh_tab cur;   /* inserts go here */
    struct rh_tab old;   /* being drained while old.slots != NULL */
    size_t rpos;         /* old.slots[0, rpos) are empty */
    size_t shrink_below; /* 0, or: no shrink starts at this many entries or more */
};

/* What the owner keeps beside its tables (the keyspace; dict.c has none and
 * passes NULL): a size floor and statistics. */
struct rh_env {
    size_t reserved;                     /* no shrinking below this many home slots */
    size_t rebuilds;                     /* synchronous rebuilds (rh_tab_rebuild) */
    size_t grows;                        /* resizes forced by an insert out of room */
    size_t shrinks_abandoned;            /* shrinks whose target overflowed */
    void (*resized)(struct rh_env *env); /* a resize started or finished */
};

/* Per owner, constant: table sizes and the entries' hash (env as passed to
 * the call, possibly NULL). */
struct rh_ops {
    size_t min_slots;    /* fewest home slots */
    size_t min_overflow; /* smallest overflow area (at most 256) */
    uint64_t (*hash)(const struct rh_env *env, const void *ent);
};

/* Key comparison of lookups: the entry's key equals key[0, klen). */
typedef bool rh_eq_fn(const void *ent, const char *key, size_t klen);
typedef void rh_visit_fn(void *arg, void *ent);

/* ------------------------------------------------------------------ slots */

static inline unsigned
rh_d1(uint64_t s)
{
    return (unsigned)(s >> RH_D_SHIFT);
}

static inline void *
rh_ent(uint64_t s)
{
    return (void *)(uintptr_t)((s & RH_PTR_MASK) << 3);
}

static inline uint64_t
rh_slot(const void *e, uint64_t h, unsigned d1)
{
    return ((uint64_t)(uintptr_t)e >> 3) | ((h << RH_TAG_SHIFT) & RH_TAG_MASK) |
           ((uint64_t)d1 << RH_D_SHIFT);
}

/* Point the slot at e (the same key, moved). */
static inline void
rh_slot_repoint(uint64_t *sl, const void *e)
{
    *sl = (*sl & ~RH_PTR_MASK) | ((uint64_t)(uintptr_t)e >> 3);
}

/* false when the allocator returned an address a slot cannot hold. */
static inline bool
rh_ptr_ok(const void *p)
{
    return ((uintptr_t)p & 7) == 0 && ((uint64_t)(uintptr_t)p >> 48) == 0;
}

/* ----------------------------------------------------------------- tables */

static inline size_t
rh_home(const struct rh_tab *t, uint64_t h)
{
    return (size_t)(((rh_u128)h * t->n) >> 64);
}

static inline size_t
rh_tab_bytes(const struct rh_tab *t)
{
    return t->slots != NULL ? (t->cap + 1) * sizeof(*t->slots) : 0;
}

static inline void
rh_tab_alloc(struct rh_tab *t, size_t n, const struct rh_ops *ops)
{
    size_t o;
    if (n < ops->min_slots) {
        n = ops->min_slots;
    }
    o = n / 4;
    if (o < ops->min_overflow) {
        o = ops->min_overflow;
    }
    t->n = n;
    t->cap = n + (o > 256 ? 256 : o);
    t->count = 0;
    t->slots = rv_calloc_big((t->cap + 1) * sizeof(*t->slots));
}

static inline void
rh_tab_free(struct rh_tab *t)
{
    if (t->slots != NULL) {
        rv_free_big(t->slots, rh_tab_bytes(t));
    }
    memset(t, 0, sizeof(*t));
}

/* The slot holding key, or NULL. Stops at the first resident closer to its
 * home than we are to ours (this covers empty slots: distance field 0). The
 * distance of the probe never reaches 255 because stored values are <= 254. */
static inline __attribute__((always_inline)) uint64_t *
rh_tab_find(const struct rh_tab *t, uint64_t h, const char *key, size_t klen, rh_eq_fn *eq)
{
    uint64_t *sl = t->slots + rh_home(t, h);
    uint64_t want = ((h << RH_TAG_SHIFT) & RH_TAG_MASK) | RH_D_ONE;
    for (;;) {
        uint64_t s = *sl;
        if ((s & RH_HI_MASK) == want) {
            if (eq(rh_ent(s), key, klen)) {
                return sl;
            }
        } else if (s < (want & ~RH_TAG_MASK)) {
            return NULL;
        }
        sl++;
        want += RH_D_ONE;
    }
}

/* The slot pointing at e (whose key hashes to h), or NULL; no dereference. */
static inline uint64_t *
rh_tab_find_ptr(const struct rh_tab *t, uint64_t h, const void *e)
{
    uint64_t *sl = t->slots + rh_home(t, h);
    uint64_t want = rh_slot(e, h, 1);
    for (;;) {
        uint64_t s = *sl;
        if (s == want) {
            return sl;
        }
        if (s < (want & ~(RH_TAG_MASK | RH_PTR_MASK))) {
            return NULL;
        }
        sl++;
        want += RH_D_ONE;
    }
}

/* Robin hood insert of a key known to be absent. false: no room (a distance
 * would exceed the cap or the run would reach the sentinel); nothing changed. */
static inline bool
rh_tab_insert(struct rh_tab *t, uint64_t h, const void *e)
{
    uint64_t *sl = t->slots;
    size_t pos = rh_home(t, h), end;
    uint64_t cur = rh_slot(e, h, 1);

    /* Clusters are sorted by home: we go before the first resident whose home
     * is after ours, i.e. that is closer to its home than we would be. */
    while (rh_d1(sl[pos]) >= rh_d1(cur)) {
        pos++;
        cur += RH_D_ONE;
        if (rh_d1(cur) >= RH_D1_MAX) {
            return false;
        }
    }
    for (end = pos; sl[end] != 0; end++) {
        if (rh_d1(sl[end]) >= RH_D1_MAX - 1) {
            return false;
        }
    }
    if (end >= t->cap) {
        return false;
    }
    for (size_t i = end; i > pos; i--) {
        sl[i] = sl[i - 1] + RH_D_ONE;
    }
    sl[pos] = cur;
    t->count++;
    return true;
}

/* Backward-shift deletion: pull the following displaced residents back. */
static inline void
rh_tab_del_at(struct rh_tab *t, size_t pos)
{
    uint64_t *sl = t->slots;
    while (rh_d1(sl[pos + 1]) > 1) {
        sl[pos] = sl[pos + 1] - RH_D_ONE;
        pos++;
    }
    sl[pos] = 0;
    t->count--;
}

/* Move every entry of t into a new table of about n home slots, synchronously.
 * Only used when an insert overflows a table that is itself the target of a
 * growing rehash (both the distance cap and the overflow area are exceeded
 * only by crowded homes, so this is rare), and to pre-size before serving. */
static inline void
rh_tab_rebuild(struct rh_tab *t, size_t n, const struct rh_ops *ops, struct rh_env *env)
{
    for (;;) {
        struct rh_tab nt;
        bool ok = true;
        rh_tab_alloc(&nt, n, ops);
        for (size_t i = 0; i < t->cap && ok; i++) {
            if (t->slots[i] != 0) {
                void *e = rh_ent(t->slots[i]);
                ok = rh_tab_insert(&nt, ops->hash(env, e), e);
            }
        }
        if (ok) {
            rh_tab_free(t);
            *t = nt;
            if (env != NULL) {
                env->rebuilds++;
            }
            return;
        }
        rh_tab_free(&nt);
        n += n / 2;
    }
}

/* ------------------------------------------------ two tables: incremental */

static inline bool
rh_rehashing(const struct rh *d)
{
    return d->old.slots != NULL;
}

static inline size_t
rh_count(const struct rh *d)
{
    return d->cur.count + d->old.count;
}

/* Home slots for count entries at load 0.7. */
static inline size_t
rh_target(size_t count, const struct rh_ops *ops)
{
    size_t n = count * 10 / 7 + 1;
    return n < ops->min_slots ? ops->min_slots : n;
}

static inline void
rh_init(struct rh *d, const struct rh_ops *ops)
{
    memset(d, 0, sizeof(*d));
    rh_tab_alloc(&d->cur, ops->min_slots, ops);
}

static inline void
rh_start_resize(struct rh *d, size_t n, const struct rh_ops *ops, struct rh_env *env)
{
    if (n > d->cur.n) {
        d->shrink_below = 0;
    }
    d->old = d->cur;
    d->rpos = 0;
    rh_tab_alloc(&d->cur, n, ops);
    if (env != NULL && env->resized != NULL) {
        env->resized(env);
    }
}

/* Start a resize when the load leaves [0.1, 0.9] (tables never go below
 * min_slots home slots, nor shrink below env->reserved, nor while
 * d->shrink_below holds them). Never while a rehash is already running. */
static inline void
rh_check_resize(struct rh *d, const struct rh_ops *ops, struct rh_env *env)
{
    size_t c = d->cur.count, n = d->cur.n, nn;
    if (rh_rehashing(d)) {
        return;
    }
    if (c * 10 > n * 9 || (n > ops->min_slots && c * 10 < n && (env == NULL || n > env->reserved) &&
                           (d->shrink_below == 0 || c < d->shrink_below))) {
        nn = rh_target(c, ops);
        if (nn != n) {
            rh_start_resize(d, nn, ops, env);
        }
    }
}

static inline void
rh_finish_if_done(struct rh *d, const struct rh_ops *ops, struct rh_env *env)
{
    if (d->old.count == 0) {
        rh_tab_free(&d->old);
        d->rpos = 0;
        if (env != NULL && env->resized != NULL) {
            env->resized(env);
        }
        rh_check_resize(d, ops, env);
    }
}

/* Lift shrink_below and shrink now if the load calls for it: the owner knows
 * the hash-ordered deletions that crowded the last target are over. */
static inline void
rh_shrink_retry(struct rh *d, const struct rh_ops *ops, struct rh_env *env)
{
    d->shrink_below = 0;
    rh_check_resize(d, ops, env);
}

/* A shrink's target overflowed: give the shrink up in O(1). The big table
 * (old, entries below rpos moved out) takes inserts again and the small one
 * is drained back into it from its start; both stay valid robin hood tables,
 * lookups still search both, and no entry leaves a table without entering the
 * other, so SCAN's argument below holds across the swap. */
static inline void
rh_shrink_abandon(struct rh *d, struct rh_env *env)
{
    struct rh_tab small = d->cur;
    d->cur = d->old;
    d->old = small;
    d->rpos = 0;
    d->shrink_below = rh_count(d) / 2;
    if (env != NULL) {
        env->shrinks_abandoned++;
    }
}

/* Insert e (hash h) into d->cur, which is the target of a rehash and has no
 * room for it: abandon a shrink, or rebuild a growing target (rare). */
static __attribute__((noinline, cold, unused)) void
rh_insert_overflowed(struct rh *d, uint64_t h, const void *e, const struct rh_ops *ops,
                     struct rh_env *env)
{
    if (d->cur.n < d->old.n) {
        rh_shrink_abandon(d, env);
    }
    while (!rh_tab_insert(&d->cur, h, e)) {
        rh_tab_rebuild(&d->cur, d->cur.n + d->cur.n / 2, ops, env);
    }
}

/* Insert e (hash h), whose key is known to be absent. */
static inline void
rh_insert(struct rh *d, uint64_t h, const void *e, const struct rh_ops *ops, struct rh_env *env)
{
    if (rv_likely(rh_tab_insert(&d->cur, h, e))) {
        rh_check_resize(d, ops, env);
        return;
    }
    if (!rh_rehashing(d)) {
        size_t nn = rh_target(d->cur.count + 1, ops);
        if (nn < d->cur.n + d->cur.n / 2) {
            nn = d->cur.n + d->cur.n / 2;
        }
        if (env != NULL) {
            env->grows++;
        }
        rh_start_resize(d, nn, ops, env);
        if (rh_tab_insert(&d->cur, h, e)) {
            return;
        }
    }
    rh_insert_overflowed(d, h, e, ops, env);
}

/* While rehashing: move up to max_moves entries (visiting up to max_visits
 * empty slots) from the old table to the new one. Returns the number moved. */
static inline __attribute__((always_inline)) size_t
rh_migrate(struct rh *d, size_t max_moves, size_t max_visits, const struct rh_ops *ops,
           struct rh_env *env)
{
    size_t moved = 0, visits = 0;
    uint64_t *sl = d->old.slots;

    while (moved < max_moves && d->old.count > 0 && visits < max_visits) {
        uint64_t s = sl[d->rpos];
        void *e;
        uint64_t h;
        if (s == 0) {
            d->rpos++;
            visits++;
            continue;
        }
        if (d->rpos + 4 < d->old.cap && sl[d->rpos + 4] != 0) {
            __builtin_prefetch(rh_ent(sl[d->rpos + 4]));
        }
        e = rh_ent(s);
        h = ops->hash(env, e);
        if (rv_unlikely(!rh_tab_insert(&d->cur, h, e))) {
            if (d->cur.n < d->old.n) {
                rh_shrink_abandon(d, env); /* e stays where it is, in what is d->cur now */
                sl = d->old.slots;
                continue;
            }
            do {
                rh_tab_rebuild(&d->cur, d->cur.n + d->cur.n / 2, ops, env);
            } while (!rh_tab_insert(&d->cur, h, e));
        }
        rh_tab_del_at(&d->old, d->rpos);
        moved++;
    }
    rh_finish_if_done(d, ops, env);
    return moved;
}

/* The slot holding key (and its table in *tp), or NULL. */
static inline __attribute__((always_inline)) uint64_t *
rh_find(const struct rh *d, uint64_t h, const char *key, size_t klen, rh_eq_fn *eq,
        struct rh_tab **tp)
{
    uint64_t *sl = rh_tab_find(&d->cur, h, key, klen, eq);
    if (sl != NULL) {
        *tp = (struct rh_tab *)&d->cur;
        return sl;
    }
    if (rv_unlikely(d->old.slots != NULL) &&
        (sl = rh_tab_find(&d->old, h, key, klen, eq)) != NULL) {
        *tp = (struct rh_tab *)&d->old;
        return sl;
    }
    return NULL;
}

/* The slot pointing at e (hash h) and its table, or NULL; no dereference. */
static inline uint64_t *
rh_find_ptr(const struct rh *d, uint64_t h, const void *e, struct rh_tab **tp)
{
    uint64_t *sl = rh_tab_find_ptr(&d->cur, h, e);
    if (sl != NULL) {
        *tp = (struct rh_tab *)&d->cur;
        return sl;
    }
    if (d->old.slots != NULL && (sl = rh_tab_find_ptr(&d->old, h, e)) != NULL) {
        *tp = (struct rh_tab *)&d->old;
        return sl;
    }
    return NULL;
}

/* Delete the entry at sl in t (found by rh_find or rh_find_ptr). */
static inline void
rh_remove_at(struct rh *d, struct rh_tab *t, uint64_t *sl, const struct rh_ops *ops,
             struct rh_env *env)
{
    rh_tab_del_at(t, (size_t)(sl - t->slots));
    if (rh_rehashing(d)) {
        rh_finish_if_done(d, ops, env);
    } else {
        rh_check_resize(d, ops, env);
    }
}

/* Calls fn with every entry of t. */
static inline void
rh_tab_each(const struct rh_tab *t, rh_visit_fn *fn, void *arg)
{
    for (size_t i = 0; t->slots != NULL && i < t->cap; i++) {
        if (t->slots[i] != 0) {
            fn(arg, rh_ent(t->slots[i]));
        }
    }
}

/* ------------------------------------------------------------------- SCAN */

/*
 * SCAN cursors are positions in hash order. Why every key present for the
 * whole scan is returned:
 *
 *  - home(h) = floor(h * n / 2^64) is non-decreasing in h, and with linear
 *    probing and no wraparound an entry sits between its home and the first
 *    empty slot after its home (nothing is ever placed past an empty slot).
 *  - A call with cursor c walks the larger table from s = home(c) to an empty
 *    slot e > s. Every entry with home in [s, e) is at a position in [s, e), so
 *    the walk sees all entries with hash in [c, c') where c' = ceil(e*2^64/n)
 *    is the smallest hash with home >= e; entries with hash < c are skipped
 *    (home < s, or home == s with a smaller hash). It returns c' (0 when e is
 *    past the last home slot: nothing can have a home there).
 *  - While rehashing, the other table is searched for the same range [c, c'):
 *    from its home(c) through the first empty slot after its home(c'-1).
 *  - So consecutive calls cover consecutive hash ranges [0,c1), [c1,c2), ...
 *    whose union is every 64-bit hash. A key with hash h lies in exactly one
 *    range, and at the moment that range is visited the key is in one of the
 *    tables (entries only move between tables, never disappear while present)
 *    and is visited there, whatever resizes happened before or after.
 *
 * Within one call each entry is visited once (it is in one table, in one
 * range), which is what the snapshot iterator (ks_snap.c) relies on.
 */
static inline bool
rh_in_range(uint64_t h, uint64_t lo, uint64_t hi)
{
    return h >= lo && (hi == 0 || h < hi);
}

/* Visit the entries of the larger table with hash in [cursor, next), about
 * count of them (0 counts as 1); returns next (0 when done). */
static inline uint64_t
rh_scan_big(const struct rh_tab *big, uint64_t cursor, size_t count, const struct rh_ops *ops,
            const struct rh_env *env, rh_visit_fn *fn, void *arg)
{
    size_t s = rh_home(big, cursor), pos, seen = 0, empties = 0;

    if (count == 0) {
        count = 1;
    }
    for (pos = s;; pos++) {
        uint64_t v = big->slots[pos];
        size_t home;
        if (v == 0) {
            if (pos >= big->n) {
                break;
            }
            if (pos > s && (seen >= count || empties >= 10 * count)) {
                break;
            }
            empties++;
            continue;
        }
        home = pos + 1 - rh_d1(v);
        if (home < s || (home == s && !rh_in_range(ops->hash(env, rh_ent(v)), cursor, 0))) {
            continue;
        }
        fn(arg, rh_ent(v));
        seen++;
    }
    if (pos >= big->n) {
        return 0;
    }
    return (uint64_t)((((rh_u128)pos << 64) + big->n - 1) / big->n);
}

/* Visit the entries of the smaller table with hash in [cursor, next). */
static inline void
rh_scan_small(const struct rh_tab *small, uint64_t cursor, uint64_t next, const struct rh_ops *ops,
              const struct rh_env *env, rh_visit_fn *fn, void *arg)
{
    size_t ss = rh_home(small, cursor);
    size_t se = next != 0 ? rh_home(small, next - 1) : small->n;
    for (size_t pos = ss;; pos++) {
        uint64_t v = small->slots[pos];
        size_t home;
        if (v == 0) {
            if (pos > se || pos >= small->cap) {
                break;
            }
            continue;
        }
        home = pos + 1 - rh_d1(v);
        if (home < ss || home > se) {
            continue;
        }
        if ((home == ss || home == se) && !rh_in_range(ops->hash(env, rh_ent(v)), cursor, next)) {
            continue;
        }
        fn(arg, rh_ent(v));
    }
}

/* One SCAN call over both tables (see above): about count entries from
 * cursor; returns the next cursor, 0 when done. fn must not modify d. */
static inline uint64_t
rh_scan(const struct rh *d, uint64_t cursor, size_t count, const struct rh_ops *ops,
        const struct rh_env *env, rh_visit_fn *fn, void *arg)
{
    const struct rh_tab *big = &d->cur, *small = NULL;
    uint64_t next;

    if (rh_rehashing(d)) {
        if (d->old.n > d->cur.n) {
            big = &d->old;
            small = &d->cur;
        } else {
            small = &d->old;
        }
    }
    next = rh_scan_big(big, cursor, count, ops, env, fn, arg);
    if (small != NULL) {
        rh_scan_small(small, cursor, next, ops, env, fn, arg);
    }
    return next;
}
