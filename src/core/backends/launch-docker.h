/* SPDX-License-Identifier: MIT */
#pragma once

/* The container launch of the docker backend, for any engine with
 * docker's command line (podman): one long-lived `CLIENT run -i`
 * container per workspace, named after it (backend_docker_name, two
 * alternating names), the jail plan as --mount options, a leftover
 * removed first. */

#include "backend-docker.h"
#include "backend-ops.h"

typedef struct VsContainerEngine {
        const char *backend;        /* "docker", for the plan's notes */
        char *const *client;        /* the client and its global options */
        const char *image;
        const char *home_owner;     /* VsDockerEnv.home_owner */
        char *const *run_options;   /* VsDockerEnv.run_options */
        /* The engine's --pids-limit holds (then the worker's RLIMIT_NPROC,
         * which counts the owner's processes host-wide, is not set). */
        bool engine_limits_pids;
        const char *missing_hint;   /* the client was not found */
} VsContainerEngine;

/* Sets l->argv, pre_argv, notes and missing_hint for engine e. Borrows e. */
int launch_container(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch *l, const VsContainerEngine *e,
                     VsError **err);
