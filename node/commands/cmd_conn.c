/* node/commands/cmd_conn.c: connection, CLIENT and COMMAND commands. */
#include "node/features/acl.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/features/block.h"
#include "node/features/clientinfo.h"
#include "node/features/monitor.h"
#include "node/commands/cmds.h"
#include "node/commands/cmd_docs.h"
#include "node/core/conn.h"
#include "node/features/multi.h"
#include "node/features/pubsub.h"
#include "node/features/tracking.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/persist/persist.h"
#include "replication/repl.h"

#include <stdio.h>
#include <string.h>

#define RV_REDIS_VERSION "7.4.0"

void
cmd_ping(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc > 2) {
        reply_err_arity(c, "ping");
    } else if ((c->flags & CONN_PUBSUB) && c->proto == 2) {
        /* RESP2 subscribed mode answers PING in the shape of a message. */
        reply_array(c, 2);
        reply_bulk_cstr(c, "pong");
        reply_bulk(c, argc == 2 ? argv[1].p : "", argc == 2 ? argv[1].len : 0);
    } else if (argc == 2) {
        reply_bulk(c, argv[1].p, argv[1].len);
    } else {
        reply_simple(c, "PONG");
    }
}

void
cmd_echo(struct conn *c, int argc, struct rv_str *argv)
{
    reply_bulk(c, argv[1].p, argv[1].len);
}

void
cmd_auth(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 2 && acl_default_nopass()) {
        reply_err(c, RV_ERR_NOPASS);
        return;
    }
    if (!acl_auth(c, argc == 3 ? &argv[1] : NULL, argv[argc - 1])) {
        reply_err(c, RV_ERR_WRONGPASS);
        return;
    }
    reply_ok(c);
}

static bool
valid_name(struct rv_str n)
{
    for (size_t i = 0; i < n.len; i++) {
        if (n.p[i] < '!' || n.p[i] > '~') {
            return false;
        }
    }
    return true;
}

static void
set_name(struct conn *c, struct rv_str n)
{
    rv_free(c->name);
    c->name = n.len ? rv_strndup(n.p, n.len) : NULL;
}

void
cmd_hello(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t ver = c->proto;
    int i = 1;
    if (argc >= 2) {
        if (!cmd_arg_int(argv[1], &ver)) {
            reply_errf(c, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            reply_errf(c, "NOPROTO unsupported protocol version");
            return;
        }
        i = 2;
    }
    struct rv_str *name = NULL;
    bool did_auth = false;
    for (; i < argc; i++) {
        if (cmd_arg_is(argv[i], "auth") && i + 2 < argc) {
            if (!acl_auth(c, &argv[i + 1], argv[i + 2])) {
                reply_err(c, RV_ERR_WRONGPASS);
                return;
            }
            did_auth = true;
            i += 2;
        } else if (cmd_arg_is(argv[i], "setname") && i + 1 < argc) {
            if (!valid_name(argv[i + 1])) {
                reply_errf(
                    c, "ERR Client names cannot contain spaces, newlines or special characters.");
                return;
            }
            name = &argv[++i];
        } else {
            reply_errf(c, "ERR Syntax error in HELLO option '%.*s'", (int)argv[i].len, argv[i].p);
            return;
        }
    }
    if (c->acl_slow && !c->parser.lim.authed && !did_auth) {
        reply_errf(c,
                   "NOAUTH HELLO must be called with the client already authenticated, otherwise "
                   "the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
                   "client and select the RESP protocol version at the same time");
        return;
    }
    if (name) {
        set_name(c, *name);
    }
    c->proto = (uint8_t)ver;
    reply_map(c, 7);
    reply_bulk_cstr(c, "server");
    reply_bulk_cstr(c, "redis");
    reply_bulk_cstr(c, "version");
    reply_bulk_cstr(c, RV_REDIS_VERSION);
    reply_bulk_cstr(c, "proto");
    reply_int(c, ver);
    reply_bulk_cstr(c, "id");
    reply_int(c, (int64_t)c->id);
    reply_bulk_cstr(c, "mode");
    reply_bulk_cstr(c, shard_multi(c->shard) ? "cluster" : "standalone");
    reply_bulk_cstr(c, "role");
    reply_bulk_cstr(c, "master");
    reply_bulk_cstr(c, "modules");
    reply_array(c, 0);
}

void
cmd_select(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t db;
    if (!cmd_arg_int(argv[1], &db)) {
        reply_err(c, RV_ERR_NOTINT);
    } else if (db != 0 && db_cluster(c)) {
        reply_errf(c, "ERR SELECT is not allowed in cluster mode");
    } else if (db < 0 || db >= (int64_t)c->env->ndbs) {
        reply_err(c, RV_ERR_DBINDEX);
    } else {
        c->db = (uint32_t)db;
        reply_ok(c);
    }
}

void
cmd_quit(struct conn *c, int argc, struct rv_str *argv)
{
    reply_ok(c);
    conn_close_after_reply(c);
}

void
cmd_reset(struct conn *c, int argc, struct rv_str *argv)
{
    block_release(c);
    multi_release(c);
    pubsub_release(c);
    monitor_release(c);
    tracking_off(c);
    c->proto = 2;
    c->db = 0;
    set_name(c, (struct rv_str){ NULL, 0 });
    c->flags &= ~(CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT | CONN_NO_EVICT |
                  CONN_NO_TOUCH | CONN_READONLY | CONN_ASKING | CONN_ASKING_NEW);
    acl_conn_reset(c);
    reply_simple(c, "RESET");
}

void
cmd_readonly(struct conn *c, int argc, struct rv_str *argv)
{
    if (!shard_multi(c->shard) && c->env->topo == NULL) {
        reply_err(c, RV_ERR_CLUSTER_DISABLED);
    } else {
        c->flags |= CONN_READONLY;
        reply_ok(c);
    }
}

void
cmd_readwrite(struct conn *c, int argc, struct rv_str *argv)
{
    if (!shard_multi(c->shard) && c->env->topo == NULL) {
        reply_err(c, RV_ERR_CLUSTER_DISABLED);
    } else {
        c->flags &= ~CONN_READONLY;
        reply_ok(c);
    }
}

/* ---- CLIENT ---- */

void
cmd_client_id(struct conn *c, int argc, struct rv_str *argv)
{
    reply_int(c, (int64_t)c->id);
}

void
cmd_client_setname(struct conn *c, int argc, struct rv_str *argv)
{
    if (!valid_name(argv[2])) {
        reply_errf(c, "ERR Client names cannot contain spaces, newlines or special characters.");
        return;
    }
    set_name(c, argv[2]);
    reply_ok(c);
}

void
cmd_client_getname(struct conn *c, int argc, struct rv_str *argv)
{
    if (c->name) {
        reply_bulk_cstr(c, c->name);
    } else {
        reply_null(c);
    }
}

/* CLIENT SETINFO LIB-NAME|LIB-VER <value>: shown by CLIENT LIST/INFO. */
void
cmd_client_setinfo(struct conn *c, int argc, struct rv_str *argv)
{
    char **slot;
    const char *what;
    if (cmd_arg_is(argv[2], "lib-name")) {
        slot = &c->lib_name;
        what = "lib-name";
    } else if (cmd_arg_is(argv[2], "lib-ver")) {
        slot = &c->lib_ver;
        what = "lib-ver";
    } else {
        reply_errf(c, "ERR Unrecognized option '%.*s'",
                   (int)(argv[2].len > 128 ? 128 : argv[2].len), argv[2].p);
        return;
    }
    if (!valid_name(argv[3])) {
        reply_errf(c, "ERR %s cannot contain spaces, newlines or special characters.", what);
        return;
    }
    rv_free(*slot);
    *slot = argv[3].len ? rv_strndup(argv[3].p, argv[3].len) : NULL;
    reply_ok(c);
}

void
cmd_client_info(struct conn *c, int argc, struct rv_str *argv)
{
    struct buf out;
    buf_init(&out);
    clientinfo_line(c, c, &out);
    reply_verbatim(c, out.data, out.len);
    buf_deinit(&out);
}

/* CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] | [ID id ...]: one filter, as
 * Redis. Monitors count as normal clients, subscribers (CONN_PUBSUB) as pubsub;
 * master/replica are the replication links. */
void
cmd_client_list(struct conn *c, int argc, struct rv_str *argv)
{
    enum { ANY, NORMAL, PUBSUB, LINKS } want = ANY;
    unsigned links = REPL_CT_REPLICA | REPL_CT_MASTER; /* replication links (flags=S / M) */
    int64_t *ids = NULL;
    int nids = 0;

    if (argc == 4 && cmd_arg_is(argv[2], "type")) {
        if (cmd_arg_is(argv[3], "normal")) {
            want = NORMAL;
        } else if (cmd_arg_is(argv[3], "pubsub")) {
            want = PUBSUB;
        } else if (cmd_arg_is(argv[3], "master")) {
            want = LINKS;
            links = REPL_CT_MASTER;
        } else if (cmd_arg_is(argv[3], "replica") || cmd_arg_is(argv[3], "slave")) {
            want = LINKS;
            links = REPL_CT_REPLICA;
        } else {
            reply_errf(c, "ERR Unknown client type '%.*s'",
                       (int)(argv[3].len > 128 ? 128 : argv[3].len), argv[3].p);
            return;
        }
        if (want != LINKS) {
            links = 0;
        }
    } else if (argc > 3 && cmd_arg_is(argv[2], "id")) {
        ids = rv_malloc((size_t)(argc - 3) * sizeof(*ids));
        for (int i = 3; i < argc; i++) {
            if (!cmd_arg_int(argv[i], &ids[nids++])) {
                rv_free(ids);
                reply_errf(c, "ERR Invalid client ID");
                return;
            }
        }
    } else if (argc != 2) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    struct buf out;
    buf_init(&out);
    for (struct conn *o = shard_conn_first(c->shard); o && want != LINKS; o = o->next) {
        bool ok = want == ANY || (want == PUBSUB) == ((o->flags & CONN_PUBSUB) != 0);
        if (nids > 0) {
            ok = false;
            for (int i = 0; i < nids && !ok; i++) {
                ok = (uint64_t)ids[i] == o->id;
            }
        }
        if (ok) {
            clientinfo_line(c, o, &out);
        }
    }
    repl_client_list(persist_repl(c->shard), links, ids, nids, &out);
    reply_verbatim(c, out.data ? out.data : "", out.len);
    buf_deinit(&out);
    rv_free(ids);
}

static bool
str_eq(struct rv_str a, const char *s)
{
    return a.len == strlen(s) && memcmp(a.p, s, a.len) == 0;
}

static void
kill_conn(struct conn *me, struct conn *o)
{
    if (o == me) {
        conn_close_after_reply(me);
    } else {
        o->flags |= CONN_CLOSE_ASAP;
        shard_want_write(o->shard, o);
    }
}

void
cmd_client_kill(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc == 3) {
        for (struct conn *o = shard_conn_first(c->shard); o; o = o->next) {
            if (str_eq(argv[2], o->addr)) {
                reply_ok(c);
                kill_conn(c, o);
                return;
            }
        }
        if (repl_client_kill(persist_repl(c->shard), REPL_CT_REPLICA | REPL_CT_MASTER, 0,
                             &argv[2]) > 0) {
            reply_ok(c);
            return;
        }
        reply_errf(c, "ERR No such client");
        return;
    }
    int64_t id = -1;
    struct rv_str *addr = NULL, *laddr = NULL, *user = NULL;
    bool skipme = true;
    int64_t maxage = -1;
    unsigned links = REPL_CT_REPLICA |
                     REPL_CT_MASTER; /* replication links (TYPE replica / master) */
    bool links_only = false;
    if ((argc - 2) % 2 != 0) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int i = 2; i < argc; i += 2) {
        struct rv_str v = argv[i + 1];
        if (cmd_arg_is(argv[i], "id")) {
            if (!cmd_arg_int(v, &id) || id <= 0) {
                reply_errf(c, "ERR client-id should be greater than 0");
                return;
            }
        } else if (cmd_arg_is(argv[i], "addr")) {
            addr = &argv[i + 1];
        } else if (cmd_arg_is(argv[i], "laddr")) {
            laddr = &argv[i + 1];
        } else if (cmd_arg_is(argv[i], "skipme")) {
            if (cmd_arg_is(v, "yes")) {
                skipme = true;
            } else if (cmd_arg_is(v, "no")) {
                skipme = false;
            } else {
                reply_err(c, RV_ERR_SYNTAX);
                return;
            }
        } else if (cmd_arg_is(argv[i], "maxage")) {
            if (!cmd_arg_int(v, &maxage)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
        } else if (cmd_arg_is(argv[i], "user")) {
            if (!acl_user_exists(v)) {
                reply_errf(c, "ERR No such user '%.*s'", (int)(v.len > 128 ? 128 : v.len), v.p);
                return;
            }
            user = &argv[i + 1];
        } else if (cmd_arg_is(argv[i], "type")) {
            if (cmd_arg_is(v, "master") || cmd_arg_is(v, "replica") || cmd_arg_is(v, "slave")) {
                links = cmd_arg_is(v, "master") ? REPL_CT_MASTER : REPL_CT_REPLICA;
                links_only = true;
            } else if (!cmd_arg_is(v, "normal")) {
                reply_int(c, 0);
                return;
            } else {
                links = 0;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    /* Replication links have no user or local-address filters here. */
    int64_t killed = laddr || user || maxage >= 0
                         ? 0
                         : repl_client_kill(persist_repl(c->shard), links, id, addr);
    if (links_only) {
        reply_int(c, killed);
        return;
    }
    int64_t now = c->env->now_ms;
    for (struct conn *o = shard_conn_first(c->shard); o; o = o->next) {
        if ((id > 0 && o->id != (uint64_t)id) || (addr && !str_eq(*addr, o->addr)) ||
            (laddr && !str_eq(*laddr, o->laddr)) || (skipme && o == c) ||
            (user && !str_eq(*user, acl_user_name(o->user))) ||
            (maxage >= 0 && (now - o->ctime_ms) / 1000 < maxage) || (o->flags & CONN_CLOSE_ASAP)) {
            continue;
        }
        kill_conn(c, o);
        killed++;
    }
    reply_int(c, killed);
}

void
cmd_client_unblock(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t id;
    bool with_error = false;
    if (!cmd_arg_int(argv[2], &id)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (argc == 4) {
        if (cmd_arg_is(argv[3], "error")) {
            with_error = true;
        } else if (!cmd_arg_is(argv[3], "timeout")) {
            reply_errf(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
            return;
        }
    }
    for (struct conn *o = shard_conn_first(c->shard); o; o = o->next) {
        if (o->id == (uint64_t)id) {
            reply_int(c, block_unblock(o, with_error) ? 1 : 0);
            return;
        }
    }
    reply_int(c, 0);
}

void
cmd_client_no_evict(struct conn *c, int argc, struct rv_str *argv)
{
    if (cmd_arg_is(argv[2], "on")) {
        c->flags |= CONN_NO_EVICT;
    } else if (cmd_arg_is(argv[2], "off")) {
        c->flags &= ~CONN_NO_EVICT;
    } else {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    reply_ok(c);
}

void
cmd_client_reply(struct conn *c, int argc, struct rv_str *argv)
{
    if (cmd_arg_is(argv[2], "on")) {
        c->flags &= ~(CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT);
        reply_ok(c);
    } else if (cmd_arg_is(argv[2], "off")) {
        c->flags |= CONN_REPLY_OFF;
    } else if (cmd_arg_is(argv[2], "skip")) {
        if (!(c->flags & CONN_REPLY_OFF)) {
            c->flags |= CONN_REPLY_SKIP_NEXT;
        }
    } else {
        reply_err(c, RV_ERR_SYNTAX);
    }
}

void
cmd_client_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are: ID <client-id>, USER <username>, ADDR <ip:port>, LADDR <ip:port>, SKIPME (YES|NO), MAXAGE <seconds>.",
        "LIST [options ...]",
        "    Return information about client connections of this shard. Options: TYPE (NORMAL|MASTER|REPLICA|PUBSUB), ID <client-id> [...].",
        "NO-EVICT (ON|OFF)",
        "    Protect the current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        NULL,
    };
    reply_help(c, "CLIENT", lines);
}

/* ---- COMMAND ---- */

static const struct {
    uint32_t bit;
    const char *name;
} flag_names[] = {
    { CMD_WRITE, "write" },
    { CMD_READONLY, "readonly" },
    { CMD_DENYOOM, "denyoom" },
    { CMD_ADMIN, "admin" },
    { CMD_PUBSUB, "pubsub" },
    { CMD_NOSCRIPT, "noscript" },
    { CMD_BLOCKING, "blocking" },
    { CMD_LOADING, "loading" },
    { CMD_STALE, "stale" },
    { CMD_SKIP_MONITOR, "skip_monitor" },
    { CMD_SKIP_SLOWLOG, "skip_slowlog" },
    { CMD_FAST, "fast" },
    { CMD_NOAUTH, "no_auth" },
    { CMD_NO_MULTI, "no_multi" },
    { CMD_MOVABLEKEYS, "movablekeys" },
    { CMD_ALLOW_BUSY, "allow_busy" },
    { CMD_ASKING, "asking" },
};


static size_t
count_subs(const struct cmd_spec *s)
{
    size_t n = 0;
    for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
        n++;
    }
    return n;
}

static void
reply_command_info(struct conn *c, const struct cmd_spec *s)
{
    char full[96];
    cmd_fullname(s, full, sizeof(full));
    reply_array(c, 10);
    reply_bulk_cstr(c, full);
    reply_int(c, s->arity);
    size_t nf = 0;
    for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
        nf += (s->flags & flag_names[i].bit) != 0;
    }
    reply_set(c, nf);
    for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
        if (s->flags & flag_names[i].bit) {
            reply_simple(c, flag_names[i].name);
        }
    }
    reply_int(c, s->first);
    reply_int(c, s->last);
    reply_int(c, s->step);
    size_t nc = 0;
    for (unsigned i = 0; i < acl_cat_count(); i++) {
        nc += (s->cats >> i) & 1;
    }
    reply_set(c, nc);
    for (unsigned i = 0; i < acl_cat_count(); i++) {
        if ((s->cats >> i) & 1) {
            char at[32];
            snprintf(at, sizeof(at), "@%s", acl_cat_name(i));
            reply_simple(c, at);
        }
    }
    reply_array(c, 0); /* tips */
    if (s->fn == cmd_sort || s->fn == cmd_sort_ro) {
        sort_reply_key_specs(c, s->fn == cmd_sort);
    } else if (s->first > 0) {
        /* One key spec derived from first/last/step. */
        reply_array(c, 1);
        bool w = s->flags & CMD_WRITE;
        cmd_reply_range_spec(c, w ? "RW" : "RO", w ? "update" : "access", s->first,
                             s->last < 0 ? s->last : s->last - s->first, s->step);
    } else {
        reply_array(c, 0);
    }
    reply_array(c, count_subs(s));
    for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
        reply_command_info(c, sub);
    }
}

void
cmd_reply_range_spec(struct conn *c, const char *f0, const char *f1, int index, int lastkey,
                     int step)
{
    reply_map(c, 3);
    reply_bulk_cstr(c, "flags");
    reply_set(c, 2);
    reply_simple(c, f0);
    reply_simple(c, f1);
    reply_bulk_cstr(c, "begin_search");
    reply_map(c, 2);
    reply_bulk_cstr(c, "type");
    reply_bulk_cstr(c, "index");
    reply_bulk_cstr(c, "spec");
    reply_map(c, 1);
    reply_bulk_cstr(c, "index");
    reply_int(c, index);
    reply_bulk_cstr(c, "find_keys");
    reply_map(c, 2);
    reply_bulk_cstr(c, "type");
    reply_bulk_cstr(c, "range");
    reply_bulk_cstr(c, "spec");
    reply_map(c, 3);
    reply_bulk_cstr(c, "lastkey");
    reply_int(c, lastkey);
    reply_bulk_cstr(c, "keystep");
    reply_int(c, step);
    reply_bulk_cstr(c, "limit");
    reply_int(c, 0);
}

void
cmd_command(struct conn *c, int argc, struct rv_str *argv)
{
    reply_array(c, cmd_count());
    for (size_t i = 0; i < cmd_count(); i++) {
        reply_command_info(c, cmd_at(i));
    }
}

void
cmd_command_count(struct conn *c, int argc, struct rv_str *argv)
{
    reply_int(c, (int64_t)cmd_count());
}

/* "get" or "client|list" */
static const struct cmd_spec *
lookup_full(struct rv_str name)
{
    const char *bar = memchr(name.p, '|', name.len);
    if (bar == NULL) {
        return cmd_lookup(name.p, name.len);
    }
    const struct cmd_spec *p = cmd_lookup(name.p, (size_t)(bar - name.p));
    const struct cmd_spec *sub = p ? cmd_lookup_sub(p, bar + 1,
                                                    name.len - (size_t)(bar - name.p) - 1)
                                   : NULL;
    return sub != p ? sub : NULL; /* (a container's own handler is no subcommand) */
}

void
cmd_command_info(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc == 2) {
        cmd_command(c, argc, argv);
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        const struct cmd_spec *s = lookup_full(argv[i]);
        if (s) {
            reply_command_info(c, s);
        } else {
            reply_null_array(c);
        }
    }
}

static void
reply_command_doc(struct conn *c, const struct cmd_spec *s)
{
    size_t ns = docs_hides(s, true) ? 0 : count_subs(s);
    size_t na = docs_hides(s, false) ? 0 : docs_arg_count(s), nm = docs_meta_count(s);
    char full[96];
    cmd_fullname(s, full, sizeof(full));
    reply_bulk_cstr(c, full);
    reply_map(c, 4 + nm + (na > 0) + (ns > 0));
    reply_bulk_cstr(c, "summary");
    reply_bulk_cstr(c, s->summary);
    reply_bulk_cstr(c, "since");
    reply_bulk_cstr(c, s->since);
    reply_bulk_cstr(c, "group");
    reply_bulk_cstr(c, s->group);
    reply_bulk_cstr(c, "complexity");
    reply_bulk_cstr(c, s->complexity);
    docs_reply_meta(c, s);
    if (na) {
        reply_bulk_cstr(c, "arguments");
        docs_reply_args(c, s);
    }
    if (ns) {
        reply_bulk_cstr(c, "subcommands");
        reply_map(c, ns);
        for (const struct cmd_spec *sub = s->subs; sub->name; sub++) {
            reply_command_doc(c, sub);
        }
    }
}

void
cmd_command_docs(struct conn *c, int argc, struct rv_str *argv)
{
    if (argc == 2) {
        reply_map(c, cmd_count());
        for (size_t i = 0; i < cmd_count(); i++) {
            reply_command_doc(c, cmd_at(i));
        }
        return;
    }
    size_t h = reply_defer(c), n = 0;
    for (int i = 2; i < argc; i++) {
        const struct cmd_spec *s = lookup_full(argv[i]);
        if (s) {
            reply_command_doc(c, s);
            n++;
        }
    }
    reply_defer_map(c, h, n);
}

void
cmd_command_list(struct conn *c, int argc, struct rv_str *argv)
{
    struct rv_str *pattern = NULL;
    int64_t cat = -1;
    if (argc != 2 && argc != 5) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 5) {
        if (!cmd_arg_is(argv[2], "filterby")) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (cmd_arg_is(argv[3], "pattern")) {
            pattern = &argv[4];
        } else if (cmd_arg_is(argv[3], "aclcat")) {
            for (unsigned i = 0; i < acl_cat_count(); i++) {
                if (cmd_arg_is(argv[4], acl_cat_name(i))) {
                    cat = (int64_t)i;
                }
            }
            if (cat < 0) {
                reply_array(c, 0); /* (no error, as Redis) */
                return;
            }
        } else if (cmd_arg_is(argv[3], "module")) {
            reply_array(c, 0);
            return;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    size_t h = reply_defer(c), n = 0;
    for (uint32_t id = 0; id < cmd_id_count(); id++) {
        const struct cmd_spec *s = cmd_by_id(id);
        char full[96];
        cmd_fullname(s, full, sizeof(full));
        if (pattern && !glob_match(pattern->p, pattern->len, full, strlen(full), true)) {
            continue;
        }
        if (cat >= 0 && !((s->cats >> cat) & 1)) {
            continue;
        }
        reply_bulk_cstr(c, full);
        n++;
    }
    reply_defer_array(c, h, n);
}

/* The command COMMAND GETKEYS[ANDFLAGS] is asked about, and its keys' indexes
 * into argv + 2; NULL when it replied with an error. */
static const struct cmd_spec *
getkeys_of(struct conn *c, int argc, struct rv_str *argv, int *keys, int *nkeys)
{
    const struct cmd_spec *s = cmd_lookup(argv[2].p, argv[2].len);
    int sub_argc = argc - 2;
    struct rv_str *sub_argv = argv + 2;
    if (s && s->subs && sub_argc >= 2) {
        s = cmd_lookup_sub(s, sub_argv[1].p, sub_argv[1].len);
    }
    if (s == NULL) {
        reply_errf(c, "ERR Invalid command specified");
        return NULL;
    }
    if ((s->arity > 0 && sub_argc != s->arity) || sub_argc < -s->arity) {
        reply_errf(c, "ERR Invalid number of arguments specified for command");
        return NULL;
    }
    *nkeys = cmd_get_keys(s, sub_argc, sub_argv, keys, 256);
    if (*nkeys == 0) {
        reply_errf(c, "ERR The command has no key arguments");
        return NULL;
    }
    return s;
}

void
cmd_command_getkeys(struct conn *c, int argc, struct rv_str *argv)
{
    int keys[256], n;
    if (getkeys_of(c, argc, argv, keys, &n) == NULL) {
        return;
    }
    reply_array(c, (size_t)n);
    for (int i = 0; i < n; i++) {
        reply_bulk(c, argv[2 + keys[i]].p, argv[2 + keys[i]].len);
    }
}

/* Each key with the flags of the key spec COMMAND INFO reports for it. */
void
cmd_command_getkeysandflags(struct conn *c, int argc, struct rv_str *argv)
{
    int keys[256], n;
    const struct cmd_spec *s = getkeys_of(c, argc, argv, keys, &n);
    if (s == NULL) {
        return;
    }
    bool sort_store = (s->fn == cmd_sort) && n > 1;
    reply_array(c, (size_t)n);
    for (int i = 0; i < n; i++) {
        bool w = (s->flags & CMD_WRITE) && (!sort_store || i == n - 1);
        reply_array(c, 2);
        reply_bulk(c, argv[2 + keys[i]].p, argv[2 + keys[i]].len);
        reply_set(c, 2);
        if (sort_store) {
            reply_simple(c, w ? "OW" : "RO");
        } else {
            reply_simple(c, w ? "RW" : "RO");
        }
        reply_simple(c, w ? "update" : "access");
    }
}

/* LOLWUT [VERSION v]: Redis draws art for some versions; we only show the
 * version line Redis answers for versions without art. */
void
cmd_lolwut(struct conn *c, int argc, struct rv_str *argv)
{
    int64_t v;
    if (argc >= 3 && cmd_arg_is(argv[1], "version") && !cmd_arg_int(argv[2], &v)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    char line[64];
    int n = snprintf(line, sizeof(line), "Ruvio ver. %s\n", RUVIO_VERSION);
    reply_verbatim(c, line, (size_t)n);
}

void
cmd_command_help(struct conn *c, int argc, struct rv_str *argv)
{
    static const char *const lines[] = {
        "(no subcommand)",
        "    Return details about all commands.",
        "COUNT",
        "    Return the total number of commands in this server.",
        "LIST",
        "    Return a list of all commands in this server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple commands.",
        "GETKEYS <full-command>",
        "    Return the keys from a full command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full command.",
        NULL,
    };
    reply_help(c, "COMMAND", lines);
}
