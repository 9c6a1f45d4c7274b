#include "base/glob.h"

#include <criterion/criterion.h>
#include <string.h>

static bool
m(const char *p, const char *s)
{
    return glob_match(p, strlen(p), s, strlen(s), false);
}

Test(glob, basics)
{
    cr_assert(m("*", ""));
    cr_assert(m("*", "abc"));
    cr_assert(m("a*", "abc"));
    cr_assert(!m("a*", "bac"));
    cr_assert(m("h?llo", "hello"));
    cr_assert(!m("h?llo", "hllo"));
    cr_assert(m("h[ae]llo", "hallo"));
    cr_assert(!m("h[ae]llo", "hillo"));
    cr_assert(m("h[^e]llo", "hallo"));
    cr_assert(!m("h[^e]llo", "hello"));
    cr_assert(m("h[a-b]llo", "hbllo"));
    cr_assert(!m("h[a-b]llo", "hcllo"));
    cr_assert(m("h\\*llo", "h*llo"));
    cr_assert(!m("h\\*llo", "hallo"));
    cr_assert(m("*b*d*", "abcde"));
    cr_assert(!m("*b*d*x", "abcde"));
    cr_assert(m("user:*:name", "user:42:name"));
    cr_assert(glob_match("ABC", 3, "abc", 3, true));
    cr_assert(!glob_match("ABC", 3, "abc", 3, false));
}

Test(glob, pathological_pattern_is_fast)
{
    char s[4096], p[200];
    memset(s, 'a', sizeof(s) - 1);
    s[sizeof(s) - 1] = '\0';
    for (int i = 0; i < 99; i++) {
        p[2 * i] = '*';
        p[2 * i + 1] = 'a';
    }
    p[198] = 'b';
    p[199] = '\0';
    /* Exponential backtracking would never finish; this completes at once. */
    cr_assert(!m(p, s));
}
