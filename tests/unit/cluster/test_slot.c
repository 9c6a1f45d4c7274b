#include "cluster/slot.h"

#include <criterion/criterion.h>
#include <string.h>

Test(slot, crc16_check_value)
{
    cr_assert_eq(slot_crc16("123456789", 9), 0x31C3);
}

Test(slot, known_slots_and_tags)
{
    cr_assert_eq(slot_of("foo", 3), 12182);
    cr_assert_eq(slot_of("{user1}:a", 9), slot_of("{user1}:b", 9));
    cr_assert_eq(slot_of("{user1}:a", 9), slot_of("user1", 5));
    /* An empty tag hashes the whole key. */
    cr_assert_eq(slot_of("{}x", 3), slot_crc16("{}x", 3) & 16383);
    /* Only the first '{' counts. */
    cr_assert_eq(slot_of("a{b}{c}", 7), slot_of("b", 1));
    cr_assert_eq(slot_of("{unclosed", 9), slot_crc16("{unclosed", 9) & 16383);
}

Test(slot, ranges_partition_the_space)
{
    for (unsigned n = 1; n <= 64; n++) {
        unsigned next = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned lo, hi;
            slot_range(i, n, &lo, &hi);
            cr_assert_eq(lo, next);
            cr_assert_geq(hi, lo);
            next = hi + 1;
        }
        cr_assert_eq(next, SLOT_COUNT);
        for (unsigned s = 0; s < SLOT_COUNT; s += 7) {
            unsigned lo, hi, o = slot_owner(s, n);
            slot_range(o, n, &lo, &hi);
            cr_assert(s >= lo && s <= hi);
        }
    }
}
