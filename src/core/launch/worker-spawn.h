/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting a worker process for a launch, and the init message it gets.
 *
 * The worker's stdin and stdout are one end of a socketpair (so descriptors
 * could be passed later); its stderr is a pipe the caller reads for logs and
 * for the backend's own start-up errors (bwrap writes those there). */

#include <sys/types.h>

#include "launch.h"
#include "strbuf.h"

typedef struct VsWorkerProc {
        pid_t pid;     /* the backend process (bwrap, or the worker in direct mode) */
        int fd;        /* our end of the socketpair, CLOEXEC, blocking */
        int stderr_fd; /* read end of the worker's stderr, CLOEXEC, or -EBADF */
} VsWorkerProc;

/* Where a start failed (the child's word through its exec-error pipe,
 * or the caller's), for worker_spawn_error; STEP_EXEC with errno 0 is the
 * child's "reached its exec" just before it. */
enum { STEP_FDS = 1, STEP_IDMAP, STEP_CGROUP, STEP_USERNS, STEP_PROC, STEP_GROUPS, STEP_GID, STEP_UID, STEP_PDEATH, STEP_NNP, STEP_EXEC, STEP_NS, STEP_CLONE, STEP_PIPE, STEP_PARENT, STEP_CWD, STEP_KEYRING, STEP_DIED, STEP_SESSION, STEP_SCHED, STEP_GUARD };

/* Spawns l->argv. Between fork and exec the child only resets signals,
 * drops to l->uid/l->gid when l->switch_user, sets PR_SET_PDEATHSIG and
 * moves descriptors; an exec failure comes back through a CLOEXEC pipe as
 * an error here ("bwrap not found: apt-get install bubblewrap"). */
int worker_spawn(const VsLaunch *l, VsWorkerProc *ret, VsError **err);
/* The same from a copy of the caller's memory whose exec is not awaited:
 * *ret_exec_fd (non-blocking) says later how it went
 * (worker_spawn_exec_result). For a start as another uid, whose owner
 * could stop the child before its exec (a vfork child holds its caller
 * until then). */
int worker_spawn_detached(const VsLaunch *l, VsWorkerProc *ret, int *ret_exec_fd, VsError **err);
/* The worker's channel (a socket pair: chan[0] the caller's end, chan[1]
 * the child's stdin and stdout) and its stderr pipe, all CLOEXEC. */
int worker_spawn_ends(int chan[2], int errp[2], VsError **err);
/* worker_spawn's start, the descriptors given: theirs becomes the
 * child's stdin and stdout, stderr_w its stderr (both still the
 * caller's). clone_extra: CLONE_PARENT for the root monitor, which starts
 * a jail for the server (pid parent, whose child it is: reaped and tied
 * there as before; a child that finds another parent ends) in memory of
 * its own, and does not wait for its exec: *ret_exec_fd is the exec-error
 * pipe's read end (worker_spawn_exec_result), for the server to watch (a
 * caller that passes ret_exec_fd without CLONE_PARENT gets the same for
 * its own child);
 * nnp: PR_SET_NO_NEW_PRIVS before the exec. 0 with *ret_pid; else a
 * negative errno with *ret_step (for worker_spawn_error) and *ret_pid the
 * child to reap (CLONE_PARENT: the parent's), or 0. */
int worker_spawn_start(const VsLaunch *l, int theirs, int stderr_w, unsigned long clone_extra, bool nnp, pid_t parent,
                       pid_t *ret_pid, int *ret_step, int *ret_exec_fd);
/* What a start's exec-error pipe (fd, non-blocking) says now: 1 the child
 * exec'd (it said it reached its exec, and the pipe closed), 0 not yet (a
 * child stopped before or at its exec), else a negative errno with
 * *ret_step: it failed there (-ECHILD: it ended before it reached its
 * exec, killed on the way). Nothing is read until it is decided. */
int worker_spawn_exec_result(int fd, int *ret_step);
/* The error for a start that failed at step with errno e. */
int worker_spawn_error(const VsLaunch *l, int step, int e, VsError **err);
/* What worker_spawn would run first, now, and not again: l->pre_argv (a
 * docker backend removing a leftover container, up to 10 s). For a caller
 * that must not wait on it where it forks (the daemon runs it on its
 * thread pool). */
void worker_spawn_pre(VsLaunch *l);

/* SIGKILLs pid (a local jail's outer bwrap takes its whole pid namespace
 * with it) and reaps; accepts pid <= 0. Closes fds. */
void worker_proc_kill(VsWorkerProc *w);

/* Appends the framed init message for l. */
int launch_encode_init(const VsLaunch *l, StrBuf *out);
