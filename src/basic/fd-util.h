/* SPDX-License-Identifier: MIT */
#pragma once

/* File descriptor helpers. All return a negative errno on failure. */

#include <dirent.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "macro.h"

/* _cleanup_(closedirp) DIR *d = opendir(...); */
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

int fd_set_cloexec(int fd, bool on);
int fd_set_nonblock(int fd, bool on);
/* Writes all n bytes, retrying on EINTR/short writes (blocking fds). */
int write_all(int fd, const void *p, size_t n);
/* Reads up to n bytes, retrying on EINTR; returns bytes read (short at EOF). */
ssize_t read_full(int fd, void *p, size_t n);
/* Reads a whole file (at most max bytes, else -EFBIG); *ret NUL-terminated,
 * caller frees. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
int read_fd_all(int fd, size_t max, char **ret, size_t *ret_len);
/* Moves fd to exactly target (dup2 when different, clears CLOEXEC). */
int fd_move_to(int fd, int target);
/* Closes every descriptor but those in keep (negative entries ignored),
 * with close_range(2) where the kernel has it. Async-signal-safe: for the
 * child between fork and exec, so nothing the caller left open (a shell's
 * `exec 9<~`) reaches a jail. */
int close_all_fds_except(const int *keep, size_t n_keep);

/* Descriptors passed beside a message (SCM_RIGHTS). */
#define FD_PASS_MAX 8
/* sendmsg of buf with the n descriptors fds (at most FD_PASS_MAX) beside
 * it; flags as sendmsg's. The bytes sent, or a negative errno. */
ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags);
/* The descriptors a received message carried: up to max of them into fds
 * (the caller's to close), in order, any beyond closed. How many; *overflow
 * (may be NULL) says whether any were closed or cut by the kernel. */
size_t recv_take_fds(struct msghdr *mh, int *fds, size_t max, bool *overflow);
