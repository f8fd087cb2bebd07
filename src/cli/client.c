/* SPDX-License-Identifier: MIT */
/* The CLI's daemon client: the connection (docs/protocol.md, "Daemon API")
 * and `shell`, which attaches a PTY. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>

#include "cli.h"
#include "client.h"
#include "fd-util.h"
#include "strv.h"

int client_connect(const char *path, int *ret, char **ret_why) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;
        if (strlen(path) >= sizeof sa.sun_path)
                return asprintf(ret_why, "socket path too long: %s", path) < 0 ? -ENOMEM : -ENAMETOOLONG;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                return asprintf(ret_why, "socket: %s", strerror(-r)) < 0 ? -ENOMEM : r;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                r = -errno;
                safe_close(fd);
                return asprintf(ret_why,
                                "cannot reach vectora-sandboxd at %s: %s; start it (vectora-sandboxd), or run without a daemon: drop --socket and unset VECTORA_SANDBOX_SOCKET",
                                path, strerror(-r)) < 0
                               ? -ENOMEM
                               : r;
        }
        *ret = fd;
        return 0;
}

int client_send(int fd, json_t *obj, const void *raw, size_t raw_len) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        int r = jsonl_encode(obj, raw, raw_len, &out);
        if (r < 0)
                return r;
        return write_all(fd, out.data, out.len);
}

int client_recv(int fd, JsonlReader *rd, JsonlMsg *ret) {
        for (;;) {
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = jsonl_reader_next(rd, ret, &err);
                if (r == 0) {
                        if (json_object_get(ret->obj, "event")) {
                                jsonl_msg_done(ret);
                                continue;
                        }
                        return 0;
                }
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

int client_call(int fd, JsonlReader *rd, uint64_t id, json_t *req, const void *raw, size_t raw_len, JsonlMsg *ret,
                bool *ret_sent) {
        *ret_sent = false;
        if (json_object_set_new(req, "id", json_integer((json_int_t)id)) < 0)
                return -ENOMEM;
        int r = client_send(fd, req, raw, raw_len);
        if (r < 0)
                return r;
        *ret_sent = true;
        for (;;) {
                JsonlMsg m = JSONL_MSG_INIT;
                if ((r = client_recv(fd, rd, &m)) < 0)
                        return r;
                json_t *rid = json_object_get(m.obj, "id");
                if (json_is_integer(rid) && (uint64_t)json_integer_value(rid) == id) {
                        *ret = m;
                        return 0;
                }
                jsonl_msg_done(&m); /* a reply to another request */
        }
}

/* ---- shell ---- */

static struct termios saved_tio;
static bool raw_mode;
static int winch_pipe[2] = { -1, -1 };

static void restore_tty(void) {
        if (raw_mode) {
                tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
                raw_mode = false;
        }
}

static void on_winch(int sig) {
        int saved = errno;
        (void)!write(winch_pipe[1], "w", 1);
        errno = saved;
}

int client_shell(const char *socket, const char *ws, bool require_sandbox) {
        json_t *req = json_pack("{s:s,s:s}", "tool", api_tool_name(API_TOOL_TERMINAL_OPEN), "workspace", ws);
        if (!req)
                return cli_fail(EXIT_REFUSED, "out of memory");
        if (require_sandbox)
                json_object_set_new(req, "require_sandbox", json_true());
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
        _cleanup_free_ char *why = NULL;
        int r = client_connect(socket, &fd, &why);
        if (r < 0) {
                json_decref(req);
                return cli_fail(EXIT_REFUSED, "shell: %s", why ? why : strerror(-r));
        }
        _cleanup_close_ int cfd = fd;
        _cleanup_(jsonl_reader_freep) JsonlReader *rd = NULL;
        if (jsonl_reader_new(&rd) < 0) {
                json_decref(req);
                return cli_fail(EXIT_REFUSED, "out of memory");
        }
        r = client_send(cfd, req, NULL, 0);
        json_decref(req);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "sending to vectora-sandboxd: %s", strerror(-r));
        JsonlMsg m = JSONL_MSG_INIT;
        if ((r = client_recv(cfd, rd, &m)) < 0)
                return cli_fail(EXIT_REFUSED, "vectora-sandboxd did not answer: %s", strerror(-r));
        if (!json_is_true(json_object_get(m.obj, "ok"))) {
                json_t *e = json_object_get(m.obj, "error");
                const char *code = json_string_value(json_object_get(e, "code"));
                r = cli_fail(cli_exit_for_code(code), "shell: %s: %s", code ? code : "error",
                             json_string_value(json_object_get(e, "message")) ?: "failed");
                jsonl_msg_done(&m);
                return r;
        }
        json_int_t pty = json_integer_value(json_object_get(m.obj, "pty"));
        jsonl_msg_done(&m);

        if (tty && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
                struct termios t = saved_tio;
                cfmakeraw(&t);
                if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0) {
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
                                json_t *o = json_pack("{s:s,s:I,s:i,s:i}", "tool", api_tool_name(API_TOOL_TERMINAL_RESIZE), "pty", pty, "cols",
                                                      now.ws_col, "rows", now.ws_row);
                                if (o)
                                        (void)!client_send(cfd, o, NULL, 0);
                                json_decref(o);
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char b[4096];
                        ssize_t k = read(STDIN_FILENO, b, sizeof b);
                        if (k > 0) {
                                json_t *o = json_pack("{s:s,s:I}", "tool", api_tool_name(API_TOOL_TERMINAL_INPUT), "pty", pty);
                                if (o && client_send(cfd, o, b, (size_t)k) < 0) {
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
                                        /* Ended by the sandbox layer (its jail was recycled): say why. */
                                        const char *ended = json_string_value(json_object_get(e.obj, "message"));
                                        if (ended) {
                                                restore_tty();
                                                fprintf(stderr, "\r\nvectora-sandbox: shell: %s\n", ended);
                                        }
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
