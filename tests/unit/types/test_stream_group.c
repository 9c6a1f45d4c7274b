/* tests/unit/types/test_stream_group.c: consumer groups and PELs against a
 * simple model (id -> owner, count), with random deliveries, moves, acks and
 * consumer deletions; then copies and rebuild commands. */
#include "node/types/stream_group.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIDS 600
#define NCONS 5

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct model {
    int owner[NIDS]; /* -1: not pending */
    uint64_t count[NIDS];
};

static const char *const names[NCONS] = { "b", "a", "ab", "zz", "" };

static struct rv_str
nm(int i)
{
    return (struct rv_str){ names[i], strlen(names[i]) };
}

static struct sid
id_of(int i)
{
    return (struct sid){ (uint64_t)(i / 3) + 1, (uint64_t)(i % 3) };
}

/* The group matches the model: PELs sorted, consistent, counted. */
static void
check(const struct sg_group *g, const struct model *m)
{
    size_t want = 0, per[NCONS] = { 0 };
    for (int i = 0; i < NIDS; i++) {
        const struct sg_nack *n = sg_pel_find(g, id_of(i));
        if (m->owner[i] < 0) {
            cr_assert_null(n, "id %d pending", i);
            continue;
        }
        want++;
        per[m->owner[i]]++;
        cr_assert_not_null(n, "id %d missing", i);
        cr_assert_eq(n->count, m->count[i]);
        cr_assert_eq(n->owner, sg_consumer_find(g, nm(m->owner[i])));
    }
    cr_assert_eq(g->p.npel, want);
    for (size_t i = 1; i < g->p.npel; i++) {
        cr_assert_lt(sid_cmp(g->p.pel[i - 1]->id, g->p.pel[i]->id), 0);
    }
    for (int k = 0; k < NCONS; k++) {
        const struct sg_consumer *c = sg_consumer_find(g, nm(k));
        if (c == NULL) {
            cr_assert_eq(per[k], 0);
            continue;
        }
        cr_assert_eq(c->p.npel, per[k], "consumer %d", k);
        for (size_t i = 0; i < c->p.npel; i++) {
            cr_assert_eq(c->p.pel[i]->owner, c);
            cr_assert(i == 0 || sid_cmp(c->p.pel[i - 1]->id, c->p.pel[i]->id) < 0);
        }
    }
    for (size_t i = 1; i < g->ncons; i++) {
        const struct sg_consumer *a = g->cons[i - 1], *b = g->cons[i];
        size_t l = a->nlen < b->nlen ? a->nlen : b->nlen;
        int c = memcmp(a->name, b->name, l);
        cr_assert(c < 0 || (c == 0 && a->nlen < b->nlen), "consumers out of order");
    }
}

static void
random_ops(struct sg_group *g, struct model *m, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        int i = (int)(rnd() % NIDS), k = (int)(rnd() % NCONS);
        bool created;
        switch (rnd() % 6) {
        case 0:
        case 1: /* deliver (or redeliver elsewhere) */
            sg_pel_add(g, sg_consumer_get(g, nm(k), 1, &created), id_of(i), 7, 1);
            m->owner[i] = k;
            m->count[i] = 1;
            break;
        case 2: /* claim: move, count + 1 */
            if (m->owner[i] >= 0) {
                struct sg_nack *n = sg_pel_find(g, id_of(i));
                sg_pel_add(g, sg_consumer_get(g, nm(k), 1, &created), id_of(i), 9, n->count + 1);
                m->owner[i] = k;
                m->count[i]++;
            }
            break;
        case 3:
        case 4: /* ack */
            if (m->owner[i] >= 0) {
                sg_pel_remove(g, sg_pel_find(g, id_of(i)));
                m->owner[i] = -1;
            }
            break;
        default: /* delete a consumer, rarely */
            if (rnd() % 20 == 0) {
                struct sg_consumer *c = sg_consumer_find(g, nm(k));
                if (c != NULL) {
                    size_t had = 0;
                    for (int j = 0; j < NIDS; j++) {
                        if (m->owner[j] == k) {
                            m->owner[j] = -1;
                            had++;
                        }
                    }
                    cr_assert_eq(sg_consumer_delete(g, c), had);
                }
            }
        }
    }
}

Test(stream_group, pel_against_model)
{
    struct sg_set *gs = NULL;
    struct model m;
    memset(m.owner, -1, sizeof(m.owner));
    struct sg_group *g = sg_create(&gs, (struct rv_str){ "g", 1 }, (struct sid){ 0, 0 }, -1);
    cr_assert_not_null(g);
    cr_assert_null(sg_create(&gs, (struct rv_str){ "g", 1 }, (struct sid){ 0, 0 }, -1));
    for (int round = 0; round < 20; round++) {
        random_ops(g, &m, 500);
        check(g, &m);
    }
    struct sg_set *copy = sg_set_dup(gs);
    check(sg_find(copy, (struct rv_str){ "g", 1 }), &m);
    cr_assert_gt(sg_set_mem(gs), g->p.npel * 32);
    sg_set_free(copy);
    cr_assert(sg_destroy(gs, (struct rv_str){ "g", 1 }));
    cr_assert_not(sg_destroy(gs, (struct rv_str){ "g", 1 }));
    sg_set_free(gs);
}

Test(stream_group, groups_in_name_order)
{
    struct sg_set *gs = NULL;
    const char *in[] = { "m", "a", "mm", "", "b" };
    for (size_t i = 0; i < 5; i++) {
        sg_create(&gs, (struct rv_str){ in[i], strlen(in[i]) }, (struct sid){ 0, 0 }, -1);
    }
    const char *want[] = { "", "a", "b", "m", "mm" };
    cr_assert_eq(gs->n, 5);
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(gs->v[i]->nlen, strlen(want[i]));
        cr_assert(memcmp(gs->v[i]->name, want[i], gs->v[i]->nlen) == 0);
    }
    sg_set_free(gs);
}

/* Rebuild commands: counted per consumer, in batches of OBJ_EMIT_BATCH. */
struct emitted {
    int cmds, triples, groups_only;
};

static void
on_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct emitted *e = arg;
    cr_assert_eq(argv[0].len, 10);
    cr_assert(memcmp(argv[0].p, "XGROUPLOAD", 10) == 0);
    cr_assert(argc == 5 || (argc >= 8 && (argc - 8) % 3 == 0));
    cr_assert_leq((argc - 8) / 3, OBJ_EMIT_BATCH);
    e->cmds++;
    e->triples += argc > 5 ? (argc - 8) / 3 : 0;
    e->groups_only += argc == 5;
}

Test(stream_group, emit_covers_every_pending_entry)
{
    struct sg_set *gs = NULL;
    bool created;
    struct sg_group *g = sg_create(&gs, (struct rv_str){ "g", 1 }, (struct sid){ 5, 0 }, 3);
    sg_create(&gs, (struct rv_str){ "empty", 5 }, (struct sid){ 0, 0 }, -1);
    struct sg_consumer *a = sg_consumer_get(g, (struct rv_str){ "a", 1 }, 1, &created);
    sg_consumer_get(g, (struct rv_str){ "idle", 4 }, 1, &created);
    for (int i = 0; i < 200; i++) {
        sg_pel_add(g, a, id_of(i), 100 + i, 1);
    }
    struct emitted e = { 0, 0, 0 };
    sg_set_emit(gs, (struct rv_str){ "k", 1 }, on_cmd, &e);
    cr_assert_eq(e.triples, 200);
    cr_assert_eq(e.groups_only, 1);
    cr_assert_eq(e.cmds, 1 + 4 + 1); /* empty group; a: 64+64+64+8; idle */
    sg_set_free(gs);
}

/* Deliveries in id order acknowledged oldest first (a worker's pattern):
 * both ends of the PELs move, the arrays stay sorted and bounded. */
Test(stream_group, fifo_deliveries_and_acks)
{
    struct sg_set *gs = NULL;
    bool created;
    struct sg_group *g = sg_create(&gs, (struct rv_str){ "g", 1 }, (struct sid){ 0, 0 }, -1);
    struct sg_consumer *a = sg_consumer_get(g, (struct rv_str){ "a", 1 }, 1, &created);
    size_t next_ack = 0;
    for (size_t i = 0; i < 300000; i++) {
        sg_pel_add(g, a, (struct sid){ i + 1, 0 }, 1, 1);
        if (i >= 40000) {
            struct sg_nack *n = sg_pel_find(g, (struct sid){ next_ack + 1, 0 });
            cr_assert_not_null(n);
            sg_pel_remove(g, n);
            next_ack++;
        }
    }
    cr_assert_eq(g->p.npel, 40000);
    cr_assert_eq(a->p.npel, 40000);
    cr_assert_leq(g->p.cap, 4 * 40000);
    for (size_t i = 0; i < g->p.npel; i++) {
        cr_assert_eq(g->p.pel[i]->id.ms, next_ack + 1 + i);
        cr_assert_eq(a->p.pel[i], g->p.pel[i]);
    }
    sg_set_free(gs);
}
