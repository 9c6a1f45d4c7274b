/* node/core/node.h: the process-wide view: how many shards, their ports, ids and
 * slot ranges (immutable after start-up), the published config snapshot and
 * the shutdown flag. Shards read these; nothing here is on a lock. */
#pragma once
#include "node/core/config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct shard;
struct topo;
struct node_load;
struct lazyfree;

struct node {
    unsigned nshards;
    struct shard **shards;
    char (*ids)[41]; /* per-shard 40-hex node ids (CLUSTER MYID) */
    char run_id[41];
    _Atomic(struct cfg *) cfg; /* latest snapshot; older ones are kept until exit */
    atomic_uint_fast64_t cfg_version;
    atomic_bool shutdown;
    atomic_bool save_on_exit;      /* SHUTDOWN SAVE: every shard checkpoints before exiting */
    atomic_uint_fast64_t stat_gen; /* CONFIG RESETSTAT generation */
    atomic_long nclients;          /* client connections on all shards (maxclients) */
    /* cluster-enabled yes: the latest topology snapshot (cluster/topo.h), published
     * by the control plane (node/features/topology.c); NULL otherwise. */
    _Atomic(struct topo *) topo;
    atomic_uint_fast64_t topo_version;
    /* cluster mode: the write lease. This host's primaries take writes until
     * this time (unix ms): the topology monitor extends it by half the node
     * timeout each time the host was in touch with the topology log's quorum,
     * so a host cut off (or paused) stops writing before its replicas can be
     * promoted (after a whole node timeout). Read on every write. */
    atomic_int_fast64_t cluster_lease_ms;
    /* ... for shards that adopted at least this topology (one older than what
     * the quorum had committed when the lease was extended must not write) */
    atomic_uint_fast64_t cluster_lease_topo;
    /* MONITOR connections on all shards (features/monitor): a command is
     * formatted for them only while this is non-zero. */
    atomic_long monitors;
    /* CLIENT PAUSE (features/pause): end (unix ms) * 2 + 1 for ALL, 0 for WRITE;
     * 0 when no pause. Read on every command. */
    atomic_int_fast64_t client_pause;
    /* Start-up loading (node/persist/loading.h): true from before the first
     * shard recovers until every shard, an RDB import and a redistribution
     * are done; the listeners answer meanwhile, -LOADING to commands without
     * the loading flag. Written by main's thread only; the progress of INFO's
     * loading_* fields beside it. */
    atomic_bool loading;
    atomic_int_fast64_t loading_start_ms;
    atomic_uint_fast64_t loading_total_bytes, loading_loaded_bytes;
    struct node_load *load; /* main's pacing of the serving between records */
    /* The lazy-free thread (node/core/lazyfree.h), or NULL: values are then
     * freed inline. Created by main before the shards, destroyed after them. */
    struct lazyfree *lazyfree;
    int64_t start_ms;
    char executable[4096];
    char config_file[4096];
};

/* Publish a new snapshot (takes ownership); shards adopt it at a safe point. */
void node_publish_cfg(struct node *n, struct cfg *c);
/* Publish a topology snapshot (takes the caller's reference) and wake the
 * shards; each adopts it at its next safe point. Any thread. */
void node_publish_topo(struct node *n, struct topo *t);
/* A reference to the published topology (NULL when none); topo_put() it. */
struct topo *node_topo_get(struct node *n);
/* TLS (base/tls.h): the server context of the TLS ports and the client one
 * of replication links (tls-replication), built from the tls-* keys of c. At start-up
 * and on CONFIG SET of any of them; on an error nothing changes (the old
 * contexts stay in use). Connections keep the context they were made with. */
struct tls_ctx;
int node_tls_apply(const struct cfg *c, char *err, size_t errsz);
/* A reference (tls_ctx_unref it), or NULL when not configured. Any thread. */
struct tls_ctx *node_tls_get(bool server);
/* tls-cluster: the cluster bus's contexts (both sides present and verify a
 * certificate), as node_tls_get. */
struct tls_ctx *node_tls_bus_get(bool server);
/* Slot owner and port of shard i. */
unsigned node_slot_shard(const struct node *n, unsigned slot);
int node_shard_port(const struct node *n, unsigned i);
