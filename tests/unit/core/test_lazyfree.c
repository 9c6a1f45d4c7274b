/* The lazy-free thread (lazyfree.h): it frees what it is given, in order,
 * counts objects and bytes for the giver, refuses when its queue is full and
 * finishes every job before lazyfree_destroy returns. */
#include "node/core/lazyfree.h"

#include "base/mem.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_int freed_calls;

static void
free_blob(void *p)
{
    atomic_fetch_add(&freed_calls, 1);
    rv_free(p);
}

Test(lazyfree, frees_on_its_thread_and_counts, .timeout = 30)
{
    struct lazyfree_acct a = { 0 };
    struct lazyfree *lf = lazyfree_create(16);
    cr_assert_not_null(lf);
    atomic_store(&freed_calls, 0);
    long long m0 = rv_mem_thread_net();
    void *p = rv_malloc(1 << 20);
    long long given = rv_mem_thread_net() - m0;
    cr_assert(given >= 1 << 20);
    cr_assert(lazyfree_put(lf, &a, free_blob, p, 3, given));
    cr_assert(lazyfree_acct_pending_bytes(&a) <= given);
    lazyfree_wait_idle(lf);
    cr_assert_eq(atomic_load(&freed_calls), 1);
    cr_assert_eq(lazyfree_acct_pending(&a), 0);
    cr_assert_eq(lazyfree_acct_freed(&a), 3);
    cr_assert_eq(lazyfree_acct_pending_bytes(&a), 0);
    /* this thread still counts the block; the free thread gave it back */
    cr_assert_eq(rv_mem_thread_net() - m0, given);
    cr_assert_eq(lazyfree_acct_take_bytes(&a), given);
    cr_assert_eq(lazyfree_acct_take_bytes(&a), 0);
    lazyfree_destroy(lf);
}

/* A job that holds the thread until the test lets it go. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_entered;

static void
gate(void *p)
{
    (void)p;
    pthread_mutex_lock(&gate_lock);
    gate_entered = true;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open) {
        pthread_cond_wait(&gate_cond, &gate_lock);
    }
    pthread_mutex_unlock(&gate_lock);
}

Test(lazyfree, a_full_queue_refuses_and_destroy_finishes_every_job, .timeout = 30)
{
    struct lazyfree_acct a = { 0 };
    struct lazyfree *lf = lazyfree_create(4);
    atomic_store(&freed_calls, 0);
    cr_assert(lazyfree_put(lf, &a, gate, NULL, 1, 7));
    pthread_mutex_lock(&gate_lock);
    while (!gate_entered) { /* the thread holds the gate job: the ring is empty */
        pthread_cond_wait(&gate_cond, &gate_lock);
    }
    pthread_mutex_unlock(&gate_lock);
    for (int i = 0; i < 4; i++) {
        cr_assert(lazyfree_put(lf, &a, free_blob, rv_malloc(100), 1, 100));
    }
    void *extra = rv_malloc(100);
    cr_assert_not(lazyfree_put(lf, &a, free_blob, extra, 1, 100), "a full queue refuses");
    rv_free(extra);
    cr_assert_eq(lazyfree_acct_pending(&a), 5);
    /* the estimates of the jobs not done (the refused one not among them) */
    cr_assert_eq(lazyfree_acct_pending_bytes(&a), 7 + 4 * 100);
    pthread_mutex_lock(&gate_lock);
    gate_open = true;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    lazyfree_destroy(lf);
    cr_assert_eq(atomic_load(&freed_calls), 4);
    cr_assert_eq(lazyfree_acct_pending(&a), 0);
    cr_assert_eq(lazyfree_acct_freed(&a), 5);
    cr_assert_eq(lazyfree_acct_pending_bytes(&a), 0);
}

Test(lazyfree, null_refuses_and_is_a_no_op)
{
    struct lazyfree_acct a = { 0 };
    cr_assert_not(lazyfree_put(NULL, &a, free_blob, NULL, 1, 10));
    cr_assert_eq(lazyfree_acct_pending_bytes(&a), 0);
    lazyfree_wait_idle(NULL);
    lazyfree_destroy(NULL);
    cr_assert_eq(lazyfree_acct_pending(&a), 0);
}
