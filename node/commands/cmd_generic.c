/* node/commands/cmd_generic.c: keyspace commands (DEL, EXPIRE, TTL, KEYS, SCAN, RENAME,
 * COPY, OBJECT, MEMORY USAGE, ...).
 *
 * Semantics follow Redis 7.0. Entries returned by the keyspace are views valid
 * only until the next modifying call: multi-key handlers look every key up
 * afresh and never keep an entry across a write. */
#include "node/features/multi.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"

#include "base/clock.h"
#include "cluster/slot.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/features/evict.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/types/obj.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <limits.h>
#include <string.h>

/* Redis's shared integer objects (0..9999) report this refcount. */
#define SHARED_INT_MAX 10000
#define SHARED_REFCOUNT INT_MAX
/* MEMORY USAGE: the table slot that points at an entry. */
#define TABLE_SLOT_BYTES sizeof(uint64_t)
/* RANDOMKEY: picks of expired keys (each deleted) before giving up. */
#define RANDOMKEY_TRIES 100
/* SCAN: keys collected on the stack before spilling to the heap. */
#define SCAN_STACK_KEYS 64

static bool
str_eq(struct rv_str a, struct rv_str b)
{
    return a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* ------------------------------------------------------------ DEL EXISTS */

/* Logged (and so invalidated for CLIENT TRACKING, as Redis) as the keys it
 * really deleted: none, all of them, or a DEL of those. lazy (UNLINK, or DEL
 * with lazyfree-lazy-user-del): a big value is unlinked now and freed by the
 * lazy-free thread (node/core/lazyfree.h). */
static void
del_generic(struct conn *c, int argc, struct rv_str *argv, bool lazy)
{
    struct ks *ks = c->env->ks;
    int64_t now = c->env->now_ms, n = 0;
    bool stack[64];
    bool *gone = argc <= 64 ? stack : rv_malloc((size_t)argc * sizeof(bool));

    for (int i = 1; i < argc; i++) {
        struct ks_entry *e = ks_peek(ks, argv[i].p, argv[i].len);
        gone[i] = false;
        if (e == NULL) {
            continue;
        }
        if (entry_expired(e, now)) {
            ks_lookup(ks, argv[i].p, argv[i].len, now); /* expires it: not counted */
            continue;
        }
        if (ks_delete_how(ks, argv[i].p, argv[i].len, lazy)) {
            ksn_event(c->env, KSN_GENERIC, "del", argv[i]);
            gone[i] = true;
            n++;
        }
    }
    if (n == 0) {
        effect_none(c);
    } else if (n < argc - 1) {
        bool first = true;
        for (int i = 1; i < argc; i++) {
            if (gone[i] && first) {
                effect_redo(c, "DEL", argv[i]);
                first = false;
            } else if (gone[i]) {
                effect_arg(c, argv[i].p, argv[i].len);
            }
        }
    }
    if (gone != stack) {
        rv_free(gone);
    }
    reply_int(c, n);
}

CMD_HANDLER(del)
{
    del_generic(c, argc, argv, c->env->cfg->mem.lazyfree_lazy_user_del);
}

CMD_HANDLER(unlink)
{
    del_generic(c, argc, argv, true);
}

CMD_HANDLER(exists)
{
    int64_t n = 0;

    for (int i = 1; i < argc; i++) {
        n += lookup_notouch(c, argv[i], true) != NULL;
    }
    reply_int(c, n);
}

CMD_HANDLER(touch)
{
    int64_t n = 0;

    for (int i = 1; i < argc; i++) {
        n += lookup_read(c, argv[i]) != NULL;
    }
    reply_int(c, n);
}

CMD_HANDLER(type)
{
    struct ks_entry *e = lookup_notouch(c, argv[1], true);

    (void)argc;
    reply_simple(c, e != NULL ? obj_type_name(ks_entry_type(e)) : "none");
}

/* ---------------------------------------------------------------- EXPIRE */

enum {
    EXP_NX = 1u << 0,
    EXP_XX = 1u << 1,
    EXP_GT = 1u << 2,
    EXP_LT = 1u << 3,
};

/* EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT. The (converted) argument is relative to
 * now for the relative forms and absolute (unix time) otherwise. */
static void
expire_generic(struct conn *c, int argc, struct rv_str *argv, bool seconds, bool relative,
               const char *cmd)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e;
    unsigned f = 0;
    int64_t when, base = relative ? c->env->now_ms : 0, cur;

    for (int j = 3; j < argc; j++) {
        if (cmd_arg_is(argv[j], "nx")) {
            f |= EXP_NX;
        } else if (cmd_arg_is(argv[j], "xx")) {
            f |= EXP_XX;
        } else if (cmd_arg_is(argv[j], "gt")) {
            f |= EXP_GT;
        } else if (cmd_arg_is(argv[j], "lt")) {
            f |= EXP_LT;
        } else {
            int n = (int)(argv[j].len > 128 ? 128 : argv[j].len);
            reply_errf(c, "ERR Unsupported option %.*s", n, argv[j].p);
            return;
        }
    }
    if ((f & EXP_NX) && (f & (EXP_XX | EXP_GT | EXP_LT))) {
        reply_err(c, RV_ERR_NX_XX_GT_LT);
        return;
    }
    if ((f & EXP_GT) && (f & EXP_LT)) {
        reply_err(c, RV_ERR_GT_LT_NX);
        return;
    }
    if (!cmd_arg_int(argv[2], &when)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (seconds) {
        if (when > INT64_MAX / 1000 || when < INT64_MIN / 1000) {
            reply_errf(c, "ERR invalid expire time in '%s' command", cmd);
            return;
        }
        when *= 1000;
    }
    if (when > INT64_MAX - base) {
        reply_errf(c, "ERR invalid expire time in '%s' command", cmd);
        return;
    }
    when += base;

    e = lookup_write(c, argv[1]);
    if (e == NULL) {
        reply_int(c, 0);
        effect_none(c);
        return;
    }
    cur = ks_entry_expire(e);
    if (((f & EXP_NX) && cur != KS_NO_EXPIRE) || ((f & EXP_XX) && cur == KS_NO_EXPIRE) ||
        ((f & EXP_GT) && (cur == KS_NO_EXPIRE || when <= cur)) ||
        ((f & EXP_LT) && cur != KS_NO_EXPIRE && when >= cur)) {
        reply_int(c, 0);
        effect_none(c);
        return;
    }
    /* logged as what it did, with the deadline made absolute (and the condition already met) */
    if (when <= c->env->now_ms) {
        /* deleted as an expiry is (Redis 7.0's expireGenericCommand: lazyfree-lazy-expire,
         * and logged as UNLINK when that frees it lazily) */
        effect_redo(c, c->env->cfg->mem.lazyfree_lazy_expire ? "UNLINK" : "DEL", argv[1]);
        ks_delete_expired(ks, argv[1].p, argv[1].len);
        ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
    } else {
        effect_redo(c, "PEXPIREAT", argv[1]);
        effect_arg_i64(c, when);
        ks_set_expire(ks, e, when);
        ksn_event(c->env, KSN_GENERIC, "expire", argv[1]);
    }
    reply_int(c, 1);
}

CMD_HANDLER(expire)
{
    expire_generic(c, argc, argv, true, true, "expire");
}

CMD_HANDLER(pexpire)
{
    expire_generic(c, argc, argv, false, true, "pexpire");
}

CMD_HANDLER(expireat)
{
    expire_generic(c, argc, argv, true, false, "expireat");
}

CMD_HANDLER(pexpireat)
{
    expire_generic(c, argc, argv, false, false, "pexpireat");
}

/* TTL/PTTL/EXPIRETIME/PEXPIRETIME: -2 missing, -1 no deadline. */
static void
ttl_generic(struct conn *c, struct rv_str key, bool ms, bool absolute)
{
    struct ks_entry *e = lookup_notouch(c, key, true);
    int64_t dl, v;

    if (e == NULL) {
        reply_int(c, -2);
        return;
    }
    dl = ks_entry_expire(e);
    if (dl == KS_NO_EXPIRE) {
        reply_int(c, -1);
        return;
    }
    v = absolute ? dl : dl - c->env->now_ms;
    if (v < 0) {
        v = 0;
    }
    reply_int(c, ms ? v : (v + 500) / 1000);
}

CMD_HANDLER(ttl)
{
    (void)argc;
    ttl_generic(c, argv[1], false, false);
}

CMD_HANDLER(pttl)
{
    (void)argc;
    ttl_generic(c, argv[1], true, false);
}

CMD_HANDLER(expiretime)
{
    (void)argc;
    ttl_generic(c, argv[1], false, true);
}

CMD_HANDLER(pexpiretime)
{
    (void)argc;
    ttl_generic(c, argv[1], true, true);
}

CMD_HANDLER(persist)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_write(c, argv[1]);

    (void)argc;
    if (e == NULL || ks_entry_expire(e) == KS_NO_EXPIRE) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    ks_set_expire(ks, e, KS_NO_EXPIRE);
    ksn_event(c->env, KSN_GENERIC, "persist", argv[1]);
    reply_int(c, 1);
}

/* ------------------------------------------------------------ KEYS SCAN */

struct keys_ctx {
    struct conn *c;
    const struct shard_env *hide; /* keys of slots being imported are hidden; NULL: none */
    const char *pat;
    size_t plen;
    bool all;
    int64_t now;
    size_t n;
};

static void
keys_visit(void *arg, struct ks_entry *e)
{
    struct keys_ctx *k = arg;
    struct rv_str key;

    if (entry_expired(e, k->now)) {
        return;
    }
    key = ks_entry_key(e);
    if (!k->all && !glob_match(k->pat, k->plen, key.p, key.len, false)) {
        return;
    }
    if (k->hide != NULL && slotmig_hidden(k->hide, slot_of(key.p, key.len))) {
        return;
    }
    reply_bulk(k->c, key.p, key.len);
    k->n++;
}

CMD_HANDLER(keys)
{
    struct ks *ks = c->env->ks;
    struct keys_ctx k = {
        .c = c,
        .pat = argv[1].p,
        .plen = argv[1].len,
        .all = argv[1].len == 1 && argv[1].p[0] == '*',
        .hide = slotmig_hiding(c->env, ks) ? c->env : NULL,
        .now = c->env->now_ms,
        .n = 0,
    };
    size_t h = reply_defer(c);
    uint64_t cursor = 0;

    (void)argc;
    do {
        cursor = ks_scan(ks, cursor, 1024, keys_visit, &k);
    } while (cursor != 0);
    reply_defer_array(c, h, k.n);
}


struct scan_ctx {
    const char *pat;
    size_t plen;
    const char *type; /* NULL: any */
    size_t tlen;
    const struct shard_env *hide; /* as keys_ctx's */
    int64_t now;
    struct rv_str *keys;
    size_t n, cap;
    bool heap;
    bool oom;
};

static bool
type_is(const char *want, size_t wlen, enum ks_type t)
{
    struct rv_str w = { want, wlen };
    return cmd_arg_is(w, obj_type_name(t));
}

static void
scan_visit(void *arg, struct ks_entry *e)
{
    struct scan_ctx *s = arg;
    struct rv_str key;

    if (entry_expired(e, s->now)) {
        return;
    }
    key = ks_entry_key(e);
    if (s->pat != NULL && !glob_match(s->pat, s->plen, key.p, key.len, false)) {
        return;
    }
    if (s->type != NULL && !type_is(s->type, s->tlen, ks_entry_type(e))) {
        return;
    }
    if (s->hide != NULL && slotmig_hidden(s->hide, slot_of(key.p, key.len))) {
        return;
    }
    if (s->n == s->cap) {
        size_t ncap = s->cap * 2;
        struct rv_str *nk;
        if (s->heap) {
            nk = rv_realloc(s->keys, ncap * sizeof(*nk));
        } else {
            nk = rv_malloc(ncap * sizeof(*nk));
            if (nk != NULL) {
                memcpy(nk, s->keys, s->n * sizeof(*nk));
            }
        }
        if (nk == NULL) {
            s->oom = true;
            return;
        }
        s->keys = nk;
        s->cap = ncap;
        s->heap = true;
    }
    s->keys[s->n++] = key;
}

CMD_HANDLER(scan)
{
    struct rv_str stack[SCAN_STACK_KEYS];
    struct scan_ctx s = {
        .now = c->env->now_ms,
        .keys = stack,
        .cap = SCAN_STACK_KEYS,
    };
    uint64_t cursor, next;
    struct scan_opts o;

    if (!cmd_arg_cursor(argv[1], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    if (!cmd_parse_scan_opts(c, argc, argv, 2, SCAN_ALLOW_TYPE, &o)) {
        return;
    }
    s.pat = o.match.p;
    s.plen = o.match.len;
    s.type = o.type.p;
    s.tlen = o.type.len;
    s.hide = slotmig_hiding(c->env, c->env->ks) ? c->env : NULL;
    /* Key views stay valid: nothing modifies the keyspace until the reply is written. */
    next = ks_scan(c->env->ks, cursor, (size_t)o.count, scan_visit, &s);
    reply_array(c, 2);
    reply_bulk_u64(c, next);
    reply_array(c, s.n);
    for (size_t i = 0; i < s.n; i++) {
        reply_bulk(c, s.keys[i].p, s.keys[i].len);
    }
    if (s.heap) {
        rv_free(s.keys);
    }
}

/* splitmix64: spreads a weakly varying seed over all 64 bits. */
static uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct visible_walk {
    const struct shard_env *env;
    int64_t now;
    uint64_t skip; /* visible live keys to pass before the one picked */
    struct ks_entry *found;
};

static void
visible_visit(void *arg, struct ks_entry *e)
{
    struct visible_walk *w = arg;
    struct rv_str key = ks_entry_key(e);
    if (w->found != NULL || entry_expired(e, w->now) ||
        slotmig_hidden(w->env, slot_of(key.p, key.len))) {
        return;
    }
    if (w->skip-- == 0) {
        w->found = e;
    }
}

/* RANDOMKEY while keys of imported slots are hidden and sampling found only
 * those: a random one of the visible keys (a walk; expired keys are left to
 * active expiry). */
static void
randomkey_visible(struct conn *c, struct ks *ks, uint64_t seed)
{
    size_t size = ks_size(ks), hidden = slotmig_hidden_keys(c->env);
    struct visible_walk w = { c->env, c->env->now_ms, 0, NULL };
    if (size > hidden) {
        w.skip = mix64(seed) % (size - hidden);
    }
    for (int pass = 0; pass < 2 && size > hidden && w.found == NULL; pass++) {
        uint64_t cursor = 0;
        do {
            cursor = ks_scan(ks, cursor, 1024, visible_visit, &w);
        } while (cursor != 0 && w.found == NULL);
        w.skip = 0; /* (some were expired: the first visible one) */
    }
    if (w.found == NULL) {
        reply_null(c);
        return;
    }
    struct rv_str key = ks_entry_key(w.found);
    reply_bulk(c, key.p, key.len);
}

CMD_HANDLER(randomkey)
{
    struct ks *ks = c->env->ks;
    int64_t now = c->env->now_ms;
    uint64_t seed = clock_mono_us() ^ (c->env->stats.commands << 24) ^ c->id;

    (void)argc;
    (void)argv;
    bool hide = rv_unlikely(slotmig_hiding(c->env, ks));
    for (int t = 0; t < RANDOMKEY_TRIES; t++) {
        struct ks_entry *e = ks_random(ks, mix64(seed + (uint64_t)t * 0x9e3779b97f4a7c15ull));
        struct rv_str key;
        char small[256];
        char *copy;

        if (e == NULL) {
            break;
        }
        key = ks_entry_key(e);
        if (hide && slotmig_hidden(c->env, slot_of(key.p, key.len))) {
            continue;
        }
        if (!entry_expired(e, now)) {
            reply_bulk(c, key.p, key.len);
            return;
        }
        /* Expired: reclaim it (the key bytes live in the entry, so copy them first). */
        copy = key.len <= sizeof(small) ? small : rv_malloc(key.len);
        if (copy == NULL) {
            break;
        }
        memcpy(copy, key.p, key.len);
        ks_lookup(ks, copy, key.len, now);
        if (copy != small) {
            rv_free(copy);
        }
    }
    if (hide) {
        randomkey_visible(c, ks, seed);
        return;
    }
    reply_null(c);
}

/* ----------------------------------------------------------- RENAME COPY */

static void
rename_generic(struct conn *c, struct rv_str *argv, bool nx)
{
    struct ks *ks = c->env->ks;

    if (lookup_write(c, argv[1]) == NULL) {
        reply_err(c, RV_ERR_NOSUCHKEY);
        return;
    }
    if (str_eq(argv[1], argv[2])) {
        effect_none(c); /* (Redis: no event, no invalidation) */
        if (nx) {
            reply_int(c, 0);
        } else {
            reply_ok(c);
        }
        return;
    }
    if (nx && lookup_write(c, argv[2]) != NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    bool replaced = ksn_on(c->env, KSN_NEW) && ks_peek(ks, argv[2].p, argv[2].len) != NULL;
    ks_rename(ks, argv[1].p, argv[1].len, argv[2].p, argv[2].len);
    if (replaced) { /* (the keyspace reports only a name that was free) */
        ksn_event(c->env, KSN_NEW, "new", argv[2]);
    }
    ksn_event(c->env, KSN_GENERIC, "rename_from", argv[1]);
    ksn_event(c->env, KSN_GENERIC, "rename_to", argv[2]);
    if (nx) {
        reply_int(c, 1);
    } else {
        reply_ok(c);
    }
}

CMD_HANDLER(rename)
{
    (void)argc;
    rename_generic(c, argv, false);
}

CMD_HANDLER(renamenx)
{
    (void)argc;
    rename_generic(c, argv, true);
}

/* COPY ... DB n into another database (source looked up: it exists). */
static void
copy_to_db(struct conn *c, struct rv_str *argv, unsigned db, bool replace)
{
    unsigned was = c->env->db;
    shard_use_db(c->env, db); /* (a lazy expiry of the destination is db's) */
    bool exists = ks_lookup(c->env->ks, argv[2].p, argv[2].len, c->env->now_ms) != NULL;
    shard_use_db(c->env, was);
    if (exists && !replace) {
        reply_int(c, 0);
        return;
    }
    struct ks_entry *e = ks_peek(c->env->ks, argv[1].p, argv[1].len);
    if (!db_copy_entry(c, e, db, argv[2])) {
        reply_errf(c, "ERR this value cannot be copied");
        return;
    }
    if (exists) {
        ksn_event_db(c->env, db, KSN_NEW, "new", argv[2]);
    }
    ksn_event_db(c->env, db, KSN_GENERIC, "copy_to", argv[2]);
    reply_int(c, 1);
}

CMD_HANDLER(copy)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e;
    bool replace = false;
    unsigned dstdb = c->env->db;

    for (int j = 3; j < argc; j++) {
        if (cmd_arg_is(argv[j], "replace")) {
            replace = true;
        } else if (cmd_arg_is(argv[j], "db") && j + 1 < argc) {
            int64_t db;
            if (!cmd_arg_int(argv[j + 1], &db)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (db < 0 || db >= (int64_t)c->env->ndbs) {
                reply_err(c, RV_ERR_DBINDEX);
                return;
            }
            if (db != 0 && db_cluster(c)) {
                reply_errf(c, "ERR Copying to another database is not allowed in cluster mode");
                return;
            }
            dstdb = (unsigned)db;
            j++;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    if (dstdb == c->env->db && str_eq(argv[1], argv[2])) {
        reply_errf(c, "ERR source and destination objects are the same");
        return;
    }
    if (lookup_read(c, argv[1]) == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    if (dstdb != c->env->db) {
        copy_to_db(c, argv, dstdb, replace);
        return;
    }
    bool replaced = lookup_write(c, argv[2]) != NULL;
    if (replaced && !replace) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    /* The destination lookup may have expired (modified) the keyspace: look again. */
    e = ks_peek(ks, argv[1].p, argv[1].len);
    if (ks_copy(ks, e, argv[2].p, argv[2].len) == NULL) { /* not a string or an inline value */
        const struct obj_ops *ops = obj_ops_of(ks_entry_type(e));
        int64_t dl = ks_entry_expire(e);
        enum ks_type t = ks_entry_type(e);
        void *v = ops->dup(e);
        ks_set_ptr(ks, argv[2].p, argv[2].len, t, v, ops->free, dl);
    }
    if (replaced) { /* (Redis adds it anew; the keyspace reports only a name that was free) */
        ksn_event(c->env, KSN_NEW, "new", argv[2]);
    }
    ksn_event(c->env, KSN_GENERIC, "copy_to", argv[2]);
    reply_int(c, 1);
}

/* ------------------------------------------------------------- DB-WIDE */

CMD_HANDLER(dbsize)
{
    (void)argc;
    (void)argv;
    size_t n = ks_size(c->env->ks);
    if (rv_unlikely(slotmig_hiding(c->env, c->env->ks))) {
        n -= slotmig_hidden_keys(c->env);
    }
    reply_int(c, (int64_t)n);
}

/* One database emptied: at once, or (lazy) its keys left to the lazy-free
 * thread (Redis's emptyDbAsync: the keyspace is new and empty right away). */
static void
flush_db(struct shard_env *env, struct ks *ks, bool lazy)
{
    if (!lazy) {
        ks_flush(ks);
        return;
    }
    size_t keys = ks_size(ks);
    struct ks_husk *h = ks_flush_detach(ks);
    if (h != NULL) {
        shard_lazy_put(env, ks_husk_free, h, keys);
    }
}

/* FLUSHDB/FLUSHALL [SYNC|ASYNC]: ASYNC (or neither, with
 * lazyfree-lazy-user-flush) empties the keyspace at once and frees the old
 * keys on the lazy-free thread; SYNC frees them before the reply. */
static void
flush_generic(struct conn *c, int argc, struct rv_str *argv, bool all)
{
    if (argc > 2 || (argc == 2 && !cmd_arg_is(argv[1], "sync") && !cmd_arg_is(argv[1], "async"))) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bool lazy = argc == 2 ? cmd_arg_is(argv[1], "async")
                          : c->env->cfg->mem.lazyfree_lazy_user_flush;
    if (rv_unlikely(c->env->slotmig != NULL) && slotmig_paused(c->env)) {
        /* (the target holds the slots' keys and is about to own them; before
         * the pause a flush makes the job copy the slots again) */
        effect_none(c);
        reply_errf(c, "ERR A slot migration is committing on this node (CLUSTER "
                      "GETSLOTMIGRATIONS)");
        return;
    }
    if (all) {
        for (unsigned i = 0; i < c->env->ndbs; i++) {
            multi_touch_flush(c->shard, i, -1);
        }
        for (unsigned i = 0; i < c->env->ndbs; i++) {
            if (c->env->dbs[i] != NULL) {
                flush_db(c->env, c->env->dbs[i], lazy);
            }
        }
    } else {
        multi_touch_flush(c->shard, c->env->db, -1);
        flush_db(c->env, c->env->ks, lazy);
    }
    if (!lazy) {
        rv_mem_purge_thread(); /* hand the freed pages back now, not over the decay time (as Redis) */
    }
    reply_ok(c);
}

CMD_HANDLER(flushdb)
{
    flush_generic(c, argc, argv, false);
}

CMD_HANDLER(flushall)
{
    flush_generic(c, argc, argv, true);
}

/* --------------------------------------------------------------- OBJECT */

static const char *
enc_name(const struct ks_entry *e)
{
    switch (ks_entry_type(e)) {
    case KS_STRING:
        switch (ks_str_enc(e)) {
        case KS_ENC_INT: return "int";
        case KS_ENC_EMBSTR: return "embstr";
        case KS_ENC_RAW: return "raw";
        }
        return "raw";
    default: {
        const struct obj_ops *ops = obj_ops_of(ks_entry_type(e));
        return ops ? ops->encoding(e) : "unknown";
    }
    }
}

CMD_HANDLER(object_encoding)
{
    struct ks_entry *e = lookup_object(c, argv[2]);

    (void)argc;
    if (e == NULL) {
        reply_null(c);
    } else {
        reply_bulk_cstr(c, enc_name(e));
    }
}

CMD_HANDLER(object_freq)
{
    struct ks_entry *e = lookup_object(c, argv[2]);

    (void)argc;
    if (e == NULL) {
        reply_null(c);
    } else if (!evict_lfu(c->shard)) {
        reply_err(c, RV_ERR_LFU); /* the access clock holds LRU seconds */
    } else {
        reply_int(c, (int64_t)ks_entry_freq(c->env->ks, e, c->env->now_ms));
    }
}

CMD_HANDLER(object_idletime)
{
    struct ks_entry *e = lookup_object(c, argv[2]);

    (void)argc;
    if (e == NULL) {
        reply_null(c);
    } else if (evict_lfu(c->shard)) {
        reply_err(c, RV_ERR_LFU_IDLE); /* the access clock holds an LFU counter */
    } else {
        reply_int(c, (int64_t)(ks_entry_idle_ms(e, c->env->now_ms) / 1000));
    }
}

CMD_HANDLER(object_refcount)
{
    struct ks_entry *e = lookup_object(c, argv[2]);

    (void)argc;
    if (e == NULL) {
        reply_null(c);
    } else if (ks_str_is_int(e) && ks_str_int(e) >= 0 && ks_str_int(e) < SHARED_INT_MAX) {
        reply_int(c, SHARED_REFCOUNT); /* Redis shares these integers */
    } else {
        reply_int(c, 1);
    }
}

static const char *const object_help_lines[] = {
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
};

CMD_HANDLER(object_help)
{
    size_t n = sizeof(object_help_lines) / sizeof(object_help_lines[0]);

    (void)argc;
    (void)argv;
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        reply_simple(c, object_help_lines[i]);
    }
}

/* --------------------------------------------------------------- MEMORY */

CMD_HANDLER(memory_usage)
{
    struct ks_entry *e;

    for (int j = 3; j < argc; j++) {
        int64_t samples;
        if (cmd_arg_is(argv[j], "samples") && j + 1 < argc) {
            if (!cmd_arg_int(argv[j + 1], &samples)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (samples < 0) {
                reply_err(c, RV_ERR_SYNTAX);
                return;
            }
            j++; /* strings have no elements to sample */
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    /* Like Redis: no access-clock update, no stats. */
    e = ks_peek(c->env->ks, argv[2].p, argv[2].len);
    if (e == NULL || entry_expired(e, c->env->now_ms)) {
        reply_null(c);
        return;
    }
    size_t mem = ks_entry_mem(e) + TABLE_SLOT_BYTES;
    if (ks_entry_type(e) != KS_STRING && obj_ops_of(ks_entry_type(e))) {
        mem += obj_ops_of(ks_entry_type(e))->mem(e);
    }
    reply_int(c, (int64_t)mem);
}
