/* wal/frame.c: record framing outside a segment writer: replication builds
 * records without a WAL (durability memory), ships them and parses them on
 * the replica. Same layout and CRC as wal.c (see wal.h). */
#include "wal/wal.h"

#include "wal/crc32c.h"

#include <string.h>

void
wal_frame_seal(uint8_t *h, size_t len, uint64_t lsn, int64_t ts_ms)
{
    uint32_t l32 = (uint32_t)len;
    uint64_t ts = (uint64_t)ts_ms;
    memcpy(h, &l32, 4);
    memcpy(h + 8, &lsn, 8);
    memcpy(h + 16, &ts, 8);
    uint32_t crc = wal_crc32c(0, h + 8, 16 + len);
    memcpy(h + 4, &crc, 4);
}

void
wal_frame_mark(uint8_t *h, size_t len, uint64_t lsn, int64_t ts_ms)
{
    uint32_t l32 = (uint32_t)len, crc = 0;
    uint64_t l = lsn | WAL_LSN_UNSEALED, ts = (uint64_t)ts_ms;
    memcpy(h, &l32, 4);
    memcpy(h + 4, &crc, 4);
    memcpy(h + 8, &l, 8);
    memcpy(h + 16, &ts, 8);
}

int
wal_frame_parse(const uint8_t *p, size_t avail, struct wal_rec *rec)
{
    if (avail < WAL_REC_HDR) {
        return 0;
    }
    uint32_t len, crc;
    uint64_t lsn, ts;
    memcpy(&len, p, 4);
    memcpy(&crc, p + 4, 4);
    memcpy(&lsn, p + 8, 8);
    memcpy(&ts, p + 16, 8);
    len &= ~WAL_LEN_BARRIER; /* a WAL file's flag, not part of the length */
    if (avail - WAL_REC_HDR < len) {
        return -1;
    }
    rec->sealed = !(lsn & WAL_LSN_UNSEALED);
    if (rec->sealed && wal_crc32c(0, p + 8, 16 + (size_t)len) != crc) {
        return -1;
    }
    rec->lsn = lsn & ~WAL_LSN_UNSEALED;
    rec->ts_ms = (int64_t)ts;
    rec->payload = p + WAL_REC_HDR;
    rec->len = len;
    return 1;
}

void
wal_frame_copy(struct buf *out, const struct wal_rec *rec)
{
    size_t at = out->len;
    buf_append(out, rec->payload - WAL_REC_HDR, WAL_REC_HDR + rec->len);
    uint8_t *h = (uint8_t *)out->data + at;
    uint32_t l32 = (uint32_t)rec->len;
    memcpy(h, &l32, 4); /* without this file's sync barrier */
}
