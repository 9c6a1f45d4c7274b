/* node/keyspace/dict.c: string-keyed hash map for collection values.
 *
 * The table is the keyspace's robin hood table (node/keyspace/rh.h: linear
 * probing, backward-shift deletion, fastrange homes, incremental resizing,
 * hash-order SCAN cursors), with its own entries and a smaller minimum size.
 *
 * Entries are one allocation, key first so dict_key() needs no kind:
 *
 *   varint klen | key bytes | value
 *
 * where the value is 8 unaligned bytes (DICT_U64), nothing (DICT_KEYONLY) or
 * varint vlen + bytes (DICT_BYTES). A 10-byte set member thus costs a 16-byte
 * allocation plus ~11 bytes of table.
 *
 * Rehash work is done a few entries per add/delete. A SCAN call covers the
 * hash range [cursor, next) in both tables, so every entry present for the
 * whole scan is returned at least once whatever resizes happen in between
 * (the proof is in rh.h). */
#include "node/keyspace/dict.h"

#include "base/mem.h"
#include "base/siphash.h"
#include "base/varint.h"
#include "node/keyspace/rh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixed default until dict_seed() is called at start-up. */
static uint64_t dict_k0 = UINT64_C(0x9e3779b97f4a7c15);
static uint64_t dict_k1 = UINT64_C(0xc2b2ae3d27d4eb4f);

void
dict_seed(uint64_t s0, uint64_t s1)
{
    dict_k0 = s0;
    dict_k1 = s1;
}

static inline uint64_t
dict_hash(const void *p, size_t n)
{
    return siphash_13(dict_k0, dict_k1, p, n);
}

/* ---------------------------------------------------------------- entries */

struct dict_entry {
    uint8_t b[1];
};

/* The allocator's size class for n bytes (jemalloc's spacing: 8, 16, then 16
 * apart up to 128, then four classes per doubling). Used to charge entries
 * without an allocator metadata lookup per insert. */
static size_t
mem_class(size_t n)
{
    size_t step;
    if (n <= 8) {
        return 8;
    }
    if (n <= 128) {
        return (n + 15) & ~(size_t)15;
    }
    step = (size_t)1 << (63 - __builtin_clzll((unsigned long long)(n - 1)) - 2);
    return (n + step - 1) & ~(step - 1);
}

static inline const uint8_t *
ent_key(const struct dict_entry *e, size_t *klen)
{
    return varint_get(e->b, klen);
}

static inline uint8_t *
ent_after_key(const struct dict_entry *e)
{
    size_t klen;
    const uint8_t *k = ent_key(e, &klen);
    return (uint8_t *)(uintptr_t)(k + klen);
}

static size_t
ent_size(const struct dict_entry *e, enum dict_kind kind)
{
    uint8_t *v = ent_after_key(e);
    size_t vlen;
    switch (kind) {
    case DICT_U64: return (size_t)(v + 8 - e->b);
    case DICT_KEYONLY: return (size_t)(v - e->b);
    case DICT_BYTES: return (size_t)(varint_get(v, &vlen) + vlen - e->b);
    }
    return 0;
}

static struct dict_entry *
ent_check(void *p)
{
    if (rv_unlikely(!rh_ptr_ok(p))) {
        fprintf(stderr, "dict: allocator returned an address the table cannot store\n");
        abort();
    }
    return p;
}

/* A new entry for key with room for a value of vlen bytes (DICT_BYTES) or the
 * kind's fixed value; the value is zero / empty. */
static struct dict_entry *
ent_new(enum dict_kind kind, const char *key, size_t klen, size_t vlen, size_t *size)
{
    size_t n = varint_len(klen) + klen;
    struct dict_entry *e;
    uint8_t *p;

    if (kind == DICT_U64) {
        n += 8;
    } else if (kind == DICT_BYTES) {
        n += varint_len(vlen) + vlen;
    }
    e = ent_check(rv_malloc(n));
    p = varint_put(e->b, klen);
    memcpy(p, key, klen);
    p += klen;
    if (kind == DICT_U64) {
        memset(p, 0, 8);
    } else if (kind == DICT_BYTES) {
        varint_put(p, vlen);
    }
    *size = n;
    return e;
}

/* ----------------------------------------------------------------- tables */

struct dict {
    struct rh t;
    size_t ent_bytes; /* size classes of all entries */
    enum dict_kind kind;
};

static inline bool
ent_key_eq(const void *ent, const char *key, size_t klen)
{
    size_t n;
    const uint8_t *k = ent_key(ent, &n);
    return n == klen && memcmp(k, key, klen) == 0;
}

static inline uint64_t
ent_hash(const struct dict_entry *e)
{
    size_t n;
    const uint8_t *k = ent_key(e, &n);
    return dict_hash(k, n);
}

static inline __attribute__((always_inline)) uint64_t
ops_hash(const struct rh_env *env, const void *ent)
{
    (void)env;
    return ent_hash(ent);
}

/* Collections start small: 8 home slots, 4 of overflow. */
static const struct rh_ops dict_ops = { 8, 4, ops_hash };

/* Bounded rehash work done by every add/delete: enough that a drain always
 * finishes before the new table (sized for load 0.7) itself reaches 0.9. */
#define DICT_STEP_MOVES 8
#define DICT_STEP_VISITS 64

static void
d_step(struct dict *d)
{
    if (rv_likely(d->t.old.slots == NULL)) {
        return;
    }
    rh_migrate(&d->t, DICT_STEP_MOVES, DICT_STEP_VISITS, &dict_ops, NULL);
}

static inline __attribute__((always_inline)) uint64_t *
d_find(const struct dict *d, uint64_t h, const char *key, size_t klen, struct rh_tab **tp)
{
    return rh_find(&d->t, h, key, klen, ent_key_eq, tp);
}

struct dict *
dict_create_kind(enum dict_kind kind)
{
    struct dict *d = rv_calloc(1, sizeof(*d));
    d->kind = kind;
    rh_init(&d->t, &dict_ops);
    return d;
}

struct dict *
dict_create(void)
{
    return dict_create_kind(DICT_U64);
}

struct free_ctx {
    bool u64;
    void (*free_val)(void *);
};

static void
free_ent(void *arg, void *ent)
{
    struct free_ctx *f = arg;
    if (f->u64 && f->free_val != NULL) {
        f->free_val(dict_val_ptr(ent));
    }
    rv_free(ent);
}

void
dict_destroy(struct dict *d, void (*free_val)(void *))
{
    if (d == NULL) {
        return;
    }
    struct free_ctx f = { d->kind == DICT_U64, free_val };
    rh_tab_each(&d->t.cur, free_ent, &f);
    rh_tab_each(&d->t.old, free_ent, &f);
    rh_tab_free(&d->t.cur);
    rh_tab_free(&d->t.old);
    rv_free(d);
}

size_t
dict_size(const struct dict *d)
{
    return rh_count(&d->t);
}

size_t
dict_mem(const struct dict *d)
{
    return mem_class(sizeof(*d)) + rh_tab_bytes(&d->t.cur) + rh_tab_bytes(&d->t.old) + d->ent_bytes;
}

void
dict_reserve(struct dict *d, size_t n)
{
    size_t nn = rh_target(n, &dict_ops);
    if (rh_rehashing(&d->t) || nn <= d->t.cur.n) {
        return;
    }
    if (d->t.cur.count == 0) {
        rh_tab_free(&d->t.cur);
        rh_tab_alloc(&d->t.cur, nn, &dict_ops);
    } else {
        rh_start_resize(&d->t, nn, &dict_ops, NULL);
    }
}

struct dict_entry *
dict_find(struct dict *d, const char *key, size_t klen)
{
    struct rh_tab *t;
    uint64_t *sl = d_find(d, dict_hash(key, klen), key, klen, &t);
    return sl != NULL ? rh_ent(*sl) : NULL;
}

static struct dict_entry *
d_add(struct dict *d, const char *key, size_t klen, size_t vlen, bool *created)
{
    struct rh_tab *t;
    uint64_t h, *sl;
    struct dict_entry *e;
    size_t size;

    d_step(d);
    h = dict_hash(key, klen);
    sl = d_find(d, h, key, klen, &t);
    if (sl != NULL) {
        *created = false;
        return rh_ent(*sl);
    }
    e = ent_new(d->kind, key, klen, vlen, &size);
    d->ent_bytes += mem_class(size);
    rh_insert(&d->t, h, e, &dict_ops, NULL);
    *created = true;
    return e;
}

struct dict_entry *
dict_add(struct dict *d, const char *key, size_t klen, bool *created)
{
    bool c;
    return d_add(d, key, klen, 0, created ? created : &c);
}

bool
dict_delete(struct dict *d, const char *key, size_t klen, uint64_t *val)
{
    struct rh_tab *t;
    uint64_t h, *sl;
    struct dict_entry *e;

    d_step(d);
    h = dict_hash(key, klen);
    sl = d_find(d, h, key, klen, &t);
    if (sl == NULL) {
        return false;
    }
    e = rh_ent(*sl);
    if (val != NULL) {
        *val = d->kind == DICT_U64 ? dict_val(e) : 0;
    }
    d->ent_bytes -= mem_class(ent_size(e, d->kind));
    rv_free(e);
    rh_remove_at(&d->t, t, sl, &dict_ops, NULL);
    return true;
}

/* -------------------------------------------------------------- accessors */

struct rv_str
dict_key(const struct dict_entry *e)
{
    size_t n;
    const uint8_t *k = ent_key(e, &n);
    return (struct rv_str){ (const char *)k, n };
}

uint64_t
dict_val(const struct dict_entry *e)
{
    uint64_t v;
    memcpy(&v, ent_after_key(e), sizeof(v));
    return v;
}

void
dict_set_val(struct dict_entry *e, uint64_t v)
{
    memcpy(ent_after_key(e), &v, sizeof(v));
}

void *
dict_val_ptr(const struct dict_entry *e)
{
    return (void *)(uintptr_t)dict_val(e);
}

void
dict_set_val_ptr(struct dict_entry *e, void *p)
{
    dict_set_val(e, (uint64_t)(uintptr_t)p);
}

double
dict_val_double(const struct dict_entry *e)
{
    double v;
    memcpy(&v, ent_after_key(e), sizeof(v));
    return v;
}

void
dict_set_val_double(struct dict_entry *e, double v)
{
    memcpy(ent_after_key(e), &v, sizeof(v));
}

struct rv_str
dict_val_bytes(const struct dict_entry *e)
{
    size_t n;
    const uint8_t *v = varint_get(ent_after_key(e), &n);
    return (struct rv_str){ (const char *)v, n };
}

struct dict_entry *
dict_set_bytes(struct dict *d, struct dict_entry *e, const char *v, size_t vlen)
{
    size_t klen, oldsz = ent_size(e, DICT_BYTES), newsz;
    const uint8_t *k = ent_key(e, &klen);
    size_t voff = (size_t)(k + klen - e->b);
    struct dict_entry *ne;
    uint8_t *p;

    newsz = voff + varint_len(vlen) + vlen;
    /* In place only when shrinking within the size class: without jemalloc
     * (sanitizer builds) the allocation may be exactly oldsz bytes. */
    if (newsz <= oldsz && mem_class(newsz) == mem_class(oldsz)) {
        p = varint_put(e->b + voff, vlen);
        memcpy(p, v, vlen);
        return e;
    }
    /* Changing size class: the entry moves, so repoint its slot. */
    {
        struct rh_tab *t;
        uint64_t *sl = rh_find_ptr(&d->t, ent_hash(e), e, &t);
        if (sl == NULL) {
            fprintf(stderr, "dict: entry missing from its table\n");
            abort();
        }
        ne = ent_check(rv_realloc(e, newsz));
        rh_slot_repoint(sl, ne);
    }
    p = varint_put(ne->b + voff, vlen);
    memcpy(p, v, vlen);
    d->ent_bytes += mem_class(newsz) - mem_class(oldsz);
    return ne;
}

struct dict_entry *
dict_put_bytes(struct dict *d, const char *key, size_t klen, const char *v, size_t vlen,
               bool *created)
{
    bool c;
    struct dict_entry *e = d_add(d, key, klen, vlen, &c);
    if (created != NULL) {
        *created = c;
    }
    if (c) {
        uint8_t *p = ent_after_key(e);
        p = varint_put(p, vlen);
        memcpy(p, v, vlen);
        return e;
    }
    return dict_set_bytes(d, e, v, vlen);
}

struct dup_ctx {
    const struct dict *from;
    struct dict *to;
};

static void
dup_ent(void *arg, void *ent)
{
    struct dup_ctx *x = arg;
    size_t sz = ent_size(ent, x->from->kind);
    struct dict_entry *c = ent_check(rv_malloc(sz));
    memcpy(c, ent, sz);
    x->to->ent_bytes += mem_class(sz);
    rh_insert(&x->to->t, ent_hash(c), c, &dict_ops, NULL);
}

struct dict *
dict_dup(const struct dict *d)
{
    struct dup_ctx x = { d, dict_create_kind(d->kind) };
    dict_reserve(x.to, dict_size(d));
    rh_tab_each(&d->t.cur, dup_ent, &x);
    rh_tab_each(&d->t.old, dup_ent, &x);
    return x.to;
}

/* -------------------------------------------------------------- iteration */

/* dict_scan_fn takes a struct dict_entry *: called through this adapter. */
struct visit_ctx {
    dict_scan_fn *fn;
    void *arg;
};

static void
visit(void *arg, void *ent)
{
    struct visit_ctx *v = arg;
    v->fn(v->arg, ent);
}

uint64_t
dict_scan(struct dict *d, uint64_t cursor, size_t count, dict_scan_fn *fn, void *arg)
{
    struct visit_ctx v = { fn, arg };
    return rh_scan(&d->t, cursor, count, &dict_ops, NULL, visit, &v);
}

void
dict_foreach(struct dict *d, dict_scan_fn *fn, void *arg)
{
    struct visit_ctx v = { fn, arg };
    rh_tab_each(&d->t.cur, visit, &v);
    rh_tab_each(&d->t.old, visit, &v);
}

static inline uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform by rejection: probe random slots of both tables until one is full.
 * Loads stay >= 0.1 (shrink threshold), so this ends quickly; after 256
 * misses (only for tiny loads) fall back to the next full slot. */
struct dict_entry *
dict_random(struct dict *d, uint64_t rnd)
{
    size_t total, i = 0;
    uint64_t x = rnd;

    if (dict_size(d) == 0) {
        return NULL;
    }
    total = d->t.cur.cap + (rh_rehashing(&d->t) ? d->t.old.cap : 0);
    for (int tries = 0; tries < 256; tries++) {
        i = (size_t)(((rh_u128)splitmix64(&x) * total) >> 64);
        if (i < d->t.cur.cap) {
            if (d->t.cur.slots[i] != 0) {
                return rh_ent(d->t.cur.slots[i]);
            }
        } else if (d->t.old.slots[i - d->t.cur.cap] != 0) {
            return rh_ent(d->t.old.slots[i - d->t.cur.cap]);
        }
    }
    for (size_t k = 0; k < total; k++, i = (i + 1) % total) {
        uint64_t s = i < d->t.cur.cap ? d->t.cur.slots[i] : d->t.old.slots[i - d->t.cur.cap];
        if (s != 0) {
            return rh_ent(s);
        }
    }
    return NULL;
}
