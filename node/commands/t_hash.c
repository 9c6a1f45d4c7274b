/* node/commands/t_hash.c: the hash type and the packed string list (hpk) that small
 * hashes and sets use. See t_hash.h for the encodings.
 *
 * A hash is a 16-byte struct hobj the keyspace points to; it never moves while
 * the key exists, so growing the packed array or converting it to a dict only
 * changes the pointer inside. Per-field TTL (HEXPIRE, 7.4) would add a third
 * encoding here (a dict whose entries carry a deadline) and an index of
 * deadlines; nothing in the listpack or hashtable layouts needs to change. */
#include "node/commands/t_hash.h"

#include "base/clock.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ packed list */

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

#define HPK_STR_MAX 0xBFu   /* longest string with its length in the tag */
#define HPK_TAG_VSTR 0xC0u
#define HPK_TAG_INT 0xC0u   /* + bytes (1..8) */
#define HPK_TAG_IMM 0xD0u   /* + value (0..47) */
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
            memcmp(el, e.hdr, e.hlen) == 0 && (e.plen == 0 || memcmp(el + e.hlen, e.pay, e.plen) == 0)) {
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

/* ----------------------------------------------------------- hash objects */

enum { HENC_PK = 0, HENC_HT = 1 };

/* The hashtable encoding: what the keyspace points to for a big hash. */
struct hht {
    struct dict *d;     /* DICT_BYTES: field -> value */
    /* Field deadlines (unix ms in the uint64 value), NULL while no field has
     * one; only hashtable-encoded hashes have it (HEXPIRE converts). */
    struct dict *ttl;
};

static void
hht_free(void *v)
{
    struct hht *t = v;
    if (t == NULL) {
        return;
    }
    dict_destroy(t->d, NULL);
    if (t->ttl != NULL) {
        dict_destroy(t->ttl, NULL);
    }
    rv_free(t);
}

static inline struct dict *
hobj_ttl(const struct hobj *h)
{
    return h->enc == HENC_HT ? h->ht->ttl : NULL;
}

struct hobj *
hobj_create(void)
{
    struct hobj *h = rv_malloc(sizeof(*h));
    h->enc = HENC_PK;
    h->pk = (struct hpk_ref){ hpk_create(), NULL, NULL };
    h->ht = NULL;
    return h;
}

void
hobj_free(struct hobj *h)
{
    if (h == NULL) {
        return;
    }
    if (h->enc == HENC_PK) {
        hpk_free(h->pk.p);
    } else {
        hht_free(h->ht);
    }
    rv_free(h);
}

void
hobj_bind(struct hobj *h, struct ks *ks, struct ks_entry *e)
{
    if (ks_entry_inl(e)) {
        size_t n;
        h->enc = HENC_PK;
        h->pk = (struct hpk_ref){ (struct hpk *)(void *)ks_inl_val(e, &n), ks, e };
        h->ht = NULL;
    } else {
        h->enc = HENC_HT;
        h->pk = (struct hpk_ref){ NULL, NULL, NULL };
        h->ht = ks_entry_ptr(e);
    }
}

void
hobj_store(struct hobj *h, struct ks *ks, const char *key, size_t klen)
{
    if (h->enc == HENC_PK) {
        ks_set_inl(ks, key, klen, KS_HASH, h->pk.p, hpk_bytes(h->pk.p), KS_NO_EXPIRE);
        hpk_free(h->pk.p);
    } else {
        ks_set_ptr(ks, key, klen, KS_HASH, h->ht, hht_free, KS_NO_EXPIRE);
    }
    rv_free(h);
}

size_t
hobj_len(const struct hobj *h)
{
    return h->enc == HENC_PK ? hpk_count(h->pk.p) / 2 : dict_size(h->ht->d);
}

const char *
hobj_encoding(const struct hobj *h)
{
    return h->enc == HENC_PK ? "listpack" : "hashtable";
}

/* Forgets the deadline of f; frees the side dict once it is empty. */
static bool
hobj_ttl_clear(struct hobj *h, const char *f, size_t fl)
{
    struct hht *t = h->ht;
    bool had = dict_delete(t->ttl, f, fl, NULL);
    if (dict_size(t->ttl) == 0) {
        dict_destroy(t->ttl, NULL);
        t->ttl = NULL;
    }
    return had;
}

/* Listpack to hashtable. A hash stored inline in its entry is then stored as
 * a pointer to the hashtable (same key and deadline). */
static void
hobj_convert(struct hobj *h)
{
    struct hpk *pk = h->pk.p;
    struct hht *t = rv_malloc(sizeof(*t));
    char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
    size_t off = 0;

    t->d = dict_create_kind(DICT_BYTES);
    t->ttl = NULL;
    dict_reserve(t->d, hpk_count(pk) / 2 + 1);
    while (off < hpk_end(pk)) {
        struct rv_str f, v;
        off = hpk_get(pk, off, fs, &f);
        off = hpk_get(pk, off, vs, &v);
        dict_put_bytes(t->d, f.p, f.len, v.p, v.len, NULL);
    }
    if (h->pk.ks != NULL) {
        struct rv_str key = ks_entry_key(h->pk.e);
        ks_set_ptr(h->pk.ks, key.p, key.len, KS_HASH, t, hht_free, ks_entry_expire(h->pk.e));
    } else {
        hpk_free(pk);
    }
    h->enc = HENC_HT;
    h->pk = (struct hpk_ref){ NULL, NULL, NULL };
    h->ht = t;
}

int
hobj_set(struct hobj *h, const char *f, size_t fl, const char *v, size_t vl,
         const struct hobj_lim *lim)
{
    bool created;
    if (h->enc == HENC_PK) {
        size_t off;
        if (fl > lim->max_value || vl > lim->max_value ||
            hpk_end(h->pk.p) + fl + vl > HPK_SAFE_BYTES) {
            hobj_convert(h);
        } else if ((off = hpk_find(h->pk.p, f, fl, 2)) != HPK_NONE) {
            hpk_replace(&h->pk, hpk_next(h->pk.p, off), v, vl);
            return 0;
        } else if (hpk_count(h->pk.p) / 2 + 1 > lim->max_entries) {
            hobj_convert(h);
        } else {
            hpk_append(&h->pk, f, fl);
            hpk_append(&h->pk, v, vl);
            return 1;
        }
    }
    dict_put_bytes(h->ht->d, f, fl, v, vl, &created);
    if (!created && h->ht->ttl != NULL) {
        hobj_ttl_clear(h, f, fl);   /* overwriting a field drops its TTL */
    }
    return created ? 1 : 0;
}

bool
hobj_get(const struct hobj *h, const char *f, size_t fl, char scratch[HPK_SCRATCH],
         struct rv_str *out)
{
    if (h->enc == HENC_PK) {
        size_t off = hpk_find(h->pk.p, f, fl, 2);
        if (off == HPK_NONE) {
            return false;
        }
        hpk_get(h->pk.p, hpk_next(h->pk.p, off), scratch, out);
        return true;
    } else {
        struct dict_entry *e = dict_find(h->ht->d, f, fl);
        if (e == NULL) {
            return false;
        }
        *out = dict_val_bytes(e);
        return true;
    }
}

bool
hobj_del(struct hobj *h, const char *f, size_t fl)
{
    if (h->enc == HENC_PK) {
        size_t off = hpk_find(h->pk.p, f, fl, 2);
        if (off == HPK_NONE) {
            return false;
        }
        hpk_delete(&h->pk, off, 2);
        return true;
    }
    if (!dict_delete(h->ht->d, f, fl, NULL)) {
        return false;
    }
    if (h->ht->ttl != NULL) {
        hobj_ttl_clear(h, f, fl);
    }
    return true;
}

typedef void hvisit_fn(void *arg, struct rv_str f, struct rv_str v);

struct hvisit_dict {
    hvisit_fn *fn;
    void *arg;
};

static void
hvisit_entry(void *arg, struct dict_entry *e)
{
    struct hvisit_dict *a = arg;
    a->fn(a->arg, dict_key(e), dict_val_bytes(e));
}

/* Every field/value pair, in storage order; fn must not modify h. */
static void
hobj_foreach(struct hobj *h, hvisit_fn *fn, void *arg)
{
    if (h->enc == HENC_PK) {
        char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
        size_t off = 0;
        while (off < hpk_end(h->pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h->pk.p, off, fs, &f);
            off = hpk_get(h->pk.p, off, vs, &v);
            fn(arg, f, v);
        }
    } else {
        struct hvisit_dict a = { fn, arg };
        dict_foreach(h->ht->d, hvisit_entry, &a);
    }
}

size_t
hobj_mem(const struct hobj *h)
{
    if (h->enc == HENC_PK) {
        return h->pk.e != NULL ? 0 : sizeof(*h) + hpk_bytes(h->pk.p);
    }
    return sizeof(*h->ht) + dict_mem(h->ht->d) + (h->ht->ttl != NULL ? dict_mem(h->ht->ttl) : 0);
}

static const char *
hash_encoding_op(const struct ks_entry *e)
{
    return ks_entry_inl(e) ? "listpack" : "hashtable";
}

/* Bytes outside the entry: none for the inline listpack. */
static size_t
hash_mem_op(const struct ks_entry *e)
{
    struct hobj h;
    if (ks_entry_inl(e)) {
        return 0;
    }
    hobj_bind(&h, NULL, (struct ks_entry *)(uintptr_t)e);
    return hobj_mem(&h);
}

static void *
hash_dup_op(const struct ks_entry *e)
{
    const struct hht *t = ks_entry_ptr(e);
    struct hht *c = rv_malloc(sizeof(*c));
    c->d = dict_dup(t->d);
    c->ttl = t->ttl != NULL ? dict_dup(t->ttl) : NULL;
    return c;
}

struct hemit {
    obj_emit_fn *fn;
    void *arg;
    struct rv_str key;
};

static void
hemit_pair(void *arg, struct dict_entry *e)
{
    struct obj_emitter *b = arg;
    obj_emit_arg(b, dict_key(e));
    obj_emit_arg(b, dict_val_bytes(e));
    obj_emit_elem(b);
}

static void
hemit_ttl(void *arg, struct dict_entry *e)
{
    struct hemit *x = arg;
    char ms[24];
    struct rv_str av[6] = {
        { "HPEXPIREAT", 10 }, x->key, { ms, resp_ll2str(ms, (int64_t)dict_val(e)) },
        { "FIELDS", 6 },      { "1", 1 }, dict_key(e),
    };
    x->fn(x->arg, 6, av);
}

/* HSET key f v ..., then HPEXPIREAT key <unix-ms> FIELDS 1 f per timed field. */
static void
hash_emit_op(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct hobj h;
    struct hemit x = { fn, arg, ks_entry_key(e) };
    struct obj_emitter b;

    hobj_bind(&h, NULL, (struct ks_entry *)(uintptr_t)e);
    obj_emit_init(&b, fn, arg, "HSET", x.key);
    if (h.enc == HENC_PK) {
        size_t off = 0;
        while (off < hpk_end(h.pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h.pk.p, off, obj_emit_scratch(&b), &f);
            obj_emit_arg(&b, f);
            off = hpk_get(h.pk.p, off, obj_emit_scratch(&b), &v);
            obj_emit_arg(&b, v);
            obj_emit_elem(&b);
        }
    } else {
        dict_foreach(h.ht->d, hemit_pair, &b);
    }
    obj_emit_flush(&b);
    if (hobj_ttl(&h) != NULL) {
        dict_foreach(h.ht->ttl, hemit_ttl, &x);
    }
}

const struct obj_ops obj_hash_ops = {
    .type_name = "hash",
    .encoding = hash_encoding_op,
    .mem = hash_mem_op,
    .dup = hash_dup_op,
    .free = hht_free,
    .emit = hash_emit_op,
};

/* --------------------------------------------------------------- commands */

static void
hash_lim(struct conn *c, struct hobj_lim *lim)
{
    const struct cfg *cfg = shard_cfg(c->shard);
    lim->max_entries = cfg->hash_max_listpack_entries > 0 ? (size_t)cfg->hash_max_listpack_entries : 0;
    lim->max_value = cfg->hash_max_listpack_value > 0 ? (size_t)cfg->hash_max_listpack_value : 0;
}

/* ------------------------------------------------ field expiration (7.4) */

/* Deletes every field of h whose deadline is <= now. */
struct reap_acc {
    int64_t now;
    struct rv_str *v;
    size_t n, cap;
};

static void
reap_collect(void *arg, struct dict_entry *e)
{
    struct reap_acc *a = arg;
    if ((int64_t)dict_val(e) <= a->now) {
        if (a->n == a->cap) {
            a->cap = a->cap ? a->cap * 2 : 8;
            a->v = rv_realloc(a->v, a->cap * sizeof(*a->v));
        }
        struct rv_str k = dict_key(e);
        char *copy = rv_malloc(k.len + 1);
        memcpy(copy, k.p, k.len);
        a->v[a->n].p = copy;
        a->v[a->n++].len = k.len;
    }
}

size_t
hobj_reap(struct hobj *h, int64_t now)
{
    struct reap_acc a = { now, NULL, 0, 0 };
    size_t i;

    if (hobj_ttl(h) == NULL) {
        return 0;
    }
    dict_foreach(h->ht->ttl, reap_collect, &a);
    for (i = 0; i < a.n; i++) {   /* names are copies: the deletes move entries */
        dict_delete(h->ht->d, a.v[i].p, a.v[i].len, NULL);
        if (h->ht->ttl != NULL) {
            hobj_ttl_clear(h, a.v[i].p, a.v[i].len);
        }
        rv_free((void *)a.v[i].p);
    }
    rv_free(a.v);
    return a.n;
}

void
hobj_set_deadline(struct hobj *h, const char *f, size_t fl, int64_t when)
{
    if (h->enc == HENC_PK) {
        hobj_convert(h);
    }
    if (h->ht->ttl == NULL) {
        h->ht->ttl = dict_create_kind(DICT_U64);
    }
    dict_set_val(dict_add(h->ht->ttl, f, fl, NULL), (uint64_t)when);
}

int64_t
hobj_field_deadline(struct hobj *h, const char *f, size_t fl)
{
    struct dict_entry *e;
    if (hobj_ttl(h) == NULL || (e = dict_find(h->ht->ttl, f, fl)) == NULL) {
        return -1;
    }
    return (int64_t)dict_val(e);
}

/* The shard's registry of hash keys that have timed fields, for the active
 * sweep. Entries go stale harmlessly: the sweep drops an entry whose key is
 * gone, is no longer a hash, or has no timed field left. */
struct hash_ttl_index {
    struct dict *keys;            /* key-only: key names */
    uint64_t cursor;              /* where the sweep goes on */
};

void
hash_ttl_index_destroy(struct hash_ttl_index *x)
{
    if (x == NULL) {
        return;
    }
    dict_destroy(x->keys, NULL);
    rv_free(x);
}

static void
hfe_register(struct shard *s, struct rv_str key)
{
    struct hash_ttl_index **xp = shard_hash_ttl(s);
    if (*xp == NULL) {
        *xp = rv_calloc(1, sizeof(**xp));
        (*xp)->keys = dict_create_kind(DICT_KEYONLY);
    }
    dict_add((*xp)->keys, key.p, key.len, NULL);
}

/* Lazy reclaim on access: true when the key was deleted (its last field expired). */
static bool
hash_reap_key(struct ks *ks, struct rv_str key, struct hobj *h, int64_t now)
{
    if (hobj_ttl(h) == NULL || hobj_reap(h, now) == 0) {
        return false;
    }
    if (hobj_len(h) == 0) {
        ks_delete(ks, key.p, key.len);
        return true;
    }
    return false;
}

struct hfe_batch {
    struct rv_str v[32];
    size_t n;
};

static void
hfe_collect(void *arg, struct dict_entry *e)
{
    struct hfe_batch *b = arg;
    if (b->n < sizeof(b->v) / sizeof(b->v[0])) {
        b->v[b->n++] = dict_key(e);
    }
}

void
hash_active_expire(struct shard *s, int64_t now, uint64_t budget_us)
{
    struct ks *ks = shard_ks(s);
    struct hash_ttl_index *x = *shard_hash_ttl(s);
    uint64_t start = clock_mono_us();
    size_t rounds = 0;

    if (x == NULL || dict_size(x->keys) == 0 || budget_us == 0) {
        return;
    }
    do {
        struct hfe_batch b = { .n = 0 };
        char *names[32];
        size_t lens[32], i;

        x->cursor = dict_scan(x->keys, x->cursor, 4, hfe_collect, &b);
        for (i = 0; i < b.n; i++) {   /* copy: deletes below move the entries */
            lens[i] = b.v[i].len;
            names[i] = rv_malloc(lens[i]);
            memcpy(names[i], b.v[i].p, lens[i]);
        }
        for (i = 0; i < b.n; i++) {
            struct rv_str key = { names[i], lens[i] };
            struct ks_entry *e = ks_lookup(ks, key.p, key.len, now);
            bool keep = false;
            if (e != NULL && ks_entry_type(e) == KS_HASH) {
                struct hobj h;
                hobj_bind(&h, ks, e);
                keep = !hash_reap_key(ks, key, &h, now) && hobj_ttl(&h) != NULL;
            }
            if (!keep) {
                dict_delete(x->keys, names[i], lens[i], NULL);
            }
            rv_free(names[i]);
        }
        rounds++;
    } while (x->cursor != 0 && clock_mono_us() - start < budget_us && rounds < 256);
}

/* Read lookup with hit/miss stats. NULL when missing or of another type; in
 * the latter case *err is set and WRONGTYPE replied. */
static struct hobj *
hash_read(struct conn *c, struct rv_str key, bool *err, struct hobj *h)
{
    struct ks_entry *e = ks_lookup(conn_ks(c), key.p, key.len, conn_now_ms(c));
    struct shard_stats *st = shard_stats(c->shard);

    *err = false;
    if (e == NULL) {
        st->keyspace_misses++;
        return NULL;
    }
    if (ks_entry_type(e) != KS_HASH) {
        st->keyspace_hits++;
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    hobj_bind(h, conn_ks(c), e);
    if (hash_reap_key(conn_ks(c), key, h, conn_now_ms(c))) {
        st->keyspace_misses++;
        return NULL;
    }
    st->keyspace_hits++;
    return h;
}

/* Write lookup; with create, a missing key gets an empty hash (the caller
 * must then add at least one field). The hash is bound to *h. */
static struct hobj *
hash_write(struct conn *c, struct rv_str key, bool create, bool *err, struct hobj *h)
{
    static const uint8_t empty[HPK_HDR] = { 0 };
    struct ks *ks = conn_ks(c);
    struct ks_entry *e = ks_lookup(ks, key.p, key.len, conn_now_ms(c));

    *err = false;
    if (e != NULL) {
        if (ks_entry_type(e) != KS_HASH) {
            reply_err(c, RV_ERR_WRONGTYPE);
            *err = true;
            return NULL;
        }
        hobj_bind(h, ks, e);
        if (!hash_reap_key(ks, key, h, conn_now_ms(c))) {
            return h;
        }
    }
    if (!create) {
        return NULL;
    }
    /* New hashes start as an empty listpack inline in the entry. */
    e = ks_set_inl(ks, key.p, key.len, KS_HASH, empty, sizeof(empty), KS_NO_EXPIRE);
    hobj_bind(h, ks, e);
    return h;
}

static void
hash_drop_if_empty(struct conn *c, struct hobj *h, struct rv_str key)
{
    if (hobj_len(h) == 0) {
        ks_delete(conn_ks(c), key.p, key.len);
    }
}

static void
hset_generic(struct conn *c, int argc, struct rv_str *argv, const char *name, bool ok_reply)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    bool err;
    int64_t created = 0;

    if (argc % 2 != 0) {
        reply_err_arity(c, name);
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    hash_lim(c, &lim);
    for (int i = 2; i < argc; i += 2) {
        created += hobj_set(h, argv[i].p, argv[i].len, argv[i + 1].p, argv[i + 1].len, &lim);
    }
    if (ok_reply) {
        reply_ok(c);
    } else {
        reply_int(c, created);
    }
}

CMD_HANDLER(hset)
{
    hset_generic(c, argc, argv, "hset", false);
}

CMD_HANDLER(hmset)
{
    hset_generic(c, argc, argv, "hmset", true);
}

CMD_HANDLER(hsetnx)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL && err) {
        return;
    }
    if (h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v)) {
        reply_int(c, 0);
        return;
    }
    if (h == NULL) {
        h = hash_write(c, argv[1], true, &err, &hb);
    }
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, argv[3].p, argv[3].len, &lim);
    reply_int(c, 1);
}

CMD_HANDLER(hget)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            reply_null(c);
        }
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v)) {
        reply_bulk(c, v.p, v.len);
    } else {
        reply_null(c);
    }
}

CMD_HANDLER(hmget)
{
    struct hobj hb, *h;
    bool err;

    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        struct rv_str v;
        char scratch[HPK_SCRATCH];
        if (h != NULL && hobj_get(h, argv[i].p, argv[i].len, scratch, &v)) {
            reply_bulk(c, v.p, v.len);
        } else {
            reply_null(c);
        }
    }
}

enum { HOUT_KEYS = 1, HOUT_VALS = 2 };

struct hout {
    struct conn *c;
    int what;
};

static void
hout_visit(void *arg, struct rv_str f, struct rv_str v)
{
    struct hout *o = arg;
    if (o->what & HOUT_KEYS) {
        reply_bulk(o->c, f.p, f.len);
    }
    if (o->what & HOUT_VALS) {
        reply_bulk(o->c, v.p, v.len);
    }
}

static void
hgetall_generic(struct conn *c, struct rv_str key, int what)
{
    struct hout o = { c, what };
    struct hobj hb, *h;
    bool err;
    size_t n;

    if ((h = hash_read(c, key, &err, &hb)) == NULL && err) {
        return;
    }
    n = h != NULL ? hobj_len(h) : 0;
    if (what == (HOUT_KEYS | HOUT_VALS)) {
        reply_map(c, n);
    } else {
        reply_array(c, n);
    }
    if (h != NULL) {
        hobj_foreach(h, hout_visit, &o);
    }
}

CMD_HANDLER(hgetall)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_KEYS | HOUT_VALS);
}

CMD_HANDLER(hkeys)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_KEYS);
}

CMD_HANDLER(hvals)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_VALS);
}

CMD_HANDLER(hdel)
{
    struct hobj hb, *h;
    bool err;
    int64_t n = 0;

    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL) {
        if (!err) {
            reply_int(c, 0);
        }
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += hobj_del(h, argv[i].p, argv[i].len);
        if (hobj_len(h) == 0) {
            break;
        }
    }
    hash_drop_if_empty(c, h, argv[1]);
    reply_int(c, n);
}

CMD_HANDLER(hlen)
{
    struct hobj hb, *h;
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c, h != NULL ? (int64_t)hobj_len(h) : 0);
}

CMD_HANDLER(hexists)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c, h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v));
}

CMD_HANDLER(hstrlen)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c, h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v) ? (int64_t)v.len : 0);
}

CMD_HANDLER(hincrby)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH], out[24];
    int64_t incr, cur = 0;
    bool err;

    (void)argc;
    if (!cmd_arg_int(argv[3], &incr)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v) && !cmd_arg_int(v, &cur)) {
        reply_errf(c, "ERR hash value is not an integer");
        return;
    }
    if ((incr < 0 && cur < INT64_MIN - incr) || (incr > 0 && cur > INT64_MAX - incr)) {
        hash_drop_if_empty(c, h, argv[1]);
        reply_err(c, RV_ERR_OVERFLOW);
        return;
    }
    cur += incr;
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, out, resp_ll2str(out, cur), &lim);
    reply_int(c, cur);
}

CMD_HANDLER(hincrbyfloat)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH], out[RESP_LD_MAX];
    long double incr, cur = 0;
    size_t n;
    bool err;

    (void)argc;
    if (!cmd_arg_double(argv[3], &incr)) {
        reply_err(c, RV_ERR_NOTFLOAT);
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        reply_errf(c, "ERR value is NaN or Infinity");
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v) && !cmd_arg_double(v, &cur)) {
        reply_errf(c, "ERR hash value is not a float");
        return;
    }
    cur += incr;
    if (isnan(cur) || isinf(cur)) {
        hash_drop_if_empty(c, h, argv[1]);
        reply_err(c, RV_ERR_NANINF);
        return;
    }
    n = resp_fmt_ldouble(out, sizeof(out), cur);
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, out, n, &lim);
    reply_bulk(c, out, n);
}

/* ------------------------------------------------------------- HRANDFIELD */

uint64_t
hash_rng_next(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t
hash_rng_seed(struct conn *c)
{
    return clock_mono_us() ^ (shard_stats(c->shard)->commands << 24) ^ ((uint64_t)c->id << 44);
}

size_t
hash_rng_below(uint64_t *x, size_t n)
{
    return (size_t)(((unsigned __int128)hash_rng_next(x) * n) >> 64);
}

/* An item is an element offset (packed) or a dict entry pointer. */
static void
hr_emit(struct conn *c, const struct hobj *h, uintptr_t item, bool withvalues)
{
    struct rv_str f, v;
    char fs[HPK_SCRATCH], vs[HPK_SCRATCH];

    if (h->enc == HENC_PK) {
        size_t off = hpk_get(h->pk.p, (size_t)item, fs, &f);
        if (withvalues) {
            hpk_get(h->pk.p, off, vs, &v);
        }
    } else {
        const struct dict_entry *e = (const struct dict_entry *)item;
        f = dict_key(e);
        if (withvalues) {
            v = dict_val_bytes(e);
        }
    }
    if (withvalues && c->proto >= 3) {
        reply_array(c, 2);
    }
    reply_bulk(c, f.p, f.len);
    if (withvalues) {
        reply_bulk(c, v.p, v.len);
    }
}

struct items {
    uintptr_t *v;
    size_t n;
};

static void
items_add_entry(void *arg, struct dict_entry *e)
{
    struct items *it = arg;
    it->v[it->n++] = (uintptr_t)e;
}

/* Every field of h as items (caller frees it.v). */
static void
hr_items(struct hobj *h, struct items *it)
{
    size_t n = hobj_len(h);
    it->v = rv_malloc((n ? n : 1) * sizeof(*it->v));
    it->n = 0;
    if (h->enc == HENC_PK) {
        size_t off = 0;
        while (off < hpk_end(h->pk.p)) {
            it->v[it->n++] = off;
            off = hpk_next(h->pk.p, hpk_next(h->pk.p, off));
        }
    } else {
        dict_foreach(h->ht->d, items_add_entry, it);
    }
}

static void
hrandfield_count(struct conn *c, struct hobj *h, int64_t count, bool withvalues)
{
    size_t size = hobj_len(h), n;
    uint64_t rs = hash_rng_seed(c);
    struct items it;

    if (count == 0) {
        reply_array(c, 0);
        return;
    }
    if (count < 0) {
        n = (size_t)(-count);
        reply_array(c, withvalues && c->proto < 3 ? n * 2 : n);
        if (h->enc == HENC_HT) {
            for (size_t i = 0; i < n; i++) {
                hr_emit(c, h, (uintptr_t)dict_random(h->ht->d, hash_rng_next(&rs)), withvalues);
            }
            return;
        }
        hr_items(h, &it);
        for (size_t i = 0; i < n; i++) {
            hr_emit(c, h, it.v[hash_rng_below(&rs, it.n)], withvalues);
        }
        rv_free(it.v);
        return;
    }
    n = (size_t)count < size ? (size_t)count : size;
    reply_array(c, withvalues && c->proto < 3 ? n * 2 : n);
    if (h->enc == HENC_HT && n * 3 <= size) {
        /* Few of many: random picks, duplicates filtered by entry address. */
        struct dict *seen = dict_create_kind(DICT_KEYONLY);
        size_t got = 0;
        while (got < n) {
            struct dict_entry *e = dict_random(h->ht->d, hash_rng_next(&rs));
            bool created;
            dict_add(seen, (const char *)&e, sizeof(e), &created);
            if (created) {
                hr_emit(c, h, (uintptr_t)e, withvalues);
                got++;
            }
        }
        dict_destroy(seen, NULL);
        return;
    }
    /* Partial Fisher-Yates over all items (all of them when n == size). */
    hr_items(h, &it);
    for (size_t i = 0; i < n; i++) {
        if (n < size) {
            size_t j = i + hash_rng_below(&rs, it.n - i);
            uintptr_t t = it.v[i];
            it.v[i] = it.v[j];
            it.v[j] = t;
        }
        hr_emit(c, h, it.v[i], withvalues);
    }
    rv_free(it.v);
}

CMD_HANDLER(hrandfield)
{
    struct hobj hb, *h;
    int64_t count = 0;
    bool withvalues = false, err;

    if (argc >= 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count == INT64_MIN) {
            reply_errf(c, "ERR value is out of range, value must between -9223372036854775807 and "
                          "9223372036854775807");
            return;
        }
        if (argc == 4 && cmd_arg_is(argv[3], "withvalues")) {
            withvalues = true;
        } else if (argc >= 4) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (withvalues && count < -(INT64_MAX / 2)) {
            reply_errf(c, "ERR value is out of range");
            return;
        }
    }
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            if (argc >= 3) {
                reply_array(c, 0);
            } else {
                reply_null(c);
            }
        }
        return;
    }
    if (argc >= 3) {
        hrandfield_count(c, h, count, withvalues);
        return;
    }
    if (h->enc == HENC_PK) {
        uint64_t rs = hash_rng_seed(c);
        size_t k = hash_rng_below(&rs, hobj_len(h)), off = 0;
        for (size_t i = 0; i < k; i++) {
            off = hpk_next(h->pk.p, hpk_next(h->pk.p, off));
        }
        hr_emit(c, h, off, false);
    } else {
        uint64_t rs = hash_rng_seed(c);
        hr_emit(c, h, (uintptr_t)dict_random(h->ht->d, hash_rng_next(&rs)), false);
    }
}


struct hscan_ctx {
    const char *pat;
    size_t plen;
    struct dict_entry **v;
    size_t n, cap;
};

static void
hscan_collect(void *arg, struct dict_entry *e)
{
    struct hscan_ctx *s = arg;
    struct rv_str k;
    if (s->pat != NULL) {
        k = dict_key(e);
        if (!glob_match(s->pat, s->plen, k.p, k.len, false)) {
            return;
        }
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = e;
}

CMD_HANDLER(hscan)
{
    struct hscan_ctx s = { 0 };
    struct hobj hb, *h;
    uint64_t cursor, next = 0;
    int64_t count = 10;
    bool novalues = false, err;

    if (!cmd_arg_cursor(argv[2], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            reply_array(c, 2);
            reply_bulk(c, "0", 1);
            reply_array(c, 0);
        }
        return;
    }
    struct scan_opts o;
    if (!cmd_parse_scan_opts(c, argc, argv, 3, SCAN_ALLOW_NOVALUES, &o)) {
        return;
    }
    s.pat = o.match.p;
    s.plen = o.match.len;
    novalues = o.novalues;
    count = o.count;
    if (h->enc == HENC_PK) {
        /* Small encodings are returned whole in one call, cursor 0 (as Redis). */
        char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
        size_t off = 0, hd, n = 0;
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        hd = reply_defer(c);
        while (off < hpk_end(h->pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h->pk.p, off, fs, &f);
            off = hpk_get(h->pk.p, off, vs, &v);
            if (s.pat != NULL && !glob_match(s.pat, s.plen, f.p, f.len, false)) {
                continue;
            }
            reply_bulk(c, f.p, f.len);
            n++;
            if (!novalues) {
                reply_bulk(c, v.p, v.len);
                n++;
            }
        }
        reply_defer_array(c, hd, n);
        return;
    }
    next = dict_scan(h->ht->d, cursor, (size_t)count, hscan_collect, &s);
    reply_array(c, 2);
    reply_bulk_u64(c, next);
    reply_array(c, novalues ? s.n : s.n * 2);
    for (size_t i = 0; i < s.n; i++) {
        struct rv_str f = dict_key(s.v[i]);
        reply_bulk(c, f.p, f.len);
        if (!novalues) {
            struct rv_str v = dict_val_bytes(s.v[i]);
            reply_bulk(c, v.p, v.len);
        }
    }
    rv_free(s.v);
}

/* ------------------------------------------- HEXPIRE family, HTTL, HPERSIST */

#define HFE_MAX_MS ((int64_t)281474976710655)   /* 2^48 - 1, as Redis 7.4 */

/* Parses "FIELDS numfields field ..." at argv[at]; the fields start at *first.
 * false once an error is replied. */
static bool
hfe_parse_fields(struct conn *c, int argc, struct rv_str *argv, int at, int *first, int64_t *n)
{
    if (at >= argc || argv[at].len != 6 || strncasecmp(argv[at].p, "FIELDS", 6) != 0) {
        reply_errf(c, "ERR Mandatory argument FIELDS is missing or not at the right position");
        return false;
    }
    if (at + 1 >= argc || !ks_str_parse_int(argv[at + 1].p, argv[at + 1].len, n)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (*n <= 0) {
        reply_errf(c, "ERR Parameter `numFields` should be greater than 0");
        return false;
    }
    if (*n != argc - at - 2) {
        reply_errf(c, "ERR The `numfields` parameter must match the number of arguments");
        return false;
    }
    *first = at + 2;
    return true;
}

enum hfe_cond { HFE_NONE, HFE_NX, HFE_XX, HFE_GT, HFE_LT };

/* unit_ms: 1000 for seconds, 1 for ms; absolute: *AT forms. */
static void
hexpire_generic(struct conn *c, int argc, struct rv_str *argv, const char *name, int64_t unit_ms,
                bool absolute)
{
    int64_t t, when, n, now = conn_now_ms(c);
    enum hfe_cond cond = HFE_NONE;
    int at = 3, first;
    struct hobj hb, *h;
    bool err;

    if (!ks_str_parse_int(argv[2].p, argv[2].len, &t)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (at < argc && argv[at].len == 2) {
        static const char *names[] = { "NX", "XX", "GT", "LT" };
        for (int i = 0; i < 4; i++) {
            if (strncasecmp(argv[at].p, names[i], 2) == 0) {
                cond = (enum hfe_cond)(i + 1);
                at++;
                break;
            }
        }
    }
    if (!hfe_parse_fields(c, argc, argv, at, &first, &n)) {
        return;
    }
    if (t < 0) {
        reply_errf(c, "ERR invalid expire time, must be >= 0");
        return;
    }
    if (t > INT64_MAX / unit_ms || (!absolute && t * unit_ms > INT64_MAX - now)) {
        reply_errf(c, "ERR invalid expire time in '%s' command", name);
        return;
    }
    when = t * unit_ms + (absolute ? 0 : now);
    if (when > HFE_MAX_MS) {
        reply_errf(c, "ERR invalid expire time, must be < %lld msec", (long long)HFE_MAX_MS);
        return;
    }
    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL) {
        if (!err) {
            reply_array(c, (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                reply_int(c, -2);
            }
        }
        return;
    }
    if (h->enc == HENC_PK) {
        hobj_convert(h);   /* timed fields live in the hashtable encoding only */
    }
    reply_array(c, (size_t)n);
    for (int i = first; i < argc; i++) {
        int64_t cur;
        bool ok;
        if (dict_find(h->ht->d, argv[i].p, argv[i].len) == NULL) {
            reply_int(c, -2);
            continue;
        }
        cur = hobj_field_deadline(h, argv[i].p, argv[i].len);
        switch (cond) {
        case HFE_NX: ok = cur < 0; break;
        case HFE_XX: ok = cur >= 0; break;
        case HFE_GT: ok = cur >= 0 && when > cur; break;
        case HFE_LT: ok = cur < 0 || when < cur; break;
        default: ok = true; break;
        }
        if (!ok) {
            reply_int(c, 0);
        } else if (when <= now) {
            hobj_del(h, argv[i].p, argv[i].len);
            reply_int(c, 2);
        } else {
            if (hobj_ttl(h) == NULL) {
                hfe_register(c->shard, argv[1]);
            }
            hobj_set_deadline(h, argv[i].p, argv[i].len, when);
            reply_int(c, 1);
        }
    }
    hash_drop_if_empty(c, h, argv[1]);
}

CMD_HANDLER(hexpire) { hexpire_generic(c, argc, argv, "hexpire", 1000, false); }
CMD_HANDLER(hpexpire) { hexpire_generic(c, argc, argv, "hpexpire", 1, false); }
CMD_HANDLER(hexpireat) { hexpire_generic(c, argc, argv, "hexpireat", 1000, true); }
CMD_HANDLER(hpexpireat) { hexpire_generic(c, argc, argv, "hpexpireat", 1, true); }

enum hfe_what { HFE_TTL_S, HFE_TTL_MS, HFE_AT_S, HFE_AT_MS, HFE_PERSIST };

static void
httl_generic(struct conn *c, int argc, struct rv_str *argv, enum hfe_what what)
{
    int64_t n, now = conn_now_ms(c);
    struct hobj hb, *h;
    int first;
    bool err;

    if (!hfe_parse_fields(c, argc, argv, 2, &first, &n)) {
        return;
    }
    h = what == HFE_PERSIST ? hash_write(c, argv[1], false, &err, &hb) : hash_read(c, argv[1], &err, &hb);
    if (h == NULL && err) {
        return;
    }
    reply_array(c, (size_t)n);
    for (int i = first; i < argc; i++) {
        char scratch[HPK_SCRATCH];
        struct rv_str v;
        int64_t d;
        if (h == NULL || !hobj_get(h, argv[i].p, argv[i].len, scratch, &v)) {
            reply_int(c, -2);
            continue;
        }
        if ((d = hobj_field_deadline(h, argv[i].p, argv[i].len)) < 0) {
            reply_int(c, -1);
            continue;
        }
        switch (what) {
        case HFE_TTL_S: reply_int(c, (d - now + 500) / 1000); break;
        case HFE_TTL_MS: reply_int(c, d - now); break;
        case HFE_AT_S: reply_int(c, d / 1000); break;
        case HFE_AT_MS: reply_int(c, d); break;
        default:
            hobj_ttl_clear(h, argv[i].p, argv[i].len);
            reply_int(c, 1);
            break;
        }
    }
}

CMD_HANDLER(httl) { httl_generic(c, argc, argv, HFE_TTL_S); }
CMD_HANDLER(hpttl) { httl_generic(c, argc, argv, HFE_TTL_MS); }
CMD_HANDLER(hexpiretime) { httl_generic(c, argc, argv, HFE_AT_S); }
CMD_HANDLER(hpexpiretime) { httl_generic(c, argc, argv, HFE_AT_MS); }
CMD_HANDLER(hpersist) { httl_generic(c, argc, argv, HFE_PERSIST); }
