/* base/bytes.h: unaligned loads and a compare for short byte strings. */
#ifndef RV_BASE_BYTES_H
#define RV_BASE_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* memcpy(dst, src, n) with non-temporal stores for copies that are written
 * now and read much later, if ever (a replica's backlog: it is read only for
 * a partial resync or a chained replica). They skip the read-for-ownership of
 * cold destination lines and leave the caches to the data in use, which on a
 * shared core is the client's. Small copies go through memcpy. */
static inline void
rv_copy_stream(void *dst, const void *src, size_t n)
{
#ifdef __SSE2__
    if (n >= 1024) {
        uint8_t *d = dst;
        const uint8_t *s = src;
        size_t head = (size_t)(-(uintptr_t)d & 63); /* whole lines: full write-combining */
        memcpy(d, s, head);
        d += head, s += head, n -= head;
        for (; n >= 64; d += 64, s += 64, n -= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, s, n);
        _mm_sfence(); /* ordered before whatever is stored next */
        return;
    }
#endif
    memcpy(dst, src, n);
}

#endif
