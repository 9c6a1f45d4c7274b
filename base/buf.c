/* base/buf.c */
#include "base/buf.h"

#include "base/mem.h"

#include <stdarg.h>
#include <stdio.h>

void
buf_init(struct buf *b)
{
    b->data = NULL;
    b->off = b->len = b->cap = 0;
}

void
buf_deinit(struct buf *b)
{
    rv_free(b->data);
    buf_init(b);
}

void
buf_compact(struct buf *b)
{
    if (b->off == 0) {
        return;
    }
    size_t n = b->len - b->off;
    if (n) {
        memmove(b->data, b->data + b->off, n);
    }
    b->off = 0;
    b->len = n;
}

void
buf_reserve(struct buf *b, size_t n)
{
    if (b->cap - b->len >= n) {
        return;
    }
    if (b->off && b->cap - (b->len - b->off) >= n) {
        buf_compact(b);
        return;
    }
    size_t need = b->len + n;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        cap = cap < (1u << 20) ? cap * 2 : cap + cap / 2;
    }
    if (cap < need) {
        cap = need;
    }
    b->data = rv_realloc(b->data, cap);
    b->cap = cap;
}

void
buf_shrink(struct buf *b, size_t keep)
{
    if (b->cap <= keep) {
        return;
    }
    buf_compact(b);
    if (b->len > keep) {
        return;
    }
    if (b->len == 0) {
        rv_free(b->data);
        b->data = NULL;
        b->cap = 0;
        return;
    }
    b->data = rv_realloc(b->data, keep);
    b->cap = keep;
}

void
buf_appendf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= (b->data ? b->cap - b->len : 0)) {
        buf_reserve(b, (size_t)n + 1); /* room for vsnprintf's terminating NUL */
        va_start(ap, fmt);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
    }
    b->len += (size_t)n;
}
