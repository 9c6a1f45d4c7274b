/* node/persist/rdbload.c: a Redis RDB file loaded at start-up.
 *
 * The file is walked twice (node/types/rdb_file.h): first only decoded, so
 * that a bad file, or keys in a database this node lacks, refuse the start
 * before anything is loaded; then each key's value is decoded into its
 * rebuild commands (rdb.h) and replayed in the shard that owns its slot, in
 * its database, followed by PEXPIREAT for a key with a deadline. Then every
 * shard takes a checkpoint: from then on the node recovers from its own data
 * directory, and the file is no longer looked at (wanted() sees data).
 * <dir>/rdb-loading exists from the check until the last checkpoint: a start
 * that finds it discards what the interrupted load left and loads again. */
#include "node/persist/rdbload.h"
#include "node/persist/loading.h"

#include "base/clock.h"
#include "base/fs.h"
#define LOG_MODULE "rdbload"
#include "base/log.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "node/core/config.h"
#include "node/core/node.h"
#include "node/core/shard.h"
#include "node/persist/persist.h"
#include "node/persist/replay.h"
#include "node/types/rdb_file.h"
#include "wal/wal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_LOGGED 64 /* databases counted one by one in the log; above: together */

static void
file_path(const struct cfg *cfg, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s/%s", cfg->persist.dir, cfg->persist.dbfilename);
}

/* Whether a shard directory (or a redistribution) under dir holds data: a
 * checkpoint or a WAL record. */
static bool
dir_has_data(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool found = false;
    if (d == NULL) {
        return false;
    }
    while (!found && (de = readdir(d)) != NULL) {
        unsigned k;
        char tail;
        if (strncmp(de->d_name, "resharding", 10) == 0) {
            found = true;
        } else if (sscanf(de->d_name, "shard-%u%c", &k, &tail) == 1) {
            char sub[4400];
            struct wal_file *segs = NULL, *cks = NULL;
            size_t ns = 0, nc = 0;
            snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
            /* (an unreadable one counts as data: never load over it) */
            found = wal_list(sub, &segs, &ns, &cks, &nc) != 0 || nc > 0;
            for (size_t i = 0; !found && i < ns; i++) {
                struct stat st; /* (a segment without records: a start that wrote nothing) */
                found = stat(segs[i].path, &st) != 0 || st.st_size > WAL_SEG_HDR;
            }
            rv_free(segs);
            rv_free(cks);
        }
    }
    closedir(d);
    return found;
}

static void
marker_path(const struct cfg *cfg, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s/rdb-loading", cfg->persist.dir);
}

/* Deletes the checkpoints and WAL segments of every shard directory: what an
 * interrupted load left (the node had no data before it, and served none). */
static void
discard_partial(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d == NULL) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        unsigned k;
        char tail, sub[4400];
        struct wal_file *segs = NULL, *cks = NULL;
        size_t ns = 0, nc = 0;
        if (sscanf(de->d_name, "shard-%u%c", &k, &tail) != 1) {
            continue;
        }
        snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
        if (wal_list(sub, &segs, &ns, &cks, &nc) == 0) {
            for (size_t i = 0; i < ns; i++) {
                unlink(segs[i].path);
            }
            for (size_t i = 0; i < nc; i++) {
                unlink(cks[i].path);
            }
            wal_fsync_dir(sub);
        }
        rv_free(segs);
        rv_free(cks);
    }
    closedir(d);
}

static bool
wanted(const struct cfg *cfg)
{
    char path[4400], marker[4400];
    struct stat st;
    file_path(cfg, path, sizeof(path));
    marker_path(cfg, marker, sizeof(marker));
    bool interrupted = stat(marker, &st) == 0;
    if (!cfg->persist.rdb_load || stat(path, &st) != 0) {
        if (interrupted) {
            log_warn("%s: a load of %s was interrupted: the data directory holds part of it",
                     marker, path);
        }
        return false;
    }
    if (interrupted && cfg->repl.replicaof[0] == 0 && !cfg->cluster.enabled) {
        log_warn("a load of %s was interrupted (%s): discarding what it left, loading it again",
                 path, marker);
        discard_partial(cfg->persist.dir);
    }
    const char *why = NULL;
    if (cfg->repl.replicaof[0] != 0) {
        why = "this node is a replica (it syncs from its primary)";
    } else if (cfg->cluster.enabled) {
        why = "cluster mode (import it with ruvio-rdb --slots)";
    } else if (dir_has_data(cfg->persist.dir)) {
        why = "the data directory holds data already";
    }
    if (why != NULL) {
        log_notice("%s is not loaded: %s", path, why);
        return false;
    }
    return true;
}

/* One walk: counting and checking (rp NULL), or loading. */
struct load {
    struct node *n;
    struct replay **rp; /* one per shard */
    unsigned ndbs;      /* the databases each shard has */
    int64_t now;
    uint64_t keys, expired, failed, functions, bad_db;
    uint64_t per_db[DB_LOGGED + 1]; /* keys loaded; [DB_LOGGED]: the databases above */
    unsigned target;                /* the shard of the key being loaded */
    const uint8_t *read;            /* loading: how far the file was read (progress) */
};

static void
emit_into(void *arg, int argc, const struct rv_str *argv)
{
    struct load *l = arg;
    char err[256];
    if (!replay_exec(l->rp[l->target], argc, argv, err, sizeof(err)) && l->failed++ < 5) {
        log_warn("loading %.*s of %.*s: %s", (int)argv[0].len, argv[0].p, (int)argv[1].len,
                 argv[1].p, err);
    }
}

static int
on_key(void *arg, uint64_t db, struct rv_str key, unsigned type, struct rdb_rd *r, int64_t deadline)
{
    struct load *l = arg;
    bool expired = deadline >= 0 && deadline <= l->now;
    if (l->rp == NULL || expired) {
        l->bad_db += db >= l->ndbs && !expired;
        l->expired += expired && l->rp == NULL;
        return rdb_value_emit(r, type, key, NULL, NULL);
    }
    l->target = node_slot_shard(l->n, slot_of(key.p, key.len));
    replay_set_db(l->rp[l->target], (unsigned)db);
    int rc = rdb_value_emit(r, type, key, emit_into, l);
    if (rc == 0 && deadline >= 0) {
        char t[24];
        struct rv_str av[3] = { { "PEXPIREAT", 9 },
                                key,
                                { t, (size_t)snprintf(t, sizeof(t), "%" PRId64, deadline) } };
        emit_into(l, 3, av);
    }
    l->keys++;
    l->per_db[db < DB_LOGGED ? db : DB_LOGGED]++;
    if (r->p > l->read) {
        loading_tick(l->n, (uint64_t)(r->p - l->read));
        l->read = r->p;
    }
    return rc;
}

static void
on_function(void *arg, struct rv_str code)
{
    struct load *l = arg;
    if (l->rp == NULL) {
        l->functions++;
        return;
    }
    struct rv_str av[4] = { { "FUNCTION", 8 }, { "LOAD", 4 }, { "REPLACE", 7 }, code };
    for (l->target = 0; l->target < l->n->nshards; l->target++) {
        emit_into(l, 4, av);
    }
}

static void
log_loaded(const struct load *l, const char *path, int64_t t0)
{
    for (unsigned d = 0; d <= DB_LOGGED; d++) {
        if (l->per_db[d] == 0) {
            continue;
        }
        if (d < DB_LOGGED) {
            log_notice("%s: database %u: %" PRIu64 " keys loaded", path, d, l->per_db[d]);
        } else {
            log_notice("%s: databases %u and above: %" PRIu64 " keys loaded", path, d,
                       l->per_db[d]);
        }
    }
    log_notice("loaded %s: %" PRIu64 " keys (%" PRIu64 " already expired, left out; %" PRIu64
               " rebuild commands failed), %" PRIu64 " function libraries, in %.3f s; checkpoints "
               "taken",
               path, l->keys, l->expired, l->failed, l->functions,
               (double)(clock_mono_us() - t0) / 1e6);
}

struct rdbload {
    char path[4400], marker[4400], dir[4200];
    const uint8_t *p;
    size_t len;
    void *map; /* NULL for an empty file */
    struct load l;
    int64_t t0;
};

static void
unmap(struct rdbload *x)
{
    if (x->map != NULL) {
        munmap(x->map, x->len);
    }
    rv_free(x);
}

static const struct rdb_file_ops load_ops = { on_key, on_function, NULL };

/* The first walk: decode everything, count, find keys in databases that a
 * node of this configuration lacks (as shard.c: one database with shards). */
static int
check(struct rdbload *x, const struct cfg *cfg, char *err, size_t errsz)
{
    unsigned version;
    char why[256];
    x->l.ndbs = cfg->node.shards > 1 ? 1 : (unsigned)cfg->node.databases;
    x->l.now = clock_unix_ms();
    if (rdb_file_walk(x->p, x->len, &load_ops, &x->l, &version, why, sizeof(why)) != 0) {
        snprintf(err, errsz,
                 "%s: %s: refusing to start (fix or remove it, or set "
                 "rdb-load-at-start no)",
                 x->path, why);
        return -1;
    }
    if (x->l.bad_db > 0) {
        snprintf(err, errsz,
                 "%s holds %" PRIu64 " keys in databases this node lacks (it has %u; "
                 "several shards have database 0 only): refusing to start (start it "
                 "with shards 1 and enough databases, or set rdb-load-at-start no)",
                 x->path, x->l.bad_db, x->l.ndbs);
        return -1;
    }
    return 0;
}

int
rdbload_prepare(const struct cfg *cfg, struct rdbload **out, char *err, size_t errsz)
{
    *out = NULL;
    if (strchr(cfg->persist.dbfilename, '/') != NULL || cfg->persist.dbfilename[0] == 0) {
        snprintf(err, errsz, "config error: 'dbfilename' must be a file name in 'dir', not a path");
        return -1;
    }
    if (!wanted(cfg)) {
        return 0;
    }
    struct rdbload *x = rv_calloc(1, sizeof(*x));
    x->t0 = clock_mono_us();
    file_path(cfg, x->path, sizeof(x->path));
    int fd = open(x->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errsz, "cannot open %s: %s", x->path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        rv_free(x);
        return -1;
    }
    log_notice("loading the Redis RDB file %s (%lld bytes)", x->path, (long long)st.st_size);
    x->len = (size_t)st.st_size;
    x->map = x->len > 0 ? mmap(NULL, x->len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (x->map == MAP_FAILED) {
        snprintf(err, errsz, "cannot read %s: %s", x->path, strerror(errno));
        x->map = NULL;
        unmap(x);
        return -1;
    }
    x->p = x->map != NULL ? x->map : (const uint8_t *)"";
    if (check(x, cfg, err, errsz) != 0) {
        unmap(x);
        return -1;
    }
    /* (from here until every shard's checkpoint is taken, a start finds it
     * and discards what the load left) */
    char marker[4400];
    marker_path(cfg, marker, sizeof(marker));
    if (fs_write_atomic(marker, x->path, strlen(x->path)) != 0) {
        snprintf(err, errsz, "cannot write %s: %s", marker, strerror(errno));
        unmap(x);
        return -1;
    }
    snprintf(x->marker, sizeof(x->marker), "%s", marker);
    snprintf(x->dir, sizeof(x->dir), "%s", cfg->persist.dir);
    *out = x;
    return 0;
}

int
rdbload_run(struct node *n, struct rdbload *x, char *err, size_t errsz)
{
    struct load *l = &x->l;
    uint64_t expired = l->expired, functions = l->functions;
    unsigned version;
    char why[256];
    l->n = n;
    l->read = x->p;
    l->rp = rv_calloc(n->nshards, sizeof(*l->rp));
    for (unsigned i = 0; i < n->nshards; i++) {
        l->rp[i] = replay_create(n->shards[i]);
        shard_set_clock(n->shards[i], l->now);
    }
    int rc = rdb_file_walk(x->p, x->len, &load_ops, l, &version, why, sizeof(why));
    for (unsigned i = 0; i < n->nshards; i++) {
        replay_destroy(l->rp[i]);
    }
    rv_free(l->rp);
    if (rc != 0) { /* (the first walk read it whole: only a changed file gets here) */
        snprintf(err, errsz, "%s: %s", x->path, why);
        unmap(x);
        return -1;
    }
    for (unsigned i = 0; i < n->nshards && rc == 0; i++) {
        rc = persist_save_now(n->shards[i], err, errsz);
        wal_failpoint("rdbload-ckpt");
    }
    if (rc == 0 && (unlink(x->marker) != 0 || wal_fsync_dir(x->dir) != 0)) {
        snprintf(err, errsz, "cannot remove %s: %s", x->marker, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        l->expired = expired;
        l->functions = functions;
        log_loaded(l, x->path, x->t0);
    }
    unmap(x);
    return rc == 0 ? 0 : -1;
}

uint64_t
rdbload_bytes(const struct rdbload *x)
{
    return x != NULL ? (uint64_t)x->len : 0;
}
