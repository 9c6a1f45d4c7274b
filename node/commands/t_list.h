/* node/commands/t_list.h: the list type and its commands.
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
 * 4/8/16/32/64 KiB per node.
 *
 * The pop/move helpers at the end are what the blocking commands (BLPOP, ...)
 * use once a key they wait for has elements. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/listpack.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct list;

enum list_end { LIST_HEAD = 0, LIST_TAIL = 1 };

/* ---- the data structure (no connection needed; unit-tested directly) ---- */
struct list *list_create(void);
void list_destroy(void *l);                         /* ks_free_fn; NULL is a no-op */
struct list *list_dup(const struct list *l);
size_t list_len(const struct list *l);
bool list_is_quicklist(const struct list *l);
size_t list_nodes(const struct list *l);            /* 1 for the listpack encoding */
size_t list_mem(const struct list *l);              /* allocated bytes, object included */
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

/* ---- command-level helpers shared with the blocking commands ---- */
enum list_reply {
    LIST_REPLY_ONE,         /* bulk string (LPOP key) */
    LIST_REPLY_ARRAY,       /* array of elements (LPOP key count) */
    LIST_REPLY_KEY_ONE,     /* [key, element] (BLPOP) */
    LIST_REPLY_KEY_ARRAY,   /* [key, [elements]] (LMPOP, BLMPOP) */
};
/* Pop up to count elements (1 for the *_ONE shapes) from the non-empty list l
 * stored at key, reply in the given shape, and delete the key once empty. */
void list_pop_reply(struct conn *c, struct rv_str key, struct list *l, enum list_end end,
                    size_t count, enum list_reply shape);
/* LMOVE's work once src holds the non-empty list sl: checks dst's type
 * (WRONGTYPE reply, nothing moved, returns false), moves one element from
 * sl's `from` end to dst's `to` end (creating dst), replies with it and
 * deletes src if it became empty. */
bool list_move_reply(struct conn *c, struct rv_str src, struct list *sl, struct rv_str dst,
                     enum list_end from, enum list_end to);

/* getkeys for LMPOP: "LMPOP numkeys key [key ...] ..." (keys from argv[2]). */
int list_lmpop_keys(int argc, struct rv_str *argv, int *out, int max);

CMD_HANDLER(lpush); CMD_HANDLER(rpush); CMD_HANDLER(lpushx); CMD_HANDLER(rpushx);
CMD_HANDLER(lpop); CMD_HANDLER(rpop); CMD_HANDLER(llen); CMD_HANDLER(lrange);
CMD_HANDLER(lindex); CMD_HANDLER(lset); CMD_HANDLER(linsert); CMD_HANDLER(lrem);
CMD_HANDLER(ltrim); CMD_HANDLER(lpos); CMD_HANDLER(lmove); CMD_HANDLER(rpoplpush);
CMD_HANDLER(lmpop);
