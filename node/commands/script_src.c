/* node/commands/script_src.c: `return EXPR` to `return (EXPR)` where LuaJIT
 * would tail-call (script_src.h). A small Lua 5.1 tokenizer (names, numbers,
 * strings, long brackets, comments, operators) that tracks bracket depth and
 * block depth (function/if/do/repeat open, end/until close; while and for
 * open through their do). A return's expression list ends, at its own depths,
 * at end/else/elseif/until/`;`/the end of the text; a `,` there means several
 * expressions, left alone. */
#include "node/commands/script_src.h"

#include "base/mem.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_NEST 256 /* blocks; deeper text is left as it is (LuaJIT stops at 200 levels) */

enum tk {
    T_EOF,
    T_NAME,
    T_NUM,
    T_STR,
    T_OP,
    T_KW, /* a keyword of no interest here */
    T_DO,
    T_ELSE,
    T_ELSEIF,
    T_END,
    T_FUNCTION,
    T_IF,
    T_REPEAT,
    T_RETURN,
    T_UNTIL,
};

struct tok {
    enum tk k;
    char op; /* T_OP: its first byte */
    size_t b, e;
};

struct lex {
    const char *s;
    size_t n, i;
};

static const struct {
    const char *w;
    enum tk k;
} keywords[] = {
    { "and", T_KW },    { "break", T_KW },      { "do", T_DO },
    { "else", T_ELSE }, { "elseif", T_ELSEIF }, { "end", T_END },
    { "false", T_KW },  { "for", T_KW },        { "function", T_FUNCTION },
    { "goto", T_KW },   { "if", T_IF },         { "in", T_KW },
    { "local", T_KW },  { "nil", T_KW },        { "not", T_KW },
    { "or", T_KW },     { "repeat", T_REPEAT }, { "return", T_RETURN },
    { "then", T_KW },   { "true", T_KW },       { "until", T_UNTIL },
    { "while", T_KW },
};

static bool
is_ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

static bool
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* At s[i] == '[': the level of a long bracket `[=*[` opening there, or -1. */
static int
long_open(const struct lex *x, size_t i)
{
    size_t j = i + 1;
    while (j < x->n && x->s[j] == '=') {
        j++;
    }
    return j < x->n && x->s[j] == '[' ? (int)(j - i - 1) : -1;
}

/* Past the `]=*]` of `level` from i (the end of the text when none). */
static size_t
long_close(const struct lex *x, size_t i, int level)
{
    for (; i < x->n; i++) {
        if (x->s[i] != ']') {
            continue;
        }
        size_t j = i + 1;
        while (j < x->n && x->s[j] == '=') {
            j++;
        }
        if (j < x->n && x->s[j] == ']' && (int)(j - i - 1) == level) {
            return j + 1;
        }
    }
    return x->n;
}

static void
skip_blank(struct lex *x)
{
    while (x->i < x->n) {
        char c = x->s[x->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            x->i++;
        } else if (c == '-' && x->i + 1 < x->n && x->s[x->i + 1] == '-') {
            x->i += 2;
            int level = x->i < x->n && x->s[x->i] == '[' ? long_open(x, x->i) : -1;
            if (level >= 0) {
                x->i = long_close(x, x->i + (size_t)level + 2, level);
            } else {
                while (x->i < x->n && x->s[x->i] != '\n') {
                    x->i++;
                }
            }
        } else {
            return;
        }
    }
}

static enum tk
word_kind(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++) {
        if (strlen(keywords[i].w) == n && memcmp(keywords[i].w, p, n) == 0) {
            return keywords[i].k;
        }
    }
    return T_NAME;
}

static size_t
number_end(const struct lex *x, size_t i)
{
    char xp = 'e'; /* as LuaJIT: a sign belongs to the number after e (p in hex) */
    if (x->s[i] == '0' && i + 1 < x->n && (x->s[i + 1] == 'x' || x->s[i + 1] == 'X')) {
        xp = 'p';
    }
    while (i < x->n) {
        unsigned char c = (unsigned char)x->s[i];
        if (is_ident(c) || c == '.') {
            i++;
        } else if ((c == '+' || c == '-') && (x->s[i - 1] | 0x20) == xp) {
            i++;
        } else {
            break;
        }
    }
    return i;
}

static struct tok
next_tok(struct lex *x)
{
    skip_blank(x);
    struct tok t = { T_EOF, 0, x->i, x->i };
    if (x->i >= x->n) {
        return t;
    }
    const char *s = x->s;
    size_t i = x->i;
    unsigned char c = (unsigned char)s[i];
    if (is_digit(c) || (c == '.' && i + 1 < x->n && is_digit((unsigned char)s[i + 1]))) {
        t.k = T_NUM;
        i = number_end(x, i);
    } else if (is_ident(c)) {
        while (i < x->n && is_ident((unsigned char)s[i])) {
            i++;
        }
        t.k = word_kind(s + t.b, i - t.b);
    } else if (c == '\'' || c == '"') {
        t.k = T_STR;
        for (i++; i < x->n && s[i] != (char)c; i++) {
            if (s[i] == '\\') {
                i++;
            }
        }
        i = i < x->n ? i + 1 : x->n;
    } else if (c == '[' && long_open(x, i) >= 0) {
        int level = long_open(x, i);
        t.k = T_STR;
        i = long_close(x, i + (size_t)level + 2, level);
    } else {
        t.k = T_OP;
        t.op = (char)c;
        i++;
    }
    x->i = i;
    t.e = i;
    return t;
}

static bool
tok_is(const struct lex *x, const struct tok *t, const char *w)
{
    size_t n = strlen(w);
    return t->k == T_NAME && t->e - t->b == n && memcmp(x->s + t->b, w, n) == 0;
}

static bool
tok_op(const struct tok *t, char op)
{
    return t->k == T_OP && t->op == op;
}

#define BLK_FUNC 1u /* a function's body */
#define BLK_RW 2u   /* its returns are rewritten */

struct rw {
    struct lex x;
    enum script_src_scope scope;
    uint8_t blk[MAX_NEST];
    int nblk;
    int bd;             /* bracket depth: ( [ { */
    struct tok prev[3]; /* the last three tokens, [0] the latest */
    /* the return being read: its depths, its first token's offset, its last token */
    bool pend;
    int pend_bd, pend_nblk;
    size_t pend_at;
    struct tok last;
    /* redis.register_function's arguments, while read (-1: not in them) */
    int reg_bd;
    char reg_form;
    /* the edits: pairs of offsets for `(` and `)` */
    size_t *at;
    size_t nat, cap;
};

static void
add_edit(struct rw *r, size_t open, size_t close)
{
    if (r->nat + 2 > r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->at = rv_realloc(r->at, r->cap * sizeof(*r->at));
    }
    r->at[r->nat++] = open;
    r->at[r->nat++] = close;
}

/* The return being read ends before t (or is given up). */
static void
pend_token(struct rw *r, const struct tok *t)
{
    if (r->bd < r->pend_bd || r->nblk < r->pend_nblk) {
        r->pend = false; /* (not Lua that compiles) */
        return;
    }
    if (r->bd == r->pend_bd && r->nblk == r->pend_nblk) {
        bool ends = t->k == T_EOF || t->k == T_END || t->k == T_ELSE || t->k == T_ELSEIF ||
                    t->k == T_UNTIL || tok_op(t, ';');
        if (ends) {
            const struct tok *l = &r->last;
            if (l->k == T_STR || tok_op(l, ')') || tok_op(l, '}')) {
                add_edit(r, r->pend_at, l->e);
            }
            r->pend = false;
            return;
        }
        if (tok_op(t, ',')) {
            r->pend = false; /* several values: a tail call only keeps them all */
            return;
        }
    }
    if (r->pend_at == SIZE_MAX) {
        r->pend_at = t->b; /* the expression's first token */
    }
    r->last = *t;
}

/* Is the `function` at t a literal passed directly to redis.register_function? */
static bool
is_callback(const struct rw *r)
{
    if (r->scope != SCRIPT_SRC_CALLBACKS || r->reg_bd < 0 || r->bd != r->reg_bd) {
        return false;
    }
    if (r->reg_form == '(') {
        return tok_op(&r->prev[0], '(') || tok_op(&r->prev[0], ',');
    }
    return tok_op(&r->prev[0], '=') && tok_is(&r->x, &r->prev[1], "callback");
}

static bool
push_blk(struct rw *r, uint8_t flags)
{
    if (r->nblk == MAX_NEST) {
        return false;
    }
    r->blk[r->nblk++] = flags;
    return true;
}

static void
brackets(struct rw *r, const struct tok *t)
{
    if (tok_op(t, '(') || tok_op(t, '[') || tok_op(t, '{')) {
        r->bd++;
        if (r->scope == SCRIPT_SRC_CALLBACKS && r->reg_bd < 0 && t->op != '[' &&
            tok_is(&r->x, &r->prev[0], "register_function") && tok_op(&r->prev[1], '.') &&
            tok_is(&r->x, &r->prev[2], "redis")) {
            r->reg_bd = r->bd;
            r->reg_form = t->op;
        } else if (t->op == '{' && r->reg_bd == r->bd - 1 && r->reg_form == '(' &&
                   tok_op(&r->prev[0], '(')) {
            r->reg_bd = r->bd; /* register_function({...}) */
            r->reg_form = '{';
        }
    } else if (tok_op(t, ')') || tok_op(t, ']') || tok_op(t, '}')) {
        r->bd--;
        if (r->bd < r->reg_bd) {
            r->reg_bd = -1;
        }
    }
}

/* One token: false when the text is not followed any further. */
static bool
step(struct rw *r, const struct tok *t)
{
    if (r->pend) {
        pend_token(r, t);
    }
    uint8_t rw = r->nblk ? (r->blk[r->nblk - 1] & BLK_RW)
                         : (r->scope == SCRIPT_SRC_CHUNK ? BLK_RW : 0);
    switch (t->k) {
    case T_FUNCTION:
        if (!push_blk(r, (uint8_t)(BLK_FUNC | (is_callback(r) ? BLK_RW : 0)))) {
            return false;
        }
        break;
    case T_DO:
    case T_IF:
    case T_REPEAT:
        if (!push_blk(r, rw)) {
            return false;
        }
        break;
    case T_END:
    case T_UNTIL:
        if (r->nblk == 0) {
            return false;
        }
        r->nblk--;
        break;
    case T_RETURN:
        if (!r->pend && rw) {
            r->pend = true;
            r->pend_bd = r->bd;
            r->pend_nblk = r->nblk;
            r->pend_at = SIZE_MAX;
            r->last = *t;
        }
        break;
    case T_OP: brackets(r, t); break;
    default: break;
    }
    r->prev[2] = r->prev[1];
    r->prev[1] = r->prev[0];
    r->prev[0] = *t;
    return true;
}

size_t
script_src_untail(const char *src, size_t n, enum script_src_scope scope, char **out,
                  size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (n < 6 || memmem(src, n, "return", 6) == NULL) {
        return 0;
    }
    struct rw *r = rv_calloc(1, sizeof(*r));
    r->x = (struct lex){ src, n, 0 };
    r->scope = scope;
    r->reg_bd = -1;
    if (n > 0 && src[0] == '#') { /* LuaJIT skips such a first line too */
        while (r->x.i < n && src[r->x.i] != '\n') {
            r->x.i++;
        }
    }
    bool ok = true;
    for (;;) {
        struct tok t = next_tok(&r->x);
        if (!step(r, &t)) {
            ok = false;
            break;
        }
        if (t.k == T_EOF) {
            break;
        }
    }
    size_t edits = ok ? r->nat / 2 : 0;
    if (edits > 0) {
        char *o = rv_malloc(n + r->nat + 1);
        size_t from = 0, w = 0;
        for (size_t i = 0; i < r->nat; i++) {
            memcpy(o + w, src + from, r->at[i] - from);
            w += r->at[i] - from;
            o[w++] = i % 2 == 0 ? '(' : ')';
            from = r->at[i];
        }
        memcpy(o + w, src + from, n - from);
        w += n - from;
        o[w] = '\0';
        *out = o;
        *outlen = w;
    }
    rv_free(r->at);
    rv_free(r);
    return edits;
}

int
script_src_load(lua_State *L, const char *code, size_t len, const char *chunk,
                enum script_src_scope scope)
{
    int rc = luaL_loadbuffer(L, code, len, chunk);
    if (rc != 0) {
        return rc;
    }
    char *alt;
    size_t altlen;
    if (script_src_untail(code, len, scope, &alt, &altlen) == 0) {
        return 0;
    }
    if (luaL_loadbuffer(L, alt, altlen, chunk) == 0) {
        lua_replace(L, -2);
    } else {
        lua_pop(L, 1); /* (keep the original's function) */
    }
    rv_free(alt);
    return 0;
}
