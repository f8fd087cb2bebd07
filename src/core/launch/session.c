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
#include "path-util.h"
#include "proc-tree.h"
#include "protocol.h"
#include "handshake.h"
#include "strv.h"
#include "time-util.h"

uint64_t session_next_id(VsSession *s) {
        return ++s->next_id;
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
        for (int i = 0; i < 100 + 240 && s->proc.pid > 0; i++) {
                pid_t p = waitpid(s->proc.pid, NULL, WNOHANG);
                if (p == s->proc.pid) {
                        s->proc.pid = 0;
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
        worker_proc_kill(&s->proc);
        return r;
}

void session_watch_protected(VsSession *s, VsProtectSnapshot *snap) {
        protect_snapshot_free(s->protect);
        s->protect = snap;
        if (s->protect_fd >= 0)
                close(s->protect_fd);
        s->protect_fd = snap ? protect_snapshot_watch(snap, NULL) : -EBADF;
}

/* The worker's reply to a cancel read_msg() sent: a reply to another id
 * than the call's, with "found" (it may come after the call's own reply,
 * so during the next call). */
static bool is_cancel_reply(const VsSession *s, const JsonlMsg *m) {
        json_t *id = json_object_get(m->obj, "id");
        return json_is_integer(id) && (uint64_t)json_integer_value(id) != s->call_id &&
               json_object_get(m->obj, "found") && !json_object_get(m->obj, "event");
}

/* The owner asked to cancel the call in flight (s->cancel_fd): the
 * worker's cancel for it, whose reply is_cancel_reply() drops. */
static int send_cancel(VsSession *s, VsError **err) {
        uint64_t n;
        if (read(s->cancel_fd, &n, sizeof n) != sizeof n || !s->call_id)
                return 0; /* nothing asked after all */
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = protocol_encode_cancel_request(&out, session_next_id(s), s->call_id);
        if (r >= 0)
                r = write_all(s->proc.fd, out.data, out.len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return vs_error_set_kind(err, r, "worker_crashed", "sending to the worker: %s", strerror(-r));
        return 0;
}

static int read_msg(VsSession *s, int64_t deadline_us, JsonlMsg *ret, VsError **err) {
        for (;;) {
                int r = jsonl_reader_next(s->reader, ret, err);
                if (r == 0 && is_cancel_reply(s, ret)) {
                        jsonl_msg_done(ret);
                        continue;
                }
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
                                       { .fd = s->call_id ? s->cancel_fd : -1, .events = POLLIN } };
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
                if ((p[2].revents & POLLIN) && (r = send_cancel(s, err)) < 0)
                        return r;
                if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                ssize_t k = jsonl_reader_read_fd(s->reader, s->proc.fd);
                if (k == -EAGAIN || k == -EINTR)
                        continue;
                if (k < 0)
                        return vs_error_set_kind(err, (int)k, "worker_crashed", "reading from the worker: %s", strerror((int)-k));
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
        s->proc.fd = s->proc.stderr_fd = s->protect_fd = s->cancel_fd = -EBADF;
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
                r = read_msg(s, deadline, &m, err);
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

int session_call(VsSession *s, const StrBuf *request, uint64_t timeout_ms, JsonlMsg *ret, VsError **err) {
        int r = protect_changed(s, err);
        if (r < 0)
                return r;
        r = write_all(s->proc.fd, request->data, request->len);
        if (r < 0)
                return vs_error_set_kind(err, r, "worker_crashed", "sending to the worker: %s", strerror(-r));
        int64_t deadline = timeout_ms ? (int64_t)(now_us() + timeout_ms * 1000u) : 0;
        s->call_id = s->next_id; /* the request's, from session_next_id() */
        r = read_msg(s, deadline, ret, err);
        s->call_id = 0;
        return r;
}

int session_watch_git(VsSession *s, VsGitRepos *base, char *const *roots) {
        char **copy = strv_copy(roots);
        if (!copy) {
                git_repos_done(base);
                free(base);
                return -ENOMEM;
        }
        s->git_base = base;
        s->git_roots = copy;
        return 0;
}

int session_jail_pids(const VsSession *s, pid_t **ret) {
        *ret = NULL;
        if (!s->own_pid_ns || !s->sandboxed)
                return -EOPNOTSUPP;
        return proc_tree_pids(s->proc.pid, ret, NULL);
}

void session_stop(VsSession *s) {
        if (s->proc.pid > 0 && !s->local && s->proc.fd >= 0) {
                shutdown(s->proc.fd, SHUT_WR);
                wait_exit(s);
        }
        worker_proc_kill(&s->proc);
}

int session_git_sweep(VsSession *s, char ***paths) {
        if (!s->git_base)
                return 0;
        VsGitRepos now = { 0 };
        for (char **r = s->git_roots; *r; r++)
                (void)git_scan(*r, &now);
        int n = 0;
        for (size_t i = 0; i < now.n; i++) {
                const VsGitRepo *g = &now.items[i];
                if (git_repos_has(s->git_base, g))
                        continue;
                /* The jail first: while it runs it could put it back. */
                session_stop(s);
                _cleanup_free_ char *moved = NULL;
                if (git_quarantine(g, &moved, NULL) < 0)
                        continue;
                n++;
                _cleanup_free_ char *what = g->kind == VS_GIT_BARE ? path_join(g->dir, "HEAD") : path_join(g->dir, ".git");
                if (paths && what)
                        (void)strv_extend(paths, what);
                if (paths)
                        (void)strv_extend(paths, moved);
        }
        git_repos_done(&now);
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
        jsonl_reader_free(s->reader);
        strv_free(s->layers);
        strv_free(s->degraded);
        protect_snapshot_free(s->protect);
        if (s->protect_fd >= 0)
                close(s->protect_fd);
        free(s);
}

int session_layers(const VsSession *s, char ***ret) {
        char **l = s->layers ? strv_copy(s->layers) : calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}
