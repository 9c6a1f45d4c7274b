/* node/types/rdb.h: Redis's serialization of values (the object format of
 * RDB files and DUMP payloads, RDB versions 1 to 11: Redis 2.x to 7.2),
 * decoded into Ruvio's rebuild commands (obj.h), so that RESTORE takes
 * payloads made by Redis's DUMP and tools can load a Redis RDB file.
 *
 * Every read is bounded by the input: a truncated or lying payload is an
 * error, never a read past its end. Decoding allocates only what it emits
 * (decompressed strings), freed before it returns. */
#pragma once
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDB_VERSION_MAX 11 /* Redis 7.2 */

/* A cursor over serialized bytes. */
struct rdb_rd {
    const uint8_t *p, *end;
};

/* Redis's CRC-64 (Jones polynomial, reflected, no final xor) of p[0..n),
 * continuing from crc (0 to start): a DUMP payload's and an RDB file's. */
uint64_t rdb_crc64(uint64_t crc, const uint8_t *p, size_t n);

/* A Redis DUMP payload: type byte, value, RDB version (2 bytes LE) and the
 * CRC-64 of all before it (8 bytes LE). true when the trailer checks and the
 * version is one this decoder reads; *body then spans the type byte and value. */
bool rdb_payload_check(const uint8_t *p, size_t n, struct rdb_rd *body, unsigned *version);

/* RDB primitives: a length (*special set for an encoded string's marker) and a
 * string (int-encoded and LZF-compressed ones included; *owned is set to a
 * buffer the caller frees with rv_free, or NULL when out points into the input). */
bool rdb_read_len(struct rdb_rd *r, uint64_t *len, bool *special);
bool rdb_read_string(struct rdb_rd *r, struct rv_str *out, char **owned, char scratch[24]);

/* Decodes one value of RDB object type `type` at r (advancing r past it) and
 * emits the commands that recreate it on key (fn NULL: only skips it).
 * 0 on success; -1 on malformed input; -2 on a type Ruvio does not take
 * (modules). On failure some commands may have been emitted already: callers
 * decode into a buffer first. */
int rdb_value_emit(struct rdb_rd *r, unsigned type, struct rv_str key, obj_emit_fn *fn, void *arg);
