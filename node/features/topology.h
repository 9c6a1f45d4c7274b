/* node/features/topology.h: a node in cluster mode (cluster-enabled yes;
 * docs/cluster.md). The process is one host: the main thread starts its
 * control plane (control/ctl.h, a Raft server on the bus port) with the
 * topology state machine (cluster/topo.h) as its log's meaning. Every applied
 * entry publishes a new immutable snapshot (node_publish_topo), which each
 * shard adopts at a safe point (shard_env.topo): routing and the CLUSTER
 * commands read it without a lock.
 *
 * The host's identity (its Raft server id, each shard's node id and shard id)
 * is created at the first start and kept in cluster-config-file, so that a
 * restart is the same nodes; the topology itself lives in dir/cluster/raft.
 *
 * Topology-changing commands (CLUSTER ADDSLOTS & co.) become proposals: the
 * client waits, its input paused, until the entry is committed and applied,
 * and then gets the state machine's answer (Redis's reply or error text). */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct node;
struct cfg;
struct conn;
struct buf;

/* Main thread, after setup and before any shard starts: read or create the
 * identity (sets node->ids), start the control plane and publish the
 * topology; on a fresh single-host cluster, add this host's nodes. 0, or -1
 * with a message in err. */
int topology_start(struct node *n, const struct cfg *cfg, char *err, size_t errsz);
/* Main thread, after the shards stopped. */
void topology_stop(void);

/* How a committed proposal is answered. */
enum topology_reply {
    TOPOLOGY_REPLY_OK,        /* +OK */
    TOPOLOGY_REPLY_BUMPEPOCH, /* +BUMPED <epoch> / +STILL <epoch> (the node's config epoch) */
    TOPOLOGY_REPLY_RESET,     /* +OK, after the shard stopped following and flushed its data */
};
/* Propose entry (encoded by topo_enc_*) for client c, which waits for the
 * answer; node_id names the node a BUMPEPOCH reply reports. Inside
 * MULTI/EXEC the client cannot wait: it gets an error instead. */
void topology_propose(struct conn *c, const struct buf *entry, enum topology_reply how,
                      const char *node_id);
/* n entries, proposed one after the other while each succeeds; the client
 * gets +OK after the last, or the first failure. */
void topology_propose_seq(struct conn *c, const struct buf *const *entries, size_t n);

/* Another host asks to join (RVCLUSTER JOIN): commit entries (its nodes and
 * slots), answer c, then make host_id (its bus at bus_addr) a server of the log. */
void topology_admit(struct conn *c, const struct buf *const *entries, size_t n, uint64_t host_id,
                    const char *bus_addr);
/* CLUSTER MEET to a node of another host: send join_cmd (RVCLUSTER JOIN, as
 * RESP) to ip:port; once accepted, this host drops its single-host log and
 * follows the other host's. c waits for the outcome. */
void topology_meet_host(struct conn *c, const char *ip, int port, const struct buf *join_cmd);
/* RVCLUSTER PROPOSE: entries another host of the cluster could not propose
 * (it does not lead the log): proposed here, never forwarded again. */
void topology_propose_forwarded(struct conn *c, const struct buf *const *entries, size_t n,
                                enum topology_reply how, const char *node_id);
/* id (len bytes) was removed by a NODE_FORGET this host applied in the last
 * 60 s (Redis's ban list): CLUSTER FORGET of it answers OK. Any thread. */
bool topology_recently_forgotten(const char *id, size_t len);
/* CLUSTER RESET HARD, committed: shard's node id is id from now on, written
 * to cluster-config-file. 0, or -1 (logged). Called by the shard itself. */
int topology_set_identity(unsigned shard, const char *id);
/* The spec of shard's node as this host would add it (address from the
 * config), for CLUSTER RESET; strings point into static per-shard storage. */
struct topo_node_spec;
void topology_own_spec(unsigned shard, struct topo_node_spec *out);
/* CLUSTER RESET: entries proposed in order; once committed the shard stops
 * following, drops its data and (new_id not NULL) takes new_id as its node id;
 * then +OK. */
void topology_propose_reset(struct conn *c, const struct buf *const *entries, size_t n,
                            const char *new_id);
/* A shard's own job (no client waits) proposes entries in order, as
 * topology_propose_seq does, forwarded to the leader's host when this host
 * does not lead. The outcome is posted to s as a message whose run is `run`;
 * run reads it with topology_job_answer, which frees it. */
struct shard;
struct shard_msg;
void topology_propose_job(struct shard *s, const struct buf *const *entries, size_t n,
                          void (*run)(struct shard *s, struct shard_msg *m), uint64_t tag);
/* The outcome of a job's proposal; text says why when it did not commit.
 * Frees m; *tag is the job's. */
enum topology_outcome {
    TOPOLOGY_COMMITTED, /* every entry committed, and this host applied them */
    TOPOLOGY_REFUSED,   /* an entry committed and the state machine refused it
                         * (nothing of it applies), and this host applied it */
    TOPOLOGY_UNKNOWN,   /* a timeout, a lost leader, no leader reached: it may
                         * still commit */
};
enum topology_outcome topology_job_answer(struct shard_msg *m, uint64_t *tag, char *text, size_t n);
/* This host leads the topology log. */
bool topology_leads(void);
/* The client address of a node on the leader's host, in topology t. */
struct topo;
bool topology_leader_node(const struct topo *t, char *ip, size_t ipsz, int *port);
uint64_t topology_host_id(void);
/* A shard adopted a new topology: its node follows the primary the topology
 * names (CLUSTER REPLICATE), or stops following when it is a primary. */
struct shard;
void topology_reconcile(struct shard *s);
/* The deletion of keys of slots given away (topology.c, drop_orphans): one
 * slice of about a millisecond; true while more remains (call again on a
 * later loop turn). The shard's timers call it. */
bool topology_drop_step(struct shard *s);
/* An import (CLUSTER MIGRATESLOTS) opens these slots here, their old keys
 * deleted first: the walk above must not delete the copies it receives. */
void topology_drop_forget(const uint8_t *slots);
/* Shard thread: the keys of this MIGRATING slot are being checked against
 * the target's after this node became a primary (topology_migcheck.c):
 * their commands get TRYAGAIN meanwhile. */
bool topology_slot_checking(unsigned slot);
/* The shard replicates another node now (CLUSTER RESET of a node that the
 * topology no longer holds). */
bool topology_shard_follows(struct shard *s);
/* A replica's shard promoted itself (FAILOVER's hand-over): propose its node
 * as the primary of its slots (PROMOTE). */
void topology_primary_now(struct shard *s);
/* A primary's shard handed over to its replica (FAILOVER): it stays that
 * replica's follower until the topology records the promotion. */
void topology_replica_now(struct shard *s);
/* Send a RESP command (req) to ip:port from a thread of its own; its reply
 * line becomes c's reply (c waits). */
void topology_relay(struct conn *c, const char *ip, int port, const struct buf *req);
const char *topology_bus_address(void);

/* CLUSTER LINKS: the connections this host's monitor keeps to other hosts'
 * nodes (the leader's failure detector, a follower's lease check); copied
 * into out[0..cap), the total count returned. Any thread. */
struct topology_link {
    char node_id[41];
    int64_t create_ms; /* unix ms */
};
size_t topology_links(struct topology_link *out, size_t cap);

/* The control plane's state for CLUSTER INFO, INFO and logs (any thread). */
struct topology_status {
    uint64_t host_id;
    bool leader;        /* this host leads the topology log */
    uint64_t leader_id; /* 0 when none is known */
    uint64_t term, commit_index, applied_index;
    unsigned voters, learners;
};
void topology_status(struct topology_status *out);
