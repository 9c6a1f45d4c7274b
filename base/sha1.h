/* base/sha1.h: SHA-1 (FIPS 180-4), written from the standard. Used for
 * content digests (DEBUG DIGEST), never for security. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct sha1 {
    uint32_t h[5];
    uint64_t len; /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
};

void sha1_init(struct sha1 *s);
void sha1_update(struct sha1 *s, const void *p, size_t n);
void sha1_final(struct sha1 *s, uint8_t out[20]);
/* Lower-case hex of a 20-byte digest into out (41 bytes with the NUL). */
void sha1_hex(const uint8_t d[20], char out[41]);
