#include "base/mem.h"

#include <criterion/criterion.h>
#include <string.h>

Test(mem, big_allocations_are_zeroed_counted_and_returned)
{
    size_t before = rv_mem_allocated();
    size_t n = 8u << 20;
    unsigned char *p = rv_calloc_big(n);
    for (size_t i = 0; i < n; i += 4096) {
        cr_assert_eq(p[i], 0);
    }
    memset(p, 0xab, n);
    cr_assert_geq(rv_mem_allocated(), before + n);
    rv_free_big(p, n);
    cr_assert_lt(rv_mem_allocated(), before + n);
}

Test(mem, small_big_allocations_use_the_heap)
{
    unsigned char *p = rv_calloc_big(4096);
    for (size_t i = 0; i < 4096; i++) {
        cr_assert_eq(p[i], 0);
    }
    cr_assert_geq(rv_usable_size(p), 4096);
    rv_free_big(p, 4096);
    rv_free_big(NULL, 1u << 20);
}
