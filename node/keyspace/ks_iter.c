/* node/keyspace/ks_iter.c: walking the keyspace (SCAN, random keys) and its
 * background work (incremental rehash, active expiry), and the test hooks. */
#include "node/keyspace/ks.h"

#include "base/clock.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "node/keyspace/ks_int.h"
#include "node/keyspace/ks_priv.h"

#include <string.h>

/* -------------------------------------------------------------- iteration */

/* ks_scan_fn takes a struct ks_entry *: called through this adapter. */
struct visit_ctx {
    ks_scan_fn *fn;
    void *arg;
};

static void
visit(void *arg, void *ent)
{
    struct visit_ctx *v = arg;
    v->fn(v->arg, ent);
}

/* The cursor is a position in hash order: see rh_scan. */
uint64_t
ks_scan(struct ks *ks, uint64_t cursor, size_t count, ks_scan_fn *fn, void *arg)
{
    struct visit_ctx v = { fn, arg };
    return rh_scan(&ks->main, cursor, count, &ks_ops, &ks->env, visit, &v);
}

struct slot_walk {
    struct ks *ks;
    unsigned slot;
    size_t max, n;
    uint64_t below; /* the wrapped pass: only hashes under this (0: any) */
    ks_scan_fn *fn;
    void *arg;
};

static void
slot_visit(void *arg, void *ent)
{
    struct slot_walk *w = arg;
    struct rv_str k = ks_entry_key(ent);
    if (w->n < w->max && slot_of(k.p, k.len) == w->slot &&
        (w->below == 0 || ks_ops.hash(&w->ks->env, ent) < w->below)) {
        w->fn(w->arg, ent);
        w->n++;
    }
}

size_t
ks_slot_walk(struct ks *ks, unsigned slot, size_t max, ks_scan_fn *fn, void *arg)
{
    struct slot_walk w = { ks, slot, max, 0, 0, fn, arg };
    uint64_t from = 0, cur, next;

    if (slot >= SLOT_COUNT || max == 0) {
        return 0;
    }
    if (ks->slot_from == NULL) {
        ks->slot_from = rv_calloc(SLOT_COUNT, sizeof(*ks->slot_from));
    }
    from = ks->slot_from[slot];
    /* The batch a key was first found in starts the next walk; a batch
     * reaches past its nominal end in hash order only inside [cur, next). */
    for (cur = from; w.n < w.max; cur = next) {
        size_t before = w.n;
        next = rh_scan(&ks->main, cur, 1024, &ks_ops, &ks->env, slot_visit, &w);
        if (before == 0 && w.n > 0) {
            ks->slot_from[slot] = cur;
        }
        if (next == 0) {
            break;
        }
    }
    if (from == 0 || w.n >= w.max) {
        return w.n;
    }
    /* Wrap around: [0, from), which the first pass did not cover. */
    w.below = from;
    for (cur = 0; w.n < w.max; cur = next) {
        size_t before = w.n;
        next = rh_scan(&ks->main, cur, 1024, &ks_ops, &ks->env, slot_visit, &w);
        if (before == 0 && w.n > 0 && ks->slot_from[slot] == from) {
            ks->slot_from[slot] = cur; /* nothing after from: the slot's first key is here */
        }
        if (next == 0 || next >= from) {
            break;
        }
    }
    return w.n;
}

/* A random full slot, looked for linearly from a random position (ks_random
 * and ks_random_volatile; dict.c samples by rejection instead). */
static struct ks_entry *
idx_random(struct rh *d, uint64_t rnd)
{
    struct rh_tab *tabs[2] = { &d->cur, &d->old };
    size_t total, i, tries;

    if (rh_count(d) == 0) {
        return NULL;
    }
    total = d->cur.cap + (rh_rehashing(d) ? d->old.cap : 0);
    i = (size_t)(rnd % total);
    for (tries = 0; tries <= total; tries++, i = i + 1 == total ? 0 : i + 1) {
        struct rh_tab *t = tabs[i >= d->cur.cap];
        size_t pos = i >= d->cur.cap ? i - d->cur.cap : i;
        if (t == &d->old && pos < d->rpos) {
            i = d->cur.cap + d->rpos - 1; /* drained prefix: skip it */
            continue;
        }
        if (t->slots[pos] != 0) {
            return rh_ent(t->slots[pos]);
        }
    }
    return NULL;
}

struct ks_entry *
ks_random(struct ks *ks, uint64_t rnd)
{
    return idx_random(&ks->main, rnd);
}

struct ks_entry *
ks_random_volatile(struct ks *ks, uint64_t rnd)
{
    return idx_random(&ks->exp, rnd);
}

/* ------------------------------------------------------- background work */

void
ks_reserve(struct ks *ks, size_t n)
{
    struct rh *d = &ks->main;
    size_t nn = rh_target(n, &ks_ops);
    ks->env.reserved = n ? nn : 0;
    if (rh_rehashing(d) || nn <= d->cur.n) {
        return;
    }
    rh_tab_rebuild(&d->cur, nn, &ks_ops, &ks->env); /* synchronous: only called before serving */
    ks->env.rebuilds--;                             /* not an overflow rebuild */
}

void
ks_shrink_retry(struct ks *ks)
{
    rh_shrink_retry(&ks->main, &ks_ops, &ks->env);
    rh_shrink_retry(&ks->exp, &ks_ops, &ks->env);
}

bool
ks_rehash_step(struct ks *ks, uint64_t budget_us)
{
    uint64_t t0 = clock_mono_us();
    for (;;) {
        if (rh_rehashing(&ks->main)) {
            ks_migrate(ks, &ks->main, 256, 4096);
        }
        if (rh_rehashing(&ks->exp)) {
            ks_migrate(ks, &ks->exp, 256, 4096);
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
exp_slot_at(const struct rh *d, size_t i, size_t *total)
{
    size_t oldn = rh_rehashing(d) ? d->old.cap - d->rpos : 0;
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
        size_t want = rh_count(&ks->exp), sampled = 0, expired = 0, visits = 0, total;
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
            e = rh_ent(s);
            sampled++;
            if (ent_deadline(e) <= now_ms) {
                /* Deleting shifts the next resident into this slot: stay. */
                if (ks->on_expire) {
                    ks->on_expire(ks->on_expire_arg, e);
                }
                if (ks->on_expired) {
                    ks->on_expired(ks->on_expired_arg, e);
                }
                ks_unlink(ks, ent_hash(ks, e), e);
                ent_drop(ks, e, KS_FREE_EXPIRE);
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
    const struct rh_tab *tabs[2] = { &ks->main.cur, &ks->main.old };
    memset(out, 0, sizeof(*out));
    out->main_slots = ks->main.cur.n;
    out->main_old_slots = ks->main.old.n;
    out->exp_slots = ks->exp.cur.n;
    out->exp_old_slots = ks->exp.old.n;
    out->last_op_moves = ks->op_moves;
    out->sync_rebuilds = ks->env.rebuilds;
    out->overflow_grows = ks->env.grows;
    out->shrinks_abandoned = ks->env.shrinks_abandoned;
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; tabs[i]->slots != NULL && j < tabs[i]->cap; j++) {
            size_t d1 = rh_d1(tabs[i]->slots[j]);
            if (d1 > 0 && d1 - 1 > out->max_dist) {
                out->max_dist = d1 - 1;
            }
        }
    }
}

static int
tab_check(const struct ks *ks, const struct rh_tab *t, size_t skip, bool is_exp)
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
        e = rh_ent(s);
        h = ent_hash(ks, e);
        home = rh_home(t, h);
        if (home + rh_d1(s) - 1 != i || rh_d1(s) >= RH_D1_MAX) {
            return 3;
        }
        if (rh_slot(e, h, rh_d1(s)) != s) {
            return 4;
        }
        if (i > 0 && t->slots[i - 1] != 0 && home < prev_home) {
            return 5; /* cluster not sorted by home */
        }
        if (is_exp && !(e->flags & EF_EXP)) {
            return 6;
        }
        if (!is_exp && (e->flags & EF_EXP)) {
            struct rh_tab *xt;
            if (rh_find_ptr(&ks->exp, h, e, &xt) == NULL) {
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
