/* tests/fuzz/fuzz_repl.c: libFuzzer target for the replica's receive path.
 *
 * The input is a byte stream from a primary (u32 LE length + packed ReplMsg,
 * repeated), fed in chunks whose sizes come from byte 0. Checks:
 *  - repl_next never hands out a message reaching past what was received;
 *  - whenever the Records fast path (repl_parse_records) accepts a message,
 *    protobuf-c unpacks the same bytes to the same Records, and the frames
 *    view lies inside the message. */
#include "replication/repl_int.h"
#include "replication/repl_msg_pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_repl: check failed at line %d: %s\n", __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void
check_msg(const uint8_t *body, uint32_t n)
{
    /* An exact-size copy: ASan sees any read past the message. */
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, body, n);
    struct repl_records rec;
    if (repl_parse_records(p, n, &rec)) {
        ReplMsg *m = repl_msg__unpack(NULL, n, p);
        FZ_CHECK(m != NULL);
        FZ_CHECK(m->m_case == REPL_MSG__M_RECORDS);
        FZ_CHECK(m->records->first_lsn == rec.first_lsn);
        FZ_CHECK(m->records->count == rec.count);
        FZ_CHECK(m->records->frames.len == rec.len);
        FZ_CHECK(rec.len == 0 || (rec.frames >= p && rec.frames + rec.len <= p + n));
        FZ_CHECK(rec.len == 0 || memcmp(m->records->frames.data, rec.frames, rec.len) == 0);
        repl_msg_free(m);
    }
    free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    size_t chunk = (size_t)data[0] + 1;
    data++;
    size--;
    check_msg(data, (uint32_t)size); /* the whole input as one message */
    struct buf in;
    buf_init(&in);
    size_t fed = 0;
    for (;;) {
        size_t k = size - fed < chunk ? size - fed : chunk;
        if (k > 0) {
            buf_append(&in, data + fed, k);
        }
        fed += k;
        const uint8_t *body;
        uint32_t n;
        int rc;
        while ((rc = repl_next(&in, &body, &n, 1u << 20)) == 1) {
            FZ_CHECK(body >= (const uint8_t *)in.data + in.off + 4);
            FZ_CHECK(body + n <= (const uint8_t *)in.data + in.len);
            check_msg(body, n);
            repl_consume(&in, n);
        }
        if (rc < 0 || fed == size) {
            break;
        }
    }
    buf_deinit(&in);
    return 0;
}
