/* SPDX-License-Identifier: MIT */
/* The walk cache (src/shared/plan/walk-cache.c): its file read back as it
 * was written, and refused whole when one byte differs, when it is cut
 * short or when it is another walk's; a directory changed just before a
 * walk is not recorded (its ctime could hide a name added in the same
 * clock tick); and a walk with the cache reads only what changed and
 * finds the same matches. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "git-scan.h"
#include "mask-walk.h"
#include "sha256.h"
#include "walk-cache.h"

static WalkCacheDir dir_of(const char *rel, const char *sub, const char *match) {
        WalkCacheDir d = { .rel = strdup(rel), .dev = 2049, .ino = 77, .mtime_sec = 1700000000, .mtime_nsec = 5,
                           .ctime_sec = 1700000001, .ctime_nsec = 6 };
        if (sub)
                assert_int_equal(walk_cache_dir_add_sub(&d, sub), 0);
        if (match)
                assert_int_equal(walk_cache_dir_add_match(&d, 1, MASK_FILE, match), 0);
        return d;
}

static void test_file(void **state) {
        (void)state;
        WalkCache c = { 0 };
        char *const pats[] = { (char *)"**/*.pem", NULL };
        char *const *lists[] = { pats };
        walk_cache_key("/ws", lists, 1, c.key);
        WalkCacheDir a = dir_of("", "src", ".env"), b = dir_of("src", NULL, "k.pem");
        assert_int_equal(walk_cache_add(&c, &a), 0);
        assert_int_equal(walk_cache_add(&c, &b), 0);
        uint8_t *buf;
        size_t len;
        assert_int_equal(walk_cache_serialize(&c, &buf, &len), 0);
        WalkCache back;
        assert_int_equal(walk_cache_parse(buf, len, c.key, &back), 0);
        assert_int_equal(back.n, 2);
        WalkCacheDir *src = walk_cache_find(&back, "src");
        assert_non_null(src);
        assert_string_equal(src->matches[0].name, "k.pem");
        assert_int_equal(src->ino, 77);
        walk_cache_done(&back);
        /* Any one byte changed, or the file cut anywhere: refused whole. */
        for (size_t i = 0; i < len; i++) {
                buf[i] ^= 0x01;
                assert_int_equal(walk_cache_parse(buf, len, c.key, &back), -EBADMSG);
                assert_int_equal(back.n, 0);
                buf[i] ^= 0x01;
                assert_int_equal(walk_cache_parse(buf, i, c.key, &back), -EBADMSG);
        }
        /* Another walk's (another root, other patterns): refused. */
        uint8_t other[WALK_CACHE_KEY_LEN];
        walk_cache_key("/ws2", lists, 1, other);
        assert_int_equal(walk_cache_parse(buf, len, other, &back), -EBADMSG);
        free(buf);
        walk_cache_done(&c);
}

/* The lane of the git names (2): kept through the file; a lane past it,
 * or a git name with a kind, or a file of the old format (VSWALK01, whose
 * records had no git lane), refused. */
static void test_git_lane(void **state) {
        (void)state;
        WalkCache c = { 0 };
        walk_cache_key("/ws", NULL, 0, c.key);
        WalkCacheDir a = dir_of("", "src", NULL);
        assert_int_equal(walk_cache_dir_add_match(&a, WALK_CACHE_LANE_GIT, 0, ".git"), 0);
        assert_int_equal(walk_cache_dir_add_match(&a, 0, MASK_FILE, ".env"), 0);
        assert_int_equal(walk_cache_add(&c, &a), 0);
        uint8_t *buf;
        size_t len;
        assert_int_equal(walk_cache_serialize(&c, &buf, &len), 0);
        WalkCache back;
        assert_int_equal(walk_cache_parse(buf, len, c.key, &back), 0);
        WalkCacheDir *root = walk_cache_find(&back, "");
        assert_non_null(root);
        assert_int_equal(root->n_match, 2);
        assert_int_equal(root->matches[0].lane, WALK_CACHE_LANE_GIT);
        assert_string_equal(root->matches[0].name, ".git");
        walk_cache_done(&back);
        /* The same bytes with lane 3, or kind 1 on lane 2, checksummed
         * again: refused. The lane byte is the first match's, found by
         * its name. */
        uint8_t *p = memmem(buf, len, ".git", 4);
        assert_non_null(p);
        uint8_t *lane = p - 4 - 2, *kind = p - 4 - 1;
        char hex[SHA256_HEX_LEN + 1];
        for (int k = 0; k < 2; k++) {
                *(k == 0 ? lane : kind) = k == 0 ? 3 : 1;
                sha256_hex(buf, len - SHA256_HEX_LEN, hex);
                memcpy(buf + len - SHA256_HEX_LEN, hex, SHA256_HEX_LEN);
                assert_int_equal(walk_cache_parse(buf, len, c.key, &back), -EBADMSG);
                *lane = WALK_CACHE_LANE_GIT;
                *kind = 0;
        }
        /* The old format, checksummed: refused whole. */
        assert_memory_equal(buf, "VSWALK03", 8);
        buf[7] = '1';
        sha256_hex(buf, len - SHA256_HEX_LEN, hex);
        memcpy(buf + len - SHA256_HEX_LEN, hex, SHA256_HEX_LEN);
        assert_int_equal(walk_cache_parse(buf, len, c.key, &back), -EBADMSG);
        free(buf);
        walk_cache_done(&c);
}

static void test_racy(void **state) {
        (void)state;
        time_t now = time(NULL);
        struct stat st = { 0 };
        st.st_ctim.tv_sec = now;
        st.st_mtim.tv_sec = now - 100;
        assert_true(walk_cache_racy(&st, now));
        st.st_ctim.tv_sec = now - 10;
        assert_false(walk_cache_racy(&st, now));
        st.st_mtim.tv_sec = now + 1000; /* touch -d into the future: never recorded */
        assert_true(walk_cache_racy(&st, now));
}

static void touch(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
}

static size_t walk(const char *root, const VsGlobSet *set, char *const *pats, WalkCacheUse *use, size_t *ret_n) {
        uint64_t before = use->n_read;
        MaskList ml = { 0 }, pl = { 0 };
        assert_int_equal(mask_walk_both(root, set, NULL, NULL, pats, NULL, use, &ml, &pl, NULL), 0);
        *ret_n = ml.n;
        mask_list_done(&ml);
        mask_list_done(&pl);
        return (size_t)(use->n_read - before);
}

static void test_walk(void **state) {
        (void)state;
        char root[] = "/tmp/vs-walk-cache-XXXXXX", path[256];
        assert_non_null(mkdtemp(root));
        char state_dir[300];
        snprintf(state_dir, sizeof state_dir, "%s/state", root);
        assert_int_equal(mkdir(state_dir, 0700), 0);
        snprintf(path, sizeof path, "%s/ws", root);
        assert_int_equal(mkdir(path, 0755), 0);
        for (int i = 0; i < 5; i++) {
                snprintf(path, sizeof path, "%s/ws/d%d", root, i);
                assert_int_equal(mkdir(path, 0755), 0);
        }
        snprintf(path, sizeof path, "%s/ws/d3/k.pem", root);
        touch(path);
        WalkCacheUse use = { 0 };
        assert_int_equal(walk_cache_use_init(&use, state_dir), 0);
        char *pats[] = { (char *)"**/*.pem", NULL };
        VsGlobSet *set = NULL;
        assert_int_equal(mask_set_compile(pats, "mask", &set, NULL), 0);
        snprintf(path, sizeof path, "%s/ws", root);
        size_t n;
        /* Just made: read, and not recorded, so read again. */
        assert_int_equal(walk(path, set, pats, &use, &n), 6);
        assert_int_equal(n, 1);
        assert_int_equal(walk(path, set, pats, &use, &n), 6);
        sleep(WALK_CACHE_RACY_S + 1);
        assert_int_equal(walk(path, set, pats, &use, &n), 6);
        /* Settled and recorded: nothing read, the same match. */
        assert_int_equal(walk(path, set, pats, &use, &n), 0);
        assert_int_equal(n, 1);
        /* A .pem added: its directory read, found. */
        snprintf(path, sizeof path, "%s/ws/d1/new.pem", root);
        touch(path);
        snprintf(path, sizeof path, "%s/ws", root);
        assert_int_equal(walk(path, set, pats, &use, &n), 1);
        assert_int_equal(n, 2);
        glob_set_free(set);
        walk_cache_use_done(&use);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

static void mkdirf(const char *root, const char *rel) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", root, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void writef(const char *root, const char *rel, const char *text) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", root, rel);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* One walk with the git lane: each directory read once; the repositories
 * are git_scan()'s, the masks mask_walk()'s; the cached walk after it reads
 * nothing and finds the same, and one whose HEAD became valid in place
 * (no directory changed) is found by the fresh look. */
static void test_walk_git(void **state) {
        (void)state;
        char root[] = "/tmp/vs-walk-cache-XXXXXX", ws[300], state_dir[300];
        assert_non_null(mkdtemp(root));
        snprintf(state_dir, sizeof state_dir, "%s/state", root);
        snprintf(ws, sizeof ws, "%s/ws", root);
        assert_int_equal(mkdir(state_dir, 0700), 0);
        mkdirf(root, "ws");
        mkdirf(root, "ws/a");
        mkdirf(root, "ws/a/repo");
        mkdirf(root, "ws/a/repo/.git");
        mkdirf(root, "ws/a/repo/.git/objects");
        mkdirf(root, "ws/a/repo/.git/refs");
        writef(root, "ws/a/repo/.git/HEAD", "ref: refs/heads/main\n");
        mkdirf(root, "ws/b");
        mkdirf(root, "ws/b/.git");
        mkdirf(root, "ws/b/.git/objects");
        mkdirf(root, "ws/b/.git/refs");
        writef(root, "ws/b/.git/HEAD", "nothing\n");
        writef(root, "ws/b/k.pem", "x\n");
        const size_t n_dirs = 10;
        WalkCacheUse use = { 0 };
        assert_int_equal(walk_cache_use_init(&use, state_dir), 0);
        char *pats[] = { (char *)"**/*.pem", NULL };
        VsGlobSet *set = NULL;
        assert_int_equal(mask_set_compile(pats, "mask", &set, NULL), 0);
        VsGitRepos fresh = { 0 };
        assert_int_equal(git_scan(ws, &fresh), 0);
        assert_int_equal(fresh.n, 2); /* a/repo (its .git) and a/repo/.git (bare) */
        sleep(WALK_CACHE_RACY_S + 1);
        for (int round = 0; round < 3; round++) {
                if (round == 2)
                        writef(root, "ws/b/.git/HEAD", "ref: refs/heads/main\n");
                uint64_t before = use.n_read;
                VsGitRepos git = { 0 };
                MaskList ml = { 0 }, pl = { 0 };
                assert_int_equal(mask_walk_all(ws, set, NULL, NULL, pats, NULL, &use, &git, &ml, &pl, NULL), 0);
                assert_int_equal(use.n_read - before, round == 0 ? n_dirs : 0);
                assert_int_equal(ml.n, 1);
                assert_string_equal(ml.items[0].relpath, "b/k.pem");
                assert_int_equal(git.dirs, n_dirs);
                assert_false(git.truncated);
                VsGitRepos want = { 0 };
                assert_int_equal(git_scan(ws, &want), 0);
                assert_int_equal(git.n, want.n);
                assert_int_equal(git.n, round == 2 ? 4 : 2);
                for (size_t i = 0; i < want.n; i++)
                        assert_true(git_repos_has(&git, &want.items[i]));
                git_repos_done(&want);
                git_repos_done(&git);
                mask_list_done(&ml);
                mask_list_done(&pl);
        }
        git_repos_done(&fresh);
        glob_set_free(set);
        walk_cache_use_done(&use);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

/* At start the cache directory loses what this daemon can never use: a
 * file of the older format (its key hashes the old magic in) and a temp
 * file a crash left an hour ago; the current format's file and a temp file
 * being written now stay. */
static void put_file(const char *dir, const char *name, const char *data, time_t age) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
        close(fd);
        struct timespec ts[2] = { { time(NULL) - age, 0 }, { time(NULL) - age, 0 } };
        assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static bool exists_in(const char *dir, const char *name) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        return access(p, F_OK) == 0;
}

static void test_sweep(void **state) {
        char root[] = "/tmp/test-walk-cache-sweep-XXXXXX";
        assert_non_null(mkdtemp(root));
        char state_dir[300], dir[320];
        snprintf(state_dir, sizeof state_dir, "%s/state", root);
        snprintf(dir, sizeof dir, "%s/walk-cache", state_dir);
        assert_int_equal(mkdir(state_dir, 0700), 0);
        WalkCacheUse use = { 0 };
        assert_int_equal(walk_cache_use_init(&use, state_dir), 0);
        WalkCache c = { 0 };
        memset(c.key, 0x5a, sizeof c.key);
        WalkCacheDir d = dir_of("", "a", NULL);
        assert_int_equal(walk_cache_add(&c, &d), 0);
        assert_int_equal(walk_cache_save(dir, &c), 0);
        walk_cache_done(&c);
        const char *current = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
        put_file(dir, "0123456789abcdef0123456789abcdef", "VSWALK01 an older daemon's file", 0);
        put_file(dir, "fedcba9876543210fedcba9876543210.Ab12Cd", "half", 2 * 60 * 60);
        put_file(dir, "fedcba9876543210fedcba9876543210.Ef34Gh", "being written", 0);
        walk_cache_use_done(&use);
        assert_int_equal(walk_cache_use_init(&use, state_dir), 0);
        assert_true(exists_in(dir, current));
        assert_false(exists_in(dir, "0123456789abcdef0123456789abcdef"));
        assert_false(exists_in(dir, "fedcba9876543210fedcba9876543210.Ab12Cd"));
        assert_true(exists_in(dir, "fedcba9876543210fedcba9876543210.Ef34Gh"));
        walk_cache_use_done(&use);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_file),
                cmocka_unit_test(test_git_lane),
                cmocka_unit_test(test_racy),
                cmocka_unit_test(test_walk_git),
                cmocka_unit_test(test_walk),
                cmocka_unit_test(test_sweep),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
