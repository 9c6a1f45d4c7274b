/* node/base/log.h: leveled logging to stderr or a log file, Redis's line format
 * ("pid:M 30 Nov 2026 13:48:47.123 * message"). Never called per request at
 * notice level or above. */
#pragma once

enum log_level { LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3 };

/* path NULL or "" logs to stderr; returns 0 or -1 when the file can't be opened. */
int log_setup(int level, const char *path);
void log_set_level(int level);
int log_get_level(void);
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) do { if (log_get_level() <= LOG_DEBUG) log_write(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...) do { if (log_get_level() <= LOG_VERBOSE) log_write(LOG_VERBOSE, __VA_ARGS__); } while (0)
#define log_notice(...) do { if (log_get_level() <= LOG_NOTICE) log_write(LOG_NOTICE, __VA_ARGS__); } while (0)
#define log_warn(...) log_write(LOG_WARNING, __VA_ARGS__)
