/* SPDX-License-Identifier: MIT */
#pragma once

/* The docker backend: the `docker run -i` command line that starts one
 * workspace's worker in a container on a Docker engine.
 *
 * backend_docker_argv() is pure, like backend_local_argv(): it renders the
 * same jail plan (jail-plan.h) as --mount options; the GPU nodes and the
 * ids come in through VsDockerEnv. The engine must see the same files as
 * this host (a local engine, or one sharing the workspace's filesystem):
 * paths are bind-mounted at their real paths. */

#include <sys/types.h>

#include "backend-local.h"
#include "config.h"

/* [sandbox.docker] */
typedef struct VsDockerConfig {
        char *image;
        char *docker; /* client binary */
        char *host;   /* DOCKER_HOST, or NULL */
} VsDockerConfig;

extern const VsBackendDef backend_docker_def;

/* "vectora-" + the first 16 hex digits of sha256(workspace): stable across
 * daemon restarts, so a new daemon removes what an earlier one left. */
#define VS_DOCKER_NAME_PREFIX "vectora-"
int backend_docker_name(const char *workspace, char **ret);

typedef struct VsDockerEnv {
        /* The engine's client and its global options ("docker --host H",
         * "podman --root R"), and the image: NULL for the docker backend's
         * own (its settings). Another OCI engine with docker's command line
         * renders through the same function with its own. */
        char *const *client;
        const char *image;
        /* The private home's owner as the engine's tmpfs option spells it:
         * NULL for docker's "uid=U,gid=G"; podman's is "U" (the --user). */
        const char *home_owner;
        /* The engine's own options of `run` (podman's --userns), after the
         * common ones, or NULL. */
        char *const *run_options;
        const char *worker_path;  /* host path of the static worker */
        const char *name;         /* container name (backend_docker_name) */
        uid_t uid;                /* --user (never 0) */
        gid_t gid;
        const VsJailPlan *plan;   /* what the jail sees (jail-plan.h), rendered as --mount */
        char **gpu_nodes;         /* existing GPU device nodes (used when no_gpu = false) */
        const char *proxy_socket; /* host path of the daemon's proxy socket (network allowlist), or NULL */
        const char *ca_bundle;    /* host file of the jail's CA bundle, mounted read-only at VS_JAIL_CA_BUNDLE, or NULL */
} VsDockerEnv;

/* Builds `CLIENT run -i --rm --name N ... IMAGE` with the worker as the
 * entrypoint. Borrows p and env; *ret_argv is owned by the caller.
 * Refuses uid/gid 0 and paths docker's --mount syntax cannot carry. */
int backend_docker_argv(const VsPolicy *p, const VsDockerEnv *env, char ***ret_argv, VsError **err);

/* The docker backend's client: `docker [--host H]`. *ret owned by the caller. */
int backend_docker_client(const VsPolicy *p, char ***ret);

/* `CLIENT rm -f NAME`: removes a leftover container before a start.
 * *ret_argv owned by the caller. */
int backend_docker_rm_argv(char *const *client, const char *name, char ***ret_argv);
/* `CLIENT rm -f` of every name the workspace's containers may have had
 * (the base name and both alternates): what an earlier daemon left. */
int backend_docker_rm_all_argv(char *const *client, const char *base, char ***ret_argv);

/* One --mount value: type=bind,source=S,target=T[,readonly], with fields
 * quoted as docker's CSV parser expects when they hold ',' or '"'. NULL on
 * OOM. */
char *backend_docker_mount(const char *source, const char *target, bool readonly);
