/* node/server/conn.c: client connections. The hot path is conn_on_readable():
 * one read() into rbuf, parse every complete command in place, dispatch each
 * (replies appended to wbuf), then queue the connection for one write in
 * shard_before_poll(). */
#include "node/server/conn_io.h"
#include "base/netaddr.h"

#define LOG_MODULE "conn"
#include "node/features/acl.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/tls.h"
#include "node/features/block.h"
#include "node/core/cmd.h"
#include "node/core/effect.h"
#include "node/server/dispatch.h"
#include "node/keyspace/ks.h"
#include "node/features/monitor.h"
#include "node/features/multi.h"
#include "node/features/pause.h"
#include "node/persist/persist.h"
#include "node/features/pubsub.h"
#include "node/features/tracking.h"
#include "node/commands/migrate_async.h"
#include "node/commands/migrate_stage.h"
#include "node/commands/script.h"
#include "node/core/node.h"
#include "node/core/shard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_READ_LEN (16 * 1024)
#define CONN_WBUF_KEEP (64 * 1024)
/* A client that sends faster than it reads stops being read once this much
 * output waits for it; the rest of its input is parsed when the backlog is
 * written. Memory per client stays bounded without dropping anyone. */
#define CONN_WBUF_PAUSE (64u * 1024 * 1024)

static void conn_on_readable(evutil_socket_t fd, short what, void *arg);
static void conn_on_writable(evutil_socket_t fd, short what, void *arg);

static bool
is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss->ss_family == AF_INET6) {
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    }
    return true;
}

struct conn *
conn_create(struct shard *s, int fd)
{
    const struct cfg *cfg = shard_env(s)->cfg;
    struct sockaddr_storage peer, local;
    socklen_t plen = sizeof(peer), llen = sizeof(local);
    memset(&peer, 0, sizeof(peer));
    memset(&local, 0, sizeof(local));
    getpeername(fd, (struct sockaddr *)&peer, &plen);
    getsockname(fd, (struct sockaddr *)&local, &llen);

    /* The rule (Redis 6's): with protected mode on, no explicit bind
     * and a default user without a password, only loopback clients are
     * served. Redis 7 applies it whatever bind says; an operator who binds a
     * private address on purpose is served there (docs/operations.md). */
    if (cfg->net.protected_mode && !cfg->net.bind_explicit && !is_loopback(&peer) &&
        acl_default_open(s)) {
        /* Redis's text, word for word: clients and operators match on it. */
        static const char msg[] =
            "-DENIED Redis is running in protected mode because protected mode is enabled and no "
            "password is set for the default user. In this mode connections are only accepted from "
            "the loopback interface. If you want to connect from external computers to Redis you "
            "may adopt one of the following solutions: 1) Just disable protected mode sending the "
            "command 'CONFIG SET protected-mode no' from the loopback interface by connecting to "
            "Redis from the same host the server is running, however MAKE SURE Redis is not "
            "publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change "
            "permanent. 2) Alternatively you can just disable the protected mode by editing the "
            "Redis configuration file, and setting the protected mode option to 'no', and then "
            "restarting the server. 3) If you started the server manually just for testing, restart "
            "it with the '--protected-mode no' option. 4) Setup a an authentication password for the "
            "default user. NOTE: You only need to do one of the above things in order for the "
            "server to start accepting connections from the outside.\r\n";
        ssize_t w = write(fd, msg, sizeof(msg) - 1);
        (void)w;
        close(fd);
        shard_env(s)->stats.conns_rejected++;
        return NULL;
    }

    struct conn *c = rv_calloc(1, sizeof(*c));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (cfg->net.tcp_keepalive > 0) {
        int idle = (int)cfg->net.tcp_keepalive;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        /* Redis's probes: every idle/3 seconds, 3 unanswered ones drop the peer. */
        int intvl = idle / 3 > 0 ? idle / 3 : 1, cnt = 3;
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
    c->shard = s;
    c->env = shard_env(s);
    c->persist = shard_env(s)->persist;
    c->fd = fd;
    c->proto = 2;
    c->id = shard_next_conn_id(s);
    c->ctime_ms = c->last_ms = shard_refresh_clock(s);
    netaddr_format(&peer, c->addr, sizeof(c->addr), NULL, 0);
    netaddr_format(&local, c->laddr, sizeof(c->laddr), c->lip, sizeof(c->lip));
    buf_init(&c->rbuf);
    buf_init(&c->wbuf);
    struct resp_limits lim = { .max_bulk = (uint64_t)cfg->net.proto_max_bulk_len };
    resp_parser_init(&c->parser, &lim);
    acl_conn_init(c); /* user, authed, parser's pre-auth limits */
    event_assign(&c->rev, shard_base(s), fd, EV_READ | EV_PERSIST, conn_on_readable, c);
    event_assign(&c->wev, shard_base(s), fd, EV_WRITE | EV_PERSIST, conn_on_writable, c);
    event_add(&c->rev, NULL);
    shard_conn_link(s, c);
    return c;
}

int
conn_start_tls(struct conn *c)
{
    struct tls_ctx *ctx = node_tls_get(true);
    c->tls = ctx != NULL ? tls_new(ctx, c->fd, true) : NULL;
    tls_ctx_unref(ctx); /* (the session holds what it needs of it) */
    if (c->tls == NULL) {
        log_warn("[shard %u] TLS: cannot start a session for %s", c->env->id, c->addr);
        conn_io_close(c);
        return -1;
    }
    return 0;
}

/* The socket's write, or the TLS session's: bytes written, or -1 with errno
 * EAGAIN (try again when writable) or EIO. */
static ssize_t
sock_write(struct conn *c, const char *p, size_t n)
{
    if (c->tls == NULL) {
        /* send/recv rather than write/read: the socket call skips the VFS
         * layer (its file position lock), a few percent of a request at
         * pipeline 1; MSG_NOSIGNAL: a closed peer is EPIPE, never SIGPIPE */
        return send(c->fd, p, n, MSG_NOSIGNAL);
    }
    ssize_t w = tls_write(c->tls, p, n);
    if (w > 0) {
        return w;
    }
    errno = w == TLS_WANT_WRITE || w == TLS_WANT_READ ? EAGAIN : EIO;
    return -1;
}

void
conn_io_close(struct conn *c)
{
    if (c == NULL) {
        return;
    }
    migrate_async_conn_gone(c);
    mstage_conn_gone(c); /* (logs: before persist forgets c) */
    persist_conn_gone(c);
    block_release(c);
    multi_release(c);
    pubsub_release(c);
    monitor_release(c);
    pause_release(c);
    tracking_release(c);
    shard_conn_unlink(c->shard, c);
    event_del(&c->rev);
    event_del(&c->wev);
    tls_free(c->tls);
    close(c->fd);
    resp_parser_deinit(&c->parser);
    buf_deinit(&c->rbuf);
    buf_deinit(&c->wbuf);
    effect_free(c);
    rv_free(c->name);
    rv_free(c->lib_name);
    rv_free(c->lib_ver);
    rv_free(c);
}

/* Answer a malformed request, then close once it is written. */
static void
conn_proto_error(struct conn *c, const char *msg)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "-ERR %s\r\n", msg);
    buf_append(&c->wbuf, line, (size_t)n);
    c->env->stats.protocol_errors++;
    log_info("[shard %u] closing client %s: %s", c->env->id, c->addr, msg);
    conn_close_after_reply(c);
}

/* TLS: records until the session has no decrypted bytes left (they would
 * wait for the socket's next event otherwise). A handshake that must write
 * first arms EV_WRITE, whose callback reads again. */
static int
conn_fill_tls(struct conn *c, size_t room)
{
    for (;;) {
        buf_reserve(&c->rbuf, room);
        ssize_t n = tls_read(c->tls, c->rbuf.data + c->rbuf.len, c->rbuf.cap - c->rbuf.len);
        if (n > 0) {
            c->rbuf.len += (size_t)n;
            c->env->stats.net_input_bytes += (uint64_t)n;
            if (!tls_pending(c->tls)) {
                return RV_OK;
            }
            continue;
        }
        if (n == TLS_WANT_READ) {
            return RV_OK;
        }
        if (n == TLS_WANT_WRITE) {
            if (!(c->flags & CONN_WRITE_WAIT)) {
                c->flags |= CONN_WRITE_WAIT;
                event_add(&c->wev, NULL);
            }
            return RV_OK;
        }
        if (n == TLS_ERROR) {
            log_info("[shard %u] TLS: closing %s: %s", c->env->id, c->addr, tls_strerror(c->tls));
        }
        return RV_EIO;
    }
}

/* One read into rbuf. RV_OK (maybe no data), RV_EIO when the peer is gone. */
static int
conn_fill(struct conn *c)
{
    size_t want = resp_parser_want(&c->parser);
    size_t room = want > CONN_READ_LEN ? want : CONN_READ_LEN;
    if (c->rbuf.off == c->rbuf.len) {
        c->rbuf.off = c->rbuf.len = 0;
    }
    if (c->tls != NULL) {
        return conn_fill_tls(c, room);
    }
    buf_reserve(&c->rbuf, room);
    ssize_t n = recv(c->fd, c->rbuf.data + c->rbuf.len, c->rbuf.cap - c->rbuf.len, 0);
    if (n > 0) {
        c->rbuf.len += (size_t)n;
        c->env->stats.net_input_bytes += (uint64_t)n;
        return RV_OK;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return RV_OK;
    }
    return RV_EIO;
}

/* The unread output above which conn_over_output() must look: the smaller of
 * the pause threshold and the client class's limits (precomputed by config.c). */
static inline size_t
conn_output_check(const struct conn *c, const struct cfg *cfg)
{
    int64_t lim = cfg->net.obl_check[(c->flags & CONN_PUBSUB) ? CFG_OBL_PUBSUB : CFG_OBL_NORMAL];
    return lim < (int64_t)CONN_WBUF_PAUSE ? (size_t)lim : CONN_WBUF_PAUSE;
}

/* client-output-buffer-limit for a client's own replies (Redis semantics:
 * over the hard limit, or over the soft limit for soft-seconds, closes it).
 * Returns true when input must stop: closed, or paused while the backlog drains. */
static bool
conn_over_output(struct conn *c, const struct cfg *cfg)
{
    size_t pending = c->wbuf.len - c->wbuf.off;
    int cls = (c->flags & CONN_PUBSUB) ? CFG_OBL_PUBSUB : CFG_OBL_NORMAL;
    int64_t hard = cfg->net.obl_hard[cls], soft = cfg->net.obl_soft[cls];
    bool over = hard > 0 && pending > (size_t)hard;
    if (!over && soft > 0 && pending > (size_t)soft) {
        int64_t now = c->env->now_ms;
        if (c->obl_soft_since == 0) {
            c->obl_soft_since = now;
        } else if (now - c->obl_soft_since >= cfg->net.obl_secs[cls] * 1000) {
            over = true;
        }
    } else if (!over) {
        c->obl_soft_since = 0;
    }
    if (over) {
        if (!(c->flags & CONN_CLOSE_ASAP)) {
            c->flags |= CONN_CLOSE_ASAP;
            c->env->stats.client_output_limit_disconnections++;
            log_notice("[shard %u] client id=%llu addr=%s closed for overcoming of output buffer "
                       "limits (%zu bytes unread)",
                       c->env->id, (unsigned long long)c->id, c->addr, pending);
        }
        return true;
    }
    if (pending > CONN_WBUF_PAUSE) {
        if (!(c->flags & CONN_READ_PAUSED)) {
            c->flags |= CONN_READ_PAUSED;
            event_del(&c->rev);
        }
        return true;
    }
    return false;
}

static void
conn_process_batch(struct conn *c)
{
    int argc;
    struct rv_str *argv;
    const struct cfg *cfg = c->env->cfg;
    size_t out_check = conn_output_check(c, cfg);

    c->parser.lim.max_bulk = (uint64_t)cfg->net.proto_max_bulk_len; /* CONFIG SET applies live */
    while (!(c->flags & (CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP | CONN_BLOCKED))) {
        if (rv_unlikely(c->wbuf.len - c->wbuf.off > out_check) && conn_over_output(c, cfg)) {
            return;
        }
        size_t pos = c->rbuf.off;
        int rc = resp_parse(&c->parser, c->rbuf.data, c->rbuf.len, &pos, &argc, &argv);
        if (rc == RV_EAGAIN) {
            break;
        }
        if (rc != RV_OK) {
            conn_proto_error(c, c->parser.errmsg);
            return;
        }
        c->cmd_start = c->rbuf.off;
        c->rbuf.off = pos;
        if (argc > 0) {
            dispatch(c, argc, argv);
        }
    }
    if (rv_unlikely(c->rbuf.len - c->rbuf.off > (size_t)cfg->net.client_query_buffer_limit)) {
        c->env->stats.client_qbuf_limit_disconnections++;
        conn_proto_error(c,
                         "Protocol error: query buffer limit exceeded (client-query-buffer-limit)");
    }
}

static void
conn_process(struct conn *c)
{
    cmd_batch_begin();
    conn_process_batch(c);
    cmd_batch_end();
}

void
conn_io_resume(struct conn *c)
{
    conn_process(c);
    if (c->wbuf.len > c->wbuf.off || (c->flags & (CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP))) {
        shard_want_write(c->shard, c);
    }
}

/* A script has run past busy-reply-threshold (node/commands/script.h): from
 * its hook, read what the shard's other clients sent and dispatch it (the
 * dispatcher answers -BUSY but for SCRIPT KILL and the few commands allowed),
 * then write the replies. Nothing is closed here (a client that went away is
 * closed by the loop after the script); new connections wait in the backlog. */
void
conn_busy_poll(struct shard *s, struct conn *running)
{
    struct pollfd pfd[256];
    struct conn *pc[256];
    nfds_t n = 0;
    for (struct conn *c = shard_conn_first(s); c != NULL && n < 256; c = c->next) {
        if (c != running && c->fd >= 0 &&
            !(c->flags & (CONN_REPLAY | CONN_BLOCKED | CONN_READ_PAUSED | CONN_CLOSE_ASAP |
                          CONN_CLOSE_AFTER_REPLY | CONN_TOPO_WAIT | CONN_IN_EXEC))) {
            pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
            pc[n++] = c;
        }
    }
    if (n == 0) {
        return;
    }
    int ready = poll(pfd, n, 0);
    uint64_t mark = cmd_batch_mark;
    cmd_batch_mark = 0;
    for (nfds_t i = 0; i < n; i++) {
        struct conn *c = pc[i];
        if (ready > 0 && (pfd[i].revents & POLLIN) && conn_fill(c) == RV_OK) {
            conn_process_batch(c);
            if (c->wbuf.len > c->wbuf.off) {
                shard_want_write(s, c);
            }
        }
        /* (also the replies of the loop turn the script started in: their
         * clients wait for them before sending anything else) */
        if (c->wbuf.len > c->wbuf.off && c->nmarks == 0 && !(c->flags & CONN_WRITE_WAIT)) {
            ssize_t w = sock_write(c, c->wbuf.data + c->wbuf.off, c->wbuf.len - c->wbuf.off);
            if (w > 0) {
                c->wbuf.off += (size_t)w;
                c->out_done += (uint64_t)w;
                c->env->stats.net_output_bytes += (uint64_t)w;
            }
        }
    }
    cmd_batch_mark = mark;
}

static void
conn_on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;

    if (conn_fill(c) != RV_OK) {
        conn_io_close(c);
        return;
    }
    if (rv_unlikely(acl_gen_now() != c->env->acl_gen)) {
        acl_shard_refresh(c->shard); /* users changed on some shard: before this batch runs */
        if (c->flags & CONN_CLOSE_ASAP) {
            return;
        }
    }
    shard_refresh_clock(c->shard);
    c->last_ms = c->env->now_ms;
    conn_process(c);
    if (c->rbuf.off == c->rbuf.len && c->rbuf.cap > 4 * CONN_READ_LEN) {
        c->rbuf.off = c->rbuf.len = 0;
        buf_shrink(&c->rbuf, CONN_READ_LEN);
    }
    if (c->wbuf.len > c->wbuf.off || (c->flags & (CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP))) {
        shard_want_write(c->shard, c); /* also notes what the output waits for (persist.c) */
    }
}

bool
conn_io_flush(struct conn *c)
{
    dispatch_count_errors(c);
    if (c->flags & CONN_CLOSE_ASAP) {
        conn_io_close(c);
        return false;
    }
    size_t limit = c->wbuf.len;
    if (rv_unlikely(c->nmarks != 0)) {
        limit = c->wbuf.off + persist_flush_limit(c); /* the rest waits for the WAL */
    }
    while (c->wbuf.off < limit) {
        ssize_t n = sock_write(c, c->wbuf.data + c->wbuf.off, limit - c->wbuf.off);
        if (n > 0) {
            c->wbuf.off += (size_t)n;
            c->out_done += (uint64_t)n;
            c->env->stats.net_output_bytes += (uint64_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (!(c->flags & CONN_WRITE_WAIT)) {
                c->flags |= CONN_WRITE_WAIT;
                event_add(&c->wev, NULL);
            }
            return true;
        }
        conn_io_close(c);
        return false;
    }
    if (rv_unlikely(c->wbuf.off < c->wbuf.len)) {
        /* held: persist_before_poll() flushes the rest; no EV_WRITE meanwhile */
        if (c->flags & CONN_WRITE_WAIT) {
            c->flags &= ~CONN_WRITE_WAIT;
            event_del(&c->wev);
        }
        return true;
    }
    c->wbuf.off = c->wbuf.len = 0;
    if (c->wbuf.cap > CONN_WBUF_KEEP) {
        buf_shrink(&c->wbuf, CONN_WBUF_KEEP);
    }
    if (c->flags & CONN_WRITE_WAIT) {
        c->flags &= ~CONN_WRITE_WAIT;
        event_del(&c->wev);
    }
    if (c->flags & CONN_CLOSE_AFTER_REPLY) {
        conn_io_close(c);
        return false;
    }
    if (rv_unlikely(c->flags & CONN_READ_PAUSED)) {
        c->flags &= ~CONN_READ_PAUSED;
        event_add(&c->rev, NULL);
        conn_process(c);
        if (c->wbuf.len > c->wbuf.off || (c->flags & CONN_CLOSE_AFTER_REPLY)) {
            shard_want_write(c->shard, c);
        }
    }
    return true;
}

static void
conn_on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    if (c->tls != NULL && !tls_handshake_done(c->tls)) {
        /* the handshake waited to write: go on with it (a read) */
        c->flags &= ~CONN_WRITE_WAIT;
        event_del(&c->wev);
        conn_on_readable(fd, what, c);
        return;
    }
    conn_io_flush(c);
}

const struct conn_io conn_io_ops = {
    .close = conn_io_close,
    .flush = conn_io_flush,
    .resume = conn_io_resume,
};
