/* node/commands/cmd_db.c: numbered databases (SELECT is cmd_conn.c): MOVE,
 * SWAPDB, COPY ... DB's copy into another database, FLUSHALL over every
 * database and INFO keyspace.
 *
 * The dispatcher points c->env->ks at the connection's database around each
 * command, so every other handler works on "the" keyspace unchanged. Code
 * here that reaches another database switches env to it for the lookup, so a
 * lazy expiry there is logged as that database's (persist.c's SELECT). */
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/commands/t_hash.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/block.h"
#include "node/features/ksnotify.h"
#include "node/features/multi.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "node/types/obj.h"

#include <string.h>

bool
db_cluster(const struct conn *c)
{
    /* (a resharding source loads every database of its former layout) */
    return c->env->ndbs == 1 && (shard_multi(c->shard) || c->env->cfg->cluster.enabled);
}

static struct ks_entry *
lookup_in(struct conn *c, unsigned db, struct rv_str k)
{
    unsigned was = c->env->db;
    shard_use_db(c->env, db);
    struct ks_entry *e = ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
    shard_use_db(c->env, was);
    return e;
}

bool
db_parse_index(struct conn *c, struct rv_str arg, unsigned *db)
{
    int64_t v;
    if (!cmd_arg_int(arg, &v)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (v < 0 || v >= (int64_t)c->env->ndbs) {
        reply_err(c, RV_ERR_DBINDEX);
        return false;
    }
    *db = (unsigned)v;
    return true;
}

bool
db_copy_entry(struct conn *c, const struct ks_entry *e, unsigned db, struct rv_str dst)
{
    persist_touch_db(c, db, dst); /* a checkpoint walking db writes dst's old value first */
    struct ks *to = shard_db(c->env, db);
    if (ks_copy_to(to, e, dst.p, dst.len) == NULL) { /* a value behind a pointer */
        enum ks_type t = ks_entry_type(e);
        const struct obj_ops *ops = obj_ops_of(t);
        if (ops == NULL || ops->dup == NULL) {
            return false;
        }
        ks_set_ptr(to, dst.p, dst.len, t, ops->dup(e), ops->free, ks_entry_expire(e));
    }
    if (ks_entry_type(e) == KS_HASH) {
        hash_ttl_note(c->shard, db, dst); /* (harmless when it has no timed field) */
    }
    multi_touch_db(c->shard, db, dst);
    return true;
}

CMD_HANDLER(move)
{
    (void)argc;
    unsigned db;
    if (db_cluster(c)) {
        reply_errf(c, "ERR MOVE is not allowed in cluster mode");
        return;
    }
    if (!db_parse_index(c, argv[2], &db)) {
        return;
    }
    if (db == c->env->db) {
        reply_errf(c, "ERR source and destination objects are the same");
        return;
    }
    struct ks_entry *e = ks_lookup(c->env->ks, argv[1].p, argv[1].len, c->env->now_ms);
    if (e == NULL || lookup_in(c, db, argv[1]) != NULL) {
        reply_int(c, 0);
        return;
    }
    e = ks_peek(c->env->ks, argv[1].p, argv[1].len); /* (views end at a keyspace call) */
    if (!db_copy_entry(c, e, db, argv[1])) {
        reply_errf(c, "ERR this value cannot be moved");
        return;
    }
    ks_delete(c->env->ks, argv[1].p, argv[1].len);
    ksn_event(c->env, KSN_GENERIC, "move_from", argv[1]);
    ksn_event_db(c->env, db, KSN_GENERIC, "move_to", argv[1]);
    reply_int(c, 1);
}

/* SWAPDB index1 index2: clients see the other database's data at once;
 * blocked clients re-run their command (a key they wait for may be there
 * now); as Redis, the watchers of a key present in either are flagged. */
CMD_HANDLER(swapdb)
{
    (void)argc;
    int64_t a, b;
    if (db_cluster(c)) {
        reply_errf(c, "ERR SWAPDB is not allowed in cluster mode");
        return;
    }
    if (!cmd_arg_int(argv[1], &a)) {
        reply_errf(c, "ERR invalid first DB index");
        return;
    }
    if (!cmd_arg_int(argv[2], &b)) {
        reply_errf(c, "ERR invalid second DB index");
        return;
    }
    if (a < 0 || b < 0 || a >= (int64_t)c->env->ndbs || b >= (int64_t)c->env->ndbs) {
        reply_err(c, RV_ERR_DBINDEX);
        return;
    }
    if (a != b) {
        struct shard_env *env = c->env;
        unsigned was = env->db;
        multi_touch_flush(c->shard, (unsigned)a, (int)b);
        multi_touch_flush(c->shard, (unsigned)b, (int)a);
        struct ks *x = shard_db(env, (unsigned)a), *y = shard_db(env, (unsigned)b);
        env->dbs[a] = y;
        env->dbs[b] = x;
        hash_ttl_swap(c->shard, (unsigned)a, (unsigned)b);
        shard_use_db(env, was); /* (env->ks may have been one of them) */
        block_signal_all(c->shard);
    }
    reply_ok(c);
}

void
db_info_keyspace(struct conn *c, struct buf *b)
{
    struct shard_env *env = c->env;
    for (unsigned i = 0; i < env->ndbs; i++) {
        struct ks *ks = env->dbs[i];
        size_t keys = ks != NULL ? ks_size(ks) : 0, expires = ks != NULL ? ks_expires_size(ks) : 0;
        if (rv_unlikely(ks != NULL && slotmig_hiding(env, ks))) {
            keys -= slotmig_hidden_keys(env);
            expires -= slotmig_hidden_volatile(env);
        }
        if (keys > 0) {
            buf_appendf(b, "db%u:keys=%zu,expires=%zu,avg_ttl=0\r\n", i, keys, expires);
        }
    }
}
