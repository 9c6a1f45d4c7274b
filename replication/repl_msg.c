/* replication/repl_msg.c: struct repl_msg <-> protobuf-c's ReplMsg
 * (proto/repl.proto), framed as repl_msg.h says. */
#include "replication/repl_int.h"
#include "replication/repl_msg_pb.h"

#include <string.h>

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
repl_msg_free(ReplMsg *m)
{
    repl_msg__free_unpacked(m, NULL);
}

/* protobuf-c's message fields are not const; packing only reads them. */
#define RW(s) ((char *)(s))

void
repl_msg_put(struct buf *out, const struct repl_msg *m)
{
    ReplMsg pm = REPL_MSG__INIT;
    Hello h = HELLO__INIT;
    Welcome w = WELCOME__INIT;
    Continue c = CONTINUE__INIT;
    FullSyncBegin fb = FULL_SYNC_BEGIN__INIT;
    FullSyncChunk fc = FULL_SYNC_CHUNK__INIT;
    FullSyncEnd fe = FULL_SYNC_END__INIT;
    Records rc = RECORDS__INIT;
    Ack a = ACK__INIT;
    Heartbeat hb = HEARTBEAT__INIT;
    Error e = ERROR__INIT;
    Promote pr = PROMOTE__INIT;
    GetAck g = GET_ACK__INIT;
    switch (m->kind) {
    case RM_HELLO:
        h.replica_id = RW(m->u.hello.replica_id);
        h.shard = m->u.hello.shard;
        h.nshards = m->u.hello.nshards;
        h.replid = RW(m->u.hello.replid);
        h.epoch = m->u.hello.epoch;
        h.applied_lsn = m->u.hello.applied_lsn;
        h.listening_port = m->u.hello.listening_port;
        pm.m_case = REPL_MSG__M_HELLO;
        pm.hello = &h;
        break;
    case RM_WELCOME:
        w.replid = RW(m->u.welcome.replid);
        w.epoch = m->u.welcome.epoch;
        w.replid2 = RW(m->u.welcome.replid2);
        w.shard = m->u.welcome.shard;
        w.nshards = m->u.welcome.nshards;
        pm.m_case = REPL_MSG__M_WELCOME;
        pm.welcome = &w;
        break;
    case RM_CONT:
        c.replid = RW(m->u.cont.replid);
        c.epoch = m->u.cont.epoch;
        c.from_lsn = m->u.cont.from_lsn;
        pm.m_case = REPL_MSG__M_CONT;
        pm.cont = &c;
        break;
    case RM_FULL_BEGIN:
        fb.replid = RW(m->u.full_begin.replid);
        fb.epoch = m->u.full_begin.epoch;
        fb.lsn = m->u.full_begin.lsn;
        fb.keys_hint = m->u.full_begin.keys_hint;
        pm.m_case = REPL_MSG__M_FULL_BEGIN;
        pm.full_begin = &fb;
        break;
    case RM_FULL_CHUNK:
        fc.frames.data = (uint8_t *)m->u.full_chunk.data;
        fc.frames.len = m->u.full_chunk.len;
        pm.m_case = REPL_MSG__M_FULL_CHUNK;
        pm.full_chunk = &fc;
        break;
    case RM_FULL_END:
        fe.lsn = m->u.full_end.lsn;
        fe.keys = m->u.full_end.keys;
        pm.m_case = REPL_MSG__M_FULL_END;
        pm.full_end = &fe;
        break;
    case RM_RECORDS:
        rc.first_lsn = m->u.records.first_lsn;
        rc.count = m->u.records.count;
        rc.frames.data = (uint8_t *)m->u.records.frames;
        rc.frames.len = m->u.records.len;
        pm.m_case = REPL_MSG__M_RECORDS;
        pm.records = &rc;
        break;
    case RM_ACK:
        a.applied = m->u.ack.applied;
        a.durable = m->u.ack.durable;
        pm.m_case = REPL_MSG__M_ACK;
        pm.ack = &a;
        break;
    case RM_HEARTBEAT:
        hb.lsn = m->u.heartbeat.lsn;
        hb.now_ms = m->u.heartbeat.now_ms;
        pm.m_case = REPL_MSG__M_HEARTBEAT;
        pm.heartbeat = &hb;
        break;
    case RM_ERROR:
        e.text = RW(m->u.error);
        pm.m_case = REPL_MSG__M_ERROR;
        pm.error = &e;
        break;
    case RM_PROMOTE:
        pr.lsn = m->u.promote;
        pm.m_case = REPL_MSG__M_PROMOTE;
        pm.promote = &pr;
        break;
    case RM_GET_ACK:
        pm.m_case = REPL_MSG__M_GET_ACK;
        pm.get_ack = &g;
        break;
    case RM_OTHER: break;
    }
    repl_send(out, &pm);
}

bool
repl_msg_decode(const uint8_t *p, size_t n, struct repl_msg *m)
{
    ReplMsg *pm = repl_msg__unpack(NULL, n, p);
    memset(m, 0, sizeof(*m));
    if (pm == NULL) {
        return false;
    }
    m->owner = pm;
    switch (pm->m_case) {
    case REPL_MSG__M_HELLO:
        m->kind = RM_HELLO;
        m->u.hello = (struct repl_hello){ pm->hello->replica_id,     pm->hello->replid,
                                          pm->hello->shard,          pm->hello->nshards,
                                          pm->hello->listening_port, pm->hello->epoch,
                                          pm->hello->applied_lsn };
        break;
    case REPL_MSG__M_WELCOME:
        m->kind = RM_WELCOME;
        m->u.welcome = (struct repl_welcome){ pm->welcome->replid, pm->welcome->replid2,
                                              pm->welcome->epoch, pm->welcome->shard,
                                              pm->welcome->nshards };
        break;
    case REPL_MSG__M_CONT:
        m->kind = RM_CONT;
        m->u.cont = (struct repl_cont){ pm->cont->replid, pm->cont->epoch, pm->cont->from_lsn };
        break;
    case REPL_MSG__M_FULL_BEGIN:
        m->kind = RM_FULL_BEGIN;
        m->u.full_begin = (struct repl_full_begin){ pm->full_begin->replid, pm->full_begin->epoch,
                                                    pm->full_begin->lsn,
                                                    pm->full_begin->keys_hint };
        break;
    case REPL_MSG__M_FULL_CHUNK:
        m->kind = RM_FULL_CHUNK;
        m->u.full_chunk = (struct repl_bytes){ pm->full_chunk->frames.data,
                                               pm->full_chunk->frames.len };
        break;
    case REPL_MSG__M_FULL_END:
        m->kind = RM_FULL_END;
        m->u.full_end = (struct repl_full_end){ pm->full_end->lsn, pm->full_end->keys };
        break;
    case REPL_MSG__M_RECORDS:
        m->kind = RM_RECORDS;
        m->u.records = (struct repl_records){ pm->records->first_lsn, pm->records->count,
                                              pm->records->frames.data, pm->records->frames.len };
        break;
    case REPL_MSG__M_ACK:
        m->kind = RM_ACK;
        m->u.ack = (struct repl_ack){ pm->ack->applied, pm->ack->durable };
        break;
    case REPL_MSG__M_HEARTBEAT:
        m->kind = RM_HEARTBEAT;
        m->u.heartbeat = (struct repl_heartbeat){ pm->heartbeat->lsn, pm->heartbeat->now_ms };
        break;
    case REPL_MSG__M_ERROR:
        m->kind = RM_ERROR;
        m->u.error = pm->error->text;
        break;
    case REPL_MSG__M_PROMOTE:
        m->kind = RM_PROMOTE;
        m->u.promote = pm->promote->lsn;
        break;
    case REPL_MSG__M_GET_ACK: m->kind = RM_GET_ACK; break;
    default: m->kind = RM_OTHER; break;
    }
    return true;
}

int
repl_msg_recv(struct buf *in, struct repl_msg *m, uint32_t max)
{
    const uint8_t *body;
    uint32_t n;
    int rc = repl_next(in, &body, &n, max);
    if (rc != 1) {
        return rc;
    }
    bool ok = repl_msg_decode(body, n, m);
    repl_consume(in, n);
    return ok ? 1 : -1;
}

void
repl_msg_done(struct repl_msg *m)
{
    if (m->owner != NULL) {
        repl_msg__free_unpacked(m->owner, NULL);
        m->owner = NULL;
    }
}
