/* node/keyspace/dict.c: string-keyed hash map for collection values.
 *
 * The table design is the keyspace's (see node/keyspace/ks.c): open addressing with
 * linear probing, robin hood insertion, backward-shift deletion, no
 * tombstones and no wraparound (n home slots, a small overflow area, one
 * always-empty sentinel), home(h) = (h * n) >> 64 (fastrange, monotonic in h).
 * A slot is one uint64_t: entry pointer >> 3 (bits 0-44), an 11-bit tag from
 * the low hash bits (45-55) and the probe distance + 1 (56-63, 0 = empty).
 *
 * Entries are one allocation, key first so dict_key() needs no kind:
 *
 *   varint klen | key bytes | value
 *
 * where the value is 8 unaligned bytes (DICT_U64), nothing (DICT_KEYONLY) or
 * varint vlen + bytes (DICT_BYTES). A 10-byte set member thus costs a 16-byte
 * allocation plus ~11 bytes of table.
 *
 * Resizing is incremental: past load 0.9 (or under 0.1) a table for count/0.7
 * is allocated and the old one drained in slot order, a few entries per
 * add/delete. Lookups search both tables, inserts go to the new one.
 *
 * SCAN cursors are positions in hash order, exactly as ks_scan (the proof is
 * in node/keyspace/ks.c): a call covers the hash range [cursor, next) in both tables,
 * so every entry present for the whole scan is returned at least once
 * whatever resizes happen in between. */
#include "node/keyspace/dict.h"

#include "base/mem.h"
#include "base/varint.h"
#include "base/siphash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 dict_u128;

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
    case DICT_U64:
        return (size_t)(v + 8 - e->b);
    case DICT_KEYONLY:
        return (size_t)(v - e->b);
    case DICT_BYTES:
        return (size_t)(varint_get(v, &vlen) + vlen - e->b);
    }
    return 0;
}

static struct dict_entry *
ent_check(void *p)
{
    if (rv_unlikely(((uintptr_t)p & 7) != 0 || ((uint64_t)(uintptr_t)p >> 48) != 0)) {
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

#define SLOT_PTR_MASK ((UINT64_C(1) << 45) - 1)
#define SLOT_TAG_SHIFT 45
#define SLOT_TAG_MASK (UINT64_C(0x7ff) << SLOT_TAG_SHIFT)
#define SLOT_D_SHIFT 56
#define SLOT_D_ONE (UINT64_C(1) << SLOT_D_SHIFT)
#define SLOT_HI_MASK (~SLOT_PTR_MASK)
#define SLOT_D1_MAX 255u
#define TAB_MIN 8

struct dict_tab {
    uint64_t *slots;   /* cap + 1 slots; slots[cap] stays 0 */
    size_t n;          /* home slots */
    size_t cap;        /* n + overflow */
    size_t count;
};

struct dict {
    struct dict_tab cur;   /* inserts go here */
    struct dict_tab old;   /* drained while old.slots != NULL */
    size_t rpos;           /* old.slots[0, rpos) are empty */
    size_t ent_bytes;      /* size classes of all entries */
    enum dict_kind kind;
};

static inline unsigned
slot_d1(uint64_t s)
{
    return (unsigned)(s >> SLOT_D_SHIFT);
}

static inline struct dict_entry *
slot_ent(uint64_t s)
{
    return (struct dict_entry *)(uintptr_t)((s & SLOT_PTR_MASK) << 3);
}

static inline uint64_t
slot_make(const struct dict_entry *e, uint64_t h, unsigned d1)
{
    return ((uint64_t)(uintptr_t)e >> 3) | ((h << SLOT_TAG_SHIFT) & SLOT_TAG_MASK) |
           ((uint64_t)d1 << SLOT_D_SHIFT);
}

static inline size_t
tab_home(const struct dict_tab *t, uint64_t h)
{
    return (size_t)(((dict_u128)h * t->n) >> 64);
}

static size_t
tab_overflow(size_t n)
{
    size_t o = n / 4;
    if (o < 4) {
        o = 4;
    }
    return o > 256 ? 256 : o;
}

static size_t
tab_bytes(const struct dict_tab *t)
{
    return t->slots != NULL ? (t->cap + 1) * sizeof(*t->slots) : 0;
}

static void
tab_alloc(struct dict_tab *t, size_t n)
{
    if (n < TAB_MIN) {
        n = TAB_MIN;
    }
    t->n = n;
    t->cap = n + tab_overflow(n);
    t->count = 0;
    t->slots = rv_calloc_big((t->cap + 1) * sizeof(*t->slots));
}

static void
tab_free(struct dict_tab *t)
{
    if (t->slots != NULL) {
        rv_free_big(t->slots, tab_bytes(t));
    }
    memset(t, 0, sizeof(*t));
}

static inline bool
ent_key_eq(const struct dict_entry *e, const char *key, size_t klen)
{
    size_t n;
    const uint8_t *k = ent_key(e, &n);
    return n == klen && memcmp(k, key, klen) == 0;
}

static inline uint64_t
ent_hash(const struct dict_entry *e)
{
    size_t n;
    const uint8_t *k = ent_key(e, &n);
    return dict_hash(k, n);
}

/* The slot holding key, or NULL; stops at the first resident closer to its
 * home than we are to ours (empty slots included: distance field 0). */
static inline uint64_t *
tab_find(const struct dict_tab *t, uint64_t h, const char *key, size_t klen)
{
    uint64_t *sl = t->slots + tab_home(t, h);
    uint64_t want = ((h << SLOT_TAG_SHIFT) & SLOT_TAG_MASK) | SLOT_D_ONE;
    for (;;) {
        uint64_t s = *sl;
        if ((s & SLOT_HI_MASK) == want) {
            if (ent_key_eq(slot_ent(s), key, klen)) {
                return sl;
            }
        } else if (s < (want & ~SLOT_TAG_MASK)) {
            return NULL;
        }
        sl++;
        want += SLOT_D_ONE;
    }
}

/* The slot pointing at e (hash h), or NULL; no dereference. */
static inline uint64_t *
tab_find_ptr(const struct dict_tab *t, uint64_t h, const struct dict_entry *e)
{
    uint64_t *sl = t->slots + tab_home(t, h);
    uint64_t want = slot_make(e, h, 1);
    for (;;) {
        uint64_t s = *sl;
        if (s == want) {
            return sl;
        }
        if (s < (want & ~(SLOT_TAG_MASK | SLOT_PTR_MASK))) {
            return NULL;
        }
        sl++;
        want += SLOT_D_ONE;
    }
}

/* Robin hood insert of an absent key; false (nothing changed) when a distance
 * would pass the cap or the run would reach the sentinel. */
static bool
tab_insert(struct dict_tab *t, uint64_t h, const struct dict_entry *e)
{
    uint64_t *sl = t->slots;
    size_t pos = tab_home(t, h), end;
    uint64_t cur = slot_make(e, h, 1);

    while (slot_d1(sl[pos]) >= slot_d1(cur)) {
        pos++;
        cur += SLOT_D_ONE;
        if (slot_d1(cur) >= SLOT_D1_MAX) {
            return false;
        }
    }
    for (end = pos; sl[end] != 0; end++) {
        if (slot_d1(sl[end]) >= SLOT_D1_MAX - 1) {
            return false;
        }
    }
    if (end >= t->cap) {
        return false;
    }
    for (size_t i = end; i > pos; i--) {
        sl[i] = sl[i - 1] + SLOT_D_ONE;
    }
    sl[pos] = cur;
    t->count++;
    return true;
}

static void
tab_del_at(struct dict_tab *t, size_t pos)
{
    uint64_t *sl = t->slots;
    while (slot_d1(sl[pos + 1]) > 1) {
        sl[pos] = sl[pos + 1] - SLOT_D_ONE;
        pos++;
    }
    sl[pos] = 0;
    t->count--;
}

/* Move every entry of t into a new table of about n home slots at once. Only
 * when an insert overflows a table that is itself a rehash target (rare). */
static void
tab_rebuild(struct dict_tab *t, size_t n)
{
    for (;;) {
        struct dict_tab nt;
        bool ok = true;
        tab_alloc(&nt, n);
        for (size_t i = 0; i < t->cap && ok; i++) {
            if (t->slots[i] != 0) {
                struct dict_entry *e = slot_ent(t->slots[i]);
                ok = tab_insert(&nt, ent_hash(e), e);
            }
        }
        if (ok) {
            tab_free(t);
            *t = nt;
            return;
        }
        tab_free(&nt);
        n += n / 2;
    }
}

/* ------------------------------------------------------------------ dicts */

static inline bool
d_rehashing(const struct dict *d)
{
    return d->old.slots != NULL;
}

static size_t
d_target(size_t count)
{
    size_t n = count * 10 / 7 + 1;   /* load 0.7 after a resize */
    return n < TAB_MIN ? TAB_MIN : n;
}

static void
d_start_resize(struct dict *d, size_t n)
{
    d->old = d->cur;
    d->rpos = 0;
    tab_alloc(&d->cur, n);
}

static void
d_check_resize(struct dict *d)
{
    size_t c = d->cur.count, n = d->cur.n, nn;
    if (d_rehashing(d)) {
        return;
    }
    if (c * 10 > n * 9 || (n > TAB_MIN && c * 10 < n)) {
        nn = d_target(c);
        if (nn != n) {
            d_start_resize(d, nn);
        }
    }
}

static void
d_finish_if_done(struct dict *d)
{
    if (d->old.slots != NULL && d->old.count == 0) {
        tab_free(&d->old);
        d->rpos = 0;
        d_check_resize(d);
    }
}

static void
d_insert(struct dict *d, uint64_t h, const struct dict_entry *e)
{
    if (rv_likely(tab_insert(&d->cur, h, e))) {
        d_check_resize(d);
        return;
    }
    if (!d_rehashing(d)) {
        size_t nn = d_target(d->cur.count + 1);
        if (nn < d->cur.n + d->cur.n / 2) {
            nn = d->cur.n + d->cur.n / 2;
        }
        d_start_resize(d, nn);
    }
    while (!tab_insert(&d->cur, h, e)) {
        tab_rebuild(&d->cur, d->cur.n + d->cur.n / 2);
    }
}

/* Bounded rehash work done by every add/delete: enough that a drain always
 * finishes before the new table (sized for load 0.7) itself reaches 0.9. */
#define DICT_STEP_MOVES 8
#define DICT_STEP_VISITS 64

static void
d_step(struct dict *d)
{
    size_t moved = 0, visits = 0;
    uint64_t *sl = d->old.slots;

    if (rv_likely(sl == NULL)) {
        return;
    }
    while (moved < DICT_STEP_MOVES && d->old.count > 0 && visits < DICT_STEP_VISITS) {
        uint64_t s = sl[d->rpos];
        struct dict_entry *e;
        uint64_t h;
        if (s == 0) {
            d->rpos++;
            visits++;
            continue;
        }
        e = slot_ent(s);
        h = ent_hash(e);
        while (!tab_insert(&d->cur, h, e)) {
            tab_rebuild(&d->cur, d->cur.n + d->cur.n / 2);
        }
        tab_del_at(&d->old, d->rpos);
        moved++;
    }
    d_finish_if_done(d);
}

static inline uint64_t *
d_find(const struct dict *d, uint64_t h, const char *key, size_t klen, struct dict_tab **tp)
{
    uint64_t *sl = tab_find(&d->cur, h, key, klen);
    if (sl != NULL) {
        *tp = (struct dict_tab *)&d->cur;
        return sl;
    }
    if (rv_unlikely(d->old.slots != NULL) && (sl = tab_find(&d->old, h, key, klen)) != NULL) {
        *tp = (struct dict_tab *)&d->old;
        return sl;
    }
    return NULL;
}

static uint64_t *
d_find_ptr(const struct dict *d, uint64_t h, const struct dict_entry *e)
{
    uint64_t *sl = tab_find_ptr(&d->cur, h, e);
    if (sl == NULL && d->old.slots != NULL) {
        sl = tab_find_ptr(&d->old, h, e);
    }
    if (sl == NULL) {
        fprintf(stderr, "dict: entry missing from its table\n");
        abort();
    }
    return sl;
}

struct dict *
dict_create_kind(enum dict_kind kind)
{
    struct dict *d = rv_calloc(1, sizeof(*d));
    d->kind = kind;
    tab_alloc(&d->cur, TAB_MIN);
    return d;
}

struct dict *
dict_create(void)
{
    return dict_create_kind(DICT_U64);
}

static void
tab_free_entries(struct dict_tab *t, bool u64, void (*free_val)(void *))
{
    for (size_t i = 0; t->slots != NULL && i < t->cap; i++) {
        if (t->slots[i] != 0) {
            struct dict_entry *e = slot_ent(t->slots[i]);
            if (u64 && free_val != NULL) {
                free_val(dict_val_ptr(e));
            }
            rv_free(e);
        }
    }
    tab_free(t);
}

void
dict_destroy(struct dict *d, void (*free_val)(void *))
{
    if (d == NULL) {
        return;
    }
    tab_free_entries(&d->cur, d->kind == DICT_U64, free_val);
    tab_free_entries(&d->old, d->kind == DICT_U64, free_val);
    rv_free(d);
}

size_t
dict_size(const struct dict *d)
{
    return d->cur.count + d->old.count;
}

size_t
dict_mem(const struct dict *d)
{
    return mem_class(sizeof(*d)) + tab_bytes(&d->cur) + tab_bytes(&d->old) + d->ent_bytes;
}

void
dict_reserve(struct dict *d, size_t n)
{
    size_t nn = d_target(n);
    if (d_rehashing(d) || nn <= d->cur.n) {
        return;
    }
    if (d->cur.count == 0) {
        tab_free(&d->cur);
        tab_alloc(&d->cur, nn);
    } else {
        d_start_resize(d, nn);
    }
}

struct dict_entry *
dict_find(struct dict *d, const char *key, size_t klen)
{
    struct dict_tab *t;
    uint64_t *sl = d_find(d, dict_hash(key, klen), key, klen, &t);
    return sl != NULL ? slot_ent(*sl) : NULL;
}

static struct dict_entry *
d_add(struct dict *d, const char *key, size_t klen, size_t vlen, bool *created)
{
    struct dict_tab *t;
    uint64_t h, *sl;
    struct dict_entry *e;
    size_t size;

    d_step(d);
    h = dict_hash(key, klen);
    sl = d_find(d, h, key, klen, &t);
    if (sl != NULL) {
        *created = false;
        return slot_ent(*sl);
    }
    e = ent_new(d->kind, key, klen, vlen, &size);
    d->ent_bytes += mem_class(size);
    d_insert(d, h, e);
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
    struct dict_tab *t;
    uint64_t h, *sl;
    struct dict_entry *e;

    d_step(d);
    h = dict_hash(key, klen);
    sl = d_find(d, h, key, klen, &t);
    if (sl == NULL) {
        return false;
    }
    e = slot_ent(*sl);
    if (val != NULL) {
        *val = d->kind == DICT_U64 ? dict_val(e) : 0;
    }
    tab_del_at(t, (size_t)(sl - t->slots));
    d->ent_bytes -= mem_class(ent_size(e, d->kind));
    rv_free(e);
    if (d_rehashing(d)) {
        d_finish_if_done(d);
    } else {
        d_check_resize(d);
    }
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
        uint64_t h = ent_hash(e);
        uint64_t *sl = d_find_ptr(d, h, e);
        ne = ent_check(rv_realloc(e, newsz));
        *sl = (*sl & ~SLOT_PTR_MASK) | ((uint64_t)(uintptr_t)ne >> 3);
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

struct dict *
dict_dup(const struct dict *d)
{
    struct dict *n = dict_create_kind(d->kind);
    const struct dict_tab *tabs[2] = { &d->cur, &d->old };

    dict_reserve(n, dict_size(d));
    for (int i = 0; i < 2; i++) {
        const struct dict_tab *t = tabs[i];
        for (size_t j = 0; t->slots != NULL && j < t->cap; j++) {
            if (t->slots[j] != 0) {
                const struct dict_entry *e = slot_ent(t->slots[j]);
                size_t sz = ent_size(e, d->kind);
                struct dict_entry *c = ent_check(rv_malloc(sz));
                memcpy(c, e, sz);
                n->ent_bytes += mem_class(sz);
                d_insert(n, ent_hash(c), c);
            }
        }
    }
    return n;
}

/* -------------------------------------------------------------- iteration */

static inline bool
scan_in_range(const struct dict_entry *e, uint64_t lo, uint64_t hi)
{
    uint64_t h = ent_hash(e);
    return h >= lo && (hi == 0 || h < hi);
}

uint64_t
dict_scan(struct dict *d, uint64_t cursor, size_t count, dict_scan_fn *fn, void *arg)
{
    struct dict_tab *big = &d->cur, *small = NULL;
    size_t s, pos, seen = 0, empties = 0;
    uint64_t next;

    if (d_rehashing(d)) {
        if (d->old.n > d->cur.n) {
            big = &d->old;
            small = &d->cur;
        } else {
            small = &d->old;
        }
    }
    if (count == 0) {
        count = 1;
    }
    s = tab_home(big, cursor);
    for (pos = s;; pos++) {
        uint64_t v = big->slots[pos];
        size_t home;
        if (v == 0) {
            if (pos >= big->n) {
                break;
            }
            if (pos > s && (seen >= count || empties >= 10 * count)) {
                break;
            }
            empties++;
            continue;
        }
        home = pos + 1 - slot_d1(v);
        if (home < s || (home == s && !scan_in_range(slot_ent(v), cursor, 0))) {
            continue;
        }
        fn(arg, slot_ent(v));
        seen++;
    }
    if (pos >= big->n) {
        next = 0;
    } else {
        next = (uint64_t)((((dict_u128)pos << 64) + big->n - 1) / big->n);
    }
    if (small != NULL) {
        size_t ss = tab_home(small, cursor);
        size_t se = next != 0 ? tab_home(small, next - 1) : small->n;
        for (pos = ss;; pos++) {
            uint64_t v = small->slots[pos];
            size_t home;
            if (v == 0) {
                if (pos > se || pos >= small->cap) {
                    break;
                }
                continue;
            }
            home = pos + 1 - slot_d1(v);
            if (home < ss || home > se) {
                continue;
            }
            if ((home == ss || home == se) && !scan_in_range(slot_ent(v), cursor, next)) {
                continue;
            }
            fn(arg, slot_ent(v));
        }
    }
    return next;
}

void
dict_foreach(struct dict *d, dict_scan_fn *fn, void *arg)
{
    struct dict_tab *tabs[2] = { &d->cur, &d->old };
    for (int i = 0; i < 2; i++) {
        struct dict_tab *t = tabs[i];
        for (size_t j = 0; t->slots != NULL && j < t->cap; j++) {
            if (t->slots[j] != 0) {
                fn(arg, slot_ent(t->slots[j]));
            }
        }
    }
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
    total = d->cur.cap + (d_rehashing(d) ? d->old.cap : 0);
    for (int tries = 0; tries < 256; tries++) {
        i = (size_t)(((dict_u128)splitmix64(&x) * total) >> 64);
        if (i < d->cur.cap) {
            if (d->cur.slots[i] != 0) {
                return slot_ent(d->cur.slots[i]);
            }
        } else if (d->old.slots[i - d->cur.cap] != 0) {
            return slot_ent(d->old.slots[i - d->cur.cap]);
        }
    }
    for (size_t k = 0; k < total; k++, i = (i + 1) % total) {
        uint64_t s = i < d->cur.cap ? d->cur.slots[i] : d->old.slots[i - d->cur.cap];
        if (s != 0) {
            return slot_ent(s);
        }
    }
    return NULL;
}
