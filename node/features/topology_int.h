/* node/features/topology_int.h: what the three files of cluster mode's control
 * plane glue share (topology.c: identity, state machine, proposals, start and
 * stop; topology_join.c: hosts joining and proposals sent to the leader's host;
 * topology_monitor.c: the write lease and the failure detector;
 * topology_migcheck.c: a new primary's migrating keys). For
 * node/features/topology*.c only. */
#pragma once
#include "base/buf.h"
#include "cluster/topo.h"
#include "control/ctl.h"
#include "node/core/shard.h"
#include "node/features/topology.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ID_LEN TOPO_ID_LEN

struct topology_state {
    struct node *node;
    struct ctl *ctl;
    uint64_t host_id;
    char (*shard_ids)[ID_LEN + 1];
    struct topo *cur; /* control thread: the state machine's state */
    /* Shards take it shared (try-lock) around their calls into tp.ctl; joining
     * another host takes it exclusively to replace the control plane. */
    pthread_rwlock_t lock;
    struct ctl_opts opts; /* how it was started (joining restarts it without bootstrap) */
    char ip[46], addr[CTL_ADDR_MAX], bind[CTL_ADDR_MAX], dir[4200];
    atomic_bool joining;
    char idpath[4200]; /* cluster-config-file */
    /* Per shard: a FAILOVER hand-over the data plane made before the topology
     * recorded it (enum handover; topology.c). */
    atomic_int *handover;
};

/* A hand-over (CLUSTER FAILOVER) swaps the roles in the data plane first and
 * then proposes PROMOTE; until that commits, the topology still names the old
 * roles, and following it would undo the hand-over. */
enum handover {
    HANDOVER_NONE,
    HANDOVER_TOOK, /* this node took over: its PROMOTE is re-sent until committed */
    HANDOVER_GAVE, /* this node handed over: it stays a replica until the topology agrees */
};
extern struct topology_state tp;

/* The answer to a waiting client, run on its shard. */
struct answer {
    struct shard_msg m;
    uint64_t conn_id;
    enum topology_reply how;
    bool failed;
    bool raw;     /* text is a whole reply line from another host ("+..." or "-...") */
    bool refused; /* the entry committed and was refused (topology_job_answer) */
    uint64_t epoch;
    bool bumped;
    uint64_t index;           /* the entry's log index */
    char node_id[ID_LEN + 1]; /* TOPOLOGY_REPLY_RESET: the node's new id ("" to keep it) */
    bool forwarded; /* the client is another host (RVCLUSTER PROPOSE): tell it the index */
    char text[CTL_MSG_MAX + CTL_ADDR_MAX + 64];
};

struct request {
    struct shard *shard;
    uint64_t conn_id;
    enum topology_reply how;
    char node_id[ID_LEN + 1];
    struct buf next; /* the entries, each after a 4-byte length; next.off: the next to propose */
    size_t cur;      /* offset of the entry in flight (what a forward starts from) */
    bool no_forward; /* it came forwarded (RVCLUSTER PROPOSE): answer, do not forward again */
    /* topology_admit: the host to add to the log's servers once they committed */
    uint64_t admit_id;
    char admit_addr[CTL_ADDR_MAX];
    /* topology_propose_job: the answer runs this on the shard instead of
     * answer_run (no client waits) */
    void (*run)(struct shard *s, struct shard_msg *m);
};

/* topology.c */
void answer_run(struct shard *s, struct shard_msg *m);
void request_free(struct request *rq);
void tpi_bg_done(void *arg, const struct ctl_result *res);
int tpi_spawn(void *(*fn)(void *), void *arg);
/* topology_migcheck.c: from reconcile; primary: this shard's node serves its
 * slots now (see there). */
void tpi_migcheck(struct shard *s, const struct topo *t, int me, bool primary);
void tpi_sleep_ms(long ms);
/* Propose b with no client waiting (outcome logged); skipped while the
 * control plane is being replaced or is not running. */
void tpi_propose_bg(const struct buf *b);
/* Monitor thread: re-send the PROMOTE of every shard whose hand-over the
 * topology has not recorded yet. */
void tpi_handover_retry(void);
/* tp.lock taken shared with a running control plane; false after replying
 * to c why not (unlock with pthread_rwlock_unlock). */
struct conn;
bool tpi_lock_for(struct conn *c);

/* topology_join.c */
void admit_host(uint64_t id, const char *addr);
bool forward(struct request *rq, uint64_t leader_id);
int resp_call(const char *ip, int port, const struct buf *req, char *out, size_t n, int timeout_ms);
int resp_call_ex(const char *ip, int port, const struct buf *req, char *out, size_t n,
                 int timeout_ms, bool all);

/* A blocking connection to another node's client port: plain, or under
 * tls-cluster over TLS with the bus's client context (the node announces its
 * TLS port then, and its certificate is checked against tls-ca-cert-file).
 * Every step is bounded by the timeout given to tpi_connect. */
struct tls;
struct tpi_conn {
    int fd;
    struct tls *tls;
};
/* 0, or -1 with the reason in out (the connection is then closed). */
int tpi_connect(struct tpi_conn *c, const char *ip, int port, int timeout_ms, char *out, size_t n);
bool tpi_send(struct tpi_conn *c, const void *p, size_t n); /* all of it, or false */
ssize_t tpi_recv(struct tpi_conn *c, void *p, size_t n);    /* bytes, 0 at EOF, -1 */
void tpi_close(struct tpi_conn *c);                         /* fd < 0: a no-op */

/* AUTH on a new connection to another node with masteruser/masterauth when
 * masterauth is set (Redis's names for what a replica sends its primary; the
 * hosts of a cluster share them). 0, or -1 with the error in out. */
int tpi_auth(struct tpi_conn *c, char *out, size_t n);

/* topology_monitor.c */
int monitor_start(int64_t timeout, char *err, size_t errsz);
void monitor_stop(void);
