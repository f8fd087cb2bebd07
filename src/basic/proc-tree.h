/* SPDX-License-Identifier: MIT */
#pragma once

#include <sys/types.h>

/* Every process of the tree under root, root first then breadth first,
 * sorted by pid, from /proc/PID/task/TID/children (a pid namespace is a
 * tree, so nothing is seen twice). Returns the count, -ESRCH when root is
 * gone, -E2BIG past 2^20 processes. */
int proc_tree_pids(pid_t root, pid_t **ret);
