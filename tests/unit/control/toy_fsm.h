/* tests/unit/control/toy_fsm.h: the state machine the control tests replicate.
 * An append-only list of 64-bit values. An entry is 8 bytes (little endian);
 * anything else is answered code 1, and a value with the top bit set is refused
 * with code 2 and a message, both without changing the state (outcomes the log
 * carries to the proposer, as a refused topology command will). The list is
 * guarded by a mutex because the threaded test reads it from the test thread
 * while the control thread applies. */
#pragma once
#include "base/mem.h"
#include "base/rv_err.h"
#include "control/ctl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TOY_REFUSE (1ull << 63)

struct toy {
    pthread_mutex_t mu;
    uint64_t *v;
    size_t n, cap;
    unsigned restores;
    unsigned applied_hook; /* on_applied calls */
};

static inline void
toy_init(struct toy *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
}

static inline void
toy_deinit(struct toy *t)
{
    rv_free(t->v);
    pthread_mutex_destroy(&t->mu);
}

static inline void
toy_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static inline uint64_t
toy_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static int
toy_apply(void *arg, const void *entry, size_t len, char *msg, size_t msgsz)
{
    struct toy *t = arg;
    if (len != 8) {
        snprintf(msg, msgsz, "malformed entry of %zu bytes", len);
        return 1;
    }
    uint64_t v = toy_get_u64(entry);
    if (v & TOY_REFUSE) {
        snprintf(msg, msgsz, "refused %llu", (unsigned long long)(v & ~TOY_REFUSE));
        return 2;
    }
    pthread_mutex_lock(&t->mu);
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->v = rv_realloc(t->v, t->cap * sizeof(*t->v));
    }
    t->v[t->n++] = v;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static int
toy_snapshot(void *arg, void **out, size_t *len)
{
    struct toy *t = arg;
    pthread_mutex_lock(&t->mu);
    size_t n = 8 + 8 * t->n;
    unsigned char *p = rv_malloc(n);
    toy_put_u64(p, t->n);
    for (size_t i = 0; i < t->n; i++) {
        toy_put_u64(p + 8 + 8 * i, t->v[i]);
    }
    pthread_mutex_unlock(&t->mu);
    *out = p;
    *len = n;
    return RV_OK;
}

static int
toy_restore(void *arg, const void *data, size_t len)
{
    struct toy *t = arg;
    const unsigned char *p = data;
    if (len < 8) {
        return RV_ECORRUPT;
    }
    uint64_t n = toy_get_u64(p);
    if (n > (len - 8) / 8 || len != 8 + 8 * n) {
        return RV_ECORRUPT;
    }
    uint64_t *v = rv_malloc((n ? n : 1) * sizeof(*v));
    for (uint64_t i = 0; i < n; i++) {
        v[i] = toy_get_u64(p + 8 + 8 * i);
    }
    pthread_mutex_lock(&t->mu);
    rv_free(t->v);
    t->v = v;
    t->n = t->cap = n;
    if (t->cap == 0) {
        t->cap = 1;
    }
    t->restores++;
    pthread_mutex_unlock(&t->mu);
    return RV_OK;
}

static void
toy_on_applied(void *arg)
{
    struct toy *t = arg;
    __atomic_add_fetch(&t->applied_hook, 1, __ATOMIC_RELAXED);
}

static inline struct ctl_fsm
toy_fsm(struct toy *t)
{
    struct ctl_fsm f = {
        .arg = t, .apply = toy_apply, .snapshot = toy_snapshot, .restore = toy_restore
    };
    return f;
}

/* A copy of the list (rv_malloc'd) and its length. */
static inline uint64_t *
toy_copy(struct toy *t, size_t *n)
{
    pthread_mutex_lock(&t->mu);
    uint64_t *v = rv_malloc((t->n ? t->n : 1) * sizeof(*v));
    if (t->n) {
        memcpy(v, t->v, t->n * sizeof(*v));
    }
    *n = t->n;
    pthread_mutex_unlock(&t->mu);
    return v;
}

static inline bool
toy_equal(struct toy *a, struct toy *b)
{
    size_t na, nb;
    uint64_t *va = toy_copy(a, &na), *vb = toy_copy(b, &nb);
    bool eq = na == nb && (na == 0 || memcmp(va, vb, na * sizeof(*va)) == 0);
    rv_free(va);
    rv_free(vb);
    return eq;
}

static inline bool
toy_has(struct toy *t, uint64_t v)
{
    bool found = false;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n && !found; i++) {
        found = t->v[i] == v;
    }
    pthread_mutex_unlock(&t->mu);
    return found;
}

static inline size_t
toy_len(struct toy *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}
