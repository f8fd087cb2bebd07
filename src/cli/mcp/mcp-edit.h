/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora-sandbox mcp: the tools that change files in several steps
 * (mcp-edit.c): multi_edit (several replacements in one file, all or
 * nothing) and apply_patch (Codex-style patch text over several files).
 * Each reads and writes only through the mode's file operations (the
 * worker's file_read and file_write in the jail), so masks, protected and
 * read-only paths hold as for any write; each answers with a unified diff
 * of what changed. */

#include <stdbool.h>

#include <jansson.h>

#include "mcp.h"

/* One operation through the jail (verb-mcp.c's serve_op): a reply shaped
 * like the daemon API's, or *ret_error a tool error result when nothing
 * could be asked. -ENOMEM only. */
typedef int (*McpFileOp)(void *userdata, const McpCall *c, json_t **ret_reply, char **ret_raw, size_t *ret_raw_len,
                         json_t **ret_error);

bool mcp_tool_is_edit(McpTool t);
/* Serves a multi_edit or apply_patch call: *ret the tool result (a tool
 * error when refused: then no file changed). -ENOMEM. */
int mcp_edit_serve(const McpCall *c, McpFileOp op, void *userdata, bool structured, json_t **ret);
/* Checks a multi_edit or apply_patch call's arguments after the table
 * decoded them (sets c->edits); a message for the agent or NULL. */
const char *mcp_edit_check(McpCall *c, json_t *args);

#define MCP_MULTI_EDIT_DESCRIPTION                                                                                    \
        "Make several exact replacements in one file of the workspace, all or nothing: each edit's old_string is "    \
        "looked for in the file as the edits before it left it, and must occur exactly once unless its replace_all " \
        "is true; if any edit fails, the file is left as it was. Returns a unified diff of what changed."
#define MCP_MULTI_EDIT_SCHEMA                                                                                         \
        "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"edits\"],\"properties\":{"  \
        "\"path\":{\"type\":\"string\",\"description\":\"File path, relative to the workspace root or absolute\"},"   \
        "\"edits\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,\"items\":{\"type\":\"object\","            \
        "\"additionalProperties\":false,\"required\":[\"old_string\",\"new_string\"],\"properties\":{"              \
        "\"old_string\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The exact text to replace\"},"        \
        "\"new_string\":{\"type\":\"string\",\"description\":\"The text to put in its place\"},"                    \
        "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence (default false)\"}}},"     \
        "\"description\":\"The replacements, applied in order\"}}}"
#define MCP_APPLY_PATCH_DESCRIPTION                                                                                   \
        "Apply a patch in the apply_patch format: '*** Begin Patch', then for each file '*** Add File: PATH' (its "  \
        "lines prefixed '+'), '*** Delete File: PATH', or '*** Update File: PATH' (optionally '*** Move to: NEW') "   \
        "with hunks: a line '@@' (optionally followed by a line of the file to find first, e.g. '@@ def main():'), " \
        "context lines prefixed ' ', removed lines '-', added lines '+'; then '*** End Patch'. All or nothing: when " \
        "a hunk does not match or a file is refused, no file is changed. Returns a unified diff of what changed."
#define MCP_APPLY_PATCH_SCHEMA                                                                                        \
        "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"patch\"],\"properties\":{"           \
        "\"patch\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The patch text, from '*** Begin Patch' to '*** End Patch'\"}}}"
