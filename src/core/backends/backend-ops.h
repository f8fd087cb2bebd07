/* SPDX-License-Identifier: MIT */
#pragma once

/* A backend on this host: how its worker is launched and what its failed
 * starts mean. The policy's half (name, capabilities, settings) is its
 * VsBackendDef (src/core/backends/backend.h); the table is
 * src/core/backends/backend-list.h. Nothing outside a backend's own files
 * (src/core/backends/backend-NAME.c, launch-NAME.c) branches on which
 * backend it is. */

#include "backend.h"
#include "launch.h"

typedef struct VsBackendOps {
        const VsBackendDef *def;
        /* Sets l->argv for the backend's isolation primitive (and what else
         * it needs: pre_argv, notes, missing_hint, own_pid_ns, ...). l's
         * init contents (paths, masks, env, seccomp, Landlock, limits,
         * identity) are filled, and, for a backend with host_files, the
         * jail plan (l->plan) is made. */
        int (*launch)(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, VsError **err);
        /* The backend's start-up errors (its stderr) as an actionable reason,
         * or NULL. */
        const char *(*diagnose)(const char *stderr_text);
} VsBackendOps;

/* The ops of a backend; never NULL for a definition of the table. */
const VsBackendOps *backend_ops(const VsBackendDef *def);

/* Turns a backend's stderr into an actionable reason, when it names a
 * known cause: def's own causes first, then the other backends' (an ssh
 * remote's bubblewrap says what the local one would). NULL otherwise. */
const char *backend_diagnose(const VsBackendDef *def, const char *stderr_text);
