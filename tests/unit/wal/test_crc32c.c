/* CRC-32C: the published check value, and every length and alignment the
 * unrolled hardware loop has a different path for, against a bitwise
 * reference. */
#include "wal/crc32c.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

static uint32_t
crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
    uint32_t c = ~crc;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        }
    }
    return ~c;
}

Test(crc32c, check_value)
{
    cr_assert_eq(wal_crc32c(0, "123456789", 9), 0xE3069283u);
    cr_assert_eq(wal_crc32c(0, "", 0), 0u);
}

Test(crc32c, every_length_and_alignment_matches_the_reference)
{
    static uint8_t data[600];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 131 + 7);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t n = 0; n + off <= sizeof(data); n += (n < 80 ? 1 : 13)) {
            cr_assert_eq(wal_crc32c(0, data + off, n), crc_ref(0, data + off, n), "off %zu n %zu",
                         off, n);
        }
    }
    /* chaining: crc(a || b) == crc(crc(a), b) */
    uint32_t a = wal_crc32c(0, data, 100);
    cr_assert_eq(wal_crc32c(a, data + 100, 333), crc_ref(0, data, 433));
}
