/* SPDX-License-Identifier: MIT */
/* The undo store (src/core/undo/; its manifest: test-undo-manifest.c): a tree removed with `rm -rf` restored byte
 * for byte with its modes and symlinks; a file created, renamed over
 * another and deleted within one checkpoint; an undo undone; the caps
 * dropping the oldest checkpoints and their blobs; a call that changes
 * nothing costing no bytes; a restore that meets an agent-made symlink in
 * place of a directory not following it; what cannot be restored
 * (masked, protected, too big, a FIFO, a damaged blob) listed, not
 * skipped; and a restore never destroying what it could not save first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "strbuf.h"
#include "undo-store.h"

/* ---- fixtures ---- */

typedef struct Fx {
        char root[64];  /* the test's directory */
        char ws[96];    /* the writable root */
        char st[96];    /* the store */
        int ws_fd, st_fd;
} Fx;

static void sh(const char *fmt, ...) _printf_(1, 2);
static void sh(const char *fmt, ...) {
        char cmd[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
        Fx *f = calloc(1, sizeof *f);
        strcpy(f->root, "/tmp/test-undo-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->ws, sizeof f->ws, "%s/ws", f->root);
        snprintf(f->st, sizeof f->st, "%s/store", f->root);
        assert_int_equal(mkdir(f->ws, 0755), 0);
        assert_int_equal(mkdir(f->st, 0700), 0);
        f->ws_fd = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        f->st_fd = open(f->st, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->ws_fd >= 0 && f->st_fd >= 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fx *f = *state;
        close(f->ws_fd);
        close(f->st_fd);
        sh("chmod -R u+rwx %s; rm -rf %s", f->root, f->root);
        free(f);
        return 0;
}

static void put(const Fx *f, const char *rel, const char *content, mode_t mode) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", f->ws, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static char *slurp(const char *path) {
        FILE *fp = fopen(path, "rb");
        if (!fp)
                return NULL;
        char *buf = calloc(1, 1 << 20);
        size_t n = fread(buf, 1, (1 << 20) - 1, fp);
        buf[n] = 0;
        fclose(fp);
        return buf;
}

/* The file at dir/rel holds exactly expected. */
static void assert_content(const char *dir, const char *rel, const char *expected) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        char *c = slurp(p);
        assert_non_null(c);
        assert_string_equal(c, expected);
        free(c);
}

/* One line per entry below dir: path, type, mode, and the content's hash
 * or the link's text; sorted, so two listings compare as strings. */
static void list_into(StrBuf *b, const char *dir, const char *rel) {
        char p[1024];
        snprintf(p, sizeof p, "%s%s%s", dir, *rel ? "/" : "", rel);
        DIR *d = opendir(p);
        assert_non_null(d);
        char *names[256];
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        names[n++] = strdup(de->d_name);
        closedir(d);
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        if (strcmp(names[i], names[j]) > 0) {
                                char *t = names[i];
                                names[i] = names[j];
                                names[j] = t;
                        }
        for (size_t i = 0; i < n; i++) {
                char crel[1024], cp[2048];
                snprintf(crel, sizeof crel, "%s%s%s", rel, *rel ? "/" : "", names[i]);
                snprintf(cp, sizeof cp, "%s/%s", dir, crel);
                struct stat st;
                assert_int_equal(lstat(cp, &st), 0);
                strbuf_appendf(b, "%s %o ", crel, (unsigned)st.st_mode);
                if (S_ISREG(st.st_mode)) {
                        char *c = slurp(cp), hex[SHA256_HEX_LEN + 1];
                        sha256_hex(c, (size_t)st.st_size, hex);
                        strbuf_appendf(b, "%s\n", hex);
                        free(c);
                } else if (S_ISLNK(st.st_mode)) {
                        char t[512] = { 0 };
                        assert_true(readlink(cp, t, sizeof t - 1) > 0);
                        strbuf_appendf(b, "-> %s\n", t);
                } else {
                        strbuf_appends(b, "\n");
                        if (S_ISDIR(st.st_mode))
                                list_into(b, dir, crel);
                }
                free(names[i]);
        }
}

static char *listing(const Fx *f) {
        StrBuf b = STRBUF_INIT;
        list_into(&b, f->ws, "");
        return strbuf_steal(&b);
}

static UndoStore *store(const Fx *f, uint64_t max_bytes, unsigned max_count) {
        UndoLimits l = { .max_bytes = max_bytes, .max_count = max_count };
        UndoStore *s = NULL;
        VsError *err = NULL;
        int r = undo_store_open(f->st_fd, &l, &s, &err);
        if (r < 0)
                fail_msg("open: %s", vs_error_message(err));
        return s;
}

static void capture(UndoCheckpoint *cp, const Fx *f, const char *rel, bool tree) {
        VsError *err = NULL;
        int r = undo_checkpoint_capture(cp, f->ws_fd, rel, tree, NULL, NULL, &err);
        if (r < 0)
                fail_msg("capture %s: %s", rel, vs_error_message(err));
}

static uint64_t commit(UndoCheckpoint *cp) {
        uint64_t seq = 99;
        VsError *err = NULL;
        if (undo_checkpoint_commit(cp, &seq, &err) < 0)
                fail_msg("commit: %s", vs_error_message(err));
        return seq;
}

static void restore(UndoStore *s, uint64_t seq, const Fx *f, const UndoRestoreOptions *o, UndoRestoreReport *rep) {
        VsError *err = NULL;
        UndoRestoreOptions def = { .uid = (uid_t)-1, .gid = (gid_t)-1 };
        if (undo_restore(s, seq, f->ws_fd, o ? o : &def, rep, &err) < 0)
                fail_msg("restore: %s", vs_error_message(err));
}

static const char *problem_for(const UndoRestoreReport *rep, const char *path) {
        for (size_t i = 0; i < rep->n_problems; i++)
                if (strcmp(rep->problems[i].path, path) == 0)
                        return rep->problems[i].reason;
        return NULL;
}

/* ---- capture and restore ---- */

static void make_tree(const Fx *f) {
        sh("mkdir -p %s/src/sub/deep %s/src/ro", f->ws, f->ws);
        put(f, "src/main.c", "int main(void) { return 0; }\n", 0644);
        put(f, "src/run.sh", "#!/bin/sh\necho hi\n", 0755);
        put(f, "src/secret-ish", "0600 content", 0600);
        put(f, "src/empty", "", 0444);
        put(f, "src/sub/deep/data.bin", "\x01\x02\xff binary", 0640);
        put(f, "src/ro/kept", "under a read-only dir", 0644);
        sh("ln -s ../main.c %s/src/sub/link && ln -s /etc/passwd %s/src/abs-link", f->ws, f->ws);
        sh("chmod 0750 %s/src/sub && chmod 0555 %s/src/ro && chmod 2711 %s/src/sub/deep", f->ws, f->ws, f->ws);
}

static void test_rm_rf(void **state) {
        Fx *f = *state;
        make_tree(f);
        char *before = listing(f);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "terminal: rm -rf src", &cp), 0);
        capture(cp, f, "src", true);
        sh("chmod -R u+w %s/src && rm -rf %s/src", f->ws, f->ws);
        uint64_t seq = commit(cp);
        assert_int_equal(seq, 1);
        char *gone = listing(f);
        assert_string_not_equal(gone, before);
        free(gone);
        UndoRestoreReport rep;
        restore(s, seq, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        assert_int_equal(rep.n_restored, 12);
        char *after = listing(f);
        assert_string_equal(after, before);
        /* The restore is a checkpoint of its own (what it replaced: nothing at src). */
        assert_int_equal(rep.seq, 2);
        assert_int_equal(undo_store_find(s, 2)->n, 12);
        assert_int_equal(undo_manifest_find(undo_store_find(s, 2), "src")->type, UNDO_ABSENT);
        undo_restore_report_done(&rep);
        /* The store survives its reopening: the same checkpoints, the same bytes. */
        uint64_t bytes = undo_store_bytes(s);
        undo_store_free(s);
        s = store(f, 0, 0);
        assert_int_equal(undo_store_count(s), 2);
        assert_int_equal(undo_store_bytes(s), bytes);
        sh("chmod -R u+w %s/src && rm -rf %s/src", f->ws, f->ws);
        restore(s, 1, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        char *again = listing(f);
        assert_string_equal(again, before);
        undo_restore_report_done(&rep);
        free(again);
        free(after);
        free(before);
        undo_store_free(s);
}

/* One checkpoint (a turn): tmp.txt created, renamed over keep.txt, and
 * keep.txt deleted; each path's first state is the one kept. */
static void test_created_renamed_deleted(void **state) {
        Fx *f = *state;
        put(f, "keep.txt", "the original\n", 0640);
        char *before = listing(f);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "turn 1", &cp), 0);
        capture(cp, f, "tmp.txt", false);
        put(f, "tmp.txt", "the replacement\n", 0644);
        capture(cp, f, "tmp.txt", false); /* again: the first state (absent) stays */
        capture(cp, f, "keep.txt", false);
        sh("mv %s/tmp.txt %s/keep.txt", f->ws, f->ws);
        capture(cp, f, "keep.txt", false);
        sh("rm %s/keep.txt", f->ws);
        uint64_t seq = commit(cp);
        const UndoManifest *m = undo_store_find(s, seq);
        assert_int_equal(m->n, 2);
        assert_int_equal(undo_manifest_find(m, "tmp.txt")->type, UNDO_ABSENT);
        assert_int_equal(undo_manifest_find(m, "keep.txt")->type, UNDO_FILE);
        UndoRestoreReport rep;
        restore(s, seq, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        assert_int_equal(rep.n_restored, 1); /* tmp.txt is absent already */
        char *after = listing(f);
        assert_string_equal(after, before);
        undo_restore_report_done(&rep);
        free(after);
        free(before);
        undo_store_free(s);
}

static void test_undo_of_undo(void **state) {
        Fx *f = *state;
        make_tree(f);
        char *s0 = listing(f);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        /* The call: a file rewritten, one deleted, a directory replaced by a
         * file, a symlink retargeted, a mode changed, a file created. */
        assert_int_equal(undo_checkpoint_begin(s, "call", &cp), 0);
        const char *touched[] = { "src/main.c", "src/run.sh", "src/sub", "src/abs-link", "src/secret-ish", "new.txt" };
        for (size_t i = 0; i < ELEMENTSOF(touched); i++)
                capture(cp, f, touched[i], true);
        put(f, "src/main.c", "rewritten\n", 0644);
        sh("rm %s/src/run.sh && rm -rf %s/src/sub && echo flat > %s/src/sub", f->ws, f->ws, f->ws);
        sh("ln -sfn /tmp %s/src/abs-link && chmod 0644 %s/src/secret-ish && echo new > %s/new.txt", f->ws, f->ws,
           f->ws);
        uint64_t call = commit(cp);
        char *s1 = listing(f);
        UndoRestoreReport rep;
        restore(s, call, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        char *back = listing(f);
        assert_string_equal(back, s0);
        uint64_t undo = rep.seq;
        assert_true(undo > call);
        undo_restore_report_done(&rep);
        /* The undo undone: the state after the call again, byte for byte. */
        restore(s, undo, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        char *forward = listing(f);
        assert_string_equal(forward, s1);
        undo_restore_report_done(&rep);
        /* And a restore to a state already there changes nothing and makes
         * no checkpoint. */
        restore(s, rep.seq ? rep.seq : undo, f, NULL, &rep);
        size_t n = undo_store_count(s);
        undo_restore_report_done(&rep);
        restore(s, undo_store_get(s, n - 1)->seq, f, NULL, &rep);
        undo_restore_report_done(&rep);
        free(s0);
        free(s1);
        free(back);
        free(forward);
        undo_store_free(s);
}

static size_t count_files(const char *dir) {
        DIR *d = opendir(dir);
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static void test_noop_costs_nothing(void **state) {
        Fx *f = *state;
        make_tree(f);
        UndoStore *s = store(f, 0, 0);
        uint64_t bytes = undo_store_bytes(s);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "terminal true", &cp), 0);
        assert_int_equal(commit(cp), 0);
        assert_int_equal(undo_store_bytes(s), bytes);
        assert_int_equal(undo_store_count(s), 0);
        char p[256];
        snprintf(p, sizeof p, "%s/checkpoints", f->st);
        assert_int_equal(count_files(p), 0);
        /* Two checkpoints of the same content share one blob. */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(undo_checkpoint_begin(s, "cat", &cp), 0);
                capture(cp, f, "src/main.c", false);
                commit(cp);
        }
        assert_int_equal(undo_store_n_blobs(s), 1);
        snprintf(p, sizeof p, "%s/blobs", f->st);
        assert_int_equal(count_files(p), 1);
        undo_store_free(s);
}

static void test_caps(void **state) {
        Fx *f = *state;
        UndoStore *s = store(f, 0, 3);
        char content[64];
        for (int i = 1; i <= 5; i++) {
                UndoCheckpoint *cp;
                assert_int_equal(undo_checkpoint_begin(s, "write", &cp), 0);
                snprintf(content, sizeof content, "version %d\n", i);
                put(f, "f.txt", content, 0644);
                capture(cp, f, "f.txt", false);
                assert_int_equal(commit(cp), (uint64_t)i);
        }
        /* The oldest two went, and their blobs with them. */
        assert_int_equal(undo_store_count(s), 3);
        assert_int_equal(undo_store_get(s, 0)->seq, 3);
        assert_null(undo_store_find(s, 1));
        assert_int_equal(undo_store_n_blobs(s), 3);
        char p[256];
        snprintf(p, sizeof p, "%s/blobs", f->st);
        assert_int_equal(count_files(p), 3);
        /* A cap lowered later applies at the next open. */
        undo_store_free(s);
        s = store(f, 0, 2);
        assert_int_equal(undo_store_count(s), 2);
        assert_int_equal(undo_store_get(s, 0)->seq, 4);
        assert_int_equal(count_files(p), 2);
        undo_store_free(s);
}

static void test_caps_bytes(void **state) {
        Fx *f = *state;
        UndoStore *s = store(f, 10 * 1024, 100);
        char big[4097];
        for (int i = 1; i <= 4; i++) {
                memset(big, 'a' + i, 4096);
                big[4096] = 0;
                put(f, "f.txt", big, 0644);
                UndoCheckpoint *cp;
                assert_int_equal(undo_checkpoint_begin(s, "write", &cp), 0);
                capture(cp, f, "f.txt", false);
                commit(cp);
                assert_true(undo_store_bytes(s) <= 10 * 1024);
        }
        /* 4 KiB and a manifest each: two fit under 10 KiB, the oldest went. */
        assert_int_equal(undo_store_count(s), 2);
        assert_int_equal(undo_store_get(s, 0)->seq, 3);
        /* A file over the cap is recorded without content, and a restore
         * lists it. */
        char *huge = malloc(20 * 1024 + 1);
        memset(huge, 'z', 20 * 1024);
        huge[20 * 1024] = 0;
        put(f, "huge.bin", huge, 0644);
        free(huge);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "rm huge", &cp), 0);
        capture(cp, f, "huge.bin", false);
        uint64_t seq = commit(cp);
        assert_int_equal(undo_manifest_find(undo_store_find(s, seq), "huge.bin")->type, UNDO_TOO_BIG);
        sh("rm %s/huge.bin", f->ws);
        UndoRestoreReport rep;
        restore(s, seq, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 1);
        assert_non_null(strstr(problem_for(&rep, "huge.bin"), "cap"));
        undo_restore_report_done(&rep);

        /* A restore never destroys what it could not save first: a call
         * made d/ and a file over the cap in it; undoing the call keeps
         * that file (and so d), lists both, and removes the rest. */
        assert_int_equal(undo_checkpoint_begin(s, "make d", &cp), 0);
        capture(cp, f, "d", true);
        seq = commit(cp);
        sh("mkdir %s/d && head -c 20480 /dev/zero > %s/d/big && echo small > %s/d/small", f->ws, f->ws, f->ws);
        restore(s, seq, f, NULL, &rep);
        assert_non_null(strstr(problem_for(&rep, "d/big"), "cap"));
        assert_non_null(problem_for(&rep, "d"));
        assert_int_equal(rep.n_problems, 2);
        char p[256];
        snprintf(p, sizeof p, "%s/d/big", f->ws);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_size, 20480);
        snprintf(p, sizeof p, "%s/d/small", f->ws);
        assert_int_equal(access(p, F_OK), -1);
        /* What it removed is in its own checkpoint; the big file as too big. */
        const UndoManifest *saved = undo_store_find(s, rep.seq);
        assert_int_equal(undo_manifest_find(saved, "d/small")->type, UNDO_FILE);
        assert_int_equal(undo_manifest_find(saved, "d/big")->type, UNDO_TOO_BIG);
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

/* The agent replaced a directory by a symlink to a place outside the
 * root after the checkpoint. A restore of a file below it does not write
 * through the link; a restore of the directory itself replaces the link
 * with a directory, never following it. */
static void test_symlink_not_followed(void **state) {
        Fx *f = *state;
        sh("mkdir -p %s/src %s/outside && echo outside > %s/outside/a.txt", f->ws, f->root, f->root);
        put(f, "src/a.txt", "inside\n", 0644);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "edit", &cp), 0);
        capture(cp, f, "src/a.txt", false);
        put(f, "src/a.txt", "edited\n", 0644);
        uint64_t seq = commit(cp);
        /* Later, outside any checkpoint: src becomes a link out of the root. */
        sh("rm -rf %s/src && ln -s %s/outside %s/src", f->ws, f->root, f->ws);
        UndoRestoreReport rep;
        restore(s, seq, f, NULL, &rep);
        for (size_t i = 0; i < rep.n_problems; i++)
                print_message("# %s: %s\n", rep.problems[i].path, rep.problems[i].reason);
        assert_int_equal(rep.n_restored, 0);
        assert_int_equal(rep.n_problems, 1);
        assert_non_null(strstr(problem_for(&rep, "src/a.txt"), "symlink"));
        char p[256];
        assert_content(f->root, "outside/a.txt", "outside\n");
        snprintf(p, sizeof p, "%s/outside", f->root);
        assert_int_equal(count_files(p), 1);
        undo_restore_report_done(&rep);

        /* A checkpoint that holds the directory: the link is replaced, not entered. */
        sh("rm %s/src && mkdir %s/src && echo v1 > %s/src/a.txt", f->ws, f->ws, f->ws);
        assert_int_equal(undo_checkpoint_begin(s, "rm -rf src; ln -s", &cp), 0);
        capture(cp, f, "src", true);
        sh("rm -rf %s/src && ln -s %s/outside %s/src", f->ws, f->root, f->ws);
        seq = commit(cp);
        restore(s, seq, f, NULL, &rep);
        assert_int_equal(rep.n_problems, 0);
        struct stat st;
        snprintf(p, sizeof p, "%s/src", f->ws);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_content(f->ws, "src/a.txt", "v1\n");
        assert_content(f->root, "outside/a.txt", "outside\n");
        /* The link it replaced is in the restore's own checkpoint, as a link. */
        const UndoEntry *e = undo_manifest_find(undo_store_find(s, rep.seq), "src");
        assert_int_equal(e->type, UNDO_SYMLINK);
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

static UndoPathClass policy(const char *rel, void *userdata) {
        (void)userdata;
        if (strcmp(rel, ".env") == 0 || strcmp(rel, ".ssh") == 0 || strcmp(rel, "later") == 0) /* not below them */
                return UNDO_PATH_MASKED;
        if (strcmp(rel, "vectora.toml") == 0 || strncmp(rel, "keep/", 5) == 0)
                return UNDO_PATH_PROTECTED;
        return UNDO_PATH_OK;
}

static bool store_holds(const Fx *f, const char *needle) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "grep -rqF '%s' %s/blobs", needle, f->st);
        return system(cmd) == 0;
}

/* What cannot be restored is listed with its reason, and left as it is. */
static void test_unrestorable_listed(void **state) {
        Fx *f = *state;
        put(f, ".env", "TOKEN=masked-secret-value\n", 0600);
        sh("mkdir %s/.ssh && echo ssh-key-secret-value > %s/.ssh/id_ed25519", f->ws, f->ws);
        put(f, "vectora.toml", "[sandbox]\n", 0644);
        put(f, "ok.txt", "fine\n", 0644);
        sh("mkfifo %s/pipe", f->ws);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "damage", &cp), 0);
        const char *paths[] = { ".env", ".ssh", "vectora.toml", "ok.txt", "pipe", "made" };
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                VsError *err = NULL;
                assert_int_equal(undo_checkpoint_capture(cp, f->ws_fd, paths[i], true, policy, NULL, &err), 0);
        }
        uint64_t seq = commit(cp);
        /* A masked file's content never enters the store. */
        assert_int_equal(undo_manifest_find(undo_store_find(s, seq), ".env")->type, UNDO_MASKED);
        assert_false(store_holds(f, "masked-secret-value"));
        assert_false(store_holds(f, "ssh-key-secret-value"));
        assert_int_equal(undo_manifest_find(undo_store_find(s, seq), ".ssh")->type, UNDO_MASKED);
        assert_null(undo_manifest_find(undo_store_find(s, seq), ".ssh/id_ed25519"));
        assert_true(store_holds(f, "[sandbox]"));
        /* The call: everything removed or rewritten; a protected file
         * appears in a directory the call made. */
        sh("rm %s/.env %s/pipe %s/ok.txt && echo '[sandbox]\nenabled=false' > %s/vectora.toml", f->ws, f->ws, f->ws,
           f->ws);
        sh("rm -rf %s/.ssh", f->ws);
        sh("mkdir -p %s/made/keep && echo x > %s/made/keep/y && echo TOKEN=new > %s/.env", f->ws, f->ws, f->ws);
        UndoRestoreOptions o = { .filter = policy, .uid = (uid_t)-1, .gid = (gid_t)-1 };
        UndoRestoreReport rep;
        /* made/keep/y: protected only under "keep/" at the top, so removable here. */
        restore(s, seq, f, &o, &rep);
        assert_non_null(strstr(problem_for(&rep, ".env"), "masked"));
        assert_non_null(strstr(problem_for(&rep, "vectora.toml"), "protected"));
        assert_non_null(strstr(problem_for(&rep, "pipe"), "FIFO"));
        assert_null(problem_for(&rep, "ok.txt"));
        assert_non_null(strstr(problem_for(&rep, ".ssh"), "masked"));
        assert_int_equal(rep.n_problems, 4);
        char p[256];
        assert_content(f->ws, ".env", "TOKEN=new\n"); /* a masked path is never touched */
        snprintf(p, sizeof p, "%s/vectora.toml", f->ws);
        char *c = slurp(p);
        assert_non_null(strstr(c, "enabled=false")); /* nor a protected one */
        free(c);
        assert_content(f->ws, "ok.txt", "fine\n");
        snprintf(p, sizeof p, "%s/made", f->ws);
        assert_int_equal(access(p, F_OK), -1);
        undo_restore_report_done(&rep);

        /* A protected file inside a directory a restore would remove: the
         * file stays, and so does its directory, both listed. */
        assert_int_equal(undo_checkpoint_begin(s, "mkdir keep", &cp), 0);
        capture(cp, f, "keep", true);
        sh("mkdir -p %s/keep && echo precious > %s/keep/file", f->ws, f->ws);
        seq = commit(cp);
        restore(s, seq, f, &o, &rep);
        assert_non_null(strstr(problem_for(&rep, "keep/file"), "protected"));
        assert_non_null(problem_for(&rep, "keep"));
        assert_content(f->ws, "keep/file", "precious\n");
        undo_restore_report_done(&rep);

        /* A file captured before its directory was masked (no filter then)
         * is not written back below the masked directory. */
        sh("mkdir -p %s/later && echo was-readable > %s/later/secret", f->ws, f->ws);
        assert_int_equal(undo_checkpoint_begin(s, "before the mask", &cp), 0);
        capture(cp, f, "later/secret", false);
        seq = commit(cp);
        sh("rm %s/later/secret", f->ws);
        restore(s, seq, f, &o, &rep);
        assert_non_null(strstr(problem_for(&rep, "later/secret"), "masked"));
        snprintf(p, sizeof p, "%s/later/secret", f->ws);
        assert_int_equal(access(p, F_OK), -1);
        undo_restore_report_done(&rep);

        /* A damaged blob is found by its hash, listed, and not written. */
        assert_int_equal(undo_checkpoint_begin(s, "edit", &cp), 0);
        capture(cp, f, "ok.txt", false);
        seq = commit(cp);
        put(f, "ok.txt", "changed\n", 0644);
        sh("for b in %s/blobs/*; do grep -q fine $b && chmod u+w $b && echo tampered > $b; done; true", f->st);
        restore(s, seq, f, &o, &rep);
        assert_non_null(strstr(problem_for(&rep, "ok.txt"), "damaged"));
        assert_content(f->ws, "ok.txt", "changed\n");
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

/* A file that appears between the restore's two passes (the agent racing
 * it) is not removed: the restore removes only what it saved first. The
 * filter, asked about "d" once the restore's own checkpoint is committed
 * (the second pass), plays the agent. */
typedef struct Race {
        const Fx *f;
        UndoStore *s;
        unsigned asked;
} Race;

static UndoPathClass racing(const char *rel, void *userdata) {
        Race *race = userdata;
        if (strcmp(rel, "d") == 0 && undo_store_count(race->s) == 2 && race->asked++ == 0)
                sh("echo late > %s/d/late", race->f->ws);
        return UNDO_PATH_OK;
}

static void test_appeared_between_passes(void **state) {
        Fx *f = *state;
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "make d", &cp), 0);
        capture(cp, f, "d", true);
        uint64_t seq = commit(cp);
        sh("mkdir %s/d && echo early > %s/d/early", f->ws, f->ws);
        Race race = { .f = f, .s = s };
        UndoRestoreOptions o = { .filter = racing, .userdata = &race, .uid = (uid_t)-1, .gid = (gid_t)-1 };
        UndoRestoreReport rep;
        restore(s, seq, f, &o, &rep);
        assert_true(race.asked >= 1);
        assert_non_null(problem_for(&rep, "d/late"));
        assert_non_null(strstr(problem_for(&rep, "d/late"), "appeared after"));
        assert_non_null(problem_for(&rep, "d"));
        char p[256];
        assert_content(f->ws, "d/late", "late\n");
        snprintf(p, sizeof p, "%s/d/early", f->ws);
        assert_int_equal(access(p, F_OK), -1);
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

/* Copy-before-write from the descriptor being written (what the worker
 * hands over as the agent opens a file for writing): the content saved is
 * that file's, the descriptor's offset is untouched, and the in-place
 * rewrite that follows is undone. */
static void test_capture_fd(void **state) {
        Fx *f = *state;
        put(f, "db.sqlite", "original content\n", 0640);
        put(f, ".env", "TOKEN=fd-secret\n", 0600);
        char p[256];
        snprintf(p, sizeof p, "%s/db.sqlite", f->ws);
        int fd = open(p, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(lseek(fd, 9, SEEK_SET), 9);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        VsError *err = NULL;
        assert_int_equal(undo_checkpoint_begin(s, "write in place", &cp), 0);
        assert_int_equal(undo_checkpoint_capture_fd(cp, "db.sqlite", fd, policy, NULL, &err), 0);
        assert_int_equal(lseek(fd, 0, SEEK_CUR), 9);
        /* The first state of a path is the one kept. */
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(undo_checkpoint_capture_fd(cp, "db.sqlite", fd, policy, NULL, &err), 0);
        assert_int_equal(pwrite(fd, "new", 3, 0), 3);
        close(fd);
        snprintf(p, sizeof p, "%s/.env", f->ws);
        fd = open(p, O_RDWR | O_CLOEXEC);
        assert_int_equal(undo_checkpoint_capture_fd(cp, ".env", fd, policy, NULL, &err), 0);
        close(fd);
        fd = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(undo_checkpoint_capture_fd(cp, "dir", fd, policy, NULL, &err), -EINVAL);
        vs_error_free(err);
        close(fd);
        uint64_t seq = commit(cp);
        assert_int_equal(undo_manifest_find(undo_store_find(s, seq), ".env")->type, UNDO_MASKED);
        assert_false(store_holds(f, "fd-secret"));
        UndoRestoreReport rep;
        restore(s, seq, f, NULL, &rep);
        assert_content(f->ws, "db.sqlite", "original content\n");
        struct stat st;
        snprintf(p, sizeof p, "%s/db.sqlite", f->ws);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

/* A file a background process wrote through a descriptor it opened
 * before checkpoint 1 began: checkpoint 1 has no pre-image of it. A
 * restore to 1 lists it, and does not put back what checkpoint 2 saw
 * (the state after 1's writes, not before them); a restore to 2 does. */
static void test_lost_pre_image(void **state) {
        Fx *f = *state;
        put(f, "server.log", "line 1\n", 0644);
        put(f, "other.txt", "before 1\n", 0644);
        UndoStore *s = store(f, 0, 0);
        UndoCheckpoint *cp;
        VsError *err = NULL;
        assert_int_equal(undo_checkpoint_begin(s, "call 1", &cp), 0);
        capture(cp, f, "other.txt", false);
        put(f, "other.txt", "after 1\n", 0644);
        put(f, "server.log", "line 1\nline 2\n", 0644); /* the background write */
        assert_int_equal(undo_checkpoint_mark_lost(cp, "server.log", &err), 0);
        uint64_t one = commit(cp);
        assert_int_equal(undo_checkpoint_begin(s, "call 2", &cp), 0);
        capture(cp, f, "server.log", false);
        put(f, "server.log", "rewritten\n", 0644);
        uint64_t two = commit(cp);
        assert_int_equal(undo_manifest_find(undo_store_find(s, one), "server.log")->type, UNDO_LOST);
        UndoRestoreReport rep;
        restore(s, one, f, NULL, &rep);
        assert_non_null(strstr(problem_for(&rep, "server.log"), "descriptor opened before"));
        assert_content(f->ws, "server.log", "rewritten\n");
        assert_content(f->ws, "other.txt", "before 1\n");
        undo_restore_report_done(&rep);
        restore(s, two, f, NULL, &rep);
        assert_null(problem_for(&rep, "server.log"));
        assert_content(f->ws, "server.log", "line 1\nline 2\n");
        undo_restore_report_done(&rep);
        undo_store_free(s);
}

/* A torn manifest (a crash mid-write) is removed at the next open, with
 * the blobs only it held; temporary files a crash left go too. */
static void test_open_sweeps(void **state) {
        Fx *f = *state;
        put(f, "a.txt", "alpha\n", 0644);
        UndoStore *s = store(f, 0, 0);
        for (int i = 0; i < 2; i++) {
                UndoCheckpoint *cp;
                assert_int_equal(undo_checkpoint_begin(s, "w", &cp), 0);
                capture(cp, f, "a.txt", false);
                commit(cp);
                put(f, "a.txt", "beta\n", 0644);
        }
        undo_store_free(s);
        sh("truncate -s -3 %s/checkpoints/00000000000000000002 && touch %s/blobs/.vsundo-0123456789abcdef",
           f->st, f->st);
        /* A FIFO and a symlink named like manifests: not read as one (the
         * open does not block on the FIFO), removed. */
        sh("mkfifo %s/checkpoints/00000000000000000007 && ln -s /etc/passwd %s/checkpoints/00000000000000000008",
           f->st, f->st);
        s = store(f, 0, 0);
        assert_int_equal(undo_store_count(s), 1);
        assert_int_equal(undo_store_get(s, 0)->seq, 1);
        char p[256];
        snprintf(p, sizeof p, "%s/blobs", f->st);
        assert_int_equal(count_files(p), 1);
        snprintf(p, sizeof p, "%s/blobs/.vsundo-0123456789abcdef", f->st);
        assert_int_equal(access(p, F_OK), -1);
        snprintf(p, sizeof p, "%s/checkpoints", f->st);
        assert_int_equal(count_files(p), 1);
        /* The next checkpoint takes the next free number. */
        UndoCheckpoint *cp;
        assert_int_equal(undo_checkpoint_begin(s, "w", &cp), 0);
        capture(cp, f, "a.txt", false);
        assert_int_equal(commit(cp), 2);
        undo_store_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_rm_rf, setup, teardown),
                cmocka_unit_test_setup_teardown(test_created_renamed_deleted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_undo_of_undo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_noop_costs_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_caps_bytes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unrestorable_listed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_appeared_between_passes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capture_fd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lost_pre_image, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_sweeps, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
