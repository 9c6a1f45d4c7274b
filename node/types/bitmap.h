/* node/types/bitmap.h: the bitmap helpers. Bitmaps are plain strings
 * (KS_STRING); bit 0 is the most significant bit of byte 0. These are pure
 * functions over byte arrays, used by the commands (node/commands/t_bitmap.c)
 * and the unit tests. */
#pragma once
#include "proto/resp.h"

#include <stddef.h>
#include <stdint.h>

enum bitmap_ovf { BITMAP_OVF_WRAP = 0, BITMAP_OVF_SAT = 1, BITMAP_OVF_FAIL = 2 };
enum bitmap_op { BITMAP_AND = 0, BITMAP_OR = 1, BITMAP_XOR = 2, BITMAP_NOT = 3 };

/* Unsigned field of `bits` (1..64) bits at bit offset off; bytes at or past
 * len read as zero. bitmap_get_signed sign-extends the same field. */
uint64_t bitmap_get_bits(const uint8_t *p, size_t len, uint64_t off, unsigned bits);
int64_t bitmap_get_signed(const uint8_t *p, size_t len, uint64_t off, unsigned bits);
/* Store the low `bits` bits of v at bit offset off; p must hold the field. */
void bitmap_set_bits(uint8_t *p, uint64_t off, unsigned bits, uint64_t v);

/* Would value + incr leave a field of `bits` bits (signed: 1..64, unsigned:
 * 1..63)? Returns 0 when not (*out = value + incr), 1 on overflow, -1 on
 * underflow; *out is then the wrapped (WRAP, FAIL) or saturated (SAT) result. */
int bitmap_ovf_signed(int64_t value, int64_t incr, unsigned bits, enum bitmap_ovf ow, int64_t *out);
int bitmap_ovf_unsigned(uint64_t value, int64_t incr, unsigned bits, enum bitmap_ovf ow,
                        uint64_t *out);

/* The bit at position pos (bit 0: the most significant bit of byte 0). */
static inline int
bitmap_bit_at(const uint8_t *p, uint64_t pos)
{
    return (p[pos >> 3] >> (7 - (pos & 7))) & 1;
}

/* Set bits in p[0, n). */
uint64_t bitmap_count(const uint8_t *p, size_t n);
/* Set bits among bit positions [sbit, ebit] (inclusive; ebit < 8 * len). */
uint64_t bitmap_count_bits(const uint8_t *p, uint64_t sbit, uint64_t ebit);
/* First position in [sbit, ebit] whose bit equals `bit`, or -1. */
int64_t bitmap_pos_bits(const uint8_t *p, uint64_t sbit, uint64_t ebit, int bit);
/* dst[0, maxlen) = op over srcs (each zero-padded to maxlen); NOT uses srcs[0]. */
void bitmap_op_apply(enum bitmap_op op, uint8_t *dst, size_t maxlen, const struct rv_str *srcs,
                     size_t n);
