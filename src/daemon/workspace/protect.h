/* SPDX-License-Identifier: MIT */
#pragma once

/* Protected paths changed on the host under a running jail (protect.c). */

#include "daemon.h"

typedef struct WorkspaceProtect WorkspaceProtect;
/* A protected path changed on the host since the worker spawned: the
 * workspace recycles it. */
typedef void (*ProtectChangedFn)(Workspace *ws, const char *why);
/* Notes what the protected paths are now (the worker being spawned binds
 * these) and watches their directories; changed runs on a change. */
void protect_arm(Workspace *ws, ProtectChangedFn changed);
void protect_disarm(Workspace *ws);
/* Recycles the worker when a protected path changed on the host since it
 * spawned; true when it did. */
bool protect_check(Workspace *ws);
