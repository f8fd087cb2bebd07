/* SPDX-License-Identifier: MIT */
#pragma once

/* One inotify instance for the whole daemon, shared by every workspace's
 * watches. fs.inotify.max_user_instances (128 by default) is per user and
 * shared with every other process of the daemon's uid; an instance per
 * workspace (two: masks and protected paths) used it up at ~60 sandboxed
 * workspaces, after which masks over time went unwatched (degraded) and
 * the protected paths fell back to polling. Watches (max_user_watches) are
 * plentiful; instances are not.
 *
 * A subscriber adds watches and gets the events of its own watch
 * descriptors (the kernel gives the same descriptor for the same inode on
 * one instance: subscribers watching one directory share it, each gets its
 * events), then one end-of-batch call after each read that gave it any.
 * An overflow (IN_Q_OVERFLOW: events were lost) goes to every subscriber. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <uv.h>

typedef struct InotifyHub InotifyHub;
typedef struct HubSub HubSub;

typedef struct HubOps {
        /* One event of a descriptor this subscriber added (ev->wd), or an
         * overflow (ev->wd == -1, IN_Q_OVERFLOW). */
        void (*event)(void *userdata, const struct inotify_event *ev);
        /* After a read that gave this subscriber events (may be NULL). The
         * subscriber may free itself (hub_sub_free) here or in event(). */
        void (*batch_end)(void *userdata);
} HubOps;

/* -errno: no inotify instance (EMFILE: max_user_instances used up). */
int hub_new(uv_loop_t *loop, InotifyHub **ret);
/* Closes the instance; every subscriber must be freed first. */
void hub_free(InotifyHub *h);

int hub_sub_new(InotifyHub *h, const HubOps *ops, void *userdata, HubSub **ret);
/* Its watches go (removed from the instance once nobody else holds them);
 * no call reaches it after this, even from the batch being dispatched. */
void hub_sub_free(HubSub *s);

/* Watches path for mask (added to what other subscribers of the same inode
 * asked: IN_MASK_ADD). Returns the watch descriptor, or -errno. A
 * subscriber that adds the same inode twice holds it once. */
int hub_add_watch(HubSub *s, const char *path, uint32_t mask);

/* Reads and dispatches everything queued now (before a call is served: the
 * kernel queues an event inside the syscall that changed the directory, so
 * what happened before this point has been seen when it returns). false if
 * the queue could not be read (treat as "anything may have changed"). */
bool hub_drain(InotifyHub *h);

/* Whether s still holds wd: false once the kernel dropped it (its
 * directory removed: IN_IGNORED, or after an overflow that lost it, the
 * kernel's own list of live watches). */
bool hub_sub_holds(const HubSub *s, int wd);

/* s no longer holds wd (removed from the instance once nobody else does;
 * a wd the kernel dropped already, or s does not hold: nothing). */
void hub_release_watch(HubSub *s, int wd);

/* Watch descriptors currently held (all subscribers): for status and tests. */
size_t hub_n_watches(const InotifyHub *h);
