/* proto/resp_parse.c: incremental, zero-copy RESP request parser.
 *
 * A request is either a multibulk (`*<n>\r\n` then n times `$<len>\r\n<bytes>\r\n`)
 * or an inline line (anything else, up to '\n'). Both follow Redis 7's rules and
 * error texts. While a command is incomplete the parser keeps only offsets
 * relative to the command start (p->scan, p->offs, p->have), so the caller may
 * move the unconsumed bytes between calls and no byte is scanned twice. */
#include "proto/resp.h"

#include "base/mem.h"

#include <string.h>

#define RESP_ARGV_MIN 8         /* first argv allocation, in arguments */
#define RESP_ARGV_PREALLOC 1024 /* most slots reserved on the strength of a count alone */
#define RESP_ARGV_KEEP 8192     /* a larger argv shrinks back when a small command starts */

static const char resp_e_mbulk_big[] = "Protocol error: too big mbulk count string";
static const char resp_e_bulk_big[] = "Protocol error: too big bulk count string";
static const char resp_e_inline_big[] = "Protocol error: too big inline request";
static const char resp_e_mbulk_len[] = "Protocol error: invalid multibulk length";
static const char resp_e_mbulk_unauth[] = "Protocol error: unauthenticated multibulk length";
static const char resp_e_bulk_len[] = "Protocol error: invalid bulk length";
static const char resp_e_bulk_unauth[] = "Protocol error: unauthenticated bulk length";
static const char resp_e_bulk_fmt[] = "Protocol error: invalid bulk format";
static const char resp_e_quotes[] = "Protocol error: unbalanced quotes in request";

void
resp_parser_init(struct resp_parser *p, const struct resp_limits *lim)
{
    memset(p, 0, sizeof(*p));
    p->st = RESP_ST_IDLE;
    p->bulklen = -1;
    resp_parser_set_limits(p, lim);
}

void
resp_parser_set_limits(struct resp_parser *p, const struct resp_limits *lim)
{
    if (lim) {
        p->lim = *lim;
    } else {
        p->lim.max_bulk = RESP_MAX_BULK_DEFAULT;
        p->lim.authed = true;
    }
}

void
resp_parser_deinit(struct resp_parser *p)
{
    rv_free(p->argv);
    rv_free(p->offs);
    p->argv = NULL;
    p->offs = NULL;
    p->cap = 0;
    resp_parser_reset(p);
}

void
resp_parser_reset(struct resp_parser *p)
{
    p->st = RESP_ST_IDLE;
    p->argc = 0;
    p->got = 0;
    p->scan = 0;
    p->have = 0;
    p->bulklen = -1;
}

size_t
resp_parser_want(const struct resp_parser *p)
{
    if (p->st != RESP_ST_MBULK || p->bulklen < (int64_t)RESP_BIG_ARG) {
        return 0;
    }
    size_t need = p->scan + (size_t)p->bulklen + 2;
    return need > p->have ? need - p->have : 0;
}

static void
resp_argv_resize(struct resp_parser *p, size_t cap)
{
    p->argv = rv_realloc(p->argv, cap * sizeof(*p->argv));
    p->offs = rv_realloc(p->offs, cap * sizeof(*p->offs));
    p->cap = cap;
}

/* Room for at least `want` arguments; grows geometrically. */
static void
resp_argv_grow(struct resp_parser *p, size_t want)
{
    size_t cap = p->cap ? p->cap : RESP_ARGV_MIN;

    while (cap < want) {
        cap *= 2;
    }
    resp_argv_resize(p, cap);
}

static int
resp_fail(struct resp_parser *p, const char *msg)
{
    p->errmsg = msg;
    resp_parser_reset(p);
    return RV_EPROTO;
}

/* "Protocol error: expected '$', got 'X'". Like Redis, CR and LF print as spaces;
 * a NUL also prints as a space since errmsg is a C string (Redis sends the byte). */
static int
resp_fail_expected(struct resp_parser *p, char got)
{
    static const char head[] = "Protocol error: expected '$', got '";
    char *e = p->errbuf;

    if (got == '\r' || got == '\n' || got == '\0') {
        got = ' ';
    }
    memcpy(e, head, sizeof(head) - 1);
    e += sizeof(head) - 1;
    *e++ = got;
    *e++ = '\'';
    *e = '\0';
    return resp_fail(p, p->errbuf);
}

/* Redis's string2ll() acceptance rules, written as a plain digit loop: "0", or an
 * optional '-' then a nonzero digit and more digits, within int64. Rejects the
 * empty string, '+', leading zeros, "-0", spaces and overflow. */
static bool
resp_str2ll(const char *s, size_t n, int64_t *out)
{
    const uint64_t lim = (uint64_t)INT64_MAX + 1;
    uint64_t v = 0;
    size_t i = 0;
    bool neg = false;

    if (n == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    if (n > 0 && s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i >= n || s[i] < '1' || s[i] > '9') {
        return false;
    }
    for (; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9 || v > (lim - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (!neg && v == lim) {
        return false;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* Fast path for the common header "<digits>\r\n" at q: a canonical non-negative
 * number of at most 18 digits, then CRLF, all before end. Returns the digit count
 * (>= 1) with *out set, or 0 when the general path must decide. */
static inline size_t
resp_fast_num(const char *q, const char *end, uint64_t *out)
{
    const char *d = q;
    uint64_t v;

    if (d == end) {
        return 0;
    }
    v = (unsigned)(unsigned char)*d++ - '0';
    if (v > 9) {
        return 0;
    }
    if (v != 0) {
        const char *stop = end - q > 18 ? q + 18 : end;
        while (d < stop) {
            unsigned c = (unsigned)(unsigned char)*d - '0';
            if (c > 9) {
                break;
            }
            v = v * 10 + c;
            d++;
        }
    }
    if (end - d < 2 || d[0] != '\r' || d[1] != '\n') {
        return 0;
    }
    *out = v;
    return (size_t)(d - q);
}

/* Offset of the first '\r' in s[from, avail), or avail. Bytes seen by an earlier
 * call for this same line hold no '\r' (except perhaps the last one), so the
 * search resumes there instead of at the line start. */
static inline size_t
resp_find_cr(const struct resp_parser *p, const char *s, size_t from, size_t avail)
{
    if (p->have > from + 1) {
        from = p->have - 1;
    }
    const char *cr = memchr(s + from, '\r', avail - from);
    return cr ? (size_t)(cr - s) : avail;
}

/* The count line at s[0] == '*'. RV_OK with p->argc set and *sc past the line,
 * RV_OK with p->argc == 0 for an empty command, RV_EAGAIN or RV_EPROTO. */
static int
resp_mbulk_count(struct resp_parser *p, const char *s, size_t avail, size_t *sc)
{
    uint64_t u;
    size_t k = resp_fast_num(s + 1, s + avail, &u);
    int64_t n;

    if (k) {
        n = (int64_t)u;
        *sc = 1 + k + 2;
    } else {
        /* Redis: the line ends at the first '\r' and the byte after it is skipped
         * unseen. */
        size_t cr = resp_find_cr(p, s, 1, avail);
        if (cr == avail) {
            return avail > RESP_MAX_INLINE ? resp_fail(p, resp_e_mbulk_big) : RV_EAGAIN;
        }
        if (cr + 1 >= avail) {
            return RV_EAGAIN;
        }
        if (!resp_str2ll(s + 1, cr - 1, &n)) {
            return resp_fail(p, resp_e_mbulk_len);
        }
        *sc = cr + 2;
    }
    if (n > (int64_t)RESP_MAX_MBULK) {
        return resp_fail(p, resp_e_mbulk_len);
    }
    if (n > (int64_t)RESP_MAX_MBULK_UNAUTH && !p->lim.authed) {
        return resp_fail(p, resp_e_mbulk_unauth);
    }
    if (n <= 0) {
        p->argc = 0;
        return RV_OK;
    }
    p->argc = (uint32_t)n;
    /* Reserve from the count only up to a bound: the rest must arrive first. */
    size_t pre = n < RESP_ARGV_PREALLOC ? (size_t)n : RESP_ARGV_PREALLOC;
    if (p->cap > RESP_ARGV_KEEP && n <= RESP_ARGV_PREALLOC) {
        resp_argv_resize(p, RESP_ARGV_PREALLOC);
    } else if (p->cap < pre) {
        resp_argv_grow(p, pre);
    }
    return RV_OK;
}

static int
resp_parse_mbulk(struct resp_parser *p, const char *s, size_t avail, size_t *used)
{
    uint32_t got0 = p->got;
    size_t sc = p->scan;
    int rc;

    if (p->argc == 0) {
        rc = resp_mbulk_count(p, s, avail, &sc);
        if (rc != RV_OK) {
            if (rc == RV_EAGAIN) {
                p->have = avail;
            }
            return rc;
        }
        if (p->argc == 0) {
            *used = sc;
            return RV_OK;
        }
    }

    while (p->got < p->argc) {
        int64_t blen = p->bulklen;

        if (blen < 0) {
            uint64_t v;
            size_t k;

            if (sc < avail && s[sc] == '$' && (k = resp_fast_num(s + sc + 1, s + avail, &v))) {
                sc += 1 + k + 2;
            } else {
                /* Redis finds the line before it looks at the type byte. */
                size_t cr = resp_find_cr(p, s, sc, avail);
                int64_t n;
                if (cr == avail) {
                    if (avail - sc > RESP_MAX_INLINE) {
                        return resp_fail(p, resp_e_bulk_big);
                    }
                    goto more;
                }
                if (cr + 1 >= avail) {
                    goto more;
                }
                if (s[sc] != '$') {
                    return resp_fail_expected(p, s[sc]);
                }
                if (!resp_str2ll(s + sc + 1, cr - sc - 1, &n) || n < 0) {
                    return resp_fail(p, resp_e_bulk_len);
                }
                v = (uint64_t)n;
                sc = cr + 2;
            }
            if (v > p->lim.max_bulk) {
                return resp_fail(p, resp_e_bulk_len);
            }
            if (v > RESP_MAX_BULK_UNAUTH && !p->lim.authed) {
                return resp_fail(p, resp_e_bulk_unauth);
            }
            blen = (int64_t)v;
        }
        if (avail - sc < (uint64_t)blen + 2) {
            p->bulklen = blen;
            goto more;
        }
        /* Divergence from Redis, which skips these two bytes unseen: we require
         * them to be CRLF so a wrong length cannot silently desynchronise. */
        if (s[sc + blen] != '\r' || s[sc + blen + 1] != '\n') {
            return resp_fail(p, resp_e_bulk_fmt);
        }
        if (rv_unlikely(p->got == p->cap)) {
            resp_argv_grow(p, (size_t)p->got + 1);
        }
        p->argv[p->got].p = s + sc;
        p->argv[p->got].len = (size_t)blen;
        p->got++;
        sc += (size_t)blen + 2;
        p->bulklen = -1;
    }

    /* Arguments from earlier calls are known by offset only: rebase them. */
    for (uint32_t i = 0; i < got0; i++) {
        p->argv[i].p = s + p->offs[i];
    }
    *used = sc;
    return RV_OK;

more:
    for (uint32_t i = got0; i < p->got; i++) {
        p->offs[i] = (size_t)(p->argv[i].p - s);
    }
    p->scan = sc;
    p->have = avail;
    return RV_EAGAIN;
}

/* The separators of Redis's inline splitting: isspace() in the C locale. */
static inline bool
resp_isspace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline int
resp_hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Splits s[0, n) into p->argv the way Redis's inline protocol does: whitespace
 * separated words, "double quoted" with \n \r \t \b \a \xHH and \<any> escapes,
 * 'single quoted' with only \' ; a closing quote must be followed by whitespace
 * or the end. Like Redis (which splits a C string), a NUL byte ends the line.
 * Unescaped text is written in place: the write cursor never passes the read one. */
static int
resp_split_inline(struct resp_parser *p, char *s, size_t n, uint32_t *argc)
{
    char *nul = memchr(s, '\0', n);
    char *r = s;
    char *end = nul ? nul : s + n;
    uint32_t c = 0;

    for (;;) {
        while (r < end && resp_isspace(*r)) {
            r++;
        }
        if (r == end) {
            break;
        }
        char *tok = r;
        char *w = r;
        char q = 0;
        for (;;) {
            if (q == 0) {
                if (r == end || *r == ' ' || *r == '\t' || *r == '\n' || *r == '\r') {
                    break;
                }
                if (*r == '"' || *r == '\'') {
                    q = *r++;
                } else {
                    *w++ = *r++;
                }
                continue;
            }
            if (r == end) {
                return RV_EPROTO;
            }
            if (*r == q) {
                r++;
                if (r < end && !resp_isspace(*r)) {
                    return RV_EPROTO;
                }
                break;
            }
            if (*r == '\\' && end - r >= 2) {
                if (q == '\'') {
                    if (r[1] == '\'') {
                        *w++ = '\'';
                        r += 2;
                        continue;
                    }
                } else {
                    int hi, lo;
                    if (r[1] == 'x' && end - r >= 4 && (hi = resp_hexval(r[2])) >= 0 &&
                        (lo = resp_hexval(r[3])) >= 0) {
                        *w++ = (char)(hi * 16 + lo);
                        r += 4;
                        continue;
                    }
                    switch (r[1]) {
                    case 'n': *w++ = '\n'; break;
                    case 'r': *w++ = '\r'; break;
                    case 't': *w++ = '\t'; break;
                    case 'b': *w++ = '\b'; break;
                    case 'a': *w++ = '\a'; break;
                    default: *w++ = r[1]; break;
                    }
                    r += 2;
                    continue;
                }
            }
            *w++ = *r++;
        }
        if (c == p->cap) {
            resp_argv_grow(p, (size_t)c + 1);
        }
        p->argv[c].p = tok;
        p->argv[c].len = (size_t)(w - tok);
        c++;
    }
    *argc = c;
    return RV_OK;
}

static int
resp_parse_inline(struct resp_parser *p, char *s, size_t avail, size_t *used)
{
    size_t from = p->have;
    char *nl = memchr(s + from, '\n', avail - from);

    if (nl == NULL) {
        if (avail > RESP_MAX_INLINE) {
            return resp_fail(p, resp_e_inline_big);
        }
        p->have = avail;
        return RV_EAGAIN;
    }
    size_t n = (size_t)(nl - s);
    *used = n + 1;
    if (n > 0 && s[n - 1] == '\r') {
        n--;
    }
    if (resp_split_inline(p, s, n, &p->argc) != RV_OK) {
        return resp_fail(p, resp_e_quotes);
    }
    return RV_OK;
}

int
resp_parse(struct resp_parser *p, char *buf, size_t len, size_t *pos, int *argc,
           struct rv_str **argv)
{
    char *s = buf + *pos;
    size_t avail = len - *pos;
    size_t used = 0;
    int rc;

    if (rv_unlikely(avail == 0)) {
        return RV_EAGAIN;
    }
    if (p->st == RESP_ST_IDLE) {
        p->st = s[0] == '*' ? RESP_ST_MBULK : RESP_ST_INLINE;
    } else if (rv_unlikely(p->have > avail)) {
        return RV_EAGAIN; /* fewer bytes than last time: misuse; never read past len */
    }
    if (p->st == RESP_ST_MBULK) {
        rc = resp_parse_mbulk(p, s, avail, &used);
    } else {
        rc = resp_parse_inline(p, s, avail, &used);
    }
    if (rc != RV_OK) {
        return rc;
    }
    *argc = (int)p->argc;
    *argv = p->argv;
    *pos += used;
    resp_parser_reset(p);
    return RV_OK;
}
