/* SPDX-License-Identifier: MIT */
/* vectora-sandbox-proxy: the network allowlist's proxy, a process apart
 * from the daemon (vectora-sandboxd(8), docs/threat-model.md, "What runs
 * with which privileges"). It parses the bytes the jail sends, so it holds
 * nothing worth taking: it starts from the daemon's posix-spawn-like
 * start (proxy.c, spawn_vfork), then before reading a byte of traffic
 *
 *   - as root: gives up every capability in the bounding set and becomes
 *     the user "vectora-sandbox" (or, without that user, the overflow uid
 *     and gid 65534, not dumpable, so no other process running as nobody
 *     may ptrace it), with no supplementary groups;
 *   - clears its capability sets, sets no_new_privs and asks for SIGKILL
 *     when the daemon dies;
 *   - applies Landlock: no write and no exec anywhere, reads only of what
 *     name resolution needs (/etc, /usr, the libraries);
 *   - loads a seccomp allowlist: sockets (inet, netlink for the host's
 *     addresses; no new unix socket), reading files (getaddrinfo's /etc/resolv.conf,
 *     /etc/hosts, NSS modules), poll and the memory and thread calls
 *     libuv's loop and thread pool make; anything else is EPERM.
 *
 * Its only link to the daemon is the control socket (fd 3, proxy-ctl.h):
 * listeners and rules come in, denials and connection counts go out. When
 * the daemon's end closes, it exits. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine.h"
#include "fd-util.h"
#include "host-addrs.h"
#include "landlock.h"
#include "log.h"
#include "macro.h"
#include "proxy-ctl.h"
#include "seccomp-load.h"
#include "seccomp.h"
#include "tls-intercept.h"
#include "user-util.h"

#define CTL_FD 3

#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif

static uv_loop_t *loop;
static uv_poll_t ctl_poll;
static bool have_seccomp;
static int landlock_abi;

static int send_ctl(const char *msg) {
        /* A full socket (a daemon that stopped reading) loses the message
         * rather than stalling every connection; a lost denial is counted
         * by the engine and reported with the next count (PROXY_CTL_CONNS). */
        if (send(CTL_FD, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                log_debug("a message to the daemon was lost: %m");
                return -errno;
        }
        return 0;
}

/* One datagram from the daemon, and the descriptor that came with it. */
static int ctl_read(void) {
        char buf[PROXY_CTL_MAX];
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        ssize_t n = recvmsg(CTL_FD, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -EPIPE;
        /* One descriptor at most; any other that came is closed. */
        int fd = -1;
        if (recv_take_fds(&mh, &fd, 1, NULL) == 0)
                fd = -1;
        ProxyCtlMsg m;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = (mh.msg_flags & MSG_TRUNC) ? -EMSGSIZE : proxy_ctl_decode(buf, (size_t)n, &m, &err);
        if (r >= 0) {
                r = engine_handle(loop, &m, fd, send_ctl, &err);
                proxy_ctl_msg_done(&m);
        }
        if (r < 0)
                log_error("a message from the daemon was refused: %s", err ? vs_error_message(err) : strerror(-r));
        if (r <= 0 && fd >= 0)
                close(fd);
        return 1;
}

static void on_ctl(uv_poll_t *p, int status, int events) {
        (void)p;
        (void)events;
        int r = status < 0 ? status : 1;
        while (r > 0)
                r = ctl_read();
        if (r < 0) {
                /* The daemon closed its end (or is gone): nothing to serve. */
                log_info("the daemon's control socket closed (%s); exiting", strerror(-r));
                uv_stop(loop);
        }
}

/* ---- privileges ---------------------------------------------------------------- */

static int drop_uid(VsError **err) {
        /* Not dumpable, under any uid: it holds every workspace's secrets
         * (no core file of them, no /proc/PID/mem for another process of
         * its uid, which is the daemon's under an ordinary user). Again
         * below: a change of uid resets it. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return vs_error_set(err, -errno, "PR_SET_DUMPABLE: %m");
        if (geteuid() != 0)
                return 0;
        uid_t uid;
        gid_t gid;
        bool named;
        service_ids(&uid, &gid, &named);
        if (!named)
                log_info("no user \"%s\": running as uid %d", VS_SERVICE_USER, VS_OVERFLOW_ID);
        /* Nothing can be gained back through a setuid exec afterwards, and
         * the bounding set ends any file capability too. */
        for (int c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return vs_error_set(err, -errno, "dropping capability %d from the bounding set: %m", c);
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                return vs_error_set(err, -errno, "switching to uid %u gid %u: %m", (unsigned)uid, (unsigned)gid);
        if (getuid() == 0 || geteuid() == 0)
                return vs_error_set(err, -EPERM, "still uid 0 after setresuid");
        /* Not dumpable: a process of the same uid (nobody's services) may
         * not ptrace it or read its memory. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return vs_error_set(err, -errno, "PR_SET_DUMPABLE: %m");
        return 0;
}

static int drop_caps(VsError **err) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        if (syscall(SYS_capset, &h, d) < 0)
                return vs_error_set(err, -errno, "capset: %m");
        (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        return 0;
}

#define ALLOW(name) { name, -1, 0, 0, 0 }
#define ALLOW_IF(name, arg, mask, value) { name, arg, mask, value, 0 }

static const VsSeccompAllow allowed[] = {
        /* the loop: reads, writes, polls */
        ALLOW("read"), ALLOW("write"), ALLOW("readv"), ALLOW("writev"), ALLOW("pread64"), ALLOW("close"),
        ALLOW("epoll_create1"), ALLOW("epoll_ctl"), ALLOW("epoll_wait"), ALLOW("epoll_pwait"), ALLOW("epoll_pwait2"),
        ALLOW("poll"), ALLOW("ppoll"), ALLOW("eventfd2"), ALLOW("pipe2"), ALLOW("splice"), ALLOW("fcntl"), ALLOW("dup"),
        ALLOW("dup3"), ALLOW_IF("ioctl", 1, 0xffffffff, FIONBIO), ALLOW_IF("ioctl", 1, 0xffffffff, FIOCLEX),
        ALLOW("clock_gettime"), ALLOW("clock_getres"), ALLOW("gettimeofday"), ALLOW("nanosleep"),
        ALLOW("clock_nanosleep"), ALLOW("getpid"), ALLOW("gettid"), ALLOW("getuid"), ALLOW("geteuid"),
        ALLOW("getgid"), ALLOW("getegid"), ALLOW("getrandom"), ALLOW("uname"), ALLOW("sched_yield"),
        ALLOW("sched_getaffinity"), ALLOW("getrlimit"), ALLOW("prlimit64"),
        /* sockets: upstream TCP, DNS (UDP/TCP), netlink for the host's
         * addresses. No new unix socket: the listeners come made, and
         * neither this filter nor Landlock sees the path a unix socket
         * connects to, so one would reach every socket of the proxy's
         * uid (under a user daemon: the daemon's own API, the session
         * bus, an ssh agent). getaddrinfo's nscd and systemd-resolved
         * clients fall back to the files and DNS without it. */
        ALLOW_IF("socket", 0, 0xffffffff, AF_INET),
        ALLOW_IF("socket", 0, 0xffffffff, AF_INET6), ALLOW_IF("socket", 0, 0xffffffff, AF_NETLINK),
        ALLOW("connect"), ALLOW("accept"), ALLOW("accept4"), ALLOW("listen"), ALLOW("bind"), ALLOW("shutdown"),
        ALLOW("sendto"), ALLOW("recvfrom"), ALLOW("sendmsg"), ALLOW("recvmsg"), ALLOW("sendmmsg"),
        ALLOW("recvmmsg"), ALLOW("getsockname"), ALLOW("getpeername"), ALLOW("setsockopt"), ALLOW("getsockopt"),
        /* files, read only (Landlock refuses any write): resolv.conf,
         * hosts, nsswitch.conf, gai.conf, NSS modules */
        ALLOW_IF("openat", 2, O_ACCMODE, O_RDONLY), ALLOW_IF("open", 1, O_ACCMODE, O_RDONLY), ALLOW("fstat"),
        ALLOW("newfstatat"), ALLOW("statx"), ALLOW("stat"), ALLOW("lstat"), ALLOW("lseek"), ALLOW("access"),
        ALLOW("faccessat"), ALLOW("faccessat2"), ALLOW("readlink"), ALLOW("readlinkat"), ALLOW("getdents64"),
        /* memory, threads (libuv's pool resolves names), signals, the end */
        ALLOW("mmap"), ALLOW("munmap"), ALLOW("mprotect"), ALLOW("mremap"), ALLOW("madvise"), ALLOW("brk"),
        ALLOW("futex"), ALLOW("set_robust_list"), ALLOW("rseq"), ALLOW("membarrier"),
        ALLOW_IF("clone", 0, CLONE_THREAD, CLONE_THREAD), { "clone3", -1, 0, 0, ENOSYS },
        ALLOW("rt_sigaction"), ALLOW("rt_sigprocmask"), ALLOW("rt_sigreturn"), ALLOW("sigaltstack"),
        ALLOW("tgkill"), ALLOW("exit"), ALLOW("exit_group"), ALLOW("restart_syscall"),
};

static int confine(VsError **err) {
        int r = drop_uid(err);
        if (r < 0 || (r = drop_caps(err)) < 0)
                return r;
        /* setresuid cleared any earlier request: now, and then the check
         * that the daemon did not die before it. */
        pid_t parent = (pid_t)strtol(getenv("VECTORA_PROXY_PARENT") ?: "0", NULL, 10);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return vs_error_set(err, -errno, "PR_SET_PDEATHSIG: %m");
        if (parent > 0 && getppid() != parent)
                return vs_error_set(err, -ESRCH, "the daemon (pid %d) is gone", (int)parent);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return vs_error_set(err, -errno, "PR_SET_NO_NEW_PRIVS: %m");
        /* The netlink subscription, before the filter. */
        const VsNetAddr *own;
        size_t n_own;
        (void)host_addrs_get(&own, &n_own);
        _cleanup_free_ void *bpf = NULL;
        size_t len = 0;
        _cleanup_(vs_error_freep) VsError *e = NULL;
        r = seccomp_compile_allowlist(allowed, ELEMENTSOF(allowed), &bpf, &len, &e);
        /* Without libseccomp the jails run degraded and say so; the proxy
         * does the same rather than leave every allowlist without a way out. */
        if (r == -ELIBACC)
                log_warning("%s; the proxy runs without its seccomp filter", vs_error_message(e));
        else if (r < 0)
                return vs_error_set(err, r, "no seccomp filter: %s", vs_error_message(e));
        /* What getaddrinfo reads: /etc (resolv.conf, hosts, nsswitch.conf,
         * gai.conf, ld.so.cache), wherever resolv.conf really is
         * (systemd-resolved's, resolvconf's), the NSS modules and libraries,
         * the CPU count libuv's pool sizes itself by. Directories, not
         * files: a resolv.conf or hosts replaced later is read too. */
        char resolv[PATH_MAX] = "/etc";
        if (realpath("/etc/resolv.conf", resolv))
                *strrchr(resolv, '/') = '\0';
        char *ro[] = { (char *)"/etc", resolv, (char *)"/usr", (char *)"/lib", (char *)"/lib64",
                       (char *)"/lib32", (char *)"/sys/devices/system/cpu", NULL };
        int abi = 0;
        vs_error_free(TAKE_PTR(e));
        r = landlock_apply_read_only(ro, &abi, &e);
        landlock_abi = r >= 0 ? abi : 0;
        if (r == -EOPNOTSUPP)
                log_warning("%s; the proxy runs without Landlock", vs_error_message(e));
        else if (r < 0)
                return vs_error_set(err, r, "Landlock: %s", vs_error_message(e));
        r = bpf ? seccomp_load_bpf(bpf, len) : 0;
        if (r < 0)
                return vs_error_set(err, r, "loading the seccomp filter: %s", strerror(-r));
        have_seccomp = bpf != NULL;
        return 0;
}

int main(int argc, char **argv) {
        (void)argc;
        (void)argv;
        log_setup("vectora-sandbox-proxy", STDERR_FILENO);
        const char *lvl = getenv("VECTORA_PROXY_LOG_LEVEL");
        if (lvl && log_level_from_string(lvl) >= 0)
                log_set_level((LogLevel)log_level_from_string(lvl));
        const char *style = getenv("VECTORA_PROXY_LOG_STYLE");
        if (style && (streq(style, "1") || streq(style, "2")))
                log_set_style(style[0] == '1' ? LOG_STYLE_TIME : LOG_STYLE_JOURNAL);
        signal(SIGPIPE, SIG_IGN);
        int type = 0;
        socklen_t tl = sizeof type;
        if (getsockopt(CTL_FD, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
                log_error("fd %d is not the daemon's control socket; this program is started by vectora-sandboxd",
                          CTL_FD);
                return 2;
        }
        (void)syscall(SYS_close_range, CTL_FD + 1, ~0U, 0);
        /* Each tunnel holds eight descriptors (its two sockets, the
         * copies its splice polls, two pipes) for every workspace's
         * connections: the soft limit a service starts with (1024 under
         * systemd) would cap them all at 128. The proxy starts no
         * program, so no child inherits the raised limit. */
        struct rlimit nofile;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
                nofile.rlim_cur = nofile.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &nofile);
        }
        _cleanup_(vs_error_freep) VsError *err = NULL;
        /* The CAs the secrets' hosts are checked by, read before Landlock. */
        if (tls_intercept_init(&err) < 0) {
                log_error("%s", vs_error_message(err));
                return 1;
        }
        if (confine(&err) < 0) {
                log_error("%s", vs_error_message(err));
                return 1;
        }
        loop = uv_default_loop();
        engine_request_init();
        if (uv_poll_init(loop, &ctl_poll, CTL_FD) < 0 ||
            uv_poll_start(&ctl_poll, UV_READABLE | UV_DISCONNECT, on_ctl) < 0) {
                log_error("cannot watch the control socket");
                return 1;
        }
        /* How it is confined, for the daemon's status. */
        _cleanup_free_ char *hello = proxy_ctl_encode(&(ProxyCtlMsg) { .op = PROXY_CTL_HELLO, .seccomp = have_seccomp,
                                                                      .landlock = (uint64_t)landlock_abi });
        if (hello)
                (void)send_ctl(hello);
        log_debug("serving (uid %u)", (unsigned)getuid());
        uv_run(loop, UV_RUN_DEFAULT);
        return 0;
}
