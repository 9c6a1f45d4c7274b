/* cluster/slot.c: CRC16-CCITT (XMODEM: poly 0x1021, init 0), table driven. The
 * table is computed at compile time by the generator below (no runtime init). */
#include "cluster/slot.h"

#include <string.h>

#define P 0x1021u
/* clang-format off */
#define B1(c) ((((c) & 0x8000u) ? (((c) << 1) ^ P) : ((c) << 1)) & 0xffffu)
/* clang-format on */
#define B8(c) B1(B1(B1(B1(B1(B1(B1(B1(c))))))))
#define T(i) B8((unsigned)(i) << 8)
#define T4(i) T(i), T(i + 1), T(i + 2), T(i + 3)
#define T16(i) T4(i), T4(i + 4), T4(i + 8), T4(i + 12)
#define T64(i) T16(i), T16(i + 16), T16(i + 32), T16(i + 48)

static const uint16_t crc16_tab[256] = { T64(0), T64(64), T64(128), T64(192) };

uint16_t
slot_crc16(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc = (uint16_t)((crc << 8) ^ crc16_tab[((crc >> 8) ^ s[i]) & 0xff]);
    }
    return crc;
}

unsigned
slot_of(const char *key, size_t n)
{
    const char *open = memchr(key, '{', n);
    if (open) {
        size_t rest = n - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) {
            return slot_crc16(open + 1, (size_t)(close - open - 1)) & (SLOT_COUNT - 1);
        }
    }
    return slot_crc16(key, n) & (SLOT_COUNT - 1);
}

void
slot_range(unsigned i, unsigned n, unsigned *lo, unsigned *hi)
{
    *lo = (unsigned)((uint64_t)i * SLOT_COUNT / n);
    *hi = (unsigned)((uint64_t)(i + 1) * SLOT_COUNT / n) - 1;
}

unsigned
slot_owner(unsigned slot, unsigned n)
{
    /* Inverse of slot_range: the largest i with i*16384/n <= slot. */
    unsigned i = (unsigned)(((uint64_t)slot * n + n - 1) / SLOT_COUNT);
    unsigned lo, hi;
    while (i > 0) {
        slot_range(i, n, &lo, &hi);
        if (lo <= slot) {
            break;
        }
        i--;
    }
    slot_range(i, n, &lo, &hi);
    while (slot > hi) {
        i++;
        slot_range(i, n, &lo, &hi);
    }
    return i;
}
