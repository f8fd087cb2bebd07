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
 * Pure apart from memory: no OS calls. */

#include <stdbool.h>

#include <jansson.h>

#include "api.h"
#include "error.h"
#include "jsonl.h"
#include "tool-call.h"

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
