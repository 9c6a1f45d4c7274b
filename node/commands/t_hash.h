/* node/commands/t_hash.h: the hash type (HSET, HGET, ...) and the packed string list
 * both small hashes and small sets use.
 *
 * Encodings: "listpack" (struct hpk: field, value, field, value, ... in one
 * byte array) while a hash has at most hash-max-listpack-entries fields and
 * no field or value longer than hash-max-listpack-value bytes; then
 * "hashtable" (a DICT_BYTES dict: one allocation per field holding field and
 * value). Conversion is one way, as in Redis.
 *
 * In the keyspace a listpack hash is stored inline in its entry (the hpk
 * bytes, ks_set_inl); a hashtable hash is a pointer to a small struct holding
 * the dict and the field-deadline dict. Commands work on a struct hobj bound
 * to the entry (hobj_bind), which follows the entry when growing the packed
 * list moves it, and re-stores the key as a pointer when it converts. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/hpk.h"
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- hash objects (exposed for unit tests) ----
 * A struct hobj is a handle: on the heap for a standalone hash (hobj_create,
 * tests), or on a command's stack bound to a keyspace entry (hobj_bind). */
struct hht;
struct hobj {
    uint32_t enc;          /* listpack or hashtable */
    struct hpk_ref pk;     /* listpack */
    struct hht *ht;        /* hashtable (dict and field deadlines) */
};
struct hobj_lim {
    size_t max_entries;   /* hash-max-listpack-entries */
    size_t max_value;     /* hash-max-listpack-value */
};
struct hobj *hobj_create(void);                    /* standalone, empty listpack */
void hobj_free(struct hobj *h);                    /* standalone only; NULL is a no-op */
/* Binds h to hash entry e of ks (ks NULL: read only). */
void hobj_bind(struct hobj *h, struct ks *ks, struct ks_entry *e);
/* Stores standalone h at key (replacing it, no deadline) and frees h. */
void hobj_store(struct hobj *h, struct ks *ks, const char *key, size_t klen);
size_t hobj_len(const struct hobj *h);
const char *hobj_encoding(const struct hobj *h);
size_t hobj_mem(const struct hobj *h);             /* bytes outside the keyspace entry */
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

extern const struct obj_ops obj_hash_ops;

struct shard;
struct hash_ttl_index;
/* The shard's index of hash keys with timed fields (kept in struct shard). */
void hash_ttl_index_destroy(struct hash_ttl_index *x);       /* NULL is a no-op */
/* Active reclaim of expired hash fields for the shard's keyspace, from the
 * shard cron; stops after about budget_us (0: does nothing). */
void hash_active_expire(struct shard *s, int64_t now, uint64_t budget_us);

/* ---- helpers shared with the set type ---- */
struct conn;
/* Random stream for one command: seed, then draw (splitmix64). */
uint64_t hash_rng_seed(struct conn *c);
uint64_t hash_rng_next(uint64_t *x);
size_t hash_rng_below(uint64_t *x, size_t n);   /* uniform in [0, n) */

CMD_HANDLER(hset); CMD_HANDLER(hsetnx); CMD_HANDLER(hget); CMD_HANDLER(hmset);
CMD_HANDLER(hmget); CMD_HANDLER(hgetall); CMD_HANDLER(hdel); CMD_HANDLER(hexists);
CMD_HANDLER(hlen); CMD_HANDLER(hkeys); CMD_HANDLER(hvals); CMD_HANDLER(hincrby);
CMD_HANDLER(hincrbyfloat); CMD_HANDLER(hstrlen); CMD_HANDLER(hrandfield); CMD_HANDLER(hscan);
CMD_HANDLER(hexpire); CMD_HANDLER(hpexpire); CMD_HANDLER(hexpireat); CMD_HANDLER(hpexpireat);
CMD_HANDLER(httl); CMD_HANDLER(hpttl); CMD_HANDLER(hexpiretime); CMD_HANDLER(hpexpiretime);
CMD_HANDLER(hpersist);
