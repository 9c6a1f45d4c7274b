/* wal/wal_int.h: what wal.c (the writer) and wal_read.c (the reader and the
 * walk) share. Not for other modules. */
#pragma once
#include "base/bytes.h"
#include "wal/wal.h"

#include <stdint.h>

#define WAL_SEG_MAGIC "RVWAL001"  /* the first 8 bytes of a segment */
#define WAL_CKPT_MAGIC "RVCKPT01" /* and of a checkpoint */

static inline uint32_t
get32(const uint8_t *p)
{
    return rv_ld32(p);
}
static inline uint64_t
get64(const uint8_t *p)
{
    return rv_ld64(p);
}

/* The logical size of w's segment starting at first (UINT64_MAX when w has
 * none): the sync thread cuts a finished segment down to it, never below. */
uint64_t wal_seg_logical(const struct wal *w, uint64_t first);
