/* Unit tests of the WAL files: pre-zeroed segments (a zero tail is the end
 * of the log), torn tails and corruption inside the zeroed area, spares. */
#include "wal/wal.h"

#include "base/buf.h"
#include "base/mem.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[128];

static void
mkdir_tmp(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ruvio-unit-wal-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
rm_tmp(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* One SET record per LSN. */
static void
append(struct wal *w, int i)
{
    char k[32];
    int n = snprintf(k, sizeof(k), "k:%d", i);
    struct rv_str argv[3] = { { "SET", 3 }, { k, (size_t)n }, { "valuevaluevaluevalue", 20 } };
    size_t mark = wal_rec_begin(w);
    size_t start = wal_buf(w)->len;
    wal_pay_begin(wal_buf(w), WAL_P_CMDS);
    wal_pay_cmd(wal_buf(w), start, 3, argv);
    wal_rec_end(w, mark, 1000 + i);
}

static void
wait_durable(struct wal *w)
{
    wal_request_sync(w);
    for (int t = 0; t < 5000 && wal_durable_lsn(w) < wal_last_lsn(w); t++) {
        sleep_ms(1);
    }
    cr_assert_eq(wal_durable_lsn(w), wal_last_lsn(w));
}

static struct wal *
open_always(uint64_t seg_bytes, bool spare)
{
    char err[256] = "";
    struct wal_opts o = {
        .dir = dir, .shard = 0, .mode = WAL_ALWAYS, .seg_bytes = seg_bytes, .no_spare = !spare
    };
    struct wal *w = wal_open(&o, 1, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    return w;
}

/* Walk every segment: the records' LSNs, the result, where it stopped. */
static enum wal_rd
walk(uint64_t *last, size_t *nrec, struct wal_walk *out)
{
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    struct wal_walk k;
    struct wal_rec rec;
    enum wal_rd rd;
    *last = 0;
    *nrec = 0;
    wal_walk_init(&k, segs, ns, 0);
    while ((rd = wal_walk_next(&k, &rec)) == WAL_RD_OK) {
        *last = rec.lsn;
        (*nrec)++;
    }
    wal_walk_close(&k);
    if (out) {
        *out = k;
        out->segs = NULL;
    }
    free(segs);
    free(ck);
    return rd;
}

static off_t
fsize(const char *p)
{
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    return st.st_size;
}

static void
last_seg(char *out, size_t sz)
{
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_gt(ns, 0);
    snprintf(out, sz, "%s", segs[ns - 1].path);
    free(segs);
    free(ck);
}

static void
write_at(const char *path, off_t off, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, p, n, off), (ssize_t)n);
    close(fd);
}

/* A segment of records followed by zeros: what a process killed with a
 * pre-zeroed segment open leaves. */
static off_t
segment_with_zero_tail(int n, size_t zeros)
{
    struct wal *w = open_always(1 << 20, false);
    for (int i = 1; i <= n; i++) {
        append(w, i);
    }
    cr_assert_eq(wal_write(w), 0);
    wait_durable(w);
    wal_close(w);
    char p[4200];
    last_seg(p, sizeof(p));
    off_t end = fsize(p);
    cr_assert_eq(truncate(p, end + (off_t)zeros), 0);
    return end;
}

Test(wal, zero_tail_is_a_clean_end, .init = mkdir_tmp, .fini = rm_tmp)
{
    off_t end = segment_with_zero_tail(100, 65536);
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_END);
    cr_assert_eq(last, 100);
    cr_assert_eq(n, 100);
    cr_assert(k.zero_tail);
    cr_assert_eq(k.tail_off, (size_t)end);
    cr_assert_eq(k.bytes, (uint64_t)end, "logical bytes %lu", (unsigned long)k.bytes);
}

Test(wal, short_zero_tail_is_a_clean_end, .init = mkdir_tmp, .fini = rm_tmp)
{
    segment_with_zero_tail(10, 7); /* shorter than a record header */
    uint64_t last;
    size_t n;
    cr_assert_eq(walk(&last, &n, NULL), WAL_RD_END);
    cr_assert_eq(last, 10);
}

Test(wal, garbage_inside_the_zeroed_area_is_a_torn_tail, .init = mkdir_tmp, .fini = rm_tmp)
{
    off_t end = segment_with_zero_tail(50, 65536);
    char p[4200];
    last_seg(p, sizeof(p));
    /* a record header that claims more than was written, then zeros */
    uint8_t junk[40];
    memset(junk, 0xA5, sizeof(junk));
    write_at(p, end, junk, sizeof(junk));
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN);
    cr_assert_eq(last, 50);
    cr_assert_eq(k.off, (size_t)end);
    /* a valid record cut short by zeros (a partial write) */
    cr_assert_eq(wal_truncate(p, (size_t)end), 0);
    cr_assert_eq(truncate(p, end + 65536), 0);
    uint8_t rec[WAL_REC_HDR + 8];
    memset(rec, 0, sizeof(rec));
    uint32_t len = 200; /* 200 payload bytes announced, 8 there */
    memcpy(rec, &len, 4);
    rec[4] = 1;
    write_at(p, end, rec, sizeof(rec));
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN);
    cr_assert_eq(last, 50);
    cr_assert_eq(k.off, (size_t)end);
}

/* Waves of 5 records, each written after the previous one was synced
 * (always mode's rhythm): records 1, 6, 11, 16 carry the sync barrier, and
 * a clean close marks record 20 too. crash: the last wave (16..20) is
 * written, not synced, and the process dies (a child, _exit without close). */
static void
four_waves(bool crash)
{
    pid_t pid = crash ? fork() : 0;
    cr_assert_geq(pid, 0);
    if (pid > 0) {
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return;
    }
    struct wal *w = open_always(1 << 20, false);
    for (int wave = 0; wave < 4; wave++) {
        for (int i = 1; i <= 5; i++) {
            append(w, wave * 5 + i);
        }
        cr_assert_eq(wal_write(w), 0);
        if (wave < 3) {
            wait_durable(w);
        } else if (crash) {
            _exit(0);
        }
    }
    wal_close(w);
}

/* Offsets of the records of a segment (lengths without the barrier flag)
 * and their barrier flags; returns the count. */
static int
rec_offsets(const char *p, size_t *offs, bool *barrier, int max)
{
    off_t size = fsize(p);
    uint8_t *buf = malloc((size_t)size);
    int fd = open(p, O_RDONLY);
    cr_assert_eq(pread(fd, buf, (size_t)size, 0), size);
    close(fd);
    size_t off = WAL_SEG_HDR;
    int n = 0;
    while (off + WAL_REC_HDR <= (size_t)size && n < max) {
        uint32_t raw;
        memcpy(&raw, buf + off, 4);
        if (raw == 0) {
            break;
        }
        offs[n] = off;
        barrier[n] = (raw & WAL_LEN_BARRIER) != 0;
        off += WAL_REC_HDR + (raw & ~WAL_LEN_BARRIER);
        n++;
    }
    free(buf);
    return n;
}

/* Zero record i (1-based) of segment p: a page the disk never got. */
static size_t
zero_record(const char *p, int i)
{
    size_t offs[64];
    bool bar[64];
    int n = rec_offsets(p, offs, bar, 64);
    cr_assert_geq(n, i);
    size_t len = (i < n ? offs[i] : (size_t)fsize(p)) - offs[i - 1];
    uint8_t *z = calloc(1, len);
    write_at(p, (off_t)offs[i - 1], z, len);
    free(z);
    return offs[i - 1];
}

Test(wal, each_wave_after_a_sync_carries_the_barrier, .init = mkdir_tmp, .fini = rm_tmp)
{
    four_waves(false);
    char p[4200];
    last_seg(p, sizeof(p));
    size_t offs[64];
    bool bar[64];
    cr_assert_eq(rec_offsets(p, offs, bar, 64), 20);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(bar[i], i % 5 == 0 || i == 19, "record %d barrier %d", i + 1, bar[i]);
    }
    uint64_t last;
    size_t n;
    cr_assert_eq(walk(&last, &n, NULL), WAL_RD_END);
    cr_assert_eq(last, 20);
}

/* Finding 9 of issue 14: damage to a record that a later barrier proves was
 * synced (acknowledged in always) stops recovery, as before. */
Test(wal, zeros_then_a_record_with_a_barrier_is_corruption, .init = mkdir_tmp, .fini = rm_tmp)
{
    four_waves(false);
    char p[4200];
    last_seg(p, sizeof(p));
    size_t off = zero_record(p, 8); /* wave 2; waves 3 and 4 start with barriers */
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_CORRUPT);
    cr_assert_eq(last, 7);
    cr_assert_eq(k.off, off);
}

/* ... while a gap in the last, unsynced wave followed by well-formed records
 * of that wave (power loss persisted a later page before an earlier one) is
 * the torn tail: cut there, the records after it counted. */
Test(wal, a_gap_in_the_unsynced_last_wave_is_a_torn_tail, .init = mkdir_tmp, .fini = rm_tmp)
{
    four_waves(true);
    char p[4200];
    last_seg(p, sizeof(p));
    size_t off = zero_record(p, 17); /* wave 4 is 16..20, never synced */
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN);
    cr_assert_eq(last, 16);
    cr_assert_eq(k.off, off);
    cr_assert_eq(k.gap_recs, 3);
    cr_assert(strstr(k.why, "3 well-formed records (LSN 18..20)") != NULL, "%s", k.why);
    /* the wave's first record lost instead (the one with the barrier):
     * 17..20 have none, so still the torn tail */
    cr_assert_eq(unlink(p), 0);
    four_waves(true);
    last_seg(p, sizeof(p));
    zero_record(p, 16);
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN);
    cr_assert_eq(last, 15);
    cr_assert_eq(k.gap_recs, 4);
}

/* The writer: spares are prepared, rotation moves into them, every record
 * reads back in order, and closed segments end at their last record. */
Test(wal, spare_segments_rotate_and_read_back, .init = mkdir_tmp, .fini = rm_tmp)
{
    struct wal *w = open_always(4096, true);
    int lsn = 0;
    bool seen_zeroed = false;
    for (int round = 0; round < 400 && !(seen_zeroed && wal_segments(w) >= 4); round++) {
        for (int j = 0; j < 5; j++) {
            append(w, ++lsn);
        }
        cr_assert_eq(wal_write(w), 0);
        wait_durable(w);
        /* a live reader sees every durable record, then the zero tail of a
         * pre-zeroed current segment */
        uint64_t last;
        size_t n;
        struct wal_walk k;
        cr_assert_eq(walk(&last, &n, &k), WAL_RD_END);
        cr_assert_eq(last, (uint64_t)lsn);
        if (k.zero_tail) {
            char p[4200];
            last_seg(p, sizeof(p));
            cr_assert_eq(fsize(p), 4096);
            seen_zeroed = true;
        }
        sleep_ms(2);
    }
    cr_assert(seen_zeroed, "no pre-zeroed segment was used");
    uint64_t total = wal_bytes(w);
    wal_close(w);
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_END);
    cr_assert_eq(last, (uint64_t)lsn);
    cr_assert_eq(n, (size_t)lsn);
    cr_assert(!k.zero_tail, "a closed segment kept its zero tail");
    cr_assert_eq(k.bytes, total, "files %lu, wal_bytes %lu", (unsigned long)k.bytes,
                 (unsigned long)total);
    char spare[4300];
    snprintf(spare, sizeof(spare), "%s/wal-spare.tmp", dir);
    cr_assert_neq(access(spare, F_OK), 0, "the spare outlived close");
}

/* Pacing spaces sync starts, still completes every wave, and never lets the
 * durable LSN run ahead of what was written. */
static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
paced_run(int64_t interval_us, int64_t *elapsed)
{
    char err[256] = "";
    struct wal_opts o = { .dir = dir,
                          .shard = 0,
                          .mode = WAL_ALWAYS,
                          .seg_bytes = 1 << 20,
                          .sync_min_interval_us = interval_us };
    struct wal *w = wal_open(&o, 1, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    int64_t t0 = now_us();
    for (int i = 1; i <= 60; i++) {
        append(w, i);
        cr_assert_eq(wal_write(w), 0);
        cr_assert_leq(wal_durable_lsn(w), wal_written_lsn(w));
        wait_durable(w); /* one wave per sync */
    }
    *elapsed = now_us() - t0;
    wal_close(w);
    uint64_t last;
    size_t n;
    cr_assert_eq(walk(&last, &n, NULL), WAL_RD_END);
    cr_assert_eq(last, 60);
}

Test(wal, paced_syncs_are_spaced_and_cover_every_wave, .init = mkdir_tmp, .fini = rm_tmp)
{
    int64_t paced;
    paced_run(5000, &paced); /* an explicit interval: every sync is spaced */
    /* 60 syncs whose starts are at least 5 ms apart */
    cr_assert_geq(paced, 59 * 5000, "60 paced syncs took %ld us", (long)paced);
}

/* wal_pay_one (the backlog's in-place path) writes what wal_pay_begin +
 * wal_pay_cmd write, within its bound, and it reads back. */
Test(wal_pay, one_command_payload_matches_the_staged_encoding)
{
    static char big[300];
    memset(big, 'v', sizeof(big));
    struct rv_str cases[][4] = {
        { { "SET", 3 }, { "k", 1 }, { "", 0 }, { NULL, 0 } },
        { { "SET", 3 }, { "key:000001", 10 }, { big, 127 }, { NULL, 0 } },
        { { "HSET", 4 }, { "h", 1 }, { "f", 1 }, { big, 300 } },
        { { "PING", 4 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 } },
    };
    int argcs[] = { 3, 3, 4, 1 };
    for (size_t t = 0; t < sizeof(argcs) / sizeof(argcs[0]); t++) {
        struct buf b;
        buf_init(&b);
        wal_pay_begin(&b, WAL_P_CMDS);
        wal_pay_cmd(&b, 0, argcs[t], cases[t]);
        uint8_t out[1024];
        size_t max = wal_pay_one_max(argcs[t], cases[t]);
        size_t n = wal_pay_one(out, argcs[t], cases[t]);
        cr_assert_leq(n, max);
        cr_assert_eq(n, b.len, "case %zu", t);
        cr_assert_eq(memcmp(out, b.data, n), 0, "case %zu", t);
        struct wal_pay_it it;
        cr_assert(wal_pay_open(&it, out, n));
        int argc;
        struct rv_str *argv = NULL;
        size_t cap = 0;
        cr_assert_eq(wal_pay_next(&it, &argc, &argv, &cap), 1);
        cr_assert_eq(argc, argcs[t]);
        for (int i = 0; i < argc; i++) {
            cr_assert_eq(argv[i].len, cases[t][i].len);
            cr_assert_eq(memcmp(argv[i].p, cases[t][i].p, argv[i].len), 0);
        }
        cr_assert_eq(wal_pay_next(&it, &argc, &argv, &cap), 0);
        rv_free(argv);
        buf_deinit(&b);
    }
}

/* A replica logs frames verbatim; one that came unsealed from a memory-mode
 * primary is sealed as it is staged, so the disk only holds CRC-checked
 * records: recovery reads it back. */
Test(wal, an_unsealed_frame_is_sealed_on_the_way_to_disk)
{
    mkdir_tmp();
    struct wal *w = open_always(1 << 20, false);
    append(w, 1); /* an ordinary record first */
    uint8_t f[256];
    struct rv_str argv[3] = { { "SET", 3 }, { "key", 3 }, { "unsealed", 8 } };
    size_t n = wal_pay_one(f + WAL_REC_HDR, 3, argv);
    wal_frame_mark(f, n, wal_last_lsn(w) + 1, 777);
    wal_rec_put(w, f, WAL_REC_HDR + n);
    append(w, 3);
    cr_assert_eq(wal_write(w), 0);
    wait_durable(w);
    wal_close(w);
    uint64_t last;
    size_t nrec;
    cr_assert_eq(walk(&last, &nrec, NULL), WAL_RD_END); /* every CRC checks */
    cr_assert_eq(nrec, 3);
    cr_assert_eq(last, 3);
    rm_tmp();
}

static uint64_t
rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15)); /* splitmix64 */
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* wal_pay_next's inline path for the common shape must decode exactly as
 * the general one does: random payloads (some with long arguments or many
 * of them, to take the slow path), truncated or with a byte changed. */
Test(wal, payload_fast_path_decodes_as_the_slow_path)
{
    uint64_t seed = 12345;
    struct buf b;
    buf_init(&b);
    char big[400];
    memset(big, 'x', sizeof(big));
    struct rv_str args[200];
    struct rv_str *fa = NULL, *sa = NULL;
    size_t fcap = 0, scap = 0;
    for (int t = 0; t < 20000; t++) {
        b.len = b.off = 0;
        wal_pay_begin(&b, WAL_P_CMDS);
        int ncmd = 1 + (int)(rnd(&seed) % 3);
        for (int c = 0; c < ncmd; c++) {
            int argc = rnd(&seed) % 8 == 0 ? 1 + (int)(rnd(&seed) % 200)
                                           : 1 + (int)(rnd(&seed) % 5);
            for (int i = 0; i < argc; i++) {
                size_t l = rnd(&seed) % 8 == 0 ? rnd(&seed) % sizeof(big) : rnd(&seed) % 20;
                args[i] = (struct rv_str){ big, l };
            }
            wal_pay_cmd(&b, 0, argc, args);
        }
        size_t n = b.len;
        uint8_t *p = (uint8_t *)b.data;
        switch (t % 4) {
        case 1:
            n = rnd(&seed) % (n + 1); /* cut short */
            break;
        case 2:
            p[rnd(&seed) % n] = (uint8_t)rnd(&seed); /* any byte, counts included */
            break;
        case 3:
            p[5 + rnd(&seed) % (n - 5)] ^= 0x80; /* a varint's continuation bit */
            break;
        default: break;
        }
        if (t % 50 == 0) { /* argv too small for the fast path */
            rv_free(fa);
            fa = NULL;
            fcap = 0;
        }
        struct wal_pay_it fi, si;
        bool fo = wal_pay_open(&fi, p, n), so = wal_pay_open(&si, p, n);
        cr_assert_eq(fo, so);
        if (!fo) {
            continue;
        }
        for (;;) {
            int fargc = -1, sargc = -1;
            int fr = wal_pay_next(&fi, &fargc, &fa, &fcap);
            int sr = wal_pay_next_slow(&si, &sargc, &sa, &scap);
            cr_assert_eq(fr, sr, "case %d", t);
            if (fr != 1) {
                break;
            }
            cr_assert_eq(fargc, sargc);
            cr_assert_eq(fi.p, si.p);
            cr_assert_eq(fi.left, si.left);
            for (int i = 0; i < fargc; i++) {
                cr_assert_eq(fa[i].p, sa[i].p, "case %d arg %d", t, i);
                cr_assert_eq(fa[i].len, sa[i].len, "case %d arg %d", t, i);
            }
        }
    }
    rv_free(fa);
    rv_free(sa);
    buf_deinit(&b);
}

/* Finding 4 of issue 14: a rotation asked for while a record is open (a
 * checkpoint restarted by FLUSHALL inside EXEC) waits for the record's end:
 * nothing of the open record is written unsealed, its marks stay valid, and
 * it lands whole in one segment. */
Test(wal, rotation_inside_an_open_record_waits_for_its_end, .init = mkdir_tmp, .fini = rm_tmp)
{
    char err[256] = "";
    struct wal_opts o = { .dir = dir, .shard = 0, .mode = WAL_EVERYSEC, .seg_bytes = 1 << 20 };
    struct wal *w = wal_open(&o, 1, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    append(w, 1);
    struct rv_str a[3] = { { "SET", 3 }, { "a", 1 }, { "1", 1 } };
    struct rv_str f[1] = { { "FLUSHALL", 8 } };
    size_t mark = wal_rec_begin(w);
    size_t start = wal_buf(w)->len;
    wal_pay_begin(wal_buf(w), WAL_P_CMDS);
    wal_pay_cmd(wal_buf(w), start, 3, a);
    cr_assert_eq(wal_rotate(w), 0);
    cr_assert_eq(wal_segments(w), 1, "rotated inside a record");
    cr_assert_eq(wal_write(w), 0);
    cr_assert_eq(wal_written_lsn(w), 0, "wrote while a record was open");
    wal_pay_cmd(wal_buf(w), start, 1, f);
    cr_assert_eq(wal_rec_end(w, mark, 2000), 2);
    cr_assert_eq(wal_write(w), 0);
    cr_assert_eq(wal_written_lsn(w), 2);
    cr_assert_eq(wal_segments(w), 2, "the rotation was lost");
    append(w, 3);
    wal_close(w);

    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_eq(ns, 2);
    cr_assert_eq(segs[1].lsn, 3, "the new segment starts after the record");
    free(segs);
    free(ck);
    uint64_t last;
    size_t n;
    cr_assert_eq(walk(&last, &n, NULL), WAL_RD_END);
    cr_assert_eq(last, 3);
    cr_assert_eq(n, 3);
    /* the record holds both commands */
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    struct wal_walk k;
    struct wal_rec rec;
    wal_walk_init(&k, segs, ns, 1);
    do {
        cr_assert_eq(wal_walk_next(&k, &rec), WAL_RD_OK);
    } while (rec.lsn < 2);
    cr_assert_eq(rec.lsn, 2);
    struct wal_pay_it it;
    cr_assert(wal_pay_open(&it, rec.payload, rec.len));
    cr_assert_eq(it.left, 2);
    wal_walk_close(&k);
    free(segs);
    free(ck);
}

/* Finding 11 of issue 14: lengths that do not fit the record header (32
 * bits, the top one the sync barrier) are refused, never truncated. The
 * buffers here only claim the length: nothing past the header is read. */
Test(wal_limit, encoder_bound_reads_lengths_only)
{
    struct rv_str big[3] = { { "SET", 3 }, { "k", 1 }, { NULL, (size_t)WAL_MAX_REC } };
    uint64_t one = wal_pay_cmd_max(3, big);
    cr_assert_gt(one, WAL_MAX_REC);
    big[2].len = (size_t)WAL_MAX_REC - 64;
    cr_assert_leq(5 + wal_pay_cmd_max(3, big), WAL_MAX_REC);
    big[2].len = (size_t)1 << 32; /* 4 GiB: the old truncation wrapped it to 0 */
    cr_assert_gt(wal_pay_cmd_max(3, big), 1ull << 32);
}

Test(wal_limit, an_oversized_record_is_dropped_and_fails_the_log, .init = mkdir_tmp, .fini = rm_tmp)
{
    char err[256] = "";
    struct wal_opts o = { .dir = dir, .shard = 0, .mode = WAL_EVERYSEC, .seg_bytes = 1 << 20 };
    struct wal *w = wal_open(&o, 1, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    append(w, 1);
    size_t mark = wal_rec_begin(w);
    struct buf *b = wal_buf(w);
    size_t real = b->len;
    b->len = mark + WAL_REC_HDR + (size_t)WAL_MAX_REC + 1; /* claimed, not allocated */
    cr_assert_eq(wal_rec_end(w, mark, 5), 0, "an oversized record got an LSN");
    cr_assert_eq(b->len, mark, "its bytes stayed staged");
    cr_assert_leq(real, b->cap);
    cr_assert_eq(wal_last_lsn(w), 1);
    cr_assert_eq(wal_sync_error(w), EFBIG);
    cr_assert_eq(wal_write(w), 0);
    wal_close(w);
    uint64_t last;
    size_t n;
    cr_assert_eq(walk(&last, &n, NULL), WAL_RD_END);
    cr_assert_eq(last, 1);
}

Test(wal_limit, an_oversized_checkpoint_record_is_refused, .init = mkdir_tmp, .fini = rm_tmp)
{
    char err[256] = "";
    struct wal_ckpt_info info = { .shard = 0, .nshards = 1, .lsn = 7 };
    struct wal_ckpt *k = wal_ckpt_create(dir, &info, err, sizeof(err));
    cr_assert_not_null(k, "%s", err);
    size_t mark = wal_ckpt_rec_begin(k);
    struct buf *b = wal_ckpt_buf(k);
    b->len = mark + WAL_REC_HDR + ((size_t)1 << 32) + 5; /* would have wrapped to 5 */
    cr_assert_eq(wal_ckpt_rec_end(k, mark), -EFBIG);
    cr_assert_eq(b->len, mark);
    mark = wal_ckpt_rec_begin(k);
    wal_pay_begin(b, WAL_P_CMDS);
    cr_assert_eq(wal_ckpt_rec_end(k, mark), 0);
    wal_ckpt_abort(k);
}

/* Finding 10 of issue 14: replica catch-up walks the live log on the shard
 * thread while the sync thread cuts a finished pre-zeroed segment back to its
 * last record. A segment mapped at its file size (zero tail included) then
 * raised SIGBUS on the next read; a live walk maps only the logical size.
 * The cut is made here, between two reads, where the syncer could make it. */
Test(wal, a_live_walk_survives_the_cut_of_a_zero_tail, .init = mkdir_tmp, .fini = rm_tmp)
{
    char err[256] = "";
    struct wal_opts o = { .dir = dir, .shard = 0, .mode = WAL_EVERYSEC, .seg_bytes = 1 << 20 };
    struct wal *w = wal_open(&o, 1, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    for (int i = 1; i <= 40; i++) {
        append(w, i);
    }
    cr_assert_eq(wal_rotate(w), 0); /* segment 1 is finished */
    for (int i = 41; i <= 50; i++) {
        append(w, i);
    }
    cr_assert_eq(wal_write(w), 0);
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_eq(ns, 2);
    off_t end = fsize(segs[0].path);
    /* as a retired pre-zeroed segment looks before the syncer cuts it */
    cr_assert_eq(truncate(segs[0].path, end + (1 << 20)), 0);

    struct wal_walk k;
    struct wal_rec rec;
    wal_walk_init(&k, segs, ns, 0);
    wal_walk_live(&k, w);
    cr_assert_eq(wal_walk_next(&k, &rec), WAL_RD_OK);
    cr_assert_eq(truncate(segs[0].path, end), 0); /* the syncer's cut */
    uint64_t last = rec.lsn;
    enum wal_rd rd;
    while ((rd = wal_walk_next(&k, &rec)) == WAL_RD_OK) {
        cr_assert_eq(rec.lsn, last + 1);
        last = rec.lsn;
    }
    cr_assert_eq(rd, WAL_RD_END);
    cr_assert_eq(last, 50);
    wal_walk_close(&k);
    free(segs);
    free(ck);
    wal_close(w);
}

/* Power loss soon after a rotation (everysec's rhythm: writes go on while
 * the finished segment waits for its sync): the unsynced stretch spans two
 * segments. Records 1..5 synced; 6..10 written, then a rotation, then
 * 11..15, and the process dies. synced_before_rotation: a sync covered
 * 6..10 before 11..15 were written (so 11 carries a barrier). */
static void
rotation_then_crash_n(bool synced_before_rotation, int upto)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid > 0) {
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return;
    }
    struct wal *w = open_always(1 << 20, false);
    for (int i = 1; i <= upto; i++) {
        append(w, i);
        if (i % 5 == 0) {
            cr_assert_eq(wal_write(w), 0);
        }
        if (i == 5 || (i == 10 && synced_before_rotation)) {
            wait_durable(w);
        }
        if (i % 5 == 0 && i >= 10 && i < upto) {
            cr_assert_eq(wal_rotate(w), 0);
        }
    }
    _exit(0);
}

static void
rotation_then_crash(bool synced_before_rotation)
{
    rotation_then_crash_n(synced_before_rotation, 15);
}

Test(wal, an_unsynced_stretch_across_a_rotation_is_a_torn_tail, .init = mkdir_tmp, .fini = rm_tmp)
{
    rotation_then_crash(false);
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_eq(ns, 2);
    size_t off = zero_record(segs[0].path, 8);
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN, "%s", k.why);
    cr_assert_eq(last, 7);
    cr_assert_eq(k.seg, 0);
    cr_assert_eq(k.off, off);
    cr_assert(k.drop_later);
    cr_assert_eq(k.gap_recs, 7, "%s", k.why); /* 9, 10 and 11..15 */
    /* the finished segment's end never reached the disk: records 8..10 missing */
    cr_assert_eq(wal_truncate(segs[0].path, off), 0);
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_TORN, "%s", k.why);
    cr_assert_eq(last, 7);
    cr_assert_eq(k.seg, 0);
    cr_assert_eq(k.off, off);
    cr_assert(k.drop_later);
    free(segs);
    free(ck);
}

Test(wal, a_gap_before_a_later_segments_barrier_is_corruption, .init = mkdir_tmp, .fini = rm_tmp)
{
    rotation_then_crash(true);
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_eq(ns, 2);
    size_t off = zero_record(segs[0].path, 8);
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_CORRUPT, "%s", k.why);
    cr_assert_eq(k.off, off);
    cr_assert_eq(wal_truncate(segs[0].path, off), 0);
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_CORRUPT, "%s", k.why);
    cr_assert(strstr(k.why, "are missing") != NULL, "%s", k.why);
    free(segs);
    free(ck);
}

/* ... but only from the segment before the last: a gap further back (two
 * rotations since, no barrier anywhere) still stops recovery. */
Test(wal, a_gap_two_segments_back_is_corruption, .init = mkdir_tmp, .fini = rm_tmp)
{
    rotation_then_crash_n(false, 20);
    struct wal_file *segs, *ck;
    size_t ns, nc;
    cr_assert_eq(wal_list(dir, &segs, &ns, &ck, &nc), 0);
    cr_assert_eq(ns, 3);
    zero_record(segs[0].path, 8);
    uint64_t last;
    size_t n;
    struct wal_walk k;
    cr_assert_eq(walk(&last, &n, &k), WAL_RD_CORRUPT, "%s", k.why);
    cr_assert_eq(last, 7);
    free(segs);
    free(ck);
}
