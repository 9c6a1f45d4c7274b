/* node/core/cmd.c: command lookup and the one dispatcher every command goes through. */
#include "node/core/cmd.h"
#include "base/strnum.h"

#include "cluster/slot.h"
#include "node/features/acl.h"
#include "base/mem.h"
#include "node/features/block.h"
#include "node/core/conn.h"
#include "node/features/evict.h"
#include "node/obs/metrics.h"
#include "node/persist/persist.h"
#include "node/features/multi.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

extern struct cmd_spec cmd_table[];
extern const size_t cmd_table_len;

#define LOOKUP_SLOTS 1024   /* power of two, > 2x the number of commands */

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
cmd_init(void)
{
    if (by_id) {
        return;
    }
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
static bool renamed;

static const struct cmd_spec *
client_lookup(const char *name, size_t len)
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
    if (!renamed) {
        for (size_t i = 0; i < LOOKUP_SLOTS; i++) {
            client_tab[i] = lookup_tab[i];
            client_name[i] = lookup_tab[i] ? lookup_tab[i]->name : NULL;
        }
        renamed = true;
    }
    const struct cmd_spec *s = client_lookup(from, strlen(from));
    if (s == NULL) {
        snprintf(err, errsz, "rename-command: no command named '%s'", from);
        return -1;
    }
    if (to[0] && client_lookup(to, strlen(to)) != NULL) {
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
    return NULL;
}

size_t cmd_count(void) { return cmd_table_len; }
const struct cmd_spec *cmd_at(size_t i) { return &cmd_table[i]; }
size_t cmd_id_count(void) { return n_ids; }
const struct cmd_spec *cmd_by_id(uint32_t id) { return id < n_ids ? by_id[id] : NULL; }

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
    if (*end != '\0' || isnan(v) || (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))) {
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

static void
reply_unknown(struct conn *c, const char *what, int argc, struct rv_str *argv, int from)
{
    char args[512];
    size_t off = 0;
    args[0] = '\0';
    for (int i = from; i < argc && off < sizeof(args) - 1; i++) {
        int w = snprintf(args + off, sizeof(args) - off, "'%.*s' ",
                         (int)(argv[i].len > 128 ? 128 : argv[i].len), argv[i].p);
        off += w > 0 ? (size_t)w : 0;
    }
    reply_errf(c, "ERR unknown %s '%.*s', with args beginning with: %s", what,
               (int)(argv[from - 1].len > 128 ? 128 : argv[from - 1].len), argv[from - 1].p, args);
}

/* Cluster routing on a multi-shard node: all keys in one slot, owned here. */
static bool
cmd_route(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    int keys[256];
    int nk;
    int last;
    int slot = -1;

    if (cmd->getkeys) {
        nk = cmd->getkeys(argc, argv, keys, 256);
        for (int i = 0; i < nk; i++) {
            int sl = (int)slot_of(argv[keys[i]].p, argv[keys[i]].len);
            if (slot >= 0 && sl != slot) {
                reply_err(c, RV_ERR_CROSSSLOT);
                return false;
            }
            slot = sl;
        }
    } else {
        last = cmd->last < 0 ? argc + cmd->last : cmd->last;
        for (int i = cmd->first; i <= last && i < argc; i += cmd->step) {
            int sl = (int)slot_of(argv[i].p, argv[i].len);
            if (slot >= 0 && sl != slot) {
                reply_err(c, RV_ERR_CROSSSLOT);
                return false;
            }
            slot = sl;
        }
    }
    if (slot < 0 || shard_owns_slot(c->shard, (unsigned)slot)) {
        return true;
    }
    struct node *n = shard_node(c->shard);
    const struct cfg *cfg = shard_cfg(c->shard);
    unsigned owner = node_slot_shard(n, (unsigned)slot);
    reply_errf(c, "MOVED %d %s:%d", slot,
               cfg->cluster_announce_ip[0] ? cfg->cluster_announce_ip : c->lip,
               node_shard_port(n, owner));
    return false;
}

/* A command refused before running: counted, and inside MULTI the
 * transaction is flagged so EXEC answers EXECABORT (as Redis). */
static void
cmd_reject(struct conn *c, struct cmd_stat *st)
{
    if (st) {
        st->rejected++;
    }
    if (c->flags & CONN_MULTI) {
        multi_flag_error(c);
    }
}

_Thread_local uint64_t cmd_batch_mark;

/* The open run of a cmd_batch_runs batch: n calls of st since t0 (the
 * batch's start for the first run, so that its first parse counts too). */
static _Thread_local struct {
    bool on;
    uint32_t n;
    struct cmd_stat *st;
    uint64_t t0;
} run;

/* latency-tracking: n calls of `each` cycles into st's histogram. */
static inline void
hist_add(struct cmd_stat *st, uint64_t each, uint64_t n)
{
    if (atomic_load_explicit(&metrics_hot.track, memory_order_relaxed)) {
        st->hist[metrics_bucket(each, atomic_load_explicit(&metrics_hot.us_mul, memory_order_relaxed))] += n;
    }
}

static void
run_close(uint64_t now)
{
    if (run.n == 0) {
        return;
    }
    uint64_t cycles = now - run.t0;
    run.st->cycles += cycles;
    hist_add(run.st, cycles / run.n, run.n);
    run.t0 = now;
    run.n = 0;
    run.st = NULL;
}

void
cmd_batch_runs_begin(void)
{
    run.t0 = __rdtsc();
    run.n = 0;
    run.st = NULL;
    run.on = true;
}

void
cmd_batch_runs_end(void)
{
    run_close(__rdtsc());
    run.on = false;
}

/* cmd_call's handler call inside a cmd_batch_runs batch. A nested call (none
 * today: a replica applies effects, never EXEC or scripts) is timed on its
 * own, outside any batch, and counts in the outer run's time too. */
static void
run_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv, struct cmd_stat *st)
{
    if (run.st != st) {
        run_close(__rdtsc());
        run.st = st;
    }
    uint64_t mark = cmd_batch_mark;
    cmd_batch_mark = 0;
    run.on = false;
    cmd->fn(c, argc, argv);
    run.on = true;
    cmd_batch_mark = mark;
    run.n++;
    st->calls++;
}

void
cmd_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct shard *s = c->shard;
    struct cmd_stat *st = &shard_cmdstats(s)[cmd->id];
    /* Unread output before the handler: appending may compact the buffer
     * (after a partial write), so positions are taken relative to off. */
    size_t before = c->wbuf.len - c->wbuf.off;

    if (rv_unlikely(c->flags & CONN_REPLY_SKIP_NEXT)) {
        c->flags = (c->flags & ~CONN_REPLY_SKIP_NEXT) | CONN_REPLY_SKIP;
    }
    c->last_cmd = cmd;
    const struct persist_hot *ph = persist_hot(c->persist);
    /* a write whose record could not be written must not run (it counts as failed below) */
    bool refused = (cmd->flags & CMD_WRITE) && ph->log && !(c->flags & CONN_REPLAY) &&
                   rv_unlikely(persist_refuse_size(c, argc, argv));
    if (rv_unlikely(ph->cow) && (cmd->flags & CMD_WRITE) && !refused) {
        persist_before_write(c, cmd, argc, argv);   /* checkpoint copy-on-write */
    }
    if (rv_unlikely(refused)) {
        /* nothing to run */
    } else if (run.on) {
        run_call(c, cmd, argc, argv, st);
    } else {
        uint64_t t0 = cmd_batch_mark;
        if (t0 == 0) {
            t0 = __rdtsc();
        }
        cmd->fn(c, argc, argv);
        uint64_t t1 = __rdtsc();
        uint64_t cycles = t1 - t0;
        if (cmd_batch_mark != 0) {
            cmd_batch_mark = t1;          /* the next command of the batch starts here */
        }
        st->cycles += cycles;
        st->calls++;
        hist_add(st, cycles, 1);
        if (rv_unlikely(cycles >= atomic_load_explicit(&metrics_hot.slow_cycles, memory_order_relaxed))) {
            metrics_slow(c, cmd, argc, argv, cycles);
        }
    }
    shard_stats(s)->commands++;
    size_t mark = c->wbuf.off + before;   /* where this command's reply starts */
    if (rv_unlikely(c->wbuf.len > mark && c->wbuf.data[mark] == '-')) {
        st->failed++;
    } else if ((cmd->flags & CMD_WRITE) && c->wbuf.len > mark) {
        /* (A blocking command that went on waiting replied nothing and wrote nothing.) */
        if (rv_unlikely(*shard_watched(s) != NULL)) {
            multi_touch(s, cmd, argc, argv);
        }
        if (rv_unlikely(*shard_blocking(s) != NULL)) {
            block_signal(s, cmd, argc, argv);
        }
        if (ph->log && !(c->flags & CONN_REPLAY)) {   /* (a replica logs the frames it applies) */
            persist_log(c, cmd, argc, argv, mark);
        }
    }
    if (rv_unlikely(c->flags & (CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT))) {
        c->wbuf.len = mark;
        c->flags &= ~CONN_REPLY_SKIP;
    }
}

static void
dispatch_one(struct conn *c, int argc, struct rv_str *argv)
{
    struct shard *s = c->shard;
    const struct cmd_spec *cmd;

    if (rv_likely(!renamed)) {
        cmd = cmd_lookup(argv[0].p, argv[0].len);
    } else {
        cmd = client_lookup(argv[0].p, argv[0].len);
        if (cmd) {
            argv[0] = (struct rv_str){ cmd->name, strlen(cmd->name) };   /* WAL and MULTI see the real name */
        }
    }
    if (rv_unlikely(cmd == NULL)) {
        reply_unknown(c, "command", argc, argv, 1);
        cmd_reject(c, NULL);
        return;
    }
    if (rv_unlikely(cmd->subs != NULL) && argc >= 2) {
        const struct cmd_spec *sub = cmd_lookup_sub(cmd, argv[1].p, argv[1].len);
        if (sub == NULL) {
            char up[64];
            size_t i;
            for (i = 0; cmd->name[i] && i < sizeof(up) - 1; i++) {
                up[i] = (char)toupper((unsigned char)cmd->name[i]);
            }
            up[i] = '\0';
            reply_errf(c, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                       (int)(argv[1].len > 128 ? 128 : argv[1].len), argv[1].p, up);
            cmd_reject(c, &shard_cmdstats(s)[cmd->id]);
            return;
        }
        cmd = sub;
    }
    struct cmd_stat *st = &shard_cmdstats(s)[cmd->id];
    if (rv_unlikely((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity)) {
        char full[96];
        cmd_fullname(cmd, full, sizeof(full));
        reply_err_arity(c, full);
        cmd_reject(c, st);
        return;
    }
    /* Authentication and ACLs: one predicted branch for unrestricted users. */
    if (rv_unlikely(c->acl_slow) && !acl_allow(c, cmd, argc, argv)) {
        cmd_reject(c, st);
        return;
    }
    if (shard_multi(s) && (cmd->first > 0 || cmd->getkeys) && !cmd_route(c, cmd, argc, argv)) {
        cmd_reject(c, st);
        return;
    }
    if (rv_unlikely(c->flags & CONN_PUBSUB) && c->proto == 2 && !(cmd->flags & CMD_SUBOK)) {
        char full[96];
        cmd_fullname(cmd, full, sizeof(full));
        reply_errf(c, "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                      "QUIT / RESET are allowed in this context", full);
        cmd_reject(c, st);
        return;
    }
    /* Over a memory budget: refuse writes that may grow memory, and (as Redis)
     * anything that would be queued inside MULTI. */
    if (rv_unlikely((cmd->flags & CMD_DENYOOM) || (c->flags & CONN_MULTI)) &&
        evict_hot(*shard_evict(s))->armed &&
        ((cmd->flags & CMD_DENYOOM) || !(cmd->flags & CMD_NOQUEUE)) && !evict_admit(s)) {
        reply_err(c, RV_ERR_OOM);
        cmd_reject(c, st);
        return;
    }
    if (rv_unlikely(cmd->flags & CMD_WRITE) && persist_hot(c->persist)->guard &&
        persist_refuse_write(c)) {
        cmd_reject(c, st);
        return;
    }
    /* replica-serve-stale-data no while the link to the primary is not up:
     * only the commands flagged stale (Redis's list) run. */
    if (rv_unlikely(persist_hot(c->persist)->stale) && !(cmd->flags & CMD_STALE) &&
        !(c->flags & CONN_REPLAY)) {
        reply_errf(c, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.");
        cmd_reject(c, st);
        return;
    }
    if (rv_unlikely(c->flags & CONN_MULTI) && !(cmd->flags & CMD_NOQUEUE)) {
        if (cmd->flags & CMD_NO_MULTI) {
            reply_errf(c, "ERR Command not allowed inside a transaction");
            cmd_reject(c, st);
            return;
        }
        multi_queue(c, cmd, argc, argv);
        return;
    }
    cmd_call(c, cmd, argc, argv);
}

void
cmd_dispatch(struct conn *c, int argc, struct rv_str *argv)
{
    dispatch_one(c, argc, argv);
    /* Keys written by this command (or whole transaction) wake their waiters now. */
    if (rv_unlikely(block_pending(c->shard))) {
        block_serve(c->shard);
    }
}
