/* SPDX-License-Identifier: MIT */
#pragma once

/* The ssh backend: the worker on a remote host over `ssh -T`.
 *
 * The started command is the local launcher (vectora-worker --ssh-launch),
 * which runs ssh with the protocol on its stdin/stdout. The remote command
 * checks the deployed worker's sha256 and exits 97 without a byte on stdout
 * when it differs; the launcher then uploads the worker (atomic rename on
 * the remote) and runs ssh once more. On the remote the worker starts as
 * `vectora-worker --launch-jail POLICY`: it walks the masks there and execs
 * bubblewrap with itself as the jailed worker, or runs alone (degraded,
 * refused under lockdown) where the remote has no bubblewrap.
 *
 * Everything here is pure (no OS calls) and unit-tested. */

#include <stdbool.h>

#include "policy.h"
#include "json-util.h"

/* [sandbox.ssh] (backend-ssh-config.c: apart, so that the remote
 * launcher, which links this file, carries no config parser). */
typedef struct VsSshConfig {
        char *host;
        char *user;
        unsigned port;
        char *identity_file;
        char *known_hosts;
        char *remote_root;
        char *worker_path;
} VsSshConfig;

extern const VsBackendDef backend_ssh_def;

/* The remote command's exit status when the deployed worker's hash differs. */
#define VS_SSH_EXIT_DEPLOY 97

/* A workspace path on the remote: the workspace root itself maps to
 * remote_root, a path below it to remote_root/REST, any other path stays
 * as it is. remote_root NULL: unchanged. NULL on OOM. */
char *backend_ssh_map_path(const char *workspace, const char *remote_root, const char *path);
/* The same for every path of a strv (NULL in, empty out). */
int backend_ssh_map_strv(const char *workspace, const char *remote_root, char *const *in, char ***ret);

/* What the remote launcher gets, as JSON in hex (the remote login shell may
 * be any shell: hex needs no quoting). Borrowed strings. */
typedef struct VsRemoteJail {
        const char *workspace;    /* remote path */
        char **rw, **ro;          /* remote paths */
        char **mask;              /* patterns (relative globs) */
        char **protected_paths;   /* remote paths */
        char **protect;           /* protect globs (relative, as mask) */
        bool git_init;            /* a missing root .git may be made */
        char **env;               /* "K=V" */
        bool network, no_gpu, lockdown;
} VsRemoteJail;

int backend_ssh_jail_encode(const VsRemoteJail *j, char **ret_hex);
/* Decodes into *ret; strings and vectors borrow from *ret_obj, which the
 * caller keeps alive and releases with json_decref() after
 * backend_ssh_jail_done(). */
int backend_ssh_jail_decode(const char *hex, VsRemoteJail *ret, json_t **ret_obj, VsError **err);
void backend_ssh_jail_done(VsRemoteJail *j);

/* The remote commands (one `/bin/sh -c '...'` word each). worker_path is
 * absolute or "~/..." and may only hold [A-Za-z0-9._/+-]; sha256 is 64 hex. */
int backend_ssh_run_command(const char *worker_path, const char *sha256, const char *jail_hex, char **ret, VsError **err);
int backend_ssh_upload_command(const char *worker_path, const char *sha256, char **ret, VsError **err);

/* `ssh -T -o BatchMode=yes -o StrictHostKeyChecking=yes ... -- HOST` (the
 * remote command is appended by the caller). */
int backend_ssh_ssh_argv(const VsSshConfig *c, char ***ret);

/* The full command: LAUNCHER --ssh-launch LOCAL_WORKER UPLOAD_CMD -- SSH... HOST RUN_CMD. */
int backend_ssh_argv(const VsSshConfig *c, const char *local_worker, const char *sha256, const VsRemoteJail *j,
                     char ***ret_argv, VsError **err);
