/* cluster/topo_text.c: CLUSTER NODES text, a pure function of a snapshot (plus
 * the caller's node id and the bus's live link state). Format, per
 * https://redis.io/docs/latest/commands/cluster-nodes/ :
 *   <id> <ip>:<port>@<cport>[,<hostname>] <flags> <primary|-> <ping-sent>
 *   <pong-recv> <config-epoch> <link-state> <slot> <slot> ... */
#include "cluster/topo.h"

#include "base/mem.h"
#include "cluster/topo_int.h"

#include <inttypes.h>
#include <string.h>

static const struct {
    uint16_t bit;
    const char *name;
} flag_names[] = {
    { TOPO_F_PFAIL, "fail?" },           { TOPO_F_FAIL, "fail" },
    { TOPO_F_HANDSHAKE, "handshake" },   { TOPO_F_NOADDR, "noaddr" },
    { TOPO_F_NOFAILOVER, "nofailover" },
};

static void
put_flags(struct buf *out, const struct topo_node *n, bool myself)
{
    if (myself) {
        buf_append(out, "myself,", 7);
    }
    buf_appendf(out, "%s", n->role == TOPO_PRIMARY ? "master" : "slave");
    for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
        if (n->flags & flag_names[i].bit) {
            buf_appendf(out, ",%s", flag_names[i].name);
        }
    }
}

/* One line, without "\n". runs[0..nruns) are the node's slot runs in slot order. */
static void
put_line(const struct topo *t, unsigned idx, const char *myself_id, const struct topo_link *link,
         const struct topo_range *runs, size_t nruns, struct buf *out)
{
    const struct topo_node *n = &t->nodes[idx];
    bool myself = myself_id && strlen(myself_id) == TOPO_ID_LEN &&
                  memcmp(myself_id, n->id, TOPO_ID_LEN) == 0;
    const struct topo_node *p = n->primary != TOPO_NONE ? &t->nodes[n->primary] : NULL;
    buf_appendf(out, "%s %s:%u@%u", n->id, n->ip, n->port, n->cport);
    if (n->hostname[0]) {
        buf_appendf(out, ",%s", n->hostname);
    }
    buf_putc(out, ' ');
    put_flags(out, n, myself);
    /* A replica shows its primary's config epoch, as Redis does. */
    buf_appendf(out, " %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %s", p ? p->id : "-",
                link ? link->ping_sent : 0, link ? link->pong_recv : 0,
                p ? p->config_epoch : n->config_epoch,
                !link || link->connected || myself ? "connected" : "disconnected");
    for (size_t i = 0; i < nruns; i++) {
        if (runs[i].lo == runs[i].hi) {
            buf_appendf(out, " %u", runs[i].lo);
        } else {
            buf_appendf(out, " %u-%u", runs[i].lo, runs[i].hi);
        }
    }
    if (!myself) {
        return;
    }
    /* Only the caller's own line lists its open migrations. */
    for (uint32_t i = 0; i < t->nmigs; i++) {
        const struct topo_mig *m = &t->migs[i];
        if (m->mig_by == idx) {
            buf_appendf(out, " [%u->-%s]", m->slot, t->nodes[m->mig_to].id);
        } else if (m->imp_by == idx) {
            buf_appendf(out, " [%u-<-%s]", m->slot, t->nodes[m->imp_from].id);
        }
    }
}

void
topo_node_line(const struct topo *t, unsigned idx, const char *myself_id,
               const struct topo_link *link, struct buf *out)
{
    struct topo_range *runs = rv_malloc(SLOT_COUNT * sizeof(*runs));
    size_t n = 0;
    unsigned pos = 0;
    while (topo_next_range(t, &pos, idx, &runs[n], NULL)) {
        n++;
    }
    put_line(t, idx, myself_id, link, runs, n, out);
    rv_free(runs);
}

/* All runs bucketed by owner (a counting sort, stable in slot order), so the
 * whole text costs one pass over the slots plus the nodes. */
void
topo_nodes_text(const struct topo *t, const char *myself_id, const struct topo_link *links,
                struct buf *out)
{
    struct topo_range *all = rv_malloc(SLOT_COUNT * sizeof(*all));
    struct topo_range *byowner = rv_malloc(SLOT_COUNT * sizeof(*byowner));
    uint16_t *owner = rv_malloc(SLOT_COUNT * sizeof(*owner));
    uint32_t *start = rv_calloc(t->nnodes + 1, sizeof(*start));
    size_t n = 0;
    unsigned pos = 0;
    while (topo_next_range(t, &pos, TOPO_NONE, &all[n], &owner[n])) {
        start[owner[n] + 1]++;
        n++;
    }
    for (uint32_t i = 0; i < t->nnodes; i++) {
        start[i + 1] += start[i];
    }
    uint32_t *fill = rv_malloc((t->nnodes + 1) * sizeof(*fill));
    memcpy(fill, start, (t->nnodes + 1) * sizeof(*fill));
    for (size_t i = 0; i < n; i++) {
        byowner[fill[owner[i]]++] = all[i];
    }
    for (uint32_t i = 0; i < t->nnodes; i++) {
        put_line(t, i, myself_id, links ? &links[i] : NULL, byowner + start[i],
                 start[i + 1] - start[i], out);
        buf_putc(out, '\n');
    }
    rv_free(fill);
    rv_free(start);
    rv_free(owner);
    rv_free(byowner);
    rv_free(all);
}
