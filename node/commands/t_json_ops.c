/* node/commands/t_json.c and t_json_ops.c: the JSON.* commands. t_json.c holds
 * the shared helpers, SET/MSET/GET/MGET/DEL/MERGE/RESP/DEBUG; t_json_ops.c
 * the commands that act on each match of a path (TYPE, STR*, NUM*, TOGGLE,
 * CLEAR, ARR*, OBJ*).
 *
 * Logging (node/core/effect.h): every JSON write is deterministic given the
 * document, so it is logged as its arguments: the key, the path and the new
 * value or operand, never the document. A write that changed nothing is not
 * logged. Checkpoints and DUMP rebuild a document with one JSON.SET key $. */
#include "node/commands/t_json.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/commands/t_json_int.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/reply.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/types/json.h"
#include "node/types/json_path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- per-match commands */

/* One match's result: an integer, a value to print, nil (wrong type). */
enum jr { JR_NIL, JR_NULLV, JR_INT, JR_JSON, JR_BULK }; /* JR_NIL: wrong type */
struct jres {
    enum jr kind;
    int64_t i;
    struct json *j; /* JR_JSON: borrowed unless owned */
    bool owned;
    char *s; /* JR_BULK: owned */
    size_t n;
};

/* The operation on one match: fills r; a change sets *changed. */
typedef void jop_fn(struct json *v, void *arg, struct jres *r, bool *changed);

struct jspec {
    const char *expect; /* type named in a legacy WRONGTYPE error */
    bool write;
    bool json_array; /* `$` replies as one JSON text (NUMINCRBY) in RESP2 */
    /* RedisJSON's legacy error when no match has the type (instead of
     * WRONGTYPE): "ERR Path '<path>' does not exist or <legacy_or>", naming
     * the path as given (or_original) or as its `$` form */
    const char *legacy_or;
    bool or_original;
    /* a read on a missing key (writes fail with TJSON_ERR_NOKEY): nil, or
     * as RedisJSON for a `$` path: TJSON_ERR_NOKEY (NK_ERR), "ERR Path 'p'
     * does not exist or not an object" (NK_NOT_OBJ, OBJLEN); NK_PATH: "ERR Path 'p'
     * does not exist" for either syntax (ARRINDEX) */
    enum { NK_NIL, NK_ERR, NK_NOT_OBJ, NK_PATH } nokey;
    /* a write's keyspace event (RedisJSON's name, class `d`), published
     * when it changed something */
    const char *event;
    /* a legacy path that does not compile replies nil, not its syntax
     * error (RedisJSON's legacy OBJLEN reads any failure as no match) */
    bool badpath_nil;
};

/* "ERR Path 'p' does not exist or <what>", p as given or in RedisJSON's `$`
 * form of a legacy path (`.a` -> `$.a`, `a` -> `$.a`, `.` -> `$`). */
static void
reply_missing_or(struct conn *c, struct rv_str p, const char *what, bool original)
{
    const char *pre = "";
    size_t skip = 0;
    if (!original && (p.len == 0 || p.p[0] != '$')) {
        bool dot = p.len > 0 && p.p[0] == '.';
        pre = dot ? "$" : "$.";
        skip = dot && p.len == 1; /* `.` alone is `$` */
    }
    reply_errf(c, "ERR Path '%s%.*s' does not exist or %s", pre, (int)(p.len - skip), p.p + skip,
               what);
}

static void
jres_free(struct jres *r)
{
    if (r->owned) {
        json_destroy(r->j);
    }
    rv_free(r->s);
}

static void
reply_res(struct conn *c, const struct jres *r, bool numbers)
{
    switch (r->kind) {
    case JR_NIL:
    case JR_NULLV: reply_null(c); break;
    case JR_INT: reply_int(c, r->i); break;
    case JR_JSON:
        if (numbers && c->proto == 3 &&
            (json_type(r->j) == JSON_INT || json_type(r->j) == JSON_DOUBLE)) {
            if (json_type(r->j) == JSON_INT) {
                reply_int(c, json_int(r->j));
            } else {
                reply_double(c, json_double(r->j));
            }
        } else {
            tjson_reply(c, r->j, NULL);
        }
        break;
    case JR_BULK: reply_bulk(c, r->s, r->n); break;
    }
}

/* For writes whose value RedisJSON 2.x parses only at a match (STRAPPEND,
 * NUMINCRBY, NUMMULTBY): the key is opened first, so a key of another type
 * or a missing key fails before the value is read. false: replied. */
static bool
key_exists(struct conn *c, struct rv_str key)
{
    bool err;
    struct ks_entry *e = tjson_entry(c, key, true, &err);
    if (!err && e == NULL) {
        reply_errf(c, TJSON_ERR_NOKEY);
    }
    return e != NULL;
}

/* Runs op on every match of path in the document at key and replies. */
static void
per_match(struct conn *c, struct rv_str key, struct rv_str path, const struct jspec *sp, jop_fn *op,
          void *arg)
{
    bool err, changed = false;
    struct json *tmp = NULL;
    int64_t dl = 0;
    /* the key before the path, as RedisJSON 2.x: a missing key's reply does
     * not depend on the path, even a malformed one */
    struct json *doc = sp->write ? tjson_doc_w(c, key, &tmp, &dl, &err)
                                 : tjson_doc_ro(c, key, &tmp, &err);
    bool legacy = tjson_legacy_text(path);
    struct jpath *jp = NULL;
    if (doc != NULL && legacy && sp->badpath_nil) {
        char e[JPATH_ERR_SHOW + 200];
        if ((jp = jpath_parse(path.p, path.len, e, sizeof(e))) == NULL) {
            reply_null(c);
        }
    } else if (doc != NULL) {
        jp = tjson_path(c, path);
    }
    if (doc != NULL && jp == NULL) {
        json_destroy(tmp);
        return;
    }
    if (doc == NULL) {
        if (err) {
            /* replied */
        } else if (sp->write || (sp->nokey == NK_ERR && !legacy)) {
            reply_errf(c, TJSON_ERR_NOKEY);
        } else if (sp->nokey == NK_NOT_OBJ && !legacy) {
            reply_missing_or(c, path, "not an object", true);
        } else if (sp->nokey == NK_PATH) {
            tjson_reply_missing(c, path);
        } else {
            reply_null(c);
        }
        jpath_destroy(jp);
        return;
    }
    struct jmatches m = { 0 };
    bool over = !tjson_eval(c, jp, doc, &m);
    struct jres *rs = rv_calloc(m.n ? m.n : 1, sizeof(*rs));
    for (size_t i = 0; i < m.n; i++) {
        op(m.v[i].v, arg, &rs[i], &changed);
    }
    if (over) {
        /* replied */
    } else if (!jpath_legacy(jp)) {
        if (sp->json_array && c->proto == 2) {
            struct json *arr = json_new_arr();
            for (size_t i = 0; i < m.n; i++) {
                json_arr_insert_take(arr, i,
                                     rs[i].kind == JR_JSON ? json_dup(rs[i].j) : json_new_null());
            }
            tjson_reply(c, arr, NULL);
            json_destroy(arr);
        } else {
            reply_array(c, m.n);
            for (size_t i = 0; i < m.n; i++) {
                reply_res(c, &rs[i], true);
            }
        }
    } else {
        /* legacy: the last match that had the type (reads: the first) */
        ptrdiff_t pick = -1;
        for (size_t i = 0; i < m.n; i++) {
            if (rs[i].kind != JR_NIL && (pick < 0 || sp->write)) {
                pick = (ptrdiff_t)i;
            }
        }
        if (pick < 0 && sp->legacy_or != NULL && (m.n > 0 || sp->write)) {
            reply_missing_or(c, path, sp->legacy_or, sp->or_original);
        } else if (m.n == 0 && (sp->write || sp->legacy_or != NULL)) {
            tjson_reply_missing(c, path);
        } else if (m.n == 0) {
            reply_null(c);
        } else if (pick < 0) {
            tjson_reply_wrong(c, sp->expect, m.v[0].v);
        } else {
            reply_res(c, &rs[pick], false);
        }
    }
    for (size_t i = 0; i < m.n; i++) {
        jres_free(&rs[i]);
    }
    rv_free(rs);
    jmatches_free(&m);
    jpath_destroy(jp);
    if (sp->write) {
        tjson_doc_w_done(c, key, tmp, dl, changed); /* after the replies: they borrow from it */
    } else {
        json_destroy(tmp);
    }
    if (sp->write && !changed) {
        effect_none(c);
    } else if (sp->write) {
        ksn_event(c->env, KSN_MODULE, sp->event, key);
    }
}

/* ------------------------------------------------------------- TYPE */

CMD_HANDLER(json_type)
{
    struct jpath *jp;
    struct jmatches m;
    struct json *tmp;
    if (!tjson_read(c, argv[1], argc > 2 ? argv[2] : tjson_root(c), &jp, &m, &tmp,
                    TJSON_RD_BADPATH_NIL | TJSON_RD_RESP3_WRAP)) {
        return;
    }
    /* RESP3: RedisJSON wraps the reply, whatever it is, in one array */
    if (c->proto == 3) {
        reply_array(c, 1);
    }
    if (!jpath_legacy(jp)) {
        reply_array(c, m.n);
        for (size_t i = 0; i < m.n; i++) {
            reply_simple(c, json_type_name(m.v[i].v));
        }
    } else if (m.n == 0) {
        reply_null(c);
    } else {
        reply_simple(c, json_type_name(m.v[0].v));
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(tmp);
}

/* ------------------------------------------------- strings and numbers */

static void
op_strlen(struct json *v, void *arg, struct jres *r, bool *changed)
{
    (void)arg, (void)changed;
    if (json_type(v) == JSON_STR) {
        r->kind = JR_INT;
        r->i = (int64_t)json_len(v);
    }
}

CMD_HANDLER(json_strlen)
{
    static const struct jspec sp = { "string", false, false, NULL, false, NK_ERR, NULL, false };
    per_match(c, argv[1], argc > 2 ? argv[2] : tjson_root(c), &sp, op_strlen, NULL);
}

static void
op_strappend(struct json *v, void *arg, struct jres *r, bool *changed)
{
    const struct json *s = arg;
    if (json_type(v) == JSON_STR) {
        size_t n;
        const char *p = json_str(s, &n);
        json_str_append(v, p, n);
        *changed = true;
        r->kind = JR_INT;
        r->i = (int64_t)json_len(v);
    }
}

CMD_HANDLER(json_strappend)
{
    static const struct jspec sp = { "string",         true, false, "not a string", false, NK_NIL,
                                     "json.strappend", false };
    if (!key_exists(c, argv[1])) {
        return;
    }
    struct json *s = tjson_value(c, argc > 3 ? argv[3] : argv[2]);
    if (s == NULL) {
        return;
    }
    if (json_type(s) != JSON_STR) {
        tjson_reply_wrong(c, "string", s);
    } else {
        per_match(c, argv[1], argc > 3 ? argv[2] : tjson_root(c), &sp, op_strappend, s);
    }
    json_destroy(s);
}

struct numarg {
    const struct json *by;
    bool mult;
    bool overflow;
};

static void
op_num(struct json *v, void *arg, struct jres *r, bool *changed)
{
    struct numarg *na = arg;
    enum json_type t = json_type(v);
    if (t != JSON_INT && t != JSON_DOUBLE) {
        return;
    }
    if (t == JSON_INT && json_type(na->by) == JSON_INT && !json_int_unsigned(v) &&
        !json_int_unsigned(na->by)) {
        int64_t a = json_int(v), b = json_int(na->by), res;
        bool of = na->mult ? __builtin_mul_overflow(a, b, &res)
                           : __builtin_add_overflow(a, b, &res);
        if (!of) {
            json_set_int(v, res);
            *changed = true;
            r->kind = JR_JSON;
            r->j = v;
            return;
        }
    }
    double d = na->mult ? json_num(v) * json_num(na->by) : json_num(v) + json_num(na->by);
    if (!isfinite(d)) {
        na->overflow = true;
        return;
    }
    json_set_double(v, d);
    *changed = true;
    r->kind = JR_JSON;
    r->j = v;
}

static void
numop(struct conn *c, int argc, struct rv_str *argv, bool mult)
{
    static const struct jspec incr = {
        "number", true, true, "does not contains a number", false, NK_NIL, "json.numincrby", false
    };
    static const struct jspec mul = {
        "number", true, true, "does not contains a number", false, NK_NIL, "json.nummultby", false
    };
    const struct jspec *sp = mult ? &mul : &incr;
    (void)argc;
    if (!key_exists(c, argv[1])) {
        return;
    }
    struct json *by = tjson_value(c, argv[3]);
    if (by == NULL) {
        return;
    }
    if (json_type(by) != JSON_INT && json_type(by) != JSON_DOUBLE) {
        tjson_reply_wrong(c, "number", by);
        json_destroy(by);
        return;
    }
    /* a result that is not a finite double fails the command before
     * anything changes */
    bool err, finite = true;
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    char e[300];
    struct jpath *jp = doc ? jpath_parse(argv[2].p, argv[2].len, e, sizeof(e)) : NULL;
    if (jp != NULL) {
        struct jmatches m = { 0 };
        (void)jpath_eval(jp, doc, &m); /* past the bound: per_match replies it */
        for (size_t i = 0; i < m.n; i++) {
            enum json_type t = json_type(m.v[i].v);
            if (t == JSON_INT || t == JSON_DOUBLE) {
                double a = json_num(m.v[i].v), b = json_num(by);
                finite &= isfinite(mult ? a * b : a + b);
            }
        }
        jmatches_free(&m);
        jpath_destroy(jp);
    }
    if (!finite) {
        reply_errf(c, "ERR result is not a number");
    } else if (!err) {
        struct numarg na = { by, mult, false };
        json_destroy(tmp); /* per_match decodes a packed document again */
        tmp = NULL;
        per_match(c, argv[1], argv[2], sp, op_num, &na);
    }
    json_destroy(tmp);
    json_destroy(by);
}

CMD_HANDLER(json_numincrby)
{
    numop(c, argc, argv, false);
}

CMD_HANDLER(json_nummultby)
{
    numop(c, argc, argv, true);
}

static void
op_toggle(struct json *v, void *arg, struct jres *r, bool *changed)
{
    (void)arg;
    if (json_type(v) == JSON_BOOL) {
        json_set_bool(v, !json_bool(v));
        *changed = true;
        r->kind = JR_INT;
        r->i = json_bool(v);
    }
}

CMD_HANDLER(json_toggle)
{
    static const struct jspec sp = { "boolean", true,   false,         NULL,
                                     false,     NK_NIL, "json.toggle", false };
    bool err;
    if (!tjson_legacy_text(argv[2])) {
        per_match(c, argv[1], argv[2], &sp, op_toggle, NULL);
        return;
    }
    /* legacy TOGGLE replies the new value as "true"/"false" */
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    if (err) {
        return;
    }
    if (doc == NULL) {
        reply_errf(c, TJSON_ERR_NOKEY);
        return;
    }
    struct jpath *jp = tjson_path(c, argv[2]);
    if (jp == NULL) {
        json_destroy(tmp);
        return;
    }
    struct jmatches m = { 0 };
    bool over = !tjson_eval(c, jp, doc, &m);
    struct json *last = NULL;
    for (size_t i = 0; i < m.n; i++) {
        if (json_type(m.v[i].v) == JSON_BOOL) {
            json_set_bool(m.v[i].v, !json_bool(m.v[i].v));
            last = m.v[i].v;
        }
    }
    if (last != NULL) {
        ksn_event(c->env, KSN_MODULE, "json.toggle", argv[1]);
        reply_bulk_cstr(c, json_bool(last) ? "true" : "false");
    } else {
        effect_none(c);
        if (!over) { /* nothing matched, or nothing was a boolean */
            reply_missing_or(c, argv[2], "not a bool", false);
        }
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    tjson_doc_w_done(c, argv[1], tmp, dl, last != NULL);
}

CMD_HANDLER(json_clear)
{
    bool err;
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    if (doc == NULL) {
        if (!err) {
            reply_errf(c, TJSON_ERR_NOKEY);
        }
        return;
    }
    /* compiled once the key is found, as RedisJSON 2.x does */
    struct jpath *jp = tjson_path(c, argc > 2 ? argv[2] : tjson_root(c));
    if (jp == NULL) {
        json_destroy(tmp);
        return;
    }
    struct jmatches m = { 0 };
    int64_t n = 0;
    if (!tjson_eval(c, jp, doc, &m)) {
        jmatches_free(&m);
        jpath_destroy(jp);
        tjson_doc_w_done(c, argv[1], tmp, dl, false);
        effect_none(c);
        return;
    }
    /* deepest first: clearing a container frees the matches inside it */
    if (m.n > 1) {
        qsort(m.v, m.n, sizeof(*m.v), tjson_cmp_depth);
    }
    for (size_t i = 0; i < m.n; i++) {
        enum json_type t = json_type(m.v[i].v);
        if (i > 0 && m.v[i - 1].v == m.v[i].v) {
            continue;
        }
        if ((t == JSON_ARR || t == JSON_OBJ) && json_len(m.v[i].v) == 0) {
            continue;
        }
        if (t == JSON_INT && json_int(m.v[i].v) == 0) {
            continue;
        }
        n += json_clear(m.v[i].v);
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    tjson_doc_w_done(c, argv[1], tmp, dl, n > 0);
    if (n == 0) {
        effect_none(c);
    } else {
        ksn_event(c->env, KSN_MODULE, "json.clear", argv[1]);
    }
    reply_int(c, n);
}

/* ------------------------------------------------------------- arrays */

struct arrvals {
    struct json **v;
    int n;
    int64_t index; /* ARRINSERT */
    bool range_err;
};

/* ARRLEN and OBJLEN: the length of a match of the type arg points to. */
static void
op_len(struct json *v, void *arg, struct jres *r, bool *changed)
{
    (void)changed;
    if (json_type(v) == *(const enum json_type *)arg) {
        r->kind = JR_INT;
        r->i = (int64_t)json_len(v);
    }
}

CMD_HANDLER(json_arrlen)
{
    static const struct jspec sp = { "array", false,  false, "not an array",
                                     true,    NK_ERR, NULL,  false };
    static const enum json_type arr = JSON_ARR;
    per_match(c, argv[1], argc > 2 ? argv[2] : tjson_root(c), &sp, op_len, (void *)&arr);
}

static void
op_arrinsert(struct json *v, void *arg, struct jres *r, bool *changed)
{
    struct arrvals *av = arg;
    if (json_type(v) != JSON_ARR) {
        return;
    }
    int64_t len = (int64_t)json_len(v), at = av->index < 0 ? av->index + len : av->index;
    if (at < 0 || at > len) {
        av->range_err = true;
        return;
    }
    struct json **dups = rv_malloc((size_t)av->n * sizeof(*dups));
    for (int i = 0; i < av->n; i++) {
        dups[i] = json_dup(av->v[i]);
    }
    json_arr_insert_many_take(v, (size_t)at, dups, (size_t)av->n);
    rv_free(dups);
    *changed = true;
    r->kind = JR_INT;
    r->i = (int64_t)json_len(v);
}

/* Parses argv[from..argc) as JSON values; false after an error reply. */
static bool
parse_values(struct conn *c, int argc, struct rv_str *argv, int from, struct arrvals *av)
{
    av->n = argc - from;
    av->v = rv_calloc((size_t)av->n, sizeof(*av->v));
    for (int i = 0; i < av->n; i++) {
        if ((av->v[i] = tjson_value(c, argv[from + i])) == NULL) {
            return false;
        }
    }
    return true;
}

static void
free_values(struct arrvals *av)
{
    for (int i = 0; i < av->n; i++) {
        json_destroy(av->v[i]);
    }
    rv_free(av->v);
}

/* The depth the values would reach below the deepest array the path matches. */
static bool
arr_depth_ok(struct conn *c, struct rv_str key, struct rv_str path, const struct arrvals *av)
{
    bool err;
    int vd = 0;
    for (int i = 0; i < av->n; i++) {
        int d = tjson_depth(av->v[i]);
        vd = d > vd ? d : vd;
    }
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, key, &tmp, &dl, &err);
    if (err) {
        return false; /* replied */
    }
    char e[300];
    struct jpath *jp = doc && vd > 0 ? jpath_parse(path.p, path.len, e, sizeof(e)) : NULL;
    if (jp == NULL) {
        json_destroy(tmp);
        return true; /* per_match replies the missing key or the syntax error */
    }
    struct jmatches m = { 0 };
    bool ok = true;
    (void)jpath_eval(jp, doc, &m); /* past the bound: per_match replies it */
    for (size_t i = 0; i < m.n; i++) {
        ok &= m.v[i].depth + 1 + vd <= JSON_MAX_DEPTH;
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(tmp);
    if (!ok) {
        reply_errf(c, TJSON_ERR_DEPTH);
    }
    return ok;
}

static void
op_arrappend_end(struct json *v, void *arg, struct jres *r, bool *changed)
{
    struct arrvals *av = arg;
    av->index = json_type(v) == JSON_ARR ? (int64_t)json_len(v) : 0;
    op_arrinsert(v, arg, r, changed);
}

CMD_HANDLER(json_arrappend)
{
    static const struct jspec sp = { "array",          true, false, "not an array", true, NK_NIL,
                                     "json.arrappend", false };
    struct arrvals av = { 0 };
    if (parse_values(c, argc, argv, 3, &av) && arr_depth_ok(c, argv[1], argv[2], &av)) {
        per_match(c, argv[1], argv[2], &sp, op_arrappend_end, &av);
    }
    free_values(&av);
}

CMD_HANDLER(json_arrinsert)
{
    static const struct jspec sp = { "array",          true, false, "not an array", false, NK_NIL,
                                     "json.arrinsert", false };
    struct arrvals av = { 0 };
    if (!cmd_arg_int(argv[3], &av.index)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!parse_values(c, argc, argv, 4, &av) || !arr_depth_ok(c, argv[1], argv[2], &av)) {
        free_values(&av);
        return;
    }
    /* an index out of range for any matched array fails before any change */
    bool err;
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    char e[300];
    struct jpath *jp = doc ? jpath_parse(argv[2].p, argv[2].len, e, sizeof(e)) : NULL;
    if (jp != NULL) {
        struct jmatches m = { 0 };
        (void)jpath_eval(jp, doc, &m); /* past the bound: per_match replies it */
        for (size_t i = 0; i < m.n; i++) {
            int64_t len = (int64_t)json_len(m.v[i].v);
            int64_t at = av.index < 0 ? av.index + len : av.index;
            av.range_err |= json_type(m.v[i].v) == JSON_ARR && (at < 0 || at > len);
        }
        jmatches_free(&m);
        jpath_destroy(jp);
    }
    json_destroy(tmp); /* per_match decodes a packed document again */
    if (av.range_err) {
        reply_errf(c, "ERR index out of bounds");
    } else if (!err) {
        per_match(c, argv[1], argv[2], &sp, op_arrinsert, &av);
    }
    free_values(&av);
}

struct arrindex {
    struct json *v;
    int64_t start, stop;
};

static void
op_arrindex(struct json *v, void *arg, struct jres *r, bool *changed)
{
    struct arrindex *ai = arg;
    (void)changed;
    if (json_type(v) != JSON_ARR) {
        return;
    }
    int64_t len = (int64_t)json_len(v), a = ai->start, b = ai->stop;
    a = a < 0 ? a + len : a;
    a = a < 0 ? 0 : a;
    /* stop 0 and -1 both mean the end (redis-py sends -1 by default) */
    b = b == 0 || b == -1 ? len : b < 0 ? b + len : b;
    b = b > len ? len : b;
    r->kind = JR_INT;
    r->i = -1;
    for (int64_t i = a; i < b; i++) {
        if (json_equal(json_arr_at(v, (size_t)i), ai->v)) {
            r->i = i;
            break;
        }
    }
}

CMD_HANDLER(json_arrindex)
{
    static const struct jspec sp = { "array", false, false, NULL, false, NK_PATH, NULL, false };
    struct arrindex ai = { NULL, 0, 0 };
    if (argc > 6) {
        reply_err_arity(c, "json.arrindex");
        return;
    }
    if ((argc > 4 && !cmd_arg_int(argv[4], &ai.start)) ||
        (argc > 5 && !cmd_arg_int(argv[5], &ai.stop))) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if ((ai.v = tjson_value(c, argv[3])) == NULL) {
        return;
    }
    per_match(c, argv[1], argv[2], &sp, op_arrindex, &ai);
    json_destroy(ai.v);
}

static void
op_arrpop(struct json *v, void *arg, struct jres *r, bool *changed)
{
    int64_t idx = *(int64_t *)arg;
    if (json_type(v) != JSON_ARR) {
        return;
    }
    int64_t len = (int64_t)json_len(v);
    if (len == 0) {
        r->kind = JR_NULLV;
        return;
    }
    idx = idx < 0 ? idx + len : idx;
    idx = idx < 0 ? 0 : idx >= len ? len - 1 : idx;
    struct json *p = json_arr_take(v, (size_t)idx);
    struct buf b;
    buf_init(&b);
    json_write(&b, p, NULL);
    json_destroy(p);
    r->kind = JR_BULK;
    r->s = rv_malloc(b.len ? b.len : 1);
    memcpy(r->s, b.data, b.len);
    r->n = b.len;
    buf_deinit(&b);
    *changed = true;
}

CMD_HANDLER(json_arrpop)
{
    static const struct jspec sp = { "array", true,   false,         "not an array",
                                     false,   NK_NIL, "json.arrpop", false };
    int64_t idx = -1;
    /* RedisJSON's json_arr_pop: `next_i64().unwrap_or(-1)`, so an index that
     * is not an integer pops the last element */
    if (argc > 3 && !cmd_arg_int(argv[3], &idx)) {
        idx = -1;
    }
    per_match(c, argv[1], argc > 2 ? argv[2] : tjson_root(c), &sp, op_arrpop, &idx);
}

static void
op_arrtrim(struct json *v, void *arg, struct jres *r, bool *changed)
{
    const int64_t *se = arg;
    if (json_type(v) != JSON_ARR) {
        return;
    }
    int64_t len = (int64_t)json_len(v), a = se[0], b = se[1];
    a = a < 0 ? a + len : a;
    b = b < 0 ? b + len : b;
    a = a < 0 ? 0 : a;
    if (len > 0) {
        if (a >= len || a > b || b < 0) {
            json_arr_trim(v, 1, 0);
        } else {
            json_arr_trim(v, (size_t)a, (size_t)(b >= len ? len - 1 : b));
        }
        *changed = true;
    }
    r->kind = JR_INT;
    r->i = (int64_t)json_len(v);
}

CMD_HANDLER(json_arrtrim)
{
    static const struct jspec sp = { "array", true,   false,          "not an array",
                                     false,   NK_NIL, "json.arrtrim", false };
    int64_t se[2];
    if (!cmd_arg_int(argv[3], &se[0]) || !cmd_arg_int(argv[4], &se[1])) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    per_match(c, argv[1], argv[2], &sp, op_arrtrim, se);
}

/* ------------------------------------------------------------- objects */

CMD_HANDLER(json_objlen)
{
    static const struct jspec sp = { "object", false, false, NULL, false, NK_NOT_OBJ, NULL, true };
    static const enum json_type obj = JSON_OBJ;
    per_match(c, argv[1], argc > 2 ? argv[2] : tjson_root(c), &sp, op_len, (void *)&obj);
}

static void
reply_keys(struct conn *c, const struct json *o)
{
    reply_array(c, json_len(o));
    for (size_t k = 0; k < json_len(o); k++) {
        size_t kl;
        const char *key = json_obj_key(o, k, &kl);
        reply_bulk(c, key, kl);
    }
}

CMD_HANDLER(json_objkeys)
{
    struct rv_str path = argc > 2 ? argv[2] : tjson_root(c);
    struct jpath *jp;
    struct jmatches m;
    struct json *tmp;
    if (!tjson_read(c, argv[1], path, &jp, &m, &tmp, TJSON_RD_NOKEY_ERR | TJSON_RD_BADPATH_NIL)) {
        return;
    }
    if (!jpath_legacy(jp)) {
        reply_array(c, m.n);
        for (size_t i = 0; i < m.n; i++) {
            if (json_type(m.v[i].v) == JSON_OBJ) {
                reply_keys(c, m.v[i].v);
            } else {
                reply_null(c);
            }
        }
    } else if (m.n == 0) {
        reply_null(c);
    } else if (json_type(m.v[0].v) != JSON_OBJ) {
        reply_missing_or(c, path, "not an object", false);
    } else {
        reply_keys(c, m.v[0].v);
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(tmp);
}
