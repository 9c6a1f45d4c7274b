/* node/commands/mig_link.h: the blocking connection MIGRATE (cmd_migrate.c)
 * and CLUSTER MIGRATESLOTS (cmd_migslots.c) open to a target node. Every step
 * waits at most the timeout given (poll), never longer; the shard waits. */
#pragma once
#include "base/buf.h"

#include <stdbool.h>
#include <stdint.h>

#define MIGRATE_LINE_MAX 1024 /* a target's reply line kept for the error text */

/* Under tls-cluster a TLS session with the cluster's client context (the
 * nodes announce their TLS ports, and Redis's MIGRATE uses TLS then too). */
struct tls;
struct mig_link {
    int fd;
    struct tls *tls;
};

/* A connected non-blocking socket to host:port, or -1 on a timeout or an
 * unknown host, or -2 when the connection was refused. */
int mig_dial(const char *host, const char *port, int64_t timeout);
/* tls-cluster: the handshake, bounded by timeout; false when it failed. */
bool mig_tls_start(struct mig_link *l, int64_t timeout);
void mig_close(struct mig_link *l);
bool mig_send_all(struct mig_link *l, const char *p, size_t n, int64_t timeout);
/* The next reply line (without CRLF, truncated to MIGRATE_LINE_MAX - 1) into
 * line, read through in; false on error, close or timeout. */
bool mig_read_line(struct mig_link *l, struct buf *in, char *line, int64_t timeout);
