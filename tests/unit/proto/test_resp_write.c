/* tests/unit/proto/test_resp_write.c: RESP reply writer. */
#include "proto/resp.h"

#include <criterion/criterion.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Runs `stmt` on a fresh buffer and compares the bytes with the literal want. */
#define EXPECT(want, stmt)                                                                         \
    do {                                                                                           \
        struct buf b;                                                                              \
        buf_init(&b);                                                                              \
        stmt;                                                                                      \
        cr_assert_eq(b.len, sizeof(want) - 1, "%s: got '%.*s' want '%s'", #stmt, (int)b.len,       \
                     b.data, want);                                                                \
        cr_assert(memcmp(b.data, want, b.len) == 0, "%s: got '%.*s' want '%s'", #stmt, (int)b.len, \
                  b.data, want);                                                                   \
        buf_deinit(&b);                                                                            \
    } while (0)

Test(resp_write, simple_error_ok)
{
    EXPECT("+OK\r\n", resp_w_ok(&b));
    EXPECT("+PONG\r\n", resp_w_simple(&b, "PONG", 4));
    EXPECT("+\r\n", resp_w_simple(&b, "", 0));
    EXPECT("-ERR syntax error\r\n", resp_w_error(&b, "ERR syntax error", 16));
    EXPECT("-\r\n", resp_w_error(&b, NULL, 0));
}

Test(resp_write, integers)
{
    EXPECT(":0\r\n", resp_w_int(&b, 0));
    EXPECT(":7\r\n", resp_w_int(&b, 7));
    EXPECT(":-1\r\n", resp_w_int(&b, -1));
    EXPECT(":10\r\n", resp_w_int(&b, 10));
    EXPECT(":12345\r\n", resp_w_int(&b, 12345));
    EXPECT(":9223372036854775807\r\n", resp_w_int(&b, INT64_MAX));
    EXPECT(":-9223372036854775808\r\n", resp_w_int(&b, INT64_MIN));
    EXPECT("$1\r\n0\r\n", resp_w_bulk_int(&b, 0));
    EXPECT("$2\r\n-5\r\n", resp_w_bulk_int(&b, -5));
    EXPECT("$9\r\n123456789\r\n", resp_w_bulk_int(&b, 123456789));
    EXPECT("$10\r\n1234567890\r\n", resp_w_bulk_int(&b, 1234567890));
    EXPECT("$19\r\n9223372036854775807\r\n", resp_w_bulk_int(&b, INT64_MAX));
    EXPECT("$20\r\n-9223372036854775808\r\n", resp_w_bulk_int(&b, INT64_MIN));
}

Test(resp_write, ll2str_matches_printf)
{
    char got[21], want[32];
    int64_t vals[] = { 0,
                       1,
                       -1,
                       9,
                       10,
                       11,
                       99,
                       100,
                       101,
                       999,
                       1000,
                       9999,
                       10000,
                       99999,
                       100000,
                       4294967295LL,
                       4294967296LL,
                       INT64_MAX,
                       INT64_MIN,
                       INT64_MIN + 1,
                       -10,
                       -99,
                       -100,
                       1000000000000000000LL,
                       999999999999999999LL };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        size_t n = resp_ll2str(got, vals[i]);
        snprintf(want, sizeof(want), "%" PRId64, vals[i]);
        cr_assert_str_eq(got, want);
        cr_assert_eq(n, strlen(want));
    }
    /* every power of ten and its neighbours, both signs */
    int64_t p = 1;
    for (int e = 0; e <= 18; e++, p = e <= 18 ? p * 10 : p) {
        for (int64_t d = -1; d <= 1; d++) {
            for (int s = -1; s <= 1; s += 2) {
                int64_t v = s * (p + d);
                size_t n = resp_ll2str(got, v);
                snprintf(want, sizeof(want), "%" PRId64, v);
                cr_assert_str_eq(got, want);
                cr_assert_eq(n, strlen(want));
            }
        }
    }
    /* a pseudo-random sweep */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x >> (i % 64));
        if (i & 1) {
            v = -v;
        }
        resp_ll2str(got, v);
        snprintf(want, sizeof(want), "%" PRId64, v);
        cr_assert_str_eq(got, want);
    }
}

Test(resp_write, bulks)
{
    EXPECT("$3\r\nfoo\r\n", resp_w_bulk(&b, "foo", 3));
    EXPECT("$0\r\n\r\n", resp_w_bulk(&b, "", 0));
    EXPECT("$0\r\n\r\n", resp_w_bulk(&b, NULL, 0));
    EXPECT("$4\r\na\r\n\0\r\n", resp_w_bulk(&b, "a\r\n\0", 4));
    EXPECT("$5\r\nhello\r\n", resp_w_bulk_cstr(&b, "hello"));
    EXPECT("$0\r\n\r\n", resp_w_bulk_cstr(&b, ""));
}

Test(resp_write, big_bulk)
{
    struct buf b;
    size_t n = 1000000;
    char *v = malloc(n);
    memset(v, 'q', n);
    buf_init(&b);
    resp_w_int(&b, 1);
    resp_w_bulk(&b, v, n);
    cr_assert_eq(b.len, 4 + 10 + n + 2);
    cr_assert(memcmp(b.data + 4, "$1000000\r\n", 10) == 0);
    cr_assert(memcmp(b.data + 14, v, n) == 0);
    cr_assert(memcmp(b.data + 14 + n, "\r\n", 2) == 0);
    buf_deinit(&b);
    free(v);
}

Test(resp_write, nulls_and_aggregates)
{
    EXPECT("$-1\r\n", resp_w_null(&b, 2));
    EXPECT("_\r\n", resp_w_null(&b, 3));
    EXPECT("*-1\r\n", resp_w_null_array(&b, 2));
    EXPECT("_\r\n", resp_w_null_array(&b, 3));
    EXPECT("*0\r\n", resp_w_array(&b, 0));
    EXPECT("*3\r\n", resp_w_array(&b, 3));
    EXPECT("*1048576\r\n", resp_w_array(&b, 1048576));
    EXPECT("*4\r\n", resp_w_map(&b, 2, 2));
    EXPECT("%2\r\n", resp_w_map(&b, 3, 2));
    EXPECT("*0\r\n", resp_w_map(&b, 2, 0));
    EXPECT("%0\r\n", resp_w_map(&b, 3, 0));
    EXPECT("*12\r\n", resp_w_set(&b, 2, 12));
    EXPECT("~12\r\n", resp_w_set(&b, 3, 12));
    EXPECT("*3\r\n", resp_w_push(&b, 2, 3));
    EXPECT(">3\r\n", resp_w_push(&b, 3, 3));
    EXPECT(":1\r\n", resp_w_bool(&b, 2, true));
    EXPECT(":0\r\n", resp_w_bool(&b, 2, false));
    EXPECT("#t\r\n", resp_w_bool(&b, 3, true));
    EXPECT("#f\r\n", resp_w_bool(&b, 3, false));
}

Test(resp_write, doubles)
{
    EXPECT(",1.5\r\n", resp_w_double(&b, 3, 1.5));
    EXPECT("$3\r\n1.5\r\n", resp_w_double(&b, 2, 1.5));
    EXPECT(",0\r\n", resp_w_double(&b, 3, 0.0));
    EXPECT(",-0\r\n", resp_w_double(&b, 3, -0.0));
    EXPECT(",3\r\n", resp_w_double(&b, 3, 3.0));
    EXPECT(",0.10000000000000001\r\n", resp_w_double(&b, 3, 0.1));
    EXPECT("$19\r\n0.10000000000000001\r\n", resp_w_double(&b, 2, 0.1));
    EXPECT(",1.0000000000000001e+300\r\n", resp_w_double(&b, 3, 1e300));
    EXPECT(",-1.2345678901234568e-300\r\n", resp_w_double(&b, 3, -1.2345678901234567e-300));
    EXPECT(",inf\r\n", resp_w_double(&b, 3, INFINITY));
    EXPECT(",-inf\r\n", resp_w_double(&b, 3, -INFINITY));
    EXPECT(",nan\r\n", resp_w_double(&b, 3, NAN));
    EXPECT(",nan\r\n", resp_w_double(&b, 3, -NAN));
    EXPECT("$3\r\ninf\r\n", resp_w_double(&b, 2, INFINITY));
    EXPECT("$4\r\n-inf\r\n", resp_w_double(&b, 2, -INFINITY));
    EXPECT("$3\r\nnan\r\n", resp_w_double(&b, 2, NAN));
    EXPECT(",1.7976931348623157e+308\r\n", resp_w_double(&b, 3, DBL_MAX));
}

Test(resp_write, bulk_double_like_incrbyfloat)
{
    EXPECT("$4\r\n10.5\r\n", resp_w_bulk_double(&b, 10.5L));
    EXPECT("$1\r\n3\r\n", resp_w_bulk_double(&b, 3.0L));
    EXPECT("$1\r\n0\r\n", resp_w_bulk_double(&b, 0.0L));
    EXPECT("$1\r\n0\r\n", resp_w_bulk_double(&b, -0.0L));
    EXPECT("$1\r\n0\r\n", resp_w_bulk_double(&b, -1e-30L));
    EXPECT("$3\r\n0.1\r\n", resp_w_bulk_double(&b, 0.1L));
    EXPECT("$4\r\n-1.5\r\n", resp_w_bulk_double(&b, -1.5L));
    EXPECT("$4\r\n5000\r\n", resp_w_bulk_double(&b, 5.0e3L));
    EXPECT("$21\r\n100000000000000000000\r\n", resp_w_bulk_double(&b, 1e20L));
    EXPECT("$19\r\n0.00000000000000001\r\n", resp_w_bulk_double(&b, 1e-17L));
    EXPECT("$1\r\n0\r\n", resp_w_bulk_double(&b, 1e-18L));
    EXPECT("$3\r\ninf\r\n", resp_w_bulk_double(&b, (long double)INFINITY));
    EXPECT("$4\r\n-inf\r\n", resp_w_bulk_double(&b, -(long double)INFINITY));
    EXPECT("$3\r\nnan\r\n", resp_w_bulk_double(&b, (long double)NAN));
    /* the redis test suite's INCRBYFLOAT: 10.5 + 0.1 (long double arithmetic) */
    EXPECT("$4\r\n10.6\r\n", resp_w_bulk_double(&b, 10.5L + 0.1L));
    EXPECT("$11\r\n17179869184\r\n", resp_w_bulk_double(&b, 17179869184.0L));
    EXPECT("$19\r\n1.23456789012345679\r\n", resp_w_bulk_double(&b, 1.23456789012345679L));
}

Test(resp_write, bulk_double_huge)
{
    /* LDBL_MAX is written in full (no exponent), like Redis's human mode. */
    struct buf b;
    char want[6000];
    buf_init(&b);
    resp_w_bulk_double(&b, LDBL_MAX);
    int n = snprintf(want, sizeof(want), "%.0Lf", LDBL_MAX);
    char hdr[16];
    int h = snprintf(hdr, sizeof(hdr), "$%d\r\n", n);
    cr_assert_eq(b.len, (size_t)(h + n + 2));
    cr_assert(memcmp(b.data, hdr, (size_t)h) == 0);
    cr_assert(memcmp(b.data + h, want, (size_t)n) == 0);
    buf_deinit(&b);
}

Test(resp_write, verbatim)
{
    EXPECT("=15\r\ntxt:Some string\r\n", resp_w_verbatim(&b, 3, "txt", "Some string", 11));
    EXPECT("=4\r\nmkd:\r\n", resp_w_verbatim(&b, 3, "mkd", "", 0));
    EXPECT("$11\r\nSome string\r\n", resp_w_verbatim(&b, 2, "txt", "Some string", 11));
    EXPECT("=8\r\ntxt:a\r\nb\r\n", resp_w_verbatim(&b, 3, "txt", "a\r\nb", 4));
}

Test(resp_write, defer_and_patch)
{
    struct buf b;

    buf_init(&b);
    resp_w_ok(&b);
    size_t at = resp_w_defer_len(&b);
    cr_assert_eq(at, 5);
    resp_w_bulk(&b, "a", 1);
    resp_w_bulk(&b, "b", 1);
    resp_w_patch_len(&b, at, '*', 2);
    resp_w_int(&b, 1);
    const char want[] = "+OK\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n:1\r\n";
    cr_assert_eq(b.len, sizeof(want) - 1, "got '%.*s'", (int)b.len, b.data);
    cr_assert(memcmp(b.data, want, b.len) == 0);

    /* nothing written in between; empty and big counts */
    buf_reset(&b);
    at = resp_w_defer_len(&b);
    resp_w_patch_len(&b, at, '%', 0);
    at = resp_w_defer_len(&b);
    resp_w_patch_len(&b, at, '~', 1234567);
    cr_assert_eq(b.len, 14);
    cr_assert(memcmp(b.data, "%0\r\n~1234567\r\n", 14) == 0);

    /* nested deferrals, inner first */
    buf_reset(&b);
    size_t outer = resp_w_defer_len(&b);
    size_t inner = resp_w_defer_len(&b);
    resp_w_int(&b, 5);
    resp_w_patch_len(&b, inner, '*', 1);
    resp_w_patch_len(&b, outer, '*', 1);
    cr_assert_eq(b.len, 12);
    cr_assert(memcmp(b.data, "*1\r\n*1\r\n:5\r\n", 12) == 0);
    buf_deinit(&b);
}

Test(resp_write, defer_survives_compaction)
{
    struct buf b;

    buf_init(&b);
    buf_reserve(&b, 64);
    size_t cap = b.cap;
    /* 40 bytes already sent (off), then a deferred reply */
    for (int i = 0; i < 10; i++) {
        resp_w_int(&b, i); /* 4 bytes each */
    }
    b.off = 40;
    size_t at = resp_w_defer_len(&b);
    cr_assert_eq(at, 0);
    /* appending enough to need compaction (but not growth) */
    char fill[200];
    memset(fill, 'z', sizeof(fill));
    cr_assert_eq(cap, 256);
    resp_w_bulk(&b, fill, sizeof(fill));
    cr_assert_eq(b.off, 0, "compacted");
    cr_assert_eq(b.cap, cap, "not grown");
    resp_w_patch_len(&b, at, '*', 1);
    cr_assert(memcmp(b.data + b.off, "*1\r\n$200\r\nzz", 12) == 0, "got '%.*s'",
              (int)(b.len - b.off), b.data + b.off);
    buf_deinit(&b);
}

/* A bulk integer of 10 digits or more needs 7 bytes besides its digits: one
 * was missing when the buffer's room was exactly digits + 6 (a 13-digit unix
 * ms time written one byte past the buffer, found by ASan). */
Test(resp_write, bulk_int_fills_the_room_exactly)
{
    for (size_t digits = 1; digits <= 19; digits++) {
        int64_t v = 1;
        for (size_t i = 1; i < digits; i++) {
            v *= 10;
        }
        for (size_t slack = 0; slack < 3; slack++) {
            struct buf b;
            buf_init(&b);
            buf_reserve(&b, 1);
            size_t fill = b.cap - (digits + 6 + slack);
            for (size_t i = 0; i < fill; i++) {
                buf_putc(&b, 'x');
            }
            resp_w_bulk_int(&b, v);
            cr_assert_leq(b.len, b.cap, "%zu digits, %zu slack: len %zu > cap %zu", digits, slack,
                          b.len, b.cap);
            buf_deinit(&b);
        }
    }
}

Test(resp_write, append_after_existing)
{
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < 1000; i++) {
        resp_w_int(&b, i);
        resp_w_bulk_int(&b, i);
        resp_w_double(&b, 3, i + 0.5);
        resp_w_bulk_double(&b, i + 0.25L);
    }
    size_t off = 0;
    for (int i = 0; i < 1000; i++) {
        char want[128];
        int d = snprintf(want, sizeof(want), "%d", i);
        char dd[32], ld[32];
        int dn = snprintf(dd, sizeof(dd), "%.17g", i + 0.5);
        int ln = snprintf(ld, sizeof(ld), "%d.25", i);
        int n = snprintf(want, sizeof(want), ":%d\r\n$%d\r\n%d\r\n,%s\r\n$%d\r\n%s\r\n", i, d, i,
                         dd, ln, ld);
        (void)dn;
        cr_assert(memcmp(b.data + off, want, (size_t)n) == 0, "i=%d got '%.*s' want '%s'", i, n,
                  b.data + off, want);
        off += (size_t)n;
    }
    cr_assert_eq(off, b.len);
    buf_deinit(&b);
}
