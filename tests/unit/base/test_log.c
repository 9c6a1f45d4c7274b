#include "base/log.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(log, spec_sets_default_and_module_levels)
{
    char err[256];
    log_set_level(LOG_NOTICE);
    cr_assert_eq(log_set_spec("warning,wal=debug,persist=info", err, sizeof(err)), 0);
    cr_assert_eq(log_get_level(), LOG_WARNING);
    cr_assert(log_enabled(LOG_DEBUG, "wal"));
    cr_assert(!log_enabled(LOG_DEBUG, "persist"));
    cr_assert(log_enabled(LOG_VERBOSE, "persist"));
    cr_assert(!log_enabled(LOG_NOTICE, "main"));
    cr_assert(log_enabled(LOG_WARNING, "main"));
    log_set_level(LOG_DEBUG); /* CONFIG SET loglevel: modules without a filter */
    cr_assert(log_enabled(LOG_DEBUG, "main"));
    cr_assert(!log_enabled(LOG_DEBUG, "persist"));
}

Test(log, spec_rejects_bad_input)
{
    char err[256];
    cr_assert_eq(log_set_spec("loud", err, sizeof(err)), -1);
    cr_assert(strstr(err, "loud") != NULL);
    cr_assert_eq(log_set_spec("info,wal=", err, sizeof(err)), -1);
    cr_assert_eq(log_set_spec("info,=debug", err, sizeof(err)), -1);
    cr_assert_eq(log_set_spec("", err, sizeof(err)), 0);
    cr_assert_eq(log_set_spec(NULL, err, sizeof(err)), 0);
}

/* A one-line queue cannot keep up with a burst: lines are dropped and counted,
 * never waited for, and every line is either written or counted. */
Test(log, full_queue_drops_and_counts)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ruvio-test-log-%d.log", (int)getpid());
    unlink(path);
    cr_assert_eq(log_setup(LOG_NOTICE, path, 1), 0);
    log_set_thread_shard(3);
    enum { N = 20000 };
    for (int i = 0; i < N; i++) {
        log_emit(LOG_WARNING, "test", "line %d", i);
    }
    log_shutdown();
    uint64_t dropped = log_dropped();
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[600];
    uint64_t written = 0;
    bool format_ok = true;
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "test: line ")) {
            written++;
            format_ok &= strstr(line, " # [shard 3] test: line ") != NULL;
        }
    }
    fclose(f);
    unlink(path);
    cr_assert(format_ok);
    cr_assert_gt(dropped, 0);
    cr_assert_eq(written + dropped, (uint64_t)N, "written %llu + dropped %llu",
                 (unsigned long long)written, (unsigned long long)dropped);
}
