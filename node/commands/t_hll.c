/* node/commands/t_hll.c: PFADD / PFCOUNT / PFMERGE. The sketch (format and
 * estimator) is node/types/hll.c. */
#include "node/commands/t_hll.h"

#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/features/ksnotify.h"

#include <math.h>
#include <string.h>

/* The sketch bytes of e, or false after replying an error (wrong type or not a
 * sketch). */
static bool
entry_sketch(struct conn *c, const struct ks_entry *e, const uint8_t **p, size_t *n)
{
    char scratch[24];
    struct rv_str v;

    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    if (ks_str_is_int(e)) {
        reply_errf(c, "%s", HLL_ERR_INVALID);
        return false;
    }
    v = ks_str_get(e, scratch);
    if (!hll_valid((const uint8_t *)v.p, v.len)) {
        reply_errf(c, "%s", HLL_ERR_INVALID);
        return false;
    }
    *p = (const uint8_t *)v.p;
    *n = v.len;
    return true;
}

struct hll_ks_ctx {
    struct ks *ks;
    struct ks_entry *e;
};

static uint8_t *
hll_ks_resize(void *arg, size_t newlen)
{
    struct hll_ks_ctx *x = arg;
    return (uint8_t *)ks_str_resize(x->ks, &x->e, newlen);
}

/* PFADD key [element ...] */
CMD_HANDLER(pfadd)
{
    struct hll_ks_ctx x = { c->env->ks, NULL };
    const uint8_t *cp;
    uint8_t *p;
    size_t n;
    bool changed = false;

    x.e = lookup_write(c, argv[1]);
    if (x.e == NULL) {
        uint8_t empty[HLL_HDR];
        hll_init_empty(empty);
        x.e = ks_set_str(x.ks, argv[1].p, argv[1].len, (const char *)empty, HLL_HDR, KS_NO_EXPIRE,
                         false);
        changed = true;
    } else if (!entry_sketch(c, x.e, &cp, &n)) {
        return;
    }
    if (argc == 2) {
        if (changed) {
            ksn_event(c->env, KSN_STRING, "pfadd", argv[1]);
        } else {
            effect_none(c); /* (nothing to log or invalidate, as Redis) */
        }
        reply_int(c, changed);
        return;
    }
    n = ks_str_len(x.e);
    p = (uint8_t *)ks_str_resize(x.ks, &x.e, n); /* raw and writable, same bytes */
    for (int i = 2; i < argc; i++) {
        uint32_t idx;
        uint8_t rank;
        hll_hash_split(hll_hash(argv[i].p, argv[i].len), &idx, &rank);
        changed |= hll_set(&p, &n, idx, rank, hll_ks_resize, &x);
    }
    if (changed) {
        ksn_event(c->env, KSN_STRING, "pfadd", argv[1]);
    } else {
        effect_none(c);
    }
    reply_int(c, changed);
}

/* PFCOUNT key [key ...] */
CMD_HANDLER(pfcount)
{
    const uint8_t *p;
    size_t n;
    uint64_t est = 0;

    if (argc == 2) {
        struct ks_entry *e = lookup_read(c, argv[1]);
        if (e != NULL) {
            if (!entry_sketch(c, e, &p, &n)) {
                return;
            }
            if (!hll_count(p, n, &est)) {
                reply_errf(c, "%s", HLL_ERR_INVALID);
                return;
            }
        }
        reply_int(c, (int64_t)est);
        return;
    }
    uint8_t regs[HLL_REGS];
    memset(regs, 0, sizeof(regs));
    for (int i = 1; i < argc; i++) {
        struct ks_entry *e = lookup_read(c, argv[i]);
        if (e == NULL) {
            continue;
        }
        if (!entry_sketch(c, e, &p, &n)) {
            return;
        }
        if (!hll_regs_merge(p, n, regs)) {
            reply_errf(c, "%s", HLL_ERR_INVALID);
            return;
        }
    }
    reply_int(c, (int64_t)hll_count_regs(regs));
}

/* PFMERGE destkey [sourcekey ...]: destkey, when it exists, is a source too. */
CMD_HANDLER(pfmerge)
{
    uint8_t regs[HLL_REGS];
    uint8_t out[HLL_DENSE_BYTES];
    const uint8_t *p;
    size_t n;

    memset(regs, 0, sizeof(regs));
    for (int i = 1; i < argc; i++) {
        struct ks_entry *e = i == 1 ? lookup_write(c, argv[i]) : lookup_read(c, argv[i]);
        if (e == NULL) {
            continue;
        }
        if (!entry_sketch(c, e, &p, &n)) {
            return;
        }
        if (!hll_regs_merge(p, n, regs)) {
            reply_errf(c, "%s", HLL_ERR_INVALID);
            return;
        }
    }
    n = hll_from_regs(regs, out);
    ks_set_str(c->env->ks, argv[1].p, argv[1].len, (const char *)out, n, KS_NO_EXPIRE, true);
    ksn_event(c->env, KSN_STRING, "pfadd", argv[1]);
    reply_ok(c);
}
