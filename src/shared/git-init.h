/* SPDX-License-Identifier: MIT */
#pragma once

/* git_init = true: the workspace's repository is made on the host, by the
 * host's git, before the jail starts, so the jail starts with a real
 * repository whose control files (git-control.h) are read-only like any
 * other's. Left to the jail, `git init` made a repository whose config and
 * hooks it could write until the daemon noticed the new .git and ended
 * the jail: a race, lost at times, and the host's git then ran what was
 * planted. */

#include "error.h"

/* Makes workspace/.git with `git init` when it is missing or an empty
 * directory (the read-only placeholder git_init = false leaves), as the
 * workspace's owner when the caller is root. Leaves anything else alone
 * (a repository, a .git file, a symlink, a non-empty .git without HEAD:
 * git-control.h protects or seals those). The workspace and .git are
 * reached without following symlinks, and .git must still be the
 * directory git was run on afterwards. A caller that is not root and may
 * not create .git there gets 0 and no repository: the jail, running as
 * this same uid with less, cannot create one either.
 *
 * The git run is the first of VECTORA_GIT (an absolute path) and PATH's;
 * none is an error saying to install git or set git_init = false: never
 * the old race instead. 0 when there is a repository now or none may be
 * made, else a negative errno with err set. */
int git_repo_make(const char *workspace, VsError **err);
