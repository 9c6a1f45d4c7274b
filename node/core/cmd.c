/* node/core/cmd.c: the command table's lookups and the argument helpers handlers share.
 * The dispatcher every command goes through is node/server/dispatch.c. */
#include "node/core/cmd.h"
#include "base/strnum.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/reply.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

/* The rows (node/commands/cmd_table.c), given to cmd_init(). */
static struct cmd_spec *cmd_table;
static size_t cmd_table_len;

#define LOOKUP_SLOTS 1024 /* power of two, > 2x the number of commands */

/* Built once by cmd_init() before any shard starts, read-only after. */
static const struct cmd_spec *lookup_tab[LOOKUP_SLOTS];
static const struct cmd_spec **by_id;
static size_t n_ids;

/* ASCII-only lower case: locale-free and inlined (this runs for every command). */
static inline unsigned char
ascii_lower(unsigned char ch)
{
    return (unsigned char)(ch - 'A') < 26 ? (unsigned char)(ch | 0x20) : ch;
}

static inline uint32_t
name_hash(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ascii_lower((unsigned char)p[i])) * 16777619u;
    }
    return h;
}

static inline bool
name_eq(const char *lower, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)lower[i] != ascii_lower((unsigned char)p[i])) {
            return false;
        }
    }
    return lower[n] == '\0';
}

void
cmd_init(struct cmd_spec *table, size_t n)
{
    if (by_id) {
        return;
    }
    cmd_table = table;
    cmd_table_len = n;
    size_t total = 0;
    for (size_t i = 0; i < cmd_table_len; i++) {
        total++;
        for (const struct cmd_spec *sub = cmd_table[i].subs; sub && sub->name; sub++) {
            total++;
        }
    }
    by_id = rv_calloc(total, sizeof(*by_id));
    /* ids and parent links are filled in here, once: the table is otherwise const. */
    for (size_t i = 0; i < cmd_table_len; i++) {
        struct cmd_spec *s = (struct cmd_spec *)&cmd_table[i];
        s->id = (uint32_t)n_ids;
        by_id[n_ids++] = s;
        uint32_t h = name_hash(s->name, strlen(s->name)) & (LOOKUP_SLOTS - 1);
        while (lookup_tab[h]) {
            h = (h + 1) & (LOOKUP_SLOTS - 1);
        }
        lookup_tab[h] = s;
        for (struct cmd_spec *sub = (struct cmd_spec *)s->subs; sub && sub->name; sub++) {
            sub->id = (uint32_t)n_ids;
            sub->parent = s;
            by_id[n_ids++] = sub;
        }
    }
}

const struct cmd_spec *
cmd_lookup(const char *name, size_t len)
{
    uint32_t h = name_hash(name, len) & (LOOKUP_SLOTS - 1);
    for (const struct cmd_spec *s; (s = lookup_tab[h]) != NULL; h = (h + 1) & (LOOKUP_SLOTS - 1)) {
        if (name_eq(s->name, name, len)) {
            return s;
        }
    }
    return NULL;
}

/* rename-command: clients look commands up in a second table, keyed by the
 * new names; everything internal (WAL replay, persist) keeps the original
 * names, and the dispatcher hands handlers and the WAL the original name. */
static const struct cmd_spec *client_tab[LOOKUP_SLOTS];
static const char *client_name[LOOKUP_SLOTS];
bool cmd_renamed;

const struct cmd_spec *
cmd_lookup_client(const char *name, size_t len)
{
    uint32_t h = name_hash(name, len) & (LOOKUP_SLOTS - 1);
    for (; client_tab[h] != NULL; h = (h + 1) & (LOOKUP_SLOTS - 1)) {
        if (name_eq(client_name[h], name, len)) {
            return client_tab[h];
        }
    }
    return NULL;
}

int
cmd_rename_command(const char *from, const char *to, char *err, size_t errsz)
{
    if (!cmd_renamed) {
        for (size_t i = 0; i < LOOKUP_SLOTS; i++) {
            client_tab[i] = lookup_tab[i];
            client_name[i] = lookup_tab[i] ? lookup_tab[i]->name : NULL;
        }
        cmd_renamed = true;
    }
    const struct cmd_spec *s = cmd_lookup_client(from, strlen(from));
    if (s == NULL) {
        snprintf(err, errsz, "rename-command: no command named '%s'", from);
        return -1;
    }
    if (to[0] && cmd_lookup_client(to, strlen(to)) != NULL) {
        snprintf(err, errsz, "rename-command: '%s' is already the name of a command", to);
        return -1;
    }
    /* Rebuild without `from`, then add `to` (open addressing has no delete). */
    const struct cmd_spec *tab[LOOKUP_SLOTS];
    const char *names[LOOKUP_SLOTS];
    memcpy(tab, client_tab, sizeof(tab));
    memcpy(names, client_name, sizeof(names));
    memset(client_tab, 0, sizeof(client_tab));
    memset(client_name, 0, sizeof(client_name));
    size_t flen = strlen(from);
    for (size_t i = 0; i < LOOKUP_SLOTS; i++) {
        if (tab[i] == NULL || name_eq(names[i], from, flen)) {
            continue;
        }
        uint32_t h = name_hash(names[i], strlen(names[i])) & (LOOKUP_SLOTS - 1);
        while (client_tab[h]) {
            h = (h + 1) & (LOOKUP_SLOTS - 1);
        }
        client_tab[h] = tab[i];
        client_name[h] = names[i];
    }
    if (to[0]) {
        char *lower = rv_strndup(to, strlen(to));
        for (char *p = lower; *p; p++) {
            *p = (char)ascii_lower((unsigned char)*p);
        }
        uint32_t h = name_hash(lower, strlen(lower)) & (LOOKUP_SLOTS - 1);
        while (client_tab[h]) {
            h = (h + 1) & (LOOKUP_SLOTS - 1);
        }
        client_tab[h] = s;
        client_name[h] = lower;
    }
    return 0;
}

const struct cmd_spec *
cmd_lookup_sub(const struct cmd_spec *parent, const char *name, size_t len)
{
    for (const struct cmd_spec *sub = parent->subs; sub && sub->name; sub++) {
        if (name_eq(sub->name, name, len)) {
            return sub;
        }
    }
    /* a container with a handler of its own answers unknown subcommands
     * itself (JSON.DEBUG, with RedisJSON's error text) */
    return parent->fn != NULL ? parent : NULL;
}

size_t
cmd_count(void)
{
    return cmd_table_len;
}
const struct cmd_spec *
cmd_at(size_t i)
{
    return &cmd_table[i];
}
size_t
cmd_id_count(void)
{
    return n_ids;
}
const struct cmd_spec *
cmd_by_id(uint32_t id)
{
    return id < n_ids ? by_id[id] : NULL;
}

void
cmd_fullname(const struct cmd_spec *s, char *out, size_t outsz)
{
    if (s->parent) {
        snprintf(out, outsz, "%s|%s", s->parent->name, s->name);
    } else {
        snprintf(out, outsz, "%s", s->name);
    }
}

int
cmd_get_keys(const struct cmd_spec *s, int argc, struct rv_str *argv, int *out, int max)
{
    if (s->getkeys) {
        return s->getkeys(argc, argv, out, max);
    }
    if (s->first <= 0) {
        return 0;
    }
    int last = s->last < 0 ? argc + s->last : s->last;
    int n = 0;
    for (int i = s->first; i <= last && i < argc && n < max; i += s->step) {
        out[n++] = i;
    }
    return n;
}

bool
cmd_arg_is(struct rv_str a, const char *lower)
{
    return name_eq(lower, a.p, a.len);
}

bool
cmd_arg_int(struct rv_str a, int64_t *out)
{
    return str_to_i64(a.p, a.len, out);
}

/* The cursor as strtoul() reads it (Redis parseScanCursorOrReply): no leading
 * space, optional sign, decimal digits, nothing after, no overflow; a negative
 * number wraps; an empty string is 0. */
bool
cmd_arg_cursor(struct rv_str a, uint64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0;

    if (a.len == 0) {
        *out = 0;
        return true;
    }
    if (a.p[0] == '+' || a.p[0] == '-') {
        neg = a.p[0] == '-';
        i = 1;
    }
    if (i == a.len) {
        return false;
    }
    for (; i < a.len; i++) {
        unsigned d = (unsigned)(a.p[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? 0 - v : v;
    return true;
}

bool
cmd_arg_double(struct rv_str a, long double *out)
{
    char buf[5200];
    if (a.len == 0 || a.len >= sizeof(buf) || isspace((unsigned char)a.p[0])) {
        return false;
    }
    memcpy(buf, a.p, a.len);
    buf[a.len] = '\0';
    char *end;
    errno = 0;
    long double v = strtold(buf, &end);
    if (*end != '\0' || isnan(v) ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))) {
        return false;
    }
    *out = v;
    return true;
}

bool
cmd_parse_mpop(struct conn *c, int argc, struct rv_str *argv, int at, const char *end0,
               const char *end1, int *nkeys, int *which, int64_t *count)
{
    int64_t nk;
    if (!cmd_arg_int(argv[at], &nk) || nk <= 0 || nk > INT32_MAX) {
        reply_errf(c, "ERR numkeys should be greater than 0");
        return false;
    }
    if (nk > argc - at - 2) {
        reply_err(c, RV_ERR_SYNTAX);
        return false;
    }
    int end = at + 1 + (int)nk;
    if (cmd_arg_is(argv[end], end0)) {
        *which = 0;
    } else if (cmd_arg_is(argv[end], end1)) {
        *which = 1;
    } else {
        reply_err(c, RV_ERR_SYNTAX);
        return false;
    }
    *count = 1;
    for (int i = end + 1; i < argc; i += 2) {
        if (i > end + 1 || !cmd_arg_is(argv[i], "count") || i + 1 >= argc) {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
        if (!cmd_arg_int(argv[i + 1], count) || *count <= 0) {
            reply_errf(c, "ERR count should be greater than 0");
            return false;
        }
    }
    *nkeys = (int)nk;
    return true;
}

bool
cmd_parse_scan_opts(struct conn *c, int argc, struct rv_str *argv, int from, unsigned allow,
                    struct scan_opts *o)
{
    *o = (struct scan_opts){ .count = 10 };
    for (int i = from; i < argc;) {
        bool has_val = i + 1 < argc;
        if (has_val && cmd_arg_is(argv[i], "count")) {
            if (!cmd_arg_int(argv[i + 1], &o->count)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (o->count < 1) {
                reply_err(c, RV_ERR_SYNTAX);
                return false;
            }
            i += 2;
        } else if (has_val && cmd_arg_is(argv[i], "match")) {
            bool star = argv[i + 1].len == 1 && argv[i + 1].p[0] == '*';
            o->match = star ? (struct rv_str){ NULL, 0 } : argv[i + 1];
            i += 2;
        } else if (has_val && (allow & SCAN_ALLOW_TYPE) && cmd_arg_is(argv[i], "type")) {
            o->type = argv[i + 1];
            i += 2;
        } else if ((allow & SCAN_ALLOW_NOVALUES) && cmd_arg_is(argv[i], "novalues")) {
            o->novalues = true;
            i++;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

cmd_call_fn *cmd_caller;

void
cmd_set_caller(cmd_call_fn *fn)
{
    cmd_caller = fn;
}

/* Which keys of a write Redis signals as modified (signalModifiedKey), in
 * cmd_get_keys order: by default all of them; a command that stores into a
 * destination only that one (its sources were only read), and the commands
 * that change a stream's consumer groups none (Redis 7.0 signals no key for
 * them: a cached stream's entries did not change). CLIENT TRACKING's
 * invalidations and WATCH both follow it, as both follow signalModifiedKey. */
enum wk_rule { WK_ALL, WK_FIRST, WK_SECOND, WK_BUT_FIRST, WK_NONE };

static const struct {
    const char *name; /* cmd_fullname's form */
    enum wk_rule rule;
} written_rules[] = {
    { "sinterstore", WK_FIRST },
    { "sunionstore", WK_FIRST },
    { "sdiffstore", WK_FIRST },
    { "zunionstore", WK_FIRST },
    { "zinterstore", WK_FIRST },
    { "zdiffstore", WK_FIRST },
    { "zrangestore", WK_FIRST },
    { "geosearchstore", WK_FIRST },
    { "bitop", WK_FIRST },
    { "pfmerge", WK_FIRST },
    { "copy", WK_SECOND },
    { "sort", WK_BUT_FIRST },
    { "georadius", WK_BUT_FIRST },
    { "georadiusbymember", WK_BUT_FIRST },
    { "xsetid", WK_NONE },
    { "xack", WK_NONE },
    { "xclaim", WK_NONE },
    { "xautoclaim", WK_NONE },
    { "xreadgroup", WK_NONE },
    { "xgroup|create", WK_NONE },
    { "xgroup|createconsumer", WK_NONE },
    { "xgroup|delconsumer", WK_NONE },
    { "xgroup|destroy", WK_NONE },
    { "xgroup|setid", WK_NONE },
};

int
cmd_written_keys(const struct cmd_spec *cmd, int *keys, int n)
{
    char full[64];
    if (n == 0) {
        return 0;
    }
    cmd_fullname(cmd, full, sizeof(full));
    for (size_t i = 0; i < sizeof(written_rules) / sizeof(written_rules[0]); i++) {
        if (strcmp(written_rules[i].name, full) != 0) {
            continue;
        }
        switch (written_rules[i].rule) {
        case WK_FIRST: return 1;
        case WK_SECOND: keys[0] = keys[n > 1 ? 1 : 0]; return n > 1 ? 1 : 0;
        case WK_BUT_FIRST: memmove(keys, keys + 1, (size_t)(n - 1) * sizeof(*keys)); return n - 1;
        case WK_NONE: return 0;
        default: return n;
        }
    }
    return n;
}

const struct cmd_spec *
cmd_effective(struct conn *c, const struct cmd_spec *cmd, int *argc, struct rv_str **argv)
{
    if (c->effect != EFFECT_REDO) {
        return cmd;
    }
    int rargc;
    struct rv_str *rargv = (struct rv_str *)effect_argv(c, &rargc);
    const struct cmd_spec *redo = rargc > 0 ? cmd_lookup(rargv[0].p, rargv[0].len) : NULL;
    if (redo == NULL) {
        return cmd;
    }
    *argc = rargc;
    *argv = rargv;
    return redo;
}
