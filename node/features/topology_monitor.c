/* node/features/topology_monitor.c: the write lease and the log leader's
 * failure detector (docs/cluster.md, "Automatic failover", "The write lease"). */
#include "node/features/topology_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "base/rv_err.h"
#include "cluster/topo.h"
#include "control/ctl.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/persist/persist.h"
#include "proto/resp.h"
#include "replication/repl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The monitor thread (the write lease, and the leader's failure detector):
 * when each node of another host last answered a PING. */
struct probe {
    char id[ID_LEN + 1];
    int64_t last_ok_ms;
    struct tpi_conn
        c; /* a connection kept open (a new one per ping would leave thousands in TIME_WAIT) */
    char ip[TOPO_IP_MAX + 1];
    unsigned port;
    int64_t created_ms; /* unix ms the connection was opened (CLUSTER LINKS) */
};

static struct {
    pthread_t th;
    bool running;
    atomic_bool stop;
    struct probe *p;
    size_t n, cap;
    bool was_leader;
} mon;

/* Run fn(arg) on a detached thread of its own (a blocking exchange with
 * another host, off the shard and control threads). 0, or an errno. */

static void probe_close(struct probe *p);

/* ---------------------------------------------------------------- the monitor */

/* Every quarter node timeout: the write lease, and on the leader's host the
 * failure detector. The leader PINGs every primary node of another host that
 * has slots and a replica; one that answered nothing for cluster-node-timeout
 * is failed over: its replica with the highest replication offset (asked with
 * ROLE) is promoted (PROMOTE: the slots, a new config epoch, the old primary as
 * its replica) and the old primary is flagged fail until it answers again.
 * The old primary's host stopped taking writes before that: it lost touch with
 * the leader at least a quarter timeout earlier (its lease). */

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct probe *
probe_of(const char *id, int64_t now)
{
    for (size_t i = 0; i < mon.n; i++) {
        if (memcmp(mon.p[i].id, id, ID_LEN) == 0) {
            return &mon.p[i];
        }
    }
    if (mon.n == mon.cap) {
        mon.cap = mon.cap ? mon.cap * 2 : 16;
        mon.p = rv_realloc(mon.p, mon.cap * sizeof(*mon.p));
    }
    struct probe *p = &mon.p[mon.n++];
    memcpy(p->id, id, ID_LEN + 1);
    p->last_ok_ms = now; /* (first seen: as if it just answered) */
    p->c.fd = -1;
    p->c.tls = NULL;
    return p;
}

static void
probe_close(struct probe *p)
{
    tpi_close(&p->c);
}

/* One inline command on the probe's connection (opened, or opened again, as
 * needed) and the first line of its reply; false on any failure (the
 * connection is then closed, and the next call connects again). */
static bool
probe_call(struct probe *p, const struct topo_node *x, const char *cmd, char *out, size_t n,
           int timeout_ms)
{
    if (p->c.fd >= 0 && (strcmp(p->ip, x->ip) != 0 || p->port != x->port)) {
        probe_close(p); /* (the node moved) */
    }
    if (p->c.fd < 0) {
        char why[160];
        if (tpi_connect(&p->c, x->ip, x->port, timeout_ms, why, sizeof(why)) != 0) {
            if (strstr(why, "TLS handshake") != NULL) {
                static int64_t tls_warned;
                if (mono_ms() - tls_warned > 10000) {
                    tls_warned = mono_ms();
                    log_warn("cluster: %s:%u: %s", x->ip, x->port, why);
                }
            }
            return false;
        }
        if (tpi_auth(&p->c, why, sizeof(why)) != 0) {
            static int64_t warned;
            if (mono_ms() - warned > 10000) { /* (once in 10 s, not every tick) */
                warned = mono_ms();
                log_warn("cluster: %s:%u refused masterauth: %s", x->ip, x->port, why);
            }
            probe_close(p);
            return false;
        }
        snprintf(p->ip, sizeof(p->ip), "%s", x->ip);
        p->port = x->port;
        p->created_ms = (int64_t)clock_unix_ms();
    }
    char req[128];
    int len = snprintf(req, sizeof(req), "%s\r\n", cmd);
    if (!tpi_send(&p->c, req, (size_t)len)) {
        probe_close(p);
        return false;
    }
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = tpi_recv(&p->c, out + got, n - 1 - got);
        if (r <= 0) {
            probe_close(p);
            return false;
        }
        got += (size_t)r;
        out[got] = '\0';
        if (memchr(out, '\n', got) != NULL) {
            break;
        }
    }
    if (got + 1 >= n || out[got - 1] != '\n') {
        probe_close(p); /* (a reply longer than a line: the stream is out of step) */
        return false;
    }
    out[strcspn(out, "\r\n")] = '\0';
    return true;
}

/* What another host's RVCLUSTER STATUS says of its topology log. */
struct peer_status {
    int leads;
    uint64_t leader_id, term, applied;
};

static bool
status_of(struct probe *p, const struct topo_node *x, int timeout_ms, struct peer_status *st)
{
    char line[128];
    return probe_call(p, x, "RVCLUSTER STATUS", line, sizeof(line), timeout_ms) &&
           sscanf(line, "+%d %" SCNx64 " %" SCNu64 " %" SCNu64, &st->leads, &st->leader_id,
                  &st->term, &st->applied) == 4;
}

/* A command, then QUIT: the whole reply up to the close, in out. */
static int
resp_call_all(const char *ip, int port, const char *cmd, char *out, size_t n, int timeout_ms)
{
    struct buf req;
    buf_init(&req);
    buf_appendf(&req, "%s\r\nQUIT\r\n", cmd);
    int rc = resp_call_ex(ip, port, &req, out, n, timeout_ms, true);
    buf_deinit(&req);
    return rc;
}

/* A replica's replication offset (the last field of its ROLE reply:
 * slave, ip, port, state, offset); -1 when it did not answer as a replica. */
static long long
replica_offset_full(const struct topo_node *x, int timeout_ms)
{
    char out[1024];
    if (resp_call_all(x->ip, x->port, "ROLE", out, sizeof(out), timeout_ms) != 0 ||
        strncmp(out, "*5\r\n$5\r\nslave\r\n", 15) != 0) {
        return -1;
    }
    char *end = strstr(out, "+OK"), *last = NULL;
    for (char *q = strstr(out, "\r\n:"); q != NULL && (end == NULL || q < end);
         q = strstr(q + 3, "\r\n:")) {
        last = q;
    }
    return last ? strtoll(last + 3, NULL, 10) : -1;
}

/* Synchronous replication (min-sync-replicas n, docs/cluster.md): a write was
 * acknowledged once n of the primary's nr replicas had it, so the replica
 * with the highest offset among those that answered has every acknowledged
 * write only when at least nr - n + 1 answered (they meet every set of n).
 * n is this leader's own setting (set it the same on every host). */
static bool
sync_quorum_answered(const struct topo_node *x, size_t nr, size_t answered)
{
    int64_t n = atomic_load(&tp.node->cfg)->repl.min_sync_replicas;
    if (n <= 0 || (int64_t)answered >= (int64_t)nr - n + 1) {
        return true;
    }
    log_warn("cluster: primary %.8s (%s:%u) is unreachable but only %zu of its %zu replicas "
             "answered: with min-sync-replicas %" PRId64 " promoting needs %" PRId64
             " (one of them may lack acknowledged writes); retrying",
             x->id, x->ip, x->port, answered, nr, n, (int64_t)nr - n + 1);
    return false;
}

/* false: not decided yet (ask again at the next tick). */
static bool
fail_over(const struct topo *t, unsigned idx, int timeout_ms)
{
    static uint16_t reps[TOPO_MAX_NODES];
    size_t nr = topo_replicas(t, idx, reps, TOPO_MAX_NODES), answered = 0;
    long long best = -1;
    int pick = -1;
    for (size_t i = 0; i < nr; i++) {
        const struct topo_node *r = &t->nodes[reps[i]];
        if (r->flags & (TOPO_F_FAIL | TOPO_F_NOFAILOVER)) {
            continue;
        }
        long long off = replica_offset_full(r, timeout_ms);
        answered += off >= 0;
        if (off > best) {
            best = off;
            pick = reps[i];
        }
    }
    const struct topo_node *x = &t->nodes[idx];
    if (pick >= 0 && !sync_quorum_answered(x, nr, answered)) {
        return false;
    }
    if (pick < 0) {
        log_warn("cluster: primary %.8s (%s:%u) is unreachable and none of its replicas answers "
                 "or may take over (cluster-replica-no-failover): its slots stay down",
                 x->id, x->ip, x->port);
        if (!(x->flags & TOPO_F_FAIL)) {
            struct buf b;
            buf_init(&b);
            topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags | TOPO_F_FAIL));
            tpi_propose_bg(&b); /* (shown failed, as Redis does, until it answers again) */
            buf_deinit(&b);
        }
        return true;
    }
    log_warn("cluster: primary %.8s (%s:%u) answered nothing for cluster-node-timeout: promoting "
             "its replica %.8s (%s:%u, replication offset %lld)",
             x->id, x->ip, x->port, t->nodes[pick].id, t->nodes[pick].ip, t->nodes[pick].port,
             best);
    struct buf b;
    buf_init(&b);
    topo_enc_promote(&b, t->nodes[pick].id);
    tpi_propose_bg(&b);
    buf_reset(&b);
    topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags | TOPO_F_FAIL));
    tpi_propose_bg(&b);
    buf_deinit(&b);
    return true;
}

/* The first node of host id in t, or NULL. */
static const struct topo_node *
node_of_host(const struct topo *t, uint64_t id)
{
    for (unsigned i = 0; t != NULL && i < t->nnodes; i++) {
        if (t->nodes[i].host_id == id && !(t->nodes[i].flags & TOPO_F_LONE)) {
            return &t->nodes[i];
        }
    }
    return NULL;
}

/* The write lease: extended only while this host is in touch with the quorum
 * and up to date with it. The leader: a majority of voters (itself included)
 * say it leads them, in its term. A follower: the leader's host says it leads,
 * in this term, and has applied nothing this host has not. The lease then
 * covers shards that adopted the topology published by now. */
/* A follower behind the leader by entries in flight (a burst of changes, such
 * as create's) waits, a bounded while, until it applied what the leader had:
 * the lease then covers the topology published by then. */
static bool
caught_up(uint64_t applied, int wait_ms, uint64_t *version)
{
    for (int waited = 0; waited <= wait_ms; waited += 5) {
        struct topology_status st;
        topology_status(&st);
        if (st.applied_index >= applied) {
            *version = atomic_load(&tp.node->topo_version);
            return true;
        }
        tpi_sleep_ms(5);
    }
    return false;
}

static bool
renew_lease(const struct ctl_info *ci, int64_t timeout, int ping_ms)
{
    int64_t start = (int64_t)clock_unix_ms();
    uint64_t version = atomic_load(&tp.node->topo_version);
    struct topo *t = node_topo_get(tp.node);
    struct peer_status st;
    bool ok = false;
    if (ci->state == CTL_LEADER) {
        unsigned voters = 0, with_me = 0;
        for (unsigned i = 0; i < ci->n_servers && i < CTL_INFO_SERVERS; i++) {
            if (ci->servers[i].role != CTL_VOTER) {
                continue;
            }
            voters++;
            const struct topo_node *x = node_of_host(t, ci->servers[i].id);
            with_me += ci->servers[i].id == tp.host_id ||
                       (x != NULL && status_of(probe_of(x->id, mono_ms()), x, ping_ms, &st) &&
                        st.leader_id == tp.host_id && st.term == ci->term);
        }
        ok = with_me * 2 > voters;
    } else if (ci->state == CTL_FOLLOWER && ci->leader_id != 0) {
        const struct topo_node *x = node_of_host(t, ci->leader_id);
        ok = x != NULL && status_of(probe_of(x->id, mono_ms()), x, ping_ms, &st) && st.leads == 1 &&
             st.term == ci->term &&
             (st.applied <= ci->applied_index || caught_up(st.applied, ping_ms, &version));
    }
    topo_put(t);
    if (ok) {
        atomic_store(&tp.node->cluster_lease_topo, version);
        atomic_store(&tp.node->cluster_lease_ms, start + timeout / 2);
    }
    return ok;
}

/* ---------------------------------------------------------------- membership */

static void
member_done(void *arg, const struct ctl_result *res)
{
    const char *what = arg;
    if (res->err == CTL_OK) {
        log_notice("cluster: topology log membership: %s done", what);
    } else {
        log_warn("cluster: topology log membership: %s: %s %s", what, ctl_strerror(res->err),
                 res->msg ? res->msg : "");
    }
}

/* A host that left the cluster: none of its nodes is in the topology any more
 * (all forgotten), or those left are all lone (CLUSTER RESET, del-node) and
 * the host answers no PING: a host whose nodes were reset and that was then
 * stopped. (One that still runs keeps its seat: docs/cluster.md.) */
static bool
host_left(const struct topo *t, uint64_t id, int ping_ms)
{
    const struct topo_node *lone = NULL;
    for (unsigned i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].host_id == id) {
            if (!(t->nodes[i].flags & TOPO_F_LONE)) {
                return false;
            }
            lone = lone ? lone : &t->nodes[i];
        }
    }
    char line[64];
    return lone == NULL ||
           !probe_call(probe_of(lone->id, mono_ms()), lone, "PING", line, sizeof(line), ping_ms);
}

/* The host's lone nodes go with it. */
static void
forget_host_nodes(const struct topo *t, uint64_t id)
{
    for (unsigned i = 0; i < t->nnodes; i++) {
        if (t->nodes[i].host_id == id) {
            struct buf b;
            buf_init(&b);
            topo_enc_node_forget(&b, t->nodes[i].id);
            tpi_propose_bg(&b);
            buf_deinit(&b);
        }
    }
}

/* The leader, each tick: a host that left (host_left) for a whole node
 * timeout leaves the log's servers; then, while there are fewer voters than
 * wanted (3, 5 from 5 servers on), a learner whose nodes answer becomes a
 * voter. One change per tick (raft takes one at a time). The wait lets
 * CLUSTER RESET, which forgets a node and adds it back, finish first. */
static void
membership_tick(const struct ctl_info *ci, const struct topo *t, int64_t timeout, int ping_ms,
                int64_t now)
{
    static struct {
        uint64_t id;
        int64_t since;
    } empty[CTL_INFO_SERVERS];
    unsigned voters = 0, n = ci->n_servers < CTL_INFO_SERVERS ? ci->n_servers : CTL_INFO_SERVERS;
    for (unsigned i = 0; i < n; i++) {
        voters += ci->servers[i].role == CTL_VOTER;
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t id = ci->servers[i].id;
        bool left = id != tp.host_id && host_left(t, id, ping_ms);
        unsigned k = 0;
        while (k < CTL_INFO_SERVERS && empty[k].id != id && empty[k].id != 0) {
            k++;
        }
        if (!left || k == CTL_INFO_SERVERS) {
            if (k < CTL_INFO_SERVERS && empty[k].id == id) {
                empty[k].since = now; /* (it has nodes again) */
            }
            continue;
        }
        if (empty[k].id != id) {
            empty[k].id = id;
            empty[k].since = now;
        }
        if (now - empty[k].since > timeout) {
            log_warn("cluster: host %016" PRIx64 " left the cluster (no node of it in the "
                     "topology, or only reset ones on a host that does not answer): removing it "
                     "from the topology log's servers",
                     id);
            empty[k].id = 0;
            if (ctl_remove(tp.ctl, id, member_done, "removing a host") == RV_OK) {
                forget_host_nodes(t, id);
            }
            return;
        }
    }
    unsigned want = n >= 5 ? 5 : 3;
    for (unsigned i = 0; i < n && voters < want; i++) {
        const struct topo_node *x = node_of_host(t, ci->servers[i].id);
        if (ci->servers[i].role == CTL_LEARNER && x != NULL &&
            now - probe_of(x->id, now)->last_ok_ms < timeout / 2) {
            log_notice("cluster: the topology log has %u voter(s): host %016" PRIx64 " becomes one",
                       voters, ci->servers[i].id);
            ctl_assign(tp.ctl, ci->servers[i].id, CTL_VOTER, member_done, "promoting a learner");
            return;
        }
    }
}

/* cluster-replica-no-failover is a host's setting; the leader that fails
 * primaries over reads it from the topology (the nofailover flag, as Redis
 * shows it), so each host keeps its nodes' flag equal to its config. One
 * proposal per tick, only when it differs. */
static void
sync_nofailover(void)
{
    struct topo *t = node_topo_get(tp.node);
    bool want = atomic_load(&tp.node->cfg)->cluster.replica_no_failover;
    for (unsigned i = 0; t != NULL && i < t->nnodes; i++) {
        const struct topo_node *x = &t->nodes[i];
        if (x->host_id != tp.host_id || (x->flags & TOPO_F_LONE) ||
            ((x->flags & TOPO_F_NOFAILOVER) != 0) == want) {
            continue;
        }
        struct buf b;
        buf_init(&b);
        topo_enc_node_set_flags(&b, x->id,
                                (uint16_t)(want ? x->flags | TOPO_F_NOFAILOVER
                                                : x->flags & ~TOPO_F_NOFAILOVER));
        tpi_propose_bg(&b);
        buf_deinit(&b);
        break;
    }
    topo_put(t);
}

/* The monitor's open connections, copied for CLUSTER LINKS (the probes
 * belong to the monitor thread). */
static struct {
    pthread_mutex_t mu;
    struct topology_link *v;
    size_t n, cap;
} links = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
publish_links(void)
{
    pthread_mutex_lock(&links.mu);
    links.n = 0;
    for (size_t i = 0; i < mon.n; i++) {
        if (mon.p[i].c.fd < 0) {
            continue;
        }
        if (links.n == links.cap) {
            links.cap = links.cap ? links.cap * 2 : 16;
            links.v = rv_realloc(links.v, links.cap * sizeof(*links.v));
        }
        struct topology_link *l = &links.v[links.n++];
        memcpy(l->node_id, mon.p[i].id, ID_LEN + 1);
        l->create_ms = mon.p[i].created_ms;
    }
    pthread_mutex_unlock(&links.mu);
}

size_t
topology_links(struct topology_link *out, size_t cap)
{
    pthread_mutex_lock(&links.mu);
    size_t n = links.n;
    memcpy(out, links.v, (n < cap ? n : cap) * sizeof(*out));
    pthread_mutex_unlock(&links.mu);
    return n;
}

static void
monitor_tick(int64_t timeout)
{
    struct ctl_info ci = { 0 };
    bool have = false;
    if (pthread_rwlock_tryrdlock(&tp.lock) == 0) {
        if (tp.ctl != NULL) {
            ctl_info(tp.ctl, &ci);
            have = true;
        }
        pthread_rwlock_unlock(&tp.lock);
    }
    struct topo *cur = node_topo_get(tp.node);
    for (size_t i = 0; i < mon.n; i++) { /* (connections to nodes forgotten since) */
        if (mon.p[i].c.fd >= 0 && (cur == NULL || topo_find(cur, mon.p[i].id, ID_LEN) < 0)) {
            probe_close(&mon.p[i]);
        }
    }
    topo_put(cur);
    publish_links();
    int ping_ms = (int)(timeout / 4 > 1000 ? 1000 : timeout / 4 < 50 ? 50 : timeout / 4);
    bool leader = have && ci.state == CTL_LEADER;
    static bool held = true;
    bool renewed = have && renew_lease(&ci, timeout, ping_ms);
    bool now_held = renewed || (int64_t)clock_unix_ms() < atomic_load(&tp.node->cluster_lease_ms);
    if (now_held != held) { /* (one renewal missed, say while entries commit, ends nothing) */
        held = now_held;
        log_warn("cluster: %s", held ? "in touch with the topology log's quorum again: this "
                                       "host's primaries take writes"
                                     : "the write lease ended (out of touch with the topology "
                                       "log's quorum): this host's primaries refuse writes "
                                       "(CLUSTERDOWN)");
    }
    if (have) {
        tpi_handover_retry();
    }
    if (renewed) {
        sync_nofailover();
    }
    int64_t now = mono_ms();
    if (!leader) {
        mon.was_leader = false;
        return;
    }
    if (!mon.was_leader) { /* a new leader gives everybody a full timeout */
        for (size_t i = 0; i < mon.n; i++) {
            mon.p[i].last_ok_ms = now;
        }
        mon.was_leader = true;
    }
    struct topo *t = node_topo_get(tp.node);
    if (t == NULL) {
        return;
    }
    static uint16_t reps[TOPO_MAX_NODES];
    for (unsigned i = 0; i < t->nnodes && !atomic_load(&mon.stop); i++) {
        const struct topo_node *x = &t->nodes[i];
        if ((x->host_id == tp.host_id && !(x->flags & TOPO_F_FAIL)) || (x->flags & TOPO_F_LONE)) {
            continue; /* (this host's nodes are up while it runs: probed only to clear a fail flag) */
        }
        struct probe *p = probe_of(x->id, now);
        char line[64];
        bool ok = probe_call(p, x, "PING", line, sizeof(line), ping_ms);
        if (ok) {
            p->last_ok_ms = mono_ms();
            if (x->flags & TOPO_F_FAIL) { /* back */
                struct buf b;
                buf_init(&b);
                topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags & ~TOPO_F_FAIL));
                tpi_propose_bg(&b);
                buf_deinit(&b);
                log_notice("cluster: node %.8s (%s:%u) answers again", x->id, x->ip, x->port);
            }
            continue;
        }
        bool serving = x->role == TOPO_PRIMARY && topo_node_slot_count(t, i) > 0 &&
                       topo_replicas(t, i, reps, TOPO_MAX_NODES) > 0;
        /* (a failed primary that still serves slots is retried each timeout: its
         * replicas may answer again) */
        if (mono_ms() - p->last_ok_ms > timeout && (serving || !(x->flags & TOPO_F_FAIL))) {
            if (serving) {
                if (!fail_over(t, i, ping_ms)) {
                    continue; /* (not decided: asked again at the next tick) */
                }
            } else { /* (a replica, or a primary without slots: just shown as failed) */
                struct buf b;
                buf_init(&b);
                topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags | TOPO_F_FAIL));
                tpi_propose_bg(&b);
                buf_deinit(&b);
                log_warn("cluster: node %.8s (%s:%u) answered nothing for cluster-node-timeout",
                         x->id, x->ip, x->port);
            }
            p->last_ok_ms = mono_ms(); /* (a full timeout before trying this node again) */
        }
    }
    if (pthread_rwlock_tryrdlock(&tp.lock) == 0) {
        if (tp.ctl != NULL) {
            membership_tick(&ci, t, timeout, ping_ms, mono_ms());
        }
        pthread_rwlock_unlock(&tp.lock);
    }
    topo_put(t);
}

static void *
monitor_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&mon.stop)) {
        int64_t timeout = atomic_load(&tp.node->cfg)->cluster.node_timeout;
        monitor_tick(timeout);
        tpi_sleep_ms((long)(timeout / 4 > 1000 ? 1000 : timeout / 4 < 50 ? 50 : timeout / 4));
    }
    return NULL;
}

int
monitor_start(int64_t timeout, char *err, size_t errsz)
{
    monitor_tick(timeout); /* (the lease before the first client) */
    if (pthread_create(&mon.th, NULL, monitor_main, NULL) != 0) {
        snprintf(err, errsz, "cannot start the cluster monitor thread");
        return -1;
    }
    mon.running = true;
    return 0;
}

void
monitor_stop(void)
{
    if (!mon.running) {
        return;
    }
    atomic_store(&mon.stop, true);
    pthread_join(mon.th, NULL);
    mon.running = false;
    for (size_t i = 0; i < mon.n; i++) {
        probe_close(&mon.p[i]);
    }
    rv_free(mon.p);
    mon.p = NULL;
    mon.n = mon.cap = 0;
    publish_links();
    atomic_store(&mon.stop, false);
}
