/* node/commands/t_list.h: the non-blocking list commands; the list object is
 * node/types/list.h. The pop/move helpers are what the blocking commands
 * (BLPOP, ...) use once a key they wait for has elements. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/list.h"

struct conn;

/* ---- command-level helpers shared with the blocking commands ---- */
enum list_reply {
    LIST_REPLY_ONE,       /* bulk string (LPOP key) */
    LIST_REPLY_ARRAY,     /* array of elements (LPOP key count) */
    LIST_REPLY_KEY_ONE,   /* [key, element] (BLPOP) */
    LIST_REPLY_KEY_ARRAY, /* [key, [elements]] (LMPOP, BLMPOP) */
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

CMD_HANDLER(lpush);
CMD_HANDLER(rpush);
CMD_HANDLER(lpushx);
CMD_HANDLER(rpushx);
CMD_HANDLER(lpop);
CMD_HANDLER(rpop);
CMD_HANDLER(llen);
CMD_HANDLER(lrange);
CMD_HANDLER(lindex);
CMD_HANDLER(lset);
CMD_HANDLER(linsert);
CMD_HANDLER(lrem);
CMD_HANDLER(ltrim);
CMD_HANDLER(lpos);
CMD_HANDLER(lmove);
CMD_HANDLER(rpoplpush);
CMD_HANDLER(lmpop);
