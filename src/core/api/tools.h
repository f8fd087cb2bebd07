/* SPDX-License-Identifier: MIT */
#pragma once

/* Tool semantics shared by the daemon and the CLI's embedded mode. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "launch.h"
#include "session.h"

/* file_edit: replaces old_text by new_text in content. Refused
 * (-ENOENT kind "edit_not_found") when old_text does not occur, and
 * (-ENOTUNIQ kind "edit_not_unique") when it occurs more than once and
 * replace_all is false; old_text must be non-empty. Pure. */
int tool_edit_apply(const char *content, size_t len, const char *old_text, const char *new_text, bool replace_all,
                    char **ret, size_t *ret_len, size_t *ret_count, VsError **err);

/* The policy serving dir (approval.h): the workspace governing it, and
 * its file's policy or, while a loosening waits for approval, the approved
 * one. *ret_dir (may be NULL): dir canonicalized. *ret_pending (may be
 * NULL): what waits for `vectora-sandbox allow`, else NULL. */
int tools_load_policy(const char *dir, VsPolicy **ret, char **ret_dir, char **ret_pending, VsError **err);

/* Loads the workspace's policy, prepares and starts its worker (embedded
 * mode: one worker for one action). A refused config comes back with kind
 * "config_invalid"; a backend that cannot start, "sandbox_unavailable"; an
 * unsandboxed workspace under require_sandbox, "sandbox_required" (nothing
 * started). *ret_pending (may be NULL): as tools_load_policy's.
 * allowlist_offline: under network = [...] the jail starts without a
 * network instead of being refused (VsLaunchOptions). */
int tools_open(const char *workspace, bool require_sandbox, bool allowlist_offline, VsPolicy **ret_policy,
               VsSession **ret_session, char **ret_pending, VsError **err);
/* Every path the policy's masks cover now (absolute, sorted), from the
 * same walk the jail plan makes: a session kept alive between calls (the
 * MCP server without a daemon) compares it before each call and starts a
 * new worker when a masked path appeared since its own. An unsandboxed
 * policy has none. */
int tools_masked_now(const VsPolicy *p, char ***ret, VsError **err);

/* The result's "sandbox" object (api-result.h) of an in-process call (the
 * CLI without a daemon, the MCP server without one) that session s, started
 * for policy p, served: its state, backend and layers, and as degraded the
 * worker's own list plus the memory limit, which only a root daemon's
 * cgroup holds per workspace (in-process it is RLIMIT_DATA per process), as a
 * daemon without cgroups says. generation: which of the caller's workers
 * it was. New reference; NULL on OOM. */
json_t *tools_embedded_sandbox(const VsSession *s, const VsPolicy *p, uint64_t generation);
