/* node/features/topology.c: cluster mode's control plane glue (topology.h):
 * the host's identity, the topology state machine, proposals and their
 * answers, start and stop, and replication following the topology.
 *
 * Threads: topology_start/stop run on the main thread; the state machine's
 * callbacks and proposal answers on the control thread (control/ctl.h); the
 * answer reaches the waiting client as a message to its shard. */
#include "node/features/topology.h"
#include "node/features/topology_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "base/rv_err.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "control/ctl.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/core/cmd.h"
#include "node/core/effect.h"
#include "node/features/block.h"
#include "node/features/multi.h"
#include "node/keyspace/ks.h"
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

struct topology_state tp = { .lock = PTHREAD_RWLOCK_INITIALIZER };

/* Nodes forgotten lately (Redis keeps a 60 s ban list): CLUSTER FORGET of one
 * of them answers OK, so that redis-cli's del-node, which sends FORGET to every
 * other node, gets OK from each although the first FORGET already removed the
 * node from the one topology they share. Written on the control thread,
 * read by the shards. */
#define FORGOTTEN_SLOTS 64
#define FORGOTTEN_MS 60000
static struct {
    pthread_mutex_t mu;
    struct {
        char id[ID_LEN + 1];
        int64_t at_ms;
    } e[FORGOTTEN_SLOTS];
    unsigned next;
} forgotten = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
forgotten_add(const char *id)
{
    pthread_mutex_lock(&forgotten.mu);
    unsigned k = forgotten.next++ % FORGOTTEN_SLOTS;
    memcpy(forgotten.e[k].id, id, ID_LEN);
    forgotten.e[k].id[ID_LEN] = '\0';
    forgotten.e[k].at_ms = now_ms();
    pthread_mutex_unlock(&forgotten.mu);
}

bool
topology_recently_forgotten(const char *id, size_t len)
{
    if (len != ID_LEN) {
        return false;
    }
    bool found = false;
    int64_t now = now_ms();
    pthread_mutex_lock(&forgotten.mu);
    for (unsigned k = 0; k < FORGOTTEN_SLOTS && !found; k++) {
        found = forgotten.e[k].at_ms != 0 && now - forgotten.e[k].at_ms < FORGOTTEN_MS &&
                memcmp(forgotten.e[k].id, id, ID_LEN) == 0;
    }
    pthread_mutex_unlock(&forgotten.mu);
    return found;
}

int
tpi_spawn(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, fn, arg);
    pthread_attr_destroy(&at);
    return rc;
}


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
    snprintf(tp.idpath, sizeof(tp.idpath), "%s", path);
    tp.shard_ids = rv_calloc(n->nshards, sizeof(*tp.shard_ids));
    tp.handover = rv_calloc(n->nshards, sizeof(*tp.handover));
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

int
topology_set_identity(unsigned shard, const char *id)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu); /* (two shards reset at once: one file, both changes) */
    memcpy(tp.node->ids[shard], id, ID_LEN);
    int rc = identity_write(tp.idpath, tp.node);
    pthread_mutex_unlock(&mu);
    if (rc != 0) {
        log_warn("cluster: cannot write %s: %s", tp.idpath, strerror(errno));
    }
    return rc;
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
    /* NODE_FORGET: version, type, id (topo_codec.c) */
    const char *e = entry;
    bool forget = len >= 2 + ID_LEN && e[1] == TOPO_CMD_NODE_FORGET;
    if (forget && r == TOPO_CHANGED) {
        forgotten_add(e + 2);
    } else if (forget && r == TOPO_EREFUSED && topology_recently_forgotten(e + 2, ID_LEN)) {
        r = TOPO_UNCHANGED; /* (the outcome only: the state is the same either way) */
    }
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


static void on_answer(void *arg, const struct ctl_result *res);

/* CLUSTER RESET committed: the node is an empty primary (a replica stops
 * following and drops its data; a primary had none, RESET checked). */
static void
reset_data(struct shard *s, struct conn *c, const char *new_id)
{
    if (new_id[0]) { /* HARD: the node's new id, now in the topology */
        topology_set_identity(shard_env(s)->id, new_id);
        const struct topo *t = shard_env(s)->topo;
        shard_env(s)->topo_me = t ? topo_find(t, new_id, ID_LEN) : -1;
    }
    struct repl *r = persist_repl(s);
    if (r != NULL && repl_is_replica(r) && repl_follow(r, true, NULL, 0) != RV_OK) {
        log_warn("cluster: CLUSTER RESET: %s", repl_state_error(r));
    }
    ks_flush(shard_env(s)->ks);
    /* logged, or a restart would replay the records it had as a replica */
    const struct cmd_spec *flushall = cmd_lookup("flushall", 8);
    struct rv_str argv[1] = { { "FLUSHALL", 8 } };
    if (flushall != NULL) {
        c->effect = EFFECT_ARGS;
        persist_log(c, flushall, 1, argv);
    }
}

void
answer_run(struct shard *s, struct shard_msg *m)
{
    struct answer *a = (struct answer *)m;
    struct conn *c = shard_conn_first(s);
    while (c != NULL && c->id != a->conn_id) {
        c = c->next;
    }
    if (c != NULL && (c->flags & CONN_TOPO_WAIT)) { /* (else the client went away) */
        c->flags &= ~(CONN_TOPO_WAIT | CONN_BLOCKED);
        bool ok = a->raw ? a->text[0] == '+' : !a->failed;
        if (ok && a->how == TOPOLOGY_REPLY_RESET) {
            reset_data(s, c, a->node_id);
        }
        if (a->raw) {
            if (a->text[0] == '+') {
                reply_simple(c, a->text + 1);
            } else {
                reply_errf(c, "%s", a->text[0] == '-' ? a->text + 1 : a->text);
            }
        } else if (a->failed && a->forwarded && a->refused) {
            /* "IDX <index> ": the asking host answers once it applied it */
            reply_errf(c, "IDX %" PRIu64 " %s", a->index, a->text);
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
        if (!multi_exec_resume(c)) { /* (EXEC's next commands first: they come before any input) */
            conn_resume(c);
        }
        shard_want_write(s, c);
    }
    rv_free(a);
}

static struct answer *
answer_new(struct request *rq)
{
    struct answer *a = rv_calloc(1, sizeof(*a));
    a->m.run = rq->run != NULL ? rq->run : answer_run;
    a->conn_id = rq->conn_id;
    a->how = rq->how;
    if (rq->how == TOPOLOGY_REPLY_RESET) {
        memcpy(a->node_id, rq->node_id, sizeof(a->node_id));
    }
    return a;
}

void
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
    a->refused = res->err == CTL_OK && res->code != 0 && rc == RV_OK;
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

/* The entries a request proposes one after another, each length-prefixed. */
static void
queue_entries(struct request *rq, const struct buf *const *entries, size_t n)
{
    buf_init(&rq->next);
    for (size_t i = 0; i < n; i++) {
        uint32_t len = (uint32_t)entries[i]->len;
        buf_append(&rq->next, &len, 4);
        buf_append(&rq->next, entries[i]->data, len);
    }
}

/* Queue entries for client c and propose the first; c waits for the answer. */
static void
start_request(struct conn *c, const struct buf *const *entries, size_t n, enum topology_reply how,
              const char *node_id, bool no_forward, uint64_t admit_id, const char *admit_addr)
{
    if (c->flags & CONN_REPLAY) {
        reply_errf(c, "ERR topology changes cannot wait here; send them alone");
        return;
    }
    if (!tpi_lock_for(c)) {
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
    queue_entries(rq, entries, n);
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
topology_propose_reset(struct conn *c, const struct buf *const *entries, size_t n,
                       const char *new_id)
{
    start_request(c, entries, n, TOPOLOGY_REPLY_RESET, new_id, false, 0, NULL);
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

void
topology_propose_job(struct shard *s, const struct buf *const *entries, size_t n,
                     void (*run)(struct shard *s, struct shard_msg *m), uint64_t tag)
{
    struct request *rq = rv_calloc(1, sizeof(*rq));
    rq->shard = s;
    rq->conn_id = tag;
    rq->how = TOPOLOGY_REPLY_OK;
    rq->run = run;
    queue_entries(rq, entries, n);
    int rc = RV_OK;
    bool sent = false;
    if (pthread_rwlock_tryrdlock(&tp.lock) == 0) {
        sent = tp.ctl != NULL && propose_next(rq, &rc);
        pthread_rwlock_unlock(&tp.lock);
    }
    if (!sent) {
        struct answer *a = answer_new(rq);
        a->failed = true;
        snprintf(a->text, sizeof(a->text),
                 "CLUSTERDOWN the topology log does not take proposals now");
        request_free(rq);
        shard_post(s, &a->m);
    }
}

enum topology_outcome
topology_job_answer(struct shard_msg *m, uint64_t *tag, char *text, size_t n)
{
    struct answer *a = (struct answer *)m;
    bool ok = a->raw ? a->text[0] == '+' : !a->failed;
    enum topology_outcome out = ok           ? TOPOLOGY_COMMITTED
                                : a->refused ? TOPOLOGY_REFUSED
                                             : TOPOLOGY_UNKNOWN;
    *tag = a->conn_id;
    snprintf(text, n, "%s",
             a->raw && (a->text[0] == '+' || a->text[0] == '-') ? a->text + 1 : a->text);
    rv_free(a);
    return out;
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

void
tpi_sleep_ms(long ms)
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

/* Node i of this host as it is added: a lone primary (it knows only itself
 * until a MEET, as redis-cli --cluster checks). */
static void
own_spec(const struct node *n, const struct cfg *cfg, unsigned i, struct topo_node_spec *sp)
{
    /* tls-cluster: the node's port is its TLS one, as Redis announces it. */
    int64_t port = cfg->cluster.announce_port ? cfg->cluster.announce_port
                   : cfg->tls.cluster         ? cfg->tls.port
                                              : cfg->net.port;
    unsigned bus = (unsigned)(cfg->cluster.port ? cfg->cluster.port : cfg->net.port + 10000);
    *sp = (struct topo_node_spec){
        .id = n->ids[i],
        .shard_id = tp.shard_ids[i],
        .ip = tp.ip,
        .port = (uint16_t)(port + i),
        .cport = (uint16_t)(cfg->cluster.announce_bus_port ? cfg->cluster.announce_bus_port : bus),
        .hostname = cfg->cluster.announce_hostname,
        .role = TOPO_PRIMARY,
        .flags = TOPO_F_LONE,
        .host_id = tp.host_id,
    };
}

void
topology_own_spec(unsigned shard, struct topo_node_spec *out)
{
    static _Thread_local char hostname[TOPO_HOSTNAME_MAX + 1];
    const struct cfg *cfg = atomic_load(&tp.node->cfg);
    own_spec(tp.node, cfg, shard, out);
    snprintf(hostname, sizeof(hostname), "%s", out->hostname ? out->hostname : "");
    out->hostname = hostname;
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
        tpi_sleep_ms(20);
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
        struct topo_node_spec sp;
        own_spec(n, cfg, i, &sp);
        sp.ip = ip;
        sp.cport = (uint16_t)(cfg->cluster.announce_bus_port ? cfg->cluster.announce_bus_port
                                                             : bus_port);
        buf_reset(&b);
        if (topo_enc_node_add(&b, &sp) != RV_OK) {
            snprintf(err, errsz, "node %u: cannot encode its address %s:%u", i, ip, sp.port);
            rc = -1;
        } else {
            rc = propose_sync(&b, err, errsz);
        }
    }
    buf_deinit(&b);
    topo_put(t);
    return rc;
}

/* tls-cluster: raft's connections take the bus contexts current when they open. */
static struct tls_ctx *
bus_tls_ctx(void *arg, bool server)
{
    (void)arg;
    return node_tls_bus_get(server);
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
        /* A follower learns that an entry committed only from the leader's
         * next AppendEntries, and a change forwarded to the leader's host is
         * answered once this host applied it: the leader sends a barrier after
         * each commit (control/ctl.c), and the heartbeat bounds the wait when
         * that is lost (100 ms made each forwarded SETSLOT take ~190 ms). */
        .heartbeat_timeout_ms = 25,
        .tls_ctx = cfg->tls.cluster ? bus_tls_ctx : NULL,
    };
    tp.opts = o;
    if (ctl_start(&tp.ctl, &o, err, errsz) != RV_OK) {
        return -1;
    }
    if (add_own_nodes(n, cfg, ip, bus_port, err, errsz) != 0) {
        topology_stop();
        return -1;
    }
    if (monitor_start(cfg->cluster.node_timeout, err, errsz) != 0) {
        topology_stop();
        return -1;
    }
    log_notice("cluster: host %016" PRIx64 " on bus %s, %u node(s), topology log in %s", tp.host_id,
               addr, n->nshards, dir);
    return 0;
}

void
topology_stop(void)
{
    monitor_stop();
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
    rv_free(tp.handover);
    tp.handover = NULL;
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

/* ---- replication follows the topology ---- */

/* The replica of n (in t) this shard follows in the data plane, or NULL. */
static const struct topo_node *
followed_replica(const struct topo *t, unsigned me, const struct repl *r)
{
    static _Thread_local uint16_t reps[TOPO_MAX_NODES];
    size_t nr = topo_replicas(t, me, reps, TOPO_MAX_NODES);
    for (size_t i = 0; i < nr; i++) {
        const struct topo_node *x = &t->nodes[reps[i]];
        if (repl_follows_node(r, x->ip, x->port)) {
            return x;
        }
    }
    return NULL;
}

/* While a hand-over is not in the topology yet, the data plane's roles win:
 * true to leave them alone. The node that took over waits for its PROMOTE;
 * the one that handed over stays its replica unless the topology marks that
 * replica failed (it died before the promotion committed: the slots come
 * back here rather than stay down). */
static bool
handover_pending(struct shard *s, const struct topo *t, int me, const struct repl *r)
{
    atomic_int *h = &tp.handover[shard_env(s)->id];
    const struct topo_node *n = &t->nodes[me];
    switch (atomic_load(h)) {
    case HANDOVER_TOOK:
        if (n->role == TOPO_REPLICA && !repl_is_replica(r)) {
            return true; /* (its PROMOTE is re-sent by the monitor) */
        }
        break;
    case HANDOVER_GAVE:
        if (n->role == TOPO_PRIMARY && repl_is_replica(r)) {
            const struct topo_node *x = followed_replica(t, (unsigned)me, r);
            if (x != NULL && !(x->flags & TOPO_F_FAIL)) {
                return true;
            }
        }
        break;
    default: return false;
    }
    atomic_store(h, HANDOVER_NONE);
    return false;
}

/* A blocked client's key: its slot served by another node now (and not being
 * imported here): MOVED, as Redis answers its blocked clients. */
static bool
blocked_elsewhere(void *arg, struct rv_str key, char *err, size_t errsz)
{
    struct shard *s = arg;
    const struct topo *t = shard_env(s)->topo;
    int me = shard_env(s)->topo_me;
    unsigned slot = slot_of(key.p, key.len);
    const struct topo_node *owner = topo_slot_node(t, slot);
    const struct topo_mig *m = t->nmigs ? topo_slot_mig(t, slot) : NULL;
    if ((owner != NULL && owner - t->nodes == me) || (m != NULL && m->imp_by == me)) {
        return false;
    }
    if (owner == NULL) {
        snprintf(err, errsz, "CLUSTERDOWN Hash slot not served");
    } else {
        snprintf(err, errsz, "MOVED %u %s:%u", slot, owner->ip, owner->port);
    }
    return true;
}

/* Slots this shard (node me, a serving primary) owned at its previous
 * reconcile that another node owns in t while it still holds keys of them,
 * unless it imports them: a SETSLOT NODE that gave a slot away with keys left
 * behind (sent to the target or to a third node). As Redis does with such
 * "dirty" slots, the keys are deleted, each logged as DEL (the expiry hook) so
 * the WAL and the replicas drop them too. They are unreachable already
 * (MOVED), so the deletion runs in slices of about a millisecond per loop
 * turn (topology_drop_step), not in one stall of hundreds of milliseconds for
 * a big slot, and a big value goes to the lazy-free thread. A slice is a run
 * of small SCAN steps, checked after each step against its time and against
 * the bytes it freed itself (the entries), so no step runs long. Meanwhile DBSIZE
 * and COUNTKEYSINSLOT count the keys not deleted yet, consistently. Slots
 * lost while the node was down are left alone (their keys stay, unreachable,
 * for `--cluster fix`). The ownership seen last and the deletion in progress
 * are per shard thread, where reconcile runs. */
static _Thread_local uint8_t owned_before[SLOT_COUNT / 8];
static _Thread_local bool owned_known;

struct orphan_drop {
    bool dirty[SLOT_COUNT];
    bool active;
    uint64_t cursor;             /* ks_scan position in database 0 */
    size_t deleted;              /* keys deleted since the walk began */
    unsigned nslots;             /* dirty slots when it (last) began */
    uint64_t slices, longest_us; /* for the log line */
    uint64_t longest_cpu_us;     /* ... and the most CPU time (the thread's) one slice took */
    struct buf *keys;            /* a slice's keys to delete, each as its length then its bytes */
};
static _Thread_local struct orphan_drop drop;

/* The calling thread's CPU time in microseconds: a slice's own cost, which
 * the wall clock overstates when the box preempts the shard. */
static uint64_t
thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define DROP_SLICE_US 1000          /* a slice's time (checked after each step) */
#define DROP_SLICE_BYTES (8u << 20) /* ... and the entries' bytes it frees */
#define DROP_STEP_COUNT 64          /* ks_scan's count per step */

static void
orphan_visit(void *arg, struct ks_entry *e)
{
    struct orphan_drop *d = arg;
    struct rv_str k = ks_entry_key(e);
    if (d->dirty[slot_of(k.p, k.len)]) {
        buf_append(d->keys, &k.len, sizeof(k.len));
        buf_append(d->keys, k.p, k.len);
    }
}

static bool
slot_dirty(const struct topo *t, int me, unsigned slot)
{
    const struct topo_mig *m;
    return t->slots[slot] != TOPO_NONE && t->slots[slot] != (uint16_t)me &&
           !((m = topo_slot_mig(t, slot)) != NULL && m->imp_by == (uint16_t)me);
}

static void
drop_orphans(struct shard *s, const struct topo *t, int me)
{
    struct ks *ks = shard_env(s)->dbs[0];
    if (ks == NULL || !ks_counts_slots(ks)) {
        return;
    }
    unsigned nslots = 0;
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++) {
        bool d = (owned_before[slot / 8] >> (slot % 8) & 1) && ks_slot_keys(ks, slot) != 0 &&
                 slot_dirty(t, me, slot);
        nslots += d && !drop.dirty[slot];
        drop.dirty[slot] |= d;
    }
    if (nslots == 0) {
        return;
    }
    /* (a walk in progress starts over: the new slots' keys may be behind it) */
    drop.cursor = 0;
    drop.nslots += nslots;
    if (!drop.active) {
        drop.active = true;
        drop.deleted = 0;
        drop.nslots = nslots;
    }
    topology_drop_step(s);
}

static void
drop_cancel(void)
{
    if (drop.active) {
        log_notice("cluster: stopped deleting the keys of slots another node owned (%zu deleted): "
                   "this shard is no longer their former primary",
                   drop.deleted);
    }
    memset(&drop, 0, sizeof(drop));
}

void
topology_drop_forget(const uint8_t *slots)
{
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++) {
        if (slots[slot / 8] >> (slot % 8) & 1) {
            drop.dirty[slot] = false;
        }
    }
}

bool
topology_drop_step(struct shard *s)
{
    if (!drop.active) {
        return false;
    }
    struct shard_env *env = shard_env(s);
    struct ks *ks = env->dbs[0];
    const struct topo *t = env->topo;
    int me = env->topo_me;
    if (ks == NULL || t == NULL || me < 0 || t->nodes[me].role != TOPO_PRIMARY) {
        drop_cancel();
        return false;
    }
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++) {
        drop.dirty[slot] = drop.dirty[slot] && slot_dirty(t, me, slot); /* (a slot came back) */
    }
    struct buf keys;
    buf_init(&keys);
    drop.keys = &keys;
    unsigned was = env->db;
    shard_use_db(env, 0); /* (the DEL records are database 0's) */
    uint64_t t0 = clock_mono_us(), c0 = thread_cpu_us();
    size_t bytes = 0;
    do {
        drop.cursor = ks_scan(ks, drop.cursor, DROP_STEP_COUNT, orphan_visit, &drop);
        for (size_t at = 0; at < keys.len;) {
            size_t len;
            memcpy(&len, keys.data + at, sizeof(len));
            at += sizeof(len);
            struct ks_entry *e = ks_peek(ks, keys.data + at, len);
            if (e != NULL) {
                bytes += ks_entry_mem(e);
                ks_evict_lazy(ks, e);
                drop.deleted++;
            }
            at += len;
        }
        keys.len = 0;
    } while (drop.cursor != 0 && bytes < DROP_SLICE_BYTES && clock_mono_us() - t0 < DROP_SLICE_US);
    uint64_t took = clock_mono_us() - t0, cpu = thread_cpu_us() - c0;
    drop.longest_us = took > drop.longest_us ? took : drop.longest_us;
    drop.longest_cpu_us = cpu > drop.longest_cpu_us ? cpu : drop.longest_cpu_us;
    drop.slices++;
    shard_use_db(env, was);
    drop.keys = NULL;
    buf_deinit(&keys);
    if (drop.cursor != 0) {
        return true;
    }
    ks_shrink_retry(ks);
    log_notice("cluster: deleted %zu keys of %u slots that another node owns now (%llu slices, "
               "the longest %llu us, %llu us of CPU)",
               drop.deleted, drop.nslots, (unsigned long long)drop.slices,
               (unsigned long long)drop.longest_us, (unsigned long long)drop.longest_cpu_us);
    memset(&drop, 0, sizeof(drop));
    return false;
}

void
topology_reconcile(struct shard *s)
{
    const struct topo *t = shard_env(s)->topo;
    int me = shard_env(s)->topo_me;
    struct repl *r = persist_repl(s);
    if (t != NULL && me >= 0 && t->nodes[me].role == TOPO_PRIMARY &&
        shard_env(s)->blocking != NULL) {
        block_redirect(s, blocked_elsewhere, s);
    }
    if (t == NULL || me < 0) {
        owned_known = false; /* (no node of this shard: nothing to compare with later) */
        if (t != NULL) {
            tpi_migcheck(s, t, me, false);
        }
        return;
    }
    if (r == NULL || handover_pending(s, t, me, r)) {
        tpi_migcheck(s, t, me, false);
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
    if (owned_known && n->role == TOPO_PRIMARY && !repl_is_replica(r)) {
        drop_orphans(s, t, me);
    } else {
        drop_cancel();
    }
    tpi_migcheck(s, t, me, n->role == TOPO_PRIMARY && !repl_is_replica(r));
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++) {
        uint8_t bit = (uint8_t)(1u << (slot % 8));
        owned_before[slot / 8] = t->slots[slot] == (uint16_t)me
                                     ? owned_before[slot / 8] | bit
                                     : owned_before[slot / 8] & (uint8_t)~bit;
    }
    owned_known = true;
}

bool
topology_shard_follows(struct shard *s)
{
    struct repl *r = persist_repl(s);
    return r != NULL && repl_is_replica(r);
}

/* Control thread: the outcome of a change proposed with no client waiting. */
void
tpi_bg_done(void *arg, const struct ctl_result *res)
{
    (void)arg;
    if (res->err != CTL_OK || res->code != 0) {
        log_warn("cluster: a topology change this host proposed by itself failed: %s %s",
                 ctl_strerror(res->err), res->msg ? res->msg : "");
    }
}

static _Atomic uint64_t promote_sent_us; /* (retries wait for the last one's answer) */

static void
promote_bg(const char *id)
{
    atomic_store(&promote_sent_us, clock_mono_us());
    struct buf b;
    buf_init(&b);
    if (topo_enc_promote(&b, id) == RV_OK) {
        tpi_propose_bg(&b);
    }
    buf_deinit(&b);
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
    atomic_store(&tp.handover[shard_env(s)->id], HANDOVER_TOOK);
    log_notice("cluster: this node (%.8s) took over from its primary; proposing it as the "
               "primary of its slots",
               t->nodes[me].id);
    promote_bg(t->nodes[me].id);
}

void
topology_replica_now(struct shard *s)
{
    const struct topo *t = shard_env(s)->topo;
    int me = shard_env(s)->topo_me;
    if (t != NULL && me >= 0 && t->nodes[me].role == TOPO_PRIMARY) {
        atomic_store(&tp.handover[shard_env(s)->id], HANDOVER_GAVE);
    }
}

void
tpi_handover_retry(void)
{
    if (clock_mono_us() - atomic_load(&promote_sent_us) < 2000000) {
        return; /* (one in flight may still commit: a duplicate would only be refused) */
    }
    for (unsigned i = 0; tp.handover != NULL && i < tp.node->nshards; i++) {
        if (atomic_load(&tp.handover[i]) == HANDOVER_TOOK) {
            log_notice("cluster: node %.8s: its promotion is not in the topology yet; sent again",
                       tp.node->ids[i]);
            promote_bg(tp.node->ids[i]);
        }
    }
}

/* A proposal with no client: on a host that does not lead the log it is
 * sent to the leader's host (RVCLUSTER PROPOSE), as a client's would be. */
static void
bg_done(void *arg, const struct ctl_result *res)
{
    struct request *rq = arg;
    if (res->err == CTL_ENOTLEADER && forward(rq, res->leader_id)) {
        return; /* (forward owns rq now) */
    }
    tpi_bg_done(NULL, res);
    request_free(rq);
}

void
tpi_propose_bg(const struct buf *b)
{
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        return; /* (the control plane is being replaced: a join) */
    }
    struct request *rq = rv_calloc(1, sizeof(*rq));
    buf_init(&rq->next);
    uint32_t len = (uint32_t)b->len;
    buf_append(&rq->next, &len, 4);
    buf_append(&rq->next, b->data, len);
    if (tp.ctl == NULL || ctl_propose(tp.ctl, b->data, b->len, bg_done, rq) != RV_OK) {
        log_warn("cluster: cannot propose a topology change now");
        request_free(rq);
    }
    pthread_rwlock_unlock(&tp.lock);
}

bool
tpi_lock_for(struct conn *c)
{
    if (pthread_rwlock_tryrdlock(&tp.lock) != 0) {
        reply_errf(c, "TRYAGAIN this host is joining another host's cluster");
        return false;
    }
    if (tp.ctl == NULL) {
        pthread_rwlock_unlock(&tp.lock);
        reply_errf(c, "CLUSTERDOWN this host's control plane is not running (see the log)");
        return false;
    }
    return true;
}
