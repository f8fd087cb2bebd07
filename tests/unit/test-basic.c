/* SPDX-License-Identifier: MIT */
/* src/basic: errors, buffers, string vectors, paths, sha256. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base64.h"
#include "chase.h"
#include "mount-util.h"
#include "error.h"
#include "path-util.h"
#include "proc-tree.h"
#include "sha256.h"
#include "spawn-util.h"
#include "splice-half.h"
#include "strbuf.h"
#include "strv.h"
#include "user-util.h"
#include "time-util.h"

static void test_error_prefix(void **state) {
        VsError *e = NULL;
        assert_int_equal(vs_error_set_kind(&e, -EINVAL, "config_invalid", "bad %s", "glob"), -EINVAL);
        assert_int_equal(vs_error_prefix(&e, "sandbox.mask[%d]", 2), -EINVAL);
        assert_int_equal(vs_error_prefix(&e, "vectora.toml:%d:%d", 12, 5), -EINVAL);
        assert_string_equal(vs_error_message(e), "vectora.toml:12:5: sandbox.mask[2]: bad glob");
        assert_string_equal(vs_error_kind(e), "config_invalid");
        vs_error_free(e);
        /* A NULL err is allowed: the code still comes back. */
        assert_int_equal(vs_error_set(NULL, -ENOENT, "x"), -ENOENT);
        /* A non-negative code is never returned as success. */
        e = NULL;
        assert_int_equal(vs_error_set(&e, 0, "x"), -EIO);
        vs_error_free(e);
}

static void test_strbuf(void **state) {
        StrBuf b = STRBUF_INIT;
        assert_int_equal(strbuf_appends(&b, "abc"), 0);
        assert_int_equal(strbuf_appendf(&b, "-%d-", 42), 0);
        assert_string_equal(b.data, "abc-42-");
        strbuf_consume(&b, 4);
        assert_string_equal(b.data, "42-");
        assert_int_equal(b.len, 3);
        strbuf_done(&b);
        StrBuf c = { .max = 4 };
        assert_int_equal(strbuf_appends(&c, "1234"), 0);
        assert_int_equal(strbuf_appends(&c, "5"), -ENOBUFS);
        assert_string_equal(c.data, "1234");
        strbuf_done(&c);
}

static void test_strv(void **state) {
        char **l = NULL;
        assert_int_equal(strv_extend(&l, "a"), 0);
        assert_int_equal(strv_extendf(&l, "b%d", 2), 0);
        assert_int_equal(strv_length(l), 2);
        assert_true(strv_contains(l, "b2"));
        assert_false(strv_contains(l, "b"));
        char *j = strv_join(l, ", ");
        assert_string_equal(j, "a, b2");
        free(j);
        char **c = strv_copy(l);
        assert_string_equal(c[1], "b2");
        strv_free(c);

        /* What a has and b lacks, in a's order, duplicates kept. */
        char *a[] = { "z", "b2", "m", "a", "m", "q", NULL }, **d = NULL;
        assert_int_equal(strv_difference(a, l, &d), 0);
        assert_int_equal(strv_length(d), 4);
        assert_string_equal(d[0], "z");
        assert_string_equal(d[1], "m");
        assert_string_equal(d[2], "m");
        assert_string_equal(d[3], "q");
        strv_free(d);
        /* Nothing lacking: an empty list, not NULL; an empty or NULL b lacks all. */
        assert_int_equal(strv_difference(l, a, &d), 0);
        assert_non_null(d);
        assert_null(d[0]);
        strv_free(d);
        assert_int_equal(strv_difference(NULL, l, &d), 0);
        assert_non_null(d);
        assert_null(d[0]);
        strv_free(d);
        assert_int_equal(strv_difference(l, NULL, &d), 0);
        assert_int_equal(strv_length(d), 2);
        strv_free(d);
        strv_free(l);
}

static void test_paths(void **state) {
        struct {
                const char *in, *out;
        } cases[] = {
                { "/", "/" },       { "//a//b/", "/a/b" }, { "/a/./b", "/a/b" },     { "/a/../b", "/b" },
                { "/../..", "/" },  { "/a/b/..", "/a" },   { "/a/b/../../..", "/" }, { "/a/..b", "/a/..b" },
                { "/a/b/../c", "/a/c" }, { "/a/../../b/./c/..", "/b" },
                { "/a/b/c/../../d/", "/a/d" }, { "/a/b/../../c", "/c" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *n = path_normalize(cases[i].in);
                assert_string_equal(n, cases[i].out);
                free(n);
        }
        assert_null(path_normalize("rel/x"));
        char *j = path_join("/ws/", "/x");
        assert_string_equal(j, "/ws/x");
        free(j);
        j = path_join("/", "x");
        assert_string_equal(j, "/x");
        free(j);
        assert_string_equal(path_startswith("/ws/a/b", "/ws"), "a/b");
        assert_string_equal(path_startswith("/ws", "/ws"), "");
        assert_null(path_startswith("/wsx", "/ws"));
        assert_string_equal(path_startswith("/a", "/"), "a");
        /* The innermost listed path decides; at equal length ro wins. */
        char *rw[] = { (char *)"/ws", (char *)"/ws/a/b", NULL }, *ro[] = { (char *)"/ws/a", (char *)"/ro", NULL };
        assert_true(path_listed_writable("/ws/x", rw, ro));
        assert_false(path_listed_writable("/ws/a/x", rw, ro));
        assert_true(path_listed_writable("/ws/a/b/x", rw, ro));
        assert_false(path_listed_writable("/ro/x", rw, ro));
        assert_false(path_listed_writable("/elsewhere", rw, ro));
        assert_false(path_listed_writable("/ws/x", NULL, NULL));
        char *same[] = { (char *)"/ws", NULL };
        assert_false(path_listed_writable("/ws/x", same, same));
}

static void test_sha256(void **state) {
        char h[SHA256_HEX_LEN + 1];
        sha256_hex("", 0, h);
        assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        sha256_hex("abc", 3, h);
        assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        Sha256 s;
        sha256_begin(&s);
        sha256_feed(&s, "a", 1);
        sha256_feed(&s, "bc", 2);
        sha256_end_hex(&s, h);
        assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_base64(void **state) {
        /* RFC 4648's vectors, both ways. */
        static const char *const v[][2] = { { "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },
                                            { "foo", "Zm9v" },  { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
                                            { "foobar", "Zm9vYmFy" } };
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                size_t n = 0;
                char *e = base64_encode_alloc(v[i][0], strlen(v[i][0]), &n);
                assert_string_equal(e, v[i][1]);
                assert_int_equal(n, strlen(v[i][1]));
                free(e);
                char *d = NULL;
                assert_int_equal(base64_decode_alloc(v[i][1], strlen(v[i][1]), &d, &n), 0);
                assert_int_equal(n, strlen(v[i][0]));
                assert_memory_equal(d, v[i][0], n);
                assert_int_equal(d[n], 0);
                free(d);
        }
        /* Bytes that are not text survive. */
        const char bin[] = { 0, (char)0xff, 0x10, (char)0x80 };
        size_t n = 0;
        char *e = base64_encode_alloc(bin, sizeof bin, NULL), *d = NULL;
        assert_int_equal(base64_decode_alloc(e, strlen(e), &d, &n), 0);
        assert_int_equal(n, sizeof bin);
        assert_memory_equal(d, bin, n);
        free(e);
        free(d);
        /* Not base64: refused, nothing returned. */
        d = NULL;
        assert_int_equal(base64_decode_alloc("Zm9v!", 5, &d, &n), -EINVAL);
        assert_int_equal(base64_decode_alloc("Zm9vY", 5, &d, &n), -EINVAL);
        assert_null(d);
}

/* A half whose source fills its pipe grows it (within the process's
 * budget, given back when the half is done); bytes still arrive whole and
 * in order. */
static void test_splice_half_grows(void **state) {
        (void)state;
        int sp[2], dp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, dp), 0);
        int big = 4 << 20;
        (void)setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        SpliceHalf h;
        assert_int_equal(splice_half_init(&h, 65536), 0);
        size_t cap0 = h.cap;
        static unsigned char out[256 * 1024], in[256 * 1024];
        for (size_t i = 0; i < sizeof out; i++)
                out[i] = (unsigned char)(i * 7 + i / 251);
        size_t sent = 0, got = 0;
        while (sent < sizeof out) {
                ssize_t n = write(sp[0], out + sent, sizeof out - sent);
                if (n <= 0)
                        break;
                sent += (size_t)n;
        }
        assert_true(sent > cap0);
        for (int round = 0; round < 1000 && got < sent; round++) {
                if (splice_half_wants(&h))
                        assert_int_equal(splice_half_take(&h, sp[1]), 0);
                assert_true(splice_half_give(&h, dp[0]));
                for (ssize_t n; (n = read(dp[1], in + got, sizeof in - got)) > 0;)
                        got += (size_t)n;
        }
        assert_int_equal(got, sent);
        assert_memory_equal(in, out, got);
        if (h.buf)
                skip(); /* the kernel refused splice: nothing grows */
        /* Refused (pipe-max-size under 1 MiB, the user's pipe pages
         * spent), the half goes on with its pipe: only the bytes count. */
        if (h.grown) {
                assert_true(h.cap > cap0);
                assert_int_equal(splice_half_grown_total(), h.grown);
        }
        assert_true(h.grow_tried);
        splice_half_done(&h);
        assert_int_equal(splice_half_grown_total(), 0);
        for (int k = 0; k < 2; k++) {
                close(sp[k]);
                close(dp[k]);
        }
}

static void test_clock(void **state) {
        uint64_t a = now_us();
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        uint64_t b = now_us();
        assert_true(b >= a + 2000);
        assert_true(now_ms() >= b / 1000);
}

static void on_signal(int sig) {
}

/* What a child of spawn_fork() or spawn_vfork() checks: exit 0 only if
 * SIGPIPE (ignored by the parent) and SIGTERM (handled) are back to their
 * defaults and nothing is blocked (the parent blocks SIGUSR1; spawn_vfork
 * blocks everything around its clone). */
static int child_signals_clean(void *unused) {
        struct sigaction cur;
        sigset_t mask;
        int bad = 0;
        bad |= sigaction(SIGPIPE, NULL, &cur) < 0 || cur.sa_handler != SIG_DFL;
        bad |= sigaction(SIGTERM, NULL, &cur) < 0 || cur.sa_handler != SIG_DFL;
        bad |= sigprocmask(SIG_SETMASK, NULL, &mask) < 0 || sigismember(&mask, SIGUSR1) || sigismember(&mask, SIGTERM) ||
               sigismember(&mask, SIGCHLD);
        return bad ? 3 : 0;
}

/* The child starts clean even when the parent ignores SIGPIPE, handles
 * SIGTERM and blocks SIGUSR1, both ways of starting one; the parent keeps
 * its own dispositions and mask (a vfork child shares its memory, not its
 * signal state). */
static void test_spawn_clean_signals(void **state) {
        struct sigaction old_pipe, old_term, sa = { .sa_handler = SIG_IGN };
        assert_int_equal(sigaction(SIGPIPE, &sa, &old_pipe), 0);
        sa.sa_handler = on_signal; /* never called: only the disposition is looked at */
        assert_int_equal(sigaction(SIGTERM, &sa, &old_term), 0);
        sigset_t usr1, old_mask;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        assert_int_equal(sigprocmask(SIG_BLOCK, &usr1, &old_mask), 0);

        pid_t pid = spawn_fork(0);
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(child_signals_clean(NULL));
        assert_int_equal(spawn_wait(pid), 0);

        pid = spawn_vfork(child_signals_clean, NULL);
        assert_true(pid > 0);
        assert_int_equal(spawn_wait(pid), 0);
        struct sigaction cur;
        sigset_t mask;
        assert_int_equal(sigaction(SIGTERM, NULL, &cur), 0);
        assert_ptr_equal(cur.sa_handler, on_signal);
        assert_int_equal(sigaction(SIGPIPE, NULL, &cur), 0);
        assert_ptr_equal(cur.sa_handler, SIG_IGN);
        assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &mask), 0);
        assert_true(sigismember(&mask, SIGUSR1));
        assert_false(sigismember(&mask, SIGTERM));

        assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
        assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
        assert_int_equal(sigaction(SIGTERM, &old_term, NULL), 0);
}

/* A spawn_vfork child shares the caller's memory until it execs: what it
 * writes there is seen by the caller (which is why the daemon's child
 * writes nothing but its stack), and its exec error or exit status comes
 * back as with fork. */
static int child_exec_missing(void *arg) {
        char *argv[] = { (char *)"/nonexistent/vectora-test", NULL };
        execv(argv[0], argv);
        *(int *)arg = errno;
        return 7;
}

static void test_spawn_vfork_shares_memory(void **state) {
        int seen = 0;
        pid_t pid = spawn_vfork(child_exec_missing, &seen);
        assert_true(pid > 0);
        assert_int_equal(spawn_wait(pid), 7);
        assert_int_equal(seen, ENOENT);
}

static void test_spawn_wait_and_kill(void **state) {
        pid_t pid = spawn_fork(0);
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(42);
        assert_int_equal(spawn_wait(pid), 42);
        assert_int_equal(spawn_wait(pid), -ECHILD); /* reaped once */

        pid = spawn_fork(0);
        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        assert_int_equal(kill(pid, SIGTERM), 0);
        assert_int_equal(spawn_wait(pid), 128 + SIGTERM);

        pid = spawn_fork(0);
        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        pid_t p = pid;
        spawn_killp(&p);
        assert_int_equal(p, 0);
        assert_int_equal(kill(pid, 0), -1); /* killed and reaped: no such process */
        spawn_killp(&p); /* 0: nothing to do */
}

/* A process stuck in pause() is S: until its first is seen so, the looks
 * retry (it may still be starting). */
static bool settles_quiet(const pid_t *pids, size_t n) {
        for (int i = 0; i < 200; i++) {
                if (!procs_any_active(pids, n))
                        return true;
                usleep(5000);
        }
        return false;
}

/* The tree walk sees a child and its grandchild (and the grandchild's
 * extra thread is counted apart from it); a sleeping tree is not active,
 * a spinning process is, a process gone is not. The daemon's looks at a
 * jail's leftovers end on "not active" (tools.c, cgroup.c). */
static void test_proc_tree(void **state) {
        pid_t self = getpid();
        pid_t child = spawn_fork(0);
        assert_true(child >= 0);
        if (child == 0) {
                if (spawn_fork(0) == 0) {
                        pause();
                        _exit(0);
                }
                pause();
                _exit(0);
        }
        pid_t *pids = NULL;
        size_t threads = 0;
        int n = -1;
        for (int i = 0; i < 200 && n < 3; i++) { /* self, child, grandchild */
                free(pids);
                pids = NULL;
                n = proc_tree_pids(self, &pids, &threads);
                if (n < 3)
                        usleep(5000);
        }
        assert_int_equal(n, 3);
        assert_int_equal(pids[0], self < child ? self : child);
        assert_true(threads >= 3);
        /* This process runs the walk itself: only the others are asked. */
        pid_t others[2];
        size_t k = 0;
        for (int i = 0; i < n; i++)
                if (pids[i] != self)
                        others[k++] = pids[i];
        assert_int_equal(k, 2);
        assert_true(settles_quiet(others, 2));

        pid_t spin = spawn_fork(0);
        assert_true(spin >= 0);
        if (spin == 0)
                for (;;)
                        ;
        bool seen = false;
        for (int i = 0; i < 200 && !seen; i++) /* runnable or running: R */
                seen = procs_any_active(&spin, 1);
        assert_true(seen);
        pid_t p = spin;
        spawn_killp(&p);
        assert_false(procs_any_active(&spin, 1)); /* gone */
        free(pids);
        assert_int_equal(proc_tree_pids(spin, &pids, NULL), -ESRCH);
        assert_null(pids);
        for (size_t i = 0; i < k; i++) /* the grandchild is not this process's to reap */
                kill(others[i], SIGKILL);
        assert_int_equal(spawn_wait(child), 128 + SIGKILL);
}

/* With a parent-death signal the grandchild ends with its parent; a pipe
 * tells the test when it is gone (its write end closes at its death). */
static void test_spawn_parent_death(void **state) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t mid = spawn_fork(0);
        assert_true(mid >= 0);
        if (mid == 0) {
                close(p[0]);
                pid_t g = spawn_fork(SIGKILL);
                if (g < 0)
                        _exit(1);
                if (g == 0) {
                        pause(); /* holds p[1] until SIGKILL */
                        _exit(0);
                }
                _exit(0); /* the parent dies at once */
        }
        close(p[1]);
        assert_int_equal(spawn_wait(mid), 0);
        char b;
        /* EOF: the grandchild, the last holder of the write end, died. A
         * grandchild that outlived its parent would block here (the test's
         * timeout fails it). */
        assert_int_equal(read(p[0], &b, 1), 0);
        close(p[0]);
}

static bool has_marker(int dirfd, const char *path, void *userdata) {
        struct stat st;
        return fstatat(dirfd, "marker", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* chase_beneath below ws (test_chase's tree): 0, or the number of the
 * check that failed (a child's exit status). */
static int beneath_checks(int ws) {
        static const struct {
                const char *rel;
                int flags, want; /* want: 0 a descriptor, else the errno */
        } cases[] = {
                { "a/b/f", O_RDONLY, 0 },
                { "./a//b/./f", O_RDONLY, 0 },
                { "", O_PATH | O_DIRECTORY, 0 },
                { ".", O_PATH | O_DIRECTORY, 0 },
                { "a/b/", O_PATH | O_DIRECTORY, 0 },
                { "link", O_PATH, -ELOOP },
                { "link/x", O_PATH, -ELOOP },
                { "a/../link", O_PATH, -EXDEV },
                { "../ws", O_PATH, -EXDEV },
                { "/etc", O_PATH, -EXDEV },
                { "a/nope", O_PATH, -ENOENT },
                { "a/b/f/x", O_PATH, -ENOTDIR },
                /* A trailing slash or "." names a directory. */
                { "a/b/f/", O_RDONLY, -ENOTDIR },
                { "a/b/f/.", O_PATH, -ENOTDIR },
                { "a/b/f//", O_PATH, -ENOTDIR },
                { "link/", O_PATH, -ELOOP },
                { "link/.", O_RDONLY, -ELOOP },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                int fd = chase_beneath(ws, cases[i].rel, cases[i].flags);
                if (fd >= 0)
                        close(fd);
                if (cases[i].want ? fd != cases[i].want : fd < 0)
                        return (int)i + 1;
        }
        char longname[NAME_MAX + 8];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        int fd = chase_beneath(ws, longname, O_PATH);
        return fd == -ENAMETOOLONG ? 0 : 50;
}

/* This process refuses openat2 with ENOSYS from now on. */
static int no_openat2(void) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
}

/* The one resolver: nothing below a trusted directory is reached through a
 * symlink or "..", and chase_path() follows a link only outside the
 * untrusted roots. */
static void test_chase(void **state) {
        char tmpl[] = "/tmp/vs-test-chase-XXXXXX", p[1024], q[4096];
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        snprintf(p, sizeof p, "%s/ws/a/b", d);
        assert_int_equal(system((snprintf(q, sizeof q, "mkdir -p %s %s/host/real && touch %s/f", p, d, p), q)), 0);
        snprintf(p, sizeof p, "%s/ws/link", d);
        snprintf(q, sizeof q, "%s/host/real", d);
        assert_int_equal(symlink(q, p), 0);
        snprintf(p, sizeof p, "%s/host/alias", d);
        assert_int_equal(symlink("real", p), 0);
        snprintf(p, sizeof p, "%s/ws", d);
        int ws = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(ws >= 0);

        assert_int_equal(beneath_checks(ws), 0);
        /* The walk without openat2 (a kernel before 5.6, a filter that
         * refuses it): a child under a filter that says ENOSYS. */
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0)
                _exit(no_openat2() < 0 ? 99 : beneath_checks(ws));
        int status;
        assert_int_equal(waitpid(c, &status, 0), c);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        close(ws);
        /* From "/": an absolute path only, no link on the way. */
        snprintf(q, sizeof q, "%s/ws/a/b", d);
        int fd = chase_beneath_root(q, O_PATH | O_DIRECTORY);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(chase_beneath_root(q + 1, O_PATH), -EXDEV);
        snprintf(q, sizeof q, "%s/ws/link/.", d);
        assert_int_equal(chase_beneath_root(q, O_PATH | O_DIRECTORY), -ELOOP);
        snprintf(q, sizeof q, "%s/ws/../ws", d);
        assert_int_equal(chase_beneath_root(q, O_PATH | O_DIRECTORY), -EXDEV);

        ChaseResult cr;
        char *untrusted[] = { p, NULL };
        /* A link in an untrusted root is named, not followed. */
        snprintf(q, sizeof q, "%s/link/x", p);
        assert_int_equal(chase_path(q, untrusted, &cr), -ELOOP);
        snprintf(q, sizeof q, "%s/link", p);
        assert_string_equal(cr.link, q);
        assert_non_null(strstr(cr.link_target, "/host/real"));
        assert_int_equal(cr.fd, -1);
        chase_result_done(&cr);
        /* Without it, followed as realpath(3) would. */
        assert_int_equal(chase_path(q, NULL, &cr), 0);
        snprintf(q, sizeof q, "%s/host/real", d);
        assert_string_equal(cr.path, q);
        struct stat a, b;
        assert_int_equal(fstat(cr.fd, &a), 0);
        assert_int_equal(stat(q, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        chase_result_done(&cr);
        /* A host link (relative), "..", "." and doubled slashes. */
        snprintf(q, sizeof q, "%s//host/./alias/../alias", d);
        assert_int_equal(chase_path(q, untrusted, &cr), 0);
        snprintf(p, sizeof p, "%s/host/real", d);
        assert_string_equal(cr.path, p);
        chase_result_done(&cr);
        snprintf(q, sizeof q, "%s/ws/a/missing/more", d);
        assert_int_equal(chase_path(q, untrusted, &cr), -ENOENT);
        assert_string_equal(cr.path, q);
        chase_result_done(&cr);
        snprintf(q, sizeof q, "%s/ws/a/b/f/x", d);
        assert_int_equal(chase_path(q, untrusted, &cr), -ENOTDIR);
        chase_result_done(&cr);
        /* A root found on the way (a directory holding a marker) is
         * untrusted from there on: its links are named with the root. */
        snprintf(q, sizeof q, "%s/ws/marker", d);
        assert_int_equal(mkdir(q, 0755), 0);
        snprintf(q, sizeof q, "%s/ws/link/x", d);
        assert_int_equal(chase_path_dynamic(q, NULL, has_marker, NULL, &cr), -ELOOP);
        snprintf(p, sizeof p, "%s/ws", d);
        assert_string_equal(cr.link_root, p);
        chase_result_done(&cr);
        /* A loop of host links ends. */
        snprintf(p, sizeof p, "%s/host/loop", d);
        assert_int_equal(symlink("loop", p), 0);
        assert_int_equal(chase_path(p, NULL, &cr), -ELOOP);
        chase_result_done(&cr);
        assert_int_equal(system((snprintf(q, sizeof q, "rm -rf %s", d), q)), 0);
}

/* A jail's group: the directory's only where its owner is a member (a
 * supplementary member counts), else the owner's primary one, else the
 * overflow gid; never 0. (Attack review: a directory chowned to its
 * owner alone keeps group root; one with group shadow lent its jail
 * /etc/shadow.) */
static void test_user_jail_gid(void **state) {
        (void)state;
        unsigned long overflow = 65534;
        FILE *f = fopen("/proc/sys/kernel/overflowgid", "re");
        if (f) {
                assert_int_equal(fscanf(f, "%lu", &overflow), 1);
                fclose(f);
        }
        /* "daemon" (1:1 on Debian) is in no other group of a base system:
         * its own group, never root's nor shadow's. */
        struct passwd *pw = getpwnam("daemon");
        assert_non_null(pw);
        uid_t du = pw->pw_uid;
        gid_t dg = pw->pw_gid;
        assert_int_equal(user_jail_gid(du, dg), dg);
        assert_int_equal(user_jail_gid(du, 0), dg);
        struct group *shadow = getgrnam("shadow");
        if (shadow)
                assert_int_equal(user_jail_gid(du, shadow->gr_gid), dg);
        /* root's primary group is 0: the overflow gid instead. */
        assert_int_equal(user_jail_gid(0, 0), (gid_t)overflow);
        /* No account: the overflow gid whatever the directory has. */
        uid_t none = 4321;
        while (getpwuid(none))
                none++;
        assert_int_equal(user_jail_gid(none, 4321), (gid_t)overflow);
        assert_int_equal(user_jail_gid(none, 0), (gid_t)overflow);
        /* A supplementary member of a group that is the directory's: that
         * group when it is an ordinary one (a project's), the member's
         * primary group when it is a system group (docker, adm, ssl-cert:
         * a chgrp of the directory lends the jail nothing). Any group of
         * the system that lists a member with an account and another
         * primary group. */
        bool seen[2] = { false, false };
        struct group *g;
        setgrent();
        while ((g = getgrent()))
                for (char **m = g->gr_mem; g->gr_gid != 0 && m && *m; m++) {
                        struct passwd *mp = getpwnam(*m);
                        if (!mp || mp->pw_gid == g->gr_gid || mp->pw_gid == 0)
                                continue;
                        bool ordinary = g->gr_gid >= 1000 && g->gr_gid <= 60000;
                        assert_int_equal(user_jail_gid(mp->pw_uid, g->gr_gid), ordinary ? g->gr_gid : mp->pw_gid);
                        seen[ordinary] = true;
                }
        endgrent();
        for (int i = 0; i < 2; i++)
                if (!seen[i])
                        printf("# user_jail_gid: no %s group here lists a member with an account: that case unchecked\n",
                               i ? "ordinary" : "system");
}

/* chase_open_dir_local reaches what chase_open_dir does, refuses what it
 * refuses, and reads a mount's type from a mountinfo line (the FUSE case
 * itself, which needs root and /dev/fuse, is test-monitor's
 * ws_open_asks_no_file_system). */
static void test_chase_local(void **state) {
        (void)state;
        char tmpl[] = "/tmp/vs-test-local-XXXXXX", p[256];
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        snprintf(p, sizeof p, "%s/a", d);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/f", d);
        int f = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        close(f);
        snprintf(p, sizeof p, "%s/link", d);
        assert_int_equal(symlink("a", p), 0);

        snprintf(p, sizeof p, "%s/./a/", d);
        int fd = chase_open_dir_local(p), ref = chase_open_dir(p);
        assert_true(fd >= 0 && ref >= 0);
        struct stat a, b;
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(fstat(ref, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        close(fd);
        close(ref);
        fd = chase_open_dir_local("/");
        assert_true(fd >= 0);
        close(fd);
        snprintf(p, sizeof p, "%s/link", d);
        assert_int_equal(chase_open_dir_local(p), -ELOOP);
        snprintf(p, sizeof p, "%s/link/x", d);
        assert_int_equal(chase_open_dir_local(p), -ELOOP);
        snprintf(p, sizeof p, "%s/f", d);
        assert_int_equal(chase_open_dir_local(p), -ENOTDIR);
        snprintf(p, sizeof p, "%s/a/../a", d);
        assert_int_equal(chase_open_dir_local(p), -EXDEV);
        snprintf(p, sizeof p, "%s/nope", d);
        assert_int_equal(chase_open_dir_local(p), -ENOENT);
        assert_int_equal(chase_open_dir_local("tmp"), -EINVAL);
        /* Its own working mount is in the table: the walk vouched for it. */
        int id;
        fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(fd_mount_id(fd, &id), 0);
        close(fd);
        char type[64];
        assert_int_equal(mount_fstype(id, type, sizeof type), 0);
        assert_false(fstype_is_user_served(type));
        assert_int_equal(mount_fstype(-5, type, sizeof type), -ENOENT);

        assert_true(mountinfo_line_parse("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 shared:7 - fuse.sshfs u@h:/ rw\n",
                                         &id, type, sizeof type));
        assert_int_equal(id, 36);
        assert_string_equal(type, "fuse.sshfs");
        assert_true(fstype_is_user_served(type));
        assert_true(mountinfo_line_parse("1 0 0:1 / / rw - ext4 /dev/root rw\n", &id, type, sizeof type));
        assert_string_equal(type, "ext4");
        assert_false(fstype_is_user_served(type));
        assert_true(fstype_is_user_served("fuse") && fstype_is_user_served("fuseblk"));
        assert_false(fstype_is_user_served("fusectl") || fstype_is_user_served("virtiofs"));
        assert_false(mountinfo_line_parse("x 35 98:0 / / rw - ext4 a rw", &id, type, sizeof type));
        assert_false(mountinfo_line_parse("36 35 98:0 / / rw ext4 a rw", &id, type, sizeof type));
        assert_false(mountinfo_line_parse("36 35 98:0 / / rw - ", &id, type, sizeof type));
        assert_false(mountinfo_line_parse("99999999999 35 98:0 / / rw - ext4 a rw", &id, type, sizeof type));
        assert_false(mountinfo_line_parse("36 35 98:0 / / rw - ext4 a rw", &id, type, 4));
        assert_true(system((snprintf(p, sizeof p, "rm -rf %s", d), p)) == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_error_prefix), cmocka_unit_test(test_strbuf), cmocka_unit_test(test_strv),
                cmocka_unit_test(test_paths),        cmocka_unit_test(test_sha256), cmocka_unit_test(test_chase),
                cmocka_unit_test(test_base64),       cmocka_unit_test(test_clock), cmocka_unit_test(test_splice_half_grows),
                cmocka_unit_test(test_spawn_clean_signals), cmocka_unit_test(test_spawn_wait_and_kill),
                cmocka_unit_test(test_spawn_parent_death),  cmocka_unit_test(test_spawn_vfork_shares_memory),
                cmocka_unit_test(test_proc_tree), cmocka_unit_test(test_user_jail_gid),
                cmocka_unit_test(test_chase_local),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
