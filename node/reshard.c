/* node/reshard.c: starting on a data directory written with another shard
 * count. Every key moves to the shard that owns its slot now.
 *
 *   1. The old shard directories move into <dir>/resharding (through
 *      resharding.tmp, renamed once complete: the commit point).
 *   2. The new shards start on empty directories.
 *   3. Each old shard is loaded read-only into an offline shard; each key is
 *      rebuilt (the checkpoint's rebuild commands) in the shard that owns its
 *      slot; the offline shard is freed before the next one is loaded.
 *   4. Every new shard writes a checkpoint; then <dir>/resharding is removed.
 *
 * A crash before step 4 completes leaves <dir>/resharding: the next start
 * discards the partial new directories and runs steps 2-4 again. A crash
 * during step 1 leaves resharding.tmp, which is moved back first.
 * <dir>/layout records the shard count of the last successful start. */
#include "node/reshard.h"

#include "cluster/slot.h"
#include "node/base/clock.h"
#include "node/base/fs.h"
#define LOG_MODULE "reshard"
#include "node/base/log.h"
#include "node/base/mem.h"
#include "node/ks.h"
#include "node/node.h"
#include "node/persist.h"
#include "node/replay.h"
#include "node/shard.h"
#include "wal/wal.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    int rc = remove(path);
    if (flag == FTW_F) {
        wal_failpoint("reshard-cleanup");
    }
    return rc;
}

static int
rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        return errno == ENOENT ? 0 : -1;
    }
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
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

int
reshard_prepare(const char *dir, unsigned nshards, unsigned *old_n, char *err, size_t errsz)
{
    char rdir[4200], tdir[4200];
    snprintf(rdir, sizeof(rdir), "%s/resharding", dir);
    snprintf(tdir, sizeof(tdir), "%s/resharding.tmp", dir);

    if (is_dir(tdir)) {
        /* interrupted while moving the old directories aside: undo */
        unsigned m = count_shard_dirs(tdir);
        for (unsigned k = 0; k < m; k++) {
            char from[4300], to[4300];
            snprintf(from, sizeof(from), "%s/shard-%u", tdir, k);
            snprintf(to, sizeof(to), "%s/shard-%u", dir, k);
            if (is_dir(from) && rename(from, to) != 0) {
                snprintf(err, errsz, "cannot move %s back to %s: %s", from, to, strerror(errno));
                return -1;
            }
        }
        if (rm_rf(tdir) != 0) {
            snprintf(err, errsz, "cannot remove %s: %s", tdir, strerror(errno));
            return -1;
        }
    }
    if (is_dir(rdir)) {
        /* interrupted after the commit point: the old data is the truth */
        unsigned m = count_shard_dirs(dir);
        for (unsigned k = 0; k < m; k++) {
            char p[4300];
            snprintf(p, sizeof(p), "%s/shard-%u", dir, k);
            rm_rf(p);
        }
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
               "slot to %u shard(s)", dir, m, nshards);
    if (mkdir(tdir, 0755) != 0) {
        snprintf(err, errsz, "cannot create %s: %s", tdir, strerror(errno));
        return -1;
    }
    for (unsigned k = 0; k < m; k++) {
        char from[4300], to[4300];
        snprintf(from, sizeof(from), "%s/shard-%u", dir, k);
        snprintf(to, sizeof(to), "%s/shard-%u", tdir, k);
        if (is_dir(from) && rename(from, to) != 0) {
            snprintf(err, errsz, "cannot move %s to %s: %s", from, to, strerror(errno));
            return -1;
        }
        wal_failpoint("reshard-move-aside");
    }
    if (wal_fsync_dir(tdir) != 0 || rename(tdir, rdir) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot commit %s: %s", rdir, strerror(errno));
        return -1;
    }
    wal_failpoint("reshard-moved");
    *old_n = m;
    return 1;
}

struct move_ctx {
    struct node *n;
    struct replay **rp;              /* one per new shard */
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

int
reshard_run(struct node *n, const char *dir, unsigned old_n, char *err, size_t errsz)
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
    for (unsigned k = 0; k < old_n && rc == 0; k++) {
        char sdir[4300];
        snprintf(sdir, sizeof(sdir), "%s/shard-%u", rdir, k);
        if (!is_dir(sdir)) {
            continue;
        }
        struct shard *old = shard_create_offline(n, k, sdir, err, errsz);
        if (old == NULL) {
            rc = -1;
            break;
        }
        struct ks *ks = shard_ks(old);
        uint64_t cur = 0;
        do {
            cur = ks_scan(ks, cur, 256, move_key, &m);
        } while (cur != 0);
        shard_destroy(old);
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
    if (rm_rf(rdir) != 0 || wal_fsync_dir(dir) != 0) {
        snprintf(err, errsz, "cannot remove %s: %s", rdir, strerror(errno));
        return -1;
    }
    log_notice("redistributed %" PRIu64 " keys from %u to %u shard(s) in %.3f s (%" PRIu64
               " failed)", m.keys, old_n, n->nshards, (double)(clock_mono_us() - t0) / 1e6, m.failed);
    return 0;
}
