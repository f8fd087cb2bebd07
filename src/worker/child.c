/* SPDX-License-Identifier: MIT */
/* One child process of the worker: spawn, kill, deadline, reap (child.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "error.h"
#include "fd-util.h"
#include "macro.h"
#include "proc-tree.h"
#include "time-util.h"

typedef struct ChildArgs {
        const ExecPrep *x;
        char *const *argv;
        int in_fd, out_fd, err_fd, errpipe;
        ChildDetach detach;
        pid_t parent;
        uint64_t memory;
} ChildArgs;

/* Runs in the clone()d child, on its own stack, sharing the worker's memory
 * until execve (CLONE_VM|CLONE_VFORK, as posix_spawn does: no page table
 * copy, which is most of fork's cost). Only what must happen between fork
 * and exec: signals back to defaults (the worker blocks SIGCHLD and ignores
 * SIGPIPE, nothing else), its own process group or session (with the
 * terminal as its controlling one), die with the worker, fds in place;
 * nothing here writes the worker's memory but errno. */
static int child_main(void *arg) {
        const ChildArgs *a = arg;
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        signal(SIGPIPE, SIG_DFL); /* ignored stays ignored across exec */
        int e = 0;
        if (a->detach == CHILD_GROUP ? setpgid(0, 0) < 0 : setsid() < 0)
                e = errno;
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != a->parent)
                _exit(127);
        if (!e && a->detach == CHILD_TERMINAL && ioctl(a->in_fd, TIOCSCTTY, 0) < 0)
                e = errno;
        if (!e && a->memory) {
                /* Per command, not on the worker itself: the worker's own
                 * memory (large under sanitizers) stays unbounded.
                 * RLIMIT_DATA, not RLIMIT_AS: it counts the private
                 * writable memory a process uses (heap, anonymous maps),
                 * not address space it only reserves (PROT_NONE), which
                 * runtimes reserve far past any use: V8 10 GiB for each
                 * WebAssembly memory, so Node's fetch failed under a
                 * 2 GiB RLIMIT_AS before it opened a connection. */
                struct rlimit rl = { a->memory, a->memory };
                if (setrlimit(RLIMIT_DATA, &rl) < 0)
                        e = errno;
        }
        if (!e && (dup2(a->in_fd, 0) < 0 || dup2(a->out_fd, 1) < 0 || dup2(a->err_fd, 2) < 0 ||
                   fchdir(a->x->cwd_fd) < 0))
                e = errno;
        if (!e) {
                execve(a->x->path, a->argv, a->x->envp);
                e = errno;
        }
        (void) !write(a->errpipe, &e, sizeof e);
        _exit(127);
}

/* The child's stack; CLONE_VFORK suspends the worker until the child has
 * exec'd or exited, so one is enough. */
static _Alignas(64) char child_stack[64 * 1024];

int child_spawn(const ExecPrep *x, const ExecDefaults *d, char *const *argv, int in_fd, int out_fd, int err_fd,
                ChildDetach detach, uint64_t timeout_ms, Child *ret) {
        _cleanup_close_ int ep_r = -EBADF, ep_w = -EBADF;
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return negative_errno();
        ep_r = fds[0], ep_w = fds[1];
        ChildArgs ca = {
                .x = x, .argv = argv, .in_fd = in_fd, .out_fd = out_fd, .err_fd = err_fd, .errpipe = ep_w,
                .detach = detach, .parent = getpid(), .memory = d->memory,
        };
        uint64_t start = now_us();
        pid_t pid = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &ca);
        if (pid < 0)
                return negative_errno();
        ep_w = safe_close(ep_w);

        int child_errno = 0;
        ssize_t n;
        do
                n = read(ep_r, &child_errno, sizeof child_errno);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t) sizeof child_errno) {
                /* It did not exec and exits at once: reap it here. */
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return child_errno > 0 ? child_errno : EIO;
        }
        *ret = (Child) {
                .pid = pid,
                .start_us = start,
                .deadline_us = timeout_ms ? start + MIN(timeout_ms, (uint64_t) 1 << 40) * 1000u : 0,
        };
        return 0;
}

int child_spawn_error(VsError **err, int k, const char *argv0) {
        if (k == -EAGAIN)
                return vs_error_set_kind(err, k, "process_limit",
                                         "cannot start %s: the jail is at its process limit (processes still running "
                                         "in it hold every slot; [sandbox.limits] pids)",
                                         argv0);
        return vs_error_set(err, k, "cannot start %s: %s", argv0, strerror(-k));
}

/* What the leader started and left its group for (setsid, setpgid: a
 * dev server's daemon, a test runner's workers) is still below it in the
 * process tree while the leader lives: stopped level by level (a stopped
 * process forks no more) until a look finds nothing new, then killed. A
 * double fork's grandchild, reparented to the worker already, is out of
 * reach (only the jail's end takes it). */
#define KILL_TREE_ROUNDS 16
static void kill_tree(pid_t leader) {
        _cleanup_free_ pid_t *stopped = NULL;
        size_t n_stopped = 0;
        (void) kill(leader, SIGSTOP);
        for (unsigned round = 0; round < KILL_TREE_ROUNDS; round++) {
                _cleanup_free_ pid_t *now = NULL;
                int n = proc_tree_pids(leader, &now, NULL);
                if (n <= 1)
                        break;
                size_t fresh = 0;
                for (int i = 0; i < n; i++) {
                        if (now[i] == leader)
                                continue;
                        bool seen = false;
                        for (size_t k = 0; k < n_stopped && !seen; k++)
                                seen = stopped[k] == now[i];
                        if (seen)
                                continue;
                        pid_t *m = reallocarray(stopped, n_stopped + 1, sizeof *m);
                        if (!m)
                                break;
                        stopped = m;
                        stopped[n_stopped++] = now[i];
                        (void) kill(now[i], SIGSTOP);
                        fresh++;
                }
                if (!fresh)
                        break;
        }
        for (size_t k = 0; k < n_stopped; k++)
                (void) kill(stopped[k], SIGKILL);
}

void child_kill(Child *c) {
        if (c->killed)
                return;
        c->killed = true;
        if (c->pid <= 0)
                return; /* kill(-0) would be the worker's own group */
        if (!c->reaped)
                kill_tree(c->pid);
        /* The group outlives its leader while members remain; kernel pids
         * are not reused as long as the group exists. */
        (void) kill(-c->pid, SIGKILL);
        if (!c->reaped)
                (void) kill(c->pid, SIGKILL);
}

void child_signal(Child *c, int sig) {
        if (c->pid <= 0)
                return;
        /* The whole group: a shell's pipeline or a dev server's children go
         * with it. */
        if (kill(-c->pid, sig) < 0 && !c->reaped)
                (void) kill(c->pid, sig);
}

bool child_expire(Child *c, uint64_t now) {
        if (c->reaped || c->killed || !c->deadline_us || now < c->deadline_us)
                return false;
        c->timed_out = true;
        child_kill(c);
        return true;
}

bool child_reaped(Child *c, pid_t pid, int status) {
        if (pid <= 0 || c->pid != pid || c->reaped)
                return false;
        c->reaped = true;
        c->status = status;
        c->reaped_us = now_us();
        return true;
}

bool child_grace_over(const Child *c, uint64_t now) {
        return c->reaped && c->pid > 0 && now >= c->reaped_us + CHILD_DRAIN_GRACE_US;
}

uint64_t child_next_us(const Child *c, bool output_open) {
        if (c->reaped) {
                if (!output_open)
                        return 0;
                return c->pid > 0 ? c->reaped_us + CHILD_DRAIN_GRACE_US : UINT64_MAX;
        }
        if (!c->killed && c->deadline_us)
                return c->deadline_us;
        return UINT64_MAX;
}

void child_wait(Child *c) {
        if (c->reaped || c->pid <= 0)
                return;
        int status = 0;
        pid_t r;
        while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR)
                ;
        if (r == c->pid)
                (void) child_reaped(c, r, status);
}

int child_exit_code(const Child *c, int *ret_signal) {
        int sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
        if (ret_signal)
                *ret_signal = sig;
        return sig ? 128 + sig : WEXITSTATUS(c->status);
}

int child_ms_until(uint64_t at, uint64_t now) {
        if (at == UINT64_MAX)
                return -1;
        if (at <= now)
                return 0;
        uint64_t ms = (at - now + 999) / 1000;
        return ms > INT32_MAX ? INT32_MAX : (int) ms;
}
