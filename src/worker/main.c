/* SPDX-License-Identifier: MIT */
/* vectora-worker: runs inside the jail, speaks the worker protocol
 * (docs/protocol.md) on stdin/stdout with the daemon as its only peer.
 * Single-threaded: one poll(2) loop over the peer, the commands' pipes and a
 * signalfd for SIGCHLD, with the nearest command deadline as its timeout.
 * What the peer may ask depends on the state (protocol_op_allowed()). */
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "time-util.h"
#include "worker.h"

#define EXIT_SANDBOX 125
/* Stop reading requests while this much output waits for the peer. */
#define OUT_HIGH_WATER (128u * 1024u * 1024u)
/* Stop reading sessions' output while this much waits: they are streams,
 * and a flood must wait for the peer rather than grow this buffer. */
#define SESSION_OUT_HIGH_WATER (1u << 20)
/* A worker idle this long after a request gives its buffers and the
 * heap's free pages back: a workspace idles far longer than it works, and
 * one daemon keeps hundreds of them (bench-memory's idle figures). */
#define IDLE_RELEASE_MS 1000

typedef struct Worker {
        ProtocolState state;
        JsonlReader *reader;
        StrBuf out;
        size_t out_off;         /* bytes of out already written */
        json_t *init_obj;       /* keeps the strings of init alive */
        ProtocolInit init;
        Policy policy;
        ExecDefaults defaults;
        Exec *execs;
        Session *sessions;
        int sigfd;
        bool shutdown;
        bool release_due;       /* work was done since the last idle release */
        uint64_t resweep_at_ms; /* now_ms() for one more sweep, once idle; 0: none */
        bool sweep_first;       /* that sweep is the start's: one more for the files too new then */
} Worker;

static void flush_blocking(Worker *w) {
        if (w->out.len > w->out_off) {
                (void) fd_set_nonblock(STDOUT_FILENO, false);
                (void) write_all(STDOUT_FILENO, w->out.data + w->out_off, w->out.len - w->out_off);
        }
        strbuf_clear(&w->out);
        w->out_off = 0;
}

static _noreturn_ void finish(Worker *w, int status) {
        exec_kill_all(&w->execs);
        session_kill_all(&w->sessions);
        flush_blocking(w);
        /* A sweep still to come (the worker was never idle long enough,
         * or files were too new at its last look) runs on the way out:
         * nothing waits for it now, and the next worker may be long in
         * coming (an idle workspace's last one). */
        if (status == 0 && w->resweep_at_ms)
                (void) sweep_temp_files(&w->policy, NULL, NULL);
        _exit(status);
}

/* Writes what it can without blocking. False when the peer is gone. */
static bool flush(Worker *w) {
        while (w->out.len > w->out_off) {
                ssize_t n = write(STDOUT_FILENO, w->out.data + w->out_off, w->out.len - w->out_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0)
                        return false;
                w->out_off += (size_t) n;
        }
        if (w->out_off == w->out.len) {
                strbuf_clear(&w->out);
                w->out_off = 0;
        } else if (w->out_off >= (1u << 20)) {
                strbuf_consume(&w->out, w->out_off);
                w->out_off = 0;
        }
        return true;
}

static bool idle(const Worker *w) {
        return w->state == PROTOCOL_STATE_READY && !w->execs && !w->sessions && w->out.len == w->out_off &&
               jsonl_reader_pending(w->reader) == 0;
}

/* What the last requests left: the reply and read buffers (sized by the
 * largest message so far) and the free pages inside the heap, which
 * glibc returns by itself only from the heap's top. */
static void idle_release(Worker *w) {
        strbuf_done(&w->out);
        w->out_off = 0;
        jsonl_reader_release(w->reader);
        (void) malloc_trim(0);
        w->release_due = false;
}

static void reply_error(Worker *w, bool has_id, uint64_t id, ProtocolErrorCode code, const char *msg) {
        if (protocol_encode_error(&w->out, has_id, id, code, msg) < 0)
                log_error("cannot encode an error reply: out of memory");
}

static void reply_failure(Worker *w, uint64_t id, int k, const VsError *err) {
        reply_error(w, true, id, protocol_error_code_from_error(k, err),
                    err ? vs_error_message(err) : strerror(-k));
}

static void handle_init(Worker *w, json_t *obj) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ProtocolReady ready = {};
        int k;

        k = protocol_decode_init(obj, &w->init, &err);
        if (k < 0)
                goto fail;
        w->init_obj = json_incref(obj);
        unjailed_adjust_init(&w->init);
        k = policy_init(&w->policy, &w->init, &err);
        if (k < 0) {
                vs_error_prefix(&err, "mask");
                goto fail;
        }
        w->defaults = (ExecDefaults) {
                .env = w->init.env,
                .timeout_ms = w->init.limits.timeout_ms,
                .max_output = w->init.limits.max_output,
                .memory = w->init.limits.memory,
        };
        k = enforce_policy(&w->init, &ready, &err);
        if (k < 0)
                goto fail;
        /* The network allowlist's way out, started once the relay is as
         * confined as everything else in the jail. */
        if (w->init.proxy_socket) {
                pid_t relay;
                k = proxy_relay_start(w->init.proxy_socket, w->init.proxy_port, &relay, &err);
                if (k < 0)
                        goto fail;
        }
        if (unjailed_degraded(&ready.degraded) < 0) {
                k = vs_error_set(&err, -ENOMEM, "out of memory");
                goto fail;
        }
        for (char **d = ready.degraded; d && *d; d++)
                log_warning("sandbox layer degraded: %s", *d);
        k = protocol_encode_ready(&w->out, &ready);
        strv_free(ready.degraded);
        if (k < 0) {
                vs_error_set(&err, k, "cannot encode ready");
                goto fail;
        }
        w->state = PROTOCOL_STATE_READY;
        /* Ready goes out first; the sweep runs once the worker is idle a
         * moment later: a walk of the tree (200 000 files: a third of a
         * second) that the first call, sent as ready arrives, need not
         * wait for. A temp file is left to no write of this worker's
         * (those hold its lock, or are too new). */
        (void) flush(w);
        w->sweep_first = true;
        w->resweep_at_ms = now_ms() + SWEEP_START_DELAY_MS;
        return;

fail:
        log_error("init failed: %s", vs_error_message(err));
        (void) protocol_encode_init_failed(&w->out, vs_error_message(err));
        finish(w, EXIT_SANDBOX);
}

static void handle_message(Worker *w, JsonlMsg *m) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        ProtocolRequestHead head;
        uint64_t id = 0;
        bool has_id = protocol_peek_id(m->obj, &id) == 0;
        int k;

        k = protocol_decode_request_head(m->obj, &head, &err);
        if (k < 0) {
                reply_error(w, has_id, id, k == -EOPNOTSUPP ? PROTOCOL_ERROR_UNKNOWN_OP : PROTOCOL_ERROR_BAD_REQUEST,
                            vs_error_message(err));
                return;
        }
        if (!protocol_op_allowed(w->state, head.op)) {
                if (w->state == PROTOCOL_STATE_HELLO_SENT)
                        reply_error(w, has_id, id, PROTOCOL_ERROR_NOT_READY, "not ready: init comes first");
                else
                        reply_error(w, has_id, id, PROTOCOL_ERROR_BAD_REQUEST, "init was already done");
                return;
        }

        switch (head.op) {
        case PROTOCOL_OP_INIT:
                handle_init(w, m->obj);
                return;
        case PROTOCOL_OP_EXEC: {
                if (exec_id_in_use(w->execs, head.id) || session_id_in_use(w->sessions, head.id)) {
                        reply_error(w, true, head.id, PROTOCOL_ERROR_BAD_REQUEST, "id already in flight");
                        return;
                }
                size_t len = 0;
                char *data = m->has_raw ? jsonl_msg_steal_raw(m, &len) : NULL;
                if (m->has_raw && !data) {
                        reply_error(w, true, head.id, PROTOCOL_ERROR_IO, "out of memory");
                        return;
                }
                k = exec_start(&w->execs, &w->policy, &w->defaults, m->obj, data, len, &w->out, &err);
                break;
        }
        case PROTOCOL_OP_READ_FILE:
                k = fileops_read_file(&w->policy, m->obj, &w->out, &err);
                break;
        case PROTOCOL_OP_WRITE_FILE:
                k = fileops_write_file(&w->policy, m->obj, m->raw ? m->raw : "", m->raw_len, &w->out, &err);
                break;
        case PROTOCOL_OP_STAT:
                k = fileops_stat(&w->policy, m->obj, &w->out, &err);
                break;
        case PROTOCOL_OP_LIST_DIR:
                k = fileops_list_dir(&w->policy, m->obj, &w->out, &err);
                break;
        case PROTOCOL_OP_GLOB:
        case PROTOCOL_OP_GREP:
                k = find_run(&w->policy, m->obj, &w->out, &err);
                break;
        case PROTOCOL_OP_CANCEL: {
                ProtocolCancelRequest c;
                k = protocol_decode_cancel_request(m->obj, &c, &err);
                if (k >= 0)
                        k = protocol_encode_cancel_reply(&w->out, c.head.id, exec_cancel(w->execs, c.target));
                break;
        }
        case PROTOCOL_OP_SESSION_OPEN:
                if (exec_id_in_use(w->execs, head.id) || session_id_in_use(w->sessions, head.id)) {
                        reply_error(w, true, head.id, PROTOCOL_ERROR_BAD_REQUEST, "id already in flight");
                        return;
                }
                k = session_open(&w->sessions, &w->policy, &w->defaults, m->obj, &w->out, &err);
                break;
        case PROTOCOL_OP_SESSION_INPUT:
        case PROTOCOL_OP_SESSION_RESIZE:
        case PROTOCOL_OP_SESSION_SIGNAL:
        case PROTOCOL_OP_SESSION_PAUSE:
                k = session_request(w->sessions, m->obj, m->raw, m->raw_len, &w->out, &err);
                break;
        case PROTOCOL_OP_SHUTDOWN: {
                ProtocolRequestHead h;
                k = protocol_decode_shutdown_request(m->obj, &h, &err);
                if (k >= 0) {
                        exec_kill_all(&w->execs);
                        session_kill_all(&w->sessions);
                        k = protocol_encode_ok(&w->out, h.id);
                        w->shutdown = true;
                }
                break;
        }
        default:
                k = vs_error_set_kind(&err, -EOPNOTSUPP, "unknown_op", "unknown op");
                break;
        }
        if (k < 0)
                reply_failure(w, head.id, k, err);
}

/* Reads what the peer sent and handles every complete message. False at
 * end of input. */
static bool handle_input(Worker *w) {
        for (int i = 0; i < 16; i++) {
                ssize_t n = jsonl_reader_read_fd(w->reader, STDIN_FILENO);
                if (n == -EAGAIN)
                        break;
                if (n == 0 || (n < 0 && n != -EPROTO && n != -EMSGSIZE))
                        return false;
                for (;;) {
                        _cleanup_(vs_error_freep) VsError *err = NULL;
                        JsonlMsg m = JSONL_MSG_INIT;
                        int k = jsonl_reader_next(w->reader, &m, &err);
                        if (k == -EAGAIN)
                                break;
                        if (k == -EBADMSG) {
                                reply_error(w, false, 0, PROTOCOL_ERROR_BAD_REQUEST, vs_error_message(err));
                                continue;
                        }
                        if (k < 0) {
                                /* Framing lost: this worker is done. */
                                log_error("protocol violation: %s", vs_error_message(err));
                                reply_error(w, false, 0,
                                            k == -EMSGSIZE ? PROTOCOL_ERROR_TOO_LARGE : PROTOCOL_ERROR_BAD_REQUEST,
                                            vs_error_message(err));
                                finish(w, EXIT_SANDBOX);
                        }
                        handle_message(w, &m);
                        jsonl_msg_done(&m);
                        if (w->shutdown)
                                finish(w, 0);
                }
                if (n < 0) /* the sticky error surfaces through next() above */
                        break;
        }
        return true;
}

/* Reaps every child that ended. Unknown pids are orphans reparented to us
 * (pid 1, or subreaper): reaping them is all there is to do. */
static void reap(Worker *w) {
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid <= 0)
                        return;
                if (!exec_reaped(w->execs, pid, status))
                        (void) session_reaped(w->sessions, pid, status);
        }
}

static int setup_signals(void) {
        sigset_t ss;
        /* A closed pipe is an error to handle, not a reason to die. */
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&ss);
        sigaddset(&ss, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                return negative_errno();
        int fd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

static int send_hello(Worker *w) {
        struct utsname u;
        int abi = 0;
        _cleanup_strv_free_ char **can = enforce_capabilities(&abi);
        ProtocolHello h = {
                .version = PROTOCOL_VERSION,
                .arch = uname(&u) == 0 ? u.machine : "unknown",
                .pid = getpid(),
                .landlock_abi = abi,
                .can = can,
                /* What the kernel checks chown against (the fs ids, equal
                 * to the effective ones here: nothing in the jail changes
                 * them), for the seccomp filter the daemon compiles. */
                .uid = geteuid(),
                .gid = getegid(),
        };
        return protocol_encode_hello(&w->out, &h);
}

int main(int argc, char **argv) {
        Worker w = { .state = PROTOCOL_STATE_HELLO_SENT, .sigfd = -EBADF };
        _cleanup_free_ struct pollfd *fds = NULL;
        size_t fds_cap = 0;

        /* First of all: the channel (stdin/stdout) and stderr are all this
         * process keeps of what it was started with. A descriptor its
         * starter left open (a directory of the host user's) would
         * otherwise be reachable from every command through /proc/self/fd. */
        static const int keep[] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO };
        if (close_all_fds_except(keep, ELEMENTSOF(keep)) < 0)
                return EXIT_SANDBOX;
        log_setup("vectora-worker", STDERR_FILENO);
        if (argc > 1 && streq(argv[1], "--version")) {
                printf("vectora-worker (protocol %d)\n", PROTOCOL_VERSION);
                return 0;
        }
        /* The ssh backend's launcher modes (launcher.h). */
        if (argc > 1 && streq(argv[1], "--ssh-launch"))
                return ssh_launch_main(argc, argv);
        if (argc > 1 && streq(argv[1], "--launch-jail"))
                return launch_jail_main(argc, argv);
        if (argc == 3 && streq(argv[1], "--unjailed")) {
                unjailed_set(argv[2]);
                argc = 1;
        }
        if (argc > 1) {
                log_error("takes no arguments; it speaks docs/protocol.md on stdin/stdout");
                return 2;
        }

        w.sigfd = setup_signals();
        if (w.sigfd < 0) {
                log_error("cannot set up signals: %s", strerror(-w.sigfd));
                return EXIT_SANDBOX;
        }
        /* Orphans of the commands come back to us to be reaped (as pid 1
         * in the jail this is implied). */
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        (void) fd_set_nonblock(STDIN_FILENO, true);
        (void) fd_set_nonblock(STDOUT_FILENO, true);

        if (jsonl_reader_new(&w.reader) < 0 || send_hello(&w) < 0) {
                log_error("out of memory");
                return EXIT_SANDBOX;
        }

        for (;;) {
                if (!flush(&w))
                        finish(&w, 0);

                size_t need = 3 + exec_count_fds(w.execs) + session_count_fds(w.sessions);
                if (need > fds_cap) {
                        struct pollfd *nf = realloc(fds, need * 2 * sizeof *nf);
                        if (!nf) {
                                log_error("out of memory");
                                finish(&w, EXIT_SANDBOX);
                        }
                        fds = nf;
                        fds_cap = need * 2;
                }
                bool pending_out = w.out.len > w.out_off;
                fds[0] = (struct pollfd) { .fd = w.out.len - w.out_off < OUT_HIGH_WATER ? STDIN_FILENO : -1,
                                           .events = POLLIN };
                fds[1] = (struct pollfd) { .fd = pending_out ? STDOUT_FILENO : -1, .events = POLLOUT };
                fds[2] = (struct pollfd) { .fd = w.sigfd, .events = POLLIN };
                size_t n_exec = exec_fill_poll(w.execs, fds + 3);
                size_t n = 3 + n_exec;
                n += session_fill_poll(w.sessions, fds + n, w.out.len - w.out_off >= SESSION_OUT_HIGH_WATER);

                int t_exec = exec_next_timeout_ms(w.execs), t_sess = session_next_timeout_ms(w.sessions);
                int timeout = t_exec < 0 ? t_sess : t_sess < 0 ? t_exec : MIN(t_exec, t_sess);
                bool release = w.release_due && idle(&w);
                if (release)
                        timeout = timeout < 0 ? IDLE_RELEASE_MS : MIN(timeout, IDLE_RELEASE_MS);
                bool resweep = w.resweep_at_ms && idle(&w);
                if (resweep) {
                        uint64_t t = now_ms();
                        int left = t >= w.resweep_at_ms ? 0 : (int)MIN(w.resweep_at_ms - t, (uint64_t)INT_MAX);
                        timeout = timeout < 0 ? left : MIN(timeout, left);
                }
                int r = poll(fds, n, timeout);
                if (r < 0 && errno != EINTR) {
                        log_error("poll: %m");
                        finish(&w, EXIT_SANDBOX);
                }
                if (r < 0)
                        continue;
                if (resweep && now_ms() >= w.resweep_at_ms) {
                        w.resweep_at_ms = 0; /* twice at most: later ones are the next worker's */
                        size_t young = 0;
                        time_t newest = 0;
                        size_t swept = sweep_temp_files(&w.policy, w.sweep_first ? &young : NULL, &newest);
                        if (swept > 0)
                                log_info("removed %zu temp files of interrupted writes", swept);
                        /* Too new to judge now: looked at again as soon as the
                         * newest is old enough (its whole second past
                         * SWEEP_MIN_AGE_S), before a short idle timeout ends
                         * the worker (the soak's 3 s found one left). */
                        if (w.sweep_first && young > 0) {
                                struct timespec wall = now_wall();
                                int64_t due = ((int64_t)newest + SWEEP_MIN_AGE_S) * 1000 + 20,
                                        now_w = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
                                int64_t wait = due - now_w;
                                if (wait < 20)
                                        wait = 20;
                                if (wait > (SWEEP_MIN_AGE_S + 1) * 1000)
                                        wait = (SWEEP_MIN_AGE_S + 1) * 1000;
                                w.resweep_at_ms = now_ms() + (uint64_t)wait;
                        }
                        w.sweep_first = false;
                }
                if (r == 0 && release) {
                        idle_release(&w);
                        continue;
                }
                w.release_due = true;

                if (fds[2].revents) {
                        struct signalfd_siginfo si;
                        while (read(w.sigfd, &si, sizeof si) == (ssize_t) sizeof si)
                                ;
                        reap(&w);
                }
                exec_process(&w.execs, fds + 3, n_exec, &w.out);
                session_process(&w.sessions, fds + 3 + n_exec, n - 3 - n_exec, &w.out);
                if (fds[0].revents && !handle_input(&w))
                        finish(&w, 0); /* end of input: like shutdown, without a reply */
        }
}
