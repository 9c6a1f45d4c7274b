/* base/buf.h: a growable byte buffer with a read offset. The handle stays
 * stable when memory moves: buf_reserve() returns a status, never a new pointer.
 * Bytes [off, len) are unread; [len, cap) is free space. */
#pragma once
#include "base/varint.h"

#include <stddef.h>
#include <string.h>

struct buf {
    char *data;
    size_t off;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_deinit(struct buf *b); /* frees data; b is reusable after */
/* Ensure at least n free bytes after len (compacts first when that suffices). */
void buf_reserve(struct buf *b, size_t n);
/* Drop the consumed prefix [0, off) by moving unread bytes to the start. */
void buf_compact(struct buf *b);
/* Shrink an idle buffer back to at most keep bytes of capacity. */
void buf_shrink(struct buf *b, size_t keep);
/* Append printf-formatted text (INFO sections, metrics); never truncates. */
void buf_appendf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline size_t
buf_unread(const struct buf *b)
{
    return b->len - b->off;
}

static inline void
buf_append(struct buf *b, const void *p, size_t n)
{
    if (b->cap - b->len < n) {
        buf_reserve(b, n);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void
buf_putc(struct buf *b, char ch)
{
    if (b->cap == b->len) {
        buf_reserve(b, 1);
    }
    b->data[b->len++] = ch;
}

/* Append v as a varint (base/varint.h's format). */
static inline void
buf_put_varint(struct buf *b, uint64_t v)
{
    uint8_t t[VARINT_MAX];
    buf_append(b, t, (size_t)(varint_put(t, v) - t));
}

static inline void
buf_reset(struct buf *b)
{
    b->off = b->len = 0;
}
