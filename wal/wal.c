/* wal/wal.c: segment writer, syncer thread, payload codec, checkpoint files
 * (see wal.h for the formats; the reader and the walk are in wal_read.c). */
#include "wal/wal.h"
#include "wal/wal_int.h"

#define LOG_MODULE "wal"
#include "base/bytes.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/varint.h"
#include "wal/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>


/* ---------------------------------------------------------------- failpoints */

static const char *fp_site;
static pthread_once_t fp_once = PTHREAD_ONCE_INIT;

static void
fp_init(void)
{
    fp_site = getenv("RUVIO_FAILPOINT");
    if (fp_site && !*fp_site) {
        fp_site = NULL;
    }
}

bool
wal_failpoint_hit(const char *site)
{
    pthread_once(&fp_once, fp_init);
    return __builtin_expect(fp_site != NULL, 0) && strcmp(fp_site, site) == 0;
}

void
wal_failpoint(const char *site)
{
    pthread_once(&fp_once, fp_init);
    if (__builtin_expect(fp_site != NULL, 0) && strcmp(fp_site, site) == 0) {
        fprintf(stderr, "failpoint %s: exiting\n", site);
        _exit(77);
    }
}

/* ---------------------------------------------------------------- helpers */

static inline void
put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static inline void
put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static int
write_all(int fd, const void *p, size_t n, size_t *done)
{
    const char *c = p;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, c + off, n - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (done) {
            *done = off;
        }
        return w < 0 ? -errno : -ENOSPC;
    }
    if (done) {
        *done = off;
    }
    return 0;
}

/* pwrite() all of p at off; *done says how much went in. */
static int
pwrite_all(int fd, const void *p, size_t n, uint64_t off, size_t *done)
{
    const char *c = p;
    size_t d = 0;
    while (d < n) {
        ssize_t w = pwrite(fd, c + d, n - d, (off_t)(off + d));
        if (w > 0) {
            d += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        *done = d;
        return w < 0 ? -errno : -ENOSPC;
    }
    *done = d;
    return 0;
}

static int64_t
mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* An absolute CLOCK_REALTIME deadline us microseconds from now (condvar waits). */
static struct timespec
deadline_in(int64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + (us % 1000000) * 1000;
    ts.tv_sec += us / 1000000 + ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    return ts;
}

void
wal_path_seg(char *out, size_t outsz, const char *dir, uint64_t first_lsn)
{
    snprintf(out, outsz, "%s/wal-%020" PRIu64 ".log", dir, first_lsn);
}

void
wal_path_ckpt(char *out, size_t outsz, const char *dir, uint64_t lsn, bool tmp)
{
    snprintf(out, outsz, "%s/ckpt-%020" PRIu64 ".ckpt%s", dir, lsn, tmp ? ".tmp" : "");
}

int
wal_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- writer */

struct io_job {
    struct io_job *next;
    void (*fn)(void *arg);
    void *arg;
};

/* A finished segment: the syncer fdatasyncs it, cuts it to its logical size
 * (the zero tail of a pre-zeroed file, or blocks reserved past the end) and
 * closes it. */
struct retired {
    int fd;
    uint64_t size;
};

#define PACE_WINDOW 16           /* recent plain syncs the median is taken over */
#define PACE_SLOW_FLOOR_US 5000  /* a sync below this is never "slow" */
#define PACE_HOLD_US 100000      /* pacing stays on this long after a slow sync */
#define SPARE_RETRY_US 5000000   /* after a failed spare (e.g. disk full) */
#define SPARE_FIRST (4u << 20)   /* size of the first spare; later ones x4 up to seg_max */
#define SPARE_ASK_MAX (1u << 20) /* ask for the next spare by this far into a segment */

struct wal {
    char dir[4096];
    unsigned shard;
    int mode;
    uint64_t seg_max;
    int64_t interval_ms;
    void (*notify)(void *arg);
    void *notify_arg;

    /* shard thread */
    struct buf stage;
    uint64_t next_lsn;  /* LSN of the next record */
    uint64_t seg_first; /* first LSN of the current segment */
    uint64_t seg_size;  /* logical size: the next write goes here */
    bool seg_zeroed;    /* the current segment is a pre-zeroed spare */
    bool spare_asked;   /* a spare for the next rotation was requested */
    bool spare_on;      /* always mode on a filesystem where spares pay */
    uint64_t seg_cap;   /* rotate past this: seg_max, or a spare's size */
    int write_err;
    bool rec_open;    /* between wal_rec_begin and wal_rec_end/abort */
    bool last_staged; /* last_mark: the newest record, still staged */
    size_t last_mark;
    bool last_known; /* the newest record written: segment last_seg, last_off */
    uint64_t last_seg, last_off;
    bool rotate_pending;  /* wal_rotate came inside a record: rotate at its end */
    uint64_t *seg_starts; /* first LSNs of the segment files, oldest first */
    uint64_t *seg_sizes;  /* their logical sizes */
    size_t nseg, capseg;

    /* shared with the syncer; the mutex guards fd, retired fds and jobs */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    struct retired retired[64];
    size_t nretired;
    bool dir_dirty;
    bool sync_req;
    bool stop;
    struct io_job *jobs, **jobs_tail;
    _Atomic uint64_t written_lsn;
    _Atomic uint64_t durable_lsn;
    _Atomic int sync_err;
    _Atomic bool syncing; /* an fdatasync of the log is running */
    pthread_t th;

    /* syncer only: adaptive pacing (always) */
    int64_t pace_us;           /* spacing of sync starts (while slow); 0 = never */
    int64_t pace_until;        /* mono us: pacing is on until then */
    bool pace_always;          /* an explicit interval: every sync, slow or not */
    int64_t last_start;        /* mono us of the last sync's start */
    uint32_t dur[PACE_WINDOW]; /* durations of recent plain syncs, us */
    unsigned ndur;
    /* counters for INFO (written by the syncer / shard, read by the shard) */
    _Atomic uint64_t st_syncs, st_slow, st_paced, st_max_us, st_prezeroed;

    /* spare segment (always): prepared by the spare thread; mu guards these */
    pthread_cond_t spare_cv;
    pthread_t spare_th;
    bool spare_th_on;
    bool spare_want;
    _Atomic bool spare_stop;
    _Atomic bool spare_ready; /* spare_fd holds a prepared file */
    int spare_fd;
    uint64_t spare_size; /* of the file in spare_fd */
    uint64_t spare_next; /* size of the next spare (spare thread) */
    char spare_path[4200];
};

static void
seg_header(struct wal *w, uint8_t *hdr, uint64_t first)
{
    memset(hdr, 0, WAL_SEG_HDR);
    memcpy(hdr, WAL_SEG_MAGIC, 8);
    put32(hdr + 8, 1);
    put32(hdr + 12, w->shard);
    put64(hdr + 16, first);
    put32(hdr + 28, wal_crc32c(0, hdr, 28));
}

/* Bookkeeping for a new current segment (replace: it took the name of the
 * empty current one). */
static void
seg_account(struct wal *w, uint64_t first, bool replace, uint64_t zeroed_size)
{
    if (!replace) {
        if (w->nseg == w->capseg) {
            w->capseg = w->capseg ? 2 * w->capseg : 16;
            w->seg_starts = rv_realloc(w->seg_starts, w->capseg * sizeof(uint64_t));
            w->seg_sizes = rv_realloc(w->seg_sizes, w->capseg * sizeof(uint64_t));
        }
        w->nseg++;
    }
    w->seg_starts[w->nseg - 1] = first;
    w->seg_sizes[w->nseg - 1] = WAL_SEG_HDR;
    w->seg_first = first;
    w->seg_size = WAL_SEG_HDR;
    w->seg_zeroed = zeroed_size > 0;
    w->seg_cap = zeroed_size > 0 ? zeroed_size : w->seg_max;
    w->spare_asked = false;
}

/* A growing segment (no spare ready, or a filesystem without room for one). */
static int
seg_create(struct wal *w, uint64_t first, char *err, size_t errsz)
{
    char path[4200];
    uint8_t hdr[WAL_SEG_HDR];
    wal_path_seg(path, sizeof(path), w->dir, first);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        if (err) {
            snprintf(err, errsz, "cannot create WAL segment %s: %s", path, strerror(e));
        }
        return -e;
    }
    seg_header(w, hdr, first);
    /* Reserve the segment's blocks up front (the size stays as written):
     * appends then skip the filesystem's delayed-allocation work. Best
     * effort: not every filesystem supports it. */
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)w->seg_max + (1 << 20)) != 0) {
        log_debug("[shard %u] fallocate %s: %s", w->shard, path, strerror(errno));
        /* ext4 keeps what it reserved before running out: give it back,
         * or a nearly full disk is full of this file's reservation */
        if (ftruncate(fd, 0) != 0) {
            log_debug("[shard %u] ftruncate %s: %s", w->shard, path, strerror(errno));
        }
    }
    size_t done;
    int rc = pwrite_all(fd, hdr, sizeof(hdr), 0, &done);
    if (rc < 0) {
        if (err) {
            snprintf(err, errsz, "cannot write WAL segment header %s: %s", path, strerror(-rc));
        }
        close(fd);
        unlink(path);
        return rc;
    }
    return fd;
}

/* Take the prepared spare as the segment starting at first: header written
 * in place, then renamed into place (the directory is synced with the next
 * wave). -1 when there is none or it failed (the caller appends instead).
 * Under the mutex, so the spare thread cannot start the next spare under the
 * same temporary name before this one is renamed away. */
static int
seg_from_spare(struct wal *w, uint64_t first, uint64_t *size)
{
    char path[4200];
    uint8_t hdr[WAL_SEG_HDR];
    size_t done;
    wal_path_seg(path, sizeof(path), w->dir, first);
    seg_header(w, hdr, first);
    pthread_mutex_lock(&w->mu);
    int fd = w->spare_fd, rc = 0;
    *size = w->spare_size;
    w->spare_fd = -1;
    atomic_store(&w->spare_ready, false);
    if (fd >= 0) {
        rc = pwrite_all(fd, hdr, sizeof(hdr), 0, &done);
        if (rc == 0 && rename(w->spare_path, path) != 0) {
            rc = -errno;
        }
        if (rc < 0) {
            close(fd);
            unlink(w->spare_path);
            fd = -1;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (rc < 0) {
        log_warn("[shard %u] cannot use the prepared WAL segment: %s", w->shard, strerror(-rc));
    }
    return fd;
}

/* ---- spare thread: zero-filled segment files ahead of rotation ----
 * fdatasync after an in-place overwrite of blocks that are allocated and
 * already written needs no metadata (journal) commit; appending to a
 * growing file needs one per sync, and those are what stall. */

static uint8_t zero_chunk[1 << 18]; /* never written */

static int
spare_prepare(struct wal *w, uint64_t size)
{
    struct statvfs sv;
    uint64_t need = 2 * size + (16u << 20);
    if (statvfs(w->dir, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < need) {
        return -ENOSPC; /* leave the room to the log itself */
    }
    int fd = open(w->spare_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -errno;
    }
    /* One chunk at a time, each written back before the next, and each
     * between two WAL syncs: the spare never queues more than a chunk ahead
     * of a WAL fdatasync, and no journal commit has megabytes of its dirty
     * data to flush first (ext4 data=ordered). */
    int rc = 0;
    uint64_t off = 0;
    while (off < size && rc == 0) {
        if (atomic_load(&w->spare_stop)) {
            rc = -ECANCELED;
            break;
        }
        for (int i = 0; i < 200 && atomic_load_explicit(&w->syncing, memory_order_relaxed); i++) {
            struct timespec d = { 0, 20000 };
            nanosleep(&d, NULL); /* at most ~4 ms: a slow sync does not stop us */
        }
        size_t n = sizeof(zero_chunk);
        if (n > size - off) {
            n = (size_t)(size - off);
        }
        size_t done;
        rc = pwrite_all(fd, zero_chunk, n, off, &done);
        if (rc == 0 && sync_file_range(fd, (off_t)off, (off_t)done,
                                       SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                           SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
            rc = -errno;
        }
        off += done;
    }
    if (rc == 0 && fdatasync(fd) != 0) {
        rc = -errno;
    }
    if (rc < 0) {
        close(fd);
        unlink(w->spare_path);
        return rc;
    }
    return fd;
}

static void *
spare_main(void *arg)
{
    struct wal *w = arg;
    char name[16];
    int64_t retry_at = 0;
    snprintf(name, sizeof(name), "ruvio-wspr-%u", w->shard);
    pthread_setname_np(pthread_self(), name);

    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->spare_stop)) {
        if (!w->spare_want || w->spare_fd >= 0) {
            pthread_cond_wait(&w->spare_cv, &w->mu);
            continue;
        }
        int64_t now = mono_us();
        if (now < retry_at) {
            struct timespec ts = deadline_in(retry_at - now);
            pthread_cond_timedwait(&w->spare_cv, &w->mu, &ts);
            continue;
        }
        uint64_t size = w->spare_next;
        pthread_mutex_unlock(&w->mu);
        int fd = spare_prepare(w, size);
        pthread_mutex_lock(&w->mu);
        if (fd < 0) {
            if (fd != -ECANCELED) {
                log_debug("[shard %u] no spare WAL segment (%s): segments grow as written",
                          w->shard, strerror(-fd));
            }
            retry_at = mono_us() + SPARE_RETRY_US;
            continue;
        }
        w->spare_fd = fd;
        w->spare_size = size;
        /* the first spare is small (ready in milliseconds), later ones grow */
        w->spare_next = 4 * size < w->seg_max ? 4 * size : w->seg_max;
        w->spare_want = false;
        atomic_store(&w->spare_ready, true);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void
spare_ask(struct wal *w)
{
    w->spare_asked = true;
    pthread_mutex_lock(&w->mu);
    w->spare_want = true;
    pthread_cond_signal(&w->spare_cv);
    pthread_mutex_unlock(&w->mu);
}

/* ---- syncer ---- */

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Pacing: a sync much slower than the recent median (the device is
 * throttling flushes) turns on a minimum spacing between sync starts for a
 * while, so each sync covers more records and fewer are issued. */
static void
pace_note(struct wal *w, int64_t start, int64_t end)
{
    uint32_t d = (uint32_t)(end - start), sorted[PACE_WINDOW];
    unsigned n = w->ndur < PACE_WINDOW ? w->ndur : PACE_WINDOW;
    if (n >= PACE_WINDOW / 2) {
        memcpy(sorted, w->dur, n * sizeof(uint32_t));
        qsort(sorted, n, sizeof(uint32_t), cmp_u32);
        uint32_t median = sorted[n / 2];
        if (d > PACE_SLOW_FLOOR_US && d > 4 * median) {
            atomic_fetch_add_explicit(&w->st_slow, 1, memory_order_relaxed);
            if (w->pace_us > 0) {
                w->pace_until = end + PACE_HOLD_US;
            }
        }
    }
    w->dur[w->ndur++ % PACE_WINDOW] = d;
}

static void
sync_once(struct wal *w)
{
    struct retired retired[64];
    size_t nr;
    bool dirsync;

    pthread_mutex_lock(&w->mu);
    nr = w->nretired;
    memcpy(retired, w->retired, nr * sizeof(retired[0]));
    w->nretired = 0;
    dirsync = w->dir_dirty;
    w->dir_dirty = false;
    int fd = w->fd;
    uint64_t target = atomic_load_explicit(&w->written_lsn, memory_order_acquire);
    w->sync_req = false;
    pthread_mutex_unlock(&w->mu);

    if (target <= atomic_load(&w->durable_lsn) && nr == 0 && !dirsync) {
        return;
    }
    wal_failpoint("wal-sync");
    int bad = 0;
    int64_t t0 = mono_us();
    w->last_start = t0;
    atomic_store_explicit(&w->syncing, true, memory_order_relaxed);
    for (size_t i = 0; i < nr && !bad; i++) {
        if (fdatasync(retired[i].fd) != 0) {
            bad = errno;
        }
    }
    if (!bad && fdatasync(fd) != 0) {
        bad = errno;
    }
    if (!bad && wal_failpoint_hit("wal-sync-eio")) {
        bad = EIO; /* fault injection: a disk that lost the write */
    }
    if (!bad && dirsync && wal_fsync_dir(w->dir) != 0) {
        bad = errno;
    }
    atomic_store_explicit(&w->syncing, false, memory_order_relaxed);
    int64_t t1 = mono_us();
    atomic_fetch_add_explicit(&w->st_syncs, 1, memory_order_relaxed);
    if ((uint64_t)(t1 - t0) > atomic_load_explicit(&w->st_max_us, memory_order_relaxed)) {
        atomic_store_explicit(&w->st_max_us, (uint64_t)(t1 - t0), memory_order_relaxed);
    }
    if (!bad && nr == 0 && !dirsync) {
        pace_note(w, t0, t1);
    }
    if (bad) {
        /* A failed fsync may have dropped dirty pages: nothing after the last
         * good sync can be trusted, and retrying could report success over
         * lost data. Durability stops here (the shard refuses writes). */
        log_warn("[shard %u] WAL fdatasync failed: %s; writes are refused from now on", w->shard,
                 strerror(bad));
        atomic_store(&w->sync_err, bad);
    } else {
        atomic_store_explicit(&w->durable_lsn, target, memory_order_release);
    }
    if (w->notify) {
        w->notify(w->notify_arg);
    }
    /* after the replies are released: freeing a zero tail takes a while */
    for (size_t i = 0; i < nr; i++) {
        if (!bad && ftruncate(retired[i].fd, (off_t)retired[i].size) != 0) {
            log_debug("[shard %u] ftruncate: %s", w->shard, strerror(errno));
        }
        close(retired[i].fd);
    }
}

static void *
syncer_main(void *arg)
{
    struct wal *w = arg;
    char name[16];
    snprintf(name, sizeof(name), "ruvio-wal-%u", w->shard);
    pthread_setname_np(pthread_self(), name);

    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->stop && w->jobs == NULL && !w->sync_req) {
            break; /* (wal_close asks for a last sync with stop) */
        }
        if (!w->sync_req && w->jobs == NULL && !w->stop) {
            if (w->mode == WAL_EVERYSEC) {
                struct timespec ts = deadline_in(w->interval_ms * 1000);
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
                    w->sync_req = true;
                }
            } else {
                pthread_cond_wait(&w->cv, &w->mu);
            }
            continue;
        }
        if (w->sync_req && !w->stop && w->pace_us > 0) {
            /* Slow syncs lately (or a fixed interval): start this one no
             * sooner than pace_us after the last one started (it then covers
             * what arrives meanwhile). */
            int64_t now = mono_us(), at = w->last_start + w->pace_us;
            if ((w->pace_always || now < w->pace_until) && now < at) {
                atomic_fetch_add_explicit(&w->st_paced, 1, memory_order_relaxed);
                pthread_mutex_unlock(&w->mu);
                struct timespec d = { .tv_sec = (at - now) / 1000000,
                                      .tv_nsec = (long)((at - now) % 1000000) * 1000 };
                nanosleep(&d, NULL);
                pthread_mutex_lock(&w->mu);
            }
        }
        if (w->sync_req || w->stop) {
            pthread_mutex_unlock(&w->mu);
            bool failed = atomic_load(&w->sync_err) != 0;
            if (!failed) {
                sync_once(w); /* clears sync_req when it takes its snapshot */
            }
            pthread_mutex_lock(&w->mu);
            if (failed) {
                w->sync_req = false; /* nothing more is ever synced */
            }
        }
        while (w->jobs) {
            struct io_job *j = w->jobs;
            w->jobs = j->next;
            if (w->jobs == NULL) {
                w->jobs_tail = &w->jobs;
            }
            pthread_mutex_unlock(&w->mu);
            j->fn(j->arg);
            rv_free(j);
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void
wal_free(struct wal *w)
{
    rv_free(w->seg_starts);
    rv_free(w->seg_sizes);
    buf_deinit(&w->stage);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->spare_cv);
    rv_free(w);
}

struct wal *
wal_open(const struct wal_opts *o, uint64_t next_lsn, char *err, size_t errsz)
{
    struct wal *w = rv_calloc(1, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "%s", o->dir);
    w->shard = o->shard;
    w->mode = o->mode;
    w->seg_max = o->seg_bytes ? o->seg_bytes : (64u << 20);
    w->interval_ms = o->sync_interval_ms > 0 ? o->sync_interval_ms : 1000;
    w->notify = o->notify;
    w->notify_arg = o->notify_arg;
    if (w->mode == WAL_ALWAYS) {
        w->pace_us = o->sync_min_interval_us < 0    ? 0
                     : o->sync_min_interval_us == 0 ? WAL_PACE_DEFAULT_US
                                                    : o->sync_min_interval_us;
        w->pace_always = o->sync_min_interval_us > 0;
    }
    buf_init(&w->stage);
    w->next_lsn = next_lsn;
    atomic_init(&w->written_lsn, next_lsn - 1);
    atomic_init(&w->durable_lsn, next_lsn - 1);
    atomic_init(&w->sync_err, 0);
    atomic_init(&w->spare_stop, false);
    atomic_init(&w->spare_ready, false);
    atomic_init(&w->syncing, false);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->spare_cv, NULL);
    w->jobs_tail = &w->jobs;
    w->spare_fd = -1;
    snprintf(w->spare_path, sizeof(w->spare_path), "%s/wal-spare.tmp", w->dir);
    unlink(w->spare_path); /* a crashed run's; never part of the log */
    /* Spares pay where fdatasync costs a journal commit: always mode, not
     * on tmpfs (no sync cost there, and the zeros would take memory). */
    struct statfs sf;
    w->spare_on = w->mode == WAL_ALWAYS && !o->no_spare &&
                  !(statfs(w->dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC);
    w->spare_next = w->seg_max < SPARE_FIRST ? w->seg_max : SPARE_FIRST;

    /* Older segments still on disk count for wal_bytes and are dropped by checkpoints. */
    struct wal_file *segs = NULL, *ck = NULL;
    size_t ns = 0, nc = 0;
    if (wal_list(w->dir, &segs, &ns, &ck, &nc) == 0) {
        for (size_t i = 0; i < ns; i++) {
            struct stat st;
            bool ok = stat(segs[i].path, &st) == 0;
            seg_account(w, segs[i].lsn, false, 0);
            w->seg_sizes[w->nseg - 1] = ok ? (uint64_t)st.st_size : 0;
            if (ok && i + 1 == ns && st.st_blocks * 512 > st.st_size + (1 << 20)) {
                /* a crash left the last segment's reserved blocks: free them */
                (void)truncate(segs[i].path, st.st_size);
            }
            /* After a process crash the recovered records may still be only
             * in the page cache; the durable LSN (and the first wave's sync
             * barrier) claim they are on disk. */
            int sfd = ok ? open(segs[i].path, O_RDONLY | O_CLOEXEC) : -1;
            if (sfd >= 0) {
                if (fdatasync(sfd) != 0) {
                    log_warn("[shard %u] fdatasync %s: %s", w->shard, segs[i].path,
                             strerror(errno));
                }
                close(sfd);
            }
        }
    }
    rv_free(segs);
    rv_free(ck);
    /* A previous run may have left an empty segment with this very name. */
    if (w->nseg > 0 && w->seg_starts[w->nseg - 1] == next_lsn) {
        w->nseg--;
    }
    int fd = seg_create(w, next_lsn, err, errsz);
    if (fd < 0) {
        wal_free(w);
        return NULL;
    }
    seg_account(w, next_lsn, false, 0);
    w->fd = fd;
    w->dir_dirty = true;
    if (pthread_create(&w->th, NULL, syncer_main, w) != 0) {
        snprintf(err, errsz, "cannot start the WAL sync thread");
        close(fd);
        wal_free(w);
        return NULL;
    }
    if (w->spare_on) {
        w->spare_th_on = pthread_create(&w->spare_th, NULL, spare_main, w) == 0;
        w->spare_on = w->spare_th_on;
        if (w->spare_on) {
            spare_ask(w); /* small: the first writes already go in place */
        }
    }
    return w;
}

/* A clean close: everything is synced, so the newest record gets the sync
 * barrier too (and is synced once more): recovery then refuses damage to
 * any record before it, where after a crash the last wave stays unprovable. */
static void
close_barrier(struct wal *w)
{
    char path[4200];
    uint8_t h[4];
    wal_path_seg(path, sizeof(path), w->dir, w->last_seg);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (pread(fd, h, 4, (off_t)w->last_off) == 4) {
        put32(h, get32(h) | WAL_LEN_BARRIER);
        size_t done;
        if (pwrite_all(fd, h, 4, w->last_off, &done) != 0 || fdatasync(fd) != 0) {
            log_debug("[shard %u] closing barrier in %s: %s", w->shard, path, strerror(errno));
        }
    }
    close(fd);
}

void
wal_close(struct wal *w)
{
    if (w == NULL) {
        return;
    }
    wal_write(w);
    if (w->spare_th_on) {
        pthread_mutex_lock(&w->mu);
        atomic_store(&w->spare_stop, true);
        pthread_cond_signal(&w->spare_cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->spare_th, NULL);
        if (w->spare_fd >= 0) {
            close(w->spare_fd);
        }
        unlink(w->spare_path);
    }
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    w->sync_req = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    for (size_t i = 0; i < w->nretired; i++) {
        close(w->retired[i].fd);
    }
    if (w->last_known && atomic_load(&w->sync_err) == 0 &&
        atomic_load(&w->durable_lsn) == w->next_lsn - 1) {
        close_barrier(w);
    }
    /* A closed segment ends at its last record: the zero tail (or the
     * reserved blocks) go. Not synced: a zero tail is a clean end anyway. */
    if (ftruncate(w->fd, (off_t)w->seg_size) != 0) {
        log_debug("[shard %u] ftruncate: %s", w->shard, strerror(errno));
    }
    close(w->fd);
    wal_free(w);
}

size_t
wal_rec_begin(struct wal *w)
{
    if (w->stage.off > 0) {
        if (w->last_staged) {
            w->last_mark -= w->stage.off;
        }
        buf_compact(&w->stage); /* marks inside a record must not move */
    }
    size_t mark = w->stage.len;
    buf_reserve(&w->stage, WAL_REC_HDR);
    w->stage.len += WAL_REC_HDR;
    w->rec_open = true;
    return mark;
}

struct buf *
wal_buf(struct wal *w)
{
    return &w->stage;
}

uint64_t
wal_rec_end(struct wal *w, size_t mark, int64_t ts_ms)
{
    uint8_t *h = (uint8_t *)w->stage.data + mark;
    size_t len = w->stage.len - mark - WAL_REC_HDR;
    if (__builtin_expect(len > WAL_MAX_REC, 0)) {
        /* Its length would not fit the header: never write a record that
         * recovery would misread. What it did is in memory only, so the
         * log cannot be trusted to continue. */
        log_warn("[shard %u] a WAL record of %zu bytes is over the %llu-byte limit: not logged; "
                 "writes are refused until restart",
                 w->shard, len, (unsigned long long)WAL_MAX_REC);
        w->stage.len = mark;
        w->rec_open = false;
        atomic_store(&w->sync_err, EFBIG);
        return 0;
    }
    uint64_t lsn = w->next_lsn++;
    wal_frame_seal(h, len, lsn, ts_ms);
    w->rec_open = false;
    w->last_staged = true;
    w->last_mark = mark;
    return lsn;
}

void
wal_rec_abort(struct wal *w, size_t mark)
{
    w->stage.len = mark;
    w->rec_open = false;
}

void
wal_rec_put(struct wal *w, const uint8_t *frame, size_t len)
{
    if (w->stage.off > 0) {
        /* after a short write: buf_append could compact under our offsets */
        if (w->last_staged) {
            w->last_mark -= w->stage.off;
        }
        buf_compact(&w->stage);
    }
    size_t at = w->stage.len;
    buf_append(&w->stage, frame, len);
    uint8_t *h = (uint8_t *)w->stage.data + at;
    put32(h, get32(h) & ~WAL_LEN_BARRIER); /* this log's own syncs set its barriers */
    uint64_t lsn;
    memcpy(&lsn, h + 8, 8);
    if (lsn & WAL_LSN_UNSEALED) { /* from a memory-mode stream: disk records carry their CRC */
        int64_t ts;
        memcpy(&ts, h + 16, 8);
        wal_frame_seal(h, len - WAL_REC_HDR, lsn & ~WAL_LSN_UNSEALED, ts);
    }
    w->next_lsn++;
    w->last_staged = true;
    w->last_mark = at;
}

bool
wal_staged(const struct wal *w)
{
    return w->stage.len > w->stage.off;
}

/* Hand the finished segment to the syncer and make nfd current. */
static void
retire_swap(struct wal *w, int ofd, uint64_t osize, int nfd)
{
    pthread_mutex_lock(&w->mu);
    if (w->nretired < sizeof(w->retired) / sizeof(w->retired[0])) {
        w->retired[w->nretired++] = (struct retired){ ofd, osize };
    } else {
        /* The syncer is far behind: sync inline rather than leak (rare). */
        if (fdatasync(ofd) != 0) {
            atomic_store(&w->sync_err, errno);
        } else if (ftruncate(ofd, (off_t)osize) != 0) {
            log_debug("[shard %u] ftruncate: %s", w->shard, strerror(errno));
        }
        close(ofd);
    }
    w->fd = nfd;
    w->dir_dirty = true;
    pthread_mutex_unlock(&w->mu);
}

static int
rotate_now(struct wal *w)
{
    bool spare = w->spare_on && atomic_load_explicit(&w->spare_ready, memory_order_acquire);
    bool empty = w->seg_size == WAL_SEG_HDR;
    if (empty && (w->seg_zeroed || !spare)) {
        return 0; /* the current segment is empty: nothing to do */
    }
    if (!empty) {
        wal_failpoint("wal-rotate");
    }
    int ofd = w->fd;
    uint64_t osize = w->seg_size;
    /* The first record not yet written (records may be staged: next_lsn is
     * past them). An empty growing segment is replaced by the spare under
     * its own name. */
    uint64_t first = empty ? w->seg_first
                           : atomic_load_explicit(&w->written_lsn, memory_order_relaxed) + 1;
    uint64_t zsize = 0;
    int nfd = spare ? seg_from_spare(w, first, &zsize) : -1;
    if (nfd >= 0) {
        seg_account(w, first, empty, zsize);
        atomic_fetch_add_explicit(&w->st_prezeroed, 1, memory_order_relaxed);
    } else if (empty) {
        return 0;
    } else {
        char err[256];
        nfd = seg_create(w, first, err, sizeof(err));
        if (nfd < 0) {
            log_warn("[shard %u] %s", w->shard, err);
            return nfd;
        }
        seg_account(w, first, false, 0);
    }
    retire_swap(w, ofd, osize, nfd);
    return 0;
}

int
wal_rotate(struct wal *w)
{
    if (w->rec_open) {
        /* Never inside a record: its bytes stay staged (and its marks valid)
         * until it is sealed, and it must end in the segment it starts in.
         * The next wal_write after it rotates. */
        w->rotate_pending = true;
        return 0;
    }
    w->rotate_pending = false;
    if (wal_staged(w)) {
        int rc = wal_write(w);
        if (rc < 0) {
            return rc;
        }
    }
    return rotate_now(w);
}

int
wal_write(struct wal *w)
{
    size_t n = w->stage.len - w->stage.off;
    if (w->rec_open) {
        return 0; /* an open record is written whole once sealed */
    }
    if (n == 0) {
        if (w->rotate_pending) {
            wal_rotate(w); /* on failure the current segment grows on (logged) */
        }
        return 0;
    }
    wal_failpoint("wal-append");
    if (w->seg_size == WAL_SEG_HDR && !w->seg_zeroed && w->spare_on &&
        atomic_load_explicit(&w->spare_ready, memory_order_relaxed)) {
        rotate_now(w); /* an empty growing segment: the spare takes its name */
    }
    if (w->stage.off == 0 && atomic_load_explicit(&w->durable_lsn, memory_order_acquire) ==
                                 atomic_load_explicit(&w->written_lsn, memory_order_relaxed)) {
        /* Everything before this wave is synced: say so in its first record
         * (the sync barrier), so that recovery can tell damage to synced
         * records from the torn end of an unsynced write (see wal.h). */
        uint8_t *h = (uint8_t *)w->stage.data;
        put32(h, get32(h) | WAL_LEN_BARRIER);
    }
    size_t done = 0, off0 = w->stage.off;
    uint64_t base = w->seg_size;
    int rc = pwrite_all(w->fd, w->stage.data + w->stage.off, n, w->seg_size, &done);
    w->stage.off += done;
    w->seg_size += done;
    w->seg_sizes[w->nseg - 1] += done;
    if (rc < 0) {
        w->write_err = -rc;
        return rc;
    }
    w->write_err = 0;
    if (w->last_staged) {
        w->last_known = true;
        w->last_seg = w->seg_first;
        w->last_off = base + (w->last_mark - off0);
        w->last_staged = false;
    }
    w->stage.off = w->stage.len = 0;
    if (w->stage.cap > (4u << 20)) {
        buf_shrink(&w->stage, 1u << 20);
    }
    atomic_store_explicit(&w->written_lsn, w->next_lsn - 1, memory_order_release);
    if (__builtin_expect(w->rotate_pending, 0)) {
        wal_rotate(w); /* asked for while a record was open; on failure as below */
        return 0;
    }
    if (w->spare_on) {
        /* Ask for the next one once the current segment shows load (a
         * server that writes little never zero-fills a big segment), early
         * enough to be ready. The first (small) one is asked at open. */
        uint64_t at = w->seg_cap / 16 < SPARE_ASK_MAX ? w->seg_cap / 16 : SPARE_ASK_MAX;
        bool loaded = w->seg_size >= WAL_SEG_HDR + at;
        if (!w->spare_asked && loaded) {
            spare_ask(w);
        }
        if (loaded && !w->seg_zeroed &&
            atomic_load_explicit(&w->spare_ready, memory_order_relaxed)) {
            rotate_now(w); /* leave a growing segment under load once a spare is ready */
            return 0;
        }
    }
    if (w->seg_size >= w->seg_cap) {
        wal_rotate(w); /* on failure the current segment grows on */
    }
    return 0;
}

void
wal_request_sync(struct wal *w)
{
    pthread_mutex_lock(&w->mu);
    if (!w->sync_req) {
        w->sync_req = true;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

void
wal_io_run(struct wal *w, void (*fn)(void *arg), void *arg)
{
    struct io_job *j = rv_malloc(sizeof(*j));
    j->next = NULL;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&w->mu);
    *w->jobs_tail = j;
    w->jobs_tail = &j->next;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void
wal_drop_covered(struct wal *w, uint64_t lsn)
{
    size_t keep = 0;
    /* Segment i holds [start_i, start_{i+1}); the last one is current. */
    while (keep + 1 < w->nseg && w->seg_starts[keep + 1] - 1 <= lsn) {
        char path[4200];
        wal_path_seg(path, sizeof(path), w->dir, w->seg_starts[keep]);
        if (unlink(path) != 0 && errno != ENOENT) {
            log_warn("[shard %u] cannot delete %s: %s", w->shard, path, strerror(errno));
            break;
        }
        keep++;
    }
    if (keep) {
        memmove(w->seg_starts, w->seg_starts + keep, (w->nseg - keep) * sizeof(uint64_t));
        memmove(w->seg_sizes, w->seg_sizes + keep, (w->nseg - keep) * sizeof(uint64_t));
        w->nseg -= keep;
    }
}

uint64_t
wal_last_lsn(const struct wal *w)
{
    return w->next_lsn - 1;
}
uint64_t
wal_written_lsn(const struct wal *w)
{
    return atomic_load_explicit(&((struct wal *)w)->written_lsn, memory_order_acquire);
}
uint64_t
wal_durable_lsn(const struct wal *w)
{
    return atomic_load_explicit(&((struct wal *)w)->durable_lsn, memory_order_acquire);
}
int
wal_write_error(const struct wal *w)
{
    return w->write_err;
}
int
wal_sync_error(const struct wal *w)
{
    return atomic_load(&((struct wal *)w)->sync_err);
}
size_t
wal_segments(const struct wal *w)
{
    return w->nseg;
}

void
wal_stats(const struct wal *w, struct wal_stats *st)
{
    struct wal *m = (struct wal *)w;
    st->syncs = atomic_load_explicit(&m->st_syncs, memory_order_relaxed);
    st->slow_syncs = atomic_load_explicit(&m->st_slow, memory_order_relaxed);
    st->paced_syncs = atomic_load_explicit(&m->st_paced, memory_order_relaxed);
    st->max_sync_us = atomic_load_explicit(&m->st_max_us, memory_order_relaxed);
    st->prezeroed_segments = atomic_load_explicit(&m->st_prezeroed, memory_order_relaxed);
}

uint64_t
wal_bytes(const struct wal *w)
{
    uint64_t t = 0;
    for (size_t i = 0; i < w->nseg; i++) {
        t += w->seg_sizes[i];
    }
    return t;
}

uint64_t
wal_bytes_from(const struct wal *w, uint64_t lsn)
{
    uint64_t t = 0;
    for (size_t i = w->nseg; i-- > 0;) {
        t += w->seg_sizes[i];
        if (w->seg_starts[i] <= lsn) {
            break;
        }
    }
    return t;
}

/* ---------------------------------------------------------------- payload */

void
wal_pay_begin(struct buf *b, enum wal_kind kind)
{
    uint8_t h[5] = { (uint8_t)kind, 0, 0, 0, 0 };
    buf_append(b, h, 5);
}

/* One command of a payload: argc, then each argument's length and bytes. */
static size_t
cmd_max(int argc, const struct rv_str *argv)
{
    size_t need = VARINT_MAX;
    for (int i = 0; i < argc; i++) {
        need += VARINT_MAX + argv[i].len;
    }
    return need;
}

static uint8_t *
cmd_put(uint8_t *p, int argc, const struct rv_str *argv)
{
    p = varint_put(p, (uint64_t)argc);
    for (int i = 0; i < argc; i++) {
        p = varint_put(p, argv[i].len);
        memcpy(p, argv[i].p, argv[i].len);
        p += argv[i].len;
    }
    return p;
}

void
wal_pay_cmd(struct buf *b, size_t start, int argc, const struct rv_str *argv)
{
    size_t need = cmd_max(argc, argv);
    if (b->cap - b->len < need) {
        buf_reserve(b, need);
    }
    uint8_t *p = cmd_put((uint8_t *)b->data + b->len, argc, argv);
    b->len = (size_t)((char *)p - b->data);
    uint8_t *n = (uint8_t *)b->data + start + 1;
    put32(n, get32(n) + 1);
}

uint64_t
wal_pay_cmd_max(int argc, const struct rv_str *argv)
{
    return cmd_max(argc, argv);
}

size_t
wal_pay_one_max(int argc, const struct rv_str *argv)
{
    return 5 + cmd_max(argc, argv);
}

size_t
wal_pay_one(uint8_t *p, int argc, const struct rv_str *argv)
{
    p[0] = WAL_P_CMDS;
    put32(p + 1, 1);
    return (size_t)(cmd_put(p + 5, argc, argv) - p);
}

uint32_t
wal_pay_ncmds(const struct buf *b, size_t start)
{
    return get32((const uint8_t *)b->data + start + 1);
}

bool
wal_pay_open(struct wal_pay_it *it, const uint8_t *p, size_t len)
{
    if (len < 5 || (p[0] != WAL_P_CMDS && p[0] != WAL_P_END)) {
        return false;
    }
    it->kind = (enum wal_kind)p[0];
    it->left = it->kind == WAL_P_CMDS ? get32(p + 1) : 0;
    it->p = p + 5;
    it->end = p + len;
    return true;
}

int
wal_pay_next_slow(struct wal_pay_it *it, int *argc, struct rv_str **argv, size_t *cap)
{
    uint64_t n;
    if (it->left == 0) {
        return it->p == it->end || it->kind != WAL_P_CMDS ? 0 : -1;
    }
    if (!varint_get_checked(&it->p, it->end, &n) || n == 0 || n > (uint64_t)(it->end - it->p)) {
        return -1;
    }
    if (n > *cap) {
        *cap = n < 16 ? 16 : n;
        *argv = rv_realloc(*argv, *cap * sizeof(**argv));
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l;
        if (!varint_get_checked(&it->p, it->end, &l) || l > (uint64_t)(it->end - it->p)) {
            return -1;
        }
        (*argv)[i].p = (const char *)it->p;
        (*argv)[i].len = l;
        it->p += l;
    }
    *argc = (int)n;
    it->left--;
    return 1;
}

uint64_t
wal_seg_logical(const struct wal *w, uint64_t first)
{
    for (size_t i = w->nseg; i-- > 0;) {
        if (w->seg_starts[i] == first) {
            return w->seg_sizes[i];
        }
    }
    return UINT64_MAX;
}

/* ---------------------------------------------------------------- checkpoints */

struct wal_ckpt {
    char dir[4096];
    char tmp[4200];
    char final[4200];
    int fd;
    struct buf b;
    struct wal_ckpt_info info;
};

struct wal_ckpt *
wal_ckpt_create(const char *dir, const struct wal_ckpt_info *info, char *err, size_t errsz)
{
    struct wal_ckpt *k = rv_calloc(1, sizeof(*k));
    snprintf(k->dir, sizeof(k->dir), "%s", dir);
    wal_path_ckpt(k->tmp, sizeof(k->tmp), dir, info->lsn, true);
    wal_path_ckpt(k->final, sizeof(k->final), dir, info->lsn, false);
    k->fd = open(k->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (k->fd < 0) {
        snprintf(err, errsz, "cannot create %s: %s", k->tmp, strerror(errno));
        rv_free(k);
        return NULL;
    }
    k->info = *info;
    buf_init(&k->b);
    uint8_t h[WAL_CKPT_HDR] = { 0 };
    memcpy(h, WAL_CKPT_MAGIC, 8);
    put32(h + 8, 1);
    put32(h + 12, info->shard);
    put32(h + 16, info->nshards);
    put32(h + 20, info->keys_hint);
    put64(h + 24, info->lsn);
    put64(h + 32, (uint64_t)info->created_ms);
    put32(h + WAL_CKPT_HDR - 4, wal_crc32c(0, h, WAL_CKPT_HDR - 4));
    buf_append(&k->b, h, sizeof(h));
    return k;
}

size_t
wal_ckpt_rec_begin(struct wal_ckpt *k)
{
    size_t mark = k->b.len;
    buf_reserve(&k->b, WAL_REC_HDR);
    k->b.len += WAL_REC_HDR;
    return mark;
}

struct buf *
wal_ckpt_buf(struct wal_ckpt *k)
{
    return &k->b;
}

int
wal_ckpt_rec_end(struct wal_ckpt *k, size_t mark)
{
    uint8_t *h = (uint8_t *)k->b.data + mark;
    size_t len = k->b.len - mark - WAL_REC_HDR;
    if (len > WAL_MAX_REC) {
        k->b.len = mark;
        return -EFBIG;
    }
    put32(h, (uint32_t)len);
    put64(h + 8, k->info.lsn);
    put64(h + 16, (uint64_t)k->info.created_ms);
    put32(h + 4, wal_crc32c(0, h + 8, 16 + len));
    return 0;
}

int
wal_ckpt_flush(struct wal_ckpt *k, size_t min)
{
    if (k->b.len < min || k->b.len == 0) {
        return 0;
    }
    wal_failpoint("ckpt-write");
    int rc = write_all(k->fd, k->b.data, k->b.len, NULL);
    if (rc == 0) {
        k->b.len = k->b.off = 0;
        if (k->b.cap > (8u << 20)) {
            buf_shrink(&k->b, 1u << 20);
        }
    }
    return rc;
}

void
wal_ckpt_abort(struct wal_ckpt *k)
{
    if (k == NULL) {
        return;
    }
    close(k->fd);
    unlink(k->tmp);
    buf_deinit(&k->b);
    rv_free(k);
}

int
wal_ckpt_finish(struct wal_ckpt *k, uint64_t nkeys)
{
    size_t mark = wal_ckpt_rec_begin(k);
    wal_pay_begin(&k->b, WAL_P_END);
    uint8_t n[8];
    put64(n, nkeys);
    buf_append(&k->b, n, 8);
    wal_ckpt_rec_end(k, mark);
    int rc = wal_ckpt_flush(k, 0);
    if (rc == 0 && fdatasync(k->fd) != 0) {
        rc = -errno;
    }
    if (rc == 0) {
        wal_failpoint("ckpt-rename");
        if (rename(k->tmp, k->final) != 0) {
            rc = -errno;
        }
    }
    if (rc == 0) {
        rc = wal_fsync_dir(k->dir);
    }
    close(k->fd);
    if (rc != 0) {
        unlink(k->tmp);
    }
    buf_deinit(&k->b);
    rv_free(k);
    return rc;
}
