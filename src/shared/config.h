/* SPDX-License-Identifier: MIT */
#pragma once

/* vectora.toml -> a typed, validated sandbox policy.
 *
 * Two steps, so the first is unit-testable without privileges:
 *   config_parse()    pure: TOML text -> VsPolicy with paths as written
 *                     (rule 2: any unknown key, wrong type, unknown backend,
 *                     bad glob or bad path refuses, with "vectora.toml:L:C:").
 *   config_resolve()  touches the OS: resolves rw/ro paths against the
 *                     workspace root and $HOME, canonicalizes them, and
 *                     applies lockdown's rules (rule 5).
 * config_load() does both for a workspace directory (rule 1: no file or no
 * [sandbox] table -> unsandboxed). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "backend.h"
#include "error.h"
#include "net-policy.h"

#define VS_CONFIG_FILE "vectora.toml"

typedef struct VsLimits {
        uint64_t timeout_s;  /* per command */
        uint64_t max_output; /* bytes kept per stream */
        uint64_t pids;       /* processes in the jail */
        uint64_t memory;     /* bytes */
        uint64_t background_timeout_s; /* per background process; 0 = none */
} VsLimits;

/* A path as written in vectora.toml, where, and what it resolved to. */
typedef struct VsPath {
        char *written;
        unsigned line, col;
        char *resolved; /* canonical absolute path; NULL before resolve or when missing */
        bool missing;   /* did not exist (ignored unless lockdown, which refuses) */
} VsPath;

/* ports = [3000, "8080:80"]: host loopback port -> port on the jail's loopback. */
typedef struct VsPortForward {
        uint16_t host, jail;
        unsigned line, col;
} VsPortForward;

#define CONFIG_MAX_PORTS 64

typedef struct VsPolicy {
        char *workspace;   /* canonical absolute workspace root */
        char *config_path; /* workspace/vectora.toml */
        bool sandboxed;
        char *unsandboxed_reason; /* when !sandboxed: why */

        const VsBackendDef *backend; /* never NULL in a parsed policy (backend.h) */
        void *backend_config;        /* backend->config_size bytes, or NULL: [sandbox.NAME] */
        VsPath *rw_paths;
        size_t n_rw;
        VsPath *ro_paths;
        size_t n_ro;
        char **mask; /* patterns, validated */
        /* protect = [...]: globs read-only in the jail and refused by the
         * file tools (VS_PROTECT_DEFAULT when the key is absent), on top
         * of vectora.toml and the .git control files, which always are. */
        char **protect;
        /* mask and protect compiled, once per policy (policy_compile_sets):
         * every host-side user borrows these (a watch keeps a reference,
         * glob_set_ref) instead of compiling the patterns again. NULL: no
         * patterns. host_run_set: what the host runs later (the default
         * protect names, the protect globs, any .git), for host_run_files. */
        bool sets_compiled;
        struct VsGlobSet *mask_set, *protect_set, *host_run_set;
        /* git_init = true: a missing root .git may be created in the jail
         * (else it is a read-only empty directory there). */
        bool git_init;
        bool no_gpu;
        bool lockdown;
        bool network; /* effective: the host's network shared; forced false under lockdown */
        /* network = [..]: the jail keeps its empty namespace (network is
         * false) and reaches only these through the daemon's proxy. Cleared
         * under lockdown. An empty list is an allowlist that allows nothing. */
        bool net_allowlist;
        VsNetRule *net_rules;
        size_t n_net_rules;
        uint64_t idle_timeout_s;
        /* Forwarded ports: the daemon listens on 127.0.0.1:host and relays
         * each connection to 127.0.0.1:jail inside the jail's own network
         * namespace (so only with network = false or an allowlist). */
        VsPortForward *ports;
        size_t n_ports;
        VsLimits limits;

        /* Identity of the file the policy came from (for cheap change checks). */
        struct stat config_stat;
        bool has_config_stat;
} VsPolicy;

/* Where relative and ~ paths resolve. Borrowed strings. */
typedef struct VsConfigEnv {
        const char *workspace; /* absolute */
        const char *home;      /* absolute, or NULL (then ~ paths are refused) */
} VsConfigEnv;

/* Pure. text need not be NUL-terminated. On failure returns a negative errno
 * and *err is "vectora.toml:LINE:COL: ..." with kind "config_invalid". A
 * document without [sandbox] (or enabled = false) yields an unsandboxed
 * policy. */
int config_parse(const char *text, size_t len, const VsConfigEnv *env, VsPolicy **ret, VsError **err);

/* Resolves p->rw_paths/ro_paths in place (realpath), applying lockdown. */
int config_resolve(VsPolicy *p, VsError **err);

/* Reads DIR/vectora.toml (DIR canonicalized first), parses and resolves. A
 * missing file is an unsandboxed policy, not an error. */
int config_load(const char *workspace_dir, VsPolicy **ret, VsError **err);
/* The same, also handing out the exact bytes read (NUL-terminated; NULL
 * when there is no file), so what is approved is what was parsed. */
int config_load_text(const char *workspace_dir, VsPolicy **ret, char **ret_text, size_t *ret_len, VsError **err);
/* Parses and resolves text as the vectora.toml of workspace (canonical). */
int config_from_text(const char *workspace, const char *text, size_t len, VsPolicy **ret, VsError **err);

/* The workspace root governing dir: the nearest ancestor (dir included)
 * holding a vectora.toml of any file type, as git finds its repository;
 * without one anywhere above, dir itself. *ret_root and *ret_dir (may be
 * NULL) are canonical absolute paths; *ret_dir is dir canonicalized. */
int config_locate(const char *dir, char **ret_root, char **ret_dir, VsError **err);
/* The same, where writable (NULL-terminated canonical paths, or NULL) are
 * the listed writable paths of sandboxed workspaces outside them: a jail
 * writes there too, so a link met in one that leads out of it is refused
 * like one in a workspace (`-w /srv/shared/escape`, the agent's
 * `escape -> /`). */
int config_locate_beneath(const char *dir, char *const *writable, char **ret_root, char **ret_dir, VsError **err);

/* protect's default: .envrc, .vscode/tasks.json and settings.json,
 * .mcp.json, .claude/settings.json and settings.local.json. */
extern const char *const VS_PROTECT_DEFAULT[];

/* Protected paths (absolute): the config file and .git control files of the root .git. */
int config_protected_paths(const VsPolicy *p, char ***ret);

void policy_free(VsPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsPolicy *, policy_free);

/* The one compile of the policy's patterns (mask_set, protect_set,
 * host_run_set), done by config_parse() for a sandboxed policy and by
 * whoever builds a policy by hand. -ENOMEM, or the pattern's error. */
int policy_compile_sets(VsPolicy *p, VsError **err);
/* Releases what policy_compile_sets() made (for a policy built by hand). */
void policy_sets_done(VsPolicy *p);
/* 0 when p's sets may be used; a sandboxed policy whose patterns were not
 * compiled is refused (-EINVAL), so a missed compile never reads as "no
 * masks". */
int policy_sets_check(const VsPolicy *p, VsError **err);

/* "2G", "512M", "1024" -> bytes. -EINVAL/-ERANGE. */
int parse_size(const char *s, uint64_t *ret);
