/* node/commands/t_list.c: the non-blocking list commands; the list object is
 * node/types/list.c. Semantics, reply shapes and error texts follow Redis 7.0. */
#include "node/commands/t_list.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/types/obj.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/core/effect.h"
#include "node/features/ksnotify.h"

#include <string.h>

static inline int64_t
cfg_fill(struct conn *c)
{
    return c->env->cfg->enc.list_max_listpack_size;
}

/* Read lookup: lazy expiry plus hit/miss stats (Redis lookupKeyRead). */
static struct ks_entry *
lookup_read(struct conn *c, struct rv_str k)
{
    struct ks_entry *e = ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
    struct shard_stats *st = &c->env->stats;
    if (e) {
        st->keyspace_hits++;
    } else {
        st->keyspace_misses++;
        ksn_event(c->env, KSN_KEY_MISS, "keymiss", k);
    }
    return e;
}

/* The list at key for a command: *l NULL when the key is missing. Replies
 * WRONGTYPE and returns false when the key holds another type. */
static bool
get_list(struct conn *c, struct rv_str k, bool read, struct list **l)
{
    struct ks_entry *e = read ? lookup_read(c, k)
                              : ks_lookup(c->env->ks, k.p, k.len, c->env->now_ms);
    *l = NULL;
    if (e == NULL) {
        return true;
    }
    if (ks_entry_type(e) != KS_LIST) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    *l = ks_entry_ptr(e);
    return true;
}

static struct list *
create_list(struct conn *c, struct rv_str k)
{
    struct list *l = list_create();
    ks_set_ptr(c->env->ks, k.p, k.len, KS_LIST, l, list_destroy, KS_NO_EXPIRE);
    return l;
}

static void
delete_if_empty(struct conn *c, struct rv_str k, struct list *l)
{
    if (list_len(l) == 0) {
        ks_delete(c->env->ks, k.p, k.len);
        ksn_event(c->env, KSN_GENERIC, "del", k);
    }
}

static inline void
reply_elem(struct conn *c, const uint8_t *p)
{
    struct lp_val v;
    lp_get(p, &v);
    if (v.p) {
        reply_bulk(c, v.p, v.len);
    } else {
        reply_bulk_int(c, v.v);
    }
}

static bool
parse_end(struct rv_str a, enum list_end *end)
{
    if (cmd_arg_is(a, "left")) {
        *end = LIST_HEAD;
    } else if (cmd_arg_is(a, "right")) {
        *end = LIST_TAIL;
    } else {
        return false;
    }
    return true;
}

/* LPUSH/RPUSH/LPUSHX/RPUSHX. */
static void
push_generic(struct conn *c, int argc, struct rv_str *argv, enum list_end end, bool xx)
{
    struct list *l;
    int64_t fill = cfg_fill(c);

    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        if (xx) {
            effect_none(c); /* (nothing to log or invalidate, as Redis) */
            reply_int(c, 0);
            return;
        }
        l = create_list(c, argv[1]);
    }
    for (int i = 2; i < argc; i++) {
        list_push(l, end, argv[i].p, argv[i].len, fill);
    }
    ksn_event(c->env, KSN_LIST, end == LIST_HEAD ? "lpush" : "rpush", argv[1]);
    /* Blocking layer: a client waiting on argv[1] can be served from here. */
    reply_int(c, (int64_t)list_len(l));
}

CMD_HANDLER(lpush)
{
    push_generic(c, argc, argv, LIST_HEAD, false);
}
CMD_HANDLER(rpush)
{
    push_generic(c, argc, argv, LIST_TAIL, false);
}
CMD_HANDLER(lpushx)
{
    push_generic(c, argc, argv, LIST_HEAD, true);
}
CMD_HANDLER(rpushx)
{
    push_generic(c, argc, argv, LIST_TAIL, true);
}

void
list_pop_reply(struct conn *c, struct rv_str key, struct list *l, enum list_end end, size_t count,
               enum list_reply shape)
{
    size_t len = list_len(l);
    struct lit it;

    if (shape == LIST_REPLY_ONE || shape == LIST_REPLY_KEY_ONE) {
        count = 1;
    }
    if (count > len) {
        count = len;
    }
    if (shape == LIST_REPLY_KEY_ONE || shape == LIST_REPLY_KEY_ARRAY) {
        reply_array(c, 2);
        reply_bulk(c, key.p, key.len);
    }
    if (shape == LIST_REPLY_ARRAY || shape == LIST_REPLY_KEY_ARRAY) {
        reply_array(c, count);
    }
    if (count > 0) {
        lit_seek(&it, l, end == LIST_HEAD ? 0 : (int64_t)len - 1);
        for (size_t i = 0; i < count; i++) {
            reply_elem(c, it.p);
            if (end == LIST_HEAD) {
                lit_next(&it);
            } else {
                lit_prev(&it);
            }
        }
    }
    list_drop(l, end, count);
    ksn_event(c->env, KSN_LIST, end == LIST_HEAD ? "lpop" : "rpop", key);
    delete_if_empty(c, key, l);
}

static void
pop_generic(struct conn *c, int argc, struct rv_str *argv, enum list_end end)
{
    struct list *l;
    int64_t count = 0;

    if (argc > 3) {
        reply_err_arity(c, end == LIST_HEAD ? "lpop" : "rpop");
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count) || count < 0) {
            reply_errf(c, "ERR value is out of range, must be positive");
            return;
        }
    }
    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        effect_none(c);
        if (argc == 3) {
            reply_null_array(c);
        } else {
            reply_null(c);
        }
        return;
    }
    list_pop_reply(c, argv[1], l, end, (size_t)count,
                   argc == 3 ? LIST_REPLY_ARRAY : LIST_REPLY_ONE);
}

CMD_HANDLER(lpop)
{
    pop_generic(c, argc, argv, LIST_HEAD);
}
CMD_HANDLER(rpop)
{
    pop_generic(c, argc, argv, LIST_TAIL);
}

CMD_HANDLER(llen)
{
    struct list *l;
    (void)argc;
    if (get_list(c, argv[1], true, &l)) {
        reply_int(c, l ? (int64_t)list_len(l) : 0);
    }
}

CMD_HANDLER(lrange)
{
    int64_t start, stop;
    struct list *l;
    struct lit it;
    (void)argc;

    if (!cmd_arg_int(argv[2], &start) || !cmd_arg_int(argv[3], &stop)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!get_list(c, argv[1], true, &l)) {
        return;
    }
    int64_t len = l ? (int64_t)list_len(l) : 0;
    if (start < 0) {
        start = start < -len ? 0 : start + len;
    }
    if (stop < 0) {
        stop = stop < -len ? -1 : stop + len;
    }
    if (stop >= len) {
        stop = len - 1;
    }
    if (l == NULL || start > stop || start >= len) {
        reply_array(c, 0);
        return;
    }
    size_t n = (size_t)(stop - start + 1);
    reply_array(c, n);
    lit_seek(&it, l, start);
    for (size_t i = 0; i < n; i++) {
        reply_elem(c, it.p);
        lit_next(&it);
    }
}

CMD_HANDLER(lindex)
{
    int64_t idx;
    struct list *l;
    struct lp_val v;
    (void)argc;

    if (!cmd_arg_int(argv[2], &idx)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!get_list(c, argv[1], true, &l)) {
        return;
    }
    if (l == NULL || !list_index(l, idx, &v)) {
        reply_null(c);
    } else if (v.p) {
        reply_bulk(c, v.p, v.len);
    } else {
        reply_bulk_int(c, v.v);
    }
}

CMD_HANDLER(lset)
{
    int64_t idx;
    struct list *l;
    (void)argc;

    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        reply_err(c, RV_ERR_NOSUCHKEY);
        return;
    }
    if (!cmd_arg_int(argv[2], &idx)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!list_set(l, idx, argv[3].p, argv[3].len, cfg_fill(c))) {
        reply_errf(c, "ERR index out of range");
        return;
    }
    ksn_event(c->env, KSN_LIST, "lset", argv[1]);
    reply_ok(c);
}

CMD_HANDLER(linsert)
{
    bool after;
    struct list *l;
    struct lp_key k;
    struct lit it;
    (void)argc;

    if (cmd_arg_is(argv[2], "after")) {
        after = true;
    } else if (cmd_arg_is(argv[2], "before")) {
        after = false;
    } else {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    lp_key_init(&k, argv[3].p, argv[3].len);
    for (lit_seek(&it, l, 0); it.p; lit_next(&it)) {
        if (lp_match(it.p, &k)) {
            lit_insert(&it, after, argv[4].p, argv[4].len, cfg_fill(c));
            ksn_event(c->env, KSN_LIST, "linsert", argv[1]);
            reply_int(c, (int64_t)list_len(l));
            return;
        }
    }
    effect_none(c);
    reply_int(c, -1);
}

CMD_HANDLER(lrem)
{
    int64_t count;
    struct list *l;
    struct lp_key k;
    struct lit it;
    int64_t removed = 0;
    (void)argc;

    if (!cmd_arg_int(argv[2], &count)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    bool forward = count >= 0;
    uint64_t limit = count == 0 ? UINT64_MAX : forward ? (uint64_t)count : 0 - (uint64_t)count;
    lp_key_init(&k, argv[3].p, argv[3].len);
    lit_seek(&it, l, forward ? 0 : (int64_t)list_len(l) - 1);
    while (it.p && (uint64_t)removed < limit) {
        if (lp_match(it.p, &k)) {
            lit_delete(&it, forward);
            removed++;
        } else if (forward) {
            lit_next(&it);
        } else {
            lit_prev(&it);
        }
    }
    if (removed > 0) {
        ksn_event(c->env, KSN_LIST, "lrem", argv[1]);
    } else {
        effect_none(c);
    }
    delete_if_empty(c, argv[1], l);
    reply_int(c, removed);
}

CMD_HANDLER(ltrim)
{
    int64_t start, stop;
    struct list *l;
    (void)argc;

    if (!cmd_arg_int(argv[2], &start) || !cmd_arg_int(argv[3], &stop)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (!get_list(c, argv[1], false, &l)) {
        return;
    }
    if (l == NULL) {
        reply_ok(c);
        return;
    }
    int64_t len = (int64_t)list_len(l);
    if (start < 0) {
        start = start < -len ? 0 : start + len;
    }
    if (stop < 0) {
        stop = stop < -len ? -1 : stop + len;
    }
    if (start > stop || start >= len) {
        list_drop(l, LIST_HEAD, (size_t)len); /* everything goes */
    } else {
        if (stop >= len) {
            stop = len - 1;
        }
        list_drop(l, LIST_TAIL, (size_t)(len - 1 - stop));
        list_drop(l, LIST_HEAD, (size_t)start);
    }
    ksn_event(c->env, KSN_LIST, "ltrim", argv[1]);
    delete_if_empty(c, argv[1], l);
    reply_ok(c);
}

CMD_HANDLER(lpos)
{
    int64_t rank = 1, count = -1, maxlen = 0;
    struct list *l;
    struct lp_key k;
    struct lit it;

    for (int i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        struct rv_str v = argv[i + 1];
        if (cmd_arg_is(argv[i], "rank")) {
            if (!cmd_arg_int(v, &rank)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (rank == 0) {
                reply_errf(c, "ERR RANK can't be zero: use 1 to start from the first match, "
                              "2 from the second ... or use negative to start from the end of "
                              "the list");
                return;
            }
            if (rank == INT64_MIN) {
                /* Its magnitude does not fit; later Redis versions refuse it too. */
                reply_errf(c, "ERR value is out of range, value must between "
                              "-9223372036854775807 and 9223372036854775807");
                return;
            }
        } else if (cmd_arg_is(argv[i], "count")) {
            if (!cmd_arg_int(v, &count) || count < 0) {
                reply_errf(c, "ERR COUNT can't be negative");
                return;
            }
        } else if (cmd_arg_is(argv[i], "maxlen")) {
            if (!cmd_arg_int(v, &maxlen) || maxlen < 0) {
                reply_errf(c, "ERR MAXLEN can't be negative");
                return;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    if (!get_list(c, argv[1], true, &l)) {
        return;
    }
    if (l == NULL) {
        if (count >= 0) {
            reply_array(c, 0);
        } else {
            reply_null(c);
        }
        return;
    }
    bool forward = rank > 0;
    int64_t skip = (forward ? rank : -rank) - 1; /* matches to pass over */
    int64_t len = (int64_t)list_len(l);
    size_t h = count >= 0 ? reply_defer(c) : 0;
    int64_t found = 0;
    lp_key_init(&k, argv[2].p, argv[2].len);
    lit_seek(&it, l, forward ? 0 : len - 1);
    for (int64_t i = 0; it.p && (maxlen == 0 || i < maxlen); i++) {
        if (lp_match(it.p, &k)) {
            if (skip > 0) {
                skip--;
            } else {
                int64_t pos = forward ? i : len - 1 - i;
                if (count < 0) {
                    reply_int(c, pos);
                    return;
                }
                reply_int(c, pos);
                found++;
                if (count > 0 && found == count) {
                    break;
                }
            }
        }
        if (forward) {
            lit_next(&it);
        } else {
            lit_prev(&it);
        }
    }
    if (count < 0) {
        reply_null(c);
    } else {
        reply_defer_array(c, h, (size_t)found);
    }
}

bool
list_move_reply(struct conn *c, struct rv_str src, struct list *sl, struct rv_str dst,
                enum list_end from, enum list_end to)
{
    struct list *dl;
    struct lp_val v;
    char small[64];
    char nbuf[24];
    size_t n;
    const char *s;
    char *heap = NULL;

    if (!get_list(c, dst, false, &dl)) {
        return false;
    }
    list_index(sl, from == LIST_HEAD ? 0 : -1, &v);
    /* Copy out first: the element's bytes die with the pop (and with any
     * push into the same list). */
    s = lp_val_bytes(&v, nbuf, &n);
    if (v.p) {
        char *buf = n <= sizeof(small) ? small : (heap = rv_malloc(n));
        memcpy(buf, s, n);
        s = buf;
    }
    list_drop(sl, from, 1);
    if (dl == NULL) {
        dl = create_list(c, dst);
    }
    list_push(dl, to, s, n, cfg_fill(c));
    ksn_event(c->env, KSN_LIST, to == LIST_HEAD ? "lpush" : "rpush", dst);
    ksn_event(c->env, KSN_LIST, from == LIST_HEAD ? "lpop" : "rpop", src);
    if (dl != sl) {
        delete_if_empty(c, src, sl);
    }
    /* Blocking layer: dst received an element here. */
    reply_bulk(c, s, n);
    rv_free(heap);
    return true;
}

static void
move_generic(struct conn *c, struct rv_str src, struct rv_str dst, enum list_end from,
             enum list_end to)
{
    struct list *sl;

    if (!get_list(c, src, false, &sl)) {
        return;
    }
    if (sl == NULL) {
        effect_none(c);
        reply_null(c);
        return;
    }
    list_move_reply(c, src, sl, dst, from, to);
}

CMD_HANDLER(lmove)
{
    enum list_end from, to;
    (void)argc;
    if (!parse_end(argv[3], &from) || !parse_end(argv[4], &to)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    move_generic(c, argv[1], argv[2], from, to);
}

CMD_HANDLER(rpoplpush)
{
    (void)argc;
    move_generic(c, argv[1], argv[2], LIST_TAIL, LIST_HEAD);
}

int
list_lmpop_keys(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    if (argc < 2 || !cmd_arg_int(argv[1], &nk) || nk <= 0 || nk > argc - 2) {
        return 0;
    }
    int n = 0;
    for (int64_t i = 0; i < nk && n < max; i++) {
        out[n++] = 2 + (int)i;
    }
    return n;
}

CMD_HANDLER(lmpop)
{
    int64_t nk;
    int64_t count = 1;
    enum list_end end;

    if (!cmd_arg_int(argv[1], &nk) || nk <= 0) {
        reply_errf(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (nk > argc - 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    int dir = 2 + (int)nk;
    if (!parse_end(argv[dir], &end)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    bool seen = false;
    for (int i = dir + 1; i < argc; i += 2) {
        if (seen || !cmd_arg_is(argv[i], "count") || i + 1 >= argc) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (!cmd_arg_int(argv[i + 1], &count) || count <= 0) {
            reply_errf(c, "ERR count should be greater than 0");
            return;
        }
        seen = true;
    }
    for (int i = 2; i < dir; i++) {
        struct list *l;
        if (!get_list(c, argv[i], false, &l)) {
            return;
        }
        if (l != NULL) {
            /* logged, watched and invalidated as the pop it was: its key only (as Redis) */
            effect_redo(c, end == LIST_TAIL ? "RPOP" : "LPOP", argv[i]);
            effect_arg_i64(c, count);
            list_pop_reply(c, argv[i], l, end, (size_t)count, LIST_REPLY_KEY_ARRAY);
            return;
        }
    }
    effect_none(c);
    reply_null_array(c);
}
