/* node/types/hpk.h: the packed string list small hashes and sets use (hpk.c).
 * A list lives on the heap or inline in a keyspace entry; see
 * struct hpk_ref. */
#pragma once
#include "proto/resp.h"

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
struct ks;
struct ks_entry;
#define HPK_HDR 8u /* header bytes before the elements */
#define HPK_NONE SIZE_MAX
#define HPK_SCRATCH 24
/* Offsets are 32-bit: the types convert away from the packed form long
 * before it reaches this size, whatever the configured value limits. */
#define HPK_SAFE_BYTES ((size_t)1 << 30)

struct hpk *hpk_create(void);
void hpk_free(struct hpk *p); /* NULL is a no-op */
struct hpk *hpk_dup(const struct hpk *p);
size_t hpk_count(const struct hpk *p); /* elements */
size_t hpk_bytes(const struct hpk *p); /* allocation size */
size_t hpk_end(const struct hpk *p);   /* offset past the last element */
/* Element at off as bytes (integers formatted into scratch); returns the next offset. */
size_t hpk_get(const struct hpk *p, size_t off, char scratch[HPK_SCRATCH], struct rv_str *out);
/* true (and *v) when the element at off is stored as an integer. */
bool hpk_get_int(const struct hpk *p, size_t off, int64_t *v);
size_t hpk_next(const struct hpk *p, size_t off);
/* First element equal to s among those at element index 0, stride, 2*stride, ... */
size_t hpk_find(const struct hpk *p, const char *s, size_t n, size_t stride);
/* A packed list and where it lives: a heap allocation (ks == NULL), or the
 * inline value of keyspace entry e, which moves (e and p updated) when the
 * list is resized. Mutations take the reference; offsets stay valid. */
struct hpk_ref {
    struct hpk *p;
    struct ks *ks;
    struct ks_entry *e;
};
void hpk_append(struct hpk_ref *r, const char *s, size_t n);
void hpk_replace(struct hpk_ref *r, size_t off, const char *s, size_t n);
void hpk_delete(struct hpk_ref *r, size_t off, size_t nelem);
