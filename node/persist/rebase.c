/* node/persist/rebase.c: a replica's switch to the data of a full sync
 * (persist_rebase_begin/persist_rebase): the rebase marker that makes the
 * switch crash-safe, wiping the old data, and finishing or undoing an
 * interrupted switch at the next start (persist_rebase_recover). */
#include "node/persist/persist.h"
#include "node/persist/persist_int.h"

#include "base/fs.h"
#define LOG_MODULE "persist"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/shard.h"
#include "wal/wal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/rebase marks a data directory that a full sync at LSN L is replacing:
 * "L 0" while the old files are being deleted, "L 1" once they are gone and
 * the WAL continues at L + 1. It goes when a checkpoint at L or later is in
 * place. A start that finds it keeps the data only in the second phase with
 * such a checkpoint; otherwise it wipes the directory and comes up empty, so
 * a replica full-syncs again instead of refusing to start over a WAL whose
 * first records are missing. */
static void
rebase_path(const struct persist *p, char *out, size_t n, bool tmp)
{
    snprintf(out, n, "%s/rebase%s", p->dir, tmp ? ".tmp" : "");
}

static int
rebase_mark(struct persist *p, uint64_t lsn, int phase, char *err, size_t errsz)
{
    char path[4200], tmp[4200];
    rebase_path(p, path, sizeof(path), false);
    rebase_path(p, tmp, sizeof(tmp), true);
    FILE *f = fopen(tmp, "w");
    bool ok = f != NULL && fprintf(f, "%" PRIu64 " %d\n", lsn, phase) > 0 && fflush(f) == 0 &&
              fsync(fileno(f)) == 0;
    if (f != NULL) {
        ok = fclose(f) == 0 && ok;
    }
    if (!ok || rename(tmp, path) != 0 || wal_fsync_dir(p->dir) != 0) {
        snprintf(err, errsz, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static bool
rebase_read(const struct persist *p, uint64_t *lsn, int *phase)
{
    char path[4200];
    rebase_path(p, path, sizeof(path), false);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    bool ok = fscanf(f, "%" SCNu64 " %d", lsn, phase) == 2;
    fclose(f);
    if (!ok) {
        *lsn = 0;
        *phase = 0; /* unreadable: treat as interrupted while deleting */
    }
    return true;
}

static void
rebase_clear(struct persist *p)
{
    char path[4200];
    rebase_path(p, path, sizeof(path), false);
    unlink(path);
    wal_fsync_dir(p->dir);
    p->rebase = false;
}

/* Delete every WAL segment and checkpoint in the directory; 0 or -1. */
static int
wipe_data(const char *dir)
{
    struct wal_file *segs = NULL, *cks = NULL;
    size_t ns = 0, nc = 0;
    if (wal_list(dir, &segs, &ns, &cks, &nc) != 0) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < ns; i++) {
        rc |= unlink(segs[i].path) != 0 && errno != ENOENT ? -1 : 0;
    }
    for (size_t i = 0; i < nc; i++) {
        rc |= unlink(cks[i].path) != 0 && errno != ENOENT ? -1 : 0;
    }
    rv_free(segs);
    rv_free(cks);
    return rc | (wal_fsync_dir(dir) != 0 ? -1 : 0);
}

/* Start-up: finish or undo a full sync's switch that a crash interrupted. */
int
persist_rebase_recover(struct persist *p, char *err, size_t errsz)
{
    uint64_t lsn;
    int phase;
    if (!rebase_read(p, &lsn, &phase)) {
        return 0;
    }
    unsigned sid = shard_env(p->s)->id;
    if (phase == 1) {
        struct wal_file *segs = NULL, *cks = NULL;
        size_t ns = 0, nc = 0;
        bool have = wal_list(p->dir, &segs, &ns, &cks, &nc) == 0 && nc > 0 &&
                    cks[nc - 1].lsn >= lsn;
        rv_free(segs);
        rv_free(cks);
        if (have) {
            /* the checkpoint landed; only the marker's removal was lost */
            rebase_clear(p);
            return 0;
        }
    }
    log_warn("[shard %u] a full sync at LSN %" PRIu64 " was interrupted before its data set was "
             "checkpointed: starting empty (the next sync from the primary is a full one)",
             sid, lsn);
    if (wipe_data(p->dir) != 0) {
        snprintf(err, errsz, "cannot clear %s after an interrupted full sync: %s", p->dir,
                 strerror(errno));
        return -1;
    }
    rebase_clear(p);
    return 0;
}


/* The keyspace now holds another history up to lsn: what clients wait for
 * past it belongs to the replaced one and can never come. Their own writes
 * there were never acknowledged (the reply still waits), so those clients are
 * closed: the outcome of their writes is unknown to them, which is the truth. */
static void
rebase_conns(struct persist *p, uint64_t lsn)
{
    size_t closed = 0;
    struct conn *next;
    for (struct conn *c = shard_conn_first(p->s); c != NULL; c = next) {
        next = c->next;
        bool waits = c->nmarks > 0 && c->marks[c->nmarks - 1].lsn > lsn;
        if (c->own_lsn > lsn) {
            c->own_lsn = 0;
        }
        if (waits) {
            conn_close(c);
            closed++;
        }
    }
    if (closed) {
        log_warn("[shard %u] full sync: closed %zu client(s) waiting for records of the replaced "
                 "history",
                 shard_env(p->s)->id, closed);
    }
}

int
persist_rebase_begin(struct shard *s, uint64_t lsn, char *err, size_t errsz)
{
    struct persist *p = persist_of(s);
    if (p->mode == WAL_MEMORY) {
        return 0;
    }
    snap_abort(p);
    snap_wait_finish(p);
    if (rebase_mark(p, lsn, 0, err, errsz) != 0) {
        return -1; /* nothing changed: the old data set stays */
    }
    p->rebase = true;
    p->rebase_lsn = lsn;
    wal_close(p->w);
    p->w = NULL;
    p->hot.wal = p->hot.log = false; /* guard stays: persist_refuse_write checks p->w */
    if (wipe_data(p->dir) != 0) {
        snprintf(err, errsz, "cannot delete the old WAL in %s: %s", p->dir, strerror(errno));
        return -1;
    }
    return 0;
}

int
persist_rebase(struct shard *s, uint64_t lsn, char *err, size_t errsz)
{
    struct persist *p = persist_of(s);
    p->next_lsn = lsn + 1;
    rebase_conns(p, lsn);
    if (p->mode == WAL_MEMORY) {
        return 0;
    }
    if (rebase_mark(p, lsn, 1, err, errsz) != 0 || persist_open_wal(p, err, errsz) == NULL) {
        return -1;
    }
    p->hot.wal = p->hot.log = true;
    p->changes = 0;
    p->rebase_retry_ms = 0;
    /* The checkpoint at lsn walks in slices while the shard serves and applies
     * the stream (copy-on-write keeps it at lsn), instead of stalling the
     * shard for a whole synchronous save. */
    if (snap_start(p, err, errsz) != 0) {
        log_warn("[shard %u] full sync: checkpoint at LSN %" PRIu64 ": %s (retried)",
                 shard_env(s)->id, lsn, err);
        p->rebase_retry_ms = shard_env(s)->now_ms + 1000;
    }
    return 0;
}

void
persist_ckpt_done(struct persist *p, uint64_t lsn)
{
    if (p->rebase && lsn >= p->rebase_lsn) {
        rebase_clear(p);
    }
}
