/* tests/unit/types/test_hll.c: the HyperLogLog sketch: encodings, merge,
 * accuracy and rejection of strings that are not sketches. */
#include "node/types/hll.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sk {
    uint8_t *p;
    size_t n;
};

static uint8_t *
test_resize(void *arg, size_t newlen)
{
    struct sk *s = arg;
    s->p = realloc(s->p, newlen);
    cr_assert_not_null(s->p);
    return s->p;
}

static void
sk_init(struct sk *s)
{
    s->p = malloc(HLL_HDR);
    s->n = hll_init_empty(s->p);
}

static bool
sk_add(struct sk *s, const void *el, size_t len)
{
    uint32_t idx;
    uint8_t rank;
    hll_hash_split(hll_hash(el, len), &idx, &rank);
    return hll_set(&s->p, &s->n, idx, rank, test_resize, s);
}

/* Adds elements "<seed>:<i>" for i in [from, to). */
static void
sk_add_range(struct sk *s, unsigned seed, uint64_t from, uint64_t to)
{
    char buf[64];
    for (uint64_t i = from; i < to; i++) {
        int len = snprintf(buf, sizeof(buf), "%u:%llu", seed, (unsigned long long)i);
        sk_add(s, buf, (size_t)len);
    }
}

static uint64_t
sk_count(const struct sk *s)
{
    uint64_t v = 0;
    cr_assert(hll_valid(s->p, s->n));
    cr_assert(hll_count(s->p, s->n, &v));
    return v;
}

Test(hll, empty_and_small)
{
    struct sk s;
    sk_init(&s);
    cr_assert(hll_valid(s.p, s.n));
    cr_assert_eq(hll_encoding(s.p), HLL_SPARSE);
    cr_assert_eq(sk_count(&s), 0);
    cr_assert(sk_add(&s, "a", 1));
    cr_assert(!sk_add(&s, "a", 1));
    cr_assert(sk_add(&s, "b", 1));
    cr_assert(sk_add(&s, "c", 1));
    cr_assert_eq(sk_count(&s), 3);
    cr_assert_eq(s.n, HLL_HDR + 3 * HLL_SPARSE_WORD);
    free(s.p);
}

Test(hll, hash_split_bounds)
{
    uint32_t idx;
    uint8_t rank;
    hll_hash_split(0, &idx, &rank);
    cr_assert(idx == 0 && rank == HLL_RANK_MAX);
    hll_hash_split(UINT64_MAX, &idx, &rank);
    cr_assert(idx == HLL_REGS - 1 && rank == 1);
    hll_hash_split((uint64_t)1 << HLL_P << 3, &idx, &rank);
    cr_assert(idx == 0 && rank == 4);
}

Test(hll, sparse_to_dense_keeps_registers)
{
    struct sk s;
    uint8_t before[HLL_REGS], after[HLL_REGS];
    uint64_t i = 0, est_before;

    sk_init(&s);
    /* fill until one more insert would convert */
    while ((s.n - HLL_HDR) / HLL_SPARSE_WORD < (HLL_SPARSE_MAX_BYTES - HLL_HDR) / HLL_SPARSE_WORD) {
        sk_add_range(&s, 7, i, i + 1);
        i++;
    }
    cr_assert_eq(hll_encoding(s.p), HLL_SPARSE);
    cr_assert(s.n <= HLL_SPARSE_MAX_BYTES);
    memset(before, 0, sizeof(before));
    cr_assert(hll_regs_merge(s.p, s.n, before));
    est_before = sk_count(&s);
    /* the next element that lands on a new register converts */
    while (hll_encoding(s.p) == HLL_SPARSE) {
        sk_add_range(&s, 7, i, i + 1);
        i++;
    }
    cr_assert_eq(s.n, HLL_DENSE_BYTES);
    cr_assert(hll_valid(s.p, s.n));
    memset(after, 0, sizeof(after));
    cr_assert(hll_regs_merge(s.p, s.n, after));
    size_t diff = 0;
    for (uint32_t r = 0; r < HLL_REGS; r++) {
        cr_assert(after[r] >= before[r]);
        diff += after[r] != before[r];
    }
    cr_assert_eq(diff, 1, "exactly the new register differs (%zu)", diff);
    cr_assert(sk_count(&s) >= est_before);
    cr_assert(fabs((double)sk_count(&s) - (double)i) / (double)i < 0.05);

    /* dense -> sparse through hll_from_regs when the registers fit */
    uint8_t out[HLL_DENSE_BYTES];
    size_t n = hll_from_regs(before, out);
    cr_assert_eq(hll_encoding(out), HLL_SPARSE);
    cr_assert(hll_valid(out, n));
    uint64_t est_round;
    cr_assert(hll_count(out, n, &est_round));
    cr_assert_eq(est_round, est_before);
    n = hll_from_regs(after, out);
    cr_assert_eq(n, HLL_DENSE_BYTES);
    cr_assert_eq(memcmp(out, s.p, n), 0, "dense re-encoding is byte-identical");
    free(s.p);
}

Test(hll, every_dense_register_round_trips)
{
    uint8_t regs[HLL_REGS], back[HLL_REGS], out[HLL_DENSE_BYTES];
    for (uint32_t i = 0; i < HLL_REGS; i++) {
        regs[i] = (uint8_t)((i * 7 + 1) % (HLL_RANK_MAX + 1));
    }
    size_t n = hll_from_regs(regs, out);
    cr_assert_eq(n, HLL_DENSE_BYTES);
    memset(back, 0, sizeof(back));
    cr_assert(hll_regs_merge(out, n, back));
    cr_assert_eq(memcmp(regs, back, sizeof(regs)), 0);
}

static void
accuracy(uint64_t n, unsigned seed)
{
    struct sk s;
    sk_init(&s);
    sk_add_range(&s, seed, 0, n);
    uint64_t est = sk_count(&s);
    double err = fabs((double)est - (double)n) / (double)n;
    cr_log_info("n=%llu est=%llu err=%.3f%% bytes=%zu", (unsigned long long)n,
                (unsigned long long)est, err * 100, s.n);
    cr_assert(err < 0.02, "n=%llu est=%llu err=%.3f%%", (unsigned long long)n,
              (unsigned long long)est, err * 100);
    free(s.p);
}

Test(hll, accuracy_1k)
{
    accuracy(1000, 1);
}
Test(hll, accuracy_10k)
{
    accuracy(10000, 2);
}
Test(hll, accuracy_100k)
{
    accuracy(100000, 3);
}
Test(hll, accuracy_1m)
{
    accuracy(1000000, 4);
}

Test(hll, merge_is_union)
{
    struct sk a, b, u;
    uint8_t regs[HLL_REGS], out[HLL_DENSE_BYTES];

    sk_init(&a);
    sk_init(&b);
    sk_init(&u);
    sk_add_range(&a, 9, 0, 60000);      /* dense */
    sk_add_range(&b, 9, 40000, 100000); /* overlaps a by 20000 */
    sk_add_range(&u, 9, 0, 100000);
    memset(regs, 0, sizeof(regs));
    cr_assert(hll_regs_merge(a.p, a.n, regs));
    cr_assert(hll_regs_merge(b.p, b.n, regs));
    size_t n = hll_from_regs(regs, out);
    cr_assert_eq(n, u.n);
    cr_assert_eq(memcmp(out, u.p, n), 0, "merge equals the sketch of the union");
    uint64_t est = hll_count_regs(regs);
    cr_assert(fabs((double)est - 100000.0) / 100000.0 < 0.02);

    /* sparse + sparse stays sparse and equals the union */
    struct sk c, d, cd;
    sk_init(&c);
    sk_init(&d);
    sk_init(&cd);
    sk_add_range(&c, 11, 0, 100);
    sk_add_range(&d, 11, 50, 200);
    sk_add_range(&cd, 11, 0, 200);
    memset(regs, 0, sizeof(regs));
    cr_assert(hll_regs_merge(c.p, c.n, regs));
    cr_assert(hll_regs_merge(d.p, d.n, regs));
    n = hll_from_regs(regs, out);
    cr_assert_eq(hll_encoding(out), HLL_SPARSE);
    cr_assert(n == cd.n && memcmp(out, cd.p, n) == 0);
    free(a.p);
    free(b.p);
    free(u.p);
    free(c.p);
    free(d.p);
    free(cd.p);
}

Test(hll, rejects_corrupt_values)
{
    struct sk s;
    uint8_t buf[HLL_DENSE_BYTES + 1];
    uint64_t v;

    sk_init(&s);
    sk_add_range(&s, 5, 0, 20);
    cr_assert(hll_valid(s.p, s.n));

    memcpy(buf, s.p, s.n);
    buf[0] = 'H'; /* magic */
    cr_assert(!hll_valid(buf, s.n));
    memcpy(buf, s.p, s.n);
    buf[4] = 2; /* version */
    cr_assert(!hll_valid(buf, s.n));
    memcpy(buf, s.p, s.n);
    buf[5] = 7; /* encoding */
    cr_assert(!hll_valid(buf, s.n));
    memcpy(buf, s.p, s.n);
    buf[7] = 1; /* reserved */
    cr_assert(!hll_valid(buf, s.n));
    cr_assert(!hll_valid(s.p, s.n - 1)); /* torn word */
    cr_assert(!hll_valid(s.p, 4));       /* short */
    cr_assert(!hll_valid((const uint8_t *)"foo", 3));
    cr_assert(!hll_valid((const uint8_t *)"HYLL\x01\x00\x00\x00", 8)); /* not ours */

    memcpy(buf, s.p, s.n); /* out of order: swap two words */
    uint8_t tmp[HLL_SPARSE_WORD];
    memcpy(tmp, buf + HLL_HDR, HLL_SPARSE_WORD);
    memcpy(buf + HLL_HDR, buf + HLL_HDR + HLL_SPARSE_WORD, HLL_SPARSE_WORD);
    memcpy(buf + HLL_HDR + HLL_SPARSE_WORD, tmp, HLL_SPARSE_WORD);
    cr_assert(!hll_valid(buf, s.n));
    memcpy(buf, s.p, s.n);
    buf[HLL_HDR] = (uint8_t)(buf[HLL_HDR] & ~63u); /* zero value in a sparse word */
    cr_assert(!hll_valid(buf, s.n));
    memcpy(buf, s.p, s.n);
    buf[HLL_HDR] = (uint8_t)(buf[HLL_HDR] | 63u); /* rank 63 > 51 */
    cr_assert(!hll_valid(buf, s.n));

    /* dense: wrong length, then an impossible register value */
    uint8_t regs[HLL_REGS];
    memset(regs, 1, sizeof(regs));
    size_t n = hll_from_regs(regs, buf);
    cr_assert_eq(n, HLL_DENSE_BYTES);
    cr_assert(hll_valid(buf, n));
    cr_assert(!hll_valid(buf, n - 1));
    buf[n] = 0;
    cr_assert(!hll_valid(buf, n + 1));
    buf[HLL_HDR] |= 63;                /* register 0 = 63 */
    cr_assert(hll_valid(buf, n));      /* header-level check passes ... */
    cr_assert(!hll_count(buf, n, &v)); /* ... the registers do not */
    memset(regs, 0, sizeof(regs));
    cr_assert(!hll_regs_merge(buf, n, regs));
    free(s.p);
}
