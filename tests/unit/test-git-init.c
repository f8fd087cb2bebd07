/* SPDX-License-Identifier: MIT */
/* Making the repository for git_init = true (src/shared/git-init.c) on a
 * real directory: made by git where .git is missing or the empty
 * placeholder, as the workspace's owner, with a clean environment; left
 * alone where .git is anything else (a symlink the jail planted is never
 * followed); refused when .git was swapped while git ran, when git fails
 * or when there is no git to run. Fake gits (VECTORA_GIT) show what git
 * is given; the real one makes the repository. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git-init.h"

static char base[128], ws[192], bin[192];

static void path_of(char *p, size_t n, const char *rel) {
        snprintf(p, n, "%s/%s", ws, rel);
}

static void write_at(const char *path, const char *text, mode_t mode) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(chmod(path, mode), 0);
}

static char *read_rel(const char *rel) {
        char p[512];
        path_of(p, sizeof p, rel);
        FILE *f = fopen(p, "re");
        if (!f)
                return NULL;
        static char buf[4096];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        return buf;
}

static bool exists(const char *rel) {
        char p[512];
        struct stat st;
        path_of(p, sizeof p, rel);
        return lstat(p, &st) == 0;
}

/* A fake git: the shell script body, run with the workspace as its cwd. */
static void fake_git(const char *body) {
        char p[512], text[2048];
        snprintf(p, sizeof p, "%s/git", bin);
        snprintf(text, sizeof text, "#!/bin/sh\n%s\n", body);
        write_at(p, text, 0755);
        assert_int_equal(setenv("VECTORA_GIT", p, 1), 0);
}

static int make_dirs(void **state) {
        snprintf(base, sizeof base, "/var/tmp/test-git-init.XXXXXX");
        assert_non_null(mkdtemp(base));
        /* The owner of the workspace (nobody, as root) reaches the fakes. */
        assert_int_equal(chmod(base, 0755), 0);
        snprintf(ws, sizeof ws, "%s/ws", base);
        snprintf(bin, sizeof bin, "%s/bin", base);
        assert_int_equal(mkdir(ws, 0755), 0);
        assert_int_equal(mkdir(bin, 0755), 0);
        if (geteuid() == 0)
                assert_int_equal(chown(ws, 65534, 65534), 0);
        unsetenv("VECTORA_GIT");
        return 0;
}

static int remove_dirs(void **state) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        assert_int_equal(system(cmd), 0);
        unsetenv("VECTORA_GIT");
        return 0;
}

static uid_t owner(const char *rel) {
        char p[512];
        struct stat st;
        path_of(p, sizeof p, rel);
        assert_int_equal(lstat(p, &st), 0);
        return st.st_uid;
}

static void made_when_missing(void **state) {
        VsError *err = NULL;
        if (git_repo_make(ws, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        struct stat st;
        char head[512];
        path_of(head, sizeof head, ".git/HEAD");
        assert_int_equal(lstat(head, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        /* The workspace owner's, every file git made. */
        struct stat wst;
        assert_int_equal(stat(ws, &wst), 0);
        assert_int_equal(owner(".git"), wst.st_uid);
        assert_int_equal(owner(".git/HEAD"), wst.st_uid);
        assert_int_equal(owner(".git/config"), wst.st_uid);
        assert_int_equal(owner(".git/objects"), wst.st_uid);
        /* No template: no sample hooks, no info/exclude. */
        assert_false(exists(".git/hooks"));
        assert_false(exists(".git/info"));
        /* A repository now: a second call leaves it (no git run). */
        fake_git("touch ran");
        assert_int_equal(git_repo_make(ws, &err), 0);
        assert_false(exists("ran"));
}

static void made_in_empty_placeholder(void **state) {
        char p[512];
        path_of(p, sizeof p, ".git");
        assert_int_equal(mkdir(p, 0755), 0);
        VsError *err = NULL;
        if (git_repo_make(ws, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        assert_true(exists(".git/HEAD"));
}

/* .git is something else: git is not run, nothing is followed. */
static void left_alone(void **state) {
        char p[512], q[512];
        fake_git("touch ran");
        VsError *err = NULL;

        /* A symlink (planted by an earlier jail) to an empty directory. */
        path_of(p, sizeof p, "elsewhere");
        assert_int_equal(mkdir(p, 0755), 0);
        path_of(q, sizeof q, ".git");
        assert_int_equal(symlink("elsewhere", q), 0);
        assert_int_equal(git_repo_make(ws, &err), 0);
        assert_false(exists("elsewhere/HEAD"));
        assert_int_equal(unlink(q), 0);

        /* A .git file (gitdir: pointer). */
        write_at(q, "gitdir: elsewhere\n", 0644);
        assert_int_equal(git_repo_make(ws, &err), 0);
        assert_string_equal(read_rel(".git"), "gitdir: elsewhere\n");
        assert_int_equal(unlink(q), 0);

        /* A .git without HEAD that holds something (sealed whole). */
        assert_int_equal(mkdir(q, 0755), 0);
        path_of(p, sizeof p, ".git/config");
        write_at(p, "[core]\n", 0644);
        assert_int_equal(git_repo_make(ws, &err), 0);
        assert_false(exists(".git/HEAD"));

        assert_false(exists("ran"));
        assert_null(err);
}

/* What git is given: these arguments, this environment and nothing of the
 * caller's (GIT_DIR, HOME), as the workspace's owner. */
static void clean_environment(void **state) {
        fake_git("{ echo \"$*\"; id -u; env | grep -v -e '^PWD=' -e '^SHLVL=' -e '^_=' | sort; } > out\n"
                 "mkdir -p .git && echo 'ref: refs/heads/main' > .git/HEAD");
        assert_int_equal(setenv("GIT_DIR", "/tmp/elsewhere", 1), 0);
        assert_int_equal(setenv("GIT_TEMPLATE_DIR", "/tmp/evil-templates", 1), 0);
        VsError *err = NULL;
        int r = git_repo_make(ws, &err);
        unsetenv("GIT_DIR");
        unsetenv("GIT_TEMPLATE_DIR");
        if (r < 0)
                fail_msg("%s", vs_error_message(err));
        struct stat wst;
        assert_int_equal(stat(ws, &wst), 0);
        char want[512];
        snprintf(want, sizeof want,
                 "init --quiet --template=\n%u\nGIT_CONFIG_GLOBAL=/dev/null\nGIT_CONFIG_NOSYSTEM=1\nLC_ALL=C\n"
                 "PATH=/usr/local/bin:/usr/bin:/bin\n",
                 (unsigned)wst.st_uid);
        assert_string_equal(read_rel("out"), want);
}

/* .git replaced by a symlink while git ran: refused, whatever the
 * symlink leads to. */
static void swapped_is_refused(void **state) {
        fake_git("mv .git .git-moved; mkdir elsewhere; echo 'ref: refs/heads/x' > elsewhere/HEAD; ln -s elsewhere .git");
        VsError *err = NULL;
        assert_int_equal(git_repo_make(ws, &err), -ESTALE);
        assert_non_null(strstr(vs_error_message(err), "changed while git made the repository"));
        vs_error_free(err);
}

static void failing_git(void **state) {
        fake_git("echo 'fatal: cannot mkdir .git: boom' >&2; exit 3");
        VsError *err = NULL;
        assert_true(git_repo_make(ws, &err) < 0);
        assert_string_equal(vs_error_kind(err), "sandbox_unavailable");
        assert_non_null(strstr(vs_error_message(err), "failed with status 3: fatal: cannot mkdir .git: boom"));
        vs_error_free(err);
}

static void no_git(void **state) {
        const char *bad[] = { "/nonexistent/git", "git" };
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(setenv("VECTORA_GIT", bad[i], 1), 0);
                VsError *err = NULL;
                assert_int_equal(git_repo_make(ws, &err), -ENOENT);
                char want[128];
                snprintf(want, sizeof want, "VECTORA_GIT=%s is not an absolute path to an executable", bad[i]);
                assert_non_null(strstr(vs_error_message(err), want));
                assert_non_null(strstr(vs_error_message(err), "set git_init = false"));
                vs_error_free(err);
                assert_false(exists(".git"));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(made_when_missing, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(made_in_empty_placeholder, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(left_alone, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(clean_environment, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(swapped_is_refused, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(failing_git, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(no_git, make_dirs, remove_dirs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
