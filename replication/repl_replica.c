/* replication/repl_replica.c: following a primary shard: non-blocking
 * connect, the RESP handshake, then frames: Welcome -> Hello -> Continue or
 * a full sync, then Records applied with the records' own clock; acks after
 * every batch and each second; reconnects with backoff (100 ms .. 5 s). */
#include "replication/repl_int.h"

#include "base/tls.h"
#include "base/netaddr.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "wal/wal.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void on_up_read(evutil_socket_t fd, short what, void *arg);
static void on_up_write(evutil_socket_t fd, short what, void *arg);

static void
up_close(struct repl *r)
{
    struct upstream *u = &r->up;
    if (u->fd >= 0) {
        event_del(&u->rev);
        event_del(&u->wev);
        tls_free(u->tls);
        u->tls = NULL;
        close(u->fd);
        u->fd = -1;
    }
    u->rev_on = u->wev_on = false;
    buf_deinit(&u->in);
    buf_deinit(&u->out);
    if (u->loading != NULL) {
        r->ops->load_drop(r->host, u->loading);
        u->loading = NULL;
    }
    u->ack_asked = false;
    u->durable_want = 0;
}

/* The link failed: log once per episode, retry after a backoff. */
static void
up_fail(struct repl *r, const char *why)
{
    struct upstream *u = &r->up;
    bool was_up = u->st == UP_ONLINE;
    if (was_up || strcmp(u->err, why) != 0) {
        log_warn("[shard %u] replication link to %s:%d: %s", r->hi.shard, r->mhost,
                 repl_link_port(r), why);
        snprintf(u->err, sizeof(u->err), "%s", why);
    }
    up_close(r);
    u->st = UP_CONNECT;
    repl_stale_update(r);
    int64_t now = repl_now(r);
    if (was_up) {
        u->since_ms = now;
    }
    u->backoff_ms = was_up ? 100 : u->backoff_ms < 100 ? 100 : u->backoff_ms * 2;
    if (u->backoff_ms > 5000) {
        u->backoff_ms = 5000;
    }
    u->last_io_ms = now; /* retry at last_io + backoff */
}

static bool
up_flush(struct repl *r)
{
    struct upstream *u = &r->up;
    bool blocked;
    if (repl_write(u->fd, u->tls, &u->out, &blocked) < 0) {
        up_fail(r, "write error");
        return false;
    }
    if (blocked != u->wev_on) {
        if (blocked) {
            event_add(&u->wev, NULL);
        } else {
            event_del(&u->wev);
        }
        u->wev_on = blocked;
    }
    return true;
}

static void
resp_cmd(struct buf *b, int argc, const char *const *argv)
{
    char h[32];
    int n = snprintf(h, sizeof(h), "*%d\r\n", argc);
    buf_append(b, h, (size_t)n);
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]);
        n = snprintf(h, sizeof(h), "$%zu\r\n", len);
        buf_append(b, h, (size_t)n);
        buf_append(b, argv[i], len);
        buf_append(b, "\r\n", 2);
    }
}

static void
up_connect(struct repl *r)
{
    struct upstream *u = &r->up;
    char port[16];
    snprintf(port, sizeof(port), "%d", repl_link_port(r));
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV },
                    *ai = NULL;
    int rc = getaddrinfo(r->mhost, port, &hints, &ai);
    if (rc != 0) {
        hints.ai_flags = AI_NUMERICSERV; /* a name: resolved here (blocking, once per attempt) */
        rc = getaddrinfo(r->mhost, port, &hints, &ai);
    }
    if (rc != 0 || ai == NULL) {
        char e[300];
        snprintf(e, sizeof(e), "cannot resolve %s: %s", r->mhost, gai_strerror(rc));
        up_fail(r, e);
        return;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        up_fail(r, strerror(errno));
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc != 0 && errno != EINPROGRESS) {
        char e[300];
        snprintf(e, sizeof(e), "connect: %s", strerror(errno));
        close(fd);
        up_fail(r, e);
        return;
    }
    u->fd = fd;
    u->cid = r->ops->next_client_id(r->host);
    u->ctime_ms = repl_now(r);
    buf_init(&u->in);
    buf_init(&u->out);
    event_assign(&u->rev, r->ops->base(r->host), fd, EV_READ | EV_PERSIST, on_up_read, r);
    event_assign(&u->wev, r->ops->base(r->host), fd, EV_WRITE | EV_PERSIST, on_up_write, r);
    event_add(&u->wev, NULL);
    u->wev_on = true;
    u->st = UP_CONNECTING;
    u->last_io_ms = repl_now(r);
}

/* The port this shard announces to its primary (REPLCONF listening-port and
 * the Hello): replica-announce-port, else the TLS port when the links run
 * over TLS (as Redis), else the plain one; plus the shard's index. */
static int
announce_port(const struct repl *r, const struct repl_cfg *cfg)
{
    int64_t p = cfg->replica_announce_port > 0              ? cfg->replica_announce_port
                : cfg->tls_replication && cfg->tls_port > 0 ? cfg->tls_port
                                                            : cfg->port;
    return (int)p + (int)r->hi.shard;
}

static void
up_handshake(struct repl *r)
{
    struct upstream *u = &r->up;
    const struct repl_cfg *cfg = repl_cfg(r);
    u->resp_left = 0;
    if (cfg->masterauth[0]) {
        if (cfg->masteruser[0]) {
            const char *a[] = { "AUTH", cfg->masteruser, cfg->masterauth };
            resp_cmd(&u->out, 3, a);
        } else {
            const char *a[] = { "AUTH", cfg->masterauth };
            resp_cmd(&u->out, 2, a);
        }
        u->resp_left++;
    }
    char port[16];
    snprintf(port, sizeof(port), "%d", announce_port(r, cfg));
    const char *lp[] = { "REPLCONF", "listening-port", port };
    resp_cmd(&u->out, 3, lp);
    u->resp_left++;
    if (cfg->replica_announce_ip[0]) {
        const char *ip[] = { "REPLCONF", "ip-address", cfg->replica_announce_ip };
        resp_cmd(&u->out, 3, ip);
        u->resp_left++;
    }
    const char *sy[] = { "RVSYNC" };
    resp_cmd(&u->out, 1, sy);
    u->resp_left++;
    u->st = UP_HANDSHAKE;
    event_add(&u->rev, NULL);
    u->rev_on = true;
    up_flush(r);
}

/* tls-replication: the TLS handshake, between the TCP connect and the
 * replication handshake; each step waits for what OpenSSL asks for. */
static void
up_tls_step(struct repl *r)
{
    struct upstream *u = &r->up;
    int rc = tls_handshake(u->tls);
    bool want_write = rc == TLS_WANT_WRITE, want_read = rc == TLS_WANT_READ;
    if (rc == TLS_ERROR) {
        char e[300];
        snprintf(e, sizeof(e), "TLS handshake: %s", tls_strerror(u->tls));
        up_fail(r, e);
        return;
    }
    if (want_write != u->wev_on) {
        if (want_write) {
            event_add(&u->wev, NULL);
        } else {
            event_del(&u->wev);
        }
        u->wev_on = want_write;
    }
    if (want_read != u->rev_on) {
        if (want_read) {
            event_add(&u->rev, NULL);
        } else {
            event_del(&u->rev);
        }
        u->rev_on = want_read;
    }
    if (rc == 1) {
        u->last_io_ms = repl_now(r);
        up_handshake(r);
    }
}

static void
on_up_write(evutil_socket_t fd, short what, void *arg)
{
    struct repl *r = arg;
    struct upstream *u = &r->up;
    (void)what;
    if (u->st == UP_CONNECTING && u->tls != NULL) {
        up_tls_step(r);
        return;
    }
    if (u->st == UP_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            char e[300];
            snprintf(e, sizeof(e), "connect: %s", strerror(err));
            up_fail(r, e);
            return;
        }
        event_del(&u->wev);
        u->wev_on = false;
        u->last_io_ms = repl_now(r);
        struct tls_ctx *ctx = r->ops->tls_client ? r->ops->tls_client(r->host) : NULL;
        if (ctx != NULL) {
            u->tls = tls_new(ctx, u->fd, false);
            tls_ctx_unref(ctx);
            if (u->tls == NULL) {
                up_fail(r, "TLS: cannot start a session");
                return;
            }
            up_tls_step(r);
            return;
        }
        up_handshake(r);
        return;
    }
    up_flush(r);
}

static void
send_ack(struct repl *r)
{
    struct upstream *u = &r->up;
    struct repl_msg m = { .kind = RM_ACK };
    m.u.ack = (struct repl_ack){ repl_last_lsn(r), r->ops->durable_lsn(r->host) };
    repl_msg_put(&u->out, &m);
    u->last_ack_sent_ms = repl_now(r);
    u->acked = m.u.ack.applied;
    u->acked_durable = m.u.ack.durable;
}

/* Acks go out once per cron tick when something changed (and every second
 * regardless), not per read: under load a read comes every millisecond or
 * so, and each ack costs both sides a wake-up. A primary that waits (WAIT,
 * WAITAOF, FAILOVER) asks with a GetAck; the answer covers this whole read,
 * and a WAITAOF also gets an ack once the own WAL made it durable. */
static void
ack_if_asked(struct repl *r)
{
    struct upstream *u = &r->up;
    if (!u->ack_asked || u->st != UP_ONLINE) {
        return;
    }
    u->ack_asked = false;
    send_ack(r);
    u->durable_want = repl_wal(r) && u->acked_durable < u->acked ? u->acked : 0;
}

void
replica_before_poll(struct repl *r)
{
    struct upstream *u = &r->up;
    if (rv_unlikely(u->durable_want != 0) && u->st == UP_ONLINE &&
        r->ops->durable_lsn(r->host) >= u->durable_want) {
        u->durable_want = 0;
        send_ack(r);
        up_flush(r);
    }
}

static __attribute__((noinline, cold)) void
apply_failed(struct repl *r, uint64_t lsn, const struct rv_str *argv, const char *e)
{
    log_warn("[shard %u] applying LSN %" PRIu64 " (%.*s): %s", r->hi.shard, lsn,
             (int)(argv[0].len > 32 ? 32 : argv[0].len), argv[0].p, e);
}

/* An unsealed payload of several commands is parsed whole before any of them
 * runs: with no CRC, damage must close the link with nothing of it applied.
 * A sealed one's CRC already proves its bytes are the primary's (parsing it
 * twice cost a full sync's load 8 % more instructions); apply_frames still
 * refuses it, malformed, before it is logged. A single command is parsed
 * before it runs anyway (apply_frames checks its trailing bytes). */
static bool
pay_whole(const struct wal_pay_it *it, struct rv_str **argv, size_t *cap)
{
    struct wal_pay_it t = *it;
    int argc, k;
    while ((k = wal_pay_next(&t, &argc, argv, cap)) == 1) {
    }
    return k == 0;
}

/* Apply record frames: the stream (LSNs checked, each record logged verbatim
 * to the own WAL and backlog) or a snapshot. Frames are applied in place
 * (views into p): handlers replace argv entries, never their bytes. */
static int
apply_frames(struct repl *r, const uint8_t *p, size_t n, bool stream, char *err, size_t errsz)
{
    const struct repl_host_ops *ops = r->ops;
    if (r->rp == NULL) {
        r->rp = ops->replay_open(r->host);
    }
    /* records run with their own clock, as on the primary */
    ops->apply_begin(r->host, stream);
    int64_t clock = INT64_MIN;
    uint64_t want = repl_last_lsn(r) + 1, want0 = want;
    const uint8_t *run = p; /* the frames applied so far, for the backlog */
    /* In locals, not reloaded from r after every command. */
    void *rp = r->rp;
    struct wal *wal = stream ? ops->wal(r->host) : NULL;
    struct rv_str *argv = r->argv;
    size_t cap = r->argv_cap;
    int rc = 0;
    while (n > 0) {
        struct wal_rec rec;
        if (wal_frame_parse(p, n, &rec) != 1) {
            snprintf(err, errsz, "malformed record in the stream");
            rc = -1;
            break;
        }
        size_t sz = WAL_REC_HDR + rec.len;
        if (stream && rec.lsn != want) {
            snprintf(err, errsz, "record LSN %" PRIu64 " where %" PRIu64 " was expected", rec.lsn,
                     want);
            rc = -1;
            break;
        }
        struct wal_pay_it it;
        int argc, k;
        char e[256];
        if (!wal_pay_open(&it, rec.payload, rec.len) ||
            (it.left > 1 && !rec.sealed && !pay_whole(&it, &argv, &cap))) {
            snprintf(err, errsz, "malformed payload at LSN %" PRIu64, rec.lsn);
            rc = -1;
            break;
        }
        if (rec.ts_ms != clock) {
            clock = rec.ts_ms;
            ops->set_clock(r->host, clock);
        }
        ops->replay_record(rp);
        while ((k = wal_pay_next(&it, &argc, &argv, &cap)) == 1 &&
               (it.left > 0 || it.p == it.end)) {
            if (!ops->replay_exec(rp, argc, argv, e, sizeof(e))) {
                apply_failed(r, rec.lsn, argv, e);
            }
        }
        if (k != 0) {
            snprintf(err, errsz, "malformed payload at LSN %" PRIu64, rec.lsn);
            rc = -1;
            break;
        }
        if (stream) {
            /* Same LSN, same bytes: the frame (CRC checked above, or sealed by
             * wal_rec_put when it came unsealed from a memory-mode primary)
             * is logged as is. */
            if (wal) {
                wal_rec_put(wal, p, sz);
            }
            want++;
        }
        p += sz;
        n -= sz;
    }
    r->argv = argv;
    r->argv_cap = cap;
    if (stream && wal == NULL && want != want0) {
        ops->set_next_lsn(r->host, want); /* memory mode: the LSNs applied */
    }
    /* (the backlog copy below is nobody's command time) */
    ops->apply_end(r->host, stream);
    if (stream) {
        bl_push_run(&r->bl, run, (size_t)(p - run)); /* nothing reads the backlog meanwhile */
        repl_trim_backlog(r); /* our own replicas keep what they were not sent yet */
    }
    return rc;
}

static void
adopt_history(struct repl *r, const char *replid, uint64_t epoch)
{
    if (strcmp(r->replid, replid) != 0) {
        r->crash_replid = false;
        memcpy(r->replid2, r->replid, 41);
        r->second_off = (int64_t)repl_last_lsn(r) + 1;
        snprintf(r->replid, sizeof(r->replid), "%s", replid);
    }
    r->epoch = epoch;
    repl_save_state(r);
}

/* Snapshot records go into a keyspace beside the served one (clients keep
 * reading the old data meanwhile: replica-serve-stale-data yes), one chunk at
 * a time, so no pause is longer than one chunk's worth of keys. */
static int
load_chunk(struct repl *r, const uint8_t *p, size_t n, char *err, size_t errsz)
{
    /* a checkpoint walking the served keyspace must not see these */
    void *served = r->ops->load_enter(r->host, r->up.loading);
    int rc = apply_frames(r, p, n, false, err, errsz);
    r->ops->load_leave(r->host, served);
    return rc;
}

static void
full_sync_begin(struct repl *r, const struct repl_full_begin *b)
{
    struct upstream *u = &r->up;
    if (u->st != UP_FULL && repl_last_lsn(r) > 0) {
        log_warn(
            "[shard %u] full sync from %s:%d replaces this shard's data: history %s up to LSN %" PRIu64
            " is discarded (%zu keys)",
            r->hi.shard, r->mhost, repl_link_port(r), r->replid, repl_last_lsn(r),
            r->ops->keys(r->host));
    }
    u->st = UP_FULL;
    if (u->loading != NULL) {
        r->ops->load_drop(r->host, u->loading);
    }
    /* keys_hint only pre-sizes the table (the primary's own count, which
     * may change): capped, so a wrong one costs a resize, not an allocation
     * of its own size. */
    uint64_t hint = b->keys_hint < REPL_KEYS_HINT_MAX ? b->keys_hint : REPL_KEYS_HINT_MAX;
    u->loading = r->ops->load_new(r->host, (size_t)(hint + hint / 8));
    u->snap_lsn = b->lsn;
    u->snap_epoch = b->epoch;
    u->snap_bytes = 0;
    snprintf(u->snap_replid, sizeof(u->snap_replid), "%s", b->replid);
}

/* The switch: the old data directory is marked as replaced before the new
 * keyspace is served, and the new history id is saved before the WAL
 * continues at lsn + 1 (persist_rebase_begin / persist_rebase). */
static void
full_sync_done(struct repl *r, uint64_t lsn)
{
    struct upstream *u = &r->up;
    char err[256];
    int64_t t0 = clock_mono_us();
    if (r->ops->rebase_begin(r->host, lsn, err, sizeof(err)) != 0) {
        log_warn("[shard %u] full sync: cannot replace the data directory: %s", r->hi.shard, err);
        repl_new_replid(r); /* whatever the disk holds now, the next sync is a full one */
        up_fail(r, "local data directory failed");
        return;
    }
    repl_forget_state(r);
    r->ops->load_install(r->host, u->loading); /* the old keyspace goes */
    u->loading = NULL;
    snprintf(r->replid, sizeof(r->replid), "%s", u->snap_replid);
    r->crash_replid = false;
    memset(r->replid2, '0', 40);
    r->second_off = -1;
    r->epoch = u->snap_epoch;
    repl_save_state(r);
    if (r->ops->rebase(r->host, lsn, err, sizeof(err)) != 0) {
        log_warn("[shard %u] full sync: cannot restart the data directory at LSN %" PRIu64 ": %s",
                 r->hi.shard, lsn, err);
        repl_new_replid(r); /* unknown to the primary: the next sync is a full one */
        up_fail(r, "local data directory failed");
        return;
    }
    r->hot.backlog = false;
    bl_deinit(&r->bl);
    primary_drop_all(r); /* our own replicas follow a history that just ended */
    repl_backlog_start(r);
    u->st = UP_ONLINE;
    repl_stale_update(r);
    log_notice("[shard %u] full sync from %s:%d done: %" PRIu64 " keys at LSN %" PRIu64 " (switch "
               "%.1f ms)",
               r->hi.shard, r->mhost, repl_link_port(r), u->snap_keys, lsn,
               (double)(clock_mono_us() - t0) / 1000.0);
    send_ack(r);
}

/* Records: applied in place; the ack goes out once the whole read is applied
 * (on_up_read). false when the link was closed. */
static bool
on_records(struct repl *r, const struct repl_records *rec)
{
    char err[300];
    if (r->up.st != UP_ONLINE) {
        up_fail(r, "records before the sync finished");
        return false;
    }
    if (apply_frames(r, rec->frames, rec->len, true, err, sizeof(err)) != 0) {
        up_fail(r, err);
        return false;
    }
    return true;
}

/* One message; false when the link was closed. */
static bool
on_msg(struct repl *r, const struct repl_msg *m)
{
    struct upstream *u = &r->up;
    char err[300];
    switch (m->kind) {
    case RM_WELCOME: {
        unsigned ns = r->direct ? 0 : r->hi.nshards, sh = r->direct ? 0 : r->hi.shard;
        if (!r->direct && (m->u.welcome.nshards != ns || m->u.welcome.shard != sh)) {
            snprintf(err, sizeof(err),
                     "shard count mismatch: the primary has %u shards, this node %u",
                     m->u.welcome.nshards, ns);
            up_fail(r, err);
            u->backoff_ms = 5000;
            return false;
        }
        /* A primary that continues our history under a new replid (an
         * unclean restart draws one at the same epoch) is not a rival. */
        const char *w2 = m->u.welcome.replid2;
        bool stale = repl_newer(r->epoch, r->replid, m->u.welcome.epoch, m->u.welcome.replid) &&
                     !(w2 && strcmp(w2, r->replid) == 0);
        struct repl_msg o = { .kind = RM_HELLO };
        struct repl_hello *h = &o.u.hello;
        const struct repl_cfg *cfg = repl_cfg(r);
        h->replica_id = r->hi.run_id;
        h->shard = sh;
        h->nshards = ns;
        h->replid = r->hot.backlog || repl_last_lsn(r) > 0 ? r->replid : "?";
        if (r->crash_replid && repl_last_lsn(r) + 1 == (uint64_t)r->second_off) {
            /* Nothing written under the replid an unclean start drew: all we
             * hold is replid2's history, which the primary may know (it was
             * our replica before a failover). */
            h->replid = r->replid2;
        }
        h->epoch = r->epoch;
        h->applied_lsn = repl_last_lsn(r);
        h->listening_port = (uint32_t)announce_port(r, cfg);
        repl_msg_put(&u->out, &o);
        if (stale) {
            /* The Hello tells the stale primary our epoch: it fences itself. */
            up_flush(r);
            snprintf(err, sizeof(err),
                     "the primary is at replication epoch %" PRIu64 ", older than "
                     "this node's %" PRIu64 ": not following a stale primary",
                     m->u.welcome.epoch, r->epoch);
            up_fail(r, err);
            u->backoff_ms = 5000;
            return false;
        }
        u->st = UP_SYNC;
        return true;
    }
    case RM_CONT:
        adopt_history(r, m->u.cont.replid, m->u.cont.epoch);
        repl_backlog_start(r);
        u->st = UP_ONLINE;
        repl_stale_update(r);
        u->err[0] = '\0';
        u->backoff_ms = 0;
        log_notice("[shard %u] partial resync from %s:%d at LSN %" PRIu64, r->hi.shard, r->mhost,
                   repl_link_port(r), m->u.cont.from_lsn);
        send_ack(r);
        return true;
    case RM_FULL_BEGIN: full_sync_begin(r, &m->u.full_begin); return true;
    case RM_FULL_CHUNK:
        if (u->st != UP_FULL) {
            up_fail(r, "snapshot data outside a full sync");
            return false;
        }
        u->snap_bytes += m->u.full_chunk.len;
        if (load_chunk(r, m->u.full_chunk.data, m->u.full_chunk.len, err, sizeof(err)) != 0) {
            up_fail(r, err);
            return false;
        }
        return true;
    case RM_FULL_END:
        if (u->st != UP_FULL) {
            up_fail(r, "snapshot end outside a full sync");
            return false;
        }
        u->snap_keys = m->u.full_end.keys;
        u->err[0] = '\0';
        u->backoff_ms = 0;
        full_sync_done(r, m->u.full_end.lsn);
        return u->fd >= 0;
    case RM_RECORDS: return on_records(r, &m->u.records);
    case RM_GET_ACK: u->ack_asked = true; return true;
    case RM_PROMOTE:
        if (!failover_take_over(r, m->u.promote, err, sizeof(err))) {
            up_fail(r, err); /* reconnects: the old primary then rolls back */
        }
        return false; /* the link is closed */
    case RM_ERROR:
        snprintf(err, sizeof(err), "the primary refused: %s", m->u.error);
        up_fail(r, err);
        u->backoff_ms = 5000;
        return false;
    default: return true;
    }
}

static void
on_up_read(evutil_socket_t fd, short what, void *arg)
{
    struct repl *r = arg;
    struct upstream *u = &r->up;
    (void)fd;
    (void)what;
    if (u->st == UP_CONNECTING && u->tls != NULL) {
        up_tls_step(r);
        return;
    }
    int n = repl_read(u->fd, u->tls, &u->in);
    if (n < 0) {
        up_fail(r, "connection lost");
        return;
    }
    u->last_io_ms = r->ops->refresh_clock(r->host);
    while (u->st == UP_HANDSHAKE && u->resp_left > 0) {
        char *s = u->in.data + u->in.off;
        char *e = memchr(s, '\n', u->in.len - u->in.off);
        if (e == NULL) {
            return;
        }
        if (s[0] == '-') {
            char why[300];
            snprintf(why, sizeof(why), "handshake refused: %.*s",
                     (int)(e - s > 200 ? 200 : e - s - 1), s + 1);
            up_fail(r, why);
            return;
        }
        u->in.off += (size_t)(e - s) + 1;
        if (--u->resp_left == 0) {
            u->st = UP_WELCOME;
        }
    }
    const uint8_t *body;
    uint32_t len;
    int rc;
    const struct repl_cfg *cfg = repl_cfg(r);
    uint32_t max = (uint32_t)cfg->repl_frame_limit;
    while ((rc = repl_next(&u->in, &body, &len, max)) == 1) {
        struct repl_records rec;
        bool ok;
        if (repl_parse_records(body, len, &rec)) {
            ok = on_records(r, &rec);
        } else {
            struct repl_msg m;
            if (!repl_msg_decode(body, len, &m)) {
                up_fail(r, "malformed frame");
                return;
            }
            ok = on_msg(r, &m);
            repl_msg_done(&m);
        }
        if (!ok || u->fd < 0) {
            return; /* the link was closed (u->in is gone) */
        }
        repl_consume(&u->in, len);
    }
    if (rc < 0) {
        char why[160];
        snprintf(why, sizeof(why),
                 "a frame of %" PRIu32 " bytes is over repl-frame-limit (%" PRIu32
                 " bytes): link closed",
                 len, max);
        up_fail(r, why);
        return;
    }
    ack_if_asked(r);
    if (u->in.len == 0 && u->in.cap > (4u << 20)) {
        buf_shrink(&u->in, 256 * 1024); /* after a full sync's big chunks */
    }
    up_flush(r);
}

void
replica_follow_node(struct repl *r, const char *host, int port)
{
    replica_follow(r, host, port);
    r->direct = true;
}

void
replica_follow(struct repl *r, const char *host, int port)
{
    struct upstream *u = &r->up;
    r->direct = false;
    up_close(r);
    primary_drop_all(r);
    if (!r->replica) {
        r->replica = true;
        r->ops->set_role(r->host, true);
        repl_guard_update(r);
    }
    snprintf(r->mhost, sizeof(r->mhost), "%s", host);
    r->mport = port;
    r->fenced_epoch = 0; /* following again: the epoch is learned from the primary */
    u->st = UP_CONNECT;
    u->err[0] = '\0';
    u->backoff_ms = 0;
    u->since_ms = repl_now(r);
    u->last_io_ms = 0; /* connect at the next tick */
    repl_stale_update(r);
}

void
replica_stop(struct repl *r)
{
    up_close(r);
    r->up.st = UP_NONE;
    repl_stale_update(r);
}

void
replica_cron(struct repl *r, int64_t now)
{
    struct upstream *u = &r->up;
    const struct repl_cfg *cfg = repl_cfg(r);
    int64_t timeout = cfg->repl_timeout * 1000;
    switch (u->st) {
    case UP_NONE: return;
    case UP_CONNECT:
        if (now - u->last_io_ms >= u->backoff_ms) {
            up_connect(r);
        }
        return;
    case UP_ONLINE:
        if (now - u->last_ack_sent_ms >= 1000 || u->acked != repl_last_lsn(r) ||
            u->acked_durable != r->ops->durable_lsn(r->host)) {
            send_ack(r);
            up_flush(r);
        }
        /* fall through */
    default:
        if (u->fd >= 0 && now - u->last_io_ms > timeout) {
            up_fail(r, "timeout (repl-timeout)");
        }
        return;
    }
}

const char *
replica_state_name(const struct repl *r)
{
    switch (r->up.st) {
    case UP_CONNECT: return "connect";
    case UP_CONNECTING:
    case UP_HANDSHAKE:
    case UP_WELCOME: return "connecting";
    case UP_SYNC:
    case UP_FULL: return "sync";
    case UP_ONLINE: return "connected";
    default: return "none";
    }
}

bool
replica_link_up(const struct repl *r)
{
    return r->up.st == UP_ONLINE;
}

/* The master link's CLIENT LIST line (Redis: flags=M), once it is a replication
 * stream (from the handshake on). */
static void
up_addrs(const struct upstream *u, char *addr, char *laddr, size_t n)
{
    struct sockaddr_storage peer, local;
    socklen_t plen = sizeof(peer), llen = sizeof(local);
    memset(&peer, 0, sizeof(peer));
    memset(&local, 0, sizeof(local));
    getpeername(u->fd, (struct sockaddr *)&peer, &plen);
    getsockname(u->fd, (struct sockaddr *)&local, &llen);
    netaddr_format(&peer, addr, n, NULL, 0);
    netaddr_format(&local, laddr, n, NULL, 0);
}

void
replica_client_list(struct repl *r, const int64_t *ids, int nids, struct buf *out)
{
    const struct upstream *u = &r->up;
    if (!r->replica || u->fd < 0 || u->st < UP_HANDSHAKE) {
        return;
    }
    bool want = nids == 0;
    for (int i = 0; i < nids; i++) {
        want |= (uint64_t)ids[i] == u->cid;
    }
    if (!want) {
        return;
    }
    char addr[80], laddr[80];
    up_addrs(u, addr, laddr, sizeof(addr));
    int64_t now = repl_now(r);
    buf_appendf(
        out,
        "id=%llu addr=%s laddr=%s fd=%d name= age=%lld idle=%lld flags=M db=0 sub=0 psub=0 "
        "ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu rbp=0 obl=0 oll=0 "
        "omem=%zu tot-mem=%zu events=r%s cmd=NULL user=default redir=-1 resp=2 watch=0 "
        "lib-name= lib-ver=\n",
        (unsigned long long)u->cid, addr, laddr, u->fd, (long long)((now - u->ctime_ms) / 1000),
        (long long)((now - u->last_io_ms) / 1000), u->in.len - u->in.off, u->in.cap - u->in.len,
        u->in.cap, u->out.len - u->out.off, u->in.cap + u->out.cap, u->wev_on ? "w" : "");
}

long
replica_client_kill(struct repl *r, int64_t id, const struct rv_str *addr)
{
    struct upstream *u = &r->up;
    if (!r->replica || u->fd < 0 || u->st < UP_HANDSHAKE || (id > 0 && u->cid != (uint64_t)id)) {
        return 0;
    }
    if (addr) {
        char a[80], la[80];
        up_addrs(u, a, la, sizeof(a));
        if (addr->len != strlen(a) || memcmp(addr->p, a, addr->len) != 0) {
            return 0;
        }
    }
    up_fail(r, "master link killed by CLIENT KILL");
    return 1;
}
