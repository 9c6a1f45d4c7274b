/* node/commands/cmd_pubsub.c: PUBLISH, SPUBLISH, (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE and PUBSUB.
 * Subscriptions and delivery are node/features/pubsub.c. */
#include "base/glob.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/features/pubsub.h"

/* ["subscribe", channel, count] as a push (RESP3) or array (RESP2). */
static void
reply_event(struct conn *c, const char *kind, const char *ch, size_t chlen, bool null_ch,
            size_t count)
{
    resp_w_push(&c->wbuf, c->proto, 3);
    reply_bulk_cstr(c, kind);
    if (null_ch) {
        reply_null(c);
    } else {
        reply_bulk(c, ch, chlen);
    }
    reply_int(c, (int64_t)count);
}

struct event_ctx {
    struct conn *c;
    const char *kind;
};

static void
unsub_event(void *arg, struct rv_str name, size_t count)
{
    struct event_ctx *x = arg;
    reply_event(x->c, x->kind, name.p, name.len, false, count);
}

static void
subscribe_generic(struct conn *c, int argc, struct rv_str *argv, enum pubsub_kind kind)
{
    for (int i = 1; i < argc; i++) {
        size_t count = pubsub_subscribe(c, kind, argv[i]);
        reply_event(c, kind == PUBSUB_SHARD ? "ssubscribe" : "subscribe", argv[i].p, argv[i].len,
                    false, count);
    }
}

/* Without channels: every channel of c, or one event with a null channel when it has none. */
static void
unsubscribe_generic(struct conn *c, int argc, struct rv_str *argv, enum pubsub_kind kind)
{
    struct event_ctx x = { c, kind == PUBSUB_SHARD ? "sunsubscribe" : "unsubscribe" };
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            size_t count = pubsub_unsubscribe(c, kind, argv[i]);
            reply_event(c, x.kind, argv[i].p, argv[i].len, false, count);
        }
    } else if (pubsub_unsubscribe_all(c, kind, unsub_event, &x) == 0) {
        reply_event(c, x.kind, NULL, 0, true, pubsub_count(c, kind));
    }
}

CMD_HANDLER(publish)
{
    reply_int(c, (int64_t)pubsub_publish(c->shard, argv[1], argv[2]));
}

CMD_HANDLER(spublish)
{
    reply_int(c, (int64_t)pubsub_spublish(c->shard, argv[1], argv[2]));
}

CMD_HANDLER(subscribe)
{
    subscribe_generic(c, argc, argv, PUBSUB_CHANNEL);
}

CMD_HANDLER(ssubscribe)
{
    subscribe_generic(c, argc, argv, PUBSUB_SHARD);
}

CMD_HANDLER(unsubscribe)
{
    unsubscribe_generic(c, argc, argv, PUBSUB_CHANNEL);
}

CMD_HANDLER(sunsubscribe)
{
    unsubscribe_generic(c, argc, argv, PUBSUB_SHARD);
}

CMD_HANDLER(psubscribe)
{
    for (int i = 1; i < argc; i++) {
        size_t count = pubsub_psubscribe(c, argv[i]);
        reply_event(c, "psubscribe", argv[i].p, argv[i].len, false, count);
    }
}

CMD_HANDLER(punsubscribe)
{
    struct event_ctx x = { c, "punsubscribe" };
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            size_t count = pubsub_punsubscribe(c, argv[i]);
            reply_event(c, x.kind, argv[i].p, argv[i].len, false, count);
        }
    } else if (pubsub_punsubscribe_all(c, unsub_event, &x) == 0) {
        reply_event(c, x.kind, NULL, 0, true, pubsub_count(c, PUBSUB_CHANNEL));
    }
}

/* ---- PUBSUB introspection (this shard, as a cluster node answers) ---- */

struct chan_list {
    struct conn *c;
    struct rv_str *pat;
    size_t n;
};

static void
list_channel(void *arg, struct rv_str k)
{
    struct chan_list *x = arg;
    if (x->pat == NULL || glob_match(x->pat->p, x->pat->len, k.p, k.len, false)) {
        reply_bulk(x->c, k.p, k.len);
        x->n++;
    }
}

static void
channels_generic(struct conn *c, int argc, struct rv_str *argv, enum pubsub_kind kind)
{
    struct chan_list x = { c, argc > 2 ? &argv[2] : NULL, 0 };
    size_t h = reply_defer(c);
    pubsub_channels(c->shard, kind, list_channel, &x);
    reply_defer_array(c, h, x.n);
}

static void
numsub_generic(struct conn *c, int argc, struct rv_str *argv, enum pubsub_kind kind)
{
    reply_map(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        reply_bulk(c, argv[i].p, argv[i].len);
        reply_int(c, (int64_t)pubsub_numsub(c->shard, kind, argv[i]));
    }
}

CMD_HANDLER(pubsub_channels)
{
    channels_generic(c, argc, argv, PUBSUB_CHANNEL);
}

CMD_HANDLER(pubsub_shardchannels)
{
    channels_generic(c, argc, argv, PUBSUB_SHARD);
}

CMD_HANDLER(pubsub_numsub)
{
    numsub_generic(c, argc, argv, PUBSUB_CHANNEL);
}

CMD_HANDLER(pubsub_shardnumsub)
{
    numsub_generic(c, argc, argv, PUBSUB_SHARD);
}

CMD_HANDLER(pubsub_numpat)
{
    reply_int(c, (int64_t)pubsub_numpat(c->shard));
}

CMD_HANDLER(pubsub_help)
{
    static const char *const lines[] = {
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        NULL,
    };
    reply_help(c, "PUBSUB", lines);
}
