/* node/types/rdb.c: Redis's value serialization (RDB object types 0-21)
 * decoded into rebuild commands. Written from the documented formats: RDB
 * lengths and strings (integer and LZF encodings), ziplist, listpack,
 * intset, zipmap, quicklist and stream listpacks. */
#include "node/types/rdb.h"

#include "base/bytes.h"
#include "base/mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RDB object types (Redis's rdb.h numbering) */
enum {
    T_STRING = 0,
    T_LIST = 1,
    T_SET = 2,
    T_ZSET = 3,
    T_HASH = 4,
    T_ZSET_2 = 5,
    T_HASH_ZIPMAP = 9,
    T_LIST_ZIPLIST = 10,
    T_SET_INTSET = 11,
    T_ZSET_ZIPLIST = 12,
    T_HASH_ZIPLIST = 13,
    T_LIST_QUICKLIST = 14,
    T_STREAM = 15,
    T_HASH_LISTPACK = 16,
    T_ZSET_LISTPACK = 17,
    T_LIST_QUICKLIST_2 = 18,
    T_STREAM_2 = 19,
    T_SET_LISTPACK = 20,
    T_STREAM_3 = 21,
};

#define BAD (-1)
#define UNSUPPORTED (-2)

/* ------------------------------------------------------------------ CRC-64 */

#define JONES_REFLECTED UINT64_C(0x95AC9329AC4BC9B5)

uint64_t
rdb_crc64(uint64_t crc, const uint8_t *p, size_t n)
{
    static uint64_t tab[256];
    static _Atomic int ready;
    if (!ready) { /* idempotent: threads racing here write the same values */
        for (unsigned i = 0; i < 256; i++) {
            uint64_t v = i;
            for (int k = 0; k < 8; k++) {
                v = (v & 1) ? (v >> 1) ^ JONES_REFLECTED : v >> 1;
            }
            tab[i] = v;
        }
        ready = 1;
    }
    for (size_t i = 0; i < n; i++) {
        crc = tab[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

bool
rdb_payload_check(const uint8_t *p, size_t n, struct rdb_rd *body, unsigned *version)
{
    if (n < 11) {
        return false;
    }
    size_t b = n - 10;
    unsigned v = (unsigned)p[b] | (unsigned)p[b + 1] << 8;
    uint64_t crc = 0;
    for (int i = 0; i < 8; i++) {
        crc |= (uint64_t)p[b + 2 + i] << (8 * i);
    }
    if (v < 1 || v > RDB_VERSION_MAX || crc != rdb_crc64(0, p, b + 2)) {
        return false;
    }
    *body = (struct rdb_rd){ p, p + b };
    *version = v;
    return true;
}

/* -------------------------------------------------------------- primitives */

static bool
take(struct rdb_rd *r, size_t n, const uint8_t **out)
{
    if ((size_t)(r->end - r->p) < n) {
        return false;
    }
    *out = r->p;
    r->p += n;
    return true;
}

static uint64_t
be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static uint64_t
le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

/* n bytes little-endian, sign-extended */
static int64_t
le_signed(const uint8_t *p, int n)
{
    uint64_t v = le(p, n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) {
        v |= ~UINT64_C(0) << (8 * n);
    }
    return (int64_t)v;
}

bool
rdb_read_len(struct rdb_rd *r, uint64_t *len, bool *special)
{
    const uint8_t *q;
    if (!take(r, 1, &q)) {
        return false;
    }
    *special = false;
    switch (q[0] >> 6) {
    case 0: *len = q[0] & 0x3f; return true;
    case 1: {
        unsigned hi = q[0] & 0x3f;
        if (!take(r, 1, &q)) {
            return false;
        }
        *len = (uint64_t)hi << 8 | q[0];
        return true;
    }
    case 2:
        if (q[0] == 0x80 && take(r, 4, &q)) {
            *len = be(q, 4);
            return true;
        }
        if (q[0] == 0x81 && take(r, 8, &q)) {
            *len = be(q, 8);
            return true;
        }
        return false;
    default:
        *special = true;
        *len = q[0] & 0x3f;
        return true;
    }
}

static bool
read_plain_len(struct rdb_rd *r, uint64_t *len)
{
    bool special;
    return rdb_read_len(r, len, &special) && !special;
}

/* LZF: a control byte below 32 starts a literal run of ctrl+1 bytes; above,
 * a back reference of (ctrl>>5)+2 bytes (7: plus the next byte) at distance
 * ((ctrl&31)<<8 | next)+1. Exactly ulen bytes must come out. */
static bool
lzf_decompress(const uint8_t *in, size_t clen, uint8_t *out, size_t ulen)
{
    size_t i = 0, o = 0;
    while (i < clen) {
        unsigned ctrl = in[i++];
        if (ctrl < 32) {
            size_t run = ctrl + 1;
            if (run > clen - i || run > ulen - o) {
                return false;
            }
            memcpy(out + o, in + i, run);
            i += run;
            o += run;
            continue;
        }
        size_t len = ctrl >> 5;
        if (len == 7) {
            if (i >= clen) {
                return false;
            }
            len += in[i++];
        }
        if (i >= clen) {
            return false;
        }
        size_t dist = ((size_t)(ctrl & 31) << 8 | in[i++]) + 1;
        len += 2;
        if (dist > o || len > ulen - o) {
            return false;
        }
        for (size_t k = 0; k < len; k++) { /* may overlap: byte by byte */
            out[o + k] = out[o - dist + k];
        }
        o += len;
    }
    return o == ulen;
}

bool
rdb_read_string(struct rdb_rd *r, struct rv_str *out, char **owned, char scratch[24])
{
    uint64_t len;
    bool special;
    const uint8_t *q;
    *owned = NULL;
    if (!rdb_read_len(r, &len, &special)) {
        return false;
    }
    if (!special) {
        if (!take(r, len, &q)) {
            return false;
        }
        *out = (struct rv_str){ (const char *)q, (size_t)len };
        return true;
    }
    if (len <= 2) { /* an integer of 1, 2 or 4 bytes */
        int n = 1 << len;
        if (!take(r, (size_t)n, &q)) {
            return false;
        }
        int k = snprintf(scratch, 24, "%" PRId64, le_signed(q, n));
        *out = (struct rv_str){ scratch, (size_t)k };
        return true;
    }
    uint64_t clen, ulen;
    if (len != 3 || !read_plain_len(r, &clen) || !read_plain_len(r, &ulen) || !take(r, clen, &q) ||
        ulen > (UINT64_C(1) << 32) || ulen / 4096 > clen + 1) { /* LZF expands at most ~256x */
        return false;
    }
    char *buf = rv_malloc(ulen ? ulen : 1);
    if (!lzf_decompress(q, clen, (uint8_t *)buf, ulen)) {
        rv_free(buf);
        return false;
    }
    *owned = buf;
    *out = (struct rv_str){ buf, (size_t)ulen };
    return true;
}

/* ------------------------------------------------------------ the emitter */

/* One value's decoding: the emitter, and the buffers its pending arguments
 * point into (freed once the value is done). */
struct dec {
    struct rdb_rd *r;
    struct obj_emitter em;
    bool emitting;
    char **owned;
    size_t nowned, capowned;
};

static void
keep(struct dec *d, char *buf)
{
    if (buf == NULL) {
        return;
    }
    if (d->nowned == d->capowned) {
        d->capowned = d->capowned * 2 + 8;
        d->owned = rv_realloc(d->owned, d->capowned * sizeof(*d->owned));
    }
    d->owned[d->nowned++] = buf;
}

/* A decoded element: bytes, or an integer not printed yet. */
struct elem {
    struct rv_str s;
    bool is_int;
    int64_t v;
};

static void
put(struct dec *d, const struct elem *e)
{
    if (!d->emitting) {
        return;
    }
    if (e->is_int) {
        obj_emit_int(&d->em, e->v);
    } else {
        obj_emit_arg(&d->em, e->s);
    }
}

static void
put_str(struct dec *d, struct rv_str s)
{
    struct elem e = { s, false, 0 };
    put(d, &e);
}

static void
end_elem(struct dec *d)
{
    if (d->emitting) {
        obj_emit_elem(&d->em);
    }
}

/* An RDB string kept alive until the value is done. */
static bool
read_str(struct dec *d, struct rv_str *out)
{
    char scratch[24], *owned;
    if (!rdb_read_string(d->r, out, &owned, scratch)) {
        return false;
    }
    if (owned == NULL && out->p == scratch) { /* an int-encoded string: copy it out */
        owned = rv_malloc(out->len);
        memcpy(owned, scratch, out->len);
        out->p = owned;
    }
    keep(d, owned);
    return true;
}

/* ---------------------------------------------------------------- listpack */

struct blob {
    const uint8_t *p, *end;
};

/* Listpack: 4-byte total, 2-byte count, entries (encoding, data, back-length),
 * 0xFF. *done at the end marker. */
static bool
lp_next(struct blob *b, struct elem *e, bool *done)
{
    const uint8_t *p = b->p;
    size_t avail = (size_t)(b->end - p), hdr, dlen;
    *done = false;
    if (avail < 1) {
        return false;
    }
    unsigned c = p[0];
    e->is_int = true;
    if (c == 0xff) {
        *done = true;
        return true;
    }
    if (c < 0x80) {
        hdr = 1, dlen = 0, e->v = c;
    } else if ((c & 0xc0) == 0x80) {
        hdr = 1, dlen = c & 0x3f, e->is_int = false;
    } else if ((c & 0xe0) == 0xc0) {
        if (avail < 2) {
            return false;
        }
        int64_t v = (int64_t)((c & 0x1f) << 8 | p[1]);
        e->v = v >= 4096 ? v - 8192 : v;
        hdr = 2, dlen = 0;
    } else if ((c & 0xf0) == 0xe0) {
        if (avail < 2) {
            return false;
        }
        hdr = 2, dlen = (size_t)((c & 0x0f) << 8 | p[1]), e->is_int = false;
    } else if (c == 0xf0) {
        if (avail < 5) {
            return false;
        }
        hdr = 5, dlen = (size_t)le(p + 1, 4), e->is_int = false;
    } else if (c >= 0xf1 && c <= 0xf4) {
        static const int width[] = { 2, 3, 4, 8 };
        int w = width[c - 0xf1];
        if (avail < (size_t)1 + (size_t)w) {
            return false;
        }
        e->v = le_signed(p + 1, w);
        hdr = 1 + (size_t)w, dlen = 0;
    } else {
        return false;
    }
    size_t entry = hdr + dlen;
    if (dlen > avail || entry > avail) {
        return false;
    }
    if (!e->is_int) {
        e->s = (struct rv_str){ (const char *)p + hdr, dlen };
    }
    size_t back = entry < 128         ? 1
                  : entry < 16384     ? 2
                  : entry < 2097152   ? 3
                  : entry < 268435456 ? 4
                                      : 5;
    if (avail - entry < back) {
        return false;
    }
    b->p = p + entry + back;
    return true;
}

static bool
lp_open(struct rv_str s, struct blob *b)
{
    const uint8_t *p = (const uint8_t *)s.p;
    if (s.len < 7 || le(p, 4) != s.len || p[s.len - 1] != 0xff) {
        return false;
    }
    *b = (struct blob){ p + 6, p + s.len };
    return true;
}

/* ----------------------------------------------------------------- ziplist */

/* Ziplist: 4-byte total, 4-byte tail offset, 2-byte count, entries (previous
 * length, encoding, data), 0xFF. */
static bool
zl_next(struct blob *b, struct elem *e, bool *done)
{
    const uint8_t *p = b->p;
    size_t avail = (size_t)(b->end - p);
    *done = false;
    if (avail < 1) {
        return false;
    }
    if (p[0] == 0xff) {
        *done = true;
        return true;
    }
    size_t prev = p[0] == 0xfe ? 5 : 1;
    if (avail < prev + 1) {
        return false;
    }
    p += prev, avail -= prev;
    unsigned c = p[0];
    size_t hdr, dlen = 0;
    e->is_int = c >= 0xc0;
    switch (c >> 6) {
    case 0: hdr = 1, dlen = c & 0x3f; break;
    case 1:
        if (avail < 2) {
            return false;
        }
        hdr = 2, dlen = (size_t)((c & 0x3f) << 8 | p[1]);
        break;
    case 2:
        if (c != 0x80 || avail < 5) {
            return false;
        }
        hdr = 5, dlen = (size_t)be(p + 1, 4);
        break;
    default: {
        int w;
        switch (c) {
        case 0xc0: w = 2; break;
        case 0xd0: w = 4; break;
        case 0xe0: w = 8; break;
        case 0xf0: w = 3; break;
        case 0xfe: w = 1; break;
        default:
            if (c < 0xf1 || c > 0xfd) {
                return false;
            }
            w = 0;
            e->v = (int64_t)(c & 0x0f) - 1;
        }
        if (avail < (size_t)1 + (size_t)w) {
            return false;
        }
        if (w > 0) {
            e->v = le_signed(p + 1, w);
        }
        hdr = 1 + (size_t)w;
    }
    }
    if (dlen > avail - hdr) {
        return false;
    }
    if (!e->is_int) {
        e->s = (struct rv_str){ (const char *)p + hdr, dlen };
    }
    b->p = p + hdr + dlen;
    return true;
}

static bool
zl_open(struct rv_str s, struct blob *b)
{
    const uint8_t *p = (const uint8_t *)s.p;
    if (s.len < 11 || le(p, 4) != s.len || p[s.len - 1] != 0xff) {
        return false;
    }
    *b = (struct blob){ p + 10, p + s.len };
    return true;
}

/* Runs every element of a ziplist (zl) or listpack blob through the
 * emitter, `group` elements per emitted element (2 for hash field-value
 * pairs; zset pairs are member, score and swapped: ZADD wants the score
 * first). */
static int
emit_packed(struct dec *d, struct rv_str s, bool zl, int group, bool zset)
{
    struct blob b;
    if (!(zl ? zl_open(s, &b) : lp_open(s, &b))) {
        return BAD;
    }
    struct elem e[2];
    int have = 0;
    for (;;) {
        bool done;
        if (!(zl ? zl_next(&b, &e[have], &done) : lp_next(&b, &e[have], &done))) {
            return BAD;
        }
        if (done) {
            break;
        }
        if (++have < group) {
            continue;
        }
        if (zset) {
            if (!e[1].is_int) { /* a score's text must be a number ZADD takes */
                char tmp[64];
                char *endp;
                if (e[1].s.len == 0 || e[1].s.len >= sizeof(tmp)) {
                    return BAD;
                }
                memcpy(tmp, e[1].s.p, e[1].s.len);
                tmp[e[1].s.len] = 0;
                double v = strtod(tmp, &endp);
                if (*endp != 0 || isnan(v)) {
                    return BAD;
                }
            }
            put(d, &e[1]);
            put(d, &e[0]);
        } else {
            for (int i = 0; i < group; i++) {
                put(d, &e[i]);
            }
        }
        end_elem(d);
        have = 0;
    }
    return have == 0 && b.p == b.end - 1 ? 0 : BAD;
}

/* ------------------------------------------------------- intset and zipmap */

static int
emit_intset(struct dec *d, struct rv_str s)
{
    const uint8_t *p = (const uint8_t *)s.p;
    if (s.len < 8) {
        return BAD;
    }
    uint32_t w = (uint32_t)le(p, 4), n = (uint32_t)le(p + 4, 4);
    if ((w != 2 && w != 4 && w != 8) || (s.len - 8) / w != n || (s.len - 8) % w != 0) {
        return BAD;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct elem e = { { NULL, 0 }, true, le_signed(p + 8 + (size_t)i * w, (int)w) };
        put(d, &e);
        end_elem(d);
    }
    return 0;
}

/* Zipmap (Redis 2.x hashes): a 1-byte count, then key length, key, value
 * length, a free byte count, value, free bytes; 0xFF ends it. Lengths: one
 * byte below 254, or 254 and 4 bytes. */
static bool
zm_len(struct blob *b, size_t *len)
{
    if (b->p >= b->end) {
        return false;
    }
    unsigned c = *b->p++;
    if (c < 254) {
        *len = c;
        return true;
    }
    if (c != 254 || b->end - b->p < 4) {
        return false;
    }
    *len = (size_t)le(b->p, 4);
    b->p += 4;
    return true;
}

static int
emit_zipmap(struct dec *d, struct rv_str s)
{
    struct blob b = { (const uint8_t *)s.p + 1, (const uint8_t *)s.p + s.len };
    if (s.len < 2) {
        return BAD;
    }
    while (b.p < b.end && *b.p != 0xff) {
        size_t kl, vl;
        if (!zm_len(&b, &kl) || kl > (size_t)(b.end - b.p)) {
            return BAD;
        }
        struct rv_str k = { (const char *)b.p, kl };
        b.p += kl;
        if (!zm_len(&b, &vl) || b.p >= b.end) {
            return BAD;
        }
        size_t fr = *b.p++;
        if (vl > (size_t)(b.end - b.p) || fr > (size_t)(b.end - b.p) - vl) {
            return BAD;
        }
        put_str(d, k);
        put_str(d, (struct rv_str){ (const char *)b.p, vl });
        end_elem(d);
        b.p += vl + fr;
    }
    return b.p == b.end - 1 ? 0 : BAD;
}

/* ------------------------------------------------------------ collections */

/* n RDB strings, `group` per element (1: list or set; 2: hash pairs) */
static int
emit_strings(struct dec *d, int group)
{
    uint64_t n;
    if (!read_plain_len(d->r, &n)) {
        return BAD;
    }
    for (uint64_t i = 0; i < n; i++) {
        for (int g = 0; g < group; g++) {
            struct rv_str s;
            if (!read_str(d, &s)) {
                return BAD;
            }
            put_str(d, s);
        }
        end_elem(d);
    }
    return 0;
}

/* Sorted set: member then score, a binary double (ZSET_2) or a length-
 * prefixed text (253 NaN, 254 +inf, 255 -inf). */
static int
emit_zset(struct dec *d, bool binary)
{
    uint64_t n;
    if (!read_plain_len(d->r, &n)) {
        return BAD;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct rv_str m;
        const uint8_t *q;
        double v;
        if (!read_str(d, &m)) {
            return BAD;
        }
        if (binary) {
            if (!take(d->r, 8, &q)) {
                return BAD;
            }
            uint64_t bits = le(q, 8);
            memcpy(&v, &bits, 8);
        } else {
            char tmp[256], *endp;
            if (!take(d->r, 1, &q)) {
                return BAD;
            }
            unsigned l = q[0];
            if (l == 253) {
                return BAD;
            }
            if (l >= 254) {
                v = l == 254 ? INFINITY : -INFINITY;
            } else {
                if (!take(d->r, l, &q)) {
                    return BAD;
                }
                memcpy(tmp, q, l);
                tmp[l] = 0;
                v = strtod(tmp, &endp);
                if (l == 0 || *endp != 0) {
                    return BAD;
                }
            }
        }
        if (isnan(v)) {
            return BAD;
        }
        if (d->emitting) {
            obj_emit_double(&d->em, v);
        }
        put_str(d, m);
        end_elem(d);
    }
    return 0;
}

/* A value held as one RDB string in a packed form. */
static int
emit_blob(struct dec *d, int (*fn)(struct dec *, struct rv_str))
{
    struct rv_str s;
    return read_str(d, &s) ? fn(d, s) : BAD;
}

static int
list_zl(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, true, 1, false);
}

static int
hash_zl(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, true, 2, false);
}

static int
zset_zl(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, true, 2, true);
}

static int
list_lp(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, false, 1, false);
}

static int
hash_lp(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, false, 2, false);
}

static int
zset_lp(struct dec *d, struct rv_str s)
{
    return emit_packed(d, s, false, 2, true);
}

/* Quicklist: n nodes, each a ziplist (v1) or, in v2, a container kind (1
 * plain element, 2 listpack) and the node. */
static int
emit_quicklist(struct dec *d, bool v2)
{
    uint64_t n, kind = 2;
    if (!read_plain_len(d->r, &n)) {
        return BAD;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct rv_str s;
        if ((v2 && (!read_plain_len(d->r, &kind) || (kind != 1 && kind != 2))) ||
            !read_str(d, &s)) {
            return BAD;
        }
        int rc;
        if (kind == 1) {
            put_str(d, s);
            end_elem(d);
            rc = 0;
        } else {
            rc = emit_packed(d, s, !v2, 1, false);
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ streams */

struct sid {
    uint64_t ms, seq;
};

static int
sid_fmt(struct sid id, char out[48])
{
    return snprintf(out, 48, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
}

static bool
read_sid_lens(struct rdb_rd *r, struct sid *id)
{
    return read_plain_len(r, &id->ms) && read_plain_len(r, &id->seq);
}

/* A stream listpack's number: an integer entry (or its decimal text). */
static bool
lp_int(struct blob *b, int64_t *v)
{
    struct elem e;
    bool done;
    if (!lp_next(b, &e, &done) || done) {
        return false;
    }
    if (e.is_int) {
        *v = e.v;
        return true;
    }
    char tmp[24], *endp;
    if (e.s.len == 0 || e.s.len >= sizeof(tmp)) {
        return false;
    }
    memcpy(tmp, e.s.p, e.s.len);
    tmp[e.s.len] = 0;
    *v = strtoll(tmp, &endp, 10);
    return *endp == 0;
}

/* One XADD's arguments: views, and the text of integer elements. */
struct xargs {
    struct rv_str *av;
    char (*num)[24];
    size_t n, cap;
};

static void
xarg(struct xargs *x, const struct elem *e)
{
    if (x->n == x->cap) {
        x->cap = x->cap * 2 + 16;
        x->av = rv_realloc(x->av, x->cap * sizeof(*x->av));
        x->num = rv_realloc(x->num, x->cap * sizeof(*x->num));
    }
    if (e->is_int) {
        int k = snprintf(x->num[x->n], 24, "%" PRId64, e->v);
        x->av[x->n] = (struct rv_str){ NULL, (size_t)k }; /* pointed at num once argv is final */
    } else {
        x->av[x->n] = e->s;
    }
    x->n++;
}

/* Emits the entries of one stream listpack whose master id is base: the
 * master entry (count, deleted, field names, 0), then each entry (flags,
 * ms and seq deltas, [field count and fields] values, back count). */
static int
stream_node(struct rv_str lp, struct sid base, struct rv_str key, obj_emit_fn *fn, void *arg,
            struct xargs *x, uint64_t *live)
{
    struct blob b;
    int64_t count, deleted, nmaster, zero;
    if (!lp_open(lp, &b) || !lp_int(&b, &count) || !lp_int(&b, &deleted) || !lp_int(&b, &nmaster) ||
        nmaster < 0 || nmaster > (int64_t)lp.len) {
        return BAD;
    }
    struct elem *master = rv_malloc(((size_t)nmaster + 1) * sizeof(*master));
    int rc = 0;
    bool done;
    for (int64_t i = 0; i < nmaster && rc == 0; i++) {
        if (!lp_next(&b, &master[i], &done) || done) {
            rc = BAD;
        }
    }
    if (rc == 0 && (!lp_int(&b, &zero) || zero != 0)) {
        rc = BAD;
    }
    while (rc == 0) {
        int64_t flags, dms, dseq, nf, back;
        struct elem e;
        if (b.p < b.end && *b.p == 0xff) {
            break;
        }
        if (!lp_int(&b, &flags) || !lp_int(&b, &dms) || !lp_int(&b, &dseq)) {
            rc = BAD;
            break;
        }
        bool same = (flags & 2) != 0;
        nf = nmaster;
        if (!same && (!lp_int(&b, &nf) || nf < 0 || nf > (int64_t)lp.len)) {
            rc = BAD;
            break;
        }
        struct sid id = { base.ms + (uint64_t)dms, base.seq + (uint64_t)dseq };
        char idtxt[48];
        x->n = 0;
        xarg(x, &(struct elem){ { "XADD", 4 }, false, 0 });
        xarg(x, &(struct elem){ key, false, 0 });
        xarg(x, &(struct elem){ { idtxt, (size_t)sid_fmt(id, idtxt) }, false, 0 });
        for (int64_t i = 0; i < nf && rc == 0; i++) {
            if (same) {
                xarg(x, &master[i]);
            } else if (!lp_next(&b, &e, &done) || done) {
                rc = BAD;
                break;
            } else {
                xarg(x, &e);
            }
            if (!lp_next(&b, &e, &done) || done) {
                rc = BAD;
                break;
            }
            xarg(x, &e);
        }
        if (rc != 0 || !lp_int(&b, &back)) {
            rc = BAD;
            break;
        }
        if (!(flags & 1)) {
            for (size_t i = 0; i < x->n; i++) {
                if (x->av[i].p == NULL) {
                    x->av[i].p = x->num[i];
                }
            }
            if (fn != NULL) {
                fn(arg, (int)x->n, x->av);
            }
            (*live)++;
        }
    }
    rv_free(master);
    if (rc == 0 && b.p != b.end - 1) {
        rc = BAD;
    }
    return rc;
}

static bool
sid_lt(struct sid a, struct sid b)
{
    return a.ms < b.ms || (a.ms == b.ms && a.seq < b.seq);
}

/* A group's pending entry, as the group lists it (before its consumers). */
struct gpel {
    struct sid id;
    int64_t ms;
    uint64_t count;
    bool owned;
};

/* XGROUPLOAD's arguments: key group last-id entries-read [consumer seen-ms
 * active-ms [id delivery-ms count ...]], at most OBJ_EMIT_BATCH triples. */
struct gload {
    struct rv_str av[8 + 3 * OBJ_EMIT_BATCH];
    char num[4 + 3 * OBJ_EMIT_BATCH][48];
    int argc, nnum;
};

static struct rv_str
gl_num(struct gload *x, int64_t v)
{
    char *b = x->num[x->nnum++];
    return (struct rv_str){ b, (size_t)snprintf(b, 48, "%" PRId64, v) };
}

static struct rv_str
gl_id(struct gload *x, struct sid id)
{
    char *b = x->num[x->nnum++];
    return (struct rv_str){ b, (size_t)sid_fmt(id, b) };
}

static void
gl_head(struct gload *x, const struct rv_str *head, int n)
{
    x->nnum = 0;
    x->argc = n;
    for (int i = 0; i < n; i++) {
        x->av[i] = head[i];
    }
}

/* The group PEL entry with id (they come in id order), NULL when none. */
static struct gpel *
gpel_find(struct gpel *v, uint64_t n, struct sid id)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sid_lt(v[mid].id, id)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && v[lo].id.ms == id.ms && v[lo].id.seq == id.seq ? &v[lo] : NULL;
}

/* A group's PEL: raw id (16 bytes big-endian), delivery time (8 bytes LE),
 * delivery count, in id order. Times must fit XGROUPLOAD (not negative). */
static int
group_pel(struct dec *d, struct gpel **out, uint64_t *n)
{
    const uint8_t *q;
    if (!read_plain_len(d->r, n) || *n > (uint64_t)(d->r->end - d->r->p) / 25) {
        return BAD;
    }
    struct gpel *v = rv_malloc((size_t)(*n ? *n : 1) * sizeof(*v));
    *out = v;
    for (uint64_t i = 0; i < *n; i++) {
        if (!take(d->r, 24, &q) || !read_plain_len(d->r, &v[i].count)) {
            return BAD;
        }
        v[i].id = (struct sid){ be(q, 8), be(q + 8, 8) };
        v[i].ms = (int64_t)le(q + 16, 8);
        v[i].owned = false;
        if (v[i].ms < 0 || v[i].count > INT64_MAX || (i > 0 && !sid_lt(v[i - 1].id, v[i].id))) {
            return BAD;
        }
    }
    return 0;
}

/* One consumer: name, seen time, [active time: type 21], its pending ids
 * (each one of the group's PEL, taking that entry's time and count). Emits
 * XGROUPLOAD per OBJ_EMIT_BATCH of them (one when it has none). */
static int
group_consumer(struct dec *d, unsigned type, const struct rv_str head[5], struct gpel *pel,
               uint64_t npel, struct gload *x, obj_emit_fn *fn, void *arg)
{
    struct rv_str cname;
    const uint8_t *q;
    uint64_t cnt;
    if (!read_str(d, &cname) || !take(d->r, type >= T_STREAM_3 ? 16 : 8, &q)) {
        return BAD;
    }
    int64_t seen = (int64_t)le(q, 8);
    /* before Redis 7.2 there is no active time: its seen time is the estimate */
    int64_t active = type >= T_STREAM_3 ? (int64_t)le(q + 8, 8) : seen;
    if (seen < 0 || active < -1 || !read_plain_len(d->r, &cnt) ||
        cnt > (uint64_t)(d->r->end - d->r->p) / 16) {
        return BAD;
    }
    uint64_t k = 0;
    do {
        struct rv_str h[8] = { head[0], head[1], head[2], head[3], head[4], cname };
        gl_head(x, h, 6);
        x->av[6] = gl_num(x, seen);
        x->av[7] = gl_num(x, active);
        x->argc = 8;
        for (int b = 0; b < OBJ_EMIT_BATCH && k < cnt; b++, k++) {
            if (!take(d->r, 16, &q)) {
                return BAD;
            }
            struct gpel *e = gpel_find(pel, npel, (struct sid){ be(q, 8), be(q + 8, 8) });
            if (e == NULL || e->owned) {
                return BAD; /* not in the group's PEL, or owned twice */
            }
            e->owned = true;
            x->av[x->argc++] = gl_id(x, e->id);
            x->av[x->argc++] = gl_num(x, e->ms);
            x->av[x->argc++] = gl_num(x, (int64_t)e->count);
        }
        if (fn != NULL) {
            fn(arg, x->argc, x->av);
        }
    } while (k < cnt);
    return 0;
}

/* One group: name, last id, [entries read: type 19+], its PEL, its
 * consumers. Every PEL entry must belong to exactly one consumer. */
static int
stream_group(struct dec *d, unsigned type, struct rv_str key, struct gload *x, obj_emit_fn *fn,
             void *arg)
{
    struct rv_str name;
    struct sid last;
    uint64_t read = 0, npel = 0, ncons;
    struct gpel *pel = NULL;
    char lt[48], rt[24];
    if (!read_str(d, &name) || !read_sid_lens(d->r, &last) ||
        (type >= T_STREAM_2 && !read_plain_len(d->r, &read))) {
        return BAD;
    }
    /* Redis 5/6 files do not keep entries-read: unknown (-1), as XINFO's lag */
    int64_t er = type >= T_STREAM_2 && read <= INT64_MAX ? (int64_t)read : -1;
    struct rv_str head[5] = { { "XGROUPLOAD", 10 },
                              key,
                              name,
                              { lt, (size_t)sid_fmt(last, lt) },
                              { rt, (size_t)snprintf(rt, sizeof(rt), "%" PRId64, er) } };
    int rc = group_pel(d, &pel, &npel);
    if (rc == 0 && !read_plain_len(d->r, &ncons)) {
        rc = BAD;
    }
    if (rc == 0 && ncons == 0) {
        if (npel != 0) {
            rc = BAD; /* pending entries without an owner */
        } else if (fn != NULL) {
            fn(arg, 5, head);
        }
    }
    for (uint64_t i = 0; rc == 0 && i < ncons; i++) {
        rc = group_consumer(d, type, head, pel, npel, x, fn, arg);
    }
    for (uint64_t i = 0; rc == 0 && i < npel; i++) {
        if (!pel[i].owned) {
            rc = BAD;
        }
    }
    rv_free(pel);
    return rc;
}

/* Consumer groups, after the stream's XSETID: XGROUPLOAD commands. */
static int
stream_groups(struct dec *d, unsigned type, struct rv_str key, obj_emit_fn *fn, void *arg)
{
    uint64_t ngroups;
    if (!read_plain_len(d->r, &ngroups)) {
        return BAD;
    }
    struct gload *x = rv_malloc(sizeof(*x));
    int rc = 0;
    for (uint64_t g = 0; g < ngroups && rc == 0; g++) {
        rc = stream_group(d, type, key, x, fn, arg);
    }
    rv_free(x);
    return rc;
}

/* A stream: its listpacks (keyed by their master id, 16 bytes big-endian),
 * length, last id, [first id, max deleted id, entries added], groups. */
static int
emit_stream(struct dec *d, unsigned type, struct rv_str key, obj_emit_fn *fn, void *arg)
{
    struct xargs x = { NULL, NULL, 0, 0 };
    uint64_t nodes, length, live = 0, added;
    struct sid last, first, maxdel = { 0, 0 };
    int rc = 0;
    if (!read_plain_len(d->r, &nodes)) {
        return BAD;
    }
    for (uint64_t i = 0; i < nodes && rc == 0; i++) {
        struct rv_str nk, lp;
        if (!read_str(d, &nk) || nk.len != 16 || !read_str(d, &lp)) {
            rc = BAD;
            break;
        }
        const uint8_t *k = (const uint8_t *)nk.p;
        rc = stream_node(lp, (struct sid){ be(k, 8), be(k + 8, 8) }, key, fn, arg, &x, &live);
    }
    rv_free(x.av);
    rv_free(x.num);
    if (rc != 0) {
        return rc;
    }
    if (!read_plain_len(d->r, &length) || !read_sid_lens(d->r, &last) || length != live) {
        return BAD;
    }
    added = length;
    if (type >= T_STREAM_2 && (!read_sid_lens(d->r, &first) || !read_sid_lens(d->r, &maxdel) ||
                               !read_plain_len(d->r, &added))) {
        return BAD;
    }
    if (fn == NULL) {
        return stream_groups(d, type, key, NULL, NULL);
    }
    char lt[48], dt[48], at[24], et[48];
    if (length == 0) {
        struct sid l = last.ms == 0 && last.seq == 0 ? (struct sid){ 0, 1 } : last;
        struct rv_str av[7] = {
            { "XADD", 4 }, key,       { "MAXLEN", 6 }, { "0", 1 }, { et, (size_t)sid_fmt(l, et) },
            { "x", 1 },    { "y", 1 }
        };
        fn(arg, 7, av);
    }
    struct rv_str av[7] = {
        { "XSETID", 6 },
        key,
        { lt, (size_t)sid_fmt(last, lt) },
        { "ENTRIESADDED", 12 },
        { at, (size_t)snprintf(at, sizeof(at), "%" PRIu64, added) },
        { "MAXDELETEDID", 12 },
        { dt, (size_t)sid_fmt(maxdel, dt) },
    };
    fn(arg, 7, av);
    return stream_groups(d, type, key, fn, arg);
}

int
rdb_value_emit(struct rdb_rd *r, unsigned type, struct rv_str key, obj_emit_fn *fn, void *arg)
{
    struct dec d = { .r = r, .emitting = fn != NULL };
    static const char *const cmd_of[] = {
        [T_LIST] = "RPUSH",
        [T_SET] = "SADD",
        [T_ZSET] = "ZADD",
        [T_HASH] = "HSET",
        [T_ZSET_2] = "ZADD",
        [T_HASH_ZIPMAP] = "HSET",
        [T_LIST_ZIPLIST] = "RPUSH",
        [T_SET_INTSET] = "SADD",
        [T_ZSET_ZIPLIST] = "ZADD",
        [T_HASH_ZIPLIST] = "HSET",
        [T_LIST_QUICKLIST] = "RPUSH",
        [T_HASH_LISTPACK] = "HSET",
        [T_ZSET_LISTPACK] = "ZADD",
        [T_LIST_QUICKLIST_2] = "RPUSH",
        [T_SET_LISTPACK] = "SADD",
    };
    int rc;

    if (type == T_STREAM || type == T_STREAM_2 || type == T_STREAM_3) {
        rc = emit_stream(&d, type, key, fn, arg);
        goto out;
    }
    if (type == T_STRING) {
        struct rv_str v;
        if (!read_str(&d, &v)) {
            rc = BAD;
        } else {
            if (fn != NULL) {
                struct rv_str av[3] = { { "SET", 3 }, key, v };
                fn(arg, 3, av);
            }
            rc = 0;
        }
        goto out;
    }
    if (type >= sizeof(cmd_of) / sizeof(cmd_of[0]) || cmd_of[type] == NULL) {
        return type == 6 || type == 7 ? UNSUPPORTED : BAD; /* 6, 7: module values */
    }
    if (d.emitting) {
        obj_emit_init(&d.em, fn, arg, cmd_of[type], key);
    }
    switch (type) {
    case T_LIST:
    case T_SET: rc = emit_strings(&d, 1); break;
    case T_HASH: rc = emit_strings(&d, 2); break;
    case T_ZSET: rc = emit_zset(&d, false); break;
    case T_ZSET_2: rc = emit_zset(&d, true); break;
    case T_HASH_ZIPMAP: rc = emit_blob(&d, emit_zipmap); break;
    case T_LIST_ZIPLIST: rc = emit_blob(&d, list_zl); break;
    case T_SET_INTSET: rc = emit_blob(&d, emit_intset); break;
    case T_ZSET_ZIPLIST: rc = emit_blob(&d, zset_zl); break;
    case T_HASH_ZIPLIST: rc = emit_blob(&d, hash_zl); break;
    case T_LIST_QUICKLIST: rc = emit_quicklist(&d, false); break;
    case T_HASH_LISTPACK: rc = emit_blob(&d, hash_lp); break;
    case T_ZSET_LISTPACK: rc = emit_blob(&d, zset_lp); break;
    case T_LIST_QUICKLIST_2: rc = emit_quicklist(&d, true); break;
    case T_SET_LISTPACK: rc = emit_blob(&d, list_lp); break;
    default: rc = BAD;
    }
    if (rc == 0 && d.emitting) {
        obj_emit_flush(&d.em);
    }
out:
    for (size_t i = 0; i < d.nowned; i++) {
        rv_free(d.owned[i]);
    }
    rv_free(d.owned);
    return rc;
}
