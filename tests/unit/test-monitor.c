/* SPDX-License-Identifier: MIT */
/* The root monitor's loop (src/daemon/monitor/monitor.c) on a real
 * SOCK_SEQPACKET pair, the test playing the server: nothing before hello;
 * a workspace opened only when the monitor itself reaches it from /
 * without a symlink and it belongs to the uid named, with an allowed
 * group; status counts; close; what is not served yet says so; and every
 * protocol breach (a refused datagram, a request out of state,
 * descriptors it does not take, an oversized datagram) ends the monitor. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/fuse.h>
#include <linux/mount.h>
#include <linux/keyctl.h>

#include "cgroup-kill.h"
#include "fd-util.h"
#include "host-make.h"
#include "jail-home.h"
#include "idmap.h"
#include "log.h"
#include "monitor-proto.h"
#include "monitor.h"
#include "proc-util.h"
#include "user-util.h"
#include "worker-spawn.h"

#include "fuse-stall.h"

typedef struct Fixture {
        pid_t child; /* the monitor's own process (serve_in_child), or 0 */
        int server;
        Monitor *mon;
        char dir[64];
        char bwrap[96]; /* the stand-in bwrap (setup's) the monitor takes */
        uint64_t id;
} Fixture;

#define TEST_WORKER "/test/vectora-worker"

/* The bwrap a jail's argv must start (jail-argv.h), for the test: it runs
 * what --setenv VS_TEST_CMD names with /bin/sh, as the owner the monitor
 * made it (the ids, groups and state a start leaves are the process's). */
static const char stand_in_bwrap[] = "#!/bin/sh\n"
                                     "cmd='exit 0'\n"
                                     "while [ $# -gt 0 ]; do\n"
                                     "        if [ \"$1\" = --setenv ] && [ \"$2\" = VS_TEST_CMD ]; then cmd=$3; fi\n"
                                     "        [ \"$1\" = -- ] && break\n"
                                     "        shift\n"
                                     "done\n"
                                     "exec /bin/sh -c \"$cmd\"\n";

/* dir/vectora.toml made, root's when run as root (root's opt-in). */
static void root_opt_in(const char *dir) {
        char toml[256];
        snprintf(toml, sizeof toml, "%s/vectora.toml", dir);
        int fd = open(toml, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        f->server = sv[0];
        assert_int_equal(monitor_new(sv[1], &f->mon), 0);
        snprintf(f->dir, sizeof f->dir, "/tmp/test-monitor.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        /* Where an owner's jail may walk to its workspaces below it
         * (ws_open walks with the owner's ids). */
        assert_int_equal(chmod(f->dir, 0755), 0);
        /* Root's opt-in, which ws_open asks of a directory it opens as
         * root's (root_toml_ok): the fixture's directory is root's
         * workspace in most cases. */
        root_opt_in(f->dir);
        snprintf(f->bwrap, sizeof f->bwrap, "%s/bwrap", f->dir);
        int fd = open(f->bwrap, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0755);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, stand_in_bwrap, sizeof stand_in_bwrap - 1), (ssize_t)(sizeof stand_in_bwrap - 1));
        close(fd);
        assert_int_equal(monitor_set_jail(f->mon, f->bwrap, TEST_WORKER, NULL), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        monitor_free(f->mon);
        if (f->server >= 0)
                close(f->server);
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s-rootws'", f->dir, f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* Sends e (with fd beside it when fd >= 0) and has the monitor step. */
static int ask_fds(Fixture *f, MonitorEnc *e, const int *fds, size_t n);
static int ask(Fixture *f, MonitorEnc *e, int fd) {
        return ask_fds(f, e, &fd, fd >= 0 ? 1 : 0);
}

static MonitorMsg answer;

/* The monitor's reply to the last request: its status. */
static uint64_t status_of(Fixture *f) {
        static uint8_t buf[MONITOR_MSG_MAX];
        ssize_t n = recv(f->server, buf, sizeof buf, MSG_DONTWAIT);
        assert_true(n > 0);
        VsError *err = NULL;
        assert_int_equal(monitor_decode(buf, (size_t)n, true, &answer, &err), 0);
        assert_int_equal(answer.id, f->id);
        return monitor_field(&answer, MONITOR_F_STATUS, -1)->u64;
}

/* The same, with the descriptors that came beside it (up to 4). */
static uint64_t status_fds(Fixture *f, int fds[4], size_t *n) {
        static uint8_t buf[MONITOR_MSG_MAX];
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
        ssize_t k = recvmsg(f->server, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        assert_true(k > 0);
        *n = recv_take_fds(&mh, fds, 4, NULL);
        VsError *err = NULL;
        assert_int_equal(monitor_decode(buf, (size_t)k, true, &answer, &err), 0);
        assert_int_equal(answer.id, f->id);
        return monitor_field(&answer, MONITOR_F_STATUS, -1)->u64;
}

static void begin(Fixture *f, MonitorEnc *e, MonitorReq t) {
        monitor_enc_begin(e, t, ++f->id);
}

static void hello(Fixture *f) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_HELLO);
        monitor_put_u64(&e, MONITOR_F_VERSION, 1);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
}

/* A ws_open of path for uid/gid begun in e. */
static void begin_ws_open(Fixture *f, MonitorEnc *e, const char *path, uint64_t uid, uint64_t gid) {
        begin(f, e, MONITOR_REQ_WS_OPEN);
        monitor_put_str(e, MONITOR_F_PATH, path);
        monitor_put_u64(e, MONITOR_F_UID, uid);
        monitor_put_u64(e, MONITOR_F_GID, gid);
}

static int ws_open(Fixture *f, const char *path, uint64_t uid, uint64_t gid) {
        MonitorEnc e;
        begin_ws_open(f, &e, path, uid, gid);
        assert_int_equal(ask(f, &e, -1), 0);
        return (int)status_of(f);
}

static void nothing_before_hello(void **state) {
        Fixture *f = *state;
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void hello_once(void **state) {
        Fixture *f = *state;
        hello(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_HELLO);
        monitor_put_u64(&e, MONITOR_F_VERSION, 1);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void workspaces(void **state) {
        Fixture *f = *state;
        hello(f);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), 0);
        assert_int_equal(ws_open(f, f->dir, st.st_uid, st.st_gid), 0);
        uint64_t handle = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        assert_true(handle > 0);
        /* Not that user's; a group neither the directory's nor the owner's. */
        assert_int_equal(ws_open(f, f->dir, st.st_uid + 1, st.st_gid), EPERM);
        assert_int_equal(ws_open(f, f->dir, st.st_uid, 4242), EPERM);
        /* A symlink anywhere on the way, at the end or before it. */
        char link[128], below[160];
        snprintf(link, sizeof link, "%s/link", f->dir);
        assert_int_equal(symlink(f->dir, link), 0);
        assert_int_equal(ws_open(f, link, st.st_uid, st.st_gid), EPERM);
        snprintf(below, sizeof below, "%s/sub", f->dir);
        assert_int_equal(mkdir(below, 0700), 0);
        snprintf(below, sizeof below, "%s/link/sub", f->dir);
        assert_int_equal(ws_open(f, below, st.st_uid, st.st_gid), EPERM);
        /* Not a directory; missing. */
        char file[128];
        snprintf(file, sizeof file, "%s/file", f->dir);
        close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        assert_int_equal(ws_open(f, file, st.st_uid, st.st_gid), EPERM);
        snprintf(file, sizeof file, "%s/missing", f->dir);
        assert_int_equal(ws_open(f, file, st.st_uid, st.st_gid), EPERM);

        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_equal(monitor_field(&answer, MONITOR_F_PID, -1)->u64, (uint64_t)getpid());
        assert_int_equal(monitor_field(&answer, MONITOR_F_COUNT, -1)->u64, 1);

        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), ENOENT);
        /* One handle a path: its groups are named from the path, and a
         * second would share them, their limits and their removal
         * (attack review 5); once the first is closed, it opens. */
        assert_int_equal(ws_open(f, f->dir, st.st_uid, st.st_gid), 0);
        uint64_t again = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        assert_int_equal(ws_open(f, f->dir, st.st_uid, st.st_gid), EBUSY);
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, again);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);

        /* Not served yet: said, not pretended; a workspace's groups
         * without cgroups (a monitor given none) the same. */
        begin(f, &e, MONITOR_REQ_CGROUP_MAKE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), ENOENT); /* closed above */
        assert_int_equal(ws_open(f, f->dir, st.st_uid, st.st_gid), 0);
        handle = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        begin(f, &e, MONITOR_REQ_CGROUP_MAKE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), EOPNOTSUPP);
        /* A jail it never started. */
        begin(f, &e, MONITOR_REQ_JAIL_KILL);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        monitor_put_u64(&e, MONITOR_F_GEN, 1);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), ESRCH);
}

/* A stand-in for a cgroup hierarchy (plain directories): the group dir
 * made beforehand with the control files a real one has, so that the
 * monitor's writes land in files the test reads back. */
static void fake_group(const char *parent, const char *name, const char *const *files) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", parent, name);
        assert_int_equal(mkdir(p, 0755), 0);
        for (; *files; files++) {
                snprintf(p, sizeof p, "%s/%s/%s", parent, name, *files);
                close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        }
}

static void read_back(const char *parent, const char *name, const char *file, const char *want) {
        char p[256], buf[64] = "";
        snprintf(p, sizeof p, "%s/%s/%s", parent, name, file);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_true(read(fd, buf, sizeof buf - 1) >= 0);
        close(fd);
        assert_string_equal(buf, want);
}

/* Empties a fake group of its files, as a real group's control files do
 * not count, so that ws_close's rmdir can take it. */
static void empty_group(const char *parent, const char *name, const char *const *files) {
        char p[256];
        for (; *files; files++) {
                snprintf(p, sizeof p, "%s/%s/%s", parent, name, *files);
                assert_int_equal(unlink(p), 0);
        }
}

static bool is_dir(const char *parent, const char *name) {
        char p[256];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", parent, name);
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The same directory as parent/name. */
static void same_dir(int fd, const char *parent, const char *name) {
        char p[256];
        struct stat a, b;
        snprintf(p, sizeof p, "%s/%s", parent, name);
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(stat(p, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
}

static uint64_t make(Fixture *f, uint64_t handle, const uint64_t *pids, const uint64_t *mem, int fds[4], size_t *n) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_CGROUP_MAKE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        if (pids)
                monitor_put_u64(&e, MONITOR_F_PIDS_MAX, *pids);
        if (mem)
                monitor_put_u64(&e, MONITOR_F_MEMORY_MAX, *mem);
        assert_int_equal(ask(f, &e, -1), 0);
        return status_fds(f, fds, n);
}

/* cgroup_make: the group is named by the monitor from the path it opened
 * (ws- and 16 hex digits of its SHA-256), made below the instance's
 * group, limited as asked ("max" where no limit came), and handed over
 * as a descriptor; v1 makes the memory group beside the pids one and says
 * why there is none; ws_close removes what it made; another workspace
 * handle names another group, and the server can name none itself. */
static void groups(void **state) {
        Fixture *f = *state;
        char v2[128], pids[128], memory[128], ws[128];
        snprintf(v2, sizeof v2, "%s/v2", f->dir);
        snprintf(pids, sizeof pids, "%s/pids", f->dir);
        snprintf(memory, sizeof memory, "%s/memory", f->dir);
        snprintf(ws, sizeof ws, "%s/ws", f->dir);
        assert_int_equal(mkdir(v2, 0755), 0);
        assert_int_equal(mkdir(pids, 0755), 0);
        assert_int_equal(mkdir(memory, 0755), 0);
        assert_int_equal(mkdir(ws, 0755), 0);
        root_opt_in(ws);
        /* ws- and the first 16 hex digits of SHA-256(ws path). */
        char name[32], cmd[256];
        snprintf(cmd, sizeof cmd, "printf %%s '%s' | sha256sum | cut -c1-16", ws);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char hex[32] = "";
        assert_non_null(fgets(hex, sizeof hex, p));
        pclose(p);
        hex[16] = 0;
        snprintf(name, sizeof name, "ws-%s", hex);

        static const char *const v2_files[] = { "pids.max", "memory.max", "memory.swap.max", NULL };
        static const char *const pids_files[] = { "pids.max", NULL };
        static const char *const mem_files[] = { "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", NULL };
        char *v2_parents[2] = { v2, NULL };
        assert_int_equal(monitor_set_groups(f->mon, 2, v2_parents), 0);
        hello(f);
        struct stat st;
        assert_int_equal(stat(ws, &st), 0);
        assert_int_equal(ws_open(f, ws, st.st_uid, st.st_gid), 0);
        uint64_t h = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        fake_group(v2, name, v2_files);
        int fds[4];
        size_t n;
        uint64_t p64 = 64, m64 = 256ull << 20;
        assert_int_equal(make(f, h, &p64, &m64, fds, &n), 0);
        assert_int_equal(n, 1);
        same_dir(fds[0], v2, name);
        close(fds[0]);
        read_back(v2, name, "pids.max", "64");
        read_back(v2, name, "memory.max", "268435456");
        read_back(v2, name, "memory.swap.max", "0");
        /* Again, without limits: "max", the same group. */
        assert_int_equal(make(f, h, NULL, NULL, fds, &n), 0);
        assert_int_equal(n, 1);
        same_dir(fds[0], v2, name);
        close(fds[0]);
        read_back(v2, name, "pids.max", "max");
        read_back(v2, name, "memory.max", "max");
        /* A group whose control file cannot be written: refused, no fd. */
        empty_group(v2, name, v2_files);
        assert_int_equal(make(f, h, &p64, &m64, fds, &n), ENOENT);
        assert_int_equal(n, 0);
        /* ws_close removes it; an unknown handle makes none. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_false(is_dir(v2, name));
        assert_int_equal(make(f, h, &p64, &m64, fds, &n), ENOENT);
        assert_int_equal(n, 0);
        assert_false(is_dir(v2, name));

        /* v1: pids and memory groups, both handed over. */
        char *v1_parents[2] = { pids, memory };
        assert_int_equal(monitor_set_groups(f->mon, 1, v1_parents), 0);
        assert_int_equal(ws_open(f, ws, st.st_uid, st.st_gid), 0);
        h = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        fake_group(pids, name, pids_files);
        fake_group(memory, name, mem_files);
        assert_int_equal(make(f, h, &p64, &m64, fds, &n), 0);
        assert_int_equal(n, 2);
        same_dir(fds[0], pids, name);
        same_dir(fds[1], memory, name);
        close(fds[0]);
        close(fds[1]);
        read_back(pids, name, "pids.max", "64");
        read_back(memory, name, "memory.limit_in_bytes", "268435456");
        read_back(memory, name, "memory.memsw.limit_in_bytes", "268435456");
        assert_null(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)));
        /* No memory group to be had: the pids one alone, and why. */
        empty_group(memory, name, mem_files);
        assert_int_equal(make(f, h, &p64, &m64, fds, &n), 0);
        assert_int_equal(n, 1);
        same_dir(fds[0], pids, name);
        close(fds[0]);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "no memory cgroup"));
        empty_group(pids, name, pids_files);
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_false(is_dir(pids, name));
        assert_false(is_dir(memory, name));
}

/* Sends e with the descriptors fds (n of them) and has the monitor step. */
static int ask_fds(Fixture *f, MonitorEnc *e, const int *fds, size_t n) {
        assert_int_equal(monitor_enc_end(e), 0);
        assert_int_equal(send_with_fds(f->server, e->buf.data, e->buf.len, fds, n, 0), (ssize_t)e->buf.len);
        monitor_enc_done(e);
        if (f->child > 0) {
                /* Served by the monitor's own process: its answer. */
                struct pollfd p = { .fd = f->server, .events = POLLIN };
                assert_int_equal(poll(&p, 1, 5000), 1);
                return 0;
        }
        return monitor_step(f->mon);
}

/* The monitor served from a child of this process from now on, so that
 * the jails it starts (CLONE_PARENT: its parent's children) are this
 * process's to reap, not the test runner's. */
static void serve_in_child(Fixture *f) {
        f->child = fork();
        assert_true(f->child >= 0);
        if (f->child == 0) {
                close(f->server);
                _exit(monitor_serve(f->mon) < 0);
        }
}

/* The child's end: the monitor sees the server's end close and exits. */
static void end_child(Fixture *f) {
        close(f->server);
        f->server = -EBADF;
        assert_int_equal(waitpid(f->child, NULL, 0), f->child);
        f->child = 0;
}

/* A jail_spawn's answer: its status, and for a start (which the monitor
 * answers at once) how its exec went as the exec-error pipe that came
 * with the answer tells it: *exec 1 the child exec'd, else a negative
 * errno. */
static uint64_t spawn_status(Fixture *f, int *exec) {
        int fds[4];
        size_t n;
        uint64_t st = status_fds(f, fds, &n);
        *exec = 0;
        if (st == 0) {
                assert_int_equal(n, 1);
                /* Until it is decided (the child's "reached" word comes
                 * first, the exec's end or its failure after), 5 s. */
                int step = 0;
                for (int tries = 0; tries < 5000 && !(*exec = worker_spawn_exec_result(fds[0], &step)); tries++)
                        (void)nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
                assert_int_not_equal(*exec, 0);
        } else
                assert_int_equal(n, 0);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        return st;
}

/* Reaps the jail the last answer names (this process's child), if any. */
static void reap_answered(void) {
        const MonitorField *pid = monitor_field(&answer, MONITOR_F_PID, -1);
        if (pid)
                assert_int_equal(waitpid((pid_t)pid->u64, NULL, 0), (pid_t)pid->u64);
}

/* log_reopen: the monitor's lines go to the descriptor that came with it
 * (a regular file); a pipe is refused and the old log kept; without a
 * descriptor, or with two, the request is a breach. */
static void log_reopen(void **state) {
        Fixture *f = *state;
        hello(f);
        char path[128];
        snprintf(path, sizeof path, "%s/new.log", f->dir);
        int log = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
        assert_true(log >= 0);
        int was = log_get_fd();
        MonitorEnc e;
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        assert_int_equal(ask_fds(f, &e, &p[1], 1), 0);
        assert_int_equal(status_of(f), EINVAL);
        assert_int_equal(log_get_fd(), was);
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        assert_int_equal(ask_fds(f, &e, &log, 1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_not_equal(log_get_fd(), was);
        /* A breach is logged there. */
        begin(f, &e, MONITOR_REQ_HELLO);
        monitor_put_u64(&e, MONITOR_F_VERSION, 1);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
        char buf[512] = "";
        int rfd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(rfd >= 0);
        assert_true(read(rfd, buf, sizeof buf - 1) > 0);
        close(rfd);
        assert_non_null(strstr(buf, "a request its state does not allow: hello"));
        close(log_get_fd());
        log_setup("vectora", was);
        close(log);
        close(p[0]);
        close(p[1]);
}

static void log_reopen_breaches(void **state) {
        Fixture *f = *state;
        hello(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        assert_int_equal(ask_fds(f, &e, NULL, 0), -EPROTO);
        int two[2] = { 0, 1 };
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        assert_int_equal(ask_fds(f, &e, two, 2), -EPROTO);
}

/* Out of descriptors (a server that had it open a workspace for every
 * one it had): ws_open says so; the sweep of the instance's groups does
 * not take an opendir it could not make for "all removed"; with the
 * table freed the same sweep removes them. */
static void out_of_descriptors(void **state) {
        Fixture *f = *state;
        hello(f);
        char inst[128], grp[160];
        snprintf(inst, sizeof inst, "%s/inst", f->dir);
        snprintf(grp, sizeof grp, "%s/ws-0123456789abcdef", inst);
        assert_int_equal(mkdir(inst, 0755), 0);
        assert_int_equal(mkdir(grp, 0755), 0);
        struct rlimit was;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
        struct rlimit low = { .rlim_cur = 64, .rlim_max = was.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), 0);
        uint64_t status = 0;
        for (int i = 0; i < 100 && status == 0; i++) {
                char sub[160];
                snprintf(sub, sizeof sub, "%s/d%d", f->dir, i);
                assert_int_equal(mkdir(sub, 0700), 0);
                root_opt_in(sub);
                status = (uint64_t)ws_open(f, sub, st.st_uid, st.st_gid);
        }
        assert_int_equal(status, EMFILE);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "no descriptor left"));
        /* Every descriptor taken: the sweep cannot look, and says so. */
        int spare[64];
        size_t n = 0;
        while (n < ELEMENTSOF(spare) && (spare[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
                n++;
        assert_false(cgroup_sweep(inst, true, false));
        for (size_t i = 0; i < n; i++)
                close(spare[i]);
        /* The table freed (what the monitor's end does first), it works. */
        monitor_free(f->mon);
        f->mon = NULL;
        assert_true(cgroup_sweep(inst, true, false));
        assert_false(is_dir(inst, "ws-0123456789abcdef"));
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
}

/* A jail_spawn request for handle as uid/gid with flags, the argv from
 * argv_fd beside the socket and stderr ends (fds_n of the three; the
 * stderr a pipe unless stderr_is_pipe is false), with n_mounts mount
 * groups. */
static bool stderr_is_pipe = true;
/* The last spawn_ask's stderr read end: kept open until the next (the
 * monitor answers before the child's exec, and a child that writes to its
 * stderr then, as ASan's runtime does, must not die of SIGPIPE). */
static int spawn_stderr = -EBADF;

/* A mount group of a jail_spawn: its kind, workspace-relative source
 * (or NULL), destination. */
typedef struct SpawnMount {
        uint64_t kind;
        const char *rel, *dst;
} SpawnMount;

/* The generation of spawn_ask's last start (one each). */
static uint64_t spawn_gen;
static int spawn_ask(Fixture *f, uint64_t handle, uint64_t uid, uint64_t gid, uint64_t flags, int argv_fd, size_t fds_n,
                     const SpawnMount *mounts, size_t n_mounts) {
        int sp[2], ep[2];
        spawn_stderr = safe_close(spawn_stderr);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        assert_int_equal(pipe2(ep, O_CLOEXEC), 0);
        int fds[3] = { sp[1], stderr_is_pipe ? ep[1] : sp[1], argv_fd };
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_JAIL_SPAWN);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        monitor_put_u64(&e, MONITOR_F_GEN, ++spawn_gen);
        monitor_put_u64(&e, MONITOR_F_UID, uid);
        monitor_put_u64(&e, MONITOR_F_GID, gid);
        monitor_put_u64(&e, MONITOR_F_FLAGS, flags);
        for (size_t i = 0; i < n_mounts; i++) {
                monitor_group_begin(&e, MONITOR_F_MOUNT);
                monitor_put_u64(&e, MONITOR_F_KIND, mounts[i].kind);
                if (mounts[i].rel)
                        monitor_put_str(&e, MONITOR_F_REL, mounts[i].rel);
                monitor_put_str(&e, MONITOR_F_DST, mounts[i].dst);
                monitor_group_end(&e);
        }
        int r = ask_fds(f, &e, fds, fds_n);
        close(sp[0]);
        close(sp[1]);
        spawn_stderr = ep[0];
        close(ep[1]);
        return r;
}

/* A start the monitor (serving in its child) answers and whose child
 * execs: answered, reaped, the monitor ended, the argv closed. */
static void spawn_to_exec(Fixture *f, uint64_t h, uid_t uid, gid_t gid, int a, const SpawnMount *mounts, size_t n) {
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, mounts, n), 0);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        assert_int_equal(exec, 1);
        reap_answered();
        end_child(f);
        close(a);
}

/* An argv memfd holding n bytes of text, sealed when asked. */
static int argv_fd(const char *text, size_t n, bool sealed) {
        int fd = memfd_create("argv", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, n), (ssize_t)n);
        if (sealed)
                assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW), 0);
        return fd;
}

/* A jail's argv as the daemon's plans render it (backend-local.c), led
 * by program (the monitor's bwrap), as uid:gid, the stand-in running cmd,
 * into buf: its length. */
static size_t jail_text(char *buf, size_t cap, const char *program, uid_t uid, gid_t gid, const char *cmd) {
        char ids[2][16];
        snprintf(ids[0], sizeof ids[0], "%u", (unsigned)uid);
        snprintf(ids[1], sizeof ids[1], "%u", (unsigned)gid);
        const char *parts[] = { program, "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc",
                                "--unshare-uts", "--unshare-cgroup", "--as-pid-1", "--die-with-parent", "--new-session",
                                "--cap-drop", "ALL", "--uid", ids[0], "--gid", ids[1], "--clearenv", "--setenv",
                                "VS_TEST_CMD", cmd, "--ro-bind", TEST_WORKER, "/run/vectora/vectora-worker", "--",
                                "/run/vectora/vectora-worker" };
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                size_t k = strlen(parts[i]) + 1;
                assert_true(n + k <= cap);
                memcpy(buf + n, parts[i], k);
                n += k;
        }
        return n;
}

/* jail_text's argv for the fixture's bwrap, sealed in a memfd. */
static int jail_fd(Fixture *f, uid_t uid, gid_t gid, const char *cmd) {
        char buf[4096];
        size_t n = jail_text(buf, sizeof buf, f->bwrap, uid, gid, cmd ? cmd : "exit 0");
        return argv_fd(buf, n, true);
}

/* As root an owner with no account (uid 4321 from 4321 on, directory
 * chowned to uid:uid), else the caller. */
static void test_owner(uid_t *uid, gid_t *dir_gid) {
        *uid = getuid();
        *dir_gid = getgid();
        if (getuid() == 0) {
                for (*uid = 4321; getpwuid(*uid); (*uid)++)
                        ;
                *dir_gid = *uid;
        }
}

/* f->dir opened as a workspace of an ordinary owner (test_owner's, the
 * directory chowned as root), with the group its jail gets (as root the
 * overflow gid: the owner has no account, the directory's group is none
 * of its). Its handle. */
static uint64_t owned_ws(Fixture *f, uid_t *uid, gid_t *gid) {
        gid_t dir_gid;
        test_owner(uid, &dir_gid);
        if (getuid() == 0)
                assert_int_equal(chown(f->dir, *uid, dir_gid), 0);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), 0);
        *gid = user_jail_gid(*uid, st.st_gid);
        assert_int_equal(ws_open(f, f->dir, *uid, *gid), 0);
        return monitor_field(&answer, MONITOR_F_WS, -1)->u64;
}

/* f->dir/name made (mode), owned by uid:gid (as root; else the caller's),
 * and opened as a workspace with that owner and group: its handle. */
static uint64_t sub_ws(Fixture *f, const char *name, mode_t mode, uid_t uid, gid_t gid) {
        char d[160];
        snprintf(d, sizeof d, "%s/%s", f->dir, name);
        assert_int_equal(mkdir(d, mode), 0);
        if (getuid() == 0)
                assert_int_equal(chown(d, uid, gid), 0);
        assert_int_equal(ws_open(f, d, uid, gid), 0);
        return monitor_field(&answer, MONITOR_F_WS, -1)->u64;
}

/* As root (else the case is skipped): hello, and owned_ws's workspace. */
static uint64_t root_owned_ws(Fixture *f, uid_t *uid, gid_t *gid) {
        if (getuid() != 0)
                skip();
        hello(f);
        return owned_ws(f, uid, gid);
}

/* As root with /dev/fuse (else the case is skipped): root_owned_ws. */
static uint64_t fuse_case(Fixture *f, uid_t *uid, gid_t *gid) {
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        return root_owned_ws(f, uid, gid);
}

/* jail_spawn refuses, before it starts anything: a workspace it did not
 * open; a uid not the owner's, now or when opened (0 is a breach: the
 * decoder takes none); a group neither the directory's nor the owner's;
 * a channel that is not a socket and a pipe; an argv that is not a
 * sealed memfd of NUL-terminated strings led by an absolute path; a mount
 * plan (not served yet); groups it never made. Without its three
 * descriptors the request is a breach. */
static void spawn_refusals(void **state) {
        Fixture *f = *state;
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        static const char good[] = "/bin/true\0";
        int ok = jail_fd(f, uid, gid, NULL);
        assert_int_equal(spawn_ask(f, h + 1, uid, gid, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), ENOENT);
        assert_int_equal(spawn_ask(f, h, uid + 1, gid, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_int_equal(spawn_ask(f, h, uid, gid + 7, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        static const SpawnMount tmpfs = { MONITOR_MOUNT_TMPFS, NULL, "/tmp" };
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, &tmpfs, 1), 0);
        assert_int_equal(status_of(f), EOPNOTSUPP);
        const struct {
                const char *text;
                size_t n;
                bool sealed;
        } bad[] = {
                { good, sizeof good - 1, false }, /* not sealed: the server could change it after the check */
                { "/bin/true", 9, true },         /* no NUL at its end */
                { "true\0", 5, true },            /* not an absolute path */
                { "", 0, true },                  /* empty */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int fd = argv_fd(bad[i].text, bad[i].n, bad[i].sealed);
                assert_int_equal(spawn_ask(f, h, uid, gid, 0, fd, 3, NULL, 0), 0);
                assert_int_equal(status_of(f), EINVAL);
                close(fd);
        }
        /* A pipe is no memfd. */
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, p[0], 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EINVAL);
        close(p[0]);
        close(p[1]);
        /* A stderr that is no pipe. */
        stderr_is_pipe = false;
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EINVAL);
        stderr_is_pipe = true;
        /* A program of the server's choosing as the owner, or a jail that
         * is not the one asked for (its --uid another's; test-jail-argv
         * has every case): refused with the reason, nothing run. */
        char ran[128], text[1024];
        snprintf(ran, sizeof ran, "%s/ran", f->dir);
        char cmd[160];
        snprintf(cmd, sizeof cmd, "touch %s", ran);
        int n = snprintf(text, sizeof text, "/bin/sh%c-c%c%s%c", 0, 0, cmd, 0);
        int sh = argv_fd(text, (size_t)n, true);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, sh, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "its program is not"));
        close(sh);
        sh = argv_fd(text, jail_text(text, sizeof text, f->bwrap, uid + 1, gid, cmd), true);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, sh, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "not the id the request named"));
        close(sh);
        assert_int_equal(access(ran, F_OK), -1);
        /* Its owner changed since it was opened. */
        if (getuid() == 0) {
                assert_int_equal(chown(f->dir, uid + 1, gid), 0);
                assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, NULL, 0), 0);
                assert_int_equal(status_of(f), EPERM);
                assert_int_equal(chown(f->dir, uid, gid), 0);
        }
        /* uid 0, and two descriptors instead of three: breaches. */
        assert_int_equal(spawn_ask(f, h, 0, gid, 0, ok, 3, NULL, 0), -EPROTO);
        close(ok);
}

static void spawn_breach(void **state) {
        Fixture *f = *state;
        hello(f);
        int ok = jail_fd(f, 1000, 1000, NULL);
        assert_int_equal(spawn_ask(f, 1, 1000, 1000, 0, ok, 2, NULL, 0), -EPROTO);
        close(ok);
}

static void group_name(const char *path, char name[32]) {
        char cmd[256], hex[32] = "";
        snprintf(cmd, sizeof cmd, "printf %%s '%s' | sha256sum | cut -c1-16", path);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        assert_non_null(fgets(hex, sizeof hex, p));
        pclose(p);
        hex[16] = 0;
        snprintf(name, 32, "ws-%s", hex);
}

/* A jail of a workspace the monitor made groups for is in them, the
 * server asks nothing about it; a workspace without groups gets no jail
 * while the monitor has cgroups. (Found by an attack review: a join the
 * server could leave out put the jail outside its limits.) The child
 * joins before its uid change, so this holds without root too. */
static void spawn_always_joins(void **state) {
        Fixture *f = *state;
        char v2[128], name[32];
        snprintf(v2, sizeof v2, "%s/v2", f->dir);
        assert_int_equal(mkdir(v2, 0755), 0);
        char *parents[2] = { v2, NULL };
        assert_int_equal(monitor_set_groups(f->mon, 2, parents), 0);
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        group_name(f->dir, name);
        static const char *const files[] = { "pids.max", "memory.max", "memory.swap.max", "cgroup.procs", NULL };
        fake_group(v2, name, files);
        int fds[4];
        size_t n;
        assert_int_equal(make(f, h, NULL, NULL, fds, &n), 0);
        close(fds[0]);
        int ok = jail_fd(f, uid, gid, NULL);
        uint64_t h2 = sub_ws(f, "other", 0700, uid, gid);
        serve_in_child(f);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, NULL, 0), 0);
        (void)status_of(f);
        reap_answered();
        read_back(v2, name, "cgroup.procs", "0");
        /* Another workspace of the owner's, no groups made for it. */
        assert_int_equal(spawn_ask(f, h2, uid, gid, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), ENOENT);
        assert_null(monitor_field(&answer, MONITOR_F_PID, -1));
        end_child(f);
        empty_group(v2, name, files);
        close(ok);
}

static uint64_t kill_ask(Fixture *f, uint64_t h, uint64_t gen) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_JAIL_KILL);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_u64(&e, MONITOR_F_GEN, gen);
        assert_int_equal(ask(f, &e, -1), 0);
        return status_of(f);
}

/* A jail started as cmd (exec'd): its generation and pid (this process's
 * child). */
static pid_t started(Fixture *f, uint64_t h, uid_t uid, gid_t gid, uint64_t *gen) {
        int a = jail_fd(f, uid, gid, "exec sleep 100");
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        close(a);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        assert_int_equal(exec, 1);
        *gen = spawn_gen;
        return (pid_t)monitor_field(&answer, MONITOR_F_PID, -1)->u64;
}

static void killed(pid_t pid) {
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* jail_kill ends the jail of that workspace handle and generation, the
 * monitor's start, through the pidfd it kept (a pid the server reaped may
 * name another process by then), also after the handle was closed.
 * Refused with ESRCH: another generation, another workspace's handle, a
 * jail already gone. A second live jail of one generation is refused
 * (EEXIST) and starts nothing. status counts the kills. */
static void jail_kill_ends_its_jail(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip(); /* the monitor starts jails as root only (a start drops groups and ids) */
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        uint64_t h2 = sub_ws(f, "other", 0700, uid, gid);
        serve_in_child(f);

        uint64_t gen, gen2;
        pid_t pid = started(f, h, uid, gid, &gen);
        pid_t pid2 = started(f, h2, uid, gid, &gen2);
        assert_int_equal(kill_ask(f, h, gen2), ESRCH);
        assert_int_equal(kill_ask(f, h2, gen), ESRCH);
        /* The same generation again while it runs. */
        spawn_gen--;
        int a = jail_fd(f, uid, gid, "exec sleep 100");
        assert_int_equal(spawn_ask(f, h2, uid, gid, 0, a, 3, NULL, 0), 0);
        close(a);
        int exec;
        assert_int_equal(spawn_status(f, &exec), EEXIST);
        assert_null(monitor_field(&answer, MONITOR_F_PID, -1));
        assert_int_equal(waitpid(pid2, NULL, WNOHANG), 0); /* untouched */

        assert_int_equal(kill_ask(f, h, gen), 0);
        killed(pid);
        assert_int_equal(kill_ask(f, h, gen), ESRCH);

        /* Its handle closed: still the monitor's to end. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, h2);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_equal(kill_ask(f, h2, gen2), 0);
        killed(pid2);
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        int at = monitor_next(&answer, MONITOR_F_COUNT, -1);
        at = monitor_next(&answer, MONITOR_F_COUNT, monitor_next(&answer, MONITOR_F_COUNT, at));
        assert_true(at >= 0);
        assert_int_equal(answer.fields[at].u64, 2);
        end_child(f);
}

/* A jail that ended (its exit not reaped yet by the server, its parent)
 * is gone to the monitor: jail_kill says ESRCH (a signal to it would
 * "succeed"), and its generation may start again. The monitor does not
 * keep the pidfds of ended jails: 40 jails started and ended leave at
 * most 16 (a table pruned only when full would do; pruned at every
 * start and kill, measured no faster: 600 first starts 16.6-17.9 s
 * either way). */
static void jail_table_drops_ended_jails(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip(); /* the monitor starts jails as root only */
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        serve_in_child(f);
        int before = proc_fd_count(f->child);
        uint64_t gen;
        int a = jail_fd(f, uid, gid, "exit 0");
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        gen = spawn_gen;
        pid_t pid = (pid_t)monitor_field(&answer, MONITOR_F_PID, -1)->u64;
        siginfo_t si = { 0 };
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
        assert_int_equal(kill_ask(f, h, gen), ESRCH);
        spawn_gen--;
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        assert_int_equal(spawn_status(f, &exec), 0);
        assert_int_equal(spawn_gen, gen);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        assert_int_equal(waitpid((pid_t)monitor_field(&answer, MONITOR_F_PID, -1)->u64, NULL, 0),
                         (pid_t)monitor_field(&answer, MONITOR_F_PID, -1)->u64);
        for (int i = 0; i < 40; i++) {
                assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
                assert_int_equal(spawn_status(f, &exec), 0);
                pid = (pid_t)monitor_field(&answer, MONITOR_F_PID, -1)->u64;
                assert_int_equal(waitpid(pid, NULL, 0), pid);
        }
        close(a);
        int after = proc_fd_count(f->child);
        assert_true(after - before <= 16);
        end_child(f);
}

/* An argv[0] the kernel cannot execute (no ELF, no #!) fails the start at
 * the exec step. (Attack review: glibc's execvp ran it with /bin/sh,
 * building the shell's argv on the small stack a vfork child shares with
 * its caller: past 8 190 arguments it wrote over the monitor's memory.) */
static void spawn_no_script_fallback(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        char script[128], text[1024];
        snprintf(script, sizeof script, "%s/script", f->dir);
        int fd = open(script, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "exit 0\n", 7), 7);
        close(fd);
        assert_int_equal(monitor_set_jail(f->mon, script, TEST_WORKER, NULL), 0);
        int a = argv_fd(text, jail_text(text, sizeof text, script, uid, gid, "exit 0"), true);
        serve_in_child(f);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        assert_int_equal(exec, -ENOEXEC);
        reap_answered();
        end_child(f);
        close(a);
}


/* A process standing for the server, set as the monitor's: it runs (in
 * pause()) until the case kills it. */
static pid_t paused_server(Fixture *f) {
        pid_t server = fork();
        assert_true(server >= 0);
        if (server == 0) {
                close(f->server);
                pause();
                _exit(0);
        }
        monitor_set_server(f->mon, (int)syscall(SYS_pidfd_open, server, 0));
        return server;
}
/* The jail runs only as the server's child: a monitor whose parent is not
 * the server (as once the server died mid-request: reparented) starts
 * nothing that runs. (Attack review: the parent check took the monitor's
 * parent at the spawn, by then init, and the jail ran orphaned.) */
static void spawn_only_under_server(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        char ran[128];
        snprintf(ran, sizeof ran, "%s/ran", f->dir);
        /* The server: alive throughout, but not the monitor's parent. */
        pid_t server = paused_server(f);
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        char text[256];
        snprintf(text, sizeof text, "touch %s", ran);
        int a = jail_fd(f, uid, gid, text);
        serve_in_child(f);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        assert_int_equal(exec, -ESRCH);
        reap_answered();
        end_child(f);
        close(a);
        kill(server, SIGKILL);
        assert_int_equal(waitpid(server, NULL, 0), server);
        struct stat st;
        assert_int_not_equal(stat(ran, &st), 0);
}

/* ws_open walks as the owner's jail would (its uid, one group): a
 * directory of that owner's behind one only root may enter is no
 * workspace, and the answer is the same as for a missing path or
 * another's directory, so a server asking learns nothing of what lies
 * below a 0700 directory (attack review of the monitor boundary, F3: the
 * monitor walked as root and told absent, not a directory and another's
 * apart). */
static void ws_open_walks_as_owner(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        hello(f);
        char open_dir[160], closed_dir[160], path[192];
        snprintf(open_dir, sizeof open_dir, "%s/open", f->dir);
        snprintf(closed_dir, sizeof closed_dir, "%s/closed", f->dir);
        assert_int_equal(mkdir(open_dir, 0755), 0);
        assert_int_equal(mkdir(closed_dir, 0700), 0);
        char why[3][400];
        /* Behind root's 0700 directory: refused, though it is 996's. */
        snprintf(path, sizeof path, "%s/proj", closed_dir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(chown(path, 996, 996), 0);
        assert_int_equal(ws_open(f, path, 996, 996), EPERM);
        snprintf(why[0], sizeof why[0], "%s", monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)));
        /* Missing there: the same answer. */
        snprintf(path, sizeof path, "%s/missing", closed_dir);
        assert_int_equal(ws_open(f, path, 996, 996), EPERM);
        snprintf(why[1], sizeof why[1], "%s", monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)));
        /* Where 996 may walk: another's directory, the same answer; its
         * own, opened. */
        snprintf(path, sizeof path, "%s/proj", open_dir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(chown(path, 996, 996), 0);
        assert_int_equal(ws_open(f, path, 997, 996), EPERM);
        snprintf(why[2], sizeof why[2], "%s", monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)));
        assert_string_equal(why[0], why[1]);
        assert_string_equal(why[0], why[2]);
        assert_int_equal(ws_open(f, path, 996, 996), 0);
        /* As root's: a root-owned directory below 996's 0700 one, with
         * root's vectora.toml or not, and one in root's own tree without
         * it get the answer a missing one gets (a walk as root told them
         * apart: an attack review's F3); with it, opened. */
        char priv[160];
        snprintf(priv, sizeof priv, "%s/private", f->dir);
        assert_int_equal(mkdir(priv, 0700), 0);
        assert_int_equal(chown(priv, 996, 996), 0);
        snprintf(path, sizeof path, "%s/rootdir", priv);
        assert_int_equal(mkdir(path, 0755), 0);
        root_opt_in(path);
        const char *as_root[] = { path, closed_dir, priv };
        for (size_t i = 0; i < ELEMENTSOF(as_root); i++) {
                assert_int_equal(ws_open(f, as_root[i], 0, 0), EPERM);
                assert_string_equal(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), why[0]);
        }
        snprintf(path, sizeof path, "%s/missing", priv);
        assert_int_equal(ws_open(f, path, 0, 0), EPERM);
        assert_string_equal(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), why[0]);
        root_opt_in(closed_dir);
        assert_int_equal(ws_open(f, closed_dir, 0, 0), 0);
}

/* A directory of /proc is no workspace: /proc/PID belongs to whoever runs
 * PID, so any account with a process running would be a jail's owner. */
static void proc_is_no_workspace(void **state) {
        Fixture *f = *state;
        hello(f);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d", (int)getpid());
        assert_int_equal(ws_open(f, path, getuid(), getgid()), EPERM);
}

/* A system account's directory (/etc/polkit-1/rules.d is polkitd's: its
 * jail could write polkit rules) gets groups but no jail from the
 * monitor. */
static void system_account_gets_no_jail(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        hello(f);
        assert_int_equal(chown(f->dir, 996, 996), 0);
        assert_int_equal(ws_open(f, f->dir, 996, 996), 0);
        uint64_t h = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        int ok = jail_fd(f, 996, 996, NULL);
        assert_int_equal(spawn_ask(f, h, 996, 996, 0, ok, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        close(ok);
}

/* A jail's group is the one user_jail_gid picks: a group the directory
 * merely has (its owner no member) is refused at jail_spawn (ws_open
 * takes the directory's group as the server saw it). (Attack review: a directory of an ordinary user with group
 * shadow gave the jail gid shadow, and /etc/shadow.) */
static void spawn_foreign_group_refused(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip(); /* an ordinary user's directories have its own groups only */
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), 0);
        assert_int_not_equal(st.st_gid, gid);
        int ok = jail_fd(f, uid, gid, NULL);
        serve_in_child(f);
        assert_int_equal(spawn_ask(f, h, uid, st.st_gid, 0, ok, 3, NULL, 0), 0);
        uint64_t refused = status_of(f);
        reap_answered();
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, NULL, 0), 0);
        uint64_t started = status_of(f);
        reap_answered();
        end_child(f);
        close(ok);
        assert_int_equal(refused, EPERM);
        assert_int_equal(started, 0);
}

/* The jail starts in /, not in the monitor's working directory (wherever
 * root started the daemon: below a 0700 directory the owner cannot
 * enter, where a relative path still reaches its 0644 files). */
static void spawn_not_in_monitors_cwd(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        char priv[128], in[160], out[160], text[320];
        snprintf(priv, sizeof priv, "%s/priv", f->dir);
        snprintf(in, sizeof in, "%s/in", priv);
        snprintf(out, sizeof out, "%s/cwd", f->dir);
        assert_int_equal(mkdir(priv, 0700), 0);
        assert_int_equal(mkdir(in, 0755), 0);
        snprintf(text, sizeof text, "pwd > %s", out);
        int a = jail_fd(f, uid, gid, text);
        assert_int_equal(chdir(in), 0);
        serve_in_child(f);
        assert_int_equal(chdir("/"), 0);
        assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), 0);
        reap_answered();
        end_child(f);
        close(a);
        char got[200] = "";
        FILE *fp = fopen(out, "re");
        assert_non_null(fp);
        assert_non_null(fgets(got, sizeof got, fp));
        fclose(fp);
        assert_string_equal(got, "/\n");
}

/* The file at dir/name, read whole into buf (at most n - 1 bytes). */
static void read_text(const char *dir, const char *name, char *buf, size_t n) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t k = read(fd, buf, n - 1);
        assert_true(k >= 0);
        /* One line's value: without its newline. */
        while (k > 0 && buf[k - 1] == '\n')
                k--;
        buf[k] = 0;
        close(fd);
}

/* hello, and dir (root's) opened as a root-owned workspace with root's
 * opt-in, a vectora.toml root owns: its handle. */
static uint64_t root_toml_ws(Fixture *f, const char *dir) {
        char toml[160];
        snprintf(toml, sizeof toml, "%s/vectora.toml", dir);
        int t = open(toml, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(t >= 0);
        close(t);
        hello(f);
        assert_int_equal(ws_open(f, dir, 0, 0), 0);
        return monitor_field(&answer, MONITOR_F_WS, -1)->u64;
}

static int count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        int n = 0;
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* ws_view of handle h: its status, the view in *view (or -1). */
static uint64_t ws_view_ask(Fixture *f, uint64_t h, int *view) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_WS_VIEW);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        assert_int_equal(ask(f, &e, -1), 0);
        int fds[4];
        size_t n = 0;
        uint64_t st = status_fds(f, fds, &n);
        assert_int_equal(n, st == 0 ? 1u : 0u);
        *view = n ? fds[0] : -1;
        return st;
}

static void write_text(const char *path, const char *text, mode_t mode, uid_t uid, gid_t gid) {
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchown(fd, uid, gid), 0);
        close(fd);
}

/* In a child as uid/gid (no groups): what the view shows it. Exit 0, or
 * the number of the check that failed: the path itself is closed to it;
 * through the view a 0700 directory and a 0600 file of the owner's are
 * its own, root's 0600 file is not; nothing is written; ".." at the
 * view's root stays there. */
static int view_checks(const char *dir, int view, uid_t uid, gid_t gid, const char *own, bool roots_too) {
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(90);
                char path[256], buf[64];
                snprintf(path, sizeof path, "%s/sub/own", dir);
                if (open(path, O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES)
                        _exit(1);
                int fd = openat(view, "sub/own", O_RDONLY | O_CLOEXEC);
                ssize_t k = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (k < 0 || (buf[k] = 0, strcmp(buf, own) != 0))
                        _exit(2);
                fd = openat(view, "roots", O_RDONLY | O_CLOEXEC);
                if (roots_too ? fd < 0 : (fd >= 0 || errno != EACCES))
                        _exit(3);
                if (openat(view, "sub/new", O_CREAT | O_WRONLY | O_CLOEXEC, 0600) >= 0 || errno != EROFS)
                        _exit(4);
                if (mkdirat(view, "made", 0700) == 0 || unlinkat(view, "sub/own", 0) == 0 ||
                    fchmodat(view, "sub", 0777, 0) == 0)
                        _exit(5);
                struct stat top, up;
                int dd = openat(view, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dd < 0 || fstat(dd, &up) < 0 || fstat(view, &top) < 0 || up.st_ino != top.st_ino ||
                    up.st_dev != top.st_dev)
                        _exit(6);
                if (top.st_uid != uid || top.st_gid != gid)
                        _exit(7);
                /* Its own user and mount namespaces, where it may
                 * administer mounts: the view's flags stay (a detached
                 * mount's it cleared and wrote through as the owner, root
                 * on a root-owned workspace: attack review 7), and it
                 * cannot be cloned to be made anew. */
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        _exit(errno == EPERM || errno == ENOSPC ? 12 : 11);
                {
                        struct mount_attr a = { .attr_clr = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC |
                                                            MOUNT_ATTR_NODEV };
                        if (syscall(SYS_mount_setattr, view, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) == 0)
                                _exit(8);
                        if (syscall(SYS_open_tree, view, "", OPEN_TREE_CLONE | AT_EMPTY_PATH | AT_RECURSIVE) >= 0)
                                _exit(9);
                        if (openat(view, "sub/new", O_CREAT | O_WRONLY | O_CLOEXEC, 0600) >= 0 || errno != EROFS)
                                _exit(10);
                }
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(c, &status, 0), c);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 12) {
                printf("# ws_view: this host lets no user make a user namespace: the remount attack unchecked (and impossible)\n");
                return 0;
        }
        return WEXITSTATUS(status);
}

/* ws_view gives the server a read-only view of a workspace it opened, in
 * which the owner's files are its own: an unprivileged server reads a
 * workspace behind 0700 directories, writes nothing, sees root's files
 * with others' rights and cannot climb out. Refused: a handle never
 * given, no identity to show it to, an owner changed since ws_open, a
 * system account's workspace, a root-owned one without root's opt-in
 * (which, given, shows root's files as the server's). */
static void ws_view_reads_as_owner(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        uid_t uid, su = 0;
        gid_t gid;
        for (su = 5432; getpwuid(su); su++)
                ;
        hello(f);
        char sub[96], path[128];
        snprintf(sub, sizeof sub, "%s/sub", f->dir);
        assert_int_equal(mkdir(sub, 0700), 0);
        uint64_t h = owned_ws(f, &uid, &gid);
        assert_true(su != uid);
        /* Of the jail's group (the one the view maps), as an owner's files are. */
        assert_int_equal(chown(f->dir, uid, gid), 0);
        assert_int_equal(chown(sub, uid, gid), 0);
        snprintf(path, sizeof path, "%s/own", sub);
        write_text(path, "the owner's", 0600, uid, gid);
        snprintf(path, sizeof path, "%s/roots", f->dir);
        write_text(path, "root's", 0600, 0, 0);

        int view;
        assert_int_equal(ws_view_ask(f, h, &view), EOPNOTSUPP); /* no identity yet */
        monitor_set_server_ids(f->mon, su, su);
        assert_int_equal(ws_view_ask(f, h + 100, &view), ENOENT);
        assert_int_equal(ws_view_ask(f, h, &view), 0);
        assert_int_equal(view_checks(f->dir, view, su, su, "the owner's", false), 0);
        /* Asked again: the same mount, and nothing more held by the
         * monitor (this process's, which runs it here) for it, so a server
         * cannot use up root's user namespaces or mounts with requests. */
        int held = count_fds(), again;
        for (int i = 0; i < 50; i++) {
                assert_int_equal(ws_view_ask(f, h, &again), 0);
                struct statx a, b;
                assert_int_equal(statx(view, "", AT_EMPTY_PATH, STATX_MNT_ID, &a), 0);
                assert_int_equal(statx(again, "", AT_EMPTY_PATH, STATX_MNT_ID, &b), 0);
                assert_true(a.stx_mnt_id == b.stx_mnt_id);
                close(again);
        }
        assert_int_equal(count_fds(), held);
        /* Another workspace of the same owner: its own view, the owner's
         * user namespace again (held: the one received, the monitor's view
         * and the mount namespace that holds it; no new idmapping
         * namespace). */
        uint64_t h2 = sub_ws(f, "second", 0700, uid, gid);
        held = count_fds();
        assert_int_equal(ws_view_ask(f, h2, &again), 0);
        assert_int_equal(count_fds(), held + 3);
        close(again);
        /* At most so many workspaces have a view at once (each holds a
         * mount and a user namespace of root's): past it EMFILE, until a
         * workspace with one is closed. */
        monitor_set_views_max(f->mon, 2);
        uint64_t h3 = sub_ws(f, "third", 0700, uid, gid);
        assert_int_equal(ws_view_ask(f, h3, &again), EMFILE);
        assert_int_equal(ws_view_ask(f, h, &again), 0); /* one it has: still handed */
        close(again);
        MonitorEnc ce;
        begin(f, &ce, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&ce, MONITOR_F_WS, h2);
        assert_int_equal(ask(f, &ce, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_equal(ws_view_ask(f, h3, &again), 0);
        close(again);
        monitor_set_views_max(f->mon, 8192);
        /* A directory whose group the owner is not in, opened with that
         * group (ws_open takes the directory's own): the view maps the
         * group a jail of the owner gets, so a file of that group is not
         * the server's to read (the owner could not either; attack review
         * 7 read a root:G 0640 file through a view that mapped G). */
        char grpws[96];
        gid_t foreign = 4444;
        while (getgrgid(foreign) || foreign == gid)
                foreign++;
        snprintf(grpws, sizeof grpws, "%s/grpws", f->dir);
        assert_int_equal(mkdir(grpws, 0750), 0);
        assert_int_equal(chown(grpws, uid, foreign), 0);
        snprintf(path, sizeof path, "%s/grp", grpws);
        write_text(path, "the group's", 0640, 0, foreign);
        assert_int_equal(ws_open(f, grpws, uid, foreign), 0);
        assert_int_equal(ws_view_ask(f, monitor_field(&answer, MONITOR_F_WS, -1)->u64, &again), 0);
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(su, su, su) < 0 || setresuid(su, su, su) < 0)
                        _exit(90);
                _exit(openat(again, "grp", O_RDONLY | O_CLOEXEC) >= 0 ? 1 : errno == EACCES ? 0 : 2);
        }
        int cst;
        assert_int_equal(waitpid(c, &cst, 0), c);
        assert_true(WIFEXITED(cst));
        assert_int_equal(WEXITSTATUS(cst), 0);
        close(again);
        /* Another uid than the server's sees nothing of it. */
        assert_int_equal(view_checks(f->dir, view, su + 1, su + 1, "the owner's", false), 2);
        close(view);

        /* The owner changed since ws_open. */
        assert_int_equal(chown(f->dir, uid + 1, gid), 0);
        assert_int_equal(ws_view_ask(f, h, &view), EPERM);
        assert_int_equal(chown(f->dir, uid, gid), 0);

        /* A system account's workspace. */
        assert_int_equal(ws_view_ask(f, sub_ws(f, "svc", 0700, 996, 996), &view), EPERM);

        /* Root's: only with root's opt-in, then root's files are shown. */
        /* Beside the owner's directory: root's opt-in counts in root's
         * own tree only (root_optin_needs_roots_tree). */
        char rdir[96];
        snprintf(rdir, sizeof rdir, "%s-rootws", f->dir);
        assert_int_equal(mkdir(rdir, 0700), 0);
        /* Opened with root's opt-in (ws_open asks it too), which is then
         * gone: the view asks again. */
        snprintf(path, sizeof path, "%s/vectora.toml", rdir);
        write_text(path, "", 0644, 0, 0);
        assert_int_equal(ws_open(f, rdir, 0, 0), 0);
        uint64_t rh = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        assert_int_equal(unlink(path), 0);
        assert_int_equal(ws_view_ask(f, rh, &view), EPERM);
        write_text(path, "", 0644, 0, 0);
        snprintf(path, sizeof path, "%s/sub", rdir);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof path, "%s/sub/own", rdir);
        write_text(path, "root's own", 0600, 0, 0);
        snprintf(path, sizeof path, "%s/roots", rdir);
        write_text(path, "root's", 0600, 0, 0);
        assert_int_equal(ws_view_ask(f, rh, &view), 0);
        assert_int_equal(view_checks(rdir, view, su, su, "root's own", true), 0);
        close(view);
}

/* A root-owned workspace's jail runs as the idmap identity, its writable
 * trees idmapped by the monitor: each opened below the directory it
 * opened (no symlink), root-owned, attached at its own path in the
 * child's mount namespace only; what the jail makes there is root's on
 * disk. Refused, nothing run: a tree elsewhere than its own path, behind
 * a symlink or not root-owned, another kind of mount, the identity for a
 * workspace root no longer owns. */
/* placeholder of rel below handle h: its status, the count in *made. */
static uint64_t place_ask(Fixture *f, uint64_t h, const char *rel, unsigned flags, int text, uint64_t *made) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_PLACEHOLDER);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_item(&e, rel, flags, text);
        assert_int_equal(ask(f, &e, -1), 0);
        uint64_t st = status_of(f);
        const MonitorField *c = monitor_field(&answer, MONITOR_F_COUNT, -1);
        assert_true(st ? !c : c && c->u64 <= 1);
        if (made)
                *made = c ? c->u64 : UINT64_MAX;
        return st;
}

static void is_placeholder(const char *dir, const char *rel, bool is_dir_, uid_t uid, gid_t gid, const char *text) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        assert_int_equal(st.st_uid, uid);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, is_dir_ ? 0755 : 0644);
        assert_true(is_dir_ ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
        if (text) {
                char buf[256];
                read_text(dir, rel, buf, sizeof buf);
                char want[256];
                snprintf(want, sizeof want, "%s", text);
                for (size_t n = strlen(want); n > 0 && want[n - 1] == '\n';)
                        want[--n] = 0;
                assert_string_equal(buf, want);
        }
}

/* placeholder (host-make.h) makes what the server names below a
 * workspace the monitor opened, owned like the parent, modes exact
 * whatever the umask, a text from the table only, and nothing through a
 * symlink, a file, a "..", a user's file system or where something is:
 * a link at the name (dangling, to where root could write) stays a link
 * and nothing appears where it points; a link on the way is not entered.
 * Refused: an unknown handle, an owner changed, a system account's, a
 * root-owned one without root's vectora.toml, a text for a directory. */
/* git_identity of handle h: its status; the name and address in
 * name/email (each of MONITOR_IDENT_MAX + 1 bytes) when 0. */
static uint64_t identity_ask(Fixture *f, uint64_t h, char *name, char *email) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_GIT_IDENTITY);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        assert_int_equal(ask(f, &e, -1), 0);
        uint64_t st = status_of(f);
        const char *n = monitor_field_str(monitor_field(&answer, MONITOR_F_NAME, -1)),
                   *m = monitor_field_str(monitor_field(&answer, MONITOR_F_EMAIL, -1));
        assert_true(st ? !n && !m : n && m);
        if (!st) {
                snprintf(name, MONITOR_IDENT_MAX + 1, "%s", n);
                snprintf(email, MONITOR_IDENT_MAX + 1, "%s", m);
        }
        return st;
}

/* Writes text to path as uid:gid with mode (over what is there). */
static void owner_file(const char *path, const char *text, mode_t mode, uid_t uid, gid_t gid) {
        (void)unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchown(fd, uid, gid), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

/* Root's opt-in counts only in root's own tree: a root-owned directory
 * with root's vectora.toml inside an ordinary owner's project (`sudo
 * make` leaves one; the monitor's own placeholder could name the file) is
 * no root-owned workspace, nor is one below a directory group or others
 * may write without the sticky bit, nor a vectora.toml with a second
 * link; git_identity gives root's identity only where root opted in
 * (the monitor-boundary review's F1 and F2). */
static void root_optin_needs_roots_tree(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        char proj[160], build[200], toml[240], other[240];
        char name[MONITOR_IDENT_MAX + 1], email[MONITOR_IDENT_MAX + 1];
        snprintf(proj, sizeof proj, "%s/proj", f->dir);
        snprintf(build, sizeof build, "%s/build", proj);
        snprintf(toml, sizeof toml, "%s/vectora.toml", build);
        snprintf(other, sizeof other, "%s/toml-link", f->dir);
        assert_int_equal(mkdir(proj, 0755), 0);
        assert_int_equal(chown(proj, 4321, 4321), 0);
        assert_int_equal(mkdir(build, 0755), 0);
        owner_file(toml, "", 0644, 0, 0);
        hello(f);
        /* ws_open asks the same (root_toml_ok): refused, with the answer
         * for no directory there. Opened while proj was root's, each
         * later request asks again. */
        assert_int_equal(ws_open(f, build, 0, 0), EPERM);
        assert_int_equal(chown(proj, 0, 0), 0);
        assert_int_equal(ws_open(f, build, 0, 0), 0);
        assert_int_equal(chown(proj, 4321, 4321), 0);
        uint64_t h = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        int a = jail_fd(f, VS_IDMAP_UID, VS_IDMAP_GID, NULL);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "root's own directories"));
        assert_int_equal(identity_ask(f, h, name, email), EPERM);
        /* The project root's: served. */
        assert_int_equal(chown(proj, 0, 0), 0);
        assert_int_equal(identity_ask(f, h, name, email), 0);
        /* Group-writable: refused; with the sticky bit (/tmp): served. */
        assert_int_equal(chmod(proj, 0775), 0);
        assert_int_equal(identity_ask(f, h, name, email), EPERM);
        assert_int_equal(chmod(proj, 01777), 0);
        assert_int_equal(identity_ask(f, h, name, email), 0);
        assert_int_equal(chmod(proj, 0755), 0);
        /* A second link to root's vectora.toml: refused. */
        assert_int_equal(link(toml, other), 0);
        assert_int_equal(identity_ask(f, h, name, email), EPERM);
        assert_int_equal(unlink(other), 0);
        assert_int_equal(identity_ask(f, h, name, email), 0);
        /* Root's directory without root's vectora.toml: no identity. */
        assert_int_equal(unlink(toml), 0);
        assert_int_equal(identity_ask(f, h, name, email), EPERM);
        close(a);
}

/* The child that holds an idmap's user namespace (idmap_userns, made by
 * the server and the monitor alike) keeps its two pipe ends and nothing
 * else: not the caller's clients, jails or channels (a fork keeps every
 * descriptor, close-on-exec or not; before, it kept them all). A watcher
 * thread stops the child once it is in its own user namespace (past its
 * descriptors' close), lists its descriptors and lets it go. */
/* How many descriptors pid holds, 0 when it is gone (proc-util.h's
 * proc_fd_count asserts the process is there: these may have exited). */
static size_t fd_count(pid_t pid) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        size_t n = 0;
        for (struct dirent *e; d && (e = readdir(d));)
                n += e->d_name[0] != '.';
        if (d)
                closedir(d);
        return n;
}

typedef struct UsernsCatch {
        pid_t tid;
        int marker;
        volatile int done;
        int caught, extra;
} UsernsCatch;

static void *catch_userns_child(void *arg) {
        UsernsCatch *c = arg;
        char path[96], own[64] = "", theirs[64];
        (void)!readlink("/proc/self/ns/user", own, sizeof own - 1);
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)c->tid);
        while (!c->done) {
                char buf[64] = "";
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0)
                        close(fd);
                pid_t pid = n > 0 ? (pid_t)atoi(buf) : 0;
                if (pid <= 0 || kill(pid, SIGSTOP) < 0)
                        continue;
                char ns[96];
                snprintf(ns, sizeof ns, "/proc/%d/ns/user", (int)pid);
                ssize_t k = readlink(ns, theirs, sizeof theirs - 1);
                if (k > 0) {
                        theirs[k] = 0;
                        if (strcmp(theirs, own) != 0) {
                                size_t count = fd_count(pid);
                                char m[128];
                                snprintf(m, sizeof m, "/proc/%d/fd/%d", (int)pid, c->marker);
                                /* None: it is exiting, its table already gone. */
                                c->caught += count > 0;
                                if (count > 2 || access(m, F_OK) == 0)
                                        c->extra++;
                        }
                }
                kill(pid, SIGCONT);
        }
        return NULL;
}

static void userns_child_keeps_only_its_pipes(void **state) {
        (void)state;
        UsernsCatch c = { .tid = (pid_t)syscall(SYS_gettid), .marker = eventfd(0, EFD_CLOEXEC) };
        assert_true(c.marker >= 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, catch_userns_child, &c), 0);
        for (int i = 0; i < 400 && c.caught < 5; i++) {
                VsError *err = NULL;
                int ns = idmap_userns(0, 0, 65534, 65534, &err);
                assert_true(ns >= 0);
                close(ns);
                vs_error_free(err);
        }
        c.done = 1;
        pthread_join(t, NULL);
        close(c.marker);
        print_message("# idmap_userns children caught in their namespace: %d\n", c.caught);
        assert_true(c.caught > 0);
        assert_int_equal(c.extra, 0);
}

/* git_identity: the owner's ~/.gitconfig read by a child that became the
 * owner, not by root: a config the owner cannot read (mode 0, which root
 * reads all the same) gives the default identity, as does one that is a
 * link to a file of root's; the owner's own readable one gives its name
 * and address. Needs root and the suite's account vectora-test (made by
 * scripts/install-deps), whose git config files are put back after. */
static void identity_read_as_owner(void **state) {
        Fixture *f = *state;
        struct passwd *pw = getuid() == 0 ? getpwnam("vectora-test") : NULL;
        if (!pw) {
                print_message("skipped: needs root and the account vectora-test\n");
                skip();
        }
        uid_t uid = pw->pw_uid;
        gid_t gid = pw->pw_gid;
        char home[256], conf[300], aside[320], xdg[300], xdg_aside[320], root_conf[200];
        snprintf(home, sizeof home, "%s", pw->pw_dir);
        snprintf(conf, sizeof conf, "%s/.gitconfig", home);
        snprintf(aside, sizeof aside, "%s.vs-test-aside", conf);
        snprintf(xdg, sizeof xdg, "%s/.config/git/config", home);
        snprintf(xdg_aside, sizeof xdg_aside, "%s.vs-test-aside", xdg);
        snprintf(root_conf, sizeof root_conf, "%s/root-gitconfig", f->dir);
        bool had = rename(conf, aside) == 0, had_xdg = rename(xdg, xdg_aside) == 0;
        hello(f);
        uint64_t h = sub_ws(f, "idws", 0755, uid, gid);
        serve_in_child(f); /* its memory its own, looked at below */
        /* Asked first, checked after the owner's files are put back. */
        char name[4][MONITOR_IDENT_MAX + 1] = { { 0 } }, email[4][MONITOR_IDENT_MAX + 1] = { { 0 } };
        uint64_t st[4];
        owner_file(conf, "[user]\n\tname = Owner \\\"Q\\\" Person\n\temail = owner@example.org\n", 0600, uid, gid);
        st[0] = identity_ask(f, h, name[0], email[0]);
        /* Not kept in the monitor once answered: every child it forks
         * after, the next owner's parser too, would hold a copy. */
        bool kept = proc_mem_holds(f->child, "owner@example.org");
        /* Unreadable to the owner: root would have read it. */
        int k = chmod(conf, 0);
        st[1] = identity_ask(f, h, name[1], email[1]);
        /* A link to root's file: not followed. */
        owner_file(root_conf, "[user]\n\tname = Root Secret\n\temail = root@example.org\n", 0600, 0, 0);
        k |= unlink(conf) | symlink(root_conf, conf);
        st[2] = identity_ask(f, h, name[2], email[2]);
        /* A handle the monitor never gave: refused. */
        st[3] = identity_ask(f, h + 100, name[3], email[3]);
        end_child(f);
        (void)unlink(conf);
        (void)unlink(root_conf);
        if (had)
                assert_int_equal(rename(aside, conf), 0);
        if (had_xdg)
                assert_int_equal(rename(xdg_aside, xdg), 0);
        assert_int_equal(k, 0);
        assert_int_equal(st[0], 0);
        assert_false(kept);
        assert_string_equal(name[0], "Owner \"Q\" Person");
        assert_string_equal(email[0], "owner@example.org");
        for (int i = 1; i < 3; i++) {
                assert_int_equal(st[i], 0);
                assert_string_equal(name[i], VS_JAIL_GIT_NAME);
                assert_string_equal(email[i], VS_JAIL_GIT_EMAIL);
        }
        assert_int_equal(st[3], ENOENT);
}

static void placeholder_made_below_workspace(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        struct stat dst;
        assert_int_equal(stat(f->dir, &dst), 0);
        mode_t old = umask(077);
        uint64_t made;
        /* Directories on the way made too (PARENTS), each the owner's, with
         * the group its jail gets; then there already. */
        assert_int_equal(place_ask(f, h, "a/b/.vscode", VS_HOST_MAKE_DIR | VS_HOST_MAKE_PARENTS, -1, &made), 0);
        assert_int_equal(made, 1);
        is_placeholder(f->dir, "a", true, uid, gid, NULL);
        is_placeholder(f->dir, "a/b/.vscode", true, uid, gid, NULL);
        assert_int_equal(place_ask(f, h, "a/b/.vscode", VS_HOST_MAKE_DIR | VS_HOST_MAKE_PARENTS, -1, &made), 0);
        assert_int_equal(made, 0);
        assert_int_equal(place_ask(f, h, "a/b/.vscode", VS_HOST_MAKE_DIR | VS_HOST_MAKE_EXCL, -1, NULL), EEXIST);
        /* Without PARENTS a missing directory on the way is an error. */
        assert_int_equal(place_ask(f, h, "c/.mcp.json", 0, VS_HOST_TEXT_MCP, NULL), ENOENT);
        assert_int_equal(place_ask(f, h, ".mcp.json", 0, VS_HOST_TEXT_MCP, &made), 0);
        assert_int_equal(made, 1);
        is_placeholder(f->dir, ".mcp.json", false, uid, gid, vs_host_texts[VS_HOST_TEXT_MCP]);
        /* Several in one request (one child for them all): made in
         * turn, the count those made; the first that fails answers for
         * the request, those before it made, none after it; a text for a
         * directory in any item: refused, nothing made. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_PLACEHOLDER);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_item(&e, "m/.envrc", VS_HOST_MAKE_DIR | VS_HOST_MAKE_PARENTS, -1);
        monitor_put_item(&e, "m/.mcp.json", 0, VS_HOST_TEXT_MCP);
        monitor_put_item(&e, ".mcp.json", 0, VS_HOST_TEXT_MCP);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_equal(monitor_field(&answer, MONITOR_F_COUNT, -1)->u64, 2);
        is_placeholder(f->dir, "m/.envrc", true, uid, gid, NULL);
        is_placeholder(f->dir, "m/.mcp.json", false, uid, gid, vs_host_texts[VS_HOST_TEXT_MCP]);
        begin(f, &e, MONITOR_REQ_PLACEHOLDER);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_item(&e, "n1", VS_HOST_MAKE_DIR, -1);
        monitor_put_item(&e, ".mcp.json/x", VS_HOST_MAKE_PARENTS, VS_HOST_TEXT_EMPTY);
        monitor_put_item(&e, "n3", VS_HOST_MAKE_DIR, -1);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), ENOTDIR);
        is_placeholder(f->dir, "n1", true, uid, gid, NULL);
        char gone[200];
        snprintf(gone, sizeof gone, "%s/n3", f->dir);
        assert_int_equal(access(gone, F_OK), -1);
        begin(f, &e, MONITOR_REQ_PLACEHOLDER);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_item(&e, "t1", VS_HOST_MAKE_DIR, -1);
        monitor_put_item(&e, "t2", VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), EINVAL);
        snprintf(gone, sizeof gone, "%s/t1", f->dir);
        assert_int_equal(access(gone, F_OK), -1);
        assert_int_equal(place_ask(f, h, "HEAD", VS_HOST_MAKE_EXCL, VS_HOST_TEXT_GIT_HEAD, &made), 0);
        is_placeholder(f->dir, "HEAD", false, uid, gid, vs_host_texts[VS_HOST_TEXT_GIT_HEAD]);
        /* A directory the owner made with another group: the jail's
         * group, as the owner's jail would make it. */
        char sub[160], target[160], link[160];
        snprintf(sub, sizeof sub, "%s/sub", f->dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(chown(sub, uid, 4242), 0);
        assert_int_equal(place_ask(f, h, "sub/x", 0, VS_HOST_TEXT_EMPTY, &made), 0);
        is_placeholder(f->dir, "sub/x", false, uid, gid, "");
        /* A directory the owner made read-only: opened for the make, its
         * mode given back; another account's: its mode is its word
         * (attack review: the monitor opened one as that account). */
        char ro[160];
        struct stat rst;
        snprintf(ro, sizeof ro, "%s/own0555", f->dir);
        assert_int_equal(mkdir(ro, 0755), 0);
        assert_int_equal(chown(ro, uid, gid), 0);
        assert_int_equal(chmod(ro, 0555), 0);
        assert_int_equal(place_ask(f, h, "own0555/x", 0, VS_HOST_TEXT_EMPTY, &made), 0);
        assert_int_equal(made, 1);
        assert_int_equal(stat(ro, &rst), 0);
        assert_int_equal(rst.st_mode & 07777, 0555);
        snprintf(ro, sizeof ro, "%s/other0555", f->dir);
        assert_int_equal(mkdir(ro, 0755), 0);
        assert_int_equal(chown(ro, uid + 1, gid), 0);
        assert_int_equal(chmod(ro, 0555), 0);
        assert_int_equal(place_ask(f, h, "other0555/x", 0, VS_HOST_TEXT_EMPTY, NULL), EACCES);
        snprintf(ro, sizeof ro, "%s/other0555/x", f->dir);
        assert_int_equal(access(ro, F_OK), -1);
        /* Another account's writable directory: nothing made there as
         * that account (a second review: the monitor made a listed name
         * in it, as its owner). */
        snprintf(ro, sizeof ro, "%s/other0755", f->dir);
        assert_int_equal(mkdir(ro, 0755), 0);
        assert_int_equal(chown(ro, uid + 1, gid), 0);
        assert_int_equal(place_ask(f, h, "other0755/x", VS_HOST_MAKE_PARENTS, VS_HOST_TEXT_EMPTY, NULL), EACCES);
        assert_int_equal(place_ask(f, h, "other0755/d/e", VS_HOST_MAKE_PARENTS, VS_HOST_TEXT_EMPTY, NULL), EACCES);
        snprintf(ro, sizeof ro, "%s/other0755/x", f->dir);
        assert_int_equal(access(ro, F_OK), -1);
        snprintf(ro, sizeof ro, "%s/other0755/d", f->dir);
        assert_int_equal(access(ro, F_OK), -1);
        /* A symlink on the way (to a root directory), at the name
         * (dangling, into root's directory), a file on the way. */
        snprintf(target, sizeof target, "%s/root-only", f->dir);
        assert_int_equal(mkdir(target, 0700), 0);
        snprintf(link, sizeof link, "%s/to-root", f->dir);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(place_ask(f, h, "to-root/x", VS_HOST_MAKE_PARENTS, VS_HOST_TEXT_EMPTY, NULL), ELOOP);
        snprintf(link, sizeof link, "%s/dangling", f->dir);
        snprintf(target, sizeof target, "%s/root-only/planted", f->dir);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(place_ask(f, h, "dangling", 0, VS_HOST_TEXT_EMPTY, &made), 0);
        assert_int_equal(made, 0);
        assert_int_equal(place_ask(f, h, "dangling", VS_HOST_MAKE_DIR, -1, &made), 0);
        assert_int_equal(made, 0);
        assert_int_equal(place_ask(f, h, "dangling", VS_HOST_MAKE_EXCL, VS_HOST_TEXT_EMPTY, NULL), EEXIST);
        assert_int_equal(access(target, F_OK), -1);
        assert_int_equal(place_ask(f, h, ".mcp.json/x", VS_HOST_MAKE_PARENTS, VS_HOST_TEXT_EMPTY, NULL), ENOTDIR);
        /* A directory holds no text. */
        assert_int_equal(place_ask(f, h, "d", VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY, NULL), EINVAL);
        assert_int_equal(place_ask(f, h + 100, "y", 0, VS_HOST_TEXT_EMPTY, NULL), ENOENT);
        /* The owner changed: nothing made. */
        assert_int_equal(chown(f->dir, uid + 1, dst.st_gid), 0);
        assert_int_equal(place_ask(f, h, "y", 0, VS_HOST_TEXT_EMPTY, NULL), EPERM);
        assert_int_equal(chown(f->dir, uid, dst.st_gid), 0);
        /* A system account's workspace, a root-owned one without root's
         * vectora.toml: refused; with it, made as root's. */
        assert_int_equal(place_ask(f, sub_ws(f, "sys", 0755, 1, user_jail_gid(1, 1)), "y", 0, VS_HOST_TEXT_EMPTY, NULL),
                         EPERM);
        char rdir[160];
        snprintf(rdir, sizeof rdir, "%s-rootws", f->dir); /* root's own tree */
        assert_int_equal(mkdir(rdir, 0755), 0);
        char toml[200];
        snprintf(toml, sizeof toml, "%s/vectora.toml", rdir);
        assert_int_equal(ws_open(f, rdir, 0, 0), EPERM); /* ws_open asks it too */
        write_text(toml, "", 0644, 0, 0);
        assert_int_equal(ws_open(f, rdir, 0, 0), 0);
        uint64_t hr = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        assert_int_equal(unlink(toml), 0);
        assert_int_equal(place_ask(f, hr, "y", 0, VS_HOST_TEXT_EMPTY, NULL), EPERM);
        write_text(toml, "", 0644, 0, 0);
        assert_int_equal(place_ask(f, hr, ".envrc", VS_HOST_MAKE_DIR, -1, &made), 0);
        assert_int_equal(made, 1);
        is_placeholder(rdir, ".envrc", true, 0, 0, NULL);
        umask(old);
        /* status counts what was made. */
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        int at = -1;
        for (int i = 0; i < 4; i++)
                at = monitor_next(&answer, MONITOR_F_COUNT, at);
        assert_true(at >= 0);
        /* a/b/.vscode, .mcp.json, m/.envrc, m/.mcp.json, n1 (made before
         * its request's failing item: attack review 10), HEAD, sub/x,
         * own0555/x, .envrc: leaves, not the directories on the way */
        assert_int_equal(answer.fields[at].u64, 9);
}

static void spawn_idmapped_trees(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        hello(f);
        assert_int_equal(ws_open(f, f->dir, 0, 0), 0);
        uint64_t h = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        char sub[128], mine[128], link[128], cmd[512];
        snprintf(sub, sizeof sub, "%s/sub", f->dir);
        snprintf(mine, sizeof mine, "%s/mine", f->dir);
        snprintf(link, sizeof link, "%s/link", f->dir);
        assert_int_equal(mkdir(sub, 0700), 0);
        assert_int_equal(mkdir(mine, 0755), 0);
        assert_int_equal(chown(mine, 4321, 4321), 0);
        assert_int_equal(symlink("/etc", link), 0);
        snprintf(cmd, sizeof cmd, "id -u > %s/uid; touch %s/made; chmod 4755 %s/made 2>/dev/null; echo $? > %s/chmod",
                 f->dir, sub, sub, f->dir);
        int a = jail_fd(f, VS_IDMAP_UID, VS_IDMAP_GID, cmd);
        /* Root's opt-in first: no vectora.toml (gone since ws_open), a
         * symlink, another's. */
        char toml[128];
        snprintf(toml, sizeof toml, "%s/vectora.toml", f->dir);
        assert_int_equal(unlink(toml), 0);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "vectora.toml"));
        assert_int_equal(symlink("/etc/hostname", toml), 0);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_int_equal(unlink(toml), 0);
        int t = open(toml, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(t >= 0);
        close(t);
        assert_int_equal(chown(toml, 4321, 4321), 0);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_int_equal(chown(toml, 0, 0), 0);
        const struct {
                SpawnMount m;
                uint64_t want;
        } bad[] = {
                { { MONITOR_MOUNT_RW, "sub", "/etc" }, EINVAL },
                { { MONITOR_MOUNT_RW, "link", link }, ELOOP },
                { { MONITOR_MOUNT_RW, "mine", mine }, EPERM },
                { { MONITOR_MOUNT_RO, "sub", sub }, EOPNOTSUPP },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, &bad[i].m, 1), 0);
                assert_int_equal(status_of(f), bad[i].want);
        }
        /* The identity for a workspace that is no longer root's (even
         * without a tree to idmap). */
        const SpawnMount trees[] = { { MONITOR_MOUNT_RW, NULL, f->dir }, { MONITOR_MOUNT_RW, "sub", sub } };
        assert_int_equal(chown(f->dir, 4321, 4321), 0);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, NULL, 0), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_int_equal(chown(f->dir, 0, 0), 0);
        char made[160], uidf[160], chmodf[160];
        snprintf(chmodf, sizeof chmodf, "%s/chmod", f->dir);
        snprintf(made, sizeof made, "%s/made", sub);
        snprintf(uidf, sizeof uidf, "%s/uid", f->dir);
        assert_int_equal(access(made, F_OK), -1);
        assert_int_equal(access(uidf, F_OK), -1);
        /* Both trees: the jail's writes land as root's. */
        serve_in_child(f);
        spawn_to_exec(f, h, VS_IDMAP_UID, VS_IDMAP_GID, a, trees, 2);
        struct stat st;
        assert_int_equal(stat(made, &st), 0);
        assert_int_equal(st.st_uid, 0);
        char got[32] = "";
        FILE *fp = fopen(uidf, "re");
        assert_non_null(fp);
        assert_non_null(fgets(got, sizeof got, fp));
        fclose(fp);
        assert_int_equal(atol(got), VS_IDMAP_UID);
        assert_int_equal(stat(uidf, &st), 0);
        assert_int_equal(st.st_uid, 0);
        /* The monitor's guard, whatever filter the worker would load: no
         * setuid file, which would be root's on disk. */
        assert_int_equal(stat(made, &st), 0);
        assert_int_equal(st.st_mode & (S_ISUID | S_ISGID), 0);
        read_text(f->dir, "chmod", got, sizeof got);
        assert_int_not_equal(atoi(got), 0);
}

/* A tree is attached over the very directory it is a clone of: a link
 * put on the workspace's path after the monitor opened it fails the start
 * (attack review 6: the child, still root, attached the tree wherever the
 * link led, over /proc or /usr/bin, by the path's text). */
static void spawn_idmap_attach_follows_no_link(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        char ws[96], ws2[96], decoy[96], path[160], cmd[256];
        snprintf(ws, sizeof ws, "%s/ws", f->dir);
        snprintf(ws2, sizeof ws2, "%s/ws2", f->dir);
        snprintf(decoy, sizeof decoy, "%s/decoy", f->dir);
        assert_int_equal(mkdir(ws, 0755), 0);
        assert_int_equal(mkdir(decoy, 0755), 0);
        snprintf(path, sizeof path, "%s/tree", ws);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/tree", decoy);
        assert_int_equal(mkdir(path, 0755), 0);
        uint64_t h = root_toml_ws(f, ws);
        /* The workspace moved away, a link to the decoy in its place. */
        assert_int_equal(rename(ws, ws2), 0);
        assert_int_equal(symlink("decoy", ws), 0);
        snprintf(cmd, sizeof cmd, "touch %s/tree/made", ws);
        int a = jail_fd(f, VS_IDMAP_UID, VS_IDMAP_GID, cmd);
        snprintf(path, sizeof path, "%s/tree", ws);
        const SpawnMount tree = { MONITOR_MOUNT_RW, "tree", path };
        serve_in_child(f);
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, &tree, 1), 0);
        int exec;
        assert_int_equal(spawn_status(f, &exec), 0);
        printf("# the start with a link on the tree's path: %s\n", exec == 1 ? "exec'd" : strerror(-exec));
        /* A link met with O_DIRECTORY | O_NOFOLLOW: ENOTDIR. */
        assert_true(exec == -ENOTDIR || exec == -ELOOP);
        reap_answered();
        end_child(f);
        close(a);
        snprintf(path, sizeof path, "%s/tree/made", decoy);
        assert_int_equal(access(path, F_OK), -1);
}

/* A root-owned directory where rw_paths may not lie (below /var/lib, as
 * /etc or /usr) is no workspace whose trees the monitor idmaps, even
 * with a root-owned vectora.toml in it. */
static void spawn_idmap_never_in_system_dirs(void **state) {
        Fixture *f = *state;
        if (getuid() != 0)
                skip();
        char dir[64], toml[96], cmd[160];
        snprintf(dir, sizeof dir, "/var/lib/vs-test-monitor.XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(toml, sizeof toml, "%s/vectora.toml", dir);
        uint64_t h = root_toml_ws(f, dir);
        snprintf(cmd, sizeof cmd, "touch %s/made", dir);
        int a = jail_fd(f, VS_IDMAP_UID, VS_IDMAP_GID, cmd);
        const SpawnMount tree = { MONITOR_MOUNT_RW, NULL, dir };
        assert_int_equal(spawn_ask(f, h, VS_IDMAP_UID, VS_IDMAP_GID, 0, a, 3, &tree, 1), 0);
        assert_int_equal(status_of(f), EPERM);
        assert_non_null(strstr(monitor_field_str(monitor_field(&answer, MONITOR_F_MESSAGE, -1)), "/var/lib"));
        close(a);
        char made[96];
        snprintf(made, sizeof made, "%s/made", dir);
        assert_int_equal(access(made, F_OK), -1);
        assert_int_equal(unlink(toml), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* Writes text to a /proc file of this process; whether it took. */
static bool write_file_text(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
        close(fd);
        return ok;
}

/* Root's state stays with root: the jail's first process (the owner's,
 * whose environ the owner can read) has none of the starter's
 * environment and no priority above the ordinary one. (Attack review 3:
 * the owner read MODAL_TOKEN_SECRET in the outer bwrap's
 * /proc/PID/environ, and its jail ran at the daemon's nice -5.) */
static void spawn_leaves_root_state(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        char text[2048];
        snprintf(text, sizeof text,
                 "env > %s/env; cut -d' ' -f19 /proc/self/stat > %s/nice; cat /proc/keys > %s/keys; "
                 "cat /proc/key-users > %s/key-users; cat /proc/$$/stat > %s/stat; "
                 "read s < /proc/self/timerslack_ns; echo $s > %s/slack; cat /proc/$$/personality > %s/pers; "
                 "cat /proc/$$/oom_score_adj > %s/oom; cat /proc/$$/loginuid > %s/loginuid; echo $$ > %s/pid; "
                 "umask > %s/umask; grep -E 'realtime priority|nice priority' /proc/$$/limits > %s/limits",
                 f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir, f->dir);
        int a = jail_fd(f, uid, gid, text);
        assert_int_equal(setenv("VECTORA_TEST_SECRET", "root-secret", 1), 0);
        assert_int_equal(setpriority(PRIO_PROCESS, 0, -5), 0);
        /* A starter with a real-time policy, timer slack, no address
         * randomisation, OOM protection and root's login uid (attack
         * review 5): the monitor, forked below, has them. */
        struct sched_param rr = { .sched_priority = 5 };
        assert_int_equal(sched_setscheduler(0, SCHED_RR, &rr), 0);
        assert_int_equal(prctl(PR_SET_TIMERSLACK, 1000000UL, 0, 0, 0), 0);
        int pers = personality(0xffffffff);
        assert_true(personality((unsigned long)pers | ADDR_NO_RANDOMIZE) >= 0);
        write_file_text("/proc/self/oom_score_adj", "-500");
        bool loginuid = write_file_text("/proc/self/loginuid", "0");
        mode_t mask = umask(0);
        struct rlimit rt_was, nice_was, fifty = { 50, 50 };
        assert_int_equal(getrlimit(RLIMIT_RTPRIO, &rt_was), 0);
        assert_int_equal(getrlimit(RLIMIT_NICE, &nice_was), 0);
        bool raised = setrlimit(RLIMIT_RTPRIO, &fifty) == 0 && setrlimit(RLIMIT_NICE, &fifty) == 0;
        if (!raised)
                printf("# the priority limits cannot be raised here (%s: no CAP_SYS_RESOURCE?): that part unchecked\n",
                       strerror(errno));
        /* A session keyring of the starter's own, holding a key of root's
         * (the monitor, forked below, has it as its session keyring). */
        long ring = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "vs-test-starter");
        long key = ring < 0 ? -1 : syscall(SYS_add_key, "user", "vs-test-root-key", "root-secret", 11, KEY_SPEC_SESSION_KEYRING);
        if (ring < 0 || key < 0)
                printf("# no session keyring here (%s): the keyring part unchecked\n", strerror(errno));
        serve_in_child(f);
        assert_int_equal(setpriority(PRIO_PROCESS, 0, 0), 0);
        assert_int_equal(unsetenv("VECTORA_TEST_SECRET"), 0);
        struct sched_param other = { .sched_priority = 0 };
        assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &other), 0);
        assert_int_equal(prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0), 0);
        assert_true(personality((unsigned long)pers) >= 0);
        write_file_text("/proc/self/oom_score_adj", "0");
        umask(mask);
        assert_int_equal(setrlimit(RLIMIT_RTPRIO, &rt_was), 0);
        assert_int_equal(setrlimit(RLIMIT_NICE, &nice_was), 0);
        spawn_to_exec(f, h, uid, gid, a, NULL, 0);
        char env[4096], nice[32], keys[8192], users[8192], stat[1024], slack[32], persona[32], oom[32], luid[32],
                pid[32];
        read_text(f->dir, "env", env, sizeof env);
        read_text(f->dir, "nice", nice, sizeof nice);
        read_text(f->dir, "keys", keys, sizeof keys);
        read_text(f->dir, "key-users", users, sizeof users);
        read_text(f->dir, "stat", stat, sizeof stat);
        read_text(f->dir, "slack", slack, sizeof slack);
        read_text(f->dir, "pers", persona, sizeof persona);
        read_text(f->dir, "oom", oom, sizeof oom);
        read_text(f->dir, "loginuid", luid, sizeof luid);
        read_text(f->dir, "pid", pid, sizeof pid);
        char jail_umask[16], limits[512];
        read_text(f->dir, "umask", jail_umask, sizeof jail_umask);
        read_text(f->dir, "limits", limits, sizeof limits);
        if (key >= 0)
                (void)syscall(SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_SESSION_KEYRING);
        assert_null(strstr(env, "VECTORA_TEST_SECRET"));
        assert_int_equal(atoi(nice), 0);
        /* A session of its own (no controlling terminal of the starter's),
         * the ordinary policy, no timer slack of root's, randomisation on,
         * no OOM protection, the owner's login uid where it could be set. */
        const char *after = strrchr(stat, ')');
        assert_non_null(after);
        int st_pid = 0, sid = 0, tty = -1;
        unsigned long policy = 99;
        assert_int_equal(sscanf(stat, "%d", &st_pid), 1);
        assert_int_equal(sscanf(after + 2, "%*c %*d %*d %d %d", &sid, &tty), 2);
        const char *f41 = after + 2;
        for (int field = 3; field < 41 && f41; field++)
                f41 = strchr(f41, ' ') ? strchr(f41, ' ') + 1 : NULL;
        assert_non_null(f41);
        assert_int_equal(sscanf(f41, "%lu", &policy), 1);
        printf("# the jail's first process %d: session %d, tty %d, policy %lu, slack %s, personality %s, oom %s, "
               "loginuid %s\n",
               st_pid, sid, tty, policy, slack, persona, oom, luid);
        assert_int_equal(st_pid, atoi(pid));
        assert_int_equal(sid, st_pid);
        assert_int_equal(tty, 0);
        assert_int_equal(policy, SCHED_OTHER);
        /* (Its timer slack is not checked: a real-time starter's is 0,
         * and so is the default a child of it gets.) */
        assert_int_equal(strtoul(persona, NULL, 16) & ADDR_NO_RANDOMIZE, 0);
        assert_int_equal(atoi(oom), 0);
        if (loginuid)
                assert_int_equal(strtoul(luid, NULL, 10), uid);
        /* The ordinary umask, and no real-time or raised priority of its
         * own to take. */
        for (char *c = limits; (c = strchr(c, '\n'));)
                *c = ';';
        printf("# umask %s; %s\n", jail_umask, limits);
        assert_int_equal(strtoul(jail_umask, NULL, 8), 022);
        unsigned rt_soft = 99, rt_hard = 99, nice_soft = 99, nice_hard = 99;
        const char *rt = strstr(limits, "Max realtime priority"), *ni = strstr(limits, "Max nice priority");
        assert_non_null(rt);
        assert_non_null(ni);
        assert_int_equal(sscanf(rt + strlen("Max realtime priority"), " %u %u", &rt_soft, &rt_hard), 2);
        assert_int_equal(sscanf(ni + strlen("Max nice priority"), " %u %u", &nice_soft, &nice_hard), 2);
        if (raised)
                assert_int_equal(rt_soft + rt_hard + nice_soft + nice_hard, 0);
        if (key < 0)
                return;
        /* Neither the key nor the starter's keyring is the owner's to see. */
        assert_null(strstr(keys, "vs-test-root-key"));
        assert_null(strstr(keys, "vs-test-starter"));
        /* Its own, root's, is the owner's to look at only (view, read,
         * search): not to link into the owner's keyring, where it would
         * outlive the jail, nor to fill on root's quota (attack review 4). */
        const char *ses = strstr(keys, "keyring   _ses");
        assert_non_null(ses);
        while (ses > keys && ses[-1] != '\n')
                ses--;
        char perm[16] = "";
        assert_int_equal(sscanf(ses, "%*s %*s %*s %*s %15s", perm), 1);
        assert_string_equal(perm, "0b000000");
        /* Its own keyring is root's, not charged to the owner's quota: the
         * owner's line (if any) counts no key its jail was given. */
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%5u:", (unsigned)uid);
        const char *line = strstr(users, prefix);
        unsigned usage, nkeys, nikeys, qnkeys;
        if (line) {
                assert_int_equal(sscanf(line + strlen(prefix), " %u %u/%u %u/", &usage, &nkeys, &nikeys, &qnkeys), 4);
                assert_int_equal(qnkeys, 0);
        }
}

/* A server that drops a start's exec-error pipe at once (its reply read
 * without its descriptor) harms no start: the child's "reached" word
 * into a pipe nobody reads is EPIPE, not a SIGPIPE that kills it before
 * its exec (2 of 3 starts died so while the word was a plain write). */
static void spawn_reader_gone_harmless(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        serve_in_child(f);
        int ran = 0;
        for (int i = 0; i < 8; i++) {
                char text[256], out[160];
                snprintf(out, sizeof out, "%s/ran-%d", f->dir, i);
                snprintf(text, sizeof text, "echo ok > %s", out);
                int a = jail_fd(f, uid, gid, text);
                assert_int_equal(spawn_ask(f, h, uid, gid, 0, a, 3, NULL, 0), 0);
                assert_int_equal(status_of(f), 0); /* the pipe's read end dropped unread */
                reap_answered();
                close(a);
                ran += access(out, F_OK) == 0;
        }
        end_child(f);
        assert_int_equal(ran, 8);
}

/* The owner cannot hold the monitor: its processes stopping every process
 * of its uid (the child between its uid change and its exec among them)
 * delay no answer. (Attack review: 3 to 14 of every 20 starts took the
 * full 3 s deadline and failed, the server's loop blocked meanwhile.) */
static void spawn_owner_cannot_stall(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        pid_t stopper[2];
        for (int i = 0; i < 2; i++) {
                stopper[i] = fork();
                assert_true(stopper[i] >= 0);
                if (stopper[i] == 0) {
                        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                                _exit(1);
                        for (;;)
                                (void)kill(-1, SIGSTOP); /* every process of its uid but itself */
                }
        }
        int ok = jail_fd(f, uid, gid, NULL);
        serve_in_child(f);
        int slow = 0;
        for (int i = 0; i < 20; i++) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                assert_int_equal(spawn_ask(f, h, uid, gid, 0, ok, 3, NULL, 0), 0);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                (void)status_of(f);
                slow += (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 1000;
                const MonitorField *pid = monitor_field(&answer, MONITOR_F_PID, -1);
                if (pid) {
                        kill((pid_t)pid->u64, SIGKILL);
                        assert_int_equal(waitpid((pid_t)pid->u64, NULL, 0), (pid_t)pid->u64);
                }
        }
        for (int i = 0; i < 2; i++) {
                kill(stopper[i], SIGKILL);
                kill(stopper[i], SIGCONT);
                assert_int_equal(waitpid(stopper[i], NULL, 0), stopper[i]);
        }
        end_child(f);
        close(ok);
        assert_int_equal(slow, 0);
}

/* Sends e (begun) with fds to a monitor serving in its child (closing
 * them here once sent where close_sent says, leaving the monitor's copies
 * the last), then a status request: whether each was answered within 3 s
 * (*answered, *next: poll's 1) and the first one's status. */
static void ask_then_status(Fixture *f, MonitorEnc *e, int *fds, size_t n, bool close_sent, int *answered,
                            uint64_t *st, int *next) {
        assert_int_equal(monitor_enc_end(e), 0);
        assert_int_equal(send_with_fds(f->server, e->buf.data, e->buf.len, fds, n, 0), (ssize_t)e->buf.len);
        monitor_enc_done(e);
        for (size_t i = 0; close_sent && i < n; i++)
                close(fds[i]);
        struct pollfd p = { .fd = f->server, .events = POLLIN };
        *answered = poll(&p, 1, 3000);
        *st = *answered == 1 ? status_of(f) : 0;
        begin(f, e, MONITOR_REQ_STATUS);
        assert_int_equal(monitor_enc_end(e), 0);
        assert_int_equal(send(f->server, e->buf.data, e->buf.len, 0), (ssize_t)e->buf.len);
        monitor_enc_done(e);
        *next = *answered == 1 ? poll(&p, 1, 3000) : 0;
}

/* fuse_serve's file system at f->dir/mnt (into mnt), its stall flag in
 * shared memory set to stall0; the case is skipped where it cannot mount. */
static pid_t fuse_mount(Fixture *f, char mnt[static 128], volatile int **ret_stall, int stall0) {
        return fuse_mount_in(f->dir, mnt, ret_stall, stall0);
}

/* A stderr that is a file on a file system that never answers is refused
 * at once, and the monitor answers the next request: its check asks the
 * descriptor, not the file system, and its close of what came does not
 * wait for the file system's FLUSH. (Attack review: the monitor's fstat
 * waited for a FUSE server forever; its close of any descriptor that came,
 * a breach's too, sat in an uninterruptible sleep that SIGKILL did not end,
 * with a mount in an ordinary user's own user namespace.) */
static void spawn_checks_ask_no_file_system(void **state) {
        Fixture *f = *state;
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        hello(f);
        uid_t uid;
        gid_t gid;
        uint64_t h = owned_ws(f, &uid, &gid);
        char mnt[128], file[160];
        volatile int *stall;
        pid_t fs = fuse_mount(f, mnt, &stall, 0);
        snprintf(file, sizeof file, "%s/f", mnt);
        int w = open(file, O_WRONLY | O_CLOEXEC);
        assert_true(w >= 0);
        *stall = 1;
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        int ok = jail_fd(f, uid, gid, NULL);
        serve_in_child(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_JAIL_SPAWN);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_u64(&e, MONITOR_F_GEN, 1);
        monitor_put_u64(&e, MONITOR_F_UID, uid);
        monitor_put_u64(&e, MONITOR_F_GID, gid);
        monitor_put_u64(&e, MONITOR_F_FLAGS, 0);
        int fds[3] = { sp[1], w, ok }, answered, next;
        uint64_t st;
        /* And the next request too: the descriptor's close waits for nobody. */
        ask_then_status(f, &e, fds, 3, false, &answered, &st, &next);
        /* Released either way: the file system goes, the monitor with it. */
        kill(fs, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        (void)umount2(mnt, MNT_DETACH);
        close(w);
        close(sp[0]);
        close(sp[1]);
        assert_int_equal(answered, 1);
        assert_int_equal(st, EINVAL);
        assert_int_equal(next, 1);
        assert_int_equal(status_of(f), 0);
        end_child(f);
        close(ok);
        munmap((void *)stall, 4096);
}

/* A workspace on a file system a process serves is refused without
 * asking it anything, and the monitor answers the next request: the walk
 * reads each directory's mount from the kernel's cache and the mount
 * table, never the file system. (Attack review 3, F1: ws_open's fstat on
 * a FUSE mount that answered everyone but the monitor held the monitor
 * past the server's 5 s, and the server then ended every jail.) */
/* quarantine of rel below h, identity st's: its status, the suffix in *n. */
static uint64_t aside_ask(Fixture *f, uint64_t h, const char *rel, const struct stat *st, uint64_t *n) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_QUARANTINE);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_str(&e, MONITOR_F_REL, rel);
        monitor_put_u64(&e, MONITOR_F_DEV, st->st_dev);
        monitor_put_u64(&e, MONITOR_F_INO, st->st_ino);
        assert_int_equal(ask(f, &e, -1), 0);
        uint64_t r = status_of(f);
        const MonitorField *c = monitor_field(&answer, MONITOR_F_COUNT, -1);
        assert_true(r ? !c : c != NULL);
        if (n)
                *n = c ? c->u64 : UINT64_MAX;
        return r;
}

static void mkfile(const char *dir, const char *rel) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
}

/* dir/rel given to uid:gid (not followed), as a jail of theirs made it. */
static void own_at(const char *dir, const char *rel, uid_t uid, gid_t gid) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        assert_int_equal(lchown(p, uid, gid), 0);
}

static void lstat_at(const char *dir, const char *rel, struct stat *st) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        assert_int_equal(lstat(p, st), 0);
}

/* quarantine puts aside a repository a jail made: a repository
 * directory's HEAD (its identity the directory's, as the scan notes it)
 * or a .git file or symlink (its own), renamed beside itself, never over
 * anything (-1, -2 ... next), only while it is the entry noted; any
 * other entry by its own identity; nothing through a symlink; refused
 * as a placeholder is. */
static void quarantine_puts_aside(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = root_owned_ws(f, &uid, &gid);
        char d[160];
        snprintf(d, sizeof d, "%s/sub", f->dir);
        assert_int_equal(mkdir(d, 0755), 0);
        snprintf(d, sizeof d, "%s/sub/.git", f->dir);
        assert_int_equal(mkdir(d, 0755), 0);
        mkfile(f->dir, "sub/.git/HEAD");
        struct stat git, other;
        lstat_at(f->dir, "sub/.git", &git);
        uint64_t n;
        /* Renamed as the owner would: root's repository in the owner's
         * workspace is not theirs to rename (attack review 8b: the
         * monitor's child acts as the owner in the tree). */
        own_at(f->dir, "sub", uid, gid);
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &git, NULL), EACCES);
        lstat_at(f->dir, "sub/.git/HEAD", &other);
        own_at(f->dir, "sub/.git", uid, gid);
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &git, &n), 0);
        assert_int_equal(n, 0);
        lstat_at(f->dir, "sub/.git/HEAD.vectora-quarantine", &other);
        mkfile(f->dir, "sub/.git/HEAD");
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &git, &n), 0);
        assert_int_equal(n, 1);
        lstat_at(f->dir, "sub/.git/HEAD.vectora-quarantine-1", &other);
        /* Gone, or another directory's identity: stale, nothing moved. */
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &git, NULL), ESTALE);
        mkfile(f->dir, "sub/.git/HEAD");
        lstat_at(f->dir, "sub", &other);
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &other, NULL), ESTALE);
        lstat_at(f->dir, "sub/.git/HEAD", &other);
        /* Any other entry by its own identity only (what a jail put in
         * a protected symlink's place: a file, a directory, a link). */
        mkfile(f->dir, "sub/.git/config");
        own_at(f->dir, "sub/.git/config", uid, gid);
        struct stat cfg;
        lstat_at(f->dir, "sub/.git/config", &cfg);
        assert_int_equal(aside_ask(f, h, "sub/.git/config", &git, NULL), ESTALE);
        lstat_at(f->dir, "sub/.git/config", &other);
        assert_int_equal(aside_ask(f, h, "sub/.git/config", &cfg, &n), 0);
        assert_int_equal(n, 0);
        lstat_at(f->dir, "sub/.git/config.vectora-quarantine", &other);
        assert_true(S_ISREG(other.st_mode));
        char envlink[160];
        snprintf(envlink, sizeof envlink, "%s/sub/.env", f->dir);
        assert_int_equal(symlink("nowhere/app.env", envlink), 0);
        own_at(f->dir, "sub/.env", uid, gid);
        lstat_at(f->dir, "sub/.env", &cfg);
        assert_int_equal(aside_ask(f, h, "sub/.env", &cfg, &n), 0);
        assert_int_equal(n, 0);
        lstat_at(f->dir, "sub/.env.vectora-quarantine", &other);
        assert_true(S_ISLNK(other.st_mode));
        /* Its put-aside names all taken (the jail made them first): the
         * link is removed, the count saying so; a .git is never. */
        snprintf(envlink, sizeof envlink, "%s/sub/.k", f->dir);
        assert_int_equal(symlink("nowhere/app.env", envlink), 0);
        own_at(f->dir, "sub/.k", uid, gid);
        for (unsigned k = 0; k < VS_ASIDE_TRIES; k++) {
                char taken[VS_ASIDE_NAME_SIZE], rel[64];
                host_aside_name(taken, ".k", k);
                snprintf(rel, sizeof rel, "sub/%.40s", taken);
                mkfile(f->dir, rel);
        }
        lstat_at(f->dir, "sub/.k", &cfg);
        assert_int_equal(aside_ask(f, h, "sub/.k", &cfg, &n), 0);
        assert_int_equal(n, VS_ASIDE_TRIES);
        assert_true(lstat(envlink, &other) < 0 && errno == ENOENT);
        /* A .git symlink: itself renamed, where it points untouched. */
        char link[160], target[160];
        snprintf(link, sizeof link, "%s/.git", f->dir);
        snprintf(target, sizeof target, "%s/sub/.git", f->dir);
        assert_int_equal(symlink(target, link), 0);
        struct stat ls;
        own_at(f->dir, ".git", uid, gid);
        lstat_at(f->dir, ".git", &ls);
        assert_int_equal(aside_ask(f, h, ".git", &ls, &n), 0);
        lstat_at(f->dir, ".git.vectora-quarantine", &other);
        assert_true(S_ISLNK(other.st_mode));
        lstat_at(f->dir, "sub/.git/HEAD", &other);
        /* Through a symlink on the way: not reached. */
        snprintf(link, sizeof link, "%s/via", f->dir);
        snprintf(target, sizeof target, "%s/sub", f->dir);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(aside_ask(f, h, "via/.git/HEAD", &git, NULL), ESTALE);
        lstat_at(f->dir, "sub/.git/HEAD", &other);
        /* The owner changed: refused. */
        struct stat dst;
        assert_int_equal(stat(f->dir, &dst), 0);
        assert_int_equal(chown(f->dir, uid + 1, dst.st_gid), 0);
        assert_int_equal(aside_ask(f, h, "sub/.git/HEAD", &git, NULL), EPERM);
        assert_int_equal(chown(f->dir, uid, dst.st_gid), 0);
        assert_int_equal(aside_ask(f, h + 100, "sub/.git/HEAD", &git, NULL), ENOENT);
}

/* A placeholder of directory rel below handle h begun in e. */
static void begin_place_dir(Fixture *f, MonitorEnc *e, uint64_t h, const char *rel) {
        begin(f, e, MONITOR_REQ_PLACEHOLDER);
        monitor_put_u64(e, MONITOR_F_WS, h);
        monitor_put_item(e, rel, VS_HOST_MAKE_DIR, -1);
}

/* e sent to the monitor serving in its child: 1 when it answered within
 * 5 s (its status in *st), else what poll said. */
static int send_await(Fixture *f, MonitorEnc *e, uint64_t *st) {
        assert_int_equal(monitor_enc_end(e), 0);
        assert_int_equal(send(f->server, e->buf.data, e->buf.len, 0), (ssize_t)e->buf.len);
        monitor_enc_done(e);
        struct pollfd p = { .fd = f->server, .events = POLLIN };
        int r = poll(&p, 1, 5000);
        if (r == 1)
                *st = status_of(f);
        return r;
}

/* A user's file system (FUSE) on the way is asked nothing: refused at
 * once, and the monitor answers the next request. */
static void placeholder_asks_no_file_system(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = fuse_case(f, &uid, &gid);
        char mnt[128];
        volatile int *stall;
        pid_t fs = fuse_mount(f, mnt, &stall, 2);
        serve_in_child(f);
        const char *rels[] = { "mnt/x", "mnt/sub/x" };
        int answered[2] = { 0 };
        uint64_t st[2] = { 0 };
        for (size_t i = 0; i < 2; i++) {
                MonitorEnc e;
                begin(f, &e, MONITOR_REQ_PLACEHOLDER);
                monitor_put_u64(&e, MONITOR_F_WS, h);
                monitor_put_item(&e, rels[i], VS_HOST_MAKE_PARENTS, -1);
                if ((answered[i] = send_await(f, &e, &st[i])) != 1)
                        break;
        }
        kill(fs, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        (void)umount2(mnt, MNT_DETACH);
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(answered[i], 1);
                assert_int_equal(st[i], EPERM);
        }
        end_child(f);
        munmap((void *)stall, 4096);
}

/* A directory held by a process of another uid (getdents64 into a
 * buffer mapped from fuse_mount's file, whose READ never comes: the
 * directory's lock is held until the file system ends). */
typedef struct Held {
        char mnt[128];
        volatile int *stall;
        pid_t fs, holder[8];
        size_t n_holders;
        int ff;
        char *map;
} Held;

/* The file system and the mapping (before anything hides f->dir). */
static void held_map(Fixture *f, Held *h) {
        char file[160];
        h->fs = fuse_mount(f, h->mnt, &h->stall, 0);
        snprintf(file, sizeof file, "%s/file", h->mnt);
        h->ff = open(file, O_RDONLY | O_CLOEXEC);
        assert_true(h->ff >= 0);
        h->map = mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, h->ff, 0);
        assert_true(h->map != MAP_FAILED);
        assert_int_equal(mprotect(h->map, 65536, PROT_READ | PROT_WRITE), 0);
}

/* dir held; the holder is in its read once the lock is (a mkdir by this
 * process would wait; a lookup does not). */
static void held_hold(Held *h, const char *dir) {
        assert_true(h->n_holders < ELEMENTSOF(h->holder));
        pid_t pid = h->holder[h->n_holders++] = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* Not the owner: reading the directory is enough. */
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65533, 65533, 65533) < 0)
                        _exit(2);
                int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _exit(syscall(SYS_getdents64, d, h->map, 65536) < 0);
        }
        usleep(300 * 1000);
}

/* Released: the file system goes, the holder's read fails; first (if not
 * NULL) unmounted before the file system's mount point. */
static void held_release(Held *h, const char *first) {
        kill(h->fs, SIGKILL);
        assert_int_equal(waitpid(h->fs, NULL, 0), h->fs);
        for (size_t i = 0; i < h->n_holders; i++)
                assert_int_equal(waitpid(h->holder[i], NULL, 0), h->holder[i]);
        if (first)
                assert_int_equal(umount2(first, MNT_DETACH), 0);
        (void)umount2(h->mnt, MNT_DETACH);
        munmap(h->map, 65536);
        close(h->ff);
        munmap((void *)h->stall, 4096);
}

/* A workspace directory someone holds (getdents64 into a buffer mapped
 * from a FUSE file whose read never comes: the directory's lock is held
 * until then; reading it is enough) stalls a mkdirat or a rename in it in
 * the kernel, and a lookup there behind that queued one: the monitor
 * answers ETIMEDOUT in its bound and serves the next request (attack
 * review 8: it waited with the kernel, the daemon stopped and could not
 * start again while the monitor held the instance lock; 8b: ws_open's
 * walk still did). While a request is held there, that workspace's
 * requests are refused at once (EBUSY); the owner's other workspaces and
 * another owner's are served meanwhile (8b: a holder who was not the
 * owner filled the owner's slots). */
static void placeholder_not_held_by_a_held_directory(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = fuse_case(f, &uid, &gid);
        uint64_t other = sub_ws(f, "other", 0755, uid + 1, gid);
        uint64_t mine = sub_ws(f, "mine", 0755, uid, gid);
        assert_int_equal(chmod(f->dir, 0755), 0);
        char ghost[160];
        snprintf(ghost, sizeof ghost, "%s/never-looked-up", f->dir);
        Held hd = { 0 };
        held_map(f, &hd);
        held_hold(&hd, f->dir);
        serve_in_child(f);
        MonitorEnc e;
        uint64_t st = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        begin_place_dir(f, &e, h, ".envrc");
        int answered = send_await(f, &e, &st);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        uint64_t st2 = 0, held = 0, st_other = 0, st_mine = 0, st_open = 0, st_close = 0, st_reopen = 0, held2 = 0;
        int answered2 = 0, answered_held = 0, answered_other = 0, answered_mine = 0, answered_open = 0, answered_close = 0,
            answered_reopen = 0, answered_held2 = 0;
        if (answered == 1) {
                begin(f, &e, MONITOR_REQ_STATUS);
                answered2 = send_await(f, &e, &st2);
                begin_place_dir(f, &e, h, ".claude");
                answered_held = send_await(f, &e, &held);
                begin_place_dir(f, &e, other, ".envrc");
                answered_other = send_await(f, &e, &st_other);
                begin_place_dir(f, &e, mine, ".envrc");
                answered_mine = send_await(f, &e, &st_mine);
                /* A name never looked up in the held directory: the
                 * lookup waits behind the stuck mkdirat. */
                begin_ws_open(f, &e, ghost, uid + 2, gid);
                answered_open = send_await(f, &e, &st_open);
                /* The held workspace closed and opened again: its new
                 * handle is refused as the old one was (attack review 8c:
                 * a held child was counted against the handle, and
                 * reopening made room for another). */
                begin(f, &e, MONITOR_REQ_WS_CLOSE);
                monitor_put_u64(&e, MONITOR_F_WS, h);
                answered_close = send_await(f, &e, &st_close);
                begin_ws_open(f, &e, f->dir, uid, gid);
                answered_reopen = send_await(f, &e, &st_reopen);
                const MonitorField *h2 = answered_reopen == 1 && st_reopen == 0 ? monitor_field(&answer, MONITOR_F_WS, -1) : NULL;
                begin_place_dir(f, &e, h2 ? h2->u64 : h, ".claude");
                answered_held2 = send_await(f, &e, &held2);
        }
        held_release(&hd, NULL);
        assert_int_equal(answered, 1);
        assert_int_equal(st, ETIMEDOUT);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        assert_true(secs < 3.9);
        assert_int_equal(answered2, 1);
        assert_int_equal(st2, 0);
        assert_int_equal(answered_held, 1);
        assert_int_equal(held, EBUSY);
        assert_int_equal(answered_other, 1);
        assert_int_equal(st_other, 0);
        assert_int_equal(answered_mine, 1);
        assert_int_equal(st_mine, 0);
        assert_int_equal(answered_open, 1);
        assert_int_equal(st_open, ETIMEDOUT);
        assert_int_equal(answered_close, 1);
        assert_int_equal(st_close, 0);
        assert_int_equal(answered_reopen, 1);
        assert_int_equal(st_reopen, 0);
        assert_int_equal(answered_held2, 1);
        assert_int_equal(held2, EBUSY);
        end_child(f);
}

/* The same hold with a file system a user mounted (fusermount's
 * user_id), and a server that runs: the monitor's child held past its
 * deadline is watched as the server's threads are (unstick.h), the
 * user's connection ended, the child ends, and the workspace's requests
 * are served again, within the child's 3 s and the watch's 5 s (before:
 * EBUSY until the user let go, at their pleasure). */
static void held_child_let_go_by_the_watch(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = fuse_case(f, &uid, &gid);
        assert_int_equal(chmod(f->dir, 0755), 0);
        pid_t server = paused_server(f);
        Held hd = { 0 };
        fuse_user_id = 65533;
        held_map(f, &hd);
        fuse_user_id = 0;
        held_hold(&hd, f->dir);
        serve_in_child(f);
        MonitorEnc e;
        uint64_t st = 0, busy = 0, again = 0;
        begin_place_dir(f, &e, h, ".envrc");
        int answered = send_await(f, &e, &st);
        begin_place_dir(f, &e, h, ".claude");
        int answered_busy = send_await(f, &e, &busy);
        int tries = 0, answered_again = 0;
        for (; answered == 1 && answered_busy == 1 && tries < 30; tries++) {
                begin_place_dir(f, &e, h, ".claude");
                answered_again = send_await(f, &e, &again);
                if (answered_again != 1 || again != EBUSY)
                        break;
                usleep(500 * 1000);
        }
        begin(f, &e, MONITOR_REQ_STATUS);
        uint64_t st_status = 0;
        int answered_status = send_await(f, &e, &st_status);
        int at = answered_status == 1 ? monitor_next(&answer, MONITOR_F_COUNT, -1) : -1;
        for (int k = 0; at >= 0 && k < 5; k++)
                at = monitor_next(&answer, MONITOR_F_COUNT, at);
        uint64_t ended = at >= 0 ? answer.fields[at].u64 : 0;
        held_release(&hd, NULL);
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        assert_int_equal(answered, 1);
        assert_int_equal(st, ETIMEDOUT);
        assert_int_equal(answered_busy, 1);
        assert_int_equal(busy, EBUSY);
        printf("# served again after %d tries (0.5 s apart)\n", tries);
        assert_int_equal(answered_again, 1);
        assert_int_equal(again, 0);
        assert_int_equal(ended, 1);
        end_child(f);
}

static void ws_open_asks_no_file_system(void **state) {
        Fixture *f = *state;
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        hello(f);
        char mnt[128], below[160], on_file[160];
        volatile int *stall;
        pid_t fs = fuse_mount(f, mnt, &stall, 2);
        snprintf(below, sizeof below, "%s/sub", mnt);
        /* One mounted on a file, as an ordinary user may (fusermount on a
         * file of its own): the walk's ENOTDIR is not asked of it. */
        snprintf(on_file, sizeof on_file, "%s/file", f->dir);
        int ff = open(on_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(ff >= 0);
        close(ff);
        pid_t fs2 = fuse_serve_mode(on_file, stall, S_IFREG);
        assert_true(fs2 > 0);
        serve_in_child(f);
        const char *paths[] = { mnt, below, "/proc/1", on_file };
        int answered[4] = { 0 };
        uint64_t st[4] = { 0 };
        for (size_t i = 0; i < 4; i++) {
                MonitorEnc e;
                begin(f, &e, MONITOR_REQ_WS_OPEN);
                monitor_put_str(&e, MONITOR_F_PATH, paths[i]);
                monitor_put_u64(&e, MONITOR_F_UID, 0);
                monitor_put_u64(&e, MONITOR_F_GID, 0);
                if ((answered[i] = send_await(f, &e, &st[i])) != 1)
                        break;
        }
        /* Released either way: the file system goes, the monitor with it. */
        kill(fs, SIGKILL);
        kill(fs2, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        assert_int_equal(waitpid(fs2, NULL, 0), fs2);
        (void)umount2(mnt, MNT_DETACH);
        (void)umount2(on_file, MNT_DETACH);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(answered[i], 1);
                assert_int_equal(st[i], EPERM);
        }
        end_child(f);
        munmap((void *)stall, 4096);
}

/* A TCP socket whose last close waits linger seconds: connected to a
 * listener (*ret_listener; closing it resets the connection and ends
 * the wait) that never accepts, its unsent data past the peer's window. */
static int lingering_socket(int *ret_listener, int linger) {
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0 && c >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t al = sizeof a;
        assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(l, 1), 0);
        assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
        assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
        int fl = fcntl(c, F_GETFL);
        assert_int_equal(fcntl(c, F_SETFL, fl | O_NONBLOCK), 0);
        static char junk[65536];
        size_t queued = 0;
        for (ssize_t k; (k = send(c, junk, sizeof junk, MSG_NOSIGNAL)) > 0;)
                queued += (size_t)k;
        assert_int_equal(errno, EAGAIN);
        assert_true(queued > 0);
        assert_int_equal(fcntl(c, F_SETFL, fl), 0);
        struct linger lg = { .l_onoff = 1, .l_linger = linger };
        assert_int_equal(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
        *ret_listener = l;
        return c;
}

/* A descriptor the monitor has no use for is closed off its loop whatever
 * its kind: a TCP socket with SO_LINGER and unsent data, whose last close
 * waits for the linger time, holds no request behind it. (Attack review
 * 3, F4: a socket passed the quick-close test and held the monitor's loop
 * for its linger time.) */
static void received_close_waits_for_nobody(void **state) {
        Fixture *f = *state;
        hello(f);
        /* Made after the fork: the monitor's received copy is the last. */
        serve_in_child(f);
        int l, c = lingering_socket(&l, 10);
        /* Refused (a log is a regular file), then closed: the last copy. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        int answered, next;
        uint64_t st;
        ask_then_status(f, &e, &c, 1, true, &answered, &st, &next);
        close(l); /* the connection reset: a close still lingering ends */
        assert_int_equal(answered, 1);
        assert_int_equal(st, EINVAL);
        assert_int_equal(next, 1);
        assert_int_equal(status_of(f), 0);
        end_child(f);
}

/* The pids of pid's children, into kids (at most n): how many. */
static size_t children_of(pid_t pid, pid_t *kids, size_t n) {
        DIR *d = opendir("/proc");
        assert_non_null(d);
        size_t k = 0;
        for (struct dirent *de; (de = readdir(d)) && k < n;) {
                char path[300], buf[512];
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
                FILE *sf = fopen(path, "re");
                if (!sf)
                        continue;
                char *rp = fgets(buf, sizeof buf, sf) ? strrchr(buf, ')') : NULL;
                fclose(sf);
                int ppid;
                char stc;
                if (rp && sscanf(rp + 1, " %c %d", &stc, &ppid) == 2 && ppid == pid)
                        kids[k++] = (pid_t)atoi(de->d_name);
        }
        closedir(d);
        return k;
}

/* ws_view's child moves the view onto /tmp, which waits while another
 * process holds /tmp (any user can: getdents64 into a mapping of their
 * own FUSE file): the monitor answers ETIMEDOUT in its bound and serves
 * on, and the child it left holds nothing of the monitor's (attack review
 * 8b: it held the instance lock and its own socket's both ends after the
 * monitor ended). In a mount namespace of this process's own, /tmp a
 * tmpfs there: the host's /tmp is never held. */
static void view_not_held_by_a_held_tmp(void **state) {
        Fixture *f = *state;
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        assert_int_equal(unshare(CLONE_NEWNS), 0);
        assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        uid_t uid, su;
        gid_t gid;
        for (su = 5432; getpwuid(su); su++)
                ;
        (void)root_owned_ws(f, &uid, &gid);
        uint64_t h = sub_ws(f, "ws", 0755, uid, gid); /* without the FUSE mount below */
        monitor_set_server_ids(f->mon, su, su);
        Held hd = { 0 };
        held_map(f, &hd);
        assert_int_equal(mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777"), 0);
        held_hold(&hd, "/tmp");
        serve_in_child(f);
        MonitorEnc e;
        uint64_t st = 0, st2 = 0;
        int answered2 = 0;
        begin(f, &e, MONITOR_REQ_WS_VIEW);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        int answered = send_await(f, &e, &st);
        if (answered == 1) {
                static uint8_t junk[MONITOR_MSG_MAX];
                (void)recv(f->server, junk, sizeof junk, MSG_DONTWAIT); /* a view's descriptor, if one came */
                begin(f, &e, MONITOR_REQ_STATUS);
                answered2 = send_await(f, &e, &st2);
        }
        /* What the monitor's children hold: the held one, the clone, its
         * socket's end and the /tmp it opened itself only. */
        pid_t kids[16];
        size_t n_kids = children_of(f->child, kids, 16), most = 0;
        for (size_t i = 0; i < n_kids; i++) {
                size_t fds = fd_count(kids[i]);
                most = fds > most ? fds : most;
        }
        held_release(&hd, "/tmp");
        assert_int_equal(answered, 1);
        assert_int_equal(st, ETIMEDOUT);
        assert_int_equal(answered2, 1);
        assert_int_equal(st2, 0);
        assert_int_equal(n_kids, 1);
        assert_true(most <= 3);
        end_child(f);
}

/* While a descriptor the server sent waits to be closed (the closer
 * thread stuck in a FUSE file's close, whose FLUSH is never answered; a
 * second one queued behind it, still open in the monitor's table), the
 * monitor forks nothing: a child would hold the queued one and wait in
 * the kernel closing it (attack review 8c: every fs_child held, and the
 * monitor waited for make_userns's child without end). The request is
 * refused at once (EAGAIN), the monitor answers on, and forks again once
 * the closes are done. */
static void no_fork_while_a_close_is_held(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        (void)fuse_case(f, &uid, &gid);
        uint64_t h = sub_ws(f, "ws", 0755, uid, gid);
        uid_t su;
        for (su = 5432; getpwuid(su); su++)
                ;
        monitor_set_server_ids(f->mon, su, su);
        char mnt[128], file[160];
        volatile int *stall;
        pid_t fs = fuse_mount(f, mnt, &stall, 1);
        snprintf(file, sizeof file, "%s/file", mnt);
        int sent[2];
        for (int i = 0; i < 2; i++) {
                sent[i] = open(file, O_WRONLY | O_CLOEXEC);
                assert_true(sent[i] >= 0);
        }
        serve_in_child(f);
        MonitorEnc e;
        int answered[2], next[2];
        uint64_t refused[2];
        for (int i = 0; i < 2; i++) {
                begin(f, &e, MONITOR_REQ_LOG_REOPEN);
                /* Kept open here: this process's close would wait too. */
                ask_then_status(f, &e, &sent[i], 1, false, &answered[i], &refused[i], &next[i]);
                if (next[i] == 1)
                        assert_int_equal(status_of(f), 0);
        }
        usleep(100 * 1000); /* the closer is in the first one's close */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        begin_place_dir(f, &e, h, ".envrc");
        uint64_t st = 0, st2 = 0, after = 0;
        int placed = send_await(f, &e, &st);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        begin(f, &e, MONITOR_REQ_STATUS);
        int answered2 = send_await(f, &e, &st2);
        /* A view's first request forks too (its user namespace's child):
         * refused the same (attack review 8d: it forked before the
         * check, and the monitor waited for that child without end). */
        uint64_t st_view = 0;
        begin(f, &e, MONITOR_REQ_WS_VIEW);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        int viewed = send_await(f, &e, &st_view);
        /* The file system gone: the closes end (ENOTCONN), forks again. */
        kill(fs, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        (void)umount2(mnt, MNT_DETACH);
        for (int i = 0; i < 2; i++)
                close(sent[i]);
        int placed_after = 0;
        for (int tries = 0; tries < 50; tries++) {
                begin_place_dir(f, &e, h, ".envrc");
                placed_after = send_await(f, &e, &after);
                if (placed_after != 1 || after != EAGAIN)
                        break;
                usleep(100 * 1000);
        }
        munmap((void *)stall, 4096);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(answered[i], 1);
                assert_int_equal(refused[i], EPERM);
        }
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        assert_int_equal(placed, 1);
        assert_int_equal(st, EAGAIN);
        assert_true(secs < 1.0);
        assert_int_equal(answered2, 1);
        assert_int_equal(st2, 0);
        assert_int_equal(viewed, 1);
        assert_int_equal(st_view, EAGAIN);
        assert_int_equal(placed_after, 1);
        assert_int_equal(after, 0);
        end_child(f);
}

/* A datagram on fd within ms: its decoded reply into *msg (its own
 * buffer), 1; else 0. */
static int await_on(int fd, int ms, uint8_t *buf, MonitorMsg *msg) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, ms) != 1)
                return 0;
        ssize_t n = recv(fd, buf, MONITOR_MSG_MAX, MSG_DONTWAIT);
        VsError *err = NULL;
        if (n <= 0 || monitor_decode(buf, (size_t)n, true, msg, &err) < 0) {
                vs_error_free(err);
                return 0;
        }
        return 1;
}

/* A pool channel for the monitor: pool[1] its (taken), pool[0] the test's. */
static void pool_pair(Fixture *f, int pool[2]) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pool), 0);
        monitor_set_pool(f->mon, pool[1]);
}

static void pool_place(int pool, uint64_t id, uint64_t h, const char *rel) {
        MonitorEnc e;
        monitor_enc_begin(&e, MONITOR_REQ_PLACEHOLDER, id);
        monitor_put_u64(&e, MONITOR_F_WS, h);
        monitor_put_item(&e, rel, VS_HOST_MAKE_DIR, -1);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send(pool, e.buf.data, e.buf.len, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
}

/* The pool's channel: a placeholder held in a workspace (its directory
 * held) is answered ETIMEDOUT at its deadline, while a later one in
 * another workspace is answered at once, before it, and the loop's
 * channel is served meanwhile (attack review 8b, N5: one channel, one
 * request at a time, so the server's loop waited behind a pool thread's
 * held placeholder, about 1 s a request, without end); and a request of
 * the loop's channel held meanwhile does not delay its answer past its
 * deadline. A request the pool's channel does not take ends the
 * monitor. */
static void pool_channel_answers_out_of_order(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        uint64_t h = fuse_case(f, &uid, &gid);
        uint64_t other = sub_ws(f, "other", 0755, uid + 1, gid);
        assert_int_equal(chmod(f->dir, 0755), 0);
        int pool[2];
        pool_pair(f, pool);
        Held hd = { 0 };
        held_map(f, &hd);
        held_hold(&hd, f->dir);
        serve_in_child(f);
        close(pool[1]);
        struct timespec t0, t1, t2, t3;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pool_place(pool[0], 7001, h, ".envrc");
        pool_place(pool[0], 7002, other, ".envrc");
        static uint8_t b1[MONITOR_MSG_MAX], b2[MONITOR_MSG_MAX];
        static MonitorMsg first, second;
        int got1 = await_on(pool[0], 2000, b1, &first);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        MonitorEnc e;
        uint64_t st = 0;
        begin(f, &e, MONITOR_REQ_STATUS);
        int answered = send_await(f, &e, &st);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        /* The loop's channel's own held request (a ws_open behind the
         * stuck mkdirat) from 1.2 s on: the held placeholder is answered
         * at its deadline all the same, not after it. */
        usleep(1200 * 1000);
        char ghost[160];
        snprintf(ghost, sizeof ghost, "%s/never-looked-up", f->dir);
        begin_ws_open(f, &e, ghost, uid + 2, gid);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send(f->server, e.buf.data, e.buf.len, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
        /* A pool request sent while the monitor waits for that
         * ws_open's child: read and answered at once, not after the wait
         * (attack review 8g: a few held ws_opens in a row left pool
         * requests unread past the server's 8 s). */
        usleep(300 * 1000);
        struct timespec t4, t5;
        clock_gettime(CLOCK_MONOTONIC, &t4);
        pool_place(pool[0], 7004, other, ".claude");
        static uint8_t b4[MONITOR_MSG_MAX];
        static MonitorMsg during;
        int got4 = await_on(pool[0], 5000, b4, &during);
        clock_gettime(CLOCK_MONOTONIC, &t5);
        int got2 = await_on(pool[0], 5000, b2, &second);
        clock_gettime(CLOCK_MONOTONIC, &t3);
        static uint8_t b3[MONITOR_MSG_MAX];
        static MonitorMsg third;
        int got3 = await_on(f->server, 5000, b3, &third);
        /* A request the pool's channel does not take: a breach. */
        monitor_enc_begin(&e, MONITOR_REQ_STATUS, 7003);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send(pool[0], e.buf.data, e.buf.len, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
        int status;
        assert_int_equal(waitpid(f->child, &status, 0), f->child);
        f->child = 0;
        held_release(&hd, NULL);
        close(pool[0]);
        double one = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        double loop = (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) / 1e9;
        double held = (double)(t3.tv_sec - t0.tv_sec) + (double)(t3.tv_nsec - t0.tv_nsec) / 1e9;
        printf("# the other workspace's answer %.3f s, the loop's status %.3f s, the held one's %.3f s\n", one, loop,
               held);
        assert_int_equal(got1, 1);
        assert_int_equal(first.id, 7002);
        assert_int_equal(monitor_field(&first, MONITOR_F_STATUS, -1)->u64, 0);
        assert_true(one < 1.5);
        assert_int_equal(answered, 1);
        assert_int_equal(st, 0);
        assert_true(loop < 1.0);
        assert_int_equal(got2, 1);
        assert_int_equal(second.id, 7001);
        assert_int_equal(monitor_field(&second, MONITOR_F_STATUS, -1)->u64, ETIMEDOUT);
        assert_true(held > 2.5 && held < 3.8);
        double in_wait = (double)(t5.tv_sec - t4.tv_sec) + (double)(t5.tv_nsec - t4.tv_nsec) / 1e9;
        printf("# a pool request during the loop's held ws_open answered in %.3f s\n", in_wait);
        assert_int_equal(got4, 1);
        assert_int_equal(during.id, 7004);
        assert_int_equal(monitor_field(&during, MONITOR_F_STATUS, -1)->u64, 0);
        assert_true(in_wait < 1.0);
        assert_int_equal(got3, 1);
        assert_int_equal(monitor_field(&third, MONITOR_F_STATUS, -1)->u64, ETIMEDOUT);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

/* Five workspaces of uid's (w0..w4, their handles in hs), the first
 * four held (hd), a pool channel (pool[0] the test's), the monitor
 * serving in its child; dirs the held ones' paths. */
static void four_held(Fixture *f, uid_t uid, gid_t gid, uint64_t hs[5], char dirs[4][160], int pool[2], Held *hd) {
        char name[16];
        for (int i = 0; i < 5; i++) {
                snprintf(name, sizeof name, "w%d", i);
                hs[i] = sub_ws(f, name, 0755, uid, gid);
                if (i < 4)
                        snprintf(dirs[i], 160, "%s/%s", f->dir, name);
        }
        assert_int_equal(chmod(f->dir, 0755), 0);
        pool_pair(f, pool);
        held_map(f, hd);
        for (int i = 0; i < 4; i++)
                held_hold(hd, dirs[i]);
}

/* Placeholders .p0.. on the pool channel: counts[i] in workspace hs[i],
 * ids from *id on. */
static void place_in_each(int pool, const uint64_t hs[4], const int counts[4], uint64_t *id) {
        for (int i = 0; i < 4; i++)
                for (int k = 0; k < counts[i]; k++) {
                        char rel[16];
                        snprintf(rel, sizeof rel, ".p%d", k);
                        pool_place(pool, ++*id, hs[i], rel);
                }
}

/* Children pending on the pool's channel count against the owner's and
 * everyone's held slots, as held ones do (attack review 8d: 32 pending
 * counted against nothing, and past the table's 128 they were never
 * reaped): four held workspaces of one owner with four placeholders each
 * pending fill the owner's 16, and the owner's fifth workspace, held by
 * nobody, is refused at once while another owner's is served. */
static void pool_pending_counted_against_the_owner(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        (void)fuse_case(f, &uid, &gid);
        uint64_t hs[5];
        char dirs[4][160];
        int pool[2];
        Held hd = { 0 };
        uint64_t other = sub_ws(f, "other", 0755, uid + 1, gid);
        four_held(f, uid, gid, hs, dirs, pool, &hd);
        serve_in_child(f);
        close(pool[1]);
        uint64_t id = 9000;
        place_in_each(pool[0], hs, (const int[4]){ 4, 4, 4, 4 }, &id);
        pool_place(pool[0], 9100, hs[4], ".envrc");
        pool_place(pool[0], 9101, other, ".envrc");
        static uint8_t b[MONITOR_MSG_MAX];
        static MonitorMsg msg;
        uint64_t fifth = UINT64_MAX, others = UINT64_MAX;
        for (int got = 0; got < 2 && await_on(pool[0], 2000, b, &msg) == 1;) {
                uint64_t st = monitor_field(&msg, MONITOR_F_STATUS, -1)->u64;
                if (msg.id == 9100)
                        fifth = st, got++;
                else if (msg.id == 9101)
                        others = st, got++;
        }
        held_release(&hd, NULL);
        close(pool[0]);
        end_child(f);
        assert_int_equal(fifth, EBUSY);
        assert_int_equal(others, 0);
}

/* The reply to request id on fd within ms (others read past): its status,
 * or UINT64_MAX when none came. */
static uint64_t await_id(int fd, uint64_t id, int ms) {
        static uint8_t b[MONITOR_MSG_MAX];
        static MonitorMsg msg;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                int left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
                if (left <= 0 || await_on(fd, left, b, &msg) != 1)
                        return UINT64_MAX;
                if (msg.id == id)
                        return monitor_field(&msg, MONITOR_F_STATUS, -1)->u64;
        }
}

/* A pool request read while the monitor waits for a loop channel's child
 * does not take that child's place in the slots (attack review 8h: the
 * table's 128 went past by one, and the one past was never reaped): an
 * owner with 15 pool children pending in four held workspaces and a
 * ws_open of theirs held on the loop channel has 16, so a placeholder in
 * their fifth workspace sent during that wait is refused at once. */
static void pool_request_during_a_wait_leaves_its_place(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        (void)fuse_case(f, &uid, &gid);
        uint64_t hs[5];
        char dirs[4][160], ghost[200];
        int pool[2];
        Held hd = { 0 };
        four_held(f, uid, gid, hs, dirs, pool, &hd);
        snprintf(ghost, sizeof ghost, "%s/never-looked-up", dirs[0]);
        serve_in_child(f);
        close(pool[1]);
        uint64_t id = 9500;
        place_in_each(pool[0], hs, (const int[4]){ 4, 4, 4, 3 }, &id);
        usleep(300 * 1000);
        MonitorEnc e;
        begin_ws_open(f, &e, ghost, uid, gid);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send(f->server, e.buf.data, e.buf.len, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
        usleep(300 * 1000);
        pool_place(pool[0], 9600, hs[4], ".envrc");
        uint64_t fifth = await_id(pool[0], 9600, 2000);
        held_release(&hd, NULL);
        close(pool[0]);
        end_child(f);
        assert_int_equal(fifth, EBUSY);
}

/* A server that does not read its replies (requests the monitor answers
 * at once, sent without end) ends the monitor: it never waits in a send
 * (attack review 8d: it waited there, deaf to the server's end). */
static void unread_replies_end_the_monitor(void **state) {
        Fixture *f = *state;
        hello(f);
        int pool[2];
        pool_pair(f, pool);
        serve_in_child(f);
        close(pool[1]);
        int sent = 0, ended = 0, stuck = 0;
        while (sent < 20000 && !ended && !stuck) {
                MonitorEnc e;
                monitor_enc_begin(&e, MONITOR_REQ_PLACEHOLDER, (uint64_t)sent + 1);
                monitor_put_u64(&e, MONITOR_F_WS, 4242); /* no such handle: ENOENT at once */
                monitor_put_item(&e, ".envrc", VS_HOST_MAKE_DIR, -1);
                assert_int_equal(monitor_enc_end(&e), 0);
                ssize_t k = send(pool[0], e.buf.data, e.buf.len, MSG_NOSIGNAL | MSG_DONTWAIT);
                monitor_enc_done(&e);
                if (k >= 0) {
                        sent++;
                        continue;
                }
                if (errno != EAGAIN) {
                        ended = 1; /* its end closed */
                        break;
                }
                /* Ours is full until the monitor reads on: it ended, it
                 * reads on, or it waits (in a send of its own). */
                struct pollfd pf = { .fd = pool[0], .events = POLLOUT };
                siginfo_t si = { 0 };
                (void)waitid(P_PID, (id_t)f->child, &si, WEXITED | WNOHANG | WNOWAIT);
                ended = si.si_pid == f->child;
                stuck = !ended && poll(&pf, 1, 3000) == 0;
        }
        char wchan[64] = "", path[64];
        snprintf(path, sizeof path, "/proc/%d/wchan", (int)f->child);
        FILE *wf = fopen(path, "re");
        if (wf) {
                if (!fgets(wchan, sizeof wchan, wf))
                        wchan[0] = 0;
                fclose(wf);
        }
        printf("# %d requests: %s %s\n", sent, ended ? "the monitor ended" : "the monitor waits in", ended ? "" : wchan);
        close(pool[0]);
        if (!ended)
                (void)kill(f->child, SIGKILL); /* not left waiting in its send */
        int status;
        assert_int_equal(waitpid(f->child, &status, 0), f->child);
        f->child = 0;
        assert_true(ended);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

/* A jail's start child attaches a root-owned workspace's idmapped trees
 * by their paths from / (idmap_attach), which a held directory on the way
 * stalls in the kernel: it holds nothing of the monitor's by then, so the
 * instance lock is let go at the monitor's end all the same (attack
 * review 8f: the child held the monitor's whole table, the lock
 * included, and no daemon could start until the holder let go). Here the
 * home of the workspace's path is its owner's (uid 65533), who takes the
 * workspace's name out of the cache (a rename), holds the home and queues
 * a mkdir there; the "monitor" is a child holding a lock, which starts the
 * jail (worker_spawn_start, as jail_spawn does), closes its lock and
 * ends. */
static void jail_child_holds_no_lock_while_walking(void **state) {
        Fixture *f = *state;
        uid_t uid;
        gid_t gid;
        (void)fuse_case(f, &uid, &gid);
        assert_int_equal(chmod(f->dir, 0755), 0);
        char home[160], proj[200], proj2[200], queued[200], lockp[160];
        snprintf(home, sizeof home, "%s/home", f->dir);
        snprintf(proj, sizeof proj, "%s/proj", home);
        snprintf(proj2, sizeof proj2, "%s/proj2", home);
        snprintf(queued, sizeof queued, "%s/queued", home);
        snprintf(lockp, sizeof lockp, "%s/lock", f->dir);
        assert_int_equal(mkdir(home, 0755), 0);
        assert_int_equal(chown(home, 65533, 65534), 0);
        assert_int_equal(mkdir(proj, 0755), 0);
        Held hd = { 0 };
        held_map(f, &hd);
        int lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(lockfd >= 0);
        assert_int_equal(flock(lockfd, LOCK_EX | LOCK_NB), 0);
        for (int k = 0; k < 2; k++) {
                pid_t p = hd.holder[hd.n_holders++] = fork();
                assert_true(p >= 0);
                if (p == 0) {
                        close(lockfd);
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65533, 65533, 65533) < 0)
                                _exit(2);
                        if (k == 1) /* the queued writer */
                                _exit(mkdir(queued, 0755) < 0);
                        if (rename(proj, proj2) < 0)
                                _exit(3);
                        int d = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        _exit(syscall(SYS_getdents64, d, hd.map, 65536) < 0);
                }
                usleep(300 * 1000);
        }
        int sv[2], ep[2], pp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(ep, O_CLOEXEC), 0);
        assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
        pid_t mon = fork();
        assert_true(mon >= 0);
        if (mon == 0) {
                int tree = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                char *argv[] = { "/bin/true", NULL };
                char *paths[] = { proj, NULL };
                int fds[] = { tree };
                VsLaunch l = { .argv = argv, .switch_user = true, .sandboxed = true, .uid = 65534, .gid = 65534,
                               .cgroup_fds = { -EBADF, -EBADF }, .idmap_fds = fds, .idmap_paths = paths, .n_idmap = 1 };
                pid_t pid = 0;
                int step = 0, exec_fd = -1;
                (void)worker_spawn_start(&l, sv[1], ep[1], CLONE_PARENT, true, getppid(), &pid, &step, &exec_fd);
                (void)!write(pp[1], &pid, sizeof pid);
                usleep(300 * 1000);
                close(lockfd); /* monitor_child's end */
                _exit(0);
        }
        pid_t jail = 0;
        assert_int_equal(read(pp[0], &jail, sizeof jail), (ssize_t)sizeof jail);
        assert_int_equal(waitpid(mon, NULL, 0), mon);
        close(lockfd); /* the server's copy */
        int again = open(lockp, O_RDWR | O_CLOEXEC);
        assert_true(again >= 0);
        bool let_go = false;
        for (int i = 0; i < 30 && !let_go; i++) {
                let_go = flock(again, LOCK_EX | LOCK_NB) == 0;
                if (!let_go)
                        usleep(100 * 1000);
        }
        held_release(&hd, NULL);
        if (jail > 0)
                (void)waitpid(jail, NULL, 0);
        close(again);
        for (int i = 0; i < 2; i++) {
                close(sv[i]);
                close(ep[i]);
                close(pp[i]);
        }
        assert_true(jail > 0);
        assert_true(let_go);
}

/* A log on a user's file system (FUSE) is refused: its close, at the
 * next log_reopen or in every child that inherits it, waits for its
 * server (attack review 8b); a local file is taken. */
static void log_on_user_file_system_refused(void **state) {
        Fixture *f = *state;
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        hello(f);
        char mnt[128], file[160];
        volatile int *stall;
        pid_t fs = fuse_mount(f, mnt, &stall, 0);
        snprintf(file, sizeof file, "%s/file", mnt);
        int fd = open(file, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        serve_in_child(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_LOG_REOPEN);
        int answered, next;
        uint64_t st;
        ask_then_status(f, &e, &fd, 1, true, &answered, &st, &next);
        snprintf(file, sizeof file, "%s/local.log", f->dir);
        int local = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(local >= 0);
        uint64_t st_local = 0;
        int answered_local = 0, next_local = 0;
        if (next == 1) {
                assert_int_equal(status_of(f), 0);
                begin(f, &e, MONITOR_REQ_LOG_REOPEN);
                ask_then_status(f, &e, &local, 1, true, &answered_local, &st_local, &next_local);
        }
        kill(fs, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        (void)umount2(mnt, MNT_DETACH);
        assert_int_equal(answered, 1);
        assert_int_equal(st, EPERM);
        assert_int_equal(next, 1);
        assert_int_equal(answered_local, 1);
        assert_int_equal(st_local, 0);
        end_child(f);
        munmap((void *)stall, 4096);
}

/* A start's exec-error pipe read as the server reads it: decided only
 * once it is, and a child that ended before its "reached" word (killed
 * on the way) is not taken for one that exec'd. (Attack review 3, F5:
 * a child killed before its exec read as exec'd, and the server then
 * blamed the handshake.) */
static void exec_result_words(void **state) {
        (void)state;
        static const int reached[2] = { STEP_EXEC, 0 }, uid_fail[2] = { STEP_UID, EPERM },
                         exec_fail[2] = { STEP_EXEC, ENOENT };
        struct {
                const int *first, *second;
                bool close_w;
                int want, want_step;
        } cases[] = {
                { NULL, NULL, false, 0, 0 },                     /* on its way */
                { reached, NULL, false, 0, 0 },                  /* at its exec */
                { reached, NULL, true, 1, 0 },                   /* exec'd */
                { NULL, NULL, true, -ECHILD, STEP_DIED },        /* killed before its exec */
                { uid_fail, NULL, true, -EPERM, STEP_UID },      /* failed on the way */
                { reached, exec_fail, false, -ENOENT, STEP_EXEC }, /* the exec failed, not yet gone */
                { reached, exec_fail, true, -ENOENT, STEP_EXEC },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int p[2];
                assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
                if (cases[i].first)
                        assert_int_equal(write(p[1], cases[i].first, sizeof reached), (ssize_t)sizeof reached);
                if (cases[i].second)
                        assert_int_equal(write(p[1], cases[i].second, sizeof reached), (ssize_t)sizeof reached);
                if (cases[i].close_w)
                        p[1] = safe_close(p[1]);
                int step = 0, r = worker_spawn_exec_result(p[0], &step);
                printf("# case %zu: %d (step %d)\n", i, r, step);
                assert_int_equal(r, cases[i].want);
                if (r < 0)
                        assert_int_equal(step, cases[i].want_step);
                /* Not decided: nothing read, the same answer again. */
                if (r == 0)
                        assert_int_equal(worker_spawn_exec_result(p[0], &step), 0);
                safe_close(p[0]);
                safe_close(p[1]);
        }
}

/* A closer stuck on one close (a lingering socket) and its pipe filled
 * behind it (16 384 descriptors): the monitor ends, rather than close one
 * more on its loop or keep them open without end. (Attack review 4: the
 * full pipe's fallback closed a second lingering socket on the loop and
 * held it for the linger time; other kinds were kept open until EMFILE.) */
static void stuck_closer_ends_monitor(void **state) {
        Fixture *f = *state;
        struct rlimit rl;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rl.rlim_max < 20000)
                skip();
        struct rlimit was = rl;
        rl.rlim_cur = rl.rlim_max;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
        hello(f);
        serve_in_child(f);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
        int l, c = lingering_socket(&l, 60);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(null >= 0);
        int sent = 0, ended = 0, stalled = 0;
        for (; sent < 20000 && !ended && !stalled; sent++) {
                /* Each refused (a log is a regular file), its descriptor
                 * handed to the closer: the first, the socket, sticks it. */
                MonitorEnc e;
                begin(f, &e, MONITOR_REQ_LOG_REOPEN);
                assert_int_equal(monitor_enc_end(&e), 0);
                if (sent == 0)
                        assert_int_equal(kill(f->child, SIGSTOP), 0);
                ssize_t k = send_with_fds(f->server, e.buf.data, e.buf.len, sent == 0 ? &c : &null, 1, MSG_NOSIGNAL);
                monitor_enc_done(&e);
                if (sent == 0) {
                        close(c); /* before the monitor reads it: its copy is the last */
                        assert_int_equal(kill(f->child, SIGCONT), 0);
                }
                if (k < 0) {
                        ended = 1;
                        break;
                }
                struct pollfd p = { .fd = f->server, .events = POLLIN };
                if (poll(&p, 1, 3000) != 1) {
                        /* No answer: the monitor ended (this process holds
                         * its end too: no hang-up), or it is held. */
                        siginfo_t si = { 0 };
                        (void)waitid(P_PID, (id_t)f->child, &si, WEXITED | WNOHANG | WNOWAIT);
                        if (si.si_pid == f->child)
                                ended = 1;
                        else
                                stalled = 1;
                        break;
                }
                static uint8_t buf[MONITOR_MSG_MAX];
                if (recv(f->server, buf, sizeof buf, MSG_DONTWAIT) <= 0)
                        ended = 1;
        }
        close(l);
        close(null);
        printf("# %d requests: %s\n", sent, ended ? "the monitor ended" : stalled ? "no answer" : "served on");
        assert_false(stalled);
        assert_true(ended);
        /* At once when the pipe (16 384 descriptors) is full: not later,
         * at a descriptor limit, with everything after it kept open. */
        assert_true(sent > 16000 && sent < 16500);
        end_child(f);
}

/* A vfork start is decided only once its exec-error pipe closed: the
 * kernel lets the caller go on when the exec replaced the child's memory,
 * before the child's close-on-exec descriptors are closed, and a start
 * taken then for "not yet" was reported failed after waiting for the
 * child's end (an embedded CLI's jail waited for its handshake: a hang,
 * once in a .ci/run). */
static void vfork_start_waits_for_close(void **state) {
        (void)state;
        char *argv[] = { (char *)"/bin/true", NULL };
        VsLaunch l = { .argv = argv, .cgroup_fds = { -EBADF, -EBADF } };
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        assert_true(null >= 0);
        int failed = 0;
        for (int i = 0; i < 2000; i++) {
                int sp[2];
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                pid_t pid = 0;
                int step = 0, r = worker_spawn_start(&l, sp[1], null, 0, false, 0, &pid, &step, NULL);
                failed += r < 0;
                if (pid > 0)
                        assert_int_equal(waitpid(pid, NULL, 0), pid);
                close(sp[0]);
                close(sp[1]);
        }
        close(null);
        assert_int_equal(failed, 0);
}

static void breaches_end_it(void **state) {
        Fixture *f = *state;
        hello(f);
        /* Garbage. */
        assert_int_equal(send(f->server, "nonsense, not a request", 23, 0), 23);
        assert_int_equal(monitor_step(f->mon), -EPROTO);
        /* A descriptor with a request that takes none. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, 0), -EPROTO);
        /* Longer than any request. */
        static uint8_t big[MONITOR_MSG_MAX + 100];
        assert_int_equal(send(f->server, big, sizeof big, 0), (ssize_t)sizeof big);
        assert_int_equal(monitor_step(f->mon), -EPROTO);
        /* A reply sent as a request. */
        monitor_enc_begin(&e, MONITOR_REPLY | MONITOR_REQ_STATUS, 1);
        monitor_put_u64(&e, MONITOR_F_STATUS, 0);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void shutdown_and_close(void **state) {
        Fixture *f = *state;
        hello(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_SHUTDOWN);
        assert_int_equal(ask(f, &e, -1), 1);
        assert_int_equal(status_of(f), 0);
        /* Once stopping, nothing new. */
        begin(f, &e, MONITOR_REQ_WS_OPEN);
        monitor_put_str(&e, MONITOR_F_PATH, f->dir);
        monitor_put_u64(&e, MONITOR_F_UID, 0);
        monitor_put_u64(&e, MONITOR_F_GID, 0);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
        /* The server's end closing ends the monitor. */
        close(f->server);
        f->server = -1;
        assert_int_equal(monitor_step(f->mon), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(nothing_before_hello, setup, teardown),
                cmocka_unit_test_setup_teardown(hello_once, setup, teardown),
                cmocka_unit_test_setup_teardown(workspaces, setup, teardown),
                cmocka_unit_test_setup_teardown(ws_open_walks_as_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(groups, setup, teardown),
                cmocka_unit_test_setup_teardown(log_reopen, setup, teardown),
                cmocka_unit_test_setup_teardown(log_reopen_breaches, setup, teardown),
                cmocka_unit_test_setup_teardown(out_of_descriptors, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_breach, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_always_joins, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_no_script_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_only_under_server, setup, teardown),
                cmocka_unit_test_setup_teardown(proc_is_no_workspace, setup, teardown),
                cmocka_unit_test_setup_teardown(system_account_gets_no_jail, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_foreign_group_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_not_in_monitors_cwd, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_checks_ask_no_file_system, setup, teardown),
                cmocka_unit_test_setup_teardown(ws_open_asks_no_file_system, setup, teardown),
                cmocka_unit_test_setup_teardown(received_close_waits_for_nobody, setup, teardown),
                cmocka_unit_test_setup_teardown(stuck_closer_ends_monitor, setup, teardown),
                cmocka_unit_test(exec_result_words),
                cmocka_unit_test(vfork_start_waits_for_close),
                cmocka_unit_test_setup_teardown(spawn_reader_gone_harmless, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_owner_cannot_stall, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_leaves_root_state, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_idmapped_trees, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_idmap_never_in_system_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(root_optin_needs_roots_tree, setup, teardown),
                cmocka_unit_test_setup_teardown(spawn_idmap_attach_follows_no_link, setup, teardown),
                cmocka_unit_test_setup_teardown(ws_view_reads_as_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(placeholder_made_below_workspace, setup, teardown),
                cmocka_unit_test_setup_teardown(identity_read_as_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(placeholder_asks_no_file_system, setup, teardown),
                cmocka_unit_test_setup_teardown(quarantine_puts_aside, setup, teardown),
                cmocka_unit_test_setup_teardown(placeholder_not_held_by_a_held_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(held_child_let_go_by_the_watch, setup, teardown),
                cmocka_unit_test_setup_teardown(log_on_user_file_system_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(view_not_held_by_a_held_tmp, setup, teardown),
                cmocka_unit_test_setup_teardown(pool_channel_answers_out_of_order, setup, teardown),
                cmocka_unit_test_setup_teardown(no_fork_while_a_close_is_held, setup, teardown),
                cmocka_unit_test_setup_teardown(pool_pending_counted_against_the_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(unread_replies_end_the_monitor, setup, teardown),
                cmocka_unit_test_setup_teardown(jail_child_holds_no_lock_while_walking, setup, teardown),
                cmocka_unit_test_setup_teardown(pool_request_during_a_wait_leaves_its_place, setup, teardown),
                cmocka_unit_test_setup_teardown(jail_kill_ends_its_jail, setup, teardown),
                cmocka_unit_test_setup_teardown(jail_table_drops_ended_jails, setup, teardown),
                cmocka_unit_test_setup_teardown(breaches_end_it, setup, teardown),
                cmocka_unit_test_setup_teardown(shutdown_and_close, setup, teardown),
                cmocka_unit_test(userns_child_keeps_only_its_pipes),
        };
        /* VECTORA_TEST_ONLY=NAME runs one case (a glob, as cmocka takes it). */
        if (getenv("VECTORA_TEST_ONLY"))
                cmocka_set_test_filter(getenv("VECTORA_TEST_ONLY"));
        return cmocka_run_group_tests(tests, NULL, NULL);
}
