/* SPDX-License-Identifier: MIT */
#pragma once

/* gitignore-style globs for masks. Pure: no OS calls.
 *
 * Syntax: '*' any run of characters except '/', '?' one character except
 * '/', '[...]' a class ('!' or '^' negates, ranges a-z, '\' escapes), '\x'
 * a literal x, '**' as a whole path component matches zero or more
 * components. A pattern without '/' (other than a trailing one) matches the
 * name at any depth; a pattern with a '/' is anchored at the workspace root
 * (a leading '/' is allowed and means the same). A trailing '/' matches
 * directories only. Negation ('!pattern') is refused: a mask cannot be
 * un-masked. A match on a directory masks everything below it.
 *
 * Paths given to the matcher are relative to the workspace root, without a
 * leading "./" or "/", components separated by single '/'.
 *
 * Details, as in git's wildmatch unless said: matching is byte-wise and
 * case-sensitive; '*' matches a leading '.'; classes support [:alpha:] and
 * the other POSIX names (ASCII); a trailing '**' matches inside a directory,
 * not the directory itself. Unlike .gitignore, '#' and trailing spaces are
 * literal (a mask list holds one pattern per element). Also refused: '/'
 * inside a class, an empty range such as 'z-a', "//", and '/' alone.
 * Stray empty and "." components in a path are ignored; glob_set_masks()
 * treats a path with a ".." component as masked (fail closed). */

#include <stdbool.h>

#include "error.h"

#define GLOB_MAX_PATTERN 4096

typedef struct VsGlob VsGlob;

/* Compiles pattern. On failure returns -EINVAL and sets *err to
 * "column N: reason" (1-based byte column within the pattern). */
int glob_compile(const char *pattern, VsGlob **ret, VsError **err);
void glob_free(VsGlob *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsGlob *, glob_free);
const char *glob_pattern(const VsGlob *g);

/* Does the pattern match this exact path? */
bool glob_match(const VsGlob *g, const char *relpath, bool is_dir);
/* Could the pattern match relpath or anything below it (directory relpath)?
 * Used to prune walks; false only when nothing below can match. */
bool glob_could_match_below(const VsGlob *g, const char *reldir);

/* A set of compiled patterns. */
typedef struct VsGlobSet VsGlobSet;
int glob_set_new(char *const *patterns, VsGlobSet **ret, VsError **err); /* err: "mask[I]: column N: ...", I from 0 */
/* As glob_set_new, with the list named name in errors: "protect[I]: ...".
 * The sandbox's lists are compiled through mask_set_compile() (mask-walk.h). */
int glob_set_new_named(char *const *patterns, const char *name, VsGlobSet **ret, VsError **err);
/* A set is shared by reference (the policy's compiled sets: config.h);
 * glob_set_free() drops one, and frees the set with the last. Only one
 * thread changes the count. */
VsGlobSet *glob_set_ref(VsGlobSet *s);
void glob_set_free(VsGlobSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsGlobSet *, glob_set_free);
size_t glob_set_size(const VsGlobSet *s);
/* True if relpath, or any of its ancestors (as directories), is matched. */
bool glob_set_masks(const VsGlobSet *s, const char *relpath, bool is_dir);
bool glob_set_could_match_below(const VsGlobSet *s, const char *reldir);
/* A symlink at link_rel (a path below a root, a directory position) that
 * leads what the host writes below it elsewhere: whether some pattern is
 * live there at a position not live below every directory (`.ssh` under a
 * `.ssh` pattern, `deploy/prod` under `deploy/` + `*` + `/secrets.yaml`; never
 * under `**` "/" "*.pem", which matches by a file's own name wherever it
 * lands). An ancestor matched (masked whole) or dead: false. */
bool glob_set_link_matters(const VsGlobSet *s, const char *link_rel);
/* Whether every such position live at link_rel is live at target_rel too
 * (the target's path below the root holding it; NULL: outside every
 * root), so that whatever the host writes through the link is masked where
 * it lands. */
bool glob_set_link_covered(const VsGlobSet *s, const char *link_rel, const char *target_rel);

/* As glob_compile, for a pattern of len bytes that may hold NUL bytes
 * (refused with their column). */
int glob_compile_len(const char *pattern, size_t len, VsGlob **ret, VsError **err);

/* Incremental matching for walkers, so each directory entry costs one step
 * instead of a rescan of its whole path. A state is glob_set_state_size()
 * bytes owned by the caller; glob_set_state_init() gives the state of the
 * root. glob_set_step() computes into next the state of dir/name (name is
 * one component, len bytes, no '/') from the state of dir, sets
 * *ret_matched to whether dir/name itself is matched (is_dir as in
 * glob_match), and returns what glob_set_could_match_below(dir/name) would.
 * Ancestors are not rechecked: a walker stops at a matched directory. */
size_t glob_set_state_size(const VsGlobSet *s);
void glob_set_state_init(const VsGlobSet *s, unsigned char *state);
bool glob_set_step(const VsGlobSet *s, const unsigned char *state, const char *name, size_t len, bool is_dir,
                   unsigned char *next, bool *ret_matched);
