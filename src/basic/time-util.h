/* SPDX-License-Identifier: MIT */
#pragma once

/* The one clock for durations and deadlines: CLOCK_MONOTONIC, which wall
 * clock changes do not move. */

#include <stdint.h>

uint64_t now_us(void);
uint64_t now_ms(void);
