/* replication/repl_primary.c: the primary side: replicas that connected with
 * RVSYNC, partial or full resync, shipping records, acks and heartbeats. */
#include "replication/repl_int.h"

#include "base/tls.h"
#include "base/netaddr.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "wal/wal.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>


static void on_link_read(evutil_socket_t fd, short what, void *arg);
static void on_link_write(evutil_socket_t fd, short what, void *arg);
static void ship_range(struct link *l);

/* A replica whose link closed is remembered with its last ack, so that a
 * checkpoint keeps the WAL it needs to come back with a partial resync
 * (repl_retain_lsn). The oldest of REPL_GONE_MAX is replaced. */
static void
gone_remember(struct repl *r, const char *id, uint64_t ack)
{
    size_t k = 0;
    for (size_t i = 0; i < REPL_GONE_MAX; i++) {
        if (strcmp(r->gone[i].id, id) == 0) {
            k = i;
            break;
        }
        if (r->gone[i].at_ms < r->gone[k].at_ms) {
            k = i; /* the oldest, or a free one (at_ms 0) */
        }
    }
    snprintf(r->gone[k].id, sizeof(r->gone[k].id), "%s", id);
    r->gone[k].ack = ack;
    r->gone[k].at_ms = repl_now(r);
}

static void
gone_forget(struct repl *r, const char *id)
{
    for (size_t i = 0; i < REPL_GONE_MAX; i++) {
        if (strcmp(r->gone[i].id, id) == 0) {
            memset(&r->gone[i], 0, sizeof(r->gone[i]));
        }
    }
}

static void
link_close(struct link *l, const char *why)
{
    struct repl *r = l->r;
    for (struct link **pp = &r->links; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    r->nlinks--;
    if (l->st == LINK_ONLINE && l->id[0]) {
        gone_remember(r, l->id, l->ack);
    }
    if (why) {
        log_notice("[shard %u] replica %s:%d: connection closed: %s", r->hi.shard, l->ip, l->port,
                   why);
    }
    event_del(&l->rev);
    event_del(&l->wev);
    tls_free(l->tls);
    close(l->fd);
    buf_deinit(&l->in);
    buf_deinit(&l->out);
    rv_free(l);
}

/* client-output-buffer-limit replica <hard> <soft> <secs> (Redis semantics):
 * unsent output over hard, or over soft for secs, closes the link. */
static bool
link_over_limit(struct link *l, int64_t now)
{
    if (l->st != LINK_ONLINE) {
        return false; /* a full sync's snapshot is paced by the walk (OUT_PAUSE) */
    }
    const struct repl_cfg *cfg = repl_cfg(l->r);
    int64_t hard = cfg->obl_hard, soft = cfg->obl_soft;
    uint64_t pending = buf_unread(&l->out);
    if (l->snap_end > l->out_done) {
        /* As in Redis, the snapshot itself is not the replica's output buffer:
         * only what follows it counts. */
        uint64_t snap = l->snap_end - l->out_done;
        pending -= snap < pending ? snap : pending;
    }
    if (hard > 0 && pending > (uint64_t)hard) {
        return true;
    }
    if (soft <= 0 || pending <= (uint64_t)soft) {
        l->obl_soft_since_ms = 0;
        return false;
    }
    if (l->obl_soft_since_ms == 0) {
        l->obl_soft_since_ms = now;
        return false;
    }
    return now - l->obl_soft_since_ms >= cfg->obl_secs * 1000;
}

static void
link_schedule_close(struct link *l)
{
    if (l->close_asap) {
        return;
    }
    l->close_asap = true;
    l->r->ops->count_obl_close(l->r->host);
    log_warn(
        "[shard %u] replica %s:%d: client scheduled to be closed ASAP for overcoming of output "
        "buffer limits (%zu bytes unsent; client-output-buffer-limit replica)",
        l->r->hi.shard, l->ip, l->port, (size_t)buf_unread(&l->out));
}

/* false when the link was closed. */
static bool
link_flush(struct link *l)
{
    bool blocked;
    uint64_t before = buf_unread(&l->out);
    if (repl_write(l->fd, l->tls, &l->out, &blocked) < 0) {
        link_close(l, "write error");
        return false;
    }
    l->out_done += before - buf_unread(&l->out);
    if (blocked && !l->wev_on) {
        event_add(&l->wev, NULL);
        l->wev_on = true;
    } else if (!blocked && l->wev_on) {
        event_del(&l->wev);
        l->wev_on = false;
    }
    if (l->close_asap || link_over_limit(l, repl_now(l->r))) {
        link_schedule_close(l);
        link_close(l, "output buffer past client-output-buffer-limit replica (too slow)");
        return false;
    }
    return true;
}

void
primary_flush_link(struct link *l)
{
    link_flush(l);
}

void
repl_accept(struct repl *r, int fd, struct tls *tls, const struct repl_client_info *c,
            struct buf *pre)
{
    struct link *l = rv_calloc(1, sizeof(*l));
    l->r = r;
    l->fd = fd;
    l->tls = tls;
    l->cid = c->id;
    snprintf(l->addr, sizeof(l->addr), "%s", c->addr);
    snprintf(l->laddr, sizeof(l->laddr), "%s", c->laddr);
    snprintf(l->user, sizeof(l->user), "%s", c->user);
    l->ctime_ms = c->ctime_ms;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    char a[80];
    memset(&peer, 0, sizeof(peer));
    getpeername(fd, (struct sockaddr *)&peer, &plen);
    netaddr_format(&peer, a, sizeof(a), l->ip, sizeof(l->ip)); /* slaveN:ip= */
    buf_init(&l->in);
    l->out = *pre; /* the client's replies before RVSYNC go first */
    buf_init(pre);
    l->st = LINK_HELLO;
    l->last_io_ms = l->last_ack_ms = repl_now(r);
    event_assign(&l->rev, r->ops->base(r->host), fd, EV_READ | EV_PERSIST, on_link_read, l);
    event_assign(&l->wev, r->ops->base(r->host), fd, EV_WRITE | EV_PERSIST, on_link_write, l);
    event_add(&l->rev, NULL);
    l->next = r->links;
    r->links = l;
    r->nlinks++;
    struct repl_msg m = { .kind = RM_WELCOME };
    m.u.welcome = (struct repl_welcome){ .replid = r->replid,
                                         .epoch = r->epoch,
                                         .replid2 = r->second_off > 0 ? r->replid2 : "",
                                         .shard = r->hi.shard,
                                         .nshards = r->hi.nshards };
    repl_msg_put(&l->out, &m);
    link_flush(l);
}

static void
send_error(struct link *l, const char *text)
{
    struct repl_msg m = { .kind = RM_ERROR, .u.error = text };
    repl_msg_put(&l->out, &m);
    link_flush(l);
}

/* ---- full sync: a consistent snapshot at LSN L walked while serving ----
 *
 * The same no-fork scheme as checkpoints (snap.c): the keyspace is walked in
 * slices of about 1 ms in hash order; before a write changes a key the walk
 * has not reached, the key's value (still its value at L) is sent first and
 * the key remembered so the walk skips it. Each key goes out as one record of
 * rebuild commands (DEL, then SET or the type's commands, then PEXPIREAT),
 * in FullSyncChunk messages to every replica attached to the walk. Records
 * after L wait in the backlog and follow FullSyncEnd. One walk at a time per
 * shard: replicas that arrive meanwhile get the next one. */

#define SLICE_US 1000
#define CHUNK_SEND (256u << 10)
#define OUT_PAUSE (16u << 20) /* slices wait while a replica has this much unsent */

struct rsnap {
    uint64_t lsn;
    void *snap; /* the host's snapshot iterator */
    bool scan_done;
    struct event *ev;
    struct buf chunk;
    uint64_t keys;
    int64_t t0_ms;
};

static void walk_start(struct repl *r);

struct emit_ctx {
    struct repl *r;
    unsigned db; /* the key's database: each of its records selects it (replay starts in 0) */
    size_t mark; /* the record's header in the chunk */
    size_t pay;  /* where the record's payload starts */
    int64_t now;
};

static void send_chunk(struct repl *r);

/* Seal the record being built at x->mark (a full sync's records carry LSN 0). */
static void
seal_rec(struct emit_ctx *x)
{
    struct buf *b = &x->r->walk->chunk;
    wal_frame_seal((uint8_t *)b->data + x->mark, b->len - x->mark - WAL_REC_HDR, 0, x->now);
}

static void
begin_rec(struct emit_ctx *x)
{
    struct buf *b = &x->r->walk->chunk;
    x->mark = b->len;
    buf_reserve(b, WAL_REC_HDR);
    b->len += WAL_REC_HDR;
    x->pay = b->len;
    wal_pay_begin(b, WAL_P_CMDS);
    if (x->db != 0) {
        char num[12];
        int n = snprintf(num, sizeof(num), "%u", x->db);
        struct rv_str sel[2] = { { "SELECT", 6 }, { num, (size_t)n } };
        wal_pay_cmd(b, x->pay, 2, sel);
    }
}

static void
emit_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct emit_ctx *x = arg;
    struct buf *b = &x->r->walk->chunk;
    if (b->len - x->pay >= WAL_SPLIT_REC) {
        /* a long key goes on in another record (the replica appends to it),
         * and the chunk leaves before it grows past CHUNK_SEND again */
        seal_rec(x);
        if (b->len >= CHUNK_SEND) {
            send_chunk(x->r);
        }
        begin_rec(x);
    }
    wal_pay_cmd(b, x->pay, argc, argv);
}

static void
send_chunk(struct repl *r)
{
    struct rsnap *w = r->walk;
    if (w->chunk.len == 0) {
        return;
    }
    struct repl_msg m = { .kind = RM_FULL_CHUNK };
    m.u.full_chunk = (struct repl_bytes){ (const uint8_t *)w->chunk.data, w->chunk.len };
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_FULL) {
            repl_msg_put(&l->out, &m);
        }
    }
    w->chunk.off = w->chunk.len = 0;
}

/* One key's record (several for a long one); skip keys already expired. */
static void
dump_key(struct repl *r, const struct repl_key *k)
{
    struct rsnap *w = r->walk;
    int64_t now = repl_now(r);
    int64_t dl = k->expire_ms;
    if (dl != REPL_NO_EXPIRE && dl <= now) {
        return;
    }
    struct emit_ctx x = { .r = r, .db = k->db, .now = now };
    begin_rec(&x);
    struct rv_str del[2] = { { "DEL", 3 }, k->key };
    wal_pay_cmd(&w->chunk, x.pay, 2, del);
    r->ops->rebuild(r->host, k->entry, emit_cmd, &x);
    seal_rec(&x);
    w->keys++;
}

static void
walk_cb(void *arg, const struct repl_key *k)
{
    dump_key(arg, k);
}

/* Before a write changes key: a key the walk has not reached goes first,
 * with its value at L. */
void
repl_touch(struct repl *r, const char *key, size_t len)
{
    struct rsnap *w = r->walk;
    if (w == NULL || w->scan_done) {
        return;
    }
    r->ops->snap_touch(r->host, w->snap, key, len);
    if (w->chunk.len >= CHUNK_SEND) {
        send_chunk(r);
    }
}

static void
walk_free(struct repl *r)
{
    struct rsnap *w = r->walk;
    if (w == NULL) {
        return;
    }
    r->walk = NULL;
    r->ops->set_cow(r->host, false);
    if (w->ev) {
        event_free(w->ev);
    }
    r->ops->snap_end(r->host, w->snap);
    buf_deinit(&w->chunk);
    rv_free(w);
}

static void
walk_end(struct repl *r)
{
    struct rsnap *w = r->walk;
    send_chunk(r);
    struct repl_msg m = { .kind = RM_FULL_END };
    m.u.full_end = (struct repl_full_end){ w->lsn, w->keys };
    uint64_t pos;
    bool have = bl_find(&r->bl, w->lsn + 1, &pos);
    int64_t took = repl_now(r) - w->t0_ms;
    uint64_t keys = w->keys, lsn = w->lsn;
    walk_free(r);
    for (struct link *l = r->links, *n; l; l = n) {
        n = l->next;
        if (l->st != LINK_FULL) {
            continue;
        }
        if (!have) {
            link_close(l, "the backlog lost records written during the full sync: raise "
                          "repl-backlog-size");
            continue;
        }
        repl_msg_put(&l->out, &m);
        l->snap_end = l->out_done + buf_unread(&l->out);
        l->sent_pos = pos;
        l->sent_lsn = lsn + 1;
        l->st = LINK_ONLINE;
        l->last_ack_ms = repl_now(r);
        log_notice("[shard %u] replica %s:%d: full sync of %" PRIu64 " keys at LSN %" PRIu64
                   " sent in %" PRId64 " ms",
                   r->hi.shard, l->ip, l->port, keys, lsn, took);
    }
    primary_ship(r);
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_FULL_WAIT) {
            walk_start(r);
            break;
        }
    }
}

static bool
walk_outputs_full(struct repl *r)
{
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_FULL && buf_unread(&l->out) > OUT_PAUSE) {
            return true;
        }
    }
    return false;
}

static void
on_slice(evutil_socket_t fd, short what, void *arg)
{
    struct repl *r = arg;
    struct rsnap *w = r->walk;
    (void)fd;
    (void)what;
    if (w == NULL) {
        return;
    }
    bool any = false;
    for (struct link *l = r->links; l; l = l->next) {
        any |= l->st == LINK_FULL;
    }
    if (!any) {
        walk_free(r); /* every replica of this walk went away */
        return;
    }
    struct timeval tv = { 0, 0 };
    if (walk_outputs_full(r)) {
        tv.tv_usec = 1000; /* the network is behind: wait for it */
        evtimer_add(w->ev, &tv);
        return;
    }
    r->ops->refresh_clock(r->host);
    uint64_t t0 = clock_mono_us();
    do {
        w->scan_done = r->ops->snap_next(r->host, w->snap, 64);
        if (w->chunk.len >= CHUNK_SEND) {
            send_chunk(r);
        }
    } while (!w->scan_done && clock_mono_us() - t0 < SLICE_US);
    send_chunk(r);
    for (struct link *l = r->links, *n; l; l = n) {
        n = l->next;
        if (l->st == LINK_FULL) {
            link_flush(l);
        }
    }
    if (w->scan_done) {
        walk_end(r);
        return;
    }
    evtimer_add(w->ev, &tv);
}

static void
walk_start(struct repl *r)
{
    if (r->walk != NULL) {
        return;
    }
    struct rsnap *w = rv_calloc(1, sizeof(*w));
    w->lsn = repl_last_lsn(r);
    w->snap = r->ops->snap_begin(r->host, walk_cb, r);
    w->t0_ms = repl_now(r);
    buf_init(&w->chunk);
    w->ev = evtimer_new(r->ops->base(r->host), on_slice, r);
    r->walk = w;
    r->ops->set_cow(r->host, true);
    struct repl_msg m = { .kind = RM_FULL_BEGIN };
    m.u.full_begin = (struct repl_full_begin){ r->replid, r->epoch, w->lsn, r->ops->keys(r->host) };
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_FULL_WAIT || l->st == LINK_FULL) {
            l->st = LINK_FULL;
            repl_msg_put(&l->out, &m);
        }
    }
    if (r->ops->state != NULL) { /* (a record of its own, before the first chunk's keys) */
        struct emit_ctx x = { .r = r, .now = repl_now(r) };
        begin_rec(&x);
        r->ops->state(r->host, emit_cmd, &x);
        seal_rec(&x);
    }
    struct timeval tv = { 0, 0 };
    evtimer_add(w->ev, &tv);
}

void
repl_all_changed(struct repl *r)
{
    /* A keyless write (FLUSHALL): the walk starts over at a new L; the
     * replicas reset their snapshot on the new FullSyncBegin. */
    if (r->walk == NULL || r->walk->scan_done) {
        return;
    }
    walk_free(r);
    walk_start(r);
}

static void
full_sync(struct link *l)
{
    struct repl *r = l->r;
    l->st = LINK_FULL_WAIT;
    l->ack = 0;
    if (r->walk == NULL) {
        walk_start(r);
    }
}

/* Durable modes: records older than the backlog are read back from the WAL
 * segments (one synchronous read, at most WAL_CATCHUP_MAX bytes; past that a
 * full sync is cheaper to the shard's other clients). Queues Continue and the
 * records [from, backlog start) and returns true, or false (nothing queued). */
#define WAL_CATCHUP_MAX (64u << 20)

static bool
continue_from_wal(struct link *l, uint64_t from, struct buf *frames, uint32_t *count)
{
    struct repl *r = l->r;
    struct wal *wal = repl_wal(r);
    uint64_t upto = r->bl.first_lsn; /* exclusive: the backlog has the rest */
    if (wal == NULL || from >= upto || wal_written_lsn(wal) + 1 < upto) {
        return false;
    }
    struct wal_file *segs = NULL, *cks = NULL;
    size_t ns = 0, nc = 0;
    if (wal_list(r->hi.dir, &segs, &ns, &cks, &nc) != 0) {
        return false;
    }
    struct wal_walk k;
    struct wal_rec rec;
    uint64_t next = from;
    bool ok = true;
    wal_walk_init(&k, segs, ns, from - 1);
    wal_walk_live(&k, wal); /* never map what the syncer may cut */
    while (next < upto && wal_walk_next(&k, &rec) == WAL_RD_OK) {
        if (rec.lsn < next) {
            continue;
        }
        if (rec.lsn != next || frames->len + WAL_REC_HDR + rec.len > WAL_CATCHUP_MAX) {
            ok = false;
            break;
        }
        wal_frame_copy(frames, &rec); /* (without the file's sync barrier) */
        next++;
    }
    wal_walk_close(&k);
    rv_free(segs);
    rv_free(cks);
    *count = (uint32_t)(next - from);
    return ok && next == upto;
}

uint64_t
repl_retain_lsn(struct repl *r, uint64_t lsn)
{
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_ONLINE && l->ack < lsn) {
            lsn = l->ack;
        }
    }
    /* A replica gone for at most repl-backlog-ttl seconds keeps its records
     * too, while they are few enough for continue_from_wal to send (its
     * catch-up plus the backlog plus the segment it starts in); past either
     * bound it is forgotten and full-syncs when it comes back. */
    const struct repl_cfg *cfg = repl_cfg(r);
    struct wal *wal = repl_wal(r);
    int64_t now = repl_now(r);
    uint64_t most = WAL_CATCHUP_MAX + (uint64_t)cfg->repl_backlog_size +
                    (uint64_t)cfg->wal_segment_bytes;
    for (size_t i = 0; i < REPL_GONE_MAX; i++) {
        if (r->gone[i].id[0] == '\0' || r->gone[i].ack >= lsn) {
            continue;
        }
        if (now - r->gone[i].at_ms > cfg->repl_backlog_ttl * 1000 || wal == NULL ||
            wal_bytes_from(wal, r->gone[i].ack + 1) > most) {
            memset(&r->gone[i], 0, sizeof(r->gone[i]));
            continue;
        }
        lsn = r->gone[i].ack;
    }
    if (r->walk && r->walk->lsn < lsn) {
        lsn = r->walk->lsn;
    }
    return lsn;
}

/* A replica's hello: authenticate, check its shard layout and history, and
 * answer with a partial resync or a full sync. One decision read top to
 * bottom, hence one function a little over 100 lines. */
static void
on_hello(struct link *l, const struct repl_hello *h)
{
    struct repl *r = l->r;
    unsigned ns = r->hi.nshards;
    snprintf(l->id, sizeof(l->id), "%s", h->replica_id ? h->replica_id : "");
    gone_forget(r, l->id); /* back: its link's ack counts from now on */
    l->port = (int)h->listening_port;
    if (h->nshards != 0 && (h->nshards != ns || h->shard != r->hi.shard)) {
        /* (nshards 0: a cluster node following this node, whatever the layouts) */
        char e[200];
        snprintf(e, sizeof(e),
                 "shard count mismatch: the primary has %u shards, the replica %u "
                 "(each replica shard follows the primary shard with the same number)",
                 ns, h->nshards);
        log_warn("[shard %u] replica %s:%d refused: %s", r->hi.shard, l->ip, l->port, e);
        send_error(l, e);
        link_close(l, NULL);
        return;
    }
    failover_hello(r, l->ip, h);
    if (repl_newer(h->epoch, h->replid ? h->replid : "", r->epoch, r->replid) &&
        !repl_in_lineage(r, h->replid)) {
        /* Fencing: a replica knows a newer history, so a newer primary was
         * promoted; this one must not take writes for its old epoch. */
        char e[200], who[100];
        snprintf(e, sizeof(e),
                 "stale primary: the replica knows epoch %" PRIu64 ", this node is at "
                 "epoch %" PRIu64,
                 h->epoch, r->epoch);
        snprintf(who, sizeof(who), "replica %s:%d", l->ip, l->port);
        repl_fence(r, h->epoch, who);
        send_error(l, e);
        link_close(l, NULL);
        return;
    }
    repl_backlog_start(r);
    uint64_t last = repl_last_lsn(r);
    uint64_t from = h->applied_lsn + 1, pos;
    const char *id = h->replid ? h->replid : "";
    bool same = strcmp(id, r->replid) == 0 && h->applied_lsn <= last;
    bool prev = r->second_off > 0 && strcmp(id, r->replid2) == 0 && (int64_t)from <= r->second_off;
    struct buf walrecs;
    uint32_t nwal = 0;
    buf_init(&walrecs);
    bool ok = (same || prev) &&
              (bl_find(&r->bl, from, &pos) || continue_from_wal(l, from, &walrecs, &nwal));
    if (ok) {
        struct repl_msg m = { .kind = RM_CONT };
        m.u.cont = (struct repl_cont){ r->replid, r->epoch, from };
        repl_msg_put(&l->out, &m);
        if (nwal > 0) {
            repl_send_records(&l->out, from, nwal, (const uint8_t *)walrecs.data, walrecs.len);
            log_notice("[shard %u] replica %s:%d: %u records read back from the WAL", r->hi.shard,
                       l->ip, l->port, nwal);
            pos = r->bl.base;
            from = r->bl.first_lsn;
        }
        l->sent_pos = pos;
        l->sent_lsn = from;
        /* Its catch-up (records read back from the WAL, then what the
         * backlog holds now) is like a snapshot: queued now and not counted
         * against client-output-buffer-limit replica (else a catch-up past
         * the hard limit would close the link at every attempt); what is
         * written from here on is. */
        ship_range(l);
        l->snap_end = l->out_done + buf_unread(&l->out);
        l->ack = h->applied_lsn;
        r->sync_partial_ok++;
        log_notice("[shard %u] replica %s:%d: partial resync from LSN %" PRIu64 " (%" PRIu64
                   " records to send)",
                   r->hi.shard, l->ip, l->port, h->applied_lsn + 1, last - h->applied_lsn);
        buf_deinit(&walrecs);
    } else {
        buf_deinit(&walrecs);
        if (*id && strcmp(id, "?") != 0) {
            r->sync_partial_err++;
        }
        if (strcmp(id, r->replid) == 0 && h->applied_lsn > last) {
            /* Ahead of us on our own history: records this primary sent or
             * had, then lost (a crash of a node that restarted with the same
             * replid). The full sync replaces them. */
            r->sync_divergent++;
            log_warn("[shard %u] replica %s:%d has %" PRIu64
                     " records past this primary's last LSN "
                     "%" PRIu64 " on the same history: they are dropped by a full sync",
                     r->hi.shard, l->ip, l->port, h->applied_lsn - last, last);
        }
        if (r->second_off > 0 && strcmp(id, r->replid2) == 0 && (int64_t)from > r->second_off) {
            /* An old primary (or a replica ahead of us) wrote past the fork
             * point: the full sync replaces those records. */
            r->sync_divergent++;
            log_warn("[shard %u] replica %s:%d has %" PRIu64
                     " records past the fork point (LSNs %" PRId64 "..%" PRIu64
                     ") that this primary never had: they are dropped by a full "
                     "sync",
                     r->hi.shard, l->ip, l->port, h->applied_lsn + 1 - (uint64_t)r->second_off,
                     r->second_off, h->applied_lsn);
        }
        r->sync_full++;
        full_sync(l);
        return;
    }
    l->st = LINK_ONLINE;
    l->last_ack_ms = repl_now(r);
    /* ship what the backlog has past the start now */
    primary_ship(r);
}

static __attribute__((noinline, cold)) void
ack_refused(struct link *l, const struct repl_ack *a)
{
    char why[200];
    snprintf(why, sizeof(why),
             "ack for LSN %" PRIu64 " (durable %" PRIu64 ") past the last record "
             "sent (%" PRIu64 "): refused",
             a->applied, a->durable, l->sent_lsn ? l->sent_lsn - 1 : 0);
    log_warn("[shard %u] replica %s:%d: connection closed: %s", l->r->hi.shard, l->ip, l->port,
             why);
    link_close(l, NULL);
}

static void
on_link_read(evutil_socket_t fd, short what, void *arg)
{
    struct link *l = arg;
    struct repl *r = l->r;
    (void)fd;
    (void)what;
    int n = repl_read(l->fd, l->tls, &l->in);
    if (n < 0) {
        link_close(l, "connection lost");
        return;
    }
    int64_t now = r->ops->refresh_clock(r->host);
    l->last_io_ms = now;
    struct repl_msg m;
    int rc;
    bool acked = false;
    while ((rc = repl_msg_recv(&l->in, &m, REPL_MAX_FROM_REPLICA)) == 1) {
        const struct repl_ack *a = &m.u.ack;
        switch (m.kind) {
        case RM_HELLO:
            if (l->st == LINK_HELLO) {
                on_hello(l, &m.u.hello);
                repl_msg_done(&m);
                return; /* l may be gone; more input comes with the next read */
            }
            break;
        case RM_ACK:
            /* An ack past the last record sent would trim the WAL and
             * satisfy WAIT for records the replica never got: the peer is
             * broken (or not what it claims), so the link goes. */
            if (rv_unlikely(a->applied >= l->sent_lsn || a->durable >= l->sent_lsn) &&
                (a->applied | a->durable) != 0) {
                ack_refused(l, a);
                repl_msg_done(&m);
                return;
            }
            if (a->applied > l->ack) {
                l->ack = a->applied;
            }
            l->durable = a->durable;
            l->last_ack_ms = now;
            acked = true;
            break;
        default: break;
        }
        repl_msg_done(&m);
    }
    if (rc < 0) {
        link_close(l, "malformed frame");
        return;
    }
    if (acked && r->hot.sync) {
        primary_sync_update(r); /* persist_before_poll releases what it covers */
    }
    if (acked && r->waiters) {
        primary_check_waiters(r, now);
    }
    if (acked && r->fo.st == FO_WAIT) {
        failover_check(r, now);
    }
}

static void
on_link_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    link_flush(arg);
}

#define SHIP_NOW_BYTES (256u << 10) /* this much waiting ships without waiting for the delay */
#define SHIP_IOV 16                 /* backlog blocks per writev */

/* Queue l's records up to the backlog's end in l->out: one Records message
 * per backlog block (a block holds whole records, and a message is at most
 * one block, or one jumbo record). */
static void
ship_range(struct link *l)
{
    struct repl *r = l->r;
    const struct bl_block *b = bl_block_at(&r->bl, l->sent_pos);
    for (; b != NULL; b = b->next) {
        size_t off = (size_t)(l->sent_pos - b->pos);
        uint64_t next = bl_block_next_lsn(&r->bl, b);
        repl_send_records(&l->out, l->sent_lsn, (uint32_t)(next - l->sent_lsn), b->data + off,
                          b->len - off);
        l->sent_pos = b->pos + b->len;
        l->sent_lsn = next;
    }
}

/* Ship everything l has not got. With nothing else queued, the records go to
 * the socket from where they lie in the backlog (writev of each message's
 * header and the block's bytes: no copy); what the kernel does not take is
 * queued in l->out. false when the link was closed. */
static bool
ship_link(struct link *l)
{
    struct repl *r = l->r;
    while (l->sent_pos < bl_end(&r->bl) && buf_unread(&l->out) == 0 && !l->wev_on) {
        uint8_t h[SHIP_IOV][REPL_RECORDS_HDR_MAX];
        struct iovec iov[2 * SHIP_IOV];
        int k = 0;
        size_t total = 0;
        uint64_t pos = l->sent_pos, lsn = l->sent_lsn;
        for (const struct bl_block *b = bl_block_at(&r->bl, pos); b && k < SHIP_IOV;
             b = b->next, k++) {
            size_t off = (size_t)(pos - b->pos), n = b->len - off;
            uint64_t next = bl_block_next_lsn(&r->bl, b);
            size_t hl = repl_records_hdr(h[k], lsn, (uint32_t)(next - lsn), n);
            iov[2 * k] = (struct iovec){ h[k], hl };
            iov[2 * k + 1] = (struct iovec){ (void *)(b->data + off), n };
            total += hl + n;
            pos = b->pos + b->len;
            lsn = next;
        }
        ssize_t w = writev(l->fd, iov, 2 * k);
        if (w < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                link_close(l, "write error");
                return false;
            }
            w = 0;
        }
        l->out_done += (uint64_t)w;
        l->sent_pos = pos;
        l->sent_lsn = lsn;
        if ((size_t)w < total) { /* the kernel's buffer is full: queue the rest */
            size_t skip = (size_t)w;
            for (int i = 0; i < 2 * k; i++) {
                if (skip >= iov[i].iov_len) {
                    skip -= iov[i].iov_len;
                    continue;
                }
                buf_append(&l->out, (const char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
                skip = 0;
            }
        }
    }
    if (l->sent_pos < bl_end(&r->bl)) {
        ship_range(l);
    }
    if (buf_unread(&l->out) == 0) {
        return true;
    }
    if (l->wev_on) { /* the write event sends it; only the limits apply now */
        if (link_over_limit(l, repl_now(r))) {
            link_schedule_close(l);
        }
        return true;
    }
    return link_flush(l);
}

void
primary_save_unsent(struct repl *r, uint64_t upto)
{
    /* bl_trim is about to drop the blocks below upto: every link still
     * positioned there gets all it has pending queued now (bounded by
     * client-output-buffer-limit replica). */
    int64_t now = repl_now(r);
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st != LINK_ONLINE || l->close_asap || l->sent_pos >= upto ||
            l->sent_pos < r->bl.base) {
            continue;
        }
        ship_range(l);
        if (link_over_limit(l, now)) {
            link_schedule_close(l); /* closed by primary_ship, outside the command */
        }
    }
}

static void
on_ship_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct repl *r = arg;
    r->ship_armed = false;
    primary_ship(r);
}

/* Ship now, or leave it to the timer? Under load one write per link every
 * repl-ship-delay-us carries many records (a write per event-loop iteration
 * costs the primary a syscall and the replica a wake-up each time); a record
 * after a quiet spell, a batch past SHIP_NOW_BYTES, a WAIT or a FAILOVER
 * waiting for acknowledgements, and every batch in synchronous mode (its
 * writers wait for the acks: a delay would only add to their latency) go at
 * once. */
static bool
ship_due(struct repl *r, uint64_t pending)
{
    const struct repl_cfg *cfg = repl_cfg(r);
    int64_t delay = cfg->repl_ship_delay_us;
    uint64_t now = clock_mono_us();
    if (delay <= 0 || r->waiters || r->fo.st != FO_NONE || r->hot.sync ||
        pending >= SHIP_NOW_BYTES || now - r->last_ship_us >= (uint64_t)delay) {
        r->last_ship_us = now;
        return true;
    }
    if (!r->ship_armed) {
        if (!event_initialized(&r->ship_ev)) {
            evtimer_assign(&r->ship_ev, r->ops->base(r->host), on_ship_timer, r);
        }
        uint64_t left = r->last_ship_us + (uint64_t)delay - now;
        struct timeval tv = { (time_t)(left / 1000000), (suseconds_t)(left % 1000000) };
        evtimer_add(&r->ship_ev, &tv);
        r->ship_armed = true;
    }
    return false;
}

/* Replicas ack once per cron tick; a GetAck after the records makes one ack
 * at once, covering them. false when the link was closed. */
static bool
link_ask_ack(struct link *l)
{
    struct repl_msg m = { .kind = RM_GET_ACK };
    repl_msg_put(&l->out, &m);
    return l->wev_on || link_flush(l);
}

void
primary_ship(struct repl *r)
{
    uint64_t end = bl_end(&r->bl);
    uint64_t pending = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_ONLINE && end - l->sent_pos > pending) {
            pending = end - l->sent_pos;
        }
    }
    bool ship = pending > 0 && ship_due(r, pending);
    /* Whoever waits for acks gets one after each ship, and a new waiter one
     * even if its records already left. */
    bool waiting = r->waiters != NULL || r->fo.st == FO_WAIT || r->hot.sync;
    bool ask = r->ask_ack;
    r->ask_ack = false;
    for (struct link *l = r->links, *n; l; l = n) {
        n = l->next;
        if (l->close_asap) {
            link_close(l, "output buffer past client-output-buffer-limit replica (too slow)");
            continue;
        }
        bool shipped = false;
        if (ship && l->st == LINK_ONLINE && l->sent_pos < end) {
            if (l->sent_pos < r->bl.base) {
                link_close(l, "fell out of the backlog");
                continue;
            }
            if (!ship_link(l)) {
                continue;
            }
            shipped = true;
        } else if (buf_unread(&l->out) > 0 && !l->wev_on && !link_flush(l)) {
            continue;
        }
        if (l->st == LINK_ONLINE && (ask || (shipped && waiting))) {
            link_ask_ack(l);
        }
    }
}

void
primary_stop_timer(struct repl *r)
{
    if (event_initialized(&r->ship_ev)) {
        event_del(&r->ship_ev);
    }
    r->ship_armed = false;
}

long
primary_good_replicas(struct repl *r, int64_t now)
{
    const struct repl_cfg *cfg = repl_cfg(r);
    int64_t max_lag = cfg->min_replicas_max_lag * 1000;
    long n = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st == LINK_ONLINE && now - l->last_ack_ms <= max_lag) {
            n++;
        }
    }
    return n;
}

void
primary_sync_update(struct repl *r)
{
    long n = repl_cfg(r)->min_sync_replicas;
    if (n <= 0 || (long)r->nlinks < n) {
        return;
    }
    /* the n-th highest ack of the online links: the greatest LSN that n of
     * them reached (a few links: quadratic is fine) */
    uint64_t best = 0;
    for (struct link *l = r->links; l; l = l->next) {
        if (l->st != LINK_ONLINE || l->ack <= best) {
            continue;
        }
        long reached = 0;
        for (struct link *m = r->links; m; m = m->next) {
            reached += m->st == LINK_ONLINE && m->ack >= l->ack;
        }
        if (reached >= n) {
            best = l->ack;
        }
    }
    if (best > r->hot.sync_lsn) {
        r->hot.sync_lsn = best;
    }
}

void
primary_cron(struct repl *r, int64_t now)
{
    const struct repl_cfg *cfg = repl_cfg(r);
    int64_t timeout = cfg->repl_timeout * 1000;
    bool beat = now - r->last_hb_ms >= 1000;
    if (beat) {
        r->last_hb_ms = now;
    }
    for (struct link *l = r->links, *n; l; l = n) {
        n = l->next;
        if (now - l->last_io_ms > timeout) {
            link_close(l, "timeout (repl-timeout)");
            continue;
        }
        if (beat && l->st == LINK_ONLINE) {
            struct repl_msg m = { .kind = RM_HEARTBEAT };
            m.u.heartbeat = (struct repl_heartbeat){ repl_last_lsn(r), now };
            repl_msg_put(&l->out, &m);
            link_flush(l);
        }
    }
    if (r->waiters) {
        primary_check_waiters(r, now);
    }
    failover_check(r, now);
}

void
primary_drop_all(struct repl *r)
{
    walk_free(r);
    while (r->links) {
        link_close(r->links, "this shard stops being a primary");
    }
    memset(r->gone, 0, sizeof(r->gone)); /* they follow someone else now */
}

/* CLIENT LIST lines of the replicas (Redis: flags=S; the command is our RVSYNC). */
void
primary_client_list(struct repl *r, const int64_t *ids, int nids, struct buf *out)
{
    int64_t now = repl_now(r);
    for (struct link *l = r->links; l; l = l->next) {
        bool want = nids == 0;
        for (int i = 0; i < nids; i++) {
            want |= (uint64_t)ids[i] == l->cid;
        }
        if (!want) {
            continue;
        }
        size_t omem = buf_unread(&l->out);
        buf_appendf(
            out,
            "id=%llu addr=%s laddr=%s fd=%d name= age=%lld idle=%lld flags=S db=0 sub=0 "
            "psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%zu rbp=0 "
            "obl=0 oll=0 omem=%zu tot-mem=%zu events=r%s cmd=rvsync user=%s redir=-1 resp=2 "
            "watch=0 lib-name= lib-ver=\n",
            (unsigned long long)l->cid, l->addr, l->laddr, l->fd,
            (long long)((now - l->ctime_ms) / 1000), (long long)((now - l->last_io_ms) / 1000),
            l->in.cap, omem, sizeof(*l) + l->in.cap + l->out.cap, l->wev_on ? "w" : "", l->user);
    }
}

long
primary_client_kill(struct repl *r, int64_t id, const struct rv_str *addr)
{
    long n = 0;
    for (struct link *l = r->links, *next; l; l = next) {
        next = l->next;
        if ((id > 0 && l->cid != (uint64_t)id) ||
            (addr && (addr->len != strlen(l->addr) || memcmp(addr->p, l->addr, addr->len) != 0))) {
            continue;
        }
        link_close(l, "killed by CLIENT KILL");
        n++;
    }
    return n;
}
