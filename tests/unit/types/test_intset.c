/* tests/unit/types/test_intset.c: sorted integer array, width upgrades. */
#include "node/types/intset.h"

#include <criterion/criterion.h>
#include <stdlib.h>

Test(intset, add_find_remove_sorted)
{
    struct intset *is = intset_create();
    cr_assert_eq(intset_len(is), 0);
    cr_assert_eq(intset_width(is), 2);
    for (int64_t v = 100; v >= -100; v -= 3) {
        cr_assert(intset_add(&is, v));
        cr_assert(!intset_add(&is, v));
    }
    cr_assert_eq(intset_len(is), 67);
    for (size_t i = 1; i < intset_len(is); i++) {
        cr_assert_lt(intset_get(is, i - 1), intset_get(is, i));
    }
    cr_assert(intset_find(is, 100));
    cr_assert(!intset_find(is, 99));
    cr_assert(!intset_find(is, INT64_MAX));
    cr_assert(intset_remove(&is, 100));
    cr_assert(!intset_remove(&is, 100));
    cr_assert(!intset_remove(&is, INT64_MIN));
    cr_assert_eq(intset_len(is), 66);
    cr_assert_eq(intset_bytes(is), 8 + 66 * 2);
    intset_destroy(is);
    intset_destroy(NULL);
}

Test(intset, width_upgrades_keep_values)
{
    struct intset *is = intset_create();
    int64_t vals[] = { 5,         -7,        32767,
                       -32768,    32768,     -32769,
                       INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1,
                       INT64_MIN, INT64_MAX, 0 };
    size_t n = sizeof(vals) / sizeof(vals[0]);
    for (size_t i = 0; i < n; i++) {
        cr_assert(intset_add(&is, vals[i]));
        for (size_t j = 0; j <= i; j++) {
            cr_assert(intset_find(is, vals[j]), "lost %lld after adding %lld", (long long)vals[j],
                      (long long)vals[i]);
        }
        if (i == 4) {
            cr_assert_eq(intset_width(is), 4);
        }
    }
    cr_assert_eq(intset_width(is), 8);
    cr_assert_eq(intset_get(is, 0), INT64_MIN);
    cr_assert_eq(intset_get(is, n - 1), INT64_MAX);
    cr_assert_eq(intset_max_strlen(is), 20);
    {
        struct intset *c = intset_dup(is);
        cr_assert_eq(intset_len(c), n);
        cr_assert(intset_find(c, -32769));
        intset_destroy(c);
    }
    intset_destroy(is);
}

Test(intset, random_against_model)
{
    struct intset *is = intset_create();
    unsigned char present[2000] = { 0 };
    srand(7);
    for (int i = 0; i < 20000; i++) {
        int v = rand() % 2000;
        int64_t x = (int64_t)(v - 1000) * 100000; /* spans the 32-bit width */
        if (rand() % 3) {
            cr_assert_eq(intset_add(&is, x), !present[v]);
            present[v] = 1;
        } else {
            cr_assert_eq(intset_remove(&is, x), present[v] != 0);
            present[v] = 0;
        }
    }
    for (int v = 0; v < 2000; v++) {
        cr_assert_eq(intset_find(is, (int64_t)(v - 1000) * 100000), present[v] != 0);
    }
    intset_destroy(is);
}
