/* SPDX-License-Identifier: MIT */
#include "worker-spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/keyctl.h>

/* The possessor's view, read and search of a key (linux/key.h, not in the
 * uapi headers): no write, link or setattr. */
#define KEYRING_POS_LOOK (0x01000000 | 0x02000000 | 0x08000000)

#include "fd-util.h"
#include "idmap.h"
#include "protocol.h"
#include "seccomp-load.h"
#include "spawn-util.h"
#include "strv.h"

_noreturn_ static void child_fail(int errfd, int step, int e) {
        int msg[2] = { step, e };
        (void)spawn_child_write_quiet(errfd, msg, sizeof msg); /* nothing more can be reported */
        _exit(125);
}

static const char *step_name(int s) {
        switch (s) {
        case STEP_FDS: return "setting up descriptors";
        case STEP_IDMAP: return "attaching the idmapped workspace in a private mount namespace";
        case STEP_CGROUP: return "joining the workspace's cgroup";
        case STEP_USERNS: return "mapping the caller's uid and gid in the jail's outer user namespace";
        case STEP_PROC: return "mounting /proc for the jail's outer pid namespace";
        case STEP_GROUPS: return "dropping supplementary groups";
        case STEP_GID: return "switching group";
        case STEP_UID: return "switching user";
        case STEP_PDEATH: return "setting the parent-death signal";
        case STEP_NNP: return "setting no_new_privs";
        case STEP_PIPE: return "making its exec-error pipe";
        case STEP_PARENT: return "finding its starter still there";
        case STEP_CWD: return "leaving its starter's working directory";
        case STEP_KEYRING: return "joining a session keyring of its own";
        case STEP_SESSION: return "leaving its starter's session and terminal";
        case STEP_SCHED: return "leaving its starter's scheduling policy";
        case STEP_GUARD: return "loading the monitor's seccomp guard";
        case STEP_DIED: return "reaching its exec";
        default: return "executing";
        }
}

/* Runs l->pre_argv once to completion, quietly but for the start of its
 * stderr (into errbuf); its exit status, or -1 when it could not run or
 * had to be killed at the deadline (*budget, in 10 ms ticks). */
static int run_pre_once(const VsLaunch *l, int *budget, char *errbuf, size_t errsize) {
        int ep[2];
        if (pipe2(ep, O_CLOEXEC | O_NONBLOCK) < 0)
                return -1;
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0) {
                close(ep[0]);
                close(ep[1]);
                return -1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                int keep[] = { 0, 1, 2 };
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(ep[1], 2) < 0 ||
                    close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                        _exit(125);
                spawn_restore_nofile();
                execvp(l->pre_argv[0], l->pre_argv);
                _exit(127);
        }
        close(ep[1]);
        size_t used = 0;
        int status = -1;
        bool done = false;
        for (; *budget > 0 && !done; (*budget)--) {
                ssize_t n;
                while (used + 1 < errsize && (n = read(ep[0], errbuf + used, errsize - 1 - used)) > 0)
                        used += (size_t)n;
                int st;
                pid_t w = waitpid(pid, &st, WNOHANG);
                if (w == pid) {
                        status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                        done = true;
                        break;
                }
                if (w < 0 && errno != EINTR)
                        break;
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        ssize_t n;
        while (used + 1 < errsize && (n = read(ep[0], errbuf + used, errsize - 1 - used)) > 0)
                used += (size_t)n;
        errbuf[used] = 0;
        close(ep[0]);
        if (!done)
                spawn_killp(&pid);
        return status;
}

/* Runs l->pre_argv (at most 10 s in all), quietly: it prepares the ground
 * (a leftover container removed), the start that follows reports what
 * matters. It is repeated while the engine says a removal is already in
 * progress: a container it is still auto-removing (--rm of the previous
 * run) keeps its name until then, and the start would fail on the name. */
static void run_pre(const VsLaunch *l) {
        int budget = 1000;
        char err[4096];
        while (budget > 0 && run_pre_once(l, &budget, err, sizeof err) != 0 && strstr(err, "already in progress")) {
                struct timespec ts = { 0, 50 * 1000 * 1000 };
                nanosleep(&ts, NULL);
                budget -= 5;
        }
}

void worker_spawn_pre(VsLaunch *l) {
        if (l->pre_argv && l->pre_argv[0])
                run_pre(l);
        strv_free(l->pre_argv);
        l->pre_argv = NULL;
}

typedef struct SpawnChild {
        const VsLaunch *l;
        int theirs, stderr_w, err_w;
        pid_t parent;
        unsigned long ns_flags;
        bool nnp; /* PR_SET_NO_NEW_PRIVS before the exec */
        char uid_map[32], gid_map[32]; /* "ID ID 1": the caller's own ids (CLONE_NEWUSER) */
        /* The jail's share of the caller's inotify budget (CLONE_NEWUSER):
         * the kernel charges a user namespace's watches to its parents'
         * too, so a jail capped here cannot use up the daemon's own (a jail
         * that took them all switched masks over time off). "" = leave. */
        char inotify_watches[24], inotify_instances[24];
        /* What stays open while the idmapped trees are attached (a walk
         * of their paths from /, which a held directory on the way can
         * stall in the kernel): the standard three, the exec-error pipe,
         * the trees; n_keep 0: no trees. */
        const int *keep;
        size_t n_keep;
} SpawnChild;

static bool write_file(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        int r = write_all(fd, s, strlen(s));
        close(fd);
        errno = -r;
        return r >= 0;
}

/* The outer namespaces (own_pid_ns): the child is pid 1 of a new pid
 * namespace, with a mount namespace of its own where /proc is that pid
 * namespace's (bwrap reads /proc/PID of the processes it starts, by their
 * pids in its own namespace). Mounts stay slaves of the host's, as bwrap
 * makes them itself: the host's mount events still reach the jail, nothing
 * made here reaches the host. Without root it is also in a user namespace
 * of its own, where it maps only its own uid and gid (what an unprivileged
 * process may do itself); bwrap's own user namespace nests inside. */
static void enter_outer_ns(const SpawnChild *c) {
        if ((c->ns_flags & CLONE_NEWUSER) &&
            (!write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/uid_map", c->uid_map) ||
             !write_file("/proc/self/gid_map", c->gid_map)))
                child_fail(c->err_w, STEP_USERNS, errno);
        /* Set in this user namespace (the sysctl answers for the writer's
         * own); a kernel without per-namespace inotify limits (ENOENT)
         * has nothing to set. */
        if ((c->ns_flags & CLONE_NEWUSER) &&
            ((c->inotify_watches[0] && !write_file("/proc/sys/user/max_inotify_watches", c->inotify_watches) &&
              errno != ENOENT) ||
             (c->inotify_instances[0] && !write_file("/proc/sys/user/max_inotify_instances", c->inotify_instances) &&
              errno != ENOENT)))
                child_fail(c->err_w, STEP_USERNS, errno);
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                child_fail(c->err_w, STEP_PROC, errno);
}

/* Whether the starter is still there to be the parent: with the jail's
 * own pid namespace getppid() says 0, so its end is seen on the channel
 * (only the starter holds the other end). */
static bool starter_alive(const SpawnChild *c) {
        if (!(c->ns_flags & CLONE_NEWPID))
                return getppid() == c->parent;
        struct pollfd p = { .fd = 0, .events = POLLRDHUP };
        return poll(&p, 1, 0) == 0;
}

/* What else of a root starter's process a start as another uid must not
 * hand the owner, whose process the outer bwrap is (attack review 5):
 * from spawn_child, system calls only. */
static void shed_starter_state(int err_w, uid_t uid) {
        /* A session of its own, without the starter's controlling terminal
         * (a daemon run in the foreground from root's shell): the owner
         * may ptrace the outer bwrap, and would read, write and push input
         * (TIOCSTI) into root's terminal through /dev/tty. */
        if (syscall(SYS_setsid) < 0)
                child_fail(err_w, STEP_SESSION, errno);
        /* The ordinary scheduling policy (a daemon given a real-time one
         * would hand it to every command of the jail, which could starve
         * the host), I/O class (none: from the nice value), timer slack,
         * personality (ADDR_NO_RANDOMIZE would turn off the jail's address
         * randomisation). */
        struct sched_param sp = { .sched_priority = 0 };
        if (syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &sp) < 0)
                child_fail(err_w, STEP_SCHED, errno);
        (void)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, 0 /* IOPRIO_CLASS_NONE */);
        /* Nor a limit that lets the owner take a real-time policy or a
         * priority above nice 0 itself (an admin's LimitRTPRIO=), nor a
         * umask that leaves what the jail makes writable by others. */
        static const struct rlimit none = { 0, 0 };
        if (syscall(SYS_prlimit64, 0, RLIMIT_RTPRIO, &none, NULL) < 0 ||
            syscall(SYS_prlimit64, 0, RLIMIT_NICE, &none, NULL) < 0)
                child_fail(err_w, STEP_SCHED, errno);
        (void)syscall(SYS_umask, 022);
        (void)syscall(SYS_prctl, PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
        (void)syscall(SYS_personality, 0UL /* PER_LINUX */);
        /* No OOM protection the starter had (a service's negative
         * OOMScoreAdjust): a jail's memory hog must not be the last the
         * kernel picks. */
        char buf[16];
        int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t k = syscall(SYS_read, fd, buf, sizeof buf - 1);
                if (k > 0 && buf[0] == '-')
                        (void)syscall(SYS_pwrite64, fd, "0", 1, 0);
                (void)syscall(SYS_close, fd);
        }
        /* The audit log's login uid is the owner's, not root's login's
         * (where the kernel lets it be set again). */
        size_t n = sizeof buf;
        buf[--n] = 0;
        do
                buf[--n] = (char)('0' + uid % 10);
        while ((uid /= 10) && n > 0);
        fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/loginuid", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void)syscall(SYS_write, fd, buf + n, sizeof buf - 1 - n);
                (void)syscall(SYS_close, fd);
        }
}

/* The child, from spawn_vfork(): it runs in the daemon's memory until it
 * execs, so system calls only (set*id raw: glibc's wrappers would signal
 * the daemon's threads), nothing allocated, nothing written but its stack
 * (errno aside). */
static int spawn_child(void *arg) {
        const SpawnChild *c = arg;
        const VsLaunch *l = c->l;
        int err_w = c->err_w;
        if (dup2(c->theirs, 0) < 0 || dup2(c->theirs, 1) < 0 || dup2(c->stderr_w, 2) < 0)
                child_fail(err_w, STEP_FDS, errno);
        /* Into the workspace's cgroups while still privileged: the whole
         * jail descends from this process. */
        for (size_t i = 0; i < l->n_cgroup_fds && i < ELEMENTSOF(l->cgroup_fds); i++)
                if (write(l->cgroup_fds[i], "0", 1) != 1)
                        child_fail(err_w, STEP_CGROUP, errno);
        if (c->ns_flags)
                enter_outer_ns(c);
        /* A root-owned workspace's idmapped trees, over their paths, in a
         * mount namespace of this child's own (still root). Nothing else
         * of the caller's is held by then: a directory on a tree's path
         * that another process holds stalls the walk in the kernel, and
         * the monitor's instance lock, its channels and its workspaces
         * stayed with the stalled child (attack review 8f). */
        if (c->n_keep && close_all_fds_except(c->keep, c->n_keep) < 0)
                child_fail(err_w, STEP_FDS, errno);
        if (idmap_attach(l->idmap_fds, l->idmap_paths, l->n_idmap) < 0)
                child_fail(err_w, STEP_IDMAP, errno);
        /* Nothing else the caller holds reaches the backend, the jail or
         * the container: only the channel, stderr and the exec-error pipe
         * (CLOEXEC) stay. */
        int keep[] = { 0, 1, 2, err_w };
        if (close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                child_fail(err_w, STEP_FDS, errno);
        spawn_restore_nofile();
        if (l->switch_user) {
                /* Not in the starter's working directory (wherever root
                 * started the daemon: below a 0700 directory the owner
                 * could not enter, reachable through the outer bwrap's
                 * /proc/PID/cwd as the owner's). */
                if (chdir("/") < 0)
                        child_fail(err_w, STEP_CWD, errno);
                /* Nor a priority above the ordinary one (a daemon started
                 * at nice -5), which the owner could not take itself. The
                 * raw call answers 20 - nice. */
                if (syscall(SYS_getpriority, PRIO_PROCESS, 0) > 20)
                        (void)syscall(SYS_setpriority, PRIO_PROCESS, 0, 0);
                shed_starter_state(err_w, l->uid);
                /* Nor the starter's session keyring (a root login's holds
                 * root's keys; the outer bwrap is the owner's to ptrace,
                 * and its keyctl is not filtered): an empty one of its
                 * own, made before the uid change, so it is root's and
                 * counts against root's key quota (a million), not the
                 * owner's (200: the 201st jail would fail). A host that
                 * refuses keyctl itself (a container's seccomp, a kernel
                 * without keys) has none to leak. */
                if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0) {
                        if (errno != ENOSYS && errno != EPERM)
                                child_fail(err_w, STEP_KEYRING, errno);
                } else if (syscall(SYS_keyctl, KEYCTL_SETPERM, KEY_SPEC_SESSION_KEYRING, KEYRING_POS_LOOK) < 0)
                        /* Root's keyring, which the owner possesses: it
                         * may look, not link it where it outlives the
                         * jail, add to it on root's quota, or change it
                         * (attack review 4). */
                        child_fail(err_w, STEP_KEYRING, errno);
                /* The jail never runs as host root. */
                if (syscall(SYS_setgroups, 0, NULL) < 0)
                        child_fail(err_w, STEP_GROUPS, errno);
                if (syscall(SYS_setresgid, l->gid, l->gid, l->gid) < 0)
                        child_fail(err_w, STEP_GID, errno);
                if (syscall(SYS_setresuid, l->uid, l->uid, l->uid) < 0)
                        child_fail(err_w, STEP_UID, errno);
        }
        /* After the uid change, which clears it: die with the daemon. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                child_fail(err_w, STEP_PDEATH, errno);
        if (c->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(err_w, STEP_NNP, errno);
        /* The monitor's guard, under everything the jail runs. */
        if (l->guard_bpf) {
                int g = seccomp_load_bpf(l->guard_bpf, l->guard_len);
                if (g < 0)
                        child_fail(err_w, STEP_GUARD, -g);
        }
        if (!starter_alive(c))
                child_fail(err_w, STEP_PARENT, ESRCH);
        /* A path is executed as it is: execvp's fallback for a file the
         * kernel cannot run (ENOEXEC) runs /bin/sh with argc + 2 pointers
         * built on this child's small stack (under vfork, the caller's
         * memory), and runs a file that is no program as a script. */
        /* A jail started as another uid gets none of the starter's
         * environment (a root daemon's holds the Modal backend's token):
         * the outer bwrap is the owner's process, its environ the
         * owner's to read, and bwrap passes the jail only its --setenv
         * (--clearenv). */
        static char *const no_env[] = { NULL };
        char *const *envp = l->switch_user && l->sandboxed ? no_env : environ;
        /* Reached: a pipe that closes with this alone was closed by the
         * exec; one that closes empty, by the child's death on the way
         * (killed before its exec, which would otherwise read as exec'd). */
        static const int reached[2] = { STEP_EXEC, 0 };
        (void)spawn_child_write_quiet(err_w, reached, sizeof reached);
        if (strchr(l->argv[0], '/'))
                execve(l->argv[0], l->argv, envp);
        else
                execvpe(l->argv[0], l->argv, envp);
        child_fail(err_w, STEP_EXEC, errno);
}

/* A quarter of the user's limit at path (at least floor): what one jail
 * may hold of the budget its daemon (and the user's other programs)
 * share. "" when the limit cannot be read. */
static void inotify_share(const char *path, unsigned long floor, char out[static 24]) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        out[0] = 0;
        if (read_file_at(AT_FDCWD, path, 64, &text, &len) < 0)
                return;
        unsigned long v = strtoul(text, NULL, 10);
        if (v == 0)
                return;
        v /= 4;
        snprintf(out, 24, "%lu", v < floor ? floor : v);
}

int worker_spawn_exec_result(int fd, int *ret_step) {
        /* Looked at without reading until it is decided: the child writes
         * its "reached" word just before its exec, and a failure after it. */
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = 0;
        *ret_step = STEP_EXEC;
        if (poll(&p, 1, 0) < 0 || ioctl(fd, FIONREAD, &n) < 0)
                return -errno;
        bool closed = p.revents & (POLLHUP | POLLERR);
        int msg[4];
        if (!closed && (size_t)n < sizeof msg)
                return 0; /* on its way, or at its exec (a failure's word is read once the pipe closed) */
        if (closed && n == 0) {
                *ret_step = STEP_DIED;
                return -ECHILD;
        }
        ssize_t k;
        do
                k = read(fd, msg, sizeof msg);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        if (k < (ssize_t)sizeof(int[2]))
                return -EIO;
        /* A failure before the exec; or "reached", then the exec's own. */
        int at = msg[1] == 0 && msg[0] == STEP_EXEC && k >= (ssize_t)sizeof msg ? 2 : 0;
        if (at == 0 && msg[1] == 0 && msg[0] == STEP_EXEC)
                return 1; /* reached, and the pipe closed by the exec */
        *ret_step = msg[at];
        return msg[at + 1] > 0 ? -msg[at + 1] : -EIO;
}

int worker_spawn_start(const VsLaunch *l, int theirs, int stderr_w, unsigned long clone_extra, bool nnp, pid_t parent,
                       pid_t *ret_pid, int *ret_step, int *ret_exec_fd) {
        int ep[2];
        *ret_pid = 0;
        *ret_step = STEP_PIPE;
        if (ret_exec_fd)
                *ret_exec_fd = -EBADF;
        if (pipe2(ep, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int err_r = ep[0], err_w = ep[1];

        /* The parent-death signal is asked for in the child, after the
         * uid change that would clear it. Started with CLONE_PARENT (by
         * the root monitor, for the server), the child is the caller's
         * parent's, and dies with that one. */
        bool forked = clone_extra & CLONE_PARENT;
        /* A copy of the caller's memory whose exec is not awaited: the
         * monitor's starts, and the daemon's own starts as another uid
         * (a vfork child held the daemon until its exec, and the uid's
         * owner could stop it before: forever). */
        bool copy = forked || ret_exec_fd;
        SpawnChild c = { .l = l, .theirs = theirs, .stderr_w = stderr_w, .err_w = err_w, .nnp = nnp,
                         .parent = forked ? parent : getpid() };
        _cleanup_free_ int *keep = NULL;
        if (l->n_idmap) {
                if (!(keep = calloc(4 + l->n_idmap, sizeof *keep)))
                        return -ENOMEM;
                keep[0] = 0;
                keep[1] = 1;
                keep[2] = 2;
                keep[3] = err_w;
                memcpy(keep + 4, l->idmap_fds, l->n_idmap * sizeof *keep);
                c.keep = keep;
                c.n_keep = 4 + l->n_idmap;
        }
        if (l->own_pid_ns) {
                /* Root may make the namespaces itself; a user needs a user
                 * namespace for them, as bwrap does. */
                c.ns_flags = CLONE_NEWPID | CLONE_NEWNS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
                if (c.ns_flags & CLONE_NEWUSER) {
                        snprintf(c.uid_map, sizeof c.uid_map, "%u %u 1", (unsigned)geteuid(), (unsigned)geteuid());
                        snprintf(c.gid_map, sizeof c.gid_map, "%u %u 1", (unsigned)getegid(), (unsigned)getegid());
                        inotify_share("/proc/sys/fs/inotify/max_user_watches", 1024, c.inotify_watches);
                        inotify_share("/proc/sys/fs/inotify/max_user_instances", 8, c.inotify_instances);
                }
        }
        pid_t pid = copy ? spawn_clone_ns(spawn_child, &c, c.ns_flags | clone_extra)
                         : spawn_vfork_ns(spawn_child, &c, c.ns_flags | clone_extra);
        if (pid < 0) {
                *ret_step = c.ns_flags ? STEP_NS : STEP_CLONE;
                return pid;
        }
        *ret_pid = pid;
        err_w = safe_close(err_w);
        if (copy) {
                /* A copy runs on its own, and its exec is not awaited
                 * here: the owner, whose uid it has, can stop it before
                 * its exec (3 to 14 of 20 starts in an attack review,
                 * each held the monitor and the server's loop 3 s). The
                 * server watches the pipe. */
                (void)fcntl(err_r, F_SETFL, O_NONBLOCK);
                *ret_exec_fd = TAKE_FD(err_r);
                return 0;
        }
        /* vfork: the child has exec'd or failed by now, but the kernel
         * lets the caller go on as soon as the exec replaced the child's
         * memory, before it closes the child's close-on-exec descriptors:
         * the pipe is decided once it closed (poll with no event asked
         * waits for the hang-up alone, not for the "reached" word). */
        struct pollfd hup = { .fd = err_r, .events = 0 };
        while (poll(&hup, 1, -1) < 0 && errno == EINTR)
                ;
        int r = worker_spawn_exec_result(err_r, ret_step);
        if (r > 0)
                return 0;
        waitpid(pid, NULL, 0);
        *ret_pid = 0;
        return r < 0 ? r : -EIO;
}

int worker_spawn_error(const VsLaunch *l, int step, int e, VsError **err) {
        if (step == STEP_NS)
                return vs_error_set_kind(err, -e, "sandbox_unavailable",
                                         "cannot make the jail's own pid namespace (clone: %s): the local backend needs %s",
                                         strerror(e),
                                         geteuid() != 0 ? "unprivileged user namespaces (as bubblewrap does)"
                                                        : "CAP_SYS_ADMIN when the daemon runs as root");
        if (step == STEP_CLONE)
                return vs_error_set(err, -e, "clone: %s", strerror(e));
        if (step == STEP_DIED)
                return vs_error_set_kind(err, -e, "sandbox_unavailable",
                                         "starting %s: it ended before its exec (killed on the way?)", l->argv[0]);
        if (step == STEP_EXEC && e == ENOENT && l->sandboxed && l->missing_hint)
                return vs_error_set_kind(err, -ENOENT, "sandbox_unavailable", "%s not found: %s", l->argv[0],
                                         l->missing_hint);
        if (step == STEP_EXEC && e == EACCES && l->switch_user)
                return vs_error_set_kind(err, -EACCES, "sandbox_unavailable",
                                         "%s: permission denied for uid %u; the worker and bwrap must be readable and executable by the workspace owner",
                                         l->argv[0], (unsigned)l->uid);
        /* A container (systemd-nspawn, docker) mounts over parts of
         * /proc (/proc/sys read-only): the kernel then refuses a
         * user namespace's own /proc, and the write of the jail's
         * inotify share meets a read-only /proc/sys. */
        if ((step == STEP_PROC && e == EPERM) || (step == STEP_USERNS && e == EROFS))
                return vs_error_set_kind(err, -e, "sandbox_unavailable",
                                         "starting %s: %s: %s: this host mounts over parts of /proc (a "
                                         "container: /proc/sys read-only), so an ordinary user cannot give the "
                                         "jail a /proc of its own here; run vectora-sandboxd as root (the "
                                         "system unit), or run outside the container",
                                         l->argv[0], step_name(step), strerror(e));
        return vs_error_set_kind(err, -e, "sandbox_unavailable", "starting %s: %s: %s", l->argv[0], step_name(step),
                                 strerror(e));
}

int worker_spawn_ends(int chan[2], int errp[2], VsError **err) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
                return vs_error_set(err, -errno, "socketpair: %m");
        if (pipe2(errp, O_CLOEXEC) < 0) {
                int r = vs_error_set(err, -errno, "pipe: %m");
                close(chan[0]);
                close(chan[1]);
                return r;
        }
        return 0;
}

static int spawn_with(const VsLaunch *l, VsWorkerProc *ret, int *ret_exec_fd, VsError **err) {
        int chan[2], errp[2];
        if (l->pre_argv && l->pre_argv[0])
                run_pre(l);
        int r = worker_spawn_ends(chan, errp, err);
        if (r < 0)
                return r;
        _cleanup_close_ int ours = chan[0], theirs = chan[1], stderr_r = errp[0], stderr_w = errp[1];
        pid_t pid;
        int step;
        r = worker_spawn_start(l, theirs, stderr_w, 0, false, 0, &pid, &step, ret_exec_fd);
        if (r < 0)
                return worker_spawn_error(l, step, -r, err);
        ret->pid = pid;
        ret->fd = TAKE_FD(ours);
        ret->stderr_fd = TAKE_FD(stderr_r);
        return 0;
}

int worker_spawn(const VsLaunch *l, VsWorkerProc *ret, VsError **err) {
        return spawn_with(l, ret, NULL, err);
}

int worker_spawn_detached(const VsLaunch *l, VsWorkerProc *ret, int *ret_exec_fd, VsError **err) {
        return spawn_with(l, ret, ret_exec_fd, err);
}

void worker_proc_kill(VsWorkerProc *w) {
        if (w->pid > 0) {
                kill(w->pid, SIGKILL);
                while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                w->pid = 0;
        }
        w->fd = safe_close(w->fd);
        w->stderr_fd = safe_close(w->stderr_fd);
}

int launch_encode_init(const VsLaunch *l, StrBuf *out) {
        _cleanup_strv_free_ char **require = NULL;
        int r;
        if (l->require_seccomp && (r = strv_extend(&require, "seccomp")) < 0)
                return r;
        if (l->require_landlock && (r = strv_extend(&require, "landlock")) < 0)
                return r;
        ProtocolInit init = {
                .mode = l->sandboxed ? PROTOCOL_MODE_JAIL : PROTOCOL_MODE_DIRECT,
                .workspace = l->workspace,
                .rw_paths = l->rw_paths,
                .ro_paths = l->ro_paths,
                .mask = l->mask,
                .protected_paths = l->protected_paths,
                .protect = l->protect,
                .verify_empty = l->verify_empty,
                .verify_readonly = l->verify_readonly,
                .env = l->env,
                .seccomp_bpf = l->bpf,
                .seccomp_bpf_len = l->bpf_len,
                .landlock = l->sandboxed && l->landlock_rw,
                .landlock_rw = l->landlock_rw,
                .require = require,
                .limits = { .timeout_ms = l->timeout_ms, .max_output = l->max_output, .pids = l->pids,
                            .memory = l->memory },
                .proxy_socket = l->proxy_socket,
                .proxy_port = l->proxy_socket ? VS_JAIL_PROXY_PORT : 0,
        };
        return protocol_encode_init(out, &init);
}
