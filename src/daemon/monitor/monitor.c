/* SPDX-License-Identifier: MIT */
#include "monitor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include "chase.h"
#include "fd-util.h"
#include "forbidden.h"
#include "host-make.h"
#include "idmap.h"
#include "jail-argv.h"
#include "jail-home.h"
#include "log.h"
#include "macro.h"
#include "monitor-proto.h"
#include "mount-util.h"
#include "parse-apart.h"
#include "path-util.h"
#include "seccomp.h"
#include "sha256.h"
#include "spawn-util.h"
#include "time-util.h"
#include "unstick.h"
#include "user-util.h"
#include "worker-spawn.h"

#define WORKSPACES_MAX 65536
/* Workspaces with a view at once: each holds a mount namespace and a user
 * namespace against root's max_mnt_namespaces and max_user_namespaces. */
#define VIEWS_MAX 8192
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
#define FDS_MAX 8

/* What a request does in a workspace's tree runs in a child with a
 * deadline (fs_child): FS_CHILD_MS, generous (a child on a loaded host,
 * twenty first starts at once under ASan, took more than 1 s to be
 * scheduled), within the server's 5 s. Children that did not answer in
 * it are held at once at most FS_STUCK_MAX in all, FS_STUCK_OWNER for
 * one owner's workspaces, one for a workspace. */
#define FS_CHILD_MS 3000
#define FS_STUCK_MAX 128
#define FS_STUCK_OWNER 16
/* Requests of the pool's channel whose child has not answered yet, in
 * all and for one workspace (past them: EBUSY). */
#define FS_PENDING_MAX 32
#define FS_PENDING_WS 4

/* A pool channel's request whose child works: answered when it does, or
 * at its deadline. */
typedef struct FsPending {
        pid_t pid;
        int sock;
        uint64_t deadline; /* now_ms()'s clock */
        uint16_t type;
        uint64_t id;
        uid_t owner;
        uint64_t dev, ino; /* its workspace directory's (0: none) */
} FsPending;

typedef struct MonWorkspace {
        uint64_t handle;
        int dirfd; /* O_PATH, opened by the monitor itself */
        uid_t uid;
        gid_t gid;
        /* Its cgroups' name below the instance's groups, from the path
         * the monitor opened: "ws-" and 16 hex digits of its SHA-256. */
        char group[3 + 16 + 1];
        bool grouped; /* cgroup_make made them: ws_close removes them */
        char *path;   /* as opened (a root-owned one's trees are attached at their paths below it) */
        int view;     /* ws_view's locked view, made once and handed again; -1: none yet */
        uint64_t dev, ino; /* the directory's identity (a held child is counted against it) */
        int view_ns;  /* the mount namespace that holds it */
} MonWorkspace;

/* A user namespace of ws_view's idmapping for an owner's ids: one per
 * (uid, gid), kept for the monitor's life (each counts against root's
 * max_user_namespaces; a view per request would let the server use them
 * up). */
typedef struct MonUserns {
        uid_t uid;
        gid_t gid;
        int fd;
} MonUserns;

/* A jail the monitor started, until it is seen gone: what jail_kill ends
 * (by its pidfd: a pid the server has reaped may name another process). */
typedef struct MonJail {
        uint64_t ws, gen;
        int pidfd;
} MonJail;

struct Monitor {
        int fd;
        /* The thread pool's channel (monitor_set_pool; -1: none): only
         * placeholder and quarantine, each answered when its child does,
         * in any order, so a held one never holds the loop's channel. */
        int pool_fd;
        FsPending pending[FS_PENDING_MAX];
        size_t n_pending;
        int reply_failed; /* a reply that could not go (a pending one's): the monitor ends */
        int pool_end;     /* the pool's channel read during a wait ended (1) or broke (< 0) */
        /* The loop channel's child being waited for (fs_child), counted
         * by fs_room as a pending one: pool requests read meanwhile must
         * not take its place (attack review 8h). */
        struct {
                bool on;
                uid_t owner;
                uint64_t dev, ino;
        } sync;
        uint8_t pool_buf[MONITOR_MSG_MAX]; /* the pool's channel's requests' own */
        MonitorMsg saved_msg;              /* the loop channel's request, kept while the pool's are read */
        /* Where the reply being made goes, and to which request. */
        struct {
                int fd;
                uint16_t type;
                uint64_t id;
        } to;
        int server_pidfd; /* -1: none */
        pid_t server_pid;  /* its pid, 0: none (then the monitor's parent) */
        int cg_version;   /* 0: no cgroups; 1 or 2 */
        int cg_fds[2];    /* the instance's groups: v2 [0]; v1 [0] pids, [1] memory; -1: none */
        MonitorState state;
        MonWorkspace *ws;
        size_t n_ws, cap_ws;
        uint64_t next_handle;
        uint64_t jails_started; /* by jail_spawn, since the start */
        uint64_t jails_killed;  /* by jail_kill */
        uint64_t placeholders_made; /* by placeholder */
        uint64_t put_aside;         /* by quarantine */
        Unstick unstick;            /* the watch over the server's threads (unstick.h) */
        MonJail *jails;
        size_t n_jails, cap_jails;
        MonUserns *userns;
        size_t n_userns;
        size_t n_views; /* workspaces with a view (each holds a mount and a user namespace) */
        size_t views_max;
        uid_t server_uid;       /* ws_view's target ids; 0: no views */
        gid_t server_gid;
        /* What a jail's argv must be (jail-argv.h): the bwrap found in
         * PATH (again at a start while none was), the daemon's worker,
         * its state directory's homes/. No worker: no jail. */
        char *bwrap, *worker, *homes;
        /* The setid guard every jail starts under (seccomp.h), or NULL
         * (libseccomp missing: a root-owned workspace then gets no jail). */
        void *guard;
        size_t guard_len;
        uint64_t count; /* placeholder's reply */
        char ident[2][MONITOR_IDENT_MAX + 1]; /* git_identity's reply: name, email */
        struct {
                pid_t pid;
                uid_t owner; /* the workspace's (ws_open's: the uid asked) */
                uint64_t dev, ino; /* its workspace directory's, whatever its handle (0: ws_open's) */
        } stuck[FS_STUCK_MAX]; /* fs_child's children that did not answer, until reaped */
        size_t n_stuck;
        uint8_t buf[MONITOR_MSG_MAX];
        MonitorMsg msg;
};

int monitor_new(int fd, Monitor **ret) {
        Monitor *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->fd = fd;
        m->pool_fd = -EBADF;
        m->server_pidfd = -EBADF;
        m->cg_fds[0] = m->cg_fds[1] = -EBADF;
        m->next_handle = 1;
        m->views_max = VIEWS_MAX;
        *ret = m;
        return 0;
}

void monitor_set_pool(Monitor *m, int fd) {
        if (m->pool_fd >= 0)
                close(m->pool_fd);
        m->pool_fd = fd;
}

void monitor_set_server(Monitor *m, int pidfd) {
        if (m->server_pidfd >= 0)
                close(m->server_pidfd);
        m->server_pidfd = pidfd;
        /* Its pid, from the pidfd itself (the kernel's "Pid:" line). */
        m->server_pid = 0;
        char path[64], line[128];
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
        FILE *f = pidfd >= 0 ? fopen(path, "re") : NULL;
        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "Pid: %d", &m->server_pid) == 1)
                        break;
        if (f)
                fclose(f);
        /* Only root can end a FUSE connection, and only a root daemon's
         * server is held by another user's file system. */
        unstick_init(&m->unstick, geteuid() == 0 ? m->server_pid : 0, UNSTICK_AFTER_MS);
}

void monitor_set_views_max(Monitor *m, size_t max) {
        m->views_max = max;
}

void monitor_set_server_ids(Monitor *m, uid_t uid, gid_t gid) {
        m->server_uid = uid;
        m->server_gid = gid;
}

int monitor_set_groups(Monitor *m, int version, char *const parents[2]) {
        if (version != 1 && version != 2)
                return 0;
        for (int i = 0; i < 2; i++) {
                safe_close(m->cg_fds[i]);
                m->cg_fds[i] = parents[i] ? open(parents[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
                if (parents[i] && m->cg_fds[i] < 0)
                        return -errno;
        }
        m->cg_version = version;
        return 0;
}

/* The bwrap in the monitor's PATH (the daemon's, fixed at its start). */
static char *bwrap_in_path(void) {
        return path_find_executable_os("bwrap", getenv("PATH"));
}

int monitor_set_jail(Monitor *m, const char *bwrap, const char *worker, const char *state_dir) {
        free(m->bwrap);
        free(m->worker);
        free(m->homes);
        m->bwrap = bwrap ? strdup(bwrap) : bwrap_in_path();
        m->worker = worker ? strdup(worker) : NULL;
        m->homes = state_dir ? path_join(state_dir, "homes") : NULL;
        if (!m->guard) {
                _cleanup_(vs_error_freep) VsError *e = NULL;
                VsSeccompOptions o = { .setid_only = true };
                if (seccomp_compile(&o, &m->guard, &m->guard_len, &e) < 0)
                        log_warning("monitor: no setid guard for jails: %s; a root-owned workspace gets no jail",
                                    vs_error_message(e));
        }
        return (bwrap && !m->bwrap) || (worker && !m->worker) || (state_dir && !m->homes) ? -ENOMEM : 0;
}

Monitor *monitor_free(Monitor *m) {
        if (!m)
                return NULL;
        unstick_done(&m->unstick);
        free(m->bwrap);
        free(m->worker);
        free(m->homes);
        free(m->guard);
        for (int i = 0; i < 2; i++)
                safe_close(m->cg_fds[i]);
        for (size_t i = 0; i < m->n_ws; i++) {
                close(m->ws[i].dirfd);
                safe_close(m->ws[i].view);
                safe_close(m->ws[i].view_ns);
                free(m->ws[i].path);
        }
        free(m->ws);
        for (size_t i = 0; i < m->n_jails; i++)
                close(m->jails[i].pidfd);
        free(m->jails);
        for (size_t i = 0; i < m->n_userns; i++)
                close(m->userns[i].fd);
        free(m->userns);
        if (m->fd >= 0)
                close(m->fd);
        safe_close(m->pool_fd);
        /* Children still at work: ended (not waited for: one may be held
         * in the kernel). */
        for (size_t i = 0; i < m->n_pending; i++) {
                (void)kill(m->pending[i].pid, SIGKILL);
                close(m->pending[i].sock);
        }
        if (m->server_pidfd >= 0)
                close(m->server_pidfd);
        free(m);
        return NULL;
}

static int broken(const char *why, const char *detail);

/* The reply to the request being answered: status (0 or an errno),
 * message (or NULL), a workspace handle (0: none), and n descriptors
 * beside it (cgroup_make's groups). */
static int reply_fds(Monitor *m, int status, const char *message, uint64_t ws, const int *fds, size_t n) {
        MonitorEnc e;
        monitor_enc_begin(&e, MONITOR_REPLY | m->to.type, m->to.id);
        /* Room for an identity at once: a buffer grown after it was put
         * would leave a copy in the memory it freed, which no bzero below
         * reaches. */
        if (m->to.type == MONITOR_REQ_GIT_IDENTITY)
                (void)strbuf_reserve(&e.buf, sizeof m->ident + 256 + (message ? strlen(message) : 0));
        monitor_put_u64(&e, MONITOR_F_STATUS, (uint64_t)status);
        if (message)
                monitor_put_str(&e, MONITOR_F_MESSAGE, message);
        if (ws)
                monitor_put_u64(&e, MONITOR_F_WS, ws);
        if (m->to.type == MONITOR_REQ_STATUS) {
                monitor_put_u64(&e, MONITOR_F_PID, (uint64_t)getpid());
                monitor_put_u64(&e, MONITOR_F_COUNT, m->n_ws);
                monitor_put_u64(&e, MONITOR_F_COUNT, m->jails_started);
                monitor_put_u64(&e, MONITOR_F_COUNT, m->jails_killed);
                monitor_put_u64(&e, MONITOR_F_COUNT, m->placeholders_made);
                monitor_put_u64(&e, MONITOR_F_COUNT, m->put_aside);
                monitor_put_u64(&e, MONITOR_F_COUNT, m->unstick.ended);
        }
        if ((m->to.type == MONITOR_REQ_PLACEHOLDER || m->to.type == MONITOR_REQ_QUARANTINE) && status == 0)
                monitor_put_u64(&e, MONITOR_F_COUNT, m->count);
        if (m->to.type == MONITOR_REQ_GIT_IDENTITY && status == 0) {
                monitor_put_str(&e, MONITOR_F_NAME, m->ident[0]);
                monitor_put_str(&e, MONITOR_F_EMAIL, m->ident[1]);
        }
        int r = monitor_enc_end(&e);
        if (r >= 0) {
                /* Never waited for: a server that does not read its
                 * replies (a full socket: an honest one has a few out at
                 * most) is out of protocol, and the monitor ends, rather
                 * than wait in the send, deaf to the server's end (attack
                 * review 8d). */
                ssize_t k = send_with_fds(m->to.fd, e.buf.data, e.buf.len, fds, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                r = k == -EAGAIN ? broken("it does not read its replies", monitor_req_to_string((MonitorReq)m->to.type))
                    : k < 0      ? (int)k
                                 : 0;
                if (r < 0)
                        m->reply_failed = r;
        }
        /* An owner's identity is not kept: every child the monitor forks
         * after (the next owner's parser among them) would hold a copy. */
        if (m->to.type == MONITOR_REQ_GIT_IDENTITY) {
                if (e.buf.data)
                        explicit_bzero(e.buf.data, e.buf.cap);
                for (size_t i = 0; i < ELEMENTSOF(m->ident); i++)
                        explicit_bzero(m->ident[i], sizeof m->ident[i]);
        }
        monitor_enc_done(&e);
        return r;
}

static int reply(Monitor *m, int status, const char *message, uint64_t ws) {
        return reply_fds(m, status, message, ws, NULL, 0);
}

static int reply_count(Monitor *m, uint64_t count) {
        m->count = count;
        return reply(m, 0, NULL, 0);
}

static MonWorkspace *find_ws(Monitor *m, uint64_t handle) {
        for (size_t i = 0; i < m->n_ws; i++)
                if (m->ws[i].handle == handle)
                        return &m->ws[i];
        return NULL;
}

/* The gid a jail of uid may have: the one user_jail_gid picks from the
 * directory's (never one the server picked, such as root's or shadow's, a
 * group the directory merely has). */
static bool gid_allowed(uid_t uid, gid_t gid, const struct stat *st) {
        return gid == user_jail_gid(uid, st->st_gid);
}

/* Writes text to name in the group dirfd (a cgroup's control file). */
static int write_at(int dirfd, const char *name, const char *text) {
        /* O_TRUNC: what a shell's > does; a control file ignores it. */
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return write_all(fd, text, strlen(text));
}

/* The limit f asked, or none: "max" (v1's memory files: "-1"). */
static int write_limit(int dirfd, const char *name, const MonitorField *f, const char *none) {
        char buf[32];
        if (f)
                snprintf(buf, sizeof buf, "%llu", (unsigned long long)f->u64);
        else
                snprintf(buf, sizeof buf, "%s", none);
        return write_at(dirfd, name, buf);
}

/* The group name below parent, made if missing: a descriptor of it. */
static int make_group(int parent, const char *name) {
        if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The workspace's groups below the instance's, with the limits asked
 * (absent: none) set by the monitor; the server gets a descriptor of each
 * (v2: one; v1: pids, then memory when it could be made). The name is
 * the monitor's own, from the path it opened: the server names no group. */
static int cgroup_make(Monitor *m) {
        MonWorkspace *w = find_ws(m, monitor_field(&m->msg, MONITOR_F_WS, -1)->u64);
        if (!w)
                return reply(m, ENOENT, "no such workspace", 0);
        if (!m->cg_version || m->cg_fds[0] < 0)
                return reply(m, EOPNOTSUPP, "this daemon has no cgroups", 0);
        const MonitorField *pids = monitor_field(&m->msg, MONITOR_F_PIDS_MAX, -1);
        const MonitorField *mem = monitor_field(&m->msg, MONITOR_F_MEMORY_MAX, -1);
        int fds[2] = { -EBADF, -EBADF };
        w->grouped = true;
        int r = make_group(m->cg_fds[0], w->group);
        if (r < 0)
                return reply(m, -r, "the workspace's group could not be made", 0);
        fds[0] = r;
        char note[128] = "";
        if ((r = write_limit(fds[0], "pids.max", pids, "max")) < 0) {
                safe_close(fds[0]);
                return reply(m, -r, "the workspace's pids.max could not be set", 0);
        }
        if (m->cg_version == 2) {
                if ((r = write_limit(fds[0], "memory.max", mem, "max")) < 0) {
                        safe_close(fds[0]);
                        return reply(m, -r, "the workspace's memory.max could not be set", 0);
                }
                /* Swap would let a hog page out past memory.max. */
                (void)write_at(fds[0], "memory.swap.max", "0");
        } else {
                r = m->cg_fds[1] >= 0 ? make_group(m->cg_fds[1], w->group) : -ENOENT;
                if (r >= 0) {
                        /* The kernel keeps memory.limit_in_bytes at most
                         * memsw's (where it has memsw): a raise goes
                         * through memsw first, a cut through the limit
                         * first; memsw is written on both sides of it. */
                        fds[1] = r;
                        (void)write_limit(fds[1], "memory.memsw.limit_in_bytes", mem, "-1");
                        r = write_limit(fds[1], "memory.limit_in_bytes", mem, "-1");
                }
                if (r >= 0)
                        (void)write_limit(fds[1], "memory.memsw.limit_in_bytes", mem, "-1");
                else {
                        fds[1] = safe_close(fds[1]);
                        snprintf(note, sizeof note, "no memory cgroup: %s", strerror(-r));
                }
        }
        r = reply_fds(m, 0, note[0] ? note : NULL, 0, fds, fds[1] >= 0 ? 2 : 1);
        for (int i = 0; i < 2; i++)
                safe_close(fds[i]);
        return r;
}

/* Removes what cgroup_make made for w; fails while processes remain (the
 * instance's end, or the next start's sweep, takes it then). */
static void group_remove(Monitor *m, MonWorkspace *w) {
        if (!w->grouped)
                return;
        for (int i = 0; i < 2; i++)
                if (m->cg_fds[i] >= 0)
                        (void)unlinkat(m->cg_fds[i], w->group, AT_REMOVEDIR);
        w->grouped = false;
}

static int ws_close(Monitor *m) {
        MonWorkspace *w = find_ws(m, monitor_field(&m->msg, MONITOR_F_WS, -1)->u64);
        if (!w)
                return reply(m, ENOENT, "no such workspace", 0);
        group_remove(m, w);
        close(w->dirfd);
        m->n_views -= w->view >= 0;
        safe_close(w->view);
        safe_close(w->view_ns);
        free(w->path);
        *w = m->ws[--m->n_ws];
        return reply(m, 0, NULL, 0);
}

/* The jails seen gone (their pidfd readable) dropped from the table. */
static void jails_prune(Monitor *m) {
        for (size_t i = 0; i < m->n_jails;) {
                struct pollfd p = { .fd = m->jails[i].pidfd, .events = POLLIN };
                if (poll(&p, 1, 0) > 0) {
                        close(m->jails[i].pidfd);
                        m->jails[i] = m->jails[--m->n_jails];
                } else
                        i++;
        }
}

static MonJail *jail_find(Monitor *m, uint64_t ws, uint64_t gen) {
        for (size_t i = 0; i < m->n_jails; i++)
                if (m->jails[i].ws == ws && m->jails[i].gen == gen)
                        return &m->jails[i];
        return NULL;
}

/* Takes pidfd: the jail of (ws, gen) just started. */
static int jail_track(Monitor *m, uint64_t ws, uint64_t gen, int pidfd) {
        if (m->n_jails == m->cap_jails) {
                size_t cap = m->cap_jails ? m->cap_jails * 2 : 16;
                MonJail *n = reallocarray(m->jails, cap, sizeof *n);
                if (!n) {
                        close(pidfd);
                        return -ENOMEM;
                }
                m->jails = n;
                m->cap_jails = cap;
        }
        m->jails[m->n_jails++] = (MonJail){ .ws = ws, .gen = gen, .pidfd = pidfd };
        return 0;
}

/* jail_kill: the jail of that workspace handle (open or closed since) and
 * generation, started by the monitor, gets SIGKILL through its pidfd: its
 * first process is pid 1 of the jail's own pid namespace, or bwrap with
 * its sandbox's init set to die with it, so the whole jail ends. The
 * server reaps it, as before. A jail already gone: ESRCH. */
static int jail_kill(Monitor *m) {
        uint64_t ws = monitor_field(&m->msg, MONITOR_F_WS, -1)->u64;
        uint64_t gen = monitor_field(&m->msg, MONITOR_F_GEN, -1)->u64;
        jails_prune(m);
        MonJail *j = jail_find(m, ws, gen);
        if (!j)
                return reply(m, ESRCH, "no running jail the monitor started has that workspace and generation", 0);
        if (syscall(SYS_pidfd_send_signal, j->pidfd, SIGKILL, NULL, 0) < 0)
                return reply(m, errno, "the jail could not be signalled", 0);
        m->jails_killed++;
        return reply(m, 0, NULL, 0);
}

/* The argv a jail is started with, from the sealed memfd beside
 * jail_spawn (a plan of thousands of masks is past a datagram): the
 * server can no longer change it, and it holds NUL-terminated strings,
 * the first an absolute path. *ret_buf holds the strings *ret_argv
 * points into. */
#define SPAWN_ARGV_BYTES (16u << 20)
#define SPAWN_ARGS_MAX 262144u
static int spawn_argv(int fd, char **ret_buf, char ***ret_argv) {
        int seals = fcntl(fd, F_GET_SEALS);
        int need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
        struct stat st;
        if (seals < 0 || (seals & need) != need || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 2 ||
            (uint64_t)st.st_size > SPAWN_ARGV_BYTES)
                return -EINVAL;
        size_t n = (size_t)st.st_size;
        _cleanup_free_ char *buf = malloc(n);
        if (!buf)
                return -ENOMEM;
        for (size_t at = 0; at < n;) {
                ssize_t k = pread(fd, buf + at, n - at, (off_t)at);
                if (k <= 0)
                        return k < 0 ? -errno : -EINVAL;
                at += (size_t)k;
        }
        if (buf[n - 1] != 0 || buf[0] != '/')
                return -EINVAL;
        size_t argc = 0;
        for (size_t i = 0; i < n; i++)
                argc += buf[i] == 0;
        if (argc > SPAWN_ARGS_MAX)
                return -E2BIG;
        char **argv = calloc(argc + 1, sizeof *argv);
        if (!argv)
                return -ENOMEM;
        for (size_t i = 0, a = 0; i < n; i += strlen(buf + i) + 1)
                argv[a++] = buf + i;
        *ret_buf = TAKE_PTR(buf);
        *ret_argv = argv;
        return 0;
}

/* cgroup.procs of w's group below the instance's group i. */
static int group_procs(Monitor *m, const MonWorkspace *w, int i) {
        if (!w->grouped || m->cg_fds[i] < 0)
                return -ENOENT;
        _cleanup_close_ int g = openat(m->cg_fds[i], w->group, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (g < 0)
                return -errno;
        int fd = openat(g, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

/* jail_spawn's answer: a started child's pid with its exec-error pipe's
 * read end (exec_fd), or a refusal (at a step of the child's). */
static int reply_started(Monitor *m, int status, const char *message, pid_t pid, int step, int exec_fd) {
        MonitorEnc e;
        monitor_enc_begin(&e, MONITOR_REPLY | m->to.type, m->to.id);
        monitor_put_u64(&e, MONITOR_F_STATUS, (uint64_t)status);
        if (message)
                monitor_put_str(&e, MONITOR_F_MESSAGE, message);
        if (pid > 0)
                monitor_put_u64(&e, MONITOR_F_PID, (uint64_t)pid);
        if (step > 0)
                monitor_put_u64(&e, MONITOR_F_STEP, (uint64_t)step);
        int r = monitor_enc_end(&e);
        if (r >= 0) {
                ssize_t k = send_with_fds(m->fd, e.buf.data, e.buf.len, &exec_fd, exec_fd >= 0, MSG_NOSIGNAL);
                r = k < 0 ? (int)k : 0;
        }
        monitor_enc_done(&e);
        return r;
}

static int reply_spawn(Monitor *m, int status, const char *message, pid_t pid, int step) {
        return reply_started(m, status, message, pid, step, -EBADF);
}

/* Why the root-owned directory w is no workspace whose trees the monitor
 * idmaps, as far as its path tells, or NULL: it must lie where rw_paths
 * may (forbidden.h: not at or below /etc, /usr, /var/lib, /root, /run,
 * ..., nor /, /var or /home as a whole). It must also hold root's
 * vectora.toml (root_toml_ok, asked in a child: a lookup in the
 * directory waits while another process holds it). */
static const char *root_path_refused(const MonWorkspace *w) {
        static char why[512];
        char buf[400];
        const char *bad = forbidden_lexical(w->path, true, buf, sizeof buf);
        if (!bad)
                return NULL;
        snprintf(why, sizeof why, "a root-owned workspace's trees are never idmapped at %s: it is %s", w->path, bad);
        return why;
}

#define ROOT_TOML_WHY                                                                                                  \
        "a root-owned workspace needs the vectora.toml that makes it one (a regular file owned by root in it, one link "  \
        "to it), and root's own directories from / down to it (none that another user owns, or that group or others "    \
        "may write without the sticky bit)"

/* The directory fd and every one above it up to / is root's, and none
 * may be written by group or others but with the sticky bit (/tmp): no
 * other account can put a directory holding root's files, or its
 * vectora.toml, where root's opt-in is read. An ordinary owner's project
 * holding a root-owned directory (`sudo make` leaves them) made the
 * monitor's own placeholder in it root's vectora.toml, and that directory
 * a root-owned workspace whose jail wrote root's files (attack review of
 * the monitor boundary, F1). */
static bool root_all_the_way_up(int fd) {
        _cleanup_close_ int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        for (int depth = 0; cur >= 0 && depth < 4096; depth++) {
                struct statx sx, up;
                if (statx(cur, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO,
                          &sx) < 0 || !S_ISDIR(sx.stx_mode) || sx.stx_uid != 0 ||
                    ((sx.stx_mode & (S_IWGRP | S_IWOTH)) && !(sx.stx_mode & S_ISVTX)))
                        return false;
                int next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (next < 0 || statx(next, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &up) < 0) {
                        safe_close(next);
                        return false;
                }
                bool top = up.stx_ino == sx.stx_ino && up.stx_dev_major == sx.stx_dev_major &&
                           up.stx_dev_minor == sx.stx_dev_minor;
                safe_close(cur);
                cur = next;
                if (top)
                        return true;
        }
        return false;
}

/* Whether the directory dirfd holds a vectora.toml that root owns, a
 * regular file with one link on the directory's own mount, in root's own
 * tree (root_all_the_way_up): root's opt-in, which the server, not root
 * once it drops its privileges, cannot make. Asked of the kernel's cache
 * only (a FUSE server is never asked). */
static bool root_toml_ok(int dirfd) {
        struct statx sx;
        int dir_mnt;
        return fd_mount_id(dirfd, &dir_mnt) == 0 &&
               statx(dirfd, "vectora.toml", AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
                     STATX_TYPE | STATX_UID | STATX_NLINK | STATX_MNT_ID, &sx) == 0 &&
               (sx.stx_mask & STATX_MNT_ID) && S_ISREG(sx.stx_mode) && sx.stx_uid == 0 && sx.stx_nlink == 1 &&
               sx.stx_mnt_id == (uint64_t)dir_mnt && root_all_the_way_up(dirfd);
}

/* The workspace w as a placeholder's or a view's, as far as the monitor
 * tells without a lookup: still its owner's, an ordinary owner's or
 * root's where a root workspace may be; NULL, or why not. */
static const char *ws_served(const MonWorkspace *w, struct stat *st) {
        if (fstat(w->dirfd, st) < 0)
                return "the workspace could not be read";
        if (st->st_uid != w->uid)
                return "the workspace's owner changed since it was opened";
        return w->uid == 0 ? root_path_refused(w)
               : !uid_is_ordinary(w->uid) ? "a system account's workspace is not served to the server"
                                          : NULL;
}

/* What the server sent is closed on a thread of the monitor's own, never
 * on its loop: a close calls the file system's flush, and a FUSE file's (a
 * mount in any user's own user namespace will do) waits for its server's
 * answer, uninterruptibly once the server has read the request; a TCP
 * socket's waits for its linger time. The thread is made the first time
 * a descriptor comes (the monitor is one thread until then). A
 * closer stuck on one holds only what comes after it, and the loop goes on
 * serving until its pipe is full; then the monitor ends (close_received),
 * rather than close on the loop or keep descriptors without end. */
static struct {
        int fds[2];
        pid_t pid;        /* the process whose thread it is: a fork has none */
        unsigned pending; /* handed to it and not closed yet (atomic) */
} closer = { { -EBADF, -EBADF }, 0, 0 };

/* The closer's pipe carries one int per descriptor: fd itself, or -1 - fd
 * for one counted in closer.pending. */
static void *closer_run(void *arg) {
        int fd = (int)(intptr_t)arg;
        for (int got; read(fd, &got, sizeof got) == (ssize_t)sizeof got;) {
                close(got < 0 ? -1 - got : got);
                if (got < 0)
                        __atomic_sub_fetch(&closer.pending, 1, __ATOMIC_SEQ_CST);
        }
        return NULL;
}

/* Whether a child that inherits fd closes it at once, as the kernel tells
 * from the descriptor alone (no file system asked): a pipe, a unix
 * socket, a memfd (what jail_spawn takes). Anything else (a file whose
 * file system has a flush, a TCP socket that lingers) may wait. */
static bool closes_at_once(int fd) {
        int domain = 0;
        socklen_t dl = sizeof domain;
        return fcntl(fd, F_GETPIPE_SZ) >= 0 || fcntl(fd, F_GET_SEALS) >= 0 ||
               (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) == 0 && domain == AF_UNIX);
}

/* Whether no descriptor handed to the closer that a child could wait on
 * is still open (waiting up to 200 ms for it): only then may the monitor
 * fork. One still open in its table goes to the child, which closes it
 * (or ends with it), and a FUSE file's close waits for its server in the
 * kernel: attack review 8c held every fs_child so and the monitor in a
 * wait for make_userns's child, after the server sent FUSE files the
 * closer was stuck behind. A server's usual descriptors (jail_spawn's
 * pipe, socket and memfd) are not counted: a start right after another
 * never waits for the closer. */
static bool closer_idle(void) {
        for (int i = 0; i < 200; i++) {
                if (__atomic_load_n(&closer.pending, __ATOMIC_SEQ_CST) == 0)
                        return true;
                (void)usleep(1000);
        }
        return false;
}

#define CLOSER_BUSY_WHY "a descriptor the server sent is still being closed (its file system does not answer?): the monitor forks nothing meanwhile, the child would hold it"

static bool closer_start(void) {
        if (closer.pid == getpid())
                return closer.fds[1] >= 0;
        /* A fork of a process that had one: its pipe is the parent's. */
        closer.fds[0] = safe_close(closer.fds[0]);
        closer.fds[1] = safe_close(closer.fds[1]);
        closer.pid = getpid();
        if (pipe2(closer.fds, O_CLOEXEC) < 0)
                return false;
        (void)fcntl(closer.fds[1], F_SETFL, O_NONBLOCK);
        pthread_attr_t a;
        pthread_t t;
        bool ok = pthread_attr_init(&a) == 0;
        if (ok) {
                (void)pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
                (void)pthread_attr_setstacksize(&a, 64 * 1024);
                ok = pthread_create(&t, &a, closer_run, (void *)(intptr_t)closer.fds[0]) == 0;
                pthread_attr_destroy(&a);
        }
        if (!ok) {
                closer.fds[0] = safe_close(closer.fds[0]);
                closer.fds[1] = safe_close(closer.fds[1]);
        }
        return ok;
}

/* fd, which came from the server, handed to the closer: no kind of
 * descriptor is sure to close at once (a TCP socket with SO_LINGER and
 * unsent data holds its last close for the linger time, a unix socket
 * carrying one in its queue too). -EAGAIN when the closer cannot take it
 * (no thread could be made, or its pipe is full: a close already stuck
 * there and 16 384 more behind it); fd is then kept open, never closed on
 * the loop (attack review 4: a full pipe's fallback closed a lingering
 * socket there), and the caller ends the monitor. */
static int close_received(int fd) {
        if (fd < 0)
                return 0;
        if (!closer_start())
                return -EAGAIN;
        bool counted = !closes_at_once(fd);
        int item = counted ? -1 - fd : fd;
        if (counted)
                __atomic_add_fetch(&closer.pending, 1, __ATOMIC_SEQ_CST);
        if (write(closer.fds[1], &item, sizeof item) == (ssize_t)sizeof item)
                return 0;
        if (counted)
                __atomic_sub_fetch(&closer.pending, 1, __ATOMIC_SEQ_CST);
        return -EAGAIN;
}

/* What a request does in a workspace's tree, or a walk to one, runs in a
 * child with a deadline: a process that can read a directory can hold it
 * (getdents64 into a buffer mapped from a FUSE file whose read never
 * comes: the directory's lock is held until then), and a mkdirat,
 * create, rename, or a lookup behind a queued one, then waits in the
 * kernel, SIGKILL or not. The monitor waited with it and kept the
 * instance lock, so the daemon stopped and could not start again (attack
 * reviews 8 and 8b). The child keeps only the workspace's descriptor and
 * its answer's socket; one that does not answer in FS_CHILD_MS is killed,
 * left to end when the kernel lets it (reaped later) and the request
 * answered ETIMEDOUT. While one is held for a workspace, that workspace's
 * requests are refused at once (EBUSY), and so are an owner's past
 * FS_STUCK_OWNER, everyone's past FS_STUCK_MAX.
 *
 * In the tree the child is the workspace's owner (its file-system ids:
 * each entry is made as its parent's owner and group, no chown after),
 * so that what it does, also when it ends after its answer, is what
 * those owners could do themselves: nothing root-owned is left, no
 * directory found by name is given away (attack review 8b). */
typedef struct FsJob {
        int dirfd;      /* the workspace's; -EBADF: ws_open's walk from / */
        int ws_mnt;     /* its mount */
        uid_t uid;      /* who walks the tree: the owner (0: root's) */
        gid_t gid;
        bool root_toml; /* root's vectora.toml checked first (root_toml_ok) */
        char rel[4096];
        unsigned flags;
        VsHostText text;
        uint64_t dev, ino;
        const MonitorMsg *msg; /* the request, as the child's copy holds it */
} FsJob;

typedef struct FsOut {
        int r;
        bool no_toml; /* root_toml_ok said no */
        uint64_t count;
        char ident[2][MONITOR_IDENT_MAX + 1]; /* git_identity's: name, email */
        size_t n_fds;
        int fds[MONITOR_MOUNTS_MAX];
} FsOut;

/* Whether held or pending entry (dev, ino) is workspace w's directory. */
static bool same_dir(const MonWorkspace *w, uint64_t dev, uint64_t ino) {
        return w && w->dev == dev && w->ino == ino;
}

/* Reaps what has ended; how many still held are owner's, and w's (NULL:
 * none). */
static void reap_stuck(Monitor *m, uid_t owner, const MonWorkspace *w, size_t *ret_owner, size_t *ret_ws) {
        *ret_owner = *ret_ws = 0;
        for (size_t i = 0; i < m->n_stuck;)
                if (waitpid(m->stuck[i].pid, NULL, WNOHANG) != 0)
                        m->stuck[i] = m->stuck[--m->n_stuck];
                else {
                        *ret_owner += m->stuck[i].owner == owner;
                        *ret_ws += same_dir(w, m->stuck[i].dev, m->stuck[i].ino);
                        i++;
                }
}

/* pid, killed, held in the kernel for owner's workspace w (NULL: none):
 * reaped once it ends (the caller checked there is room). Counted
 * against w's directory, whichever handle names it later. */
static void stuck_add(Monitor *m, pid_t pid, uid_t owner, const MonWorkspace *w) {
        /* fs_room kept its place: a pending child was counted. */
        if (m->n_stuck >= FS_STUCK_MAX) {
                log_error("monitor: no room to keep held child %d (a bug): it is left to init", (int)pid);
                return;
        }
        m->stuck[m->n_stuck++] = (typeof(m->stuck[0])){ .pid = pid, .owner = owner, .dev = w ? w->dev : 0,
                                                        .ino = w ? w->ino : 0 };
}

/* The child's file-system ids (the process is root otherwise: it may
 * change them again). */
static int fs_as(uid_t uid, gid_t gid) {
        (void)syscall(SYS_setfsgid, gid);
        (void)syscall(SYS_setfsuid, uid);
        return (uid_t)syscall(SYS_setfsuid, -1) == uid && (gid_t)syscall(SYS_setfsgid, -1) == gid ? 0 : -EPERM;
}

static _Noreturn void fs_child_run(int sock, const FsJob *job, int (*fn)(FsJob *job, FsOut *out)) {
        int keep[] = { job->dirfd, sock };
        FsJob mine = *job;
        FsOut out = { .r = close_all_fds_except(keep, ELEMENTSOF(keep)) };
        umask(0);
        if (out.r == 0 && mine.uid != 0 && (syscall(SYS_setgroups, 0, NULL) < 0 || fs_as(mine.uid, mine.gid) < 0))
                out.r = -EPERM;
        if (out.r == 0 && mine.root_toml && !root_toml_ok(mine.dirfd)) {
                out.no_toml = true;
                out.r = -EPERM;
        }
        if (out.r == 0)
                out.r = fn(&mine, &out);
        if (out.r < 0)
                out.n_fds = 0;
        /* The answer, then its descriptors FD_PASS_MAX at a time. */
        if (send(sock, &out, offsetof(FsOut, fds), MSG_NOSIGNAL) < 0)
                _exit(1);
        for (size_t i = 0; i < out.n_fds; i += FD_PASS_MAX) {
                size_t k = out.n_fds - i < FD_PASS_MAX ? out.n_fds - i : FD_PASS_MAX;
                if (send_with_fds(sock, "f", 1, out.fds + i, k, MSG_NOSIGNAL) < 0)
                        _exit(1);
        }
        _exit(0);
}

static int pending_done(Monitor *m, size_t i);
static int step_pool(Monitor *m);

/* Whether a datagram came on sock before deadline (now_ms()'s clock).
 * Meanwhile the pool channel's children that answer or pass their
 * deadline are answered (unless serving one of them: serve false), so a
 * wait here for the loop's channel delays none past its deadline. */
static bool fs_wait(Monitor *m, int sock, uint64_t deadline, bool serve) {
        for (;;) {
                struct pollfd p[2 + FS_PENDING_MAX];
                size_t n = serve ? m->n_pending : 0;
                uint64_t now = now_ms(), next = deadline;
                p[0] = (struct pollfd){ .fd = sock, .events = POLLIN };
                /* The pool's channel read too (step_pool), not once its
                 * channel ended: -1 is not polled. */
                p[1] = (struct pollfd){ .fd = serve && !m->pool_end ? m->pool_fd : -1, .events = POLLIN };
                for (size_t i = 0; i < n; i++) {
                        p[2 + i] = (struct pollfd){ .fd = m->pending[i].sock, .events = POLLIN };
                        next = m->pending[i].deadline < next ? m->pending[i].deadline : next;
                }
                int k = poll(p, 2 + n, now >= next ? 0 : (int)(next - now));
                if (k < 0 && errno != EINTR)
                        return false;
                if (k > 0 && p[0].revents)
                        return true;
                now = now_ms();
                typeof(m->to) to = m->to;
                for (size_t i = n; i-- > 0;)
                        if (p[2 + i].revents || now >= m->pending[i].deadline)
                                (void)pending_done(m, i);
                m->to = to;
                if (k > 0 && p[1].revents) {
                        int r = step_pool(m);
                        if (r != 0)
                                m->pool_end = r;
                }
                if (now >= deadline)
                        return false;
        }
}

/* Whether the monitor may fork one more child that may be held for
 * owner's workspace w (NULL: none yet): 0, or -EBUSY while a child is
 * held for w's directory, FS_PENDING_WS are pending for it, the owner
 * has FS_STUCK_OWNER held or pending, or FS_STUCK_MAX are in all (each
 * pending one counted: once killed it is held, and the table has its
 * place; attack review 8d: pending ones counted against nothing and past
 * the table were never reaped); -EAGAIN while the closer has a
 * descriptor a child would inherit (closer_idle). */
static int fs_room(Monitor *m, uid_t owner, const MonWorkspace *w) {
        size_t mine, here, pending = 0;
        reap_stuck(m, owner, w, &mine, &here);
        for (size_t i = 0; i < m->n_pending; i++) {
                pending += same_dir(w, m->pending[i].dev, m->pending[i].ino);
                mine += m->pending[i].owner == owner;
        }
        if (m->sync.on) {
                pending += same_dir(w, m->sync.dev, m->sync.ino);
                mine += m->sync.owner == owner;
        }
        if (here > 0 || pending >= FS_PENDING_WS || mine >= FS_STUCK_OWNER ||
            m->n_stuck + m->n_pending + m->sync.on >= FS_STUCK_MAX)
                return -EBUSY;
        return closer_idle() ? 0 : -EAGAIN;
}

/* fn(job) started in a child of its own (above), for workspace ws (0:
 * none yet) of owner: its pid and the socket its answer comes on, or
 * -EBUSY while too many are held (see above) or pending. */
static int fs_start(Monitor *m, uid_t owner, const MonWorkspace *w, const FsJob *job, int (*fn)(FsJob *job, FsOut *out),
                    pid_t *ret_pid, int *ret_sock) {
        int r = fs_room(m, owner, w);
        if (r < 0)
                return r;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        /* Ended with the monitor, whatever it waits for by then. */
        pid_t pid = spawn_fork(SIGKILL);
        if (pid < 0) {
                close(sv[0]);
                close(sv[1]);
                return (int)pid;
        }
        if (pid == 0)
                fs_child_run(sv[1], job, fn);
        close(sv[1]);
        *ret_pid = pid;
        *ret_sock = sv[0];
        return 0;
}

/* The answer of fs_start's child pid on sock (closed here), waited for
 * until deadline: its result, out filled (its descriptors the caller's);
 * -ETIMEDOUT when none came, the child killed and held (reaped later). */
static int fs_finish(Monitor *m, pid_t pid, int sock, uint64_t deadline, uid_t owner, const MonWorkspace *w, bool serve,
                     FsOut *out) {
        _cleanup_close_ int s = sock;
        *out = (FsOut){ .r = -EIO };
        bool answered = fs_wait(m, s, deadline, serve) &&
                        recv(s, out, offsetof(FsOut, fds), MSG_DONTWAIT) == (ssize_t)offsetof(FsOut, fds) &&
                        out->n_fds <= MONITOR_MOUNTS_MAX;
        size_t got = 0;
        while (answered && got < out->n_fds) {
                union {
                        struct cmsghdr h;
                        char space[CMSG_SPACE(sizeof(int) * FD_PASS_MAX)];
                } control;
                char b;
                struct iovec iov = { .iov_base = &b, .iov_len = 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof control };
                bool over;
                answered = fs_wait(m, s, deadline, serve) && recvmsg(s, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1;
                if (answered)
                        got += recv_take_fds(&mh, out->fds + got, out->n_fds - got, &over);
                answered = answered && !over;
        }
        if (!answered) {
                for (size_t i = 0; i < got; i++)
                        close(out->fds[i]);
                out->n_fds = 0;
                (void)kill(pid, SIGKILL);
                if (waitpid(pid, NULL, WNOHANG) == 0)
                        stuck_add(m, pid, owner, w);
                return -ETIMEDOUT;
        }
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return out->r;
}

/* fn(job) in a child, waited for FS_CHILD_MS: fs_finish's result. */
static int fs_child(Monitor *m, uid_t owner, const MonWorkspace *w, const FsJob *job, int (*fn)(FsJob *job, FsOut *out),
                    FsOut *out) {
        pid_t pid = 0;
        int sock = -EBADF;
        int r = fs_start(m, owner, w, job, fn, &pid, &sock);
        if (r < 0) {
                *out = (FsOut){ .r = r };
                return r;
        }
        m->sync.on = true;
        m->sync.owner = owner;
        m->sync.dev = w ? w->dev : 0;
        m->sync.ino = w ? w->ino : 0;
        r = fs_finish(m, pid, sock, now_ms() + FS_CHILD_MS, owner, w, true, out);
        m->sync.on = false;
        /* The server broke the protocol on the pool's channel meanwhile:
         * this request goes no further (a jail_spawn would fork next). */
        if (m->pool_end < 0 && r >= 0) {
                for (size_t i = 0; i < out->n_fds; i++)
                        close(out->fds[i]);
                out->n_fds = 0;
                r = out->r = -EPROTO;
        }
        return r;
}

/* An FsJob for workspace w (st: its fstat) from the request: its
 * descriptor and mount, its owner as the walker (the group a jail of the
 * owner gets), rel. */
static int fs_job(const MonWorkspace *w, const struct stat *st, const char *rel, FsJob *job) {
        *job = (FsJob){ .dirfd = w->dirfd, .uid = w->uid, .gid = w->uid == 0 ? 0 : user_jail_gid(w->uid, st->st_gid),
                        .root_toml = w->uid == 0 };
        if (strlen(rel) >= sizeof job->rel)
                return -ENAMETOOLONG;
        strcpy(job->rel, rel);
        return fd_mount_id(w->dirfd, &job->ws_mnt);
}

/* Why fs_child's r (for out) refused, or NULL. */
static const char *fs_why(int r, const FsOut *out) {
        return out->no_toml       ? ROOT_TOML_WHY
               : r == -EXDEV      ? "another file system is on the way (a user's, or a mount below the workspace): nothing is done there"
               : r == -ETIMEDOUT  ? "the workspace's directory did not let go in 3 s (held by another process?)"
               : r == -EBUSY      ? "earlier requests are still held in this workspace's or this owner's directories: try again later"
               : r == -EAGAIN     ? CLOSER_BUSY_WHY
                                  : NULL;
}

/* Answers fs_child's refusal r (for out): EPERM for another file system
 * on the way or no root vectora.toml. */
static int reply_fs(Monitor *m, int r, const FsOut *out) {
        return reply(m, r == -EXDEV || out->no_toml ? EPERM : -r, fs_why(r, out), 0);
}

#define WS_OPEN_WHY                                                                                                    \
        "no directory of that user's and group at that path that its jail could reach (missing, not a directory, a "      \
        "symlink on the way, another's, or behind a directory the owner may not enter)"

/* For root the walk is root's: a directory it opens is root's workspace
 * only where root opted in (root_toml_ok), else the answer is the one for
 * no directory there, so a server learns nothing of which root-owned
 * directories exist, below others' 0700 ones included (attack review of
 * the placeholders, F3). */
static int open_in_child(FsJob *j, FsOut *out) {
        int fd = chase_open_dir_local(j->rel);
        if (fd < 0)
                return fd;
        if (j->uid == 0 && !root_toml_ok(fd)) {
                close(fd);
                return -ENOENT;
        }
        out->fds[out->n_fds++] = fd;
        return 0;
}

static int ws_open(Monitor *m) {
        const char *path = monitor_field_str(monitor_field(&m->msg, MONITOR_F_PATH, -1));
        uid_t uid = (uid_t)monitor_field(&m->msg, MONITOR_F_UID, -1)->u64;
        gid_t gid = (gid_t)monitor_field(&m->msg, MONITOR_F_GID, -1)->u64;
        if (m->n_ws >= WORKSPACES_MAX)
                return reply(m, EMFILE, "too many workspaces open", 0);
        /* Opened by the monitor, from /, following no symlink: the server
         * names the path, the monitor decides what it is. The walk asks no
         * file system a process serves (FUSE): a server that answers
         * others but not the monitor would hold it, and every jail with
         * it; and it runs in a child (fs_child): a directory on the way
         * that another process holds stalls a lookup in it (attack
         * review 8b). */
        /* Walked with the ids a jail of that owner gets (the owner, one
         * group, no supplementary ones): what the jail could not reach is
         * no workspace of its, and the walk learns nothing of what only
         * root may look into. Every way it is not that owner's directory
         * gets one answer (WS_OPEN_WHY): a server asking for paths and
         * owners learns no more than whether a workspace opened (attack
         * review of the monitor boundary, F3: names below a 0700
         * directory, and their owners, told apart by the answers). */
        FsJob job = { .dirfd = -EBADF, .uid = uid, .gid = uid == 0 ? 0 : user_jail_gid(uid, gid) };
        FsOut out;
        if (strlen(path) >= sizeof job.rel)
                return reply(m, ENAMETOOLONG, NULL, 0);
        strcpy(job.rel, path);
        int r = fs_child(m, uid, NULL, &job, open_in_child, &out);
        if (r == -ETIMEDOUT || r == -EBUSY)
                return reply(m, -r, r == -EBUSY ? "earlier requests are still held in this owner's directories: try again later"
                                                : "the workspace's path did not let go in 3 s (a directory on it held by another process?)",
                             0);
        _cleanup_close_ int dfd = r < 0 ? r : out.fds[0];
        if (dfd == -EMFILE || dfd == -ENFILE)
                return reply(m, -dfd, "the monitor has no descriptor left for another workspace", 0);
        if (dfd == -EREMOTE)
                return reply(m, EPERM, "a pseudo or user file system holds no workspace", 0);
        if (dfd == -ENOMEM)
                return reply(m, ENOMEM, NULL, 0);
        if (dfd < 0)
                return reply(m, EPERM, WS_OPEN_WHY, 0);
        struct stat st;
        struct statfs sf;
        if (fstat(dfd, &st) < 0 || fstatfs(dfd, &sf) < 0)
                return reply(m, errno, "the workspace could not be read", 0);
        /* Where an owner means something else (/proc/PID is its process's
         * uid) or is whatever a user's file system says (FUSE, refused
         * above already, before anything asked it). */
        if (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC || sf.f_type == CGROUP_SUPER_MAGIC ||
            sf.f_type == CGROUP2_SUPER_MAGIC || sf.f_type == DEVPTS_SUPER_MAGIC || sf.f_type == FUSE_SUPER_MAGIC)
                return reply(m, EPERM, "a pseudo or user file system holds no workspace", 0);
        /* The directory's group as the server saw it, or its jail's. */
        if (st.st_uid != uid || (gid != st.st_gid && !gid_allowed(uid, gid, &st)))
                return reply(m, EPERM, WS_OPEN_WHY, 0);
        /* One handle a path: its groups are named from it, and a second
         * handle (another directory at the same path since) would share
         * them, its limits and its removal (attack review 5). The
         * server closes the old handle first. */
        char hex[SHA256_HEX_LEN + 1], group[sizeof m->ws[0].group];
        sha256_hex(path, strlen(path), hex);
        snprintf(group, sizeof group, "ws-%.16s", hex);
        for (size_t i = 0; i < m->n_ws; i++)
                if (streq(m->ws[i].group, group))
                        return reply(m, EBUSY, "another handle holds that path's groups: close it first", 0);
        if (m->n_ws == m->cap_ws) {
                size_t cap = m->cap_ws ? m->cap_ws * 2 : 16;
                MonWorkspace *n = reallocarray(m->ws, cap, sizeof *n);
                if (!n)
                        return reply(m, ENOMEM, NULL, 0);
                m->ws = n;
                m->cap_ws = cap;
        }
        uint64_t handle = m->next_handle++;
        MonWorkspace *w = &m->ws[m->n_ws++];
        char *copy = strdup(path);
        if (!copy)
                return reply(m, ENOMEM, NULL, 0);
        *w = (MonWorkspace){ .handle = handle, .dirfd = TAKE_FD(dfd), .uid = uid, .gid = gid, .path = copy, .view = -EBADF,
                             .view_ns = -EBADF, .dev = st.st_dev, .ino = st.st_ino };
        memcpy(w->group, group, sizeof w->group);
        return reply(m, 0, NULL, handle);
}

/* place_leaf's make of name in pfd, as the ids the child has now. */
static int leaf_make(int pfd, const char *name, unsigned flags, VsHostText text) {
        if (flags & VS_HOST_MAKE_DIR)
                return mkdirat(pfd, name, 0755) == 0 ? 1 : errno == EEXIST && !(flags & VS_HOST_MAKE_EXCL) ? 0 : -errno;
        const char *t = vs_host_texts[text];
        /* An unnamed file, written, then linked in (EEXIST as O_EXCL says
         * it), since the daemon's watch tells a placeholder by its content
         * (an empty .mcp.json seen between the create and the write read as
         * the jail's, and recycled it). Linked by its /proc name: linkat's
         * AT_EMPTY_PATH asks for CAP_DAC_READ_SEARCH, which the owner's ids
         * do not have. */
        _cleanup_close_ int fd = openat(pfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
        char self[64];
        int r;
        if (fd >= 0) {
                snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
                r = write_all(fd, t, strlen(t));
                if (r >= 0)
                        r = linkat(AT_FDCWD, self, pfd, name, AT_SYMLINK_FOLLOW) == 0 ? 1
                            : errno == EEXIST && !(flags & VS_HOST_MAKE_EXCL)     ? 0
                                                                                 : -errno;
        } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                r = -errno;
        else if ((fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644)) < 0)
                r = errno == EEXIST && !(flags & VS_HOST_MAKE_EXCL) ? 0 : -errno;
        else if ((r = write_all(fd, t, strlen(t))) < 0)
                (void)unlinkat(pfd, name, 0);
        else
                r = 1;
        return r;
}

/* name, new in the directory pfd (local: place_parent checked it), made
 * with the walker's ids (the workspace owner's and the group its jail
 * gets; root's in root's workspace), never as another account: what the
 * owner's jail could not make there itself, the monitor does not make
 * either (a second attack review had it make a listed name in another
 * user's directory of the workspace, as that user; the first, root's
 * vectora.toml in a root-owned build/). 1 made, 0 there already (EXCL:
 * -EEXIST). A file gets the text, whole when it appears; modes are exact
 * (0755, 0644: the child's umask is 0). A directory its owner made
 * read-only is opened for the make and given its mode back
 * (host_dir_open_up: a jail of that owner would chmod it and make the
 * name itself); another account's mode is its word (the chmod, made with
 * the owner's ids, is refused). */
static int place_leaf(int pfd, const char *name, unsigned flags, VsHostText text) {
        mode_t was;
        int r = leaf_make(pfd, name, flags, text);
        if (r == -EACCES && host_dir_open_up(pfd, &was) > 0) {
                r = leaf_make(pfd, name, flags, text);
                host_dir_restore(pfd, was);
        }
        return r;
}

/* The directory rel (split in place) below wsfd, each component entered
 * without following a symlink and on the workspace's own mount (ws_mnt:
 * any other, a user's file system included, is -EXDEV, asked nothing),
 * made where missing when parents. No allocation, no look at the mount
 * table (a walk that read it per component was made to take 17 s by an
 * owner's long mount table and deep path: attack review 8). */
static int place_parent(const FsJob *j, char *rel, bool parents) {
        int cur = fcntl(j->dirfd, F_DUPFD_CLOEXEC, 3);
        char *save = NULL;
        if (cur < 0)
                return -errno;
        for (char *c = rel ? strtok_r(rel, "/", &save) : NULL; cur >= 0 && c; c = strtok_r(NULL, "/", &save)) {
                int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                mode_t was;
                /* A directory of the owner's it may not search but for
                 * its mode (the owner's chmod away, and the jail's). */
                if (next < 0 && errno == EACCES && host_dir_open_up(cur, &was) > 0) {
                        next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        int e = errno;
                        host_dir_restore(cur, was);
                        errno = e;
                }
                if (next < 0 && errno == ENOENT && parents) {
                        int r = place_leaf(cur, c, VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY);
                        next = r < 0 ? r : openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (r >= 0 && next < 0)
                                next = -errno;
                } else if (next < 0) {
                        next = -errno;
                        struct statx sx;
                        if (next == -ENOTDIR &&
                            statx(cur, c, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) == 0 &&
                            S_ISLNK(sx.stx_mode))
                                next = -ELOOP;
                }
                int mnt;
                if (next >= 0 && (fd_mount_id(next, &mnt) < 0 || mnt != j->ws_mnt)) {
                        close(next);
                        next = -EXDEV;
                }
                close(cur);
                cur = next;
        }
        return cur;
}

/* rel's last component cut off: its parent's part (NULL: the workspace
 * itself) stays in j->rel, the name is returned. */
static char *fs_split(FsJob *j, char **ret_parent) {
        char *name = strrchr(j->rel, '/');
        if (name)
                *name++ = 0;
        else
                name = j->rel;
        *ret_parent = name == j->rel ? NULL : j->rel;
        return name;
}

/* Each item of the request in turn, in this one child (a fork per
 * placeholder was most of a workspace's first start: 12 of them); the
 * first that fails ends it, answered so (the server then asks for the
 * rest one by one, where each failure has its own answer). */
static int place_in_child(FsJob *j, FsOut *out) {
        for (int i = monitor_next(j->msg, MONITOR_F_ITEM, -1); i >= 0; i = monitor_next(j->msg, MONITOR_F_ITEM, i)) {
                const MonitorField *tf = monitor_field(j->msg, MONITOR_F_TEXT, i);
                snprintf(j->rel, sizeof j->rel, "%s", monitor_field_str(monitor_field(j->msg, MONITOR_F_REL, i)));
                j->flags = (unsigned)monitor_field(j->msg, MONITOR_F_FLAGS, i)->u64;
                j->text = tf ? (VsHostText)tf->u64 : VS_HOST_TEXT_EMPTY;
                char *parent;
                char *leaf = fs_split(j, &parent);
                int cur = place_parent(j, parent, j->flags & VS_HOST_MAKE_PARENTS);
                if (cur < 0)
                        return cur;
                int r = place_leaf(cur, leaf, j->flags, j->text);
                close(cur);
                if (r < 0)
                        return r;
                out->count += (uint64_t)r;
        }
        return 0;
}

/* The workspace of the request's handle, for a request that writes in
 * it (placeholder, quarantine); NULL when refused: then answered so, *ret
 * what reply() gave. */
static MonWorkspace *ws_writable(Monitor *m, struct stat *st, int *ret) {
        MonWorkspace *w = find_ws(m, monitor_field(&m->msg, MONITOR_F_WS, -1)->u64);
        const char *why = !w ? NULL : ws_served(w, st);
        if (w && !why)
                return w;
        *ret = !w ? reply(m, ENOENT, "no workspace has that handle", 0) : reply(m, EPERM, why, 0);
        return NULL;
}

/* The request's workspace, served (ws_writable), and an FsJob for it
 * at its root (fs_job); NULL when refused, *ret the reply's result. */
static MonWorkspace *ws_job(Monitor *m, FsJob *job, int *ret) {
        struct stat st;
        MonWorkspace *w = ws_writable(m, &st, ret);
        if (!w)
                return NULL;
        int r = fs_job(w, &st, "", job);
        if (r < 0) {
                *ret = reply(m, -r, NULL, 0);
                return NULL;
        }
        return w;
}

/* What a placeholder's or a quarantine's child did (r, out), answered
 * to m->to's request. */
static int fs_done(Monitor *m, int r, FsOut *out) {
        if (m->to.type == MONITOR_REQ_QUARANTINE && r == -EEXIST)
                return reply(m, EEXIST, "100 quarantined copies there already", 0);
        if (m->to.type == MONITOR_REQ_QUARANTINE && r == -ESTALE)
                return reply(m, ESTALE, "it is no longer the entry noted", 0);
        /* Those a placeholder request made before its failing item are
         * made all the same (attack review 10). */
        if (m->to.type == MONITOR_REQ_PLACEHOLDER)
                m->placeholders_made += out->count;
        if (m->to.type == MONITOR_REQ_GIT_IDENTITY && (r == -ETIME || r == -EBADMSG))
                return reply(m, -r,
                             r == -ETIME ? "the owner's git config was not parsed in 1 s"
                                         : "the owner's git config could not be parsed (its parser ended without an answer)",
                             0);
        if (r < 0)
                return reply_fs(m, r, out);
        if (m->to.type == MONITOR_REQ_GIT_IDENTITY) {
                /* The child became the owner: what it sent is the owner's
                 * word, checked as the server checks it (plain lines). */
                bool plain = true;
                for (int i = 0; i < 2; i++) {
                        plain = plain && memchr(out->ident[i], 0, sizeof out->ident[i]) &&
                                jail_git_identity_plain(out->ident[i]);
                        memcpy(m->ident[i], out->ident[i], sizeof m->ident[i]);
                }
                for (size_t i = 0; i < ELEMENTSOF(out->ident); i++)
                        explicit_bzero(out->ident[i], sizeof out->ident[i]);
                return plain ? reply(m, 0, NULL, 0) : reply(m, EBADMSG, "the owner's child answered no plain identity", 0);
        }
        if (m->to.type == MONITOR_REQ_QUARANTINE)
                m->put_aside++;
        return reply_count(m, out->count);
}

/* job for w run in a child: a request of the pool's channel is answered
 * when the child answers or its deadline passes (monitor_step), the
 * loop's channel's meanwhile served; one of the loop's channel is
 * waited for here. */
static int fs_request(Monitor *m, const MonWorkspace *w, const FsJob *job, int (*fn)(FsJob *job, FsOut *out)) {
        FsOut out;
        pid_t pid = 0;
        int sock = -EBADF, r;
        if (m->pool_fd < 0 || m->to.fd != m->pool_fd) {
                r = fs_child(m, w->uid, w, job, fn, &out);
                return fs_done(m, r, &out);
        }
        r = m->n_pending >= FS_PENDING_MAX ? -EBUSY : fs_start(m, w->uid, w, job, fn, &pid, &sock);
        if (r < 0) {
                out = (FsOut){ .r = r };
                return fs_done(m, r, &out);
        }
        m->pending[m->n_pending++] = (FsPending){ .pid = pid, .sock = sock, .deadline = now_ms() + FS_CHILD_MS,
                                                  .type = m->to.type, .id = m->to.id, .owner = w->uid, .dev = w->dev,
                                                  .ino = w->ino };
        return 0;
}

/* placeholder: each item's rel made below the workspace as its flags
 * say (host-make.h), from the descriptor the monitor opened, one
 * component at a time on the workspace's own mount, never through a
 * symlink or "..", each new entry made as its parent's owner, a file
 * holding one of the table's texts; all in one child (fs_child). */
static int placeholder(Monitor *m) {
        for (int i = monitor_next(&m->msg, MONITOR_F_ITEM, -1); i >= 0; i = monitor_next(&m->msg, MONITOR_F_ITEM, i))
                if ((monitor_field(&m->msg, MONITOR_F_FLAGS, i)->u64 & VS_HOST_MAKE_DIR) &&
                    monitor_field(&m->msg, MONITOR_F_TEXT, i))
                        return reply(m, EINVAL, "a directory holds no text", 0);
        FsJob job;
        int refused;
        MonWorkspace *w = ws_job(m, &job, &refused);
        if (!w)
                return refused;
        job.msg = &m->msg;
        return fs_request(m, w, &job, place_in_child);
}

static int aside_in_child(FsJob *j, FsOut *out) {
        char *parent;
        char *name = fs_split(j, &parent);
        int pfd = place_parent(j, parent, false);
        if (pfd == -ENOENT || pfd == -ENOTDIR || pfd == -ELOOP)
                return -ESTALE;
        if (pfd < 0)
                return pfd;
        /* A HEAD's identity is its repository directory's; any other
         * entry's its own: a .git, a masked link the start refused, what
         * a jail put in a protected symlink's place (git-scan.h
         * git_links_put_aside), a file or a directory of any name. The
         * server may ask for no more than a jail of the workspace could
         * do there: rename an entry beside itself. */
        bool head = streq(name, "HEAD");
        struct statx sx;
        int r = -ESTALE;
        if (statx(pfd, head ? "" : name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | (head ? AT_EMPTY_PATH : 0),
                  STATX_INO | STATX_TYPE, &sx) == 0 &&
            makedev(sx.stx_dev_major, sx.stx_dev_minor) == j->dev && sx.stx_ino == j->ino) {
                /* A link whose put-aside names are all taken (the jail
                 * made them first, to keep its link in place): removed. */
                unsigned n = 0;
                if ((r = host_aside_at(pfd, name, !head && !streq(name, ".git") && S_ISLNK(sx.stx_mode), &n)) == 0)
                        out->count = n;
        }
        close(pfd);
        return r;
}

/* quarantine: a repository a jail made put aside (git-scan.h
 * git_quarantine): rel's last component, .git (a file, a symlink or a
 * directory) or HEAD (a repository directory's), a symlink of any name
 * (a masked link a jail made that the start refused: jail-facts.c), or
 * any entry a jail put in a protected symlink's place
 * (git_links_put_aside), renamed to
 * NAME.vectora-quarantine[-N] beside it, never replacing anything, and
 * only while it is still the entry the server noted (device and inode,
 * read from the kernel's cache: a .git's own, a HEAD's directory's, as
 * the scan notes a repository). Reached as placeholder reaches a name, in
 * a child, as the owner. Nothing is deleted (the owner can take it back)
 * but a symlink whose VS_ASIDE_TRIES names are all taken: removed, the
 * count VS_ASIDE_TRIES saying so (anything else then takes a random N
 * above it). */
static int quarantine(Monitor *m) {
        const char *rel = monitor_field_str(monitor_field(&m->msg, MONITOR_F_REL, -1));
        struct stat st;
        int refused;
        MonWorkspace *w = ws_writable(m, &st, &refused);
        if (!w)
                return refused;
        FsJob job;
        int r = fs_job(w, &st, rel, &job);
        if (r < 0)
                return reply(m, -r, NULL, 0);
        job.dev = monitor_field(&m->msg, MONITOR_F_DEV, -1)->u64;
        job.ino = monitor_field(&m->msg, MONITOR_F_INO, -1)->u64;
        return fs_request(m, w, &job, aside_in_child);
}

#define IDENT_PARSE_MS 1000

/* The owner's git identity: its two files read with the owner's file
 * rights (the child's file-system ids are the owner's, fs_child_run, as a
 * placeholder's walk), so a config the owner cannot read, or a link to a
 * file of root's, is not read, and a FUSE home holds this child only;
 * no_new_privs. Its real and effective ids stay root's: one that became
 * the owner whole could be stopped by the owner's processes, and held the
 * owner's starts, and with them another owner's first start, past 11 s
 * (t_stopped_start_holds_nothing). What the files hold is parsed apart
 * (parse-apart.h: a grandchild of no account's uid under a seccomp filter
 * of read, write, exit and memory calls, which the owner can neither stop
 * nor read from). */
static int identity_in_child(FsJob *j, FsOut *out) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        VsJailIdentTexts t;
        int r = jail_git_identity_read(j->uid, &t);
        if (r < 0)
                return r;
        VsJailIdent id;
        /* Well within the child's own deadline, so that a parse that
         * takes too long is told as such (a 1 MiB config is parsed in
         * milliseconds: git-config.h bounds its work). */
        r = parse_apart(jail_git_identity_parse, &t, &id, sizeof id, IDENT_PARSE_MS);
        free(t.text[0]);
        free(t.text[1]);
        if (r < 0)
                return r == -ETIMEDOUT ? -ETIME : r;
        _Static_assert(sizeof id.name == sizeof out->ident[0] && sizeof id.email == sizeof out->ident[1],
                      "the identity's sizes");
        memcpy(out->ident[0], id.name, sizeof id.name);
        memcpy(out->ident[1], id.email, sizeof id.email);
        return 0;
}

/* git_identity: workspace ws's owner's git identity (jail-home.h
 * jail_git_identity), read in a child with the owner's file rights (the monitor's, not
 * the server's word: the owner it opened the workspace for), the
 * server's to write into the jail's identity file. A root-owned
 * workspace's: root's, read as root. */
static int root_toml_in_child(Monitor *m, const MonWorkspace *w, const char **why);

static int git_identity(Monitor *m) {
        FsJob job;
        int refused;
        MonWorkspace *w = ws_job(m, &job, &refused);
        if (!w)
                return refused;
        /* Root's identity only for a workspace root opted in (as
         * ws_view): an /var/tmp opened as root's gave it (review F2). */
        const char *why = NULL;
        int r = w->uid == 0 ? root_toml_in_child(m, w, &why) : 0;
        if (r < 0)
                return reply(m, r == -EPERM || r == -EXDEV ? EPERM : -r, why, 0);
        /* Nothing of the workspace's: its descriptor stays out of the child. */
        job.dirfd = -EBADF;
        job.root_toml = false;
        return fs_request(m, w, &job, identity_in_child);
}

static int nothing_in_child(FsJob *j, FsOut *out) {
        (void)j;
        (void)out;
        return 0;
}

/* Whether root-owned workspace w holds root's vectora.toml, asked in a
 * child (fs_child): 0, or a negative errno with *why. */
static int root_toml_in_child(Monitor *m, const MonWorkspace *w, const char **why) {
        FsJob job = { .dirfd = w->dirfd, .root_toml = true };
        FsOut out;
        int r = fs_child(m, 0, w, &job, nothing_in_child, &out);
        if (r < 0)
                *why = fs_why(r, &out);
        return r;
}

/* The user namespace showing uid/gid as the server's ids: made once. */
static int userns_for(Monitor *m, uid_t uid, gid_t gid, VsError **err) {
        for (size_t i = 0; i < m->n_userns; i++)
                if (m->userns[i].uid == uid && m->userns[i].gid == gid)
                        return m->userns[i].fd;
        MonUserns *n = reallocarray(m->userns, m->n_userns + 1, sizeof *n);
        if (!n)
                return vs_error_set(err, -ENOMEM, "out of memory");
        m->userns = n;
        int fd = idmap_userns(uid, gid, m->server_uid, m->server_gid, err);
        if (fd < 0)
                return fd;
        m->userns[m->n_userns++] = (MonUserns){ .uid = uid, .gid = gid, .fd = fd };
        return fd;
}

/* A read-only view of workspace w for the server (idmap_view): what
 * its owner owns shows as the server's, so that an unprivileged server
 * reads a workspace behind a 0700 home; never one the jail's own rules
 * would refuse (a system account's, a root-owned one without root's
 * opt-in), nor one whose owner changed since ws_open. */
static int ws_view(Monitor *m) {
        MonWorkspace *w = find_ws(m, monitor_field(&m->msg, MONITOR_F_WS, -1)->u64);
        if (!w)
                return reply(m, ENOENT, "no workspace has that handle", 0);
        if (m->server_uid == 0)
                return reply(m, EOPNOTSUPP, "the monitor knows no unprivileged identity to show a workspace to", 0);
        struct stat st;
        const char *why = ws_served(w, &st);
        if (why)
                return reply(m, EPERM, why, 0);
        int r = w->uid == 0 ? root_toml_in_child(m, w, &why) : 0;
        if (r < 0)
                return reply(m, r == -EPERM || r == -EXDEV ? EPERM : -r, why, 0);
        /* One view a workspace, handed again on each request, and one
         * user namespace an owner's ids: what the server can make the
         * monitor hold is bounded by the workspaces it opened. */
        if (w->view < 0) {
                if (m->n_views >= m->views_max)
                        return reply(m, EMFILE, "too many workspaces shown at once: close some", 0);
                /* The group a jail of the owner gets (never one the server
                 * named at ws_open: the directory's whether the owner is
                 * a member or not, attack review 7); root's own for a
                 * root-owned workspace. */
                gid_t gid = w->uid == 0 ? 0 : user_jail_gid(w->uid, st.st_gid);
                /* Before any fork (userns_for's child, the view's): room
                 * for one more held child, nothing waiting for the closer
                 * (attack review 8d: userns_for forked first). */
                if ((r = fs_room(m, w->uid, w)) < 0)
                        return reply(m, -r, fs_why(r, &(FsOut){ 0 }), 0);
                _cleanup_(vs_error_freep) VsError *e = NULL;
                int ns = userns_for(m, w->uid, gid, &e);
                pid_t held = 0;
                r = ns < 0 ? ns : idmap_view(w->dirfd, w->path, ns, FS_CHILD_MS, &held, &w->view, &w->view_ns, &e);
                if (held > 0)
                        stuck_add(m, held, w->uid, w);
                if (r < 0) {
                        w->view = w->view_ns = -EBADF;
                        log_warning("monitor: %s", vs_error_message(e));
                        return reply(m, -r,
                                     r == -ETIMEDOUT ? "the view was not made in 3 s (/tmp held by another process?)"
                                                     : "the workspace could not be shown (its kernel or a file system in it cannot idmap)",
                                     0);
                }
                m->n_views++;
        }
        return reply_fds(m, 0, NULL, 0, &w->view, 1);
}

/* The groups the monitor made for w, always (the server does not choose
 * a jail outside its limits): their cgroup.procs into l, or a refusal
 * (*why says it; nothing left open). */
static int join_groups(Monitor *m, const MonWorkspace *w, VsLaunch *l, const char **why) {
        if (!m->cg_version || m->cg_fds[0] < 0)
                return 0;
        if (!w->grouped) {
                *why = "the workspace has no groups: cgroup_make first";
                return -ENOENT;
        }
        int r = group_procs(m, w, 0);
        if (r < 0) {
                *why = "the workspace's group could not be opened";
                return r;
        }
        l->cgroup_fds[l->n_cgroup_fds++] = r;
        /* v1's memory group, unless cgroup_make could not make it. */
        if (m->cg_version == 1 && (r = group_procs(m, w, 1)) >= 0)
                l->cgroup_fds[l->n_cgroup_fds++] = r;
        else if (m->cg_version == 1 && r != -ENOENT) {
                l->cgroup_fds[0] = safe_close(l->cgroup_fds[0]);
                l->n_cgroup_fds = 0;
                *why = "the workspace's memory group could not be opened";
                return r;
        }
        return 0;
}

/* A root-owned workspace's writable trees (jail_spawn's mount groups):
 * each opened below the directory the monitor opened, without a symlink,
 * "..", or a user's file system on the way (chase_open_dir_local_at), in
 * a child (fs_child: a directory on the way that another process holds
 * stalls the walk), after root's vectora.toml is found there; at its own
 * path below it, root-owned, and idmapped (0 -> the idmap identity) here;
 * the child attaches them over their paths in a mount namespace of its
 * own. fds and paths (borrowed from the request) get *n of them, closed by
 * the caller, also on a refusal (*why says it). */
static int trees_in_child(FsJob *j, FsOut *out) {
        for (int i = monitor_next(j->msg, MONITOR_F_MOUNT, -1); i >= 0; i = monitor_next(j->msg, MONITOR_F_MOUNT, i)) {
                const char *rel = monitor_field_str(monitor_field(j->msg, MONITOR_F_REL, i));
                int fd = chase_open_dir_local_at(j->dirfd, rel ? rel : "");
                if (fd < 0)
                        return fd;
                out->fds[out->n_fds++] = fd;
        }
        return 0;
}

static int idmap_trees(Monitor *m, const MonWorkspace *w, int *fds, char **paths, size_t *n, const char **why) {
        const MonitorMsg *msg = &m->msg;
        size_t k = 0;
        for (int i = monitor_next(msg, MONITOR_F_MOUNT, -1); i >= 0; i = monitor_next(msg, MONITOR_F_MOUNT, i)) {
                if (k >= MONITOR_MOUNTS_MAX || monitor_field(msg, MONITOR_F_KIND, i)->u64 != MONITOR_MOUNT_RW) {
                        *why = "mounts are served for a root-owned workspace's writable trees only";
                        return -EOPNOTSUPP;
                }
                const char *rel = monitor_field_str(monitor_field(msg, MONITOR_F_REL, i));
                const char *dst = monitor_field_str(monitor_field(msg, MONITOR_F_DST, i));
                _cleanup_free_ char *at = rel ? path_join(w->path, rel) : strdup(w->path);
                if (!at)
                        return -ENOMEM;
                if (!streq(dst, at)) {
                        *why = "a tree is attached at its own path in the workspace";
                        return -EINVAL;
                }
                paths[k++] = (char *)dst;
        }
        FsJob job = { .dirfd = w->dirfd, .root_toml = true, .msg = msg };
        FsOut out;
        int r = fs_child(m, 0, w, &job, trees_in_child, &out);
        if (r < 0 || out.n_fds != k) {
                for (size_t i = 0; r >= 0 && i < out.n_fds; i++)
                        close(out.fds[i]);
                *why = r == -ETIMEDOUT || r == -EBUSY || out.no_toml
                               ? fs_why(r, &out)
                               : "a tree could not be opened below the workspace (a symlink, no directory, or a user's file system on the way)";
                return r < 0 ? r : -EIO;
        }
        int r2 = 0;
        for (size_t i = 0; i < k; i++) {
                struct stat st;
                _cleanup_close_ int fd = out.fds[i];
                if (r2 < 0)
                        continue;
                if (fstat(fd, &st) < 0) {
                        *why = "a tree could not be read";
                        r2 = -errno;
                } else if (st.st_uid != 0) {
                        *why = "only a root-owned tree is idmapped";
                        r2 = -EPERM;
                } else {
                        _cleanup_(vs_error_freep) VsError *e = NULL;
                        r2 = idmap_prepare_fd(fd, paths[i], VS_IDMAP_UID, VS_IDMAP_GID, &fds[*n], &e);
                        if (r2 < 0) {
                                log_warning("monitor: %s", vs_error_message(e));
                                *why = "a tree could not be idmapped (its kernel or file system cannot)";
                        } else
                                (*n)++;
                }
        }
        return r2;
}

/* A jail started for the server: as the workspace's owner (the uid of the
 * monitor's table, never 0; the group user_jail_gid picks), or for a
 * root-owned workspace as the idmap identity with its writable trees
 * idmapped here (idmap_trees), started in
 * /, no supplementary groups, no_new_privs, in the workspace's groups
 * the monitor made, with the worker's socket end (fds[0]) and stderr
 * (fds[1]). It is the server's child (CLONE_PARENT): reaped there and
 * ended with it, as a jail the server started itself. The argv (fds[2])
 * is the server's rendering of the plan, checked for its shape
 * (jail-argv.h): bwrap, the jail's namespaces and settings, nothing
 * writable in a system or daemon directory, the daemon's worker; which of
 * the owner's own paths it binds is the server's reading of the policy.
 * The answer comes at once, the exec not awaited: its exec-error pipe
 * goes to the server, which watches it (a child the owner stopped before
 * its exec holds neither the monitor nor the server's loop). */
static int jail_spawn(Monitor *m, int *fds) {
        MonWorkspace *w = find_ws(m, monitor_field(&m->msg, MONITOR_F_WS, -1)->u64);
        if (!w)
                return reply_spawn(m, ENOENT, "no such workspace", 0, 0);
        if (!closer_idle())
                return reply_spawn(m, EAGAIN, CLOSER_BUSY_WHY, 0, 0);
        if (monitor_field(&m->msg, MONITOR_F_ENV, -1))
                return reply_spawn(m, EOPNOTSUPP, "environment fields are not served: the argv sets the jail's", 0, 0);
        uid_t uid = (uid_t)monitor_field(&m->msg, MONITOR_F_UID, -1)->u64;
        gid_t gid = (gid_t)monitor_field(&m->msg, MONITOR_F_GID, -1)->u64;
        uint64_t flags = monitor_field(&m->msg, MONITOR_F_FLAGS, -1)->u64;
        uint64_t gen = monitor_field(&m->msg, MONITOR_F_GEN, -1)->u64;
        bool idmapped = uid == VS_IDMAP_UID && gid == VS_IDMAP_GID;
        struct stat st;
        if (fstat(w->dirfd, &st) < 0)
                return reply_spawn(m, errno, "the workspace could not be read", 0, 0);
        if (idmapped) {
                /* A root-owned workspace's jail runs as the idmap identity
                 * (no account's, never root), then and now; and only where
                 * root made the directory a workspace (its trees are
                 * written as root on disk: /etc or a crontab directory is
                 * root-owned too). */
                if (w->uid != 0 || st.st_uid != 0)
                        return reply_spawn(m, EPERM, "the idmap identity runs a root-owned workspace's jail only", 0, 0);
                const char *why_root = root_path_refused(w);
                if (why_root)
                        return reply_spawn(m, EPERM, why_root, 0, 0);
                /* What it makes is root's on disk: never without the
                 * guard against a setuid-root file left on the host. */
                if (!m->guard)
                        return reply_spawn(m, EPERM, "no seccomp guard (libseccomp could not be loaded): a root-owned workspace's jail would write setuid files as root", 0, 0);
        } else {
                /* The owner now (a chown since it was opened counts), an
                 * ordinary account's: a service's would lend the jail what
                 * the service can. */
                if (uid != w->uid || uid != st.st_uid)
                        return reply_spawn(m, EPERM, "a jail runs as its workspace's owner", 0, 0);
                if (!uid_is_ordinary(uid))
                        return reply_spawn(m, EPERM, "a system account's workspace gets no jail from the monitor", 0, 0);
                if (!gid_allowed(uid, gid, &st))
                        return reply_spawn(m, EPERM, "that group is not the one a jail of the owner gets (the workspace's where the owner is a member, else the owner's primary group)", 0, 0);
                if (monitor_next(&m->msg, MONITOR_F_MOUNT, -1) >= 0)
                        return reply_spawn(m, EOPNOTSUPP, "mounts are served for a root-owned workspace's idmapped trees only", 0, 0);
        }
        /* Its stdin and stdout a stream socket of its own, its stderr a
         * pipe's write end: nothing else of the server's (a file it
         * opened, an O_PATH handle) reaches the owner's process. */
        int type = 0, domain = 0;
        socklen_t tl = sizeof type, dl = sizeof domain;
        int fl0 = fcntl(fds[0], F_GETFL), fl1 = fcntl(fds[1], F_GETFL);
        /* Asked of the descriptors, never of a file system (an fstat of a
         * FUSE file waits for its server): F_GETPIPE_SZ answers for a
         * pipe or a FIFO's open end only. */
        if (fl0 < 0 || (fl0 & O_PATH) || getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
            getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0 || type != SOCK_STREAM || domain != AF_UNIX ||
            fl1 < 0 || (fl1 & O_PATH) || (fl1 & O_ACCMODE) != O_WRONLY || fcntl(fds[1], F_GETPIPE_SZ) < 0)
                return reply_spawn(m, EINVAL, "the worker's channel must be a unix stream socket and its stderr a pipe's write end", 0, 0);
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char **argv = NULL;
        int r = spawn_argv(fds[2], &buf, &argv);
        if (r < 0)
                return reply_spawn(m, -r, "the argv must be a sealed memfd of NUL-terminated strings, an absolute path first", 0, 0);
        /* The plan's shape: a jail of the daemon's worker, never a program
         * of the server's choosing as the owner. */
        if (!m->bwrap)
                m->bwrap = bwrap_in_path();
        char why[640];
        JailArgvRules rules = { .bwrap = m->bwrap, .worker = m->worker, .homes = m->homes, .uid = uid, .gid = gid };
        if (jail_argv_check(argv, &rules, why, sizeof why) < 0) {
                log_warning("monitor: a jail's argv refused: %s", why);
                return reply_spawn(m, EPERM, why, 0, 0);
        }
        VsLaunch l = { .argv = argv, .uid = uid, .gid = gid, .switch_user = true, .sandboxed = true,
                       .own_pid_ns = flags & MONITOR_SPAWN_OWN_PID_NS,
                       .cgroup_fds = { -EBADF, -EBADF },
                       .guard_bpf = m->guard, .guard_len = m->guard_len };
        const char *why_not = NULL;
        if ((r = join_groups(m, w, &l, &why_not)) < 0)
                return reply_spawn(m, -r, why_not, 0, 0);
        /* A root-owned workspace's writable trees, idmapped here. */
        int idmap_fds[MONITOR_MOUNTS_MAX];
        char *idmap_paths[MONITOR_MOUNTS_MAX];
        size_t n_idmap = 0;
        /* And root's vectora.toml there (idmap_trees asks in a child). */
        if (idmapped)
                r = idmap_trees(m, w, idmap_fds, idmap_paths, &n_idmap, &why_not);
        l.idmap_fds = idmap_fds;
        l.idmap_paths = idmap_paths;
        l.n_idmap = n_idmap;
        pid_t pid = 0;
        int step = 0;
        _cleanup_close_ int exec_fd = -EBADF;
        jails_prune(m);
        if (r >= 0 && jail_find(m, w->handle, gen)) {
                r = -EEXIST;
                why_not = "a jail of that generation runs already";
        }
        if (r >= 0)
                r = worker_spawn_start(&l, fds[0], fds[1], CLONE_PARENT, true, m->server_pid ? m->server_pid : getppid(),
                                       &pid, &step, &exec_fd);
        for (size_t i = 0; i < l.n_cgroup_fds; i++)
                safe_close(l.cgroup_fds[i]);
        for (size_t i = 0; i < n_idmap; i++)
                safe_close(idmap_fds[i]);
        if (r < 0 && why_not)
                return reply_spawn(m, -r, why_not, 0, 0);
        /* The server gone by now: the child may be init's (in its own pid
         * namespace it cannot tell), with nobody to end it. */
        struct pollfd gone = { .fd = m->server_pidfd, .events = POLLIN };
        if (r >= 0 && m->server_pidfd >= 0 && poll(&gone, 1, 0) != 0) {
                (void)kill(pid, SIGKILL);
                return reply_spawn(m, ESRCH, "the server ended meanwhile", 0, 0);
        }
        /* Tracked by a pidfd opened now: the child is the server's, which
         * reaps by the pid the reply gives, so the pid names it until then.
         * One the monitor could not end later is not left running. */
        if (r >= 0) {
                int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (pidfd < 0 || jail_track(m, w->handle, gen, pidfd) < 0) {
                        int e = pidfd < 0 ? errno : ENOMEM;
                        (void)kill(pid, SIGKILL);
                        return reply_spawn(m, e, "the monitor could not keep a handle on the jail it started", 0, 0);
                }
        }
        m->jails_started += r >= 0;
        return reply_started(m, r < 0 ? -r : 0, NULL, pid, r < 0 ? step : 0, exec_fd);
}

/* Why a datagram ends the monitor, logged once. */
static int broken(const char *why, const char *detail) {
        log_error("monitor: the server broke the protocol: %s%s%s; stopping", why, detail ? ": " : "",
                  detail ? detail : "");
        return -EPROTO;
}


/* The log_reopen request's descriptor (fds[0], taken): the monitor's
 * lines go there from now on. A regular file only (what a log is; a pipe
 * the server never read would stall the monitor's cleanup on a full
 * buffer); anything else is refused, the old log kept. */
/* fd's kind and identity as the kernel has them cached: a FUSE file's
 * server is not asked (AT_STATX_DONT_SYNC), where fstat waits for it. */
static bool cached_stat(int fd, struct statx *sx) {
        unsigned want = STATX_TYPE | STATX_INO;
        return statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, want, sx) == 0 && (sx->stx_mask & want) == want;
}

static int log_reopen(Monitor *m, int *fds) {
        struct statx sx, a, b;
        if (!cached_stat(fds[0], &sx) || !S_ISREG(sx.stx_mode))
                return reply(m, EINVAL, "the log must be a regular file", 0);
        /* Never a file a process serves (FUSE, any user's own mount
         * namespace's included: not in the monitor's table): its close,
         * here at the next log_reopen's dup2 or in every fs_child that
         * inherits it, waits for its server's FLUSH answer, uninterruptibly
         * (attack review 8b). */
        int mnt;
        char type[64];
        if (fd_mount_id(fds[0], &mnt) < 0 || mount_fstype(mnt, type, sizeof type) < 0 || fstype_is_user_served(type))
                return reply(m, EPERM, "the log must be on a file system of the monitor's mount table that no process serves (not FUSE)", 0);
        int old = log_get_fd();
        /* A detached daemon's stderr is its log: the monitor's (taken at
         * its fork) follows too, else it keeps the rotated file open. */
        if (old > STDERR_FILENO && cached_stat(old, &a) && cached_stat(STDERR_FILENO, &b) &&
            a.stx_dev_major == b.stx_dev_major && a.stx_dev_minor == b.stx_dev_minor && a.stx_ino == b.stx_ino)
                (void)dup2(fds[0], STDERR_FILENO);
        log_setup("vectora-sandboxd", TAKE_FD(fds[0]));
        if (old > STDERR_FILENO)
                (void)close_received(old); /* an earlier log_reopen's (kept open if the closer is stuck) */
        return reply(m, 0, NULL, 0);
}

static int step_msg(Monitor *m, int fd, const uint8_t *buf, ssize_t n, int *fds, size_t n_fds, bool too_many) {
        VsError *err = NULL;
        if (monitor_decode(buf, (size_t)n, false, &m->msg, &err) < 0) {
                int r = broken("a request the decoder refused", err ? err->message : NULL);
                vs_error_free(err);
                return r;
        }
        MonitorReq t = (MonitorReq)m->msg.type;
        m->to.fd = fd;
        m->to.type = m->msg.type;
        m->to.id = m->msg.id;
        if (!monitor_req_allowed(m->state, t))
                return broken("a request its state does not allow", monitor_req_to_string(t));
        if (fd == m->pool_fd && t != MONITOR_REQ_PLACEHOLDER && t != MONITOR_REQ_QUARANTINE &&
            t != MONITOR_REQ_GIT_IDENTITY)
                return broken("a request the pool's channel does not take", monitor_req_to_string(t));
        if (too_many || n_fds != (t == MONITOR_REQ_LOG_REOPEN ? 1u : t == MONITOR_REQ_JAIL_SPAWN ? 3u : 0u))
                return broken(n_fds ? "descriptors its request does not take, or too many"
                                    : "a request without its descriptors",
                              monitor_req_to_string(t));
        switch (t) {
        case MONITOR_REQ_HELLO:
                m->state = MONITOR_STATE_READY;
                return reply(m, 0, NULL, 0);
        case MONITOR_REQ_WS_OPEN:
                return ws_open(m);
        case MONITOR_REQ_WS_CLOSE:
                return ws_close(m);
        case MONITOR_REQ_CGROUP_MAKE:
                return cgroup_make(m);
        case MONITOR_REQ_JAIL_SPAWN:
                return jail_spawn(m, fds);
        case MONITOR_REQ_STATUS:
                return reply(m, 0, NULL, 0);
        case MONITOR_REQ_LOG_REOPEN:
                return log_reopen(m, fds);
        case MONITOR_REQ_PLACEHOLDER:
                return placeholder(m);
        case MONITOR_REQ_QUARANTINE:
                return quarantine(m);
        case MONITOR_REQ_GIT_IDENTITY:
                return git_identity(m);
        case MONITOR_REQ_WS_VIEW:
                return ws_view(m);
        case MONITOR_REQ_JAIL_KILL:
                return jail_kill(m);
        case MONITOR_REQ_SHUTDOWN: {
                m->state = MONITOR_STATE_STOPPING;
                int r = reply(m, 0, NULL, 0);
                return r < 0 ? r : 1;
        }
        default:
                return reply(m, EOPNOTSUPP, "not served by this monitor yet", 0);
        }
}

/* One datagram of channel fd read into buf and answered (a pool channel's
 * request perhaps later): monitor_step's result; *ret_read whether one
 * came. */
static int step_channel(Monitor *m, int fd, uint8_t *buf, bool *ret_read) {
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int) * FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = MONITOR_MSG_MAX };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
        *ret_read = false;
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_TRUNC | MSG_DONTWAIT);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        *ret_read = true;
        if (n == 0)
                return 1; /* the server's end closed */
        /* Only log_reopen takes a descriptor, exactly one; any other that
         * came is closed and ends the monitor. */
        int fds[FDS_MAX];
        bool too_many;
        size_t n_fds = recv_take_fds(&mh, fds, FDS_MAX, &too_many);
        int r = step_msg(m, fd, buf, n, fds, n_fds, too_many);
        bool stuck = false;
        for (size_t i = 0; i < n_fds; i++)
                stuck |= close_received(fds[i]) < 0;
        if (stuck && r >= 0)
                r = broken("its descriptors could not go to the closer thread (a close stuck there, or no thread)",
                           NULL);
        return r;
}

/* Every request queued on the pool's channel read and started (each is
 * answered when its child is done), at most FS_PENDING_MAX + 1 at once,
 * into the pool's own buffer: a loop channel's request the monitor is in
 * the middle of (waiting for its child in fs_wait) keeps its message and
 * its reply's address. Before, one was read a step and none during such
 * a wait, so a few held ws_opens in a row left pool requests unread past
 * the server's 8 s, and the daemon stopped (attack review 8g). */
static int step_pool(Monitor *m) {
        typeof(m->to) to = m->to;
        memcpy(&m->saved_msg, &m->msg, sizeof m->msg);
        int r = 0;
        bool read_one = true;
        for (int i = 0; r == 0 && read_one && i <= FS_PENDING_MAX; i++)
                r = step_channel(m, m->pool_fd, m->pool_buf, &read_one);
        memcpy(&m->msg, &m->saved_msg, sizeof m->msg);
        m->to = to;
        return r;
}

/* Pending child i answered (ready) or past its deadline: its request
 * answered on the pool's channel, i taken from the table. */
static int pending_done(Monitor *m, size_t i) {
        FsPending p = m->pending[i];
        m->pending[i] = m->pending[--m->n_pending];
        FsOut out;
        MonWorkspace dir = { .dev = p.dev, .ino = p.ino };
        int r = fs_finish(m, p.pid, p.sock, p.deadline, p.owner, p.dev || p.ino ? &dir : NULL, false, &out);
        m->to.fd = m->pool_fd;
        m->to.type = p.type;
        m->to.id = p.id;
        return fs_done(m, r, &out);
}

int monitor_step(Monitor *m) {
        /* The server's process ending ends the monitor, whoever else
         * still holds its end (a child between fork and exec). */
        struct pollfd p[3 + FS_PENDING_MAX];
        p[0] = (struct pollfd){ .fd = m->fd, .events = POLLIN };
        p[1] = (struct pollfd){ .fd = m->server_pidfd, .events = POLLIN };
        p[2] = (struct pollfd){ .fd = m->pool_fd, .events = POLLIN };
        uint64_t now = now_ms(), next = UINT64_MAX;
        for (size_t i = 0; i < m->n_pending; i++) {
                p[3 + i] = (struct pollfd){ .fd = m->pending[i].sock, .events = POLLIN };
                next = m->pending[i].deadline < next ? m->pending[i].deadline : next;
        }
        uint64_t look = unstick_next(&m->unstick);
        next = look < next ? look : next;
        int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)(next - now);
        if (poll(p, 3 + m->n_pending, timeout) < 0)
                return errno == EINTR ? 0 : -errno;
        if (p[1].revents)
                return 1;
        now = now_ms();
        /* The children held past their deadline are watched too: ended
         * there, they end, and their slots come back. */
        pid_t held[FS_STUCK_MAX];
        for (size_t i = 0; i < m->n_stuck; i++)
                held[i] = m->stuck[i].pid;
        unstick_step(&m->unstick, now, held, m->n_stuck, closer_idle);
        int r = 0;
        /* From the end: a finished one's place takes the last, seen already. */
        for (size_t i = m->n_pending; r >= 0 && i-- > 0;)
                if (p[3 + i].revents || now >= m->pending[i].deadline)
                        r = pending_done(m, i);
        bool read_one;
        if (r >= 0 && p[2].revents)
                r = step_pool(m);
        if (r == 0 && p[0].revents)
                r = step_channel(m, m->fd, m->buf, &read_one);
        return m->reply_failed < 0 ? m->reply_failed : r < 0 || !m->pool_end ? r : m->pool_end;
}

int monitor_serve(Monitor *m) {
        int r;
        while ((r = monitor_step(m)) == 0)
                ;
        return r < 0 ? r : m->state == MONITOR_STATE_STOPPING ? 1 : 0;
}

int monitor_run(Monitor *m) {
        int r = monitor_serve(m);
        monitor_free(m);
        return r < 0 ? r : 0;
}
