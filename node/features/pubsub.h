/* node/features/pubsub.h: Pub/Sub. Each shard keeps its own channel and pattern
 * subscriptions. PUBLISH delivers to the shard's subscribers and posts one
 * message to every other shard that has any subscription, so a message
 * reaches subscribers on every shard, as across a Redis Cluster; its reply
 * counts the receivers on the publishing shard, as a cluster node does.
 * SPUBLISH stays in the shard that owns the channel's slot. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct shard;

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
