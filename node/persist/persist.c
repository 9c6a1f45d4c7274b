/* node/persist/persist.c: WAL glue, group commit, recovery (see persist.h). The
 * checkpoint snapshot lives in snap.c. */
#include "node/persist/persist.h"
#include "node/persist/persist_int.h"

#include "base/clock.h"
#include "base/fs.h"
#define LOG_MODULE "persist"
#include "base/log.h"
#include "base/mem.h"
#include "base/strnum.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/ks.h"
#include "node/obs/metrics.h"
#include "node/types/obj.h"
#include "node/persist/loading.h"
#include "node/persist/replay.h"
#include "node/core/reply.h"
#include "node/core/node.h"
#include "node/core/shard.h"
#include "replication/repl.h"
#include "wal/wal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

/* Commands logged as a rewrite of their arguments: relative times made
 * absolute, or a key's whole state. (What a handler reports it did, a random
 * pick, a computed value, a served blocking pop, is in c->effect instead.) */
enum rw {
    RW_NONE = 0,
    RW_SETEX,
    RW_PSETEX,
    RW_SET,
    RW_STATE,
    RW_RESTORE,
};
static const struct {
    const char *name;
    enum rw rw;
} rw_names[] = {
    { "setex", RW_SETEX },     { "psetex", RW_PSETEX },   { "set", RW_SET },
    { "semaphore", RW_STATE }, { "restore", RW_RESTORE },
};
#define NRW (sizeof(rw_names) / sizeof(rw_names[0]))
/* enum rw by cmd_spec.id; built once by the main thread before shards run. */
static uint8_t *rw_by_id;

static void
rw_init(void)
{
    if (rw_by_id != NULL) {
        return;
    }
    rw_by_id = rv_calloc(cmd_id_count(), 1);
    for (size_t i = 0; i < NRW; i++) {
        const struct cmd_spec *s = cmd_lookup(rw_names[i].name, strlen(rw_names[i].name));
        if (s != NULL) {
            rw_by_id[s->id] = (uint8_t)rw_names[i].rw;
            for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
                rw_by_id[sub->id] = (uint8_t)rw_names[i].rw;
            }
        }
    }
}

static inline enum rw
rw_of(const struct cmd_spec *cmd)
{
    return (enum rw)rw_by_id[cmd->id];
}

struct persist *
persist_of(struct shard *s)
{
    return shard_env(s)->persist;
}

/* ---------------------------------------------------------------- records */

/* Records go to the WAL's staging buffer, or (memory mode with a
 * replication backlog) to a scratch buffer; either way a sealed record is
 * handed to replication, which copies it into its backlog. */
static inline struct buf *
rec_buf(struct persist *p)
{
    return p->w ? wal_buf(p->w) : &p->mstage;
}

static void on_expire(void *arg, const struct ks_entry *e);
static persist_gone_fn *gone_fn;

void
persist_set_gone_fn(persist_gone_fn *fn)
{
    gone_fn = fn;
}

void
persist_hook_ks(struct shard *s, struct ks *ks)
{
    ks_set_expire_hook(ks, on_expire, persist_of(s));
}

const char *
persist_dir(struct shard *s)
{
    return persist_of(s)->dir;
}

static inline uint64_t
last_lsn(const struct persist *p)
{
    return p->w ? wal_last_lsn(p->w) : p->next_lsn - 1;
}

uint64_t
persist_last_lsn(struct shard *s)
{
    struct persist *p = persist_of(s);
    return p == NULL ? 0 : last_lsn(p);
}

static void
rec_open(struct persist *p)
{
    if (p->rec_open) {
        return;
    }
    if (p->w) {
        p->rec_mark = wal_rec_begin(p->w);
    } else {
        p->mstage.off = p->mstage.len = 0;
        buf_reserve(&p->mstage, WAL_REC_HDR);
        p->rec_mark = 0;
        p->mstage.len = WAL_REC_HDR;
    }
    p->pay_start = rec_buf(p)->len;
    wal_pay_begin(rec_buf(p), WAL_P_CMDS);
    p->rec_open = true;
    p->rec_db = 0;
}

static void
rec_close(struct persist *p)
{
    if (!p->rec_open) {
        return;
    }
    p->rec_open = false;
    struct buf *b = rec_buf(p);
    if (wal_pay_ncmds(b, p->pay_start) == 0) {
        if (p->w) {
            wal_rec_abort(p->w, p->rec_mark);
        }
        if (__builtin_expect(p->ckpt_pending, 0)) {
            snap_after_record(p);
        }
        return;
    }
    if (p->w) {
        if (wal_rec_end(p->w, p->rec_mark, shard_env(p->s)->now_ms) == 0) {
            return; /* over WAL_MAX_REC: dropped, the WAL failed (logged) */
        }
    } else if (b->len - WAL_REC_HDR > WAL_MAX_REC) {
        log_warn("[shard %u] a record of %zu bytes is over the %llu-byte limit: not sent to "
                 "replicas",
                 shard_env(p->s)->id, b->len - WAL_REC_HDR, (unsigned long long)WAL_MAX_REC);
        return;
    } else {
        /* memory mode: the record only travels to replicas, unsealed (see wal.h) */
        wal_frame_mark((uint8_t *)b->data, b->len - WAL_REC_HDR, p->next_lsn++,
                       shard_env(p->s)->now_ms);
    }
    p->changes++;
    if (p->repl) {
        repl_feed(p->repl, (const uint8_t *)b->data + p->rec_mark, b->len - p->rec_mark);
    }
    if (__builtin_expect(p->ckpt_pending, 0)) {
        snap_after_record(p); /* asked for while this record was open */
    }
}

static void
rec_cmd(struct persist *p, int argc, const struct rv_str *argv)
{
    wal_pay_cmd(rec_buf(p), p->pay_start, argc, argv);
}

/* The next command is the running one's database's: replay starts each
 * record in database 0, so a log that only uses database 0 has no SELECT. */
static inline void
rec_db(struct persist *p)
{
    unsigned db = shard_env(p->s)->db;
    if (rv_unlikely(db != p->rec_db)) {
        char num[12];
        int n = snprintf(num, sizeof(num), "%u", db);
        struct rv_str v[2] = { { "SELECT", 6 }, { num, (size_t)n } };
        rec_cmd(p, 2, v);
        p->rec_db = db;
    }
}

static void
emit_to_rec(void *arg, int argc, const struct rv_str *argv)
{
    rec_cmd(arg, argc, argv);
}

#define S(lit) ((struct rv_str){ lit, sizeof(lit) - 1 })

static struct rv_str
fmt_i64(char *buf, int64_t v)
{
    int n = snprintf(buf, 24, "%" PRId64, v);
    return (struct rv_str){ buf, (size_t)n };
}

/* DEL key, then the commands that rebuild its current value (and deadline). */
static void
rec_key_state(struct persist *p, struct rv_str key)
{
    struct rv_str del[2] = { S("DEL"), key };
    rec_cmd(p, 2, del);
    struct ks_entry *e = ks_peek(shard_env(p->s)->ks, key.p, key.len);
    if (e == NULL) {
        return;
    }
    snap_emit_entry(e, emit_to_rec, p);
}

/* ---- rewrites ---- */

static bool
arg_is(struct rv_str a, const char *lower)
{
    return cmd_arg_is(a, lower);
}

/* SET/GETEX: EX/PX -> PXAT; EXAT -> PXAT. */
static void
rw_ttl_opts(struct persist *p, int argc, struct rv_str *argv, int from, int64_t now)
{
    struct rv_str v[argc];
    char num[24];
    int n = 0;
    for (int i = 0; i < from; i++) {
        v[n++] = argv[i];
    }
    for (int i = from; i < argc; i++) {
        int64_t x;
        bool ex = arg_is(argv[i], "ex"), px = arg_is(argv[i], "px"), exat = arg_is(argv[i], "exat");
        if ((ex || px || exat) && i + 1 < argc && cmd_arg_int(argv[i + 1], &x)) {
            int64_t at = ex ? now + x * 1000 : px ? now + x : x * 1000;
            v[n++] = S("PXAT");
            v[n++] = fmt_i64(num, at);
            i++;
            continue;
        }
        v[n++] = argv[i];
    }
    rec_cmd(p, n, v);
}

/* The record that redoes an argument-logged write exactly on recovery and on
 * replicas: relative times become absolute, the rest is logged as it came. */
static void
log_args(struct persist *p, enum rw rw, int argc, struct rv_str *argv)
{
    int64_t now = shard_env(p->s)->now_ms;
    char num[24];

    switch (rw) {
    case RW_NONE: rec_cmd(p, argc, argv); return;
    case RW_SETEX:
    case RW_PSETEX: { /* SET key value PXAT abs */
        int64_t x;
        if (!cmd_arg_int(argv[2], &x)) {
            return;
        }
        int64_t at = rw == RW_SETEX ? now + x * 1000 : now + x;
        struct rv_str v[5] = { S("SET"), argv[1], argv[3], S("PXAT"), fmt_i64(num, at) };
        rec_cmd(p, 5, v);
        return;
    }
    case RW_SET:
        if (argc == 3) {
            rec_cmd(p, argc, argv); /* plain SET: nothing relative */
            return;
        }
        rw_ttl_opts(p, argc, argv, 3, now);
        return;
    case RW_STATE: rec_key_state(p, argv[1]); return;
    case RW_RESTORE: { /* a relative ttl becomes ABSTTL */
        int64_t ttl;
        bool abs = false;
        for (int i = 4; i < argc; i++) {
            abs |= arg_is(argv[i], "absttl");
        }
        if (abs || !cmd_arg_int(argv[2], &ttl) || ttl == 0) {
            rec_cmd(p, argc, argv);
            return;
        }
        struct rv_str *v = rv_malloc(((size_t)argc + 1) * sizeof(*v));
        memcpy(v, argv, (size_t)argc * sizeof(*v));
        v[2] = fmt_i64(num, now + ttl);
        v[argc] = S("ABSTTL");
        rec_cmd(p, argc + 1, v);
        rv_free(v);
        return;
    }
    }
}

/* A migration's tap (persist_set_tap) is shown a write as logged; true
 * when only the tap wanted it (nothing else logs on this shard). */
static bool
tapped_only(struct persist *p, int argc, const struct rv_str *argv)
{
    p->tap(p->tap_arg, shard_env(p->s)->db, argc, argv);
    return p->tap_only;
}

void
persist_log(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct persist *p = persist_of(c->shard);
    if (p == NULL || !p->hot.log || p->loading || (c->flags & CONN_REPLAY) || p->replica) {
        return; /* (a replica's own writes, replica-read-only no, stay local) */
    }
    bool txn = (c->flags & CONN_IN_EXEC) != 0;
    enum rw rw = rw_of(cmd);
    if (c->effect == EFFECT_REDO) {
        argv = (struct rv_str *)effect_argv(c, &argc);
        rw = RW_NONE;
    }
    if (rv_unlikely(p->tap != NULL) && tapped_only(p, argc, argv)) {
        return;
    }
    if (p->w == NULL && !txn && !p->rec_open && p->repl && repl_backlog_on(p->repl) &&
        shard_env(p->s)->db == 0 && (rw == RW_NONE || (rw == RW_SET && argc == 3))) {
        /* memory mode, a command logged as its own arguments: straight into the backlog */
        repl_log_cmd(p->repl, p->next_lsn++, shard_env(p->s)->now_ms, argc, argv);
        p->changes++;
        c->own_lsn = last_lsn(p);
        return;
    }
    rec_open(p);
    rec_db(p);
    log_args(p, rw, argc, argv);
    if (!txn) {
        rec_close(p);
        c->own_lsn = last_lsn(p);
    }
}

void
persist_exec_end(struct conn *c)
{
    struct persist *p = persist_of(c->shard);
    if (p && p->hot.log && !(c->flags & CONN_REPLAY) && !p->replica) {
        rec_close(p);
        c->own_lsn = last_lsn(p);
    }
}

void
persist_set_tap(struct shard *s, persist_tap_fn *fn, void *arg)
{
    struct persist *p = persist_of(s);
    if (p == NULL) {
        return;
    }
    p->tap = fn;
    p->tap_arg = arg;
    if (fn != NULL && !p->hot.log) {
        p->hot.log = true; /* dispatch calls persist_log only while this is on */
        p->tap_only = true;
    } else if (fn == NULL && p->tap_only) {
        p->hot.log = false;
        p->tap_only = false;
    }
}

/* Lazy or active expiry deleted a key: log it as DEL. */
static void
on_expire(void *arg, const struct ks_entry *e)
{
    struct persist *p = arg;
    if (gone_fn != NULL && !p->loading) {
        gone_fn(p->s, ks_entry_key(e));
    }
    if (p->loading || !p->hot.log || p->replica) {
        return;
    }
    struct rv_str v[2] = { S("DEL"), ks_entry_key(e) };
    if (rv_unlikely(p->tap != NULL) && tapped_only(p, 2, v)) {
        return;
    }
    bool was_open = p->rec_open;
    rec_open(p);
    rec_db(p);
    rec_cmd(p, 2, v);
    if (!was_open) {
        rec_close(p);
    }
}

void
persist_log_cmd(struct shard *s, int argc, const struct rv_str *argv)
{
    struct persist *p = persist_of(s);
    if (p == NULL || p->loading || !p->hot.log || p->replica) {
        return;
    }
    if (rv_unlikely(p->tap != NULL) && tapped_only(p, argc, argv)) {
        return;
    }
    bool was_open = p->rec_open;
    rec_open(p);
    if (p->rec_db != 0) { /* (its database 0's: the next command's rec_db selects again) */
        struct rv_str v[2] = { S("SELECT"), S("0") };
        rec_cmd(p, 2, v);
        p->rec_db = 0;
    }
    rec_cmd(p, argc, argv);
    if (!was_open) {
        rec_close(p);
    }
}

/* ---------------------------------------------------------------- refusing, holding */

uint64_t
persist_rec_need(uint64_t open, int argc, const struct rv_str *argv)
{
    return (open ? open : 5) + wal_pay_cmd_max(argc, argv);
}

bool
persist_refuse_size(struct conn *c, int argc, const struct rv_str *argv)
{
    struct persist *p = persist_of(c->shard);
    uint64_t open = p->rec_open ? rec_buf(p)->len - p->rec_mark - WAL_REC_HDR : 0;
    if (rv_likely(persist_rec_need(open, argc, argv) <= WAL_MAX_REC)) {
        return false;
    }
    reply_errf(c,
               "ERR command too large for the write-ahead log: a record holds at most %llu "
               "bytes%s",
               (unsigned long long)WAL_MAX_REC,
               open ? " (this transaction's record so far included)" : "");
    return true;
}

bool
persist_refuse_write(struct conn *c)
{
    struct persist *p = persist_of(c->shard);
    if (p == NULL) {
        return false;
    }
    if (p->repl && repl_guard_on(p->repl) && repl_refuse_write(p->repl, c)) {
        return true;
    }
    if (p->w == NULL) {
        return false;
    }
    int se = wal_sync_error(p->w), we = wal_write_error(p->w);
    if (se == EFBIG) {
        reply_errf(c,
                   "MISCONF A record over the WAL's size limit could not be logged on shard %u. "
                   "Writes are refused until the node is restarted; see the log.",
                   c->env->id);
        return true;
    }
    if (se) {
        reply_errf(c,
                   "MISCONF WAL fsync failed on shard %u: %s. Writes are refused until the "
                   "node is restarted; see the log.",
                   c->env->id, strerror(se));
        return true;
    }
    if (we) {
        reply_errf(c,
                   "MISCONF Errors writing to the WAL of shard %u: %s. Writes resume by "
                   "themselves once the record can be written.",
                   c->env->id, strerror(we));
        return true;
    }
    return false;
}

/* What the WAL mode releases (memory mode: everything produced). */
static uint64_t
wal_release_lsn(const struct persist *p)
{
    if (p->w == NULL) {
        return last_lsn(p);
    }
    return p->mode == WAL_ALWAYS ? wal_durable_lsn(p->w) : wal_written_lsn(p->w);
}

/* Replies may leave once everything they depend on is up to this LSN: the
 * WAL mode's point, and with synchronous replication no further than what
 * enough replicas acked. */
static uint64_t
release_lsn(const struct persist *p)
{
    uint64_t rel = wal_release_lsn(p);
    return p->sync_hold && p->sync_rel < rel ? p->sync_rel : rel;
}

/* Replies are held (marks kept) at all: a WAL, or synchronous replication. */
static inline bool
holding(const struct persist *p)
{
    return p->w != NULL || p->sync_hold;
}

static bool
wal_failing(const struct persist *p)
{
    return p->w != NULL && (wal_write_error(p->w) != 0 || wal_sync_error(p->w) != 0);
}

/* write() what is staged; the first failure of an episode is logged. */
static void
wal_flush_staged(struct persist *p)
{
    if (!wal_staged(p->w) || wal_write_error(p->w) != 0) {
        return;
    }
    if (p->mode == WAL_ALWAYS && p->sync_asked > wal_durable_lsn(p->w) &&
        wal_sync_error(p->w) == 0) {
        /* A sync is running: appending to the file now makes it chase the
         * new pages (measured: 15-30 ms syncs instead of 0.5 ms). The next
         * wave is written, in one piece, when it returns. */
        return;
    }
    int rc = wal_write(p->w);
    if (rc < 0) {
        log_warn("[shard %u] cannot write the WAL in %s: %s; writes are refused and their replies "
                 "held until it can be written (retried 10 times a second)",
                 shard_env(p->s)->id, p->dir, strerror(-rc));
    }
}

/* The LSN c's newest output depends on: everything staged so far (c may have
 * read it), except while the WAL fails: then only c's own records and what
 * is already safe, so that reads (and the -MISCONF errors) keep flowing. */
void
persist_note_output(struct conn *c)
{
    struct persist *p = persist_of(c->shard);
    if (p == NULL || !holding(p)) {
        return;
    }
    uint64_t need = wal_failing(p) ? release_lsn(p) : last_lsn(p);
    if (p->sync_hold && !(c->flags & CONN_DATA) && need > p->sync_rel) {
        /* no key read or written (PING, INFO, CLUSTER, a refused write):
         * nothing of the unacknowledged tail shows, so replicas are not
         * waited for (the cluster's probes and lease go on) */
        need = p->sync_rel;
    }
    c->flags &= ~CONN_DATA;
    if (c->own_lsn > need) {
        need = c->own_lsn;
    }
    uint64_t pos = c->out_done + (c->wbuf.len - c->wbuf.off);
    if (need <= release_lsn(p) && c->nmarks == 0) {
        return; /* already safe: nothing to hold */
    }
    unsigned n = c->nmarks;
    if (n > 0 && (c->marks[n - 1].lsn >= need || n == sizeof(c->marks) / sizeof(c->marks[0]))) {
        /* extend the newest mark (merging keeps the larger LSN) */
        c->marks[n - 1].pos = pos;
        if (need > c->marks[n - 1].lsn) {
            c->marks[n - 1].lsn = need;
        }
        return;
    }
    c->marks[n].pos = pos;
    c->marks[n].lsn = need;
    c->nmarks = (uint8_t)(n + 1);
}

static void
held_add(struct persist *p, struct conn *c)
{
    if (!(c->flags & CONN_HELD)) {
        c->flags |= CONN_HELD;
        c->hnext = p->held;
        p->held = c;
        p->nheld++;
    }
}

size_t
persist_flush_limit(struct conn *c)
{
    struct persist *p = persist_of(c->shard);
    size_t unread = c->wbuf.len - c->wbuf.off;
    if (p == NULL || !holding(p)) {
        c->nmarks = 0;
        return unread;
    }
    if (p->w != NULL) {
        wal_flush_staged(p); /* the kernel first, then the reply */
    }
    uint64_t rel = release_lsn(p);
    unsigned i = 0;
    while (i < c->nmarks && c->marks[i].lsn <= rel) {
        i++;
    }
    uint64_t upto = i > 0 ? c->marks[i - 1].pos : c->out_done;
    memmove(c->marks, c->marks + i, (c->nmarks - i) * sizeof(c->marks[0]));
    c->nmarks = (uint8_t)(c->nmarks - i);
    if (c->nmarks == 0) {
        return unread;
    }
    held_add(p, c);
    uint64_t allowed = upto > c->out_done ? upto - c->out_done : 0;
    return allowed < unread ? (size_t)allowed : unread;
}

void
persist_conn_gone(struct conn *c)
{
    struct persist *p = persist_of(c->shard);
    if (p != NULL && p->repl != NULL && (c->flags & CONN_BLOCKED)) {
        repl_conn_gone(p->repl, c);
    }
    if (p == NULL || !(c->flags & CONN_HELD)) {
        return;
    }
    for (struct conn **pp = &p->held; *pp; pp = &(*pp)->hnext) {
        if (*pp == c) {
            *pp = c->hnext;
            p->nheld--;
            break;
        }
    }
    c->flags &= ~CONN_HELD;
}

/* c's output depends on a record past lsn (its own write, or one it read). */
static bool
conn_needs_past(const struct conn *c, uint64_t lsn)
{
    return c->own_lsn > lsn || (c->nmarks > 0 && c->marks[c->nmarks - 1].lsn > lsn);
}

/* Close the held clients whose output depends on records past lsn: their
 * writes were not acknowledged by enough replicas (or this shard was
 * demoted), so they must not read success; closing leaves the outcome
 * unknown, which is the truth (as for a failed fsync). */
static void
close_held_past(struct persist *p, uint64_t lsn, bool demoted, const char *why)
{
    size_t closed = 0;
    if (demoted) {
        /* Demoted: besides the held clients, those whose reply was produced
         * this loop and is not flushed yet (CONN_PENDING, not held until the
         * flush) would be released by the flush now that nothing holds them. */
        struct conn *next;
        for (struct conn *c = shard_conn_first(p->s); c != NULL; c = next) {
            next = c->next;
            if (conn_needs_past(c, lsn)) {
                conn_close(c); /* (unlinks it from the held list too) */
                closed++;
            }
        }
    }
    for (struct conn **pp = &p->held; !demoted && *pp;) { /* (demoted: the walk above had them) */
        struct conn *c = *pp;
        if (!conn_needs_past(c, lsn)) {
            pp = &c->hnext;
            continue;
        }
        *pp = c->hnext;
        c->hnext = NULL;
        c->flags &= ~CONN_HELD;
        p->nheld--;
        conn_close(c);
        closed++;
    }
    if (closed) {
        p->sync_closed += closed;
        log_warn("[shard %u] closed %zu client(s) waiting for records past LSN %" PRIu64 ": %s",
                 shard_env(p->s)->id, closed, lsn, why);
    }
}

/* Once per loop: follow replication's synchronous mode and acked LSN. The
 * acked LSN is frozen while a cluster node's write lease is out (the leader
 * may be promoting a replica that lacks what a late ack would release). */
static void
sync_refresh(struct persist *p)
{
    struct shard_env *env = shard_env(p->s);
    bool on = p->repl != NULL && repl_sync_on(p->repl) && !p->replica;
    uint64_t cut = p->repl != NULL ? repl_sync_take_cut(p->repl) : 0;
    if (cut != 0) {
        close_held_past(p, cut - 1, true,
                        "this shard became a replica before enough replicas acked "
                        "them (min-sync-replicas)");
    }
    if (on && !p->sync_hold) {
        p->sync_rel = repl_sync_lsn(p->repl);
    }
    p->sync_hold = on;
    if (p->w == NULL) {
        p->hot.wal = on; /* memory mode: replies are held only for replicas */
    }
    if (!on) {
        p->sync_wait_ms = 0;
        return;
    }
    if (env->topo == NULL ||
        env->now_ms < atomic_load_explicit(&env->node->cluster_lease_ms, memory_order_relaxed)) {
        p->sync_rel = repl_sync_lsn(p->repl);
    }
    uint64_t rel = p->sync_rel;
    if (p->held == NULL || rel >= wal_release_lsn(p)) {
        p->sync_wait_ms = 0; /* nothing waits for replicas */
        return;
    }
    int64_t timeout = env->cfg->repl.min_sync_replicas_timeout;
    if (p->sync_wait_ms == 0 || p->sync_wait_lsn != rel) {
        p->sync_wait_lsn = rel;
        p->sync_wait_ms = env->now_ms;
    } else if (env->now_ms - p->sync_wait_ms >= timeout) {
        close_held_past(p, rel, false,
                        "not acknowledged by min-sync-replicas replicas within "
                        "min-sync-replicas-timeout");
        p->sync_wait_ms = 0;
    }
}

/* Flush the held clients once the release point moved (each re-queues
 * itself if part must still wait); a failed fsync closes the writers. */
static void
release_held(struct persist *p)
{
    int se = p->w != NULL ? wal_sync_error(p->w) : 0;
    uint64_t rel = release_lsn(p);
    if (p->held == NULL || (rel == p->last_release && se == 0)) {
        return;
    }
    p->last_release = rel;
    struct conn *list = p->held;
    p->held = NULL;
    p->nheld = 0;
    size_t closed = 0;
    while (list) {
        struct conn *c = list;
        list = c->hnext;
        c->hnext = NULL;
        c->flags &= ~CONN_HELD;
        if (se != 0) {
            if (c->own_lsn > rel) {
                /* Its writes can never be made durable: the client must not
                 * read them as acknowledged. Closing leaves the outcome
                 * unknown, which is the truth. */
                conn_close(c);
                closed++;
                continue;
            }
            c->nmarks = 0; /* readers go on being answered */
        }
        conn_flush(c); /* re-queues itself if part must still wait */
    }
    if (closed) {
        log_warn(
            "[shard %u] closed %zu client(s) whose writes cannot be made durable (fsync failed)",
            shard_env(p->s)->id, closed);
    }
}

void
persist_before_poll(struct shard *s)
{
    struct persist *p = persist_of(s);
    if (p == NULL) {
        return;
    }
    sync_refresh(p);
    if (p->w == NULL) {
        if (p->repl && repl_backlog_on(p->repl)) {
            repl_before_poll(p->repl);
        }
        release_held(p);
        return;
    }
    uint64_t t0 = metrics_events_on() ? __rdtsc() : 0;
    wal_flush_staged(p);
    if (t0) {
        metrics_event(s, "aof-write", __rdtsc() - t0); /* LATENCY: the shard's WAL write() */
    }
    if (p->repl && repl_backlog_on(p->repl)) {
        repl_before_poll(p->repl); /* records leave once write() gave them to the kernel */
    }
    uint64_t written = wal_written_lsn(p->w);
    if (p->mode == WAL_ALWAYS && written > wal_durable_lsn(p->w) && written > p->sync_asked) {
        /* One fdatasync covers this whole wave; the next wave is processed
         * (and written) while it runs. */
        p->sync_asked = written;
        wal_request_sync(p->w);
    }
    release_held(p);
}

/* Syncer thread: the durable LSN moved; the shard releases replies. */
static void
on_synced(void *arg)
{
    shard_wake(arg);
}

/* ---------------------------------------------------------------- recovery */

bool
persist_loading(const struct shard *s)
{
    struct persist *p = shard_env((struct shard *)s)->persist;
    return p && p->loading;
}

struct replayer {
    struct persist *p;
    struct replay *rp;
    struct rv_str *argv;
    size_t cap;
    uint64_t cmds, errors;
};

/* Apply one record; -1 when its payload is malformed. */
static int
apply_rec(struct replayer *x, const struct wal_rec *rec)
{
    struct wal_pay_it it;
    int argc, rc;
    char err[256];
    if (!wal_pay_open(&it, rec->payload, rec->len)) {
        return -1;
    }
    shard_set_clock(x->p->s, rec->ts_ms);
    replay_set_db(x->rp, 0); /* every record starts in database 0 */
    while ((rc = wal_pay_next(&it, &argc, &x->argv, &x->cap)) == 1) {
        x->cmds++;
        if (!replay_exec(x->rp, argc, x->argv, err, sizeof(err))) {
            if (x->errors++ < 5) {
                log_warn("[shard %u] replaying LSN %" PRIu64 " (%.*s): %s", shard_env(x->p->s)->id,
                         rec->lsn, (int)(x->argv[0].len > 32 ? 32 : x->argv[0].len), x->argv[0].p,
                         err);
            }
        }
    }
    return rc;
}

static int
load_ckpt(struct replayer *x, const struct wal_file *f, bool accept, uint64_t *lsn,
          int64_t *created, char *err, size_t errsz)
{
    struct wal_reader r;
    struct wal_rec rec;
    enum wal_rd rd;
    bool end = false;
    if (wal_reader_open(&r, f->path, true, err, errsz) != 0) {
        return -1;
    }
    *lsn = r.ck.lsn;
    *created = r.ck.created_ms;
    ks_reserve(shard_env(x->p->s)->ks, r.ck.keys_hint + r.ck.keys_hint / 8);
    while ((rd = wal_reader_next(&r, &rec)) == WAL_RD_OK) {
        if (rec.len >= 1 && rec.payload[0] == WAL_P_END) {
            end = true;
            break;
        }
        if (apply_rec(x, &rec) != 0) {
            rd = WAL_RD_CORRUPT;
            r.why = "malformed record";
            break;
        }
        x->p->keys_loaded++;
        loading_tick(shard_env(x->p->s)->node, WAL_REC_HDR + rec.len);
    }
    if (!end) {
        const char *why = rd == WAL_RD_OK || rd == WAL_RD_END ? "no end record" : r.why;
        if (!accept) {
            snprintf(err, errsz,
                     "checkpoint %s is corrupt at offset %zu (%s); start with "
                     "wal-accept-loss yes to load its valid prefix",
                     f->path, r.off, why);
            wal_reader_close(&r);
            return -1;
        }
        x->p->cut = true;
        log_warn("[shard %u] checkpoint %s is corrupt at offset %zu (%s): loaded its valid "
                 "prefix (wal-accept-loss yes)",
                 shard_env(x->p->s)->id, f->path, r.off, why);
    }
    wal_reader_close(&r);
    return 0;
}

/* Move a file out of the way (kept for inspection, never read again). */
static void
set_aside(const char *path)
{
    char to[4200];
    snprintf(to, sizeof(to), "%s.discarded", path);
    if (rename(path, to) != 0) {
        log_warn("cannot rename %s: %s", path, strerror(errno));
    }
}

/* A last segment whose header never made it to disk (a crash right after
 * creating it): shorter than a header, or zeros only (a pre-zeroed segment
 * is as long as a whole segment; records after a zero header are not
 * "never written"). */
static bool
seg_never_written(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t h[65536];
    size_t n, total = 0;
    bool nonzero = false;
    if (f == NULL) {
        return false;
    }
    while (!(nonzero && total >= WAL_SEG_HDR) && (n = fread(h, 1, sizeof(h), f)) > 0) {
        for (size_t i = 0; i < n && !nonzero; i++) {
            nonzero = h[i] != 0;
        }
        total += n;
    }
    fclose(f);
    return total < WAL_SEG_HDR || !nonzero;
}

/* Keep the valid prefix (wal_accept_loss): cut segment i at off (or set it
 * aside when off is 0) and set every later segment aside. */
static int
keep_prefix(struct wal_file *segs, size_t n, size_t i, size_t off, char *err, size_t errsz)
{
    if (off == 0) {
        set_aside(segs[i].path);
    } else {
        int rc = wal_truncate(segs[i].path, off);
        if (rc < 0) {
            snprintf(err, errsz, "cannot truncate %s: %s", segs[i].path, strerror(-rc));
            return -1;
        }
    }
    for (size_t j = i + 1; j < n; j++) {
        set_aside(segs[j].path);
    }
    return 0;
}

/* The unwritten rest of a pre-zeroed segment (the process died with it open,
 * or before a finished one was cut): a clean end; give the space back. */
static void
cut_zero_tail(unsigned sid, struct wal_walk *k)
{
    const char *path = k->segs[k->tail_seg].path;
    int rc = wal_truncate(path, k->tail_off);
    if (rc < 0) {
        log_warn("[shard %u] cannot truncate the zero tail of %s: %s", sid, path, strerror(-rc));
    }
    k->zero_tail = false;
}

static int
replay_segments(struct replayer *x, struct wal_file *segs, size_t n, uint64_t after, bool accept,
                uint64_t *last, char *err, size_t errsz)
{
    unsigned sid = shard_env(x->p->s)->id;
    struct wal_walk k;
    struct wal_rec rec;
    enum wal_rd rd;
    wal_walk_init(&k, segs, n, after);
    while ((rd = wal_walk_next(&k, &rec)) == WAL_RD_OK) {
        if (k.zero_tail) {
            cut_zero_tail(sid, &k);
        }
        if (rec.lsn <= after) {
            continue;
        }
        if (apply_rec(x, &rec) != 0) {
            rd = wal_walk_reject(&k, "malformed record");
            break;
        }
        *last = rec.lsn;
        x->p->records_replayed++;
        loading_tick(shard_env(x->p->s)->node, WAL_REC_HDR + rec.len);
    }
    wal_walk_close(&k);
    if (k.zero_tail) {
        cut_zero_tail(sid, &k);
    }
    if (rd == WAL_RD_END) {
        return 0;
    }
    const char *path = segs[k.seg].path;
    if (rd == WAL_RD_TORN) {
        /* Never acknowledged: the write of this record did not complete. */
        log_warn("[shard %u] WAL %s: torn record at offset %zu (%s): cut off", sid, path, k.off,
                 k.why);
        int rc = wal_truncate(path, k.off);
        if (rc < 0) {
            snprintf(err, errsz, "cannot truncate %s: %s", path, strerror(-rc));
            return -1;
        }
        for (size_t i = k.seg + 1; k.drop_later && i < n; i++) {
            set_aside(segs[i].path); /* written after the cut, never synced */
        }
        x->p->torn_tails++;
        x->p->cut = true;
        return 0;
    }
    if (k.whole_file && k.seg + 1 == n && seg_never_written(path)) {
        log_warn("[shard %u] %s: removing the last segment, whose header was never written", sid,
                 k.why);
        unlink(path);
        return 0;
    }
    char where[9000];
    if (k.whole_file) {
        snprintf(where, sizeof(where), "%s", k.why);
    } else {
        snprintf(where, sizeof(where), "WAL %s is corrupt at offset %zu (%s)", path, k.off, k.why);
    }
    if (!accept) {
        snprintf(err, errsz,
                 "%s; start with wal-accept-loss yes to keep the valid prefix and drop "
                 "the rest",
                 where);
        return -1;
    }
    log_warn(
        "[shard %u] %s: keeping the valid prefix, later segments set aside (wal-accept-loss yes)",
        sid, where);
    size_t off = k.whole_file || k.off == WAL_SEG_HDR ? 0 : k.off;
    x->p->cut = true;
    return keep_prefix(segs, n, k.seg, off, err, errsz);
}

/* dir/clean is written by a clean shutdown once everything staged was
 * written without error, and taken away by the next start: a start that does
 * not find it knows the log may have lost a tail (docs/replication.md,
 * "Unclean restarts"). The other way round (a marker made at start, removed at
 * a clean stop) fails open: on a full disk the marker cannot be made, and a
 * crash later looks clean. Here a marker that cannot be written makes the next
 * start unclean, the safe side, and unlink needs no space. */
static void
clean_path(const struct persist *p, char *out, size_t n)
{
    snprintf(out, n, "%s/clean", p->dir);
}

static int
clean_take(struct persist *p, char *err, size_t errsz)
{
    char path[4200];
    clean_path(p, path, sizeof(path));
    if (unlink(path) != 0) {
        if (errno == ENOENT) {
            p->unclean = true;
            return 0;
        }
        snprintf(err, errsz, "cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    if (wal_fsync_dir(p->dir) != 0) {
        /* a crash could bring the marker back and make this run look clean */
        snprintf(err, errsz, "cannot sync the directory %s after removing %s: %s", p->dir, path,
                 strerror(errno));
        return -1;
    }
    p->unclean = false;
    return 0;
}

static void
clean_mark(struct persist *p)
{
    char path[4200];
    clean_path(p, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || fsync(fd) != 0 || wal_fsync_dir(p->dir) != 0) {
        log_warn("[shard %u] cannot write %s (%s): the next start takes this stop for a crash",
                 shard_env(p->s)->id, path, strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
}

bool
persist_log_maybe_short(struct shard *s)
{
    struct persist *p = persist_of(s);
    return p != NULL && (p->unclean || p->cut);
}


static int persist_recover(struct persist *p, bool readonly, char *err, size_t errsz);
static int persist_alloc(struct shard *s, const char *dir, bool readonly, char *err, size_t errsz);

int
persist_create(struct shard *s, char *err, size_t errsz)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/shard-%u", shard_env(s)->cfg->persist.dir, shard_env(s)->id);
    if (persist_alloc(s, dir, false, err, errsz) != 0) {
        return -1;
    }
    persist_of(s)->hot.loading = true;
    return 0;
}

int
persist_load(struct shard *s, char *err, size_t errsz)
{
    return persist_recover(persist_of(s), false, err, errsz);
}

void
persist_serve(struct shard *s)
{
    persist_of(s)->hot.loading = false;
}

void
persist_rebuild_entry(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    snap_emit_entry(e, fn, arg);
}

int
persist_save_now(struct shard *s, char *err, size_t errsz)
{
    struct persist *p = persist_of(s);
    snap_wait_finish(p); /* a background one that is already writing its file */
    snap_abort(p);       /* one still walking: this one replaces it */
    return snap_run_sync(p, err, errsz);
}

int
persist_open_dir(struct shard *s, const char *dir, bool readonly, char *err, size_t errsz)
{
    if (persist_alloc(s, dir, readonly, err, errsz) != 0) {
        return -1;
    }
    return persist_recover(persist_of(s), readonly, err, errsz);
}

static int
persist_alloc(struct shard *s, const char *dir, bool readonly, char *err, size_t errsz)
{
    const struct cfg *cfg = shard_env(s)->cfg;
    rw_init();
    struct persist *p = rv_calloc(1, sizeof(*p));
    shard_env(s)->persist = p;
    p->s = s;
    p->mode = readonly ? WAL_MEMORY : (int)cfg->persist.durability;
    p->last_ckpt_ok = true;
    snprintf(p->dir, sizeof(p->dir), "%s", dir);
    if (fs_mkdir_p(p->dir) != 0) {
        snprintf(err, errsz, "cannot create data directory %s: %s", p->dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Recovery: the newest checkpoint, then the WAL after it; the WAL opens for
 * appending (not readonly) and replication attaches. */
static int
persist_recover(struct persist *p, bool readonly, char *err, size_t errsz)
{
    struct shard *s = p->s;
    const struct cfg *cfg = shard_env(s)->cfg;
    if (persist_rebase_recover(p, err, errsz) != 0) {
        return -1;
    }
    struct wal_file *segs = NULL, *cks = NULL;
    size_t ns = 0, nc = 0;
    if (wal_list(p->dir, &segs, &ns, &cks, &nc) != 0) {
        snprintf(err, errsz, "cannot read data directory %s: %s", p->dir, strerror(errno));
        return -1;
    }
    snap_remove_tmp(p->dir);
    int64_t t0 = clock_mono_us();
    struct replayer x = { .p = p, .rp = replay_create(s) };
    uint64_t ck_lsn = 0, last = 0;
    int64_t created = 0;
    int rc = 0;
    p->loading = true;
    if (nc > 0) {
        struct wal_file *f = &cks[nc - 1];
        rc = load_ckpt(&x, f, cfg->persist.wal_accept_loss, &ck_lsn, &created, err, errsz);
        if (rc == 0) {
            p->ckpt_lsn = ck_lsn;
            p->lastsave_ms = created;
            last = ck_lsn;
        }
    }
    if (rc == 0) {
        rc = replay_segments(&x, segs, ns, ck_lsn, cfg->persist.wal_accept_loss, &last, err, errsz);
    }
    p->loading = false;
    ks_reserve(shard_env(s)->ks, 0);
    replay_destroy(x.rp);
    rv_free(x.argv);
    rv_free(segs);
    rv_free(cks);
    if (rc != 0) {
        return -1;
    }
    p->replay_errors = x.errors;
    p->load_us = clock_mono_us() - t0;
    /* No deadline moves backwards: the clock never goes below what was replayed. */
    int64_t floor = created;
    if (x.cmds > 0 && shard_env(s)->now_ms > floor) {
        floor = shard_env(s)->now_ms;
    }
    shard_set_clock_floor(s, floor);
    shard_refresh_clock(s);
    if (x.cmds > 0 || nc > 0) {
        log_notice("[shard %u] loaded %" PRIu64 " keys from checkpoint LSN %" PRIu64 " and %" PRIu64
                   " WAL records in %.3f s (%" PRIu64 " replay errors)",
                   shard_env(s)->id, p->keys_loaded, ck_lsn, p->records_replayed,
                   (double)p->load_us / 1e6, x.errors);
    }
    p->next_lsn = last + 1;
    for (unsigned i = 0; i < shard_env(s)->ndbs; i++) { /* (those recovery created too) */
        if (shard_env(s)->dbs[i] != NULL) {
            ks_set_expire_hook(shard_env(s)->dbs[i], on_expire, p);
        }
    }
    if (p->mode != WAL_MEMORY) {
        if (persist_open_wal(p, err, errsz) == NULL) {
            return -1;
        }
        if (!readonly && clean_take(p, err, errsz) != 0) {
            return -1;
        }
        p->hot.wal = true;
        p->hot.log = true;
        p->hot.guard = true;
    }
    if (!readonly) {
        p->repl = repl_attach(s);
    }
    return 0;
}

/* ---------------------------------------------------------------- full sync (rebase) */

struct wal *
persist_open_wal(struct persist *p, char *err, size_t errsz)
{
    const struct cfg *cfg = shard_env(p->s)->cfg;
    struct wal_opts o = {
        .dir = p->dir,
        .shard = shard_env(p->s)->id,
        .mode = p->mode,
        .seg_bytes = (uint64_t)cfg->persist.wal_segment_bytes,
        .sync_interval_ms = 1000,
        .notify = on_synced,
        .notify_arg = p->s,
        .sync_min_interval_us = cfg->persist.wal_sync_min_interval_us,
    };
    p->w = wal_open(&o, p->next_lsn, err, errsz);
    /* Positions of another log (a history a full sync replaced) mean nothing
     * here: a sync "already asked" past this log's end would hold every
     * write, and every reply waiting for it, forever. */
    p->sync_asked = p->next_lsn - 1;
    p->last_release = 0;
    return p->w;
}


uint64_t
persist_durable_lsn(struct shard *s)
{
    struct persist *p = persist_of(s);
    return p->w == NULL || p->rebase ? 0 : wal_durable_lsn(p->w);
}

struct repl *
persist_repl(struct shard *s)
{
    struct persist *p = persist_of(s);
    return p ? p->repl : NULL;
}

void
persist_side_load(struct shard *s, bool on)
{
    persist_of(s)->side_load = on;
}

void
persist_close(struct shard *s)
{
    struct persist *p = persist_of(s);
    if (p == NULL) {
        return;
    }
    repl_destroy(p->repl);
    p->repl = NULL;
    buf_deinit(&p->mstage);
    if (p->w && p->rebase) {
        /* A clean stop keeps a full sync's data set: its checkpoint now, or
         * the next start would discard it (rebase_recover). */
        char err[256];
        if (persist_save_now(s, err, sizeof(err)) != 0) {
            log_warn("[shard %u] checkpoint of the full sync's data set at shutdown: %s",
                     shard_env(s)->id, err);
        }
    }
    snap_abort(p);
    p->hot.wal = false;
    p->hot.guard = false;
    bool clean = false;
    if (p->w != NULL) {
        clean = wal_write(p->w) == 0 && !wal_staged(p->w) && wal_sync_error(p->w) == 0;
    }
    wal_close(p->w);
    if (clean) {
        clean_mark(p);
    }
    p->w = NULL;
    snap_wait_finish(p);
    rv_free(p);
    shard_env(s)->persist = NULL;
}

void
persist_cron(struct shard *s)
{
    struct persist *p = persist_of(s);
    if (p == NULL) {
        return;
    }
    if (p->w && wal_write_error(p->w) != 0 && wal_staged(p->w)) {
        if (wal_write(p->w) == 0) {
            log_warn("[shard %u] WAL writes work again; accepting writes", shard_env(s)->id);
            p->last_release = 0; /* release what waited */
        }
    }
    snap_cron(p);
    if (p->repl) {
        repl_cron(p->repl);
    }
}

void
persist_info(struct shard *s, struct buf *b)
{
    struct persist *p = persist_of(s);
    static const char *const modes[] = { "memory", "everysec", "always" };
    char line[2048];
    int n;
    if (p == NULL) {
        return;
    }
    uint64_t last = persist_last_lsn(s);
    struct wal_stats ws = { 0 };
    if (p->w) {
        wal_stats(p->w, &ws);
    }
    n = snprintf(line, sizeof(line),
                 "# Persistence\r\nloading:%d\r\nasync_loading:0\r\ndurability:%s\r\n"
                 "rdb_changes_since_last_save:%" PRIu64 "\r\nrdb_bgsave_in_progress:%d\r\n"
                 "rdb_last_save_time:%" PRId64 "\r\nrdb_last_bgsave_status:%s\r\n"
                 "rdb_last_bgsave_time_sec:%" PRId64 "\r\nrdb_saves:%" PRIu64 "\r\n"
                 "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:%" PRIu64 "\r\n"
                 "aof_enabled:%d\r\naof_rewrite_in_progress:%d\r\naof_last_write_status:%s\r\n"
                 "aof_last_bgrewrite_status:%s\r\n"
                 "wal_last_lsn:%" PRIu64 "\r\nwal_written_lsn:%" PRIu64
                 "\r\nwal_durable_lsn:%" PRIu64 "\r\n"
                 "wal_bytes:%" PRIu64 "\r\nwal_segments:%zu\r\nwal_write_error:%s\r\n"
                 "wal_fsync_error:%s\r\nwal_held_clients:%zu\r\n"
                 "wal_fsyncs:%" PRIu64 "\r\nwal_fsyncs_slow:%" PRIu64
                 "\r\nwal_fsyncs_paced:%" PRIu64 "\r\n"
                 "wal_fsync_max_us:%" PRIu64 "\r\nwal_prezeroed_segments:%" PRIu64 "\r\n"
                 "checkpoint_lsn:%" PRIu64 "\r\n"
                 "checkpoint_in_progress:%d\r\ncheckpoint_keys_written:%" PRIu64 "\r\n"
                 "loading_keys:%" PRIu64 "\r\nloading_wal_records:%" PRIu64 "\r\n"
                 "loading_torn_tails:%" PRIu64 "\r\nloading_replay_errors:%" PRIu64 "\r\n"
                 "loading_time_ms:%" PRIu64 "\r\nsync_repl_closed_clients:%" PRIu64 "\r\n",
                 p->loading || atomic_load(&shard_env(s)->node->loading), modes[p->mode],
                 p->changes, snap_active(p), p->lastsave_ms / 1000, p->last_ckpt_ok ? "ok" : "err",
                 p->last_ckpt_ms / 1000, p->saves, p->keys_loaded, p->w != NULL, snap_active(p),
                 p->w && wal_write_error(p->w) ? "err" : "ok", p->last_ckpt_ok ? "ok" : "err", last,
                 p->w ? wal_written_lsn(p->w) : last, p->w ? wal_durable_lsn(p->w) : last,
                 p->w ? wal_bytes(p->w) : 0, p->w ? wal_segments(p->w) : (size_t)0,
                 p->w && wal_write_error(p->w) ? strerror(wal_write_error(p->w)) : "none",
                 p->w && wal_sync_error(p->w) ? strerror(wal_sync_error(p->w)) : "none", p->nheld,
                 ws.syncs, ws.slow_syncs, ws.paced_syncs, ws.max_sync_us, ws.prezeroed_segments,
                 p->ckpt_lsn, snap_active(p), snap_keys(p), p->keys_loaded, p->records_replayed,
                 p->torn_tails, p->replay_errors, p->load_us / 1000, p->sync_closed);
    buf_append(b, line, (size_t)n);
    loading_info(shard_env(s)->node, b);
    buf_append(b, "\r\n", 2);
}
