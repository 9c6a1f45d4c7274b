/* proto/resp.h: RESP2/RESP3 request parser and reply writer.
 *
 * Parser: incremental and zero-copy. resp_parse() reads one command from the
 * caller's buffer; argument views point into that buffer and stay valid until
 * the caller modifies or moves the buffer. Between calls that returned
 * RV_EAGAIN the caller may move the unconsumed bytes (compaction, realloc):
 * the parser keeps only offsets relative to the start of the pending command,
 * so partial input is never scanned twice.
 *
 * Writer: appends replies to a struct buf, in RESP2 or RESP3 form as asked. */
#pragma once
#include "base/buf.h"
#include "base/rv_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A borrowed byte string: p is not NUL-terminated, valid as its owner says. */
struct rv_str {
    const char *p;
    size_t len;
};

/* Redis's defaults. */
#define RESP_MAX_BULK_DEFAULT (512ull * 1024 * 1024) /* proto-max-bulk-len */
#define RESP_MAX_MBULK 1048576ull                    /* multibulk count */
#define RESP_MAX_MBULK_UNAUTH 10ull                  /* before AUTH */
#define RESP_MAX_BULK_UNAUTH 16384ull                /* before AUTH */
#define RESP_MAX_INLINE (64u * 1024)                 /* inline line / count line */
#define RESP_BIG_ARG (32u * 1024)                    /* bulks this large get an exact-size buffer */

struct resp_limits {
    uint64_t max_bulk; /* proto-max-bulk-len */
    bool authed;       /* false: unauthenticated limits apply */
};

enum resp_state { RESP_ST_IDLE, RESP_ST_MBULK, RESP_ST_INLINE };

/* Embedded in the connection; fields are private to resp_parse.c. */
struct resp_parser {
    enum resp_state st;
    uint32_t argc;       /* arguments expected (multibulk) */
    uint32_t got;        /* arguments complete so far */
    size_t scan;         /* offset (from command start) where parsing resumes */
    int64_t bulklen;     /* length of the bulk being read, -1 when none */
    size_t *offs;        /* offsets (from command start) of arguments parsed by earlier
                                 calls; their lengths stay in argv[i].len */
    size_t cap;          /* capacity of offs/argv, in arguments */
    struct rv_str *argv; /* views handed out by resp_parse() */
    const char *errmsg;  /* text after RV_EPROTO, e.g. "Protocol error: invalid bulk length";
                                 valid until the next resp_parse() or deinit */
    struct resp_limits lim;
    size_t have;     /* bytes of the pending command seen by the last RV_EAGAIN */
    char errbuf[48]; /* errmsg storage for formatted messages */
};

/* lim NULL: Redis's defaults, authenticated. */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);
/* Change the limits (e.g. after AUTH); applies from the next length read. */
void resp_parser_set_limits(struct resp_parser *p, const struct resp_limits *lim);
void resp_parser_deinit(struct resp_parser *p);
/* Drop a partially parsed command (connection reset). */
void resp_parser_reset(struct resp_parser *p);

/*
 * Parse one command from buf[*pos, len).
 *  RV_OK:     *argc and *argv describe the command (argv owned by the parser, reused
 *             by the next call; views into buf); *pos advanced past it. An empty
 *             inline line, *0 or *-1 is consumed and yields argc == 0.
 *  RV_EAGAIN: incomplete; *pos unchanged. Call again with more bytes appended.
 *  RV_EPROTO: malformed or over a limit; p->errmsg holds Redis's text (without
 *             the leading "ERR "). The connection must reply and close.
 *
 * buf is writable: inline arguments with quotes or escapes are unescaped in
 * place inside the consumed line (the result is never longer than its source),
 * so every argv view points into buf. Multibulk input is never written.
 */
int resp_parse(struct resp_parser *p, char *buf, size_t len, size_t *pos, int *argc,
               struct rv_str **argv);

/* Bytes still needed to finish the bulk in progress (0 when unknown), so the
 * caller can size its read buffer exactly for large arguments. */
size_t resp_parser_want(const struct resp_parser *p);

/* ---- reply writer ---- proto is 2 or 3. */
void resp_w_simple(struct buf *b, const char *s, size_t n); /* +s */
void resp_w_ok(struct buf *b);                              /* +OK */
void resp_w_error(struct buf *b, const char *s, size_t n);  /* -s (s has no CRLF) */
void resp_w_int(struct buf *b, int64_t v);                  /* :v */
void resp_w_bulk(struct buf *b, const void *p, size_t n);   /* $n */
void resp_w_bulk_cstr(struct buf *b, const char *s);
void resp_w_bulk_int(struct buf *b, int64_t v);           /* integer as bulk string */
void resp_w_bulk_double(struct buf *b, long double v);    /* %.17Lg-style, as INCRBYFLOAT */
void resp_w_null(struct buf *b, int proto);               /* $-1 or _ */
void resp_w_null_array(struct buf *b, int proto);         /* *-1 or _ */
void resp_w_array(struct buf *b, size_t n);               /* *n */
void resp_w_map(struct buf *b, int proto, size_t npairs); /* %n or *2n */
void resp_w_set(struct buf *b, int proto, size_t n);      /* ~n or *n */
void resp_w_push(struct buf *b, int proto, size_t n);     /* >n or *n */
void resp_w_double(struct buf *b, int proto, double v);   /* ,v or bulk */
void resp_w_bool(struct buf *b, int proto, bool v);       /* #t/#f or :1/:0 */
/* fmt3 is exactly 3 characters, e.g. "txt", "mkd". */
void resp_w_verbatim(struct buf *b, int proto, const char *fmt3, const void *p,
                     size_t n); /* =n txt:... or bulk */
/* Reserve room for a count written later (for replies of unknown length):
 * returns the offset to pass to resp_w_patch_len(). The offset is b->len - b->off,
 * i.e. relative to the unread start, so it survives buf_compact()/buf_reserve()
 * in between; do not consume (advance b->off past) it before patching. */
size_t resp_w_defer_len(struct buf *b);
void resp_w_patch_len(struct buf *b, size_t at, char type, size_t n);

#define RESP_LD_MAX 5200 /* "%.17Lf" of LDBL_MAX: 4933 integer digits + 18 */
/* Redis's human-friendly long double text (INCRBYFLOAT): "%.17Lf" without
 * trailing zeros or point, "-0" as "0"; out needs RESP_LD_MAX bytes. */
size_t resp_fmt_ldouble(char *out, size_t cap, long double v);

/* Formats v in decimal into out (at least 21 bytes), NUL-terminated; returns the length. */
size_t resp_ll2str(char *out, int64_t v);
