/* replication/repl_link.c: the framed message transport both sides use:
 * u32 little-endian length, then one packed ReplMsg (proto/repl.proto). */
#include "replication/repl_int.h"

#include "node/base/varint.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void
repl_send(struct buf *out, const ReplMsg *m)
{
    size_t n = protobuf_c_message_get_packed_size(&m->base);
    uint32_t n32 = (uint32_t)n;
    buf_reserve(out, 4 + n);
    memcpy(out->data + out->len, &n32, 4);
    protobuf_c_message_pack(&m->base, (uint8_t *)out->data + out->len + 4);
    out->len += 4 + n;
}

void
repl_send_records(struct buf *out, uint64_t first, uint32_t count, const uint8_t *p, size_t n)
{
    Records rec = RECORDS__INIT;
    ReplMsg m = REPL_MSG__INIT;
    rec.first_lsn = first;
    rec.count = count;
    rec.frames.data = (uint8_t *)p;
    rec.frames.len = n;
    m.m_case = REPL_MSG__M_RECORDS;
    m.records = &rec;
    repl_send(out, &m);
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
        /* Room for the whole message, so one read may complete it. */
        buf_reserve(in, *n + 4 - buf_unread(in));
        return 0;
    }
    *body = (const uint8_t *)in->data + in->off + 4;
    return 1;
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
repl_recv(struct buf *in, ReplMsg **m, uint32_t max)
{
    const uint8_t *body;
    uint32_t n;
    int rc = repl_next(in, &body, &n, max);
    if (rc != 1) {
        return rc;
    }
    *m = repl_msg__unpack(NULL, n, body);
    repl_consume(in, n);
    return *m != NULL ? 1 : -1;
}

void
repl_msg_free(ReplMsg *m)
{
    repl_msg__free_unpacked(m, NULL);
}

/* One protobuf field at *pp: its number, wire type and value (varint or
 * length-delimited bytes; fixed32/64 are skipped). false when cut short or of
 * a kind the fast path leaves to protobuf-c (groups, field 0). */
static bool
pb_field(const uint8_t **pp, const uint8_t *end, uint32_t *num, int *wt, uint64_t *v,
         const uint8_t **bytes)
{
    uint64_t key;
    if (!varint_get_checked(pp, end, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff) {
        return false;
    }
    *num = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    switch (*wt) {
    case 0:
        return varint_get_checked(pp, end, v);
    case 1:
    case 5: {
        size_t w = *wt == 1 ? 8 : 4;
        if ((size_t)(end - *pp) < w) {
            return false;
        }
        *pp += w;
        return true;
    }
    case 2:
        if (!varint_get_checked(pp, end, v) || *v > (uint64_t)(end - *pp)) {
            return false;
        }
        *bytes = *pp;
        *pp += *v;
        return true;
    default:
        return false;
    }
}

bool
repl_parse_records(const uint8_t *p, size_t n, struct repl_records *out)
{
    const uint8_t *end = p + n, *rec = NULL;
    uint64_t rec_len = 0;
    while (p < end) {
        uint32_t num;
        int wt;
        uint64_t v = 0;
        const uint8_t *b = NULL;
        if (!pb_field(&p, end, &num, &wt, &v, &b)) {
            return false;
        }
        /* Anything but one records field (another oneof member, where the
         * last one wins; a second records, which protobuf merges; unknown
         * fields): never sent by us, protobuf-c decides. */
        if (num != REPL_MSG__M_RECORDS || wt != 2 || rec != NULL) {
            return false;
        }
        rec = b;
        rec_len = v;
    }
    if (rec == NULL) {
        return false;
    }
    *out = (struct repl_records){ 0 };
    for (p = rec, end = rec + rec_len; p < end;) {
        uint32_t num;
        int wt;
        uint64_t v = 0;
        const uint8_t *b = NULL;
        if (!pb_field(&p, end, &num, &wt, &v, &b)) {
            return false;
        }
        if (num <= 3 && wt != (num == 3 ? 2 : 0)) {
            return false;
        }
        if (num == 1) {
            out->first_lsn = v;
        } else if (num == 2) {
            out->count = (uint32_t)v;
        } else if (num == 3) {
            out->frames = b;       /* a repeated scalar: the last one wins */
            out->len = (size_t)v;
        }
    }
    return true;
}

int
repl_read(int fd, struct buf *in)
{
    if (in->off > 0 && in->off == in->len) {
        in->off = in->len = 0;
    }
    /* Big reads, few syscalls, but not past a few hundred KB: what is read is
     * applied before the next read, while it is still in cache. Room is made
     * only when under 64 KB is free, so the unread tail (a partial message)
     * moves at most once per few hundred KB read; repl_next reserves room
     * for a whole large message. */
    if (in->cap - in->len < 64 * 1024) {
        buf_reserve(in, 256 * 1024);
    }
    ssize_t n = read(fd, in->data + in->len, in->cap - in->len);
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
repl_write(int fd, struct buf *out, bool *blocked)
{
    *blocked = false;
    while (out->off < out->len) {
        ssize_t n = write(fd, out->data + out->off, out->len - out->off);
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
