/* node/commands/t_stream.c: the stream commands without consumer groups (XADD,
 * XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD, XSETID), with Redis 7.0's
 * replies and errors. The stream object is node/types/stream.c.
 *
 * Logging (node/core/effect.h): XADD is logged with its concrete id, and any
 * trim (approximate ones included) as the exact MAXLEN trim to the length it
 * left, so a replica and a replay end with the same ids and entries. */
#include "node/commands/t_stream.h"
#include "node/commands/t_stream_int.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/block.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/types/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ERR_BADID XS_ERR_BADID
#define ERR_TOP "ERR The ID specified in XADD is equal or smaller than the target stream top item"
#define ERR_ZERO "ERR The ID specified in XADD must be greater than 0-0"
#define ERR_EXHAUSTED "ERR The stream has exhausted the last possible ID, unable to add more items"

static const struct sid SID_MIN = { 0, 0 };
static const struct sid SID_MAX = { UINT64_MAX, UINT64_MAX };

/* --------------------------------------------------------------- parsing */

/* Redis's string2ull: a non-negative integer, or what strtoull takes whole. */
static bool
parse_u64(const char *p, uint64_t *out)
{
    char *end;
    if (*p == '\0' || *p == '-') {
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno != 0 || *end != '\0' || memchr(p, '-', (size_t)(end - p)) != NULL) {
        return false;
    }
    *out = v;
    return true;
}

/* "ms-seq", "ms" (seq missing_seq), "-" and "+" unless strict; "ms-*" when
 * seq_given is not NULL (then *seq_given is false for it). */
bool
xs_sid_parse(struct rv_str a, struct sid *id, uint64_t missing_seq, bool strict, bool *seq_given)
{
    char buf[128];
    if (a.len == 0 || a.len > sizeof(buf) - 1) {
        return false;
    }
    memcpy(buf, a.p, a.len);
    buf[a.len] = '\0';
    if (seq_given) {
        *seq_given = true;
    }
    if (a.len == 1 && (buf[0] == '-' || buf[0] == '+')) {
        if (strict) {
            return false;
        }
        *id = buf[0] == '-' ? SID_MIN : SID_MAX;
        return true;
    }
    char *dash = strchr(buf, '-');
    if (dash) {
        *dash = '\0';
    }
    if (!parse_u64(buf, &id->ms)) {
        return false;
    }
    if (dash == NULL) {
        id->seq = missing_seq;
    } else if (seq_given && dash[1] == '*' && dash[2] == '\0') {
        id->seq = 0;
        *seq_given = false;
    } else if (!parse_u64(dash + 1, &id->seq)) {
        return false;
    }
    return true;
}

bool
xs_sid_parse_reply(struct conn *c, struct rv_str a, struct sid *id, uint64_t missing_seq,
                   bool strict)
{
    if (!xs_sid_parse(a, id, missing_seq, strict, NULL)) {
        reply_errf(c, ERR_BADID);
        return false;
    }
    return true;
}

/* --------------------------------------------------------------- lookups */

/* The stream at key (read lookup); NULL when missing; *err after WRONGTYPE. */
struct stream *
xs_read(struct conn *c, struct rv_str key, bool *err)
{
    struct ks_entry *e = lookup_read(c, key);
    *err = false;
    if (e == NULL) {
        return NULL;
    }
    if (ks_entry_type(e) != KS_STREAM) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    return ks_entry_ptr(e);
}

struct stream *
xs_write(struct conn *c, struct rv_str key, bool create, bool *err)
{
    struct ks_entry *e = lookup_write(c, key);
    *err = false;
    if (e != NULL) {
        if (ks_entry_type(e) != KS_STREAM) {
            reply_err(c, RV_ERR_WRONGTYPE);
            *err = true;
            return NULL;
        }
        return ks_entry_ptr(e);
    }
    if (!create) {
        return NULL;
    }
    struct stream *s = stream_create();
    ks_set_ptr(c->env->ks, key.p, key.len, KS_STREAM, s, stream_free, KS_NO_EXPIRE);
    return s;
}

/* xs_read or xs_write of a stream that must exist (the no-such-key reply). */
static struct stream *
existing(struct conn *c, struct stream *s, bool err)
{
    if (s == NULL && !err) {
        reply_err(c, RV_ERR_NOSUCHKEY);
    }
    return s;
}

struct stream *
xs_read_existing(struct conn *c, struct rv_str key)
{
    bool err;
    struct stream *s = xs_read(c, key, &err);
    return existing(c, s, err);
}

struct stream *
xs_write_existing(struct conn *c, struct rv_str key)
{
    bool err;
    struct stream *s = xs_write(c, key, false, &err);
    return existing(c, s, err);
}


/* --------------------------------------------------------------- replies */

void
xs_reply_fv(void *arg, struct rv_str f, struct rv_str v)
{
    struct conn *c = arg;
    reply_bulk(c, f.p, f.len);
    reply_bulk(c, v.p, v.len);
}

void
xs_reply_id(struct conn *c, struct sid id)
{
    char b[STREAM_ID_MAX];
    reply_bulk(c, b, sid_fmt(id, b));
}

/* Entries of [start, end] (count 0: all) as [[id, [f, v, ...]], ...]. */
size_t
xs_reply_range(struct conn *c, const struct stream *s, struct sid start, struct sid end, bool rev,
               uint64_t count)
{
    struct stream_it it;
    size_t h = reply_defer(c), n = 0;
    stream_it_init(&it, s, start, end, rev);
    while ((count == 0 || n < count) && stream_it_next(&it)) {
        reply_array(c, 2);
        xs_reply_id(c, it.id);
        reply_array(c, 2 * it.nf);
        stream_it_fields(&it, xs_reply_fv, c);
        n++;
    }
    reply_defer_array(c, h, n);
    return n;
}

size_t
xs_reply_range_one(struct conn *c, const struct stream *s, struct sid id)
{
    struct stream_it it;
    stream_it_init(&it, s, id, id, false);
    if (!stream_it_next(&it)) {
        return 0;
    }
    reply_array(c, 2);
    xs_reply_id(c, it.id);
    reply_array(c, 2 * it.nf);
    stream_it_fields(&it, xs_reply_fv, c);
    return 1;
}

/* ------------------------------------------------------------ trim args */

enum trim_kind { TRIM_NONE, TRIM_MAXLEN, TRIM_MINID };

struct add_args {
    enum trim_kind trim;
    bool approx, limit_given, nomkstream, id_given, seq_given;
    int64_t maxlen, limit;
    struct sid minid, id;
    int field_pos; /* first field (XADD) */
};

/* Redis's streamParseAddOrTrimArgsOrReply: the options of XADD (xadd) or
 * XTRIM; false after an error reply. */
static bool
parse_add_trim(struct conn *c, int argc, struct rv_str *argv, bool xadd, struct add_args *a)
{
    int i;
    memset(a, 0, sizeof(*a));
    for (i = 2; i < argc; i++) {
        int more = argc - 1 - i;
        struct rv_str o = argv[i];
        if (xadd && o.len == 1 && o.p[0] == '*') {
            break;
        } else if ((cmd_arg_is(o, "maxlen") || cmd_arg_is(o, "minid")) && more) {
            bool maxlen = cmd_arg_is(o, "maxlen");
            struct rv_str nx = argv[i + 1];
            if (a->trim != TRIM_NONE && a->trim != (maxlen ? TRIM_MAXLEN : TRIM_MINID)) {
                reply_errf(c, "ERR syntax error, MAXLEN and MINID options at the same time "
                              "are not compatible");
                return false;
            }
            a->approx = false;
            if (more >= 2 && nx.len == 1 && (nx.p[0] == '~' || nx.p[0] == '=')) {
                a->approx = nx.p[0] == '~';
                i++;
            }
            if (maxlen) {
                if (!cmd_arg_int(argv[i + 1], &a->maxlen)) {
                    reply_err(c, RV_ERR_NOTINT);
                    return false;
                }
                if (a->maxlen < 0) {
                    reply_errf(c, "ERR The MAXLEN argument must be >= 0.");
                    return false;
                }
            } else if (!xs_sid_parse_reply(c, argv[i + 1], &a->minid, 0, true)) {
                return false;
            }
            a->trim = maxlen ? TRIM_MAXLEN : TRIM_MINID;
            i++;
        } else if (cmd_arg_is(o, "limit") && more) {
            if (!cmd_arg_int(argv[i + 1], &a->limit)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (a->limit < 0) {
                reply_errf(c, "ERR The LIMIT argument must be >= 0.");
                return false;
            }
            a->limit_given = true;
            i++;
        } else if (xadd && cmd_arg_is(o, "nomkstream")) {
            a->nomkstream = true;
        } else if (xadd) {
            if (!xs_sid_parse(o, &a->id, 0, true, &a->seq_given)) {
                reply_errf(c, ERR_BADID);
                return false;
            }
            a->id_given = true;
            break;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    a->field_pos = i + 1;
    if (a->limit && a->trim == TRIM_NONE) {
        reply_errf(c, "ERR syntax error, LIMIT cannot be used without specifying a trimming "
                      "strategy");
        return false;
    }
    if (!xadd && a->trim == TRIM_NONE) {
        reply_err(c, RV_ERR_SYNTAX);
        return false;
    }
    if (a->limit_given) {
        if (!a->approx) {
            reply_errf(c, "ERR syntax error, LIMIT cannot be used without the special ~ option");
            return false;
        }
    } else {
        a->limit = a->approx ? 100 * STREAM_NODE_MAX_ENTRIES : 0;
    }
    return true;
}

static uint64_t
do_trim(struct stream *s, const struct add_args *a)
{
    if (a->trim == TRIM_MAXLEN) {
        return stream_trim_maxlen(s, (uint64_t)a->maxlen, a->approx, (uint64_t)a->limit);
    }
    if (a->trim == TRIM_MINID) {
        return stream_trim_minid(s, a->minid, a->approx, (uint64_t)a->limit);
    }
    return 0;
}

/* ------------------------------------------------------------- commands */

/* The id XADD gives the new entry; false after an error reply. */
static bool
next_id(struct conn *c, const struct stream *s, const struct add_args *a, struct sid *id)
{
    struct sid last = stream_last_id(s);
    if (!a->id_given) {
        *id = last;
        if (c->env->now_ms > 0 && (uint64_t)c->env->now_ms > last.ms) {
            *id = (struct sid){ (uint64_t)c->env->now_ms, 0 };
        } else if (!sid_incr(id)) {
            reply_errf(c, ERR_EXHAUSTED);
            return false;
        }
        return true;
    }
    *id = a->id;
    if (!a->seq_given && a->id.ms == last.ms) {
        if (last.seq == UINT64_MAX) {
            reply_errf(c, ERR_TOP);
            return false;
        }
        id->seq = last.seq + 1;
    }
    if (sid_cmp(*id, last) <= 0) {
        reply_errf(c, ERR_TOP);
        return false;
    }
    return true;
}

/* XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [...] */
CMD_HANDLER(xadd)
{
    struct add_args a;
    struct sid id;
    bool err;

    if (!parse_add_trim(c, argc, argv, true, &a)) {
        return;
    }
    if (a.field_pos >= argc || (argc - a.field_pos) % 2 != 0) {
        reply_err_arity(c, "xadd");
        return;
    }
    if (a.id_given && a.seq_given && a.id.ms == 0 && a.id.seq == 0) {
        reply_errf(c, ERR_ZERO);
        return;
    }
    struct stream *s = xs_write(c, argv[1], !a.nomkstream, &err);
    if (s == NULL) {
        if (!err) {
            effect_none(c);
            reply_null(c);
        }
        return;
    }
    struct sid last = stream_last_id(s);
    if (last.ms == UINT64_MAX && last.seq == UINT64_MAX) {
        reply_errf(c, ERR_EXHAUSTED);
        return;
    }
    if (!next_id(c, s, &a, &id)) {
        return;
    }
    size_t nf = (size_t)(argc - a.field_pos) / 2;
    stream_append(s, id, nf, argv + a.field_pos);
    uint64_t trimmed = do_trim(s, &a);
    xs_reply_id(c, id);
    ksn_event(c->env, KSN_STREAM, "xadd", argv[1]);
    if (trimmed > 0) {
        ksn_event(c->env, KSN_STREAM, "xtrim", argv[1]);
    }

    char b[STREAM_ID_MAX];
    effect_redo(c, "XADD", argv[1]);
    if (trimmed > 0) {
        effect_arg(c, "MAXLEN", 6);
        effect_arg(c, "=", 1);
        effect_arg_i64(c, (int64_t)stream_len(s));
    }
    effect_arg(c, b, sid_fmt(id, b));
    for (int i = a.field_pos; i < argc; i++) {
        effect_arg(c, argv[i].p, argv[i].len);
    }
}

/* XRANGE/XREVRANGE key start end [COUNT count]: start and end in the
 * command's order (end first for XREVRANGE). */
static void
xrange_generic(struct conn *c, int argc, struct rv_str *argv, bool rev)
{
    struct rv_str sa = argv[rev ? 3 : 2], ea = argv[rev ? 2 : 3];
    struct sid start, end;
    int64_t count = -1;
    bool sx = sa.len > 1 && sa.p[0] == '(', ex = ea.len > 1 && ea.p[0] == '(';
    bool err;

    if (!xs_sid_parse_reply(c, sx ? (struct rv_str){ sa.p + 1, sa.len - 1 } : sa, &start, 0, sx) ||
        (sx && !sid_incr(&start) && (reply_errf(c, "ERR invalid start ID for the interval"), 1))) {
        return;
    }
    if (!xs_sid_parse_reply(c, ex ? (struct rv_str){ ea.p + 1, ea.len - 1 } : ea, &end, UINT64_MAX,
                            ex) ||
        (ex && !sid_decr(&end) && (reply_errf(c, "ERR invalid end ID for the interval"), 1))) {
        return;
    }
    for (int j = 4; j < argc; j++) {
        if (cmd_arg_is(argv[j], "count") && j + 1 < argc) {
            if (!cmd_arg_int(argv[++j], &count)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (count < 0) {
                count = 0;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    struct stream *s = xs_read(c, argv[1], &err);
    if (err) {
        return;
    }
    if (s == NULL) {
        reply_array(c, 0);
        return;
    }
    if (count == 0) {
        reply_null_array(c); /* as Redis 7.0 does for COUNT 0 (and negative counts) */
        return;
    }
    xs_reply_range(c, s, start, end, rev, count < 0 ? 0 : (uint64_t)count);
}

CMD_HANDLER(xrange)
{
    xrange_generic(c, argc, argv, false);
}

CMD_HANDLER(xrevrange)
{
    xrange_generic(c, argc, argv, true);
}

CMD_HANDLER(xlen)
{
    bool err;
    struct stream *s = xs_read(c, argv[1], &err);
    (void)argc;
    if (!err) {
        reply_int(c, s ? (int64_t)stream_len(s) : 0);
    }
}

/* XDEL key id [id ...] */
CMD_HANDLER(xdel)
{
    struct sid ids[64], *v = ids;
    int n = argc - 2;
    int64_t deleted = 0;
    bool err;

    if (n > 64) {
        v = rv_malloc((size_t)n * sizeof(*v));
    }
    for (int i = 0; i < n; i++) {
        if (!xs_sid_parse_reply(c, argv[2 + i], &v[i], 0, true)) {
            goto out;
        }
    }
    struct stream *s = xs_write(c, argv[1], false, &err);
    if (err) {
        goto out;
    }
    for (int i = 0; s != NULL && i < n; i++) {
        deleted += stream_delete(s, v[i]);
    }
    if (deleted == 0) {
        effect_none(c);
    } else {
        ksn_event(c->env, KSN_STREAM, "xdel", argv[1]);
    }
    reply_int(c, deleted);
out:
    if (v != ids) {
        rv_free(v);
    }
}

/* XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count] */
CMD_HANDLER(xtrim)
{
    struct add_args a;
    bool err;

    if (!parse_add_trim(c, argc, argv, false, &a)) {
        return;
    }
    if (a.field_pos < argc) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    struct stream *s = xs_write(c, argv[1], false, &err);
    if (err) {
        return;
    }
    uint64_t n = s ? do_trim(s, &a) : 0;
    if (n == 0) {
        effect_none(c);
    } else {
        effect_redo(c, "XTRIM", argv[1]);
        effect_arg(c, "MAXLEN", 6);
        effect_arg(c, "=", 1);
        effect_arg_i64(c, (int64_t)stream_len(s));
        ksn_event(c->env, KSN_STREAM, "xtrim", argv[1]);
    }
    reply_int(c, (int64_t)n);
}

/* The last live entry's id (XSETID's "top item"). */
struct sid
xs_last_valid(const struct stream *s)
{
    struct stream_it it;
    stream_it_init(&it, s, SID_MIN, SID_MAX, true);
    return stream_it_next(&it) ? it.id : SID_MIN;
}

/* XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id] */
CMD_HANDLER(xsetid)
{
    struct sid id, maxdel = SID_MIN;
    int64_t added = -1;
    bool has_del = false;

    if (!xs_sid_parse_reply(c, argv[2], &id, 0, true)) {
        return;
    }
    for (int i = 3; i < argc; i++) {
        bool more = i + 1 < argc;
        if (cmd_arg_is(argv[i], "entriesadded") && more) {
            if (!cmd_arg_int(argv[++i], &added)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (added < 0) {
                reply_errf(c, "ERR entries_added must be positive");
                return;
            }
        } else if (cmd_arg_is(argv[i], "maxdeletedid") && more) {
            if (!xs_sid_parse_reply(c, argv[++i], &maxdel, 0, true)) {
                return;
            }
            if (sid_cmp(id, maxdel) < 0) {
                reply_errf(c, "ERR The ID specified in XSETID is smaller than the provided "
                              "max_deleted_entry_id");
                return;
            }
            has_del = true;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    struct stream *s = xs_write_existing(c, argv[1]);
    if (s == NULL) {
        return;
    }
    if (stream_len(s) > 0) {
        if (sid_cmp(id, xs_last_valid(s)) < 0) {
            reply_errf(c, "ERR The ID specified in XSETID is smaller than the target stream top "
                          "item");
            return;
        }
        if (added != -1 && stream_len(s) > (uint64_t)added) {
            reply_errf(c, "ERR The entries_added specified in XSETID is smaller than the target "
                          "stream length");
            return;
        }
    }
    stream_set_meta(s, id, has_del ? maxdel : stream_max_deleted(s),
                    added != -1 ? (uint64_t)added : stream_entries_added(s));
    ksn_event(c->env, KSN_STREAM, "xsetid", argv[1]);
    reply_ok(c);
}

/* ------------------------------------------------------------------ XREAD */

/* s has a live entry after id (the last id alone settles most calls). */
static bool
has_after(const struct stream *s, struct sid id)
{
    return s != NULL && stream_len(s) > 0 && sid_cmp(stream_last_id(s), id) > 0 &&
           sid_cmp(xs_last_valid(s), id) > 0;
}

struct xread_keys {
    int *keys;          /* argv index of each key */
    struct sid *ids;    /* entries after these */
    struct stream **sv; /* NULL: missing (or another type while waiting) */
};

/* XREAD once its options are parsed: serve, or wait. */
static void
xread_run(struct conn *c, int argc, struct rv_str *argv, int sarg, int nk, int64_t count,
          int64_t block, struct xread_keys *w)
{
    int *keys = w->keys;
    struct sid *ids = w->ids;
    struct stream **sv = w->sv;
    bool retry = (c->flags & CONN_BLOCK_RETRY) != 0;

    /* '$' and '+' need the key: parse the others first, as Redis does */
    for (int i = 0; i < nk; i++) {
        struct rv_str a = argv[sarg + nk + i];
        keys[i] = sarg + i;
        if (a.len == 1 && (a.p[0] == '$' || a.p[0] == '+')) {
            continue;
        }
        if (a.len == 1 && a.p[0] == '>') {
            reply_errf(c, "ERR The > ID can be specified only when calling XREADGROUP using the "
                          "GROUP <group> <consumer> option.");
            return;
        }
        if (!xs_sid_parse_reply(c, a, &ids[i], 0, true)) {
            return;
        }
    }
    size_t ready = 0;
    for (int i = 0; i < nk; i++) {
        struct rv_str a = argv[sarg + nk + i];
        struct ks_entry *e = lookup_read(c, argv[sarg + i]);
        sv[i] = NULL;
        if (e != NULL && ks_entry_type(e) != KS_STREAM) {
            if (!retry) {
                reply_err(c, RV_ERR_WRONGTYPE);
                return;
            }
            /* a woken XREAD whose key changed type goes on waiting (Redis 7.0) */
        } else if (e != NULL) {
            sv[i] = ks_entry_ptr(e);
        }
        if (a.len == 1 && a.p[0] == '$') {
            ids[i] = sv[i] ? stream_last_id(sv[i]) : SID_MIN;
        } else if (a.len == 1 && a.p[0] == '+') {
            /* Redis 7.4: the last entry */
            ids[i] = sv[i] ? xs_last_valid(sv[i]) : SID_MIN;
            if (sv[i] && stream_len(sv[i]) > 0 && !sid_decr(&ids[i])) {
                ids[i] = SID_MIN;
            }
        }
        if (has_after(sv[i], ids[i])) {
            ready++;
        }
    }
    if (ready > 0) {
        if (c->proto == 3) {
            reply_map(c, ready);
        } else {
            reply_array(c, ready);
        }
        for (int i = 0; i < nk; i++) {
            struct sid from = ids[i];
            if (!has_after(sv[i], ids[i]) || !sid_incr(&from)) {
                continue;
            }
            if (c->proto != 3) {
                reply_array(c, 2);
            }
            reply_bulk(c, argv[sarg + i].p, argv[sarg + i].len);
            xs_reply_range(c, sv[i], from, SID_MAX, false, (uint64_t)count);
        }
        return;
    }
    if (block < 0) {
        reply_null_array(c);
        return;
    }
    /* wait with '$' and '+' replaced by the ids they meant now */
    struct rv_str *av = rv_malloc((size_t)argc * sizeof(*av));
    char(*idbuf)[STREAM_ID_MAX] = rv_malloc((size_t)nk * STREAM_ID_MAX);
    memcpy(av, argv, (size_t)argc * sizeof(*av));
    for (int i = 0; i < nk; i++) {
        av[sarg + nk + i] = (struct rv_str){ idbuf[i], sid_fmt(ids[i], idbuf[i]) };
    }
    int64_t deadline = block == 0 || block > INT64_MAX / 4 ? 0 : c->env->now_ms + block;
    block_wait(c, c->last_cmd, argc, av, keys, nk, deadline, BLOCK_REPLY_NULL_ARRAY);
    rv_free(idbuf);
    rv_free(av);
}

/* XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...] */
CMD_HANDLER(xread)
{
    int64_t count = 0, block = -1;
    int sarg = 0, nk;

    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (cmd_arg_is(argv[i], "block") && more) {
            if (c->flags & CONN_IN_SCRIPT) {
                reply_errf(c, "ERR %.*s command is not allowed with BLOCK option from scripts",
                           (int)argv[0].len, argv[0].p);
                return;
            }
            if (!cmd_arg_int(argv[++i], &block)) {
                reply_errf(c, "ERR timeout is not an integer or out of range");
                return;
            }
            if (block < 0) {
                reply_err(c, RV_ERR_TIMEOUT_NEG);
                return;
            }
        } else if (cmd_arg_is(argv[i], "count") && more) {
            if (!cmd_arg_int(argv[++i], &count)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (count < 0) {
                count = 0;
            }
        } else if (cmd_arg_is(argv[i], "streams") && more) {
            sarg = i + 1;
            break;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    if (sarg == 0) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if ((argc - sarg) % 2 != 0) {
        reply_errf(c, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' "
                      "must be specified.");
        return;
    }
    nk = (argc - sarg) / 2;
    struct xread_keys w;
    w.keys = rv_malloc((size_t)nk * sizeof(*w.keys));
    w.ids = rv_malloc((size_t)nk * sizeof(*w.ids));
    w.sv = rv_malloc((size_t)nk * sizeof(*w.sv));
    xread_run(c, argc, argv, sarg, nk, count, block, &w);
    rv_free(w.keys);
    rv_free(w.ids);
    rv_free(w.sv);
}

int
xs_streams_keys(int argc, struct rv_str *argv, int *out, int max, bool group)
{
    int sarg = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        if (cmd_arg_is(argv[i], "block") || cmd_arg_is(argv[i], "count")) {
            i++;
        } else if (group && cmd_arg_is(argv[i], "group")) {
            i += 2;
        } else if (group && cmd_arg_is(argv[i], "noack")) {
            continue;
        } else if (cmd_arg_is(argv[i], "streams")) {
            sarg = i + 1;
            break;
        } else {
            break;
        }
    }
    if (sarg == 0 || sarg >= argc || (argc - sarg) % 2 != 0) {
        return 0;
    }
    for (int i = sarg; i < sarg + (argc - sarg) / 2 && n < max; i++) {
        out[n++] = i;
    }
    return n;
}

int
stream_xread_keys(int argc, struct rv_str *argv, int *out, int max)
{
    return xs_streams_keys(argc, argv, out, max, false);
}
