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
 * Tables. The keys are indexed in a robin hood table (node/keyspace/rh.h,
 * shared with dict.c): linear probing, backward-shift deletion, fastrange
 * homes, incremental resizing. A resize allocates a table for count / 0.7 (so
 * the table costs 8.9-11.4 bytes per key at any size, with a growth factor of
 * 1.29 per resize) and moves the old table's entries in slot order, a few per
 * write call and more in ks_rehash_step(). Expiring keys are also indexed in a
 * second table of the same kind (same pointers, same hash).
 *
 * Files: ks.c (this: the index glue, lookups and writes), ks_ent.c (entry
 * accessors), ks_iter.c (SCAN, random keys, rehash and expiry work, test
 * hooks), ks_snap.c (the snapshot iterator). */
#include "node/keyspace/ks.h"

#include "base/bytes.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/siphash.h"
#include "base/varint.h"
#include "cluster/slot.h"
#include "node/keyspace/ks_int.h"
#include "node/keyspace/ks_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- indexes */

uint64_t
ks_hash(const struct ks *ks, const char *p, size_t n)
{
    return siphash_13(ks->k0, ks->k1, p, n);
}

bool
ks_int_key_eq(const void *a, const char *b, size_t n)
{
    return rv_short_eq(a, b, n);
}

static inline bool
ent_key_eq(const void *ent, const char *key, size_t klen)
{
    struct ent_lay l;
    ent_lay(ent, &l);
    return l.klen == klen && rv_short_eq(l.key, key, klen);
}

/* rh_env.resized: a resize of either index started or finished. */
static void
ks_on_resized(struct rh_env *env)
{
    struct ks *ks = (struct ks *)(void *)((char *)env - offsetof(struct ks, env));
    ks->stats.rehashing = rh_rehashing(&ks->main) || rh_rehashing(&ks->exp);
}

static inline void
idx_insert(struct ks *ks, struct rh *d, uint64_t h, const struct ks_entry *e)
{
    rh_insert(d, h, e, &ks_ops, &ks->env);
}

size_t
ks_migrate(struct ks *ks, struct rh *d, size_t max_moves, size_t max_visits)
{
    size_t moved = rh_migrate(d, max_moves, max_visits, &ks_ops, &ks->env);
    ks->op_moves += moved;
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
        if (rh_rehashing(&ks->main)) {
            ks_migrate(ks, &ks->main, KS_STEP_MOVES, KS_STEP_VISITS);
        }
        if (rh_rehashing(&ks->exp)) {
            ks_migrate(ks, &ks->exp, KS_STEP_MOVES, KS_STEP_VISITS);
        }
    }
}

static inline __attribute__((always_inline)) uint64_t *
idx_find(const struct rh *d, uint64_t h, const char *key, size_t klen, struct rh_tab **tp)
{
    return rh_find(d, h, key, klen, ent_key_eq, tp);
}

static uint64_t *
idx_find_ptr(const struct rh *d, uint64_t h, const struct ks_entry *e, struct rh_tab **tp)
{
    uint64_t *sl = rh_find_ptr(d, h, e, tp);
    if (sl == NULL) {
        fprintf(stderr, "ks: entry missing from its index\n");
        abort();
    }
    return sl;
}

static void
idx_remove_ptr(struct ks *ks, struct rh *d, uint64_t h, const struct ks_entry *e)
{
    struct rh_tab *t;
    uint64_t *sl = idx_find_ptr(d, h, e, &t);
    rh_remove_at(d, t, sl, &ks_ops, &ks->env);
}

static void
idx_repoint(struct rh *d, uint64_t h, const struct ks_entry *old, const struct ks_entry *e)
{
    struct rh_tab *t;
    rh_slot_repoint(idx_find_ptr(d, h, old, &t), e);
}

/* ------------------------------------------------------------ entry glue */

/* Writes the header for flags/klen/vlen/deadline and the key; returns the
 * value position. The caller has sized e with ent_hdr_size + klen + vlen. key
 * may point into e itself (it is moved first) or be NULL (already in place). */
static uint8_t *
ent_write_hdr(struct ks_entry *e, unsigned flags, uint32_t clk, const void *key, size_t klen,
              size_t vlen, int64_t dl)
{
    uint8_t *p = e->rest;
    uint8_t *kp = (uint8_t *)e + ent_hdr_size(flags, klen, vlen);
    if (key != NULL && key != (const void *)kp) { /* an overwrite in place keeps its key */
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

static struct ks_entry *
ent_alloc(size_t size)
{
    struct ks_entry *e = rv_malloc(size);
    if (rv_unlikely(!rh_ptr_ok(e))) {
        fprintf(stderr, "ks: allocator returned an address the table cannot store\n");
        abort();
    }
    return e;
}

static struct ks_entry *
ent_realloc(struct ks_entry *e, size_t size)
{
    struct ks_entry *ne = rv_realloc(e, size);
    if (rv_unlikely(!rh_ptr_ok(ne))) {
        fprintf(stderr, "ks: allocator returned an address the table cannot store\n");
        abort();
    }
    return ne;
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
        idx_repoint(&ks->main, h, e, ne);
    }
    if (had_exp && has_exp) {
        if (e != ne) {
            idx_repoint(&ks->exp, h, e, ne);
        }
    } else if (had_exp) {
        idx_remove_ptr(ks, &ks->exp, h, e);
    } else if (has_exp) {
        idx_insert(ks, &ks->exp, h, ne);
    }
}

static inline void
slot_count(struct ks *ks, const char *key, size_t klen, int d)
{
    if (rv_unlikely(ks->slot_keys != NULL)) {
        ks->slot_keys[slot_of(key, klen)] += (uint32_t)d;
    }
}

/* Remove e (hash h) from both indexes; does not free it. */
void
ks_unlink(struct ks *ks, uint64_t h, const struct ks_entry *e)
{
    if (e->flags & EF_EXP) {
        idx_remove_ptr(ks, &ks->exp, h, e);
    }
    idx_remove_ptr(ks, &ks->main, h, e);
    if (rv_unlikely(ks->slot_keys != NULL)) {
        struct rv_str k = ks_entry_key(e);
        slot_count(ks, k.p, k.len, -1);
    }
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
    struct rh_tab *t;
    uint64_t h, *sl;
    struct ks_entry *old = NULL, *e;
    unsigned flags;
    size_t size;

    ks_step(ks);
    h = ks_hash(ks, key, klen);
    sl = idx_find(&ks->main, h, key, klen, &t);
    if (sl != NULL) {
        old = rh_ent(*sl);
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
        size_t us = (size_t)(l.val + l.vlen - (const uint8_t *)old);
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
        ent_drop(ks, old, KS_FREE_SERVER);
    } else {
        idx_insert(ks, &ks->main, h, e);
        if (flags & EF_EXP) {
            idx_insert(ks, &ks->exp, h, e);
        }
        slot_count(ks, key, klen, 1);
        if (rv_unlikely(ks->on_new != NULL)) {
            ks->on_new(ks->on_new_arg, ks, key, klen);
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
    ks->env.resized = ks_on_resized;
    rh_init(&ks->main, &ks_ops);
    rh_init(&ks->exp, &ks_ops);
    return ks;
}

static void
free_ent(void *arg, void *ent)
{
    (void)arg;
    ent_free(ent);
}

/* Frees every entry of main and both sets of tables (exp holds the same
 * entries). */
static void
tables_free(struct rh *main, struct rh *exp)
{
    rh_tab_each(&main->cur, free_ent, NULL);
    rh_tab_each(&main->old, free_ent, NULL);
    rh_tab_free(&main->cur);
    rh_tab_free(&main->old);
    rh_tab_free(&exp->cur);
    rh_tab_free(&exp->old);
}

static void
ks_free_all(struct ks *ks)
{
    tables_free(&ks->main, &ks->exp);
}

void
ks_destroy(struct ks *ks)
{
    if (ks == NULL) {
        return;
    }
    ks_free_all(ks);
    rv_free(ks->slot_keys);
    rv_free(ks->slot_from);
    rv_free(ks);
}

/* A flushed keyspace's tables, freed apart from it (ks_flush_detach). */
struct ks_husk {
    struct rh main, exp;
};

static void
ks_reset(struct ks *ks)
{
    rh_init(&ks->main, &ks_ops);
    rh_init(&ks->exp, &ks_ops);
    ks->exp_cursor = 0;
    ks_on_resized(&ks->env);
    if (ks->slot_keys != NULL) {
        memset(ks->slot_keys, 0, SLOT_COUNT * sizeof(*ks->slot_keys));
    }
}

void
ks_flush(struct ks *ks)
{
    ks_free_all(ks);
    ks_reset(ks);
}

struct ks_husk *
ks_flush_detach(struct ks *ks)
{
    if (ks_size(ks) == 0) {
        ks_flush(ks);
        return NULL;
    }
    struct ks_husk *h = rv_malloc(sizeof(*h));
    h->main = ks->main;
    h->exp = ks->exp;
    ks_reset(ks);
    return h;
}

void
ks_husk_free(void *husk)
{
    struct ks_husk *h = husk;
    if (h == NULL) {
        return;
    }
    tables_free(&h->main, &h->exp);
    rv_free(h);
}

static void
count_one(void *arg, void *ent)
{
    struct ks *ks = arg;
    struct rv_str k = ks_entry_key(ent);
    ks->slot_keys[slot_of(k.p, k.len)]++;
}

void
ks_count_slots(struct ks *ks, bool on)
{
    if (!on) {
        rv_free(ks->slot_keys);
        ks->slot_keys = NULL;
        return;
    }
    if (ks->slot_keys != NULL) {
        return;
    }
    ks->slot_keys = rv_calloc(SLOT_COUNT, sizeof(*ks->slot_keys));
    rh_tab_each(&ks->main.cur, count_one, ks);
    rh_tab_each(&ks->main.old, count_one, ks);
}

bool
ks_counts_slots(const struct ks *ks)
{
    return ks->slot_keys != NULL;
}

size_t
ks_slot_keys(const struct ks *ks, unsigned slot)
{
    return ks->slot_keys != NULL && slot < SLOT_COUNT ? ks->slot_keys[slot] : 0;
}

size_t
ks_size(const struct ks *ks)
{
    return rh_count(&ks->main);
}

size_t
ks_expires_size(const struct ks *ks)
{
    return rh_count(&ks->exp);
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
    struct rh_tab *t;
    uint64_t h = ks_hash(ks, key, klen);
    uint64_t *sl = idx_find(&ks->main, h, key, klen, &t);
    struct ks_entry *e;
    uint32_t clk;

    ks->now_ms = now_ms;
    if (sl == NULL) {
        return NULL;
    }
    e = rh_ent(*sl);
    if (rv_unlikely(e->flags & EF_EXP) && ent_deadline(e) <= now_ms) {
        if (ks->replica || ks->hold_expired) {
            return NULL; /* the primary's DEL removes it, or expiry after the pause */
        }
        ks_step(ks);
        if (ks->on_expire) {
            ks->on_expire(ks->on_expire_arg, e);
        }
        if (ks->on_expired) {
            ks->on_expired(ks->on_expired_arg, e);
        }
        ks_unlink(ks, h, e);
        ent_drop(ks, e, KS_FREE_EXPIRE);
        ks->stats.expired_keys++;
        return NULL;
    }
    if (rv_unlikely(ks->no_touch)) {
        return e;
    }
    if (rv_unlikely(ks->lfu)) {
        lfu_touch(ks, e, now_ms);
        return e;
    }
    clk = (uint32_t)((uint64_t)(now_ms / 1000) & KS_CLK_MASK);
    if (ent_clk_get(e) != clk) {
        ent_clk_set(e, clk); /* hot keys: do not dirty the line every time */
    }
    return e;
}

struct ks_entry *
ks_peek(struct ks *ks, const char *key, size_t klen)
{
    struct rh_tab *t;
    uint64_t *sl = idx_find(&ks->main, ks_hash(ks, key, klen), key, klen, &t);
    return sl != NULL ? rh_ent(*sl) : NULL;
}
void
ks_set_replica_mode(struct ks *ks, bool on)
{
    ks->replica = on;
}

void
ks_inherit(struct ks *dst, const struct ks *src)
{
    dst->now_ms = src->now_ms;
    dst->on_expire = src->on_expire;
    dst->on_expire_arg = src->on_expire_arg;
    dst->on_expired = src->on_expired;
    dst->on_expired_arg = src->on_expired_arg;
    dst->on_new = src->on_new;
    dst->on_new_arg = src->on_new_arg;
    dst->replica = src->replica;
    dst->lfu = src->lfu;
    dst->lfu_log_factor = src->lfu_log_factor;
    dst->lfu_decay_min = src->lfu_decay_min;
    dst->lazy = src->lazy;
    dst->lazy_arg = src->lazy_arg;
    dst->lazy_mask = src->lazy_mask;
}

void
ks_set_lazy(struct ks *ks, ks_lazy_fn *fn, void *arg, unsigned mask)
{
    ks->lazy = fn;
    ks->lazy_arg = arg;
    ks->lazy_mask = mask;
}

void
ks_set_hold_expired(struct ks *ks, bool on)
{
    ks->hold_expired = on;
}

void
ks_set_no_touch(struct ks *ks, bool on)
{
    ks->no_touch = on;
}

void
ks_set_new_hook(struct ks *ks, ks_new_hook_fn *fn, void *arg)
{
    ks->on_new = fn;
    ks->on_new_arg = arg;
}

void
ks_set_expired_hook(struct ks *ks, ks_expire_hook_fn *fn, void *arg)
{
    ks->on_expired = fn;
    ks->on_expired_arg = arg;
}

void
ks_set_expire_hook(struct ks *ks, ks_expire_hook_fn *fn, void *arg)
{
    ks->on_expire = fn;
    ks->on_expire_arg = arg;
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
ks_set_int(struct ks *ks, const char *key, size_t klen, int64_t x, int64_t expire_ms, bool keep_ttl)
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
        int_put(l.val, have, x); /* keep the width: no move, no table work */
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
        size_t keep = cur.len < newlen ? cur.len : newlen, us = rv_usable_size(e);
        /* (growing keeps room reserved by ks_str_reserve) */
        ne = ent_alloc(newlen > cur.len && us > size ? us : size);
        val = ent_write_hdr(ne, flags, ent_clk_get(e), l.key, l.klen, newlen, dl);
        memcpy(val, cur.p, keep);
        memset(val + keep, 0, newlen - keep);
    } else {
        size_t old = l.vlen, us = rv_usable_size(e);
        ne = e;
        if (size > us || (size < us / 2 && newlen < old)) {
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

void
ks_str_reserve(struct ks *ks, struct ks_entry **ep, size_t cap)
{
    struct ks_entry *e = *ep;
    struct ent_lay l;
    if (ks_entry_type(e) != KS_STRING || (e->flags & EF_INT)) {
        return;
    }
    ent_lay(e, &l);
    /* (the header as it will be at cap bytes: its length field may widen) */
    size_t size = ent_hdr_size((e->flags & EF_EXP) | KS_STRING | EF_RAW, l.klen, cap) + l.klen +
                  cap;
    if (size <= rv_usable_size(e)) {
        return;
    }
    ks_step(ks); /* (before the move, as in ks_str_resize) */
    struct ks_entry *ne = ent_realloc(e, size);
    if (ne != e) {
        bool exp = (ne->flags & EF_EXP) != 0;
        ks_repoint(ks, ent_hash(ks, ne), e, ne, exp, exp);
    }
    *ep = ne;
}

static bool
delete_why(struct ks *ks, const char *key, size_t klen, unsigned why)
{
    struct rh_tab *t;
    uint64_t h, *sl;
    struct ks_entry *e;

    ks_step(ks);
    h = ks_hash(ks, key, klen);
    sl = idx_find(&ks->main, h, key, klen, &t);
    if (sl == NULL) {
        return false;
    }
    e = rh_ent(*sl);
    ks_unlink(ks, h, e);
    ent_drop(ks, e, why);
    return true;
}

bool
ks_delete(struct ks *ks, const char *key, size_t klen)
{
    return delete_why(ks, key, klen, KS_FREE_SERVER);
}

bool
ks_delete_how(struct ks *ks, const char *key, size_t klen, bool lazy)
{
    return delete_why(ks, key, klen, lazy ? KS_FREE_ALWAYS : 0);
}

bool
ks_delete_expired(struct ks *ks, const char *key, size_t klen)
{
    return delete_why(ks, key, klen, KS_FREE_EXPIRE);
}

static void
evict_why(struct ks *ks, struct ks_entry *e, unsigned why)
{
    ks_step(ks);
    if (ks->on_expire) {
        ks->on_expire(ks->on_expire_arg, e);
    }
    ks_unlink(ks, ent_hash(ks, e), e);
    ent_drop(ks, e, why);
}

void
ks_evict(struct ks *ks, struct ks_entry *e)
{
    evict_why(ks, e, KS_FREE_EVICT);
}

void
ks_evict_lazy(struct ks *ks, struct ks_entry *e)
{
    evict_why(ks, e, KS_FREE_ALWAYS);
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
    ent_lay(ne, &l); /* still without EXP: l.key is where the deadline goes */
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

/* ne (a detached entry named dst) becomes dst's entry in ks, replacing and
 * freeing the one there (RENAME's and a staging value's last step). */
static void
ks_put_detached(struct ks *ks, struct ks_entry *ne, const char *dst, size_t dlen)
{
    struct rh_tab *t;
    uint64_t hd = ks_hash(ks, dst, dlen);
    uint64_t *sl = idx_find(&ks->main, hd, dst, dlen, &t);
    if (sl != NULL) {
        struct ks_entry *old = rh_ent(*sl);
        ks_repoint(ks, hd, old, ne, (old->flags & EF_EXP) != 0, (ne->flags & EF_EXP) != 0);
        ent_drop(ks, old, KS_FREE_SERVER);
    } else {
        idx_insert(ks, &ks->main, hd, ne);
        if (ne->flags & EF_EXP) {
            idx_insert(ks, &ks->exp, hd, ne);
        }
        slot_count(ks, dst, dlen, 1);
        if (rv_unlikely(ks->on_new != NULL)) {
            ks->on_new(ks->on_new_arg, ks, dst, dlen);
        }
    }
}

bool
ks_rename(struct ks *ks, const char *src, size_t slen, const char *dst, size_t dlen)
{
    struct rh_tab *t;
    uint64_t hs, *sl;
    struct ks_entry *e, *ne;

    ks_step(ks);
    hs = ks_hash(ks, src, slen);
    sl = idx_find(&ks->main, hs, src, slen, &t);
    if (sl == NULL) {
        return false;
    }
    e = rh_ent(*sl);
    if (slen == dlen && memcmp(src, dst, slen) == 0) {
        return true;
    }
    ne = ent_clone(e, dst, dlen); /* takes over the value (and a pointer's ownership) */
    ks_unlink(ks, hs, e);
    rv_free(e);
    ks_put_detached(ks, ne, dst, dlen);
    return true;
}

bool
ks_move_to(struct ks *ks, struct ks *src, const char *key, size_t klen)
{
    struct rh_tab *t;
    uint64_t hs, *sl;
    struct ks_entry *e, *ne;

    ks_step(src);
    ks_step(ks);
    hs = ks_hash(src, key, klen);
    sl = idx_find(&src->main, hs, key, klen, &t);
    if (sl == NULL) {
        return false;
    }
    e = rh_ent(*sl);
    ne = ent_clone(e, key, klen); /* takes over the value (and a pointer's ownership) */
    ks_unlink(src, hs, e);
    rv_free(e);
    ks_put_detached(ks, ne, key, klen);
    return true;
}

struct ks_entry *
ks_copy(struct ks *ks, const struct ks_entry *e, const char *dst, size_t dlen)
{
    struct rv_str k = ks_entry_key(e);

    if ((e->flags & EF_TYPE) != KS_STRING && !(e->flags & EF_INL)) {
        return NULL;
    }
    if (k.len == dlen && memcmp(k.p, dst, dlen) == 0) {
        return (struct ks_entry *)(uintptr_t)e;
    }
    return ks_copy_to(ks, e, dst, dlen);
}

struct ks_entry *
ks_copy_to(struct ks *ks, const struct ks_entry *e, const char *dst, size_t dlen)
{
    struct ent_lay l;
    struct ks_val v;

    if ((e->flags & EF_TYPE) != KS_STRING && !(e->flags & EF_INL)) {
        return NULL;
    }
    ent_lay(e, &l);
    v.flags = e->flags & (EF_TYPE | EF_INT | EF_ISZ | EF_RAW);
    v.p = l.val;
    v.len = l.vlen;
    return ks_put(ks, dst, dlen, &v, ent_deadline(e), false);
}
