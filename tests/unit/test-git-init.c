/* SPDX-License-Identifier: MIT */
/* Making the repository for git_init = true (src/shared/git/git-init.c) on a
 * real directory: made where .git is missing or the empty placeholder,
 * as the workspace's owner, exactly what `git init --template=` makes and
 * taken by the host's git as a repository; left alone where .git is
 * anything else (a symlink the jail planted is never followed); no git
 * run, none needed. */
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
#include "host-make.h"

static char base[128], ws[192], bin[192], ref[192];

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

static int make_dirs(void **state) {
        snprintf(base, sizeof base, "/var/tmp/test-git-init.XXXXXX");
        assert_non_null(mkdtemp(base));
        /* The owner of the workspace (nobody, as root) reaches the fakes. */
        assert_int_equal(chmod(base, 0755), 0);
        snprintf(ws, sizeof ws, "%s/ws", base);
        snprintf(bin, sizeof bin, "%s/bin", base);
        snprintf(ref, sizeof ref, "%s/ref", base);
        assert_int_equal(mkdir(ws, 0755), 0);
        assert_int_equal(mkdir(bin, 0755), 0);
        assert_int_equal(mkdir(ref, 0755), 0);
        if (geteuid() == 0)
                assert_int_equal(chown(ws, 65534, 65534), 0);
        return 0;
}

static int remove_dirs(void **state) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        assert_int_equal(system(cmd), 0);
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
        if (git_repo_make(ws, NULL, &err) < 0)
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
        /* A repository now: a second call leaves it as it is. */
        char cfg[512];
        path_of(cfg, sizeof cfg, ".git/config");
        write_at(cfg, "[core]\n\tbare = false\n", 0644);
        assert_int_equal(git_repo_make(ws, NULL, &err), 0);
        assert_string_equal(read_rel(".git/config"), "[core]\n\tbare = false\n");
}

/* A maker (host-make.h) as the root monitor makes: what it was asked,
 * made below ws by its path. */
static char asked[16][64];
static int n_asked, fail_at = -1;
static int path_make(void *userdata, const char *rel, unsigned flags, VsHostText text, VsError **err) {
        (void)userdata;
        (void)err;
        assert_true(n_asked < 16);
        snprintf(asked[n_asked], sizeof asked[0], "%s%s%s", rel, flags & VS_HOST_MAKE_DIR ? "/" : "",
                 flags & VS_HOST_MAKE_EXCL ? "" : " (not exclusive)");
        if (n_asked++ == fail_at)
                return -EEXIST;
        char p[512];
        path_of(p, sizeof p, rel);
        if (flags & VS_HOST_MAKE_DIR)
                return mkdir(p, 0755) < 0 ? -errno : 1;
        write_at(p, vs_host_texts[text], 0644);
        return 1;
}

/* A repository made through maker m from nothing: what it was asked, in
 * git init's order, HEAD last. */
static void make_and_check_asked(const VsHostMaker *m) {
        VsError *err = NULL;
        n_asked = 0;
        fail_at = -1;
        if (git_repo_make(ws, m, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        const char *want[] = { ".git/ (not exclusive)", ".git/objects/", ".git/objects/info/", ".git/objects/pack/",
                               ".git/refs/", ".git/refs/heads/", ".git/refs/tags/", ".git/config", ".git/HEAD" };
        assert_int_equal(n_asked, 9);
        for (int i = 0; i < 9; i++)
                assert_string_equal(asked[i], want[i]);
}

/* .git made again empty (the placeholder), then git_repo_make through m
 * with the third entry asked failing: refused (-ESTALE). */
static void fail_third_of_fresh(const VsHostMaker *m) {
        char g[512];
        path_of(g, sizeof g, ".git");
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir '%s'", g, g);
        assert_int_equal(system(cmd), 0);
        n_asked = 0;
        fail_at = 3;
        VsError *err = NULL;
        assert_int_equal(git_repo_make(ws, m, &err), -ESTALE);
        vs_error_free(err);
}

/* Through a maker (a root daemon's monitor): each entry asked of it, in
 * git init's order and HEAD last, every one but .git itself new (EXCL),
 * texts named from the table; the result the same repository. One
 * already there (the maker's EEXIST) refuses the start, as a repository
 * changed meanwhile; a .git that is there already is not asked for. */
static void made_by_maker(void **state) {
        VsError *err = NULL;
        VsHostMaker m = { .workspace = ws, .make = path_make };
        make_and_check_asked(&m);
        assert_string_equal(read_rel(".git/HEAD"), "ref: refs/heads/master\n");
        assert_non_null(strstr(read_rel(".git/config"), "repositoryformatversion = 0"));
        /* A repository now: nothing asked. */
        n_asked = 0;
        assert_int_equal(git_repo_make(ws, &m, &err), 0);
        assert_int_equal(n_asked, 0);
        /* The empty placeholder .git: filled; refs/ there already: refused. */
        fail_third_of_fresh(&m);
        assert_string_equal(asked[0], ".git/objects/");
}

/* A batching maker (make_many: the monitor makes a batch in one child)
 * asked for the eight entries once, in the same order; the first that
 * fails ends the batch (those after it not made) and refuses the start. */
static int batches;
static int path_make_many(void *userdata, const VsHostItem *items, size_t n, VsError **err) {
        batches++;
        int made = 0;
        for (size_t i = 0; i < n; i++) {
                int r = path_make(userdata, items[i].rel, items[i].flags, items[i].text, err);
                if (r < 0)
                        return r;
                made += r;
        }
        return made;
}

static void made_by_batching_maker(void **state) {
        VsHostMaker m = { .workspace = ws, .make = path_make, .make_many = path_make_many };
        batches = 0;
        make_and_check_asked(&m);
        assert_int_equal(batches, 1);
        assert_string_equal(read_rel(".git/HEAD"), "ref: refs/heads/master\n");
        batches = 0;
        fail_third_of_fresh(&m);
        assert_int_equal(batches, 1);
        assert_int_equal(n_asked, 4);
        assert_false(exists(".git/HEAD"));
}

/* The same tree, file for file, byte for byte and mode for mode, as `git
 * init --template=` makes (when git is there to compare with), and the
 * host's git takes it as a repository with no commit yet. */
static void same_as_git_init(void **state) {
        if (system("command -v git >/dev/null 2>&1") != 0)
                skip();
        VsError *err = NULL;
        if (git_repo_make(ws, NULL, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && env -i PATH=/usr/bin:/bin GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null "
                 "git init --quiet --template= && cd .git && find . -printf '%%p %%y %%m\\n' | sort > '%s/want' && "
                 "cd '%s/.git' && find . -printf '%%p %%y %%m\\n' | sort > '%s/got' && cmp -s '%s/want' '%s/got' && "
                 "cmp -s '%s/.git/HEAD' HEAD && cmp -s '%s/.git/config' config",
                 ref, base, ws, base, base, base, ref, ref);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && env -i PATH=/usr/bin:/bin HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "
                 "git -c safe.directory='*' rev-parse --git-dir >/dev/null 2>&1",
                 ws);
        assert_int_equal(system(cmd), 0);
}

static void made_in_empty_placeholder(void **state) {
        char p[512];
        path_of(p, sizeof p, ".git");
        assert_int_equal(mkdir(p, 0755), 0);
        VsError *err = NULL;
        if (git_repo_make(ws, NULL, &err) < 0)
                fail_msg("%s", vs_error_message(err));
        assert_true(exists(".git/HEAD"));
}

/* .git is something else: nothing is made, nothing is followed. */
static void left_alone(void **state) {
        char p[512], q[512];
        VsError *err = NULL;

        /* A symlink (planted by an earlier jail) to an empty directory. */
        path_of(p, sizeof p, "elsewhere");
        assert_int_equal(mkdir(p, 0755), 0);
        path_of(q, sizeof q, ".git");
        assert_int_equal(symlink("elsewhere", q), 0);
        assert_int_equal(git_repo_make(ws, NULL, &err), 0);
        assert_false(exists("elsewhere/HEAD"));
        assert_int_equal(unlink(q), 0);

        /* A .git file (gitdir: pointer). */
        write_at(q, "gitdir: elsewhere\n", 0644);
        assert_int_equal(git_repo_make(ws, NULL, &err), 0);
        assert_string_equal(read_rel(".git"), "gitdir: elsewhere\n");
        assert_int_equal(unlink(q), 0);

        /* A .git without HEAD that holds something (sealed whole). */
        assert_int_equal(mkdir(q, 0755), 0);
        path_of(p, sizeof p, ".git/config");
        write_at(p, "[core]\n", 0644);
        assert_int_equal(git_repo_make(ws, NULL, &err), 0);
        assert_false(exists(".git/HEAD"));
        assert_null(err);
}

/* No git is needed: with nothing on PATH the repository is made all the
 * same (the project writes it; no git runs). */
static void no_git_needed(void **state) {
        const char *old = getenv("PATH");
        char *saved = old ? strdup(old) : NULL;
        assert_int_equal(setenv("PATH", bin, 1), 0);
        VsError *err = NULL;
        int r = git_repo_make(ws, NULL, &err);
        if (saved)
                setenv("PATH", saved, 1);
        free(saved);
        if (r < 0)
                fail_msg("%s", vs_error_message(err));
        assert_true(exists(".git/HEAD"));
        assert_true(exists(".git/refs/heads"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(made_when_missing, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(made_in_empty_placeholder, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(left_alone, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(made_by_batching_maker, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(made_by_maker, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(same_as_git_init, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(no_git_needed, make_dirs, remove_dirs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
