/* node/core/conn.h: a client connection: read -> parse -> dispatch -> reply -> write.
 * Owned by its shard's thread; destroyed by conn_close(). */
#pragma once
#include "base/buf.h"
#include "proto/resp.h"

#include <event2/event_struct.h>
#include <stdbool.h>
#include <stdint.h>

struct shard;
struct shard_env;
struct ks;
struct cmd_spec;
struct multi_state;
struct pubsub_conn;
struct block_state;
struct persist;
struct acl_user;
struct effect_redo;
struct trk_conn;

enum conn_flag {
    CONN_CLOSE_AFTER_REPLY = 1u << 0,
    CONN_CLOSE_ASAP = 1u << 1,
    CONN_REPLY_OFF = 1u << 2,
    CONN_REPLY_SKIP_NEXT = 1u << 3, /* set by CLIENT REPLY SKIP, applies to the next command */
    CONN_REPLY_SKIP = 1u << 4,      /* suppress this command's reply */
    CONN_NO_EVICT = 1u << 5,
    CONN_PENDING = 1u << 6,    /* on the shard's pending-write list */
    CONN_WRITE_WAIT = 1u << 7, /* EV_WRITE armed: socket buffer was full */
    CONN_NO_TOUCH = 1u << 8,
    CONN_READ_PAUSED = 1u << 9,  /* output backlog too large: input waits */
    CONN_MULTI = 1u << 10,       /* inside MULTI: commands are queued */
    CONN_PUBSUB = 1u << 11,      /* has subscriptions: RESP2 subscribed-mode rules */
    CONN_BLOCKED = 1u << 12,     /* waiting in a blocking command: input waits */
    CONN_BLOCK_RETRY = 1u << 13, /* re-running the blocking command after a wake-up */
    CONN_IN_EXEC = 1u << 14,     /* running the commands of EXEC */
    CONN_REPLAY = 1u << 15,      /* internal: replays records (recovery, RESTORE); no socket */
    CONN_HELD = 1u << 16,        /* output waits for the WAL (persist.c) */
    CONN_EXEC_ABORT = 1u << 17,  /* EXEC's guard: an error reply is EXECABORT's reason */
    CONN_TOPO_WAIT = 1u << 18,   /* waits for a topology change to commit (features/topology) */
    CONN_READONLY = 1u << 19,    /* READONLY: a cluster replica serves its primary's slots' reads */
    CONN_ASKING = 1u << 20,      /* ASKING: the next command may use a slot being imported here */
    CONN_ASKING_NEW = 1u << 21,  /* (ASKING itself ran: the flag outlives this command) */
    CONN_IN_SCRIPT = 1u << 22,   /* running a Lua script (with CONN_IN_EXEC: one record) */
    CONN_MONITOR = 1u << 23,     /* MONITOR: receives every command the node runs */
    CONN_CPAUSED = 1u << 24,     /* held by CLIENT PAUSE (with CONN_BLOCKED; features/pause) */
    /* a command that reads or writes keys ran since the output was last
     * noted: synchronous replication holds that output (persist.c) */
    CONN_DATA = 1u << 30,
};

/* Fields are owned by conn.c; command handlers read them through the
 * accessors below, except the client-introspection commands (cmd_client.c). */
struct tls;
struct conn {
    struct shard *shard;
    struct shard_env *env; /* its shard's, as handlers read it (node/core/shard.h) */
    int fd;
    struct tls *tls; /* on a tls-port (base/tls.h), else NULL */
    uint32_t flags;
    uint8_t proto;               /* 2 or 3 */
    uint32_t db;                 /* the selected database (SELECT) */
    bool authed;                 /* logged in (or no login needed when it connected) */
    bool acl_slow;               /* dispatcher must call acl_allow() (see acl.h) */
    const struct acl_user *user; /* in the shard's ACL snapshot; never NULL on a socket */
    struct buf rbuf;
    struct buf wbuf;
    struct resp_parser parser;
    struct event rev;
    struct event wev;
    uint64_t id;
    char *name;
    char *lib_name, *lib_ver; /* CLIENT SETINFO, or NULL */
    int64_t ctime_ms;
    int64_t last_ms;
    const struct cmd_spec *last_cmd;
    /* Error replies written since the dispatcher last counted them (INFO
     * errorstats, total_error_replies), and the code of the last one. */
    uint32_t nerr;
    char errcode[32];
    bool failed;    /* the last command run for c replied with an error (set by the dispatcher) */
    uint8_t effect; /* what the running write did (enum effect, effect.h) */
    struct effect_redo *redo;   /* its redo command, when it built one (effect.c) */
    struct multi_state *mstate; /* MULTI queue and WATCHed keys (multi.c), or NULL */
    struct pubsub_conn *ps;     /* subscriptions (pubsub.c), or NULL */
    struct block_state *bstate; /* blocking command in progress (block.c), or NULL */
    struct trk_conn *trk;       /* CLIENT TRACKING, or a redirect target (tracking.c), or NULL */
    int64_t obl_soft_since;     /* when output first exceeded the soft limit, 0 = not */
    struct conn *prev, *next;   /* shard's list of connections */
    struct conn *pnext;         /* shard's pending-write list */
    /* persist.c: output may leave only once the WAL covers what the client
     * could have seen. marks[i]: output up to stream position pos needs LSN
     * lsn (written or synced, by mode); positions count bytes ever queued. */
    struct persist *persist; /* the shard's (persist.h), for the inline checks */
    struct conn *hnext;      /* on the shard's held list (CONN_HELD) */
    uint64_t own_lsn;        /* last record this client's writes produced */
    uint64_t out_done;       /* output bytes written to the socket so far */
    struct {
        uint64_t pos, lsn;
    } marks[4];
    uint8_t nmarks;
    size_t cmd_start; /* rbuf offset of the command being dispatched (a write
                                         paused by FAILOVER is parsed again from here) */
    char addr[64];
    char laddr[64];
    char lip[48]; /* local IP (for MOVED / CLUSTER SLOTS) */
};

/* The socket I/O behind conn_close, conn_flush and conn_resume, provided by
 * the server (node/server/conn.c) before any shard starts. */
struct conn_io {
    void (*close)(struct conn *c);
    bool (*flush)(struct conn *c);
    void (*resume)(struct conn *c);
};
void conn_set_io(const struct conn_io *ops);

/* Close now: unlink, free buffers, close the socket. */
void conn_close(struct conn *c);
/* Write as much of the output as the socket takes; arms EV_WRITE if needed.
 * Returns false when the connection was closed. */
bool conn_flush(struct conn *c);
/* Go on with buffered input after a pause (blocking command served). */
void conn_resume(struct conn *c);
/* Stop reading: close once the output buffer is written (QUIT, protocol errors). */
void conn_close_after_reply(struct conn *c);
