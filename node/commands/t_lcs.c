/* node/commands/t_lcs.c: LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN],
 * the longest common subsequence of two strings, with Redis 7.0's replies and
 * errors. The dynamic-programming table is (len1+1)*(len2+1) 32-bit cells;
 * like Redis, a table larger than proto-max-bulk-len is refused instead of
 * allocated. */
#include "node/commands/t_sort.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/keyspace/ks.h"

#include <string.h>

struct lcs_opts {
    bool len, idx, withlen;
    int64_t minlen;
};

static bool
lcs_parse(struct conn *c, int argc, struct rv_str *argv, struct lcs_opts *o)
{
    for (int j = 3; j < argc; j++) {
        if (cmd_arg_is(argv[j], "idx")) {
            o->idx = true;
        } else if (cmd_arg_is(argv[j], "len")) {
            o->len = true;
        } else if (cmd_arg_is(argv[j], "withmatchlen")) {
            o->withlen = true;
        } else if (cmd_arg_is(argv[j], "minmatchlen") && j + 1 < argc) {
            if (!cmd_arg_int(argv[++j], &o->minlen)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (o->minlen < 0) {
                o->minlen = 0;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    if (o->idx && o->len) {
        reply_errf(c, "ERR If you want both the length and indexes, please just use IDX.");
        return false;
    }
    return true;
}

/* A copy of the string at e ("" when missing). */
static void
lcs_value(struct ks_entry *e, char **out, size_t *len)
{
    char scratch[24];
    struct rv_str v = { "", 0 };
    if (e != NULL) {
        v = ks_str_get(e, scratch);
    }
    *out = rv_malloc(v.len + 1);
    memcpy(*out, v.p, v.len);
    *len = v.len;
}

static void
emit_match(struct conn *c, const struct lcs_opts *o, uint32_t a0, uint32_t a1, uint32_t b0,
           uint32_t b1)
{
    reply_array(c, o->withlen ? 3 : 2);
    reply_array(c, 2);
    reply_int(c, a0);
    reply_int(c, a1);
    reply_array(c, 2);
    reply_int(c, b0);
    reply_int(c, b1);
    if (o->withlen) {
        reply_int(c, (int64_t)a1 - a0 + 1);
    }
}

/* Walks the table back from its corner, rebuilding the subsequence into out
 * (unless NULL) and replying the matched ranges, the last one first, when
 * o->idx; returns the number of ranges replied. */
static size_t
lcs_walk(struct conn *c, const struct lcs_opts *o, const char *a, uint32_t alen, const char *b,
         uint32_t blen, const uint32_t *dp, char *out)
{
#define CELL(i, j) dp[(size_t)(j) + (size_t)(i) * ((size_t)blen + 1)]
    uint32_t i = alen, j = blen, k = CELL(alen, blen);
    bool open = false; /* a range is being extended backwards */
    uint32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    size_t nranges = 0;
    while (i > 0 && j > 0) {
        bool emit = false;
        if (a[i - 1] == b[j - 1]) {
            out[--k] = a[i - 1];
            if (!open) {
                open = true;
                a0 = a1 = i - 1;
                b0 = b1 = j - 1;
            } else if (a0 == i && b0 == j) {
                a0--;
                b0--;
            } else {
                emit = true;
            }
            if (a0 == 0 || b0 == 0) {
                emit = true; /* a range at the start of either string ends the walk */
            }
            i--;
            j--;
        } else {
            if (CELL(i - 1, j) > CELL(i, j - 1)) {
                i--;
            } else {
                j--;
            }
            emit = open;
        }
        if (emit) {
            uint32_t mlen = a1 - a0 + 1;
            if (o->idx && (o->minlen == 0 || (int64_t)mlen >= o->minlen)) {
                emit_match(c, o, a0, a1, b0, b1);
                nranges++;
            }
            open = false;
        }
    }
    return nranges;
#undef CELL
}

CMD_HANDLER(lcs)
{
    struct ks_entry *ea = lookup_read(c, argv[1]);
    struct ks_entry *eb = lookup_read(c, argv[2]);
    if ((ea && ks_entry_type(ea) != KS_STRING) || (eb && ks_entry_type(eb) != KS_STRING)) {
        reply_errf(c, "ERR The specified keys must contain string values");
        return;
    }
    struct lcs_opts o = { 0 };
    if (!lcs_parse(c, argc, argv, &o)) {
        return;
    }
    char *a, *b;
    size_t al, bl;
    lcs_value(ea, &a, &al); /* copies: the two values may share a scratch view */
    lcs_value(eb, &b, &bl);
    uint32_t *dp = NULL;
    char *out = NULL;
    if (al >= UINT32_MAX - 1 || bl >= UINT32_MAX - 1) {
        reply_errf(c, "ERR String too long for LCS");
        goto done;
    }
    uint64_t cells = ((uint64_t)al + 1) * ((uint64_t)bl + 1);
    if (cells > (uint64_t)c->env->cfg->net.proto_max_bulk_len / sizeof(uint32_t)) {
        reply_errf(c, "ERR Insufficient memory, transient memory for LCS exceeds "
                      "proto-max-bulk-len");
        goto done;
    }
    dp = rv_malloc((size_t)cells * sizeof(uint32_t)); /* bounded by the check above */
    for (size_t i = 0; i <= al; i++) {
        uint32_t *row = dp + i * (bl + 1);
        const uint32_t *up = i ? row - (bl + 1) : row;
        for (size_t j = 0; j <= bl; j++) {
            if (i == 0 || j == 0) {
                row[j] = 0;
            } else if (a[i - 1] == b[j - 1]) {
                row[j] = up[j - 1] + 1;
            } else {
                row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
            }
        }
    }
    uint32_t total = dp[cells - 1];
    out = rv_malloc((size_t)total + 1);
    if (o.idx) {
        reply_map(c, 2);
        reply_bulk(c, "matches", 7);
        size_t h = reply_defer(c);
        size_t n = lcs_walk(c, &o, a, (uint32_t)al, b, (uint32_t)bl, dp, out);
        reply_defer_array(c, h, n);
        reply_bulk(c, "len", 3);
        reply_int(c, total);
    } else if (o.len) {
        reply_int(c, total);
    } else {
        lcs_walk(c, &o, a, (uint32_t)al, b, (uint32_t)bl, dp, out);
        reply_bulk(c, out, total);
    }
done:
    rv_free(dp);
    rv_free(out);
    rv_free(a);
    rv_free(b);
}
