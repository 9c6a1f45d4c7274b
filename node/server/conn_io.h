/* node/server/conn_io.h: a connection's socket I/O (node/server/conn.c).
 * Other layers reach these through node/core/conn.h's conn_close,
 * conn_flush and conn_resume; the server calls them directly. */
#pragma once
#include "node/core/conn.h"

#include <stdbool.h>

struct shard;
/* Take ownership of an accepted socket. */
struct conn *conn_create(struct shard *s, int fd);
/* Accepted on a tls-port: the session starts (its handshake runs in the
 * first reads). -1: no TLS context or no session; the connection is closed. */
int conn_start_tls(struct conn *c);
void conn_io_close(struct conn *c);
bool conn_io_flush(struct conn *c);
/* Serve the shard's other clients while a script is busy (script_set_poll). */
void conn_busy_poll(struct shard *s, struct conn *running);
void conn_io_resume(struct conn *c);
/* The table the server gives node/core (conn_set_io). */
extern const struct conn_io conn_io_ops;
