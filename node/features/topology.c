/* node/features/topology.c: cluster mode's control plane glue (topology.h).
 *
 * Threads: topology_start/stop run on the main thread; the state machine's
 * callbacks and proposal answers on the control thread (control/ctl.h); the
 * answer reaches the waiting client as a message to its shard. */
#include "node/features/topology.h"

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
#include "replication/repl.h"
#include "proto/resp.h"

#include <errno.h>
#include <inttypes.h>
#include <dirent.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ID_LEN TOPO_ID_LEN

static struct {
    struct node *node;
    struct ctl *ctl;
    uint64_t host_id;
    char (*shard_ids)[ID_LEN + 1];
    struct topo *cur; /* control thread: the state machine's state */
    /* Shards take it shared (try-lock) around their calls into tp.ctl; joining
     * another host takes it exclusively to replace the control plane. */
    pthread_rwlock_t lock;
    struct ctl_opts opts; /* how it was started (joining restarts it without bootstrap) */
    char ip[46], addr[CTL_ADDR_MAX], bind[CTL_ADDR_MAX], dir[4200];
    atomic_bool joining;
} tp = { .lock = PTHREAD_RWLOCK_INITIALIZER };

/* The monitor thread (the write lease, and the leader's failure detector):
 * when each node of another host last answered a PING. */
struct probe {
    char id[ID_LEN + 1];
    int64_t last_ok_ms;
    int fd; /* a connection kept open (a new one per ping would leave thousands in TIME_WAIT) */
    char ip[TOPO_IP_MAX + 1];
    unsigned port;
};

static struct {
    pthread_t th;
    bool running;
    atomic_bool stop;
    struct probe *p;
    size_t n, cap;
    bool was_leader;
} mon;

static void monitor_tick(int64_t timeout);
static void probe_close(struct probe *p);
static void *monitor_main(void *arg);

/* ---------------------------------------------------------------- identity */

static void
identity_path(const struct cfg *cfg, char *out, size_t n)
{
    const char *f = cfg->cluster.config_file;
    if (f[0] == '/') {
        snprintf(out, n, "%s", f);
    } else {
        snprintf(out, n, "%s/%s", cfg->persist.dir, f);
    }
}

static bool
is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return s[n] == '\0';
}

/* Read "host <16 hex>" and "node <shard> <id> <shard id>" lines. 1 when read,
 * 0 when the file does not exist, -1 with err when it is unusable. */
static int
identity_read(const char *path, struct node *n, char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errsz, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[256];
    unsigned seen = 0, lineno = 0;
    bool host = false;
    while (fgets(line, sizeof(line), f) != NULL) {
        char a[64], b[64];
        unsigned shard;
        lineno++;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        if (sscanf(line, "host %16s", a) == 1 && is_hex(a, 16)) {
            tp.host_id = strtoull(a, NULL, 16);
            host = tp.host_id != 0;
        } else if (sscanf(line, "node %u %40s %40s", &shard, a, b) == 3 && is_hex(a, ID_LEN) &&
                   is_hex(b, ID_LEN)) {
            if (shard >= n->nshards) {
                snprintf(err, errsz,
                         "%s:%u: this host had more shards (%u) than 'shards' says (%u); cluster "
                         "mode cannot change a host's shard count",
                         path, lineno, shard + 1, n->nshards);
                fclose(f);
                return -1;
            }
            memcpy(n->ids[shard], a, ID_LEN + 1);
            memcpy(tp.shard_ids[shard], b, ID_LEN + 1);
            seen++;
        } else {
            snprintf(err, errsz, "%s:%u: not a line of a cluster identity file", path, lineno);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    if (!host || seen != n->nshards) {
        snprintf(err, errsz, "%s: %s", path,
                 !host ? "no host id"
                       : "fewer nodes than shards (cluster mode cannot change a "
                         "host's shard count)");
        return -1;
    }
    return 1;
}

static int
identity_write(const char *path, const struct node *n)
{
    struct buf b;
    buf_init(&b);
    buf_appendf(&b,
                "# Ruvio cluster identity: this host's Raft server id and its nodes (one per "
                "shard).\n# Written once; the topology is in the cluster/raft directory. "
                "docs/cluster.md\nhost %016" PRIx64 "\n",
                tp.host_id);
    for (unsigned i = 0; i < n->nshards; i++) {
        buf_appendf(&b, "node %u %s %s\n", i, n->ids[i], tp.shard_ids[i]);
    }
    int rc = fs_write_atomic(path, b.data, b.len);
    buf_deinit(&b);
    return rc;
}

static int
identity_load(struct node *n, const struct cfg *cfg, char *err, size_t errsz)
{
    char path[4200];
    identity_path(cfg, path, sizeof(path));
    tp.shard_ids = rv_calloc(n->nshards, sizeof(*tp.shard_ids));
    int rc = identity_read(path, n, err, errsz);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    do {
        tp.host_id = rand_u64();
    } while (tp.host_id == 0);
    for (unsigned i = 0; i < n->nshards; i++) {
        rand_hex(n->ids[i], ID_LEN);
        rand_hex(tp.shard_ids[i], ID_LEN);
    }
    if (fs_mkdir_p(cfg->persist.dir) != 0 || identity_write(path, n) != 0) {
        snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    log_notice("cluster: new host %016" PRIx64 " with %u node(s), identity in %s", tp.host_id,
               n->nshards, path);
    return 0;
}

/* ---------------------------------------------------------------- state machine */

static void
publish(void)
{
    node_publish_topo(tp.node, topo_get(tp.cur));
}

static int
fsm_apply(void *arg, const void *entry, size_t len, char *msg, size_t msgsz)
{
    (void)arg;
    struct topo *next;
    enum topo_res r = topo_apply(tp.cur, entry, len, &next, msg, msgsz);
    topo_put(tp.cur);
    tp.cur = next;
    if (r == TOPO_CHANGED) {
        publish();
    }
    if (r >= 0) {
        snprintf(msg, msgsz, "%s", r == TOPO_CHANGED ? "changed" : "unchanged");
        return 0;
    }
    return r;
}

static int
fsm_snapshot(void *arg, void **out, size_t *len)
{
    (void)arg;
    struct buf b;
    buf_init(&b);
    topo_encode(tp.cur, &b);
    *out = b.data; /* (allocated with rv_malloc by buf) */
    *len = b.len;
    return RV_OK;
}

static int
fsm_restore(void *arg, const void *data, size_t len)
{
    (void)arg;
    struct topo *t;
    char err[TOPO_ERR_MAX];
    int rc = topo_decode(data, len, &t, err, sizeof(err));
    if (rc != RV_OK) {
        log_warn("cluster: a topology snapshot does not decode: %s", err);
        return rc;
    }
    topo_put(tp.cur);
    tp.cur = t;
    publish();
    return RV_OK;
}

/* ---------------------------------------------------------------- proposals */

/* The answer to a waiting client, run on its shard. */
struct answer {
    struct shard_msg m;
    uint64_t conn_id;
    enum topology_reply how;
    bool failed;
    bool raw; /* text is a whole reply line from another host ("+..." or "-...") */
    uint64_t epoch;
    bool bumped;
    uint64_t index; /* the entry's log index */
    bool forwarded; /* the client is another host (RVCLUSTER PROPOSE): tell it the index */
    char text[CTL_MSG_MAX + CTL_ADDR_MAX + 64];
};

struct request {
    struct shard *shard;
    uint64_t conn_id;
    enum topology_reply how;
    char node_id[ID_LEN + 1];
    struct buf next; /* the entries, each after a 4-byte length; next.off: the next to propose */
    size_t cur;      /* offset of the entry in flight (what a forward starts from) */
    bool no_forward; /* it came forwarded (RVCLUSTER PROPOSE): answer, do not forward again */
    /* topology_admit: the host to add to the log's servers once they committed */
    uint64_t admit_id;
    char admit_addr[CTL_ADDR_MAX];
};

static void admit_host(uint64_t id, const char *addr);
static bool forward(struct request *rq, uint64_t leader_id);
static int resp_call(const char *ip, int port, const struct buf *req, char *out, size_t n,
                     int timeout_ms);
static void on_answer(void *arg, const struct ctl_result *res);

static void
answer_run(struct shard *s, struct shard_msg *m)
{
    struct answer *a = (struct answer *)m;
    struct conn *c = shard_conn_first(s);
    while (c != NULL && c->id != a->conn_id) {
        c = c->next;
    }
    if (c != NULL && (c->flags & CONN_TOPO_WAIT)) { /* (else the client went away) */
        c->flags &= ~(CONN_TOPO_WAIT | CONN_BLOCKED);
        if (a->raw) {
            if (a->text[0] == '+') {
                reply_simple(c, a->text + 1);
            } else {
                reply_errf(c, "%s", a->text[0] == '-' ? a->text + 1 : a->text);
            }
        } else if (a->failed) {
            reply_errf(c, "%s", a->text);
        } else {
            char line[96], idx[32] = "";
            if (a->forwarded) { /* "IDX <index> ": the asking host waits until it applied it */
                snprintf(idx, sizeof(idx), "IDX %" PRIu64 " ", a->index);
            }
            if (a->how == TOPOLOGY_REPLY_BUMPEPOCH) {
                snprintf(line, sizeof(line), "%s%s %" PRIu64, idx, a->bumped ? "BUMPED" : "STILL",
                         a->epoch);
            } else {
                snprintf(line, sizeof(line), "%sOK", idx);
            }
            reply_simple(c, line);
        }
        conn_resume(c);
        shard_want_write(s, c);
    }
    rv_free(a);
}

static struct answer *
answer_new(struct request *rq)
{
    struct answer *a = rv_calloc(1, sizeof(*a));
    a->m.run = answer_run;
    a->conn_id = rq->conn_id;
    a->how = rq->how;
    return a;
}

static void
request_free(struct request *rq)
{
    buf_deinit(&rq->next);
    rv_free(rq);
}

/* Propose the next queued entry of rq (control thread, or the client's shard
 * holding tp.lock). false when there was none, or it was refused (*rc). */
static bool
propose_next(struct request *rq, int *rc)
{
    struct buf *q = &rq->next;
    if (buf_unread(q) < 4) {
        return false;
    }
    uint32_t len;
    memcpy(&len, q->data + q->off, 4);
    const char *p = q->data + q->off + 4;
    rq->cur = q->off;
    q->off += 4 + len;
    *rc = ctl_propose(tp.ctl, p, len, on_answer, rq);
    return *rc == RV_OK;
}

/* Control thread: the entry's outcome; the next entry of a sequence, a
 * forward to the leader's host, or the answer to the client's shard. */
static void
on_answer(void *arg, const struct ctl_result *res)
{
    struct request *rq = arg;
    int rc = RV_OK;
    if (res->err == CTL_OK && res->code == 0 && propose_next(rq, &rc)) {
        return; /* the next entry of a sequence is on its way */
    }
    if (res->err == CTL_ENOTLEADER && !rq->no_forward && rq->admit_id == 0 &&
        forward(rq, res->leader_id)) {
        return; /* a host that leads will answer */
    }
    struct answer *a = answer_new(rq);
    a->failed = res->err != CTL_OK || res->code != 0 || rc != RV_OK;
    a->index = res->index;
    a->forwarded = rq->no_forward;
    if (res->err == CTL_ENOTLEADER) {
        snprintf(a->text, sizeof(a->text),
                 "CLUSTERDOWN this host does not lead the topology log "
                 "and could not reach one that does");
    } else if (res->err != CTL_OK) {
        snprintf(a->text, sizeof(a->text), "CLUSTERDOWN the topology change failed: %s%s%s",
                 ctl_strerror(res->err), res->msg && res->msg[0] ? ": " : "",
                 res->msg ? res->msg : "");
    } else if (res->code != 0) {
        snprintf(a->text, sizeof(a->text), "%s", res->msg);
    } else if (rc != RV_OK) {
        snprintf(a->text, sizeof(a->text),
                 "CLUSTERDOWN the topology log does not take proposals now (%s)", rv_strerror(rc));
    } else if (rq->how == TOPOLOGY_REPLY_BUMPEPOCH) {
        const struct topo_node *nd = topo_node_by_id(tp.cur, rq->node_id, ID_LEN);
        a->bumped = strcmp(res->msg, "changed") == 0;
        a->epoch = nd ? nd->config_epoch : 0;
    } else if (rq->admit_id != 0) {
        admit_host(rq->admit_id, rq->admit_addr); /* its nodes are in: now its Raft server */
    }
    shard_post(rq->shard, &a->m);
    request_free(rq);
}

/* Queue entries for client c and propose the first; c waits for the answer. */
static void
start_request(struct conn *c, const struct buf *const *entries, size_t n, enum topology_reply how,
              const char *node_id, bool no_forward, uint64_t admit_id, const char *admit_addr)
{
    if (c->flags & (CONN_IN_EXEC | CONN_REPLAY)) {
        reply_errf(c, "ERR topology changes cannot wait inside a transaction; send them alone");
        return;
    }
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        reply_errf(c, "TRYAGAIN this host is joining another host's cluster");
        return;
    }
    if (tp.ctl == NULL) {
        pthread_rwlock_unlock(&tp.lock);
        reply_errf(c, "CLUSTERDOWN this host's control plane is not running (see the log)");
        return;
    }
    struct request *rq = rv_calloc(1, sizeof(*rq));
    rq->shard = c->shard;
    rq->conn_id = c->id;
    rq->how = how;
    rq->no_forward = no_forward;
    if (node_id != NULL) {
        snprintf(rq->node_id, sizeof(rq->node_id), "%s", node_id);
    }
    rq->admit_id = admit_id;
    if (admit_addr != NULL) {
        snprintf(rq->admit_addr, sizeof(rq->admit_addr), "%s", admit_addr);
    }
    buf_init(&rq->next);
    for (size_t i = 0; i < n; i++) {
        uint32_t len = (uint32_t)entries[i]->len;
        buf_append(&rq->next, &len, 4);
        buf_append(&rq->next, entries[i]->data, len);
    }
    int rc = RV_OK;
    bool sent = propose_next(rq, &rc);
    pthread_rwlock_unlock(&tp.lock);
    if (!sent) {
        request_free(rq);
        if (rc != RV_OK) {
            reply_errf(c, "CLUSTERDOWN the topology log does not take proposals now (%s)",
                       rv_strerror(rc));
            return;
        }
        if (admit_id != 0) {
            admit_host(admit_id, admit_addr); /* (all its nodes were in already: a join retried) */
        }
        reply_ok(c); /* nothing to change */
        return;
    }
    c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
}

void
topology_propose(struct conn *c, const struct buf *entry, enum topology_reply how,
                 const char *node_id)
{
    start_request(c, &entry, 1, how, node_id, false, 0, NULL);
}

void
topology_propose_seq(struct conn *c, const struct buf *const *entries, size_t n)
{
    start_request(c, entries, n, TOPOLOGY_REPLY_OK, NULL, false, 0, NULL);
}

void
topology_propose_forwarded(struct conn *c, const struct buf *const *entries, size_t n,
                           enum topology_reply how, const char *node_id)
{
    start_request(c, entries, n, how, node_id, true, 0, NULL);
}

void
topology_admit(struct conn *c, const struct buf *const *entries, size_t n, uint64_t host_id,
               const char *bus_addr)
{
    start_request(c, entries, n, TOPOLOGY_REPLY_OK, NULL, false, host_id, bus_addr);
}

bool
topology_leads(void)
{
    struct topology_status st;
    topology_status(&st);
    return st.leader;
}

/* ---------------------------------------------------------------- start, stop */

struct sync_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    struct ctl_result res;
    char msg[CTL_MSG_MAX];
};

static void
sync_done(void *arg, const struct ctl_result *res)
{
    struct sync_wait *w = arg;
    pthread_mutex_lock(&w->mu);
    w->res = *res;
    snprintf(w->msg, sizeof(w->msg), "%s", res->msg ? res->msg : "");
    w->res.msg = w->msg;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Propose from the main thread and wait (bounded) for the outcome. */
static int
propose_sync(const struct buf *entry, char *err, size_t errsz)
{
    struct sync_wait w = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    if (ctl_propose(tp.ctl, entry->data, entry->len, sync_done, &w) != RV_OK) {
        snprintf(err, errsz, "the control plane refused a proposal");
        return -1;
    }
    pthread_mutex_lock(&w.mu);
    while (!w.done) { /* ctl answers every accepted request, timeouts included */
        pthread_cond_wait(&w.cv, &w.mu);
    }
    pthread_mutex_unlock(&w.mu);
    if (w.res.err != CTL_OK || w.res.code != 0) {
        snprintf(err, errsz, "%s%s%s", ctl_strerror(w.res.err), w.msg[0] ? ": " : "", w.msg);
        return -1;
    }
    return 0;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* The address other hosts reach this one at: cluster-announce-ip, else the
 * first bind address, else loopback (a single-host cluster). */
static void
host_ip(const struct cfg *cfg, char *out, size_t n)
{
    const char *b = cfg->net.bind;
    if (cfg->cluster.announce_ip[0]) {
        snprintf(out, n, "%s", cfg->cluster.announce_ip);
    } else if (b[0] && b[0] != '*' && strncmp(b, "0.0.0.0", 7) != 0) {
        size_t len = strcspn(b, " ");
        snprintf(out, n, "%.*s", (int)len, b);
    } else {
        snprintf(out, n, "127.0.0.1");
    }
}

/* A fresh cluster of this host alone: add its nodes once it leads. */
static int
add_own_nodes(struct node *n, const struct cfg *cfg, const char *ip, unsigned bus_port, char *err,
              size_t errsz)
{
    struct ctl_info ci;
    for (int waited = 0;; waited += 20) {
        ctl_info(tp.ctl, &ci);
        if (ci.state == CTL_LEADER || (ci.leader_id != 0 && ci.leader_id != tp.host_id)) {
            break;
        }
        if (waited > 20000) {
            snprintf(err, errsz, "no leader for the topology log after 20 s");
            return -1;
        }
        sleep_ms(20);
    }
    if (ci.state != CTL_LEADER) {
        return 0; /* another host leads: this one was added by it */
    }
    struct topo *t = node_topo_get(n);
    struct buf b;
    buf_init(&b);
    int rc = 0;
    for (unsigned i = 0; i < n->nshards && rc == 0; i++) {
        if (t != NULL && topo_find(t, n->ids[i], ID_LEN) >= 0) {
            continue;
        }
        int64_t port = cfg->cluster.announce_port ? cfg->cluster.announce_port : cfg->net.port;
        struct topo_node_spec sp = {
            .id = n->ids[i],
            .shard_id = tp.shard_ids[i],
            .ip = ip,
            .port = (uint16_t)(port + i),
            .cport = (uint16_t)(cfg->cluster.announce_bus_port ? cfg->cluster.announce_bus_port
                                                               : bus_port),
            .hostname = cfg->cluster.announce_hostname,
            .role = TOPO_PRIMARY,
            .flags = TOPO_F_LONE, /* knows only itself until a MEET (redis-cli checks) */
            .host_id = tp.host_id,
        };
        buf_reset(&b);
        if (topo_enc_node_add(&b, &sp) != RV_OK) {
            snprintf(err, errsz, "node %u: cannot encode its address %s:%lld", i, ip,
                     (long long)(port + i));
            rc = -1;
        } else {
            rc = propose_sync(&b, err, errsz);
        }
    }
    buf_deinit(&b);
    topo_put(t);
    return rc;
}

int
topology_start(struct node *n, const struct cfg *cfg, char *err, size_t errsz)
{
    tp.node = n;
    if (cfg->repl.replicaof[0]) {
        snprintf(err, errsz,
                 "'replicaof' is not allowed in cluster mode: replicas are set with "
                 "CLUSTER REPLICATE");
        return -1;
    }
    if (identity_load(n, cfg, err, errsz) != 0) {
        return -1;
    }
    tp.cur = topo_create();
    publish();
    char *ip = tp.ip, *addr = tp.addr, *bind = tp.bind, *dir = tp.dir;
    host_ip(cfg, ip, sizeof(tp.ip));
    unsigned bus_port = (unsigned)(cfg->cluster.port ? cfg->cluster.port : cfg->net.port + 10000);
    if (bus_port > 65535) {
        snprintf(err, errsz, "'cluster-port': port + 10000 is over 65535; set cluster-port");
        return -1;
    }
    snprintf(addr, sizeof(tp.addr), "%s:%u", ip, bus_port);
    const char *b = cfg->net.bind;
    if (b[0] == '*' || strncmp(b, "0.0.0.0", 7) == 0) {
        snprintf(bind, sizeof(tp.bind), "0.0.0.0:%u", bus_port);
    } else {
        int len = (int)strcspn(b, " ");
        snprintf(bind, sizeof(tp.bind), "%.*s:%u", len > 45 ? 45 : len, b, bus_port);
    }
    snprintf(dir, sizeof(tp.dir), "%s/cluster", cfg->persist.dir);
    if (fs_mkdir_p(dir) != 0) {
        snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    static struct ctl_server self;
    self = (struct ctl_server){ tp.host_id, tp.addr, CTL_VOTER };
    unsigned timeout = (unsigned)cfg->cluster.node_timeout;
    struct ctl_opts o = {
        .id = tp.host_id,
        .address = addr,
        .bind_address = bind,
        .dir = dir,
        .bootstrap = &self,
        .n_bootstrap = 1,
        .fsm = { NULL, fsm_apply, fsm_snapshot, fsm_restore },
        /* elections well inside the node timeout (raft randomises 1x..2x) */
        .election_timeout_ms = timeout / 4 > 200 ? timeout / 4 : 200,
    };
    tp.opts = o;
    if (ctl_start(&tp.ctl, &o, err, errsz) != RV_OK) {
        return -1;
    }
    if (add_own_nodes(n, cfg, ip, bus_port, err, errsz) != 0) {
        topology_stop();
        return -1;
    }
    monitor_tick(cfg->cluster.node_timeout); /* (the lease before the first client) */
    if (pthread_create(&mon.th, NULL, monitor_main, NULL) != 0) {
        snprintf(err, errsz, "cannot start the cluster monitor thread");
        topology_stop();
        return -1;
    }
    mon.running = true;
    log_notice("cluster: host %016" PRIx64 " on bus %s, %u node(s), topology log in %s", tp.host_id,
               addr, n->nshards, dir);
    return 0;
}

void
topology_stop(void)
{
    if (mon.running) {
        atomic_store(&mon.stop, true);
        pthread_join(mon.th, NULL);
        mon.running = false;
        for (size_t i = 0; i < mon.n; i++) {
            probe_close(&mon.p[i]);
        }
        rv_free(mon.p);
        mon.p = NULL;
    }
    if (tp.ctl == NULL) {
        return;
    }
    ctl_stop(tp.ctl);
    tp.ctl = NULL;
    topo_put(atomic_exchange(&tp.node->topo, NULL)); /* (the shards are gone: nobody to wake) */
    topo_put(tp.cur);
    tp.cur = NULL;
    rv_free(tp.shard_ids);
    tp.shard_ids = NULL;
}

void
topology_status(struct topology_status *out)
{
    memset(out, 0, sizeof(*out));
    if (tp.ctl == NULL) {
        return;
    }
    struct ctl_info ci;
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        out->host_id = tp.host_id; /* (switching to another host's log) */
        return;
    }
    if (tp.ctl == NULL) {
        pthread_rwlock_unlock(&tp.lock);
        out->host_id = tp.host_id;
        return;
    }
    ctl_info(tp.ctl, &ci);
    pthread_rwlock_unlock(&tp.lock);
    out->host_id = tp.host_id;
    out->leader = ci.state == CTL_LEADER;
    out->leader_id = ci.leader_id;
    out->term = ci.term;
    out->commit_index = ci.commit_index;
    out->applied_index = ci.applied_index;
    for (unsigned i = 0; i < ci.n_servers && i < CTL_INFO_SERVERS; i++) {
        out->voters += ci.servers[i].role == CTL_VOTER;
        out->learners += ci.servers[i].role == CTL_LEARNER;
    }
}

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
    sleep_ms(200);
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
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, admit_sleeper, ad) != 0) {
        log_warn("cluster: cannot retry adding host %016" PRIx64, ad->id);
        rv_free(ad);
    }
    pthread_attr_destroy(&at);
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

static void
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
static int
resp_call_ex(const char *ip, int port, const struct buf *req, char *out, size_t n, int timeout_ms,
             bool all)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        snprintf(out, n, "ERR Invalid node address specified: %s:%d", ip, port);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        send(fd, req->data, req->len, MSG_NOSIGNAL) != (ssize_t)req->len) {
        snprintf(out, n, "ERR cannot reach %s:%d: %s", ip, port, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = recv(fd, out + got, n - 1 - got, 0);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
        out[got] = '\0';
        if (!all && memchr(out, '\n', got) != NULL) {
            break;
        }
    }
    close(fd);
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

static int
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
        struct topo *t = node_topo_get(tp.node);
        int me = t ? topo_find(t, tp.node->ids[0], ID_LEN) : -1;
        bool in = me >= 0 && !(t->nodes[me].flags & TOPO_F_LONE) && t->nnodes > tp.node->nshards;
        topo_put(t);
        if (in) {
            return 0;
        }
        sleep_ms(50);
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
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        reply_errf(c, "TRYAGAIN this host is joining another host's cluster");
        return;
    }
    if (tp.ctl == NULL) {
        pthread_rwlock_unlock(&tp.lock);
        reply_errf(c, "CLUSTERDOWN this host's control plane is not running (see the log)");
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
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, meet_worker, j) != 0) {
        buf_deinit(&j->req);
        rv_free(j);
        atomic_store(&tp.joining, false);
        reply_errf(c, "ERR cannot start joining: %s", strerror(errno));
    } else {
        c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
    }
    pthread_attr_destroy(&at);
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
    char ip[TOPO_IP_MAX + 1];
    int port;
    struct buf req;
};

static void *
fwd_worker(void *arg)
{
    struct fwd_job *j = arg;
    struct answer *a = rv_calloc(1, sizeof(*a));
    a->m.run = answer_run;
    a->conn_id = j->conn_id;
    a->raw = true;
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
        for (int waited = 0; waited < 5000; waited += 10) {
            struct topology_status st;
            topology_status(&st);
            if (st.applied_index >= index) {
                break;
            }
            sleep_ms(10);
        }
        snprintf(a->text, sizeof(a->text), "+%.200s", line + used);
    } else {
        snprintf(a->text, sizeof(a->text), "%s", line);
    }
    shard_post(j->shard, &a->m);
    buf_deinit(&j->req);
    rv_free(j);
    return NULL;
}

/* Control thread: send what rq still has to propose (from the entry that was
 * refused) to a node of the leader's host, as RVCLUSTER PROPOSE, from a thread
 * of its own; its reply line becomes the client's. false when no leader is
 * known (the caller answers). */
static bool
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
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, fwd_worker, j);
    pthread_attr_destroy(&at);
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

/* ---- replication follows the topology ---- */

void
topology_reconcile(struct shard *s)
{
    const struct topo *t = shard_env(s)->topo;
    int me = shard_env(s)->topo_me;
    struct repl *r = persist_repl(s);
    if (t == NULL || me < 0 || r == NULL) {
        return;
    }
    const struct topo_node *n = &t->nodes[me];
    if (n->role == TOPO_REPLICA && n->primary != TOPO_NONE) {
        const struct topo_node *p = &t->nodes[n->primary];
        if (!repl_follows_node(r, p->ip, p->port)) {
            log_notice("cluster: this node (%.8s) now replicates %.8s at %s:%u", n->id, p->id,
                       p->ip, p->port);
            repl_follow_node(r, p->ip, p->port);
        }
    } else if (n->role == TOPO_PRIMARY && repl_is_replica(r)) {
        log_notice("cluster: this node (%.8s) is a primary now", n->id);
        if (repl_follow(r, true, NULL, 0) != RV_OK) {
            log_warn("cluster: the promotion could not be saved: %s", repl_state_error(r));
        }
    }
}

static void
bg_done(void *arg, const struct ctl_result *res)
{
    (void)arg;
    if (res->err != CTL_OK || res->code != 0) {
        log_warn("cluster: a topology change this host proposed by itself failed: %s %s",
                 ctl_strerror(res->err), res->msg ? res->msg : "");
    }
}

/* A replica's shard took over in the data plane (FAILOVER's hand-over, sent by
 * CLUSTER FAILOVER): the topology makes its node the primary of its slots. */
void
topology_primary_now(struct shard *s)
{
    const struct topo *t = shard_env(s)->topo;
    int me = shard_env(s)->topo_me;
    if (t == NULL || me < 0 || t->nodes[me].role != TOPO_REPLICA) {
        return;
    }
    struct buf b;
    buf_init(&b);
    if (topo_enc_promote(&b, t->nodes[me].id) == RV_OK && pthread_rwlock_tryrdlock(&tp.lock) == 0) {
        if (ctl_propose(tp.ctl, b.data, b.len, bg_done, NULL) != RV_OK) {
            log_warn("cluster: cannot propose this node's promotion");
        }
        pthread_rwlock_unlock(&tp.lock);
        log_notice("cluster: this node (%.8s) took over from its primary; proposing it as the "
                   "primary of its slots",
                   t->nodes[me].id);
    }
    buf_deinit(&b);
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
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, fwd_worker, j);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        buf_deinit(&j->req);
        rv_free(j);
        reply_errf(c, "ERR cannot reach %s:%d now", ip, port);
        return;
    }
    c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
}

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
    p->fd = -1;
    return p;
}

static void
probe_close(struct probe *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        p->fd = -1;
    }
}

/* One inline command on the probe's connection (opened, or opened again, as
 * needed) and the first line of its reply; false on any failure (the
 * connection is then closed, and the next call connects again). */
static bool
probe_call(struct probe *p, const struct topo_node *x, const char *cmd, char *out, size_t n,
           int timeout_ms)
{
    if (p->fd >= 0 && (strcmp(p->ip, x->ip) != 0 || p->port != x->port)) {
        probe_close(p); /* (the node moved) */
    }
    if (p->fd < 0) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(x->port) };
        if (inet_pton(AF_INET, x->ip, &sa.sin_addr) != 1) {
            return false;
        }
        p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
        setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (p->fd < 0 || connect(p->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            probe_close(p);
            return false;
        }
        snprintf(p->ip, sizeof(p->ip), "%s", x->ip);
        p->port = x->port;
    }
    char req[128];
    int len = snprintf(req, sizeof(req), "%s\r\n", cmd);
    if (send(p->fd, req, (size_t)len, MSG_NOSIGNAL) != len) {
        probe_close(p);
        return false;
    }
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = recv(p->fd, out + got, n - 1 - got, 0);
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

static void
propose_bg(const struct buf *b)
{
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        return;
    }
    if (tp.ctl != NULL && ctl_propose(tp.ctl, b->data, b->len, bg_done, NULL) != RV_OK) {
        log_warn("cluster: the monitor cannot propose a topology change now");
    }
    pthread_rwlock_unlock(&tp.lock);
}

static void
fail_over(const struct topo *t, unsigned idx, int timeout_ms)
{
    static uint16_t reps[TOPO_MAX_NODES];
    size_t nr = topo_replicas(t, idx, reps, TOPO_MAX_NODES);
    long long best = -1;
    int pick = -1;
    for (size_t i = 0; i < nr; i++) {
        const struct topo_node *r = &t->nodes[reps[i]];
        if (r->flags & (TOPO_F_FAIL | TOPO_F_NOFAILOVER)) {
            continue;
        }
        long long off = replica_offset_full(r, timeout_ms);
        if (off > best) {
            best = off;
            pick = reps[i];
        }
    }
    const struct topo_node *x = &t->nodes[idx];
    if (pick < 0) {
        log_warn("cluster: primary %.8s (%s:%u) is unreachable and none of its replicas answers: "
                 "its slots stay down",
                 x->id, x->ip, x->port);
        return;
    }
    log_warn("cluster: primary %.8s (%s:%u) answered nothing for cluster-node-timeout: promoting "
             "its replica %.8s (%s:%u, replication offset %lld)",
             x->id, x->ip, x->port, t->nodes[pick].id, t->nodes[pick].ip, t->nodes[pick].port,
             best);
    struct buf b;
    buf_init(&b);
    topo_enc_promote(&b, t->nodes[pick].id);
    propose_bg(&b);
    buf_reset(&b);
    topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags | TOPO_F_FAIL));
    propose_bg(&b);
    buf_deinit(&b);
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
             st.term == ci->term && st.applied <= ci->applied_index;
    }
    topo_put(t);
    if (ok) {
        atomic_store(&tp.node->cluster_lease_topo, version);
        atomic_store(&tp.node->cluster_lease_ms, start + timeout / 2);
    }
    return ok;
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
        if (x->host_id == tp.host_id || (x->flags & TOPO_F_LONE)) {
            continue; /* (this host's nodes are up while it runs) */
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
                propose_bg(&b);
                buf_deinit(&b);
                log_notice("cluster: node %.8s (%s:%u) answers again", x->id, x->ip, x->port);
            }
            continue;
        }
        bool serving = x->role == TOPO_PRIMARY && topo_node_slot_count(t, i) > 0 &&
                       topo_replicas(t, i, reps, TOPO_MAX_NODES) > 0;
        if (mono_ms() - p->last_ok_ms > timeout && !(x->flags & TOPO_F_FAIL)) {
            if (serving) {
                fail_over(t, i, ping_ms);
            } else { /* (a replica, or a primary without slots: just shown as failed) */
                struct buf b;
                buf_init(&b);
                topo_enc_node_set_flags(&b, x->id, (uint16_t)(x->flags | TOPO_F_FAIL));
                propose_bg(&b);
                buf_deinit(&b);
                log_warn("cluster: node %.8s (%s:%u) answered nothing for cluster-node-timeout",
                         x->id, x->ip, x->port);
            }
            p->last_ok_ms = mono_ms(); /* (a full timeout before trying this node again) */
        }
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
        sleep_ms((long)(timeout / 4 > 1000 ? 1000 : timeout / 4 < 50 ? 50 : timeout / 4));
    }
    return NULL;
}
