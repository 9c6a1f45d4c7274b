/* node/commands/cmd_slowlog.c: SLOWLOG GET/LEN/RESET/HELP. The log itself is node/obs/slowlog.c. */
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/obs/metrics.h"
#include "node/obs/slowlog.h"

/* SLOWLOG GET [count]: newest first; count -1 means all. */
void
cmd_slowlog_get(struct conn *c, int argc, struct rv_str *argv)
{
    struct slowlog *sl = metrics_slowlog(c->shard);
    int64_t count = 10;
    if (argc > 3) {
        reply_err_arity(c, "slowlog|get");
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count < -1) {
            reply_errf(c, "ERR count should be greater than or equal to -1");
            return;
        }
    }
    size_t n = slowlog_len(sl);
    if (count >= 0 && (uint64_t)count < n) {
        n = (size_t)count;
    }
    reply_array(c, n);
    const struct slowlog_entry *e = slowlog_first(sl);
    for (size_t i = 0; i < n; i++, e = slowlog_next(e)) {
        struct slowlog_view v;
        slowlog_entry_view(e, &v);
        reply_array(c, 6);
        reply_int(c, (int64_t)v.id);
        reply_int(c, v.time);
        reply_int(c, (int64_t)v.us);
        reply_array(c, (size_t)v.argc);
        for (int a = 0; a < v.argc; a++) {
            reply_bulk(c, v.argv[a].p, v.argv[a].len);
        }
        reply_bulk_cstr(c, v.addr);
        reply_bulk_cstr(c, v.name ? v.name : "");
    }
}

void
cmd_slowlog_len(struct conn *c, int argc, struct rv_str *argv)
{
    reply_int(c, (int64_t)slowlog_len(metrics_slowlog(c->shard)));
}

void
cmd_slowlog_reset(struct conn *c, int argc, struct rv_str *argv)
{
    slowlog_reset(metrics_slowlog(c->shard));
    reply_ok(c);
}

void
cmd_slowlog_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        NULL,
    };
    reply_help(c, "SLOWLOG", lines);
}
