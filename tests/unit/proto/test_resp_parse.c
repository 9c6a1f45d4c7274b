/* tests/unit/proto/test_resp_parse.c: RESP request parser. */
#include "proto/resp.h"

#include "base/mem.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define S(lit) lit, sizeof(lit) - 1

/* ---- helpers ---- */

/* Appends a length-prefixed encoding of one command to out: "<argc>[<len>:bytes]...;" */
static void
dump_cmd(struct buf *out, int argc, const struct rv_str *argv)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%d", argc);
    buf_append(out, tmp, (size_t)n);
    for (int i = 0; i < argc; i++) {
        n = snprintf(tmp, sizeof(tmp), "[%zu:", argv[i].len);
        buf_append(out, tmp, (size_t)n);
        buf_append(out, argv[i].p, argv[i].len);
        buf_putc(out, ']');
    }
    buf_putc(out, ';');
}

/* Builds the same encoding from NULL-terminated C-string commands; each command
 * is a NULL-terminated list; the whole set ends with an empty list marker. */
static void
dump_expected(struct buf *out, const char *const *const *cmds, size_t ncmds)
{
    for (size_t c = 0; c < ncmds; c++) {
        struct rv_str v[64];
        int argc = 0;
        for (const char *const *a = cmds[c]; *a; a++) {
            v[argc].p = *a;
            v[argc].len = strlen(*a);
            argc++;
        }
        dump_cmd(out, argc, v);
    }
}

struct result {
    int rc;          /* final return code (RV_EAGAIN when all input consumed) */
    size_t consumed; /* bytes consumed */
    const char *err; /* errmsg on RV_EPROTO (copied) */
    char errcopy[64];
};

/* Parses all of in[0, n) at once (from a private copy), dumping every command. */
static void
parse_whole(const char *in, size_t n, const struct resp_limits *lim, struct buf *out,
            struct result *r)
{
    struct resp_parser p;
    char *copy = malloc(n ? n : 1);
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    memcpy(copy, in, n);
    resp_parser_init(&p, lim);
    memset(r, 0, sizeof(*r));
    while ((r->rc = resp_parse(&p, copy, n, &pos, &argc, &argv)) == RV_OK) {
        dump_cmd(out, argc, argv);
    }
    if (r->rc == RV_EPROTO) {
        snprintf(r->errcopy, sizeof(r->errcopy), "%s", p.errmsg);
        r->err = r->errcopy;
    }
    r->consumed = pos;
    resp_parser_deinit(&p);
    free(copy);
}

/* Expects exactly one RV_EPROTO with message msg for input in. */
static void
expect_err(const char *in, size_t n, const struct resp_limits *lim, const char *msg)
{
    struct buf out;
    struct result r;

    buf_init(&out);
    parse_whole(in, n, lim, &out, &r);
    cr_assert_eq(r.rc, RV_EPROTO, "input '%.*s': rc %d, want EPROTO (%s)", (int)(n > 60 ? 60 : n),
                 in, r.rc, msg);
    cr_assert_str_eq(r.err, msg, "input '%.*s'", (int)(n > 60 ? 60 : n), in);
    buf_deinit(&out);
}

/* Parses a single complete command from a C string; checks it consumed all input
 * and produced the expected args (NULL-terminated). */
static void
expect_cmd(const char *in, size_t n, const char *const *args)
{
    struct buf out, want;
    struct result r;
    const char *const *cmds[1] = { args };

    buf_init(&out);
    buf_init(&want);
    parse_whole(in, n, NULL, &out, &r);
    dump_expected(&want, cmds, 1);
    cr_assert_eq(r.rc, RV_EAGAIN, "input '%.*s': rc %d (%s)", (int)n, in, r.rc, r.err ? r.err : "");
    cr_assert_eq(r.consumed, n, "input '%.*s': consumed %zu of %zu", (int)n, in, r.consumed, n);
    cr_assert_eq(out.len, want.len, "input '%.*s': got '%.*s' want '%.*s'", (int)n, in,
                 (int)out.len, out.data, (int)want.len, want.data);
    cr_assert(memcmp(out.data, want.data, out.len) == 0, "got '%.*s' want '%.*s'", (int)out.len,
              out.data, (int)want.len, want.data);
    buf_deinit(&out);
    buf_deinit(&want);
}

static const struct resp_limits lim_unauth = { RESP_MAX_BULK_DEFAULT, false };

/* ---- valid multibulk ---- */

Test(resp_parse, multibulk_basic)
{
    char in[] = "*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nbar\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc = -1;
    struct rv_str *argv = NULL;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 3);
    cr_assert_eq(pos, sizeof(in) - 1);
    cr_assert_eq(argv[0].len, 3);
    cr_assert(memcmp(argv[0].p, "SET", 3) == 0);
    cr_assert(memcmp(argv[1].p, "foo", 3) == 0);
    cr_assert(memcmp(argv[2].p, "bar", 3) == 0);
    /* zero-copy: views into the input */
    cr_assert_eq(argv[0].p, in + 8);
    cr_assert_eq(argv[1].p, in + 17);
    cr_assert_eq(argv[2].p, in + 26);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(pos, sizeof(in) - 1);
    resp_parser_deinit(&p);
}

Test(resp_parse, multibulk_forms)
{
    expect_cmd(S("*1\r\n$4\r\nPING\r\n"), (const char *[]){ "PING", NULL });
    expect_cmd(S("*1\r\n$0\r\n\r\n"), (const char *[]){ "", NULL });
    expect_cmd(S("*2\r\n$0\r\n\r\n$1\r\nx\r\n"), (const char *[]){ "", "x", NULL });
    expect_cmd(S("*0\r\n"), (const char *[]){ NULL });
    expect_cmd(S("*-1\r\n"), (const char *[]){ NULL });
    expect_cmd(S("*-5\r\n"), (const char *[]){ NULL });
    expect_cmd(S("*-9223372036854775808\r\n"), (const char *[]){ NULL });
    /* Redis skips the byte after '\r' in a count line unseen */
    expect_cmd(S("*1\rX$1\r\na\r\n"), (const char *[]){ "a", NULL });
    expect_cmd(S("*1\r\n$1\rXa\r\n"), (const char *[]){ "a", NULL });
}

Test(resp_parse, multibulk_binary_payload)
{
    char in[] = "*2\r\n$5\r\na\r\n\0b\r\n$2\r\n\r\n\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 2);
    cr_assert_eq(argv[0].len, 5);
    cr_assert(memcmp(argv[0].p, "a\r\n\0b", 5) == 0);
    cr_assert_eq(argv[1].len, 2);
    cr_assert(memcmp(argv[1].p, "\r\n", 2) == 0);
    cr_assert_eq(pos, sizeof(in) - 1);
    resp_parser_deinit(&p);
}

Test(resp_parse, multibulk_pipeline_and_empty)
{
    char in[] = "*0\r\n*1\r\n$4\r\nPING\r\n*-1\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 0);
    cr_assert_eq(pos, 4);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 1);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 0);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 2);
    cr_assert(memcmp(argv[1].p, "hi", 2) == 0);
    cr_assert_eq(pos, sizeof(in) - 1);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EAGAIN);
    resp_parser_deinit(&p);
}

Test(resp_parse, many_args_grow_and_shrink)
{
    const int n = 20000;
    struct buf in;
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;
    char tmp[64];

    buf_init(&in);
    int k = snprintf(tmp, sizeof(tmp), "*%d\r\n", n);
    buf_append(&in, tmp, (size_t)k);
    for (int i = 0; i < n; i++) {
        char v[16];
        int vl = snprintf(v, sizeof(v), "%d", i);
        k = snprintf(tmp, sizeof(tmp), "$%d\r\n%s\r\n", vl, v);
        buf_append(&in, tmp, (size_t)k);
    }
    buf_append(&in, S("*1\r\n$1\r\nz\r\n"));
    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in.data, in.len, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, n);
    for (int i = 0; i < n; i++) {
        char v[16];
        int vl = snprintf(v, sizeof(v), "%d", i);
        cr_assert_eq(argv[i].len, (size_t)vl);
        cr_assert(memcmp(argv[i].p, v, (size_t)vl) == 0);
    }
    cr_assert_geq(p.cap, (size_t)n);
    cr_assert_eq(resp_parse(&p, in.data, in.len, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 1);
    cr_assert_eq(argv[0].p[0], 'z');
    cr_assert_leq(p.cap, 1024u, "argv shrinks back after a huge command");
    cr_assert_eq(pos, in.len);
    resp_parser_deinit(&p);
    buf_deinit(&in);
}

Test(resp_parse, many_args_incremental)
{
    /* A large command fed in small chunks, with the buffer moved each time. */
    const int n = 3000;
    struct buf in;
    struct resp_parser p;
    int argc;
    struct rv_str *argv;
    char tmp[64];

    buf_init(&in);
    int k = snprintf(tmp, sizeof(tmp), "*%d\r\n", n);
    buf_append(&in, tmp, (size_t)k);
    for (int i = 0; i < n; i++) {
        k = snprintf(tmp, sizeof(tmp), "$%d\r\n%0*d\r\n", i % 7 + 1, i % 7 + 1, i % 10);
        buf_append(&in, tmp, (size_t)k);
    }
    resp_parser_init(&p, NULL);
    size_t fed = 0;
    int rc = RV_EAGAIN;
    char *cur = NULL;
    while (fed < in.len) {
        size_t step = 37;
        if (fed + step > in.len) {
            step = in.len - fed;
        }
        fed += step;
        char *next = malloc(fed);
        memcpy(next, in.data, fed);
        free(cur);
        cur = next;
        size_t pos = 0;
        rc = resp_parse(&p, cur, fed, &pos, &argc, &argv);
        if (fed < in.len) {
            cr_assert_eq(rc, RV_EAGAIN);
            cr_assert_eq(pos, 0);
        } else {
            cr_assert_eq(rc, RV_OK);
            cr_assert_eq(pos, in.len);
        }
    }
    cr_assert_eq(argc, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(argv[i].len, (size_t)(i % 7 + 1));
        cr_assert_eq(argv[i].p[argv[i].len - 1], '0' + i % 10);
        cr_assert(argv[i].p >= cur && argv[i].p + argv[i].len <= cur + in.len);
    }
    free(cur);
    resp_parser_deinit(&p);
    buf_deinit(&in);
}

Test(resp_parse, limits_at_boundaries)
{
    struct resp_limits small = { 5, true };
    char in1[] = "*1\r\n$5\r\nhello\r\n";
    struct buf out;
    struct result r;

    buf_init(&out);
    parse_whole(in1, sizeof(in1) - 1, &small, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    cr_assert_eq(r.consumed, sizeof(in1) - 1);
    expect_err(S("*1\r\n$6\r\nhello!\r\n"), &small, "Protocol error: invalid bulk length");

    /* unauthenticated: 10 args and 16384-byte bulks are fine */
    buf_reset(&out);
    parse_whole(S("*10\r\n"), &lim_unauth, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    buf_reset(&out);
    parse_whole(S("*1\r\n$16384\r\n"), &lim_unauth, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    /* authenticated: the multibulk maximum is accepted */
    buf_reset(&out);
    parse_whole(S("*1048576\r\n"), NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    buf_deinit(&out);
}

Test(resp_parse, set_limits_after_auth)
{
    char in[] = "*11\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;
    struct resp_limits authed = { RESP_MAX_BULK_DEFAULT, true };

    resp_parser_init(&p, &lim_unauth);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EPROTO);
    cr_assert_str_eq(p.errmsg, "Protocol error: unauthenticated multibulk length");
    resp_parser_set_limits(&p, &authed);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EAGAIN);
    resp_parser_deinit(&p);
}

/* ---- inline ---- */

Test(resp_parse, inline_forms)
{
    expect_cmd(S("PING\r\n"), (const char *[]){ "PING", NULL });
    expect_cmd(S("PING\n"), (const char *[]){ "PING", NULL });
    expect_cmd(S("set a b\r\n"), (const char *[]){ "set", "a", "b", NULL });
    expect_cmd(S("  set \t a\tb   \r\n"), (const char *[]){ "set", "a", "b", NULL });
    expect_cmd(S("\r\n"), (const char *[]){ NULL });
    expect_cmd(S("\n"), (const char *[]){ NULL });
    expect_cmd(S("   \t \r\n"), (const char *[]){ NULL });
    expect_cmd(S("a\rb\r\n"), (const char *[]){ "a", "b", NULL });
    expect_cmd(S("a\r\r\n"), (const char *[]){ "a", NULL });
    expect_cmd(S("a\vb\r\n"),
               (const char *[]){ "a\vb", NULL }); /* \v only separates around quotes */
    expect_cmd(S("\v\fa\r\n"), (const char *[]){ "a", NULL });
    expect_cmd(S("$3\r\n"), (const char *[]){ "$3", NULL });
    expect_cmd(S(":1 +x -y\r\n"), (const char *[]){ ":1", "+x", "-y", NULL });
    /* like Redis (C-string split), a NUL ends the line */
    expect_cmd(S("ping\0 junk \"\r\n"), (const char *[]){ "ping", NULL });
    expect_cmd(S("\0abc\r\n"), (const char *[]){ NULL });
}

Test(resp_parse, inline_quotes)
{
    expect_cmd(S("set \"a b\" 'c d'\r\n"), (const char *[]){ "set", "a b", "c d", NULL });
    expect_cmd(S("\"\\x41\\x7a\\x7A\\n\\r\\t\\b\\a\\\\\\\"\\z'\"\r\n"),
               (const char *[]){ "Az\x7a\n\r\t\b\a\\\"z'", NULL });
    expect_cmd(S("\"\\x4\" \"\\xg1\" \"\\x\"\r\n"), (const char *[]){ "x4", "xg1", "x", NULL });
    expect_cmd(S("'it\\'s' 'a\\\\b' 'q\"q' '\\n'\r\n"),
               (const char *[]){ "it's", "a\\\\b", "q\"q", "\\n", NULL });
    expect_cmd(S("\"\" ''\r\n"), (const char *[]){ "", "", NULL });
    expect_cmd(S("foo\"bar baz\" x\r\n"), (const char *[]){ "foobar baz", "x", NULL });
    expect_cmd(S("a'b'\r\n"), (const char *[]){ "ab", NULL });
    expect_cmd(S("\"a\"\tb\r\n"), (const char *[]){ "a", "b", NULL });
    expect_cmd(S("\"a\"\vb\r\n"), (const char *[]){ "a", "b", NULL });
    expect_cmd(S("\"a\"\r\r\n"), (const char *[]){ "a", NULL });
    expect_cmd(S("\"a\" \r\n"), (const char *[]){ "a", NULL });
}

Test(resp_parse, inline_unescape_in_place)
{
    char in[] = "SET \"k\\x00\\ty\" 'v'\r\nGET k\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 3);
    cr_assert_eq(argv[0].p, in);
    cr_assert_eq(argv[1].p, in + 4);
    cr_assert_eq(argv[1].len, 4);
    cr_assert(memcmp(argv[1].p, "k\0\ty", 4) == 0);
    cr_assert_eq(argv[2].p, in + 15); /* the token starts at its quote */
    cr_assert_eq(argv[2].len, 1);
    cr_assert_eq(argv[2].p[0], 'v');
    cr_assert_eq(pos, 20);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 2);
    cr_assert_eq(argv[1].p, in + 24);
    cr_assert_eq(pos, sizeof(in) - 1);
    resp_parser_deinit(&p);
}

/* ---- errors ---- */

Test(resp_parse, err_too_big_lines)
{
    size_t n = RESP_MAX_INLINE + 16;
    char *in = malloc(n);
    struct buf out;
    struct result r;

    buf_init(&out);
    /* count line: 64 KiB pending without CR is still waiting, one more byte fails */
    in[0] = '*';
    memset(in + 1, '1', n - 1);
    parse_whole(in, RESP_MAX_INLINE, NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    expect_err(in, RESP_MAX_INLINE + 1, NULL, "Protocol error: too big mbulk count string");

    /* bulk count line */
    memcpy(in, "*1\r\n$", 5);
    memset(in + 5, '1', n - 5);
    parse_whole(in, RESP_MAX_INLINE + 4, NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    expect_err(in, RESP_MAX_INLINE + 5, NULL, "Protocol error: too big bulk count string");
    /* the type byte is only looked at once the line is complete, as in Redis */
    memcpy(in, "*1\r\nX", 5);
    expect_err(in, RESP_MAX_INLINE + 5, NULL, "Protocol error: too big bulk count string");

    /* inline */
    memset(in, 'a', n);
    parse_whole(in, RESP_MAX_INLINE, NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    expect_err(in, RESP_MAX_INLINE + 1, NULL, "Protocol error: too big inline request");
    /* a long inline line that does end is fine */
    in[RESP_MAX_INLINE + 10] = '\n';
    buf_reset(&out);
    parse_whole(in, RESP_MAX_INLINE + 11, NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    cr_assert_eq(r.consumed, RESP_MAX_INLINE + 11);
    buf_deinit(&out);
    free(in);
}

Test(resp_parse, err_multibulk_length)
{
    static const char *const bad[] = {
        "*abc\r\n",
        "*\r\n",
        "*+1\r\n",
        "*01\r\n",
        "*-0\r\n",
        "*1048577\r\n",
        "*99999999999999999999\r\n",
        "*9223372036854775808\r\n",
        "*-9223372036854775809\r\n",
        "* 1\r\n",
        "*1 \r\n",
        "*1x\r\n",
        "*-\r\n",
        "*--1\r\n",
        "*1\n\r\n",
        "*\n1\r\n",
        "*2147483648\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_err(bad[i], strlen(bad[i]), NULL, "Protocol error: invalid multibulk length");
    }
    expect_err(S("*11\r\n"), &lim_unauth, "Protocol error: unauthenticated multibulk length");
    expect_err(S("*1048577\r\n"), &lim_unauth, "Protocol error: invalid multibulk length");
    expect_err(S("*x\r\n"), &lim_unauth, "Protocol error: invalid multibulk length");
}

Test(resp_parse, err_expected_dollar)
{
    expect_err(S("*1\r\nfoo\r\n"), NULL, "Protocol error: expected '$', got 'f'");
    expect_err(S("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"), NULL,
               "Protocol error: expected '$', got 'f'");
    expect_err(S("*2\r\n$1\r\na\r\n:1\r\n"), NULL, "Protocol error: expected '$', got ':'");
    expect_err(S("*1\r\n\r\n"), NULL, "Protocol error: expected '$', got ' '");
    expect_err(S("*1\r\n\n\r\n"), NULL, "Protocol error: expected '$', got ' '");
    expect_err(S("*1\r\n*1\r\n"), NULL, "Protocol error: expected '$', got '*'");
    expect_err(S("*1\r\n\0\r\n"), NULL, "Protocol error: expected '$', got ' '");
}

Test(resp_parse, err_bulk_length)
{
    static const char *const bad[] = {
        "*1\r\n$abc\r\n",
        "*1\r\n$-1\r\n",
        "*1\r\n$+1\r\n",
        "*1\r\n$01\r\n",
        "*1\r\n$\r\n",
        "*1\r\n$ 1\r\n",
        "*1\r\n$1 \r\n",
        "*1\r\n$-0\r\n",
        "*1\r\n$99999999999999999999\r\n",
        "*1\r\n$536870913\r\n",
        "*1\r\n$9223372036854775807\r\n",
        "*1\r\n$00\r\n",
        "*2\r\n$1\r\na\r\n$x\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_err(bad[i], strlen(bad[i]), NULL, "Protocol error: invalid bulk length");
    }
    expect_err(S("*1\r\n$16385\r\n"), &lim_unauth, "Protocol error: unauthenticated bulk length");
    expect_err(S("*1\r\n$536870913\r\n"), &lim_unauth, "Protocol error: invalid bulk length");
    expect_err(S("*1\r\n$-1\r\n"), &lim_unauth, "Protocol error: invalid bulk length");
    /* 536870912 itself (proto-max-bulk-len) is allowed */
    struct buf out;
    struct result r;
    buf_init(&out);
    parse_whole(S("*1\r\n$536870912\r\n"), NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    buf_deinit(&out);
}

Test(resp_parse, err_bulk_format)
{
    expect_err(S("*1\r\n$3\r\nfooXY"), NULL, "Protocol error: invalid bulk format");
    expect_err(S("*1\r\n$3\r\nfoo\rX"), NULL, "Protocol error: invalid bulk format");
    expect_err(S("*1\r\n$3\r\nfoo\n\r"), NULL, "Protocol error: invalid bulk format");
    expect_err(S("*2\r\n$1\r\na\r\n$3\r\nfoob\r\n"), NULL, "Protocol error: invalid bulk format");
    /* with only one of the two bytes there, it waits */
    struct buf out;
    struct result r;
    buf_init(&out);
    parse_whole(S("*1\r\n$3\r\nfoo\r"), NULL, &out, &r);
    cr_assert_eq(r.rc, RV_EAGAIN);
    cr_assert_eq(r.consumed, 0);
    buf_deinit(&out);
}

Test(resp_parse, err_unbalanced_quotes)
{
    static const char *const bad[] = {
        "set \"a\r\n",
        "set 'a\r\n",
        "\"foo\"bar\r\n",
        "'foo'bar\r\n",
        "set \"\"\"test-key\"\"\" test-value\r\n",
        "\"a\\\"\r\n",
        "'a\\'\r\n",
        "\"\r\n",
        "'\r\n",
        "\"a\"\"b\"\r\n",
        "\"abc\0\"\r\n",
        "\"\\\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        if (i == 10) {
            n = 8; /* embedded NUL */
        }
        expect_err(bad[i], n, NULL, "Protocol error: unbalanced quotes in request");
    }
}

Test(resp_parse, error_resets_state)
{
    char in[] = "*1\r\n$3\r\nfooXY*1\r\n$1\r\na\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EPROTO);
    cr_assert_eq(pos, 0);
    pos = 13; /* a caller that carries on anyway starts a fresh command */
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 1);
    resp_parser_deinit(&p);
}

/* ---- incremental ---- */

static const char pipeline[] = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"
                               "PING\r\n"
                               "*0\r\n"
                               "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
                               "\r\n"
                               "set \"a b\\x41\" 'c\\'d' e\n"
                               "*-1\r\n"
                               "*1\r\n$12\r\nhello\r\nworld\r\n"
                               "  \n"
                               "*4\r\n$1\r\na\r\n$2\r\nbb\r\n$3\r\nccc\r\n$10\r\n0123456789\r\n"
                               "ECHO x\r\n";

static const char *const pipeline_cmds_0[] = { "SET", "key", "value", NULL };
static const char *const pipeline_cmds_1[] = { "PING", NULL };
static const char *const pipeline_cmds_2[] = { NULL };
static const char *const pipeline_cmds_3[] = { "GET", "", NULL };
static const char *const pipeline_cmds_4[] = { NULL };
static const char *const pipeline_cmds_5[] = { "set", "a bA", "c'd", "e", NULL };
static const char *const pipeline_cmds_6[] = { NULL };
static const char *const pipeline_cmds_7[] = { "hello\r\nworld", NULL };
static const char *const pipeline_cmds_8[] = { NULL };
static const char *const pipeline_cmds_9[] = { "a", "bb", "ccc", "0123456789", NULL };
static const char *const pipeline_cmds_10[] = { "ECHO", "x", NULL };
static const char *const *const pipeline_cmds[] = {
    pipeline_cmds_0, pipeline_cmds_1, pipeline_cmds_2,  pipeline_cmds_3,
    pipeline_cmds_4, pipeline_cmds_5, pipeline_cmds_6,  pipeline_cmds_7,
    pipeline_cmds_8, pipeline_cmds_9, pipeline_cmds_10,
};

/* Simulated connection: an rbuf with consumed prefix dropped and moved to a new
 * allocation before every call. */
struct feeder {
    struct resp_parser p;
    char *data;
    size_t len; /* bytes held */
    struct buf out;
    int calls;
};

static void
feeder_init(struct feeder *f)
{
    resp_parser_init(&f->p, NULL);
    f->data = NULL;
    f->len = 0;
    buf_init(&f->out);
    f->calls = 0;
}

static void
feeder_deinit(struct feeder *f)
{
    resp_parser_deinit(&f->p);
    free(f->data);
    buf_deinit(&f->out);
}

/* Appends in[0, n) (moving the held bytes to a fresh allocation), then parses
 * until RV_EAGAIN; returns the last rc. */
static int
feeder_push(struct feeder *f, const char *in, size_t n)
{
    char *next = malloc(f->len + n + 1);
    size_t pos = 0;
    int argc, rc;
    struct rv_str *argv;

    if (f->len) {
        memcpy(next, f->data, f->len);
    }
    memcpy(next + f->len, in, n);
    free(f->data);
    f->data = next;
    f->len += n;
    while ((rc = resp_parse(&f->p, f->data, f->len, &pos, &argc, &argv)) == RV_OK) {
        for (int i = 0; i < argc; i++) {
            cr_assert(argv[i].p >= f->data && argv[i].p + argv[i].len <= f->data + f->len);
        }
        dump_cmd(&f->out, argc, argv);
        f->calls++;
    }
    if (rc == RV_EAGAIN) {
        /* drop what was consumed */
        memmove(f->data, f->data + pos, f->len - pos);
        f->len -= pos;
    }
    return rc;
}

Test(resp_parse, split_at_every_byte)
{
    const size_t n = sizeof(pipeline) - 1;
    struct buf want;

    buf_init(&want);
    dump_expected(&want, pipeline_cmds, sizeof(pipeline_cmds) / sizeof(pipeline_cmds[0]));
    for (size_t k = 0; k <= n; k++) {
        struct feeder f;
        feeder_init(&f);
        cr_assert_eq(feeder_push(&f, pipeline, k), RV_EAGAIN, "split %zu", k);
        cr_assert_eq(feeder_push(&f, pipeline + k, n - k), RV_EAGAIN, "split %zu", k);
        cr_assert_eq(f.len, 0, "split %zu: %zu bytes left", k, f.len);
        cr_assert_eq(f.out.len, want.len, "split %zu: got '%.*s'", k, (int)f.out.len, f.out.data);
        cr_assert(memcmp(f.out.data, want.data, want.len) == 0, "split %zu", k);
        feeder_deinit(&f);
    }
    buf_deinit(&want);
}

Test(resp_parse, byte_by_byte)
{
    const size_t n = sizeof(pipeline) - 1;
    struct buf want;
    struct feeder f;

    buf_init(&want);
    dump_expected(&want, pipeline_cmds, sizeof(pipeline_cmds) / sizeof(pipeline_cmds[0]));
    feeder_init(&f);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(feeder_push(&f, pipeline + i, 1), RV_EAGAIN, "byte %zu", i);
    }
    cr_assert_eq(f.len, 0);
    cr_assert_eq(f.calls, (int)(sizeof(pipeline_cmds) / sizeof(pipeline_cmds[0])));
    cr_assert_eq(f.out.len, want.len, "got '%.*s'", (int)f.out.len, f.out.data);
    cr_assert(memcmp(f.out.data, want.data, want.len) == 0);
    feeder_deinit(&f);
    buf_deinit(&want);
}

Test(resp_parse, split_errors_same_as_whole)
{
    /* An error is reported the same way whatever the chunking. */
    static const char *const inputs[] = {
        "*1\r\n$3\r\nSET\r\n*2\r\n$1\r\na\r\nxyz\r\n",
        "PING\r\n*1\r\n$3\r\nfooXY",
        "*1\r\n$1\r\na\r\nset \"x\r\n",
        "*1\r\n$1\r\na\r\n*01\r\n",
    };
    static const char *const msgs[] = {
        "Protocol error: expected '$', got 'x'",
        "Protocol error: invalid bulk format",
        "Protocol error: unbalanced quotes in request",
        "Protocol error: invalid multibulk length",
    };
    for (size_t t = 0; t < 4; t++) {
        size_t n = strlen(inputs[t]);
        for (size_t k = 0; k <= n; k++) {
            struct feeder f;
            int rc;
            feeder_init(&f);
            rc = feeder_push(&f, inputs[t], k);
            if (rc == RV_EAGAIN) {
                rc = feeder_push(&f, inputs[t] + k, n - k);
            }
            cr_assert_eq(rc, RV_EPROTO, "input %zu split %zu", t, k);
            cr_assert_str_eq(f.p.errmsg, msgs[t]);
            feeder_deinit(&f);
        }
    }
}

Test(resp_parse, eagain_keeps_pos_and_want)
{
    size_t big = 100000;
    char *in = malloc(big + 64);
    struct resp_parser p;
    size_t pos = 0, hdr;
    int argc;
    struct rv_str *argv;

    hdr = (size_t)sprintf(in, "*2\r\n$1\r\nx\r\n$%zu\r\n", big);
    memset(in + hdr, 'v', big);
    memcpy(in + hdr + big, "\r\n", 2);
    size_t total = hdr + big + 2;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parser_want(&p), 0);
    cr_assert_eq(resp_parse(&p, in, 6, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(pos, 0);
    cr_assert_eq(resp_parser_want(&p), 0);
    cr_assert_eq(resp_parse(&p, in, hdr, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parser_want(&p), big + 2);
    cr_assert_eq(resp_parse(&p, in, hdr + 1000, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parser_want(&p), big + 2 - 1000);
    cr_assert_eq(resp_parse(&p, in, total - 1, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parser_want(&p), 1);
    cr_assert_eq(pos, 0);
    cr_assert_eq(resp_parse(&p, in, total, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(resp_parser_want(&p), 0);
    cr_assert_eq(argc, 2);
    cr_assert_eq(argv[1].len, big);
    cr_assert_eq(argv[1].p, in + hdr);
    cr_assert_eq(pos, total);
    /* small bulks never report a size */
    pos = 0;
    cr_assert_eq(resp_parse(&p, in, 10, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parser_want(&p), 0);
    resp_parser_deinit(&p);
    free(in);
}

Test(resp_parse, reset_drops_partial)
{
    char in[] = "*2\r\n$3\r\nfoo\r\n$3\r\nb";
    char in2[] = "*1\r\n$4\r\nPING\r\n";
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, in, sizeof(in) - 1, &pos, &argc, &argv), RV_EAGAIN);
    resp_parser_reset(&p);
    pos = 0;
    cr_assert_eq(resp_parse(&p, in2, sizeof(in2) - 1, &pos, &argc, &argv), RV_OK);
    cr_assert_eq(argc, 1);
    cr_assert_eq(argv[0].len, 4);
    resp_parser_deinit(&p);
}

Test(resp_parse, empty_input)
{
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;
    char c = 'x';

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, &c, 0, &pos, &argc, &argv), RV_EAGAIN);
    pos = 1;
    cr_assert_eq(resp_parse(&p, &c, 1, &pos, &argc, &argv), RV_EAGAIN);
    resp_parser_deinit(&p);
    resp_parser_deinit(&p); /* twice is harmless */
}

/* ---- guard page: nothing may be read past len ---- */

struct guard {
    char *base;
    size_t page;
};

static char *
guard_place(struct guard *g, const char *in, size_t n)
{
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (n + g->page - 1) / g->page + 1;
    g->base = mmap(NULL, (pages + 1) * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    cr_assert_neq(g->base, MAP_FAILED);
    cr_assert_eq(mprotect(g->base + pages * g->page, g->page, PROT_NONE), 0);
    char *at = g->base + pages * g->page - n;
    memcpy(at, in, n);
    g->page = (pages + 1) * g->page; /* now: mapping size */
    return at;
}

static void
guard_free(struct guard *g)
{
    munmap(g->base, g->page);
}

/* Parses in[0, n) placed flush against a PROT_NONE page, whole and as every
 * prefix; returns the whole-input rc. */
static int
guard_parse(const char *in, size_t n, const struct resp_limits *lim)
{
    int last = RV_EAGAIN;
    for (size_t k = 0; k <= n; k++) {
        struct guard g;
        char *at = guard_place(&g, in, k);
        struct resp_parser p;
        size_t pos = 0;
        int argc, rc;
        struct rv_str *argv;

        resp_parser_init(&p, lim);
        while ((rc = resp_parse(&p, at, k, &pos, &argc, &argv)) == RV_OK) {
        }
        last = rc;
        resp_parser_deinit(&p);
        guard_free(&g);
    }
    return last;
}

Test(resp_parse, guard_page)
{
    cr_assert_eq(guard_parse(pipeline, sizeof(pipeline) - 1, NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\n$3\r\nfoo\r"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\n$3\r\nfoo"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*12"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\n$12"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\n$1\r"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1234567890123456789012"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\n$1234567890123456789012"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("set \"a\\x4"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("set \"a\\x4\"\n"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("set \"a\\x41\n"), NULL), RV_EPROTO);
    cr_assert_eq(guard_parse(S("set \"a\\\n"), NULL), RV_EPROTO);
    cr_assert_eq(guard_parse(S("set 'a\\\n"), NULL), RV_EPROTO);
    cr_assert_eq(guard_parse(S("*1\r\n$3\r\nfooXY"), NULL), RV_EPROTO);
    cr_assert_eq(guard_parse(S("*1\r\nx\r"), NULL), RV_EAGAIN);
    cr_assert_eq(guard_parse(S("*1\r\nx\r\n"), NULL), RV_EPROTO);
}

Test(resp_parse, guard_page_big_lines)
{
    /* the 64 KiB limits, right at the guard page */
    size_t n = RESP_MAX_INLINE + 1;
    char *in = malloc(n);
    struct guard g;
    struct resp_parser p;
    size_t pos = 0;
    int argc;
    struct rv_str *argv;

    memset(in, 'a', n);
    char *at = guard_place(&g, in, n);
    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, at, n - 1, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parse(&p, at, n, &pos, &argc, &argv), RV_EPROTO);
    resp_parser_deinit(&p);
    guard_free(&g);

    in[0] = '*';
    at = guard_place(&g, in, n);
    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse(&p, at, n - 1, &pos, &argc, &argv), RV_EAGAIN);
    cr_assert_eq(resp_parse(&p, at, n, &pos, &argc, &argv), RV_EPROTO);
    resp_parser_deinit(&p);
    guard_free(&g);
    free(in);
}
