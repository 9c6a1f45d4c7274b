/* base/mem.c: thin wrappers over jemalloc. */
#include "base/mem.h"

#ifdef RV_NO_JEMALLOC
#include <malloc.h>
#else
#include <jemalloc/jemalloc.h>
#endif
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RV_NO_JEMALLOC
/* Freed pages go back to the OS about a second after they are freed (jemalloc's
 * default keeps them 10 s), from jemalloc's own background threads so an idle
 * process shrinks too; MALLOC_CONF still overrides. */
const char *malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
#endif

/* Per-thread charge: jemalloc's counters (cached pointers) and adjustments. */
#ifndef RV_NO_JEMALLOC
static _Thread_local uint64_t *t_allocp, *t_deallocp;
static _Thread_local bool t_init;
#endif
static _Thread_local long long t_adj;

static void
mem_oom(size_t n)
{
    fprintf(stderr, "ruvio: out of memory allocating %zu bytes\n", n);
    abort();
}

#ifdef RV_NO_JEMALLOC
/* No per-thread counters without jemalloc: the wrappers keep them. */
#define NJ_ADD(p) (t_adj += (long long)malloc_usable_size(p))
#define NJ_SUB(p) (t_adj -= (long long)malloc_usable_size(p))
#else
#define NJ_ADD(p) ((void)0)
#define NJ_SUB(p) ((void)0)
#endif

void *
rv_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (rv_unlikely(p == NULL)) {
        mem_oom(n);
    }
    NJ_ADD(p);
    return p;
}

void *
rv_calloc(size_t nmemb, size_t n)
{
    void *p = calloc(nmemb ? nmemb : 1, n ? n : 1);
    if (rv_unlikely(p == NULL)) {
        mem_oom(nmemb * n);
    }
    NJ_ADD(p);
    return p;
}

void *
rv_realloc(void *p, size_t n)
{
    if (p != NULL) {
        NJ_SUB(p);
    }
    void *q = realloc(p, n ? n : 1);
    if (rv_unlikely(q == NULL)) {
        mem_oom(n);
    }
    NJ_ADD(q);
    return q;
}

void
rv_free(void *p)
{
    if (p != NULL) {
        NJ_SUB(p);
    }
    free(p);
}

char *
rv_strndup(const char *s, size_t n)
{
    char *d = rv_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

#define RV_BIG_MIN (1u << 20)

/* Bytes mapped by rv_calloc_big, added to the allocator's figures. */
static atomic_size_t big_bytes;

void *
rv_calloc_big(size_t n)
{
    if (n < RV_BIG_MIN) {
        return rv_calloc(1, n);
    }
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        mem_oom(n);
    }
    atomic_fetch_add_explicit(&big_bytes, n, memory_order_relaxed);
    t_adj += (long long)n;
    return p;
}

void
rv_free_big(void *p, size_t n)
{
    if (p == NULL) {
        return;
    }
    if (n < RV_BIG_MIN) {
        rv_free(p);
    } else {
        munmap(p, n);
        atomic_fetch_sub_explicit(&big_bytes, n, memory_order_relaxed);
        t_adj -= (long long)n;
    }
}

size_t
rv_usable_size(const void *p)
{
    return p ? malloc_usable_size((void *)p) : 0;
}

#ifdef RV_NO_JEMALLOC
/* From the sanitizer runtime (declared here: gcc 12 ships no public header). */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t __sanitizer_get_heap_size(void);
/* Without jemalloc (sanitizer builds) the figures come from the sanitizer's
 * allocator, so INFO memory still reports real numbers. */
static int
mallctl(const char *name, void *o, size_t *osz, void *n, size_t nsz)
{
    (void)osz;
    (void)n;
    (void)nsz;
    if (o && strncmp(name, "stats.", 6) == 0) {
        size_t v = strcmp(name, "stats.allocated") == 0 ? __sanitizer_get_current_allocated_bytes()
                                                        : __sanitizer_get_heap_size();
        *(size_t *)o = v;
        return 0;
    }
    return -1;
}
#endif

static size_t
mem_stat(const char *name)
{
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    size_t v = 0, vsz = sizeof(v);
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    if (mallctl(name, &v, &vsz, NULL, 0) != 0) {
        return 0;
    }
    return v;
}

size_t
rv_mem_allocated(void)
{
    return mem_stat("stats.allocated") + atomic_load_explicit(&big_bytes, memory_order_relaxed);
}

size_t
rv_mem_resident(void)
{
    return mem_stat("stats.resident") + atomic_load_explicit(&big_bytes, memory_order_relaxed);
}

size_t
rv_mem_active(void)
{
    return mem_stat("stats.active") + atomic_load_explicit(&big_bytes, memory_order_relaxed);
}

const char *
rv_mem_allocator(void)
{
    const char *v = NULL;
    size_t sz = sizeof(v);
    static char buf[64];
    if (mallctl("version", &v, &sz, NULL, 0) == 0 && v) {
        snprintf(buf, sizeof(buf), "jemalloc-%.*s", (int)strcspn(v, "-"), v);
        return buf;
    }
#ifdef RV_NO_JEMALLOC
    return "libc"; /* sanitizer builds: the sanitizer's allocator */
#else
    return "jemalloc";
#endif
}

long long
rv_mem_thread_net(void)
{
#ifndef RV_NO_JEMALLOC
    if (rv_unlikely(!t_init)) {
        size_t sz = sizeof(t_allocp);
        t_init = true;
        if (mallctl("thread.allocatedp", &t_allocp, &sz, NULL, 0) != 0 ||
            mallctl("thread.deallocatedp", &t_deallocp, &sz, NULL, 0) != 0) {
            t_allocp = t_deallocp = NULL;
        }
    }
    if (t_allocp != NULL) {
        return (long long)(*t_allocp - *t_deallocp) + t_adj;
    }
#endif
    return t_adj;
}

void
rv_mem_thread_adjust(long long delta)
{
    t_adj += delta;
}

size_t
rv_mem_rss(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
            rss = 0;
        }
        fclose(f);
    }
    return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}

int
rv_mem_purge(void)
{
#ifndef RV_NO_JEMALLOC
    char name[64];
    snprintf(name, sizeof(name), "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
    return mallctl(name, NULL, NULL, NULL, 0) == 0 ? 0 : -1;
#else
    return 0;
#endif
}

void
rv_mem_purge_thread(void)
{
#ifndef RV_NO_JEMALLOC
    unsigned arena = 0;
    size_t sz = sizeof(arena);
    char name[64];
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    if (mallctl("thread.arena", &arena, &sz, NULL, 0) == 0) {
        snprintf(name, sizeof(name), "arena.%u.purge", arena);
        mallctl(name, NULL, NULL, NULL, 0);
    }
#endif
}

void
rv_mem_stats_print(void (*fn)(void *arg, const char *text), void *arg)
{
#ifndef RV_NO_JEMALLOC
    malloc_stats_print(fn, arg, NULL);
#else
    fn(arg, "Stats not supported for the current allocator\n");
#endif
}
