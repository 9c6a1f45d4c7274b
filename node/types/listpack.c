/* node/types/listpack.c: packed element arrays (see listpack.h for the layout). */
#include "node/types/listpack.h"
#include "base/strnum.h"

#include "base/mem.h"

#include <string.h>

/* First-byte encodings. */
#define ENC_UINT7_MAX 0x7Fu /* 0xxxxxxx: integer 0..127 */
#define ENC_STR6 0x80u      /* 10llllll: string of 0..63 bytes */
#define ENC_INT13 0xC0u     /* 110xxxxx xxxxxxxx: integer -4096..4095 */
#define ENC_STR12 0xE0u     /* 1110llll llllllll: string of up to 4095 bytes */
#define ENC_STR32 0xF0u     /* 11110000 + 4-byte length: longer strings */
/* 0xF2..0xF8: integer in the low nibble's number of bytes (little endian). */

static inline uint32_t
ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void
st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

size_t
lp_bytes(const uint8_t *lp)
{
    return ld32(lp);
}

size_t
lp_count(const uint8_t *lp)
{
    return ld32(lp + 4);
}

static inline void
set_bytes(uint8_t *lp, size_t n)
{
    st32(lp, (uint32_t)n);
}

static inline void
set_count(uint8_t *lp, size_t n)
{
    st32(lp + 4, (uint32_t)n);
}

/* Size of a backlen field holding len. */
static inline size_t
bl_size(size_t len)
{
    return len < 128 ? 1 : len < 16384 ? 2 : len < (1u << 21) ? 3 : len < (1u << 28) ? 4 : 5;
}

/* Most significant 7-bit group first; every byte but the first carries 0x80,
 * so a reader starting at the last byte knows whether to continue left. */
static inline void
bl_write(uint8_t *q, size_t len)
{
    size_t k = bl_size(len);
    for (size_t i = 0; i < k; i++) {
        q[i] = (uint8_t)(((len >> (7 * (k - 1 - i))) & 0x7F) | (i > 0 ? 0x80 : 0));
    }
}

/* Reads the backlen whose last byte is q[-1]. */
static inline size_t
bl_read(const uint8_t *q)
{
    size_t v = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t b = *--q;
        v |= (size_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            return v;
        }
        shift += 7;
    }
}

/* Bytes of the encoding and data of the element at p (backlen excluded). */
static inline size_t
elem_len(const uint8_t *p)
{
    uint8_t b = p[0];
    if (b <= ENC_UINT7_MAX) {
        return 1;
    }
    if (b < ENC_INT13) {
        return 1 + (b & 0x3Fu);
    }
    if (b < ENC_STR12) {
        return 2;
    }
    if (b < ENC_STR32) {
        return 2 + (((size_t)(b & 0x0F) << 8) | p[1]);
    }
    if (b == ENC_STR32) {
        return 5 + (size_t)ld32(p + 1);
    }
    return 1 + (size_t)(b & 0x0F);
}

static inline size_t
elem_total(const uint8_t *p)
{
    size_t l = elem_len(p);
    return l + bl_size(l);
}

/* ------------------------------------------------------------------ values */

bool
lp_str_is_int(const char *s, size_t n, int64_t *out)
{
    return str_to_i64(s, n, out);
}

/* Encoding header for s[0,n) into h (at most 9 bytes); *datalen is how many
 * bytes of s follow it (0 for integers, whose bytes are all in h). */
static size_t
encode(const char *s, size_t n, uint8_t h[9], size_t *datalen)
{
    int64_t v;

    if (lp_str_is_int(s, n, &v)) {
        *datalen = 0;
        if (v >= 0 && v <= (int64_t)ENC_UINT7_MAX) {
            h[0] = (uint8_t)v;
            return 1;
        }
        if (v >= -4096 && v <= 4095) {
            uint16_t u = (uint16_t)((uint64_t)v & 0x1FFF);
            h[0] = (uint8_t)(ENC_INT13 | (u >> 8));
            h[1] = (uint8_t)u;
            return 2;
        }
        unsigned k = 2;
        while (k < 8) {
            int64_t lim = (int64_t)1 << (8 * k - 1);
            if (v >= -lim && v < lim) {
                break;
            }
            k++;
        }
        h[0] = (uint8_t)(ENC_STR32 | k);
        for (unsigned i = 0; i < k; i++) {
            h[1 + i] = (uint8_t)((uint64_t)v >> (8 * i));
        }
        return 1 + k;
    }
    *datalen = n;
    if (n <= 63) {
        h[0] = (uint8_t)(ENC_STR6 | n);
        return 1;
    }
    if (n <= 4095) {
        h[0] = (uint8_t)(ENC_STR12 | (n >> 8));
        h[1] = (uint8_t)n;
        return 2;
    }
    h[0] = ENC_STR32;
    st32(h + 1, (uint32_t)n);
    return 5;
}

size_t
lp_entry_cost(const char *s, size_t n)
{
    uint8_t h[9];
    size_t dl;
    size_t l = encode(s, n, h, &dl) + dl;
    return l + bl_size(l);
}

void
lp_get(const uint8_t *p, struct lp_val *out)
{
    uint8_t b = p[0];

    if (b <= ENC_UINT7_MAX) {
        out->p = NULL;
        out->v = b;
    } else if (b < ENC_INT13) {
        out->p = (const char *)p + 1;
        out->len = b & 0x3Fu;
    } else if (b < ENC_STR12) {
        uint16_t u = (uint16_t)(((b & 0x1Fu) << 8) | p[1]);
        out->p = NULL;
        out->v = (u & 0x1000) ? (int64_t)u - 0x2000 : (int64_t)u;
    } else if (b < ENC_STR32) {
        out->p = (const char *)p + 2;
        out->len = ((size_t)(b & 0x0F) << 8) | p[1];
    } else if (b == ENC_STR32) {
        out->p = (const char *)p + 5;
        out->len = ld32(p + 1);
    } else {
        unsigned k = b & 0x0Fu;
        uint64_t u = 0;
        for (unsigned i = 0; i < k; i++) {
            u |= (uint64_t)p[1 + i] << (8 * i);
        }
        if (k < 8 && (u >> (8 * k - 1)) & 1) {
            u |= ~(uint64_t)0 << (8 * k); /* sign-extend */
        }
        out->p = NULL;
        out->v = (int64_t)u;
    }
}

const char *
lp_val_bytes(const struct lp_val *v, char buf[24], size_t *len)
{
    if (v->p != NULL) {
        *len = v->len;
        return v->p;
    }
    char *e = buf + 24;
    char *q = e;
    uint64_t u = v->v < 0 ? 0 - (uint64_t)v->v : (uint64_t)v->v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v->v < 0) {
        *--q = '-';
    }
    *len = (size_t)(e - q);
    return q;
}

void
lp_key_init(struct lp_key *k, const char *p, size_t len)
{
    k->p = p;
    k->len = len;
    k->v = 0;
    k->is_int = lp_str_is_int(p, len, &k->v);
}

bool
lp_match(const uint8_t *p, const struct lp_key *k)
{
    struct lp_val v;
    lp_get(p, &v);
    if (v.p == NULL) {
        return k->is_int && v.v == k->v;
    }
    return !k->is_int && v.len == k->len && memcmp(v.p, k->p, v.len) == 0;
}

/* ---------------------------------------------------------------- walking */

uint8_t *
lp_first(const uint8_t *lp)
{
    return lp_count(lp) ? (uint8_t *)lp + LP_HDR : NULL;
}

uint8_t *
lp_next(const uint8_t *lp, const uint8_t *p)
{
    const uint8_t *n = p + elem_total(p);
    return n < lp + lp_bytes(lp) ? (uint8_t *)n : NULL;
}

/* The element ending just before q (q may be the end of the array). */
static inline uint8_t *
prev_of(const uint8_t *q)
{
    size_t l = bl_read(q);
    return (uint8_t *)q - bl_size(l) - l;
}

uint8_t *
lp_prev(const uint8_t *lp, const uint8_t *p)
{
    return p > lp + LP_HDR ? prev_of(p) : NULL;
}

uint8_t *
lp_last(const uint8_t *lp)
{
    return lp_count(lp) ? prev_of(lp + lp_bytes(lp)) : NULL;
}

uint8_t *
lp_seek(const uint8_t *lp, int64_t index)
{
    int64_t n = (int64_t)lp_count(lp);
    uint8_t *p;

    if (index < 0) {
        index += n;
    }
    if (index < 0 || index >= n) {
        return NULL;
    }
    if (index <= n / 2) {
        p = lp_first(lp);
        while (index-- > 0) {
            p += elem_total(p);
        }
    } else {
        p = lp_last(lp);
        for (int64_t i = n - 1; i > index; i--) {
            p = prev_of(p);
        }
    }
    return p;
}

/* ---------------------------------------------------------------- changes */

uint8_t *
lp_create(void)
{
    uint8_t *lp = rv_malloc(LP_HDR);
    set_bytes(lp, LP_HDR);
    set_count(lp, 0);
    return lp;
}

void
lp_destroy(uint8_t *lp)
{
    rv_free(lp);
}

uint8_t *
lp_dup(const uint8_t *lp)
{
    size_t n = lp_bytes(lp);
    uint8_t *d = rv_malloc(n);
    memcpy(d, lp, n);
    return d;
}

/* Make room for (or remove) bytes at off: the tail [off + old, end) moves to
 * off + new. Returns the (possibly moved) array. */
static uint8_t *
resize_at(uint8_t *lp, size_t off, size_t oldlen, size_t newlen)
{
    size_t bytes = lp_bytes(lp);
    size_t tail = bytes - off - oldlen;
    size_t nb = bytes - oldlen + newlen;

    if (newlen > oldlen) {
        lp = rv_realloc(lp, nb);
        memmove(lp + off + newlen, lp + off + oldlen, tail);
    } else if (newlen < oldlen) {
        memmove(lp + off + newlen, lp + off + oldlen, tail);
        lp = rv_realloc(lp, nb);
    }
    set_bytes(lp, nb);
    return lp;
}

static inline void
write_elem(uint8_t *q, const uint8_t *h, size_t hl, const char *s, size_t dl)
{
    memcpy(q, h, hl);
    if (dl) {
        memcpy(q + hl, s, dl);
    }
    bl_write(q + hl + dl, hl + dl);
}

uint8_t *
lp_insert(uint8_t **lpp, uint8_t *p, const char *s, size_t n)
{
    uint8_t h[9];
    size_t dl;
    size_t hl = encode(s, n, h, &dl);
    size_t total = hl + dl + bl_size(hl + dl);
    uint8_t *lp = *lpp;
    size_t off = p ? (size_t)(p - lp) : lp_bytes(lp);

    lp = resize_at(lp, off, 0, total);
    write_elem(lp + off, h, hl, s, dl);
    set_count(lp, lp_count(lp) + 1);
    *lpp = lp;
    return lp + off;
}

uint8_t *
lp_append(uint8_t **lpp, const char *s, size_t n)
{
    return lp_insert(lpp, NULL, s, n);
}

uint8_t *
lp_prepend(uint8_t **lpp, const char *s, size_t n)
{
    return lp_insert(lpp, *lpp + LP_HDR, s, n);
}

uint8_t *
lp_replace(uint8_t **lpp, uint8_t *p, const char *s, size_t n)
{
    uint8_t h[9];
    size_t dl;
    size_t hl = encode(s, n, h, &dl);
    size_t total = hl + dl + bl_size(hl + dl);
    uint8_t *lp = *lpp;
    size_t off = (size_t)(p - lp);

    lp = resize_at(lp, off, elem_total(p), total);
    write_elem(lp + off, h, hl, s, dl);
    *lpp = lp;
    return lp + off;
}

uint8_t *
lp_delete_range(uint8_t **lpp, uint8_t *p, size_t n)
{
    uint8_t *lp = *lpp;
    uint8_t *end = lp + lp_bytes(lp);
    uint8_t *q = p;
    size_t k = 0;
    size_t off = (size_t)(p - lp);

    while (k < n && q < end) {
        q += elem_total(q);
        k++;
    }
    if (k == 0) {
        return NULL;
    }
    lp = resize_at(lp, off, (size_t)(q - p), 0);
    set_count(lp, lp_count(lp) - k);
    *lpp = lp;
    return off < lp_bytes(lp) ? lp + off : NULL;
}

uint8_t *
lp_delete(uint8_t **lpp, uint8_t *p)
{
    return lp_delete_range(lpp, p, 1);
}

uint8_t *
lp_split(uint8_t **lpp, uint8_t *p)
{
    uint8_t *lp = *lpp;
    size_t off = (size_t)(p - lp);
    size_t moved = lp_bytes(lp) - off;
    size_t k = 0;
    uint8_t *nlp = rv_malloc(LP_HDR + moved);

    for (const uint8_t *q = p; q < lp + off + moved; q += elem_total(q)) {
        k++;
    }
    memcpy(nlp + LP_HDR, p, moved);
    set_bytes(nlp, LP_HDR + moved);
    set_count(nlp, k);
    set_count(lp, lp_count(lp) - k);
    set_bytes(lp, off);
    *lpp = rv_realloc(lp, off);
    return nlp;
}

void
lp_concat(uint8_t **lpp, const uint8_t *src)
{
    size_t add = lp_bytes(src) - LP_HDR;
    uint8_t *lp = *lpp;
    size_t off = lp_bytes(lp);

    lp = rv_realloc(lp, off + add);
    memcpy(lp + off, src + LP_HDR, add);
    set_bytes(lp, off + add);
    set_count(lp, lp_count(lp) + lp_count(src));
    *lpp = lp;
}

bool
lp_valid(const uint8_t *lp)
{
    size_t bytes = lp_bytes(lp);
    const uint8_t *p = lp + LP_HDR;
    const uint8_t *end = lp + bytes;
    size_t k = 0;

    if (bytes < LP_HDR) {
        return false;
    }
    while (p < end) {
        size_t l = elem_len(p);
        size_t t = l + bl_size(l);
        if (p + t > end || bl_read(p + t) != l) {
            return false;
        }
        p += t;
        k++;
    }
    return p == end && k == lp_count(lp);
}
