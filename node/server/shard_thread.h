/* node/server/shard_thread.h: a shard's life: create (bind), load, run
 * its thread and loop, stop, destroy (node/server/shard.c). The state every
 * layer reads is node/core/shard.h. */
#pragma once
#include "node/core/shard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Create shard id: bind and listen (errors name the address and port), its
 * keyspace empty and its connections answered -LOADING until shard_start. */
struct shard *shard_create(struct node *n, unsigned id, char *err, size_t errsz);
/* Recover its data (persist_load); on main's thread, before shard_start. */
int shard_load(struct shard *s, char *err, size_t errsz);
/* While the node loads, on main's thread between records: accept, serve
 * what the clients sent (-LOADING for most), write the replies. */
void shard_serve_loading(struct shard *s);
/* Loading is over: the shard's commands run, its own thread takes its loop. */
int shard_start(struct shard *s, int cpu); /* cpu < 0: no pinning */
/* Wait up to timeout_ms for the thread to finish; false on timeout. */
bool shard_join(struct shard *s, int64_t timeout_ms);
void shard_destroy(struct shard *s);
/* A shard that never serves: loads the data directory dir read-only (no WAL
 * is opened, nothing written but a torn tail cut off). Resharding uses it. */
struct shard *shard_create_offline(struct node *n, unsigned id, const char *dir, char *err,
                                   size_t errsz);
