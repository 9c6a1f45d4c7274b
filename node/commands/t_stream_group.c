/* node/commands/t_stream_group.c: consumer groups: XGROUP, XREADGROUP, XACK,
 * XPENDING, XCLAIM, XAUTOCLAIM, XINFO, and XGROUPLOAD (the rebuild command
 * of checkpoints and DUMP), with Redis 7.0's replies and errors. The group
 * structures are node/types/stream_group.c.
 *
 * Logging (node/core/effect.h): every change here is deterministic given the
 * stream, its groups and the clock, and a replay runs at the record's clock
 * (persist.c, the replica's apply), so the commands are logged as their
 * arguments; XREADGROUP drops BLOCK (it served, or changed nothing). Calls
 * that changed nothing are not logged. */
#include "node/features/multi.h"
#include "node/commands/t_stream_group.h"

#include "base/mem.h"
#include "node/commands/t_stream_int.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/block.h"
#include "node/features/ksnotify.h"
#include "node/features/tracking.h"
#include "node/keyspace/ks.h"
#include "node/types/stream.h"
#include "node/types/stream_group.h"

#include <string.h>

static const struct sid SID_MIN = { 0, 0 };
static const struct sid SID_MAX = { UINT64_MAX, UINT64_MAX };

#define ERR_NOKEY_GROUP "NOGROUP No such key '%.*s' or consumer group '%.*s'"

static bool
sid_zero(struct sid id)
{
    return id.ms == 0 && id.seq == 0;
}

/* ----------------------------------------------------- lag / entries-read */

/* Redis's streamRangeHasTombstones(s, start, +). */
static bool
has_tombstones_from(const struct stream *s, struct sid start)
{
    struct sid md = stream_max_deleted(s);
    if (stream_len(s) == 0 || sid_zero(md)) {
        return false;
    }
    if (sid_cmp(stream_first_id(s), md) > 0) {
        return false;
    }
    return sid_cmp(start, md) <= 0;
}

/* Redis's streamEstimateDistanceFromFirstEverEntry: id's logical read
 * counter, or SG_INVALID_READ when it cannot be known. */
static int64_t
estimate_read(const struct stream *s, struct sid id)
{
    uint64_t added = stream_entries_added(s);
    struct sid last = stream_last_id(s);
    if (added == 0) {
        return 0;
    }
    if (stream_len(s) == 0 && sid_cmp(id, last) < 1) {
        return (int64_t)added;
    }
    int cl = sid_cmp(id, last);
    if (cl == 0) {
        return (int64_t)added;
    }
    if (cl > 0) {
        return SG_INVALID_READ;
    }
    struct sid first = stream_first_id(s), md = stream_max_deleted(s);
    int cf = sid_cmp(id, first);
    if (sid_zero(md) || sid_cmp(md, first) < 0) {
        if (cf < 0) {
            return (int64_t)(added - stream_len(s));
        }
        if (cf == 0) {
            return (int64_t)(added - stream_len(s) + 1);
        }
    }
    return SG_INVALID_READ;
}

/* XINFO's lag; false when unknown (null). */
static bool
group_lag(const struct stream *s, const struct sg_group *g, int64_t *lag)
{
    uint64_t added = stream_entries_added(s);
    if (added == 0) {
        *lag = 0;
        return true;
    }
    if (g->entries_read != SG_INVALID_READ && !has_tombstones_from(s, g->last_id)) {
        *lag = (int64_t)added - g->entries_read;
        return true;
    }
    int64_t r = estimate_read(s, g->last_id);
    if (r == SG_INVALID_READ) {
        return false;
    }
    *lag = (int64_t)added - r;
    return true;
}

/* The group's last delivered id moves to id (a '>' delivery). */
static void
group_advance(const struct stream *s, struct sg_group *g, struct sid id)
{
    if (g->entries_read != SG_INVALID_READ && !has_tombstones_from(s, id)) {
        if (g->entries_read < INT64_MAX) { /* ENTRIESREAD may have set anything */
            g->entries_read++;
        }
    } else if (stream_entries_added(s) > 0) {
        g->entries_read = estimate_read(s, id);
    }
    g->last_id = id;
}

static void
reply_entries_read(struct conn *c, int64_t er)
{
    if (er == SG_INVALID_READ) {
        reply_null(c);
    } else {
        reply_int(c, er);
    }
}

/* ------------------------------------------------------------------ XGROUP */

/* The ENTRIESREAD option at argv[i..]: false after an error reply. */
static bool
parse_entries_read(struct conn *c, struct rv_str a, int64_t *er)
{
    if (!cmd_arg_int(a, er)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (*er < 0 && *er != SG_INVALID_READ) {
        reply_errf(c, "ERR value for ENTRIESREAD must be positive or -1");
        return false;
    }
    return true;
}

static void
reply_subsyntax(struct conn *c, struct rv_str sub, const char *cmd)
{
    reply_errf(c, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try %s HELP.",
               (int)(sub.len > 128 ? 128 : sub.len), sub.p, cmd);
}

/* The stream and group XGROUP's subcommands work on (Redis's checks, in its
 * order); NULL after an error reply. need_group: SETID, CREATECONSUMER and
 * DELCONSUMER. */
static struct stream *
xgroup_target(struct conn *c, struct rv_str *argv, bool need_group, struct sg_group **g)
{
    bool err;
    struct stream *s = xs_write(c, argv[2], false, &err);
    *g = NULL;
    if (err) {
        return NULL;
    }
    if (s == NULL) {
        reply_errf(c, "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE "
                      "you may want to use the MKSTREAM option to create an empty stream "
                      "automatically.");
        return NULL;
    }
    *g = sg_find(*stream_groups(s), argv[3]);
    if (*g == NULL && need_group) {
        reply_errf(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", (int)argv[3].len,
                   argv[3].p, (int)argv[2].len, argv[2].p);
        return NULL;
    }
    return s;
}

/* XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n] */
CMD_HANDLER(xgroup_create)
{
    bool mkstream = false, err;
    int64_t er = SG_INVALID_READ;
    struct sid id;

    for (int i = 5; i < argc; i++) {
        if (cmd_arg_is(argv[i], "mkstream")) {
            mkstream = true;
        } else if (cmd_arg_is(argv[i], "entriesread") && i + 1 < argc) {
            if (!parse_entries_read(c, argv[++i], &er)) {
                return;
            }
        } else {
            reply_subsyntax(c, argv[1], "XGROUP");
            return;
        }
    }
    if (argc > 8) { /* Redis's arity for CREATE: at most 3 options words */
        reply_subsyntax(c, argv[1], "XGROUP");
        return;
    }
    struct stream *s = xs_write(c, argv[2], false, &err);
    if (err) {
        return;
    }
    if (s == NULL && !mkstream) {
        struct sg_group *g;
        xgroup_target(c, argv, false, &g); /* replies the missing-key error */
        return;
    }
    if (argv[4].len == 1 && argv[4].p[0] == '$') {
        id = s ? stream_last_id(s) : SID_MIN;
    } else if (!xs_sid_parse_reply(c, argv[4], &id, 0, true)) {
        return;
    }
    bool created = s == NULL;
    if (created) {
        s = xs_write(c, argv[2], true, &err);
    }
    if (sg_create(stream_groups(s), argv[3], id, er) == NULL) {
        reply_errf(c, "BUSYGROUP Consumer Group name already exists");
        return;
    }
    ksn_event(c->env, KSN_STREAM, "xgroup-create", argv[2]);
    if (created) { /* (group changes are not signalled; a new key is) */
        multi_touch_db(c->shard, c->db, argv[2]);
        if (c->env->tracking != NULL) {
            tracking_key_written(c, argv[2]);
        }
    }
    reply_ok(c);
}

/* XGROUP SETID key group id|$ [ENTRIESREAD n] */
CMD_HANDLER(xgroup_setid)
{
    int64_t er = SG_INVALID_READ;
    struct sg_group *g;
    struct sid id;

    for (int i = 5; i < argc; i++) {
        if (cmd_arg_is(argv[i], "entriesread") && i + 1 < argc) {
            if (!parse_entries_read(c, argv[++i], &er)) {
                return;
            }
        } else {
            reply_subsyntax(c, argv[1], "XGROUP");
            return;
        }
    }
    struct stream *s = xgroup_target(c, argv, true, &g);
    if (s == NULL) {
        return;
    }
    if (argv[4].len == 1 && argv[4].p[0] == '$') {
        id = stream_last_id(s);
    } else if (!xs_sid_parse_reply(c, argv[4], &id, 0, true)) {
        return;
    }
    g->last_id = id;
    g->entries_read = er;
    ksn_event(c->env, KSN_STREAM, "xgroup-setid", argv[2]);
    reply_ok(c);
}

/* XGROUP DESTROY key group */
CMD_HANDLER(xgroup_destroy)
{
    struct sg_group *g;
    (void)argc;
    struct stream *s = xgroup_target(c, argv, false, &g);
    if (s == NULL) {
        return;
    }
    if (g == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    sg_destroy(*stream_groups(s), argv[3]);
    ksn_event(c->env, KSN_STREAM, "xgroup-destroy", argv[2]);
    reply_int(c, 1); /* the key is written: blocked readers of the group wake (NOGROUP) */
}

/* XGROUP CREATECONSUMER key group consumer */
CMD_HANDLER(xgroup_createconsumer)
{
    struct sg_group *g;
    bool created;
    (void)argc;
    if (xgroup_target(c, argv, true, &g) == NULL) {
        return;
    }
    sg_consumer_get(g, argv[4], c->env->now_ms, &created);
    if (!created) {
        effect_none(c);
    } else {
        ksn_event(c->env, KSN_STREAM, "xgroup-createconsumer", argv[2]);
    }
    reply_int(c, created);
}

/* XGROUP DELCONSUMER key group consumer: replies its pending count. */
CMD_HANDLER(xgroup_delconsumer)
{
    struct sg_group *g;
    (void)argc;
    if (xgroup_target(c, argv, true, &g) == NULL) {
        return;
    }
    struct sg_consumer *k = sg_consumer_find(g, argv[4]);
    if (k == NULL) {
        effect_none(c);
        reply_int(c, 0);
        return;
    }
    reply_int(c, (int64_t)sg_consumer_delete(g, k));
    ksn_event(c->env, KSN_STREAM, "xgroup-delconsumer", argv[2]);
}

CMD_HANDLER(xgroup_help)
{
    static const char *const lines[] = {
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        NULL,
    };
    (void)argc;
    (void)argv;
    reply_help(c, "XGROUP", lines);
}

/* XGROUPLOAD key group last-id entries-read [consumer seen-ms active-ms
 * [id delivery-ms delivery-count ...]]: sets a group (creating it), one of
 * its consumers and their pending entries exactly (stream_group.h). */
CMD_HANDLER(xgroupload)
{
    struct sid last;
    int64_t er, seen = 0, active = -1;
    bool created;

    if (argc != 5 && (argc < 8 || (argc - 8) % 3 != 0)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (!xs_sid_parse_reply(c, argv[3], &last, 0, true)) {
        return;
    }
    if (!cmd_arg_int(argv[4], &er) ||
        (argc > 5 && (!cmd_arg_int(argv[6], &seen) || !cmd_arg_int(argv[7], &active) || seen < 0 ||
                      active < -1))) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    for (int i = 8; i < argc; i += 3) {
        struct sid id;
        int64_t ms, n;
        if (!xs_sid_parse_reply(c, argv[i], &id, 0, true)) {
            return;
        }
        /* times are never negative here: idle times subtract them from now */
        if (!cmd_arg_int(argv[i + 1], &ms) || !cmd_arg_int(argv[i + 2], &n) || n < 0 || ms < 0) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
    }
    struct stream *s = xs_write_existing(c, argv[1]);
    if (s == NULL) {
        return;
    }
    struct sg_group *g = sg_find(*stream_groups(s), argv[2]);
    if (g == NULL) {
        g = sg_create(stream_groups(s), argv[2], last, er < 0 ? SG_INVALID_READ : er);
    }
    g->last_id = last;
    g->entries_read = er < 0 ? SG_INVALID_READ : er;
    if (argc > 5) {
        struct sg_consumer *k = sg_consumer_get(g, argv[5], seen, &created);
        k->seen_ms = seen;
        k->active_ms = active;
        for (int i = 8; i < argc; i += 3) {
            struct sid id;
            int64_t ms, n;
            xs_sid_parse(argv[i], &id, 0, true, NULL);
            cmd_arg_int(argv[i + 1], &ms);
            cmd_arg_int(argv[i + 2], &n);
            sg_pel_add(g, k, id, ms, (uint64_t)n);
        }
    }
    reply_ok(c);
}

/* ---------------------------------------------------------- XACK, XPENDING */

/* The group of key (a write lookup when write); NULL when missing. *failed
 * after a reply: WRONGTYPE, or (when nogroup) Redis's NOGROUP error. */
static struct sg_group *
group_lookup(struct conn *c, struct rv_str key, struct rv_str group, bool write, struct stream **sp,
             bool nogroup, bool *failed)
{
    bool err;
    struct stream *s = write ? xs_write(c, key, false, &err) : xs_read(c, key, &err);
    struct sg_group *g = NULL;
    *sp = s;
    *failed = err;
    if (err) {
        return NULL;
    }
    if (s != NULL) {
        g = sg_find(*stream_groups(s), group);
    }
    if (g == NULL && nogroup) {
        reply_errf(c, ERR_NOKEY_GROUP, (int)key.len, key.p, (int)group.len, group.p);
        *failed = true;
    }
    return g;
}

/* XACK key group id [id ...] */
CMD_HANDLER(xack)
{
    struct sid ids[64], *v = ids;
    int n = argc - 3;
    int64_t acked = 0;
    struct stream *s;

    if (n > 64) {
        v = rv_malloc((size_t)n * sizeof(*v));
    }
    for (int i = 0; i < n; i++) {
        if (!xs_sid_parse_reply(c, argv[3 + i], &v[i], 0, true)) {
            goto out;
        }
    }
    bool failed;
    struct sg_group *g = group_lookup(c, argv[1], argv[2], true, &s, false, &failed);
    if (failed) {
        goto out;
    }
    for (int i = 0; g != NULL && i < n; i++) {
        struct sg_nack *k = sg_pel_find(g, v[i]);
        if (k != NULL) {
            sg_pel_remove(g, k);
            acked++;
        }
    }
    if (acked == 0) {
        effect_none(c);
    }
    reply_int(c, acked);
out:
    if (v != ids) {
        rv_free(v);
    }
}

static int64_t
idle_of(const struct conn *c, int64_t t)
{
    int64_t d = c->env->now_ms - t;
    return d < 0 ? 0 : d;
}

/* XPENDING key group: [count, first, last, [[consumer, "n"], ...]] */
static void
xpending_summary(struct conn *c, const struct sg_group *g)
{
    reply_array(c, 4);
    reply_int(c, (int64_t)g->p.npel);
    if (g->p.npel == 0) {
        reply_null(c);
        reply_null(c);
        reply_null_array(c);
        return;
    }
    xs_reply_id(c, g->p.pel[0]->id);
    xs_reply_id(c, g->p.pel[g->p.npel - 1]->id);
    size_t h = reply_defer(c), n = 0;
    for (size_t i = 0; i < g->ncons; i++) {
        const struct sg_consumer *k = g->cons[i];
        if (k->p.npel > 0) {
            reply_array(c, 2);
            reply_bulk(c, k->name, k->nlen);
            reply_bulk_int(c, (int64_t)k->p.npel);
            n++;
        }
    }
    reply_defer_array(c, h, n);
}

/* An interval bound of XPENDING / XAUTOCLAIM: "(id" excludes; false after a reply. */
static bool
parse_bound(struct conn *c, struct rv_str a, struct sid *id, bool start)
{
    bool ex = a.len > 1 && a.p[0] == '(';
    if (!xs_sid_parse_reply(c, ex ? (struct rv_str){ a.p + 1, a.len - 1 } : a, id,
                            start ? 0 : UINT64_MAX, ex)) {
        return false;
    }
    if (ex && !(start ? sid_incr(id) : sid_decr(id))) {
        reply_errf(c, start ? "ERR invalid start ID for the interval"
                            : "ERR invalid end ID for the interval");
        return false;
    }
    return true;
}

/* XPENDING key group [[IDLE min-idle-time] start end count [consumer]] */
CMD_HANDLER(xpending)
{
    int64_t minidle = 0, count = 0;
    struct sid start = SID_MIN, end = SID_MAX;
    struct rv_str *cname = NULL;
    struct stream *s;

    if (argc != 3 && (argc < 6 || argc > 9)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc >= 6) {
        int si = 3;
        if (cmd_arg_is(argv[3], "idle")) {
            if (!cmd_arg_int(argv[4], &minidle)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (argc < 8) {
                reply_err(c, RV_ERR_SYNTAX);
                return;
            }
            si += 2;
        }
        if (!cmd_arg_int(argv[si + 2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count < 0) {
            count = 0;
        }
        if (!parse_bound(c, argv[si], &start, true) || !parse_bound(c, argv[si + 1], &end, false)) {
            return;
        }
        if (si + 3 < argc) {
            cname = &argv[si + 3];
        }
    }
    bool failed;
    struct sg_group *g = group_lookup(c, argv[1], argv[2], false, &s, true, &failed);
    if (failed) {
        return;
    }
    if (argc == 3) {
        xpending_summary(c, g);
        return;
    }
    struct sg_nack *const *pel = g->p.pel;
    size_t npel = g->p.npel;
    if (cname != NULL) {
        const struct sg_consumer *k = sg_consumer_find(g, *cname);
        if (k == NULL) {
            reply_array(c, 0);
            return;
        }
        pel = k->p.pel;
        npel = k->p.npel;
    }
    size_t h = reply_defer(c), n = 0;
    for (size_t i = sg_pel_lower(pel, npel, start);
         count > 0 && i < npel && sid_cmp(pel[i]->id, end) <= 0; i++) {
        const struct sg_nack *k = pel[i];
        if (minidle && c->env->now_ms - k->delivery_ms < minidle) {
            continue;
        }
        reply_array(c, 4);
        xs_reply_id(c, k->id);
        reply_bulk(c, k->owner->name, k->owner->nlen);
        reply_int(c, idle_of(c, k->delivery_ms));
        reply_int(c, (int64_t)k->count);
        n++;
        count--;
    }
    reply_defer_array(c, h, n);
}

/* ------------------------------------------------------ XCLAIM, XAUTOCLAIM */

/* One entry as [id, fields], or a null when it vanished. */
static void
reply_entry(struct conn *c, const struct stream *s, struct sid id)
{
    if (xs_reply_range_one(c, s, id) == 0) {
        reply_null(c);
    }
}

struct claim_opts {
    int64_t minidle, retrycount, deliverytime;
    bool force, justid, lastid_set;
    struct sid lastid;
    int last_id_arg;
};

/* XCLAIM's options after its ids; false after an error reply. */
static bool
xclaim_opts(struct conn *c, int argc, struct rv_str *argv, const struct sg_group *g,
            struct claim_opts *o)
{
    int j;
    struct sid id;
    int64_t now = c->env->now_ms;
    for (j = 5; j < argc && xs_sid_parse(argv[j], &id, 0, true, NULL); j++) {
    }
    o->last_id_arg = j - 1;
    for (; j < argc; j++) {
        bool more = j + 1 < argc;
        struct rv_str a = argv[j];
        if (cmd_arg_is(a, "force")) {
            o->force = true;
        } else if (cmd_arg_is(a, "justid")) {
            o->justid = true;
        } else if (cmd_arg_is(a, "idle") && more) {
            int64_t idle;
            if (!cmd_arg_int(argv[++j], &idle)) {
                reply_errf(c, "ERR Invalid IDLE option argument for XCLAIM");
                return false;
            }
            /* now - idle, where out of [0, now] means now (below), without overflow */
            o->deliverytime = idle < 0 || idle > now ? now : now - idle;
        } else if (cmd_arg_is(a, "time") && more) {
            if (!cmd_arg_int(argv[++j], &o->deliverytime)) {
                reply_errf(c, "ERR Invalid TIME option argument for XCLAIM");
                return false;
            }
        } else if (cmd_arg_is(a, "retrycount") && more) {
            if (!cmd_arg_int(argv[++j], &o->retrycount)) {
                reply_errf(c, "ERR Invalid RETRYCOUNT option argument for XCLAIM");
                return false;
            }
        } else if (cmd_arg_is(a, "lastid") && more) {
            if (!xs_sid_parse_reply(c, argv[++j], &id, 0, true)) {
                return false;
            }
            if (sid_cmp(id, g->last_id) > 0) {
                o->lastid = id;
                o->lastid_set = true;
            }
        } else {
            reply_errf(c, "ERR Unrecognized XCLAIM option '%.*s'", (int)a.len, a.p);
            return false;
        }
    }
    if (o->deliverytime == -1 || o->deliverytime < 0 || o->deliverytime > now) {
        o->deliverytime = now;
    }
    return true;
}

/* XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms]
 * [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid] */
CMD_HANDLER(xclaim)
{
    struct claim_opts o = { .retrycount = -1, .deliverytime = -1 };
    struct stream *s;
    bool failed, changed = false, created;

    struct sg_group *g = group_lookup(c, argv[1], argv[2], true, &s, true, &failed);
    if (failed) {
        return;
    }
    if (!cmd_arg_int(argv[4], &o.minidle)) {
        reply_errf(c, "ERR Invalid min-idle-time argument for XCLAIM");
        return;
    }
    if (o.minidle < 0) {
        o.minidle = 0;
    }
    if (!xclaim_opts(c, argc, argv, g, &o)) {
        return;
    }
    struct sg_consumer *k = NULL;
    size_t h = reply_defer(c), n = 0;
    for (int j = 5; j <= o.last_id_arg; j++) {
        struct sid id;
        xs_sid_parse(argv[j], &id, 0, true, NULL);
        struct sg_nack *nk = sg_pel_find(g, id);
        if (!stream_has(s, id)) {
            if (nk != NULL) { /* it no longer exists: drop it from the PEL */
                sg_pel_remove(g, nk);
                changed = true;
            }
            continue;
        }
        if (nk != NULL && o.minidle && c->env->now_ms - nk->delivery_ms < o.minidle) {
            continue;
        }
        if (nk == NULL && !o.force) {
            continue;
        }
        if (k == NULL) {
            k = sg_consumer_get(g, argv[3], c->env->now_ms, &created);
            k->seen_ms = c->env->now_ms;
            if (created) {
                ksn_event(c->env, KSN_STREAM, "xgroup-createconsumer", argv[1]);
            }
        }
        uint64_t cnt = nk ? nk->count : 1; /* a FORCE-made entry starts at 1, as Redis's */
        if (o.retrycount >= 0) {
            cnt = (uint64_t)o.retrycount;
        } else if (!o.justid) {
            cnt++;
        }
        sg_pel_add(g, k, id, o.deliverytime, cnt);
        k->active_ms = c->env->now_ms;
        changed = true;
        if (o.justid) {
            xs_reply_id(c, id);
        } else {
            reply_entry(c, s, id);
        }
        n++;
    }
    if (o.lastid_set) {
        g->last_id = o.lastid;
        changed = true;
    }
    reply_defer_array(c, h, n);
    if (!changed) {
        effect_none(c);
    }
}

/* XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]:
 * [next-start, claimed, deleted-ids]. */
CMD_HANDLER(xautoclaim)
{
    int64_t minidle, count = 100;
    bool justid = false, failed, created;
    struct sid start;
    struct stream *s;

    struct sg_group *g = group_lookup(c, argv[1], argv[2], true, &s, true, &failed);
    if (failed) {
        return;
    }
    if (!cmd_arg_int(argv[4], &minidle)) {
        reply_errf(c, "ERR Invalid min-idle-time argument for XAUTOCLAIM");
        return;
    }
    if (minidle < 0) {
        minidle = 0;
    }
    if (!parse_bound(c, argv[5], &start, true)) {
        return;
    }
    for (int j = 6; j < argc; j++) {
        if (cmd_arg_is(argv[j], "count") && j + 1 < argc) {
            if (!cmd_arg_int(argv[++j], &count) || count < 1 || count > INT64_MAX / 160) {
                reply_errf(c, "ERR COUNT must be > 0");
                return;
            }
        } else if (cmd_arg_is(argv[j], "justid")) {
            justid = true;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    int64_t attempts = count * 10, now = c->env->now_ms;
    size_t cap = g->p.npel < (uint64_t)count ? g->p.npel : (size_t)count;
    struct sid *claimed = rv_malloc((cap + 1) * sizeof(*claimed));
    struct sid *deleted = rv_malloc((cap + 1) * sizeof(*deleted));
    size_t nc = 0, nd = 0;
    size_t i = sg_pel_lower(g->p.pel, g->p.npel, start);
    struct sg_consumer *k = NULL;
    while (attempts-- > 0 && count > 0 && i < g->p.npel) {
        struct sg_nack *nk = g->p.pel[i];
        if (!stream_has(s, nk->id)) {
            deleted[nd++] = nk->id;
            sg_pel_remove(g, nk); /* i now indexes the next one */
            count--;
            continue;
        }
        i++;
        if (minidle && now - nk->delivery_ms < minidle) {
            continue;
        }
        if (k == NULL) {
            k = sg_consumer_get(g, argv[3], now, &created);
            k->seen_ms = now;
            if (created) {
                ksn_event(c->env, KSN_STREAM, "xgroup-createconsumer", argv[1]);
            }
        }
        sg_pel_add(g, k, nk->id, now, nk->count + (justid ? 0 : 1));
        k->active_ms = now;
        claimed[nc++] = nk->id;
        count--;
    }
    reply_array(c, 3);
    xs_reply_id(c, i < g->p.npel ? g->p.pel[i]->id : SID_MIN);
    reply_array(c, nc);
    for (size_t j = 0; j < nc; j++) {
        if (justid) {
            xs_reply_id(c, claimed[j]);
        } else {
            reply_entry(c, s, claimed[j]);
        }
    }
    reply_array(c, nd);
    for (size_t j = 0; j < nd; j++) {
        xs_reply_id(c, deleted[j]);
    }
    if (nc == 0 && nd == 0) {
        effect_none(c);
    }
    rv_free(claimed);
    rv_free(deleted);
}

/* ------------------------------------------------------------------- XINFO */

static void
reply_kv_map(struct conn *c, size_t n)
{
    reply_map(c, n);
}

static void
reply_key(struct conn *c, const char *k)
{
    reply_bulk_cstr(c, k);
}

static void
reply_lag(struct conn *c, const struct stream *s, const struct sg_group *g)
{
    int64_t lag;
    if (group_lag(s, g, &lag)) {
        reply_int(c, lag);
    } else {
        reply_null(c);
    }
}

/* The stream fields XINFO STREAM starts with (7 pairs). */
static void
xinfo_stream_head(struct conn *c, const struct stream *s)
{
    reply_key(c, "length");
    reply_int(c, (int64_t)stream_len(s));
    reply_key(c, "radix-tree-keys");
    reply_int(c, (int64_t)stream_nodes(s));
    reply_key(c, "radix-tree-nodes");
    reply_int(c, (int64_t)stream_nodes(s) + 1);
    reply_key(c, "last-generated-id");
    xs_reply_id(c, stream_last_id(s));
    reply_key(c, "max-deleted-entry-id");
    xs_reply_id(c, stream_max_deleted(s));
    reply_key(c, "entries-added");
    reply_int(c, (int64_t)stream_entries_added(s));
    reply_key(c, "recorded-first-entry-id");
    xs_reply_id(c, stream_first_id(s));
}

static void
xinfo_full_group(struct conn *c, const struct stream *s, const struct sg_group *g, uint64_t count)
{
    reply_kv_map(c, 7);
    reply_key(c, "name");
    reply_bulk(c, g->name, g->nlen);
    reply_key(c, "last-delivered-id");
    xs_reply_id(c, g->last_id);
    reply_key(c, "entries-read");
    reply_entries_read(c, g->entries_read);
    reply_key(c, "lag");
    reply_lag(c, s, g);
    reply_key(c, "pel-count");
    reply_int(c, (int64_t)g->p.npel);
    reply_key(c, "pending");
    size_t np = count && count < g->p.npel ? count : g->p.npel;
    reply_array(c, np);
    for (size_t i = 0; i < np; i++) {
        const struct sg_nack *k = g->p.pel[i];
        reply_array(c, 4);
        xs_reply_id(c, k->id);
        reply_bulk(c, k->owner->name, k->owner->nlen);
        reply_int(c, k->delivery_ms);
        reply_int(c, (int64_t)k->count);
    }
    reply_key(c, "consumers");
    reply_array(c, g->ncons);
    for (size_t j = 0; j < g->ncons; j++) {
        const struct sg_consumer *u = g->cons[j];
        reply_kv_map(c, 4);
        reply_key(c, "name");
        reply_bulk(c, u->name, u->nlen);
        reply_key(c, "seen-time");
        reply_int(c, u->seen_ms);
        reply_key(c, "pel-count");
        reply_int(c, (int64_t)u->p.npel);
        reply_key(c, "pending");
        size_t nu = count && count < u->p.npel ? count : u->p.npel;
        reply_array(c, nu);
        for (size_t i = 0; i < nu; i++) {
            const struct sg_nack *k = u->p.pel[i];
            reply_array(c, 3);
            xs_reply_id(c, k->id);
            reply_int(c, k->delivery_ms);
            reply_int(c, (int64_t)k->count);
        }
    }
}

static void
reply_edge(struct conn *c, const struct stream *s, bool last)
{
    struct stream_it it;
    stream_it_init(&it, s, SID_MIN, SID_MAX, last);
    if (!stream_it_next(&it)) {
        reply_null(c);
        return;
    }
    xs_reply_range_one(c, s, it.id);
}

/* XINFO STREAM key [FULL [COUNT count]] */
CMD_HANDLER(xinfo_stream)
{
    int64_t count = 10;
    bool full = argc > 3;

    if (full && ((argc != 4 && argc != 6) || !cmd_arg_is(argv[3], "full") ||
                 (argc == 6 && !cmd_arg_is(argv[4], "count")))) {
        reply_subsyntax(c, argv[1], "XINFO");
        return;
    }
    if (argc == 6) {
        if (!cmd_arg_int(argv[5], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count < 0) {
            count = 10;
        }
    }
    struct stream *s = xs_read_existing(c, argv[2]);
    if (s == NULL) {
        return;
    }
    const struct sg_set *gs = *stream_groups(s);
    size_t ng = gs ? gs->n : 0;
    reply_kv_map(c, full ? 9 : 10);
    xinfo_stream_head(c, s);
    if (!full) {
        reply_key(c, "groups");
        reply_int(c, (int64_t)ng);
        reply_key(c, "first-entry");
        reply_edge(c, s, false);
        reply_key(c, "last-entry");
        reply_edge(c, s, true);
        return;
    }
    reply_key(c, "entries");
    xs_reply_range(c, s, SID_MIN, SID_MAX, false, (uint64_t)count);
    reply_key(c, "groups");
    reply_array(c, ng);
    for (size_t i = 0; i < ng; i++) {
        xinfo_full_group(c, s, gs->v[i], (uint64_t)count);
    }
}

/* XINFO GROUPS key */
CMD_HANDLER(xinfo_groups)
{
    (void)argc;
    struct stream *s = xs_read_existing(c, argv[2]);
    if (s == NULL) {
        return;
    }
    const struct sg_set *gs = *stream_groups(s);
    size_t ng = gs ? gs->n : 0;
    reply_array(c, ng);
    for (size_t i = 0; i < ng; i++) {
        const struct sg_group *g = gs->v[i];
        reply_kv_map(c, 6);
        reply_key(c, "name");
        reply_bulk(c, g->name, g->nlen);
        reply_key(c, "consumers");
        reply_int(c, (int64_t)g->ncons);
        reply_key(c, "pending");
        reply_int(c, (int64_t)g->p.npel);
        reply_key(c, "last-delivered-id");
        xs_reply_id(c, g->last_id);
        reply_key(c, "entries-read");
        reply_entries_read(c, g->entries_read);
        reply_key(c, "lag");
        reply_lag(c, s, g);
    }
}

/* XINFO CONSUMERS key group */
CMD_HANDLER(xinfo_consumers)
{
    (void)argc;
    struct stream *s = xs_read_existing(c, argv[2]);
    if (s == NULL) {
        return;
    }
    const struct sg_group *g = sg_find(*stream_groups(s), argv[3]);
    if (g == NULL) {
        reply_errf(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", (int)argv[3].len,
                   argv[3].p, (int)argv[2].len, argv[2].p);
        return;
    }
    reply_array(c, g->ncons);
    for (size_t i = 0; i < g->ncons; i++) {
        const struct sg_consumer *u = g->cons[i];
        reply_kv_map(c, 3);
        reply_key(c, "name");
        reply_bulk(c, u->name, u->nlen);
        reply_key(c, "pending");
        reply_int(c, (int64_t)u->p.npel);
        reply_key(c, "idle");
        reply_int(c, idle_of(c, u->seen_ms));
    }
}

CMD_HANDLER(xinfo_help)
{
    static const char *const lines[] = {
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        NULL,
    };
    (void)argc;
    (void)argv;
    reply_help(c, "XINFO", lines);
}

/* -------------------------------------------------------------- XREADGROUP */

struct xrg {
    struct rv_str group, consumer;
    int64_t count, block;
    bool noack;
    int sarg, nk, block_at; /* block_at: BLOCK's argv index, 0 when none */
    int *keys;
    struct sid *ids;
    bool *hist;
    struct stream **sv;
    struct sg_group **gv;
};

/* The key's stream and group, and its id; false after an error reply. A
 * woken call (retry) whose key or group went away gets Redis's errors for
 * that. */
static bool
xrg_key(struct conn *c, struct rv_str *argv, struct xrg *x, int i, bool retry)
{
    struct rv_str key = argv[x->sarg + i], a = argv[x->sarg + x->nk + i];
    struct ks_entry *e = lookup_read(c, key);
    if (e != NULL && ks_entry_type(e) != KS_STREAM && !retry) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    if (e == NULL || ks_entry_type(e) != KS_STREAM) {
        if (retry) {
            reply_errf(c, "UNBLOCKED the stream key no longer exists");
        } else {
            reply_errf(c,
                       "NOGROUP No such key '%.*s' or consumer group '%.*s' in XREADGROUP with "
                       "GROUP option",
                       (int)key.len, key.p, (int)x->group.len, x->group.p);
        }
        return false;
    }
    x->sv[i] = ks_entry_ptr(e);
    x->gv[i] = sg_find(*stream_groups(x->sv[i]), x->group);
    if (x->gv[i] == NULL) {
        if (retry) {
            reply_errf(c, "NOGROUP the consumer group this client was blocked on no longer exists");
        } else {
            reply_errf(c,
                       "NOGROUP No such key '%.*s' or consumer group '%.*s' in XREADGROUP with "
                       "GROUP option",
                       (int)key.len, key.p, (int)x->group.len, x->group.p);
        }
        return false;
    }
    x->keys[i] = x->sarg + i;
    x->hist[i] = false;
    if (a.len == 1 && a.p[0] == '$') {
        reply_errf(c, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read "
                      "the history of this consumer by specifying a proper ID, or use the > ID to "
                      "get new messages. The $ ID would just return an empty result set.");
        return false;
    }
    if (a.len == 1 && a.p[0] == '>') {
        return true;
    }
    if (!xs_sid_parse_reply(c, a, &x->ids[i], 0, true)) {
        return false;
    }
    /* Redis marks '>' with the largest id: given explicitly, it reads as '>' */
    x->hist[i] = sid_cmp(x->ids[i], SID_MAX) != 0;
    return true;
}

/* The consumer's pending entries after id: [[id, fields] | [id, nil], ...]. */
static bool
serve_history(struct conn *c, const struct xrg *x, int i, struct sg_consumer *k)
{
    struct sid from = x->ids[i];
    size_t h = reply_defer(c), n = 0;
    bool changed = false;
    if (sid_incr(&from)) {
        for (size_t j = sg_pel_lower(k->p.pel, k->p.npel, from);
             j < k->p.npel && (x->count == 0 || n < (uint64_t)x->count); j++, n++) {
            struct sg_nack *nk = k->p.pel[j];
            if (xs_reply_range_one(c, x->sv[i], nk->id) == 0) {
                reply_array(c, 2);
                xs_reply_id(c, nk->id);
                reply_null_array(c);
                continue;
            }
            nk->delivery_ms = c->env->now_ms;
            nk->count++;
            k->active_ms = c->env->now_ms;
            changed = true;
        }
    }
    reply_defer_array(c, h, n);
    return changed;
}

/* New entries for the group (">"): each moves the group on and, unless
 * NOACK, becomes pending for the consumer. */
static void
serve_new(struct conn *c, const struct xrg *x, int i, struct sg_consumer *k)
{
    struct stream *s = x->sv[i];
    struct sg_group *g = x->gv[i];
    struct sid from = g->last_id;
    struct stream_it it;
    size_t h = reply_defer(c), n = 0;
    if (sid_incr(&from)) {
        stream_it_init(&it, s, from, SID_MAX, false);
        while ((x->count == 0 || n < (uint64_t)x->count) && stream_it_next(&it)) {
            reply_array(c, 2);
            xs_reply_id(c, it.id);
            reply_array(c, 2 * it.nf);
            stream_it_fields(&it, xs_reply_fv, c);
            group_advance(s, g, it.id);
            if (!x->noack) {
                sg_pel_add(g, k, it.id, c->env->now_ms, 1);
            }
            k->active_ms = c->env->now_ms;
            n++;
        }
    }
    reply_defer_array(c, h, n);
}

/* Logs the call without BLOCK: it served, so replaying it serves the same. */
static void
xrg_effect(struct conn *c, int argc, struct rv_str *argv, const struct xrg *x)
{
    int first = x->block_at == 1 ? 3 : 1;
    effect_redo(c, "XREADGROUP", argv[first]);
    for (int j = first + 1; j < argc; j++) {
        if (j == x->block_at) {
            j++;
            continue;
        }
        effect_arg(c, argv[j].p, argv[j].len);
    }
}

/* An entry after the group's last delivered id is in the stream. */
static bool
has_new(const struct stream *s, const struct sg_group *g)
{
    struct sid from = g->last_id;
    struct stream_it it;
    if (stream_len(s) == 0 || sid_cmp(stream_last_id(s), from) <= 0 || !sid_incr(&from)) {
        return false;
    }
    stream_it_init(&it, s, from, SID_MAX, false);
    return stream_it_next(&it);
}

static void
xrg_run(struct conn *c, int argc, struct rv_str *argv, struct xrg *x)
{
    bool retry = (c->flags & CONN_BLOCK_RETRY) != 0, changed = false, created;
    size_t ready = 0;

    for (int i = 0; i < x->nk; i++) {
        if (!xrg_key(c, argv, x, i, retry)) {
            return;
        }
        if (x->hist[i] || has_new(x->sv[i], x->gv[i])) {
            ready++;
        }
    }
    if (ready == 0) {
        if (x->block < 0) {
            effect_none(c);
            reply_null_array(c);
            return;
        }
        int64_t deadline = x->block == 0 || x->block > INT64_MAX / 4 ? 0
                                                                     : c->env->now_ms + x->block;
        block_wait(c, c->last_cmd, argc, argv, x->keys, x->nk, deadline, BLOCK_REPLY_NULL_ARRAY);
        return;
    }
    if (c->proto == 3) {
        reply_map(c, ready);
    } else {
        reply_array(c, ready);
    }
    for (int i = 0; i < x->nk; i++) {
        if (!x->hist[i] && !has_new(x->sv[i], x->gv[i])) {
            continue;
        }
        struct sg_consumer *k = sg_consumer_get(x->gv[i], x->consumer, c->env->now_ms, &created);
        k->seen_ms = c->env->now_ms;
        changed |= created;
        if (created) {
            ksn_event(c->env, KSN_STREAM, "xgroup-createconsumer", argv[x->sarg + i]);
        }
        if (c->proto != 3) {
            reply_array(c, 2);
        }
        reply_bulk(c, argv[x->sarg + i].p, argv[x->sarg + i].len);
        if (x->hist[i]) {
            changed |= serve_history(c, x, i, k);
        } else {
            serve_new(c, x, i, k);
            changed = true;
        }
    }
    if (changed) {
        xrg_effect(c, argc, argv, x);
    } else {
        effect_none(c);
    }
}

/* XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK]
 * STREAMS key [key ...] id [id ...] */
CMD_HANDLER(xreadgroup)
{
    struct xrg x = { .block = -1 };
    bool has_group = false;

    for (int i = 1; i < argc; i++) {
        int more = argc - i - 1;
        if (cmd_arg_is(argv[i], "block") && more) {
            if (c->flags & CONN_IN_SCRIPT) {
                reply_errf(c, "ERR %.*s command is not allowed with BLOCK option from scripts",
                           (int)argv[0].len, argv[0].p);
                return;
            }
            x.block_at = i;
            if (!cmd_arg_int(argv[++i], &x.block)) {
                reply_errf(c, "ERR timeout is not an integer or out of range");
                return;
            }
            if (x.block < 0) {
                reply_err(c, RV_ERR_TIMEOUT_NEG);
                return;
            }
        } else if (cmd_arg_is(argv[i], "count") && more) {
            if (!cmd_arg_int(argv[++i], &x.count)) {
                reply_err(c, RV_ERR_NOTINT);
                return;
            }
            if (x.count < 0) {
                x.count = 0;
            }
        } else if (cmd_arg_is(argv[i], "streams") && more) {
            x.sarg = i + 1;
            break;
        } else if (cmd_arg_is(argv[i], "group") && more >= 2) {
            x.group = argv[i + 1];
            x.consumer = argv[i + 2];
            has_group = true;
            i += 2;
        } else if (cmd_arg_is(argv[i], "noack")) {
            x.noack = true;
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    if (x.sarg == 0) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if ((argc - x.sarg) % 2 != 0) {
        reply_errf(c, "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or "
                      "'>' must be specified.");
        return;
    }
    if (!has_group) {
        reply_errf(c, "ERR Missing GROUP option for XREADGROUP");
        return;
    }
    x.nk = (argc - x.sarg) / 2;
    size_t nk = (size_t)x.nk;
    x.keys = rv_malloc(nk * sizeof(*x.keys));
    x.ids = rv_malloc(nk * sizeof(*x.ids));
    x.hist = rv_malloc(nk * sizeof(*x.hist));
    x.sv = rv_malloc(nk * sizeof(*x.sv));
    x.gv = rv_malloc(nk * sizeof(*x.gv));
    xrg_run(c, argc, argv, &x);
    rv_free(x.keys);
    rv_free(x.ids);
    rv_free(x.hist);
    rv_free(x.sv);
    rv_free(x.gv);
}

int
stream_xreadgroup_keys(int argc, struct rv_str *argv, int *out, int max)
{
    return xs_streams_keys(argc, argv, out, max, true);
}
