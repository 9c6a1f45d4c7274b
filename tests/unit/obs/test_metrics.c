#include "node/obs/metrics.h"

#include <criterion/criterion.h>

/* 1000 cycles per µs: bucket 0 is under 1 µs, bucket b holds [2^(b-1), 2^b) µs. */
Test(metrics, bucket_boundaries)
{
    uint64_t mul = (uint64_t)(4294967296.0 / 1000.0);
    cr_assert_eq(metrics_bucket(0, mul), 0);
    cr_assert_eq(metrics_bucket(999, mul), 0);
    cr_assert_eq(metrics_bucket(1001, mul), 1);
    cr_assert_eq(metrics_bucket(1999, mul), 1);
    cr_assert_eq(metrics_bucket(2001, mul), 2);
    cr_assert_eq(metrics_bucket(4001, mul), 3);
    cr_assert_eq(metrics_bucket(1000 * 1000 + 1, mul), 10);           /* 1 ms: [2^9, 2^10) µs */
    cr_assert_eq(metrics_bucket(1000ull * 1000 * 1000 + 1, mul), 20); /* 1 s: [2^19, 2^20) µs */
    cr_assert_eq(metrics_bucket(UINT64_MAX / 2, mul), CMD_LAT_BUCKETS - 1);
    cr_assert_eq(metrics_bucket(UINT64_MAX, mul), CMD_LAT_BUCKETS - 1);
}
