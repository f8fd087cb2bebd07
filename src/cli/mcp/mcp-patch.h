/* SPDX-License-Identifier: MIT */
#pragma once

/* The apply_patch format (the one Codex's models are trained to emit),
 * parsed and applied to a text in memory (mcp-patch.c). Pure: reading and
 * writing the files is mcp-edit.c's, through the jail.
 *
 *   *** Begin Patch
 *   *** Add File: PATH          then its lines, each prefixed '+'
 *   *** Delete File: PATH
 *   *** Update File: PATH
 *   *** Move to: NEWPATH        (optional)
 *   @@ [a line to find first]   then ' ' context, '-' removed, '+' added
 *   *** End of File             (optional: the hunk ends the file)
 *   *** End Patch
 *
 * A hunk's lines are looked for from where the previous hunk ended:
 * exactly, then ignoring trailing white space, then ignoring white space
 * at both ends (as Codex does). A CRLF file keeps its line endings. */

#include <stdbool.h>
#include <stddef.h>

typedef enum McpPatchKind {
        MCP_PATCH_ADD,
        MCP_PATCH_DELETE,
        MCP_PATCH_UPDATE,
} McpPatchKind;

#include "mcp-diff.h"

/* A line of the patch text, without its '\n' and a '\r' before it. */
typedef McpLine McpPatchLine;

typedef struct McpPatchFile {
        McpPatchKind kind;
        char *path;
        char *move_to;       /* update: the new path, or NULL */
        size_t first, end;   /* its lines in McpPatch.lines (add: the '+' lines; update: the hunks) */
} McpPatchFile;

typedef struct McpPatch {
        McpPatchLine *lines;
        size_t n_lines;
        McpPatchFile *files;
        size_t n_files;
} McpPatch;

/* Parses text (kept by the caller while *ret is used). -EINVAL with
 * *ret_why (malloc'd) naming the line at fault; -ENOMEM. */
int mcp_patch_parse(const char *text, McpPatch *ret, char **ret_why);
/* An added file's content. -ENOMEM. */
int mcp_patch_added(const McpPatch *p, const McpPatchFile *f, char **ret, size_t *ret_len);
/* An updated file's new content from old. -EINVAL with *ret_why (a hunk
 * that does not match); -ENOMEM. */
int mcp_patch_update(const McpPatch *p, const McpPatchFile *f, const char *old, size_t old_len, char **ret,
                     size_t *ret_len, char **ret_why);
void mcp_patch_done(McpPatch *p);
