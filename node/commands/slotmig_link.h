/* node/commands/slotmig_link.h: the source job's link to the target of an
 * atomic slot migration (slotmig_link.c). Internal to cmd_migslots.c, which
 * owns the job and decides what each reply means.
 *
 * Opening it (dial, TLS handshake, AUTH) is one short blocking step, bounded
 * by its timeout. From then on nothing waits: records queued with sml_queue
 * are written from an output buffer on the shard's event loop (EV_WRITE when
 * the socket is full, TLS included), and the replies are read when they
 * arrive (EV_READ) and handed to the reply function one line at a time, in
 * the order of the records. A window bounds what is in flight: SML_WINDOW
 * batches and SML_WINDOW_BYTES bytes not yet acknowledged (sml_room), so that
 * the job never builds more than the target takes. A failure (an I/O error,
 * the target closing, SM_IO_MS without progress while records are in flight)
 * is sticky: sml_failed says why, and nothing more is sent. */
#pragma once
#include "base/buf.h"
#include "node/commands/mig_link.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;

#define SML_WINDOW 8                /* batches of records in flight */
#define SML_WINDOW_BYTES (4u << 20) /* bytes of records in flight */
#define SML_ERR_MAX 256

/* One reply line (without CRLF, truncated to MIGRATE_LINE_MAX - 1). */
typedef void sml_reply_fn(void *arg, const char *line);

struct sml_batch {
    size_t n, bytes; /* records not yet answered, bytes of the batch */
};

struct sml {
    struct mig_link link;
    bool up;
    struct event *rev, *wev;
    struct buf out; /* [off, len): queued, not yet written */
    struct buf in;  /* read, not yet a whole line */
    struct sml_batch ring[SML_WINDOW];
    size_t head, nbatch;
    size_t unacked, unacked_bytes;
    int64_t io_at; /* monotonic ms of the last byte moved while records were in flight */
    int64_t timeout;
    char err[SML_ERR_MAX]; /* "" while the link is good */
    sml_reply_fn *reply;
    void *arg;
};

void sml_init(struct sml *l);
/* l closed or fresh from sml_init: dial host:port, TLS when tls, AUTH [user] pass when pass is set: each step
 * bounded by timeout (ms; the shard waits). Then replies go to reply(arg),
 * and io_timeout (ms) without progress fails the link. False with the reason
 * in err. */
bool sml_open(struct sml *l, struct event_base *base, const char *host, int port, bool tls,
              const char *user, const char *pass, int64_t timeout, int64_t io_timeout,
              sml_reply_fn *reply, void *arg, char *err, size_t errsz);
/* l fresh from sml_init: take over link (connected, its TLS session set up;
 * MIGRATE dials it itself, for Redis's error texts) as sml_open does once
 * its blocking steps are done. */
void sml_adopt(struct sml *l, struct event_base *base, struct mig_link link, int64_t io_timeout,
               sml_reply_fn *reply, void *arg);
/* Closes the socket, drops what was queued; l is reusable after sml_init. */
void sml_close(struct sml *l);
/* Queue n records (their bytes: p, len; copied) and start writing them.
 * False when the link failed (nothing queued). */
bool sml_queue(struct sml *l, const char *p, size_t len, size_t n);
/* Another batch may be queued: the link is up and the window has room. */
bool sml_room(const struct sml *l);
/* Every record queued has been answered. */
static inline bool
sml_idle(const struct sml *l)
{
    return l->unacked == 0;
}
/* The reason the link failed, or NULL. Checks the I/O timeout first. */
const char *sml_failed(struct sml *l);
/* Fail the link with this reason (the job's verdict on a reply). */
void sml_fail(struct sml *l, const char *why);
/* At the job's end: write everything queued and read every reply left,
 * waiting at most timeout ms in all (the shard waits); replies still go to
 * the reply function. False when the link failed or the time ran out. */
bool sml_drain(struct sml *l, int64_t timeout);
