/* SPDX-License-Identifier: MIT */
/* Git's view of a tree without running git (issue 25, section 2):
 * git-config.c reads config files as git does and names the keys that
 * point at files; git-scan.c finds every directory git takes as a
 * repository (bare, .git directory, .git file or symlink), never through
 * a symlink, and puts a new one aside by a rename the host can undo. */
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

#include "git-config.h"
#include "git-control.h"
#include "git-scan.h"

/* ---- git-config.c ---- */

typedef struct Seen {
        char text[4096];
} Seen;

static int collect(const char *key, const char *value, void *ctx) {
        Seen *s = ctx;
        size_t n = strlen(s->text);
        snprintf(s->text + n, sizeof s->text - n, "%s=%s|", key, value ? value : "(true)");
        return 0;
}

static const char *parse(const char *text, int *ret, unsigned *line) {
        static Seen s;
        s.text[0] = 0;
        *line = 0;
        *ret = git_config_parse(text, strlen(text), collect, &s, line);
        return s.text;
}

static void config_syntax(void **state) {
        int r;
        unsigned line;
        /* Sections in every form; names lower-cased, subsections as written. */
        assert_string_equal(parse("[Core]\n\tHooksPath = .githooks\n[include]\npath = ../x\n"
                                  "[includeIf \"gitdir:/W/\"]\n\tpath=~/y\n[a.B]\nk\n",
                                  &r, &line),
                            "core.hookspath=.githooks|include.path=../x|includeif.gitdir:/W/.path=~/y|a.b.k=(true)|");
        assert_int_equal(r, 0);
        /* Quotes, escapes, inner blanks kept, comments, continuation. */
        assert_string_equal(parse("[s]\n a = \" x  y \" # c\n b = p\\\nq ; c\n c = \"a\\\"b\\\\c\\t\"\n d = x;y\n", &r,
                                  &line),
                            "s.a= x  y |s.b=pq|s.c=a\"b\\c\t|s.d=x|");
        assert_int_equal(r, 0);
        /* CRLF, a BOM, comment lines. */
        assert_string_equal(parse("\xef\xbb\xbf# top\r\n[s]\r\n\tk = v\r\n; end\r\n", &r, &line), "s.k=v|");
        assert_int_equal(r, 0);
        /* What git refuses: an open quote, a bad
         * escape, a bad section, a NUL, junk after a name. */
        /* Before any section git takes the bare name. */
        assert_string_equal(parse("k = v\n", &r, &line), "k=v|");
        assert_int_equal(r, 0);
        const char *bad[] = { "[s]\nk = \"open\n", "[s]\nk = \\q\n", "[s \"x]\n", "[s]\nk = a\0b\n",
                              "[s]\nk v\n", "[]\n", "[s \"x\" ]\n", "[s]\n9k = v\n" };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                size_t len = i == 3 ? 12 : strlen(bad[i]);
                Seen s = { { 0 } };
                line = 0;
                assert_int_equal(git_config_parse(bad[i], len, collect, &s, &line), -EINVAL);
                assert_true(line >= 1);
        }
}

static void config_path_keys(void **state) {
        bool dir, inc;
        assert_true(git_config_names_path("core.hookspath", &dir, &inc) && dir && !inc);
        assert_true(git_config_names_path("include.path", &dir, &inc) && !dir && inc);
        assert_true(git_config_names_path("includeif.onbranch:main.path", &dir, &inc) && inc);
        assert_true(git_config_names_path("core.attributesfile", &dir, &inc) && !dir && !inc);
        assert_true(git_config_names_path("core.excludesfile", &dir, &inc));
        assert_false(git_config_names_path("core.fsmonitor", &dir, &inc));
        assert_false(git_config_names_path("includeif.path", &dir, &inc));
        /* Command lines git runs. */
        assert_true(git_config_names_program("core.fsmonitor"));
        assert_true(git_config_names_program("core.sshcommand"));
        assert_true(git_config_names_program("diff.My Driver.textconv"));
        assert_true(git_config_names_program("filter.lfs.process"));
        assert_true(git_config_names_program("credential.https://x.helper"));
        assert_true(git_config_names_program("remote.origin.uploadpack"));
        assert_true(git_config_names_program("alias.st"));
        assert_false(git_config_names_program("remote.origin.url"));
        assert_false(git_config_names_program("diff.textconv"));
        assert_false(git_config_names_program("core.bare"));
}

static int count_keys(const char *key, const char *value, void *ctx) {
        (void)key;
        (void)value;
        ++*(size_t *)ctx;
        return 0;
}

/* A long section over many keys: each key repeats the section, so the
 * parse stops (-E2BIG, the line named) once keys have repeated
 * GIT_CONFIG_MAX_KEY_BYTES of it, having seen only a few (attack review
 * 12: a 512 KiB section over 260 000 keys took 3 s); a real config with a
 * path-long subsection over a thousand keys is read whole. */
static void config_work_bounded(void **state) {
        (void)state;
        size_t sec = 1u << 19, keys = ((1u << 20) - 64 - sec) / 2, n = 0;
        char *text = malloc(sec + 3 + 2 * keys);
        assert_non_null(text);
        text[0] = '[';
        memset(text + 1, 'a', sec);
        memcpy(text + 1 + sec, "]\n", 2);
        for (size_t i = 0; i < keys; i++)
                memcpy(text + sec + 3 + 2 * i, "b\n", 2);
        unsigned line = 0;
        assert_int_equal(git_config_parse(text, sec + 3 + 2 * keys, count_keys, &n, &line), -E2BIG);
        assert_int_equal(n, GIT_CONFIG_MAX_KEY_BYTES / (sec + 1));
        assert_int_equal(line, n + 2);
        free(text);
        /* includeIf "gitdir:<4 KiB path>" over 1 000 keys: 4 MiB repeated. */
        size_t len = 0;
        char *real = NULL;
        FILE *f = open_memstream(&real, &len);
        assert_non_null(f);
        fputs("[includeIf \"gitdir:/", f);
        for (int i = 0; i < 4000; i++)
                fputc('p', f);
        fputs("/\"]\n", f);
        for (int i = 0; i < 1000; i++)
                fprintf(f, "\tk%d = v\n", i);
        assert_int_equal(fclose(f), 0);
        n = 0;
        assert_int_equal(git_config_parse(real, len, count_keys, &n, &line), 0);
        assert_int_equal(n, 1000);
        free(real);
}

/* ---- git-scan.c ---- */

static char ws[128];

static void mk(const char *rel) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void put(const char *rel, const char *text) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", ws, rel);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void bare(const char *rel, const char *head) {
        char p[256];
        snprintf(p, sizeof p, "%s/objects", rel);
        mk(p);
        snprintf(p, sizeof p, "%s/refs", rel);
        mk(p);
        snprintf(p, sizeof p, "%s/HEAD", rel);
        put(p, head);
}

static int make_ws(void **state) {
        snprintf(ws, sizeof ws, "/tmp/vs-git-scan-XXXXXX");
        assert_non_null(mkdtemp(ws));
        return 0;
}

static int remove_ws(void **state) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
        return system(cmd) == 0 ? 0 : -1;
}

static const VsGitRepo *find(const VsGitRepos *r, const char *rel, VsGitRepoKind kind) {
        char p[512];
        snprintf(p, sizeof p, rel[0] ? "%s/%s" : "%s", ws, rel);
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].kind == kind && strcmp(r->items[i].dir, p) == 0)
                        return &r->items[i];
        return NULL;
}


static int gone_put_aside(void *userdata, const char *rel, uint64_t dev, uint64_t ino, unsigned *ret_n, VsError **err) {
        (void)rel;
        (void)dev;
        (void)ino;
        (void)ret_n;
        (void)err;
        ++*(int *)userdata;
        return -ENOTCONN;
}

static void scan_finds_what_git_takes(void **state) {
        mk("a");
        bare("a", "ref: refs/heads/main\n");            /* bare */
        mk("b");
        mk("b/.git");
        bare("b/.git", "0123456789abcdef0123456789abcdef01234567\n"); /* .git directory, detached */
        mk("c");
        put("c/.git", "gitdir: ../a\n");                /* .git file */
        mk("d");
        bare("d", "not a ref\n");                       /* HEAD git refuses: no repository */
        mk("e");
        mk("e/refs");
        put("e/HEAD", "ref: refs/heads/x\n");           /* no objects/: none */
        mk("f");
        put("f/HEAD", "ref: refs/heads/x\n");
        put("f/commondir", "../b/.git\n");              /* HEAD + commondir: a linked gitdir */
        mk("g");
        bare("g", "ref: refs/heads/main\n");
        char p[512], t[512];
        snprintf(p, sizeof p, "%s/link", ws);
        snprintf(t, sizeof t, "%s/g", ws);
        assert_int_equal(symlink(t, p), 0);             /* never walked through */
        mk("h");
        assert_int_equal(symlinkat("../a", AT_FDCWD, strcat(strcpy(t, ws), "/h/.git")), 0); /* git follows: a repository */

        VsGitRepos r = { 0 };
        assert_int_equal(git_scan(ws, &r), 0);
        assert_non_null(find(&r, "a", VS_GIT_BARE));
        assert_non_null(find(&r, "b", VS_GIT_DOTGIT));
        assert_non_null(find(&r, "b/.git", VS_GIT_BARE));
        assert_non_null(find(&r, "c", VS_GIT_DOTGIT_LINK));
        assert_null(find(&r, "d", VS_GIT_BARE));
        assert_null(find(&r, "e", VS_GIT_BARE));
        assert_non_null(find(&r, "f", VS_GIT_BARE));
        assert_non_null(find(&r, "g", VS_GIT_BARE));
        assert_null(find(&r, "link", VS_GIT_BARE));
        assert_non_null(find(&r, "h", VS_GIT_DOTGIT_LINK));
        assert_int_equal(r.n, 7);
        assert_false(r.truncated);

        /* The same tree is the base of itself; a new one is not in it. */
        VsGitRepos base = r, now = { 0 };
        mk("new");
        bare("new", "ref: refs/heads/main\n");
        assert_int_equal(git_scan(ws, &now), 0);
        size_t fresh = 0;
        const VsGitRepo *n = NULL;
        for (size_t i = 0; i < now.n; i++)
                if (!git_repos_has(&base, &now.items[i])) {
                        fresh++;
                        n = &now.items[i];
                }
        assert_int_equal(fresh, 1);
        assert_non_null(strstr(n->dir, "/new"));

        /* Put aside: HEAD renamed beside it, no longer a repository. */
        char *moved = NULL;
        assert_int_equal(git_quarantine(n, NULL, &moved, NULL), 0);
        assert_non_null(strstr(moved, "/new/HEAD.vectora-quarantine"));
        free(moved);
        assert_int_equal(git_quarantine(n, NULL, NULL, NULL), -ESTALE);
        VsGitRepos after = { 0 };
        assert_int_equal(git_scan_dir(n->dir, &after), 0);
        assert_int_equal(after.n, 0);
        /* A .git file is renamed itself; by a maker that can no longer
         * serve it (a monitor gone), by this process. */
        const VsGitRepo *c = find(&base, "c", VS_GIT_DOTGIT_LINK);
        int calls = 0;
        VsHostMaker gone = { .workspace = ws, .put_aside = gone_put_aside, .userdata = &calls };
        assert_int_equal(git_quarantine(c, &gone, &moved, NULL), 0);
        assert_int_equal(calls, 1);
        assert_non_null(strstr(moved, "/c/.git.vectora-quarantine"));
        free(moved);
        git_repos_done(&after);
        git_repos_done(&now);
        git_repos_done(&base);
}

/* A directory swapped for a symlink after the walk noted it: the rename
 * refuses (the identity differs, or the path leads through a link). */
static void quarantine_never_follows(void **state) {
        mk("x");
        bare("x", "ref: refs/heads/main\n");
        VsGitRepos r = { 0 };
        assert_int_equal(git_scan(ws, &r), 0);
        const VsGitRepo *x = find(&r, "x", VS_GIT_BARE);
        assert_non_null(x);
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/x", ws);
        snprintf(b, sizeof b, "%s/x.real", ws);
        assert_int_equal(rename(a, b), 0);
        assert_int_equal(symlink(b, a), 0);
        assert_int_equal(git_quarantine(x, NULL, NULL, NULL), -ESTALE);
        snprintf(a, sizeof a, "%s/x.real/HEAD", ws);
        struct stat st;
        assert_int_equal(stat(a, &st), 0);
        git_repos_done(&r);
}

/* What one walk reads is bounded (attack review 12: a ~/.gitconfig
 * including eight 1 MiB files held every other start for 36 s): more than
 * 256 config files, or more than 16 MiB of them, fails closed, saying
 * why; 200 small includes are read. */
static void controls_read_bounded(void **state) {
        (void)state;
        mk(".git");
        mk(".git/objects");
        mk(".git/refs");
        put(".git/HEAD", "ref: refs/heads/main\n");
        mk("inc");
        for (int k = 0; k < 3; k++) {
                /* 0: 200 small files; 1: 300 small files; 2: 20 of 1 MiB less a little. */
                int files = k == 0 ? 200 : k == 1 ? 300 : 20;
                char rel[64], *cfg = NULL;
                size_t len = 0;
                FILE *c = open_memstream(&cfg, &len);
                assert_non_null(c);
                fputs("[core]\n\trepositoryformatversion = 0\n", c);
                for (int i = 0; i < files; i++) {
                        snprintf(rel, sizeof rel, "inc/%d-%d.cfg", k, i);
                        fprintf(c, "[include]\n\tpath = ../%s\n", rel);
                        char p[512];
                        snprintf(p, sizeof p, "%s/%s", ws, rel);
                        FILE *f = fopen(p, "we");
                        assert_non_null(f);
                        if (k == 2)
                                for (int j = 0; j < 1000; j++) {
                                        fputc('#', f);
                                        for (int b = 0; b < 1000; b++)
                                                fputc('x', f);
                                        fputc('\n', f);
                                }
                        else
                                fputs("[user]\n\tname = n\n", f);
                        assert_int_equal(fclose(f), 0);
                }
                assert_int_equal(fclose(c), 0);
                put(".git/config", cfg);
                free(cfg);
                VsGitControls gc = { 0 };
                int r = git_controls_collect(ws, &gc);
                if (k == 0) {
                        assert_int_equal(r, 0);
                } else {
                        assert_int_equal(r, -EBADMSG);
                        assert_non_null(gc.error);
                        assert_non_null(strstr(gc.error, k == 1 ? "more than 256 git config files" : "more than 16 MiB"));
                }
                git_controls_done(&gc);
        }
        /* A config whose keys repeat a long section: refused, saying so. */
        char p[512];
        snprintf(p, sizeof p, "%s/.git/config", ws);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputc('[', f);
        for (int i = 0; i < (1 << 19); i++)
                fputc('a', f);
        fputs("]\n", f);
        for (int i = 0; i < 100; i++)
                fputs("b\n", f);
        assert_int_equal(fclose(f), 0);
        VsGitControls gc = { 0 };
        assert_int_equal(git_controls_collect(ws, &gc), -EBADMSG);
        assert_non_null(gc.error);
        assert_non_null(strstr(gc.error, ".git/config:17: its keys repeat more than 8 MiB of section names"));
        git_controls_done(&gc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(config_syntax),
                cmocka_unit_test(config_path_keys),
                cmocka_unit_test(config_work_bounded),
                cmocka_unit_test_setup_teardown(scan_finds_what_git_takes, make_ws, remove_ws),
                cmocka_unit_test_setup_teardown(quarantine_never_follows, make_ws, remove_ws),
                cmocka_unit_test_setup_teardown(controls_read_bounded, make_ws, remove_ws),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
