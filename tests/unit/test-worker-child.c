/* SPDX-License-Identifier: MIT */
/* One child process of the worker (src/worker/child.c), as a command and a
 * session use it, and the set-up before it (exec_prepare in exec.c): the
 * exit code a shell shows, a deadline that kills the whole group, a kill
 * that reaches what the child started, an exec failure reported without a
 * child left behind, and when the loop must wake for it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "fd-util.h"
#include "path-util.h"
#include "time-util.h"
#include "worker-fixture.h"
#include "worker.h"

static char root[64];
static Policy policy;
static char *init_env[] = { (char *) "PATH=/usr/bin:/bin", (char *) "KEEP=init", (char *) "OVER=init", NULL };
static ExecDefaults defaults = { .env = init_env };

static int setup(void **state) {
        fixture_tmp(root, "child");
        ProtocolInit init = { .mode = PROTOCOL_MODE_DIRECT, .workspace = root };
        fixture_policy(&policy, &init);
        return 0;
}

static int teardown(void **state) {
        policy_done(&policy);
        return fixture_tmp_remove(root);
}

/* Starts sh -c script with stdout to out_fd (or /dev/null). */
static int spawn_sh(const char *script, int out_fd, ChildDetach detach, uint64_t timeout_ms, Child *ret) {
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        assert_int_equal(exec_prepare(&policy, &defaults, NULL, NULL, "sh", &x, &err), 0);
        _cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_true(devnull >= 0);
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) script, NULL };
        return child_spawn(&x, &defaults, argv, devnull, out_fd >= 0 ? out_fd : devnull, devnull, detach,
                           timeout_ms, ret);
}

/* Waits as the worker's loop does (waitpid on the pid) and hands the
 * status over. */
static void reap(Child *c) {
        int status;
        pid_t r;
        while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR)
                ;
        assert_int_equal(r, c->pid);
        assert_false(child_reaped(c, c->pid + 1, status)); /* another pid is not this child */
        assert_true(child_reaped(c, c->pid, status));
        assert_false(child_reaped(c, c->pid, status)); /* once */
}

static void test_exit_codes(void **state) {
        Child c;
        assert_int_equal(spawn_sh("exit 3", -1, CHILD_GROUP, 0, &c), 0);
        assert_true(c.pid > 0);
        assert_int_equal(c.deadline_us, 0);
        reap(&c);
        int sig = -1;
        assert_int_equal(child_exit_code(&c, &sig), 3);
        assert_int_equal(sig, 0);
        assert_true(c.reaped_us >= c.start_us);

        assert_int_equal(spawn_sh("kill -TERM $$", -1, CHILD_GROUP, 0, &c), 0);
        reap(&c);
        assert_int_equal(child_exit_code(&c, &sig), 128 + SIGTERM);
        assert_int_equal(sig, SIGTERM);
}

/* The child leads its own group; the environment is init's overridden by
 * the request's. */
static void test_group_and_env(void **state) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        char *req_env[] = { (char *) "OVER=req", (char *) "NEW=req", NULL };
        assert_int_equal(exec_prepare(&policy, &defaults, NULL, req_env, "sh", &x, NULL), 0);
        assert_string_equal(x.path, "/usr/bin/sh");
        /* Field 5 of /proc/self/stat: the process group. */
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) "echo $KEEP $OVER $NEW; cut -d' ' -f5 /proc/$$/stat",
                         NULL };
        Child c;
        _cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_int_equal(child_spawn(&x, &defaults, argv, devnull, p[1], devnull, CHILD_GROUP, 0, &c), 0);
        close(p[1]);
        char buf[256] = { 0 };
        size_t n = 0;
        for (ssize_t r; (r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0;)
                n += (size_t) r;
        close(p[0]);
        reap(&c);
        char want[128];
        snprintf(want, sizeof want, "init req req\n%d\n", (int) c.pid);
        assert_string_equal(buf, want);
}

/* A command that cannot be found or run: 127/126 before any child, and an
 * execve failure after the clone comes back as its errno, reaped. */
static void test_unstartable(void **state) {
        _cleanup_(exec_prep_done) ExecPrep x = EXEC_PREP_INIT;
        assert_int_equal(exec_prepare(&policy, &defaults, NULL, NULL, "no-such-command-here", &x, NULL), 127);
        _cleanup_free_ char *noexec = path_join(root, "noexec");
        int fd = open(noexec, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
        char *env[] = { (char *) "PATH=", NULL }; /* PATH empty: the cwd */
        assert_int_equal(exec_prepare(&policy, &defaults, NULL, env, "noexec", &x, NULL), 126);

        /* By path: found, but execve refuses it. */
        assert_int_equal(exec_prepare(&policy, &defaults, NULL, NULL, noexec, &x, NULL), 0);
        char *argv[] = { noexec, NULL };
        Child c = { .pid = -7 };
        _cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        assert_int_equal(child_spawn(&x, &defaults, argv, devnull, devnull, devnull, CHILD_GROUP, 0, &c), EACCES);
        assert_int_equal(c.pid, -7); /* untouched */
        assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* nothing left to reap */
        assert_int_equal(errno, ECHILD);
}

/* A deadline kills the whole group: the grandchild the command left too. */
static void test_deadline_kills_group(void **state) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        Child c;
        assert_int_equal(spawn_sh("sleep 30 & echo $!; wait", p[1], CHILD_GROUP, 50, &c), 0);
        close(p[1]);
        char buf[32] = { 0 };
        assert_true(read(p[0], buf, sizeof buf - 1) > 0);
        assert_true(atoi(buf) > 0); /* the grandchild started */
        assert_true(c.deadline_us >= c.start_us + 50 * 1000);

        /* Before the deadline: nothing happens, the loop wakes at it. */
        assert_false(child_expire(&c, c.deadline_us - 1));
        assert_int_equal(child_next_us(&c, true), c.deadline_us);
        assert_int_equal(child_ms_until(c.deadline_us, c.deadline_us - 1500), 2);
        assert_true(child_expire(&c, c.deadline_us));
        assert_true(c.timed_out && c.killed);
        assert_false(child_expire(&c, c.deadline_us + 1)); /* once */
        /* Killed, not reaped: nothing to wake for. */
        assert_int_equal(child_next_us(&c, true), UINT64_MAX);
        reap(&c);
        int sig;
        assert_int_equal(child_exit_code(&c, &sig), 128 + SIGKILL);
        /* The pipe's write end was the grandchild's too: EOF means it is gone. */
        char rest[8];
        assert_int_equal(read(p[0], rest, sizeof rest), 0);
        close(p[0]);
}

/* Once reaped, the loop waits out the drain grace while output is open,
 * and wakes at once when it is closed. */
static void test_grace(void **state) {
        Child c;
        assert_int_equal(spawn_sh("exit 0", -1, CHILD_SESSION, 0, &c), 0);
        reap(&c);
        assert_int_equal(child_next_us(&c, true), c.reaped_us + CHILD_DRAIN_GRACE_US);
        assert_int_equal(child_next_us(&c, false), 0);
        assert_false(child_grace_over(&c, c.reaped_us + CHILD_DRAIN_GRACE_US - 1));
        assert_true(child_grace_over(&c, c.reaped_us + CHILD_DRAIN_GRACE_US));
        assert_int_equal(child_ms_until(0, now_us()), 0);
        assert_int_equal(child_ms_until(UINT64_MAX, now_us()), -1);
}

/* A session's signal reaches its group; child_wait reaps after a kill. */
static void test_signal_kill_wait(void **state) {
        Child c;
        assert_int_equal(spawn_sh("trap 'exit 42' USR1; while :; do sleep 0.01; done", -1, CHILD_SESSION, 0, &c), 0);
        usleep(100 * 1000); /* the trap is set */
        child_signal(&c, SIGUSR1);
        child_wait(&c);
        assert_true(c.reaped);
        assert_int_equal(child_exit_code(&c, NULL), 42);

        assert_int_equal(spawn_sh("sleep 30", -1, CHILD_SESSION, 0, &c), 0);
        child_kill(&c);
        assert_true(c.killed && !c.timed_out);
        child_wait(&c);
        assert_int_equal(child_exit_code(&c, NULL), 128 + SIGKILL);
}

/* No process (a forwarded connection): nothing is signalled, and it ends
 * when its connection does, without a grace. */
static void test_none(void **state) {
        Child c = CHILD_NONE;
        child_kill(&c); /* must not kill(-0, ...): this process's own group */
        child_signal(&c, SIGKILL);
        assert_true(c.killed);
        assert_false(child_grace_over(&c, UINT64_MAX - 1));
        assert_int_equal(child_next_us(&c, true), UINT64_MAX);
        assert_int_equal(child_next_us(&c, false), 0);
        assert_int_equal(child_exit_code(&c, NULL), 0);
        child_wait(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_codes),
                cmocka_unit_test(test_group_and_env),
                cmocka_unit_test(test_unstartable),
                cmocka_unit_test(test_deadline_kills_group),
                cmocka_unit_test(test_grace),
                cmocka_unit_test(test_signal_kill_wait),
                cmocka_unit_test(test_none),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
