/* node/t_hash.h: the hash type (HSET, HGET, ...) and the packed string list
 * both small hashes and small sets use.
 *
 * Encodings: "listpack" (struct hpk: field, value, field, value, ... in one
 * byte array) while a hash has at most hash-max-listpack-entries fields and
 * no field or value longer than hash-max-listpack-value bytes; then
 * "hashtable" (a DICT_BYTES dict: one allocation per field holding field and
 * value). Conversion is one way, as in Redis. */
#pragma once
#include "node/cmds.h"
#include "node/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- packed string list ----
 * Elements are one tag byte plus payload: 0x00-0xBF a string of that many
 * bytes; 0xC0 a string with a varint length; 0xC1-0xC8 a signed integer of
 * 1-8 bytes; 0xD0-0xFF the integers 0-47. A string in canonical integer form
 * is always stored as an integer, so equal strings have equal encodings and
 * lookups compare encoded bytes. Offsets address elements; HPK_NONE = none. */
struct hpk;
#define HPK_NONE SIZE_MAX
#define HPK_SCRATCH 24
/* Offsets are 32-bit: the types convert away from the packed form long
 * before it reaches this size, whatever the configured value limits. */
#define HPK_SAFE_BYTES ((size_t)1 << 30)

struct hpk *hpk_create(void);
void hpk_free(struct hpk *p);                      /* NULL is a no-op */
struct hpk *hpk_dup(const struct hpk *p);
size_t hpk_count(const struct hpk *p);             /* elements */
size_t hpk_bytes(const struct hpk *p);             /* allocation size */
size_t hpk_end(const struct hpk *p);               /* offset past the last element */
/* Element at off as bytes (integers formatted into scratch); returns the next offset. */
size_t hpk_get(const struct hpk *p, size_t off, char scratch[HPK_SCRATCH], struct rv_str *out);
/* true (and *v) when the element at off is stored as an integer. */
bool hpk_get_int(const struct hpk *p, size_t off, int64_t *v);
size_t hpk_next(const struct hpk *p, size_t off);
/* First element equal to s among those at element index 0, stride, 2*stride, ... */
size_t hpk_find(const struct hpk *p, const char *s, size_t n, size_t stride);
void hpk_append(struct hpk **pp, const char *s, size_t n);
void hpk_replace(struct hpk **pp, size_t off, const char *s, size_t n);
void hpk_delete(struct hpk **pp, size_t off, size_t nelem);

/* ---- hash objects (exposed for unit tests) ---- */
struct hobj;
struct hobj_lim {
    size_t max_entries;   /* hash-max-listpack-entries */
    size_t max_value;     /* hash-max-listpack-value */
};
struct hobj *hobj_create(void);
void hobj_free(void *h);
size_t hobj_len(const struct hobj *h);
const char *hobj_encoding(const void *h);
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
 * shard cron; stops after about budget_us. */
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
