/* SPDX-License-Identifier: MIT */
/* The worker's path policy (src/worker/resolve.c) on a real tree, without
 * a jail: what resolves and where to, and each way out that is refused
 * ("..", a symlink out of the workspace in the middle or at the end, a
 * symlink onto a masked name, a masked name itself or a name below a masked
 * directory, a write to a read-only root, to a protected path or to a name a
 * protect glob covers even when it does not exist yet, a symlink loop). */
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
#include <sys/stat.h>
#include <unistd.h>

#include "path-util.h"
#include "worker-fixture.h"
#include "worker.h"

static char root[64];
static char *ws, *ro, *outside;
static Policy policy;

static void put(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static char *at(const char *dir, const char *rel) {
        char *p = path_join(dir, rel);
        assert_non_null(p);
        return p;
}

static void mkdir_at(const char *dir, const char *rel) {
        _cleanup_free_ char *p = at(dir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void put_at(const char *dir, const char *rel, const char *content) {
        _cleanup_free_ char *p = at(dir, rel);
        put(p, content);
}

static void link_at(const char *dir, const char *rel, const char *target) {
        _cleanup_free_ char *p = at(dir, rel);
        assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state) {
        fixture_tmp(root, "resolve");
        ws = at(root, "ws");
        ro = at(root, "ro");
        outside = at(root, "outside");
        assert_int_equal(mkdir(ws, 0755), 0);
        assert_int_equal(mkdir(ro, 0755), 0);
        assert_int_equal(mkdir(outside, 0755), 0);
        put_at(outside, "secret", "outside\n");
        put_at(ws, "a.txt", "a\n");
        put_at(ws, ".env", "SECRET=1\n");
        mkdir_at(ws, "sub");
        put_at(ws, "sub/.env", "SECRET=2\n");
        mkdir_at(ws, "secrets");
        put_at(ws, "secrets/key", "k\n");
        mkdir_at(ws, ".git");
        mkdir_at(ws, ".git/hooks");
        put_at(ro, "doc.txt", "doc\n");
        link_at(ws, "good", "a.txt");                    /* stays inside */
        link_at(ws, "up", "../outside/secret");          /* leaves the workspace */
        link_at(ws, "outdir", outside);                  /* a directory outside, absolute */
        link_at(ws, "alias", ".env");                    /* onto a masked name */
        link_at(ws, "hooklink", ".git/hooks");          /* onto a protected path */
        link_at(ws, "loop1", "loop2");
        link_at(ws, "loop2", "loop1");

        _cleanup_free_ char *hooks = at(ws, ".git/hooks");
        char *rw[] = { ws, NULL }, *ros[] = { ro, NULL }, *prot[] = { hooks, NULL };
        char *mask[] = { (char *)".env", (char *)"/secrets/", NULL }, *protect[] = { (char *)".envrc", NULL };
        ProtocolInit init = { .mode = PROTOCOL_MODE_JAIL, .workspace = ws, .rw_paths = rw, .ro_paths = ros,
                              .mask = mask, .protected_paths = prot, .protect = protect };
        fixture_policy(&policy, &init);
        return 0;
}

static int teardown(void **state) {
        policy_done(&policy);
        free(ws);
        free(ro);
        free(outside);
        return fixture_tmp_remove(root);
}

/* Resolves path; returns the resolved absolute path (owned) or NULL with
 * *ret_code and the error kind checked against want_kind. */
static char *resolve(const char *path, unsigned flags, int *ret_code, const char *want_kind) {
        Resolved r = RESOLVED_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int k = resolve_path(&policy, path, flags, &r, &err);
        *ret_code = k;
        if (k < 0) {
                if (want_kind && !streq(vs_error_kind(err) ?: "", want_kind))
                        fail_msg("%s: error kind '%s', not '%s': %s", path, vs_error_kind(err) ?: "", want_kind,
                                 vs_error_message(err));
                return NULL;
        }
        assert_true(r.dir_fd >= 0);
        char *p = TAKE_PTR(r.path);
        resolved_done(&r);
        return p;
}

static void assert_resolves(const char *path, unsigned flags, const char *want_rel) {
        int k;
        _cleanup_free_ char *got = resolve(path, flags, &k, NULL);
        if (k < 0)
                fail_msg("%s: refused (%d)", path, k);
        _cleanup_free_ char *want = want_rel[0] == '/' ? strdup(want_rel) : at(ws, want_rel);
        assert_string_equal(got, want);
}

static void assert_denied(const char *path, unsigned flags) {
        int k;
        _cleanup_free_ char *got = resolve(path, flags, &k, "denied");
        if (k >= 0)
                fail_msg("%s: resolved to %s", path, got);
        assert_int_equal(k, -EACCES);
}

static void test_plain_and_dotdot(void **state) {
        assert_resolves("a.txt", 0, "a.txt");
        assert_resolves("sub/../a.txt", 0, "a.txt");
        assert_resolves("./sub/./", 0, "sub");
        assert_resolves(".", 0, ws);
        assert_resolves("new-file", PATH_WRITE, "new-file"); /* need not exist */
        _cleanup_free_ char *abs = at(ws, "a.txt");
        assert_resolves(abs, 0, "a.txt");
        /* ".." can only name what the string says: out of the workspace. */
        assert_denied("../outside/secret", 0);
        assert_denied("sub/../../outside/secret", 0);
        _cleanup_free_ char *out = at(outside, "secret");
        assert_denied(out, 0);
        assert_denied("/etc/passwd", 0);
}

static void test_symlinks(void **state) {
        /* Followed only at the end when asked, and then checked again. */
        assert_resolves("good", 0, "good");
        assert_resolves("good", PATH_FOLLOW_FINAL, "a.txt");
        assert_denied("up", PATH_FOLLOW_FINAL);
        assert_denied("alias", PATH_FOLLOW_FINAL);
        /* In the middle of a path a link is always followed, and checked. */
        assert_denied("outdir/secret", 0);
        assert_denied("outdir/secret", PATH_WRITE | PATH_CREATE_PARENTS);
        int k;
        _cleanup_free_ char *p = resolve("loop1", PATH_FOLLOW_FINAL, &k, NULL);
        assert_null(p);
        assert_int_equal(k, -ELOOP);
}

static void test_masks(void **state) {
        assert_denied(".env", 0);
        assert_denied("sub/.env", 0);
        assert_denied("sub/../.env", 0);
        assert_denied("secrets", 0);
        assert_denied("secrets/key", 0);
        assert_denied("secrets/new", PATH_WRITE);
        /* A masked name created after init is refused too. */
        assert_denied("later/.env", PATH_WRITE | PATH_CREATE_PARENTS);
        assert_true(policy_is_masked(&policy, ws, false) == false);
}

static void test_writes(void **state) {
        _cleanup_free_ char *doc = at(ro, "doc.txt");
        assert_resolves(doc, 0, doc);
        assert_denied(doc, PATH_WRITE);
        assert_denied(".git/hooks/pre-commit", PATH_WRITE);
        assert_denied(".git/hooks", PATH_WRITE);
        assert_resolves(".git/hooks/pre-commit", 0, ".git/hooks/pre-commit"); /* reading is fine */
        /* The protect glob covers a name that does not exist yet. */
        assert_denied(".envrc", PATH_WRITE);
        assert_denied("sub/.envrc", PATH_WRITE);
        assert_resolves(".envrc", 0, ".envrc");
        /* Missing parents are made only on request, and only inside. */
        assert_resolves("made/deep/x", PATH_WRITE | PATH_CREATE_PARENTS, "made/deep/x");
        _cleanup_free_ char *made = at(ws, "made/deep");
        struct stat st;
        assert_int_equal(stat(made, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
}

static void test_bad_paths(void **state) {
        int k;
        char *p = resolve("", 0, &k, "bad_request");
        assert_null(p);
        assert_int_equal(k, -EINVAL);
        char longp[5000];
        memset(longp, 'a', sizeof longp - 1);
        longp[sizeof longp - 1] = 0;
        p = resolve(longp, 0, &k, "bad_request");
        assert_null(p);
        assert_int_equal(k, -ENAMETOOLONG);
}

/* A link is as writable as where it leads: a link onto a protected path is
 * refused for writing when followed, though the link itself may be read. */
static void test_write_through_links(void **state) {
        assert_denied("hooklink", PATH_WRITE | PATH_FOLLOW_FINAL);
        assert_denied("hooklink/pre-commit", PATH_WRITE);
        assert_resolves("hooklink", PATH_FOLLOW_FINAL, ".git/hooks");
        /* A link onto a read-only root's file: readable, not writable. */
        _cleanup_free_ char *doc = at(ro, "doc.txt");
        link_at(ws, "rolink", doc);
        assert_resolves("rolink", PATH_FOLLOW_FINAL, doc);
        assert_denied("rolink", PATH_WRITE | PATH_FOLLOW_FINAL);
}

/* exec's working directory: the workspace by default, a masked directory
 * refused, a missing one an I/O error, not a denial. */
static void test_cwd(void **state) {
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int fd = -EBADF;
        assert_int_equal(resolve_cwd(&policy, NULL, &fd, &err), 0);
        struct stat a, b;
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(stat(ws, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        close(fd);
        assert_int_equal(resolve_cwd(&policy, "sub", &fd, &err), 0);
        close(fd);
        assert_int_equal(resolve_cwd(&policy, "secrets", &fd, &err), -EACCES);
        assert_string_equal(vs_error_kind(err), "denied");
        vs_error_free(err);
        err = NULL;
        assert_int_equal(resolve_cwd(&policy, "nowhere", &fd, &err), -ENOENT);
}

/* Direct mode (an unsandboxed workspace): the whole host, as the agent
 * would see it; relative paths from the workspace. */
static void test_direct_mode(void **state) {
        ProtocolInit init = { .mode = PROTOCOL_MODE_DIRECT, .workspace = ws };
        Policy direct = {};
        _cleanup_(vs_error_freep) VsError *err = NULL;
        fixture_policy(&direct, &init);
        Resolved r = RESOLVED_INIT;
        _cleanup_free_ char *secret = at(outside, "secret");
        assert_int_equal(resolve_path(&direct, secret, PATH_WRITE, &r, &err), 0);
        assert_string_equal(r.path, secret);
        resolved_done(&r);
        _cleanup_free_ char *a = at(ws, "a.txt");
        assert_int_equal(resolve_path(&direct, "a.txt", 0, &r, &err), 0);
        assert_string_equal(r.path, a);
        resolved_done(&r);
        policy_done(&direct);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_and_dotdot), cmocka_unit_test(test_symlinks),
                cmocka_unit_test(test_masks),            cmocka_unit_test(test_writes),
                cmocka_unit_test(test_bad_paths),        cmocka_unit_test(test_write_through_links),
                cmocka_unit_test(test_cwd),              cmocka_unit_test(test_direct_mode),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
