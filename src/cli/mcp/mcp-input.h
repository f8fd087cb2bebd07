/* SPDX-License-Identifier: MIT */
#pragma once

/* The MCP server's standard input on a thread of its own (mcp-input.c),
 * so that what must not wait for a running call is seen while it runs:
 * `ping` is answered at once, and `notifications/cancelled` naming the
 * running tools/call cancels it (its daemon connection is shut down, which
 * the daemon takes as a cancel; the embedded session gets cancel_fd). A
 * client that goes away (stdin at EOF and stdout's reader closed) cancels
 * it too. Other messages are handed to the main thread in order; calls
 * still run one at a time. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct McpInput McpInput;

/* Starts the thread. -errno on failure. */
int mcp_input_start(McpInput **ret);
/* The next line (malloc'd, NUL-terminated, without its '\n'; *ret_len its
 * length), waiting for it; NULL at EOF. */
char *mcp_input_next(McpInput *in, size_t *ret_len);
/* Writes to stdout, one writer at a time (the thread answers pings). */
int mcp_output(McpInput *in, const char *p, size_t n);
/* The tools/call with JSON-RPC id starts: false when it was cancelled
 * before (then it is not run and gets no response). */
bool mcp_input_call_begin(McpInput *in, json_t *id);
/* The daemon connection the call runs on (-1: none any more; before the
 * descriptor is closed). */
void mcp_input_call_fd(McpInput *in, int fd);
/* Whether the running call was cancelled (its daemon connection shut
 * down: no lost daemon to report). */
bool mcp_input_call_cancelled(McpInput *in);
/* The call ended: true when it was cancelled (no response is sent). */
bool mcp_input_call_end(McpInput *in);
/* The eventfd written on a cancel, for the embedded session's cancel_fd. */
int mcp_input_cancel_fd(McpInput *in);
/* The main thread stops serving (the process exits next). */
void mcp_input_stop(McpInput *in);
