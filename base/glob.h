/* base/glob.h: Redis-style glob matching (KEYS, SCAN MATCH, CONFIG GET):
 * '*', '?', '[abc]', '[^a-z]', and '\' escapes. Iterative with single-star
 * backtracking, so no pattern can take exponential time. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

bool glob_match(const char *pat, size_t plen, const char *s, size_t slen, bool nocase);
