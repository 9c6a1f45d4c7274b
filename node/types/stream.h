/* node/types/stream.h: the stream object (XADD, XRANGE, ... are in
 * node/commands/t_stream.c).
 *
 * Layout: entries are packed into nodes of at most STREAM_NODE_MAX_ENTRIES
 * entries or about STREAM_NODE_MAX_BYTES bytes (Redis's defaults). A node is
 * one allocation: its first entry's id (the master id), its last id, counts,
 * then bytes: the master field names, then entries. Each entry is a flags
 * byte, its id as varints relative to the master id, then either only its
 * values (when its field names are the master's, the common case) or its own
 * field count and field/value pairs. XDEL flags an entry deleted in place; a
 * node whose entries are all deleted is freed. Nodes sit in an array sorted
 * by id (binary search: O(log n) seek; appends and head trims are O(1)).
 *
 * The stream also keeps Redis's metadata: last id, max deleted id, entries
 * added, and its consumer groups (node/types/stream_group.h). */
#pragma once
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAM_NODE_MAX_ENTRIES 100
#define STREAM_NODE_MAX_BYTES 4096
#define STREAM_ID_MAX 42 /* "18446744073709551615-18446744073709551615" + NUL */

struct sid {
    uint64_t ms, seq;
};

static inline int
sid_cmp(struct sid a, struct sid b)
{
    if (a.ms != b.ms) {
        return a.ms < b.ms ? -1 : 1;
    }
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

/* Formats "ms-seq" into out (STREAM_ID_MAX bytes); returns its length. */
size_t sid_fmt(struct sid id, char *out);
/* id + 1 / id - 1; false at the maximum / 0-0. */
bool sid_incr(struct sid *id);
bool sid_decr(struct sid *id);

struct stream;

struct stream *stream_create(void);
void stream_free(void *s); /* ks_free_fn; NULL is a no-op */
struct stream *stream_dup(const struct stream *s);

uint64_t stream_len(const struct stream *s);
struct sid stream_last_id(const struct stream *s);
struct sid stream_max_deleted(const struct stream *s);
uint64_t stream_entries_added(const struct stream *s);
/* The first live entry's id; 0-0 when empty. */
struct sid stream_first_id(const struct stream *s);
void stream_set_meta(struct stream *s, struct sid last, struct sid max_deleted,
                     uint64_t entries_added);
size_t stream_mem(const struct stream *s); /* bytes allocated */
size_t stream_nodes(const struct stream *s);
/* The consumer groups (stream_group.h): NULL until the first is created. */
struct sg_set;
struct sg_set **stream_groups(struct stream *s);
const struct sg_set *stream_groups_const(const struct stream *s);
/* true when the entry id is in the stream (not deleted). */
bool stream_has(const struct stream *s, struct sid id);

/* Appends id (which the caller checked is above the last id) with nf
 * field/value pairs fv[0..2nf). */
void stream_append(struct stream *s, struct sid id, size_t nf, const struct rv_str *fv);
/* true when id was present and is now deleted. */
bool stream_delete(struct stream *s, struct sid id);

/* Trims from the head; returns the number of entries removed. approx removes
 * only whole nodes; limit (0 = none) caps the entries removed when approx. */
uint64_t stream_trim_maxlen(struct stream *s, uint64_t maxlen, bool approx, uint64_t limit);
uint64_t stream_trim_minid(struct stream *s, struct sid minid, bool approx, uint64_t limit);

/* Walks the live entries with ids in [start, end], forwards or backwards.
 * The views are valid until the stream changes. */
struct stream_it {
    const struct stream *s;
    struct sid start, end;
    bool rev;
    size_t node;  /* index into the node array (relative) */
    int pos;      /* entry index within the node's decoded offsets */
    int nent;     /* decoded entries of the current node */
    bool started; /* current node decoded */
    size_t off
        [STREAM_NODE_MAX_ENTRIES]; /* backwards: the node's entries; forwards: off[0] is the next */
    /* the current entry */
    struct sid id;
    size_t nf;
    const uint8_t *p; /* its fields/values */
    bool same;        /* values only: names are the master's */
    const uint8_t *names;
};
void stream_it_init(struct stream_it *it, const struct stream *s, struct sid start, struct sid end,
                    bool rev);
/* The next entry; false at the end. */
bool stream_it_next(struct stream_it *it);
/* The current entry's field/value pairs, in order (fn called nf times). */
typedef void stream_fv_fn(void *arg, struct rv_str f, struct rv_str v);
void stream_it_fields(const struct stream_it *it, stream_fv_fn *fn, void *arg);

extern const struct obj_ops obj_stream_ops;
