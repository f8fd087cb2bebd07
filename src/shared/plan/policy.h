/* SPDX-License-Identifier: MIT */
#pragma once

/* The sandbox policy as the worker and the host both read it: what a
 * parsed vectora.toml says (src/core/config/config.h parses it on the
 * host; the worker's remote plan and the jail plan read the same type).
 * Types and the compiled pattern sets only: parsing, validation and
 * freeing are the host's (config.h). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "backend-def.h"
#include "error.h"
#include "net-rule.h"

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
        /* When missing: the absolute path it names, normalized but not
         * resolved (where it would be, were it made now: the daemon's
         * other workspaces count it as listed, worker-link.c), or where it
         * resolved to while that waits for approval. NULL otherwise. */
        char *lexical;
} VsPath;

/* Where vp is, or would be: resolved, else lexical (NULL: neither). */
static inline const char *vs_path_where(const VsPath *vp) {
        return vp->resolved ? vp->resolved : vp->lexical;
}

/* ports = [3000, "8080:80"]: host loopback port -> port on the jail's loopback. */
typedef struct VsPortForward {
        uint16_t host, jail;
        unsigned line, col;
} VsPortForward;

#define CONFIG_MAX_PORTS 64

typedef struct VsSecretUse {
        char *name;
        unsigned line, col;
} VsSecretUse;

#define CONFIG_MAX_SECRETS 32

/* [[sandbox.http]]: the requests the proxy lets through to one host it
 * sees in the clear ("METHOD /path/glob" each; http-rules.h). */
typedef struct VsHttpRule {
        char *host; /* normalized: lower case */
        char **allow;
        size_t n_allow;
        unsigned line, col;
} VsHttpRule;

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
        /* While a change of vectora.toml waits for approval (the approved
         * policy serves): the absolute paths the change lists (resolved,
         * else where they would be), which a jail of this workspace binds
         * once it is allowed; the daemon's other workspaces count them as
         * listed (worker-link.c). NULL otherwise. */
        char **pending_listed;
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
        /* persistent_home = true (the default): the jail's home is kept per
         * workspace under the state directory (jail-home.h), else a tmpfs. */
        bool persistent_home;
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
        /* secrets = ["NAME", ...]: host-held secrets (secret-store.h) the
         * jail sees as placeholders; the proxy puts the value in requests
         * to the secret's hosts only. Needs a network allowlist. */
        VsSecretUse *secrets;
        size_t n_secrets;
        /* [[sandbox.http]]: one entry a host; a host listed needs a secret
         * (the proxy intercepts its HTTPS) or plain HTTP to be reached. */
        VsHttpRule *http;
        size_t n_http;
        VsLimits limits;

        /* Identity of the file the policy came from (for cheap change checks). */
        struct stat config_stat;
        bool has_config_stat;
        /* When its bytes had been read (CLOCK_REALTIME, as the file's
         * times): config_stat is the file as it was then, so "unchanged
         * for N ms before it was read" is config_read_at minus its times,
         * whatever the parse took after (approval.c, first sight). */
        struct timespec config_read_at;
} VsPolicy;

/* protect's default: .envrc, .vscode/tasks.json and settings.json,
 * .mcp.json, .claude/settings.json and settings.local.json. */
extern const char *const VS_PROTECT_DEFAULT[];

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
