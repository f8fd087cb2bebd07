/* SPDX-License-Identifier: MIT */
/* Commands: a child process per command in a process group of its own
 * (child.c), stdin fed from the request's raw bytes, stdout/stderr captured
 * with a head+tail cap, timeouts and cancel by SIGKILL to the group. Also
 * the set-up a command and a session share (exec_prepare). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "fd-util.h"
#include "macro.h"
#include "strv.h"
#include "worker.h"

#define DEFAULT_TIMEOUT_MS 120000u
#define DEFAULT_MAX_OUTPUT (1024u * 1024u)

/* A request's value under init's ceiling (0: none asked / no ceiling). */
static uint64_t exec_ceiling(uint64_t asked, uint64_t ceiling, uint64_t fallback) {
        if (ceiling)
                return asked ? MIN(asked, ceiling) : ceiling;
        return asked ? asked : fallback;
}
/* Both streams and their markers must fit one raw payload. */
#define MAX_OUTPUT_CAP (JSONL_MAX_RAW / 2 - 64)
#define READ_CHUNK (64u * 1024u)

typedef struct Capture {
        int fd;          /* read end; -EBADF once closed */
        char *data;      /* up to max bytes: everything, or head + tail ring */
        size_t len;
        size_t cap;
        size_t max;
        bool overflow;
        size_t ring_w;   /* next write offset inside the tail ring */
        uint64_t total;
} Capture;

struct Exec {
        Exec *next;
        uint64_t id;
        Child child;
        int stdin_fd;
        char *stdin_data;
        size_t stdin_len, stdin_off;
        Capture out, err;
        bool cancelled;
};

/* ---- output capture ---- */

static int capture_feed(Capture *c, const char *p, size_t n) {
        c->total += n;
        if (!c->overflow) {
                if (c->len + n <= c->max) {
                        if (c->len + n > c->cap) {
                                size_t nc = MAX(c->cap * 2, c->len + n);
                                nc = MIN(MAX(nc, (size_t) 4096), c->max);
                                char *d = realloc(c->data, nc);
                                if (!d)
                                        return -ENOMEM;
                                c->data = d;
                                c->cap = nc;
                        }
                        memcpy(c->data + c->len, p, n);
                        c->len += n;
                        return 0;
                }
                /* Past max: from now on keep the first half and a ring
                 * of the last half. */
                if (c->cap < c->max) {
                        char *d = realloc(c->data, c->max ? c->max : 1);
                        if (!d)
                                return -ENOMEM;
                        c->data = d;
                        c->cap = c->max;
                }
                size_t m = c->max - c->len;
                memcpy(c->data + c->len, p, m);
                c->len = c->max;
                p += m;
                n -= m;
                c->overflow = true;
                c->ring_w = 0;
        }
        size_t head = c->max / 2, tail = c->max - head;
        if (tail == 0)
                return 0;
        if (n >= tail) {
                p += n - tail;
                n = tail;
        }
        char *ring = c->data + head;
        size_t first = MIN(n, tail - c->ring_w);
        memcpy(ring + c->ring_w, p, first);
        memcpy(ring, p + first, n - first);
        c->ring_w = (c->ring_w + n) % tail;
        return 0;
}

/* The kept bytes in order, with the marker when something was omitted.
 * Points into c->data when nothing was. */
static int capture_finish(Capture *c, StrBuf *tmp, const char **ret, size_t *ret_len) {
        if (!c->overflow) {
                *ret = c->data ? c->data : "";
                *ret_len = c->len;
                return 0;
        }
        size_t head = c->max / 2, tail = c->max - head;
        char *ring = c->data + head;
        int k;
        if ((k = strbuf_append(tmp, c->data, head)) < 0 ||
            (k = strbuf_appendf(tmp, "\n[... %llu bytes omitted ...]\n",
                                (unsigned long long) (c->total - c->max))) < 0 ||
            (k = strbuf_append(tmp, ring + c->ring_w, tail - c->ring_w)) < 0 ||
            (k = strbuf_append(tmp, ring, c->ring_w)) < 0)
                return k;
        *ret = tmp->data;
        *ret_len = tmp->len;
        return 0;
}

/* ---- lifecycle ---- */

static void exec_free(Exec *e) {
        if (!e)
                return;
        safe_close(e->stdin_fd);
        safe_close(e->out.fd);
        safe_close(e->err.fd);
        free(e->stdin_data);
        free(e->out.data);
        free(e->err.data);
        free(e);
}

static bool output_open(const Exec *e) {
        return e->out.fd >= 0 || e->err.fd >= 0;
}

static bool exec_done(const Exec *e) {
        return e->child.reaped && !output_open(e);
}

static int reply_unstarted(StrBuf *out, uint64_t id, int code, const char *fmt, const char *arg,
                           const char *why) {
        _cleanup_free_ char *msg = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        if (asprintf(&msg, fmt, arg, why) < 0)
                return -ENOMEM;
#pragma GCC diagnostic pop
        size_t n = strlen(msg);
        ProtocolExecReply r = {
                .exit_code = code,
                .stderr_len = n,
                .stderr_total = n,
        };
        return protocol_encode_exec_reply(out, id, &r, "", msg);
}

/* ---- what a command and a session share: the set-up, the child, the spawn ---- */

/* init env overridden and extended by the request's. Strings borrowed. */
static char **merge_env(char *const *base, char *const *add) {
        size_t nb = strv_length(base), na = strv_length(add), n = 0;
        char **l = calloc(nb + na + 1, sizeof(char *));
        if (!l)
                return NULL;
        for (size_t i = 0; i < nb; i++) {
                const char *eq = strchr(base[i], '=');
                size_t kl = eq ? (size_t) (eq - base[i]) : strlen(base[i]);
                bool overridden = false;
                for (size_t j = 0; j < na && !overridden; j++)
                        overridden = strncmp(add[j], base[i], kl) == 0 && add[j][kl] == '=';
                if (!overridden)
                        l[n++] = base[i];
        }
        for (size_t j = 0; j < na; j++)
                l[n++] = add[j];
        return l;
}

/* PATH lookup in the command's own environment, done before the clone so the
 * child only has to exec. Returns 0 and the path, or 126/127. */
static int find_program(const char *name, char *const *env, int cwd_fd, char **ret) {
        if (strchr(name, '/')) {
                *ret = strdup(name);
                return *ret ? 0 : -ENOMEM;
        }
        const char *path = strv_env_get(env, "PATH");
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        int found_noexec = 0;
        for (const char *s = path;; s++) {
                const char *e = strchrnul(s, ':');
                char *cand = NULL;
                if (asprintf(&cand, "%.*s%s%s", (int) (e - s), s, e == s ? "" : "/", name) < 0)
                        return -ENOMEM;
                struct stat st;
                if (fstatat(cwd_fd, cand, &st, 0) == 0 && S_ISREG(st.st_mode)) {
                        if (faccessat(cwd_fd, cand, X_OK, AT_EACCESS) == 0) {
                                *ret = cand;
                                return 0;
                        }
                        found_noexec = 1;
                }
                free(cand);
                if (!*e)
                        break;
                s = e;
        }
        return found_noexec ? 126 : 127;
}

void exec_prep_done(ExecPrep *x) {
        x->cwd_fd = safe_close(x->cwd_fd);
        x->envp = (free(x->envp), NULL);
        x->path = (free(x->path), NULL);
}

int exec_prepare(const Policy *p, const ExecDefaults *d, const char *cwd, char *const *env, const char *argv0,
                 ExecPrep *ret, VsError **err) {
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        int k = resolve_cwd(p, cwd, &x.cwd_fd, err);
        if (k < 0)
                return k;
        x.envp = merge_env(d->env, env);
        if (!x.envp)
                return vs_error_set(err, -ENOMEM, "out of memory");
        k = find_program(argv0, x.envp, x.cwd_fd, &x.path);
        if (k == -ENOMEM)
                return vs_error_set(err, k, "out of memory");
        if (k > 0)
                return k;
        *ret = x;
        x = (ExecPrep) EXEC_PREP_INIT;
        return 0;
}

int exec_start(Exec **list, const Policy *p, const ExecDefaults *d, json_t *obj, char *stdin_data,
               size_t stdin_len, StrBuf *out, VsError **err) {
        _cleanup_free_ char *sdata = stdin_data;
        ProtocolExecRequest req = {};
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        _cleanup_close_ int in_r = -EBADF, in_w = -EBADF, out_r = -EBADF, out_w = -EBADF, err_r = -EBADF,
                            err_w = -EBADF;
        int k, fds[2];
        Child child;

        k = protocol_decode_exec_request(obj, &req, err);
        if (k < 0)
                return k;
        k = exec_prepare(p, d, req.cwd, req.env, req.argv[0], &x, err);
        if (k < 0)
                goto finish;
        if (k > 0) {
                k = reply_unstarted(out, req.head.id, k, "vectora-worker: %s: %s\n", req.argv[0],
                                    k == 127 ? "command not found" : "Permission denied");
                goto finish;
        }

        if (pipe2(fds, O_CLOEXEC) < 0)
                goto fail_errno;
        out_r = fds[0], out_w = fds[1];
        if (pipe2(fds, O_CLOEXEC) < 0)
                goto fail_errno;
        err_r = fds[0], err_w = fds[1];
        if (sdata) {
                if (pipe2(fds, O_CLOEXEC) < 0)
                        goto fail_errno;
                in_r = fds[0], in_w = fds[1];
        } else {
                in_r = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (in_r < 0)
                        goto fail_errno;
        }

        /* The limits from init are ceilings: a request may ask for less,
         * never for more (the policy's timeout = 2 holds against a request
         * for 10, whoever sent it). */
        uint64_t timeout = exec_ceiling(req.timeout_ms, d->timeout_ms, DEFAULT_TIMEOUT_MS);
        uint64_t max = exec_ceiling(req.max_output, d->max_output, DEFAULT_MAX_OUTPUT);
        max = MIN(max, (uint64_t) MAX_OUTPUT_CAP);
        k = child_spawn(&x, d, req.argv, in_r, out_w, err_w, CHILD_GROUP, timeout, &child);
        if (k < 0) {
                child_spawn_error(err, k, req.argv[0]);
                goto finish;
        }
        if (k > 0) {
                k = reply_unstarted(out, req.head.id, k == ENOENT ? 127 : 126, "vectora-worker: %s: %s\n",
                                    req.argv[0], strerror(k));
                goto finish;
        }
        in_r = safe_close(in_r);
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);

        Exec *e = calloc(1, sizeof *e);
        if (!e) {
                child_kill(&child); /* reaped by the worker's loop */
                k = vs_error_set(err, -ENOMEM, "out of memory");
                goto finish;
        }
        *e = (Exec) {
                .id = req.head.id,
                .child = child,
                .stdin_fd = -EBADF,
                .out = { .fd = TAKE_FD(out_r), .max = (size_t) max },
                .err = { .fd = TAKE_FD(err_r), .max = (size_t) max },
        };
        (void) fd_set_nonblock(e->out.fd, true);
        (void) fd_set_nonblock(e->err.fd, true);
        if (sdata) {
                e->stdin_fd = TAKE_FD(in_w);
                (void) fd_set_nonblock(e->stdin_fd, true);
                e->stdin_data = TAKE_PTR(sdata);
                e->stdin_len = stdin_len;
        }
        /* Append: replies of equal commands keep request order. */
        Exec **tail = list;
        while (*tail)
                tail = &(*tail)->next;
        *tail = e;
        k = 0;
        goto finish;

fail_errno:
        k = negative_errno();
        vs_error_set(err, k, "cannot start %s: %s", req.argv[0], strerror(-k));
finish:
        protocol_exec_request_done(&req);
        return k;
}

size_t exec_count_fds(Exec *list) {
        size_t n = 0;
        for (Exec *e = list; e; e = e->next)
                n += 3;
        return n;
}

size_t exec_fill_poll(Exec *list, struct pollfd *fds) {
        size_t n = 0;
        for (Exec *e = list; e; e = e->next) {
                if (e->out.fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = e->out.fd, .events = POLLIN };
                if (e->err.fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = e->err.fd, .events = POLLIN };
                if (e->stdin_fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = e->stdin_fd, .events = POLLOUT };
        }
        return n;
}

static void drain(Capture *c) {
        char buf[READ_CHUNK];
        /* Bounded, so one chatty command cannot starve the others. */
        for (int i = 0; i < 16; i++) {
                ssize_t n = read(c->fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        c->fd = safe_close(c->fd);
                        return;
                }
                if (capture_feed(c, buf, (size_t) n) < 0) {
                        /* Out of memory: stop capturing, keep the command. */
                        c->fd = safe_close(c->fd);
                        return;
                }
        }
}

static void feed_stdin(Exec *e) {
        while (e->stdin_off < e->stdin_len) {
                ssize_t n = write(e->stdin_fd, e->stdin_data + e->stdin_off,
                                  MIN(e->stdin_len - e->stdin_off, (size_t) 1 << 20));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0)
                        break; /* EPIPE: the command does not read its stdin */
                e->stdin_off += (size_t) n;
        }
        e->stdin_fd = safe_close(e->stdin_fd);
        e->stdin_data = (free(e->stdin_data), NULL);
}

static void send_reply(Exec *e, StrBuf *out) {
        _cleanup_strbuf_ StrBuf t1 = STRBUF_INIT, t2 = STRBUF_INIT;
        const char *so = "", *se = "";
        size_t so_len = 0, se_len = 0;
        ProtocolExecReply r = {
                .timed_out = e->child.timed_out,
                .cancelled = e->cancelled,
                .stdout_total = e->out.total,
                .stderr_total = e->err.total,
                .duration_us = e->child.reaped_us - e->child.start_us,
        };
        int sig;
        r.exit_code = child_exit_code(&e->child, &sig);
        r.signal = sig;
        if (capture_finish(&e->out, &t1, &so, &so_len) < 0 || capture_finish(&e->err, &t2, &se, &se_len) < 0) {
                so_len = se_len = 0;
                so = se = "";
        }
        r.stdout_len = so_len;
        r.stderr_len = se_len;
        if (protocol_encode_exec_reply(out, e->id, &r, so, se) < 0)
                (void) protocol_encode_error(out, true, e->id, PROTOCOL_ERROR_IO, "cannot encode the reply");
}

void exec_process(Exec **list, struct pollfd *fds, size_t n, StrBuf *out) {
        for (size_t i = 0; i < n; i++) {
                if (!fds[i].revents)
                        continue;
                for (Exec *e = *list; e; e = e->next) {
                        if (fds[i].fd == e->out.fd)
                                drain(&e->out);
                        else if (fds[i].fd == e->err.fd)
                                drain(&e->err);
                        else if (fds[i].fd == e->stdin_fd)
                                feed_stdin(e);
                        else
                                continue;
                        break;
                }
        }

        uint64_t now = now_us();
        for (Exec **ep = list; *ep;) {
                Exec *e = *ep;
                (void) child_expire(&e->child, now);
                if (output_open(e) && child_grace_over(&e->child, now)) {
                        /* Something left behind still holds the pipes:
                         * keep what arrived, stop waiting. */
                        if (e->out.fd >= 0)
                                drain(&e->out);
                        if (e->err.fd >= 0)
                                drain(&e->err);
                        e->out.fd = safe_close(e->out.fd);
                        e->err.fd = safe_close(e->err.fd);
                }
                if (exec_done(e)) {
                        e->stdin_fd = safe_close(e->stdin_fd);
                        send_reply(e, out);
                        *ep = e->next;
                        exec_free(e);
                        continue;
                }
                ep = &e->next;
        }
}

int exec_next_timeout_ms(Exec *list) {
        uint64_t best = UINT64_MAX;
        for (Exec *e = list; e; e = e->next)
                best = MIN(best, child_next_us(&e->child, output_open(e)));
        return child_ms_until(best, now_us());
}

bool exec_reaped(Exec *list, pid_t pid, int status) {
        for (Exec *e = list; e; e = e->next)
                if (child_reaped(&e->child, pid, status))
                        return true;
        return false;
}

bool exec_cancel(Exec *list, uint64_t id) {
        for (Exec *e = list; e; e = e->next)
                if (e->id == id) {
                        if (!exec_done(e)) {
                                e->cancelled = true;
                                child_kill(&e->child);
                        }
                        return true;
                }
        return false;
}

bool exec_id_in_use(Exec *list, uint64_t id) {
        for (Exec *e = list; e; e = e->next)
                if (e->id == id)
                        return true;
        return false;
}

void exec_kill_all(Exec **list) {
        for (Exec *e = *list; e; e = e->next)
                child_kill(&e->child);
        while (*list) {
                Exec *e = *list;
                child_wait(&e->child);
                *list = e->next;
                exec_free(e);
        }
}
