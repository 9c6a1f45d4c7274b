/* control/ctl_fsm.c: struct ctl_fsm behind raft's struct raft_fsm (see ctl_int.h
 * for the libraft rules this follows). */
#include "control/ctl_int.h"

#include "base/mem.h"
#include "base/rv_err.h"

#include <stdio.h>
#include <string.h>

void
ctl_frame_put(uint8_t *out, const void *entry, size_t len, size_t framed)
{
    uint32_t n = (uint32_t)len;
    for (int i = 0; i < 4; i++) {
        out[i] = (uint8_t)(n >> (8 * i));
    }
    memset(out + 4, 0, 4);
    memcpy(out + CTL_FRAME_HDR, entry, len);
    memset(out + CTL_FRAME_HDR + len, 0, framed - CTL_FRAME_HDR - len);
}

bool
ctl_frame_get(const void *frame, size_t n, const uint8_t **entry, size_t *len)
{
    const uint8_t *p = frame;
    if (n < CTL_FRAME_HDR || n % 8 != 0) {
        return false;
    }
    size_t l = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (l > n - CTL_FRAME_HDR || n - CTL_FRAME_HDR - l >= 8) {
        return false;
    }
    *entry = p + CTL_FRAME_HDR;
    *len = l;
    return true;
}

static int
adapter_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    struct ctl_fsm_adapter *a = fsm->data;
    struct ctl_outcome *o = &a->ring[a->applied % CTL_OUTCOME_RING];
    const uint8_t *entry;
    size_t len;
    o->msg[0] = '\0';
    if (!ctl_frame_get(buf->base, buf->len, &entry, &len)) {
        o->code = RV_EPROTO; /* (no FSM call: it is not one of ctl_propose's frames) */
        snprintf(o->msg, sizeof(o->msg), "malformed log entry frame (%zu bytes)", buf->len);
    } else {
        o->code = a->user.apply(a->user.arg, entry, len, o->msg, sizeof(o->msg));
    }
    o->msg[sizeof(o->msg) - 1] = '\0';
    a->applied++;
    *result = o;
    if (a->on_applied != NULL) {
        a->on_applied(a->hook_arg);
    }
    return 0;
}

static int
adapter_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct ctl_fsm_adapter *a = fsm->data;
    void *data = NULL;
    size_t len = 0;
    if (a->user.snapshot(a->user.arg, &data, &len) != RV_OK) {
        rv_free(data);
        return RAFT_BUSY; /* raft skips this snapshot quietly and tries later */
    }
    struct raft_buffer *b = rv_malloc(sizeof(*b));
    b->base = data;
    b->len = len;
    *bufs = b;
    *n_bufs = 1;
    a->snapshots++;
    return 0;
}

static int
adapter_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    if (*bufs != NULL) {
        for (unsigned i = 0; i < *n_bufs; i++) {
            rv_free((*bufs)[i].base);
        }
        rv_free(*bufs);
    }
    *bufs = NULL;
    *n_bufs = 0;
    return 0;
}

static int
adapter_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct ctl_fsm_adapter *a = fsm->data;
    if (a->user.restore(a->user.arg, buf->base, buf->len) != RV_OK) {
        return RAFT_MALFORMED; /* raft frees buf and rejects the snapshot */
    }
    raft_free(buf->base);
    a->restored++;
    if (a->on_applied != NULL) {
        a->on_applied(a->hook_arg);
    }
    return 0;
}

void
ctl_fsm_adapter_init(struct ctl_fsm_adapter *a, const struct ctl_fsm *user,
                     void (*on_applied)(void *arg), void *hook_arg)
{
    memset(a, 0, sizeof(*a));
    a->user = *user;
    a->on_applied = on_applied;
    a->hook_arg = hook_arg;
    a->raft.version = 2;
    a->raft.data = a;
    a->raft.apply = adapter_apply;
    a->raft.snapshot = adapter_snapshot;
    a->raft.restore = adapter_restore;
    a->raft.snapshot_finalize = adapter_snapshot_finalize;
    a->raft.snapshot_async = NULL;
}

int
ctl_role_to_raft(int role)
{
    switch (role) {
    case CTL_VOTER: return RAFT_VOTER;
    case CTL_LEARNER: return RAFT_STANDBY;
    case CTL_SPARE: return RAFT_SPARE;
    default: return -1;
    }
}

int
ctl_role_from_raft(int role)
{
    switch (role) {
    case RAFT_VOTER: return CTL_VOTER;
    case RAFT_STANDBY: return CTL_LEARNER;
    case RAFT_SPARE: return CTL_SPARE;
    default: return -1;
    }
}

int
ctl_err_from_raft(int rv)
{
    switch (rv) {
    case 0: return CTL_OK;
    case RAFT_NOTLEADER: return CTL_ENOTLEADER;
    case RAFT_LEADERSHIPLOST: return CTL_ELOST;
    case RAFT_SHUTDOWN:
    case RAFT_CANCELED: return CTL_ESHUTDOWN;
    case RAFT_CANTCHANGE:
    case RAFT_BUSY: return CTL_EBUSY;
    case RAFT_BADID:
    case RAFT_DUPLICATEID:
    case RAFT_DUPLICATEADDRESS:
    case RAFT_BADROLE:
    case RAFT_NOTFOUND:
    case RAFT_INVALID: return CTL_EINVAL;
    case RAFT_NOMEM: return CTL_ENOMEM;
    default: return CTL_EFAIL;
    }
}

const char *
ctl_strerror(int err)
{
    switch (err) {
    case CTL_OK: return "ok";
    case CTL_ENOTLEADER: return "not the leader";
    case CTL_ETIMEOUT: return "timed out, outcome unknown";
    case CTL_ELOST: return "leadership lost, outcome unknown";
    case CTL_ESHUTDOWN: return "shutting down";
    case CTL_EBUSY: return "a membership change is in progress";
    case CTL_EINVAL: return "invalid server or role";
    case CTL_ENOMEM: return "out of memory";
    case CTL_EFAIL: return "failed";
    default: return "unknown error";
    }
}
