/* node/commands/migrate_stage.h: the target's side of MIGRATE of a big key
 * (migrate_stage.c; docs/cluster.md, "Moving slots").
 *
 * A source sends a big key in bounded chunks (slotmig_chunk.h's records with
 * RESTORE-STAGE in front) into a staging value: a keyspace of the shard's own
 * that no command reads (KEYS, SCAN, DBSIZE, RANDOMKEY, EXISTS and every
 * lookup see the shard's databases only). COMMIT moves the staging value to
 * the key in O(1), with RESTORE's TTL, REPLACE and BUSYKEY rules:
 *   RESTORE-STAGE RESTORE key abs-ms payload (the first chunk: a DUMP payload;
 *                                         replaces a staging value of key;
 *                                         abs-ms is not used: COMMIT sets it)
 *   RESTORE-STAGE RESERVE key bytes         (a big string's room, not logged)
 *   RESTORE-STAGE APPEND key HSET|SADD|ZADD|RPUSH|APPEND arg ...
 *   RESTORE-STAGE COMMIT key ttl [REPLACE] [ABSTTL]
 *   RESTORE-STAGE ABORT key
 *   RESTORE-STAGE LOAD <command> key arg ... (a staging value in a checkpoint
 *                                         or a full sync: mstage_emit)
 * (Named as a RESTORE: the cluster routing lets a MIGRATE's RESTORE into a
 * slot this node imports even while its view of the owner's MIGRATING state
 * lags, node/server/dispatch.c's route_open, and CMD_ASKING spares ASKING.)
 * Each is logged as is (COMMIT with its absolute deadline), one bounded
 * record per chunk, so the WAL's replay and the replicas build the same
 * staging value and see the key only at its COMMIT. A staging value is owned
 * by the connection that began it: it goes (logged as ABORT) when that
 * connection closes, or after MSTAGE_IDLE_MS without a chunk (the shard's
 * timer, on a primary). Checkpoints and full syncs hold the staging values
 * as LOAD records in the node's state record, taken at the snapshot point: a
 * COMMIT logged after it (replayed, or streamed to a replica) finds its value
 * whole. */
#pragma once
#include "node/types/obj.h"
#include "proto/resp.h"

#include <stddef.h>

struct conn;
struct shard;
struct shard_env;

#define MSTAGE_IDLE_MS 30000 /* a staging value without a chunk for this long goes */
#define MSTAGE_MAX 1024      /* staging values per shard */

/* The connection goes: its staging values go with it (logged). */
void mstage_conn_gone(struct conn *c);
/* The shard's timer: staging values idle past MSTAGE_IDLE_MS go (logged). */
void mstage_cron(struct shard *s);
/* Staging values on this shard (DEBUG MSTAGE-COUNT, tests). */
size_t mstage_count(const struct shard_env *env);
/* The staging values as RESTORE-STAGE LOAD commands, for the state record
 * of a checkpoint or a full sync (its snapshot point: written at once). */
void mstage_emit(struct shard *s, obj_emit_fn *fn, void *arg);
/* The shard stops: its staging values go (before its keyspaces). */
void mstage_shard_destroy(struct shard *s);
