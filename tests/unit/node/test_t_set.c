/* tests/unit/node/test_t_set.c: set encodings and their conversions. */
#include "node/t_set.h"

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
    s = sobj_create("1", 1, 9, &LIM);     /* more than max_intset members coming */
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
    cr_assert(add(s, "y"));                 /* 4 = max listpack entries */
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
    cr_assert(add(s, "toolong"));           /* 7 > max value 6 */
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
        struct sobj *c = obj_set_ops.dup(s);
        cr_assert_eq(sobj_len(c), 1000);
        cr_assert(sobj_has(c, "m999", 4));
        cr_assert_gt(obj_set_ops.mem(c), 1000 * 8);
        obj_set_ops.free(c);
    }
    sobj_free(s);
}
