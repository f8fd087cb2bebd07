/* SPDX-License-Identifier: MIT */
#pragma once

/* worker-link.c's seam for unit tests (tests/unit/test-worker-link.c):
 * nothing else sets it. */

#include "worker-spawn.h"

/* How a prepared launch becomes a process: worker_spawn() unless a test
 * hands back one end of a socketpair (and a pid of 0, or a process of its
 * own) and plays the worker on the other. */
typedef int (*LinkSpawnFn)(const VsLaunch *l, VsWorkerProc *ret, VsError **err);
extern LinkSpawnFn link_spawn_fn;
