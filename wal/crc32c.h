/* wal/crc32c.h: CRC-32C (Castagnoli), the checksum of WAL records and
 * checkpoints. Uses the SSE4.2 crc32 instruction when the CPU has it, a
 * table otherwise; both give the same result. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 to start) with n bytes at p. */
uint32_t wal_crc32c(uint32_t crc, const void *p, size_t n);
