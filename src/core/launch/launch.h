/* SPDX-License-Identifier: MIT */
#pragma once

/* Everything needed to start one workspace's worker, computed from a
 * policy: the backend command line, the identity to run it as, and the
 * contents of the worker's `init` message (seccomp program, Landlock
 * directories, masks, protected paths, environment). Used alike by the
 * daemon and by the CLI's embedded mode. */

#include <stdbool.h>
#include <sys/types.h>

#include "backend-local.h"
#include "config.h"
#include "seccomp.h"

/* Why a command cannot run without the daemon under network = [...]. */
#define LAUNCH_ALLOWLIST_NEEDS_DAEMON                                                                              \
        "network = [...] is served by the daemon's proxy: run the command through vectora-sandboxd (start it, or " \
        "set VECTORA_SANDBOX_SOCKET), or use network = false"

typedef struct VsLaunchOptions {
        const char *worker_path; /* host path of the static worker */
        const char *bwrap;       /* NULL: "bwrap" from PATH */
        const char *runtime_dir; /* where the empty mask file/dir live (created if needed) */
        const char *runtime_root; /* the daemon's whole runtime directory (its instances, proxies, CA bundles), or NULL */
        /* How many workers this caller started for the workspace before
         * (0: the first). Backends whose workers have names (docker)
         * alternate between two so a draining worker is not removed by its
         * successor's start. */
        uint64_t instance;
        /* Host path of the workspace's network proxy socket (the daemon's);
         * NULL: none, and a policy with a network allowlist is refused
         * (LAUNCH_ALLOWLIST_NEEDS_DAEMON), unless allowlist_offline. */
        const char *proxy_socket;
        /* NAME=placeholder for each of sandbox.secrets (the daemon's
         * proxy_secrets_renew), added to the jail's environment with the
         * proxy variables; NULL: none. */
        char *const *secret_env;
        /* With secret_env: the host file of the jail's trust bundle (the
         * system CAs and the workspace's CA, proxy-ca.h), bound read-only
         * at the system path and VS_JAIL_CA_BUNDLE. */
        const char *ca_bundle;
        /* A network allowlist without proxy_socket starts a jail with no
         * network at all: for a caller that serves only file tools with it
         * and refuses commands (the MCP server without a daemon). */
        bool allowlist_offline;
        /* The caller's state directory (approval_store_dir()): the jail's
         * persistent home and git identity live below it (jail-home.h);
         * NULL: a tmpfs home and no identity file. */
        const char *state_dir;
        /* The daemon's walk cache (walk-cache.h); NULL: none. */
        struct WalkCacheUse *walk_cache;
        /* Who makes what the host puts in the workspace before the jail
         * (host-make.h: a root daemon's monitor), or NULL: this process. */
        const struct VsHostMaker *maker;
        /* When the first jail of this workspace that this process started
         * began (CLOCK_REALTIME_COARSE, taken before its spawn); zero: none
         * yet. A masked link the plan would refuse, made since in a
         * writable path, is put aside instead (jail-plan.h
         * jail_facts_collect), listed in put_aside. */
        struct timespec links_since;
        /* The listed paths of the caller's other workspaces, or NULL
         * (jail-plan.h VsLinkAside). */
        char *const *seen_by_others;
        /* Where a start that fails after putting links aside leaves them
         * (may be NULL: dropped); on success they are put_aside's. */
        struct VsPutAsides **put_aside_out;
        /* A root-owned workspace's idmapped trees are made by whoever
         * starts the jail (a root daemon's monitor): their paths are
         * recorded, their descriptors left -EBADF (launch_idmap_prepare()
         * makes them for a start of the caller's own). */
        bool idmap_later;
} VsLaunchOptions;

typedef struct VsLaunch {
        bool sandboxed;   /* false: direct mode, the worker runs on the host as the caller */
        /* The repositories under the writable paths when the plan was made
         * (git-scan.h), for whoever sweeps what the jail adds; owned. */
        struct VsGitRepos *git_base;
        char **argv;      /* program and arguments to exec */
        /* argv[0] (bwrap) starts as pid 1 of a pid namespace of its own
         * (local backend): SIGKILL of it, or the starter's death (its
         * parent-death signal), ends the whole jail at once, even one whose
         * inner bwrap is still setting up. */
        bool own_pid_ns;
        bool switch_user; /* drop to uid/gid before exec (the caller is root) */
        uid_t uid;
        gid_t gid;

        /* init message */
        char *workspace;
        char **rw_paths, **ro_paths;
        char **mask;
        char **protected_paths;
        char **protect; /* the policy's protect globs (the file tools refuse what they name) */
        char **verify_empty;    /* the plan's masks: the worker checks them before ready */
        char **verify_readonly; /* the plan's protected mounts: likewise */
        /* The plan's masked and protected directories reached from their
         * writable root without a symlink: mount points in the jail, which
         * it can neither write below nor move, so no repository there is
         * its doing (git-watch.c). NULL without a plan. */
        char **sealed_dirs;
        /* Masked links put aside by the plan (links_since, host-aside.h);
         * NULL when none. The caller reports them. */
        struct VsPutAsides *put_aside;
        char **env;          /* "K=V" */
        const char *proxy_socket; /* in the jail (VS_JAIL_PROXY_SOCKET) when the relay runs; NULL: none */
        void *bpf;           /* NULL: seccomp degraded (see degraded) */
        size_t bpf_len;
        VsSeccompOptions seccomp; /* what bpf was compiled for */
        char **landlock_rw;  /* directories writable under Landlock */
        bool require_seccomp, require_landlock;
        uint64_t timeout_ms, max_output;
        uint64_t pids, memory;

        /* Local backend (jail-home.h): host paths bound at VS_JAIL_HOME and
         * (read-only) VS_JAIL_GITCONFIG; NULL: a tmpfs home, no identity. */
        char *home_dir, *git_config;

        char **degraded;     /* human-readable degradations known before start */
        char **notes;        /* what a remote backend will create, for `plan` (may be NULL) */
        size_t n_masked;     /* masked paths mounted over */
        VsJailPlan *plan;    /* what the jail sees (local, docker); NULL for ssh (planned on the remote), modal, direct */

        /* Backends other than local. */
        char **pre_argv;     /* run to completion before argv, its outcome ignored (docker: remove a leftover container); NULL: none */
        char *missing_hint;  /* what to install when argv[0] is not found; NULL: bubblewrap's hint */
        const char *backend_name; /* "local", "docker", "ssh", ... (static); "direct" unsandboxed */
        const VsBackendDef *backend; /* NULL unsandboxed (direct) */

        /* Root-owned workspace under a root caller: idmapped trees
         * (detached, CLOEXEC) attached over idmap_paths in the child's own
         * mount namespace by worker_spawn(); closed once the jail runs. */
        bool idmapped;
        int *idmap_fds;
        char **idmap_paths;
        size_t n_idmap;
        /* This jail's own mask sources (jail-plan.h jail_own_sources),
         * removed once it holds its mounts, with the idmapped trees. */
        char *mask_sources;

        /* Borrowed, set by the caller before worker_spawn(): open
         * cgroup.procs files the child joins (writes "0" to) before it
         * execs, so the whole jail is counted from its first process. */
        int cgroup_fds[2];
        size_t n_cgroup_fds;
        /* Borrowed, set by the root monitor: a seccomp program (the setid
         * guard, seccomp.h) the child loads after no_new_privs, before
         * its exec, so that the whole jail runs under it. NULL: none. */
        const void *guard_bpf;
        size_t guard_len;
} VsLaunch;

/* Computes the launch for a loaded policy. Refuses (kind
 * "sandbox_unavailable") what cannot be run safely, e.g. lockdown with
 * libseccomp missing, or a root-owned workspace when the caller is root. */
int launch_prepare(const VsPolicy *p, const VsLaunchOptions *o, VsLaunch **ret, VsError **err);

/* The seccomp program for the ids the worker reported in hello (the ids
 * chown may give: seccomp.h), replacing l's when they differ from those it
 * was compiled for; -1 (unknown): a program that refuses every chown. No-op
 * when seccomp is degraded. */
int launch_seccomp_for_ids(VsLaunch *l, int64_t uid, int64_t gid, VsError **err);

void launch_free(VsLaunch *l);
/* The protected paths as this host's paths (a backend with host_files:
 * local, docker), else NULL (ssh's are the remote's, Modal's the
 * sandbox's). Borrowed. */
char *const *launch_host_paths(const VsLaunch *l);
/* Makes the idmapped trees launch_prepare() left to the starter
 * (VsLaunchOptions.idmap_later): each recorded path opened again from /
 * without following a link. */
int launch_idmap_prepare(VsLaunch *l, VsError **err);
/* Call once the jail is started: closes the idmapped trees and removes
 * the mask sources (the jail's mount namespace holds them). Idempotent. */
void launch_release_staging(VsLaunch *l);
/* Once the worker is ready: drops what only the start needed (argv, init
 * contents, the BPF copy), keeping sandboxed, backend_name and degraded. A
 * long-lived daemon holds one launch per idle workspace. */
void launch_trim(VsLaunch *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsLaunch *, launch_free);
