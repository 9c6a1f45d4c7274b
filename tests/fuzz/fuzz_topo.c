/* tests/fuzz/fuzz_topo.c: libFuzzer target for the cluster topology state
 * machine (cluster/topo.h). Its bytes come from disk (the Raft log and
 * snapshots) and from other hosts, so malformed input must be refused.
 *
 * Byte 0 picks the mode: bits 0-1 the start, bit 2 how entries are made.
 *   start 3: the rest is a snapshot (mode A). topo_decode refuses it or returns
 *            a snapshot that re-encodes to the very same bytes (one state, one
 *            encoding), decodes again, and survives the lookups and
 *            CLUSTER NODES text.
 *   start 0: the empty topology; 1: a base cluster (3 primaries, 3 replicas,
 *            a slot migrating) built here with topo_enc_*; 2: a u16 LE length
 *            and a snapshot (decoded; refused snapshots end the input).
 *            The rest is then entries applied in order with topo_apply:
 *     bit 2 clear (mode B): raw entries, each a u16 LE length and the bytes;
 *     bit 2 set: compact ops that pick nodes by index and are encoded here by
 *            topo_enc_* (so mutations reach deep states with valid ids); an
 *            encoder's RV_EINVAL must append nothing, its RV_OK must decode.
 * Each step checks: the result is a topo_res value; refusals leave *next ==
 * cur with an error text, success leaves "" and CHANGED bumps the version;
 * cur's contents are not modified; the new snapshot keeps the invariants (ids
 * findable at their index, replicas of primaries in their shard, owners are
 * primaries, config epochs within the current one). The final snapshot's
 * encoding must decode and re-encode to the same bytes (a Raft snapshot taken
 * of it loads at the next start) and survive the lookups and text. The whole
 * sequence runs twice from the same start: same results, error texts and
 * final snapshot (determinism).
 * Every snapshot is put, so LSan reports any refcount leak. */
#include "base/rv_err.h"
#include "cluster/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_topo: check failed at line %d: %s\n", __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_STEPS 32

/* ---- input reader: reads past the end give zeros ---- */

struct in {
    const uint8_t *p;
    size_t n;
};

static unsigned
get8(struct in *in)
{
    if (in->n == 0) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static unsigned
get16(struct in *in)
{
    unsigned lo = get8(in);
    return lo | (get8(in) << 8);
}

static uint64_t
get64(struct in *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t)get8(in) << (8 * i);
    }
    return v;
}

/* ---- snapshot checks ---- */

/* Not instrumented for coverage: its slot scan, run after every change,
 * would cost more than the code under test and teach the fuzzer nothing. */
__attribute__((no_sanitize("coverage"))) static void
check_invariants(const struct topo *t)
{
    for (uint32_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        FZ_CHECK(strlen(n->id) == TOPO_ID_LEN);
        FZ_CHECK(strlen(n->shard_id) == TOPO_ID_LEN);
        FZ_CHECK(topo_find(t, n->id, TOPO_ID_LEN) == (int)i);
        FZ_CHECK(n->role == TOPO_PRIMARY || n->role == TOPO_REPLICA);
        FZ_CHECK((n->flags & ~TOPO_F_ALL) == 0);
        FZ_CHECK(n->config_epoch <= t->current_epoch);
        if (n->primary != TOPO_NONE) {
            FZ_CHECK(n->role == TOPO_REPLICA && n->primary < t->nnodes);
            FZ_CHECK(t->nodes[n->primary].role == TOPO_PRIMARY);
            FZ_CHECK(memcmp(n->shard_id, t->nodes[n->primary].shard_id, TOPO_ID_LEN) == 0);
        }
    }
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        uint16_t o = t->slots[s];
        FZ_CHECK(o == TOPO_NONE || (o < t->nnodes && t->nodes[o].role == TOPO_PRIMARY));
    }
    for (uint32_t i = 0; i < t->nmigs; i++) {
        const struct topo_mig *m = &t->migs[i];
        FZ_CHECK(m->slot < SLOT_COUNT && (i == 0 || m->slot > t->migs[i - 1].slot));
        FZ_CHECK(topo_slot_mig(t, m->slot) == m);
        FZ_CHECK((m->mig_by == TOPO_NONE) == (m->mig_to == TOPO_NONE));
        FZ_CHECK((m->imp_by == TOPO_NONE) == (m->imp_from == TOPO_NONE));
        FZ_CHECK(m->mig_by != TOPO_NONE || m->imp_by != TOPO_NONE);
        FZ_CHECK(m->mig_by == TOPO_NONE || (m->mig_by < t->nnodes && m->mig_to < t->nnodes));
        FZ_CHECK(m->imp_by == TOPO_NONE || (m->imp_by < t->nnodes && m->imp_from < t->nnodes));
    }
}

/* Lookups and text over every part of t; sel varies myself and the links. */
static void
exercise(const struct topo *t, unsigned sel)
{
    uint16_t out[4];
    (void)topo_shards(t, out, 4);
    (void)topo_primaries(t, out, 4);
    (void)topo_host_nodes(t, sel & 7, out, 4);
    struct buf txt;
    buf_init(&txt);
    const char *myself = NULL;
    if (t->nnodes > 0 && (sel & 1)) {
        myself = t->nodes[(sel >> 1) % t->nnodes].id;
    }
    struct topo_link *links = NULL;
    if (sel & 2) {
        links = calloc(t->nnodes ? t->nnodes : 1, sizeof(*links));
        for (uint32_t i = 0; i < t->nnodes; i++) {
            links[i].ping_sent = i * 1000u + sel;
            links[i].pong_recv = sel;
            links[i].connected = (i + sel) & 1;
        }
    }
    topo_nodes_text(t, myself, links, &txt);
    size_t lines = 0;
    for (size_t i = 0; i < txt.len; i++) {
        FZ_CHECK(txt.data[i] != '\0' && txt.data[i] != '\r');
        lines += txt.data[i] == '\n';
    }
    FZ_CHECK(lines == t->nnodes);
    if (t->nnodes > 0) {
        unsigned k = sel % t->nnodes;
        (void)topo_replicas(t, k, out, 4);
        (void)topo_shard_nodes(t, t->nodes[k].shard_id, out, 4);
        (void)topo_node_slot_count(t, k);
        buf_reset(&txt);
        topo_node_line(t, k, myself, links ? &links[k] : NULL, &txt);
        FZ_CHECK(memchr(txt.data, '\n', txt.len) == NULL);
        char err[TOPO_ERR_MAX];
        (void)topo_forget_check(t, myself, t->nodes[k].id, err, sizeof(err));
    }
    free(links);
    buf_deinit(&txt);
}

/* t's encoding must decode, to a snapshot that encodes to the same bytes. */
static void
check_round_trip(const struct topo *t, const struct buf *enc)
{
    struct topo *d;
    char err[TOPO_ERR_MAX];
    int rc = topo_decode(enc->data, enc->len, &d, err, sizeof(err));
    if (rc != RV_OK) {
        fprintf(stderr, "fuzz_topo: own encoding refused: %s\n", err);
    }
    FZ_CHECK(rc == RV_OK && d != NULL);
    FZ_CHECK(d->version == t->version && d->current_epoch == t->current_epoch);
    struct buf again;
    buf_init(&again);
    topo_encode(d, &again);
    FZ_CHECK(again.len == enc->len && memcmp(again.data, enc->data, enc->len) == 0);
    buf_deinit(&again);
    topo_put(d);
}

/* ---- mode A ---- */

static void
fuzz_snapshot(const uint8_t *data, size_t size, unsigned sel)
{
    /* An exact-size copy: ASan sees any read past the snapshot. */
    uint8_t *p = malloc(size ? size : 1);
    memcpy(p, data, size);
    struct topo *t;
    char err[TOPO_ERR_MAX];
    int rc = topo_decode(p, size, &t, err, sizeof(err));
    if (rc != RV_OK) {
        FZ_CHECK(rc == RV_ECORRUPT && t == NULL && err[0] != '\0');
        free(p);
        return;
    }
    FZ_CHECK(t != NULL && err[0] == '\0');
    check_invariants(t);
    struct buf enc;
    buf_init(&enc);
    topo_encode(t, &enc);
    FZ_CHECK(enc.len == size && memcmp(enc.data, p, size) == 0);
    check_round_trip(t, &enc);
    exercise(t, sel);
    buf_deinit(&enc);
    topo_put(t);
    free(p);
}

/* ---- compact ops, encoded with topo_enc_* ---- */

static void
fmt_id(char *out, unsigned v)
{
    snprintf(out, TOPO_ID_LEN + 1, "%02x%038u", v * 3 + 1, v);
}

/* A node id: an existing node by index, one of 64 generated ids (the base
 * cluster's are the first six), or (0xff) an invalid one. */
static void
pick_id(struct in *in, const struct topo *t, char *out)
{
    unsigned v = get8(in);
    if (v == 0xff) {
        snprintf(out, TOPO_ID_LEN + 1, "not-an-id");
    } else if (v < 0x80 && t->nnodes > 0) {
        memcpy(out, t->nodes[v % t->nnodes].id, TOPO_ID_LEN + 1);
    } else {
        fmt_id(out, v & 0x3f);
    }
}

static const char *const ips[] = { "", "127.0.0.1", "::1", "10.0.0.7", "bad ip" };
static const char *const hosts[] = { "", "host-a", "h.example.com", "x_y", "bad host!" };

static const char *
pick(struct in *in, const char *const *tab, size_t n)
{
    return tab[get8(in) % n];
}

static uint64_t
pick_epoch(struct in *in)
{
    unsigned v = get8(in);
    return v < 0xf0 ? v : get64(in);
}

/* Ranges for SLOTS_ADD / SLOTS_DEL into r[4]; returns their count (0 is invalid). */
static size_t
pick_ranges(struct in *in, struct topo_range *r)
{
    unsigned k = get8(in);
    size_t n = k == 0xff ? 0 : 1 + k % 4;
    for (size_t i = 0; i < n; i++) {
        unsigned lo = get16(in) % (SLOT_COUNT + 4), span = get8(in);
        unsigned hi = span == 0xff ? SLOT_COUNT - 1 : span == 0xfe ? lo - 1 : lo + span;
        r[i].lo = (uint16_t)lo;
        r[i].hi = (uint16_t)hi;
    }
    return n;
}

/* One op appended to b; its encoder's result. *encoded: not raw bytes. */
static int
encode_op(struct in *in, const struct topo *t, struct buf *b, bool *encoded)
{
    unsigned type = get8(in) % 16;
    *encoded = type != 0;
    char id[TOPO_ID_LEN + 1], id2[TOPO_ID_LEN + 1], shard[TOPO_ID_LEN + 1];
    struct topo_range r[4];
    const char *ip, *host;
    uint16_t port, cport;
    size_t n;
    switch (type) {
    case 0: { /* raw bytes, for entries no encoder makes */
        size_t len = get8(in);
        len = len < in->n ? len : in->n;
        if (len > 0) {
            buf_append(b, in->p, len);
        }
        in->p += len;
        in->n -= len;
        return RV_OK;
    }
    case TOPO_CMD_NODE_ADD: {
        pick_id(in, t, id);
        unsigned sh = get8(in), role = get8(in);
        snprintf(shard, sizeof(shard), "5%039u", sh);
        pick_id(in, t, id2);
        struct topo_node_spec s = {
            .id = id,
            .shard_id = sh == 0xff ? "short" : shard,
            .ip = pick(in, ips, 5),
            .port = (uint16_t)get16(in),
            .cport = (uint16_t)get16(in),
            .hostname = pick(in, hosts, 5),
            .role = role % 3,
            .primary_id = role & 4 ? id2 : NULL,
            .config_epoch = pick_epoch(in),
            .flags = (uint16_t)(get8(in) & 0x7f),
            .host_id = get8(in),
        };
        return topo_enc_node_add(b, &s);
    }
    case TOPO_CMD_NODE_FORGET: pick_id(in, t, id); return topo_enc_node_forget(b, id);
    case TOPO_CMD_NODE_SET_ADDR:
        pick_id(in, t, id);
        ip = pick(in, ips, 5);
        port = (uint16_t)get16(in);
        cport = (uint16_t)get16(in);
        host = pick(in, hosts, 5);
        return topo_enc_node_set_addr(b, id, ip, port, cport, host);
    case TOPO_CMD_NODE_SET_FLAGS:
        pick_id(in, t, id);
        return topo_enc_node_set_flags(b, id, (uint16_t)(get8(in) & 0x7f));
    case TOPO_CMD_SLOTS_ADD:
        pick_id(in, t, id);
        n = pick_ranges(in, r);
        return topo_enc_slots_add(b, id, r, n);
    case TOPO_CMD_SLOTS_DEL: n = pick_ranges(in, r); return topo_enc_slots_del(b, r, n);
    case TOPO_CMD_SLOTS_FLUSH: pick_id(in, t, id); return topo_enc_slots_flush(b, id);
    case TOPO_CMD_REPLICATE:
        pick_id(in, t, id);
        pick_id(in, t, id2);
        return topo_enc_replicate(b, id, id2);
    case TOPO_CMD_PROMOTE: pick_id(in, t, id); return topo_enc_promote(b, id);
    case TOPO_CMD_SET_CONFIG_EPOCH:
        pick_id(in, t, id);
        return topo_enc_set_config_epoch(b, id, pick_epoch(in));
    case TOPO_CMD_BUMP_EPOCH: pick_id(in, t, id); return topo_enc_bump_epoch(b, id);
    default: { /* SETSLOT; the type sometimes out of range */
        unsigned slot = get16(in) % (SLOT_COUNT + 8), bad = get8(in);
        pick_id(in, t, id);
        pick_id(in, t, id2);
        enum topo_cmd_type ty = bad == 0xff ? TOPO_CMD_BUMP_EPOCH : (enum topo_cmd_type)type;
        return topo_enc_setslot(b, ty, slot, id, bad == 0xfe ? NULL : id2);
    }
    }
}

/* ---- modes B and ops: apply a sequence ---- */

/* A private copy of a snapshot's contents, to prove apply leaves it alone. */
struct copy {
    struct topo_node *nodes;
    uint16_t *slots;
    struct topo_mig *migs;
    struct topo head;
};

static void
copy_take(struct copy *c, const struct topo *t)
{
    c->head = *t;
    c->nodes = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*c->nodes));
    memcpy(c->nodes, t->nodes, t->nnodes * sizeof(*c->nodes));
    c->slots = malloc(SLOT_COUNT * sizeof(*c->slots));
    memcpy(c->slots, t->slots, SLOT_COUNT * sizeof(*c->slots));
    c->migs = malloc((t->nmigs ? t->nmigs : 1) * sizeof(*c->migs));
    memcpy(c->migs, t->migs, t->nmigs * sizeof(*c->migs));
}

static void
copy_check(struct copy *c, const struct topo *t)
{
    FZ_CHECK(t->nodes == c->head.nodes && t->nnodes == c->head.nnodes);
    FZ_CHECK(t->slots == c->head.slots && t->migs == c->head.migs && t->nmigs == c->head.nmigs);
    FZ_CHECK(t->version == c->head.version && t->current_epoch == c->head.current_epoch);
    FZ_CHECK(memcmp(t->nodes, c->nodes, t->nnodes * sizeof(*c->nodes)) == 0);
    FZ_CHECK(memcmp(t->slots, c->slots, SLOT_COUNT * sizeof(*c->slots)) == 0);
    FZ_CHECK(memcmp(t->migs, c->migs, t->nmigs * sizeof(*c->migs)) == 0);
}

static void
copy_free(struct copy *c)
{
    free(c->nodes);
    free(c->slots);
    free(c->migs);
}

/* Apply the entries in data[0..size) to start (borrowed). Appends to log each
 * step's result and error text and the final snapshot's encoding. With full,
 * runs the per-step checks, and the round trip and text on the final
 * snapshot (the second, comparing run skips them). Round-tripping every step
 * would cost most of the time in slot scans; a state reached mid-sequence is
 * the final one of a truncated input, which the fuzzer tries too. */
static void
run(const struct topo *start, const uint8_t *data, size_t size, bool ops, bool full,
    struct buf *log)
{
    struct in in = { data, size };
    struct topo *cur = topo_get(start);
    struct buf entry, enc;
    struct copy cc;
    buf_init(&entry);
    buf_init(&enc);
    if (full) {
        copy_take(&cc, cur);
    }
    for (unsigned step = 0; step < MAX_STEPS && in.n > 0; step++) {
        buf_reset(&entry);
        bool encoded = false;
        if (ops) {
            size_t was = entry.len;
            int rc = encode_op(&in, cur, &entry, &encoded);
            FZ_CHECK(rc == RV_OK || rc == RV_EINVAL);
            if (rc != RV_OK) {
                FZ_CHECK(entry.len == was);
                buf_appendf(log, "einval\n");
                continue;
            }
        } else {
            size_t len = get16(&in);
            len = len < in.n ? len : in.n;
            if (len > 0) {
                buf_append(&entry, in.p, len);
            }
            in.p += len;
            in.n -= len;
        }
        /* An exact-size copy: ASan sees any read past the entry. */
        uint8_t *copy = malloc(entry.len ? entry.len : 1);
        if (entry.len > 0) {
            memcpy(copy, entry.data, entry.len);
        }
        struct topo *next = NULL;
        char err[TOPO_ERR_MAX];
        memset(err, 'x', sizeof(err));
        enum topo_res res = topo_apply(cur, copy, entry.len, &next, err, sizeof(err));
        free(copy);
        FZ_CHECK(res == TOPO_CHANGED || res == TOPO_UNCHANGED || res == TOPO_EREFUSED ||
                 res == TOPO_EMALFORMED);
        FZ_CHECK(next != NULL && memchr(err, '\0', sizeof(err)) != NULL);
        FZ_CHECK((res < 0) == (err[0] != '\0'));
        FZ_CHECK(!encoded || res != TOPO_EMALFORMED); /* encoders and decoder agree */
        buf_appendf(log, "%d %s\n", (int)res, err);
        if (full) {
            copy_check(&cc, cur); /* snapshots are immutable */
        }
        if (res != TOPO_CHANGED) {
            FZ_CHECK(next == cur);
            topo_put(next);
            continue;
        }
        FZ_CHECK(next != cur && next->version == cur->version + 1);
        FZ_CHECK(next->current_epoch >= cur->current_epoch);
        topo_put(cur);
        cur = next;
        if (full) {
            copy_free(&cc);
            copy_take(&cc, cur);
            check_invariants(cur);
        }
    }
    topo_encode(cur, &enc);
    if (full) {
        copy_free(&cc);
        check_round_trip(cur, &enc);
        exercise(cur, (unsigned)size);
    }
    buf_append(log, enc.data, enc.len);
    buf_deinit(&entry);
    buf_deinit(&enc);
    topo_put(cur);
}

/* ---- the base cluster ---- */

static void
base_apply(struct topo **t, struct buf *b)
{
    struct topo *next;
    char err[TOPO_ERR_MAX];
    enum topo_res res = topo_apply(*t, b->data, b->len, &next, err, sizeof(err));
    if (res != TOPO_CHANGED) {
        fprintf(stderr, "fuzz_topo: base cluster: %d %s\n", (int)res, err);
    }
    FZ_CHECK(res == TOPO_CHANGED);
    topo_put(*t);
    *t = next;
    buf_reset(b);
}

/* Three primaries with a third of the slots each, a replica each, slot 100
 * half-way from node 0 to node 1, and node 2 importing slot 200 from node 0. */
static struct topo *
base_cluster(void)
{
    struct topo *t = topo_create();
    struct buf b;
    buf_init(&b);
    char id[6][TOPO_ID_LEN + 1], shard[3][TOPO_ID_LEN + 1];
    for (unsigned i = 0; i < 6; i++) {
        fmt_id(id[i], i);
    }
    for (unsigned i = 0; i < 3; i++) {
        snprintf(shard[i], sizeof(shard[i]), "5%039u", i);
    }
    for (unsigned i = 0; i < 6; i++) {
        struct topo_node_spec s = {
            .id = id[i],
            .shard_id = shard[i % 3],
            .ip = "127.0.0.1",
            .port = (uint16_t)(7000 + i),
            .cport = (uint16_t)(17000 + i),
            .hostname = i == 1 ? "host-b" : NULL,
            .role = i < 3 ? TOPO_PRIMARY : TOPO_REPLICA,
            .primary_id = i < 3 ? NULL : id[i - 3],
            .config_epoch = i < 3 ? i + 1 : 0,
            .host_id = i % 2,
        };
        FZ_CHECK(topo_enc_node_add(&b, &s) == RV_OK);
        base_apply(&t, &b);
    }
    for (unsigned i = 0; i < 3; i++) {
        unsigned lo, hi;
        slot_range(i, 3, &lo, &hi);
        struct topo_range r = { (uint16_t)lo, (uint16_t)hi };
        FZ_CHECK(topo_enc_slots_add(&b, id[i], &r, 1) == RV_OK);
        base_apply(&t, &b);
    }
    FZ_CHECK(topo_enc_setslot(&b, TOPO_CMD_SLOT_MIGRATING, 100, id[0], id[1]) == RV_OK);
    base_apply(&t, &b);
    FZ_CHECK(topo_enc_setslot(&b, TOPO_CMD_SLOT_IMPORTING, 100, id[1], id[0]) == RV_OK);
    base_apply(&t, &b);
    FZ_CHECK(topo_enc_setslot(&b, TOPO_CMD_SLOT_IMPORTING, 200, id[2], id[0]) == RV_OK);
    base_apply(&t, &b);
    buf_deinit(&b);
    check_invariants(t);
    return t;
}

static struct topo *base; /* built once; reachable, so not a leak */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    unsigned mode = data[0];
    data++;
    size--;
    if ((mode & 3) == 3) {
        fuzz_snapshot(data, size, mode >> 2);
        return 0;
    }
    struct topo *start = NULL;
    if ((mode & 3) == 0) {
        start = topo_create();
    } else if ((mode & 3) == 1) {
        if (!base) {
            base = base_cluster();
        }
        start = topo_get(base);
    } else {
        struct in in = { data, size };
        size_t len = get16(&in);
        if (len > in.n) {
            return 0;
        }
        char err[TOPO_ERR_MAX];
        if (topo_decode(in.p, len, &start, err, sizeof(err)) != RV_OK) {
            return 0;
        }
        data = in.p + len;
        size = in.n - len;
    }
    bool ops = (mode & 4) != 0;
    struct buf log1, log2;
    buf_init(&log1);
    buf_init(&log2);
    run(start, data, size, ops, true, &log1);
    run(start, data, size, ops, false, &log2);
    FZ_CHECK(log1.len == log2.len && memcmp(log1.data, log2.data, log1.len) == 0);
    buf_deinit(&log1);
    buf_deinit(&log2);
    topo_put(start);
    return 0;
}
