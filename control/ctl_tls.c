/* control/ctl_tls.c: raft's transport over mutual TLS (see ctl_tls.h).
 *
 * One struct link per TCP connection, incoming or outgoing. Its sockets are
 * watched with uv_poll (the TLS session reads and writes the TCP socket
 * itself, base/tls.c) and one function, pump, moves whatever can move:
 *
 *   net (TLS) --tls_read--> down[] --send--> local end of the socketpair --> raft
 *   raft --> local end --recv--> up[] --tls_write--> net (TLS)
 *
 * Each buffer is bounded: a full one stops reading its source, so a slow
 * peer slows raft's writes instead of growing memory. The states:
 *   L_CONNECTING  outgoing, the TCP connect in progress
 *   L_HANDSHAKE   the TLS handshake (bounded by the timer)
 *   L_HELLO       incoming: reading the peer's id and address (timer still on)
 *   L_RELAY       raft has its stream; the timer is off
 * Any failure or either side's EOF ends the link: its handles are closed and
 * it is freed once their close callbacks ran; raft sees EOF on its end. */
#define LOG_MODULE "control"
#include "control/ctl_tls.h"

#include "base/log.h"
#include "base/mem.h"
#include "base/tls.h"
#include "control/ctl.h"

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINK_BUF 65536
#define HELLO_MAGIC "RVBUS001"
#define HELLO_HDR (8 + 8 + 4) /* magic, id (LE), address length (LE) */
#define FAIL_LOG_MS 10000     /* outgoing TLS failures: at most one log line per 10 s */

enum link_state { L_CONNECTING, L_HANDSHAKE, L_HELLO, L_RELAY };

struct xport;

struct link {
    struct link *prev, *next;
    struct xport *x;
    bool outgoing;
    bool dead;
    enum link_state st;
    int nfd, lfd; /* the TCP socket; our end of the socketpair (-1 before L_RELAY) */
    uv_poll_t npoll, lpoll;
    uv_timer_t timer;
    bool lpoll_on;
    unsigned open; /* handles not yet closed */
    struct tls *tls;
    bool want_r, want_w;         /* what the last TLS call waits for on nfd */
    size_t wpend;                /* a tls_write to retry with these bytes (0: none) */
    struct raft_uv_connect *req; /* outgoing, until answered */
    raft_uv_connect_cb cb;
    raft_id peer_id;
    char peer[CTL_ADDR_MAX]; /* for the logs: the address dialled, or ip:port of the caller */
    uint8_t up[LINK_BUF];    /* raft -> peer */
    size_t up_off, up_len;
    uint8_t down[LINK_BUF]; /* peer -> raft */
    size_t down_off, down_len;
};

struct xport {
    struct raft_uv_transport *t;
    uv_loop_t *loop;
    raft_id id;
    char address[CTL_ADDR_MAX];
    char bind[CTL_ADDR_MAX];
    ctl_tls_ctx_fn ctx_fn;
    void *ctx_arg;
    raft_uv_accept_cb accept_cb;
    int listen_fd;
    uv_poll_t listen_poll;
    bool listen_open;
    struct link links; /* sentinel */
    bool closing;
    raft_uv_transport_close_cb close_cb;
    uint64_t last_fail_log;
};

static void link_pump(struct link *l);
static void link_update(struct link *l);

static int
parse_addr(const char *address, struct sockaddr_in *sa)
{
    char host[CTL_ADDR_MAX];
    snprintf(host, sizeof(host), "%s", address);
    char *colon = strrchr(host, ':');
    if (colon == NULL) {
        return -1;
    }
    *colon = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535) {
        return -1;
    }
    return uv_ip4_addr(host, (int)port, sa) == 0 ? 0 : -1;
}

/* ---- the end of a link ---- */

static void
xport_maybe_closed(struct xport *x)
{
    if (x->closing && !x->listen_open && x->links.next == &x->links && x->close_cb != NULL) {
        raft_uv_transport_close_cb cb = x->close_cb;
        x->close_cb = NULL;
        cb(x->t);
    }
}

static void
link_handle_closed(uv_handle_t *h)
{
    struct link *l = h->data;
    if (--l->open > 0) {
        return;
    }
    struct xport *x = l->x;
    if (l->nfd >= 0) {
        close(l->nfd);
    }
    if (l->lfd >= 0) {
        close(l->lfd);
    }
    l->prev->next = l->next;
    l->next->prev = l->prev;
    rv_free(l);
    xport_maybe_closed(x);
}

/* End the link. why == NULL: a quiet end (raft or the peer closed a working
 * link). An outgoing link not yet handed to raft answers status. */
static void
link_kill(struct link *l, int status, const char *why)
{
    if (l->dead) {
        return;
    }
    l->dead = true;
    struct xport *x = l->x;
    if (why != NULL) {
        if (!l->outgoing) {
            log_notice("cluster bus: connection from %s refused: %s", l->peer, why);
        } else {
            uint64_t now = uv_now(x->loop);
            if (now >= x->last_fail_log + FAIL_LOG_MS || x->last_fail_log == 0) {
                x->last_fail_log = now;
                log_notice("cluster bus: connection to %s failed: %s", l->peer, why);
            }
        }
    }
    if (l->req != NULL) {
        struct raft_uv_connect *req = l->req;
        l->req = NULL;
        l->cb(req, NULL, status);
    }
    tls_free(l->tls); /* before the socket closes: its close_notify */
    l->tls = NULL;
    uv_close((uv_handle_t *)&l->npoll, link_handle_closed);
    uv_close((uv_handle_t *)&l->timer, link_handle_closed);
    if (l->lpoll_on) {
        uv_close((uv_handle_t *)&l->lpoll, link_handle_closed);
    }
}

static void
on_timeout(uv_timer_t *h)
{
    struct link *l = h->data;
    link_kill(l, RAFT_NOCONNECTION, "no TLS handshake and hello in time");
}

/* ---- polls ---- */

static void
on_net(uv_poll_t *h, int status, int events)
{
    struct link *l = h->data;
    if (l->dead) {
        return;
    }
    /* libuv reports POLLERR as UV_EBADF: the socket's own error says more */
    int err = 0;
    socklen_t len = sizeof(err);
    if (status < 0 || l->st == L_CONNECTING) {
        getsockopt(l->nfd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (status < 0 && l->st != L_CONNECTING) {
        /* (a working link reset: the peer went away, quietly as raft_uv_tcp) */
        const char *why = err != 0 ? strerror(err) : uv_strerror(status);
        link_kill(l, RAFT_NOCONNECTION, l->st == L_RELAY ? NULL : why);
        return;
    }
    if (l->st == L_CONNECTING) {
        if (status < 0 && err == 0) {
            err = ECONNREFUSED;
        }
        if (err == 0 && !(events & UV_WRITABLE)) {
            return;
        }
        if (err != 0) {
            /* a peer down: raft retries, quietly as raft_uv_tcp */
            log_debug("cluster bus: connect to %s: %s", l->peer, strerror(err));
            link_kill(l, RAFT_NOCONNECTION, NULL);
            return;
        }
        struct tls_ctx *ctx = l->x->ctx_fn(l->x->ctx_arg, false);
        l->tls = ctx != NULL ? tls_new(ctx, l->nfd, false) : NULL;
        tls_ctx_unref(ctx);
        if (l->tls == NULL) {
            link_kill(l, RAFT_NOCONNECTION, "no TLS client context");
            return;
        }
        l->st = L_HANDSHAKE;
    }
    link_pump(l);
}

static void
on_local(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct link *l = h->data;
    if (l->dead) {
        return;
    }
    if (status < 0) {
        link_kill(l, RAFT_NOCONNECTION, NULL);
        return;
    }
    link_pump(l);
}

static void
link_update(struct link *l)
{
    if (l->dead) {
        return;
    }
    int ev = 0;
    if (l->st == L_CONNECTING) {
        ev = UV_WRITABLE;
    } else {
        if (l->want_r || l->down_len < LINK_BUF) {
            ev |= UV_READABLE;
        }
        if (l->want_w) {
            ev |= UV_WRITABLE;
        }
    }
    uv_poll_start(&l->npoll, ev, on_net);
    if (l->lpoll_on) {
        int lev = 0;
        if (l->up_len < LINK_BUF && l->wpend == 0) {
            lev |= UV_READABLE;
        }
        if (l->down_len > l->down_off) {
            lev |= UV_WRITABLE;
        }
        uv_poll_start(&l->lpoll, lev, on_local);
    }
}

/* ---- handing raft its stream ---- */

static void
pipe_close_free(uv_handle_t *h)
{
    raft_free(h);
}

/* The socketpair: lfd is ours, the other end becomes raft's uv_pipe_t. */
static uv_stream_t *
link_open_local(struct link *l)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        return NULL;
    }
    uv_pipe_t *p = raft_malloc(sizeof(*p)); /* raft frees it (raft_free) once closed */
    if (p == NULL) {
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    uv_pipe_init(l->x->loop, p, 0);
    if (uv_pipe_open(p, sv[1]) != 0) {
        close(sv[0]);
        close(sv[1]);
        uv_close((uv_handle_t *)p, pipe_close_free);
        return NULL;
    }
    l->lfd = sv[0];
    uv_poll_init_socket(l->x->loop, &l->lpoll, l->lfd);
    l->lpoll.data = l;
    l->lpoll_on = true;
    l->open++;
    return (uv_stream_t *)p;
}

/* Outgoing: the handshake is done; the hello waits in up[]. */
static bool
link_connected(struct link *l)
{
    uv_stream_t *s = link_open_local(l);
    if (s == NULL) {
        link_kill(l, RAFT_NOCONNECTION, "socketpair failed");
        return false;
    }
    uv_timer_stop(&l->timer);
    l->st = L_RELAY;
    struct raft_uv_connect *req = l->req;
    l->req = NULL;
    l->cb(req, s, 0);
    return !l->dead;
}

/* Incoming: the hello is in down[]; false while it is incomplete or the link died. */
static bool
link_hello(struct link *l)
{
    size_t have = l->down_len - l->down_off;
    const uint8_t *p = l->down + l->down_off;
    if (have >= 8 && memcmp(p, HELLO_MAGIC, 8) != 0) {
        link_kill(l, 0, "not a Ruvio cluster bus hello");
        return false;
    }
    if (have < HELLO_HDR) {
        return false;
    }
    uint64_t id = 0;
    uint32_t alen = 0;
    for (int i = 7; i >= 0; i--) {
        id = id << 8 | p[8 + i];
    }
    for (int i = 3; i >= 0; i--) {
        alen = alen << 8 | p[16 + i];
    }
    if (id == 0 || alen == 0 || alen >= CTL_ADDR_MAX) {
        link_kill(l, 0, "bad hello");
        return false;
    }
    if (have < HELLO_HDR + alen) {
        return false;
    }
    char addr[CTL_ADDR_MAX];
    memcpy(addr, p + HELLO_HDR, alen);
    addr[alen] = '\0';
    l->down_off += HELLO_HDR + alen;
    struct xport *x = l->x;
    uv_stream_t *s = link_open_local(l);
    if (s == NULL) {
        link_kill(l, 0, "socketpair failed");
        return false;
    }
    uv_timer_stop(&l->timer);
    l->st = L_RELAY;
    l->peer_id = id;
    if (x->closing || x->accept_cb == NULL) {
        uv_close((uv_handle_t *)s, pipe_close_free);
        link_kill(l, 0, NULL);
        return false;
    }
    x->accept_cb(x->t, id, addr, s);
    return !l->dead;
}

/* ---- moving bytes ---- */

static void
tls_wait(struct link *l, ssize_t rc)
{
    if (rc == TLS_WANT_READ) {
        l->want_r = true;
    } else if (rc == TLS_WANT_WRITE) {
        l->want_w = true;
    }
}

/* One round over the four moves; true when something moved. On a failure
 * the link is dead and false is returned. */
static bool
link_step(struct link *l)
{
    bool moved = false;
    if (l->st == L_HANDSHAKE) {
        int rc = tls_handshake(l->tls);
        if (rc == TLS_ERROR) {
            link_kill(l, RAFT_NOCONNECTION, tls_strerror(l->tls));
            return false;
        }
        if (rc != 1) {
            tls_wait(l, rc);
            return false;
        }
        if (l->outgoing) {
            return link_connected(l);
        }
        l->st = L_HELLO;
        moved = true;
    }
    if (l->down_off == l->down_len) {
        l->down_off = l->down_len = 0;
    }
    if (l->down_len < LINK_BUF) {
        ssize_t n = tls_read(l->tls, l->down + l->down_len, LINK_BUF - l->down_len);
        if (n > 0) {
            l->down_len += (size_t)n;
            moved = true;
        } else if (n == 0 || n == TLS_ERROR) {
            link_kill(l, RAFT_NOCONNECTION, n == 0 ? NULL : tls_strerror(l->tls));
            return false;
        } else {
            tls_wait(l, n);
        }
    }
    if (l->st == L_HELLO) {
        if (!link_hello(l)) {
            return moved && !l->dead; /* incomplete: read on */
        }
        moved = true;
    }
    if (l->down_len > l->down_off) {
        ssize_t n = send(l->lfd, l->down + l->down_off, l->down_len - l->down_off, MSG_NOSIGNAL);
        if (n > 0) {
            l->down_off += (size_t)n;
            moved = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            link_kill(l, RAFT_NOCONNECTION, NULL);
            return false;
        }
    }
    if (l->wpend == 0 && l->up_off == l->up_len) {
        l->up_off = l->up_len = 0;
    }
    if (l->wpend == 0 && l->up_len < LINK_BUF) {
        ssize_t n = recv(l->lfd, l->up + l->up_len, LINK_BUF - l->up_len, 0);
        if (n > 0) {
            l->up_len += (size_t)n;
            moved = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            link_kill(l, RAFT_NOCONNECTION, NULL); /* raft closed its stream */
            return false;
        }
    }
    if (l->up_len > l->up_off) {
        size_t len = l->wpend != 0 ? l->wpend : l->up_len - l->up_off;
        ssize_t n = tls_write(l->tls, l->up + l->up_off, len);
        if (n > 0) {
            l->up_off += (size_t)n;
            l->wpend = 0;
            moved = true;
        } else if (n == 0 || n == TLS_ERROR) {
            link_kill(l, RAFT_NOCONNECTION, n == 0 ? NULL : tls_strerror(l->tls));
            return false;
        } else {
            l->wpend = len; /* OpenSSL wants the same bytes again */
            tls_wait(l, n);
        }
    }
    return moved;
}

static void
link_pump(struct link *l)
{
    do {
        l->want_r = l->want_w = false;
    } while (link_step(l) && !l->dead);
    link_update(l);
}

/* ---- a new link ---- */

static struct link *
link_new(struct xport *x, int fd, bool outgoing)
{
    struct link *l = rv_calloc(1, sizeof(*l));
    l->x = x;
    l->outgoing = outgoing;
    l->nfd = fd;
    l->lfd = -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    uv_poll_init_socket(x->loop, &l->npoll, fd);
    l->npoll.data = l;
    uv_timer_init(x->loop, &l->timer);
    l->timer.data = l;
    l->open = 2;
    uv_timer_start(&l->timer, on_timeout, CTL_TLS_HANDSHAKE_MS, 0);
    l->next = &x->links;
    l->prev = x->links.prev;
    x->links.prev->next = l;
    x->links.prev = l;
    return l;
}

static void
on_listen(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct xport *x = h->data;
    if (status < 0 || x->closing) {
        return;
    }
    for (;;) {
        struct sockaddr_in sa;
        socklen_t salen = sizeof(sa);
        int fd = accept4(x->listen_fd, (struct sockaddr *)&sa, &salen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                log_warn("cluster bus: accept: %s", strerror(errno));
            }
            return;
        }
        struct tls_ctx *ctx = x->ctx_fn(x->ctx_arg, true);
        struct tls *t = ctx != NULL ? tls_new(ctx, fd, true) : NULL;
        tls_ctx_unref(ctx);
        if (t == NULL) {
            log_warn("cluster bus: no TLS server context, connection dropped");
            close(fd);
            continue;
        }
        struct link *l = link_new(x, fd, false);
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
        snprintf(l->peer, sizeof(l->peer), "%s:%u", ip, (unsigned)ntohs(sa.sin_port));
        l->tls = t;
        l->st = L_HANDSHAKE;
        link_pump(l);
    }
}

/* ---- raft's interface ---- */

static int
x_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    struct xport *x = t->impl;
    x->id = id;
    snprintf(x->address, sizeof(x->address), "%s", address);
    return 0;
}

static int
x_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    struct xport *x = t->impl;
    struct sockaddr_in sa;
    if (parse_addr(x->bind[0] ? x->bind : x->address, &sa) != 0) {
        return RAFT_INVALID;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return RAFT_IOERR;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
        close(fd);
        return RAFT_IOERR;
    }
    x->listen_fd = fd;
    x->accept_cb = cb;
    uv_poll_init_socket(x->loop, &x->listen_poll, fd);
    x->listen_poll.data = x;
    x->listen_open = true;
    uv_poll_start(&x->listen_poll, UV_READABLE, on_listen);
    return 0;
}

static int
x_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id, const char *address,
          raft_uv_connect_cb cb)
{
    struct xport *x = t->impl;
    struct sockaddr_in sa;
    size_t alen = strlen(x->address);
    if (parse_addr(address, &sa) != 0) {
        return RAFT_NOCONNECTION;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return RAFT_NOCONNECTION;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return RAFT_NOCONNECTION;
    }
    struct link *l = link_new(x, fd, true);
    l->req = req;
    l->cb = cb;
    l->peer_id = id;
    snprintf(l->peer, sizeof(l->peer), "%s", address);
    l->st = L_CONNECTING;
    /* the hello goes first, once the handshake is done */
    uint8_t *p = l->up;
    memcpy(p, HELLO_MAGIC, 8);
    for (int i = 0; i < 8; i++) {
        p[8 + i] = (uint8_t)(x->id >> (8 * i));
    }
    for (int i = 0; i < 4; i++) {
        p[16 + i] = (uint8_t)(alen >> (8 * i));
    }
    memcpy(p + HELLO_HDR, x->address, alen);
    l->up_len = HELLO_HDR + alen;
    link_update(l);
    return 0;
}

static void
listen_closed(uv_handle_t *h)
{
    struct xport *x = h->data;
    close(x->listen_fd);
    x->listen_fd = -1;
    x->listen_open = false;
    xport_maybe_closed(x);
}

static void
x_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    struct xport *x = t->impl;
    x->closing = true;
    x->close_cb = cb;
    if (x->listen_open && !uv_is_closing((uv_handle_t *)&x->listen_poll)) {
        uv_close((uv_handle_t *)&x->listen_poll, listen_closed);
    }
    for (struct link *l = x->links.next; l != &x->links; l = l->next) {
        link_kill(l, RAFT_CANCELED, NULL);
    }
    xport_maybe_closed(x);
}

int
ctl_tls_transport_init(struct raft_uv_transport *t, struct uv_loop_s *loop,
                       const char *bind_address, ctl_tls_ctx_fn ctx_fn, void *arg)
{
    struct xport *x = rv_calloc(1, sizeof(*x));
    x->t = t;
    x->loop = loop;
    x->ctx_fn = ctx_fn;
    x->ctx_arg = arg;
    x->listen_fd = -1;
    x->links.next = x->links.prev = &x->links;
    if (bind_address != NULL) {
        snprintf(x->bind, sizeof(x->bind), "%s", bind_address);
    }
    memset(t, 0, sizeof(*t));
    t->impl = x;
    t->init = x_init;
    t->listen = x_listen;
    t->connect = x_connect;
    t->close = x_close;
    return 0;
}

void
ctl_tls_transport_release(struct raft_uv_transport *t)
{
    rv_free(t->impl);
    t->impl = NULL;
}
