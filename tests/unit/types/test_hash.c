/* tests/unit/types/test_hash.c: packed list encoding and hash objects
 * (conversion at the thresholds, round trips, edge values). */
#include "node/types/hash.h"

#include "node/keyspace/ks.h"

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
    static const char *vals[] = { "",
                                  "0",
                                  "47",
                                  "48",
                                  "-1",
                                  "127",
                                  "128",
                                  "-128",
                                  "-129",
                                  "9223372036854775807",
                                  "-9223372036854775808",
                                  "9223372036854775808",
                                  "01",
                                  "-0",
                                  "+1",
                                  " 1",
                                  "1.5",
                                  "abc" };
    struct hpk_ref r = { hpk_create(), NULL, NULL };
    struct hpk *p;
    char big[1000];
    size_t off = 0, n = sizeof(vals) / sizeof(vals[0]);

    memset(big, 'z', sizeof(big));
    for (size_t i = 0; i < n; i++) {
        hpk_append(&r, vals[i], strlen(vals[i]));
    }
    hpk_append(&r, big, 191);
    hpk_append(&r, big, 192);
    hpk_append(&r, big, 1000);
    p = r.p;
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
        struct hpk_ref q = { hpk_create(), NULL, NULL };
        hpk_append(&q, "7", 1);
        hpk_append(&q, "1000", 4);
        hpk_append(&q, "ab", 2);
        cr_assert_eq(hpk_end(q.p), 1 + 3 + 3);
        hpk_free(q.p);
    }
    hpk_free(p);
}

/* The same operations on a heap list and on one inline in a keyspace entry
 * (which moves as it grows and shrinks): the bytes must agree. */
static void
replace_delete_stride(struct hpk_ref *r)
{
    char big[300];
    memset(big, 'q', sizeof(big));
    hpk_append(r, "f", 1);
    hpk_append(r, "v", 1);
    hpk_append(r, "v", 1);
    hpk_append(r, "f", 1);
    /* stride 2 only matches fields: "v" as a field is element 2 */
    cr_assert_eq(hpk_find(r->p, "v", 1, 2), hpk_next(r->p, hpk_next(r->p, 0)));
    hpk_replace(r, hpk_next(r->p, 0), big, 300);
    expect_el(r->p, 0, "f");
    cr_assert_eq(hpk_end(r->p), 2 + (1 + 2 + 300) + 2 + 2);
    hpk_replace(r, hpk_next(r->p, 0), "12345", 5);
    expect_el(r->p, hpk_next(r->p, 0), "12345");
    expect_el(r->p, hpk_next(r->p, hpk_next(r->p, 0)), "v");
    hpk_delete(r, 0, 2);
    cr_assert_eq(hpk_count(r->p), 2);
    expect_el(r->p, 0, "v");
    expect_el(r->p, hpk_next(r->p, 0), "f");
    hpk_delete(r, 0, 2);
    cr_assert_eq(hpk_count(r->p), 0);
    cr_assert_eq(hpk_end(r->p), 0);
}

Test(hpk, replace_delete_stride)
{
    struct hpk_ref r = { hpk_create(), NULL, NULL };
    replace_delete_stride(&r);
    hpk_free(r.p);
}

Test(hpk, inline_in_entry)
{
    static const uint8_t empty[HPK_HDR] = { 0 };
    struct ks *ks = ks_create(1, 2);
    struct hpk_ref r;
    size_t n;

    r.e = ks_set_inl(ks, "key", 3, KS_HASH, empty, sizeof(empty), 123456789);
    r.ks = ks;
    r.p = (struct hpk *)(void *)ks_inl_val(r.e, &n);
    cr_assert_eq(n, HPK_HDR);
    replace_delete_stride(&r);
    cr_assert_eq(ks_peek(ks, "key", 3), r.e);
    ks_inl_val(r.e, &n);
    cr_assert_eq(n, HPK_HDR);
    cr_assert_eq(ks_entry_expire(r.e), 123456789);
    cr_assert_eq(ks_entry_type(r.e), KS_HASH);
    cr_assert(ks_entry_inl(r.e));
    ks_destroy(ks);
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
    cr_assert_eq(hobj_set(h, "f0", 2, "x", 1, &lim), 0); /* update: no conversion */
    cr_assert_str_eq(hobj_encoding(h), "listpack");
    cr_assert_eq(hobj_set(h, "f4", 2, "y", 1, &lim), 1);
    cr_assert_str_eq(hobj_encoding(h), "hashtable");
    cr_assert_eq(hobj_len(h), 5);
    expect_field(h, "f0", "x");
    expect_field(h, "f3", "3000");
    expect_field(h, "f4", "y");
    cr_assert(hobj_del(h, "f4", 2));
    cr_assert(!hobj_del(h, "f4", 2));
    cr_assert_str_eq(hobj_encoding(h), "hashtable"); /* never converts back */
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
        /* Stored in a keyspace: the ops work on the entry. */
        struct ks *ks = ks_create(1, 2);
        struct ks_entry *e;
        struct hobj c;
        hobj_store(h, ks, "k", 1);
        e = ks_peek(ks, "k", 1);
        cr_assert(!ks_entry_inl(e));
        cr_assert_str_eq(obj_hash_ops.encoding(e), "hashtable");
        e = ks_set_ptr(ks, "c", 1, KS_HASH, obj_hash_ops.dup(e), obj_hash_ops.free, KS_NO_EXPIRE);
        hobj_bind(&c, ks, e);
        cr_assert_eq(hobj_len(&c), 5000);
        expect_field(&c, "field:42", "-2458");
        cr_assert_gt(obj_hash_ops.mem(e), 5000 * 16);
        ks_destroy(ks);
    }
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
        struct ks *ks = ks_create(1, 2);
        struct hobj *t = hobj_create(), c;
        struct ks_entry *e;
        hobj_set(t, "c", 1, "3", 1, &lim);
        hobj_set_deadline(t, "c", 1, 300);
        hobj_store(t, ks, "t", 1);
        e = ks_set_ptr(ks, "c", 1, KS_HASH, obj_hash_ops.dup(ks_peek(ks, "t", 1)),
                       obj_hash_ops.free, KS_NO_EXPIRE);
        hobj_bind(&c, ks, e);
        cr_assert_eq(hobj_field_deadline(&c, "c", 1), 300);
        ks_destroy(ks);
    }
    hobj_set(h, "c", 1, "9", 1, &lim); /* overwrite drops the TTL */
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

/* A hash bound to a keyspace entry: inline listpack (no bytes outside the
 * entry, the entry moves as it grows), then converted at the threshold into a
 * pointer entry with the same key and deadline. */
Test(hobj, bound_converts_in_keyspace)
{
    static const uint8_t empty[HPK_HDR] = { 0 };
    struct hobj_lim lim = { 4, 16 };
    struct ks *ks = ks_create(1, 2);
    struct ks_entry *e = ks_set_inl(ks, "h", 1, KS_HASH, empty, sizeof(empty), 99999999999);
    struct hobj h;
    char f[16], v[16];

    hobj_bind(&h, ks, e);
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        snprintf(v, sizeof(v), "value-%d", i);
        cr_assert_eq(hobj_set(&h, f, strlen(f), v, strlen(v), &lim), 1);
        e = ks_peek(ks, "h", 1);
        cr_assert(ks_entry_inl(e));
        cr_assert_str_eq(obj_hash_ops.encoding(e), "listpack");
        cr_assert_eq(obj_hash_ops.mem(e), 0);
    }
    cr_assert_eq(hobj_set(&h, "f0", 2, "x", 1, &lim), 0);
    expect_field(&h, "f0", "x");
    cr_assert_eq(hobj_set(&h, "f4", 2, "v4", 2, &lim), 1); /* 5th field: converts */
    e = ks_peek(ks, "h", 1);
    cr_assert(!ks_entry_inl(e));
    cr_assert_str_eq(hobj_encoding(&h), "hashtable");
    cr_assert_str_eq(obj_hash_ops.encoding(e), "hashtable");
    cr_assert_eq(ks_entry_expire(e), 99999999999);
    cr_assert_eq(hobj_len(&h), 5);
    expect_field(&h, "f3", "value-3");
    hobj_bind(&h, ks, e);
    expect_field(&h, "f4", "v4");
    cr_assert(hobj_del(&h, "f4", 2));
    cr_assert_eq(hobj_len(&h), 4);
    ks_destroy(ks);
}

Test(hobj, bound_converts_on_long_value)
{
    static const uint8_t empty[HPK_HDR] = { 0 };
    struct hobj_lim lim = { 128, 8 };
    struct ks *ks = ks_create(1, 2);
    struct hobj h;

    hobj_bind(&h, ks, ks_set_inl(ks, "h", 1, KS_HASH, empty, sizeof(empty), KS_NO_EXPIRE));
    hobj_set(&h, "a", 1, "12345678", 8, &lim);
    cr_assert(ks_entry_inl(ks_peek(ks, "h", 1)));
    hobj_set(&h, "b", 1, "123456789", 9, &lim);
    cr_assert(!ks_entry_inl(ks_peek(ks, "h", 1)));
    expect_field(&h, "a", "12345678");
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "h", 1)), KS_NO_EXPIRE);
    ks_destroy(ks);
}
