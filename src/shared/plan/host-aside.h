/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "macro.h"
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

/* Masked links a start put aside (jail-facts.c, links_since), in the order
 * it met them: each link's path and where it went, or moved NULL when it
 * was removed (its put-aside names all taken). Handed from the plan to the
 * launch to the session (or the daemon's worker link), which reports it. */
typedef struct VsPutAside {
        char *link;
        char *moved;
} VsPutAside;

typedef struct VsPutAsides {
        size_t n;
        VsPutAside v[];
} VsPutAsides;

/* Appends (link, moved) to *list, made when NULL; moved may be NULL. */
int put_asides_add(VsPutAsides **list, const char *link, const char *moved);
void put_asides_free(VsPutAsides *list);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsPutAsides *, put_asides_free);
