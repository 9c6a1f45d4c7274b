/* node/obs/latency.h: the shard's latency monitor (LATENCY LATEST/HISTORY/RESET):
 * named events ("command", "fast-command") at least latency-monitor-threshold
 * ms long, one sample per second per event (the largest), the last 160 kept.
 * Only the shard's thread touches it. */
#pragma once
#include <stdint.h>

struct latency;

struct latency *latency_create(void);
void latency_destroy(struct latency *l);
void latency_add(struct latency *l, const char *event, int64_t unix_s, uint64_t ms);
