/* SPDX-License-Identifier: MIT */
#pragma once

/* This daemon instance (instance.c): its id, lock and directory. */

#include "daemon.h"

/* The id of the daemon serving socket_path. */
int instance_id(const char *socket_path, char ret[INSTANCE_ID_LEN + 1]);
/* Takes this instance's lock (refusing when another daemon holds it) and
 * sets instance_id, instance_dir and instance_lock_fd. */
int instance_acquire(Server *srv, VsError **err);
/* Whether the instance id under runtime_root has a live daemon. */
bool instance_alive(const char *runtime_root, const char *id);
/* After detaching: the lock names the daemon's own pid. */
void instance_update_owner(Server *srv);
/* Removes the instance directory and lets the lock go (clean exit). */
void instance_release(Server *srv);
