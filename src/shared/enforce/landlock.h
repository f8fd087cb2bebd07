/* SPDX-License-Identifier: MIT */
#pragma once

/* Landlock for the jail: writes confined to a list of directories; on ABI
 * >= 6 abstract unix sockets and signals scoped to the jail's domain.
 * Debian 12's headers stop at ABI 2, so the newer constants are defined in
 * landlock.c; what is used follows what the running kernel reports. */

#include "error.h"

/* The kernel's Landlock ABI version, 0 when Landlock is unavailable or
 * disabled. */
int landlock_abi_version(void);

/* Restricts the calling process: write-type accesses only below
 * rw_dirs (NULL-terminated, absolute, must exist); reads are left to the
 * mount namespace. Requires PR_SET_NO_NEW_PRIVS. On success *ret_abi is the
 * ABI used. -EOPNOTSUPP when the kernel has no Landlock. */
int landlock_apply(char *const *rw_dirs, int *ret_abi, VsError **err);

/* Restricts the calling process further (the network proxy's): no write
 * of any kind anywhere, no exec, and reads only below ro_paths
 * (NULL-terminated, absolute; missing ones are skipped). */
int landlock_apply_read_only(char *const *ro_paths, int *ret_abi, VsError **err);
