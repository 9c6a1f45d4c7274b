/* The replication backlog: whole records dropped from the front past its
 * size, LSN -> position lookups, compaction keeping positions absolute. */
#include "replication/repl_int.h"
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

Test(backlog, keeps_recent_records_and_finds_them)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 1000, 1);
    uint8_t f[256];
    for (uint64_t lsn = 1; lsn <= 100; lsn++) {
        size_t n = frame(f, lsn, 50 + lsn % 7, (char)('a' + lsn % 26));
        bl_append(&bl, f, n);
        cr_assert_leq(bl_end(&bl) - bl.base, 1000 + n);
    }
    cr_assert_eq(bl.next_lsn, 101);
    cr_assert_gt(bl.first_lsn, 1);
    uint64_t pos;
    cr_assert_not(bl_find(&bl, bl.first_lsn - 1, &pos));
    cr_assert(bl_find(&bl, 101, &pos));
    cr_assert_eq(pos, bl_end(&bl));
    for (uint64_t lsn = bl.first_lsn; lsn <= 100; lsn++) {
        cr_assert(bl_find(&bl, lsn, &pos));
        struct wal_rec rec;
        cr_assert_eq(wal_frame_parse(bl_at(&bl, pos), (size_t)(bl_end(&bl) - pos), &rec), 1);
        cr_assert_eq(rec.lsn, lsn);
        cr_assert_eq(rec.ts_ms, 1000 + (int64_t)lsn);
        cr_assert_eq(rec.payload[0], (uint8_t)('a' + lsn % 26));
    }
    bl_deinit(&bl);
}

Test(backlog, a_record_larger_than_the_backlog_is_kept_alone)
{
    struct backlog bl;
    memset(&bl, 0, sizeof(bl));
    bl_init(&bl, 100, 7);
    static uint8_t f[4096];
    bl_append(&bl, f, frame(f, 7, 10, 'x'));
    bl_append(&bl, f, frame(f, 8, 2000, 'y'));
    cr_assert_eq(bl.first_lsn, 8);
    uint64_t pos;
    cr_assert(bl_find(&bl, 8, &pos));
    bl_append(&bl, f, frame(f, 9, 10, 'z'));
    cr_assert_eq(bl.first_lsn, 9);
    bl_deinit(&bl);
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
