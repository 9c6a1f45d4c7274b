/* node/keyspace/ks.h: one shard's keyspace.
 *
 * Keys live in a seeded-hash open-addressing table (robin hood, linear probing)
 * that grows and shrinks by incremental rehashing: no pause proportional to the
 * table. Each key is one allocation (struct ks_entry) holding a small header,
 * the key bytes and, for strings, the value inline; integers are stored as
 * integers. Keys with a deadline are also indexed in a second table that the
 * active expiry cycle walks.
 *
 * Ownership: the keyspace owns every entry. A struct ks_entry * returned by any
 * call is valid until the next call that modifies the keyspace (an insert,
 * delete, resize of a value, rehash step or cron), like an LMDB view. Only the
 * shard's own thread touches its keyspace. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks;
struct ks_entry;

enum ks_type {
    KS_STRING = 0,
    KS_LIST = 1,
    KS_SET = 2,
    KS_ZSET = 3,
    KS_HASH = 4,
    KS_STREAM = 5,
    KS_COORD = 6, /* SEMAPHORE holders (node/types/coord.h) */
    KS_JSON = 7,  /* JSON documents (node/types/json.h) */
};

/* What OBJECT ENCODING reports for strings. */
enum ks_enc {
    KS_ENC_INT = 0,    /* "int" */
    KS_ENC_EMBSTR = 1, /* "embstr": value inline, <= 44 bytes */
    KS_ENC_RAW = 2,    /* "raw" */
};

#define KS_NO_EXPIRE (-1)

struct ks_stats {
    uint64_t expired_keys;         /* removed by lazy or active expiry */
    uint64_t expired_stale_perc;   /* last active cycle: percent of sampled keys found expired */
    uint64_t expire_cycle_time_us; /* total time spent in active expiry */
    uint64_t rehashing;            /* 1 while an incremental rehash is in progress */
};

struct ks *ks_create(uint64_t seed0, uint64_t seed1);
void ks_destroy(struct ks *ks);              /* NULL is a no-op */
size_t ks_size(const struct ks *ks);         /* keys, including not-yet-reclaimed expired ones */
size_t ks_expires_size(const struct ks *ks); /* keys with a deadline */
const struct ks_stats *ks_stats(const struct ks *ks);
/* The seeded 64-bit hash the table uses (exposed for tests). */
uint64_t ks_hash(const struct ks *ks, const char *p, size_t n);

/* ---- lookup ---- */
/* The live entry for key, or NULL. An entry whose deadline is <= now_ms is
 * deleted here (lazy expiry) and NULL returned. Updates the access clock. */
struct ks_entry *ks_lookup(struct ks *ks, const char *key, size_t klen, int64_t now_ms);
/* As ks_lookup, but neither expires nor touches the access clock. */
struct ks_entry *ks_peek(struct ks *ks, const char *key, size_t klen);

/* ---- entry accessors ---- */
enum ks_type ks_entry_type(const struct ks_entry *e);
struct rv_str ks_entry_key(const struct ks_entry *e); /* view into the entry */
int64_t ks_entry_expire(const struct ks_entry *e);    /* unix ms, or KS_NO_EXPIRE */
/* e is not NULL and its deadline (if any) is after now_ms (what ks_peek
 * returns may have expired without being reclaimed yet) */
bool ks_entry_live(const struct ks_entry *e, int64_t now_ms);
uint64_t ks_entry_idle_ms(const struct ks_entry *e, int64_t now_ms);
size_t ks_entry_mem(const struct ks_entry *e); /* bytes charged: allocation incl. value */
/* Sets the access clock so that ks_entry_idle_ms(e, now_ms) is about idle_ms
 * (RESTORE ... IDLETIME); whole seconds, at most the clock's 2^24 s range. */
void ks_entry_set_idle(struct ks_entry *e, int64_t now_ms, uint64_t idle_ms);

/* Strings. */
enum ks_enc ks_str_enc(const struct ks_entry *e);
bool ks_str_is_int(const struct ks_entry *e);
int64_t ks_str_int(const struct ks_entry *e); /* only when ks_str_is_int */
/* The value as bytes; int-encoded values are formatted into scratch. */
struct rv_str ks_str_get(const struct ks_entry *e, char scratch[24]);
size_t ks_str_len(const struct ks_entry *e);

/* ---- writes ---- */
/* Insert or replace key with a string value (any previous type is dropped).
 * A value in canonical integer form ("-12", not "012" or "+1") that fits int64
 * is stored int-encoded. expire_ms: absolute unix ms or KS_NO_EXPIRE; with
 * keep_ttl the old deadline (if any) is kept instead. Returns the entry.
 * val must not point into the keyspace (e.g. another entry's value view). */
struct ks_entry *ks_set_str(struct ks *ks, const char *key, size_t klen, const char *val,
                            size_t vlen, int64_t expire_ms, bool keep_ttl);
/* Insert or replace with an int-encoded value; same deadline rules. */
struct ks_entry *ks_set_int(struct ks *ks, const char *key, size_t klen, int64_t v,
                            int64_t expire_ms, bool keep_ttl);
/* In-place integer update of an existing int-encoded string (INCR fast path).
 * Only when v needs a wider integer than the allocation holds does the entry
 * move (e is then not valid afterwards). */
void ks_str_set_int(struct ks *ks, struct ks_entry *e, int64_t v);
/* Make the string value of *ep raw and exactly newlen bytes long (zero-filling
 * growth, truncating shrink), keeping key and deadline; *ep may move. Returns
 * a writable pointer to the value bytes (valid until the next keyspace call). */
char *ks_str_resize(struct ks *ks, struct ks_entry **ep, size_t newlen);
/* Room for a string value of cap bytes in *ep's allocation (its value and
 * length unchanged; *ep may move): ks_str_resize grows into it without
 * moving the value again, as a big value built by appends needs (a slot
 * migration's chunks). A no-op for other types and integers. */
void ks_str_reserve(struct ks *ks, struct ks_entry **ep, size_t cap);

/* Non-string values (later issues): ks stores an owned pointer; free_fn is
 * called when the entry is deleted or overwritten. */
typedef void ks_free_fn(void *ptr);
struct ks_entry *ks_set_ptr(struct ks *ks, const char *key, size_t klen, enum ks_type type,
                            void *ptr, ks_free_fn *free_fn, int64_t expire_ms);
void *ks_entry_ptr(const struct ks_entry *e);

/* Inline values: a small collection stored as bytes inside its entry, like a
 * string (the type module defines the bytes; nothing to free). The value
 * moves with the entry: views are valid until the next keyspace call. */
/* Insert or replace key with an inline value of type (not KS_STRING). val
 * may point into the entry being replaced. */
struct ks_entry *ks_set_inl(struct ks *ks, const char *key, size_t klen, enum ks_type type,
                            const void *val, size_t vlen, int64_t expire_ms);
bool ks_entry_inl(const struct ks_entry *e); /* a non-string with an inline value */
/* The inline value's bytes (writable in place) and length. */
uint8_t *ks_inl_val(const struct ks_entry *e, size_t *len);
/* Make the inline value of *ep exactly newlen bytes, keeping its first
 * min(old, new) bytes, the key, type and deadline; *ep may move. Returns the
 * value's bytes. */
uint8_t *ks_inl_resize(struct ks *ks, struct ks_entry **ep, size_t newlen);

/* true when the key existed (expired or not) and was removed. A pointer
 * value goes to the lazy hook when KS_FREE_SERVER is in its mask. */
bool ks_delete(struct ks *ks, const char *key, size_t klen);
/* The same, the value offered to the lazy hook (lazy: UNLINK) or freed now
 * (DEL) whatever the mask. */
bool ks_delete_how(struct ks *ks, const char *key, size_t klen, bool lazy);
/* As ks_delete, the value offered to the lazy hook when KS_FREE_EXPIRE is in
 * its mask: a deadline set in the past (EXPIRE, GETEX ... PXAT) deletes the
 * key as an expiry would (Redis 7.0: lazyfree-lazy-expire's choice). */
bool ks_delete_expired(struct ks *ks, const char *key, size_t klen);
/* Set or clear (KS_NO_EXPIRE) the deadline of e. Adding or removing a deadline
 * may move the entry: e is not valid afterwards (look the key up again). */
void ks_set_expire(struct ks *ks, struct ks_entry *e, int64_t expire_ms);
/* Move src's entry to dst (replacing dst); false when src is absent. */
bool ks_rename(struct ks *ks, const char *src, size_t slen, const char *dst, size_t dlen);
/* Copy the value of e to dst (replacing dst); the deadline is copied too.
 * Strings and inline values only: for pointer values (ks cannot duplicate the
 * object) NULL is returned and nothing changes; the caller duplicates and
 * uses ks_set_ptr. */
struct ks_entry *ks_copy(struct ks *ks, const struct ks_entry *e, const char *dst, size_t dlen);
/* The same into another keyspace (MOVE, COPY ... DB): e stays valid and unchanged. */
struct ks_entry *ks_copy_to(struct ks *ks, const struct ks_entry *e, const char *dst, size_t dlen);
/* Move key's entry from src to the keyspace ks (replacing its key there), in
 * O(1): a pointer value changes owner, nothing is copied but the entry; the
 * deadline goes along. False when src has no such key. (MIGRATE's staging
 * value becoming the key, node/commands/migrate_stage.c.) */
bool ks_move_to(struct ks *ks, struct ks *src, const char *key, size_t klen);
/* Remove everything. */
void ks_flush(struct ks *ks);
/* Remove everything at once, leaving the entries to free: the old tables as
 * an object the caller owns, to free with ks_husk_free (on any thread: it
 * touches nothing but them); NULL when ks was empty. FLUSHALL ASYNC. */
struct ks_husk;
struct ks_husk *ks_flush_detach(struct ks *ks);
void ks_husk_free(void *husk); /* a ks_free_fn; NULL is a no-op */

/* ---- lazy freeing (node/core/lazyfree.h) ----
 * Each deletion has a reason; for the reasons in the mask, a pointer value
 * about to be freed is first offered to fn, which returns true when it took
 * ptr (and will call free_fn(ptr) later, on any thread); otherwise, or with
 * no hook, ks frees it at once. e is still valid during the call (fn must
 * not modify the keyspace). String and inline values are always freed at
 * once (one allocation). */
enum ks_free_why {
    KS_FREE_SERVER = 1u << 0, /* ks_delete, overwrites, RENAME's destination */
    KS_FREE_EXPIRE = 1u << 1, /* lazy and active expiry */
    KS_FREE_EVICT = 1u << 2,  /* ks_evict */
};
typedef bool ks_lazy_fn(void *arg, const struct ks_entry *e, void *ptr, ks_free_fn *free_fn);
void ks_set_lazy(struct ks *ks, ks_lazy_fn *fn, void *arg, unsigned mask);

/* ---- keys per cluster slot ---- */
/* Keep (on) or stop keeping a count of keys per slot (cluster/slot.h): one
 * CRC16 per key inserted or removed; turning it on counts the keys present. */
void ks_count_slots(struct ks *ks, bool on);
bool ks_counts_slots(const struct ks *ks);
/* Keys of slot, expired ones not yet reclaimed included (needs ks_count_slots). */
size_t ks_slot_keys(const struct ks *ks, unsigned slot);

/* ---- iteration ---- */
typedef void ks_scan_fn(void *arg, struct ks_entry *e);
/* Visit a batch of about count entries starting at cursor (0 = start); returns
 * the next cursor, 0 when done. Every key present for the whole scan is visited
 * at least once, also across resizes (the cursor is a position in hash order).
 * fn must not modify the keyspace. Expired entries are visited too. */
uint64_t ks_scan(struct ks *ks, uint64_t cursor, size_t count, ks_scan_fn *fn, void *arg);
/* Visit up to max keys of slot (expired ones included), in hash order from
 * where the previous walk of the slot found its first key, wrapping around;
 * returns how many were visited. GETKEYSINSLOT: a reshard deletes the keys it
 * was given before asking again, so starting at 0 each time would rescan the
 * slot's emptied prefix, quadratic in the slot's keys. fn must not modify ks. */
size_t ks_slot_walk(struct ks *ks, unsigned slot, size_t max, ks_scan_fn *fn, void *arg);
/* A random entry (NULL when empty); may be expired. */
struct ks_entry *ks_random(struct ks *ks, uint64_t rnd);

/* ---- additions ---- */
/* The clock the keyspace uses for new entries' access clock and for KEEPTTL on
 * a logically expired key; ks_lookup and ks_active_expire also update it. The
 * shard should call this once per event-loop turn. */
void ks_set_clock(struct ks *ks, int64_t now_ms);
/* true when p[0,n) is an integer in canonical form ("-12"; not "012", "+1",
 * "-0", " 1") that fits int64; the value goes to *out. */
bool ks_str_parse_int(const char *p, size_t n, int64_t *out);

/* Size the table for n keys at once and do not shrink it below that until
 * ks_reserve(ks, 0) (loading a checkpoint; not while serving: the rebuild is
 * synchronous). */
void ks_reserve(struct ks *ks, size_t n);

/* Called with an entry that lazy or active expiry, or eviction (ks_evict), is
 * about to delete (the entry is still valid; fn must not modify the keyspace). */
typedef void ks_expire_hook_fn(void *arg, const struct ks_entry *e);
void ks_set_expire_hook(struct ks *ks, ks_expire_hook_fn *fn, void *arg);
/* The same, for lazy and active expiry only (not eviction), after the expire
 * hook: keyspace notifications' "expired" event. */
void ks_set_expired_hook(struct ks *ks, ks_expire_hook_fn *fn, void *arg);
/* Called after a key that did not exist was added (set, copy, rename's new
 * name); NULL (the default) costs one test per added key. */
typedef void ks_new_hook_fn(void *arg, struct ks *ks, const char *key, size_t klen);
void ks_set_new_hook(struct ks *ks, ks_new_hook_fn *fn, void *arg);
/* Replica mode: lookups hide keys whose deadline passed instead of deleting
 * them, and active expiry does nothing; the primary's DELs remove them. */
void ks_set_replica_mode(struct ks *ks, bool on);
/* Give dst src's settings: clock, expire hook, replica mode, LFU (a numbered
 * database created beside database 0 behaves like it). */
void ks_inherit(struct ks *dst, const struct ks *src);
/* While on, lookups leave the access clock (LRU second or LFU counter) as it
 * was: a CLIENT NO-TOUCH client's command runs so. */
void ks_set_no_touch(struct ks *ks, bool on);
/* While on, lookups hide keys whose deadline passed instead of deleting them
 * (as in replica mode): commands run so while CLIENT PAUSE lasts. */
void ks_set_hold_expired(struct ks *ks, bool on);

/* ---- eviction (node/features/evict.c) ---- */
/* LFU mode (an LFU maxmemory-policy): the access clock of each entry holds a
 * logarithmic access counter and its last decay minute instead of the last
 * access second (the same 24 bits, so switching reinterprets old values, as
 * Redis does). ks_lookup then bumps the counter with probability
 * 1 / ((counter - 5) * log_factor + 1); it decays by one per decay_min minutes. */
void ks_set_lfu(struct ks *ks, bool on, unsigned log_factor, unsigned decay_min);
bool ks_lfu(const struct ks *ks);
/* LFU mode: the decayed counter (OBJECT FREQ). */
unsigned ks_entry_freq(const struct ks *ks, const struct ks_entry *e, int64_t now_ms);
void ks_entry_set_freq(struct ks_entry *e, int64_t now_ms, unsigned freq); /* RESTORE FREQ */
/* A random key with a deadline (NULL when none); may be expired. */
struct ks_entry *ks_random_volatile(struct ks *ks, uint64_t rnd);
/* Delete e as an eviction: the expire hook runs first (the WAL logs a DEL). */
void ks_evict(struct ks *ks, struct ks_entry *e);
/* The same, the value offered to the lazy hook whatever its mask (a slot
 * given away: node/features/topology.c). */
void ks_evict_lazy(struct ks *ks, struct ks_entry *e);

/* A walk that deleted keys in SCAN order is over: a table shrink given up
 * meanwhile (the survivors were crowded above the walk, node/keyspace/rh.h)
 * may start again now instead of when the key count has halved. */
void ks_shrink_retry(struct ks *ks);

/* ---- background work, called from the shard's timer ---- */
/* Incremental rehash for up to budget_us; returns true while more remains. */
bool ks_rehash_step(struct ks *ks, uint64_t budget_us);
/* Active expiry: sample keys with deadlines, delete the expired ones, stop after
 * budget_us; returns the number deleted. Repeats while >25% of a sample was stale.
 * A budget of 0 does nothing (DEBUG SET-ACTIVE-EXPIRE 0). */
size_t ks_active_expire(struct ks *ks, int64_t now_ms, uint64_t budget_us);

/* ---- snapshot iterator (ks_snap.c) ----
 *
 * A consistent walk of the keyspace as it was at ks_snap_begin, taken while
 * the shard keeps serving (checkpoints, a replication full sync, later slot
 * migration). The walk goes in hash order (ks_scan's cursor): a key whose hash
 * is below the cursor has been emitted, one above has not. Copy-on-write: the
 * owner calls ks_snap_touch before a write changes a key; a key the walk has
 * not reached is then emitted at once (its value is still the one at the
 * snapshot point) and remembered, so the walk skips it later; a key that did
 * not exist is remembered too, so a key created after the snapshot point is
 * never emitted. Each key present at the snapshot point is thus emitted exactly
 * once, with its value at that point, and no other key is. A write that
 * changes keys it cannot name (FLUSHALL) invalidates the snapshot: end it and
 * begin another.
 *
 * Expired keys are emitted too (the emitter decides). The snapshot holds no
 * pointer to the keyspace: each call takes the one being walked, which must be
 * the same one throughout. */
struct ks_snap;
/* fn must not modify the keyspace. */
typedef void ks_snap_emit_fn(void *arg, const struct ks_entry *e);
struct ks_snap *ks_snap_begin(ks_snap_emit_fn *emit, void *arg);
/* Walk about count more keys; true once the walk is complete (nothing more
 * will be emitted, touches do nothing). */
bool ks_snap_next(struct ks_snap *sn, struct ks *ks, size_t count);
/* Before a write changes key: emits its value first when the walk has not
 * reached it yet (once per key). */
void ks_snap_touch(struct ks_snap *sn, struct ks *ks, const char *key, size_t klen);
bool ks_snap_done(const struct ks_snap *sn);
void ks_snap_end(struct ks_snap *sn); /* NULL is a no-op */
