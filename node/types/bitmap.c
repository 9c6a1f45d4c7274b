/* node/types/bitmap.c: bit-level helpers over byte arrays (see bitmap.h); the
 * commands are node/commands/t_bitmap.c. */
#include "node/types/bitmap.h"

#include <string.h>

static inline uint64_t
load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

uint64_t
bitmap_get_bits(const uint8_t *p, size_t len, uint64_t off, unsigned bits)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bits; i++) {
        uint64_t pos = off + i;
        int b = (pos >> 3) < len ? bitmap_bit_at(p, pos) : 0;
        v = (v << 1) | (uint64_t)b;
    }
    return v;
}

int64_t
bitmap_get_signed(const uint8_t *p, size_t len, uint64_t off, unsigned bits)
{
    uint64_t v = bitmap_get_bits(p, len, off, bits);

    if (bits < 64 && (v >> (bits - 1)) & 1) {
        v |= ~(uint64_t)0 << bits; /* sign-extend */
    }
    return (int64_t)v;
}

void
bitmap_set_bits(uint8_t *p, uint64_t off, unsigned bits, uint64_t v)
{
    for (unsigned i = 0; i < bits; i++) {
        uint64_t pos = off + i;
        uint8_t mask = (uint8_t)(0x80u >> (pos & 7));
        if ((v >> (bits - 1 - i)) & 1) {
            p[pos >> 3] |= mask;
        } else {
            p[pos >> 3] &= (uint8_t)~mask;
        }
    }
}

/* value + incr truncated to `bits` bits, read back as a two's complement field. */
static int64_t
wrap_signed(int64_t value, int64_t incr, unsigned bits)
{
    uint64_t s = (uint64_t)value + (uint64_t)incr;

    if (bits < 64) {
        if ((s >> (bits - 1)) & 1) {
            s |= ~(uint64_t)0 << bits;
        } else {
            s &= ((uint64_t)1 << bits) - 1;
        }
    }
    return (int64_t)s;
}

int
bitmap_ovf_signed(int64_t value, int64_t incr, unsigned bits, enum bitmap_ovf ow, int64_t *out)
{
    int64_t max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    int64_t min = -max - 1;
    /* Headroom computed modulo 2^64, as Redis does: a SET value far outside
     * the field can make it wrap, and the result must match Redis's. */
    int64_t up = (int64_t)((uint64_t)max - (uint64_t)value);
    int64_t down = (int64_t)((uint64_t)min - (uint64_t)value);

    if (value > max || (bits != 64 && incr > up) || (value >= 0 && incr > 0 && incr > up)) {
        *out = ow == BITMAP_OVF_SAT ? max : wrap_signed(value, incr, bits);
        return 1;
    }
    if (value < min || (bits != 64 && incr < down) || (value < 0 && incr < 0 && incr < down)) {
        *out = ow == BITMAP_OVF_SAT ? min : wrap_signed(value, incr, bits);
        return -1;
    }
    *out = wrap_signed(value, incr, bits);
    return 0;
}

int
bitmap_ovf_unsigned(uint64_t value, int64_t incr, unsigned bits, enum bitmap_ovf ow, uint64_t *out)
{
    uint64_t max = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    int64_t up = (int64_t)(max - value);
    int64_t down = (int64_t)(0 - value);
    uint64_t wrapped = (value + (uint64_t)incr) & max;

    if (value > max || (incr > 0 && incr > up)) {
        *out = ow == BITMAP_OVF_SAT ? max : wrapped;
        return 1;
    }
    if (incr < 0 && incr < down) {
        *out = ow == BITMAP_OVF_SAT ? 0 : wrapped;
        return -1;
    }
    *out = wrapped;
    return 0;
}

uint64_t
bitmap_count(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;

    while (n >= 32) {
        a += (uint64_t)__builtin_popcountll(load64(p));
        b += (uint64_t)__builtin_popcountll(load64(p + 8));
        c += (uint64_t)__builtin_popcountll(load64(p + 16));
        d += (uint64_t)__builtin_popcountll(load64(p + 24));
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        a += (uint64_t)__builtin_popcountll(load64(p));
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        b += (uint64_t)__builtin_popcount(*p++);
        n--;
    }
    return a + b + c + d;
}

uint64_t
bitmap_count_bits(const uint8_t *p, uint64_t sbit, uint64_t ebit)
{
    uint64_t sb = sbit >> 3, eb = ebit >> 3;
    uint64_t n = bitmap_count(p + sb, (size_t)(eb - sb + 1));
    unsigned head = (unsigned)(sbit & 7);     /* bits of the first byte before sbit */
    unsigned tail = 7 - (unsigned)(ebit & 7); /* bits of the last byte after ebit */

    if (head != 0) {
        n -= (uint64_t)__builtin_popcount(p[sb] & (0xff00u >> head) & 0xffu);
    }
    if (tail != 0) {
        n -= (uint64_t)__builtin_popcount(p[eb] & ((1u << tail) - 1));
    }
    return n;
}

int64_t
bitmap_pos_bits(const uint8_t *p, uint64_t sbit, uint64_t ebit, int bit)
{
    uint64_t i = sbit;
    uint64_t skip_word = bit ? 0 : UINT64_MAX;
    uint8_t skip_byte = bit ? 0 : 0xff;

    while (i <= ebit && (i & 7) != 0) {
        if (bitmap_bit_at(p, i) == bit) {
            return (int64_t)i;
        }
        i++;
    }
    while (i + 64 <= ebit + 1 && load64(p + (i >> 3)) == skip_word) {
        i += 64;
    }
    while (i + 8 <= ebit + 1 && p[i >> 3] == skip_byte) {
        i += 8;
    }
    for (; i <= ebit; i++) {
        if (bitmap_bit_at(p, i) == bit) {
            return (int64_t)i;
        }
    }
    return -1;
}

static void
op_words(enum bitmap_op op, uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t j = 0;

    for (; j + 8 <= n; j += 8) {
        uint64_t a = load64(dst + j), b = load64(src + j);
        a = op == BITMAP_AND ? (a & b) : op == BITMAP_OR ? (a | b) : (a ^ b);
        memcpy(dst + j, &a, sizeof(a));
    }
    for (; j < n; j++) {
        dst[j] = op == BITMAP_AND  ? (uint8_t)(dst[j] & src[j])
                 : op == BITMAP_OR ? (uint8_t)(dst[j] | src[j])
                                   : (uint8_t)(dst[j] ^ src[j]);
    }
}

void
bitmap_op_apply(enum bitmap_op op, uint8_t *dst, size_t maxlen, const struct rv_str *srcs, size_t n)
{
    size_t l0 = srcs[0].len;

    if (l0 > 0) {
        memcpy(dst, srcs[0].p, l0);
    }
    memset(dst + l0, 0, maxlen - l0);
    if (op == BITMAP_NOT) {
        size_t j = 0;
        for (; j + 8 <= maxlen; j += 8) {
            uint64_t w = ~load64(dst + j);
            memcpy(dst + j, &w, sizeof(w));
        }
        for (; j < maxlen; j++) {
            dst[j] = (uint8_t)~dst[j];
        }
        return;
    }
    for (size_t k = 1; k < n; k++) {
        size_t l = srcs[k].len;
        op_words(op, dst, (const uint8_t *)srcs[k].p, l);
        if (op == BITMAP_AND && l < maxlen) {
            memset(dst + l, 0, maxlen - l);
        }
    }
}
