/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Whether uid is an ordinary account's, one whose jail the root monitor
 * starts: login.defs' UID_MIN..UID_MAX (1000..60000 where the file says
 * neither), or the kernel's overflow id ("nobody", 65534), which owns
 * nothing that matters by design. A system account (a service's: polkitd,
 * postgres) is none: what runs as it can reach what the service can. Read
 * once, the first time. */
bool uid_is_ordinary(uid_t uid);

/* The group a jail of uid runs with: the workspace directory's group
 * dir_gid where uid is a member of it (its primary group, or an ordinary
 * group, login.defs' GID_MIN..GID_MAX, that getgrouplist names: never a
 * system group held as a supplementary one, such as docker or adm),
 * else uid's primary group, else (no account, or a
 * primary group 0) the kernel's overflow gid; never 0. A group the
 * directory merely has (root's, left by a chown of the owner alone;
 * a setgid parent's; shadow's) lends the jail nothing. */
gid_t user_jail_gid(uid_t uid, gid_t dir_gid);

/* The ids the daemon's unprivileged parts run as under a root daemon: the
 * system user "vectora-sandbox" (the Debian package makes it), or without
 * it the overflow uid and gid 65534. *named says which (may be NULL). */
#define VS_SERVICE_USER "vectora-sandbox"
#define VS_OVERFLOW_ID 65534
void service_ids(uid_t *uid, gid_t *gid, bool *named);
