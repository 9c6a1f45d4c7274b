/* node/persist/replay.h: run commands on a shard without a client: WAL recovery,
 * checkpoint loading, RESTORE. A replay context owns a socketless connection
 * (CONN_REPLAY) whose replies are discarded after each command; only whether
 * the command failed is kept. Runs on the shard's own thread. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shard;
struct replay;

struct replay *replay_create(struct shard *s);
void replay_destroy(struct replay *r); /* NULL is a no-op */
/* Execute argv as if a client sent it. Returns true when it did not reply
 * with an error; otherwise the error line (without "-" and CRLF) is copied
 * to err. Unknown commands and wrong arity are errors too. */
/* The database the next commands run in (records start in 0; RESTORE runs
 * in its caller's). */
void replay_set_db(struct replay *r, unsigned db);
bool replay_exec(struct replay *r, int argc, const struct rv_str *argv, char *err, size_t errsz);
