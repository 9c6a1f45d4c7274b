/* node/persist/snap.c: checkpoints: a consistent snapshot of one shard, written while
 * the shard keeps serving, with no fork.
 *
 * A checkpoint covers every record up to LSN L, the last one staged when it
 * starts. The keyspace is walked by the snapshot iterator (ks_snap_*, in
 * node/keyspace) in slices of about 1 ms; before a write command changes a key
 * the walk has not reached, ks_snap_touch writes the key's value at L first,
 * so each key of L is written once with its value at L. Expiry needs no copy: a key that expires before the scan
 * reaches it is expired at any later clock, which is when the records after L
 * are replayed. FLUSHALL restarts the snapshot.
 *
 * Each key is one record of rebuild commands (SET, or the type's emit(), then
 * PEXPIREAT); a key past WAL_SPLIT_REC bytes goes on in further records. The
 * end record counts records. The file is written to ckpt-<L>.ckpt.tmp; a helper thread then
 * fdatasyncs it, renames it into place and fsyncs the directory, and the shard
 * drops the WAL segments and older checkpoints the new one covers. */
#include "node/persist/persist_int.h"

#include "base/clock.h"
#define LOG_MODULE "snap"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "node/persist/snap.h"
#include "node/core/shard.h"
#include "replication/repl.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SNAP_SLICE_US 1000
#define SNAP_FLUSH_BYTES (1u << 20)

struct snap {
    struct wal_ckpt *k;
    uint64_t lsn;
    int64_t created;
    /* The walks of the databases as of L, one per database that existed
     * then (a database created later was empty at L): its[cur] is walking. */
    struct snap_db *its;
    unsigned nits, cur;
    bool scan_done;
    bool failed;
    char why[256];
    uint64_t nkeys;
    uint64_t nrecs; /* the end record's count: a long key takes several */
    uint64_t changes_at_start;
    int64_t t0_ms;
    struct event *ev;
    /* finishing on a helper thread */
    bool finishing;
    pthread_t th;
    int finish_rc;
};

struct snap_done_msg {
    struct shard_msg m;
    struct snap *sn;
    struct shard *to;
    long long freed; /* bytes of the shard's charge the finishing thread freed */
};

struct snap_db {
    struct ks_snap *it;
    struct persist *p;
    unsigned db;
};

struct dump_ctx {
    unsigned db; /* a record of another database than 0 starts with SELECT */
    struct buf *b;
    size_t start; /* the record's payload */
    size_t mark;  /* the record's header */
    struct snap *sn;
    bool split_failed;
};

/* Replay starts every record in database 0. */
static void
pay_select(struct buf *b, size_t start, unsigned db)
{
    if (db != 0) {
        char num[12];
        int n = snprintf(num, sizeof(num), "%u", db);
        struct rv_str v[2] = { { "SELECT", 6 }, { num, (size_t)n } };
        wal_pay_cmd(b, start, 2, v);
    }
}

static void
dump_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct dump_ctx *d = arg;
    if (d->split_failed) {
        return;
    }
    if (d->b->len - d->start >= WAL_SPLIT_REC) {
        /* a long key goes on in another record: replay appends to it */
        if (wal_ckpt_rec_end(d->sn->k, d->mark) != 0) {
            d->split_failed = true;
            return;
        }
        d->sn->nrecs++;
        d->mark = wal_ckpt_rec_begin(d->sn->k);
        d->start = d->b->len;
        wal_pay_begin(d->b, WAL_P_CMDS);
        pay_select(d->b, d->start, d->db);
    }
    wal_pay_cmd(d->b, d->start, argc, argv);
}

void
snap_emit_entry(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct rv_str key = ks_entry_key(e);
    enum ks_type t = ks_entry_type(e);
    if (t == KS_STRING) {
        char scratch[24];
        struct rv_str v[3] = { { "SET", 3 }, key, ks_str_get(e, scratch) };
        fn(arg, 3, v);
    } else {
        const struct obj_ops *ops = obj_ops_of(t);
        if (ops && ops->emit) {
            ops->emit(e, fn, arg);
        }
    }
    int64_t dl = ks_entry_expire(e);
    if (dl != KS_NO_EXPIRE) {
        char num[24];
        int n = snprintf(num, sizeof(num), "%" PRId64, dl);
        struct rv_str v[3] = { { "PEXPIREAT", 9 }, key, { num, (size_t)n } };
        fn(arg, 3, v);
    }
}

/* Write one key's record; skip keys already expired. */
static void
dump_entry(struct persist *p, unsigned db, const struct ks_entry *e)
{
    struct snap *sn = p->snap;
    int64_t dl = ks_entry_expire(e);
    if (dl != KS_NO_EXPIRE && dl <= shard_env(p->s)->now_ms) {
        return;
    }
    enum ks_type t = ks_entry_type(e);
    if (t != KS_STRING) {
        const struct obj_ops *ops = obj_ops_of(t);
        if (ops == NULL || ops->emit == NULL) {
            if (!sn->failed) {
                sn->failed = true;
                snprintf(sn->why, sizeof(sn->why), "values of type %s cannot be checkpointed yet",
                         obj_type_name(t));
            }
            return;
        }
    }
    size_t mark = wal_ckpt_rec_begin(sn->k);
    struct dump_ctx d = { db, wal_ckpt_buf(sn->k), wal_ckpt_buf(sn->k)->len, mark, sn, false };
    wal_pay_begin(d.b, WAL_P_CMDS);
    pay_select(d.b, d.start, db);
    snap_emit_entry(e, dump_cmd, &d);
    if (d.split_failed || wal_ckpt_rec_end(sn->k, d.mark) != 0) {
        /* one command of the key's is over what a record can hold */
        if (!sn->failed) {
            struct rv_str k = ks_entry_key(e);
            sn->failed = true;
            snprintf(sn->why, sizeof(sn->why), "key '%.*s' needs a record over the %llu-byte limit",
                     (int)(k.len > 64 ? 64 : k.len), k.p, (unsigned long long)WAL_MAX_REC);
        }
        return;
    }
    sn->nkeys++;
    sn->nrecs++;
}

/* The node state's record (persist_set_state_fn, then
 * persist_set_shard_state_fn), begun at its first command. */
static persist_state_fn *state_fn;
static persist_state_fn *shard_state_fn;

void
persist_set_state_fn(persist_state_fn *fn)
{
    state_fn = fn;
}

void
persist_set_shard_state_fn(persist_state_fn *fn)
{
    shard_state_fn = fn;
}

void
snap_emit_state(struct shard *s, obj_emit_fn *fn, void *arg)
{
    if (state_fn != NULL) {
        state_fn(s, fn, arg);
    }
}

struct state_ctx {
    struct dump_ctx d;
    bool open;
};

static void
state_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct state_ctx *x = arg;
    if (!x->open) {
        x->d.mark = wal_ckpt_rec_begin(x->d.sn->k);
        x->d.b = wal_ckpt_buf(x->d.sn->k);
        x->d.start = x->d.b->len;
        wal_pay_begin(x->d.b, WAL_P_CMDS);
        x->open = true;
    }
    dump_cmd(&x->d, argc, argv);
}

static void
dump_state(struct persist *p, struct snap *sn)
{
    struct state_ctx x = { .d = { .sn = sn } };
    if (state_fn != NULL) {
        state_fn(p->s, state_cmd, &x);
    }
    if (shard_state_fn != NULL) {
        shard_state_fn(p->s, state_cmd, &x);
    }
    if (!x.open) {
        return;
    }
    if (x.d.split_failed || wal_ckpt_rec_end(sn->k, x.d.mark) != 0) {
        sn->failed = true;
        snprintf(sn->why, sizeof(sn->why),
                 "the function libraries and slot imports need a record over the "
                 "%llu-byte limit",
                 (unsigned long long)WAL_MAX_REC);
        return;
    }
    sn->nrecs++;
}

static void
emit_cb(void *arg, const struct ks_entry *e)
{
    struct snap_db *w = arg;
    dump_entry(w->p, w->db, e);
}

/* The walk of the running command's database, or NULL (created after L). */
static struct ks_snap *
snap_it_of(struct snap *sn, unsigned db)
{
    for (unsigned i = 0; i < sn->nits; i++) {
        if (sn->its[i].db == db) {
            return sn->its[i].it;
        }
    }
    return NULL;
}

void
snap_touch(struct persist *p, const char *key, size_t len)
{
    struct snap *sn = p->snap;
    if (sn == NULL || sn->scan_done || sn->failed) {
        return;
    }
    struct shard_env *env = shard_env(p->s);
    struct ks_snap *it = snap_it_of(sn, env->db);
    if (it != NULL) {
        ks_snap_touch(it, env->ks, key, len);
    }
}

static void *
finish_main(void *arg)
{
    struct snap_done_msg *m = arg;
    struct snap *sn = m->sn;
    pthread_setname_np(pthread_self(), "ruvio-ckpt");
    long long mem0 = rv_mem_thread_net();
    sn->finish_rc = wal_ckpt_finish(sn->k, sn->nrecs);
    m->freed = mem0 - rv_mem_thread_net();
    sn->k = NULL;
    shard_post(m->to, &m->m);
    return NULL;
}

static void
remove_older(struct persist *p, uint64_t lsn)
{
    struct wal_file *segs = NULL, *cks = NULL;
    size_t ns = 0, nc = 0;
    if (wal_list(p->dir, &segs, &ns, &cks, &nc) != 0) {
        return;
    }
    for (size_t i = 0; i < nc; i++) {
        if (cks[i].lsn < lsn) {
            unlink(cks[i].path);
        }
    }
    if (p->w == NULL) {
        /* memory mode: segments left by an earlier durable run */
        for (size_t i = 0; i + 1 <= ns; i++) {
            bool covered = i + 1 < ns ? segs[i + 1].lsn - 1 <= lsn : false;
            if (covered || (i + 1 == ns && p->next_lsn - 1 <= lsn)) {
                unlink(segs[i].path);
            }
        }
    }
    rv_free(segs);
    rv_free(cks);
}

static void
snap_free(struct snap *sn)
{
    if (sn->ev) {
        event_free(sn->ev);
    }
    wal_ckpt_abort(sn->k);
    for (unsigned i = 0; i < sn->nits; i++) {
        ks_snap_end(sn->its[i].it);
    }
    rv_free(sn->its);
    rv_free(sn);
}

/* On the shard: the file is in place (or not). */
static void
snap_done(struct persist *p, struct snap *sn)
{
    int64_t took = clock_unix_ms() - sn->t0_ms;
    p->last_ckpt_ms = took;
    if (sn->finish_rc == 0) {
        p->ckpt_lsn = sn->lsn;
        p->lastsave_ms = sn->created;
        p->last_ckpt_ok = true;
        p->saves++;
        p->changes = p->changes > sn->changes_at_start ? p->changes - sn->changes_at_start : 0;
        if (p->w) {
            wal_drop_covered(p->w, p->repl ? repl_retain_lsn(p->repl, sn->lsn) : sn->lsn);
        }
        remove_older(p, sn->lsn);
        persist_ckpt_done(p, sn->lsn);
        log_notice("[shard %u] checkpoint at LSN %" PRIu64 ": %" PRIu64 " keys in %" PRId64 " ms",
                   shard_env(p->s)->id, sn->lsn, sn->nkeys, took);
    } else {
        p->last_ckpt_ok = false;
        log_warn("[shard %u] checkpoint at LSN %" PRIu64 " failed: %s", shard_env(p->s)->id,
                 sn->lsn, sn->failed ? sn->why : strerror(-sn->finish_rc));
        if (p->rebase) {
            p->rebase_retry_ms = shard_env(p->s)->now_ms +
                                 1000; /* a full sync's data set needs one */
        }
    }
}

static void
on_done_msg(struct shard *s, struct shard_msg *mm)
{
    struct snap_done_msg *m = (struct snap_done_msg *)mm;
    struct persist *p = persist_of(s);
    if (p != NULL && p->snap == m->sn) {
        pthread_join(m->sn->th, NULL);
        snap_done(p, m->sn);
        p->snap = NULL;
        snap_cow_refresh(p);
        snap_free(m->sn);
    }
    /* The shard allocated m itself, so undo the inbox's hand-over credit too. */
    rv_mem_thread_adjust(-m->freed - (long long)rv_usable_size(m));
    rv_free(m);
}

static void
snap_finish_async(struct persist *p)
{
    struct snap *sn = p->snap;
    struct snap_done_msg *m = rv_calloc(1, sizeof(*m));
    m->m.run = on_done_msg;
    m->sn = sn;
    m->to = p->s;
    sn->finishing = true;
    if (pthread_create(&sn->th, NULL, finish_main, m) != 0) {
        sn->finish_rc = wal_ckpt_finish(sn->k, sn->nrecs);
        sn->k = NULL;
        sn->finishing = false;
        rv_free(m);
        snap_done(p, sn);
        p->snap = NULL;
        snap_cow_refresh(p);
        snap_free(sn);
    }
}

/* One slice of the scan; true when the scan is complete. */
static bool
snap_step(struct persist *p, uint64_t budget_us)
{
    struct snap *sn = p->snap;
    uint64_t t0 = clock_mono_us();
    do {
        struct snap_db *w = &sn->its[sn->cur];
        if (ks_snap_next(w->it, shard_env(p->s)->dbs[w->db], 64) && ++sn->cur == sn->nits) {
            sn->scan_done = true;
            snap_cow_refresh(p);
        }
        int rc = wal_ckpt_flush(sn->k, SNAP_FLUSH_BYTES);
        if (rc < 0 && !sn->failed) {
            sn->failed = true;
            snprintf(sn->why, sizeof(sn->why), "writing the checkpoint: %s", strerror(-rc));
        }
    } while (!sn->scan_done && !sn->failed && clock_mono_us() - t0 < budget_us);
    return sn->scan_done || sn->failed;
}

static void
snap_end_scan(struct persist *p)
{
    struct snap *sn = p->snap;
    if (sn->failed) {
        sn->finish_rc = -EIO;
        snap_done(p, sn);
        p->snap = NULL;
        snap_cow_refresh(p);
        snap_free(sn);
        return;
    }
    snap_finish_async(p);
}

static void
on_slice(evutil_socket_t fd, short what, void *arg)
{
    struct persist *p = arg;
    (void)fd;
    (void)what;
    if (p->snap == NULL || p->snap->finishing) {
        return;
    }
    shard_refresh_clock(p->s);
    if (snap_step(p, SNAP_SLICE_US)) {
        snap_end_scan(p);
        return;
    }
    struct timeval tv = { 0, 0 };
    evtimer_add(p->snap->ev, &tv);
}

int
snap_start(struct persist *p, char *err, size_t errsz)
{
    if (p->snap != NULL) {
        snprintf(err, errsz, "ERR Background save already in progress");
        return -1;
    }
    if (p->rec_open) {
        snprintf(err, errsz, "ERR a checkpoint cannot start inside a transaction that wrote");
        return -1;
    }
    p->ckpt_pending = false;
    uint64_t lsn = p->next_lsn - 1;
    if (p->w) {
        if (wal_rotate(p->w) != 0) {
            snprintf(err, errsz, "ERR cannot start a new WAL segment for the checkpoint");
            return -1;
        }
        lsn = wal_last_lsn(p->w);
    }
    const struct cfg *cfg = shard_env(p->s)->cfg;
    struct wal_ckpt_info info = { .shard = shard_env(p->s)->id,
                                  .nshards = (unsigned)cfg->node.shards,
                                  .lsn = lsn,
                                  .created_ms = shard_env(p->s)->now_ms };
    size_t nk = 0;
    for (unsigned i = 0; i < shard_env(p->s)->ndbs; i++) {
        nk += shard_env(p->s)->dbs[i] ? ks_size(shard_env(p->s)->dbs[i]) : 0;
    }
    info.keys_hint = nk > UINT32_MAX ? UINT32_MAX : (uint32_t)nk;
    char why[512];
    struct wal_ckpt *k = wal_ckpt_create(p->dir, &info, why, sizeof(why));
    if (k == NULL) {
        snprintf(err, errsz, "ERR %s", why);
        p->last_ckpt_ok = false;
        return -1;
    }
    struct snap *sn = rv_calloc(1, sizeof(*sn));
    sn->k = k;
    sn->lsn = lsn;
    sn->created = info.created_ms;
    struct shard_env *env = shard_env(p->s);
    sn->its = rv_calloc(env->ndbs, sizeof(*sn->its));
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            struct snap_db *w = &sn->its[sn->nits++];
            w->p = p;
            w->db = i;
            w->it = ks_snap_begin(emit_cb, w);
        }
    }
    dump_state(p, sn);
    sn->changes_at_start = p->changes;
    sn->t0_ms = clock_unix_ms();
    p->snap = sn;
    p->hot.cow = true;
    if (p->w) {
        p->wal_at_ckpt = wal_bytes(p->w);
    }
    if (shard_base(p->s) != NULL) {
        sn->ev = evtimer_new(shard_base(p->s), on_slice, p);
        struct timeval tv = { 0, 0 };
        evtimer_add(sn->ev, &tv);
    }
    return 0;
}

int
snap_run_sync(struct persist *p, char *err, size_t errsz)
{
    if (snap_start(p, err, errsz) != 0) {
        return -1;
    }
    struct snap *sn = p->snap;
    while (!snap_step(p, UINT64_MAX / 2)) {
    }
    if (!sn->failed) {
        sn->finish_rc = wal_ckpt_finish(sn->k, sn->nrecs);
        sn->k = NULL;
    } else {
        sn->finish_rc = -EIO;
    }
    int rc = sn->finish_rc;
    if (rc != 0) {
        snprintf(err, errsz, "ERR %s", sn->failed ? sn->why : strerror(-rc));
    }
    snap_done(p, sn);
    p->snap = NULL;
    snap_cow_refresh(p);
    snap_free(sn);
    return rc == 0 ? 0 : -1;
}

/* Copy-on-write is needed while a checkpoint walks or a replication full
 * sync does (p->repl_cow). */
void
snap_cow_refresh(struct persist *p)
{
    p->hot.cow = (p->snap != NULL && !p->snap->scan_done) || p->repl_cow;
}

void
snap_all_changed(struct persist *p)
{
    if (p->snap == NULL || p->snap->finishing || p->snap->scan_done) {
        return;
    }
    /* Restart: everything the file holds is about to be replaced. */
    snap_abort(p);
    if (p->rec_open) {
        /* inside EXEC: the keyspace already holds the open record's first
         * commands, so the new snapshot must cover that record: start it
         * once the record is sealed */
        p->ckpt_pending = true;
        return;
    }
    char err[256];
    if (snap_start(p, err, sizeof(err)) != 0) {
        log_warn("[shard %u] restarting the checkpoint after a flush: %s", shard_env(p->s)->id,
                 err);
    }
}

void
snap_abort(struct persist *p)
{
    struct snap *sn = p->snap;
    if (sn == NULL) {
        return;
    }
    if (sn->finishing) {
        return; /* snap_wait_finish() collects it */
    }
    p->snap = NULL;
    snap_cow_refresh(p);
    snap_free(sn);
}

void
snap_wait_finish(struct persist *p)
{
    struct snap *sn = p->snap;
    if (sn == NULL || !sn->finishing) {
        return;
    }
    pthread_join(sn->th, NULL); /* the thread has finished (and released) the file */
    snap_done(p, sn);
    p->snap = NULL; /* its posted message then sees no snap and only frees itself */
    snap_cow_refresh(p);
    snap_free(sn);
}

void
snap_after_record(struct persist *p)
{
    if (p->snap != NULL || p->rec_open) {
        p->ckpt_pending = false;
        return;
    }
    char err[256];
    if (snap_start(p, err, sizeof(err)) != 0) {
        log_warn("[shard %u] starting the checkpoint asked for inside a transaction: %s",
                 shard_env(p->s)->id, err);
    }
}

void
snap_cron(struct persist *p)
{
    const struct cfg *cfg = shard_env(p->s)->cfg;
    if (p->snap == NULL && p->w && p->rebase && !p->rec_open &&
        shard_env(p->s)->now_ms >= p->rebase_retry_ms) {
        /* a full sync's data set has no checkpoint yet (it failed or was aborted) */
        char err[256];
        if (snap_start(p, err, sizeof(err)) != 0) {
            log_warn("[shard %u] checkpoint of the full sync's data set: %s", shard_env(p->s)->id,
                     err);
            p->rebase_retry_ms = shard_env(p->s)->now_ms + 1000;
        }
        return;
    }
    if (p->snap == NULL && p->w && cfg->persist.checkpoint_wal_bytes > 0 && !p->rec_open &&
        wal_bytes(p->w) > p->wal_at_ckpt + (uint64_t)cfg->persist.checkpoint_wal_bytes) {
        char err[256];
        if (snap_start(p, err, sizeof(err)) != 0) {
            log_warn("[shard %u] automatic checkpoint: %s", shard_env(p->s)->id, err);
            p->wal_at_ckpt = wal_bytes(p->w); /* retry after as many bytes again */
        }
    }
}

int
snap_active(const struct persist *p)
{
    return p->snap != NULL;
}

uint64_t
snap_keys(const struct persist *p)
{
    return p->snap ? p->snap->nkeys : 0;
}

void
snap_remove_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n > 9 && strncmp(de->d_name, "ckpt-", 5) == 0 &&
            strcmp(de->d_name + n - 4, ".tmp") == 0) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

/* ---------------------------------------------------------------- command hooks */

void
persist_before_write(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct persist *p = persist_of(c->shard);
    if (p == NULL || p->loading || p->side_load) {
        return; /* (side_load: these keys are not the ones being walked) */
    }
    bool ck = p->snap != NULL && !p->snap->scan_done;
    bool rp = p->repl_cow;
    if (!ck && !rp) {
        return;
    }
    int stackkeys[64];
    int *keys = argc > 64 ? rv_malloc((size_t)argc * sizeof(int)) : stackkeys;
    int n = cmd_get_keys(cmd, argc, argv, keys, argc > 64 ? argc : 64);
    if (n == 0) {
        if (ck) {
            snap_all_changed(p);
        }
        if (rp) {
            repl_all_changed(p->repl);
        }
    }
    for (int i = 0; i < n; i++) {
        if (ck) {
            snap_touch(p, argv[keys[i]].p, argv[keys[i]].len);
        }
        if (rp) {
            repl_touch(p->repl, argv[keys[i]].p, argv[keys[i]].len);
        }
    }
    if (keys != stackkeys) {
        rv_free(keys);
    }
}

void
persist_touch_db(struct conn *c, unsigned db, struct rv_str key)
{
    struct persist *p = persist_of(c->shard);
    if (p == NULL || p->loading || p->side_load) {
        return;
    }
    struct snap *sn = p->snap;
    if (sn != NULL && !sn->scan_done && !sn->failed) {
        struct ks_snap *it = snap_it_of(sn, db);
        if (it != NULL) {
            ks_snap_touch(it, shard_env(p->s)->dbs[db], key.p, key.len);
        }
    }
    if (p->repl_cow) {
        struct shard_env *env = shard_env(p->s);
        unsigned was = env->db;
        shard_use_db(env, db); /* (the walk touches the running command's database) */
        repl_touch(p->repl, key.p, key.len);
        shard_use_db(env, was);
    }
}

/* ---------------------------------------------------------------- commands' entry points */

int
snap_save(struct shard *s, char *err, size_t errsz)
{
    struct persist *p = persist_of(s);
    if (p->snap != NULL) {
        snprintf(err, errsz, "ERR Background save already in progress");
        return -1;
    }
    if (p->rec_open) {
        snprintf(err, errsz, "ERR SAVE is not allowed inside a transaction that wrote");
        return -1;
    }
    return snap_run_sync(p, err, errsz);
}

int
snap_bgsave(struct shard *s, char *err, size_t errsz)
{
    struct persist *p = persist_of(s);
    if (p->snap != NULL) {
        snprintf(err, errsz, "ERR Background save already in progress");
        return -1;
    }
    if (p->rec_open) {
        /* inside an EXEC that wrote: start once its record is sealed */
        p->ckpt_pending = true;
        return 0;
    }
    return snap_start(p, err, errsz);
}

int64_t
snap_lastsave_ms(struct shard *s)
{
    return persist_of(s)->lastsave_ms;
}
