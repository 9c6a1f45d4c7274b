/* node/core/conn.c: what every layer may do with a connection. The socket
 * I/O (reading, writing, closing) is the server's (node/server/conn.c), which
 * provides it through conn_set_io() before any shard starts. */
#include "node/core/conn.h"

#include "node/core/shard.h"

#include <event2/event.h>

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

void
conn_close_after_reply(struct conn *c)
{
    if (!(c->flags & CONN_CLOSE_AFTER_REPLY)) {
        c->flags |= CONN_CLOSE_AFTER_REPLY;
        event_del(&c->rev);
    }
    shard_want_write(c->shard, c);
}
