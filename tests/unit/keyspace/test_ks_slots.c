/* tests/unit/keyspace/test_ks_slots.c: ks_slot_walk (GETKEYSINSLOT): every key
 * of a slot is found exactly once whatever the walk's starting point, also
 * when the caller deletes what it was given (a reshard) or adds keys behind it. */
#include "node/keyspace/ks.h"

#include "cluster/slot.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks_int.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define S0 UINT64_C(0x1234567890abcdef)
#define S1 UINT64_C(0x0fedcba987654321)
#define MAXB 2048

/* One walk's keys, in order. */
struct batch {
    unsigned slot;
    size_t n, wrong_slot;
    char keys[MAXB][24];
};

static void
collect(void *arg, struct ks_entry *e)
{
    struct batch *b = arg;
    struct rv_str k = ks_entry_key(e);
    cr_assert(b->n < MAXB && k.len < sizeof(b->keys[0]));
    memcpy(b->keys[b->n], k.p, k.len);
    b->keys[b->n][k.len] = '\0';
    b->wrong_slot += slot_of(k.p, k.len) != b->slot;
    b->n++;
}

/* Add b's keys to seen; returns how many were there already. */
static size_t
note(struct dict *seen, const struct batch *b)
{
    size_t dups = 0;
    for (size_t i = 0; i < b->n; i++) {
        bool created;
        dict_put_bytes(seen, b->keys[i], strlen(b->keys[i]), "", 0, &created);
        dups += !created;
    }
    return dups;
}

static void
add_tagged(struct ks *ks, const char *tag, size_t from, size_t n)
{
    char k[24];
    for (size_t i = from; i < from + n; i++) {
        size_t kl = (size_t)snprintf(k, sizeof(k), "{%s}%zu", tag, i);
        ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
    }
}

/* 20,000 keys spread over the slots, plus n keys "{tag}i" in tag's slot. */
static struct ks *
filled(const char *tag, size_t n)
{
    struct ks *ks = ks_create(S0, S1);
    char k[24];
    ks_count_slots(ks, true);
    for (size_t i = 0; i < 20000; i++) {
        size_t kl = (size_t)snprintf(k, sizeof(k), "k%zu", i);
        ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
    }
    add_tagged(ks, tag, 0, n);
    return ks;
}

static struct batch b; /* big: static, one test at a time */

static size_t
walk(struct ks *ks, unsigned slot, size_t max)
{
    memset(&b, 0, sizeof(b));
    b.slot = slot;
    size_t n = ks_slot_walk(ks, slot, max, collect, &b);
    cr_assert_eq(n, b.n);
    cr_assert_eq(b.wrong_slot, 0);
    return n;
}

/* GETKEYSINSLOT 10, MIGRATE those, again, until the slot is empty. */
Test(ks_slots, a_reshard_gets_every_key_once)
{
    unsigned slot = slot_of("a", 1);
    struct ks *ks = filled("a", 700);
    size_t in_slot = ks_slot_keys(ks, slot), left = in_slot;
    struct dict *seen = dict_create_kind(DICT_BYTES);
    cr_assert(in_slot >= 700);
    while (walk(ks, slot, 10) > 0) {
        cr_assert_eq(b.n, left < 10 ? left : 10);
        cr_assert_eq(note(seen, &b), 0, "a key given twice");
        for (size_t i = 0; i < b.n; i++) {
            cr_assert(ks_delete(ks, b.keys[i], strlen(b.keys[i])));
        }
        left -= b.n;
    }
    cr_assert_eq(left, 0);
    cr_assert_eq(dict_size(seen), in_slot);
    cr_assert_eq(ks_slot_keys(ks, slot), 0);
    dict_destroy(seen, NULL);
    ks_destroy(ks);
}

/* A walk that starts half way (where the last one found its first key) wraps
 * around: asking for more than the slot holds gives each key once. */
Test(ks_slots, a_walk_from_the_middle_wraps_around_once)
{
    unsigned slot = slot_of("b", 1);
    struct ks *ks = filled("b", 500);
    size_t in_slot = ks_slot_keys(ks, slot);
    for (size_t round = 0; round < 20; round++) {
        /* move the start: delete the first few keys found */
        cr_assert_eq(walk(ks, slot, 3), 3);
        for (size_t i = 0; i < 3; i++) {
            cr_assert(ks_delete(ks, b.keys[i], strlen(b.keys[i])));
        }
        in_slot -= 3;
        /* keys added anywhere in hash order, some behind the start, and
         * others that move the batches' bounds off the walk's start */
        add_tagged(ks, "b", 1000 + round * 5, 5);
        for (size_t i = 0; i < 777; i++) {
            char k[24];
            size_t kl = (size_t)snprintf(k, sizeof(k), "x%zu.%zu", round, i);
            ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
        }
        in_slot += 5;
        cr_assert_eq(ks_slot_keys(ks, slot), in_slot);
        struct dict *seen = dict_create_kind(DICT_BYTES);
        cr_assert_eq(walk(ks, slot, MAXB), in_slot);
        cr_assert_eq(note(seen, &b), 0, "a key given twice");
        dict_destroy(seen, NULL);
    }
    ks_destroy(ks);
}

/* Without deletes, repeated small walks give keys of the slot each time, and a
 * slot without keys gives none. */
Test(ks_slots, repeated_walks_and_an_empty_slot)
{
    unsigned slot = slot_of("c", 1);
    struct ks *ks = filled("c", 50);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(walk(ks, slot, 7), 7);
    }
    unsigned empty = 0;
    while (ks_slot_keys(ks, empty) != 0) {
        empty++;
    }
    cr_assert_eq(walk(ks, empty, 10), 0);
    cr_assert_eq(walk(ks, slot, 0), 0);
    cr_assert_eq(walk(ks, SLOT_COUNT, 10), 0);
    ks_destroy(ks);
}

struct dirty_keys {
    unsigned slot;
    size_t n;
    char (*keys)[24];
};

static void
collect_slot(void *arg, struct ks_entry *e)
{
    struct dirty_keys *d = arg;
    struct rv_str k = ks_entry_key(e);
    if (slot_of(k.p, k.len) == d->slot) {
        cr_assert(k.len < sizeof(d->keys[0]));
        memcpy(d->keys[d->n], k.p, k.len);
        d->keys[d->n][k.len] = '\0';
        d->n++;
    }
}

/* The deletion of a given-away slot (topology.c's dirty-slot rule) walks the
 * keyspace with SCAN and deletes the slot's keys as it goes, so in hash order:
 * the table shrinks under it with every survivor above the walk, and no step
 * may rebuild a table synchronously. */
Test(ks_slots, dropping_a_big_slot_in_scan_order_never_rebuilds, .timeout = 120)
{
    unsigned slot = slot_of("d", 1);
    size_t n = 200000;
    struct ks *ks = filled("d", n);
    size_t in_slot = ks_slot_keys(ks, slot), total = ks_size(ks);
    struct ks_int_info info;
    struct dirty_keys d = { slot, 0, malloc(8192 * sizeof(*d.keys)) };
    uint64_t c = 0;
    size_t deleted = 0;
    do {
        d.n = 0;
        c = ks_scan(ks, c, 256, collect_slot, &d);
        cr_assert(d.n <= 8192);
        for (size_t i = 0; i < d.n; i++) {
            struct ks_entry *e = ks_peek(ks, d.keys[i], strlen(d.keys[i]));
            cr_assert_not_null(e);
            ks_evict_lazy(ks, e);
            deleted++;
        }
        if (deleted % 64 < 8) {
            cr_assert_eq(ks_int_check(ks), 0);
        }
        ks_rehash_step(ks, 0); /* (one round: the shard's rehash beat between slices) */
    } while (c != 0);
    ks_int_info(ks, &info);
    cr_assert(in_slot >= n);
    cr_assert_eq(deleted, in_slot);
    cr_assert_eq(ks_slot_keys(ks, slot), 0);
    cr_assert_eq(ks_size(ks), total - in_slot);
    cr_assert_eq(info.sync_rebuilds, 0, "%zu synchronous rebuilds", info.sync_rebuilds);
    cr_assert(info.shrinks_abandoned > 0, "no shrink overflowed: the test does not reach the path");
    cr_assert_eq(ks_int_check(ks), 0);
    /* the walk is over: the table shrinks to the survivors' size after all */
    ks_shrink_retry(ks);
    for (int i = 0; i < 100000 && ks_rehash_step(ks, 0); i++) {
    }
    ks_int_info(ks, &info);
    cr_assert_eq(info.main_old_slots, 0);
    cr_assert(info.main_slots <= ks_size(ks) * 10 / 7 + 1, "%zu home slots for %zu keys",
              info.main_slots, ks_size(ks));
    cr_assert_eq(info.sync_rebuilds, 0);
    cr_assert_eq(ks_int_check(ks), 0);
    free(d.keys);
    ks_destroy(ks);
}
