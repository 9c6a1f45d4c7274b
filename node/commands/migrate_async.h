/* node/commands/migrate_async.h: MIGRATE of a big key without stalling the
 * shard (migrate_async.c; docs/cluster.md, "Moving slots").
 *
 * cmd_migrate.c hands a MIGRATE over when one of its keys is big (the
 * definition of slotmig_chunk.h: more than SMC_ELEMS elements or SMC_BYTES
 * bytes) and its client may wait (not inside MULTI, a script or a replay; in
 * database 0). The client then waits as a blocked one (its input waits,
 * other clients are served) while the shard's loop sends each big key in
 * chunks over a non-blocking link (slotmig_link.h) into a staging value on
 * the target (migrate_stage.h), building at most MJ_STEP_RECORDS records per
 * turn of the loop. The target must answer within `timeout` ms whenever
 * records are in flight (Redis's meaning: each step), else IOERR.
 *
 * Once every chunk of a key is acknowledged, the COMMIT that makes it the
 * target's key is one short blocking exchange (the shard waits for that one
 * reply, at most `timeout` ms, as Redis's MIGRATE waits for each RESTORE), and
 * the key is deleted here (logged DEL, unless COPY) in that same step, so no
 * write lands between the two. A write to a big key while its chunks go
 * (seen through a WATCH of the keys) sends it again from its current value
 * (RESTORE replaces the staging value), at most MJ_RESTARTS times, then the
 * key fails: `-IOERR the key was written during the transfer N times`. The
 * small keys of a KEYS form go last, in that final blocking step. A client
 * that disconnects ends the job: the link closes and the target drops its
 * staging values; the keys stay here. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct shard;

#define MJ_STEP_RECORDS 2 /* chunk records built per turn of the loop */
#define MJ_RESTARTS 3     /* a big key written meanwhile is sent again at most this often */

struct migrate_opts {
    bool copy, replace;
    const struct rv_str *user, *pass;
    int first, nkeys; /* the keys: argv[first .. first + nkeys) */
    int64_t timeout;
};

/* Whether MIGRATE of keys[0..n) goes the asynchronous way (a key is big and
 * c may wait). */
bool migrate_async_wanted(struct conn *c, const struct rv_str *keys, int n);
/* Start it: dial host:port (the shard waits, at most o->timeout, as today),
 * then c waits for the reply. Replies itself on a failure to connect. */
void migrate_async_start(struct conn *c, const struct migrate_opts *o, const char *host,
                         const char *port, const struct rv_str *keys, int n);
/* c goes: its job ends, nothing is deleted here. */
void migrate_async_conn_gone(struct conn *c);
/* The shard stops: its jobs end. */
void migrate_async_shard_destroy(struct shard *s);
