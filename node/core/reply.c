/* node/core/reply.c: reply helpers over proto/resp_write.c, in the client's protocol. */
#include "node/core/reply.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/shard.h"
#include "proto/resp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const rv_client_err_text[RV_ERR__COUNT] = {
#define RV_ERR_TEXT(name, text) text,
    RV_CLIENT_ERRORS(RV_ERR_TEXT)
#undef RV_ERR_TEXT
};

void
reply_ok(struct conn *c)
{
    resp_w_ok(&c->wbuf);
}

void
reply_simple(struct conn *c, const char *s)
{
    resp_w_simple(&c->wbuf, s, strlen(s));
}

static void
reply_error_text(struct conn *c, const char *s, size_t n)
{
    if (rv_unlikely(c->flags & CONN_EXEC_ABORT)) {
        /* As Redis's execCommandAbort: the refusal is EXEC's reason, one error. */
        c->flags &= ~CONN_EXEC_ABORT;
        reply_errf(c, "EXECABORT Transaction discarded because of: %.*s", (int)n, s);
        return;
    }
    /* Error text must be one line: newlines would break the protocol. */
    char clean[1024];
    clean[0] = '\0'; /* (n may be 0) */
    if (n > sizeof(clean)) {
        n = sizeof(clean);
    }
    for (size_t i = 0; i < n; i++) {
        clean[i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    }
    resp_w_error(&c->wbuf, clean, n);
    /* counted by the dispatcher (dispatch_count_errors), by code: the first word */
    size_t len = 0;
    while (len < n && clean[len] != ' ' && len < sizeof(c->errcode) - 1) {
        len++;
    }
    memcpy(c->errcode, clean, len);
    c->errcode[len] = '\0';
    c->nerr++;
}

void
reply_err(struct conn *c, enum rv_client_err e)
{
    const char *t = rv_client_err_text[e];
    reply_error_text(c, t, strlen(t));
}

void
reply_errf(struct conn *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0) {
        n = 0;
    }
    reply_error_text(c, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

void
reply_err_arity(struct conn *c, const char *cmdname)
{
    reply_errf(c, "ERR wrong number of arguments for '%s' command", cmdname);
}

void
reply_int(struct conn *c, int64_t v)
{
    resp_w_int(&c->wbuf, v);
}
void
reply_bulk(struct conn *c, const void *p, size_t n)
{
    resp_w_bulk(&c->wbuf, p, n);
}
void
reply_bulk_cstr(struct conn *c, const char *s)
{
    resp_w_bulk(&c->wbuf, s, strlen(s));
}
void
reply_bulk_int(struct conn *c, int64_t v)
{
    resp_w_bulk_int(&c->wbuf, v);
}
void
reply_bulk_u64(struct conn *c, uint64_t v)
{
    char buf[24];
    size_t n = sizeof(buf);
    do {
        buf[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    resp_w_bulk(&c->wbuf, buf + n, sizeof(buf) - n);
}

void
reply_bulk_ldouble(struct conn *c, long double v)
{
    resp_w_bulk_double(&c->wbuf, v);
}
void
reply_double(struct conn *c, double v)
{
    resp_w_double(&c->wbuf, c->proto, v);
}
void
reply_bool(struct conn *c, bool v)
{
    resp_w_bool(&c->wbuf, c->proto, v);
}
void
reply_null(struct conn *c)
{
    resp_w_null(&c->wbuf, c->proto);
}
void
reply_null_array(struct conn *c)
{
    resp_w_null_array(&c->wbuf, c->proto);
}
void
reply_array(struct conn *c, size_t n)
{
    resp_w_array(&c->wbuf, n);
}
void
reply_map(struct conn *c, size_t npairs)
{
    resp_w_map(&c->wbuf, c->proto, npairs);
}
void
reply_set(struct conn *c, size_t n)
{
    resp_w_set(&c->wbuf, c->proto, n);
}

void
reply_verbatim(struct conn *c, const char *s, size_t n)
{
    resp_w_verbatim(&c->wbuf, c->proto, "txt", s, n);
}

size_t
reply_defer(struct conn *c)
{
    return resp_w_defer_len(&c->wbuf);
}

void
reply_defer_array(struct conn *c, size_t h, size_t n)
{
    resp_w_patch_len(&c->wbuf, h, '*', n);
}

void
reply_defer_map(struct conn *c, size_t h, size_t npairs)
{
    if (c->proto >= 3) {
        resp_w_patch_len(&c->wbuf, h, '%', npairs);
    } else {
        resp_w_patch_len(&c->wbuf, h, '*', npairs * 2);
    }
}

void
reply_help(struct conn *c, const char *cmd, const char *const *lines)
{
    size_t n = 0;
    char head[128];
    while (lines[n]) {
        n++;
    }
    reply_array(c, n + 3);
    snprintf(head, sizeof(head),
             "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", cmd);
    reply_simple(c, head);
    for (size_t i = 0; i < n; i++) {
        reply_simple(c, lines[i]);
    }
    reply_simple(c, "HELP");
    reply_simple(c, "    Print this help.");
}
