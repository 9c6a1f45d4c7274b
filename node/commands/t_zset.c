/* node/commands/t_zset.c: sorted-set commands (Redis 7 semantics, RESP2 and RESP3).
 *
 * Storage, its obj_ops and the range predicates live in node/types/zset_enc.c. Ranges of every kind (rank, score, lex) are
 * turned into a first rank and a count, then walked with an iterator, so a
 * range costs O(log n + m) on the tree form. Keyspace entries are views:
 * handlers look keys up again after any keyspace write. */
#include "node/commands/t_zset.h"

#include "base/clock.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/types/obj.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/core/effect.h"
#include "node/features/ksnotify.h"
#include "node/types/zset_enc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ERR_NAN "ERR resulting score is not a number (NaN)"
#define ERR_MINMAX_FLOAT "ERR min or max is not a float"
#define ERR_MINMAX_LEX "ERR min or max not valid string range item"
#define ERR_POSITIVE "ERR value is out of range, must be positive"
/* Scratch for NUL-terminated copies of numeric arguments. */
#define NUM_BUF 512

/* ------------------------------------------------------------------ helpers */

static struct ks_entry *
lookup_read(struct conn *c, struct rv_str k)
{
    struct ks_entry *e = ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
    struct shard_stats *st = &c->env->stats;
    if (e != NULL) {
        st->keyspace_hits++;
    } else {
        st->keyspace_misses++;
        ksn_event(c->env, KSN_KEY_MISS, "keymiss", k);
    }
    return e;
}

static struct ks_entry *
lookup_write(struct conn *c, struct rv_str k)
{
    return ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
}

/* The zset at e, bound to *z; NULL with *wrong set when e holds another type. */
static struct zset *
as_zset(struct conn *c, struct ks_entry *e, bool *wrong, struct zset *z)
{
    *wrong = false;
    if (e == NULL) {
        return NULL;
    }
    if (ks_entry_type(e) != KS_ZSET) {
        *wrong = true;
        return NULL;
    }
    zset_bind(z, c->env->ks, e);
    return z;
}

static struct zset_lim
lim_of(struct conn *c)
{
    const struct cfg *cf = c->env->cfg;
    struct zset_lim l = { cf->enc.zset_max_listpack_entries, cf->enc.zset_max_listpack_value };
    return l;
}

static void
del_if_empty(struct conn *c, struct rv_str key, struct zset *z)
{
    if (zset_len(z) == 0) {
        ks_delete(c->env->ks, key.p, key.len);
        ksn_event(c->env, KSN_GENERIC, "del", key);
    }
}

/* Redis's float argument: strtod over the whole string, no leading space,
 * no overflow, no NaN. */
static bool
parse_score(struct rv_str a, double *out)
{
    char buf[NUM_BUF];
    char *end;
    if (a.len == 0 || a.len >= sizeof(buf) || isspace((unsigned char)a.p[0])) {
        return false;
    }
    memcpy(buf, a.p, a.len);
    buf[a.len] = '\0';
    errno = 0;
    double v = strtod(buf, &end);
    if ((size_t)(end - buf) != a.len || isnan(v) ||
        (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0))) {
        return false;
    }
    *out = v;
    return true;
}

/* Range bound: strtod up to the end, as Redis parses ZRANGEBYSCORE bounds
 * ("(" alone reads as an exclusive 0). */
static bool
parse_bound(struct rv_str a, double *out, bool *ex)
{
    char buf[NUM_BUF];
    char *end;
    size_t skip = a.len > 0 && a.p[0] == '(';
    if (a.len >= sizeof(buf) || memchr(a.p, '\0', a.len) != NULL) {
        return false;
    }
    *ex = skip;
    memcpy(buf, a.p + skip, a.len - skip);
    buf[a.len - skip] = '\0';
    *out = strtod(buf, &end);
    return *end == '\0' && !isnan(*out);
}

static size_t
fmt_score(char *out, size_t cap, double v)
{
    if (isinf(v)) {
        return (size_t)snprintf(out, cap, "%s", v > 0 ? "inf" : "-inf");
    }
    int n = snprintf(out, cap, "%.17g", v);
    return n < 0 ? 0 : (size_t)n;
}

static void
reply_elem(struct conn *c, struct rv_str m, double s, bool withscores)
{
    if (withscores && c->proto >= 3) {
        reply_array(c, 2);
    }
    reply_bulk(c, m.p, m.len);
    if (withscores) {
        reply_double(c, s);
    }
}

static void
reply_elems_header(struct conn *c, size_t n, bool withscores)
{
    reply_array(c, (withscores && c->proto < 3) ? n * 2 : n);
}

static uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void
store_zset(struct conn *c, struct rv_str dst, struct zset *z, const char *event)
{
    size_t n = zset_len(z);
    if (n == 0) {
        zset_destroy(z);
        if (ks_delete(c->env->ks, dst.p, dst.len)) {
            ksn_event(c->env, KSN_GENERIC, "del", dst);
        } else {
            effect_none(c); /* nothing stored, nothing deleted */
        }
    } else {
        zset_store(z, c->env->ks, dst.p, dst.len);
        ksn_event(c->env, KSN_ZSET, event, dst);
    }
    reply_int(c, (int64_t)n);
}

/* ------------------------------------------------------------------ ZADD, ZINCRBY */

enum { ZA_NX = 1, ZA_XX = 2, ZA_GT = 4, ZA_LT = 8, ZA_CH = 16, ZA_INCR = 32 };

/* ZADD's options from argv[first] and checks of the score/member pairs that
 * follow; false after replying an error. *at is the first pair's index and
 * *nel the number of pairs. */
static bool
zadd_parse(struct conn *c, int argc, struct rv_str *argv, int first, int *flagsp, int *at,
           int *nelp)
{
    int i = first, flags = *flagsp;
    bool opts = !(flags & ZA_INCR); /* ZINCRBY takes no options */
    for (; opts && i < argc; i++) {
        if (cmd_arg_is(argv[i], "nx")) flags |= ZA_NX;
        else if (cmd_arg_is(argv[i], "xx")) flags |= ZA_XX;
        else if (cmd_arg_is(argv[i], "gt")) flags |= ZA_GT;
        else if (cmd_arg_is(argv[i], "lt")) flags |= ZA_LT;
        else if (cmd_arg_is(argv[i], "ch")) flags |= ZA_CH;
        else if (cmd_arg_is(argv[i], "incr")) flags |= ZA_INCR;
        else break;
    }
    int nel = argc - i;
    if (nel == 0 || nel % 2) {
        reply_err(c, RV_ERR_SYNTAX);
        return false;
    }
    nel /= 2;
    if ((flags & ZA_NX) && (flags & ZA_XX)) {
        reply_errf(c, "ERR XX and NX options at the same time are not compatible");
        return false;
    }
    if (((flags & ZA_GT) && (flags & ZA_NX)) || ((flags & ZA_LT) && (flags & ZA_NX)) ||
        ((flags & ZA_GT) && (flags & ZA_LT))) {
        reply_errf(c, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return false;
    }
    if ((flags & ZA_INCR) && nel > 1) {
        reply_errf(c, "ERR INCR option supports a single increment-element pair");
        return false;
    }
    for (int j = 0; j < nel; j++) {
        double d;
        if (!parse_score(argv[i + 2 * j], &d)) {
            reply_err(c, RV_ERR_NOTFLOAT);
            return false;
        }
    }
    *flagsp = flags;
    *at = i;
    *nelp = nel;
    return true;
}

static void
zadd_generic(struct conn *c, int argc, struct rv_str *argv, int flags, int first)
{
    int i, nel;
    if (!zadd_parse(c, argc, argv, first, &flags, &i, &nel)) {
        return;
    }
    struct rv_str key = argv[1];
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_write(c, key), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    struct zset_lim lim = lim_of(c);
    bool fresh = false;
    int64_t added = 0, updated = 0, processed = 0;
    double score = 0;
    if (z == NULL && !(flags & ZA_XX)) {
        z = zset_create();
        fresh = true;
    }
    for (int j = 0; z != NULL && j < nel; j++) {
        struct rv_str m = argv[i + 2 * j + 1];
        double cur;
        parse_score(argv[i + 2 * j], &score);
        if (zset_score(z, m.p, m.len, &cur)) {
            if (flags & ZA_NX) {
                continue;
            }
            if (flags & ZA_INCR) {
                score += cur;
                if (isnan(score)) {
                    reply_errf(c, ERR_NAN);
                    goto out;
                }
            }
            if (((flags & ZA_LT) && score >= cur) || ((flags & ZA_GT) && score <= cur)) {
                continue;
            }
            processed++;
            if (score != cur) {
                zset_update(z, m.p, m.len, cur, score);
                updated++;
            }
        } else {
            if (flags & ZA_XX) {
                continue;
            }
            zset_insert(z, m.p, m.len, score, &lim);
            added++;
            processed++;
        }
    }
    if (flags & ZA_INCR) {
        if (processed) {
            reply_double(c, score);
        } else {
            reply_null(c);
        }
    } else {
        reply_int(c, (flags & ZA_CH) ? added + updated : added);
    }
out:
    if (fresh) {
        if (zset_len(z) > 0) {
            zset_store(z, c->env->ks, key.p, key.len);
        } else {
            zset_destroy(z);
        }
    }
    if (added + updated > 0) {
        ksn_event(c->env, KSN_ZSET, (flags & ZA_INCR) ? "zincr" : "zadd", key);
    } else {
        effect_none(c); /* (nothing to log or invalidate, as Redis) */
    }
}

CMD_HANDLER(zadd)
{
    zadd_generic(c, argc, argv, 0, 2);
}

CMD_HANDLER(zincrby)
{
    zadd_generic(c, argc, argv, ZA_INCR, 2);
}

/* ------------------------------------------------------------------ simple reads, ZREM */

CMD_HANDLER(zrem)
{
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_write(c, argv[1]), &wrong, &zb);
    int64_t n = 0;
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    for (int i = 2; z != NULL && i < argc; i++) {
        n += zset_delete(z, argv[i].p, argv[i].len);
        if (zset_len(z) == 0) {
            break;
        }
    }
    if (n > 0) {
        ksn_event(c->env, KSN_ZSET, "zrem", argv[1]);
    } else {
        effect_none(c);
    }
    if (z != NULL) {
        del_if_empty(c, argv[1], z);
    }
    reply_int(c, n);
}

CMD_HANDLER(zcard)
{
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    (void)argc;
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    reply_int(c, z ? (int64_t)zset_len(z) : 0);
}

CMD_HANDLER(zscore)
{
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    double s;
    (void)argc;
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
    } else if (z && zset_score(z, argv[2].p, argv[2].len, &s)) {
        reply_double(c, s);
    } else {
        reply_null(c);
    }
}

CMD_HANDLER(zmscore)
{
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        double s;
        if (z && zset_score(z, argv[i].p, argv[i].len, &s)) {
            reply_double(c, s);
        } else {
            reply_null(c);
        }
    }
}

static void
zrank_generic(struct conn *c, int argc, struct rv_str *argv, bool rev)
{
    if (argc > 4 || (argc == 4 && !cmd_arg_is(argv[3], "withscore"))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bool withscore = argc == 4;
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    double s;
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (z == NULL || !zset_score(z, argv[2].p, argv[2].len, &s)) {
        if (withscore) {
            reply_null_array(c);
        } else {
            reply_null(c);
        }
        return;
    }
    size_t r = zset_rank(z, argv[2].p, argv[2].len, s);
    if (rev) {
        r = zset_len(z) - 1 - r;
    }
    if (withscore) {
        reply_array(c, 2);
        reply_int(c, (int64_t)r);
        reply_double(c, s);
    } else {
        reply_int(c, (int64_t)r);
    }
}

CMD_HANDLER(zrank)
{
    zrank_generic(c, argc, argv, false);
}

CMD_HANDLER(zrevrank)
{
    zrank_generic(c, argc, argv, true);
}

/* ------------------------------------------------------------------ ranges */

static bool
parse_srange(struct rv_str min, struct rv_str max, struct zset_srange *r)
{
    return parse_bound(min, &r->min, &r->minex) && parse_bound(max, &r->max, &r->maxex);
}

static bool
parse_lbound(struct rv_str a, struct zset_lbound *b)
{
    b->inf = 0;
    b->ex = false;
    if (a.len == 1 && a.p[0] == '-') {
        b->inf = -1;
        return true;
    }
    if (a.len == 1 && a.p[0] == '+') {
        b->inf = 1;
        return true;
    }
    if (a.len >= 1 && (a.p[0] == '(' || a.p[0] == '[')) {
        b->ex = a.p[0] == '(';
        b->m.p = a.p + 1;
        b->m.len = a.len - 1;
        return true;
    }
    return false;
}

enum { RT_AUTO, RT_RANK, RT_SCORE, RT_LEX };

struct zrange_req {
    int type;
    bool rev;
    bool withscores;
    int64_t offset, limit;
    int64_t start, end;
    struct zset_srange sr;
    struct zset_lrange lr;
};

/* Ranks to emit: returns how many, from *first in the direction of q->rev. */
static size_t
zrange_select(const struct zset *z, const struct zrange_req *q, size_t *first)
{
    size_t len = zset_len(z), lo, hi;
    if (q->type == RT_RANK) {
        int64_t s = q->start, e = q->end, n = (int64_t)len;
        if (s < 0) s += n;
        if (e < 0) e += n;
        if (s < 0) s = 0;
        if (s > e || s >= n) {
            return 0;
        }
        if (e >= n) e = n - 1;
        *first = q->rev ? (size_t)(n - 1 - s) : (size_t)s;
        return (size_t)(e - s + 1);
    }
    if (q->type == RT_SCORE) {
        zset_srange_ranks(z, &q->sr, &lo, &hi);
    } else {
        zset_lrange_ranks(z, &q->lr, &lo, &hi);
    }
    size_t n = hi - lo;
    if (q->offset < 0 || (uint64_t)q->offset >= n) {
        return 0;
    }
    n -= (size_t)q->offset;
    if (q->limit >= 0 && (uint64_t)q->limit < n) {
        n = (size_t)q->limit;
    }
    *first = q->rev ? hi - 1 - (size_t)q->offset : lo + (size_t)q->offset;
    return n;
}

/* Options of the ZRANGE family from argv[from]; replies on error. */
static bool
zrange_parse(struct conn *c, int argc, struct rv_str *argv, int from, bool store,
             struct zrange_req *q, struct rv_str bmin, struct rv_str bmax)
{
    bool dir_fixed = q->rev || q->type != RT_AUTO;
    for (int j = from; j < argc; j++) {
        int left = argc - j - 1;
        if (!store && cmd_arg_is(argv[j], "withscores")) {
            q->withscores = true;
        } else if (cmd_arg_is(argv[j], "limit") && left >= 2) {
            if (!cmd_arg_int(argv[j + 1], &q->offset) || !cmd_arg_int(argv[j + 2], &q->limit)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            j += 2;
        } else if (!dir_fixed && cmd_arg_is(argv[j], "rev")) {
            q->rev = dir_fixed = true;
        } else if (q->type == RT_AUTO && cmd_arg_is(argv[j], "bylex")) {
            q->type = RT_LEX;
        } else if (q->type == RT_AUTO && cmd_arg_is(argv[j], "byscore")) {
            q->type = RT_SCORE;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    if (q->type == RT_AUTO) {
        q->type = RT_RANK;
    }
    if (q->limit != -1 && q->type == RT_RANK) {
        reply_errf(c, "ERR syntax error, LIMIT is only supported in combination with either "
                      "BYSCORE or BYLEX");
        return false;
    }
    if (q->withscores && q->type == RT_LEX) {
        reply_errf(c, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return false;
    }
    if (q->rev && q->type != RT_RANK) {
        struct rv_str t = bmin;
        bmin = bmax;
        bmax = t;
    }
    if (q->type == RT_RANK) {
        if (!cmd_arg_int(bmin, &q->start) || !cmd_arg_int(bmax, &q->end)) {
            reply_err(c, RV_ERR_NOTINT);
            return false;
        }
    } else if (q->type == RT_SCORE) {
        if (!parse_srange(bmin, bmax, &q->sr)) {
            reply_errf(c, ERR_MINMAX_FLOAT);
            return false;
        }
    } else if (!parse_lbound(bmin, &q->lr.min) || !parse_lbound(bmax, &q->lr.max)) {
        reply_errf(c, ERR_MINMAX_LEX);
        return false;
    }
    return true;
}

static void
zrange_generic(struct conn *c, int argc, struct rv_str *argv, int type, bool rev, bool store)
{
    struct zrange_req q = { .type = type, .rev = rev, .offset = 0, .limit = -1 };
    int k = store ? 2 : 1; /* source key index */
    if (!zrange_parse(c, argc, argv, k + 3, store, &q, argv[k + 1], argv[k + 2])) {
        return;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[k]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    size_t first = 0, n = z ? zrange_select(z, &q, &first) : 0;
    struct zset *dst = NULL;
    struct zset_lim lim = lim_of(c);
    if (store) {
        dst = zset_create();
    } else {
        reply_elems_header(c, n, q.withscores);
    }
    if (n > 0) {
        struct zset_it it;
        zset_it_init(&it, z, first);
        for (size_t i = 0; i < n; i++) {
            struct rv_str m;
            double s;
            if (i > 0) {
                if (q.rev) {
                    zset_it_prev(&it);
                } else {
                    zset_it_next(&it);
                }
            }
            zset_it_get(&it, &m, &s);
            if (store) {
                zset_insert(dst, m.p, m.len, s, &lim);
            } else {
                reply_elem(c, m, s, q.withscores);
            }
        }
        zset_it_done(&it);
    }
    if (store) {
        store_zset(c, argv[1], dst, "zrangestore");
    }
}

CMD_HANDLER(zrange)
{
    zrange_generic(c, argc, argv, RT_AUTO, false, false);
}

CMD_HANDLER(zrangestore)
{
    zrange_generic(c, argc, argv, RT_AUTO, false, true);
}

CMD_HANDLER(zrevrange)
{
    zrange_generic(c, argc, argv, RT_RANK, true, false);
}

CMD_HANDLER(zrangebyscore)
{
    zrange_generic(c, argc, argv, RT_SCORE, false, false);
}

CMD_HANDLER(zrevrangebyscore)
{
    zrange_generic(c, argc, argv, RT_SCORE, true, false);
}

CMD_HANDLER(zrangebylex)
{
    zrange_generic(c, argc, argv, RT_LEX, false, false);
}

CMD_HANDLER(zrevrangebylex)
{
    zrange_generic(c, argc, argv, RT_LEX, true, false);
}

CMD_HANDLER(zcount)
{
    struct zset_srange r;
    size_t lo = 0, hi = 0;
    (void)argc;
    if (!parse_srange(argv[2], argv[3], &r)) {
        reply_errf(c, ERR_MINMAX_FLOAT);
        return;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (z) {
        zset_srange_ranks(z, &r, &lo, &hi);
    }
    reply_int(c, (int64_t)(hi - lo));
}

CMD_HANDLER(zlexcount)
{
    struct zset_lrange r;
    size_t lo = 0, hi = 0;
    (void)argc;
    if (!parse_lbound(argv[2], &r.min) || !parse_lbound(argv[3], &r.max)) {
        reply_errf(c, ERR_MINMAX_LEX);
        return;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (z) {
        zset_lrange_ranks(z, &r, &lo, &hi);
    }
    reply_int(c, (int64_t)(hi - lo));
}

/* ------------------------------------------------------------------ ZREMRANGEBY* */

static void
zremrange_generic(struct conn *c, struct rv_str *argv, int type)
{
    int64_t start = 0, end = 0;
    struct zset_srange sr;
    struct zset_lrange lr;
    if (type == RT_RANK) {
        if (!cmd_arg_int(argv[2], &start) || !cmd_arg_int(argv[3], &end)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
    } else if (type == RT_SCORE) {
        if (!parse_srange(argv[2], argv[3], &sr)) {
            reply_errf(c, ERR_MINMAX_FLOAT);
            return;
        }
    } else if (!parse_lbound(argv[2], &lr.min) || !parse_lbound(argv[3], &lr.max)) {
        reply_errf(c, ERR_MINMAX_LEX);
        return;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_write(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (z == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    size_t lo, hi;
    if (type == RT_RANK) {
        int64_t n = (int64_t)zset_len(z);
        if (start < 0) start += n;
        if (end < 0) end += n;
        if (start < 0) start = 0;
        if (start > end || start >= n) {
            effect_none(c);
            reply_int(c, 0);
            return;
        }
        if (end >= n) end = n - 1;
        lo = (size_t)start;
        hi = (size_t)end + 1;
    } else if (type == RT_SCORE) {
        zset_srange_ranks(z, &sr, &lo, &hi);
    } else {
        zset_lrange_ranks(z, &lr, &lo, &hi);
    }
    if (hi > lo) {
        zset_delete_range(z, lo, hi - 1);
        static const char *const ev[] = { [RT_RANK] = "zremrangebyrank",
                                          [RT_SCORE] = "zremrangebyscore",
                                          [RT_LEX] = "zremrangebylex" };
        ksn_event(c->env, KSN_ZSET, ev[type], argv[1]);
        del_if_empty(c, argv[1], z);
    } else {
        effect_none(c);
    }
    reply_int(c, (int64_t)(hi - lo));
}

CMD_HANDLER(zremrangebyrank)
{
    (void)argc;
    zremrange_generic(c, argv, RT_RANK);
}

CMD_HANDLER(zremrangebyscore)
{
    (void)argc;
    zremrange_generic(c, argv, RT_SCORE);
}

CMD_HANDLER(zremrangebylex)
{
    (void)argc;
    zremrange_generic(c, argv, RT_LEX);
}

/* ------------------------------------------------------------------ pops */

size_t
zset_pop_reply(struct conn *c, struct rv_str key, bool max, size_t count, enum zset_pop_form form)
{
    struct ks_entry *e = ks_peek(c->env->ks, key.p, key.len);
    struct zset zb, *z = &zb;
    zset_bind(z, c->env->ks, e);
    size_t len = zset_len(z);
    size_t n = count < len ? count : len;
    if (form == ZSET_POP_KEYED) {
        n = n ? 1 : 0;
        reply_array(c, 3);
        reply_bulk(c, key.p, key.len);
    } else {
        reply_array(c, form == ZSET_POP_FLAT ? n * 2 : n);
    }
    for (size_t i = 0; i < n; i++) {
        struct zset_it it;
        struct rv_str m;
        double s;
        zset_it_init(&it, z, max ? zset_len(z) - 1 : 0);
        zset_it_get(&it, &m, &s);
        if (form == ZSET_POP_PAIRS) {
            reply_array(c, 2);
        }
        reply_bulk(c, m.p, m.len);
        reply_double(c, s);
        zset_it_done(&it);
        zset_delete(z, m.p, m.len);
    }
    if (n > 0) {
        ksn_event(c->env, KSN_ZSET, max ? "zpopmax" : "zpopmin", key);
    }
    del_if_empty(c, key, z);
    return n;
}

static void
zpop_generic(struct conn *c, int argc, struct rv_str *argv, bool max)
{
    int64_t count = 1;
    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 3 && (!cmd_arg_int(argv[2], &count) || count < 0)) {
        reply_errf(c, ERR_POSITIVE);
        return;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_write(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (z == NULL || count == 0) {
        reply_array(c, 0);
        return;
    }
    zset_pop_reply(c, argv[1], max, (size_t)count,
                   (argc == 3 && c->proto >= 3) ? ZSET_POP_PAIRS : ZSET_POP_FLAT);
}

CMD_HANDLER(zpopmin)
{
    zpop_generic(c, argc, argv, false);
}

CMD_HANDLER(zpopmax)
{
    zpop_generic(c, argc, argv, true);
}

CMD_HANDLER(zmpop)
{
    int64_t count;
    int nk, which;
    if (!cmd_parse_mpop(c, argc, argv, 1, "min", "max", &nk, &which, &count)) {
        return;
    }
    int where = 2 + nk;
    bool max = which == 1;
    for (int k = 2; k < where; k++) {
        bool wrong;
        struct zset zb, *z = as_zset(c, lookup_write(c, argv[k]), &wrong, &zb);
        if (wrong) {
            reply_err(c, RV_ERR_WRONGTYPE);
            return;
        }
        if (z != NULL) {
            /* logged, watched and invalidated as the pop it was: its key only (as Redis) */
            effect_redo(c, max ? "ZPOPMAX" : "ZPOPMIN", argv[k]);
            effect_arg_i64(c, count);
            reply_array(c, 2);
            reply_bulk(c, argv[k].p, argv[k].len);
            zset_pop_reply(c, argv[k], max, (size_t)count, ZSET_POP_PAIRS);
            return;
        }
    }
    effect_none(c);
    reply_null_array(c);
}

/* ------------------------------------------------------------------ set algebra */

enum { OP_UNION, OP_INTER, OP_DIFF };
enum { AGG_SUM, AGG_MIN, AGG_MAX };

/* One input: a zset, or NULL for a missing key; w is its weight. */
struct zsrc {
    struct zset *z;
    double w;
};

static double
agg(int how, double a, double b)
{
    if (how == AGG_SUM) {
        double r = a + b;
        return isnan(r) ? 0.0 : r; /* inf + -inf */
    }
    if (how == AGG_MIN) {
        return b < a ? b : a;
    }
    return b > a ? b : a;
}

static double
weighted(double s, double w)
{
    double r = s * w;
    return isnan(r) ? 0.0 : r; /* inf * 0 */
}

static int
cmp_src_len(const void *a, const void *b)
{
    const struct zsrc *x = a, *y = b;
    size_t lx = x->z ? zset_len(x->z) : 0, ly = y->z ? zset_len(y->z) : 0;
    return lx < ly ? -1 : lx > ly;
}

struct union_build {
    struct zset *z;
    struct zset_lim lim;
};

static void
union_put(void *arg, struct dict_entry *e)
{
    struct union_build *b = arg;
    struct rv_str k = dict_key(e);
    zset_insert(b->z, k.p, k.len, dict_val_double(e), &b->lim);
}

/* The operation's result as a new zset. */
static struct zset *
setop_compute(struct conn *c, struct zsrc *src, size_t ns, int op, int how)
{
    struct zset_lim lim = lim_of(c);
    struct zset *out = zset_create();
    struct zset_it it;

    if (op == OP_INTER || op == OP_DIFF) {
        if (op == OP_INTER) {
            qsort(src, ns, sizeof(src[0]), cmp_src_len); /* walk the smallest */
        }
        if (src[0].z == NULL || zset_len(src[0].z) == 0) {
            return out;
        }
        zset_it_init(&it, src[0].z, 0);
        do {
            struct rv_str m;
            double s, o;
            size_t j;
            zset_it_get(&it, &m, &s);
            if (op == OP_INTER) {
                s = weighted(s, src[0].w);
                for (j = 1; j < ns; j++) {
                    if (src[j].z == NULL || !zset_score(src[j].z, m.p, m.len, &o)) {
                        break;
                    }
                    s = agg(how, s, weighted(o, src[j].w));
                }
            } else {
                for (j = 1; j < ns; j++) {
                    if (src[j].z != NULL && zset_score(src[j].z, m.p, m.len, &o)) {
                        break;
                    }
                }
            }
            if (j == ns) {
                zset_insert(out, m.p, m.len, s, &lim);
            }
        } while (zset_it_next(&it));
        zset_it_done(&it);
        return out;
    }
    /* Union: accumulate in a dict, then build the sorted result. */
    struct dict *acc = dict_create();
    size_t maxlen = 0;
    for (size_t j = 0; j < ns; j++) {
        if (src[j].z == NULL || zset_len(src[j].z) == 0) {
            continue;
        }
        zset_it_init(&it, src[j].z, 0);
        do {
            struct rv_str m;
            double s;
            bool created;
            zset_it_get(&it, &m, &s);
            s = weighted(s, src[j].w);
            struct dict_entry *e = dict_add(acc, m.p, m.len, &created);
            dict_set_val_double(e, created ? s : agg(how, dict_val_double(e), s));
            if (m.len > maxlen) {
                maxlen = m.len;
            }
        } while (zset_it_next(&it));
        zset_it_done(&it);
    }
    if ((int64_t)dict_size(acc) > lim.entries || (int64_t)maxlen > lim.value) {
        zset_convert(out);
    }
    struct union_build b = { out, lim };
    dict_foreach(acc, union_put, &b);
    dict_destroy(acc, NULL);
    return out;
}

/* Parse "numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]",
 * run the operation and reply (or store at argv[1]). */
static void
setop_generic(struct conn *c, int argc, struct rv_str *argv, int nkidx, bool store, int op,
              const char *name)
{
    int64_t nk;
    if (!cmd_arg_int(argv[nkidx], &nk)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (nk < 1) {
        reply_errf(c, "ERR at least 1 input key is needed for '%s' command", name);
        return;
    }
    if (nk > argc - nkidx - 1) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    size_t ns = (size_t)nk;
    struct zsrc stack[16];
    struct zsrc *src = ns <= 16 ? stack : rv_malloc(ns * sizeof(*src));
    struct zset hstack[16];
    struct zset *hb = ns <= 16 ? hstack : rv_malloc(ns * sizeof(*hb));
    int how = AGG_SUM;
    bool withscores = false;
    for (size_t j = 0; j < ns; j++) {
        src[j].w = 1.0;
        src[j].z = NULL;
    }
    for (int j = nkidx + 1 + (int)ns; j < argc; j++) {
        int left = argc - j - 1;
        if (op != OP_DIFF && cmd_arg_is(argv[j], "weights") && left >= (int)ns) {
            for (size_t i = 0; i < ns; i++) {
                if (!parse_score(argv[j + 1 + (int)i], &src[i].w)) {
                    reply_errf(c, "ERR weight value is not a float");
                    goto done;
                }
            }
            j += (int)ns;
        } else if (op != OP_DIFF && cmd_arg_is(argv[j], "aggregate") && left >= 1) {
            if (cmd_arg_is(argv[j + 1], "sum")) {
                how = AGG_SUM;
            } else if (cmd_arg_is(argv[j + 1], "min")) {
                how = AGG_MIN;
            } else if (cmd_arg_is(argv[j + 1], "max")) {
                how = AGG_MAX;
            } else {
                reply_err(c, RV_ERR_SYNTAX);
                goto done;
            }
            j++;
        } else if (!store && cmd_arg_is(argv[j], "withscores")) {
            withscores = true;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            goto done;
        }
    }
    for (size_t j = 0; j < ns; j++) {
        struct rv_str k = argv[nkidx + 1 + (int)j];
        struct ks_entry *e = store ? lookup_write(c, k) : lookup_read(c, k);
        if (e == NULL) {
            continue;
        }
        /* TODO(set type): accept plain sets as inputs (score 1) once t_set.c
         * exposes member iteration; until then they answer WRONGTYPE. */
        if (ks_entry_type(e) != KS_ZSET) {
            reply_err(c, RV_ERR_WRONGTYPE);
            goto done;
        }
        zset_bind(&hb[j], c->env->ks, e);
        src[j].z = &hb[j];
    }
    struct zset *out = setop_compute(c, src, ns, op, how);
    if (store) {
        store_zset(c, argv[1], out, name);
    } else {
        size_t n = zset_len(out);
        reply_elems_header(c, n, withscores);
        if (n > 0) {
            struct zset_it it;
            zset_it_init(&it, out, 0);
            do {
                struct rv_str m;
                double s;
                zset_it_get(&it, &m, &s);
                reply_elem(c, m, s, withscores);
            } while (zset_it_next(&it));
            zset_it_done(&it);
        }
        zset_destroy(out);
    }
done:
    if (src != stack) {
        rv_free(src);
        rv_free(hb);
    }
}

CMD_HANDLER(zunion)
{
    setop_generic(c, argc, argv, 1, false, OP_UNION, "zunion");
}

CMD_HANDLER(zinter)
{
    setop_generic(c, argc, argv, 1, false, OP_INTER, "zinter");
}

CMD_HANDLER(zdiff)
{
    setop_generic(c, argc, argv, 1, false, OP_DIFF, "zdiff");
}

CMD_HANDLER(zunionstore)
{
    setop_generic(c, argc, argv, 2, true, OP_UNION, "zunionstore");
}

CMD_HANDLER(zinterstore)
{
    setop_generic(c, argc, argv, 2, true, OP_INTER, "zinterstore");
}

CMD_HANDLER(zdiffstore)
{
    setop_generic(c, argc, argv, 2, true, OP_DIFF, "zdiffstore");
}

CMD_HANDLER(zintercard)
{
    int64_t nk, limit = 0;
    if (!cmd_arg_int(argv[1], &nk)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (nk < 1) {
        reply_errf(c, "ERR at least 1 input key is needed for 'zintercard' command");
        return;
    }
    if (nk > argc - 2) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int j = 2 + (int)nk; j < argc; j++) {
        if (cmd_arg_is(argv[j], "limit") && j + 1 < argc) {
            if (!cmd_arg_int(argv[j + 1], &limit)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (limit < 0) {
                reply_errf(c, "ERR LIMIT can't be negative");
                return;
            }
            j++;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    size_t ns = (size_t)nk;
    struct zsrc stack[16];
    struct zsrc *src = ns <= 16 ? stack : rv_malloc(ns * sizeof(*src));
    struct zset hstack[16];
    struct zset *hb = ns <= 16 ? hstack : rv_malloc(ns * sizeof(*hb));
    bool missing = false;
    int64_t n = 0;
    for (size_t j = 0; j < ns; j++) {
        struct ks_entry *e = lookup_read(c, argv[2 + j]);
        src[j].z = NULL;
        src[j].w = 1;
        if (e == NULL) {
            missing = true;
            continue;
        }
        if (ks_entry_type(e) != KS_ZSET) { /* TODO(set type): sets as inputs */
            reply_err(c, RV_ERR_WRONGTYPE);
            goto done;
        }
        zset_bind(&hb[j], c->env->ks, e);
        src[j].z = &hb[j];
    }
    if (!missing) {
        qsort(src, ns, sizeof(src[0]), cmp_src_len);
        struct zset_it it;
        zset_it_init(&it, src[0].z, 0);
        do {
            struct rv_str m;
            double s;
            size_t j = 1;
            zset_it_get(&it, &m, &s);
            while (j < ns && zset_score(src[j].z, m.p, m.len, &s)) {
                j++;
            }
            if (j == ns && ++n == limit) {
                break;
            }
        } while (zset_it_next(&it));
        zset_it_done(&it);
    }
    reply_int(c, n);
done:
    if (src != stack) {
        rv_free(src);
        rv_free(hb);
    }
}

/* ------------------------------------------------------------------ ZRANDMEMBER */

static void
reply_rank(struct conn *c, const struct zset *z, size_t rank, bool withscores)
{
    struct zset_it it;
    struct rv_str m;
    double s;
    zset_it_init(&it, z, rank);
    zset_it_get(&it, &m, &s);
    reply_elem(c, m, s, withscores);
    zset_it_done(&it);
}

static void
reply_all(struct conn *c, const struct zset *z, bool withscores)
{
    struct zset_it it;
    reply_elems_header(c, zset_len(z), withscores);
    zset_it_init(&it, z, 0);
    do {
        struct rv_str m;
        double s;
        zset_it_get(&it, &m, &s);
        reply_elem(c, m, s, withscores);
    } while (zset_it_next(&it));
    zset_it_done(&it);
}

CMD_HANDLER(zrandmember)
{
    int64_t count = 0;
    uint64_t rnd = mix64(clock_mono_us() ^ (c->env->stats.commands << 24) ^ c->id);

    if (argc > 4 || (argc == 4 && !cmd_arg_is(argv[3], "withscores"))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bool withscores = argc == 4;
    if (argc >= 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count == INT64_MIN ||
            (withscores && (count < -INT64_MAX / 2 || count > INT64_MAX / 2))) {
            reply_errf(c, "ERR value is out of range");
            return;
        }
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (argc == 2) {
        if (z == NULL) {
            reply_null(c);
        } else {
            struct rv_str m;
            double s;
            zset_random(z, rnd, &m, &s);
            reply_bulk(c, m.p, m.len);
        }
        return;
    }
    size_t len = z ? zset_len(z) : 0;
    if (len == 0 || count == 0) {
        reply_array(c, 0);
        return;
    }
    if (count < 0) { /* repeats allowed */
        size_t n = (size_t)(-count);
        reply_elems_header(c, n, withscores);
        for (size_t i = 0; i < n; i++) {
            rnd = mix64(rnd);
            reply_rank(c, z, (size_t)(rnd % len), withscores);
        }
        return;
    }
    size_t n = (size_t)count;
    if (n >= len) {
        reply_all(c, z, withscores);
        return;
    }
    /* Distinct ranks: a partial Fisher-Yates shuffle when n is a large share
     * of the set, else rejection sampling through a dict of chosen ranks. */
    reply_elems_header(c, n, withscores);
    if (n * 3 > len) {
        uint32_t *r = rv_malloc(len * sizeof(*r));
        for (size_t i = 0; i < len; i++) {
            r[i] = (uint32_t)i;
        }
        for (size_t i = 0; i < n; i++) {
            rnd = mix64(rnd);
            size_t j = i + (size_t)(rnd % (len - i));
            uint32_t t = r[i];
            r[i] = r[j];
            r[j] = t;
            reply_rank(c, z, r[i], withscores);
        }
        rv_free(r);
        return;
    }
    struct dict *seen = dict_create_kind(DICT_KEYONLY);
    for (size_t i = 0; i < n;) {
        bool created;
        rnd = mix64(rnd);
        uint64_t rank = rnd % len;
        dict_add(seen, (const char *)&rank, sizeof(rank), &created);
        if (created) {
            reply_rank(c, z, (size_t)rank, withscores);
            i++;
        }
    }
    dict_destroy(seen, NULL);
}

/* ------------------------------------------------------------------ ZSCAN */

struct zscan_acc {
    struct rv_str *m;
    double *s;
    size_t n, cap;
    struct rv_str pat;
    bool match;
};

static void
zscan_add(void *arg, struct rv_str m, double s)
{
    struct zscan_acc *a = arg;
    if (a->match && !glob_match(a->pat.p, a->pat.len, m.p, m.len, false)) {
        return;
    }
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->m = rv_realloc(a->m, a->cap * sizeof(*a->m));
        a->s = rv_realloc(a->s, a->cap * sizeof(*a->s));
    }
    a->m[a->n] = m;
    a->s[a->n] = s;
    a->n++;
}

CMD_HANDLER(zscan)
{
    uint64_t cursor;
    int64_t count = 10;
    struct zscan_acc a = { 0 };
    if (!cmd_arg_cursor(argv[2], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    struct scan_opts o;
    if (!cmd_parse_scan_opts(c, argc, argv, 3, 0, &o)) {
        return;
    }
    count = o.count;
    if (o.match.p != NULL) {
        a.pat = o.match;
        a.match = true;
    }
    bool wrong;
    struct zset zb, *z = as_zset(c, lookup_read(c, argv[1]), &wrong, &zb);
    if (wrong) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    uint64_t next = 0;
    if (z != NULL && zset_is_packed(z)) {
        /* Packed sets are returned whole, as Redis does for listpacks. */
        if (zset_len(z) > 0) {
            struct zset_it it;
            zset_it_init(&it, z, 0);
            do {
                struct rv_str m;
                double s;
                zset_it_get(&it, &m, &s);
                zscan_add(&a, m, s);
            } while (zset_it_next(&it));
            zset_it_done(&it);
        }
    } else if (z != NULL) {
        next = zset_scan(z, cursor, (size_t)count, zscan_add, &a);
    }
    char cur[24];
    reply_array(c, 2);
    reply_bulk(c, cur, (size_t)snprintf(cur, sizeof(cur), "%llu", (unsigned long long)next));
    reply_array(c, a.n * 2);
    for (size_t i = 0; i < a.n; i++) {
        char sb[64];
        reply_bulk(c, a.m[i].p, a.m[i].len);
        reply_bulk(c, sb, fmt_score(sb, sizeof(sb), a.s[i]));
    }
    rv_free(a.m);
    rv_free(a.s);
}

/* ------------------------------------------------------------------ key positions */

int
zset_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    int n = 0;
    if (argc < 3 || !cmd_arg_int(argv[1], &nk) || nk < 1 || nk > argc - 2) {
        return 0;
    }
    for (int i = 0; i < nk && n < max; i++) {
        out[n++] = 2 + i;
    }
    return n;
}

int
zset_getkeys_store(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    int n = 0;
    if (argc < 4 || max < 1 || !cmd_arg_int(argv[2], &nk) || nk < 1 || nk > argc - 3) {
        return 0;
    }
    out[n++] = 1;
    for (int i = 0; i < nk && n < max; i++) {
        out[n++] = 3 + i;
    }
    return n;
}
