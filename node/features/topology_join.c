/* node/features/topology_join.c: hosts joining the topology log (CLUSTER MEET
 * to another host's node, RVCLUSTER JOIN on the receiving side and the
 * admission of the joining host to the log's servers), and proposals sent to
 * the leader's host (RVCLUSTER PROPOSE), with the blocking RESP exchanges they
 * make on threads of their own. */
#include "node/features/topology_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "base/rv_err.h"
#include "base/tls.h"
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

/* ---------------------------------------------------------------- joining hosts */

/* Control thread (the leader): make a host whose nodes were just committed a
 * server of the log: a learner at once (it receives the log), promoted to voter
 * while there are fewer than 3 voters (5 from 5 hosts on) once it caught up.
 * The joining host restarts its control plane meanwhile, so a step that times
 * out is tried again, a bounded number of times. */
struct admission {
    uint64_t id;
    char addr[CTL_ADDR_MAX];
    int tries;
    bool added;
};

static void admit_step(struct admission *ad);
static void admit_later(struct admission *ad);

static void
admit_done(void *arg, const struct ctl_result *res)
{
    struct admission *ad = arg;
    if (res->err == CTL_OK && !ad->added) {
        ad->added = true;
        admit_step(ad); /* now maybe a voter */
        return;
    }
    if (res->err == CTL_OK || res->err == CTL_ENOTLEADER || res->err == CTL_ESHUTDOWN ||
        ++ad->tries > 100) {
        if (res->err != CTL_OK) {
            log_warn("cluster: adding host %016" PRIx64 " (%s) to the topology log: %s %s", ad->id,
                     ad->addr, ctl_strerror(res->err), res->msg ? res->msg : "");
        } else {
            log_notice("cluster: host %016" PRIx64 " (%s) is a server of the topology log", ad->id,
                       ad->addr);
        }
        rv_free(ad);
        return;
    }
    admit_later(ad); /* (another host's admission in progress, or this one not up yet) */
}

static void *
admit_sleeper(void *arg)
{
    tpi_sleep_ms(200);
    bool locked = pthread_rwlock_tryrdlock(&tp.lock) == 0;
    if (!locked || tp.ctl == NULL) {
        if (locked) {
            pthread_rwlock_unlock(&tp.lock);
        }
        log_warn("cluster: a host's admission to the topology log stopped (the control plane "
                 "is being replaced)");
        rv_free(arg);
        return NULL;
    }
    admit_step(arg); /* (ctl_info and ctl_add may be called from any thread) */
    pthread_rwlock_unlock(&tp.lock);
    return NULL;
}

/* Try again in 200 ms, from a thread of its own (the control thread has no
 * timer of ours, and must not sleep). */
static void
admit_later(struct admission *ad)
{
    if (tpi_spawn(admit_sleeper, ad) != 0) {
        log_warn("cluster: cannot retry adding host %016" PRIx64, ad->id);
        rv_free(ad);
    }
}

static void
admit_step(struct admission *ad)
{
    struct ctl_info ci;
    ctl_info(tp.ctl, &ci);
    unsigned voters = 0, servers = ci.n_servers;
    bool known = false;
    for (unsigned i = 0; i < ci.n_servers && i < CTL_INFO_SERVERS; i++) {
        voters += ci.servers[i].role == CTL_VOTER;
        known |= ci.servers[i].id == ad->id;
    }
    int want = voters < 3 || (servers >= 5 && voters < 5) ? CTL_VOTER : CTL_LEARNER;
    int rc;
    if (!ad->added && !known) {
        rc = ctl_add(tp.ctl, ad->id, ad->addr, CTL_LEARNER, admit_done, ad);
    } else {
        ad->added = true;
        if (want != CTL_VOTER) {
            struct ctl_result ok = { .err = CTL_OK, .msg = "" };
            admit_done(ad, &ok);
            return;
        }
        rc = ctl_assign(tp.ctl, ad->id, CTL_VOTER, admit_done, ad);
    }
    if (rc != RV_OK) {
        log_warn("cluster: cannot add host %016" PRIx64 ": %s", ad->id, rv_strerror(rc));
        rv_free(ad);
    }
}

void
admit_host(uint64_t id, const char *addr)
{
    struct admission *ad = rv_calloc(1, sizeof(*ad));
    ad->id = id;
    snprintf(ad->addr, sizeof(ad->addr), "%s", addr);
    admit_step(ad);
}

/* ---- the joining side: CLUSTER MEET to a node of another host ---- */

struct meet_job {
    struct shard *shard;
    uint64_t conn_id;
    char ip[64];
    int port;
    struct buf req; /* the RVCLUSTER JOIN command, as RESP */
};

static void
meet_answer(struct meet_job *j, const char *err)
{
    struct answer *a = rv_calloc(1, sizeof(*a));
    a->m.run = answer_run;
    a->conn_id = j->conn_id;
    a->how = TOPOLOGY_REPLY_OK;
    if (err != NULL) {
        a->failed = true;
        snprintf(a->text, sizeof(a->text), "%.300s", err);
    }
    shard_post(j->shard, &a->m);
}

/* One blocking request to ip:port; the first line of the reply in out (all:
 * everything until the peer closes, for a command followed by QUIT). */
int
tpi_connect(struct tpi_conn *c, const char *ip, int port, int timeout_ms, char *out, size_t n)
{
    c->fd = -1;
    c->tls = NULL;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        snprintf(out, n, "ERR Invalid node address specified: %s:%d", ip, port);
        return -1;
    }
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    if (c->fd < 0 || setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(out, n, "ERR cannot reach %s:%d: %s", ip, port, strerror(errno));
        tpi_close(c);
        return -1;
    }
    const struct cfg *cfg = atomic_load(&tp.node->cfg);
    if (cfg->tls.cluster) {
        struct tls_ctx *ctx = node_tls_bus_get(false);
        c->tls = ctx != NULL ? tls_new(ctx, c->fd, false) : NULL;
        tls_ctx_unref(ctx);
        int rc = c->tls != NULL ? tls_handshake(c->tls) : TLS_ERROR;
        if (rc != 1) {
            snprintf(out, n, "ERR TLS handshake with %s:%d: %s", ip, port,
                     c->tls == NULL    ? "no TLS context"
                     : rc == TLS_ERROR ? tls_strerror(c->tls)
                                       : "timed out");
            tpi_close(c);
            return -1;
        }
    }
    return 0;
}

bool
tpi_send(struct tpi_conn *c, const void *p, size_t n)
{
    if (c->tls != NULL) {
        return tls_write(c->tls, p, n) == (ssize_t)n; /* (blocking: all or an error) */
    }
    return send(c->fd, p, n, MSG_NOSIGNAL) == (ssize_t)n;
}

ssize_t
tpi_recv(struct tpi_conn *c, void *p, size_t n)
{
    if (c->tls != NULL) {
        ssize_t r = tls_read(c->tls, p, n);
        return r >= 0 ? r : -1; /* (TLS_WANT_*: the timeout passed) */
    }
    return recv(c->fd, p, n, 0);
}

void
tpi_close(struct tpi_conn *c)
{
    tls_free(c->tls);
    c->tls = NULL;
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

int
tpi_auth(struct tpi_conn *c, char *out, size_t n)
{
    const struct cfg *cfg = atomic_load(&tp.node->cfg);
    if (cfg == NULL || cfg->repl.masterauth[0] == '\0') {
        return 0;
    }
    struct buf b;
    buf_init(&b);
    bool user = cfg->repl.masteruser[0] != '\0';
    resp_w_array(&b, user ? 3 : 2);
    resp_w_bulk_cstr(&b, "AUTH");
    if (user) {
        resp_w_bulk_cstr(&b, cfg->repl.masteruser);
    }
    resp_w_bulk_cstr(&b, cfg->repl.masterauth);
    bool sent = tpi_send(c, b.data, b.len);
    buf_deinit(&b);
    char line[256];
    size_t got = 0;
    while (sent &&
           got + 1 < sizeof(line)) { /* one line, byte by byte: not a byte of what follows */
        ssize_t r = tpi_recv(c, line + got, 1);
        if (r <= 0) {
            break;
        }
        if (line[got++] == '\n') {
            break;
        }
    }
    line[got] = '\0';
    if (strncmp(line, "+OK", 3) == 0) {
        return 0;
    }
    line[strcspn(line, "\r\n")] = '\0';
    snprintf(out, n, "%s", line[0] == '-' ? line + 1 : "ERR AUTH with masterauth got no answer");
    return -1;
}

int
resp_call_ex(const char *ip, int port, const struct buf *req, char *out, size_t n, int timeout_ms,
             bool all)
{
    struct tpi_conn c;
    if (tpi_connect(&c, ip, port, timeout_ms, out, n) != 0) {
        return -1;
    }
    if (tpi_auth(&c, out, n) != 0) {
        tpi_close(&c);
        return -1;
    }
    if (!tpi_send(&c, req->data, req->len)) {
        snprintf(out, n, "ERR cannot reach %s:%d: %s", ip, port, strerror(errno));
        tpi_close(&c);
        return -1;
    }
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = tpi_recv(&c, out + got, n - 1 - got);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
        out[got] = '\0';
        if (!all && memchr(out, '\n', got) != NULL) {
            break;
        }
    }
    tpi_close(&c);
    out[got] = '\0';
    if (!all) {
        out[strcspn(out, "\r\n")] = '\0';
    }
    if (got == 0) {
        snprintf(out, n, "ERR no answer from %s:%d", ip, port);
        return -1;
    }
    return 0;
}

int
resp_call(const char *ip, int port, const struct buf *req, char *out, size_t n, int timeout_ms)
{
    return resp_call_ex(ip, port, req, out, n, timeout_ms, false);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Start this host's control plane again (the lock held, none running): on
 * its own log (join == false: the join was refused, the log was kept), or on a
 * fresh one that waits for the other host's leader to send it the log. */
static int
restart_ctl(bool join, char *err, size_t errsz)
{
    if (join) {
        char raft[4400];
        snprintf(raft, sizeof(raft), "%s/raft", tp.dir);
        nftw(raft, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    topo_put(tp.cur);
    tp.cur =
        topo_create(); /* (rebuilt from the log; the shards keep the last snapshot meanwhile) */
    struct ctl_opts o = tp.opts;
    if (join) {
        o.bootstrap = NULL;
        o.n_bootstrap = 0;
    }
    return ctl_start(&tp.ctl, &o, err, errsz) == RV_OK ? 0 : -1;
}

/* Wait (20 s at most) until the leader's log reached this host with its nodes. */
static int
wait_joined(char *err, size_t errsz)
{
    for (int waited = 0; waited < 20000; waited += 50) {
        /* every node of this host (the join's entries commit one after
         * another: redis-cli MEETs the other shards right after this one) */
        struct topo *t = node_topo_get(tp.node);
        bool in = t != NULL && t->nnodes > tp.node->nshards;
        for (unsigned i = 0; in && i < tp.node->nshards; i++) {
            int me = topo_find(t, tp.node->ids[i], ID_LEN);
            in = me >= 0 && !(t->nodes[me].flags & TOPO_F_LONE);
        }
        topo_put(t);
        if (in) {
            return 0;
        }
        tpi_sleep_ms(50);
    }
    snprintf(err, errsz, "ERR joined, but the other host's log did not reach this host in 20 s");
    return -1;
}

/* CLUSTER MEET to another host. This host's own log is stopped first: once
 * the other host commits the join, its leader contacts this host's bus at
 * once, and the single-host server must not be there to answer as a leader of
 * its own (libraft 0.15 crashes in raft_close on a leader that took another
 * leader's message). Refused: the own log starts again, unchanged. Accepted:
 * the own log is dropped and this host follows the other host's. Shards'
 * topology changes meanwhile get TRYAGAIN; the topology they serve stays. */
static void *
meet_worker(void *arg)
{
    struct meet_job *j = arg;
    char reply[512], err[512];
    pthread_rwlock_wrlock(&tp.lock);
    ctl_stop(tp.ctl);
    tp.ctl = NULL;
    int rc = resp_call(j->ip, j->port, &j->req, reply, sizeof(reply), 20000);
    for (int hop = 0; rc == 0 && hop < 3 && strncmp(reply, "-LEADER ", 8) == 0; hop++) {
        char ip[64];
        int port;
        if (sscanf(reply + 8, "%63[^:]:%d", ip, &port) != 2) {
            break;
        }
        rc = resp_call(ip, port, &j->req, reply, sizeof(reply), 20000); /* the leader's host */
    }
    bool joined = rc == 0 && reply[0] == '+';
    int started = restart_ctl(joined, err, sizeof(err));
    pthread_rwlock_unlock(&tp.lock);
    if (started != 0) {
        log_warn("cluster: the control plane did not start again: %s", err);
        meet_answer(j, "CLUSTERDOWN the control plane did not start again (see the log)");
    } else if (rc != 0) {
        meet_answer(j, reply);
    } else if (!joined) {
        snprintf(err, sizeof(err), "%s", reply[0] == '-' ? reply + 1 : reply);
        meet_answer(j, err);
    } else if (wait_joined(err, sizeof(err)) != 0) {
        log_warn("cluster: joining %s:%d: %s", j->ip, j->port, err);
        meet_answer(j, err);
    } else {
        log_notice("cluster: this host joined the cluster of %s:%d", j->ip, j->port);
        meet_answer(j, NULL);
    }
    buf_deinit(&j->req);
    rv_free(j);
    atomic_store(&tp.joining, false);
    return NULL;
}

void
topology_meet_host(struct conn *c, const char *ip, int port, const struct buf *join_cmd)
{
    struct ctl_info ci;
    if (!tpi_lock_for(c)) {
        return;
    }
    ctl_info(tp.ctl, &ci);
    pthread_rwlock_unlock(&tp.lock);
    if (ci.n_servers > 1) {
        reply_errf(c, "ERR this host already shares its topology log with other hosts: add new "
                      "hosts by sending CLUSTER MEET to them (docs/cluster.md)");
        return;
    }
    if (atomic_exchange(&tp.joining, true)) {
        reply_errf(c, "TRYAGAIN this host is joining another host's cluster");
        return;
    }
    struct meet_job *j = rv_calloc(1, sizeof(*j));
    j->shard = c->shard;
    j->conn_id = c->id;
    snprintf(j->ip, sizeof(j->ip), "%s", ip);
    j->port = port;
    buf_init(&j->req);
    buf_append(&j->req, join_cmd->data, join_cmd->len);
    if (tpi_spawn(meet_worker, j) != 0) {
        buf_deinit(&j->req);
        rv_free(j);
        atomic_store(&tp.joining, false);
        reply_errf(c, "ERR cannot start joining: %s", strerror(errno));
    } else {
        c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
    }
}

uint64_t
topology_host_id(void)
{
    return tp.host_id;
}

const char *
topology_bus_address(void)
{
    return tp.addr;
}

/* ---- proposals made on a host that does not lead: sent to one that does ---- */

struct fwd_job {
    struct shard *shard;
    uint64_t conn_id;
    enum topology_reply how;
    char node_id[ID_LEN + 1];
    char ip[TOPO_IP_MAX + 1];
    int port;
    struct buf req;
    void (*run)(struct shard *s, struct shard_msg *m); /* (request.run) */
};

/* Wait (at most 5 s) until this host applied the log entry at index. */
static bool
applied_wait(uint64_t index)
{
    for (int waited = 0;; waited += 10) {
        struct topology_status st;
        topology_status(&st);
        if (st.applied_index >= index) {
            return true;
        }
        if (waited >= 5000) {
            return false;
        }
        tpi_sleep_ms(10);
    }
}

static void *
fwd_worker(void *arg)
{
    struct fwd_job *j = arg;
    struct answer *a = rv_calloc(1, sizeof(*a));
    a->m.run = j->run != NULL ? j->run : answer_run;
    a->conn_id = j->conn_id;
    a->raw = true;
    a->how = j->how;
    memcpy(a->node_id, j->node_id, sizeof(a->node_id));
    char line[sizeof(a->text)];
    uint64_t index;
    int used = 0;
    if (resp_call(j->ip, j->port, &j->req, line, sizeof(line), 10000) != 0) {
        snprintf(a->text, sizeof(a->text),
                 "-CLUSTERDOWN the topology log's leader is not reachable "
                 "(%.200s)",
                 line);
    } else if (sscanf(line, "+IDX %" SCNu64 " %n", &index, &used) == 1 && used > 0) {
        /* committed there: answer once this host applied it too (read your writes here) */
        applied_wait(index);
        snprintf(a->text, sizeof(a->text), "+%.200s", line + used);
    } else if (sscanf(line, "-IDX %" SCNu64 " %n", &index, &used) == 1 && used > 0) {
        /* committed there and refused by the state machine: the same wait, so
         * that this host's topology is what the refusal saw (a job's outcome
         * is refused only once it is; else unknown) */
        a->refused = applied_wait(index);
        snprintf(a->text, sizeof(a->text), "-%.200s", line + used);
    } else {
        snprintf(a->text, sizeof(a->text), "%s", line);
    }
    if (j->shard == NULL) { /* a proposal with no client (tpi_propose_bg) */
        if (a->text[0] != '+') {
            log_warn("cluster: a topology change sent to the leader's host failed: %s", a->text);
        }
        rv_free(a);
    } else {
        shard_post(j->shard, &a->m);
    }
    buf_deinit(&j->req);
    rv_free(j);
    return NULL;
}

/* Control thread: send what rq still has to propose (from the entry that was
 * refused) to a node of the leader's host, as RVCLUSTER PROPOSE, from a thread
 * of its own; its reply line becomes the client's. false when no leader is
 * known (the caller answers). */
bool
forward(struct request *rq, uint64_t leader_id)
{
    const struct topo_node *to = NULL;
    for (unsigned i = 0; leader_id != 0 && tp.cur != NULL && i < tp.cur->nnodes && !to; i++) {
        to = tp.cur->nodes[i].host_id == leader_id ? &tp.cur->nodes[i] : NULL;
    }
    if (to == NULL) {
        return false;
    }
    struct fwd_job *j = rv_calloc(1, sizeof(*j));
    j->shard = rq->shard;
    j->conn_id = rq->conn_id;
    j->how = rq->how;
    j->run = rq->run;
    if (rq->how == TOPOLOGY_REPLY_RESET) {
        memcpy(j->node_id, rq->node_id, sizeof(j->node_id));
    }
    snprintf(j->ip, sizeof(j->ip), "%s", to->ip);
    j->port = to->port;
    buf_init(&j->req);
    size_t n = 0;
    for (size_t off = rq->cur; off + 4 <= rq->next.len; n++) {
        uint32_t len;
        memcpy(&len, rq->next.data + off, 4);
        off += 4 + len;
    }
    resp_w_array(&j->req, 4 + n);
    resp_w_bulk_cstr(&j->req, "RVCLUSTER");
    resp_w_bulk_cstr(&j->req, "PROPOSE");
    resp_w_bulk_cstr(&j->req, rq->how == TOPOLOGY_REPLY_BUMPEPOCH ? "bumpepoch" : "ok");
    resp_w_bulk_cstr(&j->req, rq->node_id[0] ? rq->node_id : "-");
    for (size_t off = rq->cur; off + 4 <= rq->next.len;) {
        uint32_t len;
        memcpy(&len, rq->next.data + off, 4);
        resp_w_bulk(&j->req, rq->next.data + off + 4, len);
        off += 4 + len;
    }
    int rc = tpi_spawn(fwd_worker, j);
    if (rc != 0) {
        buf_deinit(&j->req);
        rv_free(j);
        return false;
    }
    request_free(rq);
    return true;
}

bool
topology_leader_node(const struct topo *t, char *ip, size_t ipsz, int *port)
{
    struct topology_status st;
    topology_status(&st);
    for (unsigned i = 0; st.leader_id != 0 && t != NULL && i < t->nnodes; i++) {
        if (t->nodes[i].host_id == st.leader_id) {
            snprintf(ip, ipsz, "%s", t->nodes[i].ip);
            *port = t->nodes[i].port;
            return true;
        }
    }
    return false;
}

void
topology_relay(struct conn *c, const char *ip, int port, const struct buf *req)
{
    struct fwd_job *j = rv_calloc(1, sizeof(*j));
    j->shard = c->shard;
    j->conn_id = c->id;
    snprintf(j->ip, sizeof(j->ip), "%s", ip);
    j->port = port;
    buf_init(&j->req);
    buf_append(&j->req, req->data, req->len);
    int rc = tpi_spawn(fwd_worker, j);
    if (rc != 0) {
        buf_deinit(&j->req);
        rv_free(j);
        reply_errf(c, "ERR cannot reach %s:%d now", ip, port);
        return;
    }
    c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
}
