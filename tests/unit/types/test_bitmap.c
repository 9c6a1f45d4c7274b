/* tests/unit/types/test_bitmap.c: the bit helpers (node/types/bitmap.c). */
#include "node/types/bitmap.h"

#include <criterion/criterion.h>
#include <string.h>

static uint64_t
naive_count(const uint8_t *p, uint64_t sbit, uint64_t ebit)
{
    uint64_t n = 0;
    for (uint64_t i = sbit; i <= ebit; i++) {
        n += (p[i >> 3] >> (7 - (i & 7))) & 1;
    }
    return n;
}

static int64_t
naive_pos(const uint8_t *p, uint64_t sbit, uint64_t ebit, int bit)
{
    for (uint64_t i = sbit; i <= ebit; i++) {
        if ((int)((p[i >> 3] >> (7 - (i & 7))) & 1) == bit) {
            return (int64_t)i;
        }
    }
    return -1;
}

Test(bitmap_field, set_get_every_width_and_offset)
{
    uint8_t buf[24];

    for (unsigned bits = 1; bits <= 64; bits++) {
        uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        for (uint64_t off = 0; off < 40; off += 3) {
            uint64_t v = 0xa5c3f00ff00f5a3cull & mask;
            memset(buf, 0x55, sizeof(buf));
            bitmap_set_bits(buf, off, bits, v);
            cr_assert_eq(bitmap_get_bits(buf, sizeof(buf), off, bits), v, "bits %u off %lu", bits,
                         (unsigned long)off);
            /* neighbouring bits untouched */
            if (off > 0) {
                cr_assert_eq(bitmap_get_bits(buf, sizeof(buf), off - 1, 1),
                             (off - 1) & 1 ? 1u : 0u);
            }
            cr_assert_eq(bitmap_get_bits(buf, sizeof(buf), off + bits, 1),
                         (off + bits) & 1 ? 1u : 0u);
            /* the top bit set reads negative when signed */
            bitmap_set_bits(buf, off, bits, mask);
            cr_assert_eq(bitmap_get_signed(buf, sizeof(buf), off, bits), -1);
            bitmap_set_bits(buf, off, bits, mask >> 1);
            cr_assert_eq(bitmap_get_signed(buf, sizeof(buf), off, bits),
                         bits == 1 ? 0 : (int64_t)(mask >> 1));
        }
    }
}

Test(bitmap_field, reads_past_end_are_zero)
{
    uint8_t buf[2] = { 0xff, 0xff };

    cr_assert_eq(bitmap_get_bits(buf, 2, 12, 8), 0xf0);
    cr_assert_eq(bitmap_get_bits(buf, 2, 16, 64), 0);
    cr_assert_eq(bitmap_get_bits(buf, 0, 0, 8), 0);
    cr_assert_eq(bitmap_get_signed(buf, 2, 8, 16), (int64_t)0xffffffffffffff00ull);
}

Test(bitmap_ovf, signed_every_width)
{
    for (unsigned bits = 1; bits <= 64; bits++) {
        int64_t max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        int64_t min = -max - 1, out;

        cr_assert_eq(bitmap_ovf_signed(max, 0, bits, BITMAP_OVF_WRAP, &out), 0);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_signed(max, 1, bits, BITMAP_OVF_WRAP, &out), 1);
        cr_assert_eq(out, min, "wrap up, bits %u", bits);
        cr_assert_eq(bitmap_ovf_signed(max, 1, bits, BITMAP_OVF_SAT, &out), 1);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_signed(min, -1, bits, BITMAP_OVF_WRAP, &out), -1);
        cr_assert_eq(out, max, "wrap down, bits %u", bits);
        cr_assert_eq(bitmap_ovf_signed(min, -1, bits, BITMAP_OVF_SAT, &out), -1);
        cr_assert_eq(out, min);
        cr_assert_eq(bitmap_ovf_signed(min, 0, bits, BITMAP_OVF_FAIL, &out), 0);
        cr_assert_eq(bitmap_ovf_signed(0, INT64_MAX, bits, BITMAP_OVF_SAT, &out),
                     bits == 64 ? 0 : 1);
        cr_assert_eq(out, bits == 64 ? INT64_MAX : max);
        cr_assert_eq(bitmap_ovf_signed(-1, INT64_MIN, bits, BITMAP_OVF_SAT, &out), -1);
        cr_assert_eq(out, min);
    }
}

Test(bitmap_ovf, signed_set_far_outside_matches_redis)
{
    int64_t out;

    /* Redis's headroom arithmetic wraps: SET i8 with INT64_MIN saturates up. */
    cr_assert_eq(bitmap_ovf_signed(INT64_MIN, 0, 8, BITMAP_OVF_SAT, &out), 1);
    cr_assert_eq(out, 127);
    cr_assert_eq(bitmap_ovf_signed(INT64_MIN, 0, 8, BITMAP_OVF_WRAP, &out), 1);
    cr_assert_eq(out, 0);
    cr_assert_eq(bitmap_ovf_signed(300, 0, 8, BITMAP_OVF_WRAP, &out), 1);
    cr_assert_eq(out, 44);
    cr_assert_eq(bitmap_ovf_signed(-200, 0, 8, BITMAP_OVF_SAT, &out), -1);
    cr_assert_eq(out, -128);
}

Test(bitmap_ovf, unsigned_every_width)
{
    for (unsigned bits = 1; bits <= 63; bits++) {
        uint64_t max = ((uint64_t)1 << bits) - 1, out;

        cr_assert_eq(bitmap_ovf_unsigned(max, 0, bits, BITMAP_OVF_WRAP, &out), 0);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_unsigned(max, 1, bits, BITMAP_OVF_WRAP, &out), 1);
        cr_assert_eq(out, 0);
        cr_assert_eq(bitmap_ovf_unsigned(max, 1, bits, BITMAP_OVF_SAT, &out), 1);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_unsigned(0, -1, bits, BITMAP_OVF_WRAP, &out), -1);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_unsigned(0, -1, bits, BITMAP_OVF_SAT, &out), -1);
        cr_assert_eq(out, 0);
        cr_assert_eq(bitmap_ovf_unsigned(1, -1, bits, BITMAP_OVF_FAIL, &out), 0);
        cr_assert_eq(out, 0);
        /* SET of a negative value: a huge unsigned value, so it overflows up */
        cr_assert_eq(bitmap_ovf_unsigned((uint64_t)-1, 0, bits, BITMAP_OVF_SAT, &out), 1);
        cr_assert_eq(out, max);
        cr_assert_eq(bitmap_ovf_unsigned((uint64_t)-1, 0, bits, BITMAP_OVF_WRAP, &out), 1);
        cr_assert_eq(out, max);
    }
}

Test(bitmap_count, matches_naive_on_all_ranges)
{
    uint8_t buf[77];
    uint32_t x = 12345;

    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    cr_assert_eq(bitmap_count(buf, sizeof(buf)), naive_count(buf, 0, sizeof(buf) * 8 - 1));
    cr_assert_eq(bitmap_count(buf, 0), 0);
    for (uint64_t s = 0; s < sizeof(buf) * 8; s += 5) {
        for (uint64_t e = s; e < sizeof(buf) * 8; e += 7) {
            cr_assert_eq(bitmap_count_bits(buf, s, e), naive_count(buf, s, e), "%lu..%lu",
                         (unsigned long)s, (unsigned long)e);
        }
    }
}

Test(bitmap_pos, matches_naive_including_long_runs)
{
    uint8_t buf[100];

    for (int bit = 0; bit <= 1; bit++) {
        memset(buf, bit ? 0x00 : 0xff, sizeof(buf));
        cr_assert_eq(bitmap_pos_bits(buf, 0, sizeof(buf) * 8 - 1, bit), -1);
        for (uint64_t target = 0; target < sizeof(buf) * 8; target += 13) {
            memset(buf, bit ? 0x00 : 0xff, sizeof(buf));
            buf[target >> 3] ^= (uint8_t)(0x80 >> (target & 7));
            for (uint64_t s = 0; s < sizeof(buf) * 8; s += 11) {
                uint64_t e = sizeof(buf) * 8 - 1 - (s % 17);
                if (e < s) {
                    continue;
                }
                cr_assert_eq(bitmap_pos_bits(buf, s, e, bit), naive_pos(buf, s, e, bit),
                             "bit %d target %lu range %lu..%lu", bit, (unsigned long)target,
                             (unsigned long)s, (unsigned long)e);
            }
        }
    }
}

Test(bitmap_op, and_or_xor_not_with_padding)
{
    uint8_t out[20];
    struct rv_str s[3] = { { "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 10 },
                           { "\x0f\xf0", 2 },
                           { "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 12 } };

    bitmap_op_apply(BITMAP_AND, out, 12, s, 2);
    cr_assert(memcmp(out, "\x0f\xf0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 12) == 0);
    bitmap_op_apply(BITMAP_OR, out, 12, s, 3);
    cr_assert(memcmp(out, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x01", 12) == 0);
    bitmap_op_apply(BITMAP_XOR, out, 10, s, 2);
    cr_assert(memcmp(out, "\xf0\x0f\xff\xff\xff\xff\xff\xff\xff\xff", 10) == 0);
    bitmap_op_apply(BITMAP_NOT, out, 12, &s[2], 1);
    cr_assert(memcmp(out, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe", 12) == 0);
}
