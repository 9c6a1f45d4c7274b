/* tests/unit/types/test_listpack.c: packed element arrays: encodings, walking, edits. */
#include "node/types/listpack.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The element at p formatted as bytes, compared with s. */
static void
expect_elem(const uint8_t *p, const char *s, size_t n)
{
    struct lp_val v;
    char buf[24];
    size_t len;
    cr_assert_not_null(p);
    lp_get(p, &v);
    const char *b = lp_val_bytes(&v, buf, &len);
    cr_assert_eq(len, n, "length %zu != %zu for %.*s", len, n, (int)n, s);
    cr_assert(memcmp(b, s, n) == 0);
}

Test(listpack, empty)
{
    uint8_t *lp = lp_create();
    cr_assert_eq(lp_count(lp), 0);
    cr_assert_eq(lp_bytes(lp), LP_HDR);
    cr_assert_null(lp_first(lp));
    cr_assert_null(lp_last(lp));
    cr_assert_null(lp_seek(lp, 0));
    cr_assert_null(lp_seek(lp, -1));
    cr_assert(lp_valid(lp));
    lp_destroy(lp);
    lp_destroy(NULL);
}

Test(listpack, canonical_integers)
{
    int64_t v;
    cr_assert(lp_str_is_int("0", 1, &v) && v == 0);
    cr_assert(lp_str_is_int("-12", 3, &v) && v == -12);
    cr_assert(lp_str_is_int("9223372036854775807", 19, &v) && v == INT64_MAX);
    cr_assert(lp_str_is_int("-9223372036854775808", 20, &v) && v == INT64_MIN);
    cr_assert(!lp_str_is_int("9223372036854775808", 19, &v));
    cr_assert(!lp_str_is_int("-9223372036854775809", 20, &v));
    cr_assert(!lp_str_is_int("012", 3, &v));
    cr_assert(!lp_str_is_int("-0", 2, &v));
    cr_assert(!lp_str_is_int("+1", 2, &v));
    cr_assert(!lp_str_is_int(" 1", 2, &v));
    cr_assert(!lp_str_is_int("1 ", 2, &v));
    cr_assert(!lp_str_is_int("-", 1, &v));
    cr_assert(!lp_str_is_int("", 0, &v));
}

Test(listpack, integer_sizes)
{
    struct {
        const char *s;
        size_t cost;
    } cases[] = {
        { "0", 2 },
        { "127", 2 },
        { "128", 3 },
        { "-1", 3 },
        { "4095", 3 },
        { "-4096", 3 },
        { "4096", 4 },
        { "32767", 4 },
        { "-32768", 4 },
        { "32768", 5 },
        { "8388607", 5 },
        { "8388608", 6 },
        { "1700000000000", 8 },
        { "9223372036854775807", 10 },
        { "-9223372036854775808", 10 },
        { "007", 5 },
    };
    uint8_t *lp = lp_create();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t before = lp_bytes(lp);
        cr_assert_eq(lp_entry_cost(cases[i].s, strlen(cases[i].s)), cases[i].cost, "%s",
                     cases[i].s);
        lp_append(&lp, cases[i].s, strlen(cases[i].s));
        cr_assert_eq(lp_bytes(lp) - before, cases[i].cost, "%s", cases[i].s);
    }
    cr_assert(lp_valid(lp));
    size_t i = 0;
    for (uint8_t *p = lp_first(lp); p; p = lp_next(lp, p), i++) {
        expect_elem(p, cases[i].s, strlen(cases[i].s));
    }
    cr_assert_eq(i, sizeof(cases) / sizeof(cases[0]));
    lp_destroy(lp);
}

Test(listpack, every_integer_width_round_trips)
{
    uint8_t *lp = lp_create();
    char buf[32];
    int64_t vals[130];
    size_t n = 0;
    for (int b = 0; b < 63; b++) {
        vals[n++] = (int64_t)1 << b;
        vals[n++] = -((int64_t)1 << b);
    }
    vals[n++] = INT64_MAX;
    vals[n++] = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof(buf), "%" PRId64, vals[i]);
        lp_append(&lp, buf, (size_t)len);
    }
    cr_assert(lp_valid(lp));
    for (size_t i = 0; i < n; i++) {
        struct lp_val v;
        lp_get(lp_seek(lp, (int64_t)i), &v);
        cr_assert_null(v.p);
        cr_assert_eq(v.v, vals[i]);
    }
    lp_destroy(lp);
}

Test(listpack, string_length_boundaries)
{
    size_t lens[] = { 0, 1, 63, 64, 126, 127, 128, 4095, 4096, 16383, 16384, 70000 };
    size_t n = sizeof(lens) / sizeof(lens[0]);
    uint8_t *lp = lp_create();
    char *big = malloc(70000);
    memset(big, 'q', 70000);
    for (size_t i = 0; i < n; i++) {
        lp_prepend(&lp, big, lens[i]);
    }
    cr_assert(lp_valid(lp));
    cr_assert_eq(lp_count(lp), n);
    /* backwards from the tail meets them in insertion order */
    size_t i = 0;
    for (uint8_t *p = lp_last(lp); p; p = lp_prev(lp, p), i++) {
        struct lp_val v;
        lp_get(p, &v);
        cr_assert_not_null(v.p);
        cr_assert_eq(v.len, lens[i]);
    }
    cr_assert_eq(i, n);
    free(big);
    lp_destroy(lp);
}

Test(listpack, seek_insert_replace_delete)
{
    uint8_t *lp = lp_create();
    char buf[16];
    for (int i = 0; i < 100; i++) {
        int len = snprintf(buf, sizeof(buf), "e%d", i);
        lp_append(&lp, buf, (size_t)len);
    }
    expect_elem(lp_seek(lp, 0), "e0", 2);
    expect_elem(lp_seek(lp, 99), "e99", 3);
    expect_elem(lp_seek(lp, -1), "e99", 3);
    expect_elem(lp_seek(lp, -100), "e0", 2);
    cr_assert_null(lp_seek(lp, 100));
    cr_assert_null(lp_seek(lp, -101));
    expect_elem(lp_seek(lp, 70), "e70", 3);

    uint8_t *p = lp_insert(&lp, lp_seek(lp, 50), "mid", 3);
    expect_elem(p, "mid", 3);
    expect_elem(lp_next(lp, p), "e50", 3);
    p = lp_replace(&lp, lp_seek(lp, 50), "a much longer value than before", 31);
    expect_elem(lp_seek(lp, 50), "a much longer value than before", 31);
    p = lp_replace(&lp, p, "7", 1);
    expect_elem(lp_seek(lp, 50), "7", 1);
    p = lp_delete(&lp, lp_seek(lp, 50));
    expect_elem(p, "e50", 3);
    cr_assert_eq(lp_count(lp), 100);
    p = lp_delete_range(&lp, lp_seek(lp, 10), 20);
    expect_elem(p, "e30", 3);
    cr_assert_eq(lp_count(lp), 80);
    cr_assert_null(lp_delete_range(&lp, lp_seek(lp, 75), 100));
    cr_assert_eq(lp_count(lp), 75);
    cr_assert(lp_valid(lp));
    lp_destroy(lp);
}

Test(listpack, split_and_concat)
{
    uint8_t *a = lp_create();
    char buf[16];
    for (int i = 0; i < 10; i++) {
        int len = snprintf(buf, sizeof(buf), "%d", i * 1000);
        lp_append(&a, buf, (size_t)len);
    }
    uint8_t *b = lp_split(&a, lp_seek(a, 4));
    cr_assert_eq(lp_count(a), 4);
    cr_assert_eq(lp_count(b), 6);
    cr_assert(lp_valid(a) && lp_valid(b));
    expect_elem(lp_first(b), "4000", 4);
    expect_elem(lp_last(a), "3000", 4);
    lp_concat(&a, b);
    cr_assert_eq(lp_count(a), 10);
    cr_assert(lp_valid(a));
    expect_elem(lp_seek(a, 9), "9000", 4);
    uint8_t *d = lp_dup(a);
    cr_assert_eq(memcmp(d, a, lp_bytes(a)), 0);
    lp_destroy(a);
    lp_destroy(b);
    lp_destroy(d);
}

Test(listpack, match)
{
    uint8_t *lp = lp_create();
    struct lp_key k;
    lp_append(&lp, "12", 2);
    lp_append(&lp, "012", 3);
    lp_append(&lp, "abc", 3);
    lp_key_init(&k, "12", 2);
    cr_assert(lp_match(lp_seek(lp, 0), &k));
    cr_assert(!lp_match(lp_seek(lp, 1), &k));
    lp_key_init(&k, "012", 3);
    cr_assert(!lp_match(lp_seek(lp, 0), &k));
    cr_assert(lp_match(lp_seek(lp, 1), &k));
    lp_key_init(&k, "abc", 3);
    cr_assert(lp_match(lp_seek(lp, 2), &k));
    lp_key_init(&k, "ab", 2);
    cr_assert(!lp_match(lp_seek(lp, 2), &k));
    lp_destroy(lp);
}
