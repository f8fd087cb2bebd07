/* SPDX-License-Identifier: MIT */
#pragma once

/* The MCP server's finding tools (list_dir): their catalogue rows,
 * requests and result texts, apart from mcp.c so that each file stays
 * readable. Pure, like mcp.c. */

#include <jansson.h>

#include "mcp.h"
#include "strbuf.h"

/* list_dir: entries shown unless "max_entries" says otherwise (a model's
 * context holds a few hundred names well), and the most a call may ask. */
#define MCP_LIST_DEFAULT 200u
#define MCP_LIST_MAX 2000u

#define MCP_LIST_DIR_DESCRIPTION                                                                                     \
        "List a directory of the workspace: each entry's name, with / after a directory and @ after a symlink, "     \
        "and a file's size in bytes, sorted by name. Masked paths (secrets) are not listed. At most max_entries "   \
        "are shown; the result says how many there are."

#define MCP_LIST_DIR_SCHEMA                                                                                           \
        "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"                                       \
        "\"path\":{\"type\":\"string\",\"description\":\"Directory, relative to the workspace root or absolute (default: the root)\"}," \
        "\"max_entries\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":2000,\"description\":\"Most entries to show (default 200)\"}}}"

/* Checks the call's arguments after the table decoded them; a message for
 * the agent (bad_arguments) or NULL. Fills defaults. */
const char *mcp_find_check(McpCall *c, json_t *args);
/* The daemon API request's arguments for the call, added to o. */
int mcp_find_request(const McpCall *c, json_t *o);
/* The result text of a successful reply. */
int mcp_find_text(const McpCall *c, json_t *reply, StrBuf *t);
