/* node/commands/cmd_cluster_mode.c: the CLUSTER subcommands of cluster mode
 * (cluster-enabled yes, docs/cluster.md). What they read comes from the
 * shard's adopted topology snapshot (c->env->topo); what they change becomes a
 * proposal to the topology log (node/features/topology.h), answered once it is
 * committed. Replies and error texts are Redis's. */
#include "base/buf.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/persist_hot.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/topology.h"
#include "node/keyspace/ks.h"
#include "base/mem.h"
#include "base/rand.h"
#include "proto/resp.h"

#include <stdlib.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The topology, or NULL after replying that cluster mode is off. */
static const struct topo *
topo_or_err(struct conn *c)
{
    if (c->env->topo != NULL && c->env->topo_me < 0) {
        /* not in this shard's snapshot: a host that has just joined may have
         * published the one with this node before this shard adopted it */
        shard_adopt_cfg(c->shard);
    }
    if (c->env->topo == NULL && c->env->cfg->cluster.enabled && persist_hot(c->persist)->loading) {
        /* a shard adopts the topology once the node is loaded (durability.md) */
        reply_errf(c, "LOADING Redis is loading the dataset in memory");
        return NULL;
    }
    if (c->env->topo == NULL) {
        reply_errf(c, "ERR This instance has cluster support disabled");
    }
    return c->env->topo;
}

static const char *
my_id(struct conn *c)
{
    return c->env->node->ids[c->env->id];
}

static const char *
role_name(const struct topo_node *n)
{
    return n->role == TOPO_PRIMARY ? "master" : "slave";
}

/* What this shard's node knows of: itself alone until it was met (a node not
 * met yet knows only itself, as in Redis before CLUSTER MEET), else every
 * node that was met. */
static int
me_index(struct conn *c)
{
    return c->env->topo_me;
}

static bool
visible(const struct topo *t, int me, unsigned i)
{
    if (me >= 0 && (t->nodes[me].flags & TOPO_F_LONE)) {
        return (int)i == me;
    }
    return !(t->nodes[i].flags & TOPO_F_LONE);
}

/* ---------------------------------------------------------------- reading */

CMD_HANDLER(cluster_myshardid)
{
    const struct topo *t = topo_or_err(c);
    if (t != NULL) {
        const struct topo_node *me = topo_node_by_id(t, my_id(c), TOPO_ID_LEN);
        reply_bulk_cstr(c, me ? me->shard_id : "");
    }
}

void
cm_cluster_nodes(struct conn *c)
{
    const struct topo *t = c->env->topo;
    int me = me_index(c);
    struct buf out;
    buf_init(&out);
    for (unsigned i = 0; i < t->nnodes; i++) {
        if (visible(t, me, i)) {
            topo_node_line(t, i, my_id(c), NULL, &out);
            buf_putc(&out, '\n');
        }
    }
    reply_verbatim(c, out.data, out.len);
    buf_deinit(&out);
}

/* One node of CLUSTER SLOTS: ip, port, id, and a map with its hostname. */
static void
slots_node(struct conn *c, const struct topo_node *n)
{
    reply_array(c, 4);
    reply_bulk_cstr(c, n->ip);
    reply_int(c, n->port);
    reply_bulk_cstr(c, n->id);
    if (n->hostname[0]) {
        reply_map(c, 1);
        reply_bulk_cstr(c, "hostname");
        reply_bulk_cstr(c, n->hostname);
    } else {
        reply_map(c, 0);
    }
}

void
cm_cluster_slots(struct conn *c)
{
    const struct topo *t = c->env->topo;
    uint16_t reps[TOPO_MAX_NODES];
    struct topo_range r;
    uint16_t owner;
    unsigned pos = 0;
    size_t h = reply_defer(c), n = 0;
    int me = me_index(c);
    while (topo_next_range(t, &pos, TOPO_NONE, &r, &owner)) {
        if (!visible(t, me, owner)) {
            continue;
        }
        size_t nr = topo_replicas(t, owner, reps, TOPO_MAX_NODES);
        reply_array(c, 3 + nr);
        reply_int(c, r.lo);
        reply_int(c, r.hi);
        slots_node(c, &t->nodes[owner]);
        for (size_t i = 0; i < nr; i++) {
            slots_node(c, &t->nodes[reps[i]]);
        }
        n++;
    }
    reply_defer_array(c, h, n);
}

static void
shards_node(struct conn *c, const struct topo_node *n)
{
    reply_map(c, n->hostname[0] ? 8 : 7);
    reply_bulk_cstr(c, "id");
    reply_bulk_cstr(c, n->id);
    /* tls-cluster: the nodes announce their TLS ports (Redis 7.0 names it so) */
    reply_bulk_cstr(c, c->env->cfg->tls.cluster ? "tls-port" : "port");
    reply_int(c, n->port);
    reply_bulk_cstr(c, "ip");
    reply_bulk_cstr(c, n->ip);
    reply_bulk_cstr(c, "endpoint");
    reply_bulk_cstr(c, n->ip);
    if (n->hostname[0]) {
        reply_bulk_cstr(c, "hostname");
        reply_bulk_cstr(c, n->hostname);
    }
    reply_bulk_cstr(c, "role");
    reply_bulk_cstr(c, role_name(n));
    reply_bulk_cstr(c, "replication-offset");
    reply_int(c, 0);
    reply_bulk_cstr(c, "health");
    reply_bulk_cstr(c, (n->flags & TOPO_F_FAIL) ? "fail" : "online");
}

void
cm_cluster_shards(struct conn *c)
{
    const struct topo *t = c->env->topo;
    static _Thread_local uint16_t heads[TOPO_MAX_NODES], members[TOPO_MAX_NODES];
    size_t ns = topo_shards(t, heads, TOPO_MAX_NODES), shown = 0;
    int me = me_index(c);
    size_t hd = reply_defer(c);
    for (size_t i = 0; i < ns; i++) {
        if (!visible(t, me, heads[i])) {
            continue;
        }
        shown++;
        const struct topo_node *head = &t->nodes[heads[i]];
        size_t nm = topo_shard_nodes(t, head->shard_id, members, TOPO_MAX_NODES);
        unsigned primary = TOPO_NONE;
        for (size_t j = 0; j < nm && primary == TOPO_NONE; j++) {
            primary = t->nodes[members[j]].role == TOPO_PRIMARY ? members[j] : TOPO_NONE;
        }
        reply_map(c, 2);
        reply_bulk_cstr(c, "slots");
        size_t h = reply_defer(c), nb = 0;
        struct topo_range r;
        uint16_t owner;
        unsigned pos = 0;
        while (primary != TOPO_NONE && topo_next_range(t, &pos, primary, &r, &owner)) {
            reply_int(c, r.lo);
            reply_int(c, r.hi);
            nb += 2;
        }
        reply_defer_array(c, h, nb);
        reply_bulk_cstr(c, "nodes");
        reply_array(c, nm);
        for (size_t j = 0; j < nm; j++) {
            shards_node(c, &t->nodes[members[j]]);
        }
    }
    reply_defer_array(c, hd, shown);
}

/* Redis's CLUSTER INFO. The state is ok when every slot is served (or
 * cluster-require-full-coverage is no). */
void
cm_cluster_info(struct conn *c)
{
    const struct topo *t = c->env->topo;
    int me = me_index(c);
    unsigned assigned = 0, size = 0, known = 0;
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        assigned += t->slots[s] != TOPO_NONE && visible(t, me, t->slots[s]);
    }
    for (unsigned i = 0; i < t->nnodes; i++) {
        if (visible(t, me, i)) {
            known++;
            size += t->nodes[i].role == TOPO_PRIMARY && topo_node_slot_count(t, i) > 0;
        }
    }
    const struct topo_node *mine = me >= 0 ? &t->nodes[me] : NULL;
    /* down as well while the host's write lease has run out (out of touch with
     * the topology log's quorum), as a Redis node in a minority is: routing
     * refuses keyed commands then (node/server/dispatch.c) */
    bool ok = (assigned == SLOT_COUNT || !c->env->cfg->cluster.require_full_coverage) &&
              c->env->now_ms <
                  atomic_load_explicit(&c->env->node->cluster_lease_ms, memory_order_relaxed);
    struct topology_status st;
    topology_status(&st);
    char out[1024];
    int len = snprintf(out, sizeof(out),
                       "cluster_state:%s\r\ncluster_slots_assigned:%u\r\ncluster_slots_ok:%u\r\n"
                       "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%u\r\n"
                       "cluster_size:%u\r\ncluster_current_epoch:%" PRIu64
                       "\r\ncluster_my_epoch:%" PRIu64 "\r\ncluster_stats_messages_sent:0\r\n"
                       "cluster_stats_messages_received:0\r\n"
                       "total_cluster_links_buffer_limit_exceeded:0\r\n"
                       "topology_log_leader:%d\r\ntopology_log_term:%" PRIu64
                       "\r\ntopology_log_applied:%" PRIu64 "\r\ntopology_log_voters:%u\r\n"
                       "topology_log_learners:%u\r\ntopology_version:%" PRIu64 "\r\n",
                       ok ? "ok" : "fail", assigned, assigned, known, size, t->current_epoch,
                       mine ? mine->config_epoch : 0, st.leader ? 1 : 0, st.term, st.applied_index,
                       st.voters, st.learners, t->version);
    reply_verbatim(c, out, (size_t)len);
}

CMD_HANDLER(cluster_replicas)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    int k = topo_find(t, argv[2].p, argv[2].len);
    if (k < 0) {
        reply_errf(c, "ERR Unknown node %.*s", (int)(argv[2].len > 64 ? 64 : argv[2].len),
                   argv[2].p);
        return;
    }
    if (t->nodes[k].role != TOPO_PRIMARY) {
        reply_errf(c, "ERR The specified node is not a master");
        return;
    }
    static _Thread_local uint16_t reps[TOPO_MAX_NODES];
    size_t nr = topo_replicas(t, (unsigned)k, reps, TOPO_MAX_NODES);
    reply_array(c, nr);
    struct buf line;
    buf_init(&line);
    for (size_t i = 0; i < nr; i++) {
        buf_reset(&line);
        topo_node_line(t, reps[i], my_id(c), NULL, &line);
        reply_bulk(c, line.data, line.len);
    }
    buf_deinit(&line);
}

CMD_HANDLER(cluster_count_failure_reports)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    if (topo_find(t, argv[2].p, argv[2].len) < 0) {
        reply_errf(c, "ERR Unknown node %.*s", (int)(argv[2].len > 64 ? 64 : argv[2].len),
                   argv[2].p);
        return;
    }
    reply_int(c, 0); /* failures are decided by the topology log's leader, not by reports */
}

/* CLUSTER LINKS, with Redis's fields: the host's monitor connections (one
 * per node of another host it watches; "to", as Redis names outbound links).
 * The raft bus is one link per host pair, not per node, and is not listed. */
CMD_HANDLER(cluster_links)
{
    if (topo_or_err(c) == NULL) {
        return;
    }
    static _Thread_local struct topology_link l[256];
    size_t n = topology_links(l, 256);
    n = n < 256 ? n : 256;
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        reply_map(c, 6);
        reply_bulk_cstr(c, "direction");
        reply_bulk_cstr(c, "to");
        reply_bulk_cstr(c, "node");
        reply_bulk_cstr(c, l[i].node_id);
        reply_bulk_cstr(c, "create-time");
        reply_int(c, l[i].create_ms);
        reply_bulk_cstr(c, "events");
        reply_bulk_cstr(c, "r");
        reply_bulk_cstr(c, "send-buffer-allocated");
        reply_int(c, 0);
        reply_bulk_cstr(c, "send-buffer-used");
        reply_int(c, 0);
    }
}

CMD_HANDLER(cluster_saveconfig)
{
    if (topo_or_err(c) != NULL) {
        reply_ok(c); /* every committed change is already on disk (the topology log) */
    }
}

/* ---------------------------------------------------------------- changing */

static bool
parse_slot_arg(struct conn *c, struct rv_str a, unsigned *slot)
{
    int64_t v;
    if (!cmd_arg_int(a, &v) || v < 0 || v >= SLOT_COUNT) {
        reply_errf(c, "ERR Invalid or out of range slot");
        return false;
    }
    *slot = (unsigned)v;
    return true;
}

/* The slots of ADDSLOTS/DELSLOTS (one per argument) or of the RANGE forms
 * (pairs), as sorted ranges; false after an error reply. */
static bool
parse_slots(struct conn *c, int argc, struct rv_str *argv, bool ranges, struct topo_range *out,
            size_t *n)
{
    static _Thread_local uint8_t seen[SLOT_COUNT];
    memset(seen, 0, sizeof(seen));
    for (int i = 2; i < argc; i += ranges ? 2 : 1) {
        unsigned lo, hi;
        if (!parse_slot_arg(c, argv[i], &lo)) {
            return false;
        }
        hi = lo;
        if (ranges && !parse_slot_arg(c, argv[i + 1], &hi)) {
            return false;
        }
        if (lo > hi) {
            reply_errf(c, "ERR start slot number %u is greater than end slot number %u", lo, hi);
            return false;
        }
        for (unsigned s = lo; s <= hi; s++) {
            if (seen[s]) {
                reply_errf(c, "ERR Slot %u specified multiple times", s);
                return false;
            }
            seen[s] = 1;
        }
    }
    *n = 0;
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        if (seen[s] && (s == 0 || !seen[s - 1])) {
            out[*n].lo = (uint16_t)s;
            out[(*n)++].hi = (uint16_t)s;
        } else if (seen[s]) {
            out[*n - 1].hi = (uint16_t)s;
        }
    }
    return true;
}

static void
slots_change(struct conn *c, int argc, struct rv_str *argv, bool ranges, bool add)
{
    if (topo_or_err(c) == NULL) {
        return;
    }
    if (ranges && argc % 2 != 0) {
        reply_errf(c, "ERR wrong number of arguments for 'cluster|%s' command",
                   add ? "addslotsrange" : "delslotsrange");
        return;
    }
    static _Thread_local struct topo_range r[SLOT_COUNT / 2 + 1];
    size_t n;
    if (!parse_slots(c, argc, argv, ranges, r, &n)) {
        return;
    }
    struct buf b;
    buf_init(&b);
    int rc = add ? topo_enc_slots_add(&b, my_id(c), r, n) : topo_enc_slots_del(&b, r, n);
    if (rc == 0) {
        topology_propose(c, &b, TOPOLOGY_REPLY_OK, NULL);
    } else {
        reply_errf(c, "ERR Invalid or out of range slot");
    }
    buf_deinit(&b);
}

CMD_HANDLER(cluster_addslots)
{
    slots_change(c, argc, argv, false, true);
}

CMD_HANDLER(cluster_addslotsrange)
{
    slots_change(c, argc, argv, true, true);
}

CMD_HANDLER(cluster_delslots)
{
    slots_change(c, argc, argv, false, false);
}

CMD_HANDLER(cluster_delslotsrange)
{
    slots_change(c, argc, argv, true, false);
}

/* Propose one command built by enc, answered with how. */
static void
propose_built(struct conn *c, struct buf *b, int rc, enum topology_reply how)
{
    if (rc == 0) {
        topology_propose(c, b, how, my_id(c));
    } else {
        reply_errf(c, "ERR Invalid arguments");
    }
    buf_deinit(b);
}

CMD_HANDLER(cluster_flushslots)
{
    if (topo_or_err(c) == NULL) {
        return;
    }
    if (ks_size(c->env->ks) != 0) {
        reply_errf(c, "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
        return;
    }
    struct buf b;
    buf_init(&b);
    propose_built(c, &b, topo_enc_slots_flush(&b, my_id(c)), TOPOLOGY_REPLY_OK);
}

CMD_HANDLER(cluster_set_config_epoch)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    int64_t epoch;
    if (!cmd_arg_int(argv[2], &epoch)) {
        reply_errf(c, "ERR value is not an integer or out of range");
        return;
    }
    if (epoch < 0) {
        reply_errf(c, "ERR Invalid config epoch specified: %lld", (long long)epoch);
        return;
    }
    /* Redis: only while the node knows no other node */
    int me = me_index(c);
    if (me < 0 || !(t->nodes[me].flags & TOPO_F_LONE)) {
        reply_errf(c, "ERR The user can assign a config epoch only when the node does not know "
                      "any other node.");
        return;
    }
    struct buf b;
    buf_init(&b);
    propose_built(c, &b, topo_enc_set_config_epoch(&b, my_id(c), (uint64_t)epoch),
                  TOPOLOGY_REPLY_OK);
}

CMD_HANDLER(cluster_bumpepoch)
{
    if (topo_or_err(c) == NULL) {
        return;
    }
    struct buf b;
    buf_init(&b);
    propose_built(c, &b, topo_enc_bump_epoch(&b, my_id(c)), TOPOLOGY_REPLY_BUMPEPOCH);
}

CMD_HANDLER(cluster_forget)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    char id[TOPO_ID_LEN + 1], err[TOPO_ERR_MAX];
    snprintf(id, sizeof(id), "%.*s", (int)(argv[2].len > TOPO_ID_LEN ? TOPO_ID_LEN : argv[2].len),
             argv[2].p);
    int k = topo_find(t, argv[2].p, argv[2].len);
    if (argv[2].len != TOPO_ID_LEN || k < 0 || !visible(t, me_index(c), (unsigned)k)) {
        if (topology_recently_forgotten(argv[2].p, argv[2].len)) {
            reply_ok(c); /* (forgotten by this same operation, sent to another node) */
            return;
        }
        reply_errf(c, "ERR Unknown node %.*s", (int)(argv[2].len > 64 ? 64 : argv[2].len),
                   argv[2].p);
        return;
    }
    if (!topo_forget_check(t, my_id(c), id, err, sizeof(err))) {
        reply_errf(c, "%s", err);
        return;
    }
    struct buf b;
    buf_init(&b);
    propose_built(c, &b, topo_enc_node_forget(&b, id), TOPOLOGY_REPLY_OK);
}

/* CLUSTER RESET [HARD|SOFT]: the node leaves the cluster (it is forgotten:
 * its slots become unassigned, its replicas orphans) and is added again as a
 * lone, empty primary that knows only itself; a replica drops its data. HARD
 * also gives it a new node id and config epoch 0. The host stays a server of
 * the topology log while it has nodes (docs/cluster.md). */
CMD_HANDLER(cluster_reset)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    bool hard = argc == 3 && cmd_arg_is(argv[2], "hard");
    if (argc > 3 || (argc == 3 && !hard && !cmd_arg_is(argv[2], "soft"))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    int me = me_index(c);
    bool replica = me >= 0 ? t->nodes[me].role == TOPO_REPLICA : topology_shard_follows(c->shard);
    if (!replica && ks_size(c->env->ks) != 0) {
        reply_errf(c, "ERR CLUSTER RESET can't be called with master nodes containing keys");
        return;
    }
    struct buf e[2];
    const struct buf *ev[2];
    size_t ne = 0;
    buf_init(&e[0]);
    buf_init(&e[1]);
    if (me >= 0) {
        topo_enc_node_forget(&e[ne], my_id(c));
        ev[ne] = &e[ne];
        ne++;
    }
    char new_id[TOPO_ID_LEN + 1] = "";
    struct topo_node_spec sp;
    topology_own_spec(c->env->id, &sp);
    if (hard) {
        rand_hex(new_id, TOPO_ID_LEN);
        new_id[TOPO_ID_LEN] = '\0';
        sp.id = new_id;
    } else if (me >= 0) {
        sp.config_epoch = t->nodes[me].config_epoch;
    }
    if (me >= 0) { /* (where the cluster knows it, not what the config says now) */
        sp.ip = t->nodes[me].ip;
        sp.port = t->nodes[me].port;
        sp.cport = t->nodes[me].cport;
        sp.hostname = t->nodes[me].hostname;
    }
    ev[ne] = &e[ne];
    if (topo_enc_node_add(&e[ne], &sp) != 0) {
        reply_errf(c, "ERR Invalid arguments");
    } else {
        ne++;
        topology_propose_reset(c, ev, ne, hard ? new_id : NULL);
    }
    buf_deinit(&e[0]);
    buf_deinit(&e[1]);
}

/* CLUSTER MEET to a node of this host: both now know every node met so far. */
static void
meet_local(struct conn *c, const struct topo *t, int me, unsigned target)
{
    struct buf e[2], *ev[2];
    size_t ne = 0;
    int ends[2] = { (int)target, me };
    for (int k = 0; k < 2 && !(k == 1 && ends[1] == ends[0]); k++) {
        const struct topo_node *x = &t->nodes[ends[k]];
        if (x->flags & TOPO_F_LONE) {
            buf_init(&e[ne]);
            topo_enc_node_set_flags(&e[ne], x->id, (uint16_t)(x->flags & ~TOPO_F_LONE));
            ev[ne] = &e[ne];
            ne++;
        }
    }
    topology_propose_seq(c, (const struct buf *const *)ev, ne);
    for (size_t k = 0; k < ne; k++) {
        buf_deinit(&e[k]);
    }
}

/* RVCLUSTER JOIN for this host's nodes, as RESP: each node is one argument,
 * "id,shard id,ip,port,cport,config epoch,hostname,primary id or -,lo-hi;lo-hi...",
 * primaries first (a replica's primary must be in the log before it). */
static void
join_command(const struct topo *t, uint64_t host, struct buf *out)
{
    unsigned n = 0;
    for (unsigned i = 0; i < t->nnodes; i++) {
        n += t->nodes[i].host_id == host;
    }
    char hex[24];
    snprintf(hex, sizeof(hex), "%016" PRIx64, host);
    resp_w_array(out, 4 + n);
    resp_w_bulk_cstr(out, "RVCLUSTER");
    resp_w_bulk_cstr(out, "JOIN");
    resp_w_bulk_cstr(out, hex);
    resp_w_bulk_cstr(out, topology_bus_address());
    struct buf spec;
    buf_init(&spec);
    for (unsigned k = 0; k < 2 * t->nnodes; k++) {
        unsigned i = k % t->nnodes;
        const struct topo_node *x = &t->nodes[i];
        if (x->host_id != host || (k < t->nnodes) != (x->role == TOPO_PRIMARY)) {
            continue;
        }
        const char *pid = x->role == TOPO_REPLICA && x->primary != TOPO_NONE
                              ? t->nodes[x->primary].id
                              : "-";
        buf_reset(&spec);
        buf_appendf(&spec, "%s,%s,%s,%u,%u,%" PRIu64 ",%s,%s,", x->id, x->shard_id, x->ip, x->port,
                    x->cport, x->config_epoch, x->hostname, pid);
        struct topo_range r;
        uint16_t owner;
        unsigned pos = 0;
        for (int nr = 0; topo_next_range(t, &pos, i, &r, &owner); nr++) {
            buf_appendf(&spec, "%s%u-%u", nr ? ";" : "", r.lo, r.hi);
        }
        resp_w_bulk(out, spec.data, spec.len);
    }
    buf_deinit(&spec);
}

/* CLUSTER MEET ip port [cport] */
CMD_HANDLER(cluster_meet)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    int64_t port, cport = 0;
    if (!cmd_arg_int(argv[3], &port) || port < 0 || port > 65535 ||
        (argc > 4 && (!cmd_arg_int(argv[4], &cport) || cport < 0 || cport > 65535))) {
        reply_errf(c, "ERR Invalid base port specified: %.*s",
                   (int)(argv[3].len > 32 ? 32 : argv[3].len), argv[3].p);
        return;
    }
    if (argc > 5) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    int me = me_index(c);
    if (me < 0) {
        reply_errf(c, "TRYAGAIN this node is not in the topology yet");
        return;
    }
    for (unsigned i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        bool ip_ok = (argv[2].len == strlen(n->ip) && memcmp(argv[2].p, n->ip, argv[2].len) == 0) ||
                     (n->host_id == t->nodes[me].host_id &&
                      (cmd_arg_is(argv[2], "127.0.0.1") ||
                       (argv[2].len == strlen(c->lip) &&
                        memcmp(argv[2].p, c->lip, argv[2].len) == 0)));
        if (n->port != port || !ip_ok) {
            continue;
        }
        /* A node of this host, or of a host already sharing this host's log:
         * both ends now know every node met so far (a node that CLUSTER RESET
         * made lone is added back this way: redis-cli's add-node). */
        meet_local(c, t, me, i);
        return;
    }
    char ip[64];
    snprintf(ip, sizeof(ip), "%.*s", (int)(argv[2].len > 63 ? 63 : argv[2].len), argv[2].p);
    struct buf cmd;
    buf_init(&cmd);
    join_command(t, t->nodes[me].host_id, &cmd);
    topology_meet_host(c, ip, (int)port, &cmd);
    buf_deinit(&cmd);
}

/* One node of RVCLUSTER JOIN (see join_command); false when malformed. */
static bool
parse_join_node(struct rv_str a, struct topo_node_spec *sp, char (*f)[256], struct topo_range *r,
                size_t *nr)
{
    const char *p = a.p, *end = a.p + a.len;
    for (int i = 0; i < 8; i++) { /* the fields before the slot ranges */
        const char *comma = memchr(p, ',', (size_t)(end - p));
        if (comma == NULL || comma - p >= 256) {
            return false;
        }
        memcpy(f[i], p, (size_t)(comma - p));
        f[i][comma - p] = '\0';
        p = comma + 1;
    }
    char *e;
    unsigned long port = strtoul(f[3], &e, 10), cport = strtoul(f[4], NULL, 10);
    unsigned long long epoch = strtoull(f[5], NULL, 10);
    bool replica = strcmp(f[7], "-") != 0;
    if (*e || port > 65535 || cport > 65535 || strlen(f[0]) != TOPO_ID_LEN ||
        (replica && strlen(f[7]) != TOPO_ID_LEN)) {
        return false;
    }
    *sp = (struct topo_node_spec){ .id = f[0],
                                   .shard_id = f[1],
                                   .ip = f[2],
                                   .port = (uint16_t)port,
                                   .cport = (uint16_t)cport,
                                   .hostname = f[6],
                                   .role = replica ? TOPO_REPLICA : TOPO_PRIMARY,
                                   .primary_id = replica ? f[7] : NULL,
                                   .config_epoch = epoch };
    *nr = 0;
    while (p < end) { /* lo-hi;lo-hi... */
        char one[16];
        const char *semi = memchr(p, ';', (size_t)(end - p));
        size_t len = (size_t)((semi ? semi : end) - p);
        unsigned lo, hi;
        int used = 0;
        if (len == 0 || len >= sizeof(one) || *nr >= SLOT_COUNT / 2) {
            return false;
        }
        memcpy(one, p, len);
        one[len] = '\0';
        if (sscanf(one, "%u-%u%n", &lo, &hi, &used) != 2 || (size_t)used != len || lo > hi ||
            hi >= SLOT_COUNT) {
            return false;
        }
        r[(*nr)++] = (struct topo_range){ (uint16_t)lo, (uint16_t)hi };
        p += len + (semi != NULL);
    }
    return true;
}

/* RVCLUSTER PROPOSE ok|bumpepoch node-id|- entry...: topology entries another
 * host of the cluster could not propose because it does not lead the log. */
static void
rvcluster_propose(struct conn *c, int argc, struct rv_str *argv)
{
    bool bump = cmd_arg_is(argv[2], "bumpepoch");
    bool has_id = argv[3].len == TOPO_ID_LEN, no_id = argv[3].len == 1 && argv[3].p[0] == '-';
    if ((!bump && !cmd_arg_is(argv[2], "ok")) || !(has_id || no_id) || (bump && !has_id)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    char id[TOPO_ID_LEN + 1] = "";
    if (argv[3].len == TOPO_ID_LEN) {
        memcpy(id, argv[3].p, TOPO_ID_LEN);
    }
    size_t n = (size_t)(argc - 4);
    struct buf *e = rv_calloc(n, sizeof(*e));
    struct buf **ev = rv_calloc(n, sizeof(*ev));
    for (size_t i = 0; i < n; i++) {
        buf_init(&e[i]);
        buf_append(&e[i], argv[4 + i].p, argv[4 + i].len);
        ev[i] = &e[i];
    }
    topology_propose_forwarded(c, (const struct buf *const *)ev, n,
                               bump ? TOPOLOGY_REPLY_BUMPEPOCH : TOPOLOGY_REPLY_OK,
                               id[0] ? id : NULL);
    for (size_t i = 0; i < n; i++) {
        buf_deinit(&e[i]);
    }
    rv_free(e);
    rv_free(ev);
}

/* RVCLUSTER JOIN host-id bus-address node...: sent by a host that was told to
 * MEET one of this host's nodes. Its nodes and slots are committed here, then
 * it becomes a server of the topology log. Refused as a whole when a slot it
 * owns is owned by another node here. */
static void rvcluster_join(struct conn *c, const struct topo *t, int argc, struct rv_str *argv);

CMD_HANDLER(rvcluster)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    if (cmd_arg_is(argv[1], "status") && argc == 2) {
        /* what another host's monitor asks: "<leads> <leader id> <term> <applied index>" */
        struct topology_status st;
        char line[96];
        topology_status(&st);
        snprintf(line, sizeof(line), "%d %016" PRIx64 " %" PRIu64 " %" PRIu64, st.leader ? 1 : 0,
                 st.leader_id, st.term, st.applied_index);
        reply_simple(c, line);
    } else if (cmd_arg_is(argv[1], "propose") && argc >= 5) {
        rvcluster_propose(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "join") && argc >= 5) {
        rvcluster_join(c, t, argc, argv);
    } else {
        reply_err(c, RV_ERR_SYNTAX);
    }
}

/* RVCLUSTER JOIN (see above): the entries that add the joining host's nodes
 * and slots, and meet this host's lone nodes, proposed as one sequence. */
static void
rvcluster_join(struct conn *c, const struct topo *t, int argc, struct rv_str *argv)
{
    char lip[64];
    int lport;
    if (!topology_leads()) { /* the joining host asks the leader's host instead */
        if (topology_leader_node(t, lip, sizeof(lip), &lport)) {
            reply_errf(c, "LEADER %s:%d", lip, lport);
        } else {
            reply_errf(c, "TRYAGAIN the topology log has no leader now");
        }
        return;
    }
    char hex[24];
    snprintf(hex, sizeof(hex), "%.*s", (int)(argv[2].len > 16 ? 16 : argv[2].len), argv[2].p);
    uint64_t host = strtoull(hex, NULL, 16);
    if (host == 0 || argv[3].len == 0 || argv[3].len >= 64) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    char bus[64];
    snprintf(bus, sizeof(bus), "%.*s", (int)argv[3].len, argv[3].p);
    size_t cap = (size_t)(argc - 4) * 2 + t->nnodes;
    struct buf *e = rv_calloc(cap, sizeof(*e));
    struct buf **ev = rv_calloc(cap, sizeof(*ev));
    size_t ne = 0;
    static _Thread_local struct topo_range r[SLOT_COUNT / 2], keep[SLOT_COUNT / 2];
    static _Thread_local char f[9][256];
    const char *refused = NULL;
    char why[160];
    for (int i = 4; i < argc && refused == NULL; i++) {
        struct topo_node_spec sp;
        size_t nr, nk = 0;
        if (!parse_join_node(argv[i], &sp, f, r, &nr)) {
            refused = "ERR malformed RVCLUSTER JOIN node";
            break;
        }
        sp.host_id = host;
        const struct topo_node *old = topo_node_by_id(t, sp.id, TOPO_ID_LEN);
        if (old != NULL && old->host_id != host) {
            snprintf(why, sizeof(why), "ERR node %s already belongs to another host", sp.id);
            refused = why;
            break;
        }
        for (size_t k = 0; k < nr && refused == NULL; k++) { /* its slots not its own here yet */
            for (unsigned s = r[k].lo; s <= r[k].hi; s++) {
                const struct topo_node *o = topo_slot_node(t, s);
                if (o != NULL && memcmp(o->id, sp.id, TOPO_ID_LEN) != 0) {
                    snprintf(why, sizeof(why), "ERR Slot %u is already busy", s);
                    refused = why;
                    break;
                }
                if (o != NULL) {
                    continue; /* (a join tried again) */
                }
                if (nk > 0 && keep[nk - 1].hi + 1u == s) {
                    keep[nk - 1].hi = (uint16_t)s;
                } else {
                    keep[nk++] = (struct topo_range){ (uint16_t)s, (uint16_t)s };
                }
            }
        }
        if (refused != NULL) {
            break;
        }
        if (old == NULL) {
            buf_init(&e[ne]);
            topo_enc_node_add(&e[ne], &sp);
            ev[ne] = &e[ne];
            ne++;
        }
        if (nk > 0) {
            buf_init(&e[ne]);
            topo_enc_slots_add(&e[ne], sp.id, keep, nk);
            ev[ne] = &e[ne];
            ne++;
        }
    }
    /* this host's nodes that were not met yet are met now */
    int me = me_index(c);
    for (unsigned i = 0; refused == NULL && me >= 0 && i < t->nnodes; i++) {
        const struct topo_node *x = &t->nodes[i];
        if (x->host_id == t->nodes[me].host_id && (x->flags & TOPO_F_LONE)) {
            buf_init(&e[ne]);
            topo_enc_node_set_flags(&e[ne], x->id, (uint16_t)(x->flags & ~TOPO_F_LONE));
            ev[ne] = &e[ne];
            ne++;
        }
    }
    if (refused != NULL) {
        reply_errf(c, "%s", refused);
    } else {
        topology_admit(c, (const struct buf *const *)ev, ne, host, bus);
    }
    for (size_t k = 0; k < ne; k++) {
        buf_deinit(&e[k]);
    }
    rv_free(e);
    rv_free(ev);
}

/* CLUSTER REPLICATE node-id: this node becomes a replica of that primary; its
 * shard then follows it (node/features/topology.c, topology_reconcile). */
CMD_HANDLER(cluster_replicate)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    int k = topo_find(t, argv[2].p, argv[2].len), me = me_index(c);
    if (k < 0 || argv[2].len != TOPO_ID_LEN || !visible(t, me, (unsigned)k)) {
        reply_errf(c, "ERR Unknown node %.*s", (int)(argv[2].len > 64 ? 64 : argv[2].len),
                   argv[2].p);
        return;
    }
    if (k == me) {
        reply_errf(c, "ERR Can't replicate myself");
        return;
    }
    if (t->nodes[k].role != TOPO_PRIMARY) {
        reply_errf(c, "ERR I can only replicate a master, not a replica.");
        return;
    }
    if (me < 0) {
        reply_errf(c, "TRYAGAIN this node is not in the topology yet");
        return;
    }
    if (t->nodes[me].role == TOPO_PRIMARY &&
        (topo_node_slot_count(t, (unsigned)me) > 0 || ks_size(c->env->ks) != 0)) {
        reply_errf(c, "ERR To set a master the node must be empty and without assigned slots.");
        return;
    }
    struct buf b;
    buf_init(&b);
    propose_built(c, &b, topo_enc_replicate(&b, my_id(c), t->nodes[k].id), TOPOLOGY_REPLY_OK);
}

/* CLUSTER FAILOVER [FORCE|TAKEOVER], on a replica. Default: the primary hands
 * over (FAILOVER TO this node: writes paused until this node has every record,
 * then it takes over) and the promotion is then committed to the topology;
 * the reply is the primary's to FAILOVER (+OK: started, as Redis). FORCE and
 * TAKEOVER commit the promotion at once, without the primary: writes it
 * acknowledged that this node had not received are lost (docs/cluster.md). */
CMD_HANDLER(cluster_failover)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    bool force = argc == 3 && cmd_arg_is(argv[2], "force");
    bool takeover = argc == 3 && cmd_arg_is(argv[2], "takeover");
    if (argc > 3 || (argc == 3 && !force && !takeover)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    int me = me_index(c);
    if (me < 0 || t->nodes[me].role != TOPO_REPLICA) {
        reply_errf(c, "ERR You should send CLUSTER FAILOVER to a replica");
        return;
    }
    if (t->nodes[me].primary == TOPO_NONE) {
        reply_errf(c, "ERR I'm a replica but my master is unknown to me");
        return;
    }
    struct buf b;
    buf_init(&b);
    if (force || takeover) {
        propose_built(c, &b, topo_enc_promote(&b, my_id(c)), TOPOLOGY_REPLY_OK);
        return;
    }
    const struct topo_node *p = &t->nodes[t->nodes[me].primary], *m = &t->nodes[me];
    char port[16], timeout[24];
    snprintf(port, sizeof(port), "%u", m->port);
    snprintf(timeout, sizeof(timeout), "%lld", (long long)c->env->cfg->cluster.node_timeout);
    resp_w_array(&b, 6);
    resp_w_bulk_cstr(&b, "FAILOVER");
    resp_w_bulk_cstr(&b, "TO");
    resp_w_bulk_cstr(&b, m->ip);
    resp_w_bulk_cstr(&b, port);
    resp_w_bulk_cstr(&b, "TIMEOUT");
    resp_w_bulk_cstr(&b, timeout);
    topology_relay(c, p->ip, p->port, &b);
    buf_deinit(&b);
}

/* ---------------------------------------------------------------- SETSLOT */

struct slot_probe {
    unsigned slot;
    bool found;
};

static void
slot_probe_visit(void *arg, struct ks_entry *e)
{
    struct slot_probe *w = arg;
    struct rv_str k = ks_entry_key(e);
    w->found = w->found || slot_of(k.p, k.len) == w->slot;
}

/* This shard holds a key of slot (a walk of its keyspace: an admin command). */
static bool
slot_has_keys(struct conn *c, unsigned slot)
{
    if (ks_counts_slots(c->env->ks)) {
        return ks_slot_keys(c->env->ks, slot) > 0;
    }
    struct slot_probe w = { slot, false };
    uint64_t cur = 0;
    do {
        cur = ks_scan(c->env->ks, cur, 1024, slot_probe_visit, &w);
    } while (cur != 0 && !w.found);
    return w.found;
}

/* Whether this node's topology already is what the change asks for. redis-cli
 * sends the same SETSLOT NODE to the target, the source and every other
 * primary in turn; once the first has committed, the others need no commit of
 * their own (a view that lags can only miss a later change, and answering as
 * if the command came before it is what a commit would have done). */
static bool
setslot_unchanged(const struct topo *t, const struct buf *b)
{
    struct topo *next = NULL;
    enum topo_res r = topo_apply(t, b->data + b->off, buf_unread(b), &next, NULL, 0);
    topo_put(next);
    return r == TOPO_UNCHANGED;
}

/* CLUSTER SETSLOT slot MIGRATING|IMPORTING|NODE id / STABLE: a proposal,
 * answered once committed. The topology checks ownership and the target
 * (topo_apply, Redis's texts); the key check is this node's: NODE giving
 * away a slot this node owns is refused while it still holds keys of it. */
CMD_HANDLER(cluster_setslot)
{
    const struct topo *t = topo_or_err(c);
    if (t == NULL) {
        return;
    }
    int me = me_index(c);
    if (me >= 0 && t->nodes[me].role != TOPO_PRIMARY) {
        reply_errf(c, "ERR Please use SETSLOT only with masters.");
        return;
    }
    unsigned slot;
    if (!parse_slot_arg(c, argv[2], &slot)) {
        return;
    }
    enum topo_cmd_type type;
    if (cmd_arg_is(argv[3], "migrating") && argc == 5) {
        type = TOPO_CMD_SLOT_MIGRATING;
    } else if (cmd_arg_is(argv[3], "importing") && argc == 5) {
        type = TOPO_CMD_SLOT_IMPORTING;
    } else if (cmd_arg_is(argv[3], "stable") && argc == 4) {
        type = TOPO_CMD_SLOT_STABLE;
    } else if (cmd_arg_is(argv[3], "node") && argc == 5) {
        type = TOPO_CMD_SLOT_NODE;
    } else {
        reply_errf(c, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER "
                      "HELP");
        return;
    }
    if (type == TOPO_CMD_SLOT_MIGRATING && (me < 0 || t->slots[slot] != me)) {
        reply_errf(c, "ERR I'm not the owner of hash slot %u", slot);
        return;
    }
    if (type == TOPO_CMD_SLOT_IMPORTING && me >= 0 && t->slots[slot] == me) {
        reply_errf(c, "ERR I'm already the owner of hash slot %u", slot);
        return;
    }
    char id[TOPO_ID_LEN + 1] = "";
    if (type != TOPO_CMD_SLOT_STABLE) {
        int k = topo_find(t, argv[4].p, argv[4].len);
        if (k < 0 || argv[4].len != TOPO_ID_LEN) {
            reply_errf(c,
                       type == TOPO_CMD_SLOT_NODE ? "ERR Unknown node %.*s"
                                                  : "ERR I don't know about node %.*s",
                       (int)(argv[4].len > 64 ? 64 : argv[4].len), argv[4].p);
            return;
        }
        memcpy(id, t->nodes[k].id, TOPO_ID_LEN);
        if (type == TOPO_CMD_SLOT_NODE && k != me && me >= 0 && t->slots[slot] == me &&
            t->nodes[k].role == TOPO_PRIMARY && slot_has_keys(c, slot)) {
            reply_errf(c,
                       "ERR Can't assign hashslot %u to a different node while I still hold "
                       "keys for this hash slot.",
                       slot);
            return;
        }
    }
    struct buf b;
    buf_init(&b);
    int rc = topo_enc_setslot(&b, type, slot, my_id(c), id[0] ? id : NULL);
    if (rc == 0 && setslot_unchanged(t, &b)) {
        reply_ok(c);
        buf_deinit(&b);
        return;
    }
    propose_built(c, &b, rc, TOPOLOGY_REPLY_OK);
}

/* ASKING: the next command may touch a slot this node is importing. */
CMD_HANDLER(asking)
{
    if (c->env->topo == NULL) {
        reply_errf(c, "ERR This instance has cluster support disabled");
        return;
    }
    c->flags |= CONN_ASKING | CONN_ASKING_NEW;
    reply_ok(c);
}
