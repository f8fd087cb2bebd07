/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Whether uid is an ordinary account's, one whose jail the root monitor
 * starts: login.defs' UID_MIN..UID_MAX (1000..60000 where the file says
 * neither), or the kernel's overflow id ("nobody", 65534), which owns
 * nothing that matters by design. A system account (a service's: polkitd,
 * postgres) is none: what runs as it can reach what the service can. Read
 * once, the first time. */
bool uid_is_ordinary(uid_t uid);
