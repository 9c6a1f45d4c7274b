/* node/server/shard.c: shard threads, listeners, the per-loop flush and the timer. */
#include "node/core/shard_int.h"
#include "node/server/shard_thread.h"

#include "cluster/slot.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/rand.h"
#include "cluster/topo.h"
#include "node/features/acl.h"
#include "node/features/block.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/server/conn_io.h"
#include "node/server/dispatch.h"
#include "node/commands/debug.h"
#include "node/commands/function.h"
#include "node/commands/script.h"
#include "node/keyspace/dict.h"
#include "node/features/evict.h"
#include "node/features/monitor.h"
#include "node/features/pause.h"
#include "node/features/topology.h"
#include "node/keyspace/ks.h"
#include "node/obs/metrics.h"
#include "node/commands/t_hash.h"
#define LOG_MODULE "shard"
#include "base/log.h"
#include "node/commands/migrate_async.h"
#include "node/commands/migrate_stage.h"
#include "node/commands/slotmig.h"
#include "node/core/node.h"
#include "node/persist/persist.h"
#include "node/server/repl_host.h"
#include "replication/repl.h"
#include "node/features/ksnotify.h"
#include "node/features/pubsub.h"
#include "node/features/tracking.h"

#include <errno.h>
#include <stddef.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static int
listen_one(struct shard *s, const char *addr, int port, char *err, size_t errsz)
{
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    if (strcmp(addr, "*") == 0 || strcmp(addr, "0.0.0.0") == 0) {
        sin.sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        snprintf(err, errsz, "shard %u: cannot listen on %s:%d ('bind'): not an IPv4 address",
                 s->env.id, addr, port);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0) {
        snprintf(err, errsz, "shard %u: socket(): %s", s->env.id, strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(fd, (int)s->env.cfg->net.tcp_backlog) != 0) {
        snprintf(err, errsz, "shard %u: cannot listen on %s:%d ('port'): %s", s->env.id, addr, port,
                 strerror(errno));
        close(fd);
        return -1;
    }
    s->lfds[s->nlisten++] = fd;
    return 0;
}

/* Every bind address on port (and on tls_port when it is not 0). */
static int
listen_all(struct shard *s, int port, int tls_port, char *err, size_t errsz)
{
    char binds[1024];
    snprintf(binds, sizeof(binds), "%s", s->env.cfg->net.bind);
    char *save = NULL;
    for (char *a = strtok_r(binds, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
        for (int tls = 0; tls <= (tls_port != 0); tls++) {
            if (s->nlisten == SHARD_MAX_LISTEN) {
                snprintf(err, errsz, "shard %u: too many bind addresses ('bind')", s->env.id);
                return -1;
            }
            s->ltls[s->nlisten] = tls;
            if (listen_one(s, a, tls ? tls_port : port, err, errsz) != 0) {
                return -1;
            }
        }
    }
    if (s->nlisten == 0) {
        snprintf(err, errsz, "shard %u: no bind address ('bind')", s->env.id);
        return -1;
    }
    return 0;
}

static struct shard *shard_create_impl(struct node *n, unsigned id, const char *dir, char *err,
                                       size_t errsz);

/* Numbered databases: `databases`, except in cluster mode and on a
 * multi-shard node (which routes by slot as a cluster does): only db 0. */
static unsigned
shard_ndbs(const struct shard *s)
{
    const struct cfg *cfg = s->env.cfg;
    if (cfg->cluster.enabled || s->env.node->nshards > 1) {
        return 1;
    }
    return (unsigned)cfg->node.databases;
}

/* One incremental rehash step on every database; true while more remains. */
static bool
rehash_dbs(struct shard *s)
{
    bool more = false;
    for (unsigned i = 0; i < s->env.ndbs; i++) {
        if (s->env.dbs[i] != NULL && ks_rehash_step(s->env.dbs[i], 1000)) {
            more = true;
        }
    }
    return more;
}

struct shard *
shard_create(struct node *n, unsigned id, char *err, size_t errsz)
{
    return shard_create_impl(n, id, NULL, err, errsz);
}

struct shard *
shard_create_offline(struct node *n, unsigned id, const char *dir, char *err, size_t errsz)
{
    return shard_create_impl(n, id, dir, err, errsz);
}

static void
adopt_cfg(struct shard *s)
{
    evict_adopt_cfg(s);
    ksn_adopt_cfg(s);
}

/* The shard's state (node/core) calls up into persistence, eviction,
 * keyspace notifications and metrics through these. */
static const struct shard_hooks server_hooks = {
    .output = persist_note_output,
    .cfg_adopted = adopt_cfg,
    .topo_adopted = topology_reconcile,
    .stats_reset = metrics_reset,
    .key_miss = ksn_key_miss,
};

static void shard_busy_poll(struct shard *s, struct conn *running);
static int loop_create(struct shard *s);

/* A checkpoint's state record: the function libraries, then MIGRATE's
 * staging values (a COMMIT logged after the checkpoint needs them). */
static void
shard_emit_state(struct shard *s, obj_emit_fn *fn, void *arg)
{
    fn_emit_state(s, fn, arg);
    mstage_emit(s, fn, arg);
}

static struct shard *
shard_create_impl(struct node *n, unsigned id, const char *dir, char *err, size_t errsz)
{
    shard_set_hooks(&server_hooks);
    cmd_set_caller(dispatch_call);
    conn_set_io(&conn_io_ops);
    script_set_poll(shard_busy_poll);
    persist_set_state_fn(shard_emit_state);
    persist_set_shard_state_fn(slotmig_emit_state);
    persist_set_gone_fn(tracking_key_gone);
    long long mem0 = rv_mem_thread_net(); /* this thread's work for the shard is its charge */
    struct shard *s = rv_calloc(1, sizeof(*s));
    s->env.evict = evict_create();
    s->env.id = id;
    s->env.node = n;
    s->env.cfg = atomic_load(&n->cfg);
    s->cfg_version = atomic_load(&n->cfg_version);
    s->wakefd = -1;
    s->cpu = -1;
    slot_range(id, n->nshards, &s->slot_lo, &s->slot_hi);
    s->next_conn_id = (uint64_t)id + 1;
    s->rnd = clock_mono_us() ^ ((uint64_t)id << 32) ^ 0x9e3779b97f4a7c15ull;
    s->env.cmdstats = rv_calloc(cmd_id_count(), sizeof(*s->env.cmdstats));
    s->env.metrics = metrics_create();
    shard_calibrate_tsc();

    if (dir != NULL) {
        /* (a source of resharding loads every database, so it can refuse them) */
        shard_dbs_init(&s->env, ks_create(rand_u64(), rand_u64()),
                       (unsigned)s->env.cfg->node.databases);
        ksn_hook_ks(s, s->env.dbs[0]);
        s->env.now_ms = clock_unix_ms();
        if (persist_open_dir(s, dir, true, err, errsz) != 0) {
            goto fail;
        }
        evict_add_carry(s->env.evict, rv_mem_thread_net() - mem0);
        evict_adopt_cfg(s);
        return s;
    }
    int64_t tls_port = s->env.cfg->tls.port;
    if (listen_all(s, (int)s->env.cfg->net.port + (int)id, tls_port ? (int)(tls_port + id) : 0, err,
                   errsz) != 0) {
        goto fail;
    }
    shard_dbs_init(&s->env, ks_create(rand_u64(), rand_u64()), shard_ndbs(s));
    ks_count_slots(s->env.dbs[0], s->env.cfg->cluster.enabled); /* (COUNTKEYSINSLOT, orphans) */
    ksn_hook_ks(s, s->env.dbs[0]); /* (the other databases inherit it) */
    s->env.now_ms = clock_unix_ms();
    repl_host_install(); /* before persistence attaches replication */
    if (persist_create(s, err, errsz) != 0) {
        goto fail;
    }
    if (loop_create(s) != 0) {
        snprintf(err, errsz, "shard %u: cannot create its event loop", id);
        goto fail;
    }
    evict_add_carry(s->env.evict, rv_mem_thread_net() - mem0);
    evict_adopt_cfg(s);
    return s;
fail:
    shard_destroy(s);
    return NULL;
}

int
shard_load(struct shard *s, char *err, size_t errsz)
{
    long long mem0 = rv_mem_thread_net();
    if (persist_load(s, err, errsz) != 0) {
        return -1;
    }
    evict_add_carry(s->env.evict, rv_mem_thread_net() - mem0);
    evict_adopt_cfg(s);
    return 0;
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct shard *s = arg;
    (void)what;
    bool tls = false;
    for (int i = 0; i < s->nlisten; i++) {
        tls |= s->lfds[i] == lfd && s->ltls[i];
    }
    for (int i = 0; i < 32; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                log_warn("[shard %u] accept: %s", s->env.id, strerror(errno));
            }
            return;
        }
        if ((int64_t)atomic_load_explicit(&s->env.node->nclients, memory_order_relaxed) >=
            s->env.cfg->net.maxclients) {
            static const char msg[] = "-ERR max number of clients reached\r\n";
            ssize_t w = write(fd, msg, sizeof(msg) - 1);
            (void)w;
            close(fd);
            s->env.stats.conns_rejected++;
            continue;
        }
        s->env.stats.conns_received++;
        struct conn *c = conn_create(s, fd);
        if (c != NULL && tls && conn_start_tls(c) != 0) {
            continue; /* (closed) */
        }
        if (c) {
            log_info("Accepted %s%s", c->addr, tls ? " (TLS)" : "");
        }
    }
}

/* A script is busy (node/commands/script.h): take the connections waiting in
 * the listen backlog, then serve what the clients sent (conn_busy_poll). */
static void
shard_busy_poll(struct shard *s, struct conn *running)
{
    for (int i = 0; i < s->nlisten; i++) {
        if (s->lfds[i] >= 0) {
            on_accept(s->lfds[i], EV_READ, s);
        }
    }
    conn_busy_poll(s, running);
}

static void
shard_begin_stop(struct shard *s)
{
    if (s->stopping) {
        return;
    }
    s->stopping = true;
    s->stop_deadline_ms = clock_unix_ms() + s->env.cfg->node.shutdown_timeout * 1000;
    for (int i = 0; i < s->nlisten; i++) {
        event_free(s->levs[i]);
        s->levs[i] = NULL;
        close(s->lfds[i]);
        s->lfds[i] = -1;
    }
    /* Stop reading from clients; what was already answered is still written. */
    for (struct conn *c = s->conns; c; c = c->next) {
        conn_close_after_reply(c);
    }
}

static void
shard_drain_inbox(struct shard *s)
{
    struct shard_msg *m = atomic_exchange_explicit(&s->inbox, NULL, memory_order_acquire);
    struct shard_msg *fifo = NULL;
    while (m) { /* the list is newest-first: reverse it */
        struct shard_msg *n = m->next;
        m->next = fifo;
        fifo = m;
        m = n;
    }
    if (fifo == NULL) {
        return;
    }
    shard_refresh_clock(s);
    while (fifo) {
        struct shard_msg *n = fifo->next;
        rv_mem_thread_adjust((long long)rv_usable_size(fifo));
        fifo->run(s, fifo);
        fifo = n;
    }
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct shard *s = arg;
    uint64_t v;
    (void)what;
    ssize_t r = read(fd, &v, sizeof(v));
    (void)r;
    shard_drain_inbox(s);
    shard_adopt_cfg(s);
    if (acl_gen_now() != s->env.acl_gen) {
        acl_shard_refresh(s);
    }
    if (atomic_load(&s->env.node->shutdown)) {
        shard_begin_stop(s);
    }
}

static void
on_cron(evutil_socket_t fd, short what, void *arg)
{
    struct shard *s = arg;
    (void)fd;
    (void)what;
    int64_t now = shard_refresh_clock(s);
    shard_adopt_cfg(s);
    if (acl_gen_now() != s->env.acl_gen) {
        acl_shard_refresh(s);
    }
    uint64_t budget = (uint64_t)(25000 / s->env.cfg->node.hz) *
                      (uint64_t)s->env.cfg->node.active_expire_effort / 10;
    if (budget < 1000) {
        budget = 1000;
    }
    if (!debug_active_expire_on()) {
        budget = 0; /* DEBUG SET-ACTIVE-EXPIRE 0: the expiry cycles do nothing */
    }
    shard_sample_rates(s, now);
    metrics_cron(s);
    persist_cron(s);
    mstage_cron(s);
    pause_tick(s);
    /* As Redis, nothing expires or is evicted actively while clients are paused
     * (a pause keeps the data set still, e.g. for a failover). */
    bool paused = pause_active(&s->env);
    for (unsigned i = 0; i < s->env.ndbs && !paused; i++) {
        if (s->env.dbs[i] != NULL) {
            shard_use_db(&s->env, i); /* (its expiries are logged as that database's) */
            ks_active_expire(s->env.ks, now, budget);
        }
    }
    shard_use_db(&s->env, 0);
    s->env.stats.expired_keys_all = shard_expired_keys(&s->env);
    if (!paused &&
        !repl_is_replica(persist_repl(s))) { /* replicas wait for the primary's records */
        hash_active_expire(s, now, budget / 4);
        /* and, as Redis's replica-ignore-maxmemory yes, evict nothing themselves */
        if (evict_cron(s) && !evtimer_pending(s->evictev, NULL)) {
            struct timeval one_ms = { 0, 1000 };
            evtimer_add(s->evictev, &one_ms);
        }
    }
    if ((rehash_dbs(s) | topology_drop_step(s)) && !evtimer_pending(s->rehashev, NULL)) {
        struct timeval one_ms = { 0, 1000 };
        evtimer_add(s->rehashev, &one_ms);
    }
    if (s->env.cfg->net.timeout > 0) {
        for (struct conn *c = s->conns, *n; c; c = n) {
            n = c->next;
            /* As Redis: subscribers and blocked clients are not idle. */
            if (now - c->last_ms > s->env.cfg->net.timeout * 1000 &&
                !(c->flags & (CONN_PENDING | CONN_PUBSUB | CONN_BLOCKED))) {
                conn_io_close(c);
            }
        }
    }
    struct timeval tv = { 0, 1000000 / (int)s->env.cfg->node.hz };
    event_add(s->cronev, &tv);
}

/* While a resize is in progress, spend up to 1 ms per millisecond on it: a
 * resize then finishes in a fraction of a second (no old table lingers in
 * memory) while no client ever waits more than 1 ms for it. The deletion of
 * a given-away slot's keys (topology_drop_step) runs on the same beat. */
static void
on_rehash(evutil_socket_t fd, short what, void *arg)
{
    struct shard *s = arg;
    (void)fd;
    (void)what;
    if (rehash_dbs(s) | topology_drop_step(s)) {
        struct timeval one_ms = { 0, 1000 };
        evtimer_add(s->rehashev, &one_ms);
    }
}

static void
on_evict(evutil_socket_t fd, short what, void *arg)
{
    struct shard *s = arg;
    (void)fd;
    (void)what;
    if (!pause_active(&s->env) && evict_cron(s)) {
        struct timeval one_ms = { 0, 1000 };
        evtimer_add(s->evictev, &one_ms);
    }
}

static void
shard_before_poll(struct shard *s)
{
    persist_before_poll(s);
    struct conn *c = s->pending;
    s->pending = NULL;
    while (c) {
        struct conn *n = c->pnext;
        c->flags &= ~CONN_PENDING;
        c->pnext = NULL;
        conn_io_flush(c);
        c = n;
    }
}

static void *
shard_main(void *arg)
{
    struct shard *s = arg;
    char name[16];
    snprintf(name, sizeof(name), "ruvio-shard-%u", s->env.id);
    pthread_setname_np(pthread_self(), name);
    log_set_thread_shard((int)s->env.id);
    if (s->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s->cpu, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
            log_warn("[shard %u] cannot pin to CPU %d", s->env.id, s->cpu);
        }
    }
    shard_refresh_clock(s);
    shard_adopt_cfg(s); /* (a topology published before this shard existed woke nobody) */
    while (!s->stopping || (s->conns && clock_unix_ms() < s->stop_deadline_ms)) {
        shard_before_poll(s);
        if (s->stopping && s->conns == NULL) {
            break;
        }
        /* Work queued by the flush itself (a paused client resumed) must not wait for I/O. */
        event_base_loop(s->base, s->pending ? EVLOOP_NONBLOCK : EVLOOP_ONCE);
    }
    while (s->conns) {
        conn_io_close(s->conns);
    }
    if (atomic_load(&s->env.node->save_on_exit)) {
        char err[512];
        if (persist_save_now(s, err, sizeof(err)) != 0) {
            log_warn("[shard %u] SHUTDOWN SAVE: %s", s->env.id, err);
        }
    }
    persist_close(s);
    atomic_store(&s->done, true);
    return NULL;
}

/* The loop, its listeners armed: while the node loads, main serves it
 * (shard_serve_loading); the wake-ups and the timers are armed by shard_start. */
static int
loop_create(struct shard *s)
{
    struct event_config *ec = event_config_new();
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    s->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (s->base == NULL) {
        return RV_EIO;
    }
    for (int i = 0; i < s->nlisten; i++) {
        s->levs[i] = event_new(s->base, s->lfds[i], EV_READ | EV_PERSIST, on_accept, s);
        event_add(s->levs[i], NULL);
    }
    s->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->wakeev = event_new(s->base, s->wakefd, EV_READ | EV_PERSIST, on_wake, s);
    s->cronev = evtimer_new(s->base, on_cron, s);
    s->rehashev = evtimer_new(s->base, on_rehash, s);
    s->evictev = evtimer_new(s->base, on_evict, s);
    return RV_OK;
}

void
shard_serve_loading(struct shard *s)
{
    /* What the connections allocate here is the shard's, not main's (whose
     * thread count the shard being loaded is charged). */
    long long mem0 = rv_mem_thread_net();
    event_base_loop(s->base, EVLOOP_NONBLOCK);
    shard_before_poll(s);
    long long used = rv_mem_thread_net() - mem0;
    rv_mem_thread_adjust(-used);
    evict_add_carry(s->env.evict, used);
}

int
shard_start(struct shard *s, int cpu)
{
    s->cpu = cpu;
    persist_serve(s);
    /* (messages posted while loading wait in the inbox: the eventfd kept their wake-up) */
    event_add(s->wakeev, NULL);
    struct timeval tv = { 0, 1000000 / (int)s->env.cfg->node.hz };
    event_add(s->cronev, &tv);
    if (pthread_create(&s->thread, NULL, shard_main, s) != 0) {
        return RV_EIO;
    }
    return RV_OK;
}

bool
shard_join(struct shard *s, int64_t timeout_ms)
{
    int64_t deadline = clock_unix_ms() + timeout_ms;
    while (!atomic_load(&s->done)) {
        if (clock_unix_ms() >= deadline) {
            return false;
        }
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    pthread_join(s->thread, NULL);
    return true;
}

void
shard_destroy(struct shard *s)
{
    if (s == NULL) {
        return;
    }
    /* Jobs it gave the lazy-free thread count in s->env.lazy (an offline
     * shard of a redistribution may have replayed an UNLINK). */
    if (s->env.node != NULL) {
        lazyfree_wait_idle(s->env.node->lazyfree);
    }
    for (int i = 0; i < s->nlisten; i++) {
        if (s->levs[i]) {
            event_free(s->levs[i]);
        }
        if (s->lfds[i] >= 0) {
            close(s->lfds[i]);
        }
    }
    if (s->wakeev) {
        event_free(s->wakeev);
    }
    slotmig_shard_destroy(s);
    migrate_async_shard_destroy(s);
    mstage_shard_destroy(s);
    if (s->cronev) {
        event_free(s->cronev);
    }
    if (s->rehashev) {
        event_free(s->rehashev);
    }
    if (s->evictev) {
        event_free(s->evictev);
    }
    if (s->wakefd >= 0) {
        close(s->wakefd);
    }
    if (s->base) {
        event_base_free(s->base);
    }
    shard_drain_inbox(s);
    script_shard_free(s);
    pubsub_shard_destroy(s);
    block_shard_destroy(s);
    monitor_shard_destroy(s);
    tracking_shard_destroy(s);
    pause_shard_destroy(s);
    persist_close(s);
    hash_ttl_free_all(s);
    topo_put(s->env.topo);
    shard_dbs_free(&s->env);
    evict_destroy(s->env.evict);
    dict_destroy(s->env.watched, NULL);
    acl_shard_release(s->env.acl);
    rv_free(s->env.cmdstats);
    metrics_destroy(s->env.metrics);
    rv_free(s);
}
