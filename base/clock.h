/* base/clock.h: the two clocks the server needs. clock_mono_us() is for
 * budgets and durations (never jumps); clock_unix_ms() is wall time for
 * deadlines (EXPIRE, PX). */
#pragma once
#include <stdint.h>

uint64_t clock_mono_us(void);
int64_t clock_unix_ms(void);
