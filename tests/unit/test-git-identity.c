/* SPDX-License-Identifier: MIT */
/* The jail's git identity file: what it renders reads back, through the
 * project's git config reader (git's syntax), as exactly the name and
 * address given, quotes and backslashes included, and nothing else. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "git-config.h"
#include "host-make.h"
#include "jail-home.h"
#include "macro.h"
#include "sha256.h"

typedef struct Seen {
        char *name, *email;
        int others;
} Seen;

static int on_key(const char *key, const char *value, void *ctx) {
        Seen *s = ctx;
        if (streq(key, "user.name"))
                s->name = strdup(value);
        else if (streq(key, "user.email"))
                s->email = strdup(value);
        else
                s->others++;
        return 0;
}

static void round_trip(const char *name, const char *email) {
        char *text = jail_git_identity_text(name, email);
        assert_non_null(text);
        Seen s = { 0 };
        assert_int_equal(git_config_parse(text, strlen(text), on_key, &s, NULL), 0);
        assert_string_equal(s.name, name);
        assert_string_equal(s.email, email);
        assert_int_equal(s.others, 0);
        free(s.name);
        free(s.email);
        free(text);
}

static void test_plain(void **state) {
        (void)state;
        round_trip(VS_JAIL_GIT_NAME, VS_JAIL_GIT_EMAIL);
        round_trip("Ada Lovelace", "ada@example.org");
}

static void test_quoting(void **state) {
        (void)state;
        round_trip("Host \"Q\" Person", "a\\b@example.org");
        round_trip("semi; colon # hash [section]", "x@y");
        round_trip("Zoë Ñandú", "zoe@example.org");
}

static void conf_stat(const char *path, struct stat *st) {
        assert_int_equal(lstat(path, st), 0);
        assert_true(S_ISREG(st->st_mode));
}

static void prepare(const char *state, char **ret_conf) {
        char *home = NULL, *note = NULL;
        assert_int_equal(jail_home_prepare(state, "/nowhere/ws", geteuid(), getegid(), false, NULL, &home, ret_conf, &note), 0);
        assert_null(home);
        assert_null(note);
        assert_non_null(*ret_conf);
}

/* A start binds homes/HEX.gitconfig into its jail by name while other
 * starts of the same workspace prepare theirs: an unchanged identity must
 * stay the same file (replaced under a mount in progress, bwrap fails the
 * start), a changed or tampered one is replaced. */
static void test_identity_kept_in_place(void **state) {
        (void)state;
        char dir[] = "/tmp/vs-git-identity-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char *conf = NULL, *conf2 = NULL, *name = NULL, *email = NULL;
        prepare(dir, &conf);
        struct stat a, b;
        conf_stat(conf, &a);
        assert_int_equal(a.st_mode & 07777, 0400);
        prepare(dir, &conf2);
        assert_string_equal(conf, conf2);
        conf_stat(conf2, &b);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        free(conf2);

        /* Other content (same length or not), another mode, a second link: replaced. */
        assert_int_equal(jail_git_identity(geteuid(), &name, &email), 0);
        char *want = jail_git_identity_text(name, email);
        assert_non_null(want);
        for (int k = 0; k < 3; k++) {
                conf_stat(conf, &a);
                char *extra = NULL;
                assert_true(asprintf(&extra, "%s.link", conf) > 0);
                if (k == 0) {
                        assert_int_equal(chmod(conf, 0600), 0);
                        int fd = open(conf, O_WRONLY | O_CLOEXEC);
                        assert_true(fd >= 0);
                        assert_int_equal(pwrite(fd, "X", 1, 0), 1);
                        close(fd);
                        assert_int_equal(chmod(conf, 0400), 0);
                } else if (k == 1)
                        assert_int_equal(chmod(conf, 0644), 0);
                else
                        assert_int_equal(link(conf, extra), 0);
                prepare(dir, &conf2);
                conf_stat(conf2, &b);
                assert_true(a.st_ino != b.st_ino);
                assert_int_equal(b.st_mode & 07777, 0400);
                char *have = NULL;
                size_t len = 0;
                assert_int_equal(read_file_at(AT_FDCWD, conf2, 65536, &have, &len), 0);
                assert_string_equal(have, want);
                free(have);
                free(conf2);
                (void)unlink(extra);
                free(extra);
        }
        assert_int_equal(unlink(conf), 0);
        char *homes = NULL;
        assert_true(asprintf(&homes, "%s/homes", dir) > 0);
        assert_int_equal(rmdir(homes), 0);
        assert_int_equal(rmdir(dir), 0);
        free(homes);
        free(want);
        free(name);
        free(email);
        free(conf);
}

static int fake_identity(void *userdata, char **ret_name, char **ret_email) {
        int *calls = userdata;
        if (++*calls > 1)
                return -ETIMEDOUT;
        *ret_name = strdup("From Maker");
        *ret_email = strdup("maker@example.org");
        return 0;
}

/* A maker with identity() (a root daemon's monitor, which reads it as
 * the owner) is asked instead of the owner's files; when it fails, the
 * jail gets no identity file and a note says why. */
static void test_identity_from_maker(void **state) {
        (void)state;
        char dir[] = "/tmp/vs-git-identity-XXXXXX";
        assert_non_null(mkdtemp(dir));
        int calls = 0;
        VsHostMaker maker = { .workspace = "/nowhere/ws", .identity = fake_identity, .userdata = &calls };
        char *home = NULL, *conf = NULL, *note = NULL;
        assert_int_equal(jail_home_prepare(dir, "/nowhere/ws", geteuid(), getegid(), false, &maker, &home, &conf, &note),
                         0);
        assert_int_equal(calls, 1);
        assert_non_null(conf);
        assert_null(note);
        char *have = NULL, *want = jail_git_identity_text("From Maker", "maker@example.org");
        size_t len = 0;
        assert_int_equal(read_file_at(AT_FDCWD, conf, 65536, &have, &len), 0);
        assert_string_equal(have, want);
        free(have);
        free(want);
        assert_int_equal(unlink(conf), 0);
        free(conf);
        conf = NULL;
        assert_int_equal(jail_home_prepare(dir, "/nowhere/ws", geteuid(), getegid(), false, &maker, &home, &conf, &note),
                         0);
        assert_null(conf);
        assert_non_null(note);
        assert_non_null(strstr(note, "git has no identity file"));
        free(note);
        char *homes = NULL;
        assert_true(asprintf(&homes, "%s/homes", dir) > 0);
        assert_int_equal(rmdir(homes), 0);
        assert_int_equal(rmdir(dir), 0);
        free(homes);
}

/* text written to path as pw's file, mode 0600: 0, or not 0 on a failure. */
static int put_owned(const char *path, const char *text, const struct passwd *pw) {
        FILE *f = fopen(path, "we");
        if (!f)
                return 1;
        fputs(text, f);
        return fclose(f) | chown(path, pw->pw_uid, pw->pw_gid) | chmod(path, 0600);
}

/* Root reading another user's identity (a root daemon without a
 * monitor, a system account's workspace, root's embedded CLI) reads only
 * what that user could read: a mode-0 ~/.gitconfig, or a config below a
 * ~/.config/git of mode 0, gives nothing (root's rights would have read
 * both: attack review 11, F2). Needs root and the suite's account
 * vectora-test (scripts/install-deps); its files are put back first. */
static void test_root_reads_as_owner_could(void **state) {
        (void)state;
        struct passwd *pw = geteuid() == 0 ? getpwnam("vectora-test") : NULL;
        if (!pw) {
                print_message("skipped: needs root and the account vectora-test\n");
                skip();
        }
        char conf[300], aside[320], gitdir[300], xdg[320], xdg_aside[340];
        snprintf(conf, sizeof conf, "%s/.gitconfig", pw->pw_dir);
        snprintf(aside, sizeof aside, "%s.vs-test-aside", conf);
        snprintf(gitdir, sizeof gitdir, "%s/.config/git", pw->pw_dir);
        snprintf(xdg, sizeof xdg, "%s/config", gitdir);
        snprintf(xdg_aside, sizeof xdg_aside, "%s.vs-test-aside", xdg);
        bool had = rename(conf, aside) == 0, had_xdg = rename(xdg, xdg_aside) == 0;
        char cfgdir[300];
        snprintf(cfgdir, sizeof cfgdir, "%s/.config", pw->pw_dir);
        bool made_cfg = mkdir(cfgdir, 0700) == 0, made_git = mkdir(gitdir, 0700) == 0;
        int k = (made_cfg ? chown(cfgdir, pw->pw_uid, pw->pw_gid) : 0) |
                (made_git ? chown(gitdir, pw->pw_uid, pw->pw_gid) : 0);
        struct stat gst;
        k |= stat(gitdir, &gst);
        char *name[4] = { 0 }, *email[4] = { 0 };
        int r[4];
        k |= put_owned(conf, "[user]\n\tname = Home Name\n", pw);
        r[0] = jail_git_identity(pw->pw_uid, &name[0], &email[0]); /* read */
        k |= chmod(conf, 0);
        r[1] = jail_git_identity(pw->pw_uid, &name[1], &email[1]); /* the owner could not */
        k |= unlink(conf);
        k |= put_owned(xdg, "[user]\n\temail = xdg@example.org\n", pw);
        r[2] = jail_git_identity(pw->pw_uid, &name[2], &email[2]); /* read */
        k |= chmod(gitdir, 0);
        r[3] = jail_git_identity(pw->pw_uid, &name[3], &email[3]); /* its directory closed to the owner */
        k |= chmod(gitdir, gst.st_mode & 07777) | unlink(xdg);
        if (made_git)
                k |= rmdir(gitdir);
        if (made_cfg)
                k |= rmdir(cfgdir);
        if (had)
                k |= rename(aside, conf);
        if (had_xdg)
                k |= rename(xdg_aside, xdg);
        assert_int_equal(k, 0);
        for (int i = 0; i < 4; i++)
                assert_int_equal(r[i], 0);
        assert_string_equal(name[0], "Home Name");
        assert_string_equal(name[1], VS_JAIL_GIT_NAME);
        assert_string_equal(email[2], "xdg@example.org");
        assert_string_equal(email[3], VS_JAIL_GIT_EMAIL);
        for (int i = 0; i < 4; i++) {
                free(name[i]);
                free(email[i]);
        }
}

/* The first jail's time (jail_first_start): recorded by the first call
 * (0, zero time), read back by every later one (1, the same time, however
 * much later); a record that is not the store's own regular file is not
 * taken; jail_homes_prune() removes the record of a workspace that is
 * gone and keeps the others. */
static void test_first_start_remembered(void **state) {
        (void)state;
        char dir[] = "/tmp/vs-first-jail-XXXXXX", ws[] = "/tmp/vs-first-jail-ws-XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_non_null(mkdtemp(ws));
        struct timespec t0, t1, t2;
        assert_int_equal(jail_first_start(dir, ws, &t0), 0);
        assert_true(t0.tv_sec == 0 && t0.tv_nsec == 0);
        usleep(20000);
        assert_int_equal(jail_first_start(dir, ws, &t1), 1);
        assert_true(t1.tv_sec > 0);
        assert_int_equal(jail_first_start(dir, ws, &t2), 1);
        assert_true(t1.tv_sec == t2.tv_sec && t1.tv_nsec == t2.tv_nsec);
        /* Recorded when it was made, not when it was read: before the reads. */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        assert_true(t1.tv_sec < now.tv_sec || (t1.tv_sec == now.tv_sec && t1.tv_nsec < now.tv_nsec - 15000000));
        assert_int_equal(jail_first_start(NULL, ws, &t2), -ENOENT);

        /* A link in a record's place is not read through. */
        char other[] = "/tmp/vs-first-jail-other-XXXXXX", sub[128], target[128], rec[256];
        assert_non_null(mkdtemp(other));
        snprintf(sub, sizeof sub, "%s/first-jails", other);
        assert_int_equal(mkdir(sub, 0700), 0);
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(ws, strlen(ws), hex);
        snprintf(target, sizeof target, "%s/elsewhere", other);
        assert_int_equal(close(open(target, O_CREAT | O_WRONLY, 0600)), 0);
        snprintf(rec, sizeof rec, "%s/%s", sub, hex);
        assert_int_equal(symlink(target, rec), 0);
        assert_int_equal(jail_first_start(other, ws, &t2), -EPERM);
        assert_true(t2.tv_sec == 0);
        /* Nor a first-jails/ others may write. */
        assert_int_equal(unlink(rec), 0);
        assert_int_equal(chmod(sub, 0777), 0);
        assert_int_equal(jail_first_start(other, ws, &t2), -EPERM);

        /* The prune: the workspace gone, its record goes; another stays. */
        char ws2[] = "/tmp/vs-first-jail-ws2-XXXXXX";
        assert_non_null(mkdtemp(ws2));
        assert_int_equal(jail_first_start(dir, ws2, &t2), 0);
        assert_int_equal(rmdir(ws), 0);
        unsigned removed = 99;
        assert_int_equal(jail_homes_prune(dir, &removed), 0);
        assert_int_equal(jail_first_start(dir, ws, &t2), 0); /* gone, so first again */
        assert_int_equal(jail_first_start(dir, ws2, &t2), 1);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", dir, other, ws2);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain),
                cmocka_unit_test(test_quoting),
                cmocka_unit_test(test_identity_kept_in_place),
                cmocka_unit_test(test_identity_from_maker),
                cmocka_unit_test(test_root_reads_as_owner_could),
                cmocka_unit_test(test_first_start_remembered),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
