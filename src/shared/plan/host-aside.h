/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "host-make.h"

/* Puts name in dir (absolute and canonical) aside while it is still the
 * entry dev/ino (dir_identity: the identity is dir's own, as a
 * repository's HEAD is noted by its directory): renamed beside it to
 * host_aside_name()'s NAME.vectora-quarantine[-N], never replacing
 * anything, never through a link (dir reached with chase_open_dir, the
 * rename relative to it). By the maker where it serves (below its
 * workspace: the root monitor, as the owner), else by this process.
 * *ret_moved (may be NULL): the new path. may_remove (a symlink only):
 * with every put-aside name taken (VS_ASIDE_TRIES), the entry is removed
 * instead, *ret_moved NULL. 0; -ESTALE when the entry is no longer there
 * or another; else a negative errno, *err saying why. */
int host_put_aside(const VsHostMaker *maker, const char *dir, const char *name, bool dir_identity, bool may_remove,
                   uint64_t dev, uint64_t ino, char **ret_moved, VsError **err);
