/* node/commands/migrate_stage.c: the target's staging values of MIGRATE
 * (migrate_stage.h has the records and the rules).
 *
 * The values live in a keyspace of their own (struct mstage.ks), which the
 * records' handlers point the shard's running keyspace at around the
 * command they borrow (RESTORE, and slotmig_chunk.c's smc_apply and
 * smc_reserve): nothing else ever reads it. COMMIT moves the entry into
 * database 0 with ks_move_to (no copy of the value). */
#include "node/commands/migrate_stage.h"

#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig_chunk.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "replication/repl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct mstage_ent {
    char *key;
    size_t klen;
    uint64_t owner; /* the connection that began it; 0: a replayed record's */
    int64_t last_ms;
};

struct mstage {
    struct ks *ks;
    struct mstage_ent *v;
    size_t n, cap;
};

static struct mstage *
ms_get(struct shard_env *env)
{
    if (env->mstage == NULL) {
        struct mstage *m = rv_calloc(1, sizeof(*m));
        m->ks = ks_create(rand_u64(), rand_u64());
        ks_inherit(m->ks, env->dbs[0]);
        env->mstage = m;
    }
    return env->mstage;
}

static ptrdiff_t
ms_find(const struct mstage *m, struct rv_str key)
{
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        if (m->v[i].klen == key.len && memcmp(m->v[i].key, key.p, key.len) == 0) {
            return (ptrdiff_t)i;
        }
    }
    return -1;
}

/* Forget entry i; its value too unless it became the key. */
static void
ms_forget(struct mstage *m, size_t i, bool drop_value)
{
    if (drop_value) {
        ks_delete(m->ks, m->v[i].key, m->v[i].klen);
    }
    rv_free(m->v[i].key);
    m->v[i] = m->v[--m->n];
}

static void
ms_note(struct mstage *m, struct conn *c, struct rv_str key)
{
    ptrdiff_t i = ms_find(m, key);
    if (i < 0) {
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 8;
            m->v = rv_realloc(m->v, m->cap * sizeof(*m->v));
        }
        i = (ptrdiff_t)m->n++;
        m->v[i].key = rv_malloc(key.len ? key.len : 1);
        memcpy(m->v[i].key, key.p, key.len);
        m->v[i].klen = key.len;
    }
    m->v[i].owner = (c->flags & CONN_REPLAY) ? 0 : c->id;
    m->v[i].last_ms = c->env->now_ms;
}

size_t
mstage_count(const struct shard_env *env)
{
    return env->mstage != NULL ? env->mstage->n : 0;
}

/* Logs RESTORE-STAGE ABORT key for a staging value dropped outside a command
 * (its connection went, or it was idle), as any write of this shard's. */
static void
ms_log_abort(struct shard *s, struct rv_str key)
{
    struct rv_str argv[3] = { { "RESTORE-STAGE", 13 }, { "ABORT", 5 }, key };
    persist_log_cmd(s, 3, argv);
}

static void
ms_drop_logged(struct shard *s, struct mstage *m, size_t i, const char *why)
{
    struct rv_str key = { m->v[i].key, m->v[i].klen };
    log_info("[shard %u] MIGRATE: the staging value of '%.*s' goes (%s)", shard_env(s)->id,
             (int)(key.len > 64 ? 64 : key.len), key.p, why);
    ms_log_abort(s, key);
    ms_forget(m, i, true);
}

void
mstage_conn_gone(struct conn *c)
{
    struct mstage *m = c->env != NULL ? c->env->mstage : NULL;
    for (size_t i = 0; m != NULL && i < m->n;) {
        if (m->v[i].owner != 0 && m->v[i].owner == c->id) {
            ms_drop_logged(c->shard, m, i, "its source's connection closed");
        } else {
            i++;
        }
    }
}

void
mstage_cron(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    struct mstage *m = env->mstage;
    if (m == NULL || m->n == 0 || persist_loading(s)) {
        return;
    }
    struct repl *r = persist_repl(s);
    if (r != NULL && repl_is_replica(r)) {
        return; /* (a replica drops them when its primary's records say so) */
    }
    for (size_t i = 0; i < m->n;) {
        if (env->now_ms - m->v[i].last_ms > MSTAGE_IDLE_MS) {
            ms_drop_logged(s, m, i, "no chunk for 30 s");
        } else {
            i++;
        }
    }
}

void
mstage_shard_destroy(struct shard *s)
{
    struct mstage *m = shard_env(s)->mstage;
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        rv_free(m->v[i].key);
    }
    rv_free(m->v);
    ks_destroy(m->ks);
    rv_free(m);
    shard_env(s)->mstage = NULL;
}

/* ---- the records ---- */

/* Point the connection's database at the staging keyspace around a borrowed
 * command (RESTORE replays its payload through the database's slot). */
struct ms_swap {
    struct ks *ks, *db;
};

static struct ms_swap
ms_enter(struct conn *c, struct mstage *m)
{
    struct shard_env *env = c->env;
    struct ms_swap w = { env->ks, shard_db(env, c->db) };
    env->dbs[c->db] = m->ks;
    env->ks = m->ks;
    return w;
}

static void
ms_leave(struct conn *c, struct ms_swap w)
{
    c->env->dbs[c->db] = w.db;
    c->env->ks = w.ks;
}

/* Logs the record as it came (argv[0..argc)). */
static void
ms_log_as_is(struct conn *c, int argc, const struct rv_str *argv)
{
    effect_redo(c, "RESTORE-STAGE", argv[1]);
    for (int i = 2; i < argc; i++) {
        effect_arg(c, argv[i].p, argv[i].len);
    }
}

static void
ms_restore(struct conn *c, int argc, struct rv_str *argv)
{
    struct shard_env *env = c->env;
    struct mstage *m = ms_get(env);
    struct rv_str key = argv[2];
    if (ms_find(m, key) < 0 && m->n >= MSTAGE_MAX) {
        effect_none(c);
        reply_errf(c, "ERR Too many staging values on this shard");
        return;
    }
    struct rv_str av[5] = { { "RESTORE", 7 }, key, { "0", 1 }, argv[4], { "REPLACE", 7 } };
    uint32_t nerr = c->nerr;
    struct ms_swap w = ms_enter(c, m);
    cmd_restore(c, 5, av);
    ms_leave(c, w);
    if (c->nerr != nerr || ks_peek(m->ks, key.p, key.len) == NULL) {
        effect_none(c);
        return;
    }
    ms_note(m, c, key);
    ms_log_as_is(c, argc, argv);
}

static void
ms_append(struct conn *c, int argc, struct rv_str *argv)
{
    struct shard_env *env = c->env;
    struct mstage *m = env->mstage;
    ptrdiff_t i = ms_find(m, argv[2]);
    effect_none(c);
    if (i < 0) {
        reply_errf(c, "ERR No staging value for this key");
        return;
    }
    bool reserve = cmd_arg_is(argv[1], "reserve");
    struct rv_str saved[3] = { argv[1], argv[2], argv[3] }; /* (smc_apply swaps argv[2..3]) */
    uint32_t nerr = c->nerr;
    struct ms_swap w = ms_enter(c, m);
    if (reserve) {
        smc_reserve(c, argv[2], argv[3]);
    } else {
        smc_apply(c, argc, argv);
    }
    ms_leave(c, w);
    argv[1] = saved[0];
    argv[2] = saved[1];
    argv[3] = saved[2];
    m->v[i].last_ms = env->now_ms;
    if (reserve || c->nerr != nerr) {
        effect_none(c); /* (RESERVE: memory only, as RVMIGSLOTS RESERVE) */
        return;
    }
    ms_log_as_is(c, argc, argv);
}

static void
ms_commit(struct conn *c, int argc, struct rv_str *argv)
{
    struct shard_env *env = c->env;
    struct mstage *m = env->mstage;
    struct rv_str key = argv[2];
    bool replace = false, absttl = false;
    int64_t ttl, now = env->now_ms;
    effect_none(c);
    for (int k = 4; k < argc; k++) {
        if (cmd_arg_is(argv[k], "replace")) {
            replace = true;
        } else if (cmd_arg_is(argv[k], "absttl")) {
            absttl = true;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    if (!cmd_arg_int(argv[3], &ttl) || ttl < 0) {
        reply_errf(c, "ERR Invalid TTL value, must be >= 0");
        return;
    }
    ptrdiff_t i = ms_find(m, key);
    if (i < 0) {
        reply_errf(c, "ERR No staging value for this key");
        return;
    }
    struct ks_entry *e = ks_lookup(env->ks, key.p, key.len, now);
    if (e != NULL && !replace) {
        reply_errf(c, "BUSYKEY Target key name already exists.");
        return; /* (the staging value stays until ABORT or its connection goes) */
    }
    int64_t at = ttl == 0 ? KS_NO_EXPIRE : absttl ? ttl : now + ttl;
    if (at != KS_NO_EXPIRE && at <= now) {
        ks_delete(env->ks, key.p, key.len); /* already expired: not created (RESTORE) */
        ms_forget(m, (size_t)i, true);
    } else {
        ks_move_to(env->ks, m->ks, key.p, key.len);
        ms_forget(m, (size_t)i, false);
        e = ks_peek(env->ks, key.p, key.len);
        if (e != NULL) {
            ks_set_expire(env->ks, e, at);
        }
        ksn_event(env, KSN_NEW, "new", key);
        ksn_event(env, KSN_GENERIC, "restore", key);
    }
    /* logged with its absolute deadline: a replay long after still ends so */
    effect_redo(c, "RESTORE-STAGE", argv[1]);
    effect_arg(c, key.p, key.len);
    effect_arg_i64(c, at == KS_NO_EXPIRE ? 0 : at);
    effect_arg(c, "REPLACE", 7);
    effect_arg(c, "ABSTTL", 6);
    reply_ok(c);
}

static void
ms_abort(struct conn *c, struct rv_str key)
{
    struct mstage *m = c->env->mstage;
    ptrdiff_t i = ms_find(m, key);
    if (i < 0) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    ms_forget(m, (size_t)i, true);
    effect_redo(c, "RESTORE-STAGE", (struct rv_str){ "ABORT", 5 });
    effect_arg(c, key.p, key.len);
    reply_int(c, 1);
}

/* ---- in checkpoints and full syncs ---- */

struct ms_emit {
    obj_emit_fn *fn;
    void *arg;
    struct rv_str *av;
    int cap;
};

static void
ms_emit_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct ms_emit *x = arg;
    if (argc + 2 > x->cap) {
        x->cap = argc + 2;
        x->av = rv_realloc(x->av, (size_t)x->cap * sizeof(*x->av));
    }
    x->av[0] = (struct rv_str){ "RESTORE-STAGE", 13 };
    x->av[1] = (struct rv_str){ "LOAD", 4 };
    memcpy(x->av + 2, argv, (size_t)argc * sizeof(*argv));
    x->fn(x->arg, argc + 2, x->av);
}

void
mstage_emit(struct shard *s, obj_emit_fn *fn, void *arg)
{
    struct mstage *m = shard_env(s)->mstage;
    struct ms_emit x = { fn, arg, NULL, 0 };
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        const struct ks_entry *e = ks_peek(m->ks, m->v[i].key, m->v[i].klen);
        if (e != NULL) {
            persist_rebuild_entry(e, ms_emit_cmd, &x);
        }
    }
    rv_free(x.av);
}

/* RESTORE-STAGE LOAD <command> key arg ...: a staging value as a checkpoint
 * or a full sync wrote it (mstage_emit): the command runs on the staging
 * keyspace. Only the writes the emitter makes of a value, on argv[3]. */
static void
ms_load(struct conn *c, int argc, struct rv_str *argv)
{
    struct mstage *m = ms_get(c->env);
    const struct cmd_spec *cmd = cmd_lookup(argv[2].p, argv[2].len);
    effect_none(c);
    if (cmd == NULL || !(cmd->flags & CMD_WRITE) || cmd->first != 1 || cmd->subs != NULL ||
        (cmd->arity > 0 ? argc - 2 != cmd->arity : argc - 2 < -cmd->arity)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    struct rv_str key = argv[3];
    if (ms_find(m, key) < 0 && m->n >= MSTAGE_MAX) {
        reply_errf(c, "ERR Too many staging values on this shard");
        return;
    }
    uint32_t nerr = c->nerr;
    struct ms_swap w = ms_enter(c, m);
    cmd->fn(c, argc - 2, argv + 2);
    ms_leave(c, w);
    effect_none(c);
    if (c->nerr != nerr || ks_peek(m->ks, key.p, key.len) == NULL) {
        return;
    }
    ms_note(m, c, key);
    ms_log_as_is(c, argc, argv);
}

CMD_HANDLER(restore_stage)
{
    if (cmd_arg_is(argv[1], "load") && argc >= 4) {
        ms_load(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "restore") && argc == 5) {
        ms_restore(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "append") && argc >= 5) {
        ms_append(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "reserve") && argc == 4) {
        ms_append(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "commit") && argc >= 4) {
        ms_commit(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "abort") && argc == 3) {
        ms_abort(c, argv[2]);
    } else {
        effect_none(c);
        reply_err(c, RV_ERR_SYNTAX);
    }
}

CMD_HANDLER(debug_migrate_staging)
{
    (void)argc;
    (void)argv;
    reply_int(c, (int64_t)mstage_count(c->env));
}
