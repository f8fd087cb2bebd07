/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandbox mcp: how a decoded MCP tool call is served. Both ways
 * answer with a reply shaped like the daemon API's (docs/protocol.md: ok,
 * error, sandboxed, sandbox, the tool's fields, outputs and file content as
 * the raw payload), which src/cli/mcp/mcp.c turns into the tool result. */

#include <sys/stat.h>

#include "config.h"
#include "mcp.h"
#include "session.h"

/* Embedded: one persistent worker for the workspace, kept for the whole MCP
 * session (warm calls), restarted when it dies or when vectora.toml
 * changes. */
typedef struct McpEmbedded {
        const char *workspace; /* borrowed */
        bool require_sandbox;  /* an unsandboxed workspace is refused (sandbox_required) */
        VsPolicy *policy;
        VsSession *session;
        struct stat config_st; /* vectora.toml when the session started */
        bool config_present;
        char *pending;         /* a loosening waiting for `vectora-sandbox allow` (approval.h), or NULL */
        char **masked;         /* what the masks covered when the session started (tools_masked_now) */
        struct VsHostRunScan *host_run; /* the files the host runs later as the last call left them */
        pid_t *jail_pids;      /* the jail's processes after its start (session_jail_pids), sorted */
        int n_jail_pids;       /* how many, or < 0: not counted */
        uint64_t generation;   /* workers this server started: the result's sandbox.generation */
        int cancel_fd;         /* readable: cancel the call in flight (the session's cancel_fd) */
} McpEmbedded;

/* Serves call. *ret_reply is always set on success (a refusal is a reply
 * with ok false); *ret_raw (malloc'd, may be NULL) is its raw payload.
 * Fails only with -ENOMEM. */
int mcp_embedded_call(McpEmbedded *e, const McpCall *call, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len);
/* Ends the worker. */
void mcp_embedded_done(McpEmbedded *e);
