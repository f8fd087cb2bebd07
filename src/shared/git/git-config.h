/* SPDX-License-Identifier: MIT */
#pragma once

/* Reading git config files on the host without running git (issue 25,
 * section 2). The sealed repository config, and the host user's global
 * and system config, may name files inside the workspace: core.hooksPath
 * (husky, lefthook), include.path, includeIf.*.path, core.attributesFile,
 * core.excludesFile. What they name is the jail's to write unless it is
 * sealed too, and the host's next git commit runs the hook the jail wrote.
 * git-control.c seals what this finds.
 *
 * The parser follows git's config.c (sections [a], [a "sub"], [a.b];
 * names of letters, digits and '-'; values with quotes, the escapes \\ \"
 * \n \t \b, a backslash at the end of a line joining the next, comments
 * after # or ; outside quotes). It is pure and bounded; a text it cannot
 * read fails (git refuses such a file too: "bad config line"), so the
 * caller fails closed. Fuzzed by tests/fuzz/fuzz-git-config.c. */

#include <stdbool.h>
#include <stddef.h>

#define GIT_CONFIG_MAX_BYTES (1u << 20) /* a bigger config is refused */
/* So is one whose keys repeat more than this of their sections' names
 * (every key holds its section's: a long one over many keys would make
 * the parse quadratic); a real config repeats a few KiB. */
#define GIT_CONFIG_MAX_KEY_BYTES (8u << 20)

/* fn(key, value, ctx) for each variable: key "section.name" or
 * "section.subsection.name" ("name" alone before any section, as git
 * reads it), section and name in lower case, the
 * subsection as written; value NULL for a name without "=" (git's
 * boolean true). fn returns a negative errno to stop. 0, the first
 * negative fn returned, or -EINVAL with *ret_line (may be NULL) the line
 * that could not be read, or -E2BIG with *ret_line the first key past
 * GIT_CONFIG_MAX_KEY_BYTES. */
typedef int (*GitConfigFn)(const char *key, const char *value, void *ctx);
int git_config_parse(const char *text, size_t len, GitConfigFn fn, void *ctx, unsigned *ret_line);

/* The keys whose value names a file or directory git reads or runs from
 * (the list above); *ret_dir: a directory (hooksPath), *ret_include: a
 * config to read in turn. */
bool git_config_names_path(const char *key, bool *ret_dir, bool *ret_include);

/* The keys whose value is a command line git runs (core.fsmonitor,
 * core.sshCommand, core.pager, core.editor, diff.external, diff/merge/
 * filter drivers, credential helpers, gpg.program, a remote's uploadpack,
 * difftool/mergetool commands, aliases, ...): a word of it that is a path
 * inside the workspace names a program the jail could rewrite. */
bool git_config_names_program(const char *key);
