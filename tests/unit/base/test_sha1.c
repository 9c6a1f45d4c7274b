/* SHA-1 against the FIPS 180 example vectors, whole and in odd-sized pieces. */
#include "base/sha1.h"

#include <criterion/criterion.h>
#include <string.h>

static void
hex_of(const char *msg, size_t n, size_t piece, char out[41])
{
    struct sha1 s;
    uint8_t d[20];
    sha1_init(&s);
    for (size_t off = 0; off < n; off += piece) {
        sha1_update(&s, msg + off, n - off < piece ? n - off : piece);
    }
    sha1_final(&s, d);
    sha1_hex(d, out);
}

Test(sha1, vectors)
{
    static const struct {
        const char *m, *h;
    } v[] = {
        { "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
        { "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
    };
    char out[41];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        for (size_t piece = 1; piece <= 65; piece += 7) {
            hex_of(v[i].m, strlen(v[i].m), piece, out);
            cr_assert_str_eq(out, v[i].h, "vector %zu piece %zu", i, piece);
        }
    }
}

Test(sha1, million_a)
{
    static char a[1000000];
    char out[41];
    memset(a, 'a', sizeof(a));
    hex_of(a, sizeof(a), 4099, out);
    cr_assert_str_eq(out, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}
