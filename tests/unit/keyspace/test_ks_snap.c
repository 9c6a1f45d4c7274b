/* tests/unit/keyspace/test_ks_snap.c: the keyspace snapshot iterator: a walk
 * taken while keys are modified yields exactly the keys at the snapshot point,
 * each once, with its value then. */
#include "node/keyspace/ks.h"

#include "node/keyspace/dict.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define S0 UINT64_C(0x1234567890abcdef)
#define S1 UINT64_C(0x0fedcba987654321)

static uint64_t
rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* What the walk emitted: key -> value, and how often a key came twice. */
struct seen {
    struct dict *got;
    size_t dups;
};

static void
emit(void *arg, const struct ks_entry *e)
{
    struct seen *s = arg;
    char scratch[24];
    struct rv_str k = ks_entry_key(e), v = ks_str_get(e, scratch);
    bool created;
    dict_put_bytes(s->got, k.p, k.len, v.p, v.len, &created);
    if (!created) {
        s->dups++;
    }
}

/* The keyspace's string keys and values as a dict (the model at a point). */
static void
copy_cb(void *arg, struct ks_entry *e)
{
    struct seen s = { arg, 0 };
    emit(&s, e);
}

static struct dict *
model_of(struct ks *ks)
{
    struct dict *m = dict_create_kind(DICT_BYTES);
    uint64_t c = 0;
    do {
        c = ks_scan(ks, c, 100, copy_cb, m);
    } while (c != 0);
    return m;
}

struct cmp_ctx {
    struct dict *other;
    size_t diffs;
};

static void
cmp_cb(void *arg, struct dict_entry *e)
{
    struct cmp_ctx *x = arg;
    struct rv_str k = dict_key(e), v = dict_val_bytes(e);
    struct dict_entry *o = dict_find(x->other, k.p, k.len);
    if (o == NULL) {
        x->diffs++;
        return;
    }
    struct rv_str ov = dict_val_bytes(o);
    if (ov.len != v.len || memcmp(ov.p, v.p, v.len) != 0) {
        x->diffs++;
    }
}

static void
expect_same(struct dict *want, struct dict *got)
{
    struct cmp_ctx x = { got, 0 };
    cr_assert_eq(dict_size(got), dict_size(want), "emitted %zu keys, snapshot had %zu",
                 dict_size(got), dict_size(want));
    dict_foreach(want, cmp_cb, &x);
    cr_assert_eq(x.diffs, 0, "%zu keys missing or with another value", x.diffs);
}

static size_t
fill(struct ks *ks, size_t n)
{
    char k[32], v[32];
    for (size_t i = 0; i < n; i++) {
        size_t kl = (size_t)snprintf(k, sizeof(k), "k%zu", i);
        size_t vl = (size_t)snprintf(v, sizeof(v), "v%zu.0", i);
        ks_set_str(ks, k, kl, v, vl, KS_NO_EXPIRE, false);
    }
    return n;
}

Test(ks_snap, quiet_walk_emits_every_key_once)
{
    struct ks *ks = ks_create(S0, S1);
    fill(ks, 5000);
    struct dict *want = model_of(ks);
    struct seen s = { dict_create_kind(DICT_BYTES), 0 };
    struct ks_snap *sn = ks_snap_begin(emit, &s);
    size_t calls = 0;
    while (!ks_snap_next(sn, ks, 64)) {
        calls++;
    }
    cr_assert(calls > 10);
    cr_assert(ks_snap_done(sn));
    cr_assert(ks_snap_next(sn, ks, 64)); /* stays done: no second walk */
    cr_assert_eq(s.dups, 0);
    expect_same(want, s.got);
    ks_snap_end(sn);
    ks_snap_end(NULL);
    dict_destroy(want, NULL);
    dict_destroy(s.got, NULL);
    ks_destroy(ks);
}

/* Random overwrites, inserts (enough to resize the table under the walk),
 * deletes and renames between walk steps, each write touching its keys first
 * as the owner must: the walk yields the keyspace as it was at begin. */
static void
walk_under_writes(uint64_t seed, size_t nkeys, size_t per_step)
{
    struct ks *ks = ks_create(S0 ^ seed, S1);
    size_t next_new = fill(ks, nkeys);
    struct dict *want = model_of(ks);
    struct seen s = { dict_create_kind(DICT_BYTES), 0 };
    struct ks_snap *sn = ks_snap_begin(emit, &s);
    uint64_t r = seed;
    unsigned gen = 1;
    char k[32], k2[32], v[32];

    while (!ks_snap_next(sn, ks, 16)) {
        for (size_t w = 0; w < per_step; w++, gen++) {
            uint64_t x = rng_next(&r);
            size_t i = (size_t)(x >> 8) % (next_new + 1);
            size_t kl = (size_t)snprintf(k, sizeof(k), "k%zu", i);
            size_t vl = (size_t)snprintf(v, sizeof(v), "v%zu.%u", i, gen);
            switch (x % 5) {
            case 0:
            case 1: /* overwrite or create */
                ks_snap_touch(sn, ks, k, kl);
                ks_set_str(ks, k, kl, v, vl, KS_NO_EXPIRE, false);
                break;
            case 2: /* a new key (the table grows under the walk) */
                kl = (size_t)snprintf(k, sizeof(k), "k%zu", next_new++);
                ks_snap_touch(sn, ks, k, kl);
                ks_set_str(ks, k, kl, v, vl, KS_NO_EXPIRE, false);
                break;
            case 3:
                ks_snap_touch(sn, ks, k, kl);
                ks_delete(ks, k, kl);
                break;
            case 4: { /* RENAME touches both keys */
                size_t j = (size_t)(rng_next(&r) % (next_new + 1));
                size_t kl2 = (size_t)snprintf(k2, sizeof(k2), "k%zu", j);
                ks_snap_touch(sn, ks, k, kl);
                ks_snap_touch(sn, ks, k2, kl2);
                ks_rename(ks, k, kl, k2, kl2);
                break;
            }
            }
        }
    }
    /* Touches after the end change nothing. */
    ks_snap_touch(sn, ks, "k1", 2);
    cr_assert_eq(s.dups, 0, "%zu keys emitted twice", s.dups);
    expect_same(want, s.got);
    ks_snap_end(sn);
    dict_destroy(want, NULL);
    dict_destroy(s.got, NULL);
    ks_destroy(ks);
}

Test(ks_snap, walk_under_writes_yields_the_snapshot_point)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        walk_under_writes(seed, 2000, 8);
    }
}

Test(ks_snap, walk_under_heavy_writes_and_resizes, .timeout = 60)
{
    walk_under_writes(99, 20000, 64); /* the key count roughly doubles during the walk */
}

Test(ks_snap, key_created_after_begin_is_never_emitted)
{
    struct ks *ks = ks_create(S0, S1);
    struct seen s = { dict_create_kind(DICT_BYTES), 0 };
    fill(ks, 100);
    struct ks_snap *sn = ks_snap_begin(emit, &s);
    ks_snap_touch(sn, ks, "fresh", 5);
    ks_set_str(ks, "fresh", 5, "x", 1, KS_NO_EXPIRE, false);
    ks_snap_touch(sn, ks, "k7", 2); /* emitted now, with its old value */
    cr_assert_eq(dict_size(s.got), 1);
    ks_set_str(ks, "k7", 2, "new", 3, KS_NO_EXPIRE, false);
    ks_snap_touch(sn, ks, "k7", 2); /* once only */
    cr_assert_eq(dict_size(s.got), 1);
    while (!ks_snap_next(sn, ks, 10)) {
    }
    cr_assert_eq(dict_size(s.got), 100);
    cr_assert_null(dict_find(s.got, "fresh", 5));
    struct rv_str v = dict_val_bytes(dict_find(s.got, "k7", 2));
    cr_assert(v.len == 4 && memcmp(v.p, "v7.0", 4) == 0);
    cr_assert_eq(s.dups, 0);
    ks_snap_end(sn);
    dict_destroy(s.got, NULL);
    ks_destroy(ks);
}

Test(ks_snap, empty_keyspace)
{
    struct ks *ks = ks_create(S0, S1);
    struct seen s = { dict_create_kind(DICT_BYTES), 0 };
    struct ks_snap *sn = ks_snap_begin(emit, &s);
    cr_assert(ks_snap_next(sn, ks, 64));
    cr_assert_eq(dict_size(s.got), 0);
    ks_snap_end(sn);
    dict_destroy(s.got, NULL);
    ks_destroy(ks);
}
