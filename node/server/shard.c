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
#include "node/commands/script.h"
#include "node/keyspace/dict.h"
#include "node/features/evict.h"
#include "node/features/topology.h"
#include "node/keyspace/ks.h"
#include "node/obs/metrics.h"
#include "node/commands/t_hash.h"
#define LOG_MODULE "shard"
#include "base/log.h"
#include "node/core/node.h"
#include "node/persist/persist.h"
#include "node/server/repl_host.h"
#include "replication/repl.h"
#include "node/features/pubsub.h"

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

static struct shard *shard_create_impl(struct node *n, unsigned id, const char *dir, char *err,
                                       size_t errsz);

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

/* The shard's state (node/core) calls up into persistence, eviction and
 * metrics through these. */
static const struct shard_hooks server_hooks = {
    .output = persist_note_output,
    .cfg_adopted = evict_adopt_cfg,
    .topo_adopted = topology_reconcile,
    .stats_reset = metrics_reset,
};

static void shard_busy_poll(struct shard *s, struct conn *running);

static struct shard *
shard_create_impl(struct node *n, unsigned id, const char *dir, char *err, size_t errsz)
{
    shard_set_hooks(&server_hooks);
    cmd_set_caller(dispatch_call);
    conn_set_io(&conn_io_ops);
    script_set_poll(shard_busy_poll);
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
        s->env.ks = ks_create(rand_u64(), rand_u64());
        s->env.now_ms = clock_unix_ms();
        if (persist_open_dir(s, dir, true, err, errsz) != 0) {
            goto fail;
        }
        evict_add_carry(s->env.evict, rv_mem_thread_net() - mem0);
        evict_adopt_cfg(s);
        return s;
    }
    char binds[1024];
    snprintf(binds, sizeof(binds), "%s", s->env.cfg->net.bind);
    int port = (int)s->env.cfg->net.port + (int)id;
    char *save = NULL;
    for (char *a = strtok_r(binds, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
        if (s->nlisten == SHARD_MAX_LISTEN) {
            snprintf(err, errsz, "shard %u: too many bind addresses ('bind')", id);
            goto fail;
        }
        if (listen_one(s, a, port, err, errsz) != 0) {
            goto fail;
        }
    }
    if (s->nlisten == 0) {
        snprintf(err, errsz, "shard %u: no bind address ('bind')", id);
        goto fail;
    }
    s->env.ks = ks_create(rand_u64(), rand_u64());
    s->env.now_ms = clock_unix_ms();
    repl_host_install(); /* before persistence attaches replication */
    if (persist_open(s, err, errsz) != 0) {
        goto fail;
    }
    evict_add_carry(s->env.evict, rv_mem_thread_net() - mem0);
    evict_adopt_cfg(s);
    return s;
fail:
    shard_destroy(s);
    return NULL;
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct shard *s = arg;
    (void)what;
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
        if (c) {
            log_info("Accepted %s", c->addr);
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
    ks_active_expire(s->env.ks, now, budget);
    if (!repl_is_replica(persist_repl(s))) { /* replicas wait for the primary's records */
        hash_active_expire(s, now, budget / 4);
        /* and, as Redis's replica-ignore-maxmemory yes, evict nothing themselves */
        if (evict_cron(s) && !evtimer_pending(s->evictev, NULL)) {
            struct timeval one_ms = { 0, 1000 };
            evtimer_add(s->evictev, &one_ms);
        }
    }
    if (ks_rehash_step(s->env.ks, 1000) && !evtimer_pending(s->rehashev, NULL)) {
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
 * memory) while no client ever waits more than 1 ms for it. */
static void
on_rehash(evutil_socket_t fd, short what, void *arg)
{
    struct shard *s = arg;
    (void)fd;
    (void)what;
    if (ks_rehash_step(s->env.ks, 1000)) {
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
    if (evict_cron(s)) {
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

int
shard_start(struct shard *s, int cpu)
{
    struct event_config *ec = event_config_new();
    event_config_set_flag(ec, EVENT_BASE_FLAG_NOLOCK);
    s->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (s->base == NULL) {
        return RV_EIO;
    }
    s->cpu = cpu;
    for (int i = 0; i < s->nlisten; i++) {
        s->levs[i] = event_new(s->base, s->lfds[i], EV_READ | EV_PERSIST, on_accept, s);
        event_add(s->levs[i], NULL);
    }
    s->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->wakeev = event_new(s->base, s->wakefd, EV_READ | EV_PERSIST, on_wake, s);
    event_add(s->wakeev, NULL);
    s->cronev = evtimer_new(s->base, on_cron, s);
    s->rehashev = evtimer_new(s->base, on_rehash, s);
    s->evictev = evtimer_new(s->base, on_evict, s);
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
    persist_close(s);
    hash_ttl_index_destroy(s->env.hash_ttl);
    topo_put(s->env.topo);
    ks_destroy(s->env.ks);
    evict_destroy(s->env.evict);
    dict_destroy(s->env.watched, NULL);
    acl_shard_release(s->env.acl);
    rv_free(s->env.cmdstats);
    metrics_destroy(s->env.metrics);
    rv_free(s);
}
