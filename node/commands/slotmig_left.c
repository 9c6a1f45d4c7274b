/* node/commands/slotmig_left.c: the copies an atomic slot migration's import
 * left behind (slotmig_left.h). An import that cannot commit any more (its
 * source went silent before it said committing, or the node restarted or was
 * promoted during it) has its copies deleted here, in slices;
 * slotmig_import.c decides when. Only keys of slots an import opened and that another node serves go:
 * a user may keep keys in unowned slots on purpose after a failed reshard,
 * and redis-cli --cluster fix relies on seeing them. */
#include "node/commands/slotmig_left.h"

#include "base/buf.h"
#include "base/clock.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/shard.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "replication/repl.h"

#include <string.h>

bool
slotmig_serving_primary(struct shard *s)
{
    const struct shard_env *env = shard_env(s);
    struct repl *r = persist_repl(s);
    return env->topo != NULL && env->topo_me >= 0 && !persist_loading(s) &&
           env->topo->nodes[env->topo_me].role == TOPO_PRIMARY && r != NULL && !repl_is_replica(r);
}

struct keys_of {
    const uint8_t *slots;
    struct buf *keys;
};

static void
keys_of_visit(void *arg, struct ks_entry *e)
{
    struct keys_of *w = arg;
    struct rv_str k = ks_entry_key(e);
    unsigned slot = slot_of(k.p, k.len);
    if ((w->slots[slot / 8] >> (slot % 8)) & 1) {
        buf_append(w->keys, &k.len, sizeof(k.len));
        buf_append(w->keys, k.p, k.len);
    }
}

void
slotmig_keys_of(struct ks *ks, const uint8_t *slots, struct buf *keys)
{
    struct keys_of w = { slots, keys };
    uint64_t cur = 0;
    do {
        cur = ks_scan(ks, cur, 1024, keys_of_visit, &w);
    } while (cur != 0);
}

/* The slots of slots that another node serves and that this node does not
 * import Redis's way (SETSLOT IMPORTING keeps its keys). */
static void
foreign_of(const struct shard_env *env, const uint8_t *slots, uint8_t *out)
{
    const struct topo *t = env->topo;
    uint16_t me = (uint16_t)env->topo_me;
    memset(out, 0, SLOT_COUNT / 8);
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++) {
        const struct topo_mig *mig;
        if ((slots[slot / 8] >> (slot % 8) & 1) && t->slots[slot] != TOPO_NONE &&
            t->slots[slot] != me &&
            !(t->nmigs && (mig = topo_slot_mig(t, slot)) != NULL && mig->imp_by == me)) {
            out[slot / 8] |= (uint8_t)(1u << (slot % 8));
        }
    }
}

bool
slotmig_drop_begin(struct shard *s, struct slotmig_drop *d, const uint8_t *slots)
{
    memset(d, 0, sizeof(*d));
    if (!slotmig_serving_primary(s) || shard_env(s)->dbs[0] == NULL) {
        return false;
    }
    memcpy(d->slots, slots, sizeof(d->slots));
    d->active = true;
    return true;
}

#define DROP_SLICE_US 1000          /* a slice's time (checked after each step) */
#define DROP_SLICE_BYTES (8u << 20) /* ... and the entries' bytes it frees */
#define DROP_STEP_COUNT 64          /* ks_scan's count per step */

bool
slotmig_drop_step(struct shard *s, struct slotmig_drop *d)
{
    struct shard_env *env = shard_env(s);
    struct ks *ks = env->dbs[0];
    if (!d->active || ks == NULL || !slotmig_serving_primary(s)) {
        d->active = false;
        return false;
    }
    uint8_t foreign[SLOT_COUNT / 8];
    foreign_of(env, d->slots, foreign); /* (a slot that became this node's keeps its keys) */
    struct buf keys;
    buf_init(&keys);
    struct keys_of w = { foreign, &keys };
    unsigned was = env->db;
    shard_use_db(env, 0); /* (the DEL records are database 0's) */
    uint64_t t0 = clock_mono_us();
    size_t bytes = 0;
    do {
        d->cursor = ks_scan(ks, d->cursor, DROP_STEP_COUNT, keys_of_visit, &w);
        for (size_t at = 0; at < keys.len;) {
            size_t len;
            memcpy(&len, keys.data + at, sizeof(len));
            at += sizeof(len);
            struct ks_entry *e = ks_peek(ks, keys.data + at, len);
            if (e != NULL) {
                bytes += ks_entry_mem(e);
                ks_evict_lazy(ks, e); /* (the expiry hook logs its DEL) */
                d->deleted++;
            }
            at += len;
        }
        keys.len = 0;
    } while (d->cursor != 0 && bytes < DROP_SLICE_BYTES && clock_mono_us() - t0 < DROP_SLICE_US);
    uint64_t took = clock_mono_us() - t0;
    d->longest_us = took > d->longest_us ? took : d->longest_us;
    d->slices++;
    shard_use_db(env, was);
    buf_deinit(&keys);
    if (d->cursor != 0) {
        return true;
    }
    ks_shrink_retry(ks);
    d->active = false;
    return false;
}

size_t
slotmig_delete_slots(struct shard *s, const uint8_t *slots)
{
    struct shard_env *env = shard_env(s);
    if (env->dbs[0] == NULL) {
        return 0;
    }
    struct buf keys;
    buf_init(&keys);
    slotmig_keys_of(env->dbs[0], slots, &keys);
    unsigned was = env->db;
    shard_use_db(env, 0); /* (the DEL records are database 0's) */
    size_t deleted = 0;
    for (size_t at = 0; at < keys.len;) {
        size_t len;
        memcpy(&len, keys.data + at, sizeof(len));
        at += sizeof(len);
        struct ks_entry *e = ks_peek(env->dbs[0], keys.data + at, len);
        if (e != NULL) {
            ks_evict_lazy(env->dbs[0], e); /* (the expiry hook logs its DEL) */
            deleted++;
        }
        at += len;
    }
    shard_use_db(env, was);
    buf_deinit(&keys);
    return deleted;
}
