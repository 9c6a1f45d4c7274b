/* node/core/node.c */
#include "node/core/node.h"

#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/shard.h"
#include "base/mem.h"

#include <pthread.h>

/* Retired snapshots stay allocated until exit: a shard may still read one. */
struct cfg_retired {
    struct cfg *c;
    struct cfg_retired *next;
};

static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cfg_retired *retired;

void
node_publish_cfg(struct node *n, struct cfg *c)
{
    struct cfg *old = atomic_exchange(&n->cfg, c);
    if (old) {
        struct cfg_retired *r = rv_malloc(sizeof(*r));
        r->c = old;
        pthread_mutex_lock(&retired_lock);
        r->next = retired;
        retired = r;
        pthread_mutex_unlock(&retired_lock);
    }
    atomic_fetch_add(&n->cfg_version, 1);
}

/* Taking a reference and dropping the publisher's must not interleave (the
 * reader could take one to a freed snapshot): both hold this lock, which a
 * shard takes only when the topology changed. */
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;

void
node_publish_topo(struct node *n, struct topo *t)
{
    pthread_mutex_lock(&topo_lock);
    struct topo *old = atomic_exchange(&n->topo, t);
    atomic_fetch_add(&n->topo_version, 1);
    pthread_mutex_unlock(&topo_lock);
    topo_put(old); /* (shards hold their own references to what they adopted) */
    shard_wake_all(n, NULL);
}

struct topo *
node_topo_get(struct node *n)
{
    pthread_mutex_lock(&topo_lock);
    struct topo *t = topo_get(atomic_load(&n->topo));
    pthread_mutex_unlock(&topo_lock);
    return t;
}

unsigned
node_slot_shard(const struct node *n, unsigned slot)
{
    return slot_owner(slot, n->nshards);
}

int
node_shard_port(const struct node *n, unsigned i)
{
    return (int)atomic_load(&((struct node *)n)->cfg)->net.port + (int)i;
}
