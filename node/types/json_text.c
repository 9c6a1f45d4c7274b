/* node/types/json_text.c: JSON text to nodes and back (node/types/json.h).
 *
 * The parser is our own recursive descent straight into nodes (docs/json.md
 * says why not a library). It is strict RFC 8259: no comments, no trailing
 * commas, no leading zeros, control characters escaped in strings; nesting
 * is limited to JSON_MAX_DEPTH. Error messages follow serde_json's, which
 * RedisJSON replies ("... at line L column C"). A failed parse frees what it
 * built: the caller never sees half a document. */
#include "node/types/json.h"

#include "base/mem.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jparse {
    const char *p, *start, *end;
    char *err;
    size_t errlen;
    struct buf tmp; /* unescaped strings */
    int depth;
};

static void
perr(struct jparse *ps, const char *msg)
{
    if (ps->err[0] != '\0') {
        return;
    }
    size_t line = 1, col = 0;
    const char *at = ps->p < ps->end ? ps->p + 1 : ps->end;
    for (const char *q = ps->start; q < at; q++) {
        if (*q == '\n') {
            line++;
            col = 0;
        } else {
            col++;
        }
    }
    snprintf(ps->err, ps->errlen, "%s at line %zu column %zu", msg, line, col);
}

static void
skip_ws(struct jparse *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')) {
        ps->p++;
    }
}

static int
hexval(char c)
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

static bool
read_hex4(struct jparse *ps, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        if (ps->p >= ps->end) {
            perr(ps, "EOF while parsing a string");
            return false;
        }
        int h = hexval(*ps->p);
        if (h < 0) {
            perr(ps, "invalid escape");
            return false;
        }
        v = v << 4 | (unsigned)h;
        ps->p++;
    }
    *out = v;
    return true;
}

static void
put_utf8(struct buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    buf_append(b, u, n);
}

static bool
parse_escape(struct jparse *ps, struct buf *b)
{
    if (ps->p >= ps->end) {
        perr(ps, "EOF while parsing a string");
        return false;
    }
    char c = *ps->p++;
    unsigned cp, lo;
    switch (c) {
    case '"': buf_putc(b, '"'); return true;
    case '\\': buf_putc(b, '\\'); return true;
    case '/': buf_putc(b, '/'); return true;
    case 'b': buf_putc(b, '\b'); return true;
    case 'f': buf_putc(b, '\f'); return true;
    case 'n': buf_putc(b, '\n'); return true;
    case 'r': buf_putc(b, '\r'); return true;
    case 't': buf_putc(b, '\t'); return true;
    case 'u': break;
    default:
        ps->p--;
        perr(ps, "invalid escape");
        return false;
    }
    if (!read_hex4(ps, &cp)) {
        return false;
    }
    if (cp >= 0xdc00 && cp <= 0xdfff) {
        ps->p--; /* (the place is the escape's last digit, as serde_json names it) */
        perr(ps, "lone leading surrogate in hex escape");
        return false;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
            perr(ps, "unexpected end of hex escape");
            return false;
        }
        ps->p += 2;
        if (!read_hex4(ps, &lo)) {
            return false;
        }
        if (lo < 0xdc00 || lo > 0xdfff) {
            ps->p--;
            perr(ps, "lone leading surrogate in hex escape");
            return false;
        }
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    put_utf8(b, cp);
    return true;
}

/* Whether any byte of w is '"', '\\' or below 0x20 (may say yes for a byte
 * after such a byte: the caller then looks byte by byte). */
static inline bool
needs_look(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t z = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w);
    return (z & high) != 0;
}

/* After the opening quote; *out and *n view the bytes (in the input when there
 * was no escape, else in ps->tmp). */
static bool
parse_string(struct jparse *ps, const char **out, size_t *n)
{
    const char *s = ps->p;
    /* eight bytes at a time until one may be a quote, backslash or control */
    while (ps->end - ps->p >= 8) {
        uint64_t w;
        memcpy(&w, ps->p, 8);
        if (needs_look(w)) {
            break;
        }
        ps->p += 8;
    }
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            *out = s;
            *n = (size_t)(ps->p - s);
            ps->p++;
            return true;
        }
        if (c == '\\') {
            break;
        }
        if (c < 0x20) {
            perr(ps, "control character (\\u0000-\\u001F) found while parsing a string");
            return false;
        }
        ps->p++;
    }
    buf_reset(&ps->tmp);
    if (ps->p > s) {
        buf_append(&ps->tmp, s, (size_t)(ps->p - s));
    }
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            *out = ps->tmp.data;
            *n = ps->tmp.len;
            return true;
        }
        if (c < 0x20) {
            perr(ps, "control character (\\u0000-\\u001F) found while parsing a string");
            return false;
        }
        ps->p++;
        if (c == '\\') {
            if (!parse_escape(ps, &ps->tmp)) {
                return false;
            }
        } else {
            buf_putc(&ps->tmp, (char)c);
        }
    }
    perr(ps, "EOF while parsing a string");
    return false;
}

static struct json *
parse_number(struct jparse *ps)
{
    const char *s = ps->p;
    bool isint = true;
    if (ps->p < ps->end && *ps->p == '-') {
        ps->p++;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
        perr(ps, ps->p >= ps->end ? "EOF while parsing a value" : "invalid number");
        return NULL;
    }
    if (*ps->p == '0') {
        ps->p++;
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            perr(ps, "invalid number");
            return NULL;
        }
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            ps->p++;
        }
    }
    if (ps->p < ps->end && *ps->p == '.') {
        isint = false;
        ps->p++;
        const char *d = ps->p;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            ps->p++;
        }
        if (ps->p == d) {
            perr(ps, ps->p >= ps->end ? "EOF while parsing a value" : "invalid number");
            return NULL;
        }
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        isint = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) {
            ps->p++;
        }
        const char *d = ps->p;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            ps->p++;
        }
        if (ps->p == d) {
            perr(ps, ps->p >= ps->end ? "EOF while parsing a value" : "invalid number");
            return NULL;
        }
    }
    size_t n = (size_t)(ps->p - s);
    char small[64], *txt = n < sizeof(small) ? small : rv_malloc(n + 1);
    memcpy(txt, s, n);
    txt[n] = '\0';
    struct json *j = NULL;
    if (isint) {
        errno = 0;
        long long v = strtoll(txt, NULL, 10);
        if (errno == 0) {
            j = json_new_int(v);
        } else if (txt[0] != '-') {
            errno = 0;
            unsigned long long u = strtoull(txt, NULL, 10);
            if (errno == 0) {
                j = json_new_uint(u);
            }
        }
    }
    if (j == NULL) {
        double d = strtod(txt, NULL);
        if (!isfinite(d)) {
            perr(ps, "number out of range");
        } else {
            j = json_new_double(d);
        }
    }
    if (txt != small) {
        rv_free(txt);
    }
    return j;
}

static bool
match_word(struct jparse *ps, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ps->p + i >= ps->end) {
            ps->p = ps->end;
            perr(ps, "EOF while parsing a value");
            return false;
        }
        if (ps->p[i] != w[i]) {
            ps->p += i;
            perr(ps, i == 0 ? "expected value" : "expected ident");
            return false;
        }
    }
    ps->p += n;
    return true;
}

static struct json *parse_value(struct jparse *ps);

/* After an element of an array or object: 1 at its close (taken), 0 after
 * a comma (taken), -1 with the error reported (eof: what ended early). */
static int
after_element(struct jparse *ps, char close, const char *eof, const char *expected)
{
    skip_ws(ps);
    if (ps->p >= ps->end) {
        perr(ps, eof);
        return -1;
    }
    if (*ps->p == close) {
        ps->p++;
        return 1;
    }
    if (*ps->p != ',') {
        perr(ps, expected);
        return -1;
    }
    ps->p++;
    return 0;
}

static struct json *
parse_array(struct jparse *ps)
{
    struct json *a = json_new_arr();
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return a;
    }
    for (;;) {
        struct json *v = parse_value(ps);
        if (v == NULL) {
            goto fail;
        }
        json_arr_insert_take(a, json_len(a), v);
        int end = after_element(ps, ']', "EOF while parsing a list", "expected `,` or `]`");
        if (end != 0) {
            if (end > 0) {
                return a;
            }
            goto fail;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ']') {
            perr(ps, "trailing comma");
            goto fail;
        }
    }
fail:
    json_destroy(a);
    return NULL;
}

static struct json *
parse_object(struct jparse *ps)
{
    struct json *o = json_new_obj();
    char small[128];
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return o;
    }
    for (;;) {
        const char *k;
        size_t kn;
        skip_ws(ps);
        if (ps->p >= ps->end) {
            perr(ps, "EOF while parsing an object");
            goto fail;
        }
        if (*ps->p != '"') {
            perr(ps, *ps->p == '}' ? "trailing comma" : "key must be a string");
            goto fail;
        }
        ps->p++;
        if (!parse_string(ps, &k, &kn)) {
            goto fail;
        }
        /* the key may sit in ps->tmp, which the value's strings reuse */
        char *kc = kn <= sizeof(small) ? small : rv_malloc(kn);
        memcpy(kc, k, kn);
        skip_ws(ps);
        struct json *v = NULL;
        if (ps->p >= ps->end) {
            perr(ps, "EOF while parsing an object");
        } else if (*ps->p != ':') {
            perr(ps, "expected `:`");
        } else {
            ps->p++;
            v = parse_value(ps);
        }
        if (v != NULL) {
            json_obj_set_take(o, kc, kn, v);
        }
        if (kc != small) {
            rv_free(kc);
        }
        if (v == NULL) {
            goto fail;
        }
        int end = after_element(ps, '}', "EOF while parsing an object", "expected `,` or `}`");
        if (end != 0) {
            if (end > 0) {
                return o;
            }
            goto fail;
        }
    }
fail:
    json_destroy(o);
    return NULL;
}

static struct json *
parse_value(struct jparse *ps)
{
    struct json *j;
    skip_ws(ps);
    if (ps->p >= ps->end) {
        perr(ps, "EOF while parsing a value");
        return NULL;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > JSON_MAX_DEPTH) {
            perr(ps, "recursion limit exceeded");
            return NULL;
        }
        ps->p++;
        j = ps->p[-1] == '{' ? parse_object(ps) : parse_array(ps);
        ps->depth--;
        return j;
    case '"': {
        const char *s;
        size_t n;
        ps->p++;
        return parse_string(ps, &s, &n) ? json_new_str(s, n) : NULL;
    }
    case 't': return match_word(ps, "true", 4) ? json_new_bool(true) : NULL;
    case 'f': return match_word(ps, "false", 5) ? json_new_bool(false) : NULL;
    case 'n': return match_word(ps, "null", 4) ? json_new_null() : NULL;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            return parse_number(ps);
        }
        perr(ps, "expected value");
        return NULL;
    }
}

struct json *
json_parse(const char *p, size_t n, char *err, size_t errlen)
{
    struct jparse ps = { p, p, p + n, err, errlen, { 0 }, 0 };
    err[0] = '\0';
    buf_init(&ps.tmp);
    struct json *j = parse_value(&ps);
    if (j != NULL) {
        skip_ws(&ps);
        if (ps.p < ps.end) {
            perr(&ps, "trailing characters");
            json_destroy(j);
            j = NULL;
        }
    }
    buf_deinit(&ps.tmp);
    return j;
}

/* ------------------------------------------------------------ output */

void
json_write_str(struct buf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    buf_reserve(b, n + 2);
    buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        if (n - i >= 8 && (memcpy(&w, p + i, 8), !needs_look(w))) {
            i += 7; /* none of these eight needs an escape */
            continue;
        }
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        buf_append(b, p + run, i - run);
        run = i + 1;
        char e[6] = { '\\', 0 };
        size_t en = 2;
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            en = 6;
        }
        buf_append(b, e, en);
    }
    buf_append(b, p + run, n - run);
    buf_putc(b, '"');
}

static void
newline(struct buf *b, const struct json_fmt *f, int level)
{
    buf_append(b, f->newline, f->nlen);
    for (int i = 0; i < level; i++) {
        buf_append(b, f->indent, f->ilen);
    }
}

static void
write_value(struct buf *b, const struct json *j, const struct json_fmt *f, int level)
{
    char num[40];
    size_t n;
    switch (json_type(j)) {
    case JSON_NULL: buf_append(b, "null", 4); return;
    case JSON_BOOL:
        if (json_bool(j)) {
            buf_append(b, "true", 4);
        } else {
            buf_append(b, "false", 5);
        }
        return;
    case JSON_INT:
        if (json_int_unsigned(j)) {
            n = (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)json_uint(j));
        } else {
            n = json_fmt_int(json_int(j), num);
        }
        buf_append(b, num, n);
        return;
    case JSON_DOUBLE: buf_append(b, num, json_fmt_double(json_double(j), num)); return;
    case JSON_STR: {
        const char *s = json_str(j, &n);
        json_write_str(b, s, n);
        return;
    }
    case JSON_ARR:
        buf_putc(b, '[');
        for (size_t i = 0; i < json_len(j); i++) {
            if (i > 0) {
                buf_putc(b, ',');
            }
            if (f) {
                newline(b, f, level + 1);
            }
            write_value(b, json_arr_at(j, i), f, level + 1);
        }
        if (f && json_len(j) > 0) {
            newline(b, f, level);
        }
        buf_putc(b, ']');
        return;
    case JSON_OBJ:
        buf_putc(b, '{');
        for (size_t i = 0; i < json_len(j); i++) {
            size_t kl;
            const char *k = json_obj_key(j, i, &kl);
            if (i > 0) {
                buf_putc(b, ',');
            }
            if (f) {
                newline(b, f, level + 1);
            }
            json_write_str(b, k, kl);
            buf_putc(b, ':');
            if (f) {
                buf_append(b, f->space, f->slen);
            }
            write_value(b, json_obj_val(j, i), f, level + 1);
        }
        if (f && json_len(j) > 0) {
            newline(b, f, level);
        }
        buf_putc(b, '}');
        return;
    }
}

void
json_write(struct buf *b, const struct json *j, const struct json_fmt *f)
{
    if (f != NULL && f->ilen == 0 && f->nlen == 0 && f->slen == 0) {
        f = NULL;
    }
    write_value(b, j, f, 0);
}
