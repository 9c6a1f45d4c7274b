/* base/sha1.c: see sha1.h. */
#include "base/sha1.h"

#include <string.h>

static uint32_t
rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void
block(struct sha1 *s, const uint8_t *p)
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    }
    for (int t = 16; t < 80; t++) {
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999u;
        } else if (t < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1u;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdcu;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t tmp = rol(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = tmp;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

void
sha1_init(struct sha1 *s)
{
    static const uint32_t iv[5] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                                    0xc3d2e1f0u };
    memcpy(s->h, iv, sizeof(iv));
    s->len = 0;
    s->nbuf = 0;
}

void
sha1_update(struct sha1 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->len += n;
    if (s->nbuf > 0) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < 64) {
            return;
        }
        block(s, s->buf);
        s->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64) {
        block(s, p);
    }
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void
sha1_final(struct sha1 *s, uint8_t out[20])
{
    uint64_t bits = s->len * 8;
    static const uint8_t pad[64] = { 0x80 };
    uint8_t lenb[8];
    size_t padn = s->nbuf < 56 ? 56 - s->nbuf : 120 - s->nbuf;
    for (int i = 0; i < 8; i++) {
        lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    sha1_update(s, pad, padn);
    sha1_update(s, lenb, 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void
sha1_hex(const uint8_t d[20], char out[41])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[40] = '\0';
}
