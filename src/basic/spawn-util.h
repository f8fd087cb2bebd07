/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting a child process: the fork sites of the daemon's helpers, the
 * launcher and the worker's side processes share this, so each child starts
 * from the same clean state. (The worker's commands and sessions start
 * through clone(CLONE_VFORK) in worker/child.c, for speed; the daemon's
 * detach, daemon/server/startup.c, forks itself before any thread exists and goes
 * on as the daemon, which is no spawn.) Not named
 * "spawn.h": that is libc's posix_spawn header, which this would shadow on
 * the include path.
 *
 * spawn_fork() forks. In the child, before it returns 0, every signal is
 * back to its default disposition and the signal mask is empty (a child
 * inherits both: an exec'd program with SIGPIPE ignored or SIGTERM blocked
 * misbehaves, and a handler of the parent's has no business in it); with
 * pdeath_sig not 0, the child asks for pdeath_sig when its parent dies and
 * _exit(125)s if the parent is already gone (it died before the request).
 * Pass 0 when the child must change uid first (that clears the request)
 * and ask itself afterwards. After fork the child may only do
 * async-signal-safe work until it execs or _exits.
 *
 * Returns the child's pid in the parent, 0 in the child, or a negative
 * errno (no child). */

#include <sys/types.h>

pid_t spawn_fork(int pdeath_sig);

/* spawn_vfork() starts fn(arg) in a child made by clone(CLONE_VM |
 * CLONE_VFORK), on a stack of its own, as posix_spawn does: no copy of the
 * caller's page tables (most of fork's cost, and it grows with the
 * caller's memory), no copy-on-write faults after it. The calling thread
 * waits until the child has exec'd or exited; the caller's other threads
 * go on. fn runs in the caller's memory: it may only make system calls,
 * use its own stack and read what no other thread changes meanwhile, and
 * must exec or _exit (its return value is the exit status). It must make
 * set*id changes with raw syscall()s: glibc's wrappers would signal the
 * caller's threads to change theirs. Signals are blocked around the
 * clone, so no handler of the caller's runs in the child; fn starts with
 * every disposition at its default and an empty mask, as after
 * spawn_fork(). Returns the child's pid or a negative errno. */
pid_t spawn_vfork(int (*fn)(void *arg), void *arg);

/* The same, the child made in new namespaces too (CLONE_NEW* flags, for
 * instance CLONE_NEWPID: the child is pid 1 of a pid namespace of its
 * own, and when it ends the kernel ends everything else in it). */
pid_t spawn_vfork_ns(int (*fn)(void *arg), void *arg, unsigned long ns_flags);
/* The same child in memory of its own (a copy, as fork's): the caller
 * goes on at once, and nothing the child does (a stack overrun, a stop
 * before its exec) reaches the caller. flags: namespaces, CLONE_PARENT. */
pid_t spawn_clone_ns(int (*fn)(void *arg), void *arg, unsigned long flags);
/* A write from a spawned child that no reader's absence can kill: a
 * pipe closed at the other end is EPIPE, not SIGPIPE (SIGPIPE ignored
 * around it, back to its default after: an ignored signal would stay
 * ignored across the exec). Raw system calls, as the child's others. */
ssize_t spawn_child_write_quiet(int fd, const void *buf, size_t n);

/* Raises this process's soft RLIMIT_NOFILE to its hard limit (a service
 * starts at 1024 under systemd: the daemon ran out of descriptors at about
 * 200 workspaces), and remembers the soft limit it found. Returns the soft
 * limit now, or 0 when it could not be read. */
unsigned long spawn_raise_nofile(void);

/* In a child about to exec, once it holds only what it keeps (at the old
 * limit it could open nothing more while it held the parent's many
 * descriptors): the soft limit spawn_raise_nofile() found, as systemd
 * hands its services, since a program that select()s breaks past 1024.
 * A raw system call (it may run in the parent's memory, from
 * spawn_vfork()); nothing when the limit was not raised. */
void spawn_restore_nofile(void);

/* Waits for pid, retrying on EINTR. Returns its exit status, 128 + N when
 * signal N ended it, or a negative errno. */
int spawn_wait(pid_t pid);

/* The cleanup of a spawned child: SIGKILL and reap *pid when it is > 0,
 * then set it to 0. */
void spawn_killp(pid_t *pid);
