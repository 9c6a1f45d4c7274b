/* node/commands/slotmig_int.h: what the two sides of an atomic slot
 * migration share (docs/cluster.md, "Atomic slot migration"): the source's
 * job (cmd_migslots.c) and the target's import (slotmig_import.c) are both
 * an sm_job, kept in the shard's struct slotmig with the log of finished
 * ones. Private to node/commands. */
#pragma once
#include "base/buf.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/commands/slotmig_chunk.h"
#include "node/commands/slotmig_left.h"
#include "node/commands/slotmig_link.h"

#include <event2/util.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct event;
struct shard;

#define SM_IO_MS 5000 /* the target's silence while records are in flight */
#define SM_LOG 16     /* finished jobs kept for GETSLOTMIGRATIONS */
/* An import with no record from its source for this long is abandoned (the
 * source waits SM_IO_MS per step and sends a heartbeat while held). */
#define SM_IMPORT_IDLE_MS (2 * SM_IO_MS)
#define SM_IMPORT_IDLE_TEXT "10 s"
#define SM_IMPORT_TICK_US 100000

enum sm_state {
    SM_CONNECTING,
    SM_SNAPSHOT,
    SM_STREAMING,
    SM_COMMITTING,
    SM_SUCCESS,
    SM_FAILED,
    SM_CANCELLED,
};

/* GETSLOTMIGRATIONS's state field (cmd_migslots.c). */
extern const char *const sm_state_name[];

struct sm_job {
    char name[TOPO_ID_LEN + 1];
    char source[TOPO_ID_LEN + 1], target[TOPO_ID_LEN + 1];
    char ip[TOPO_IP_MAX + 1];
    int port;
    struct topo_range *ranges;
    size_t nranges;
    uint8_t moving[SLOT_COUNT / 8];
    int64_t created, updated, acked; /* unix seconds */
    enum sm_state state;
    char message[256];
    bool cancel, paused, linked, proposing;
    struct sml link;    /* to the target (slotmig_link.h) */
    struct slotmig *m;  /* (the source's job) its owner, for the link's replies */
    char fail[256];     /* a reply that ends the job ("" while none) */
    bool waiting;       /* the last step waited for replies: the next one wakes it */
    bool told;          /* STATE committing queued, nothing after it */
    bool dropping;      /* the abort's DROP: replies are only counted */
    struct buf pending; /* keys of a walk's batch or of a round, as dirty's */
    size_t pending_at;  /* the next one in pending */
    uint64_t cursor;    /* ks_scan's */
    struct buf dirty;   /* remembered keys, each as its length then its bytes */
    size_t ndirty;
    bool flushed; /* FLUSHALL/FLUSHDB ran: the copy starts again (sm_restart) */
    unsigned rounds;
    uint64_t tag;     /* of the proposal in flight */
    int64_t retry_at; /* monotonic ms: the next proposal, after an unknown outcome */
    struct smc chunk; /* big keys, sent in chunks (slotmig_chunk.h) */
    struct buf again; /* the chunk's records being sent, nagain of them */
    size_t nagain;
    size_t chunk_wait;             /* the chunk's records in flight, not yet answered */
    int64_t again_at, again_until; /* monotonic ms: its next try, the last */
    bool down;                     /* the chunk got CLUSTERDOWN: sent again at again_at */
    bool import;                   /* the target's side: moving is the set of slots imported */
    int64_t heard;                 /* (import) monotonic ms of the source's last record */
    bool recovered; /* (import) opened from the log: recovery, or a replica's stream */
    bool clearing;  /* (import) its copies are being deleted (left), then it ends */
    struct slotmig_drop left;
    enum sm_state left_end; /* ... as this, with left_why as its message */
    char left_why[128];
};

struct slotmig {
    struct shard *s;
    struct event *tick;
    struct sm_job *active;
    struct sm_job *import; /* the target's side: slots imported (hidden) */
    struct event *imp_tick;
    struct sm_job *log[SM_LOG]; /* finished jobs, oldest first */
    size_t nlog;
    uint64_t next_tag;
    bool hold;        /* DEBUG SLOTMIG-HOLD: jobs stream but never pause nor commit */
    bool hold_chunks; /* DEBUG SLOTMIG-HOLD 2: and a chunked key stops after its first chunk */
};

static inline bool
sm_moving(const struct sm_job *j, unsigned slot)
{
    return (j->moving[slot / 8] >> (slot % 8)) & 1;
}

/* ---- cmd_migslots.c ---- */

/* The shard's state, created at its first use (both timers with it). */
struct slotmig *sm_get(struct conn *c);
void sm_job_free(struct sm_job *j);
/* Sets the job's state and message, and its last_update_time. */
void sm_set(struct sm_job *j, enum sm_state st, const char *msg);
/* Arms a timer usec microseconds (< 1 s) from now. */
void sm_arm_ev(struct event *ev, long usec);
/* A finished job (or import) joins the log, which owns it from then on. */
void sm_log_add(struct slotmig *m, struct sm_job *j);

/* ---- slotmig_import.c ---- */

/* The import's timer: ends it once its slots are this node's (or, on a
 * replica, its primary's), or when it cannot commit any more. */
void sm_import_tick(evutil_socket_t fd, short what, void *arg);
