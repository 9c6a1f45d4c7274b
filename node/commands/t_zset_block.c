/* node/commands/t_zset_block.c: BZPOPMIN, BZPOPMAX and BZMPOP: serve at once with the
 * sorted-set pop helper, or wait (node/features/block.h) and re-run when woken. One
 * that is served is logged as the ZPOPMIN/ZPOPMAX it became (node/core/effect.h). */
#include "node/features/block.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/commands/t_zset.h"

#define BLOCK_MAX_KEYS 1024

/* true when key holds a sorted set; false with nothing replied when absent;
 * *wrong after a WRONGTYPE reply. */
static bool
zset_at(struct conn *c, struct rv_str key, bool *wrong)
{
    struct ks_entry *e = lookup_write(c, key);
    *wrong = false;
    if (e == NULL) {
        return false;
    }
    if (ks_entry_type(e) != KS_ZSET) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *wrong = true;
        return false;
    }
    return true;
}

/* BZPOPMIN/BZPOPMAX key [key ...] timeout */
static void
bzpop(struct conn *c, int argc, struct rv_str *argv, bool max)
{
    int64_t deadline;
    int keys[BLOCK_MAX_KEYS];
    int n = 0;
    bool wrong;

    if (!block_parse_timeout(c, argv[argc - 1], &deadline)) {
        return;
    }
    for (int i = 1; i < argc - 1; i++) {
        if (zset_at(c, argv[i], &wrong)) {
            effect_redo(c, max ? "ZPOPMAX" : "ZPOPMIN", argv[i]);
            zset_pop_reply(c, argv[i], max, 1, ZSET_POP_KEYED);
            return;
        }
        if (wrong) {
            return;
        }
        if (n < BLOCK_MAX_KEYS) {
            keys[n++] = i;
        }
    }
    block_wait(c, c->last_cmd, argc, argv, keys, n, deadline, BLOCK_REPLY_NULL_ARRAY);
}

CMD_HANDLER(bzpopmin)
{
    bzpop(c, argc, argv, false);
}

CMD_HANDLER(bzpopmax)
{
    bzpop(c, argc, argv, true);
}

int
zset_bzmpop_keys(int argc, struct rv_str *argv, int *out, int max)
{
    int n = zset_getkeys_numkeys(argc - 1, argv + 1, out, max);
    for (int i = 0; i < n; i++) {
        out[i]++;
    }
    return n;
}

/* BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count] */
CMD_HANDLER(bzmpop)
{
    int64_t deadline, count;
    int nk, which;
    int keys[BLOCK_MAX_KEYS];
    bool wrong;

    if (!block_parse_timeout(c, argv[1], &deadline) ||
        !cmd_parse_mpop(c, argc, argv, 2, "min", "max", &nk, &which, &count)) {
        return;
    }
    if (nk > BLOCK_MAX_KEYS) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int i = 0; i < nk; i++) {
        if (zset_at(c, argv[3 + i], &wrong)) {
            effect_redo(c, which == 1 ? "ZPOPMAX" : "ZPOPMIN", argv[3 + i]);
            effect_arg_i64(c, count);
            reply_array(c, 2);
            reply_bulk(c, argv[3 + i].p, argv[3 + i].len);
            zset_pop_reply(c, argv[3 + i], which == 1, (size_t)count, ZSET_POP_PAIRS);
            return;
        }
        if (wrong) {
            return;
        }
        keys[i] = 3 + i;
    }
    block_wait(c, c->last_cmd, argc, argv, keys, nk, deadline, BLOCK_REPLY_NULL_ARRAY);
}
