/* node/commands/slotmig_import.c: the target's side of an atomic slot
 * migration (docs/cluster.md, "Atomic slot migration"; the source's side is
 * cmd_migslots.c).
 *
 *   RVMIGSLOTS BEGIN name source lo hi ... | STATE name st |
 *     RESTORE key abs-expire-ms payload | APPEND key cmd arg ... |
 *     RESERVE key bytes | DEL key | DROP lo hi ... | END name st message
 *
 * The target applies each record as RESTORE/DEL through its dispatcher, so
 * its WAL and its replicas get them. It refuses records for slots it owns.
 * BEGIN opens the shard's one import (slotmig.import, its IMPORT entry in
 * GETSLOTMIGRATIONS), whose slots' keys are hidden from the commands that
 * enumerate keys while the adopted topology does not give them to this node.
 * The import ends when it does (success), on DROP (cancelled) or after
 * SM_IMPORT_IDLE_MS without a record (failed: the copies are deleted unless
 * the source said committing, then shown; slotmig_left.c). BEGIN, STATE
 * committing and the end (END, after the DELs of what it deleted) are
 * logged, so that a replay of the WAL and the replicas open and end it at
 * the same points, and a checkpoint carries the open import
 * (slotmig_emit_state): after a restart the import is known again
 * (sm_import_tick: once the node serves as a primary, one not committing
 * ends and its copies go). */
#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"
#include "node/commands/slotmig_chunk.h"
#include "node/commands/slotmig_int.h"
#include "node/commands/slotmig_left.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/topology.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "proto/resp.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The import is over (kept in the log): its slots' keys are shown again.
 * Logged as RVMIGSLOTS END name state message, after what it deleted, so
 * that a replay of the WAL and the replicas end it at the same point (one
 * reopened by its BEGIN would otherwise delete keys that reached its slots
 * later); nothing is logged while loading or on a replica. */
static void
sm_import_end(struct slotmig *m, enum sm_state st, const char *why)
{
    struct sm_job *j = m->import;
    m->import = NULL;
    evtimer_del(m->imp_tick);
    sm_set(j, st, why);
    struct rv_str v[5] = { { "RVMIGSLOTS", 10 },
                           { "END", 3 },
                           { j->name, TOPO_ID_LEN },
                           { sm_state_name[st], strlen(sm_state_name[st]) },
                           { j->message, strlen(j->message) } };
    persist_log_cmd(m->s, 5, v);
    sm_log_add(m, j);
}

/* Every imported slot is this node's now: the move committed. */
static bool
sm_import_owned(const struct shard_env *env, const struct sm_job *j)
{
    const struct topo *t = env->topo;
    for (size_t i = 0; i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            if (t == NULL || env->topo_me < 0 || t->slots[slot] != (uint16_t)env->topo_me) {
                return false;
            }
        }
    }
    return true;
}

/* Every imported slot is this node's primary's (a replica's import ended). */
static bool
sm_import_primary_owns(const struct shard_env *env, const struct sm_job *j)
{
    const struct topo *t = env->topo;
    if (t == NULL || env->topo_me < 0 || t->nodes[env->topo_me].role != TOPO_REPLICA) {
        return false;
    }
    uint16_t p = t->nodes[env->topo_me].primary;
    for (size_t i = 0; i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            if (p == TOPO_NONE || t->slots[slot] != p) {
                return false;
            }
        }
    }
    return true;
}

/* An import that cannot commit any more ends as st/why (its source went
 * silent before it was committing, or this node restarted or was promoted
 * during it): its copies go first (slotmig_left.h), a slice per turn of the
 * loop from sm_import_tick, the import open meanwhile (its slots hidden, and
 * its END logged after the last DEL: a restart before then deletes them
 * again). Not a serving primary: it ends now (nothing deleted). */
static void
sm_import_drop_left(struct slotmig *m, enum sm_state st, const char *why)
{
    struct sm_job *j = m->import;
    if (!slotmig_drop_begin(m->s, &j->left, j->moving)) {
        sm_import_end(m, st, why);
        return;
    }
    j->clearing = true;
    j->left_end = st;
    snprintf(j->left_why, sizeof(j->left_why), "%s", why);
    snprintf(j->message, sizeof(j->message), "deleting the keys it copied, then: %.180s", why);
    sm_arm_ev(m->imp_tick, 0);
}

/* A slice of the deletion of sm_import_drop_left; the import ends after the
 * last one. A node no longer a serving primary stops deleting: its import
 * then waits for its primary's records, as a recovered one (true: the tick
 * goes on as usual). */
static bool
sm_import_dropping(struct slotmig *m)
{
    struct sm_job *j = m->import;
    if (slotmig_drop_step(m->s, &j->left)) {
        sm_arm_ev(m->imp_tick, 0);
        return false;
    }
    j->clearing = false;
    if (!slotmig_serving_primary(m->s)) {
        j->recovered = true;
        return true;
    }
    if (j->left.deleted > 0) {
        log_notice("cluster: slot import %.8s ended: deleted the %zu key(s) it had copied (%llu "
                   "slices, the longest %llu us)",
                   j->name, j->left.deleted, (unsigned long long)j->left.slices,
                   (unsigned long long)j->left.longest_us);
    }
    char why[sizeof(j->left_why)];
    snprintf(why, sizeof(why), "%s", j->left_why);
    sm_import_end(m, j->left_end, why);
    return false;
}

/* An import that must end while its copies are being deleted (a new BEGIN
 * replaces it): the rest goes now, in one go, so that no slice deletes the
 * new import's copies. */
static void
sm_import_drop_now(struct slotmig *m)
{
    while (m->import != NULL && m->import->clearing && !sm_import_dropping(m)) {
    }
}

void
sm_import_tick(evutil_socket_t fd, short what, void *arg)
{
    struct slotmig *m = arg;
    (void)fd;
    (void)what;
    struct sm_job *j = m->import;
    if (j == NULL || (j->clearing && !sm_import_dropping(m))) {
        return;
    }
    struct shard_env *env = shard_env(m->s);
    if (sm_import_owned(env, j) || (j->recovered && sm_import_primary_owns(env, j))) {
        sm_import_end(m, SM_SUCCESS, "");
        return;
    }
    if (j->recovered && j->state != SM_COMMITTING) {
        /* No source talks to this import (its link went with the restart;
         * a replica's primary decides for it), and one that was not told to
         * commit cannot commit any more: once this node serves as a primary,
         * its copies go. */
        if (slotmig_serving_primary(m->s)) {
            sm_import_drop_left(m, SM_FAILED,
                                "this node restarted or was promoted during the import");
            return;
        }
        j->heard = (int64_t)(clock_mono_us() / 1000);
    } else if (j->recovered && !slotmig_serving_primary(m->s)) {
        j->heard = (int64_t)(clock_mono_us() / 1000); /* (a replica waits for its primary) */
    }
    if ((int64_t)(clock_mono_us() / 1000) - j->heard > SM_IMPORT_IDLE_MS) {
        /* A source that never said committing cannot commit this import any
         * more (its STATE committing would be refused): its copies go. One
         * that did may still commit: they stay (visible). */
        if (j->state != SM_COMMITTING) {
            sm_import_drop_left(m, SM_FAILED, "no record from the source for " SM_IMPORT_IDLE_TEXT);
        } else {
            sm_import_end(m, SM_FAILED, "no record from the source for " SM_IMPORT_IDLE_TEXT);
        }
        return;
    }
    sm_arm_ev(m->imp_tick, SM_IMPORT_TICK_US);
}

static void
sm_import_heard(struct conn *c)
{
    struct slotmig *m = c->env->slotmig;
    if (m != NULL && m->import != NULL) {
        m->import->heard = (int64_t)(clock_mono_us() / 1000);
        m->import->acked = clock_unix_ms() / 1000;
    }
}

bool
slotmig_hiding(const struct shard_env *env, const struct ks *ks)
{
    return env->slotmig != NULL && env->slotmig->import != NULL && ks == env->dbs[0];
}

bool
slotmig_hidden(const struct shard_env *env, unsigned slot)
{
    const struct sm_job *j = env->slotmig != NULL ? env->slotmig->import : NULL;
    const struct topo *t = env->topo;
    return j != NULL && sm_moving(j, slot) &&
           (t == NULL || env->topo_me < 0 || t->slots[slot] != (uint16_t)env->topo_me);
}

size_t
slotmig_hidden_keys(const struct shard_env *env)
{
    const struct sm_job *j = env->slotmig != NULL ? env->slotmig->import : NULL;
    size_t n = 0;
    for (size_t i = 0; j != NULL && i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            n += slotmig_hidden(env, slot) ? ks_slot_keys(env->dbs[0], slot) : 0;
        }
    }
    return n;
}

struct sm_volatile {
    const struct shard_env *env;
    size_t n;
};

static void
sm_volatile_visit(void *arg, struct ks_entry *e)
{
    struct sm_volatile *v = arg;
    struct rv_str k = ks_entry_key(e);
    if (ks_entry_expire(e) != KS_NO_EXPIRE && slotmig_hidden(v->env, slot_of(k.p, k.len))) {
        v->n++;
    }
}

size_t
slotmig_hidden_volatile(struct shard_env *env)
{
    struct sm_volatile v = { env, 0 };
    uint64_t cur = 0;
    do {
        cur = ks_scan(env->dbs[0], cur, 1024, sm_volatile_visit, &v);
    } while (cur != 0);
    return v.n;
}

/* ---- the target's side ---- */

/* The key's slot is not served by this node (false after an error reply). */
static bool
sm_not_mine(struct conn *c, struct rv_str key)
{
    const struct topo *t = c->env->topo;
    unsigned slot = slot_of(key.p, key.len);
    if (t == NULL || c->env->topo_me < 0) {
        reply_errf(c, "ERR This instance has cluster support disabled");
        return false;
    }
    if (t->slots[slot] == (uint16_t)c->env->topo_me) {
        reply_errf(c, "ERR Slot %u is served by this node", slot);
        return false;
    }
    return true;
}

/* RVMIGSLOTS DROP lo hi ...: every key of those slots that this node does
 * not serve goes, each logged as DEL, then the import ends (cancelled). */
static void
sm_target_drop(struct conn *c, int argc, struct rv_str *argv)
{
    static _Thread_local uint8_t slots[SLOT_COUNT / 8];
    memset(slots, 0, sizeof(slots));
    /* (a node forgotten meanwhile, topo_me < 0, serves no slot: it drops) */
    const struct topo *t = c->env->topo;
    int me = c->env->topo_me;
    effect_none(c); /* (its DELs and the END are logged as they happen) */
    if (t == NULL || argc < 4 || argc % 2 != 0) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        int64_t lo, hi;
        if (!cmd_arg_int(argv[i], &lo) || !cmd_arg_int(argv[i + 1], &hi) || lo < 0 ||
            hi >= SLOT_COUNT || lo > hi) {
            reply_errf(c, "ERR Invalid or out of range slot");
            return;
        }
        for (int64_t s = lo; s <= hi; s++) {
            if (me < 0 || t->slots[s] != (uint16_t)me) {
                slots[s / 8] |= (uint8_t)(1u << (s % 8));
            }
        }
    }
    size_t deleted = slotmig_delete_slots(c->shard, slots);
    if (c->env->slotmig != NULL && c->env->slotmig->import != NULL) {
        sm_import_end(c->env->slotmig, SM_CANCELLED,
                      "the source dropped the import (RVMIGSLOTS DROP)");
    }
    reply_int(c, (int64_t)deleted);
}

/* RVMIGSLOTS BEGIN name source lo hi [lo hi ...]: a job starts sending this
 * node those slots; their keys are hidden until they are this node's. */
static void
sm_import_begin(struct conn *c, int argc, struct rv_str *argv)
{
    const struct topo *t = c->env->topo;
    int me = c->env->topo_me;
    /* From the log (recovery, a replica's stream) the import opens as it was
     * (the topology may not be adopted yet): see sm_import_tick. */
    bool replay = (c->flags & CONN_REPLAY) != 0;
    if ((!replay && (t == NULL || me < 0)) || argc < 6 || argc % 2 != 0 ||
        argv[2].len != TOPO_ID_LEN || argv[3].len != TOPO_ID_LEN) {
        effect_none(c);
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    struct sm_job *j = rv_calloc(1, sizeof(*j));
    buf_init(&j->dirty);
    j->ranges = rv_calloc((size_t)argc, sizeof(*j->ranges));
    for (int i = 4; i + 1 < argc; i += 2) {
        int64_t lo, hi;
        if (!cmd_arg_int(argv[i], &lo) || !cmd_arg_int(argv[i + 1], &hi) || lo < 0 ||
            hi >= SLOT_COUNT || lo > hi) {
            effect_none(c);
            reply_errf(c, "ERR Invalid or out of range slot");
            sm_job_free(j);
            return;
        }
        for (int64_t s = lo; s <= hi; s++) {
            if (!replay && t->slots[s] == (uint16_t)me) {
                effect_none(c);
                reply_errf(c, "ERR Slot %" PRId64 " is served by this node", s);
                sm_job_free(j);
                return;
            }
            j->moving[s / 8] |= (uint8_t)(1u << (s % 8));
        }
        j->ranges[j->nranges++] = (struct topo_range){ (uint16_t)lo, (uint16_t)hi };
    }
    j->import = true;
    j->recovered = replay;
    memcpy(j->name, argv[2].p, TOPO_ID_LEN);
    memcpy(j->source, argv[3].p, TOPO_ID_LEN);
    memcpy(j->target, c->env->node->ids[c->env->id], TOPO_ID_LEN);
    j->created = j->updated = j->acked = clock_unix_ms() / 1000;
    j->heard = (int64_t)(clock_mono_us() / 1000);
    sm_set(j, SM_SNAPSHOT, "");
    struct slotmig *m = sm_get(c);
    sm_import_drop_now(m);
    if (!replay && m->import == NULL) {
        /* Keys this node still holds in those slots (orphans of a slot it gave
         * away, still being deleted, or left by a failed reshard) are older than
         * the source's: deleted (logged), and the dirty-slot walk leaves the
         * slots to the import, so it cannot delete the copies that come. (An
         * import this BEGIN replaces keeps its copies: told to commit, its
         * commit may still land.) */
        size_t old = 0;
        struct ks *ks = c->env->dbs[0];
        for (unsigned s = 0; ks != NULL && ks_counts_slots(ks) && s < SLOT_COUNT; s++) {
            old += (j->moving[s / 8] >> (s % 8) & 1) ? ks_slot_keys(ks, s) : 0;
        }
        if (old > 0) {
            size_t n = slotmig_delete_slots(c->shard, j->moving);
            log_notice("[shard %u] slot import %.40s: deleted %zu older key(s) of its slots first",
                       c->env->id, j->name, n);
        }
        topology_drop_forget(j->moving);
    }
    if (m->import != NULL) {
        char why[96];
        snprintf(why, sizeof(why), "replaced by the import %.40s", j->name);
        sm_import_end(m, SM_FAILED, why);
    }
    m->import = j;
    sm_arm_ev(m->imp_tick, SM_IMPORT_TICK_US);
    /* logged: after a restart, and on the replicas, the node knows which
     * slots an import opened (sm_import_tick) */
    effect_redo(c, "RVMIGSLOTS", argv[1]);
    for (int i = 2; i < argc; i++) {
        effect_arg(c, argv[i].p, argv[i].len);
    }
    reply_ok(c);
}

/* RVMIGSLOTS STATE name snapshot|streaming|committing: the source's progress (and
 * its heartbeat while held). */
static void
sm_import_state(struct conn *c, struct rv_str name, struct rv_str st)
{
    struct slotmig *m = c->env->slotmig;
    struct sm_job *j = m != NULL ? m->import : NULL;
    effect_none(c);
    if (j == NULL || name.len != TOPO_ID_LEN || memcmp(j->name, name.p, TOPO_ID_LEN) != 0) {
        reply_errf(c, "ERR No such slot import");
        return;
    }
    enum sm_state want = cmd_arg_is(st, "committing") ? SM_COMMITTING
                         : cmd_arg_is(st, "snapshot") ? SM_SNAPSHOT
                                                      : SM_STREAMING;
    if (j->state != want && want == SM_COMMITTING) {
        /* logged: an import told to commit keeps its copies after a restart
         * until the topology decides (the commit may still land) */
        effect_redo(c, "RVMIGSLOTS", (struct rv_str){ "STATE", 5 });
        effect_arg(c, name.p, name.len);
        effect_arg(c, st.p, st.len);
    }
    if (j->state != want) {
        sm_set(j, want, "");
    }
    sm_import_heard(c);
    reply_ok(c);
}

/* RVMIGSLOTS END name state message: the import ended (sm_import_end's
 * record, replayed from the WAL or a primary's stream); one of another
 * name, or none open, is left alone. */
static void
sm_import_close(struct conn *c, struct rv_str name, struct rv_str st, struct rv_str why)
{
    struct slotmig *m = c->env->slotmig;
    effect_none(c);
    if (m != NULL && m->import != NULL && name.len == TOPO_ID_LEN &&
        memcmp(m->import->name, name.p, TOPO_ID_LEN) == 0) {
        char text[sizeof(m->import->message)];
        snprintf(text, sizeof(text), "%.*s",
                 (int)(why.len < sizeof(text) ? why.len : sizeof(text) - 1), why.p);
        sm_import_end(m,
                      cmd_arg_is(st, "success")     ? SM_SUCCESS
                      : cmd_arg_is(st, "cancelled") ? SM_CANCELLED
                                                    : SM_FAILED,
                      text);
    }
    reply_ok(c);
}

void
slotmig_emit_state(struct shard *s, obj_emit_fn *fn, void *arg)
{
    const struct slotmig *m = shard_env(s)->slotmig;
    const struct sm_job *j = m != NULL ? m->import : NULL;
    if (j == NULL) {
        return;
    }
    size_t argc = 4 + 2 * j->nranges;
    struct rv_str *v = rv_calloc(argc, sizeof(*v));
    char(*num)[8] = rv_calloc(2 * j->nranges, sizeof(*num));
    v[0] = (struct rv_str){ "RVMIGSLOTS", 10 };
    v[1] = (struct rv_str){ "BEGIN", 5 };
    v[2] = (struct rv_str){ j->name, TOPO_ID_LEN };
    v[3] = (struct rv_str){ j->source, TOPO_ID_LEN };
    for (size_t i = 0; i < 2 * j->nranges; i++) {
        unsigned slot = i % 2 ? j->ranges[i / 2].hi : j->ranges[i / 2].lo;
        v[4 + i] = (struct rv_str){ num[i], (size_t)snprintf(num[i], sizeof(num[i]), "%u", slot) };
    }
    fn(arg, (int)argc, v);
    if (j->state == SM_COMMITTING) {
        struct rv_str st[4] = {
            { "RVMIGSLOTS", 10 }, { "STATE", 5 }, { j->name, TOPO_ID_LEN }, { "committing", 10 }
        };
        fn(arg, 4, st);
    }
    rv_free(num);
    rv_free(v);
}

CMD_HANDLER(rvmigslots)
{
    if (cmd_arg_is(argv[1], "restore") && argc == 5) {
        if (!sm_not_mine(c, argv[2])) {
            effect_none(c);
            return;
        }
        struct rv_str av[6] = { { "RESTORE", 7 }, argv[2],          argv[3],
                                argv[4],          { "REPLACE", 7 }, { "ABSTTL", 6 } };
        sm_import_heard(c);
        cmd_restore(c, 6, av);
        /* logged as the RESTORE ... REPLACE ABSTTL it ran (the WAL's replay
         * and the replicas apply it as such) */
        effect_redo(c, "RESTORE", argv[2]);
        for (int i = 2; i < 6; i++) {
            effect_arg(c, av[i].p, av[i].len);
        }
    } else if (cmd_arg_is(argv[1], "append") && argc >= 5) {
        if (!sm_not_mine(c, argv[2])) {
            effect_none(c);
            return;
        }
        sm_import_heard(c);
        smc_apply(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "reserve") && argc == 4) {
        if (!sm_not_mine(c, argv[2])) {
            effect_none(c);
            return;
        }
        sm_import_heard(c);
        smc_reserve(c, argv[2], argv[3]);
    } else if (cmd_arg_is(argv[1], "del") && argc == 3) {
        if (!sm_not_mine(c, argv[2])) {
            effect_none(c);
            return;
        }
        sm_import_heard(c);
        bool gone = ks_delete(c->env->ks, argv[2].p, argv[2].len);
        if (gone) {
            effect_redo(c, "DEL", argv[2]);
        } else {
            effect_none(c);
        }
        reply_int(c, gone);
    } else if (cmd_arg_is(argv[1], "drop")) {
        sm_target_drop(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "end") && argc == 5) {
        sm_import_close(c, argv[2], argv[3], argv[4]);
    } else if (cmd_arg_is(argv[1], "begin")) {
        sm_import_begin(c, argc, argv);
    } else if (cmd_arg_is(argv[1], "state") && argc == 4) {
        sm_import_state(c, argv[2], argv[3]);
    } else {
        effect_none(c);
        reply_err(c, RV_ERR_SYNTAX);
    }
}
