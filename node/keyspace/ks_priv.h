/* node/keyspace/ks_priv.h: the keyspace's internals shared by its files (ks.c,
 * ks_ent.c, ks_iter.c, ks_snap.c); not for other modules. The entry layout is
 * described in ks.c, the table in rh.h. */
#pragma once
#include "node/keyspace/ks.h"

#include "base/mem.h"
#include "base/siphash.h"
#include "base/varint.h"
#include "node/keyspace/rh.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
#define EF_INL EF_RAW /* non-string types: the value is inline bytes */
#define EF_EXP 0x80u

#define KS_EMBSTR_MAX 44
#define KS_CLK_MASK 0xffffffu
#define KS_PTRVAL_LEN (sizeof(void *) + sizeof(ks_free_fn *))

struct ent_lay {
    uint8_t *dl; /* deadline bytes, NULL without EXP */
    uint8_t *key;
    size_t klen;
    uint8_t *val;
    size_t vlen; /* bytes stored: int width, 16 for pointers */
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
    return (int64_t)(u << shift) >> shift; /* sign-extend */
}

/* A pointer value's object and its free_fn (false: a string or an inline
 * value, which the entry's own allocation holds). */
static inline bool
ent_obj(struct ks_entry *e, void **ptr, ks_free_fn **fn)
{
    if ((e->flags & EF_TYPE) == KS_STRING || (e->flags & EF_INL)) {
        return false;
    }
    struct ent_lay l;
    ent_lay(e, &l);
    memcpy(ptr, l.val, sizeof(*ptr));
    memcpy(fn, l.val + sizeof(*ptr), sizeof(*fn));
    return true;
}

/* Frees e and, for a pointer value, the object (its free_fn). */
static inline void
ent_free(struct ks_entry *e)
{
    void *ptr;
    ks_free_fn *fn;
    if (ent_obj(e, &ptr, &fn) && fn != NULL) {
        fn(ptr);
    }
    rv_free(e);
}

/* ------------------------------------------------------------------ tables */

struct ks {
    struct rh main;
    struct rh exp;     /* the keys with a deadline: same pointers, same hash */
    struct rh_env env; /* reserved size, rebuild and grow counts (ks_reserve, tests) */
    uint64_t k0, k1;
    int64_t now_ms;    /* latest clock seen; access clock of new entries */
    size_t exp_cursor; /* active expiry position in the expires index */
    size_t op_moves;
    struct ks_stats stats;
    ks_expire_hook_fn *on_expire; /* before an expired or evicted entry is freed (WAL: DEL) */
    void *on_expire_arg;
    ks_expire_hook_fn *on_expired; /* ... an expired one only (keyspace notifications) */
    void *on_expired_arg;
    ks_new_hook_fn *on_new; /* a key was added (keyspace notifications' "new"), or NULL */
    void *on_new_arg;
    bool lfu; /* access clock holds LFU (minutes << 8 | counter) */
    unsigned lfu_log_factor;
    unsigned lfu_decay_min;
    uint64_t rnd;        /* LFU's probabilistic increments */
    bool replica;        /* expired keys are hidden, never deleted (replication) */
    bool no_touch;       /* lookups leave access clocks alone (CLIENT NO-TOUCH) */
    bool hold_expired;   /* as replica, for lookups only (CLIENT PAUSE) */
    uint32_t *slot_keys; /* keys per cluster slot (ks_count_slots), or NULL */
    uint64_t *slot_from; /* where ks_slot_walk starts per slot, or NULL until used */
    ks_lazy_fn *lazy;    /* offered pointer values before they are freed (ks_set_lazy) */
    void *lazy_arg;
    unsigned lazy_mask; /* enum ks_free_why: the reasons that offer them */
};

/* Frees e; a pointer value is first offered to the lazy hook when why is in
 * the keyspace's mask (KS_FREE_ALWAYS: whatever the mask). */
#define KS_FREE_ALWAYS (~0u)
static inline void
ent_drop(const struct ks *ks, struct ks_entry *e, unsigned why)
{
    void *ptr;
    ks_free_fn *fn;
    if (rv_unlikely(ks->lazy != NULL && (why == KS_FREE_ALWAYS || (ks->lazy_mask & why) != 0)) &&
        ent_obj(e, &ptr, &fn) && fn != NULL && ks->lazy(ks->lazy_arg, e, ptr, fn)) {
        rv_free(e);
        return;
    }
    ent_free(e);
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

#define KS_TAB_MIN 16

static inline uint64_t
ent_hash(const struct ks *ks, const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return siphash_13(ks->k0, ks->k1, l.key, l.klen);
}

static inline __attribute__((always_inline)) uint64_t
ks_ops_hash(const struct rh_env *env, const void *ent)
{
    const struct ks *ks = (const struct ks *)(const void *)((const char *)env -
                                                            offsetof(struct ks, env));
    return ent_hash(ks, ent);
}

/* The keyspace's tables: 16 home slots at least, an overflow area of 8 to 256. */
static const struct rh_ops ks_ops = { KS_TAB_MIN, 8, ks_ops_hash };

/* ks.c: remove e (hash h) from both indexes, without freeing it. */
void ks_unlink(struct ks *ks, uint64_t h, const struct ks_entry *e);
/* ks.c: move up to max_moves entries of a rehashing table d. */
size_t ks_migrate(struct ks *ks, struct rh *d, size_t max_moves, size_t max_visits);
