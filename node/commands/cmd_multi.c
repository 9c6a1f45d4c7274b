/* node/commands/cmd_multi.c: MULTI, EXEC, DISCARD, WATCH and UNWATCH. Transactions and
 * watches are node/features/multi.c. */
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/features/multi.h"

CMD_HANDLER(watch)
{
    if (c->flags & CONN_MULTI) {
        reply_errf(c, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    multi_watch(c, argc - 1, argv + 1);
    reply_ok(c);
}

CMD_HANDLER(unwatch)
{
    multi_unwatch(c);
    reply_ok(c);
}

CMD_HANDLER(multi)
{
    if (c->flags & CONN_MULTI) {
        reply_errf(c, "ERR MULTI calls can not be nested");
        return;
    }
    multi_begin(c);
    reply_ok(c);
}

CMD_HANDLER(discard)
{
    if (!(c->flags & CONN_MULTI)) {
        reply_errf(c, "ERR DISCARD without MULTI");
        return;
    }
    multi_release(c);
    reply_ok(c);
}

CMD_HANDLER(exec)
{
    if (!(c->flags & CONN_MULTI)) {
        reply_errf(c, "ERR EXEC without MULTI");
        return;
    }
    switch (multi_exec_check(c)) {
    case MULTI_RUN: multi_exec_run(c); return;
    case MULTI_HELD: return;
    case MULTI_OOM:
        reply_errf(c, "EXECABORT Transaction discarded because of: %s",
                   rv_client_err_text[RV_ERR_OOM]);
        break;
    case MULTI_STALE:
        reply_errf(c, "EXECABORT Transaction discarded because of: MASTERDOWN Link with MASTER "
                      "is down and replica-serve-stale-data is set to 'no'.");
        break;
    case MULTI_ABORTED:
        reply_errf(c, "EXECABORT Transaction discarded because of previous errors.");
        break;
    case MULTI_WATCH_FAILED: reply_null_array(c); break;
    }
    multi_release(c);
}
