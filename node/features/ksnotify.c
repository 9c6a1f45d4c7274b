/* node/features/ksnotify.c: keyspace notifications, published through pub/sub. */
#include "node/features/ksnotify.h"

#include "node/features/pubsub.h"
#include "node/keyspace/ks.h"

#include <stdio.h>
#include <string.h>

/* Channel "__key<kind>@<db>__:<name>" into buf (or a larger allocation,
 * returned in *heap for the caller to free). */
static struct rv_str
channel(char *buf, size_t cap, char **heap, const char *kind, unsigned db, struct rv_str name)
{
    char head[48];
    int h = snprintf(head, sizeof(head), "__key%s@%u__:", kind, db);
    size_t n = (size_t)h + name.len;
    char *p = buf;
    if (n > cap) {
        p = *heap = rv_malloc(n);
    }
    memcpy(p, head, (size_t)h);
    if (name.len > 0) {
        memcpy(p + h, name.p, name.len);
    }
    return (struct rv_str){ p, n };
}

static _Thread_local unsigned muted;

void
ksn_mute(bool on)
{
    muted = on ? muted + 1 : muted - 1;
}

void
ksn_publish(struct shard_env *env, unsigned db, const char *event, struct rv_str key)
{
    int64_t f = env->cfg->node.notify_flags;
    struct shard *s = (struct shard *)env; /* (env is the shard's first member) */
    struct rv_str ev = { event, strlen(event) };
    char buf[256];
    char *heap = NULL;
    if (muted) {
        return;
    }
    if (f & CFG_NKE_KEYSPACE) {
        pubsub_publish(s, channel(buf, sizeof(buf), &heap, "space", db, key), ev);
        rv_free(heap);
        heap = NULL;
    }
    if (f & CFG_NKE_KEYEVENT) {
        pubsub_publish(s, channel(buf, sizeof(buf), &heap, "event", db, ev), key);
        rv_free(heap);
    }
}

void
ksn_key_miss(struct shard_env *env, const char *key, size_t len)
{
    ksn_event(env, KSN_KEY_MISS, "keymiss", (struct rv_str){ key, len });
}

static void
on_expired(void *arg, const struct ks_entry *e)
{
    ksn_event(shard_env(arg), KSN_EXPIRED, "expired", ks_entry_key(e));
}

/* A key added to ks: usually the command's database, but COPY ... DB and
 * MOVE add to another one. */
static void
on_new(void *arg, struct ks *ks, const char *key, size_t klen)
{
    struct shard_env *env = shard_env(arg);
    unsigned db = env->db;
    if (ks != env->ks) {
        for (db = 0; db < env->ndbs && env->dbs[db] != ks; db++) {
        }
    }
    ksn_event_db(env, db, KSN_NEW, "new", (struct rv_str){ key, klen });
}

void
ksn_hook_ks(struct shard *s, struct ks *ks)
{
    ks_set_expired_hook(ks, on_expired, s);
    bool want = (shard_env(s)->cfg->node.notify_flags & KSN_NEW) != 0;
    ks_set_new_hook(ks, want ? on_new : NULL, s);
}

void
ksn_adopt_cfg(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    for (unsigned i = 0; i < env->ndbs; i++) {
        if (env->dbs[i] != NULL) {
            ksn_hook_ks(s, env->dbs[i]);
        }
    }
}
