/* node/persist/loading.c: start-up loading progress and pacing (loading.h). */
#include "node/persist/loading.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/mem.h"
#include "node/core/node.h"
#include "wal/wal.h"

#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>

/* Clients wait at most this long for the poll while records load (Redis
 * polls every 2 MB read, loading-process-events-interval-bytes). */
#define LOADING_POLL_US 2000

struct node_load {
    loading_poll_fn *poll;
    uint64_t last_poll_us;
    uint64_t ticks;
};

void
loading_begin(struct node *n, uint64_t total_bytes, loading_poll_fn *poll)
{
    struct node_load *l = rv_calloc(1, sizeof(*l));
    l->poll = poll;
    l->last_poll_us = clock_mono_us();
    n->load = l;
    atomic_store(&n->loading_total_bytes, total_bytes);
    atomic_store(&n->loading_loaded_bytes, 0);
    atomic_store(&n->loading_start_ms, clock_unix_ms());
    atomic_store(&n->loading, true);
}

static void
poll_now(struct node *n, struct node_load *l)
{
    l->last_poll_us = clock_mono_us();
    l->poll(n);
}

/* key-load-delay: Redis's debugDelay per key loaded. A positive delay is
 * slept in slices with the poll between them, and ends early once CONFIG
 * SET changed it (a test sets it to 0 to let the load finish). */
static void
load_delay(struct node *n, struct node_load *l, int64_t us)
{
    if (us < 0) {
        if (l->ticks % (uint64_t)-us == 0) {
            struct timespec ts = { 0, 1000 };
            nanosleep(&ts, NULL);
        }
        return;
    }
    uint64_t end = clock_mono_us() + (uint64_t)us;
    for (;;) {
        poll_now(n, l);
        uint64_t now = clock_mono_us();
        if (now >= end || atomic_load(&n->cfg)->persist.key_load_delay != us) {
            return;
        }
        uint64_t slice = end - now < 1000 ? end - now : 1000;
        struct timespec ts = { 0, (long)slice * 1000 };
        nanosleep(&ts, NULL);
    }
}

void
loading_tick(struct node *n, uint64_t bytes)
{
    struct node_load *l = n->load;
    if (l == NULL) {
        return;
    }
    atomic_store_explicit(&n->loading_loaded_bytes,
                          atomic_load_explicit(&n->loading_loaded_bytes, memory_order_relaxed) +
                              bytes,
                          memory_order_relaxed);
    l->ticks++;
    int64_t delay = atomic_load(&n->cfg)->persist.key_load_delay;
    if (delay != 0) {
        load_delay(n, l, delay);
    }
    if ((l->ticks & 63) == 0 && clock_mono_us() - l->last_poll_us >= LOADING_POLL_US) {
        poll_now(n, l);
    }
}

void
loading_end(struct node *n)
{
    atomic_store(&n->loading, false);
    rv_free(n->load);
    n->load = NULL;
}

static uint64_t
file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

uint64_t
loading_dir_bytes(const char *dir)
{
    struct wal_file *segs = NULL, *cks = NULL;
    size_t ns = 0, nc = 0;
    uint64_t total = 0;
    if (wal_list(dir, &segs, &ns, &cks, &nc) != 0) {
        return 0;
    }
    if (nc > 0) {
        total += file_bytes(cks[nc - 1].path);
    }
    for (size_t i = 0; i < ns; i++) {
        total += file_bytes(segs[i].path);
    }
    rv_free(segs);
    rv_free(cks);
    return total;
}

void
loading_info(struct node *n, struct buf *b)
{
    if (!atomic_load(&n->loading)) {
        return;
    }
    /* As Redis's INFO: the ETA extrapolates the bytes per second so far (1
     * in the first second, when there is nothing to extrapolate from). */
    uint64_t total = atomic_load(&n->loading_total_bytes);
    uint64_t done = atomic_load(&n->loading_loaded_bytes);
    int64_t start = atomic_load(&n->loading_start_ms);
    if (done > total) {
        done = total; /* (a redistribution reads the old directories too) */
    }
    double perc = total > 0 ? (double)done * 100.0 / (double)total : 0.0;
    int64_t elapsed = (clock_unix_ms() - start) / 1000;
    uint64_t left = total > 0 ? total - done : 1;
    int64_t eta = elapsed <= 0 ? 1 : (int64_t)((uint64_t)elapsed * left / (done + 1));
    buf_appendf(b,
                "loading_start_time:%" PRId64 "\r\nloading_total_bytes:%" PRIu64
                "\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:%" PRIu64
                "\r\nloading_loaded_perc:%.2f\r\nloading_eta_seconds:%" PRId64 "\r\n",
                start / 1000, total, done, perc, eta);
}
