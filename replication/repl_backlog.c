/* replication/repl_backlog.c: the in-memory backlog of recent records. One
 * contiguous buffer (no wrap-around): whole records are dropped from the
 * front once more than repl-backlog-size bytes are kept, and the consumed
 * prefix is compacted away when it passes that size (amortised O(1)). */
#include "replication/repl_int.h"

#include "wal/wal.h"

#include <string.h>

void
bl_init(struct backlog *bl, size_t size, uint64_t next_lsn)
{
    buf_deinit(&bl->b);
    buf_init(&bl->b);
    bl->first_lsn = bl->next_lsn = next_lsn;
    bl->base = 0;
    bl->size = size;
}

void
bl_deinit(struct backlog *bl)
{
    buf_deinit(&bl->b);
}

static size_t
front_len(const struct backlog *bl)
{
    uint32_t len;
    memcpy(&len, bl->b.data + bl->b.off, 4);
    return WAL_REC_HDR + (size_t)len;
}

void
bl_append(struct backlog *bl, const uint8_t *frame, size_t len)
{
    while (buf_unread(&bl->b) > 0 && buf_unread(&bl->b) + len > bl->size) {
        size_t n = front_len(bl);
        bl->b.off += n;
        bl->base += n;
        bl->first_lsn++;
    }
    if (bl->b.off > bl->size) {
        buf_compact(&bl->b);
    }
    buf_append(&bl->b, frame, len);
    bl->next_lsn++;
}

bool
bl_find(const struct backlog *bl, uint64_t lsn, uint64_t *pos)
{
    if (lsn < bl->first_lsn || lsn > bl->next_lsn) {
        return false;
    }
    uint64_t p = bl->base;
    for (uint64_t l = bl->first_lsn; l < lsn; l++) {
        uint32_t len;
        memcpy(&len, bl_at(bl, p), 4);
        p += WAL_REC_HDR + len;
    }
    *pos = p;
    return true;
}
