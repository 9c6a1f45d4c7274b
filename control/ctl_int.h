/* control/ctl_int.h: the FSM adapter between raft's struct raft_fsm and our
 * struct ctl_fsm. For control/ and its unit tests only: the deterministic tests
 * hand the adapter's raft_fsm to raft/fixture.h's in-memory cluster, the same
 * callbacks ctl.c gives raft_uv.
 *
 * libraft's contract that this hides:
 * - fsm->apply returning non-zero does not skip the entry: raft stops applying
 *   and retries the same entry later, forever. So the adapter always returns 0
 *   and carries the FSM's outcome through apply's `result` pointer instead.
 * - `result` reaches the raft_apply callback only on the server that proposed
 *   the entry; elsewhere it is dropped, so it must not own memory. It points
 *   into a ring of outcome slots inside the adapter. raft 0.15 calls the
 *   raft_apply callback right after fsm->apply, so one slot would do; the ring
 *   keeps a result valid across CTL_OUTCOME_RING later applies.
 * - snapshot (fsm version 2 with snapshot_finalize): the buffers stay ours and
 *   are freed in finalize, after raft_uv wrote them.
 * - restore takes ownership of buf->base (raft_free) only when it succeeds;
 *   on failure raft frees it.
 */
#pragma once
#include "control/ctl.h"

#include <raft.h>

#define CTL_OUTCOME_RING 64

/* A log entry as raft stores it: the FSM's bytes framed to a multiple of 8
 * (raft_uv reads entries back in 8-byte words; see ctl_propose): a 4-byte
 * little-endian length, 4 zero bytes, the bytes, zeros up to the frame's size. */
#define CTL_FRAME_HDR 8
void ctl_frame_put(uint8_t *out, const void *entry, size_t len, size_t framed);
/* The FSM's bytes in a frame of n bytes; false when it is not one (the
 * adapter then rejects the entry as malformed). */
bool ctl_frame_get(const void *frame, size_t n, const uint8_t **entry, size_t *len);

/* An entry's outcome, as the raft_apply callback receives it (`result`). */
struct ctl_outcome {
    int code;
    char msg[CTL_MSG_MAX];
};

struct ctl_fsm_adapter {
    struct raft_fsm raft; /* handed to raft_init / raft_fixture_grow */
    struct ctl_fsm user;
    void (*on_applied)(void *arg);
    void *hook_arg;
    uint64_t applied;   /* entries applied since init (diagnostics, tests) */
    uint64_t restored;  /* snapshots restored */
    uint64_t snapshots; /* snapshots taken */
    struct ctl_outcome ring[CTL_OUTCOME_RING];
};

void ctl_fsm_adapter_init(struct ctl_fsm_adapter *a, const struct ctl_fsm *user,
                          void (*on_applied)(void *arg), void *hook_arg);

/* enum ctl_role <-> raft's role codes; -1 for an unknown value. */
int ctl_role_to_raft(int role);
int ctl_role_from_raft(int role);
/* A raft error code as an enum ctl_err. */
int ctl_err_from_raft(int rv);
