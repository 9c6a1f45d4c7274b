/* replication/repl.c: per-shard replication state, the hooks persist.c
 * calls, and the commands (REPLICAOF/SLAVEOF, ROLE, WAIT, WAITAOF, REPLCONF,
 * RVSYNC) and INFO lines. The primary side is repl_primary.c, the replica
 * side repl_replica.c; docs/replication.md describes the protocol. */
#include "replication/repl_int.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "node/features/block.h"
#include "node/core/cmd.h"
#include "node/commands/cmds.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/features/hook.h"
#include "node/keyspace/ks.h"
#include "node/core/node.h"
#include "node/persist/persist.h"
#include "node/persist/persist_int.h"
#include "node/persist/replay.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "wal/wal.h"

#include <event2/event.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct repl *
repl_of(struct shard *s)
{
    struct persist *p = persist_of(s);
    return p ? p->repl : NULL;
}

uint64_t
repl_last_lsn(struct repl *r)
{
    return persist_last_lsn(r->s);
}

void
repl_new_replid(struct repl *r)
{
    rand_hex(r->replid, 40);
}

void
repl_backlog_start(struct repl *r)
{
    if (r->hot.backlog) {
        return;
    }
    bl_init(&r->bl, (size_t)shard_cfg(r->s)->repl_backlog_size, repl_last_lsn(r) + 1);
    r->hot.backlog = true;
    r->p->hot.log = true;            /* memory mode: records are built from now on */
}

/* With durability on, a shard's replication state lives in
 * <shard dir>/repl.state, one line:
 *
 *   replid epoch replid2 second_off fenced_epoch primary|replica host port
 *
 * (older files hold only "replid epoch"). It is written to a temporary file,
 * fsynced, renamed and the directory fsynced, before the node acts on it
 * where acting is the dangerous direction (a promotion, repl_promote), or
 * right after where it is the safe one (a demotion, fencing: refusing writes
 * is never wrong). The role lets a node restarted without a replicaof in its
 * configuration follow the primary it followed, rather than come back as a
 * writable primary under that primary's history. */
struct repl_state {
    char replid[41], replid2[41];
    uint64_t epoch, fenced_epoch;
    int64_t second_off;
    bool replica;
    char host[256];
    int port;
};

static void
state_of(const struct repl *r, struct repl_state *st)
{
    memcpy(st->replid, r->replid, 41);
    memcpy(st->replid2, r->replid2, 41);
    st->epoch = r->epoch;
    st->fenced_epoch = r->fenced_epoch;
    st->second_off = r->second_off;
    st->replica = r->replica;
    snprintf(st->host, sizeof(st->host), "%s", r->replica && r->mhost[0] ? r->mhost : "-");
    st->port = r->replica ? r->mport : 0;
}

static int
save_state_as(struct repl *r, const struct repl_state *st)
{
    if (r->p->mode == WAL_MEMORY) {
        return RV_OK;
    }
    char path[4200], tmp[4210];
    snprintf(path, sizeof(path), "%s/repl.state", persist_dir(r->s));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        goto fail;
    }
    fprintf(f, "%s %" PRIu64 " %s %" PRId64 " %" PRIu64 " %s %s %d\n", st->replid, st->epoch,
            st->replid2, st->second_off, st->fenced_epoch, st->replica ? "replica" : "primary",
            st->host, st->port);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0 || wal_fsync_dir(persist_dir(r->s)) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        goto fail;
    }
    return RV_OK;
fail:
    snprintf(r->state_err, sizeof(r->state_err), "cannot write %.200s: %s", path, strerror(errno));
    log_warn("[shard %u] %s", shard_id(r->s), r->state_err);
    return RV_EIO;
}

int
repl_save_state(struct repl *r)
{
    struct repl_state st;
    state_of(r, &st);
    return save_state_as(r, &st);
}

void
repl_forget_state(struct repl *r)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/repl.state", persist_dir(r->s));
    unlink(path);
}

static bool
load_state(struct repl *r, struct repl_state *st)
{
    char path[4200], role[16] = "primary", host[256] = "-";
    snprintf(path, sizeof(path), "%s/repl.state", persist_dir(r->s));
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    memset(st, 0, sizeof(*st));
    memset(st->replid2, '0', 40);
    st->second_off = -1;
    int n = fscanf(f, "%40s %" SCNu64 " %40s %" SCNd64 " %" SCNu64 " %15s %255s %d", st->replid,
                   &st->epoch, st->replid2, &st->second_off, &st->fenced_epoch, role, host,
                   &st->port);
    fclose(f);
    if (n < 2 || strlen(st->replid) != 40 || (n >= 3 && strlen(st->replid2) != 40)) {
        log_warn("[shard %u] %s: unreadable; starting a new history", shard_id(r->s), path);
        return false;
    }
    st->replica = n >= 8 && strcmp(role, "replica") == 0 && st->port > 0 && st->port <= 65535;
    snprintf(st->host, sizeof(st->host), "%s", host);
    memcpy(r->replid, st->replid, 41);
    memcpy(r->replid2, st->replid2, 41);
    r->epoch = st->epoch;
    r->second_off = st->second_off;
    r->fenced_epoch = st->fenced_epoch;
    return true;
}

bool
repl_newer(uint64_t e1, const char *id1, uint64_t e2, const char *id2)
{
    /* Epoch 0 is no promotion's: independent nodes start there. */
    return e1 > e2 || (e1 == e2 && e1 > 0 && strlen(id1) == 40 && strlen(id2) == 40 &&
                       strcmp(id1, id2) > 0);
}

bool
repl_in_lineage(const struct repl *r, const char *id)
{
    return id != NULL && r->second_off > 0 && strcmp(id, r->replid2) == 0;
}

void
repl_fence(struct repl *r, uint64_t epoch, const char *who)
{
    if (r->fenced_epoch == 0 || r->fenced_epoch < epoch) {
        r->fenced_epoch = epoch;
        log_warn("[shard %u] fenced: %s knows a newer history (replication epoch %" PRIu64 ", this "
                 "node is at %" PRIu64 "); writes are refused until REPLICAOF points this node at "
                 "the current primary", shard_id(r->s), who, epoch, r->epoch);
        (void)repl_save_state(r);    /* refusing is safe even if this fails; logged */
    }
    repl_guard_update(r);
}

/* Parse "host port" (replicaof in the config file). */
static bool
parse_hostport(const char *s, char *host, size_t hsz, int *port)
{
    char h[256];
    int pt;
    if (s == NULL || sscanf(s, "%255s %d", h, &pt) != 2 || pt <= 0 || pt > 65535) {
        return false;
    }
    snprintf(host, hsz, "%s", h);
    *port = pt;
    return true;
}

/* A primary whose last run did not end cleanly, or whose log recovery cut,
 * may have sent its replicas records that its recovered log lacks (shipped in
 * always while the sync ran, a torn tail, power loss, wal-accept-loss): its
 * next records would reuse their LSNs with other contents. So it continues under a new replid, with the recovered
 * history as replid2 up to its last LSN: replicas at or below it continue
 * (PSYNC2-like), those past it get a full sync (counted as divergent). The
 * epoch stays: this is no promotion, and a higher epoch would let this node
 * fence a replica that was promoted meanwhile. */
static void
new_history_after_crash(struct repl *r)
{
    uint64_t last = repl_last_lsn(r);
    memcpy(r->replid2, r->replid, 41);
    r->second_off = (int64_t)last + 1;
    repl_new_replid(r);
    r->crash_replid = true;
    (void)repl_save_state(r);   /* logged; the new replid still keeps replicas apart this run */
    log_warn("[shard %u] the last run did not shut down cleanly or its log was cut at recovery: it "
             "may end before records replicas already have, so this primary continues as history %s "
             "(replicas at or below "
             "LSN %" PRIu64 " of %s continue; those past it get a full sync)", shard_id(r->s),
             r->replid, last, r->replid2);
}

void
repl_attach(struct shard *s)
{
    struct persist *p = persist_of(s);
    struct repl *r = rv_calloc(1, sizeof(*r));
    r->s = s;
    r->p = p;
    r->second_off = -1;
    r->up.fd = -1;
    repl_new_replid(r);
    memset(r->replid2, '0', 40);
    p->repl = r;
    const char *ro = shard_cfg(s)->replicaof;
    char host[256];
    int port;
    bool follows = ro && *ro && parse_hostport(ro, host, sizeof(host), &port);
    struct repl_state st = { 0 };
    bool loaded = p->mode != WAL_MEMORY && load_state(r, &st);
    bool follows_state = loaded && st.replica && !(ro && *ro);
    if (p->mode != WAL_MEMORY && !loaded) {
        (void)repl_save_state(r);
    } else if (loaded && !follows && !follows_state && persist_log_maybe_short(s)) {
        new_history_after_crash(r);
    }
    repl_guard_update(r);
    if (follows) {
        replica_follow(r, host, port);   /* connects on the first timer tick */
    } else if (ro && *ro && strcasecmp(ro, "no one") != 0) {
        log_warn("[shard %u] replicaof '%s': expected 'host port'; not replicating", shard_id(s), ro);
    } else if (follows_state) {
        /* It followed a primary when it stopped (a FAILOVER or REPLICAOF that
         * no config file recorded): a writable restart would fork that
         * primary's history. */
        log_notice("[shard %u] repl.state: this shard followed %s:%d when it stopped and the "
                   "configuration names no primary: following it again (REPLICAOF NO ONE makes "
                   "it a primary)", shard_id(s), st.host, st.port + (int)shard_id(s));
        replica_follow(r, st.host, st.port);
        r->role_from_state = shard_id(s) == 0;   /* CONFIG GET shows it (first tick) */
    }
    if (r->fenced_epoch != 0 && !r->replica) {
        log_warn("[shard %u] repl.state: fenced by replication epoch %" PRIu64 " (this node is at %"
                 PRIu64 "): writes are refused until REPLICAOF points it at the current primary",
                 shard_id(s), r->fenced_epoch, r->epoch);
    }
}

void
repl_destroy(struct repl *r)
{
    if (r == NULL) {
        return;
    }
    replica_stop(r);
    primary_drop_all(r);
    primary_stop_timer(r);
    while (r->waiters) {
        struct waiter *w = r->waiters;
        r->waiters = w->next;
        rv_free(w);
    }
    bl_deinit(&r->bl);
    replay_destroy(r->rp);
    rv_free(r->argv);
    rv_free(r);
}

/* The backlog took a record: drop what its size no longer keeps, after
 * queueing it for replicas that have not got it. */
static inline void
after_push(struct repl *r)
{
    if (r->bl.head == NULL || !bl_head_goes(&r->bl, r->bl.head)) {
        return;
    }
    if (r->links) {
        uint64_t upto = bl_trim_point(&r->bl);
        if (upto > r->bl.base) {
            primary_save_unsent(r, upto);
        }
    }
    bl_trim(&r->bl);
}

void
repl_trim_backlog(struct repl *r)
{
    after_push(r);
}

void
repl_feed_slow(struct repl *r, const uint8_t *frame, size_t len)
{
    bl_push(&r->bl, frame, len);
    after_push(r);
}

void
repl_log_cmd(struct repl *r, uint64_t lsn, int64_t ts_ms, int argc, const struct rv_str *argv)
{
    uint8_t *f = bl_reserve(&r->bl, WAL_REC_HDR + wal_pay_one_max(argc, argv));
    size_t n = wal_pay_one(f + WAL_REC_HDR, argc, argv);
    wal_frame_mark(f, n, lsn, ts_ms);            /* memory mode: no CRC (see wal.h) */
    bl_commit(&r->bl, WAL_REC_HDR + n);
    after_push(r);
}

void
repl_before_poll(struct repl *r)
{
    if (r->replica) {
        replica_before_poll(r);
    }
    if (r->links) {
        primary_ship(r);
    }
}

void
repl_stale_update(struct repl *r)
{
    r->p->hot.stale = r->replica && !replica_link_up(r) && !shard_cfg(r->s)->replica_serve_stale_data;
}

void
repl_cron(struct repl *r)
{
    int64_t now = shard_now_ms(r->s);
    if (rv_unlikely(r->role_from_state)) {
        char hp[300];
        r->role_from_state = false;
        snprintf(hp, sizeof(hp), "%s %d", r->mhost, r->mport);
        repl_publish_role(r->s, hp, false);
    }
    if (r->replica) {
        replica_cron(r, now);
    }
    primary_cron(r, now);
    bl_set_size(&r->bl, (size_t)shard_cfg(r->s)->repl_backlog_size);   /* CONFIG SET applies live */
    /* min-replicas-to-write turns the write guard on (replicas always have it). */
    repl_guard_update(r);
    repl_stale_update(r);            /* CONFIG SET replica-serve-stale-data */
}

void
repl_guard_update(struct repl *r)
{
    r->hot.guard = r->replica || r->fenced_epoch != 0 || r->fo.st != FO_NONE ||
                   shard_cfg(r->s)->min_replicas_to_write > 0;
    /* persist's flag also covers WAL write errors (persist_refuse_write) */
    r->p->hot.guard = r->p->w != NULL || r->hot.guard;
}

bool
repl_refuse_write(struct repl *r, struct conn *c)
{
    const struct cfg *cfg = shard_cfg(r->s);
    if (r->fo.st == FO_PROGRESS && failover_pause_write(r, c)) {
        return true;                 /* handed over, not confirmed yet: it may roll back */
    }
    if (r->replica) {
        if (cfg->replica_read_only && !(c->flags & CONN_REPLAY)) {
            reply_errf(c, "READONLY You can't write against a read only replica.");
            return true;
        }
        return false;
    }
    if (r->fo.st != FO_NONE && failover_pause_write(r, c)) {
        return true;                 /* paused: no reply yet */
    }
    if (r->fenced_epoch != 0) {
        reply_errf(c, "READONLY This node was fenced: replication epoch %" PRIu64 " exists (this "
                      "node is at %" PRIu64 "); point it at the current primary with REPLICAOF.",
                   r->fenced_epoch, r->epoch);
        return true;
    }
    if (cfg->min_replicas_to_write > 0 &&
        primary_good_replicas(r, shard_now_ms(r->s)) < cfg->min_replicas_to_write) {
        reply_errf(c, "NOREPLICAS Not enough good replicas to write.");
        return true;
    }
    return false;
}

void
repl_conn_gone(struct repl *r, struct conn *c)
{
    for (struct waiter **pp = &r->waiters; *pp;) {
        if ((*pp)->c == c) {
            struct waiter *w = *pp;
            *pp = w->next;
            rv_free(w);
        } else {
            pp = &(*pp)->next;
        }
    }
}

bool
repl_is_replica(struct shard *s)
{
    struct repl *r = repl_of(s);
    return r && r->replica;
}

/* ---------------------------------------------------------------- INFO */

void
repl_info(struct shard *s, struct buf *b)
{
    struct repl *r = repl_of(s);
    const struct cfg *cfg = shard_cfg(s);
    if (r == NULL) {
        return;
    }
    int64_t now = shard_now_ms(s);
    uint64_t off = repl_last_lsn(r);
    buf_appendf(b, "# Replication\r\nrole:%s\r\n", r->replica ? "slave" : "master");
    if (r->replica) {
        const struct upstream *u = &r->up;
        bool up = replica_link_up(r);
        buf_appendf(b, "master_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\n"
                "master_last_io_seconds_ago:%" PRId64 "\r\nmaster_sync_in_progress:%d\r\n"
                "slave_read_repl_offset:%" PRIu64 "\r\nslave_repl_offset:%" PRIu64 "\r\n",
             r->mhost, r->mport + (int)shard_id(s), up ? "up" : "down",
             u->last_io_ms > 0 && up ? (now - u->last_io_ms) / 1000 : -1,
             u->st == UP_FULL || u->st == UP_SYNC, off, off);
        if (u->st == UP_FULL) {
            buf_appendf(b, "master_sync_total_bytes:-1\r\nmaster_sync_read_bytes:%zu\r\n"
                    "master_sync_left_bytes:-1\r\nmaster_sync_last_io_seconds_ago:%" PRId64 "\r\n",
                 (size_t)u->snap_bytes, (now - u->last_io_ms) / 1000);
        }
        if (!up) {
            buf_appendf(b, "master_link_down_since_seconds:%" PRId64 "\r\n", (now - u->since_ms) / 1000);
        }
        buf_appendf(b, "slave_priority:%" PRId64 "\r\nslave_read_only:%d\r\nreplica_announced:1\r\n",
             cfg->replica_priority, cfg->replica_read_only ? 1 : 0);
    }
    buf_appendf(b, "connected_slaves:%u\r\n", r->nlinks);
    if (!r->replica && cfg->min_replicas_to_write > 0) {
        buf_appendf(b, "min_slaves_good_slaves:%ld\r\n", primary_good_replicas(r, now));
    }
    unsigned i = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st != LINK_ONLINE) {
            continue;
        }
        buf_appendf(b, "slave%u:ip=%s,port=%d,state=online,offset=%" PRIu64 ",lag=%" PRId64 "\r\n", i++,
             l->ip, l->port, l->ack, (now - l->last_ack_ms) / 1000);
    }
    buf_appendf(b, "master_failover_state:%s\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\n"
            "master_repl_offset:%" PRIu64 "\r\nsecond_repl_offset:%" PRId64 "\r\n"
            "repl_backlog_active:%d\r\nrepl_backlog_size:%" PRId64 "\r\n"
            "repl_backlog_first_byte_offset:%" PRIu64 "\r\nrepl_backlog_histlen:%" PRIu64 "\r\n"
            "repl_epoch:%" PRIu64 "\r\n\r\n",
         failover_state_name(r), r->replid, r->replid2, off, r->second_off, r->hot.backlog ? 1 : 0, cfg->repl_backlog_size,
         r->hot.backlog ? r->bl.first_lsn : 0,
         r->hot.backlog ? r->bl.next_lsn - r->bl.first_lsn : 0, r->epoch);
}

void
repl_info_stats(struct shard *s, struct buf *b)
{
    struct repl *r = repl_of(s);
    if (r == NULL) {
        return;
    }
    buf_appendf(b, "sync_full:%" PRIu64 "\r\nsync_partial_ok:%" PRIu64 "\r\nsync_partial_err:%" PRIu64
                "\r\nsync_full_divergent:%" PRIu64 "\r\n",
         r->sync_full, r->sync_partial_ok, r->sync_partial_err, r->sync_divergent);
}

/* ---------------------------------------------------------------- CLIENT LIST / KILL */

void
repl_client_list(struct shard *s, unsigned types, const int64_t *ids, int nids, struct buf *out)
{
    struct repl *r = repl_of(s);
    if (r == NULL) {
        return;
    }
    if (types & REPL_CT_MASTER) {
        replica_client_list(r, ids, nids, out);
    }
    if (types & REPL_CT_REPLICA) {
        primary_client_list(r, ids, nids, out);
    }
}

long
repl_client_kill(struct shard *s, unsigned types, int64_t id, const struct rv_str *addr)
{
    struct repl *r = repl_of(s);
    long n = 0;
    if (r == NULL) {
        return 0;
    }
    if (types & REPL_CT_MASTER) {
        n += replica_client_kill(r, id, addr);
    }
    if (types & REPL_CT_REPLICA) {
        n += primary_client_kill(r, id, addr);
    }
    return n;
}

/* ---------------------------------------------------------------- REPLICAOF */

struct follow_msg {
    struct shard_msg m;
    bool no_one;
    char host[256];
    int port;
};

int
repl_promote(struct repl *r)
{
    if (!r->replica) {
        return RV_OK;
    }
    /* PSYNC2: the history followed so far stays valid up to here under
     * replid2, so the other replicas continue with a partial resync. The
     * epoch is one above any this node has seen (fenced_epoch too); two
     * promotions from the same epoch differ by replid (repl_newer). The new
     * state is on disk before the shard takes a write under it. */
    struct repl_state st;
    state_of(r, &st);
    memcpy(st.replid2, r->replid, 41);
    st.second_off = (int64_t)repl_last_lsn(r) + 1;
    rand_hex(st.replid, 40);
    st.epoch = (r->epoch > r->fenced_epoch ? r->epoch : r->fenced_epoch) + 1;
    st.fenced_epoch = 0;
    st.replica = false;
    snprintf(st.host, sizeof(st.host), "-");
    st.port = 0;
    if (save_state_as(r, &st) != RV_OK) {
        log_warn("[shard %u] not promoted: the new replication state could not be saved (%s)",
                 shard_id(r->s), r->state_err);
        return RV_EIO;
    }
    replica_stop(r);
    primary_drop_all(r);             /* chained replicas reconnect and learn the new history */
    r->replica = false;
    r->p->replica = false;
    repl_stale_update(r);
    ks_set_replica_mode(shard_ks(r->s), false);
    memcpy(r->replid2, st.replid2, 41);
    r->second_off = st.second_off;
    memcpy(r->replid, st.replid, 41);
    r->epoch = st.epoch;
    r->fenced_epoch = 0;
    repl_backlog_start(r);
    repl_guard_update(r);
    log_notice("[shard %u] promoted to primary (epoch %" PRIu64 ", new replid %s, previous %s up to "
               "LSN %" PRId64 ")", shard_id(r->s), r->epoch, r->replid, r->replid2, r->second_off - 1);
    return RV_OK;
}

#define UNBLOCKED_DEMOTED "UNBLOCKED force unblock from blocking operation, instance state " \
                          "changed (master -> replica?)"

void
repl_unblock_demoted(struct repl *r)
{
    block_unblock_all(r->s, UNBLOCKED_DEMOTED);
    /* WAIT / WAITAOF too, as Redis (a replica has no replicas to count). */
    for (struct waiter **pp = &r->waiters; *pp;) {
        struct waiter *w = *pp;
        if (w->paused) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        struct conn *c = w->c;
        rv_free(w);
        c->flags &= ~CONN_BLOCKED;
        reply_errf(c, "%s", UNBLOCKED_DEMOTED);
        conn_resume(c);
        shard_want_write(c->shard, c);
    }
}

void
repl_role_hook(struct repl *r, const char *old_role, const char *new_role, const char *host, int port)
{
    if (shard_id(r->s) != 0) {
        return;                      /* every shard changes role; the node runs the hook once */
    }
    char self[256];
    if (host == NULL) {
        const struct cfg *cfg = shard_cfg(r->s);
        const char *ip = cfg->replica_announce_ip && *cfg->replica_announce_ip ? cfg->replica_announce_ip
                         : cfg->cluster_announce_ip && *cfg->cluster_announce_ip ? cfg->cluster_announce_ip
                                                                                  : cfg->bind;
        size_t n = ip ? strcspn(ip, " ") : 0;
        if (n == 0 || (n == 1 && ip[0] == '*')) {
            ip = "127.0.0.1", n = 9;
        }
        snprintf(self, sizeof(self), "%.*s", (int)n, ip);
        host = self;
        port = (int)(cfg->replica_announce_port ? cfg->replica_announce_port : cfg->port);
    }
    hook_role_change(old_role, new_role, r->epoch, host, port);
}

/* One shard takes REPLICAOF; RV_EIO when a promotion was refused because its
 * state could not be saved (the shard stays a replica). */
static int
follow_apply(struct repl *r, bool no_one, const char *host, int port)
{
    bool was_replica = r->replica;
    failover_cancel(r, "REPLICAOF");
    if (no_one) {
        if (repl_promote(r) != RV_OK) {
            return RV_EIO;
        }
        if (was_replica) {
            repl_role_hook(r, "slave", "master", NULL, 0);
        }
    } else if (!r->replica || strcmp(r->mhost, host) != 0 || r->mport != port) {
        replica_follow(r, host, port);
        (void)repl_save_state(r);    /* the role, for a restart without a config file */
        if (!was_replica) {
            repl_unblock_demoted(r);
        }
        repl_role_hook(r, was_replica ? "slave" : "master", "slave", host, port);
    }
    return RV_OK;
}

static void
run_follow(struct shard *s, struct shard_msg *mm)
{
    struct follow_msg *m = (struct follow_msg *)mm;
    struct repl *r = repl_of(s);
    if (r != NULL) {
        (void)follow_apply(r, m->no_one, m->host, m->port);   /* a refusal is logged */
    }
    rv_free(m);
}

/* The client's own shard first, at once: its refusal is the command's error
 * and nothing else changes; then the others. */
static int
post_follow(struct shard *from, bool no_one, const char *host, int port)
{
    struct node *n = shard_node(from);
    struct repl *own = repl_of(from);
    if (own != NULL && follow_apply(own, no_one, host ? host : "", port) != RV_OK) {
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

/* The role is config state too: CONFIG GET/REWRITE show it (Sentinel
 * persists a repointing with CONFIG REWRITE). */
void
repl_publish_role(struct shard *s, const char *val, bool rewrite)
{
    struct node *n = shard_node(s);
    struct cfg *next = cfg_dup(shard_cfg(s));
    (void)cfg_set_state(next, "replicaof", val);
    node_publish_cfg(n, next);
    shard_adopt_cfg(s);
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != s) {
            shard_wake(n->shards[i]);
        }
    }
    char err[512];
    if (rewrite && cfg_file()[0] != '\0' && cfg_rewrite(shard_cfg(s), err, sizeof(err)) != 0) {
        log_warn("the new role (replicaof '%s') could not be written to %s: %s", val, cfg_file(), err);
    }
}

void
cmd_replicaof(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = repl_of(c->shard);
    if (cmd_arg_is(argv[1], "no") && cmd_arg_is(argv[2], "one")) {
        if (r && r->replica) {
            log_notice("MASTER MODE enabled (user request from '%s')", c->addr);
        }
        if (post_follow(c->shard, true, NULL, 0) != RV_OK) {
            reply_errf(c, "ERR REPLICAOF NO ONE refused: %s; this node stays a replica", r->state_err);
            return;
        }
        repl_publish_role(c->shard, "", false);
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
    if (r && r->replica && strcmp(r->mhost, host) == 0 && r->mport == (int)port) {
        reply_simple(c, "OK Already connected to specified master");
        return;
    }
    log_notice("REPLICAOF %s:%d enabled (user request from '%s')", host, (int)port, c->addr);
    (void)post_follow(c->shard, false, host, (int)port);    /* a demotion is not refused */
    char hp[300];
    snprintf(hp, sizeof(hp), "%s %d", host, (int)port);
    repl_publish_role(c->shard, hp, false);
    reply_ok(c);
}

/* ---------------------------------------------------------------- ROLE */

void
cmd_role(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = repl_of(c->shard);
    uint64_t off = r ? repl_last_lsn(r) : 0;
    if (r && r->replica) {
        reply_array(c, 5);
        reply_bulk_cstr(c, "slave");
        reply_bulk_cstr(c, r->mhost);
        reply_int(c, r->mport + (int)shard_id(c->shard));   /* the port this shard follows */
        reply_bulk_cstr(c, replica_state_name(r));
        reply_int(c, (int64_t)off);
        return;
    }
    reply_array(c, 3);
    reply_bulk_cstr(c, "master");
    reply_int(c, (int64_t)off);
    size_t h = reply_defer(c);
    size_t n = 0;
    for (struct link *l = r ? r->links : NULL; l; l = l->next) {
        if (l->st != LINK_ONLINE) {
            continue;
        }
        char port[16], ack[24];
        snprintf(port, sizeof(port), "%d", l->port);
        snprintf(ack, sizeof(ack), "%" PRIu64, l->ack);
        reply_array(c, 3);
        reply_bulk_cstr(c, l->ip);
        reply_bulk_cstr(c, port);
        reply_bulk_cstr(c, ack);
        n++;
    }
    reply_defer_array(c, h, n);
}

/* ---------------------------------------------------------------- WAIT */

static void
wait_block(struct repl *r, struct conn *c, long need, long need_local, int64_t timeout)
{
    struct waiter *w = rv_calloc(1, sizeof(*w));
    w->c = c;
    w->lsn = c->own_lsn > 0 ? c->own_lsn : repl_last_lsn(r);
    w->need = need;
    w->need_local = need_local;
    w->deadline_ms = timeout > 0 ? shard_now_ms(r->s) + timeout : 0;
    w->next = r->waiters;
    r->waiters = w;
    r->ask_ack = true;
    c->flags |= CONN_BLOCKED;
}

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

static long
count_acked(struct repl *r, uint64_t lsn, bool durable)
{
    long n = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_ONLINE && (durable ? l->durable : l->ack) >= lsn) {
            n++;
        }
    }
    return n;
}

void
cmd_wait(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = repl_of(c->shard);
    int64_t a[2];
    if (!parse_wait_args(c, argv + 1, 2, a)) {
        return;
    }
    if (r->replica) {
        reply_errf(c, "ERR WAIT cannot be used with replica instances. Please also note that since "
                      "Redis 4.0 if a replica is configured to be writable (which is not the default) "
                      "writes to replicas are just local and are not propagated.");
        return;
    }
    uint64_t lsn = c->own_lsn > 0 ? c->own_lsn : repl_last_lsn(r);
    long acked = count_acked(r, lsn, false);
    if (acked >= a[0] || (c->flags & CONN_IN_EXEC)) {
        reply_int(c, acked);
        return;
    }
    wait_block(r, c, (long)a[0], -1, a[1]);
}

void
cmd_waitaof(struct conn *c, int argc, struct rv_str *argv)
{
    struct repl *r = repl_of(c->shard);
    int64_t a[3];
    if (!parse_wait_args(c, argv + 1, 3, a)) {
        return;
    }
    if (r->replica) {
        reply_errf(c, "ERR WAITAOF cannot be used with replica instances. Please also note that "
                      "writes to replicas are just local and are not propagated.");
        return;
    }
    struct persist *p = r->p;
    if (a[0] > 0 && p->w == NULL) {
        reply_errf(c, "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.");
        return;
    }
    uint64_t lsn = c->own_lsn > 0 ? c->own_lsn : repl_last_lsn(r);
    long local = p->w && persist_durable_lsn(r->s) >= lsn ? 1 : 0;
    long acked = count_acked(r, lsn, true);
    if ((local >= a[0] && acked >= a[1]) || (c->flags & CONN_IN_EXEC)) {
        reply_array(c, 2);
        reply_int(c, local);
        reply_int(c, acked);
        return;
    }
    wait_block(r, c, (long)a[1], (long)a[0], a[2]);
}

void
primary_check_waiters(struct repl *r, int64_t now)
{
    for (struct waiter **pp = &r->waiters; *pp;) {
        struct waiter *w = *pp;
        if (w->paused) {
            pp = &w->next;
            continue;
        }
        bool aof = w->need_local >= 0;
        long acked = count_acked(r, w->lsn, aof);
        long local = aof && r->p->w && persist_durable_lsn(r->s) >= w->lsn ? 1 : 0;
        bool done = acked >= w->need && (!aof || local >= w->need_local);
        if (!done && (w->deadline_ms == 0 || now < w->deadline_ms)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        struct conn *c = w->c;
        rv_free(w);
        c->flags &= ~CONN_BLOCKED;
        if (aof) {
            reply_array(c, 2);
            reply_int(c, local);
            reply_int(c, acked);
        } else {
            reply_int(c, acked);
        }
        conn_resume(c);
        shard_want_write(c->shard, c);
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
            return;                  /* Redis sends no reply to these */
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
    struct repl *r = repl_of(c->shard);
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
    primary_accept(r, fd, c, &pre);
}
