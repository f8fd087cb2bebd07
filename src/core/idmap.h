/* SPDX-License-Identifier: MIT */
#pragma once

/* Idmapped mounts for root-owned workspaces served by a root daemon: the
 * jail runs as an unprivileged uid, and the workspace is shown to it
 * through a mount whose files owned by uid/gid 0 appear (and are created)
 * as that uid/gid, while staying owned by root on disk. Needs root and a
 * filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs >= 6.3). */

#include <sys/types.h>

#include "error.h"

/* The unprivileged identity a root-owned workspace is served as. */
#define VS_IDMAP_UID 65534
#define VS_IDMAP_GID 65534

/* Clones the mount tree at src, idmaps it (0 -> uid/gid) and attaches it
 * at staging (created, must not exist). */
int idmap_stage(const char *src, uid_t uid, gid_t gid, const char *staging, VsError **err);
/* Detaches the staging mount (the jail keeps its own copy) and removes the
 * directory. Accepts NULL. */
void idmap_release(const char *staging);
