/* node/dict.h: a string-keyed hash map for collection values (hash fields,
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

struct rv_str dict_key(const struct dict_entry *e);      /* view into the entry */
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
