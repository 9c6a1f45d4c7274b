/* node/commands/cmd_migslots.c: atomic slot migration (Valkey 9's syntax;
 * docs/cluster.md, "Atomic slot migration").
 *
 *   CLUSTER MIGRATESLOTS SLOTSRANGE start end [start end ...] NODE <id>
 *   CLUSTER GETSLOTMIGRATIONS
 *   CLUSTER CANCELSLOTMIGRATIONS
 *   (RVMIGSLOTS ...: what the source sends the target, slotmig_import.c)
 *
 * The source shard drives one job at a time, from a timer on its own loop:
 *   1. connect to the target (AUTH with masteruser/masterauth when set);
 *   2. walk the keyspace with ks_scan's cursor and send every live key of the
 *      moving slots as RVMIGSLOTS RESTORE (DUMP's payload, absolute expiry);
 *      a big key instead goes in chunks, one per timer run, before the walk
 *      goes on (slotmig_chunk.c: a RESTORE of its first elements, then
 *      APPENDs);
 *   3. meanwhile writes to those slots go on, and the keys of every write
 *      the shard logs (persist's tap, sm_tap: a command's effect, a script's
 *      or EXEC's writes, a served blocking command, an expiry's or
 *      eviction's DEL) are remembered when they are in a moving slot; each
 *      round re-sends the remembered keys (or DEL for those gone) until few
 *      are left. A FLUSHALL or FLUSHDB makes the target drop the slots' keys
 *      and the copy start again (sm_restart);
 *   4. then writes to the moving slots only get -TRYAGAIN (reads go on), the
 *      last remembered keys are sent, and once the target acknowledged every
 *      record (the replies come in order: the last one is the fence) the
 *      ownership change is proposed to the topology log as one entry (a
 *      batch: a SETSLOT NODE per slot, then BUMPEPOCH of the target);
 *   5. once committed and adopted by this shard, the slots answer MOVED and
 *      the old keys are deleted by topology_reconcile's dirty-slot rule.
 * An error, a timeout or CANCELSLOTMIGRATIONS before step 4's proposal: the
 * target is told to drop the keys it holds of those slots (RVMIGSLOTS DROP),
 * and the source goes on owning and serving them. Once the proposal is sent
 * the job cannot be cancelled: writes stay refused until its outcome is known
 * (a proposal whose outcome is unknown is sent again: SETSLOT NODE is
 * idempotent; one the topology refused rolls back as above, sm_committed).
 *
 * The target's side (RVMIGSLOTS, the import whose slots it hides, what
 * becomes of its copies) is slotmig_import.c; the two share slotmig_int.h.
 *
 * The source never waits for the target but to connect (dial and AUTH,
 * bounded by SM_IO_MS) and to deliver the abort's DROP (bounded as well):
 * the records go through slotmig_link.c's window, one batch of the walk, of
 * a round or one chunk per timer run, and their replies are read when they
 * arrive; a target that answers nothing for SM_IO_MS ends the job. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rand.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"
#include "node/commands/slotmig_chunk.h"
#include "node/commands/slotmig_int.h"
#include "node/commands/slotmig_link.h"
#include "node/core/config.h"
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

#define SM_BATCH_KEYS 256         /* keys per batch */
#define SM_BATCH_BYTES (1u << 20) /* request bytes per batch */
#define SM_PAUSE_BELOW 64         /* remembered keys left: pause writes and finish */
#define SM_MAX_ROUNDS 50          /* rounds of remembered keys before pausing anyway */
/* A chunk the target refused with CLUSTERDOWN (its write lease lapsed, as on
 * a starved host) is sent again every SM_DOWN_RETRY_MS, for SM_DOWN_MS. */
#define SM_DOWN_RETRY_MS 20
#define SM_DOWN_MS (2 * SM_IO_MS)

const char *const sm_state_name[] = {
    [SM_CONNECTING] = "connecting", [SM_SNAPSHOT] = "snapshot", [SM_STREAMING] = "streaming",
    [SM_COMMITTING] = "committing", [SM_SUCCESS] = "success",   [SM_FAILED] = "failed",
    [SM_CANCELLED] = "cancelled",
};

void
sm_job_free(struct sm_job *j)
{
    if (j == NULL) {
        return;
    }
    if (j->linked) {
        sml_close(&j->link);
    }
    buf_deinit(&j->pending);
    buf_deinit(&j->dirty);
    smc_deinit(&j->chunk);
    buf_deinit(&j->again);
    rv_free(j->ranges);
    rv_free(j);
}

void
sm_set(struct sm_job *j, enum sm_state st, const char *msg)
{
    j->state = st;
    j->updated = clock_unix_ms() / 1000;
    snprintf(j->message, sizeof(j->message), "%s", msg);
}

void
sm_arm_ev(struct event *ev, long usec)
{
    struct timeval tv = { 0, usec };
    evtimer_add(ev, &tv);
}

static void
sm_arm(struct slotmig *m, long usec)
{
    sm_arm_ev(m->tick, usec);
}

void
sm_log_add(struct slotmig *m, struct sm_job *j)
{
    if (m->nlog == SM_LOG) {
        sm_job_free(m->log[0]);
        memmove(m->log, m->log + 1, (SM_LOG - 1) * sizeof(m->log[0]));
        m->nlog--;
    }
    m->log[m->nlog++] = j;
    log_notice("cluster: slot migration %.8s %s %.8s: %s%s%s", j->name, j->import ? "from" : "to",
               j->import ? j->source : j->target, sm_state_name[j->state],
               j->message[0] ? ": " : "", j->message);
}

/* The job is over: kept in the log, its pause lifted. */
static void
sm_finish(struct slotmig *m)
{
    struct sm_job *j = m->active;
    m->active = NULL;
    persist_set_tap(m->s, NULL, NULL);
    if (j->linked) {
        sml_close(&j->link);
        j->linked = false;
    }
    buf_deinit(&j->dirty);
    buf_init(&j->dirty);
    j->ndirty = 0;
    buf_deinit(&j->pending);
    j->pending_at = 0;
    smc_deinit(&j->chunk);
    smc_init(&j->chunk);
    buf_deinit(&j->again);
    j->nagain = 0;
    j->chunk_wait = 0;
    sm_log_add(m, j);
}

/* ---- the link to the target ---- */

/* A reply from the target, in the order of the records (slotmig_link.h): an
 * error ends the job, but for CLUSTERDOWN on a chunk, which is sent again.
 * It only notes the outcome; the job's next step acts on it. */
static void
sm_on_reply(void *arg, const char *line)
{
    struct sm_job *j = arg;
    j->acked = clock_unix_ms() / 1000;
    if (j->dropping) {
        return;
    }
    bool chunk = j->chunk_wait > j->link.unacked; /* (nothing is queued after a chunk) */
    int64_t now = (int64_t)(clock_mono_us() / 1000);
    if (line[0] == '-' && j->fail[0] == '\0') {
        if (chunk && strncmp(line + 1, "CLUSTERDOWN", 11) == 0 && now < j->again_until) {
            j->down = true;
        } else {
            snprintf(j->fail, sizeof(j->fail), "the target replied: %.200s", line + 1);
        }
    }
    if (chunk && j->link.unacked == 0) {
        j->chunk_wait = 0;
        if (!j->down) {
            j->nagain = 0;
        } else {
            /* Refused, not run (or run, for a first chunk's RESTORE, which
             * runs again the same): the same records a little later. */
            j->again_at = now + SM_DOWN_RETRY_MS;
        }
    }
    if (j->waiting || j->fail[0] != '\0') {
        j->waiting = false;
        sm_arm(j->m, 0);
    }
}

/* Dial and AUTH: one short blocking step, bounded by timeout (ms). */
static bool
sm_connect(struct slotmig *m, struct sm_job *j, int64_t timeout, char *err, size_t errsz)
{
    struct shard_env *env = shard_env(m->s);
    j->linked = sml_open(&j->link, shard_base(m->s), j->ip, j->port, env->cfg->tls.cluster,
                         env->cfg->repl.masteruser, env->cfg->repl.masterauth, timeout, SM_IO_MS,
                         sm_on_reply, j, err, errsz);
    return j->linked;
}

/* Queue req (n records) to the target; their replies come to sm_on_reply.
 * False with the reason in err when the link failed. */
static bool
sm_exchange(struct sm_job *j, const struct buf *req, size_t n, char *err, size_t errsz)
{
    if (sml_queue(&j->link, req->data, req->len, n)) {
        return true;
    }
    const char *why = sml_failed(&j->link);
    snprintf(err, errsz, "%s", why != NULL ? why : "no link to the target");
    return false;
}

/* RVMIGSLOTS BEGIN name source lo hi ... (st NULL) or STATE name st: the
 * target's view of the job (its IMPORT entry, its hidden slots). */
static bool
sm_tell(struct sm_job *j, const char *st, char *err, size_t errsz)
{
    struct buf req;
    buf_init(&req);
    if (st == NULL) {
        resp_w_array(&req, 4 + 2 * j->nranges);
        resp_w_bulk_cstr(&req, "RVMIGSLOTS");
        resp_w_bulk_cstr(&req, "BEGIN");
        resp_w_bulk_cstr(&req, j->name);
        resp_w_bulk_cstr(&req, j->source);
        for (size_t i = 0; i < j->nranges; i++) {
            resp_w_bulk_int(&req, j->ranges[i].lo);
            resp_w_bulk_int(&req, j->ranges[i].hi);
        }
    } else {
        resp_w_array(&req, 4);
        resp_w_bulk_cstr(&req, "RVMIGSLOTS");
        resp_w_bulk_cstr(&req, "STATE");
        resp_w_bulk_cstr(&req, j->name);
        resp_w_bulk_cstr(&req, st);
    }
    bool ok = sm_exchange(j, &req, 1, err, errsz);
    buf_deinit(&req);
    return ok;
}

/* One key as a record: RESTORE when live, DEL when gone. */
static void
sm_record(struct shard_env *env, struct buf *req, const char *key, size_t klen)
{
    struct ks_entry *e = ks_peek(env->dbs[0], key, klen);
    if (!ks_entry_live(e, env->now_ms)) {
        resp_w_array(req, 3);
        resp_w_bulk_cstr(req, "RVMIGSLOTS");
        resp_w_bulk_cstr(req, "DEL");
        resp_w_bulk(req, key, klen);
        return;
    }
    int64_t exp = ks_entry_expire(e);
    struct buf payload;
    buf_init(&payload);
    dump_payload(e, &payload);
    resp_w_array(req, 5);
    resp_w_bulk_cstr(req, "RVMIGSLOTS");
    resp_w_bulk_cstr(req, "RESTORE");
    resp_w_bulk(req, key, klen);
    resp_w_bulk_int(req, exp == KS_NO_EXPIRE ? 0 : exp);
    resp_w_bulk(req, payload.data, payload.len);
    buf_deinit(&payload);
}

/* ---- the walk ---- */

struct sm_walk {
    struct sm_job *j;
    struct buf keys; /* each as its length then its bytes */
    size_t n;
};

static void
sm_walk_visit(void *arg, struct ks_entry *e)
{
    struct sm_walk *w = arg;
    struct rv_str k = ks_entry_key(e);
    if (sm_moving(w->j, slot_of(k.p, k.len))) {
        buf_append(&w->keys, &k.len, sizeof(k.len));
        buf_append(&w->keys, k.p, k.len);
        w->n++;
    }
}

/* Records for the next keys of j->pending, one batch (SM_BATCH_KEYS keys or
 * SM_BATCH_BYTES bytes) queued to the target; false with the reason in err. */
static bool
sm_send_keys(struct shard_env *env, struct sm_job *j, char *err, size_t errsz)
{
    struct buf req;
    buf_init(&req);
    size_t n = 0;
    const struct buf *list = &j->pending;
    while (j->pending_at < list->len && n < SM_BATCH_KEYS && req.len < SM_BATCH_BYTES) {
        size_t len;
        memcpy(&len, list->data + j->pending_at, sizeof(len));
        const char *key = list->data + j->pending_at + sizeof(len);
        j->pending_at += sizeof(len) + len;
        if (!smc_defer(&j->chunk, env, key, len)) { /* (a big key goes in chunks, later) */
            sm_record(env, &req, key, len);
            n++;
        }
    }
    if (j->pending_at >= list->len) {
        buf_reset(&j->pending);
        j->pending_at = 0;
    }
    bool ok = n == 0 || sm_exchange(j, &req, n, err, errsz);
    buf_deinit(&req);
    return ok;
}

/* One chunk of the big key at hand (slotmig_chunk.h), or a heartbeat while
 * DEBUG SLOTMIG-HOLD 2 holds it after its first chunk; false with the reason
 * in err. Nothing is queued after a chunk until its replies came
 * (sm_on_reply): a chunk refused with CLUSTERDOWN goes again, in order. */
static bool
sm_send_chunk(struct slotmig *m, struct sm_job *j, char *err, size_t errsz)
{
    bool held = m->hold_chunks && smc_started(&j->chunk) && j->nagain == 0, ok = true;
    int64_t now = (int64_t)(clock_mono_us() / 1000);
    if (held) {
        ok = !sml_idle(&j->link) || sm_tell(j, sm_state_name[j->state], err, errsz);
    } else if (j->nagain == 0 || now >= j->again_at) {
        if (j->nagain == 0) {
            buf_reset(&j->again);
            j->nagain = smc_next(&j->chunk, shard_env(m->s), &j->again);
            j->again_until = now + SM_DOWN_MS;
        }
        if (j->nagain > 0) {
            j->down = false;
            j->chunk_wait = j->nagain;
            ok = sm_exchange(j, &j->again, j->nagain, err, errsz);
        }
    }
    smc_describe(&j->chunk, j->message, sizeof(j->message));
    if (held || j->down) {
        size_t at = strlen(j->message);
        snprintf(j->message + at, sizeof(j->message) - at, "%s",
                 held ? " (held)" : " (the target answers CLUSTERDOWN: sending it again)");
    }
    return ok;
}

/* ---- rollback and commit ---- */

/* RVMIGSLOTS DROP lo hi ...: the target deletes its keys of the job's slots. */
static void
sm_drop_record(const struct sm_job *j, struct buf *req)
{
    resp_w_array(req, 2 + 2 * j->nranges);
    resp_w_bulk_cstr(req, "RVMIGSLOTS");
    resp_w_bulk_cstr(req, "DROP");
    for (size_t i = 0; i < j->nranges; i++) {
        resp_w_bulk_int(req, j->ranges[i].lo);
        resp_w_bulk_int(req, j->ranges[i].hi);
    }
}

/* Tell the target to drop what it holds of the moving slots: behind the
 * records in flight on the job's link while it works (so that none of them
 * lands after the DROP), else on a new connection. The shard waits for the
 * reply, at most SM_IO_MS (a target that cannot be reached keeps its copies,
 * docs/cluster.md). */
static void
sm_drop_on_target(struct slotmig *m, struct sm_job *j)
{
    char err[256] = "";
    struct buf req;
    buf_init(&req);
    sm_drop_record(j, &req);
    j->dropping = true;
    bool done = j->linked && sml_failed(&j->link) == NULL &&
                sm_exchange(j, &req, 1, err, sizeof(err)) && sml_drain(&j->link, SM_IO_MS);
    if (!done) {
        if (j->linked) {
            sml_close(&j->link);
            j->linked = false;
        }
        if (!sm_connect(m, j, 1000, err, sizeof(err))) {
            log_warn("cluster: slot migration %.8s: cannot tell the target to drop its copies: %s",
                     j->name, err);
        } else if (!sm_exchange(j, &req, 1, err, sizeof(err)) || !sml_drain(&j->link, SM_IO_MS)) {
            const char *why = sml_failed(&j->link);
            log_warn("cluster: slot migration %.8s: the target did not drop its copies: %s",
                     j->name, why != NULL ? why : err);
        }
    }
    buf_deinit(&req);
}

static void
sm_abort(struct slotmig *m, enum sm_state st, const char *why)
{
    struct sm_job *j = m->active;
    sm_drop_on_target(m, j);
    sm_set(j, st, why);
    sm_finish(m);
}

static void sm_committed(struct shard *s, struct shard_msg *msg);

static void
sm_propose(struct slotmig *m)
{
    /* one entry, all or nothing: a SETSLOT NODE per slot, then the target's
     * epoch bump (one commit, one topology for the shards to adopt) */
    struct sm_job *j = m->active;
    struct buf batch, one;
    buf_init(&batch);
    buf_init(&one);
    topo_batch_start(&batch);
    for (size_t i = 0; i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            buf_reset(&one);
            topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, slot, j->source, j->target);
            topo_batch_add(&batch, 0, one.data, one.len);
        }
    }
    buf_reset(&one);
    topo_enc_bump_epoch(&one, j->target);
    topo_batch_add(&batch, 0, one.data, one.len);
    j->tag = ++m->next_tag;
    j->proposing = true;
    const struct buf *ents[1] = { &batch };
    topology_propose_job(m->s, ents, 1, sm_committed, j->tag);
    buf_deinit(&one);
    buf_deinit(&batch);
}

/* This shard's adopted topology gives every moving slot to the target. */
static bool
sm_adopted(struct shard_env *env, const struct sm_job *j)
{
    const struct topo *t = env->topo;
    int k = t != NULL ? topo_find(t, j->target, TOPO_ID_LEN) : -1;
    for (size_t i = 0; k >= 0 && i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            if (t->slots[slot] != (uint16_t)k) {
                return false;
            }
        }
    }
    return k >= 0;
}

/* This shard's node still owns some moving slot (its pause still matters). */
static bool
sm_owns_any(struct shard_env *env, const struct sm_job *j)
{
    const struct topo *t = env->topo;
    int me = env->topo_me;
    for (size_t i = 0; t != NULL && me >= 0 && i < j->nranges; i++) {
        for (unsigned slot = j->ranges[i].lo; slot <= j->ranges[i].hi; slot++) {
            if (t->slots[slot] == (uint16_t)me) {
                return true;
            }
        }
    }
    return false;
}

static void
sm_committed(struct shard *s, struct shard_msg *msg)
{
    char text[512];
    uint64_t tag;
    enum topology_outcome out = topology_job_answer(msg, &tag, text, sizeof(text));
    struct slotmig *m = shard_env(s)->slotmig;
    struct sm_job *j = m != NULL ? m->active : NULL;
    if (j == NULL || j->tag != tag || j->state != SM_COMMITTING) {
        return;
    }
    j->proposing = false;
    if (out == TOPOLOGY_COMMITTED) {
        shard_adopt_cfg(s);
        sm_set(j, SM_COMMITTING, "committed; waiting for this node to adopt it");
    } else if (out == TOPOLOGY_REFUSED) {
        /* The entry committed and moved nothing (the source or the target
         * was forgotten or is no primary). An earlier proposal of it that
         * may have committed sits earlier in the log (Raft commits in
         * order), and this host applied the refused one: the topology adopted
         * now says whether the slots went to the target. If not, they never
         * will by this job: roll back (the target drops its copies). */
        shard_adopt_cfg(s);
        if (sm_adopted(shard_env(s), j)) {
            sm_set(j, SM_SUCCESS, "");
            sm_finish(m);
            return;
        }
        log_warn("cluster: slot migration %.8s: the ownership change was refused (%s); rolling "
                 "back",
                 j->name, text);
        char why[256];
        snprintf(why, sizeof(why), "the ownership change was refused: %.200s", text);
        j->paused = false;
        sm_abort(m, SM_FAILED, why);
        return;
    } else {
        /* Committed or not is unknown (or some entries were): writes stay
         * refused and the same idempotent change is proposed again. */
        log_warn("cluster: slot migration %.8s: the ownership change failed (%s); proposing it "
                 "again",
                 j->name, text);
        snprintf(j->message, sizeof(j->message), "proposing again after: %.200s", text);
        j->retry_at = (int64_t)(clock_mono_us() / 1000) + 1000;
    }
    sm_arm(m, 1000);
}

/* ---- the job's steps, one per timer run ---- */

/* FLUSHALL or FLUSHDB ran here during the job: the target drops what it holds
 * of the slots (which ends its import; a new BEGIN opens another) and the
 * walk starts again, which covers the keys remembered so far. The DROP goes
 * behind the records in flight (no chunk is: the step waits for its reply). */
static bool
sm_restart(struct sm_job *j, char *err, size_t errsz)
{
    j->flushed = false;
    buf_reset(&j->dirty);
    j->ndirty = 0;
    buf_reset(&j->pending);
    j->pending_at = 0;
    smc_deinit(&j->chunk); /* the walk queues the big keys again */
    smc_init(&j->chunk);
    j->nagain = 0;
    j->down = false;
    j->told = false;
    j->cursor = 0;
    j->rounds = 0;
    if (j->state == SM_CONNECTING) {
        return true; /* nothing sent yet */
    }
    struct buf req;
    buf_init(&req);
    sm_drop_record(j, &req);
    bool ok = sm_exchange(j, &req, 1, err, errsz) && sm_tell(j, NULL, err, errsz);
    buf_deinit(&req);
    if (ok) {
        sm_set(j, SM_SNAPSHOT, "copying again: the slots were flushed on this node");
    }
    return ok;
}

/* SM_STREAMING: the remembered keys, a round at a time and a batch per step;
 * once writes are paused and every key went, STATE committing (the fence),
 * and once the target answered every record, the proposal. */
static bool
sm_stream(struct slotmig *m, struct sm_job *j, char *err, size_t errsz)
{
    if (j->pending.len == 0) {
        if (j->paused && j->ndirty == 0) {
            if (!j->told) {
                j->told = true;
                return sm_tell(j, "committing", err, errsz);
            }
            if (sml_idle(&j->link)) {
                /* every record was acknowledged, in order: the target holds all */
                sm_set(j, SM_COMMITTING, "");
                j->retry_at = 0;
                sm_propose(m);
            }
            return true;
        }
        /* (a key remembered after the fence, as an expiry's DEL: another round) */
        j->told = false;
        if (!m->hold && (j->ndirty < SM_PAUSE_BELOW || j->rounds >= SM_MAX_ROUNDS)) {
            j->paused = true; /* from here on writes to the slots get TRYAGAIN */
        }
        struct buf list = j->pending;
        j->pending = j->dirty;
        j->pending_at = 0;
        j->dirty = list;
        buf_reset(&j->dirty);
        j->ndirty = 0;
        j->rounds++;
        if (j->pending.len == 0 && !j->paused) {
            /* (held) a heartbeat: a dead target is noticed, the target's
             * import does not time out */
            return !sml_idle(&j->link) || sm_tell(j, "streaming", err, errsz);
        }
    }
    return sm_send_keys(shard_env(m->s), j, err, errsz);
}

/* One step; true when it could not go on before the target answers (the
 * link's window is full, a chunk or the fence waits for its replies). */
static bool
sm_step(struct slotmig *m)
{
    struct shard_env *env = shard_env(m->s);
    struct sm_job *j = m->active;
    char err[256] = "";
    if (j->state == SM_COMMITTING) {
        if (!j->proposing && sm_adopted(env, j)) {
            sm_set(j, SM_SUCCESS, "");
            sm_finish(m);
        } else if (!j->proposing && !sm_owns_any(env, j)) {
            /* (a failover or another change took them: the pause no longer matters) */
            sm_set(j, SM_FAILED, "the slots left this node while the change was being committed");
            sm_finish(m);
        } else if (!j->proposing && (int64_t)(clock_mono_us() / 1000) >= j->retry_at) {
            sm_propose(m);
        }
        return false;
    }
    if (j->cancel) {
        sm_abort(m, SM_CANCELLED, "cancelled by CLUSTER CANCELSLOTMIGRATIONS");
        return false;
    }
    int me = env->topo_me;
    const struct topo *t = env->topo;
    for (size_t i = 0; i < j->nranges; i++) {
        if (t == NULL || me < 0 || t->slots[j->ranges[i].lo] != (uint16_t)me ||
            t->slots[j->ranges[i].hi] != (uint16_t)me) {
            sm_abort(m, SM_FAILED, "this node no longer owns the slots");
            return false;
        }
    }
    const char *why = j->fail[0] ? j->fail : j->linked ? sml_failed(&j->link) : NULL;
    if (why != NULL) {
        snprintf(err, sizeof(err), "%s", why);
        j->paused = false;
        sm_abort(m, SM_FAILED, err);
        return false;
    }
    if (j->state != SM_CONNECTING && (j->chunk_wait > 0 || !sml_room(&j->link))) {
        return true;
    }
    if (j->flushed && !sm_restart(j, err, sizeof(err))) {
        sm_abort(m, SM_FAILED, err);
        return false;
    }
    bool ok = true;
    if (smc_busy(&j->chunk)) { /* a big key's chunks go before anything else */
        ok = sm_send_chunk(m, j, err, sizeof(err));
    } else if (j->state == SM_CONNECTING) {
        ok = sm_connect(m, j, SM_IO_MS, err, sizeof(err)) && sm_tell(j, NULL, err, sizeof(err));
        if (ok) {
            sm_set(j, SM_SNAPSHOT, "");
        }
    } else if (j->state == SM_SNAPSHOT) {
        if (j->pending.len == 0) { /* the walk's next batch */
            struct sm_walk w = { .j = j, .keys = j->pending };
            do {
                j->cursor = ks_scan(env->dbs[0], j->cursor, 1024, sm_walk_visit, &w);
            } while (j->cursor != 0 && w.n < SM_BATCH_KEYS);
            j->pending = w.keys;
            j->pending_at = 0;
        }
        ok = sm_send_keys(env, j, err, sizeof(err));
        if (ok && j->cursor == 0 && j->pending.len == 0) {
            ok = sm_tell(j, "streaming", err, sizeof(err));
            sm_set(j, SM_STREAMING, "");
        }
    } else {
        ok = sm_stream(m, j, err, sizeof(err));
        if (ok && j->state == SM_COMMITTING) {
            sm_arm(m, 1000);
            return false;
        }
        if (ok && j->told) {
            return true; /* the fence's replies */
        }
    }
    if (!ok) {
        j->paused = false;
        sm_abort(m, SM_FAILED, err);
        return false;
    }
    return j->chunk_wait > 0 || (j->linked && !sml_room(&j->link));
}

static void
sm_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct slotmig *m = arg;
    (void)fd;
    (void)what;
    if (m->active == NULL) {
        return;
    }
    bool wait = sm_step(m);
    struct sm_job *j = m->active;
    if (j != NULL && j->state != SM_COMMITTING) {
        /* waiting for replies: the next one wakes the job (sm_on_reply), and
         * this tick notices a target that stopped answering; held: a
         * heartbeat every 2 ms; else the next step (a batch of the walk or
         * of a round, a chunk) on the next turn of the loop */
        bool held = (m->hold_chunks && smc_started(&j->chunk)) || j->nagain > 0 ||
                    (m->hold && j->state == SM_STREAMING && !smc_busy(&j->chunk));
        j->waiting = wait;
        sm_arm(m, wait ? 100000 : held ? 2000 : 0);
    } else if (j != NULL && !evtimer_pending(m->tick, NULL)) {
        sm_arm(m, 10000);
    }
}

void
slotmig_shard_destroy(struct shard *s)
{
    struct slotmig *m = shard_env(s)->slotmig;
    if (m == NULL) {
        return;
    }
    if (m->active != NULL) {
        persist_set_tap(s, NULL, NULL);
    }
    event_free(m->tick);
    event_free(m->imp_tick);
    sm_job_free(m->active);
    sm_job_free(m->import);
    for (size_t i = 0; i < m->nlog; i++) {
        sm_job_free(m->log[i]);
    }
    rv_free(m);
    shard_env(s)->slotmig = NULL;
}

/* ---- dispatch's side ---- */

enum slotmig_route
slotmig_check(struct conn *c, unsigned slot, bool may_write)
{
    struct sm_job *j = c->env->slotmig->active;
    if (j == NULL || !may_write || !sm_moving(j, slot)) {
        return SLOTMIG_NONE;
    }
    if (j->paused) {
        reply_errf(c, "TRYAGAIN Slot %u is being migrated to another node", slot);
        return SLOTMIG_REFUSED;
    }
    return SLOTMIG_NONE; /* (its keys come from sm_tap once it is logged) */
}

bool
slotmig_paused(const struct shard_env *env)
{
    return env->slotmig != NULL && env->slotmig->active != NULL && env->slotmig->active->paused;
}

static void
sm_dirty_add(struct sm_job *j, struct rv_str key)
{
    if (sm_moving(j, slot_of(key.p, key.len))) {
        smc_touched(&j->chunk, key);
        buf_append(&j->dirty, &key.len, sizeof(key.len));
        buf_append(&j->dirty, key.p, key.len);
        j->ndirty++;
    }
}

/* persist's tap (persist_set_tap), set while a job runs: a write this shard
 * logged, as logged (what replicas and the WAL get), so the keys come from
 * its effect, not from what a client declared. Its keys of the moving slots
 * are sent again; a flush restarts the copy. */
static void
sm_tap(void *arg, unsigned db, int argc, const struct rv_str *argv)
{
    struct slotmig *m = arg;
    struct sm_job *j = m->active;
    if (j == NULL || db != 0 || argc < 1) {
        return; /* (the slots' keys are database 0's) */
    }
    const struct cmd_spec *cmd = cmd_lookup(argv[0].p, argv[0].len);
    if (cmd != NULL && cmd->subs != NULL && argc >= 2) {
        const struct cmd_spec *sub = cmd_lookup_sub(cmd, argv[1].p, argv[1].len);
        cmd = sub != NULL ? sub : cmd;
    }
    if (cmd == NULL) {
        return;
    }
    if (strcmp(cmd->name, "flushall") == 0 || strcmp(cmd->name, "flushdb") == 0) {
        j->flushed = true;
        return;
    }
    int small[16];
    int *keys = argc <= 16 ? small : rv_malloc((size_t)argc * sizeof(*keys));
    int n = cmd_get_keys(cmd, argc, (struct rv_str *)argv, keys, argc);
    for (int i = 0; i < n; i++) {
        sm_dirty_add(j, argv[keys[i]]);
    }
    if (keys != small) {
        rv_free(keys);
    }
}

/* ---- the commands ---- */

struct slotmig *
sm_get(struct conn *c)
{
    struct slotmig *m = c->env->slotmig;
    if (m == NULL) {
        m = rv_calloc(1, sizeof(*m));
        m->s = c->shard;
        m->tick = evtimer_new(shard_base(c->shard), sm_on_tick, m);
        m->imp_tick = evtimer_new(shard_base(c->shard), sm_import_tick, m);
        c->env->slotmig = m;
    }
    return m;
}

void
slotmig_hold(struct conn *c, int mode)
{
    struct slotmig *m = sm_get(c);
    m->hold = mode != 0;
    m->hold_chunks = mode == 2;
    if (m->active != NULL) {
        sm_arm(m, 0);
    }
}

static const struct topo *
sm_topo(struct conn *c)
{
    if (c->env->topo == NULL) {
        reply_errf(c, "ERR This instance has cluster support disabled");
    }
    return c->env->topo;
}

/* SLOTSRANGE start end [start end ...] NODE id: argv[2 ..); false after an
 * error reply. */
static bool
sm_parse(struct conn *c, const struct topo *t, int argc, struct rv_str *argv, struct sm_job *j)
{
    int me = c->env->topo_me;
    if (argc < 7 || !cmd_arg_is(argv[2], "slotsrange")) {
        reply_err(c, RV_ERR_SYNTAX);
        return false;
    }
    int i = 3;
    j->ranges = rv_calloc((size_t)argc, sizeof(*j->ranges));
    for (; i + 1 < argc && !cmd_arg_is(argv[i], "node"); i += 2) {
        int64_t lo, hi;
        if (!cmd_arg_int(argv[i], &lo) || !cmd_arg_int(argv[i + 1], &hi) || lo < 0 ||
            hi >= SLOT_COUNT || lo > hi) {
            reply_errf(c, "ERR Invalid or out of range slot");
            return false;
        }
        for (int64_t s = lo; s <= hi; s++) {
            if (sm_moving(j, (unsigned)s)) {
                reply_errf(c, "ERR Slot %" PRId64 " specified multiple times", s);
                return false;
            }
            if (me < 0 || t->slots[s] != (uint16_t)me) {
                reply_errf(c, "ERR I'm not the owner of hash slot %" PRId64, s);
                return false;
            }
            if (topo_slot_mig(t, (unsigned)s) != NULL) {
                reply_errf(c, "ERR Slot %" PRId64 " has a CLUSTER SETSLOT migration open", s);
                return false;
            }
            j->moving[s / 8] |= (uint8_t)(1u << (s % 8));
        }
        j->ranges[j->nranges++] = (struct topo_range){ (uint16_t)lo, (uint16_t)hi };
    }
    if (j->nranges == 0 || i + 2 != argc || !cmd_arg_is(argv[i], "node")) {
        reply_errf(c, i + 2 < argc && cmd_arg_is(argv[i], "node")
                          ? "ERR Only one SLOTSRANGE ... NODE block per command is supported"
                          : "ERR syntax error");
        return false;
    }
    int k = argv[i + 1].len == TOPO_ID_LEN ? topo_find(t, argv[i + 1].p, argv[i + 1].len) : -1;
    if (k < 0) {
        reply_errf(c, "ERR Unknown node %.*s", (int)(argv[i + 1].len > 64 ? 64 : argv[i + 1].len),
                   argv[i + 1].p);
        return false;
    }
    if (k == me) {
        reply_errf(c, "ERR Target node is this node");
        return false;
    }
    if (t->nodes[k].role != TOPO_PRIMARY) {
        reply_errf(c, "ERR Target node is not a master");
        return false;
    }
    memcpy(j->target, t->nodes[k].id, TOPO_ID_LEN);
    memcpy(j->source, t->nodes[me].id, TOPO_ID_LEN);
    snprintf(j->ip, sizeof(j->ip), "%s", t->nodes[k].ip);
    j->port = t->nodes[k].port;
    return true;
}

CMD_HANDLER(cluster_migrateslots)
{
    const struct topo *t = sm_topo(c);
    if (t == NULL) {
        return;
    }
    int me = c->env->topo_me;
    if (me < 0 || t->nodes[me].role != TOPO_PRIMARY) {
        reply_errf(c, "ERR Please use MIGRATESLOTS only with masters.");
        return;
    }
    struct slotmig *m = c->env->slotmig;
    if (m != NULL && m->active != NULL) {
        reply_errf(c, "ERR A slot migration is already in progress on this node");
        return;
    }
    m = sm_get(c);
    struct sm_job *j = rv_calloc(1, sizeof(*j));
    sml_init(&j->link);
    j->m = m;
    buf_init(&j->pending);
    buf_init(&j->dirty);
    if (!sm_parse(c, t, argc, argv, j)) {
        sm_job_free(j);
        return;
    }
    rand_hex(j->name, TOPO_ID_LEN);
    j->name[TOPO_ID_LEN] = '\0';
    smc_init(&j->chunk);
    buf_init(&j->again);
    j->created = j->updated = j->acked = clock_unix_ms() / 1000;
    sm_set(j, SM_CONNECTING, "");
    m->active = j;
    persist_set_tap(c->shard, sm_tap, m);
    sm_arm(m, 0);
    effect_none(c);
    reply_ok(c);
}

static void
sm_reply_job(struct conn *c, const struct sm_job *j)
{
    struct buf r;
    buf_init(&r);
    for (size_t i = 0; i < j->nranges; i++) {
        char one[32];
        int n = snprintf(one, sizeof(one), "%s%u-%u", i ? " " : "", j->ranges[i].lo,
                         j->ranges[i].hi);
        buf_append(&r, one, (size_t)n);
    }
    reply_map(c, 11);
    reply_bulk_cstr(c, "name");
    reply_bulk_cstr(c, j->name);
    reply_bulk_cstr(c, "operation");
    reply_bulk_cstr(c, j->import ? "IMPORT" : "EXPORT");
    reply_bulk_cstr(c, "slot_ranges");
    reply_bulk(c, r.data, r.len);
    reply_bulk_cstr(c, "target_node");
    reply_bulk_cstr(c, j->target);
    reply_bulk_cstr(c, "source_node");
    reply_bulk_cstr(c, j->source);
    reply_bulk_cstr(c, "create_time");
    reply_int(c, j->created);
    reply_bulk_cstr(c, "last_update_time");
    reply_int(c, j->updated);
    reply_bulk_cstr(c, "last_ack_time");
    reply_int(c, j->acked);
    reply_bulk_cstr(c, "state");
    reply_bulk_cstr(c, sm_state_name[j->state]);
    reply_bulk_cstr(c, "message");
    reply_bulk_cstr(c, j->message);
    reply_bulk_cstr(c, "cow_size");
    reply_int(c, 0);
    buf_deinit(&r);
}

CMD_HANDLER(cluster_getslotmigrations)
{
    (void)argc;
    (void)argv;
    if (sm_topo(c) == NULL) {
        return;
    }
    struct slotmig *m = c->env->slotmig;
    size_t n = m == NULL ? 0 : m->nlog + (m->active != NULL) + (m->import != NULL);
    reply_array(c, n);
    for (size_t i = 0; m != NULL && i < m->nlog; i++) {
        sm_reply_job(c, m->log[i]);
    }
    if (m != NULL && m->active != NULL) {
        sm_reply_job(c, m->active);
    }
    if (m != NULL && m->import != NULL) {
        sm_reply_job(c, m->import);
    }
}

CMD_HANDLER(cluster_cancelslotmigrations)
{
    (void)argc;
    (void)argv;
    if (sm_topo(c) == NULL) {
        return;
    }
    struct slotmig *m = c->env->slotmig;
    if (m != NULL && m->active != NULL && m->active->state != SM_COMMITTING) {
        m->active->cancel = true;
        sm_arm(m, 0);
    }
    reply_ok(c);
}
