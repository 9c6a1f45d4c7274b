/* node/commands/t_hash.c: the hash commands (HSET, HGET, ..., HEXPIRE) and the
 * driver of the active field expiry. The hash object, its encodings and the
 * index of keys with timed fields are in node/types/hash.c. */
#include "node/commands/t_hash.h"

#include "base/clock.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/features/tracking.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static void
hash_lim(struct conn *c, struct hobj_lim *lim)
{
    const struct cfg *cfg = c->env->cfg;
    lim->max_entries = cfg->enc.hash_max_listpack_entries > 0
                           ? (size_t)cfg->enc.hash_max_listpack_entries
                           : 0;
    lim->max_value = cfg->enc.hash_max_listpack_value > 0 ? (size_t)cfg->enc.hash_max_listpack_value
                                                          : 0;
}

/* The index of database db's hashes with timed fields. */
static struct hash_ttl_index **
hfe_index(struct shard_env *env, unsigned db)
{
    if (db == 0) {
        return &env->hash_ttl;
    }
    if (env->hash_ttl_dbs == NULL) {
        env->hash_ttl_dbs = rv_calloc(env->ndbs, sizeof(*env->hash_ttl_dbs));
    }
    return &env->hash_ttl_dbs[db];
}

static void
hfe_register(struct shard *s, struct rv_str key)
{
    hash_ttl_index_add(hfe_index(shard_env(s), shard_env(s)->db), key);
}

void
hash_ttl_note(struct shard *s, unsigned db, struct rv_str key)
{
    hash_ttl_index_add(hfe_index(shard_env(s), db), key);
}

void
hash_ttl_swap(struct shard *s, unsigned a, unsigned b)
{
    struct hash_ttl_index **x = hfe_index(shard_env(s), a), **y = hfe_index(shard_env(s), b);
    struct hash_ttl_index *t = *x;
    *x = *y;
    *y = t;
}

void
hash_ttl_free_all(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    hash_ttl_index_destroy(env->hash_ttl);
    env->hash_ttl = NULL;
    for (unsigned i = 0; env->hash_ttl_dbs != NULL && i < env->ndbs; i++) {
        hash_ttl_index_destroy(env->hash_ttl_dbs[i]);
    }
    rv_free(env->hash_ttl_dbs);
    env->hash_ttl_dbs = NULL;
}

/* Fields of key expired (lazily or in the sweep): Redis 7.4's "hexpired",
 * then "del" when the hash went with them; a cached copy is invalidated. */
static void
fields_expired(struct shard *s, struct rv_str key, bool gone)
{
    struct shard_env *env = shard_env(s);
    ksn_event(env, KSN_HASH, "hexpired", key);
    if (gone) {
        ksn_event(env, KSN_GENERIC, "del", key);
    }
    tracking_key_gone(s, key);
}

static void
on_swept(void *arg, struct rv_str key, bool gone)
{
    fields_expired(arg, key, gone);
}

void
hash_active_expire(struct shard *s, int64_t now, uint64_t budget_us)
{
    struct shard_env *env = shard_env(s);
    for (unsigned i = 0; i < env->ndbs; i++) {
        struct hash_ttl_index *x = i == 0              ? env->hash_ttl
                                   : env->hash_ttl_dbs ? env->hash_ttl_dbs[i]
                                                       : NULL;
        if (x != NULL && env->dbs[i] != NULL) {
            shard_use_db(env, i); /* (what the sweep deletes is logged as this database's) */
            hash_ttl_index_sweep(x, env->ks, now, budget_us, on_swept, s);
        }
    }
    shard_use_db(env, 0);
}

/* Read lookup with hit/miss stats. NULL when missing or of another type; in
 * the latter case *err is set and WRONGTYPE replied. */
static struct hobj *
hash_read(struct conn *c, struct rv_str key, bool *err, struct hobj *h)
{
    struct ks_entry *e = ks_lookup(c->env->ks, key.p, key.len, c->env->now_ms);
    struct shard_stats *st = &c->env->stats;

    *err = false;
    if (e == NULL) {
        st->keyspace_misses++;
        ksn_event(c->env, KSN_KEY_MISS, "keymiss", key);
        return NULL;
    }
    if (ks_entry_type(e) != KS_HASH) {
        st->keyspace_hits++;
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    hobj_bind(h, c->env->ks, e);
    size_t reaped;
    bool gone = hash_reap_key(c->env->ks, key, h, c->env->now_ms, &reaped);
    if (reaped > 0) {
        fields_expired(c->shard, key, gone);
    }
    if (gone) {
        st->keyspace_misses++;
        return NULL;
    }
    st->keyspace_hits++;
    return h;
}

/* Write lookup; with create, a missing key gets an empty hash (the caller
 * must then add at least one field). The hash is bound to *h. */
static struct hobj *
hash_write(struct conn *c, struct rv_str key, bool create, bool *err, struct hobj *h)
{
    static const uint8_t empty[HPK_HDR] = { 0 };
    struct ks *ks = c->env->ks;
    struct ks_entry *e = ks_lookup(ks, key.p, key.len, c->env->now_ms);

    *err = false;
    if (e != NULL) {
        if (ks_entry_type(e) != KS_HASH) {
            reply_err(c, RV_ERR_WRONGTYPE);
            *err = true;
            return NULL;
        }
        hobj_bind(h, ks, e);
        size_t reaped;
        bool gone = hash_reap_key(ks, key, h, c->env->now_ms, &reaped);
        if (reaped > 0) {
            fields_expired(c->shard, key, gone);
        }
        if (!gone) {
            return h;
        }
    }
    if (!create) {
        return NULL;
    }
    /* New hashes start as an empty listpack inline in the entry. */
    e = ks_set_inl(ks, key.p, key.len, KS_HASH, empty, sizeof(empty), KS_NO_EXPIRE);
    hobj_bind(h, ks, e);
    return h;
}

static void
hash_drop_if_empty(struct conn *c, struct hobj *h, struct rv_str key)
{
    if (hobj_len(h) == 0) {
        ks_delete(c->env->ks, key.p, key.len);
    }
}

static void
hset_generic(struct conn *c, int argc, struct rv_str *argv, const char *name, bool ok_reply)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    bool err;
    int64_t created = 0;

    if (argc % 2 != 0) {
        reply_err_arity(c, name);
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    hash_lim(c, &lim);
    for (int i = 2; i < argc; i += 2) {
        created += hobj_set(h, argv[i].p, argv[i].len, argv[i + 1].p, argv[i + 1].len, &lim);
    }
    ksn_event(c->env, KSN_HASH, "hset", argv[1]);
    if (ok_reply) {
        reply_ok(c);
    } else {
        reply_int(c, created);
    }
}

CMD_HANDLER(hset)
{
    hset_generic(c, argc, argv, "hset", false);
}

CMD_HANDLER(hmset)
{
    hset_generic(c, argc, argv, "hmset", true);
}

CMD_HANDLER(hsetnx)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL && err) {
        return;
    }
    if (h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v)) {
        effect_none(c); /* (nothing to log or invalidate, as Redis) */
        reply_int(c, 0);
        return;
    }
    if (h == NULL) {
        h = hash_write(c, argv[1], true, &err, &hb);
    }
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, argv[3].p, argv[3].len, &lim);
    ksn_event(c->env, KSN_HASH, "hset", argv[1]);
    reply_int(c, 1);
}

CMD_HANDLER(hget)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            reply_null(c);
        }
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v)) {
        reply_bulk(c, v.p, v.len);
    } else {
        reply_null(c);
    }
}

CMD_HANDLER(hmget)
{
    struct hobj hb, *h;
    bool err;

    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        struct rv_str v;
        char scratch[HPK_SCRATCH];
        if (h != NULL && hobj_get(h, argv[i].p, argv[i].len, scratch, &v)) {
            reply_bulk(c, v.p, v.len);
        } else {
            reply_null(c);
        }
    }
}

enum { HOUT_KEYS = 1, HOUT_VALS = 2 };

struct hout {
    struct conn *c;
    int what;
};

static void
hout_visit(void *arg, struct rv_str f, struct rv_str v)
{
    struct hout *o = arg;
    if (o->what & HOUT_KEYS) {
        reply_bulk(o->c, f.p, f.len);
    }
    if (o->what & HOUT_VALS) {
        reply_bulk(o->c, v.p, v.len);
    }
}

static void
hgetall_generic(struct conn *c, struct rv_str key, int what)
{
    struct hout o = { c, what };
    struct hobj hb, *h;
    bool err;
    size_t n;

    if ((h = hash_read(c, key, &err, &hb)) == NULL && err) {
        return;
    }
    n = h != NULL ? hobj_len(h) : 0;
    if (what == (HOUT_KEYS | HOUT_VALS)) {
        reply_map(c, n);
    } else {
        reply_array(c, n);
    }
    if (h != NULL) {
        hobj_foreach(h, hout_visit, &o);
    }
}

CMD_HANDLER(hgetall)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_KEYS | HOUT_VALS);
}

CMD_HANDLER(hkeys)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_KEYS);
}

CMD_HANDLER(hvals)
{
    (void)argc;
    hgetall_generic(c, argv[1], HOUT_VALS);
}

CMD_HANDLER(hdel)
{
    struct hobj hb, *h;
    bool err;
    int64_t n = 0;

    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL) {
        if (!err) {
            effect_none(c);
            reply_int(c, 0);
        }
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += hobj_del(h, argv[i].p, argv[i].len);
        if (hobj_len(h) == 0) {
            break;
        }
    }
    if (n > 0) {
        ksn_event(c->env, KSN_HASH, "hdel", argv[1]);
        if (hobj_len(h) == 0) {
            ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
        }
    } else {
        effect_none(c);
    }
    hash_drop_if_empty(c, h, argv[1]);
    reply_int(c, n);
}

CMD_HANDLER(hlen)
{
    struct hobj hb, *h;
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c, h != NULL ? (int64_t)hobj_len(h) : 0);
}

CMD_HANDLER(hexists)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c, h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v));
}

CMD_HANDLER(hstrlen)
{
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH];
    bool err;

    (void)argc;
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL && err) {
        return;
    }
    reply_int(c,
              h != NULL && hobj_get(h, argv[2].p, argv[2].len, scratch, &v) ? (int64_t)v.len : 0);
}

CMD_HANDLER(hincrby)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH], out[24];
    int64_t incr, cur = 0;
    bool err;

    (void)argc;
    if (!cmd_arg_int(argv[3], &incr)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v) && !cmd_arg_int(v, &cur)) {
        reply_errf(c, "ERR hash value is not an integer");
        return;
    }
    if ((incr < 0 && cur < INT64_MIN - incr) || (incr > 0 && cur > INT64_MAX - incr)) {
        hash_drop_if_empty(c, h, argv[1]);
        reply_err(c, RV_ERR_OVERFLOW);
        return;
    }
    cur += incr;
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, out, resp_ll2str(out, cur), &lim);
    ksn_event(c->env, KSN_HASH, "hincrby", argv[1]);
    reply_int(c, cur);
}

CMD_HANDLER(hincrbyfloat)
{
    struct hobj_lim lim;
    struct hobj hb, *h;
    struct rv_str v;
    char scratch[HPK_SCRATCH], out[RESP_LD_MAX];
    long double incr, cur = 0;
    size_t n;
    bool err;

    (void)argc;
    if (!cmd_arg_double(argv[3], &incr)) {
        reply_err(c, RV_ERR_NOTFLOAT);
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        reply_errf(c, "ERR value is NaN or Infinity");
        return;
    }
    if ((h = hash_write(c, argv[1], true, &err, &hb)) == NULL) {
        return;
    }
    if (hobj_get(h, argv[2].p, argv[2].len, scratch, &v) && !cmd_arg_double(v, &cur)) {
        reply_errf(c, "ERR hash value is not a float");
        return;
    }
    cur += incr;
    if (isnan(cur) || isinf(cur)) {
        hash_drop_if_empty(c, h, argv[1]);
        reply_err(c, RV_ERR_NANINF);
        return;
    }
    n = resp_fmt_ldouble(out, sizeof(out), cur);
    hash_lim(c, &lim);
    hobj_set(h, argv[2].p, argv[2].len, out, n, &lim);
    ksn_event(c->env, KSN_HASH, "hincrbyfloat", argv[1]);
    reply_bulk(c, out, n);
}

/* ------------------------------------------------------------- HRANDFIELD */

uint64_t
hash_rng_seed(struct conn *c)
{
    return clock_mono_us() ^ (c->env->stats.commands << 24) ^ ((uint64_t)c->id << 44);
}

/* An item is an element offset (packed) or a dict entry pointer. */
static void
hr_emit(struct conn *c, const struct hobj *h, uintptr_t item, bool withvalues)
{
    struct rv_str f, v;
    char fs[HPK_SCRATCH], vs[HPK_SCRATCH];

    if (h->enc == HENC_PK) {
        size_t off = hpk_get(h->pk.p, (size_t)item, fs, &f);
        if (withvalues) {
            hpk_get(h->pk.p, off, vs, &v);
        }
    } else {
        const struct dict_entry *e = (const struct dict_entry *)item;
        f = dict_key(e);
        if (withvalues) {
            v = dict_val_bytes(e);
        }
    }
    if (withvalues && c->proto >= 3) {
        reply_array(c, 2);
    }
    reply_bulk(c, f.p, f.len);
    if (withvalues) {
        reply_bulk(c, v.p, v.len);
    }
}

struct items {
    uintptr_t *v;
    size_t n;
};

static void
items_add_entry(void *arg, struct dict_entry *e)
{
    struct items *it = arg;
    it->v[it->n++] = (uintptr_t)e;
}

/* Every field of h as items (caller frees it.v). */
static void
hr_items(struct hobj *h, struct items *it)
{
    size_t n = hobj_len(h);
    it->v = rv_malloc((n ? n : 1) * sizeof(*it->v));
    it->n = 0;
    if (h->enc == HENC_PK) {
        size_t off = 0;
        while (off < hpk_end(h->pk.p)) {
            it->v[it->n++] = off;
            off = hpk_next(h->pk.p, hpk_next(h->pk.p, off));
        }
    } else {
        dict_foreach(h->ht->d, items_add_entry, it);
    }
}

static void
hrandfield_count(struct conn *c, struct hobj *h, int64_t count, bool withvalues)
{
    size_t size = hobj_len(h), n;
    uint64_t rs = hash_rng_seed(c);
    struct items it;

    if (count == 0) {
        reply_array(c, 0);
        return;
    }
    if (count < 0) {
        n = (size_t)(-count);
        reply_array(c, withvalues && c->proto < 3 ? n * 2 : n);
        if (h->enc == HENC_HT) {
            for (size_t i = 0; i < n; i++) {
                hr_emit(c, h, (uintptr_t)dict_random(h->ht->d, hash_rng_next(&rs)), withvalues);
            }
            return;
        }
        hr_items(h, &it);
        for (size_t i = 0; i < n; i++) {
            hr_emit(c, h, it.v[hash_rng_below(&rs, it.n)], withvalues);
        }
        rv_free(it.v);
        return;
    }
    n = (size_t)count < size ? (size_t)count : size;
    reply_array(c, withvalues && c->proto < 3 ? n * 2 : n);
    if (h->enc == HENC_HT && n * 3 <= size) {
        /* Few of many: random picks, duplicates filtered by entry address. */
        struct dict *seen = dict_create_kind(DICT_KEYONLY);
        size_t got = 0;
        while (got < n) {
            struct dict_entry *e = dict_random(h->ht->d, hash_rng_next(&rs));
            bool created;
            dict_add(seen, (const char *)&e, sizeof(e), &created);
            if (created) {
                hr_emit(c, h, (uintptr_t)e, withvalues);
                got++;
            }
        }
        dict_destroy(seen, NULL);
        return;
    }
    /* Partial Fisher-Yates over all items (all of them when n == size). */
    hr_items(h, &it);
    for (size_t i = 0; i < n; i++) {
        if (n < size) {
            size_t j = i + hash_rng_below(&rs, it.n - i);
            uintptr_t t = it.v[i];
            it.v[i] = it.v[j];
            it.v[j] = t;
        }
        hr_emit(c, h, it.v[i], withvalues);
    }
    rv_free(it.v);
}

CMD_HANDLER(hrandfield)
{
    struct hobj hb, *h;
    int64_t count = 0;
    bool withvalues = false, err;

    if (argc >= 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count == INT64_MIN) {
            reply_errf(c, "ERR value is out of range, value must between -9223372036854775807 and "
                          "9223372036854775807");
            return;
        }
        if (argc == 4 && cmd_arg_is(argv[3], "withvalues")) {
            withvalues = true;
        } else if (argc >= 4) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (withvalues && count < -(INT64_MAX / 2)) {
            reply_errf(c, "ERR value is out of range");
            return;
        }
    }
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            if (argc >= 3) {
                reply_array(c, 0);
            } else {
                reply_null(c);
            }
        }
        return;
    }
    if (argc >= 3) {
        hrandfield_count(c, h, count, withvalues);
        return;
    }
    if (h->enc == HENC_PK) {
        uint64_t rs = hash_rng_seed(c);
        size_t k = hash_rng_below(&rs, hobj_len(h)), off = 0;
        for (size_t i = 0; i < k; i++) {
            off = hpk_next(h->pk.p, hpk_next(h->pk.p, off));
        }
        hr_emit(c, h, off, false);
    } else {
        uint64_t rs = hash_rng_seed(c);
        hr_emit(c, h, (uintptr_t)dict_random(h->ht->d, hash_rng_next(&rs)), false);
    }
}


struct hscan_ctx {
    const char *pat;
    size_t plen;
    struct dict_entry **v;
    size_t n, cap;
};

static void
hscan_collect(void *arg, struct dict_entry *e)
{
    struct hscan_ctx *s = arg;
    struct rv_str k;
    if (s->pat != NULL) {
        k = dict_key(e);
        if (!glob_match(s->pat, s->plen, k.p, k.len, false)) {
            return;
        }
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = e;
}

CMD_HANDLER(hscan)
{
    struct hscan_ctx s = { 0 };
    struct hobj hb, *h;
    uint64_t cursor, next = 0;
    int64_t count = 10;
    bool novalues = false, err;

    if (!cmd_arg_cursor(argv[2], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    if ((h = hash_read(c, argv[1], &err, &hb)) == NULL) {
        if (!err) {
            reply_array(c, 2);
            reply_bulk(c, "0", 1);
            reply_array(c, 0);
        }
        return;
    }
    struct scan_opts o;
    if (!cmd_parse_scan_opts(c, argc, argv, 3, SCAN_ALLOW_NOVALUES, &o)) {
        return;
    }
    s.pat = o.match.p;
    s.plen = o.match.len;
    novalues = o.novalues;
    count = o.count;
    if (h->enc == HENC_PK) {
        /* Small encodings are returned whole in one call, cursor 0 (as Redis). */
        char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
        size_t off = 0, hd, n = 0;
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        hd = reply_defer(c);
        while (off < hpk_end(h->pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h->pk.p, off, fs, &f);
            off = hpk_get(h->pk.p, off, vs, &v);
            if (s.pat != NULL && !glob_match(s.pat, s.plen, f.p, f.len, false)) {
                continue;
            }
            reply_bulk(c, f.p, f.len);
            n++;
            if (!novalues) {
                reply_bulk(c, v.p, v.len);
                n++;
            }
        }
        reply_defer_array(c, hd, n);
        return;
    }
    next = dict_scan(h->ht->d, cursor, (size_t)count, hscan_collect, &s);
    reply_array(c, 2);
    reply_bulk_u64(c, next);
    reply_array(c, novalues ? s.n : s.n * 2);
    for (size_t i = 0; i < s.n; i++) {
        struct rv_str f = dict_key(s.v[i]);
        reply_bulk(c, f.p, f.len);
        if (!novalues) {
            struct rv_str v = dict_val_bytes(s.v[i]);
            reply_bulk(c, v.p, v.len);
        }
    }
    rv_free(s.v);
}

/* ------------------------------------------- HEXPIRE family, HTTL, HPERSIST */

#define HFE_MAX_MS ((int64_t)281474976710655) /* 2^48 - 1, as Redis 7.4 */

/* Parses "FIELDS numfields field ..." at argv[at]; the fields start at *first.
 * false once an error is replied. */
static bool
hfe_parse_fields(struct conn *c, int argc, struct rv_str *argv, int at, int *first, int64_t *n)
{
    if (at >= argc || argv[at].len != 6 || strncasecmp(argv[at].p, "FIELDS", 6) != 0) {
        reply_errf(c, "ERR Mandatory argument FIELDS is missing or not at the right position");
        return false;
    }
    if (at + 1 >= argc || !ks_str_parse_int(argv[at + 1].p, argv[at + 1].len, n)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (*n <= 0) {
        reply_errf(c, "ERR Parameter `numFields` should be greater than 0");
        return false;
    }
    if (*n != argc - at - 2) {
        reply_errf(c, "ERR The `numfields` parameter must match the number of arguments");
        return false;
    }
    *first = at + 2;
    return true;
}

enum hfe_cond { HFE_NONE, HFE_NX, HFE_XX, HFE_GT, HFE_LT };

/* unit_ms: 1000 for seconds, 1 for ms; absolute: *AT forms. */
static void
hexpire_generic(struct conn *c, int argc, struct rv_str *argv, const char *name, int64_t unit_ms,
                bool absolute)
{
    int64_t t, when, n, now = c->env->now_ms;
    enum hfe_cond cond = HFE_NONE;
    int at = 3, first;
    struct hobj hb, *h;
    bool err;

    if (!ks_str_parse_int(argv[2].p, argv[2].len, &t)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (at < argc && argv[at].len == 2) {
        static const char *names[] = { "NX", "XX", "GT", "LT" };
        for (int i = 0; i < 4; i++) {
            if (strncasecmp(argv[at].p, names[i], 2) == 0) {
                cond = (enum hfe_cond)(i + 1);
                at++;
                break;
            }
        }
    }
    if (!hfe_parse_fields(c, argc, argv, at, &first, &n)) {
        return;
    }
    if (t < 0) {
        reply_errf(c, "ERR invalid expire time, must be >= 0");
        return;
    }
    if (t > INT64_MAX / unit_ms || (!absolute && t * unit_ms > INT64_MAX - now)) {
        reply_errf(c, "ERR invalid expire time in '%s' command", name);
        return;
    }
    when = t * unit_ms + (absolute ? 0 : now);
    if (when > HFE_MAX_MS) {
        reply_errf(c, "ERR invalid expire time, must be < %lld msec", (long long)HFE_MAX_MS);
        return;
    }
    if ((h = hash_write(c, argv[1], false, &err, &hb)) == NULL) {
        if (!err) {
            effect_none(c);
            reply_array(c, (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                reply_int(c, -2);
            }
        }
        return;
    }
    if (h->enc == HENC_PK) {
        hobj_convert(h); /* timed fields live in the hashtable encoding only */
    }
    int64_t deleted = 0, updated = 0;
    reply_array(c, (size_t)n);
    for (int i = first; i < argc; i++) {
        int64_t cur;
        bool ok;
        if (dict_find(h->ht->d, argv[i].p, argv[i].len) == NULL) {
            reply_int(c, -2);
            continue;
        }
        cur = hobj_field_deadline(h, argv[i].p, argv[i].len);
        switch (cond) {
        case HFE_NX: ok = cur < 0; break;
        case HFE_XX: ok = cur >= 0; break;
        case HFE_GT: ok = cur >= 0 && when > cur; break;
        case HFE_LT: ok = cur < 0 || when < cur; break;
        default: ok = true; break;
        }
        if (!ok) {
            reply_int(c, 0);
        } else if (when <= now) {
            hobj_del(h, argv[i].p, argv[i].len);
            deleted++;
            reply_int(c, 2);
        } else {
            if (hobj_ttl(h) == NULL) {
                hfe_register(c->shard, argv[1]);
            }
            hobj_set_deadline(h, argv[i].p, argv[i].len, when);
            updated++;
            reply_int(c, 1);
        }
    }
    /* Redis 7.4: one event, "hdel" when a past time deleted fields, else
     * "hexpire"; "del" when the hash went; nothing when no field changed. */
    if (deleted + updated == 0) {
        effect_none(c);
    } else {
        ksn_event(c->env, KSN_HASH, deleted > 0 ? "hdel" : "hexpire", argv[1]);
        if (hobj_len(h) == 0) {
            ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
        }
    }
    hash_drop_if_empty(c, h, argv[1]);
}

CMD_HANDLER(hexpire)
{
    hexpire_generic(c, argc, argv, "hexpire", 1000, false);
}
CMD_HANDLER(hpexpire)
{
    hexpire_generic(c, argc, argv, "hpexpire", 1, false);
}
CMD_HANDLER(hexpireat)
{
    hexpire_generic(c, argc, argv, "hexpireat", 1000, true);
}
CMD_HANDLER(hpexpireat)
{
    hexpire_generic(c, argc, argv, "hpexpireat", 1, true);
}

enum hfe_what { HFE_TTL_S, HFE_TTL_MS, HFE_AT_S, HFE_AT_MS, HFE_PERSIST };

static void
httl_generic(struct conn *c, int argc, struct rv_str *argv, enum hfe_what what)
{
    int64_t n, now = c->env->now_ms;
    struct hobj hb, *h;
    int first;
    bool err;

    if (!hfe_parse_fields(c, argc, argv, 2, &first, &n)) {
        return;
    }
    h = what == HFE_PERSIST ? hash_write(c, argv[1], false, &err, &hb)
                            : hash_read(c, argv[1], &err, &hb);
    if (h == NULL && err) {
        return;
    }
    int64_t persisted = 0;
    reply_array(c, (size_t)n);
    for (int i = first; i < argc; i++) {
        char scratch[HPK_SCRATCH];
        struct rv_str v;
        int64_t d;
        if (h == NULL || !hobj_get(h, argv[i].p, argv[i].len, scratch, &v)) {
            reply_int(c, -2);
            continue;
        }
        if ((d = hobj_field_deadline(h, argv[i].p, argv[i].len)) < 0) {
            reply_int(c, -1);
            continue;
        }
        switch (what) {
        case HFE_TTL_S: reply_int(c, (d - now + 500) / 1000); break;
        case HFE_TTL_MS: reply_int(c, d - now); break;
        case HFE_AT_S: reply_int(c, d / 1000); break;
        case HFE_AT_MS: reply_int(c, d); break;
        default:
            hobj_ttl_clear(h, argv[i].p, argv[i].len);
            persisted++;
            reply_int(c, 1);
            break;
        }
    }
    if (what == HFE_PERSIST) {
        if (persisted > 0) {
            ksn_event(c->env, KSN_HASH, "hpersist", argv[1]);
        } else {
            effect_none(c);
        }
    }
}

CMD_HANDLER(httl)
{
    httl_generic(c, argc, argv, HFE_TTL_S);
}
CMD_HANDLER(hpttl)
{
    httl_generic(c, argc, argv, HFE_TTL_MS);
}
CMD_HANDLER(hexpiretime)
{
    httl_generic(c, argc, argv, HFE_AT_S);
}
CMD_HANDLER(hpexpiretime)
{
    httl_generic(c, argc, argv, HFE_AT_MS);
}
CMD_HANDLER(hpersist)
{
    httl_generic(c, argc, argv, HFE_PERSIST);
}
