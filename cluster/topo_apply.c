/* cluster/topo_apply.c: topo_apply(). A command is applied to a draft that
 * starts by sharing every part of the current snapshot and copies a part the
 * first time it writes to it; a refused command drops the copies. Everything
 * here depends only on the snapshot and the entry's bytes. */
#include "cluster/topo.h"

#include "base/mem.h"
#include "cluster/topo_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- the draft ---- */

struct draft {
    struct tp_nodes *pn;
    struct tp_slots *ps;
    struct tp_mig *pm;
    bool pn_own, ps_own, pm_own;
    uint64_t epoch;
    char *err;
    size_t errsz;
};

__attribute__((format(printf, 2, 3))) static enum topo_res
refuse(struct draft *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errsz, fmt, ap);
    va_end(ap);
    return TOPO_EREFUSED;
}

static struct topo_node *
d_nodes(struct draft *d)
{
    if (!d->pn_own) {
        struct tp_nodes *c = tp_nodes_alloc(d->pn->n);
        memcpy(c->node, d->pn->node, d->pn->n * sizeof(c->node[0]));
        memcpy(c->order, d->pn->order, d->pn->n * sizeof(c->order[0]));
        d->pn = c;
        d->pn_own = true;
    }
    return d->pn->node;
}

static uint16_t *
d_slots(struct draft *d)
{
    if (!d->ps_own) {
        struct tp_slots *c = tp_slots_alloc();
        memcpy(c->owner, d->ps->owner, sizeof(c->owner));
        d->ps = c;
        d->ps_own = true;
    }
    return d->ps->owner;
}

static struct tp_mig *
d_mig(struct draft *d, uint32_t extra)
{
    if (!d->pm_own || d->pm->n + extra > d->pm->cap) {
        struct tp_mig *c = tp_mig_alloc(d->pm->n + extra + 8);
        c->n = d->pm->n;
        memcpy(c->ent, d->pm->ent, d->pm->n * sizeof(c->ent[0]));
        if (d->pm_own) {
            tp_mig_put(d->pm);
        }
        d->pm = c;
        d->pm_own = true;
    }
    return d->pm;
}

/* Store e as slot's entry (dropping it when both halves are empty). */
static void
mig_store(struct draft *d, const struct topo_mig *e)
{
    bool found, empty = e->mig_by == TOPO_NONE && e->imp_by == TOPO_NONE;
    int i = tp_mig_index(d->pm->ent, d->pm->n, e->slot, &found);
    if (!found && empty) {
        return;
    }
    struct tp_mig *m = d_mig(d, found ? 0 : 1);
    if (found && empty) {
        memmove(&m->ent[i], &m->ent[i + 1], (m->n - (uint32_t)i - 1) * sizeof(m->ent[0]));
        m->n--;
    } else if (found) {
        m->ent[i] = *e;
    } else {
        memmove(&m->ent[i + 1], &m->ent[i], (m->n - (uint32_t)i) * sizeof(m->ent[0]));
        m->ent[i] = *e;
        m->n++;
    }
}

static struct topo_mig
mig_get(const struct draft *d, unsigned slot)
{
    bool found;
    int i = tp_mig_index(d->pm->ent, d->pm->n, slot, &found);
    if (found) {
        return d->pm->ent[i];
    }
    return (struct topo_mig){ (uint16_t)slot, TOPO_NONE, TOPO_NONE, TOPO_NONE, TOPO_NONE };
}

/* Clear the SETSLOT states node k set, everywhere. */
static bool
mig_clear_node(struct draft *d, uint16_t k)
{
    bool changed = false;
    for (uint32_t i = 0; i < d->pm->n;) {
        struct topo_mig e = d->pm->ent[i];
        bool hit = false;
        if (e.mig_by == k) {
            e.mig_by = e.mig_to = TOPO_NONE;
            hit = true;
        }
        if (e.imp_by == k) {
            e.imp_by = e.imp_from = TOPO_NONE;
            hit = true;
        }
        if (hit) {
            uint32_t before = d->pm->n;
            mig_store(d, &e);
            changed = true;
            if (d->pm->n < before) {
                continue;
            }
        }
        i++;
    }
    return changed;
}

/* Failover of node `old` to `r`: the SETSLOT states old set are r's now, and
 * the states of other nodes that name old (the target of a MIGRATING, the
 * source of an IMPORTING) name r, so a move under way goes on from the new
 * primary, which has the old one's data (issue 18: the states survive a
 * failover of either side; Redis loses them and needs --cluster fix). */
static void
mig_move_node(struct draft *d, uint16_t old, uint16_t r)
{
    for (uint32_t i = 0; i < d->pm->n; i++) {
        struct topo_mig e = d->pm->ent[i];
        bool hit = false;
        uint16_t *f[4] = { &e.mig_by, &e.mig_to, &e.imp_by, &e.imp_from };
        for (unsigned k = 0; k < 4; k++) {
            if (*f[k] == old) {
                *f[k] = r;
                hit = true;
            }
        }
        if (hit) {
            mig_store(d, &e); /* (in place: both halves stay set as they were) */
        }
    }
}

static int
d_find(const struct draft *d, const char *id)
{
    return tp_find_in(d->pn, id, TOPO_ID_LEN);
}

/* A new epoch would wrap round past UINT64_MAX (NODE_ADD and snapshots
 * carry any u64): refuse, since a current epoch below a config epoch breaks
 * the invariant topo_decode checks. */
static enum topo_res
refuse_epoch_overflow(struct draft *d)
{
    return refuse(d, "ERR Config epoch overflow");
}

/* Redis's clusterBumpConfigEpochWithoutConsensus(): a new epoch unless the
 * node already holds the unique greatest one. 1 bumped, 0 still, -1 refused
 * (overflow). */
static int
bump_epoch(struct draft *d, uint16_t k)
{
    uint64_t max = d->epoch;
    for (uint32_t i = 0; i < d->pn->n; i++) {
        if (d->pn->node[i].config_epoch > max) {
            max = d->pn->node[i].config_epoch;
        }
    }
    const struct topo_node *n = &d->pn->node[k];
    if (n->config_epoch != 0 && n->config_epoch == max) {
        return 0;
    }
    if (d->epoch == UINT64_MAX) {
        refuse_epoch_overflow(d);
        return -1;
    }
    d_nodes(d)[k].config_epoch = ++d->epoch;
    return 1;
}

/* ---- commands ---- */

static enum topo_res
ap_node_add(struct draft *d, const struct tp_cmd *c)
{
    int p = -1;
    if (d_find(d, c->id) >= 0) {
        return refuse(d, "ERR Node %s already exists", c->id);
    }
    if (d->pn->n >= TOPO_MAX_NODES) {
        return refuse(d, "ERR Too many nodes in the cluster");
    }
    if (c->role == TOPO_REPLICA) {
        p = d_find(d, c->id2);
        if (p < 0) {
            return refuse(d, "ERR Unknown node %s", c->id2);
        }
        if (d->pn->node[p].role != TOPO_PRIMARY) {
            return refuse(d, "ERR I can only replicate a master, not a replica.");
        }
    }
    uint32_t n = d->pn->n;
    struct tp_nodes *nn = tp_nodes_alloc(n + 1);
    memcpy(nn->node, d->pn->node, n * sizeof(nn->node[0]));
    struct topo_node *x = &nn->node[n];
    memcpy(x->id, c->id, sizeof(x->id));
    memcpy(x->shard_id, p >= 0 ? d->pn->node[p].shard_id : c->shard_id, sizeof(x->shard_id));
    memcpy(x->ip, c->ip, sizeof(x->ip));
    memcpy(x->hostname, c->hostname, sizeof(x->hostname));
    x->port = c->port;
    x->cport = c->cport;
    x->role = c->role;
    x->flags = c->flags;
    x->primary = p >= 0 ? (uint16_t)p : TOPO_NONE;
    x->config_epoch = c->epoch;
    x->host_id = c->host_id;
    if (c->epoch > d->epoch) {
        d->epoch = c->epoch; /* (the current epoch is the highest config epoch known) */
    }
    /* Insert the new index into the sorted order. */
    uint32_t at = 0;
    while (at < n && memcmp(d->pn->node[d->pn->order[at]].id, c->id, TOPO_ID_LEN) < 0) {
        at++;
    }
    memcpy(nn->order, d->pn->order, at * sizeof(uint16_t));
    nn->order[at] = (uint16_t)n;
    memcpy(nn->order + at + 1, d->pn->order + at, (n - at) * sizeof(uint16_t));
    if (d->pn_own) {
        tp_nodes_put(d->pn);
    }
    d->pn = nn;
    d->pn_own = true;
    if (c->epoch > d->epoch) {
        d->epoch = c->epoch;
    }
    return TOPO_CHANGED;
}

static uint16_t
remap(uint16_t v, uint16_t k)
{
    return v == TOPO_NONE ? v : v == k ? TOPO_NONE : v > k ? (uint16_t)(v - 1) : v;
}

/* Remove node k: its slots become unassigned, its replicas orphans, and every
 * index above k moves down by one. */
static enum topo_res
ap_node_forget(struct draft *d, const struct tp_cmd *c)
{
    int f = d_find(d, c->id);
    if (f < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    uint16_t k = (uint16_t)f;
    mig_clear_node(d, k);
    uint32_t n = d->pn->n;
    struct tp_nodes *nn = tp_nodes_alloc(n - 1);
    memcpy(nn->node, d->pn->node, k * sizeof(nn->node[0]));
    memcpy(nn->node + k, d->pn->node + k + 1, (n - k - 1) * sizeof(nn->node[0]));
    for (uint32_t i = 0; i < n - 1; i++) {
        nn->node[i].primary = remap(nn->node[i].primary, k);
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (d->pn->order[i] != k) {
            nn->order[j++] = remap(d->pn->order[i], k);
        }
    }
    if (d->pn_own) {
        tp_nodes_put(d->pn);
    }
    d->pn = nn;
    d->pn_own = true;
    bool touch = false;
    for (unsigned s = 0; s < SLOT_COUNT && !touch; s++) {
        touch = d->ps->owner[s] != TOPO_NONE && d->ps->owner[s] >= k;
    }
    if (touch) {
        uint16_t *sl = d_slots(d);
        for (unsigned s = 0; s < SLOT_COUNT; s++) {
            sl[s] = remap(sl[s], k);
        }
    }
    /* k's own states went with mig_clear_node(); states towards k go too. */
    for (uint32_t i = 0; i < d->pm->n;) {
        struct topo_mig e = d->pm->ent[i], o = e;
        e.mig_to = remap(e.mig_to, k);
        e.mig_by = e.mig_to == TOPO_NONE ? TOPO_NONE : remap(e.mig_by, k);
        e.imp_from = remap(e.imp_from, k);
        e.imp_by = e.imp_from == TOPO_NONE ? TOPO_NONE : remap(e.imp_by, k);
        uint32_t before = d->pm->n;
        if (memcmp(&e, &o, sizeof(e)) != 0) {
            mig_store(d, &e);
        }
        if (d->pm->n == before) {
            i++;
        }
    }
    return TOPO_CHANGED;
}

static enum topo_res
ap_node_set_addr(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    const struct topo_node *n = &d->pn->node[k];
    if (strcmp(n->ip, c->ip) == 0 && n->port == c->port && n->cport == c->cport &&
        strcmp(n->hostname, c->hostname) == 0) {
        return TOPO_UNCHANGED;
    }
    struct topo_node *w = &d_nodes(d)[k];
    memcpy(w->ip, c->ip, sizeof(w->ip));
    memcpy(w->hostname, c->hostname, sizeof(w->hostname));
    w->port = c->port;
    w->cport = c->cport;
    return TOPO_CHANGED;
}

static enum topo_res
ap_node_set_flags(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (d->pn->node[k].flags == c->flags) {
        return TOPO_UNCHANGED;
    }
    d_nodes(d)[k].flags = c->flags;
    return TOPO_CHANGED;
}

/* ADDSLOTS / DELSLOTS checks, slot by slot in argument order as Redis does:
 * busy (or unassigned) first, then repeated. */
static enum topo_res
check_slots(struct draft *d, const struct tp_cmd *c, bool del)
{
    uint8_t seen[SLOT_COUNT / 8] = { 0 };
    for (uint32_t r = 0; r < c->nranges; r++) {
        unsigned lo = tp_ld16(c->ranges + 4 * r), hi = tp_ld16(c->ranges + 4 * r + 2);
        for (unsigned s = lo; s <= hi; s++) {
            bool owned = d->ps->owner[s] != TOPO_NONE;
            if (del && !owned) {
                return refuse(d, "ERR Slot %u is already unassigned", s);
            }
            if (!del && owned) {
                return refuse(d, "ERR Slot %u is already busy", s);
            }
            if (seen[s / 8] & (1u << (s % 8))) {
                return refuse(d, "ERR Slot %u specified multiple times", s);
            }
            seen[s / 8] |= (uint8_t)(1u << (s % 8));
        }
    }
    return TOPO_CHANGED;
}

static enum topo_res
ap_slots_add(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (d->pn->node[k].role != TOPO_PRIMARY) {
        return refuse(d, "ERR Cannot assign slots to a replica");
    }
    if (check_slots(d, c, false) != TOPO_CHANGED) {
        return TOPO_EREFUSED;
    }
    uint16_t *sl = d_slots(d);
    for (uint32_t r = 0; r < c->nranges; r++) {
        unsigned lo = tp_ld16(c->ranges + 4 * r), hi = tp_ld16(c->ranges + 4 * r + 2);
        for (unsigned s = lo; s <= hi; s++) {
            sl[s] = (uint16_t)k;
            /* Redis: a slot the node imported is no longer importing once it owns it. */
            struct topo_mig e = mig_get(d, s);
            if (e.imp_by == k) {
                e.imp_by = e.imp_from = TOPO_NONE;
                mig_store(d, &e);
            }
        }
    }
    return TOPO_CHANGED;
}

static enum topo_res
ap_slots_del(struct draft *d, const struct tp_cmd *c)
{
    if (check_slots(d, c, true) != TOPO_CHANGED) {
        return TOPO_EREFUSED;
    }
    uint16_t *sl = d_slots(d);
    for (uint32_t r = 0; r < c->nranges; r++) {
        unsigned lo = tp_ld16(c->ranges + 4 * r), hi = tp_ld16(c->ranges + 4 * r + 2);
        for (unsigned s = lo; s <= hi; s++) {
            sl[s] = TOPO_NONE;
        }
    }
    return TOPO_CHANGED;
}

static enum topo_res
ap_slots_flush(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    enum topo_res res = TOPO_UNCHANGED;
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        if (d->ps->owner[s] == k) {
            d_slots(d)[s] = TOPO_NONE;
            res = TOPO_CHANGED;
        }
    }
    return res;
}

static bool
owns_slots(const struct draft *d, unsigned k)
{
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        if (d->ps->owner[s] == k) {
            return true;
        }
    }
    return false;
}

static enum topo_res
ap_replicate(struct draft *d, const struct tp_cmd *c)
{
    int p = d_find(d, c->id2), r = d_find(d, c->id);
    if (p < 0) {
        return refuse(d, "ERR Unknown node %s", c->id2);
    }
    if (r < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (p == r) {
        return refuse(d, "ERR Can't replicate myself");
    }
    if (d->pn->node[p].role != TOPO_PRIMARY) {
        return refuse(d, "ERR I can only replicate a master, not a replica.");
    }
    if (d->pn->node[r].role == TOPO_PRIMARY && owns_slots(d, (unsigned)r)) {
        return refuse(d, "ERR To set a master the node must be empty and without assigned slots.");
    }
    if (d->pn->node[r].role == TOPO_REPLICA && d->pn->node[r].primary == p) {
        return TOPO_UNCHANGED;
    }
    struct topo_node *w = d_nodes(d);
    /* The node's own replicas follow it to the new primary: replicas of
     * replicas are not part of the model. */
    for (uint32_t i = 0; i < d->pn->n; i++) {
        if (i == (uint32_t)r || (w[i].role == TOPO_REPLICA && w[i].primary == r)) {
            w[i].role = TOPO_REPLICA;
            w[i].primary = (uint16_t)p;
            memcpy(w[i].shard_id, w[p].shard_id, sizeof(w[i].shard_id));
        }
    }
    mig_clear_node(d, (uint16_t)r);
    return TOPO_CHANGED;
}

/* Failover: the replica takes its primary's slots with a new config epoch;
 * the old primary and its other replicas become its replicas. */
static enum topo_res
ap_promote(struct draft *d, const struct tp_cmd *c)
{
    int r = d_find(d, c->id);
    if (r < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (d->pn->node[r].role != TOPO_REPLICA) {
        return refuse(d, "ERR You should send CLUSTER FAILOVER to a replica");
    }
    if (d->epoch == UINT64_MAX) {
        return refuse_epoch_overflow(d);
    }
    uint16_t old = d->pn->node[r].primary;
    struct topo_node *w = d_nodes(d);
    w[r].role = TOPO_PRIMARY;
    w[r].primary = TOPO_NONE;
    w[r].config_epoch = ++d->epoch;
    if (old == TOPO_NONE) {
        return TOPO_CHANGED;
    }
    for (uint32_t i = 0; i < d->pn->n; i++) {
        if (i == old || (w[i].role == TOPO_REPLICA && w[i].primary == old)) {
            w[i].role = TOPO_REPLICA;
            w[i].primary = (uint16_t)r;
        }
    }
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        if (d->ps->owner[s] == old) {
            d_slots(d)[s] = (uint16_t)r;
        }
    }
    mig_move_node(d, old, (uint16_t)r);
    return TOPO_CHANGED;
}

static enum topo_res
ap_set_config_epoch(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (c->epoch > INT64_MAX) {
        return refuse(d, "ERR Invalid config epoch specified: %lld", (long long)c->epoch);
    }
    if (d->pn->node[k].config_epoch != 0) {
        return refuse(d, "ERR Node config epoch is already non-zero");
    }
    if (c->epoch == 0) {
        return TOPO_UNCHANGED;
    }
    d_nodes(d)[k].config_epoch = c->epoch;
    if (c->epoch > d->epoch) {
        d->epoch = c->epoch;
    }
    return TOPO_CHANGED;
}

static enum topo_res
ap_bump_epoch(struct draft *d, const struct tp_cmd *c)
{
    int k = d_find(d, c->id);
    if (k < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    int b = bump_epoch(d, (uint16_t)k);
    return b < 0 ? TOPO_EREFUSED : b ? TOPO_CHANGED : TOPO_UNCHANGED;
}

/* Look up SETSLOT's target, with Redis's texts for MIGRATING/IMPORTING. */
static int
setslot_target(struct draft *d, const struct tp_cmd *c, const char *unknown_fmt)
{
    int n = d_find(d, c->id2);
    if (n < 0) {
        refuse(d, unknown_fmt, c->id2);
        return -1;
    }
    if (d->pn->node[n].role != TOPO_PRIMARY) {
        refuse(d, "ERR Target node is not a master");
        return -1;
    }
    return n;
}

static enum topo_res
ap_setslot(struct draft *d, const struct tp_cmd *c)
{
    int by = d_find(d, c->id), n;
    if (by < 0) {
        return refuse(d, "ERR Unknown node %s", c->id);
    }
    if (d->pn->node[by].role != TOPO_PRIMARY) {
        return refuse(d, "ERR Please use SETSLOT only with masters.");
    }
    unsigned s = c->slot;
    struct topo_mig e = mig_get(d, s), before = e;
    uint16_t owner = d->ps->owner[s];
    int bumped = 0;
    switch (c->type) {
    case TOPO_CMD_SLOT_MIGRATING:
        if (owner != by) {
            return refuse(d, "ERR I'm not the owner of hash slot %u", s);
        }
        if ((n = setslot_target(d, c, "ERR I don't know about node %s")) < 0) {
            return TOPO_EREFUSED;
        }
        e.mig_by = (uint16_t)by;
        e.mig_to = (uint16_t)n;
        break;
    case TOPO_CMD_SLOT_IMPORTING:
        if (owner == by) {
            return refuse(d, "ERR I'm already the owner of hash slot %u", s);
        }
        if ((n = setslot_target(d, c, "ERR I don't know about node %s")) < 0) {
            return TOPO_EREFUSED;
        }
        e.imp_by = (uint16_t)by;
        e.imp_from = (uint16_t)n;
        break;
    case TOPO_CMD_SLOT_STABLE:
        if (e.mig_by == by) {
            e.mig_by = e.mig_to = TOPO_NONE;
        }
        if (e.imp_by == by) {
            e.imp_by = e.imp_from = TOPO_NONE;
        }
        break;
    default: /* TOPO_CMD_SLOT_NODE */
        if ((n = setslot_target(d, c, "ERR Unknown node %s")) < 0) {
            return TOPO_EREFUSED;
        }
        /* The source stops migrating once the slot is given away; the
         * destination stops importing, with a new epoch, once it is its own. */
        if (e.mig_by == by && n != by) {
            e.mig_by = e.mig_to = TOPO_NONE;
        }
        if (e.imp_by == by && n == by) {
            e.imp_by = e.imp_from = TOPO_NONE;
            if ((bumped = bump_epoch(d, (uint16_t)by)) < 0) {
                return TOPO_EREFUSED;
            }
        }
        if (owner != n) {
            d_slots(d)[s] = (uint16_t)n;
        }
        if (owner != n || bumped) {
            mig_store(d, &e);
            return TOPO_CHANGED;
        }
        break;
    }
    if (memcmp(&e, &before, sizeof(e)) == 0) {
        return TOPO_UNCHANGED;
    }
    mig_store(d, &e);
    return TOPO_CHANGED;
}

typedef enum topo_res (*ap_fn)(struct draft *, const struct tp_cmd *);

static const ap_fn ap_table[] = {
    [TOPO_CMD_NODE_ADD] = ap_node_add,
    [TOPO_CMD_NODE_FORGET] = ap_node_forget,
    [TOPO_CMD_NODE_SET_ADDR] = ap_node_set_addr,
    [TOPO_CMD_NODE_SET_FLAGS] = ap_node_set_flags,
    [TOPO_CMD_SLOTS_ADD] = ap_slots_add,
    [TOPO_CMD_SLOTS_DEL] = ap_slots_del,
    [TOPO_CMD_SLOTS_FLUSH] = ap_slots_flush,
    [TOPO_CMD_REPLICATE] = ap_replicate,
    [TOPO_CMD_PROMOTE] = ap_promote,
    [TOPO_CMD_SET_CONFIG_EPOCH] = ap_set_config_epoch,
    [TOPO_CMD_BUMP_EPOCH] = ap_bump_epoch,
    [TOPO_CMD_SLOT_MIGRATING] = ap_setslot,
    [TOPO_CMD_SLOT_IMPORTING] = ap_setslot,
    [TOPO_CMD_SLOT_STABLE] = ap_setslot,
    [TOPO_CMD_SLOT_NODE] = ap_setslot,
};

/* A BATCH entry (topo.h): each command on the same draft, in order; the
 * first refused or malformed one ends it (the caller drops the draft). */
static enum topo_res
ap_batch(struct draft *d, const uint8_t *p, size_t len)
{
    if (len < 4 || tp_ld16(p + 2) == 0) {
        snprintf(d->err, d->errsz, "ERR malformed topology entry: %s",
                 len < 4 ? "truncated" : "empty batch");
        return TOPO_EMALFORMED;
    }
    unsigned n = tp_ld16(p + 2);
    size_t off = 4;
    enum topo_res res = TOPO_UNCHANGED;
    for (unsigned i = 0; i < n; i++) {
        uint32_t el = 0;
        if (len - off >= 4) {
            el = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16 |
                 (uint32_t)p[off + 3] << 24;
            off += 4;
        }
        if (len - off < el || el < 2) {
            snprintf(d->err, d->errsz, "ERR malformed topology entry: truncated");
            return TOPO_EMALFORMED;
        }
        struct tp_cmd c;
        if (p[off + 1] == TOPO_CMD_BATCH) {
            snprintf(d->err, d->errsz, "ERR malformed topology entry: a batch inside a batch");
            return TOPO_EMALFORMED;
        }
        if (!tp_cmd_decode(p + off, el, &c, d->err, d->errsz)) {
            return TOPO_EMALFORMED;
        }
        enum topo_res r = ap_table[c.type](d, &c);
        if (r < 0) {
            return r;
        }
        res = r == TOPO_CHANGED ? TOPO_CHANGED : res;
        off += el;
    }
    if (off != len) {
        snprintf(d->err, d->errsz, "ERR malformed topology entry: trailing bytes");
        return TOPO_EMALFORMED;
    }
    return res;
}

enum topo_res
topo_apply(const struct topo *cur, const void *entry, size_t len, struct topo **next, char *err,
           size_t errsz)
{
    char dummy[1];
    if (!err || errsz == 0) {
        err = dummy;
        errsz = sizeof(dummy);
    }
    err[0] = '\0';
    struct tp_cmd c;
    const uint8_t *e = entry;
    bool batch = entry != NULL && len >= 2 && e[0] == TOPO_CMD_VERSION && e[1] == TOPO_CMD_BATCH;
    if (!batch && !tp_cmd_decode(entry, len, &c, err, errsz)) {
        *next = topo_get(cur);
        return TOPO_EMALFORMED;
    }
    struct draft d = {
        .pn = cur->pn,
        .ps = cur->ps,
        .pm = cur->pm,
        .epoch = cur->current_epoch,
        .err = err,
        .errsz = errsz,
    };
    enum topo_res res = batch ? ap_batch(&d, e, len) : ap_table[c.type](&d, &c);
    if (res != TOPO_CHANGED) {
        if (d.pn_own) {
            tp_nodes_put(d.pn);
        }
        if (d.ps_own) {
            tp_slots_put(d.ps);
        }
        if (d.pm_own) {
            tp_mig_put(d.pm);
        }
        *next = topo_get(cur);
        return res;
    }
    if (!d.pn_own) {
        atomic_fetch_add_explicit(&d.pn->refs, 1, memory_order_relaxed);
    }
    if (!d.ps_own) {
        atomic_fetch_add_explicit(&d.ps->refs, 1, memory_order_relaxed);
    }
    if (!d.pm_own) {
        atomic_fetch_add_explicit(&d.pm->refs, 1, memory_order_relaxed);
    }
    *next = tp_assemble(d.pn, d.ps, d.pm, cur->version + 1, d.epoch);
    return TOPO_CHANGED;
}
