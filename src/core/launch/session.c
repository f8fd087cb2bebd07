/* SPDX-License-Identifier: MIT */
#include "session.h"
#include "backend-ops.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "fd-util.h"
#include "git-scan.h"
#include "host-aside.h"
#include "path-util.h"
#include "proc-tree.h"
#include "protocol.h"
#include "handshake.h"
#include "strv.h"
#include "time-util.h"

uint64_t session_next_id(VsSession *s) {
        return __atomic_add_fetch(&s->next_id, 1, __ATOMIC_RELAXED);
}

/* A request in flight (session_call()): its reply, or why none came. */
typedef struct VsSessionWait {
        struct VsSessionWait *next;
        uint64_t id;
        bool done;
        int r;
        JsonlMsg msg;
        VsError *err;
} VsSessionWait;

/* The worker's pid, for the one thread that will reap it: 0 when another
 * thread took it first. In a shared session several calls may end the
 * worker at once; only the taker signals and reaps, so no thread signals
 * or reaps a pid already reaped and perhaps reused (another session's
 * worker in the same MCP server is a child of this process too). While
 * s->proc.pid is not 0 its process is not reaped. */
static pid_t take_pid(VsSession *s, pid_t expected) {
        return __atomic_compare_exchange_n(&s->proc.pid, &expected, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
                       ? expected
                       : 0;
}

static void reap(pid_t pid) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* Ends the worker: a shared session keeps its descriptors for the calls
 * still reading or writing them (a descriptor closed under another thread
 * could be reused by an unrelated open), session_end() closes them. */
static void kill_worker(VsSession *s) {
        if (!s->shared) {
                worker_proc_kill(&s->proc);
                return;
        }
        pid_t pid = take_pid(s, __atomic_load_n(&s->proc.pid, __ATOMIC_ACQUIRE));
        if (pid > 0) {
                kill(pid, SIGKILL);
                reap(pid);
        }
}

/* Collects what the backend wrote to stderr (bwrap's own errors). */
static char *drain_stderr(int fd) {
        if (fd < 0)
                return NULL;
        fd_set_nonblock(fd, true);
        char buf[4096];
        size_t n = 0;
        for (int i = 0; i < 50 && n < sizeof buf - 1; i++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 200) <= 0)
                        break;
                ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
                if (k <= 0)
                        break;
                n += (size_t)k;
        }
        buf[n] = 0;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = 0;
        for (size_t i = 0; i < n; i++)
                if (buf[i] == '\n')
                        buf[i] = ' ';
        return n ? strdup(buf) : NULL;
}

/* After end of input: give the worker time to exit cleanly (the caller
 * kills it then). A local worker is gone within milliseconds; `docker run
 * --rm` returns only once its container is removed, which takes longer
 * under load, and killing it earlier leaves the container's name taken for
 * the next start in this workspace. */
static void wait_exit(VsSession *s) {
        for (int i = 0; i < 100 + 240; i++) {
                pid_t pid = __atomic_load_n(&s->proc.pid, __ATOMIC_ACQUIRE);
                if (pid <= 0)
                        break;
                /* Look without reaping; reap only once taken. */
                siginfo_t si = { 0 };
                if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
                        if (take_pid(s, pid) > 0)
                                reap(pid);
                        break;
                }
                struct timespec ts = { 0, (i < 100 ? 2 : 20) * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

/* A protected path replaced on the host detached the jail's read-only
 * mount on it: the worker is ended before it can write there. Killing
 * bwrap ends the local jail at once; a container dies with its worker,
 * which ends at end of input (killing the docker client would leave the
 * container, and its name, behind for a while). */
/* How often the protected paths are looked at when inotify is not there. */
#define PROTECT_POLL_MS 10

static int protect_changed(VsSession *s, VsError **err) {
        const char *what = s->protect ? protect_snapshot_changed(s->protect) : NULL;
        if (!what)
                return 0;
        int r = vs_error_set_kind(err, -ESTALE, "worker_recycled",
                                  "%s changed on the host during the action; its jail lost the read-only mount there "
                                  "and was ended; run the action again",
                                  what);
        if (!s->local && s->proc.fd >= 0) {
                shutdown(s->proc.fd, SHUT_WR);
                wait_exit(s);
        }
        kill_worker(s);
        return r;
}

void session_watch_protected(VsSession *s, VsProtectSnapshot *snap) {
        protect_snapshot_free(s->protect);
        s->protect = snap;
        if (s->protect_fd >= 0)
                close(s->protect_fd);
        s->protect_fd = snap ? protect_snapshot_watch(snap, NULL) : -EBADF;
}

/* The owner asked to cancel request target (its cancel_fd is readable):
 * the worker's cancel for it, whose own reply no call waits for (dropped). */
static int send_cancel(VsSession *s, int cancel_fd, uint64_t target, VsError **err) {
        uint64_t n;
        if (read(cancel_fd, &n, sizeof n) != sizeof n || !target)
                return 0; /* nothing asked after all */
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_cancel_request(&out, session_next_id(s), target);
        if (r >= 0) {
                pthread_mutex_lock(&s->wlock);
                r = write_all(s->proc.fd, out.data, out.len);
                pthread_mutex_unlock(&s->wlock);
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return vs_error_set_kind(err, r, "worker_crashed", "sending to the worker: %s", strerror(-r));
        return 0;
}

/* The next message from the worker. cancel_fd (< 0: none) readable:
 * request target is cancelled (send_cancel()). */
static int read_msg(VsSession *s, int64_t deadline_us, int cancel_fd, uint64_t target, JsonlMsg *ret, VsError **err) {
        for (;;) {
                int r = jsonl_reader_next(s->reader, ret, err);
                if (r != -EAGAIN)
                        return r;
                int timeout = -1;
                if (deadline_us > 0) {
                        int64_t left = deadline_us - (int64_t)now_us();
                        if (left <= 0)
                                return vs_error_set_kind(err, -ETIMEDOUT, "worker_timeout", "the worker did not answer in time");
                        timeout = (int)((left + 999) / 1000);
                }
                /* Without the inotify watch (no instance left: the limit,
                 * fs.inotify.max_user_instances, is per user and shared with
                 * every other process of this uid), the paths are looked at
                 * every PROTECT_POLL_MS instead: never a running command
                 * left unwatched (it once wrote .git/config after a host save). */
                bool polling = s->protect && s->protect_fd < 0;
                if (polling && (timeout < 0 || timeout > PROTECT_POLL_MS))
                        timeout = PROTECT_POLL_MS;
                struct pollfd p[3] = { { .fd = s->proc.fd, .events = POLLIN },
                                       { .fd = s->protect_fd, .events = POLLIN },
                                       { .fd = target ? cancel_fd : -1, .events = POLLIN } };
                r = poll(p, 3, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return vs_error_set(err, -errno, "poll: %m");
                if ((s->protect_fd >= 0 && (p[1].revents & POLLIN)) || polling) {
                        if (!polling)
                                (void)protect_snapshot_drain(s->protect_fd);
                        if ((r = protect_changed(s, err)) < 0)
                                return r;
                }
                if ((p[2].revents & POLLIN) && (r = send_cancel(s, cancel_fd, target, err)) < 0)
                        return r;
                if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                ssize_t k = jsonl_reader_read_fd(s->reader, s->proc.fd);
                if (k == -EAGAIN || k == -EINTR)
                        continue;
                if (k < 0)
                        return vs_error_set_kind(err, (int)k, "worker_crashed", "reading from the worker: %s", strerror((int)-k));
                /* Ended by a call beside this one (a shared session). */
                const char *why = __atomic_load_n(&s->ended_why, __ATOMIC_ACQUIRE);
                if (why)
                        return vs_error_set_kind(err, -EPIPE, "worker_recycled", "%s", why);
                if (k == 0)
                        return vs_error_set_kind(err, -EPIPE, "worker_crashed", "the worker exited");
        }
}

static int fail_start(VsSession *s, int r, VsError **err) {
        _cleanup_free_ char *text = drain_stderr(s->proc.stderr_fd);
        const char *diag = backend_diagnose(s->backend, text);
        if (diag)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "the jail could not start: %s (backend said: %s)",
                                         diag, text);
        if (text) {
                /* Copy the earlier reason first: setting err frees it. */
                _cleanup_free_ char *prev = err && *err ? strdup(vs_error_message(*err)) : NULL;
                return vs_error_set_kind(err, r, "sandbox_unavailable", "the jail could not start: %s%s%s", text,
                                         prev ? "; " : "", prev ? prev : "");
        }
        return vs_error_prefix(err, "the jail could not start");
}

int session_start(VsLaunch *l, VsSession **ret, VsError **err) {
        _cleanup_(session_endp) VsSession *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->proc.fd = s->proc.stderr_fd = s->protect_fd = -EBADF;
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->wlock, NULL);
        pthread_mutex_init(&s->sweep_lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        s->locks_init = true;
        s->sandboxed = l->sandboxed;
        s->local = !l->backend_name || (l->backend && l->backend->needs_bwrap);
        s->backend = l->backend;
        s->own_pid_ns = s->local && l->own_pid_ns;
        int r = jsonl_reader_new(&s->reader);
        if (r < 0)
                return r;
        uint64_t t0 = now_us();
        r = worker_spawn(l, &s->proc, err);
        if (r < 0)
                return r;

        /* The handshake (handshake.h), fed from blocking reads. */
        int64_t deadline = (int64_t)(t0 + SESSION_HANDSHAKE_TIMEOUT_MS * 1000u);
        _cleanup_(handshake_done) VsHandshake hs;
        handshake_init(&hs, l);
        for (;;) {
                JsonlMsg m = JSONL_MSG_INIT;
                r = read_msg(s, deadline, -EBADF, 0, &m, err);
                if (r < 0)
                        return fail_start(s, r, err);
                _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                r = handshake_feed(&hs, &m, &out, err);
                jsonl_msg_done(&m);
                if (r == -EPROTO)
                        return fail_start(s, r, err);
                if (r < 0)
                        return r;
                if (r == VS_HANDSHAKE_OK)
                        break;
                r = write_all(s->proc.fd, out.data, out.len);
                if (r < 0)
                        return fail_start(s, vs_error_set_kind(err, r, "sandbox_unavailable", "sending init: %s",
                                                               strerror(-r)), err);
        }
        s->have_ready = true;
        s->layers = TAKE_PTR(hs.layers);
        s->degraded = TAKE_PTR(hs.degraded);
        s->spawn_to_ready_us = now_us() - t0;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The reader's message m handed to the request it answers; one that no
 * call waits for (the reply to a cancel) is dropped. With s->lock held. */
static void hand_on(VsSession *s, JsonlMsg *m) {
        json_t *id = json_object_get(m->obj, "id");
        /* A reply without an id (a request the worker could not read, its
         * last word) goes to the one request in flight, as when calls came
         * one at a time; with several it cannot be told whose. */
        size_t n_open = 0;
        for (VsSessionWait *w = s->waits; w; w = w->next)
                n_open += !w->done;
        for (VsSessionWait *w = s->waits; w; w = w->next)
                if (!w->done && (json_is_integer(id) ? w->id == (uint64_t)json_integer_value(id) : json_is_null(id) && n_open == 1)) {
                        w->msg = *m;
                        *m = (JsonlMsg)JSONL_MSG_INIT;
                        w->done = true;
                        return;
                }
        jsonl_msg_done(m);
}

/* Request w fails as e says (may be NULL). With s->lock held. */
static void fail_one(VsSessionWait *w, int r, const VsError *e) {
        w->done = true;
        if (r == -ENOMEM)
                w->r = r;
        else if (e && e->kind)
                w->r = vs_error_set_kind(&w->err, r, e->kind, "%s", vs_error_message(e));
        else
                w->r = vs_error_set(&w->err, r, "%s", e ? vs_error_message(e) : strerror(-r));
}

/* The worker is gone or broke the protocol: every request in flight fails
 * as the reader's did. With s->lock held. */
static void fail_all(VsSession *s, int r, const VsError *e) {
        for (VsSessionWait *w = s->waits; w; w = w->next)
                if (!w->done)
                        fail_one(w, r, e);
}

int session_call(VsSession *s, uint64_t id, const StrBuf *request, uint64_t timeout_ms, int cancel_fd, JsonlMsg *ret,
                 VsError **err) {
        int r = protect_changed(s, err);
        if (r < 0)
                return r;
        int64_t deadline = timeout_ms ? (int64_t)(now_us() + timeout_ms * 1000u) : 0;
        /* Waiting before the request goes out: its reply may come at once. */
        VsSessionWait w = { .id = id, .msg = JSONL_MSG_INIT };
        pthread_mutex_lock(&s->lock);
        w.next = s->waits;
        s->waits = &w;
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_lock(&s->wlock);
        r = write_all(s->proc.fd, request->data, request->len);
        pthread_mutex_unlock(&s->wlock);
        pthread_mutex_lock(&s->lock);
        if (r < 0 && !w.done) {
                w.done = true;
                w.r = vs_error_set_kind(&w.err, r, "worker_crashed", "sending to the worker: %s", strerror(-r));
        }
        while (!w.done) {
                if (s->reading) {
                        /* Another call reads for us; ours may be cancelled
                         * meanwhile, which only we see. */
                        struct timespec ts = now_wall(); /* the condition's clock */
                        ts.tv_nsec += 20 * 1000 * 1000;
                        if (ts.tv_nsec >= 1000000000) {
                                ts.tv_sec++;
                                ts.tv_nsec -= 1000000000;
                        }
                        (void)pthread_cond_timedwait(&s->cond, &s->lock, &ts);
                        if (w.done || cancel_fd < 0)
                                continue;
                        struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
                        if (poll(&p, 1, 0) <= 0)
                                continue;
                        pthread_mutex_unlock(&s->lock);
                        _cleanup_(vs_error_freep) VsError *e = NULL;
                        r = send_cancel(s, cancel_fd, id, &e);
                        pthread_mutex_lock(&s->lock);
                        if (r < 0 && !w.done)
                                fail_one(&w, r, e);
                        continue;
                }
                s->reading = true;
                pthread_mutex_unlock(&s->lock);
                JsonlMsg m = JSONL_MSG_INIT;
                _cleanup_(vs_error_freep) VsError *e = NULL;
                r = read_msg(s, deadline, cancel_fd, id, &m, &e);
                pthread_mutex_lock(&s->lock);
                s->reading = false;
                if (r == -ETIMEDOUT) {
                        if (!w.done) /* our own deadline: the others read on */
                                fail_one(&w, r, e);
                } else if (r < 0)
                        fail_all(s, r, e);
                else
                        hand_on(s, &m);
                pthread_cond_broadcast(&s->cond);
        }
        VsSessionWait **p = &s->waits;
        while (*p != &w)
                p = &(*p)->next;
        *p = w.next;
        pthread_mutex_unlock(&s->lock);
        if (w.r < 0) {
                if (err && w.err) {
                        vs_error_free(*err);
                        *err = TAKE_PTR(w.err);
                }
                vs_error_free(w.err);
                return w.r;
        }
        *ret = w.msg;
        return 0;
}

int session_watch_git(VsSession *s, VsGitRepos *base, char *const *roots, char *const *ro, char *const *sealed) {
        char **copy = strv_copy(roots), **ro_copy = strv_copy(ro), **sealed_copy = strv_copy(sealed);
        if (!copy || !ro_copy || !sealed_copy) {
                strv_free(copy);
                strv_free(ro_copy);
                strv_free(sealed_copy);
                git_repos_done(base);
                free(base);
                return -ENOMEM;
        }
        s->git_base = base;
        s->git_roots = copy;
        s->git_ro = ro_copy;
        s->git_sealed = sealed_copy;
        return 0;
}

/* Whether the jail could have made g: where it writes, not in what it
 * sees sealed (as the daemon's git-watch.c). */
static bool could_write(const char *dir, void *ud) {
        const VsSession *s = ud;
        return path_jail_could_write(dir, s->git_roots, s->git_ro, s->git_sealed);
}

static bool jail_could_make(const VsSession *s, const VsGitRepo *g) {
        return could_write(g->dir, (void *)s);
}

/* git_links_put_aside's before: the jail first, as for a repository. */
static void stop_for_link(void *ud) {
        VsSession *s = ud;
        __atomic_store_n(&s->ended_why,
                         "a call beside this one put its own entry in place of a protected symlink; the jail was "
                         "ended and the entry put aside (that call's host_run_files names it); run this call again",
                         __ATOMIC_RELEASE);
        session_stop(s);
}

int session_jail_pids(const VsSession *s, pid_t **ret) {
        *ret = NULL;
        if (!s->own_pid_ns || !s->sandboxed)
                return -EOPNOTSUPP;
        return proc_tree_pids(__atomic_load_n(&s->proc.pid, __ATOMIC_ACQUIRE), ret, NULL);
}

bool session_worker_alive(const VsSession *s) {
        return __atomic_load_n(&s->proc.pid, __ATOMIC_ACQUIRE) > 0;
}

void session_stop(VsSession *s) {
        if (session_worker_alive(s) && !s->local && s->proc.fd >= 0) {
                shutdown(s->proc.fd, SHUT_WR);
                wait_exit(s);
        }
        kill_worker(s);
}

int session_git_sweep(VsSession *s, char ***paths) {
        if (!s->git_base)
                return 0;
        /* One sweep at a time: two calls ending together would both find
         * the repository, and the one whose rename lost would not list it. */
        if (s->locks_init)
                pthread_mutex_lock(&s->sweep_lock);
        VsGitRepos now = { 0 };
        for (char **r = s->git_roots; *r; r++)
                (void)git_scan(*r, &now);
        int n = 0;
        for (size_t i = 0; i < now.n; i++) {
                const VsGitRepo *g = &now.items[i];
                if (git_repos_has(s->git_base, g) || !jail_could_make(s, g))
                        continue;
                /* The jail first: while it runs it could put it back. */
                __atomic_store_n(&s->ended_why,
                                 "a call beside this one made a repository the host's git would use; the jail was "
                                 "ended and the repository put aside (that call's host_run_files names it); run "
                                 "this call again",
                                 __ATOMIC_RELEASE);
                session_stop(s);
                _cleanup_free_ char *moved = NULL;
                if (git_quarantine(g, NULL, &moved, NULL) < 0)
                        continue;
                n++;
                _cleanup_free_ char *what = g->kind == VS_GIT_BARE ? path_join(g->dir, "HEAD") : path_join(g->dir, ".git");
                if (paths && what)
                        (void)strv_extend(paths, what);
                if (paths)
                        (void)strv_extend(paths, moved);
        }
        git_repos_done(&now);
        _cleanup_strv_free_ char **links = NULL;
        n += (int)git_links_put_aside(s->git_base, NULL, could_write, stop_for_link, s, &links, NULL);
        for (char **m = links; paths && m && m[0] && m[1]; m += 2) {
                (void)strv_extend(paths, m[0]);
                if (*m[1])
                        (void)strv_extend(paths, m[1]);
        }
        if (s->locks_init)
                pthread_mutex_unlock(&s->sweep_lock);
        return n;
}

void session_end(VsSession *s) {
        if (!s)
                return;
        if (s->proc.fd >= 0 && s->have_ready) {
                _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                if (protocol_encode_shutdown_request(&out, session_next_id(s)) >= 0)
                        (void)!write_all(s->proc.fd, out.data, out.len);
                shutdown(s->proc.fd, SHUT_WR);
                wait_exit(s);
        }
        /* What a process the last call left behind made meanwhile (a
         * session whose worker was stopped and swept already: nothing ran
         * since). */
        bool ran = s->proc.pid > 0;
        worker_proc_kill(&s->proc);
        if (ran)
                (void)session_git_sweep(s, NULL);
        if (s->git_base) {
                git_repos_done(s->git_base);
                free(s->git_base);
        }
        strv_free(s->git_roots);
        strv_free(s->git_ro);
        strv_free(s->git_sealed);
        put_asides_free(s->put_aside);
        jsonl_reader_free(s->reader);
        strv_free(s->layers);
        strv_free(s->degraded);
        protect_snapshot_free(s->protect);
        if (s->protect_fd >= 0)
                close(s->protect_fd);
        if (s->locks_init) {
                pthread_mutex_destroy(&s->lock);
                pthread_mutex_destroy(&s->wlock);
                pthread_mutex_destroy(&s->sweep_lock);
                pthread_cond_destroy(&s->cond);
        }
        free(s);
}

int session_layers(const VsSession *s, char ***ret) {
        char **l = s->layers ? strv_copy(s->layers) : calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}
