/* base/mem.h: every heap allocation goes through these (jemalloc underneath).
 * rv_malloc/rv_realloc never return NULL: out of memory is fatal (logged, abort),
 * since the memory budget is enforced above this layer. */
#pragma once
#include <stddef.h>

void *rv_malloc(size_t n);
void *rv_calloc(size_t nmemb, size_t n);
void *rv_realloc(void *p, size_t n);
void rv_free(void *p);
char *rv_strndup(const char *s, size_t n);
/* Zeroed memory for large, long-lived arrays (hash tables). From 1 MiB up it
 * is mapped directly, so rv_free_big() gives it back to the OS at once instead
 * of leaving the old table of a finished resize resident as allocator cache.
 * n must be the same in both calls. */
void *rv_calloc_big(size_t n);
void rv_free_big(void *p, size_t n);
/* Bytes actually reserved by the allocator for p (its size class). */
size_t rv_usable_size(const void *p);
/* Allocator statistics (jemalloc "stats.*"); 0 when unavailable. */
size_t rv_mem_allocated(void);
size_t rv_mem_resident(void);
size_t rv_mem_active(void);
const char *rv_mem_allocator(void);

/* Charging. Bytes allocated minus bytes freed by the calling thread (jemalloc's
 * per-thread counters of usable sizes: free on the hot path, jemalloc keeps them
 * anyway), plus rv_calloc_big mappings, plus rv_mem_thread_adjust() deltas for
 * memory handed to or taken from another thread. A shard reads its own. */
long long rv_mem_thread_net(void);
void rv_mem_thread_adjust(long long delta);
/* Resident set size of the process (/proc/self/statm). */
size_t rv_mem_rss(void);
/* Return all arenas' unused dirty pages to the OS now (MEMORY PURGE); 0 or -1. */
int rv_mem_purge(void);
/* Return the calling thread's cached and dirty pages (its tcache and arena)
 * to the OS now: after a mass deletion such as FLUSHALL. */
void rv_mem_purge_thread(void);
/* The allocator's statistics report (MEMORY MALLOC-STATS), in pieces. */
void rv_mem_stats_print(void (*fn)(void *arg, const char *text), void *arg);

#if defined(__GNUC__)
#define rv_likely(x) __builtin_expect(!!(x), 1)
#define rv_unlikely(x) __builtin_expect(!!(x), 0)
#else
#define rv_likely(x) (x)
#define rv_unlikely(x) (x)
#endif
