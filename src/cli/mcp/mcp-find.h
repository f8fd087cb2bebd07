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

/* glob: paths shown unless "max_results" says otherwise; grep: matching
 * lines (context lines come on top). */
#define MCP_GLOB_DEFAULT 200u
#define MCP_GREP_DEFAULT 100u
#define MCP_FIND_MAX 5000u

#define MCP_GLOB_DESCRIPTION                                                                                         \
        "Find files and directories of the workspace by a glob pattern: '*' and '?' within a name, '**' across "      \
        "directories, '[a-z]' classes. A pattern without '/' matches the name at any depth (\"*.py\"); one with "  \
        "'/' is anchored at path (\"src/**/*.c\"). Symlinks are listed, not followed; .git and masked paths are "    \
        "left out. Results are sorted by path; the result says when a limit stopped the search."

#define MCP_GLOB_SCHEMA                                                                                               \
        "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"pattern\"],\"properties\":{"      \
        "\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The glob, e.g. \\\"**/*.test.ts\\\"\"}," \
        "\"path\":{\"type\":\"string\",\"description\":\"Directory searched, relative to the workspace root or absolute (default: the root)\"}," \
        "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,\"description\":\"Most paths to return (default 200)\"}}}"

#define MCP_GREP_DESCRIPTION                                                                                         \
        "Search the contents of the workspace's files for a POSIX extended regular expression (or plain text with "   \
        "fixed), and show each matching line as path:line:text, with context lines as path-line-text. Binary and "  \
        "very large files, .git, symlinks and masked paths are skipped. Limit the files with glob (\"*.c\", "     \
        "\"src/**\"); the result says how many matched and when a limit stopped the search."

#define MCP_GREP_SCHEMA                                                                                               \
        "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"pattern\"],\"properties\":{"      \
        "\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":\"POSIX extended regex, e.g. \\\"fn [a-z_]+\\\\(\\\" (\\\\d, \\\\w, \\\\s and \\\\b work; no lookaround or lazy quantifiers)\"}," \
        "\"path\":{\"type\":\"string\",\"description\":\"Directory or file searched, relative to the workspace root or absolute (default: the root)\"}," \
        "\"glob\":{\"type\":\"string\",\"description\":\"Only files whose path below path matches this glob\"}," \
        "\"fixed\":{\"type\":\"boolean\",\"description\":\"pattern is plain text, not a regex (default false)\"}," \
        "\"ignore_case\":{\"type\":\"boolean\",\"description\":\"Match regardless of case (default false)\"}," \
        "\"context\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10,\"description\":\"Lines shown before and after each match (default 0)\"}," \
        "\"max_matches\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,\"description\":\"Most matching lines to return (default 100)\"}}}"

/* Checks the call's arguments after the table decoded them; a message for
 * the agent (bad_arguments) or NULL. Fills defaults. */
const char *mcp_find_check(McpCall *c, json_t *args);
/* The daemon API request's arguments for the call, added to o. */
int mcp_find_request(const McpCall *c, json_t *o);
/* The result text of a successful reply; with cap, its lines stop at 24
 * KiB (a model's context) with a note saying how to see the rest. */
int mcp_find_text(const McpCall *c, json_t *reply, bool cap, StrBuf *t);
