/* base/log.c: the log queue and its writer thread.
 *
 * The queue is a ring of fixed-size lines behind one mutex held only for a
 * memcpy of one line (producers) or an index update (the writer), never
 * across formatting or I/O. The writer writes the slots between tail and
 * head without the lock: producers only fill slots outside that range. */
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 512
#define LOG_MAX_MODULES 16

struct log_slot {
    uint16_t len;
    char text[LOG_LINE_MAX];
};

int log_min_level = LOG_NOTICE;
static atomic_int default_level = LOG_NOTICE;
/* Per-module overrides: written once at start-up, before any thread runs. */
static struct {
    char name[24];
    int level;
} overrides[LOG_MAX_MODULES];
static int noverrides;

static FILE *log_fp;
static struct log_slot *ring;
static uint64_t nslots, head, tail; /* head - tail = queued lines */
static bool writer_sleeping, writer_running, writer_stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_t writer_thread;
static atomic_uint_fast64_t dropped;
static _Thread_local int thread_shard = -1;

static void
recompute_min(void)
{
    int m = atomic_load(&default_level);
    for (int i = 0; i < noverrides; i++) {
        if (overrides[i].level < m) {
            m = overrides[i].level;
        }
    }
    __atomic_store_n(&log_min_level, m, __ATOMIC_RELAXED);
}

static FILE *
out_fp(void)
{
    return log_fp ? log_fp : stderr;
}

static void *
writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (head == tail && !writer_stop) {
            writer_sleeping = true;
            pthread_cond_wait(&cond, &lock);
            writer_sleeping = false;
        }
        if (head == tail) {
            break;
        }
        uint64_t h = head, t = tail;
        pthread_mutex_unlock(&lock);
        FILE *fp = out_fp();
        for (; t != h; t++) {
            const struct log_slot *sl = &ring[t % nslots];
            fwrite(sl->text, 1, sl->len, fp);
        }
        fflush(fp);
        pthread_mutex_lock(&lock);
        tail = h;
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int
log_setup(int level, const char *path, int64_t queue_lines)
{
    atomic_store(&default_level, level);
    recompute_min();
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (f == NULL) {
            return -1;
        }
        log_fp = f;
    }
    nslots = queue_lines > 0 ? (uint64_t)queue_lines : 1024;
    ring = calloc(nslots, sizeof(*ring));
    if (ring == NULL) {
        return -1;
    }
    writer_stop = false;
    if (pthread_create(&writer_thread, NULL, writer_main, NULL) != 0) {
        free(ring);
        ring = NULL;
        return -1;
    }
    pthread_setname_np(writer_thread, "ruvio-log");
    writer_running = true;
    atexit(log_shutdown); /* lines queued before an early exit still reach the file */
    return 0;
}

void
log_shutdown(void)
{
    if (!writer_running) {
        return;
    }
    pthread_mutex_lock(&lock);
    writer_stop = true;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(writer_thread, NULL);
    pthread_mutex_lock(&lock);
    writer_running = false;
    pthread_mutex_unlock(&lock);
    fflush(out_fp());
}

static int
level_by_name(const char *s, size_t n)
{
    static const struct {
        const char *name;
        int level;
    } names[] = {
        { "debug", LOG_DEBUG },   { "verbose", LOG_VERBOSE }, { "info", LOG_VERBOSE },
        { "notice", LOG_NOTICE }, { "warning", LOG_WARNING }, { "warn", LOG_WARNING },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == n && strncasecmp(names[i].name, s, n) == 0) {
            return names[i].level;
        }
    }
    return -1;
}

int
log_set_spec(const char *spec, char *err, size_t errsz)
{
    if (spec == NULL || *spec == '\0') {
        return 0;
    }
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (eq == NULL) {
            int lv = level_by_name(p, n);
            if (lv < 0) {
                snprintf(err, errsz, "RUVIO_LOG: unknown level '%.*s'", (int)n, p);
                return -1;
            }
            atomic_store(&default_level, lv);
        } else {
            size_t mlen = (size_t)(eq - p);
            int lv = level_by_name(eq + 1, n - mlen - 1);
            if (lv < 0 || mlen == 0 || mlen >= sizeof(overrides[0].name)) {
                snprintf(err, errsz, "RUVIO_LOG: bad module filter '%.*s'", (int)n, p);
                return -1;
            }
            if (noverrides == LOG_MAX_MODULES) {
                snprintf(err, errsz, "RUVIO_LOG: more than %d module filters", LOG_MAX_MODULES);
                return -1;
            }
            memcpy(overrides[noverrides].name, p, mlen);
            overrides[noverrides].name[mlen] = '\0';
            overrides[noverrides].level = lv;
            noverrides++;
        }
        p += n;
        if (*p == ',') {
            p++;
        }
    }
    recompute_min();
    return 0;
}

void
log_set_level(int level)
{
    atomic_store(&default_level, level);
    recompute_min();
}

int
log_get_level(void)
{
    return atomic_load_explicit(&default_level, memory_order_relaxed);
}

void
log_set_thread_shard(int shard)
{
    thread_shard = shard;
}

uint64_t
log_dropped(void)
{
    return atomic_load_explicit(&dropped, memory_order_relaxed);
}

bool
log_enabled_slow(int level, const char *module)
{
    for (int i = 0; i < noverrides; i++) {
        if (strcmp(overrides[i].name, module) == 0) {
            return level >= overrides[i].level;
        }
    }
    return level >= atomic_load_explicit(&default_level, memory_order_relaxed);
}

void
log_emit(int level, const char *module, const char *fmt, ...)
{
    static const char marks[] = ".-*#";
    char line[LOG_LINE_MAX], ts[64], who[24];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t tn = strftime(ts, sizeof(ts), "%d %b %Y %H:%M:%S", &tm);
    snprintf(ts + tn, sizeof(ts) - tn, ".%03d", (int)(tv.tv_usec / 1000));
    if (thread_shard >= 0) {
        snprintf(who, sizeof(who), "shard %d", thread_shard);
    } else if (gettid() == getpid()) {
        snprintf(who, sizeof(who), "main");
    } else if (pthread_getname_np(pthread_self(), who, sizeof(who)) != 0) {
        snprintf(who, sizeof(who), "thread"); /* helper threads: their names (ruvio-ckpt, ...) */
    }
    int n = snprintf(line, sizeof(line), "%d:M %s %c [%s] %s: ", (int)getpid(), ts,
                     marks[level & 3], who, module);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        n = 0;
    }
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m > 0 ? (size_t)m : 0);
    if (len > sizeof(line) - 2) {
        len = sizeof(line) - 2; /* truncated: keep room for the newline */
    }
    line[len++] = '\n';

    pthread_mutex_lock(&lock);
    if (!writer_running) {
        fwrite(line, 1, len, out_fp()); /* before start-up or after shutdown: direct */
        fflush(out_fp());
        pthread_mutex_unlock(&lock);
        return;
    }
    if (head - tail >= nslots) {
        pthread_mutex_unlock(&lock);
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return;
    }
    struct log_slot *sl = &ring[head % nslots];
    memcpy(sl->text, line, len);
    sl->len = (uint16_t)len;
    head++;
    bool wake = writer_sleeping;
    pthread_mutex_unlock(&lock);
    if (wake) {
        pthread_cond_signal(&cond);
    }
}
