/* node/types/list.h: the list object (the commands are node/commands/t_list.c).
 *
 * A list is one small object (struct list, 8 bytes) that the keyspace points
 * to and that never moves while the key exists. It holds either
 *   - one listpack with all elements (OBJECT ENCODING "listpack"), while the
 *     list fits the per-node limit of list-max-listpack-size, or
 *   - a quicklist: a doubly linked list of nodes, each a listpack bounded by
 *     the same limit ("quicklist"). Push/pop at both ends are O(1); access by
 *     index is O(nodes + node size), walking from the nearer end.
 * A list converts to the quicklist when it outgrows one node, and never back.
 *
 * `fill` arguments are list-max-listpack-size: > 0 elements per node (and at
 * most 8 KiB unless the node holds one element), -1..-5 a byte limit of
 * 4/8/16/32/64 KiB per node; the caller passes it (the commands read it from
 * the configuration). */
#pragma once
#include "node/types/listpack.h"
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct list;

enum list_end { LIST_HEAD = 0, LIST_TAIL = 1 };

struct list *list_create(void);
void list_destroy(void *l); /* ks_free_fn; NULL is a no-op */
struct list *list_dup(const struct list *l);
size_t list_len(const struct list *l);
bool list_is_quicklist(const struct list *l);
size_t list_nodes(const struct list *l); /* 1 for the listpack encoding */
size_t list_mem(const struct list *l);   /* allocated bytes, object included */
void list_push(struct list *l, enum list_end end, const char *s, size_t n, int64_t fill);
/* Read the element at index (negative from the tail); false when out of range.
 * A string result is a view valid until the list changes. */
bool list_index(const struct list *l, int64_t index, struct lp_val *out);
/* Replace the element at index; false when out of range. */
bool list_set(struct list *l, int64_t index, const char *s, size_t n, int64_t fill);
/* Remove n elements from one end (fewer if the list is shorter). */
void list_drop(struct list *l, enum list_end end, size_t n);
/* Structural check for tests: counts, node limits and every listpack. */
bool list_valid(const struct list *l, int64_t fill);

/* Delete n elements starting at index start (0 <= start < len). */
void list_del_range(struct list *l, size_t start, size_t n);

/* A position in either encoding, on the caller's stack: node is NULL for the
 * listpack encoding. The list must change only through the iterator while
 * it is in use. */
struct qnode;
struct lit {
    struct list *l;
    struct qnode *node;
    uint8_t *p; /* current element (listpack entry); NULL past either end */
};
/* Position at index (0 <= index < len), walking from the nearer end. */
void lit_seek(struct lit *it, struct list *l, int64_t index);
void lit_next(struct lit *it);
void lit_prev(struct lit *it);
/* Delete the current element; move to the following one (forward) or the
 * preceding one. An emptied node is freed; an emptied listpack encoding stays
 * (the caller deletes the key). */
void lit_delete(struct lit *it, bool forward);
/* Insert s before (or after) the current element. */
void lit_insert(struct lit *it, bool after, const char *s, size_t n, int64_t fill);

extern const struct obj_ops obj_list_ops;
