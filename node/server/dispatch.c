/* node/server/dispatch.c: the one dispatcher every command goes through:
 * lookup, arity, ACL, cluster routing, MULTI queueing, memory and write
 * gates, then the handler, its statistics, WATCH, wake-ups and the WAL. */
#include "node/server/dispatch.h"

#include "base/mem.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/commands/script.h"
#include "node/commands/slotmig.h"
#include "node/features/acl.h"
#include "node/features/block.h"
#include "node/features/evict.h"
#include "node/features/monitor.h"
#include "node/features/multi.h"
#include "node/features/pause.h"
#include "node/features/topology.h"
#include "node/features/tracking.h"
#include "node/keyspace/ks.h"
#include "node/obs/metrics.h"
#include "node/persist/persist.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

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

/* Cluster mode: this node's cluster is down (Redis's cluster_state:fail):
 * the host's write lease ran out (out of touch with the topology log's
 * quorum), or a slot is unassigned with cluster-require-full-coverage yes.
 * Coverage is counted once per adopted topology. */
static bool
cluster_down(struct conn *c)
{
    static _Thread_local uint64_t gen = UINT64_MAX;
    static _Thread_local bool uncovered;
    const struct topo *t = c->env->topo;
    if (gen != c->env->topo_gen) {
        gen = c->env->topo_gen;
        uncovered = false;
        for (unsigned s = 0; s < SLOT_COUNT && !uncovered; s++) {
            uncovered = t->slots[s] == TOPO_NONE;
        }
    }
    return (uncovered && c->env->cfg->cluster.require_full_coverage) ||
           c->env->now_ms >=
               atomic_load_explicit(&c->env->node->cluster_lease_ms, memory_order_relaxed);
}

/* A keyed command while the cluster is down: refused as Redis does, unless
 * cluster-allow-reads-when-down yes lets a read through. */
static bool
down_allows(struct conn *c, uint32_t flags)
{
    if (!c->env->cfg->cluster.allow_reads_when_down) {
        reply_errf(c, "CLUSTERDOWN The cluster is down");
        return false;
    }
    if (flags & CMD_WRITE) {
        reply_errf(c, "CLUSTERDOWN The cluster is down and only accepts read commands");
        return false;
    }
    return true;
}

/* The keys of a command (getkeys, or first/last/step), as cmd_route finds
 * them: fn for each until it returns false; false then. */
typedef bool key_fn(void *arg, const struct rv_str *key);

static bool
each_key(const struct cmd_spec *cmd, int argc, struct rv_str *argv, key_fn *fn, void *arg)
{
    if (cmd->getkeys) {
        int keys[256];
        int nk = cmd->getkeys(argc, argv, keys, 256);
        for (int i = 0; i < nk; i++) {
            if (!fn(arg, &argv[keys[i]])) {
                return false;
            }
        }
        return true;
    }
    int last = cmd->last < 0 ? argc + cmd->last : cmd->last;
    for (int i = cmd->first; i <= last && i < argc; i += cmd->step) {
        if (!fn(arg, &argv[i])) {
            return false;
        }
    }
    return true;
}

/* What is routed: one command, or (EXEC) every command of the transaction,
 * whose keys must then all be in one slot, as Redis does. */
struct keyset {
    struct conn *c;
    const struct cmd_spec *cmd;
    int argc;
    struct rv_str *argv;
    bool queued;
    uint32_t flags; /* the command's, or the union of the queued ones' */
};

static bool
each_keyset(const struct keyset *k, key_fn *fn, void *arg)
{
    if (!k->queued) {
        return each_key(k->cmd, k->argc, k->argv, fn, arg);
    }
    const struct cmd_spec *qc;
    int qa;
    struct rv_str *qv;
    for (size_t i = 0; multi_queued_cmd(k->c, i, &qc, &qa, &qv); i++) {
        if ((qc->first > 0 || qc->getkeys) && !each_key(qc, qa, qv, fn, arg)) {
            return false;
        }
    }
    return true;
}

static bool
same_slot(void *arg, const struct rv_str *key)
{
    int *slot = arg;
    int sl = (int)slot_of(key->p, key->len);
    if (*slot >= 0 && sl != *slot) {
        *slot = -2;
        return false;
    }
    *slot = sl;
    return true;
}

struct presence {
    struct conn *c;
    unsigned keys, missing;
};

static bool
count_missing(void *arg, const struct rv_str *key)
{
    struct presence *p = arg;
    struct ks_entry *e = ks_peek(p->c->env->ks, key->p, key->len);
    p->keys++;
    p->missing += !ks_entry_live(e, p->c->env->now_ms);
    return true;
}

/* A slot with a SETSLOT state (Redis's rules, its getNodeByQuery): the
 * source (MIGRATING) runs a command whose keys are all here, answers ASK
 * when none is (the target has them or will create them), TRYAGAIN when
 * only some are; the target (IMPORTING) runs a command after ASKING, unless
 * a multi-key one misses some keys (TRYAGAIN), or the source is not
 * MIGRATING any more and a key is missing (TRYAGAIN). true: run it here; false:
 * replied (*moved when the caller is to answer MOVED or READONLY's way). */
static bool
route_open(struct conn *c, const struct keyset *k, unsigned slot, bool mine, bool *moved)
{
    const struct topo *t = c->env->topo;
    const struct topo_mig *m = topo_slot_mig(t, slot);
    int me = c->env->topo_me;
    bool migrating = mine && m != NULL && m->mig_by == me && m->mig_to != TOPO_NONE;
    bool importing = !mine && m != NULL && m->imp_by == me;
    /* Another node still imports this slot from this owner, which is not
     * MIGRATING (any more): redis-cli --cluster fix sends SETSLOT STABLE to
     * the owner first when the target holds keys of the slot, then moves
     * them back. Keys missing here are still sent to the importer, so that
     * a write to a key already moved there does not make a second copy
     * here; a MIGRATE moving keys back (ASKING) runs here. */
    bool exported = mine && !migrating && m != NULL && m->imp_by != TOPO_NONE &&
                    m->imp_from == me && m->imp_by != me;
    *moved = false;
    if (!migrating && !importing && !exported) {
        *moved = !mine;
        return mine;
    }
    if (exported && ((c->flags & CONN_ASKING) || (k->flags & CMD_ASKING))) {
        return true;
    }
    if (migrating && topology_slot_checking(slot)) {
        reply_errf(c, "TRYAGAIN The slot's keys are being checked against the migration target's "
                      "after a failover");
        return false;
    }
    struct presence p = { c, 0, 0 };
    each_keyset(k, count_missing, &p);
    if (migrating || exported) {
        if (p.missing == 0) {
            return true;
        }
        if (p.missing < p.keys) {
            reply_errf(c, "TRYAGAIN Multiple keys request during rehashing of slot");
        } else {
            const struct topo_node *to = &t->nodes[migrating ? m->mig_to : m->imp_by];
            reply_errf(c, "ASK %u %s:%u", slot, to->ip, to->port);
        }
        return false;
    }
    if (!(c->flags & CONN_ASKING) && !(k->flags & CMD_ASKING)) {
        *moved = true;
        return false;
    }
    if (p.keys > 1 && p.missing > 0) {
        reply_errf(c, "TRYAGAIN Multiple keys request during rehashing of slot");
        return false;
    }
    if (p.missing > 0 && !(m->mig_to != TOPO_NONE && m->mig_by == m->imp_from) &&
        (k->queued || strncmp(k->cmd->name, "restore", 7) != 0)) {
        /* The owner is not MIGRATING (the exported case above): keys go
         * back to it, so a key missing here may have just been moved there
         * after the owner sent this client here. Creating it would make a
         * second copy; the client retries and the owner serves it. A
         * MIGRATE's RESTORE is let in: this view of the owner's state may
         * lag the owner's own. */
        reply_errf(c, "TRYAGAIN The slot's keys are moving back to its owner");
        return false;
    }
    return true;
}

/* Cluster mode: the topology says who serves the slot (k's keys are all in it). */
static bool
route_topo(struct conn *c, const struct keyset *k, unsigned slot)
{
    const struct topo *t = c->env->topo;
    const struct topo_node *owner = topo_slot_node(t, slot);
    if (rv_unlikely(owner != NULL && cluster_down(c) && !down_allows(c, k->flags))) {
        return false;
    }
    int me = c->env->topo_me;
    bool mine = owner != NULL && owner - t->nodes == me;
    if (rv_unlikely(mine && c->env->slotmig != NULL)) { /* CLUSTER MIGRATESLOTS */
        if (slotmig_check(c, slot, !(k->flags & CMD_READONLY)) == SLOTMIG_REFUSED) {
            return false;
        }
    }
    if (rv_likely(mine && t->nmigs == 0)) {
        return true;
    }
    if (!k->queued && strcmp(k->cmd->name, "migrate") == 0) {
        /* MIGRATE runs here whatever the slot's state: while it is open, as
         * in Redis, and also for keys held here of a slot another node
         * serves (left by a move that a failover or redis-cli --cluster fix
         * cut short: fix gives the slot to one owner and moves the others'
         * keys to it), where Redis answers MOVED. */
        return true;
    }
    if (t->nmigs != 0) { /* some slot is migrating: this one? */
        bool moved;
        if (route_open(c, k, slot, mine, &moved)) {
            return true;
        }
        if (!moved) {
            return false;
        }
    }
    if (owner != NULL && (c->flags & CONN_READONLY) && !(k->flags & CMD_WRITE) && me >= 0 &&
        t->nodes[me].primary == owner - t->nodes) {
        return true; /* READONLY: a replica serves reads of its primary's slots */
    }
    if (owner == NULL) {
        reply_errf(c, "CLUSTERDOWN Hash slot not served");
    } else {
        reply_errf(c, "MOVED %u %s:%u", slot, owner->ip, owner->port);
    }
    return false;
}

/* EXEC in cluster mode: the queued commands are routed again, together (the
 * slot may have moved or opened since they were queued); a redirect
 * discards the transaction, as in Redis. */
static bool
exec_route(struct conn *c)
{
    struct keyset k = { c, NULL, 0, NULL, true, 0 };
    const struct cmd_spec *qc;
    int qa;
    struct rv_str *qv;
    for (size_t i = 0; multi_queued_cmd(c, i, &qc, &qa, &qv); i++) {
        k.flags |= qc->flags;
    }
    int slot = -1;
    each_keyset(&k, same_slot, &slot);
    if (slot == -2) {
        reply_err(c, RV_ERR_CROSSSLOT);
    } else if (slot < 0 || route_topo(c, &k, (unsigned)slot)) {
        return true;
    }
    multi_release(c);
    return false;
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
    if (slot < 0) {
        return true;
    }
    if (c->env->topo != NULL) {
        struct keyset k = { c, cmd, argc, argv, false, cmd->flags };
        return route_topo(c, &k, (unsigned)slot);
    }
    if (shard_owns_slot(c->shard, (unsigned)slot)) {
        return true;
    }
    struct node *n = c->env->node;
    const struct cfg *cfg = c->env->cfg;
    unsigned owner = node_slot_shard(n, (unsigned)slot);
    reply_errf(c, "MOVED %d %s:%d", slot,
               cfg->cluster.announce_ip[0] ? cfg->cluster.announce_ip : c->lip,
               node_shard_port(n, owner));
    return false;
}

void
dispatch_count_errors_slow(struct conn *c)
{
    c->env->stats.total_error_replies += c->nerr;
    metrics_error(c->shard, c->errcode, c->nerr);
    c->nerr = 0;
}

/* A command refused before running: counted, and inside MULTI the
 * transaction is flagged so EXEC answers EXECABORT (as Redis). */
static void
cmd_reject(struct conn *c, struct cmd_stat *st)
{
    dispatch_count_errors(c);
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
        st->hist[metrics_bucket(each, atomic_load_explicit(&metrics_hot.us_mul,
                                                           memory_order_relaxed))] += n;
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
run_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
         struct cmd_stat *st)
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
dispatch_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct shard *s = c->shard;
    struct cmd_stat *st = &shard_env(s)->cmdstats[cmd->id];
    /* The command runs in c's database; a nested call (EXEC, a script,
     * RESTORE's replay) returns to its caller's afterwards. */
    unsigned outer_db = shard_env(s)->db;
    if (rv_unlikely(c->db != outer_db)) {
        shard_use_db(shard_env(s), c->db);
    }
    /* Unread output before the handler: appending may compact the buffer
     * (after a partial write), so positions are taken relative to off. */
    size_t before = c->wbuf.len - c->wbuf.off;

    if (rv_unlikely(c->flags & CONN_REPLY_SKIP_NEXT)) {
        c->flags = (c->flags & ~CONN_REPLY_SKIP_NEXT) | CONN_REPLY_SKIP;
    }
    c->last_cmd = cmd;
    c->flags |= cmd->flags & (CMD_WRITE | CMD_READONLY) ? CONN_DATA : 0u;
    c->effect = EFFECT_ARGS;  /* unless the handler reports otherwise (effect.h) */
    dispatch_count_errors(c); /* (errors other commands wrote to c are not this one's) */
    const struct persist_hot *ph = persist_hot(c->persist);
    /* a write whose record could not be written must not run (it counts as failed below) */
    bool refused = (cmd->flags & CMD_WRITE) && ph->log && !(c->flags & CONN_REPLAY) &&
                   rv_unlikely(persist_refuse_size(c, argc, argv));
    if (rv_unlikely(ph->cow) && (cmd->flags & CMD_WRITE) && !refused) {
        persist_before_write(c, cmd, argc, argv); /* checkpoint copy-on-write */
    }
    /* MONITOR shows a command once it ran, a script before (its own commands follow) */
    bool show = rv_unlikely(monitor_on(c->env)) && !(cmd->flags & CMD_ADMIN) &&
                !(c->flags & (CONN_REPLAY | CONN_BLOCK_RETRY));
    if (rv_unlikely(show) && (cmd->flags & CMD_SKIP_MONITOR)) {
        monitor_feed(c, cmd, argc, argv);
    }
    /* CLIENT PAUSE: a key past its deadline reads as missing but stays (as Redis) */
    struct ks *hold = rv_unlikely(pause_set(c->env)) && pause_active(c->env) ? c->env->ks : NULL;
    if (rv_unlikely(hold != NULL)) {
        ks_set_hold_expired(hold, true);
    }
    /* CLIENT NO-TOUCH: its reads leave access clocks alone; TOUCH still touches */
    struct ks *no_touch = rv_unlikely(c->flags & CONN_NO_TOUCH) ? c->env->ks : NULL;
    if (rv_unlikely(no_touch != NULL)) {
        ks_set_no_touch(no_touch, strcmp(cmd->name, "touch") != 0); /* (also inside EXEC) */
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
            cmd_batch_mark = t1; /* the next command of the batch starts here */
        }
        st->cycles += cycles;
        st->calls++;
        hist_add(st, cycles, 1);
        if (rv_unlikely(cycles >=
                        atomic_load_explicit(&metrics_hot.slow_cycles, memory_order_relaxed))) {
            metrics_slow(c, cmd, argc, argv, cycles);
        }
    }
    if (rv_unlikely(no_touch != NULL)) {
        ks_set_no_touch(no_touch, false);
    }
    if (rv_unlikely(hold != NULL)) {
        ks_set_hold_expired(hold, false);
    }
    shard_env(s)->stats.commands++;
    if (rv_unlikely(show) && !(cmd->flags & CMD_SKIP_MONITOR)) {
        monitor_feed(c, cmd, argc, argv);
    }
    size_t mark = c->wbuf.off + before; /* where this command's reply starts */
    c->failed = c->nerr != 0;
    bool wrote = false;
    if (rv_unlikely(c->failed)) {
        /* (a command's own; those of the commands EXEC ran were counted by their calls) */
        st->failed++;
        dispatch_count_errors_slow(c);
    } else if ((cmd->flags & CMD_WRITE) && (c->effect == EFFECT_ARGS || c->effect == EFFECT_REDO)) {
        /* (not when it changed nothing, or went on waiting: no record, no key touched) */
        wrote = true;
        if (rv_unlikely(shard_env(s)->watched != NULL)) {
            int margc = argc;
            struct rv_str *margv = argv;
            const struct cmd_spec *mod = cmd_effective(c, cmd, &margc, &margv);
            multi_touch(s, mod, margc, margv);
        }
        if (rv_unlikely(shard_env(s)->blocking != NULL)) {
            block_signal(s, cmd, argc, argv);
        }
        if (ph->log && !(c->flags & CONN_REPLAY)) { /* (a replica logs the frames it applies) */
            persist_log(c, cmd, argc, argv);
        }
    }
    /* CLIENT TRACKING: remember a read's keys, invalidate a write's */
    if (rv_unlikely(shard_env(s)->tracking != NULL) && !c->failed) {
        int targc = argc;
        struct rv_str *targv = argv;
        const struct cmd_spec *tcmd = wrote ? cmd_effective(c, cmd, &targc, &targv) : cmd;
        tracking_after_call(c, tcmd, targc, targv, wrote);
    }
    if (rv_unlikely(c->flags & (CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT))) {
        c->wbuf.len = mark;
        c->flags &= ~CONN_REPLY_SKIP;
    }
    if (rv_unlikely(shard_env(s)->db != outer_db)) {
        shard_use_db(shard_env(s), outer_db);
    }
}

static void
dispatch_one(struct conn *c, int argc, struct rv_str *argv)
{
    struct shard *s = c->shard;
    const struct cmd_spec *cmd;

    if (rv_likely(!cmd_renamed)) {
        cmd = cmd_lookup(argv[0].p, argv[0].len);
    } else {
        cmd = cmd_lookup_client(argv[0].p, argv[0].len);
        if (cmd) {
            argv[0] = (struct rv_str){ cmd->name,
                                       strlen(cmd->name) }; /* WAL and MULTI see the real name */
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
            cmd_reject(c, NULL); /* (no command's call: Redis counts no container's rejects) */
            return;
        }
        cmd = sub;
    }
    struct cmd_stat *st = &shard_env(s)->cmdstats[cmd->id];
    if (rv_unlikely((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity)) {
        char full[96];
        cmd_fullname(cmd, full, sizeof(full));
        reply_err_arity(c, full);
        cmd_reject(c, st);
        return;
    }
    /* A script past busy-reply-threshold: only SCRIPT KILL and the like (its hook reads us). */
    if (rv_unlikely(shard_env(s)->scripts != NULL) && script_busy(s) &&
        !(cmd->flags & CMD_ALLOW_BUSY) && !script_busy_allows(c, cmd, argc, argv)) {
        reply_errf(c,
                   "BUSY Redis is busy running a script. You can only call %s KILL or "
                   "SHUTDOWN NOSAVE.",
                   script_busy_fcall(s) ? "FUNCTION" : "SCRIPT");
        cmd_reject(c, st);
        return;
    }
    /* Authentication and ACLs: one predicted branch for unrestricted users. */
    if (rv_unlikely(c->acl_slow) && !acl_allow(c, cmd, argc, argv)) {
        cmd_reject(c, st);
        return;
    }
    /* Loading the data at start-up: only what carries the loading flag runs. */
    if (rv_unlikely(persist_hot(c->persist)->loading) && !(cmd->flags & CMD_LOADING)) {
        reply_errf(c, "LOADING Redis is loading the dataset in memory");
        cmd_reject(c, st);
        return;
    }
    if ((shard_multi(s) || shard_env(s)->topo != NULL) && (cmd->first > 0 || cmd->getkeys) &&
        !cmd_route(c, cmd, argc, argv)) {
        cmd_reject(c, st);
        return;
    }
    if (rv_unlikely(c->flags & CONN_MULTI) && shard_env(s)->topo != NULL &&
        strcmp(cmd->name, "exec") == 0 && !exec_route(c)) {
        dispatch_count_errors(c);
        st->rejected++;
        return;
    }
    if (rv_unlikely(c->flags & CONN_PUBSUB) && c->proto == 2 && !(cmd->flags & CMD_SUBOK)) {
        char full[96];
        cmd_fullname(cmd, full, sizeof(full));
        reply_errf(c,
                   "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                   "QUIT / RESET are allowed in this context",
                   full);
        cmd_reject(c, st);
        return;
    }
    /* Over a memory budget: refuse writes that may grow memory, and (as Redis)
     * anything that would be queued inside MULTI. */
    if (rv_unlikely((cmd->flags & CMD_DENYOOM) || (c->flags & CONN_MULTI)) &&
        evict_hot(shard_env(s)->evict)->armed &&
        ((cmd->flags & CMD_DENYOOM) || !(cmd->flags & CMD_NOQUEUE)) && !evict_admit(s)) {
        reply_err(c, RV_ERR_OOM);
        cmd_reject(c, st);
        return;
    }
    if (rv_unlikely(shard_env(s)->topo != NULL) && (cmd->flags & CMD_WRITE) &&
        !(c->flags & CONN_REPLAY) &&
        (shard_env(s)->now_ms >=
             atomic_load_explicit(&shard_env(s)->node->cluster_lease_ms, memory_order_relaxed) ||
         shard_env(s)->topo_gen <
             atomic_load_explicit(&shard_env(s)->node->cluster_lease_topo, memory_order_acquire))) {
        reply_errf(c, "CLUSTERDOWN The cluster is down");
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
        reply_errf(
            c, "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.");
        cmd_reject(c, st);
        return;
    }
    /* CLIENT PAUSE: held, to be parsed again when the pause ends */
    if (rv_unlikely(pause_set(shard_env(s))) && pause_hold(c, cmd)) {
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
    dispatch_call(c, cmd, argc, argv);
}

void
dispatch(struct conn *c, int argc, struct rv_str *argv)
{
    struct conn *outer = tracking_running; /* (a script's busy poll runs other clients' requests) */
    tracking_running = c;
    dispatch_one(c, argc, argv);
    tracking_running = outer;
    if (rv_unlikely(c->trk != NULL)) {
        tracking_after_top(c); /* (invalidations held during EXEC; CLIENT CACHING's scope) */
    }
    /* ASKING is one-shot (its own command and a transaction's excepted) */
    if (rv_unlikely(c->flags & CONN_ASKING)) {
        if (c->flags & CONN_ASKING_NEW) {
            c->flags &= ~CONN_ASKING_NEW;
        } else if (!(c->flags & CONN_MULTI)) {
            c->flags &= ~CONN_ASKING;
        }
    }
    /* Keys written by this command (or whole transaction) wake their waiters now. */
    if (rv_unlikely(block_pending(c->shard))) {
        block_serve(c->shard);
    }
}
