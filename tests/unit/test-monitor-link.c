/* SPDX-License-Identifier: MIT */
/* The server's side of the monitor link (src/daemon/monitor/monitor-link.c)
 * under calls from several threads: the loop's jail_spawn on the loop's
 * channel while starts' placeholders go out from the thread pool on the
 * pool's channel, several at once. Each call must take its own reply:
 * attack review 8 found jail_spawn looking for the id after its own,
 * which a pool thread's request had taken meanwhile, so a correct answer
 * read as "a jail started without its pid", and the daemon stopped (5 of
 * 5 runs, within 3 to 957 starts); since the pool's channel is answered in
 * any order (attack review 8b), each pool call must find its reply among
 * the others'. The link's code is compiled into this test (its MonitorLink
 * is its own); a correct monitor is played by two threads on the other
 * ends of the pairs, the pool's answering two requests at a time in the
 * reverse order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../src/daemon/monitor/monitor-link.c"

#define POOL_THREADS 3

/* One request read from fd, its fds closed: its length, or 0. */
static ssize_t read_request(int fd, uint8_t *b, MonitorMsg *msg, int flags) {
        union {
                struct cmsghdr h;
                char c[CMSG_SPACE(sizeof(int) * 8)];
        } u;
        struct iovec iov = { b, MONITOR_MSG_MAX };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &u, .msg_controllen = sizeof u };
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | flags);
        if (n <= 0)
                return 0;
        int fds[8];
        size_t nf = recv_take_fds(&mh, fds, 8, NULL);
        for (size_t i = 0; i < nf; i++)
                close(fds[i]);
        VsError *err = NULL;
        if (monitor_decode(b, (size_t)n, false, msg, &err) < 0) {
                vs_error_free(err);
                return 0;
        }
        return n;
}

/* The answer the monitor gives a placeholder named ".tK": K 0 made (1),
 * K 1 there already (0), K 2 refused (ENOENT). */
static void answer_placeholder(MonitorEnc *e, const MonitorMsg *msg) {
        const char *rel = monitor_field_str(monitor_field(msg, MONITOR_F_REL, -1));
        int k = rel ? rel[2] - '0' : 0;
        monitor_enc_begin(e, MONITOR_REPLY | msg->type, msg->id);
        monitor_put_u64(e, MONITOR_F_STATUS, k == 2 ? ENOENT : 0);
        if (k != 2)
                monitor_put_u64(e, MONITOR_F_COUNT, k == 0 ? 1 : 0);
        (void)monitor_enc_end(e);
}

/* The loop's channel: each request answered at once, a start with a
 * child's pid and an exec pipe. */
static void *fake_monitor(void *arg) {
        int fd = *(int *)arg;
        static uint8_t b[MONITOR_MSG_MAX];
        static MonitorMsg msg;
        while (read_request(fd, b, &msg, 0) > 0) {
                MonitorEnc e;
                monitor_enc_begin(&e, MONITOR_REPLY | msg.type, msg.id);
                monitor_put_u64(&e, MONITOR_F_STATUS, 0);
                int xfd = -1;
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
                (void)send_with_fds(fd, e.buf.data, e.buf.len, &xfd, xfd >= 0 ? 1 : 0, MSG_NOSIGNAL);
                if (xfd >= 0)
                        close(xfd);
                monitor_enc_done(&e);
        }
        return NULL;
}

static unsigned long reordered;

/* The pool's channel: a request, and a second one if it comes within
 * 2 ms; the later answered first. */
static void *fake_pool_monitor(void *arg) {
        int fd = *(int *)arg;
        static uint8_t b[2][MONITOR_MSG_MAX];
        static MonitorMsg msg[2];
        while (read_request(fd, b[0], &msg[0], 0) > 0) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int two = poll(&p, 1, 2) == 1 && read_request(fd, b[1], &msg[1], MSG_DONTWAIT) > 0;
                reordered += two;
                for (int i = two; i >= 0; i--) {
                        MonitorEnc e;
                        answer_placeholder(&e, &msg[i]);
                        (void)send(fd, e.buf.data, e.buf.len, MSG_NOSIGNAL);
                        monitor_enc_done(&e);
                }
        }
        return NULL;
}

static Server srv;
static volatile int stop;
static unsigned long placed;
static int pool_error;

static void *pool(void *arg) {
        int k = (int)(intptr_t)arg % 3;
        char rel[8];
        snprintf(rel, sizeof rel, ".t%d", k);
        int want = k == 0 ? 1 : k == 1 ? 0 : -ENOENT;
        while (!stop) {
                VsError *err = NULL;
                int r = monitor_link_placeholder(&srv, 1, rel, VS_HOST_MAKE_DIR, VS_HOST_TEXT_EMPTY, &err);
                vs_error_free(err);
                if (r != want) {
                        pool_error = 1;
                        break;
                }
                __atomic_add_fetch(&placed, 1, __ATOMIC_RELAXED);
        }
        return NULL;
}

static void calls_from_several_threads(void **state) {
        (void)state;
        int sv[2], pv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pv), 0);
        MonitorLink *ml = calloc(1, sizeof *ml);
        assert_non_null(ml);
        link_init(ml, sv[0], pv[0]);
        srv.monitor = ml;
        pthread_t tm, tpm, tp[POOL_THREADS];
        assert_int_equal(pthread_create(&tm, NULL, fake_monitor, &sv[1]), 0);
        assert_int_equal(pthread_create(&tpm, NULL, fake_pool_monitor, &pv[1]), 0);
        for (int i = 0; i < POOL_THREADS; i++)
                assert_int_equal(pthread_create(&tp[i], NULL, pool, (void *)(intptr_t)i), 0);
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
        for (int i = 0; i < POOL_THREADS; i++)
                assert_int_equal(pthread_join(tp[i], NULL), 0);
        assert_int_equal(pool_error, 0);
        assert_true(placed > 0);
        assert_true(reordered > 0);
        print_message("# %lu starts and %lu placeholders (%lu pairs answered in reverse), each with its own reply\n",
                      starts, placed, reordered);
        close(sv[0]);
        close(pv[0]);
        assert_int_equal(pthread_join(tm, NULL), 0);
        assert_int_equal(pthread_join(tpm, NULL), 0);
        close(sv[1]);
        close(pv[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(calls_from_several_threads),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
