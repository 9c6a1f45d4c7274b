/* node/commands/slotmig.h: atomic slot migration's hooks for the rest of the
 * node (cmd_migslots.c; docs/cluster.md, "Atomic slot migration"). A shard's
 * state (shard_env.slotmig) exists once CLUSTER MIGRATESLOTS ran on it. */
#pragma once
#include "node/types/obj.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct shard;

enum slotmig_route {
    SLOTMIG_NONE,    /* route as usual (a job takes the keys of the writes the
                      * shard logs, persist_set_tap, not the declared ones) */
    SLOTMIG_REFUSED, /* the slot's writes are paused: -TRYAGAIN was replied */
};
/* Dispatch, for a command on a slot this node owns, while c->env->slotmig
 * is set; may_write: the command is not read-only. */
enum slotmig_route slotmig_check(struct conn *c, unsigned slot, bool may_write);
/* A job on this shard paused its slots' writes to commit (FLUSHALL and
 * FLUSHDB are refused meanwhile; earlier they make the copy start again). */
struct shard_env;
bool slotmig_paused(const struct shard_env *env);
/* The target's side: while a job sends this node slots (RVMIGSLOTS BEGIN
 * until the slots are this node's, RVMIGSLOTS DROP, or no record for 10 s)
 * their keys are hidden from the commands that enumerate keys (KEYS, SCAN,
 * RANDOMKEY, DBSIZE, COUNTKEYSINSLOT, GETKEYSINSLOT, INFO keyspace).
 * slotmig_hiding: some key of ks may be hidden (one branch when none is);
 * slotmig_hidden: the slot's keys are; slotmig_hidden_keys: how many keys
 * are hidden (from the per-slot counts); slotmig_hidden_volatile: how many
 * of them have a TTL (walks the keyspace). */
struct ks;
bool slotmig_hiding(const struct shard_env *env, const struct ks *ks);
bool slotmig_hidden(const struct shard_env *env, unsigned slot);
size_t slotmig_hidden_keys(const struct shard_env *env);
size_t slotmig_hidden_volatile(struct shard_env *env);
/* DEBUG SLOTMIG-HOLD 1: this shard's jobs keep streaming (an RVMIGSLOTS STATE
 * every 2 ms when there is nothing to send) but never pause writes nor commit, so that
 * tests can cancel or break a move half way; 2: also a key sent in chunks
 * stops after its first chunk (the same heartbeat); 0: they go on. */
void slotmig_hold(struct conn *c, int mode);
/* A checkpoint's record of the shard's open import (persist_set_shard_state_fn):
 * its RVMIGSLOTS BEGIN, and STATE committing when its source said so, so that
 * recovery reopens it as a replay of the WAL would. */
void slotmig_emit_state(struct shard *s, obj_emit_fn *fn, void *arg);
/* The shard stops: the job and its log go (before its event base). */
void slotmig_shard_destroy(struct shard *s);
