/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon serves no jail: a peer whose user or pid namespace differs
 * from the daemon's is refused, whatever its uid. A jail runs as the
 * daemon's own uid (or the workspace owner's), so SO_PEERCRED alone would
 * let a jail that reached the socket ask for a command in an unsandboxed
 * workspace. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Whether uid (SO_PEERCRED's) may use this daemon: its own uid and root
 * only. */
bool peer_uid_allowed(uid_t uid);

/* fd: the accepted connection; pid: SO_PEERCRED's. 0 when the peer shares
 * both namespaces; -EPERM with why set when it does not; any other
 * negative errno with why set when it cannot be told (the caller refuses
 * then too). The peer is pinned with SO_PEERPIDFD where the kernel has it
 * (>= 6.5), so a reused pid cannot stand in for a peer that exited;
 * elsewhere pidfd_open() after the fact narrows that window. */
int peer_check_namespaces(int fd, pid_t pid, char *why, size_t n);
/* The same for pid p from what any process may read (peer_check_namespaces
 * falls back to it where the peer's /proc/PID/ns is not this process's to
 * read: a server without root's rights and a root peer): its NSpid names
 * one pid (it is in the pid namespace of our /proc, none below it), and
 * its uid_map and gid_map are ours (a jail's user namespace maps its
 * owner's ids alone; one root made with the identity map would pass, and
 * is root's own doing). */
int peer_check_by_maps(pid_t p, char *why, size_t n);
