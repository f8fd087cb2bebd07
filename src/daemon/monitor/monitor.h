/* SPDX-License-Identifier: MIT */
#pragma once

/* The root monitor (docs/privsep.md): serves the monitor protocol
 * (monitor-proto.h) on one SOCK_SEQPACKET descriptor, one request at a
 * time, in order. It holds the workspaces it opened itself: a directory
 * descriptor reached from / without following any symlink, owned by the
 * uid the server named, with a gid that is the directory's or the
 * owner's primary group. A request its state does not allow, a datagram
 * the decoder refuses, a truncated one or one with descriptors it does
 * not take ends the monitor (OpenSSH's monitor does the same: the server
 * that sent it is not to be trusted any more). A root vectora-sandboxd
 * starts it first thing (monitor-link.h). It makes the workspaces'
 * cgroups (cgroup_make: named by the monitor from the path it opened,
 * below the instance's groups; the server gets descriptors of them) and
 * removes them with the workspace (ws_close); it starts local jails
 * (jail_spawn: as the workspace's owner, or a root-owned workspace's as
 * the idmap identity with its trees idmapped by the monitor, once the
 * argv passed jail-argv.h) and ends them (jail_kill: by the pidfd it kept
 * of each); it gives the server read-only views of the workspaces it
 * opened (ws_view); it makes placeholders and puts repositories aside in
 * a workspace (placeholder, quarantine), in children with a deadline. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct Monitor Monitor;

/* Takes fd (a SOCK_SEQPACKET end). */
int monitor_new(int fd, Monitor **ret);
/* Takes fd (a SOCK_SEQPACKET end): the thread pool's channel, which takes
 * placeholder and quarantine only (any other request is a breach) and
 * answers each when its child has done its work, in any order, while the
 * first channel is served meanwhile: a request held in a workspace never
 * holds the server's loop (attack review 8b). */
void monitor_set_pool(Monitor *m, int fd);
/* Takes pidfd (the server's process): once it ends the monitor is done,
 * even while something else still holds the server's end of the socket. */
void monitor_set_server(Monitor *m, int pidfd);
/* The instance's groups (cgroup_probe's, made before the monitor was
 * forked) for cgroup_make: version 1 ([0] pids, [1] memory or NULL) or 2
 * ([0]); 0: none (cgroup_make answers EOPNOTSUPP). A negative errno when
 * one could not be opened. */
int monitor_set_groups(Monitor *m, int version, char *const parents[2]);
/* What a jail_spawn's argv must be (jail-argv.h): bwrap (NULL: the one
 * in PATH, looked for again at a start while there is none), the worker
 * (its host path, as the daemon binds it), the state directory whose
 * homes/ hold the owners' kept homes (NULL: none). Without them every
 * start is refused. Copies them. */
int monitor_set_jail(Monitor *m, const char *bwrap, const char *worker, const char *state_dir);
/* The ids the server runs as (or will, once it drops root): ws_view's
 * views show a workspace's owner as them. Unset (0): no view is given.
 * Set before the first view (views and their namespaces are kept). */
void monitor_set_server_ids(Monitor *m, uid_t uid, gid_t gid);
/* How many workspaces may have a view at once (8 192; tests lower it). */
void monitor_set_views_max(Monitor *m, size_t max);
/* Reads and answers one request. 0: go on; 1: done (the server's end
 * closed, its process ended, or shutdown answered); a negative errno: the socket failed or the
 * server broke the protocol (what, in the log). */
int monitor_step(Monitor *m);
/* Steps until done or a failure; frees m. 0 when the server closed or
 * asked to shut down, else a negative errno. */
int monitor_run(Monitor *m);
/* Steps until done or a failure, keeping m: a negative errno, 0 when the
 * server's end closed or its process ended, 1 after a shutdown request. */
int monitor_serve(Monitor *m);
Monitor *monitor_free(Monitor *m);
