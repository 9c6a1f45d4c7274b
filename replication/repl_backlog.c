/* replication/repl_backlog.c: the in-memory backlog of recent records.
 *
 * Records lie in a chain of blocks (1 MB, or size/16 for a small backlog; a
 * record larger than that gets a block of its own), never straddling two, so
 * each block's bytes can go to a socket as they lie and the oldest records are
 * dropped a whole block at a time: nothing is ever moved or walked to make
 * room. Positions are absolute (bytes ever appended, blocks back to back). */
#include "replication/repl_int.h"

#include "base/bytes.h"
#include "base/mem.h"
#include "wal/wal.h"

#include <string.h>

#define BLOCK_MAX (1u << 20)
#define BLOCK_MIN (4u << 10)

static size_t
block_size(const struct backlog *bl)
{
    size_t b = bl->size / 16;
    return b < BLOCK_MIN ? BLOCK_MIN : b > BLOCK_MAX ? BLOCK_MAX : b;
}

void
bl_init(struct backlog *bl, size_t size, uint64_t next_lsn)
{
    bl_deinit(bl);
    bl->first_lsn = bl->next_lsn = next_lsn;
    bl->base = bl->end = 0;
    bl->size = size;
}

void
bl_set_size(struct backlog *bl, size_t size)
{
    if (size == bl->size) {
        return;
    }
    bl->size = size;
    /* The newest block may be far larger than the new size calls for (1 MB
     * under a 16 KB backlog): close it, so that new records go to blocks of
     * the new size and it is dropped once they hold size bytes (by the next
     * append's trim, which first saves what a replica still needs). */
    if (bl->tail != NULL && bl->tail->cap > block_size(bl)) {
        bl->tail->cap = bl->tail->len;
    }
}

void
bl_deinit(struct backlog *bl)
{
    while (bl->head) {
        struct bl_block *b = bl->head;
        bl->head = b->next;
        rv_free(b);
    }
    rv_free(bl->spare);
    bl->head = bl->tail = bl->spare = NULL;
}

/* Room for a record of len bytes at the end: a new block when the last one
 * lacks it (the spare one when it is big enough). */
static struct bl_block *
tail_for(struct backlog *bl, size_t len)
{
    struct bl_block *t = bl->tail;
    if (t != NULL && t->cap - t->len >= len) {
        return t;
    }
    size_t cap = block_size(bl);
    if (len > cap) {
        cap = len;
    }
    struct bl_block *b = bl->spare;
    if (b != NULL && b->cap == cap) {
        bl->spare = NULL;
    } else {
        b = rv_malloc(sizeof(*b) + cap);
        b->cap = cap;
    }
    b->next = NULL;
    b->jumbo = cap > block_size(bl);
    b->pos = bl->end;
    b->lsn = bl->next_lsn;
    b->len = 0;
    if (t != NULL) {
        t->next = b;
    } else {
        bl->head = b;
    }
    bl->tail = b;
    return b;
}

uint8_t *
bl_reserve(struct backlog *bl, size_t len)
{
    struct bl_block *t = tail_for(bl, len);
    return t->data + t->len;
}

void
bl_commit(struct backlog *bl, size_t len)
{
    bl->tail->len += len;
    bl->end += len;
    bl->next_lsn++;
}

void
bl_push(struct backlog *bl, const uint8_t *frame, size_t len)
{
    memcpy(bl_reserve(bl, len), frame, len);
    bl_commit(bl, len);
}

static bool
head_goes(const struct backlog *bl, const struct bl_block *h)
{
    return bl_head_goes(bl, h);
}

uint64_t
bl_trim_point(const struct backlog *bl)
{
    uint64_t upto = bl->base;
    struct backlog sim = *bl;
    for (const struct bl_block *h = bl->head; h && head_goes(&sim, h); h = h->next) {
        upto = sim.base = h->pos + h->len;
    }
    return upto;
}

void
bl_trim(struct backlog *bl)
{
    while (bl->head && head_goes(bl, bl->head)) {
        struct bl_block *h = bl->head;
        bl->head = h->next;
        bl->base = h->pos + h->len;
        bl->first_lsn = bl->head->lsn;
        if (h->cap == block_size(bl)) {
            rv_free(bl->spare);
            bl->spare = h; /* reused by the next block: no malloc per MB */
        } else {
            rv_free(h);
        }
    }
}

void
bl_append(struct backlog *bl, const uint8_t *frame, size_t len)
{
    bl_push(bl, frame, len);
    bl_trim(bl);
}

void
bl_append_run(struct backlog *bl, const uint8_t *p, size_t n)
{
    bl_push_run(bl, p, n);
    bl_trim(bl);
}

void
bl_push_run(struct backlog *bl, const uint8_t *p, size_t n)
{
    /* The same blocks as one bl_append per frame (where each frame goes
     * depends only on the tail's room), with one memcpy per block. Trimming
     * once at the end drops the same blocks too: whether the head goes
     * depends only on it, the tail and the end, and a later end only lets
     * more go. */
    while (n > 0) {
        struct bl_block *t = bl->tail;
        size_t room = t != NULL ? t->cap - t->len : 0, take = 0;
        uint64_t k = 0;
        while (take < n) {
            uint32_t len;
            memcpy(&len, p + take, 4);
            size_t sz = WAL_REC_HDR + (size_t)len;
            if (sz > room - take) {
                if (take == 0) {
                    t = tail_for(bl, sz); /* a new block for it */
                    room = t->cap - t->len;
                    continue;
                }
                break;
            }
            take += sz;
            k++;
        }
        rv_copy_stream(t->data + t->len, p, take);
        t->len += take;
        bl->end += take;
        bl->next_lsn += k;
        p += take;
        n -= take;
    }
}

const struct bl_block *
bl_block_at(const struct backlog *bl, uint64_t pos)
{
    for (const struct bl_block *b = bl->head; b; b = b->next) {
        if (pos < b->pos + b->len) {
            return pos >= b->pos ? b : NULL;
        }
    }
    return NULL;
}

bool
bl_find(const struct backlog *bl, uint64_t lsn, uint64_t *pos)
{
    if (lsn < bl->first_lsn || lsn > bl->next_lsn) {
        return false;
    }
    if (lsn == bl->next_lsn) {
        *pos = bl->end;
        return true;
    }
    const struct bl_block *b = bl->head;
    while (b->next && b->next->lsn <= lsn) {
        b = b->next;
    }
    uint64_t p = b->pos;
    for (uint64_t l = b->lsn; l < lsn; l++) {
        uint32_t len;
        memcpy(&len, b->data + (p - b->pos), 4);
        p += WAL_REC_HDR + len;
    }
    *pos = p;
    return true;
}

const uint8_t *
bl_at(const struct backlog *bl, uint64_t pos)
{
    const struct bl_block *b = bl_block_at(bl, pos);
    return b ? b->data + (pos - b->pos) : NULL;
}
