/* tests/unit/types/test_json.c: the JSON tree, parser, serializer and path
 * evaluator (node/types/json.h, json_path.h): round trips, exact error texts,
 * limits, the object index against a linear model, and path results. */
#include "node/types/json.h"
#include "node/types/json_path.h"

#include "base/buf.h"
#include "json_test_util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

static char *
to_text(const struct json *j)
{
    static char out[1 << 16];
    struct buf b;
    buf_init(&b);
    json_write(&b, j, NULL);
    cr_assert_lt(b.len, sizeof(out));
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    buf_deinit(&b);
    return out;
}

Test(json, round_trips_compactly)
{
    static const char *const cases[][2] = {
        { " { \"a\" : [ 1 , -2 , 3.5 , true , false , null ] } ",
          "{\"a\":[1,-2,3.5,true,false,null]}" },
        { "9223372036854775807", "9223372036854775807" },
        { "-9223372036854775808", "-9223372036854775808" },
        { "9223372036854775808", "9223372036854775808" },
        { "18446744073709551615", "18446744073709551615" },
        { "18446744073709551616", "1.8446744073709552e19" },
        { "-9223372036854775809", "-9.223372036854776e18" },
        { "1.0", "1.0" },
        { "1e2", "100.0" },
        { "0.1", "0.1" },
        { "1e300", "1e300" },
        { "1.5e-7", "1.5e-7" },
        { "0.0001", "0.0001" },
        { "1e16", "1e16" },
        { "123456789012345.6", "123456789012345.6" },
        { "\"a\\u0000\\n\\t\\\"\\\\\\/\\u00e9\"", "\"a\\u0000\\n\\t\\\"\\\\/\xc3\xa9\"" },
        { "{\"b\":1,\"a\":2,\"b\":3}", "{\"b\":3,\"a\":2}" },
        { "[]", "[]" },
        { "{}", "{}" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct json *j = parse_ok(cases[i][0]);
        cr_assert_str_eq(to_text(j), cases[i][1], "input %s", cases[i][0]);
        json_destroy(j);
    }
}

/* (a loop, not Criterion's ParameterizedTest: the Release build's binary did
 * not register the parameterized test at all, so it ran only under ASan) */
Test(json, errors_name_the_place)
{
    static const struct {
        const char *in, *err;
    } b[] = {
        { "", "EOF while parsing a value at line 1 column 0" },
        { "{\"a\":", "EOF while parsing a value at line 1 column 5" },
        { "{a:1}", "key must be a string at line 1 column 2" },
        { "[1,]", "trailing comma at line 1 column 4" },
        { "[1 2]", "expected `,` or `]` at line 1 column 4" },
        { "01", "invalid number at line 1 column 2" },
        { "tru", "EOF while parsing a value at line 1 column 3" },
        { "nul1", "expected ident at line 1 column 4" },
        { "[1]\n x", "trailing characters at line 2 column 2" },
        { "\"\x01\"",
          "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 2" },
        { "\"\\x\"", "invalid escape at line 1 column 3" },
        { "\"\\udc00\"", "lone leading surrogate in hex escape at line 1 column 7" },
        { "1e400", "number out of range at line 1 column 5" },
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        char err[200];
        cr_assert_null(json_parse(b[i].in, strlen(b[i].in), err, sizeof(err)), "input %s", b[i].in);
        cr_assert_str_eq(err, b[i].err, "input %s: got \"%s\"", b[i].in, err);
    }
}

Test(json, depth_limit)
{
    char buf[600], err[200];
    for (int depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
        memset(buf, '[', (size_t)depth);
        memset(buf + depth, ']', (size_t)depth);
        struct json *j = json_parse(buf, 2 * (size_t)depth, err, sizeof(err));
        if (depth == JSON_MAX_DEPTH) {
            cr_assert_not_null(j);
            json_destroy(j);
        } else {
            cr_assert_null(j);
            cr_assert(strstr(err, "recursion limit exceeded") != NULL, "%s", err);
        }
    }
}

Test(json, object_index_matches_a_linear_model)
{
    struct json *o = json_new_obj();
    char k[32];
    /* grow past the index threshold, delete from the middle, re-add */
    for (int i = 0; i < 500; i++) {
        int n = snprintf(k, sizeof(k), "key%d", i);
        json_obj_set_take(o, k, (size_t)n, json_new_int(i));
    }
    for (int i = 0; i < 500; i += 3) {
        int n = snprintf(k, sizeof(k), "key%d", i);
        ptrdiff_t at = json_obj_find(o, k, (size_t)n);
        cr_assert_geq(at, 0);
        json_destroy(json_obj_take(o, (size_t)at));
    }
    for (int i = 0; i < 500; i++) {
        int n = snprintf(k, sizeof(k), "key%d", i);
        struct json *v = json_obj_get(o, k, (size_t)n);
        if (i % 3 == 0) {
            cr_assert_null(v, "%s", k);
        } else {
            cr_assert_not_null(v, "%s", k);
            cr_assert_eq(json_int(v), i);
        }
    }
    json_obj_set_take(o, "key0", 4, json_new_str("x", 1));
    size_t kl;
    const char *last = json_obj_key(o, json_len(o) - 1, &kl);
    cr_assert(kl == 4 && memcmp(last, "key0", 4) == 0);   /* keys are not NUL-terminated */
    json_obj_set_take(o, "key1", 4, json_new_bool(true)); /* replace keeps the position */
    cr_assert_eq(json_type(json_obj_val(o, 0)), JSON_BOOL);
    json_destroy(o);
}

Test(json, dup_equal_assign)
{
    struct json *a = parse_ok("{\"x\":[1,2.0,{\"y\":\"z\"}],\"n\":null}");
    struct json *b = json_dup(a);
    cr_assert(json_equal(a, b));
    struct json *x = json_obj_get(b, "x", 1);
    json_assign_take(json_arr_at(x, 0), json_new_str("s", 1));
    cr_assert_not(json_equal(a, b));
    cr_assert_str_eq(to_text(b), "{\"x\":[\"s\",2.0,{\"y\":\"z\"}],\"n\":null}");
    cr_assert_gt(json_mem(a), 0);
    json_destroy(a);
    json_destroy(b);
}

static char *
eval_text(const char *doc, const char *path)
{
    char err[300];
    struct json *d = parse_ok(doc);
    struct jpath *jp = jpath_parse(path, strlen(path), err, sizeof(err));
    cr_assert_not_null(jp, "%s: %s", path, err);
    struct jmatches m = { 0 };
    jpath_eval(jp, d, &m);
    struct json *arr = json_new_arr();
    for (size_t i = 0; i < m.n; i++) {
        json_arr_insert_take(arr, i, json_dup(m.v[i].v));
    }
    char *s = to_text(arr);
    json_destroy(arr);
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(d);
    return s;
}

Test(json_path, evaluates)
{
    static const char *const doc =
        "{\"a\":\"b\",\"b\":[{\"a\":2},{\"a\":5},{\"a\":\"c\"}],\"o\":{\"x y\":1,\"it's\":2}}";
    static const char *const cases[][2] = {
        { "$", "[" },
        { ".", "[" },
        { "$.a", "[\"b\"]" },
        { "a", "[\"b\"]" },
        { "b[1].a", "[5]" },
        { "$..a", "[\"b\",2,5,\"c\"]" },
        { "$.b[*].a", "[2,5,\"c\"]" },
        { "$.b[-1]", "[{\"a\":\"c\"}]" },
        { "$.b[-4]", "[]" },
        { "$.b[0,2].a", "[2,\"c\"]" },
        { "$.b[1:].a", "[5,\"c\"]" },
        { "$.b[:-1].a", "[2,5]" },
        { "$.b[::-2].a", "[\"c\",2]" },
        { "$.b[?(@.a > 2)].a", "[5]" },
        { "$.b[?(@.a >= 2 && @.a < 5 || @.a == 'c')].a", "[2,\"c\"]" },
        { "$.b[?(@.a =~ \"^c$\")]", "[{\"a\":\"c\"}]" },
        { "$.b[?(@.a != 5)].a", "[2,\"c\"]" },
        { "$.o['x y']", "[1]" },
        { "$.o[\"it's\"]", "[2]" },
        { "$.o['x y','nope',\"it's\"]", "[1,2]" },
        { "$.*.a", "[]" },
        { "$..[?(@ == 5)]", "[5]" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = eval_text(doc, cases[i][0]);
        if (strcmp(cases[i][1], "[") == 0) {
            cr_assert_eq(strncmp(got, "[{\"a\":\"b\"", 9), 0, "%s: %s", cases[i][0], got);
        } else {
            cr_assert_str_eq(got, cases[i][1], "path %s", cases[i][0]);
        }
    }
}

Test(json_path, syntax_errors_and_kinds)
{
    static const char *const bad[] = { "$.",   "$[",           "$[1",      "$['a",
                                       "$..",  "$[?(@.a ==)]", "$[?(@.a]", "$[1:2:3:4]",
                                       "$'x'", ".a[",          "$[?(1)]" };
    char err[300];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct jpath *jp = jpath_parse(bad[i], strlen(bad[i]), err, sizeof(err));
        cr_assert_null(jp, "%s parsed", bad[i]);
        cr_assert(strstr(err, "Error occurred on position ") == err, "%s", err);
    }
    struct jpath *jp = jpath_parse(".a", 2, err, sizeof(err));
    cr_assert(jpath_legacy(jp));
    cr_assert_not(jpath_is_root(jp));
    jpath_destroy(jp);
    jp = jpath_parse("$", 1, err, sizeof(err));
    cr_assert_not(jpath_legacy(jp));
    cr_assert(jpath_is_root(jp));
    jpath_destroy(jp);
}

/* RedisJSON's texts: the offset in the `$` form, the path cut there and
 * the tokens its grammar expects (its json_path compile()). */
Test(json_path, syntax_errors_as_redisjson)
{
    static const struct {
        const char *in, *err;
    } b[] = {
        { "$.a[$]", "Error occurred on position 4, \"$.a[ ---->>>> $]\", expected one of the "
                    "following: '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'." },
        { "$..", "Error occurred on position 3, \"$.. <<<<----\", expected one of the following: "
                 "<string>, '*'." },
        { "a.", "Error occurred on position 4, \"$.a. <<<<----\", expected one of the following: "
                "<string>, '*'." },
        { "$[0,]", "Error occurred on position 4, \"$[0, ---->>>> ]\", expected one of the "
                   "following: '<number>'." },
        { "$.a]", "Error occurred on position 3, \"$.a ---->>>> ]\", expected one of the "
                  "following: EOI, '..'." },
        { "$]", "Error occurred on position 1, \"$ ---->>>> ]\", expected one of the following: "
                "EOI, root." },
        /* inside a filter: where our parser stopped, no token list (ours) */
        { "$[?(@.a ==)]", "Error occurred on position 10, \"$[?(@.a == ---->>>> )]\", parsing "
                          "error." },
    };
    char err[JPATH_ERR_SHOW + 200];
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        cr_assert_null(jpath_parse(b[i].in, strlen(b[i].in), err, sizeof(err)), "%s", b[i].in);
        cr_assert_str_eq(err, b[i].err, "%s", b[i].in);
    }
    /* a long path is shown cut to JPATH_ERR_SHOW bytes, the offset still exact */
    char lp[600];
    memset(lp, 'x', sizeof(lp));
    memcpy(lp, "$.", 2);
    lp[500] = ']';
    cr_assert_null(jpath_parse(lp, sizeof(lp), err, sizeof(err)));
    cr_assert(strncmp(err, "Error occurred on position 500, \"$.xx", 37) == 0, "%s", err);
    cr_assert_lt(strlen(err), JPATH_ERR_SHOW + 120);
}

/* RedisJSON's grammar: the first step may omit its dot, a dot may precede a
 * bracket, a quoted name is only written in brackets; a legacy `[0]` is
 * `$.[0]`. */
Test(json_path, dotless_first_step_and_dotted_brackets)
{
    const char *doc = "{\"a\":{\"b\":[1,2]},\"c\":[{\"x\":1},{\"x\":2}]}";
    static const char *const cases[][2] = {
        { "$a", "[{\"b\":[1,2]}]" },
        { "$a.b[1]", "[2]" },
        { "$a.b.[0]", "[1]" },
        { "$.a.b.[1]", "[2]" },
        { "$c[?(@x == 2)]", "[{\"x\":2}]" },
        { "$c[?($a.b[0] == @x)]", "[{\"x\":1}]" },
        { "$.[\"a\"].b", "[[1,2]]" },
        /* `?` then a filter expression, parentheses optional */
        { "$c[?@.x > 1]", "[{\"x\":2}]" },
        { "$c[?(@.x == 1) || @.x == 2]", "[{\"x\":1},{\"x\":2}]" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = eval_text(doc, cases[i][0]);
        cr_assert_str_eq(got, cases[i][1], "path %s", cases[i][0]);
    }
    char star[64];
    snprintf(star, sizeof(star), "%s", eval_text(doc, "$.*"));
    cr_assert_str_eq(eval_text(doc, "$*"), star);
    char err[JPATH_ERR_SHOW + 200];
    static const struct {
        const char *in, *err;
    } b[] = {
        { "$.'a'", "Error occurred on position 2, \"$. ---->>>> 'a'\", expected one of the "
                   "following: <string>, '*'." },
        { "$..\"a\"", "Error occurred on position 3, \"$.. ---->>>> \"a\"\", expected one of the "
                      "following: <string>, '*'." },
        { "$'a'", "Error occurred on position 1, \"$ ---->>>> 'a'\", expected one of the "
                  "following: EOI, root." },
        { "[", "Error occurred on position 3, \"$.[ <<<<----\", expected one of the following: "
               "'<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'." },
        { "$.[]", "Error occurred on position 3, \"$.[ ---->>>> ]\", expected one of the "
                  "following: '<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'." },
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        cr_assert_null(jpath_parse(b[i].in, strlen(b[i].in), err, sizeof(err)), "%s", b[i].in);
        cr_assert_str_eq(err, b[i].err, "%s", b[i].in);
    }
    struct jpath *jp = jpath_parse("[1]", 3, err, sizeof(err));
    cr_assert_not_null(jp, "%s", err);
    cr_assert(jpath_legacy(jp));
    jpath_destroy(jp);
}

Test(json_path, parents_of_a_new_member)
{
    char err[300];
    struct json *d = parse_ok("{\"a\":{},\"b\":[{},{}]}");
    struct jpath *jp = jpath_parse("$.b[*].k", 8, err, sizeof(err));
    struct jmatches m = { 0 };
    const char *k;
    size_t kl;
    cr_assert(jpath_eval_parents(jp, d, &m, &k, &kl));
    cr_assert_eq(m.n, 2);
    cr_assert_eq(kl, 1);
    cr_assert_eq(k[0], 'k');
    cr_assert_eq(m.v[0].depth, 2);
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(d);
}

/* RedisJSON's Query::is_static: one member or one index per step. */
Test(json_path, static_paths)
{
    static const struct {
        const char *p;
        bool is_static, ends_in_index;
    } c[] = {
        { "$.a.b", true, false },        { "$['a'][0]", true, true },
        { ".a[-1]", true, true },        { "a.b[2]", true, true },
        { "$[0]", true, true },          { "$.a.[3]", true, true },
        { "$..a", false, false },        { "$.*.a", false, false },
        { "$.a[*]", false, false },      { "$.a[0,1]", false, false },
        { "$['a','b']", false, false },  { "$.a[0:2]", false, false },
        { "$.a[?(@>1)]", false, false }, { "$..[0]", false, false },
        { "$a", true, false },
    };
    char err[300];
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct jpath *jp = jpath_parse(c[i].p, strlen(c[i].p), err, sizeof(err));
        cr_assert_not_null(jp, "%s: %s", c[i].p, err);
        cr_assert_eq(jpath_static(jp), c[i].is_static, "%s", c[i].p);
        cr_assert_eq(jpath_ends_in_index(jp), c[i].ends_in_index, "%s", c[i].p);
        jpath_destroy(jp);
    }
}

/* The number of matches of path in doc; -1 when evaluation went past its bound. */
static long
eval_count(const struct json *doc, const char *path)
{
    char err[300];
    struct jpath *jp = jpath_parse(path, strlen(path), err, sizeof(err));
    cr_assert_not_null(jp, "%s: %s", path, err);
    struct jmatches m = { 0 };
    long n = jpath_eval(jp, (struct json *)doc, &m) ? (long)m.n : -1;
    if (n < 0) {
        cr_assert_eq(m.n, 0, "a refused evaluation leaves no matches");
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    return n;
}

Test(json_path, work_is_bounded)
{
    /* a 127-deep chain of {"a":...}: each extra `..a` multiplies the matches */
    char text[127 * 6 + 2];
    size_t at = 0;
    for (int i = 0; i < 127; i++) {
        memcpy(text + at, "{\"a\":", 5);
        at += 5;
    }
    text[at++] = '1';
    memset(text + at, '}', 127);
    at += 127;
    text[at] = '\0';
    struct json *deep = parse_ok(text);
    cr_assert_eq(eval_count(deep, "$..a"), 127);
    cr_assert_eq(eval_count(deep, "$..a..a"), 127 * 126 / 2);
    cr_assert_eq(eval_count(deep, "$..a..a..a..a"), -1);
    cr_assert_eq(eval_count(deep, "$..*..*..*..*..*..*"), -1);
    json_destroy(deep);
    /* one scan of a document larger than the minimum budget stays within it */
    struct json *arr = json_new_arr();
    for (size_t i = 0; i < 100000; i++) {
        json_arr_insert_take(arr, i, json_new_int((int64_t)i));
    }
    cr_assert_eq(eval_count(arr, "$..*"), 100000);
    cr_assert_eq(eval_count(arr, "$[?(@ > 99997)]"), 2);
    cr_assert_eq(eval_count(arr, "$[?(@ == $[*])]"), -1); /* quadratic: refused */
    json_destroy(arr);
}
