/* node/persist/replay.c: socketless command execution (see replay.h). */
#include "node/persist/replay.h"

#include "base/bytes.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/effect.h"
#include "node/core/conn.h"
#include "node/core/shard.h"

#include <stdio.h>
#include <string.h>

struct replay {
    struct conn c;
    /* The last command name looked up and its spec: a replication stream
     * repeats a few commands, and the exact bytes compare faster than a lookup. */
    const struct cmd_spec *last;
    /* A SELECT of the record failed (a database this node does not have):
     * its further commands are skipped, never run in another database. */
    bool lost_db;
    size_t last_len;
    char last_name[32];
};

struct replay *
replay_create(struct shard *s)
{
    struct replay *r = rv_calloc(1, sizeof(*r));
    r->c.shard = s;
    r->c.env = shard_env(s);
    r->c.persist = shard_env(s)->persist;
    r->c.fd = -1;
    r->c.proto = 2;
    r->c.authed = true;
    r->c.flags = CONN_REPLAY;
    buf_init(&r->c.rbuf);
    buf_init(&r->c.wbuf);
    snprintf(r->c.addr, sizeof(r->c.addr), "replay");
    return r;
}

void
replay_destroy(struct replay *r)
{
    if (r == NULL) {
        return;
    }
    buf_deinit(&r->c.rbuf);
    buf_deinit(&r->c.wbuf);
    effect_free(&r->c);
    rv_free(r);
}

void
replay_set_db(struct replay *r, unsigned db)
{
    r->c.db = db;
    r->lost_db = false;
}

bool
replay_exec(struct replay *r, int argc, const struct rv_str *argv, char *err, size_t errsz)
{
    struct conn *c = &r->c;
    const struct cmd_spec *cmd = NULL;
    if (argc > 0 && r->last != NULL && argv[0].len == r->last_len &&
        rv_short_eq(argv[0].p, r->last_name, r->last_len)) { /* cheaper than a lookup */
        cmd = r->last;
    } else if (argc > 0 && (cmd = cmd_lookup(argv[0].p, argv[0].len)) != NULL &&
               argv[0].len <= sizeof(r->last_name)) {
        r->last = cmd;
        r->last_len = argv[0].len;
        memcpy(r->last_name, argv[0].p, argv[0].len);
    }
    if (cmd != NULL && cmd->subs != NULL && argc >= 2) {
        cmd = cmd_lookup_sub(cmd, argv[1].p, argv[1].len);
    }
    if (cmd == NULL) {
        snprintf(err, errsz, "ERR unknown command '%.*s'",
                 argc > 0 ? (int)(argv[0].len > 64 ? 64 : argv[0].len) : 0,
                 argc > 0 ? argv[0].p : "");
        return false;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        snprintf(err, errsz, "ERR wrong number of arguments for '%s' command", cmd->name);
        return false;
    }
    if (rv_unlikely(r->lost_db)) {
        snprintf(err, errsz, "ERR skipped: the record's database does not exist here");
        return false;
    }
    c->wbuf.off = c->wbuf.len = 0;
    /* Handlers take a mutable argv array (they may replace entries, as the
     * dispatcher does); the bytes it points to are never written, so argv
     * may view a replica's receive buffer directly. */
    cmd_call(c, cmd, argc, (struct rv_str *)argv);
    bool ok = !c->failed;
    if (rv_unlikely(!ok) && strcmp(cmd->name, "select") == 0) {
        r->lost_db = true;
    }
    if (!ok && c->wbuf.len > 0) { /* the reply is the error's text */
        size_t n = c->wbuf.len - 1;
        const char *e = memchr(c->wbuf.data + 1, '\r', n);
        n = e ? (size_t)(e - (c->wbuf.data + 1)) : n;
        snprintf(err, errsz, "%.*s", (int)(n > 200 ? 200 : n), c->wbuf.data + 1);
    }
    c->wbuf.off = c->wbuf.len = 0;
    return ok;
}
