/* node/server/repl_host.c: the shard as replication's host
 * (replication/repl_host.h). Replication sits below the node and reaches its
 * shard only through these operations; host is the struct shard. */
#include "node/server/repl_host.h"

#include "base/mem.h"
#include "base/rand.h"
#include "node/commands/function.h"
#include "node/commands/migrate_stage.h"
#include "node/core/cmd.h"
#include "node/server/dispatch.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/block.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "node/persist/replay.h"
#include "node/features/hook.h"
#include "node/features/ksnotify.h"
#include "node/features/topology.h"
#include "replication/repl.h"
#include "replication/repl_host.h"
#include "wal/wal.h"

#include "base/log.h"

_Static_assert(REPL_NO_EXPIRE == KS_NO_EXPIRE, "repl_key.expire_ms is the keyspace's");

static void
h_info(void *host, struct repl_host_info *out)
{
    struct shard *s = host;
    out->shard = shard_env(s)->id;
    out->nshards = shard_env(s)->node->nshards;
    out->run_id = shard_env(s)->node->run_id;
    out->memory = persist_memory_mode(s);
    out->dir = persist_dir(s);
    out->log_maybe_short = persist_log_maybe_short(s);
    out->cluster = shard_env(s)->cfg->cluster.enabled;
}

/* Snapshots are never changed in place nor freed before exit: the pointer
 * names one. */
static const void *
h_cfg_id(void *host)
{
    return shard_env(host)->cfg;
}

static void
h_cfg(void *host, struct repl_cfg *out)
{
    const struct cfg *c = shard_env(host)->cfg;
    out->replicaof = c->repl.replicaof;
    out->masterauth = c->repl.masterauth;
    out->masteruser = c->repl.masteruser;
    out->replica_announce_ip = c->repl.replica_announce_ip;
    out->cluster_announce_ip = c->cluster.announce_ip;
    out->bind = c->net.bind;
    out->port = c->net.port;
    out->tls_port = c->tls.port;
    out->tls_replication = c->tls.replication;
    out->replica_announce_port = c->repl.replica_announce_port;
    out->repl_backlog_size = c->repl.repl_backlog_size;
    out->repl_timeout = c->repl.repl_timeout;
    out->repl_frame_limit = c->repl.repl_frame_limit;
    out->repl_backlog_ttl = c->repl.repl_backlog_ttl;
    out->repl_ship_delay_us = c->repl.repl_ship_delay_us;
    out->wal_segment_bytes = c->persist.wal_segment_bytes;
    out->replica_priority = c->repl.replica_priority;
    out->min_replicas_to_write = c->repl.min_replicas_to_write;
    out->min_replicas_max_lag = c->repl.min_replicas_max_lag;
    out->min_sync_replicas = c->repl.min_sync_replicas;
    out->obl_hard = c->net.obl_hard[CFG_OBL_REPLICA];
    out->obl_soft = c->net.obl_soft[CFG_OBL_REPLICA];
    out->obl_secs = c->net.obl_secs[CFG_OBL_REPLICA];
    out->replica_read_only = c->repl.replica_read_only;
    out->replica_serve_stale_data = c->repl.replica_serve_stale_data;
}

static struct tls_ctx *
h_tls_client(void *host)
{
    return shard_env(host)->cfg->tls.replication ? node_tls_get(false) : NULL;
}

static struct event_base *
h_base(void *host)
{
    return shard_base(host);
}

static int64_t
h_now_ms(void *host)
{
    return shard_env(host)->now_ms;
}

static int64_t
h_refresh_clock(void *host)
{
    return shard_refresh_clock(host);
}

static uint64_t
h_next_client_id(void *host)
{
    return shard_next_conn_id(host);
}

static void
h_count_obl_close(void *host)
{
    shard_env(host)->stats.client_output_limit_disconnections++;
}

static struct wal *
h_wal(void *host)
{
    return persist_wal(host);
}

static uint64_t
h_last_lsn(void *host)
{
    return persist_last_lsn(host);
}

static uint64_t
h_durable_lsn(void *host)
{
    return persist_durable_lsn(host);
}

static void
h_set_next_lsn(void *host, uint64_t lsn)
{
    persist_set_next_lsn(host, lsn);
}

static void
h_log_on(void *host)
{
    persist_repl_log_on(host);
}

/* Every database follows the role (numbered databases beside db 0). */
static void
replica_mode_all(void *host, bool on)
{
    struct shard_env *env = shard_env(host);
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            ks_set_replica_mode(env->dbs[i], on);
        }
    }
}

static void
h_set_role(void *host, bool replica)
{
    persist_repl_set_replica(host, replica);
    replica_mode_all(host, replica);
    if (shard_env(host)->topo != NULL) { /* (cluster mode: a FAILOVER hand-over) */
        if (replica) {
            topology_replica_now(host);
        } else {
            topology_primary_now(host);
        }
    }
}

static void
h_set_guard(void *host, bool on)
{
    persist_repl_set_guard(host, on);
}

static void
h_set_stale(void *host, bool on)
{
    persist_repl_set_stale(host, on);
}

/* The role is config state too: CONFIG GET/REWRITE show it (Sentinel
 * persists a repointing with CONFIG REWRITE). */
static void
h_publish_role(void *host, const char *val, bool rewrite)
{
    struct shard *s = host;
    struct node *n = shard_env(s)->node;
    struct cfg *next = cfg_dup(shard_env(s)->cfg);
    (void)cfg_set_state(next, "replicaof", val);
    node_publish_cfg(n, next);
    shard_adopt_cfg(s);
    for (unsigned i = 0; i < n->nshards; i++) {
        if (n->shards[i] != s) {
            shard_wake(n->shards[i]);
        }
    }
    char err[512];
    if (rewrite && cfg_file()[0] != '\0' && cfg_rewrite(shard_env(s)->cfg, err, sizeof(err)) != 0) {
        log_warn("the new role (replicaof '%s') could not be written to %s: %s", val, cfg_file(),
                 err);
    }
}

static void
h_role_hook(void *host, const char *old_role, const char *new_role, uint64_t epoch,
            const char *addr, int port)
{
    hook_role_change(old_role, new_role, epoch, addr, port);
}

static void
h_unblock_all(void *host, const char *err)
{
    block_unblock_all(host, err);
}

static unsigned
h_client_state(void *host, void *cl)
{
    const struct conn *c = cl;
    return (c->flags & CONN_MULTI ? REPL_CL_MULTI : 0) |
           (c->flags & CONN_IN_EXEC ? REPL_CL_EXEC : 0) |
           (c->flags & CONN_REPLAY ? REPL_CL_REPLAY : 0);
}

static void
h_client_error(void *host, void *c, const char *text)
{
    reply_errf(c, "%s", text);
}

static void
h_client_pause(void *host, void *cl)
{
    struct conn *c = cl;
    c->rbuf.off = c->cmd_start; /* parse the command again once resumed */
    c->flags |= CONN_BLOCKED;
}

static void
h_client_wake(void *host, void *cl, enum repl_wake how, long local, long acked, const char *err)
{
    struct conn *c = cl;
    c->flags &= ~CONN_BLOCKED;
    switch (how) {
    case REPL_WAKE_WAIT: reply_int(c, acked); break;
    case REPL_WAKE_WAITAOF:
        reply_array(c, 2);
        reply_int(c, local);
        reply_int(c, acked);
        break;
    case REPL_WAKE_ERROR: reply_errf(c, "%s", err); break;
    case REPL_WAKE_RESUME: break;
    }
    conn_resume(c);
    shard_want_write(c->shard, c);
}

static void *
h_replay_open(void *host)
{
    return replay_create(host);
}

static void
h_replay_close(void *rp)
{
    replay_destroy(rp);
}

static bool
h_replay_exec(void *rp, int argc, const struct rv_str *argv, char *err, size_t errsz)
{
    return replay_exec(rp, argc, argv, err, errsz);
}

static void
h_replay_record(void *rp)
{
    replay_set_db(rp, 0);
}

static void
h_apply_begin(void *host, bool stream)
{
    replica_mode_all(host, false); /* records run with their own clock */
    if (stream) {
        cmd_batch_runs_begin();
    }
}

static void
h_set_clock(void *host, int64_t ms)
{
    shard_set_clock(host, ms);
}

static void
h_apply_end(void *host, bool stream)
{
    if (stream) {
        cmd_batch_runs_end();
    }
    replica_mode_all(host, true);
    shard_refresh_clock(host);
}

/* A full sync loads a whole set of databases beside the served one (the
 * others are created as its records SELECT them, like db 0's settings). */
static void *
h_load_new(void *host, size_t keys_hint)
{
    struct ks **dbs = rv_calloc(shard_env(host)->ndbs, sizeof(*dbs));
    struct ks *ks = ks_create(rand_u64(), rand_u64());
    ks_reserve(ks, keys_hint);
    ks_set_replica_mode(ks, true);
    ks_set_lazy(ks, shard_lazy_offer, shard_env(host), shard_lazy_mask(shard_env(host)->cfg));
    persist_hook_ks(host, ks);
    ksn_hook_ks(host, ks);
    dbs[0] = ks;
    return dbs;
}

static void
dbs_free(void *host, struct ks **dbs)
{
    for (unsigned i = 0; i < shard_env(host)->ndbs; i++) {
        ks_destroy(dbs[i]);
    }
    rv_free(dbs);
}

static void
h_load_drop(void *host, void *ld)
{
    dbs_free(host, ld);
}

static void *
h_load_enter(void *host, void *ld)
{
    persist_side_load(host, true); /* a checkpoint walking the served keyspace must not see these */
    return shard_swap_dbs(host, ld);
}

static void
h_load_leave(void *host, void *served)
{
    persist_side_load(host, false);
    shard_swap_dbs(host, served);
}

/* The keys a full sync replaced: with replica-lazy-flush, each database is
 * emptied at once and its keys freed on the lazy-free thread (Redis's
 * emptyData with EMPTYDB_ASYNC, counted in lazyfreed_objects). */
static void
dbs_flush_lazy(struct shard_env *env, struct ks **dbs)
{
    for (unsigned i = 0; i < env->ndbs; i++) {
        size_t keys = dbs[i] != NULL ? ks_size(dbs[i]) : 0;
        struct ks_husk *h = keys != 0 ? ks_flush_detach(dbs[i]) : NULL;
        if (h != NULL) {
            shard_lazy_put(env, ks_husk_free, h, keys);
        }
    }
}

static void
h_load_install(void *host, void *ld)
{
    ks_reserve(((struct ks **)ld)[0], 0);
    struct ks **old = shard_swap_dbs(host, ld);
    struct shard_env *env = shard_env(host);
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            ks_set_clock(env->dbs[i], env->now_ms);
        }
    }
    if (env->cfg->repl.replica_lazy_flush) {
        dbs_flush_lazy(env, old);
    }
    dbs_free(host, old);
}

static int
h_rebase_begin(void *host, uint64_t lsn, char *err, size_t errsz)
{
    return persist_rebase_begin(host, lsn, err, errsz);
}

static int
h_rebase(void *host, uint64_t lsn, char *err, size_t errsz)
{
    return persist_rebase(host, lsn, err, errsz);
}

static size_t
h_keys(void *host)
{
    struct shard_env *env = shard_env(host);
    size_t n = 0;
    for (unsigned i = 0; i < env->ndbs; i++) {
        n += env->dbs[i] != NULL ? ks_size(env->dbs[i]) : 0;
    }
    return n;
}

/* A full sync's walk: a snapshot iterator per database that exists when it
 * starts (one created later was empty then), walked in turn, their keys
 * handed to replication as repl_keys. */
struct walk_db {
    struct walk *w;
    struct ks_snap *sn;
    unsigned db;
};

struct walk {
    repl_key_fn *fn;
    void *arg;
    struct walk_db *dbs;
    unsigned n, cur;
};

static void
walk_emit(void *arg, const struct ks_entry *e)
{
    struct walk_db *wd = arg;
    struct repl_key k = { ks_entry_key(e), ks_entry_expire(e), e, wd->db };
    wd->w->fn(wd->w->arg, &k);
}

static void *
h_snap_begin(void *host, repl_key_fn *fn, void *arg)
{
    struct shard_env *env = shard_env(host);
    struct walk *w = rv_calloc(1, sizeof(*w));
    w->fn = fn;
    w->arg = arg;
    w->dbs = rv_calloc(env->ndbs, sizeof(*w->dbs));
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            struct walk_db *wd = &w->dbs[w->n++];
            *wd = (struct walk_db){ w, ks_snap_begin(walk_emit, wd), i };
        }
    }
    return w;
}

static bool
h_snap_next(void *host, void *snap, unsigned count)
{
    struct walk *w = snap;
    if (w->cur < w->n) {
        struct walk_db *wd = &w->dbs[w->cur];
        if (ks_snap_next(wd->sn, shard_env(host)->dbs[wd->db], count)) {
            w->cur++;
        }
    }
    return w->cur == w->n;
}

/* Before a write changes key in the running command's database. */
static void
h_snap_touch(void *host, void *snap, const char *key, size_t len)
{
    struct walk *w = snap;
    struct shard_env *env = shard_env(host);
    for (unsigned i = 0; i < w->n; i++) {
        if (w->dbs[i].db == env->db) {
            ks_snap_touch(w->dbs[i].sn, env->ks, key, len);
        }
    }
}

static void
h_snap_end(void *host, void *snap)
{
    struct walk *w = snap;
    for (unsigned i = 0; i < w->n; i++) {
        ks_snap_end(w->dbs[i].sn);
    }
    rv_free(w->dbs);
    rv_free(w);
}

static void
h_rebuild(void *host, const void *entry, repl_cmd_fn *fn, void *arg)
{
    persist_rebuild_entry(entry, fn, arg);
}

static void
h_state(void *host, repl_cmd_fn *fn, void *arg)
{
    fn_emit_sync(host, fn, arg);
    mstage_emit(host, fn, arg); /* (a COMMIT streamed after the snapshot needs them) */
}

static void
h_set_cow(void *host, bool on)
{
    persist_repl_set_cow(host, on);
}

static const struct repl_host_ops ops = {
    .tls_client = h_tls_client,
    .info = h_info,
    .cfg_id = h_cfg_id,
    .cfg = h_cfg,
    .base = h_base,
    .now_ms = h_now_ms,
    .refresh_clock = h_refresh_clock,
    .next_client_id = h_next_client_id,
    .count_obl_close = h_count_obl_close,
    .wal = h_wal,
    .last_lsn = h_last_lsn,
    .durable_lsn = h_durable_lsn,
    .set_next_lsn = h_set_next_lsn,
    .log_on = h_log_on,
    .set_role = h_set_role,
    .set_guard = h_set_guard,
    .set_stale = h_set_stale,
    .publish_role = h_publish_role,
    .role_hook = h_role_hook,
    .unblock_all = h_unblock_all,
    .client_state = h_client_state,
    .client_error = h_client_error,
    .client_pause = h_client_pause,
    .client_wake = h_client_wake,
    .replay_open = h_replay_open,
    .replay_close = h_replay_close,
    .replay_exec = h_replay_exec,
    .replay_record = h_replay_record,
    .apply_begin = h_apply_begin,
    .set_clock = h_set_clock,
    .apply_end = h_apply_end,
    .load_new = h_load_new,
    .load_drop = h_load_drop,
    .load_enter = h_load_enter,
    .load_leave = h_load_leave,
    .load_install = h_load_install,
    .rebase_begin = h_rebase_begin,
    .rebase = h_rebase,
    .keys = h_keys,
    .snap_begin = h_snap_begin,
    .snap_next = h_snap_next,
    .snap_touch = h_snap_touch,
    .snap_end = h_snap_end,
    .rebuild = h_rebuild,
    .set_cow = h_set_cow,
    .state = h_state,
};

void
repl_host_install(void)
{
    repl_host_set(&ops);
}
