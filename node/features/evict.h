/* node/features/evict.h: memory charging, budgets and eviction of one shard.
 *
 * Charging. A shard is charged every byte its thread holds: keys, values,
 * expiry records, tables, connection buffers. The figure is jemalloc's
 * per-thread count of usable bytes allocated minus freed (rv_mem_thread_net),
 * so the hot path pays nothing, plus what the main thread allocated for the
 * shard before it started (creation, recovery), corrected for memory handed
 * between threads (inter-shard messages, checkpoint buffers).
 *
 * Budgets (0 = off): max_shard_bytes per shard; maxmemory for the node, split
 * evenly over its shards; max_process_bytes for the sum of all shards' charges.
 * Over a budget, a command flagged CMD_DENYOOM first evicts by
 * maxmemory-policy for at most a time slice (maxmemory-eviction-tenacity); the
 * shard's timer continues where that stopped. Under noeviction, or when no key
 * qualifies, the command is refused with Redis's -OOM error. Reads and
 * deletes always run. Each shard evicts only its own keys.
 *
 * Choice: maxmemory-samples random keys per round (all keys or only those with
 * a deadline) feed a 16-entry pool of the best candidates seen (most idle,
 * least frequently used, or nearest deadline); the best live candidate goes.
 * Evictions go through ks_evict, so the WAL logs them as DEL. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shard;
struct buf;
struct evict;

enum evict_policy {
    EVICT_NOEVICTION = 0,
    EVICT_ALLKEYS_LRU,
    EVICT_ALLKEYS_LFU,
    EVICT_ALLKEYS_RANDOM,
    EVICT_VOLATILE_LRU,
    EVICT_VOLATILE_LFU,
    EVICT_VOLATILE_RANDOM,
    EVICT_VOLATILE_TTL,
};

/* The first member of a shard's eviction state: what the request path checks
 * inline before calling in (one load and a branch while no budget is set). */
struct evict_hot {
    bool armed; /* some budget is set: DENYOOM commands call evict_admit */
};
static inline const struct evict_hot *
evict_hot(const struct evict *ev)
{
    return (const struct evict_hot *)(const void *)ev;
}

/* Redis's maxmemory-policy names; -1 when unknown. */
int evict_policy_parse(const char *name);
const char *evict_policy_name(int policy);

struct evict *evict_create(void);
void evict_destroy(struct evict *ev);
/* Bytes the shard was given by another thread before it ran (its creation). */
void evict_add_carry(struct evict *ev, long long bytes);

/* Re-derive budgets and policy from the shard's (new) config snapshot. */
void evict_adopt_cfg(struct shard *s);

/* Shard thread only. */
long long evict_shard_used(struct shard *s); /* this shard's charge */
long long evict_node_used(struct shard *s);  /* all shards (others as last published) */
/* Before a CMD_DENYOOM command when armed: false when it must be refused (-OOM). */
bool evict_admit(struct shard *s);
/* From the shard timer: publish the charge, track the peak, continue evicting
 * for a slice; true while still over budget with something left to evict
 * (call again in a millisecond). */
bool evict_cron(struct shard *s);
uint64_t evict_evicted_keys(struct shard *s);
bool evict_lfu(struct shard *s); /* an LFU policy is in force */
/* INFO memory, and MEMORY STATS / DOCTOR figures. */
void evict_info_memory(struct shard *s, struct buf *b);
long long evict_peak(struct shard *s);
long long evict_shard_limit(struct shard *s); /* effective budget of this shard, 0 = none */
size_t evict_clients_mem(struct shard *s);    /* connection buffers of this shard */
