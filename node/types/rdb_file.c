/* node/types/rdb_file.c: a Redis RDB file's opcodes, from the documented
 * format: "REDIS" and 4 version digits, then opcodes (AUX, SELECTDB,
 * RESIZEDB, expiry times, LRU/LFU hints, function libraries) and keys (an
 * RDB object type, the key, the value), then EOF and, from version 5, the
 * CRC-64 of everything before it. */
#include "node/types/rdb_file.h"

#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_FUNCTION2 = 0xF5,
    OP_FUNCTION = 0xF6,
    OP_MODULE_AUX = 0xF7,
    OP_IDLE = 0xF8,
    OP_FREQ = 0xF9,
    OP_AUX = 0xFA,
    OP_RESIZEDB = 0xFB,
    OP_EXPIRE_MS = 0xFC,
    OP_EXPIRE = 0xFD,
    OP_SELECTDB = 0xFE,
    OP_EOF = 0xFF
};

struct walk {
    const uint8_t *p0;
    struct rdb_rd r;
    const struct rdb_file_ops *ops;
    void *arg;
    uint64_t db;
    int64_t deadline; /* of the next key, -1: none */
    char *err;
    size_t errsz;
};

static int
fail(struct walk *w, const char *what, size_t off)
{
    snprintf(w->err, w->errsz, "%s at byte %zu", what, off);
    return -1;
}

/* The CRC-64 after EOF (0 in the file: written with rdbchecksum no). */
static int
check_eof(struct walk *w, unsigned version, size_t off)
{
    if (version < 5) {
        return 0;
    }
    if (w->r.end - w->r.p < 8) {
        return fail(w, "truncated checksum", off);
    }
    uint64_t want = 0, got = rdb_crc64(0, w->p0, (size_t)(w->r.p - w->p0));
    for (int i = 0; i < 8; i++) {
        want |= (uint64_t)w->r.p[i] << (8 * i);
    }
    return want != 0 && want != got ? fail(w, "wrong checksum", off) : 0;
}

static int
one_key(struct walk *w, unsigned type, size_t off)
{
    struct rv_str key;
    char *owned, scratch[24];
    if (!rdb_read_string(&w->r, &key, &owned, scratch)) {
        return fail(w, "truncated key", off);
    }
    int rc = w->ops->key(w->arg, w->db, key, type, &w->r, w->deadline);
    rv_free(owned);
    w->deadline = -1;
    if (rc != 0) {
        return fail(w, rc == -2 ? "a module value (not supported)" : "malformed value", off);
    }
    return 0;
}

/* One opcode other than a key or EOF: 1 when op is a key's type. */
static int
one_op(struct walk *w, unsigned op, size_t off)
{
    struct rv_str a, b;
    char *oa = NULL, *ob = NULL, sa[24], sb[24];
    uint64_t x, y;
    bool special;
    int rc = 0;
    switch (op) {
    case OP_SELECTDB:
        if (!rdb_read_len(&w->r, &w->db, &special) || special) {
            return fail(w, "bad SELECTDB", off);
        }
        if (w->ops->select != NULL) {
            w->ops->select(w->arg, w->db);
        }
        return 0;
    case OP_RESIZEDB:
        if (!rdb_read_len(&w->r, &x, &special) || special || !rdb_read_len(&w->r, &y, &special) ||
            special) {
            return fail(w, "bad RESIZEDB", off);
        }
        return 0;
    case OP_AUX:
        if (!rdb_read_string(&w->r, &a, &oa, sa) || !rdb_read_string(&w->r, &b, &ob, sb)) {
            rc = fail(w, "bad AUX field", off);
        }
        rv_free(oa);
        rv_free(ob);
        return rc;
    case OP_EXPIRE_MS:
    case OP_EXPIRE: {
        size_t n = op == OP_EXPIRE_MS ? 8 : 4;
        if ((size_t)(w->r.end - w->r.p) < n) {
            return fail(w, "truncated expire time", off);
        }
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) {
            v |= (uint64_t)w->r.p[i] << (8 * i);
        }
        w->r.p += n;
        w->deadline = op == OP_EXPIRE_MS ? (int64_t)v : (int64_t)v * 1000;
        return 0;
    }
    case OP_FREQ:
        if (w->r.p >= w->r.end) {
            return fail(w, "truncated FREQ", off);
        }
        w->r.p++;
        return 0;
    case OP_IDLE:
        return !rdb_read_len(&w->r, &x, &special) || special ? fail(w, "bad IDLE", off) : 0;
    case OP_FUNCTION2:
        if (!rdb_read_string(&w->r, &a, &oa, sa)) {
            return fail(w, "bad FUNCTION", off);
        }
        if (w->ops->function != NULL) {
            w->ops->function(w->arg, a);
        }
        rv_free(oa);
        return 0;
    case OP_FUNCTION:
    case OP_MODULE_AUX: return fail(w, "module data or pre-7.0 functions (not supported)", off);
    default: return 1;
    }
}

int
rdb_file_walk(const uint8_t *p, size_t len, const struct rdb_file_ops *ops, void *arg,
              unsigned *version, char *err, size_t errsz)
{
    struct walk w = { p, { p, p + len }, ops, arg, 0, -1, err, errsz };
    if (len < 9 || memcmp(p, "REDIS", 5) != 0) {
        return fail(&w, "not an RDB file (no REDIS signature)", 0);
    }
    char digits[5] = { (char)p[5], (char)p[6], (char)p[7], (char)p[8], 0 };
    *version = (unsigned)strtoul(digits, NULL, 10);
    if (*version < 1 || *version > RDB_VERSION_MAX) {
        snprintf(err, errsz, "RDB version %u is not supported (1 to %d: Redis up to 7.2)", *version,
                 RDB_VERSION_MAX);
        return -1;
    }
    w.r.p += 9;
    for (;;) {
        size_t off = (size_t)(w.r.p - p);
        if (w.r.p >= w.r.end) {
            return fail(&w, "truncated file (no EOF marker)", off);
        }
        unsigned op = *w.r.p++;
        if (op == OP_EOF) {
            return check_eof(&w, *version, off);
        }
        int rc = one_op(&w, op, off);
        if (rc == 1) {
            rc = one_key(&w, op, off);
        }
        if (rc != 0) {
            return -1;
        }
    }
}
