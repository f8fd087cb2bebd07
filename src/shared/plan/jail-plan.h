/* SPDX-License-Identifier: MIT */
#pragma once

/* One jail plan for every backend: what a jail sees, decided once.
 *
 * The plan is a pure description computed from a policy and a few facts
 * about the host (the paths the mask walk found, which protected paths
 * exist): the listed paths at their real paths, the directories pinned so
 * the jail cannot move a protected or masked path's parent aside, the
 * protected paths read-only, the masks (and missing protected paths) as
 * empty read-only files or directories, the environment and the limits.
 * Each backend only renders it: bwrap's argv (local, and the ssh remote
 * launcher on its host), docker's --mount list, the Modal manifest's
 * protected set. So no backend can protect less than another.
 *
 * jail_plan_build() is pure; jail_facts_collect() is the one place that
 * looks at the host for it (the same code on the daemon's host and, for
 * ssh, on the remote); it also makes the placeholders of missing .git
 * control files, so that they have a mount point (git-control.h). */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backend-local.h"
#include "backend-ssh.h"
#include "host-make.h"
#include "policy.h"

typedef enum VsMountKind {
        VS_MOUNT_RW,      /* a listed rw path */
        VS_MOUNT_RO,      /* a listed ro path, or the workspace when nothing listed covers it */
        VS_MOUNT_PIN,     /* a directory bound onto itself: the kernel refuses to rename a mount point */
        VS_MOUNT_PROTECT, /* a protected path that exists, read-only */
        VS_MOUNT_MASK,    /* an empty read-only file or directory over a masked or missing protected path */
} VsMountKind;

typedef struct VsJailMount {
        VsMountKind kind;
        char *dest;     /* absolute path in the jail, which is also its host path */
        char *src;      /* host source: dest itself, or the empty file/dir */
        bool dir;       /* masks: an empty directory (else an empty file) */
        bool protects;  /* masks: stands for a missing protected path */
} VsJailMount;

struct WalkCacheUse;

/* What the host says, gathered by jail_facts_collect(). */
typedef struct VsJailFacts {
        VsMaskPath *masks;          /* existing masked paths (symlinks left out: a mount would follow them) */
        size_t n_masks;
        char **protected_existing;  /* protected paths that exist; a symlinked one by its target */
        VsMaskPath *protected_missing; /* missing protected paths whose parent directory exists */
        size_t n_missing;
        char **git_controls;        /* every .git control path found (git-control.h), existing or not */
        char **protect_matches;     /* existing paths the protect globs name below the rw paths */
        struct VsGitRepos *git_base; /* the repositories under the rw paths (git-scan.h), owned */
        struct VsPutAsides *put_aside; /* masked links put aside (links_since), host-aside.h */
} VsJailFacts;

typedef struct VsJailPlan {
        char *workspace;
        VsJailMount *mounts;     /* in mount order: listed paths (parents first), pins, protected, masks */
        size_t n_mounts;
        char **protected_paths;  /* every protected path of the policy and .git control path (existing or not) */
        char **env;              /* "K=V" of the jail */
        bool network, no_gpu, lockdown;
        VsLimits limits;
        size_t n_masked;         /* masked paths found by the walk */
} VsJailPlan;

/* Builds the plan. Pure: borrows p and f; copies env, protected_paths and
 * the empty sources. A symlinked protected path is protected at its target
 * only when the target lies below a listed path (elsewhere the jail does
 * not see it at all, and a mount would expose it). */
int jail_plan_build(const VsPolicy *p, char *const *protected_paths, const VsJailFacts *f, const char *empty_file,
                    const char *empty_dir, char *const *env, VsJailPlan **ret);
void jail_plan_free(VsJailPlan *plan);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsJailPlan *, jail_plan_free);

/* The paths the plan makes read-only and empty (protected and masked
 * destinations), sorted; for comparing renderings. *ret owned. */
int jail_plan_sealed(const VsJailPlan *plan, char ***ret);

/* ---- host-touching: the facts, the empty sources ---------------------- */

/* Walks every listed root with the mask patterns (compiled here, once),
 * looks at each protected path and finds the .git control files, making
 * the placeholders of missing ones below the rw paths. Touches the file
 * system. */
/* The workspace when the jail sees it through no listed path (rw_paths =
 * [] or only subdirectories: it is mounted read-only), else NULL. It is a
 * root for the masks like a listed one: a jail that sees it must not see
 * what the masks cover there. */
const char *jail_plan_uncovered_workspace(const VsPolicy *p);
/* Where the jail sees path (canonical) through: the listed path holding it
 * innermost, or the workspace seen for want of one (read-only), or NULL
 * (the jail does not see it). *ret_writable (may be NULL): whether that is
 * a writable listed path (at equal length a read-only one wins, as the
 * worker's path_listed_writable() says; config refuses a path in both
 * lists anyway). The one form of that rule for the plan, the link rules
 * and the daemon's watch. */
const char *jail_plan_seen_through(const VsPolicy *p, const char *path, bool *ret_writable);

/* Which masked links a start puts aside instead of refusing them
 * (jail_facts_collect). */
typedef struct VsLinkAside {
        /* Changed (ctime, CLOCK_REALTIME_COARSE) at or after it; zero:
         * none is put aside. */
        struct timespec since;
        /* The listed paths of the caller's other workspaces (a daemon's;
         * NULL: none known): a missing target in this workspace's own tree
         * that lies in one is put aside too, not refused, since the host's
         * write would create it where their jails read it (attack review
         * 10). */
        char *const *seen_by_others;
} VsLinkAside;

/* also_seen: host directories the jail sees besides the listed paths,
 * where no mask is mounted (the kept home, bound elsewhere): a masked link
 * leading there refuses the start. cache: the daemon's walk cache
 * (walk-cache.h), or NULL. maker: who
 * makes what the host puts in the workspace (host-make.h), or NULL: this
 * process. aside (may be NULL): a masked link the start would refuse
 * (its target cannot be masked where the jail sees it), in a writable
 * listed path, changed at or after aside->since, is put aside instead (host-aside.h; the link and where it went in
 * put_aside): a jail of the workspace could have made it since, and left
 * on disk it leads the host's writes where another workspace's jail reads
 * them (attack review 5). On failure *ret holds only what was put aside
 * (jail_facts_done it either way). */
int jail_facts_collect(const VsPolicy *p, char *const *protected_paths, char *const *also_seen,
                       struct WalkCacheUse *cache, const VsHostMaker *maker, const VsLinkAside *aside,
                       VsJailFacts *ret, VsError **err);
void jail_facts_done(VsJailFacts *f);

/* The one plan builder every launch uses (the local and container
 * backends', the modal upload's, the ssh remote launcher's): this host's
 * facts for p (jail_facts_collect: the masks walked with the policy's
 * compiled sets, the protected paths as they exist) made into the plan
 * (jail_plan_build). empty_file/empty_dir: the mask sources ("" when
 * nothing is mounted). *ret_git_base (may be NULL): the repositories the
 * facts found under the writable paths (git-scan.h), owned.
 * *ret_put_aside (may be NULL): the masked links put aside (aside),
 * owned, also when the start is refused (a later link's refusal, a walk's
 * error: what was renamed is reported all the same). */
int jail_plan_make(const VsPolicy *p, char *const *protected_paths, char *const *also_seen, const char *empty_file,
                   const char *empty_dir, char *const *env, struct WalkCacheUse *cache, const VsHostMaker *maker,
                   const VsLinkAside *aside, VsJailPlan **ret, struct VsGitRepos **ret_git_base,
                   struct VsPutAsides **ret_put_aside, VsError **err);

/* Creates (if needed) the empty read-only file and directory that masks
 * are mounted from, in dir, shared by every jail started from there (the
 * ssh remote launcher's, which hands its process to bwrap). */
int jail_empty_sources(const char *dir, char **ret_file, char **ret_dir, VsError **err);
/* One jail's own mask sources: a new directory in dir (*ret_holder,
 * masks-XXXXXX) holding an empty read-only file and directory, removed
 * with jail_own_sources_remove once the jail holds its mounts. A host
 * process that writes through a masked symlink the jail made (a root
 * user's editor at `.env -> <runtime>/empty-file`) then finds no file
 * every running jail's masks are bound from: an attack review filled one
 * so. */
int jail_own_sources(const char *dir, char **ret_holder, char **ret_file, char **ret_dir, VsError **err);
void jail_own_sources_remove(const char *holder);

/* The ssh remote launcher's plan, on the remote host: the listed paths
 * resolved there (a missing one skipped, or refused under lockdown, as is
 * a symlinked one), then the same facts and the same builder as the
 * daemon's host. Borrows j. */
int jail_plan_remote(const VsRemoteJail *j, const char *empty_file, const char *empty_dir, VsJailPlan **ret,
                     VsError **err);
