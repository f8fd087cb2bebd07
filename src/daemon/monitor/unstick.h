/* SPDX-License-Identifier: MIT */
#pragma once

/* The root monitor's watch over the server's threads (docs/privsep.md,
 * "A server held in the kernel").
 *
 * The server looks names up in its owners' trees (a workspace's
 * vectora.toml, the walks of a start and of the watches). An owner who
 * holds a directory of theirs (getdents64 into a buffer mapped from a
 * file of their FUSE file system, whose read they never answer) with a
 * mkdir of theirs queued in it makes any lookup there that the kernel's
 * cache cannot answer wait, uninterruptibly, behind the queued one; a
 * workspace on their FUSE mount does the same to any read. The server's
 * thread is then in the kernel for as long as the user's FUSE server
 * pleases: every workspace's calls stop, SIGKILL cannot end it.
 *
 * What holds it is always an unanswered request of a FUSE connection
 * (unprivileged users can make no other wait without end: userfaultfd
 * handles no fault of the kernel's without vm.unprivileged_userfaultfd).
 * So the monitor looks at the server's threads every UNSTICK_TICK_MS; one
 * in uninterruptible sleep, or in interruptible sleep waiting for a FUSE
 * server's answer (the kernel's first wait for one, until a signal comes,
 * and none does), that has not run for after_ms makes it end, in a
 * child of its own (in a mount namespace of its own, where it mounts the
 * fusectl file system), the FUSE connections that hold it, and that
 * root did not mount: with requests unanswered through the child's
 * pause, and, when the thread waits for a lock rather than a FUSE
 * answer, used by a thread of the host that waits for one without
 * running (the holder). The kernel fails their requests, the holder's
 * read returns, its lock goes, the server's lookup ends. A user's merely
 * busy file system is left alone.
 * Root's own FUSE mounts (lxcfs, a mount the host made) are never ended. */

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UNSTICK_AFTER_MS 5000
#define UNSTICK_TICK_MS 1000
#define UNSTICK_THREADS 256
#define UNSTICK_CHILD_MS 10000
#define UNSTICK_PAUSE_MS 1000 /* between the child's two looks at the connections */
#define UNSTICK_SCAN_MS 1500 /* the child's looks at other processes (their threads, their mount tables) */

typedef struct UnstickThread {
        pid_t tid;
        uint64_t switches; /* voluntary and not: unchanged, it has not run */
        uint64_t since_ms; /* held (in 'D', or in 'S' waiting for a FUSE answer) without running since then */
        uint64_t seen_ms;  /* held at every look since then, run or not; 0: not held */
        bool fuse;         /* it waits for a FUSE server's answer itself (not for a lock) */
} UnstickThread;

typedef struct Unstick {
        pid_t pid;         /* the process watched (the server); 0: none */
        uint64_t after_ms; /* a thread held this long: its connections end */
        UnstickThread t[UNSTICK_THREADS];
        size_t n;
        uint64_t next_ms;  /* the next look at the threads */
        uint64_t tried_ms; /* the last child's start (0: none yet) */
        pid_t child;       /* the child ending connections, 0: none */
        uint64_t child_deadline;
        pid_t left[8]; /* children killed at their deadline, not yet reaped */
        size_t n_left;
        uint64_t ended;    /* connections ended, since the start */
        unsigned level;    /* children started in the hold going on (each looks wider) */
} Unstick;

void unstick_init(Unstick *u, pid_t pid, uint64_t after_ms);

/* Looks at the threads when it is time (unstick_next): the watched
 * process's, and those of also's processes (the monitor's own children
 * killed at their deadline and held, which keep a workspace's slot
 * meanwhile); reaps the child;
 * may_fork (NULL: always), asked only before a child would start,
 * answering false (the monitor's closer holds a descriptor a child's exit
 * could wait on) puts the start off to a later step. */
void unstick_step(Unstick *u, uint64_t now, const pid_t *also, size_t n_also, bool (*may_fork)(void));

/* When unstick_step wants to run next (CLOCK_MONOTONIC ms), UINT64_MAX
 * for none. */
uint64_t unstick_next(const Unstick *u);

/* How long the longest-held thread has been held (ms, 0: none). */
uint64_t unstick_held_ms(const Unstick *u, uint64_t now);

/* Ends and reaps the child, if any (the monitor's end). */
void unstick_done(Unstick *u);

/* Within the package (unstick.c, unstick-child.c): a thread's state
 * letter and its context switches, from TID/status below taskfd (a
 * /proc/PID/task); whether it sleeps where the kernel waits for a FUSE
 * server's answer (TID/wchan). */
bool unstick_thread_state(int taskfd, const char *tid, char *ret_state, uint64_t *ret_switches);
bool unstick_in_fuse(int taskfd, const char *tid);
/* A directory stream over a duplicate of fd (fd stays the caller's),
 * from its start; NULL when fd is -1 or cannot be read. */
DIR *unstick_opendir_dup(int fd);

/* The child's work (unstick-child.c), in the child: ends the connections
 * that hold the daemon (direct: a held thread waits for a FUSE answer
 * itself; else for a lock a holder keeps; level: the tries before it in
 * this hold, each looking wider). Returns how many, at most 100 (its
 * exit status). */
int unstick_end_connections(uint64_t held_ms, bool direct, unsigned level);

/* UNSTICK_SCAN_MS, which a test may shorten to see what holds without
 * time to look at other processes. */
extern uint64_t unstick_scan_ms;
