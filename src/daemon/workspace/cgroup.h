/* SPDX-License-Identifier: MIT */
#pragma once

/* Resource limits (cgroup.c): this instance's groups, a workspace's (made
 * by the root monitor, cgroup_make: the server holds their descriptors). */

#include "daemon.h"

/* Finds a writable hierarchy, creates this instance's groups, removes what
 * an earlier run of this instance (or a dead other instance) left. */
void cgroup_probe(Server *srv);
/* Kills every process in the workspace's groups (the whole jail, also what
 * escaped the worker's sight), waiting until they are empty. */
void cgroup_kill(Workspace *ws);
/* The same in one pass, without waiting: for when a workspace's last jail
 * ended (a process that escaped the worker's tree must not outlive it). */
void cgroup_kill_leftovers(Workspace *ws);
/* Removes this instance's groups (clean exit, after every cgroup_kill). */
void cgroup_finish(Server *srv);
/* cgroup.procs of the instance's group for unsandboxed workers (made on
 * first use): a descriptor the spawned child writes itself into, or a
 * negative errno without cgroups. Ended with the daemon (cgroup_kill_host,
 * and cgroup_finish). */
int cgroup_host_procs_fd(Server *srv);
void cgroup_kill_host(Server *srv);
/* Prepares ws's limits: its groups made by the root monitor (the
 * workspace opened there first), their descriptors kept. Notes what is
 * degraded. */
void cgroup_prepare(Workspace *ws);
/* The jail's RLIMIT_NPROC where its pids group holds the limit: past
 * pids.max, so the group refuses a fork at the limit (and counts it in
 * pids.events, which the looks after a call read) before the rlimit,
 * checked first in fork, does; the rlimit stays as a backstop. */
uint64_t cgroup_nproc_backstop(uint64_t pids);
/* The workspace opened in the root monitor (ws->monitor_ws), again when
 * another directory took its path since; *ret_owner (may be NULL) its
 * owner's uid. */
int cgroup_monitor_open(Workspace *ws, uid_t *ret_owner, VsError **err);
/* Opens the workspace's cgroup.procs files (O_WRONLY|O_CLOEXEC) for the
 * spawned child to join; -EBADF where there is none. */
void cgroup_open_procs(Workspace *ws, int *ret_fd0, int *ret_fd1);
/* The groups' descriptors closed and the workspace closed in the monitor,
 * which removes its groups (not while processes remain). */
void cgroup_release(Workspace *ws);
/* Whether the workspace's jail is (nearly) at its process limit: its pids
 * cgroup, or without one (a daemon run as an ordinary user, where
 * RLIMIT_NPROC holds the limit) the processes of the link's jail counted
 * from its pid 1. 1: it is; 0: it is not; -EAGAIN: not conclusive (past a
 * quarter of the limit, a fork bomb's swing may be in a trough): call
 * pids_looks_next pids_looks_delay milliseconds later, again until it
 * says 1 or 0 (at most eight more looks, 255 ms in all), or
 * pids_looks_done to give up. */
typedef struct PidsLooks {
        pid_t *first; /* the first look's processes, sorted; NULL: no looks pending */
        size_t n_first;
        pid_t root;
        uint64_t lim;
        unsigned look;
} PidsLooks;
int cgroup_pids_look(Workspace *ws, const struct WorkerLink *l, PidsLooks *st);
int pids_looks_next(PidsLooks *st);
unsigned pids_looks_delay(const PidsLooks *st);
void pids_looks_done(PidsLooks *st);
