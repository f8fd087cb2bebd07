/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker binary's launcher modes for the ssh backend (docs/backends.md):
 *   ssh-launch.c   --ssh-launch: on the daemon's host, runs ssh with the
 *                  protocol on stdin/stdout and deploys the worker to the
 *                  remote when its sha256 differs
 *   launch-jail.c  --launch-jail POLICY: on the remote, walks the masks
 *                  there and execs bubblewrap with this binary as the jailed
 *                  worker, or (no bubblewrap) the worker alone, degraded;
 *                  refusals travel as init_failed in the normal handshake
 *   --unjailed REASON: the worker itself, told it runs without a jail */

#include "protocol.h"

int ssh_launch_main(int argc, char **argv);
int launch_jail_main(int argc, char **argv);

/* --unjailed: what the worker reports degraded, and the init adjustment
 * (Landlock rules on paths that do not exist here are dropped: fewer rules
 * only take write access away). */
void unjailed_set(const char *reason);
void unjailed_adjust_init(ProtocolInit *init);
int unjailed_degraded(char ***degraded);
/* True when the worker runs without a jail (and so on the host's network). */
bool unjailed(void);
