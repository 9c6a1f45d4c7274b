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
