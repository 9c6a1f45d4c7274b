/* base/strnum.h: strict decimal integers, as Redis's string2ll reads
 * them: optional '-', no '+', no leading zeros ("01", "-0"), no spaces, and
 * the value must fit in int64. The one parser every module uses. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool str_to_i64(const char *p, size_t n, int64_t *out);
