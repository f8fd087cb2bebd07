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

#include <sys/file.h>
#include <sys/mman.h>

#include "fuse-stall.h"

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
        int item = monitor_next(msg, MONITOR_F_ITEM, -1);
        const char *rel = item >= 0 ? monitor_field_str(monitor_field(msg, MONITOR_F_REL, item)) : NULL;
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

/* The monitor's process lets the instance lock go at its end even while
 * a thread of its is stuck in a close a server's descriptor started: a
 * file on a FUSE mount whose FLUSH is never answered, sent with
 * log_reopen (refused, then closed off the loop). That thread keeps the
 * process's descriptor table past its _exit, and the lock with it, so a
 * daemon could never start again (attack review 8e; there the server
 * also sent /dev/fuse itself, queued behind, so nobody could answer). */
static void lock_let_go_with_a_close_held(void **state) {
        (void)state;
        if (getuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
                skip();
        char dir[] = "/tmp/test-monitor-link.XXXXXX", lockp[64], mnt[128], file[160];
        assert_non_null(mkdtemp(dir));
        snprintf(lockp, sizeof lockp, "%s/lock", dir);
        volatile int *stall;
        pid_t fs = fuse_mount_in(dir, mnt, &stall, 1); /* FLUSH never answered */
        snprintf(file, sizeof file, "%s/file", mnt);
        /* After the file system's server (forked): held by the monitor
         * alone. */
        int lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(lockfd >= 0);
        assert_int_equal(flock(lockfd, LOCK_EX | LOCK_NB), 0);
        int sv[2], pv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pv), 0);
        char *none[2] = { NULL, NULL };
        pid_t mon = fork();
        assert_true(mon >= 0);
        if (mon == 0) {
                close(sv[0]);
                close(pv[0]);
                monitor_child(sv[1], pv[1], getppid(), lockfd, 0, none, "/test/vectora-worker", NULL);
        }
        close(sv[1]);
        close(pv[1]);
        close(lockfd); /* the monitor's copy is the last */
        /* Opened after the fork: a copy in the monitor would be closed at
         * its start, and wait there. */
        int ffd = open(file, O_WRONLY | O_CLOEXEC);
        assert_true(ffd >= 0);
        static uint8_t b[MONITOR_MSG_MAX];
        MonitorEnc e;
        monitor_enc_begin(&e, MONITOR_REQ_HELLO, 1);
        monitor_put_u64(&e, MONITOR_F_VERSION, MONITOR_VERSION);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send(sv[0], e.buf.data, e.buf.len, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
        assert_true(recv(sv[0], b, sizeof b, 0) > 0);
        monitor_enc_begin(&e, MONITOR_REQ_LOG_REOPEN, 2);
        assert_int_equal(monitor_enc_end(&e), 0);
        assert_int_equal(send_with_fds(sv[0], e.buf.data, e.buf.len, &ffd, 1, 0), (ssize_t)e.buf.len);
        monitor_enc_done(&e);
        assert_true(recv(sv[0], b, sizeof b, 0) > 0); /* refused: a user's file system */
        usleep(200 * 1000); /* the closer is in the flush */
        close(sv[0]);
        close(pv[0]); /* the server's end: the monitor ends */
        bool let_go = false;
        int again = open(lockp, O_RDWR | O_CLOEXEC);
        assert_true(again >= 0);
        for (int i = 0; i < 50 && !let_go; i++) {
                let_go = flock(again, LOCK_EX | LOCK_NB) == 0;
                if (!let_go)
                        usleep(100 * 1000);
        }
        /* Released: the file system goes, the flush fails, the thread and
         * the process end. */
        kill(fs, SIGKILL);
        assert_int_equal(waitpid(fs, NULL, 0), fs);
        (void)umount2(mnt, MNT_DETACH);
        close(ffd);
        int st;
        assert_int_equal(waitpid(mon, &st, 0), mon);
        close(again);
        munmap((void *)stall, 4096);
        (void)unlink(lockp);
        (void)rmdir(mnt);
        (void)rmdir(dir);
        assert_true(let_go);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(calls_from_several_threads),
                cmocka_unit_test(lock_let_go_with_a_close_held),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
