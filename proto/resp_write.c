/* proto/resp_write.c: RESP2/RESP3 reply encodings appended to a struct buf.
 * Every function reserves its worst case once and writes in place. */
#include "proto/resp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RESP_HDR_MAX 24 /* type byte + 20 digits + CRLF, rounded up */

static const char resp_d2[201] = "00010203040506070809"
                                 "10111213141516171819"
                                 "20212223242526272829"
                                 "30313233343536373839"
                                 "40414243444546474849"
                                 "50515253545556575859"
                                 "60616263646566676869"
                                 "70717273747576777879"
                                 "80818283848586878889"
                                 "90919293949596979899";

static inline unsigned
resp_u64_digits(uint64_t v)
{
    unsigned n = 1;

    for (;;) {
        if (v < 10) {
            return n;
        }
        if (v < 100) {
            return n + 1;
        }
        if (v < 1000) {
            return n + 2;
        }
        if (v < 10000) {
            return n + 3;
        }
        v /= 10000;
        n += 4;
    }
}

/* Decimal digits of v at out (no NUL); returns their count. */
static inline size_t
resp_u2s(char *out, uint64_t v)
{
    unsigned n = resp_u64_digits(v);
    char *p = out + n;

    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = resp_d2[i + 1];
        *--p = resp_d2[i];
    }
    if (v >= 10) {
        unsigned i = (unsigned)v * 2;
        *--p = resp_d2[i + 1];
        *--p = resp_d2[i];
    } else {
        *--p = (char)('0' + v);
    }
    return n;
}

static inline size_t
resp_i2s(char *out, int64_t v)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + resp_u2s(out + 1, 0 - (uint64_t)v);
    }
    return resp_u2s(out, (uint64_t)v);
}

size_t
resp_ll2str(char *out, int64_t v)
{
    size_t n = resp_i2s(out, v);
    out[n] = '\0';
    return n;
}

static inline void
resp_room(struct buf *b, size_t n)
{
    if (b->cap - b->len < n) {
        buf_reserve(b, n);
    }
}

/* "<type><n>\r\n" at p; returns its length. */
static inline size_t
resp_hdr_at(char *p, char type, uint64_t n)
{
    size_t k;

    p[0] = type;
    if (n < 10) {
        p[1] = (char)('0' + n);
        k = 2;
    } else {
        k = 1 + resp_u2s(p + 1, n);
    }
    p[k] = '\r';
    p[k + 1] = '\n';
    return k + 2;
}

static inline void
resp_hdr(struct buf *b, char type, uint64_t n)
{
    resp_room(b, RESP_HDR_MAX);
    b->len += resp_hdr_at(b->data + b->len, type, n);
}

/* "<type><s>\r\n" */
static inline void
resp_line(struct buf *b, char type, const char *s, size_t n)
{
    resp_room(b, n + 3);
    char *p = b->data + b->len;
    p[0] = type;
    if (n) {
        memcpy(p + 1, s, n);
    }
    p[n + 1] = '\r';
    p[n + 2] = '\n';
    b->len += n + 3;
}

void
resp_w_simple(struct buf *b, const char *s, size_t n)
{
    resp_line(b, '+', s, n);
}

void
resp_w_ok(struct buf *b)
{
    buf_append(b, "+OK\r\n", 5);
}

void
resp_w_error(struct buf *b, const char *s, size_t n)
{
    resp_line(b, '-', s, n);
}

void
resp_w_int(struct buf *b, int64_t v)
{
    resp_room(b, RESP_HDR_MAX);
    char *p = b->data + b->len;
    p[0] = ':';
    size_t k = 1 + resp_i2s(p + 1, v);
    p[k] = '\r';
    p[k + 1] = '\n';
    b->len += k + 2;
}

void
resp_w_bulk(struct buf *b, const void *s, size_t n)
{
    resp_room(b, RESP_HDR_MAX + n + 2);
    char *p = b->data + b->len;
    size_t k = resp_hdr_at(p, '$', n);
    if (n) {
        memcpy(p + k, s, n);
    }
    p[k + n] = '\r';
    p[k + n + 1] = '\n';
    b->len += k + n + 2;
}

void
resp_w_bulk_cstr(struct buf *b, const char *s)
{
    resp_w_bulk(b, s, strlen(s));
}

void
resp_w_bulk_int(struct buf *b, int64_t v)
{
    char d[24];
    size_t n = resp_i2s(d, v);

    resp_room(b, n + 7); /* '$', up to 2 length digits, CRLF, the digits, CRLF */
    char *p = b->data + b->len;
    p[0] = '$';
    if (n < 10) {
        p[1] = (char)('0' + n);
        p += 2;
    } else {
        p[1] = (char)('0' + n / 10);
        p[2] = (char)('0' + n % 10);
        p += 3;
    }
    p[0] = '\r';
    p[1] = '\n';
    memcpy(p + 2, d, n);
    p[n + 2] = '\r';
    p[n + 3] = '\n';
    b->len = (size_t)(p + n + 4 - b->data);
}

/* Redis's human-friendly long double text (INCRBYFLOAT): "%.17Lf", trailing
 * zeros and then a trailing '.' removed, "-0" as "0"; inf/-inf/nan spelled out. */
size_t
resp_fmt_ldouble(char *out, size_t cap, long double v)
{
    int n;

    if (isinf(v)) {
        n = v > 0 ? 3 : 4;
        memcpy(out, v > 0 ? "inf" : "-inf", (size_t)n);
        return (size_t)n;
    }
    if (isnan(v)) {
        memcpy(out, "nan", 3);
        return 3;
    }
    n = snprintf(out, cap, "%.17Lf", v);
    if (n < 0 || (size_t)n >= cap) {
        n = snprintf(out, cap, "%.17Lg", v); /* cannot happen with RESP_LD_MAX */
        return n < 0 ? 0 : (size_t)n;
    }
    if (memchr(out, '.', (size_t)n)) {
        while (out[n - 1] == '0') {
            n--;
        }
        if (out[n - 1] == '.') {
            n--;
        }
    }
    if (n == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        n = 1;
    }
    return (size_t)n;
}

void
resp_w_bulk_double(struct buf *b, long double v)
{
    char tmp[RESP_LD_MAX];
    size_t n = resp_fmt_ldouble(tmp, sizeof(tmp), v);

    resp_w_bulk(b, tmp, n);
}

/* "%.17g" with inf/-inf/nan spelled out (libc may write "-nan"). */
static size_t
resp_fmt_double(char *out, size_t cap, double v)
{
    if (isinf(v)) {
        size_t n = v > 0 ? 3 : 4;
        memcpy(out, v > 0 ? "inf" : "-inf", n);
        return n;
    }
    if (isnan(v)) {
        memcpy(out, "nan", 3);
        return 3;
    }
    int n = snprintf(out, cap, "%.17g", v);
    return n < 0 ? 0 : (size_t)n;
}

void
resp_w_double(struct buf *b, int proto, double v)
{
    char tmp[40];
    size_t n = resp_fmt_double(tmp, sizeof(tmp), v);

    if (proto >= 3) {
        resp_line(b, ',', tmp, n);
    } else {
        resp_w_bulk(b, tmp, n);
    }
}

void
resp_w_null(struct buf *b, int proto)
{
    if (proto >= 3) {
        buf_append(b, "_\r\n", 3);
    } else {
        buf_append(b, "$-1\r\n", 5);
    }
}

void
resp_w_null_array(struct buf *b, int proto)
{
    if (proto >= 3) {
        buf_append(b, "_\r\n", 3);
    } else {
        buf_append(b, "*-1\r\n", 5);
    }
}

void
resp_w_array(struct buf *b, size_t n)
{
    resp_hdr(b, '*', n);
}

void
resp_w_map(struct buf *b, int proto, size_t npairs)
{
    if (proto >= 3) {
        resp_hdr(b, '%', npairs);
    } else {
        resp_hdr(b, '*', (uint64_t)npairs * 2);
    }
}

void
resp_w_set(struct buf *b, int proto, size_t n)
{
    resp_hdr(b, proto >= 3 ? '~' : '*', n);
}

void
resp_w_push(struct buf *b, int proto, size_t n)
{
    resp_hdr(b, proto >= 3 ? '>' : '*', n);
}

void
resp_w_bool(struct buf *b, int proto, bool v)
{
    if (proto >= 3) {
        buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
    } else {
        buf_append(b, v ? ":1\r\n" : ":0\r\n", 4);
    }
}

void
resp_w_verbatim(struct buf *b, int proto, const char *fmt3, const void *s, size_t n)
{
    if (proto < 3) {
        resp_w_bulk(b, s, n);
        return;
    }
    resp_room(b, RESP_HDR_MAX + 4 + n + 2);
    char *p = b->data + b->len;
    size_t k = resp_hdr_at(p, '=', (uint64_t)n + 4);
    memcpy(p + k, fmt3, 3);
    p[k + 3] = ':';
    k += 4;
    if (n) {
        memcpy(p + k, s, n);
    }
    p[k + n] = '\r';
    p[k + n + 1] = '\n';
    b->len += k + n + 2;
}

size_t
resp_w_defer_len(struct buf *b)
{
    return b->len - b->off;
}

void
resp_w_patch_len(struct buf *b, size_t at, char type, size_t n)
{
    char h[RESP_HDR_MAX];
    size_t k = resp_hdr_at(h, type, n);

    resp_room(b, k); /* may compact: `at` is relative to b->off, so still right */
    char *p = b->data + b->off + at;
    memmove(p + k, p, b->len - b->off - at);
    memcpy(p, h, k);
    b->len += k;
}
