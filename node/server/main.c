/* node/server/main.c: parse the configuration, start the shards, wait for a signal,
 * stop within a bounded time. All logic lives in the libraries. */
#include "base/clock.h"
#include "base/fs.h"
#include "base/rand.h"
#define LOG_MODULE "main"
#include "base/log.h"
#include "node/features/acl.h"
#include "node/core/cmd.h"
#include "node/commands/cmds.h"
#include "node/core/config.h"
#include "node/core/lazyfree.h"
#include "node/keyspace/dict.h"
#include "node/features/hook.h"
#include "node/features/topology.h"
#include "node/obs/metrics.h"
#include "node/core/node.h"
#include "node/server/notify.h"
#include "node/persist/loading.h"
#include "node/persist/persist.h"
#include "node/persist/rdbload.h"
#include "node/persist/reshard.h"
#include "node/core/shard.h"
#include "node/server/shard_thread.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct reshard_source reshard_src = {
    .open = shard_create_offline,
    .close = shard_destroy,
};

/* Logging, the data directory and the process's signals, from the loaded
 * configuration; 0, or 1 after printing why not. */
static int
setup_process(const struct cfg *cfg, sigset_t *set, char *err, size_t errsz)
{
    /* Before any thread starts (the log writer is the first): every thread
     * inherits the mask, so SIGTERM/SIGINT reach only main's sigwait. A thread
     * started before the mask could take them and die of them. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    if (log_setup((int)cfg->obs.loglevel, cfg->obs.logfile, cfg->obs.log_queue_lines) != 0) {
        fprintf(stderr, "ruvio: config error: 'logfile': cannot open '%s': %s\n", cfg->obs.logfile,
                strerror(errno));
        return 1;
    }
    /* $RUVIO_LOG wins over `loglevel` at start-up (CONFIG SET loglevel changes the default later). */
    if (log_set_spec(getenv("RUVIO_LOG"), err, errsz) != 0) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    if (fs_mkdir_p(cfg->persist.dir) != 0) {
        fprintf(stderr, "ruvio: config error: 'dir': cannot create '%s': %s\n", cfg->persist.dir,
                strerror(errno));
        return 1;
    }
    return 0;
}

/* The command table (with rename-command), ACL users and the node's identity;
 * 0, or 1 after printing why not. */
static int
setup_node(struct node *node, struct cfg *cfg, const char *argv0, char *err, size_t errsz)
{
    notify_setup(cfg);
    cmds_init();
    for (const char *r = cfg->node.rename_commands; r && *r;) {
        char from[256], to[256] = "";
        const char *nl = strchr(r, '\n');
        if (sscanf(r, "%255s %255[^\n]", from, to) < 1 ||
            cmd_rename_command(from, to, err, errsz) != 0) {
            fprintf(stderr, "ruvio: config error: %s\n", err);
            return 1;
        }
        r = nl ? nl + 1 : r + strlen(r);
    }
    if (acl_init(cfg->acl.requirepass, cfg->acl.acl_users, cfg->acl.aclfile, err, errsz) != 0) {
        fprintf(stderr, "ruvio: config error: '%s': %s\n", cfg->acl.aclfile[0] ? "aclfile" : "user",
                err);
        return 1;
    }
    dict_seed(rand_u64(), rand_u64());
    node->nshards = (unsigned)cfg->node.shards;
    node->shards = calloc(node->nshards, sizeof(*node->shards));
    node->ids = calloc(node->nshards, sizeof(*node->ids));
    node->start_ms = clock_unix_ms();
    rand_hex(node->run_id, 40);
    snprintf(node->config_file, sizeof(node->config_file), "%s", cfg_file());
    if (realpath(argv0, node->executable) == NULL) {
        snprintf(node->executable, sizeof(node->executable), "%s", argv0);
    }
    for (unsigned i = 0; i < node->nshards; i++) {
        rand_hex(node->ids[i], 40);
    }
    node_publish_cfg(node, cfg);
    hook_setup(node);
    return 0;
}

/* SIGTERM/SIGINT are blocked in every thread and wait for main's sigwait;
 * while loading, main looks for them between shards. */
static bool
stop_requested(void)
{
    sigset_t pending;
    sigpending(&pending);
    if (!sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGINT)) {
        return false;
    }
    log_notice("Received %s while loading: exiting",
               sigismember(&pending, SIGTERM) ? "SIGTERM" : "SIGINT");
    return true;
}

/* Between the records loaded (loading.h): every shard serves its clients
 * (-LOADING for most commands); SIGTERM/SIGINT (SHUTDOWN too) end the load
 * as a kill would (main's loaded == 2). */
static void
serve_while_loading(struct node *node)
{
    if (stop_requested()) {
        log_shutdown();
        _exit(0);
    }
    for (unsigned i = 0; i < node->nshards; i++) {
        if (node->shards[i] != NULL) {
            shard_serve_loading(node->shards[i]);
        }
    }
}

/* A start that failed: the shards made so far go (what they loaded too), so
 * that the sanitizer's leak check at exit reports only real leaks. */
static int
drop_shards(struct node *node)
{
    lazyfree_destroy(node->lazyfree); /* (its jobs count in the shards' state) */
    node->lazyfree = NULL;
    for (unsigned i = 0; i < node->nshards; i++) {
        shard_destroy(node->shards[i]);
        node->shards[i] = NULL;
    }
    return 1;
}

/* Create every shard (listening), then recover their data while serving,
 * redistributing a data directory written with another shard count first;
 * 0, 1 after printing why not, or 2 when SIGTERM/SIGINT came while loading.
 * rdb_bytes: what an RDB import will read after it (the progress total). */
static int
load_shards(struct node *node, const struct cfg *cfg, uint64_t rdb_bytes, char *err, size_t errsz)
{
    unsigned old_n = 0;
    int resh = reshard_prepare(cfg->persist.dir, node->nshards, &old_n, err, errsz);
    if (resh < 0) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    if (resh == 1) {
        notify_send("STATUS=Redistributing the data directory of %u shard(s)", old_n);
    }
    uint64_t total = rdb_bytes;
    for (unsigned i = 0; i < node->nshards; i++) {
        node->shards[i] = shard_create(node, i, err, errsz);
        if (node->shards[i] == NULL) {
            fprintf(stderr, "ruvio: %s\n", err);
            return drop_shards(node);
        }
        total += loading_dir_bytes(persist_dir(node->shards[i]));
    }
    loading_begin(node, total, serve_while_loading);
    for (unsigned i = 0; i < node->nshards; i++) {
        notify_send("STATUS=Loading shard %u/%u", i + 1, node->nshards);
        if (shard_load(node->shards[i], err, errsz) != 0) {
            fprintf(stderr, "ruvio: %s\n", err);
            return drop_shards(node);
        }
        if (stop_requested()) {
            return 2;
        }
    }
    if (resh == 1 && reshard_run(node, cfg->persist.dir, old_n, &reshard_src, err, errsz) != 0) {
        fprintf(stderr, "ruvio: redistributing the data directory: %s\n", err);
        return drop_shards(node);
    }
    if (reshard_write_layout(cfg->persist.dir, node->nshards) != 0) {
        log_warn("cannot write %s/layout: %s", cfg->persist.dir, strerror(errno));
    }
    return 0;
}

/* SIGTERM/SIGINT: every shard finishes the replies in flight and stops. */
static int
stop_node(struct node *node)
{
    notify_send("STOPPING=1\nSTATUS=Shutting down");
    atomic_store(&node->shutdown, true);
    for (unsigned i = 0; i < node->nshards; i++) {
        shard_wake(node->shards[i]);
    }
    int64_t grace = atomic_load(&node->cfg)->node.shutdown_timeout * 1000 + 1000;
    for (unsigned i = 0; i < node->nshards; i++) {
        if (!shard_join(node->shards[i], grace)) {
            log_warn("shard %u did not stop in time; exiting anyway", i);
            log_shutdown();
            _exit(0);
        }
    }
    metrics_http_stop();
    topology_stop();                  /* (before the shards go: its answers are posted to them) */
    lazyfree_destroy(node->lazyfree); /* (its jobs count in the shards' state) */
    node->lazyfree = NULL;
    for (unsigned i = 0; i < node->nshards; i++) {
        shard_destroy(node->shards[i]);
    }
    cfg_destroy(atomic_load(&node->cfg));
    acl_shutdown();
    free(node->shards);
    free(node->ids);
    log_notice("Ruvio is now ready to exit, bye bye...");
    log_shutdown();
    return 0;
}

int
main(int argc, char **argv)
{
    char err[8192];
    static struct node node;

    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-v") == 0)) {
        printf("Ruvio v=%s\n", RUVIO_VERSION);
        return 0;
    }
    /* Static: the start-up error paths below just return, and what the
     * configuration holds stays reachable (no leak report at exit). */
    static struct cfg *cfg;
    cfg = cfg_load(argc, argv, err, sizeof(err));
    if (cfg == NULL) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    sigset_t set;
    if (setup_process(cfg, &set, err, sizeof(err)) != 0) {
        return 1;
    }
    if (node_tls_apply(cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio: TLS: %s\n", err);
        return 1;
    }
    int cpus[1024];
    int ncpus = cfg->node.shard_cpus[0] ? cfg_cpu_list(cfg->node.shard_cpus, cpus, 1024) : 0;
    if (setup_node(&node, cfg, argv[0], err, sizeof(err)) != 0) {
        return 1;
    }
    if (cfg->cluster.enabled && topology_start(&node, cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio: cluster: %s\n", err);
        return 1;
    }
    struct rdbload *rdb; /* (checked before the shards create their files) */
    if (rdbload_prepare(cfg, &rdb, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    node.lazyfree = lazyfree_create(LAZYFREE_QUEUE);
    int loaded = load_shards(&node, cfg, rdbload_bytes(rdb), err, sizeof(err));
    if (loaded == 0 && rdb != NULL && rdbload_run(&node, rdb, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    if (loaded == 2) {
        /* As a kill would: no clean-stop marker (the next start counts this one as
         * unclean), nothing unsaved (loading wrote nothing new), no exit handlers
         * racing the shards' WAL threads. */
        log_shutdown();
        _exit(0);
    }
    if (loaded != 0) {
        return 1;
    }
    loading_end(&node);
    metrics_apply_cfg(cfg);
    if (cfg->obs.metrics_address[0] &&
        metrics_http_start(&node, cfg->obs.metrics_address, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio: %s\n", err);
        return 1;
    }
    for (unsigned i = 0; i < node.nshards; i++) {
        int cpu = ncpus > 0 ? cpus[i % (unsigned)ncpus] : -1;
        if (shard_start(node.shards[i], cpu) != 0) {
            fprintf(stderr, "ruvio: shard %u: cannot start its thread\n", i);
            return 1;
        }
    }
    log_notice("Ruvio %s started: %u shard(s), ports %lld-%lld, pid %d", RUVIO_VERSION,
               node.nshards, (long long)cfg->net.port,
               (long long)(cfg->net.port + node.nshards - 1), (int)getpid());
    log_notice("Ready to accept connections tcp");
    if (cfg->tls.port != 0) {
        log_notice("Ready to accept connections tls (ports %lld-%lld)", (long long)cfg->tls.port,
                   (long long)(cfg->tls.port + node.nshards - 1));
    }
    /* Recovery is over and every listener is bound and served by its thread. */
    notify_send("READY=1\nSTATUS=Ready to accept connections on ports %lld-%lld\nMAINPID=%d",
                (long long)cfg->net.port, (long long)(cfg->net.port + node.nshards - 1),
                (int)getpid());

    int sig = 0;
    while (sigwait(&set, &sig) != 0 || (sig != SIGTERM && sig != SIGINT)) {
    }
    log_notice("Received %s, shutting down (finishing replies in flight)",
               sig == SIGTERM ? "SIGTERM" : "SIGINT");
    return stop_node(&node);
}
