/* SPDX-License-Identifier: MIT */
/* The CLI's daemon client: each verb is one daemon API call
 * (docs/protocol.md, "Daemon API") over the unix socket; `shell` attaches a PTY. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>

#include <jansson.h>

#include "cli.h"
#include "client.h"
#include "fd-util.h"
#include "jsonl.h"
#include "strv.h"

static int connect_daemon(const char *path, int *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path)
                return cli_fail(EXIT_REFUSED, "socket path too long: %s", path);
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return cli_fail(EXIT_REFUSED, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int e = errno;
                safe_close(fd);
                return cli_fail(EXIT_REFUSED,
                                "cannot reach vectora-sandboxd at %s: %s; start the daemon, or unset VECTORA_SANDBOX_SOCKET to run embedded",
                                path, strerror(e));
        }
        *ret = fd;
        return 0;
}

/* The workspace as the absolute path the daemon wants. */
static char *abs_workspace(const char *ws) {
        char buf[PATH_MAX];
        if (realpath(ws ? ws : ".", buf))
                return strdup(buf);
        return NULL;
}

static int send_msg(int fd, json_t *obj, const void *raw, size_t raw_len) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = jsonl_encode(obj, raw, raw_len, &out);
        if (r < 0)
                return r;
        return write_all(fd, out.data, out.len);
}

/* Reads the next message that is not a PTY event (or any message when
 * events is true). */
static int recv_msg(int fd, JsonlReader *rd, JsonlMsg *ret) {
        for (;;) {
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = jsonl_reader_next(rd, ret, &err);
                if (r == 0)
                        return 0;
                if (r != -EAGAIN)
                        return r;
                ssize_t k = jsonl_reader_read_fd(rd, fd);
                if (k == -EINTR || k == -EAGAIN)
                        continue;
                if (k < 0)
                        return (int)k;
                if (k == 0)
                        return -ECONNRESET;
        }
}

/* One request, one reply. On success *ret holds the reply (ok or not). */
static int call(const char *sock, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret) {
        int fd = -EBADF;
        int r = connect_daemon(sock, &fd);
        if (r)
                return r;
        _cleanup_close_ int cfd = fd;
        _cleanup_(jsonl_reader_freep) JsonlReader *rd = NULL;
        if (jsonl_reader_new(&rd) < 0)
                return cli_fail(EXIT_REFUSED, "out of memory");
        json_object_set_new(req, "id", json_integer(1));
        r = send_msg(cfd, req, raw, raw_len);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "sending to vectora-sandboxd: %s", strerror(-r));
        r = recv_msg(cfd, rd, ret);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "vectora-sandboxd did not answer: %s", strerror(-r));
        return 0;
}

/* Prints a failed reply; returns the exit status for it. */
static int reply_error(json_t *reply, const char *verb) {
        json_t *e = json_object_get(reply, "error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        bool nothing_ran = !code || !streq(code, "not_found") || !strncmp(verb, "exec", 4);
        return cli_fail(nothing_ran ? EXIT_REFUSED : 1, "%s: %s: %s", verb, code ? code : "error", msg ? msg : "failed");
}

static void warn_degraded(json_t *reply) {
        json_t *d = json_object_get(json_object_get(reply, "sandbox"), "degraded");
        size_t i;
        json_t *v;
        json_array_foreach(d, i, v) fprintf(stderr, "vectora-sandbox: warning: running degraded: %s\n", json_string_value(v));
}

static json_t *request(const char *tool, const char *ws) {
        json_t *o = json_pack("{s:s}", "tool", tool);
        if (o && ws) {
                _cleanup_free_ char *abs = abs_workspace(ws);
                if (!abs) {
                        json_decref(o);
                        cli_fail(EXIT_REFUSED, "workspace %s: %s", ws, strerror(errno));
                        return NULL;
                }
                json_object_set_new(o, "workspace", json_string(abs));
        }
        return o;
}

int client_exec(const char *socket, const char *ws, char **argv, const char *command, const char *cwd, char **env,
                uint64_t timeout_s) {
        json_t *req = request("terminal", ws);
        if (!req)
                return EXIT_REFUSED;
        /* The run verb passes sh -c LINE as argv: send it as a command line. */
        if (!command && argv && strv_length(argv) == 3 && streq(argv[0], "/bin/sh") && streq(argv[1], "-c"))
                command = argv[2];
        if (command)
                json_object_set_new(req, "command", json_string(command));
        else {
                json_t *a = json_array();
                for (char **s = argv; a && s && *s; s++)
                        json_array_append_new(a, json_string(*s));
                json_object_set_new(req, "argv", a);
        }
        if (cwd)
                json_object_set_new(req, "cwd", json_string(cwd));
        if (env) {
                json_t *e = json_object();
                for (char **s = env; e && *s; s++) {
                        char *eq = strchr(*s, '=');
                        if (!eq)
                                continue;
                        _cleanup_free_ char *k = strndup(*s, (size_t)(eq - *s));
                        if (k)
                                json_object_set_new(e, k, json_string(eq + 1));
                }
                json_object_set_new(req, "env", e);
        }
        if (timeout_s)
                json_object_set_new(req, "timeout", json_integer((json_int_t)timeout_s));
        json_object_set_new(req, "binary", json_true());
        JsonlMsg m = JSONL_MSG_INIT;
        int r = call(socket, req, NULL, 0, &m);
        json_decref(req);
        if (r)
                return r;
        if (!json_is_true(json_object_get(m.obj, "ok"))) {
                r = reply_error(m.obj, "exec");
                jsonl_msg_done(&m);
                return r;
        }
        warn_degraded(m.obj);
        size_t out_len = (size_t)json_integer_value(json_object_get(m.obj, "stdout_len"));
        size_t err_len = (size_t)json_integer_value(json_object_get(m.obj, "stderr_len"));
        if (out_len + err_len > m.raw_len)
                out_len = err_len = 0;
        fflush(stdout);
        (void)!write_all(STDOUT_FILENO, m.raw, out_len);
        (void)!write_all(STDERR_FILENO, m.raw + out_len, err_len);
        if (json_is_true(json_object_get(m.obj, "timed_out")))
                fprintf(stderr, "vectora-sandbox: exec: timed out; the command's process group was killed\n");
        r = (int)json_integer_value(json_object_get(m.obj, "exit_code"));
        jsonl_msg_done(&m);
        return r;
}

int client_read(const char *socket, const char *ws, const char *path, uint64_t offset, uint64_t limit) {
        json_t *req = request("file_read", ws);
        if (!req)
                return EXIT_REFUSED;
        json_object_set_new(req, "path", json_string(path));
        if (offset)
                json_object_set_new(req, "offset", json_integer((json_int_t)offset));
        if (limit)
                json_object_set_new(req, "limit", json_integer((json_int_t)limit));
        json_object_set_new(req, "binary", json_true());
        JsonlMsg m = JSONL_MSG_INIT;
        int r = call(socket, req, NULL, 0, &m);
        json_decref(req);
        if (r)
                return r;
        if (!json_is_true(json_object_get(m.obj, "ok")))
                r = reply_error(m.obj, "read");
        else {
                warn_degraded(m.obj);
                (void)!write_all(STDOUT_FILENO, m.raw, m.raw_len);
        }
        jsonl_msg_done(&m);
        return r;
}

int client_write(const char *socket, const char *ws, const char *path, const char *data, size_t len) {
        json_t *req = request("file_write", ws);
        if (!req)
                return EXIT_REFUSED;
        json_object_set_new(req, "path", json_string(path));
        JsonlMsg m = JSONL_MSG_INIT;
        int r = call(socket, req, data ? data : "", len, &m);
        json_decref(req);
        if (r)
                return r;
        if (!json_is_true(json_object_get(m.obj, "ok")))
                r = reply_error(m.obj, "write");
        else
                warn_degraded(m.obj);
        jsonl_msg_done(&m);
        return r;
}

int client_edit(const char *socket, const char *ws, const char *path, const char *old_text, const char *new_text,
                bool all) {
        json_t *req = request("file_edit", ws);
        if (!req)
                return EXIT_REFUSED;
        json_object_set_new(req, "path", json_string(path));
        json_object_set_new(req, "old_string", json_string(old_text));
        json_object_set_new(req, "new_string", json_string(new_text));
        json_object_set_new(req, "replace_all", json_boolean(all));
        JsonlMsg m = JSONL_MSG_INIT;
        int r = call(socket, req, NULL, 0, &m);
        json_decref(req);
        if (r)
                return r;
        if (!json_is_true(json_object_get(m.obj, "ok"))) {
                const char *code = json_string_value(json_object_get(json_object_get(m.obj, "error"), "code"));
                r = reply_error(m.obj, "edit");
                /* Like embedded mode: a text that is not there is the edit's
                 * own failure, not the sandbox's. */
                if (code && (streq(code, "edit_not_found") || streq(code, "edit_not_unique")))
                        r = 1;
        } else {
                warn_degraded(m.obj);
                json_int_t n = json_integer_value(json_object_get(m.obj, "replacements"));
                fprintf(stderr, "vectora-sandbox: edit: %lld replacement%s\n", (long long)n, n == 1 ? "" : "s");
        }
        jsonl_msg_done(&m);
        return r;
}

static void print_strings(const char *label, json_t *a) {
        size_t i;
        json_t *v;
        if (!json_array_size(a))
                return;
        printf("    %s:", label);
        json_array_foreach(a, i, v) printf("%s %s", i ? "," : "", json_string_value(v));
        printf("\n");
}

/* status comes in pages (a daemon may serve thousands of workspaces):
 * fetch them all and show them as one list. */
static int status_all_pages(const char *socket, JsonlMsg *ret) {
        JsonlMsg m = JSONL_MSG_INIT;
        json_int_t next = 0;
        for (unsigned page = 0; page < 100000; page++) {
                json_t *req = request("status", NULL);
                if (!req)
                        return EXIT_REFUSED;
                json_object_set_new(req, "offset", json_integer(next));
                json_object_set_new(req, "limit", json_integer(1000));
                JsonlMsg p = JSONL_MSG_INIT;
                int r = call(socket, req, NULL, 0, &p);
                json_decref(req);
                if (!r && !json_is_true(json_object_get(p.obj, "ok")))
                        r = reply_error(p.obj, "status");
                if (r) {
                        jsonl_msg_done(&p);
                        jsonl_msg_done(&m);
                        return r;
                }
                json_t *nx = json_object_get(p.obj, "next_offset");
                next = json_is_integer(nx) ? json_integer_value(nx) : -1;
                if (!m.obj)
                        m = p;
                else {
                        json_array_extend(json_object_get(m.obj, "workspaces"), json_object_get(p.obj, "workspaces"));
                        jsonl_msg_done(&p);
                }
                if (next < 0)
                        break;
        }
        json_object_del(m.obj, "next_offset");
        json_object_del(m.obj, "offset");
        *ret = m;
        return 0;
}

int client_status(const char *socket, bool json) {
        JsonlMsg m = JSONL_MSG_INIT;
        int r = status_all_pages(socket, &m);
        if (r)
                return r;
        if (json) {
                json_object_del(m.obj, "id");
                json_dumpf(m.obj, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
                printf("\n");
                jsonl_msg_done(&m);
                return 0;
        }
        json_t *d = json_object_get(m.obj, "daemon");
        json_t *c = json_object_get(d, "counters");
        printf("vectora-sandboxd pid %lld, uid %lld, up %llds: %lld client(s), %lld worker(s) (max %lld)\n",
               json_integer_value(json_object_get(d, "pid")), json_integer_value(json_object_get(d, "uid")),
               json_integer_value(json_object_get(d, "uptime_s")), json_integer_value(json_object_get(d, "clients")),
               json_integer_value(json_object_get(d, "workers")), json_integer_value(json_object_get(d, "max_workers")));
        printf("calls: %lld (%lld ok, %lld errors, %lld refused, %lld denied); workers: %lld spawned, %lld crashed, %lld recycled, %lld idle-ended\n",
               json_integer_value(json_object_get(c, "requests")), json_integer_value(json_object_get(c, "ok")),
               json_integer_value(json_object_get(c, "errors")), json_integer_value(json_object_get(c, "refused")),
               json_integer_value(json_object_get(c, "denied")), json_integer_value(json_object_get(c, "spawns")),
               json_integer_value(json_object_get(c, "crashes")), json_integer_value(json_object_get(c, "recycles")),
               json_integer_value(json_object_get(c, "idle_ends")));
        if (json_object_get(d, "cgroups_unavailable"))
                printf("per-workspace limits degraded: %s\n", json_string_value(json_object_get(d, "cgroups_unavailable")));
        size_t i;
        json_t *w;
        json_array_foreach(json_object_get(m.obj, "workspaces"), i, w) {
                printf("\n%s\n  state: %s (policy generation %lld)\n", json_string_value(json_object_get(w, "path")),
                       json_string_value(json_object_get(w, "state")),
                       json_integer_value(json_object_get(w, "generation")));
                if (json_object_get(w, "config_error"))
                        printf("  refused: %s\n", json_string_value(json_object_get(w, "config_error")));
                json_t *wk = json_object_get(w, "worker");
                if (json_is_object(wk)) {
                        printf("  worker: pid %lld, %s, %lld in flight\n", json_integer_value(json_object_get(wk, "pid")),
                               json_string_value(json_object_get(wk, "state")),
                               json_integer_value(json_object_get(wk, "in_flight")));
                        print_strings("layers", json_object_get(wk, "layers"));
                        print_strings("degraded", json_object_get(wk, "degraded"));
                } else
                        printf("  worker: none\n");
                print_strings("limits", json_object_get(w, "limits"));
                json_t *wc = json_object_get(w, "counters");
                printf("  calls: %lld ok, %lld errors, %lld refused, %lld denied; restarts in the last minute: %lld%s\n",
                       json_integer_value(json_object_get(wc, "ok")), json_integer_value(json_object_get(wc, "errors")),
                       json_integer_value(json_object_get(wc, "refused")), json_integer_value(json_object_get(wc, "denied")),
                       json_integer_value(json_object_get(w, "restarts_last_minute")),
                       json_is_true(json_object_get(w, "restart_blocked")) ? " (restarts paused)" : "");
                if (json_string_value(json_object_get(w, "last_error")))
                        printf("  last error: %s\n", json_string_value(json_object_get(w, "last_error")));
        }
        jsonl_msg_done(&m);
        return 0;
}

/* ---- shell ---- */

static struct termios saved_tio;
static bool raw_mode;
static int winch_pipe[2] = { -1, -1 };

static void restore_tty(void) {
        if (raw_mode) {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
                raw_mode = false;
        }
}

static void on_winch(int sig) {
        int saved = errno;
        (void)!write(winch_pipe[1], "w", 1);
        errno = saved;
}

int client_shell(const char *socket, const char *ws) {
        json_t *req = request("terminal_open", ws);
        if (!req)
                return EXIT_REFUSED;
        struct winsize wsz = { .ws_col = 80, .ws_row = 24 };
        bool tty = isatty(STDIN_FILENO);
        if (tty)
                ioctl(STDIN_FILENO, TIOCGWINSZ, &wsz);
        json_object_set_new(req, "cols", json_integer(wsz.ws_col ? wsz.ws_col : 80));
        json_object_set_new(req, "rows", json_integer(wsz.ws_row ? wsz.ws_row : 24));
        const char *term = getenv("TERM");
        if (term)
                json_object_set_new(req, "term", json_string(term));
        json_object_set_new(req, "id", json_integer(1));

        int fd = -EBADF;
        int r = connect_daemon(socket, &fd);
        if (r) {
                json_decref(req);
                return r;
        }
        _cleanup_close_ int cfd = fd;
        _cleanup_(jsonl_reader_freep) JsonlReader *rd = NULL;
        if (jsonl_reader_new(&rd) < 0) {
                json_decref(req);
                return cli_fail(EXIT_REFUSED, "out of memory");
        }
        r = send_msg(cfd, req, NULL, 0);
        json_decref(req);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "sending to vectora-sandboxd: %s", strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = recv_msg(cfd, rd, &m)) < 0)
                return cli_fail(EXIT_REFUSED, "vectora-sandboxd did not answer: %s", strerror(-r));
        if (!json_is_true(json_object_get(m.obj, "ok"))) {
                r = reply_error(m.obj, "shell");
                jsonl_msg_done(&m);
                return r;
        }
        json_int_t pty = json_integer_value(json_object_get(m.obj, "pty"));
        jsonl_msg_done(&m);

        if (tty && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
                struct termios t = saved_tio;
                cfmakeraw(&t);
                if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0) {
                        raw_mode = true;
                        atexit(restore_tty);
                }
        }
        if (pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
                struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
                sigaction(SIGWINCH, &sa, NULL);
        }

        int status = EXIT_REFUSED;
        bool stdin_open = true;
        for (;;) {
                struct pollfd p[3] = {
                        { .fd = cfd, .events = POLLIN },
                        { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
                        { .fd = winch_pipe[0], .events = POLLIN },
                };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[2].revents & POLLIN) {
                        char b[64];
                        while (read(winch_pipe[0], b, sizeof b) > 0)
                                ;
                        struct winsize now;
                        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &now) == 0 && now.ws_col) {
                                json_t *o = json_pack("{s:s,s:I,s:i,s:i}", "tool", "terminal_resize", "pty", pty, "cols",
                                                      now.ws_col, "rows", now.ws_row);
                                if (o)
                                        (void)!send_msg(cfd, o, NULL, 0);
                                json_decref(o);
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char b[4096];
                        ssize_t k = read(STDIN_FILENO, b, sizeof b);
                        if (k > 0) {
                                json_t *o = json_pack("{s:s,s:I}", "tool", "terminal_input", "pty", pty);
                                if (o && send_msg(cfd, o, b, (size_t)k) < 0) {
                                        json_decref(o);
                                        break;
                                }
                                json_decref(o);
                        } else if (k == 0 || (errno != EINTR && errno != EAGAIN))
                                /* End of our input: the shell decides when it ends. */
                                stdin_open = false;
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        ssize_t k = jsonl_reader_read_fd(rd, cfd);
                        if (k == 0 || (k < 0 && k != -EAGAIN && k != -EINTR)) {
                                restore_tty();
                                return cli_fail(EXIT_REFUSED, "shell: the daemon closed the connection");
                        }
                        bool done = false;
                        for (;;) {
                                JsonlMsg e = JSONL_MSG_INIT;
                                if (jsonl_reader_next(rd, &e, NULL) < 0)
                                        break;
                                const char *ev = json_string_value(json_object_get(e.obj, "event"));
                                if (ev && streq(ev, "terminal_output"))
                                        (void)!write_all(STDOUT_FILENO, e.raw, e.raw_len);
                                else if (ev && streq(ev, "terminal_exit")) {
                                        status = (int)json_integer_value(json_object_get(e.obj, "exit_code"));
                                        done = true;
                                }
                                jsonl_msg_done(&e);
                        }
                        if (done)
                                break;
                }
        }
        restore_tty();
        return status;
}
