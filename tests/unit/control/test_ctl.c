/* tests/unit/control/test_ctl.c: real ctl instances (threads, libuv loops, raft_uv
 * on disk, TCP on 127.0.0.1) in one process. Ports are picked free by the test,
 * data directories live under a fresh /tmp/rv_ctl_* removed at the end. Every
 * wait is a condition polled every few milliseconds under a hard deadline. */
#include "control/ctl.h"
#include "toy_fsm.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define N 3
#define WAIT_MS 20000      /* hard bound on any wait */
#define ELECTION_MS 400    /* raft randomises it to 400..800 ms */
#define NEW_LEADER_MS 5000 /* the bound we state for a re-election after the leader stops */

struct node {
    struct ctl *c;
    struct toy toy;
    uint64_t id;
    char addr[CTL_ADDR_MAX];
    char dir[PATH_MAX];
};

struct world {
    char root[64];
    struct node n[N + 1];
    struct ctl_server boot[N];
};

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
pause_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* Poll cond every 5 ms until it holds or ms pass. */
static bool
wait_until(bool (*cond)(void *), void *arg, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    while (!cond(arg)) {
        if (now_ms() > end) {
            return false;
        }
        pause_ms(5);
    }
    return true;
}

static unsigned short
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t len = sizeof(sa);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* The world of the running test, torn down by cleanup() even when an
 * assertion ended the test early. */
static struct world *current;

static void
world_init(struct world *w, unsigned nodes)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->root, sizeof(w->root), "/tmp/rv_ctl_XXXXXX");
    cr_assert_not_null(mkdtemp(w->root));
    current = w;
    for (unsigned i = 0; i < nodes; i++) {
        struct node *n = &w->n[i];
        n->id = i + 1;
        snprintf(n->addr, sizeof(n->addr), "127.0.0.1:%u", free_port());
        snprintf(n->dir, sizeof(n->dir), "%s/node%u", w->root, i + 1);
        if (i < N) {
            w->boot[i] = (struct ctl_server){ .id = n->id, .address = n->addr, .role = CTL_VOTER };
        }
    }
}

static struct ctl_opts
node_opts(struct node *n, const struct ctl_server *boot, size_t nboot)
{
    struct ctl_opts o = {
        .id = n->id,
        .address = n->addr,
        .dir = n->dir,
        .bootstrap = boot,
        .n_bootstrap = nboot,
        .fsm = toy_fsm(&n->toy),
        .on_applied = toy_on_applied,
        .hook_arg = &n->toy,
        .election_timeout_ms = ELECTION_MS,
        .heartbeat_timeout_ms = 50,
        .request_timeout_ms = 5000,
        .snapshot_threshold = 64,
        .snapshot_trailing = 16,
        .stop_timeout_ms = 5000,
    };
    return o;
}

static void
node_start(struct node *n, const struct ctl_server *boot, size_t nboot)
{
    char err[256] = "";
    toy_init(&n->toy);
    struct ctl_opts o = node_opts(n, boot, nboot);
    int rv = ctl_start(&n->c, &o, err, sizeof(err));
    cr_assert_eq(rv, RV_OK, "ctl_start %s: %s", n->addr, err);
}

static void
node_stop(struct node *n)
{
    if (n->c != NULL) {
        uint64_t t0 = now_ms();
        cr_assert_eq(ctl_stop(n->c), RV_OK);
        cr_assert_lt(now_ms() - t0, 5000, "ctl_stop took too long");
        n->c = NULL;
        toy_deinit(&n->toy);
    }
}

static void
world_down(struct world *w)
{
    for (unsigned i = 0; i <= N; i++) {
        node_stop(&w->n[i]);
    }
    current = NULL;
    nftw(w->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    cr_assert_neq(access(w->root, F_OK), 0, "temp dir left behind");
}

static void
cleanup(void)
{
    struct world *w = current;
    if (w == NULL) {
        return;
    }
    current = NULL;
    for (unsigned i = 0; i <= N; i++) {
        ctl_stop(w->n[i].c);
        w->n[i].c = NULL;
    }
    nftw(w->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Index of the node that says it leads (among running ones), or -1. */
static int
leader_of(struct world *w)
{
    for (unsigned i = 0; i <= N; i++) {
        if (w->n[i].c != NULL) {
            struct ctl_info in;
            ctl_info(w->n[i].c, &in);
            if (in.state == CTL_LEADER) {
                return (int)i;
            }
        }
    }
    return -1;
}

static bool
has_leader(void *arg)
{
    return leader_of(arg) >= 0;
}

/* ---- a synchronous proposal on top of the callback ---- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    struct ctl_result res;
    char msg[CTL_MSG_MAX];
    char leader[CTL_ADDR_MAX];
    bool on_ctl_thread;
};

static void
waiter_done(void *arg, const struct ctl_result *r)
{
    struct waiter *wt = arg;
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    pthread_mutex_lock(&wt->mu);
    wt->res = *r;
    snprintf(wt->msg, sizeof(wt->msg), "%s", r->msg);
    snprintf(wt->leader, sizeof(wt->leader), "%s", r->leader_address);
    wt->res.msg = wt->msg;
    wt->res.leader_address = wt->leader;
    wt->on_ctl_thread = strcmp(name, "ruvio-ctl") == 0;
    wt->done = true;
    pthread_cond_signal(&wt->cv);
    pthread_mutex_unlock(&wt->mu);
}

/* Run one request (submit calls ctl_propose & co with waiter_done) and wait for
 * its answer. Returns the ctl_err, -1 when submit refused it, -2 when it was
 * never answered and -3 when it was answered off the control thread. No
 * Criterion assertion here: proposer threads call it too, and an assertion may
 * only fail on the test's own thread. */
static int
sync_req_raw(struct waiter *wt, int (*submit)(void *), void *arg)
{
    memset(wt, 0, sizeof(*wt));
    pthread_mutex_init(&wt->mu, NULL);
    pthread_cond_init(&wt->cv, NULL);
    int rv = submit(arg);
    if (rv != RV_OK) {
        return -1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&wt->mu);
    while (!wt->done) {
        if (pthread_cond_timedwait(&wt->cv, &wt->mu, &ts) == ETIMEDOUT) {
            break;
        }
    }
    bool done = wt->done;
    pthread_mutex_unlock(&wt->mu);
    if (!done) {
        return -2;
    }
    return wt->on_ctl_thread ? wt->res.err : -3;
}

static int
sync_req(struct waiter *wt, int (*submit)(void *), void *arg)
{
    int err = sync_req_raw(wt, submit, arg);
    cr_assert_neq(err, -2, "a request was never answered");
    cr_assert_neq(err, -3, "done ran off the control thread");
    return err;
}

struct propose_arg {
    struct ctl *c;
    uint64_t v;
    struct waiter *wt;
};

static int
submit_propose(void *arg)
{
    struct propose_arg *p = arg;
    unsigned char e[8];
    toy_put_u64(e, p->v);
    return ctl_propose(p->c, e, sizeof(e), waiter_done, p->wt);
}

static int
propose_sync_raw(struct ctl *c, uint64_t v, struct waiter *wt)
{
    struct propose_arg p = { .c = c, .v = v, .wt = wt };
    return sync_req_raw(wt, submit_propose, &p);
}

static int
propose_sync(struct ctl *c, uint64_t v, struct waiter *wt)
{
    struct propose_arg p = { .c = c, .v = v, .wt = wt };
    return sync_req(wt, submit_propose, &p);
}

/* Propose v to whoever leads, retrying while leadership moves. Counts answers
 * that leave the outcome unknown (the entry may then be in the log twice).
 * Returns NULL, or what went wrong (written into fail). */
static const char *
propose_to_leader_raw(struct world *w, uint64_t v, unsigned *ambiguous, char *fail, size_t failsz)
{
    uint64_t end = now_ms() + WAIT_MS;
    struct waiter wt;
    for (;;) {
        if (now_ms() > end) {
            snprintf(fail, failsz, "value %llu never committed", (unsigned long long)v);
            return fail;
        }
        int l = leader_of(w);
        if (l < 0) {
            pause_ms(5);
            continue;
        }
        int err = propose_sync_raw(w->n[l].c, v, &wt);
        if (err == CTL_OK && wt.res.code == 0 && wt.res.index > 0) {
            return NULL;
        }
        if (err == CTL_ETIMEOUT || err == CTL_ELOST) {
            __atomic_add_fetch(ambiguous, 1, __ATOMIC_RELAXED);
        } else if (err != CTL_ENOTLEADER) {
            snprintf(fail, failsz, "propose %llu: err %d code %d: %s", (unsigned long long)v, err,
                     wt.res.code, wt.msg);
            return fail;
        }
    }
}

static void
propose_to_leader(struct world *w, uint64_t v, unsigned *ambiguous)
{
    char fail[512];
    const char *why = propose_to_leader_raw(w, v, ambiguous, fail, sizeof(fail));
    cr_assert_null(why, "%s", why);
}

struct proposer {
    pthread_t t;
    struct world *w;
    uint64_t base;
    unsigned count;
    unsigned *ambiguous;
    char fail[512];
    bool failed;
};

static void *
proposer_main(void *arg)
{
    struct proposer *p = arg;
    for (unsigned i = 0; i < p->count && !p->failed; i++) {
        p->failed = propose_to_leader_raw(p->w, p->base + i, p->ambiguous, p->fail,
                                          sizeof(p->fail)) != NULL;
    }
    return NULL;
}

struct converged {
    struct world *w;
    size_t len;
};

/* Every running node's list has len entries and all lists are equal. */
static bool
all_converged(void *arg)
{
    struct converged *cv = arg;
    struct node *ref = NULL;
    for (unsigned i = 0; i <= N; i++) {
        struct node *n = &cv->w->n[i];
        if (n->c == NULL) {
            continue;
        }
        if (toy_len(&n->toy) != cv->len) {
            return false;
        }
        if (ref != NULL && !toy_equal(&n->toy, &ref->toy)) {
            return false;
        }
        ref = n;
    }
    return true;
}

Test(ctl, three_servers_elect_commit_fail_over_and_catch_up, .timeout = 60, .fini = cleanup)
{
    static struct world w; /* cleanup() may reach it after the test unwound */
    world_init(&w, N);
    for (unsigned i = 0; i < N; i++) {
        node_start(&w.n[i], w.boot, N);
    }
    cr_assert(wait_until(has_leader, &w, WAIT_MS), "no leader elected");

    /* 200 proposals from 4 threads. */
    unsigned ambiguous = 0;
    struct proposer ps[4];
    for (unsigned t = 0; t < 4; t++) {
        ps[t] = (struct proposer){
            .w = &w, .base = 1000 * (t + 1), .count = 50, .ambiguous = &ambiguous
        };
        cr_assert_eq(pthread_create(&ps[t].t, NULL, proposer_main, &ps[t]), 0);
    }
    for (unsigned t = 0; t < 4; t++) {
        pthread_join(ps[t].t, NULL);
    }
    for (unsigned t = 0; t < 4; t++) {
        cr_assert(!ps[t].failed, "proposer %u: %s", t, ps[t].fail);
    }
    struct converged cv = { .w = &w, .len = 200 + ambiguous };
    cr_assert(wait_until(all_converged, &cv, WAIT_MS), "the FSMs did not converge");
    for (unsigned t = 0; t < 4; t++) {
        for (unsigned i = 0; i < 50; i++) {
            cr_assert(toy_has(&w.n[0].toy, ps[t].base + i));
        }
    }
    int l = leader_of(&w);
    cr_assert_geq(l, 0);
    for (unsigned i = 0; i < N; i++) {
        cr_assert_geq(__atomic_load_n(&w.n[i].toy.applied_hook, __ATOMIC_RELAXED), 200);
    }
    struct ctl_info in;
    ctl_info(w.n[l].c, &in);
    cr_assert_eq(in.id, w.n[l].id);
    cr_assert_eq(in.leader_id, w.n[l].id);
    cr_assert_str_eq(in.leader_address, w.n[l].addr);
    cr_assert_eq(in.n_servers, N);
    cr_assert_geq(in.commit_index, 200);
    cr_assert_geq(in.term, 1);

    /* A follower redirects to the leader. */
    unsigned f = (unsigned)(l + 1) % N;
    struct waiter wt;
    cr_assert_eq(propose_sync(w.n[f].c, 5, &wt), CTL_ENOTLEADER);
    cr_assert_eq(wt.res.leader_id, w.n[l].id);
    cr_assert_str_eq(wt.res.leader_address, w.n[l].addr);
    cr_assert_eq(ctl_propose(w.n[f].c, "", 0, waiter_done, &wt), RV_EINVAL);

    /* The leader stops; the other two elect a new one within the bound. */
    uint64_t t0 = now_ms();
    node_stop(&w.n[l]);
    cr_assert(wait_until(has_leader, &w, NEW_LEADER_MS), "no new leader within %d ms",
              NEW_LEADER_MS);
    uint64_t took = now_ms() - t0;
    cr_log_info("new leader after %llu ms", (unsigned long long)took);
    fprintf(stderr, "ctl: a new leader %llu ms after the old one stopped\n",
            (unsigned long long)took);
    for (unsigned i = 0; i < 20; i++) {
        propose_to_leader(&w, 9000 + i, &ambiguous);
    }
    cv.len = 220 + ambiguous;
    cr_assert(wait_until(all_converged, &cv, WAIT_MS), "the two left did not converge");

    /* The stopped server restarts from its directory and catches up. */
    node_start(&w.n[l], w.boot, N);
    cr_assert(wait_until(all_converged, &cv, WAIT_MS), "the restarted server did not catch up");
    cr_assert_gt(w.n[l].toy.restores, 0, "no snapshot was taken and reloaded");
    world_down(&w);
}

struct member_arg {
    struct ctl *c;
    uint64_t id;
    const char *addr;
    int role;
    struct waiter *wt;
};

static int
submit_add(void *arg)
{
    struct member_arg *m = arg;
    return ctl_add(m->c, m->id, m->addr, m->role, waiter_done, m->wt);
}

static int
submit_assign(void *arg)
{
    struct member_arg *m = arg;
    return ctl_assign(m->c, m->id, m->role, waiter_done, m->wt);
}

static int
submit_remove(void *arg)
{
    struct member_arg *m = arg;
    return ctl_remove(m->c, m->id, waiter_done, m->wt);
}

static int
submit_transfer(void *arg)
{
    struct member_arg *m = arg;
    return ctl_transfer(m->c, m->id, waiter_done, m->wt);
}

struct leads {
    struct world *w;
    unsigned i;
};

static bool
node_leads(void *arg)
{
    struct leads *ld = arg;
    return leader_of(ld->w) == (int)ld->i;
}

/* Connect to a bus address and send junk: random bytes, then a handshake-like
 * preamble (protocol 1, an id, an absurd address length). raft_uv mallocs the
 * length a peer announces: 1 TiB fails and the connection is dropped, but under
 * AddressSanitizer a request that large aborts the process, so the sanitized
 * build announces 1 MiB instead. (A peer can thus make raft_uv reserve memory:
 * the bus port must be reachable by cluster members only.) */
#if defined(__SANITIZE_ADDRESS__)
#define JUNK_ADDRESS_LEN (1ull << 20)
#else
#define JUNK_ADDRESS_LEN (1ull << 40)
#endif
static void
junk_to(const char *addr)
{
    for (int round = 0; round < 2; round++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        cr_assert_geq(fd, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET };
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = htons((unsigned short)atoi(strchr(addr, ':') + 1));
        cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
        unsigned char buf[4096];
        unsigned x = 12345 + (unsigned)round;
        for (size_t i = 0; i < sizeof(buf); i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (unsigned char)(x >> 16);
        }
        if (round == 1) {
            toy_put_u64(buf, 1);      /* protocol */
            toy_put_u64(buf + 8, 42); /* server id */
            toy_put_u64(buf + 16, JUNK_ADDRESS_LEN);
        }
        ssize_t n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
        (void)n;
        close(fd);
    }
}

/* The node's own configuration makes it a voter. */
static bool
knows_itself_voter(void *arg)
{
    struct node *n = arg;
    struct ctl_info in;
    ctl_info(n->c, &in);
    for (unsigned i = 0; i < in.n_servers && i < CTL_INFO_SERVERS; i++) {
        if (in.servers[i].id == n->id) {
            return in.servers[i].role == CTL_VOTER;
        }
    }
    return false;
}

Test(ctl, membership_join_as_learner_promote_transfer_remove, .timeout = 60, .fini = cleanup)
{
    static struct world w; /* cleanup() may reach it after the test unwound */
    world_init(&w, N + 1);
    for (unsigned i = 0; i < N; i++) {
        node_start(&w.n[i], w.boot, N);
    }
    cr_assert(wait_until(has_leader, &w, WAIT_MS));
    unsigned ambiguous = 0;
    for (unsigned i = 0; i < 10; i++) {
        propose_to_leader(&w, 100 + i, &ambiguous);
    }
    /* The fourth server starts outside the configuration and waits. */
    struct node *j = &w.n[N];
    node_start(j, NULL, 0);
    struct ctl_info in;
    ctl_info(j->c, &in);
    cr_assert_eq(in.n_servers, 0);
    cr_assert_neq(in.state, CTL_LEADER);

    int l = leader_of(&w);
    cr_assert_geq(l, 0);
    struct waiter wt;
    struct member_arg m = {
        .c = w.n[l].c, .id = j->id, .addr = j->addr, .role = CTL_LEARNER, .wt = &wt
    };
    cr_assert_eq(sync_req(&wt, submit_add, &m), CTL_OK, "add: %s", wt.msg);
    struct converged cv = { .w = &w, .len = 10 + ambiguous };
    cr_assert(wait_until(all_converged, &cv, WAIT_MS), "the learner did not catch up");
    ctl_info(w.n[l].c, &in);
    cr_assert_eq(in.n_servers, N + 1);
    cr_assert_eq(in.servers[N].id, j->id);
    cr_assert_eq(in.servers[N].role, CTL_LEARNER);
    /* Adding it again is refused. */
    cr_assert_eq(sync_req(&wt, submit_add, &m), CTL_EINVAL);

    /* Promote it to voter, then hand it the leadership. */
    m.role = CTL_VOTER;
    cr_assert_eq(sync_req(&wt, submit_assign, &m), CTL_OK, "assign: %s", wt.msg);
    /* Committed on the leader is not yet known to the new voter: until its own
     * log holds the change, it ignores the leader's TimeoutNow and the transfer
     * fails. */
    cr_assert(wait_until(knows_itself_voter, j, WAIT_MS), "the new voter never learned its role");
    cr_assert_eq(sync_req(&wt, submit_transfer, &m), CTL_OK, "transfer: %s", wt.msg);
    struct leads ld = { .w = &w, .i = N };
    cr_assert(wait_until(node_leads, &ld, WAIT_MS), "the new voter does not lead");
    propose_to_leader(&w, 777, &ambiguous);

    /* Remove the old leader from the configuration. */
    struct member_arg r = { .c = j->c, .id = w.n[l].id, .wt = &wt };
    cr_assert_eq(sync_req(&wt, submit_remove, &r), CTL_OK, "remove: %s", wt.msg);
    ctl_info(j->c, &in);
    cr_assert_eq(in.n_servers, N);
    for (unsigned i = 0; i < in.n_servers; i++) {
        cr_assert_neq(in.servers[i].id, w.n[l].id);
    }
    /* Peers that speak nonsense on the bus are dropped; nobody stops. */
    for (unsigned i = 0; i <= N; i++) {
        if (w.n[i].c != NULL) {
            junk_to(w.n[i].addr);
        }
    }
    propose_to_leader(&w, 778, &ambiguous);

    /* Membership calls on a follower redirect. */
    unsigned f = (unsigned)(l + 1) % N;
    struct member_arg bad = {
        .c = w.n[f].c, .id = 99, .addr = "127.0.0.1:1", .role = CTL_VOTER, .wt = &wt
    };
    cr_assert_eq(sync_req(&wt, submit_add, &bad), CTL_ENOTLEADER);
    cr_assert_eq(wt.res.leader_id, j->id);
    world_down(&w);
}

static bool
one_answered_waiter(void *arg)
{
    struct waiter *wt = arg;
    pthread_mutex_lock(&wt->mu);
    bool done = wt->done;
    pthread_mutex_unlock(&wt->mu);
    return done;
}

Test(ctl, start_errors_are_returned_with_a_message, .timeout = 60, .fini = cleanup)
{
    static struct world w; /* cleanup() may reach it after the test unwound */
    world_init(&w, 1);
    struct node *n = &w.n[0];
    char err[256] = "";
    struct ctl *c = NULL;
    toy_init(&n->toy);
    struct ctl_opts o = node_opts(n, w.boot, 1);
    o.id = 0;
    cr_assert_eq(ctl_start(&c, &o, err, sizeof(err)), RV_EINVAL);
    cr_assert_null(c);
    cr_assert_str_eq(err, "server id must be > 0");
    o = node_opts(n, w.boot, 1);
    o.fsm.restore = NULL;
    cr_assert_eq(ctl_start(&c, &o, err, sizeof(err)), RV_EINVAL);

    /* The data directory is a file. */
    FILE *fp = fopen(n->dir, "w");
    cr_assert_not_null(fp);
    fclose(fp);
    o = node_opts(n, w.boot, 1);
    cr_assert_eq(ctl_start(&c, &o, err, sizeof(err)), RV_EIO);
    cr_assert_null(c);
    cr_assert_not_null(strstr(err, "Not a directory"), "%s", err);
    cr_assert_eq(unlink(n->dir), 0);

    /* The bus port is taken. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((unsigned short)atoi(strchr(n->addr, ':') + 1));
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(fd, 1), 0);
    o = node_opts(n, w.boot, 1);
    err[0] = '\0';
    cr_assert_neq(ctl_start(&c, &o, err, sizeof(err)), RV_OK);
    cr_assert_null(c);
    cr_assert_neq(err[0], '\0');
    fprintf(stderr, "ctl: port taken -> %s\n", err);
    close(fd);

    /* A single voter elects itself; it then starts again from its directory. */
    cr_assert_eq(ctl_start(&n->c, &o, err, sizeof(err)), RV_OK, "%s", err);
    cr_assert(wait_until(has_leader, &w, WAIT_MS));
    struct waiter wt;
    cr_assert_eq(propose_sync(n->c, 1, &wt), CTL_OK);
    cr_assert_eq(propose_sync(n->c, TOY_REFUSE | 3, &wt), CTL_OK);
    cr_assert_eq(wt.res.code, 2, "the FSM's outcome reaches the proposer");
    cr_assert_str_eq(wt.res.msg, "refused 3");
    /* The largest entry commits; one byte more is refused at the call. */
    static unsigned char big[CTL_ENTRY_MAX + 1];
    cr_assert_eq(ctl_propose(n->c, big, sizeof(big), waiter_done, &wt), RV_EINVAL);
    memset(&wt, 0, sizeof(wt));
    pthread_mutex_init(&wt.mu, NULL);
    pthread_cond_init(&wt.cv, NULL);
    cr_assert_eq(ctl_propose(n->c, big, CTL_ENTRY_MAX, waiter_done, &wt), RV_OK);
    cr_assert(wait_until(one_answered_waiter, &wt, WAIT_MS));
    cr_assert_eq(wt.res.err, CTL_OK, "%s", wt.msg);
    cr_assert_eq(wt.res.code, 1, "the toy FSM calls it malformed: %s", wt.msg);
    node_stop(n);
    node_start(n, w.boot, 1);
    cr_assert(wait_until(has_leader, &w, WAIT_MS));
    struct converged cv = { .w = &w, .len = 1 };
    cr_assert(wait_until(all_converged, &cv, WAIT_MS), "the log was not replayed");

    /* Garbage in the metadata files is an error with a message, not a crash. */
    node_stop(n);
    for (int m = 1; m <= 2; m++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/raft/metadata%d", n->dir, m);
        FILE *mf = fopen(path, "w");
        cr_assert_not_null(mf);
        fputs("this is not raft metadata, not at all", mf);
        fclose(mf);
    }
    toy_init(&n->toy);
    o = node_opts(n, w.boot, 1);
    err[0] = '\0';
    cr_assert_neq(ctl_start(&c, &o, err, sizeof(err)), RV_OK);
    cr_assert_null(c);
    cr_assert_neq(err[0], '\0');
    fprintf(stderr, "ctl: corrupt metadata -> %s\n", err);
    toy_deinit(&n->toy);
    world_down(&w);
}

/* ---- answers when nothing can commit, and at shutdown ---- */

struct counted {
    int answers;
    int err;
};

static void
counted_done(void *arg, const struct ctl_result *r)
{
    struct counted *k = arg;
    __atomic_store_n(&k->err, r->err, __ATOMIC_RELAXED);
    __atomic_add_fetch(&k->answers, 1, __ATOMIC_RELEASE);
}

struct all_answered {
    struct counted *k;
    unsigned n;
};

static bool
all_answered(void *arg)
{
    struct all_answered *a = arg;
    for (unsigned i = 0; i < a->n; i++) {
        if (__atomic_load_n(&a->k[i].answers, __ATOMIC_ACQUIRE) == 0) {
            return false;
        }
    }
    return true;
}


Test(ctl, timeout_without_quorum_and_answers_at_shutdown, .timeout = 60, .fini = cleanup)
{
    static struct world w; /* cleanup() may reach it after the test unwound */
    world_init(&w, N);
    for (unsigned i = 0; i < N; i++) {
        char err[256] = "";
        toy_init(&w.n[i].toy);
        struct ctl_opts o = node_opts(&w.n[i], w.boot, N);
        o.request_timeout_ms = 100;
        o.election_timeout_ms = 1000; /* the leader keeps leading well past the timeout */
        cr_assert_eq(ctl_start(&w.n[i].c, &o, err, sizeof(err)), RV_OK, "%s", err);
    }
    cr_assert(wait_until(has_leader, &w, WAIT_MS));
    int l = leader_of(&w);
    struct waiter wt;

    /* Both followers stop: nothing can commit, the proposal times out. */
    for (unsigned i = 0; i < N; i++) {
        if ((int)i != l) {
            node_stop(&w.n[i]);
        }
    }
    uint64_t t0 = now_ms();
    cr_assert_eq(propose_sync(w.n[l].c, 77, &wt), CTL_ETIMEOUT, "%s", wt.msg);
    cr_assert_lt(now_ms() - t0, 1000);
    cr_assert(!toy_has(&w.n[l].toy, 77));

    /* Requests queued or in flight when the server stops are each answered
     * once: shutting down (or not leader, had it stepped down). */
    static struct counted k[20];
    for (unsigned i = 0; i < 20; i++) {
        unsigned char e[8];
        toy_put_u64(e, 500 + i);
        cr_assert_eq(ctl_propose(w.n[l].c, e, sizeof(e), counted_done, &k[i]), RV_OK);
    }
    node_stop(&w.n[l]);
    struct all_answered aa = { .k = k, .n = 20 };
    cr_assert(all_answered(&aa), "ctl_stop returned before answering every request");
    for (unsigned i = 0; i < 20; i++) {
        cr_assert_eq(k[i].answers, 1);
        cr_assert(k[i].err == CTL_ESHUTDOWN || k[i].err == CTL_ENOTLEADER || k[i].err == CTL_ELOST,
                  "answered %s", ctl_strerror(k[i].err));
    }
    world_down(&w);
}

/* ---- one server, restarted from its directory: nothing to catch up from ---- */

struct odd_arg {
    struct ctl *c;
    size_t len;
    struct waiter *wt;
};

static int
submit_odd(void *arg)
{
    struct odd_arg *p = arg;
    unsigned char e[16] = { 0 };
    return ctl_propose(p->c, e, p->len, waiter_done, p->wt);
}

/* 1..10, the 8-byte zero entry (the toy takes it: value 0), 11..20 */
#define ODD_VALUES 21

static bool
applied_all(void *arg)
{
    struct node *n = arg;
    struct ctl_info in;
    ctl_info(n->c, &in);
    return toy_len(&n->toy) == ODD_VALUES && in.state == CTL_LEADER;
}

/* Entries of every length from 1 to 16 bytes and a log of them that outlives
 * the process: raft_uv reads entries back in 8-byte words, and an entry whose
 * length was not a multiple of 8 used to make the next start find the segment
 * corrupt and drop it (a lone server has no peer to catch up from). */
Test(ctl, one_server_restarts_with_its_whole_log, .timeout = 60, .fini = cleanup)
{
    static struct world w;
    struct waiter wt;
    world_init(&w, 1);
    struct node *n = &w.n[0];
    node_start(n, w.boot, 1);
    cr_assert(wait_until(has_leader, &w, WAIT_MS), "no leader");
    for (uint64_t v = 1; v <= 10; v++) {
        cr_assert_eq(propose_sync(n->c, v, &wt), CTL_OK);
    }
    for (size_t len = 1; len <= 16; len++) {
        struct odd_arg p = { .c = n->c, .len = len, .wt = &wt };
        cr_assert_eq(sync_req(&wt, submit_odd, &p), CTL_OK);
        cr_assert_eq(wt.res.code, len == 8 ? 0 : 1, "entry of %zu bytes",
                     len); /* the toy's answer */
    }
    for (uint64_t v = 11; v <= 20; v++) {
        cr_assert_eq(propose_sync(n->c, v, &wt), CTL_OK);
    }
    struct ctl_info before;
    ctl_info(n->c, &before);
    node_stop(n);
    node_start(n, w.boot, 1);
    cr_assert(wait_until(applied_all, n, WAIT_MS), "the log did not come back: %zu values",
              toy_len(&n->toy));
    struct ctl_info after;
    ctl_info(n->c, &after);
    cr_assert_geq(after.last_index, before.last_index, "entries were dropped at the restart");
    size_t got;
    uint64_t *v = toy_copy(&n->toy, &got);
    for (size_t i = 0; i < ODD_VALUES; i++) {
        uint64_t want = i < 10 ? i + 1 : i == 10 ? 0 : i;
        cr_assert_eq(v[i], want, "value %zu", i);
    }
    rv_free(v);
    world_down(&w);
}
