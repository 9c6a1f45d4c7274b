/* node/features/pause.c: clients held by CLIENT PAUSE, per shard, in order. */
#include "node/features/pause.h"

#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/features/multi.h"

#include <string.h>

struct pause_shard {
    struct conn **v; /* held clients, oldest first */
    size_t n, cap;
};

/* node->client_pause holds end_ms * 2 + (1 for ALL). */
static bool
decode(const struct shard_env *env, int64_t v, bool *all)
{
    *all = (v & 1) != 0;
    return v != 0 && env->now_ms < (v >> 1);
}

bool
pause_active(const struct shard_env *env)
{
    bool all;
    return decode(env, atomic_load_explicit(&env->node->client_pause, memory_order_relaxed), &all);
}

/* A write, or something that may cause one (EXEC: any of its queued commands). */
static bool
may_write(const struct conn *c, const struct cmd_spec *cmd)
{
    const uint32_t w = CMD_WRITE | CMD_MAY_REPLICATE;
    if (cmd->flags & w) {
        return true;
    }
    if ((c->flags & CONN_MULTI) && strcmp(cmd->name, "exec") == 0) {
        const struct cmd_spec *qc;
        int qa;
        struct rv_str *qv;
        for (size_t i = 0; multi_queued_cmd(c, i, &qc, &qa, &qv); i++) {
            if (qc->flags & w) {
                return true;
            }
        }
    }
    return false;
}

bool
pause_hold(struct conn *c, const struct cmd_spec *cmd)
{
    bool all;
    if (!decode(c->env, atomic_load_explicit(&c->env->node->client_pause, memory_order_relaxed),
                &all) ||
        (c->flags & (CONN_REPLAY | CONN_MONITOR)) || (!all && !may_write(c, cmd))) {
        return false;
    }
    struct shard_env *env = c->env;
    struct pause_shard *p = env->paused;
    if (p == NULL) {
        p = env->paused = rv_calloc(1, sizeof(*p));
    }
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->v = rv_realloc(p->v, p->cap * sizeof(*p->v));
    }
    p->v[p->n++] = c;
    c->rbuf.off = c->cmd_start; /* parsed again when the pause ends */
    c->flags |= CONN_BLOCKED | CONN_CPAUSED;
    return true;
}

void
pause_start(struct shard_env *env, int64_t end_ms, bool all)
{
    atomic_int_fast64_t *slot = &env->node->client_pause;
    int64_t old = atomic_load_explicit(slot, memory_order_relaxed), v;
    if (end_ms > INT64_MAX / 4) {
        end_ms = INT64_MAX / 4;
    }
    do {
        bool old_all;
        bool live = decode(env, old, &old_all);
        int64_t end = live && (old >> 1) > end_ms ? (old >> 1) : end_ms;
        v = end * 2 + ((all || (live && old_all)) ? 1 : 0);
    } while (!atomic_compare_exchange_weak_explicit(slot, &old, v, memory_order_relaxed,
                                                    memory_order_relaxed));
}

/* Resume the clients held when this started, oldest first; one held again
 * by a newer pause goes back to the end of the list. */
static void
resume_held(struct shard *s)
{
    struct pause_shard *p = shard_env(s)->paused;
    for (size_t todo = p ? p->n : 0; todo > 0 && p->n > 0; todo--) {
        struct conn *c = p->v[0];
        memmove(&p->v[0], &p->v[1], (p->n - 1) * sizeof(*p->v));
        p->n--;
        c->flags &= ~(CONN_BLOCKED | CONN_CPAUSED);
        conn_resume(c);
        shard_want_write(s, c);
    }
}

static void
run_unpause(struct shard *s, struct shard_msg *m)
{
    rv_free(m);
    resume_held(s);
}

void
pause_stop(struct shard_env *env)
{
    struct node *n = env->node;
    atomic_store_explicit(&n->client_pause, 0, memory_order_relaxed);
    for (unsigned i = 0; i < n->nshards; i++) {
        struct shard_msg *m = rv_calloc(1, sizeof(*m));
        m->run = run_unpause;
        shard_post(n->shards[i], m); /* (this shard too: not from inside a command) */
    }
}

void
pause_tick(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    int64_t v = atomic_load_explicit(&env->node->client_pause, memory_order_relaxed);
    bool all;
    if (v != 0 && !decode(env, v, &all)) {
        /* run out: clear it so the dispatcher's check is one load again */
        atomic_compare_exchange_strong_explicit(&env->node->client_pause, &v, 0,
                                                memory_order_relaxed, memory_order_relaxed);
        v = 0;
    }
    if (v == 0 && env->paused != NULL && env->paused->n > 0) {
        resume_held(s);
    }
}

void
pause_shard_destroy(struct shard *s)
{
    struct pause_shard *p = shard_env(s)->paused;
    if (p != NULL) {
        rv_free(p->v);
        rv_free(p);
        shard_env(s)->paused = NULL;
    }
}

void
pause_release(struct conn *c)
{
    struct pause_shard *p = c->env->paused;
    if (!(c->flags & CONN_CPAUSED) || p == NULL) {
        return;
    }
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i] == c) {
            memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof(*p->v));
            p->n--;
            break;
        }
    }
    c->flags &= ~(CONN_BLOCKED | CONN_CPAUSED);
}
