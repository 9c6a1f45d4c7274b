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
