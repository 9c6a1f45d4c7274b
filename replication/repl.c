/* replication/repl.c: per-shard replication state, the hooks persist.c
 * calls, what the commands (REPLICAOF/SLAVEOF, ROLE, WAIT, WAITAOF; their
 * handlers are node/commands/cmd_repl.c) ask, and INFO lines. The primary
 * side is repl_primary.c, the replica side repl_replica.c;
 * docs/replication.md describes the protocol. */
#include "replication/repl_int.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "base/rv_err.h"
#include "wal/wal.h"

#include <event2/event.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct repl_host_ops *host_ops;

void
repl_host_set(const struct repl_host_ops *ops)
{
    host_ops = ops;
}

uint64_t
repl_last_lsn(const struct repl *r)
{
    return r->ops->last_lsn(r->host);
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
    const struct repl_cfg *cfg = repl_cfg(r);
    bl_init(&r->bl, (size_t)cfg->repl_backlog_size, repl_last_lsn(r) + 1);
    r->hot.backlog = true;
    r->ops->log_on(r->host); /* memory mode: records are built from now on */
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
    bool direct; /* it followed one node (cluster mode): its topology says whom, not this file */
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
    st->direct = r->replica && r->direct;
    snprintf(st->host, sizeof(st->host), "%s", r->replica && r->mhost[0] ? r->mhost : "-");
    st->port = r->replica ? r->mport : 0;
}

static int
save_state_as(struct repl *r, const struct repl_state *st)
{
    if (r->hi.memory) {
        return RV_OK;
    }
    char path[4200], tmp[4210];
    snprintf(path, sizeof(path), "%s/repl.state", r->hi.dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        goto fail;
    }
    fprintf(f, "%s %" PRIu64 " %s %" PRId64 " %" PRIu64 " %s %s %d\n", st->replid, st->epoch,
            st->replid2, st->second_off, st->fenced_epoch,
            st->direct    ? "replica-node"
            : st->replica ? "replica"
                          : "primary",
            st->host, st->port);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0 || wal_fsync_dir(r->hi.dir) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        goto fail;
    }
    return RV_OK;
fail:
    snprintf(r->state_err, sizeof(r->state_err), "cannot write %.200s: %s", path, strerror(errno));
    log_warn("[shard %u] %s", r->hi.shard, r->state_err);
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
    snprintf(path, sizeof(path), "%s/repl.state", r->hi.dir);
    unlink(path);
}

static bool
load_state(struct repl *r, struct repl_state *st)
{
    char path[4200], role[16] = "primary", host[256] = "-";
    snprintf(path, sizeof(path), "%s/repl.state", r->hi.dir);
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
        log_warn("[shard %u] %s: unreadable; starting a new history", r->hi.shard, path);
        return false;
    }
    st->replica = n >= 8 && strcmp(role, "replica") == 0 && st->port > 0 && st->port <= 65535;
    st->direct = n >= 8 && strcmp(role, "replica-node") == 0;
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
    return e1 > e2 ||
           (e1 == e2 && e1 > 0 && strlen(id1) == 40 && strlen(id2) == 40 && strcmp(id1, id2) > 0);
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
                 "the current primary",
                 r->hi.shard, who, epoch, r->epoch);
        (void)repl_save_state(r); /* refusing is safe even if this fails; logged */
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
    (void)repl_save_state(r); /* logged; the new replid still keeps replicas apart this run */
    log_warn(
        "[shard %u] the last run did not shut down cleanly or its log was cut at recovery: it "
        "may end before records replicas already have, so this primary continues as history %s "
        "(replicas at or below "
        "LSN %" PRIu64 " of %s continue; those past it get a full sync)",
        r->hi.shard, r->replid, last, r->replid2);
}

struct repl *
repl_attach(void *hs)
{
    struct repl *r = rv_calloc(1, sizeof(*r));
    r->ops = host_ops;
    r->host = hs;
    r->ops->info(hs, &r->hi);
    unsigned id = r->hi.shard;
    r->second_off = -1;
    r->up.fd = -1;
    repl_new_replid(r);
    memset(r->replid2, '0', 40);
    const struct repl_cfg *cfg = repl_cfg(r);
    const char *ro = cfg->replicaof;
    char host[256];
    int port;
    bool follows = ro && *ro && parse_hostport(ro, host, sizeof(host), &port);
    struct repl_state st = { 0 };
    bool loaded = !r->hi.memory && load_state(r, &st);
    bool follows_state = loaded && st.replica && !(ro && *ro);
    if (!r->hi.memory && !loaded) {
        (void)repl_save_state(r);
    } else if (loaded && !follows && !follows_state && !st.direct && r->hi.log_maybe_short) {
        new_history_after_crash(r);
    }
    repl_guard_update(r);
    if (follows) {
        replica_follow(r, host, port); /* connects on the first timer tick */
    } else if (ro && *ro && strcasecmp(ro, "no one") != 0) {
        log_warn("[shard %u] replicaof '%s': expected 'host port'; not replicating", id, ro);
    } else if (follows_state) {
        /* It followed a primary when it stopped (a FAILOVER or REPLICAOF that
         * no config file recorded): a writable restart would fork that
         * primary's history. */
        log_notice("[shard %u] repl.state: this shard followed %s:%d when it stopped and the "
                   "configuration names no primary: following it again (REPLICAOF NO ONE makes "
                   "it a primary)",
                   id, st.host, st.port + (int)id);
        replica_follow(r, st.host, st.port);
        r->role_from_state = id == 0; /* CONFIG GET shows it (first tick) */
    }
    if (r->fenced_epoch != 0 && !r->replica) {
        log_warn("[shard %u] repl.state: fenced by replication epoch %" PRIu64
                 " (this node is at %" PRIu64
                 "): writes are refused until REPLICAOF points it at the current primary",
                 id, r->fenced_epoch, r->epoch);
    }
    return r;
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
    if (r->rp != NULL) {
        r->ops->replay_close(r->rp);
    }
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
    wal_frame_mark(f, n, lsn, ts_ms); /* memory mode: no CRC (see wal.h) */
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
    const struct repl_cfg *cfg = repl_cfg(r);
    r->ops->set_stale(r->host, r->replica && !replica_link_up(r) && !cfg->replica_serve_stale_data);
}

void
repl_cron(struct repl *r)
{
    int64_t now = repl_now(r);
    if (rv_unlikely(r->role_from_state)) {
        char hp[300];
        r->role_from_state = false;
        snprintf(hp, sizeof(hp), "%s %d", r->mhost, r->mport);
        repl_publish_role(r, hp, false);
    }
    if (r->replica) {
        replica_cron(r, now);
    }
    primary_cron(r, now);
    const struct repl_cfg *cfg = repl_cfg(r);
    bl_set_size(&r->bl, (size_t)cfg->repl_backlog_size); /* CONFIG SET applies live */
    /* min-replicas-to-write turns the write guard on (replicas always have it). */
    repl_guard_update(r);
    repl_stale_update(r); /* CONFIG SET replica-serve-stale-data */
}

void
repl_guard_update(struct repl *r)
{
    const struct repl_cfg *cfg = repl_cfg(r);
    r->hot.guard = r->replica || r->fenced_epoch != 0 || r->fo.st != FO_NONE ||
                   cfg->min_replicas_to_write > 0 || cfg->min_sync_replicas > 0;
    r->ops->set_guard(r->host, r->hot.guard);
    bool sync = !r->replica && cfg->min_sync_replicas > 0;
    if (sync && !r->hot.sync) {
        /* what is there was released under the previous rule (asynchronous,
         * or as a replica: the old primary's records) */
        r->hot.sync_lsn = repl_last_lsn(r);
    } else if (!sync && r->hot.sync && r->replica) {
        r->hot.sync_cut = r->hot.sync_lsn + 1; /* demoted: the unacked tail is not ours to ack */
    }
    r->hot.sync = sync;
    if (sync) {
        primary_sync_update(r); /* (min-sync-replicas may have dropped) */
    }
}

uint64_t
repl_sync_take_cut(struct repl *r)
{
    uint64_t cut = r->hot.sync_cut;
    r->hot.sync_cut = 0;
    return cut;
}

bool
repl_refuse_write(struct repl *r, void *c)
{
    const struct repl_cfg *cfg = repl_cfg(r);
    if (r->fo.st == FO_PROGRESS && failover_pause_write(r, c)) {
        return true; /* handed over, not confirmed yet: it may roll back */
    }
    if (r->replica) {
        if (cfg->replica_read_only && !(r->ops->client_state(r->host, c) & REPL_CL_REPLAY)) {
            r->ops->client_error(r->host, c,
                                 "READONLY You can't write against a read only replica.");
            return true;
        }
        return false;
    }
    if (r->fo.st != FO_NONE && failover_pause_write(r, c)) {
        return true; /* paused: no reply yet */
    }
    if (r->fenced_epoch != 0) {
        char e[300];
        snprintf(e, sizeof(e),
                 "READONLY This node was fenced: replication epoch %" PRIu64 " exists "
                 "(this node is at %" PRIu64 "); point it at the current primary with REPLICAOF.",
                 r->fenced_epoch, r->epoch);
        r->ops->client_error(r->host, c, e);
        return true;
    }
    long need = cfg->min_replicas_to_write > cfg->min_sync_replicas ? cfg->min_replicas_to_write
                                                                    : cfg->min_sync_replicas;
    if (need > 0 && primary_good_replicas(r, repl_now(r)) < need) {
        r->ops->client_error(r->host, c, "NOREPLICAS Not enough good replicas to write.");
        return true;
    }
    return false;
}

void
repl_conn_gone(struct repl *r, void *c)
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
repl_is_replica(const struct repl *r)
{
    return r && r->replica;
}

/* ---------------------------------------------------------------- INFO */

void
repl_info(struct repl *r, struct buf *b)
{
    if (r == NULL) {
        return;
    }
    const struct repl_cfg *cfg = repl_cfg(r);
    int64_t now = repl_now(r);
    uint64_t off = repl_last_lsn(r);
    buf_appendf(b, "# Replication\r\nrole:%s\r\n", r->replica ? "slave" : "master");
    if (r->replica) {
        const struct upstream *u = &r->up;
        bool up = replica_link_up(r);
        buf_appendf(b,
                    "master_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\n"
                    "master_last_io_seconds_ago:%" PRId64 "\r\nmaster_sync_in_progress:%d\r\n"
                    "slave_read_repl_offset:%" PRIu64 "\r\nslave_repl_offset:%" PRIu64 "\r\n",
                    r->mhost, r->mport + (int)r->hi.shard, up ? "up" : "down",
                    u->last_io_ms > 0 && up ? (now - u->last_io_ms) / 1000 : -1,
                    u->st == UP_FULL || u->st == UP_SYNC, off, off);
        if (u->st == UP_FULL) {
            buf_appendf(b,
                        "master_sync_total_bytes:-1\r\nmaster_sync_read_bytes:%zu\r\n"
                        "master_sync_left_bytes:-1\r\nmaster_sync_last_io_seconds_ago:%" PRId64
                        "\r\n",
                        (size_t)u->snap_bytes, (now - u->last_io_ms) / 1000);
        }
        if (!up) {
            buf_appendf(b, "master_link_down_since_seconds:%" PRId64 "\r\n",
                        (now - u->since_ms) / 1000);
        }
        buf_appendf(b,
                    "slave_priority:%" PRId64 "\r\nslave_read_only:%d\r\nreplica_announced:1\r\n",
                    cfg->replica_priority, cfg->replica_read_only ? 1 : 0);
    }
    buf_appendf(b, "connected_slaves:%u\r\n", r->nlinks);
    if (!r->replica && cfg->min_replicas_to_write > 0) {
        buf_appendf(b, "min_slaves_good_slaves:%ld\r\n", primary_good_replicas(r, now));
    }
    if (r->hot.sync) { /* synchronous replication (min-sync-replicas) */
        buf_appendf(b, "sync_replicas:%" PRId64 "\r\nsync_acked_offset:%" PRIu64 "\r\n",
                    cfg->min_sync_replicas, r->hot.sync_lsn);
    }
    unsigned i = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st != LINK_ONLINE) {
            continue;
        }
        buf_appendf(b, "slave%u:ip=%s,port=%d,state=online,offset=%" PRIu64 ",lag=%" PRId64 "\r\n",
                    i++, l->ip, l->port, l->ack, (now - l->last_ack_ms) / 1000);
    }
    buf_appendf(b,
                "master_failover_state:%s\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\n"
                "master_repl_offset:%" PRIu64 "\r\nsecond_repl_offset:%" PRId64 "\r\n"
                "repl_backlog_active:%d\r\nrepl_backlog_size:%" PRId64 "\r\n"
                "repl_backlog_first_byte_offset:%" PRIu64 "\r\nrepl_backlog_histlen:%" PRIu64 "\r\n"
                "repl_epoch:%" PRIu64 "\r\n\r\n",
                failover_state_name(r), r->replid, r->replid2, off, r->second_off,
                r->hot.backlog ? 1 : 0, cfg->repl_backlog_size,
                r->hot.backlog ? r->bl.first_lsn : 0,
                r->hot.backlog ? r->bl.next_lsn - r->bl.first_lsn : 0, r->epoch);
}

void
repl_info_stats(struct repl *r, struct buf *b)
{
    if (r == NULL) {
        return;
    }
    buf_appendf(b,
                "sync_full:%" PRIu64 "\r\nsync_partial_ok:%" PRIu64 "\r\nsync_partial_err:%" PRIu64
                "\r\nsync_full_divergent:%" PRIu64 "\r\n",
                r->sync_full, r->sync_partial_ok, r->sync_partial_err, r->sync_divergent);
}

/* ---------------------------------------------------------------- CLIENT LIST / KILL */

void
repl_client_list(struct repl *r, unsigned types, const int64_t *ids, int nids, struct buf *out)
{
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
repl_client_kill(struct repl *r, unsigned types, int64_t id, const struct rv_str *addr)
{
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
                 r->hi.shard, r->state_err);
        return RV_EIO;
    }
    replica_stop(r);
    primary_drop_all(r); /* chained replicas reconnect and learn the new history */
    r->replica = false;
    r->ops->set_role(r->host, false);
    repl_stale_update(r);
    memcpy(r->replid2, st.replid2, 41);
    r->second_off = st.second_off;
    memcpy(r->replid, st.replid, 41);
    r->epoch = st.epoch;
    r->fenced_epoch = 0;
    repl_backlog_start(r);
    repl_guard_update(r);
    log_notice("[shard %u] promoted to primary (epoch %" PRIu64
               ", new replid %s, previous %s up to "
               "LSN %" PRId64 ")",
               r->hi.shard, r->epoch, r->replid, r->replid2, r->second_off - 1);
    return RV_OK;
}

#define UNBLOCKED_DEMOTED                                                                          \
    "UNBLOCKED force unblock from blocking operation, instance state "                             \
    "changed (master -> replica?)"

void
repl_unblock_demoted(struct repl *r)
{
    r->ops->unblock_all(r->host, UNBLOCKED_DEMOTED);
    /* WAIT / WAITAOF too, as Redis (a replica has no replicas to count). */
    for (struct waiter **pp = &r->waiters; *pp;) {
        struct waiter *w = *pp;
        if (w->paused) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        void *c = w->c;
        rv_free(w);
        r->ops->client_wake(r->host, c, REPL_WAKE_ERROR, 0, 0, UNBLOCKED_DEMOTED);
    }
}

void
repl_role_hook(struct repl *r, const char *old_role, const char *new_role, const char *host,
               int port)
{
    if (r->hi.shard != 0) {
        return; /* every shard changes role; the node runs the hook once */
    }
    char self[256];
    if (host == NULL) {
        const struct repl_cfg *cfg = repl_cfg(r);
        const char *ip = cfg->replica_announce_ip && *cfg->replica_announce_ip
                             ? cfg->replica_announce_ip
                         : cfg->cluster_announce_ip && *cfg->cluster_announce_ip
                             ? cfg->cluster_announce_ip
                             : cfg->bind;
        size_t n = ip ? strcspn(ip, " ") : 0;
        if (n == 0 || (n == 1 && ip[0] == '*')) {
            ip = "127.0.0.1", n = 9;
        }
        snprintf(self, sizeof(self), "%.*s", (int)n, ip);
        host = self;
        port = (int)(cfg->replica_announce_port ? cfg->replica_announce_port : cfg->port);
    }
    r->ops->role_hook(r->host, old_role, new_role, r->epoch, host, port);
}

int
repl_follow(struct repl *r, bool no_one, const char *host, int port)
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
        (void)repl_save_state(r); /* the role, for a restart without a config file */
        if (!was_replica) {
            repl_unblock_demoted(r);
        }
        repl_role_hook(r, was_replica ? "slave" : "master", "slave", host, port);
    }
    return RV_OK;
}

bool
repl_follows(const struct repl *r, const char *host, int port)
{
    return r->replica && !r->direct && strcmp(r->mhost, host) == 0 && r->mport == port;
}

int
repl_follow_node(struct repl *r, const char *host, int port)
{
    bool was_replica = r->replica;
    if (repl_follows_node(r, host, port)) {
        return RV_OK;
    }
    failover_cancel(r, "CLUSTER REPLICATE");
    replica_follow_node(r, host, port);
    (void)repl_save_state(r);
    if (!was_replica) {
        repl_unblock_demoted(r);
    }
    repl_role_hook(r, was_replica ? "slave" : "master", "slave", host, port);
    return RV_OK;
}

bool
repl_follows_node(const struct repl *r, const char *host, int port)
{
    return r->replica && r->direct && strcmp(r->mhost, host) == 0 && r->mport == port;
}

const char *
repl_state_error(const struct repl *r)
{
    return r->state_err;
}

/* The process's replicaof (config state, rewritten for Sentinel). Not in
 * cluster mode: each node's role is in the topology, and a replicaof in the
 * config file would stop the host at its next start. */
void
repl_publish_role(struct repl *r, const char *val, bool rewrite)
{
    if (!r->hi.cluster) {
        r->ops->publish_role(r->host, val, rewrite);
    }
}

/* ---------------------------------------------------------------- ROLE */

void
repl_role(const struct repl *r, struct repl_role *out)
{
    memset(out, 0, sizeof(*out));
    out->offset = repl_last_lsn(r);
    out->replica = r->replica;
    if (r->replica) {
        out->host = r->mhost;
        out->port = repl_link_port(r); /* the port this shard follows */
        out->state = replica_state_name(r);
    }
}

void
repl_each_replica(const struct repl *r, repl_peer_fn *fn, void *arg)
{
    for (const struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_ONLINE) {
            fn(arg, l->ip, l->port, l->ack);
        }
    }
}

/* ---------------------------------------------------------------- WAIT */

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

enum repl_wait_rc
repl_wait(struct repl *r, void *c, uint64_t lsn, bool aof, long need, long need_local,
          int64_t timeout, bool no_block, long *local, long *acked)
{
    if (r->replica) {
        return REPL_WAIT_REPLICA;
    }
    struct wal *wal = repl_wal(r);
    if (aof && need_local > 0 && wal == NULL) {
        return REPL_WAIT_NO_WAL;
    }
    if (lsn == 0) {
        lsn = repl_last_lsn(r);
    }
    *local = aof && wal && r->ops->durable_lsn(r->host) >= lsn ? 1 : 0;
    *acked = count_acked(r, lsn, aof);
    if ((*local >= need_local && *acked >= need) || no_block) {
        return REPL_WAIT_DONE;
    }
    struct waiter *w = rv_calloc(1, sizeof(*w));
    w->c = c;
    w->lsn = lsn;
    w->need = need;
    w->need_local = need_local;
    w->deadline_ms = timeout > 0 ? repl_now(r) + timeout : 0;
    w->next = r->waiters;
    r->waiters = w;
    r->ask_ack = true;
    return REPL_WAIT_BLOCKED;
}

void
primary_check_waiters(struct repl *r, int64_t now)
{
    struct wal *wal = repl_wal(r);
    for (struct waiter **pp = &r->waiters; *pp;) {
        struct waiter *w = *pp;
        if (w->paused) {
            pp = &w->next;
            continue;
        }
        bool aof = w->need_local >= 0;
        long acked = count_acked(r, w->lsn, aof);
        long local = aof && wal && r->ops->durable_lsn(r->host) >= w->lsn ? 1 : 0;
        bool done = acked >= w->need && (!aof || local >= w->need_local);
        if (!done && (w->deadline_ms == 0 || now < w->deadline_ms)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        void *c = w->c;
        rv_free(w);
        r->ops->client_wake(r->host, c, aof ? REPL_WAKE_WAITAOF : REPL_WAKE_WAIT, local, acked,
                            NULL);
    }
}
