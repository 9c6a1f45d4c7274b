/* node/commands/t_set.c: the set commands (SADD, SINTER, ...); the set object is
 * node/types/set.h. Multi-key operations (SINTER, SUNION, SDIFF and their STORE
 * forms) build the result as a new set, then reply with it or store it, so a
 * destination that is also a source is read before it is replaced. */
#include "node/commands/t_set.h"

#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/commands/t_hash.h"

#include <stdlib.h>
#include <string.h>

static void
set_lim(struct conn *c, struct sobj_lim *lim)
{
    const struct cfg *cfg = c->env->cfg;
    lim->max_intset = cfg->enc.set_max_intset_entries > 0 ? (size_t)cfg->enc.set_max_intset_entries
                                                          : 0;
    lim->max_pk_entries = cfg->enc.set_max_listpack_entries > 0
                              ? (size_t)cfg->enc.set_max_listpack_entries
                              : 0;
    lim->max_pk_value = cfg->enc.set_max_listpack_value > 0
                            ? (size_t)cfg->enc.set_max_listpack_value
                            : 0;
}

/* Lookup; read lookups count hits/misses. NULL when missing or of another
 * type; in the latter case *err is set and WRONGTYPE replied. */
static struct sobj *
set_lookup(struct conn *c, struct rv_str key, bool read, bool *err, struct sobj *s)
{
    struct ks_entry *e = ks_lookup(c->env->ks, key.p, key.len, c->env->now_ms);

    *err = false;
    if (read) {
        struct shard_stats *st = &c->env->stats;
        if (e != NULL) {
            st->keyspace_hits++;
        } else {
            st->keyspace_misses++;
            ksn_event(c->env, KSN_KEY_MISS, "keymiss", key);
        }
    }
    if (e == NULL) {
        return NULL;
    }
    if (ks_entry_type(e) != KS_SET) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    sobj_bind(s, c->env->ks, e);
    return s;
}

static void
set_drop_if_empty(struct conn *c, struct sobj *s, struct rv_str key)
{
    if (sobj_len(s) == 0) {
        ks_delete(c->env->ks, key.p, key.len);
        ksn_event(c->env, KSN_GENERIC, "del", key);
    }
}

CMD_HANDLER(sadd)
{
    struct sobj_lim lim;
    struct sobj sb, *s;
    bool err;
    int64_t n = 0;

    set_lim(c, &lim);
    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (err) {
            return;
        }
        /* Built standalone, then stored (inline when it is a listpack). */
        s = sobj_create(argv[2].p, argv[2].len, (size_t)(argc - 2), &lim);
        for (int i = 2; i < argc; i++) {
            n += sobj_add(s, argv[i].p, argv[i].len, &lim);
        }
        sobj_store(s, c->env->ks, argv[1].p, argv[1].len);
        ksn_event(c->env, KSN_SET, "sadd", argv[1]);
        reply_int(c, n);
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += sobj_add(s, argv[i].p, argv[i].len, &lim);
    }
    if (n > 0) {
        ksn_event(c->env, KSN_SET, "sadd", argv[1]);
    } else {
        effect_none(c); /* (all present: nothing to log or invalidate, as Redis) */
    }
    reply_int(c, n);
}

CMD_HANDLER(srem)
{
    struct sobj sb, *s;
    bool err;
    int64_t n = 0;

    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (!err) {
            effect_none(c);
            reply_int(c, 0);
        }
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += sobj_rem(s, argv[i].p, argv[i].len);
        if (sobj_len(s) == 0) {
            break;
        }
    }
    if (n > 0) {
        ksn_event(c->env, KSN_SET, "srem", argv[1]);
    } else {
        effect_none(c);
    }
    set_drop_if_empty(c, s, argv[1]);
    reply_int(c, n);
}

static void
out_member(void *arg, struct rv_str m)
{
    reply_bulk(arg, m.p, m.len);
}

CMD_HANDLER(smembers)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            reply_set(c, 0);
        }
        return;
    }
    reply_set(c, sobj_len(s));
    sobj_foreach(s, out_member, c);
}

CMD_HANDLER(sismember)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_int(c, s != NULL && sobj_has(s, argv[2].p, argv[2].len));
}

CMD_HANDLER(smismember)
{
    struct sobj sb, *s;
    bool err;

    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        reply_int(c, s != NULL && sobj_has(s, argv[i].p, argv[i].len));
    }
}

CMD_HANDLER(scard)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_int(c, s != NULL ? (int64_t)sobj_len(s) : 0);
}

CMD_HANDLER(spop)
{
    struct sobj sb, *s;
    char scratch[HPK_SCRATCH];
    struct rv_str m;
    uint64_t rs;
    int64_t count = 1;
    size_t n;
    bool err;

    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count) || count < 0) {
            reply_errf(c, "ERR value is out of range, must be positive");
            return;
        }
    }
    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (!err) {
            if (argc == 3) {
                reply_set(c, 0);
            } else {
                reply_null(c);
            }
            effect_none(c);
        }
        return;
    }
    /* logged as SREM of the members it took (or DEL when it took them all) */
    rs = hash_rng_seed(c);
    if (argc == 2) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        effect_redo(c, "SREM", argv[1]);
        effect_arg(c, m.p, m.len);
        sobj_rem(s, m.p, m.len);
        ksn_event(c->env, KSN_SET, "spop", argv[1]);
        set_drop_if_empty(c, s, argv[1]);
        return;
    }
    n = (size_t)count < sobj_len(s) ? (size_t)count : sobj_len(s);
    reply_set(c, n);
    if (n == 0) {
        effect_none(c);
        return;
    }
    if (n == sobj_len(s)) {
        sobj_foreach(s, out_member, c);
        effect_redo(c, "DEL", argv[1]);
        ks_delete(c->env->ks, argv[1].p, argv[1].len);
        ksn_event(c->env, KSN_SET, "spop", argv[1]);
        ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
        return;
    }
    ksn_event(c->env, KSN_SET, "spop", argv[1]);
    effect_redo(c, "SREM", argv[1]);
    for (size_t i = 0; i < n; i++) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        effect_arg(c, m.p, m.len);
        sobj_rem(s, m.p, m.len);
    }
}

struct mlist {
    struct rv_str *v;
    size_t n;
    char (*scratch)[HPK_SCRATCH]; /* integer members' text */
};

static void
mlist_add(void *arg, struct rv_str m)
{
    struct mlist *l = arg;
    if (l->scratch != NULL && m.len < HPK_SCRATCH) {
        memcpy(l->scratch[l->n], m.p, m.len);
        m.p = l->scratch[l->n];
    }
    l->v[l->n++] = m;
}

/* All members as views; small encodings copy into per-member buffers. */
static void
mlist_fill(const struct sobj *s, struct mlist *l)
{
    size_t n = sobj_len(s);
    l->v = rv_malloc((n ? n : 1) * sizeof(*l->v));
    l->n = 0;
    /* Small encodings format integers into one reused buffer: copy those. */
    l->scratch = s->enc != SENC_HT ? rv_malloc((n ? n : 1) * sizeof(*l->scratch)) : NULL;
    sobj_foreach(s, mlist_add, l);
}

static void
mlist_free(struct mlist *l)
{
    rv_free(l->v);
    rv_free(l->scratch);
}

CMD_HANDLER(srandmember)
{
    struct sobj sb, *s;
    char scratch[HPK_SCRATCH];
    struct rv_str m;
    uint64_t rs;
    int64_t count = 0;
    size_t n, size;
    bool err;

    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count == INT64_MIN) {
            reply_errf(c, "ERR value is out of range, value must between -9223372036854775807 and "
                          "9223372036854775807");
            return;
        }
    }
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            if (argc == 3) {
                reply_array(c, 0);
            } else {
                reply_null(c);
            }
        }
        return;
    }
    rs = hash_rng_seed(c);
    if (argc == 2) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        return;
    }
    size = sobj_len(s);
    if (count < 0) {
        n = (size_t)(-count);
        reply_array(c, n);
        for (size_t i = 0; i < n; i++) {
            m = sobj_random(s, &rs, scratch);
            reply_bulk(c, m.p, m.len);
        }
        return;
    }
    n = (size_t)count < size ? (size_t)count : size;
    reply_array(c, n);
    if (n == size) {
        sobj_foreach(s, out_member, c);
    } else if (s->enc == SENC_HT && n * 3 <= size) {
        /* Few of many: random picks, duplicates filtered by key. */
        struct dict *seen = dict_create_kind(DICT_KEYONLY);
        size_t got = 0;
        while (got < n) {
            bool created;
            m = sobj_random(s, &rs, scratch);
            dict_add(seen, m.p, m.len, &created);
            if (created) {
                reply_bulk(c, m.p, m.len);
                got++;
            }
        }
        dict_destroy(seen, NULL);
    } else {
        struct mlist l;
        mlist_fill(s, &l);
        for (size_t i = 0; i < n; i++) {
            size_t j = i + hash_rng_below(&rs, l.n - i);
            struct rv_str t = l.v[i];
            l.v[i] = l.v[j];
            l.v[j] = t;
            reply_bulk(c, l.v[i].p, l.v[i].len);
        }
        mlist_free(&l);
    }
}

CMD_HANDLER(smove)
{
    struct sobj_lim lim;
    struct sobj srcb, dstb, *src, *dst;
    bool err;

    (void)argc;
    src = set_lookup(c, argv[1], false, &err, &srcb);
    if (err) {
        return;
    }
    if (src == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    if ((dst = set_lookup(c, argv[2], false, &err, &dstb)) == NULL && err) {
        return;
    }
    if (argv[1].len == argv[2].len && memcmp(argv[1].p, argv[2].p, argv[1].len) == 0) {
        effect_none(c);
        reply_int(c, sobj_has(src, argv[3].p, argv[3].len));
        return;
    }
    if (!sobj_rem(src, argv[3].p, argv[3].len)) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    ksn_event(c->env, KSN_SET, "srem", argv[1]);
    set_drop_if_empty(c, src, argv[1]);
    set_lim(c, &lim);
    if (dst == NULL) {
        dst = sobj_create(argv[3].p, argv[3].len, 1, &lim);
        sobj_add(dst, argv[3].p, argv[3].len, &lim);
        sobj_store(dst, c->env->ks, argv[2].p, argv[2].len);
        ksn_event(c->env, KSN_SET, "sadd", argv[2]);
    } else if (sobj_add(dst, argv[3].p, argv[3].len, &lim)) {
        ksn_event(c->env, KSN_SET, "sadd", argv[2]);
    } else {
        /* dst already held it: only src changed (Redis signals dst only when added) */
        effect_redo(c, "SREM", argv[1]);
        effect_arg(c, argv[3].p, argv[3].len);
    }
    reply_int(c, 1);
}

/* ------------------------------------------------------- multi-key algebra */

enum set_op { SOP_INTER, SOP_UNION, SOP_DIFF };

/* Looks up keys[0..n) as sets into out (NULL for missing ones). false when a
 * key holds another type (WRONGTYPE replied). */
static bool
set_gather(struct conn *c, struct rv_str *keys, int n, bool read, struct sobj **out,
           struct sobj *bufs)
{
    for (int i = 0; i < n; i++) {
        bool err;
        out[i] = set_lookup(c, keys[i], read, &err, &bufs[i]);
        if (err) {
            return false;
        }
    }
    return true;
}

static int
by_size(const void *a, const void *b)
{
    size_t x = sobj_len(*(struct sobj *const *)a), y = sobj_len(*(struct sobj *const *)b);
    return x < y ? -1 : x > y;
}

struct algebra {
    struct sobj **sets; /* others to test against */
    int nsets;
    enum set_op op;
    struct sobj *res;
    const struct sobj_lim *lim;
    size_t limit; /* SINTERCARD: stop counting here (0 = no limit) */
    size_t count;
    bool count_only;
};

static void
algebra_visit(void *arg, struct rv_str m)
{
    struct algebra *a = arg;
    if (a->count_only && a->limit != 0 && a->count >= a->limit) {
        return;
    }
    if (a->op == SOP_INTER) {
        for (int i = 0; i < a->nsets; i++) {
            if (!sobj_has(a->sets[i], m.p, m.len)) {
                return;
            }
        }
    } else if (a->op == SOP_DIFF) {
        for (int i = 0; i < a->nsets; i++) {
            if (a->sets[i] != NULL && sobj_has(a->sets[i], m.p, m.len)) {
                return;
            }
        }
    }
    if (a->count_only) {
        a->count++;
        return;
    }
    if (a->res == NULL) {
        a->res = sobj_create(m.p, m.len, 1, a->lim);
    }
    sobj_add(a->res, m.p, m.len, a->lim);
}

/* The result of op over sets[0..n) (NULL entries are missing keys), as a new
 * set or NULL when empty; with count_only, the cardinality in a->count. */
static void
algebra_run(struct sobj **sets, int n, struct algebra *a)
{
    if (a->op == SOP_INTER) {
        for (int i = 0; i < n; i++) {
            if (sets[i] == NULL) {
                return; /* a missing key is an empty set */
            }
        }
        qsort(sets, (size_t)n, sizeof(*sets), by_size);
        a->sets = sets + 1;
        a->nsets = n - 1;
        sobj_foreach(sets[0], algebra_visit, a);
    } else if (a->op == SOP_UNION) {
        a->nsets = 0;
        for (int i = 0; i < n; i++) {
            if (sets[i] != NULL) {
                sobj_foreach(sets[i], algebra_visit, a);
            }
        }
    } else if (sets[0] != NULL) {
        a->sets = sets + 1;
        a->nsets = n - 1;
        sobj_foreach(sets[0], algebra_visit, a);
    }
}

static void
algebra_cmd(struct conn *c, struct rv_str *keys, int n, struct rv_str *dstkey, enum set_op op)
{
    struct sobj_lim lim;
    struct sobj *stack[16], **sets = n <= 16 ? stack : rv_malloc((size_t)n * sizeof(*sets));
    struct sobj bstack[16], *bufs = n <= 16 ? bstack : rv_malloc((size_t)n * sizeof(*bufs));
    struct algebra a = { .op = op, .lim = &lim };

    set_lim(c, &lim);
    if (!set_gather(c, keys, n, dstkey == NULL, sets, bufs)) {
        goto out;
    }
    algebra_run(sets, n, &a);
    if (dstkey != NULL) {
        size_t card = a.res != NULL ? sobj_len(a.res) : 0;
        static const char *const stored[] = { "sinterstore", "sunionstore", "sdiffstore" };
        if (a.res != NULL) {
            sobj_store(a.res, c->env->ks, dstkey->p, dstkey->len);
            ksn_event(c->env, KSN_SET, stored[op], *dstkey);
        } else if (ks_delete(c->env->ks, dstkey->p, dstkey->len)) {
            ksn_event(c->env, KSN_GENERIC, "del", *dstkey);
        } else {
            effect_none(c); /* nothing stored, nothing deleted */
        }
        reply_int(c, (int64_t)card);
    } else if (a.res == NULL) {
        reply_set(c, 0);
    } else {
        reply_set(c, sobj_len(a.res));
        sobj_foreach(a.res, out_member, c);
        sobj_free(a.res);
    }
out:
    if (sets != stack) {
        rv_free(sets);
        rv_free(bufs);
    }
}

CMD_HANDLER(sinter)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_INTER);
}

CMD_HANDLER(sunion)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_UNION);
}

CMD_HANDLER(sdiff)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_DIFF);
}

CMD_HANDLER(sinterstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_INTER);
}

CMD_HANDLER(sunionstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_UNION);
}

CMD_HANDLER(sdiffstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_DIFF);
}

int
set_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    int n = 0;
    if (argc < 3 || !cmd_arg_int(argv[1], &nk) || nk < 1 || nk > argc - 2) {
        return 0;
    }
    for (int64_t i = 0; i < nk && n < max; i++) {
        out[n++] = 2 + (int)i;
    }
    return n;
}

CMD_HANDLER(sintercard)
{
    struct sobj_lim lim;
    struct sobj *stack[16], **sets, bstack[16], *bufs;
    struct algebra a = { .op = SOP_INTER, .lim = &lim, .count_only = true };
    int64_t nk, limit = 0;

    if (!cmd_arg_int(argv[1], &nk) || nk < 1) {
        reply_errf(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (nk > argc - 2) {
        reply_errf(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    for (int i = 2 + (int)nk; i < argc; i += 2) {
        if (i + 1 < argc && cmd_arg_is(argv[i], "limit")) {
            if (!cmd_arg_int(argv[i + 1], &limit) || limit < 0) {
                reply_errf(c, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    set_lim(c, &lim);
    sets = nk <= 16 ? stack : rv_malloc((size_t)nk * sizeof(*sets));
    bufs = nk <= 16 ? bstack : rv_malloc((size_t)nk * sizeof(*bufs));
    if (set_gather(c, argv + 2, (int)nk, true, sets, bufs)) {
        a.limit = (size_t)limit;
        algebra_run(sets, (int)nk, &a);
        reply_int(c, (int64_t)a.count);
    }
    if (sets != stack) {
        rv_free(sets);
        rv_free(bufs);
    }
}

/* ------------------------------------------------------------------ SSCAN */

struct sscan_ctx {
    struct conn *c;
    const char *pat;
    size_t plen;
    struct rv_str *v;
    size_t n, cap;
};

static void
sscan_collect(void *arg, struct dict_entry *e)
{
    struct sscan_ctx *s = arg;
    struct rv_str k = dict_key(e);
    if (s->pat != NULL && !glob_match(s->pat, s->plen, k.p, k.len, false)) {
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = k;
}

struct sscan_small {
    struct conn *c;
    const char *pat;
    size_t plen;
    size_t n;
};

static void
sscan_small_visit(void *arg, struct rv_str m)
{
    struct sscan_small *s = arg;
    if (s->pat != NULL && !glob_match(s->pat, s->plen, m.p, m.len, false)) {
        return;
    }
    reply_bulk(s->c, m.p, m.len);
    s->n++;
}

CMD_HANDLER(sscan)
{
    struct sscan_ctx s = { .c = c };
    struct sobj sb, *set;
    uint64_t cursor, next;
    int64_t count = 10;
    bool err;

    if (!cmd_arg_cursor(argv[2], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    if ((set = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            reply_array(c, 2);
            reply_bulk(c, "0", 1);
            reply_array(c, 0);
        }
        return;
    }
    struct scan_opts o;
    if (!cmd_parse_scan_opts(c, argc, argv, 3, 0, &o)) {
        return;
    }
    s.pat = o.match.p;
    s.plen = o.match.len;
    count = o.count;
    if (set->enc != SENC_HT) {
        /* Small encodings are returned whole in one call, cursor 0 (as Redis). */
        struct sscan_small sm = { c, s.pat, s.plen, 0 };
        size_t hd;
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        hd = reply_defer(c);
        sobj_foreach(set, sscan_small_visit, &sm);
        reply_defer_array(c, hd, sm.n);
        return;
    }
    next = dict_scan(set->b->d, cursor, (size_t)count, sscan_collect, &s);
    reply_array(c, 2);
    reply_bulk_u64(c, next);
    reply_array(c, s.n);
    for (size_t i = 0; i < s.n; i++) {
        reply_bulk(c, s.v[i].p, s.v[i].len);
    }
    rv_free(s.v);
}
