/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Every process of the tree under root, sorted by pid, from
 * /proc/PID/task/TID/children (a pid namespace is a tree, so nothing is
 * seen twice); ret_threads (optional): their threads, which is what
 * RLIMIT_NPROC and a pids cgroup count. Returns the count of processes,
 * -ESRCH when root is gone, -E2BIG past 2^20 processes. */
int proc_tree_pids(pid_t root, pid_t **ret, size_t *ret_threads);

/* Whether any of the n processes runs or waits to (state R, or D: in the
 * kernel uninterruptibly) now, from each one's /proc/PID/stat; a process
 * gone meanwhile does not. */
bool procs_any_active(const pid_t *pids, size_t n);
