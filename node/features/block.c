/* node/features/block.c */
#include "node/features/block.h"

#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/dict.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <event2/event.h>
#include <math.h>
#include <string.h>

struct block_state {
    const struct cmd_spec *cmd;
    int argc;
    struct rv_str *argv; /* copy: argv array then bytes, one allocation */
    int *keyidx;
    int nkeys;
    enum block_timeout_reply tr;
    struct event *timer;
    bool reblocked; /* set by block_wait during a re-run */
};

/* Connections waiting on one key, oldest first. */
struct waiters {
    struct conn **v;
    size_t n, cap;
};

struct block_shard {
    struct dict *waiting; /* key -> struct waiters * */
    struct rv_str *ready; /* keys signalled since the last serve (owned copies) */
    size_t nready, capready;
    bool serving;
};

static struct block_shard *
bshard(struct shard *s)
{
    struct block_shard **pp = &shard_env(s)->blocking;
    if (*pp == NULL) {
        *pp = rv_calloc(1, sizeof(**pp));
        (*pp)->waiting = dict_create();
    }
    return *pp;
}

bool
block_parse_timeout(struct conn *c, struct rv_str arg, int64_t *deadline_ms)
{
    long double t;
    if (!cmd_arg_double(arg, &t) || isinf(t)) {
        reply_errf(c, "ERR timeout is not a float or out of range");
        return false;
    }
    if (t < 0) {
        reply_err(c, RV_ERR_TIMEOUT_NEG);
        return false;
    }
    long double ms = t * 1000.0L;
    if (ms > (long double)(INT64_MAX / 2)) {
        reply_errf(c, "ERR timeout is out of range");
        return false;
    }
    /* Round sub-millisecond timeouts up: 0.0001 must still block, not forever. */
    int64_t add = (int64_t)ceill(ms);
    *deadline_ms = add == 0 ? 0 : c->env->now_ms + add;
    return true;
}

static void
waiters_remove(struct block_shard *bs, struct rv_str key, struct conn *c)
{
    struct dict_entry *e = dict_find(bs->waiting, key.p, key.len);
    if (e == NULL) {
        return;
    }
    struct waiters *w = dict_val_ptr(e);
    for (size_t i = 0; i < w->n; i++) {
        if (w->v[i] == c) {
            memmove(&w->v[i], &w->v[i + 1], (w->n - i - 1) * sizeof(*w->v));
            w->n--;
            break;
        }
    }
    if (w->n == 0) {
        dict_delete(bs->waiting, key.p, key.len, NULL);
        rv_free(w->v);
        rv_free(w);
    }
}

void
block_release(struct conn *c)
{
    struct block_state *b = c->bstate;
    if (b == NULL) {
        return;
    }
    struct block_shard *bs = c->env->blocking;
    for (int i = 0; i < b->nkeys && bs; i++) {
        waiters_remove(bs, b->argv[b->keyidx[i]], c);
    }
    if (b->timer) {
        event_free(b->timer);
    }
    rv_free(b->argv);
    rv_free(b->keyidx);
    rv_free(b);
    c->bstate = NULL;
    c->flags &= ~CONN_BLOCKED;
}

static void
reply_timeout(struct conn *c, enum block_timeout_reply tr)
{
    if (tr == BLOCK_REPLY_NULL) {
        reply_null(c);
    } else {
        reply_null_array(c);
    }
}

/* End the wait of c with what is already in its output, and go on with
 * whatever it pipelined behind the blocking command. */
static void
block_finish(struct conn *c)
{
    block_release(c);
    conn_resume(c);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;
    shard_refresh_clock(c->shard);
    reply_timeout(c, c->bstate->tr);
    block_finish(c);
}

void
block_wait(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
           const int *keyidx, int nkeys, int64_t deadline_ms, enum block_timeout_reply tr)
{
    if (c->flags & CONN_BLOCK_RETRY) {
        c->bstate->reblocked = true; /* keep our place in line */
        effect_waiting(c);
        return;
    }
    if (c->flags & (CONN_MULTI | CONN_IN_EXEC)) {
        reply_timeout(c, tr); /* a transaction never blocks */
        effect_none(c);
        return;
    }
    effect_waiting(c); /* (the dispatcher then neither logs it nor signals its keys) */
    struct block_state *b = rv_calloc(1, sizeof(*b));
    size_t bytes = (size_t)argc * sizeof(struct rv_str);
    for (int i = 0; i < argc; i++) {
        bytes += argv[i].len;
    }
    b->argv = rv_malloc(bytes);
    char *data = (char *)(b->argv + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(data, argv[i].p, argv[i].len);
        b->argv[i] = (struct rv_str){ data, argv[i].len };
        data += argv[i].len;
    }
    b->cmd = cmd;
    b->argc = argc;
    b->nkeys = nkeys;
    b->keyidx = rv_malloc((size_t)nkeys * sizeof(int));
    memcpy(b->keyidx, keyidx, (size_t)nkeys * sizeof(int));
    b->tr = tr;
    c->bstate = b;
    c->flags |= CONN_BLOCKED;

    struct block_shard *bs = bshard(c->shard);
    for (int i = 0; i < nkeys; i++) {
        struct rv_str k = b->argv[keyidx[i]];
        bool created;
        struct dict_entry *e = dict_add(bs->waiting, k.p, k.len, &created);
        struct waiters *w = created ? rv_calloc(1, sizeof(*w)) : dict_val_ptr(e);
        if (created) {
            dict_set_val_ptr(e, w);
        }
        bool dup = false;
        for (size_t j = 0; j < w->n && !dup; j++) {
            dup = w->v[j] == c; /* BLPOP k k: wait once */
        }
        if (dup) {
            continue;
        }
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4;
            w->v = rv_realloc(w->v, w->cap * sizeof(*w->v));
        }
        w->v[w->n++] = c;
    }
    if (deadline_ms > 0) {
        int64_t left = deadline_ms - c->env->now_ms;
        struct timeval tv = { left > 0 ? left / 1000 : 0, left > 0 ? (left % 1000) * 1000 : 0 };
        b->timer = evtimer_new(shard_base(c->shard), on_timeout, c);
        evtimer_add(b->timer, &tv);
    }
}

static void ready_add(struct block_shard *bs, struct rv_str k);

void
block_signal(struct shard *s, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct block_shard *bs = shard_env(s)->blocking;
    int keys[256];
    if (bs == NULL || dict_size(bs->waiting) == 0) {
        return;
    }
    int n = cmd_get_keys(cmd, argc, argv, keys, 256);
    for (int i = 0; i < n; i++) {
        struct rv_str k = argv[keys[i]];
        if (dict_find(bs->waiting, k.p, k.len) == NULL) {
            continue;
        }
        ready_add(bs, k);
    }
}

static void
ready_add(struct block_shard *bs, struct rv_str k)
{
    for (size_t j = 0; j < bs->nready; j++) {
        if (bs->ready[j].len == k.len && memcmp(bs->ready[j].p, k.p, k.len) == 0) {
            return;
        }
    }
    if (bs->nready == bs->capready) {
        bs->capready = bs->capready ? bs->capready * 2 : 4;
        bs->ready = rv_realloc(bs->ready, bs->capready * sizeof(*bs->ready));
    }
    bs->ready[bs->nready++] = (struct rv_str){ rv_strndup(k.p, k.len), k.len };
}

static void
ready_waiting(void *arg, struct dict_entry *e)
{
    ready_add(arg, dict_key(e));
}

void
block_signal_all(struct shard *s)
{
    struct block_shard *bs = shard_env(s)->blocking;
    if (bs != NULL && dict_size(bs->waiting) != 0) {
        dict_foreach(bs->waiting, ready_waiting, bs);
    }
}

bool
block_pending(struct shard *s)
{
    struct block_shard *bs = shard_env(s)->blocking;
    return bs && bs->nready > 0 && !bs->serving;
}

/* Re-run c's command; true when it was served (it replied instead of waiting). */
static bool
block_retry(struct conn *c)
{
    struct block_state *b = c->bstate;
    b->reblocked = false;
    c->flags |= CONN_BLOCK_RETRY;
    cmd_call(c, b->cmd, b->argc, b->argv);
    c->flags &= ~CONN_BLOCK_RETRY;
    return !b->reblocked;
}

void
block_serve(struct shard *s)
{
    struct block_shard *bs = shard_env(s)->blocking;
    if (bs == NULL || bs->serving) {
        return;
    }
    bs->serving = true;
    while (bs->nready > 0) {
        struct rv_str key = bs->ready[0];
        memmove(&bs->ready[0], &bs->ready[1], (bs->nready - 1) * sizeof(*bs->ready));
        bs->nready--;
        struct dict_entry *e = dict_find(bs->waiting, key.p, key.len);
        if (e != NULL) {
            /* Serve from a snapshot: serving changes the list. */
            struct waiters *w = dict_val_ptr(e);
            size_t n = w->n;
            struct conn **snap = rv_malloc(n * sizeof(*snap));
            memcpy(snap, w->v, n * sizeof(*snap));
            for (size_t i = 0; i < n; i++) {
                struct conn *c = snap[i];
                bool still = false;
                struct dict_entry *e2 = dict_find(bs->waiting, key.p, key.len);
                struct waiters *w2 = e2 ? dict_val_ptr(e2) : NULL;
                for (size_t j = 0; w2 && j < w2->n && !still; j++) {
                    still = w2->v[j] == c;
                }
                if (still && block_retry(c)) {
                    block_finish(c);
                }
            }
            rv_free(snap);
        }
        rv_free((void *)key.p);
    }
    bs->serving = false;
}

bool
block_unblock(struct conn *c, bool with_error)
{
    if (!(c->flags & CONN_BLOCKED) || c->bstate == NULL) {
        return false; /* (waiting otherwise: WAIT, a FAILOVER or CLIENT PAUSE hold) */
    }
    if (with_error) {
        reply_errf(c, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
    } else {
        reply_timeout(c, c->bstate->tr);
    }
    block_finish(c);
    return true;
}

struct conn_set {
    struct conn **v;
    size_t n, cap;
};

static void
collect_waiters(void *arg, struct dict_entry *e)
{
    struct conn_set *cs = arg;
    const struct waiters *w = dict_val_ptr(e);
    for (size_t i = 0; i < w->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < cs->n && !seen; j++) {
            seen = cs->v[j] == w->v[i];
        }
        if (seen) {
            continue; /* waits on several keys */
        }
        if (cs->n == cs->cap) {
            cs->cap = cs->cap ? cs->cap * 2 : 8;
            cs->v = rv_realloc(cs->v, cs->cap * sizeof(*cs->v));
        }
        cs->v[cs->n++] = w->v[i];
    }
}

void
block_unblock_all(struct shard *s, const char *err)
{
    struct block_shard *bs = shard_env(s)->blocking;
    if (bs == NULL) {
        return;
    }
    struct conn_set cs = { 0 };
    dict_foreach(bs->waiting, collect_waiters, &cs);
    for (size_t i = 0; i < cs.n; i++) {
        reply_errf(cs.v[i], "%s", err);
        block_finish(cs.v[i]);
    }
    rv_free(cs.v);
}

void
block_redirect(struct shard *s, block_refuse_fn *refuse, void *arg)
{
    struct block_shard *bs = shard_env(s)->blocking;
    if (bs == NULL) {
        return;
    }
    struct conn_set cs = { 0 };
    dict_foreach(bs->waiting, collect_waiters, &cs);
    char err[160];
    for (size_t i = 0; i < cs.n; i++) {
        const struct block_state *b = cs.v[i]->bstate;
        if (b != NULL && b->nkeys > 0 && refuse(arg, b->argv[b->keyidx[0]], err, sizeof(err))) {
            reply_errf(cs.v[i], "%s", err);
            block_finish(cs.v[i]);
        }
    }
    rv_free(cs.v);
}

static void
free_waiters(void *p)
{
    struct waiters *w = p;
    rv_free(w->v);
    rv_free(w);
}

void
block_shard_destroy(struct shard *s)
{
    struct block_shard **pp = &shard_env(s)->blocking;
    if (*pp == NULL) {
        return;
    }
    for (size_t i = 0; i < (*pp)->nready; i++) {
        rv_free((void *)(*pp)->ready[i].p);
    }
    rv_free((*pp)->ready);
    dict_destroy((*pp)->waiting, free_waiters);
    rv_free(*pp);
    *pp = NULL;
}
