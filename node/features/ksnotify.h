/* node/features/ksnotify.h: keyspace notifications (Redis's
 * notify-keyspace-events). A write reports what it did with ksn_event; when
 * its class is enabled the event is published, as PUBLISH does (to
 * subscribers on every shard), on "__keyspace@<db>__:<key>" with the event
 * as the message and on "__keyevent@<db>__:<event>" with the key, <db> the
 * database the command runs in (env->db).
 *
 * With no class enabled an event costs one load of the config snapshot's
 * flags and one predictable branch (the flags are 0 unless K or E is set). */
#pragma once
#include "base/mem.h"
#include "node/core/config.h"
#include "node/core/shard.h"
#include "proto/resp.h"

struct ks;

enum ksn_class {
    KSN_GENERIC = CFG_NKE_GENERIC,
    KSN_STRING = CFG_NKE_STRING,
    KSN_LIST = CFG_NKE_LIST,
    KSN_SET = CFG_NKE_SET,
    KSN_HASH = CFG_NKE_HASH,
    KSN_ZSET = CFG_NKE_ZSET,
    KSN_EXPIRED = CFG_NKE_EXPIRED,
    KSN_EVICTED = CFG_NKE_EVICTED,
    KSN_STREAM = CFG_NKE_STREAM,
    KSN_MODULE = CFG_NKE_MODULE,
    KSN_KEY_MISS = CFG_NKE_KEY_MISS,
    KSN_NEW = CFG_NKE_NEW,
};

/* Publish event for key of database db (the slow path of ksn_event). */
void ksn_publish(struct shard_env *env, unsigned db, const char *event, struct rv_str key);

static inline bool
ksn_on(const struct shard_env *env, enum ksn_class cls)
{
    return rv_unlikely((env->cfg->node.notify_flags & cls) != 0);
}

static inline void
ksn_event(struct shard_env *env, enum ksn_class cls, const char *event, struct rv_str key)
{
    if (ksn_on(env, cls)) {
        ksn_publish(env, env->db, event, key);
    }
}

/* The same for a key of another database (MOVE, COPY ... DB). */
static inline void
ksn_event_db(struct shard_env *env, unsigned db, enum ksn_class cls, const char *event,
             struct rv_str key)
{
    if (ksn_on(env, cls)) {
        ksn_publish(env, db, event, key);
    }
}

/* While muted (a count: calls nest), events of this thread are dropped: a
 * value rebuilt by replaying commands (RESTORE's payload) reports only
 * "restore", not the writes that rebuilt it. */
void ksn_mute(bool on);

/* The shard hook that publishes "keymiss" (node/core/lookup.h's read misses). */
void ksn_key_miss(struct shard_env *env, const char *key, size_t len);

/* Make ks report its lazily and actively expired keys as "expired" events of
 * shard s, and its added keys as "new" while n is set (on every database a
 * shard serves). */
void ksn_hook_ks(struct shard *s, struct ks *ks);
/* The shard adopted a configuration: its databases report added keys only
 * while n is set, so the keyspace pays nothing for it otherwise. */
void ksn_adopt_cfg(struct shard *s);
