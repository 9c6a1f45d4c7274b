/* node/types/stream.c: the stream object: packed nodes under a sorted array
 * (see stream.h), and its obj_ops. */
#include "node/types/stream.h"

#include "base/mem.h"
#include "node/keyspace/ks.h"
#include "node/types/stream_group.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { SE_DELETED = 1, SE_SAME = 2 }; /* entry flags */

struct snode {
    struct sid master; /* first entry's id: others are relative to it */
    struct sid last;   /* last entry's id (an upper bound after XDEL) */
    uint16_t n;        /* entries, deleted ones included */
    uint16_t live;
    size_t len, cap; /* bytes used / allocated in d */
    uint8_t d[];     /* master field names, then entries */
};

struct stream {
    struct snode **v; /* nodes v[head .. head+n), sorted by id */
    size_t head, n, cap;
    uint64_t length;
    struct sid last_id, max_deleted;
    uint64_t entries_added;
    size_t bytes;          /* nodes' allocations */
    struct sg_set *groups; /* consumer groups (stream_group.h); NULL when none */
};

/* ------------------------------------------------------------------ ids */

size_t
sid_fmt(struct sid id, char *out)
{
    return (size_t)snprintf(out, STREAM_ID_MAX, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
}

bool
sid_incr(struct sid *id)
{
    if (id->seq == UINT64_MAX) {
        if (id->ms == UINT64_MAX) {
            return false;
        }
        id->ms++;
        id->seq = 0;
    } else {
        id->seq++;
    }
    return true;
}

bool
sid_decr(struct sid *id)
{
    if (id->seq == 0) {
        if (id->ms == 0) {
            return false;
        }
        id->ms--;
        id->seq = UINT64_MAX;
    } else {
        id->seq--;
    }
    return true;
}

/* --------------------------------------------------------------- varints */

static size_t
vlen(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *
vput(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Only ever reads bytes this module wrote. */
static const uint8_t *
vget(const uint8_t *p, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t c = *p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            break;
        }
    }
    *out = v;
    return p;
}

static const uint8_t *
sget(const uint8_t *p, struct rv_str *s)
{
    uint64_t n;
    p = vget(p, &n);
    s->p = (const char *)p;
    s->len = (size_t)n;
    return p + n;
}

/* ----------------------------------------------------------------- nodes */

static struct snode *
node_at(const struct stream *s, size_t i)
{
    return s->v[s->head + i];
}

/* An entry of a node, decoded. */
struct sent {
    uint8_t flags;
    struct sid id;
    size_t nf;
    const uint8_t *fv;   /* values (SE_SAME) or field/value pairs */
    const uint8_t *next; /* the following entry */
};

static size_t
node_nfields(const struct snode *nd, const uint8_t **names)
{
    uint64_t nf;
    *names = vget(nd->d, &nf);
    return (size_t)nf;
}

static const uint8_t *
node_first(const struct snode *nd)
{
    const uint8_t *p;
    size_t nf = node_nfields(nd, &p);
    for (size_t i = 0; i < nf; i++) {
        struct rv_str f;
        p = sget(p, &f);
    }
    return p;
}

static void
entry_decode(const struct snode *nd, const uint8_t *p, struct sent *e)
{
    uint64_t dms, seq, nf;
    e->flags = *p++;
    p = vget(p, &dms);
    p = vget(p, &seq);
    e->id.ms = nd->master.ms + dms;
    e->id.seq = dms == 0 ? nd->master.seq + seq : seq;
    if (e->flags & SE_SAME) {
        const uint8_t *names;
        nf = node_nfields(nd, &names);
    } else {
        p = vget(p, &nf);
    }
    e->nf = (size_t)nf;
    e->fv = p;
    size_t strs = (e->flags & SE_SAME) ? e->nf : 2 * e->nf;
    for (size_t i = 0; i < strs; i++) {
        struct rv_str x;
        p = sget(p, &x);
    }
    e->next = p;
}

static void
node_resize(struct stream *s, size_t i, size_t cap)
{
    struct snode *nd = node_at(s, i);
    s->bytes -= rv_usable_size(nd);
    nd = rv_realloc(nd, sizeof(*nd) + cap);
    nd->cap = cap;
    s->bytes += rv_usable_size(nd);
    s->v[s->head + i] = nd;
}

static void
node_remove(struct stream *s, size_t i)
{
    struct snode *nd = node_at(s, i);
    s->bytes -= rv_usable_size(nd);
    rv_free(nd);
    if (i == 0) {
        s->head++;
    } else {
        memmove(&s->v[s->head + i], &s->v[s->head + i + 1], (s->n - i - 1) * sizeof(*s->v));
    }
    s->n--;
    if (s->n == 0) {
        s->head = 0;
    }
}

/* Appends a node slot (compacting or growing the array). */
static void
node_push(struct stream *s, struct snode *nd)
{
    if (s->head + s->n == s->cap) {
        if (s->head > 0) {
            memmove(s->v, s->v + s->head, s->n * sizeof(*s->v));
            s->head = 0;
        }
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 4;
            s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
        }
    }
    s->v[s->head + s->n++] = nd;
    s->bytes += rv_usable_size(nd);
}

/* The last node whose master id is <= id; -1 when none. */
static long
node_seek(const struct stream *s, struct sid id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sid_cmp(node_at(s, mid)->master, id) <= 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (long)lo - 1;
}

/* ---------------------------------------------------------------- stream */

struct stream *
stream_create(void)
{
    return rv_calloc(1, sizeof(struct stream));
}

void
stream_free(void *p)
{
    struct stream *s = p;
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        rv_free(node_at(s, i));
    }
    rv_free(s->v);
    sg_set_free(s->groups);
    rv_free(s);
}

struct stream *
stream_dup(const struct stream *s)
{
    struct stream *t = stream_create();
    *t = *s;
    t->head = 0;
    t->cap = s->n;
    t->v = s->n ? rv_malloc(s->n * sizeof(*t->v)) : NULL;
    t->bytes = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct snode *nd = node_at(s, i);
        struct snode *c = rv_malloc(sizeof(*c) + nd->cap);
        memcpy(c, nd, sizeof(*c) + nd->len);
        t->v[i] = c;
        t->bytes += rv_usable_size(c);
    }
    t->groups = sg_set_dup(s->groups);
    return t;
}

uint64_t
stream_len(const struct stream *s)
{
    return s->length;
}

struct sid
stream_last_id(const struct stream *s)
{
    return s->last_id;
}

struct sid
stream_max_deleted(const struct stream *s)
{
    return s->max_deleted;
}

uint64_t
stream_entries_added(const struct stream *s)
{
    return s->entries_added;
}

struct sid
stream_first_id(const struct stream *s)
{
    struct stream_it it;
    stream_it_init(&it, s, (struct sid){ 0, 0 }, (struct sid){ UINT64_MAX, UINT64_MAX }, false);
    return stream_it_next(&it) ? it.id : (struct sid){ 0, 0 };
}

void
stream_set_meta(struct stream *s, struct sid last, struct sid max_deleted, uint64_t entries_added)
{
    s->last_id = last;
    s->max_deleted = max_deleted;
    s->entries_added = entries_added;
}

size_t
stream_mem(const struct stream *s)
{
    return rv_usable_size(s) + (s->v ? rv_usable_size(s->v) : 0) + s->bytes + sg_set_mem(s->groups);
}

struct sg_set **
stream_groups(struct stream *s)
{
    return &s->groups;
}

const struct sg_set *
stream_groups_const(const struct stream *s)
{
    return s->groups;
}

bool
stream_has(const struct stream *s, struct sid id)
{
    struct stream_it it;
    stream_it_init(&it, s, id, id, false);
    return stream_it_next(&it);
}

size_t
stream_nodes(const struct stream *s)
{
    return s->n;
}

static bool
same_fields(const struct snode *nd, size_t nf, const struct rv_str *fv)
{
    const uint8_t *p;
    if (node_nfields(nd, &p) != nf) {
        return false;
    }
    for (size_t i = 0; i < nf; i++) {
        struct rv_str f;
        p = sget(p, &f);
        if (f.len != fv[2 * i].len || memcmp(f.p, fv[2 * i].p, f.len) != 0) {
            return false;
        }
    }
    return true;
}

/* A new tail node for id, holding fv's field names as the master fields. */
static void
node_open(struct stream *s, struct sid id, size_t nf, const struct rv_str *fv, size_t need)
{
    size_t hdr = vlen(nf);
    for (size_t i = 0; i < nf; i++) {
        hdr += vlen(fv[2 * i].len) + fv[2 * i].len;
    }
    size_t cap = hdr + need;
    if (cap < 256) {
        cap = 256;
    }
    struct snode *nd = rv_malloc(sizeof(*nd) + cap);
    nd->master = nd->last = id;
    nd->n = nd->live = 0;
    nd->cap = cap;
    uint8_t *p = vput(nd->d, nf);
    for (size_t i = 0; i < nf; i++) {
        p = vput(p, fv[2 * i].len);
        memcpy(p, fv[2 * i].p, fv[2 * i].len);
        p += fv[2 * i].len;
    }
    nd->len = (size_t)(p - nd->d);
    node_push(s, nd);
}

void
stream_append(struct stream *s, struct sid id, size_t nf, const struct rv_str *fv)
{
    struct snode *t = s->n ? node_at(s, s->n - 1) : NULL;
    size_t vals = 0, pairs = vlen(nf);
    for (size_t i = 0; i < nf; i++) {
        vals += vlen(fv[2 * i + 1].len) + fv[2 * i + 1].len;
        pairs += vlen(fv[2 * i].len) + fv[2 * i].len;
    }
    pairs += vals;
    /* the id part is at most 1 + 10 + 10 bytes */
    if (t == NULL || t->n >= STREAM_NODE_MAX_ENTRIES ||
        (t->n > 0 && t->len + 21 + pairs > STREAM_NODE_MAX_BYTES)) {
        if (t != NULL && t->cap > t->len) {
            node_resize(s, s->n - 1, t->len); /* a full node keeps no slack */
        }
        node_open(s, id, nf, fv, 21 + pairs);
        t = node_at(s, s->n - 1);
    }
    bool same = same_fields(t, nf, fv);
    uint64_t dms = id.ms - t->master.ms;
    uint64_t seq = dms == 0 ? id.seq - t->master.seq : id.seq;
    size_t need = 1 + vlen(dms) + vlen(seq) + (same ? vals : pairs);
    if (t->len + need > t->cap) {
        size_t cap = t->cap * 2;
        if (cap > STREAM_NODE_MAX_BYTES) {
            cap = STREAM_NODE_MAX_BYTES;
        }
        if (cap < t->len + need) {
            cap = t->len + need;
        }
        node_resize(s, s->n - 1, cap);
        t = node_at(s, s->n - 1);
    }
    uint8_t *p = t->d + t->len;
    *p++ = same ? SE_SAME : 0;
    p = vput(p, dms);
    p = vput(p, seq);
    if (!same) {
        p = vput(p, nf);
    }
    for (size_t i = 0; i < nf; i++) {
        for (int k = same ? 1 : 0; k < 2; k++) {
            const struct rv_str *x = &fv[2 * i + (size_t)k];
            p = vput(p, x->len);
            memcpy(p, x->p, x->len);
            p += x->len;
        }
    }
    t->len = (size_t)(p - t->d);
    t->n++;
    t->live++;
    t->last = id;
    s->length++;
    s->last_id = id;
    s->entries_added++;
}

/* Flags the entry at p of node i deleted; frees the node once empty. */
static void
entry_kill(struct stream *s, size_t i, const uint8_t *p)
{
    struct snode *nd = node_at(s, i);
    nd->d[p - nd->d] |= SE_DELETED;
    nd->live--;
    s->length--;
    if (nd->live == 0) {
        node_remove(s, i);
    }
}

bool
stream_delete(struct stream *s, struct sid id)
{
    long i = node_seek(s, id);
    if (i < 0) {
        return false;
    }
    const struct snode *nd = node_at(s, (size_t)i);
    if (sid_cmp(id, nd->last) > 0) {
        return false;
    }
    const uint8_t *p = node_first(nd);
    for (uint16_t k = 0; k < nd->n; k++) {
        struct sent e;
        entry_decode(nd, p, &e);
        int c = sid_cmp(e.id, id);
        if (c > 0) {
            break;
        }
        if (c == 0) {
            if (e.flags & SE_DELETED) {
                return false;
            }
            entry_kill(s, (size_t)i, p);
            if (sid_cmp(id, s->max_deleted) > 0) {
                s->max_deleted = id;
            }
            return true;
        }
        p = e.next;
    }
    return false;
}

/* Removes whole head nodes while keep(node) says so, within limit. */
typedef bool node_pred(const struct stream *s, const struct snode *nd, const void *arg);

static uint64_t
trim_nodes(struct stream *s, node_pred *drop, const void *arg, uint64_t limit)
{
    uint64_t removed = 0;
    while (s->n > 0) {
        const struct snode *nd = node_at(s, 0);
        if (!drop(s, nd, arg) || (limit && removed + nd->live > limit)) {
            break;
        }
        removed += nd->live;
        s->length -= nd->live;
        node_remove(s, 0);
    }
    return removed;
}

static bool
drop_maxlen(const struct stream *s, const struct snode *nd, const void *arg)
{
    return s->length - nd->live >= *(const uint64_t *)arg;
}

static bool
drop_minid(const struct stream *s, const struct snode *nd, const void *arg)
{
    (void)s;
    return sid_cmp(nd->last, *(const struct sid *)arg) < 0;
}

uint64_t
stream_trim_maxlen(struct stream *s, uint64_t maxlen, bool approx, uint64_t limit)
{
    if (s->length <= maxlen) {
        return 0;
    }
    uint64_t removed = trim_nodes(s, drop_maxlen, &maxlen, approx ? limit : 0);
    if (approx || s->n == 0) {
        return removed;
    }
    /* exact: flag entries of the first node until the length is maxlen */
    const struct snode *nd = node_at(s, 0);
    const uint8_t *p = node_first(nd);
    for (uint16_t k = 0; k < nd->n && s->length > maxlen; k++) {
        struct sent e;
        entry_decode(nd, p, &e);
        if (!(e.flags & SE_DELETED)) {
            entry_kill(s, 0, p); /* the node keeps live entries: length > maxlen */
            removed++;
        }
        p = e.next;
    }
    return removed;
}

uint64_t
stream_trim_minid(struct stream *s, struct sid minid, bool approx, uint64_t limit)
{
    uint64_t removed = trim_nodes(s, drop_minid, &minid, approx ? limit : 0);
    /* exact: flag the first node's entries below minid; a node emptied so
     * (its last id was stale after XDEL) is freed and the next one done */
    bool gone = !approx;
    while (gone && s->n > 0) {
        const struct snode *nd = node_at(s, 0);
        const uint8_t *p = node_first(nd);
        gone = false;
        for (uint16_t k = 0, n = nd->n; k < n && !gone; k++) {
            struct sent e;
            entry_decode(nd, p, &e);
            if (sid_cmp(e.id, minid) >= 0) {
                break;
            }
            if (!(e.flags & SE_DELETED)) {
                gone = nd->live == 1;
                entry_kill(s, 0, p);
                removed++;
            }
            p = e.next;
        }
    }
    return removed;
}

/* ------------------------------------------------------------- iteration */

void
stream_it_init(struct stream_it *it, const struct stream *s, struct sid start, struct sid end,
               bool rev)
{
    memset(it, 0, offsetof(struct stream_it, off));
    it->s = s;
    it->start = start;
    it->end = end;
    it->rev = rev;
    long i = node_seek(s, rev ? end : start);
    if (rev) {
        it->node = (size_t)(i + 1); /* one past: decremented on entry */
    } else {
        it->node = i < 0 ? 0 : (size_t)i;
    }
    it->started = false;
}

static bool
it_load(struct stream_it *it)
{
    const struct stream *s = it->s;
    if (it->rev) {
        if (it->node == 0) {
            return false;
        }
        it->node--;
    } else if (it->started) {
        it->node++;
    }
    it->started = true;
    if (it->node >= s->n) {
        return false;
    }
    const struct snode *nd = node_at(s, it->node);
    const uint8_t *p = node_first(nd);
    /* forwards the entries are walked in place; backwards needs their offsets */
    it->off[0] = (size_t)(p - nd->d);
    for (uint16_t k = 0; it->rev && k < nd->n; k++) {
        struct sent e;
        it->off[k] = (size_t)(p - nd->d);
        entry_decode(nd, p, &e);
        p = e.next;
    }
    it->nent = nd->n;
    it->pos = it->rev ? nd->n - 1 : 0;
    return true;
}

bool
stream_it_next(struct stream_it *it)
{
    if (!it->started && !it_load(it)) {
        return false;
    }
    for (;;) {
        if (it->pos < 0 || it->pos >= it->nent) {
            if (!it_load(it)) {
                return false;
            }
            continue;
        }
        const struct snode *nd = node_at(it->s, it->node);
        struct sent e;
        if (it->rev) {
            entry_decode(nd, nd->d + it->off[it->pos--], &e);
        } else {
            entry_decode(nd, nd->d + it->off[0], &e);
            it->off[0] = (size_t)(e.next - nd->d);
            it->pos++;
        }
        if (it->rev ? sid_cmp(e.id, it->start) < 0 : sid_cmp(e.id, it->end) > 0) {
            it->nent = 0;
            it->node = it->rev ? 0 : it->s->n; /* done */
            return false;
        }
        if ((e.flags & SE_DELETED) ||
            (it->rev ? sid_cmp(e.id, it->end) > 0 : sid_cmp(e.id, it->start) < 0)) {
            continue;
        }
        it->id = e.id;
        it->nf = e.nf;
        it->p = e.fv;
        it->same = (e.flags & SE_SAME) != 0;
        if (it->same) {
            node_nfields(nd, &it->names);
        }
        return true;
    }
}

void
stream_it_fields(const struct stream_it *it, stream_fv_fn *fn, void *arg)
{
    const uint8_t *p = it->p, *names = it->names;
    for (size_t i = 0; i < it->nf; i++) {
        struct rv_str f, v;
        if (it->same) {
            names = sget(names, &f);
        } else {
            p = sget(p, &f);
        }
        p = sget(p, &v);
        fn(arg, f, v);
    }
}

/* ------------------------------------------------------------- obj_ops */

static const char *
stream_encoding_op(const struct ks_entry *e)
{
    (void)e;
    return "stream";
}

static size_t
stream_mem_op(const struct ks_entry *e)
{
    return stream_mem(ks_entry_ptr(e));
}

static size_t
stream_effort_op(const struct ks_entry *e)
{
    const struct stream *s = ks_entry_ptr(e);
    return s->n + (s->groups != NULL ? 1 : 0);
}

static void *
stream_dup_op(const struct ks_entry *e)
{
    return stream_dup(ks_entry_ptr(e));
}

/* One XADD per entry: argv grows with the entry's fields. */
struct emit_ctx {
    struct rv_str *av;
    size_t n, cap;
};

static void
emit_fv(void *arg, struct rv_str f, struct rv_str v)
{
    struct emit_ctx *x = arg;
    if (x->n + 2 > x->cap) {
        x->cap = x->cap * 2 + 8;
        x->av = rv_realloc(x->av, x->cap * sizeof(*x->av));
    }
    x->av[x->n++] = f;
    x->av[x->n++] = v;
}

/* XADD key id f v ... for each entry (or XADD key MAXLEN 0 id x y for an
 * empty stream, so that the key exists), then XSETID with the metadata. */
static void
stream_emit_op(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    const struct stream *s = ks_entry_ptr(e);
    struct rv_str key = ks_entry_key(e);
    struct emit_ctx x = { NULL, 0, 0 };
    char id[STREAM_ID_MAX], last[STREAM_ID_MAX], del[STREAM_ID_MAX], added[24];
    struct stream_it it;

    if (s->length == 0) {
        struct sid l = s->last_id;
        if (l.ms == 0 && l.seq == 0) {
            l.seq = 1; /* XADD refuses 0-0; XSETID puts it back */
        }
        struct rv_str av[7] = { { "XADD", 4 },          key,        { "MAXLEN", 6 }, { "0", 1 },
                                { id, sid_fmt(l, id) }, { "x", 1 }, { "y", 1 } };
        fn(arg, 7, av);
    }
    stream_it_init(&it, s, (struct sid){ 0, 0 }, (struct sid){ UINT64_MAX, UINT64_MAX }, false);
    while (stream_it_next(&it)) {
        x.n = 0;
        emit_fv(&x, (struct rv_str){ "XADD", 4 }, key);
        x.av[x.n++] = (struct rv_str){ id, sid_fmt(it.id, id) }; /* cap >= 8 */
        stream_it_fields(&it, emit_fv, &x);
        fn(arg, (int)x.n, x.av);
    }
    rv_free(x.av);
    struct rv_str av[7] = {
        { "XSETID", 6 },
        key,
        { last, sid_fmt(s->last_id, last) },
        { "ENTRIESADDED", 12 },
        { added, (size_t)snprintf(added, sizeof(added), "%" PRIu64, s->entries_added) },
        { "MAXDELETEDID", 12 },
        { del, sid_fmt(s->max_deleted, del) },
    };
    fn(arg, 7, av);
    sg_set_emit(s->groups, key, fn, arg);
}

const struct obj_ops obj_stream_ops = {
    .type_name = "stream",
    .encoding = stream_encoding_op,
    .mem = stream_mem_op,
    .dup = stream_dup_op,
    .free = stream_free,
    .emit = stream_emit_op,
    .effort = stream_effort_op,
};
