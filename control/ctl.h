/* control/ctl.h: the cluster's control plane. One struct ctl is one server of a
 * Raft group (Debian's libraft 0.15, canonical raft): its log and snapshots under
 * <dir>/raft (raft_uv), its peers over TCP on the cluster bus address
 * (raft_uv_tcp), and the replicated state machine supplied by the caller
 * (struct ctl_fsm). Entries and snapshots are opaque bytes here: what they mean
 * (the topology) belongs to the FSM.
 *
 * Threading contract
 *
 * - A ctl runs its own thread with its own libuv loop; raft is touched only
 *   there ("the control thread").
 * - ctl_start and ctl_stop are called by one owning thread (the node's main
 *   thread). ctl_start blocks while it loads the log from disk and binds the
 *   bus port, so that every start-up error is returned to the caller.
 * - ctl_propose, ctl_add, ctl_assign, ctl_remove, ctl_transfer and ctl_info may
 *   be called from any thread while the ctl runs (between ctl_start and
 *   ctl_stop). They never wait for the control thread: a request is copied,
 *   pushed on a mutex-protected queue and the control thread is woken
 *   (uv_async_t); the mutex is held only for the push.
 * - A request that ctl_propose & co accepted (RV_OK) is answered exactly once by
 *   its done callback, ON THE CONTROL THREAD: with the FSM's outcome, or with
 *   an error (not leader, with the leader's id and address; timed out; leadership
 *   lost; shutting down). A request refused at the call (any other return) gets
 *   no callback.
 * - Every callback (done, the FSM's apply/snapshot/restore, on_applied) runs on
 *   the control thread, with one exception: on a restart, ctl_start itself
 *   restores the latest snapshot on disk (raft_start loads it), so restore and
 *   on_applied may run once on the thread calling ctl_start, before it returns.
 *   Callbacks must be short and must not block: the control thread also sends
 *   the heartbeats that keep this server's leadership. To reach a shard, post a
 *   message to it. Callbacks may call ctl_propose & co (queued, answered later)
 *   and ctl_info, never ctl_stop.
 * - No call may race with or follow ctl_stop on the same ctl.
 * - The control thread blocks the asynchronous signals (SIGPIPE above all: it
 *   writes to peers' sockets); faults (SIGSEGV, SIGABRT, ...) stay deliverable.
 * - For one committed entry proposed here, the order is: the FSM's apply, then
 *   on_applied, then the proposer's done.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tls_ctx;

struct ctl; /* opaque: control/ctl.c */

/* Roles in the Raft configuration. A learner (raft's "standby") receives the
 * log but does not vote; a spare is in the configuration and receives nothing. */
enum ctl_role { CTL_SPARE = 0, CTL_VOTER = 1, CTL_LEARNER = 2 };

/* A server's Raft state, as raft reports it. */
enum ctl_state { CTL_UNAVAILABLE = 0, CTL_FOLLOWER, CTL_CANDIDATE, CTL_LEADER };

/* How a request ended (struct ctl_result.err). */
enum ctl_err {
    CTL_OK = 0,
    CTL_ENOTLEADER, /* this server is not the leader: see leader_id/leader_address */
    CTL_ETIMEOUT,   /* not answered within the request timeout: outcome unknown */
    CTL_ELOST,      /* leadership lost before the entry committed: outcome unknown */
    CTL_ESHUTDOWN,  /* the ctl is stopping */
    CTL_EBUSY,      /* another membership change is in progress: retry */
    CTL_EINVAL,     /* unknown or duplicate server id/address, bad role */
    CTL_ENOMEM,
    CTL_EFAIL, /* any other failure: msg says what */
};
const char *ctl_strerror(int err);

/* Longest FSM outcome message, with its NUL. */
#define CTL_MSG_MAX 256
/* Longest server address ("ip:port"), with its NUL. */
#define CTL_ADDR_MAX 64
/* Servers copied into struct ctl_info (the configuration may hold more). */
#define CTL_INFO_SERVERS 16
/* Largest entry ctl_propose accepts: well inside one of raft_uv's 8 MiB log
 * segments (topology commands are small; a snapshot is not an entry). */
#define CTL_ENTRY_MAX (1u << 20)

/* The replicated state machine. Deterministic by contract: every server applies
 * the same entries in the same order and must reach the same state and the same
 * outcomes, so apply may depend on nothing but the state and the entry (no
 * clock, no randomness, no local configuration). */
struct ctl_fsm {
    void *arg;
    /* Apply one committed entry (its bytes are borrowed for the call). Returns
     * the entry's outcome: 0 for success, or the FSM's own non-zero code for an
     * entry it rejects (a malformed or refused topology command), with an
     * optional NUL-terminated message in msg (msgsz bytes, starts empty). The
     * outcome travels back to the proposer's done callback; it never stops the
     * log, which moves on either way. */
    int (*apply)(void *arg, const void *entry, size_t len, char *msg, size_t msgsz);
    /* Serialise the whole state into a buffer allocated with rv_malloc (the ctl
     * frees it once written). RV_OK, or an RV_ code: the snapshot is skipped and
     * tried again after later entries. */
    int (*snapshot)(void *arg, void **out, size_t *len);
    /* Replace the whole state with a snapshot's bytes (borrowed for the call).
     * The bytes come from disk or from the network: validate them. RV_OK, or an
     * RV_ code with the state left unchanged. */
    int (*restore)(void *arg, const void *data, size_t len);
};

/* A member of the initial configuration. */
struct ctl_server {
    uint64_t id;         /* > 0, unique in the cluster */
    const char *address; /* "ip:port" of its bus */
    int role;            /* enum ctl_role */
};

struct ctl_opts {
    uint64_t id;              /* this server, > 0 */
    const char *address;      /* "ip:port" the others reach this server at (IPv4) */
    const char *bind_address; /* NULL: bind address; else e.g. "0.0.0.0:port", same port */
    const char *dir;          /* data directory: the log lives in <dir>/raft (created) */
    /* Servers of the first configuration, used only on a fresh <dir>/raft (an
     * existing log is kept and this is ignored). n_bootstrap == 0: join, i.e. start
     * outside any configuration and wait for the leader to ctl_add this server. */
    const struct ctl_server *bootstrap;
    size_t n_bootstrap;
    struct ctl_fsm fsm;
    /* Called on the control thread after each committed entry is applied and
     * after a snapshot is restored: the moment to publish a new topology
     * snapshot to the shards. May be NULL. */
    void (*on_applied)(void *arg);
    void *hook_arg;
    /* tls-cluster: when set, raft's connections run over mutual TLS
     * (control/ctl_tls.h) with the contexts it returns (a new reference, or
     * NULL; asked on the control thread for each new connection); NULL:
     * raft_uv's plain TCP transport. */
    struct tls_ctx *(*tls_ctx)(void *arg, bool server);
    void *tls_arg;
    /* 0 takes the default (in brackets). */
    unsigned election_timeout_ms;  /* [1000] raft randomises it to 1x..2x */
    unsigned heartbeat_timeout_ms; /* [100] */
    unsigned request_timeout_ms;   /* [5000] a proposal or membership change */
    unsigned snapshot_threshold;   /* [1024] entries applied between snapshots */
    unsigned snapshot_trailing;    /* [256] entries kept in the log after one */
    unsigned stop_timeout_ms;      /* [5000] ctl_stop's bound */
};

/* What a request came to, passed to its done callback (valid during the call). */
struct ctl_result {
    int err;         /* enum ctl_err */
    int code;        /* err == CTL_OK, proposals: the FSM's outcome code */
    const char *msg; /* the FSM's message ("" when none), or what went wrong */
    uint64_t index;  /* err == CTL_OK, proposals: the entry's log index */
    /* err == CTL_ENOTLEADER: the leader this server knows (0 and "" if none). */
    uint64_t leader_id;
    const char *leader_address;
};
typedef void (*ctl_done_fn)(void *arg, const struct ctl_result *res);

/* A consistent copy of the server's state, readable from any thread. It is
 * refreshed by the control thread on every loop iteration, so it trails raft
 * by at most one I/O event. */
struct ctl_info {
    uint64_t id;
    int state; /* enum ctl_state */
    uint64_t leader_id;
    char leader_address[CTL_ADDR_MAX];
    uint64_t term;
    uint64_t commit_index;
    uint64_t applied_index;
    uint64_t last_index;
    unsigned n_servers; /* in the configuration; the first CTL_INFO_SERVERS below */
    struct {
        uint64_t id;
        char address[CTL_ADDR_MAX];
        int role; /* enum ctl_role */
    } servers[CTL_INFO_SERVERS];
};

/* Open <dir>/raft, bootstrap it when fresh and n_bootstrap > 0, bind the bus and
 * start the control thread. RV_OK with *out set, or an RV_ code with a message
 * in err (errsz bytes) and nothing left running. */
int ctl_start(struct ctl **out, const struct ctl_opts *o, char *err, size_t errsz);
/* Stop the server: requests still queued are answered CTL_ESHUTDOWN, raft's
 * disk writes in flight are let finish (at most 1 s, see ctl.c), raft is closed
 * (what is still in flight is answered then), the thread joined and everything
 * freed. RV_OK, or RV_ESTATE when the thread did not finish within
 * stop_timeout_ms (it is then left to finish alone and its memory is not
 * freed). NULL is a no-op. */
int ctl_stop(struct ctl *c);

/* Propose an entry (copied). RV_OK: done will be called once, on the control
 * thread, with the FSM's outcome once the entry is committed and applied here,
 * or with an error. RV_EINVAL (empty or over CTL_ENTRY_MAX), RV_ESTATE (stopping):
 * done is not called. */
int ctl_propose(struct ctl *c, const void *entry, size_t len, ctl_done_fn done, void *arg);
/* Membership, on the leader (others answer CTL_ENOTLEADER). One change at a
 * time (CTL_EBUSY otherwise). ctl_add adds the server and then gives it role
 * (a voter is promoted only once it has caught up with the log). Same return
 * values as ctl_propose. */
int ctl_add(struct ctl *c, uint64_t id, const char *address, int role, ctl_done_fn done, void *arg);
int ctl_assign(struct ctl *c, uint64_t id, int role, ctl_done_fn done, void *arg);
int ctl_remove(struct ctl *c, uint64_t id, ctl_done_fn done, void *arg);
/* Hand leadership to voter id (0: a voter raft picks). CTL_OK once
 * another server leads, CTL_EFAIL when none took over within the election
 * timeout (or another than id did). A server just promoted to voter ignores
 * the hand-over until its own log holds the promotion (its ctl_info lists it as
 * a voter): transferring to it at once may fail. */
int ctl_transfer(struct ctl *c, uint64_t id, ctl_done_fn done, void *arg);

void ctl_info(struct ctl *c, struct ctl_info *out);
