/* node/types/hpk.c: the packed string list (hpk.h) small hashes and sets use. */
#include "node/types/hpk.h"

#include "base/mem.h"
#include "node/keyspace/ks.h"

#include <string.h>


/* The header is bytes (no alignment): a packed list may live inline in a
 * keyspace entry at any address. */
struct hpk {
    uint8_t used[4];  /* bytes of d in use (the allocation is exact), LE */
    uint8_t count[4]; /* elements, LE */
    uint8_t d[];
};

static inline uint32_t
u32_get(const uint8_t b[4])
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline void
u32_put(uint8_t b[4], uint32_t v)
{
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

#define PK_USED(p) u32_get((p)->used)
#define PK_COUNT(p) u32_get((p)->count)

#define HPK_STR_MAX 0xBFu /* longest string with its length in the tag */
#define HPK_TAG_VSTR 0xC0u
#define HPK_TAG_INT 0xC0u /* + bytes (1..8) */
#define HPK_TAG_IMM 0xD0u /* + value (0..47) */
#define HPK_IMM_MAX 47

/* The encoding of one string: tag (+ varint or integer bytes) and payload. */
struct penc {
    uint8_t hdr[11];
    size_t hlen;
    const char *pay;
    size_t plen;
};

static inline size_t
pk_vint_put(uint8_t *p, size_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline size_t
pk_vint_get(const uint8_t *p, size_t *out)
{
    size_t v = 0, n = 0;
    unsigned shift = 0;
    while (p[n] & 0x80) {
        v |= (size_t)(p[n++] & 0x7f) << shift;
        shift += 7;
    }
    v |= (size_t)p[n++] << shift;
    *out = v;
    return n;
}

static void
penc_make(struct penc *e, const char *s, size_t n)
{
    int64_t v;
    if (n <= 20 && ks_str_parse_int(s, n, &v)) {
        e->pay = NULL;
        e->plen = 0;
        if (v >= 0 && v <= HPK_IMM_MAX) {
            e->hdr[0] = (uint8_t)(HPK_TAG_IMM + v);
            e->hlen = 1;
        } else {
            unsigned w = 1;
            uint64_t u = (uint64_t)v;
            while (w < 8) {
                int64_t lim = (int64_t)1 << (8 * w - 1);
                if (v >= -lim && v < lim) {
                    break;
                }
                w++;
            }
            e->hdr[0] = (uint8_t)(HPK_TAG_INT + w);
            for (unsigned i = 0; i < w; i++) {
                e->hdr[1 + i] = (uint8_t)(u >> (8 * i));
            }
            e->hlen = 1 + w;
        }
        return;
    }
    e->pay = s;
    e->plen = n;
    if (n <= HPK_STR_MAX) {
        e->hdr[0] = (uint8_t)n;
        e->hlen = 1;
    } else {
        e->hdr[0] = HPK_TAG_VSTR;
        e->hlen = 1 + pk_vint_put(e->hdr + 1, n);
    }
}

static inline size_t
el_size(const uint8_t *p)
{
    unsigned tag = p[0];
    if (tag <= HPK_STR_MAX) {
        return 1 + tag;
    }
    if (tag == HPK_TAG_VSTR) {
        size_t len, k = pk_vint_get(p + 1, &len);
        return 1 + k + len;
    }
    if (tag < HPK_TAG_IMM) {
        return 1 + (tag - HPK_TAG_INT);
    }
    return 1;
}

static inline int64_t
el_int(const uint8_t *p)
{
    unsigned w = p[0] - HPK_TAG_INT;
    uint64_t u = 0;
    unsigned shift = 64 - 8 * w;
    for (unsigned i = 0; i < w; i++) {
        u |= (uint64_t)p[1 + i] << (8 * i);
    }
    return (int64_t)(u << shift) >> shift;
}

struct hpk *
hpk_create(void)
{
    struct hpk *p = rv_malloc(sizeof(*p));
    u32_put(p->used, 0);
    u32_put(p->count, 0);
    return p;
}

void
hpk_free(struct hpk *p)
{
    rv_free(p);
}

size_t
hpk_bytes(const struct hpk *p)
{
    return sizeof(*p) + PK_USED(p);
}

struct hpk *
hpk_dup(const struct hpk *p)
{
    struct hpk *c = rv_malloc(hpk_bytes(p));
    memcpy(c, p, hpk_bytes(p));
    return c;
}

size_t
hpk_count(const struct hpk *p)
{
    return PK_COUNT(p);
}

size_t
hpk_end(const struct hpk *p)
{
    return PK_USED(p);
}

size_t
hpk_next(const struct hpk *p, size_t off)
{
    return off + el_size(p->d + off);
}

bool
hpk_get_int(const struct hpk *p, size_t off, int64_t *v)
{
    unsigned tag = p->d[off];
    if (tag >= HPK_TAG_IMM) {
        *v = tag - HPK_TAG_IMM;
        return true;
    }
    if (tag > HPK_TAG_INT) {
        *v = el_int(p->d + off);
        return true;
    }
    return false;
}

size_t
hpk_get(const struct hpk *p, size_t off, char scratch[HPK_SCRATCH], struct rv_str *out)
{
    const uint8_t *e = p->d + off;
    unsigned tag = e[0];
    int64_t v;

    if (tag <= HPK_STR_MAX) {
        out->p = (const char *)e + 1;
        out->len = tag;
        return off + 1 + tag;
    }
    if (tag == HPK_TAG_VSTR) {
        size_t len, k = pk_vint_get(e + 1, &len);
        out->p = (const char *)e + 1 + k;
        out->len = len;
        return off + 1 + k + len;
    }
    hpk_get_int(p, off, &v);
    out->len = resp_ll2str(scratch, v);
    out->p = scratch;
    return off + el_size(e);
}

size_t
hpk_find(const struct hpk *p, const char *s, size_t n, size_t stride)
{
    struct penc e;
    size_t off = 0, idx = 0, want;

    penc_make(&e, s, n);
    want = e.hlen + e.plen;
    size_t used = PK_USED(p);
    while (off < used) {
        const uint8_t *el = p->d + off;
        size_t sz = el_size(el);
        if (idx % stride == 0 && sz == want && el[0] == e.hdr[0] &&
            memcmp(el, e.hdr, e.hlen) == 0 &&
            (e.plen == 0 || memcmp(el + e.hlen, e.pay, e.plen) == 0)) {
            return off;
        }
        off += sz;
        idx++;
    }
    return HPK_NONE;
}

static void
pk_write(uint8_t *dst, const struct penc *e)
{
    memcpy(dst, e->hdr, e->hlen);
    if (e->plen) {
        memcpy(dst + e->hlen, e->pay, e->plen);
    }
}

/* Sizes r's packed list to bytes (header included), wherever it lives. */
static struct hpk *
hpk_resize(struct hpk_ref *r, size_t bytes)
{
    if (r->ks != NULL) {
        r->p = (struct hpk *)(void *)ks_inl_resize(r->ks, &r->e, bytes);
    } else {
        r->p = rv_realloc(r->p, bytes);
    }
    return r->p;
}

void
hpk_append(struct hpk_ref *r, const char *s, size_t n)
{
    struct penc e;
    struct hpk *p = r->p;
    size_t sz, used = PK_USED(p);

    penc_make(&e, s, n);
    sz = e.hlen + e.plen;
    p = hpk_resize(r, sizeof(*p) + used + sz);
    pk_write(p->d + used, &e);
    u32_put(p->used, (uint32_t)(used + sz));
    u32_put(p->count, PK_COUNT(p) + 1);
}

void
hpk_replace(struct hpk_ref *r, size_t off, const char *s, size_t n)
{
    struct penc e;
    struct hpk *p = r->p;
    size_t os = el_size(p->d + off), ns, used = PK_USED(p), tail;

    penc_make(&e, s, n);
    ns = e.hlen + e.plen;
    tail = used - off - os;
    if (ns > os) {
        p = hpk_resize(r, sizeof(*p) + used + (ns - os));
        memmove(p->d + off + ns, p->d + off + os, tail);
    } else if (ns < os) {
        memmove(p->d + off + ns, p->d + off + os, tail);
        p = hpk_resize(r, sizeof(*p) + used - (os - ns));
    }
    pk_write(p->d + off, &e);
    u32_put(p->used, (uint32_t)(used - os + ns));
}

void
hpk_delete(struct hpk_ref *r, size_t off, size_t nelem)
{
    struct hpk *p = r->p;
    size_t end = off, used = PK_USED(p);
    for (size_t i = 0; i < nelem; i++) {
        end += el_size(p->d + end);
    }
    memmove(p->d + off, p->d + end, used - end);
    used -= end - off;
    u32_put(p->used, (uint32_t)used);
    u32_put(p->count, (uint32_t)(PK_COUNT(p) - nelem));
    hpk_resize(r, sizeof(*p) + used);
}
