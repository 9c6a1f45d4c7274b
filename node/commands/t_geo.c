/* node/commands/t_geo.c: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH[STORE] and
 * GEORADIUS[BYMEMBER][_RO] on top of the sorted-set storage (zset_enc.h) and
 * the geohash math and search of node/types/geo.c. Without ASC/DESC the
 * results come in score order. */
#include "node/commands/t_geo.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/types/zset_enc.h"
#include "proto/resp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_BUF 256

#define ERR_PAIR "ERR invalid longitude,latitude pair %f,%f"
#define ERR_UNIT "ERR unsupported unit provided. please use M, KM, FT, MI"
#define ERR_MEMBER "ERR could not decode requested zset member"

/* ------------------------------------------------------------------ argument helpers */

static bool
arg_double(struct rv_str a, double *out)
{
    long double v;
    if (!cmd_arg_double(a, &v) || isinf(v)) {
        return false;
    }
    *out = (double)v;
    return true;
}

/* Metres per unit; 0 when a is not a unit. */
static double
unit_of(struct rv_str a)
{
    if (cmd_arg_is(a, "m")) return 1;
    if (cmd_arg_is(a, "km")) return 1000;
    if (cmd_arg_is(a, "ft")) return 0.3048;
    if (cmd_arg_is(a, "mi")) return 1609.34;
    return 0;
}

/* Parse lon lat at argv[i]; replies and returns false on error. */
static bool
parse_lonlat(struct conn *c, struct rv_str *argv, int i, double *lon, double *lat)
{
    if (!arg_double(argv[i], lon) || !arg_double(argv[i + 1], lat)) {
        reply_err(c, RV_ERR_NOTFLOAT);
        return false;
    }
    if (!geo_valid(*lon, *lat)) {
        reply_errf(c, ERR_PAIR, *lon, *lat);
        return false;
    }
    return true;
}

static void
reply_dist(struct conn *c, double d)
{
    char buf[NUM_BUF];
    int n = snprintf(buf, sizeof(buf), "%.4f", d);
    reply_bulk(c, buf, n < 0 ? 0 : (size_t)n);
}

/* A coordinate as Redis writes it: "%.17Lf" trimmed, a bulk string in RESP2
 * and a double in RESP3. */
static void
reply_human(struct conn *c, double v)
{
    char buf[RESP_LD_MAX];
    if (c->proto < 3) {
        reply_bulk_ldouble(c, v);
        return;
    }
    size_t n = resp_fmt_ldouble(buf, sizeof(buf), v);
    buf_putc(&c->wbuf, ',');
    buf_append(&c->wbuf, buf, n);
    buf_append(&c->wbuf, "\r\n", 2);
}

static void
reply_coord(struct conn *c, double lon, double lat)
{
    reply_array(c, 2);
    reply_human(c, lon);
    reply_human(c, lat);
}

/* Lookup of a geo key: NULL when missing; *wrong set (and replied) when not a zset. */
static struct zset *
geo_lookup(struct conn *c, struct rv_str key, bool *wrong, struct zset *z)
{
    struct ks_entry *e = ks_lookup(c->env->ks, key.p, key.len, c->env->now_ms);
    struct shard_stats *st = &c->env->stats;
    *wrong = false;
    if (e == NULL) {
        st->keyspace_misses++;
        ksn_event(c->env, KSN_KEY_MISS, "keymiss", key);
        return NULL;
    }
    st->keyspace_hits++;
    if (ks_entry_type(e) != KS_ZSET) {
        *wrong = true;
        reply_err(c, RV_ERR_WRONGTYPE);
        return NULL;
    }
    zset_bind(z, c->env->ks, e);
    return z;
}

/* ------------------------------------------------------------------ GEOADD */

enum { GA_NX = 1, GA_XX = 2, GA_CH = 4 };

CMD_HANDLER(geoadd)
{
    int flags = 0, i = 2;
    for (; i < argc; i++) {
        if (cmd_arg_is(argv[i], "nx")) flags |= GA_NX;
        else if (cmd_arg_is(argv[i], "xx")) flags |= GA_XX;
        else if (cmd_arg_is(argv[i], "ch")) flags |= GA_CH;
        else break;
    }
    int nel = argc - i;
    if (nel == 0 || nel % 3 || ((flags & GA_NX) && (flags & GA_XX))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    nel /= 3;
    for (int j = 0; j < nel; j++) {
        double lon, lat;
        if (!parse_lonlat(c, argv, i + 3 * j, &lon, &lat)) {
            return;
        }
    }
    bool wrong;
    struct zset zb, *z = geo_lookup(c, argv[1], &wrong, &zb);
    if (wrong) {
        return;
    }
    const struct cfg *cf = c->env->cfg;
    struct zset_lim lim = { cf->enc.zset_max_listpack_entries, cf->enc.zset_max_listpack_value };
    bool fresh = false;
    if (z == NULL && !(flags & GA_XX)) {
        z = zset_create();
        fresh = true;
    }
    int64_t added = 0, changed = 0;
    for (int j = 0; z != NULL && j < nel; j++) {
        double lon = 0, lat = 0, cur;
        arg_double(argv[i + 3 * j], &lon);
        arg_double(argv[i + 3 * j + 1], &lat);
        struct rv_str m = argv[i + 3 * j + 2];
        double score = (double)geo_encode(lon, lat);
        if (zset_score(z, m.p, m.len, &cur)) {
            if (!(flags & GA_NX) && cur != score) {
                zset_update(z, m.p, m.len, cur, score);
                changed++;
            }
        } else if (!(flags & GA_XX)) {
            zset_insert(z, m.p, m.len, score, &lim);
            added++;
        }
    }
    reply_int(c, (flags & GA_CH) ? added + changed : added);
    if (fresh) {
        if (zset_len(z) > 0) {
            zset_store(z, c->env->ks, argv[1].p, argv[1].len);
        } else {
            zset_destroy(z);
        }
    }
    if (added + changed > 0) {
        ksn_event(c->env, KSN_ZSET, "zadd", argv[1]); /* (Redis's GEOADD is a ZADD) */
    } else {
        effect_none(c); /* no event, no log, no invalidation: as ZADD that changed nothing */
    }
}

/* ------------------------------------------------------------------ GEOPOS, GEODIST, GEOHASH */

CMD_HANDLER(geopos)
{
    bool wrong;
    struct zset zb, *z = geo_lookup(c, argv[1], &wrong, &zb);
    if (wrong) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        double s, lon, lat;
        if (z == NULL || !zset_score(z, argv[i].p, argv[i].len, &s)) {
            reply_null_array(c);
            continue;
        }
        geo_decode((uint64_t)s, &lon, &lat);
        reply_coord(c, lon, lat);
    }
}

CMD_HANDLER(geodist)
{
    double conv = 1;
    if (argc > 5) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 5 && (conv = unit_of(argv[4])) == 0) {
        reply_errf(c, ERR_UNIT);
        return;
    }
    bool wrong;
    struct zset zb, *z = geo_lookup(c, argv[1], &wrong, &zb);
    if (wrong) {
        return;
    }
    double s1, s2, lon1, lat1, lon2, lat2;
    if (z == NULL || !zset_score(z, argv[2].p, argv[2].len, &s1) ||
        !zset_score(z, argv[3].p, argv[3].len, &s2)) {
        reply_null(c);
        return;
    }
    geo_decode((uint64_t)s1, &lon1, &lat1);
    geo_decode((uint64_t)s2, &lon2, &lat2);
    reply_dist(c, geo_dist(lon1, lat1, lon2, lat2) / conv);
}

CMD_HANDLER(geohash)
{
    bool wrong;
    struct zset zb, *z = geo_lookup(c, argv[1], &wrong, &zb);
    if (wrong) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        double s;
        char buf[12];
        if (z == NULL || !zset_score(z, argv[i].p, argv[i].len, &s)) {
            reply_null(c);
            continue;
        }
        geo_hash_str((uint64_t)s, buf);
        reply_bulk(c, buf, 11);
    }
}

/* ------------------------------------------------------------------ search */

enum geo_sort { SORT_NONE, SORT_ASC, SORT_DESC };

/* ------------------------------------------------------------------ GEOSEARCH / GEORADIUS */

enum geo_kind { K_RADIUS, K_RADIUS_MEMBER, K_SEARCH, K_SEARCHSTORE };
enum { F_RO = 1 };

struct geo_req {
    struct geo_shape shape;
    bool from_member, from_lonlat, by_radius, by_box;
    struct rv_str member;
    bool withdist, withhash, withcoord, any, storedist;
    enum geo_sort sort;
    int64_t count;
    struct rv_str store;
    bool has_store;
    const char *store_event; /* its keyspace notification */
};

/* BYRADIUS r unit at argv[i]; replies on error. */
static bool
parse_radius(struct conn *c, struct rv_str *argv, int i, struct geo_shape *s)
{
    if (!arg_double(argv[i], &s->radius)) {
        reply_errf(c, "ERR need numeric radius");
        return false;
    }
    if (s->radius < 0) {
        reply_errf(c, "ERR radius cannot be negative");
        return false;
    }
    if ((s->conv = unit_of(argv[i + 1])) == 0) {
        reply_errf(c, ERR_UNIT);
        return false;
    }
    s->radius *= s->conv;
    return true;
}

static bool
parse_box(struct conn *c, struct rv_str *argv, int i, struct geo_shape *s)
{
    if (!arg_double(argv[i], &s->w)) {
        reply_errf(c, "ERR need numeric width");
        return false;
    }
    if (!arg_double(argv[i + 1], &s->h)) {
        reply_errf(c, "ERR need numeric height");
        return false;
    }
    if (s->w < 0 || s->h < 0) {
        reply_errf(c, "ERR height or width cannot be negative");
        return false;
    }
    if ((s->conv = unit_of(argv[i + 2])) == 0) {
        reply_errf(c, ERR_UNIT);
        return false;
    }
    s->w *= s->conv;
    s->h *= s->conv;
    s->box = true;
    return true;
}

/* Options from argv[i]; replies and returns false on error. */
static bool
parse_opts(struct conn *c, int argc, struct rv_str *argv, int i, enum geo_kind k, int fl,
           struct geo_req *q)
{
    bool search = k == K_SEARCH || k == K_SEARCHSTORE;
    for (; i < argc; i++) {
        struct rv_str a = argv[i];
        int left = argc - i - 1;
        if (cmd_arg_is(a, "withdist")) {
            q->withdist = true;
        } else if (cmd_arg_is(a, "withhash")) {
            q->withhash = true;
        } else if (cmd_arg_is(a, "withcoord")) {
            q->withcoord = true;
        } else if (cmd_arg_is(a, "any")) {
            q->any = true;
        } else if (cmd_arg_is(a, "asc")) {
            q->sort = SORT_ASC;
        } else if (cmd_arg_is(a, "desc")) {
            q->sort = SORT_DESC;
        } else if (cmd_arg_is(a, "count") && left >= 1) {
            if (!cmd_arg_int(argv[i + 1], &q->count)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (q->count <= 0) {
                reply_errf(c, "ERR COUNT must be > 0");
                return false;
            }
            i++;
        } else if (!search && !(fl & F_RO) && left >= 1 &&
                   (cmd_arg_is(a, "store") || cmd_arg_is(a, "storedist"))) {
            q->storedist = cmd_arg_is(a, "storedist");
            q->store = argv[++i];
            q->has_store = true;
        } else if (k == K_SEARCHSTORE && cmd_arg_is(a, "storedist")) {
            q->storedist = true;
        } else if (search && cmd_arg_is(a, "frommember") && left >= 1 && !q->from_lonlat) {
            q->from_member = true;
            q->member = argv[++i];
        } else if (search && cmd_arg_is(a, "fromlonlat") && left >= 2 && !q->from_member) {
            if (!parse_lonlat(c, argv, i + 1, &q->shape.lon, &q->shape.lat)) {
                return false;
            }
            q->from_lonlat = true;
            i += 2;
        } else if (search && cmd_arg_is(a, "byradius") && left >= 2 && !q->by_box) {
            if (!parse_radius(c, argv, i + 1, &q->shape)) {
                return false;
            }
            q->by_radius = true;
            i += 2;
        } else if (search && cmd_arg_is(a, "bybox") && left >= 3 && !q->by_radius) {
            if (!parse_box(c, argv, i + 1, &q->shape)) {
                return false;
            }
            q->by_box = true;
            i += 3;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    bool with = q->withdist || q->withhash || q->withcoord;
    if (search && !q->from_member && !q->from_lonlat) {
        reply_errf(c, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %.*s",
                   (int)argv[0].len, argv[0].p);
        return false;
    }
    if (search && !q->by_radius && !q->by_box) {
        reply_errf(c, "ERR exactly one of BYRADIUS and BYBOX can be specified for %.*s",
                   (int)argv[0].len, argv[0].p);
        return false;
    }
    if (q->has_store && with && k == K_SEARCHSTORE) {
        reply_errf(c, "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and "
                      "WITHCOORD options");
        return false;
    }
    if (q->has_store && with) {
        reply_errf(c, "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH "
                      "and WITHCOORD options");
        return false;
    }
    if (q->any && q->count == 0) {
        reply_errf(c, "ERR the ANY argument requires COUNT argument");
        return false;
    }
    return true;
}

static void
store_hits(struct conn *c, const struct geo_req *q, const struct geo_hits *h, size_t n)
{
    if (n == 0) {
        if (ks_delete(c->env->ks, q->store.p, q->store.len)) {
            ksn_event(c->env, KSN_GENERIC, "del", q->store);
        } else {
            effect_none(c); /* nothing stored, nothing deleted */
        }
        reply_int(c, 0);
        return;
    }
    const struct cfg *cf = c->env->cfg;
    struct zset_lim lim = { cf->enc.zset_max_listpack_entries, cf->enc.zset_max_listpack_value };
    struct zset *out = zset_create();
    for (size_t i = 0; i < n; i++) {
        const struct geo_hit *x = &h->v[i];
        double sc = q->storedist ? x->dist / q->shape.conv : x->score;
        zset_insert(out, x->m, x->mlen, sc, &lim);
    }
    zset_store(out, c->env->ks, q->store.p, q->store.len);
    ksn_event(c->env, KSN_ZSET, q->store_event, q->store);
    reply_int(c, (int64_t)n);
}

static void
reply_hits(struct conn *c, const struct geo_req *q, const struct geo_hits *h, size_t n)
{
    size_t extra = (size_t)q->withdist + q->withhash + q->withcoord;
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        const struct geo_hit *x = &h->v[i];
        if (extra) {
            reply_array(c, extra + 1);
        }
        reply_bulk(c, x->m, x->mlen);
        if (q->withdist) {
            reply_dist(c, x->dist / q->shape.conv);
        }
        if (q->withhash) {
            reply_int(c, (int64_t)x->score);
        }
        if (q->withcoord) {
            reply_coord(c, x->lon, x->lat);
        }
    }
}

static void
geo_search(struct conn *c, int argc, struct rv_str *argv, enum geo_kind k, int fl)
{
    struct geo_req q;
    memset(&q, 0, sizeof(q));
    int src = k == K_SEARCHSTORE ? 2 : 1;
    int opt;
    q.store_event = k == K_SEARCHSTORE ? "geosearchstore" : "georadiusstore";
    if (k == K_SEARCHSTORE) {
        q.store = argv[1];
        q.has_store = true;
    }
    bool wrong;
    struct zset zb, *z = geo_lookup(c, argv[src], &wrong, &zb);
    if (wrong) {
        return;
    }
    if (k == K_RADIUS) {
        if (!parse_lonlat(c, argv, 2, &q.shape.lon, &q.shape.lat) ||
            !parse_radius(c, argv, 4, &q.shape)) {
            return;
        }
        opt = 6;
    } else if (k == K_RADIUS_MEMBER) {
        q.from_member = true;
        q.member = argv[2];
        if (!parse_radius(c, argv, 3, &q.shape)) {
            return;
        }
        opt = 5;
    } else {
        opt = src + 1;
    }
    if (!parse_opts(c, argc, argv, opt, k, fl, &q)) {
        return;
    }
    if (z == NULL) {
        if (q.has_store) {
            if (ks_delete(c->env->ks, q.store.p, q.store.len)) {
                ksn_event(c->env, KSN_GENERIC, "del", q.store);
            } else {
                effect_none(c);
            }
            reply_int(c, 0);
        } else {
            reply_array(c, 0);
        }
        return;
    }
    if (q.from_member) {
        double s;
        if (!zset_score(z, q.member.p, q.member.len, &s)) {
            reply_errf(c, ERR_MEMBER);
            return;
        }
        geo_decode((uint64_t)s, &q.shape.lon, &q.shape.lat);
    }
    if (q.count > 0 && q.sort == SORT_NONE && !q.any) {
        q.sort = SORT_ASC;
    }
    struct geo_hits h = { NULL, 0, 0, q.any ? (size_t)q.count : 0 };
    geo_collect(z, &q.shape, &h);
    if (q.sort != SORT_NONE && h.n > 1) {
        qsort(h.v, h.n, sizeof(*h.v), q.sort == SORT_ASC ? geo_hit_asc : geo_hit_desc);
    }
    size_t n = h.n;
    if (q.count > 0 && (uint64_t)q.count < n) {
        n = (size_t)q.count;
    }
    if (q.has_store) {
        store_hits(c, &q, &h, n);
    } else {
        reply_hits(c, &q, &h, n);
    }
    rv_free(h.v);
}

CMD_HANDLER(geosearch)
{
    geo_search(c, argc, argv, K_SEARCH, F_RO);
}

CMD_HANDLER(geosearchstore)
{
    geo_search(c, argc, argv, K_SEARCHSTORE, 0);
}

CMD_HANDLER(georadius)
{
    geo_search(c, argc, argv, K_RADIUS, 0);
}

CMD_HANDLER(georadiusbymember)
{
    geo_search(c, argc, argv, K_RADIUS_MEMBER, 0);
}

CMD_HANDLER(georadius_ro)
{
    geo_search(c, argc, argv, K_RADIUS, F_RO);
}

CMD_HANDLER(georadiusbymember_ro)
{
    geo_search(c, argc, argv, K_RADIUS_MEMBER, F_RO);
}

/* Keys of GEORADIUS[BYMEMBER]: the source and any STORE/STOREDIST target. */
int
geo_georadius_keys(int argc, struct rv_str *argv, int *out, int max)
{
    int n = 0;
    if (argc < 2 || max < 1) {
        return 0;
    }
    out[n++] = 1;
    for (int i = 5; i + 1 < argc && n < max; i++) {
        if (cmd_arg_is(argv[i], "store") || cmd_arg_is(argv[i], "storedist")) {
            out[n++] = i + 1;
            break;
        }
    }
    return n;
}
