/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the per-backend halves of launch_prepare(). Each backend gets
 * a launch whose init contents (paths, masks, env, seccomp, Landlock,
 * limits, identity) are already filled, and sets l->argv (and whatever
 * else it needs) for its own isolation primitive. */

#include "backend-local.h"
#include "launch.h"

int launch_docker_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
int launch_ssh_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
int launch_modal_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);

/* The protected paths (vectora.toml, .git/hooks, .git/config) as mounts:
 * *ret_existing lists the existing ones to bind read-only (a symlinked one
 * by its target); missing ones inside an existing .git are appended to
 * *masks as empty read-only files/dirs, so the agent cannot create them. */
int launch_protected_mounts(const VsLaunch *l, char ***ret_existing, VsMaskPath **masks, size_t *n_masks);
/* Creates (if needed) the empty read-only file and directory that masks
 * are mounted from, in dir. */
int launch_ensure_runtime(const char *dir, char **ret_file, char **ret_dir, VsError **err);
