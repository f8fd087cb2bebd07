/* SPDX-License-Identifier: MIT */
#pragma once

/* A backend as the policy knows it: its name, what it can do, and its own
 * [sandbox.NAME] settings. Nothing outside a backend's own files branches
 * on which backend a policy names: it asks the definition (a capability
 * below, or a hook). The table and its lookups are the host's
 * (src/core/backends/backend.h); the host side of a backend (the launch,
 * what a failed start means) is its VsBackendOps
 * (src/core/backends/backend-ops.h).
 *
 * Pure: no OS calls; the definitions are static and never change. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

typedef struct VsPolicy VsPolicy;
typedef struct KeyDef KeyDef;

typedef struct VsBackendDef {
        const char *name; /* backend = "NAME"; the settings table is [sandbox.NAME] */

        /* Capabilities. */
        /* The jail sees this host's files at their real paths, through the
         * jail plan's mounts: its protected paths are this host's, and the
         * repositories it makes in the writable paths are swept here. */
        bool host_files;
        /* network = [...]: the daemon's proxy socket reaches the jail (a
         * mount), where the worker relays it to 127.0.0.1. */
        bool has_proxy;
        /* The jail is planned on another host (its masks walked, its
         * protected placeholders made there): this host notes the
         * protected paths once the worker is ready, not before. */
        bool remote_plan;
        /* The started process is the jail itself, on this host (bwrap): it
         * ends at once when killed, and its stdin need not be closed first
         * for it to clean up. */
        bool needs_bwrap;

        /* [sandbox.NAME]: an object of config_size bytes, made for the
         * policy's backend (defaults by config_init, then the keys), owned by
         * the policy (config_done, then free). No keys: no table. */
        size_t config_size;
        const KeyDef *keys;
        size_t n_keys;
        int (*config_init)(void *cfg);
        void (*config_done)(void *cfg);
        /* The rules between keys (e.g. an image is required), located at
         * [sandbox] (line, col) with config_error(). */
        int (*config_check)(const void *cfg, unsigned line, unsigned col, VsError **err);
        /* One line for `vectora-sandbox check` (after the backend's name),
         * and the settings as JSON (the policy's NAME object). */
        char *(*config_describe)(const void *cfg);
        json_t *(*config_json)(const void *cfg);
} VsBackendDef;
