/* node/obs/slowlog.h: the shard's slow log (SLOWLOG GET/LEN/RESET): commands whose
 * handler took at least slowlog-log-slower-than µs, newest first, at most
 * slowlog-max-len entries. Arguments are kept as Redis keeps them: at most 32
 * (the last one saying how many more there were), each at most 128 bytes
 * followed by "... (N more bytes)". Only the shard's thread touches it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct conn;
struct cmd_spec;
struct rv_str;
struct slowlog;

struct slowlog *slowlog_create(void);
void slowlog_destroy(struct slowlog *sl);
/* Secrets (AUTH and HELLO passwords, ACL SETUSER password rules, CONFIG SET
 * requirepass/masterauth values, MIGRATE AUTH) are stored as "(redacted)". */
void slowlog_add(struct slowlog *sl, struct conn *c, const struct cmd_spec *cmd, int argc,
                 struct rv_str *argv, uint64_t us, int64_t unix_s, size_t maxlen);
size_t slowlog_len(const struct slowlog *sl);
/* Drop every entry (SLOWLOG RESET); NULL is a no-op. */
void slowlog_reset(struct slowlog *sl);

/* Reading the entries, newest first (SLOWLOG GET): slowlog_first (NULL when
 * empty or sl is NULL), then slowlog_next until NULL. A view's pointers are
 * valid until the next slowlog_add or slowlog_reset. */
struct slowlog_entry;
struct slowlog_view {
    uint64_t id;
    int64_t time; /* unix seconds */
    uint64_t us;
    int argc;
    const struct rv_str *argv; /* as stored: truncated, secrets redacted */
    const char *addr;
    const char *name; /* client name, NULL when unset */
};
const struct slowlog_entry *slowlog_first(const struct slowlog *sl);
const struct slowlog_entry *slowlog_next(const struct slowlog_entry *e);
void slowlog_entry_view(const struct slowlog_entry *e, struct slowlog_view *v);
