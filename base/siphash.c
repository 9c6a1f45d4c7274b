/* base/siphash.c: SipHash-c-d with the round counts as compile-time
 * parameters of one inline body, so both variants share the same code. */
#include "base/siphash.h"

#include <string.h>

#define SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static inline uint64_t
sip_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* clang-format off */
#define SIP_ROUND()                                                                        \
    do {                                                                                   \
        v0 += v1; v1 = SIP_ROTL(v1, 13); v1 ^= v0; v0 = SIP_ROTL(v0, 32);                  \
        v2 += v3; v3 = SIP_ROTL(v3, 16); v3 ^= v2;                                         \
        v0 += v3; v3 = SIP_ROTL(v3, 21); v3 ^= v0;                                         \
        v2 += v1; v1 = SIP_ROTL(v1, 17); v1 ^= v2; v2 = SIP_ROTL(v2, 32);                  \
    } while (0)
/* clang-format on */

static inline __attribute__((always_inline)) uint64_t
sip_hash(int crounds, int drounds, uint64_t k0, uint64_t k1, const uint8_t *p, size_t n)
{
    uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575);
    uint64_t v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261);
    uint64_t v3 = k1 ^ UINT64_C(0x7465646279746573);
    const uint8_t *end = p + (n & ~(size_t)7);
    uint64_t m;
    int i;

    for (; p != end; p += 8) {
        m = sip_load64(p);
        v3 ^= m;
        for (i = 0; i < crounds; i++) {
            SIP_ROUND();
        }
        v0 ^= m;
    }
    /* Last block: the remaining 0-7 bytes, then the length in the top byte. */
    m = (uint64_t)n << 56;
    switch (n & 7) {
    case 7: m |= (uint64_t)p[6] << 48; /* fall through */
    case 6: m |= (uint64_t)p[5] << 40; /* fall through */
    case 5: m |= (uint64_t)p[4] << 32; /* fall through */
    case 4: m |= (uint64_t)p[3] << 24; /* fall through */
    case 3: m |= (uint64_t)p[2] << 16; /* fall through */
    case 2: m |= (uint64_t)p[1] << 8;  /* fall through */
    case 1: m |= (uint64_t)p[0]; break;
    default: break;
    }
    v3 ^= m;
    for (i = 0; i < crounds; i++) {
        SIP_ROUND();
    }
    v0 ^= m;
    v2 ^= 0xff;
    for (i = 0; i < drounds; i++) {
        SIP_ROUND();
    }
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t
siphash_13(uint64_t k0, uint64_t k1, const void *p, size_t n)
{
    return sip_hash(1, 3, k0, k1, p, n);
}

uint64_t
siphash_24(uint64_t k0, uint64_t k1, const void *p, size_t n)
{
    return sip_hash(2, 4, k0, k1, p, n);
}
