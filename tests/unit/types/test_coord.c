/* tests/unit/types/test_coord.c: the semaphore holder array and token encoding. */
#include "node/types/coord.h"

#include "node/keyspace/ks.h"

#include <criterion/criterion.h>
#include <string.h>

Test(coord_token, fmt_and_parse_round_trip)
{
    static const uint64_t vals[] = { 0, 1, 0xf, 0x10, 0xdeadbeef, UINT64_MAX, 1ull << 63 };
    char buf[COORD_TOKEN_MAX];

    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        size_t n = coord_token_fmt(vals[i], buf);
        uint64_t back = 0;
        cr_assert(n >= 1 && n <= COORD_TOKEN_MAX);
        cr_assert(coord_token_parse(buf, n, &back));
        cr_assert_eq(back, vals[i]);
    }
    cr_assert_eq(coord_token_fmt(0xabc, buf), 3);
    cr_assert(memcmp(buf, "abc", 3) == 0);
    cr_assert_eq(coord_token_fmt(UINT64_MAX, buf), 16);
}

Test(coord_token, parse_accepts_only_canonical_form)
{
    uint64_t v;
    static const char *const bad[] = { "",    "0a",  "00",
                                       "ABC", "xyz", "-1",
                                       " 1",  "1 ",  "11111111111111111" };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert(!coord_token_parse(bad[i], strlen(bad[i]), &v), "accepted '%s'", bad[i]);
    }
    cr_assert(coord_token_parse("0", 1, &v) && v == 0);
    cr_assert(coord_token_parse("ffffffffffffffff", 16, &v) && v == UINT64_MAX);
}

Test(coord_sem, add_find_remove)
{
    struct coord_sem *s = coord_sem_create(3, 100);
    uint64_t a, b, c;

    cr_assert_not_null(s);
    cr_assert_eq(coord_sem_max_deadline(s), KS_NO_EXPIRE);
    a = coord_sem_add(s, 1000);
    b = coord_sem_add(s, 3000);
    c = coord_sem_add(s, 2000);
    cr_assert(a == 100 && b == 101 && c == 102);
    cr_assert_eq(coord_sem_len(s), 3);
    cr_assert_eq(coord_sem_live(s, 0), 3);
    cr_assert_eq(coord_sem_max_deadline(s), 3000);
    cr_assert_eq(coord_sem_find(s, b, 0), 1);
    cr_assert_eq(coord_sem_find(s, 999, 0), -1);
    cr_assert_eq(coord_sem_find(s, a, 1000), -1); /* expired at its deadline */
    coord_sem_remove(s, 1);
    cr_assert_eq(coord_sem_len(s), 2);
    cr_assert_eq(coord_sem_find(s, b, 0), -1);
    cr_assert_eq(coord_sem_find(s, c, 0), 1); /* the last one moved into the gap */
    cr_assert_eq(coord_sem_max_deadline(s), 2000);
    coord_sem_set_deadline(s, 0, 5000);
    cr_assert_eq(coord_sem_max_deadline(s), 5000);
    coord_sem_free(s);
    coord_sem_free(NULL);
}

Test(coord_sem, prune_and_live_count)
{
    struct coord_sem *s = coord_sem_create(4, 1);

    coord_sem_add(s, 10);
    coord_sem_add(s, 30);
    coord_sem_add(s, 20);
    coord_sem_add(s, 40);
    cr_assert_eq(coord_sem_live(s, 20), 2);
    cr_assert_eq(coord_sem_len(s), 4); /* live() does not modify */
    cr_assert_eq(coord_sem_prune(s, 20), 2);
    cr_assert_eq(coord_sem_len(s), 2);
    cr_assert_eq(coord_sem_find(s, 2, 20), 0); /* order kept by prune */
    cr_assert_eq(coord_sem_find(s, 4, 20), 1);
    cr_assert_eq(coord_sem_prune(s, 100), 0);
    cr_assert_eq(coord_sem_max_deadline(s), KS_NO_EXPIRE);
    coord_sem_free(s);
}

Test(coord_sem, dup_cap_grows_and_keeps_tokens)
{
    struct coord_sem *s = coord_sem_create(1, 7);
    struct coord_sem *t;

    coord_sem_add(s, 50);
    t = coord_sem_dup_cap(s, 0); /* never fewer than it holds */
    cr_assert_eq(coord_sem_cap(t), 1);
    coord_sem_free(t);
    t = coord_sem_dup_cap(s, 2);
    cr_assert_eq(coord_sem_cap(t), 2);
    cr_assert_eq(coord_sem_len(t), 1);
    cr_assert_eq(coord_sem_find(t, 7, 0), 0);
    cr_assert_eq(coord_sem_add(t, 60), 8); /* token sequence continues */
    {
        struct ks *ks = ks_create(1, 2);
        struct ks_entry *e = ks_set_ptr(ks, "t", 1, KS_COORD, t, coord_sem_free, KS_NO_EXPIRE);
        cr_assert_eq(obj_coord_ops.mem(e), 16 + 2 * 16);
        cr_assert_str_eq(obj_coord_ops.type_name, "coord");
        cr_assert_str_eq(obj_coord_ops.encoding(e), "semaphore");
        ks_destroy(ks); /* frees t */
    }
    coord_sem_free(s);
}
