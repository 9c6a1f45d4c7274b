/* replication/repl_msg.h: the replication messages (proto/repl.proto) as
 * replication's own structs, and their framing on the link: u32
 * little-endian length, then one packed ReplMsg. The only module that uses
 * protobuf-c's generated types (repl_msg.c); the rest of replication/ sends
 * and receives struct repl_msg. */
#pragma once
#include "base/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Strings and bytes are views: into the sender's memory when sending, into
 * the unpacked message (valid until repl_msg_done) when received; a received
 * string may be NULL or "" when absent. */
struct repl_hello { /* replica -> primary, first frame */
    const char *replica_id, *replid;
    uint32_t shard, nshards, listening_port;
    uint64_t epoch, applied_lsn;
};
struct repl_welcome { /* primary -> replica, first frame */
    const char *replid, *replid2;
    uint64_t epoch;
    uint32_t shard, nshards;
};
struct repl_cont { /* partial resync from from_lsn */
    const char *replid;
    uint64_t epoch, from_lsn;
};
struct repl_full_begin {
    const char *replid;
    uint64_t epoch, lsn, keys_hint;
};
struct repl_bytes {
    const uint8_t *data;
    size_t len;
};
struct repl_full_end {
    uint64_t lsn, keys;
};
/* The Records fast path (repl_records.c): protobuf-c would copy every frames field. */
struct repl_records {
    uint64_t first_lsn;
    uint32_t count;
    const uint8_t *frames; /* points into the packed message */
    size_t len;
};
struct repl_ack {
    uint64_t applied, durable;
};
struct repl_heartbeat {
    uint64_t lsn;
    int64_t now_ms;
};

enum repl_msg_kind {
    RM_OTHER, /* none, or one this side ignores */
    RM_HELLO,
    RM_WELCOME,
    RM_CONT,
    RM_FULL_BEGIN,
    RM_FULL_CHUNK,
    RM_FULL_END,
    RM_RECORDS,
    RM_ACK,
    RM_HEARTBEAT,
    RM_ERROR,
    RM_PROMOTE,
    RM_GET_ACK,
};
struct repl_msg {
    enum repl_msg_kind kind;
    union {
        struct repl_hello hello;
        struct repl_welcome welcome;
        struct repl_cont cont;
        struct repl_full_begin full_begin;
        struct repl_bytes full_chunk; /* snapshot record frames */
        struct repl_full_end full_end;
        struct repl_records records;
        struct repl_ack ack;
        struct repl_heartbeat heartbeat;
        const char *error; /* primary -> replica, then close */
        uint64_t promote;  /* FAILOVER: take over at this LSN */
    } u;
    void *owner; /* received: the unpacked message the views point into */
};

/* Append one framed message to out. */
void repl_msg_put(struct buf *out, const struct repl_msg *m);
/* The packed ReplMsg [p, p + n) into *m: true (release with repl_msg_done),
 * false when malformed. */
bool repl_msg_decode(const uint8_t *p, size_t n, struct repl_msg *m);
/* The next message in `in` (consumed): 1 (release with repl_msg_done), 0
 * need more, -1 bad or over max. */
int repl_msg_recv(struct buf *in, struct repl_msg *m, uint32_t max);
void repl_msg_done(struct repl_msg *m);
