/* SPDX-License-Identifier: MIT */
#include "time-util.h"

#include <time.h>

uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_ms(void) {
        return now_us() / 1000;
}

struct timespec now_wall(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return ts;
}

struct timespec now_wall_coarse(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        return ts;
}
