/* node/keyspace/ks_int.h: keyspace internals for tests only (included by ks.c, ks_iter.c,
 * tests/unit/keyspace/test_ks.c and test_ks_slots.c). */
#pragma once
#include "node/keyspace/ks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_int_info {
    size_t main_slots;     /* home range of the table inserts go to */
    size_t main_old_slots; /* home range of the table being drained, 0 when none */
    size_t exp_slots;
    size_t exp_old_slots;
    size_t max_dist;          /* largest probe distance in the main tables */
    size_t last_op_moves;     /* entries migrated by the last public call */
    size_t sync_rebuilds;     /* rare synchronous rebuilds (insert overflowed during a rehash) */
    size_t overflow_grows;    /* grows forced by an insert that ran out of room */
    size_t shrinks_abandoned; /* shrinks given up because their target overflowed */
};

void ks_int_info(const struct ks *ks, struct ks_int_info *out);
/* Walks every table and checks all invariants (homes, order, tags, counts,
 * expires index). Returns 0 or a small code naming the first failure. */
int ks_int_check(const struct ks *ks);
/* The key comparison of lookups (inline for short keys): equal to memcmp == 0. */
bool ks_int_key_eq(const void *a, const char *b, size_t n);
