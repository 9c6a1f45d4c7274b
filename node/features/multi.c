/* node/features/multi.c */
#include "node/features/multi.h"

#include "node/features/acl.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/keyspace/dict.h"
#include "node/features/evict.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/persist/persist.h"
#include "node/core/shard.h"

#include <string.h>

struct mq_cmd {
    const struct cmd_spec *cmd;
    int argc;
    struct rv_str *argv; /* argv array followed by the argument bytes: one allocation */
};

struct watched_key {
    char *key;
    size_t len;
    unsigned db;  /* the database selected at WATCH */
    bool existed; /* present (and not expired) when WATCH ran */
};

struct multi_state {
    bool in_multi;
    bool dirty_exec; /* a queued command was refused: EXECABORT */
    bool dirty_cas;  /* a watched key was written */
    struct mq_cmd *q;
    size_t nq, capq;
    size_t qbytes; /* what the queued commands hold (CLIENT LIST multi-mem=) */
    struct watched_key *w;
    size_t nw, capw;
    size_t resume_at; /* EXEC waits for a topology change: the next queued command */
    bool exec_waits;
};

/* Watch table value: the connections watching one key. */
struct watchers {
    struct conn **v;
    size_t n, cap;
};

static struct multi_state *
mstate(struct conn *c)
{
    if (c->mstate == NULL) {
        c->mstate = rv_calloc(1, sizeof(*c->mstate));
    }
    return c->mstate;
}

static void
queue_clear(struct multi_state *m)
{
    for (size_t i = 0; i < m->nq; i++) {
        rv_free(m->q[i].argv);
    }
    m->nq = 0;
    m->qbytes = 0;
    m->in_multi = false;
    m->dirty_exec = false;
}

void
multi_queue(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct multi_state *m = mstate(c);
    size_t bytes = (size_t)argc * sizeof(struct rv_str);
    for (int i = 0; i < argc; i++) {
        bytes += argv[i].len;
    }
    struct rv_str *copy = rv_malloc(bytes ? bytes : 1);
    char *data = (char *)(copy + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(data, argv[i].p, argv[i].len);
        copy[i].p = data;
        copy[i].len = argv[i].len;
        data += argv[i].len;
    }
    if (m->nq == m->capq) {
        m->capq = m->capq ? m->capq * 2 : 8;
        m->q = rv_realloc(m->q, m->capq * sizeof(*m->q));
    }
    m->q[m->nq++] = (struct mq_cmd){ cmd, argc, copy };
    m->qbytes += bytes + sizeof(struct mq_cmd);
    reply_simple(c, "QUEUED");
}

void
multi_flag_error(struct conn *c)
{
    mstate(c)->dirty_exec = true;
}

static void
unwatch_all(struct conn *c)
{
    struct multi_state *m = c->mstate;
    struct dict *tab = c->env->watched;
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->nw; i++) {
        struct dict_entry *e = tab ? dict_find(tab, m->w[i].key, m->w[i].len) : NULL;
        if (e) {
            struct watchers *ws = dict_val_ptr(e);
            for (size_t j = 0; j < ws->n; j++) {
                if (ws->v[j] == c) {
                    ws->v[j] = ws->v[--ws->n];
                    break;
                }
            }
            if (ws->n == 0) {
                dict_delete(tab, m->w[i].key, m->w[i].len, NULL);
                rv_free(ws->v);
                rv_free(ws);
            }
        }
        rv_free(m->w[i].key);
    }
    m->nw = 0;
    m->dirty_cas = false;
}

void
multi_release(struct conn *c)
{
    struct multi_state *m = c->mstate;
    if (m == NULL) {
        return;
    }
    queue_clear(m);
    if (m->nw) {
        unwatch_all(c);
    }
    rv_free(m->q);
    rv_free(m->w);
    rv_free(m);
    c->mstate = NULL;
    c->flags &= ~CONN_MULTI;
}

/* c watches key in database db (the table is by name, across databases). */
static bool
watches_in(const struct conn *c, const char *key, size_t len, unsigned db)
{
    const struct multi_state *m = c->mstate;
    for (size_t i = 0; i < m->nw; i++) {
        if (m->w[i].db == db && m->w[i].len == len && memcmp(m->w[i].key, key, len) == 0) {
            return true;
        }
    }
    return false;
}

static void
flag_watchers(struct dict *tab, const char *key, size_t len, unsigned db)
{
    struct dict_entry *e = dict_find(tab, key, len);
    if (e) {
        struct watchers *ws = dict_val_ptr(e);
        for (size_t j = 0; j < ws->n; j++) {
            if (watches_in(ws->v[j], key, len, db)) {
                ws->v[j]->mstate->dirty_cas = true;
            }
        }
    }
}

void
multi_touch_db(struct shard *s, unsigned db, struct rv_str key)
{
    struct dict *tab = shard_env(s)->watched;
    if (tab != NULL && dict_size(tab) != 0) {
        flag_watchers(tab, key.p, key.len, db);
    }
}

static void
flag_all(void *arg, struct dict_entry *e)
{
    (void)arg;
    struct watchers *ws = dict_val_ptr(e);
    for (size_t j = 0; j < ws->n; j++) {
        ws->v[j]->mstate->dirty_cas = true;
    }
}

void
multi_touch(struct shard *s, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct dict *tab = shard_env(s)->watched;
    if (tab == NULL || dict_size(tab) == 0) {
        return;
    }
    int stack[64];
    int *keys = argc <= 64 ? stack : rv_malloc((size_t)argc * sizeof(int));
    int n = cmd_get_keys(cmd, argc, argv, keys, argc);
    if (n == 0) {
        /* FLUSHDB, FLUSHALL and SWAPDB flagged the keys they changed
         * (multi_touch_flush); FUNCTION, SCRIPT & co. change no key, as in
         * Redis; DEBUG (RELOAD, ...) may have changed any */
        if (strcmp(cmd->name, "debug") == 0) {
            dict_foreach(tab, flag_all, NULL);
        }
    }
    n = cmd_written_keys(cmd, keys, n); /* (the keys tracking invalidates too) */
    for (int i = 0; i < n; i++) {
        flag_watchers(tab, argv[keys[i]].p, argv[keys[i]].len, shard_env(s)->db);
    }
    if (keys != stack) {
        rv_free(keys);
    }
}

/* key in database db, expired or not; NULL where db was never used */
static struct ks_entry *
db_peek(struct shard_env *env, unsigned db, struct rv_str key)
{
    return env->dbs[db] != NULL ? ks_peek(env->dbs[db], key.p, key.len) : NULL;
}

struct flush_ctx {
    struct shard_env *env;
    unsigned db;
    int with;
};

static void
flag_flushed(void *arg, struct dict_entry *e)
{
    struct flush_ctx *x = arg;
    struct watchers *ws = dict_val_ptr(e);
    struct rv_str k = dict_key(e);
    const char *key = k.p;
    size_t len = k.len;
    int64_t now = x->env->now_ms;
    struct ks_entry *gone = db_peek(x->env, x->db, k);
    struct ks_entry *in = x->with >= 0 ? db_peek(x->env, (unsigned)x->with, k) : NULL;
    bool live_in = ks_entry_live(in, now);
    bool live_gone = ks_entry_live(gone, now);
    for (size_t j = 0; j < ws->n; j++) {
        struct multi_state *m = ws->v[j]->mstate;
        for (size_t i = 0; i < m->nw; i++) {
            struct watched_key *w = &m->w[i];
            if (w->db != x->db || w->len != len || memcmp(w->key, key, len) != 0) {
                continue;
            }
            /* an expired key going (or staying expired) is no change; one
             * that was live at WATCH and expired since already fails EXEC */
            if (live_in || live_gone || (gone != NULL && w->existed)) {
                m->dirty_cas = true;
            }
        }
    }
}

void
multi_touch_flush(struct shard *s, unsigned db, int with)
{
    struct shard_env *env = shard_env(s);
    if (env->watched != NULL && dict_size(env->watched) != 0) {
        struct flush_ctx x = { env, db, with };
        dict_foreach(env->watched, flag_flushed, &x);
    }
}

static bool
key_live(struct conn *c, unsigned db, const char *key, size_t len)
{
    return ks_entry_live(ks_peek(shard_db(c->env, db), key, len), c->env->now_ms);
}

void
multi_watch(struct conn *c, int n, const struct rv_str *keys)
{
    struct multi_state *m = mstate(c);
    struct dict **tabp = &c->env->watched;
    if (*tabp == NULL) {
        *tabp = dict_create();
    }
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < m->nw && !dup; j++) {
            dup = m->w[j].db == c->db && m->w[j].len == keys[i].len &&
                  memcmp(m->w[j].key, keys[i].p, keys[i].len) == 0;
        }
        if (dup) {
            continue;
        }
        if (m->nw == m->capw) {
            m->capw = m->capw ? m->capw * 2 : 4;
            m->w = rv_realloc(m->w, m->capw * sizeof(*m->w));
        }
        m->w[m->nw++] = (struct watched_key){ rv_strndup(keys[i].p, keys[i].len), keys[i].len,
                                              c->db, key_live(c, c->db, keys[i].p, keys[i].len) };
        bool created;
        struct dict_entry *e = dict_add(*tabp, keys[i].p, keys[i].len, &created);
        struct watchers *ws = created ? rv_calloc(1, sizeof(*ws)) : dict_val_ptr(e);
        if (created) {
            dict_set_val_ptr(e, ws);
        }
        if (ws->n == ws->cap) {
            ws->cap = ws->cap ? ws->cap * 2 : 2;
            ws->v = rv_realloc(ws->v, ws->cap * sizeof(*ws->v));
        }
        ws->v[ws->n++] = c;
    }
}

bool
multi_watch_dirty(const struct conn *c)
{
    return c->mstate != NULL && c->mstate->dirty_cas;
}

void
multi_unwatch(struct conn *c)
{
    if (c->mstate && c->mstate->nw) {
        unwatch_all(c);
    }
}

void
multi_begin(struct conn *c)
{
    mstate(c)->in_multi = true;
    c->flags |= CONN_MULTI;
}

/* A watched key that was live at WATCH and is gone or expired now counts as
 * modified (expiry, eviction, or a delete we were not told about). */
static bool
watched_key_lost(struct conn *c)
{
    struct multi_state *m = c->mstate;
    for (size_t i = 0; i < m->nw; i++) {
        if (m->w[i].existed && !key_live(c, m->w[i].db, m->w[i].key, m->w[i].len)) {
            return true;
        }
    }
    return false;
}

/* The write guard that dispatch applied when the writes were queued, applied
 * again at EXEC: since then the node may have become a replica (FAILOVER,
 * REPLICAOF), been fenced or lost its replicas. As Redis, the transaction is
 * then discarded whole with the reason (EXECABORT ... READONLY ..., written so
 * by reply.c under CONN_EXEC_ABORT); during a FAILOVER's pause EXEC waits like
 * a write and is parsed again after it.
 * true when EXEC must not run now (replied, or paused). */
static bool
exec_refused(struct conn *c, const struct multi_state *m)
{
    bool writes = false;
    for (size_t i = 0; i < m->nq && !writes; i++) {
        writes = (m->q[i].cmd->flags & CMD_WRITE) != 0;
    }
    if (!writes || !persist_hot(c->persist)->guard) {
        return false;
    }
    c->flags = (c->flags & ~CONN_MULTI) | CONN_EXEC_ABORT; /* judged as one write */
    bool refused = persist_refuse_write(c);
    bool replied = !(c->flags & CONN_EXEC_ABORT); /* reply.c took the flag */
    c->flags = (c->flags & ~CONN_EXEC_ABORT) | CONN_MULTI;
    if (!refused || !replied) {
        return refused; /* runs, or paused (a FAILOVER) with no reply yet */
    }
    multi_release(c);
    return true;
}

enum multi_verdict
multi_exec_check(struct conn *c)
{
    struct multi_state *m = c->mstate;
    /* Over a memory budget, a transaction that may grow memory is refused whole
     * (as Redis: the OOM check applies to EXEC for its queued commands). */
    if (evict_hot(c->env->evict)->armed) {
        bool denyoom = false;
        for (size_t i = 0; i < m->nq && !denyoom; i++) {
            denyoom = (m->q[i].cmd->flags & CMD_DENYOOM) != 0;
        }
        if (denyoom && !evict_admit(c->shard)) {
            return MULTI_OOM;
        }
    }
    if (rv_unlikely(exec_refused(c, m))) {
        return MULTI_HELD;
    }
    /* replica-serve-stale-data no, link down since the commands were queued:
     * as Redis, EXEC is refused whole unless every queued command may run. */
    if (rv_unlikely(persist_hot(c->persist)->stale)) {
        for (size_t i = 0; i < m->nq; i++) {
            if (!(m->q[i].cmd->flags & CMD_STALE)) {
                return MULTI_STALE;
            }
        }
    }
    if (m->dirty_exec) {
        return MULTI_ABORTED;
    }
    if (m->dirty_cas || (m->nw && watched_key_lost(c))) {
        return MULTI_WATCH_FAILED;
    }
    return MULTI_RUN;
}

/* Run the queued commands from i on. A topology-changing command (CLUSTER
 * ADDSLOTS & co., features/topology.h) leaves the client waiting for its
 * commit: EXEC stops there and multi_exec_resume() goes on once its reply
 * was written, so each command's reply lands in its place in EXEC's array.
 * (The commands after it then run after the commit, not atomically with the
 * ones before: redis-cli's transactions hold topology commands only.) */
static void
exec_from(struct conn *c, size_t i)
{
    struct multi_state *m = c->mstate;
    c->flags |= CONN_IN_EXEC;
    for (; i < m->nq; i++) {
        /* As Redis, ACLs are checked again: they may have changed since queueing. */
        if (rv_unlikely(c->acl_slow) && !acl_allow(c, m->q[i].cmd, m->q[i].argc, m->q[i].argv)) {
            continue;
        }
        cmd_call(c, m->q[i].cmd, m->q[i].argc, m->q[i].argv);
        if (rv_unlikely(c->flags & CONN_TOPO_WAIT)) {
            m->resume_at = i + 1;
            m->exec_waits = true;
            c->flags &= ~CONN_IN_EXEC;
            persist_exec_end(c); /* (other clients run meanwhile) */
            return;
        }
    }
    m->exec_waits = false;
    c->flags &= ~CONN_IN_EXEC;
    persist_exec_end(c);
    multi_release(c);
}

void
multi_exec_run(struct conn *c)
{
    struct multi_state *m = c->mstate;
    /* Unwatch first: our own writes must not flag us, and nothing can run
     * between here and the end of the transaction on this shard. */
    if (m->nw) {
        unwatch_all(c);
    }
    c->flags &= ~CONN_MULTI;
    m->in_multi = false;
    reply_array(c, m->nq);
    exec_from(c, 0);
}

bool
multi_exec_resume(struct conn *c)
{
    struct multi_state *m = c->mstate;
    if (m == NULL || !m->exec_waits) {
        return false;
    }
    exec_from(c, m->resume_at);
    return (c->flags & CONN_TOPO_WAIT) != 0;
}

size_t
multi_watch_count(const struct conn *c)
{
    return c->mstate ? c->mstate->nw : 0;
}

long
multi_queued(const struct conn *c, size_t *bytes)
{
    const struct multi_state *m = c->mstate;
    *bytes = m && m->in_multi ? m->qbytes : 0;
    return m && m->in_multi ? (long)m->nq : -1;
}

bool
multi_queued_cmd(const struct conn *c, size_t i, const struct cmd_spec **cmd, int *argc,
                 struct rv_str **argv)
{
    const struct multi_state *m = c->mstate;
    if (m == NULL || i >= m->nq) {
        return false;
    }
    *cmd = m->q[i].cmd;
    *argc = m->q[i].argc;
    *argv = m->q[i].argv;
    return true;
}
