/* tests/unit/base/test_bytes.c: the short compare and the streaming copy
 * against memcmp/memcpy, at every alignment and around their size limits. */
#include "base/bytes.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

Test(bytes, short_eq_is_memcmp)
{
    uint8_t a[40], b[40];
    for (size_t n = 0; n <= 32; n++) {
        for (size_t i = 0; i < n; i++) {
            a[i] = b[i] = (uint8_t)(i * 7 + 1);
        }
        cr_expect(rv_short_eq(a, b, n), "equal, length %zu", n);
        for (size_t i = 0; i < n; i++) { /* one byte differs: every position */
            b[i] ^= 0x40;
            cr_expect(!rv_short_eq(a, b, n), "length %zu, byte %zu differs", n, i);
            b[i] ^= 0x40;
        }
    }
}

Test(bytes, copy_stream_is_memcpy)
{
    enum { MAX = 9000, PAD = 80 };
    uint8_t *src = malloc(MAX + PAD), *dst = malloc(MAX + 2 * PAD), *want = malloc(MAX + 2 * PAD);
    cr_assert(src && dst && want);
    for (size_t i = 0; i < MAX + PAD; i++) {
        src[i] = (uint8_t)(i * 131 + 17);
    }
    /* below, at and past the streaming threshold, odd tails, every 64-byte
     * alignment of the destination and a few of the source */
    static const size_t sizes[] = { 0, 1, 63, 64, 1023, 1024, 1025, 1087, 4096, 4159, 8191, MAX };
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t n = sizes[si];
        for (size_t doff = 0; doff < 64; doff++) {
            for (size_t soff = 0; soff < 3; soff++) {
                memset(dst, 0xee, MAX + 2 * PAD);
                memset(want, 0xee, MAX + 2 * PAD);
                rv_copy_stream(dst + doff, src + soff, n);
                memcpy(want + doff, src + soff, n);
                if (memcmp(dst, want, MAX + 2 * PAD) != 0) { /* also: nothing written around it */
                    cr_expect_fail("size %zu, destination offset %zu, source offset %zu", n, doff,
                                   soff);
                    goto out;
                }
            }
        }
    }
out:
    free(src);
    free(dst);
    free(want);
}
