/* node/commands/t_zset.h: sorted-set command handlers (t_zset.c), and the pop helper the
 * blocking variants (BZPOPMIN, BZPOPMAX, BZMPOP) reuse. */
#pragma once
#include "node/core/cmd.h"
#include "node/commands/cmds.h"

#include <stdbool.h>
#include <stddef.h>

CMD_HANDLER(zadd);
CMD_HANDLER(zincrby);
CMD_HANDLER(zrem);
CMD_HANDLER(zcard);
CMD_HANDLER(zscore);
CMD_HANDLER(zmscore);
CMD_HANDLER(zrank);
CMD_HANDLER(zrevrank);
CMD_HANDLER(zrange);
CMD_HANDLER(zrangebyscore);
CMD_HANDLER(zrevrangebyscore);
CMD_HANDLER(zrangebylex);
CMD_HANDLER(zrevrangebylex);
CMD_HANDLER(zrevrange);
CMD_HANDLER(zcount);
CMD_HANDLER(zlexcount);
CMD_HANDLER(zpopmin);
CMD_HANDLER(zpopmax);
CMD_HANDLER(zmpop);
CMD_HANDLER(zremrangebyrank);
CMD_HANDLER(zremrangebyscore);
CMD_HANDLER(zremrangebylex);
CMD_HANDLER(zrangestore);
CMD_HANDLER(zunion);
CMD_HANDLER(zinter);
CMD_HANDLER(zdiff);
CMD_HANDLER(zunionstore);
CMD_HANDLER(zinterstore);
CMD_HANDLER(zdiffstore);
CMD_HANDLER(zintercard);
CMD_HANDLER(zrandmember);
CMD_HANDLER(zscan);

/* Key positions of "numkeys key [key ...]" commands (ZUNION, ZINTER, ZDIFF,
 * ZINTERCARD, ZMPOP) and of their STORE forms (destination first). */
int zset_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max);
int zset_getkeys_store(int argc, struct rv_str *argv, int *out, int max);

enum zset_pop_form {
    ZSET_POP_FLAT,  /* member, score, member, score, ... */
    ZSET_POP_PAIRS, /* [member, score] pairs */
    ZSET_POP_KEYED, /* [key, member, score] for one element (BZPOPMIN/BZPOPMAX) */
};
/* Pop up to count elements from the min (or max) end of the sorted set at key,
 * which must exist and hold a zset, replying with an array of them in form;
 * the key is deleted when it becomes empty. Returns how many were popped. */
size_t zset_pop_reply(struct conn *c, struct rv_str key, bool max, size_t count,
                      enum zset_pop_form form);
