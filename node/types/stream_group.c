/* node/types/stream_group.c: consumer groups, consumers and PELs (see
 * stream_group.h). */
#include "node/types/stream_group.h"

#include "base/mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Redis's rax order: bytes, then the shorter first. */
static int
name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c != 0) {
        return c;
    }
    return al < bl ? -1 : al > bl;
}

static char *
name_dup(struct rv_str s)
{
    char *p = rv_malloc(s.len + 1);
    memcpy(p, s.p, s.len);
    p[s.len] = '\0';
    return p;
}

/* Grows the pointer array *vp (n used of *cap) to hold one more. */
static void
grow(void *vp, size_t n, size_t *cap)
{
    void **v = vp;
    if (n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *v = rv_realloc(*v, *cap * sizeof(void *));
    }
}

static void
ptr_insert(void **v, size_t *n, size_t at, void *x)
{
    memmove(&v[at + 1], &v[at], (*n - at) * sizeof(*v));
    v[at] = x;
    (*n)++;
}

static void
ptr_remove(void **v, size_t *n, size_t at)
{
    memmove(&v[at], &v[at + 1], (*n - at - 1) * sizeof(*v));
    (*n)--;
}

/* ------------------------------------------------------------------- PEL */

size_t
sg_pel_lower(struct sg_nack *const *pel, size_t n, struct sid id)
{
    size_t lo = 0, hi = n;
    /* deliveries mostly append: check the tail first */
    if (n > 0 && sid_cmp(pel[n - 1]->id, id) < 0) {
        return n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sid_cmp(pel[mid]->id, id) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

struct sg_nack *
sg_pel_find(const struct sg_group *g, struct sid id)
{
    size_t i = sg_pel_lower(g->p.pel, g->p.npel, id);
    return i < g->p.npel && sid_cmp(g->p.pel[i]->id, id) == 0 ? g->p.pel[i] : NULL;
}

/* Inserts x at index i of a, moving the shorter side. */
static void
pel_insert(struct sg_pel *a, size_t i, struct sg_nack *x)
{
    size_t head = a->base ? (size_t)(a->pel - a->base) : 0;
    if (head > 0 && i < a->npel / 2) {
        memmove(a->pel - 1, a->pel, i * sizeof(*a->pel));
        a->pel--;
    } else {
        if (head + a->npel == a->cap) {
            if (head > a->cap / 4) { /* reclaim the head room */
                memmove(a->base, a->pel, a->npel * sizeof(*a->pel));
                head = 0;
            } else {
                a->cap = a->cap ? a->cap * 2 : 4;
                a->base = rv_realloc(a->base, a->cap * sizeof(*a->base));
            }
            a->pel = a->base + head;
        }
        memmove(&a->pel[i + 1], &a->pel[i], (a->npel - i) * sizeof(*a->pel));
    }
    a->pel[i] = x;
    a->npel++;
}

static void
pel_remove(struct sg_pel *a, size_t i)
{
    if (i < a->npel / 2) {
        memmove(a->pel + 1, a->pel, i * sizeof(*a->pel));
        a->pel++;
    } else {
        memmove(&a->pel[i], &a->pel[i + 1], (a->npel - i - 1) * sizeof(*a->pel));
    }
    if (--a->npel == 0) {
        a->pel = a->base;
    }
}

static void
cons_pel_insert(struct sg_consumer *c, struct sg_nack *n)
{
    pel_insert(&c->p, sg_pel_lower(c->p.pel, c->p.npel, n->id), n);
}

static void
cons_pel_remove(struct sg_consumer *c, struct sg_nack *n)
{
    size_t i = sg_pel_lower(c->p.pel, c->p.npel, n->id);
    if (i < c->p.npel && c->p.pel[i] == n) {
        pel_remove(&c->p, i);
    }
}

void
sg_pel_move(struct sg_group *g, struct sg_nack *n, struct sg_consumer *c)
{
    (void)g;
    if (n->owner == c) {
        return;
    }
    cons_pel_remove(n->owner, n);
    n->owner = c;
    cons_pel_insert(c, n);
}

struct sg_nack *
sg_pel_add(struct sg_group *g, struct sg_consumer *c, struct sid id, int64_t now, uint64_t count)
{
    size_t i = sg_pel_lower(g->p.pel, g->p.npel, id);
    struct sg_nack *n;
    if (i < g->p.npel && sid_cmp(g->p.pel[i]->id, id) == 0) {
        n = g->p.pel[i];
        sg_pel_move(g, n, c);
    } else {
        n = rv_malloc(sizeof(*n));
        n->id = id;
        n->owner = c;
        pel_insert(&g->p, i, n);
        cons_pel_insert(c, n);
    }
    n->delivery_ms = now;
    n->count = count;
    return n;
}

void
sg_pel_remove(struct sg_group *g, struct sg_nack *n)
{
    size_t i = sg_pel_lower(g->p.pel, g->p.npel, n->id);
    if (i < g->p.npel && g->p.pel[i] == n) {
        pel_remove(&g->p, i);
    }
    cons_pel_remove(n->owner, n);
    rv_free(n);
}

/* ------------------------------------------------------------- consumers */

static size_t
cons_lower(const struct sg_group *g, struct rv_str name)
{
    size_t lo = 0, hi = g->ncons;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (name_cmp(g->cons[mid]->name, g->cons[mid]->nlen, name.p, name.len) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

struct sg_consumer *
sg_consumer_find(const struct sg_group *g, struct rv_str name)
{
    size_t i = cons_lower(g, name);
    if (i < g->ncons && name_cmp(g->cons[i]->name, g->cons[i]->nlen, name.p, name.len) == 0) {
        return g->cons[i];
    }
    return NULL;
}

struct sg_consumer *
sg_consumer_get(struct sg_group *g, struct rv_str name, int64_t now, bool *created)
{
    size_t i = cons_lower(g, name);
    *created = false;
    if (i < g->ncons && name_cmp(g->cons[i]->name, g->cons[i]->nlen, name.p, name.len) == 0) {
        return g->cons[i];
    }
    struct sg_consumer *c = rv_calloc(1, sizeof(*c));
    c->name = name_dup(name);
    c->nlen = name.len;
    c->seen_ms = now;
    c->active_ms = -1;
    grow(&g->cons, g->ncons, &g->ccap);
    ptr_insert((void **)g->cons, &g->ncons, i, c);
    *created = true;
    return c;
}

static void
consumer_free(struct sg_consumer *c)
{
    rv_free(c->name);
    rv_free(c->p.base);
    rv_free(c);
}

size_t
sg_consumer_delete(struct sg_group *g, struct sg_consumer *c)
{
    size_t n = c->p.npel;
    while (c->p.npel > 0) {
        sg_pel_remove(g, c->p.pel[c->p.npel - 1]);
    }
    size_t i = cons_lower(g, (struct rv_str){ c->name, c->nlen });
    if (i < g->ncons && g->cons[i] == c) {
        ptr_remove((void **)g->cons, &g->ncons, i);
    }
    consumer_free(c);
    return n;
}

/* ---------------------------------------------------------------- groups */

static size_t
group_lower(const struct sg_set *gs, struct rv_str name)
{
    size_t lo = 0, hi = gs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (name_cmp(gs->v[mid]->name, gs->v[mid]->nlen, name.p, name.len) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

struct sg_group *
sg_find(const struct sg_set *gs, struct rv_str name)
{
    if (gs == NULL) {
        return NULL;
    }
    size_t i = group_lower(gs, name);
    if (i < gs->n && name_cmp(gs->v[i]->name, gs->v[i]->nlen, name.p, name.len) == 0) {
        return gs->v[i];
    }
    return NULL;
}

struct sg_group *
sg_create(struct sg_set **gsp, struct rv_str name, struct sid last, int64_t entries_read)
{
    if (*gsp == NULL) {
        *gsp = rv_calloc(1, sizeof(**gsp));
    }
    struct sg_set *gs = *gsp;
    size_t i = group_lower(gs, name);
    if (i < gs->n && name_cmp(gs->v[i]->name, gs->v[i]->nlen, name.p, name.len) == 0) {
        return NULL;
    }
    struct sg_group *g = rv_calloc(1, sizeof(*g));
    g->name = name_dup(name);
    g->nlen = name.len;
    g->last_id = last;
    g->entries_read = entries_read;
    grow(&gs->v, gs->n, &gs->cap);
    ptr_insert((void **)gs->v, &gs->n, i, g);
    return g;
}

static void
group_free(struct sg_group *g)
{
    for (size_t i = 0; i < g->p.npel; i++) {
        rv_free(g->p.pel[i]);
    }
    for (size_t i = 0; i < g->ncons; i++) {
        consumer_free(g->cons[i]);
    }
    rv_free(g->p.base);
    rv_free(g->cons);
    rv_free(g->name);
    rv_free(g);
}

bool
sg_destroy(struct sg_set *gs, struct rv_str name)
{
    struct sg_group *g = sg_find(gs, name);
    if (g == NULL) {
        return false;
    }
    ptr_remove((void **)gs->v, &gs->n, group_lower(gs, name));
    group_free(g);
    return true;
}

void
sg_set_free(struct sg_set *gs)
{
    if (gs == NULL) {
        return;
    }
    for (size_t i = 0; i < gs->n; i++) {
        group_free(gs->v[i]);
    }
    rv_free(gs->v);
    rv_free(gs);
}

struct sg_set *
sg_set_dup(const struct sg_set *gs)
{
    if (gs == NULL) {
        return NULL;
    }
    struct sg_set *t = NULL;
    for (size_t i = 0; i < gs->n; i++) {
        const struct sg_group *g = gs->v[i];
        struct sg_group *h = sg_create(&t, (struct rv_str){ g->name, g->nlen }, g->last_id,
                                       g->entries_read);
        for (size_t j = 0; j < g->ncons; j++) {
            const struct sg_consumer *c = g->cons[j];
            bool created;
            struct sg_consumer *d = sg_consumer_get(h, (struct rv_str){ c->name, c->nlen },
                                                    c->seen_ms, &created);
            d->active_ms = c->active_ms;
        }
        for (size_t j = 0; j < g->p.npel; j++) {
            const struct sg_nack *n = g->p.pel[j];
            bool created;
            struct sg_consumer *d = sg_consumer_get(h,
                                                    (struct rv_str){ n->owner->name,
                                                                     n->owner->nlen },
                                                    0, &created);
            sg_pel_add(h, d, n->id, n->delivery_ms, n->count);
        }
    }
    return t;
}

size_t
sg_set_mem(const struct sg_set *gs)
{
    if (gs == NULL) {
        return 0;
    }
    size_t m = rv_usable_size(gs) + (gs->v ? rv_usable_size(gs->v) : 0);
    for (size_t i = 0; i < gs->n; i++) {
        const struct sg_group *g = gs->v[i];
        m += rv_usable_size(g) + rv_usable_size(g->name);
        m += g->p.base ? rv_usable_size(g->p.base) : 0;
        m += g->cons ? rv_usable_size(g->cons) : 0;
        if (g->p.npel > 0) {
            m += g->p.npel * rv_usable_size(g->p.pel[0]); /* one size class */
        }
        for (size_t j = 0; j < g->ncons; j++) {
            const struct sg_consumer *c = g->cons[j];
            m += rv_usable_size(c) + rv_usable_size(c->name) +
                 (c->p.base ? rv_usable_size(c->p.base) : 0);
        }
    }
    return m;
}

/* ------------------------------------------------------------------ emit */

/* XGROUPLOAD key group last-id entries-read [consumer seen-ms active-ms
 * [id delivery-ms count ...]]: per group without consumers one command, per
 * consumer one or more with at most OBJ_EMIT_BATCH pending entries each. */
struct load_cmd {
    struct rv_str av[8 + 3 * OBJ_EMIT_BATCH];
    char num[4 + 3 * OBJ_EMIT_BATCH][STREAM_ID_MAX];
    int argc, nnum;
};

static struct rv_str
load_num(struct load_cmd *x, int64_t v)
{
    char *b = x->num[x->nnum++];
    return (struct rv_str){ b, (size_t)snprintf(b, STREAM_ID_MAX, "%" PRId64, v) };
}

static struct rv_str
load_id(struct load_cmd *x, struct sid id)
{
    char *b = x->num[x->nnum++];
    return (struct rv_str){ b, sid_fmt(id, b) };
}

static void
load_head(struct load_cmd *x, struct rv_str key, const struct sg_group *g,
          const struct sg_consumer *c)
{
    x->nnum = 0;
    x->av[0] = (struct rv_str){ "XGROUPLOAD", 10 };
    x->av[1] = key;
    x->av[2] = (struct rv_str){ g->name, g->nlen };
    x->av[3] = load_id(x, g->last_id);
    x->av[4] = load_num(x, g->entries_read);
    x->argc = 5;
    if (c != NULL) {
        x->av[5] = (struct rv_str){ c->name, c->nlen };
        x->av[6] = load_num(x, c->seen_ms);
        x->av[7] = load_num(x, c->active_ms);
        x->argc = 8;
    }
}

void
sg_set_emit(const struct sg_set *gs, struct rv_str key, obj_emit_fn *fn, void *arg)
{
    struct load_cmd *x = rv_malloc(sizeof(*x));
    for (size_t i = 0; gs != NULL && i < gs->n; i++) {
        const struct sg_group *g = gs->v[i];
        if (g->ncons == 0) {
            load_head(x, key, g, NULL);
            fn(arg, x->argc, x->av);
        }
        for (size_t j = 0; j < g->ncons; j++) {
            const struct sg_consumer *c = g->cons[j];
            size_t k = 0;
            do {
                load_head(x, key, g, c);
                for (size_t b = 0; b < OBJ_EMIT_BATCH && k < c->p.npel; b++, k++) {
                    const struct sg_nack *n = c->p.pel[k];
                    x->av[x->argc++] = load_id(x, n->id);
                    x->av[x->argc++] = load_num(x, n->delivery_ms);
                    x->av[x->argc++] = load_num(x, (int64_t)n->count);
                }
                fn(arg, x->argc, x->av);
            } while (k < c->p.npel);
        }
    }
    rv_free(x);
}
