/* node/commands/cmd_cluster.c: CLUSTER subcommands. A multi-shard node presents each
 * shard as a Redis Cluster master owning a contiguous slot range, so that
 * cluster-aware clients route to the right port. A one-shard node is a plain
 * Redis server: cluster support is disabled, as in Redis. */
#include "cluster/slot.h"
#include "base/buf.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/core/node.h"
#include "node/core/persist_hot.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <stdio.h>
#include <string.h>

static bool
cluster_enabled(struct conn *c)
{
    if (c->env->topo == NULL && c->env->cfg->cluster.enabled && persist_hot(c->persist)->loading) {
        /* a shard adopts the topology once the node is loaded (durability.md) */
        reply_errf(c, "LOADING Redis is loading the dataset in memory");
        return false;
    }
    if (!shard_multi(c->shard) && c->env->topo == NULL) {
        reply_err(c, RV_ERR_CLUSTER_DISABLED);
        return false;
    }
    return true;
}

/* The address clients should use for this node. */
static const char *
announce_ip(struct conn *c)
{
    const char *ip = c->env->cfg->cluster.announce_ip;
    return ip[0] ? ip : c->lip;
}

void
cmd_cluster_keyslot(struct conn *c, int argc, struct rv_str *argv)
{
    if (cluster_enabled(c)) {
        reply_int(c, slot_of(argv[2].p, argv[2].len));
    }
}

void
cmd_cluster_slots(struct conn *c, int argc, struct rv_str *argv)
{
    if (!cluster_enabled(c)) {
        return;
    }
    if (c->env->topo != NULL) {
        cm_cluster_slots(c);
        return;
    }
    struct node *n = c->env->node;
    reply_array(c, n->nshards);
    for (unsigned i = 0; i < n->nshards; i++) {
        unsigned lo, hi;
        slot_range(i, n->nshards, &lo, &hi);
        reply_array(c, 3);
        reply_int(c, lo);
        reply_int(c, hi);
        reply_array(c, 4);
        reply_bulk_cstr(c, announce_ip(c));
        reply_int(c, node_shard_port(n, i));
        reply_bulk_cstr(c, n->ids[i]);
        reply_map(c, 0);
    }
}

void
cmd_cluster_shards(struct conn *c, int argc, struct rv_str *argv)
{
    if (!cluster_enabled(c)) {
        return;
    }
    if (c->env->topo != NULL) {
        cm_cluster_shards(c);
        return;
    }
    struct node *n = c->env->node;
    reply_array(c, n->nshards);
    for (unsigned i = 0; i < n->nshards; i++) {
        unsigned lo, hi;
        slot_range(i, n->nshards, &lo, &hi);
        reply_map(c, 2);
        reply_bulk_cstr(c, "slots");
        reply_array(c, 2);
        reply_int(c, lo);
        reply_int(c, hi);
        reply_bulk_cstr(c, "nodes");
        reply_array(c, 1);
        reply_map(c, 7);
        reply_bulk_cstr(c, "id");
        reply_bulk_cstr(c, n->ids[i]);
        reply_bulk_cstr(c, "port");
        reply_int(c, node_shard_port(n, i));
        reply_bulk_cstr(c, "ip");
        reply_bulk_cstr(c, announce_ip(c));
        reply_bulk_cstr(c, "endpoint");
        reply_bulk_cstr(c, announce_ip(c));
        reply_bulk_cstr(c, "role");
        reply_bulk_cstr(c, "master");
        reply_bulk_cstr(c, "replication-offset");
        reply_int(c, 0);
        reply_bulk_cstr(c, "health");
        reply_bulk_cstr(c, "online");
    }
}

void
cmd_cluster_nodes(struct conn *c, int argc, struct rv_str *argv)
{
    if (!cluster_enabled(c)) {
        return;
    }
    if (c->env->topo != NULL) {
        cm_cluster_nodes(c);
        return;
    }
    struct node *n = c->env->node;
    struct buf out;
    buf_init(&out);
    for (unsigned i = 0; i < n->nshards; i++) {
        unsigned lo, hi;
        char line[512];
        slot_range(i, n->nshards, &lo, &hi);
        int port = node_shard_port(n, i);
        int len = snprintf(line, sizeof(line), "%s %s:%d@%d %s - 0 0 %u connected %u-%u\n",
                           n->ids[i], announce_ip(c), port, port + 10000,
                           i == c->env->id ? "myself,master" : "master", i + 1, lo, hi);
        buf_append(&out, line, (size_t)len);
    }
    reply_verbatim(c, out.data, out.len);
    buf_deinit(&out);
}

void
cmd_cluster_myid(struct conn *c, int argc, struct rv_str *argv)
{
    if (cluster_enabled(c)) {
        reply_bulk_cstr(c, c->env->node->ids[c->env->id]);
    }
}

void
cmd_cluster_info(struct conn *c, int argc, struct rv_str *argv)
{
    if (!cluster_enabled(c)) {
        return;
    }
    if (c->env->topo != NULL) {
        cm_cluster_info(c);
        return;
    }
    struct node *n = c->env->node;
    char out[1024];
    int len =
        snprintf(out, sizeof(out),
                 "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
                 "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%u\r\n"
                 "cluster_size:%u\r\ncluster_current_epoch:%u\r\ncluster_my_epoch:%u\r\n"
                 "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
                 "total_cluster_links_buffer_limit_exceeded:0\r\n",
                 n->nshards, n->nshards, n->nshards, c->env->id + 1);
    reply_verbatim(c, out, (size_t)len);
}

static bool
parse_slot(struct conn *c, struct rv_str a, unsigned *slot)
{
    int64_t v;
    if (!cmd_arg_int(a, &v) || v < 0 || v >= SLOT_COUNT) {
        reply_errf(c, "ERR Invalid slot");
        return false;
    }
    *slot = (unsigned)v;
    return true;
}

struct slot_walk {
    unsigned slot;
    int64_t max;
    int64_t n;
};

static void
slot_visit(void *arg, struct ks_entry *e)
{
    struct slot_walk *w = arg;
    struct rv_str k = ks_entry_key(e);
    if (w->n < w->max && slot_of(k.p, k.len) == w->slot) {
        w->n++;
    }
}

static void
reply_key(void *arg, struct ks_entry *e)
{
    struct rv_str k = ks_entry_key(e);
    reply_bulk(arg, k.p, k.len);
}

static void
walk_slot(struct conn *c, struct slot_walk *w)
{
    uint64_t cur = 0;
    do {
        cur = ks_scan(c->env->ks, cur, 1024, slot_visit, w);
    } while (cur != 0 && w->n < w->max);
}

void
cmd_cluster_countkeysinslot(struct conn *c, int argc, struct rv_str *argv)
{
    struct slot_walk w = { 0, INT64_MAX, 0 };
    if (!cluster_enabled(c) || !parse_slot(c, argv[2], &w.slot)) {
        return;
    }
    if (slotmig_hiding(c->env, c->env->ks) && slotmig_hidden(c->env, w.slot)) {
        w.n = 0;                              /* being imported: hidden until the move commits */
    } else if (ks_counts_slots(c->env->ks)) { /* cluster mode: kept as keys come and go */
        w.n = (int64_t)ks_slot_keys(c->env->ks, w.slot);
    } else if (shard_owns_slot(c->shard, w.slot)) {
        walk_slot(c, &w);
    }
    reply_int(c, w.n);
}

void
cmd_cluster_getkeysinslot(struct conn *c, int argc, struct rv_str *argv)
{
    struct slot_walk w = { 0, 0, 0 };
    if (!cluster_enabled(c) || !parse_slot(c, argv[2], &w.slot)) {
        return;
    }
    if (!cmd_arg_int(argv[3], &w.max) || w.max < 0) {
        reply_errf(c, "ERR Invalid number of keys");
        return;
    }
    size_t h = reply_defer(c);
    if (ks_counts_slots(c->env->ks) && (size_t)w.max > ks_slot_keys(c->env->ks, w.slot)) {
        w.max = (int64_t)ks_slot_keys(c->env->ks, w.slot); /* the walk stops at the last one */
    }
    if (slotmig_hiding(c->env, c->env->ks) && slotmig_hidden(c->env, w.slot)) {
        w.max = 0; /* being imported: hidden until the move commits */
    }
    if ((c->env->topo != NULL || shard_owns_slot(c->shard, w.slot)) && w.max > 0) {
        w.n = (int64_t)ks_slot_walk(c->env->ks, w.slot, (size_t)w.max, reply_key, c);
    }
    reply_defer_array(c, h, (size_t)w.n);
}

void
cmd_cluster_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by this shard in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id of this shard.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
        "    Set slot state (cluster mode; committed to the topology log).",
        "SHARDS",
        "    Return information about slot range mappings and the shards that own them.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        NULL,
    };
    reply_help(c, "CLUSTER", lines);
}
