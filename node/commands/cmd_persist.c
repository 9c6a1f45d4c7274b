/* node/commands/cmd_persist.c: SAVE, BGSAVE, BGREWRITEAOF and LASTSAVE. Checkpoints are
 * node/persist/snap.c; BGREWRITEAOF starts one too, the WAL being ruvio's append-only file. */
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/persist/snap.h"

CMD_HANDLER(save)
{
    char err[512];
    if (snap_save(c->shard, err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_ok(c);
}

static void
bg_start(struct conn *c, const char *ok)
{
    char err[512];
    if (snap_bgsave(c->shard, err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_simple(c, ok);
}

CMD_HANDLER(bgsave)
{
    if (argc > 2 || (argc == 2 && !cmd_arg_is(argv[1], "schedule"))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bg_start(c, "Background saving started");
}

CMD_HANDLER(bgrewriteaof)
{
    bg_start(c, "Background append only file rewriting started");
}

CMD_HANDLER(lastsave)
{
    reply_int(c, snap_lastsave_ms(c->shard) / 1000);
}
