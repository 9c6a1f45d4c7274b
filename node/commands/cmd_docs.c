/* node/commands/cmd_docs.c: COMMAND DOCS' argument trees, parsed from the
 * syntax strings of cmd_table.c (the grammar is in cmd_docs.h), and the
 * fields Redis gives some commands besides: doc_flags, deprecated_since,
 * replaced_by and history (a table below, by full command name). */
#include "node/commands/cmd_docs.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/reply.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum dkind { D_ARG, D_PURE, D_ONEOF, D_BLOCK };
enum { F_OPT = 1, F_MULT = 2, F_MULT_TOK = 4, F_ALT = 8 /* a oneof made by '|' */ };
enum { MAX_UNITS = 64, MAX_DEPTH = 12 };

struct dnode {
    uint8_t kind, flags;
    const char *name, *tok; /* into the syntax string; tok NULL when none */
    size_t nlen, tlen;
    size_t start, end; /* source span, for "x [x ...]" */
    int child, next;   /* -1 when none */
};

struct dparse {
    const char *s;
    size_t len, pos;
    struct dnode *n;
    int nn, cap, depth;
};

enum lex { L_END, L_OPEN, L_CLOSE, L_GOPEN, L_GCLOSE, L_BAR, L_DOTS, L_WORD };

/* The next lexeme at p->pos (spaces skipped); a word's extent in *w, *wl. */
static enum lex
peek(struct dparse *p, const char **w, size_t *wl)
{
    while (p->pos < p->len && p->s[p->pos] == ' ') {
        p->pos++;
    }
    if (p->pos >= p->len) {
        return L_END;
    }
    const char *q = p->s + p->pos;
    switch (*q) {
    case '[': return L_OPEN;
    case ']': return L_CLOSE;
    case '<': return L_GOPEN;
    case '>': return L_GCLOSE;
    case '|': return L_BAR;
    default: break;
    }
    size_t n = 0;
    while (p->pos + n < p->len && !strchr(" []<>|", q[n])) {
        n++;
    }
    *w = q;
    *wl = n;
    return n == 3 && memcmp(q, "...", 3) == 0 ? L_DOTS : L_WORD;
}

/* A token is written in capitals ("EX") or is a symbol ("*", "~", "\"\""). */
static bool
is_token(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (islower((unsigned char)w[i])) {
            return false;
        }
    }
    return true;
}

static bool
is_symbol(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isalnum((unsigned char)w[i])) {
            return false;
        }
    }
    return true;
}

static int
node_new(struct dparse *p, enum dkind k, size_t start, size_t end)
{
    if (p->nn == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 32;
        p->n = rv_realloc(p->n, sizeof(*p->n) * (size_t)p->cap);
    }
    struct dnode *d = &p->n[p->nn];
    memset(d, 0, sizeof(*d));
    d->kind = (uint8_t)k;
    d->start = start;
    d->end = end;
    d->child = d->next = -1;
    return p->nn++;
}

/* Link units[0..n-1] as the children of a new node of kind k. */
static int
node_parent(struct dparse *p, enum dkind k, const int *units, int n)
{
    int id = node_new(p, k, p->n[units[0]].start, p->n[units[n - 1]].end);
    p->n[id].child = units[0];
    for (int i = 0; i < n; i++) {
        p->n[units[i]].next = i + 1 < n ? units[i + 1] : -1;
    }
    return id;
}

static int parse_seq(struct dparse *p, int *units);

/* A token and the argument words after it: in a group, "LIMIT offset count"
 * is one block; at the top level a token takes one word; a symbol none. */
static int
parse_token(struct dparse *p, const char *w, size_t wl)
{
    size_t start = p->pos;
    p->pos += wl;
    int args[MAX_UNITS], na = 0;
    const char *a;
    size_t al;
    while (!is_symbol(w, wl) && na < MAX_UNITS && peek(p, &a, &al) == L_WORD && !is_token(a, al) &&
           (na == 0 || p->depth > 0)) {
        args[na] = node_new(p, D_ARG, p->pos, p->pos + al);
        p->n[args[na]].name = a;
        p->n[args[na]].nlen = al;
        na++;
        p->pos += al;
    }
    int id;
    if (na == 0) {
        id = node_new(p, D_PURE, start, start + wl);
        p->n[id].name = w;
        p->n[id].nlen = wl;
    } else if (na == 1) {
        id = args[0];
        p->n[id].start = start;
    } else {
        id = node_parent(p, D_BLOCK, args, na);
        p->n[id].start = start;
    }
    p->n[id].tok = w;
    p->n[id].tlen = wl;
    return id;
}

static bool
span_eq(const struct dparse *p, size_t a0, size_t a1, size_t b0, size_t b1)
{
    return a1 - a0 == b1 - b0 && memcmp(p->s + a0, p->s + b0, a1 - a0) == 0;
}

/* "x y [x y ...]": the group repeats the units before it; mark them (or a
 * block of them) multiple. True when it did. */
static bool
fold_repeat(struct dparse *p, int *units, int *n, const int *in, int nin)
{
    if (nin == 0 || !(p->n[in[nin - 1]].flags & F_MULT) || *n < 1) {
        return false;
    }
    size_t i0 = p->n[in[0]].start, i1 = p->n[in[nin - 1]].end;
    struct dnode *last = &p->n[units[*n - 1]];
    if (nin <= *n && span_eq(p, p->n[units[*n - nin]].start, last->end, i0, i1)) {
        if (nin == 1) {
            last->flags |= F_MULT | (last->tok ? F_MULT_TOK : 0);
        } else {
            int b = node_parent(p, D_BLOCK, units + *n - nin, nin);
            p->n[b].flags |= F_MULT;
            *n -= nin - 1;
            units[*n - 1] = b;
        }
        return true;
    }
    /* "STREAMS key [key ...]": the token's argument repeats */
    if (nin == 1 && last->kind == D_ARG && last->tok &&
        span_eq(p, (size_t)(last->name - p->s), last->end, i0, i1)) {
        last->flags |= F_MULT;
        return true;
    }
    return false;
}

/* After '[' or '<': the group's units become one unit. */
static int
parse_group(struct dparse *p, int *units, int *n, bool optional)
{
    size_t start = p->pos++;
    int in[MAX_UNITS];
    p->depth++;
    int nin = p->depth > MAX_DEPTH ? 0 : parse_seq(p, in);
    p->depth--;
    const char *w;
    size_t wl;
    enum lex l = peek(p, &w, &wl);
    if (l == L_CLOSE || l == L_GCLOSE) {
        p->pos++;
    }
    if (optional && fold_repeat(p, units, n, in, nin)) {
        return -1;
    }
    if (nin == 0) {
        return -1;
    }
    int id;
    if (nin == 1) {
        id = in[0];
    } else if (nin == 2 && p->n[in[0]].kind == D_PURE && p->n[in[1]].kind >= D_ONEOF &&
               !p->n[in[1]].tok) {
        /* "[TYPE NORMAL | MASTER]": the token leads the alternatives */
        id = in[1];
        p->n[id].tok = p->n[in[0]].tok;
        p->n[id].tlen = p->n[in[0]].tlen;
    } else {
        id = node_parent(p, D_BLOCK, in, nin);
    }
    p->n[id].flags |= optional ? F_OPT : 0;
    p->n[id].flags &= (uint8_t)~F_ALT;
    p->n[id].start = start;
    p->n[id].end = p->pos;
    return id;
}

/* One unit at p->pos, or -1 (nothing to add). */
static int
parse_unit(struct dparse *p, enum lex l, const char *w, size_t wl, int *units, int *n)
{
    if (l == L_OPEN || l == L_GOPEN) {
        return parse_group(p, units, n, l == L_OPEN);
    }
    if (is_token(w, wl)) {
        return parse_token(p, w, wl);
    }
    int id = node_new(p, D_ARG, p->pos, p->pos + wl);
    p->n[id].name = w;
    p->n[id].nlen = wl;
    p->pos += wl;
    return id;
}

/* Units up to ']', '>' or the end; '|' joins the units either side into a oneof. */
static int
parse_seq(struct dparse *p, int *units)
{
    int n = 0;
    bool alt = false;
    for (;;) {
        const char *w = NULL;
        size_t wl = 0;
        enum lex l = peek(p, &w, &wl);
        if (l == L_END || l == L_CLOSE || l == L_GCLOSE || n == MAX_UNITS) {
            break;
        }
        if (l == L_BAR) {
            p->pos++;
            alt = n > 0;
            continue;
        }
        if (l == L_DOTS) {
            p->pos += 3;
            if (n > 0) {
                p->n[units[n - 1]].flags |= F_MULT;
            }
            continue;
        }
        int id = parse_unit(p, l, w, wl, units, &n);
        if (id < 0) {
            continue;
        }
        if (alt) {
            int prev = units[n - 1];
            if (!(p->n[prev].flags & F_ALT)) {
                prev = node_parent(p, D_ONEOF, &units[n - 1], 1);
                p->n[prev].flags |= F_ALT;
                units[n - 1] = prev;
            }
            int c = p->n[prev].child;
            while (p->n[c].next >= 0) {
                c = p->n[c].next;
            }
            p->n[c].next = id;
            p->n[id].next = -1;
            p->n[prev].end = p->n[id].end;
            alt = false;
        } else {
            units[n++] = id;
        }
    }
    return n;
}

static size_t
parse_all(struct dparse *p, const struct cmd_spec *s, int *units)
{
    memset(p, 0, sizeof(*p));
    p->s = s->args ? s->args : "";
    p->len = strlen(p->s);
    size_t n = (size_t)parse_seq(p, units);
    for (size_t i = 0; i < n; i++) {
        p->n[units[i]].next = i + 1 < n ? units[i + 1] : -1;
    }
    return n;
}

size_t
docs_arg_count(const struct cmd_spec *s)
{
    struct dparse p;
    int units[MAX_UNITS];
    size_t n = parse_all(&p, s, units);
    rv_free(p.n);
    return n;
}

bool
docs_syntax_ok(const struct cmd_spec *s)
{
    struct dparse p;
    int units[MAX_UNITS];
    size_t n = parse_all(&p, s, units);
    const char *w;
    size_t wl;
    bool ok = peek(&p, &w, &wl) == L_END && (n > 0) == (p.len > 0);
    rv_free(p.n);
    return ok;
}

static const char *
arg_type(const struct dnode *d, const struct cmd_spec *s)
{
    static const char *const keys[] = { "key", "destination", "source", "newkey", "destkey", NULL };
    static const char *const ints[] = {
        "count",      "offset", "start", "stop",           "end",  "seconds",     "milliseconds",
        "numkeys",    "index",  "db",    "destination-db", "port", "numreplicas", "numlocal",
        "client-id",  "bit",    "len",   "limit",          "ttl",  "integer",     "maxage",
        "end-offset", NULL
    };
    static const char *const dbls[] = { "score",  "longitude", "latitude", "radius", "width",
                                        "height", "increment", "min",      "max",    NULL };
    static const char *const *const sets[] = { keys, ints, dbls };
    static const char *const names[] = { "key", "integer", "double" };
    if (d->kind == D_PURE) {
        return "pure-token";
    }
    if (d->kind == D_ONEOF || d->kind == D_BLOCK) {
        return d->kind == D_ONEOF ? "oneof" : "block";
    }
    for (size_t k = 0; k < 3; k++) {
        for (const char *const *q = sets[k]; *q; q++) {
            if (strlen(*q) == d->nlen && memcmp(*q, d->name, d->nlen) == 0) {
                return names[k];
            }
        }
    }
    if (d->nlen == 7 && memcmp(d->name, "timeout", 7) == 0) {
        return s->flags & CMD_BLOCKING ? "double" : "integer"; /* BLPOP's seconds are fractional */
    }
    if (d->nlen >= 9 && memcmp(d->name, "unix-time", 9) == 0) {
        return "unix-time";
    }
    return d->nlen == 7 && memcmp(d->name, "pattern", 7) == 0 ? "pattern" : "string";
}

/* A node's name: its word, a token's in lower case, a group's the names of
 * its members joined by '_' (as Redis names "nx_xx"). */
static void
node_name(const struct dparse *p, int id, struct buf *b)
{
    const struct dnode *d = &p->n[id];
    if (d->kind == D_ARG) {
        buf_append(b, d->name, d->nlen);
    } else if (d->kind == D_PURE || (d->kind == D_BLOCK && d->tok)) {
        for (size_t i = 0; i < d->tlen; i++) {
            buf_putc(b, (char)tolower((unsigned char)d->tok[i]));
        }
    } else {
        for (int c = d->child; c >= 0 && b->len < 200; c = p->n[c].next) {
            if (c != d->child) {
                buf_putc(b, '_');
            }
            node_name(p, c, b);
        }
    }
}

/* ------------------------------------------------------- argument fixes */

/* What a tree derived from the syntax string cannot know: Redis's name for a
 * group ("condition" for "NX | XX"), an argument's own `since`, a type the
 * name does not tell and a second key's key_spec_index. One row per command
 * (cmd_fullname's form, sorted), one word per node of its tree in pre-order:
 *   name[~type][@since][#key_spec_index]
 * where name "=" keeps the derived name and "#-" means no key_spec_index.
 * scripts/docs_diff.py --table prints the rows from a redis-server 7.0. */
struct docs_args {
    const char *name, *nodes;
};

#include "node/commands/cmd_docs_args.h"

struct dword {
    const char *name, *type, *since; /* NULL: keep what the tree says */
    size_t nlen, tlen, slen;
    int ksi; /* -2 keep, -1 none, else the index */
};

static size_t
span_to(const char *p, const char *stops)
{
    size_t n = 0;
    while (p[n] && !strchr(stops, p[n])) {
        n++;
    }
    return n;
}

/* The word at *cur (a row's next node), advancing *cur; all "keep" when the
 * row is missing or used up. */
static struct dword
dword_next(const char **cur)
{
    struct dword w = { .ksi = -2 };
    const char *p = *cur;
    if (p == NULL || *p == '\0') {
        return w;
    }
    size_t n = span_to(p, " ~@#");
    if (!(n == 1 && *p == '=')) {
        w.name = p;
        w.nlen = n;
    }
    p += n;
    while (*p && *p != ' ') {
        char k = *p++;
        n = span_to(p, " ~@#");
        if (k == '~') {
            w.type = p;
            w.tlen = n;
        } else if (k == '@') {
            w.since = p;
            w.slen = n;
        } else {
            w.ksi = *p == '-' ? -1 : atoi(p);
        }
        p += n;
    }
    *cur = *p == ' ' ? p + 1 : p;
    return w;
}

static int
args_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct docs_args *)elem)->name);
}

static const char *
args_row(const struct cmd_spec *s)
{
    char full[96];
    cmd_fullname(s, full, sizeof(full));
    const struct docs_args *a = bsearch(full, docs_args, sizeof(docs_args) / sizeof(docs_args[0]),
                                        sizeof(docs_args[0]), args_cmp);
    return a ? a->nodes : NULL;
}

static size_t
tree_size(const struct dparse *p, int first)
{
    size_t n = 0;
    for (int i = first; i >= 0; i = p->n[i].next) {
        n += 1 + tree_size(p, p->n[i].child);
    }
    return n;
}

static void
reply_nodes(struct conn *c, const struct dparse *p, int first, const struct cmd_spec *s,
            const char **row)
{
    size_t n = 0;
    for (int i = first; i >= 0; i = p->n[i].next) {
        n++;
    }
    reply_array(c, n);
    for (int i = first; i >= 0; i = p->n[i].next) {
        const struct dnode *d = &p->n[i];
        struct dword w = dword_next(row);
        const char *type = arg_type(d, s);
        size_t tlen = w.type ? w.tlen : strlen(type);
        type = w.type ? w.type : type;
        bool is_key = tlen == 3 && memcmp(type, "key", 3) == 0;
        bool key = w.ksi == -2 ? s->first > 0 && is_key : w.ksi >= 0;
        uint8_t fl = d->flags & (F_OPT | F_MULT | F_MULT_TOK);
        bool kids = d->kind == D_ONEOF || d->kind == D_BLOCK;
        reply_map(c, 2 + (size_t)key + (d->tok != NULL) + (w.since != NULL) + (fl != 0) +
                         (size_t)kids);
        reply_bulk_cstr(c, "name");
        if (w.name) {
            reply_bulk(c, w.name, w.nlen);
        } else {
            struct buf b;
            buf_init(&b);
            node_name(p, i, &b);
            reply_bulk(c, b.data, b.len);
            buf_deinit(&b);
        }
        reply_bulk_cstr(c, "type");
        reply_bulk(c, type, tlen);
        if (key) {
            reply_bulk_cstr(c, "key_spec_index");
            reply_int(c, w.ksi >= 0 ? w.ksi : 0);
        }
        if (d->tok) {
            reply_bulk_cstr(c, "token");
            reply_bulk(c, d->tok, d->tlen);
        }
        if (w.since) {
            reply_bulk_cstr(c, "since");
            reply_bulk(c, w.since, w.slen);
        }
        if (fl) {
            reply_bulk_cstr(c, "flags");
            reply_set(c, (size_t)((fl & F_OPT) != 0) + ((fl & F_MULT) != 0) +
                             ((fl & F_MULT_TOK) != 0));
            if (fl & F_OPT) {
                reply_simple(c, "optional");
            }
            if (fl & F_MULT) {
                reply_simple(c, "multiple");
            }
            if (fl & F_MULT_TOK) {
                reply_simple(c, "multiple_token");
            }
        }
        if (kids) {
            reply_bulk_cstr(c, "arguments");
            reply_nodes(c, p, d->child, s, row);
        }
    }
}

void
docs_reply_args(struct conn *c, const struct cmd_spec *s)
{
    struct dparse p;
    int units[MAX_UNITS];
    size_t n = parse_all(&p, s, units);
    const char *row = args_row(s);
    if (n == 0) {
        reply_array(c, 0);
    } else {
        reply_nodes(c, &p, units[0], s, &row);
    }
    rv_free(p.n);
}

bool
docs_args_ok(const struct cmd_spec *s)
{
    const char *row = args_row(s);
    if (row == NULL) {
        return true;
    }
    struct dparse p;
    int units[MAX_UNITS];
    size_t n = parse_all(&p, s, units), words = 0;
    size_t nodes = n ? tree_size(&p, units[0]) : 0;
    rv_free(p.n);
    while (*row) {
        dword_next(&row);
        words++;
    }
    return words == nodes;
}

bool
docs_args_sorted(void)
{
    for (size_t i = 1; i < sizeof(docs_args) / sizeof(docs_args[0]); i++) {
        if (strcmp(docs_args[i - 1].name, docs_args[i].name) >= 0) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------ doc metadata */

/* DOC_NO_ARGS, DOC_NO_SUBS: Redis 7.0's docs give no arguments (its JSON
 * files list none) or no subcommands (DEBUG's are not documented) */
enum { DOC_DEPRECATED = 1, DOC_SYSCMD = 2, DOC_NO_ARGS = 4, DOC_NO_SUBS = 8 };
#define DOC_FLAGS (DOC_DEPRECATED | DOC_SYSCMD) /* the ones doc_flags lists */

struct docs_hist {
    const char *version, *text;
};

struct docs_meta {
    const char *name; /* cmd_fullname's form; the table is sorted by it (strcmp) */
    unsigned flags;   /* DOC_* */
    const char *deprecated_since, *replaced_by;
    const struct docs_hist *hist; /* ends with a NULL version; NULL: none */
};

#define H(...) ((const struct docs_hist[]){ __VA_ARGS__, { NULL, NULL } })

/* What Redis 7.0's COMMAND DOCS gives for the commands Ruvio has, in its
 * words (transcribed from redis-server 7.0.15; tests/integ/test_command_docs.py
 * compares a sample with it). */
static const struct docs_meta docs_meta[] = {
    { "acl|getuser", 0, NULL, NULL,
      H({ "6.2.0", "Added Pub/Sub channel patterns." },
        { "7.0.0",
          "Added selectors and changed the format of key and channel patterns from a list to their rule representation." }) },
    { "acl|setuser", 0, NULL, NULL,
      H({ "6.2.0", "Added Pub/Sub channel patterns." },
        { "7.0.0", "Added selectors and key based permissions." }) },
    { "auth", 0, NULL, NULL, H({ "6.0.0", "Added ACL style (username and password)." }) },
    { "bgsave", 0, NULL, NULL, H({ "3.2.2", "Added the `SCHEDULE` option." }) },
    { "bitcount", 0, NULL, NULL, H({ "7.0.0", "Added the `BYTE|BIT` option." }) },
    { "bitpos", 0, NULL, NULL, H({ "7.0.0", "Added the `BYTE|BIT` option." }) },
    { "blpop", 0, NULL, NULL,
      H({ "6.0.0", "`timeout` is interpreted as a double instead of an integer." }) },
    { "brpop", 0, NULL, NULL,
      H({ "6.0.0", "`timeout` is interpreted as a double instead of an integer." }) },
    { "brpoplpush", DOC_DEPRECATED, "6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments",
      H({ "6.0.0", "`timeout` is interpreted as a double instead of an integer." }) },
    { "bzpopmax", 0, NULL, NULL,
      H({ "6.0.0", "`timeout` is interpreted as a double instead of an integer." }) },
    { "bzpopmin", 0, NULL, NULL,
      H({ "6.0.0", "`timeout` is interpreted as a double instead of an integer." }) },
    { "client|kill", 0, NULL, NULL,
      H({ "2.8.12", "Added new filter format." }, { "2.8.12", "`ID` option." },
        { "3.2.0", "Added `master` type in for `TYPE` option." },
        { "5.0.0",
          "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility." },
        { "6.2.0", "`LADDR` option." }) },
    { "client|list", 0, NULL, NULL,
      H({ "2.8.12", "Added unique client `id` field." },
        { "5.0.0", "Added optional `TYPE` filter." }, { "6.0.0", "Added `user` field." },
        { "6.2.0",
          "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter." },
        { "7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields." },
        { "7.0.3", "Added `ssub` field." }) },
    { "client|pause", 0, NULL, NULL,
      H({ "6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option." }) },
    { "cluster|meet", 0, NULL, NULL,
      H({ "4.0.0", "Added the optional `cluster_bus_port` argument." }) },
    { "cluster|slaves", DOC_DEPRECATED, "5.0.0", "`CLUSTER REPLICAS`", NULL },
    { "cluster|slots", DOC_DEPRECATED, "7.0.0", "`CLUSTER SHARDS`",
      H({ "4.0.0", "Added node IDs." },
        { "7.0.0", "Added additional networking metadata field." }) },
    { "command|getkeys", DOC_NO_ARGS, NULL, NULL, NULL },
    { "command|getkeysandflags", DOC_NO_ARGS, NULL, NULL, NULL },
    { "command|info", 0, NULL, NULL,
      H({ "7.0.0", "Allowed to be called with no argument to get info on all commands." }) },
    { "config|get", 0, NULL, NULL,
      H({ "7.0.0", "Added the ability to pass multiple pattern parameters in one call" }) },
    { "config|set", 0, NULL, NULL,
      H({ "7.0.0", "Added the ability to set multiple parameters in one call." }) },
    { "debug", DOC_SYSCMD | DOC_NO_SUBS, NULL, NULL, NULL },
    { "exists", 0, NULL, NULL, H({ "3.0.3", "Accepts multiple `key` arguments." }) },
    { "expire", 0, NULL, NULL, H({ "7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`." }) },
    { "expireat", 0, NULL, NULL, H({ "7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`." }) },
    { "flushall", 0, NULL, NULL,
      H({ "4.0.0", "Added the `ASYNC` flushing mode modifier." },
        { "6.2.0", "Added the `SYNC` flushing mode modifier." }) },
    { "flushdb", 0, NULL, NULL,
      H({ "4.0.0", "Added the `ASYNC` flushing mode modifier." },
        { "6.2.0", "Added the `SYNC` flushing mode modifier." }) },
    { "geoadd", 0, NULL, NULL, H({ "6.2.0", "Added the `CH`, `NX` and `XX` options." }) },
    { "georadius", DOC_DEPRECATED, "6.2.0",
      "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument",
      H({ "6.2.0", "Added the `ANY` option for `COUNT`." },
        { "7.0.0", "Added support for uppercase unit names." }) },
    { "georadius_ro", DOC_DEPRECATED, "6.2.0", "`GEOSEARCH` with the `BYRADIUS` argument",
      H({ "6.2.0", "Added the `ANY` option for `COUNT`." }) },
    { "georadiusbymember", DOC_DEPRECATED, "6.2.0",
      "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
      H({ "7.0.0", "Added support for uppercase unit names." }) },
    { "georadiusbymember_ro", DOC_DEPRECATED, "6.2.0",
      "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments", NULL },
    { "geosearch", 0, NULL, NULL, H({ "7.0.0", "Added support for uppercase unit names." }) },
    { "geosearchstore", 0, NULL, NULL, H({ "7.0.0", "Added support for uppercase unit names." }) },
    { "getset", DOC_DEPRECATED, "6.2.0", "`SET` with the `!GET` argument", NULL },
    { "hdel", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple `field` arguments." }) },
    { "hello", 0, NULL, NULL,
      H({ "6.2.0",
          "`protover` made optional; when called without arguments the command reports the current connection's context." }) },
    { "hmset", DOC_DEPRECATED, "4.0.0", "`HSET` with multiple field-value pairs", NULL },
    { "hset", 0, NULL, NULL, H({ "4.0.0", "Accepts multiple `field` and `value` arguments." }) },
    { "info", 0, NULL, NULL,
      H({ "7.0.0", "Added support for taking multiple section arguments." }) },
    { "lpop", 0, NULL, NULL, H({ "6.2.0", "Added the `count` argument." }) },
    { "lpush", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple `element` arguments." }) },
    { "lpushx", 0, NULL, NULL, H({ "4.0.0", "Accepts multiple `element` arguments." }) },
    { "migrate", 0, NULL, NULL,
      H({ "3.0.0", "Added the `COPY` and `REPLACE` options." },
        { "3.0.6", "Added the `KEYS` option." }, { "4.0.7", "Added the `AUTH` option." },
        { "6.0.0", "Added the `AUTH2` option." }) },
    { "pexpire", 0, NULL, NULL, H({ "7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`." }) },
    { "pexpireat", 0, NULL, NULL, H({ "7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`." }) },
    { "pttl", 0, NULL, NULL, H({ "2.8.0", "Added the -2 reply." }) },
    { "renamenx", 0, NULL, NULL,
      H({ "3.2.0",
          "The command no longer returns an error when source and destination names are the same." }) },
    { "replconf", DOC_SYSCMD | DOC_NO_ARGS, NULL, NULL, NULL },
    { "restore", 0, NULL, NULL,
      H({ "3.0.0", "Added the `REPLACE` modifier." }, { "5.0.0", "Added the `ABSTTL` modifier." },
        { "5.0.0", "Added the `IDLETIME` and `FREQ` options." }) },
    { "restore-asking", DOC_SYSCMD, NULL, NULL,
      H({ "3.0.0", "Added the `REPLACE` modifier." }, { "5.0.0", "Added the `ABSTTL` modifier." },
        { "5.0.0", "Added the `IDLETIME` and `FREQ` options." }) },
    { "rpop", 0, NULL, NULL, H({ "6.2.0", "Added the `count` argument." }) },
    { "rpoplpush", DOC_DEPRECATED, "6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments", NULL },
    { "rpush", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple `element` arguments." }) },
    { "rpushx", 0, NULL, NULL, H({ "4.0.0", "Accepts multiple `element` arguments." }) },
    { "sadd", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple `member` arguments." }) },
    { "scan", 0, NULL, NULL, H({ "6.0.0", "Added the `TYPE` subcommand." }) },
    { "script|flush", 0, NULL, NULL,
      H({ "6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers." }) },
    { "set", 0, NULL, NULL,
      H({ "2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options." },
        { "6.0.0", "Added the `KEEPTTL` option." },
        { "6.2.0", "Added the `GET`, `EXAT` and `PXAT` option." },
        { "7.0.0", "Allowed the `NX` and `GET` options to be used together." }) },
    { "shutdown", 0, NULL, NULL,
      H({ "7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers." }) },
    { "slaveof", DOC_DEPRECATED, "5.0.0", "`REPLICAOF`", NULL },
    { "slowlog|get", 0, NULL, NULL,
      H({ "4.0.0", "Added client IP address, port and name to the reply." }) },
    { "spop", 0, NULL, NULL, H({ "3.2.0", "Added the `count` argument." }) },
    { "srandmember", 0, NULL, NULL, H({ "2.6.0", "Added the optional `count` argument." }) },
    { "srem", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple `member` arguments." }) },
    { "substr", DOC_DEPRECATED, "2.0.0", "`GETRANGE`", NULL },
    { "ttl", 0, NULL, NULL, H({ "2.8.0", "Added the -2 reply." }) },
    { "xadd", 0, NULL, NULL,
      H({ "6.2.0",
          "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option." },
        { "7.0.0", "Added support for the `<ms>-*` explicit ID form." }) },
    { "xautoclaim", 0, NULL, NULL,
      H({ "7.0.0",
          "Added an element to the reply array, containing deleted entries the command cleared from the PEL" }) },
    { "xgroup|create", 0, NULL, NULL, H({ "7.0.0", "Added the `entries_read` named argument." }) },
    { "xgroup|setid", 0, NULL, NULL,
      H({ "7.0.0", "Added the optional `entries_read` argument." }) },
    { "xinfo|groups", 0, NULL, NULL, H({ "7.0.0", "Added the `entries-read` and `lag` fields" }) },
    { "xinfo|stream", 0, NULL, NULL,
      H({ "6.0.0", "Added the `FULL` modifier." },
        { "7.0.0",
          "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields" }) },
    { "xpending", 0, NULL, NULL,
      H({ "6.2.0", "Added the `IDLE` option and exclusive range intervals." }) },
    { "xrange", 0, NULL, NULL, H({ "6.2.0", "Added exclusive ranges." }) },
    { "xrevrange", 0, NULL, NULL, H({ "6.2.0", "Added exclusive ranges." }) },
    { "xsetid", 0, NULL, NULL,
      H({ "7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments." }) },
    { "xtrim", 0, NULL, NULL,
      H({ "6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option." }) },
    { "zadd", 0, NULL, NULL,
      H({ "2.4.0", "Accepts multiple elements." },
        { "3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options." },
        { "6.2.0", "Added the `GT` and `LT` options." }) },
    { "zrange", 0, NULL, NULL,
      H({ "6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options." }) },
    { "zrangebylex", DOC_DEPRECATED, "6.2.0", "`ZRANGE` with the `BYLEX` argument", NULL },
    { "zrangebyscore", DOC_DEPRECATED, "6.2.0", "`ZRANGE` with the `BYSCORE` argument",
      H({ "2.0.0", "Added the `WITHSCORES` modifier." }) },
    { "zrem", 0, NULL, NULL, H({ "2.4.0", "Accepts multiple elements." }) },
    { "zrevrange", DOC_DEPRECATED, "6.2.0", "`ZRANGE` with the `REV` argument", NULL },
    { "zrevrangebylex", DOC_DEPRECATED, "6.2.0", "`ZRANGE` with the `REV` and `BYLEX` arguments",
      NULL },
    { "zrevrangebyscore", DOC_DEPRECATED, "6.2.0",
      "`ZRANGE` with the `REV` and `BYSCORE` arguments",
      H({ "2.1.6", "`min` and `max` can be exclusive." }) },
};

#undef H

static int
meta_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct docs_meta *)elem)->name);
}

static const struct docs_meta *
meta_of(const struct cmd_spec *s)
{
    char full[96];
    cmd_fullname(s, full, sizeof(full));
    return bsearch(full, docs_meta, sizeof(docs_meta) / sizeof(docs_meta[0]), sizeof(docs_meta[0]),
                   meta_cmp);
}

bool
docs_meta_sorted(void)
{
    for (size_t i = 1; i < sizeof(docs_meta) / sizeof(docs_meta[0]); i++) {
        if (strcmp(docs_meta[i - 1].name, docs_meta[i].name) >= 0) {
            return false;
        }
    }
    return true;
}

bool
docs_hides(const struct cmd_spec *s, bool subs)
{
    const struct docs_meta *m = meta_of(s);
    return m != NULL && (m->flags & (subs ? DOC_NO_SUBS : DOC_NO_ARGS)) != 0;
}

size_t
docs_meta_count(const struct cmd_spec *s)
{
    const struct docs_meta *m = meta_of(s);
    if (m == NULL) {
        return 0;
    }
    return (size_t)((m->flags & DOC_FLAGS) != 0) + (m->deprecated_since != NULL) +
           (m->replaced_by != NULL) + (m->hist != NULL);
}

void
docs_reply_meta(struct conn *c, const struct cmd_spec *s)
{
    const struct docs_meta *m = meta_of(s);
    if (m == NULL) {
        return;
    }
    if (m->flags & DOC_FLAGS) {
        reply_bulk_cstr(c, "doc_flags");
        reply_set(c, (size_t)((m->flags & DOC_DEPRECATED) != 0) + ((m->flags & DOC_SYSCMD) != 0));
        if (m->flags & DOC_DEPRECATED) {
            reply_simple(c, "deprecated");
        }
        if (m->flags & DOC_SYSCMD) {
            reply_simple(c, "syscmd");
        }
    }
    if (m->deprecated_since != NULL) {
        reply_bulk_cstr(c, "deprecated_since");
        reply_bulk_cstr(c, m->deprecated_since);
    }
    if (m->replaced_by != NULL) {
        reply_bulk_cstr(c, "replaced_by");
        reply_bulk_cstr(c, m->replaced_by);
    }
    if (m->hist != NULL) {
        size_t n = 0;
        while (m->hist[n].version != NULL) {
            n++;
        }
        reply_bulk_cstr(c, "history");
        reply_set(c, n);
        for (size_t i = 0; i < n; i++) {
            reply_array(c, 2);
            reply_bulk_cstr(c, m->hist[i].version);
            reply_bulk_cstr(c, m->hist[i].text);
        }
    }
}
