/* node/commands/t_hash.h: the hash commands (HSET, HGET, ...); the hash object
 * is node/types/hash.h. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/hash.h"

#include <stdint.h>

struct shard;
/* Active reclaim of expired hash fields for the shard's keyspace, from the
 * shard cron; stops after about budget_us (0: does nothing). */
void hash_active_expire(struct shard *s, int64_t now, uint64_t budget_us);
/* Numbered databases: key of database db may have timed fields (MOVE, COPY ... DB);
 * SWAPDB swaps two databases' indexes; the shard's end frees them all. */
void hash_ttl_note(struct shard *s, unsigned db, struct rv_str key);
void hash_ttl_swap(struct shard *s, unsigned a, unsigned b);
void hash_ttl_free_all(struct shard *s);

struct conn;
/* Seed of the random stream of one command (hash_rng_next draws from it). */
uint64_t hash_rng_seed(struct conn *c);

CMD_HANDLER(hset);
CMD_HANDLER(hsetnx);
CMD_HANDLER(hget);
CMD_HANDLER(hmset);
CMD_HANDLER(hmget);
CMD_HANDLER(hgetall);
CMD_HANDLER(hdel);
CMD_HANDLER(hexists);
CMD_HANDLER(hlen);
CMD_HANDLER(hkeys);
CMD_HANDLER(hvals);
CMD_HANDLER(hincrby);
CMD_HANDLER(hincrbyfloat);
CMD_HANDLER(hstrlen);
CMD_HANDLER(hrandfield);
CMD_HANDLER(hscan);
CMD_HANDLER(hexpire);
CMD_HANDLER(hpexpire);
CMD_HANDLER(hexpireat);
CMD_HANDLER(hpexpireat);
CMD_HANDLER(httl);
CMD_HANDLER(hpttl);
CMD_HANDLER(hexpiretime);
CMD_HANDLER(hpexpiretime);
CMD_HANDLER(hpersist);
