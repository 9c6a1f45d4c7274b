/* node/commands/slotmig_link.c: the source job's non-blocking link to the
 * target of an atomic slot migration (slotmig_link.h). */
#include "node/commands/slotmig_link.h"

#include "base/clock.h"
#include "base/tls.h"
#include "proto/resp.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define SML_READ_MAX (64u << 10) /* bytes read per turn of the loop */

static int64_t
sml_now(void)
{
    return (int64_t)(clock_mono_us() / 1000);
}

void
sml_init(struct sml *l)
{
    memset(l, 0, sizeof(*l));
    l->link.fd = -1;
    buf_init(&l->out);
    buf_init(&l->in);
}

void
sml_fail(struct sml *l, const char *why)
{
    if (l->err[0] == '\0') {
        snprintf(l->err, sizeof(l->err), "%s", why);
    }
    if (l->rev != NULL) {
        event_del(l->rev);
    }
    if (l->wev != NULL) {
        event_del(l->wev);
    }
}

/* Write what is queued until the socket is full (then EV_WRITE). */
static void
sml_flush(struct sml *l)
{
    while (l->err[0] == '\0' && buf_unread(&l->out) > 0) {
        const char *p = l->out.data + l->out.off;
        size_t n = buf_unread(&l->out);
        ssize_t w;
        if (l->link.tls != NULL) {
            w = tls_write(l->link.tls, p, n); /* a retry sends the same bytes (and maybe more) */
            if (w == TLS_WANT_WRITE) {
                event_add(l->wev, NULL);
                return;
            }
            if (w == TLS_WANT_READ) {
                return; /* (the read event, always armed, flushes again) */
            }
            if (w <= 0) {
                sml_fail(l, "error writing to the target (TLS)");
                return;
            }
        } else {
            w = send(l->link.fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) {
                continue;
            }
            if (w < 0 && errno == EAGAIN) {
                event_add(l->wev, NULL);
                return;
            }
            if (w <= 0) {
                sml_fail(l, "error writing to the target");
                return;
            }
        }
        l->out.off += (size_t)w;
        l->io_at = sml_now();
    }
    buf_reset(&l->out);
    if (l->wev != NULL) {
        event_del(l->wev);
    }
}

/* One reply line: the oldest batch's record is answered. */
static void
sml_answer(struct sml *l, const char *line)
{
    if (l->unacked == 0) {
        sml_fail(l, "the target sent a reply to no record");
        return;
    }
    struct sml_batch *b = &l->ring[l->head];
    l->unacked--;
    if (--b->n == 0) {
        l->unacked_bytes -= b->bytes;
        l->head = (l->head + 1) % SML_WINDOW;
        l->nbatch--;
    }
    l->reply(l->arg, line);
}

/* The whole lines read so far, to the reply function. */
static void
sml_lines(struct sml *l)
{
    char line[MIGRATE_LINE_MAX];
    while (l->err[0] == '\0' && buf_unread(&l->in) > 0) {
        char *at = l->in.data + l->in.off;
        char *nl = memchr(at, '\n', buf_unread(&l->in));
        if (nl == NULL) {
            break;
        }
        size_t n = (size_t)(nl - at);
        size_t keep = n > 0 && nl[-1] == '\r' ? n - 1 : n;
        keep = keep < MIGRATE_LINE_MAX - 1 ? keep : MIGRATE_LINE_MAX - 1;
        memcpy(line, at, keep);
        line[keep] = '\0';
        l->in.off += n + 1;
        sml_answer(l, line);
    }
    if (buf_unread(&l->in) == 0) {
        buf_reset(&l->in);
    } else if (l->in.off > (64u << 10)) {
        buf_compact(&l->in);
    }
}

/* Read what has arrived (at most SML_READ_MAX bytes), then hand out its
 * lines. */
static void
sml_pull(struct sml *l)
{
    char chunk[16384];
    size_t got = 0;
    while (l->err[0] == '\0' && got < SML_READ_MAX) {
        ssize_t r;
        if (l->link.tls != NULL) {
            r = tls_read(l->link.tls, chunk, sizeof(chunk));
            if (r == TLS_WANT_READ) {
                break;
            }
            if (r == TLS_WANT_WRITE) {
                event_add(l->wev, NULL);
                break;
            }
            if (r < 0) {
                sml_fail(l, "error reading from the target (TLS)");
                break;
            }
        } else {
            r = recv(l->link.fd, chunk, sizeof(chunk), 0);
            if (r < 0 && errno == EINTR) {
                continue;
            }
            if (r < 0 && errno == EAGAIN) {
                break;
            }
            if (r < 0) {
                sml_fail(l, "error reading from the target");
                break;
            }
        }
        if (r == 0) {
            sml_fail(l, "the target closed the connection");
            break;
        }
        buf_append(&l->in, chunk, (size_t)r);
        got += (size_t)r;
        l->io_at = sml_now();
    }
    sml_lines(l);
}

static void
sml_on_read(evutil_socket_t fd, short what, void *arg)
{
    struct sml *l = arg;
    (void)fd;
    (void)what;
    sml_pull(l);
    if (l->link.tls != NULL) {
        sml_flush(l); /* (a TLS write may have waited for a read) */
        if (l->err[0] == '\0' && tls_pending(l->link.tls)) {
            event_active(l->rev, EV_READ, 0); /* bytes the socket will not signal again */
        }
    }
}

static void
sml_on_write(evutil_socket_t fd, short what, void *arg)
{
    struct sml *l = arg;
    (void)fd;
    (void)what;
    sml_flush(l);
    if (l->link.tls != NULL && l->err[0] == '\0') {
        sml_pull(l); /* (a TLS read may have waited for a write) */
    }
}

static bool
sml_auth(struct sml *l, const char *user, const char *pass, int64_t timeout)
{
    struct buf req;
    buf_init(&req);
    bool named = user != NULL && user[0];
    resp_w_array(&req, named ? 3 : 2);
    resp_w_bulk_cstr(&req, "AUTH");
    if (named) {
        resp_w_bulk_cstr(&req, user);
    }
    resp_w_bulk_cstr(&req, pass);
    char line[MIGRATE_LINE_MAX];
    bool ok = mig_send_all(&l->link, req.data, req.len, timeout) &&
              mig_read_line(&l->link, &l->in, line, timeout) && line[0] == '+';
    buf_deinit(&req);
    return ok;
}

bool
sml_open(struct sml *l, struct event_base *base, const char *host, int port, bool tls,
         const char *user, const char *pass, int64_t timeout, int64_t io_timeout,
         sml_reply_fn *reply, void *arg, char *err, size_t errsz)
{
    char ports[16];
    snprintf(ports, sizeof(ports), "%d", port);
    sml_init(l);
    int fd = mig_dial(host, ports, timeout);
    if (fd < 0) {
        snprintf(err, errsz, "cannot connect to the target %s:%d", host, port);
        return false;
    }
    l->link = (struct mig_link){ fd, NULL };
    if (tls && !mig_tls_start(&l->link, timeout)) {
        sml_close(l);
        snprintf(err, errsz, "TLS handshake with the target failed");
        return false;
    }
    if (pass != NULL && pass[0] && !sml_auth(l, user, pass, timeout)) {
        sml_close(l);
        snprintf(err, errsz, "AUTH with the target failed");
        return false;
    }
    l->rev = event_new(base, fd, EV_READ | EV_PERSIST, sml_on_read, l);
    l->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, sml_on_write, l);
    event_add(l->rev, NULL);
    l->reply = reply;
    l->arg = arg;
    l->timeout = io_timeout;
    l->up = true;
    if (buf_unread(&l->in) > 0 || (l->link.tls != NULL && tls_pending(l->link.tls))) {
        event_active(l->rev, EV_READ, 0);
    }
    return true;
}

void
sml_adopt(struct sml *l, struct event_base *base, struct mig_link link, int64_t io_timeout,
          sml_reply_fn *reply, void *arg)
{
    l->link = link;
    l->rev = event_new(base, link.fd, EV_READ | EV_PERSIST, sml_on_read, l);
    l->wev = event_new(base, link.fd, EV_WRITE | EV_PERSIST, sml_on_write, l);
    event_add(l->rev, NULL);
    l->reply = reply;
    l->arg = arg;
    l->timeout = io_timeout;
    l->up = true;
    if (link.tls != NULL && tls_pending(link.tls)) {
        event_active(l->rev, EV_READ, 0);
    }
}

void
sml_close(struct sml *l)
{
    if (l->rev != NULL) {
        event_free(l->rev);
    }
    if (l->wev != NULL) {
        event_free(l->wev);
    }
    if (l->link.fd >= 0) {
        mig_close(&l->link);
    }
    buf_deinit(&l->out);
    buf_deinit(&l->in);
    sml_init(l);
}

bool
sml_room(const struct sml *l)
{
    return l->up && l->err[0] == '\0' && l->nbatch < SML_WINDOW &&
           l->unacked_bytes < SML_WINDOW_BYTES;
}

bool
sml_queue(struct sml *l, const char *p, size_t len, size_t n)
{
    if (!l->up || l->err[0] != '\0') {
        return false;
    }
    if (n == 0) {
        return true;
    }
    if (l->unacked == 0) {
        l->io_at = sml_now();
    }
    if (l->nbatch == SML_WINDOW) { /* (a record past a full window joins the last batch) */
        l->ring[(l->head + l->nbatch - 1) % SML_WINDOW].n += n;
        l->ring[(l->head + l->nbatch - 1) % SML_WINDOW].bytes += len;
    } else {
        l->ring[(l->head + l->nbatch) % SML_WINDOW] = (struct sml_batch){ n, len };
        l->nbatch++;
    }
    l->unacked += n;
    l->unacked_bytes += len;
    if (l->out.off > (1u << 20) && l->out.off > buf_unread(&l->out)) {
        buf_compact(&l->out);
    }
    buf_append(&l->out, p, len);
    sml_flush(l);
    return l->err[0] == '\0';
}

const char *
sml_failed(struct sml *l)
{
    if (l->err[0] == '\0' && l->up && (l->unacked > 0 || buf_unread(&l->out) > 0) &&
        sml_now() - l->io_at > l->timeout) {
        sml_fail(l, buf_unread(&l->out) > 0 ? "error or timeout writing to the target"
                                            : "error or timeout reading from the target");
    }
    return l->err[0] != '\0' ? l->err : NULL;
}

bool
sml_drain(struct sml *l, int64_t timeout)
{
    int64_t deadline = sml_now() + timeout;
    while (l->up && l->err[0] == '\0' && (l->unacked > 0 || buf_unread(&l->out) > 0)) {
        sml_flush(l);
        sml_pull(l);
        if (l->err[0] != '\0' || (l->unacked == 0 && buf_unread(&l->out) == 0)) {
            break;
        }
        if (l->link.tls != NULL && tls_pending(l->link.tls)) {
            continue;
        }
        int64_t left = deadline - sml_now();
        if (left <= 0) {
            sml_fail(l, "error or timeout reading from the target");
            break;
        }
        struct pollfd p = { .fd = l->link.fd, .events = POLLIN };
        if (buf_unread(&l->out) > 0 || (l->wev != NULL && event_pending(l->wev, EV_WRITE, NULL))) {
            p.events |= POLLOUT;
        }
        if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR) {
            sml_fail(l, "error waiting for the target");
        }
    }
    return l->up && l->err[0] == '\0';
}
