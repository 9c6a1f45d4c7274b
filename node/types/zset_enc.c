/* node/types/zset_enc.c: packed and B+tree sorted-set encodings, their obj_ops
 * and the range predicates (see zset_enc.h). */
#include "node/types/zset_enc.h"

#include "base/mem.h"
#include "base/varint.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"

#include <math.h>
#include <string.h>

enum { ZS_PACKED = 0, ZS_TREE = 1 };

/* Leaves split once their entries pass this many bytes; inner fan-out. */
#define ZT_LEAF_MAX 1024u
#define ZT_FAN 32
#define ZT_MAXH 16
/* A leaf this empty is merged into a neighbour when the two fit. */
#define ZT_LEAF_LOW (ZT_LEAF_MAX / 4)

/* Packed buffer: header then entries. The header is bytes (no alignment):
 * the buffer may live inline in a keyspace entry at any address. */
struct zpk {
    unsigned char n_[4];    /* entries, LE */
    unsigned char used_[4]; /* bytes of data in use, LE */
    unsigned char data[];
};

static inline uint32_t
zpk_u32(const unsigned char b[4])
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline void
zpk_put32(unsigned char b[4], uint32_t v)
{
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}

#define ZN(pk) zpk_u32((pk)->n_)
#define ZUSED(pk) zpk_u32((pk)->used_)

struct zt_leaf {
    uint32_t n;
    uint32_t used;
    unsigned char data[];
};

/* Separator: <= every key of its child, > every key of the child before. */
struct zt_key {
    double score;
    uint32_t len;
    char m[];
};

struct zt_inner {
    uint32_t n;
    uint64_t cnt[ZT_FAN + 1];
    void *kid[ZT_FAN + 1];
    struct zt_key *sep[ZT_FAN + 1]; /* sep[0] unused (NULL) */
};

struct ztree {
    void *root;
    int height; /* inner levels above the leaves; 0: root is a leaf */
    size_t n;
    struct dict *d; /* member -> score */
};

struct zkey {
    double s;
    const char *m;
    size_t ml;
};

/* ------------------------------------------------------------------ entries */

#define INT_SCORE_MAX 9007199254740992.0 /* 2^53 */

/* Packed sets store -0 as 0 (as Redis's listpack does); tree leaves keep it. */
static inline bool
score_is_small_int(double s, int64_t *iv, bool keep_nz)
{
    if (!(s > -INT_SCORE_MAX && s < INT_SCORE_MAX) || s != floor(s) ||
        (keep_nz && s == 0 && signbit(s))) {
        return false;
    }
    *iv = (int64_t)s;
    return true;
}

static inline size_t
score_len(double s, bool keep_nz)
{
    int64_t iv;
    if (score_is_small_int(s, &iv, keep_nz)) {
        uint64_t zz = ((uint64_t)iv << 1) ^ (uint64_t)(iv >> 63);
        return varint_len(zz << 1);
    }
    return 1 + sizeof(double);
}

static inline size_t
ent_len(size_t ml, double s, bool keep_nz)
{
    return varint_len(ml) + ml + score_len(s, keep_nz);
}

static size_t
ent_put(unsigned char *p, const char *m, size_t ml, double s, bool keep_nz)
{
    size_t n = (size_t)(varint_put(p, ml) - p);
    int64_t iv;
    memcpy(p + n, m, ml);
    n += ml;
    if (score_is_small_int(s, &iv, keep_nz)) {
        uint64_t zz = ((uint64_t)iv << 1) ^ (uint64_t)(iv >> 63);
        n = (size_t)(varint_put(p + n, zz << 1) - p);
    } else {
        p[n++] = 1;
        memcpy(p + n, &s, sizeof(s));
        n += sizeof(s);
    }
    return n;
}

/* Decode the entry at p; returns its size. */
static inline size_t
ent_get(const unsigned char *p, const char **m, size_t *ml, double *s)
{
    size_t len, x;
    size_t n = (size_t)(varint_get(p, &len) - p);
    *m = (const char *)p + n;
    *ml = len;
    n += len;
    if (p[n] == 1) {
        memcpy(s, p + n + 1, sizeof(*s));
        return n + 1 + sizeof(*s);
    }
    n = (size_t)(varint_get(p + n, &x) - p);
    x >>= 1;
    *s = (double)(int64_t)((x >> 1) ^ (~(x & 1) + 1));
    return n;
}

static inline int
key_cmp(double s1, const char *m1, size_t l1, double s2, const char *m2, size_t l2)
{
    if (s1 < s2) {
        return -1;
    }
    if (s1 > s2) {
        return 1;
    }
    size_t l = l1 < l2 ? l1 : l2;
    int r = l ? memcmp(m1, m2, l) : 0;
    if (r != 0) {
        return r;
    }
    return l1 < l2 ? -1 : l1 > l2;
}

/* Segment scan: index and offset of the first entry for which pred is true. */
static uint32_t
seg_lower(const unsigned char *d, uint32_t n, zset_pred_fn *pred, const void *arg, uint32_t *off)
{
    uint32_t o = 0, i;
    for (i = 0; i < n; i++) {
        const char *m;
        size_t ml;
        double s;
        size_t sz = ent_get(d + o, &m, &ml, &s);
        if (pred(arg, s, m, ml)) {
            break;
        }
        o += (uint32_t)sz;
    }
    *off = o;
    return i;
}

/* Offset of entry i (i <= n). */
static uint32_t
seg_off(const unsigned char *d, uint32_t i)
{
    uint32_t o = 0;
    while (i--) {
        const char *m;
        size_t ml;
        double s;
        o += (uint32_t)ent_get(d + o, &m, &ml, &s);
    }
    return o;
}

static bool
pred_ge_key(const void *arg, double s, const char *m, size_t ml)
{
    const struct zkey *k = arg;
    return key_cmp(s, m, ml, k->s, k->m, k->ml) >= 0;
}

static bool
pred_gt_key(const void *arg, double s, const char *m, size_t ml)
{
    const struct zkey *k = arg;
    return key_cmp(s, m, ml, k->s, k->m, k->ml) > 0;
}

/* ------------------------------------------------------------------ packed */

static struct zpk *
pk_reserve(struct zpk *pk, size_t need)
{
    size_t want = sizeof(*pk) + need;
    if (pk == NULL) {
        pk = rv_malloc(want);
        zpk_put32(pk->n_, 0);
        zpk_put32(pk->used_, 0);
        return pk;
    }
    if (rv_usable_size(pk) < want) {
        pk = rv_realloc(pk, want);
    }
    return pk;
}

/* Room for need data bytes in z's packed buffer: exact when it lives inline
 * in a keyspace entry (the entry may move), with slack on the heap. */
static struct zpk *
pk_grow(struct zset *z, size_t need)
{
    if (z->ks != NULL) {
        z->p = ks_inl_resize(z->ks, &z->e, sizeof(struct zpk) + need);
    } else {
        z->p = pk_reserve(z->p, need);
    }
    return z->p;
}

/* Give back slack after shrinking: only when a size class or more is free. */
static void *
fit(void *p, size_t want)
{
    size_t have = rv_usable_size(p);
    if (have > want + 32 && have > want + want / 4) {
        return rv_realloc(p, want);
    }
    return p;
}

/* Find member by linear scan; returns its offset or -1. */
static int64_t
pk_find(const struct zpk *pk, const char *m, size_t ml, double *score, uint32_t *idx)
{
    uint32_t o = 0;
    for (uint32_t i = 0, n = ZN(pk); i < n; i++) {
        const char *em;
        size_t el;
        double s;
        size_t sz = ent_get(pk->data + o, &em, &el, &s);
        if (el == ml && (ml == 0 || memcmp(em, m, ml) == 0)) {
            *score = s;
            if (idx) {
                *idx = i;
            }
            return o;
        }
        o += (uint32_t)sz;
    }
    return -1;
}

static void
pk_insert(struct zset *z, const char *m, size_t ml, double s)
{
    struct zpk *pk = z->p;
    struct zkey k = { s, m, ml };
    uint32_t off, used = ZUSED(pk);
    size_t esz = ent_len(ml, s, false);

    seg_lower(pk->data, ZN(pk), pred_gt_key, &k, &off);
    pk = pk_grow(z, used + esz);
    memmove(pk->data + off + esz, pk->data + off, used - off);
    ent_put(pk->data + off, m, ml, s, false);
    zpk_put32(pk->used_, used + (uint32_t)esz);
    zpk_put32(pk->n_, ZN(pk) + 1);
}

static void
pk_remove_at(struct zset *z, uint32_t off, uint32_t sz, uint32_t cnt)
{
    struct zpk *pk = z->p;
    uint32_t used = ZUSED(pk);
    memmove(pk->data + off, pk->data + off + sz, used - off - sz);
    used -= sz;
    zpk_put32(pk->used_, used);
    zpk_put32(pk->n_, ZN(pk) - cnt);
    if (z->ks != NULL) {
        z->p = ks_inl_resize(z->ks, &z->e, sizeof(*pk) + used);
    } else {
        z->p = fit(pk, sizeof(*pk) + used);
    }
}

/* ------------------------------------------------------------------ tree */

static struct zt_key *
zt_key_make(const char *m, size_t ml, double s)
{
    struct zt_key *k = rv_malloc(sizeof(*k) + ml);
    k->score = s;
    k->len = (uint32_t)ml;
    memcpy(k->m, m, ml);
    return k;
}

/* Child of inner node x that holds (or would hold) key k. */
static uint32_t
zt_child(const struct zt_inner *x, const struct zkey *k)
{
    uint32_t lo = 1, hi = x->n; /* first sep > k, among 1..n-1 */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        const struct zt_key *sp = x->sep[mid];
        if (key_cmp(sp->score, sp->m, sp->len, k->s, k->m, k->ml) <= 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo - 1;
}

static struct zt_leaf *
zt_leaf_new(size_t bytes)
{
    struct zt_leaf *l = rv_malloc(sizeof(*l) + bytes);
    l->n = 0;
    l->used = 0;
    return l;
}

static void
zt_inner_put(struct zt_inner *x, uint32_t at, void *kid, uint64_t cnt, struct zt_key *sep)
{
    memmove(&x->kid[at + 1], &x->kid[at], (x->n - at) * sizeof(x->kid[0]));
    memmove(&x->cnt[at + 1], &x->cnt[at], (x->n - at) * sizeof(x->cnt[0]));
    memmove(&x->sep[at + 1], &x->sep[at], (x->n - at) * sizeof(x->sep[0]));
    x->kid[at] = kid;
    x->cnt[at] = cnt;
    x->sep[at] = sep;
    x->n++;
}

static void
zt_inner_del(struct zt_inner *x, uint32_t at)
{
    rv_free(x->sep[at]);
    memmove(&x->kid[at], &x->kid[at + 1], (x->n - at - 1) * sizeof(x->kid[0]));
    memmove(&x->cnt[at], &x->cnt[at + 1], (x->n - at - 1) * sizeof(x->cnt[0]));
    memmove(&x->sep[at], &x->sep[at + 1], (x->n - at - 1) * sizeof(x->sep[0]));
    x->n--;
    if (at == 0 && x->n > 0) {
        rv_free(x->sep[0]); /* the first child needs no lower bound */
        x->sep[0] = NULL;
    }
}

struct zt_split {
    void *right;
    uint64_t rcnt;
    struct zt_key *sep;
};

/* Insert into the subtree at node (height h); returns the node (leaves may
 * move). A split fills *sp. */
static void *
zt_ins(void *node, int h, const struct zkey *k, struct zt_split *sp)
{
    if (h == 0) {
        struct zt_leaf *l = node;
        uint32_t off;
        uint32_t at = seg_lower(l->data, l->n, pred_gt_key, k, &off);
        size_t esz = ent_len(k->ml, k->s, true);
        bool append = at == l->n;

        if (rv_usable_size(l) < sizeof(*l) + l->used + esz) {
            l = rv_realloc(l, sizeof(*l) + l->used + esz);
        }
        memmove(l->data + off + esz, l->data + off, l->used - off);
        ent_put(l->data + off, k->m, k->ml, k->s, true);
        l->used += (uint32_t)esz;
        l->n++;
        sp->right = NULL;
        if (l->used > ZT_LEAF_MAX && l->n >= 2) {
            /* Split by bytes; appends move only the new entry so sorted loads fill leaves. */
            uint32_t i = 0, o = 0;
            if (append) {
                i = l->n - 1;
                o = off;
            } else {
                while (o < l->used / 2) {
                    const char *m;
                    size_t ml;
                    double s;
                    o += (uint32_t)ent_get(l->data + o, &m, &ml, &s);
                    i++;
                }
                if (i == l->n) {
                    i--;
                    o = seg_off(l->data, i);
                }
            }
            struct zt_leaf *r = zt_leaf_new(l->used - o);
            memcpy(r->data, l->data + o, l->used - o);
            r->used = l->used - o;
            r->n = l->n - i;
            l->used = o;
            l->n = i;
            l = fit(l, sizeof(*l) + l->used);
            const char *m;
            size_t ml;
            double s;
            ent_get(r->data, &m, &ml, &s);
            sp->right = r;
            sp->rcnt = r->n;
            sp->sep = zt_key_make(m, ml, s);
        }
        return l;
    }

    struct zt_inner *x = node;
    uint32_t i = zt_child(x, k);
    struct zt_split sub;
    x->kid[i] = zt_ins(x->kid[i], h - 1, k, &sub);
    x->cnt[i]++;
    sp->right = NULL;
    if (sub.right == NULL) {
        return x;
    }
    x->cnt[i] -= sub.rcnt;
    zt_inner_put(x, i + 1, sub.right, sub.rcnt, sub.sep);
    if (x->n <= ZT_FAN) {
        return x;
    }
    /* Split the inner node; appends keep the left one full. */
    uint32_t at = (i + 1 == x->n - 1) ? x->n - 1 : x->n / 2;
    struct zt_inner *r = rv_malloc(sizeof(*r));
    r->n = x->n - at;
    memcpy(r->kid, &x->kid[at], r->n * sizeof(r->kid[0]));
    memcpy(r->cnt, &x->cnt[at], r->n * sizeof(r->cnt[0]));
    memcpy(r->sep, &x->sep[at], r->n * sizeof(r->sep[0]));
    x->n = at;
    sp->sep = r->sep[0];
    r->sep[0] = NULL;
    sp->rcnt = 0;
    for (uint32_t j = 0; j < r->n; j++) {
        sp->rcnt += r->cnt[j];
    }
    sp->right = r;
    return x;
}

static void
zt_insert(struct ztree *t, const struct zkey *k)
{
    struct zt_split sp;
    t->root = zt_ins(t->root, t->height, k, &sp);
    t->n++;
    if (sp.right) {
        struct zt_inner *x = rv_malloc(sizeof(*x));
        x->n = 2;
        x->kid[0] = t->root;
        x->cnt[0] = t->n - sp.rcnt;
        x->sep[0] = NULL;
        x->kid[1] = sp.right;
        x->cnt[1] = sp.rcnt;
        x->sep[1] = sp.sep;
        t->root = x;
        t->height++;
    }
}

static uint64_t
zt_leaf_count(void *node, int h)
{
    if (h == 0) {
        return ((struct zt_leaf *)node)->n;
    }
    const struct zt_inner *x = node;
    uint64_t n = 0;
    for (uint32_t i = 0; i < x->n; i++) {
        n += x->cnt[i];
    }
    return n;
}

/* After a delete in child i of x: drop it when empty, merge small leaves. */
static void
zt_fix_child(struct zt_inner *x, uint32_t i, int kid_h)
{
    if (x->cnt[i] == 0) {
        if (kid_h > 0) {
            struct zt_inner *k = x->kid[i];
            for (uint32_t j = 1; j < k->n; j++) {
                rv_free(k->sep[j]);
            }
        }
        rv_free(x->kid[i]);
        zt_inner_del(x, i);
        return;
    }
    if (kid_h != 0) {
        return;
    }
    struct zt_leaf *l = x->kid[i];
    if (l->used >= ZT_LEAF_LOW) {
        return;
    }
    /* Merge with the right neighbour (or into the left one) when it fits. */
    uint32_t a = i, b = i + 1;
    if (b >= x->n || ((struct zt_leaf *)x->kid[b])->used + l->used > ZT_LEAF_MAX) {
        if (i == 0 || ((struct zt_leaf *)x->kid[i - 1])->used + l->used > ZT_LEAF_MAX) {
            return;
        }
        a = i - 1;
        b = i;
    }
    struct zt_leaf *la = x->kid[a], *lb = x->kid[b];
    if (rv_usable_size(la) < sizeof(*la) + la->used + lb->used) {
        la = rv_realloc(la, sizeof(*la) + la->used + lb->used);
    }
    memcpy(la->data + la->used, lb->data, lb->used);
    la->used += lb->used;
    la->n += lb->n;
    x->kid[a] = la;
    x->cnt[a] += x->cnt[b];
    rv_free(lb);
    zt_inner_del(x, b);
}

/* Delete key k (present) from the subtree; returns the node (may move). */
static void *
zt_del(void *node, int h, const struct zkey *k)
{
    if (h == 0) {
        struct zt_leaf *l = node;
        uint32_t off;
        seg_lower(l->data, l->n, pred_ge_key, k, &off);
        const char *m;
        size_t ml;
        double s;
        uint32_t sz = (uint32_t)ent_get(l->data + off, &m, &ml, &s);
        memmove(l->data + off, l->data + off + sz, l->used - off - sz);
        l->used -= sz;
        l->n--;
        return fit(l, sizeof(*l) + l->used);
    }
    struct zt_inner *x = node;
    uint32_t i = zt_child(x, k);
    x->kid[i] = zt_del(x->kid[i], h - 1, k);
    x->cnt[i]--;
    zt_fix_child(x, i, h - 1);
    return x;
}

static void
zt_shrink_root(struct ztree *t)
{
    while (t->height > 0) {
        struct zt_inner *x = t->root;
        if (x->n == 0) {
            rv_free(x);
            t->root = zt_leaf_new(0);
            t->height = 0;
        } else if (x->n == 1) {
            t->root = x->kid[0];
            rv_free(x);
            t->height--;
        } else {
            break;
        }
    }
}

static void
zt_delete(struct ztree *t, const struct zkey *k)
{
    t->root = zt_del(t->root, t->height, k);
    t->n--;
    zt_shrink_root(t);
}

static void
zt_free_node(void *node, int h)
{
    if (h > 0) {
        struct zt_inner *x = node;
        for (uint32_t i = 0; i < x->n; i++) {
            zt_free_node(x->kid[i], h - 1);
            rv_free(x->sep[i]);
        }
    }
    rv_free(node);
}

static size_t
zt_node_mem(const void *node, int h)
{
    size_t n = rv_usable_size(node);
    if (h > 0) {
        const struct zt_inner *x = node;
        for (uint32_t i = 0; i < x->n; i++) {
            n += zt_node_mem(x->kid[i], h - 1);
            if (x->sep[i]) {
                n += rv_usable_size(x->sep[i]);
            }
        }
    }
    return n;
}

static size_t
zt_lower(const struct ztree *t, zset_pred_fn *pred, const void *arg)
{
    const void *node = t->root;
    size_t rank = 0;
    for (int h = t->height; h > 0; h--) {
        const struct zt_inner *x = node;
        uint32_t lo = 1, hi = x->n; /* first sep for which pred is true */
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            const struct zt_key *sp = x->sep[mid];
            if (pred(arg, sp->score, sp->m, sp->len)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        for (uint32_t j = 0; j < lo - 1; j++) {
            rank += x->cnt[j];
        }
        node = x->kid[lo - 1];
    }
    const struct zt_leaf *l = node;
    uint32_t off;
    return rank + seg_lower(l->data, l->n, pred, arg, &off);
}

/* ------------------------------------------------------------------ public */

static inline struct zpk *
PK(const struct zset *z)
{
    return z->p;
}

static inline struct ztree *
TR(const struct zset *z)
{
    return z->p;
}

struct zset *
zset_create(void)
{
    struct zset *z = rv_malloc(sizeof(*z));
    z->enc = ZS_PACKED;
    z->p = pk_reserve(NULL, 0);
    z->ks = NULL;
    z->e = NULL;
    return z;
}

void
zset_tree_free(void *v)
{
    struct ztree *t = v;
    if (t == NULL) {
        return;
    }
    zt_free_node(t->root, t->height);
    dict_destroy(t->d, NULL);
    rv_free(t);
}

void
zset_destroy(struct zset *z)
{
    if (z == NULL) {
        return;
    }
    if (z->enc == ZS_TREE) {
        zset_tree_free(z->p);
    } else {
        rv_free(z->p);
    }
    rv_free(z);
}

void
zset_bind(struct zset *z, struct ks *ks, struct ks_entry *e)
{
    size_t n;
    z->ks = ks;
    z->e = e;
    if (ks_entry_inl(e)) {
        z->enc = ZS_PACKED;
        z->p = ks_inl_val(e, &n);
    } else {
        z->enc = ZS_TREE;
        z->p = ks_entry_ptr(e);
    }
}

void
zset_store(struct zset *z, struct ks *ks, const char *key, size_t klen)
{
    if (z->enc == ZS_PACKED) {
        const struct zpk *pk = PK(z);
        ks_set_inl(ks, key, klen, KS_ZSET, pk, sizeof(*pk) + ZUSED(pk), KS_NO_EXPIRE);
        rv_free(z->p);
    } else {
        ks_set_ptr(ks, key, klen, KS_ZSET, z->p, zset_tree_free, KS_NO_EXPIRE);
    }
    rv_free(z);
}

size_t
zset_len(const struct zset *z)
{
    return z->enc == ZS_PACKED ? ZN(PK(z)) : TR(z)->n;
}

bool
zset_is_packed(const struct zset *z)
{
    return z->enc == ZS_PACKED;
}

const char *
zset_encoding(const struct zset *z)
{
    return z->enc == ZS_PACKED ? "listpack" : "skiplist";
}

size_t
zset_mem(const struct zset *z)
{
    if (z->enc == ZS_PACKED) {
        return z->e != NULL ? 0 : rv_usable_size(z) + rv_usable_size(z->p);
    }
    const struct ztree *t = TR(z);
    return rv_usable_size(t) + zt_node_mem(t->root, t->height) + dict_mem(t->d);
}

void
zset_convert(struct zset *z)
{
    if (z->enc == ZS_TREE) {
        return;
    }
    struct zpk *pk = PK(z);
    struct ztree *t = rv_malloc(sizeof(*t));
    t->root = zt_leaf_new(0);
    t->height = 0;
    t->n = 0;
    t->d = dict_create();
    uint32_t o = 0;
    for (uint32_t i = 0, n = ZN(pk); i < n; i++) {
        struct zkey k;
        bool created;
        o += (uint32_t)ent_get(pk->data + o, &k.m, &k.ml, &k.s);
        zt_insert(t, &k);
        dict_set_val_double(dict_add(t->d, k.m, k.ml, &created), k.s);
    }
    if (z->ks != NULL) {
        /* Inline in its entry: store the key as a pointer to the tree. */
        struct rv_str key = ks_entry_key(z->e);
        z->e = ks_set_ptr(z->ks, key.p, key.len, KS_ZSET, t, zset_tree_free, ks_entry_expire(z->e));
    } else {
        rv_free(pk);
    }
    z->p = t;
    z->enc = ZS_TREE;
}

struct zset *
zset_dup(const struct zset *src)
{
    struct zset *z = zset_create();
    if (src->enc == ZS_PACKED) {
        const struct zpk *pk = PK(src);
        z->p = pk_reserve(PK(z), ZUSED(pk));
        memcpy(z->p, pk, sizeof(*pk) + ZUSED(pk));
        return z;
    }
    zset_convert(z);
    struct zset_it it;
    struct zset_lim lim = { 0, 0 };
    zset_it_init(&it, src, 0);
    do {
        struct rv_str m;
        double s;
        zset_it_get(&it, &m, &s);
        zset_insert(z, m.p, m.len, s, &lim);
    } while (zset_it_next(&it));
    zset_it_done(&it);
    return z;
}

bool
zset_score(struct zset *z, const char *m, size_t ml, double *out)
{
    if (z->enc == ZS_PACKED) {
        return pk_find(PK(z), m, ml, out, NULL) >= 0;
    }
    struct dict_entry *e = dict_find(TR(z)->d, m, ml);
    if (e == NULL) {
        return false;
    }
    *out = dict_val_double(e);
    return true;
}

void
zset_insert(struct zset *z, const char *m, size_t ml, double s, const struct zset_lim *lim)
{
    if (z->enc == ZS_PACKED &&
        ((int64_t)ZN(PK(z)) + 1 > lim->entries || (int64_t)ml > lim->value)) {
        zset_convert(z);
    }
    if (z->enc == ZS_PACKED) {
        pk_insert(z, m, ml, s);
        return;
    }
    struct ztree *t = TR(z);
    struct zkey k = { s, m, ml };
    bool created;
    zt_insert(t, &k);
    dict_set_val_double(dict_add(t->d, m, ml, &created), s);
}

void
zset_update(struct zset *z, const char *m, size_t ml, double old, double s)
{
    if (z->enc == ZS_PACKED) {
        double cur;
        uint32_t idx;
        int64_t off = pk_find(PK(z), m, ml, &cur, &idx);
        const char *em;
        size_t el;
        uint32_t sz = (uint32_t)ent_get(PK(z)->data + off, &em, &el, &cur);
        /* Member bytes must survive the removal: they may live in the buffer. */
        char small[64];
        char *copy = ml <= sizeof(small) ? small : rv_malloc(ml);
        memcpy(copy, m, ml);
        pk_remove_at(z, (uint32_t)off, sz, 1);
        pk_insert(z, copy, ml, s);
        if (copy != small) {
            rv_free(copy);
        }
        return;
    }
    struct ztree *t = TR(z);
    struct zkey ko = { old, m, ml }, kn = { s, m, ml };
    zt_delete(t, &ko);
    zt_insert(t, &kn);
    dict_set_val_double(dict_find(t->d, m, ml), s);
}

bool
zset_delete(struct zset *z, const char *m, size_t ml)
{
    double s;
    if (z->enc == ZS_PACKED) {
        int64_t off = pk_find(PK(z), m, ml, &s, NULL);
        if (off < 0) {
            return false;
        }
        const char *em;
        size_t el;
        uint32_t sz = (uint32_t)ent_get(PK(z)->data + off, &em, &el, &s);
        pk_remove_at(z, (uint32_t)off, sz, 1);
        return true;
    }
    struct ztree *t = TR(z);
    struct dict_entry *e = dict_find(t->d, m, ml);
    if (e == NULL) {
        return false;
    }
    /* m may be a view into a leaf (an iterator's): copy it first. */
    char small[256];
    char *copy = ml <= sizeof(small) ? small : rv_malloc(ml);
    memcpy(copy, m, ml);
    struct zkey k = { dict_val_double(e), copy, ml };
    zt_delete(t, &k);
    dict_delete(t->d, copy, ml, NULL);
    if (copy != small) {
        rv_free(copy);
    }
    return true;
}

void
zset_delete_range(struct zset *z, size_t start, size_t end)
{
    if (z->enc == ZS_PACKED) {
        struct zpk *pk = PK(z);
        uint32_t a = seg_off(pk->data, (uint32_t)start);
        uint32_t b = a + seg_off(pk->data + a, (uint32_t)(end - start + 1));
        pk_remove_at(z, a, b - a, (uint32_t)(end - start + 1));
        return;
    }
    /* One element at a time: each delete is O(log n). */
    struct ztree *t = TR(z);
    char small[256];
    for (size_t r = start; r <= end; r++) {
        struct zset_it it;
        struct rv_str m;
        double s;
        zset_it_init(&it, z, start);
        zset_it_get(&it, &m, &s);
        zset_it_done(&it);
        char *copy = m.len <= sizeof(small) ? small : rv_malloc(m.len);
        memcpy(copy, m.p, m.len);
        struct zkey k = { s, copy, m.len };
        zt_delete(t, &k);
        dict_delete(t->d, copy, m.len, NULL);
        if (copy != small) {
            rv_free(copy);
        }
    }
}

size_t
zset_lower(const struct zset *z, zset_pred_fn *pred, const void *arg)
{
    if (z->enc == ZS_PACKED) {
        uint32_t off;
        return seg_lower(PK(z)->data, ZN(PK(z)), pred, arg, &off);
    }
    return zt_lower(TR(z), pred, arg);
}

size_t
zset_rank(const struct zset *z, const char *m, size_t ml, double s)
{
    struct zkey k = { s, m, ml };
    return zset_lower(z, pred_ge_key, &k);
}

/* ------------------------------------------------------------------ iterator */

static void
it_enter_leaf(struct zset_it *it, const struct zt_leaf *l, bool last)
{
    it->seg = l->data;
    it->segn = l->n;
    it->offs_ok = false;
    if (last) {
        it->idx = l->n - 1;
        it->off = seg_off(l->data, it->idx);
    } else {
        it->idx = 0;
        it->off = 0;
    }
}

/* Descend from path level lv (whose pidx is set) to a leaf, leftmost or rightmost. */
static void
it_descend(struct zset_it *it, int lv, bool last)
{
    const struct zt_inner *x = it->path[lv];
    void *node = x->kid[it->pidx[lv]];
    for (int h = it->depth - lv - 1; h > 0; h--) {
        lv++;
        x = node;
        it->path[lv] = node;
        it->pidx[lv] = last ? x->n - 1 : 0;
        node = x->kid[it->pidx[lv]];
    }
    it_enter_leaf(it, node, last);
}

void
zset_it_init(struct zset_it *it, const struct zset *z, size_t rank)
{
    memset(it, 0, sizeof(*it));
    it->z = z;
    it->rank = rank;
    if (z->enc == ZS_PACKED) {
        it->seg = PK(z)->data;
        it->segn = ZN(PK(z));
        it->idx = (uint32_t)rank;
        it->off = seg_off(it->seg, it->idx);
        return;
    }
    const struct ztree *t = TR(z);
    void *node = t->root;
    it->depth = t->height;
    for (int lv = 0; lv < t->height; lv++) {
        const struct zt_inner *x = node;
        uint32_t i = 0;
        while (i + 1 < x->n && rank >= x->cnt[i]) {
            rank -= x->cnt[i];
            i++;
        }
        it->path[lv] = node;
        it->pidx[lv] = i;
        node = x->kid[i];
    }
    const struct zt_leaf *l = node;
    it->seg = l->data;
    it->segn = l->n;
    it->idx = (uint32_t)rank;
    it->off = seg_off(l->data, it->idx);
}

void
zset_it_get(const struct zset_it *it, struct rv_str *m, double *s)
{
    ent_get(it->seg + it->off, &m->p, &m->len, s);
}

bool
zset_it_next(struct zset_it *it)
{
    if (it->rank + 1 >= zset_len(it->z)) {
        return false;
    }
    it->rank++;
    if (it->idx + 1 < it->segn) {
        struct rv_str m;
        double s;
        it->off += (uint32_t)ent_get(it->seg + it->off, &m.p, &m.len, &s);
        it->idx++;
        return true;
    }
    int lv = it->depth - 1;
    while (lv >= 0 && it->pidx[lv] + 1 >= ((const struct zt_inner *)it->path[lv])->n) {
        lv--;
    }
    it->pidx[lv]++;
    it_descend(it, lv, false);
    return true;
}

bool
zset_it_prev(struct zset_it *it)
{
    if (it->rank == 0) {
        return false;
    }
    it->rank--;
    if (it->idx > 0) {
        if (!it->offs_ok) {
            if (it->offs_cap < it->segn) {
                rv_free(it->offs);
                it->offs_cap = it->segn < 64 ? 64 : it->segn;
                it->offs = rv_malloc(it->offs_cap * sizeof(it->offs[0]));
            }
            uint32_t o = 0;
            for (uint32_t i = 0; i < it->segn; i++) {
                struct rv_str m;
                double s;
                it->offs[i] = o;
                o += (uint32_t)ent_get(it->seg + o, &m.p, &m.len, &s);
            }
            it->offs_ok = true;
        }
        it->idx--;
        it->off = it->offs[it->idx];
        return true;
    }
    int lv = it->depth - 1;
    while (lv >= 0 && it->pidx[lv] == 0) {
        lv--;
    }
    it->pidx[lv]--;
    it_descend(it, lv, true);
    return true;
}

void
zset_it_done(struct zset_it *it)
{
    rv_free(it->offs);
    it->offs = NULL;
    it->offs_cap = 0;
}

/* ------------------------------------------------------------------ scan, random */

struct scan_arg {
    zset_scan_fn *fn;
    void *arg;
};

static void
scan_visit(void *arg, struct dict_entry *e)
{
    struct scan_arg *sa = arg;
    sa->fn(sa->arg, dict_key(e), dict_val_double(e));
}

uint64_t
zset_scan(struct zset *z, uint64_t cursor, size_t count, zset_scan_fn *fn, void *arg)
{
    struct scan_arg sa = { fn, arg };
    return dict_scan(TR(z)->d, cursor, count, scan_visit, &sa);
}

void
zset_random(const struct zset *z, uint64_t rnd, struct rv_str *m, double *s)
{
    struct zset_it it;
    zset_it_init(&it, z, (size_t)(rnd % zset_len(z)));
    zset_it_get(&it, m, s);
    zset_it_done(&it);
}

/* ------------------------------------------------------------------ checks */

static bool
zt_check_node(const struct ztree *t, const void *node, int h, uint64_t *cnt,
              const struct zt_key *lo, const struct zt_key *hi)
{
    if (h == 0) {
        const struct zt_leaf *l = node;
        uint32_t o = 0;
        struct zkey prev = { 0, NULL, 0 };
        for (uint32_t i = 0; i < l->n; i++) {
            struct zkey k;
            o += (uint32_t)ent_get(l->data + o, &k.m, &k.ml, &k.s);
            if (i > 0 && key_cmp(prev.s, prev.m, prev.ml, k.s, k.m, k.ml) >= 0) {
                return false;
            }
            if (lo && key_cmp(lo->score, lo->m, lo->len, k.s, k.m, k.ml) > 0) {
                return false;
            }
            if (hi && key_cmp(hi->score, hi->m, hi->len, k.s, k.m, k.ml) <= 0) {
                return false;
            }
            struct dict_entry *e = dict_find(t->d, k.m, k.ml);
            if (e == NULL || dict_val_double(e) != k.s) {
                return false;
            }
            prev = k;
        }
        *cnt = l->n;
        return o == l->used && (l->n > 0 || node == t->root);
    }
    const struct zt_inner *x = node;
    uint64_t total = 0;
    if (x->n == 0 || x->n > ZT_FAN || x->sep[0] != NULL) {
        return false;
    }
    for (uint32_t i = 0; i < x->n; i++) {
        uint64_t c;
        const struct zt_key *l2 = i ? x->sep[i] : lo;
        const struct zt_key *h2 = i + 1 < x->n ? x->sep[i + 1] : hi;
        if (!zt_check_node(t, x->kid[i], h - 1, &c, l2, h2) || c != x->cnt[i] || c == 0) {
            return false;
        }
        total += c;
    }
    *cnt = total;
    return true;
}

bool
zset_check(const struct zset *z)
{
    if (z->enc == ZS_PACKED) {
        const struct zpk *pk = PK(z);
        uint32_t o = 0;
        struct zkey prev = { 0, NULL, 0 };
        for (uint32_t i = 0, n = ZN(pk); i < n; i++) {
            struct zkey k;
            o += (uint32_t)ent_get(pk->data + o, &k.m, &k.ml, &k.s);
            if (i > 0 && key_cmp(prev.s, prev.m, prev.ml, k.s, k.m, k.ml) >= 0) {
                return false;
            }
            prev = k;
        }
        return o == ZUSED(pk);
    }
    const struct ztree *t = TR(z);
    uint64_t c;
    return zt_check_node(t, t->root, t->height, &c, NULL, NULL) && c == t->n &&
           dict_size(t->d) == t->n && zt_leaf_count(t->root, t->height) == t->n;
}

/* ------------------------------------------------------------- obj_ops */

/* ZADD key score member ..., in order; scores round-trip exactly. */
static void
zset_emit(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct zset zb, *z = &zb;
    struct obj_emitter b;
    struct zset_it it;

    zset_bind(z, NULL, (struct ks_entry *)(uintptr_t)e);
    obj_emit_init(&b, fn, arg, "ZADD", ks_entry_key(e));
    if (zset_len(z) > 0) {
        zset_it_init(&it, z, 0);
        do {
            struct rv_str m;
            double score;
            zset_it_get(&it, &m, &score);
            obj_emit_double(&b, score);
            obj_emit_arg(&b, m);
            obj_emit_elem(&b);
        } while (zset_it_next(&it));
        zset_it_done(&it);
    }
    obj_emit_flush(&b);
}

static const char *
zset_encoding_op(const struct ks_entry *e)
{
    return ks_entry_inl(e) ? "listpack" : "skiplist";
}

/* Bytes outside the entry: none for the inline listpack. */
static size_t
zset_mem_op(const struct ks_entry *e)
{
    struct zset z;
    if (ks_entry_inl(e)) {
        return 0;
    }
    zset_bind(&z, NULL, (struct ks_entry *)(uintptr_t)e);
    return zset_mem(&z);
}

static size_t
zset_effort_op(const struct ks_entry *e)
{
    const struct ztree *t = ks_entry_ptr(e);
    return t->n;
}

/* A copy of a stored tree. */
static void *
zset_dup_op(const struct ks_entry *e)
{
    struct zset z, *c;
    void *tree;
    zset_bind(&z, NULL, (struct ks_entry *)(uintptr_t)e);
    c = zset_dup(&z);
    tree = c->p;
    rv_free(c);
    return tree;
}

const struct obj_ops obj_zset_ops = {
    .type_name = "zset",
    .encoding = zset_encoding_op,
    .mem = zset_mem_op,
    .dup = zset_dup_op,
    .free = zset_tree_free,
    .emit = zset_emit,
    .effort = zset_effort_op,
};

/* ------------------------------------------------------------- ranges */

static int
memcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
    size_t l = al < bl ? al : bl;
    int r = l ? memcmp(a, b, l) : 0;
    if (r != 0) {
        return r;
    }
    return al < bl ? -1 : al > bl;
}

/* Predicates: "at or past the lower bound" and "past the upper bound". */
static bool
pred_score_min(const void *arg, double s, const char *m, size_t ml)
{
    const struct zset_srange *r = arg;
    (void)m;
    (void)ml;
    return r->minex ? s > r->min : s >= r->min;
}

static bool
pred_score_max(const void *arg, double s, const char *m, size_t ml)
{
    const struct zset_srange *r = arg;
    (void)m;
    (void)ml;
    return r->maxex ? s >= r->max : s > r->max;
}

static bool
pred_lex_min(const void *arg, double s, const char *m, size_t ml)
{
    const struct zset_lbound *b = arg;
    (void)s;
    if (b->inf) {
        return b->inf < 0;
    }
    int cmp = memcmp_len(m, ml, b->m.p, b->m.len);
    return b->ex ? cmp > 0 : cmp >= 0;
}

static bool
pred_lex_max(const void *arg, double s, const char *m, size_t ml)
{
    const struct zset_lbound *b = arg;
    (void)s;
    if (b->inf) {
        return b->inf < 0;
    }
    int cmp = memcmp_len(m, ml, b->m.p, b->m.len);
    return b->ex ? cmp >= 0 : cmp > 0;
}

void
zset_srange_ranks(const struct zset *z, const struct zset_srange *r, size_t *lo, size_t *hi)
{
    if (r->min > r->max || (r->min == r->max && (r->minex || r->maxex))) {
        *lo = *hi = 0;
        return;
    }
    *lo = zset_lower(z, pred_score_min, r);
    *hi = zset_lower(z, pred_score_max, r);
    if (*hi < *lo) {
        *hi = *lo;
    }
}

void
zset_lrange_ranks(const struct zset *z, const struct zset_lrange *r, size_t *lo, size_t *hi)
{
    bool empty = r->min.inf > 0 || r->max.inf < 0;
    if (!empty && r->min.inf == 0 && r->max.inf == 0) {
        int cmp = memcmp_len(r->min.m.p, r->min.m.len, r->max.m.p, r->max.m.len);
        empty = cmp > 0 || (cmp == 0 && (r->min.ex || r->max.ex));
    }
    if (empty) {
        *lo = *hi = 0;
        return;
    }
    *lo = zset_lower(z, pred_lex_min, &r->min);
    *hi = zset_lower(z, pred_lex_max, &r->max);
    if (*hi < *lo) {
        *hi = *lo;
    }
}
