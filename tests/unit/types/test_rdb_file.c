/* tests/unit/types/test_rdb_file.c: a Redis RDB file walked key by key
 * (rdb_file.c), and a stream's consumer groups decoded into XGROUPLOAD (rdb.c). */
#include "node/types/rdb_file.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <stdarg.h>

struct seen {
    char log[2048];
    size_t n;
};

static void
put(struct seen *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->log + s->n, sizeof(s->log) - s->n, fmt, ap);
    va_end(ap);
    s->n += k > 0 && (size_t)k < sizeof(s->log) - s->n ? (size_t)k : 0;
}

static int
on_key(void *arg, uint64_t db, struct rv_str key, unsigned type, struct rdb_rd *r, int64_t deadline)
{
    put(arg, "key %.*s db %llu ttl %lld;", (int)key.len, key.p, (unsigned long long)db,
        (long long)deadline);
    return rdb_value_emit(r, type, key, NULL, NULL);
}

static void
on_function(void *arg, struct rv_str code)
{
    put(arg, "fn %.*s;", (int)code.len, code.p);
}

static void
on_select(void *arg, uint64_t db)
{
    put(arg, "select %llu;", (unsigned long long)db);
}

static const struct rdb_file_ops ops = { on_key, on_function, on_select };

/* An RDB 11 file: an AUX field, database 0 with a key that expires, database
 * 3 with one that does not, a function library, EOF and the CRC-64. */
static size_t
make_file(uint8_t *f)
{
    static const uint8_t body[] = {
        'R',  'E',  'D',  'I', 'S', '0',  '0', '1', '1',
        0xFA, 3,    'v',  'e', 'r', 3,    '7', '.', '0', /* AUX ver 7.0 */
        0xFE, 0,    0xFB, 1,   1,                        /* SELECTDB 0, RESIZEDB 1 1 */
        0xFC, 0xE8, 3,    0,   0,   0,    0,   0,   0,   /* EXPIRETIME_MS 1000 */
        0,    1,    'a',  1,   'x',                      /* string a = x */
        0xFE, 3,                                         /* SELECTDB 3 */
        0xF8, 5,    0,    1,   'b', 0xC0, 7,             /* IDLE 5, string b = 7 */
        0xF5, 3,    'l',  'i', 'b',                      /* FUNCTION2 "lib" */
        0xFF,
    };
    memcpy(f, body, sizeof(body));
    uint64_t crc = rdb_crc64(0, f, sizeof(body));
    for (int i = 0; i < 8; i++) {
        f[sizeof(body) + (size_t)i] = (uint8_t)(crc >> (8 * i));
    }
    return sizeof(body) + 8;
}

Test(rdb_file, walks_databases_expiry_and_functions)
{
    uint8_t f[128];
    size_t n = make_file(f);
    struct seen s = { "", 0 };
    unsigned version = 0;
    char err[128];
    cr_assert_eq(rdb_file_walk(f, n, &ops, &s, &version, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(version, 11);
    cr_assert_str_eq(s.log, "select 0;key a db 0 ttl 1000;select 3;key b db 3 ttl -1;fn lib;");
}

Test(rdb_file, refuses_bad_files_at_every_length)
{
    uint8_t f[128];
    size_t n = make_file(f);
    struct seen s = { "", 0 };
    unsigned version;
    char err[128];
    for (size_t len = 0; len < n; len++) {
        s.n = 0;
        cr_assert_eq(rdb_file_walk(f, len, &ops, &s, &version, err, sizeof(err)), -1, "len %zu",
                     len);
    }
    f[n - 1] ^= 1;
    cr_assert_eq(rdb_file_walk(f, n, &ops, &s, &version, err, sizeof(err)), -1);
    cr_assert(strstr(err, "wrong checksum") != NULL, "%s", err);
    memset(f + n - 8, 0, 8); /* written with rdbchecksum no */
    cr_assert_eq(rdb_file_walk(f, n, &ops, &s, &version, err, sizeof(err)), 0, "%s", err);
    memcpy(f + 5, "0012", 4);
    cr_assert_eq(rdb_file_walk(f, n, &ops, &s, &version, err, sizeof(err)), -1);
    cr_assert(strstr(err, "RDB version 12 is not supported") != NULL, "%s", err);
}

static void
collect(void *arg, int argc, const struct rv_str *argv)
{
    for (int i = 0; i < argc; i++) {
        put(arg, "%.*s%s", (int)argv[i].len, argv[i].p, i + 1 < argc ? " " : ";");
    }
}

/* Type 19: entry 5-0 added and deleted; group g at 5-0 with 5-0 pending
 * (delivered twice at 1700000000000) and owned by consumer c, or by none. */
static size_t
make_stream(uint8_t *v, bool owner)
{
    static const uint8_t id[16] = { 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0 };
    static const uint8_t t[8] = { 0x00, 0x68, 0xE5, 0xCF, 0x8B, 0x01, 0, 0 }; /* 1700000000000 LE */
    size_t n = 0;
    static const uint8_t head[] = { 0, 0, 5, 0, 0, 0, 5, 0, 1, 1, 1, 'g', 5, 0, 1, 1 };
    memcpy(v + n, head, sizeof(head));
    n += sizeof(head);
    memcpy(v + n, id, 16);
    n += 16;
    memcpy(v + n, t, 8);
    n += 8;
    v[n++] = 2;
    if (!owner) {
        v[n++] = 0;
        return n;
    }
    static const uint8_t cons[] = { 1, 1, 'c', 0xE8, 0x6B, 0xE5, 0xCF, 0x8B, 0x01, 0, 0, 1 };
    memcpy(v + n, cons, sizeof(cons));
    n += sizeof(cons);
    memcpy(v + n, id, 16);
    return n + 16;
}

Test(rdb_file, stream_groups_become_xgroupload)
{
    uint8_t v[128];
    size_t n = make_stream(v, true);
    struct seen s = { "", 0 };
    struct rdb_rd r = { v, v + n };
    cr_assert_eq(rdb_value_emit(&r, 19, (struct rv_str){ "k", 1 }, collect, &s), 0);
    cr_assert_eq(r.p, v + n);
    cr_assert(strstr(s.log, "XGROUPLOAD k g 5-0 1 c 1700000001000 1700000001000 5-0 "
                            "1700000000000 2;") != NULL,
              "%s", s.log);
    n = make_stream(v, false);
    r = (struct rdb_rd){ v, v + n };
    cr_assert_eq(rdb_value_emit(&r, 19, (struct rv_str){ "k", 1 }, NULL, NULL), -1);
}

/* The same group in Redis 5/6's type 15 (no first id, max deleted id, entries
 * added nor entries-read: -1, unknown) and 7.2's type 21 (an active time). */
Test(rdb_file, stream_groups_of_types_15_and_21)
{
    static const uint8_t id[16] = { 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0 };
    static const uint8_t v15[] = { 0, 0, 5, 0, 1, 1, 'g', 5, 0, 1 };
    static const uint8_t t[8] = { 0x00, 0x68, 0xE5, 0xCF, 0x8B, 0x01, 0, 0 };
    static const uint8_t seen[8] = { 0xE8, 0x6B, 0xE5, 0xCF, 0x8B, 0x01, 0, 0 };
    static const uint8_t active[8] = { 0x01, 0x00, 0, 0, 0, 0, 0, 0 };
    for (unsigned type = 15; type <= 21; type += 6) {
        uint8_t v[128];
        size_t n = 0;
        if (type == 15) {
            memcpy(v, v15, sizeof(v15));
            n = sizeof(v15);
        } else {
            static const uint8_t v21[] = { 0, 0, 5, 0, 0, 0, 5, 0, 1, 1, 1, 'g', 5, 0, 1, 1 };
            memcpy(v, v21, sizeof(v21));
            n = sizeof(v21);
        }
        memcpy(v + n, id, 16);
        memcpy(v + n + 16, t, 8);
        n += 24;
        v[n++] = 2; /* delivered twice */
        v[n++] = 1; /* one consumer */
        v[n++] = 1;
        v[n++] = 'c';
        memcpy(v + n, seen, 8);
        n += 8;
        if (type == 21) {
            memcpy(v + n, active, 8);
            n += 8;
        }
        v[n++] = 1;
        memcpy(v + n, id, 16);
        n += 16;
        struct seen s = { "", 0 };
        struct rdb_rd r = { v, v + n };
        cr_assert_eq(rdb_value_emit(&r, type, (struct rv_str){ "k", 1 }, collect, &s), 0, "%u",
                     type);
        cr_assert_eq(r.p, v + n);
        const char *want = type == 15 ? "XGROUPLOAD k g 5-0 -1 c 1700000001000 1700000001000 5-0 "
                                        "1700000000000 2;"
                                      : "XGROUPLOAD k g 5-0 1 c 1700000001000 1 5-0 "
                                        "1700000000000 2;";
        cr_assert(strstr(s.log, want) != NULL, "type %u: %s", type, s.log);
    }
}
