/* SPDX-License-Identifier: MIT */
#pragma once

/* While no proxy process runs (between a death and the restart), a
 * connection on a workspace's listener gets a 503 at once rather than
 * waiting in the backlog (proxy-down.c). */

#include "macro.h"

#include <uv.h>

/* Starts answering on the listener fd (not taken); *down holds the watch. */
void proxy_down_start(uv_loop_t *loop, int fd, uv_poll_t **down);
void proxy_down_stop(uv_poll_t **down);
