/* node/features/tracking.h: client-side caching (CLIENT TRACKING), as Redis.
 *
 * Default mode: the keys a tracking client's read-only commands read are
 * remembered in the shard's table (key -> client ids); the next write of
 * such a key (a write command, expiry, eviction) sends each of those clients
 * one invalidation and forgets the key. FLUSHDB/FLUSHALL send every tracking
 * client of the shard a null invalidation ("flush everything"). BCAST: every
 * write of a key under one of the client's prefixes is announced, whatever
 * the client read; its registrations are copied to every shard of the node,
 * so a write on any shard reaches it. OPTIN/OPTOUT with CLIENT CACHING pick
 * which reads are remembered; NOLOOP skips the client's own writes.
 *
 * An invalidation is a RESP3 push ["invalidate", [key]] on the client's own
 * connection, or with REDIRECT id on the target's: a RESP3 push, or a RESP2
 * `message` on __redis__:invalidate when the target is subscribed. A target on
 * another shard is reached through that shard's inbox (a client id names its
 * shard); a target that is gone marks the redirect broken and, for a RESP3
 * client, sends it ["tracking-redir-broken", id].
 *
 * Reads are only tracked on the shard that owns the key (cluster routing), so
 * the key table is per shard. Nothing here runs while no client of the shard
 * tracks: the dispatcher tests env->tracking, NULL until then. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct shard;
struct cmd_spec;

enum trk_opt {
    TRK_BCAST = 1u << 0,
    TRK_OPTIN = 1u << 1,
    TRK_OPTOUT = 1u << 2,
    TRK_NOLOOP = 1u << 3,
};

/* CLIENT TRACKING ON with opts (enum trk_opt), redirect (0: none) and prefixes
 * (BCAST). Checks Redis's rules against c's current mode; on a refusal
 * returns false with Redis's error text (without "ERR ") in err. */
bool tracking_on(struct conn *c, unsigned opts, uint64_t redirect, const struct rv_str *prefixes,
                 size_t nprefix, char *err, size_t errsz);
/* CLIENT TRACKING OFF (and RESET): stop tracking; c may still be a redirect target. */
void tracking_off(struct conn *c);
/* Whether client id exists on this node as far as c's shard can tell now
 * (an id of another shard is taken on trust: checked at each delivery). */
bool tracking_target_known(struct conn *c, uint64_t id);
/* CLIENT CACHING YES|NO; false with Redis's error text when not allowed. */
bool tracking_caching(struct conn *c, bool yes, char *err, size_t errsz);
/* CLIENT TRACKINGINFO's reply. */
void tracking_reply_info(struct conn *c);
/* The redirect as CLIENT GETREDIR and CLIENT LIST's redir= show it: -1 when
 * not tracking, 0 without REDIRECT. */
int64_t tracking_redirect(const struct conn *c);
/* CLIENT LIST's letters for c (t, R, B), appended at out; returns how many. */
size_t tracking_letters(const struct conn *c, char *out);

/* The connection whose request the dispatcher runs (NULL between requests):
 * its invalidations wait until its reply is written (tracking_after_top), so
 * a key that expires while a multi-key reply is being written cannot put a
 * push inside that reply. */
extern _Thread_local struct conn *tracking_running;

/* Dispatcher, after a command c ran without error, while env->tracking is
 * set: remember the keys of a read, invalidate those of a write (wrote: it
 * changed something; cmd is then cmd_effective's, the command whose keys say
 * what it modified); a keyless FLUSHDB/FLUSHALL invalidates everything. */
void tracking_after_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
                         bool wrote);
/* Dispatcher, after each top-level command of a connection with c->trk:
 * write the invalidations held back while it ran EXEC or a script, and end
 * CLIENT CACHING's one-command scope. */
void tracking_after_top(struct conn *c);
/* c's command created key where the command's other writes are not signalled
 * (XGROUP CREATE ... MKSTREAM): invalidate it as a write of c. */
void tracking_key_written(struct conn *c, struct rv_str key);
/* A key expired or was evicted on shard s. */
void tracking_key_gone(struct shard *s, struct rv_str key);
/* The connection is closing. */
void tracking_release(struct conn *c);
/* Free the shard's state (its connections are closed; other shards' BCAST
 * registrations may remain). */
void tracking_shard_destroy(struct shard *s);

/* INFO: tracking clients of the shard; remembered keys, (key, client) items,
 * and BCAST prefixes. */
size_t tracking_clients(const struct shard *s);
void tracking_totals(const struct shard *s, size_t *keys, size_t *items, size_t *prefixes);
