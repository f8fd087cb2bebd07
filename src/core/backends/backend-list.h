/* SPDX-License-Identifier: MIT */
#pragma once

/* The backend table: every backend, once, in the order `backend = "..."`'s
 * error lists them. Adding a backend is one line here and its own files:
 * src/core/backends/backend-NAME.{c,h} (or, for a backend the worker
 * plans itself, src/shared/plan/backend-NAME.{c,h}) defines `backend_NAME_def` (its name,
 * capabilities and [sandbox.NAME] keys: what the policy must know, and the
 * pure rendering), src/core/backends/launch-NAME.c defines `backend_NAME_ops` (its
 * launch on this host and what its failures mean). Each layer expands the
 * list for its own half: src/core/backends/backend.c and src/core/backends/backend-ops.c. */
#define VS_BACKEND_LIST(X) \
        X(local)           \
        X(docker)          \
        X(ssh)             \
        X(modal)           \
        X(podman)
