/* SPDX-License-Identifier: MIT */
#include "common.h"

#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fd-util.h"
#include "path-util.h"
#include "spawn-util.h"
#include "strv.h"

static char *scratch;
static BenchDaemon *running_daemon;

void bench_log(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "  ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

void bench_die(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "bench: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        if (running_daemon)
                bench_daemon_stop(running_daemon);
        bench_scratch_cleanup();
        exit(1);
}

const char *bench_build_root(void) {
        const char *e = getenv("VECTORA_BUILD_ROOT");
        return e && *e ? e : BENCH_BUILD_ROOT;
}

void bench_owner(uid_t *uid, gid_t *gid) {
        if (geteuid() == 0) {
                *uid = 65534;
                *gid = 65534;
        } else {
                *uid = getuid();
                *gid = getgid();
        }
}

static void own(const char *path) {
        uid_t u;
        gid_t g;
        bench_owner(&u, &g);
        if (geteuid() == 0 && lchown(path, u, g) < 0)
                bench_die("chown %s: %m", path);
}

static void on_fatal_signal(int sig) {
        /* Good enough for a benchmark: the daemon and the scratch tree go. */
        if (running_daemon && running_daemon->pid > 0)
                kill(running_daemon->pid, SIGKILL);
        bench_scratch_cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

const char *bench_scratch(void) {
        if (scratch)
                return scratch;
        const char *base = getenv("BENCH_SCRATCH_BASE");
        char tmpl[512];
        snprintf(tmpl, sizeof tmpl, "%s/vectora-bench.XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpl))
                bench_die("mkdtemp in %s: %m", base && *base ? base : "/tmp");
        scratch = strdup(tmpl);
        if (!scratch)
                bench_die("out of memory");
        chmod(scratch, 0755);
        own(scratch);
        signal(SIGINT, on_fatal_signal);
        signal(SIGTERM, on_fatal_signal);
        _cleanup_free_ char *run = path_join(scratch, "run");
        if (!run || mkdir(run, 0755) < 0)
                bench_die("mkdir %s/run: %m", scratch);
        /* The runtime directory (empty mask file and dir) lives in here. */
        setenv("XDG_RUNTIME_DIR", run, 1);
        return scratch;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        (void)st;
        (void)f;
        if (flag == FTW_DP || flag == FTW_D)
                rmdir(p);
        else
                unlink(p);
        return 0;
}

void bench_rm_rf(const char *path) {
        nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void bench_scratch_cleanup(void) {
        if (!scratch)
                return;
        bench_rm_rf(scratch);
        free(scratch);
        scratch = NULL;
}

void bench_mkdir(const char *path) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                bench_die("mkdir %s: %m", path);
        own(path);
}

void bench_write_file(const char *path, const void *data, size_t len) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, data, len) < 0)
                bench_die("writing %s: %m", path);
        own(path);
}

char *bench_workspace(const char *name, const char *toml) {
        char *ws = path_join(bench_scratch(), name);
        if (!ws)
                bench_die("out of memory");
        bench_mkdir(ws);
        if (toml) {
                _cleanup_free_ char *f = path_join(ws, "vectora.toml");
                bench_write_file(f, toml, strlen(toml));
        }
        return ws;
}

/* ---- daemon ------------------------------------------------------------ */

static struct sockaddr_un sun_of(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(path);
        if (n >= sizeof sa.sun_path)
                bench_die("socket path too long: %s", path);
        memcpy(sa.sun_path, path, n + 1);
        return sa;
}

void bench_daemon_start(BenchDaemon *d, unsigned max_workers) {
        const char *s = bench_scratch();
        char sock[512], log[512], audit[512], daemon[512], worker[512], maxw[32];
        snprintf(sock, sizeof sock, "%s/daemon.sock", s);
        snprintf(log, sizeof log, "%s/daemon.log", s);
        snprintf(audit, sizeof audit, "%s/audit.log", s);
        snprintf(daemon, sizeof daemon, "%s/src/daemon/vectora-sandboxd", bench_build_root());
        snprintf(worker, sizeof worker, "%s/src/worker/vectora-worker", bench_build_root());
        snprintf(maxw, sizeof maxw, "%u", max_workers);
        pid_t pid = fork();
        if (pid < 0)
                bench_die("fork: %m");
        if (pid == 0) {
                char *argv[] = { daemon, "--foreground", "--socket", sock, "--log-file", log, "--log-level", "warning",
                                 "--audit-log", audit, "--max-workers", maxw, "--max-clients", "256",
                                 "--worker", worker, NULL };
                execv(daemon, argv);
                _exit(127);
        }
        d->pid = pid;
        d->socket = strdup(sock);
        running_daemon = d;
        for (int i = 0; i < 1000; i++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un sa = sun_of(sock);
                int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
                safe_close(fd);
                if (ok)
                        return;
                if (waitpid(pid, NULL, WNOHANG) == pid) {
                        d->pid = 0;
                        bench_die("%s exited at start; see its log (%s)", daemon, log);
                }
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        bench_die("%s did not listen on %s within 10 s", daemon, sock);
}

void bench_daemon_stop(BenchDaemon *d) {
        if (d->pid > 0) {
                kill(d->pid, SIGTERM);
                int i;
                for (i = 0; i < 1000; i++) {
                        if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
                                break;
                        struct timespec ts = { 0, 10 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
                if (i == 1000) {
                        kill(d->pid, SIGKILL);
                        waitpid(d->pid, NULL, 0);
                }
                d->pid = 0;
        }
        free(d->socket);
        d->socket = NULL;
        if (running_daemon == d)
                running_daemon = NULL;
}

/* ---- connection -------------------------------------------------------- */

void bench_connect(BenchConn *c, const char *sock) {
        *c = (BenchConn){ .fd = -EBADF };
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = sun_of(sock);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
                bench_die("connecting to %s: %m", sock);
        if (jsonl_reader_new(&c->rd) < 0)
                bench_die("out of memory");
}

void bench_conn_close(BenchConn *c) {
        c->fd = safe_close(c->fd);
        jsonl_reader_free(c->rd);
        c->rd = NULL;
}

char *bench_encode(json_t *obj, size_t raw_len, size_t *ret_len) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        json_object_set_new(obj, "id", json_integer(0));
        if (jsonl_encode_header(obj, raw_len > 0, raw_len, &out) < 0)
                bench_die("encoding a request");
        *ret_len = out.len;
        return strbuf_steal(&out);
}

uint64_t bench_send(BenchConn *c, json_t *obj, const void *raw, size_t raw_len) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        uint64_t id = ++c->next_id;
        json_object_set_new(obj, "id", json_integer((json_int_t)id));
        if (jsonl_encode_header(obj, raw != NULL, raw_len, &out) < 0)
                bench_die("encoding a request");
        bench_send_bytes(c, out.data, out.len);
        if (raw_len)
                bench_send_bytes(c, raw, raw_len);
        return id;
}

void bench_send_bytes(BenchConn *c, const void *p, size_t n) {
        int r = write_all(c->fd, p, n);
        if (r < 0)
                bench_die("sending to the daemon: %s", strerror(-r));
}

int bench_try_next(BenchConn *c, JsonlMsg *ret) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = jsonl_reader_next(c->rd, ret, &err);
        if (r < 0 && r != -EAGAIN)
                bench_die("bad reply from the daemon: %s", vs_error_message(err));
        return r;
}

void bench_recv(BenchConn *c, JsonlMsg *ret) {
        for (;;) {
                if (bench_try_next(c, ret) == 0)
                        return;
                ssize_t k = jsonl_reader_read_fd(c->rd, c->fd);
                if (k == -EINTR || k == -EAGAIN)
                        continue;
                if (k <= 0)
                        bench_die("the daemon closed the connection (%s)", k ? strerror((int)-k) : "EOF");
        }
}

void bench_check_ok(const JsonlMsg *m, const char *what) {
        json_t *ok = json_object_get(m->obj, "ok");
        if (!json_is_true(ok)) {
                char *s = json_dumps(m->obj, JSON_COMPACT);
                bench_die("%s failed: %s", what, s ? s : "?");
        }
        json_t *ec = json_object_get(m->obj, "exit_code");
        if (ec && json_integer_value(ec) != 0) {
                char *s = json_dumps(m->obj, JSON_COMPACT);
                bench_die("%s: the command failed: %s", what, s ? s : "?");
        }
}

void bench_call(BenchConn *c, json_t *obj, const void *raw, size_t raw_len, JsonlMsg *ret, const char *what) {
        bench_send(c, obj, raw, raw_len);
        bench_recv(c, ret);
        bench_check_ok(ret, what);
}

/* ---- processes --------------------------------------------------------- */

static int dev_null(void) {
        static int fd = -EBADF;
        if (fd < 0 && (fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                bench_die("/dev/null: %m");
        return fd;
}

static void child_fds(int stdin_fd, int stdout_fd) {
        if (dup2(stdin_fd >= 0 ? stdin_fd : dev_null(), 0) < 0 || dup2(stdout_fd >= 0 ? stdout_fd : dev_null(), 1) < 0)
                _exit(126);
}

int bench_wait(pid_t pid) {
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        bench_die("waitpid: %m");
        return st;
}

int bench_fork_exec(char *const *argv, int stdin_fd, int stdout_fd) {
        pid_t pid = fork();
        if (pid < 0)
                bench_die("fork: %m");
        if (pid == 0) {
                child_fds(stdin_fd, stdout_fd);
                execv(argv[0], argv);
                _exit(127);
        }
        return bench_wait(pid);
}

pid_t bench_posix_spawn(char *const *argv, int stdin_fd, int stdout_fd, int stderr_fd) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, stdin_fd >= 0 ? stdin_fd : dev_null(), 0);
        posix_spawn_file_actions_adddup2(&fa, stdout_fd >= 0 ? stdout_fd : dev_null(), 1);
        if (stderr_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, stderr_fd, 2);
        pid_t pid;
        int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                bench_die("posix_spawn %s: %s", argv[0], strerror(r));
        return pid;
}

int bench_posix_spawn_exec(char *const *argv, int stdin_fd, int stdout_fd) {
        return bench_wait(bench_posix_spawn(argv, stdin_fd, stdout_fd, -1));
}

int bench_posix_spawn_capture(char *const *argv, size_t *ret_len) {
        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                bench_die("pipe: %m");
        pid_t pid = bench_posix_spawn(argv, -1, out[1], err[1]);
        close(out[1]);
        close(err[1]);
        struct pollfd p[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
        size_t total = 0;
        char buf[65536];
        while (p[0].fd >= 0 || p[1].fd >= 0) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        bench_die("poll: %m");
                }
                for (int i = 0; i < 2; i++) {
                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        ssize_t n = read(p[i].fd, buf, sizeof buf);
                        if (n > 0) {
                                total += (size_t)n;
                                continue;
                        }
                        if (n < 0 && errno == EINTR)
                                continue;
                        close(p[i].fd);
                        p[i].fd = -1;
                }
        }
        *ret_len = total;
        return bench_wait(pid);
}

/* What the clone()d child needs; it shares this process's memory until
 * execve, so it only reads this and makes raw system calls. */
typedef struct VforkArgs {
        const char *path;
        char *const *argv;
        int stdin_fd, stdout_fd, fd3;
        const int *cgroup_fds; /* cgroup.procs files to join before exec, n_cgroup_fds of them */
        size_t n_cgroup_fds;
        bool switch_user;
        uid_t uid;
        gid_t gid;
        bool own_pid_ns; /* pid 1 of a pid namespace of its own, with its /proc, as the daemon starts bwrap (root only) */
} VforkArgs;

static int vfork_child(void *arg) {
        const VforkArgs *a = arg;
        /* As the daemon's enter_outer_ns(): mounts kept slaves of the host's,
         * the namespace's own /proc for bwrap's /proc/PID. */
        if (a->own_pid_ns && (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
                              mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
                _exit(126);
        child_fds(a->stdin_fd, a->stdout_fd);
        /* dup2 onto itself keeps CLOEXEC: clear it by hand then. */
        if (a->fd3 >= 0 && (a->fd3 == 3 ? fcntl(3, F_SETFD, 0) : dup2(a->fd3, 3)) < 0)
                _exit(126);
        for (size_t i = 0; i < a->n_cgroup_fds; i++)
                if (write(a->cgroup_fds[i], "0", 1) != 1)
                        _exit(126);
        if (a->switch_user && (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, a->gid, a->gid, a->gid) < 0 ||
                               syscall(SYS_setresuid, a->uid, a->uid, a->uid) < 0))
                _exit(126);
        execve(a->path, a->argv, environ);
        _exit(127);
}

/* CLONE_VFORK: this process waits until the child exec'd, so one stack serves. */
static _Alignas(64) char vfork_stack[64 * 1024];

static pid_t vfork_spawn(const VforkArgs *a) {
        dev_null(); /* opened here, not in the child */
        if (a->own_pid_ns) {
                pid_t pid = spawn_vfork_ns(vfork_child, (void *)a, CLONE_NEWPID | CLONE_NEWNS);
                if (pid < 0)
                        bench_die("clone: %s", strerror(-pid));
                return pid;
        }
        pid_t pid = clone(vfork_child, vfork_stack + sizeof vfork_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)a);
        if (pid < 0)
                bench_die("clone: %m");
        return pid;
}

int bench_vfork_exec(char *const *argv, int stdin_fd, int stdout_fd) {
        VforkArgs a = { .path = argv[0], .argv = argv, .stdin_fd = stdin_fd, .stdout_fd = stdout_fd, .fd3 = -EBADF };
        return bench_wait(vfork_spawn(&a));
}

/* execve takes a path: what execvp would run for name. */
static char *find_in_path(const char *name) {
        if (strchr(name, '/'))
                return strdup(name);
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
        if (!copy)
                bench_die("out of memory");
        char *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char *f = path_join(d, name);
                if (f && access(f, X_OK) == 0)
                        return f;
                free(f);
        }
        bench_die("%s not found in PATH", name);
}

void bench_percall_prepare(BenchPercall *p, const char *workspace) {
        *p = (BenchPercall){ .bpf_fd = -EBADF };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_(policy_freep) VsPolicy *pol = NULL;
        if (config_load(workspace, &pol, &err) < 0)
                bench_die("%s: %s", workspace, vs_error_message(err));
        char worker[512];
        snprintf(worker, sizeof worker, "%s/src/worker/vectora-worker", bench_build_root());
        _cleanup_free_ char *rt = path_join(getenv("XDG_RUNTIME_DIR"), "vectora-sandbox");
        VsLaunchOptions o = { .worker_path = worker, .bwrap = getenv("VECTORA_BWRAP"), .runtime_dir = rt };
        if (launch_prepare(pol, &o, &p->launch, &err) < 0)
                bench_die("launch for %s: %s", workspace, vs_error_message(err));
        VsLaunch *l = p->launch;
        if (!l->sandboxed || !l->bpf)
                bench_die("%s: the per-call model needs a sandboxed workspace with seccomp", workspace);
        size_t n = strv_length(l->argv);
        if (n < 2 || !streq(l->argv[n - 2], "--"))
                bench_die("unexpected bwrap argv shape");
        /* The daemon starts bwrap as pid 1 of a pid namespace of its own;
         * the per-call model runs it plainly, which only favours it. */
        for (size_t i = 0; i + 2 < n; i++)
                if (strv_extend(&p->argv_prefix, l->argv[i]) < 0)
                        bench_die("out of memory");
        if (strv_extend(&p->argv_prefix, "--seccomp") < 0 || strv_extend(&p->argv_prefix, "3") < 0 ||
            strv_extend(&p->argv_prefix, "--") < 0)
                bench_die("out of memory");
        p->bpf_fd = memfd_create("bench-seccomp", MFD_CLOEXEC);
        if (p->bpf_fd < 0 || write_all(p->bpf_fd, l->bpf, l->bpf_len) < 0)
                bench_die("memfd: %m");
        p->n_masked = l->n_masked;
        p->bwrap_path = find_in_path(p->argv_prefix[0]);
}

pid_t bench_percall_spawn(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd) {
        return bench_percall_spawn_in(p, cmd, stdin_fd, stdout_fd, NULL, 0, false);
}

pid_t bench_percall_spawn_in(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd, const int *cgroup_fds,
                             size_t n_cgroup_fds, bool own_pid_ns) {
        _cleanup_strv_free_ char **argv = strv_copy(p->argv_prefix);
        for (char *const *c = cmd; argv && *c; c++)
                if (strv_extend(&argv, *c) < 0)
                        bench_die("out of memory");
        if (!argv)
                bench_die("out of memory");
        /* bwrap reads the filter from the descriptor's current offset. */
        if (lseek(p->bpf_fd, 0, SEEK_SET) < 0)
                bench_die("lseek: %m");
        const VsLaunch *l = p->launch;
        /* Started the cheapest way (as the worker starts commands): the
         * per-call model pays for bwrap, not for a page-table copy. */
        VforkArgs a = { .path = p->bwrap_path, .argv = argv, .stdin_fd = stdin_fd, .stdout_fd = stdout_fd,
                        .fd3 = p->bpf_fd, .cgroup_fds = cgroup_fds, .n_cgroup_fds = n_cgroup_fds,
                        .switch_user = l->switch_user, .uid = l->uid, .gid = l->gid, .own_pid_ns = own_pid_ns };
        return vfork_spawn(&a);
}

int bench_percall_run(BenchPercall *p, char *const *cmd, int stdin_fd, int stdout_fd) {
        return bench_wait(bench_percall_spawn(p, cmd, stdin_fd, stdout_fd));
}

void bench_percall_done(BenchPercall *p) {
        launch_free(p->launch);
        free(p->bwrap_path);
        strv_free(p->argv_prefix);
        p->bpf_fd = safe_close(p->bpf_fd);
        *p = (BenchPercall){ .bpf_fd = -EBADF };
}

/* ---- the 4-hop relay floor ---- */

static void relay_child_read(int fd, char *buf, size_t n) {
        size_t got = 0;
        while (got < n) {
                ssize_t k = read(fd, buf + got, n - got);
                if (k <= 0)
                        _exit(0);
                got += (size_t)k;
        }
}

/* A child of the benchmark keeps only its own sockets: a copy of another
 * process's socket (the daemon connection, an echo's) held here would keep
 * that peer from ever seeing its end. */
static void close_all_but(int a, int b) {
        int lo = a < b ? a : b, hi = a < b ? b : a;
        if (lo > 3)
                close_range(3, (unsigned)lo - 1, 0);
        if (hi > lo + 1)
                close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
        close_range((unsigned)hi + 1, ~0U, 0);
}

static char *relay_message(size_t n, char fill) {
        char *m = malloc(n);
        if (!m || n == 0)
                bench_die("relay: bad message size %zu", n);
        memset(m, fill, n);
        m[n - 1] = '\n';
        return m;
}

void bench_relay_start(BenchRelay *r, size_t req_len, size_t reply_len) {
        int up[2], down[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, down) < 0)
                bench_die("socketpair: %m");
        *r = (BenchRelay){ .req_len = req_len, .reply_len = reply_len, .req = relay_message(req_len, 'q'),
                           .reply = relay_message(reply_len, 'r') };
        r->echo = fork();
        if (r->echo < 0)
                bench_die("fork: %m");
        if (r->echo == 0) {
                close_all_but(down[1], down[1]);
                char *buf = malloc(req_len);
                if (!buf)
                        _exit(1);
                for (;;) {
                        relay_child_read(down[1], buf, req_len);
                        if (write_all(down[1], r->reply, reply_len) < 0)
                                _exit(1);
                }
        }
        close(down[1]);
        r->relay = fork();
        if (r->relay < 0)
                bench_die("fork: %m");
        if (r->relay == 0) {
                close_all_but(up[1], down[0]);
                /* Whatever arrives on one side goes out on the other. */
                struct pollfd p[2] = { { .fd = up[1], .events = POLLIN }, { .fd = down[0], .events = POLLIN } };
                char buf[65536];
                for (;;) {
                        if (poll(p, 2, -1) < 0)
                                _exit(1);
                        for (int i = 0; i < 2; i++) {
                                if (!(p[i].revents & (POLLIN | POLLHUP)))
                                        continue;
                                ssize_t k = read(p[i].fd, buf, sizeof buf);
                                if (k <= 0)
                                        _exit(0);
                                if (write_all(p[1 - i].fd, buf, (size_t)k) < 0)
                                        _exit(1);
                        }
                }
        }
        close(up[1]);
        close(down[0]);
        r->fd = up[0];
}

double bench_relay_round_trip(BenchRelay *r) {
        char buf[65536];
        double t0 = now_us();
        if (write_all(r->fd, r->req, r->req_len) < 0)
                bench_die("relay write: %m");
        size_t got = 0;
        while (got < r->reply_len) {
                size_t want = r->reply_len - got;
                ssize_t k = read(r->fd, buf, want < sizeof buf ? want : sizeof buf);
                if (k <= 0)
                        bench_die("relay read: %m");
                got += (size_t)k;
        }
        return now_us() - t0;
}

void bench_relay_stop(BenchRelay *r) {
        r->fd = safe_close(r->fd);
        bench_wait(r->relay);
        bench_wait(r->echo);
        free(r->req);
        free(r->reply);
}
