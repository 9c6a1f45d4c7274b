/* tests/unit/types/test_json_pack.c: packed small documents
 * (node/types/json_pack.h): decode and direct text output against the tree,
 * member lookup, the size limit, and malformed bytes. */
#include "node/types/json_pack.h"

#include "base/buf.h"
#include "json_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static void
text_of(const struct json *j, struct buf *b)
{
    buf_reset(b);
    json_write(b, j, NULL);
}

static const char *const docs[] = {
    "null",
    "true",
    "false",
    "0",
    "-1",
    "42",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1.5",
    "-0.0",
    "1e300",
    "\"\"",
    "\"a\\\"b\\\\c\\n\\u0001\\u00e9\"",
    "[]",
    "{}",
    "{\"\":{\"\":[]}}",
    "{\"name\":\"user-000001\",\"active\":true,\"score\":42,\"meta\":{\"value\":\"abcdefghij\","
    "\"n\":7}}",
    "[1,[2,[3,[4,{\"k\\u0000\":null}]]],\"x\",-7.25]",
};

Test(json_pack, round_trips_and_writes_the_same_text)
{
    struct buf want, got, pk;
    buf_init(&want);
    buf_init(&got);
    buf_init(&pk);
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        struct json *j = parse_ok(docs[i]);
        text_of(j, &want);
        buf_reset(&pk);
        cr_assert(jpk_encode(j, JPK_MAX_BYTES, &pk), "%s", docs[i]);
        cr_assert_leq(pk.len, want.len + 8, "%s: %zu packed bytes", docs[i], pk.len);
        struct json *d = jpk_decode((const uint8_t *)pk.data, pk.len);
        cr_assert_not_null(d, "%s", docs[i]);
        cr_assert(json_equal(j, d), "%s", docs[i]);
        text_of(d, &got);
        cr_assert(got.len == want.len && memcmp(got.data, want.data, got.len) == 0, "%s", docs[i]);
        buf_reset(&got);
        cr_assert(jpk_write(&got, (const uint8_t *)pk.data, pk.len), "%s", docs[i]);
        cr_assert(got.len == want.len && memcmp(got.data, want.data, got.len) == 0, "%s: %.*s",
                  docs[i], (int)got.len, got.data);
        json_destroy(j);
        json_destroy(d);
    }
    buf_deinit(&want);
    buf_deinit(&got);
    buf_deinit(&pk);
}

Test(json_pack, the_seed_object_is_smaller_than_its_text)
{
    const char *s = docs[17];
    struct json *j = parse_ok(s);
    struct buf pk;
    buf_init(&pk);
    cr_assert(jpk_encode(j, JPK_MAX_BYTES, &pk));
    cr_assert_lt(pk.len, strlen(s) * 4 / 5, "%zu packed bytes for %zu of text", pk.len, strlen(s));
    json_destroy(j);
    buf_deinit(&pk);
}

Test(json_pack, member_lookup)
{
    struct json *j = parse_ok(docs[17]);
    struct buf pk, out;
    buf_init(&pk);
    buf_init(&out);
    cr_assert(jpk_encode(j, JPK_MAX_BYTES, &pk));
    const uint8_t *p = (const uint8_t *)pk.data;
    size_t n = pk.len;
    cr_assert(jpk_member(&p, &n, "meta", 4));
    cr_assert(jpk_member(&p, &n, "value", 5));
    cr_assert(jpk_write(&out, p, n));
    cr_assert(out.len == 12 && memcmp(out.data, "\"abcdefghij\"", 12) == 0);
    /* misses and non-objects */
    p = (const uint8_t *)pk.data, n = pk.len;
    cr_assert_not(jpk_member(&p, &n, "nam", 3));
    cr_assert_not(jpk_member(&p, &n, "names", 5));
    cr_assert(jpk_member(&p, &n, "score", 5));
    cr_assert_not(jpk_member(&p, &n, "x", 1));
    json_destroy(j);
    buf_deinit(&pk);
    buf_deinit(&out);
}

Test(json_pack, size_limit)
{
    char s[2100];
    struct buf pk;
    buf_init(&pk);
    /* a string: at the limit it packs, past it nothing is appended */
    for (size_t len = 400; len < 700; len += 7) {
        memset(s, 'x', len);
        struct json *j = json_new_str(s, len);
        bool ok = jpk_encode(j, 512, &pk);
        cr_assert(ok ? pk.len <= 512 : pk.len == 0, "%zu: %d %zu", len, ok, pk.len);
        cr_assert(len > 500 || ok, "%zu", len);
        buf_reset(&pk);
        json_destroy(j);
    }
    /* nested containers whose content lengths need two-byte varints */
    size_t o = 0;
    o += (size_t)sprintf(s + o, "{\"a\":[");
    for (int i = 0; i < 150; i++) {
        o += (size_t)sprintf(s + o, "%s%d", i ? "," : "", i);
    }
    o += (size_t)sprintf(s + o, "],\"b\":{\"c\":\"%0200d\"}}", 0);
    struct json *j = parse_ok(s);
    cr_assert(jpk_encode(j, 4096, &pk));
    struct json *d = jpk_decode((const uint8_t *)pk.data, pk.len);
    cr_assert_not_null(d);
    cr_assert(json_equal(j, d));
    buf_reset(&pk);
    cr_assert_not(jpk_encode(j, 200, &pk));
    cr_assert_eq(pk.len, 0);
    json_destroy(d);
    json_destroy(j);
    buf_deinit(&pk);
}

Test(json_pack, malformed_bytes_fail_cleanly)
{
    struct json *j = parse_ok(docs[18]);
    struct buf pk, out;
    buf_init(&pk);
    buf_init(&out);
    cr_assert(jpk_encode(j, JPK_MAX_BYTES, &pk));
    /* every truncation and every single-byte change: no crash, no overrun */
    for (size_t cut = 0; cut < pk.len; cut++) {
        cr_assert_null(jpk_decode((const uint8_t *)pk.data, cut), "cut %zu", cut);
        buf_reset(&out);
        cr_assert_not(jpk_write(&out, (const uint8_t *)pk.data, cut), "cut %zu", cut);
    }
    for (size_t i = 0; i < pk.len; i++) {
        for (int v = 0; v < 256; v += 17) {
            uint8_t x[512];
            memcpy(x, pk.data, pk.len);
            x[i] = (uint8_t)v;
            json_destroy(jpk_decode(x, pk.len));
            buf_reset(&out);
            (void)jpk_write(&out, x, pk.len);
            const uint8_t *p = x;
            size_t n = pk.len;
            (void)jpk_member(&p, &n, "k", 1);
        }
    }
    json_destroy(j);
    buf_deinit(&pk);
    buf_deinit(&out);
}
