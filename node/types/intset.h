/* node/types/intset.h: a sorted array of distinct int64 values stored at the
 * narrowest width (2, 4 or 8 bytes) that holds every member, for sets whose
 * members are all integers. Lookups are binary searches; an insert or delete
 * moves the tail (O(n), fine for the small sizes this is used for). A value
 * that needs a wider width upgrades the whole array once.
 *
 * The handle moves on insert/delete: calls take struct intset ** and update it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct intset;

struct intset *intset_create(void);
void intset_destroy(struct intset *is); /* NULL is a no-op */
struct intset *intset_dup(const struct intset *is);
size_t intset_len(const struct intset *is);
size_t intset_bytes(const struct intset *is);   /* allocation size */
unsigned intset_width(const struct intset *is); /* 2, 4 or 8 */
bool intset_find(const struct intset *is, int64_t v);
int64_t intset_get(const struct intset *is, size_t i); /* i < len, ascending order */
/* true when v was added (false: already present). */
bool intset_add(struct intset **isp, int64_t v);
/* true when v was removed. */
bool intset_remove(struct intset **isp, int64_t v);
/* Largest decimal length of a member (for encoding conversion checks). */
size_t intset_max_strlen(const struct intset *is);
