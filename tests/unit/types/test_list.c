/* tests/unit/types/test_list.c: list encodings: conversion at the node limits, quicklist
 * pushes/pops/inserts/deletes against a model, duplication and memory accounting. */
#include "node/types/list.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
elem_str(const struct list *l, int64_t i, char buf[24], size_t *len)
{
    struct lp_val v;
    cr_assert(list_index(l, i, &v), "index %lld", (long long)i);
    return lp_val_bytes(&v, buf, len);
}

static void
expect_at(const struct list *l, int64_t i, const char *s)
{
    char buf[24];
    size_t len;
    const char *p = elem_str(l, i, buf, &len);
    cr_assert(len == strlen(s) && memcmp(p, s, len) == 0, "at %lld: %.*s != %s", (long long)i,
              (int)len, p, s);
}

Test(t_list, small_list_is_listpack)
{
    struct list *l = list_create();
    list_push(l, LIST_TAIL, "a", 1, -2);
    list_push(l, LIST_HEAD, "b", 1, -2);
    list_push(l, LIST_TAIL, "42", 2, -2);
    cr_assert(!list_is_quicklist(l));
    cr_assert_eq(list_len(l), 3);
    expect_at(l, 0, "b");
    expect_at(l, 1, "a");
    expect_at(l, -1, "42");
    cr_assert(list_valid(l, -2));
    list_destroy(l);
    list_destroy(NULL);
}

Test(t_list, converts_at_byte_limit)
{
    struct list *l = list_create();
    char v[100];
    memset(v, 'x', sizeof(v));
    /* each element costs 2 + 100 + 1 bytes; 8 KiB holds 79 after the 8-byte header */
    size_t n = 0;
    while (!list_is_quicklist(l)) {
        list_push(l, LIST_TAIL, v, sizeof(v), -2);
        n++;
    }
    cr_assert_eq(lp_entry_cost(v, sizeof(v)), 103);
    cr_assert_eq(n, (8192 - LP_HDR) / 103 + 1);
    cr_assert_eq(list_nodes(l), 2);
    cr_assert(list_valid(l, -2));
    /* never converts back */
    list_drop(l, LIST_TAIL, list_len(l) - 1);
    cr_assert(list_is_quicklist(l));
    cr_assert_eq(list_len(l), 1);
    cr_assert(list_valid(l, -2));
    list_destroy(l);
}

Test(t_list, byte_limits_per_fill)
{
    for (int64_t fill = -1; fill >= -5; fill--) {
        struct list *l = list_create();
        char v[60];
        memset(v, 'y', sizeof(v));
        size_t limit = (size_t)4096 << (-fill - 1);
        size_t n = 0;
        while (!list_is_quicklist(l)) {
            list_push(l, LIST_HEAD, v, sizeof(v), fill);
            n++;
        }
        cr_assert_eq(n, (limit - LP_HDR) / 62 + 1, "fill %lld", (long long)fill);
        list_destroy(l);
    }
}

Test(t_list, converts_at_count_limit)
{
    struct list *l = list_create();
    for (int i = 0; i < 5; i++) {
        list_push(l, LIST_TAIL, "v", 1, 5);
    }
    cr_assert(!list_is_quicklist(l));
    list_push(l, LIST_TAIL, "v", 1, 5);
    cr_assert(list_is_quicklist(l));
    for (int i = 0; i < 100; i++) {
        list_push(l, i % 2 ? LIST_TAIL : LIST_HEAD, "v", 1, 5);
    }
    cr_assert(list_valid(l, 5));
    cr_assert_geq(list_nodes(l), 106 / 5);
    list_destroy(l);
}

Test(t_list, count_fill_keeps_safety_byte_limit)
{
    struct list *l = list_create();
    char v[1000];
    memset(v, 'z', sizeof(v));
    for (int i = 0; i < 20; i++) {
        list_push(l, LIST_TAIL, v, sizeof(v), 1000);
    }
    cr_assert(list_is_quicklist(l));
    cr_assert(list_valid(l, 1000));
    list_destroy(l);
}

Test(t_list, huge_element_gets_own_node)
{
    struct list *l = list_create();
    size_t big = 100000;
    char *v = malloc(big);
    memset(v, 'h', big);
    list_push(l, LIST_TAIL, "a", 1, -2);
    list_push(l, LIST_TAIL, v, big, -2);
    list_push(l, LIST_TAIL, "b", 1, -2);
    cr_assert(list_is_quicklist(l));
    cr_assert_eq(list_nodes(l), 3);
    cr_assert(list_valid(l, -2));
    struct lp_val r;
    cr_assert(list_index(l, 1, &r));
    cr_assert_eq(r.len, big);
    free(v);
    list_destroy(l);
}

Test(t_list, lset_big_value_converts_and_splits)
{
    struct list *l = list_create();
    char v[3000];
    memset(v, 's', sizeof(v));
    list_push(l, LIST_TAIL, "a", 1, -1);
    list_push(l, LIST_TAIL, "b", 1, -1);
    list_push(l, LIST_TAIL, "c", 1, -1);
    cr_assert(list_set(l, 1, v, sizeof(v), -1));
    cr_assert(!list_is_quicklist(l));
    cr_assert(list_set(l, 0, v, sizeof(v), -1)); /* 6 KB > 4 KB: split */
    cr_assert(list_is_quicklist(l));
    cr_assert(list_valid(l, -1));
    cr_assert_eq(list_len(l), 3);
    expect_at(l, 2, "c");
    cr_assert(!list_set(l, 3, "x", 1, -1));
    cr_assert(!list_set(l, -4, "x", 1, -1));
    list_destroy(l);
}

Test(t_list, dup_and_mem)
{
    struct list *l = list_create();
    char buf[24];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof(buf), "%d", i);
        list_push(l, LIST_TAIL, buf, (size_t)n, -2);
    }
    cr_assert(list_is_quicklist(l));
    struct list *d = list_dup(l);
    cr_assert_eq(list_len(d), 5000);
    cr_assert_eq(list_nodes(d), list_nodes(l));
    cr_assert(list_valid(d, -2));
    expect_at(d, 4321, "4321");
    list_drop(l, LIST_HEAD, 5000);
    expect_at(d, 0, "0");
    /* 5000 ints below 32768 take 2-4 bytes each; plus per-node overhead */
    size_t m = list_mem(d);
    cr_assert(m > 5000 * 2 && m < 5000 * 5, "mem %zu", m);
    list_destroy(l);
    list_destroy(d);
}

/* Random pushes/pops/sets/drops at small fills against an array model. */
Test(t_list, model_random_ops)
{
    int64_t fills[] = { 1, 2, 3, 7, -1 };
    for (size_t fi = 0; fi < sizeof(fills) / sizeof(fills[0]); fi++) {
        int64_t fill = fills[fi];
        struct list *l = list_create();
        char **model = NULL;
        size_t len = 0, cap = 0;
        unsigned seed = 12345u + (unsigned)fi;
        for (int step = 0; step < 4000; step++) {
            char buf[64];
            unsigned r = (unsigned)rand_r(&seed);
            int n = (r >> 8) % 3 == 0 ? snprintf(buf, sizeof(buf), "%d", (int)(r % 20000) - 10000)
                                      : snprintf(buf, sizeof(buf), "s%.*s", (int)(r % 40),
                                                 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnop");
            unsigned op = r % 7;
            if (len + 1 > cap) {
                cap = cap ? cap * 2 : 64;
                model = realloc(model, cap * sizeof(*model));
            }
            if (op <= 1) {
                enum list_end e = op == 0 ? LIST_HEAD : LIST_TAIL;
                list_push(l, e, buf, (size_t)n, fill);
                char *s = strndup(buf, (size_t)n);
                if (e == LIST_HEAD) {
                    memmove(model + 1, model, len * sizeof(*model));
                    model[0] = s;
                } else {
                    model[len] = s;
                }
                len++;
            } else if (op == 2 && len) {
                size_t k = 1 + r % 3;
                if (k > len) {
                    k = len;
                }
                bool head = (r >> 4) & 1;
                list_drop(l, head ? LIST_HEAD : LIST_TAIL, k);
                for (size_t i = 0; i < k; i++) {
                    free(model[head ? i : len - 1 - i]);
                }
                if (head) {
                    memmove(model, model + k, (len - k) * sizeof(*model));
                }
                len -= k;
            } else if (op == 3 && len) {
                size_t i = r % len;
                cr_assert(list_set(l, (int64_t)i, buf, (size_t)n, fill));
                free(model[i]);
                model[i] = strndup(buf, (size_t)n);
            } else if (len) {
                size_t i = r % len;
                expect_at(l, (int64_t)i, model[i]);
                expect_at(l, (int64_t)i - (int64_t)len, model[i]);
            }
            cr_assert_eq(list_len(l), len);
            if (step % 200 == 0) {
                cr_assert(list_valid(l, fill), "fill %lld step %d", (long long)fill, step);
            }
        }
        for (size_t i = 0; i < len; i++) {
            expect_at(l, (int64_t)i, model[i]);
            free(model[i]);
        }
        cr_assert(list_valid(l, fill));
        free(model);
        list_destroy(l);
    }
}
