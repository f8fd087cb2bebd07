/* SPDX-License-Identifier: MIT */
/* The root monitor's loop (src/daemon/monitor/monitor.c) on a real
 * SOCK_SEQPACKET pair, the test playing the server: nothing before hello;
 * a workspace opened only when the monitor itself reaches it from /
 * without a symlink and it belongs to the uid named, with an allowed
 * group; status counts; close; what is not served yet says so; and every
 * protocol breach (a refused datagram, a request out of state,
 * descriptors it does not take, an oversized datagram) ends the monitor. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor-proto.h"
#include "monitor.h"

typedef struct Fixture {
        int server;
        Monitor *mon;
        char dir[64];
        uint64_t id;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        f->server = sv[0];
        assert_int_equal(monitor_new(sv[1], &f->mon), 0);
        snprintf(f->dir, sizeof f->dir, "/tmp/test-monitor.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        monitor_free(f->mon);
        close(f->server);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* Sends e (with fd beside it when fd >= 0) and has the monitor step. */
static int ask(Fixture *f, MonitorEnc *e, int fd) {
        assert_int_equal(monitor_enc_end(e), 0);
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = e->buf.data, .iov_len = e->buf.len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                mh.msg_control = &control;
                mh.msg_controllen = sizeof control;
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof fd);
        }
        assert_int_equal(sendmsg(f->server, &mh, 0), (ssize_t)e->buf.len);
        monitor_enc_done(e);
        return monitor_step(f->mon);
}

static MonitorMsg answer;

/* The monitor's reply to the last request: its status. */
static uint64_t status_of(Fixture *f) {
        static uint8_t buf[MONITOR_MSG_MAX];
        ssize_t n = recv(f->server, buf, sizeof buf, MSG_DONTWAIT);
        assert_true(n > 0);
        VsError *err = NULL;
        assert_int_equal(monitor_decode(buf, (size_t)n, true, &answer, &err), 0);
        assert_int_equal(answer.id, f->id);
        return monitor_field(&answer, MONITOR_F_STATUS, -1)->u64;
}

static void begin(Fixture *f, MonitorEnc *e, MonitorReq t) {
        monitor_enc_begin(e, t, ++f->id);
}

static void hello(Fixture *f) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_HELLO);
        monitor_put_u64(&e, MONITOR_F_VERSION, 1);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
}

static int ws_open(Fixture *f, const char *path, uint64_t uid, uint64_t gid) {
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_WS_OPEN);
        monitor_put_str(&e, MONITOR_F_PATH, path);
        monitor_put_u64(&e, MONITOR_F_UID, uid);
        monitor_put_u64(&e, MONITOR_F_GID, gid);
        assert_int_equal(ask(f, &e, -1), 0);
        return (int)status_of(f);
}

static void nothing_before_hello(void **state) {
        Fixture *f = *state;
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void hello_once(void **state) {
        Fixture *f = *state;
        hello(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_HELLO);
        monitor_put_u64(&e, MONITOR_F_VERSION, 1);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void workspaces(void **state) {
        Fixture *f = *state;
        hello(f);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), 0);
        assert_int_equal(ws_open(f, f->dir, st.st_uid, st.st_gid), 0);
        uint64_t handle = monitor_field(&answer, MONITOR_F_WS, -1)->u64;
        assert_true(handle > 0);
        /* Not that user's; a group neither the directory's nor the owner's. */
        assert_int_equal(ws_open(f, f->dir, st.st_uid + 1, st.st_gid), EPERM);
        assert_int_equal(ws_open(f, f->dir, st.st_uid, 4242), EPERM);
        /* A symlink anywhere on the way, at the end or before it. */
        char link[128], below[160];
        snprintf(link, sizeof link, "%s/link", f->dir);
        assert_int_equal(symlink(f->dir, link), 0);
        assert_int_equal(ws_open(f, link, st.st_uid, st.st_gid), ELOOP);
        snprintf(below, sizeof below, "%s/sub", f->dir);
        assert_int_equal(mkdir(below, 0700), 0);
        snprintf(below, sizeof below, "%s/link/sub", f->dir);
        assert_int_equal(ws_open(f, below, st.st_uid, st.st_gid), ELOOP);
        /* Not a directory; missing. */
        char file[128];
        snprintf(file, sizeof file, "%s/file", f->dir);
        close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        assert_int_equal(ws_open(f, file, st.st_uid, st.st_gid), ENOTDIR);
        snprintf(file, sizeof file, "%s/missing", f->dir);
        assert_int_equal(ws_open(f, file, st.st_uid, st.st_gid), ENOENT);

        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        assert_int_equal(monitor_field(&answer, MONITOR_F_PID, -1)->u64, (uint64_t)getpid());
        assert_int_equal(monitor_field(&answer, MONITOR_F_COUNT, -1)->u64, 1);

        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), 0);
        begin(f, &e, MONITOR_REQ_WS_CLOSE);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), ENOENT);

        /* Not served yet: said, not pretended. */
        begin(f, &e, MONITOR_REQ_JAIL_KILL);
        monitor_put_u64(&e, MONITOR_F_WS, handle);
        monitor_put_u64(&e, MONITOR_F_GEN, 1);
        assert_int_equal(ask(f, &e, -1), 0);
        assert_int_equal(status_of(f), EOPNOTSUPP);
}

static void breaches_end_it(void **state) {
        Fixture *f = *state;
        hello(f);
        /* Garbage. */
        assert_int_equal(send(f->server, "nonsense, not a request", 23, 0), 23);
        assert_int_equal(monitor_step(f->mon), -EPROTO);
        /* A descriptor with a request that takes none. */
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_STATUS);
        assert_int_equal(ask(f, &e, 0), -EPROTO);
        /* Longer than any request. */
        static uint8_t big[MONITOR_MSG_MAX + 100];
        assert_int_equal(send(f->server, big, sizeof big, 0), (ssize_t)sizeof big);
        assert_int_equal(monitor_step(f->mon), -EPROTO);
        /* A reply sent as a request. */
        monitor_enc_begin(&e, MONITOR_REPLY | MONITOR_REQ_STATUS, 1);
        monitor_put_u64(&e, MONITOR_F_STATUS, 0);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
}

static void shutdown_and_close(void **state) {
        Fixture *f = *state;
        hello(f);
        MonitorEnc e;
        begin(f, &e, MONITOR_REQ_SHUTDOWN);
        assert_int_equal(ask(f, &e, -1), 1);
        assert_int_equal(status_of(f), 0);
        /* Once stopping, nothing new. */
        begin(f, &e, MONITOR_REQ_WS_OPEN);
        monitor_put_str(&e, MONITOR_F_PATH, f->dir);
        monitor_put_u64(&e, MONITOR_F_UID, 0);
        monitor_put_u64(&e, MONITOR_F_GID, 0);
        assert_int_equal(ask(f, &e, -1), -EPROTO);
        /* The server's end closing ends the monitor. */
        close(f->server);
        f->server = -1;
        assert_int_equal(monitor_step(f->mon), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(nothing_before_hello, setup, teardown),
                cmocka_unit_test_setup_teardown(hello_once, setup, teardown),
                cmocka_unit_test_setup_teardown(workspaces, setup, teardown),
                cmocka_unit_test_setup_teardown(breaches_end_it, setup, teardown),
                cmocka_unit_test_setup_teardown(shutdown_and_close, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
