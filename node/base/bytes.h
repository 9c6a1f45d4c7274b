/* node/base/bytes.h: unaligned loads and a compare for short byte strings. */
#ifndef RV_BASE_BYTES_H
#define RV_BASE_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t
rv_ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t
rv_ld32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t
rv_ld64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* a[0..n) == b[0..n)? Keys and command names are mostly 2-16 bytes: two
 * overlapping loads per side compare those without a memcmp call, and read
 * nothing outside either string. */
static inline bool
rv_short_eq(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    if (n >= 8 && n <= 16) {
        return rv_ld64(x) == rv_ld64(y) && rv_ld64(x + n - 8) == rv_ld64(y + n - 8);
    }
    if (n >= 4 && n < 8) {
        return rv_ld32(x) == rv_ld32(y) && rv_ld32(x + n - 4) == rv_ld32(y + n - 4);
    }
    if (n >= 2 && n < 4) {
        return rv_ld16(x) == rv_ld16(y) && x[n - 1] == y[n - 1];
    }
    return memcmp(x, y, n) == 0;
}

#endif
