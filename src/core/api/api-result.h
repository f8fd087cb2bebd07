/* SPDX-License-Identifier: MIT */
#pragma once

/* The one result envelope of a daemon-API call (docs/protocol.md,
 * "Results"), whoever served it: the daemon, the embedded CLI or the MCP
 * server. Every result carries the same keys: ok, error (when not ok),
 * sandboxed, policy_pending, host_run_files, sandbox {backend, state,
 * layers, degraded, generation}. Pure: no OS calls. */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* How the call ran. Borrowed for the call of api_sandbox_json(). */
typedef struct VsApiSandbox {
        const char *state;     /* "sandboxed", "unsandboxed" or "refused" */
        const char *backend;   /* "none" unsandboxed; NULL (null) when refused before a backend was chosen */
        char **layers;         /* what was enforced (may be NULL: none) */
        char **degraded;       /* what was asked for and not enforced (may be NULL) */
        uint64_t generation;   /* which of the workspace's workers served it (0: none) */
} VsApiSandbox;

/* The "sandbox" object. New reference; NULL on OOM. */
json_t *api_sandbox_json(const VsApiSandbox *s);
/* The "sandbox" object of a call refused before any worker ran it. */
json_t *api_sandbox_refused(void);

/* Closes result o (stolen; NULL: an empty object): "ok" (code NULL),
 * "error" {code, message} when code is not NULL, "sandboxed",
 * "policy_pending" (pending or null), "host_run_files" (host_run, may be
 * NULL: [] when absent from o) and "sandbox" (stolen; NULL: refused). The
 * tool's own fields in o are kept. New reference; NULL on OOM (everything
 * stolen is released). */
json_t *api_result_close(json_t *o, const char *code, const char *message, bool sandboxed, const char *pending,
                         json_t *host_run, json_t *sandbox);
