/* node/core/node.c */
#include "node/core/node.h"

#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/shard.h"
#include "base/mem.h"
#include "base/tls.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

/* ---------------------------------------------------------------------- TLS */

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_ctx *tls_server, *tls_client;
static struct tls_ctx *tls_bus_server, *tls_bus_client; /* tls-cluster */

static void
tls_opts_of(const struct cfg *c, struct tls_opts *o)
{
    *o = (struct tls_opts){
        .cert_file = c->tls.cert_file,
        .key_file = c->tls.key_file,
        .key_file_pass = c->tls.key_file_pass,
        .client_cert_file = c->tls.client_cert_file,
        .client_key_file = c->tls.client_key_file,
        .ca_cert_file = c->tls.ca_cert_file,
        .ca_cert_dir = c->tls.ca_cert_dir,
        .protocols = c->tls.protocols,
        .ciphers = c->tls.ciphers,
        .ciphersuites = c->tls.ciphersuites,
        .auth_clients = (enum tls_auth)c->tls.auth_clients,
        .prefer_server_ciphers = c->tls.prefer_server_ciphers,
    };
}

int
node_tls_apply(const struct cfg *c, char *err, size_t errsz)
{
    struct tls_opts o;
    struct tls_ctx *srv = NULL, *cli = NULL;
    tls_opts_of(c, &o);
    if (c->tls.port != 0 && (srv = tls_ctx_new(&o, true, err, errsz)) == NULL) {
        return -1;
    }
    if (c->tls.replication && (cli = tls_ctx_new(&o, false, err, errsz)) == NULL) {
        tls_ctx_unref(srv);
        return -1;
    }
    /* The bus is mutual TLS whatever tls-auth-clients says. */
    struct tls_ctx *bus_srv = NULL, *bus_cli = NULL;
    if (c->tls.cluster) {
        struct tls_opts bo = o;
        bo.auth_clients = TLS_AUTH_YES;
        if ((bus_srv = tls_ctx_new(&bo, true, err, errsz)) == NULL ||
            (bus_cli = tls_ctx_new(&bo, false, err, errsz)) == NULL) {
            tls_ctx_unref(bus_srv);
            tls_ctx_unref(srv);
            tls_ctx_unref(cli);
            return -1;
        }
    }
    pthread_mutex_lock(&tls_lock);
    struct tls_ctx *old[4] = { tls_server, tls_client, tls_bus_server, tls_bus_client };
    tls_server = srv;
    tls_client = cli;
    tls_bus_server = bus_srv;
    tls_bus_client = bus_cli;
    pthread_mutex_unlock(&tls_lock);
    for (int i = 0; i < 4; i++) {
        tls_ctx_unref(old[i]);
    }
    return 0;
}

/* A reference to the context in *slot (NULL: none), taken under the lock
 * that a rebuild swaps them under. */
static struct tls_ctx *
tls_take(struct tls_ctx *const *slot)
{
    pthread_mutex_lock(&tls_lock);
    struct tls_ctx *t = *slot;
    if (t != NULL) {
        tls_ctx_ref(t);
    }
    pthread_mutex_unlock(&tls_lock);
    return t;
}

struct tls_ctx *
node_tls_bus_get(bool server)
{
    return tls_take(server ? &tls_bus_server : &tls_bus_client);
}

struct tls_ctx *
node_tls_get(bool server)
{
    return tls_take(server ? &tls_server : &tls_client);
}
