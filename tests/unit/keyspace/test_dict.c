/* tests/unit/keyspace/test_dict.c: collection dict: add/find/delete across
 * incremental resizes, value kinds, SCAN guarantee, random, dup. */
#include "node/keyspace/dict.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t
mkkey(char *buf, size_t i)
{
    return (size_t)snprintf(buf, 32, "k%zu", i);
}

Test(dict, add_find_delete_grow_shrink)
{
    struct dict *d = dict_create();
    char k[32];
    size_t n = 20000;

    for (size_t i = 0; i < n; i++) {
        bool created = false;
        size_t kl = mkkey(k, i);
        struct dict_entry *e = dict_add(d, k, kl, &created);
        cr_assert(created);
        cr_assert_eq(dict_val(e), 0);
        dict_set_val(e, i * 3);
        cr_assert_eq(dict_size(d), i + 1);
    }
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, i);
        struct dict_entry *e = dict_find(d, k, kl);
        cr_assert_not_null(e, "missing %s", k);
        cr_assert_eq(dict_val(e), i * 3);
        cr_assert_eq(dict_key(e).len, kl);
        cr_assert(memcmp(dict_key(e).p, k, kl) == 0);
    }
    {
        bool created = true;
        struct dict_entry *e = dict_add(d, "k5", 2, &created);
        cr_assert(!created);
        cr_assert_eq(dict_val(e), 15);
    }
    cr_assert_null(dict_find(d, "nope", 4));
    for (size_t i = 0; i < n; i += 2) {
        uint64_t v = 0;
        size_t kl = mkkey(k, i);
        cr_assert(dict_delete(d, k, kl, &v));
        cr_assert_eq(v, i * 3);
        cr_assert(!dict_delete(d, k, kl, NULL));
    }
    cr_assert_eq(dict_size(d), n / 2);
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, i);
        cr_assert_eq(dict_find(d, k, kl) != NULL, i % 2 == 1);
    }
    for (size_t i = 1; i < n; i += 2) {
        size_t kl = mkkey(k, i);
        cr_assert(dict_delete(d, k, kl, NULL));
    }
    cr_assert_eq(dict_size(d), 0);
    cr_assert_lt(dict_mem(d), 4096); /* shrank back */
    dict_destroy(d, NULL);
}

static void
count_free(void *p)
{
    (*(int *)p)++;
}

Test(dict, destroy_frees_values_and_doubles)
{
    struct dict *d = dict_create();
    int freed = 0;
    struct dict_entry *e = dict_add(d, "a", 1, NULL);
    dict_set_val_ptr(e, &freed);
    e = dict_add(d, "b", 1, NULL);
    dict_set_val_ptr(e, &freed);
    dict_destroy(d, count_free);
    cr_assert_eq(freed, 2);

    d = dict_create();
    e = dict_add(d, "", 0, NULL); /* empty key */
    dict_set_val_double(e, -2.5);
    cr_assert_eq(dict_val_double(dict_find(d, "", 0)), -2.5);
    dict_destroy(d, NULL);
    dict_destroy(NULL, NULL);
}

Test(dict, keyonly_and_bytes)
{
    struct dict *s = dict_create_kind(DICT_KEYONLY);
    struct dict *h = dict_create_kind(DICT_BYTES);
    char k[32], big[600];
    memset(big, 'x', sizeof(big));

    for (size_t i = 0; i < 5000; i++) {
        size_t kl = mkkey(k, i);
        bool c;
        dict_add(s, k, kl, &c);
        cr_assert(c);
        dict_put_bytes(h, k, kl, big, i % 600, &c);
        cr_assert(c);
    }
    /* Overwrite with growing and shrinking values: entries move. */
    for (size_t i = 0; i < 5000; i++) {
        size_t kl = mkkey(k, i);
        bool c = true;
        struct dict_entry *e = dict_put_bytes(h, k, kl, big, (i * 7) % 600, &c);
        cr_assert(!c);
        cr_assert_eq(dict_val_bytes(e).len, (i * 7) % 600);
    }
    for (size_t i = 0; i < 5000; i++) {
        size_t kl = mkkey(k, i);
        struct dict_entry *e = dict_find(h, k, kl);
        cr_assert_not_null(e);
        cr_assert_eq(dict_val_bytes(e).len, (i * 7) % 600);
        cr_assert_eq(dict_key(e).len, kl);
        e = dict_set_bytes(h, e, "v", 1);
        cr_assert_eq(dict_val_bytes(dict_find(h, k, kl)).len, 1);
        cr_assert_not_null(dict_find(s, k, kl));
    }
    {
        /* 300-byte key: two-byte varint length. */
        bool c;
        struct dict_entry *e = dict_add(h, big, 300, &c);
        cr_assert_eq(dict_val_bytes(e).len, 0);
        e = dict_set_bytes(h, e, big, 200);
        cr_assert_eq(dict_key(e).len, 300);
        cr_assert_eq(dict_val_bytes(dict_find(h, big, 300)).len, 200);
    }
    cr_assert_gt(dict_mem(s), 5000 * 8);
    dict_destroy(s, NULL);
    dict_destroy(h, NULL);
}

struct seen {
    unsigned char *hit;
    size_t n;
};

static void
mark(void *arg, struct dict_entry *e)
{
    struct seen *s = arg;
    struct rv_str k = dict_key(e);
    char buf[32];
    memcpy(buf, k.p + 1, k.len - 1);
    buf[k.len - 1] = '\0';
    size_t i = (size_t)strtoul(buf, NULL, 10);
    cr_assert_lt(i, s->n);
    s->hit[i]++;
}

/* Keys present for the whole scan are returned even while the dict grows and
 * shrinks between calls. */
Test(dict, scan_across_resizes)
{
    struct dict *d = dict_create_kind(DICT_KEYONLY);
    size_t n = 30000;
    struct seen s = { calloc(n + 200000, 1), n + 200000 };
    char k[32];
    uint64_t cur = 0;
    size_t extra = n, calls = 0;

    for (size_t i = 0; i < n; i++) {
        dict_add(d, k, mkkey(k, i), NULL);
    }
    do {
        cur = dict_scan(d, cur, 10, mark, &s);
        calls++;
        /* grow for a while, then delete the extras so it shrinks */
        for (int j = 0; j < 20 && calls < 2000; j++) {
            dict_add(d, k, mkkey(k, extra++), NULL);
        }
        if (calls >= 2000) {
            for (int j = 0; j < 60 && extra > n; j++) {
                extra--;
                dict_delete(d, k, mkkey(k, extra), NULL);
            }
        }
    } while (cur != 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert_geq(s.hit[i], 1, "key %zu not returned", i);
    }
    free(s.hit);
    dict_destroy(d, NULL);
}

Test(dict, foreach_random_dup)
{
    struct dict *d = dict_create_kind(DICT_BYTES);
    size_t n = 1000;
    struct seen s = { calloc(n, 1), n };
    char k[32];
    struct dict *c;

    cr_assert_null(dict_random(d, 1));
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, i);
        dict_put_bytes(d, k, kl, k, kl, NULL);
    }
    dict_foreach(d, mark, &s);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(s.hit[i], 1);
    }
    memset(s.hit, 0, n);
    for (uint64_t r = 0; r < 20000; r++) {
        mark(&s, dict_random(d, r));
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert_gt(s.hit[i], 0, "random never chose %zu", i);
    }
    c = dict_dup(d);
    cr_assert_eq(dict_size(c), n);
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, i);
        struct rv_str v = dict_val_bytes(dict_find(c, k, kl));
        cr_assert_eq(v.len, kl);
        cr_assert(memcmp(v.p, k, kl) == 0);
    }
    dict_destroy(c, NULL);
    dict_destroy(d, NULL);
    free(s.hit);
}

Test(dict, reserve)
{
    struct dict *d = dict_create();
    char k[32];
    dict_reserve(d, 10000);
    for (size_t i = 0; i < 10000; i++) {
        dict_add(d, k, mkkey(k, i), NULL);
    }
    cr_assert_eq(dict_size(d), 10000);
    dict_destroy(d, NULL);
}
