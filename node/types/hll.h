/* node/types/hll.h: the HyperLogLog sketch PFADD, PFCOUNT and PFMERGE store
 * (node/commands/t_hll.c). See docs/commands-hll.md.
 *
 * A sketch is a plain string value (TYPE "string") written from the published
 * algorithm (Flajolet, Fusy, Gandouet, Meunier 2007; estimator from Ertl 2017,
 * "New cardinality estimation algorithms for HyperLogLog sketches"): m = 2^14
 * registers of 6 bits, standard error 1.04/sqrt(m) ~ 0.81%. Elements are hashed
 * with SipHash-1-3 under a fixed key, so estimates are stable across restarts
 * and shards. The bytes are Ruvio's own; they are not Redis's format.
 *
 * Layout: an 8-byte header, then the body.
 *   0..3  magic "RVHL"    4  version (1)    5  encoding (HLL_DENSE / HLL_SPARSE)
 *   6..7  zero
 * Dense body: 16384 registers, 6 bits each, little-endian bit packing
 * (register i occupies bits 6i..6i+5 of the body): 12288 bytes.
 * Sparse body: the non-zero registers only, as 3-byte little-endian words
 * (index << 6 | value), strictly increasing index. A sparse sketch turns dense
 * once its value would exceed HLL_SPARSE_MAX_BYTES. A string that does not
 * parse exactly as one of these is rejected, never repaired. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_REGS (1u << HLL_P)   /* m */
#define HLL_Q (64 - HLL_P)       /* hash bits left for the rank */
#define HLL_RANK_MAX (HLL_Q + 1) /* largest register value: 51 */
#define HLL_HDR 8
#define HLL_DENSE_BYTES (HLL_HDR + HLL_REGS * 6 / 8) /* 12296 */
#define HLL_SPARSE_WORD 3
#define HLL_SPARSE_MAX_BYTES 3000 /* sparse -> dense past this */

enum hll_enc { HLL_DENSE = 0, HLL_SPARSE = 1 };

/* Grow or shrink the sketch's bytes to newlen (keeping the first
 * min(old, newlen) bytes) and return where they now live. */
typedef uint8_t *hll_resize_fn(void *arg, size_t newlen);

/* The 64-bit hash of an element (SipHash-1-3, fixed key). */
uint64_t hll_hash(const void *p, size_t n);
/* Register index (low HLL_P bits) and rank (1 + trailing zeros of the rest, at
 * most HLL_RANK_MAX) of a hash. */
void hll_hash_split(uint64_t h, uint32_t *idx, uint8_t *rank);

/* Write an empty sparse sketch into out[HLL_HDR]; returns HLL_HDR. */
size_t hll_init_empty(uint8_t *out);
/* true when p[0,n) is a well-formed sketch (header, length, sparse order and
 * register ranges; dense register values are checked by hll_count/hll_regs). */
bool hll_valid(const uint8_t *p, size_t n);
enum hll_enc hll_encoding(const uint8_t *p); /* only on a valid sketch */

/* Raise register idx to rank if it is lower. *pp / *lenp are the sketch's
 * bytes (valid); they may be resized through rs (a sparse sketch gains a word,
 * or turns dense). Returns true when a register changed. */
bool hll_set(uint8_t **pp, size_t *lenp, uint32_t idx, uint8_t rank, hll_resize_fn *rs, void *arg);
/* Max-merge a valid sketch into regs[HLL_REGS] (one byte per register).
 * false when a dense register holds an impossible value (corrupt). */
bool hll_regs_merge(const uint8_t *p, size_t n, uint8_t *regs);
/* Encode regs as a sketch into out (room for HLL_DENSE_BYTES): sparse when it
 * fits HLL_SPARSE_MAX_BYTES, else dense. Returns the length written. */
size_t hll_from_regs(const uint8_t *regs, uint8_t *out);
/* Estimate of a valid sketch; false when it is corrupt. */
bool hll_count(const uint8_t *p, size_t n, uint64_t *out);
/* Estimate from one-byte registers (values above HLL_RANK_MAX are clamped). */
uint64_t hll_count_regs(const uint8_t *regs);
