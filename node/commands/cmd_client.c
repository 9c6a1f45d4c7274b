/* node/commands/cmd_client.c: MONITOR, CLIENT PAUSE/UNPAUSE, CLIENT NO-TOUCH,
 * CLIENT TRACKING/CACHING/GETREDIR/TRACKINGINFO (the other CLIENT subcommands
 * are in cmd_conn.c). */
#include "node/commands/cmds.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/errs.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/monitor.h"
#include "node/features/pause.h"
#include "node/features/tracking.h"

void
cmd_monitor(struct conn *c, int argc, struct rv_str *argv)
{
    if (c->flags & CONN_IN_EXEC) {
        /* a transaction expects one reply per command, as Redis says */
        reply_errf(c, "ERR MONITOR isn't allowed for DENY BLOCKING client");
        return;
    }
    if (c->flags & CONN_MONITOR) {
        return; /* already: no reply, as Redis */
    }
    monitor_add(c);
    reply_ok(c);
}

/* CLIENT PAUSE timeout [WRITE | ALL] */
void
cmd_client_pause(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t ms;
    bool all = true;
    if (argc > 4) {
        reply_errf(c,
                   "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try CLIENT "
                   "HELP.",
                   (int)argv[1].len, argv[1].p); /* (the subcommand as sent, as Redis) */
        return;
    }
    if (argc == 4) {
        if (cmd_arg_is(argv[3], "write")) {
            all = false;
        } else if (!cmd_arg_is(argv[3], "all")) {
            reply_errf(c, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    }
    if (!cmd_arg_int(argv[2], &ms)) {
        reply_errf(c, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        reply_err(c, RV_ERR_TIMEOUT_NEG);
        return;
    }
    int64_t now = c->env->now_ms;
    pause_start(c->env, ms > INT64_MAX / 4 - now ? INT64_MAX / 4 : now + ms, all);
    reply_ok(c);
}

void
cmd_client_unpause(struct conn *c, int argc, struct rv_str *argv)
{
    pause_stop(c->env);
    reply_ok(c);
}

/* CLIENT NO-TOUCH ON|OFF: the client's reads leave keys' access clocks (LRU
 * idle time, LFU counter) as they were; TOUCH still touches (dispatch.c). */
void
cmd_client_no_touch(struct conn *c, int argc, struct rv_str *argv)
{
    if (cmd_arg_is(argv[2], "on")) {
        c->flags |= CONN_NO_TOUCH;
    } else if (cmd_arg_is(argv[2], "off")) {
        c->flags &= ~CONN_NO_TOUCH;
    } else {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    reply_ok(c);
}

/* CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT]
 * [NOLOOP]: the options are read (and REDIRECT's client checked) before ON or
 * OFF, in Redis's order of errors. */
void
cmd_client_tracking(struct conn *c, int argc, struct rv_str *argv)
{
    unsigned opts = 0;
    int64_t redir = 0;
    size_t np = 0;
    struct rv_str *pfx = rv_malloc((size_t)argc * sizeof(*pfx));
    char err[512];
    for (int j = 3; j < argc; j++) {
        bool more = j + 1 < argc;
        if (cmd_arg_is(argv[j], "redirect") && more) {
            j++;
            if (redir != 0) {
                reply_errf(c, "ERR A client can only redirect to a single other client");
                goto out;
            }
            if (!cmd_arg_int(argv[j], &redir)) {
                reply_err(c, RV_ERR_NOTINT);
                goto out;
            }
            if (redir <= 0 || !tracking_target_known(c, (uint64_t)redir)) {
                reply_errf(c, "ERR The client ID you want redirect to does not exist");
                goto out;
            }
        } else if (cmd_arg_is(argv[j], "bcast")) {
            opts |= TRK_BCAST;
        } else if (cmd_arg_is(argv[j], "optin")) {
            opts |= TRK_OPTIN;
        } else if (cmd_arg_is(argv[j], "optout")) {
            opts |= TRK_OPTOUT;
        } else if (cmd_arg_is(argv[j], "noloop")) {
            opts |= TRK_NOLOOP;
        } else if (cmd_arg_is(argv[j], "prefix") && more) {
            pfx[np++] = argv[++j];
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            goto out;
        }
    }
    if (cmd_arg_is(argv[2], "on")) {
        if (tracking_on(c, opts, (uint64_t)redir, pfx, np, err, sizeof(err))) {
            reply_ok(c);
        } else {
            reply_errf(c, "ERR %s", err);
        }
    } else if (cmd_arg_is(argv[2], "off")) {
        tracking_off(c);
        reply_ok(c);
    } else {
        reply_err(c, RV_ERR_SYNTAX);
    }
out:
    rv_free(pfx);
}

/* CLIENT CACHING YES|NO: whether the next command's reads are tracked (OPTIN, OPTOUT). */
void
cmd_client_caching(struct conn *c, int argc, struct rv_str *argv)
{
    char err[256];
    bool yes = cmd_arg_is(argv[2], "yes");
    if (!yes && !cmd_arg_is(argv[2], "no")) {
        /* (Redis checks tracking mode first) */
        if (tracking_redirect(c) < 0) {
            tracking_caching(c, true, err, sizeof(err));
            reply_errf(c, "ERR %s", err);
        } else {
            reply_err(c, RV_ERR_SYNTAX);
        }
        return;
    }
    if (tracking_caching(c, yes, err, sizeof(err))) {
        reply_ok(c);
    } else {
        reply_errf(c, "ERR %s", err);
    }
}

void
cmd_client_getredir(struct conn *c, int argc, struct rv_str *argv)
{
    reply_int(c, tracking_redirect(c));
}

void
cmd_client_trackinginfo(struct conn *c, int argc, struct rv_str *argv)
{
    tracking_reply_info(c);
}
