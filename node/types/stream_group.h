/* node/types/stream_group.h: a stream's consumer groups, their consumers and
 * pending entries lists (PELs); the commands are node/commands/t_stream_group.c.
 *
 * Layout: a stream's groups sit in an array sorted by name, and each group's
 * consumers in an array sorted by name (Redis's rax order: bytes, a prefix
 * first). A pending entry (struct sg_nack) is one allocation owned by its
 * group's PEL, an array of pointers sorted by id; its consumer's PEL is a
 * second sorted array of the same pointers. Deliveries append (ids grow)
 * and acknowledgements mostly remove the oldest, so each array keeps free
 * room at its head too (pel points into base): both are O(1) amortised,
 * other inserts and removals move the shorter side, lookups are O(log n).
 *
 * The structs are visible to the command module only: the rest of Ruvio
 * sees groups through stream_* (stream.h) and these calls. */
#pragma once
#include "node/types/obj.h"
#include "node/types/stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_INVALID_READ (-1) /* entries_read unknown (Redis's SCG_INVALID_ENTRIES_READ) */

struct sg_consumer;

struct sg_nack {
    struct sid id;
    int64_t delivery_ms;
    uint64_t count;
    struct sg_consumer *owner;
};

/* A sorted array of pending entries: pel[0..npel) inside base[0..cap). */
struct sg_pel {
    struct sg_nack **pel, **base;
    size_t npel, cap;
};

struct sg_consumer {
    char *name;
    size_t nlen;
    /* seen: its last read or claim attempt; active: its last one that got
     * entries (Redis 7.2's active-time; -1: never). XINFO shows Redis 7.0's
     * fields, so active_ms is kept (and rebuilt) but not shown yet. */
    int64_t seen_ms, active_ms;
    struct sg_pel p;
};

struct sg_group {
    char *name;
    size_t nlen;
    struct sid last_id;
    int64_t entries_read;
    struct sg_pel p;
    struct sg_consumer **cons;
    size_t ncons, ccap;
};

/* A stream's groups (NULL until the first XGROUP CREATE). */
struct sg_set {
    struct sg_group **v;
    size_t n, cap;
};

void sg_set_free(struct sg_set *gs); /* NULL is a no-op */
struct sg_set *sg_set_dup(const struct sg_set *gs);
size_t sg_set_mem(const struct sg_set *gs);

struct sg_group *sg_find(const struct sg_set *gs, struct rv_str name);
/* NULL when a group of that name exists. *gs is created on demand. */
struct sg_group *sg_create(struct sg_set **gs, struct rv_str name, struct sid last,
                           int64_t entries_read);
bool sg_destroy(struct sg_set *gs, struct rv_str name);

struct sg_consumer *sg_consumer_find(const struct sg_group *g, struct rv_str name);
/* Creates the consumer when missing (*created true then). */
struct sg_consumer *sg_consumer_get(struct sg_group *g, struct rv_str name, int64_t now,
                                    bool *created);
/* Deletes the consumer and its pending entries; returns how many it had. */
size_t sg_consumer_delete(struct sg_group *g, struct sg_consumer *c);

/* Index of the first entry of a sorted PEL with id >= id. */
size_t sg_pel_lower(struct sg_nack *const *pel, size_t n, struct sid id);
struct sg_nack *sg_pel_find(const struct sg_group *g, struct sid id);
/* Adds a pending entry for id owned by c (moving it when another owns it). */
struct sg_nack *sg_pel_add(struct sg_group *g, struct sg_consumer *c, struct sid id, int64_t now,
                           uint64_t count);
/* Moves n to consumer c. */
void sg_pel_move(struct sg_group *g, struct sg_nack *n, struct sg_consumer *c);
/* Removes and frees n. */
void sg_pel_remove(struct sg_group *g, struct sg_nack *n);

/* The rebuild commands of the groups (after the stream's XSETID):
 * XGROUPLOAD key group last-id entries-read [consumer seen-ms active-ms
 * [id delivery-ms delivery-count ...]]. */
void sg_set_emit(const struct sg_set *gs, struct rv_str key, obj_emit_fn *fn, void *arg);
