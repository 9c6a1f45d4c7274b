/* node/core/lazyfree.c: one thread and a bounded ring of jobs under a mutex.
 * A put is one lock and, when the thread sleeps, one signal: it is called per
 * big value freed, never per command. */
#include "node/core/lazyfree.h"

#include "base/log.h"
#include "base/mem.h"

#include <pthread.h>
#include <signal.h>

struct lazyfree_job {
    lazyfree_fn *fn;
    void *ptr;
    struct lazyfree_acct *acct;
    uint64_t objects;
    long long bytes; /* the giver's estimate */
};

struct lazyfree {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work; /* the thread waits for jobs or stop */
    pthread_cond_t idle; /* lazyfree_wait_idle waits for done == put */
    struct lazyfree_job *ring;
    size_t cap, head, n;
    uint64_t put, done; /* jobs accepted and finished */
    bool stop;
};

static void
job_run(const struct lazyfree_job *j)
{
    long long m0 = rv_mem_thread_net();
    j->fn(j->ptr);
    long long freed = m0 - rv_mem_thread_net();
    /* (the estimate leaves before the freed bytes arrive: lazyfree.h) */
    atomic_fetch_sub_explicit(&j->acct->pending_bytes, j->bytes, memory_order_seq_cst);
    atomic_fetch_add_explicit(&j->acct->bytes, freed, memory_order_seq_cst);
    atomic_fetch_add_explicit(&j->acct->freed, j->objects, memory_order_relaxed);
    atomic_fetch_sub_explicit(&j->acct->pending, j->objects, memory_order_relaxed);
}

static void *
lazyfree_main(void *arg)
{
    struct lazyfree *lf = arg;
    pthread_mutex_lock(&lf->lock);
    for (;;) {
        while (lf->n == 0 && !lf->stop) {
            pthread_cond_wait(&lf->work, &lf->lock);
        }
        if (lf->n == 0) {
            break; /* stop, and nothing left */
        }
        struct lazyfree_job j = lf->ring[lf->head];
        lf->head = (lf->head + 1) % lf->cap;
        lf->n--;
        pthread_mutex_unlock(&lf->lock);
        job_run(&j);
        pthread_mutex_lock(&lf->lock);
        lf->done++;
        pthread_cond_broadcast(&lf->idle);
    }
    pthread_mutex_unlock(&lf->lock);
    return NULL;
}

/* The queue's locks and memory (its thread stopped or never started). */
static void
lf_free(struct lazyfree *lf)
{
    pthread_cond_destroy(&lf->idle);
    pthread_cond_destroy(&lf->work);
    pthread_mutex_destroy(&lf->lock);
    rv_free(lf->ring);
    rv_free(lf);
}

struct lazyfree *
lazyfree_create(size_t cap)
{
    struct lazyfree *lf = rv_calloc(1, sizeof(*lf));
    lf->cap = cap ? cap : 1;
    lf->ring = rv_malloc(lf->cap * sizeof(*lf->ring));
    pthread_mutex_init(&lf->lock, NULL);
    pthread_cond_init(&lf->work, NULL);
    pthread_cond_init(&lf->idle, NULL);
    /* The thread takes no signal (main's sigwait handles SIGTERM/SIGINT). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&lf->thread, NULL, lazyfree_main, lf);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        log_warn("lazyfree: cannot start its thread (error %d): values are freed inline", rc);
        lf_free(lf);
        return NULL;
    }
    return lf;
}

void
lazyfree_destroy(struct lazyfree *lf)
{
    if (lf == NULL) {
        return;
    }
    pthread_mutex_lock(&lf->lock);
    lf->stop = true;
    pthread_cond_signal(&lf->work);
    pthread_mutex_unlock(&lf->lock);
    pthread_join(lf->thread, NULL);
    lf_free(lf);
}

bool
lazyfree_put(struct lazyfree *lf, struct lazyfree_acct *a, lazyfree_fn *fn, void *ptr,
             uint64_t objects, long long bytes)
{
    if (lf == NULL) {
        return false;
    }
    pthread_mutex_lock(&lf->lock);
    if (lf->n == lf->cap || lf->stop) {
        pthread_mutex_unlock(&lf->lock);
        return false;
    }
    atomic_fetch_add_explicit(&a->pending, objects, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->pending_bytes, bytes, memory_order_relaxed);
    lf->ring[(lf->head + lf->n) % lf->cap] = (struct lazyfree_job){ fn, ptr, a, objects, bytes };
    lf->n++;
    lf->put++;
    if (lf->n == 1) {
        pthread_cond_signal(&lf->work);
    }
    pthread_mutex_unlock(&lf->lock);
    return true;
}

void
lazyfree_wait_idle(struct lazyfree *lf)
{
    if (lf == NULL) {
        return;
    }
    pthread_mutex_lock(&lf->lock);
    uint64_t target = lf->put;
    while (lf->done < target) {
        pthread_cond_wait(&lf->idle, &lf->lock);
    }
    pthread_mutex_unlock(&lf->lock);
}

long long
lazyfree_acct_take_bytes(struct lazyfree_acct *a)
{
    if (atomic_load_explicit(&a->bytes, memory_order_relaxed) == 0) {
        return 0; /* (no write while the thread has nothing to report) */
    }
    return atomic_exchange_explicit(&a->bytes, 0, memory_order_seq_cst);
}

long long
lazyfree_acct_pending_bytes(const struct lazyfree_acct *a)
{
    return atomic_load_explicit(&a->pending_bytes, memory_order_seq_cst);
}

uint64_t
lazyfree_acct_pending(const struct lazyfree_acct *a)
{
    return atomic_load_explicit(&a->pending, memory_order_relaxed);
}

uint64_t
lazyfree_acct_freed(const struct lazyfree_acct *a)
{
    return atomic_load_explicit(&a->freed, memory_order_relaxed);
}
