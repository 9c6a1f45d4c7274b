/* tests/unit/keyspace/test_rh.c: the robin hood table shared by the keyspace
 * and the dicts (node/keyspace/rh.h), driven directly with entries whose hash
 * the test chooses, so that crowded homes force the rare paths: distance cap,
 * overflow grows, synchronous rebuilds during a rehash. */
#include "node/keyspace/rh.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ent {
    uint64_t h;
    char key[16];
    size_t klen;
};

static uint64_t
ent_h(const struct rh_env *env, const void *e)
{
    (void)env;
    return ((const struct ent *)e)->h;
}

static bool
ent_eq(const void *e, const char *key, size_t klen)
{
    const struct ent *x = e;
    return x->klen == klen && memcmp(x->key, key, klen) == 0;
}

static const struct rh_ops ops = { 8, 4, ent_h };

static uint64_t
mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static struct ent *
mk(size_t i, uint64_t h)
{
    struct ent *e = malloc(sizeof(*e)); /* 16-aligned, below 2^48: a slot holds it */
    e->h = h;
    e->klen = (size_t)snprintf(e->key, sizeof(e->key), "e%zu", i);
    return e;
}

static struct ent *
find(const struct rh *d, const struct ent *e)
{
    struct rh_tab *t;
    uint64_t *sl = rh_find(d, e->h, e->key, e->klen, ent_eq, &t);
    return sl ? rh_ent(*sl) : NULL;
}

/* Homes sorted within clusters, distances exact, counts right. */
static void
check_tab(const struct rh_tab *t, size_t skip)
{
    size_t cnt = 0, prev = 0;
    if (t->slots == NULL) {
        return;
    }
    cr_assert_eq(t->slots[t->cap], 0);
    for (size_t i = 0; i < t->cap; i++) {
        uint64_t s = t->slots[i];
        if (s == 0) {
            continue;
        }
        cr_assert(i >= skip);
        const struct ent *e = rh_ent(s);
        size_t home = rh_home(t, e->h);
        cr_assert_eq(home + rh_d1(s) - 1, i);
        cr_assert_eq(rh_slot(e, e->h, rh_d1(s)), s);
        if (i > 0 && t->slots[i - 1] != 0) {
            cr_assert(home >= prev);
        }
        prev = home;
        cnt++;
    }
    cr_assert_eq(cnt, t->count);
}

static void
check(const struct rh *d)
{
    check_tab(&d->cur, 0);
    check_tab(&d->old, d->rpos);
}

/* n entries whose hashes come from hf; insert, look up, delete half, with
 * rehash steps between, checking invariants and findability. */
static void
run(size_t n, uint64_t (*hf)(size_t), struct rh_env *env)
{
    struct rh d;
    struct ent **es = calloc(n, sizeof(*es));
    rh_init(&d, &ops);
    for (size_t i = 0; i < n; i++) {
        es[i] = mk(i, hf(i));
        cr_assert_null(find(&d, es[i]));
        if (rh_rehashing(&d)) {
            rh_migrate(&d, 8, 64, &ops, env);
        }
        rh_insert(&d, es[i]->h, es[i], &ops, env);
        if (i % 997 == 0) {
            check(&d);
        }
    }
    cr_assert_eq(rh_count(&d), n);
    check(&d);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(find(&d, es[i]), es[i], "entry %zu lost", i);
    }
    for (size_t i = 0; i < n; i += 2) {
        struct rh_tab *t;
        uint64_t *sl = rh_find_ptr(&d, es[i]->h, es[i], &t);
        cr_assert_not_null(sl);
        if (rh_rehashing(&d)) {
            rh_migrate(&d, 8, 64, &ops, env);
            sl = rh_find_ptr(&d, es[i]->h, es[i], &t);
        }
        rh_remove_at(&d, t, sl, &ops, env);
    }
    check(&d);
    cr_assert_eq(rh_count(&d), n / 2);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(find(&d, es[i]) != NULL, i % 2 == 1);
    }
    for (size_t i = 0; i < n; i++) {
        free(es[i]);
    }
    free(es);
    rh_tab_free(&d.cur);
    rh_tab_free(&d.old);
}

static uint64_t
h_uniform(size_t i)
{
    return mix(i + 1);
}

/* Everything in 1/64 of the hash space, in runs of equal high bits. */
static uint64_t
h_crowded(size_t i)
{
    return (mix(i / 32) >> 6) | ((uint64_t)(i & 31) << 1);
}

Test(rh, uniform_hashes)
{
    struct rh_env env = { 0 };
    run(50000, h_uniform, &env);
    cr_assert_eq(env.grows, 0);
}

Test(rh, crowded_homes_force_grows_and_stay_consistent, .timeout = 60)
{
    struct rh_env env = { 0 };
    run(20000, h_crowded, &env);
    cr_assert(env.grows > 0, "no overflow grow: the test does not reach the rare path");
}

Test(rh, null_env_is_allowed)
{
    run(5000, h_crowded, NULL);
}

struct seen {
    unsigned char *hit;
};

static void
visit(void *arg, void *e)
{
    struct seen *s = arg;
    size_t i = (size_t)strtoul(((struct ent *)e)->key + 1, NULL, 10);
    s->hit[i] = 1;
}

/* Keys present for the whole scan are all returned while the table grows. */
Test(rh, scan_covers_keys_present_throughout_resizes)
{
    struct rh d;
    size_t n0 = 3000, n = 30000;
    struct ent **es = calloc(n, sizeof(*es));
    struct seen s = { calloc(n, 1) };
    uint64_t c = 0;
    size_t added = n0;
    rh_init(&d, &ops);
    for (size_t i = 0; i < n0; i++) {
        es[i] = mk(i, h_uniform(i));
        rh_insert(&d, es[i]->h, es[i], &ops, NULL);
    }
    do {
        c = rh_scan(&d, c, 10, &ops, NULL, visit, &s);
        for (int k = 0; k < 40 && added < n; k++, added++) {
            es[added] = mk(added, h_uniform(added));
            if (rh_rehashing(&d)) {
                rh_migrate(&d, 8, 64, &ops, NULL);
            }
            rh_insert(&d, es[added]->h, es[added], &ops, NULL);
        }
    } while (c != 0);
    for (size_t i = 0; i < n0; i++) {
        cr_assert(s.hit[i], "key %zu present throughout was not returned", i);
    }
    for (size_t i = 0; i < added; i++) {
        free(es[i]);
    }
    free(es);
    free(s.hit);
    rh_tab_free(&d.cur);
    rh_tab_free(&d.old);
}

/* ------------------------------------------- shrinking under hash-order deletes */

static size_t resizes;

static void
count_resize(struct rh_env *env)
{
    (void)env;
    resizes++;
}

static int
by_hash(const void *a, const void *b)
{
    uint64_t x = (*(struct ent *const *)a)->h, y = (*(struct ent *const *)b)->h;
    return x < y ? -1 : x > y;
}

/* n entries of seed's uniform hashes, inserted with rehash steps between. */
static struct ent **
filled(struct rh *d, size_t n, uint64_t seed, struct rh_env *env)
{
    struct ent **es = calloc(n, sizeof(*es));
    rh_init(d, &ops);
    for (size_t i = 0; i < n; i++) {
        es[i] = mk(i, mix(seed * UINT64_C(0x9e3779b97f4a7c15) + i));
        if (rh_rehashing(d)) {
            rh_migrate(d, 4, 32, &ops, env);
        }
        rh_insert(d, es[i]->h, es[i], &ops, env);
    }
    return es;
}

/* Delete es[i] with a write's rehash step before it, as the keyspace does. */
static void
del(struct rh *d, const struct ent *e, struct rh_env *env)
{
    struct rh_tab *t = NULL;
    uint64_t *sl;
    if (rh_rehashing(d)) {
        rh_migrate(d, 4, 32, &ops, env);
    }
    sl = rh_find_ptr(d, e->h, e, &t);
    cr_assert_not_null(sl);
    rh_remove_at(d, t, sl, &ops, env);
}

static void
drop_all(struct rh *d, struct ent **es, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(es[i]);
    }
    free(es);
    rh_tab_free(&d->cur);
    rh_tab_free(&d->old);
}

/* Deleting in hash order (a SCAN-driven deletion: a given-away cluster slot,
 * active expiry) leaves the survivors above the deletion point, crowded in
 * the shrunk table's homes: the shrink must be given up, never rebuilt
 * synchronously, and the table must still end at its smallest size. */
Test(rh, shrink_under_hash_ordered_deletes_never_rebuilds, .timeout = 120)
{
    size_t n = 40000, abandoned = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct rh d;
        struct rh_env env = { 0 };
        struct ent **es = filled(&d, n, seed, &env);
        cr_assert_eq(env.rebuilds, 0);
        qsort(es, n, sizeof(*es), by_hash);
        for (size_t i = 0; i < n; i++) {
            del(&d, es[i], &env);
            if (i % 1999 == 0 || (rh_rehashing(&d) && i % 97 == 0)) {
                check(&d);
                for (size_t j = i + 1; j < n; j += 61) {
                    cr_assert_eq(find(&d, es[j]), es[j], "seed %llu: entry lost",
                                 (unsigned long long)seed);
                }
            }
        }
        cr_assert_eq(env.rebuilds, 0, "seed %llu: %zu synchronous rebuilds",
                     (unsigned long long)seed, env.rebuilds);
        cr_assert_eq(rh_count(&d), 0);
        for (int k = 0; k < 100 && rh_rehashing(&d); k++) {
            rh_migrate(&d, 4, 32, &ops, &env);
        }
        cr_assert(!rh_rehashing(&d));
        cr_assert_eq(d.cur.n, ops.min_slots, "seed %llu: an empty table of %zu slots",
                     (unsigned long long)seed, d.cur.n);
        abandoned += env.shrinks_abandoned;
        drop_all(&d, es, n);
    }
    cr_assert(abandoned > 0, "no shrink overflowed: the test does not reach the path");
}

/* The deletion stops with the survivors crowded at the top of the hash space:
 * the table settles (no shrink started, abandoned and restarted forever while
 * the same keys stay) and every survivor is found. */
Test(rh, crowded_survivors_settle, .timeout = 60)
{
    size_t n = 40000, keep = n / 25;
    struct rh d;
    struct rh_env env = { .resized = count_resize };
    struct ent **es = filled(&d, n, 99, &env);
    qsort(es, n, sizeof(*es), by_hash);
    for (size_t i = 0; i < n - keep; i++) {
        del(&d, es[i], &env);
    }
    for (int k = 0; k < 10000 && rh_rehashing(&d); k++) {
        rh_migrate(&d, 4, 32, &ops, &env);
    }
    cr_assert(!rh_rehashing(&d));
    resizes = 0;
    for (size_t round = 0; round < 2000; round++) {
        /* a write that leaves the count as it was: insert one, delete it */
        struct ent *x = mk(n + round, mix(round + 7));
        if (rh_rehashing(&d)) {
            rh_migrate(&d, 4, 32, &ops, &env);
        }
        rh_insert(&d, x->h, x, &ops, &env);
        del(&d, x, &env);
        free(x);
    }
    cr_assert(resizes <= 2, "%zu resizes with an unchanged key set", resizes);
    cr_assert_eq(env.rebuilds, 0);
    check(&d);
    for (size_t i = n - keep; i < n; i++) {
        cr_assert_eq(find(&d, es[i]), es[i]);
    }
    drop_all(&d, es, n);
}

/* SCAN while hash-ordered deletions shrink the table (and give shrinks up):
 * every entry present throughout the scan is returned. */
Test(rh, scan_covers_keys_present_throughout_an_abandoned_shrink, .timeout = 60)
{
    size_t n = 40000;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct rh d;
        struct rh_env env = { 0 };
        struct ent **es = filled(&d, n, seed, &env);
        struct ent **gone = calloc(n, sizeof(*gone));
        struct seen s = { calloc(n, 1) };
        size_t ngone = 0, next = 0;
        uint64_t c = 0;
        /* one key in 25 stays; the others go in hash order while the scan runs */
        for (size_t i = 0; i < n; i++) {
            if (i % 25 != 0) {
                gone[ngone++] = es[i];
            }
        }
        qsort(gone, ngone, sizeof(*gone), by_hash);
        do {
            c = rh_scan(&d, c, 10, &ops, &env, visit, &s);
            for (int k = 0; k < 24 && next < ngone; k++) {
                del(&d, gone[next++], &env);
            }
        } while (c != 0);
        cr_assert(env.shrinks_abandoned > 0, "seed %llu: no shrink given up during the scan",
                  (unsigned long long)seed);
        for (size_t i = 0; i < n; i += 25) {
            cr_assert(s.hit[i], "seed %llu: key %zu present throughout was not returned",
                      (unsigned long long)seed, i);
        }
        cr_assert_eq(env.rebuilds, 0);
        free(s.hit);
        free(gone);
        drop_all(&d, es, n);
    }
}
