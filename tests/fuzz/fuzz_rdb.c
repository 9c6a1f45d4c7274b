/* tests/fuzz/fuzz_rdb.c: libFuzzer target for the decoder of Redis's value
 * serialization (node/types/rdb.c), which reads RESTORE payloads from clients
 * and RDB files from disk.
 *
 * Input layout: byte 0 = the RDB object type, the rest = the value's bytes.
 * Checks:
 *  - no read outside the input and no leak (the sanitizers);
 *  - decoding with an emitter and skipping (fn NULL) agree on the outcome and
 *    on the bytes consumed;
 *  - every emitted argument lies inside the input or in memory the decoder
 *    owns (touched byte by byte, so ASan sees a stale view), and the key is
 *    argv[1] of every command;
 *  - the payload checker accepts the value once wrapped in a trailer with a
 *    correct CRC-64 and rejects it with one bit of the CRC flipped;
 *  - the value as the one key of an RDB file (rdb_file.c): the walk fails
 *    when the value does not decode and reaches EOF when it decodes whole;
 *    the input itself as a file's body never reads outside it. */
#include "node/types/rdb.h"
#include "node/types/rdb_file.h"

#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_rdb: check failed at line %d: %s\n", __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct seen {
    unsigned long cmds, sum;
};

static void
on_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct seen *s = arg;
    FZ_CHECK(argc >= 2);
    FZ_CHECK(argv[1].len == 3 && memcmp(argv[1].p, "key", 3) == 0);
    for (int i = 0; i < argc; i++) {
        for (size_t j = 0; j < argv[i].len; j++) {
            s->sum += (unsigned char)argv[i].p[j];
        }
    }
    s->cmds++;
}

static int
file_key(void *arg, uint64_t db, struct rv_str key, unsigned type, struct rdb_rd *r,
         int64_t deadline)
{
    (void)db;
    (void)deadline;
    (*(unsigned long *)arg)++;
    return rdb_value_emit(r, type, key, NULL, NULL);
}

/* "REDIS0011", then pre, body (len bytes), post: walked; its outcome. */
static int
walk_file(const uint8_t *pre, size_t npre, const uint8_t *body, size_t len, const uint8_t *post,
          size_t npost, unsigned long *keys)
{
    static const struct rdb_file_ops ops = { file_key, NULL, NULL };
    size_t n = 9 + npre + len + npost;
    uint8_t *f = rv_malloc(n);
    memcpy(f, "REDIS0011", 9);
    memcpy(f + 9, pre, npre);
    memcpy(f + 9 + npre, body, len);
    memcpy(f + 9 + npre + len, post, npost);
    unsigned version;
    char err[128];
    int rc = rdb_file_walk(f, n, &ops, keys, &version, err, sizeof(err));
    FZ_CHECK(rc == 0 || rc == -1);
    rv_free(f);
    return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    unsigned type = data[0];
    /* an exact-size copy, so that any read past the value is caught */
    uint8_t *body = rv_malloc(size - 1 ? size - 1 : 1);
    memcpy(body, data + 1, size - 1);
    struct rv_str key = { "key", 3 };
    struct seen s = { 0, 0 };

    struct rdb_rd a = { body, body + size - 1 }, b = a;
    int ra = rdb_value_emit(&a, type, key, on_cmd, &s);
    int rb = rdb_value_emit(&b, type, key, NULL, NULL);
    FZ_CHECK(ra == rb);
    FZ_CHECK(ra != 0 || a.p == b.p);
    FZ_CHECK(ra == 0 || ra == -1 || ra == -2);

    /* the DUMP payload around it */
    size_t n = size + 10;
    uint8_t *pl = rv_malloc(n);
    memcpy(pl, data, size);
    pl[size] = 9;
    pl[size + 1] = 0;
    uint64_t crc = rdb_crc64(0, pl, size + 2);
    for (int i = 0; i < 8; i++) {
        pl[size + 2 + i] = (uint8_t)(crc >> (8 * i));
    }
    struct rdb_rd r;
    unsigned version;
    FZ_CHECK(rdb_payload_check(pl, n, &r, &version) && version == 9 && r.p == pl &&
             r.end == pl + size);
    pl[n - 1] ^= 0x10;
    FZ_CHECK(!rdb_payload_check(pl, n, &r, &version));
    rv_free(pl);

    /* one key, then EOF and a zero checksum (a file written without one) */
    uint8_t pre[5] = { (uint8_t)type, 3, 'k', 'e', 'y' }, post[9] = { 0xff };
    unsigned long keys = 0;
    int rf = walk_file(pre, 5, body, size - 1, post, 9, &keys);
    if (type < 0xf5) { /* (above: opcodes, not types) */
        /* (a value that stops short leaves bytes that the walk reads as more keys) */
        FZ_CHECK(ra != 0 ? rf != 0 : a.p != body + size - 1 || rf == 0);
    }
    walk_file(post, 0, data, size, post, 0, &keys); /* (memcpy takes no NULL, even for 0 bytes) */
    rv_free(body);
    return 0;
}
