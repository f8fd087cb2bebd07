/* SPDX-License-Identifier: MIT */
#pragma once

/* The modal backend: the command line of the bridge (bridge/modal/bridge.mjs
 * under node) that creates a Modal Sandbox, puts the static worker into it
 * and joins the worker's stdin/stdout to its own, and the upload manifest it
 * reads.
 *
 * Everything here is pure: the host facts (node's path, the bridge's path,
 * the files found by the walk) come in through VsModalEnv and
 * VsModalManifest, gathered by src/core/backends/launch-modal.c. Credentials never
 * appear in either: the bridge takes them from Modal's own sources
 * (MODAL_TOKEN_ID/MODAL_TOKEN_SECRET or ~/.modal.toml). */

#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "strbuf.h"

/* [sandbox.modal] */
typedef struct VsModalConfig {
        char *app;
        char *image;
        uint64_t timeout_s;
        char *region;
        double cpu;          /* 0 = SDK default */
        uint64_t memory_mib; /* 0 = SDK default */
        char *sync;          /* "upload" | "volume" */
        char *volume;
} VsModalConfig;

extern const VsBackendDef backend_modal_def;

/* Where the static worker is put inside the Sandbox. */
#define VS_MODAL_WORKER_PATH "/run/vectora/vectora-worker"

/* What `upload` refuses to send (use sync = "volume" or narrow rw_paths). */
#define VS_MODAL_UPLOAD_MAX_FILES 20000u
#define VS_MODAL_UPLOAD_MAX_BYTES (512ull << 20)

/* The bridge's exit status when the Sandbox cannot be had (no credentials,
 * no network, Modal refused); its stderr says why (EX_UNAVAILABLE). */
#define VS_MODAL_EXIT_UNAVAILABLE 69

typedef struct VsModalEnv {
        const char *node;          /* absolute path of node */
        const char *bridge;        /* absolute path of bridge.mjs */
        const char *worker_path;   /* host path of the static worker */
        const char *manifest_path; /* upload manifest (sync = "upload"), or NULL */
} VsModalEnv;

typedef enum VsModalEntryKind {
        VS_MODAL_FILE,
        VS_MODAL_DIR,
        VS_MODAL_SYMLINK,
} VsModalEntryKind;

typedef struct VsModalEntry {
        char *path;   /* absolute host path (the same path inside the Sandbox) */
        VsModalEntryKind kind;
        mode_t mode;  /* permission bits */
        uint64_t size;
        char *target; /* symlinks: the link's text, never followed */
} VsModalEntry;

/* What `upload` sends: the existing entries below rw_paths/ro_paths that no
 * mask covers (masked files and everything below a masked directory are
 * absent), plus what the bridge needs to write changed files back safely. */
typedef struct VsModalManifest {
        char *const *rw_roots;        /* resolved rw_paths */
        char *const *ro_roots;        /* resolved ro_paths */
        char *const *protected_paths; /* never written back */
        const VsModalEntry *entries;
        size_t n_entries;
        size_t n_skipped;             /* names that are not UTF-8: not uploaded */
} VsModalManifest;

/* Builds the bridge argv: node, bridge, then one --key=value per Sandbox
 * parameter (the = form, so no value is ever read as an option). Refuses
 * app or volume names Modal would refuse (kind "config_invalid").
 * Borrows p and env; *ret_argv is owned by the caller. */
int backend_modal_argv(const VsPolicy *p, const VsModalEnv *env, char ***ret_argv, VsError **err);

/* Human-readable lines describing the Sandbox the bridge will create (for
 * `vectora-sandbox plan`). *ret is owned by the caller. */
int backend_modal_summary(const VsPolicy *p, const VsModalManifest *m, char ***ret);

/* Encodes the manifest as one JSON document (version 1, see
 * docs/modal.md). Entries whose path or link text is not valid UTF-8 must
 * have been left out by the caller (and counted in n_skipped): -EILSEQ. */
int backend_modal_manifest_encode(const VsModalManifest *m, StrBuf *out);

/* Modal's rule for App and Volume names: 1-64 of [A-Za-z0-9._-]. */
bool backend_modal_name_ok(const char *name);

void backend_modal_entries_free(VsModalEntry *e, size_t n);
