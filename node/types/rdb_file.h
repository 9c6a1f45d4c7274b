/* node/types/rdb_file.h: a whole Redis RDB file (RDB versions 1 to 11: Redis
 * 2.x to 7.2), walked key by key: its header, databases, expiry times, aux
 * fields, function libraries and the EOF checksum. Each key's value is left
 * to the caller (rdb.h decodes it). Used by ruvio-rdb and by the start-up
 * load (node/persist/rdbload.c). */
#pragma once
#include "node/types/rdb.h"

#include <stddef.h>
#include <stdint.h>

/* What the walk found, handed to the caller as it goes. */
struct rdb_file_ops {
    /* One key of database db: r is at its value (of RDB type `type`), which
     * the callback must consume whole (rdb_value_emit). deadline: Unix ms, or
     * -1 when the key has none. 0 to go on; else rdb_value_emit's code. */
    int (*key)(void *arg, uint64_t db, struct rv_str key, unsigned type, struct rdb_rd *r,
               int64_t deadline);
    /* A function library's code (Redis 7's FUNCTION2 opcode); may be NULL. */
    void (*function)(void *arg, struct rv_str code);
    /* A SELECTDB opcode; may be NULL. */
    void (*select)(void *arg, uint64_t db);
};

/* Walks the file p[0..len) to its EOF marker and checks its CRC-64 (unless it
 * was written without one). 0 when all of it was read; -1 with err ("what at
 * byte N") on a bad, truncated or unsupported file. The callbacks may have
 * seen part of a bad file: validate in a first walk when that matters.
 * *version gets the file's RDB version. */
int rdb_file_walk(const uint8_t *p, size_t len, const struct rdb_file_ops *ops, void *arg,
                  unsigned *version, char *err, size_t errsz);
