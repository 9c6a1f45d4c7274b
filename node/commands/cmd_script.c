/* node/commands/cmd_script.c: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT
 * (the engine is node/commands/script.c). */
#include "node/commands/cmds.h"
#include "node/commands/script.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/reply.h"

/* EVAL script numkeys [key ...] [arg ...]: the keys follow numkeys. */
int
script_eval_keys(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    if (argc < 3 || !cmd_arg_int(argv[2], &nk) || nk < 0 || nk > argc - 3) {
        return 0;
    }
    int n = 0;
    for (int i = 0; i < nk && n < max; i++) {
        out[n++] = 3 + i;
    }
    return n;
}

CMD_HANDLER(eval)
{
    script_eval(c, argc, argv, false, false);
}

CMD_HANDLER(evalsha)
{
    script_eval(c, argc, argv, true, false);
}

CMD_HANDLER(eval_ro)
{
    script_eval(c, argc, argv, false, true);
}

CMD_HANDLER(evalsha_ro)
{
    script_eval(c, argc, argv, true, true);
}

CMD_HANDLER(script_load)
{
    (void)argc;
    script_load(c, argv[2]);
}

CMD_HANDLER(script_exists)
{
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        reply_int(c, script_exists(c, argv[i]) ? 1 : 0);
    }
}

/* SCRIPT FLUSH [ASYNC|SYNC]: both flush at once (the state is small). */
CMD_HANDLER(script_flush)
{
    if (argc == 3 && !cmd_arg_is(argv[2], "async") && !cmd_arg_is(argv[2], "sync")) {
        reply_errf(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        return;
    }
    if (argc > 3) {
        reply_errf(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        return;
    }
    script_flush(c);
    reply_ok(c);
}

CMD_HANDLER(script_kill)
{
    (void)argc;
    (void)argv;
    script_kill(c);
}

CMD_HANDLER(script_help)
{
    (void)argc;
    (void)argv;
    static const char *const lines[] = {
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        NULL,
    };
    reply_help(c, "SCRIPT", lines);
}
