/* node/core/conn.c: what every layer may do with a connection. The socket
 * I/O (reading, writing, closing) is the server's (node/server/conn.c), which
 * provides it through conn_set_io() before any shard starts. */
#include "node/core/conn.h"

#include "node/core/shard.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

static const struct conn_io *io;

void
conn_set_io(const struct conn_io *ops)
{
    io = ops;
}

void
conn_close(struct conn *c)
{
    io->close(c);
}

bool
conn_flush(struct conn *c)
{
    return io->flush(c);
}

void
conn_resume(struct conn *c)
{
    io->resume(c);
}

struct ks *
conn_ks(const struct conn *c)
{
    return shard_ks(c->shard);
}

int64_t
conn_now_ms(const struct conn *c)
{
    return shard_now_ms(c->shard);
}

void
conn_fmt_addr(const struct sockaddr_storage *ss, char *out, size_t outsz, char *ip, size_t ipsz)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
    }
    snprintf(out, outsz, "%s:%d", host, port);
    if (ip) {
        snprintf(ip, ipsz, "%s", host);
    }
}

void
conn_close_after_reply(struct conn *c)
{
    if (!(c->flags & CONN_CLOSE_AFTER_REPLY)) {
        c->flags |= CONN_CLOSE_AFTER_REPLY;
        event_del(&c->rev);
    }
    shard_want_write(c->shard, c);
}
