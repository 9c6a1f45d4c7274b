/* cluster/topo.c: snapshots (their refcounted parts) and lookups. */
#include "cluster/topo.h"

#include "base/mem.h"
#include "cluster/topo_int.h"

#include <stdio.h>
#include <string.h>

/* ---- parts ---- */

struct tp_nodes *
tp_nodes_alloc(uint32_t n)
{
    struct tp_nodes *p = rv_calloc(1, sizeof(*p) + n * sizeof(p->node[0]) +
                                          (n ? n : 1) * sizeof(uint16_t));
    atomic_init(&p->refs, 1);
    p->n = n;
    p->order = (uint16_t *)(void *)&p->node[n];
    return p;
}

void
tp_nodes_put(struct tp_nodes *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
        rv_free(p);
    }
}

static int
cmp_ids(const struct tp_nodes *p, uint16_t a, uint16_t b)
{
    return memcmp(p->node[a].id, p->node[b].id, TOPO_ID_LEN);
}

/* Rebuild order[] by a bottom-up merge sort (decode may bring thousands). */
void
tp_nodes_sort(struct tp_nodes *p)
{
    uint32_t n = p->n;
    uint16_t *a = p->order, *tmp = rv_malloc((n ? n : 1) * sizeof(*tmp));
    for (uint32_t i = 0; i < n; i++) {
        a[i] = (uint16_t)i;
    }
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                tmp[k++] = cmp_ids(p, a[j], a[i]) < 0 ? a[j++] : a[i++];
            }
            while (i < mid) {
                tmp[k++] = a[i++];
            }
            while (j < hi) {
                tmp[k++] = a[j++];
            }
        }
        memcpy(a, tmp, n * sizeof(*a));
    }
    rv_free(tmp);
}

struct tp_slots *
tp_slots_alloc(void)
{
    struct tp_slots *p = rv_malloc(sizeof(*p));
    atomic_init(&p->refs, 1);
    memset(p->owner, 0xff, sizeof(p->owner));
    return p;
}

void
tp_slots_put(struct tp_slots *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
        rv_free(p);
    }
}

struct tp_mig *
tp_mig_alloc(uint32_t cap)
{
    struct tp_mig *p = rv_malloc(sizeof(*p) + (cap ? cap : 1) * sizeof(p->ent[0]));
    atomic_init(&p->refs, 1);
    p->n = 0;
    p->cap = cap ? cap : 1;
    return p;
}

void
tp_mig_put(struct tp_mig *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
        rv_free(p);
    }
}

struct topo *
tp_assemble(struct tp_nodes *pn, struct tp_slots *ps, struct tp_mig *pm, uint64_t version,
            uint64_t current_epoch)
{
    struct topo *t = rv_calloc(1, sizeof(*t));
    atomic_init(&t->refs, 1);
    t->pn = pn;
    t->ps = ps;
    t->pm = pm;
    t->nodes = pn->node;
    t->nnodes = pn->n;
    t->slots = ps->owner;
    t->migs = pm->ent;
    t->nmigs = pm->n;
    t->version = version;
    t->current_epoch = current_epoch;
    return t;
}

/* ---- lifecycle ---- */

struct topo *
topo_create(void)
{
    return tp_assemble(tp_nodes_alloc(0), tp_slots_alloc(), tp_mig_alloc(0), 0, 0);
}

struct topo *
topo_get(const struct topo *t)
{
    struct topo *m = (struct topo *)t; /* the count is the one mutable field */
    if (m) {
        atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    }
    return m;
}

void
topo_put(struct topo *t)
{
    if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) {
        tp_nodes_put(t->pn);
        tp_slots_put(t->ps);
        tp_mig_put(t->pm);
        rv_free(t);
    }
}

/* ---- lookups ---- */

int
tp_find_in(const struct tp_nodes *p, const char *id, size_t len)
{
    if (len != TOPO_ID_LEN) {
        return -1;
    }
    uint32_t lo = 0, hi = p->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = memcmp(p->node[p->order[mid]].id, id, TOPO_ID_LEN);
        if (c == 0) {
            return p->order[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

int
topo_find(const struct topo *t, const char *id, size_t len)
{
    return tp_find_in(t->pn, id, len);
}

const struct topo_node *
topo_node_by_id(const struct topo *t, const char *id, size_t len)
{
    int i = tp_find_in(t->pn, id, len);
    return i < 0 ? NULL : &t->nodes[i];
}

int
tp_mig_index(const struct topo_mig *m, uint32_t n, unsigned slot, bool *found)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m[mid].slot == slot) {
            *found = true;
            return (int)mid;
        }
        if (m[mid].slot < slot) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return (int)lo;
}

const struct topo_mig *
topo_slot_mig(const struct topo *t, unsigned slot)
{
    bool found;
    int i = tp_mig_index(t->migs, t->nmigs, slot, &found);
    return found ? &t->migs[i] : NULL;
}

static size_t
collect(const struct topo *t, uint16_t *out, size_t cap,
        bool (*match)(const struct topo_node *, const void *), const void *arg)
{
    size_t k = 0;
    for (uint32_t i = 0; i < t->nnodes; i++) {
        if (match(&t->nodes[i], arg)) {
            if (k < cap) {
                out[k] = (uint16_t)i;
            }
            k++;
        }
    }
    return k;
}

static bool
match_host(const struct topo_node *n, const void *arg)
{
    return n->host_id == *(const uint64_t *)arg;
}

static bool
match_replica_of(const struct topo_node *n, const void *arg)
{
    return n->role == TOPO_REPLICA && n->primary == *(const unsigned *)arg;
}

static bool
match_primary(const struct topo_node *n, const void *arg)
{
    (void)arg;
    return n->role == TOPO_PRIMARY;
}

static bool
match_shard(const struct topo_node *n, const void *arg)
{
    return memcmp(n->shard_id, arg, TOPO_ID_LEN) == 0;
}

size_t
topo_host_nodes(const struct topo *t, uint64_t host_id, uint16_t *out, size_t cap)
{
    return collect(t, out, cap, match_host, &host_id);
}

size_t
topo_replicas(const struct topo *t, unsigned primary, uint16_t *out, size_t cap)
{
    return collect(t, out, cap, match_replica_of, &primary);
}

size_t
topo_primaries(const struct topo *t, uint16_t *out, size_t cap)
{
    return collect(t, out, cap, match_primary, NULL);
}

size_t
topo_shard_nodes(const struct topo *t, const char *shard_id, uint16_t *out, size_t cap)
{
    if (!shard_id || strlen(shard_id) != TOPO_ID_LEN) {
        return 0;
    }
    return collect(t, out, cap, match_shard, shard_id);
}

size_t
topo_shards(const struct topo *t, uint16_t *out, size_t cap)
{
    size_t k = 0;
    for (uint32_t i = 0; i < t->nnodes; i++) {
        uint32_t j = 0;
        while (j < i && memcmp(t->nodes[j].shard_id, t->nodes[i].shard_id, TOPO_ID_LEN) != 0) {
            j++;
        }
        if (j == i) {
            if (k < cap) {
                out[k] = (uint16_t)i;
            }
            k++;
        }
    }
    return k;
}

unsigned
topo_node_slot_count(const struct topo *t, unsigned idx)
{
    unsigned k = 0;
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        k += t->slots[s] == idx;
    }
    return k;
}

bool
topo_next_range(const struct topo *t, unsigned *pos, unsigned only_owner, struct topo_range *r,
                uint16_t *owner)
{
    unsigned s = *pos;
    while (s < SLOT_COUNT &&
           (t->slots[s] == TOPO_NONE || (only_owner != TOPO_NONE && t->slots[s] != only_owner))) {
        s++;
    }
    if (s >= SLOT_COUNT) {
        *pos = SLOT_COUNT;
        return false;
    }
    uint16_t o = t->slots[s];
    unsigned e = s;
    while (e + 1 < SLOT_COUNT && t->slots[e + 1] == o) {
        e++;
    }
    r->lo = (uint16_t)s;
    r->hi = (uint16_t)e;
    if (owner) {
        *owner = o;
    }
    *pos = e + 1;
    return true;
}

bool
topo_forget_check(const struct topo *t, const char *myself_id, const char *id, char *err,
                  size_t errsz)
{
    int k = id ? tp_find_in(t->pn, id, strlen(id)) : -1;
    int me = myself_id ? tp_find_in(t->pn, myself_id, strlen(myself_id)) : -1;
    if (k < 0) {
        snprintf(err, errsz, "ERR Unknown node %s", id ? id : "");
        return false;
    }
    if (k == me) {
        snprintf(err, errsz, "ERR I tried hard but I can't forget myself...");
        return false;
    }
    if (me >= 0 && t->nodes[me].role == TOPO_REPLICA && t->nodes[me].primary == k) {
        snprintf(err, errsz, "ERR Can't forget my master!");
        return false;
    }
    return true;
}
