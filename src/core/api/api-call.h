/* SPDX-License-Identifier: MIT */
#pragma once

/* The one daemon-API call of the worker tools (terminal, file_read,
 * file_write, file_edit), whoever serves it: the daemon, the embedded CLI
 * and the MCP server (through the daemon or embedded) all decode a request
 * here, once, through api.h's tables (unknown fields refused), drive the
 * core's tool call (tool-call.h) and close the result with the one
 * envelope (api-result.h). What differs between them is only how the
 * worker requests travel (the daemon's event loop, a blocking session) and
 * how the result leaves (a socket line, the CLI's output, an MCP result).
 *
 * Decoding is pure apart from memory (no OS calls); api_call_run() is the
 * blocking driver of the in-process servers over their session. */

#include <stdbool.h>

#include <jansson.h>

#include "api.h"
#include "error.h"
#include "jsonl.h"
#include "session.h"
#include "tool-call.h"

struct VsHostRunScan;

typedef struct VsApiCall {
        ApiTool which;
        json_t *req;       /* the request object, referenced: args borrow its strings */
        void *args;        /* the tool's decoded table (api.h), owned */
        char *dir_path;    /* the path or cwd made absolute under the named directory, owned */
        json_t *target;    /* for the audit log, owned */
        bool binary;       /* the result's bytes as the raw payload instead of strings */
        VsToolCall tc;     /* its worker requests (tool-call.h) */
} VsApiCall;

#define VS_API_CALL_INIT ((VsApiCall){ .which = _API_TOOL_INVALID })

/* Whether this module serves the tool (the four worker tools). */
bool api_call_serves(ApiTool which);

/* Decodes msg (the request object, referenced for as long as c lives; its
 * raw payload, the stdin or content, is taken) as tool which, refusing unknown fields, and makes the core's
 * tool call of it. dir (may be NULL): a directory below the workspace root
 * the request named, where relative paths and the cwd start. On failure
 * *err's kind is the API code (bad_request, ...); -ENOMEM. Unsandboxed or
 * not, the ceilings are the caller's (tool_call_ceilings). */
int api_call_decode(VsApiCall *c, ApiTool which, JsonlMsg *msg, const char *dir, VsError **err);

/* The result as the tool shapes it when every byte travels as the raw
 * payload: the core's fields (tool_call_feed), stdout/stderr lengths
 * kept. The daemon shapes its text form (strings fitted to a reply line)
 * itself; in-process callers always ask for binary. */
bool api_call_binary(const VsApiCall *c);

/* Frees what c holds; c may be decoded again. Accepts a zeroed or
 * VS_API_CALL_INIT c. */
void api_call_done(VsApiCall *c);

/* What an in-process server (the CLI without a daemon, the MCP server
 * without one) serves its calls with: its workspace's session, kept by
 * the caller. */
typedef struct VsApiSession {
        VsSession *session;
        const VsPolicy *policy;          /* the session's */
        const char *pending;             /* a loosening waiting for `vectora-sandbox allow`, or NULL */
        struct VsHostRunScan **host_run; /* the scan the last call left (host-run-scan.h), replaced by this call's */
        uint64_t generation;             /* which of the caller's workers the session runs */
        /* The CLI's one call per process: its worker ends with the call and
         * what the jail made that git takes as a repository is put aside
         * (not after a read, whose content may still be on its way from
         * the worker: session_end() sweeps then). A kept session sweeps
         * after each call (tool_call_run()). */
        bool one_call;
        /* An eventfd of this call's own (> 0; 0, the zeroed default: none)
         * that another thread writes to cancel it (session_call()). */
        int cancel_fd;
} VsApiSession;

/* Serves msg (the request object and its raw payload, both borrowed) as
 * the daemon does: decoded through the API's tables, relative paths and
 * the cwd below dir (may be NULL: the workspace root), the policy's limits
 * as ceilings, run over the session (file_edit's retry on a concurrent
 * write included), closed with the one envelope (api-result.h) and the
 * call's host_run_files, audited (audit.h; start_us: when the call came
 * in, now_us()). *ret: the result, ok false for a refused or failed call,
 * and the tool's raw payload (none after a failure). Fails only with
 * -ENOMEM. */
int api_call_run(const VsApiSession *s, JsonlMsg *msg, const char *dir, uint64_t start_us, JsonlMsg *ret);

/* A call an in-process server refused before any worker served it (no
 * workspace, a worker that could not start, a tool it does not serve):
 * the envelope with code and message, audited as workspace's call of tool
 * (may be NULL). New reference; NULL on OOM. */
json_t *api_call_refuse(const char *workspace, const char *tool, const char *code, const char *message,
                        uint64_t start_us);
