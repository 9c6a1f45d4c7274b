/* node/base/mem.c: thin wrappers over jemalloc. */
#include "node/base/mem.h"

#ifdef RV_NO_JEMALLOC
#include <malloc.h>
#else
#include <jemalloc/jemalloc.h>
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
mem_oom(size_t n)
{
    fprintf(stderr, "ruvio: out of memory allocating %zu bytes\n", n);
    abort();
}

void *
rv_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (rv_unlikely(p == NULL)) {
        mem_oom(n);
    }
    return p;
}

void *
rv_calloc(size_t nmemb, size_t n)
{
    void *p = calloc(nmemb ? nmemb : 1, n ? n : 1);
    if (rv_unlikely(p == NULL)) {
        mem_oom(nmemb * n);
    }
    return p;
}

void *
rv_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (rv_unlikely(q == NULL)) {
        mem_oom(n);
    }
    return q;
}

void
rv_free(void *p)
{
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
    (void)osz; (void)n; (void)nsz;
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
    return "jemalloc";
}
