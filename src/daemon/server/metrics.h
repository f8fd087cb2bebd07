/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon's figures for an operator (metrics.c), in the Prometheus text
 * exposition format: the `metrics` tool and `vectora-sandbox metrics`.
 * What status says per workspace, summed for the whole daemon, plus what
 * only counting every call can give: calls by tool and outcome, refusals
 * by reason, and a latency histogram per tool. */

#include <stdint.h>

#include "api.h"
#include "daemon.h"
#include "strbuf.h"

/* Upper bounds of the latency histogram's buckets, in microseconds (+Inf
 * is implicit): from a warm file read (~100 us) to a command at the
 * default timeout (120 s). */
#define METRICS_BUCKETS 16

/* Indexed by tool: _API_TOOL_MAX stands for a request whose tool was
 * missing or unknown. */
typedef struct Metrics {
        uint64_t calls[_API_TOOL_MAX + 1][_API_ERROR_MAX];
        uint64_t latency[_API_TOOL_MAX + 1][METRICS_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
        uint64_t latency_sum_us[_API_TOOL_MAX + 1];
} Metrics;

/* One finished call: its tool (any value; out of range counts as unknown),
 * its result code and how long it took from its line to its reply. */
void metrics_record(Metrics *m, ApiTool tool, ApiError code, uint64_t duration_us);

/* The whole exposition: the daemon's state now and every count since it
 * started. -ENOMEM. */
int metrics_render(Server *srv, StrBuf *out);
