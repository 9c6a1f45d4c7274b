/* base/log.h: leveled, per-module logging through a bounded queue and a
 * background writer thread, so a shard never blocks on the log file.
 *
 * Line format (Redis's, plus the thread and the module):
 *   "pid:M 30 Nov 2026 13:48:47.123 * [shard 0] wal: message"
 * ("[main]" on the main thread, the thread's name on helper threads).
 * A full queue drops the line and counts it (log_dropped(): INFO stats
 * log_lines_dropped, ruvio_log_lines_dropped_total).
 *
 * Each .c file may name its module before including this header:
 *   #define LOG_MODULE "wal"
 * The level comes from `loglevel` (CONFIG SET changes it); $RUVIO_LOG
 * ("info,wal=debug") overrides it per module. Formatting happens only for
 * lines that pass the filter. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3 };

#ifndef LOG_MODULE
#define LOG_MODULE "node"
#endif

/* path NULL or "" logs to stderr; queue_lines bounds the queue (0: default
 * 1024). Starts the writer thread. Returns 0, or -1 when the file can't be
 * opened (errno set). */
int log_setup(int level, const char *path, int64_t queue_lines);
/* Parse a $RUVIO_LOG spec ("notice,wal=debug,persist=warning"); NULL or "" keeps
 * the configured level. Returns 0, or -1 with a message in err. */
int log_set_spec(const char *spec, char *err, size_t errsz);
/* Write what is queued and stop the writer (the last lines of a clean exit). */
void log_shutdown(void);
void log_set_level(int level); /* `loglevel`: modules without an override */
int log_get_level(void);
/* The calling thread's label in log lines: a shard id, or -1 for "main". */
void log_set_thread_shard(int shard);
uint64_t log_dropped(void);

bool log_enabled_slow(int level, const char *module);
void log_emit(int level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The lowest level any module logs at: one relaxed load filters most calls. */
extern int log_min_level;
static inline bool
log_enabled(int level, const char *module)
{
    return level >= __atomic_load_n(&log_min_level, __ATOMIC_RELAXED) &&
           log_enabled_slow(level, module);
}

#define log_at(level, ...)                                                                         \
    do {                                                                                           \
        if (log_enabled((level), LOG_MODULE)) {                                                    \
            log_emit((level), LOG_MODULE, __VA_ARGS__);                                            \
        }                                                                                          \
    } while (0)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_at(LOG_VERBOSE, __VA_ARGS__)
#define log_notice(...) log_at(LOG_NOTICE, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARNING, __VA_ARGS__)
