/* node/persist/rdbload.h: loading a Redis RDB file (`dir`/`dbfilename`, as
 * Redis names them) into a node that starts without data of its own, so a
 * Redis data set moves to Ruvio by copying its dump.rdb (docs/operations.md). */
#pragma once
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

struct cfg;
struct node;

struct rdbload;

/* Before the shards are created (so a refused file leaves nothing behind):
 * whether the RDB file is to be loaded, i.e. rdb-load-at-start is on, the
 * node is no replica and not in cluster mode, the file exists, and no shard
 * directory under dir holds a checkpoint or a WAL record (nor a
 * redistribution); logs why a present file is left alone. When it is, the
 * whole file is decoded: a corrupt, truncated or unsupported one, or one with
 * keys in a database this node lacks, is refused (-1 with err); else *out is
 * the checked file (NULL when there is nothing to load), and <dir>/rdb-loading
 * marks a load in progress: a start that finds it (a load killed before its
 * last checkpoint) discards the shards' checkpoints and WAL and loads again. */
int rdbload_prepare(const struct cfg *cfg, struct rdbload **out, char *err, size_t errsz);

/* After the (empty) shards are created, before they start: rebuilds every
 * key of x that has not expired in the shard owning its slot, in its
 * database, loads its function libraries in every shard, and takes a
 * checkpoint of every shard, so the next start recovers from those (and
 * does not load the file again). Logs the keys loaded per database; frees x. */
int rdbload_run(struct node *n, struct rdbload *x, char *err, size_t errsz);
/* The size of the file to load (0 for NULL): loading progress. */
uint64_t rdbload_bytes(const struct rdbload *x);
