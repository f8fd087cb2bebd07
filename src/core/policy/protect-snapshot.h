/* SPDX-License-Identifier: MIT */
#pragma once

/* What the protected paths of a workspace were when its jail started.
 * The jail makes them read-only with bind mounts over those inodes; a host
 * program that renames a new file over one (editors, git's lockfiles)
 * detaches that mount in the jail, which then sees the new file through
 * its writable workspace. Comparing a snapshot taken before the jail
 * started with the paths now says when the jail must be ended. The daemon
 * (protect.c) and the CLI's embedded session both use it. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/inotify.h>

#include "config.h"

typedef struct VsProtectSnapshot VsProtectSnapshot;

/* Notes device, inode and type of each protected path of p and of its
 * parents below the workspace root (.git), absent ones included, and of
 * each path of extra (the launch's protected list: what the protect globs
 * matched; NULL for a backend whose paths are not this host's). */
int protect_snapshot_take(const VsPolicy *p, char *const *extra, VsProtectSnapshot **ret);
/* The first path whose identity differs now (the root itself first), or
 * NULL. One lstat per path. */
const char *protect_snapshot_changed(const VsProtectSnapshot *s);
/* The root, when it (or a directory above it) was moved or replaced since
 * the snapshot, or NULL. One stat. */
const char *protect_snapshot_root_changed(const VsProtectSnapshot *s);
/* An inotify descriptor (non-blocking, CLOEXEC) that becomes readable when
 * an entry of the directories holding the paths is created, removed or
 * renamed: the moment to call protect_snapshot_changed(). Caller closes.
 * *ret_complete (may be NULL): whether every change that can alter an
 * identity below the root queues an event on it (no path outside the root,
 * no symlink, every watch made). Only then may an empty queue stand in for
 * protect_snapshot_changed(): the kernel queues the event inside the
 * host's rename(2), before anything that follows it. */
int protect_snapshot_watch(const VsProtectSnapshot *s, bool *ret_complete);
/* The same watches made through add (an inotify_add_watch() on an instance
 * the caller shares: it returns a descriptor or -errno): 0, or the root's
 * -errno. */
#define PROTECT_WATCH_EVENTS \
        (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
typedef int (*ProtectWatchAddFn)(void *ctx, const char *dir, uint32_t mask);
int protect_snapshot_watch_with(const VsProtectSnapshot *s, ProtectWatchAddFn add, void *ctx, bool *ret_complete);
/* Reads and drops the pending events of such a descriptor: whether there
 * were any (or the read failed otherwise than with EAGAIN; an overflow is
 * an event too). */
bool protect_snapshot_drain(int fd);
void protect_snapshot_free(VsProtectSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VsProtectSnapshot *, protect_snapshot_free);
