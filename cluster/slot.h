/* cluster/slot.h: Redis Cluster key slots: CRC16 (XMODEM) of the key, or of the
 * first non-empty {hash tag}, modulo 16384. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SLOT_COUNT 16384

uint16_t slot_crc16(const void *p, size_t n);
unsigned slot_of(const char *key, size_t n);
/* Contiguous split of the slot space over n owners: owner i has [lo, hi]. */
void slot_range(unsigned i, unsigned n, unsigned *lo, unsigned *hi);
unsigned slot_owner(unsigned slot, unsigned n);
