/* node/core/reply.h: replies to a client, in its protocol (RESP2 or RESP3).
 * Handlers call these; protocol details stay in proto/resp_write.c. Each call
 * appends to the connection's output buffer; nothing is written to the socket
 * until the shard flushes pending connections after the read batch. */
#pragma once
#include "node/core/errs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

void reply_ok(struct conn *c);
void reply_simple(struct conn *c, const char *s);
void reply_err(struct conn *c, enum rv_client_err e);
/* Formatted error; the text must start with its code ("ERR ...", "WRONGTYPE ..."). */
void reply_errf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void reply_err_arity(struct conn *c, const char *cmdname);
void reply_int(struct conn *c, int64_t v);
void reply_bulk(struct conn *c, const void *p, size_t n);
void reply_bulk_cstr(struct conn *c, const char *s);
void reply_bulk_int(struct conn *c, int64_t v);
void reply_bulk_u64(struct conn *c, uint64_t v); /* e.g. SCAN cursors */
void reply_bulk_ldouble(struct conn *c, long double v);
void reply_double(struct conn *c, double v);
void reply_bool(struct conn *c, bool v);
void reply_null(struct conn *c);       /* RESP2 $-1, RESP3 _ */
void reply_null_array(struct conn *c); /* RESP2 *-1, RESP3 _ */
void reply_array(struct conn *c, size_t n);
void reply_map(struct conn *c, size_t npairs);
void reply_set(struct conn *c, size_t n);
void reply_verbatim(struct conn *c, const char *s, size_t n); /* "txt" verbatim */
/* A HELP reply: "<CMD> <subcommand> ...", the lines, then HELP's own line. */
void reply_help(struct conn *c, const char *cmd, const char *const *lines);
/* Unknown-length aggregate: begin returns a handle, end writes the count. */
size_t reply_defer(struct conn *c);
void reply_defer_array(struct conn *c, size_t h, size_t n);
void reply_defer_map(struct conn *c, size_t h, size_t npairs);
