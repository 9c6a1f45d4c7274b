/* node/types/zset_enc.h: sorted-set storage, ordered by (score, member bytes).
 *
 * Two encodings, as OBJECT ENCODING reports them:
 *  - "listpack": one packed byte array of entries [varint len][member][score],
 *    sorted. Integral scores below 2^53 are stored as zigzag varints (1 byte
 *    for small ones), others as a tag and 8 raw bytes.
 *  - "skiplist": an order-statistic B+tree whose leaves are packed arrays in
 *    the same entry format (no per-element node), with per-child counts in the
 *    inner nodes for O(log n) rank, plus a dict member -> score for O(1) score
 *    lookups.
 * A set starts packed and converts once it passes the thresholds (never back).
 *
 * Member views returned by lookups and iterators point into the set and are
 * valid until the next modification of that set. */
#pragma once
#include "node/types/obj.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks;
struct ks_entry;

/* A sorted set as commands and tests handle it: standalone on the heap
 * (zset_create), or on a command's stack bound to a keyspace entry
 * (zset_bind). In the keyspace a packed set is stored inline in its entry
 * (ks_set_inl) and a tree is a pointer to it; a bound handle follows the
 * entry when the packed buffer grows, and re-stores the key when the set
 * converts. */
struct zset {
    uint8_t enc;
    void *p;       /* the packed buffer or the tree */
    struct ks *ks; /* bound: p (packed) is e's inline value; NULL standalone */
    struct ks_entry *e;
};

/* zset-max-listpack-entries / zset-max-listpack-value. */
struct zset_lim {
    int64_t entries;
    int64_t value;
};

/* A monotonic predicate over the order: false for a prefix, true after. */
typedef bool zset_pred_fn(const void *arg, double score, const char *m, size_t mlen);

struct zset *zset_create(void);    /* standalone, empty, packed */
void zset_destroy(struct zset *z); /* standalone only; NULL is a no-op */
void zset_tree_free(void *tree);   /* ks_free_fn of a stored tree */
/* Binds z to sorted-set entry e of ks (ks NULL: read only). */
void zset_bind(struct zset *z, struct ks *ks, struct ks_entry *e);
/* Stores standalone z at key (replacing it, no deadline) and frees z. */
void zset_store(struct zset *z, struct ks *ks, const char *key, size_t klen);
struct zset *zset_dup(const struct zset *z); /* standalone copy */
size_t zset_mem(const struct zset *z);       /* bytes outside the keyspace entry */
const char *zset_encoding(const struct zset *z);
size_t zset_len(const struct zset *z);
bool zset_is_packed(const struct zset *z);
/* Convert a packed set to the tree form (no-op when already there). */
void zset_convert(struct zset *z);

/* Score of member; false when absent. */
bool zset_score(struct zset *z, const char *m, size_t mlen, double *out);
/* Insert a member that is not present; converts first when lim says so. */
void zset_insert(struct zset *z, const char *m, size_t mlen, double score,
                 const struct zset_lim *lim);
/* Change the score of a present member from old to score. */
void zset_update(struct zset *z, const char *m, size_t mlen, double old, double score);
/* Remove member; false when absent. */
bool zset_delete(struct zset *z, const char *m, size_t mlen);
/* Remove the elements of ranks [start, end] (0-based, inclusive, in range). */
void zset_delete_range(struct zset *z, size_t start, size_t end);

/* Number of elements for which pred is false (the rank where it turns true). */
size_t zset_lower(const struct zset *z, zset_pred_fn *pred, const void *arg);
/* 0-based rank of a present member with the given score. */
size_t zset_rank(const struct zset *z, const char *m, size_t mlen, double score);

/* Iterator over ranks; the set must not change while it is in use. */
struct zset_it {
    const struct zset *z;
    size_t rank;              /* rank of the current element */
    const unsigned char *seg; /* current packed segment (entries) */
    uint32_t segn;            /* entries in it */
    uint32_t idx;             /* index of the current entry in seg */
    uint32_t off;             /* byte offset of the current entry */
    uint32_t *offs;           /* entry offsets of seg, built for reverse steps */
    uint32_t offs_cap;
    bool offs_ok;
    int depth; /* tree: inner levels on the path */
    void *path[16];
    uint32_t pidx[16];
};
/* Position at rank (< zset_len). */
void zset_it_init(struct zset_it *it, const struct zset *z, size_t rank);
void zset_it_get(const struct zset_it *it, struct rv_str *m, double *score);
/* Step; false past either end. */
bool zset_it_next(struct zset_it *it);
bool zset_it_prev(struct zset_it *it);
void zset_it_done(struct zset_it *it);

/* Walk the tree form's dict (ZSCAN); packed sets are visited whole by the caller. */
typedef void zset_scan_fn(void *arg, struct rv_str m, double score);
uint64_t zset_scan(struct zset *z, uint64_t cursor, size_t count, zset_scan_fn *fn, void *arg);
/* A uniformly random element (set not empty). */
void zset_random(const struct zset *z, uint64_t rnd, struct rv_str *m, double *score);
/* Internal consistency check for tests: counts, order, dict agreement. */
bool zset_check(const struct zset *z);

/* How the keyspace stores, copies, frees and rebuilds a sorted set. */
extern const struct obj_ops obj_zset_ops;

/* ---- ranges (ZRANGEBYSCORE, ZRANGEBYLEX, ZCOUNT, ...) ---- */
/* A score range; ex: the bound itself is excluded. */
struct zset_srange {
    double min, max;
    bool minex, maxex;
};

/* One end of a lex range: "-", "+", or a member, inclusive or not. */
struct zset_lbound {
    int inf; /* -1: "-", +1: "+", 0: a member */
    bool ex;
    struct rv_str m;
};

struct zset_lrange {
    struct zset_lbound min, max;
};

/* [lo, hi) ranks of the elements inside a score (lex) range. */
void zset_srange_ranks(const struct zset *z, const struct zset_srange *r, size_t *lo, size_t *hi);
void zset_lrange_ranks(const struct zset *z, const struct zset_lrange *r, size_t *lo, size_t *hi);
