/* node/features/topology_migcheck.c: a node that becomes a primary (a
 * promotion, or a start-up) while it is MIGRATING slots drops the keys of
 * those slots that the target already holds, before it serves them.
 *
 * Why: MIGRATE restores a key on the target, then deletes it here and logs
 * the DEL. A primary that dies between the two leaves the key on the target
 * and, through its replica's copy or its own WAL, on the node that now serves
 * the slot: two copies, both answering (the source serves keys it holds), and
 * writes to either are lost when the move ends. The target holds a key of a
 * slot it imports only because a MIGRATE put it there (keys the source lacks
 * are created on the target through ASK, and the source never creates keys of
 * a migrating slot), so its copy is the one that counts: ours goes, logged as
 * DEL so the WAL and replicas drop it too.
 *
 * The check asks the target (ASKING + EXISTS per key) from a thread of its
 * own; meanwhile commands on keys of those slots get TRYAGAIN, which cluster
 * clients retry. Shard state is per shard thread, where reconcile and the
 * dispatcher run. */
#include "node/features/topology.h"
#include "node/features/topology_int.h"

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/node.h"
#include "node/core/shard.h"
#include "node/keyspace/ks.h"
#include "proto/resp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define CHECK_BATCH 128       /* keys per request to the target */
#define CHECK_TIMEOUT_MS 3000 /* one request */
#define CHECK_TRIES 20        /* a target that does not answer: tried again, 500 ms apart */

static _Thread_local uint8_t checking[SLOT_COUNT / 8]; /* slots whose keys are being checked */
static _Thread_local bool checked;                     /* since this node became a primary */
static _Thread_local unsigned inflight;                /* jobs not answered yet */

/* One target's keys; the job travels to the worker thread and comes back as
 * the shard's message. Keys are stored as their length then their bytes. */
struct mig_job {
    struct shard_msg m;
    struct shard *s; /* where the answer goes */
    char ip[TOPO_IP_MAX + 1];
    int port;
    char to_id[ID_LEN + 1];
    struct buf keys;  /* to ask about */
    struct buf found; /* those the target holds */
    size_t nkeys, nfound;
    bool failed;
    char err[160];
};

bool
topology_slot_checking(unsigned slot)
{
    return checking[slot / 8] >> (slot % 8) & 1;
}

static void
set_checking(unsigned slot, bool on)
{
    uint8_t bit = (uint8_t)(1u << (slot % 8));
    checking[slot / 8] = on ? checking[slot / 8] | bit : checking[slot / 8] & (uint8_t)~bit;
}

/* The target's answers to the pipeline of ASKING + EXISTS pairs then QUIT:
 * false unless every answer is there. */
static bool
parse_answers(struct mig_job *j, const char *reply, const char *keys, size_t n, size_t at0)
{
    const char *p = reply;
    size_t at = at0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        memcpy(&len, keys + at, sizeof(len));
        if (strncmp(p, "+OK\r\n", 5) != 0) {
            return false;
        }
        p += 5;
        if (strncmp(p, ":1\r\n", 4) == 0) {
            buf_append(&j->found, keys + at, sizeof(len) + len);
            j->nfound++;
        } else if (strncmp(p, ":0\r\n", 4) != 0) {
            return false; /* (an error: MOVED, TRYAGAIN...) */
        }
        p += 4;
        at += sizeof(len) + len;
    }
    return true;
}

/* One batch of keys from keys.data + at; *next is where the next batch starts. */
static bool
ask_batch(struct mig_job *j, size_t at, size_t *next, struct buf *req, char *reply, size_t rsz)
{
    size_t n = 0, end = at;
    buf_reset(req);
    while (end < j->keys.len && n < CHECK_BATCH) {
        size_t len;
        memcpy(&len, j->keys.data + end, sizeof(len));
        resp_w_array(req, 1);
        resp_w_bulk_cstr(req, "ASKING");
        resp_w_array(req, 2);
        resp_w_bulk_cstr(req, "EXISTS");
        resp_w_bulk(req, j->keys.data + end + sizeof(len), len);
        end += sizeof(len) + len;
        n++;
    }
    resp_w_array(req, 1);
    resp_w_bulk_cstr(req, "QUIT");
    size_t found_len = j->found.len, nfound = j->nfound;
    if (resp_call_ex(j->ip, j->port, req, reply, rsz, CHECK_TIMEOUT_MS, true) != 0 ||
        !parse_answers(j, reply, j->keys.data, n, at)) {
        j->found.len = found_len; /* (this batch again, whole) */
        j->nfound = nfound;
        snprintf(j->err, sizeof(j->err), "%.150s", reply[0] ? reply : "no answer");
        j->err[strcspn(j->err, "\r\n")] = '\0';
        return false;
    }
    *next = end;
    return true;
}

static void migcheck_done(struct shard *s, struct shard_msg *m);

static void *
migcheck_worker(void *arg)
{
    struct mig_job *j = arg;
    struct shard *s = j->s;
    struct buf req;
    buf_init(&req);
    size_t rsz = CHECK_BATCH * 9 + 64;
    char *reply = rv_malloc(rsz);
    size_t at = 0;
    int tries = 0;
    while (at < j->keys.len && !atomic_load(&shard_env(s)->node->shutdown)) {
        if (ask_batch(j, at, &at, &req, reply, rsz)) {
            continue;
        }
        if (++tries >= CHECK_TRIES) {
            j->failed = true;
            break;
        }
        tpi_sleep_ms(500);
    }
    buf_deinit(&req);
    rv_free(reply);
    if (atomic_load(&shard_env(s)->node->shutdown)) {
        buf_deinit(&j->keys);
        buf_deinit(&j->found);
        rv_free(j);
        return NULL;
    }
    j->m.run = migcheck_done;
    shard_post(s, &j->m);
    return NULL;
}

/* Shard thread: the target's answer. Its keys go (if the slot still migrates
 * to it), and the slots are served again; a target that never answered keeps
 * them refused until the next topology change starts the check again. */
static void
migcheck_done(struct shard *s, struct shard_msg *m)
{
    struct mig_job *j = (struct mig_job *)m;
    struct shard_env *env = shard_env(s);
    const struct topo *t = env->topo;
    struct ks *ks = env->dbs[0];
    inflight--;
    size_t dropped = 0;
    unsigned was = env->db;
    shard_use_db(env, 0); /* (the DEL records are database 0's) */
    for (size_t at = 0; !j->failed && t != NULL && at < j->found.len;) {
        size_t len;
        memcpy(&len, j->found.data + at, sizeof(len));
        const char *k = j->found.data + at + sizeof(len);
        at += sizeof(len) + len;
        const struct topo_mig *mg = topo_slot_mig(t, slot_of(k, len));
        struct ks_entry *e;
        if (mg != NULL && mg->mig_by == (uint16_t)env->topo_me && mg->mig_to != TOPO_NONE &&
            memcmp(t->nodes[mg->mig_to].id, j->to_id, ID_LEN) == 0 &&
            (e = ks_peek(ks, k, len)) != NULL) {
            ks_evict(ks, e);
            dropped++;
        }
    }
    shard_use_db(env, was);
    if (j->failed) {
        checked = false; /* (tried again on the next topology change) */
        log_warn("cluster: could not ask %s:%d which keys of the migrating slots it holds: %s; "
                 "their commands get TRYAGAIN",
                 j->ip, j->port, j->err);
    } else {
        for (unsigned slot = 0; slot < SLOT_COUNT && t != NULL; slot++) {
            const struct topo_mig *mg;
            if (topology_slot_checking(slot) && (mg = topo_slot_mig(t, slot)) != NULL &&
                mg->mig_to != TOPO_NONE && memcmp(t->nodes[mg->mig_to].id, j->to_id, ID_LEN) == 0) {
                set_checking(slot, false);
            }
        }
        log_notice("cluster: asked %s:%d about %zu key(s) of migrating slots: %zu held there "
                   "were deleted here (a MIGRATE whose deletion this node had not received)",
                   j->ip, j->port, j->nkeys, dropped);
    }
    buf_deinit(&j->keys);
    buf_deinit(&j->found);
    rv_free(j);
}

struct gather {
    const struct topo *t;
    struct mig_job **jobs; /* per target node index */
};

static void
gather_key(void *arg, struct ks_entry *e)
{
    struct gather *g = arg;
    struct rv_str k = ks_entry_key(e);
    unsigned slot = slot_of(k.p, k.len);
    if (!topology_slot_checking(slot)) {
        return;
    }
    struct mig_job *j = g->jobs[topo_slot_mig(g->t, slot)->mig_to];
    buf_append(&j->keys, &k.len, sizeof(k.len));
    buf_append(&j->keys, k.p, k.len);
    j->nkeys++;
}

/* From topology_reconcile, on a primary: the first time since it became one,
 * check the keys of the slots it migrates. */
void
tpi_migcheck(struct shard *s, const struct topo *t, int me, bool primary)
{
    struct shard_env *env = shard_env(s);
    struct ks *ks = env->dbs[0];
    for (unsigned slot = 0; slot < SLOT_COUNT;
         slot++) { /* (a state that ended: nothing to check) */
        const struct topo_mig *mg = topo_slot_mig(t, slot);
        if (topology_slot_checking(slot) &&
            (!primary || mg == NULL || mg->mig_by != (uint16_t)me || mg->mig_to == TOPO_NONE)) {
            set_checking(slot, false);
        }
    }
    if (!primary) {
        checked = false;
        return;
    }
    if (checked || inflight > 0 || ks == NULL) {
        return;
    }
    checked = true; /* (no migrating slot now: later ones are this primary's own moves) */
    if (t->nmigs == 0 || !ks_counts_slots(ks)) {
        return;
    }
    struct gather g = { t, rv_calloc(t->nnodes, sizeof(*g.jobs)) };
    unsigned nslots = 0;
    for (uint32_t i = 0; i < t->nmigs; i++) {
        const struct topo_mig *mg = &t->migs[i];
        if (mg->mig_by != (uint16_t)me || mg->mig_to == TOPO_NONE ||
            ks_slot_keys(ks, mg->slot) == 0) {
            continue;
        }
        set_checking(mg->slot, true);
        nslots++;
        if (g.jobs[mg->mig_to] == NULL) {
            struct mig_job *j = rv_calloc(1, sizeof(*j));
            const struct topo_node *to = &t->nodes[mg->mig_to];
            snprintf(j->ip, sizeof(j->ip), "%s", to->ip);
            j->port = to->port;
            memcpy(j->to_id, to->id, ID_LEN);
            buf_init(&j->keys);
            buf_init(&j->found);
            g.jobs[mg->mig_to] = j;
        }
    }
    if (nslots > 0) {
        uint64_t cur = 0;
        do {
            cur = ks_scan(ks, cur, 1024, gather_key, &g);
        } while (cur != 0);
    }
    for (unsigned i = 0; i < t->nnodes; i++) {
        struct mig_job *j = g.jobs[i];
        if (j == NULL) {
            continue;
        }
        log_notice("cluster: this node became a primary with %zu key(s) of slots it migrates to "
                   "%.8s: asking it which it holds already",
                   j->nkeys, j->to_id);
        j->s = s;
        if (tpi_spawn(migcheck_worker, j) != 0) {
            log_warn("cluster: cannot start checking the migrating slots' keys");
            buf_deinit(&j->keys);
            buf_deinit(&j->found);
            rv_free(j);
            checked = false;
            continue;
        }
        inflight++;
    }
    rv_free(g.jobs);
}
