/* SPDX-License-Identifier: MIT */
#pragma once

/* The local backend: the bubblewrap command line that starts a worker.
 *
 * backend_local_argv() is pure: every fact about the host (which system
 * directories exist, GPU nodes, the masked paths found by the walk, ids)
 * comes in through VsLocalEnv, gathered by backend_local_probe() and the
 * caller. That keeps the policy -> argv mapping unit-testable. */

#include <sys/types.h>

#include "config.h"

/* Where the static worker appears inside the jail. */
#define VS_JAIL_WORKER_PATH "/run/vectora/vectora-worker"
/* The jail's private home (a tmpfs). */
#define VS_JAIL_HOME "/home/sandbox"

typedef struct VsMaskPath {
        char *path; /* absolute host path */
        bool dir;
} VsMaskPath;

typedef struct VsSymlink {
        char *target; /* e.g. "usr/bin" */
        char *path;   /* e.g. "/bin" */
} VsSymlink;

/* A listed path as the backends mount it. Borrowed path. */
typedef struct VsBind {
        const char *path;
        bool rw;
} VsBind;

/* The rw_paths and ro_paths (resolved ones) at their real paths, plus the
 * workspace read-only when no listed path covers it (rw_paths = [] makes a
 * read-only workspace), parents before children. Shared by every backend
 * that mounts paths (local, docker). *ret is malloc'd; paths borrowed. */
int backend_binds(const VsPolicy *p, VsBind **ret, size_t *ret_n);

/* The directories to pin (bind onto themselves): every directory strictly
 * between the rw root holding a protected or masked path and that path. The
 * kernel refuses to rename or remove a mount point (EBUSY), so the jail
 * cannot move .git aside (taking the read-only .git/hooks mount with it)
 * and plant a fresh hooks directory, nor move a masked file's parent out
 * from under a mask anchored to its path. Under a read-only root nothing
 * can be moved anyway. Sorted shallowest first; *ret owned (never NULL). */
int backend_pins(const VsBind *binds, size_t nb, char *const *protected_existing, const VsMaskPath *masks,
                 size_t n_masks, char ***ret);

/* Walks every resolved rw/ro root with the mask patterns (relative to
 * each root) and returns the existing paths to mount over, absolute;
 * symlinks are left out (a mount would follow them; their targets are
 * masked in their own right if they match). Touches the file system. The
 * caller frees each path and the array. Used by every backend that mounts
 * masks, on this host or (the remote launcher) on another. */
int backend_collect_masks(const VsPolicy *p, VsMaskPath **ret, size_t *ret_n, VsError **err);

/* A bind whose source differs from its destination (an idmapped
 * staging mount shown at the real path). */
typedef struct VsBindSource {
        const char *dest;
        const char *src;
} VsBindSource;

typedef struct VsLocalEnv {
        const char *bwrap;       /* bwrap binary */
        const char *worker_path; /* host path of the static worker */
        const char *empty_file;  /* host path of an empty read-only file */
        const char *empty_dir;   /* host path of an empty read-only directory */
        uid_t uid;               /* ids the jail runs as (never 0) */
        gid_t gid;
        char **system_dirs;      /* existing system directories to bind read-only */
        VsSymlink *symlinks;     /* merged-/usr links to recreate (/bin -> usr/bin) */
        size_t n_symlinks;
        char **gpu_nodes;        /* existing GPU device nodes */
        const VsMaskPath *masks; /* existing paths to mask, from the walk */
        size_t n_masks;
        char **protected_existing; /* protected paths that exist (ro-bound) */
        char **env;              /* "K=V" for the worker (after --clearenv) */
        const VsBindSource *bind_sources; /* overrides for rw/ro binds, by destination */
        size_t n_bind_sources;
} VsLocalEnv;

/* Builds the bwrap argv (argv[0] = env->bwrap, ending with the worker
 * path inside the jail). Borrows p and env; *ret_argv is owned by the caller. */
int backend_local_argv(const VsPolicy *p, const VsLocalEnv *env, char ***ret_argv, VsError **err);

/* Fills the host facts of env (system_dirs, symlinks, gpu_nodes) from the
 * running system. Owned by env; release with backend_local_env_done(). */
int backend_local_probe(VsLocalEnv *env, VsError **err);
void backend_local_env_done(VsLocalEnv *env);

/* The minimal allowlisted environment of the jail ("K=V" strv): PATH, HOME,
 * USER, LOGNAME, SHELL, TERM, LANG, TMPDIR. Nothing of the caller's leaks. */
int backend_local_jail_env(const char *user, char ***ret);

/* Quotes argv for display (shell-style single quotes where needed). */
char *argv_quote(char *const *argv);
