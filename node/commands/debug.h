/* node/commands/debug.h: state the DEBUG command (cmd_debug.c) changes and other
 * modules read, and the dataset digest replication tests compare. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct ks;
struct ks_entry;

/* DEBUG SET-ACTIVE-EXPIRE: false stops every shard's active expiry cycle
 * (lazy expiry on access still runs). Relaxed atomic; read once per tick. */
bool debug_active_expire_on(void);

/* Order-independent digest of the keyspace's live keys (keys, types, values,
 * deadlines): XOR of per-key SHA-1s, so 20 zero bytes when empty. Independent
 * of insertion order and of encodings (listpack/hashtable, inline/pointer). */
void debug_digest_ks(struct ks *ks, int64_t now_ms, uint8_t out[20]);
/* Digest of one value (type and contents; not the key name nor deadline). */
void debug_digest_value(const struct ks_entry *e, uint8_t out[20]);
