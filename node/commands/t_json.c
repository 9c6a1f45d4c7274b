/* node/commands/t_json.c: the JSON.* commands that read or replace values
 * (SET, GET, MGET, DEL, FORGET, MERGE, RESP, DEBUG) and the helpers
 * t_json_ops.c shares (t_json_int.h), with RedisJSON 2.x's replies and
 * errors. The tree is node/types/json.h, paths node/types/json_path.h.
 *
 * Paths: a `$` path replies one result per match (nil where a match has the
 * wrong type); a legacy path replies one result (the last match changed, or
 * the first read) and fails when nothing matches or nothing has the type.
 * Reads on a missing key reply nil; changes fail with TJSON_ERR_NOKEY.
 *
 * Logging (node/core/effect.h): every JSON write is deterministic given the
 * document, so it is logged as its arguments: the key, the path and the new
 * value or operand, never the document. A write that changed nothing is not
 * logged. Checkpoints and DUMP rebuild a document with one JSON.SET key $.
 *
 * Storage: a small document is packed inline in its entry (json_pack.h).
 * JSON.GET/MGET of a plain member path read the bytes; other commands
 * decode a temporary tree, and writes store it again (packed while it fits). */
#include "node/commands/t_json.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/types/json.h"
#include "node/types/json_pack.h"
#include "node/types/json_path.h"
#include "node/commands/t_json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

struct rv_str
tjson_root(const struct conn *c)
{
    /* RedisJSON's default path is the legacy `.` under RESP2 and RESP3 alike
     * (its Path::default; its test_resp3.py test_resp_default_path) */
    (void)c;
    return (struct rv_str){ ".", 1 };
}

/* The JSON entry at key; NULL when missing or (after a WRONGTYPE reply) *err. */
struct ks_entry *
tjson_entry(struct conn *c, struct rv_str key, bool write, bool *err)
{
    struct ks_entry *e = write ? lookup_write(c, key) : lookup_read(c, key);
    *err = false;
    if (e != NULL && ks_entry_type(e) != KS_JSON) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    return e;
}

/* The tree of a packed document; NULL (replied) when its bytes are bad. */
static struct json *
unpack(struct conn *c, const struct ks_entry *e, bool *err)
{
    size_t n;
    const uint8_t *p = ks_inl_val(e, &n);
    struct json *j = jpk_decode(p, n);
    if (j == NULL) {
        reply_errf(c, "ERR corrupt JSON document");
        *err = true;
    }
    return j;
}

struct json *
tjson_doc_w(struct conn *c, struct rv_str key, struct json **tmp, int64_t *expire, bool *err)
{
    struct ks_entry *e = tjson_entry(c, key, true, err);
    *tmp = NULL;
    if (e == NULL) {
        return NULL;
    }
    *expire = ks_entry_expire(e);
    return tjson_doc_of(c, e, tmp, err);
}

void
tjson_doc_w_done(struct conn *c, struct rv_str key, struct json *tmp, int64_t expire, bool changed)
{
    if (tmp != NULL && changed) {
        tjson_store(c, key, tmp, expire);
    } else {
        json_destroy(tmp);
    }
}

struct json *
tjson_doc_of(struct conn *c, struct ks_entry *e, struct json **tmp, bool *err)
{
    *tmp = NULL;
    *err = false;
    if (!ks_entry_inl(e)) {
        return ks_entry_ptr(e);
    }
    return *tmp = unpack(c, e, err);
}

struct json *
tjson_doc_ro(struct conn *c, struct rv_str key, struct json **tmp, bool *err)
{
    struct ks_entry *e = tjson_entry(c, key, false, err);
    *tmp = NULL;
    return e == NULL ? NULL : tjson_doc_of(c, e, tmp, err);
}

void
tjson_store(struct conn *c, struct rv_str key, struct json *v, int64_t expire_ms)
{
    struct buf b;
    uint8_t stack[JPK_MAX_BYTES + 16];
    int64_t lim = c->env->cfg->enc.json_max_packed_bytes;
    size_t max = lim > 0 ? (size_t)lim : 0;
    buf_init(&b);
    if (max <= JPK_MAX_BYTES) {
        /* enc stops once past the limit, so the stack buffer never grows */
        b.data = (char *)stack;
        b.cap = sizeof(stack);
    }
    if (max > 0 && jpk_encode(v, max, &b)) {
        ks_set_inl(c->env->ks, key.p, key.len, KS_JSON, b.data, b.len, expire_ms);
        json_destroy(v);
    } else {
        ks_set_ptr(c->env->ks, key.p, key.len, KS_JSON, v, json_free, expire_ms);
    }
    if (b.data != (char *)stack) {
        buf_deinit(&b);
    }
}

/* A null, in a one-element array under RESP3 with TJSON_RD_RESP3_WRAP. */
static void
reply_nil_in(struct conn *c, unsigned flags)
{
    if ((flags & TJSON_RD_RESP3_WRAP) && c->proto == 3) {
        reply_array(c, 1);
    }
    reply_null(c);
}

bool
tjson_read(struct conn *c, struct rv_str key, struct rv_str path, struct jpath **jp,
           struct jmatches *m, struct json **tmp, unsigned flags)
{
    bool err;
    *jp = NULL;
    /* RedisJSON 2.x opens the key before it compiles the path: a missing
     * key's reply does not depend on the path, even a malformed one */
    struct json *doc = tjson_doc_ro(c, key, tmp, &err);
    if (doc == NULL) {
        if (!err && (flags & TJSON_RD_NOKEY_ERR) && !tjson_legacy_text(path)) {
            reply_errf(c, TJSON_ERR_NOKEY);
        } else if (!err) {
            reply_nil_in(c, flags);
        }
        return false;
    }
    if ((flags & TJSON_RD_BADPATH_NIL) && tjson_legacy_text(path)) {
        char e[JPATH_ERR_SHOW + 200];
        if ((*jp = jpath_parse(path.p, path.len, e, sizeof(e))) == NULL) {
            reply_nil_in(c, flags);
        }
    } else {
        *jp = tjson_path(c, path);
    }
    *m = (struct jmatches){ 0 };
    if (*jp == NULL || !tjson_eval(c, *jp, doc, m)) {
        jmatches_free(m);
        jpath_destroy(*jp);
        json_destroy(*tmp);
        *tmp = NULL;
        return false;
    }
    return true;
}

struct jpath *
tjson_path(struct conn *c, struct rv_str p)
{
    char err[JPATH_ERR_SHOW + 200];
    struct jpath *jp = jpath_parse(p.p, p.len, err, sizeof(err));
    if (jp == NULL) {
        reply_errf(c, "%s", err);
    }
    return jp;
}

bool
tjson_eval(struct conn *c, const struct jpath *jp, struct json *doc, struct jmatches *m)
{
    if (jpath_eval(jp, doc, m)) {
        return true;
    }
    reply_errf(c, JPATH_ERR_WORK);
    return false;
}

struct json *
tjson_value(struct conn *c, struct rv_str v)
{
    char err[200];
    struct json *j = json_parse(v.p, v.len, err, sizeof(err));
    if (j == NULL) {
        /* serde_json's text alone, as RedisJSON replies it (no ERR) */
        reply_errf(c, "%s", err);
    }
    return j;
}

int
tjson_depth(const struct json *j)
{
    enum json_type t = json_type(j);
    int d = 0;
    if (t != JSON_ARR && t != JSON_OBJ) {
        return 0;
    }
    for (size_t i = 0; i < json_len(j); i++) {
        int x = tjson_depth(t == JSON_ARR ? json_arr_at(j, i) : json_obj_val(j, i));
        d = x > d ? x : d;
    }
    return d + 1;
}

void
tjson_reply(struct conn *c, const struct json *j, const struct json_fmt *f)
{
    struct buf b;
    buf_init(&b);
    json_write(&b, j, f);
    reply_bulk(c, b.data, b.len);
    buf_deinit(&b);
}

/* The matches as a JSON array text. */
static void
write_matches(struct buf *b, const struct jmatches *m, const struct json_fmt *f)
{
    if (f == NULL) { /* compact: no wrapper node needed */
        buf_putc(b, '[');
        for (size_t i = 0; i < m->n; i++) {
            if (i > 0) {
                buf_putc(b, ',');
            }
            json_write(b, m->v[i].v, NULL);
        }
        buf_putc(b, ']');
        return;
    }
    struct json *arr = json_new_arr();
    /* borrowed nodes: wrap them, write, then unwrap without freeing */
    for (size_t i = 0; i < m->n; i++) {
        json_arr_insert_take(arr, i, m->v[i].v);
    }
    json_write(b, arr, f);
    while (json_len(arr) > 0) {
        json_arr_take(arr, json_len(arr) - 1);
    }
    json_destroy(arr);
}

void
tjson_reply_missing(struct conn *c, struct rv_str p)
{
    reply_errf(c, "ERR Path '%.*s' does not exist", (int)p.len, p.p);
}

void
tjson_reply_wrong(struct conn *c, const char *expect, const struct json *found)
{
    reply_errf(c, "WRONGTYPE wrong type of path value - expected %s but found %s", expect,
               json_type_name(found));
}

/* Removes the matched nodes from their parents (the root is not among them):
 * deepest first, so a node is never freed before its descendants. */
int
tjson_cmp_depth(const void *a, const void *b)
{
    const struct jmatch *x = a, *y = b;
    if (x->depth != y->depth) {
        return y->depth - x->depth;
    }
    return x->v < y->v ? -1 : x->v > y->v;
}

/* A sorted run of node pointers: the children one parent loses. */
struct ptrset {
    const struct jmatch *v;
    size_t n;
};

static bool
in_ptrset(const struct json *child, void *arg)
{
    const struct ptrset *ps = arg;
    size_t lo = 0, hi = ps->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ps->v[mid].v == child) {
            return true;
        }
        if ((const void *)ps->v[mid].v < (const void *)child) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return false;
}

static int
cmp_depth_parent(const void *a, const void *b)
{
    const struct jmatch *x = a, *y = b;
    if (x->depth != y->depth) {
        return y->depth - x->depth;
    }
    if (x->parent != y->parent) {
        return (const void *)x->parent < (const void *)y->parent ? -1 : 1;
    }
    return x->v < y->v ? -1 : x->v > y->v;
}

/* Removes the matched nodes from their parents (the root is not among them):
 * deepest first, so a node is never freed before its descendants, and each
 * parent in one pass, so removing k of n children costs O(n + k log k). */
static size_t
remove_matches(struct jmatches *m)
{
    size_t n = 0;
    if (m->n > 1) {
        qsort(m->v, m->n, sizeof(*m->v), cmp_depth_parent);
    }
    for (size_t i = 0; i < m->n;) {
        size_t j = i + 1;
        while (j < m->n && m->v[j].parent == m->v[i].parent && m->v[j].depth == m->v[i].depth) {
            j++;
        }
        if (m->v[i].parent != NULL) {
            struct ptrset ps = { m->v + i, j - i };
            n += json_remove_children(m->v[i].parent, in_ptrset, &ps);
        }
        i = j;
    }
    return n;
}

/* ------------------------------------------------------------- JSON.SET */

int
tjson_set_plan(struct conn *c, struct json *doc, const struct jpath *jp, bool nx, bool xx,
               struct jmatches *m, const char **k, size_t *kl)
{
    *m = (struct jmatches){ 0 };
    if (!tjson_eval(c, jp, doc, m)) {
        return -1;
    }
    if (m->n > 0 && !nx) {
        return TJSON_SET_REPLACE;
    }
    if (xx) {
        return TJSON_SET_NONE;
    }
    /* RedisJSON's find_add_paths: a value is added only through a static
     * path, even under NX where the path matched */
    if (!jpath_static(jp)) {
        reply_errf(c, TJSON_ERR_STATIC);
        return -1;
    }
    if (m->n > 0) {
        return TJSON_SET_NONE; /* NX: the one place it names exists */
    }
    if (jpath_ends_in_index(jp)) {
        reply_errf(c, TJSON_ERR_INDEX);
        return -1;
    }
    jmatches_reset(m);
    return jpath_eval_parents(jp, doc, m, k, kl) ? TJSON_SET_ADD : TJSON_SET_NONE;
}

/* Sets jp to v in doc (v is consumed). 1 done, 0 nothing matched (the nil
 * reply), -1 error replied. */
int
tjson_set_at(struct conn *c, struct json *doc, struct jpath *jp, struct json *v, bool nx, bool xx)
{
    struct jmatches m;
    const char *k = NULL;
    size_t kl = 0;
    int rc = 0, vd = tjson_depth(v);
    int plan = tjson_set_plan(c, doc, jp, nx, xx, &m, &k, &kl);
    if (plan < 0) {
        rc = -1;
    } else if (plan == TJSON_SET_REPLACE) {
        for (size_t i = 0; i < m.n && rc >= 0; i++) {
            if (m.v[i].depth + vd > JSON_MAX_DEPTH) {
                reply_errf(c, TJSON_ERR_DEPTH);
                rc = -1;
            }
        }
        for (size_t i = 0; i < m.n && rc >= 0; i++) {
            json_assign_take(m.v[i].v, i + 1 == m.n ? v : json_dup(v));
            rc = 1;
        }
        v = rc == 1 ? NULL : v;
    } else if (plan == TJSON_SET_ADD) {
        size_t used = 0;
        for (size_t i = 0; i < m.n; i++) {
            if (json_type(m.v[i].v) == JSON_OBJ && m.v[i].depth + 1 + vd <= JSON_MAX_DEPTH) {
                used++;
            }
        }
        for (size_t i = 0; i < m.n; i++) {
            if (json_type(m.v[i].v) == JSON_OBJ && m.v[i].depth + 1 + vd <= JSON_MAX_DEPTH) {
                json_obj_set_take(m.v[i].v, k, kl, --used == 0 ? v : json_dup(v));
                rc = 1;
            }
        }
        v = rc == 1 ? NULL : v;
    }
    json_destroy(v);
    jmatches_free(&m);
    return rc;
}

struct set_opts {
    bool nx, xx;
};

/* FORMAT's argument at argv[*i + 1] (*i moves to it): JSON only. */
static bool
parse_format(struct conn *c, int argc, struct rv_str *argv, int *i, const char *cmd)
{
    if (++*i == argc) {
        reply_err_arity(c, cmd);
        return false;
    }
    if (!(argv[*i].len == 4 && memcmp(argv[*i].p, "JSON", 4) == 0)) {
        reply_errf(c, "ERR wrong format %.*s", (int)argv[*i].len, argv[*i].p);
        return false;
    }
    return true;
}

/* JSON.SET's options as RedisJSON 2.x's json_set reads them, before the key
 * is looked at: one of NX or XX (a second one, even the same, is a syntax
 * error) and FORMAT <fmt>, of which Ruvio takes JSON only (RedisJSON's name
 * is case-sensitive; it also decodes BSON, which Ruvio refuses as unknown). */
static bool
parse_nx_xx(struct conn *c, int argc, struct rv_str *argv, int from, struct set_opts *o)
{
    o->nx = o->xx = false;
    for (int i = from; i < argc; i++) {
        if (cmd_arg_is(argv[i], "nx") && !o->nx && !o->xx) {
            o->nx = true;
        } else if (cmd_arg_is(argv[i], "xx") && !o->nx && !o->xx) {
            o->xx = true;
        } else if (cmd_arg_is(argv[i], "format")) {
            if (!parse_format(c, argc, argv, &i, "json.set")) {
                return false;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

CMD_HANDLER(json_set)
{
    struct set_opts o;
    bool err;
    if (!parse_nx_xx(c, argc, argv, 4, &o)) {
        return;
    }
    /* RedisJSON 2.x's order: the key's type, the value, then (a missing key)
     * the root check before the path is compiled, (an existing one) the path */
    struct ks_entry *e = tjson_entry(c, argv[1], true, &err);
    if (err) {
        return;
    }
    struct json *v = tjson_value(c, argv[3]);
    if (v == NULL) {
        return;
    }
    char perr[JPATH_ERR_SHOW + 200];
    struct jpath *jp = jpath_parse(argv[2].p, argv[2].len, perr, sizeof(perr));
    int rc = 0;
    if (e == NULL && o.xx) {
        json_destroy(v);
    } else if (e == NULL && (jp == NULL || !jpath_is_root(jp))) {
        reply_errf(c, TJSON_ERR_ROOT);
        json_destroy(v);
        rc = -1;
    } else if (jp == NULL) {
        reply_errf(c, "%s", perr);
        json_destroy(v);
        rc = -1;
    } else if (jpath_is_root(jp)) {
        /* the whole document: stored anew (packed when small), deadline kept */
        if (e == NULL ? o.xx : o.nx) {
            json_destroy(v);
        } else {
            tjson_store(c, argv[1], v, e ? ks_entry_expire(e) : KS_NO_EXPIRE);
            rc = 1;
        }
    } else if (ks_entry_inl(e)) {
        /* a small document stays packed: decode, set, store again (O(its
         * bytes), at most json-max-packed-bytes; a tree if it grew past them) */
        int64_t dl = ks_entry_expire(e);
        struct json *tmp, *doc = tjson_doc_of(c, e, &tmp, &err);
        rc = doc == NULL ? -1 : tjson_set_at(c, doc, jp, v, o.nx, o.xx);
        if (doc == NULL) {
            json_destroy(v);
        } else if (rc == 1) {
            tjson_store(c, argv[1], tmp, dl);
        } else {
            json_destroy(tmp);
        }
    } else {
        rc = tjson_set_at(c, ks_entry_ptr(e), jp, v, o.nx, o.xx);
    }
    jpath_destroy(jp);
    if (rc == 1) {
        ksn_event(c->env, KSN_MODULE, "json.set", argv[1]);
        reply_ok(c);
    } else if (rc == 0) {
        reply_null(c);
        effect_none(c);
    }
}

/* ------------------------------------------------------------- JSON.GET */

/* Parses INDENT/NEWLINE/SPACE (anywhere); the paths are what is left. */
static int
get_opts(struct conn *c, int argc, struct rv_str *argv, struct json_fmt *f, struct rv_str *paths)
{
    int np = 0;
    memset(f, 0, sizeof(*f));
    f->indent = f->newline = f->space = "";
    for (int i = 2; i < argc; i++) {
        const char **s = NULL;
        size_t *l = NULL;
        if (cmd_arg_is(argv[i], "indent")) {
            s = &f->indent, l = &f->ilen;
        } else if (cmd_arg_is(argv[i], "newline")) {
            s = &f->newline, l = &f->nlen;
        } else if (cmd_arg_is(argv[i], "space")) {
            s = &f->space, l = &f->slen;
        } else if (cmd_arg_is(argv[i], "noescape")) {
            continue;
        }
        if (s != NULL) {
            if (i + 1 >= argc) {
                /* RedisJSON's json_get: next_str() on no argument is WrongArity */
                reply_err_arity(c, "json.get");
                return -1;
            }
            *s = argv[i + 1].p;
            *l = argv[i + 1].len;
            i++;
        } else {
            paths[np++] = argv[i];
        }
    }
    return np;
}

/* Appends one path's result for JSON.GET: 1, or 0 when a legacy path
 * missed, -1 when evaluation went past its bound. */
static int
get_one(struct buf *b, struct json *doc, struct jpath *jp, bool as_arrays, const struct json_fmt *f,
        int level)
{
    struct jmatches m = { 0 };
    int ok = jpath_eval(jp, doc, &m) ? 1 : -1;
    (void)level;
    if (ok < 0) {
        /* nothing to write */
    } else if (as_arrays) {
        write_matches(b, &m, f);
    } else if (m.n == 0) {
        ok = 0;
    } else {
        json_write(b, m.v[0].v, f);
    }
    jmatches_free(&m);
    return ok;
}

/* A path of plain member names ($, $.a.b, ., .a.b, a.b): a read walks it
 * without compiling it. Names of ASCII letters, digits and '_' not starting
 * with a digit, as the general parser reads them. */
#define SPATH_MAX 8
struct spath {
    bool legacy;
    int n;
    struct rv_str k[SPATH_MAX];
};

static bool
simple_path(struct rv_str p, struct spath *sp)
{
    size_t i = 0;
    sp->n = 0;
    sp->legacy = p.len == 0 || p.p[0] != '$';
    if (p.len == 0 || (sp->legacy && p.len == 1 && p.p[0] == '.')) {
        return p.len == 1; /* "" is left to the parser */
    }
    i = sp->legacy ? (p.p[0] == '.' ? 0 : SIZE_MAX) : 1;
    while (i == SIZE_MAX || i < p.len) {
        if (i != SIZE_MAX && p.p[i] != '.') {
            return false;
        }
        size_t b = i == SIZE_MAX ? 0 : i + 1, e = b;
        while (e < p.len &&
               (p.p[e] == '_' || (p.p[e] >= 'a' && p.p[e] <= 'z') ||
                (p.p[e] >= 'A' && p.p[e] <= 'Z') || (e > b && p.p[e] >= '0' && p.p[e] <= '9'))) {
            e++;
        }
        if (e == b || sp->n == SPATH_MAX) {
            return false;
        }
        sp->k[sp->n++] = (struct rv_str){ p.p + b, e - b };
        i = e;
    }
    return true;
}

/* Replies the value at sp in the document of e (compact; `[v]` for a `$`
 * path). false, with nothing replied, when the general code must answer: a
 * member is missing or a step meets something other than an object. */
static bool
reply_simple_path(struct conn *c, const struct ks_entry *e, const struct spath *sp)
{
    const uint8_t *p = NULL;
    size_t n = 0;
    const struct json *j = NULL;
    if (ks_entry_inl(e)) {
        p = ks_inl_val(e, &n);
        for (int i = 0; i < sp->n; i++) {
            if (!jpk_member(&p, &n, sp->k[i].p, sp->k[i].len)) {
                return false;
            }
        }
    } else {
        j = ks_entry_ptr(e);
        for (int i = 0; i < sp->n && j != NULL; i++) {
            j = json_type(j) == JSON_OBJ ? json_obj_get(j, sp->k[i].p, sp->k[i].len) : NULL;
        }
        if (j == NULL) {
            return false;
        }
    }
    /* a packed value's text is at most 10x its bytes (a 2-byte integer:
     * 20 digits): small ones are written on the stack, no allocation */
    char stack[320];
    struct buf b;
    buf_init(&b);
    if (p != NULL && 10 * n + 2 <= sizeof(stack)) {
        b.data = stack;
        b.cap = sizeof(stack);
    }
    bool ok = true;
    if (!sp->legacy) {
        buf_putc(&b, '[');
    }
    if (p != NULL) {
        ok = jpk_write(&b, p, n);
    } else {
        json_write(&b, j, NULL);
    }
    if (!sp->legacy) {
        buf_putc(&b, ']');
    }
    if (ok) {
        reply_bulk(c, b.data, b.len);
    }
    if (b.data != stack) {
        buf_deinit(&b);
    }
    return ok;
}

/* JSON.GET key [path] with one simple path and no format: replies and
 * returns true, or leaves *e (looked up when *looked) to the general code. */
static bool
get_simple(struct conn *c, int argc, struct rv_str *argv, struct ks_entry **e, bool *looked)
{
    struct spath sp;
    struct rv_str path = argc > 2 ? argv[2] : tjson_root(c);
    bool err;
    *looked = false;
    if (argc > 3 || cmd_arg_is(path, "indent") || cmd_arg_is(path, "newline") ||
        cmd_arg_is(path, "space") || cmd_arg_is(path, "noescape") || !simple_path(path, &sp)) {
        return false;
    }
    *e = tjson_entry(c, argv[1], false, &err);
    *looked = true;
    if (err || *e == NULL) {
        if (!err) {
            reply_null(c);
        }
        return true;
    }
    return reply_simple_path(c, *e, &sp);
}

CMD_HANDLER(json_get)
{
    struct ks_entry *e = NULL;
    struct json *tmp = NULL, *doc = NULL;
    bool looked;
    if (get_simple(c, argc, argv, &e, &looked)) {
        return;
    }
    struct json_fmt f;
    /* the common call has a path or two: no allocation for the lists then */
    struct rv_str paths_s[8];
    struct jpath *jp_s[8] = { 0 };
    bool small = argc <= 8;
    struct rv_str *paths = small ? paths_s : rv_malloc((size_t)argc * sizeof(*paths));
    struct jpath **jp = small ? jp_s : rv_calloc((size_t)argc, sizeof(*jp));
    struct buf b;
    bool err, any_new = false;
    int np = get_opts(c, argc, argv, &f, paths);
    buf_init(&b);
    if (np < 0) {
        goto done;
    }
    if (np == 0) {
        paths[np++] = tjson_root(c);
    }
    /* RedisJSON 2.x opens the key before it reads the paths: a missing key
     * is nil whatever they are, even malformed */
    err = false;
    if (!looked) {
        e = tjson_entry(c, argv[1], false, &err);
    }
    if (e != NULL) {
        doc = tjson_doc_of(c, e, &tmp, &err);
    }
    if (doc == NULL) {
        if (!err) {
            reply_null(c);
        }
        goto done;
    }
    for (int i = 0; i < np; i++) {
        any_new |= !tjson_legacy_text(paths[i]);
    }
    if (np == 1 && (jp[0] = tjson_path(c, paths[0])) == NULL) {
        goto done;
    }
    const struct json_fmt *fp = f.ilen || f.nlen || f.slen ? &f : NULL;
    if (np == 1) {
        int rc = get_one(&b, doc, jp[0], any_new, fp, 0);
        if (rc <= 0) {
            if (rc == 0) {
                tjson_reply_missing(c, paths[0]);
            } else {
                reply_errf(c, JPATH_ERR_WORK);
            }
            goto done;
        }
        reply_bulk(c, b.data, b.len);
        goto done;
    }
    /* several paths: an object keyed by path (as RedisJSON, built as a
     * tree); a path that does not compile is left out, as RedisJSON's
     * to_json_multi skips it (the others still decide legacy or `$`) */
    struct json *obj = json_new_obj();
    for (int i = 0; i < np; i++) {
        struct jmatches m = { 0 };
        struct json *v;
        char perr[JPATH_ERR_SHOW + 200];
        if ((jp[i] = jpath_parse(paths[i].p, paths[i].len, perr, sizeof(perr))) == NULL) {
            continue;
        }
        if (!tjson_eval(c, jp[i], doc, &m)) {
            jmatches_free(&m);
            json_destroy(obj);
            goto done;
        } else if (any_new) {
            v = json_new_arr();
            for (size_t k = 0; k < m.n; k++) {
                json_arr_insert_take(v, k, json_dup(m.v[k].v));
            }
        } else if (m.n > 0) {
            v = json_dup(m.v[0].v);
        } else {
            jmatches_free(&m);
            json_destroy(obj);
            tjson_reply_missing(c, paths[i]);
            goto done;
        }
        jmatches_free(&m);
        json_obj_set_take(obj, paths[i].p, paths[i].len, v);
    }
    json_write(&b, obj, fp);
    json_destroy(obj);
    reply_bulk(c, b.data, b.len);
done:
    for (int i = 0; i < argc; i++) {
        jpath_destroy(jp[i]);
    }
    if (!small) {
        rv_free(jp);
        rv_free(paths);
    }
    buf_deinit(&b);
    json_destroy(tmp);
}

CMD_HANDLER(json_mget)
{
    /* compiled at the first JSON key: RedisJSON 2.x replies nil for every
     * key whose path fails (a missing key, another type, a malformed path,
     * a legacy path matching nothing), never an error for the command */
    struct jpath *jp = NULL;
    bool bad = false;
    struct spath sp;
    bool simple = simple_path(argv[argc - 1], &sp);
    reply_array(c, (size_t)argc - 2);
    for (int i = 1; i < argc - 1; i++) {
        struct ks_entry *e = lookup_read(c, argv[i]);
        struct json *tmp, *doc;
        bool err;
        if (e == NULL || ks_entry_type(e) != KS_JSON) {
            reply_null(c);
            continue;
        }
        if ((simple && reply_simple_path(c, e, &sp)) ||
            (doc = tjson_doc_of(c, e, &tmp, &err)) == NULL) {
            continue; /* replied: the value, or a corrupt document's error */
        }
        if (jp == NULL && !bad) {
            char perr[JPATH_ERR_SHOW + 200];
            jp = jpath_parse(argv[argc - 1].p, argv[argc - 1].len, perr, sizeof(perr));
            bad = jp == NULL;
        }
        if (bad) {
            reply_null(c);
            json_destroy(tmp);
            continue;
        }
        struct jmatches m = { 0 };
        if (!tjson_eval(c, jp, doc, &m)) {
            /* this key's entry is the error; the others still reply */
        } else if (!jpath_legacy(jp)) {
            struct buf b;
            buf_init(&b);
            write_matches(&b, &m, NULL);
            reply_bulk(c, b.data, b.len);
            buf_deinit(&b);
        } else if (m.n > 0) {
            tjson_reply(c, m.v[0].v, NULL);
        } else {
            reply_null(c);
        }
        jmatches_free(&m);
        json_destroy(tmp);
    }
    jpath_destroy(jp);
}

/* ------------------------------------------------------- DEL, FORGET */

CMD_HANDLER(json_del)
{
    bool err;
    struct json *tmp;
    int64_t dl;
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    struct jpath *jp = NULL;
    size_t n = 0;
    /* the key before the path (RedisJSON 2.x): a missing key deletes
     * nothing, whatever the path */
    if (doc != NULL && (jp = tjson_path(c, argc > 2 ? argv[2] : tjson_root(c))) == NULL) {
        json_destroy(tmp);
        return;
    }
    if (doc != NULL) {
        if (jpath_is_root(jp)) {
            json_destroy(tmp);
            ks_delete(c->env->ks, argv[1].p, argv[1].len);
            n = 1;
        } else {
            struct jmatches m = { 0 };
            err = !tjson_eval(c, jp, doc, &m);
            n = err ? 0 : remove_matches(&m);
            jmatches_free(&m);
            tjson_doc_w_done(c, argv[1], tmp, dl, n > 0);
        }
    }
    jpath_destroy(jp);
    if (!err) {
        if (n == 0) {
            effect_none(c);
        } else {
            ksn_event(c->env, KSN_MODULE, "json.del", argv[1]);
        }
        reply_int(c, (int64_t)n);
    }
}

/* ------------------------------------------------------------- MERGE */

/* RFC 7386 on target (patch is borrowed): cost follows the patch. */
static void
merge_patch(struct json *target, const struct json *patch)
{
    if (json_type(patch) != JSON_OBJ) {
        json_assign_take(target, json_dup(patch));
        return;
    }
    if (json_type(target) != JSON_OBJ) {
        json_assign_take(target, json_new_obj());
    }
    /* deletions first, in one pass over the target (a patch deleting many
     * members of a large object costs the object once, not once per member) */
    struct jmatches del = { 0 };
    for (size_t i = 0; i < json_len(patch); i++) {
        size_t kl;
        const char *k = json_obj_key(patch, i, &kl);
        struct json *old;
        if (json_type(json_obj_val(patch, i)) == JSON_NULL &&
            (old = json_obj_get(target, k, kl)) != NULL) {
            if (del.n == del.cap) {
                del.cap = del.cap ? 2 * del.cap : 8;
                del.v = rv_realloc(del.v, del.cap * sizeof(*del.v));
            }
            del.v[del.n++] = (struct jmatch){ old, target, 0 };
        }
    }
    if (del.n > 0) {
        qsort(del.v, del.n, sizeof(*del.v), cmp_depth_parent);
        struct ptrset ps = { del.v, del.n };
        json_remove_children(target, in_ptrset, &ps);
    }
    jmatches_free(&del);
    for (size_t i = 0; i < json_len(patch); i++) {
        size_t kl;
        const char *k = json_obj_key(patch, i, &kl);
        const struct json *pv = json_obj_val(patch, i);
        ptrdiff_t at = json_obj_find(target, k, kl);
        if (json_type(pv) == JSON_NULL) {
            continue;
        } else if (at >= 0) {
            merge_patch(json_obj_val(target, (size_t)at), pv);
        } else {
            struct json *nv = json_new_null();
            merge_patch(nv, pv);
            json_obj_set_take(target, k, kl, nv);
        }
    }
}

CMD_HANDLER(json_merge)
{
    bool err;
    struct jpath *jp = NULL;
    struct json *patch = NULL, *tmp = NULL;
    int64_t dl = 0;
    bool changed = false;
    /* RedisJSON 2.x's json_merge reads its options first (FORMAT, anything
     * else a syntax error), then the key's type, the value, then on a
     * missing key the root check (the path is not compiled), on an existing
     * one the path */
    for (int i = 4; i < argc; i++) {
        if (!cmd_arg_is(argv[i], "format")) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (!parse_format(c, argc, argv, &i, "json.merge")) {
            return;
        }
    }
    struct json *doc = tjson_doc_w(c, argv[1], &tmp, &dl, &err);
    if (err || (patch = tjson_value(c, argv[3])) == NULL) {
        goto done;
    }
    if (doc != NULL && (jp = tjson_path(c, argv[2])) == NULL) {
        goto done;
    }
    if (doc == NULL) {
        if (!tjson_root_text(argv[2])) {
            reply_errf(c, TJSON_ERR_ROOT);
        } else {
            struct json *nv = json_new_null();
            merge_patch(nv, patch);
            tjson_store(c, argv[1], nv, KS_NO_EXPIRE);
            ksn_event(c->env, KSN_MODULE, "json.merge", argv[1]);
            reply_ok(c);
        }
        goto done;
    }
    struct jmatches m = { 0 };
    int vd = tjson_depth(patch);
    bool ok = tjson_eval(c, jp, doc, &m);
    for (size_t i = 0; i < m.n; i++) {
        ok &= m.v[i].depth + vd <= JSON_MAX_DEPTH;
    }
    if (!ok) {
        if (m.n > 0) {
            reply_errf(c, TJSON_ERR_DEPTH);
        }
    } else if (m.n > 0) {
        for (size_t i = 0; i < m.n; i++) {
            merge_patch(m.v[i].v, patch);
        }
        changed = true;
        reply_ok(c);
    } else {
        /* a missing member whose parent exists is set, as JSON.SET (a null
         * too: RedisJSON adds it as the value, merging into nothing) */
        int rc = tjson_set_at(c, doc, jp, json_dup(patch), false, false);
        if (rc == 0) {
            /* json_merge: nil when find_paths left nothing to change */
            effect_none(c);
            reply_null(c);
        } else if (rc == 1) {
            changed = true;
            reply_ok(c);
        }
    }
    jmatches_free(&m);
    tjson_doc_w_done(c, argv[1], tmp, dl, changed);
    tmp = NULL;
    if (changed) {
        ksn_event(c->env, KSN_MODULE, "json.merge", argv[1]);
    }
done:
    json_destroy(tmp);
    json_destroy(patch);
    jpath_destroy(jp);
}

/* ------------------------------------------------------ RESP and DEBUG */

static void
reply_resp(struct conn *c, const struct json *j)
{
    char num[40];
    switch (json_type(j)) {
    case JSON_NULL: reply_null(c); return;
    case JSON_BOOL: reply_simple(c, json_bool(j) ? "true" : "false"); return;
    case JSON_INT:
        if (json_int_unsigned(j)) {
            reply_bulk(c, num,
                       (size_t)snprintf(num, sizeof(num), "%llu",
                                        (unsigned long long)json_uint(j)));
        } else {
            reply_int(c, json_int(j));
        }
        return;
    /* RedisJSON replies RedisValue::Float, which redis-module-rs sends with
     * RedisModule_ReplyWithDouble: Redis's double reply (RESP2 a bulk string
     * of "%.17g", RESP3 a double), not the document's text of the number */
    case JSON_DOUBLE: reply_double(c, json_double(j)); return;
    case JSON_STR: {
        size_t n;
        const char *s = json_str(j, &n);
        reply_bulk(c, s, n);
        return;
    }
    case JSON_ARR:
        reply_array(c, json_len(j) + 1);
        reply_simple(c, "[");
        for (size_t i = 0; i < json_len(j); i++) {
            reply_resp(c, json_arr_at(j, i));
        }
        return;
    case JSON_OBJ:
        reply_array(c, 2 * json_len(j) + 1);
        reply_simple(c, "{");
        for (size_t i = 0; i < json_len(j); i++) {
            size_t kl;
            const char *k = json_obj_key(j, i, &kl);
            reply_bulk(c, k, kl);
            reply_resp(c, json_obj_val(j, i));
        }
        return;
    }
}

CMD_HANDLER(json_resp)
{
    struct rv_str path = argc > 2 ? argv[2] : tjson_root(c);
    struct jpath *jp;
    struct jmatches m;
    struct json *tmp;
    if (!tjson_read(c, argv[1], path, &jp, &m, &tmp, 0)) {
        return;
    }
    if (!jpath_legacy(jp)) {
        reply_array(c, m.n);
        for (size_t i = 0; i < m.n; i++) {
            reply_resp(c, m.v[i].v);
        }
    } else if (m.n == 0) {
        tjson_reply_missing(c, path);
    } else {
        reply_resp(c, m.v[0].v);
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(tmp);
}

/* What a value takes in its document's form: its packed bytes in a packed
 * document, its nodes' allocations in a tree. */
static size_t
value_mem(const struct json *v, bool packed)
{
    if (!packed) {
        return json_mem(v);
    }
    struct buf b;
    buf_init(&b);
    jpk_encode(v, SIZE_MAX - 64, &b);
    size_t n = b.len;
    buf_deinit(&b);
    return n;
}

CMD_HANDLER(json_debug_memory)
{
    bool err;
    struct rv_str path = argc > 3 ? argv[3] : tjson_root(c);
    struct json *tmp;
    struct json *doc = tjson_doc_ro(c, argv[2], &tmp, &err);
    if (doc == NULL) {
        /* before the path is compiled, as RedisJSON 2.x */
        if (!err && tjson_legacy_text(path)) {
            reply_int(c, 0);
        } else if (!err) {
            reply_array(c, 0);
        }
        return;
    }
    struct jpath *jp = tjson_path(c, path);
    if (jp == NULL) {
        json_destroy(tmp);
        return;
    }
    struct jmatches m = { 0 };
    if (!tjson_eval(c, jp, doc, &m)) {
        /* replied */
    } else if (!jpath_legacy(jp)) {
        reply_array(c, m.n);
        for (size_t i = 0; i < m.n; i++) {
            reply_int(c, (int64_t)value_mem(m.v[i].v, tmp != NULL));
        }
    } else {
        reply_int(c, m.n ? (int64_t)value_mem(m.v[0].v, tmp != NULL) : 0);
    }
    jmatches_free(&m);
    jpath_destroy(jp);
    json_destroy(tmp);
}

CMD_HANDLER(json_debug_help)
{
    (void)argc, (void)argv;
    reply_array(c, 2);
    reply_bulk_cstr(c, "MEMORY <key> [path] - reports memory usage");
    reply_bulk_cstr(c, "HELP                - this message");
}

CMD_HANDLER(json_debug)
{
    (void)argc, (void)argv;
    reply_errf(c, "ERR unknown subcommand - try `JSON.DEBUG HELP`");
}
