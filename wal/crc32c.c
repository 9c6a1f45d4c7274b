/* wal/crc32c.c: CRC-32C, reflected polynomial 0x82F63B78. */
#include "wal/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;
static int have_hw;
static int ready; /* set (release) once tab_init ran: the hot path skips pthread_once */

static void
tab_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        }
        tab[0][i] = c;
    }
    for (int t = 1; t < 8; t++) {
        for (int i = 0; i < 256; i++) {
            tab[t][i] = (tab[t - 1][i] >> 8) ^ tab[0][tab[t - 1][i] & 0xff];
        }
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
#endif
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

/* Slicing-by-8 for CPUs without the instruction. */
static uint32_t
crc_sw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v ^= c;
        c = tab[7][v & 0xff] ^ tab[6][(v >> 8) & 0xff] ^ tab[5][(v >> 16) & 0xff] ^
            tab[4][(v >> 24) & 0xff] ^ tab[3][(v >> 32) & 0xff] ^ tab[2][(v >> 40) & 0xff] ^
            tab[1][(v >> 48) & 0xff] ^ tab[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) {
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
    }
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 32) {
        uint64_t v[4];
        memcpy(v, p, 32);
        c64 = __builtin_ia32_crc32di(c64, v[0]);
        c64 = __builtin_ia32_crc32di(c64, v[1]);
        c64 = __builtin_ia32_crc32di(c64, v[2]);
        c64 = __builtin_ia32_crc32di(c64, v[3]);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    if (n >= 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        c = __builtin_ia32_crc32si(c, v);
        p += 4;
        n -= 4;
    }
    while (n--) {
        c = __builtin_ia32_crc32qi(c, *p++);
    }
    return c;
}
#endif

uint32_t
wal_crc32c(uint32_t crc, const void *p, size_t n)
{
    if (__builtin_expect(!__atomic_load_n(&ready, __ATOMIC_ACQUIRE), 0)) {
        pthread_once(&tab_once, tab_init);
    }
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (have_hw) {
        return ~crc_hw(c, p, n);
    }
#endif
    return ~crc_sw(c, p, n);
}
