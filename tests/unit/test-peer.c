/* SPDX-License-Identifier: MIT */
/* The daemon's peer check from what any process may read
 * (src/daemon/server/peer.c peer_check_by_maps): what a server without
 * root's rights uses for a root peer, whose /proc/PID/ns it may not read.
 * A process in our namespaces passes; one in a user namespace of its own,
 * or in a pid namespace below ours, is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer.h"

/* A child that enters the namespaces flags names (a pid namespace: its
 * child does), says its pid (as this process sees it) and waits to be
 * killed. *ret_pid: the process to check; *ret_reap: what to reap. */
static bool in_namespaces(int flags, pid_t *ret_pid, pid_t *ret_reap) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                close(p[0]);
                pid_t me = getpid();
                if (unshare(flags) < 0) {
                        me = -1;
                        (void)!write(p[1], &me, sizeof me);
                        _exit(1);
                }
                if (flags & CLONE_NEWPID) {
                        pid_t g = fork();
                        if (g == 0) {
                                pause();
                                _exit(0);
                        }
                        me = g; /* as the test sees it: the same pid namespace as this child's parent */
                        (void)!write(p[1], &me, sizeof me);
                        waitpid(g, NULL, 0);
                        _exit(0);
                }
                (void)!write(p[1], &me, sizeof me);
                pause();
                _exit(0);
        }
        close(p[1]);
        pid_t got = 0;
        assert_int_equal(read(p[0], &got, sizeof got), (ssize_t)sizeof got);
        close(p[0]);
        *ret_reap = c;
        *ret_pid = got;
        return got > 0;
}

/* The process checked (a grandchild, pid 1 of its own namespace, outlives
 * its parent otherwise) and the child. */
static void end(pid_t pid, pid_t reap) {
        kill(pid, SIGKILL);
        kill(reap, SIGKILL);
        waitpid(reap, NULL, 0);
}

static void same_namespaces_pass(void **state) {
        (void)state;
        char why[256] = "";
        assert_int_equal(peer_check_by_maps(getpid(), why, sizeof why), 0);
        /* A child: the same namespaces. */
        pid_t pid, reap;
        assert_true(in_namespaces(0, &pid, &reap));
        assert_int_equal(peer_check_by_maps(pid, why, sizeof why), 0);
        end(pid, reap);
}

static void user_namespace_refused(void **state) {
        (void)state;
        pid_t pid, reap;
        if (!in_namespaces(CLONE_NEWUSER, &pid, &reap)) {
                waitpid(reap, NULL, 0);
                skip(); /* no user namespaces here */
        }
        char why[256] = "";
        assert_int_equal(peer_check_by_maps(pid, why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "user namespace"));
        end(pid, reap);
}

static void pid_namespace_refused(void **state) {
        (void)state;
        pid_t pid, reap;
        /* As root a pid namespace alone; else inside a user namespace,
         * whose own check must not be what refuses it: the pid's is
         * looked at first. */
        if (!in_namespaces(CLONE_NEWPID | (getuid() ? CLONE_NEWUSER : 0), &pid, &reap)) {
                waitpid(reap, NULL, 0);
                skip();
        }
        /* The grandchild's pid as this test sees it: from its parent's
         * fork in the parent's (our) pid namespace. */
        char why[256] = "";
        assert_int_equal(peer_check_by_maps(pid, why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "pid namespace"));
        end(pid, reap);
}

static void gone_is_an_error(void **state) {
        (void)state;
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0)
                _exit(0);
        waitpid(c, NULL, 0);
        char why[256] = "";
        assert_true(peer_check_by_maps(c, why, sizeof why) < 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(same_namespaces_pass),
                cmocka_unit_test(user_namespace_refused),
                cmocka_unit_test(pid_namespace_refused),
                cmocka_unit_test(gone_is_an_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
