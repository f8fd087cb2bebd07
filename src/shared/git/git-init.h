/* SPDX-License-Identifier: MIT */
#pragma once

/* git_init = true: the workspace's repository is made on the host before
 * the jail starts, so the jail starts with a real repository whose control
 * files (git-control.h) are read-only like any other's. Left to the jail,
 * `git init` made a repository whose config and hooks it could write until
 * the daemon noticed the new .git and ended the jail: a race, lost at
 * times, and the host's git then ran what was planted. No git runs for it:
 * a git run on the path .git followed a symlink another jail put there
 * meanwhile and wrote its files, as the owner or as root, wherever that
 * led. */

#include "error.h"
#include "host-make.h"

/* Makes workspace/.git when it is missing or an empty directory (the
 * read-only placeholder git_init = false leaves) with exactly what `git
 * init --template=` makes (HEAD, config, objects/{info,pack},
 * refs/{heads,tags}), each entry created exclusively relative to a held
 * descriptor and never through a symlink, owned by the workspace's owner
 * when the caller is root. Leaves anything else alone (a repository, a .git
 * file, a symlink, a non-empty .git without HEAD: git-control.h protects or
 * seals those). Anything that appears in .git meanwhile, or .git swapped
 * for something else, refuses the start (-ESTALE). A caller that is not
 * root and may not create .git there gets 0 and no repository: the jail,
 * running as this same uid with less, cannot create one either. 0 when
 * there is a repository now or none may be made, else a negative errno
 * with err set. maker (host-make.h; NULL: this process) makes the entries
 * when .git lies below its workspace, each new, in the same order. */
int git_repo_make(const char *workspace, const VsHostMaker *maker, VsError **err);
