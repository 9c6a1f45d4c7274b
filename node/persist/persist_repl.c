/* node/persist/persist_repl.c: the state replication sets on a shard's
 * persistence, through replication's host (node/server/repl_host.c): the
 * role, the write guard, stale reads, logging for a backlog, the next LSN of
 * a replica in memory mode, and the copy-on-write a full sync's walk needs. */
#include "node/persist/persist_int.h"

bool
persist_memory_mode(struct shard *s)
{
    return persist_of(s)->mode == WAL_MEMORY;
}

struct wal *
persist_wal(struct shard *s)
{
    return persist_of(s)->w;
}

void
persist_set_next_lsn(struct shard *s, uint64_t lsn)
{
    persist_of(s)->next_lsn = lsn;
}

void
persist_repl_log_on(struct shard *s)
{
    struct persist *p = persist_of(s);
    p->hot.log = true;
    p->tap_only = false; /* (records are built from now on, the tap told of them) */
}

void
persist_repl_set_replica(struct shard *s, bool replica)
{
    persist_of(s)->replica = replica;
}

void
persist_repl_set_guard(struct shard *s, bool on)
{
    struct persist *p = persist_of(s);
    /* the flag also covers WAL write errors (persist_refuse_write) */
    p->hot.guard = p->w != NULL || on;
}

void
persist_repl_set_stale(struct shard *s, bool on)
{
    persist_of(s)->hot.stale = on;
}

void
persist_repl_set_cow(struct shard *s, bool on)
{
    struct persist *p = persist_of(s);
    p->repl_cow = on;
    snap_cow_refresh(p);
}
