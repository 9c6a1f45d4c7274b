/* base/rand.h: unpredictable random numbers from the kernel (getrandom),
 * for hash seeds (hash-flooding resistance) and node/run ids. */
#pragma once
#include <stddef.h>
#include <stdint.h>

uint64_t rand_u64(void);
/* n random lower-case hex digits and a NUL (out holds n + 1 bytes). */
void rand_hex(char *out, size_t n);
