/* SPDX-License-Identifier: MIT */
#pragma once

/* The local backend: the bubblewrap command line that starts a worker.
 *
 * backend_local_argv() is pure: it renders a jail plan (jail-plan.h: the
 * mounts, masks, protected paths and environment, decided once for every
 * backend) plus the facts about the host that only bwrap needs (system
 * directories, GPU nodes, ids), gathered by backend_local_probe(). */

#include <sys/types.h>

#include "policy.h"

/* No settings table: bubblewrap from PATH (or VECTORA_BWRAP). */
extern const VsBackendDef backend_local_def;

/* Where the static worker appears inside the jail. */
#define VS_JAIL_WORKER_PATH "/run/vectora/vectora-worker"
/* Network allowlist: the daemon's proxy socket as the jail sees it, and
 * the port the worker's relay listens on at 127.0.0.1 inside the jail. */
#define VS_JAIL_PROXY_SOCKET "/run/vectora/proxy.sock"
/* The trust bundle with the workspace's CA (secrets over HTTPS), and the
 * system file it is also bound over when the host has one. */
#define VS_JAIL_CA_BUNDLE "/run/vectora/ca-bundle.pem"
#define VS_SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"
#define VS_JAIL_PROXY_PORT 3128
/* The jail's private home (a tmpfs). */
#define VS_JAIL_HOME "/home/sandbox"

typedef struct VsSymlink {
        char *target; /* e.g. "usr/bin" */
        char *path;   /* e.g. "/bin" */
} VsSymlink;

/* An existing path to mask (or a missing protected path), absolute. */
typedef struct VsMaskPath {
        char *path;
        bool dir;
} VsMaskPath;

typedef struct VsJailPlan VsJailPlan;

typedef struct VsLocalEnv {
        const char *bwrap;       /* bwrap binary */
        const char *worker_path; /* host path of the static worker */
        uid_t uid;               /* ids the jail runs as (never 0) */
        gid_t gid;
        char **system_dirs;      /* existing system directories to bind read-only */
        VsSymlink *symlinks;     /* merged-/usr links to recreate (/bin -> usr/bin) */
        size_t n_symlinks;
        char **gpu_nodes;        /* existing GPU device nodes */
        const VsJailPlan *plan;  /* what the jail sees (jail-plan.h): rendered, never changed */
        const char *proxy_socket; /* host path of the daemon's proxy socket (network allowlist), or NULL */
        const char *home_dir;     /* host directory bound at VS_JAIL_HOME; NULL: a tmpfs */
        const char *git_config;   /* host file bound read-only at git_config_dest, or NULL */
        const char *git_config_dest;
        const char *ca_bundle;    /* host file bound read-only at VS_JAIL_CA_BUNDLE, or NULL */
        bool ca_over_system;      /* and over VS_SYSTEM_CA_FILE (the host has that file) */
} VsLocalEnv;

/* The host's system directories a local jail binds read-only at their own
 * paths (those that exist; a link among them is recreated as a link),
 * NULL-terminated. */
extern const char *const vs_local_system_dirs[];

/* Renders the plan as the bwrap argv (argv[0] = env->bwrap, ending with
 * the worker path inside the jail). Borrows p and env; *ret_argv is owned by the caller. */
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
