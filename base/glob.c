/* base/glob.c */
#include "base/glob.h"

#include <ctype.h>

static inline unsigned char
glob_fold(unsigned char ch, bool nocase)
{
    return nocase ? (unsigned char)tolower(ch) : ch;
}

/* Match one pattern element at pat[*pi] against ch; advances *pi past it.
 * Returns 1 on match, 0 on mismatch. */
static int
glob_one(const char *pat, size_t plen, size_t *pi, unsigned char ch, bool nocase)
{
    size_t i = *pi;
    unsigned char c = glob_fold(ch, nocase);

    if (pat[i] == '?') {
        *pi = i + 1;
        return 1;
    }
    if (pat[i] == '\\' && i + 1 < plen) {
        *pi = i + 2;
        return glob_fold((unsigned char)pat[i + 1], nocase) == c;
    }
    if (pat[i] != '[') {
        *pi = i + 1;
        return glob_fold((unsigned char)pat[i], nocase) == c;
    }
    i++;
    bool neg = false, hit = false;
    if (i < plen && pat[i] == '^') {
        neg = true;
        i++;
    }
    for (; i < plen && pat[i] != ']'; i++) {
        if (pat[i] == '\\' && i + 1 < plen) {
            i++;
            if (glob_fold((unsigned char)pat[i], nocase) == c) {
                hit = true;
            }
        } else if (i + 2 < plen && pat[i + 1] == '-') {
            unsigned char lo = glob_fold((unsigned char)pat[i], nocase);
            unsigned char hi = glob_fold((unsigned char)pat[i + 2], nocase);
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            if (c >= lo && c <= hi) {
                hit = true;
            }
            i += 2;
        } else if (glob_fold((unsigned char)pat[i], nocase) == c) {
            hit = true;
        }
    }
    /* An unterminated class ends at the end of the pattern, as in Redis. */
    *pi = i < plen ? i + 1 : i;
    return hit != neg;
}

bool
glob_match(const char *pat, size_t plen, const char *s, size_t slen, bool nocase)
{
    size_t pi = 0, si = 0;
    size_t star_p = (size_t)-1, star_s = 0;

    while (si < slen) {
        if (pi < plen && pat[pi] == '*') {
            while (pi < plen && pat[pi] == '*') {
                pi++;
            }
            if (pi == plen) {
                return true;
            }
            star_p = pi;
            star_s = si;
            continue;
        }
        if (pi < plen) {
            size_t next = pi;
            if (glob_one(pat, plen, &next, (unsigned char)s[si], nocase)) {
                pi = next;
                si++;
                continue;
            }
        }
        if (star_p == (size_t)-1) {
            return false;
        }
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && pat[pi] == '*') {
        pi++;
    }
    return pi == plen;
}
