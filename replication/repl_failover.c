/* replication/repl_failover.c: FAILOVER [TO host port [FORCE]] [ABORT]
 * [TIMEOUT ms], a coordinated switch-over, run by every shard on its own:
 *
 *   waiting-for-sync      writes are paused (the client's command is parsed
 *                         again later), until the target replica acked every
 *                         record (or the timeout: abort, or with FORCE go on)
 *   failover-in-progress  the shard sends Promote to the target, turns itself
 *                         into a replica of it (it took its last write before
 *                         the pause, and the target has it), resumes the
 *                         paused clients (they now get -READONLY)
 *
 * The target promotes itself (new replid, the old one as replid2, epoch + 1)
 * and the old primary follows it with a partial resync. */
#include "replication/repl_int.h"

#include "node/base/log.h"
#include "node/base/mem.h"
#include "node/cmd.h"
#include "node/cmds.h"
#include "node/conn.h"
#include "node/node.h"
#include "node/persist.h"
#include "node/persist_int.h"
#include "node/reply.h"
#include "node/shard.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct fo_msg {
    struct shard_msg m;
    bool abort;
    bool to;
    char host[256];
    int port;
    bool force;
    int64_t timeout_ms;
};

const char *
failover_state_name(const struct repl *r)
{
    switch (r->fo.st) {
    case FO_WAIT: return "waiting-for-sync";
    case FO_PROGRESS: return "failover-in-progress";
    default: return "no-failover";
    }
}

/* The link of the target (TO host port: shard i's replica listens on port + i). */
static struct link *
find_target(struct repl *r, bool to, const char *host, int port)
{
    for (struct link *l = r->links; l; l = l->next) {
        if (!to) {
            if (l->st == LINK_ONLINE) {
                return l;
            }
            continue;
        }
        if (strcmp(l->ip, host) == 0 && l->port == port + (int)shard_id(r->s)) {
            return l;
        }
    }
    return NULL;
}

/* Paused writers go on (parsed again: they now run, or get -READONLY). */
static void
resume_paused(struct repl *r)
{
    for (struct waiter **pp = &r->waiters; *pp;) {
        struct waiter *w = *pp;
        if (!w->paused) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        struct conn *c = w->c;
        rv_free(w);
        c->flags &= ~CONN_BLOCKED;
        conn_resume(c);
        shard_want_write(c->shard, c);
    }
}

static void
fo_end(struct repl *r, const char *why)
{
    if (why) {
        log_warn("[shard %u] FAILOVER aborted: %s", shard_id(r->s), why);
    }
    r->fo.st = FO_NONE;
    resume_paused(r);
}

bool
failover_pause_write(struct repl *r, struct conn *c)
{
    if (r->fo.st == FO_NONE || (c->flags & (CONN_MULTI | CONN_IN_EXEC | CONN_REPLAY))) {
        return false;
    }
    struct waiter *w = rv_calloc(1, sizeof(*w));
    w->c = c;
    w->paused = true;
    w->next = r->waiters;
    r->waiters = w;
    c->rbuf.off = c->cmd_start;      /* parse the command again once resumed */
    c->flags |= CONN_BLOCKED;
    return true;
}

static void
hand_over(struct repl *r, struct link *l)
{
    char host[64];
    int port = l->port - (int)shard_id(r->s);
    snprintf(host, sizeof(host), "%s", l->ip);
    r->fo.st = FO_PROGRESS;
    Promote pr = PROMOTE__INIT;
    ReplMsg m = REPL_MSG__INIT;
    pr.lsn = repl_last_lsn(r);
    m.m_case = REPL_MSG__M_PROMOTE;
    m.promote = &pr;
    repl_send(&l->out, &m);
    primary_flush_link(l);
    log_notice("[shard %u] FAILOVER: replica %s:%d has every record up to LSN %" PRIu64
               "; it takes over and this shard follows it", shard_id(r->s), host, port, pr.lsn);
    /* Becoming a replica closes the links after writing what they hold. */
    replica_follow(r, host, port);
    repl_unblock_demoted(r);
    repl_role_hook(r, "master", "slave", host, port);
    r->fo.st = FO_NONE;
    resume_paused(r);
}

void
failover_check(struct repl *r, int64_t now)
{
    if (r->fo.st != FO_WAIT) {
        return;
    }
    struct link *l = find_target(r, r->fo.to, r->fo.host, r->fo.port);
    if (l == NULL || l->st != LINK_ONLINE) {
        fo_end(r, "the target replica disconnected");
        return;
    }
    if (l->ack >= repl_last_lsn(r)) {
        hand_over(r, l);
        return;
    }
    if (r->fo.deadline_ms > 0 && now >= r->fo.deadline_ms) {
        if (r->fo.force) {
            log_warn("[shard %u] FAILOVER: timeout with FORCE: the target is %" PRIu64
                     " records behind and takes over anyway", shard_id(r->s),
                     repl_last_lsn(r) - l->ack);
            hand_over(r, l);
        } else {
            fo_end(r, "timeout waiting for the target replica to catch up");
        }
    }
}

/* Validate on this shard; NULL when it can start, else Redis's error text. */
static const char *
fo_check_start(struct repl *r, const struct fo_msg *m)
{
    if (r->replica) {
        return "ERR FAILOVER is not valid when server is a replica.";
    }
    if (r->fo.st != FO_NONE) {
        return "ERR FAILOVER already in progress.";
    }
    if (r->nlinks == 0) {
        return "ERR FAILOVER requires connected replicas.";
    }
    struct link *l = find_target(r, m->to, m->host, m->port);
    if (l == NULL) {
        return m->to ? "ERR FAILOVER target HOST and PORT is not a replica."
                     : "ERR FAILOVER requires connected replicas.";
    }
    if (l->st != LINK_ONLINE) {
        return "ERR FAILOVER target replica is not online.";
    }
    return NULL;
}

static void
fo_apply(struct repl *r, const struct fo_msg *m)
{
    if (m->abort) {
        if (r->fo.st == FO_WAIT) {
            fo_end(r, "FAILOVER ABORT");
        }
        return;
    }
    const char *e = fo_check_start(r, m);
    if (e != NULL) {
        log_warn("[shard %u] FAILOVER not started: %s", shard_id(r->s), e + 4);
        return;
    }
    r->fo.st = FO_WAIT;
    r->ask_ack = true;
    r->fo.to = m->to;
    snprintf(r->fo.host, sizeof(r->fo.host), "%s", m->host);
    r->fo.port = m->port;
    r->fo.force = m->force;
    r->fo.deadline_ms = m->timeout_ms > 0 ? shard_now_ms(r->s) + m->timeout_ms : 0;
    repl_guard_update(r);
    log_notice("[shard %u] FAILOVER started: writes paused until the target replica has LSN %"
               PRIu64, shard_id(r->s), repl_last_lsn(r));
    failover_check(r, shard_now_ms(r->s));
}

static void
run_fo(struct shard *s, struct shard_msg *mm)
{
    struct fo_msg *m = (struct fo_msg *)mm;
    struct repl *r = repl_of(s);
    if (r != NULL) {
        fo_apply(r, m);
    }
    rv_free(m);
}

void
cmd_failover(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = repl_of(c->shard);
    struct fo_msg t = { 0 };
    t.timeout_ms = 0;
    for (int i = 1; i < argc; i++) {
        int64_t v;
        if (cmd_arg_is(argv[i], "to") && i + 2 < argc && !t.to) {
            if (!cmd_arg_int(argv[i + 2], &v) || v <= 0 || v > 65535) {
                reply_errf(c, "ERR value is not an integer or out of range");
                return;
            }
            t.to = true;
            snprintf(t.host, sizeof(t.host), "%.*s", (int)(argv[i + 1].len > 255 ? 255 : argv[i + 1].len),
                     argv[i + 1].p);
            t.port = (int)v;
            i += 2;
        } else if (cmd_arg_is(argv[i], "force") && !t.force) {
            t.force = true;
        } else if (cmd_arg_is(argv[i], "abort") && !t.abort) {
            t.abort = true;
        } else if (cmd_arg_is(argv[i], "timeout") && i + 1 < argc && t.timeout_ms == 0) {
            if (!cmd_arg_int(argv[i + 1], &v)) {
                reply_errf(c, "ERR value is not an integer or out of range");
                return;
            }
            if (v <= 0) {
                reply_errf(c, "ERR FAILOVER timeout must be greater than 0");
                return;
            }
            t.timeout_ms = v;
            i++;
        } else {
            reply_errf(c, "ERR syntax error");
            return;
        }
    }
    if (t.abort) {
        if (t.to || t.force || t.timeout_ms) {
            reply_errf(c, "ERR syntax error");
            return;
        }
        if (r->fo.st == FO_NONE) {
            reply_errf(c, "ERR FAILOVER is not in progress.");
            return;
        }
    } else {
        if (t.force && (!t.to || t.timeout_ms == 0)) {
            reply_errf(c, "ERR FAILOVER with force option requires both a timeout and target HOST "
                          "and IP.");
            return;
        }
        const char *e = fo_check_start(r, &t);
        if (e != NULL) {
            reply_errf(c, "%s", e + 4);
            return;
        }
    }
    reply_ok(c);
    struct node *n = shard_node(c->shard);
    for (unsigned i = 0; i < n->nshards; i++) {
        struct fo_msg *m = rv_malloc(sizeof(*m));
        *m = t;
        m->m.run = run_fo;
        if (n->shards[i] == c->shard) {
            run_fo(c->shard, &m->m);
        } else {
            shard_post(n->shards[i], &m->m);
        }
    }
}
