/* SPDX-License-Identifier: MIT */
/* The protected paths' snapshot (src/core/policy/protect-snapshot.c) on a real
 * directory: a protected directory or file removed and made again is a
 * change even when the filesystem hands the new one the old inode number
 * (ext4 does at once: a host's `rm -rf .git/hooks; mkdir .git/hooks` kept
 * the number, and the snapshot said nothing changed), the target of a
 * protected symlink too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "protect-snapshot.h"

static char ws[128];

static void write_file(const char *rel, const char *text) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static ino_t ino_of(const char *rel) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        assert_int_equal(lstat(p, &st), 0);
        return st.st_ino;
}

static VsProtectSnapshot *snapshot(VsPolicy **ret_policy) {
        VsError *err = NULL;
        VsPolicy *p = NULL;
        if (config_load(ws, &p, &err) < 0)
                fail_msg("config: %s", vs_error_message(err));
        VsProtectSnapshot *s = NULL;
        assert_int_equal(protect_snapshot_take(p, NULL, &s), 0);
        *ret_policy = p;
        return s;
}

static int setup(void **state) {
        /* On the filesystem the workspaces live on (not a tmpfs /tmp,
         * whose numbers are never reused). */
        snprintf(ws, sizeof ws, "/var/tmp/test-protect-snapshot.XXXXXX");
        assert_non_null(mkdtemp(ws));
        char p[512];
        snprintf(p, sizeof p, "%s/.git", ws);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/.git/hooks", ws);
        assert_int_equal(mkdir(p, 0755), 0);
        write_file("vectora.toml", "[sandbox]\nenabled = true\n");
        write_file(".git/config", "[core]\n");
        write_file(".git/HEAD", "ref: refs/heads/main\n");
        return 0;
}

static int teardown(void **state) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static void unchanged_is_quiet(void **state) {
        VsPolicy *p;
        VsProtectSnapshot *s = snapshot(&p);
        assert_null(protect_snapshot_changed(s));
        assert_null(protect_snapshot_root_changed(s));
        write_file(".git/config", "[core]\n\tbare = false\n"); /* in place: the same file */
        assert_null(protect_snapshot_changed(s));
        protect_snapshot_free(s);
        policy_free(p);
}

/* Removes rel (a directory or a file) and makes it again a moment later
 * (made again in the same microsecond would be a birth time tie: the
 * host's own rm and mkdir take longer than that), and says whether the
 * filesystem handed the new one the old inode number. */
static void make_again(const char *rel, bool dir, const char *what) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        ino_t before = ino_of(rel);
        assert_int_equal(dir ? rmdir(p) : unlink(p), 0);
        usleep(2000);
        if (dir)
                assert_int_equal(mkdir(p, 0755), 0);
        else
                write_file(rel, "[core]\n\thooksPath = /tmp/evil\n");
        print_message("# %s made again: inode number %s\n", what, ino_of(rel) == before ? "reused" : "new");
}

static void directory_made_again(void **state) {
        VsPolicy *p;
        VsProtectSnapshot *s = snapshot(&p);
        make_again(".git/hooks", true, ".git/hooks");
        char d[512];
        snprintf(d, sizeof d, "%s/.git/hooks", ws);
        const char *what = protect_snapshot_changed(s);
        assert_non_null(what);
        assert_string_equal(what, d);
        protect_snapshot_free(s);
        policy_free(p);
}

static void file_made_again(void **state) {
        VsPolicy *p;
        VsProtectSnapshot *s = snapshot(&p);
        make_again(".git/config", false, ".git/config");
        assert_non_null(protect_snapshot_changed(s));
        protect_snapshot_free(s);
        policy_free(p);
}

static void symlink_target_made_again(void **state) {
        /* .git/hooks a symlink (a host's shared hooks directory): the
         * link stays, its target is removed and made again, with the
         * number reused or not. */
        char hooks[512], real[512];
        snprintf(hooks, sizeof hooks, "%s/.git/hooks", ws);
        snprintf(real, sizeof real, "%s/hooks-real", ws);
        assert_int_equal(rmdir(hooks), 0);
        assert_int_equal(mkdir(real, 0755), 0);
        assert_int_equal(symlink("../hooks-real", hooks), 0);
        VsPolicy *p;
        VsProtectSnapshot *s = snapshot(&p);
        assert_null(protect_snapshot_changed(s));
        make_again("hooks-real", true, "the target of a symlinked .git/hooks");
        const char *what = protect_snapshot_changed(s);
        assert_non_null(what);
        assert_string_equal(what, hooks);
        protect_snapshot_free(s);
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(unchanged_is_quiet, setup, teardown),
                cmocka_unit_test_setup_teardown(directory_made_again, setup, teardown),
                cmocka_unit_test_setup_teardown(file_made_again, setup, teardown),
                cmocka_unit_test_setup_teardown(symlink_target_made_again, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
