/* SPDX-License-Identifier: MIT */
#pragma once

/* The MCP server's standard input on a thread of its own (mcp-input.c),
 * so that what must not wait for a running call is seen while it runs:
 * `ping` is answered at once, and `notifications/cancelled` naming a
 * running tools/call cancels it (its daemon connection is shut down, which
 * the daemon takes as a cancel; in the embedded session its own eventfd
 * is written, and the worker cancels that request only). A
 * client that goes away (stdin at EOF and stdout's reader closed) cancels
 * them all. Other messages are handed to the main thread in order, which
 * runs each tools/call on a thread of its own; a second thread sends
 * notifications/progress for the calls that asked for them. */

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
/* notifications/progress for a call with a progressToken: one every this
 * many seconds while it runs, with the seconds elapsed as its progress. */
#define MCP_PROGRESS_INTERVAL_S 2u

typedef struct McpRun McpRun;

/* The tools/call with JSON-RPC id starts (progress_token: its
 * _meta.progressToken or NULL): 1 and *ret to run it, 0 when it was
 * cancelled before (then it is not run and gets no response), -ENOMEM. */
int mcp_input_call_begin(McpInput *in, json_t *id, json_t *progress_token, McpRun **ret);
/* The daemon connection the call runs on (-1: none any more; before the
 * descriptor is closed). */
void mcp_input_call_fd(McpInput *in, McpRun *c, int fd);
/* An eventfd of the call's own that its cancel writes (the embedded
 * session's cancel_fd for it, session_call()), made on the first ask and
 * closed by mcp_input_call_end(); written at once when the call was
 * cancelled already. -errno when none could be made. */
int mcp_input_call_cancel_fd(McpInput *in, McpRun *c);
/* Whether the call was cancelled (its daemon connection shut down: no
 * lost daemon to report). */
bool mcp_input_call_cancelled(McpInput *in, McpRun *c);
/* The call ended, and c is freed: true when it was cancelled (no response
 * is sent). No progress notification for it follows. */
bool mcp_input_call_end(McpInput *in, McpRun *c);
/* The client went away (stdin at EOF and stdout's reader closed): the
 * calls running were cancelled then; 0 when it has not. */
uint64_t mcp_input_gone_us(McpInput *in);
/* The main thread stops serving (the process exits next). */
void mcp_input_stop(McpInput *in);
