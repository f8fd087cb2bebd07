/* SPDX-License-Identifier: MIT */
#include "monitor-link.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "cgroup-kill.h"
#include "fd-util.h"
#include "host-make.h"
#include "jail-home.h"
#include "log.h"
#include "monitor-proto.h"
#include "monitor.h"
#include "user-util.h"
#include "path-util.h"
#include "server.h"
#include "spawn-util.h"
#include "strbuf.h"
#include "time-util.h"
#include "worker-spawn.h"

#define MONITOR_VERSION 1
/* The monitor answers from memory or one system call: a reply later than
 * this means it is stuck, and the server stops. */
#define MONITOR_CALL_MS 5000
/* A pool channel's call: the monitor answers it when its child does, at
 * most 3 s after its start (monitor.c FS_CHILD_MS), which a wait of its
 * own for a loop channel's request (a view's, 3 s at most) may delay. */
#define MONITOR_POOL_CALL_MS 8000
#define MONITOR_STOP_MS 2000
#define MONITOR_GRACE_MS 200

struct MonitorLink {
        int fd;    /* the server's end; -1 once the monitor is gone */
        pid_t pid; /* 0 once reaped */
        int exit_status;
        uint64_t next_id;
        uv_poll_t poll;
        bool poll_on;
        uv_timer_t gone_timer; /* tells gone() from the loop, not from inside a call */
        bool gone_told;
        void (*gone)(Server *srv);
        /* One call at a time on the socket: the loop's, or a start's
         * placeholders on the thread pool (monitor_link_placeholder),
         * each reply read into the caller's buffers; on_monitor's look
         * between calls holds it too. */
        pthread_mutex_t lock;
        pthread_t loop_thread;
        uint8_t buf[MONITOR_MSG_MAX]; /* the loop's calls' */
        MonitorMsg reply;
        /* The pool's channel (monitor.h monitor_set_pool): placeholder
         * and quarantine from any thread, several at once, each reply
         * matched to its call by id, the monitor answering each when its
         * child does; the loop's calls never wait behind them (attack
         * review 8b). One caller at a time reads (pool_reading), handing
         * each reply to its call. Shut down, never closed, while the link
         * lives: a reader may be in a poll of it. */
        int pool_fd;
        pthread_mutex_t pool_lock;
        pthread_cond_t pool_cond;
        bool pool_reading;
        struct PoolCall *pool_calls;
};

/* A pool channel's call awaiting its reply. */
typedef struct PoolCall {
        uint64_t id;
        uint8_t *buf;      /* its reply's bytes, once read */
        ssize_t n;         /* their length; -1: not yet */
        struct PoolCall *next;
} PoolCall;

/* The monitor process: none of the server's descriptors but its end of the
 * pair and the log, no handler of the server's. It follows the server out:
 * a unit's stop signals the whole group, and the monitor ends when the
 * server's process does, not before. */
static _Noreturn void monitor_child(int fd, int pool_fd, pid_t server, int lock, int cg_version, char *const groups[2],
                                    const char *worker, const char *state_dir) {
        int pidfd = (int)syscall(SYS_pidfd_open, server, 0);
        if (pidfd < 0 || getppid() != server)
                _exit(1);
        /* Nothing to read and nothing for stdout: /dev/null over both, so
         * whatever the daemon had there (a terminal) is not kept. Its
         * stderr stays, the log's destination without --log-file. */
        int null = open("/dev/null", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
                _exit(1);
        /* The instance lock stays held until the cleanup below is done, so
         * a daemon started again on the same socket (a unit's restart)
         * waits for it (instance.c retries for a second) instead of
         * making groups this cleanup would then remove. */
        int keep[] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, fd, pool_fd, log_get_fd(), pidfd, lock };
        if (close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                _exit(1);
        (void)prctl(PR_SET_NAME, "vsd-monitor");
        (void)prctl(PR_SET_DUMPABLE, 0);
        int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE };
        for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
                (void)signal(ignored[i], SIG_IGN);
        Monitor *m;
        if (monitor_new(fd, &m) < 0)
                _exit(1);
        monitor_set_server(m, pidfd);
        monitor_set_pool(m, pool_fd);
        uid_t su;
        gid_t sg;
        service_ids(&su, &sg, NULL);
        monitor_set_server_ids(m, su, sg);
        if (monitor_set_jail(m, NULL, worker, state_dir) < 0)
                _exit(1);
        int g = monitor_set_groups(m, cg_version, groups);
        if (g < 0)
                log_error("monitor: the instance's cgroups: %s; workspaces get none", strerror(-g));
        int r = monitor_serve(m);
        /* Its table first: a server that had it hold a descriptor for
         * every workspace it could (one each) left none for the cleanup. */
        monitor_free(m);
        /* The daemon is gone or going: nothing of its instance outlives it
         * (an unsandboxed worker's command that left its session, a jail's
         * process still dying). A clean stop (shutdown asked) ended and
         * removed them in the daemon already. */
        if (r != 1)
                cgroup_instance_end(groups);
        /* The lock let go here, not by the process's end: a thread of the
         * monitor's still in a close the server's descriptor started (a
         * FUSE file's flush, which its server never answers) keeps the
         * descriptor table, and with it the lock, past _exit (attack
         * review 8e: a daemon could then never start again). */
        close(lock);
        _exit(r < 0 ? 1 : 0);
}

static void on_gone_timer(uv_timer_t *t) {
        Server *srv = t->data;
        uv_close((uv_handle_t *)t, NULL);
        if (srv->monitor->gone)
                srv->monitor->gone(srv);
}

/* The server is told on its loop's next turn: a call may have failed in
 * the middle of a request, which must be done before the server stops. */
static void tell_gone(Server *srv) {
        MonitorLink *ml = srv->monitor;
        if (!ml->gone || !srv->loop || ml->gone_told)
                return;
        ml->gone_told = true;
        uv_timer_init(srv->loop, &ml->gone_timer);
        ml->gone_timer.data = srv;
        uv_timer_start(&ml->gone_timer, on_gone_timer, 0, 0);
}

static void link_broken(MonitorLink *ml) {
        if (ml->pool_fd >= 0)
                (void)shutdown(ml->pool_fd, SHUT_RDWR); /* its waiting calls end */
        if (ml->fd >= 0) {
                if (ml->poll_on) {
                        uv_poll_stop(&ml->poll);
                        uv_close((uv_handle_t *)&ml->poll, NULL);
                        ml->poll_on = false;
                }
                close(ml->fd);
                ml->fd = -EBADF;
        }
}

/* Whether fd became ready for events before deadline (now_ms()'s clock),
 * a signal (the monitor's own SIGCHLD as it is resumed) not cutting the
 * wait short. */
static bool wait_fd(int fd, short events, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                uint64_t now = now_ms();
                int r = poll(&p, 1, now >= deadline ? 0 : (int)(deadline - now));
                if (r > 0)
                        return true;
                if (r == 0 || errno != EINTR)
                        return false;
        }
}

/* The monitor failed a call: the link is closed and the server told. Off
 * the loop (a pool thread's call), the socket is only shut down: the
 * loop's watch (on_monitor) then sees its end closed and does the rest.
 * Under the link's lock (recursive: a call holds it already), so no
 * thread's call is in the middle of the descriptor closed (attack review
 * 8). */
static int lost(Server *srv, uint16_t type, const char *why, VsError **err) {
        MonitorLink *ml = srv->monitor;
        log_error("the root monitor (pid %d) is gone: %s (%s)", (int)ml->pid, why,
                  monitor_req_to_string((MonitorReq)type));
        pthread_mutex_lock(&ml->lock);
        if (pthread_equal(pthread_self(), ml->loop_thread)) {
                link_broken(ml);
                tell_gone(srv);
        } else {
                if (ml->fd >= 0)
                        (void)shutdown(ml->fd, SHUT_RDWR);
                if (ml->pool_fd >= 0)
                        (void)shutdown(ml->pool_fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&ml->lock);
        return vs_error_set(err, -EPIPE, "the root monitor is gone: %s", why);
}

/* The reply buf (n bytes, got descriptors beside it) to request type id,
 * decoded into reply: 0; its refusal as a negative errno with the
 * monitor's message in *err; or out of protocol (the link lost). */
static int reply_take(Server *srv, uint16_t type, uint64_t id, const uint8_t *buf, ssize_t n, size_t got,
                      MonitorMsg *reply, VsError **err) {
        _cleanup_(vs_error_freep) VsError *derr = NULL;
        if ((size_t)n > MONITOR_MSG_MAX)
                return lost(srv, type, "a reply longer than any", err);
        if (monitor_decode(buf, (size_t)n, true, reply, &derr) < 0)
                return lost(srv, type, derr ? derr->message : "a reply the decoder refused", err);
        if (reply->type != (MONITOR_REPLY | type) || reply->id != id)
                return lost(srv, type, "a reply to another request", err);
        uint64_t status = monitor_field(reply, MONITOR_F_STATUS, -1)->u64;
        if (status && got)
                return lost(srv, type, "descriptors with a refusal", err);
        if (status) {
                const char *msg = monitor_field_str(monitor_field(reply, MONITOR_F_MESSAGE, -1));
                int s = status < 4096 ? (int)status : EPROTO;
                return vs_error_set(err, -s, "monitor: %s: %s", monitor_req_to_string((MonitorReq)type),
                                    msg ? msg : strerror(s));
        }
        return 0;
}

/* One request and its reply, in order: the monitor serves one at a time.
 * send_fds (n_send of them, still the caller's) go beside the request.
 * A status other than 0 comes back as its negative errno with the
 * monitor's message in *err; a monitor that does not answer in time, or
 * answers out of protocol, is gone (-EPIPE). The reply's descriptors go
 * to fds (up to max_fds, *n_fds of them; caller's to close); more than
 * that, or any with a request that takes none, is out of protocol. */
static int call_locked(Server *srv, MonitorEnc *e, const int *send_fds, size_t n_send, int *fds, size_t max_fds,
                       size_t *n_fds, uint8_t *buf, MonitorMsg *reply, VsError **err) {
        MonitorLink *ml = srv->monitor;
        uint16_t type = 0;
        uint64_t id = 0;
        size_t got = 0;
        if (n_fds)
                *n_fds = 0;
        int r = monitor_enc_end(e);
        if (r >= 0) {
                memcpy(&type, e->buf.data + 4, sizeof type);
                memcpy(&id, e->buf.data + 8, sizeof id);
        }
        if (r < 0)
                return vs_error_set(err, r, "monitor: a request could not be encoded: %s", strerror(-r));
        if (!ml || ml->fd < 0)
                return vs_error_set(err, -EPIPE, "the root monitor is gone");
        uint64_t deadline = now_ms() + MONITOR_CALL_MS;
        for (;;) {
                ssize_t k = send_with_fds(ml->fd, e->buf.data, e->buf.len, send_fds, n_send, MSG_NOSIGNAL);
                if (k >= 0)
                        break;
                if (k != -EAGAIN && k != -EINTR)
                        return lost(srv, type, strerror((int)-k), err);
                if (!wait_fd(ml->fd, POLLOUT, deadline))
                        return lost(srv, type, "it took no request for 5 s", err);
        }
        ssize_t n;
        int tmp[2];
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int) * 2)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = MONITOR_MSG_MAX };
        struct msghdr mh;
        for (;;) {
                mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                      .msg_controllen = sizeof control };
                n = recvmsg(ml->fd, &mh, MSG_TRUNC | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n >= 0 || (errno != EAGAIN && errno != EINTR))
                        break;
                /* Then a last short wait: the time may have passed with
                 * the whole group stopped (a frozen unit, Ctrl-Z), both
                 * resumed at once, the monitor's answer a moment behind. */
                if (!wait_fd(ml->fd, POLLIN, deadline) && !wait_fd(ml->fd, POLLIN, now_ms() + MONITOR_GRACE_MS))
                        return lost(srv, type, "no answer within 5 s", err);
        }
        if (n <= 0)
                return lost(srv, type, n == 0 ? "its end closed" : strerror(errno), err);
        bool over;
        got = recv_take_fds(&mh, tmp, max_fds < 2 ? max_fds : 2, &over);
        r = over ? lost(srv, type, "descriptors with a reply that takes none, or too many", err)
                 : reply_take(srv, type, id, buf, n, got, reply, err);
        if (r < 0) {
                for (size_t i = 0; i < got; i++)
                        close(tmp[i]);
                return r;
        }
        for (size_t i = 0; i < got; i++)
                fds[i] = tmp[i];
        if (n_fds)
                *n_fds = got;
        return 0;
}

/* A placeholder's or a quarantine's call on the pool's channel, from any
 * thread: several at once, each waiting for its own reply (by id) until
 * MONITOR_POOL_CALL_MS, one of them reading at a time and handing each
 * reply to its call; the loop's channel meanwhile free. Its reply goes
 * to buf and reply; as call_locked otherwise (no descriptors). */
static int pool_call(Server *srv, MonitorEnc *e, uint8_t *buf, MonitorMsg *reply, VsError **err) {
        MonitorLink *ml = srv->monitor;
        int r = monitor_enc_end(e);
        if (r < 0)
                return vs_error_set(err, r, "monitor: a request could not be encoded: %s", strerror(-r));
        uint16_t type;
        uint64_t id;
        memcpy(&type, e->buf.data + 4, sizeof type);
        memcpy(&id, e->buf.data + 8, sizeof id);
        uint64_t deadline = now_ms() + MONITOR_POOL_CALL_MS;
        _cleanup_free_ uint8_t *in = malloc(MONITOR_MSG_MAX); /* what this caller reads, for any call */
        if (!in)
                return vs_error_set(err, -ENOMEM, "out of memory");
        PoolCall c = { .id = id, .buf = buf, .n = -1 };
        const char *why = NULL;
        pthread_mutex_lock(&ml->pool_lock);
        if (ml->pool_fd < 0) {
                pthread_mutex_unlock(&ml->pool_lock);
                return vs_error_set(err, -EPIPE, "the root monitor is gone");
        }
        for (;;) {
                if (send(ml->pool_fd, e->buf.data, e->buf.len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
                        break;
                if (errno != EAGAIN && errno != EINTR) {
                        why = strerror(errno);
                        break;
                }
                if (!wait_fd(ml->pool_fd, POLLOUT, deadline)) {
                        why = "it took no request for 8 s";
                        break;
                }
        }
        if (!why) {
                c.next = ml->pool_calls;
                ml->pool_calls = &c;
        }
        while (!why && c.n < 0) {
                if (ml->pool_fd < 0) {
                        why = "its channel was closed (the daemon stops)"; /* not a poll of -1 to the deadline */
                        break;
                }
                if (ml->pool_reading) {
                        /* Until the reader hands this call its reply or
                         * lets go (its own read ends at its deadline); a
                         * reader gone past this call's deadline leaves the
                         * next read, with no wait, to it. */
                        uint64_t until = deadline + MONITOR_GRACE_MS;
                        struct timespec ts = { .tv_sec = (time_t)(until / 1000), .tv_nsec = (long)(until % 1000) * 1000000 };
                        if (now_ms() >= until)
                                pthread_cond_wait(&ml->pool_cond, &ml->pool_lock);
                        else
                                (void)pthread_cond_timedwait(&ml->pool_cond, &ml->pool_lock, &ts);
                        continue;
                }
                ml->pool_reading = true;
                int fd = ml->pool_fd;
                pthread_mutex_unlock(&ml->pool_lock);
                bool ready = wait_fd(fd, POLLIN, deadline) || wait_fd(fd, POLLIN, now_ms() + MONITOR_GRACE_MS);
                ssize_t n = ready ? recv(fd, in, MONITOR_MSG_MAX, MSG_DONTWAIT | MSG_TRUNC) : -1;
                int e_recv = errno;
                pthread_mutex_lock(&ml->pool_lock);
                ml->pool_reading = false;
                pthread_cond_broadcast(&ml->pool_cond);
                if (!ready)
                        why = "no answer within 8 s";
                else if (n == 0)
                        why = "its end closed";
                else if (n < 0 && e_recv != EAGAIN && e_recv != EINTR)
                        why = strerror(e_recv);
                else if (n > 0 && (n < 16 || (size_t)n > MONITOR_MSG_MAX))
                        why = "a reply of a size no reply has";
                else if (n > 0) {
                        uint64_t rid;
                        memcpy(&rid, in + 8, sizeof rid);
                        PoolCall *o = ml->pool_calls;
                        while (o && o->id != rid)
                                o = o->next;
                        if (!o || o->n >= 0)
                                why = "a reply to no call waiting";
                        else {
                                memcpy(o->buf, in, (size_t)n);
                                o->n = n;
                        }
                }
        }
        for (PoolCall **pp = &ml->pool_calls; *pp; pp = &(*pp)->next)
                if (*pp == &c) {
                        *pp = c.next;
                        break;
                }
        pthread_mutex_unlock(&ml->pool_lock);
        if (c.n < 0)
                return lost(srv, type, why ? why : "no answer", err);
        return reply_take(srv, type, id, buf, c.n, 0, reply, err);
}

/* A call whose reply goes to buf and reply (the loop's: ml's own). */
static int call_into(Server *srv, MonitorEnc *e, const int *send_fds, size_t n_send, int *fds, size_t max_fds,
                     size_t *n_fds, uint8_t *buf, MonitorMsg *reply, VsError **err) {
        MonitorLink *ml = srv->monitor;
        if (!ml)
                return vs_error_set(err, -EPIPE, "the root monitor is gone");
        pthread_mutex_lock(&ml->lock);
        int r = call_locked(srv, e, send_fds, n_send, fds, max_fds, n_fds, buf, reply, err);
        pthread_mutex_unlock(&ml->lock);
        return r;
}

static int call_fds(Server *srv, MonitorEnc *e, const int *send_fds, size_t n_send, int *fds, size_t max_fds,
                    size_t *n_fds, VsError **err) {
        MonitorLink *ml = srv->monitor;
        return call_into(srv, e, send_fds, n_send, fds, max_fds, n_fds, ml ? ml->buf : NULL, ml ? &ml->reply : NULL,
                         err);
}

static int call(Server *srv, MonitorEnc *e, VsError **err) {
        return call_fds(srv, e, NULL, 0, NULL, 0, NULL, err);
}

static MonitorEnc *request(MonitorEnc *e, Server *srv, MonitorReq t) {
        monitor_enc_begin(e, (uint16_t)t, __atomic_add_fetch(&srv->monitor->next_id, 1, __ATOMIC_RELAXED));
        return e;
}

/* ml (zeroed) on the channels fd and pool_fd, called from the loop's
 * thread. */
static void link_init(MonitorLink *ml, int fd, int pool_fd) {
        ml->fd = fd;
        ml->pool_fd = pool_fd;
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&ml->lock, &attr);
        pthread_mutexattr_destroy(&attr);
        pthread_mutex_init(&ml->pool_lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&ml->pool_cond, &ca);
        pthread_condattr_destroy(&ca);
        ml->loop_thread = pthread_self();
}

int monitor_link_start(Server *srv, VsError **err) {
        if (geteuid() != 0) {
                srv->monitor_why_not = "a daemon run as an ordinary user has no root to protect: no monitor";
                return 0;
        }
        MonitorLink *ml = calloc(1, sizeof *ml);
        if (!ml)
                return vs_error_set(err, -ENOMEM, "out of memory");
        int sv[2], pv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                free(ml);
                return vs_error_set(err, -errno, "the root monitor's socket pair: %m");
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pv) < 0) {
                close(sv[0]);
                close(sv[1]);
                free(ml);
                return vs_error_set(err, -errno, "the root monitor's socket pair: %m");
        }
        pid_t server = getpid();
        pid_t pid = spawn_fork(0);
        if (pid == 0) {
                close(sv[0]);
                close(pv[0]);
                monitor_child(sv[1], pv[1], server, srv->instance_lock_fd, srv->cgroup_version, srv->cgroup_parents,
                              srv->opt.worker_path, srv->opt.state_dir);
        }
        close(sv[1]);
        close(pv[1]);
        if (pid < 0) {
                close(sv[0]);
                close(pv[0]);
                free(ml);
                return vs_error_set(err, (int)pid, "starting the root monitor: %s", strerror((int)-pid));
        }
        link_init(ml, sv[0], pv[0]);
        ml->pid = pid;
        srv->monitor = ml;
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_HELLO), MONITOR_F_VERSION, MONITOR_VERSION);
        int r = call(srv, &e, err);
        monitor_enc_done(&e);
        if (r < 0)
                return r;
        log_info("the root monitor started (pid %d)", (int)pid);
        return 0;
}

static void on_monitor(uv_poll_t *p, int status, int events) {
        Server *srv = p->data;
        MonitorLink *ml = srv->monitor;
        (void)status;
        (void)events;
        /* Between calls nothing may come: the monitor's end closing, or a
         * datagram nobody asked for. */
        char c;
        pthread_mutex_lock(&ml->lock);
        ssize_t n = ml->fd < 0 ? 0 : recv(ml->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                pthread_mutex_unlock(&ml->lock);
                return;
        }
        log_error("the root monitor (pid %d) is gone: %s", (int)ml->pid,
                  n == 0 ? "its end closed" : n > 0 ? "it sent what nobody asked for" : strerror(errno));
        link_broken(ml);
        pthread_mutex_unlock(&ml->lock);
        tell_gone(srv);
}

void monitor_link_watch(Server *srv, void (*gone)(Server *srv)) {
        MonitorLink *ml = srv->monitor;
        if (!ml || ml->fd < 0)
                return;
        ml->gone = gone;
        if (uv_poll_init(srv->loop, &ml->poll, ml->fd) < 0)
                return;
        ml->poll.data = srv;
        ml->poll_on = uv_poll_start(&ml->poll, UV_READABLE | UV_DISCONNECT, on_monitor) == 0;
}

static void log_exit(MonitorLink *ml, int st) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                log_info("the root monitor (pid %d) exited", (int)ml->pid);
        else if (WIFEXITED(st))
                log_error("the root monitor (pid %d) exited with status %d", (int)ml->pid, WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
                log_error("the root monitor (pid %d) was killed by signal %d", (int)ml->pid, WTERMSIG(st));
}

void monitor_link_reap(Server *srv) {
        MonitorLink *ml = srv->monitor;
        int st;
        if (!ml || ml->pid <= 0 || waitpid(ml->pid, &st, WNOHANG) != ml->pid)
                return;
        log_exit(ml, st);
        ml->pid = 0;
}

int monitor_link_stop(Server *srv) {
        MonitorLink *ml = srv->monitor;
        if (!ml)
                return 0;
        int r = ml->fd >= 0 ? 0 : -EPIPE; /* gone before: not a clean end */
        if (ml->fd >= 0) {
                MonitorEnc e;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                ml->gone = NULL;
                r = call(srv, request(&e, srv, MONITOR_REQ_SHUTDOWN), &err);
                monitor_enc_done(&e);
                pthread_mutex_lock(&ml->lock);
                link_broken(ml);
                pthread_mutex_unlock(&ml->lock);
        }
        /* Shut down (link_broken): a reader in it is out at once. */
        pthread_mutex_lock(&ml->pool_lock);
        while (ml->pool_reading)
                pthread_cond_wait(&ml->pool_cond, &ml->pool_lock);
        ml->pool_fd = safe_close(ml->pool_fd);
        pthread_mutex_unlock(&ml->pool_lock);
        bool killed = false;
        for (uint64_t deadline = now_ms() + MONITOR_STOP_MS; ml->pid > 0;) {
                int st;
                pid_t w = waitpid(ml->pid, &st, WNOHANG);
                if (w == ml->pid) {
                        log_exit(ml, st);
                        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                                r = -ECHILD;
                        ml->pid = 0;
                } else if (w < 0 && errno != EINTR) {
                        ml->pid = 0;
                } else if (now_ms() >= deadline && !killed) {
                        log_error("the root monitor (pid %d) did not exit: killed", (int)ml->pid);
                        (void)kill(ml->pid, SIGKILL);
                        killed = true;
                        r = -ETIMEDOUT;
                        deadline = now_ms() + MONITOR_STOP_MS;
                } else if (now_ms() >= deadline) {
                        /* Stuck in the kernel (a hung filesystem): not waited for. */
                        log_error("the root monitor (pid %d) did not end after SIGKILL; not waiting for it",
                                  (int)ml->pid);
                        ml->pid = 0;
                } else
                        (void)usleep(5000);
        }
        return r;
}

json_t *monitor_link_status(Server *srv) {
        MonitorLink *ml = srv->monitor;
        if (!ml)
                return json_pack("{s:b,s:s}", "running", false, "why", srv->monitor_why_not);
        if (ml->fd < 0)
                return json_pack("{s:b,s:s}", "running", false, "why", "the root monitor is gone");
        MonitorEnc e;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int r = call(srv, request(&e, srv, MONITOR_REQ_STATUS), &err);
        monitor_enc_done(&e);
        if (r < 0)
                return json_pack("{s:b,s:s}", "running", false, "why", vs_error_message(err));
        const MonitorField *pid = monitor_field(&ml->reply, MONITOR_F_PID, -1);
        int at = monitor_next(&ml->reply, MONITOR_F_COUNT, -1);
        int jails = at >= 0 ? monitor_next(&ml->reply, MONITOR_F_COUNT, at) : -1;
        int killed = jails >= 0 ? monitor_next(&ml->reply, MONITOR_F_COUNT, jails) : -1;
        int made = killed >= 0 ? monitor_next(&ml->reply, MONITOR_F_COUNT, killed) : -1;
        int aside = made >= 0 ? monitor_next(&ml->reply, MONITOR_F_COUNT, made) : -1;
        int fuse = aside >= 0 ? monitor_next(&ml->reply, MONITOR_F_COUNT, aside) : -1;
        return json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "running", true, "pid", (json_int_t)(pid ? pid->u64 : 0),
                         "workspaces", (json_int_t)(at >= 0 ? ml->reply.fields[at].u64 : 0), "jails_started",
                         (json_int_t)(jails >= 0 ? ml->reply.fields[jails].u64 : 0), "jails_killed",
                         (json_int_t)(killed >= 0 ? ml->reply.fields[killed].u64 : 0), "placeholders_made",
                         (json_int_t)(made >= 0 ? ml->reply.fields[made].u64 : 0), "repos_put_aside",
                         (json_int_t)(aside >= 0 ? ml->reply.fields[aside].u64 : 0), "fuse_connections_ended",
                         (json_int_t)(fuse >= 0 ? ml->reply.fields[fuse].u64 : 0));
}

int monitor_link_ws_open(Server *srv, const char *path, uid_t uid, gid_t gid, uint64_t *ret, VsError **err) {
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        MonitorEnc e;
        monitor_put_str(request(&e, srv, MONITOR_REQ_WS_OPEN), MONITOR_F_PATH, path);
        monitor_put_u64(&e, MONITOR_F_UID, uid);
        monitor_put_u64(&e, MONITOR_F_GID, gid);
        int r = call(srv, &e, err);
        monitor_enc_done(&e);
        if (r < 0)
                return r;
        const MonitorField *f = monitor_field(&srv->monitor->reply, MONITOR_F_WS, -1);
        if (!f)
                return lost(srv, MONITOR_REQ_WS_OPEN, "an opened workspace without its handle", err);
        *ret = f->u64;
        return 0;
}

void monitor_link_ws_close(Server *srv, uint64_t ws) {
        if (!srv->monitor || !ws)
                return;
        MonitorEnc e;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_WS_CLOSE), MONITOR_F_WS, ws);
        if (call(srv, &e, &err) < 0 && srv->monitor->fd >= 0)
                log_warning("%s", vs_error_message(err));
        monitor_enc_done(&e);
}

/* e (begun, taken) asked on the pool's channel, its reply read into
 * buffers of its own: its count (the link lost when there is none), or
 * a negative errno. */
/* e asked on the pool's channel (pool_call; e ended here): its reply in
 * *ret_reply, whose strings lie in *ret_buf (both the caller's to free,
 * NULL on failure), its request type in *ret_type. */
static int pool_ask(Server *srv, MonitorEnc *e, uint8_t **ret_buf, MonitorMsg **ret_reply, uint16_t *ret_type,
                    VsError **err) {
        _cleanup_free_ uint8_t *buf = malloc(MONITOR_MSG_MAX);
        _cleanup_free_ MonitorMsg *reply = malloc(sizeof *reply);
        int r = !buf || !reply ? vs_error_set(err, -ENOMEM, "out of memory") : pool_call(srv, e, buf, reply, err);
        *ret_type = 0;
        if (e->buf.data && e->buf.len >= 16)
                memcpy(ret_type, e->buf.data + 4, sizeof *ret_type);
        monitor_enc_done(e);
        *ret_buf = r < 0 ? NULL : TAKE_PTR(buf);
        *ret_reply = r < 0 ? NULL : TAKE_PTR(reply);
        return r;
}

static int pool_count(Server *srv, MonitorEnc *e, uint64_t *ret_count, VsError **err) {
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ MonitorMsg *reply = NULL;
        uint16_t type;
        *ret_count = 0;
        int r = pool_ask(srv, e, &buf, &reply, &type, err);
        if (r < 0)
                return r;
        const MonitorField *f = monitor_field(reply, MONITOR_F_COUNT, -1);
        if (!f)
                return lost(srv, type, "an answer without its count", err);
        *ret_count = f->u64;
        return 0;
}

int monitor_link_placeholders(Server *srv, uint64_t ws, const VsHostItem *items, size_t n, VsError **err) {
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        /* What the decoder refuses would break the link (a breach). */
        for (size_t i = 0; i < n; i++)
                if (!rel_is_normal(items[i].rel) || strlen(items[i].rel) > 4095 || items[i].flags > _VS_HOST_MAKE_ALL ||
                    (unsigned)items[i].text >= _VS_HOST_TEXT_MAX)
                        return vs_error_set(err, -EINVAL, "not a placeholder the monitor makes: %s",
                                            items[i].rel ? items[i].rel : "(null)");
        uint64_t made = 0;
        for (size_t i = 0; i < n;) {
                /* As many as one request takes: its items, and its bytes
                 * (a rel of 4 095 bytes and its fields is about 4 KiB). */
                MonitorEnc e;
                monitor_put_u64(request(&e, srv, MONITOR_REQ_PLACEHOLDER), MONITOR_F_WS, ws);
                for (size_t k = 0; i < n && k < MONITOR_ITEMS_MAX && e.buf.len + 4200 < MONITOR_MSG_MAX; i++, k++) {
                        monitor_put_item(&e, items[i].rel, items[i].flags,
                                         items[i].flags & VS_HOST_MAKE_DIR ? -1 : (int)items[i].text);
                }
                uint64_t count;
                int r = pool_count(srv, &e, &count, err);
                if (r < 0)
                        return r;
                made += count;
        }
        return made > INT_MAX ? INT_MAX : (int)made;
}

int monitor_link_placeholder(Server *srv, uint64_t ws, const char *rel, unsigned flags, VsHostText text,
                             VsError **err) {
        VsHostItem item = { .rel = rel, .flags = flags, .text = text };
        int r = monitor_link_placeholders(srv, ws, &item, 1, err);
        return r < 0 ? r : r == 1 ? 1 : 0;
}

int monitor_link_quarantine(Server *srv, uint64_t ws, const char *rel, uint64_t dev, uint64_t ino, unsigned *ret_n,
                            VsError **err) {
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        if (!rel_is_normal(rel) || strlen(rel) > 4095 || ino == 0)
                return vs_error_set(err, -EINVAL, "not an entry the monitor puts aside: %s", rel ? rel : "(null)");
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_QUARANTINE), MONITOR_F_WS, ws);
        monitor_put_str(&e, MONITOR_F_REL, rel);
        monitor_put_u64(&e, MONITOR_F_DEV, dev);
        monitor_put_u64(&e, MONITOR_F_INO, ino);
        uint64_t count;
        int r = pool_count(srv, &e, &count, err);
        if (r < 0)
                return r;
        /* VS_ASIDE_TRIES: a link removed, its put-aside names all taken;
         * above it, a random N (host_aside_at). */
        if (count > UINT32_MAX)
                return lost(srv, MONITOR_REQ_QUARANTINE, "a quarantine's answer without its name", err);
        *ret_n = (unsigned)count;
        return 0;
}

int monitor_link_git_identity(Server *srv, uint64_t ws, char **ret_name, char **ret_email, VsError **err) {
        *ret_name = *ret_email = NULL;
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_GIT_IDENTITY), MONITOR_F_WS, ws);
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ MonitorMsg *reply = NULL;
        uint16_t type;
        int r = pool_ask(srv, &e, &buf, &reply, &type, err);
        if (r < 0)
                return r;
        const char *name = monitor_field_str(monitor_field(reply, MONITOR_F_NAME, -1)),
                   *email = monitor_field_str(monitor_field(reply, MONITOR_F_EMAIL, -1));
        /* The monitor checked them; the link does not take its word. */
        if (!jail_git_identity_plain(name) || !jail_git_identity_plain(email))
                return lost(srv, MONITOR_REQ_GIT_IDENTITY, "an identity that is not two plain lines", err);
        if (!(*ret_name = strdup(name)) || !(*ret_email = strdup(email))) {
                free(*ret_name);
                *ret_name = NULL;
                return vs_error_set(err, -ENOMEM, "out of memory");
        }
        return 0;
}

static int maker_make(void *userdata, const char *rel, unsigned flags, VsHostText text, VsError **err) {
        MonitorMaker *m = userdata;
        return monitor_link_placeholder(m->srv, m->ws, rel, flags, text, err);
}

static int maker_make_many(void *userdata, const VsHostItem *items, size_t n, VsError **err) {
        MonitorMaker *m = userdata;
        return monitor_link_placeholders(m->srv, m->ws, items, n, err);
}

/* A repository found after the workspace was let go (its handle closed:
 * a sweep at the daemon's end) or with the monitor gone is put aside by
 * this process, a root one still (docs/privsep.md): not left to the
 * host's git. */
static int maker_put_aside(void *userdata, const char *rel, uint64_t dev, uint64_t ino, unsigned *ret_n,
                           VsError **err) {
        MonitorMaker *m = userdata;
        int r = monitor_link_quarantine(m->srv, m->ws, rel, dev, ino, ret_n, err);
        return (r == -ENOENT || r == -EPIPE || r == -ENOTCONN) && geteuid() == 0 ? -ENOTCONN : r;
}

/* ---- the owners' identities, kept while their files stay as they were ---- */

/* What an owner's identity depends on, as lstat() shows it: the home,
 * the directories on the way to ~/.config/git/config, the two files. Any
 * write, rename, chmod or chown moves one (ctime); nothing here is read
 * or told, only compared. */
#define IDENT_PATHS 5
typedef struct IdentStamp {
        int err;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtim, ctim;
} IdentStamp;

typedef struct IdentKept {
        bool used;
        uid_t uid;
        IdentStamp stamp[IDENT_PATHS];
        char *name, *email;
} IdentKept;

#define IDENT_KEPT 32
static struct {
        pthread_mutex_t lock;
        IdentKept kept[IDENT_KEPT];
        unsigned next;
} idents = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* uid's stamps; false when they cannot be taken, or one moved in the last
 * 2 s (a write in the same clock tick as the stamp would not show: kept
 * only once settled, as git's index treats a racy file). */
static bool ident_stamp(uid_t uid, IdentStamp st[IDENT_PATHS]) {
        static const char *const rel[IDENT_PATHS] = { "", "/.config", "/.config/git", "/.config/git/config",
                                                      "/.gitconfig" };
        struct passwd pwbuf, *pw = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pwbuf, buf, sizeof buf, &pw) != 0 || !pw || !pw->pw_dir || pw->pw_dir[0] != '/')
                return false;
        struct timespec now = now_wall();
        for (size_t i = 0; i < IDENT_PATHS; i++) {
                char path[PATH_MAX];
                struct stat sb;
                if ((size_t)snprintf(path, sizeof path, "%s%s", pw->pw_dir, rel[i]) >= sizeof path)
                        return false;
                memset(&st[i], 0, sizeof st[i]);
                if (lstat(path, &sb) < 0) {
                        st[i].err = errno;
                        continue;
                }
                st[i].dev = sb.st_dev;
                st[i].ino = sb.st_ino;
                st[i].size = sb.st_size;
                st[i].mtim = sb.st_mtim;
                st[i].ctim = sb.st_ctim;
                if (now.tv_sec - sb.st_ctim.tv_sec < 2 || now.tv_sec - sb.st_mtim.tv_sec < 2)
                        return false;
        }
        return true;
}

static bool stamps_equal(const IdentStamp a[IDENT_PATHS], const IdentStamp b[IDENT_PATHS]) {
        for (size_t i = 0; i < IDENT_PATHS; i++)
                if (a[i].err != b[i].err || a[i].dev != b[i].dev || a[i].ino != b[i].ino || a[i].size != b[i].size ||
                    a[i].mtim.tv_sec != b[i].mtim.tv_sec || a[i].mtim.tv_nsec != b[i].mtim.tv_nsec ||
                    a[i].ctim.tv_sec != b[i].ctim.tv_sec || a[i].ctim.tv_nsec != b[i].ctim.tv_nsec)
                        return false;
        return true;
}

/* A kept identity of uid whose stamps are st: copied out (1), or 0. */
static int ident_kept(uid_t uid, const IdentStamp st[IDENT_PATHS], char **ret_name, char **ret_email) {
        int r = 0;
        pthread_mutex_lock(&idents.lock);
        for (size_t i = 0; i < IDENT_KEPT && r == 0; i++) {
                IdentKept *k = &idents.kept[i];
                if (!k->used || k->uid != uid || !stamps_equal(k->stamp, st))
                        continue;
                *ret_name = strdup(k->name);
                *ret_email = strdup(k->email);
                r = *ret_name && *ret_email ? 1 : -ENOMEM;
        }
        pthread_mutex_unlock(&idents.lock);
        if (r < 0) {
                free(*ret_name);
                free(*ret_email);
                *ret_name = *ret_email = NULL;
        }
        return r;
}

static void ident_keep(uid_t uid, const IdentStamp st[IDENT_PATHS], const char *name, const char *email) {
        char *n = strdup(name), *e = strdup(email);
        if (!n || !e) {
                free(n);
                free(e);
                return;
        }
        pthread_mutex_lock(&idents.lock);
        IdentKept *k = NULL;
        for (size_t i = 0; i < IDENT_KEPT && !k; i++)
                if (idents.kept[i].used && idents.kept[i].uid == uid)
                        k = &idents.kept[i];
        if (!k)
                k = &idents.kept[idents.next++ % IDENT_KEPT];
        free(k->name);
        free(k->email);
        *k = (IdentKept){ .used = true, .uid = uid, .name = n, .email = e };
        memcpy(k->stamp, st, sizeof k->stamp);
        pthread_mutex_unlock(&idents.lock);
}

/* The owner's identity: the one kept while its files are as they were
 * when the monitor last read it (a first start of each workspace asked
 * one child of the monitor more, a tenth of a start's cost), else the
 * monitor's answer, kept. */
static int maker_identity(void *userdata, char **ret_name, char **ret_email) {
        MonitorMaker *m = userdata;
        IdentStamp st[IDENT_PATHS];
        bool stamped = m->owner_known && ident_stamp(m->owner, st);
        int r = stamped ? ident_kept(m->owner, st, ret_name, ret_email) : 0;
        if (r != 0)
                return r < 0 ? r : 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        r = monitor_link_git_identity(m->srv, m->ws, ret_name, ret_email, &err);
        if (r < 0 && r != -ENOMEM)
                log_warning("the owner's git identity: %s", vs_error_message(err));
        if (r >= 0 && stamped)
                ident_keep(m->owner, st, *ret_name, *ret_email);
        return r;
}

void monitor_maker_init(MonitorMaker *m, Server *srv, uint64_t ws, const char *workspace) {
        *m = (MonitorMaker){ .srv = srv, .ws = ws };
        m->maker = (VsHostMaker){ .workspace = workspace, .make = maker_make, .make_many = maker_make_many,
                                  .put_aside = maker_put_aside, .identity = maker_identity, .userdata = m };
}

int monitor_link_cgroup_make(Server *srv, uint64_t ws, uint64_t pids_max, uint64_t memory_max, int ret_fds[2],
                             char **ret_note, VsError **err) {
        ret_fds[0] = ret_fds[1] = -EBADF;
        *ret_note = NULL;
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_CGROUP_MAKE), MONITOR_F_WS, ws);
        /* Within what the monitor takes: past it, as good as no limit. */
        monitor_put_u64(&e, MONITOR_F_PIDS_MAX, monitor_pids_clamp(pids_max));
        monitor_put_u64(&e, MONITOR_F_MEMORY_MAX, monitor_memory_clamp(memory_max));
        size_t n = 0;
        int r = call_fds(srv, &e, NULL, 0, ret_fds, 2, &n, err);
        monitor_enc_done(&e);
        if (r < 0)
                return r;
        if (n == 0 || (srv->cgroup_version == 2 && n != 1)) {
                for (size_t i = 0; i < n; i++)
                        ret_fds[i] = safe_close(ret_fds[i]);
                return lost(srv, MONITOR_REQ_CGROUP_MAKE, "groups made without their descriptors", err);
        }
        const char *note = monitor_field_str(monitor_field(&srv->monitor->reply, MONITOR_F_MESSAGE, -1));
        if (note && !(*ret_note = strdup(note))) {
                for (size_t i = 0; i < n; i++)
                        ret_fds[i] = safe_close(ret_fds[i]);
                return vs_error_set(err, -ENOMEM, "out of memory");
        }
        return 0;
}

int monitor_link_jail_kill(Server *srv, uint64_t ws, uint64_t gen, VsError **err) {
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_JAIL_KILL), MONITOR_F_WS, ws);
        monitor_put_u64(&e, MONITOR_F_GEN, gen);
        int r = call(srv, &e, err);
        monitor_enc_done(&e);
        return r;
}

void monitor_link_log_reopen(Server *srv, int log_fd) {
        if (!srv->monitor || srv->monitor->fd < 0 || log_fd < 0)
                return;
        MonitorEnc e;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        request(&e, srv, MONITOR_REQ_LOG_REOPEN);
        if (call_fds(srv, &e, &log_fd, 1, NULL, 0, NULL, &err) < 0 && srv->monitor->fd >= 0)
                log_warning("the root monitor keeps its old log: %s", vs_error_message(err));
        monitor_enc_done(&e);
}

/* l's argv in a memfd sealed against any change, NUL after each string;
 * written at once (a write per string was 136 system calls of a start's
 * 800 on the loop). */
static int argv_memfd(char *const *argv) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        for (char *const *a = argv; a && *a; a++)
                if (strbuf_append(&b, *a, strlen(*a) + 1) < 0)
                        return -ENOMEM;
        _cleanup_close_ int fd = memfd_create("vectora-jail-argv", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, b.data, b.len);
        if (r < 0)
                return r;
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int monitor_link_jail_spawn(Server *srv, uint64_t ws, const char *ws_path, uint64_t gen, const VsLaunch *l,
                            VsWorkerProc *ret, int *ret_exec_fd, VsError **err) {
        if (!srv->monitor)
                return vs_error_set(err, -ENOTCONN, "no root monitor");
        int chan[2], errp[2];
        int r = worker_spawn_ends(chan, errp, err);
        if (r < 0)
                return r;
        _cleanup_close_ int ours = chan[0], theirs = chan[1], stderr_r = errp[0], stderr_w = errp[1];
        _cleanup_close_ int argv_fd = argv_memfd(l->argv);
        if (argv_fd < 0)
                return vs_error_set(err, argv_fd, "the jail's argv could not be sealed in a memfd: %s", strerror(-argv_fd));
        MonitorEnc e;
        monitor_put_u64(request(&e, srv, MONITOR_REQ_JAIL_SPAWN), MONITOR_F_WS, ws);
        /* Its own id: the counter may have moved on meanwhile (a pool
         * thread's request; attack review 8). */
        uint64_t id;
        memcpy(&id, e.buf.data + 8, sizeof id);
        monitor_put_u64(&e, MONITOR_F_GEN, gen ? gen : 1);
        monitor_put_u64(&e, MONITOR_F_UID, l->uid);
        monitor_put_u64(&e, MONITOR_F_GID, l->gid);
        monitor_put_u64(&e, MONITOR_F_FLAGS, l->own_pid_ns ? MONITOR_SPAWN_OWN_PID_NS : 0);
        /* A root-owned workspace's writable trees, by their place below
         * it: the monitor opens and idmaps them itself. */
        for (size_t i = 0; i < l->n_idmap; i++) {
                const char *rel = path_startswith(l->idmap_paths[i], ws_path);
                if (!rel) {
                        monitor_enc_done(&e);
                        return vs_error_set(err, -EINVAL, "%s lies outside the workspace %s: no idmapped tree there",
                                            l->idmap_paths[i], ws_path);
                }
                monitor_group_begin(&e, MONITOR_F_MOUNT);
                monitor_put_u64(&e, MONITOR_F_KIND, MONITOR_MOUNT_RW);
                if (*rel)
                        monitor_put_str(&e, MONITOR_F_REL, rel);
                monitor_put_str(&e, MONITOR_F_DST, l->idmap_paths[i]);
                monitor_group_end(&e);
        }
        int send[3] = { theirs, stderr_w, argv_fd };
        _cleanup_(vs_error_freep) VsError *merr = NULL;
        int got[1] = { -EBADF };
        size_t n_got = 0;
        r = call_fds(srv, &e, send, 3, got, 1, &n_got, &merr);
        _cleanup_close_ int exec_fd = n_got ? got[0] : -EBADF;
        monitor_enc_done(&e);
        /* The reply's pid and step, when it answered this request (the
         * start's child is this process's: reaped here when it failed). */
        MonitorLink *ml = srv->monitor;
        bool answered = ml && ml->fd >= 0 && ml->reply.type == (MONITOR_REPLY | MONITOR_REQ_JAIL_SPAWN) && ml->reply.id == id;
        const MonitorField *pid = answered ? monitor_field(&ml->reply, MONITOR_F_PID, -1) : NULL;
        const MonitorField *step = answered ? monitor_field(&ml->reply, MONITOR_F_STEP, -1) : NULL;
        if (r < 0) {
                if (pid)
                        while (waitpid((pid_t)pid->u64, NULL, 0) < 0 && errno == EINTR)
                                ;
                if (step)
                        return worker_spawn_error(l, (int)step->u64, -r, err);
                r = vs_error_set(err, r, "%s", vs_error_message(merr));
                return r;
        }
        if (!pid || exec_fd < 0) {
                if (pid && kill((pid_t)pid->u64, SIGKILL) == 0)
                        while (waitpid((pid_t)pid->u64, NULL, 0) < 0 && errno == EINTR)
                                ;
                return lost(srv, MONITOR_REQ_JAIL_SPAWN, "a jail started without its pid and exec-error pipe", err);
        }
        ret->pid = (pid_t)pid->u64;
        *ret_exec_fd = TAKE_FD(exec_fd);
        ret->fd = TAKE_FD(ours);
        ret->stderr_fd = TAKE_FD(stderr_r);
        return 0;
}
