/* The replica's receive path: repl_parse_records (the Records fast path) must
 * read exactly what protobuf-c would, and leave anything else to it;
 * repl_next/repl_consume frame messages without copying them. */
#include "replication/repl_int.h"
#include "replication/repl_msg_pb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

/* Pack a Records message as the primary does (repl_send_records). */
static size_t
pack_records(uint8_t *out, uint64_t first, uint32_t count, const uint8_t *p, size_t n)
{
    struct buf b;
    buf_init(&b);
    repl_send_records(&b, first, count, p, n);
    size_t len = b.len - 4;
    memcpy(out, b.data + 4, len);
    buf_deinit(&b);
    return len;
}

/* Whatever the fast path accepts, protobuf-c accepts as the same Records. */
static void
check_same(const uint8_t *p, size_t n)
{
    struct repl_records rec;
    if (!repl_parse_records(p, n, &rec)) {
        return;
    }
    ReplMsg *m = repl_msg__unpack(NULL, n, p);
    cr_assert_not_null(m, "fast path accepted what protobuf-c rejects");
    cr_assert_eq(m->m_case, REPL_MSG__M_RECORDS);
    cr_assert_eq(m->records->first_lsn, rec.first_lsn);
    cr_assert_eq(m->records->count, rec.count);
    cr_assert_eq(m->records->frames.len, rec.len);
    cr_assert(rec.len == 0 || memcmp(m->records->frames.data, rec.frames, rec.len) == 0);
    cr_assert(rec.len == 0 || (rec.frames >= p && rec.frames + rec.len <= p + n));
    repl_msg_free(m);
}

Test(link, records_parse_like_protobuf_c)
{
    static uint8_t frames[70000], msg[70100];
    for (size_t i = 0; i < sizeof(frames); i++) {
        frames[i] = (uint8_t)rnd();
    }
    for (int i = 0; i < 2000; i++) {
        /* Zero values too: proto3 leaves those fields out. */
        uint64_t first = i % 5 == 0 ? 0 : rnd() >> (rnd() % 64);
        uint32_t count = i % 7 == 0 ? 0 : (uint32_t)rnd();
        size_t n = i % 11 == 0 ? 0 : rnd() % (i % 13 == 0 ? sizeof(frames) : 300);
        size_t off = rnd() % (sizeof(frames) - n + 1);
        size_t len = pack_records(msg, first, count, frames + off, n);
        struct repl_records rec;
        cr_assert(repl_parse_records(msg, len, &rec));
        cr_assert_eq(rec.first_lsn, first);
        cr_assert_eq(rec.count, count);
        cr_assert_eq(rec.len, n);
        cr_assert(n == 0 || memcmp(rec.frames, frames + off, n) == 0);
        check_same(msg, len);
    }
}

/* Hand-made encodings protobuf-c accepts: fields out of order, repeated
 * scalars (the last wins), unknown fields inside Records, a 32-bit count
 * sent as a longer varint (truncated). */
Test(link, records_unusual_but_valid)
{
    static const uint8_t cases[][40] = {
        /* len, then ReplMsg bytes */
        { 14, 0x3a, 12, 0x1a, 2, 'a', 'b', 0x10, 5, 0x08, 7, 0x08, 9, 0x28, 1 },
        { 18, 0x3a, 16, 0x1a, 1, 'x', 0x1a, 2, 'y', 'z', 0x21, 1, 2, 3, 4, 5, 6, 7, 8 },
        { 18, 0x3a, 16, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x08, 0x80, 0x80, 0x04, 0x25, 1,
          2, 3, 4 },
        { 2, 0x3a, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct repl_records rec;
        cr_assert(repl_parse_records(cases[i] + 1, cases[i][0], &rec), "case %zu", i);
        check_same(cases[i] + 1, cases[i][0]);
    }
    struct repl_records rec;
    repl_parse_records(cases[0] + 1, cases[0][0], &rec);
    cr_assert_eq(rec.first_lsn, 9);
    cr_assert_eq(rec.count, 5);
    cr_assert_eq(rec.len, 2);
    repl_parse_records(cases[1] + 1, cases[1][0], &rec);
    cr_assert_eq(rec.len, 2);
    cr_assert_eq(memcmp(rec.frames, "yz", 2), 0);
    repl_parse_records(cases[2] + 1, cases[2][0], &rec);
    cr_assert_eq(rec.count, 0xffffffffu);
    cr_assert_eq(rec.first_lsn, 1u << 16);
}

/* Other messages and anything unusual at the top level go to protobuf-c. */
Test(link, other_messages_are_left_to_protobuf_c)
{
    Ack a = ACK__INIT;
    ReplMsg m = REPL_MSG__INIT;
    a.applied = 5;
    m.m_case = REPL_MSG__M_ACK;
    m.ack = &a;
    uint8_t b[64];
    size_t n = protobuf_c_message_pack(&m.base, b);
    struct repl_records rec;
    cr_assert_not(repl_parse_records(b, n, &rec));
    cr_assert_not(repl_parse_records(b, 0, &rec));              /* empty ReplMsg */
    static const uint8_t two[] = { 0x3a, 0, 0x3a, 2, 0x08, 1 }; /* merged by protobuf */
    cr_assert_not(repl_parse_records(two, sizeof(two), &rec));
    static const uint8_t then_ack[] = { 0x3a, 0, 0x42, 0 }; /* the last member wins */
    cr_assert_not(repl_parse_records(then_ack, sizeof(then_ack), &rec));
    static const uint8_t unknown[] = { 0x3a, 0, 0x98, 0x06, 1 }; /* field 99 */
    cr_assert_not(repl_parse_records(unknown, sizeof(unknown), &rec));
    static const uint8_t wt[] = { 0x3a, 2, 0x0a, 0 }; /* first_lsn as bytes */
    cr_assert_not(repl_parse_records(wt, sizeof(wt), &rec));
    static const uint8_t group[] = { 0x3a, 2, 0x23, 0x24 }; /* a group */
    cr_assert_not(repl_parse_records(group, sizeof(group), &rec));
    /* Found by fuzz_repl: an unknown fixed32 field whose tag is an overlong
     * 6-byte varint. protobuf-c refuses tags over 5 bytes, so the fast path
     * must not accept it either. */
    static const uint8_t overlong[] = { 0x3a, 0x16, 0x1a, 0x02, 0x61, 0x62, 0x85, 0x85,
                                        0x85, 0x85, 0x85, 0x00, 0x3a, 0x85, 0x85, 0x85,
                                        0x85, 0x85, 0x85, 0x34, 0x35, 0x36, 0x37, 0xff };
    cr_assert_not(repl_parse_records(overlong, sizeof(overlong), &rec));
    check_same(overlong, sizeof(overlong));
}

/* Truncations, bit flips and random bytes: never a crash, never a Records
 * protobuf-c would not produce. */
Test(link, garbage_is_rejected_or_agrees)
{
    static uint8_t frames[600], msg[700];
    for (size_t i = 0; i < sizeof(frames); i++) {
        frames[i] = (uint8_t)rnd();
    }
    for (int i = 0; i < 20000; i++) {
        size_t len = pack_records(msg, rnd() >> (rnd() % 64), (uint32_t)rnd(), frames,
                                  rnd() % sizeof(frames));
        size_t n = rnd() % (len + 1);
        uint8_t *p = malloc(n ? n : 1); /* exact size: ASan sees any overread */
        memcpy(p, msg, n);
        if (i % 2 && n > 0) {
            p[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
        }
        if (i % 5 == 0) {
            for (size_t k = 0; k < n; k++) {
                p[k] = (uint8_t)rnd();
            }
        }
        if (n < len && i % 2 == 0 && i % 5 != 0) {
            struct repl_records rec;
            cr_assert_not(repl_parse_records(p, n, &rec), "truncated to %zu of %zu", n, len);
        }
        check_same(p, n);
        free(p);
    }
}

Test(link, next_and_consume_frame_in_place)
{
    struct buf in;
    buf_init(&in);
    const uint8_t *body;
    uint32_t n;
    cr_assert_eq(repl_next(&in, &body, &n, 100), 0);
    uint8_t f[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    repl_send_records(&in, 3, 1, f, sizeof(f));
    size_t one = in.len;
    repl_send_records(&in, 4, 1, f, 4);
    cr_assert_eq(repl_next(&in, &body, &n, 4), -1); /* over max */
    cr_assert_eq(repl_next(&in, &body, &n, 100), 1);
    cr_assert_eq(body, (const uint8_t *)in.data + 4);
    struct repl_records rec;
    cr_assert(repl_parse_records(body, n, &rec));
    cr_assert_eq(rec.first_lsn, 3);
    cr_assert_eq(memcmp(rec.frames, f, 8), 0);
    repl_consume(&in, n);
    cr_assert_eq(in.off, one);
    size_t full = in.len;
    in.len = full - 1; /* the last byte not read yet */
    cr_assert_eq(repl_next(&in, &body, &n, 100), 0);
    in.len = full;
    cr_assert_eq(repl_next(&in, &body, &n, 100), 1);
    cr_assert(repl_parse_records(body, n, &rec));
    cr_assert_eq(rec.first_lsn, 4);
    cr_assert_eq(rec.len, 4);
    repl_consume(&in, n);
    cr_assert_eq(in.off, 0); /* all read: reset */
    cr_assert_eq(in.len, 0);
    buf_deinit(&in);
}

/* A peer announcing a huge message gets room only as its bytes arrive: the
 * buffer never jumps to the announced length. */
Test(link, next_grows_with_the_bytes_not_the_announced_length)
{
    struct buf in;
    buf_init(&in);
    const uint8_t *body;
    uint32_t n, big = 0xffffff00u;
    buf_reserve(&in, 64);
    memcpy(in.data, &big, 4);
    memset(in.data + 4, 0, 60);
    in.len = 64;
    cr_assert_eq(repl_next(&in, &body, &n, 0xffffffffu), 0);
    cr_assert_eq(n, big);
    cr_assert_leq(in.cap, (size_t)4 << 20, "reserved %zu bytes for 64 received", in.cap);
    cr_assert_eq(repl_next(&in, &body, &n, big - 1), -1); /* over max: refused */
    size_t got = in.len;
    for (int i = 0; i < 8; i++) { /* 8 MB more arrive */
        buf_reserve(&in, 1u << 20);
        memset(in.data + in.len, 0, 1u << 20);
        in.len += 1u << 20;
        got += 1u << 20;
        cr_assert_eq(repl_next(&in, &body, &n, 0xffffffffu), 0);
        cr_assert_leq(in.cap, 4 * got + (4u << 20), "cap %zu after %zu bytes", in.cap, got);
    }
    buf_deinit(&in);
}

/* A replica reads ships of ~100 KB that arrive in pieces, so a read often
 * ends inside a message. Making room moves that partial tail to the front of
 * the buffer: the buffer grows to 1 MB instead, and then near its end a
 * read stops at the end of the message, so that the buffer empties (the old
 * policy moved 9.8 % of the bytes here, this one 0.2 %, while growing), and
 * nothing read may change. */
Test(link, read_moves_partial_messages_rarely)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    cr_assert_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    cr_assert_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    enum { MSG = 100000, NMSG = 200, STEP = 70000 };
    size_t total = (size_t)NMSG * (MSG + 4);
    uint8_t *stream = malloc(total);
    cr_assert(stream != NULL);
    for (size_t m = 0; m < NMSG; m++) {
        uint32_t len = MSG;
        memcpy(stream + m * (MSG + 4), &len, 4);
        memset(stream + m * (MSG + 4) + 4, (int)(m & 0xff), MSG);
    }
    struct buf in;
    buf_init(&in);
    size_t sent = 0, got = 0, moved = 0;
    for (int round = 0; got < NMSG; round++) {
        cr_assert(round < 100000, "stuck: %zu of %d messages, %zu of %zu bytes sent", got, NMSG,
                  sent, total);
        if (sent < total) {
            size_t k = total - sent < STEP ? total - sent : STEP;
            ssize_t w = write(sv[0], stream + sent, k);
            cr_assert(w > 0 || (w < 0 && errno == EAGAIN));
            sent += w > 0 ? (size_t)w : 0;
        }
        for (;;) {
            const char *d = in.data;
            size_t off = in.off, unread = in.len - in.off;
            int n = repl_read(sv[1], NULL, &in);
            cr_assert(n >= 0);
            if (unread > 0 && (in.data != d || in.off != off)) {
                moved += unread; /* compacted or reallocated */
            }
            if (n == 0) {
                break;
            }
            const uint8_t *body;
            uint32_t len;
            int rc;
            while (d = in.data, off = in.off, unread = in.len - in.off,
                   (rc = repl_next(&in, &body, &len, 1u << 20)) == 1) {
                cr_assert_eq(len, MSG);
                cr_assert(body[0] == (got & 0xff) && body[MSG - 1] == (got & 0xff) &&
                              memcmp(body, body + 1, MSG - 1) == 0,
                          "message %zu changed", got);
                got++;
                repl_consume(&in, len);
            }
            cr_assert_eq(rc, 0);
            if (unread > 0 && (in.data != d || in.off != off)) {
                moved += unread;
            }
        }
    }
    cr_expect(moved * 100 < total, "moved %zu of %zu bytes read again", moved,
              total); /* (growing to 1 MB) */
    buf_deinit(&in);
    free(stream);
    close(sv[0]);
    close(sv[1]);
}
