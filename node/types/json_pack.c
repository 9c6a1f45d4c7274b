/* node/types/json_pack.c: packed small documents (node/types/json_pack.h). */
#include "node/types/json_pack.h"

#include <stdio.h>
#include <string.h>

enum {
    T_NULL = 0,
    T_FALSE = 1,
    T_TRUE = 2,
    T_INT = 3,    /* zigzag varint */
    T_UINT = 4,   /* 8 bytes, little endian: above INT64_MAX */
    T_DOUBLE = 5, /* 8 bytes */
    T_STR = 6,    /* varint length, bytes */
    T_ARR = 7,    /* varint content bytes, elements */
    T_OBJ = 8,    /* varint content bytes, members: varint key length, key, value */
    T_SSTR = 0x80 /* | length (< 128), bytes */
};

/* ------------------------------------------------------------ encoding */


static void
put_u64(struct buf *b, uint64_t v)
{
    char x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (char)(v >> (8 * i));
    }
    buf_append(b, x, 8);
}

static void
put_str(struct buf *b, const char *s, size_t n)
{
    if (n < 0x80) {
        buf_putc(b, (char)(T_SSTR | n));
    } else {
        buf_putc(b, T_STR);
        buf_put_varint(b, n);
    }
    buf_append(b, s, n);
}

/* Room for a tag, a varint and n more bytes without passing max. */
static bool
room(const struct buf *b, size_t base, size_t max, size_t n)
{
    return b->len - base + 10 + n <= max;
}

/* Writes j; false before out would hold more than max bytes past base, so a
 * caller's buffer of max + 16 bytes never grows. */
static bool
enc(const struct json *j, struct buf *b, size_t base, size_t max)
{
    if (!room(b, base, max, 0)) {
        return false;
    }
    switch (json_type(j)) {
    case JSON_NULL: buf_putc(b, T_NULL); return true;
    case JSON_BOOL: buf_putc(b, json_bool(j) ? T_TRUE : T_FALSE); return true;
    case JSON_INT:
        if (json_int_unsigned(j)) {
            buf_putc(b, T_UINT);
            put_u64(b, json_uint(j));
        } else {
            int64_t v = json_int(j);
            buf_putc(b, T_INT);
            buf_put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
        }
        return true;
    case JSON_DOUBLE: {
        double d = json_double(j);
        uint64_t u;
        memcpy(&u, &d, 8);
        buf_putc(b, T_DOUBLE);
        put_u64(b, u);
        return true;
    }
    case JSON_STR: {
        size_t n;
        const char *s = json_str(j, &n);
        if (!room(b, base, max, n)) {
            return false;
        }
        put_str(b, s, n);
        return true;
    }
    case JSON_ARR:
    case JSON_OBJ: break;
    }
    bool obj = json_type(j) == JSON_OBJ;
    buf_putc(b, obj ? T_OBJ : T_ARR);
    size_t at = b->len;
    buf_putc(b, 0); /* the content length's first byte; widened below */
    for (size_t i = 0; i < json_len(j); i++) {
        if (obj) {
            size_t kl;
            const char *k = json_obj_key(j, i, &kl);
            if (!room(b, base, max, kl)) {
                return false;
            }
            buf_put_varint(b, kl);
            buf_append(b, k, kl);
        }
        if (!enc(obj ? json_obj_val(j, i) : json_arr_at(j, i), b, base, max)) {
            return false;
        }
    }
    size_t content = b->len - at - 1, w = varint_len(content);
    if (w > 1) { /* O(content) once per container of 128+ bytes: small documents only */
        buf_reserve(b, w - 1);
        memmove(b->data + at + w, b->data + at + 1, content);
        b->len += w - 1;
    }
    for (size_t i = 0; i < w; i++, content >>= 7) {
        b->data[at + i] = (char)((content & 0x7f) | (i + 1 < w ? 0x80 : 0));
    }
    return b->len - base <= max;
}

bool
jpk_encode(const struct json *j, size_t max, struct buf *out)
{
    size_t base = out->len;
    if (!enc(j, out, base, max)) {
        out->len = base;
        return false;
    }
    return true;
}

/* ------------------------------------------------------------- reading */

struct rd {
    const uint8_t *p, *end;
};

static bool
get_varint(struct rd *r, uint64_t *v)
{
    return varint_get_checked(&r->p, r->end, v);
}

static bool
get_u64(struct rd *r, uint64_t *v)
{
    if (r->end - r->p < 8) {
        return false;
    }
    *v = 0;
    for (int i = 0; i < 8; i++) {
        *v |= (uint64_t)r->p[i] << (8 * i);
    }
    r->p += 8;
    return true;
}

/* Reads n bytes' view. */
static bool
get_bytes(struct rd *r, uint64_t n, const char **s)
{
    if ((uint64_t)(r->end - r->p) < n) {
        return false;
    }
    *s = (const char *)r->p;
    r->p += n;
    return true;
}

/* A string's bytes after its tag. */
static bool
get_str(struct rd *r, uint8_t tag, const char **s, uint64_t *n)
{
    if (tag & T_SSTR) {
        *n = tag & 0x7f;
    } else if (!get_varint(r, n)) {
        return false;
    }
    return get_bytes(r, *n, s);
}

/* A container's contents after its tag: r narrowed to them in *in, r past them. */
static bool
get_content(struct rd *r, struct rd *in)
{
    uint64_t n;
    const char *s;
    if (!get_varint(r, &n) || !get_bytes(r, n, &s)) {
        return false;
    }
    in->p = (const uint8_t *)s;
    in->end = in->p + n;
    return true;
}

static bool
skip(struct rd *r)
{
    if (r->p >= r->end) {
        return false;
    }
    uint8_t tag = *r->p++;
    uint64_t v;
    const char *s;
    struct rd in;
    switch (tag) {
    case T_NULL:
    case T_FALSE:
    case T_TRUE: return true;
    case T_INT: return get_varint(r, &v);
    case T_UINT:
    case T_DOUBLE: return get_u64(r, &v);
    case T_ARR:
    case T_OBJ: return get_content(r, &in);
    default: return (tag == T_STR || (tag & T_SSTR)) && get_str(r, tag, &s, &v);
    }
}

static struct json *dec(struct rd *r, int depth);

static struct json *
dec_container(struct rd *r, bool obj, int depth)
{
    struct rd in;
    if (depth > JSON_MAX_DEPTH || !get_content(r, &in)) {
        return NULL;
    }
    struct json *c = obj ? json_new_obj() : json_new_arr();
    while (in.p < in.end) {
        uint64_t kl = 0;
        const char *k = NULL;
        if (obj && (!get_varint(&in, &kl) || !get_bytes(&in, kl, &k))) {
            json_destroy(c);
            return NULL;
        }
        struct json *v = dec(&in, depth + 1);
        if (v == NULL) {
            json_destroy(c);
            return NULL;
        }
        if (obj) {
            json_obj_set_take(c, k, kl, v);
        } else {
            json_arr_insert_take(c, json_len(c), v);
        }
    }
    return c;
}

static struct json *
dec(struct rd *r, int depth)
{
    if (r->p >= r->end) {
        return NULL;
    }
    uint8_t tag = *r->p++;
    uint64_t v;
    const char *s;
    switch (tag) {
    case T_NULL: return json_new_null();
    case T_FALSE: return json_new_bool(false);
    case T_TRUE: return json_new_bool(true);
    case T_INT:
        return get_varint(r, &v) ? json_new_int((int64_t)(v >> 1) ^ -(int64_t)(v & 1)) : NULL;
    case T_UINT: return get_u64(r, &v) ? json_new_uint(v) : NULL;
    case T_DOUBLE: {
        double d;
        if (!get_u64(r, &v)) {
            return NULL;
        }
        memcpy(&d, &v, 8);
        return json_new_double(d);
    }
    case T_ARR:
    case T_OBJ: return dec_container(r, tag == T_OBJ, depth);
    default:
        if ((tag == T_STR || (tag & T_SSTR)) && get_str(r, tag, &s, &v)) {
            return json_new_str(s, v);
        }
        return NULL;
    }
}

struct json *
jpk_decode(const uint8_t *p, size_t n)
{
    struct rd r = { p, p + n };
    struct json *j = dec(&r, 0);
    if (j != NULL && r.p != r.end) {
        json_destroy(j);
        return NULL;
    }
    return j;
}

static bool
wr(struct buf *b, struct rd *r, int depth)
{
    if (r->p >= r->end) {
        return false;
    }
    uint8_t tag = *r->p++;
    uint64_t v;
    const char *s;
    char num[40];
    struct rd in;
    switch (tag) {
    case T_NULL: buf_append(b, "null", 4); return true;
    case T_FALSE: buf_append(b, "false", 5); return true;
    case T_TRUE: buf_append(b, "true", 4); return true;
    case T_INT:
        if (!get_varint(r, &v)) {
            return false;
        }
        buf_append(b, num, json_fmt_int((int64_t)(v >> 1) ^ -(int64_t)(v & 1), num));
        return true;
    case T_UINT:
        if (!get_u64(r, &v)) {
            return false;
        }
        buf_append(b, num, (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)v));
        return true;
    case T_DOUBLE: {
        double d;
        if (!get_u64(r, &v)) {
            return false;
        }
        memcpy(&d, &v, 8);
        buf_append(b, num, json_fmt_double(d, num));
        return true;
    }
    case T_ARR:
    case T_OBJ: break;
    default:
        if ((tag == T_STR || (tag & T_SSTR)) && get_str(r, tag, &s, &v)) {
            json_write_str(b, s, v);
            return true;
        }
        return false;
    }
    if (depth > JSON_MAX_DEPTH || !get_content(r, &in)) { /* the limits of dec */
        return false;
    }
    buf_putc(b, tag == T_OBJ ? '{' : '[');
    for (bool first = true; in.p < in.end; first = false) {
        if (!first) {
            buf_putc(b, ',');
        }
        if (tag == T_OBJ) {
            uint64_t kl;
            const char *k;
            if (!get_varint(&in, &kl) || !get_bytes(&in, kl, &k)) {
                return false;
            }
            json_write_str(b, k, kl);
            buf_putc(b, ':');
        }
        if (!wr(b, &in, depth + 1)) {
            return false;
        }
    }
    buf_putc(b, tag == T_OBJ ? '}' : ']');
    return true;
}

bool
jpk_write(struct buf *b, const uint8_t *p, size_t n)
{
    struct rd r = { p, p + n };
    size_t at = b->len;
    if (!wr(b, &r, 0) || r.p != r.end) {
        b->len = at;
        return false;
    }
    return true;
}

bool
jpk_member(const uint8_t **p, size_t *n, const char *k, size_t klen)
{
    struct rd r = { *p, *p + *n }, in;
    if (*n == 0 || *r.p++ != T_OBJ || !get_content(&r, &in)) {
        return false;
    }
    while (in.p < in.end) {
        uint64_t kl;
        const char *mk;
        if (!get_varint(&in, &kl) || !get_bytes(&in, kl, &mk)) {
            return false;
        }
        const uint8_t *v = in.p;
        if (!skip(&in)) {
            return false;
        }
        if (kl == klen && memcmp(mk, k, klen) == 0) {
            *p = v;
            *n = (size_t)(in.p - v);
            return true;
        }
    }
    return false;
}
