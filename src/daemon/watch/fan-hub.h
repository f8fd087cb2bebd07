/* SPDX-License-Identifier: MIT */
#pragma once

/* One fanotify group for the whole daemon (root only: FAN_MARK_FILESYSTEM
 * needs CAP_SYS_ADMIN), in place of an inotify watch per directory: one
 * mark per filesystem that holds a subscriber's roots (deduplicated by
 * fsid, removed with the last subscriber on it), so a tree of any size is
 * watched whole and a new directory is covered the moment it exists.
 *
 * Events name their directory by file handle (FAN_REPORT_DFID_NAME); the
 * hub turns it into the directory's paths, one through each marked mount
 * (open_by_handle_at, readlink of /proc/self/fd: a bind mount shows one
 * directory at two paths), through a cache flushed on any directory move
 * (a moved directory keeps its handle) and when a subscriber comes (its
 * mounts may be new), and hands each subscriber the events in directories
 * below its roots, by the path below them: unrelated activity on the
 * filesystem costs a cache look. The queue is unlimited (FAN_UNLIMITED_QUEUE): no event is
 * lost, so there is no overflow to attribute (fan-hub.c says why that is
 * bounded); one that happens anyway goes to every subscriber, and so does
 * the rest of a read a flood made too long to handle (notify-subs.h). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct FanHub FanHub;
typedef struct FanSub FanSub;

typedef struct FanOps {
        /* name appeared (created, moved in) or was written in dir (absolute,
         * below one of the subscriber's roots or one of them); mask FAN_*
         * (FAN_ONDIR: name is a directory). dir NULL: events were lost. */
        void (*event)(void *userdata, const char *dir, const char *name, uint64_t mask);
        /* After a read that gave this subscriber events (may be NULL). The
         * subscriber may free itself (fan_sub_free) here or in event(). */
        void (*batch_end)(void *userdata);
} FanOps;

/* -errno: no fanotify group (EPERM: not root; EINVAL/ENOSYS: a kernel
 * without FAN_REPORT_DFID_NAME, before 5.9). */
int fan_new(uv_loop_t *loop, FanHub **ret);
/* Every subscriber must be freed first. */
void fan_free(FanHub *h);

/* Marks the filesystems of roots (absolute, existing directories) and of
 * the mounts below them now (a mark covers one filesystem; a mount made
 * later is not seen). -errno when one cannot be marked (a filesystem
 * without an fsid: overlayfs, some FUSE; EXDEV/ENODEV/EOPNOTSUPP): the
 * caller watches another way. */
int fan_sub_new(FanHub *h, const FanOps *ops, void *userdata, char *const *roots, size_t n_roots, FanSub **ret);
/* No call reaches it after this, even from the batch being dispatched. */
void fan_sub_free(FanSub *s);

/* Reads and dispatches everything queued now (the kernel queues an event
 * inside the syscall that made it, as inotify does): what happened before
 * this point has been seen when it returns. false if the queue could not
 * be read. */
bool fan_drain(FanHub *h);

/* Filesystems marked, for status and tests. */
size_t fan_n_filesystems(const FanHub *h);
