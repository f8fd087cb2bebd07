/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora.toml -> a typed, validated sandbox policy.
 *
 * Two steps, so the first is unit-testable without privileges:
 *   config_parse()    pure: TOML text -> VsPolicy with paths as written
 *                     (rule 2: any unknown key, wrong type, unknown backend,
 *                     bad glob or bad path refuses, with "vectora.toml:L:C:").
 *   config_resolve()  touches the OS: resolves rw/ro paths against the
 *                     workspace root and $HOME, canonicalizes them, and
 *                     applies lockdown's rules (rule 5).
 * config_load() does both for a workspace directory (rule 1: no file or no
 * [sandbox] table -> unsandboxed). */

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "net-policy.h"
#include "policy.h"

/* Where relative and ~ paths resolve. Borrowed strings. */
typedef struct VsConfigEnv {
        const char *workspace; /* absolute */
        const char *home;      /* absolute, or NULL (then ~ paths are refused) */
} VsConfigEnv;

/* Pure. text need not be NUL-terminated. On failure returns a negative errno
 * and *err is "vectora.toml:LINE:COL: ..." with kind "config_invalid". A
 * document without [sandbox] (or enabled = false) yields an unsandboxed
 * policy. */
int config_parse(const char *text, size_t len, const VsConfigEnv *env, VsPolicy **ret, VsError **err);

/* Resolves p->rw_paths/ro_paths in place (realpath), applying lockdown. */
int config_resolve(VsPolicy *p, VsError **err);

/* Reads DIR/vectora.toml (DIR canonicalized first), parses and resolves. A
 * missing file is an unsandboxed policy, not an error. */
int config_load(const char *workspace_dir, VsPolicy **ret, VsError **err);
/* The same, also handing out the exact bytes read (NUL-terminated; NULL
 * when there is no file), so what is approved is what was parsed. */
int config_load_text(const char *workspace_dir, VsPolicy **ret, char **ret_text, size_t *ret_len, VsError **err);
/* Parses and resolves text as the vectora.toml of workspace (canonical). */
int config_from_text(const char *workspace, const char *text, size_t len, VsPolicy **ret, VsError **err);

/* The workspace root governing dir: the nearest ancestor (dir included)
 * holding a vectora.toml of any file type, as git finds its repository;
 * without one anywhere above, dir itself. *ret_root and *ret_dir (may be
 * NULL) are canonical absolute paths; *ret_dir is dir canonicalized. */
int config_locate(const char *dir, char **ret_root, char **ret_dir, VsError **err);
/* The same, where writable (NULL-terminated canonical paths, or NULL) are
 * the listed writable paths of sandboxed workspaces outside them: a jail
 * writes there too, so a link met in one that leads out of it is refused
 * like one in a workspace (`-w /srv/shared/escape`, the agent's
 * `escape -> /`). */
int config_locate_beneath(const char *dir, char *const *writable, char **ret_root, char **ret_dir, VsError **err);

/* Protected paths (absolute): the config file and .git control files of the root .git. */
int config_protected_paths(const VsPolicy *p, char ***ret);

void policy_free(VsPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsPolicy *, policy_free);

/* "2G", "512M", "1024" -> bytes. -EINVAL/-ERANGE. */
int parse_size(const char *s, uint64_t *ret);
