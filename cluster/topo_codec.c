/* cluster/topo_codec.c: the byte formats. Commands: [version][type] then the
 * type's fields. Snapshots: "RVTP" [version] then the whole state. Integers
 * are little-endian and fixed-width, ids are 40 raw lowercase hex chars,
 * strings are a length byte and the bytes. Decoders check every length, value
 * and cross-reference, and reject trailing bytes: entries and snapshots come
 * from the network and from disk. */
#include "cluster/topo.h"

#include "base/mem.h"
#include "base/rv_err.h"
#include "cluster/topo_int.h"

#include <stdio.h>
#include <string.h>

#define SNAP_MAGIC "RVTP"

/* ---- validation ---- */

bool
tp_valid_id(const char *s, size_t n)
{
    if (n != TOPO_ID_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

bool
tp_valid_ip(const char *s, size_t n)
{
    if (n > TOPO_IP_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
              ch == '.' || ch == ':')) {
            return false;
        }
    }
    return true;
}

/* Redis accepts [A-Za-z0-9._-] in announced hostnames; nothing that would
 * break a CLUSTER NODES line. */
bool
tp_valid_hostname(const char *s, size_t n)
{
    if (n > TOPO_HOSTNAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              ch == '.' || ch == '-' || ch == '_')) {
            return false;
        }
    }
    return true;
}

static bool
id_ok(const char *id)
{
    return id && tp_valid_id(id, strnlen(id, TOPO_ID_LEN + 1));
}

/* ---- writer ---- */

static void
put_u8(struct buf *b, unsigned v)
{
    buf_putc(b, (char)(uint8_t)v);
}

static void
put_u16(struct buf *b, unsigned v)
{
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    buf_append(b, x, 2);
}

static void
put_u64(struct buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    buf_append(b, x, 8);
}

static void
put_str(struct buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u8(b, (unsigned)n);
    buf_append(b, s, n);
}

static void
put_head(struct buf *b, enum topo_cmd_type type)
{
    put_u8(b, TOPO_CMD_VERSION);
    put_u8(b, type);
}

int
topo_enc_node_add(struct buf *b, const struct topo_node_spec *s)
{
    const char *host = s->hostname ? s->hostname : "";
    const char *ip = s->ip ? s->ip : "";
    bool replica = s->role == TOPO_REPLICA;
    if (!id_ok(s->id) || !id_ok(s->shard_id) || (s->role != TOPO_PRIMARY && !replica) ||
        (replica && !id_ok(s->primary_id)) ||
        (!replica && s->primary_id && s->primary_id[0] != '\0') || !tp_valid_ip(ip, strlen(ip)) ||
        !tp_valid_hostname(host, strlen(host)) || (s->flags & ~TOPO_F_ALL)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_NODE_ADD);
    buf_append(b, s->id, TOPO_ID_LEN);
    buf_append(b, s->shard_id, TOPO_ID_LEN);
    put_u8(b, s->role);
    if (replica) {
        buf_append(b, s->primary_id, TOPO_ID_LEN);
    }
    put_str(b, ip);
    put_u16(b, s->port);
    put_u16(b, s->cport);
    put_str(b, host);
    put_u64(b, s->config_epoch);
    put_u16(b, s->flags);
    put_u64(b, s->host_id);
    return RV_OK;
}

static int
enc_id_only(struct buf *b, enum topo_cmd_type type, const char *id)
{
    if (!id_ok(id)) {
        return RV_EINVAL;
    }
    put_head(b, type);
    buf_append(b, id, TOPO_ID_LEN);
    return RV_OK;
}

int
topo_enc_node_forget(struct buf *b, const char *id)
{
    return enc_id_only(b, TOPO_CMD_NODE_FORGET, id);
}

int
topo_enc_node_set_addr(struct buf *b, const char *id, const char *ip, uint16_t port, uint16_t cport,
                       const char *hostname)
{
    ip = ip ? ip : "";
    hostname = hostname ? hostname : "";
    if (!id_ok(id) || !tp_valid_ip(ip, strlen(ip)) ||
        !tp_valid_hostname(hostname, strlen(hostname))) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_NODE_SET_ADDR);
    buf_append(b, id, TOPO_ID_LEN);
    put_str(b, ip);
    put_u16(b, port);
    put_u16(b, cport);
    put_str(b, hostname);
    return RV_OK;
}

int
topo_enc_node_set_flags(struct buf *b, const char *id, uint16_t flags)
{
    if (!id_ok(id) || (flags & ~TOPO_F_ALL)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_NODE_SET_FLAGS);
    buf_append(b, id, TOPO_ID_LEN);
    put_u16(b, flags);
    return RV_OK;
}

static bool
ranges_ok(const struct topo_range *r, size_t n)
{
    if (!r || n == 0 || n > SLOT_COUNT) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (r[i].lo > r[i].hi || r[i].hi >= SLOT_COUNT) {
            return false;
        }
    }
    return true;
}

static void
put_ranges(struct buf *b, const struct topo_range *r, size_t n)
{
    put_u16(b, (unsigned)(n - 1)); /* 1..SLOT_COUNT fits in 14 bits */
    for (size_t i = 0; i < n; i++) {
        put_u16(b, r[i].lo);
        put_u16(b, r[i].hi);
    }
}

int
topo_enc_slots_add(struct buf *b, const char *id, const struct topo_range *r, size_t n)
{
    if (!id_ok(id) || !ranges_ok(r, n)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_SLOTS_ADD);
    buf_append(b, id, TOPO_ID_LEN);
    put_ranges(b, r, n);
    return RV_OK;
}

int
topo_enc_slots_del(struct buf *b, const struct topo_range *r, size_t n)
{
    if (!ranges_ok(r, n)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_SLOTS_DEL);
    put_ranges(b, r, n);
    return RV_OK;
}

int
topo_enc_slots_flush(struct buf *b, const char *id)
{
    return enc_id_only(b, TOPO_CMD_SLOTS_FLUSH, id);
}

int
topo_enc_replicate(struct buf *b, const char *replica_id, const char *primary_id)
{
    if (!id_ok(replica_id) || !id_ok(primary_id)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_REPLICATE);
    buf_append(b, replica_id, TOPO_ID_LEN);
    buf_append(b, primary_id, TOPO_ID_LEN);
    return RV_OK;
}

int
topo_enc_promote(struct buf *b, const char *replica_id)
{
    return enc_id_only(b, TOPO_CMD_PROMOTE, replica_id);
}

int
topo_enc_set_config_epoch(struct buf *b, const char *id, uint64_t epoch)
{
    if (!id_ok(id)) {
        return RV_EINVAL;
    }
    put_head(b, TOPO_CMD_SET_CONFIG_EPOCH);
    buf_append(b, id, TOPO_ID_LEN);
    put_u64(b, epoch);
    return RV_OK;
}

int
topo_enc_bump_epoch(struct buf *b, const char *id)
{
    return enc_id_only(b, TOPO_CMD_BUMP_EPOCH, id);
}

int
topo_enc_setslot(struct buf *b, enum topo_cmd_type type, unsigned slot, const char *by_id,
                 const char *node_id)
{
    bool stable = type == TOPO_CMD_SLOT_STABLE;
    if (type < TOPO_CMD_SLOT_MIGRATING || type > TOPO_CMD_SLOT_NODE || slot >= SLOT_COUNT ||
        !id_ok(by_id) || (!stable && !id_ok(node_id))) {
        return RV_EINVAL;
    }
    put_head(b, type);
    put_u16(b, slot);
    buf_append(b, by_id, TOPO_ID_LEN);
    if (!stable) {
        buf_append(b, node_id, TOPO_ID_LEN);
    }
    return RV_OK;
}

void
topo_batch_start(struct buf *b)
{
    put_head(b, TOPO_CMD_BATCH);
    put_u16(b, 0);
}

int
topo_batch_add(struct buf *b, size_t start, const void *cmd, size_t len)
{
    const uint8_t *c = cmd;
    if (start + 4 > b->len || len < 2 || len > UINT32_MAX || c[1] == TOPO_CMD_BATCH) {
        return RV_EINVAL;
    }
    uint8_t *head = (uint8_t *)b->data + start;
    unsigned n = tp_ld16(head + 2);
    if (n >= TOPO_BATCH_MAX) {
        return RV_EINVAL;
    }
    n++;
    head[2] = (uint8_t)n;
    head[3] = (uint8_t)(n >> 8);
    uint8_t l[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                     (uint8_t)(len >> 24) };
    buf_append(b, l, 4);
    buf_append(b, cmd, len);
    return RV_OK;
}

/* ---- reader: a failed read sets bad and returns zeros; callers check bad ---- */

struct rd {
    const uint8_t *p;
    size_t n, off;
    const char *bad; /* first problem, or NULL */
};

static const uint8_t *
rd_take(struct rd *r, size_t n)
{
    if (r->bad || r->n - r->off < n) {
        if (!r->bad) {
            r->bad = "truncated";
        }
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

static unsigned
rd_u8(struct rd *r)
{
    const uint8_t *p = rd_take(r, 1);
    return p ? p[0] : 0;
}

static unsigned
rd_u16(struct rd *r)
{
    const uint8_t *p = rd_take(r, 2);
    return p ? tp_ld16(p) : 0;
}

static uint64_t
rd_u64(struct rd *r)
{
    const uint8_t *p = rd_take(r, 8);
    uint64_t v = 0;
    for (int i = 0; p && i < 8; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static void
rd_fail(struct rd *r, const char *why)
{
    if (!r->bad) {
        r->bad = why;
    }
}

static void
rd_id(struct rd *r, char *out)
{
    const uint8_t *p = rd_take(r, TOPO_ID_LEN);
    out[0] = '\0';
    if (p && !tp_valid_id((const char *)p, TOPO_ID_LEN)) {
        rd_fail(r, "bad node id");
    } else if (p) {
        memcpy(out, p, TOPO_ID_LEN);
        out[TOPO_ID_LEN] = '\0';
    }
}

/* A length-prefixed string of at most max bytes into out[max + 1]. */
static void
rd_str(struct rd *r, char *out, size_t max, bool (*valid)(const char *, size_t))
{
    size_t n = rd_u8(r);
    const uint8_t *p = rd_take(r, n);
    out[0] = '\0';
    if (p && (n > max || !valid((const char *)p, n))) {
        rd_fail(r, "bad string field");
    } else if (p) {
        memcpy(out, p, n);
        out[n] = '\0';
    }
}

static void
rd_addr(struct rd *r, struct tp_cmd *c)
{
    rd_str(r, c->ip, TOPO_IP_MAX, tp_valid_ip);
    c->port = (uint16_t)rd_u16(r);
    c->cport = (uint16_t)rd_u16(r);
    rd_str(r, c->hostname, TOPO_HOSTNAME_MAX, tp_valid_hostname);
}

static void
rd_ranges(struct rd *r, struct tp_cmd *c)
{
    c->nranges = rd_u16(r) + 1;
    if (c->nranges > SLOT_COUNT) {
        rd_fail(r, "too many ranges");
        return;
    }
    c->ranges = rd_take(r, 4 * (size_t)c->nranges);
    for (uint32_t i = 0; c->ranges && i < c->nranges; i++) {
        unsigned lo = tp_ld16(c->ranges + 4 * i), hi = tp_ld16(c->ranges + 4 * i + 2);
        if (lo > hi || hi >= SLOT_COUNT) {
            rd_fail(r, "bad slot range");
        }
    }
}

static void
rd_node_add(struct rd *r, struct tp_cmd *c)
{
    rd_id(r, c->id);
    rd_id(r, c->shard_id);
    c->role = (uint8_t)rd_u8(r);
    if (c->role > TOPO_REPLICA) {
        rd_fail(r, "bad role");
    }
    c->has_id2 = c->role == TOPO_REPLICA;
    if (c->has_id2) {
        rd_id(r, c->id2);
    }
    rd_addr(r, c);
    c->epoch = rd_u64(r);
    c->flags = (uint16_t)rd_u16(r);
    if (c->flags & ~TOPO_F_ALL) {
        rd_fail(r, "bad flags");
    }
    c->host_id = rd_u64(r);
}

bool
tp_cmd_decode(const void *p, size_t len, struct tp_cmd *c, char *err, size_t errsz)
{
    struct rd r = { p, len, 0, NULL };
    memset(c, 0, sizeof(*c));
    if (!p) {
        r.n = 0;
    }
    unsigned ver = rd_u8(&r);
    c->type = (uint8_t)rd_u8(&r);
    if (!r.bad && ver != TOPO_CMD_VERSION) {
        rd_fail(&r, "unknown command version");
    }
    switch (r.bad ? 0 : c->type) {
    case TOPO_CMD_NODE_ADD: rd_node_add(&r, c); break;
    case TOPO_CMD_NODE_FORGET:
    case TOPO_CMD_SLOTS_FLUSH:
    case TOPO_CMD_PROMOTE:
    case TOPO_CMD_BUMP_EPOCH: rd_id(&r, c->id); break;
    case TOPO_CMD_NODE_SET_ADDR:
        rd_id(&r, c->id);
        rd_addr(&r, c);
        break;
    case TOPO_CMD_NODE_SET_FLAGS:
        rd_id(&r, c->id);
        c->flags = (uint16_t)rd_u16(&r);
        if (c->flags & ~TOPO_F_ALL) {
            rd_fail(&r, "bad flags");
        }
        break;
    case TOPO_CMD_SLOTS_ADD:
        rd_id(&r, c->id);
        rd_ranges(&r, c);
        break;
    case TOPO_CMD_SLOTS_DEL: rd_ranges(&r, c); break;
    case TOPO_CMD_REPLICATE:
        rd_id(&r, c->id);
        rd_id(&r, c->id2);
        break;
    case TOPO_CMD_SET_CONFIG_EPOCH:
        rd_id(&r, c->id);
        c->epoch = rd_u64(&r);
        break;
    case TOPO_CMD_SLOT_MIGRATING:
    case TOPO_CMD_SLOT_IMPORTING:
    case TOPO_CMD_SLOT_NODE:
    case TOPO_CMD_SLOT_STABLE:
        c->slot = (uint16_t)rd_u16(&r);
        if (c->slot >= SLOT_COUNT) {
            rd_fail(&r, "bad slot");
        }
        rd_id(&r, c->id);
        if (c->type != TOPO_CMD_SLOT_STABLE) {
            rd_id(&r, c->id2);
        }
        break;
    default: rd_fail(&r, "unknown command type"); break;
    }
    if (!r.bad && r.off != r.n) {
        rd_fail(&r, "trailing bytes");
    }
    if (r.bad) {
        snprintf(err, errsz, "ERR malformed topology entry: %s", r.bad);
        return false;
    }
    return true;
}

/* ---- snapshots ---- */

static void
put_node(struct buf *b, const struct topo_node *n)
{
    buf_append(b, n->id, TOPO_ID_LEN);
    buf_append(b, n->shard_id, TOPO_ID_LEN);
    put_u8(b, n->role);
    put_u16(b, n->primary);
    put_str(b, n->ip);
    put_u16(b, n->port);
    put_u16(b, n->cport);
    put_str(b, n->hostname);
    put_u64(b, n->config_epoch);
    put_u16(b, n->flags);
    put_u64(b, n->host_id);
}

void
topo_encode(const struct topo *t, struct buf *b)
{
    buf_append(b, SNAP_MAGIC, 4);
    put_u8(b, TOPO_SNAP_VERSION);
    put_u64(b, t->version);
    put_u64(b, t->current_epoch);
    put_u16(b, t->nnodes);
    for (uint32_t i = 0; i < t->nnodes; i++) {
        put_node(b, &t->nodes[i]);
    }
    /* Slot owners as runs: at most SLOT_COUNT of them. */
    unsigned pos = 0, nruns = 0;
    struct topo_range r;
    while (topo_next_range(t, &pos, TOPO_NONE, &r, NULL)) {
        nruns++;
    }
    put_u16(b, nruns);
    pos = 0;
    uint16_t owner;
    while (topo_next_range(t, &pos, TOPO_NONE, &r, &owner)) {
        put_u16(b, r.lo);
        put_u16(b, r.hi);
        put_u16(b, owner);
    }
    put_u16(b, t->nmigs);
    for (uint32_t i = 0; i < t->nmigs; i++) {
        const struct topo_mig *m = &t->migs[i];
        put_u16(b, m->slot);
        put_u16(b, m->mig_by);
        put_u16(b, m->mig_to);
        put_u16(b, m->imp_by);
        put_u16(b, m->imp_from);
    }
}

static void
rd_node(struct rd *r, struct topo_node *n, uint32_t nnodes)
{
    rd_id(r, n->id);
    rd_id(r, n->shard_id);
    n->role = (uint8_t)rd_u8(r);
    n->primary = (uint16_t)rd_u16(r);
    rd_str(r, n->ip, TOPO_IP_MAX, tp_valid_ip);
    n->port = (uint16_t)rd_u16(r);
    n->cport = (uint16_t)rd_u16(r);
    rd_str(r, n->hostname, TOPO_HOSTNAME_MAX, tp_valid_hostname);
    n->config_epoch = rd_u64(r);
    n->flags = (uint16_t)rd_u16(r);
    n->host_id = rd_u64(r);
    if (n->role > TOPO_REPLICA || (n->flags & ~TOPO_F_ALL)) {
        rd_fail(r, "bad node role or flags");
    }
    if (n->primary != TOPO_NONE && (n->role != TOPO_REPLICA || n->primary >= nnodes)) {
        rd_fail(r, "bad primary index");
    }
}

/* Cross-references and the invariants apply keeps: ids unique, replicas of
 * primaries in their shard, no config epoch above the current one. */
static void
check_nodes(struct rd *r, struct tp_nodes *pn, uint64_t epoch)
{
    tp_nodes_sort(pn);
    for (uint32_t i = 0; i + 1 < pn->n; i++) {
        if (memcmp(pn->node[pn->order[i]].id, pn->node[pn->order[i + 1]].id, TOPO_ID_LEN) == 0) {
            rd_fail(r, "duplicate node id");
        }
    }
    for (uint32_t i = 0; i < pn->n; i++) {
        uint16_t p = pn->node[i].primary;
        if (p != TOPO_NONE && (pn->node[p].role != TOPO_PRIMARY ||
                               memcmp(pn->node[i].shard_id, pn->node[p].shard_id, TOPO_ID_LEN))) {
            rd_fail(r, "bad replica");
        }
        if (pn->node[i].config_epoch > epoch) {
            rd_fail(r, "config epoch above the current epoch");
        }
    }
}

static void
rd_slots(struct rd *r, struct tp_slots *ps, const struct tp_nodes *pn)
{
    unsigned nruns = rd_u16(r), next = 0, prev = TOPO_NONE;
    if (nruns > SLOT_COUNT) {
        rd_fail(r, "too many slot runs");
    }
    for (unsigned i = 0; i < nruns && !r->bad; i++) {
        unsigned lo = rd_u16(r), hi = rd_u16(r), o = rd_u16(r);
        if (r->bad || lo < next || lo > hi || hi >= SLOT_COUNT || o >= pn->n ||
            pn->node[o].role != TOPO_PRIMARY) {
            rd_fail(r, "bad slot run");
            break;
        }
        /* Runs are maximal, so that one state has one encoding. */
        if (i > 0 && lo == next && o == prev) {
            rd_fail(r, "slot runs not merged");
            break;
        }
        prev = o;
        for (unsigned s = lo; s <= hi; s++) {
            ps->owner[s] = (uint16_t)o;
        }
        next = hi + 1;
    }
}

static bool
pair_ok(unsigned by, unsigned other, uint32_t n)
{
    return (by == TOPO_NONE && other == TOPO_NONE) || (by < n && other < n);
}

static struct tp_mig *
rd_migs(struct rd *r, uint32_t nnodes)
{
    unsigned n = rd_u16(r);
    if (n > SLOT_COUNT) {
        rd_fail(r, "too many slot states");
        n = 0;
    }
    struct tp_mig *pm = tp_mig_alloc(n);
    for (unsigned i = 0; i < n && !r->bad; i++) {
        struct topo_mig *m = &pm->ent[i];
        m->slot = (uint16_t)rd_u16(r);
        m->mig_by = (uint16_t)rd_u16(r);
        m->mig_to = (uint16_t)rd_u16(r);
        m->imp_by = (uint16_t)rd_u16(r);
        m->imp_from = (uint16_t)rd_u16(r);
        if (r->bad || m->slot >= SLOT_COUNT || (i > 0 && m->slot <= pm->ent[i - 1].slot) ||
            !pair_ok(m->mig_by, m->mig_to, nnodes) || !pair_ok(m->imp_by, m->imp_from, nnodes) ||
            (m->mig_by == TOPO_NONE && m->imp_by == TOPO_NONE)) {
            rd_fail(r, "bad slot state");
            break;
        }
        pm->n = i + 1;
    }
    return pm;
}

int
topo_decode(const void *p, size_t len, struct topo **out, char *err, size_t errsz)
{
    struct rd r = { p, p ? len : 0, 0, NULL };
    *out = NULL;
    const uint8_t *magic = rd_take(&r, 4);
    if (magic && memcmp(magic, SNAP_MAGIC, 4) != 0) {
        rd_fail(&r, "bad magic");
    }
    if (rd_u8(&r) != TOPO_SNAP_VERSION) {
        rd_fail(&r, "unknown snapshot version");
    }
    uint64_t version = rd_u64(&r), epoch = rd_u64(&r);
    uint32_t n = rd_u16(&r);
    if (n > TOPO_MAX_NODES) {
        rd_fail(&r, "too many nodes");
    }
    /* Bound the allocation by the bytes left: a node takes at least 107. */
    if (r.bad || n > (r.n - r.off) / 107) {
        rd_fail(&r, "truncated");
        n = 0;
    }
    struct tp_nodes *pn = tp_nodes_alloc(n);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        rd_node(&r, &pn->node[i], n);
    }
    if (!r.bad) {
        check_nodes(&r, pn, epoch);
    }
    struct tp_slots *ps = tp_slots_alloc();
    if (!r.bad) {
        rd_slots(&r, ps, pn);
    }
    struct tp_mig *pm = rd_migs(&r, n);
    if (!r.bad && r.off != r.n) {
        rd_fail(&r, "trailing bytes");
    }
    if (r.bad) {
        snprintf(err, errsz, "malformed topology snapshot: %s", r.bad);
        tp_nodes_put(pn);
        tp_slots_put(ps);
        tp_mig_put(pm);
        return RV_ECORRUPT;
    }
    *out = tp_assemble(pn, ps, pm, version, epoch);
    if (errsz) {
        err[0] = '\0';
    }
    return RV_OK;
}
