/* node/commands/slotmig_chunk.c: big keys of an atomic slot migration, sent
 * in bounded chunks (slotmig_chunk.h has the records and the rules; the job
 * is cmd_migslots.c's).
 *
 * Bounds: a chunk holds at most SMC_ELEMS elements and stops once it holds
 * SMC_BYTES bytes of them (a string: SMC_BYTES bytes). Building one is a walk
 * of at most 1,024 elements or a copy of 256 KiB (tens of microseconds), and
 * applying it on the target is one command of that size, so neither shard
 * stops for long; the round trip per chunk is what the move pays instead.
 * A chunk record stays far below WAL_MAX_REC (one element may be as big as
 * proto-max-bulk-len allows, still under it). */
#include "node/commands/slotmig_chunk.h"

#include "base/mem.h"
#include "node/commands/cmds.h"
#include "node/commands/t_hash.h"
#include "node/commands/t_list.h"
#include "node/commands/t_set.h"
#include "node/commands/t_zset.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/types/hash.h"
#include "node/types/intset.h"
#include "node/types/list.h"
#include "node/types/obj.h"
#include "node/types/set.h"
#include "node/types/zset_enc.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SMC_SCAN_STEP 64 /* dict_scan's count per call */

void
smc_init(struct smc *q)
{
    memset(q, 0, sizeof(*q));
    buf_init(&q->queue);
    buf_init(&q->key);
}

void
smc_deinit(struct smc *q)
{
    buf_deinit(&q->queue);
    buf_deinit(&q->key);
    rv_free(q->argv);
    rv_free(q->num);
    memset(q, 0, sizeof(*q));
}

/* How many elements a value has (a string: its bytes); 0 when it cannot be
 * chunked: it goes whole. */
static size_t
smc_size(struct ks_entry *e)
{
    switch (ks_entry_type(e)) {
    case KS_STRING: return ks_str_len(e);
    case KS_LIST: return list_len(ks_entry_ptr(e));
    case KS_ZSET: {
        struct zset z;
        zset_bind(&z, NULL, e);
        return zset_len(&z);
    }
    case KS_SET: {
        struct sobj s;
        sobj_bind(&s, NULL, e);
        return s.enc == SENC_PK ? 0 : sobj_len(&s);
    }
    case KS_HASH: {
        struct hobj h;
        hobj_bind(&h, NULL, e);
        return h.enc == HENC_HT && hobj_ttl(&h) == NULL ? hobj_len(&h) : 0;
    }
    default: return 0;
    }
}

static bool
smc_big(struct ks_entry *e, size_t n)
{
    if (n == 0) {
        return false;
    }
    if (ks_entry_type(e) == KS_STRING) {
        return n > SMC_BYTES;
    }
    return n > SMC_ELEMS || obj_ops_of(ks_entry_type(e))->mem(e) > SMC_BYTES;
}

bool
smc_defer(struct smc *q, struct shard_env *env, const char *key, size_t klen)
{
    struct ks_entry *e = ks_peek(env->dbs[0], key, klen);
    if (!ks_entry_live(e, env->now_ms) || !smc_big(e, smc_size(e))) {
        return false;
    }
    buf_append(&q->queue, &klen, sizeof(klen));
    buf_append(&q->queue, key, klen);
    return true;
}

bool
smc_is_big(struct shard_env *env, const char *key, size_t klen)
{
    struct ks_entry *e = ks_peek(env->dbs[0], key, klen);
    return ks_entry_live(e, env->now_ms) && smc_big(e, smc_size(e));
}

bool
smc_busy(const struct smc *q)
{
    return q->key.len > 0 || q->qat < q->queue.len;
}

bool
smc_started(const struct smc *q)
{
    return q->key.len > 0 && !q->first;
}

static void
smc_drop_current(struct smc *q)
{
    buf_reset(&q->key);
    if (q->qat == q->queue.len) {
        buf_reset(&q->queue);
        q->qat = 0;
    }
}

void
smc_touched(struct smc *q, struct rv_str key)
{
    if (q->key.len == key.len && key.len > 0 && memcmp(q->key.data, key.p, key.len) == 0) {
        smc_drop_current(q);
    }
}

void
smc_describe(const struct smc *q, char *out, size_t n)
{
    if (q->key.len == 0) {
        out[0] = '\0';
        return;
    }
    snprintf(out, n, "sending key '%.*s' in chunks: %zu of %zu %s",
             (int)(q->key.len > 64 ? 64 : q->key.len), q->key.data, q->sent, q->total,
             q->type == KS_STRING ? "bytes" : "elements");
}

/* ---- building one chunk: a rebuild command as argv views ---- */

static void
smc_arg(struct smc *q, struct rv_str s)
{
    if (q->argc == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 2 * SMC_ELEMS + 8;
        q->argv = rv_realloc(q->argv, (size_t)q->cap * sizeof(*q->argv));
    }
    q->argv[q->argc++] = s;
    q->bytes += s.len;
}

/* A number as an argument (q->num holds it until the chunk is written; at
 * most SMC_ELEMS per chunk). */
static void
smc_arg_num(struct smc *q, double d, int64_t i, bool is_double)
{
    char *p = q->num[q->nnum++];
    int n;
    if (!is_double) {
        n = snprintf(p, SMC_NUM, "%" PRId64, i);
    } else if (isinf(d)) {
        n = snprintf(p, SMC_NUM, "%s", d > 0 ? "inf" : "-inf");
    } else {
        n = snprintf(p, SMC_NUM, "%.17g", d); /* 17 digits: the same double back */
    }
    smc_arg(q, (struct rv_str){ p, (size_t)n });
}

static bool
smc_full(const struct smc *q, size_t nel)
{
    return nel >= SMC_ELEMS || q->bytes >= SMC_BYTES;
}

struct smc_scan {
    struct smc *q;
    bool with_value;
    size_t nel;
};

static void
smc_scan_visit(void *arg, struct dict_entry *de)
{
    struct smc_scan *s = arg;
    smc_arg(s->q, dict_key(de));
    if (s->with_value) {
        smc_arg(s->q, dict_val_bytes(de));
    }
    s->nel++;
}

/* A hash or a set kept as a hashtable, from dict_scan's cursor; true once
 * the scan is over. */
static bool
smc_build_dict(struct smc *q, struct dict *d, bool with_value, size_t *nel)
{
    struct smc_scan s = { q, with_value, 0 };
    do {
        q->cursor = dict_scan(d, q->cursor, SMC_SCAN_STEP, smc_scan_visit, &s);
    } while (q->cursor != 0 && !smc_full(q, s.nel));
    *nel = s.nel;
    return q->cursor == 0;
}

static bool
smc_build_list(struct smc *q, struct list *l, size_t *nel)
{
    size_t len = list_len(l), n = 0;
    if (q->cursor < len) {
        struct lit it;
        lit_seek(&it, l, (int64_t)q->cursor);
        for (; it.p != NULL && !smc_full(q, n); lit_next(&it), n++) {
            struct lp_val v;
            lp_get(it.p, &v);
            if (v.p != NULL) {
                smc_arg(q, (struct rv_str){ v.p, v.len });
            } else {
                smc_arg_num(q, 0, v.v, false);
            }
        }
    }
    q->cursor += n;
    *nel = n;
    return q->cursor >= len;
}

static bool
smc_build_zset(struct smc *q, struct ks_entry *e, size_t *nel)
{
    struct zset z;
    size_t n = 0;
    zset_bind(&z, NULL, e);
    size_t len = zset_len(&z);
    if (q->cursor < len) {
        struct zset_it it;
        bool more = true;
        zset_it_init(&it, &z, (size_t)q->cursor);
        for (; more && !smc_full(q, n); n++) {
            struct rv_str m;
            double score;
            zset_it_get(&it, &m, &score);
            smc_arg_num(q, score, 0, true);
            smc_arg(q, m);
            more = zset_it_next(&it);
        }
        zset_it_done(&it);
    }
    q->cursor += n;
    *nel = n;
    return q->cursor >= len;
}

static bool
smc_build_set(struct smc *q, struct ks_entry *e, size_t *nel)
{
    struct sobj s;
    sobj_bind(&s, NULL, e);
    if (s.enc == SENC_HT) {
        return smc_build_dict(q, s.b->d, false, nel);
    }
    size_t len = intset_len(s.b->is), n = 0;
    for (; q->cursor + n < len && !smc_full(q, n); n++) {
        smc_arg_num(q, 0, intset_get(s.b->is, (size_t)q->cursor + n), false);
    }
    q->cursor += n;
    *nel = n;
    return q->cursor >= len;
}

static bool
smc_build_string(struct smc *q, struct ks_entry *e, size_t *nel)
{
    char scratch[24];
    struct rv_str v = ks_str_get(e, scratch);
    size_t n = 0;
    if (q->cursor < v.len) {
        n = v.len - q->cursor < SMC_BYTES ? v.len - q->cursor : SMC_BYTES;
        smc_arg(q, (struct rv_str){ v.p + q->cursor, n });
    }
    q->cursor += n;
    *nel = n;
    return q->cursor >= v.len;
}

/* The command name of a first chunk (the DUMP record) and of the next ones. */
static const char *
smc_name(int type, bool first)
{
    switch (type) {
    case KS_STRING: return first ? "SET" : "APPEND";
    case KS_LIST: return "RPUSH";
    case KS_SET: return "SADD";
    case KS_ZSET: return "ZADD";
    default: return "HSET";
    }
}

/* Builds the next chunk of e into q->argv (name, key, elements); true once it
 * holds the value's last elements. */
static bool
smc_build(struct smc *q, struct ks_entry *e, size_t *nel)
{
    const char *name = smc_name(q->type, q->first);
    q->argc = 0;
    q->bytes = 0;
    q->nnum = 0;
    if (q->num == NULL) {
        q->num = rv_malloc(SMC_ELEMS * sizeof(*q->num));
    }
    smc_arg(q, (struct rv_str){ name, strlen(name) });
    smc_arg(q, (struct rv_str){ q->key.data, q->key.len });
    q->bytes = 0;
    switch (q->type) {
    case KS_STRING: return smc_build_string(q, e, nel);
    case KS_LIST: return smc_build_list(q, ks_entry_ptr(e), nel);
    case KS_SET: return smc_build_set(q, e, nel);
    case KS_ZSET: return smc_build_zset(q, e, nel);
    default: {
        struct hobj h;
        hobj_bind(&h, NULL, e);
        return smc_build_dict(q, h.ht->d, true, nel);
    }
    }
}

/* Takes the next queued key that is still live and big; false when none. */
static bool
smc_pop(struct smc *q, struct shard_env *env)
{
    while (q->qat < q->queue.len) {
        size_t len;
        memcpy(&len, q->queue.data + q->qat, sizeof(len));
        const char *k = q->queue.data + q->qat + sizeof(len);
        q->qat += sizeof(len) + len;
        struct ks_entry *e = ks_peek(env->dbs[0], k, len);
        size_t n = ks_entry_live(e, env->now_ms) ? smc_size(e) : 0;
        if (n > 0) {
            buf_reset(&q->key);
            buf_append(&q->key, k, len);
            q->type = (int)ks_entry_type(e);
            q->first = true;
            q->cursor = 0;
            q->sent = 0;
            q->total = n;
            return true;
        }
        /* (gone or changed since it was queued: a write made it dirty, or it
         * expired on both sides) */
    }
    buf_reset(&q->queue);
    q->qat = 0;
    return false;
}

static void
smc_write_first(struct smc *q, struct ks_entry *e, struct buf *req)
{
    struct buf payload;
    int64_t exp = ks_entry_expire(e);
    buf_init(&payload);
    dump_payload_cmd(q->argc, q->argv, &payload);
    resp_w_array(req, 5);
    resp_w_bulk_cstr(req, q->verb != NULL ? q->verb : "RVMIGSLOTS");
    resp_w_bulk_cstr(req, "RESTORE");
    resp_w_bulk(req, q->key.data, q->key.len);
    resp_w_bulk_int(req, exp == KS_NO_EXPIRE ? 0 : exp);
    resp_w_bulk(req, payload.data, payload.len);
    buf_deinit(&payload);
}

static void
smc_write_next(struct smc *q, struct buf *req)
{
    resp_w_array(req, (size_t)q->argc + 2);
    resp_w_bulk_cstr(req, q->verb != NULL ? q->verb : "RVMIGSLOTS");
    resp_w_bulk_cstr(req, "APPEND");
    resp_w_bulk(req, q->argv[1].p, q->argv[1].len);
    resp_w_bulk(req, q->argv[0].p, q->argv[0].len);
    for (int i = 2; i < q->argc; i++) {
        resp_w_bulk(req, q->argv[i].p, q->argv[i].len);
    }
}

size_t
smc_next(struct smc *q, struct shard_env *env, struct buf *req)
{
    if (q->key.len == 0 && !smc_pop(q, env)) {
        return 0;
    }
    struct ks_entry *e = ks_peek(env->dbs[0], q->key.data, q->key.len);
    if (!ks_entry_live(e, env->now_ms) || (int)ks_entry_type(e) != q->type || smc_size(e) == 0) {
        smc_drop_current(q); /* (written meanwhile: dirty, sent again by the job) */
        return 0;
    }
    size_t nel;
    bool done = smc_build(q, e, &nel);
    if (nel == 0 && !q->first) {
        smc_drop_current(q);
        return 0;
    }
    size_t n = 1;
    if (q->first) {
        smc_write_first(q, e, req);
        if (q->type == KS_STRING && !done) {
            /* the target makes room for the whole string now: appending
             * into it then never moves (copies) what it holds */
            resp_w_array(req, 4);
            resp_w_bulk_cstr(req, q->verb != NULL ? q->verb : "RVMIGSLOTS");
            resp_w_bulk_cstr(req, "RESERVE");
            resp_w_bulk(req, q->key.data, q->key.len);
            resp_w_bulk_int(req, (int64_t)q->total);
            n++;
        }
    } else {
        smc_write_next(q, req);
    }
    q->first = false;
    q->sent += nel;
    q->chunks++;
    if (done) {
        smc_drop_current(q);
    }
    return n;
}

/* ---- the target's side ---- */

void
smc_reserve(struct conn *c, struct rv_str key, struct rv_str bytes)
{
    int64_t n;
    effect_none(c); /* (memory only: a replica appends as it can) */
    if (!cmd_arg_int(bytes, &n) || n < 0) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    struct ks_entry *e = ks_peek(c->env->ks, key.p, key.len);
    if (ks_entry_live(e, c->env->now_ms) && ks_entry_type(e) == KS_STRING &&
        (size_t)n > ks_str_len(e) && n <= c->env->cfg->net.proto_max_bulk_len) {
        ks_str_reserve(c->env->ks, &e, (size_t)n);
    }
    reply_ok(c);
}

struct smc_kind {
    const char *name, *lower;
    int type;
    int per; /* arguments per element */
    void (*run)(struct conn *c, int argc, struct rv_str *argv);
};

static const struct smc_kind smc_kinds[] = {
    { "HSET", "hset", KS_HASH, 2, cmd_hset },         { "SADD", "sadd", KS_SET, 1, cmd_sadd },
    { "ZADD", "zadd", KS_ZSET, 2, cmd_zadd },         { "RPUSH", "rpush", KS_LIST, 1, cmd_rpush },
    { "APPEND", "append", KS_STRING, 1, cmd_append },
};

void
smc_apply(struct conn *c, int argc, struct rv_str *argv)
{
    const struct smc_kind *k = NULL;
    struct rv_str key = argv[2];
    int n = argc - 4;
    for (size_t i = 0; argc >= 5 && i < sizeof(smc_kinds) / sizeof(smc_kinds[0]); i++) {
        if (cmd_arg_is(argv[3], smc_kinds[i].lower)) {
            k = &smc_kinds[i];
        }
    }
    effect_none(c);
    if (k == NULL || n % k->per != 0 || (k->type == KS_STRING && n != 1)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    struct ks_entry *e = ks_peek(c->env->ks, key.p, key.len);
    if (!ks_entry_live(e, c->env->now_ms)) {
        /* the first chunk's value expired or was evicted here meanwhile: the
         * source's copy expires at the same time; nothing to add to */
        reply_int(c, 0);
        return;
    }
    if ((int)ks_entry_type(e) != k->type) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    /* argv[3] is the command's name, argv[2] its key: swap them in place to
     * make the command (argv is the connection's, for this call only) */
    argv[2] = argv[3];
    argv[3] = key;
    k->run(c, argc - 2, argv + 2);
    effect_redo(c, k->name, key);
    for (int i = 4; i < argc; i++) {
        effect_arg(c, argv[i].p, argv[i].len);
    }
}
