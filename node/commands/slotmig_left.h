/* node/commands/slotmig_left.h: what an atomic slot migration's target does
 * with the copies an import left behind (slotmig_left.c; docs/cluster.md,
 * "Copies left behind"). Internal to slotmig_import.c, which owns the import. */
#pragma once
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
/* Deletes the shard's keys (database 0) of the slots set in slots (a bitmap
 * of SLOT_COUNT bits) that another node serves in the adopted topology (and
 * that this node does not import with SETSLOT IMPORTING), each
 * logged as DEL (the expiry hook), so the WAL and the replicas drop them too;
 * never keys of a slot this node serves or that no node serves. A serving
 * primary only (else nothing). One walk of the keyspace, as RVMIGSLOTS DROP.
 * Returns how many keys went. */
size_t slotmig_drop_left(struct shard *s, const uint8_t *slots);
/* Deletes the shard's keys (database 0) of the slots set in slots, whoever
 * serves them, each logged as DEL as above (RVMIGSLOTS DROP; the caller
 * leaves out the slots it keeps). Returns how many keys went. */
size_t slotmig_delete_slots(struct shard *s, const uint8_t *slots);
/* Appends to keys each key of ks in a slot set in slots (a bitmap of
 * SLOT_COUNT bits), as its length (size_t) then its bytes: one walk of the
 * keyspace, collected before anything is deleted. */
void slotmig_keys_of(struct ks *ks, const uint8_t *slots, struct buf *keys);
