/* tests/unit/node/test_t_hash.c: packed list encoding and hash objects
 * (conversion at the thresholds, round trips, edge values). */
#include "node/t_hash.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void
expect_el(struct hpk *p, size_t off, const char *want)
{
    char scratch[HPK_SCRATCH];
    struct rv_str v;
    hpk_get(p, off, scratch, &v);
    cr_assert_eq(v.len, strlen(want), "len %zu for %s", v.len, want);
    cr_assert(memcmp(v.p, want, v.len) == 0, "got %.*s want %s", (int)v.len, v.p, want);
}

Test(hpk, round_trip_edge_values)
{
    static const char *vals[] = { "", "0", "47", "48", "-1", "127", "128", "-128", "-129",
                                  "9223372036854775807", "-9223372036854775808",
                                  "9223372036854775808", "01", "-0", "+1", " 1", "1.5", "abc" };
    struct hpk *p = hpk_create();
    char big[1000];
    size_t off = 0, n = sizeof(vals) / sizeof(vals[0]);

    memset(big, 'z', sizeof(big));
    for (size_t i = 0; i < n; i++) {
        hpk_append(&p, vals[i], strlen(vals[i]));
    }
    hpk_append(&p, big, 191);
    hpk_append(&p, big, 192);
    hpk_append(&p, big, 1000);
    cr_assert_eq(hpk_count(p), n + 3);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(hpk_find(p, vals[i], strlen(vals[i]), 1), off, "find %s", vals[i]);
        expect_el(p, off, vals[i]);
        off = hpk_next(p, off);
    }
    for (size_t len = 191; len <= 192; len++) {
        char scratch[HPK_SCRATCH];
        struct rv_str v;
        cr_assert_eq(hpk_find(p, big, len, 1), off);
        off = hpk_get(p, off, scratch, &v);
        cr_assert_eq(v.len, len);
    }
    cr_assert_eq(hpk_find(p, big, 1000, 1), off);
    cr_assert_eq(hpk_find(p, big, 999, 1), HPK_NONE);
    /* Small integers take one byte, strings one byte of overhead. */
    {
        struct hpk *q = hpk_create();
        hpk_append(&q, "7", 1);
        hpk_append(&q, "1000", 4);
        hpk_append(&q, "ab", 2);
        cr_assert_eq(hpk_end(q), 1 + 3 + 3);
        hpk_free(q);
    }
    hpk_free(p);
}

Test(hpk, replace_delete_stride)
{
    struct hpk *p = hpk_create();
    char big[300];
    memset(big, 'q', sizeof(big));
    hpk_append(&p, "f", 1);
    hpk_append(&p, "v", 1);
    hpk_append(&p, "v", 1);
    hpk_append(&p, "f", 1);
    /* stride 2 only matches fields: "v" as a field is element 2 */
    cr_assert_eq(hpk_find(p, "v", 1, 2), hpk_next(p, hpk_next(p, 0)));
    hpk_replace(&p, hpk_next(p, 0), big, 300);
    expect_el(p, 0, "f");
    hpk_replace(&p, hpk_next(p, 0), "12345", 5);
    expect_el(p, hpk_next(p, 0), "12345");
    expect_el(p, hpk_next(p, hpk_next(p, 0)), "v");
    hpk_delete(&p, 0, 2);
    cr_assert_eq(hpk_count(p), 2);
    expect_el(p, 0, "v");
    expect_el(p, hpk_next(p, 0), "f");
    hpk_delete(&p, 0, 2);
    cr_assert_eq(hpk_count(p), 0);
    cr_assert_eq(hpk_end(p), 0);
    hpk_free(p);
}

static void
expect_field(struct hobj *h, const char *f, const char *want)
{
    char scratch[HPK_SCRATCH];
    struct rv_str v;
    cr_assert(hobj_get(h, f, strlen(f), scratch, &v), "missing %s", f);
    cr_assert_eq(v.len, strlen(want));
    cr_assert(memcmp(v.p, want, v.len) == 0);
}

Test(hobj, converts_at_entry_threshold)
{
    struct hobj_lim lim = { 4, 64 };
    struct hobj *h = hobj_create();
    char f[16], v[16];
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        snprintf(v, sizeof(v), "%d", i * 1000);
        cr_assert_eq(hobj_set(h, f, strlen(f), v, strlen(v), &lim), 1);
    }
    cr_assert_str_eq(hobj_encoding(h), "listpack");
    cr_assert_eq(hobj_set(h, "f0", 2, "x", 1, &lim), 0);   /* update: no conversion */
    cr_assert_str_eq(hobj_encoding(h), "listpack");
    cr_assert_eq(hobj_set(h, "f4", 2, "y", 1, &lim), 1);
    cr_assert_str_eq(hobj_encoding(h), "hashtable");
    cr_assert_eq(hobj_len(h), 5);
    expect_field(h, "f0", "x");
    expect_field(h, "f3", "3000");
    expect_field(h, "f4", "y");
    cr_assert(hobj_del(h, "f4", 2));
    cr_assert(!hobj_del(h, "f4", 2));
    cr_assert_str_eq(hobj_encoding(h), "hashtable");   /* never converts back */
    hobj_free(h);
}

Test(hobj, converts_on_long_value_or_field)
{
    struct hobj_lim lim = { 128, 8 };
    struct hobj *h = hobj_create();
    cr_assert_eq(hobj_set(h, "a", 1, "12345678", 8, &lim), 1);
    cr_assert_str_eq(hobj_encoding(h), "listpack");
    cr_assert_eq(hobj_set(h, "a", 1, "123456789", 9, &lim), 0);
    cr_assert_str_eq(hobj_encoding(h), "hashtable");
    expect_field(h, "a", "123456789");
    hobj_free(h);

    h = hobj_create();
    cr_assert_eq(hobj_set(h, "longfield", 9, "v", 1, &lim), 1);
    cr_assert_str_eq(hobj_encoding(h), "hashtable");
    expect_field(h, "longfield", "v");
    hobj_free(h);
}

Test(hobj, many_fields_values_survive)
{
    struct hobj_lim lim = { 128, 64 };
    struct hobj *h = hobj_create();
    char f[32], v[32], scratch[HPK_SCRATCH];
    struct rv_str out;
    for (int i = 0; i < 5000; i++) {
        snprintf(f, sizeof(f), "field:%d", i);
        snprintf(v, sizeof(v), "%d", i - 2500);
        hobj_set(h, f, strlen(f), v, strlen(v), &lim);
    }
    cr_assert_eq(hobj_len(h), 5000);
    for (int i = 0; i < 5000; i++) {
        snprintf(f, sizeof(f), "field:%d", i);
        snprintf(v, sizeof(v), "%d", i - 2500);
        expect_field(h, f, v);
    }
    cr_assert(!hobj_get(h, "nope", 4, scratch, &out));
    {
        void *c = obj_hash_ops.dup(h);
        cr_assert_eq(hobj_len(c), 5000);
        expect_field(c, "field:42", "-2458");
        cr_assert_gt(obj_hash_ops.mem(c), 5000 * 16);
        obj_hash_ops.free(c);
    }
    hobj_free(h);
}

Test(hobj, field_deadlines_reap_and_clear)
{
    struct hobj_lim lim = { 128, 64 };
    struct hobj *h = hobj_create();
    char scratch[HPK_SCRATCH];
    struct rv_str out;
    hobj_set(h, "a", 1, "1", 1, &lim);
    hobj_set(h, "b", 1, "2", 1, &lim);
    hobj_set(h, "c", 1, "3", 1, &lim);
    cr_assert_str_eq(hobj_encoding(h), "listpack");
    cr_assert_eq(hobj_field_deadline(h, "a", 1), -1);
    cr_assert_eq(hobj_reap(h, 1000), 0);
    hobj_set_deadline(h, "a", 1, 100);
    hobj_set_deadline(h, "b", 1, 200);
    hobj_set_deadline(h, "c", 1, 300);
    cr_assert_str_eq(hobj_encoding(h), "hashtable");
    cr_assert_eq(hobj_field_deadline(h, "b", 1), 200);
    {
        void *c = obj_hash_ops.dup(h);
        cr_assert_eq(hobj_field_deadline(c, "c", 1), 300);
        obj_hash_ops.free(c);
    }
    hobj_set(h, "c", 1, "9", 1, &lim);   /* overwrite drops the TTL */
    cr_assert_eq(hobj_field_deadline(h, "c", 1), -1);
    cr_assert_eq(hobj_reap(h, 99), 0);
    cr_assert_eq(hobj_reap(h, 150), 1);
    cr_assert(!hobj_get(h, "a", 1, scratch, &out));
    cr_assert_eq(hobj_len(h), 2);
    cr_assert(hobj_del(h, "b", 1));
    cr_assert_eq(hobj_field_deadline(h, "b", 1), -1);
    cr_assert_eq(hobj_reap(h, 1000), 0);
    expect_field(h, "c", "9");
    hobj_free(h);
}
