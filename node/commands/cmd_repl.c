/* node/commands/cmd_repl.c: the replication commands: REPLICAOF/SLAVEOF,
 * ROLE, WAIT, WAITAOF, REPLCONF, RVSYNC and FAILOVER. Replication
 * (replication/repl.h) does the work on each shard; these parse, reach the
 * other shards with shard_post() and write Redis's replies. */
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rv_err.h"
#include "node/commands/cmds.h"

#include "base/tls.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/acl.h"
#include "node/persist/persist.h"
#include "replication/repl.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- REPLICAOF */

struct follow_msg {
    struct shard_msg m;
    bool no_one;
    char host[256];
    int port;
};

static void
run_follow(struct shard *s, struct shard_msg *mm)
{
    struct follow_msg *m = (struct follow_msg *)mm;
    struct repl *r = persist_repl(s);
    if (r != NULL) {
        (void)repl_follow(r, m->no_one, m->host, m->port); /* a refusal is logged */
    }
    rv_free(m);
}

/* The client's own shard first, at once: its refusal is the command's error
 * and nothing else changes; then the others. */
static int
post_follow(struct shard *from, bool no_one, const char *host, int port)
{
    struct node *n = shard_env(from)->node;
    struct repl *own = persist_repl(from);
    if (own != NULL && repl_follow(own, no_one, host ? host : "", port) != RV_OK) {
        return RV_EIO;
    }
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] == from) {
            continue;
        }
        struct follow_msg *m = rv_calloc(1, sizeof(*m));
        m->m.run = run_follow;
        m->no_one = no_one;
        snprintf(m->host, sizeof(m->host), "%s", host ? host : "");
        m->port = port;
        shard_post(n->shards[i], &m->m);
    }
    return RV_OK;
}

void
cmd_replicaof(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    if (c->env->topo != NULL) {
        reply_errf(c, "ERR REPLICAOF not allowed in cluster mode.");
        return;
    }
    if (cmd_arg_is(argv[1], "no") && cmd_arg_is(argv[2], "one")) {
        if (repl_is_replica(r)) {
            log_notice("MASTER MODE enabled (user request from '%s')", c->addr);
        }
        if (post_follow(c->shard, true, NULL, 0) != RV_OK) {
            reply_errf(c, "ERR REPLICAOF NO ONE refused: %s; this node stays a replica",
                       repl_state_error(r));
            return;
        }
        repl_publish_role(r, "", false);
        reply_ok(c);
        return;
    }
    int64_t port;
    if (!cmd_arg_int(argv[2], &port) || port < 0 || port > 65535) {
        reply_errf(c, "ERR Invalid master port");
        return;
    }
    char host[256];
    snprintf(host, sizeof(host), "%.*s", (int)(argv[1].len > 255 ? 255 : argv[1].len), argv[1].p);
    if (r && repl_follows(r, host, (int)port)) {
        reply_simple(c, "OK Already connected to specified master");
        return;
    }
    log_notice("REPLICAOF %s:%d enabled (user request from '%s')", host, (int)port, c->addr);
    (void)post_follow(c->shard, false, host, (int)port); /* a demotion is not refused */
    char hp[300];
    snprintf(hp, sizeof(hp), "%s %d", host, (int)port);
    repl_publish_role(r, hp, false);
    reply_ok(c);
}

/* ---------------------------------------------------------------- ROLE */

struct role_ctx {
    struct conn *c;
    size_t n;
};

static void
role_replica(void *arg, const char *ip, int port, uint64_t ack)
{
    struct role_ctx *x = arg;
    char p[16], a[24];
    snprintf(p, sizeof(p), "%d", port);
    snprintf(a, sizeof(a), "%" PRIu64, ack);
    reply_array(x->c, 3);
    reply_bulk_cstr(x->c, ip);
    reply_bulk_cstr(x->c, p);
    reply_bulk_cstr(x->c, a);
    x->n++;
}

bool
cmd_repl_loading_primary(struct conn *c, char *host, size_t hostsz, int *port)
{
    if (persist_repl(c->shard) != NULL || !persist_hot(c->persist)->loading) {
        return false;
    }
    const char *cfg = c->env->cfg->repl.replicaof;
    const char *sp = cfg ? strchr(cfg, ' ') : NULL;
    if (sp == NULL || (size_t)(sp - cfg) >= hostsz) {
        return false;
    }
    memcpy(host, cfg, (size_t)(sp - cfg));
    host[sp - cfg] = '\0';
    *port = atoi(sp + 1);
    return host[0] != '\0' && *port > 0;
}

void
cmd_role(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    struct repl_role ro = { 0 };
    char host[256];
    int port;
    if (cmd_repl_loading_primary(c, host, sizeof(host), &port)) {
        /* Redis's loading replica: no link yet, so state connect, offset -1 */
        reply_array(c, 5);
        reply_bulk_cstr(c, "slave");
        reply_bulk_cstr(c, host);
        reply_int(c, port);
        reply_bulk_cstr(c, "connect");
        reply_int(c, -1);
        return;
    }
    if (r) {
        repl_role(r, &ro);
    }
    if (ro.replica) {
        reply_array(c, 5);
        reply_bulk_cstr(c, "slave");
        reply_bulk_cstr(c, ro.host);
        reply_int(c, ro.port);
        reply_bulk_cstr(c, ro.state);
        reply_int(c, (int64_t)ro.offset);
        return;
    }
    reply_array(c, 3);
    reply_bulk_cstr(c, "master");
    reply_int(c, (int64_t)ro.offset);
    size_t h = reply_defer(c);
    struct role_ctx x = { c, 0 };
    if (r) {
        repl_each_replica(r, role_replica, &x);
    }
    reply_defer_array(c, h, x.n);
}

/* ---------------------------------------------------------------- WAIT */

static bool
parse_wait_args(struct conn *c, struct rv_str *argv, int n, int64_t *out)
{
    for (int i = 0; i < n; i++) {
        if (!cmd_arg_int(argv[i], &out[i])) {
            reply_errf(c, "ERR value is not an integer or out of range");
            return false;
        }
    }
    if (out[n - 1] < 0) {
        reply_errf(c, "ERR timeout is negative");
        return false;
    }
    return true;
}

void
cmd_wait(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    int64_t a[2];
    if (!parse_wait_args(c, argv + 1, 2, a)) {
        return;
    }
    long local, acked;
    switch (repl_wait(r, c, c->own_lsn, false, (long)a[0], -1, a[1], c->flags & CONN_IN_EXEC,
                      &local, &acked)) {
    case REPL_WAIT_REPLICA:
        reply_errf(c,
                   "ERR WAIT cannot be used with replica instances. Please also note that since "
                   "Redis 4.0 if a replica is configured to be writable (which is not the default) "
                   "writes to replicas are just local and are not propagated.");
        return;
    case REPL_WAIT_DONE: reply_int(c, acked); return;
    case REPL_WAIT_BLOCKED:
        c->flags |= CONN_BLOCKED; /* replication's client_wake replies */
        return;
    case REPL_WAIT_NO_WAL: return; /* (WAITAOF only) */
    }
}

void
cmd_waitaof(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    int64_t a[3];
    if (!parse_wait_args(c, argv + 1, 3, a)) {
        return;
    }
    long local, acked;
    switch (repl_wait(r, c, c->own_lsn, true, (long)a[1], (long)a[0], a[2], c->flags & CONN_IN_EXEC,
                      &local, &acked)) {
    case REPL_WAIT_REPLICA:
        reply_errf(c, "ERR WAITAOF cannot be used with replica instances. Please also note that "
                      "writes to replicas are just local and are not propagated.");
        return;
    case REPL_WAIT_NO_WAL:
        reply_errf(c,
                   "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.");
        return;
    case REPL_WAIT_DONE:
        reply_array(c, 2);
        reply_int(c, local);
        reply_int(c, acked);
        return;
    case REPL_WAIT_BLOCKED:
        c->flags |= CONN_BLOCKED; /* replication's client_wake replies */
        return;
    }
}

/* ---------------------------------------------------------------- handshake commands */

void
cmd_replconf(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc % 2 == 0) {
        reply_errf(c, "ERR syntax error");
        return;
    }
    for (int i = 1; i < argc; i += 2) {
        int64_t v;
        if (cmd_arg_is(argv[i], "listening-port")) {
            if (!cmd_arg_int(argv[i + 1], &v) || v < 0 || v > 65535) {
                reply_errf(c, "ERR value is not an integer or out of range");
                return;
            }
        } else if (cmd_arg_is(argv[i], "ack") || cmd_arg_is(argv[i], "getack")) {
            return; /* Redis sends no reply to these */
        } else if (!cmd_arg_is(argv[i], "ip-address") && !cmd_arg_is(argv[i], "capa") &&
                   !cmd_arg_is(argv[i], "rdb-only") && !cmd_arg_is(argv[i], "rdb-filter-only") &&
                   !cmd_arg_is(argv[i], "rdb-channel")) {
            reply_errf(c, "ERR Unrecognized REPLCONF option: %.*s",
                       (int)(argv[i].len > 64 ? 64 : argv[i].len), argv[i].p);
            return;
        }
    }
    reply_ok(c);
}

/* RVSYNC: the connection becomes a replication link. Its unwritten replies
 * (AUTH, REPLCONF pipelined before) go first on the link, then +OK, then
 * frames; the client connection itself closes without touching the socket. */
void
cmd_rvsync(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    if (c->flags & (CONN_MULTI | CONN_IN_EXEC | CONN_REPLAY)) {
        reply_errf(c, "ERR RVSYNC not allowed here");
        return;
    }
    int fd = dup(c->fd);
    if (fd < 0) {
        reply_errf(c, "ERR cannot take over the connection");
        return;
    }
    reply_ok(c);
    struct buf pre;
    buf_init(&pre);
    buf_append(&pre, c->wbuf.data + c->wbuf.off, c->wbuf.len - c->wbuf.off);
    c->wbuf.off = c->wbuf.len;
    c->flags |= CONN_CLOSE_ASAP;
    event_del(&c->rev);
    struct repl_client_info ci = { c->id, c->addr, c->laddr, acl_user_name(c->user), c->ctime_ms };
    struct tls *tls = c->tls;
    if (tls != NULL) {
        tls_set_fd(tls, fd); /* the link's descriptor; the client's closes untouched */
        c->tls = NULL;
    }
    repl_accept(r, fd, tls, &ci, &pre);
}

/* ---------------------------------------------------------------- FAILOVER */

struct fo_msg {
    struct shard_msg m;
    struct repl_failover_req q;
};

static void
run_fo(struct shard *s, struct shard_msg *mm)
{
    struct fo_msg *m = (struct fo_msg *)mm;
    struct repl *r = persist_repl(s);
    if (r != NULL) {
        repl_failover_apply(r, &m->q);
    }
    rv_free(m);
}

/* The arguments into t; false with the error replied. */
static bool
failover_args(struct conn *c, int argc, struct rv_str *argv, struct repl_failover_req *t)
{
    for (int i = 1; i < argc; i++) {
        int64_t v;
        if (cmd_arg_is(argv[i], "to") && i + 2 < argc && !t->to) {
            if (!cmd_arg_int(argv[i + 2], &v) || v <= 0 || v > 65535) {
                reply_errf(c, "ERR value is not an integer or out of range");
                return false;
            }
            t->to = true;
            snprintf(t->host, sizeof(t->host), "%.*s",
                     (int)(argv[i + 1].len > 255 ? 255 : argv[i + 1].len), argv[i + 1].p);
            t->port = (int)v;
            i += 2;
        } else if (cmd_arg_is(argv[i], "force") && !t->force) {
            t->force = true;
        } else if (cmd_arg_is(argv[i], "abort") && !t->abort) {
            t->abort = true;
        } else if (cmd_arg_is(argv[i], "timeout") && i + 1 < argc && t->timeout_ms == 0) {
            if (!cmd_arg_int(argv[i + 1], &v)) {
                reply_errf(c, "ERR value is not an integer or out of range");
                return false;
            }
            if (v <= 0) {
                reply_errf(c, "ERR FAILOVER timeout must be greater than 0");
                return false;
            }
            t->timeout_ms = v;
            i++;
        } else {
            reply_errf(c, "ERR syntax error");
            return false;
        }
    }
    return true;
}

void
cmd_failover(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = persist_repl(c->shard);
    struct repl_failover_req t = { 0 };
    if (!failover_args(c, argc, argv, &t)) {
        return;
    }
    if (t.abort) {
        if (t.to || t.force || t.timeout_ms) {
            reply_errf(c, "ERR syntax error");
            return;
        }
        if (!repl_failover_active(r)) {
            reply_errf(c, "ERR FAILOVER is not in progress.");
            return;
        }
    } else {
        if (t.force && (!t.to || t.timeout_ms == 0)) {
            reply_errf(c, "ERR FAILOVER with force option requires both a timeout and target HOST "
                          "and IP.");
            return;
        }
        const char *e = repl_failover_check(r, &t);
        if (e != NULL) {
            reply_errf(c, "%s", e + 4);
            return;
        }
    }
    reply_ok(c);
    struct node *n = c->env->node;
    /* cluster mode: each shard is a node of its own (CLUSTER FAILOVER relays
     * FAILOVER TO to the primary node's port), so only this one */
    bool only_mine = c->env->topo != NULL;
    for (unsigned i = 0; i < n->nshards; i++) {
        if (only_mine && n->shards[i] != c->shard) {
            continue;
        }
        struct fo_msg *m = rv_malloc(sizeof(*m));
        m->q = t;
        m->m.run = run_fo;
        if (n->shards[i] == c->shard) {
            run_fo(c->shard, &m->m);
        } else {
            shard_post(n->shards[i], &m->m);
        }
    }
}
