/* wal/wal_read.c: listing a shard's files, reading segments and checkpoints
 * (recovery, ruvio-check, replica catch-up), and the walk over the segments
 * after a checkpoint with its torn-tail and corruption rules (see wal.h). */
#include "wal/wal.h"
#include "wal/wal_int.h"

#include "base/mem.h"
#include "wal/crc32c.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- listing */

static int
cmp_file(const void *a, const void *b)
{
    uint64_t x = ((const struct wal_file *)a)->lsn, y = ((const struct wal_file *)b)->lsn;
    return x < y ? -1 : x > y;
}

/* prefix, exactly 20 digits, suffix. */
static bool
parse_name(const char *name, const char *pre, const char *suf, uint64_t *out)
{
    size_t pl = strlen(pre), sl = strlen(suf);
    if (strlen(name) != pl + 20 + sl || strncmp(name, pre, pl) != 0 ||
        strcmp(name + pl + 20, suf) != 0) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < 20; i++) {
        unsigned d = (unsigned)(name[pl + i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

int
wal_list(const char *dir, struct wal_file **segs, size_t *nsegs, struct wal_file **ckpts,
         size_t *nckpts)
{
    DIR *d = opendir(dir);
    size_t ns = 0, nc = 0, cs = 0, cc = 0;
    struct wal_file *s = NULL, *c = NULL;
    if (d == NULL) {
        *segs = *ckpts = NULL;
        *nsegs = *nckpts = 0;
        return -errno;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        uint64_t v;
        bool ck;
        if (parse_name(de->d_name, "wal-", ".log", &v)) {
            ck = false;
        } else if (parse_name(de->d_name, "ckpt-", ".ckpt", &v)) {
            ck = true;
        } else {
            continue;
        }
        struct wal_file **arr = ck ? &c : &s;
        size_t *n = ck ? &nc : &ns, *cap = ck ? &cc : &cs;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 8;
            *arr = rv_realloc(*arr, *cap * sizeof(**arr));
        }
        (*arr)[*n].lsn = v;
        (*arr)[*n].ckpt = ck;
        snprintf((*arr)[*n].path, sizeof((*arr)[*n].path), "%s/%s", dir, de->d_name);
        (*n)++;
    }
    closedir(d);
    if (ns) {
        qsort(s, ns, sizeof(*s), cmp_file);
    }
    if (nc) {
        qsort(c, nc, sizeof(*c), cmp_file);
    }
    *segs = s;
    *nsegs = ns;
    *ckpts = c;
    *nckpts = nc;
    return 0;
}

/* ---------------------------------------------------------------- reader */

static int reader_open(struct wal_reader *r, const char *path, bool ckpt, uint64_t max, char *err,
                       size_t errsz);

int
wal_reader_open(struct wal_reader *r, const char *path, bool ckpt, char *err, size_t errsz)
{
    return reader_open(r, path, ckpt, UINT64_MAX, err, errsz);
}

/* max: map no more than this (the part no one will truncate). */
static int
reader_open(struct wal_reader *r, const char *path, bool ckpt, uint64_t max, char *err,
            size_t errsz)
{
    memset(r, 0, sizeof(*r));
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        snprintf(err, errsz, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0) {
        snprintf(err, errsz, "cannot stat %s: %s", path, strerror(errno));
        close(r->fd);
        return -1;
    }
    r->size = (uint64_t)st.st_size < max ? (size_t)st.st_size : (size_t)max;
    size_t hdr = ckpt ? WAL_CKPT_HDR : WAL_SEG_HDR;
    if (r->size > 0) {
        void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errsz, "cannot map %s: %s", path, strerror(errno));
            close(r->fd);
            return -1;
        }
        madvise(m, r->size, MADV_SEQUENTIAL);
        r->map = m;
    }
    const uint8_t *h = r->map;
    if (r->size < hdr || memcmp(h, ckpt ? WAL_CKPT_MAGIC : WAL_SEG_MAGIC, 8) != 0 ||
        get32(h + 8) != 1 || get32(h + hdr - 4) != wal_crc32c(0, h, hdr - 4)) {
        snprintf(err, errsz, "%s: bad or truncated header at offset 0", path);
        wal_reader_close(r);
        return -1;
    }
    if (ckpt) {
        r->ck.shard = get32(h + 12);
        r->ck.nshards = get32(h + 16);
        r->ck.keys_hint = get32(h + 20);
        r->ck.lsn = get64(h + 24);
        r->ck.created_ms = (int64_t)get64(h + 32);
        r->last_lsn = r->ck.lsn;
    } else {
        r->first_lsn = get64(h + 16);
        r->last_lsn = r->first_lsn;
    }
    r->off = hdr;
    return 0;
}

static bool
all_zero(const uint8_t *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7)) {
        if (*p) {
            return false;
        }
        p++;
        n--;
    }
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        if (v) {
            return false;
        }
    }
    for (; n > 0; p++, n--) {
        if (*p) {
            return false;
        }
    }
    return true;
}

/* A well-formed record (sane length and LSN, matching CRC) at pos? */
static bool
record_at(const struct wal_reader *r, size_t pos, uint64_t *lsn, uint32_t *len, bool *barrier)
{
    const uint8_t *p = r->map + pos;
    uint32_t raw = get32(p);
    uint64_t l = raw & ~WAL_LEN_BARRIER, n = get64(p + 8);
    if (l == 0 || l > r->size - pos - WAL_REC_HDR || n < r->last_lsn ||
        n > r->last_lsn + (1ull << 32) || get32(p + 4) != wal_crc32c(0, p + 8, 16 + (size_t)l)) {
        return false;
    }
    *lsn = n;
    *len = (uint32_t)l;
    *barrier = (raw & WAL_LEN_BARRIER) != 0;
    return true;
}

/* Bad bytes at offset from: are they a torn tail or damage? Every
 * well-formed record after them is found (a byte-by-byte search, then
 * record by record). None: a tail the last write did not finish. One with
 * the sync barrier: it was written after an fdatasync that covered the bad
 * record, so that record had been synced (maybe acknowledged): damage,
 * CORRUPT. Only records without a barrier: they were written in the same
 * unsynced stretch as the bad one (power loss can persist a later page of a
 * write without an earlier one): never acknowledged, TORN, and they are
 * counted in r->gap_*. */
static enum wal_rd
judge_damage(struct wal_reader *r, size_t from)
{
    uint64_t lsn, first = 0, last = 0, n = 0;
    uint32_t len;
    bool barrier;
    size_t pos = from + 1;
    r->gap_recs = r->gap_first = r->gap_last = 0;
    while (pos + WAL_REC_HDR <= r->size) {
        if (!record_at(r, pos, &lsn, &len, &barrier)) {
            pos++;
            continue;
        }
        if (barrier) {
            return WAL_RD_CORRUPT;
        }
        if (n++ == 0) {
            first = lsn;
        }
        last = lsn;
        pos += WAL_REC_HDR + len;
    }
    r->gap_recs = n;
    r->gap_first = first;
    r->gap_last = last;
    return WAL_RD_TORN;
}

enum wal_rd
wal_reader_next(struct wal_reader *r, struct wal_rec *rec)
{
    size_t left = r->size - r->off;
    const uint8_t *p = r->map + r->off;
    if (left == 0) {
        return WAL_RD_END;
    }
    /* Zeros from here to the end of the file: the unwritten part of a
     * pre-zeroed segment, a clean end. */
    if (all_zero(p, left < WAL_REC_HDR ? left : WAL_REC_HDR) &&
        (left <= WAL_REC_HDR || all_zero(p + WAL_REC_HDR, left - WAL_REC_HDR))) {
        r->zero_tail = true;
        return WAL_RD_END;
    }
    /* A record cut short, or garbage no complete record follows: a torn tail
     * (the write of the last wave did not complete). Bad bytes followed by a
     * well-formed record: corruption. */
    if (left < WAL_REC_HDR) {
        r->why = "truncated record header";
        return WAL_RD_TORN;
    }
    uint32_t len = get32(p) & ~WAL_LEN_BARRIER;
    r->gap_recs = 0;
    if (len == 0 || (uint64_t)len + WAL_REC_HDR > left) {
        r->why = len == 0 ? "zero record length" : "bad record length";
        enum wal_rd rd = judge_damage(r, r->off);
        if (rd == WAL_RD_TORN && len != 0 && r->gap_recs == 0) {
            r->why = "truncated record";
        }
        return rd;
    }
    if (get32(p + 4) != wal_crc32c(0, p + 8, 16 + (size_t)len)) {
        size_t after = left - WAL_REC_HDR - len;
        r->why = "CRC mismatch";
        if (after == 0 || all_zero(p + WAL_REC_HDR + len, after)) {
            return WAL_RD_TORN;
        }
        return judge_damage(r, r->off);
    }
    rec->lsn = get64(p + 8);
    r->last_lsn = rec->lsn;
    rec->ts_ms = (int64_t)get64(p + 16);
    rec->payload = p + WAL_REC_HDR;
    rec->len = len;
    r->off += WAL_REC_HDR + len;
    return WAL_RD_OK;
}

void
wal_reader_close(struct wal_reader *r)
{
    if (r->map) {
        munmap((void *)r->map, r->size);
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    r->map = NULL;
    r->fd = -1;
}

int
wal_truncate(const char *path, size_t off)
{
    if (truncate(path, (off_t)off) != 0) {
        return -errno;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    int rc = fdatasync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- walking */

void
wal_walk_init(struct wal_walk *k, const struct wal_file *segs, size_t n, uint64_t after)
{
    memset(k, 0, sizeof(*k));
    k->segs = segs;
    k->n = n;
    k->after = after;
    k->next = after + 1;
    k->r.fd = -1;
    /* segments wholly covered by the checkpoint are not needed */
    while (k->seg + 1 < n && segs[k->seg + 1].lsn <= after + 1) {
        k->seg++;
    }
}

void
wal_walk_live(struct wal_walk *k, const struct wal *w)
{
    k->live = w;
}


static enum wal_rd walk_fail(struct wal_walk *k, enum wal_rd rd, size_t off, bool whole,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum wal_rd
walk_fail(struct wal_walk *k, enum wal_rd rd, size_t off, bool whole, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->why, sizeof(k->why), fmt, ap);
    va_end(ap);
    k->off = off;
    k->whole_file = whole;
    return rd;
}

/* A torn stretch in segment k->seg that is not the last one (at offset off,
 * or a range missing after it): the segments after it hold the records
 * written after it. None of them with a sync barrier: they were never
 * synced either (in everysec, power loss soon after a rotation), so the
 * tail is cut there and they are dropped (drop_later). One with a barrier:
 * the bad stretch had been synced: corruption. */
static enum wal_rd
torn_before_later(struct wal_walk *k, size_t off, const char *why)
{
    uint64_t n = 0, first = 0, last = 0;
    if (k->seg + 2 < k->n) {
        /* Only the segment before the last: the unsynced stretch is at most
         * a second of writes, and a segment lost further back (e.g. deleted)
         * must never make recovery drop everything after it. */
        return walk_fail(k, WAL_RD_CORRUPT, off, false, "%s", why);
    }
    for (size_t i = k->seg + 1; i < k->n; i++) {
        struct wal_reader r;
        char err[4300];
        if (reader_open(&r, k->segs[i].path, false, UINT64_MAX, err, sizeof(err)) != 0) {
            continue; /* no readable header: no barrier in it either */
        }
        enum wal_rd rd = judge_damage(&r, WAL_SEG_HDR - 1);
        wal_reader_close(&r);
        if (rd == WAL_RD_CORRUPT) {
            return walk_fail(k, WAL_RD_CORRUPT, off, false,
                             "%s; a later segment (%s) has records "
                             "written after a sync that covered it",
                             why, k->segs[i].path);
        }
        if (r.gap_recs > 0) {
            first = n == 0 ? r.gap_first : first;
            last = r.gap_last;
            n += r.gap_recs;
        }
    }
    k->drop_later = true;
    k->gap_recs += n;
    return walk_fail(k, WAL_RD_TORN, off, false,
                     "%s; the %zu later segment(s) (%" PRIu64 " records, LSN %" PRIu64 "..%" PRIu64
                     ") have no sync barrier: never synced, set aside",
                     why, k->n - k->seg - 1, n, first, last);
}

enum wal_rd
wal_walk_next(struct wal_walk *k, struct wal_rec *rec)
{
    for (;;) {
        if (!k->open) {
            if (k->seg >= k->n) {
                return WAL_RD_END;
            }
            const struct wal_file *f = &k->segs[k->seg];
            if (k->started && f->lsn > k->next && k->seg > 0) {
                /* the previous segment ended early: its unsynced end lost? */
                char why[4400];
                snprintf(why, sizeof(why),
                         "WAL records %" PRIu64 "..%" PRIu64 " are missing "
                         "before %s",
                         k->next, f->lsn - 1, f->path);
                k->seg--;
                enum wal_rd rd = torn_before_later(k, k->prev_end, why);
                if (rd == WAL_RD_TORN) {
                    return rd;
                }
                k->seg++;
                return walk_fail(k, WAL_RD_CORRUPT, 0, true, "%s (a deleted or lost segment)", why);
            }
            if ((!k->started && f->lsn > k->next) || (k->started && f->lsn != k->next)) {
                return walk_fail(k, WAL_RD_CORRUPT, 0, true,
                                 "WAL records %" PRIu64 "..%" PRIu64 " are missing before %s "
                                 "(a deleted or lost segment)",
                                 k->next, f->lsn - 1, f->path);
            }
            if (!k->started) {
                k->next = f->lsn;
                k->started = true;
            }
            char err[4300];
            uint64_t max = k->live ? wal_seg_logical(k->live, f->lsn) : UINT64_MAX;
            if (reader_open(&k->r, f->path, false, max, err, sizeof(err)) != 0) {
                return walk_fail(k, WAL_RD_CORRUPT, 0, true, "%s", err);
            }
            k->open = true;
            k->bytes += k->r.size;
            if (k->r.first_lsn != f->lsn) {
                return walk_fail(k, WAL_RD_CORRUPT, 0, true,
                                 "WAL %s: header says first LSN %" PRIu64, f->path, k->r.first_lsn);
            }
        }
        size_t at = k->r.off;
        enum wal_rd rd = wal_reader_next(&k->r, rec);
        if (rd == WAL_RD_OK) {
            k->rec_off = at;
            if (rec->lsn != k->next) {
                return walk_fail(k, WAL_RD_CORRUPT, at, false, "LSN out of sequence");
            }
            k->next++;
            return WAL_RD_OK;
        }
        if (rd == WAL_RD_END) {
            if (k->r.zero_tail) {
                /* a pre-zeroed segment: its logical end is where the zeros start */
                k->bytes -= k->r.size - k->r.off;
                k->zero_tail = true;
                k->tail_seg = k->seg;
                k->tail_off = k->r.off;
            }
            k->prev_end = k->r.off;
            wal_reader_close(&k->r);
            k->open = false;
            k->seg++;
            continue;
        }
        if (rd == WAL_RD_CORRUPT) {
            return walk_fail(k, rd, k->r.off, false, "%s", k->r.why);
        }
        char why[4400];
        if (k->r.gap_recs > 0) {
            k->gap_recs = k->r.gap_recs;
            snprintf(why, sizeof(why),
                     "%s, then %" PRIu64 " well-formed records (LSN %" PRIu64 "..%" PRIu64
                     ") with no sync barrier: never synced, dropped with it",
                     k->r.why, k->r.gap_recs, k->r.gap_first, k->r.gap_last);
        } else {
            snprintf(why, sizeof(why), "%s", k->r.why);
        }
        if (k->seg + 1 == k->n) {
            return walk_fail(k, WAL_RD_TORN, k->r.off, false, "%s", why);
        }
        return torn_before_later(k, k->r.off, why);
    }
}

enum wal_rd
wal_walk_reject(struct wal_walk *k, const char *why)
{
    return walk_fail(k, WAL_RD_CORRUPT, k->rec_off, false, "%s", why);
}

void
wal_walk_close(struct wal_walk *k)
{
    if (k->open) {
        wal_reader_close(&k->r);
        k->open = false;
    }
}
