/* SPDX-License-Identifier: MIT */
#pragma once

/* The server's side of the root monitor (docs/privsep.md). A root
 * vectora-sandboxd forks the monitor before its loop, its listening
 * socket, the proxy or any jail exist; of what the daemon holds by then
 * (the instance lock, the audit log) the monitor closes everything but
 * its end of a SOCK_SEQPACKET pair, the log and stderr.
 * The two are tied: the server's process ending (or its end closing) ends
 * the monitor (monitor_set_server); the monitor ending stops the server,
 * which then exits non-zero (a unit's Restart=on-failure starts both
 * again). A daemon run as an ordinary user has no root to protect and no
 * monitor. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "error.h"
#include "host-make.h"
#include "worker-spawn.h"

typedef struct json_t json_t;
typedef struct MonitorLink MonitorLink;

/* Before the loop: forks the monitor when the daemon runs as root and says
 * hello; else records why there is none. A negative errno (with *err) when
 * a root daemon could not start it: the daemon does not go on without. */
int monitor_link_start(Server *srv, VsError **err);
/* Once the loop exists: watches the monitor's end, calling gone(srv) once
 * if the monitor ends or breaks the protocol (what, in the log). */
void monitor_link_watch(Server *srv, void (*gone)(Server *srv));
/* A clean exit: asks the monitor to shut down and waits for it (a short
 * while; then SIGKILL, and a short while again). 0 when it answered and
 * exited 0 (or there is none), else a negative errno: the daemon's exit
 * is then not a clean one. */
int monitor_link_stop(Server *srv);
/* SIGCHLD: reaps the monitor if it ended. */
void monitor_link_reap(Server *srv);
/* The workspace at path (canonical) opened by the monitor, its owner
 * checked there (uid; gid the directory's or the owner's): *ret, the
 * handle later requests name it by. */
int monitor_link_ws_open(Server *srv, const char *path, uid_t uid, gid_t gid, uint64_t *ret, VsError **err);
/* The handle closed; the monitor removes the groups it made for it (a
 * group processes still hold is left to the instance's end). */
void monitor_link_ws_close(Server *srv, uint64_t ws);
/* The workspace's cgroups made by the monitor, limits set (clamped to
 * what the monitor takes): ret_fds their directories (v2: [0]; v1: [0]
 * pids, [1] memory or -EBADF with *ret_note saying why), the caller's. */
int monitor_link_cgroup_make(Server *srv, uint64_t ws, uint64_t pids_max, uint64_t memory_max, int ret_fds[2],
                             char **ret_note, VsError **err);
/* A local jail started by the monitor (l->argv, as l->uid and l->gid,
 * which the monitor checks against the workspace ws's owner, or the idmap
 * identity for a root-owned one, whose l->idmap_paths below ws_path, the
 * path the monitor opened, it idmaps itself; in its own pid namespace as
 * l->own_pid_ns says) as this process's own child: *ret as worker_spawn
 * gives it, with the same errors for a start that failed before the
 * child's exec could; its exec is not awaited: *ret_exec_fd
 * (non-blocking) says later how it went (worker_spawn_exec_result). */
int monitor_link_jail_spawn(Server *srv, uint64_t ws, const char *ws_path, uint64_t gen, const VsLaunch *l,
                            VsWorkerProc *ret, int *ret_exec_fd, VsError **err);
/* The jail of workspace handle ws and generation gen that the monitor
 * started ended by it (SIGKILL through the pidfd it kept); the caller
 * still reaps it. -ESRCH: no such jail is running. */
int monitor_link_jail_kill(Server *srv, uint64_t ws, uint64_t gen, VsError **err);
/* A placeholder (or git_init's entry) made by the monitor below the
 * workspace handle ws (host-make.h: rel, flags, text): 1 made, 0 there
 * already, else a negative errno with *err. Any thread: calls are one at
 * a time, and this one's reply is its own. */
int monitor_link_placeholder(Server *srv, uint64_t ws, const char *rel, unsigned flags, VsHostText text,
                             VsError **err);
/* items made so in turn, as many a request as the monitor takes at once
 * (MONITOR_ITEMS_MAX; one child each): how many were made, or a negative
 * errno at the first request that failed (host-make.h make_many). */
int monitor_link_placeholders(Server *srv, uint64_t ws, const VsHostItem *items, size_t n, VsError **err);
/* git_identity: workspace ws's owner's git identity (user.name and
 * user.email, each a plain line), read by the monitor with the owner's file rights.
 * Any thread, on the pool's channel. */
int monitor_link_git_identity(Server *srv, uint64_t ws, char **ret_name, char **ret_email, VsError **err);
/* A repository a jail made put aside by the monitor (host-make.h
 * put_aside): rel below ws, while still dev/ino; *ret_n the suffix
 * (VS_ASIDE_TRIES: a link removed, its names all taken). Any
 * thread, as monitor_link_placeholder. */
int monitor_link_quarantine(Server *srv, uint64_t ws, const char *rel, uint64_t dev, uint64_t ino, unsigned *ret_n,
                            VsError **err);
/* A maker (host-make.h) whose making and putting aside the monitor does
 * below the workspace handle ws (workspace: its canonical path, kept by
 * the caller). Its address must not change while it is used. */
typedef struct MonitorMaker {
        VsHostMaker maker;
        Server *srv;
        uint64_t ws;
        /* The workspace's owner, when the caller knows it: its identity
         * (host-make.h identity) is then kept while its git config files
         * stay as they were. */
        bool owner_known;
        uid_t owner;
} MonitorMaker;
void monitor_maker_init(MonitorMaker *m, Server *srv, uint64_t ws, const char *workspace);
/* SIGHUP: the log the daemon opened again (log_fd, still the caller's)
 * handed to the monitor, whose lines go there from now on. */
void monitor_link_log_reopen(Server *srv, int log_fd);
/* For status: {running, pid, uid, workspaces} asked of the monitor itself,
 * or {running: false, why}. A new reference. */
json_t *monitor_link_status(Server *srv);
