/* node/commands/cmd_acl.c: the ACL command. The user model lives in node/features/acl.c
 * (the node's users) and acl_user.c (one user's rules). */
#include "base/buf.h"
#include "base/clock.h"
#include "node/features/acl.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

void
cmd_acl_setuser(struct conn *c, int argc, struct rv_str *argv)
{
    char err[512];
    if (acl_setuser(c->shard, argv[2], argc - 3, argv + 3, err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_ok(c);
}

void
cmd_acl_deluser(struct conn *c, int argc, struct rv_str *argv)
{
    char err[256];
    int n = acl_deluser(c->shard, argc - 2, argv + 2, err, sizeof(err));
    if (n < 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_int(c, n);
}

static void
reply_getuser(struct conn *c, const struct acl_user *u)
{
    const char *flags[3];
    int nflags = acl_user_flag_names(u, flags);
    struct buf b;
    buf_init(&b);
    reply_map(c, 6);
    reply_bulk_cstr(c, "flags");
    reply_array(c, (size_t)nflags);
    for (int i = 0; i < nflags; i++) {
        reply_bulk_cstr(c, flags[i]);
    }
    reply_bulk_cstr(c, "passwords");
    reply_array(c, (size_t)acl_user_npass(u));
    for (int j = 0; j < acl_user_npass(u); j++) {
        char h[ACL_PASS_HEX_LEN + 1];
        acl_user_pass_hex(u, j, h);
        reply_bulk_cstr(c, h);
    }
    reply_bulk_cstr(c, "commands");
    reply_bulk_cstr(c, acl_user_cmdrules(u));
    reply_bulk_cstr(c, "keys");
    acl_user_keys_text(u, &b);
    reply_bulk(c, b.data ? b.data : "", b.len);
    buf_reset(&b);
    reply_bulk_cstr(c, "channels");
    acl_user_chans_text(u, &b);
    reply_bulk(c, b.data ? b.data : "", b.len);
    reply_bulk_cstr(c, "selectors");
    reply_array(c, 0);
    buf_deinit(&b);
}

void
cmd_acl_getuser(struct conn *c, int argc, struct rv_str *argv)
{
    struct acl_snap *s = acl_snap_get();
    const struct acl_user *u = acl_snap_find(s, argv[2]);
    if (u == NULL) {
        reply_null(c);
    } else {
        reply_getuser(c, u);
    }
    acl_snap_put(s);
}

void
cmd_acl_list(struct conn *c, int argc, struct rv_str *argv)
{
    struct acl_snap *s = acl_snap_get();
    reply_array(c, acl_snap_count(s));
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < acl_snap_count(s); i++) {
        buf_reset(&b);
        acl_user_describe(acl_snap_user(s, i), &b);
        reply_bulk(c, b.data, b.len);
    }
    buf_deinit(&b);
    acl_snap_put(s);
}

void
cmd_acl_users(struct conn *c, int argc, struct rv_str *argv)
{
    struct acl_snap *s = acl_snap_get();
    reply_array(c, acl_snap_count(s));
    for (size_t i = 0; i < acl_snap_count(s); i++) {
        reply_bulk_cstr(c, acl_user_name(acl_snap_user(s, i)));
    }
    acl_snap_put(s);
}

void
cmd_acl_whoami(struct conn *c, int argc, struct rv_str *argv)
{
    reply_bulk_cstr(c, acl_user_name(c->user));
}

void
cmd_acl_cat(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc == 2) {
        reply_array(c, acl_cat_count());
        for (unsigned i = 0; i < acl_cat_count(); i++) {
            reply_bulk_cstr(c, acl_cat_name(i));
        }
        return;
    }
    int cat = -1;
    for (unsigned i = 0; i < acl_cat_count(); i++) {
        if (cmd_arg_is(argv[2], acl_cat_name(i))) {
            cat = (int)i;
        }
    }
    if (cat < 0) {
        reply_errf(c, "ERR Unknown category '%.*s'", (int)(argv[2].len > 128 ? 128 : argv[2].len),
                   argv[2].p);
        return;
    }
    size_t h = reply_defer(c), n = 0;
    for (uint32_t id = 0; id < cmd_id_count(); id++) {
        const struct cmd_spec *s = cmd_by_id(id);
        uint32_t cats = s->cats | ((s->flags & CMD_DANGEROUS) ? CAT_DANGEROUS : 0);
        if (s->subs == NULL && ((cats >> cat) & 1)) {
            char full[96];
            cmd_fullname(s, full, sizeof(full));
            reply_bulk_cstr(c, full);
            n++;
        }
    }
    reply_defer_array(c, h, n);
}

void
cmd_acl_genpass(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t bits = 256;
    if (argc == 3 && !cmd_arg_int(argv[2], &bits)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (bits <= 0 || bits > 4096) {
        reply_errf(c,
                   "ERR ACL GENPASS argument must be the number of bits for the output password, "
                   "a positive number up to 4096");
        return;
    }
    unsigned char raw[512];
    char out[1025];
    size_t chars = (size_t)(bits + 3) / 4;
    if (RAND_bytes(raw, (int)((chars + 1) / 2)) != 1) {
        reply_errf(c, "ERR cannot read random bytes");
        return;
    }
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < chars; i++) {
        out[i] = digits[(raw[i / 2] >> ((i & 1) ? 0 : 4)) & 15];
    }
    reply_bulk(c, out, chars);
}

void
cmd_acl_log(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t count = 10;
    if (argc == 3) {
        if (cmd_arg_is(argv[2], "reset")) {
            acl_log_reset();
            reply_ok(c);
            return;
        }
        if (!cmd_arg_int(argv[2], &count) || count < 0) {
            reply_errf(c, "ERR value is out of range, must be positive");
            return;
        }
    }
    size_t n;
    struct acl_log_view *v = acl_log_copy(count, &n);
    int64_t now = clock_unix_ms();
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        const struct acl_log_view *e = &v[i];
        reply_map(c, 10);
        reply_bulk_cstr(c, "count");
        reply_int(c, e->count);
        reply_bulk_cstr(c, "reason");
        reply_bulk_cstr(c, e->reason);
        reply_bulk_cstr(c, "context");
        reply_bulk_cstr(c, e->context);
        reply_bulk_cstr(c, "object");
        reply_bulk_cstr(c, e->object);
        reply_bulk_cstr(c, "username");
        reply_bulk_cstr(c, e->username);
        reply_bulk_cstr(c, "age-seconds");
        reply_double(c, (double)(now - e->created_ms) / 1000.0);
        reply_bulk_cstr(c, "client-info");
        reply_bulk_cstr(c, e->client_info);
        reply_bulk_cstr(c, "entry-id");
        reply_int(c, (int64_t)e->id);
        reply_bulk_cstr(c, "timestamp-created");
        reply_int(c, e->created_ms);
        reply_bulk_cstr(c, "timestamp-last-updated");
        reply_int(c, e->updated_ms);
    }
    acl_log_free(v, n);
}

void
cmd_acl_dryrun(struct conn *c, int argc, struct rv_str *argv)
{
    const struct cmd_spec *cmd = cmd_lookup(argv[3].p, argv[3].len);
    int cargc = argc - 3;
    struct rv_str *cargv = argv + 3;
    if (cmd && cmd->subs && cargc >= 2) {
        cmd = cmd_lookup_sub(cmd, cargv[1].p, cargv[1].len);
    }
    if (cmd == NULL) {
        reply_errf(c, "ERR Command '%.*s' not found", (int)(argv[3].len > 128 ? 128 : argv[3].len),
                   argv[3].p);
        return;
    }
    if ((cmd->arity > 0 && cargc != cmd->arity) || cargc < -cmd->arity) {
        char full[96];
        cmd_fullname(cmd, full, sizeof(full));
        reply_errf(c, "ERR wrong number of arguments for '%s' command", full);
        return;
    }
    char why[512];
    bool nouser;
    if (acl_dryrun(argv[2], cmd, cargc, cargv, why, sizeof(why), &nouser)) {
        reply_ok(c);
    } else if (nouser) {
        reply_errf(c, "ERR User '%.*s' not found", (int)(argv[2].len > 128 ? 128 : argv[2].len),
                   argv[2].p);
    } else {
        reply_bulk_cstr(c, why);
    }
}

void
cmd_acl_load(struct conn *c, int argc, struct rv_str *argv)
{
    char err[1200];
    if (acl_load(c->shard, err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_ok(c);
}

void
cmd_acl_save(struct conn *c, int argc, struct rv_str *argv)
{
    char err[600];
    if (acl_save(err, sizeof(err)) != 0) {
        reply_errf(c, "%s", err);
        return;
    }
    reply_ok(c);
}

void
cmd_acl_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        NULL,
    };
    reply_help(c, "ACL", lines);
}
