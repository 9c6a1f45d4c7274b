/* node/base/log.c */
#include "node/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = LOG_NOTICE;
static FILE *log_fp;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int
log_setup(int level, const char *path)
{
    atomic_store(&log_level, level);
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (f == NULL) {
            return -1;
        }
        setvbuf(f, NULL, _IOLBF, 0);
        log_fp = f;
    }
    return 0;
}

void
log_set_level(int level)
{
    atomic_store(&log_level, level);
}

int
log_get_level(void)
{
    return atomic_load_explicit(&log_level, memory_order_relaxed);
}

void
log_write(int level, const char *fmt, ...)
{
    static const char marks[] = ".-*#";
    char msg[1024], ts[64];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    if (level < log_get_level()) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%d %b %Y %H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%03d", (int)(tv.tv_usec / 1000));
    pthread_mutex_lock(&log_lock);
    fprintf(log_fp ? log_fp : stderr, "%d:M %s %c %s\n", (int)getpid(), ts,
            marks[level & 3], msg);
    pthread_mutex_unlock(&log_lock);
}
