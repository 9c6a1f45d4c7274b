/* node/commands/t_sort.c: SORT and SORT_RO on lists, sets and sorted sets.
 * Semantics, reply shapes and error texts follow Redis 7.0, with two
 * deliberate choices: ALPHA compares bytes (Redis without collation, as
 * SORT ... STORE always does), and ties between elements of a set or a sorted
 * set are broken by the elements' bytes, so that the result is a function of
 * the shard's data and SORT ... STORE may be logged as its arguments (a list
 * keeps its order among equals: the sort is stable). */
#include "node/commands/t_sort.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/acl.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/types/hash.h"
#include "node/types/list.h"
#include "node/types/set.h"
#include "node/types/zset_enc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SORT_MAX_GETS 64

struct sort_opts {
    bool desc, alpha, dontsort;
    struct rv_str by; /* p NULL: sort by the elements themselves */
    struct rv_str store;
    int64_t lstart, lcount; /* LIMIT; lcount -1: no limit */
    struct rv_str *gets;    /* GET patterns (argv views) */
    int ngets;
};

struct sort_item {
    char *m; /* the element (owned) */
    size_t mlen;
    double score;
    char *cmp; /* ALPHA BY value (owned); NULL: the key or field is missing */
    size_t cmplen;
};

struct sort_ctx {
    struct sort_item *v;
    size_t n, cap;
    bool alpha, bypattern, desc, tiebreak;
};

static void
push_item(struct sort_ctx *x, const char *p, size_t n)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 16;
        x->v = rv_realloc(x->v, x->cap * sizeof(*x->v));
    }
    struct sort_item *it = &x->v[x->n++];
    memset(it, 0, sizeof(*it));
    it->m = rv_malloc(n + 1);
    memcpy(it->m, p, n);
    it->m[n] = '\0';
    it->mlen = n;
}

static void
free_items(struct sort_ctx *x)
{
    for (size_t i = 0; i < x->n; i++) {
        rv_free(x->v[i].m);
        rv_free(x->v[i].cmp);
    }
    rv_free(x->v);
}

/* Byte order, the shorter first among equal prefixes (Redis compareStringObjects). */
static int
cmp_bytes(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r != 0) {
        return r;
    }
    return al < bl ? -1 : (al > bl ? 1 : 0);
}

static int
item_cmp(const struct sort_ctx *x, const struct sort_item *a, const struct sort_item *b)
{
    int r;
    if (!x->alpha) {
        r = a->score > b->score ? 1 : (a->score < b->score ? -1 : 0);
        if (r == 0) {
            r = cmp_bytes(a->m, a->mlen, b->m, b->mlen);
        }
    } else if (x->bypattern) {
        if (a->cmp == NULL || b->cmp == NULL) {
            r = a->cmp == b->cmp ? 0 : (a->cmp == NULL ? -1 : 1);
        } else {
            r = cmp_bytes(a->cmp, a->cmplen, b->cmp, b->cmplen);
        }
        if (r == 0 && x->tiebreak) {
            r = cmp_bytes(a->m, a->mlen, b->m, b->mlen);
        }
    } else {
        r = cmp_bytes(a->m, a->mlen, b->m, b->mlen);
    }
    return x->desc ? -r : r;
}

/* Stable merge sort (glibc's qsort, which Redis calls, is one too). */
static void
merge_sort(const struct sort_ctx *x, struct sort_item *v, struct sort_item *tmp, size_t n)
{
    if (n < 2) {
        return;
    }
    size_t h = n / 2;
    merge_sort(x, v, tmp, h);
    merge_sort(x, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        tmp[k++] = item_cmp(x, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
    }
    while (i < h) {
        tmp[k++] = v[i++];
    }
    while (j < n) {
        tmp[k++] = v[j++];
    }
    memcpy(v, tmp, n * sizeof(*v));
}

/* Redis lookupKeyByPattern: "#" is the element itself; otherwise the first
 * '*' is replaced by the element, and "->field" after it reads a hash field.
 * A pattern without '*', a missing key or field, or a key of another type
 * gives false. *out is a view valid until the next keyspace access (scratch
 * holds a formatted integer). */
static bool
pattern_lookup(struct conn *c, struct rv_str pat, const struct sort_item *it, char *scratch,
               struct rv_str *out)
{
    if (pat.len == 1 && pat.p[0] == '#') {
        *out = (struct rv_str){ it->m, it->mlen };
        return true;
    }
    const char *star = memchr(pat.p, '*', pat.len);
    if (star == NULL) {
        return false;
    }
    const char *end = pat.p + pat.len;
    const char *field = NULL;
    for (const char *q = star + 1; q + 1 < end; q++) {
        if (q[0] == '-' && q[1] == '>') {
            if (q + 2 < end) {
                field = q;
            }
            break;
        }
    }
    size_t pre = (size_t)(star - pat.p);
    const char *post_end = field ? field : end;
    size_t post = (size_t)(post_end - (star + 1));
    size_t klen = pre + it->mlen + post;
    char stackbuf[256];
    char *key = klen <= sizeof(stackbuf) ? stackbuf : rv_malloc(klen);
    memcpy(key, pat.p, pre);
    memcpy(key + pre, it->m, it->mlen);
    memcpy(key + pre + it->mlen, star + 1, post);
    struct ks_entry *e = lookup_read(c, (struct rv_str){ key, klen });
    if (key != stackbuf) {
        rv_free(key);
    }
    if (e == NULL) {
        return false;
    }
    if (field == NULL) {
        if (ks_entry_type(e) != KS_STRING) {
            return false;
        }
        *out = ks_str_get(e, scratch);
        return true;
    }
    if (ks_entry_type(e) != KS_HASH) {
        return false;
    }
    struct hobj h;
    hobj_bind(&h, c->env->ks, e);
    const char *f = field + 2;
    size_t fl = (size_t)(end - f);
    if (!hobj_get(&h, f, fl, scratch, out)) {
        return false;
    }
    int64_t dl = hobj_ttl(&h) ? hobj_field_deadline(&h, f, fl) : -1;
    return dl < 0 || dl > c->env->now_ms; /* a field past its deadline is gone */
}

static bool
parse_opts(struct conn *c, int argc, struct rv_str *argv, bool ro, struct sort_opts *o)
{
    bool multi = shard_multi(c->shard) || c->env->topo != NULL;
    for (int j = 2; j < argc; j++) {
        int left = argc - j - 1;
        if (cmd_arg_is(argv[j], "asc")) {
            o->desc = false;
        } else if (cmd_arg_is(argv[j], "desc")) {
            o->desc = true;
        } else if (cmd_arg_is(argv[j], "alpha")) {
            o->alpha = true;
        } else if (cmd_arg_is(argv[j], "limit") && left >= 2) {
            if (!cmd_arg_int(argv[j + 1], &o->lstart) || !cmd_arg_int(argv[j + 2], &o->lcount)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            j += 2;
        } else if (!ro && cmd_arg_is(argv[j], "store") && left >= 1) {
            o->store = argv[++j];
        } else if (cmd_arg_is(argv[j], "by") && left >= 1) {
            o->by = argv[++j];
            if (memchr(o->by.p, '*', o->by.len) == NULL) {
                o->dontsort = true;
            } else if (multi) {
                /* the keys it names may live in any slot (Redis Cluster refuses it too) */
                reply_errf(c, "ERR BY option of SORT denied in Cluster mode.");
                return false;
            } else if (!acl_all_keys_readable(c)) {
                reply_errf(c, "ERR BY option of SORT denied due to insufficient ACL permissions.");
                return false;
            }
        } else if (cmd_arg_is(argv[j], "get") && left >= 1) {
            if (multi) {
                reply_errf(c, "ERR GET option of SORT denied in Cluster mode.");
                return false;
            }
            if (!acl_all_keys_readable(c)) {
                reply_errf(c, "ERR GET option of SORT denied due to insufficient ACL permissions.");
                return false;
            }
            o->gets[o->ngets++] = argv[++j];
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

static void
load_set_member(void *arg, struct rv_str m)
{
    push_item(arg, m.p, m.len);
}

/* Loads the elements to sort: all of them, or for a list or sorted set under
 * BY nosort only the LIMIT range, in the key's order (reversed by DESC). */
static void
load_items(struct conn *c, struct ks_entry *e, const struct sort_opts *o, int64_t start,
           int64_t count, struct sort_ctx *x)
{
    enum ks_type t = ks_entry_type(e);
    if (t == KS_LIST) {
        struct list *l = ks_entry_ptr(e);
        int64_t len = (int64_t)list_len(l);
        int64_t from = o->dontsort ? start : 0;
        int64_t n = o->dontsort ? count : len;
        if (n <= 0) {
            return;
        }
        struct lit it;
        lit_seek(&it, l, o->desc && o->dontsort ? len - from - 1 : from);
        for (int64_t i = 0; i < n && it.p != NULL; i++) {
            struct lp_val v;
            char buf[24];
            size_t bl;
            lp_get(it.p, &v);
            const char *p = lp_val_bytes(&v, buf, &bl);
            push_item(x, p, bl);
            if (o->desc && o->dontsort) {
                lit_prev(&it);
            } else {
                lit_next(&it);
            }
        }
    } else if (t == KS_SET) {
        struct sobj s;
        sobj_bind(&s, c->env->ks, e);
        sobj_foreach(&s, load_set_member, x);
    } else {
        struct zset z;
        zset_bind(&z, c->env->ks, e);
        int64_t len = (int64_t)zset_len(&z);
        int64_t from = o->dontsort ? start : 0;
        int64_t n = o->dontsort ? count : len;
        if (n <= 0) {
            return;
        }
        struct zset_it it;
        bool rev = o->desc && o->dontsort;
        zset_it_init(&it, &z, (size_t)(rev ? len - from - 1 : from));
        for (int64_t i = 0; i < n; i++) {
            struct rv_str m;
            double sc;
            zset_it_get(&it, &m, &sc);
            push_item(x, m.p, m.len);
            if (i + 1 < n && !(rev ? zset_it_prev(&it) : zset_it_next(&it))) {
                break;
            }
        }
        zset_it_done(&it);
    }
}

/* Scores (numeric) or compare values (ALPHA BY) of every item; false when a
 * value is not a number. */
static bool
load_weights(struct conn *c, const struct sort_opts *o, struct sort_ctx *x)
{
    bool ok = true;
    for (size_t j = 0; j < x->n; j++) {
        struct sort_item *it = &x->v[j];
        struct rv_str val = { it->m, it->mlen };
        char scratch[HPK_SCRATCH > 24 ? HPK_SCRATCH : 24];
        if (o->by.p != NULL && !pattern_lookup(c, o->by, it, scratch, &val)) {
            continue; /* missing: score 0, or before everything under ALPHA */
        }
        if (o->alpha) {
            if (o->by.p != NULL) {
                it->cmp = rv_malloc(val.len + 1);
                memcpy(it->cmp, val.p, val.len);
                it->cmplen = val.len;
            }
            continue;
        }
        /* strtod over a C string, as Redis: leading spaces pass, an embedded
         * NUL ends the number, trailing bytes, range errors and NaN fail. */
        char sbuf[128];
        char *s = val.len < sizeof(sbuf) ? sbuf : rv_malloc(val.len + 1);
        memcpy(s, val.p, val.len);
        s[val.len] = '\0';
        char *eptr;
        errno = 0;
        it->score = strtod(s, &eptr);
        if (eptr[0] != '\0' || errno == ERANGE || isnan(it->score)) {
            ok = false;
        }
        if (s != sbuf) {
            rv_free(s);
        }
    }
    return ok;
}

/* The LIMIT window over len elements, as Redis computes it: [*start, *end]. */
static void
limit_window(const struct sort_opts *o, int64_t len, int64_t *start, int64_t *end)
{
    *start = o->lstart < 0 ? 0 : o->lstart;
    if (o->lcount < 0) {
        *end = len - 1;
    } else {
        *end = o->lcount > INT64_MAX - *start ? INT64_MAX : *start + o->lcount - 1;
    }
    if (*start >= len) {
        *start = len - 1;
        *end = len - 2;
    }
    if (*end >= len) {
        *end = len - 1;
    }
}

/* The output of one item: the element, or one value per GET pattern (nil
 * when missing: NULL p). */
static void
emit_store(struct conn *c, const struct sort_opts *o, const struct sort_item *it, struct list *l)
{
    int64_t fill = c->env->cfg->enc.list_max_listpack_size;
    if (o->ngets == 0) {
        list_push(l, LIST_TAIL, it->m, it->mlen, fill);
        return;
    }
    for (int g = 0; g < o->ngets; g++) {
        char scratch[HPK_SCRATCH > 24 ? HPK_SCRATCH : 24];
        struct rv_str v;
        if (!pattern_lookup(c, o->gets[g], it, scratch, &v)) {
            v = (struct rv_str){ "", 0 };
        }
        list_push(l, LIST_TAIL, v.p, v.len, fill);
    }
}

static void
emit_reply(struct conn *c, const struct sort_opts *o, const struct sort_item *it)
{
    if (o->ngets == 0) {
        reply_bulk(c, it->m, it->mlen);
        return;
    }
    for (int g = 0; g < o->ngets; g++) {
        char scratch[HPK_SCRATCH > 24 ? HPK_SCRATCH : 24];
        struct rv_str v;
        if (pattern_lookup(c, o->gets[g], it, scratch, &v)) {
            reply_bulk(c, v.p, v.len);
        } else {
            reply_null(c);
        }
    }
}

static void
store_result(struct conn *c, const struct sort_opts *o, struct sort_ctx *x, int64_t start,
             int64_t end)
{
    struct ks *ks = c->env->ks;
    struct list *l = list_create();
    for (int64_t j = start; j <= end; j++) {
        emit_store(c, o, &x->v[j], l);
    }
    size_t n = list_len(l);
    bool existed = ks_delete(ks, o->store.p, o->store.len);
    if (n > 0) {
        ks_set_ptr(ks, o->store.p, o->store.len, KS_LIST, l, list_destroy, KS_NO_EXPIRE);
        ksn_event(c->env, KSN_LIST, "sortstore", o->store);
    } else {
        list_destroy(l);
        if (!existed) {
            effect_none(c); /* nothing stored, nothing deleted */
        } else {
            ksn_event(c->env, KSN_GENERIC, "del", o->store);
        }
    }
    reply_int(c, (int64_t)n);
}

static int64_t
coll_len(struct conn *c, struct ks_entry *e)
{
    enum ks_type t = ks_entry_type(e);
    if (t == KS_LIST) {
        return (int64_t)list_len(ks_entry_ptr(e));
    }
    if (t == KS_SET) {
        struct sobj s;
        sobj_bind(&s, c->env->ks, e);
        return (int64_t)sobj_len(&s);
    }
    struct zset z;
    zset_bind(&z, c->env->ks, e);
    return (int64_t)zset_len(&z);
}

static void
sort_generic(struct conn *c, int argc, struct rv_str *argv, bool ro)
{
    struct rv_str gets[SORT_MAX_GETS];
    struct rv_str *gp = argc / 2 <= SORT_MAX_GETS ? gets : rv_malloc((size_t)argc * sizeof(*gp));
    struct sort_opts o = { .lstart = 0, .lcount = -1, .gets = gp };
    struct sort_ctx x = { 0 };

    if (!parse_opts(c, argc, argv, ro, &o)) {
        goto out;
    }
    struct ks_entry *e = lookup_read(c, argv[1]);
    enum ks_type t = e ? ks_entry_type(e) : KS_LIST;
    if (t != KS_LIST && t != KS_SET && t != KS_ZSET) {
        reply_err(c, RV_ERR_WRONGTYPE);
        goto out;
    }
    if (o.dontsort && t == KS_SET && o.store.p != NULL) {
        /* a set has no order of its own: sort what is stored */
        o.dontsort = false;
        o.alpha = true;
        o.by = (struct rv_str){ NULL, 0 };
    }
    int64_t len = e ? coll_len(c, e) : 0;
    int64_t start, end;
    limit_window(&o, len, &start, &end);
    if (e != NULL) {
        load_items(c, e, &o, start, end - start + 1, &x);
    }
    if (o.dontsort && t != KS_SET) {
        end -= start; /* only the window was loaded */
        start = 0;
    }
    bool ok = true;
    if (!o.dontsort) {
        x.alpha = o.alpha;
        x.bypattern = o.by.p != NULL;
        x.desc = o.desc;
        x.tiebreak = t != KS_LIST;
        ok = load_weights(c, &o, &x);
        if (x.n > 1) {
            struct sort_item *tmp = rv_malloc(x.n * sizeof(*tmp));
            merge_sort(&x, x.v, tmp, x.n);
            rv_free(tmp);
        }
    }
    if (!ok) {
        reply_errf(c, "ERR One or more scores can't be converted into double");
        effect_none(c);
    } else if (o.store.p == NULL) {
        effect_none(c); /* SORT without STORE reads only */
        int64_t n = end - start + 1;
        reply_array(c, (size_t)(n > 0 ? n : 0) * (size_t)(o.ngets ? o.ngets : 1));
        for (int64_t j = start; j <= end; j++) {
            emit_reply(c, &o, &x.v[j]);
        }
    } else {
        store_result(c, &o, &x, start, end);
    }
out:
    free_items(&x);
    if (gp != gets) {
        rv_free(gp);
    }
}

CMD_HANDLER(sort)
{
    sort_generic(c, argc, argv, false);
}

CMD_HANDLER(sort_ro)
{
    sort_generic(c, argc, argv, true);
}

/* Redis sortGetKeys: the sorted key, and the destination of the last STORE
 * (LIMIT, GET and BY skip their arguments while looking for it). */
int
sort_getkeys(int argc, struct rv_str *argv, int *out, int max)
{
    int n = 0;
    int store = -1;
    if (argc < 2 || max < 2) {
        return 0;
    }
    out[n++] = 1;
    for (int i = 2; i < argc; i++) {
        if (cmd_arg_is(argv[i], "limit")) {
            i += 2;
        } else if (cmd_arg_is(argv[i], "get") || cmd_arg_is(argv[i], "by")) {
            i += 1;
        } else if (cmd_arg_is(argv[i], "store") && i + 1 < argc) {
            store = i + 1;
        }
    }
    if (store > 0) {
        out[n++] = store;
    }
    return n;
}

int
sort_ro_getkeys(int argc, struct rv_str *argv, int *out, int max)
{
    (void)argv;
    if (argc < 2 || max < 1) {
        return 0;
    }
    out[0] = 1;
    return 1;
}

/* One key spec whose keys cannot be found from the arguments (Redis's
 * "unknown" begin_search and find_keys). */
static void
spec_unknown(struct conn *c, const char *notes, const char *f0, const char *f1)
{
    reply_map(c, 4);
    reply_bulk_cstr(c, "notes");
    reply_bulk_cstr(c, notes);
    reply_bulk_cstr(c, "flags");
    reply_set(c, 2);
    reply_simple(c, f0);
    reply_simple(c, f1);
    for (int i = 0; i < 2; i++) {
        reply_bulk_cstr(c, i == 0 ? "begin_search" : "find_keys");
        reply_map(c, 2);
        reply_bulk_cstr(c, "type");
        reply_bulk_cstr(c, "unknown");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 0);
    }
}

void
sort_reply_key_specs(struct conn *c, bool store)
{
    reply_array(c, store ? 3 : 2);
    cmd_reply_range_spec(c, "RO", "access", 1, 0, 1);
    spec_unknown(c,
                 "For the optional BY/GET keyword. It is marked 'unknown' because the key names "
                 "derive from the content of the key we sort",
                 "RO", "access");
    if (store) {
        spec_unknown(c,
                     "For the optional STORE keyword. It is marked 'unknown' because the keyword "
                     "can appear anywhere in the argument array",
                     "OW", "update");
    }
}
