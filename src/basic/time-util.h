/* SPDX-License-Identifier: MIT */
#pragma once

/* The one clock for durations and deadlines: CLOCK_MONOTONIC, which wall
 * clock changes do not move. */

#include <stdint.h>
#include <time.h>

uint64_t now_us(void);
uint64_t now_ms(void);

/* The wall clock (CLOCK_REALTIME), for a date shown or compared with a
 * file's times: log and audit lines, a process's start, a file's age.
 * Never for a duration: it jumps when the clock is set. */
struct timespec now_wall(void);
/* The wall clock the kernel stamps file times with (CLOCK_REALTIME_COARSE,
 * a tick behind now_wall at most): a time that a later file change's ctime
 * must not fall before. */
struct timespec now_wall_coarse(void);
