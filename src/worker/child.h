/* SPDX-License-Identifier: MIT */
#pragma once

/* One child process of the worker, from spawn to reap: what a command
 * (exec.c) and a session (session.c) share. The child leads a process
 * group (or a session) of its own, so a kill reaches what it started; it
 * dies with the worker (PDEATHSIG); the worker's one waitpid(-1) loop
 * (main.c) hands each reaped pid to child_reaped(). A Child is embedded in
 * its owner and holds no resources: the owner keeps its fds. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker.h"

/* After the child exits, how long output may still arrive from processes
 * it left behind holding its pipes or terminal. */
#define CHILD_DRAIN_GRACE_US (100u * 1000u)

typedef enum ChildDetach {
        CHILD_GROUP,    /* a process group of its own: a signal reaches its children */
        CHILD_SESSION,  /* a session of its own (outlives its request) */
        CHILD_TERMINAL, /* a session whose controlling terminal is in_fd */
} ChildDetach;

typedef struct Child {
        pid_t pid;            /* the group (session) leader: its pid is the pgid; 0: no process */
        bool reaped;          /* waited for: status is valid */
        bool killed;          /* SIGKILL sent to the group */
        bool timed_out;       /* killed by its deadline */
        int status;           /* waitpid() status, once reaped */
        uint64_t start_us;    /* spawned at (now_us()) */
        uint64_t deadline_us; /* killed at; 0: never */
        uint64_t reaped_us;
} Child;

/* Starts argv as x describes, with in/out/err (borrowed) as 0/1/2, the
 * command's RLIMIT_DATA from d, killed with the worker, through
 * clone(CLONE_VM|CLONE_VFORK) and a CLOEXEC error pipe. timeout_ms 0: no
 * deadline. 0 and *ret filled; a positive errno: execve failed (the child
 * is reaped, *ret untouched); a negative errno: no child. */
int child_spawn(const ExecPrep *x, const ExecDefaults *d, char *const *argv, int in_fd, int out_fd, int err_fd,
                ChildDetach detach, uint64_t timeout_ms, Child *ret);
/* child_spawn's negative errno k for argv0 as *err; returns k. EAGAIN (the
 * jail's RLIMIT_NPROC or pids cgroup is full) is process_limit, which the
 * daemon answers by restarting a jail that leftovers hold at its limit. */
int child_spawn_error(VsError **err, int k, const char *argv0);

/* A child that stands for no process (a connection): already "reaped",
 * exit status 0. */
#define CHILD_NONE ((Child) { .reaped = true })

/* SIGKILL to the whole group (and the leader while it is not reaped),
 * once. No process: only marks it killed. */
void child_kill(Child *c);
/* sig to the whole group, or to the leader when the group is gone and the
 * leader is not reaped yet. */
void child_signal(Child *c, int sig);
/* Kills it (timed_out) when its deadline has passed; true when it did. */
bool child_expire(Child *c, uint64_t now);
/* pid was reaped with status: true when it is this child's. */
bool child_reaped(Child *c, pid_t pid, int status);
/* Reaped, and its drain grace over: stop waiting for its output (never
 * for no process). */
bool child_grace_over(const Child *c, uint64_t now);
/* When this child next needs the loop (now_us() time): its deadline while
 * it runs; once reaped, the end of its drain grace while output_open (its
 * owner still reads its output), else at once (0); UINT64_MAX: nothing. No
 * process: at once when output_open is false, else nothing (it ends when
 * its connection does, with no grace). */
uint64_t child_next_us(const Child *c, bool output_open);
/* Blocks until a child that is not reaped yet is (call after child_kill). */
void child_wait(Child *c);
/* The exit code a shell would show (128 + the signal when killed by one)
 * and that signal (0: none). */
int child_exit_code(const Child *c, int *ret_signal);
/* Milliseconds from now until at, for poll(): 0 when past, -1 for UINT64_MAX. */
int child_ms_until(uint64_t at, uint64_t now);
