/* node/features/hook.c: the on_role_change runner (see hook.h). A shard only takes a
 * mutex for a queue push; spawning, waiting and killing happen on the
 * runner thread, so a slow or hung script never delays a request. */
#include "node/features/hook.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/config.h"
#include "node/core/node.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HOOK_MAX_QUEUED 64

struct hook_job {
    struct hook_job *next;
    char *path;
    int64_t timeout_s;
    char old_role[32], new_role[32], epoch[24], host[256], port[12];
};

static struct node *hook_node;
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cond = PTHREAD_COND_INITIALIZER;
static struct hook_job *hook_head, *hook_tail;
static unsigned hook_queued; /* queued + running */
static bool hook_thread_up;

void
hook_setup(struct node *n)
{
    hook_node = n;
}

unsigned
hook_pending(void)
{
    pthread_mutex_lock(&hook_lock);
    unsigned n = hook_queued;
    pthread_mutex_unlock(&hook_lock);
    return n;
}

/* Run one job to completion or to its deadline. */
static void
hook_run(struct hook_job *j)
{
    char *argv[] = { j->path, j->old_role, j->new_role, j->epoch, j->host, j->port, NULL };
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none, dfl;
    pid_t pid;

    /* The node blocks SIGTERM/SIGINT in every thread and ignores SIGPIPE; the
     * script must start with neither, or it could not be stopped normally. */
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGINT);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* Nothing of the node's (sockets, WAL files) may outlive it in a hook's children. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);

    int64_t t0 = (int64_t)clock_mono_us();
    int rc = posix_spawn(&pid, j->path, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        log_warn("on_role_change: cannot run '%s': %s", j->path, strerror(rc));
        return;
    }
    log_notice("on_role_change: running '%s %s %s %s %s %s' (pid %d)", j->path, j->old_role,
               j->new_role, j->epoch, j->host, j->port, (int)pid);
    int64_t deadline = t0 + j->timeout_s * 1000000;
    int status = 0;
    bool killed = false;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) {
            break;
        }
        if (!killed && (int64_t)clock_mono_us() >= deadline) {
            /* The whole process group: a shell script's children go too. */
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            killed = true;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    int64_t ms = ((int64_t)clock_mono_us() - t0) / 1000;
    if (killed) {
        log_warn("on_role_change: '%s' killed after the %" PRId64 " s limit", j->path,
                 j->timeout_s);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        log_notice("on_role_change: '%s' exited with status 0 after %" PRId64 " ms", j->path, ms);
    } else if (WIFEXITED(status)) {
        log_warn("on_role_change: '%s' exited with status %d after %" PRId64 " ms", j->path,
                 WEXITSTATUS(status), ms);
    } else if (WIFSIGNALED(status)) {
        log_warn("on_role_change: '%s' terminated by signal %d after %" PRId64 " ms", j->path,
                 WTERMSIG(status), ms);
    }
}

static void *
hook_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "ruvio-hooks");
    for (;;) {
        pthread_mutex_lock(&hook_lock);
        while (hook_head == NULL) {
            pthread_cond_wait(&hook_cond, &hook_lock);
        }
        struct hook_job *j = hook_head;
        hook_head = j->next;
        if (hook_head == NULL) {
            hook_tail = NULL;
        }
        pthread_mutex_unlock(&hook_lock);

        hook_run(j);
        rv_free(j->path);
        rv_free(j);
        pthread_mutex_lock(&hook_lock);
        hook_queued--;
        pthread_mutex_unlock(&hook_lock);
    }
    return NULL;
}

void
hook_role_change(const char *old_role, const char *new_role, uint64_t epoch, const char *host,
                 int port)
{
    if (hook_node == NULL) {
        return;
    }
    const struct cfg *cfg = atomic_load(&hook_node->cfg);
    if (cfg->node.on_role_change == NULL || cfg->node.on_role_change[0] == '\0') {
        return;
    }
    struct hook_job *j = rv_calloc(1, sizeof(*j));
    j->path = rv_strndup(cfg->node.on_role_change, strlen(cfg->node.on_role_change));
    j->timeout_s = cfg->node.on_role_change_timeout;
    snprintf(j->old_role, sizeof(j->old_role), "%s", old_role);
    snprintf(j->new_role, sizeof(j->new_role), "%s", new_role);
    snprintf(j->epoch, sizeof(j->epoch), "%" PRIu64, epoch);
    snprintf(j->host, sizeof(j->host), "%s", host ? host : "");
    snprintf(j->port, sizeof(j->port), "%d", port);

    pthread_mutex_lock(&hook_lock);
    if (hook_queued >= HOOK_MAX_QUEUED) {
        pthread_mutex_unlock(&hook_lock);
        log_warn("on_role_change: %d runs already waiting; dropped %s -> %s (epoch %s)",
                 HOOK_MAX_QUEUED, j->old_role, j->new_role, j->epoch);
        rv_free(j->path);
        rv_free(j);
        return;
    }
    if (!hook_thread_up) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, hook_main, NULL) != 0) {
            pthread_attr_destroy(&a);
            pthread_mutex_unlock(&hook_lock);
            log_warn("on_role_change: cannot start the hook thread");
            rv_free(j->path);
            rv_free(j);
            return;
        }
        pthread_attr_destroy(&a);
        hook_thread_up = true;
    }
    if (hook_tail) {
        hook_tail->next = j;
    } else {
        hook_head = j;
    }
    hook_tail = j;
    hook_queued++;
    pthread_cond_signal(&hook_cond);
    pthread_mutex_unlock(&hook_lock);
}
