/* node/features/block.h: blocking commands (BLPOP, BLMOVE, BZPOPMIN, ...).
 *
 * A blocking handler first tries to serve at once. If it cannot, it calls
 * block_wait(): the connection stops processing input and waits on its keys
 * in FIFO order. After every write command the dispatcher signals the keys it
 * wrote; once the top-level command (a whole EXEC included) has finished, the
 * waiters of signalled keys re-run their command from a saved copy of argv,
 * oldest first. A re-run that still cannot serve keeps its place in line. A
 * per-connection timer answers the timeout reply at the deadline; closing the
 * connection, RESET or CLIENT UNBLOCK also end the wait. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct shard;
struct cmd_spec;

enum block_timeout_reply {
    BLOCK_REPLY_NULL_ARRAY, /* BLPOP, BRPOP, BLMPOP, BZPOPMIN/MAX, BZMPOP */
    BLOCK_REPLY_NULL,       /* BLMOVE, BRPOPLPUSH */
};

/* Parse a blocking timeout in seconds (fractions allowed) into an absolute
 * deadline in unix ms, 0 meaning forever. Replies Redis's error and returns
 * false when invalid. */
bool block_parse_timeout(struct conn *c, struct rv_str arg, int64_t *deadline_ms);

/* Wait on argv[keyidx[0..nkeys-1]] until the deadline (0 = forever). Inside
 * MULTI/EXEC a blocking command does not block: the timeout reply is sent at
 * once. While re-running a woken command, calling this again just keeps
 * waiting. Sends no reply otherwise. */
void block_wait(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
                const int *keyidx, int nkeys, int64_t deadline_ms, enum block_timeout_reply tr);

/* After a write command: mark its keys that have waiters as ready. */
void block_signal(struct shard *s, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
/* Every waited-for key may have changed (SWAPDB): each waiter re-runs its
 * command in its own database, and waits on when nothing is there. */
void block_signal_all(struct shard *s);
/* Serve the waiters of ready keys (called once the top-level command is done). */
void block_serve(struct shard *s);
bool block_pending(struct shard *s);
/* End c's wait without a reply (close, RESET). */
void block_release(struct conn *c);
/* CLIENT UNBLOCK: answer the timeout reply, or with_error the UNBLOCKED error. */
bool block_unblock(struct conn *c, bool with_error);
/* Every waiter of shard s gets the error err (without its '-') and goes on:
 * the shard became a replica, and a woken blocking command would write. */
void block_unblock_all(struct shard *s, const char *err);
/* Every waiter whose (first) key refuse() turns away, filling err (without
 * its '-'), gets that error and goes on: cluster mode, the key's slot is
 * served elsewhere now (Redis answers its blocked clients MOVED then). */
typedef bool block_refuse_fn(void *arg, struct rv_str key, char *err, size_t errsz);
void block_redirect(struct shard *s, block_refuse_fn *refuse, void *arg);
void block_shard_destroy(struct shard *s);
