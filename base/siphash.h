/* base/siphash.h: SipHash (Aumasson & Bernstein), a keyed 64-bit PRF for
 * short inputs, written from the published description. The key is two 64-bit
 * words (k0 = key bytes 0-7 little-endian, k1 = bytes 8-15). siphash_13 (one
 * compression round, three finalization rounds) is what hash tables use;
 * siphash_24 is the reference variant, kept for the published test vectors. */
#pragma once
#include <stddef.h>
#include <stdint.h>

uint64_t siphash_13(uint64_t k0, uint64_t k1, const void *p, size_t n);
uint64_t siphash_24(uint64_t k0, uint64_t k1, const void *p, size_t n);
