/* node/commands/migrate_async.c: MIGRATE of big keys on the shard's loop
 * (migrate_async.h has the rules).
 *
 * A job per waiting client, on the shard's list (shard_env.migasync). Its
 * link's reply function only records what each reply means (the records'
 * meanings wait in a FIFO, in the order they were queued); the work is done
 * by the job's step event, run once per turn of the loop when something
 * changed, and by a 50 ms tick that checks the link's timeout. The job is
 * freed only from those two, never from inside the link's callbacks. */
#include "node/commands/migrate_async.h"

#include "base/buf.h"
#include "base/mem.h"
#include "base/tls.h"
#include "node/commands/cmds.h"
#include "node/commands/mig_link.h"
#include "node/commands/slotmig_chunk.h"
#include "node/commands/slotmig_link.h"
#include "node/core/cmd.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/multi.h"
#include "node/features/tracking.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "proto/resp.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

enum mj_tag { MJ_AUTH, MJ_ASKING, MJ_RESTORE, MJ_CHUNK, MJ_COMMIT };

struct mj_exp {
    uint8_t tag;
    int key;
};

struct mig_job {
    struct mig_job *next;
    struct shard *s;
    struct conn *c;    /* the waiting client */
    struct conn watch; /* WATCHes the keys: a write sets its dirty flag */
    struct sml link;
    struct smc chunk;
    struct event *step, *tick;
    bool copy, replace;
    int64_t timeout;
    int n, at;           /* keys, the one being sent */
    struct rv_str *keys; /* into keybytes */
    char *keybytes;
    bool *big, *took, *bad;
    bool sending; /* at's chunks are being queued */
    int restarts;
    struct mj_exp *exp; /* FIFO of what the replies answer */
    size_t eh, en, ecap;
    bool auth_failed;
    char err[MIGRATE_LINE_MAX]; /* the target's first error line ("") */
    char ioerr[128];            /* our own error ("") */
};

struct mig_async {
    struct mig_job *jobs;
    bool hold; /* DEBUG MIGRATE-HOLD 1: a big key stops after its first chunk */
};

static struct mig_async *
ma_get(struct shard_env *env)
{
    if (env->migasync == NULL) {
        env->migasync = rv_calloc(1, sizeof(struct mig_async));
    }
    return env->migasync;
}

bool
migrate_async_wanted(struct conn *c, const struct rv_str *keys, int n)
{
    if ((c->flags & (CONN_IN_EXEC | CONN_IN_SCRIPT | CONN_REPLAY | CONN_MULTI)) || c->db != 0 ||
        c->fd < 0) {
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (smc_is_big(c->env, keys[i].p, keys[i].len)) {
            return true;
        }
    }
    return false;
}

static void
mj_expect(struct mig_job *j, enum mj_tag tag, int key)
{
    if (j->en == j->ecap) {
        size_t cap = j->ecap ? 2 * j->ecap : 16;
        struct mj_exp *v = rv_malloc(cap * sizeof(*v));
        for (size_t i = 0; i < j->en; i++) {
            v[i] = j->exp[(j->eh + i) % j->ecap];
        }
        rv_free(j->exp);
        j->exp = v;
        j->eh = 0;
        j->ecap = cap;
    }
    j->exp[(j->eh + j->en++) % j->ecap] = (struct mj_exp){ (uint8_t)tag, key };
}

static void
mj_wake(struct mig_job *j)
{
    event_active(j->step, EV_TIMEOUT, 0);
}

/* The link's reply function: what the line means, nothing freed here. */
static void
mj_reply(void *arg, const char *line)
{
    struct mig_job *j = arg;
    if (j->en == 0) {
        return; /* (sml fails a reply to no record before it gets here) */
    }
    struct mj_exp e = j->exp[j->eh];
    j->eh = (j->eh + 1) % j->ecap;
    j->en--;
    bool bad = line[0] == '-';
    if (bad && j->err[0] == '\0') {
        snprintf(j->err, sizeof(j->err), "%s", line + 1);
    }
    if (e.tag == MJ_AUTH) {
        j->auth_failed = bad;
    } else if (e.tag == MJ_CHUNK && bad) {
        j->bad[e.key] = true;
        if (e.key == j->at) {
            smc_touched(&j->chunk, j->keys[e.key]); /* (no more chunks of it) */
            j->sending = false;
        }
    } else if (e.tag == MJ_RESTORE || e.tag == MJ_COMMIT) {
        j->took[e.key] = !bad && !j->auth_failed;
    }
    mj_wake(j);
}

static bool
mj_queue(struct mig_job *j, struct buf *req, size_t n)
{
    return sml_queue(&j->link, req->data, req->len, n);
}

/* The key is deleted here (logged DEL) once the target took it, in the step
 * that saw its COMMIT's reply: no write lands in between. */
static void
mj_delete(struct mig_job *j, int i)
{
    struct conn *c = j->c;
    struct rv_str key = j->keys[i];
    persist_touch_db(c, 0, key); /* (a checkpoint walking db 0 writes its old value first) */
    if (!ks_delete(c->env->dbs[0], key.p, key.len)) {
        return;
    }
    multi_touch_db(j->s, 0, key);
    if (c->env->tracking != NULL) {
        tracking_key_written(c, key);
    }
    const struct cmd_spec *del = cmd_lookup("del", 3);
    struct rv_str argv[2] = { { "DEL", 3 }, key };
    if (del != NULL) {
        uint8_t was = c->effect;
        c->effect = EFFECT_ARGS;
        persist_log(c, del, 2, argv);
        c->effect = was;
    }
}

/* A small key as RESTORE key ttl payload [REPLACE] (missing: nothing). */
static size_t
mj_restore_record(struct mig_job *j, int i, struct buf *req)
{
    struct shard_env *env = j->c->env;
    struct ks_entry *e = ks_peek(env->dbs[0], j->keys[i].p, j->keys[i].len);
    if (!ks_entry_live(e, env->now_ms)) {
        return 0;
    }
    int64_t exp = ks_entry_expire(e);
    int64_t ttl = exp == KS_NO_EXPIRE ? 0 : exp - env->now_ms;
    struct buf payload;
    buf_init(&payload);
    dump_payload(e, &payload);
    size_t n = 1;
    if (env->topo != NULL) { /* (a target importing the slot takes it) */
        resp_w_array(req, 1);
        resp_w_bulk_cstr(req, "ASKING");
        mj_expect(j, MJ_ASKING, i);
        n++;
    }
    resp_w_array(req, j->replace ? 5 : 4);
    resp_w_bulk_cstr(req, "RESTORE");
    resp_w_bulk(req, j->keys[i].p, j->keys[i].len);
    resp_w_bulk_int(req, exp == KS_NO_EXPIRE ? 0 : ttl > 0 ? ttl : 1);
    resp_w_bulk(req, payload.data, payload.len);
    if (j->replace) {
        resp_w_bulk_cstr(req, "REPLACE");
    }
    buf_deinit(&payload);
    mj_expect(j, MJ_RESTORE, i);
    return n;
}

/* The final blocking exchange of big key i: COMMIT key ttl [REPLACE]. */
static bool
mj_commit(struct mig_job *j, int i)
{
    struct shard_env *env = j->c->env;
    struct ks_entry *e = ks_peek(env->dbs[0], j->keys[i].p, j->keys[i].len);
    if (!ks_entry_live(e, env->now_ms)) {
        return true; /* (expired meanwhile: nothing to move) */
    }
    int64_t exp = ks_entry_expire(e);
    int64_t ttl = exp == KS_NO_EXPIRE ? 0 : exp - env->now_ms;
    struct buf req;
    buf_init(&req);
    resp_w_array(&req, j->replace ? 5 : 4);
    resp_w_bulk_cstr(&req, "RESTORE-STAGE");
    resp_w_bulk_cstr(&req, "COMMIT");
    resp_w_bulk(&req, j->keys[i].p, j->keys[i].len);
    resp_w_bulk_int(&req, exp == KS_NO_EXPIRE ? 0 : ttl > 0 ? ttl : 1);
    if (j->replace) {
        resp_w_bulk_cstr(&req, "REPLACE");
    }
    mj_expect(j, MJ_COMMIT, i);
    bool ok = mj_queue(j, &req, 1) && sml_drain(&j->link, j->timeout);
    buf_deinit(&req);
    if (ok && j->took[i] && !j->copy) {
        mj_delete(j, i);
    }
    return ok;
}

/* The small keys, last, in one blocking exchange. */
static bool
mj_small_keys(struct mig_job *j)
{
    struct buf req;
    buf_init(&req);
    size_t n = 0;
    for (int i = 0; i < j->n; i++) {
        if (!j->big[i]) {
            n += mj_restore_record(j, i, &req);
        }
    }
    bool ok = n == 0 || (mj_queue(j, &req, n) && sml_drain(&j->link, j->timeout));
    buf_deinit(&req);
    for (int i = 0; ok && i < j->n && !j->copy; i++) {
        if (!j->big[i] && j->took[i]) {
            mj_delete(j, i);
        }
    }
    return ok;
}

static void mj_free(struct mig_job *j);

static void
mj_finish(struct mig_job *j)
{
    struct conn *c = j->c;
    struct shard *s = j->s;
    const char *failed = sml_failed(&j->link);
    char text[MIGRATE_LINE_MAX + 64] = "";
    if (j->err[0] != '\0') {
        snprintf(text, sizeof(text), "ERR Target instance replied with error: %s", j->err);
    } else if (j->ioerr[0] != '\0') {
        snprintf(text, sizeof(text), "%s", j->ioerr);
    } else if (failed != NULL) {
        snprintf(text, sizeof(text), "IOERR error or timeout %s to target instance",
                 strstr(failed, "writing") != NULL ? "writing" : "reading");
    }
    /* (freed first: what the client runs next may close it, which looks for its job) */
    mj_free(j);
    c->flags &= ~(CONN_TOPO_WAIT | CONN_BLOCKED);
    if (text[0] != '\0') {
        reply_errf(c, "%s", text);
    } else {
        reply_ok(c);
    }
    conn_resume(c);
    shard_want_write(s, c);
}

/* Big key at: queue its next chunks (at most MJ_STEP_RECORDS); true when
 * the step may go on with the next key. */
static bool
mj_big_step(struct mig_job *j, struct mig_async *ma)
{
    struct shard_env *env = j->c->env;
    int i = j->at;
    if (!j->sending) {
        if (!sml_idle(&j->link)) {
            return false; /* (its last chunks are not answered yet) */
        }
        if (j->bad[i]) {
            return true;
        }
        if (j->restarts > 0 && !multi_watch_dirty(&j->watch)) {
            mj_commit(j, i); /* (a failed link ends the job in the step) */
            return true;
        }
        if (j->restarts > MJ_RESTARTS) {
            snprintf(j->ioerr, sizeof(j->ioerr),
                     "IOERR the key was written during the transfer %d times", j->restarts);
            return true;
        }
        /* its first send, or it was written meanwhile: from its current value */
        multi_unwatch(&j->watch);
        multi_watch(&j->watch, 1, &j->keys[i]);
        j->restarts++;
        if (!smc_defer(&j->chunk, env, j->keys[i].p, j->keys[i].len)) {
            j->big[i] = false; /* (no longer big, or gone: it goes with the small keys) */
            return true;
        }
        j->sending = true;
    }
    struct buf req;
    buf_init(&req);
    size_t records = 0;
    for (int built = 0; built < MJ_STEP_RECORDS && sml_room(&j->link); built++) {
        if (ma->hold && smc_started(&j->chunk)) {
            break;
        }
        size_t n = smc_next(&j->chunk, env, &req);
        records += n;
        for (size_t k = 0; k < n; k++) {
            mj_expect(j, MJ_CHUNK, i);
        }
        if (!smc_busy(&j->chunk)) {
            j->sending = false; /* (every chunk queued, or the key changed type or went) */
            break;
        }
    }
    if (records > 0) {
        mj_queue(j, &req, records); /* (a failed link ends the job in the step) */
    }
    buf_deinit(&req);
    return false;
}

static void
mj_on_step(evutil_socket_t fd, short what, void *arg)
{
    struct mig_job *j = arg;
    struct mig_async *ma = j->c->env->migasync;
    (void)fd;
    (void)what;
    while (sml_failed(&j->link) == NULL && j->ioerr[0] == '\0') {
        if (j->at == j->n) {
            mj_small_keys(j);
            mj_finish(j);
            return;
        }
        if (!j->big[j->at]) {
            j->at++;
            continue;
        }
        if (!mj_big_step(j, ma)) {
            return; /* (a reply or the tick runs the step again) */
        }
        if (j->ioerr[0] == '\0' && sml_failed(&j->link) == NULL) {
            j->at++;
            j->restarts = 0;
            j->sending = false;
            multi_unwatch(&j->watch);
        }
    }
    mj_finish(j);
}

static void
mj_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct mig_job *j = arg;
    (void)fd;
    (void)what;
    if (sml_failed(&j->link) != NULL) {
        mj_finish(j);
        return;
    }
    mj_wake(j); /* (DEBUG MIGRATE-HOLD released, a key written) */
}

static void
mj_free(struct mig_job *j)
{
    struct mig_async *ma = j->c->env->migasync;
    for (struct mig_job **p = &ma->jobs; *p != NULL; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            break;
        }
    }
    sml_close(&j->link);
    smc_deinit(&j->chunk);
    multi_release(&j->watch);
    event_free(j->step);
    event_free(j->tick);
    rv_free(j->keys);
    rv_free(j->keybytes);
    rv_free(j->big);
    rv_free(j->took);
    rv_free(j->bad);
    rv_free(j->exp);
    rv_free(j);
}

void
migrate_async_start(struct conn *c, const struct migrate_opts *o, const char *host,
                    const char *port, const struct rv_str *keys, int n)
{
    struct mig_link link = { mig_dial(host, port, o->timeout), NULL };
    if (link.fd >= 0 && c->env->cfg->tls.cluster && !mig_tls_start(&link, o->timeout)) {
        mig_close(&link);
        link.fd = -1;
    }
    if (link.fd < 0) {
        reply_errf(c, link.fd == -2 ? "IOERR error or timeout writing to target instance"
                                    : "IOERR error or timeout connecting to the client");
        return;
    }
    struct mig_job *j = rv_calloc(1, sizeof(*j));
    struct mig_async *ma = ma_get(c->env);
    j->s = c->shard;
    j->c = c;
    j->copy = o->copy;
    j->replace = o->replace;
    j->timeout = o->timeout;
    j->n = n;
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        bytes += keys[i].len;
    }
    j->keybytes = rv_malloc(bytes + 1);
    j->keys = rv_calloc((size_t)n, sizeof(*j->keys));
    j->big = rv_calloc((size_t)n, sizeof(bool));
    j->took = rv_calloc((size_t)n, sizeof(bool));
    j->bad = rv_calloc((size_t)n, sizeof(bool));
    for (int i = 0, at = 0; i < n; i++) {
        memcpy(j->keybytes + at, keys[i].p, keys[i].len);
        j->keys[i] = (struct rv_str){ j->keybytes + at, keys[i].len };
        j->big[i] = smc_is_big(c->env, keys[i].p, keys[i].len);
        at += (int)keys[i].len;
    }
    j->watch.shard = c->shard;
    j->watch.env = c->env;
    j->watch.fd = -1;
    smc_init(&j->chunk);
    j->chunk.verb = "RESTORE-STAGE";
    sml_init(&j->link);
    struct event_base *base = shard_base(c->shard);
    sml_adopt(&j->link, base, link, o->timeout, mj_reply, j);
    j->step = event_new(base, -1, 0, mj_on_step, j);
    j->tick = event_new(base, -1, EV_PERSIST, mj_on_tick, j);
    struct timeval tv = { 0, 50000 };
    event_add(j->tick, &tv);
    j->next = ma->jobs;
    ma->jobs = j;
    if (o->pass != NULL) {
        struct buf req;
        buf_init(&req);
        resp_w_array(&req, o->user ? 3 : 2);
        resp_w_bulk_cstr(&req, "AUTH");
        if (o->user) {
            resp_w_bulk(&req, o->user->p, o->user->len);
        }
        resp_w_bulk(&req, o->pass->p, o->pass->len);
        mj_expect(j, MJ_AUTH, 0);
        mj_queue(j, &req, 1);
        buf_deinit(&req);
    }
    c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
    mj_wake(j);
}

void
migrate_async_conn_gone(struct conn *c)
{
    struct mig_async *ma = c->env != NULL ? c->env->migasync : NULL;
    for (struct mig_job *j = ma != NULL ? ma->jobs : NULL, *next; j != NULL; j = next) {
        next = j->next;
        if (j->c == c) {
            mj_free(j); /* (the link closes: the target drops the staging value) */
        }
    }
}

void
migrate_async_shard_destroy(struct shard *s)
{
    struct mig_async *ma = shard_env(s)->migasync;
    while (ma != NULL && ma->jobs != NULL) {
        mj_free(ma->jobs);
    }
    rv_free(ma);
    shard_env(s)->migasync = NULL;
}

CMD_HANDLER(debug_migrate_hold)
{
    (void)argc;
    int64_t on;
    if (!cmd_arg_int(argv[2], &on) || on < 0 || on > 1) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    ma_get(c->env)->hold = on == 1;
    reply_ok(c);
}
