/* SPDX-License-Identifier: MIT */
#pragma once

/* The network proxy process's stderr (and stdin, stdout): a pipe the
 * daemon reads, never the daemon's log file, which a proxy taken over
 * could rewrite (fcntl clears O_APPEND on a shared open file). Each line
 * is logged by the daemon at the level the proxy gave it, control
 * characters made visible, cut at a bound, and no more than a burst per
 * window, the rest counted (proxy-log.c). */

#include "macro.h"

#include <uv.h>

/* Starts reading fd (the pipe's read end, taken); ends any earlier one. */
void proxy_log_open(uv_loop_t *loop, int fd);
/* Logs what is left and closes it (the proxy ended). */
void proxy_log_close(void);
