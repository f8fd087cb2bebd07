/* SPDX-License-Identifier: MIT */
#pragma once

/* What the kernel knows of a descriptor's mount without asking its file
 * system: a FUSE server sees every fstat/fstatfs/lookup and may never
 * answer, so a root process that must not stall asks the mount table. */

#include <stdbool.h>
#include <stddef.h>

/* The mount id of fd (statx STATX_MNT_ID with AT_STATX_DONT_SYNC: the
 * kernel's cached attributes, no call to the file system), or a negative
 * errno; -EOPNOTSUPP where the kernel reports no mount id (before 5.8). */
int fd_mount_id(int fd, int *ret);

/* From one line of /proc/self/mountinfo: its mount id and file system
 * type (the field after " - "), copied into type (at most n - 1 bytes).
 * false for a line not of that shape. */
bool mountinfo_line_parse(const char *line, int *ret_id, char *type, size_t n);

/* Calls fn with each line of this process's /proc/self/mountinfo (its
 * own copy, fn may change it) until fn returns non-zero: that value, 0 at
 * the end, or a negative errno when the table cannot be read. */
int mountinfo_each(int (*fn)(char *line, void *userdata), void *userdata);
/* The same with another process's table (file: /proc/PID/mountinfo). */
int mountinfo_each_of(const char *file, int (*fn)(char *line, void *userdata), void *userdata);
/* The same with name below dirfd (a /proc/PID directory: a process that
 * ended since it was opened reads as -ESRCH, never as its pid's next). */
int mountinfo_each_at(int dirfd, const char *name, int (*fn)(char *line, void *userdata), void *userdata);

/* Whether line is a user-served file system's mount (fstype_is_user_served):
 * then its device is *ret_major:*ret_minor, *ret_uid the uid it was
 * mounted by (its "user_id=" option, as the user namespace it was mounted
 * in maps it; -1 when it has none) and mnt (at most n - 1 bytes, cut) its
 * mount point, still escaped. */
bool mountinfo_fuse_line(const char *line, unsigned *ret_major, unsigned *ret_minor, long long *ret_uid, char *mnt,
                         size_t n);

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
void mountinfo_unescape(char *s);

/* The file system type of mount id in this process's mount table, into
 * type; -ENOENT when no line has that id (unmounted meanwhile), or when
 * its type does not fit. */
int mount_fstype(int mnt_id, char *type, size_t n);

/* Whether a file system of this type is served by a process (FUSE: "fuse",
 * "fuse.NAME", "fuseblk"), which any user can mount with fusermount. */
bool fstype_is_user_served(const char *type);
