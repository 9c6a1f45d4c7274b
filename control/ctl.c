/* control/ctl.c: a raft server on its own thread and libuv loop (see ctl.h for
 * the threading contract).
 *
 * Other threads reach the control thread only through the submit queue: a
 * request is copied into a struct ctl_op, pushed under c->mu and the loop is
 * woken with uv_async_send, also under c->mu, so that no send can follow the
 * uv_close of the async handle (the control thread sets wake_closed under the
 * same mutex). The control thread hands each op to raft and keeps it on the
 * in-flight list until raft's callback fires; the timer answers ops past their
 * deadline CTL_ETIMEOUT but keeps them allocated, since raft still holds their
 * request structs. A uv_check handle copies raft's state into c->info after
 * every loop iteration, for ctl_info on any thread. */
#define LOG_MODULE "control"
#include "control/ctl.h"
#include "control/ctl_int.h"
#include "control/ctl_tls.h"

#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/rv_err.h"

#include <raft/uv.h>
#include <uv.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

enum op_kind { OP_PROPOSE, OP_ADD, OP_ASSIGN, OP_REMOVE, OP_TRANSFER };

struct ctl_op {
    struct ctl_op *next;              /* submit queue */
    struct ctl_op *fl_prev, *fl_next; /* in-flight list (control thread) */
    struct ctl *c;
    int kind;
    ctl_done_fn done;
    void *arg;
    uint64_t id;
    int role; /* raft's role code */
    char address[CTL_ADDR_MAX];
    struct raft_buffer entry; /* OP_PROPOSE: raft_malloc'd; raft's once raft_apply took it */
    uint64_t deadline;        /* uv_now() milliseconds */
    bool answered;
    bool transfer_settling; /* OP_TRANSFER: raft is done, waiting to learn the new leader */
    union {
        struct raft_apply apply;
        struct raft_change change;
        struct raft_transfer transfer;
    } req;
};

struct ctl {
    uint64_t id;
    char address[CTL_ADDR_MAX];
    char raft_dir[PATH_MAX];
    unsigned request_timeout_ms;
    unsigned stop_timeout_ms;
    unsigned election_timeout_ms;

    pthread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t timer;
    uv_check_t check;
    struct raft_uv_transport transport;
    bool tls; /* the transport is ctl_tls.c's, not raft_uv_tcp */
    struct raft_io io;
    struct raft raft;
    struct ctl_fsm_adapter fsm;

    /* control thread only */
    bool draining; /* stopping: waiting for raft's disk writes before raft_close */
    uint64_t drain_deadline;
    bool closing;         /* raft_close called */
    bool closed;          /* raft's close callback ran */
    struct ctl_op flight; /* sentinel of the in-flight list */
    struct raft_barrier barrier;
    bool barrier_busy;  /* barrier is raft's until on_barrier */
    bool barrier_again; /* an entry committed since barrier was sent */

    pthread_mutex_t mu; /* the submit queue */
    struct ctl_op *q_head, *q_tail;
    bool stopping;    /* ctl_stop called: no new requests */
    bool wake_closed; /* the async handle is closing: no more uv_async_send */

    pthread_mutex_t info_mu;
    struct ctl_info info;
};

static void
seterr(char *err, size_t errsz, const char *fmt, ...)
{
    if (err == NULL || errsz == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

static void
transport_release(struct ctl *c)
{
    if (c->tls) {
        ctl_tls_transport_release(&c->transport);
    } else {
        raft_uv_tcp_close(&c->transport);
    }
}

/* ---- in-flight ops (control thread) ---- */

static void
flight_add(struct ctl *c, struct ctl_op *op)
{
    op->deadline = uv_now(&c->loop) + c->request_timeout_ms;
    op->fl_prev = c->flight.fl_prev;
    op->fl_next = &c->flight;
    c->flight.fl_prev->fl_next = op;
    c->flight.fl_prev = op;
}

static void
flight_del(struct ctl_op *op)
{
    if (op->fl_next != NULL) {
        op->fl_prev->fl_next = op->fl_next;
        op->fl_next->fl_prev = op->fl_prev;
        op->fl_prev = op->fl_next = NULL;
    }
}

static void
op_free(struct ctl_op *op)
{
    if (op->entry.base != NULL) {
        raft_free(op->entry.base);
    }
    rv_free(op);
}

static void
op_answer(struct ctl_op *op, int err, int code, const char *msg, uint64_t index)
{
    struct ctl *c = op->c;
    if (op->answered) {
        return;
    }
    op->answered = true;
    struct ctl_result r = {
        .err = err,
        .code = code,
        .msg = msg != NULL ? msg : "",
        .index = index,
        .leader_address = "",
    };
    if (err == CTL_ENOTLEADER && !c->closed) {
        raft_id lid = 0;
        const char *laddr = NULL;
        raft_leader(&c->raft, &lid, &laddr);
        r.leader_id = lid;
        r.leader_address = laddr != NULL ? laddr : "";
    }
    op->done(op->arg, &r);
}

/* Answer an op that raft failed with rv. While closing, every failure is the
 * shutdown (raft reports it as leadership lost). */
static void
op_fail(struct ctl_op *op, int rv, const char *detail)
{
    struct ctl *c = op->c;
    char msg[CTL_MSG_MAX];
    int err = c->closing ? CTL_ESHUTDOWN : ctl_err_from_raft(rv);
    if (detail != NULL && detail[0] != '\0') {
        snprintf(msg, sizeof(msg), "%s: %s", raft_strerror(rv), detail);
    } else {
        snprintf(msg, sizeof(msg), "%s",
                 err == CTL_ESHUTDOWN ? ctl_strerror(err) : raft_strerror(rv));
    }
    op_answer(op, err, 0, msg, 0);
}

/* ---- raft callbacks and request submission (control thread) ---- */

static void announce_commit(struct ctl *c);

static void
on_barrier(struct raft_barrier *req, int status)
{
    struct ctl *c = req->data;
    c->barrier_busy = false;
    if (status == 0 && c->barrier_again) {
        announce_commit(c);
    }
}

/* Followers learn that an entry committed from the leader's next message,
 * which without new entries is the next heartbeat (100 ms): a change proposed
 * through another host was answered there only that much later (redis-cli's
 * SETSLOTs go to every node in turn). A barrier is an entry that raft sends at
 * once, carrying the commit index; its own commit needs no haste. */
static void
announce_commit(struct ctl *c)
{
    if (c->closing || raft_state(&c->raft) != RAFT_LEADER) {
        return;
    }
    if (c->barrier_busy) {
        c->barrier_again = true;
        return;
    }
    c->barrier_again = false;
    c->barrier.data = c;
    if (raft_barrier(&c->raft, &c->barrier, on_barrier) == 0) {
        c->barrier_busy = true;
    }
}

static void
on_apply(struct raft_apply *req, int status, void *result)
{
    struct ctl_op *op = req->data;
    flight_del(op);
    if (status == 0) {
        announce_commit(op->c);
    }
    if (status == 0 && result != NULL) {
        const struct ctl_outcome *o = result;
        op_answer(op, CTL_OK, o->code, o->msg, req->index);
    } else {
        op_fail(op, status != 0 ? status : RAFT_INVALID, NULL);
    }
    op_free(op);
}

static void
on_change_done(struct raft_change *req, int status)
{
    struct ctl_op *op = req->data;
    flight_del(op);
    if (status == 0) {
        op_answer(op, CTL_OK, 0, "", 0);
    } else {
        op_fail(op, status, NULL);
    }
    op_free(op);
}

/* raft_add gives the new server the spare role; the wanted role follows. */
static void
on_added(struct raft_change *req, int status)
{
    struct ctl_op *op = req->data;
    struct ctl *c = op->c;
    if (status == 0 && op->role != RAFT_SPARE && !c->closing && !op->answered) {
        int rv = raft_assign(&c->raft, &op->req.change, op->id, op->role, on_change_done);
        if (rv == 0) {
            return;
        }
        flight_del(op);
        op_fail(op, rv, "added as a spare, assigning its role failed");
        op_free(op);
        return;
    }
    on_change_done(req, status);
}

/* Answer a finished leadership transfer once it can be told: another server
 * leads (CTL_OK, or CTL_EFAIL when it is not the one asked for). False while
 * this server still leads or knows no leader: raft may call back before it has
 * stepped down, and learns the new leader only from its first heartbeat. */
static bool
transfer_settled(struct ctl *c, struct ctl_op *op)
{
    raft_id lid = 0;
    const char *laddr = NULL;
    raft_leader(&c->raft, &lid, &laddr);
    if (lid == 0 || lid == c->id) {
        return false;
    }
    if (op->id == 0 || lid == op->id) {
        op_answer(op, CTL_OK, 0, "", 0);
    } else {
        char msg[CTL_MSG_MAX];
        snprintf(msg, sizeof(msg), "server %llu leads instead", (unsigned long long)lid);
        op_answer(op, CTL_EFAIL, 0, msg, 0);
    }
    return true;
}

/* raft calls back once the target leads or the election timeout passed. The
 * old leader often learns who leads only from the new leader's first
 * heartbeat, after this: the timer then settles the op (on_timer). */
static void
on_transfer(struct raft_transfer *req)
{
    struct ctl_op *op = req->data;
    struct ctl *c = op->c;
    if (c->closing) {
        flight_del(op);
        op_answer(op, CTL_ESHUTDOWN, 0, ctl_strerror(CTL_ESHUTDOWN), 0);
        op_free(op);
        return;
    }
    if (op->answered || transfer_settled(c, op)) {
        flight_del(op);
        op_free(op);
        return;
    }
    op->transfer_settling = true;
    op->deadline = uv_now(&c->loop) + 2 * (uint64_t)c->election_timeout_ms;
}

static void
op_run(struct ctl *c, struct ctl_op *op)
{
    int rv;
    switch (op->kind) {
    case OP_PROPOSE:
        op->req.apply.data = op;
        rv = raft_apply(&c->raft, &op->req.apply, &op->entry, 1, on_apply);
        if (rv == 0) {
            op->entry.base = NULL; /* raft owns it now */
        }
        break;
    case OP_ADD:
        op->req.change.data = op;
        rv = raft_add(&c->raft, &op->req.change, op->id, op->address, on_added);
        break;
    case OP_ASSIGN:
        op->req.change.data = op;
        rv = raft_assign(&c->raft, &op->req.change, op->id, op->role, on_change_done);
        break;
    case OP_REMOVE:
        op->req.change.data = op;
        rv = raft_remove(&c->raft, &op->req.change, op->id, on_change_done);
        break;
    case OP_TRANSFER:
        op->req.transfer.data = op;
        rv = raft_transfer(&c->raft, &op->req.transfer, op->id, on_transfer);
        break;
    default: rv = RAFT_INVALID; break;
    }
    if (rv != 0) {
        op_fail(op, rv, raft_errmsg(&c->raft));
        op_free(op);
        return;
    }
    flight_add(c, op);
}

/* ---- the loop's handles (control thread) ---- */

static void
info_refresh(struct ctl *c)
{
    struct ctl_info in;
    memset(&in, 0, sizeof(in));
    in.id = c->id;
    if (!c->closed) {
        raft_id lid = 0;
        const char *laddr = NULL;
        switch (raft_state(&c->raft)) {
        case RAFT_FOLLOWER: in.state = CTL_FOLLOWER; break;
        case RAFT_CANDIDATE: in.state = CTL_CANDIDATE; break;
        case RAFT_LEADER: in.state = CTL_LEADER; break;
        default: in.state = CTL_UNAVAILABLE; break;
        }
        raft_leader(&c->raft, &lid, &laddr);
        in.leader_id = lid;
        if (laddr != NULL) {
            snprintf(in.leader_address, sizeof(in.leader_address), "%s", laddr);
        }
        in.term = c->raft.current_term;
        in.commit_index = c->raft.commit_index;
        in.applied_index = raft_last_applied(&c->raft);
        in.last_index = raft_last_index(&c->raft);
        in.n_servers = c->raft.configuration.n;
        for (unsigned i = 0; i < in.n_servers && i < CTL_INFO_SERVERS; i++) {
            const struct raft_server *s = &c->raft.configuration.servers[i];
            in.servers[i].id = s->id;
            snprintf(in.servers[i].address, sizeof(in.servers[i].address), "%s", s->address);
            in.servers[i].role = ctl_role_from_raft(s->role);
        }
    }
    pthread_mutex_lock(&c->info_mu);
    c->info = in;
    pthread_mutex_unlock(&c->info_mu);
}

/* libraft 0.15 crashes (a log reference count freed twice, in refsDecr) when
 * raft_close cancels a leader's disk append still in flight: the failed-append
 * path releases entries the close already truncated. So a stopping server
 * first lets its appends finish (last_stored reaches the last index), for at
 * most CTL_DRAIN_MS, and only then closes raft. */
#define CTL_DRAIN_MS 1000

static void on_raft_closed(struct raft *r);
static void on_handle_closed(uv_handle_t *h);

static void
maybe_close(struct ctl *c)
{
    if (!c->draining || c->closing) {
        return;
    }
    if (c->raft.last_stored < raft_last_index(&c->raft) && uv_now(&c->loop) < c->drain_deadline) {
        return;
    }
    c->closing = true;
    uv_timer_stop(&c->timer);
    raft_close(&c->raft, on_raft_closed);
}

static void
on_check(uv_check_t *h)
{
    struct ctl *c = h->data;
    maybe_close(c);
    info_refresh(c);
}

static void
on_timer(uv_timer_t *h)
{
    struct ctl *c = h->data;
    uint64_t now = uv_now(&c->loop);
    struct ctl_op *next;
    for (struct ctl_op *op = c->flight.fl_next; op != &c->flight; op = next) {
        next = op->fl_next;
        if (op->transfer_settling) {
            if (transfer_settled(c, op) || op->deadline <= now) {
                op_answer(op, CTL_EFAIL, 0, "no other server took over leadership in time", 0);
                flight_del(op); /* raft is done with it */
                op_free(op);
            }
        } else if (!op->answered && op->deadline <= now) {
            op_answer(op, CTL_ETIMEOUT, 0, ctl_strerror(CTL_ETIMEOUT), 0);
        }
    }
    maybe_close(c);
}

static void
on_handle_closed(uv_handle_t *h)
{
    (void)h;
}

/* raft is closed: its I/O can go, and what it never answered is answered now. */
static void
on_raft_closed(struct raft *r)
{
    struct ctl *c = r->data;
    c->closed = true;
    raft_uv_close(&c->io);
    transport_release(c);
    while (c->flight.fl_next != &c->flight) {
        struct ctl_op *op = c->flight.fl_next;
        flight_del(op);
        op_answer(op, CTL_ESHUTDOWN, 0, ctl_strerror(CTL_ESHUTDOWN), 0);
        op_free(op);
    }
    info_refresh(c);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->check, on_handle_closed);
}

static void
on_wake(uv_async_t *h)
{
    struct ctl *c = h->data;
    pthread_mutex_lock(&c->mu);
    struct ctl_op *op = c->q_head;
    c->q_head = c->q_tail = NULL;
    bool stop = c->stopping;
    if (stop) {
        c->wake_closed = true;
    }
    pthread_mutex_unlock(&c->mu);
    while (op != NULL) {
        struct ctl_op *next = op->next;
        op->next = NULL;
        if (stop) {
            op_answer(op, CTL_ESHUTDOWN, 0, ctl_strerror(CTL_ESHUTDOWN), 0);
            op_free(op);
        } else {
            op_run(c, op);
        }
        op = next;
    }
    if (stop) {
        uv_close((uv_handle_t *)&c->wake, on_handle_closed);
        c->draining = true;
        c->drain_deadline = uv_now(&c->loop) + CTL_DRAIN_MS;
        maybe_close(c);
    }
}

static void *
ctl_main(void *arg)
{
    struct ctl *c = arg;
    pthread_setname_np(pthread_self(), "ruvio-ctl");
    /* Signals are the main thread's business. Above all SIGPIPE: raft_uv
     * writes to peers' sockets from this thread, and a write to a peer that just
     * went away raises SIGPIPE, which kills the process unless it is blocked
     * (or ignored process-wide): blocked, the write fails with EPIPE. */
    sigset_t all;
    sigfillset(&all);
    /* Faults stay deliverable: blocked, they would kill the process without
     * running the crash handler. */
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGABRT);
    sigdelset(&all, SIGTRAP);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    int rv = uv_loop_close(&c->loop);
    if (rv != 0) {
        log_warn("server %llu: loop closed with handles still open: %s", (unsigned long long)c->id,
                 uv_strerror(rv));
    }
    return NULL;
}

/* ---- start and stop ---- */

static void
on_raft_closed_at_start(struct raft *r)
{
    struct ctl *c = r->data;
    c->closed = true;
    raft_uv_close(&c->io);
    transport_release(c);
}

/* Undo a failed ctl_start on the caller's thread: raft (when initialised) is
 * closed by running the loop here until nothing is left. */
static void
start_unwind(struct ctl *c, bool raft_ready, bool handles)
{
    if (raft_ready) {
        raft_close(&c->raft, on_raft_closed_at_start);
    }
    if (handles) {
        uv_close((uv_handle_t *)&c->wake, on_handle_closed);
        uv_close((uv_handle_t *)&c->timer, on_handle_closed);
        uv_close((uv_handle_t *)&c->check, on_handle_closed);
    }
    uv_run(&c->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&c->loop) != 0) {
        log_warn("server %llu: loop left open after a failed start", (unsigned long long)c->id);
        return; /* leaked rather than freed under a live handle */
    }
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->info_mu);
    rv_free(c);
}

/* After a failed start: try to bind the bus address ourselves, so that the
 * message can say why (", bind 127.0.0.1:7000: Address already in use"). */
static void
bind_probe(const char *address, char *why, size_t whysz)
{
    why[0] = '\0';
    char host[CTL_ADDR_MAX];
    snprintf(host, sizeof(host), "%s", address);
    char *colon = strrchr(host, ':');
    if (colon == NULL) {
        snprintf(why, whysz, ", address %s has no port", address);
        return;
    }
    *colon = '\0';
    struct sockaddr_in sa;
    if (uv_ip4_addr(host, atoi(colon + 1), &sa) != 0) {
        snprintf(why, whysz, ", %s is not an IPv4 address", host);
        return;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(why, whysz, ", bind %s: %s", address, strerror(errno));
    }
    close(fd);
}

static int
opts_check(const struct ctl_opts *o, char *err, size_t errsz)
{
    if (o->id == 0) {
        seterr(err, errsz, "server id must be > 0");
        return RV_EINVAL;
    }
    if (o->address == NULL || o->address[0] == '\0' || strlen(o->address) >= CTL_ADDR_MAX) {
        seterr(err, errsz, "address must be ip:port, under %d bytes", CTL_ADDR_MAX);
        return RV_EINVAL;
    }
    if (o->dir == NULL || o->dir[0] == '\0') {
        seterr(err, errsz, "no data directory");
        return RV_EINVAL;
    }
    if (o->fsm.apply == NULL || o->fsm.snapshot == NULL || o->fsm.restore == NULL) {
        seterr(err, errsz, "the FSM needs apply, snapshot and restore");
        return RV_EINVAL;
    }
    for (size_t i = 0; i < o->n_bootstrap; i++) {
        const struct ctl_server *s = &o->bootstrap[i];
        if (s->id == 0 || s->address == NULL || ctl_role_to_raft(s->role) < 0) {
            seterr(err, errsz, "bootstrap server %zu: bad id, address or role", i);
            return RV_EINVAL;
        }
    }
    return RV_OK;
}

static void
raft_tune(struct ctl *c, const struct ctl_opts *o)
{
    unsigned election = c->election_timeout_ms;
    unsigned heartbeat = o->heartbeat_timeout_ms ? o->heartbeat_timeout_ms : 100;
    raft_set_election_timeout(&c->raft, election);
    raft_set_heartbeat_timeout(&c->raft, heartbeat);
    raft_set_snapshot_threshold(&c->raft, o->snapshot_threshold ? o->snapshot_threshold : 1024);
    raft_set_snapshot_trailing(&c->raft, o->snapshot_trailing ? o->snapshot_trailing : 256);
    /* A server cut off from the rest must not disrupt it with elections it
     * cannot win when it comes back (thesis 9.6). */
    raft_set_pre_vote(&c->raft, true);
    /* A peer that restarts is reconnected well within an election timeout. */
    unsigned retry = election / 4;
    raft_uv_set_connect_retry_delay(&c->io, retry < 50 ? 50 : retry > 1000 ? 1000 : retry);
}

static int
raft_bootstrap_if_fresh(struct ctl *c, const struct ctl_opts *o, char *err, size_t errsz)
{
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    for (size_t i = 0; i < o->n_bootstrap && rv == 0; i++) {
        const struct ctl_server *s = &o->bootstrap[i];
        rv = raft_configuration_add(&conf, s->id, s->address, ctl_role_to_raft(s->role));
    }
    if (rv == 0) {
        rv = raft_bootstrap(&c->raft, &conf);
        if (rv == RAFT_CANTBOOTSTRAP) {
            rv = 0; /* not fresh: the log already holds a configuration */
        } else if (rv != 0) {
            seterr(err, errsz, "bootstrap %s: %s %s", c->raft_dir, raft_strerror(rv),
                   raft_errmsg(&c->raft));
        }
    } else {
        seterr(err, errsz, "bootstrap configuration: %s", raft_strerror(rv));
    }
    raft_configuration_close(&conf);
    return rv;
}

/* The loop, raft_uv's TCP transport and storage, and the raft instance; on
 * failure everything opened here is closed again. */
static int
raft_open(struct ctl *c, const struct ctl_opts *o, char *err, size_t errsz)
{
    int rv;
    if ((rv = uv_loop_init(&c->loop)) != 0) {
        seterr(err, errsz, "uv_loop_init: %s", uv_strerror(rv));
        return RV_EIO;
    }
    c->tls = o->tls_ctx != NULL;
    if (c->tls) {
        rv = ctl_tls_transport_init(&c->transport, &c->loop, o->bind_address, o->tls_ctx,
                                    o->tls_arg);
    } else {
        rv = raft_uv_tcp_init(&c->transport, &c->loop);
    }
    if (rv != 0) {
        seterr(err, errsz, "raft transport: %s", raft_strerror(rv));
        goto fail_loop;
    }
    if (!c->tls && o->bind_address != NULL &&
        (rv = raft_uv_tcp_set_bind_address(&c->transport, o->bind_address)) != 0) {
        seterr(err, errsz, "bind address %s: %s", o->bind_address, raft_strerror(rv));
        goto fail_transport;
    }
    if ((rv = raft_uv_init(&c->io, &c->loop, c->raft_dir, &c->transport)) != 0) {
        seterr(err, errsz, "raft storage %s: %s %s", c->raft_dir, raft_strerror(rv), c->io.errmsg);
        goto fail_transport;
    }
    ctl_fsm_adapter_init(&c->fsm, &o->fsm, o->on_applied, o->hook_arg);
    if ((rv = raft_init(&c->raft, &c->io, &c->fsm.raft, o->id, o->address)) != 0) {
        seterr(err, errsz, "raft init: %s %s", raft_strerror(rv), raft_errmsg(&c->raft));
        raft_uv_close(&c->io);
        goto fail_transport;
    }
    return RV_OK;

fail_transport:
    transport_release(c);
fail_loop:
    uv_loop_close(&c->loop);
    return RV_EIO;
}

int
ctl_start(struct ctl **out, const struct ctl_opts *o, char *err, size_t errsz)
{
    *out = NULL;
    int rv = opts_check(o, err, errsz);
    if (rv != RV_OK) {
        return rv;
    }
    struct ctl *c = rv_calloc(1, sizeof(*c));
    c->id = o->id;
    snprintf(c->address, sizeof(c->address), "%s", o->address);
    c->request_timeout_ms = o->request_timeout_ms ? o->request_timeout_ms : 5000;
    c->stop_timeout_ms = o->stop_timeout_ms ? o->stop_timeout_ms : 5000;
    c->election_timeout_ms = o->election_timeout_ms ? o->election_timeout_ms : 1000;
    c->flight.fl_prev = c->flight.fl_next = &c->flight;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->info_mu, NULL);
    if ((size_t)snprintf(c->raft_dir, sizeof(c->raft_dir), "%s/raft", o->dir) >=
        sizeof(c->raft_dir)) {
        seterr(err, errsz, "data directory path too long");
        rv = RV_EINVAL;
        goto fail_free;
    }
    if (fs_mkdir_p(c->raft_dir) != 0) {
        seterr(err, errsz, "mkdir %s: %s", c->raft_dir, strerror(errno));
        rv = RV_EIO;
        goto fail_free;
    }
    if ((rv = raft_open(c, o, err, errsz)) != RV_OK) {
        goto fail_free;
    }
    c->raft.data = c;
    raft_tune(c, o);
    if (o->n_bootstrap > 0 && (rv = raft_bootstrap_if_fresh(c, o, err, errsz)) != 0) {
        start_unwind(c, true, false);
        return RV_EIO;
    }
    if ((rv = raft_start(&c->raft)) != 0) {
        /* raft 0.15 says only "I/O error" when the bus port cannot be bound. */
        char why[128];
        bind_probe(o->bind_address != NULL ? o->bind_address : o->address, why, sizeof(why));
        seterr(err, errsz, "raft start (%s, %s): %s%s%s%s", c->raft_dir, c->address,
               raft_strerror(rv), raft_errmsg(&c->raft)[0] ? ": " : "", raft_errmsg(&c->raft), why);
        start_unwind(c, true, false);
        return RV_EIO;
    }
    uv_async_init(&c->loop, &c->wake, on_wake);
    c->wake.data = c;
    uv_timer_init(&c->loop, &c->timer);
    c->timer.data = c;
    uv_check_init(&c->loop, &c->check);
    c->check.data = c;
    unsigned tick = c->request_timeout_ms / 10;
    uv_timer_start(&c->timer, on_timer, tick, tick < 10 ? 10 : tick);
    uv_check_start(&c->check, on_check);
    info_refresh(c);
    if ((rv = pthread_create(&c->thread, NULL, ctl_main, c)) != 0) {
        seterr(err, errsz, "pthread_create: %s", strerror(rv));
        start_unwind(c, true, true);
        return RV_EIO;
    }
    log_notice("server %llu at %s: raft log in %s", (unsigned long long)c->id, c->address,
               c->raft_dir);
    *out = c;
    return RV_OK;

fail_free:
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->info_mu);
    rv_free(c);
    return rv;
}

int
ctl_stop(struct ctl *c)
{
    if (c == NULL) {
        return RV_OK;
    }
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    if (!c->wake_closed) {
        uv_async_send(&c->wake);
    }
    pthread_mutex_unlock(&c->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += c->stop_timeout_ms / 1000;
    ts.tv_nsec += (long)(c->stop_timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    int rv = pthread_timedjoin_np(c->thread, NULL, &ts);
    if (rv != 0) {
        log_warn("server %llu: control thread did not stop within %u ms (%s); left running",
                 (unsigned long long)c->id, c->stop_timeout_ms, strerror(rv));
        pthread_detach(c->thread);
        return RV_ESTATE;
    }
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->info_mu);
    rv_free(c);
    return RV_OK;
}

/* ---- requests from any thread ---- */

static int
submit(struct ctl *c, struct ctl_op *op)
{
    pthread_mutex_lock(&c->mu);
    if (c->stopping) {
        pthread_mutex_unlock(&c->mu);
        op_free(op);
        return RV_ESTATE;
    }
    if (c->q_tail != NULL) {
        c->q_tail->next = op;
    } else {
        c->q_head = op;
    }
    c->q_tail = op;
    uv_async_send(&c->wake);
    pthread_mutex_unlock(&c->mu);
    return RV_OK;
}

static struct ctl_op *
op_new(struct ctl *c, int kind, ctl_done_fn done, void *arg)
{
    struct ctl_op *op = rv_calloc(1, sizeof(*op));
    op->c = c;
    op->kind = kind;
    op->done = done;
    op->arg = arg;
    return op;
}

int
ctl_propose(struct ctl *c, const void *entry, size_t len, ctl_done_fn done, void *arg)
{
    if (done == NULL || entry == NULL || len == 0 || len > CTL_ENTRY_MAX) {
        return RV_EINVAL;
    }
    /* raft_uv stores an entry's bytes as they are but reads them back in
     * 8-byte words (libraft 0.15 asserts len % 8 == 0 only in debug builds): an
     * entry of another length is written fine and found corrupt at the next
     * start. So the FSM's bytes travel framed: their length, then them, then
     * zeros up to a multiple of 8 (ctl_fsm.c takes the frame off). */
    size_t framed = (CTL_FRAME_HDR + len + 7) & ~(size_t)7;
    uint8_t *copy = raft_malloc(framed); /* raft_apply takes memory from raft's allocator */
    if (copy == NULL) {
        return RV_ENOMEM;
    }
    ctl_frame_put(copy, entry, len, framed);
    struct ctl_op *op = op_new(c, OP_PROPOSE, done, arg);
    op->entry.base = copy;
    op->entry.len = framed;
    return submit(c, op);
}

int
ctl_add(struct ctl *c, uint64_t id, const char *address, int role, ctl_done_fn done, void *arg)
{
    if (done == NULL || id == 0 || address == NULL || address[0] == '\0' ||
        strlen(address) >= CTL_ADDR_MAX || ctl_role_to_raft(role) < 0) {
        return RV_EINVAL;
    }
    struct ctl_op *op = op_new(c, OP_ADD, done, arg);
    op->id = id;
    op->role = ctl_role_to_raft(role);
    snprintf(op->address, sizeof(op->address), "%s", address);
    return submit(c, op);
}

int
ctl_assign(struct ctl *c, uint64_t id, int role, ctl_done_fn done, void *arg)
{
    if (done == NULL || id == 0 || ctl_role_to_raft(role) < 0) {
        return RV_EINVAL;
    }
    struct ctl_op *op = op_new(c, OP_ASSIGN, done, arg);
    op->id = id;
    op->role = ctl_role_to_raft(role);
    return submit(c, op);
}

int
ctl_remove(struct ctl *c, uint64_t id, ctl_done_fn done, void *arg)
{
    if (done == NULL || id == 0) {
        return RV_EINVAL;
    }
    struct ctl_op *op = op_new(c, OP_REMOVE, done, arg);
    op->id = id;
    return submit(c, op);
}

int
ctl_transfer(struct ctl *c, uint64_t id, ctl_done_fn done, void *arg)
{
    if (done == NULL) {
        return RV_EINVAL;
    }
    struct ctl_op *op = op_new(c, OP_TRANSFER, done, arg);
    op->id = id;
    return submit(c, op);
}

void
ctl_info(struct ctl *c, struct ctl_info *out)
{
    pthread_mutex_lock(&c->info_mu);
    *out = c->info;
    pthread_mutex_unlock(&c->info_mu);
}
