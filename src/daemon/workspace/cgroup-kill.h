/* SPDX-License-Identifier: MIT */
#pragma once

/* Ending what a cgroup holds, and sweeping an instance's groups
 * (cgroup-kill.c): the daemon's and the root monitor's. */

#include <stdbool.h>

/* SIGKILL to every process in the group dirfd until it is empty (cgroup v2
 * kills in one step), waiting (about two seconds at most) when wait is
 * set, else one pass. Whether it is empty. */
bool cgroup_kill_at(int dirfd, bool wait);
/* The same for the group at path (cgroupfs: the instance's own groups). */
bool cgroup_kill_path(const char *group, bool wait);
/* Removes the workspace groups ("ws-*") and the unsandboxed workers' group
 * ("host") under parent (an instance's group), killing what runs in them
 * first when kill is set (as cgroup_kill_at). Whether every group went. */
bool cgroup_sweep(const char *parent, bool kill, bool wait);
/* What the root monitor does once the daemon's process is gone (any way,
 * SIGKILL included): every process left in the instance's groups (the
 * workspaces' and the unsandboxed workers') killed, the groups removed;
 * 300 ms in all at most, what is still there then (a process stuck in the
 * kernel) left to the next start's sweep. parents: the instance's groups
 * as cgroup_probe made them (a copy). */
void cgroup_instance_end(char *const parents[2]);
