/* SPDX-License-Identifier: MIT */
#pragma once

/* The podman backend: docker's container jail (backend-docker.h) on
 * podman, the daemonless engine of Fedora and RHEL hosts, rootless where
 * the daemon runs as a user: the container's user namespace maps the
 * user's own uid to itself (--userns=keep-id), so the jail writes the
 * workspace as its owner, and the rest of the container's ids come from
 * the user's /etc/subuid range. No registry is ever asked (--pull never).
 *
 * Pure (no OS calls). */

#include <stdbool.h>

#include "config.h"

/* [sandbox.podman] */
typedef struct VsPodmanConfig {
        char *image;   /* a local image (podman load / podman import) */
        char *podman;  /* client binary */
        char *root;    /* podman --root (its storage), or NULL: podman's own */
        char *runroot; /* podman --runroot (its run state, with --tmpdir RUNROOT/tmp), or NULL */
} VsPodmanConfig;

extern const VsBackendDef backend_podman_def;

/* `podman [--root R] [--runroot RR --tmpdir RR/tmp]`. *ret owned by the caller. */
int backend_podman_client(const VsPodmanConfig *c, char ***ret);

/* podman's own options of `run`: --userns=keep-id when rootless, and with
 * network = true --network host (the host's network, as on the local
 * backend; network = false is the renderer's --network none). *ret owned
 * by the caller. */
int backend_podman_run_options(bool rootless, bool network, char ***ret);
