/* SPDX-License-Identifier: MIT */
#pragma once

/* The .git control files of a workspace: what git executes or obeys
 * (config, config.worktree, hooks/, info/{attributes,exclude,sparse-checkout,
 * grafts}, commondir, remotes/, branches/,
 * objects/info/alternates, a worktree's gitdir link, the .git file itself)
 * as opposed to the state git writes in ordinary work (objects, refs,
 * logs, index, HEAD, ORIG_HEAD, FETCH_HEAD, packed-refs, *.lock, ...).
 *
 * Git writes its state by creating NAME.lock in the same directory and
 * renaming it over NAME, so .git/ itself stays writable in the jail; a
 * control file is sealed by a read-only bind mount over its own name, and
 * a missing one by a placeholder made on the host first (a mount needs a
 * mount point): empty, except commondir, whose placeholder says "." (this
 * same directory: git reads an empty one as an error). With every control
 * name taken, the jail can neither write one nor create a new one.
 *
 * The gitdirs looked at: the workspace's .git (a directory, or a file
 * saying "gitdir: PATH", resolved on the host, relative to the workspace,
 * without following a symlinked .git file); the common directory a
 * commondir file names; every submodule gitdir under modules/; every
 * linked worktree's admin directory under worktrees/; every repository
 * below the workspace root the host has (git-scan.h: a nested clone, a
 * submodule's .git file, a bare one); and what the config files of all of
 * these, and the host user's global and system config, name
 * (git-config.h: core.hooksPath, include.path, includeIf.*.path,
 * core.attributesFile, core.excludesFile), read-only where it exists, its
 * first missing ancestor a placeholder where it does not. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "host-make.h"

typedef struct VsGitControl {
        char *path;          /* absolute */
        bool dir;            /* a directory (hooks/, info/, ...) */
        bool placeholder;    /* may be made when missing */
        const char *content; /* a placeholder file's content (static) */
} VsGitControl;

typedef struct VsGitControls {
        VsGitControl *items;
        size_t n;
        char *error; /* why, when git_controls_collect() failed with -EBADMSG */
} VsGitControls;

/* Reads the host (lstat, readdir, the .git file and commondir with
 * O_NOFOLLOW, at most a few KiB each); changes nothing. A missing root
 * .git, or one that is not a repository yet (no HEAD), is itself the one
 * control path (a directory, read-only whole: `git init` in the jail
 * cannot make a repository the host later trusts). With git_init = true
 * the repository is made on the host first (git-init.h), so the jail
 * finds one and this protects its control files. A config file that
 * cannot be read fails it (-EBADMSG, ret->error says which line): what
 * it names could not be protected. */
int git_controls_collect(const char *workspace, VsGitControls *ret);
/* The same with the repositories below the root taken from scan (a
 * git_scan() of the tree, git-scan.h) instead of a walk of its own. */
struct VsGitRepos;
int git_controls_collect_scan(const char *workspace, const struct VsGitRepos *scan, VsGitControls *ret);
void git_controls_done(VsGitControls *c);

/* Makes a missing control file's placeholder: its parent reached without
 * following symlinks, created O_EXCL / mkdirat, owned by the parent's
 * owner and read-only. 0 when made or already there. maker
 * (host-make.h; NULL: this process) makes one below its workspace. */
int git_control_make_placeholder(const VsGitControl *c, const VsHostMaker *maker, VsError **err);
/* What maker would be asked to make for c's placeholder (its rel points
 * into c->path): 1, 0 when c is not maker's to make (outside its
 * workspace, or no maker), -EINVAL for a text the table has not. */
int git_control_item(const VsGitControl *c, const VsHostMaker *maker, VsHostItem *ret);
