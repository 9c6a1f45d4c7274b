/* node/commands/slotmig_left.h: what an atomic slot migration's target does
 * with the copies an import left behind (slotmig_left.c; docs/cluster.md,
 * "Copies left behind"). Internal to slotmig_import.c, which owns the import. */
#pragma once
#include "cluster/slot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct ks;
struct shard;

/* The shard's node is a primary both in the data plane and in its adopted
 * topology, which holds it, and it is not loading: the only node that deletes
 * keys on its own (a replica follows its primary's DELs). */
bool slotmig_serving_primary(struct shard *s);

/* The deletion of an import's copies, in slices of about a millisecond (or
 * 8 MB of entries freed), one per call, so that a big import's copies do not
 * stall the shard: the keys (database 0) of the import's slots that another
 * node serves in the adopted topology (checked again at each slice) and that
 * this node does not import with SETSLOT IMPORTING, each logged as DEL (the
 * expiry hook), so the WAL and the replicas drop them too; never keys of a
 * slot this node serves or that no node serves. */
struct slotmig_drop {
    uint8_t slots[SLOT_COUNT / 8]; /* the import's */
    uint64_t cursor;               /* ks_scan's */
    size_t deleted;
    uint64_t slices, longest_us; /* for the log line */
    bool active;
};
/* Starts a deletion of the keys of the slots set in slots (a bitmap of
 * SLOT_COUNT bits): false, with nothing started, when the node is not a
 * serving primary. */
bool slotmig_drop_begin(struct shard *s, struct slotmig_drop *d, const uint8_t *slots);
/* One slice: true while keys are left to walk; false once the walk is over,
 * or stopped because the node is no longer a serving primary (d->active is
 * false then; d->deleted says how many keys went). */
bool slotmig_drop_step(struct shard *s, struct slotmig_drop *d);
/* Deletes the shard's keys (database 0) of the slots set in slots, whoever
 * serves them, each logged as DEL as above, in one walk (RVMIGSLOTS DROP; the
 * caller leaves out the slots it keeps). Returns how many keys went. */
size_t slotmig_delete_slots(struct shard *s, const uint8_t *slots);
/* Appends to keys each key of ks in a slot set in slots (a bitmap of
 * SLOT_COUNT bits), as its length (size_t) then its bytes: one walk of the
 * keyspace, collected before anything is deleted. */
void slotmig_keys_of(struct ks *ks, const uint8_t *slots, struct buf *keys);
