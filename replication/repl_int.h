/* replication/repl_int.h: state shared by the replication files. */
#pragma once
#include "replication/repl.h"
#include "replication/repl_host.h"

#include "base/buf.h"
#include "base/mem.h"
#include "replication/repl_msg.h"

#include <event2/event_struct.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- backlog (repl_backlog.c): the most recent record frames, in blocks that
 * records never straddle. Absolute positions count bytes ever appended. ---- */
struct bl_block {
    struct bl_block *next;
    uint64_t pos; /* absolute position of data[0] */
    uint64_t lsn; /* LSN of its first record */
    size_t len, cap;
    bool jumbo; /* one record larger than a block */
    uint8_t data[];
};
struct backlog {
    struct bl_block *head, *tail; /* oldest .. newest */
    struct bl_block *spare;       /* a dropped block kept for reuse */
    uint64_t first_lsn, next_lsn; /* records first_lsn .. next_lsn-1 are kept */
    uint64_t base, end;           /* absolute positions of the first and past the last byte */
    size_t size;                  /* repl-backlog-size: at least this much is kept */
};
void bl_init(struct backlog *bl, size_t size, uint64_t next_lsn);
void bl_deinit(struct backlog *bl);
/* CONFIG SET repl-backlog-size: applies to what is kept from now on. */
void bl_set_size(struct backlog *bl, size_t size);
/* Append one sealed frame, then drop what the size no longer keeps. */
void bl_append(struct backlog *bl, const uint8_t *frame, size_t len);
/* bl_append of each of the whole frames in p[0..n), faster. */
void bl_append_run(struct backlog *bl, const uint8_t *p, size_t n);
/* bl_push of each of them (no trim: see repl_trim_backlog). */
void bl_push_run(struct backlog *bl, const uint8_t *p, size_t n);
/* The two halves of bl_append, for a primary that must first save what
 * bl_trim would drop (everything below bl_trim_point) for its replicas. */
void bl_push(struct backlog *bl, const uint8_t *frame, size_t len);
/* bl_push in place: room for a frame of up to len bytes at the end, then
 * bl_commit with the length written. */
uint8_t *bl_reserve(struct backlog *bl, size_t len);
void bl_commit(struct backlog *bl, size_t len);
uint64_t bl_trim_point(const struct backlog *bl);
void bl_trim(struct backlog *bl);
/* The oldest block h goes once the others hold size bytes without it (so at
 * least size bytes are kept), or when it holds one record larger than a block
 * (a jumbo record is not kept past the backlog's size). */
static inline bool
bl_head_goes(const struct backlog *bl, const struct bl_block *h)
{
    uint64_t kept = bl->end - bl->base;
    return h != bl->tail && kept > bl->size && (kept - h->len >= bl->size || h->jumbo);
}
/* Absolute position of record lsn (next_lsn: the end); false when gone. */
bool bl_find(const struct backlog *bl, uint64_t lsn, uint64_t *pos);
/* The block holding position pos (NULL: not kept, or the end). */
const struct bl_block *bl_block_at(const struct backlog *bl, uint64_t pos);
/* The bytes at pos (a record there lies whole in its block). */
const uint8_t *bl_at(const struct backlog *bl, uint64_t pos);
static inline uint64_t
bl_end(const struct backlog *bl)
{
    return bl->end;
}
/* LSN of the first record after block b. */
static inline uint64_t
bl_block_next_lsn(const struct backlog *bl, const struct bl_block *b)
{
    return b->next ? b->next->lsn : bl->next_lsn;
}

/* ---- framing (repl_link.c) ---- */
#define REPL_MAX_FROM_REPLICA (1u << 20) /* replica -> primary: Hello, Ack */
/* A full sync's keys_hint pre-sizes the loading table up to this many keys
 * (about 54 MB of slots); past it the table grows as keys arrive. */
#define REPL_KEYS_HINT_MAX (1u << 22)
/* Records frame straight from backlog bytes (one copy). */
void repl_send_records(struct buf *out, uint64_t first, uint32_t count, const uint8_t *p, size_t n);
/* The bytes that precede n bytes of frames in a Records message (the u32
 * length and the protobuf tags and lengths, as protobuf-c packs them), so the
 * frames themselves can be sent from where they lie. Returns the length. */
#define REPL_RECORDS_HDR_MAX 40
size_t repl_records_hdr(uint8_t *h, uint64_t first, uint32_t count, size_t n);
/* The next message's packed ReplMsg without unpacking it: 1 with [*body,
 * *body + *n) inside in (valid until in is read into or consumed), 0 need
 * more (in grows as the message's bytes arrive, never by the announced
 * length at once), -1 over max. repl_consume(in, n) then drops it. */
int repl_next(struct buf *in, const uint8_t **body, uint32_t *n, uint32_t max);
void repl_consume(struct buf *in, uint32_t n);
/* Bytes still to read before the next message in `in` is whole (0: nothing
 * unread, or the message is whole already). */
size_t repl_need(const struct buf *in);
/* true when the packed ReplMsg [p, p + n) is a plain Records message, parsed
 * as protobuf-c would; false for any other or unusual message (unpack it with
 * protobuf-c, which also rejects malformed ones). */
bool repl_parse_records(const uint8_t *p, size_t n, struct repl_records *out);
/* read() into in (through the TLS session when tls is not NULL): >0 bytes,
 * 0 would block, -1 closed or error. */
int repl_read(int fd, struct tls *tls, struct buf *in);
/* write() out: 0 all written or would block (*blocked set), -1 error. */
int repl_write(int fd, struct tls *tls, struct buf *out, bool *blocked);

/* ---- a replica connected to this (primary) shard ---- */
#define REPL_GONE_MAX 8 /* disconnected replicas remembered (repl_retain_lsn) */
enum link_state { LINK_HELLO, LINK_FULL_WAIT, LINK_FULL, LINK_ONLINE };
struct link {
    struct repl *r;
    struct link *next;
    int fd;
    struct tls *tls; /* the RVSYNC connection came over TLS */
    struct event rev, wev;
    bool wev_on;
    struct buf in, out;
    enum link_state st;
    char ip[64];
    int port;
    char id[41];
    uint64_t cid; /* the RVSYNC connection's client id (CLIENT LIST) */
    char addr[64], laddr[64], user[64];
    int64_t ctime_ms;
    uint64_t sent_pos, sent_lsn; /* backlog position / LSN of the next record to ship */
    uint64_t ack, durable;
    int64_t last_io_ms, last_ack_ms;
    uint64_t out_done;         /* bytes of out ever written to the socket */
    uint64_t snap_end;         /* out_done at the end of the full sync's data or of the
                                      * records read back from the WAL (not limited) */
    int64_t obl_soft_since_ms; /* unsent output above the soft limit since, 0 = not */
    bool close_asap;           /* over client-output-buffer-limit replica: closed before poll */
};

/* ---- following a primary ---- */
enum up_state {
    UP_NONE,
    UP_CONNECT,
    UP_CONNECTING,
    UP_HANDSHAKE,
    UP_WELCOME,
    UP_SYNC,
    UP_FULL,
    UP_ONLINE
};
struct upstream {
    int fd;
    struct tls *tls; /* tls-replication: the session (its handshake runs in UP_CONNECTING) */
    struct event rev, wev;
    bool rev_on, wev_on;
    struct buf in, out;
    enum up_state st;
    uint64_t cid; /* client id of this master link (CLIENT LIST), per connection */
    int64_t ctime_ms;
    int resp_left; /* RESP replies still expected in the handshake */
    int64_t since_ms, last_io_ms, last_ack_sent_ms;
    uint64_t acked, acked_durable; /* what the last ack said */
    bool ack_asked;                /* a GetAck came in this read */
    uint64_t durable_want;         /* a GetAck found the own WAL behind: ack once it is durable */
    int64_t backoff_ms;
    void *loading; /* full sync: the keyspace being loaded beside the served one (host's) */
    uint64_t snap_lsn, snap_keys, snap_bytes;
    char snap_replid[41];
    uint64_t snap_epoch;
    char err[256]; /* last failure, logged once per episode */
};

struct waiter { /* WAIT / WAITAOF, or a write paused by FAILOVER */
    struct waiter *next;
    void *c; /* the host's client */
    bool paused;
    uint64_t lsn;
    long need;
    long need_local;     /* WAITAOF numlocal; -1 for WAIT */
    int64_t deadline_ms; /* 0: forever */
};

struct repl {
    struct repl_hot hot;             /* must stay first (repl.h) */
    const struct repl_host_ops *ops; /* the shard, through repl_host.h */
    void *host;
    struct repl_host_info hi; /* fixed facts about the shard */
    struct repl_cfg cfg;      /* repl_cfg's copy, of the snapshot cfg_id */
    const void *cfg_id;
    char replid[41], replid2[41];
    int64_t second_off; /* -1: none */
    bool crash_replid;  /* replid drawn by an unclean start (repl.c), not adopted */
    uint64_t epoch;
    struct backlog bl;
    /* primary side */
    struct link *links;
    unsigned nlinks;
    struct { /* replicas whose link closed: their WAL is kept a while */
        char id[41];
        uint64_t ack;
        int64_t at_ms;
    } gone[REPL_GONE_MAX];
    uint64_t sync_full, sync_partial_ok, sync_partial_err;
    uint64_t sync_divergent; /* full syncs of replicas holding records this history lacks */
    struct waiter *waiters;
    int64_t last_hb_ms;
    /* shipping is batched (repl-ship-delay-us): time of the last ship, and the
     * timer that ships what a busy loop left waiting */
    uint64_t last_ship_us;
    struct event ship_ev;
    bool ship_armed;
    /* a WAIT, WAITAOF or FAILOVER began waiting: ask every replica for an
     * ack at the next ship (replicas otherwise ack once per cron tick) */
    bool ask_ack;
    struct rsnap *walk;    /* full sync in progress (repl_primary.c) */
    uint64_t fenced_epoch; /* != 0: a newer history exists (this epoch, or this one
                                      * with a greater replid), writes refused; persisted */
    char state_err[300];   /* why repl.state could not be written last */
    bool role_from_state;  /* shard 0 follows the primary repl.state named: publish it */
    struct {
        enum { FO_NONE, FO_WAIT, FO_PROGRESS } st;
        bool to, force;
        char host[256];
        int port;
        int64_t deadline_ms;
        /* failover-in-progress: handed over, until the target's new history
         * reaches this shard (done) or the target shows it did not take over
         * (rolled back) */
        uint64_t epoch0; /* this shard's epoch and history at the hand-over */
        char replid0[41];
        char target_id[41]; /* the target node's run id (its Hello) */
        bool expired;       /* no word within FO_CONFIRM_MS: writers resumed */
    } fo;                   /* FAILOVER (repl_failover.c) */
    /* replica side */
    bool replica;
    char mhost[256];
    int mport;
    /* Following one node (cluster mode: the topology names the primary node):
     * mport is its own port, and the Hello says nshards 0 (no shard layout to
     * match: a node-to-node link). */
    bool direct;
    struct upstream up;
    void *rp; /* the host's replayer (replay_open) */
    struct rv_str *argv;
    size_t argv_cap;
};

uint64_t repl_last_lsn(const struct repl *r);
/* The port this shard's link goes to: the same-numbered shard of the primary
 * process, or the one node it follows. */
static inline int
repl_link_port(const struct repl *r)
{
    return r->direct ? r->mport : r->mport + (int)r->hi.shard;
}
/* Shorthands for the host's clock and configuration. */
static inline int64_t
repl_now(const struct repl *r)
{
    return r->ops->now_ms(r->host);
}
/* The configuration as the shard sees it now: asked of the host again only
 * when its snapshot changed (one indirect call otherwise). */
static inline const struct repl_cfg *
repl_cfg(struct repl *r)
{
    const void *id = r->ops->cfg_id(r->host);
    if (rv_unlikely(id != r->cfg_id)) {
        r->ops->cfg(r->host, &r->cfg);
        r->cfg_id = id;
    }
    return &r->cfg;
}
static inline struct wal *
repl_wal(const struct repl *r)
{
    return r->ops->wal(r->host);
}
void repl_backlog_start(struct repl *r);
/* After bl_push or bl_push_run: drop what the backlog's size no longer keeps,
 * first queueing it for connected replicas that have not been sent it. */
void repl_trim_backlog(struct repl *r);
void repl_new_replid(struct repl *r);
/* Write repl.state (fsynced file and directory); RV_OK, or RV_EIO with
 * r->state_err set and logged. A no-op in memory mode. */
int repl_save_state(struct repl *r);
/* History (e1, id1) supersedes (e2, id2): a greater epoch, or (two promotions
 * from one epoch) the same epoch above 0 and a greater replid. */
bool repl_newer(uint64_t e1, const char *id1, uint64_t e2, const char *id2);
/* id is the history this shard continues (its replid2): never a rival's. */
bool repl_in_lineage(const struct repl *r, const char *id);
/* who told this primary of a newer history at epoch: refuse writes from now
 * on, across restarts too, until REPLICAOF. */
void repl_fence(struct repl *r, uint64_t epoch, const char *who);
void repl_forget_state(struct repl *r);

/* repl_primary.c */

void primary_client_list(struct repl *r, const int64_t *ids, int nids, struct buf *out);
long primary_client_kill(struct repl *r, int64_t id, const struct rv_str *addr);
/* repl_replica.c: the master link's CLIENT LIST line / CLIENT KILL */
void replica_client_list(struct repl *r, const int64_t *ids, int nids, struct buf *out);
long replica_client_kill(struct repl *r, int64_t id, const struct rv_str *addr);
void primary_ship(struct repl *r);
void primary_stop_timer(struct repl *r);
void primary_cron(struct repl *r, int64_t now);
void primary_drop_all(struct repl *r);
void primary_check_waiters(struct repl *r, int64_t now);
long primary_good_replicas(struct repl *r, int64_t now);
/* Synchronous replication: raise hot.sync_lsn to the highest LSN that
 * min-sync-replicas online replicas acked (after acks, or a config change). */
void primary_sync_update(struct repl *r);

void primary_flush_link(struct link *l);
/* The backlog is about to drop the bytes below upto: connected replicas that
 * have not shipped them yet get them copied into their output buffers now
 * (bounded by client-output-buffer-limit replica). */
void primary_save_unsent(struct repl *r, uint64_t upto);


/* repl_failover.c */
/* A FAILOVER in progress on this shard ends (REPLICAOF came): paused writers go on. */
void failover_cancel(struct repl *r, const char *why);
/* repl_primary.c, a Hello on this shard during failover-in-progress: when it
 * comes from the target at this shard's old epoch, the target did not take
 * over and never will (its link that carried Promote is gone): roll back. */
void failover_hello(struct repl *r, const char *ip, const struct repl_hello *h);
/* Promote from the primary: take over (true), or false with err (refused). */
bool failover_take_over(struct repl *r, uint64_t lsn, char *err, size_t errsz);
const char *failover_state_name(const struct repl *r);
bool failover_pause_write(struct repl *r, void *c);
void failover_check(struct repl *r, int64_t now);

/* repl_replica.c */
void replica_follow(struct repl *r, const char *host, int port);
void replica_follow_node(struct repl *r, const char *host, int port);
void replica_stop(struct repl *r);
void replica_cron(struct repl *r, int64_t now);
void replica_before_poll(struct repl *r);
/* REPLICAOF NO ONE on one shard; RV_EIO (logged, still a replica) when the
 * new state could not be saved first. */
int repl_promote(struct repl *r);
/* The shard just became a replica: as Redis, its blocked clients (BLMOVE,
 * XREAD BLOCK, ..., WAIT) get -UNBLOCKED, so that a woken one never writes
 * here (and a WAIT does not wait for replicas it no longer has). */
void repl_unblock_demoted(struct repl *r);
/* Run the on_role_change hook (node/features/hook.h) once per node, from shard 0:
 * host NULL means this node's own address (it became the primary). */
void repl_role_hook(struct repl *r, const char *old_role, const char *new_role, const char *host,
                    int port);
const char *replica_state_name(const struct repl *r);
bool replica_link_up(const struct repl *r);
/* After the role, the link state or the config changed: recompute the
 * replica-serve-stale-data refusal flag the dispatcher tests. */
void repl_stale_update(struct repl *r);
