/* node/commands/slotmig_chunk.h: big keys of an atomic slot migration, sent
 * in bounded chunks (slotmig_chunk.c). Internal to cmd_migslots.c, which owns
 * the job, its link to the target and the exchange of records.
 *
 * A key whose value does not fit one chunk (SMC_ELEMS elements or SMC_BYTES
 * bytes) is queued instead of being sent as one RESTORE; the job then sends
 * one chunk per turn of the shard's event loop, waiting for each reply:
 *   RVMIGSLOTS RESTORE key abs-expire-ms payload   (the first: a DUMP payload
 *       of the first elements, which replaces the key on the target)
 *   RVMIGSLOTS RESERVE key bytes   (a string, with its first chunk: the
 *       target allocates it whole, so that appending never moves it)
 *   RVMIGSLOTS APPEND key HSET|SADD|ZADD|RPUSH|APPEND arg ...   (each next
 *       one: the target runs that command on the key, and logs it as is)
 * The cursor is the type's own: dict_scan's for a hash or a set kept as a
 * hashtable (as HSCAN and SSCAN), an index for an intset and a list, a rank
 * for a sorted set, a byte offset for a string. Streams, JSON documents,
 * hashes with field deadlines and the small encodings go whole.
 *
 * A write to the key meanwhile (smc_touched) ends its chunked send: the key
 * is remembered as dirty by the job, which sends it again, whole and from its
 * first chunk (that RESTORE replaces what the target built). */
#pragma once
#include "base/buf.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct shard_env;

#define SMC_ELEMS 1024         /* elements per chunk */
#define SMC_BYTES (256u << 10) /* bytes of elements per chunk (at least one element) */
#define SMC_NUM 32             /* a formatted integer or score */

struct smc {
    struct buf queue;   /* keys waiting, each as its length then its bytes */
    size_t qat;         /* the next one in queue */
    struct buf key;     /* the key being sent (len 0: none) */
    int type;           /* its enum ks_type */
    bool first;         /* the next chunk creates the value */
    uint64_t cursor;    /* dict_scan's cursor, an index, a rank or a byte offset */
    size_t sent, total; /* elements (bytes of a string) sent, of about total */
    uint64_t chunks;    /* chunks sent by this job */
    const char *verb;   /* the records' command: NULL for RVMIGSLOTS (MIGRATE: RESTORE-STAGE) */
    /* the chunk under construction: views into the value or into num */
    struct rv_str *argv;
    int argc, cap;
    size_t bytes;
    char (*num)[SMC_NUM]; /* SMC_ELEMS of them, allocated on first use */
    size_t nnum;
};

void smc_init(struct smc *q);
void smc_deinit(struct smc *q); /* frees everything; q is reusable after smc_init */
/* key (of db 0) is big and can be chunked: queued, true; else false (the
 * caller sends it whole). */
bool smc_defer(struct smc *q, struct shard_env *env, const char *key, size_t klen);
/* key (of db 0) is big and can be chunked (MIGRATE's test; nothing queued). */
bool smc_is_big(struct shard_env *env, const char *key, size_t klen);
/* A key is being sent or waits to be. */
bool smc_busy(const struct smc *q);
/* The current key's first chunk went and more are due (DEBUG SLOTMIG-HOLD 2
 * stops there). */
bool smc_started(const struct smc *q);
/* Appends the next chunk record to req: 1 when one was appended, 0 when the
 * key at hand was gone, changed type or had nothing left (the next call goes
 * on with the next key). */
size_t smc_next(struct smc *q, struct shard_env *env, struct buf *req);
/* A write may change key: its chunked send (if current) ends here. */
void smc_touched(struct smc *q, struct rv_str key);
/* One line for GETSLOTMIGRATIONS' message ("" when idle). */
void smc_describe(const struct smc *q, char *out, size_t n);
/* The target's side: RVMIGSLOTS APPEND key cmd arg ... (argv[0..argc)),
 * the slot checked by the caller. */
void smc_apply(struct conn *c, int argc, struct rv_str *argv);
/* RVMIGSLOTS RESERVE key bytes: room for a string of that size (sent after
 * a big string's first chunk; ks_str_reserve). */
void smc_reserve(struct conn *c, struct rv_str key, struct rv_str bytes);
