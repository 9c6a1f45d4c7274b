/* node/keyspace/dict.h: a string-keyed hash map for collection values (hash fields,
 * set members, sorted-set members). Each entry is one allocation holding the
 * key bytes and an 8-byte value (a pointer or a number, the caller's choice).
 * Seeded hashing (SipHash) against hash flooding; resizing is incremental, as
 * in the keyspace, so a large collection never pauses the shard.
 *
 * Entry pointers returned by any call are valid until the next call that
 * modifies the dict (add, delete, or a rehash step done inside them). */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dict;
struct dict_entry;

/* Process-wide random seed; call once at start-up before any dict exists. */
void dict_seed(uint64_t s0, uint64_t s1);

struct dict *dict_create(void);
/* Frees every entry; free_val (may be NULL) is called with each value pointer. */
void dict_destroy(struct dict *d, void (*free_val)(void *));
size_t dict_size(const struct dict *d);
/* Bytes owned: table + entries (for MEMORY USAGE). */
size_t dict_mem(const struct dict *d);

struct dict_entry *dict_find(struct dict *d, const char *key, size_t klen);
/* Find or insert key; *created tells which. A new entry's value is 0/NULL. */
struct dict_entry *dict_add(struct dict *d, const char *key, size_t klen, bool *created);
/* Remove key; true when it existed (its value is returned in *val if val). */
bool dict_delete(struct dict *d, const char *key, size_t klen, uint64_t *val);

struct rv_str dict_key(const struct dict_entry *e); /* view into the entry */
uint64_t dict_val(const struct dict_entry *e);
void dict_set_val(struct dict_entry *e, uint64_t v);
void *dict_val_ptr(const struct dict_entry *e);
void dict_set_val_ptr(struct dict_entry *e, void *p);
double dict_val_double(const struct dict_entry *e);
void dict_set_val_double(struct dict_entry *e, double v);

/* SCAN with Redis's guarantee (hash-order cursor, 0 = start/done). fn must not
 * modify the dict. Visits about count entries. */
typedef void dict_scan_fn(void *arg, struct dict_entry *e);
uint64_t dict_scan(struct dict *d, uint64_t cursor, size_t count, dict_scan_fn *fn, void *arg);
/* Every entry once (no modification allowed during the walk). */
void dict_foreach(struct dict *d, dict_scan_fn *fn, void *arg);
/* A uniformly chosen entry (NULL when empty). */
struct dict_entry *dict_random(struct dict *d, uint64_t rnd);

/* ---- additions: value layouts and helpers ----
 *
 * A dict's kind fixes what follows the key in each entry. dict_create() makes
 * DICT_U64 (the 8-byte value above). DICT_KEYONLY entries have no value (set
 * members); the value accessors must not be used on them. DICT_BYTES entries
 * keep a byte string inline after the key (hash fields: one allocation per
 * field); a new entry's value is empty. */
enum dict_kind { DICT_U64 = 0, DICT_KEYONLY = 1, DICT_BYTES = 2 };
struct dict *dict_create_kind(enum dict_kind kind);
/* Size the table for about n entries (no-op while resizing or when smaller). */
void dict_reserve(struct dict *d, size_t n);
/* Deep copy: entries are copied bytewise, so a DICT_U64 value that is an
 * owned pointer ends up shared (the caller must fix those up). */
struct dict *dict_dup(const struct dict *d);

/* DICT_BYTES only. The value is a view into the entry. */
struct rv_str dict_val_bytes(const struct dict_entry *e);
/* Insert or overwrite key with value v (v must not point into the dict); the
 * entry may move: the returned pointer is the live one. */
struct dict_entry *dict_put_bytes(struct dict *d, const char *key, size_t klen, const char *v,
                                  size_t vlen, bool *created);
/* Replace the value of e (found in d); returns the entry, which may move. */
struct dict_entry *dict_set_bytes(struct dict *d, struct dict_entry *e, const char *v, size_t vlen);
