/* node/types/hll.c: the HyperLogLog sketch: format, register updates and the
 * estimator (see hll.h); PFADD / PFCOUNT / PFMERGE are node/commands/t_hll.c. */
#include "node/types/hll.h"

#include "base/siphash.h"

#include <math.h>
#include <string.h>

#define HLL_VERSION 1
#define HLL_K0 0x52757669484c4c31ull /* fixed SipHash key: stable everywhere */
#define HLL_K1 0x736b657463682d6bull
#define HLL_SPARSE_MAX_WORDS ((HLL_SPARSE_MAX_BYTES - HLL_HDR) / HLL_SPARSE_WORD)

static const uint8_t hll_magic[4] = { 'R', 'V', 'H', 'L' };

/* ------------------------------------------------------------ hashing */

uint64_t
hll_hash(const void *p, size_t n)
{
    return siphash_13(HLL_K0, HLL_K1, p, n);
}

void
hll_hash_split(uint64_t h, uint32_t *idx, uint8_t *rank)
{
    uint64_t w = (h >> HLL_P) | (1ull << HLL_Q); /* sentinel bounds the rank */

    *idx = (uint32_t)(h & (HLL_REGS - 1));
    *rank = (uint8_t)(__builtin_ctzll(w) + 1);
}

/* ------------------------------------------------------------ format */

size_t
hll_init_empty(uint8_t *out)
{
    memcpy(out, hll_magic, 4);
    out[4] = HLL_VERSION;
    out[5] = HLL_SPARSE;
    out[6] = 0;
    out[7] = 0;
    return HLL_HDR;
}

static void
hll_set_header(uint8_t *out, enum hll_enc enc)
{
    hll_init_empty(out);
    out[5] = (uint8_t)enc;
}

enum hll_enc
hll_encoding(const uint8_t *p)
{
    return p[5] == HLL_DENSE ? HLL_DENSE : HLL_SPARSE;
}

static uint32_t
sparse_word(const uint8_t *w)
{
    return (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16;
}

static void
sparse_put(uint8_t *w, uint32_t idx, uint8_t v)
{
    uint32_t x = idx << 6 | v;

    w[0] = (uint8_t)x;
    w[1] = (uint8_t)(x >> 8);
    w[2] = (uint8_t)(x >> 16);
}

bool
hll_valid(const uint8_t *p, size_t n)
{
    if (n < HLL_HDR || memcmp(p, hll_magic, 4) != 0 || p[4] != HLL_VERSION || p[6] != 0 ||
        p[7] != 0) {
        return false;
    }
    if (p[5] == HLL_DENSE) {
        return n == HLL_DENSE_BYTES;
    }
    if (p[5] != HLL_SPARSE || (n - HLL_HDR) % HLL_SPARSE_WORD != 0 || n > HLL_SPARSE_MAX_BYTES) {
        return false;
    }
    int64_t prev = -1;
    for (size_t off = HLL_HDR; off < n; off += HLL_SPARSE_WORD) {
        uint32_t w = sparse_word(p + off);
        uint32_t idx = w >> 6, v = w & 63;
        if ((int64_t)idx <= prev || idx >= HLL_REGS || v == 0 || v > HLL_RANK_MAX) {
            return false;
        }
        prev = idx;
    }
    return true;
}

/* Dense register access: register i is bits 6i..6i+5 of the body. */
static uint8_t
dense_get(const uint8_t *body, uint32_t i)
{
    uint32_t bit = i * 6, b = bit >> 3, s = bit & 7;
    uint32_t x = body[b];

    if (s > 2) {
        x |= (uint32_t)body[b + 1] << 8;
    }
    return (uint8_t)((x >> s) & 63);
}

static void
dense_put(uint8_t *body, uint32_t i, uint8_t v)
{
    uint32_t bit = i * 6, b = bit >> 3, s = bit & 7;

    body[b] = (uint8_t)((body[b] & ~(63u << s)) | ((uint32_t)v << s));
    if (s > 2) {
        body[b + 1] = (uint8_t)((body[b + 1] & ~(63u >> (8 - s))) | ((uint32_t)v >> (8 - s)));
    }
}

/* Binary search of a sparse body of nw words for idx: true when found, *pos is
 * the word index where it is or would be inserted. */
static bool
sparse_find(const uint8_t *body, size_t nw, uint32_t idx, size_t *pos)
{
    size_t lo = 0, hi = nw;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t mi = sparse_word(body + mid * HLL_SPARSE_WORD) >> 6;
        if (mi == idx) {
            *pos = mid;
            return true;
        }
        if (mi < idx) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *pos = lo;
    return false;
}

/* Rewrite a sparse sketch as dense through rs. */
static void
sparse_to_dense(uint8_t **pp, size_t *lenp, hll_resize_fn *rs, void *arg)
{
    uint8_t regs[HLL_REGS];
    uint8_t *p;

    memset(regs, 0, sizeof(regs));
    hll_regs_merge(*pp, *lenp, regs); /* a valid sparse sketch cannot fail */
    p = rs(arg, HLL_DENSE_BYTES);
    hll_set_header(p, HLL_DENSE);
    memset(p + HLL_HDR, 0, HLL_DENSE_BYTES - HLL_HDR);
    for (uint32_t i = 0; i < HLL_REGS; i++) {
        if (regs[i] != 0) {
            dense_put(p + HLL_HDR, i, regs[i]);
        }
    }
    *pp = p;
    *lenp = HLL_DENSE_BYTES;
}

bool
hll_set(uint8_t **pp, size_t *lenp, uint32_t idx, uint8_t rank, hll_resize_fn *rs, void *arg)
{
    uint8_t *p = *pp;
    size_t n = *lenp, nw, pos;

    if (hll_encoding(p) == HLL_DENSE) {
        if (dense_get(p + HLL_HDR, idx) >= rank) {
            return false;
        }
        dense_put(p + HLL_HDR, idx, rank);
        return true;
    }
    nw = (n - HLL_HDR) / HLL_SPARSE_WORD;
    if (sparse_find(p + HLL_HDR, nw, idx, &pos)) {
        uint8_t *w = p + HLL_HDR + pos * HLL_SPARSE_WORD;
        if ((sparse_word(w) & 63) >= rank) {
            return false;
        }
        sparse_put(w, idx, rank);
        return true;
    }
    if (nw + 1 > HLL_SPARSE_MAX_WORDS) {
        sparse_to_dense(pp, lenp, rs, arg);
        return hll_set(pp, lenp, idx, rank, rs, arg);
    }
    p = rs(arg, n + HLL_SPARSE_WORD);
    uint8_t *w = p + HLL_HDR + pos * HLL_SPARSE_WORD;
    memmove(w + HLL_SPARSE_WORD, w, (nw - pos) * HLL_SPARSE_WORD);
    sparse_put(w, idx, rank);
    *pp = p;
    *lenp = n + HLL_SPARSE_WORD;
    return true;
}

bool
hll_regs_merge(const uint8_t *p, size_t n, uint8_t *regs)
{
    if (hll_encoding(p) == HLL_DENSE) {
        for (uint32_t i = 0; i < HLL_REGS; i++) {
            uint8_t v = dense_get(p + HLL_HDR, i);
            if (v > HLL_RANK_MAX) {
                return false;
            }
            if (v > regs[i]) {
                regs[i] = v;
            }
        }
        return true;
    }
    for (size_t off = HLL_HDR; off < n; off += HLL_SPARSE_WORD) {
        uint32_t w = sparse_word(p + off);
        uint32_t idx = w >> 6;
        uint8_t v = (uint8_t)(w & 63);
        if (v > regs[idx]) {
            regs[idx] = v;
        }
    }
    return true;
}

size_t
hll_from_regs(const uint8_t *regs, uint8_t *out)
{
    size_t nz = 0;

    for (uint32_t i = 0; i < HLL_REGS; i++) {
        nz += regs[i] != 0;
    }
    if (nz <= HLL_SPARSE_MAX_WORDS) {
        size_t off = HLL_HDR;
        hll_set_header(out, HLL_SPARSE);
        for (uint32_t i = 0; i < HLL_REGS; i++) {
            if (regs[i] != 0) {
                sparse_put(out + off, i, regs[i] > HLL_RANK_MAX ? HLL_RANK_MAX : regs[i]);
                off += HLL_SPARSE_WORD;
            }
        }
        return off;
    }
    hll_set_header(out, HLL_DENSE);
    memset(out + HLL_HDR, 0, HLL_DENSE_BYTES - HLL_HDR);
    for (uint32_t i = 0; i < HLL_REGS; i++) {
        if (regs[i] != 0) {
            dense_put(out + HLL_HDR, i, regs[i] > HLL_RANK_MAX ? HLL_RANK_MAX : regs[i]);
        }
    }
    return HLL_DENSE_BYTES;
}

/* ------------------------------------------------------------ estimator */

/* Ertl 2017, algorithm 6: sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1). */
static double
ertl_sigma(double x)
{
    double y = 1.0, z = x, zp;

    if (x == 1.0) {
        return INFINITY;
    }
    do {
        x *= x;
        zp = z;
        z += x * y;
        y += y;
    } while (z != zp);
    return z;
}

/* tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3. */
static double
ertl_tau(double x)
{
    double y = 1.0, z, zp;

    if (x == 0.0 || x == 1.0) {
        return 0.0;
    }
    z = 1.0 - x;
    do {
        x = sqrt(x);
        zp = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
    } while (z != zp);
    return z / 3.0;
}

/* The improved raw estimator from the register histogram c[0..HLL_Q+1]. */
static uint64_t
hll_estimate(const uint32_t *c)
{
    const double m = HLL_REGS;
    double z;

    if (c[0] == HLL_REGS) {
        return 0;
    }
    z = m * ertl_tau((m - c[HLL_Q + 1]) / m);
    for (int k = HLL_Q; k >= 1; k--) {
        z = 0.5 * (z + c[k]);
    }
    z += m * ertl_sigma(c[0] / m);
    return (uint64_t)llround(m * m / (2.0 * log(2.0)) / z);
}

uint64_t
hll_count_regs(const uint8_t *regs)
{
    uint32_t c[HLL_RANK_MAX + 1];

    memset(c, 0, sizeof(c));
    for (uint32_t i = 0; i < HLL_REGS; i++) {
        c[regs[i] > HLL_RANK_MAX ? HLL_RANK_MAX : regs[i]]++;
    }
    return hll_estimate(c);
}

bool
hll_count(const uint8_t *p, size_t n, uint64_t *out)
{
    uint32_t c[HLL_RANK_MAX + 1];

    memset(c, 0, sizeof(c));
    if (hll_encoding(p) == HLL_DENSE) {
        for (uint32_t i = 0; i < HLL_REGS; i++) {
            uint8_t v = dense_get(p + HLL_HDR, i);
            if (v > HLL_RANK_MAX) {
                return false;
            }
            c[v]++;
        }
    } else {
        size_t nw = (n - HLL_HDR) / HLL_SPARSE_WORD;
        c[0] = (uint32_t)(HLL_REGS - nw);
        for (size_t off = HLL_HDR; off < n; off += HLL_SPARSE_WORD) {
            c[sparse_word(p + off) & 63]++;
        }
    }
    *out = hll_estimate(c);
    return true;
}
