/* The replication backlog: whole records dropped from the front past its
 * size, LSN -> position lookups, compaction keeping positions absolute. */
#include "replication/repl_int.h"
#include "replication/repl_msg_pb.h"
#include "wal/wal.h"

#include <criterion/criterion.h>
#include <string.h>

/* A frame of lsn with a payload of n bytes of c. */
static size_t
frame(uint8_t *out, uint64_t lsn, size_t n, char c)
{
    memset(out + WAL_REC_HDR, c, n);
    wal_frame_seal(out, n, lsn, 1000 + (int64_t)lsn);
    return WAL_REC_HDR + n;
}

/* Bytes readable at pos within its block (records never straddle blocks). */
static size_t
span(const struct backlog *bl, uint64_t pos)
{
    const struct bl_block *b = bl_block_at(bl, pos);
    cr_assert_not_null(b);
    return (size_t)(b->pos + b->len - pos);
}

Test(backlog, keeps_recent_records_and_finds_them)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 1000, 1);
    uint8_t f[256];
    uint64_t total = 0;
    for (uint64_t lsn = 1; lsn <= 300; lsn++) {
        size_t n = frame(f, lsn, 50 + lsn % 7, (char)('a' + lsn % 26));
        bl_append(&bl, f, n);
        total += n;
        uint64_t kept = bl_end(&bl) - bl.base;
        /* at least size bytes (or all there is), at most one block more */
        cr_assert_geq(kept, total < 1000 ? total : 1000);
        cr_assert_leq(kept, 1000 + 4096 + n);
    }
    cr_assert_eq(bl_end(&bl), total);
    cr_assert_eq(bl.next_lsn, 301);
    cr_assert_gt(bl.first_lsn, 1);
    cr_assert_eq(bl.first_lsn, bl.head->lsn);
    cr_assert_eq(bl.base, bl.head->pos);
    uint64_t pos;
    cr_assert_not(bl_find(&bl, bl.first_lsn - 1, &pos));
    cr_assert(bl_find(&bl, 301, &pos));
    cr_assert_eq(pos, bl_end(&bl));
    uint64_t walk = bl.base;
    for (uint64_t lsn = bl.first_lsn; lsn <= 300; lsn++) {
        cr_assert(bl_find(&bl, lsn, &pos));
        cr_assert_eq(pos, walk, "lsn %llu", (unsigned long long)lsn);
        struct wal_rec rec;
        cr_assert_eq(wal_frame_parse(bl_at(&bl, pos), span(&bl, pos), &rec), 1);
        cr_assert_eq(rec.lsn, lsn);
        cr_assert_eq(rec.ts_ms, 1000 + (int64_t)lsn);
        cr_assert_eq(rec.payload[0], (uint8_t)('a' + lsn % 26));
        walk += WAL_REC_HDR + rec.len;
    }
    cr_assert_null(bl_at(&bl, bl.base - 1));
    bl_deinit(&bl);
}

Test(backlog, blocks_hold_whole_records_and_count_lsns)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 64 * 4096, 10); /* 16 KB blocks */
    static uint8_t f[8192];
    for (uint64_t lsn = 10; lsn < 2000; lsn++) {
        bl_append(&bl, f, frame(f, lsn, 100 + (lsn * 37) % 3000, 'k'));
    }
    uint64_t lsn = bl.first_lsn;
    int blocks = 0;
    for (const struct bl_block *b = bl.head; b; b = b->next, blocks++) {
        cr_assert_eq(b->lsn, lsn);
        cr_assert_leq(b->len, b->cap);
        uint64_t off = 0;
        while (off < b->len) { /* the block parses as whole records, nothing left over */
            struct wal_rec rec;
            cr_assert_eq(wal_frame_parse(b->data + off, b->len - off, &rec), 1);
            cr_assert_eq(rec.lsn, lsn);
            lsn++;
            off += WAL_REC_HDR + rec.len;
        }
        cr_assert_eq(bl_block_next_lsn(&bl, b), lsn);
        if (b->next) {
            cr_assert_eq(b->next->pos, b->pos + b->len);
        }
    }
    cr_assert_eq(lsn, 2000);
    cr_assert_gt(blocks, 4);
    bl_deinit(&bl);
}

Test(backlog, trim_point_is_what_trim_drops)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 16384, 1);
    static uint8_t f[2048];
    for (uint64_t lsn = 1; lsn <= 500; lsn++) {
        bl_push(&bl, f, frame(f, lsn, 200, 'p'));
        uint64_t upto = bl_trim_point(&bl);
        cr_assert_geq(upto, bl.base);
        bl_trim(&bl);
        cr_assert_eq(bl.base, upto);
    }
    bl_deinit(&bl);
}

Test(backlog, a_smaller_size_applies_to_what_is_kept_next)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 16u << 20, 1); /* 1 MB blocks */
    static uint8_t f[256];
    uint64_t lsn = 1;
    for (; lsn <= 3000; lsn++) {
        bl_append(&bl, f, frame(f, lsn, 64, 'a'));
    }
    cr_assert_eq(bl.first_lsn, 1); /* all in the first 1 MB block */
    bl_set_size(&bl, 16384);       /* CONFIG SET repl-backlog-size 16kb */
    for (; lsn <= 6000; lsn++) {
        bl_append(&bl, f, frame(f, lsn, 64, 'b'));
        if (lsn > 3300) {
            cr_assert_leq(bl_end(&bl) - bl.base, 16384 + 4096 + 256);
        }
    }
    cr_assert_gt(bl.first_lsn, 3000);
    uint64_t pos;
    cr_assert(bl_find(&bl, 6000, &pos));
    bl_deinit(&bl);
}

Test(backlog, a_record_larger_than_the_backlog_is_kept_alone)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 100, 7);
    static uint8_t f[8192];
    bl_append(&bl, f, frame(f, 7, 10, 'x'));
    bl_append(&bl, f, frame(f, 8, 6000, 'y')); /* larger than a block: a block of its own */
    cr_assert_eq(bl.first_lsn, 8);
    uint64_t pos;
    cr_assert(bl_find(&bl, 8, &pos));
    cr_assert_eq(span(&bl, pos), WAL_REC_HDR + 6000);
    bl_append(&bl, f, frame(f, 9, 10, 'z'));
    cr_assert_eq(bl.first_lsn, 9);
    bl_deinit(&bl);
}

static void
same_backlog(const struct backlog *a, const struct backlog *b)
{
    cr_assert_eq(a->first_lsn, b->first_lsn);
    cr_assert_eq(a->next_lsn, b->next_lsn);
    cr_assert_eq(a->base, b->base);
    cr_assert_eq(a->end, b->end);
    const struct bl_block *x = a->head, *y = b->head;
    for (; x && y; x = x->next, y = y->next) {
        cr_assert_eq(x->pos, y->pos);
        cr_assert_eq(x->lsn, y->lsn);
        cr_assert_eq(x->len, y->len);
        cr_assert_eq(x->cap, y->cap);
        cr_assert_eq(x->jumbo, y->jumbo);
        cr_assert_eq(memcmp(x->data, y->data, x->len), 0);
    }
    cr_assert(x == NULL && y == NULL);
    cr_assert(a->tail != NULL || a->head == NULL);
}

/* A run of frames appended at once leaves the backlog exactly as appending
 * them one by one does: same blocks, same bytes, same trimming; runs of all
 * sizes, frames small, block-sized and larger (jumbo). */
Test(backlog, a_run_appends_as_its_frames_one_by_one)
{
    static uint8_t run[1u << 20];
    uint64_t seed = 99;
    for (int sz = 0; sz < 3; sz++) {
        size_t size = sz == 0 ? 100 : sz == 1 ? 65536 : 16u << 20;
        struct backlog a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        bl_init(&a, size, 1);
        bl_init(&b, size, 1);
        uint64_t lsn = 1;
        for (int r = 0; r < 300; r++) {
            size_t n = 0;
            int k = (int)((seed = seed * 6364136223846793005u + 1442695040888963407u) >> 33) % 40;
            for (int i = 0; i < k; i++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                size_t len = (seed >> 40) % 16 == 0 ? (seed >> 20) % 9000 : (seed >> 20) % 300;
                if (n + WAL_REC_HDR + len > sizeof(run)) {
                    break;
                }
                size_t f = frame(run + n, lsn, len, (char)('a' + lsn % 26));
                bl_append(&a, run + n, f);
                n += f;
                lsn++;
            }
            bl_append_run(&b, run, n);
            same_backlog(&a, &b);
        }
        bl_deinit(&a);
        bl_deinit(&b);
    }
}

/* The hand-packed Records header plus the frames is what protobuf-c packs. */
Test(link, records_header_matches_protobuf_c)
{
    static const uint64_t firsts[] = { 0, 1, 127, 128, 300, 1ull << 40, UINT64_MAX };
    static const uint32_t counts[] = { 0, 1, 200, 70000 };
    static const size_t lens[] = { 0, 1, 127, 128, 20000, 3u << 20 };
    static uint8_t frames[3u << 20];
    for (size_t i = 0; i < sizeof(frames); i++) {
        frames[i] = (uint8_t)(i * 7);
    }
    for (size_t a = 0; a < sizeof(firsts) / sizeof(firsts[0]); a++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
                Records rec = RECORDS__INIT;
                ReplMsg m = REPL_MSG__INIT;
                rec.first_lsn = firsts[a];
                rec.count = counts[c];
                rec.frames.data = frames;
                rec.frames.len = lens[k];
                m.m_case = REPL_MSG__M_RECORDS;
                m.records = &rec;
                struct buf want, got;
                buf_init(&want);
                buf_init(&got);
                repl_send(&want, &m);
                uint8_t h[REPL_RECORDS_HDR_MAX];
                size_t hl = repl_records_hdr(h, firsts[a], counts[c], lens[k]);
                buf_append(&got, h, hl);
                buf_append(&got, frames, lens[k]);
                cr_assert_eq(got.len, want.len);
                cr_assert_eq(memcmp(got.data, want.data, got.len), 0);
                repl_send_records(&got, firsts[a], counts[c], frames, lens[k]);
                cr_assert_eq(memcmp(got.data + want.len, want.data, want.len), 0);
                buf_deinit(&want);
                buf_deinit(&got);
            }
        }
    }
}

Test(frame, detects_corruption)
{
    uint8_t f[64];
    size_t n = frame(f, 5, 20, 'q');
    struct wal_rec rec;
    cr_assert_eq(wal_frame_parse(f, n, &rec), 1);
    cr_assert_eq(wal_frame_parse(f, 10, &rec), 0);
    cr_assert_eq(wal_frame_parse(f, n - 1, &rec), -1);
    f[30] ^= 1;
    cr_assert_eq(wal_frame_parse(f, n, &rec), -1);
}

/* Memory mode's unsealed frames: the same layout with no CRC and the LSN flag;
 * the stream parser takes them (clearing the flag) and does not check a CRC. */
Test(frame, unsealed_frames_parse_without_a_crc)
{
    uint8_t f[64];
    memset(f + WAL_REC_HDR, 'u', 20);
    wal_frame_mark(f, 20, 42, 1234);
    struct wal_rec rec;
    cr_assert_eq(wal_frame_parse(f, WAL_REC_HDR + 20, &rec), 1);
    cr_assert_not(rec.sealed);
    cr_assert_eq(rec.lsn, 42);
    cr_assert_eq(rec.ts_ms, 1234);
    cr_assert_eq(rec.len, 20);
    cr_assert_eq(wal_frame_parse(f, WAL_REC_HDR + 19, &rec), -1); /* still length-checked */
    /* sealing it in place gives the ordinary, CRC-checked frame */
    wal_frame_seal(f, 20, 42, 1234);
    cr_assert_eq(wal_frame_parse(f, WAL_REC_HDR + 20, &rec), 1);
    cr_assert(rec.sealed);
    cr_assert_eq(rec.lsn, 42);
    f[30] ^= 1;
    cr_assert_eq(wal_frame_parse(f, WAL_REC_HDR + 20, &rec), -1);
}
