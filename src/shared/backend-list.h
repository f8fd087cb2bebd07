/* SPDX-License-Identifier: MIT */
#pragma once

/* The backend table: every backend, once, in the order `backend = "..."`'s
 * error lists them. Adding a backend is one line here and its own files:
 * src/shared/backend-NAME.{c,h} defines `backend_NAME_def` (its name,
 * capabilities and [sandbox.NAME] keys: what the policy must know, and the
 * pure rendering), src/core/launch-NAME.c defines `backend_NAME_ops` (its
 * launch on this host and what its failures mean). Each layer expands the
 * list for its own half: src/shared/backend.c and src/core/backend-ops.c. */
#define VS_BACKEND_LIST(X) \
        X(local)           \
        X(docker)          \
        X(ssh)             \
        X(modal)           \
        X(podman)
