/* SPDX-License-Identifier: MIT */
#pragma once

/* The one resolver for host-side paths a jail can shape (docs/architecture.md,
 * "Paths the agent shaped"). Every step is relative to a directory
 * descriptor already held, so a component swapped between two steps changes
 * nothing already resolved, and the answer is a descriptor: later steps
 * work on it, never on the text again.
 *
 * chase_beneath() opens a relative path below a trusted directory and never
 * follows a symlink, a magic link or "..": openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or one O_NOFOLLOW component
 * at a time where the kernel has no openat2.
 *
 * chase_path() resolves an absolute path from "/" as realpath(3) would, with
 * one difference: a symlink whose directory lies at or below one of the
 * `untrusted` roots (canonical paths: the trees a jail can write) is not
 * followed; the walk stops with -ELOOP and names the link. Symlinks the
 * host owns (outside those trees) are followed, at most 40 of them. */

#include <sys/types.h>

#include "macro.h"

/* Opens rel (relative, no "..", may be "" or "." for dirfd itself) below
 * dirfd with flags (O_CLOEXEC and O_NOFOLLOW are added). Returns the new
 * descriptor, or a negative errno: -ELOOP for a symlink on the way or at
 * the end, -EXDEV for "..", an absolute path or a magic link. System calls
 * only, no allocation: a child between fork and exec may call it. */
int chase_beneath(int dirfd, const char *rel, int flags);
/* chase_beneath from "/" for abs (absolute; -EXDEV otherwise): the same
 * rules, no allocation (a child between fork and exec may call it). */
int chase_beneath_root(const char *abs, int flags);

typedef struct ChaseResult {
        int fd;             /* O_PATH descriptor of what the path names; -1 when missing */
        char *path;         /* its canonical path; on -ENOENT the path as far as it exists, then the missing rest */
        char *link;         /* on -ELOOP: the canonical path of the symlink not followed */
        char *link_target;  /* on -ELOOP: what that symlink says */
        char *link_root;    /* on -ELOOP: the untrusted root it lies in */
} ChaseResult;

/* Resolves the absolute path (need not be normalized). 0 with ret->fd and
 * ret->path; -ENOENT when a component is missing (ret->path says what was
 * looked for); -ELOOP when a symlink inside an untrusted root is met
 * (ret->link, ret->link_target), or more than 40 were followed; other
 * negative errnos as openat(2). untrusted: NULL-terminated canonical
 * absolute paths, or NULL. ret is filled on every return; free it with
 * chase_result_done(). */
int chase_path(const char *path, char *const *untrusted, ChaseResult *ret);
/* The same, where a directory the walk enters also becomes an untrusted
 * root when is_untrusted(its descriptor, its canonical path, userdata)
 * says so (a workspace root, found on the way). */
typedef bool (*ChaseUntrustedFn)(int dirfd, const char *path, void *userdata);
int chase_path_dynamic(const char *path, char *const *untrusted, ChaseUntrustedFn is_untrusted, void *userdata,
                       ChaseResult *ret);
void chase_result_done(ChaseResult *r);

/* An O_PATH descriptor of the directory path (absolute), reached from /
 * without following a symlink anywhere (openat2 RESOLVE_NO_SYMLINKS, or
 * one component at a time), or a negative errno. */
int chase_open_dir(const char *path);

/* chase_open_dir's walk, one component at a time, that never asks a file
 * system a process serves (FUSE) anything: before a name is looked up in a
 * directory, and for the directory reached, the mount is read from the
 * kernel's cache (fd_mount_id) and its type from /proc/self/mountinfo.
 * -EREMOTE when the path reaches into such a file system (its mount point
 * included), -ELOOP for a symlink, -EXDEV for "..". For a root process
 * that must not wait on a server an ordinary user runs (fusermount). */
int chase_open_dir_local(const char *path);
/* The same walk below dirfd (itself checked first) for rel, a relative
 * path ("" or "." for dirfd itself); -EXDEV for an absolute one. */
int chase_open_dir_local_at(int dirfd, const char *rel);
