/* tests/unit/commands/test_acl.c (under commands/: the rules are checked against the real command table). ACL rules and checks without sockets: users come from `user` lines, verdicts from acl_dryrun(). */
#include "node/features/acl.h"
#include "node/core/cmd.h"
#include "node/commands/cmds.h"
#include "node/core/config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
setup(void)
{
    cmds_init();
}

TestSuite(acl, .init = setup, .fini = acl_shutdown);

static struct rv_str
S(const char *s) {
    return (struct rv_str){ s, strlen(s) };
}

/* Verdict of user running argv (NULL-terminated); why gets the reason. */
static bool
may(const char *user, char *why, size_t whysz, const char **args)
{
    struct rv_str argv[16];
    int argc = 0;
    for (; args[argc]; argc++) {
        argv[argc] = S(args[argc]);
    }
    const struct cmd_spec *cmd = cmd_lookup(argv[0].p, argv[0].len);
    cr_assert_not_null(cmd, "%s", args[0]);
    if (cmd->subs && argc >= 2) {
        cmd = cmd_lookup_sub(cmd, argv[1].p, argv[1].len);
    }
    bool nouser;
    why[0] = '\0';
    bool ok = acl_dryrun(S(user), cmd, argc, argv, why, whysz, &nouser);
    cr_assert(!nouser, "no user %s", user);
    return ok;
}

#define MAY(user, ...) may(user, why, sizeof(why), (const char *[]){ __VA_ARGS__, NULL })

Test(acl, default_user_may_do_everything)
{
    char err[256], why[256];
    cr_assert_eq(acl_init("", "", NULL, err, sizeof(err)), 0, "%s", err);
    cr_assert(MAY("default", "flushall"));
    cr_assert(MAY("default", "get", "k"));
    cr_assert(MAY("default", "config", "set", "x", "y"));
    cr_assert(acl_default_nopass());
}

Test(acl, requirepass_sets_the_default_password)
{
    char err[256];
    cr_assert_eq(acl_init("secret", "", NULL, err, sizeof(err)), 0, "%s", err);
    cr_assert(!acl_default_nopass());
    acl_set_requirepass("");
    cr_assert(acl_default_nopass());
}

Test(acl, command_rules)
{
    char err[256], why[256];
    cr_assert_eq(acl_init("",
                          "u on nopass ~* +@all -@dangerous -set +config|get\n"
                          "v on nopass ~* -@all +@string -strlen +client -client|kill\n",
                          NULL, err, sizeof(err)),
                 0, "%s", err);
    cr_assert(MAY("u", "get", "k"));
    cr_assert(!MAY("u", "set", "k", "v"));
    cr_assert_str_eq(why, "User u has no permissions to run the 'set' command");
    cr_assert(!MAY("u", "flushall"));
    cr_assert(!MAY("u", "keys", "*"));
    cr_assert(MAY("u", "config", "get", "port"));
    cr_assert(!MAY("u", "config", "set", "port", "1"));
    cr_assert_str_eq(why, "User u has no permissions to run the 'config|set' command");
    cr_assert(MAY("v", "append", "k", "v"));
    cr_assert(!MAY("v", "strlen", "k"));
    cr_assert(!MAY("v", "lpush", "k", "v"));
    cr_assert(MAY("v", "client", "id"));
    cr_assert(!MAY("v", "client", "kill", "1.2.3.4:5"));
    cr_assert(MAY("v", "auth", "x")); /* no_auth commands are never refused */
}

Test(acl, key_patterns)
{
    char err[256], why[256];
    cr_assert_eq(acl_init("", "u on nopass +@all ~foo:* %R~ro:* %W~wo:*\n", NULL, err, sizeof(err)),
                 0, "%s", err);
    cr_assert(MAY("u", "get", "foo:1"));
    cr_assert(MAY("u", "set", "foo:1", "v"));
    cr_assert(!MAY("u", "get", "bar"));
    cr_assert_str_eq(why, "User u has no permissions to access the 'bar' key");
    cr_assert(MAY("u", "get", "ro:1"));
    cr_assert(!MAY("u", "set", "ro:1", "v"));
    cr_assert(MAY("u", "set", "wo:1", "v"));
    cr_assert(!MAY("u", "get", "wo:1"));
    cr_assert(!MAY("u", "mset", "foo:1", "a", "bar", "b"));
    cr_assert(MAY("u", "ping"));
}

Test(acl, channel_patterns)
{
    char err[256], why[256];
    cr_assert_eq(acl_init("", "u on nopass +@all ~* resetchannels &news.*\n", NULL, err,
                          sizeof(err)),
                 0, "%s", err);
    cr_assert(MAY("u", "publish", "news.1", "m"));
    cr_assert(!MAY("u", "publish", "sport", "m"));
    cr_assert(MAY("u", "subscribe", "news.a", "news.b"));
    cr_assert(!MAY("u", "subscribe", "news.a", "sport"));
    cr_assert(MAY("u", "psubscribe", "news.*"));
    cr_assert(!MAY("u", "psubscribe", "news.a*")); /* patterns compare literally */
}

Test(acl, bad_lines_name_the_rule)
{
    char err[256];
    cr_assert_neq(acl_init("", "u on +nosuch\n", NULL, err, sizeof(err)), 0);
    cr_assert(strstr(err, "+nosuch") && strstr(err, "Unknown command or category name in ACL"),
              "%s", err);
    cr_assert_neq(acl_init("", "u #abc\n", NULL, err, sizeof(err)), 0);
    cr_assert(strstr(err, "exactly 64 characters"), "%s", err);
    cr_assert_neq(acl_init("", "u on\nu off\n", NULL, err, sizeof(err)), 0);
    cr_assert(strstr(err, "Duplicate user found"), "%s", err);
    cr_assert_neq(acl_init("", "u ~* ~a\n", NULL, err, sizeof(err)), 0);
    cr_assert(strstr(err, "Adding a pattern after the * pattern"), "%s", err);
}

Test(acl, config_default_line_starts_over)
{
    char err[256], why[256];
    cr_assert_eq(acl_init("pw", "default on nopass +get ~*\n", NULL, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert(acl_default_nopass());
    cr_assert(MAY("default", "get", "k"));
    cr_assert(!MAY("default", "set", "k", "v"));
}

Test(acl, aclfile_loads_users)
{
    char err[512], why[256], path[] = "/tmp/ruvio-acl-unit-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *text = "user alice on >pw ~a* +get\n\nuser bob off\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(acl_init("", "", path, err, sizeof(err)), 0, "%s", err);
    cr_assert(MAY("alice", "get", "a1"));
    cr_assert(!MAY("alice", "get", "b1"));
    cr_assert(MAY("default", "flushall"));
    cr_assert_neq(acl_init("", "alice on\n", path, err, sizeof(err)), 0); /* not both */
    FILE *f = fopen(path, "w");
    fputs("user alice on\nalice off\n", f);
    fclose(f);
    cr_assert_neq(acl_init("", "", path, err, sizeof(err)), 0);
    cr_assert(
        strstr(err,
               ":2 should start with user keyword followed by the username. WARNING: ACL errors"),
        "%s", err);
    unlink(path);
    cr_assert_neq(acl_init("", "", path, err, sizeof(err)), 0);
    cr_assert(strstr(err, "Error loading ACLs, opening file"), "%s", err);
}

Test(acl, config_collects_user_and_rename_lines)
{
    char err[256];
    char *argv[] = { "ruvio",    "--user", "alice",  "on",  ">pw", "+get", "--rename-command",
                     "flushall", "",       "--user", "bob", NULL };
    struct cfg *c = cfg_load(11, argv, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    cr_assert_str_eq(c->acl.acl_users, "alice on >pw +get\nbob\n");
    cr_assert_str_eq(c->node.rename_commands, "flushall \n");
    struct cfg *d = cfg_dup(c);
    cr_assert_str_eq(d->acl.acl_users, c->acl.acl_users);
    cfg_destroy(d);
    cfg_destroy(c);
    char *bad[] = { "ruvio", "--rename-command", "flushall", NULL };
    cr_assert_null(cfg_load(3, bad, err, sizeof(err)));
    cr_assert(strstr(err, "rename-command"), "%s", err);
}

Test(acl, rename_command_keeps_real_names_internal)
{
    char err[256];
    cr_assert_eq(cmd_rename_command("config", "mycfg", err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cmd_rename_command("flushall", "", err, sizeof(err)), 0, "%s", err);
    cr_assert_neq(cmd_rename_command("nosuch", "x", err, sizeof(err)), 0);
    cr_assert_neq(cmd_rename_command("get", "set", err, sizeof(err)), 0);
    /* WAL replay and persist look commands up by their real names */
    cr_assert_not_null(cmd_lookup("config", 6));
    cr_assert_not_null(cmd_lookup("flushall", 8));
}
