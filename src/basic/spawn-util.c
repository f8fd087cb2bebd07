/* SPDX-License-Identifier: MIT */
#include "spawn-util.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The soft RLIMIT_NOFILE found before spawn_raise_nofile() raised it,
 * with the hard one: a child's (set before it runs anything). */
static struct rlimit nofile_child;
static bool nofile_raised;

unsigned long spawn_raise_nofile(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 0;
        if (rl.rlim_cur >= rl.rlim_max)
                return (unsigned long)rl.rlim_cur;
        struct rlimit up = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
        /* An infinite hard limit cannot be the soft one (the kernel caps
         * descriptors at fs.nr_open): 2^20, its default, then. */
        if (up.rlim_cur == RLIM_INFINITY)
                up.rlim_cur = 1u << 20;
        if (setrlimit(RLIMIT_NOFILE, &up) < 0)
                return (unsigned long)rl.rlim_cur;
        if (!nofile_raised) {
                nofile_child = rl;
                nofile_raised = true;
        }
        return (unsigned long)up.rlim_cur;
}

void spawn_restore_nofile(void) {
        if (nofile_raised)
                (void)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &nofile_child, NULL);
}

pid_t spawn_fork(int pdeath_sig) {
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid > 0)
                return pid;

        /* Dispositions first, then the mask: a signal left pending while
         * blocked is delivered to a default handler, not the parent's. */
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void)signal(s, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        if (pdeath_sig) {
                if (prctl(PR_SET_PDEATHSIG, pdeath_sig) < 0)
                        _exit(125);
                /* The parent may have died between fork and the request. */
                if (getppid() != parent)
                        _exit(125);
        }
        return 0;
}

typedef struct VforkEntry {
        int (*fn)(void *arg);
        void *arg;
} VforkEntry;

/* The kernel's struct sigaction (x86-64, arm64 and most others: no
 * sa_restorer is needed for SIG_DFL) and its 64-bit signal set. */
struct kernel_sigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
};

ssize_t spawn_child_write_quiet(int fd, const void *buf, size_t n) {
        struct kernel_sigaction ign = { .handler = SIG_IGN }, dfl = { .handler = SIG_DFL };
        (void)syscall(SYS_rt_sigaction, SIGPIPE, &ign, NULL, sizeof ign.mask);
        ssize_t k = syscall(SYS_write, fd, buf, n);
        (void)syscall(SYS_rt_sigaction, SIGPIPE, &dfl, NULL, sizeof dfl.mask);
        return k;
}

/* The child's first steps, with every signal blocked (the caller blocked
 * them around the clone): dispositions to their defaults, then the mask
 * cleared. Raw system calls: libc's wrappers (and a sanitizer's
 * interceptors of them) keep state in the memory this child shares. */
static int vfork_entry(void *p) {
        const VforkEntry *e = p;
        struct kernel_sigaction dfl = { .handler = SIG_DFL };
        for (int s = 1; s < _NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void)syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask);
        uint64_t none = 0;
        (void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
        _exit(e->fn(e->arg));
}

#define VFORK_STACK (64u * 1024u)

static pid_t clone_entry(int (*fn)(void *arg), void *arg, unsigned long flags) {
        void *stack = mmap(NULL, VFORK_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return -errno;
        VforkEntry e = { .fn = fn, .arg = arg };
        sigset_t all, old;
        sigfillset(&all);
        (void)pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid = clone(vfork_entry, (char *)stack + VFORK_STACK, flags | SIGCHLD, &e);
        int k = pid < 0 ? -errno : 0;
        (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void)munmap(stack, VFORK_STACK);
        return k < 0 ? k : pid;
}

pid_t spawn_vfork_ns(int (*fn)(void *arg), void *arg, unsigned long ns_flags) {
        return clone_entry(fn, arg, CLONE_VM | CLONE_VFORK | ns_flags);
}

pid_t spawn_clone_ns(int (*fn)(void *arg), void *arg, unsigned long flags) {
        return clone_entry(fn, arg, flags);
}

pid_t spawn_vfork(int (*fn)(void *arg), void *arg) {
        return spawn_vfork_ns(fn, arg, 0);
}

int spawn_wait(pid_t pid) {
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(st))
                return WEXITSTATUS(st);
        return 128 + WTERMSIG(st);
}

void spawn_killp(pid_t *pid) {
        if (!pid || *pid <= 0)
                return;
        (void)kill(*pid, SIGKILL);
        (void)spawn_wait(*pid);
        *pid = 0;
}
