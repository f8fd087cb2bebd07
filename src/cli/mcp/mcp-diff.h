/* SPDX-License-Identifier: MIT */
#pragma once

/* A unified diff of two texts (mcp-diff.c), for the results of the MCP
 * tools that change files: what the model reads to check its change.
 * Pure. */

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

typedef struct McpLine {
        const char *p; /* into the text */
        size_t n;      /* without its '\n' */
        bool nl;       /* ended by '\n' (only a text's last line may not be) */
} McpLine;

/* The lines of p[0..n) (none for an empty text), pointing into it: *ret
 * malloc'd. -ENOMEM. */
int mcp_split_lines(const char *p, size_t n, McpLine **ret, size_t *ret_n);

/* Appends the diff of a (a_len bytes) into b as "--- a/PATH" / "+++
 * b/PATH" and hunks with 3 lines of context; a_path or b_path NULL:
 * /dev/null (an added or a deleted file). Nothing when the texts are equal.
 * Large changes (over a few million line pairs) are shown as one
 * replacement of the lines that differ. -ENOMEM. */
int mcp_unified_diff(const char *a_path, const char *a, size_t a_len, const char *b_path, const char *b, size_t b_len,
                     StrBuf *out);
