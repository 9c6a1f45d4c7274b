/* node/persist/reshard.c: starting on a data directory written with another shard
 * count. Every key moves to the shard that owns its slot now.
 *
 *   1. The old shard directories move into <dir>/resharding.tmp, which is
 *      renamed to <dir>/resharding once all are in (commit point 1).
 *   2. The new shards start on empty directories.
 *   3. Each old shard is loaded read-only into an offline shard; each key is
 *      rebuilt (the checkpoint's rebuild commands) in the shard that owns its
 *      slot; the offline shard is freed before the next one is loaded.
 *   4. Every new shard writes a durable checkpoint; <dir>/layout gets the new
 *      count; <dir>/resharding is renamed to <dir>/resharding.old and the
 *      directory fsynced (commit point 2); then resharding.old is deleted.
 *
 * Which generation is the truth follows from the one name present, so a kill
 * at any step restarts into the complete data set:
 *   resharding.tmp  the old directories, some moved: move them back, start over
 *   resharding      the old data, complete; the new shard directories are not:
 *                   delete them and redo steps 2-4 (with this start's count)
 *   resharding.old  the new directories are complete: finish deleting it
 * Nothing is ever deleted from resharding/ itself, only after its rename.
 * <dir>/layout records the shard count of the last successful start. */
#include "node/persist/reshard.h"

#include "cluster/slot.h"
#include "base/clock.h"
#include "base/fs.h"
#define LOG_MODULE "reshard"
#include "base/log.h"
#include "base/mem.h"
#include "node/keyspace/ks.h"
#include "node/core/node.h"
#include "node/persist/persist.h"
#include "node/persist/replay.h"
#include "node/persist/snap.h"
#include "node/core/shard.h"
#include "wal/wal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Delete path and everything under it (our directories are two levels
 * deep). The failpoint site fires after the first file is gone: a kill in the
 * middle of a deletion. */
static int
rm_tree(const char *path, const char *site)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        return errno == ENOENT ? 0 : -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0) {
            return -1;
        }
        wal_failpoint(site);
        return 0;
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        char sub[4400];
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        rc = rm_tree(sub, site);
    }
    int saved = errno; /* the failure's, for the caller's message */
    closedir(d);
    if (rc != 0) {
        errno = saved;
        return rc;
    }
    return rmdir(path);
}

static bool
is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Highest shard-<k> index + 1 under dir, 0 when none. */
static unsigned
count_shard_dirs(const char *dir)
{
    DIR *d = opendir(dir);
    unsigned m = 0;
    struct dirent *de;
    if (d == NULL) {
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        unsigned k;
        char tail;
        if (sscanf(de->d_name, "shard-%u%c", &k, &tail) == 1 && k < 65536 && k + 1 > m) {
            m = k + 1;
        }
    }
    closedir(d);
    return m;
}

static unsigned
read_layout(const char *dir)
{
    char path[4200];
    unsigned n = 0;
    snprintf(path, sizeof(path), "%s/layout", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "shards %u", &n) != 1) {
        n = 0;
    }
    fclose(f);
    return n;
}

int
reshard_write_layout(const char *dir, unsigned n)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/layout", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return -1;
    }
    fprintf(f, "shards %u\n", n);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        return -1;
    }
    fclose(f);
    if (rename(tmp, path) != 0) {
        return -1;
    }
    return wal_fsync_dir(dir);
}

/* Move dir/shard-<k> (k < m) to sub/shard-<k> (or back with back), leaving
 * what is already moved; fsync both directories. */
static int
move_shards(const char *dir, const char *sub, unsigned m, bool back, const char *site, char *err,
            size_t errsz)
{
    for (unsigned k = 0; k < m; k++) {
        char in_dir[4300], in_sub[4300];
        snprintf(in_dir, sizeof(in_dir), "%s/shard-%u", dir, k);
        snprintf(in_sub, sizeof(in_sub), "%s/shard-%u", sub, k);
        const char *from = back ? in_sub : in_dir, *to = back ? in_dir : in_sub;
        if (!is_dir(from)) {
            continue;
        }
        if (rename(from, to) != 0) {
            snprintf(err, errsz, "cannot move %s to %s: %s", from, to, strerror(errno));
            return -1;
        }
        wal_failpoint(site);
    }
    if (wal_fsync_dir(sub) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot fsync %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Delete path (a directory under dir), then make that durable. */
static int
remove_durably(const char *dir, const char *path, const char *site, char *err, size_t errsz)
{
    if (rm_tree(path, site) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Finish whatever an earlier start left: 1 when the old data set aside in
 * rdir is to be redistributed, 0 when the directory is settled, -1 on error. */
static int
recover(const char *dir, const char *rdir, const char *tdir, const char *odir, char *err,
        size_t errsz)
{
    if (is_dir(odir)) {
        /* after commit point 2: the new directories are complete */
        log_notice("removing the old data of a completed redistribution (%s)", odir);
        return remove_durably(dir, odir, "reshard-cleanup", err, errsz);
    }
    if (is_dir(tdir)) {
        /* before commit point 1: the old directories are the truth, where they are */
        log_warn("undoing an interrupted redistribution: moving %s back", tdir);
        unsigned m = count_shard_dirs(tdir);
        if (move_shards(dir, tdir, m, true, "reshard-undo", err, errsz) != 0) {
            return -1;
        }
        return remove_durably(dir, tdir, "reshard-undo", err, errsz);
    }
    if (is_dir(rdir)) {
        /* between the commit points: the old data is the truth, the new is partial */
        unsigned m = count_shard_dirs(dir);
        for (unsigned k = 0; k < m; k++) {
            char p[4300];
            snprintf(p, sizeof(p), "%s/shard-%u", dir, k);
            if (rm_tree(p, "reshard-discard") != 0) {
                snprintf(err, errsz, "cannot remove %s: %s", p, strerror(errno));
                return -1;
            }
        }
        if (wal_fsync_dir(dir) != 0) {
            snprintf(err, errsz, "cannot fsync %s: %s", dir, strerror(errno));
            return -1;
        }
        return 1;
    }
    return 0;
}

int
reshard_prepare(const char *dir, unsigned nshards, unsigned *old_n, char *err, size_t errsz)
{
    char rdir[4200], tdir[4200], odir[4200];
    snprintf(rdir, sizeof(rdir), "%s/resharding", dir);
    snprintf(tdir, sizeof(tdir), "%s/resharding.tmp", dir);
    snprintf(odir, sizeof(odir), "%s/resharding.old", dir);

    int rc = recover(dir, rdir, tdir, odir, err, errsz);
    if (rc < 0) {
        return -1;
    }
    if (rc == 1) {
        *old_n = count_shard_dirs(rdir);
        log_warn("resuming an interrupted redistribution from %u to %u shards", *old_n, nshards);
        return 1;
    }
    unsigned m = read_layout(dir);
    if (m == 0) {
        m = count_shard_dirs(dir);
    }
    if (m == 0 || m == nshards) {
        return 0;
    }
    log_notice("the data directory %s was written by %u shard(s); redistributing every key by "
               "slot to %u shard(s)",
               dir, m, nshards);
    if (mkdir(tdir, 0755) != 0) {
        snprintf(err, errsz, "cannot create %s: %s", tdir, strerror(errno));
        return -1;
    }
    if (move_shards(dir, tdir, m, false, "reshard-move-aside", err, errsz) != 0) {
        return -1;
    }
    if (rename(tdir, rdir) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot commit %s: %s", rdir, strerror(errno));
        return -1;
    }
    wal_failpoint("reshard-moved");
    *old_n = m;
    return 1;
}

struct move_ctx {
    struct node *n;
    struct replay **rp; /* one per new shard */
    unsigned target;
    uint64_t keys, failed;
    int64_t now;
};

static void
emit_into(void *arg, int argc, const struct rv_str *argv)
{
    struct move_ctx *m = arg;
    char err[256];
    if (!replay_exec(m->rp[m->target], argc, argv, err, sizeof(err)) && m->failed++ < 5) {
        log_warn("redistributing: %.*s: %s", (int)argv[0].len, argv[0].p, err);
    }
}

static void
move_key(void *arg, struct ks_entry *e)
{
    struct move_ctx *m = arg;
    int64_t dl = ks_entry_expire(e);
    if (dl != KS_NO_EXPIRE && dl <= m->now) {
        return;
    }
    struct rv_str k = ks_entry_key(e);
    m->target = node_slot_shard(m->n, slot_of(k.p, k.len));
    persist_rebuild_entry(e, emit_into, m);
    m->keys++;
}

/* Every database of an old shard into the new shards' same database; a
 * database the new layout lacks (several shards: database 0 only, as Redis
 * Cluster) refuses the start before anything changed. */
static int
move_dbs(struct move_ctx *m, struct shard *old, unsigned k, char *err, size_t errsz)
{
    const struct shard_env *from = shard_env(old);
    unsigned have = shard_env(m->n->shards[0])->ndbs;
    for (unsigned d = 0; d < from->ndbs; d++) {
        if (from->dbs[d] != NULL && ks_size(from->dbs[d]) > 0 && d >= have) {
            snprintf(err, errsz,
                     "shard %u holds keys in database %u, which a node of %u shard(s) with "
                     "databases %u lacks (several shards have database 0 only, as Redis "
                     "Cluster): start it with its former layout and MOVE them first",
                     k, d, m->n->nshards, have);
            return -1;
        }
    }
    for (unsigned d = 0; d < from->ndbs; d++) {
        if (from->dbs[d] == NULL || ks_size(from->dbs[d]) == 0) {
            continue;
        }
        for (unsigned i = 0; i < m->n->nshards; i++) {
            replay_set_db(m->rp[i], d);
        }
        uint64_t cur = 0;
        do {
            cur = ks_scan(from->dbs[d], cur, 256, move_key, m);
        } while (cur != 0);
    }
    return 0;
}

int
reshard_run(struct node *n, const char *dir, unsigned old_n, const struct reshard_source *src,
            char *err, size_t errsz)
{
    char rdir[4200];
    int64_t t0 = clock_mono_us();
    snprintf(rdir, sizeof(rdir), "%s/resharding", dir);
    struct move_ctx m = { .n = n, .now = clock_unix_ms() };
    m.rp = rv_calloc(n->nshards, sizeof(*m.rp));
    for (unsigned i = 0; i < n->nshards; i++) {
        m.rp[i] = replay_create(n->shards[i]);
        shard_set_clock(n->shards[i], m.now);
    }
    int rc = 0;
    bool state_done = false;
    for (unsigned k = 0; k < old_n && rc == 0; k++) {
        char sdir[4300];
        snprintf(sdir, sizeof(sdir), "%s/shard-%u", rdir, k);
        if (!is_dir(sdir)) {
            continue;
        }
        struct shard *old = src->open(n, k, sdir, err, errsz);
        if (old == NULL) {
            rc = -1;
            break;
        }
        if (!state_done) { /* (node state, the same on every old shard: from the first) */
            for (m.target = 0; m.target < n->nshards; m.target++) {
                snap_emit_state(old, emit_into, &m);
            }
            state_done = true;
        }
        rc = move_dbs(&m, old, k, err, errsz);
        src->close(old);
        wal_failpoint("reshard-redistribute");
    }
    for (unsigned i = 0; i < n->nshards; i++) {
        replay_destroy(m.rp[i]);
    }
    rv_free(m.rp);
    if (rc != 0) {
        return -1;
    }
    for (unsigned i = 0; i < n->nshards; i++) {
        if (persist_save_now(n->shards[i], err, errsz) != 0) {
            return -1;
        }
        wal_failpoint("reshard-ckpt");
    }
    /* The checkpoints are durable (file and shard directory fsynced); the
     * layout's directory fsync makes the new shard-<k> entries durable too. */
    if (reshard_write_layout(dir, n->nshards) != 0) {
        snprintf(err, errsz, "cannot write %s/layout: %s", dir, strerror(errno));
        return -1;
    }
    wal_failpoint("reshard-layout");
    char odir[4200];
    snprintf(odir, sizeof(odir), "%s/resharding.old", dir);
    if (rename(rdir, odir) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot rename %s to %s: %s", rdir, odir, strerror(errno));
        return -1;
    }
    wal_failpoint("reshard-commit");
    if (remove_durably(dir, odir, "reshard-cleanup", err, errsz) != 0) {
        return -1;
    }
    log_notice("redistributed %" PRIu64 " keys from %u to %u shard(s) in %.3f s (%" PRIu64
               " failed)",
               m.keys, old_n, n->nshards, (double)(clock_mono_us() - t0) / 1e6, m.failed);
    return 0;
}
