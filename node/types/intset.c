/* node/types/intset.c: sorted integer array, see intset.h.
 *
 * Layout: an 8-byte header (width, count) followed by count little-endian
 * integers of `width` bytes in ascending order. Members are read with memcpy
 * of the native width (the server targets little-endian machines only). */
#include "node/types/intset.h"

#include "base/mem.h"

#include <string.h>

struct intset {
    uint32_t width; /* bytes per member: 2, 4 or 8 */
    uint32_t len;
    uint8_t d[];
};

static inline unsigned
width_for(int64_t v)
{
    if (v >= INT16_MIN && v <= INT16_MAX) {
        return 2;
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
        return 4;
    }
    return 8;
}

static inline int64_t
get_w(const uint8_t *d, unsigned w, size_t i)
{
    if (w == 2) {
        int16_t x;
        memcpy(&x, d + i * 2, 2);
        return x;
    }
    if (w == 4) {
        int32_t x;
        memcpy(&x, d + i * 4, 4);
        return x;
    }
    {
        int64_t x;
        memcpy(&x, d + i * 8, 8);
        return x;
    }
}

static inline void
set_w(uint8_t *d, unsigned w, size_t i, int64_t v)
{
    if (w == 2) {
        int16_t x = (int16_t)v;
        memcpy(d + i * 2, &x, 2);
    } else if (w == 4) {
        int32_t x = (int32_t)v;
        memcpy(d + i * 4, &x, 4);
    } else {
        memcpy(d + i * 8, &v, 8);
    }
}

struct intset *
intset_create(void)
{
    struct intset *is = rv_malloc(sizeof(*is));
    is->width = 2;
    is->len = 0;
    return is;
}

void
intset_destroy(struct intset *is)
{
    rv_free(is);
}

size_t
intset_bytes(const struct intset *is)
{
    return sizeof(*is) + (size_t)is->len * is->width;
}

struct intset *
intset_dup(const struct intset *is)
{
    struct intset *c = rv_malloc(intset_bytes(is));
    memcpy(c, is, intset_bytes(is));
    return c;
}

size_t
intset_len(const struct intset *is)
{
    return is->len;
}

unsigned
intset_width(const struct intset *is)
{
    return is->width;
}

int64_t
intset_get(const struct intset *is, size_t i)
{
    return get_w(is->d, is->width, i);
}

/* Position of v, or where it would be inserted; *found tells which. */
static size_t
search(const struct intset *is, int64_t v, bool *found)
{
    size_t lo = 0, hi = is->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t x = get_w(is->d, is->width, mid);
        if (x == v) {
            *found = true;
            return mid;
        }
        if (x < v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

bool
intset_find(const struct intset *is, int64_t v)
{
    bool found;
    if (width_for(v) > is->width) {
        return false;
    }
    search(is, v, &found);
    return found;
}

bool
intset_add(struct intset **isp, int64_t v)
{
    struct intset *is = *isp;
    unsigned w = width_for(v);
    bool found;
    size_t pos;

    if (w > is->width) {
        /* Upgrade: v is below or above every member, so it goes at an end.
         * Widen from the back so nothing is overwritten before it is read. */
        unsigned ow = is->width;
        size_t n = is->len;
        is = rv_realloc(is, sizeof(*is) + (n + 1) * w);
        for (size_t i = n; i-- > 0;) {
            set_w(is->d, w, i + (v < 0), get_w(is->d, ow, i));
        }
        is->width = w;
        set_w(is->d, w, v < 0 ? 0 : n, v);
        is->len++;
        *isp = is;
        return true;
    }
    pos = search(is, v, &found);
    if (found) {
        return false;
    }
    is = rv_realloc(is, sizeof(*is) + ((size_t)is->len + 1) * is->width);
    memmove(is->d + (pos + 1) * is->width, is->d + pos * is->width,
            ((size_t)is->len - pos) * is->width);
    set_w(is->d, is->width, pos, v);
    is->len++;
    *isp = is;
    return true;
}

bool
intset_remove(struct intset **isp, int64_t v)
{
    struct intset *is = *isp;
    bool found;
    size_t pos;

    if (width_for(v) > is->width) {
        return false;
    }
    pos = search(is, v, &found);
    if (!found) {
        return false;
    }
    memmove(is->d + pos * is->width, is->d + (pos + 1) * is->width,
            ((size_t)is->len - pos - 1) * is->width);
    is->len--;
    *isp = rv_realloc(is, intset_bytes(is));
    return true;
}

static size_t
dec_len(int64_t v)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t n = v < 0 ? 2 : 1;
    while (u >= 10) {
        u /= 10;
        n++;
    }
    return n;
}

size_t
intset_max_strlen(const struct intset *is)
{
    size_t a, b;
    if (is->len == 0) {
        return 0;
    }
    /* The extremes have the longest decimal forms. */
    a = dec_len(intset_get(is, 0));
    b = dec_len(intset_get(is, is->len - 1));
    return a > b ? a : b;
}
