/* tests/unit/commands/test_slotmig_link.c: the atomic migration's link to its target (slotmig_link.h) over a
 * loopback socket, on a private event_base; the test plays the target. Replies are handed out in order, one
 * line at a time, and free the window; a record too big for the socket waits for EV_WRITE; a reply to no
 * record, the target closing and a silent target fail the link; the abort's drain reads every reply left. */
#include "node/commands/slotmig_link.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct seen {
    char line[64][32];
    int n;
};

static struct event_base *base;
static struct sml l;
static struct seen seen;
static int peer = -1;

static void
on_reply(void *arg, const char *line)
{
    struct seen *s = arg;
    snprintf(s->line[s->n % 64], sizeof(s->line[0]), "%s", line);
    s->n++;
}

/* A link to a loopback listener, io_timeout ms; peer: the accepted end (non-blocking). */
static void
open_link(int64_t io_timeout)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    base = event_base_new();
    memset(&seen, 0, sizeof(seen));
    sml_init(&l);
    char err[256] = "";
    cr_assert(sml_open(&l, base, "127.0.0.1", ntohs(a.sin_port), false, NULL, NULL, 2000,
                       io_timeout, on_reply, &seen, err, sizeof(err)),
              "%s", err);
    peer = accept(lfd, NULL, NULL);
    cr_assert(peer >= 0);
    fcntl(peer, F_SETFL, fcntl(peer, F_GETFL) | O_NONBLOCK);
    close(lfd);
}

static void
teardown(void)
{
    sml_close(&l);
    if (peer >= 0) {
        close(peer);
        peer = -1;
    }
    event_base_free(base);
}

TestSuite(slotmig_link, .fini = teardown);

static void
say(const char *s)
{
    cr_assert_eq(write(peer, s, strlen(s)), (ssize_t)strlen(s));
}

/* Turn the loop until n replies came (bounded: 10 s). */
static void
until_replies(int n)
{
    for (int i = 0; i < 1000 && seen.n < n && sml_failed(&l) == NULL; i++) {
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(base, &tv);
        event_base_loop(base, EVLOOP_ONCE);
    }
}

/* What the target received so far (at most n bytes), the loop turned in between. */
static size_t
drain_peer(size_t want)
{
    static char chunk[1 << 16];
    size_t got = 0;
    for (int idle = 0; got < want && idle < 20000;) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        ssize_t r = read(peer, chunk, sizeof(chunk));
        if (r > 0) {
            got += (size_t)r;
            idle = 0;
        } else {
            cr_assert(r < 0 && errno == EAGAIN);
            poll(NULL, 0, 1);
            idle++;
        }
    }
    return got;
}

static void
queue1(const char *rec)
{
    cr_assert(sml_queue(&l, rec, strlen(rec), 1));
}

Test(slotmig_link, replies_in_order_free_the_window)
{
    open_link(60000);
    for (int i = 0; i < SML_WINDOW; i++) {
        cr_assert(sml_room(&l));
        queue1("R\r\n");
    }
    cr_assert(!sml_room(&l) && !sml_idle(&l));
    cr_assert_eq(drain_peer(3 * SML_WINDOW), 3 * SML_WINDOW);
    say("+OK\r\n:2\r\n-ERR x");
    until_replies(2);
    cr_assert_eq(seen.n, 2);
    cr_assert_str_eq(seen.line[0], "+OK");
    cr_assert_str_eq(seen.line[1], ":2");
    cr_assert(sml_room(&l) && !sml_idle(&l));
    say("y\r\n");
    until_replies(3);
    cr_assert_str_eq(seen.line[2], "-ERR xy"); /* (a line split across reads) */
    for (int i = 3; i < SML_WINDOW; i++) {
        say("+OK\r\n");
    }
    until_replies(SML_WINDOW);
    cr_assert(sml_idle(&l) && sml_room(&l) && sml_failed(&l) == NULL);
}

Test(slotmig_link, records_past_a_full_ring_join_its_last_batch)
{
    open_link(60000);
    for (int i = 0; i < SML_WINDOW + 3; i++) {
        queue1("R\r\n");
    }
    cr_assert_eq(l.nbatch, SML_WINDOW);
    cr_assert_eq(l.unacked, SML_WINDOW + 3);
    for (int i = 0; i < SML_WINDOW + 3; i++) {
        say("+OK\r\n");
    }
    until_replies(SML_WINDOW + 3);
    cr_assert(sml_idle(&l) && l.nbatch == 0 && l.unacked_bytes == 0);
}

Test(slotmig_link, a_record_bigger_than_the_socket_waits_for_ev_write)
{
    open_link(60000);
    size_t n = 3 * SML_WINDOW_BYTES;
    char *big = malloc(n);
    memset(big, 'x', n);
    cr_assert(sml_queue(&l, big, n, 1));
    free(big);
    cr_assert(buf_unread(&l.out) > 0, "the socket took %zu bytes at once", n);
    cr_assert(!sml_room(&l));
    cr_assert_eq(drain_peer(n), n);
    cr_assert_eq(buf_unread(&l.out), 0);
    say("+OK\r\n");
    until_replies(1);
    cr_assert(sml_idle(&l) && sml_room(&l));
}

Test(slotmig_link, a_reply_to_no_record_fails_the_link)
{
    open_link(60000);
    say("+OK\r\n");
    for (int i = 0; i < 1000 && sml_failed(&l) == NULL; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        poll(NULL, 0, 1);
    }
    cr_assert_str_eq(sml_failed(&l), "the target sent a reply to no record");
    cr_assert(!sml_queue(&l, "R\r\n", 3, 1) && !sml_room(&l));
}

Test(slotmig_link, the_target_closing_fails_the_link)
{
    open_link(60000);
    queue1("R\r\n");
    cr_assert_eq(drain_peer(3), 3); /* (closing with it unread would reset the connection) */
    close(peer);
    peer = -1;
    until_replies(1);
    cr_assert_eq(seen.n, 0);
    cr_assert_str_eq(sml_failed(&l), "the target closed the connection");
}

Test(slotmig_link, a_silent_target_times_out)
{
    open_link(20);
    queue1("R\r\n");
    poll(NULL, 0, 60); /* (three times the link's timeout: the outcome does not depend on timing) */
    cr_assert_str_eq(sml_failed(&l), "error or timeout reading from the target");
}

Test(slotmig_link, drain_reads_every_reply_left)
{
    open_link(60000);
    for (int i = 0; i < 3; i++) {
        queue1("R\r\n");
    }
    say("+OK\r\n:1\r\n:0\r\n");
    cr_assert(sml_drain(&l, 10000));
    cr_assert(seen.n == 3 && sml_idle(&l));
    queue1("R\r\n");
    cr_assert(!sml_drain(&l, 30)); /* no reply comes */
    cr_assert_str_eq(sml_failed(&l), "error or timeout reading from the target");
}
