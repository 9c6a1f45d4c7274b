/* base/strnum.c */
#include "base/strnum.h"

bool
str_to_i64(const char *p, size_t n, int64_t *out)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, lim;

    if (n == 0 || n > 20) {
        return false;
    }
    if (s[0] == '-') {
        neg = true;
        i = 1;
        if (n == 1) {
            return false;
        }
    }
    if (s[i] == '0') {
        if (n == 1) {
            *out = 0;
            return true;
        }
        return false; /* "-0", "01" */
    }
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9 || v > (lim - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}
