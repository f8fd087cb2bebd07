/* SPDX-License-Identifier: MIT */
#pragma once

/* The Model Context Protocol's tool server, as far as it is pure: protocol
 * revisions and their negotiation, the tool catalogue (names, descriptions,
 * input schemas), decoding of untrusted tools/call parameters into a typed
 * call through dispatch tables that refuse unknown arguments, the daemon API
 * request for a call, and the tool result built from a daemon-API-shaped
 * reply. The stdio loop and the two ways of serving a call (the daemon, or an
 * embedded worker) are the CLI's (src/cli/verbs/verb-mcp.c).
 *
 * Adding a tool: a McpTool value, a row in the catalogue with its schema, a dispatch
 * table for its arguments, its request and its result text in mcp.c, and
 * its embedded implementation (or a refusal) in the CLI. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

/* Newest first: what initialize answers when the client asks for a
 * revision this server does not know. */
#define MCP_PROTOCOL_LATEST "2025-06-18"
/* file_read: bytes returned per call unless "limit" says otherwise (sized
 * for a model's context: clients cap a tool result near 25k tokens), and
 * the most a call may ask for (the result is one JSON-RPC line). */
#define MCP_READ_DEFAULT_LIMIT (24u * 1024u)
#define MCP_READ_MAX_LIMIT (8u * 1024u * 1024u)
/* terminal: bytes of output shown (both streams) unless "max_output" says
 * otherwise, the head and the tail kept; the same bound as a read. */
#define MCP_OUTPUT_DEFAULT (24u * 1024u)
#define MCP_TIMEOUT_MAX_S (7u * 24u * 3600u)
/* file_write: content_base64 goes in the request's header line (1 MiB). */
#define MCP_WRITE_BASE64_MAX (1000u * 1024u)

typedef enum McpTool {
        MCP_TOOL_TERMINAL,
        MCP_TOOL_FILE_READ,
        MCP_TOOL_FILE_WRITE,
        MCP_TOOL_FILE_EDIT,
        MCP_TOOL_LIST_DIR,
        MCP_TOOL_GLOB,
        MCP_TOOL_GREP,
        MCP_TOOL_MULTI_EDIT,  /* several replacements in one file (mcp-edit.c) */
        MCP_TOOL_APPLY_PATCH, /* Codex-style patch text (mcp-edit.c) */
        /* Background processes: served by the daemon only (it keeps them). */
        MCP_TOOL_PROCESS_START,
        MCP_TOOL_PROCESS_OUTPUT,
        MCP_TOOL_PROCESS_INPUT,
        MCP_TOOL_PROCESS_SIGNAL,
        MCP_TOOL_PROCESS_LIST,
        _MCP_TOOL_MAX,
} McpTool;

const char *mcp_tool_name(McpTool t);

/* The revision to answer with: requested itself when supported, else
 * MCP_PROTOCOL_LATEST (the client then decides whether it can go on). */
const char *mcp_negotiate_version(const char *requested);
/* Whether this revision has structuredContent in tool results. */
bool mcp_version_has_structured(const char *version);

typedef struct McpInitialize {
        const char *protocol_version; /* borrowed */
        const char *client_name;      /* borrowed; may be NULL */
} McpInitialize;

/* initialize's params: protocolVersion (required string), capabilities and
 * clientInfo (objects). Members a later revision adds are accepted and
 * ignored (the client may be newer than this server). */
int mcp_decode_initialize(json_t *params, McpInitialize *ret, VsError **err);

/* The tools/list result ({"tools":[...]}): without with_daemon, the tools
 * only the daemon serves are left out, without commands the terminal tool
 * (an allowlist without the daemon's proxy); open_world (the workspace's jail
 * has a network) sets openWorldHint on the command tools; structured (the
 * revision has structuredContent) adds each tool's outputSchema. New
 * reference, NULL on OOM. */
json_t *mcp_tools_list(bool with_daemon, bool commands, bool open_world, bool structured);

typedef struct McpCall {
        McpTool tool;
        /* terminal */
        const char *command;
        const char *cwd;
        uint64_t timeout_s;   /* 0: the workspace's limit */
        uint64_t max_output;  /* terminal: bytes of output shown; MCP_OUTPUT_DEFAULT when absent */
        const char *stdin_text;
        json_t *env;          /* terminal, process_start: variables added for this command (borrowed) */
        /* file tools */
        const char *path;
        uint64_t offset;
        uint64_t limit;       /* file_read; set to MCP_READ_DEFAULT_LIMIT when absent */
        uint64_t start_line, max_lines; /* file_read by lines */
        bool line_numbers;    /* file_read: each line shown after its number (cat -n) */
        const char *content;  /* file_write */
        size_t content_len;
        const char *content_base64; /* file_write: binary content instead of content (sent as it is) */
        bool create_parents;
        const char *if_sha256; /* file_write from multi_edit/apply_patch only (never from the agent's
                                * arguments): NULL none, "" must not exist, else the sha256 read */
        const char *old_string, *new_string; /* file_edit */
        bool replace_all;
        uint64_t max_entries; /* list_dir; MCP_LIST_DEFAULT when absent */
        const char *pattern;  /* glob, grep */
        const char *glob;     /* grep: a filter on paths */
        bool fixed, ignore_case;
        uint64_t context;
        uint64_t max_results; /* glob: max_results; grep: max_matches */
        /* background processes (process_start: command, cwd, timeout_s, stdin_text) */
        uint64_t process;
        uint64_t stdout_offset, stderr_offset, wait_ms; /* process_output */
        const char *data;     /* process_input */
        bool eof;
        const char *signal;   /* process_signal: a name, default TERM */
        json_t *edits;        /* multi_edit: [{old_string, new_string, replace_all}] (borrowed) */
        const char *patch;    /* apply_patch: the patch text */
} McpCall;

/* tools/call params: {"name", "arguments", "_meta"}. Strings are borrowed
 * from params. Errors: -ENOENT kind "unknown_tool" (a protocol error:
 * JSONRPC_INVALID_PARAMS), -EINVAL kind "invalid_params" for a malformed
 * envelope (also a protocol error), -EINVAL kind "bad_arguments" for
 * arguments that do not fit the tool's schema (a tool error the agent can
 * correct: the message names the argument). */
int mcp_decode_call(json_t *params, McpCall *ret, VsError **err);

/* The daemon API request for call in workspace (absolute), and the raw
 * payload to send after it (file_write's content; *ret_raw NULL otherwise).
 * Outputs and file content come back raw ("binary"). New reference. */
int mcp_call_request(const McpCall *call, const char *workspace, json_t **ret, const char **ret_raw,
                     size_t *ret_raw_len);

/* The tools/call result for a reply shaped like the daemon API's
 * (docs/protocol.md: ok, error, sandboxed, sandbox, the tool's fields) and
 * its raw payload. A failed reply is a tool error (isError) carrying the
 * code and the reason, never a protocol error. The text says how the call
 * was sandboxed; with structured (revision 2025-06-18) the reply's fields,
 * without the bulk data, are also structuredContent, with served_by. */
int mcp_call_result(const McpCall *call, json_t *reply, const char *raw, size_t raw_len, const char *served_by,
                    bool structured, json_t **ret);
/* Whether the tool needs the daemon (embedded mode refuses it). */
bool mcp_tool_needs_daemon(McpTool t);
/* A tool error result with code and message (bad arguments, a daemon that
 * went away). */
json_t *mcp_tool_error(const char *code, const char *message);
