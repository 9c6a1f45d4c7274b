/* base/rand.c */
#include "base/rand.h"

#include "base/clock.h"

#include <sys/random.h>
#include <unistd.h>

uint64_t
rand_u64(void)
{
    uint64_t v;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
        /* Only before the kernel's pool is ready: still differs per process. */
        v = clock_mono_us() * 0x9e3779b97f4a7c15ull ^ ((uint64_t)getpid() << 32);
    }
    return v;
}

void
rand_hex(char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 16 == 0) {
            bits = rand_u64();
        }
        out[i] = hex[bits & 15];
        bits >>= 4;
    }
    out[n] = '\0';
}
