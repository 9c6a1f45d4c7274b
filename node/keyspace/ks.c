/* node/keyspace/ks.c: one shard's keyspace.
 *
 * Entries. Each key is one allocation:
 *
 *   byte 0      flags: type (3 bits), INT, int width (2 bits), RAW, EXP;
 *               for other types RAW means INL (the value is inline bytes)
 *   bytes 1-3   access clock, little-endian: unix seconds mod 2^24, or in LFU
 *               mode (ks_set_lfu) decay minute << 8 | log counter
 *   varint      key length
 *   varint      value length (non-int strings and INL values only)
 *   8 bytes     absolute deadline in unix ms (only with EXP)
 *   key bytes
 *   value       string bytes | int64 in 1/2/4/8 bytes LE | (ptr, free_fn)
 *               | a small collection's packed bytes (INL)
 *
 * Nothing in an entry is aligned; multi-byte fields go through memcpy.
 *
 * Tables. Open addressing with linear probing, robin hood insertion and
 * backward-shift deletion, no tombstones, no wraparound. A table has n home
 * slots followed by a small overflow area and one always-empty sentinel slot,
 * so probes never need a bounds check. home(h) = (h * n) >> 64 (fastrange),
 * which is monotonic in h for any n, so sizes are not powers of two.
 *
 * A slot is one uint64_t: bits 0-44 the entry pointer >> 3 (entries are at
 * least 8-aligned and below 2^48), bits 45-55 an 11-bit tag from the low bits
 * of the hash (independent of the home, which comes from the high bits), bits
 * 56-63 the probe distance + 1 (0 = empty). Keeping the distance in the slot
 * instead of more tag bits is deliberate: robin hood insertion, backward-shift
 * deletion, early-terminating lookups and SCAN all need each resident's home,
 * and this gives it without touching the entry or rehashing its key. A lookup
 * compares tag and distance together (19 bits, exact for a key at our home),
 * so a false dereference happens about once per 2^11 probes.
 *
 * Robin hood keeps every cluster sorted by home; a lookup stops as soon as a
 * resident is closer to its home than we are to ours. Distances are capped at
 * 254 and the overflow area is finite: an insert that would exceed either
 * grows the table at once (rare).
 *
 * Resizing is incremental. Growing (load > 0.9) or shrinking (load < 0.1)
 * allocates a table for count / 0.7 (so the table costs 8.9-11.4 bytes per
 * key at any size, with a growth factor of 1.29 per resize) and moves the old table's entries in slot
 * order, a few per write call and more in ks_rehash_step(). Lookups search
 * both tables; inserts go to the new one. Expiring keys are also indexed in a
 * second table of the same kind (same pointers, same hash). */
#include "node/keyspace/ks.h"
#include "base/strnum.h"

#include "base/bytes.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/varint.h"
#include "base/siphash.h"
#include "node/keyspace/ks_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 ks_u128;

/* ---------------------------------------------------------------- entries */

struct ks_entry {
    uint8_t flags;
    uint8_t clk[3];
    uint8_t rest[];
};

#define EF_TYPE 0x07u
#define EF_INT 0x08u
#define EF_ISZ_SHIFT 4
#define EF_ISZ 0x30u
#define EF_RAW 0x40u
#define EF_INL EF_RAW    /* non-string types: the value is inline bytes */
#define EF_EXP 0x80u

#define KS_EMBSTR_MAX 44
#define KS_CLK_MASK 0xffffffu
#define KS_PTRVAL_LEN (sizeof(void *) + sizeof(ks_free_fn *))

struct ent_lay {
    uint8_t *dl;       /* deadline bytes, NULL without EXP */
    uint8_t *key;
    size_t klen;
    uint8_t *val;
    size_t vlen;       /* bytes stored: int width, 16 for pointers */
};

static inline void
ent_lay(const struct ks_entry *e, struct ent_lay *l)
{
    const uint8_t *p = e->rest;
    unsigned f = e->flags;
    size_t klen, vlen;

    p = varint_get(p, &klen);
    if ((f & EF_TYPE) != KS_STRING && !(f & EF_INL)) {
        vlen = KS_PTRVAL_LEN;
    } else if (f & EF_INT) {
        vlen = (size_t)1 << ((f & EF_ISZ) >> EF_ISZ_SHIFT);
    } else {
        p = varint_get(p, &vlen);
    }
    l->dl = NULL;
    if (f & EF_EXP) {
        l->dl = (uint8_t *)(uintptr_t)p;
        p += 8;
    }
    l->key = (uint8_t *)(uintptr_t)p;
    l->klen = klen;
    l->val = l->key + klen;
    l->vlen = vlen;
}

/* Whether the value length is stored: raw strings and inline values. */
static inline bool
ent_has_vlen(unsigned flags)
{
    return (flags & EF_TYPE) == KS_STRING ? !(flags & EF_INT) : (flags & EF_INL) != 0;
}

/* Header bytes before the key for these flags and lengths. */
static inline size_t
ent_hdr_size(unsigned flags, size_t klen, size_t vlen)
{
    size_t n = sizeof(struct ks_entry) + varint_len(klen);
    if (ent_has_vlen(flags)) {
        n += varint_len(vlen);
    }
    if (flags & EF_EXP) {
        n += 8;
    }
    return n;
}

static inline size_t
ent_used(const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return (size_t)(l.val + l.vlen - (const uint8_t *)e);
}

static inline int64_t
ent_deadline(const struct ks_entry *e)
{
    struct ent_lay l;
    int64_t dl;
    if (!(e->flags & EF_EXP)) {
        return KS_NO_EXPIRE;
    }
    ent_lay(e, &l);
    memcpy(&dl, l.dl, sizeof(dl));
    return dl;
}

static inline void
ent_clk_set(struct ks_entry *e, uint32_t s)
{
    e->clk[0] = (uint8_t)s;
    e->clk[1] = (uint8_t)(s >> 8);
    e->clk[2] = (uint8_t)(s >> 16);
}

static inline uint32_t
ent_clk_get(const struct ks_entry *e)
{
    return (uint32_t)e->clk[0] | (uint32_t)e->clk[1] << 8 | (uint32_t)e->clk[2] << 16;
}

/* Writes the header for flags/klen/vlen/deadline and the key; returns the
 * value position. The caller has sized e with ent_hdr_size + klen + vlen. key
 * may point into e itself (it is moved first) or be NULL (already in place). */
static uint8_t *
ent_write_hdr(struct ks_entry *e, unsigned flags, uint32_t clk, const void *key, size_t klen,
              size_t vlen, int64_t dl)
{
    uint8_t *p = e->rest;
    uint8_t *kp = (uint8_t *)e + ent_hdr_size(flags, klen, vlen);
    if (key != NULL && key != (const void *)kp) {   /* an overwrite in place keeps its key */
        memmove(kp, key, klen);
    }
    e->flags = (uint8_t)flags;
    ent_clk_set(e, clk);
    p = varint_put(p, klen);
    if (ent_has_vlen(flags)) {
        p = varint_put(p, vlen);
    }
    if (flags & EF_EXP) {
        memcpy(p, &dl, sizeof(dl));
    }
    return kp + klen;
}

static inline unsigned
int_code(int64_t v)
{
    if (v >= INT8_MIN && v <= INT8_MAX) {
        return 0;
    }
    if (v >= INT16_MIN && v <= INT16_MAX) {
        return 1;
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
        return 2;
    }
    return 3;
}

static inline void
int_put(uint8_t *p, unsigned code, int64_t v)
{
    uint64_t u = (uint64_t)v;
    size_t n = (size_t)1 << code;
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(u >> (8 * i));
    }
}

static inline int64_t
int_get(const uint8_t *p, unsigned code)
{
    size_t n = (size_t)1 << code;
    uint64_t u = 0;
    unsigned shift = (unsigned)(64 - 8 * n);
    for (size_t i = 0; i < n; i++) {
        u |= (uint64_t)p[i] << (8 * i);
    }
    return (int64_t)(u << shift) >> shift;   /* sign-extend */
}

bool
ks_str_parse_int(const char *p, size_t n, int64_t *out)
{
    return str_to_i64(p, n, out);
}

/* ----------------------------------------------------------------- tables */

#define SLOT_PTR_MASK ((UINT64_C(1) << 45) - 1)
#define SLOT_TAG_SHIFT 45
#define SLOT_TAG_MASK (UINT64_C(0x7ff) << SLOT_TAG_SHIFT)
#define SLOT_D_SHIFT 56
#define SLOT_D_ONE (UINT64_C(1) << SLOT_D_SHIFT)
#define SLOT_HI_MASK (~SLOT_PTR_MASK)
#define SLOT_D1_MAX 255u    /* stored distance + 1 never exceeds 254: see tab_find */
#define TAB_MIN 16

struct ks_tab {
    uint64_t *slots;   /* cap + 1 slots; slots[cap] stays 0 */
    size_t n;          /* home slots */
    size_t cap;        /* n + overflow */
    size_t count;
};

struct ks_dict {
    struct ks_tab cur;   /* inserts go here */
    struct ks_tab old;   /* being drained while old.slots != NULL */
    size_t rpos;         /* old.slots[0, rpos) are empty */
};

struct ks {
    struct ks_dict main;
    struct ks_dict exp;
    uint64_t k0, k1;
    int64_t now_ms;               /* latest clock seen; access clock of new entries */
    size_t exp_cursor;            /* active expiry position in the expires index */
    size_t op_moves;
    size_t sync_rebuilds;
    size_t overflow_grows;
    struct ks_stats stats;
    size_t reserved;              /* ks_reserve(): no shrinking below this many slots */
    ks_expire_hook_fn *on_expire;  /* before an expired or evicted entry is freed (WAL: DEL) */
    void *on_expire_arg;
    bool lfu;                     /* access clock holds LFU (minutes << 8 | counter) */
    unsigned lfu_log_factor;
    unsigned lfu_decay_min;
    uint64_t rnd;                 /* LFU's probabilistic increments */
    bool replica;                 /* expired keys are hidden, never deleted (replication) */
};

static inline unsigned
slot_d1(uint64_t s)
{
    return (unsigned)(s >> SLOT_D_SHIFT);
}

static inline struct ks_entry *
slot_ent(uint64_t s)
{
    return (struct ks_entry *)(uintptr_t)((s & SLOT_PTR_MASK) << 3);
}

static inline uint64_t
slot_make(const struct ks_entry *e, uint64_t h, unsigned d1)
{
    return ((uint64_t)(uintptr_t)e >> 3) | ((h << SLOT_TAG_SHIFT) & SLOT_TAG_MASK) |
           ((uint64_t)d1 << SLOT_D_SHIFT);
}

static inline size_t
tab_home(const struct ks_tab *t, uint64_t h)
{
    return (size_t)(((ks_u128)h * t->n) >> 64);
}

static size_t
tab_overflow(size_t n)
{
    size_t o = n / 4;
    if (o < 8) {
        o = 8;
    }
    return o > 256 ? 256 : o;
}

static void
tab_alloc(struct ks_tab *t, size_t n)
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
tab_free(struct ks_tab *t)
{
    if (t->slots) {
        rv_free_big(t->slots, (t->cap + 1) * sizeof(*t->slots));
    }
    memset(t, 0, sizeof(*t));
}

bool
ks_int_key_eq(const void *a, const char *b, size_t n)
{
    return rv_short_eq(a, b, n);
}

static inline bool
ent_key_eq(const struct ks_entry *e, const char *key, size_t klen)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return l.klen == klen && rv_short_eq(l.key, key, klen);
}

/* The slot holding key, or NULL. Stops at the first resident closer to its
 * home than we are to ours (this covers empty slots: distance field 0). The
 * distance of the probe never reaches 255 because stored values are <= 254. */
static inline __attribute__((always_inline)) uint64_t *
tab_find(const struct ks_tab *t, uint64_t h, const char *key, size_t klen)
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

/* The slot pointing at e (whose key hashes to h), or NULL; no dereference. */
static inline uint64_t *
tab_find_ptr(const struct ks_tab *t, uint64_t h, const struct ks_entry *e)
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

/* Robin hood insert of a key known to be absent. false: no room (a distance
 * would exceed the cap or the run would reach the sentinel); nothing changed. */
static bool
tab_insert(struct ks_tab *t, uint64_t h, const struct ks_entry *e)
{
    uint64_t *sl = t->slots;
    size_t pos = tab_home(t, h), end;
    uint64_t cur = slot_make(e, h, 1);

    /* Clusters are sorted by home: we go before the first resident whose home
     * is after ours, i.e. that is closer to its home than we would be. */
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

/* Backward-shift deletion: pull the following displaced residents back. */
static void
tab_del_at(struct ks_tab *t, size_t pos)
{
    uint64_t *sl = t->slots;
    while (slot_d1(sl[pos + 1]) > 1) {
        sl[pos] = sl[pos + 1] - SLOT_D_ONE;
        pos++;
    }
    sl[pos] = 0;
    t->count--;
}

/* ------------------------------------------------------------------ dicts */

uint64_t
ks_hash(const struct ks *ks, const char *p, size_t n)
{
    return siphash_13(ks->k0, ks->k1, p, n);
}

static inline uint64_t
ent_hash(const struct ks *ks, const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return ks_hash(ks, (const char *)l.key, l.klen);
}

static inline bool
dict_rehashing(const struct ks_dict *d)
{
    return d->old.slots != NULL;
}

static inline size_t
dict_count(const struct ks_dict *d)
{
    return d->cur.count + d->old.count;
}

static size_t
dict_target(size_t count)
{
    return count * 10 / 7 + 1;   /* load 0.7 after a resize */
}

static void
ks_upd_rehash_stat(struct ks *ks)
{
    ks->stats.rehashing = dict_rehashing(&ks->main) || dict_rehashing(&ks->exp);
}

/* Move every entry of t into a new table of about n home slots, synchronously.
 * Only used when an insert overflows a table that is itself the target of a
 * rehash (both the distance cap and the overflow area are exceeded only by
 * unlucky clusters, so this is rare). */
static void
tab_rebuild(struct ks *ks, struct ks_tab *t, size_t n)
{
    for (;;) {
        struct ks_tab nt;
        bool ok = true;
        tab_alloc(&nt, n);
        for (size_t i = 0; i < t->cap && ok; i++) {
            if (t->slots[i] != 0) {
                struct ks_entry *e = slot_ent(t->slots[i]);
                ok = tab_insert(&nt, ent_hash(ks, e), e);
            }
        }
        if (ok) {
            tab_free(t);
            *t = nt;
            ks->sync_rebuilds++;
            return;
        }
        tab_free(&nt);
        n += n / 2;
    }
}

static void
dict_start_resize(struct ks *ks, struct ks_dict *d, size_t n)
{
    d->old = d->cur;
    d->rpos = 0;
    tab_alloc(&d->cur, n);
    ks_upd_rehash_stat(ks);
}

/* Start a resize when the load leaves [0.1, 0.9] (tables never go below
 * TAB_MIN home slots). Never while a rehash is already running. */
static void
dict_check_resize(struct ks *ks, struct ks_dict *d)
{
    size_t c = d->cur.count, n = d->cur.n, nn;
    if (dict_rehashing(d)) {
        return;
    }
    if (c * 10 > n * 9 || (n > TAB_MIN && n > ks->reserved && c * 10 < n)) {
        nn = dict_target(c);
        if (nn < TAB_MIN) {
            nn = TAB_MIN;
        }
        if (nn != n) {
            dict_start_resize(ks, d, nn);
        }
    }
}

static void
dict_finish_if_done(struct ks *ks, struct ks_dict *d)
{
    if (d->old.count == 0) {
        tab_free(&d->old);
        d->rpos = 0;
        ks_upd_rehash_stat(ks);
        dict_check_resize(ks, d);
    }
}

static void
dict_insert(struct ks *ks, struct ks_dict *d, uint64_t h, const struct ks_entry *e)
{
    if (rv_likely(tab_insert(&d->cur, h, e))) {
        dict_check_resize(ks, d);
        return;
    }
    if (!dict_rehashing(d)) {
        size_t nn = dict_target(d->cur.count + 1);
        if (nn < d->cur.n + d->cur.n / 2) {
            nn = d->cur.n + d->cur.n / 2;
        }
        ks->overflow_grows++;
        dict_start_resize(ks, d, nn);
    }
    while (!tab_insert(&d->cur, h, e)) {
        tab_rebuild(ks, &d->cur, d->cur.n + d->cur.n / 2);
    }
}

/* Move up to max_moves entries (visiting up to max_visits empty slots) from
 * the old table to the new one. Returns the number moved. */
static size_t
dict_migrate(struct ks *ks, struct ks_dict *d, size_t max_moves, size_t max_visits)
{
    size_t moved = 0, visits = 0;
    uint64_t *sl = d->old.slots;

    while (moved < max_moves && d->old.count > 0 && visits < max_visits) {
        uint64_t s = sl[d->rpos];
        struct ks_entry *e;
        uint64_t h;
        if (s == 0) {
            d->rpos++;
            visits++;
            continue;
        }
        if (d->rpos + 4 < d->old.cap && sl[d->rpos + 4] != 0) {
            __builtin_prefetch(slot_ent(sl[d->rpos + 4]));
        }
        e = slot_ent(s);
        h = ent_hash(ks, e);
        while (!tab_insert(&d->cur, h, e)) {
            tab_rebuild(ks, &d->cur, d->cur.n + d->cur.n / 2);
        }
        tab_del_at(&d->old, d->rpos);
        moved++;
    }
    ks->op_moves += moved;
    dict_finish_if_done(ks, d);
    return moved;
}

/* Bounded rehash work done by every write call. */
#define KS_STEP_MOVES 4
#define KS_STEP_VISITS 32

static inline void
ks_step(struct ks *ks)
{
    ks->op_moves = 0;
    if (rv_unlikely(ks->stats.rehashing)) {
        if (dict_rehashing(&ks->main)) {
            dict_migrate(ks, &ks->main, KS_STEP_MOVES, KS_STEP_VISITS);
        }
        if (dict_rehashing(&ks->exp)) {
            dict_migrate(ks, &ks->exp, KS_STEP_MOVES, KS_STEP_VISITS);
        }
    }
}

static inline __attribute__((always_inline)) uint64_t *
dict_find(const struct ks_dict *d, uint64_t h, const char *key, size_t klen, struct ks_tab **tp)
{
    uint64_t *sl = tab_find(&d->cur, h, key, klen);
    if (sl != NULL) {
        *tp = (struct ks_tab *)&d->cur;
        return sl;
    }
    if (rv_unlikely(d->old.slots != NULL) && (sl = tab_find(&d->old, h, key, klen)) != NULL) {
        *tp = (struct ks_tab *)&d->old;
        return sl;
    }
    return NULL;
}

static uint64_t *
dict_find_ptr(const struct ks_dict *d, uint64_t h, const struct ks_entry *e, struct ks_tab **tp)
{
    uint64_t *sl = tab_find_ptr(&d->cur, h, e);
    if (sl != NULL) {
        *tp = (struct ks_tab *)&d->cur;
        return sl;
    }
    if (d->old.slots != NULL && (sl = tab_find_ptr(&d->old, h, e)) != NULL) {
        *tp = (struct ks_tab *)&d->old;
        return sl;
    }
    return NULL;
}

static void
dict_remove_ptr(struct ks *ks, struct ks_dict *d, uint64_t h, const struct ks_entry *e)
{
    struct ks_tab *t;
    uint64_t *sl = dict_find_ptr(d, h, e, &t);
    if (sl == NULL) {
        fprintf(stderr, "ks: entry missing from its index\n");
        abort();
    }
    tab_del_at(t, (size_t)(sl - t->slots));
    if (dict_rehashing(d)) {
        dict_finish_if_done(ks, d);
    } else {
        dict_check_resize(ks, d);
    }
}

static void
dict_repoint(struct ks_dict *d, uint64_t h, const struct ks_entry *old, const struct ks_entry *e)
{
    struct ks_tab *t;
    uint64_t *sl = dict_find_ptr(d, h, old, &t);
    if (sl == NULL) {
        fprintf(stderr, "ks: entry missing from its index\n");
        abort();
    }
    *sl = (*sl & ~SLOT_PTR_MASK) | ((uint64_t)(uintptr_t)e >> 3);
}

static void
dict_init(struct ks_dict *d)
{
    memset(d, 0, sizeof(*d));
    tab_alloc(&d->cur, TAB_MIN);
}

/* ------------------------------------------------------------ entry glue */

static struct ks_entry *
ent_alloc(size_t size)
{
    struct ks_entry *e = rv_malloc(size);
    if (rv_unlikely(((uintptr_t)e & 7) != 0 || ((uint64_t)(uintptr_t)e >> 48) != 0)) {
        fprintf(stderr, "ks: allocator returned an address the table cannot store\n");
        abort();
    }
    return e;
}

static struct ks_entry *
ent_realloc(struct ks_entry *e, size_t size)
{
    struct ks_entry *ne = rv_realloc(e, size);
    if (rv_unlikely(((uintptr_t)ne & 7) != 0 || ((uint64_t)(uintptr_t)ne >> 48) != 0)) {
        fprintf(stderr, "ks: allocator returned an address the table cannot store\n");
        abort();
    }
    return ne;
}

static void
ent_free(struct ks_entry *e)
{
    if ((e->flags & EF_TYPE) != KS_STRING && !(e->flags & EF_INL)) {
        struct ent_lay l;
        void *ptr;
        ks_free_fn *fn;
        ent_lay(e, &l);
        memcpy(&ptr, l.val, sizeof(ptr));
        memcpy(&fn, l.val + sizeof(ptr), sizeof(fn));
        if (fn != NULL) {
            fn(ptr);
        }
    }
    rv_free(e);
}

/* LFU (when ks->lfu): the 24 clock bits hold the minute of the last decay
 * (16 bits) and a logarithmic access counter (8 bits); new keys start at 5 so
 * they are not evicted before they had a chance to be used. */
#define KS_LFU_INIT 5u

static inline uint32_t
lfu_minutes(int64_t now_ms)
{
    return (uint32_t)((uint64_t)(now_ms / 60000) & 0xffffu);
}

/* The counter after decaying one step per lfu_decay_min minutes elapsed. */
static inline unsigned
lfu_decayed(const struct ks *ks, uint32_t clk, int64_t now_ms)
{
    unsigned ctr = clk & 0xffu;
    uint32_t elapsed = (lfu_minutes(now_ms) - (clk >> 8)) & 0xffffu;
    uint32_t periods = ks->lfu_decay_min ? elapsed / ks->lfu_decay_min : 0;
    return periods >= ctr ? 0 : ctr - periods;
}

static void
lfu_touch(struct ks *ks, struct ks_entry *e, int64_t now_ms)
{
    unsigned ctr = lfu_decayed(ks, ent_clk_get(e), now_ms);
    if (ctr < 255) {
        /* Increment with probability 1 / ((ctr - init) * factor + 1). */
        double base = ctr > KS_LFU_INIT ? (double)(ctr - KS_LFU_INIT) : 0.0;
        ks->rnd ^= ks->rnd << 13;
        ks->rnd ^= ks->rnd >> 7;
        ks->rnd ^= ks->rnd << 17;
        double r = (double)(ks->rnd >> 11) * (1.0 / 9007199254740992.0);
        if (r < 1.0 / (base * ks->lfu_log_factor + 1.0)) {
            ctr++;
        }
    }
    ent_clk_set(e, lfu_minutes(now_ms) << 8 | ctr);
}

static inline uint32_t
ks_clk_now(const struct ks *ks)
{
    if (rv_unlikely(ks->lfu)) {
        return lfu_minutes(ks->now_ms) << 8 | KS_LFU_INIT;
    }
    return (uint32_t)((uint64_t)(ks->now_ms / 1000) & KS_CLK_MASK);
}

/* The access clock of a value stored over old (NULL: a new key): under LFU an
 * overwrite keeps the key's counter, as Redis does. */
static inline uint32_t
ks_clk_put(const struct ks *ks, const struct ks_entry *old)
{
    if (rv_unlikely(ks->lfu)) {
        return old != NULL ? ent_clk_get(old) : lfu_minutes(ks->now_ms) << 8 | KS_LFU_INIT;
    }
    return (uint32_t)((uint64_t)(ks->now_ms / 1000) & KS_CLK_MASK);
}

/* e (hash h) moved to ne; fix both indexes. */
static void
ks_repoint(struct ks *ks, uint64_t h, const struct ks_entry *e, const struct ks_entry *ne,
           bool had_exp, bool has_exp)
{
    if (e != ne) {
        dict_repoint(&ks->main, h, e, ne);
    }
    if (had_exp && has_exp) {
        if (e != ne) {
            dict_repoint(&ks->exp, h, e, ne);
        }
    } else if (had_exp) {
        dict_remove_ptr(ks, &ks->exp, h, e);
    } else if (has_exp) {
        dict_insert(ks, &ks->exp, h, ne);
    }
}

/* Remove e (hash h) from both indexes; does not free it. */
static void
ks_unlink(struct ks *ks, uint64_t h, const struct ks_entry *e)
{
    if (e->flags & EF_EXP) {
        dict_remove_ptr(ks, &ks->exp, h, e);
    }
    dict_remove_ptr(ks, &ks->main, h, e);
}

/* A value to store: flags (type, INT, width) and its bytes. */
struct ks_val {
    unsigned flags;
    const void *p;
    size_t len;
    uint8_t buf[16];
};

static void
val_of_int(struct ks_val *v, int64_t x)
{
    unsigned code = int_code(x);
    v->flags = KS_STRING | EF_INT | code << EF_ISZ_SHIFT;
    int_put(v->buf, code, x);
    v->p = v->buf;
    v->len = (size_t)1 << code;
}

/* Insert or replace key with value v. v->p must not point into the entry being
 * replaced. Inline into ks_set_str (SET, the hottest write: no call, v in
 * registers); ks_put is the one copy for the other callers. */
static inline __attribute__((always_inline)) struct ks_entry *
ks_put_inline(struct ks *ks, const char *key, size_t klen, const struct ks_val *v, int64_t dl,
              bool keep_ttl)
{
    struct ks_tab *t;
    uint64_t h, *sl;
    struct ks_entry *old = NULL, *e;
    unsigned flags;
    size_t size;

    ks_step(ks);
    h = ks_hash(ks, key, klen);
    sl = dict_find(&ks->main, h, key, klen, &t);
    if (sl != NULL) {
        old = slot_ent(*sl);
        if (keep_ttl) {
            dl = ent_deadline(old);
            if (dl != KS_NO_EXPIRE && dl <= ks->now_ms) {
                dl = KS_NO_EXPIRE;
            }
        }
    } else if (keep_ttl) {
        dl = KS_NO_EXPIRE;
    }
    flags = v->flags | (dl != KS_NO_EXPIRE ? EF_EXP : 0);
    size = ent_hdr_size(flags, klen, v->len) + klen + v->len;

    if (old != NULL && (old->flags & EF_TYPE) == KS_STRING) {
        /* The bytes in use, not rv_usable_size(): that costs an allocator
         * metadata lookup (a cache miss) on every overwrite. */
        struct ent_lay l;
        ent_lay(old, &l);
        size_t us = (size_t)(l.val + l.vlen - (const uint8_t *)old);   /* ent_used */
        if (size <= us && us - size <= us / 4) {
            /* Rewrite in place: same pointer, so only the expires index may change. */
            bool had = (old->flags & EF_EXP) != 0;
            uint8_t *val;
            if (flags == old->flags && size == us) {
                /* Same flags, key and size, hence the same value length: the
                 * header differs from ent_write_hdr's only in clock and deadline. */
                ent_clk_set(old, ks_clk_put(ks, old));
                if (flags & EF_EXP) {
                    memcpy(l.dl, &dl, sizeof(dl));
                }
                val = l.val;
            } else {
                val = ent_write_hdr(old, flags, ks_clk_put(ks, old), l.key, klen, v->len, dl);
            }
            memcpy(val, v->p, v->len);
            if (had != (dl != KS_NO_EXPIRE)) {
                ks_repoint(ks, h, old, old, had, !had);
            }
            return old;
        }
    }
    e = ent_alloc(size);
    memcpy(ent_write_hdr(e, flags, ks_clk_put(ks, old), key, klen, v->len, dl), v->p, v->len);
    if (old != NULL) {
        ks_repoint(ks, h, old, e, (old->flags & EF_EXP) != 0, (flags & EF_EXP) != 0);
        ent_free(old);
    } else {
        dict_insert(ks, &ks->main, h, e);
        if (flags & EF_EXP) {
            dict_insert(ks, &ks->exp, h, e);
        }
    }
    return e;
}

static struct ks_entry *
ks_put(struct ks *ks, const char *key, size_t klen, const struct ks_val *v, int64_t dl,
       bool keep_ttl)
{
    return ks_put_inline(ks, key, klen, v, dl, keep_ttl);
}

/* ------------------------------------------------------------- lifecycle */

struct ks *
ks_create(uint64_t seed0, uint64_t seed1)
{
    struct ks *ks = rv_calloc(1, sizeof(*ks));
    ks->k0 = seed0;
    ks->k1 = seed1;
    ks->now_ms = clock_unix_ms();
    ks->rnd = (seed0 ^ seed1) | 1;
    ks->lfu_log_factor = 10;
    ks->lfu_decay_min = 1;
    dict_init(&ks->main);
    dict_init(&ks->exp);
    return ks;
}

static void
ks_free_all(struct ks *ks)
{
    struct ks_tab *tabs[2] = { &ks->main.cur, &ks->main.old };
    for (int i = 0; i < 2; i++) {
        struct ks_tab *t = tabs[i];
        for (size_t j = 0; t->slots != NULL && j < t->cap; j++) {
            if (t->slots[j] != 0) {
                ent_free(slot_ent(t->slots[j]));
            }
        }
        tab_free(t);
    }
    tab_free(&ks->exp.cur);
    tab_free(&ks->exp.old);
}

void
ks_destroy(struct ks *ks)
{
    if (ks == NULL) {
        return;
    }
    ks_free_all(ks);
    rv_free(ks);
}

void
ks_flush(struct ks *ks)
{
    ks_free_all(ks);
    dict_init(&ks->main);
    dict_init(&ks->exp);
    ks->exp_cursor = 0;
    ks_upd_rehash_stat(ks);
}

size_t
ks_size(const struct ks *ks)
{
    return dict_count(&ks->main);
}

size_t
ks_expires_size(const struct ks *ks)
{
    return dict_count(&ks->exp);
}

const struct ks_stats *
ks_stats(const struct ks *ks)
{
    return &ks->stats;
}

void
ks_set_clock(struct ks *ks, int64_t now_ms)
{
    ks->now_ms = now_ms;
}

/* ---------------------------------------------------------------- lookup */

struct ks_entry *
ks_lookup(struct ks *ks, const char *key, size_t klen, int64_t now_ms)
{
    struct ks_tab *t;
    uint64_t h = ks_hash(ks, key, klen);
    uint64_t *sl = dict_find(&ks->main, h, key, klen, &t);
    struct ks_entry *e;
    uint32_t clk;

    ks->now_ms = now_ms;
    if (sl == NULL) {
        return NULL;
    }
    e = slot_ent(*sl);
    if (rv_unlikely(e->flags & EF_EXP) && ent_deadline(e) <= now_ms) {
        if (ks->replica) {
            return NULL;             /* the primary's DEL removes it */
        }
        ks_step(ks);
        if (ks->on_expire) {
            ks->on_expire(ks->on_expire_arg, e);
        }
        ks_unlink(ks, h, e);
        ent_free(e);
        ks->stats.expired_keys++;
        return NULL;
    }
    if (rv_unlikely(ks->lfu)) {
        lfu_touch(ks, e, now_ms);
        return e;
    }
    clk = (uint32_t)((uint64_t)(now_ms / 1000) & KS_CLK_MASK);
    if (ent_clk_get(e) != clk) {
        ent_clk_set(e, clk);   /* hot keys: do not dirty the line every time */
    }
    return e;
}

struct ks_entry *
ks_peek(struct ks *ks, const char *key, size_t klen)
{
    struct ks_tab *t;
    uint64_t *sl = dict_find(&ks->main, ks_hash(ks, key, klen), key, klen, &t);
    return sl != NULL ? slot_ent(*sl) : NULL;
}

/* ------------------------------------------------------------- accessors */

enum ks_type
ks_entry_type(const struct ks_entry *e)
{
    return (enum ks_type)(e->flags & EF_TYPE);
}

struct rv_str
ks_entry_key(const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return (struct rv_str){ (const char *)l.key, l.klen };
}

int64_t
ks_entry_expire(const struct ks_entry *e)
{
    return ent_deadline(e);
}

uint64_t
ks_entry_idle_ms(const struct ks_entry *e, int64_t now_ms)
{
    uint32_t now = (uint32_t)((uint64_t)(now_ms / 1000) & KS_CLK_MASK);
    return (uint64_t)((now - ent_clk_get(e)) & KS_CLK_MASK) * 1000;
}

void
ks_entry_set_idle(struct ks_entry *e, int64_t now_ms, uint64_t idle_ms)
{
    uint64_t idle_s = idle_ms / 1000;
    if (idle_s > KS_CLK_MASK) {
        idle_s = KS_CLK_MASK;
    }
    ent_clk_set(e, (uint32_t)(((uint64_t)(now_ms / 1000) - idle_s) & KS_CLK_MASK));
}

unsigned
ks_entry_freq(const struct ks *ks, const struct ks_entry *e, int64_t now_ms)
{
    return lfu_decayed(ks, ent_clk_get(e), now_ms);
}

void
ks_entry_set_freq(struct ks_entry *e, int64_t now_ms, unsigned freq)
{
    ent_clk_set(e, lfu_minutes(now_ms) << 8 | (freq > 255 ? 255 : freq));
}

void
ks_set_lfu(struct ks *ks, bool on, unsigned log_factor, unsigned decay_min)
{
    ks->lfu = on;
    ks->lfu_log_factor = log_factor;
    ks->lfu_decay_min = decay_min;
}

bool
ks_lfu(const struct ks *ks)
{
    return ks->lfu;
}

size_t
ks_entry_mem(const struct ks_entry *e)
{
    return rv_usable_size(e);
}

enum ks_enc
ks_str_enc(const struct ks_entry *e)
{
    struct ent_lay l;
    if (e->flags & EF_INT) {
        return KS_ENC_INT;
    }
    if (e->flags & EF_RAW) {
        return KS_ENC_RAW;
    }
    ent_lay(e, &l);
    return l.vlen <= KS_EMBSTR_MAX ? KS_ENC_EMBSTR : KS_ENC_RAW;
}

bool
ks_str_is_int(const struct ks_entry *e)
{
    return (e->flags & (EF_TYPE | EF_INT)) == (KS_STRING | EF_INT);
}

int64_t
ks_str_int(const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return int_get(l.val, (e->flags & EF_ISZ) >> EF_ISZ_SHIFT);
}

/* Decimal formatting (no dependency on the proto library's writer). */
static size_t
ks_fmt_int(char *out, int64_t v)
{
    char tmp[24];
    size_t n = 0, i;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    i = 0;
    if (v < 0) {
        out[i++] = '-';
    }
    while (n > 0) {
        out[i++] = tmp[--n];
    }
    return i;
}

struct rv_str
ks_str_get(const struct ks_entry *e, char scratch[24])
{
    struct ent_lay l;
    ent_lay(e, &l);
    if (e->flags & EF_INT) {
        size_t n = ks_fmt_int(scratch, int_get(l.val, (e->flags & EF_ISZ) >> EF_ISZ_SHIFT));
        return (struct rv_str){ scratch, n };
    }
    return (struct rv_str){ (const char *)l.val, l.vlen };
}

size_t
ks_str_len(const struct ks_entry *e)
{
    char tmp[24];
    return ks_str_get(e, tmp).len;
}

void *
ks_entry_ptr(const struct ks_entry *e)
{
    struct ent_lay l;
    void *p;
    ent_lay(e, &l);
    memcpy(&p, l.val, sizeof(p));
    return p;
}

/* ----------------------------------------------------------------- writes */

struct ks_entry *
ks_set_str(struct ks *ks, const char *key, size_t klen, const char *val, size_t vlen,
           int64_t expire_ms, bool keep_ttl)
{
    struct ks_val v;
    int64_t x;
    if (vlen <= 20 && ks_str_parse_int(val, vlen, &x)) {
        val_of_int(&v, x);
    } else {
        v.flags = KS_STRING;
        v.p = val;
        v.len = vlen;
    }
    return ks_put_inline(ks, key, klen, &v, expire_ms, keep_ttl);
}

struct ks_entry *
ks_set_int(struct ks *ks, const char *key, size_t klen, int64_t x, int64_t expire_ms,
           bool keep_ttl)
{
    struct ks_val v;
    val_of_int(&v, x);
    return ks_put(ks, key, klen, &v, expire_ms, keep_ttl);
}

struct ks_entry *
ks_set_ptr(struct ks *ks, const char *key, size_t klen, enum ks_type type, void *ptr,
           ks_free_fn *free_fn, int64_t expire_ms)
{
    struct ks_val v;
    v.flags = (unsigned)type & EF_TYPE;
    memcpy(v.buf, &ptr, sizeof(ptr));
    memcpy(v.buf + sizeof(ptr), &free_fn, sizeof(free_fn));
    v.p = v.buf;
    v.len = KS_PTRVAL_LEN;
    return ks_put(ks, key, klen, &v, expire_ms, false);
}

struct ks_entry *
ks_set_inl(struct ks *ks, const char *key, size_t klen, enum ks_type type, const void *val,
           size_t vlen, int64_t expire_ms)
{
    struct ks_val v;
    v.flags = ((unsigned)type & EF_TYPE) | EF_INL;
    v.p = val;
    v.len = vlen;
    return ks_put(ks, key, klen, &v, expire_ms, false);
}

bool
ks_entry_inl(const struct ks_entry *e)
{
    return (e->flags & EF_TYPE) != KS_STRING && (e->flags & EF_INL);
}

uint8_t *
ks_inl_val(const struct ks_entry *e, size_t *len)
{
    struct ent_lay l;
    ent_lay(e, &l);
    *len = l.vlen;
    return l.val;
}

uint8_t *
ks_inl_resize(struct ks *ks, struct ks_entry **ep, size_t newlen)
{
    struct ks_entry *e = *ep, *ne;
    struct ent_lay l;
    unsigned flags = e->flags;
    size_t hdr, size;
    uint8_t *val;
    bool rebuilt;

    ent_lay(e, &l);
    if (newlen == l.vlen) {
        return l.val;
    }
    ks_step(ks);
    hdr = ent_hdr_size(flags, l.klen, newlen);
    size = hdr + l.klen + newlen;
    rebuilt = hdr != (size_t)(l.key - (uint8_t *)e);
    if (rebuilt) {
        /* The length's varint changes size: the key moves too. */
        size_t keep = l.vlen < newlen ? l.vlen : newlen;
        ne = ent_alloc(size);
        val = ent_write_hdr(ne, flags, ent_clk_get(e), l.key, l.klen, newlen, ent_deadline(e));
        memcpy(val, l.val, keep);
    } else {
        if (newlen < l.vlen) {
            /* Shrink the recorded length first: realloc keeps only the new size. */
            ent_write_hdr(e, flags, ent_clk_get(e), NULL, l.klen, newlen, ent_deadline(e));
        }
        ne = ent_realloc(e, size);
        val = ent_write_hdr(ne, flags, ent_clk_get(ne), NULL, l.klen, newlen, ent_deadline(ne));
    }
    if (ne != e) {
        ks_repoint(ks, ent_hash(ks, ne), e, ne, (flags & EF_EXP) != 0, (flags & EF_EXP) != 0);
        if (rebuilt) {
            rv_free(e);
        }
    }
    *ep = ne;
    return val;
}

void
ks_str_set_int(struct ks *ks, struct ks_entry *e, int64_t x)
{
    struct ent_lay l;
    unsigned code = int_code(x), have;
    size_t need;

    if (!ks_str_is_int(e)) {
        /* Not int-encoded: store it anew under the same key. */
        struct ks_val v;
        char key[256];
        char *kp = key;
        int64_t dl = ent_deadline(e);
        ent_lay(e, &l);
        if (l.klen > sizeof(key)) {
            kp = rv_malloc(l.klen);
        }
        memcpy(kp, l.key, l.klen);
        val_of_int(&v, x);
        ks_put(ks, kp, l.klen, &v, dl, false);
        if (kp != key) {
            rv_free(kp);
        }
        return;
    }
    ent_lay(e, &l);
    have = (e->flags & EF_ISZ) >> EF_ISZ_SHIFT;
    if (code <= have) {
        int_put(l.val, have, x);    /* keep the width: no move, no table work */
        return;
    }
    need = (size_t)(l.val - (uint8_t *)e) + ((size_t)1 << code);
    e->flags = (uint8_t)((e->flags & ~EF_ISZ) | code << EF_ISZ_SHIFT);
    if (need > rv_usable_size(e)) {
        /* Step the rehash before the move, never between it and the repoint:
         * a migration reads the entries the tables point at, and the table
         * still points at e until ks_repoint (a use after free otherwise). */
        ks_step(ks);
        struct ks_entry *ne = ent_realloc(e, need);
        if (ne != e) {
            uint64_t h = ent_hash(ks, ne);
            ks_repoint(ks, h, e, ne, (ne->flags & EF_EXP) != 0, (ne->flags & EF_EXP) != 0);
            e = ne;
        }
        ent_lay(e, &l);
    }
    int_put(l.val, code, x);
}

char *
ks_str_resize(struct ks *ks, struct ks_entry **ep, size_t newlen)
{
    struct ks_entry *e = *ep, *ne;
    struct ent_lay l;
    unsigned flags = (e->flags & EF_EXP) | KS_STRING | EF_RAW;
    int64_t dl = ent_deadline(e);
    size_t hdr, size;
    uint8_t *val;
    bool rebuilt;

    ks_step(ks);
    ent_lay(e, &l);
    hdr = ent_hdr_size(flags, l.klen, newlen);
    size = hdr + l.klen + newlen;
    rebuilt = (e->flags & EF_INT) || hdr != (size_t)(l.key - (uint8_t *)e);
    if (rebuilt) {
        /* The layout changes: build a new entry. */
        char scratch[24];
        struct rv_str cur = ks_str_get(e, scratch);
        size_t keep = cur.len < newlen ? cur.len : newlen;
        ne = ent_alloc(size);
        val = ent_write_hdr(ne, flags, ent_clk_get(e), l.key, l.klen, newlen, dl);
        memcpy(val, cur.p, keep);
        memset(val + keep, 0, newlen - keep);
    } else {
        size_t old = l.vlen, us = rv_usable_size(e);
        ne = e;
        if (size > us || size < us / 2) {
            ne = ent_realloc(e, size);
        }
        val = ent_write_hdr(ne, flags, ent_clk_get(ne), NULL, l.klen, newlen, dl);
        if (newlen > old) {
            memset(val + old, 0, newlen - old);
        }
    }
    if (ne != e) {
        uint64_t h = ent_hash(ks, ne);
        ks_repoint(ks, h, e, ne, (flags & EF_EXP) != 0, (flags & EF_EXP) != 0);
        if (rebuilt) {
            rv_free(e);
        }
    }
    *ep = ne;
    return (char *)val;
}

bool
ks_delete(struct ks *ks, const char *key, size_t klen)
{
    struct ks_tab *t;
    uint64_t h, *sl;
    struct ks_entry *e;

    ks_step(ks);
    h = ks_hash(ks, key, klen);
    sl = dict_find(&ks->main, h, key, klen, &t);
    if (sl == NULL) {
        return false;
    }
    e = slot_ent(*sl);
    ks_unlink(ks, h, e);
    ent_free(e);
    return true;
}

void
ks_evict(struct ks *ks, struct ks_entry *e)
{
    ks_step(ks);
    if (ks->on_expire) {
        ks->on_expire(ks->on_expire_arg, e);
    }
    ks_unlink(ks, ent_hash(ks, e), e);
    ent_free(e);
}

void
ks_set_expire(struct ks *ks, struct ks_entry *e, int64_t expire_ms)
{
    struct ent_lay l;
    struct ks_entry *ne;
    uint64_t h;
    size_t used;

    ent_lay(e, &l);
    if (expire_ms != KS_NO_EXPIRE && (e->flags & EF_EXP)) {
        memcpy(l.dl, &expire_ms, sizeof(expire_ms));
        return;
    }
    if (expire_ms == KS_NO_EXPIRE && !(e->flags & EF_EXP)) {
        return;
    }
    ks_step(ks);
    h = ks_hash(ks, (const char *)l.key, l.klen);
    used = (size_t)(l.val + l.vlen - (uint8_t *)e);
    if (expire_ms == KS_NO_EXPIRE) {
        memmove(l.dl, l.dl + 8, l.klen + l.vlen);
        e->flags &= (uint8_t)~EF_EXP;
        ne = ent_realloc(e, used - 8);
        ks_repoint(ks, h, e, ne, true, false);
        return;
    }
    ne = used + 8 > rv_usable_size(e) ? ent_realloc(e, used + 8) : e;
    ent_lay(ne, &l);   /* still without EXP: l.key is where the deadline goes */
    memmove(l.key + 8, l.key, l.klen + l.vlen);
    memcpy(l.key, &expire_ms, sizeof(expire_ms));
    ne->flags |= EF_EXP;
    ks_repoint(ks, h, e, ne, false, true);
}

/* A copy of e's entry under key dst, with the same flags, clock and deadline. */
static struct ks_entry *
ent_clone(const struct ks_entry *e, const char *dst, size_t dlen)
{
    struct ent_lay l;
    struct ks_entry *ne;
    size_t size;
    uint8_t *val;

    ent_lay(e, &l);
    size = ent_hdr_size(e->flags, dlen, l.vlen) + dlen + l.vlen;
    ne = ent_alloc(size);
    val = ent_write_hdr(ne, e->flags, ent_clk_get(e), dst, dlen, l.vlen, ent_deadline(e));
    memcpy(val, l.val, l.vlen);
    return ne;
}

bool
ks_rename(struct ks *ks, const char *src, size_t slen, const char *dst, size_t dlen)
{
    struct ks_tab *t;
    uint64_t hs, hd, *sl;
    struct ks_entry *e, *ne;

    ks_step(ks);
    hs = ks_hash(ks, src, slen);
    sl = dict_find(&ks->main, hs, src, slen, &t);
    if (sl == NULL) {
        return false;
    }
    e = slot_ent(*sl);
    if (slen == dlen && memcmp(src, dst, slen) == 0) {
        return true;
    }
    ne = ent_clone(e, dst, dlen);          /* takes over the value (and a pointer's ownership) */
    ks_unlink(ks, hs, e);
    rv_free(e);
    hd = ks_hash(ks, dst, dlen);
    sl = dict_find(&ks->main, hd, dst, dlen, &t);
    if (sl != NULL) {
        struct ks_entry *old = slot_ent(*sl);
        ks_repoint(ks, hd, old, ne, (old->flags & EF_EXP) != 0, (ne->flags & EF_EXP) != 0);
        ent_free(old);
    } else {
        dict_insert(ks, &ks->main, hd, ne);
        if (ne->flags & EF_EXP) {
            dict_insert(ks, &ks->exp, hd, ne);
        }
    }
    return true;
}

struct ks_entry *
ks_copy(struct ks *ks, const struct ks_entry *e, const char *dst, size_t dlen)
{
    struct ent_lay l;
    struct ks_val v;
    struct rv_str k = ks_entry_key(e);

    if ((e->flags & EF_TYPE) != KS_STRING && !(e->flags & EF_INL)) {
        return NULL;
    }
    if (k.len == dlen && memcmp(k.p, dst, dlen) == 0) {
        return (struct ks_entry *)(uintptr_t)e;
    }
    ent_lay(e, &l);
    v.flags = e->flags & (EF_TYPE | EF_INT | EF_ISZ | EF_RAW);
    v.p = l.val;
    v.len = l.vlen;
    return ks_put(ks, dst, dlen, &v, ent_deadline(e), false);
}

/* -------------------------------------------------------------- iteration */

/*
 * SCAN cursors are positions in hash order. Why every key present for the
 * whole scan is returned:
 *
 *  - home(h) = floor(h * n / 2^64) is non-decreasing in h, and with linear
 *    probing and no wraparound an entry sits between its home and the first
 *    empty slot after its home (nothing is ever placed past an empty slot).
 *  - A call with cursor c walks the larger table from s = home(c) to an empty
 *    slot e > s. Every entry with home in [s, e) is at a position in [s, e), so
 *    the walk sees all entries with hash in [c, c') where c' = ceil(e*2^64/n)
 *    is the smallest hash with home >= e; entries with hash < c are skipped
 *    (home < s, or home == s with a smaller hash). It returns c' (0 when e is
 *    past the last home slot: nothing can have a home there).
 *  - While rehashing, the other table is searched for the same range [c, c'):
 *    from its home(c) through the first empty slot after its home(c'-1).
 *  - So consecutive calls cover consecutive hash ranges [0,c1), [c1,c2), ...
 *    whose union is every 64-bit hash. A key with hash h lies in exactly one
 *    range, and at the moment that range is visited the key is in one of the
 *    tables (entries only move between tables, never disappear while present)
 *    and is visited there, whatever resizes happened before or after.
 */
static inline bool
scan_in_range(const struct ks *ks, const struct ks_entry *e, uint64_t lo, uint64_t hi)
{
    uint64_t h = ent_hash(ks, e);
    return h >= lo && (hi == 0 || h < hi);
}

void
ks_reserve(struct ks *ks, size_t n)
{
    struct ks_dict *d = &ks->main;
    size_t nn = dict_target(n);
    ks->reserved = n ? nn : 0;
    if (dict_rehashing(d) || nn <= d->cur.n) {
        return;
    }
    tab_rebuild(ks, &d->cur, nn);   /* synchronous: only called before serving */
    ks->sync_rebuilds--;            /* not an overflow rebuild */
}

void
ks_set_replica_mode(struct ks *ks, bool on)
{
    ks->replica = on;
}

void
ks_set_expire_hook(struct ks *ks, ks_expire_hook_fn *fn, void *arg)
{
    ks->on_expire = fn;
    ks->on_expire_arg = arg;
}

uint64_t
ks_scan(struct ks *ks, uint64_t cursor, size_t count, ks_scan_fn *fn, void *arg)
{
    struct ks_dict *d = &ks->main;
    struct ks_tab *big = &d->cur, *small = NULL;
    size_t s, pos, seen = 0, empties = 0;
    uint64_t next;

    if (dict_rehashing(d)) {
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
        if (home < s || (home == s && !scan_in_range(ks, slot_ent(v), cursor, 0))) {
            continue;
        }
        fn(arg, slot_ent(v));
        seen++;
    }
    if (pos >= big->n) {
        next = 0;
    } else {
        next = (uint64_t)((((ks_u128)pos << 64) + big->n - 1) / big->n);
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
            if ((home == ss || home == se) && !scan_in_range(ks, slot_ent(v), cursor, next)) {
                continue;
            }
            fn(arg, slot_ent(v));
        }
    }
    return next;
}

static struct ks_entry *
dict_random(struct ks_dict *d, uint64_t rnd)
{
    struct ks_tab *tabs[2] = { &d->cur, &d->old };
    size_t total, i, tries;

    if (dict_count(d) == 0) {
        return NULL;
    }
    total = d->cur.cap + (dict_rehashing(d) ? d->old.cap : 0);
    i = (size_t)(rnd % total);
    for (tries = 0; tries <= total; tries++, i = i + 1 == total ? 0 : i + 1) {
        struct ks_tab *t = tabs[i >= d->cur.cap];
        size_t pos = i >= d->cur.cap ? i - d->cur.cap : i;
        if (t == &d->old && pos < d->rpos) {
            i = d->cur.cap + d->rpos - 1;   /* drained prefix: skip it */
            continue;
        }
        if (t->slots[pos] != 0) {
            return slot_ent(t->slots[pos]);
        }
    }
    return NULL;
}

struct ks_entry *
ks_random(struct ks *ks, uint64_t rnd)
{
    return dict_random(&ks->main, rnd);
}

struct ks_entry *
ks_random_volatile(struct ks *ks, uint64_t rnd)
{
    return dict_random(&ks->exp, rnd);
}

/* ------------------------------------------------------- background work */

bool
ks_rehash_step(struct ks *ks, uint64_t budget_us)
{
    uint64_t t0 = clock_mono_us();
    for (;;) {
        if (dict_rehashing(&ks->main)) {
            dict_migrate(ks, &ks->main, 256, 4096);
        }
        if (dict_rehashing(&ks->exp)) {
            dict_migrate(ks, &ks->exp, 256, 4096);
        }
        if (!ks->stats.rehashing) {
            return false;
        }
        if (clock_mono_us() - t0 >= budget_us) {
            return true;
        }
    }
}

#define KS_EXPIRE_SAMPLE 20

/* The slot at virtual position i of the expires index: the undrained part of
 * the old table, then the current one. */
static uint64_t
exp_slot_at(const struct ks_dict *d, size_t i, size_t *total)
{
    size_t oldn = dict_rehashing(d) ? d->old.cap - d->rpos : 0;
    *total = oldn + d->cur.cap;
    if (i >= *total) {
        return UINT64_MAX;
    }
    return i < oldn ? d->old.slots[d->rpos + i] : d->cur.slots[i - oldn];
}

size_t
ks_active_expire(struct ks *ks, int64_t now_ms, uint64_t budget_us)
{
    uint64_t t0 = clock_mono_us(), t1;
    size_t deleted = 0;

    if (ks->replica) {
        return 0;
    }
    ks->now_ms = now_ms;
    ks->op_moves = 0;
    for (;;) {
        size_t want = dict_count(&ks->exp), sampled = 0, expired = 0, visits = 0, total;
        if (want == 0 || budget_us == 0) {
            break;
        }
        if (want > KS_EXPIRE_SAMPLE) {
            want = KS_EXPIRE_SAMPLE;
        }
        while (sampled < want && visits < 20 * KS_EXPIRE_SAMPLE) {
            uint64_t s = exp_slot_at(&ks->exp, ks->exp_cursor, &total);
            struct ks_entry *e;
            visits++;
            if (s == UINT64_MAX) {
                ks->exp_cursor = 0;
                continue;
            }
            if (s == 0) {
                ks->exp_cursor++;
                continue;
            }
            e = slot_ent(s);
            sampled++;
            if (ent_deadline(e) <= now_ms) {
                /* Deleting shifts the next resident into this slot: stay. */
                if (ks->on_expire) {
                    ks->on_expire(ks->on_expire_arg, e);
                }
                ks_unlink(ks, ent_hash(ks, e), e);
                ent_free(e);
                expired++;
            } else {
                ks->exp_cursor++;
            }
        }
        deleted += expired;
        ks->stats.expired_keys += expired;
        ks->stats.expired_stale_perc = sampled ? expired * 100 / sampled : 0;
        if (expired * 4 <= sampled || clock_mono_us() - t0 >= budget_us) {
            break;
        }
    }
    t1 = clock_mono_us();
    ks->stats.expire_cycle_time_us += t1 - t0;
    return deleted;
}

/* ------------------------------------------------------------ test hooks */

void
ks_int_info(const struct ks *ks, struct ks_int_info *out)
{
    const struct ks_tab *tabs[2] = { &ks->main.cur, &ks->main.old };
    memset(out, 0, sizeof(*out));
    out->main_slots = ks->main.cur.n;
    out->main_old_slots = ks->main.old.n;
    out->exp_slots = ks->exp.cur.n;
    out->exp_old_slots = ks->exp.old.n;
    out->last_op_moves = ks->op_moves;
    out->sync_rebuilds = ks->sync_rebuilds;
    out->overflow_grows = ks->overflow_grows;
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; tabs[i]->slots != NULL && j < tabs[i]->cap; j++) {
            size_t d1 = slot_d1(tabs[i]->slots[j]);
            if (d1 > 0 && d1 - 1 > out->max_dist) {
                out->max_dist = d1 - 1;
            }
        }
    }
}

static int
tab_check(const struct ks *ks, const struct ks_tab *t, size_t skip, bool is_exp)
{
    size_t cnt = 0, prev_home = 0;
    if (t->slots == NULL) {
        return 0;
    }
    if (t->slots[t->cap] != 0) {
        return 1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        uint64_t s = t->slots[i], h;
        size_t home;
        struct ks_entry *e;
        if (s == 0) {
            continue;
        }
        if (i < skip) {
            return 2;
        }
        e = slot_ent(s);
        h = ent_hash(ks, e);
        home = tab_home(t, h);
        if (home + slot_d1(s) - 1 != i || slot_d1(s) >= SLOT_D1_MAX) {
            return 3;
        }
        if (slot_make(e, h, slot_d1(s)) != s) {
            return 4;
        }
        if (i > 0 && t->slots[i - 1] != 0 && home < prev_home) {
            return 5;   /* cluster not sorted by home */
        }
        if (is_exp && !(e->flags & EF_EXP)) {
            return 6;
        }
        if (!is_exp && (e->flags & EF_EXP)) {
            struct ks_tab *xt;
            if (dict_find_ptr(&ks->exp, h, e, &xt) == NULL) {
                return 7;
            }
        }
        prev_home = home;
        cnt++;
    }
    return cnt == t->count ? 0 : 8;
}

int
ks_int_check(const struct ks *ks)
{
    int rc;
    if ((rc = tab_check(ks, &ks->main.cur, 0, false)) != 0) {
        return rc;
    }
    if ((rc = tab_check(ks, &ks->main.old, ks->main.rpos, false)) != 0) {
        return 10 + rc;
    }
    if ((rc = tab_check(ks, &ks->exp.cur, 0, true)) != 0) {
        return 20 + rc;
    }
    if ((rc = tab_check(ks, &ks->exp.old, ks->exp.rpos, true)) != 0) {
        return 30 + rc;
    }
    return 0;
}
