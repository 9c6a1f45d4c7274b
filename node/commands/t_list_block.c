/* node/commands/t_list_block.c: the blocking list commands. Each tries to serve at
 * once with the list helpers of t_list.c and otherwise waits (node/features/block.h);
 * a wake-up re-runs the same handler. One that is served is logged as the plain
 * command it became (node/core/effect.h). */
#include "node/features/block.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/commands/t_list.h"

#define BLOCK_MAX_KEYS 1024

/* The list at key for a blocking pop: NULL when absent; false after a
 * WRONGTYPE reply. */
static bool
list_at(struct conn *c, struct rv_str key, struct list **l)
{
    struct ks_entry *e = lookup_write(c, key);
    *l = NULL;
    if (e == NULL) {
        return true;
    }
    if (ks_entry_type(e) != KS_LIST) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    *l = ks_entry_ptr(e);
    return true;
}

static bool
parse_end_arg(struct rv_str a, enum list_end *end)
{
    if (cmd_arg_is(a, "left")) {
        *end = LIST_HEAD;
    } else if (cmd_arg_is(a, "right")) {
        *end = LIST_TAIL;
    } else {
        return false;
    }
    return true;
}

/* BLPOP/BRPOP key [key ...] timeout */
static void
bpop(struct conn *c, int argc, struct rv_str *argv, enum list_end end)
{
    int64_t deadline;
    int keys[BLOCK_MAX_KEYS];
    int n = 0;

    if (!block_parse_timeout(c, argv[argc - 1], &deadline)) {
        return;
    }
    for (int i = 1; i < argc - 1; i++) {
        struct list *l;
        if (!list_at(c, argv[i], &l)) {
            return;
        }
        if (l != NULL) {
            effect_redo(c, end == LIST_HEAD ? "LPOP" : "RPOP", argv[i]);
            list_pop_reply(c, argv[i], l, end, 1, LIST_REPLY_KEY_ONE);
            return;
        }
        if (n < BLOCK_MAX_KEYS) {
            keys[n++] = i;
        }
    }
    block_wait(c, c->last_cmd, argc, argv, keys, n, deadline, BLOCK_REPLY_NULL_ARRAY);
}

CMD_HANDLER(blpop)
{
    bpop(c, argc, argv, LIST_HEAD);
}

CMD_HANDLER(brpop)
{
    bpop(c, argc, argv, LIST_TAIL);
}

static void
bmove(struct conn *c, int argc, struct rv_str *argv, enum list_end from, enum list_end to,
      struct rv_str timeout)
{
    int64_t deadline;
    struct list *l;
    int key = 1;

    if (!block_parse_timeout(c, timeout, &deadline) || !list_at(c, argv[1], &l)) {
        return;
    }
    if (l != NULL) {
        effect_redo(c, "LMOVE", argv[1]);
        effect_arg(c, argv[2].p, argv[2].len);
        effect_arg(c, from == LIST_HEAD ? "LEFT" : "RIGHT", from == LIST_HEAD ? 4 : 5);
        effect_arg(c, to == LIST_HEAD ? "LEFT" : "RIGHT", to == LIST_HEAD ? 4 : 5);
        list_move_reply(c, argv[1], l, argv[2], from, to);
        return;
    }
    block_wait(c, c->last_cmd, argc, argv, &key, 1, deadline, BLOCK_REPLY_NULL);
}

/* BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout */
CMD_HANDLER(blmove)
{
    enum list_end from, to;
    if (!parse_end_arg(argv[3], &from) || !parse_end_arg(argv[4], &to)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bmove(c, argc, argv, from, to, argv[5]);
}

/* BRPOPLPUSH source destination timeout */
CMD_HANDLER(brpoplpush)
{
    bmove(c, argc, argv, LIST_TAIL, LIST_HEAD, argv[3]);
}

/* "BLMPOP timeout numkeys key [key ...] ...": LMPOP's keys, one place later. */
int
list_blmpop_keys(int argc, struct rv_str *argv, int *out, int max)
{
    int n = list_lmpop_keys(argc - 1, argv + 1, out, max);
    for (int i = 0; i < n; i++) {
        out[i]++;
    }
    return n;
}

/* BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count] */
CMD_HANDLER(blmpop)
{
    int64_t deadline, count;
    int nk, which;
    int keys[BLOCK_MAX_KEYS];

    if (!block_parse_timeout(c, argv[1], &deadline) ||
        !cmd_parse_mpop(c, argc, argv, 2, "left", "right", &nk, &which, &count)) {
        return;
    }
    if (nk > BLOCK_MAX_KEYS) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int i = 0; i < nk; i++) {
        struct list *l;
        if (!list_at(c, argv[3 + i], &l)) {
            return;
        }
        if (l != NULL) {
            effect_redo(c, which ? "RPOP" : "LPOP", argv[3 + i]);
            effect_arg_i64(c, count);
            list_pop_reply(c, argv[3 + i], l, which ? LIST_TAIL : LIST_HEAD, (size_t)count,
                           LIST_REPLY_KEY_ARRAY);
            return;
        }
        keys[i] = 3 + i;
    }
    block_wait(c, c->last_cmd, argc, argv, keys, nk, deadline, BLOCK_REPLY_NULL_ARRAY);
}
