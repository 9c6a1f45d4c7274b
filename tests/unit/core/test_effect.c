/* What a handler reports a write did (effect.h): the redo command it builds
 * holds copies of its arguments, in order, whatever their number. */
#include "node/core/effect.h"

#include "node/core/conn.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static bool
eq(struct rv_str a, const char *s)
{
    return a.len == strlen(s) && memcmp(a.p, s, a.len) == 0;
}

Test(effect, redo_copies_its_arguments)
{
    struct conn c = { 0 };
    char member[8] = "alpha";
    int argc;

    effect_redo(&c, "SREM", (struct rv_str){ "set", 3 });
    effect_arg(&c, member, 5);
    memcpy(member, "XXXXX", 5); /* the handler frees or reuses what it took */
    effect_arg_i64(&c, -42);
    cr_assert_eq(c.effect, EFFECT_REDO);
    const struct rv_str *v = effect_argv(&c, &argc);
    cr_assert_eq(argc, 4);
    cr_assert(eq(v[0], "SREM") && eq(v[1], "set") && eq(v[2], "alpha") && eq(v[3], "-42"));
    effect_free(&c);
    cr_assert_null(c.redo);
}

Test(effect, a_new_redo_starts_over_and_grows)
{
    struct conn c = { 0 };
    char num[16];
    int argc;

    effect_redo(&c, "SREM", (struct rv_str){ "k", 1 });
    effect_arg(&c, "x", 1);
    effect_redo(&c, "DEL", (struct rv_str){ "k2", 2 });
    const struct rv_str *v = effect_argv(&c, &argc);
    cr_assert_eq(argc, 2);
    cr_assert(eq(v[0], "DEL") && eq(v[1], "k2"));

    effect_redo(&c, "SREM", (struct rv_str){ "big", 3 });
    for (int i = 0; i < 1000; i++) {
        snprintf(num, sizeof(num), "m%d", i);
        effect_arg(&c, num, strlen(num));
    }
    v = effect_argv(&c, &argc);
    cr_assert_eq(argc, 1002);
    for (int i = 0; i < 1000; i++) {
        snprintf(num, sizeof(num), "m%d", i);
        cr_assert(eq(v[i + 2], num), "argument %d", i + 2);
    }
    effect_free(&c);
    effect_free(&c); /* twice is harmless */
}

Test(effect, none_and_waiting_are_kinds_of_their_own)
{
    struct conn c = { 0 };
    cr_assert_eq(c.effect, EFFECT_ARGS); /* what the dispatcher resets to */
    effect_none(&c);
    cr_assert_eq(c.effect, EFFECT_NONE);
    effect_waiting(&c);
    cr_assert_eq(c.effect, EFFECT_WAITING);
    cr_assert_null(c.redo);
}
