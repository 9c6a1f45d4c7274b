/* node/persist/loading.h: the node's start-up load, as Redis's: the listeners
 * answer while the shards recover (checkpoint, then WAL replay), an RDB file
 * is imported or a data directory redistributed; commands without the
 * `loading` flag get -LOADING, INFO shows loading:1 and the loading_* progress
 * fields. Everything runs on main's thread: the recovery calls loading_tick()
 * after each record, which now and then runs the poll given to loading_begin()
 * (every shard's listeners and connections, Redis's processEventsWhileBlocked),
 * so no shard thread touches a half-loaded keyspace. docs/durability.md. */
#pragma once
#include <stdint.h>

struct node;
struct buf;

typedef void loading_poll_fn(struct node *n);

/* Loading starts: total_bytes is what the recovery will read (the fields'
 * denominator); poll serves the shards between records. */
void loading_begin(struct node *n, uint64_t total_bytes, loading_poll_fn *poll);
/* After each record loaded (bytes of file read for it): progress, the
 * key-load-delay test knob, and the poll every few milliseconds. Does
 * nothing before loading_begin() (resharding's offline sources included). */
void loading_tick(struct node *n, uint64_t bytes);
/* Every byte is loaded: loading:0 from now on. */
void loading_end(struct node *n);
/* What recovering the shard directory dir reads: its newest checkpoint and
 * every WAL segment (0 when there is none). */
uint64_t loading_dir_bytes(const char *dir);
/* INFO persistence's loading_* fields while loading (nothing otherwise). */
void loading_info(struct node *n, struct buf *b);
