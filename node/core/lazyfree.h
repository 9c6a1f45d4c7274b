/* node/core/lazyfree.h: the node's lazy-free thread (Redis's lazyfree).
 *
 * A value too big to free without stalling its shard (more than
 * LAZYFREE_EFFORT allocations, Redis's LAZYFREE_THRESHOLD) is unlinked from
 * the keyspace at once and handed here; one thread per node frees what it is
 * given, in order. The queue is bounded: when it is full, lazyfree_put
 * refuses and the caller frees inline, as it would without this module.
 * jemalloc frees memory another thread allocated without any help.
 *
 * Ownership: a job's ptr belongs to the thread from a successful
 * lazyfree_put on; nobody else touches it again. Each job names the
 * lazyfree_acct of the shard that gave it: the thread counts there the
 * objects pending and freed and the bytes its free gave back (its own
 * jemalloc thread counters around the call), which the shard takes back
 * into its charge (rv_mem_thread_adjust) when it next reads it. The giver
 * may also say how many bytes a job will free (an estimate): they count as
 * pending_bytes until the job is done, so that eviction can tell memory on
 * its way out from memory to free (Redis 7 over-evicts while its lazy-free
 * thread works; docs/operations.md). An acct must
 * outlive the lazyfree it was used with (lazyfree_destroy finishes every job
 * before it returns). */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values freed with more allocations than this go to the thread (Redis 7). */
#define LAZYFREE_EFFORT 64
/* Jobs the queue holds before lazyfree_put refuses. */
#define LAZYFREE_QUEUE 65536

struct lazyfree;
typedef void lazyfree_fn(void *ptr);

/* One shard's view of the thread's work; zero-initialised; counters are
 * written by the thread and read by the shard. */
struct lazyfree_acct {
    atomic_uint_fast64_t pending; /* objects handed over, not freed yet */
    atomic_uint_fast64_t freed;   /* objects freed by the thread (lazyfreed_objects) */
    atomic_llong bytes;           /* bytes freed, not taken back yet */
    atomic_llong pending_bytes;   /* the estimates of the jobs not done yet */
};

/* Starts the thread with a queue of cap jobs; NULL when the thread cannot
 * be started (callers then free everything inline). */
struct lazyfree *lazyfree_create(size_t cap);
/* Frees every queued job, stops and joins the thread. NULL is a no-op. */
void lazyfree_destroy(struct lazyfree *lf);
/* Hand ptr over, to be freed by fn(ptr) on the thread; it counts as
 * objects objects (a detached keyspace: its keys) and about bytes bytes
 * (0: unknown) until freed. false (nothing taken) when lf is NULL or the
 * queue is full: free it yourself. */
bool lazyfree_put(struct lazyfree *lf, struct lazyfree_acct *a, lazyfree_fn *fn, void *ptr,
                  uint64_t objects, long long bytes);
/* Blocks until every job put before the call is done (tests, DEBUG). */
void lazyfree_wait_idle(struct lazyfree *lf);

/* The bytes freed for a since the last call (the shard subtracts them from
 * its charge); 0 when none. */
long long lazyfree_acct_take_bytes(struct lazyfree_acct *a);
uint64_t lazyfree_acct_pending(const struct lazyfree_acct *a);
/* The bytes estimates of the jobs not done yet. A job's estimate leaves
 * this count before its freed bytes reach lazyfree_acct_take_bytes: read
 * this after taking the bytes and a job is never subtracted twice. */
long long lazyfree_acct_pending_bytes(const struct lazyfree_acct *a);
uint64_t lazyfree_acct_freed(const struct lazyfree_acct *a);
