/* replication/repl_link.c: the framed message transport both sides use:
 * u32 little-endian length, then one packed ReplMsg (proto/repl.proto). */
#include "replication/repl_int.h"

#include "base/tls.h"
#include "base/varint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ReplMsg{records(7): Records{first_lsn(1), count(2), frames(3)}}, packed
 * by hand because protobuf-c would copy the frames into the message; the
 * bytes are those protobuf-c produces (zero scalars omitted), which the unit
 * test checks. */
size_t
repl_records_hdr(uint8_t *h, uint64_t first, uint32_t count, size_t n)
{
    uint8_t inner[32];
    size_t k = 0;
    if (first != 0) {
        inner[k++] = 0x08;
        k = (size_t)(varint_put(inner + k, first) - inner);
    }
    if (count != 0) {
        inner[k++] = 0x10;
        k = (size_t)(varint_put(inner + k, count) - inner);
    }
    if (n != 0) {
        inner[k++] = 0x1a;
        k = (size_t)(varint_put(inner + k, n) - inner);
    }
    uint64_t rec_len = k + n;
    uint64_t msg_len = 1 + varint_len(rec_len) + rec_len;
    uint32_t m32 = (uint32_t)msg_len;
    memcpy(h, &m32, 4);
    size_t off = 4;
    h[off++] = 0x3a;
    off = (size_t)(varint_put(h + off, rec_len) - h);
    memcpy(h + off, inner, k);
    return off + k;
}

void
repl_send_records(struct buf *out, uint64_t first, uint32_t count, const uint8_t *p, size_t n)
{
    buf_reserve(out, REPL_RECORDS_HDR_MAX + n);
    out->len += repl_records_hdr((uint8_t *)out->data + out->len, first, count, n);
    memcpy(out->data + out->len, p, n);
    out->len += n;
}

/* Make room for n more bytes. A large partial message is not moved to the
 * front while the buffer is under 1 MB: it grows instead (see repl_read). */
static void
room_for(struct buf *in, size_t n)
{
    if (in->cap - in->len >= n) {
        return;
    }
    if (buf_unread(in) > 16 * 1024 && in->cap < (1u << 20)) {
        buf_reserve(in, in->cap); /* at least doubles: no compaction can give cap */
    }
    buf_reserve(in, n);
}

int
repl_next(struct buf *in, const uint8_t **body, uint32_t *n, uint32_t max)
{
    if (buf_unread(in) < 4) {
        return 0;
    }
    memcpy(n, in->data + in->off, 4);
    if (*n > max) {
        return -1;
    }
    if (buf_unread(in) - 4 < *n) {
        /* Room for the whole message, so one read may complete it, but never
         * more than has arrived (1 MB at first): a peer that announces a
         * large frame gets memory only as its bytes come. */
        size_t missing = *n + 4 - buf_unread(in);
        size_t step = buf_unread(in) > (1u << 20) ? buf_unread(in) : (1u << 20);
        room_for(in, missing < step ? missing : step);
        return 0;
    }
    *body = (const uint8_t *)in->data + in->off + 4;
    return 1;
}

size_t
repl_need(const struct buf *in)
{
    size_t have = buf_unread(in);
    uint32_t n;
    if (have == 0) {
        return 0;
    }
    if (have < 4) {
        return 4 - have;
    }
    memcpy(&n, in->data + in->off, 4);
    return have - 4 < n ? 4 + (size_t)n - have : 0;
}

void
repl_consume(struct buf *in, uint32_t n)
{
    in->off += 4 + (size_t)n;
    if (in->off == in->len) {
        in->off = in->len = 0;
    }
}

int
repl_read(int fd, struct tls *tls, struct buf *in)
{
    if (in->off > 0 && in->off == in->len) {
        in->off = in->len = 0;
    }
    /* Big reads, few syscalls, but not past 256 KB: what is read is applied
     * before the next read, while it is still in cache. Making room moves the
     * unread tail (a partial message) to the front, so it is avoided: a
     * replica's buffer (ships of ~100 KB, often read in pieces) first grows to
     * 1 MB, and then near its end a read stops where the partial message ends, so
     * that everything read is consumed and the next read starts at the front
     * again (callgrind: before, a quarter of the bytes read were moved once
     * more). A primary's reads (acks) stay small. repl_next reserves room for
     * a whole large message. */
    size_t need = repl_need(in), room = in->cap - in->len;
    if (room < 64 * 1024 && (need == 0 || need > room)) {
        room_for(in, 256 * 1024);
        room = in->cap - in->len;
    }
    size_t want = room < 256 * 1024 ? room : 256 * 1024;
    if (need > 0 && need < want && room - want < 64 * 1024 && in->cap >= (1u << 20)) {
        want = need; /* near the end: finish this message only */
    }
    if (tls != NULL) {
        /* records until the session holds nothing decrypted: the socket's
         * next event would not come for bytes already taken off it */
        size_t total = 0;
        for (;;) {
            ssize_t n = tls_read(tls, in->data + in->len, want);
            if (n <= 0) {
                if (total > 0 || n == TLS_WANT_READ || n == TLS_WANT_WRITE) {
                    return (int)(total > INT32_MAX ? INT32_MAX : total);
                }
                return -1;
            }
            in->len += (size_t)n;
            total += (size_t)n;
            if (!tls_pending(tls)) {
                return (int)(total > INT32_MAX ? INT32_MAX : total);
            }
            room_for(in, 64 * 1024);
            want = in->cap - in->len;
        }
    }
    ssize_t n = read(fd, in->data + in->len, want);
    if (n > 0) {
        in->len += (size_t)n;
        return (int)(n > INT32_MAX ? INT32_MAX : n);
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return 0;
    }
    return -1;
}

int
repl_write(int fd, struct tls *tls, struct buf *out, bool *blocked)
{
    *blocked = false;
    while (out->off < out->len) {
        ssize_t n;
        if (tls != NULL) {
            n = tls_write(tls, out->data + out->off, out->len - out->off);
            if (n == TLS_WANT_READ || n == TLS_WANT_WRITE) {
                *blocked = true;
                return 0;
            }
            if (n <= 0) {
                return -1;
            }
        } else {
            n = write(fd, out->data + out->off, out->len - out->off);
        }
        if (n > 0) {
            out->off += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            *blocked = true;
            return 0;
        }
        return -1;
    }
    out->off = out->len = 0;
    if (out->cap > (4u << 20)) {
        buf_shrink(out, 64 * 1024);
    }
    return 0;
}
