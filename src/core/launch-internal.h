/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the per-backend halves of launch_prepare(). Each backend gets
 * a launch whose init contents (paths, masks, env, seccomp, Landlock,
 * limits, identity) are already filled, and sets l->argv (and whatever
 * else it needs) for its own isolation primitive. */

#include "backend-local.h"
#include "jail-plan.h"
#include "launch.h"

int launch_docker_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
int launch_ssh_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
int launch_modal_argv(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);

/* The jail plan (l->plan) from the policy and this host's facts: the
 * mask walk, the protected paths as they exist, the empty mount sources in
 * o->runtime_dir. Used by every backend that mounts (local, docker); the
 * ssh remote launcher builds the same plan on its host. */
int launch_plan(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
