/* SPDX-License-Identifier: MIT */
/* Sessions: processes that outlive their request (docs/protocol.md,
 * "Sessions"). An interactive terminal gets a PTY of the jail's own devpts
 * (bwrap --dev, a container's /dev/pts): the host's terminals are not
 * there to reach. A background process gets three pipes. Either way the
 * process runs as every command does: the jail's user, init's environment,
 * its own session and process group, killed with the worker. Output leaves
 * as session_output events while it arrives; when the worker's queue to
 * the daemon is long, or the daemon paused the session, the worker stops
 * reading and the writer blocks on a full terminal or pipe: a flood costs
 * the flooder, never the worker's memory. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "child.h"
#include "fd-util.h"
#include "launcher.h"
#include "macro.h"
#include "worker.h"

/* Sessions per worker: each holds a process group and up to three fds. */
#define SESSION_MAX 64
/* How long opening a forwarded connection may hold the worker (session_connect). */
#define CONNECT_WAIT_MS 250
/* Input the process has not taken yet, per session. */
#define SESSION_INPUT_MAX (1u << 20)
#define SESSION_READ_CHUNK (64u * 1024u)

struct Session {
        Session *next;
        uint64_t id;
        Child child;      /* the session and group leader; CHILD_NONE for a connection */
        bool pty;
        bool sock;        /* a connection to a port of the jail's loopback (io_fd), no process */
        bool wr_shut;
        int io_fd;        /* pty: the master (input and output); pipes: stdin's write end */
        int held_fd;      /* pty: an open of the slave of the worker's own, until the reap */
        int out_fd;       /* pipes: stdout's read end; pty: -EBADF (io_fd) */
        int err_fd;       /* pipes: stderr's read end */
        bool out_open;    /* pty: the master still gives output */
        StrBuf in;        /* input not taken yet */
        bool in_eof;      /* close stdin once in is written */
        bool paused;
};

static void session_free(Session *s) {
        if (!s)
                return;
        safe_close(s->io_fd);
        safe_close(s->held_fd);
        safe_close(s->out_fd);
        safe_close(s->err_fd);
        strbuf_done(&s->in);
        free(s);
}

static void session_kill(Session *s) {
        /* A connection: nothing to signal, it ends here. */
        if (!s->child.killed && s->sock)
                s->out_open = false;
        child_kill(&s->child);
}

/* One fd for both directions: a terminal's master or a connection. */
static bool single_fd(const Session *s) {
        return s->pty || s->sock;
}

static bool reading(const Session *s) {
        return single_fd(s) ? s->out_open : s->out_fd >= 0 || s->err_fd >= 0;
}

bool session_id_in_use(Session *list, uint64_t id) {
        for (Session *s = list; s; s = s->next)
                if (s->id == id)
                        return true;
        return false;
}

static Session *find(Session *list, uint64_t id) {
        for (Session *s = list; s; s = s->next)
                if (s->id == id)
                        return s;
        return NULL;
}

/* A terminal of the jail's devpts: the master (nonblocking), its slave for
 * the process, and a second open of the slave that the worker holds until
 * the reap. The master reads EIO whenever no open of the slave is left, for
 * a while in the middle of a session too: a process that closed its
 * terminal and opens /dev/tty again later, and, rarely, a shell that execs
 * the command typed ahead to it (EIO between its prompt and the command's
 * one line). Taken for the end, that lost the rest of the output; held
 * here, the slave's last close comes after the reap, when everything the
 * process wrote is in the master. */
static int open_pty(uint64_t cols, uint64_t rows, int *ret_master, int *ret_slave, int *ret_held) {
        _cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0)
                return negative_errno();
        char name[64];
        if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0)
                return negative_errno();
        _cleanup_close_ int held = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (held < 0)
                return negative_errno();
        int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (s < 0)
                return negative_errno();
        struct winsize wsz = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
        (void) ioctl(m, TIOCSWINSZ, &wsz);
        (void) fd_set_nonblock(m, true);
        *ret_master = TAKE_FD(m);
        *ret_held = TAKE_FD(held);
        *ret_slave = s;
        return 0;
}

/* A forwarded port's connection: 127.0.0.1:port, which in a jail without
 * the host's network is the jail's own loopback. */
static int session_connect(Session **list, const ProtocolSessionOpenRequest *req, StrBuf *out, VsError **err) {
        /* Without a jail the worker is on the remote host's own network:
         * 127.0.0.1:port there is any of its services (or, when the remote
         * is this host, the daemon's own listener, looping), not a port of
         * the jail's. */
        if (unjailed())
                return vs_error_set_kind(err, -EOPNOTSUPP, "denied",
                                         "forwarded ports need the jail's own network namespace, and the remote host "
                                         "has no bubblewrap: install it there (apt-get install bubblewrap), or "
                                         "remove sandbox.ports");
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return vs_error_set(err, negative_errno(), "port %llu: socket: %m", (unsigned long long) req->connect);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) req->connect),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        /* On loopback a listener with room in its backlog answers at once;
         * one whose backlog is full drops the SYN, and a blocking connect
         * would wait through the retries (minutes), the whole worker with
         * it. A bounded wait: past it the server is busy, and this
         * connection is refused like any other. */
        int k = connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0 ? negative_errno() : 0;
        if (k == -EINPROGRESS) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                int n;
                while ((n = poll(&pfd, 1, CONNECT_WAIT_MS)) < 0 && errno == EINTR)
                        ;
                int soerr = 0;
                socklen_t len = sizeof soerr;
                if (n == 0)
                        k = -ETIMEDOUT;
                else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                        k = negative_errno();
                else
                        k = -soerr;
        }
        if (k == -ETIMEDOUT)
                return vs_error_set_kind(err, k, "io",
                                         "the server on port %llu in the jail accepts no more connections now (its "
                                         "backlog is full)",
                                         (unsigned long long) req->connect);
        if (k < 0) {
                return vs_error_set_kind(err, k, k == -ECONNREFUSED ? "not_found" : "io",
                                         "nothing accepts connections on port %llu in the jail (%s); start the server "
                                         "there on 127.0.0.1:%llu",
                                         (unsigned long long) req->connect, strerror(-k),
                                         (unsigned long long) req->connect);
        }
        Session *s = calloc(1, sizeof *s);
        if (!s)
                return vs_error_set(err, -ENOMEM, "out of memory");
        *s = (Session) {
                .id = req->head.id,
                /* No process: it "exited" at once, and ends when the
                 * connection does (no drain grace). */
                .child = CHILD_NONE,
                .sock = true,
                .io_fd = TAKE_FD(fd),
                .held_fd = -EBADF,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .out_open = true,
        };
        s->next = *list;
        *list = s;
        return protocol_encode_session_open_reply(out, req->head.id, 0);
}

int session_open(Session **list, const Policy *p, const ExecDefaults *d, json_t *obj, StrBuf *out, VsError **err) {
        ProtocolSessionOpenRequest req = {};
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        _cleanup_close_ int master = -EBADF, slave = -EBADF, held = -EBADF, in_r = -EBADF, in_w = -EBADF,
                            out_r = -EBADF, out_w = -EBADF, err_r = -EBADF, err_w = -EBADF;
        int k, fds[2];
        size_t n = 0;
        Child child;

        k = protocol_decode_session_open_request(obj, &req, err);
        if (k < 0)
                return k;
        for (Session *s = *list; s; s = s->next)
                n++;
        if (n >= SESSION_MAX) {
                k = vs_error_set_kind(err, -E2BIG, "too_large",
                                      "this jail already runs %d terminals, background processes and forwarded "
                                      "connections; end one first",
                                      SESSION_MAX);
                goto finish;
        }
        if (req.connect) {
                k = session_connect(list, &req, out, err);
                goto finish;
        }
        k = exec_prepare(p, d, req.cwd, req.env, req.argv[0], &x, err);
        if (k < 0)
                goto finish;
        if (k > 0) {
                k = vs_error_set_kind(err, -ENOENT, k == 127 ? "not_found" : "denied", "%s: %s", req.argv[0],
                                      k == 127 ? "command not found" : "Permission denied");
                goto finish;
        }

        if (req.pty) {
                k = open_pty(req.cols, req.rows, &master, &slave, &held);
                if (k < 0) {
                        vs_error_set(err, k, "cannot open a terminal in the jail: %s", strerror(-k));
                        goto finish;
                }
        } else {
                if (pipe2(fds, O_CLOEXEC) < 0)
                        goto fail_errno;
                in_r = fds[0], in_w = fds[1];
                if (pipe2(fds, O_CLOEXEC) < 0)
                        goto fail_errno;
                out_r = fds[0], out_w = fds[1];
                if (pipe2(fds, O_CLOEXEC) < 0)
                        goto fail_errno;
                err_r = fds[0], err_w = fds[1];
        }

        Session *s = calloc(1, sizeof *s);
        if (!s) {
                k = vs_error_set(err, -ENOMEM, "out of memory");
                goto finish;
        }
        /* A session of its own: a terminal's controlling one, and a signal
         * reaches the whole group. */
        k = req.pty ? child_spawn(&x, d, req.argv, slave, slave, slave, CHILD_TERMINAL, req.timeout_ms, &child)
                    : child_spawn(&x, d, req.argv, in_r, out_w, err_w, CHILD_SESSION, req.timeout_ms, &child);
        if (k != 0) {
                free(s);
                if (k < 0)
                        child_spawn_error(err, k, req.argv[0]);
                else
                        k = vs_error_set_kind(err, -k, k == ENOENT ? "not_found" : "io", "%s: %s", req.argv[0],
                                              strerror(k));
                goto finish;
        }
        slave = safe_close(slave);
        in_r = safe_close(in_r);
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);

        *s = (Session) {
                .id = req.head.id,
                .child = child,
                .pty = req.pty,
                .io_fd = req.pty ? TAKE_FD(master) : TAKE_FD(in_w),
                .held_fd = TAKE_FD(held),
                .out_fd = TAKE_FD(out_r),
                .err_fd = TAKE_FD(err_r),
                .out_open = req.pty,
        };
        (void) fd_set_nonblock(s->io_fd, true);
        if (s->out_fd >= 0)
                (void) fd_set_nonblock(s->out_fd, true);
        if (s->err_fd >= 0)
                (void) fd_set_nonblock(s->err_fd, true);
        s->next = *list;
        *list = s;
        k = protocol_encode_session_open_reply(out, req.head.id, child.pid);
        goto finish;

fail_errno:
        k = negative_errno();
        vs_error_set(err, k, "cannot start %s: %s", req.argv[0], strerror(-k));
finish:
        protocol_session_open_request_done(&req);
        return k;
}

static void feed_input(Session *s) {
        while (s->in.len > 0 && s->io_fd >= 0) {
                ssize_t n = write(s->io_fd, s->in.data, s->in.len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) {
                        /* The reader is gone: what is left has nowhere to go. */
                        strbuf_clear(&s->in);
                        break;
                }
                strbuf_consume(&s->in, (size_t) n);
        }
        if (s->in.len == 0 && s->in_eof && s->sock && !s->wr_shut) {
                /* The peer's end of input: the server sees EOF, may still answer. */
                (void) shutdown(s->io_fd, SHUT_WR);
                s->wr_shut = true;
        } else if (s->in.len == 0 && s->in_eof && !single_fd(s))
                s->io_fd = safe_close(s->io_fd);
}

int session_request(Session *list, json_t *obj, const char *data, size_t len, StrBuf *out, VsError **err) {
        ProtocolSessionRequest r;
        int k = protocol_decode_session_request(obj, &r, err);
        if (k < 0)
                return k;
        Session *s = find(list, r.session);
        if (!s)
                return vs_error_set_kind(err, -ENOENT, "not_found", "no session %llu (it may have ended)",
                                         (unsigned long long) r.session);
        switch (r.head.op) {
        case PROTOCOL_OP_SESSION_INPUT:
                if (r.eof && s->pty)
                        return vs_error_set_kind(err, -EINVAL, "bad_request",
                                                 "a terminal has no end of input to close: send its EOF character (^D)");
                if (s->io_fd < 0 || (!s->pty && s->in_eof))
                        return vs_error_set_kind(err, -EPIPE, "io", "the session's input is closed");
                if (s->in.len + len > SESSION_INPUT_MAX)
                        return vs_error_set_kind(err, -E2BIG, "too_large",
                                                 "the process is not taking input that fast (1 MiB waits already)");
                if (len && strbuf_append(&s->in, data, len) < 0)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                s->in_eof = r.eof;
                feed_input(s);
                break;
        case PROTOCOL_OP_SESSION_RESIZE: {
                struct winsize wsz = { .ws_row = (unsigned short) r.rows, .ws_col = (unsigned short) r.cols };
                if (!s->pty)
                        return vs_error_set_kind(err, -EINVAL, "bad_request", "only a terminal has a size");
                if (ioctl(s->io_fd, TIOCSWINSZ, &wsz) < 0)
                        return vs_error_set(err, negative_errno(), "resizing the terminal: %m");
                break;
        }
        case PROTOCOL_OP_SESSION_SIGNAL:
                if (s->sock) {
                        /* A connection has no process: any signal ends it. */
                        (void) shutdown(s->io_fd, SHUT_RDWR);
                        s->out_open = false;
                        break;
                }
                child_signal(&s->child, (int) r.signal);
                break;
        default:
                s->paused = r.paused;
                break;
        }
        return protocol_encode_ok(out, r.head.id);
}

size_t session_count_fds(Session *list) {
        size_t n = 0;
        for (Session *s = list; s; s = s->next)
                n += 3;
        return n;
}

size_t session_fill_poll(Session *list, struct pollfd *fds, bool out_full) {
        size_t n = 0;
        for (Session *s = list; s; s = s->next) {
                bool rd = !out_full && !s->paused;
                if (single_fd(s)) {
                        short ev = (short) ((rd && s->out_open ? POLLIN : 0) | (s->in.len ? POLLOUT : 0));
                        if (ev && s->io_fd >= 0)
                                fds[n++] = (struct pollfd) { .fd = s->io_fd, .events = ev };
                        continue;
                }
                if (rd && s->out_fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = s->out_fd, .events = POLLIN };
                if (rd && s->err_fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = s->err_fd, .events = POLLIN };
                if (s->in.len && s->io_fd >= 0)
                        fds[n++] = (struct pollfd) { .fd = s->io_fd, .events = POLLOUT };
        }
        return n;
}

/* Reads what is there (bounded, so one chatty session cannot starve the
 * others) into output events. False once the stream ended. */
static bool drain(Session *s, int fd, bool is_stderr, StrBuf *out) {
        char buf[SESSION_READ_CHUNK];
        for (int i = 0; i < 16; i++) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                /* EIO on a master: the last holder of the slave side is gone. */
                if (n <= 0)
                        return false;
                ProtocolSessionEvent e = { .type = PROTOCOL_SESSION_OUTPUT, .session = s->id, .is_stderr = is_stderr };
                if (protocol_encode_session_event(out, &e, buf, (size_t) n) < 0)
                        return false;
        }
        return true;
}

static void drain_stdout(Session *s, StrBuf *out) {
        if (single_fd(s)) {
                if (s->out_open && !drain(s, s->io_fd, false, out))
                        s->out_open = false;
        } else if (s->out_fd >= 0 && !drain(s, s->out_fd, false, out))
                s->out_fd = safe_close(s->out_fd);
}

static void drain_stderr(Session *s, StrBuf *out) {
        if (!single_fd(s) && s->err_fd >= 0 && !drain(s, s->err_fd, true, out))
                s->err_fd = safe_close(s->err_fd);
}

static void send_exit(Session *s, StrBuf *out) {
        ProtocolSessionEvent e = { .type = PROTOCOL_SESSION_EXIT, .session = s->id, .timed_out = s->child.timed_out };
        int sig;
        e.exit_code = child_exit_code(&s->child, &sig);
        e.signal = sig;
        (void) protocol_encode_session_event(out, &e, NULL, 0);
}

void session_process(Session **list, struct pollfd *fds, size_t n, StrBuf *out) {
        for (size_t i = 0; i < n; i++) {
                if (!fds[i].revents)
                        continue;
                for (Session *s = *list; s; s = s->next) {
                        if (fds[i].fd == s->io_fd) {
                                if (fds[i].revents & POLLOUT)
                                        feed_input(s);
                                if (single_fd(s) && fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                                        drain_stdout(s, out);
                                else if (!single_fd(s) && fds[i].revents & (POLLHUP | POLLERR)) {
                                        /* The process closed its stdin. */
                                        strbuf_clear(&s->in);
                                        s->io_fd = safe_close(s->io_fd);
                                }
                        } else if (fds[i].fd == s->out_fd)
                                drain_stdout(s, out);
                        else if (fds[i].fd == s->err_fd)
                                drain_stderr(s, out);
                        else
                                continue;
                        break;
                }
        }

        uint64_t now = now_us();
        for (Session **sp = list; *sp;) {
                Session *s = *sp;
                (void) child_expire(&s->child, now);
                if (reading(s) && child_grace_over(&s->child, now)) {
                        /* Something it left behind still holds the terminal
                         * or the pipes: send what is there, stop waiting. */
                        drain_stdout(s, out);
                        drain_stderr(s, out);
                        s->out_open = false;
                        s->out_fd = safe_close(s->out_fd);
                        s->err_fd = safe_close(s->err_fd);
                }
                if (s->child.reaped && !reading(s)) {
                        send_exit(s, out);
                        *sp = s->next;
                        session_free(s);
                        continue;
                }
                sp = &s->next;
        }
}

int session_next_timeout_ms(Session *list) {
        uint64_t best = UINT64_MAX;
        for (Session *s = list; s; s = s->next)
                best = MIN(best, child_next_us(&s->child, reading(s)));
        return child_ms_until(best, now_us());
}

bool session_reaped(Session *list, pid_t pid, int status) {
        for (Session *s = list; s; s = s->next)
                if (child_reaped(&s->child, pid, status)) {
                        /* What it wrote is in the master now: the slave may close. */
                        s->held_fd = safe_close(s->held_fd);
                        return true;
                }
        return false;
}

void session_kill_all(Session **list) {
        for (Session *s = *list; s; s = s->next)
                session_kill(s);
        while (*list) {
                Session *s = *list;
                child_wait(&s->child);
                *list = s->next;
                session_free(s);
        }
}
