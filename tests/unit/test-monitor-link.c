/* SPDX-License-Identifier: MIT */
/* The server's side of the monitor link (src/daemon/monitor/monitor-link.c)
 * under calls from two threads: the loop's jail_spawn while a start's
 * placeholders go out from the thread pool. Each call must take its own
 * reply: attack review 8 found jail_spawn looking for the id after its
 * own, which a pool thread's request had taken meanwhile, so a correct
 * answer read as "a jail started without its pid", and the daemon
 * stopped (5 of 5 runs, within 3 to 957 starts). The link's code is
 * compiled into this test (its MonitorLink is its own); a correct monitor
 * is played by a thread on the other end of the pair. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/daemon/monitor/monitor-link.c"

static int mon_fd;

/* Answers each request as the monitor does: its own id, a status 0, a
 * count for a placeholder, a child's pid and an exec pipe for a start. */
static void *fake_monitor(void *arg) {
        (void)arg;
        static uint8_t b[MONITOR_MSG_MAX];
        static MonitorMsg msg;
        for (;;) {
                union {
                        struct cmsghdr h;
                        char c[CMSG_SPACE(sizeof(int) * 8)];
                } u;
                struct iovec iov = { b, sizeof b };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &u, .msg_controllen = sizeof u };
                ssize_t n = recvmsg(mon_fd, &mh, MSG_CMSG_CLOEXEC);
                if (n <= 0)
                        return NULL;
                int fds[8];
                size_t nf = recv_take_fds(&mh, fds, 8, NULL);
                for (size_t i = 0; i < nf; i++)
                        close(fds[i]);
                VsError *err = NULL;
                if (monitor_decode(b, (size_t)n, false, &msg, &err) < 0)
                        return NULL;
                MonitorEnc e;
                monitor_enc_begin(&e, MONITOR_REPLY | msg.type, msg.id);
                monitor_put_u64(&e, MONITOR_F_STATUS, 0);
                int xfd = -1;
                if (msg.type == MONITOR_REQ_PLACEHOLDER)
                        monitor_put_u64(&e, MONITOR_F_COUNT, 1);
                if (msg.type == MONITOR_REQ_JAIL_SPAWN) {
                        pid_t p = fork();
                        if (p == 0)
                                _exit(0);
                        monitor_put_u64(&e, MONITOR_F_PID, (uint64_t)p);
                        int pp[2];
                        if (pipe2(pp, O_CLOEXEC) == 0) {
                                close(pp[1]);
                                xfd = pp[0];
                        }
                }
                (void)monitor_enc_end(&e);
                (void)send_with_fds(mon_fd, e.buf.data, e.buf.len, &xfd, xfd >= 0 ? 1 : 0, MSG_NOSIGNAL);
                if (xfd >= 0)
                        close(xfd);
                monitor_enc_done(&e);
        }
}

static Server srv;
static volatile int stop;
static unsigned long placed;
static int pool_error;

static void *pool(void *arg) {
        (void)arg;
        while (!stop) {
                VsError *err = NULL;
                if (monitor_link_placeholder(&srv, 1, ".vscode", VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY, &err) < 0) {
                        pool_error = 1;
                        vs_error_free(err);
                        break;
                }
                placed++;
        }
        return NULL;
}

static void calls_from_two_threads(void **state) {
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        mon_fd = sv[1];
        MonitorLink *ml = calloc(1, sizeof *ml);
        assert_non_null(ml);
        ml->fd = sv[0];
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&ml->lock, &attr);
        ml->loop_thread = pthread_self();
        srv.monitor = ml;
        pthread_t tm, tp;
        assert_int_equal(pthread_create(&tm, NULL, fake_monitor, NULL), 0);
        assert_int_equal(pthread_create(&tp, NULL, pool, NULL), 0);
        char *argv[] = { "/usr/bin/bwrap", "--", "/bin/true", NULL };
        VsLaunch l = { .argv = argv, .uid = 1001, .gid = 1001 };
        unsigned long starts = 0;
        for (; starts < 2000 && !pool_error; starts++) {
                VsWorkerProc w;
                int xfd;
                VsError *err = NULL;
                int r = monitor_link_jail_spawn(&srv, 1, "/ws", 1, &l, &w, &xfd, &err);
                if (r < 0)
                        fail_msg("start %lu (placeholders so far %lu): %s", starts, placed, vs_error_message(err));
                while (waitpid(w.pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                close(w.fd);
                close(w.stderr_fd);
                close(xfd);
        }
        stop = 1;
        assert_int_equal(pthread_join(tp, NULL), 0);
        assert_int_equal(pool_error, 0);
        assert_true(placed > 0);
        print_message("# %lu starts and %lu placeholders, each with its own reply\n", starts, placed);
        close(ml->fd);
        close(mon_fd);
        assert_int_equal(pthread_join(tm, NULL), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(calls_from_two_threads),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
