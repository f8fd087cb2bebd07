/* SPDX-License-Identifier: MIT */
#include "parse-apart.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "spawn-util.h"
#include "time-util.h"

/* The architecture this was built for, as seccomp reports it. */
#if defined(__x86_64__)
#define PARSE_ARCH AUDIT_ARCH_X86_64
#elif defined(__i386__)
#define PARSE_ARCH AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define PARSE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__arm__)
#define PARSE_ARCH AUDIT_ARCH_ARM
#elif defined(__riscv) && __riscv_xlen == 64
#define PARSE_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER == __LITTLE_ENDIAN
#define PARSE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define PARSE_ARCH AUDIT_ARCH_S390X
#endif

#ifdef PARSE_ARCH
/* The low 32 bits of argument i. */
#define ARG_LO(i) ((unsigned)offsetof(struct seccomp_data, args[i]) + (__BYTE_ORDER == __BIG_ENDIAN ? 4u : 0u))
#define KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* nr allowed when its prot (argument 2) has no PROT_EXEC; the number
 * is still in the accumulator when nr is another. */
#define ALLOW_NO_EXEC(nr)                                                                                              \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4), BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),             \
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1), KILL, BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* What the parse may do: read and write its pipe (the only descriptor it
 * has), exit, and get and give back memory it cannot run (the parsers
 * allocate: under seccomp's strict mode a value that outgrew the heap's
 * free top killed the child, and any allocation under ASan did).
 * Anything else, or another architecture's calls (x32's included: their
 * numbers differ), kills it. */
static int confine(void) {
        static const struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PARSE_ARCH, 1, 0),
                KILL,
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                ALLOW(SYS_read),
                ALLOW(SYS_write),
                ALLOW(SYS_exit),
                ALLOW(SYS_exit_group),
                ALLOW(SYS_rt_sigreturn),
                ALLOW(SYS_brk),
                ALLOW(SYS_munmap),
                ALLOW(SYS_mremap),
                ALLOW(SYS_madvise),
#if defined(__s390x__)
                /* s390's mmap takes its arguments in a struct: nothing
                 * the filter can read, allowed as it is. */
                ALLOW(SYS_mmap),
#elif defined(__i386__)
                /* i386's mmap is old_mmap (a struct, which glibc does not
                 * use): only mmap2, whose prot the filter reads. */
                ALLOW_NO_EXEC(SYS_mmap2),
#else
                ALLOW_NO_EXEC(SYS_mmap),
#ifdef SYS_mmap2
                ALLOW_NO_EXEC(SYS_mmap2),
#endif
#endif
                ALLOW_NO_EXEC(SYS_mprotect),
                KILL,
        };
        struct sock_fprog prog = { .len = (unsigned short)ELEMENTSOF(f), .filter = (struct sock_filter *)f };
        return (int)syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
#endif

/* The child: the ids of no account, no descriptor but fd, then the
 * filter; fn's answer written whole, then exit. */
static _Noreturn void child(int fd, pid_t parent, void (*fn)(const void *arg, void *out), const void *arg, void *out,
                            size_t out_len) {
#ifdef PARSE_ARCH
        int keep[] = { fd };
        /* The parent-death signal after the ids: a change of ids clears it. */
        if (close_all_fds_except(keep, 1) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 ||
            syscall(SYS_setresgid, PARSE_APART_GID, PARSE_APART_GID, PARSE_APART_GID) < 0 ||
            syscall(SYS_setresuid, PARSE_APART_UID, PARSE_APART_UID, PARSE_APART_UID) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || confine() < 0)
                _exit(1);
        fn(arg, out);
        long code = 0;
        for (const char *p = out; out_len > 0 && code == 0;) {
                long k = syscall(SYS_write, fd, p, out_len);
                code = k <= 0;
                p += k > 0 ? k : 0;
                out_len -= k > 0 ? (size_t)k : 0;
        }
        /* The call itself: _exit's sanitizer interceptors make others. */
        syscall(SYS_exit_group, code);
        __builtin_unreachable();
#else
        (void)fd, (void)parent, (void)fn, (void)arg, (void)out, (void)out_len;
        _exit(1);
#endif
}

/* Reads fd until its end into out (exactly out_len bytes, no more),
 * until deadline: 0, -EBADMSG (short or long), -ETIMEDOUT. */
static int read_answer(int fd, void *out, size_t out_len, uint64_t deadline) {
        size_t got = 0;
        for (;;) {
                uint64_t now = now_ms();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, (int)(deadline - now));
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n <= 0)
                        continue;
                char extra;
                ssize_t k = got < out_len ? read(fd, (char *)out + got, out_len - got) : read(fd, &extra, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return got == out_len ? 0 : -EBADMSG;
                if (got == out_len)
                        return -EBADMSG;
                got += (size_t)k;
        }
}

int parse_apart(void (*fn)(const void *arg, void *out), const void *arg, void *out, size_t out_len,
                int timeout_ms) {
#ifndef PARSE_ARCH
        return -EOPNOTSUPP; /* no filter written for this architecture */
#endif
        if (geteuid() != 0)
                return -EPERM;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t parent = getpid();
        pid_t pid = spawn_fork(0);
        if (pid == 0)
                child(p[1], parent, fn, arg, out, out_len);
        close(p[1]);
        if (pid < 0) {
                close(p[0]);
                return (int)pid;
        }
        int r = read_answer(p[0], out, out_len, now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0));
        close(p[0]);
        if (r < 0)
                (void)kill(pid, SIGKILL); /* a zombie already, or one not heard to its end */
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
                r = -EBADMSG;
        return r;
}
