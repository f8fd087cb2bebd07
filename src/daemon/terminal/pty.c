/* SPDX-License-Identifier: MIT */
/* terminal_open: an interactive PTY on the host, for unsandboxed
 * workspaces. A sandboxed workspace's terminal runs in its jail instead
 * (pty-jail.c), never on the host. The session belongs to the connection
 * that opened it: input, resize and close arrive there as messages, output
 * and the exit status leave there as events. */
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "audit.h"
#include "cgroup.h"
#include "log.h"
#include "pty-jail.h"
#include "spawn-util.h"
#include "request.h"
#include "server.h"
#include "strv.h"
#include "terminal.h"
#include "workspace.h"

#define PTY_INPUT_MAX (1u << 20)
/* After the reap, how long the output may take to end (the worker's
 * SESSION_DRAIN_GRACE_US): longer, something the shell left behind holds
 * the terminal, and the terminal ends without waiting for it. */
#define PTY_DRAIN_GRACE_MS 100
/* Reads of the master at the end of the grace: what a job that keeps
 * writing adds meanwhile does not hold the end back. */
#define PTY_DRAIN_READS 16

typedef struct PtySession PtySession;
struct PtySession {
        PtySession *next;
        Client *client; /* NULL once the client is gone */
        uint64_t id;
        int master;
        int held;       /* an open of the slave of the daemon's own, until the reap */
        pid_t pid;
        uv_poll_t poll;
        uv_timer_t grace; /* from the reap to the end of the output */
        bool poll_init;
        unsigned handles; /* poll and grace: freed when both are closed */
        StrBuf in;      /* input the PTY did not take yet */
        bool eof, reaped, paused, closed;
        int status;
        /* For its audit line: who opened it, where, when. */
        char *workspace;
        uid_t uid;
        pid_t client_pid;
        uint64_t t0_us;
};

static PtySession *all_ptys;

static void on_pty_closed(uv_handle_t *h) {
        PtySession *p = h->data;
        if (--p->handles > 0)
                return;
        strbuf_done(&p->in);
        free(p->workspace);
        free(p);
}

static void pty_unlink(PtySession *p) {
        for (PtySession **pp = &all_ptys; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
}

/* Frees p once the master is closed and the child reaped. */
static void pty_maybe_free(PtySession *p) {
        if (!p->closed || !p->reaped)
                return;
        pty_unlink(p);
        if (p->poll_init) {
                uv_close((uv_handle_t *)&p->grace, on_pty_closed);
                uv_close((uv_handle_t *)&p->poll, on_pty_closed);
        } else {
                p->handles = 1;
                on_pty_closed((uv_handle_t *)&p->poll);
        }
}

/* The shell is reaped and its output drained: the audit line, and the
 * event for the client that opened it (when still there). Once. */
static void pty_send_exit(PtySession *p) {
        int code = WIFSIGNALED(p->status) ? 128 + WTERMSIG(p->status) : WEXITSTATUS(p->status);
        int sig = WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0;
        json_t *target = json_pack("{s:I,s:i,s:i}", "pty", (json_int_t)p->id, "exit_code", code, "signal", sig);
        AuditRecord a = {
                .uid = p->uid,
                .pid = p->client_pid,
                .workspace = p->workspace,
                .tool = "terminal_exit",
                .target = target,
                .outcome = "ok",
                .duration_ms = (now_us() - p->t0_us) / 1000,
        };
        audit_write(&a);
        json_decref(target);
        if (!p->client)
                return;
        client_send_json(p->client,
                         json_pack("{s:s,s:I,s:i,s:i}", "event", "terminal_exit", "pty", (json_int_t)p->id, "exit_code",
                                   code, "signal", sig),
                         NULL, 0);
        client_unref(TAKE_PTR(p->client));
}

static void pty_close_master(PtySession *p) {
        p->held = safe_close(p->held);
        if (p->closed)
                return;
        p->closed = true;
        if (p->poll_init)
                uv_poll_stop(&p->poll);
        p->master = safe_close(p->master);
}

static void update_poll(PtySession *p);

/* One read of the master, its output sent: > 0 read, 0 nothing now
 * (EAGAIN), < 0 the end of the output (EIO: no open of the slave left). */
static int pty_read(PtySession *p) {
        char buf[65536];
        ssize_t k = read(p->master, buf, sizeof buf);
        if (k > 0) {
                if (p->client)
                        client_send_json(p->client,
                                         json_pack("{s:s,s:I}", "event", "terminal_output", "pty", (json_int_t)p->id),
                                         buf, (size_t)k);
                return 1;
        }
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        return -1;
}

static void pty_end(PtySession *p) {
        p->eof = true;
        uv_timer_stop(&p->grace);
        pty_close_master(p);
        if (p->reaped)
                pty_send_exit(p);
        pty_maybe_free(p);
}

static void on_pty_event(uv_poll_t *h, int status, int events) {
        PtySession *p = h->data;
        if (events & UV_WRITABLE && p->in.len) {
                ssize_t k = write(p->master, p->in.data, p->in.len);
                if (k > 0)
                        strbuf_consume(&p->in, (size_t)k);
        }
        if ((events & (UV_READABLE | UV_DISCONNECT) || status < 0) && pty_read(p) < 0)
                return pty_end(p);
        update_poll(p);
}

/* The grace is over and the master still gives no EIO: a job the shell
 * left (nohup, a daemon) holds the terminal. What is there is sent and the
 * terminal ends now with the shell's status, not when that job exits
 * (maybe never); closing the master hangs the terminal up for the job. */
static void on_pty_grace(uv_timer_t *t) {
        PtySession *p = t->data;
        if (p->closed)
                return;
        for (unsigned i = 0; i < PTY_DRAIN_READS && pty_read(p) > 0; i++)
                ;
        pty_end(p);
}

static void update_poll(PtySession *p) {
        if (p->closed)
                return;
        int ev = 0;
        /* Backpressure: a client that does not read stops the output. */
        p->paused = p->client && p->client->out_bytes > CLIENT_OUT_HIGH;
        if (!p->paused)
                ev |= UV_READABLE;
        if (p->in.len)
                ev |= UV_WRITABLE;
        if (ev)
                uv_poll_start(&p->poll, ev, on_pty_event);
        else
                uv_poll_stop(&p->poll);
}

void pty_resume(Client *c) {
        jail_pty_resume(c);
        for (PtySession *p = all_ptys; p; p = p->next)
                if (p->client == c && p->paused && c->out_bytes < CLIENT_OUT_LOW)
                        update_poll(p);
}

static bool pty_reaped(Server *srv, pid_t pid, int status) {
        for (PtySession *p = all_ptys; p; p = p->next)
                if (p->pid == pid) {
                        p->reaped = true;
                        p->status = status;
                        p->pid = 0;
                        /* What it wrote is in the master now: the slave may close. */
                        p->held = safe_close(p->held);
                        if (p->eof || p->closed)
                                pty_send_exit(p);
                        else
                                /* Drain what the shell wrote last: EIO follows, or the grace ends it. */
                                uv_timer_start(&p->grace, on_pty_grace, PTY_DRAIN_GRACE_MS, 0);
                        pty_maybe_free(p);
                        return true;
                }
        return false;
}

void ptys_reap(Server *srv) {
        for (bool again = true; again;) {
                again = false;
                for (PtySession *p = all_ptys; p; p = p->next) {
                        int status;
                        pid_t pid = p->pid;
                        if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
                                pty_reaped(srv, pid, status);
                                again = true;
                                break;
                        }
                }
        }
}

static void pty_kill(PtySession *p) {
        if (p->pid > 0) {
                kill(-p->pid, SIGHUP);
                kill(-p->pid, SIGKILL);
                kill(p->pid, SIGKILL);
        }
}

void pty_close_all(Client *c) {
        jail_pty_close_all(c);
        for (PtySession *p = all_ptys; p; p = p->next)
                if (p->client == c) {
                        client_unref(TAKE_PTR(p->client));
                        pty_kill(p);
                        pty_close_master(p);
                }
        /* Freed as their children are reaped. */
}

/* The shell's start, made before the fork: the daemon has other threads
 * (libuv's pool), whose locks a fork copies as they are, so the child
 * (pty_child) only makes async-signal-safe system calls (spawn-util.h). */
typedef struct PtyChild {
        int slave;          /* the terminal, the daemon's own open (held until the reap) */
        int cg;             /* borrowed: the cgroup's cgroup.procs, or < 0 */
        const char *cwd;    /* borrowed */
        const char *shell;  /* borrowed: run "-i" when there is no argv */
        char **envp;        /* the daemon's environment, then TERM, PWD and the client's */
        char **argv;        /* the client's argv, or NULL */
        char **paths;       /* where execvp() would look for argv[0], in envp's PATH */
        char **sh_argv;     /* "/bin/sh" PATH ARG...: a file without an exec format, as execvp() runs it */
} PtyChild;

static void pty_child_done(PtyChild *c) {
        safe_close(c->slave);
        strv_free(c->envp);
        strv_free(c->argv);
        strv_free(c->paths);
        free(c->sh_argv); /* borrows argv's strings */
}

/* What execvp() tries, in its order: name itself when it has a slash, else
 * name in each directory of PATH (glibc's default without one; an empty
 * entry is the working directory). */
static int exec_paths(const char *name, char *const *env, char ***ret) {
        _cleanup_(strv_freep) char **l = NULL;
        const char *path = strv_env_get(env, "PATH");
        if (strchr(name, '/'))
                path = NULL;
        else if (!path)
                path = "/bin:/usr/bin";
        int r = 0;
        if (!path)
                r = strv_extend(&l, name);
        for (const char *s = path; r >= 0 && s;) {
                const char *e = strchrnul(s, ':');
                r = e == s ? strv_extend(&l, name) : strv_extendf(&l, "%.*s/%s", (int)(e - s), s, name);
                s = *e ? e + 1 : NULL;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

static int pty_child_prepare(PtyChild *c, const ApiTerminalOpenArgs *a, const char *cwd) {
        extern char **environ;
        c->envp = strv_copy(environ);
        if (!c->envp)
                return -ENOMEM;
        int r = strv_env_set(&c->envp, "TERM", a->term ? a->term : "xterm-256color");
        if (r >= 0)
                r = strv_env_set(&c->envp, "PWD", cwd);
        const char *k;
        json_t *v;
        json_object_foreach(a->env, k, v) if (r >= 0 && *k && !strchr(k, '=')) r = strv_env_set(&c->envp, k, json_string_value(v));
        if (r < 0 || !a->argv || !a->argv[0])
                return r;
        if (!(c->argv = strv_copy(a->argv)) || exec_paths(c->argv[0], c->envp, &c->paths) < 0)
                return -ENOMEM;
        size_t n = strv_length(c->argv);
        c->sh_argv = calloc(n + 2, sizeof(char *));
        if (!c->sh_argv)
                return -ENOMEM;
        c->sh_argv[0] = (char *)"/bin/sh";
        for (size_t i = 1; i < n; i++)
                c->sh_argv[i + 1] = c->argv[i];
        return 0;
}

/* A terminal pair as openpty() makes it, both sides O_CLOEXEC. */
static int pty_pair(const struct winsize *wsz, int *ret_master, int *ret_slave) {
        _cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        char name[64];
        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
                return -errno;
        int r = ptsname_r(m, name, sizeof name);
        if (r)
                return -r;
        int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (s < 0)
                return -errno;
        (void)ioctl(s, TIOCSWINSZ, wsz);
        *ret_master = TAKE_FD(m);
        *ret_slave = s;
        return 0;
}

/* The child of spawn_fork(), signals already at their defaults: what
 * forkpty() and login_tty() did (a session of its own with the terminal
 * as its controlling one, on fds 0-2), then the cgroup, the directory and
 * the exec, each a plain system call. 1 when the terminal cannot be set
 * up (as forkpty's child), 126 for the cgroup or the directory, 127 when
 * nothing could be run. */
_noreturn_ static void pty_child(PtyChild *c) {
        (void)setsid();
        if (ioctl(c->slave, TIOCSCTTY, 0) < 0)
                _exit(1);
        for (int fd = 0; fd < 3; fd++)
                if (dup2(c->slave, fd) < 0)
                        _exit(1);
        if (c->slave > 2)
                close(c->slave);
        if (c->cg >= 0 && (write(c->cg, "0", 1) != 1 || close(c->cg) < 0))
                _exit(126);
        spawn_restore_nofile();
        if (chdir(c->cwd) < 0)
                _exit(126);
        if (!c->argv) {
                char *const sh[] = { (char *)c->shell, (char *)"-i", NULL };
                execve(c->shell, sh, c->envp);
                _exit(127);
        }
        /* execvp()'s walk: past a name that is not there or not ours to
         * run, stopped by any other error. */
        for (char **p = c->paths; *p; p++) {
                execve(*p, c->argv, c->envp);
                if (errno == ENOEXEC) {
                        c->sh_argv[1] = *p;
                        execve("/bin/sh", c->sh_argv, c->envp);
                }
                if (errno != EACCES && errno != ENOENT && errno != ESTALE && errno != ENOTDIR && errno != ENODEV &&
                    errno != ETIMEDOUT)
                        break;
        }
        _exit(127);
}

void pty_open(Request *r, json_t *obj) {
        Workspace *ws = r->ws;
        r->target = json_string("pty");
        if (ws->state == WS_REFUSED)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_CONFIG_INVALID, vs_error_message(ws->config_error));
        if (ws->state == WS_SANDBOXED)
                return jail_pty_open(r, obj);
        ApiTerminalOpenArgs a = { 0 };
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (json_dispatch(obj, api_terminal_open_table, &a, &err) < 0)
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_BAD_REQUEST, vs_error_message(err));
        struct winsize wsz = {
                .ws_col = a.cols && a.cols < 10000 ? (unsigned short)a.cols : 80,
                .ws_row = a.rows && a.rows < 10000 ? (unsigned short)a.rows : 24,
        };
        const char *shell = NULL;
        struct passwd *pw = getpwuid(geteuid());
        /* Service accounts have nologin/false as shell: use sh for them. */
        if (pw && pw->pw_shell && pw->pw_shell[0] == '/' && access(pw->pw_shell, X_OK) == 0 &&
            !strstr(pw->pw_shell, "nologin") && !streq(pw->pw_shell, "/bin/false") &&
            !streq(pw->pw_shell, "/usr/bin/false"))
                shell = pw->pw_shell;
        if (!shell)
                shell = "/bin/sh";
        PtySession *p = calloc(1, sizeof *p);
        if (!p) {
                json_dispatch_done(api_terminal_open_table, &a);
                return request_finish(r, NULL, NULL, NULL, 0, API_ERROR_INTERNAL, "out of memory");
        }
        /* A subdirectory the client named is the shell's cwd. */
        const char *cwd = r->dir ? r->dir : ws->path;
        /* Ended with the daemon like an unsandboxed worker (its group). */
        _cleanup_close_ int cg = cgroup_host_procs_fd(r->srv);
        _cleanup_(pty_child_done) PtyChild child = { .slave = -EBADF, .cg = cg, .cwd = cwd, .shell = shell };
        _cleanup_close_ int master = -EBADF;
        int k = pty_child_prepare(&child, &a, cwd);
        if (k == 0)
                k = pty_pair(&wsz, &master, &child.slave);
        json_dispatch_done(api_terminal_open_table, &a);
        pid_t pid = k < 0 ? k : spawn_fork(0);
        if (pid == 0)
                pty_child(&child);
        if (pid < 0) {
                free(p);
                char buf[256];
                snprintf(buf, sizeof buf, "cannot open a PTY: %s", strerror((int)-pid));
                return request_finish(r, NULL, NULL, NULL, 0, pid == -ENOMEM ? API_ERROR_INTERNAL : API_ERROR_IO, buf);
        }
        fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        /* The master reads EIO whenever no open of the slave is left, also
         * for a while as the shell runs (it closed its terminal and opens
         * /dev/tty later): the daemon's own open of it, the one the child
         * got its terminal from, is held until the reap, so EIO means the
         * end. */
        p->held = TAKE_FD(child.slave);
        p->master = TAKE_FD(master);
        p->pid = pid;
        p->id = ++r->srv->next_pty_id;
        p->client = r->client;
        client_ref(p->client);
        p->workspace = strdup(ws->path); /* NULL (out of memory): audited without it */
        p->uid = r->client->uid;
        p->client_pid = r->client->pid;
        p->t0_us = now_us();
        uv_poll_init(r->srv->loop, &p->poll, p->master);
        uv_timer_init(r->srv->loop, &p->grace);
        p->poll.data = p;
        p->grace.data = p;
        p->handles = 2;
        p->poll_init = true;
        p->next = all_ptys;
        all_ptys = p;
        update_poll(p);
        log_info("workspace %s: PTY %llu (pid %d) for client pid %d", ws->path, (unsigned long long)p->id, (int)pid,
                 (int)r->client->pid);
        audit_target_pty(r, p->id);
        request_finish(r, NULL, json_pack("{s:I,s:i,s:s}", "pty", (json_int_t)p->id, "pid", (int)pid, "shell", shell),
                       NULL, 0, API_OK, NULL);
}

void pty_message(Client *c, json_t *id, const char *tool, json_t *obj, JsonlMsg *m) {
        if (jail_pty_message(c, id, tool, obj, m))
                return;
        json_t *jp = json_object_get(obj, "pty");
        PtySession *p = NULL;
        if (json_is_integer(jp))
                for (PtySession *q = all_ptys; q; q = q->next)
                        if (q->client == c && (json_int_t)q->id == json_integer_value(jp) && !q->closed)
                                p = q;
        ApiError code = API_OK;
        const char *msg = NULL;
        if (!p) {
                code = API_ERROR_NOT_FOUND;
                msg = "no such open terminal on this connection";
        } else if (streq(tool, "terminal_input")) {
                const char *data = json_string_value(json_object_get(obj, "data"));
                size_t len = data ? strlen(data) : 0;
                if (m->has_raw) {
                        data = m->raw;
                        len = m->raw_len;
                }
                if (p->in.len + len > PTY_INPUT_MAX) {
                        code = API_ERROR_TOO_LARGE;
                        msg = "the terminal is not taking input that fast";
                } else if (len) {
                        ssize_t k = p->in.len ? 0 : write(p->master, data, len);
                        if (k < 0)
                                k = 0;
                        if ((size_t)k < len && strbuf_append(&p->in, data + k, len - (size_t)k) < 0) {
                                code = API_ERROR_INTERNAL;
                                msg = "out of memory";
                        }
                        update_poll(p);
                }
        } else if (streq(tool, "terminal_resize")) {
                json_int_t cols = json_integer_value(json_object_get(obj, "cols"));
                json_int_t rows = json_integer_value(json_object_get(obj, "rows"));
                struct winsize wsz = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
                if (cols <= 0 || rows <= 0 || cols > 10000 || rows > 10000) {
                        code = API_ERROR_BAD_REQUEST;
                        msg = "\"cols\" and \"rows\" must be 1..10000";
                } else if (ioctl(p->master, TIOCSWINSZ, &wsz) < 0) {
                        code = API_ERROR_IO;
                        msg = "resizing the terminal failed";
                }
        } else {
                pty_kill(p);
        }
        if (!id)
                return;
        json_t *o = json_pack("{s:O,s:b}", "id", id, "ok", !code);
        if (o && code)
                json_object_set_new(o, "error", api_error_json(code, msg));
        client_send_json(c, o, NULL, 0);
}
