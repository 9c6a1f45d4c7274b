/* tests/unit/types/json_test_util.h: helpers the JSON unit tests share
 * (test_json.c, test_json_pack.c). */
#pragma once
#include "node/types/json.h"

#include <criterion/criterion.h>
#include <string.h>

/* s parsed, or the test fails naming the parser's error. */
static inline struct json *
parse_ok(const char *s)
{
    char err[200];
    struct json *j = json_parse(s, strlen(s), err, sizeof(err));
    cr_assert_not_null(j, "%s: %s", s, err);
    return j;
}
