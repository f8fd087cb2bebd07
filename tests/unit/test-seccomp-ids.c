/* SPDX-License-Identifier: MIT */
/* The chown family under the seccomp filter compiled for the jail's own
 * ids (issue 25, section 8): chown to the jail's own uid and gid, or to -1,
 * is allowed (it grants nothing a file the jail creates lacks), any other
 * id is refused by the filter itself, and xattrs stay refused whatever
 * their name. Programs are compiled with the system's libseccomp and
 * loaded into forked children; the expected verdicts come from the rule
 * ("low 32 bits in {own, 0xffffffff}"), not from running the code.
 *
 * A refusal by the filter is told from the kernel's own by calls the kernel
 * would fail differently: fchown(-1, ...) is EBADF and chown of a missing
 * path ENOENT when the filter lets them through, EPERM when it does not.
 * Run as root, the real-file checks also show the filter biting where the
 * kernel itself would allow the chown. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "handshake.h"
#include "msg-fixture.h"
#include "protocol.h"
#include "seccomp.h"
#include "seccomp-load.h"

#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif

#define CHILD_FAIL(...)                                                        \
        do {                                                                   \
                fprintf(stderr, "# child %s:%d: ", __FILE__, __LINE__);        \
                fprintf(stderr, __VA_ARGS__);                                  \
                fputc('\n', stderr);                                           \
                _exit(1);                                                      \
        } while (0)

/* call must fail with errno e, or succeed when e is 0. */
#define EXPECT(call, e)                                                        \
        do {                                                                   \
                errno = 0;                                                     \
                long _r = (long) (call);                                       \
                int _e = _r < 0 ? errno : 0;                                   \
                if (_e != (e))                                                 \
                        CHILD_FAIL("%s: got %ld errno %d (%s), want %d (%s)", #call, _r, _e, \
                                   strerror(_e), (e), strerror(e));            \
        } while (0)

typedef void (*ChildFn)(const void *arg);

static void assert_child_ok(ChildFn fn, const void *arg) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit no_core = { 0, 0 };
                (void) setrlimit(RLIMIT_CORE, &no_core);
                fn(arg);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
                fail_msg("child killed by signal %d", WTERMSIG(status));
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

typedef struct Program {
        VsSeccompOptions opts;
        void *bpf;
        size_t len;
} Program;

static void compile(Program *p, const VsSeccompOptions *o) {
        VsError *err = NULL;
        p->opts = *o;
        int r = seccomp_compile(o, &p->bpf, &p->len, &err);
        if (r < 0)
                fail_msg("seccomp_compile: %s", vs_error_message(err));
        assert_true(p->len > 0 && p->len % sizeof(struct sock_filter) == 0);
        assert_true(p->len / sizeof(struct sock_filter) <= BPF_MAXINSNS);
}

static VsSeccompOptions ids(uint32_t uid, uint32_t gid) {
        return (VsSeccompOptions) { .network = true, .own_ids = true, .uid = uid, .gid = gid };
}

static void child_load(const Program *p) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                CHILD_FAIL("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        int r = seccomp_load_bpf(p->bpf, p->len);
        if (r < 0)
                CHILD_FAIL("seccomp_load_bpf: %s", strerror(-r));
}

/* The specification: the kernel reads 32 bits; own and -1 pass. */
static bool id_allowed(uint64_t v, uint32_t own) {
        uint32_t low = (uint32_t) v;
        return low == own || low == UINT32_MAX;
}

/* ---- the rules table and the programs ------------------------------------- */

static void test_rules_conditional(void **state) {
        size_t n;
        const VsSeccompRule *rules = seccomp_rules(&n);
        static const char *const family[] = { "chown", "lchown", "fchown", "fchownat", "chown32", "lchown32", "fchown32" };
        for (size_t k = 0; k < ELEMENTSOF(family); k++) {
                bool found = false;
                for (size_t i = 0; i < n; i++)
                        if (streq(rules[i].syscall, family[k])) {
                                found = true;
                                assert_true(rules[i].conditional);
                                assert_false(rules[i].lockdown_only);
                                assert_int_equal(rules[i].errno_value, EPERM);
                                assert_non_null(strstr(rules[i].threat, "own"));
                        }
                if (!found)
                        fail_msg("no rule for %s", family[k]);
        }
}

static void test_programs(void **state) {
        /* Each option set with ids: bounded, deterministic, and the ids are
         * in the program (a program for other ids differs). */
        static const struct { bool network, lockdown; const char *name; } sets[] = {
                { true, false, "network" }, { false, false, "no network" }, { false, true, "lockdown" },
        };
        for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
                VsSeccompOptions o = ids(1000, 1000);
                o.network = sets[i].network;
                o.lockdown = sets[i].lockdown;
                Program a, b, none, other;
                compile(&a, &o);
                compile(&b, &o);
                assert_int_equal(a.len, b.len);
                assert_memory_equal(a.bpf, b.bpf, a.len);
                VsSeccompOptions n = o;
                n.own_ids = false;
                compile(&none, &n);
                VsSeccompOptions x = o;
                x.gid = 1001;
                compile(&other, &x);
                assert_false(a.len == other.len && memcmp(a.bpf, other.bpf, a.len) == 0);
                print_message("# %s: %zu instructions with the jail's ids, %zu without\n", sets[i].name,
                              a.len / sizeof(struct sock_filter), none.len / sizeof(struct sock_filter));
                free(a.bpf);
                free(b.bpf);
                free(none.bpf);
                free(other.bpf);
        }
}

/* ---- the matrix: every id the filter may see ------------------------------ */

static size_t candidates(uint32_t own, uint64_t *v, size_t max) {
        size_t n = 0;
#define ADD(x) do { if (n < max) v[n++] = (uint64_t)(x); } while (0)
        ADD(own);
        ADD(UINT32_MAX);
        ADD(UINT64_MAX);                               /* -1 as Go passes it */
        ADD(((uint64_t) 1 << 32) | own);               /* high garbage: the kernel reads own */
        ADD(((uint64_t) 0xdeadbeef << 32) | UINT32_MAX);
        ADD(0);
        ADD(1);
        ADD(65534);
        ADD(0xfffe);                                   /* 16-bit -1 is not -1 here */
        ADD(UINT32_MAX - 1);
        ADD(((uint64_t) 1 << 32) | (own ^ 1));
        ADD((uint64_t) own + 1);
        ADD((uint64_t) own - 1);
        for (unsigned b = 0; b < 32; b++) {
                ADD(own ^ (UINT32_C(1) << b));         /* one bit from own */
                ADD(UINT32_MAX ^ (UINT32_C(1) << b));  /* one bit from -1 */
                ADD(own | (UINT32_C(1) << b));
                ADD(UINT32_C(1) << b);
        }
        uint64_t x = 0x9e3779b97f4a7c15ULL ^ own;
        for (unsigned i = 0; i < 64; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                ADD(x);
                ADD((uint32_t)(x >> 17));
        }
#undef ADD
        return n;
}

static void child_matrix(const void *arg) {
        const Program *p = arg;
        uint64_t v[512];
        size_t nu = candidates(p->opts.uid, v, ELEMENTSOF(v));
        child_load(p);
        for (size_t i = 0; i < nu; i++) {
                int want = id_allowed(v[i], p->opts.uid) ? EBADF : EPERM;
                EXPECT(syscall(SYS_fchown, -1L, v[i], -1L), want);
                want = id_allowed(v[i], p->opts.uid) ? ENOENT : EPERM;
                EXPECT(syscall(SYS_fchownat, AT_FDCWD, "/nonexistent/vs-chown", v[i], -1L, 0L), want);
#ifdef SYS_chown
                EXPECT(syscall(SYS_chown, "/nonexistent/vs-chown", v[i], -1L), want);
#endif
#ifdef SYS_lchown
                EXPECT(syscall(SYS_lchown, "/nonexistent/vs-chown", v[i], UINT64_MAX), want);
#endif
                /* AT_EMPTY_PATH on a descriptor: the same ids rule. */
                want = id_allowed(v[i], p->opts.uid) ? EBADF : EPERM;
                EXPECT(syscall(SYS_fchownat, -1L, "", v[i], -1L, (long) AT_EMPTY_PATH), want);
        }
        size_t ng = candidates(p->opts.gid, v, ELEMENTSOF(v));
        for (size_t i = 0; i < ng; i++) {
                int want = id_allowed(v[i], p->opts.gid) ? EBADF : EPERM;
                EXPECT(syscall(SYS_fchown, -1L, -1L, v[i]), want);
                EXPECT(syscall(SYS_fchownat, -1L, "", UINT64_MAX, v[i], (long) AT_EMPTY_PATH), want);
                want = id_allowed(v[i], p->opts.gid) ? ENOENT : EPERM;
                EXPECT(syscall(SYS_fchownat, AT_FDCWD, "/nonexistent/vs-chown", -1L, v[i], 0L), want);
#ifdef SYS_chown
                EXPECT(syscall(SYS_chown, "/nonexistent/vs-chown", -1L, v[i]), want);
#endif
#ifdef SYS_lchown
                EXPECT(syscall(SYS_lchown, "/nonexistent/vs-chown", -1L, v[i]), want);
#endif
        }
        /* Both at once: a good uid does not carry a bad gid, nor the reverse. */
        uint32_t ou = p->opts.uid, og = p->opts.gid;
        EXPECT(syscall(SYS_fchown, -1L, (long) ou, (long) og), EBADF);
        EXPECT(syscall(SYS_fchown, -1L, (long) ou, (long) (og ^ 4)), EPERM);
        EXPECT(syscall(SYS_fchown, -1L, (long) (ou ^ 4), (long) og), EPERM);
        if (ou != og)
                EXPECT(syscall(SYS_fchown, -1L, (long) og, (long) ou), EPERM);
}

static void test_chown_matrix(void **state) {
        /* Ordinary ids, the idmap uid, root in a container, extremes and
         * ids with a single clear bit (the cover's corner case). */
        static const uint32_t pairs[][2] = {
                { 1000, 1000 }, { 65534, 65534 }, { 2147483646, 2147483646 }, { 0, 0 }, { 1, 0 },
                { 0xfffffffe, 0x7fffffff }, { 0xbfffffff, 12345 }, { 100000, 100 },
        };
        for (size_t i = 0; i < ELEMENTSOF(pairs); i++) {
                Program p;
                VsSeccompOptions o = ids(pairs[i][0], pairs[i][1]);
                compile(&p, &o);
                assert_child_ok(child_matrix, &p);
                free(p.bpf);
        }
}

static void child_no_ids(const void *arg) {
        child_load(arg);
        uid_t u = geteuid();
        gid_t g = getegid();
        EXPECT(fchown(-1, u, g), EPERM);
        EXPECT(fchown(-1, -1, -1), EPERM);
        EXPECT(fchownat(AT_FDCWD, "/nonexistent/vs-chown", -1, -1, 0), EPERM);
}

static void test_without_ids_everything_refused(void **state) {
        Program p;
        VsSeccompOptions o = { .network = true };
        compile(&p, &o);
        assert_child_ok(child_no_ids, &p);
        free(p.bpf);
}

/* ---- real files ------------------------------------------------------------ */

typedef struct Files {
        Program prog;
        char dir[64];
        gid_t extra_gid; /* a supplementary group of the child, or (gid_t)-1 */
} Files;

static void child_real_files(const void *arg) {
        const Files *fx = arg;
        uid_t u = geteuid();
        gid_t g = getegid();
        char f[128], l[128];
        snprintf(f, sizeof f, "%s/f", fx->dir);
        snprintf(l, sizeof l, "%s/l", fx->dir);
        int fd = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
        if (fd < 0 || symlink("f", l) < 0)
                CHILD_FAIL("setup: %s", strerror(errno));
        int dfd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (getuid() == 0 && fx->extra_gid != (gid_t) -1) {
                gid_t groups[] = { g, fx->extra_gid };
                if (setgroups(2, groups) < 0)
                        CHILD_FAIL("setgroups: %s", strerror(errno));
        }
        child_load(&fx->prog);

        /* Own ids and -1: every variant works (what install -o, tar
         * --same-owner and chown $(id -u):$(id -g) do). */
        EXPECT(chown(f, u, g), 0);
        EXPECT(chown(f, -1, -1), 0);
        EXPECT(chown(f, u, -1), 0);
        EXPECT(chown(f, -1, g), 0);
        EXPECT(lchown(l, u, g), 0);
        EXPECT(fchown(fd, u, g), 0);
        EXPECT(fchownat(dfd, "f", u, g, 0), 0);
        EXPECT(fchownat(dfd, "l", -1, g, AT_SYMLINK_NOFOLLOW), 0);
        EXPECT(fchownat(fd, "", u, g, AT_EMPTY_PATH), 0);
        EXPECT(syscall(SYS_fchownat, AT_FDCWD, f, UINT64_MAX, UINT64_MAX, 0L), 0); /* Go's -1 */

        /* Anything else is refused by the filter, even where the kernel
         * (as root) would allow it. */
        uid_t other_u = u == 0 ? 1 : 0;
        gid_t other_g = g == 0 ? 1 : 0;
        EXPECT(chown(f, other_u, -1), EPERM);
        EXPECT(chown(f, -1, other_g), EPERM);
        EXPECT(chown(f, u, other_g), EPERM);
        EXPECT(lchown(l, other_u, other_g), EPERM);
        EXPECT(fchown(fd, u + 1, -1), EPERM);
        EXPECT(fchownat(dfd, "f", -1, g + 1, 0), EPERM);
        EXPECT(fchownat(fd, "", other_u, -1, AT_EMPTY_PATH), EPERM);
        EXPECT(syscall(SYS_fchown, (long) fd, ((uint64_t) 1 << 32) | other_u, -1L), EPERM);
        if (fx->extra_gid != (gid_t) -1) /* a group the process is in, but not its own gid */
                EXPECT(fchown(fd, -1, fx->extra_gid), EPERM);

        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != u || st.st_gid != g)
                CHILD_FAIL("the file changed hands: %u:%u", (unsigned) st.st_uid, (unsigned) st.st_gid);

        /* xattrs stay refused whatever the name: the filter cannot read it. */
        static const char *const names[] = { "user.x", "security.capability", "SECURITY.capability",
                                             "trusted.x", "security.selinux", "capability", "", "system.posix_acl_access" };
        static const char cap[20] = { 0 };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                EXPECT(setxattr(f, names[i], cap, sizeof cap, 0), EOPNOTSUPP);
                EXPECT(lsetxattr(l, names[i], cap, sizeof cap, 0), EOPNOTSUPP);
                EXPECT(fsetxattr(fd, names[i], cap, sizeof cap, 0), EOPNOTSUPP);
                EXPECT(syscall(SYS_setxattrat, dfd, "f", 0L, names[i], NULL, 0L), EOPNOTSUPP);
        }
}

static void test_real_files(void **state) {
        Files fx = { .extra_gid = (gid_t) -1 };
        snprintf(fx.dir, sizeof fx.dir, "/tmp/vs-seccomp-ids-XXXXXX");
        assert_non_null(mkdtemp(fx.dir));
        if (getuid() == 0)
                fx.extra_gid = getegid() + 4242; /* joined by the child before loading */
        else {
                gid_t groups[64];
                int n = getgroups(ELEMENTSOF(groups), groups);
                for (int i = 0; i < n; i++)
                        if (groups[i] != getegid())
                                fx.extra_gid = groups[i];
                if (fx.extra_gid == (gid_t) -1)
                        print_message("# no supplementary group to refuse (not root, none held)\n");
        }
        VsSeccompOptions o = ids(geteuid(), getegid());
        compile(&fx.prog, &o);
        assert_child_ok(child_real_files, &fx);
        free(fx.prog.bpf);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", fx.dir);
        assert_int_equal(system(cmd), 0);
}

/* ---- the ids come from the worker's hello ---------------------------------- */

static void test_hello_ids_decoding(void **state) {
        static const struct { const char *json; int ok; int64_t uid, gid; } cases[] = {
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1}", 1, -1, -1 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":0,\"gid\":0}", 1, 0, 0 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":4294967294,\"gid\":-1}", 1, 4294967294, -1 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":4294967295,\"gid\":1}", 0, 0, 0 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":1,\"gid\":-2}", 0, 0, 0 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":1,\"gid\":4294967296}", 0, 0, 0 },
                { "{\"type\":\"hello\",\"version\":1,\"arch\":\"x\",\"pid\":1,\"uid\":\"1\"}", 0, 0, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *o = json_loads(cases[i].json, 0, NULL);
                assert_non_null(o);
                ProtocolHello h;
                VsError *err = NULL;
                int r = protocol_decode_hello(o, &h, &err);
                if (cases[i].ok) {
                        assert_int_equal(r, 0);
                        assert_int_equal(h.uid, cases[i].uid);
                        assert_int_equal(h.gid, cases[i].gid);
                        protocol_hello_done(&h);
                } else {
                        if (r >= 0)
                                fail_msg("accepted: %s", cases[i].json);
                        vs_error_free(err);
                }
                json_decref(o);
        }
}

/* The seccomp_bpf the handshake sends in init for a hello saying (uid, gid). */
static void init_after_hello(VsLaunch *l, int64_t uid, int64_t gid, Program *ret) {
        VsHandshake hs;
        handshake_init(&hs, l);
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT, out = STRBUF_INIT;
        ProtocolHello h = { .version = PROTOCOL_VERSION, .arch = "x86_64", .pid = 1, .uid = uid, .gid = gid };
        assert_int_equal(protocol_encode_hello(&b, &h), 0);
        JsonlMsg m = parse(&b);
        VsError *err = NULL;
        int r = handshake_feed(&hs, &m, &out, &err);
        if (r != VS_HANDSHAKE_SEND)
                fail_msg("handshake: %d %s", r, err ? vs_error_message(err) : "");
        jsonl_msg_done(&m);
        JsonlMsg i = parse(&out);
        ProtocolInit init;
        assert_int_equal(protocol_decode_init(i.obj, &init, NULL), 0);
        assert_non_null(init.seccomp_bpf);
        ret->opts = l->seccomp;
        ret->len = init.seccomp_bpf_len;
        ret->bpf = malloc(ret->len);
        assert_non_null(ret->bpf);
        memcpy(ret->bpf, init.seccomp_bpf, ret->len);
        protocol_init_done(&init);
        jsonl_msg_done(&i);
        handshake_done(&hs);
}

static void child_ids_1234(const void *arg) {
        child_load(arg);
        EXPECT(fchown(-1, 1234, 5678), EBADF);
        EXPECT(fchown(-1, 1000, 1000), EPERM);
}

static void child_all_refused(const void *arg) {
        child_load(arg);
        EXPECT(fchown(-1, 1000, 1000), EPERM);
        EXPECT(fchown(-1, -1, -1), EPERM);
}

static void test_handshake_compiles_for_hello_ids(void **state) {
        static char *empty[] = { NULL };
        /* Prepared for the ids the jail was started with (1000:1000), as
         * launch_prepare does; the worker then says others (an ssh remote's). */
        VsLaunch l = { .sandboxed = true, .workspace = (char *)"/ws", .rw_paths = empty, .ro_paths = empty,
                       .mask = empty, .protected_paths = empty, .env = empty };
        l.seccomp = ids(1000, 1000);
        VsError *err = NULL;
        assert_int_equal(seccomp_compile(&l.seccomp, &l.bpf, &l.bpf_len, &err), 0);

        Program same, other, none;
        init_after_hello(&l, 1000, 1000, &same);
        Program want;
        compile(&want, &l.seccomp);
        assert_int_equal(same.len, want.len);
        assert_memory_equal(same.bpf, want.bpf, want.len);

        init_after_hello(&l, 1234, 5678, &other);
        assert_true(l.seccomp.own_ids);
        assert_int_equal(l.seccomp.uid, 1234);
        assert_int_equal(l.seccomp.gid, 5678);
        assert_child_ok(child_ids_1234, &other);

        /* A worker that does not say its ids: every chown refused. */
        init_after_hello(&l, -1, -1, &none);
        assert_false(l.seccomp.own_ids);
        assert_child_ok(child_all_refused, &none);

        free(same.bpf);
        free(other.bpf);
        free(none.bpf);
        free(want.bpf);
        free(l.bpf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rules_conditional),
                cmocka_unit_test(test_programs),
                cmocka_unit_test(test_chown_matrix),
                cmocka_unit_test(test_without_ids_everything_refused),
                cmocka_unit_test(test_real_files),
                cmocka_unit_test(test_hello_ids_decoding),
                cmocka_unit_test(test_handshake_compiles_for_hello_ids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
