/* node/commands/t_bitmap.c: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.
 * A bitmap is a plain string value; reads never create or grow it, writes grow
 * it (zero-filled) to cover the highest bit they touch. The bit helpers are
 * node/types/bitmap.c. */
#include "node/commands/t_bitmap.h"

#include "base/mem.h"
#include "node/core/config.h"
#include "node/core/effect.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"

#include <stdbool.h>
#include <string.h>

#define ERR_BIT_OFFSET "ERR bit offset is not an integer or out of range"
#define ERR_BIT_VALUE "ERR bit is not an integer or out of range"
#define ERR_BF_TYPE                                                                                \
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "    \
    "i64 is."

/* A bit offset argument; with hash_bits > 0, "#N" means N * hash_bits. The
 * multiplication wraps as Redis's does. Offsets whose byte is at or past
 * proto-max-bulk-len are refused. */
static bool
arg_bit_offset(struct conn *c, struct rv_str a, unsigned hash_bits, uint64_t *out)
{
    bool hash = hash_bits > 0 && a.len > 0 && a.p[0] == '#';
    struct rv_str num = { a.p + (hash ? 1 : 0), a.len - (hash ? 1 : 0) };
    int64_t v;

    if (!cmd_arg_int(num, &v)) {
        reply_errf(c, ERR_BIT_OFFSET);
        return false;
    }
    if (hash) {
        v = (int64_t)((uint64_t)v * hash_bits);
    }
    if (v < 0 || (v >> 3) >= c->env->cfg->net.proto_max_bulk_len) {
        reply_errf(c, ERR_BIT_OFFSET);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* The string at key, created or grown (zero-filled) to hold bit maxbit, as
 * writable bytes (*grew: it was); NULL after replying WRONGTYPE. */
static uint8_t *
str_for_bits(struct conn *c, struct rv_str key, uint64_t maxbit, size_t *lenp, bool *grew)
{
    struct ks *ks = c->env->ks;
    struct ks_entry *e = lookup_write(c, key);
    size_t need = (size_t)(maxbit >> 3) + 1, len;

    *grew = e == NULL || (ks_entry_type(e) == KS_STRING && ks_str_len(e) < need);
    if (e == NULL) {
        e = ks_set_str(ks, key.p, key.len, "", 0, KS_NO_EXPIRE, false);
    } else if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return NULL;
    }
    len = ks_str_len(e);
    if (len < need) {
        len = need;
    }
    *lenp = len;
    return (uint8_t *)ks_str_resize(ks, &e, len);
}

CMD_HANDLER(setbit)
{
    uint64_t off;
    int64_t on;
    size_t len;
    uint8_t *p;
    int old;
    bool grew;

    (void)argc;
    if (!arg_bit_offset(c, argv[2], 0, &off)) {
        return;
    }
    if (!cmd_arg_int(argv[3], &on) || (on != 0 && on != 1)) {
        reply_errf(c, ERR_BIT_VALUE);
        return;
    }
    p = str_for_bits(c, argv[1], off, &len, &grew);
    if (p == NULL) {
        return;
    }
    old = bitmap_bit_at(p, off);
    bitmap_set_bits(p, off, 1, (uint64_t)on);
    if (old != on) { /* (Redis 7 notifies a change only) */
        ksn_event(c->env, KSN_STRING, "setbit", argv[1]);
    } else if (!grew) {
        effect_none(c); /* (nothing to log or invalidate, as Redis) */
    }
    reply_int(c, old);
}

CMD_HANDLER(getbit)
{
    struct ks_entry *e;
    struct rv_str v;
    char scratch[24];
    uint64_t off;

    (void)argc;
    if (!arg_bit_offset(c, argv[2], 0, &off)) {
        return;
    }
    e = lookup_read(c, argv[1]);
    if (e == NULL) {
        reply_int(c, 0);
        return;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    v = ks_str_get(e, scratch);
    reply_int(c, (off >> 3) < v.len ? bitmap_bit_at((const uint8_t *)v.p, off) : 0);
}

/* BYTE|BIT unit argument: 1 for BIT, 0 for BYTE, -1 otherwise. */
static int
arg_unit(struct rv_str a)
{
    if (cmd_arg_is(a, "bit")) {
        return 1;
    }
    return cmd_arg_is(a, "byte") ? 0 : -1;
}

/* The string at argv[1] for a read-only bit command; *found false when the
 * key does not exist. false after replying WRONGTYPE. */
static bool
read_str(struct conn *c, struct rv_str key, char scratch[24], struct rv_str *out, bool *found)
{
    struct ks_entry *e = lookup_read(c, key);

    *found = e != NULL;
    if (e == NULL) {
        return true;
    }
    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    *out = ks_str_get(e, scratch);
    return true;
}

CMD_HANDLER(bitcount)
{
    char scratch[24];
    struct rv_str v;
    bool found;
    int64_t start, end, total;
    int isbit = 0;

    if (!read_str(c, argv[1], scratch, &v, &found)) {
        return;
    }
    if (!found) {
        reply_int(c, 0);
        return;
    }
    total = (int64_t)v.len;
    if (argc == 2) {
        reply_int(c, (int64_t)bitmap_count((const uint8_t *)v.p, v.len));
        return;
    }
    if (argc != 4 && argc != 5) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (!cmd_arg_int(argv[2], &start) || !cmd_arg_int(argv[3], &end)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (argc == 5 && (isbit = arg_unit(argv[4])) < 0) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (start < 0 && end < 0 && start > end) {
        reply_int(c, 0);
        return;
    }
    if (isbit) {
        total *= 8;
    }
    start = start < 0 ? (start + total < 0 ? 0 : start + total) : start;
    end = end < 0 ? (end + total < 0 ? 0 : end + total) : end;
    if (end >= total) {
        end = total - 1;
    }
    if (start > end) {
        reply_int(c, 0);
        return;
    }
    if (!isbit) {
        start *= 8;
        end = end * 8 + 7;
    }
    reply_int(c, (int64_t)bitmap_count_bits((const uint8_t *)v.p, (uint64_t)start, (uint64_t)end));
}

CMD_HANDLER(bitpos)
{
    char scratch[24];
    struct rv_str v;
    bool found, end_given = false;
    int64_t bit, start = 0, end, total, pos;
    int isbit = 0;

    if (!cmd_arg_int(argv[2], &bit)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (bit != 0 && bit != 1) {
        reply_errf(c, "ERR The bit argument must be 1 or 0.");
        return;
    }
    if (!read_str(c, argv[1], scratch, &v, &found)) {
        return;
    }
    if (!found) {
        reply_int(c, bit ? -1 : 0);
        return;
    }
    if (argc > 6) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    total = (int64_t)v.len;
    if (argc >= 4) {
        if (!cmd_arg_int(argv[3], &start)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (argc == 6 && (isbit = arg_unit(argv[5])) < 0) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
        if (isbit) {
            total *= 8;
        }
        if (argc >= 5) {
            if (!cmd_arg_int(argv[4], &end)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            end_given = true;
        }
    }
    if (!end_given) {
        end = total - 1;
    }
    start = start < 0 ? (start + total < 0 ? 0 : start + total) : start;
    end = end < 0 ? (end + total < 0 ? 0 : end + total) : end;
    if (end >= total) {
        end = total - 1;
    }
    if (start > end) {
        reply_int(c, -1);
        return;
    }
    if (!isbit) {
        start *= 8;
        end = end * 8 + 7;
    }
    pos = bitmap_pos_bits((const uint8_t *)v.p, (uint64_t)start, (uint64_t)end, (int)bit);
    if (pos < 0 && bit == 0 && !end_given) {
        /* No end given: the string counts as padded with zeros on the right. */
        pos = ((end >> 3) + 1) * 8;
    }
    reply_int(c, pos);
}

CMD_HANDLER(bitop)
{
    struct ks *ks = c->env->ks;
    enum bitmap_op op;
    size_t n = (size_t)argc - 3, maxlen = 0;
    struct rv_str *srcs;
    char(*scratch)[24];
    struct ks_entry *e;
    uint8_t *buf;

    if (cmd_arg_is(argv[1], "and")) {
        op = BITMAP_AND;
    } else if (cmd_arg_is(argv[1], "or")) {
        op = BITMAP_OR;
    } else if (cmd_arg_is(argv[1], "xor")) {
        op = BITMAP_XOR;
    } else if (cmd_arg_is(argv[1], "not")) {
        op = BITMAP_NOT;
    } else {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (op == BITMAP_NOT && n != 1) {
        reply_errf(c, "ERR BITOP NOT must be called with a single source key.");
        return;
    }
    /* Pass 1 expires and type-checks; pass 2 (no keyspace changes) takes views. */
    for (size_t i = 0; i < n; i++) {
        e = lookup_read(c, argv[3 + i]);
        if (e != NULL && ks_entry_type(e) != KS_STRING) {
            reply_err(c, RV_ERR_WRONGTYPE);
            return;
        }
    }
    srcs = rv_malloc(n * sizeof(*srcs));
    scratch = rv_malloc(n * sizeof(*scratch));
    for (size_t i = 0; i < n; i++) {
        e = ks_peek(ks, argv[3 + i].p, argv[3 + i].len);
        srcs[i] = e != NULL ? ks_str_get(e, scratch[i]) : (struct rv_str){ "", 0 };
        if (srcs[i].len > maxlen) {
            maxlen = srcs[i].len;
        }
    }
    if (maxlen == 0) {
        if (ks_delete(ks, argv[2].p, argv[2].len)) {
            ksn_event(c->env, KSN_GENERIC, "del", argv[2]);
        } else {
            effect_none(c); /* nothing stored, nothing deleted */
        }
    } else {
        buf = rv_malloc(maxlen);
        bitmap_op_apply(op, buf, maxlen, srcs, n);
        e = ks_set_str(ks, argv[2].p, argv[2].len, "", 0, KS_NO_EXPIRE, false);
        memcpy(ks_str_resize(ks, &e, maxlen), buf, maxlen);
        rv_free(buf);
        ksn_event(c->env, KSN_STRING, "set", argv[2]);
    }
    rv_free(scratch);
    rv_free(srcs);
    reply_int(c, (int64_t)maxlen);
}

enum bf_kind { BF_GET, BF_SET, BF_INCRBY };

struct bf_op {
    uint64_t off;
    int64_t val;
    enum bf_kind kind;
    enum bitmap_ovf ow;
    unsigned bits;
    bool sign;
};

/* "i1".."i64" or "u1".."u63" (lower case only, as in Redis). */
static bool
arg_bf_type(struct rv_str a, bool *sign, unsigned *bits)
{
    int64_t b;

    if (a.len < 2 || (a.p[0] != 'i' && a.p[0] != 'u')) {
        return false;
    }
    *sign = a.p[0] == 'i';
    if (!cmd_arg_int((struct rv_str){ a.p + 1, a.len - 1 }, &b) || b < 1 || b > (*sign ? 64 : 63)) {
        return false;
    }
    *bits = (unsigned)b;
    return true;
}

/* Parses every subcommand into ops; false after replying an error. */
static bool
bf_parse(struct conn *c, int argc, struct rv_str *argv, struct bf_op *ops, size_t *nops,
         uint64_t *maxbit, bool *writes)
{
    enum bitmap_ovf ow = BITMAP_OVF_WRAP;

    *nops = 0;
    *writes = false;
    *maxbit = 0;
    for (int j = 2; j < argc; j++) {
        int rem = argc - j - 1;
        struct bf_op *o = &ops[*nops];

        if (cmd_arg_is(argv[j], "get") && rem >= 2) {
            o->kind = BF_GET;
        } else if (cmd_arg_is(argv[j], "set") && rem >= 3) {
            o->kind = BF_SET;
        } else if (cmd_arg_is(argv[j], "incrby") && rem >= 3) {
            o->kind = BF_INCRBY;
        } else if (cmd_arg_is(argv[j], "overflow") && rem >= 1) {
            j++;
            if (cmd_arg_is(argv[j], "wrap")) {
                ow = BITMAP_OVF_WRAP;
            } else if (cmd_arg_is(argv[j], "sat")) {
                ow = BITMAP_OVF_SAT;
            } else if (cmd_arg_is(argv[j], "fail")) {
                ow = BITMAP_OVF_FAIL;
            } else {
                reply_errf(c, "ERR Invalid OVERFLOW type specified");
                return false;
            }
            continue;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
        if (!arg_bf_type(argv[j + 1], &o->sign, &o->bits)) {
            reply_errf(c, ERR_BF_TYPE);
            return false;
        }
        if (!arg_bit_offset(c, argv[j + 2], o->bits, &o->off)) {
            return false;
        }
        o->ow = ow;
        o->val = 0;
        if (o->kind != BF_GET) {
            *writes = true;
            if (o->off + o->bits - 1 > *maxbit) {
                *maxbit = o->off + o->bits - 1;
            }
            if (!cmd_arg_int(argv[j + 3], &o->val)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            j++;
        }
        j += 2;
        (*nops)++;
    }
    return true;
}

/* Runs one write op on p (len bytes, covering the field) and replies; true
 * when the field's value changed (Redis notifies only then). */
static bool
bf_write(struct conn *c, const struct bf_op *o, uint8_t *p, size_t len)
{
    int ovf;

    if (o->sign) {
        int64_t old = bitmap_get_signed(p, len, o->off, o->bits), nv;
        ovf = o->kind == BF_INCRBY ? bitmap_ovf_signed(old, o->val, o->bits, o->ow, &nv)
                                   : bitmap_ovf_signed(o->val, 0, o->bits, o->ow, &nv);
        if (ovf != 0 && o->ow == BITMAP_OVF_FAIL) {
            reply_null(c);
            return false;
        }
        bitmap_set_bits(p, o->off, o->bits, (uint64_t)nv);
        reply_int(c, o->kind == BF_INCRBY ? nv : old);
        return nv != old;
    } else {
        uint64_t old = bitmap_get_bits(p, len, o->off, o->bits), nv;
        ovf = o->kind == BF_INCRBY ? bitmap_ovf_unsigned(old, o->val, o->bits, o->ow, &nv)
                                   : bitmap_ovf_unsigned((uint64_t)o->val, 0, o->bits, o->ow, &nv);
        if (ovf != 0 && o->ow == BITMAP_OVF_FAIL) {
            reply_null(c);
            return false;
        }
        bitmap_set_bits(p, o->off, o->bits, nv);
        reply_int(c, (int64_t)(o->kind == BF_INCRBY ? nv : old));
        return nv != old;
    }
}

static void
bitfield_run(struct conn *c, int argc, struct rv_str *argv, bool ro_cmd)
{
    struct bf_op *ops = rv_malloc(((size_t)argc / 3 + 1) * sizeof(*ops));
    size_t nops, len = 0;
    uint64_t maxbit;
    bool writes, found, grew;
    const uint8_t *rp = (const uint8_t *)"";
    uint8_t *wp = NULL;
    char scratch[24];
    struct rv_str v;

    if (!bf_parse(c, argc, argv, ops, &nops, &maxbit, &writes)) {
        goto out;
    }
    if (!writes) {
        if (!read_str(c, argv[1], scratch, &v, &found)) {
            goto out;
        }
        if (found) {
            rp = (const uint8_t *)v.p;
            len = v.len;
        }
    } else if (ro_cmd) {
        reply_errf(c, "ERR BITFIELD_RO only supports the GET subcommand");
        goto out;
    } else {
        wp = str_for_bits(c, argv[1], maxbit, &len, &grew);
        if (wp == NULL) {
            goto out;
        }
        rp = wp;
    }
    reply_array(c, nops);
    bool changed = false;
    for (size_t i = 0; i < nops; i++) {
        const struct bf_op *o = &ops[i];
        if (o->kind != BF_GET) {
            changed |= bf_write(c, o, wp, len);
        } else if (o->sign) {
            reply_int(c, bitmap_get_signed(rp, len, o->off, o->bits));
        } else {
            reply_int(c, (int64_t)bitmap_get_bits(rp, len, o->off, o->bits));
        }
    }
    if (changed) {
        ksn_event(c->env, KSN_STRING, "setbit", argv[1]);
    }
out:
    rv_free(ops);
}

CMD_HANDLER(bitfield)
{
    bitfield_run(c, argc, argv, false);
}

CMD_HANDLER(bitfield_ro)
{
    bitfield_run(c, argc, argv, true);
}
