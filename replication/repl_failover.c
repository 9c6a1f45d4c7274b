/* replication/repl_failover.c: FAILOVER [TO host port [FORCE]] [ABORT]
 * [TIMEOUT ms], a coordinated switch-over, run by every shard on its own:
 *
 *   waiting-for-sync      writes are paused (the client's command is parsed
 *                         again later), until the target replica acked every
 *                         record (or the timeout: abort, or with FORCE go on)
 *   failover-in-progress  the shard sends Promote to the target and turns
 *                         itself into a replica of it (it took its last write
 *                         before the pause, and the target has it); writes
 *                         stay paused until one of:
 *     done                the target's new history (a newer epoch) reached
 *                         this shard through its link: paused writers get
 *                         -READONLY; the new role goes to CONFIG and the
 *                         config file (shard 0)
 *     rolled back         the target connected back to this shard as its
 *                         replica at the old epoch (it refused Promote or
 *                         never got it; the link that carried it is gone, so
 *                         it never will): primary again, same history, and
 *                         the paused writers run
 *     no word             FO_CONFIRM_MS passed with neither: paused writers
 *                         get -READONLY, the shard stays the target's replica
 *                         (no node takes writes it could lose) and still
 *                         rolls back if the target comes back unpromoted
 *
 * The target promotes itself (new replid, the old one as replid2, a new
 * epoch) and the old primary follows it with a partial resync. */
#include "replication/repl_int.h"

#include "base/log.h"
#include "base/mem.h"
#include "base/rv_err.h"
#include "wal/wal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* How long a handed-over shard holds its writers for the target's answer. */
#define FO_CONFIRM_MS 5000

const char *
failover_state_name(const struct repl *r)
{
    switch (r->fo.st) {
    case FO_WAIT: return "waiting-for-sync";
    case FO_PROGRESS: return "failover-in-progress";
    default: return "no-failover";
    }
}

/* The port of this shard's counterpart on a host whose base port is base: in
 * Sentinel mode shard i of one process pairs with shard i of the other (base
 * + i); in cluster mode a link joins two nodes whatever their shard numbers,
 * and every address is that node's own port. */
static int
node_port(const struct repl *r, int base)
{
    return r->hi.cluster ? base : base + (int)r->hi.shard;
}

/* The link of the target of FAILOVER [TO host port]. */
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
        if (strcmp(l->ip, host) == 0 && l->port == node_port(r, port)) {
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
        void *c = w->c;
        rv_free(w);
        r->ops->client_wake(r->host, c, REPL_WAKE_RESUME, 0, 0, NULL);
    }
}

static void
fo_end(struct repl *r, const char *why)
{
    if (why) {
        log_warn("[shard %u] FAILOVER aborted: %s", r->hi.shard, why);
    }
    r->fo.st = FO_NONE;
    resume_paused(r);
}

bool
failover_pause_write(struct repl *r, void *c)
{
    if (r->fo.st == FO_NONE || r->fo.expired ||
        (r->ops->client_state(r->host, c) & (REPL_CL_MULTI | REPL_CL_EXEC | REPL_CL_REPLAY))) {
        return false;
    }
    struct waiter *w = rv_calloc(1, sizeof(*w));
    w->c = c;
    w->paused = true;
    w->next = r->waiters;
    r->waiters = w;
    r->ops->client_pause(r->host, c); /* parse the command again once resumed */
    return true;
}

static void
hand_over(struct repl *r, struct link *l)
{
    char host[64];
    int port = r->hi.cluster ? l->port : l->port - (int)r->hi.shard; /* (cluster: that node) */
    snprintf(host, sizeof(host), "%s", l->ip);
    struct repl_msg m = { .kind = RM_PROMOTE };
    /* With FORCE the target lacks the records past its ack: it takes over there. */
    m.u.promote = l->ack < repl_last_lsn(r) ? l->ack : repl_last_lsn(r);
    if (!wal_failpoint_hit("failover-promote-unsent")) { /* tests: the link closes first */
        repl_msg_put(&l->out, &m);
        primary_flush_link(l);
    }
    log_notice("[shard %u] FAILOVER: replica %s:%d has every record up to LSN %" PRIu64
               "; it takes over and this shard follows it",
               r->hi.shard, host, port, m.u.promote);
    r->fo.st = FO_PROGRESS;
    r->fo.epoch0 = r->epoch;
    memcpy(r->fo.replid0, r->replid, 41);
    snprintf(r->fo.target_id, sizeof(r->fo.target_id), "%s", l->id);
    r->fo.expired = false;
    r->fo.deadline_ms = repl_now(r) + FO_CONFIRM_MS;
    /* Becoming a replica closes the links after writing what they hold. */
    if (r->hi.cluster) {
        replica_follow_node(r, host, port);
    } else {
        replica_follow(r, host, port);
    }
    (void)repl_save_state(r); /* a restart now follows the target (the safe side) */
    repl_unblock_demoted(r);
    repl_guard_update(r);
    repl_role_hook(r, "master", "slave", host, port);
}

/* The target's history reached this shard: the failover lasts. */
static void
fo_done(struct repl *r)
{
    log_notice("[shard %u] FAILOVER done: %s:%d took over (epoch %" PRIu64 ")", r->hi.shard,
               r->mhost, node_port(r, r->mport), r->epoch);
    r->fo.st = FO_NONE;
    repl_guard_update(r);
    resume_paused(r);
    if (r->hi.shard == 0) {
        char hp[300];
        snprintf(hp, sizeof(hp), "%s %d", r->mhost, r->mport);
        repl_publish_role(r, hp, true);
    }
}

/* The target did not take over: primary again, on the same history. */
static void
fo_roll_back(struct repl *r, const char *why)
{
    log_warn("[shard %u] FAILOVER rolled back: %s; this shard is the primary again (epoch %" PRIu64
             ")",
             r->hi.shard, why, r->epoch);
    replica_stop(r);
    r->replica = false;
    r->ops->set_role(r->host, false);
    r->mhost[0] = '\0';
    repl_stale_update(r);
    repl_backlog_start(r);
    (void)repl_save_state(r); /* if this fails a restart follows the target: safe */
    r->fo.st = FO_NONE;
    repl_guard_update(r);
    resume_paused(r);
    repl_role_hook(r, "slave", "master", NULL, 0);
}

void
failover_hello(struct repl *r, const char *ip, const struct repl_hello *h)
{
    if (r->fo.st != FO_PROGRESS || h->epoch > r->fo.epoch0 || r->epoch != r->fo.epoch0) {
        return;
    }
    /* The target's run id, or its address (a restarted target has a new run id). */
    int port = node_port(r, r->mport);
    bool target = (h->replica_id && strcmp(h->replica_id, r->fo.target_id) == 0) ||
                  (strcmp(ip, r->mhost) == 0 && (int)h->listening_port == port);
    if (!target) {
        return;
    }
    fo_roll_back(r, "the target came back as a replica at the old epoch (it refused Promote or "
                    "never got it)");
}

void
failover_cancel(struct repl *r, const char *why)
{
    if (r->fo.st == FO_NONE) {
        return;
    }
    log_notice("[shard %u] FAILOVER ended by %s", r->hi.shard, why);
    r->fo.st = FO_NONE;
    repl_guard_update(r);
    resume_paused(r);
}

bool
failover_take_over(struct repl *r, uint64_t lsn, char *err, size_t errsz)
{
    wal_failpoint("failover-promote-crash"); /* tests: the target dies on Promote */
    if (wal_failpoint_hit("failover-promote-refused")) {
        snprintf(err, errsz, "FAILOVER: refused to take over (failpoint)");
        return false;
    }
    if (r->up.st != UP_ONLINE || repl_last_lsn(r) < lsn) {
        /* We lack records it counted on: refuse; the link closes, and the
         * old primary rolls back when this shard connects to it again. */
        snprintf(err, errsz,
                 "FAILOVER: asked to take over at LSN %" PRIu64 " but only LSN %" PRIu64
                 " was applied",
                 lsn, repl_last_lsn(r));
        return false;
    }
    char from[300];
    snprintf(from, sizeof(from), "%s:%d", r->mhost, node_port(r, r->mport));
    if (repl_promote(r) != RV_OK) {
        snprintf(err, errsz, "FAILOVER: refused to take over: %s", r->state_err);
        return false;
    }
    log_notice("[shard %u] FAILOVER: took over from %s at LSN %" PRIu64, r->hi.shard, from, lsn);
    repl_role_hook(r, "slave", "master", NULL, 0);
    if (r->hi.shard == 0) {
        repl_publish_role(r, "", true);
    }
    return true;
}

void
failover_check(struct repl *r, int64_t now)
{
    if (r->fo.st == FO_PROGRESS) {
        if (r->epoch != r->fo.epoch0 || strcmp(r->replid, r->fo.replid0) != 0) {
            fo_done(r);
        } else if (!r->fo.expired && now >= r->fo.deadline_ms) {
            log_warn("[shard %u] FAILOVER: no word from the target within %d ms: this shard stays "
                     "its replica (REPLICAOF NO ONE here takes writes back)",
                     r->hi.shard, FO_CONFIRM_MS);
            r->fo.expired = true;
            resume_paused(r); /* they now get -READONLY */
        }
        return;
    }
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
                     " records behind and takes over anyway",
                     r->hi.shard, repl_last_lsn(r) - l->ack);
            hand_over(r, l);
        } else {
            fo_end(r, "timeout waiting for the target replica to catch up");
        }
    }
}

bool
repl_failover_active(const struct repl *r)
{
    return r->fo.st != FO_NONE;
}

const char *
repl_failover_check(struct repl *r, const struct repl_failover_req *m)
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

void
repl_failover_apply(struct repl *r, const struct repl_failover_req *m)
{
    if (m->abort) {
        if (r->fo.st == FO_WAIT) {
            fo_end(r, "FAILOVER ABORT");
        }
        return;
    }
    const char *e = repl_failover_check(r, m);
    if (e != NULL) {
        log_warn("[shard %u] FAILOVER not started: %s", r->hi.shard, e + 4);
        return;
    }
    r->fo.st = FO_WAIT;
    r->fo.expired = false;
    r->ask_ack = true;
    r->fo.to = m->to;
    snprintf(r->fo.host, sizeof(r->fo.host), "%s", m->host);
    r->fo.port = m->port;
    r->fo.force = m->force;
    r->fo.deadline_ms = m->timeout_ms > 0 ? repl_now(r) + m->timeout_ms : 0;
    repl_guard_update(r);
    log_notice(
        "[shard %u] FAILOVER started: writes paused until the target replica has LSN %" PRIu64,
        r->hi.shard, repl_last_lsn(r));
    failover_check(r, repl_now(r));
}
