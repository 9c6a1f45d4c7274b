/* tests/unit/control/test_fsm.c: the FSM adapter under libraft's deterministic
 * in-memory cluster (raft/fixture.h): simulated time, network and disk, so
 * elections, partitions and crashes replay identically on every run. Each
 * server's FSM is the adapter of control/ctl_int.h around a toy list, the same
 * raft_fsm callbacks a real ctl hands to raft_uv. */
#include "control/ctl_int.h"
#include "toy_fsm.h"

#include <criterion/criterion.h>
#include <raft/fixture.h>

#define N 3
#define STEP_MS 20000 /* simulated milliseconds any wait may take */

struct cluster {
    struct raft_fixture f;
    struct toy toys[N];
    struct ctl_fsm_adapter ad[N];
};

/* A proposal made straight through raft_apply, as ctl.c makes them. */
struct prop {
    struct raft_apply req;
    bool done;
    int status;
    int code;
    char msg[CTL_MSG_MAX];
    raft_index index;
};

static void
cluster_up(struct cluster *cl)
{
    struct raft_configuration conf;
    /* raft_fixture_initialize leaves fields such as leader_id as they were: a
     * fixture on the stack must be zeroed first or it "has a leader" at once. */
    memset(cl, 0, sizeof(*cl));
    cr_assert_eq(raft_fixture_initialize(&cl->f), 0);
    for (unsigned i = 0; i < N; i++) {
        toy_init(&cl->toys[i]);
        struct ctl_fsm fsm = toy_fsm(&cl->toys[i]);
        ctl_fsm_adapter_init(&cl->ad[i], &fsm, toy_on_applied, &cl->toys[i]);
        cr_assert_eq(raft_fixture_grow(&cl->f, &cl->ad[i].raft), 0);
        cl->f.servers[i].tracer.enabled = false; /* raft's start-up trace on stderr */
    }
    cr_assert_eq(raft_fixture_configuration(&cl->f, N, &conf), 0);
    cr_assert_eq(raft_fixture_bootstrap(&cl->f, &conf), 0);
    raft_configuration_close(&conf);
    cr_assert_eq(raft_fixture_start(&cl->f), 0);
    cr_assert(raft_fixture_step_until_has_leader(&cl->f, STEP_MS), "no leader elected");
}

static void
cluster_down(struct cluster *cl)
{
    raft_fixture_close(&cl->f);
    for (unsigned i = 0; i < N; i++) {
        toy_deinit(&cl->toys[i]);
    }
}

static void
prop_cb(struct raft_apply *req, int status, void *result)
{
    struct prop *p = req->data;
    p->done = true;
    p->status = status;
    p->index = req->index;
    if (status == 0) {
        const struct ctl_outcome *o = result;
        p->code = o->code;
        snprintf(p->msg, sizeof(p->msg), "%s", o->msg);
    }
}

static int
propose(struct cluster *cl, unsigned i, uint64_t v, struct prop *p)
{
    unsigned char e[8];
    struct raft_buffer buf = { .base = raft_malloc(16), .len = 16 };
    toy_put_u64(e, v);
    ctl_frame_put(buf.base, e, 8, 16); /* framed as ctl_propose frames it */
    memset(p, 0, sizeof(*p));
    p->req.data = p;
    int rv = raft_apply(raft_fixture_get(&cl->f, i), &p->req, &buf, 1, prop_cb);
    if (rv != 0) {
        raft_free(buf.base);
    }
    p->index = p->req.index; /* raft_apply assigned it */
    return rv;
}

static unsigned
leader_of(struct cluster *cl)
{
    unsigned l = raft_fixture_leader_index(&cl->f);
    cr_assert_lt(l, N, "no leader");
    return l;
}

struct others {
    unsigned old;
};

/* Some server other than `old` leads (by its own state: the fixture's notion of
 * a stable leader needs every connected server to acknowledge it). */
static bool
other_leads(struct raft_fixture *f, void *arg)
{
    struct others *o = arg;
    for (unsigned i = 0; i < N; i++) {
        if (i != o->old && raft_fixture_alive(f, i) &&
            raft_state(raft_fixture_get(f, i)) == RAFT_LEADER) {
            return true;
        }
    }
    return false;
}

static unsigned
wait_other_leader(struct cluster *cl, unsigned old)
{
    struct others o = { .old = old };
    cr_assert(raft_fixture_step_until(&cl->f, other_leads, &o, STEP_MS),
              "the majority elected no new leader");
    for (unsigned i = 0; i < N; i++) {
        if (i != old && raft_state(raft_fixture_get(&cl->f, i)) == RAFT_LEADER) {
            return i;
        }
    }
    return N;
}

static void
wait_applied(struct cluster *cl, unsigned i, raft_index index)
{
    cr_assert(raft_fixture_step_until_applied(&cl->f, i, index, STEP_MS),
              "server %u did not apply index %llu", i, (unsigned long long)index);
}

Test(fsm, three_voters_elect_and_apply_identically)
{
    struct cluster cl;
    cluster_up(&cl);
    unsigned l = leader_of(&cl);
    struct prop p[12];
    for (unsigned k = 0; k < 10; k++) {
        cr_assert_eq(propose(&cl, l, 100 + k, &p[k]), 0);
    }
    cr_assert_eq(propose(&cl, l, TOY_REFUSE | 7, &p[10]), 0);
    cr_assert_eq(propose(&cl, l, 110, &p[11]), 0);
    wait_applied(&cl, N, p[11].index); /* N: every server */
    for (unsigned k = 0; k < 12; k++) {
        cr_assert(p[k].done);
        cr_assert_eq(p[k].status, 0);
    }
    cr_assert_eq(p[0].code, 0);
    cr_assert_str_empty(p[0].msg);
    cr_assert_eq(p[10].code, 2, "the FSM's refusal reaches the proposer");
    cr_assert_str_eq(p[10].msg, "refused 7");
    for (unsigned i = 0; i < N; i++) {
        cr_assert_eq(toy_len(&cl.toys[i]), 11);
        cr_assert(toy_equal(&cl.toys[i], &cl.toys[0]));
        cr_assert(!toy_has(&cl.toys[i], TOY_REFUSE | 7));
        cr_assert_eq(cl.ad[i].applied, 12, "a refused entry is still applied (and skipped)");
        cr_assert_eq(cl.toys[i].applied_hook, 12, "on_applied after every entry");
    }
    /* A follower cannot propose. */
    struct prop q;
    cr_assert_eq(propose(&cl, (l + 1) % N, 1, &q), RAFT_NOTLEADER);
    cr_assert_eq(ctl_err_from_raft(RAFT_NOTLEADER), CTL_ENOTLEADER);
    cluster_down(&cl);
}

Test(fsm, minority_leader_cannot_commit_and_its_entries_are_dropped_after_heal)
{
    struct cluster cl;
    cluster_up(&cl);
    unsigned l = leader_of(&cl);
    struct prop a, x, y;
    cr_assert_eq(propose(&cl, l, 1, &a), 0);
    wait_applied(&cl, N, a.index);

    for (unsigned i = 0; i < N; i++) {
        if (i != l) {
            raft_fixture_disconnect(&cl.f, l, i);
            raft_fixture_disconnect(&cl.f, i, l);
        }
    }
    cr_assert_eq(propose(&cl, l, 666, &x), 0, "the cut-off leader still accepts the entry");
    unsigned nl = wait_other_leader(&cl, l);
    cr_assert_lt(nl, N);
    cr_assert_eq(propose(&cl, nl, 2, &y), 0);
    for (unsigned i = 0; i < N; i++) {
        if (i != l) {
            wait_applied(&cl, i, y.index);
        }
    }
    cr_assert(!toy_has(&cl.toys[l], 666), "a minority committed an entry");
    cr_assert_eq(toy_len(&cl.toys[l]), 1);

    for (unsigned i = 0; i < N; i++) {
        if (i != l) {
            raft_fixture_reconnect(&cl.f, l, i);
            raft_fixture_reconnect(&cl.f, i, l);
        }
    }
    wait_applied(&cl, l, y.index);
    for (unsigned i = 0; i < N; i++) {
        cr_assert(toy_equal(&cl.toys[i], &cl.toys[nl]), "server %u diverged", i);
        cr_assert(!toy_has(&cl.toys[i], 666));
        cr_assert(toy_has(&cl.toys[i], 2));
    }
    cr_assert(x.done, "the dropped entry's proposer was answered");
    cr_assert_neq(x.status, 0);
    cr_assert_eq(ctl_err_from_raft(x.status), CTL_ELOST, "status %d", x.status);
    cluster_down(&cl);
}

Test(fsm, leader_killed_with_an_entry_in_flight)
{
    struct cluster cl;
    cluster_up(&cl);
    unsigned l = leader_of(&cl);
    struct prop x, y;
    cr_assert_eq(propose(&cl, l, 42, &x), 0);
    raft_fixture_kill(&cl.f, l);
    unsigned nl = wait_other_leader(&cl, l);
    cr_assert_lt(nl, N);
    cr_assert_eq(propose(&cl, nl, 43, &y), 0);
    for (unsigned i = 0; i < N; i++) {
        if (i != l) {
            wait_applied(&cl, i, y.index);
        }
    }
    unsigned o = 3 - l - nl; /* the third server */
    cr_assert(toy_equal(&cl.toys[nl], &cl.toys[o]));
    cr_assert(toy_has(&cl.toys[nl], 43));
    /* The old leader comes back and converges, whether or not 42 survived. */
    raft_fixture_revive(&cl.f, l);
    wait_applied(&cl, l, y.index);
    for (unsigned i = 0; i < N; i++) {
        cr_assert(toy_equal(&cl.toys[i], &cl.toys[nl]), "server %u diverged", i);
    }
    cluster_down(&cl);
}

struct has_entry {
    unsigned server;
    raft_index index;
};

/* The server's log holds the entry, persisted. */
static bool
has_entry(struct raft_fixture *f, void *arg)
{
    struct has_entry *h = arg;
    return raft_fixture_get(f, h->server)->last_stored >= h->index;
}

Test(fsm, entry_on_a_follower_survives_the_leaders_death)
{
    struct cluster cl;
    cluster_up(&cl);
    unsigned l = leader_of(&cl);
    unsigned a = (l + 1) % N;
    struct prop x, y;
    cr_assert_eq(propose(&cl, l, 42, &x), 0);
    /* The entry reaches follower a's log, then the leader dies before it is
     * known to be committed. a's log is the longest left, so a wins and the
     * entry commits with the new term's first entry. */
    struct has_entry h = { .server = a, .index = x.index };
    cr_assert(raft_fixture_step_until(&cl.f, has_entry, &h, STEP_MS));
    cr_assert_lt(raft_fixture_get(&cl.f, l)->commit_index, x.index, "already committed");
    raft_fixture_kill(&cl.f, l);
    unsigned nl = wait_other_leader(&cl, l);
    cr_assert_lt(nl, N);
    cr_assert_eq(propose(&cl, nl, 43, &y), 0);
    for (unsigned i = 0; i < N; i++) {
        if (i != l) {
            wait_applied(&cl, i, y.index);
            cr_assert(toy_has(&cl.toys[i], 42), "server %u lost a replicated entry", i);
            cr_assert(toy_has(&cl.toys[i], 43));
        }
    }
    raft_fixture_revive(&cl.f, l);
    wait_applied(&cl, l, y.index);
    for (unsigned i = 0; i < N; i++) {
        cr_assert(toy_equal(&cl.toys[i], &cl.toys[nl]), "server %u diverged", i);
    }
    cluster_down(&cl);
}

Test(fsm, snapshot_and_restore_bring_a_lagging_follower_up)
{
    struct cluster cl;
    cluster_up(&cl);
    for (unsigned i = 0; i < N; i++) {
        raft_set_snapshot_threshold(raft_fixture_get(&cl.f, i), 4);
        raft_set_snapshot_trailing(raft_fixture_get(&cl.f, i), 2);
    }
    unsigned l = leader_of(&cl);
    unsigned lag = (l + 1) % N;
    raft_fixture_kill(&cl.f, lag);
    struct prop p[30];
    for (unsigned k = 0; k < 30; k++) {
        cr_assert_eq(propose(&cl, l, 1000 + k, &p[k]), 0);
        /* One at a time, so that snapshots are taken along the way. */
        wait_applied(&cl, l, p[k].index);
    }
    cr_assert_gt(cl.ad[l].snapshots, 0, "the leader never took a snapshot");
    cr_assert_eq(toy_len(&cl.toys[lag]), 0);
    raft_fixture_revive(&cl.f, lag);
    wait_applied(&cl, lag, p[29].index);
    cr_assert_gt(cl.ad[lag].restored, 0, "the follower caught up without a snapshot");
    for (unsigned i = 0; i < N; i++) {
        cr_assert_eq(toy_len(&cl.toys[i]), 30);
        cr_assert(toy_equal(&cl.toys[i], &cl.toys[l]), "server %u diverged", i);
    }
    cluster_down(&cl);
}

/* The adapter's raft_fsm callbacks called directly: what raft relies on. */
Test(fsm, adapter_callbacks)
{
    struct toy t, u;
    struct ctl_fsm_adapter a, b;
    toy_init(&t);
    toy_init(&u);
    struct ctl_fsm ft = toy_fsm(&t), fu = toy_fsm(&u);
    ctl_fsm_adapter_init(&a, &ft, NULL, NULL);
    ctl_fsm_adapter_init(&b, &fu, NULL, NULL);

    unsigned char e[8], f[16];
    void *result = NULL;
    struct raft_buffer buf = { .base = f, .len = 16 };
    for (uint64_t v = 1; v <= 3; v++) {
        toy_put_u64(e, v);
        ctl_frame_put(f, e, 8, 16);
        cr_assert_eq(a.raft.apply(&a.raft, &buf, &result), 0);
        cr_assert_eq(((struct ctl_outcome *)result)->code, 0);
    }
    /* A malformed entry is an outcome, never a failure (raft would retry it):
     * one the FSM refuses (5 bytes, framed), and one that is no frame at all. */
    ctl_frame_put(f, e, 5, 16);
    cr_assert_eq(a.raft.apply(&a.raft, &buf, &result), 0);
    cr_assert_eq(((struct ctl_outcome *)result)->code, 1);
    cr_assert_str_eq(((struct ctl_outcome *)result)->msg, "malformed entry of 5 bytes");
    struct raft_buffer bad = { .base = e, .len = 5 };
    cr_assert_eq(a.raft.apply(&a.raft, &bad, &result), 0);
    cr_assert_neq(((struct ctl_outcome *)result)->code, 0);
    cr_assert_str_eq(((struct ctl_outcome *)result)->msg, "malformed log entry frame (5 bytes)");
    f[0] = 9; /* a length past the frame */
    cr_assert_eq(a.raft.apply(&a.raft, &buf, &result), 0);
    cr_assert_neq(((struct ctl_outcome *)result)->code, 0);
    cr_assert_eq(toy_len(&t), 3);

    struct raft_buffer *bufs = NULL;
    unsigned n = 0;
    cr_assert_eq(a.raft.snapshot(&a.raft, &bufs, &n), 0);
    cr_assert_eq(n, 1);
    /* restore owns a raft_malloc'd buffer on success. */
    struct raft_buffer copy = { .base = raft_malloc(bufs[0].len), .len = bufs[0].len };
    memcpy(copy.base, bufs[0].base, copy.len);
    cr_assert_eq(a.raft.snapshot_finalize(&a.raft, &bufs, &n), 0);
    cr_assert_null(bufs);
    cr_assert_eq(b.raft.restore(&b.raft, &copy), 0);
    cr_assert(toy_equal(&t, &u));
    cr_assert_eq(b.restored, 1);

    /* A corrupt snapshot fails, leaves the state alone, and the buffer stays
     * the caller's (raft frees it). */
    struct raft_buffer junk = { .base = raft_malloc(12), .len = 12 };
    memset(junk.base, 0xff, 12);
    cr_assert_neq(b.raft.restore(&b.raft, &junk), 0);
    raft_free(junk.base);
    struct raft_buffer shorty = { .base = raft_malloc(3), .len = 3 };
    memset(shorty.base, 0, 3);
    cr_assert_neq(b.raft.restore(&b.raft, &shorty), 0);
    raft_free(shorty.base);
    cr_assert(toy_equal(&t, &u));
    toy_deinit(&t);
    toy_deinit(&u);
}

Test(fsm, roles_and_errors_map)
{
    cr_assert_eq(ctl_role_to_raft(CTL_VOTER), RAFT_VOTER);
    cr_assert_eq(ctl_role_to_raft(CTL_LEARNER), RAFT_STANDBY);
    cr_assert_eq(ctl_role_to_raft(CTL_SPARE), RAFT_SPARE);
    cr_assert_eq(ctl_role_to_raft(9), -1);
    for (int r = CTL_SPARE; r <= CTL_LEARNER; r++) {
        cr_assert_eq(ctl_role_from_raft(ctl_role_to_raft(r)), r);
    }
    cr_assert_eq(ctl_err_from_raft(RAFT_CANTCHANGE), CTL_EBUSY);
    cr_assert_eq(ctl_err_from_raft(RAFT_DUPLICATEID), CTL_EINVAL);
    cr_assert_eq(ctl_err_from_raft(RAFT_IOERR), CTL_EFAIL);
    cr_assert_str_eq(ctl_strerror(CTL_ENOTLEADER), "not the leader");
}
