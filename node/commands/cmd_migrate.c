/* node/commands/cmd_migrate.c: MIGRATE (Redis 7 syntax, replies and errors).
 *
 * MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
 *         [AUTH password] [AUTH2 username password] [KEYS key ...]
 *
 * Each key present is serialized with DUMP's payload (cmd_dump.c) and sent as
 * RESTORE key ttl payload [REPLACE] (after ASKING in cluster mode, so that a
 * target importing the slot takes it), pipelined over one new connection.
 * As in Redis the shard waits: every connect, write and read waits at most
 * `timeout` ms (poll), never longer. A MIGRATE with a big key goes the
 * asynchronous way instead (migrate_async.h): chunks on the shard's loop
 * into a staging value on the target, the client waiting. A key the target took is deleted here
 * unless COPY, and the deletions are logged as DEL (effect.h), so the WAL and
 * the replicas drop them too. Ruvio has one database: destination-db must be 0. */
#include "node/commands/cmds.h"
#include "node/commands/mig_link.h"
#include "node/commands/migrate_async.h"

#include "base/buf.h"
#include "base/mem.h"
#include "base/tls.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/keyspace/ks.h"
#include "proto/resp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


/* The keys: argv[3], or those after KEYS when argv[3] is "" (Redis's rule;
 * AUTH and AUTH2 arguments are skipped, a password may read "keys"). */
int
migrate_keys(int argc, struct rv_str *argv, int *out, int max)
{
    if (argc < 6 || max < 1) {
        return 0;
    }
    for (int i = 6; i < argc; i++) {
        if (cmd_arg_is(argv[i], "auth")) {
            i++;
        } else if (cmd_arg_is(argv[i], "auth2")) {
            i += 2;
        } else if (cmd_arg_is(argv[i], "keys")) {
            if (argv[3].len != 0) {
                break;
            }
            int n = 0;
            for (int k = i + 1; k < argc && n < max; k++) {
                out[n++] = k;
            }
            return n;
        }
    }
    out[0] = 3;
    return 1;
}

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until deadline; false on timeout or error. */
static bool
wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) {
            return false;
        }
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
        if (r > 0) {
            return (p.revents & (events | POLLHUP | POLLERR)) != 0;
        }
        if (r < 0 && errno != EINTR) {
            return false;
        }
    }
}

/* A connected non-blocking socket to host:port, or -1 on a timeout or an
 * unknown host, or -2 when the connection was refused (Redis then reports
 * the failure as one of writing, its first use of the socket). */
int
mig_dial(const char *host, const char *port, int64_t timeout)
{
    bool refused = false;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL) {
        return -1;
    }
    int fd = -1;
    int64_t deadline = mono_ms() + timeout;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 &&
            (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, deadline) ||
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)) {
            refused = refused || errno == ECONNREFUSED || err != 0;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd >= 0 ? fd : refused ? -2 : -1;
}


/* Wait for what a TLS call asked for (rc: TLS_WANT_READ or TLS_WANT_WRITE). */
static bool
tls_wait(const struct mig_link *l, ssize_t rc, int64_t timeout)
{
    return wait_fd(l->fd, rc == TLS_WANT_READ ? POLLIN : POLLOUT, mono_ms() + timeout);
}

/* tls-cluster: the handshake, bounded by timeout; false when it failed. */
bool
mig_tls_start(struct mig_link *l, int64_t timeout)
{
    struct tls_ctx *ctx = node_tls_bus_get(false);
    l->tls = ctx != NULL ? tls_new(ctx, l->fd, false) : NULL;
    tls_ctx_unref(ctx);
    int64_t deadline = mono_ms() + timeout;
    while (l->tls != NULL) {
        int rc = tls_handshake(l->tls);
        if (rc == 1) {
            return true;
        }
        if (rc == TLS_ERROR || !wait_fd(l->fd, rc == TLS_WANT_READ ? POLLIN : POLLOUT, deadline)) {
            return false;
        }
    }
    return false;
}

void
mig_close(struct mig_link *l)
{
    tls_free(l->tls);
    close(l->fd);
}

bool
mig_send_all(struct mig_link *l, const char *p, size_t n, int64_t timeout)
{
    while (n > 0) {
        if (l->tls != NULL) {
            ssize_t w = tls_write(l->tls, p, n); /* a retry sends the same bytes */
            if (w > 0) {
                p += w;
                n -= (size_t)w;
            } else if (w == 0 || w == TLS_ERROR || !tls_wait(l, w, timeout)) {
                return false;
            }
            continue;
        }
        ssize_t w = send(l->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        } else if (w < 0 && errno == EAGAIN && !wait_fd(l->fd, POLLOUT, mono_ms() + timeout)) {
            return false;
        }
    }
    return true;
}

/* The next reply line (without CRLF, truncated to MIGRATE_LINE_MAX - 1) from
 * the target through in; false on error, close or timeout. */
bool
mig_read_line(struct mig_link *l, struct buf *in, char *line, int64_t timeout)
{
    for (;;) {
        char *nl = buf_unread(in) ? memchr(in->data + in->off, '\n', buf_unread(in)) : NULL;
        if (nl != NULL) {
            size_t n = (size_t)(nl - (in->data + in->off));
            size_t keep = n > 0 && nl[-1] == '\r' ? n - 1 : n;
            keep = keep < MIGRATE_LINE_MAX - 1 ? keep : MIGRATE_LINE_MAX - 1;
            memcpy(line, in->data + in->off, keep);
            line[keep] = '\0';
            in->off += n + 1;
            return true;
        }
        char chunk[4096];
        if (l->tls != NULL) {
            ssize_t r = tls_read(l->tls, chunk, sizeof(chunk));
            if (r > 0) {
                buf_append(in, chunk, (size_t)r);
            } else if (r == 0 || r == TLS_ERROR || !tls_wait(l, r, timeout)) {
                return false;
            }
            continue;
        }
        ssize_t r = recv(l->fd, chunk, sizeof(chunk), 0);
        if (r > 0) {
            buf_append(in, chunk, (size_t)r);
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            return false;
        } else if (errno == EAGAIN && !wait_fd(l->fd, POLLIN, mono_ms() + timeout)) {
            return false;
        }
    }
}

/* false after an error reply */
static bool
parse_opts(struct conn *c, int argc, struct rv_str *argv, struct migrate_opts *o)
{
    *o = (struct migrate_opts){ .first = 3, .nkeys = 1 };
    for (int i = 6; i < argc; i++) {
        if (cmd_arg_is(argv[i], "copy")) {
            o->copy = true;
        } else if (cmd_arg_is(argv[i], "replace")) {
            o->replace = true;
        } else if (cmd_arg_is(argv[i], "auth") && i + 1 < argc) {
            o->user = NULL;
            o->pass = &argv[++i];
        } else if (cmd_arg_is(argv[i], "auth2") && i + 2 < argc) {
            o->user = &argv[++i];
            o->pass = &argv[++i];
        } else if (cmd_arg_is(argv[i], "keys")) {
            if (argv[3].len != 0) {
                reply_errf(c, "ERR When using MIGRATE KEYS option, the key argument must be set "
                              "to the empty string");
                return false;
            }
            o->first = i + 1;
            o->nkeys = argc - i - 1;
            break;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    int64_t db;
    if (!cmd_arg_int(argv[5], &o->timeout) || !cmd_arg_int(argv[4], &db)) {
        reply_errf(c, "ERR value is not an integer or out of range");
        return false;
    }
    if (db != 0) {
        reply_errf(c, "ERR DB index is out of range");
        return false;
    }
    if (o->timeout <= 0) {
        o->timeout = 1000; /* Redis's default */
    }
    if (o->timeout > INT32_MAX) {
        o->timeout = INT32_MAX; /* (deadlines stay far from overflowing) */
    }
    return true;
}

/* The request: [AUTH], then per key [ASKING] RESTORE key ttl payload [REPLACE].
 * Returns the number of reply lines to read. */
static size_t
build_request(struct conn *c, const struct migrate_opts *o, struct rv_str *keys,
              struct ks_entry **ents, int n, struct buf *req)
{
    size_t replies = 0;
    bool asking = c->env->topo != NULL;
    if (o->pass != NULL) {
        resp_w_array(req, o->user ? 3 : 2);
        resp_w_bulk_cstr(req, "AUTH");
        if (o->user) {
            resp_w_bulk(req, o->user->p, o->user->len);
        }
        resp_w_bulk(req, o->pass->p, o->pass->len);
        replies++;
    }
    struct buf payload;
    buf_init(&payload);
    for (int i = 0; i < n; i++) {
        int64_t exp = ks_entry_expire(ents[i]);
        int64_t ttl = exp == KS_NO_EXPIRE ? 0 : exp - c->env->now_ms;
        buf_reset(&payload);
        dump_payload(ents[i], &payload);
        if (asking) {
            resp_w_array(req, 1);
            resp_w_bulk_cstr(req, "ASKING");
            replies++;
        }
        resp_w_array(req, o->replace ? 5 : 4);
        resp_w_bulk_cstr(req, "RESTORE");
        resp_w_bulk(req, keys[i].p, keys[i].len);
        resp_w_bulk_int(req, ttl > 0 ? ttl : 0);
        resp_w_bulk(req, payload.data, payload.len);
        if (o->replace) {
            resp_w_bulk_cstr(req, "REPLACE");
        }
        replies++;
    }
    buf_deinit(&payload);
    return replies;
}

/* Send req, then read the replies: per key, whether the target took it;
 * the first error line in err (""), and *io what failed ("" when nothing). */
static void
exchange(struct mig_link *l, const struct migrate_opts *o, const struct buf *req, int n,
         bool asking, bool *took, char *err, const char **io)
{
    char line[MIGRATE_LINE_MAX];
    bool auth_failed = false;
    struct buf in;
    buf_init(&in);
    *io = "";
    err[0] = '\0';
    if (!mig_send_all(l, req->data, req->len, o->timeout)) {
        *io = "writing";
        goto out;
    }
    if (o->pass != NULL) {
        if (!mig_read_line(l, &in, line, o->timeout)) {
            *io = "reading";
            goto out;
        }
        if (line[0] == '-') {
            auth_failed = true;
            snprintf(err, MIGRATE_LINE_MAX, "%s", line + 1);
        }
    }
    for (int i = 0; i < n; i++) {
        if (asking && !mig_read_line(l, &in, line, o->timeout)) { /* ASKING's +OK */
            *io = "reading";
            goto out;
        }
        if (!mig_read_line(l, &in, line, o->timeout)) {
            *io = "reading";
            goto out;
        }
        took[i] = line[0] != '-' && !auth_failed;
        if (line[0] == '-' && err[0] == '\0') {
            snprintf(err, MIGRATE_LINE_MAX, "%s", line + 1);
        }
    }
out:
    buf_deinit(&in);
}

CMD_HANDLER(migrate)
{
    struct migrate_opts o;
    if (!parse_opts(c, argc, argv, &o)) {
        return;
    }
    /* the keys present (an expired key is missing) */
    struct rv_str *keys = rv_calloc((size_t)o.nkeys + 1, sizeof(*keys));
    struct ks_entry **ents = rv_calloc((size_t)o.nkeys + 1, sizeof(*ents));
    bool *took = rv_calloc((size_t)o.nkeys + 1, sizeof(*took));
    int n = 0;
    for (int i = 0; i < o.nkeys; i++) {
        struct ks_entry *e = lookup_notouch(c, argv[o.first + i], false);
        if (e != NULL) {
            keys[n] = argv[o.first + i];
            ents[n++] = e;
        }
    }
    effect_none(c); /* unless keys are deleted below */
    if (n == 0) {
        reply_simple(c, "NOKEY");
        goto done;
    }
    char host[256], port[16];
    snprintf(host, sizeof(host), "%.*s", (int)(argv[1].len < 255 ? argv[1].len : 255), argv[1].p);
    snprintf(port, sizeof(port), "%.*s", (int)(argv[2].len < 15 ? argv[2].len : 15), argv[2].p);
    if (migrate_async_wanted(c, keys, n)) {
        migrate_async_start(c, &o, host, port, keys, n); /* (c waits, or it replied) */
        goto done;
    }
    struct buf req;
    buf_init(&req);
    build_request(c, &o, keys, ents, n, &req);
    struct mig_link link = { mig_dial(host, port, o.timeout), NULL };
    int fd = link.fd;
    if (fd >= 0 && c->env->cfg->tls.cluster && !mig_tls_start(&link, o.timeout)) {
        mig_close(&link);
        fd = -1;
    }
    if (fd < 0) {
        buf_deinit(&req);
        if (fd == -2) {
            reply_errf(c, "IOERR error or timeout writing to target instance");
        } else {
            reply_errf(c, "IOERR error or timeout connecting to the client");
        }
        goto done;
    }
    char err[MIGRATE_LINE_MAX];
    const char *io;
    exchange(&link, &o, &req, n, c->env->topo != NULL, took, err, &io);
    mig_close(&link);
    buf_deinit(&req);
    int deleted = 0;
    for (int i = 0; i < n && !o.copy; i++) {
        if (took[i] && ks_delete(c->env->ks, keys[i].p, keys[i].len)) {
            if (deleted++ == 0) {
                effect_redo(c, "DEL", keys[i]);
            } else {
                effect_arg(c, keys[i].p, keys[i].len);
            }
        }
    }
    if (err[0] != '\0') {
        reply_errf(c, "ERR Target instance replied with error: %s", err);
    } else if (io[0] != '\0') {
        reply_errf(c, "IOERR error or timeout %s to target instance", io);
    } else {
        reply_ok(c);
    }
done:
    rv_free(keys);
    rv_free(ents);
    rv_free(took);
}
