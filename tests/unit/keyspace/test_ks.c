/* tests/unit/keyspace/test_ks.c: keyspace tables, entries, SCAN, expiry. */
#include "node/keyspace/ks.h"

#include "base/clock.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "node/keyspace/ks_int.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S0 UINT64_C(0x1234567890abcdef)
#define S1 UINT64_C(0x0fedcba987654321)
#define NOW INT64_C(1700000000000)

static uint64_t
rng_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static size_t
mkkey(char *buf, const char *pfx, size_t i)
{
    return (size_t)snprintf(buf, 32, "%s%zu", pfx, i);
}

static void
expect_str(struct ks_entry *e, const char *want, size_t wlen)
{
    char scratch[24];
    struct rv_str v;
    cr_assert_not_null(e);
    v = ks_str_get(e, scratch);
    cr_assert_eq(v.len, wlen, "len %zu want %zu", v.len, wlen);
    cr_assert(memcmp(v.p, want, wlen) == 0);
}

/* ------------------------------------------------------------- basics */

Test(ks, create_destroy_empty)
{
    struct ks *ks = ks_create(S0, S1);
    char b[24];
    cr_assert_eq(ks_size(ks), 0);
    cr_assert_null(ks_lookup(ks, "x", 1, NOW));
    cr_assert_null(ks_random(ks, 42));
    cr_assert_eq(ks_scan(ks, 0, 10, NULL, NULL), 0);
    cr_assert(!ks_delete(ks, "x", 1));
    ks_set_str(ks, "a", 1, "hello", 5, KS_NO_EXPIRE, false);
    expect_str(ks_lookup(ks, "a", 1, NOW), "hello", 5);
    cr_assert_eq(ks_str_enc(ks_peek(ks, "a", 1)), KS_ENC_EMBSTR);
    cr_assert_eq(ks_str_get(ks_peek(ks, "a", 1), b).len, 5);
    ks_destroy(ks);
    ks_destroy(NULL);
}

Test(ks, hash_is_seeded)
{
    struct ks *a = ks_create(1, 2), *b = ks_create(1, 3);
    cr_assert_eq(ks_hash(a, "key", 3), ks_hash(a, "key", 3));
    cr_assert_neq(ks_hash(a, "key", 3), ks_hash(b, "key", 3));
    ks_destroy(a);
    ks_destroy(b);
}

/* Random set/delete/lookup against a reference model. */
static void
model_run(size_t nkeys, size_t nops, uint64_t seed)
{
    struct ks *ks = ks_create(seed, ~seed);
    int64_t *ref = malloc(nkeys * sizeof(*ref)); /* -1 absent, else value */
    size_t live = 0;
    char k[32], v[32];
    uint64_t r = seed;

    for (size_t i = 0; i < nkeys; i++) {
        ref[i] = -1;
    }
    for (size_t op = 0; op < nops; op++) {
        uint64_t x = rng_next(&r);
        size_t i = (size_t)(x % nkeys);
        size_t kl = mkkey(k, "key:", i);
        unsigned what = (unsigned)((x >> 32) % 10);
        /* Phases bias toward insert or delete so the table grows and shrinks. */
        bool grow = ((op / (nops / 6 + 1)) & 1) == 0;
        if (what < (grow ? 6u : 2u)) {
            int64_t val = (int64_t)(x >> 40);
            size_t vl = (size_t)snprintf(v, sizeof(v), "v%" PRId64, val);
            ks_set_str(ks, k, kl, v, vl, KS_NO_EXPIRE, false);
            if (ref[i] < 0) {
                live++;
            }
            ref[i] = val;
        } else if (what < 8) {
            bool had = ks_delete(ks, k, kl);
            cr_assert_eq(had, ref[i] >= 0);
            if (had) {
                live--;
            }
            ref[i] = -1;
        } else {
            struct ks_entry *e = ks_lookup(ks, k, kl, NOW);
            if (ref[i] < 0) {
                cr_assert_null(e);
            } else {
                size_t vl = (size_t)snprintf(v, sizeof(v), "v%" PRId64, ref[i]);
                expect_str(e, v, vl);
                cr_assert_eq(ks_entry_key(e).len, kl);
                cr_assert(memcmp(ks_entry_key(e).p, k, kl) == 0);
            }
        }
        cr_assert_eq(ks_size(ks), live);
        if (op % (nops / 8 + 1) == 0) {
            cr_assert_eq(ks_int_check(ks), 0, "invariants at op %zu: %d", op, ks_int_check(ks));
        }
    }
    cr_assert_eq(ks_int_check(ks), 0);
    for (size_t i = 0; i < nkeys; i++) {
        size_t kl = mkkey(k, "key:", i);
        struct ks_entry *e = ks_peek(ks, k, kl);
        cr_assert_eq(e != NULL, ref[i] >= 0);
    }
    free(ref);
    ks_destroy(ks);
}

Test(ks, model_small_many_seeds)
{
    for (uint64_t s = 1; s <= 20; s++) {
        model_run(500, 20000, s);
    }
}

Test(ks, model_large, .timeout = 120)
{
    model_run(200000, 1500000, 7);
}

Test(ks, insert_lookup_delete_1m, .timeout = 120)
{
    struct ks *ks = ks_create(S0, S1);
    char k[32];
    const size_t n = 1000000;
    struct ks_int_info info;

    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", i);
        ks_set_int(ks, k, kl, (int64_t)i, KS_NO_EXPIRE, false);
    }
    cr_assert_eq(ks_size(ks), n);
    cr_assert_eq(ks_int_check(ks), 0);
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", i);
        struct ks_entry *e = ks_lookup(ks, k, kl, NOW);
        cr_assert_not_null(e);
        cr_assert_eq(ks_str_int(e), (int64_t)i);
    }
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "x", i);
        cr_assert_null(ks_lookup(ks, k, kl, NOW));
    }
    ks_int_info(ks, &info);
    cr_log_info(
        "1M keys: %zu home slots, max probe distance %zu, overflow grows %zu, sync rebuilds %zu",
        info.main_slots, info.max_dist, info.overflow_grows, info.sync_rebuilds);
    for (size_t i = 0; i < n; i += 2) {
        size_t kl = mkkey(k, "k", i);
        cr_assert(ks_delete(ks, k, kl));
    }
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", i);
        cr_assert_eq(ks_peek(ks, k, kl) != NULL, (i & 1) == 1);
    }
    for (size_t i = 1; i < n; i += 2) {
        size_t kl = mkkey(k, "k", i);
        cr_assert(ks_delete(ks, k, kl));
    }
    cr_assert_eq(ks_size(ks), 0);
    while (ks_rehash_step(ks, 1000)) {
    }
    ks_int_info(ks, &info);
    cr_assert_leq(info.main_slots, 64, "shrunk back: %zu", info.main_slots);
    cr_assert_eq(ks_int_check(ks), 0);
    ks_destroy(ks);
}

/* ------------------------------------------------------------- rehashing */

Test(ks, rehash_every_key_findable_and_bounded_work, .timeout = 120)
{
    struct ks *ks = ks_create(S0, S1);
    const size_t n = 3000;
    bool *present = calloc(n, 1);
    char k[32];
    size_t resizes_seen = 0, max_moves = 0;
    struct ks_int_info info;
    uint64_t r = 99;

    /* Grow from empty to n, then shrink to 0, twice; check every key after every op. */
    for (int round = 0; round < 2; round++) {
        for (int phase = 0; phase < 2; phase++) {
            for (size_t step = 0; step < n; step++) {
                size_t i = phase == 0 ? step : (size_t)(rng_next(&r) % n);
                size_t kl = mkkey(k, "r", i);
                if (phase == 0) {
                    ks_set_str(ks, k, kl, k, kl, KS_NO_EXPIRE, false);
                    present[i] = true;
                } else {
                    ks_delete(ks, k, kl);
                    present[i] = false;
                }
                ks_int_info(ks, &info);
                if (info.main_old_slots) {
                    resizes_seen++;
                }
                if (info.last_op_moves > max_moves) {
                    max_moves = info.last_op_moves;
                }
                cr_assert_leq(info.last_op_moves, 8, "op moved %zu entries", info.last_op_moves);
                if (step % 7 == 0 || info.main_old_slots) {
                    for (size_t j = 0; j < n; j++) {
                        size_t jl = mkkey(k, "r", j);
                        cr_assert_eq(ks_peek(ks, k, jl) != NULL, present[j], "key %zu step %zu", j,
                                     step);
                    }
                }
            }
            if (phase == 1) {
                for (size_t i = 0; i < n; i++) {
                    size_t kl = mkkey(k, "r", i);
                    ks_delete(ks, k, kl);
                    present[i] = false;
                }
            }
            cr_assert_eq(ks_int_check(ks), 0);
        }
    }
    ks_int_info(ks, &info);
    cr_assert_gt(resizes_seen, 100);
    cr_assert_eq(info.sync_rebuilds, 0);
    cr_log_info("rehash: ops during resize %zu, max entries moved by one op %zu", resizes_seen,
                max_moves);
    free(present);
    ks_destroy(ks);
}

Test(ks, rehash_step_budget)
{
    struct ks *ks = ks_create(S0, S1);
    char k[32];
    size_t calls = 0;
    for (size_t i = 0; i < 200000; i++) {
        size_t kl = mkkey(k, "b", i);
        ks_set_int(ks, k, kl, 1, KS_NO_EXPIRE, false);
    }
    while (ks_rehash_step(ks, 100)) {
        calls++;
    }
    cr_assert_eq(ks_stats(ks)->rehashing, 0);
    cr_assert_eq(ks_int_check(ks), 0);
    /* Trigger a shrink and drain it with the timer only. */
    for (size_t i = 0; i < 195000; i++) {
        size_t kl = mkkey(k, "b", i);
        ks_delete(ks, k, kl);
    }
    while (ks_rehash_step(ks, 100)) {
        calls++;
    }
    cr_assert_eq(ks_int_check(ks), 0);
    for (size_t i = 195000; i < 200000; i++) {
        size_t kl = mkkey(k, "b", i);
        cr_assert_not_null(ks_peek(ks, k, kl));
    }
    ks_destroy(ks);
}

/* ------------------------------------------------------------------ SCAN */

struct scan_ctx {
    uint8_t *seen; /* per stable key */
    size_t nstable;
    size_t visits;
};

static void
scan_cb(void *arg, struct ks_entry *e)
{
    struct scan_ctx *c = arg;
    struct rv_str k = ks_entry_key(e);
    c->visits++;
    if (k.len > 1 && k.p[0] == 's') {
        size_t i = (size_t)strtoul(k.p + 1, NULL, 10);
        if (i < c->nstable) {
            c->seen[i] = 1;
        }
    }
}

/* Returns how many scan calls found the table mid-resize. */
static size_t
scan_run(uint64_t seed, size_t nstable, size_t nvol, int mode)
{
    struct ks *ks = ks_create(seed * 3 + 1, seed ^ 0xabcdef);
    struct scan_ctx c = { calloc(nstable, 1), nstable, 0 };
    char k[32];
    uint64_t r = seed, cur = 0;
    size_t calls = 0, vol_live = 0, resize_calls = 0;
    struct ks_int_info info;

    for (size_t i = 0; i < nstable; i++) {
        size_t kl = mkkey(k, "s", i);
        ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
    }
    if (mode == 1) {
        /* Start large so that deleting the volatile keys shrinks mid-scan. */
        for (size_t i = 0; i < nvol * 4; i++) {
            size_t kl = mkkey(k, "v", i);
            ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
        }
        vol_live = nvol * 4;
    }
    do {
        cur = ks_scan(ks, cur, 1 + (size_t)(rng_next(&r) % 20), scan_cb, &c);
        calls++;
        /* Mutate between calls: grow (mode 0) or shrink (mode 1), with noise. */
        for (int j = 0; mode == 1 && j < 200 && vol_live > 0; j++) {
            size_t kl = mkkey(k, "v", --vol_live); /* drain: forces a shrink mid-scan */
            ks_delete(ks, k, kl);
        }
        for (int j = 0; j < 20; j++) {
            uint64_t x = rng_next(&r);
            if (mode == 0 ? (x % 4 != 0) : (x % 2 == 0)) {
                size_t kl = mkkey(k, mode == 0 ? "v" : "w", (size_t)(x >> 20) % (nvol * 4));
                ks_set_str(ks, k, kl, "x", 1, KS_NO_EXPIRE, false);
            } else {
                size_t kl = mkkey(k, mode == 0 ? "v" : "w", (size_t)(x >> 20) % (nvol * 4));
                ks_delete(ks, k, kl);
            }
        }
        ks_int_info(ks, &info);
        if (info.main_old_slots != 0 && (mode == 0 ? info.main_old_slots < info.main_slots
                                                   : info.main_old_slots > info.main_slots)) {
            resize_calls++;
        }
        if (rng_next(&r) % 8 == 0) {
            ks_rehash_step(ks, 5);
        }
        cr_assert_lt(calls, 10000000);
    } while (cur != 0);
    for (size_t i = 0; i < nstable; i++) {
        cr_assert(c.seen[i], "seed %" PRIu64 " mode %d: stable key %zu not returned", seed, mode,
                  i);
    }
    free(c.seen);
    ks_destroy(ks);
    return resize_calls;
}

Test(ks, scan_completeness_growing, .timeout = 120)
{
    size_t mid = 0;
    for (uint64_t s = 1; s <= 40; s++) {
        mid += scan_run(s, 300 + s * 37, 2000, 0) != 0;
    }
    cr_assert_geq(mid, 30, "only %zu scans saw a grow in progress", mid);
}

Test(ks, scan_completeness_shrinking, .timeout = 120)
{
    size_t mid = 0;
    for (uint64_t s = 1; s <= 40; s++) {
        mid += scan_run(s, 100 + s * 11, 2000, 1) != 0;
    }
    cr_assert_geq(mid, 30, "only %zu scans saw a shrink in progress", mid);
}

Test(ks, scan_static_exactly_once)
{
    struct ks *ks = ks_create(S0, S1);
    struct scan_ctx c = { calloc(5000, 1), 5000, 0 };
    char k[32];
    uint64_t cur = 0;
    for (size_t i = 0; i < 5000; i++) {
        size_t kl = mkkey(k, "s", i);
        ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
    }
    while (ks_rehash_step(ks, 1000)) {
    }
    do {
        cur = ks_scan(ks, cur, 10, scan_cb, &c);
    } while (cur != 0);
    cr_assert_eq(c.visits, 5000, "no duplicates without resizes: %zu", c.visits);
    for (size_t i = 0; i < 5000; i++) {
        cr_assert(c.seen[i]);
    }
    free(c.seen);
    ks_destroy(ks);
}

/* ---------------------------------------------------------------- expiry */

Test(ks, expiry_lazy)
{
    struct ks *ks = ks_create(S0, S1);
    ks_set_str(ks, "a", 1, "1", 1, NOW + 100, false);
    ks_set_str(ks, "b", 1, "2", 1, KS_NO_EXPIRE, false);
    cr_assert_eq(ks_expires_size(ks), 1);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "a", 1)), NOW + 100);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "b", 1)), KS_NO_EXPIRE);
    cr_assert_not_null(ks_lookup(ks, "a", 1, NOW + 99));
    cr_assert_null(ks_lookup(ks, "a", 1, NOW + 100));
    cr_assert_eq(ks_size(ks), 1);
    cr_assert_eq(ks_expires_size(ks), 0);
    cr_assert_eq(ks_stats(ks)->expired_keys, 1);
    /* set_expire / clear */
    ks_set_expire(ks, ks_peek(ks, "b", 1), NOW + 5);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "b", 1)), NOW + 5);
    expect_str(ks_peek(ks, "b", 1), "2", 1);
    cr_assert_eq(ks_expires_size(ks), 1);
    ks_set_expire(ks, ks_peek(ks, "b", 1), NOW + 7);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "b", 1)), NOW + 7);
    ks_set_expire(ks, ks_peek(ks, "b", 1), KS_NO_EXPIRE);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "b", 1)), KS_NO_EXPIRE);
    expect_str(ks_peek(ks, "b", 1), "2", 1);
    cr_assert_eq(ks_expires_size(ks), 0);
    /* overwrite drops the TTL unless keep_ttl */
    ks_set_str(ks, "c", 1, "x", 1, NOW + 500, false);
    ks_set_str(ks, "c", 1, "y", 1, KS_NO_EXPIRE, true);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "c", 1)), NOW + 500);
    ks_set_str(ks, "c", 1, "z", 1, KS_NO_EXPIRE, false);
    cr_assert_eq(ks_entry_expire(ks_peek(ks, "c", 1)), KS_NO_EXPIRE);
    cr_assert_eq(ks_expires_size(ks), 0);
    cr_assert_eq(ks_int_check(ks), 0);
    ks_destroy(ks);
}

Test(ks, expiry_active_reclaims_bounded, .timeout = 60)
{
    struct ks *ks = ks_create(S0, S1);
    char k[32];
    const size_t n = 100000;
    size_t total = 0, rounds = 0;
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "e", i);
        /* half expire at NOW+10, a quarter never, a quarter much later */
        int64_t dl = i % 2 == 0 ? NOW + 10 : (i % 4 == 1 ? KS_NO_EXPIRE : NOW + 1000000);
        ks_set_str(ks, k, kl, "value", 5, dl, false);
    }
    cr_assert_eq(ks_expires_size(ks), n / 2 + n / 4);
    cr_assert_eq(ks_active_expire(ks, NOW, 1000), 0);
    while (ks_size(ks) > n / 2) {
        uint64_t t0 = clock_mono_us();
        size_t d = ks_active_expire(ks, NOW + 20, 500);
        uint64_t dt = clock_mono_us() - t0;
        cr_assert_lt(dt, 50000, "active expiry overran its budget: %" PRIu64 " us", dt);
        total += d;
        rounds++;
        cr_assert_lt(rounds, 100000);
    }
    cr_assert_eq(total, n / 2);
    cr_assert_eq(ks_stats(ks)->expired_keys, n / 2);
    cr_assert_eq(ks_expires_size(ks), n / 4);
    cr_assert_eq(ks_int_check(ks), 0);
    /* Nothing stale left: a cycle finds nothing and stops after one sample. */
    cr_assert_eq(ks_active_expire(ks, NOW + 20, 1000), 0);
    cr_assert_eq(ks_stats(ks)->expired_stale_perc, 0);
    cr_log_info("active expiry: %zu keys in %zu cycles", total, rounds);
    ks_destroy(ks);
}

/* ------------------------------------------------------------ int encoding */

Test(ks, int_canonical_form)
{
    static const char *no[] = { "012",
                                "+1",
                                "-0",
                                " 1",
                                "1 ",
                                "",
                                "-",
                                "1a",
                                "00",
                                "9223372036854775808",
                                "-9223372036854775809",
                                "99999999999999999999",
                                "123456789012345678901" };
    static const struct {
        const char *s;
        int64_t v;
    } yes[] = {
        { "-1", -1 },
        { "0", 0 },
        { "9223372036854775807", INT64_MAX },
        { "-9223372036854775808", INT64_MIN },
        { "127", 127 },
        { "-128", -128 },
        { "128", 128 },
        { "32768", 32768 },
        { "2147483648", INT64_C(2147483648) },
    };
    struct ks *ks = ks_create(S0, S1);
    int64_t v;
    char scratch[24];
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        cr_assert(!ks_str_parse_int(no[i], strlen(no[i]), &v), "%s", no[i]);
        ks_set_str(ks, "k", 1, no[i], strlen(no[i]), KS_NO_EXPIRE, false);
        cr_assert(!ks_str_is_int(ks_peek(ks, "k", 1)), "%s", no[i]);
        expect_str(ks_peek(ks, "k", 1), no[i], strlen(no[i]));
    }
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        struct ks_entry *e;
        cr_assert(ks_str_parse_int(yes[i].s, strlen(yes[i].s), &v), "%s", yes[i].s);
        cr_assert_eq(v, yes[i].v);
        e = ks_set_str(ks, "k", 1, yes[i].s, strlen(yes[i].s), KS_NO_EXPIRE, false);
        cr_assert(ks_str_is_int(e));
        cr_assert_eq(ks_str_enc(e), KS_ENC_INT);
        cr_assert_eq(ks_str_int(e), yes[i].v);
        cr_assert_eq(ks_str_len(e), strlen(yes[i].s));
        expect_str(e, yes[i].s, strlen(yes[i].s));
        (void)scratch;
    }
    ks_destroy(ks);
}

Test(ks, int_roundtrip_and_inplace_update)
{
    struct ks *ks = ks_create(S0, S1);
    static const int64_t vals[] = { 0,
                                    1,
                                    -1,
                                    127,
                                    128,
                                    -128,
                                    -129,
                                    32767,
                                    32768,
                                    -32768,
                                    -32769,
                                    INT32_MAX,
                                    (int64_t)INT32_MAX + 1,
                                    INT32_MIN,
                                    (int64_t)INT32_MIN - 1,
                                    INT64_MAX,
                                    INT64_MIN };
    char want[24];
    struct ks_entry *e;
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        e = ks_set_int(ks, "n", 1, vals[i], KS_NO_EXPIRE, false);
        cr_assert_eq(ks_str_int(e), vals[i]);
        snprintf(want, sizeof(want), "%" PRId64, vals[i]);
        expect_str(e, want, strlen(want));
    }
    /* INCR-style updates across widths, with a TTL that must survive. */
    ks_set_int(ks, "counter", 7, 0, NOW + 1000, false);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        e = ks_peek(ks, "counter", 7);
        ks_str_set_int(ks, e, vals[i]);
        e = ks_peek(ks, "counter", 7);
        cr_assert_eq(ks_str_int(e), vals[i]);
        cr_assert_eq(ks_entry_expire(e), NOW + 1000);
    }
    /* Narrow value in place stays in place. */
    e = ks_set_int(ks, "c2", 2, 5, KS_NO_EXPIRE, false);
    ks_str_set_int(ks, e, 6);
    cr_assert_eq(ks_peek(ks, "c2", 2), e);
    cr_assert_eq(ks_str_int(e), 6);
    cr_assert_eq(ks_int_check(ks), 0);
    ks_destroy(ks);
}

/* Under jemalloc the usable size is the size class; with another allocator
 * (sanitizer builds) it is at least the bytes asked for. */
static void
expect_class(struct ks_entry *e, size_t cls)
{
#ifndef RV_NO_JEMALLOC
    cr_assert_eq(ks_entry_mem(e), cls, "entry in class %zu, want %zu", ks_entry_mem(e), cls);
#else
    cr_assert_leq(ks_entry_mem(e), cls + 15);
#endif
}

Test(ks, entry_size_classes)
{
    struct ks *ks = ks_create(S0, S1);
    char val[64];
    struct ks_entry *e;
    memset(val, 'x', sizeof(val));
    e = ks_set_str(ks, "k123456", 7, val, 64, KS_NO_EXPIRE, false);
    expect_class(e, 80);
    cr_assert_eq(ks_str_enc(e), KS_ENC_RAW);
    e = ks_set_str(ks, "k123457", 7, val, 44, KS_NO_EXPIRE, false);
    cr_assert_eq(ks_str_enc(e), KS_ENC_EMBSTR);
    e = ks_set_str(ks, "k123458", 7, val, 45, KS_NO_EXPIRE, false);
    cr_assert_eq(ks_str_enc(e), KS_ENC_RAW);
    e = ks_set_str(ks, "k123459", 7, "1", 1, KS_NO_EXPIRE, false);
    expect_class(e, 16);
    e = ks_set_int(ks, "k999999", 7, 999999, KS_NO_EXPIRE, false);
    expect_class(e, 16);
    e = ks_set_int(ks, "k999998", 7, INT32_MIN, KS_NO_EXPIRE, false);
    expect_class(e, 16);
    ks_destroy(ks);
}

Test(ks, str_resize)
{
    struct ks *ks = ks_create(S0, S1);
    struct ks_entry *e;
    char *p;
    char big[300];

    /* int -> raw */
    ks_set_int(ks, "i", 1, 12345, NOW + 99, false);
    e = ks_peek(ks, "i", 1);
    p = ks_str_resize(ks, &e, 8);
    cr_assert(memcmp(p, "12345\0\0\0", 8) == 0);
    cr_assert_eq(ks_peek(ks, "i", 1), e);
    cr_assert_eq(ks_str_enc(e), KS_ENC_RAW);
    cr_assert(!ks_str_is_int(e));
    cr_assert_eq(ks_entry_expire(e), NOW + 99);
    memcpy(p + 5, "abc", 3);
    expect_str(e, "12345abc", 8);
    /* growth across the 1-byte varint boundary and several size classes */
    for (size_t n = 9; n < 300; n += 13) {
        p = ks_str_resize(ks, &e, n);
        memset(p + n - 1, 'z', 1);
        cr_assert_eq(ks_peek(ks, "i", 1), e);
        cr_assert_eq(ks_str_len(e), n);
        cr_assert_eq(ks_entry_expire(e), NOW + 99);
        cr_assert(memcmp(ks_str_get(e, big).p, "12345abc", 8) == 0);
    }
    /* shrink back */
    p = ks_str_resize(ks, &e, 3);
    expect_str(e, "123", 3);
    cr_assert_eq(ks_entry_expire(e), NOW + 99);
    cr_assert_eq(ks_str_enc(e), KS_ENC_RAW); /* APPEND-made strings stay raw */
    p = ks_str_resize(ks, &e, 0);
    cr_assert_eq(ks_str_len(e), 0);
    /* embstr -> raw */
    memset(big, 'q', sizeof(big));
    e = ks_set_str(ks, "s", 1, big, 10, KS_NO_EXPIRE, false);
    p = ks_str_resize(ks, &e, 200);
    cr_assert(memcmp(p, big, 10) == 0);
    for (size_t i = 10; i < 200; i++) {
        cr_assert_eq(p[i], 0);
    }
    cr_assert_eq(ks_entry_expire(e), KS_NO_EXPIRE);
    cr_assert_eq(ks_int_check(ks), 0);
    cr_assert_eq(ks_expires_size(ks), 1);
    ks_destroy(ks);
}

static int freed_count;

static void
count_free(void *p)
{
    freed_count++;
    free(p);
}

Test(ks, ptr_values_rename_copy)
{
    struct ks *ks = ks_create(S0, S1);
    struct ks_entry *e;
    freed_count = 0;

    e = ks_set_ptr(ks, "L", 1, KS_LIST, malloc(8), count_free, NOW + 500);
    cr_assert_eq(ks_entry_type(e), KS_LIST);
    cr_assert_not_null(ks_entry_ptr(e));
    cr_assert_eq(ks_entry_expire(e), NOW + 500);
    cr_assert_null(ks_copy(ks, e, "L2", 2));
    /* rename moves ownership: nothing freed */
    cr_assert(ks_rename(ks, "L", 1, "M", 1));
    cr_assert_eq(freed_count, 0);
    cr_assert_null(ks_peek(ks, "L", 1));
    e = ks_peek(ks, "M", 1);
    cr_assert_eq(ks_entry_type(e), KS_LIST);
    cr_assert_eq(ks_entry_expire(e), NOW + 500);
    /* overwrite by a string frees the object */
    ks_set_str(ks, "M", 1, "s", 1, KS_NO_EXPIRE, false);
    cr_assert_eq(freed_count, 1);
    cr_assert_eq(ks_expires_size(ks), 0);
    /* rename over an existing ptr key frees the target's object */
    ks_set_ptr(ks, "T", 1, KS_SET, malloc(8), count_free, KS_NO_EXPIRE);
    cr_assert(ks_rename(ks, "M", 1, "T", 1));
    cr_assert_eq(freed_count, 2);
    expect_str(ks_peek(ks, "T", 1), "s", 1);
    cr_assert(!ks_rename(ks, "nope", 4, "T", 1));
    expect_str(ks_peek(ks, "T", 1), "s", 1);
    /* delete and flush free objects */
    ks_set_ptr(ks, "H", 1, KS_HASH, malloc(8), count_free, KS_NO_EXPIRE);
    cr_assert(ks_delete(ks, "H", 1));
    cr_assert_eq(freed_count, 3);
    ks_set_ptr(ks, "Z", 1, KS_ZSET, malloc(8), count_free, NOW + 1);
    ks_flush(ks);
    cr_assert_eq(freed_count, 4);
    cr_assert_eq(ks_size(ks), 0);
    cr_assert_eq(ks_expires_size(ks), 0);
    ks_set_str(ks, "after", 5, "flush", 5, KS_NO_EXPIRE, false);
    expect_str(ks_peek(ks, "after", 5), "flush", 5);
    ks_destroy(ks);
}

Test(ks, rename_copy_strings_with_ttl)
{
    struct ks *ks = ks_create(S0, S1);
    struct ks_entry *e, *c;
    char longv[100];
    memset(longv, 'L', sizeof(longv));

    ks_set_str(ks, "src", 3, longv, sizeof(longv), NOW + 1234, false);
    ks_set_str(ks, "dst", 3, "old", 3, KS_NO_EXPIRE, false);
    cr_assert(ks_rename(ks, "src", 3, "dst", 3));
    cr_assert_null(ks_peek(ks, "src", 3));
    e = ks_peek(ks, "dst", 3);
    expect_str(e, longv, sizeof(longv));
    cr_assert_eq(ks_entry_expire(e), NOW + 1234);
    cr_assert_eq(ks_expires_size(ks), 1);
    cr_assert_eq(ks_size(ks), 1);
    /* rename to a longer key (header/varint sizes differ) */
    char lk[200];
    memset(lk, 'k', sizeof(lk));
    cr_assert(ks_rename(ks, "dst", 3, lk, sizeof(lk)));
    e = ks_peek(ks, lk, sizeof(lk));
    expect_str(e, longv, sizeof(longv));
    cr_assert_eq(ks_entry_expire(e), NOW + 1234);
    cr_assert(ks_rename(ks, lk, sizeof(lk), lk, sizeof(lk))); /* same name: no-op */
    /* copy keeps the source, copies the TTL, replaces the target */
    ks_set_int(ks, "tgt", 3, 77, NOW + 5, false);
    c = ks_copy(ks, ks_peek(ks, lk, sizeof(lk)), "tgt", 3);
    expect_str(c, longv, sizeof(longv));
    cr_assert_eq(ks_entry_expire(c), NOW + 1234);
    expect_str(ks_peek(ks, lk, sizeof(lk)), longv, sizeof(longv));
    ks_set_int(ks, "num", 3, -42, KS_NO_EXPIRE, false);
    c = ks_copy(ks, ks_peek(ks, "num", 3), "num2", 4);
    cr_assert(ks_str_is_int(c));
    cr_assert_eq(ks_str_int(c), -42);
    cr_assert_eq(ks_entry_expire(c), KS_NO_EXPIRE);
    cr_assert_eq(ks_expires_size(ks), 2);
    cr_assert_eq(ks_int_check(ks), 0);
    ks_destroy(ks);
}

Test(ks, idle_clock)
{
    struct ks *ks = ks_create(S0, S1);
    struct ks_entry *e;
    ks_set_clock(ks, NOW);
    ks_set_str(ks, "a", 1, "b", 1, KS_NO_EXPIRE, false);
    e = ks_peek(ks, "a", 1);
    cr_assert_eq(ks_entry_idle_ms(e, NOW + 10000), 10000);
    e = ks_lookup(ks, "a", 1, NOW + 5000);
    cr_assert_eq(ks_entry_idle_ms(e, NOW + 10000), 5000);
    e = ks_peek(ks, "a", 1); /* peek does not touch */
    cr_assert_eq(ks_entry_idle_ms(e, NOW + 10000), 5000);
    ks_destroy(ks);
}

Test(ks, random_entry)
{
    struct ks *ks = ks_create(S0, S1);
    char k[32];
    size_t hits[50] = { 0 };
    uint64_t r = 5;
    for (size_t i = 0; i < 50; i++) {
        size_t kl = mkkey(k, "", i);
        ks_set_str(ks, k, kl, "v", 1, KS_NO_EXPIRE, false);
    }
    for (int i = 0; i < 20000; i++) {
        struct ks_entry *e = ks_random(ks, rng_next(&r));
        struct rv_str key = ks_entry_key(e);
        hits[strtoul(key.p, NULL, 10)]++;
    }
    for (size_t i = 0; i < 50; i++) {
        cr_assert_gt(hits[i], 0, "key %zu never chosen", i);
    }
    ks_destroy(ks);
}

/* ------------------------------------------------- memory (informational) */

Test(ks, memory_per_key_report, .timeout = 120)
{
    struct ks *ks;
    char k[32], val[64];
    size_t before, after;
    const size_t n = 1000000;
    uint64_t t0, t1;
    struct ks_int_info info;

    memset(val, 'v', sizeof(val));
    before = rv_mem_allocated();
    ks = ks_create(S0, S1);
    t0 = clock_mono_us();
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", i);
        ks_set_str(ks, k, kl, val, sizeof(val), KS_NO_EXPIRE, false);
    }
    t1 = clock_mono_us();
    while (ks_rehash_step(ks, 10000)) {
    }
    after = rv_mem_allocated();
    ks_int_info(ks, &info);
    cr_log_info("1M x 64B strings: %.1f bytes/key allocated (table %zu home slots, load %.2f), "
                "set %.0f ns/op",
                (double)(after - before) / (double)n, info.main_slots,
                (double)n / (double)info.main_slots, (double)(t1 - t0) * 1000.0 / (double)n);
    t0 = clock_mono_us();
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", (i * 7919) % n);
        if (ks_lookup(ks, k, kl, NOW) == NULL) {
            cr_assert_fail("missing");
        }
    }
    t1 = clock_mono_us();
    cr_log_info("lookup hit (random order, incl. key formatting) %.0f ns/op",
                (double)(t1 - t0) * 1000.0 / (double)n);
    ks_destroy(ks);

    before = rv_mem_allocated();
    ks = ks_create(S0, S1);
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", i);
        ks_set_int(ks, k, kl, 1, KS_NO_EXPIRE, false);
    }
    while (ks_rehash_step(ks, 10000)) {
    }
    after = rv_mem_allocated();
    cr_log_info("1M counters: %.1f bytes/key allocated", (double)(after - before) / (double)n);
    t0 = clock_mono_us();
    for (size_t i = 0; i < n; i++) {
        size_t kl = mkkey(k, "k", (i * 7919) % n);
        struct ks_entry *e = ks_lookup(ks, k, kl, NOW);
        ks_str_set_int(ks, e, ks_str_int(e) + 1);
    }
    t1 = clock_mono_us();
    cr_log_info("INCR path (lookup + set_int) %.0f ns/op", (double)(t1 - t0) * 1000.0 / (double)n);
    ks_destroy(ks);
}

/* ---- eviction support (node/features/evict.c) ---- */

static void
count_hook(void *arg, const struct ks_entry *e)
{
    (void)e;
    (*(int *)arg)++;
}

Test(ks, lfu_counter_grows_logarithmically_and_decays)
{
    struct ks *ks = ks_create(S0, S1);
    ks_set_clock(ks, NOW);
    ks_set_lfu(ks, true, 10, 1);
    cr_assert(ks_lfu(ks));
    ks_set_str(ks, "k", 1, "v", 1, KS_NO_EXPIRE, false);
    struct ks_entry *e = ks_peek(ks, "k", 1);
    cr_assert_eq(ks_entry_freq(ks, e, NOW), 5); /* new keys start at 5 */
    for (int i = 0; i < 1000; i++) {
        e = ks_lookup(ks, "k", 1, NOW);
    }
    unsigned hot = ks_entry_freq(ks, e, NOW);
    cr_assert(hot > 10 && hot < 40, "1000 hits with factor 10: %u", hot);
    /* overwriting keeps the counter */
    ks_set_str(ks, "k", 1, "w", 1, KS_NO_EXPIRE, false);
    e = ks_peek(ks, "k", 1);
    cr_assert_eq(ks_entry_freq(ks, e, NOW), hot);
    /* one step per idle minute */
    cr_assert_eq(ks_entry_freq(ks, e, NOW + 3 * 60000), hot - 3);
    cr_assert_eq(ks_entry_freq(ks, e, NOW + 300 * 60000), 0);
    ks_entry_set_freq(e, NOW, 200);
    cr_assert_eq(ks_entry_freq(ks, e, NOW), 200);
    ks_destroy(ks);
}

Test(ks, random_volatile_and_evict)
{
    struct ks *ks = ks_create(S0, S1);
    int hooks = 0;
    char k[32];
    ks_set_clock(ks, NOW);
    ks_set_expire_hook(ks, count_hook, &hooks);
    cr_assert_null(ks_random_volatile(ks, 1));
    for (size_t i = 0; i < 1000; i++) {
        size_t n = mkkey(k, i % 10 == 0 ? "t" : "p", i);
        ks_set_str(ks, k, n, "v", 1, i % 10 == 0 ? NOW + 100000 : KS_NO_EXPIRE, false);
    }
    uint64_t r = 42;
    for (int i = 0; i < 200; i++) {
        struct ks_entry *e = ks_random_volatile(ks, rng_next(&r));
        cr_assert_not_null(e);
        cr_assert_neq(ks_entry_expire(e), KS_NO_EXPIRE);
    }
    size_t before = ks_size(ks), exp_before = ks_expires_size(ks);
    struct ks_entry *e = ks_random_volatile(ks, 7);
    ks_evict(ks, e);
    cr_assert_eq(hooks, 1);
    cr_assert_eq(ks_size(ks), before - 1);
    cr_assert_eq(ks_expires_size(ks), exp_before - 1);
    cr_assert_eq(ks_int_check(ks), 0);
    ks_destroy(ks);
}

/* INCR growing an integer past its width reallocates the entry while an
 * incremental rehash is in progress: the rehash must never read the entry's
 * old (freed) address. Every counter is grown from 1 byte to 8 while the
 * table is migrating; under ASan a read of a freed entry aborts. */
Test(ks, int_growth_during_rehash_keeps_every_key)
{
    struct ks *ks = ks_create(S0, S1);
    char k[32];
    const int n = 20000;
    bool saw_rehash = false;
    for (int i = 0; i < n; i++) {
        int kl = snprintf(k, sizeof(k), "ctr:%d", i);
        ks_set_int(ks, k, (size_t)kl, 1, KS_NO_EXPIRE, false);
        if (i % 3 == 0 && i > 0) {
            /* grow an earlier counter while the table may be migrating */
            int j = i / 2;
            int jl = snprintf(k, sizeof(k), "ctr:%d", j);
            struct ks_entry *e = ks_lookup(ks, k, (size_t)jl, NOW);
            cr_assert_not_null(e);
            saw_rehash |= ks_stats(ks)->rehashing != 0;
            ks_str_set_int(ks, e, INT64_C(1) << 40 | j);
        }
    }
    cr_assert(saw_rehash, "the table never rehashed while counters grew");
    for (int i = 0; i < n; i++) {
        int kl = snprintf(k, sizeof(k), "ctr:%d", i);
        struct ks_entry *e = ks_lookup(ks, k, (size_t)kl, NOW);
        cr_assert_not_null(e, "ctr:%d lost", i);
        int64_t v = ks_str_int(e);
        cr_assert(v == 1 || v == (INT64_C(1) << 40 | i), "ctr:%d = %" PRId64, i, v);
    }
    ks_destroy(ks);
}

/* The inline key compare answers as memcmp does, for every length up to 40
 * and a difference at every position (or none). */
Test(ks, key_compare_is_memcmp)
{
    uint64_t s = 7;
    uint8_t a[48];
    char b[48];
    for (size_t n = 0; n <= 40; n++) {
        for (int t = 0; t < 2000; t++) {
            for (size_t i = 0; i < n; i++) {
                a[i] = (uint8_t)rng_next(&s);
                b[i] = (char)a[i];
            }
            if (n > 0 && t % 4 != 0) {
                size_t at = rng_next(&s) % n;
                b[at] = (char)(b[at] ^ (uint8_t)(1u << (rng_next(&s) % 8)));
            }
            cr_assert_eq(ks_int_key_eq(a, b, n), memcmp(a, b, n) == 0, "n %zu", n);
        }
    }
}

/* Keys that differ in a single byte, at every position of every length up
 * to 40 (the inline compare covers 4-16 bytes with overlapping loads): each
 * finds its own value and none finds another's. Several seeds, so that many
 * pairs share a slot tag and are told apart by their bytes. */
Test(ks, near_identical_keys_are_told_apart, .timeout = 60)
{
    char k[40], v[16];
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct ks *ks = ks_create(S0 * seed, S1 + seed);
        for (size_t len = 1; len <= 40; len++) {
            for (size_t i = 0; i < len; i++) {
                for (int c = 0; c < 24; c++) {
                    memset(k, '-', len);
                    k[i] = (char)('a' + c);
                    int vl = snprintf(v, sizeof(v), "%zu.%zu.%d", len, i, c);
                    ks_set_str(ks, k, len, v, (size_t)vl, KS_NO_EXPIRE, false);
                }
            }
        }
        for (size_t len = 1; len <= 40; len++) {
            for (size_t i = 0; i < len; i++) {
                for (int c = 0; c < 24; c++) {
                    memset(k, '-', len);
                    k[i] = (char)('a' + c);
                    int vl = snprintf(v, sizeof(v), "%zu.%zu.%d", len, i, c);
                    expect_str(ks_lookup(ks, k, len, NOW), v, (size_t)vl);
                    k[i] = (char)('A' + c); /* absent: one byte off */
                    cr_assert_null(ks_peek(ks, k, len));
                }
            }
        }
        ks_destroy(ks);
    }
}

/* Overwrites in place, with the same layout (header rewritten field by field)
 * or not: value, deadline and the expires index come out as a fresh SET's. */
Test(ks, overwrite_in_place_same_and_other_layout)
{
    struct ks *ks = ks_create(S0, S1);
    static const size_t lens[] = { 0, 1, 20, 64, 127, 128, 300 };
    static const int64_t dls[] = { KS_NO_EXPIRE, NOW + 1000, NOW + 2000, KS_NO_EXPIRE };
    char v[400];
    uint64_t s = 3;
    for (size_t a = 0; a < sizeof(lens) / sizeof(lens[0]); a++) {
        for (int r = 0; r < 40; r++) {
            size_t len = lens[(a + (size_t)(r % 3 == 0)) % (sizeof(lens) / sizeof(lens[0]))];
            int64_t dl = dls[rng_next(&s) % 4];
            for (size_t i = 0; i < len; i++) {
                v[i] = (char)('a' + rng_next(&s) % 26);
            }
            if (r % 5 == 4) {
                ks_set_int(ks, "key:inplace", 11, (int64_t)(rng_next(&s) % 1000), dl, false);
                cr_assert_eq(ks_entry_expire(ks_peek(ks, "key:inplace", 11)), dl);
            } else {
                ks_set_str(ks, "key:inplace", 11, v, len, dl, false);
                struct ks_entry *e = ks_peek(ks, "key:inplace", 11);
                expect_str(e, v, len);
                cr_assert_eq(ks_entry_expire(e), dl);
            }
            cr_assert_eq(ks_expires_size(ks), dl != KS_NO_EXPIRE ? 1u : 0u);
            cr_assert_eq(ks_int_check(ks), 0);
        }
    }
    ks_destroy(ks);
}

/* Numbered databases: MOVE and COPY ... DB copy an entry into another
 * keyspace (same name allowed), and a database created later takes db 0's
 * settings. */
Test(ks, copy_to_another_keyspace_and_inherit)
{
    struct ks *a = ks_create(S0, S1), *b = ks_create(S1, S0);
    ks_set_lfu(a, true, 10, 1);
    ks_set_clock(a, NOW);
    ks_inherit(b, a);
    cr_assert(ks_lfu(b));
    ks_set_str(a, "k", 1, "value", 5, NOW + 1000, false);
    ks_set_int(a, "n", 1, 12345, KS_NO_EXPIRE, false);
    struct ks_entry *c = ks_copy_to(b, ks_peek(a, "k", 1), "k", 1);
    expect_str(c, "value", 5);
    cr_assert_eq(ks_entry_expire(c), NOW + 1000);
    cr_assert_eq(ks_expires_size(b), 1);
    c = ks_copy_to(b, ks_peek(a, "n", 1), "n2", 2);
    cr_assert(ks_str_is_int(c));
    cr_assert_eq(ks_str_int(c), 12345);
    /* the source is unchanged; a pointer value is the caller's to duplicate */
    expect_str(ks_peek(a, "k", 1), "value", 5);
    ks_set_ptr(a, "p", 1, KS_SET, malloc(8), free, KS_NO_EXPIRE);
    cr_assert_null(ks_copy_to(b, ks_peek(a, "p", 1), "p", 1));
    cr_assert_eq(ks_size(a), 3);
    cr_assert_eq(ks_size(b), 2);
    cr_assert_eq(ks_int_check(a), 0);
    cr_assert_eq(ks_int_check(b), 0);
    ks_destroy(a);
    ks_destroy(b);
}

/* ks_count_slots: the count per cluster slot follows every way a key comes and goes. */
Test(ks, slot_counts)
{
    struct ks *ks = ks_create(1, 2);
    ks_set_str(ks, "{a}1", 4, "v", 1, KS_NO_EXPIRE, false);
    ks_count_slots(ks, true); /* counts what is there */
    unsigned sa = slot_of("a", 1), sb = slot_of("b", 1);
    cr_assert_eq(ks_slot_keys(ks, sa), 1);
    ks_set_str(ks, "{a}2", 4, "v", 1, KS_NO_EXPIRE, false);
    ks_set_str(ks, "{a}2", 4, "w", 1, KS_NO_EXPIRE, false); /* an overwrite is not a new key */
    ks_set_int(ks, "{b}1", 4, 7, KS_NO_EXPIRE, false);
    cr_assert_eq(ks_slot_keys(ks, sa), 2);
    cr_assert_eq(ks_slot_keys(ks, sb), 1);
    cr_assert(ks_rename(ks, "{a}1", 4, "{b}2", 4));
    cr_assert_eq(ks_slot_keys(ks, sa), 1);
    cr_assert_eq(ks_slot_keys(ks, sb), 2);
    cr_assert(ks_rename(ks, "{b}2", 4, "{b}1", 4)); /* over an existing key */
    cr_assert_eq(ks_slot_keys(ks, sb), 1);
    cr_assert_not_null(ks_copy(ks, ks_peek(ks, "{b}1", 4), "{a}9", 4));
    cr_assert_eq(ks_slot_keys(ks, sa), 2);
    cr_assert(ks_delete(ks, "{a}9", 4));
    cr_assert_eq(ks_slot_keys(ks, sa), 1);
    int64_t now = clock_unix_ms();
    ks_set_str(ks, "{b}x", 4, "v", 1, now - 10, false); /* already expired: reclaimed on lookup */
    cr_assert_eq(ks_slot_keys(ks, sb), 2);
    cr_assert_null(ks_lookup(ks, "{b}x", 4, now));
    cr_assert_eq(ks_slot_keys(ks, sb), 1);
    ks_evict(ks, ks_peek(ks, "{b}1", 4));
    cr_assert_eq(ks_slot_keys(ks, sb), 0);
    ks_flush(ks);
    cr_assert_eq(ks_slot_keys(ks, sa), 0);
    cr_assert(ks_counts_slots(ks));
    ks_count_slots(ks, false);
    cr_assert_not(ks_counts_slots(ks));
    ks_destroy(ks);
}

static void
count_new(void *arg, struct ks *ks, const char *key, size_t klen)
{
    (void)ks;
    (void)key;
    (void)klen;
    (*(int *)arg)++;
}

/* Keyspace notifications' hooks: "expired" for lazy and active expiry only
 * (not eviction), "new" for a key added (set, copy, rename to a new name),
 * not for an overwrite. */
Test(ks, expired_and_new_hooks)
{
    struct ks *ks = ks_create(S0, S1);
    int expired = 0, added = 0;
    ks_set_clock(ks, NOW);
    ks_set_expired_hook(ks, count_hook, &expired);
    ks_set_new_hook(ks, count_new, &added);
    ks_set_str(ks, "a", 1, "v", 1, KS_NO_EXPIRE, false);
    ks_set_str(ks, "a", 1, "w", 1, KS_NO_EXPIRE, false);
    cr_assert_eq(added, 1);
    ks_rename(ks, "a", 1, "b", 1);
    cr_assert_eq(added, 2);
    ks_set_str(ks, "c", 1, "v", 1, NOW + 10, false);
    cr_assert_eq(added, 3);
    cr_assert_null(ks_lookup(ks, "c", 1, NOW + 20)); /* lazy */
    cr_assert_eq(expired, 1);
    ks_set_str(ks, "d", 1, "v", 1, NOW + 10, false);
    ks_active_expire(ks, NOW + 20, 1000000);
    cr_assert_eq(expired, 2);
    ks_evict(ks, ks_peek(ks, "b", 1));
    cr_assert_eq(expired, 2);
    ks_set_new_hook(ks, NULL, NULL);
    ks_set_str(ks, "e", 1, "v", 1, KS_NO_EXPIRE, false);
    cr_assert_eq(added, 4); /* d was the 4th; e, added with no hook, is not counted */
    ks_destroy(ks);
}
