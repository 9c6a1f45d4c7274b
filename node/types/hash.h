/* node/types/hash.h: the hash object (HSET, HGET, ... are in
 * node/commands/t_hash.c).
 *
 * Encodings: "listpack" (struct hpk: field, value, field, value, ... in one
 * byte array) while a hash has at most hash-max-listpack-entries fields and
 * no field or value longer than hash-max-listpack-value bytes; then
 * "hashtable" (a DICT_BYTES dict: one allocation per field holding field and
 * value). Conversion is one way, as in Redis. The limits come from the
 * caller (struct hobj_lim), which reads them from the configuration.
 *
 * In the keyspace a listpack hash is stored inline in its entry (the hpk
 * bytes, ks_set_inl); a hashtable hash is a pointer to a small struct holding
 * the dict and the field-deadline dict. Commands work on a struct hobj bound
 * to the entry (hobj_bind), which follows the entry when growing the packed
 * list moves it, and re-stores the key as a pointer when it converts. */
#pragma once
#include "node/types/hpk.h"
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dict;
struct ks;
struct ks_entry;

enum { HENC_PK = 0, HENC_HT = 1 }; /* struct hobj's enc */

/* The hashtable encoding: what the keyspace points to for a big hash.
 * Visible so that commands walk the dict directly (HSCAN, HRANDFIELD). */
struct hht {
    struct dict *d; /* DICT_BYTES: field -> value */
    /* Field deadlines (unix ms in the uint64 value), NULL while no field has
     * one; only hashtable-encoded hashes have it (HEXPIRE converts). */
    struct dict *ttl;
};
/* A struct hobj is a handle: on the heap for a standalone hash (hobj_create,
 * tests), or on a command's stack bound to a keyspace entry (hobj_bind). */
struct hobj {
    uint32_t enc;      /* listpack or hashtable */
    struct hpk_ref pk; /* listpack */
    struct hht *ht;    /* hashtable (dict and field deadlines) */
};
struct hobj_lim {
    size_t max_entries; /* hash-max-listpack-entries */
    size_t max_value;   /* hash-max-listpack-value */
};
struct hobj *hobj_create(void); /* standalone, empty listpack */
void hobj_free(struct hobj *h); /* standalone only; NULL is a no-op */
/* Binds h to hash entry e of ks (ks NULL: read only). */
void hobj_bind(struct hobj *h, struct ks *ks, struct ks_entry *e);
/* Stores standalone h at key (replacing it, no deadline) and frees h. */
void hobj_store(struct hobj *h, struct ks *ks, const char *key, size_t klen);
size_t hobj_len(const struct hobj *h);
const char *hobj_encoding(const struct hobj *h);
size_t hobj_mem(const struct hobj *h); /* bytes outside the keyspace entry */
/* 1 when the field was created, 0 when its value was replaced. */
int hobj_set(struct hobj *h, const char *f, size_t fl, const char *v, size_t vl,
             const struct hobj_lim *lim);
/* The value of f (a view valid until h changes; may use scratch). */
bool hobj_get(const struct hobj *h, const char *f, size_t fl, char scratch[HPK_SCRATCH],
              struct rv_str *out);
bool hobj_del(struct hobj *h, const char *f, size_t fl);
/* Field expiration (HEXPIRE, Redis 7.4). Deadlines live in a side dict
 * (field -> unix ms) that exists only while some field has one, so plain
 * hashes pay one NULL pointer; the first HEXPIRE converts the hash to the
 * hashtable encoding. hobj_reap deletes the fields due at now and returns how
 * many; hobj_field_deadline is -1 for a field without one. */
size_t hobj_reap(struct hobj *h, int64_t now);
int64_t hobj_field_deadline(struct hobj *h, const char *f, size_t fl);
/* Sets f's deadline (f must exist); converts a listpack hash to hashtable. */
void hobj_set_deadline(struct hobj *h, const char *f, size_t fl, int64_t when);

/* Listpack to hashtable. A hash stored inline in its entry is then stored as
 * a pointer to the hashtable (same key and deadline). */
void hobj_convert(struct hobj *h);
/* The field-deadline dict, NULL while no field has a deadline. */
static inline struct dict *
hobj_ttl(const struct hobj *h)
{
    return h->enc == HENC_HT ? h->ht->ttl : NULL;
}
/* Forgets the deadline of f (hashtable with a deadline dict); frees the side
 * dict once it is empty. true when f had one. */
bool hobj_ttl_clear(struct hobj *h, const char *f, size_t fl);
/* Every field/value pair, in storage order; fn must not modify h. */
typedef void hvisit_fn(void *arg, struct rv_str f, struct rv_str v);
void hobj_foreach(struct hobj *h, hvisit_fn *fn, void *arg);
/* Lazy reclaim on access: reaps h's due fields (how many in *reaped) and
 * deletes key from ks when none is left; true when the key was deleted. */
bool hash_reap_key(struct ks *ks, struct rv_str key, struct hobj *h, int64_t now, size_t *reaped);

extern const struct obj_ops obj_hash_ops;

/* The index of a keyspace's hash keys that have timed fields, for the active
 * sweep. Entries go stale harmlessly: the sweep drops an entry whose key is
 * gone, is no longer a hash, or has no timed field left. */
struct hash_ttl_index;
void hash_ttl_index_destroy(struct hash_ttl_index *x); /* NULL is a no-op */
/* Adds key to *xp, creating the index on first use. */
void hash_ttl_index_add(struct hash_ttl_index **xp, struct rv_str key);
/* Told of each key whose due fields a sweep reaped (gone: the key was deleted,
 * none being left); key is valid during the call only. */
typedef void hash_reaped_fn(void *arg, struct rv_str key, bool gone);
/* Reaps due fields of the indexed keys of ks, resuming where the last sweep
 * stopped; stops after about budget_us (0 or x NULL: does nothing). fn (may
 * be NULL) hears of each key it reaped fields of. */
void hash_ttl_index_sweep(struct hash_ttl_index *x, struct ks *ks, int64_t now, uint64_t budget_us,
                          hash_reaped_fn *fn, void *arg);

/* Random draws for one command (splitmix64), shared with the set type. */
uint64_t hash_rng_next(uint64_t *x);
size_t hash_rng_below(uint64_t *x, size_t n); /* uniform in [0, n) */
