/* node/commands/cmd_string.c: string commands (GET, SET, INCR, APPEND, ...).
 *
 * Semantics follow Redis 7.0: reply types, error texts and the order in which
 * arguments are checked. Entries returned by the keyspace are views valid only
 * until the next modifying call, so no handler holds one across a write. */
#include "node/commands/cmds.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* SET / GETEX option flags. */
enum {
    SO_NX = 1u << 0,
    SO_XX = 1u << 1,
    SO_GET = 1u << 2,
    SO_KEEPTTL = 1u << 3,
    SO_PERSIST = 1u << 4,
    SO_EX = 1u << 5,
    SO_PX = 1u << 6,
    SO_EXAT = 1u << 7,
    SO_PXAT = 1u << 8,
};
#define SO_TTLS (SO_EX | SO_PX | SO_EXAT | SO_PXAT)

/* Redis's MAX_LONG_DOUBLE_CHARS: longer float arguments are rejected. */
#define LD_MAX_CHARS (5 * 1024)
/* "%.17Lf" of LDBL_MAX (4933 integer digits) plus sign, point and decimals. */
#define LD_BUF RESP_LD_MAX

static inline void
reply_str_value(struct conn *c, const struct ks_entry *e)
{
    char scratch[24];
    struct rv_str v = ks_str_get(e, scratch);
    reply_bulk(c, v.p, v.len);
}

static void
reply_expire_err(struct conn *c, const char *cmd)
{
    reply_errf(c, "ERR invalid expire time in '%s' command", cmd);
}

/* Convert an EX/PX/EXAT/PXAT argument to an absolute unix ms deadline, as
 * Redis does: the number must be > 0 and must not overflow once converted.
 * Replies and returns false on error. */
static bool
expire_arg(struct conn *c, struct rv_str a, bool seconds, bool relative, const char *cmd,
           int64_t *out)
{
    int64_t v;

    if (!cmd_arg_int(a, &v)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (v <= 0 || (seconds && v > INT64_MAX / 1000)) {
        reply_expire_err(c, cmd);
        return false;
    }
    if (seconds) {
        v *= 1000;
    }
    if (relative) {
        int64_t now = c->env->now_ms;
        if (v > INT64_MAX - now) {
            reply_expire_err(c, cmd);
            return false;
        }
        v += now;
    }
    *out = v;
    return true;
}

static unsigned
ttl_flag(struct rv_str a)
{
    if (cmd_arg_is(a, "ex")) {
        return SO_EX;
    }
    if (cmd_arg_is(a, "px")) {
        return SO_PX;
    }
    if (cmd_arg_is(a, "exat")) {
        return SO_EXAT;
    }
    if (cmd_arg_is(a, "pxat")) {
        return SO_PXAT;
    }
    return 0;
}

/* Parse SET options (is_set) or GETEX options from argv[j..]. On success
 * *flags holds SO_* bits and *exp the index of the TTL argument (0 if none).
 * Replies "syntax error" and returns false on a bad or conflicting option. */
static bool
parse_str_opts(struct conn *c, int argc, struct rv_str *argv, int j, bool is_set, unsigned *flags,
               int *exp)
{
    unsigned f = 0, t;

    *exp = 0;
    for (; j < argc; j++) {
        struct rv_str a = argv[j];
        if (is_set && cmd_arg_is(a, "nx") && !(f & SO_XX)) {
            f |= SO_NX;
        } else if (is_set && cmd_arg_is(a, "xx") && !(f & SO_NX)) {
            f |= SO_XX;
        } else if (is_set && cmd_arg_is(a, "get")) {
            f |= SO_GET;
        } else if (is_set && cmd_arg_is(a, "keepttl") && !(f & (SO_PERSIST | SO_TTLS))) {
            f |= SO_KEEPTTL;
        } else if (!is_set && cmd_arg_is(a, "persist") && !(f & (SO_KEEPTTL | SO_TTLS))) {
            f |= SO_PERSIST;
        } else if (j + 1 < argc && (t = ttl_flag(a)) != 0 &&
                   !(f & (SO_KEEPTTL | SO_PERSIST | (SO_TTLS & ~t)))) {
            f |= t;
            *exp = ++j;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    *flags = f;
    return true;
}

/* Deadline for the TTL flags in f from argv[idx]; replies on error. */
static bool
opts_deadline(struct conn *c, unsigned f, struct rv_str a, const char *cmd, int64_t *out)
{
    return expire_arg(c, a, (f & (SO_EX | SO_EXAT)) != 0, (f & (SO_EX | SO_PX)) != 0, cmd, out);
}

/* The common part of SET, SETNX, SETEX and PSETEX. deadline is absolute unix
 * ms or KS_NO_EXPIRE. Replies with ok_reply/null (or the old value with GET). */
static void
set_generic(struct conn *c, struct rv_str key, struct rv_str val, unsigned f, int64_t deadline,
            bool int_reply)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e;
    bool found;

    if (f & SO_GET) {
        e = lookup_read(c, key);
        if (e != NULL && ks_entry_type(e) != KS_STRING) {
            reply_err(c, RV_ERR_WRONGTYPE);
            return;
        }
        if (e != NULL) {
            reply_str_value(c, e);
        } else {
            reply_null(c);
        }
        found = e != NULL;
    } else if (f & (SO_NX | SO_XX)) {
        found = lookup_write(c, key) != NULL;
    } else {
        found = false;
    }
    if (((f & SO_NX) && found) || ((f & SO_XX) && !found)) {
        effect_none(c); /* (nothing changed: no record, no invalidation) */
        if (int_reply) {
            reply_int(c, 0);
        } else if (!(f & SO_GET)) {
            reply_null(c);
        }
        return;
    }
    if (deadline != KS_NO_EXPIRE && deadline <= c->env->now_ms) {
        /* Set and expired at once: the key is gone afterwards. */
        ks_delete(ks, key.p, key.len);
    } else {
        ks_set_str(ks, key.p, key.len, val.p, val.len, deadline, (f & SO_KEEPTTL) != 0);
    }
    ksn_event(c->env, KSN_STRING, "set", key);
    if (deadline != KS_NO_EXPIRE) {
        ksn_event(c->env, KSN_GENERIC, "expire", key);
    }
    if (int_reply) {
        reply_int(c, 1);
    } else if (!(f & SO_GET)) {
        reply_ok(c);
    }
}

CMD_HANDLER(get)
{
    struct ks_entry *e = lookup_read(c, argv[1]);

    (void)argc;
    if (e == NULL) {
        reply_null(c);
    } else if (rv_unlikely(ks_entry_type(e) != KS_STRING)) {
        reply_err(c, RV_ERR_WRONGTYPE);
    } else {
        reply_str_value(c, e);
    }
}

CMD_HANDLER(set)
{
    unsigned f = 0;
    int exp = 0;
    int64_t deadline = KS_NO_EXPIRE;

    if (rv_likely(argc == 3)) {
        ks_set_str(c->env->ks, argv[1].p, argv[1].len, argv[2].p, argv[2].len, KS_NO_EXPIRE, false);
        ksn_event(c->env, KSN_STRING, "set", argv[1]);
        reply_ok(c);
        return;
    }
    if (!parse_str_opts(c, argc, argv, 3, true, &f, &exp)) {
        return;
    }
    if (exp != 0 && !opts_deadline(c, f, argv[exp], "set", &deadline)) {
        return;
    }
    set_generic(c, argv[1], argv[2], f, deadline, false);
}

CMD_HANDLER(setnx)
{
    (void)argc;
    set_generic(c, argv[1], argv[2], SO_NX, KS_NO_EXPIRE, true);
}

CMD_HANDLER(setex)
{
    int64_t deadline;

    (void)argc;
    if (expire_arg(c, argv[2], true, true, "setex", &deadline)) {
        set_generic(c, argv[1], argv[3], 0, deadline, false);
    }
}

CMD_HANDLER(psetex)
{
    int64_t deadline;

    (void)argc;
    if (expire_arg(c, argv[2], false, true, "psetex", &deadline)) {
        set_generic(c, argv[1], argv[3], 0, deadline, false);
    }
}

CMD_HANDLER(mget)
{
    reply_array(c, (size_t)(argc - 1));
    for (int i = 1; i < argc; i++) {
        struct ks_entry *e = lookup_read(c, argv[i]);
        if (e == NULL || ks_entry_type(e) != KS_STRING) {
            reply_null(c);
        } else {
            reply_str_value(c, e);
        }
    }
}

static bool
mset_arity_ok(struct conn *c, int argc, const char *cmd)
{
    if ((argc % 2) == 0) {
        reply_err_arity(c, cmd);
        return false;
    }
    return true;
}

CMD_HANDLER(mset)
{
    struct ks *ks = c->env->ks;

    if (!mset_arity_ok(c, argc, "mset")) {
        return;
    }
    for (int i = 1; i < argc; i += 2) {
        ks_set_str(ks, argv[i].p, argv[i].len, argv[i + 1].p, argv[i + 1].len, KS_NO_EXPIRE, false);
        ksn_event(c->env, KSN_STRING, "set", argv[i]);
    }
    reply_ok(c);
}

CMD_HANDLER(msetnx)
{
    struct ks *ks = c->env->ks;

    if (!mset_arity_ok(c, argc, "msetnx")) {
        return;
    }
    for (int i = 1; i < argc; i += 2) {
        if (lookup_write(c, argv[i]) != NULL) {
            effect_none(c);
            reply_int(c, 0);
            return;
        }
    }
    for (int i = 1; i < argc; i += 2) {
        ks_set_str(ks, argv[i].p, argv[i].len, argv[i + 1].p, argv[i + 1].len, KS_NO_EXPIRE, false);
        ksn_event(c->env, KSN_STRING, "set", argv[i]);
    }
    reply_int(c, 1);
}

CMD_HANDLER(getset)
{
    (void)argc;
    set_generic(c, argv[1], argv[2], SO_GET, KS_NO_EXPIRE, false);
}

CMD_HANDLER(getdel)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_read(c, argv[1]);

    (void)argc;
    if (e == NULL) {
        effect_none(c);
        reply_null(c);
        return;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    reply_str_value(c, e); /* copied into the output before the delete */
    ks_delete(ks, argv[1].p, argv[1].len);
    ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
}

CMD_HANDLER(getex)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e;
    unsigned f;
    int exp;
    int64_t deadline = KS_NO_EXPIRE;

    if (!parse_str_opts(c, argc, argv, 2, false, &f, &exp)) {
        return;
    }
    e = lookup_read(c, argv[1]);
    if (e == NULL) {
        reply_null(c);
        effect_none(c);
        return;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (exp != 0 && !opts_deadline(c, f, argv[exp], "getex", &deadline)) {
        return;
    }
    reply_str_value(c, e);
    /* logged as what it did to the deadline, made absolute */
    if ((f & (SO_EXAT | SO_PXAT)) && deadline <= c->env->now_ms) {
        /* (as EXPIRE in the past: lazyfree-lazy-expire's choice, as Redis 7.0) */
        effect_redo(c, c->env->cfg->mem.lazyfree_lazy_expire ? "UNLINK" : "DEL", argv[1]);
        ks_delete_expired(ks, argv[1].p, argv[1].len);
        ksn_event(c->env, KSN_GENERIC, "del", argv[1]);
    } else if (exp != 0) {
        effect_redo(c, "PEXPIREAT", argv[1]);
        effect_arg_i64(c, deadline);
        ks_set_expire(ks, e, deadline);
        ksn_event(c->env, KSN_GENERIC, "expire", argv[1]);
    } else if ((f & SO_PERSIST) && ks_entry_expire(e) != KS_NO_EXPIRE) {
        effect_redo(c, "PERSIST", argv[1]);
        ks_set_expire(ks, e, KS_NO_EXPIRE);
        ksn_event(c->env, KSN_GENERIC, "persist", argv[1]);
    } else {
        effect_none(c);
    }
}

/* Redis checkStringLength: size + append must fit proto-max-bulk-len. */
static bool
str_size_ok(struct conn *c, uint64_t size, uint64_t append)
{
    int64_t max = c->env->cfg->net.proto_max_bulk_len;

    if (size > (uint64_t)INT64_MAX - append || (int64_t)(size + append) > max) {
        reply_err(c, RV_ERR_STRING_SIZE);
        return false;
    }
    return true;
}

CMD_HANDLER(append)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_write(c, argv[1]);
    size_t olen;
    char *p;

    (void)argc;
    if (e == NULL) {
        ks_set_str(ks, argv[1].p, argv[1].len, argv[2].p, argv[2].len, KS_NO_EXPIRE, false);
        ksn_event(c->env, KSN_STRING, "append", argv[1]);
        reply_int(c, (int64_t)argv[2].len);
        return;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    olen = ks_str_len(e);
    if (!str_size_ok(c, olen, argv[2].len)) {
        return;
    }
    p = ks_str_resize(ks, &e, olen + argv[2].len);
    memcpy(p + olen, argv[2].p, argv[2].len);
    ksn_event(c->env, KSN_STRING, "append", argv[1]);
    reply_int(c, (int64_t)(olen + argv[2].len));
}

CMD_HANDLER(strlen)
{
    struct ks_entry *e = lookup_read(c, argv[1]);

    (void)argc;
    if (e == NULL) {
        reply_int(c, 0);
    } else if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
    } else {
        reply_int(c, (int64_t)ks_str_len(e));
    }
}

/* INCR/DECR/INCRBY/DECRBY: add by to the integer at key (created as 0). */
static void
incr_by(struct conn *c, struct rv_str key, int64_t by)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_write(c, key);
    int64_t cur, v;

    if (e == NULL) {
        ks_set_int(ks, key.p, key.len, by, KS_NO_EXPIRE, false);
        ksn_event(c->env, KSN_STRING, "incrby", key);
        reply_int(c, by);
        return;
    }
    if (rv_unlikely(ks_entry_type(e) != KS_STRING)) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (rv_likely(ks_str_is_int(e))) {
        cur = ks_str_int(e);
    } else {
        char scratch[24];
        if (!cmd_arg_int(ks_str_get(e, scratch), &cur)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
    }
    if (__builtin_add_overflow(cur, by, &v)) {
        reply_err(c, RV_ERR_OVERFLOW);
        return;
    }
    ks_str_set_int(ks, e, v); /* in place when int-encoded; keeps the TTL */
    ksn_event(c->env, KSN_STRING, "incrby", key);
    reply_int(c, v);
}

CMD_HANDLER(incr)
{
    (void)argc;
    incr_by(c, argv[1], 1);
}

CMD_HANDLER(decr)
{
    (void)argc;
    incr_by(c, argv[1], -1);
}

CMD_HANDLER(incrby)
{
    int64_t by;

    if (rv_unlikely(argc > 3)) {
        coord_incrby_max(c, argc, argv); /* INCRBY key increment MAX limit (t_coord.c) */
        return;
    }
    if (!cmd_arg_int(argv[2], &by)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    incr_by(c, argv[1], by);
}

CMD_HANDLER(decrby)
{
    int64_t by;

    (void)argc;
    if (!cmd_arg_int(argv[2], &by)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (by == INT64_MIN) {
        reply_errf(c, "ERR decrement would overflow");
        return;
    }
    incr_by(c, argv[1], -by);
}

/* Redis string2ld: at most LD_MAX_CHARS-1 bytes, no leading space, no NaN. */
static bool
parse_ldouble(struct rv_str a, long double *out)
{
    return a.len < LD_MAX_CHARS && cmd_arg_double(a, out);
}

CMD_HANDLER(incrbyfloat)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_write(c, argv[1]);
    long double cur = 0, by;
    char buf[LD_BUF];
    size_t n;

    (void)argc;
    if (e != NULL) {
        if (ks_entry_type(e) != KS_STRING) {
            reply_err(c, RV_ERR_WRONGTYPE);
            return;
        }
        if (ks_str_is_int(e)) {
            cur = (long double)ks_str_int(e);
        } else {
            char scratch[24];
            if (!parse_ldouble(ks_str_get(e, scratch), &cur)) {
                reply_err(c, RV_ERR_NOTFLOAT);
                return;
            }
        }
    }
    if (!parse_ldouble(argv[2], &by)) {
        reply_err(c, RV_ERR_NOTFLOAT);
        return;
    }
    cur += by;
    if (isnan(cur) || isinf(cur)) {
        reply_err(c, RV_ERR_NANINF);
        return;
    }
    n = resp_fmt_ldouble(buf, sizeof(buf), cur);
    /* Stored as a string like Redis; an existing key keeps its TTL. */
    ks_set_str(ks, argv[1].p, argv[1].len, buf, n, KS_NO_EXPIRE, true);
    ksn_event(c->env, KSN_STRING, "incrbyfloat", argv[1]);
    reply_bulk(c, buf, n);
    /* logged as the value it stored: replaying the addition could round differently */
    effect_redo(c, "SET", argv[1]);
    effect_arg(c, buf, n);
    effect_arg(c, "KEEPTTL", 7);
}

CMD_HANDLER(getrange)
{
    int64_t start, end, len;
    struct ks_entry *e;
    struct rv_str v;
    char scratch[24];

    (void)argc;
    if (!cmd_arg_int(argv[2], &start) || !cmd_arg_int(argv[3], &end)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    e = lookup_read(c, argv[1]);
    if (e == NULL) {
        reply_bulk(c, "", 0);
        return;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    v = ks_str_get(e, scratch);
    len = (int64_t)v.len;
    if (start < 0 && end < 0 && start > end) {
        reply_bulk(c, "", 0);
        return;
    }
    if (start < 0) {
        start += len;
    }
    if (end < 0) {
        end += len;
    }
    if (start < 0) {
        start = 0;
    }
    if (end < 0) {
        end = 0;
    }
    if (end >= len) {
        end = len - 1;
    }
    if (start > end || len == 0) {
        reply_bulk(c, "", 0);
    } else {
        reply_bulk(c, v.p + start, (size_t)(end - start + 1));
    }
}

CMD_HANDLER(setrange)
{
    struct ks *ks = c->env->ks;
    struct rv_str val = argv[3];
    struct ks_entry *e;
    int64_t off;
    size_t olen, newlen;
    char *p;

    (void)argc;
    if (!cmd_arg_int(argv[2], &off)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (off < 0) {
        reply_err(c, RV_ERR_OFFSET_RANGE);
        return;
    }
    e = lookup_write(c, argv[1]);
    if (e == NULL) {
        if (val.len == 0) {
            effect_none(c);
            reply_int(c, 0);
            return;
        }
        if (!str_size_ok(c, (uint64_t)off, val.len)) {
            return;
        }
        e = ks_set_str(ks, argv[1].p, argv[1].len, "", 0, KS_NO_EXPIRE, false);
        olen = 0;
    } else {
        if (ks_entry_type(e) != KS_STRING) {
            reply_err(c, RV_ERR_WRONGTYPE);
            return;
        }
        olen = ks_str_len(e);
        if (val.len == 0) {
            effect_none(c); /* (Redis: nothing written, no event) */
            reply_int(c, (int64_t)olen);
            return;
        }
        if (!str_size_ok(c, (uint64_t)off, val.len)) {
            return;
        }
    }
    newlen = (size_t)off + val.len;
    if (newlen < olen) {
        newlen = olen;
    }
    p = ks_str_resize(ks, &e, newlen);
    memcpy(p + off, val.p, val.len);
    ksn_event(c->env, KSN_STRING, "setrange", argv[1]);
    reply_int(c, (int64_t)newlen);
}
