/* node/features/pubsub.h: Pub/Sub. Each shard keeps its own channel and pattern
 * subscriptions. PUBLISH delivers to the shard's subscribers and posts one
 * message to every other shard that has any subscription, so a message
 * reaches subscribers on every shard, as across a Redis Cluster; its reply
 * counts the receivers on the publishing shard, as a cluster node does.
 * SPUBLISH stays in the shard that owns the channel's slot.
 *
 * The commands (node/commands/cmd_pubsub.c) parse and write the confirmations;
 * delivering messages to subscribers is done here. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct shard;

enum pubsub_kind {
    PUBSUB_CHANNEL, /* SUBSCRIBE, PUBLISH: every shard */
    PUBSUB_SHARD,   /* SSUBSCRIBE, SPUBLISH: the channel's shard only */
};

/* Subscribe c to channel ch (nothing when it already is). Returns the count a
 * confirmation shows: c's channels and patterns for PUBSUB_CHANNEL, its shard
 * channels for PUBSUB_SHARD (pubsub_count). */
size_t pubsub_subscribe(struct conn *c, enum pubsub_kind kind, struct rv_str ch);
size_t pubsub_unsubscribe(struct conn *c, enum pubsub_kind kind, struct rv_str ch);
size_t pubsub_psubscribe(struct conn *c, struct rv_str pat);
size_t pubsub_punsubscribe(struct conn *c, struct rv_str pat);
size_t pubsub_count(const struct conn *c, enum pubsub_kind kind);
/* Drop every channel of kind (or every pattern) c has, calling fn (when not
 * NULL) after each with the name and pubsub_count; returns how many. */
typedef void pubsub_unsub_fn(void *arg, struct rv_str name, size_t count);
size_t pubsub_unsubscribe_all(struct conn *c, enum pubsub_kind kind, pubsub_unsub_fn *fn,
                              void *arg);
size_t pubsub_punsubscribe_all(struct conn *c, pubsub_unsub_fn *fn, void *arg);

/* Deliver msg to the subscribers of ch; returns the receivers on shard s
 * (PUBLISH also posts it to every other shard with subscriptions). */
size_t pubsub_publish(struct shard *s, struct rv_str ch, struct rv_str msg);
size_t pubsub_spublish(struct shard *s, struct rv_str ch, struct rv_str msg);

/* Shard s's active channels of kind, in table order (PUBSUB CHANNELS). */
typedef void pubsub_name_fn(void *arg, struct rv_str name);
void pubsub_channels(struct shard *s, enum pubsub_kind kind, pubsub_name_fn *fn, void *arg);
/* Subscribers of ch on shard s (patterns not counted); distinct patterns. */
size_t pubsub_numsub(struct shard *s, enum pubsub_kind kind, struct rv_str ch);
size_t pubsub_numpat(struct shard *s);

/* Drop every subscription of c (close, RESET). */
void pubsub_release(struct conn *c);
/* Subscription counts of c, for CLIENT LIST (channels, patterns, shard channels). */
void pubsub_counts(const struct conn *c, size_t *sub, size_t *psub, size_t *ssub);
/* Visit every subscription of c: channels and shard channels (pattern false),
 * then patterns (pattern true). fn's result is and-ed into the return value. */
typedef bool pubsub_visit_fn(void *arg, struct rv_str name, bool pattern);
bool pubsub_each(struct conn *c, pubsub_visit_fn *fn, void *arg);
/* Free the shard's subscription tables (shard teardown, no connections left). */
void pubsub_shard_destroy(struct shard *s);
