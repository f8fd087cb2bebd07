/* SPDX-License-Identifier: MIT */
#pragma once

/* Protected names that do not exist yet. A jail must not be able to create
 * one (a .claude/settings.json whose hooks then run on the host, an .envrc
 * direnv evaluates), but none of the jail's layers can refuse one name:
 * a bind mount needs a mount point, Landlock grants or denies whole
 * hierarchies, seccomp cannot read paths. So the host makes the name
 * first, as something the tool that reads it takes for absent or for an
 * empty valid configuration (protect-defaults.c says which, per name); it
 * then exists, and the jail plan seals it read-only like any protected
 * path that exists (jail-plan.h). A tool's configuration directory is
 * protected whole, so a missing file in it needs no placeholder of its own.
 *
 * Only names a glob spells out can be made: "X" and "**" "/X" name X at a
 * writable root in the workspace, "a/b" names a/b there; a glob with a wildcard names
 * nothing that could be made in advance, nor does a name at some depth
 * below a directory the jail creates. Those are reported when created
 * (host_run_files) and sealed at once by the daemon's watch.
 *
 * The placeholders stay: the host may have started using them (a tool
 * writes settings into a .vscode it finds), so removing them is not known
 * to be safe. docs/config.md lists them.
 *
 * Reusable for any protected name (a .git control file is one too,
 * git-control.h): protect_absent_make() makes one placeholder. */

#include <stdbool.h>

#include "policy.h"
#include "error.h"
#include "host-make.h"
#include "protect-defaults.h"

/* The path below a root that glob names literally ("X" for "X" and
 * "**" "/X", "a/b" for "a/b" and "/a/b"), or NULL in *ret when it has a
 * wildcard. *ret owned. */
int protect_literal(const char *glob, char **ret);

/* What stands in for literal when missing: the default table's row for it
 * (or for its last component), else an empty directory (a user's own name:
 * git does not list an empty directory, and a tool opening it fails as on
 * a missing file). */
VsAbsent protect_absent_kind(const char *literal, const char **ret_content);

/* The tool configuration directory on literal's way (".vscode" of
 * ".vscode/tasks.json", "sub/.claude" of "sub/.claude/commands/x.md"): the
 * first component, not the last, that a default row protects whole at any
 * depth. Its row, and the length of literal's prefix naming it in
 * *ret_len; or NULL. */
const VsProtectDefault *protect_tool_dir(const char *literal, size_t *ret_len);

/* Makes root/rel where it is missing: the missing directories above it
 * (plain, 0755), then rel itself as kind says, each reached from root
 * without following a symlink, created exclusively, owned like its parent
 * (the daemon may be root). 1 when made; 0 when something is there
 * already (that is protected in its own right), or when a component is a
 * symlink or no directory (nothing can be created below it), or kind is
 * VS_ABSENT_REPORT; else a negative errno. A maker (host-make.h; NULL:
 * this process) makes what lies below its workspace, by the same rules. */
int protect_absent_make(const char *root, const char *rel, VsAbsent kind, const char *content, const VsHostMaker *maker);

#define VS_ABSENT_MAX_LINKS 16

/* Where root/rel lies once each symlink on its way (the last component
 * included) is read, never followed: its text, read in the directory
 * reached (without a link) that holds it, taken lexically, must lead
 * below root, its ".." only at its start. 1 with *ret, that path relative
 * to root (rel itself when no link is on its way; what stands at it is
 * left to the caller's walk); 0 when it leads to root itself; -EXDEV
 * when a link leads out of root, *ret then the absolute path it leads to
 * (lexically); -ELOOP when a link's text climbs after a name (what it
 * climbs out of may itself be a link, which the kernel would follow) or
 * more than VS_ABSENT_MAX_LINKS were read; another negative errno.
 * *links (may be NULL): each link read, absolute, appended once, also
 * on -EXDEV and -ELOOP. */
int protect_absent_resolve(const char *root, const char *rel, char **ret, char ***links);
/* The same, where a link leading out of root is first read through the
 * host's own links on its way (chase_path, no link followed inside root
 * or untrusted: the trees a jail writes, NULL-terminated or NULL): a text
 * written through an alias of the workspace leads into it; -ELOOP when
 * that meets a link inside those trees. */
int protect_absent_resolve_in(const char *root, const char *rel, char *const *untrusted, char **ret, char ***links);

/* Every literal protect glob of p at every writable root in the
 * workspace (the workspace itself, or a listed path below it): its placeholder
 * where missing. A missing name inside a tool's configuration directory
 * (".vscode/tasks.json" of a user's list) takes no placeholder of its
 * own: that directory is sealed whole (made first where missing, as its
 * default row says), and listed in *ret_sealed (may be NULL), since the
 * user's glob does not name it. Where this process may not create
 * something and is not root, the jail (the same uid, with less) may not
 * either: not an error. *ret_made (may be NULL): the absolute path of each
 * placeholder or directory that was missing and may have been made (with
 * missing directories above it), for the masks (mask_walk_made). also
 * (n_also items, may be NULL): more for a batching maker to make in the
 * same batch, ahead of these (the git controls' placeholders); what the
 * batch does not make of them is the caller's to make. A name reached
 * through symlinks below its root (a dangling .envrc -> cfg/envrc,
 * "sub/.mcp.json" with sub -> real) is made where they lead
 * (protect_absent_resolve), that path added to *ret_sealed, and the links
 * read to *ret_links (may be NULL; absolute, once each). */
int protect_absent_fill(const VsPolicy *p, const VsHostMaker *maker, const VsHostItem *also, size_t n_also,
                        char ***ret_sealed, char ***ret_made, char ***ret_links, VsError **err);

/* The paths the protect globs name now below the writable roots (the
 * jail's walk, through symlinked directories too, nothing made): each as
 * "PATH", or "PATH -> TARGET" where it resolves elsewhere (the target is
 * what the jail seals). Sorted; for `vectora-sandbox check`. */
int protect_matches_describe(const VsPolicy *p, char ***ret, VsError **err);
