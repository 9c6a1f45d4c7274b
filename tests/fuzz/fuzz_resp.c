/* tests/fuzz/fuzz_resp.c: libFuzzer target for the RESP parser and writer.
 *
 * Input layout: byte 0 = flags (limits, chunking mode), bytes 1..3 = seed for the
 * chunk sizes, the rest = the bytes a client sends. Checks:
 *  - the input parsed whole and parsed in random chunks (the held bytes moved to a
 *    fresh exact-size allocation before every call, the consumed prefix dropped)
 *    give the same commands and the same final status / error text;
 *  - every RV_OK consumes bytes and its views lie inside what it consumed;
 *  - resp_parser_want() is exact: fewer bytes than it asks for never complete;
 *  - every command re-encoded with the writer (directly, and via defer/patch)
 *    parses back to itself; integer and double writers match printf. */
#include "proto/resp.h"

#include "base/mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_resp: check failed at line %d: %s\n", __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct fz_run {
    struct buf cmds; /* length-prefixed dump of every command */
    int rc;          /* final status */
    char err[64];    /* errmsg when rc == RV_EPROTO */
    size_t ncmds;
};

static void
fz_dump(struct buf *out, int argc, const struct rv_str *argv)
{
    uint32_t n = (uint32_t)argc;
    buf_append(out, &n, sizeof(n));
    for (int i = 0; i < argc; i++) {
        uint64_t l = argv[i].len;
        buf_append(out, &l, sizeof(l));
        buf_append(out, argv[i].p, argv[i].len);
    }
}

static void
fz_finish(struct fz_run *r, const struct resp_parser *p, int rc)
{
    r->rc = rc;
    r->err[0] = '\0';
    if (rc == RV_EPROTO) {
        FZ_CHECK(p->errmsg != NULL);
        FZ_CHECK(strlen(p->errmsg) < sizeof(r->err));
        FZ_CHECK(strncmp(p->errmsg, "Protocol error: ", 16) == 0);
        strcpy(r->err, p->errmsg);
    }
}

/* Checks one RV_OK result against the bytes it consumed. */
static void
fz_check_cmd(const char *buf, size_t from, size_t to, int argc, const struct rv_str *argv)
{
    FZ_CHECK(to > from);
    FZ_CHECK(argc >= 0);
    for (int i = 0; i < argc; i++) {
        FZ_CHECK(argv[i].p >= buf + from);
        FZ_CHECK(argv[i].p + argv[i].len <= buf + to);
    }
}

static void
fz_parse_whole(const char *in, size_t n, const struct resp_limits *lim, struct fz_run *r)
{
    struct resp_parser p;
    char *copy = malloc(n ? n : 1);
    size_t pos = 0, prev = 0;
    int argc, rc;
    struct rv_str *argv;

    if (n) {
        memcpy(copy, in, n);
    }
    resp_parser_init(&p, lim);
    while ((rc = resp_parse(&p, copy, n, &pos, &argc, &argv)) == RV_OK) {
        fz_check_cmd(copy, prev, pos, argc, argv);
        fz_dump(&r->cmds, argc, argv);
        r->ncmds++;
        prev = pos;
    }
    FZ_CHECK(rc == RV_EAGAIN || rc == RV_EPROTO);
    FZ_CHECK(pos == prev);
    fz_finish(r, &p, rc);
    resp_parser_deinit(&p);
    free(copy);
}

static uint32_t
fz_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void
fz_parse_chunked(const char *in, size_t n, const struct resp_limits *lim, uint8_t mode,
                 uint32_t seed, struct fz_run *r)
{
    struct resp_parser p;
    char *held = NULL;
    size_t nheld = 0, fed = 0;
    int rc = RV_EAGAIN;
    uint32_t maxchunk = 1u << (mode % 13); /* 1 .. 4096 */

    resp_parser_init(&p, lim);
    while (fed < n) {
        size_t chunk = 1 + fz_rand(&seed) % maxchunk;
        size_t want = resp_parser_want(&p);
        size_t pos = 0, prev = 0;
        int argc;
        struct rv_str *argv;

        if (chunk > n - fed) {
            chunk = n - fed;
        }
        /* move the held bytes, as a connection compacting or growing its rbuf */
        char *next = malloc(nheld + chunk);
        if (nheld) {
            memcpy(next, held, nheld);
        }
        memcpy(next + nheld, in + fed, chunk);
        free(held);
        held = next;
        nheld += chunk;
        fed += chunk;

        while ((rc = resp_parse(&p, held, nheld, &pos, &argc, &argv)) == RV_OK) {
            FZ_CHECK(want == 0 || chunk >= want || prev > 0);
            want = 0;
            fz_check_cmd(held, prev, pos, argc, argv);
            fz_dump(&r->cmds, argc, argv);
            r->ncmds++;
            prev = pos;
        }
        if (rc == RV_EPROTO) {
            break;
        }
        FZ_CHECK(rc == RV_EAGAIN);
        FZ_CHECK(pos == prev);
        if (want && chunk < want && prev == 0) {
            FZ_CHECK(resp_parser_want(&p) == want - chunk);
        }
        memmove(held, held + pos, nheld - pos);
        nheld -= pos;
    }
    fz_finish(r, &p, rc);
    resp_parser_deinit(&p);
    free(held);
}

/* Re-encodes each dumped command as a RESP2 request, two ways, and parses it back. */
static void
fz_roundtrip(const struct buf *cmds)
{
    size_t at = 0;
    struct buf a, b, back;
    struct resp_parser p;

    buf_init(&a);
    buf_init(&b);
    buf_init(&back);
    resp_parser_init(&p, NULL);
    while (at < cmds->len) {
        uint32_t argc;
        size_t start = at;
        memcpy(&argc, cmds->data + at, sizeof(argc));
        at += sizeof(argc);

        buf_reset(&a);
        buf_reset(&b);
        resp_w_array(&a, argc);
        size_t d = resp_w_defer_len(&b);
        for (uint32_t i = 0; i < argc; i++) {
            uint64_t l;
            memcpy(&l, cmds->data + at, sizeof(l));
            at += sizeof(l);
            resp_w_bulk(&a, cmds->data + at, (size_t)l);
            resp_w_bulk(&b, cmds->data + at, (size_t)l);
            at += (size_t)l;
        }
        resp_w_patch_len(&b, d, '*', argc);
        FZ_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);

        size_t pos = 0;
        int n;
        struct rv_str *argv;
        FZ_CHECK(resp_parse(&p, a.data, a.len, &pos, &n, &argv) == RV_OK);
        FZ_CHECK(pos == a.len);
        buf_reset(&back);
        fz_dump(&back, n, argv);
        FZ_CHECK(back.len == at - start);
        FZ_CHECK(memcmp(back.data, cmds->data + start, back.len) == 0);
    }
    resp_parser_deinit(&p);
    buf_deinit(&a);
    buf_deinit(&b);
    buf_deinit(&back);
}

/* Feeds argument text to the scalar writers and checks them against printf. */
static void
fz_writers(const struct rv_str *arg, int proto)
{
    char s[80], want[128];
    struct buf b;
    size_t n = arg->len < sizeof(s) - 1 ? arg->len : sizeof(s) - 1;

    memcpy(s, arg->p, n);
    s[n] = '\0';
    buf_init(&b);

    long long ll = strtoll(s, NULL, 10);
    char d[21];
    size_t dl = resp_ll2str(d, (int64_t)ll);
    int wl = snprintf(want, sizeof(want), "%lld", ll);
    FZ_CHECK(dl == (size_t)wl && memcmp(d, want, dl) == 0 && d[dl] == '\0');
    resp_w_int(&b, (int64_t)ll);
    wl = snprintf(want, sizeof(want), ":%lld\r\n", ll);
    FZ_CHECK(b.len == (size_t)wl && memcmp(b.data, want, b.len) == 0);
    buf_reset(&b);
    resp_w_bulk_int(&b, (int64_t)ll);
    wl = snprintf(want, sizeof(want), "$%zu\r\n%lld\r\n", dl, ll);
    FZ_CHECK(b.len == (size_t)wl && memcmp(b.data, want, b.len) == 0);

    double v = strtod(s, NULL);
    buf_reset(&b);
    resp_w_double(&b, proto, v);
    if (isfinite(v)) {
        char t[64];
        int tl = snprintf(t, sizeof(t), "%.17g", v);
        if (proto == 3) {
            wl = snprintf(want, sizeof(want), ",%s\r\n", t);
        } else {
            wl = snprintf(want, sizeof(want), "$%d\r\n%s\r\n", tl, t);
        }
        FZ_CHECK(b.len == (size_t)wl && memcmp(b.data, want, b.len) == 0);
    } else {
        FZ_CHECK(b.len >= 6 && memcmp(b.data + b.len - 2, "\r\n", 2) == 0);
    }

    long double lv = strtold(s, NULL);
    buf_reset(&b);
    resp_w_bulk_double(&b, lv);
    FZ_CHECK(b.len >= 5 && b.data[0] == '$');
    FZ_CHECK(memcmp(b.data + b.len - 2, "\r\n", 2) == 0);
    if (isfinite(lv)) {
        /* human form: no exponent, no trailing zeros after a '.', never "-0" */
        char *body = memchr(b.data, '\n', b.len);
        FZ_CHECK(body != NULL);
        body++;
        size_t bl = (size_t)(b.data + b.len - 2 - body);
        FZ_CHECK(bl > 0);
        FZ_CHECK(memchr(body, 'e', bl) == NULL);
        if (memchr(body, '.', bl)) {
            FZ_CHECK(body[bl - 1] != '0' && body[bl - 1] != '.');
        }
        FZ_CHECK(!(bl == 2 && body[0] == '-' && body[1] == '0'));
    }

    buf_reset(&b);
    resp_w_verbatim(&b, proto, "txt", arg->p, arg->len);
    resp_w_simple(&b, "x", 1);
    resp_w_error(&b, "ERR x", 5);
    resp_w_map(&b, proto, arg->len);
    resp_w_set(&b, proto, arg->len);
    resp_w_push(&b, proto, arg->len);
    resp_w_bool(&b, proto, arg->len & 1);
    resp_w_null(&b, proto);
    resp_w_null_array(&b, proto);
    resp_w_bulk_cstr(&b, s);
    resp_w_ok(&b);
    FZ_CHECK(memcmp(b.data + b.len - 5, "+OK\r\n", 5) == 0);
    buf_deinit(&b);
}

static void
fz_writers_all(const struct buf *cmds, int proto)
{
    size_t at = 0;
    int budget = 64;

    while (at < cmds->len && budget > 0) {
        uint32_t argc;
        memcpy(&argc, cmds->data + at, sizeof(argc));
        at += sizeof(argc);
        for (uint32_t i = 0; i < argc; i++) {
            uint64_t l;
            struct rv_str arg;
            memcpy(&l, cmds->data + at, sizeof(l));
            at += sizeof(l);
            arg.p = cmds->data + at;
            arg.len = (size_t)l;
            at += (size_t)l;
            if (budget-- > 0) {
                fz_writers(&arg, proto);
            }
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_run whole, chunked;
    struct resp_limits lim;

    if (size < 4) {
        return 0;
    }
    uint8_t flags = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16;
    const char *in = (const char *)data + 4;
    size_t n = size - 4;

    seed = seed * 2654435761u + 1; /* never 0 for xorshift */
    if (seed == 0) {
        seed = 1;
    }
    lim.authed = (flags & 0x80) == 0;
    lim.max_bulk = (flags & 0x40) ? (uint64_t)(flags & 0x0f) * 7 : RESP_MAX_BULK_DEFAULT;

    memset(&whole, 0, sizeof(whole));
    memset(&chunked, 0, sizeof(chunked));
    buf_init(&whole.cmds);
    buf_init(&chunked.cmds);

    fz_parse_whole(in, n, &lim, &whole);
    fz_parse_chunked(in, n, &lim, flags, seed, &chunked);

    /* Beyond 64 KiB the "too big" errors legitimately depend on the chunking
     * (as in Redis): a line may end past the limit in the whole input. */
    if (n <= RESP_MAX_INLINE) {
        FZ_CHECK(whole.ncmds == chunked.ncmds);
        FZ_CHECK(whole.cmds.len == chunked.cmds.len);
        FZ_CHECK(whole.cmds.len == 0 ||
                 memcmp(whole.cmds.data, chunked.cmds.data, whole.cmds.len) == 0);
        FZ_CHECK(whole.rc == chunked.rc);
        FZ_CHECK(strcmp(whole.err, chunked.err) == 0);
    }

    fz_roundtrip(&whole.cmds);
    fz_writers_all(&whole.cmds, (flags & 0x20) ? 3 : 2);

    buf_deinit(&whole.cmds);
    buf_deinit(&chunked.cmds);
    return 0;
}
