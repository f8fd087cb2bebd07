/* SPDX-License-Identifier: MIT */
#pragma once

/* Idmapped mounts for root-owned workspaces served by a root daemon: the
 * jail runs as an unprivileged uid, and the workspace is shown to it
 * through a mount whose files owned by uid/gid 0 appear (and are created)
 * as that uid/gid, while staying owned by root on disk. Needs root and a
 * filesystem that supports idmapped mounts (ext4, xfs, btrfs, tmpfs >= 6.3). */

#include <sys/types.h>

#include "error.h"

/* The unprivileged identity a root-owned workspace is served as: a
 * dedicated uid/gid, not nobody (65534), so that no other process on the
 * host (every daemon runs things as nobody) shares the jail's identity.
 * No account should use it. */
#define VS_IDMAP_UID 2147483646
#define VS_IDMAP_GID 2147483646

/* Clones the mount tree at srcfd (borrowed: an O_PATH descriptor the
 * caller resolved without following links; src names it in errors) and
 * idmaps it (0 -> uid/gid), detached: *ret_fd is the new tree, attached by
 * worker_spawn() over src inside the jail's own mount namespace only
 * (idmap_attach()), so no other process can ever reach it. */
int idmap_prepare_fd(int srcfd, const char *src, uid_t uid, gid_t gid, int *ret_fd, VsError **err);
/* A user namespace whose idmapping shows owner/group (as files have them
 * on disk) as uid/gid: a descriptor of it, for idmap_view (one per
 * mapping serves every view of that owner: each namespace counts against
 * the caller's max_user_namespaces). */
int idmap_userns(uid_t owner, gid_t group, uid_t uid, gid_t gid, VsError **err);
/* A read-only view of the tree at srcfd (borrowed, as above; mounts below
 * it included), idmapped with userns (idmap_userns's, borrowed), for a
 * process of its uid/gid without root's file rights: what owner/group own
 * on disk it sees as its own (owner's rights, its directories' 0700 no
 * bar), everything else as nobody's (others' rights only); nothing
 * written, no setuid, no device, nothing run through it. *ret_view is an
 * O_PATH descriptor of its root, a mount in a namespace of its own
 * (*ret_ns, which keeps it: close both to let it go) owned by a user
 * namespace of its own, so its flags are locked: a process that makes a
 * user namespace of its own to administer mounts can neither clear them
 * nor clone the view (a detached mount it could: attack review 7). Fails
 * where a file system in the tree cannot be idmapped, and -ETIMEDOUT when
 * the child that makes it does not answer in deadline_ms (it waits in the
 * kernel while another process holds /tmp): then killed, and *ret_held is
 * its pid (0: already reaped), for the caller to reap once it ends. */
int idmap_view(int srcfd, const char *src, int userns, int deadline_ms, pid_t *ret_held, int *ret_view, int *ret_ns,
               VsError **err);
/* Async-signal-safe, for the child between fork and exec (still root):
 * a private mount namespace, with each tree attached over its path, which
 * must lead, without a symlink or "..", to the very directory the tree is
 * a clone of (chase_beneath from /: -EXDEV otherwise, -ELOOP for a link on
 * the way). A
 * negative errno, errno set too. */
int idmap_attach(const int *fds, char *const *paths, size_t n);
