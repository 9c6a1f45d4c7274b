/* base/varint.h: LEB128-style unsigned varints (7 bits per byte, low
 * bits first, high bit = more), used by keyspace entries, dict entries and
 * WAL payloads. */
#pragma once
#include "base/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX 10 /* bytes of the longest (64-bit) varint */

static inline size_t
varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Write v at p; returns the byte after it. */
static inline uint8_t *
varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Read a varint this process wrote (in memory, trusted); returns the byte after it. */
static inline const uint8_t *
varint_get(const uint8_t *p, size_t *out)
{
    size_t v = 0;
    unsigned shift = 0;
    if (rv_likely(p[0] < 0x80)) {
        *out = p[0];
        return p + 1;
    }
    while (*p & 0x80) {
        v |= (size_t)(*p++ & 0x7f) << shift;
        shift += 7;
    }
    v |= (size_t)*p++ << shift;
    *out = v;
    return p;
}

/* Read a varint from untrusted bytes [*pp, end): false when it is cut short
 * or longer than 64 bits; on success *pp moves past it. */
static inline bool
varint_get_checked(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    if (rv_likely(p < end && p[0] < 0x80)) { /* most are one byte: lengths, counts */
        *out = p[0];
        *pp = p + 1;
        return true;
    }
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end) {
            return false;
        }
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return true;
        }
    }
    return false;
}
