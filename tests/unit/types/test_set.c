/* tests/unit/types/test_set.c: set encodings and their conversions. */
#include "node/types/set.h"

#include "node/keyspace/ks.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const struct sobj_lim LIM = { 8, 4, 6 };

static bool
add(struct sobj *s, const char *m)
{
    return sobj_add(s, m, strlen(m), &LIM);
}

Test(sobj, create_picks_encoding)
{
    struct sobj *s = sobj_create("1", 1, 1, &LIM);
    cr_assert_str_eq(sobj_encoding(s), "intset");
    sobj_free(s);
    s = sobj_create("a", 1, 1, &LIM);
    cr_assert_str_eq(sobj_encoding(s), "listpack");
    sobj_free(s);
    s = sobj_create("1", 1, 9, &LIM); /* more than max_intset members coming */
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    sobj_free(s);
    s = sobj_create("a", 1, 5, &LIM);
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    sobj_free(s);
}

Test(sobj, intset_to_hashtable_past_entries)
{
    struct sobj *s = sobj_create("1", 1, 1, &LIM);
    char m[16];
    for (int i = 0; i < 8; i++) {
        snprintf(m, sizeof(m), "%d", i * 70000 - 3);
        cr_assert(add(s, m));
        cr_assert(!add(s, m));
    }
    cr_assert_str_eq(sobj_encoding(s), "intset");
    cr_assert(add(s, "-5"));
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    cr_assert_eq(sobj_len(s), 9);
    cr_assert(sobj_has(s, "139997", 6));
    cr_assert(sobj_has(s, "-5", 2));
    cr_assert(!sobj_has(s, "-05", 3));
    sobj_free(s);
}

Test(sobj, intset_to_listpack_to_hashtable)
{
    struct sobj *s = sobj_create("1", 1, 1, &LIM);
    add(s, "1");
    add(s, "-20");
    cr_assert(add(s, "x"));
    cr_assert_str_eq(sobj_encoding(s), "listpack");
    cr_assert(sobj_has(s, "1", 1));
    cr_assert(sobj_has(s, "-20", 3));
    cr_assert(sobj_has(s, "x", 1));
    cr_assert(!sobj_has(s, "01", 2));
    cr_assert(add(s, "y")); /* 4 = max listpack entries */
    cr_assert_str_eq(sobj_encoding(s), "listpack");
    cr_assert(add(s, "z"));
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    cr_assert_eq(sobj_len(s), 5);
    cr_assert(sobj_rem(s, "-20", 3));
    cr_assert(!sobj_rem(s, "-20", 3));
    cr_assert_eq(sobj_len(s), 4);
    sobj_free(s);
}

Test(sobj, long_member_goes_to_hashtable)
{
    struct sobj *s = sobj_create("1", 1, 1, &LIM);
    add(s, "1");
    cr_assert(add(s, "toolong")); /* 7 > max value 6 */
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    sobj_free(s);
    s = sobj_create("a", 1, 1, &LIM);
    add(s, "a");
    cr_assert(add(s, "sixsix"));
    cr_assert_str_eq(sobj_encoding(s), "listpack");
    cr_assert(add(s, "seven77"));
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    cr_assert(sobj_has(s, "sixsix", 6));
    sobj_free(s);
    /* an intset whose members are too long for the listpack skips it */
    s = sobj_create("1", 1, 1, &LIM);
    add(s, "1234567");
    cr_assert(add(s, "a"));
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    sobj_free(s);
}

Test(sobj, dup_and_mem)
{
    struct sobj_lim big = { 512, 128, 64 };
    struct sobj *s = sobj_create("m0", 2, 1, &big);
    char m[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        sobj_add(s, m, strlen(m), &big);
    }
    cr_assert_str_eq(sobj_encoding(s), "hashtable");
    {
        struct ks *ks = ks_create(1, 2);
        struct ks_entry *e;
        struct sobj c;
        sobj_store(s, ks, "s", 1);
        e = ks_peek(ks, "s", 1);
        e = ks_set_ptr(ks, "c", 1, KS_SET, obj_set_ops.dup(e), obj_set_ops.free, KS_NO_EXPIRE);
        sobj_bind(&c, ks, e);
        cr_assert_eq(sobj_len(&c), 1000);
        cr_assert(sobj_has(&c, "m999", 4));
        cr_assert_gt(obj_set_ops.mem(e), 1000 * 8);
        cr_assert_str_eq(obj_set_ops.encoding(e), "hashtable");
        ks_destroy(ks);
    }
}

/* A set bound to a keyspace entry: stored inline as a listpack, re-stored as
 * a pointer when it converts (intset to listpack goes inline), same deadline. */
Test(sobj, bound_conversions_in_keyspace)
{
    struct ks *ks = ks_create(1, 2);
    struct sobj *s = sobj_create("a", 1, 1, &LIM), b;
    struct ks_entry *e;

    add(s, "a");
    sobj_store(s, ks, "k", 1);
    e = ks_peek(ks, "k", 1);
    cr_assert(ks_entry_inl(e));
    cr_assert_eq(obj_set_ops.mem(e), 0);
    ks_set_expire(ks, e, 88888888888);
    sobj_bind(&b, ks, ks_peek(ks, "k", 1));
    cr_assert(add(&b, "b"));
    cr_assert(add(&b, "c"));
    cr_assert(add(&b, "d"));
    cr_assert(ks_entry_inl(ks_peek(ks, "k", 1)));
    cr_assert_str_eq(obj_set_ops.encoding(ks_peek(ks, "k", 1)), "listpack");
    cr_assert(add(&b, "e")); /* 5th: hashtable */
    e = ks_peek(ks, "k", 1);
    cr_assert(!ks_entry_inl(e));
    cr_assert_str_eq(sobj_encoding(&b), "hashtable");
    cr_assert_str_eq(obj_set_ops.encoding(e), "hashtable");
    cr_assert_eq(ks_entry_expire(e), 88888888888);
    cr_assert_eq(sobj_len(&b), 5);
    cr_assert(sobj_rem(&b, "a", 1));

    /* intset bound: a string member turns it into an inline listpack */
    s = sobj_create("1", 1, 1, &LIM);
    add(s, "1");
    add(s, "2");
    sobj_store(s, ks, "i", 1);
    e = ks_peek(ks, "i", 1);
    cr_assert(!ks_entry_inl(e));
    cr_assert_str_eq(obj_set_ops.encoding(e), "intset");
    sobj_bind(&b, ks, e);
    cr_assert(add(&b, "x"));
    e = ks_peek(ks, "i", 1);
    cr_assert(ks_entry_inl(e));
    cr_assert_str_eq(obj_set_ops.encoding(e), "listpack");
    cr_assert(sobj_has(&b, "1", 1) && sobj_has(&b, "2", 1) && sobj_has(&b, "x", 1));
    cr_assert(sobj_rem(&b, "x", 1));
    cr_assert_eq(sobj_len(&b), 2);
    ks_destroy(ks);
}
