/* cluster/topo.h: the cluster topology as a deterministic state machine.
 *
 * The Raft log carries topology COMMANDS (encoded by topo_enc_*: a version byte,
 * a type byte, then fixed little-endian fields; no pointers, clocks or host
 * state). Every process applies the committed commands, in order, with
 * topo_apply(): the same bytes give the same snapshot, and the same error text,
 * on every host. A snapshot (struct topo) is immutable once published; shard
 * threads adopt one by pointer swap, so the hot path's slot check is
 * topo_slot_node(): one table load.
 *
 * Ownership: snapshots are reference counted (atomically). topo_apply() returns
 * a reference the caller owns; topo_get() takes another one, for each shard that
 * adopts it; topo_put() drops one, from any thread, and the last put frees it.
 * A new snapshot shares the parts (node table, slot table, migration table)
 * that the command did not change, so each part is refcounted too.
 *
 * Model: Redis Cluster's. Nodes have a 40-hex id, a shard id, address, role
 * (primary or replica of a primary), config epoch, flags and the Raft server id
 * of the process hosting them (several nodes, one per shard thread, share a
 * host). Each of the 16384 slots has an owner (a primary) or none, plus
 * SETSLOT's migrating/importing state. current_epoch and version (count of
 * applied commands that changed something) complete it.
 *
 * Redis's client-facing errors are returned verbatim ("ERR Slot 5 is already
 * busy"); the command layer adds '-' and CRLF. Checks that depend on the node
 * receiving the command (myself, its keys) stay with the command layer, except
 * SETSLOT's, which carry the receiving node as `by`. */
#pragma once
#include "base/buf.h"
#include "cluster/slot.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOPO_ID_LEN 40
#define TOPO_IP_MAX 45        /* longest textual IPv6 address */
#define TOPO_HOSTNAME_MAX 255 /* a DNS name */
#define TOPO_MAX_NODES 8192
#define TOPO_NONE 0xFFFFu /* "no node" in slot owners and primary indices */
#define TOPO_ERR_MAX 160  /* an err buffer this big never truncates */

enum topo_role { TOPO_PRIMARY = 0, TOPO_REPLICA = 1 };

/* Node flags besides role and myself, in CLUSTER NODES order. */
enum topo_flag {
    TOPO_F_PFAIL = 1u << 0,      /* fail? */
    TOPO_F_FAIL = 1u << 1,       /* fail */
    TOPO_F_HANDSHAKE = 1u << 2,  /* handshake */
    TOPO_F_NOADDR = 1u << 3,     /* noaddr */
    TOPO_F_NOFAILOVER = 1u << 4, /* nofailover */
    /* Not met yet (never shown in CLUSTER NODES): a new node knows only itself,
     * as redis-cli --cluster expects, until a CLUSTER MEET names it or is sent to it. */
    TOPO_F_LONE = 1u << 5,
    TOPO_F_ALL = (1u << 6) - 1,
};

/* One node, as stored in a snapshot (read-only to callers). Strings are
 * NUL-terminated; hostname may be empty. */
struct topo_node {
    char id[TOPO_ID_LEN + 1];
    char shard_id[TOPO_ID_LEN + 1];
    char ip[TOPO_IP_MAX + 1];
    char hostname[TOPO_HOSTNAME_MAX + 1];
    uint16_t port;
    uint16_t cport;
    uint8_t role;     /* enum topo_role */
    uint16_t flags;   /* enum topo_flag bits */
    uint16_t primary; /* replicas: index of the primary, or TOPO_NONE (orphan) */
    uint64_t config_epoch;
    uint64_t host_id; /* Raft server id of the process the node lives in */
};

/* SETSLOT state of one slot. `mig_by` set MIGRATING towards `mig_to`;
 * `imp_by` set IMPORTING from `imp_from`. Unused halves are TOPO_NONE. */
struct topo_mig {
    uint16_t slot;
    uint16_t mig_by, mig_to;
    uint16_t imp_by, imp_from;
};

struct topo_range {
    uint16_t lo, hi; /* inclusive */
};

struct tp_nodes; /* private parts (topo_int.h) */
struct tp_slots;
struct tp_mig;

/* A snapshot. Fields are read-only; the tp_ parts are private. Node indices
 * are valid for this snapshot only (FORGET renumbers): keep ids across
 * snapshots. */
struct topo {
    const struct topo_node *nodes; /* [nnodes], in insertion order */
    uint32_t nnodes;
    const uint16_t *slots;       /* [SLOT_COUNT]: owner index or TOPO_NONE */
    const struct topo_mig *migs; /* [nmigs], sorted by slot */
    uint32_t nmigs;
    uint64_t version;
    uint64_t current_epoch;
    atomic_uint refs;
    struct tp_nodes *pn;
    struct tp_slots *ps;
    struct tp_mig *pm;
};

/* ---- lifecycle ---- */

/* The empty topology (version 0, epoch 0, no nodes); the caller owns it. */
struct topo *topo_create(void);
/* Another reference to t (t may be NULL). Any thread. */
struct topo *topo_get(const struct topo *t);
/* Drop one reference; the last frees. NULL is a no-op. Any thread. */
void topo_put(struct topo *t);

/* ---- commands: each appends one encoded entry to b ----
 * Ids are NUL-terminated 40-char lowercase hex. RV_OK, or RV_EINVAL for a bad
 * id, string, slot or range (then nothing is appended). */

/* What each command does (one cluster-wide state, where Redis keeps a view
 * per node); refusals use Redis's texts unless marked (ours):
 *   NODE_ADD      a new node; refused if the id exists (ours), if there are
 *                 TOPO_MAX_NODES (ours), or for a replica of an unknown node or
 *                 of a replica. current_epoch rises to its config epoch.
 *   NODE_FORGET   removes it: its slots become unassigned, its replicas
 *                 orphans (primary TOPO_NONE), SETSLOT states by or towards it
 *                 go; indices above it move down.
 *   NODE_SET_ADDR, NODE_SET_FLAGS  unchanged when equal.
 *   SLOTS_ADD     busy / specified multiple times, checked slot by slot in
 *                 argument order as Redis does; refused for a replica (ours).
 *                 Ends the node's IMPORTING of those slots.
 *   SLOTS_DEL     already unassigned / specified multiple times. SLOTS_FLUSH:
 *                 all the node's slots (unchanged when it has none).
 *   REPLICATE     the node becomes a replica (shard id: its primary's); a
 *                 slotless primary's own replicas follow it to the new primary.
 *   PROMOTE       replica -> primary with config epoch ++current_epoch; it
 *                 takes its primary's slots, the old primary and its other
 *                 replicas become its replicas, the old primary's SETSLOT
 *                 states go. An orphan replica becomes an empty primary.
 *   SET_CONFIG_EPOCH  refused above INT64_MAX or when non-zero; Redis's "only
 *                 when the node does not know any other node" is left to the
 *                 command layer. BUMP_EPOCH: Redis's BUMPED/STILL rule (see
 *                 topo_apply).
 *   SLOT_*        CLUSTER SETSLOT as received by node `by` (a primary):
 *                 MIGRATING (by owns the slot) and IMPORTING (by does not)
 *                 record by's side; STABLE clears by's sides; NODE assigns the
 *                 slot, ends by's MIGRATING if given away and by's IMPORTING if
 *                 taken, with Redis's epoch bump for the latter. One importer
 *                 and one migrator per slot. */
enum topo_cmd_type {
    TOPO_CMD_NODE_ADD = 1,
    TOPO_CMD_NODE_FORGET = 2,
    TOPO_CMD_NODE_SET_ADDR = 3,
    TOPO_CMD_NODE_SET_FLAGS = 4,
    TOPO_CMD_SLOTS_ADD = 5,
    TOPO_CMD_SLOTS_DEL = 6,
    TOPO_CMD_SLOTS_FLUSH = 7,
    TOPO_CMD_REPLICATE = 8,
    TOPO_CMD_PROMOTE = 9,
    TOPO_CMD_SET_CONFIG_EPOCH = 10,
    TOPO_CMD_BUMP_EPOCH = 11,
    TOPO_CMD_SLOT_MIGRATING = 12,
    TOPO_CMD_SLOT_IMPORTING = 13,
    TOPO_CMD_SLOT_STABLE = 14,
    TOPO_CMD_SLOT_NODE = 15,
    TOPO_CMD_BATCH = 16,
};

/* NODE_ADD's fields. primary_id is NULL or "" for a primary. A replica takes
 * its primary's shard id whatever shard_id says (Redis 7.2 does the same). */
struct topo_node_spec {
    const char *id;
    const char *shard_id;
    const char *ip; /* may be "" (unknown yet) */
    uint16_t port;
    uint16_t cport;
    const char *hostname; /* may be NULL or "" */
    enum topo_role role;
    const char *primary_id;
    uint64_t config_epoch;
    uint16_t flags;
    uint64_t host_id;
};

int topo_enc_node_add(struct buf *b, const struct topo_node_spec *s);
int topo_enc_node_forget(struct buf *b, const char *id);
int topo_enc_node_set_addr(struct buf *b, const char *id, const char *ip, uint16_t port,
                           uint16_t cport, const char *hostname);
int topo_enc_node_set_flags(struct buf *b, const char *id, uint16_t flags);
/* n ranges, 1..SLOT_COUNT of them, each lo <= hi < SLOT_COUNT. */
int topo_enc_slots_add(struct buf *b, const char *id, const struct topo_range *r, size_t n);
int topo_enc_slots_del(struct buf *b, const struct topo_range *r, size_t n);
int topo_enc_slots_flush(struct buf *b, const char *id);
int topo_enc_replicate(struct buf *b, const char *replica_id, const char *primary_id);
int topo_enc_promote(struct buf *b, const char *replica_id);
int topo_enc_set_config_epoch(struct buf *b, const char *id, uint64_t epoch);
int topo_enc_bump_epoch(struct buf *b, const char *id);
/* CLUSTER SETSLOT <slot> MIGRATING|IMPORTING|NODE <node_id> / STABLE, as sent
 * to node `by_id`. type is one of TOPO_CMD_SLOT_*; node_id is ignored (may be
 * NULL) for STABLE. */
int topo_enc_setslot(struct buf *b, enum topo_cmd_type type, unsigned slot, const char *by_id,
                     const char *node_id);

/* BATCH: several commands applied as one entry, all or nothing (the first
 * refused or malformed one refuses the whole entry, with its error). Atomic
 * slot migration commits its slots and the target's epoch bump as one. The
 * entry is [version][BATCH][u16 count] then per command [u32 len][command];
 * a batch holds 1..TOPO_BATCH_MAX commands, none of them a batch. Build it
 * with topo_batch_start, then topo_batch_add per encoded command. */
#define TOPO_BATCH_MAX 65535u
void topo_batch_start(struct buf *b);
/* Appends cmd (len bytes, one encoded command) to the batch that starts at
 * byte `start` of b. RV_EINVAL when cmd is a batch or the batch is full. */
int topo_batch_add(struct buf *b, size_t start, const void *cmd, size_t len);

/* ---- apply ---- */

enum topo_res {
    TOPO_CHANGED = 1,     /* *next is a new snapshot, version + 1 */
    TOPO_UNCHANGED = 0,   /* valid no-op; *next is another reference to cur */
    TOPO_EREFUSED = -1,   /* the command is refused; err holds Redis's text */
    TOPO_EMALFORMED = -2, /* the entry does not decode; err says why */
};

/* Apply one committed entry to cur (not NULL). Always sets *next to a
 * snapshot the caller owns (a new reference to cur unless TOPO_CHANGED). err
 * (errsz >= 1) gets the error text on failure, "" otherwise. BUMP_EPOCH is
 * TOPO_CHANGED for Redis's BUMPED and TOPO_UNCHANGED for STILL; the epoch to
 * reply is the node's config_epoch in *next. Deterministic: depends only on
 * cur and the bytes. */
enum topo_res topo_apply(const struct topo *cur, const void *entry, size_t len, struct topo **next,
                         char *err, size_t errsz);

/* ---- lookups ---- */

/* The node serving slot, or NULL when unassigned. The hot path's check. */
static inline const struct topo_node *
topo_slot_node(const struct topo *t, unsigned slot)
{
    uint16_t i = t->slots[slot & (SLOT_COUNT - 1)];
    return i == TOPO_NONE ? NULL : &t->nodes[i];
}

/* Index of the node with this id (len bytes, not necessarily NUL-terminated),
 * or -1. O(log n). */
int topo_find(const struct topo *t, const char *id, size_t len);
const struct topo_node *topo_node_by_id(const struct topo *t, const char *id, size_t len);
/* SETSLOT state of slot, or NULL when stable. O(log nmigs). */
const struct topo_mig *topo_slot_mig(const struct topo *t, unsigned slot);
/* Indices of matching nodes, in index order, into out[0..cap); returns the
 * total count (which may exceed cap). */
size_t topo_host_nodes(const struct topo *t, uint64_t host_id, uint16_t *out, size_t cap);
size_t topo_replicas(const struct topo *t, unsigned primary, uint16_t *out, size_t cap);
size_t topo_primaries(const struct topo *t, uint16_t *out, size_t cap);
/* Nodes with this shard id (the primary and its replicas), CLUSTER SHARDS. */
size_t topo_shard_nodes(const struct topo *t, const char *shard_id, uint16_t *out, size_t cap);
/* One node per distinct shard id (its first in index order), CLUSTER SHARDS'
 * outer list; then topo_shard_nodes() for each. O(nnodes^2) compares of ids:
 * an admin command over at most a few thousand nodes. */
size_t topo_shards(const struct topo *t, uint16_t *out, size_t cap);
/* Slots owned by node idx. */
unsigned topo_node_slot_count(const struct topo *t, unsigned idx);

/* Contiguous runs of assigned slots with one owner, in slot order (CLUSTER
 * SLOTS). Start with *pos = 0; each call fills r and *owner and returns true,
 * or false when done. With only_owner != TOPO_NONE, runs of that node only
 * (CLUSTER SHARDS' "slots", CLUSTER NODES' ranges). */
bool topo_next_range(const struct topo *t, unsigned *pos, unsigned only_owner, struct topo_range *r,
                     uint16_t *owner);

/* CLUSTER FORGET's checks that depend on the receiving node, for the command
 * layer to run before proposing NODE_FORGET (apply cannot: every host applies
 * it). True when allowed; else err gets Redis's text. */
bool topo_forget_check(const struct topo *t, const char *myself_id, const char *id, char *err,
                       size_t errsz);

/* ---- snapshot encoding (the Raft snapshot) ---- */

/* Append the whole state to b. Deterministic: equal topologies encode to equal
 * bytes. */
void topo_encode(const struct topo *t, struct buf *b);
/* Decode and validate; *out is a new snapshot the caller owns. RV_OK, or
 * RV_ECORRUPT for malformed bytes (err says what), never a crash. */
int topo_decode(const void *p, size_t len, struct topo **out, char *err, size_t errsz);

/* ---- text ---- */

/* Per-node live state the topology does not hold (from the bus). */
struct topo_link {
    uint64_t ping_sent; /* ms timestamps, 0 when none */
    uint64_t pong_recv;
    bool connected;
};

/* CLUSTER NODES, Redis's format byte for byte: one line per node in index
 * order, each ending in "\n". myself_id (may be NULL) gets "myself," and its
 * [slot->-id] / [slot-<-id] entries. links is NULL (all "0 0 ... connected")
 * or indexed by node index; myself is always "connected", as in Redis. */
void topo_nodes_text(const struct topo *t, const char *myself_id, const struct topo_link *links,
                     struct buf *out);
/* One node's line, without the trailing "\n" (CLUSTER REPLICAS). */
void topo_node_line(const struct topo *t, unsigned idx, const char *myself_id,
                    const struct topo_link *link, struct buf *out);
