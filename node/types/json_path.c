/* node/types/json_path.c: JSONPath and legacy paths (node/types/json_path.h).
 *
 * A path compiles to a vector of steps; a filter compiles to an expression
 * tree whose operands are relative (`@`) or absolute (`$`) paths or
 * literals. Regexes (`=~`) are POSIX extended expressions, compiled once when
 * the pattern is a literal. */
#include "node/types/json_path.h"

#include "base/mem.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum step_kind { ST_KEY, ST_WILD, ST_UNION, ST_SLICE, ST_FILTER };

struct uitem {
    bool is_key;
    int64_t idx;
    char *key;
    size_t klen;
};

struct fexpr;

struct step {
    enum step_kind kind;
    bool descend; /* `..` before it */
    char *key;    /* ST_KEY */
    size_t klen;
    struct uitem *items; /* ST_UNION */
    int nitems;
    int64_t sl[3]; /* ST_SLICE: start, stop, step */
    bool has[3];
    struct fexpr *filter; /* ST_FILTER */
};

struct jpath {
    bool legacy;
    int n, cap;
    struct step *st;
};

enum fx_kind { FX_OR, FX_AND, FX_NOT, FX_CMP, FX_EXISTS };
enum fx_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_RE };

struct operand {
    struct jpath *path; /* NULL for a literal */
    bool absolute;
    struct json *lit;
};

struct fexpr {
    enum fx_kind kind;
    enum fx_op op;
    struct fexpr *l, *r; /* OR, AND, NOT (l) */
    struct operand a, b; /* CMP: a op b; EXISTS: a */
    regex_t re;
    bool re_ok;
};

/* What a syntax error names as expected: the tokens RedisJSON's pest
 * grammar reports at that point (jpath_parse). */
enum jp_expect {
    JPE_NONE,    /* no list ("parsing error"): inside filters */
    JPE_NAME,    /* after `.` or `..` */
    JPE_BRACKET, /* after `[` */
    JPE_NUMBER,  /* after `,` in an index list */
    JPE_END,     /* after a step: the end or another step */
    JPE_ROOT,    /* right after `$` */
};

struct pp {
    const char *p, *end;
    bool bad;
    const char *err_at; /* the first (innermost) failure recorded */
    enum jp_expect err_what;
};

/* Records where parsing failed and what was expected there (the innermost
 * record wins); returns false for the caller to return. */
static bool
fail_at(struct pp *s, const char *at, enum jp_expect what)
{
    if (s->err_at == NULL) {
        s->err_at = at;
        s->err_what = what;
    }
    return false;
}

/* ------------------------------------------------------------- freeing */

static void fexpr_free(struct fexpr *f);

static void
steps_free(struct jpath *jp)
{
    for (int i = 0; i < jp->n; i++) {
        struct step *s = &jp->st[i];
        rv_free(s->key);
        for (int k = 0; k < s->nitems; k++) {
            rv_free(s->items[k].key);
        }
        rv_free(s->items);
        fexpr_free(s->filter);
    }
    rv_free(jp->st);
}

void
jpath_destroy(struct jpath *jp)
{
    if (jp != NULL) {
        steps_free(jp);
        rv_free(jp);
    }
}

static void
operand_free(struct operand *o)
{
    jpath_destroy(o->path);
    json_destroy(o->lit);
}

static void
fexpr_free(struct fexpr *f)
{
    if (f == NULL) {
        return;
    }
    fexpr_free(f->l);
    fexpr_free(f->r);
    operand_free(&f->a);
    operand_free(&f->b);
    if (f->re_ok) {
        regfree(&f->re);
    }
    rv_free(f);
}

/* ------------------------------------------------------------- parsing */

static void
ws(struct pp *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t')) {
        s->p++;
    }
}

static bool
peek(struct pp *s, char c)
{
    return s->p < s->end && *s->p == c;
}

static bool
eat(struct pp *s, char c)
{
    if (peek(s, c)) {
        s->p++;
        return true;
    }
    return false;
}

static struct step *
push_step(struct jpath *jp)
{
    if (jp->n == jp->cap) {
        jp->cap = jp->cap ? jp->cap * 2 : 4;
        jp->st = rv_realloc(jp->st, (size_t)jp->cap * sizeof(*jp->st));
    }
    struct step *st = &jp->st[jp->n++];
    memset(st, 0, sizeof(*st));
    return st;
}

/* A dotted name: up to a character that ends a step or an expression. */
static bool
parse_name(struct pp *s, char **k, size_t *kn)
{
    const char *b = s->p;
    while (s->p < s->end && strchr(".[]()&|=<>!, \t'\"", *s->p) == NULL) {
        s->p++;
    }
    if (s->p == b) {
        return false;
    }
    *kn = (size_t)(s->p - b);
    *k = rv_strndup(b, *kn);
    return true;
}

/* A quoted key, 'x' or "x", with backslash escapes of the quote and of backslash. */
static bool
parse_quoted(struct pp *s, char **k, size_t *kn)
{
    char q = *s->p++;
    struct buf b;
    buf_init(&b);
    while (s->p < s->end && *s->p != q) {
        if (*s->p == '\\' && s->p + 1 < s->end) {
            s->p++;
        }
        buf_putc(&b, *s->p++);
    }
    if (!eat(s, q)) {
        buf_deinit(&b);
        return false;
    }
    *kn = b.len;
    *k = rv_strndup(b.data ? b.data : "", b.len);
    buf_deinit(&b);
    return true;
}

static bool
parse_int(struct pp *s, int64_t *v)
{
    const char *b = s->p;
    if (peek(s, '-') || peek(s, '+')) {
        s->p++;
    }
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        s->p++;
    }
    size_t n = (size_t)(s->p - b);
    if (n == 0 || n > 19 || (n == 1 && (*b == '-' || *b == '+'))) {
        return false;
    }
    char tmp[24];
    memcpy(tmp, b, n);
    tmp[n] = '\0';
    *v = strtoll(tmp, NULL, 10);
    return true;
}

static struct fexpr *parse_or(struct pp *s, int depth);

static bool parse_bracket_in(struct pp *s, struct step *st, int depth);

/* After `[`. A failure inside is reported as RedisJSON does: at the `[`
 * with the bracket's forms (pest reports where the alternatives started),
 * or at a missing index after `,`; inside a filter, where it stopped. */
static bool
parse_bracket(struct pp *s, struct step *st, int depth)
{
    const char *open = s->p;
    if (parse_bracket_in(s, st, depth)) {
        return true;
    }
    return fail_at(s, st->kind == ST_FILTER ? s->p : open,
                   st->kind == ST_FILTER ? JPE_NONE : JPE_BRACKET);
}

static bool
parse_bracket_in(struct pp *s, struct step *st, int depth)
{
    ws(s);
    if (eat(s, '*')) {
        st->kind = ST_WILD;
    } else if (eat(s, '?')) {
        /* `?` and a filter expression, as RedisJSON's grammar has it: the
         * usual `?(...)` is a parenthesized one, `?@.a > 1` is also valid */
        st->kind = ST_FILTER;
        st->filter = parse_or(s, depth + 1);
        if (st->filter == NULL) {
            return false;
        }
    } else {
        /* a union of keys and indexes, or one slice */
        st->kind = ST_UNION;
        for (;;) {
            struct uitem it = { 0 };
            ws(s);
            if (peek(s, '\'') || peek(s, '"')) {
                it.is_key = true;
                if (!parse_quoted(s, &it.key, &it.klen)) {
                    return false;
                }
            } else {
                bool got = parse_int(s, &it.idx);
                ws(s);
                if (peek(s, ':') && st->nitems == 0) {
                    st->kind = ST_SLICE;
                    st->has[0] = got;
                    st->sl[0] = it.idx;
                    for (int part = 1; part < 3 && eat(s, ':'); part++) {
                        ws(s);
                        st->has[part] = parse_int(s, &st->sl[part]);
                        ws(s);
                    }
                    break;
                }
                if (!got) {
                    return st->nitems > 0 && !st->items[st->nitems - 1].is_key
                               ? fail_at(s, s->p, JPE_NUMBER)
                               : false;
                }
            }
            st->items = rv_realloc(st->items, (size_t)(st->nitems + 1) * sizeof(*st->items));
            st->items[st->nitems++] = it;
            ws(s);
            if (!eat(s, ',')) {
                break;
            }
        }
    }
    ws(s);
    return eat(s, ']');
}

/* Steps after `$` or `@` until something that is not a step. As RedisJSON's
 * grammar reads them: the first step may omit its dot (`$a`, `$*`), a dot may
 * precede a bracket (`$.[0]`, `$.a.[0]`), and a quoted name is only written in
 * brackets (`.'a'` is an error). */
static bool
parse_steps(struct pp *s, struct jpath *jp, int depth)
{
    if (s->p < s->end && *s->p != '.' && *s->p != '[') {
        struct step *st = push_step(jp);
        if (eat(s, '*')) {
            st->kind = ST_WILD;
        } else if (!parse_name(s, &st->key, &st->klen)) {
            jp->n--; /* not a step: the caller decides what follows */
        }
    }
    while (s->p < s->end) {
        bool descend = false;
        if (peek(s, '.')) {
            s->p++;
            if (eat(s, '.')) {
                descend = true;
            }
            struct step *st = push_step(jp);
            const char *name = s->p;
            st->descend = descend;
            if (eat(s, '*')) {
                st->kind = ST_WILD;
            } else if (eat(s, '[')) {
                if (!parse_bracket(s, st, depth)) {
                    return false;
                }
            } else if (!parse_name(s, &st->key, &st->klen)) {
                return fail_at(s, name, JPE_NAME);
            }
        } else if (eat(s, '[')) {
            if (!parse_bracket(s, push_step(jp), depth)) {
                return false;
            }
        } else {
            break;
        }
    }
    return true;
}

static bool
parse_operand(struct pp *s, struct operand *o, int depth)
{
    ws(s);
    if (s->p >= s->end) {
        return false;
    }
    if (*s->p == '@' || *s->p == '$') {
        o->absolute = *s->p == '$';
        s->p++;
        o->path = rv_calloc(1, sizeof(*o->path));
        return parse_steps(s, o->path, depth);
    }
    if (*s->p == '\'' || *s->p == '"') {
        char *k;
        size_t kn;
        if (!parse_quoted(s, &k, &kn)) {
            return false;
        }
        o->lit = json_new_str(k, kn);
        rv_free(k);
        return true;
    }
    /* a number, true, false or null: parsed as JSON up to a delimiter */
    const char *b = s->p;
    while (s->p < s->end && strchr(")]&|=<>!, \t", *s->p) == NULL) {
        s->p++;
    }
    char err[128];
    o->lit = json_parse(b, (size_t)(s->p - b), err, sizeof(err));
    return o->lit != NULL;
}

static bool
parse_op(struct pp *s, enum fx_op *op)
{
    static const struct {
        const char *t;
        enum fx_op op;
    } ops[] = { { "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
                { "=~", OP_RE }, { "<", OP_LT },  { ">", OP_GT } };
    ws(s);
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        size_t n = strlen(ops[i].t);
        if ((size_t)(s->end - s->p) >= n && memcmp(s->p, ops[i].t, n) == 0) {
            s->p += n;
            *op = ops[i].op;
            return true;
        }
    }
    return false;
}

static struct fexpr *
fexpr_new(enum fx_kind k)
{
    struct fexpr *f = rv_calloc(1, sizeof(*f));
    f->kind = k;
    return f;
}

static struct fexpr *
parse_primary(struct pp *s, int depth)
{
    if (depth > 32) {
        return NULL;
    }
    ws(s);
    if (eat(s, '!')) {
        struct fexpr *f = fexpr_new(FX_NOT);
        if ((f->l = parse_primary(s, depth + 1)) == NULL) {
            fexpr_free(f);
            return NULL;
        }
        return f;
    }
    if (eat(s, '(')) {
        struct fexpr *f = parse_or(s, depth + 1);
        ws(s);
        if (f == NULL || !eat(s, ')')) {
            fexpr_free(f);
            return NULL;
        }
        return f;
    }
    struct fexpr *f = fexpr_new(FX_EXISTS);
    if (!parse_operand(s, &f->a, depth)) {
        fexpr_free(f);
        return NULL;
    }
    ws(s);
    const char *save = s->p;
    if (!parse_op(s, &f->op)) {
        s->p = save;
        if (f->a.path == NULL) { /* a bare literal is no condition */
            fexpr_free(f);
            return NULL;
        }
        return f;
    }
    f->kind = FX_CMP;
    if (!parse_operand(s, &f->b, depth)) {
        fexpr_free(f);
        return NULL;
    }
    if (f->op == OP_RE && f->b.lit != NULL) {
        size_t n;
        if (json_type(f->b.lit) != JSON_STR) {
            fexpr_free(f);
            return NULL;
        }
        const char *re = json_str(f->b.lit, &n);
        char *z = rv_strndup(re, n);
        f->re_ok = regcomp(&f->re, z, REG_EXTENDED | REG_NOSUB) == 0;
        rv_free(z);
        if (!f->re_ok) {
            fexpr_free(f);
            return NULL;
        }
    }
    return f;
}

static struct fexpr *
parse_and(struct pp *s, int depth)
{
    struct fexpr *l = parse_primary(s, depth);
    while (l != NULL) {
        ws(s);
        if (s->end - s->p < 2 || memcmp(s->p, "&&", 2) != 0) {
            break;
        }
        s->p += 2;
        struct fexpr *f = fexpr_new(FX_AND);
        f->l = l;
        f->r = parse_primary(s, depth);
        l = f;
        if (f->r == NULL) {
            fexpr_free(f);
            return NULL;
        }
    }
    return l;
}

static struct fexpr *
parse_or(struct pp *s, int depth)
{
    struct fexpr *l = parse_and(s, depth);
    while (l != NULL) {
        ws(s);
        if (s->end - s->p < 2 || memcmp(s->p, "||", 2) != 0) {
            break;
        }
        s->p += 2;
        struct fexpr *f = fexpr_new(FX_OR);
        f->l = l;
        f->r = parse_and(s, depth);
        l = f;
        if (f->r == NULL) {
            fexpr_free(f);
            return NULL;
        }
    }
    return l;
}

/* RedisJSON's text for a syntax error at offset at of the path in its `$`
 * form (a legacy path as RedisJSON reads it): the path cut at the offset and
 * the tokens its grammar expected there, without an ERR prefix. */
static void
syntax_error(const char *p, size_t n, size_t at, enum jp_expect what, char *err, size_t errlen)
{
    static const char *const expect[] = {
        [JPE_NONE] = "parsing error",
        [JPE_NAME] = "expected one of the following: <string>, '*'",
        [JPE_BRACKET] = "expected one of the following: '<string>[,<string>,...]', '<number>', "
                        "['start:end:steps'], '*'",
        [JPE_NUMBER] = "expected one of the following: '<number>'",
        [JPE_END] = "expected one of the following: EOI, '..'",
        [JPE_ROOT] = "expected one of the following: EOI, root",
    };
    int show = n > JPATH_ERR_SHOW ? JPATH_ERR_SHOW : (int)n;
    at = at > n ? n : at;
    if (at == n) {
        snprintf(err, errlen, "Error occurred on position %zu, \"%.*s <<<<----\", %s.", at, show, p,
                 expect[what]);
    } else {
        int pre = (int)at < show ? (int)at : show;
        snprintf(err, errlen, "Error occurred on position %zu, \"%.*s ---->>>> %.*s\", %s.", at,
                 pre, p, show - pre, p + at, expect[what]);
    }
}

struct jpath *
jpath_parse(const char *p, size_t n, char *err, size_t errlen)
{
    struct jpath *jp = rv_calloc(1, sizeof(*jp));
    struct buf b;
    char stack[128];
    buf_init(&b);
    if (n + 2 <= sizeof(stack)) { /* short paths: no allocation for the text */
        b.data = stack;
        b.cap = sizeof(stack);
    }
    jp->legacy = n == 0 || p[0] != '$';
    if (jp->legacy) {
        /* RedisJSON reads a legacy path as JSONPath after `$` (so "" is
         * `$.`, a syntax error, as RedisJSON's Path::new makes it) */
        buf_putc(&b, '$');
        if (!(n == 1 && p[0] == '.')) {
            if (n == 0 || p[0] != '.') { /* `[0]` is `$.[0]` */
                buf_putc(&b, '.');
            }
            buf_append(&b, p, n);
        }
    } else {
        buf_append(&b, p, n);
    }
    struct pp s = { b.data + 1, b.data + b.len, false, NULL, JPE_NONE };
    bool ok = parse_steps(&s, jp, 0);
    if (ok && s.p != s.end) {
        ok = fail_at(&s, s.p, jp->n == 0 ? JPE_ROOT : JPE_END);
    }
    if (!ok) {
        syntax_error(b.data, b.len, s.err_at ? (size_t)(s.err_at - b.data) : (size_t)(s.p - b.data),
                     s.err_what, err, errlen);
        jpath_destroy(jp);
        jp = NULL;
    }
    if (b.data != stack) {
        buf_deinit(&b);
    }
    return jp;
}

bool
jpath_legacy(const struct jpath *jp)
{
    return jp->legacy;
}

bool
jpath_is_root(const struct jpath *jp)
{
    return jp->n == 0;
}

/* ----------------------------------------------------------- evaluation */

static void
push(struct jmatches *m, struct json *v, struct json *parent, int depth)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 8;
        m->v = rv_realloc(m->v, m->cap * sizeof(*m->v));
    }
    m->v[m->n++] = (struct jmatch){ v, parent, depth };
}

void
jmatches_reset(struct jmatches *m)
{
    m->n = 0;
}

void
jmatches_free(struct jmatches *m)
{
    rv_free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

/* The work of one evaluation: nodes visited and matches made, shared with
 * the filters' operand paths. A cheap path never counts the document; one
 * that reaches JPATH_MIN_WORK gets a budget of JPATH_WORK_PER_NODE steps per
 * node of the document (counted then, once), and stops past it. */
struct budget {
    uint64_t work, limit;
    bool over;
};

struct evalctx {
    struct json *root;
    struct jmatches *out;
    struct budget *b;
};

static uint64_t
count_nodes(const struct json *j)
{
    enum json_type t = json_type(j);
    uint64_t n = 1;
    if (t == JSON_ARR || t == JSON_OBJ) {
        for (size_t i = 0; i < json_len(j); i++) {
            n += count_nodes(t == JSON_ARR ? json_arr_at(j, i) : json_obj_val(j, i));
        }
    }
    return n;
}

static bool
spend(const struct evalctx *e)
{
    struct budget *b = e->b;
    if (++b->work < b->limit) {
        return true;
    }
    if (!b->over && b->work == JPATH_MIN_WORK) {
        uint64_t n = count_nodes(e->root);
        b->limit = n > JPATH_MIN_WORK / JPATH_WORK_PER_NODE ? n * JPATH_WORK_PER_NODE
                                                            : JPATH_MIN_WORK;
        if (b->work < b->limit) {
            return true;
        }
    }
    b->over = true;
    return false;
}

static void walk(const struct evalctx *e, const struct step *st, int n, struct json *cur,
                 struct json *parent, int depth);

static bool fexpr_eval(const struct evalctx *e, const struct fexpr *f, struct json *at);

/* The first match of an operand's path (NULL: none); a literal itself. */
static struct json *
operand_value(const struct evalctx *ctx, const struct operand *o, struct json *at)
{
    struct json *root = ctx->root;
    if (o->path == NULL) {
        return o->lit;
    }
    struct jmatches m = { 0 };
    struct evalctx e = { root, &m, ctx->b };
    walk(&e, o->path->st, o->path->n, o->absolute ? root : at, NULL, 0);
    struct json *v = m.n > 0 ? m.v[0].v : NULL;
    jmatches_free(&m);
    return v;
}

static bool
is_num(const struct json *j)
{
    return json_type(j) == JSON_INT || json_type(j) == JSON_DOUBLE;
}

static bool
compare(enum fx_op op, const struct json *a, const struct json *b)
{
    int c;
    if (is_num(a) && is_num(b)) {
        bool au = json_int_unsigned(a), bu = json_int_unsigned(b);
        if (json_type(a) == JSON_INT && json_type(b) == JSON_INT && (au || bu)) {
            /* an unsigned one is above every signed one */
            c = au != bu ? (au ? 1 : -1)
                         : (json_uint(a) < json_uint(b) ? -1 : json_uint(a) > json_uint(b));
        } else if (json_type(a) == JSON_INT && json_type(b) == JSON_INT) {
            c = json_int(a) < json_int(b) ? -1 : json_int(a) > json_int(b);
        } else {
            double x = json_num(a), y = json_num(b);
            c = x < y ? -1 : x > y;
        }
    } else if (json_type(a) == JSON_STR && json_type(b) == JSON_STR) {
        size_t an, bn;
        const char *as = json_str(a, &an), *bs = json_str(b, &bn);
        c = memcmp(as, bs, an < bn ? an : bn);
        if (c == 0) {
            c = an < bn ? -1 : an > bn;
        }
    } else if (op == OP_EQ) {
        return json_equal(a, b);
    } else if (op == OP_NE) {
        return !json_equal(a, b);
    } else {
        return false;
    }
    switch (op) {
    case OP_EQ: return c == 0;
    case OP_NE: return c != 0;
    case OP_LT: return c < 0;
    case OP_LE: return c <= 0;
    case OP_GT: return c > 0;
    case OP_GE: return c >= 0;
    default: return false;
    }
}

static bool
regex_match(const struct fexpr *f, const struct json *a, const struct json *b)
{
    size_t n;
    if (json_type(a) != JSON_STR) {
        return false;
    }
    const char *s = json_str(a, &n);
    char *z = rv_strndup(s, n);
    bool ok = false;
    if (f->re_ok) {
        ok = regexec(&f->re, z, 0, NULL, 0) == 0;
    } else if (json_type(b) == JSON_STR) {
        size_t pn;
        const char *pat = json_str(b, &pn);
        char *pz = rv_strndup(pat, pn);
        regex_t re;
        if (regcomp(&re, pz, REG_EXTENDED | REG_NOSUB) == 0) {
            ok = regexec(&re, z, 0, NULL, 0) == 0;
            regfree(&re);
        }
        rv_free(pz);
    }
    rv_free(z);
    return ok;
}

static bool
fexpr_eval(const struct evalctx *e, const struct fexpr *f, struct json *at)
{
    switch (f->kind) {
    case FX_OR: return fexpr_eval(e, f->l, at) || fexpr_eval(e, f->r, at);
    case FX_AND: return fexpr_eval(e, f->l, at) && fexpr_eval(e, f->r, at);
    case FX_NOT: return !fexpr_eval(e, f->l, at);
    case FX_EXISTS: return operand_value(e, &f->a, at) != NULL;
    case FX_CMP: {
        struct json *a = operand_value(e, &f->a, at);
        struct json *b = operand_value(e, &f->b, at);
        if (a == NULL || b == NULL) {
            return false;
        }
        return f->op == OP_RE ? regex_match(f, a, b) : compare(f->op, a, b);
    }
    }
    return false;
}

/* Python's slice bounds for len elements. */
static void
slice_bounds(const struct step *st, int64_t len, int64_t *start, int64_t *stop, int64_t *step)
{
    *step = st->has[2] ? st->sl[2] : 1;
    int64_t lo = *step < 0 ? -1 : 0, hi = *step < 0 ? len - 1 : len;
    for (int i = 0; i < 2; i++) {
        int64_t v;
        if (!st->has[i]) {
            v = *step < 0 ? (i == 0 ? hi : lo) : (i == 0 ? lo : hi);
        } else {
            v = st->sl[i] < 0 ? st->sl[i] + len : st->sl[i];
            v = v < lo ? lo : v > hi ? hi : v;
        }
        *(i == 0 ? start : stop) = v;
    }
}

/* Applies one step (without its descent) to cur. */
static void
apply(const struct evalctx *e, const struct step *st, int n, struct json *cur, int depth)
{
    enum json_type t = json_type(cur);
    size_t len = json_len(cur);
    switch (st->kind) {
    case ST_KEY:
        if (t == JSON_OBJ) {
            struct json *v = json_obj_get(cur, st->key, st->klen);
            if (v) {
                walk(e, st + 1, n - 1, v, cur, depth + 1);
            }
        }
        return;
    case ST_WILD:
    case ST_FILTER:
        if (t != JSON_OBJ && t != JSON_ARR) {
            return;
        }
        for (size_t i = 0; i < len; i++) {
            struct json *v = t == JSON_ARR ? json_arr_at(cur, i) : json_obj_val(cur, i);
            if (!spend(e)) {
                return;
            }
            if (st->kind == ST_WILD || fexpr_eval(e, st->filter, v)) {
                walk(e, st + 1, n - 1, v, cur, depth + 1);
            }
        }
        return;
    case ST_UNION:
        for (int k = 0; k < st->nitems && spend(e); k++) {
            const struct uitem *it = &st->items[k];
            struct json *v = NULL;
            if (it->is_key && t == JSON_OBJ) {
                v = json_obj_get(cur, it->key, it->klen);
            } else if (!it->is_key && t == JSON_ARR) {
                int64_t i = it->idx < 0 ? it->idx + (int64_t)len : it->idx;
                v = i >= 0 && i < (int64_t)len ? json_arr_at(cur, (size_t)i) : NULL;
            }
            if (v) {
                walk(e, st + 1, n - 1, v, cur, depth + 1);
            }
        }
        return;
    case ST_SLICE: {
        int64_t a, b, s;
        if (t != JSON_ARR) {
            return;
        }
        slice_bounds(st, (int64_t)len, &a, &b, &s);
        for (int64_t i = a; s != 0 && (s > 0 ? i < b : i > b) && spend(e); i += s) {
            walk(e, st + 1, n - 1, json_arr_at(cur, (size_t)i), cur, depth + 1);
        }
        return;
    }
    }
}

/* `..`: the step applied to cur and to every node below it, in pre-order. */
static void
descend(const struct evalctx *e, const struct step *st, int n, struct json *cur, int depth)
{
    if (!spend(e)) {
        return;
    }
    apply(e, st, n, cur, depth);
    enum json_type t = json_type(cur);
    if (t == JSON_ARR || t == JSON_OBJ) {
        for (size_t i = 0; i < json_len(cur); i++) {
            descend(e, st, n, t == JSON_ARR ? json_arr_at(cur, i) : json_obj_val(cur, i),
                    depth + 1);
        }
    }
}

static void
walk(const struct evalctx *e, const struct step *st, int n, struct json *cur, struct json *parent,
     int depth)
{
    if (!spend(e)) {
        return; /* every step counts: a chain of unions multiplies too */
    }
    if (n == 0) {
        if (spend(e)) {
            push(e->out, cur, parent, depth);
        }
    } else if (st->descend) {
        descend(e, st, n, cur, depth);
    } else {
        apply(e, st, n, cur, depth);
    }
}

bool
jpath_eval(const struct jpath *jp, struct json *root, struct jmatches *out)
{
    struct budget b = { 0, JPATH_MIN_WORK, false };
    struct evalctx e = { root, out, &b };
    walk(&e, jp->st, jp->n, root, NULL, 0);
    if (b.over) {
        jmatches_reset(out);
        return false;
    }
    return true;
}

bool
jpath_static(const struct jpath *jp)
{
    for (int i = 0; i < jp->n; i++) {
        const struct step *st = &jp->st[i];
        if (st->descend || !(st->kind == ST_KEY || (st->kind == ST_UNION && st->nitems == 1))) {
            return false;
        }
    }
    return true;
}

bool
jpath_ends_in_index(const struct jpath *jp)
{
    const struct step *st = jp->n > 0 ? &jp->st[jp->n - 1] : NULL;
    return st != NULL && !st->descend && st->kind == ST_UNION && st->nitems == 1 &&
           !st->items[0].is_key;
}

bool
jpath_eval_parents(const struct jpath *jp, struct json *root, struct jmatches *out,
                   const char **key, size_t *klen)
{
    if (jp->n == 0) {
        return false;
    }
    const struct step *last = &jp->st[jp->n - 1];
    if (last->descend) {
        return false;
    }
    if (last->kind == ST_KEY) {
        *key = last->key;
        *klen = last->klen;
    } else if (last->kind == ST_UNION && last->nitems == 1 && last->items[0].is_key) {
        *key = last->items[0].key;
        *klen = last->items[0].klen;
    } else {
        return false;
    }
    struct budget b = { 0, JPATH_MIN_WORK, false };
    struct evalctx e = { root, out, &b };
    walk(&e, jp->st, jp->n - 1, root, NULL, 0);
    if (b.over) {
        jmatches_reset(out);
    }
    return true;
}
