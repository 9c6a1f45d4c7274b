/* Sorted-set encodings: packed and B+tree forms against a simple model. */
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/types/obj.h"
#include "node/types/zset_enc.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct obj_ops obj_zset_ops;

static const struct zset_lim small_lim = { 128, 64 };
static const struct zset_lim tree_lim = { 0, 0 };

static void
setup(void)
{
    dict_seed(1, 2);
}

TestSuite(zset, .init = setup);

struct ref {
    char m[32];
    double s;
};

static int
ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->s != y->s) {
        return x->s < y->s ? -1 : 1;
    }
    return strcmp(x->m, y->m);
}

static void
check_against(struct zset *z, struct ref *r, size_t n)
{
    qsort(r, n, sizeof(*r), ref_cmp);
    cr_assert(zset_check(z));
    cr_assert_eq(zset_len(z), n);
    if (n == 0) {
        return;
    }
    struct zset_it it;
    zset_it_init(&it, z, 0);
    for (size_t i = 0; i < n; i++) {
        struct rv_str m;
        double s;
        if (i > 0) {
            cr_assert(zset_it_next(&it));
        }
        zset_it_get(&it, &m, &s);
        cr_assert_eq(m.len, strlen(r[i].m));
        cr_assert(memcmp(m.p, r[i].m, m.len) == 0, "rank %zu", i);
        cr_assert_eq(s, r[i].s);
    }
    cr_assert(!zset_it_next(&it));
    /* and backwards */
    for (size_t i = n - 1; i > 0; i--) {
        struct rv_str m;
        double s;
        cr_assert(zset_it_prev(&it));
        zset_it_get(&it, &m, &s);
        cr_assert(memcmp(m.p, r[i - 1].m, m.len) == 0);
    }
    cr_assert(!zset_it_prev(&it));
    zset_it_done(&it);
    for (size_t i = 0; i < n; i += 1 + n / 50) {
        double s;
        cr_assert(zset_score(z, r[i].m, strlen(r[i].m), &s));
        cr_assert_eq(s, r[i].s);
        cr_assert_eq(zset_rank(z, r[i].m, strlen(r[i].m), s), i);
    }
}

static void
random_ops(const struct zset_lim *lim, size_t ops, size_t keyspace)
{
    struct zset *z = zset_create();
    struct ref *r = calloc(keyspace, sizeof(*r));
    size_t n = 0;
    srand(42);
    for (size_t op = 0; op < ops; op++) {
        char m[32];
        snprintf(m, sizeof(m), "m%zu", (size_t)rand() % keyspace);
        double s = (rand() % 4 == 0) ? (double)(rand() % 7) : (rand() % 1000) / 7.0 - 50;
        size_t i;
        for (i = 0; i < n && strcmp(r[i].m, m) != 0; i++) {
        }
        int what = rand() % 3;
        if (i == n && what != 2) {
            zset_insert(z, m, strlen(m), s, lim);
            strcpy(r[n].m, m);
            r[n++].s = s;
        } else if (i < n && what == 0) {
            zset_update(z, m, strlen(m), r[i].s, s);
            r[i].s = s;
        } else if (i < n) {
            cr_assert(zset_delete(z, m, strlen(m)));
            r[i] = r[--n];
        } else {
            cr_assert(!zset_delete(z, m, strlen(m)));
        }
        if (op % 997 == 0) {
            check_against(z, r, n);
        }
    }
    check_against(z, r, n);
    zset_destroy(z);
    free(r);
}

Test(zset, packed_random_ops)
{
    random_ops(&(struct zset_lim){ 1 << 20, 1 << 20 }, 3000, 100);
}

Test(zset, tree_random_ops)
{
    random_ops(&tree_lim, 40000, 5000);
}

Test(zset, converts_at_entry_threshold)
{
    struct zset *z = zset_create();
    char m[16];
    for (int i = 0; i < 128; i++) {
        snprintf(m, sizeof(m), "e%d", i);
        zset_insert(z, m, strlen(m), i, &small_lim);
    }
    cr_assert(zset_is_packed(z));
    cr_assert_str_eq(zset_encoding(z), "listpack");
    zset_insert(z, "x", 1, 0.5, &small_lim);
    cr_assert(!zset_is_packed(z));
    cr_assert_str_eq(zset_encoding(z), "skiplist");
    cr_assert(zset_check(z));
    cr_assert_eq(zset_len(z), 129);
    /* never converts back */
    for (int i = 0; i < 120; i++) {
        snprintf(m, sizeof(m), "e%d", i);
        cr_assert(zset_delete(z, m, strlen(m)));
    }
    cr_assert(!zset_is_packed(z));
    cr_assert(zset_check(z));
    zset_destroy(z);
}

Test(zset, converts_at_value_threshold)
{
    struct zset *z = zset_create();
    char big[65];
    memset(big, 'v', sizeof(big));
    zset_insert(z, big, 64, 1, &small_lim);
    cr_assert(zset_is_packed(z));
    zset_insert(z, big, 65, 2, &small_lim);
    cr_assert(!zset_is_packed(z));
    cr_assert(zset_check(z));
    zset_destroy(z);
}

Test(zset, edge_scores_round_trip)
{
    const double v[] = { 0.0,
                         1.0,
                         -1.0,
                         0.1,
                         1e300,
                         -1e-300,
                         INFINITY,
                         -INFINITY,
                         9007199254740991.0,
                         -9007199254740991.0,
                         9007199254740992.0,
                         4503599627370496.5,
                         63.0,
                         64.0,
                         -64.0,
                         -65.0,
                         1e15 };
    for (int form = 0; form < 2; form++) {
        struct zset *z = zset_create();
        const struct zset_lim *lim = form ? &tree_lim : &small_lim;
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
            char m[8];
            snprintf(m, sizeof(m), "%zu", i);
            zset_insert(z, m, strlen(m), v[i], lim);
        }
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
            char m[8];
            double s;
            snprintf(m, sizeof(m), "%zu", i);
            cr_assert(zset_score(z, m, strlen(m), &s));
            cr_assert_eq(s, v[i], "form %d value %g", form, v[i]);
        }
        cr_assert(zset_check(z));
        zset_destroy(z);
    }
}

Test(zset, negative_zero_is_zero_when_packed)
{
    struct zset *z = zset_create();
    struct zset_it it;
    struct rv_str m;
    double s;
    zset_insert(z, "a", 1, -0.0, &small_lim);
    zset_it_init(&it, z, 0);
    zset_it_get(&it, &m, &s);
    cr_assert(!signbit(s));
    zset_it_done(&it);
    zset_destroy(z);
}

Test(zset, empty_and_binary_members)
{
    struct zset *z = zset_create();
    zset_insert(z, "", 0, 1, &tree_lim);
    zset_insert(z, "a\0b", 3, 1, &tree_lim);
    zset_insert(z, "a", 1, 1, &tree_lim);
    double s;
    cr_assert(zset_score(z, "", 0, &s));
    cr_assert_eq(zset_rank(z, "", 0, 1), 0);
    cr_assert_eq(zset_rank(z, "a", 1, 1), 1);
    cr_assert_eq(zset_rank(z, "a\0b", 3, 1), 2);
    cr_assert(zset_check(z));
    zset_destroy(z);
}

Test(zset, sorted_appends_fill_leaves)
{
    struct zset *z = zset_create();
    char m[16];
    for (int i = 0; i < 100000; i++) {
        snprintf(m, sizeof(m), "%08d", i);
        zset_insert(z, m, strlen(m), i, &tree_lim);
    }
    cr_assert(zset_check(z));
    /* 8-byte members: leaves (~12 B each, full) plus the dict entry and slot;
     * Redis needs ~120 B per element for the same load. */
    size_t per = zset_mem(z) / 100000;
    cr_assert_lt(per, 80, "bytes per element %zu", per);
    zset_delete_range(z, 10, 99989);
    cr_assert_eq(zset_len(z), 20);
    cr_assert(zset_check(z));
    zset_destroy(z);
}

Test(zset, dup_and_ops_table)
{
    const struct obj_ops *ops = &obj_zset_ops;
    cr_assert_eq(obj_ops_of(KS_ZSET), ops);
    cr_assert_str_eq(ops->type_name, "zset");
    for (int form = 0; form < 2; form++) {
        struct zset *z = zset_create();
        for (int i = 0; i < 300; i++) {
            char m[16];
            snprintf(m, sizeof(m), "k%d", i);
            zset_insert(z, m, strlen(m), i % 17, form ? &tree_lim : &small_lim);
        }
        if (form == 0) {
            cr_assert(!zset_is_packed(z) || zset_len(z) <= 128);
        }
        struct zset *d = zset_dup(z);
        cr_assert_eq(zset_len(d), zset_len(z));
        cr_assert(zset_check(d));
        cr_assert_str_eq(zset_encoding(d), zset_encoding(z));
        cr_assert_gt(zset_mem(d), 0);
        zset_destroy(d);
        /* In a keyspace the ops work on the entry; COPY dups stored trees. */
        struct ks *ks = ks_create(1, 2);
        size_t n = zset_len(z);
        bool packed = zset_is_packed(z);
        zset_store(z, ks, "z", 1);
        struct ks_entry *e = ks_peek(ks, "z", 1);
        cr_assert_eq(ks_entry_inl(e), packed);
        cr_assert_str_eq(ops->encoding(e), packed ? "listpack" : "skiplist");
        if (packed) {
            cr_assert_eq(ops->mem(e), 0);
        } else {
            cr_assert_gt(ops->mem(e), 0);
            struct ks_entry *c = ks_set_ptr(ks, "c", 1, KS_ZSET, ops->dup(e), ops->free,
                                            KS_NO_EXPIRE);
            struct zset b;
            zset_bind(&b, ks, c);
            cr_assert_eq(zset_len(&b), n);
            cr_assert(zset_check(&b));
        }
        ks_destroy(ks);
    }
}

/* A packed set bound to a keyspace entry lives inline (the entry moves as it
 * grows and shrinks) and is re-stored as a tree pointer when it converts,
 * keeping the key's deadline. */
Test(zset, bound_converts_in_keyspace)
{
    struct ks *ks = ks_create(1, 2);
    struct zset *z = zset_create(), b;
    struct zset_lim lim = { 8, 16 };
    char m[32];

    zset_insert(z, "m0", 2, 0.5, &lim);
    zset_store(z, ks, "z", 1);
    cr_assert_eq(obj_zset_ops.mem(ks_peek(ks, "z", 1)), 0);
    cr_assert_str_eq(obj_zset_ops.encoding(ks_peek(ks, "z", 1)), "listpack");
    ks_set_expire(ks, ks_peek(ks, "z", 1), 77777777777);
    zset_bind(&b, ks, ks_peek(ks, "z", 1));
    for (int i = 1; i < 8; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        zset_insert(&b, m, strlen(m), i * 1.5, &lim);
        cr_assert(ks_entry_inl(ks_peek(ks, "z", 1)));
        cr_assert(zset_check(&b));
    }
    cr_assert(zset_delete(&b, "m3", 2));
    zset_update(&b, "m4", 2, 6.0, -1.0);
    zset_delete_range(&b, 0, 0); /* m4, now first */
    cr_assert_eq(zset_len(&b), 6);
    cr_assert(ks_entry_inl(ks_peek(ks, "z", 1)));
    zset_insert(&b, "a-member-longer-than-16", 23, 2.0, &lim);
    struct ks_entry *e = ks_peek(ks, "z", 1);
    cr_assert(!ks_entry_inl(e));
    cr_assert(!zset_is_packed(&b));
    cr_assert_eq(ks_entry_expire(e), 77777777777);
    cr_assert_eq(zset_len(&b), 7);
    cr_assert(zset_check(&b));
    double s;
    cr_assert(zset_score(&b, "m7", 2, &s) && s == 10.5);
    ks_destroy(ks);
}

static bool
ge_score(const void *arg, double s, const char *m, size_t ml)
{
    (void)m;
    (void)ml;
    return s >= *(const double *)arg;
}

Test(zset, lower_bound_by_score)
{
    for (int form = 0; form < 2; form++) {
        struct zset *z = zset_create();
        for (int i = 0; i < 1000; i++) {
            char m[16];
            snprintf(m, sizeof(m), "k%d", i);
            zset_insert(z, m, strlen(m), i / 10, form ? &tree_lim : &(struct zset_lim){ 5000, 64 });
        }
        for (int t = 0; t <= 100; t++) {
            double b = t;
            cr_assert_eq(zset_lower(z, ge_score, &b), (size_t)(t * 10 > 1000 ? 1000 : t * 10));
        }
        double b = 55.5;
        cr_assert_eq(zset_lower(z, ge_score, &b), 560);
        zset_destroy(z);
    }
}
