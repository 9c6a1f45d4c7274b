/* node/core/persist_hot.h: the persistence flags the request path checks
 * inline (one load and a branch in memory mode). They are the first member of
 * a shard's persistence state (node/persist), which sets them; they are
 * declared here so that dispatch, connections and MULTI read them without
 * depending on the persistence layer. */
#pragma once
#include <stdbool.h>

struct persist;

/* The first member of a shard's persistence state: what the request path
 * checks inline before calling in (one load and a branch in memory mode). */
struct persist_hot {
    bool wal;     /* a WAL is open: log writes, hold replies */
    bool cow;     /* a checkpoint is walking: copy keys before writes */
    bool log;     /* build records: a WAL is open or a replication backlog is */
    bool guard;   /* writes may be refused: WAL open, replica, min-replicas-to-write */
    bool stale;   /* replica, link not up, replica-serve-stale-data no: -MASTERDOWN */
    bool loading; /* the node is loading its data: -LOADING (node/persist/loading.h) */
};
static inline const struct persist_hot *
persist_hot(const struct persist *p)
{
    return (const struct persist_hot *)(const void *)p;
}
