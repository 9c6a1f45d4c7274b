/* node/server/dispatch.h: the dispatcher (node/server/dispatch.c). */
#pragma once
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "proto/resp.h"

#include <stdint.h>
#include <x86intrin.h>

struct conn;

/* Execute one parsed command on c (replies appended to c's output). */
void dispatch(struct conn *c, int argc, struct rv_str *argv);
/* Run an already validated command: handler, stats, WATCH invalidation. */
void dispatch_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);

/* Count the error replies written to c since the last count (INFO
 * errorstats): after each command, and before output is written for errors
 * written outside a command of c's (CLIENT UNBLOCK ... ERROR, a demotion). */
void dispatch_count_errors_slow(struct conn *c);
static inline void
dispatch_count_errors(struct conn *c)
{
    if (__builtin_expect(c->nerr != 0, 0)) {
        dispatch_count_errors_slow(c);
    }
}

/* A batch of commands (one read's pipeline, one replication read) is timed
 * with one time-stamp counter read per command instead of two: each command
 * runs from the end of the previous one (or the batch's start), so its time
 * includes parsing it. Outside a batch cmd_call reads the counter twice. */
extern _Thread_local uint64_t cmd_batch_mark;
static inline void
cmd_batch_begin(void)
{
    cmd_batch_mark = __rdtsc();
}
static inline void
cmd_batch_end(void)
{
    cmd_batch_mark = 0;
}
/* A replica applying its primary's records (hundreds of commands per read,
 * mostly runs of the same command) reads the counter once per run instead:
 * a run of the same command is charged its time evenly. INFO commandstats
 * stays exact in calls and total time; the latency histogram gets each call
 * at the run's mean, and SLOWLOG and the latency monitor do not see calls
 * timed this way. The primary timed each of them already. */
void cmd_batch_runs_begin(void);
void cmd_batch_runs_end(void);
