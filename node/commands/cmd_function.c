/* node/commands/cmd_function.c: FUNCTION and FCALL/FCALL_RO (the libraries
 * are node/commands/function.c's).
 *
 * Libraries are node state: a change made through one shard's port is
 * applied there, then posted to every other shard of the node, which applies
 * it on its own Lua state and logs it to its own WAL, so each shard's log,
 * checkpoints and replicas hold the node's libraries; the client is answered
 * once they all have it. A change
 * that arrives from the log (recovery, a replica's stream: CONN_REPLAY) is
 * applied on its shard only: every shard has its own record of it. */
#include "base/log.h"
#include "base/mem.h"
#include "node/commands/cmds.h"
#include "node/commands/function.h"
#include "node/commands/script.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/multi.h"
#include "node/persist/persist.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- the other shards */

/* A client's change waits for every other shard to have applied it (so once
 * answered, it holds on every port); the last shard to apply it tells the
 * client's. */
struct fn_wait {
    atomic_uint left;
    struct shard *origin;
    uint64_t conn_id;
    bool bulk; /* the reply: the library's name (LOAD), else +OK */
    char reply[256];
};

struct fn_msg {
    struct shard_msg m;
    struct fn_wait *w; /* NULL: nobody waits (inside EXEC) */
    int argc;
    struct rv_str *argv; /* into the same allocation */
};

struct fn_done {
    struct shard_msg m;
    struct fn_wait *w;
};

/* On the client's shard: every shard has it; answer (if it is still there). */
static void
run_done(struct shard *s, struct shard_msg *mm)
{
    struct fn_done *d = (struct fn_done *)mm;
    struct conn *c = shard_conn_first(s);
    while (c != NULL && c->id != d->w->conn_id) {
        c = c->next;
    }
    if (c != NULL && (c->flags & CONN_TOPO_WAIT)) {
        c->flags &= ~(CONN_TOPO_WAIT | CONN_BLOCKED);
        if (d->w->bulk) {
            reply_bulk_cstr(c, d->w->reply);
        } else {
            reply_ok(c);
        }
        if (!multi_exec_resume(c)) {
            conn_resume(c);
        }
        shard_want_write(s, c);
    }
    rv_free(d->w);
    rv_free(d);
}

/* Apply a change another shard made, and log it here as that shard did. */
static void
run_apply(struct shard *s, struct shard_msg *mm)
{
    struct fn_msg *m = (struct fn_msg *)mm;
    const struct cmd_spec *cmd = cmd_lookup("function", 8);
    cmd = cmd ? cmd_lookup_sub(cmd, m->argv[1].p, m->argv[1].len) : NULL;
    struct conn *c = rv_calloc(1, sizeof(*c));
    c->shard = s;
    c->env = shard_env(s);
    c->persist = shard_env(s)->persist;
    c->fd = -1;
    c->proto = 2;
    c->authed = true;
    c->flags = CONN_REPLAY; /* (no socket: replies are dropped; not posted on again) */
    buf_init(&c->rbuf);
    buf_init(&c->wbuf);
    snprintf(c->addr, sizeof(c->addr), "function");
    if (cmd != NULL) {
        cmd_call(c, cmd, m->argc, m->argv);
        if (c->failed) {
            log_warn("[shard %u] FUNCTION %.*s from another shard failed here: %.*s",
                     shard_env(s)->id, (int)m->argv[1].len, m->argv[1].p,
                     (int)(c->wbuf.len > 200 ? 200 : c->wbuf.len), c->wbuf.data);
        } else {
            c->flags &= ~CONN_REPLAY; /* logged as any write of this shard's */
            persist_log(c, cmd, m->argc, m->argv);
        }
    }
    buf_deinit(&c->rbuf);
    buf_deinit(&c->wbuf);
    effect_free(c);
    rv_free(c);
    if (m->w != NULL && atomic_fetch_sub(&m->w->left, 1) == 1) {
        if (atomic_load(&shard_env(s)->node->shutdown)) {
            rv_free(m->w); /* (the client's shard may be gone: its client gets no answer) */
        } else {
            struct fn_done *d = rv_calloc(1, sizeof(*d));
            d->m.run = run_done;
            d->w = m->w;
            shard_post(m->w->origin, &d->m);
        }
    }
    rv_free(m);
}

/* After a change succeeded on c's shard: the same (as it was logged) on the
 * others. Replies (bulk: the name, else +OK) now, or once they all have it. */
static void
post_others(struct conn *c, int argc, struct rv_str *argv, const char *bulk)
{
    struct node *n = c->env->node;
    if ((c->flags & CONN_REPLAY) || n->nshards < 2) {
        if (bulk) {
            reply_bulk_cstr(c, bulk);
        } else {
            reply_ok(c);
        }
        return;
    }
    if (c->effect == EFFECT_REDO) {
        argv = (struct rv_str *)effect_argv(c, &argc);
    }
    struct fn_wait *w = NULL;
    if (!(c->flags & CONN_IN_EXEC)) { /* (EXEC does not wait: it stays one atomic record) */
        w = rv_calloc(1, sizeof(*w));
        atomic_init(&w->left, n->nshards - 1);
        w->origin = c->shard;
        w->conn_id = c->id;
        w->bulk = bulk != NULL;
        snprintf(w->reply, sizeof(w->reply), "%s", bulk ? bulk : "");
    }
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) {
        bytes += argv[i].len;
    }
    for (unsigned k = 0; k < n->nshards; k++) {
        if (n->shards[k] == c->shard) {
            continue;
        }
        struct fn_msg *m = rv_malloc(sizeof(*m) + (size_t)argc * sizeof(struct rv_str) + bytes);
        m->m.run = run_apply;
        m->w = w;
        m->argc = argc;
        m->argv = (struct rv_str *)(m + 1);
        char *p = (char *)(m->argv + argc);
        for (int i = 0; i < argc; i++) {
            memcpy(p, argv[i].p, argv[i].len);
            m->argv[i] = (struct rv_str){ p, argv[i].len };
            p += argv[i].len;
        }
        shard_post(n->shards[k], &m->m);
    }
    if (w != NULL) {
        c->flags |= CONN_TOPO_WAIT | CONN_BLOCKED; /* input waits for the answer */
    } else if (bulk) {
        reply_bulk_cstr(c, bulk);
    } else {
        reply_ok(c);
    }
}

/* ---------------------------------------------------------------- FUNCTION */

CMD_HANDLER(function_load)
{
    bool replace = false;
    if (argc == 4) {
        if (!cmd_arg_is(argv[2], "replace")) {
            reply_errf(c, "ERR Unknown option given: %.*s",
                       (int)(argv[2].len > 128 ? 128 : argv[2].len), argv[2].p);
            return;
        }
        replace = true;
    } else if (argc != 3) {
        reply_errf(c, "ERR wrong number of arguments for 'function|load' command");
        return;
    }
    struct rv_str code = argv[argc - 1];
    char name[256], err[1024];
    if (fn_load(c, code.p, code.len, replace, name, sizeof(name), err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    /* logged (and sent on) as a REPLACE: a replica that has it already takes it as well */
    effect_redo(c, "FUNCTION", (struct rv_str){ "LOAD", 4 });
    effect_arg(c, "REPLACE", 7);
    effect_arg(c, code.p, code.len);
    post_others(c, argc, argv, name);
}

CMD_HANDLER(function_delete)
{
    if (!fn_delete(c, argv[2])) {
        reply_errf(c, "ERR Library not found");
        return;
    }
    post_others(c, argc, argv, NULL);
}

/* FUNCTION FLUSH [ASYNC|SYNC]: both at once (the libraries are small). */
CMD_HANDLER(function_flush)
{
    if (argc > 3 || (argc == 3 && !cmd_arg_is(argv[2], "async") && !cmd_arg_is(argv[2], "sync"))) {
        reply_errf(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
        return;
    }
    fn_flush(c);
    post_others(c, argc, argv, NULL);
}

CMD_HANDLER(function_list)
{
    const struct rv_str *pat = NULL;
    bool withcode = false;
    for (int i = 2; i < argc; i++) {
        if (cmd_arg_is(argv[i], "withcode") && !withcode) {
            withcode = true;
        } else if (cmd_arg_is(argv[i], "libraryname") && pat == NULL) {
            if (i + 1 >= argc) {
                reply_errf(c, "ERR library name argument was not given");
                return;
            }
            pat = &argv[++i];
        } else {
            reply_errf(c, "ERR Unknown argument %.*s", (int)(argv[i].len > 128 ? 128 : argv[i].len),
                       argv[i].p);
            return;
        }
    }
    fn_list(c, pat, withcode);
}

CMD_HANDLER(function_dump)
{
    (void)argc;
    (void)argv;
    fn_dump(c);
}

CMD_HANDLER(function_restore)
{
    enum fn_policy policy = FN_APPEND;
    if (argc == 4) {
        if (cmd_arg_is(argv[3], "append")) {
            policy = FN_APPEND;
        } else if (cmd_arg_is(argv[3], "replace")) {
            policy = FN_REPLACE;
        } else if (cmd_arg_is(argv[3], "flush")) {
            policy = FN_FLUSH;
        } else {
            reply_errf(c, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or "
                          "REPLACE.");
            return;
        }
    } else if (argc != 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    char err[1024];
    if (fn_restore(c, argv[2], policy, err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    if (policy == FN_APPEND) { /* (as LOAD: no conflict here, so REPLACE does the same) */
        effect_redo(c, "FUNCTION", (struct rv_str){ "RESTORE", 7 });
        effect_arg(c, argv[2].p, argv[2].len);
        effect_arg(c, "REPLACE", 7);
    }
    post_others(c, argc, argv, NULL);
}

CMD_HANDLER(function_stats)
{
    (void)argc;
    (void)argv;
    fn_stats(c);
}

CMD_HANDLER(function_kill)
{
    (void)argc;
    (void)argv;
    script_kill_function(c);
}

CMD_HANDLER(function_help)
{
    (void)argc;
    (void)argv;
    static const char *const lines[] = {
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME "
        "argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored "
        "using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a "
        "restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, "
        "abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
        "replace the old",
        "      libraries with the new libraries (notice that even on this option there is a "
        "chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.", /* (Redis's own wording here, not reply_help's) */
        NULL,
    };
    size_t n = 0;
    while (lines[n]) {
        n++;
    }
    reply_array(c, n + 1);
    reply_simple(c, "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    for (size_t i = 0; i < n; i++) {
        reply_simple(c, lines[i]);
    }
}

/* ---------------------------------------------------------------- FCALL */

CMD_HANDLER(fcall)
{
    fn_call(c, argc, argv, false);
}

CMD_HANDLER(fcall_ro)
{
    fn_call(c, argc, argv, true);
}
