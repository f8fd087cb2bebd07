/* SPDX-License-Identifier: MIT */
/* The worker's file operations (src/worker/fileops.c) and its sweep of
 * killed writes' temp files (src/worker/sweep.c), on a real tree without a
 * jail, through the same protocol lines the daemon sends: a request
 * encoded, decoded as the worker's loop hands it over, served, and the
 * reply decoded as the daemon reads it. What end-to-end tests reach only
 * through a jail: the read window and whole-file hash, the size limit, the
 * write's preconditions (absent, unchanged), its mode and its temp file,
 * bytes that are not UTF-8 or hold NULs, stat, list_dir's masking, glob
 * and grep's walk (find.c). */
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
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "msg-fixture.h"
#include "path-util.h"
#include "sha256.h"
#include "worker-fixture.h"
#include "worker.h"

static char root[64];
static char *ws;
static Policy policy;

static char *at(const char *rel) {
        char *p = path_join(ws, rel);
        assert_non_null(p);
        return p;
}

static void put(const char *rel, const void *data, size_t len) {
        _cleanup_free_ char *p = at(rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t) len);
        close(fd);
}

/* The file's bytes (NUL after them), *ret_len its size. */
static char *slurp(const char *rel, size_t *ret_len) {
        _cleanup_free_ char *p = at(rel);
        FILE *f = fopen(p, "re");
        assert_non_null(f);
        char *buf = calloc(1, 1 << 20);
        assert_non_null(buf);
        *ret_len = fread(buf, 1, (1 << 20) - 1, f);
        fclose(f);
        return buf;
}

static int setup(void **state) {
        fixture_tmp(root, "fileops");
        ws = path_join(root, "ws");
        assert_int_equal(mkdir(ws, 0755), 0);
        _cleanup_free_ char *sub = at("sub"), *secrets = at("secrets");
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(mkdir(secrets, 0755), 0);
        put("a.txt", "hello world\n", 12);
        put(".env", "SECRET=1\n", 9);
        put("secrets/key", "k\n", 2);
        put("sub/b.txt", "b\n", 2);
        put("sub/.env", "SECRET=2\n", 9);
        _cleanup_free_ char *inner = at("sub/inner");
        assert_int_equal(mkdir(inner, 0755), 0);
        char *rw[] = { ws, NULL };
        char *mask[] = { (char *) ".env", (char *) "/secrets/", NULL };
        ProtocolInit init = { .mode = PROTOCOL_MODE_JAIL, .workspace = ws, .rw_paths = rw, .mask = mask };
        fixture_policy(&policy, &init);
        return 0;
}

static int teardown(void **state) {
        policy_done(&policy);
        free(ws);
        return fixture_tmp_remove(root);
}

typedef int (*FileOp)(const Policy *p, json_t *obj, StrBuf *out, VsError **err);

/* The last refusal's error code, as the worker's reply spells it. */
static char last_kind[64];

/* Serves the request line req with op (write_file: with its raw payload).
 * Success: 0 and the reply line in *ret. Failure: the negative errno, its
 * code on the wire in last_kind, and no reply written. */
static int serve(const StrBuf *req, FileOp op, bool write, JsonlMsg *ret) {
        JsonlMsg m = parse(req);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        int k = write ? fileops_write_file(&policy, m.obj, m.raw, m.raw_len, &out, &err)
                      : op(&policy, m.obj, &out, &err);
        jsonl_msg_done(&m);
        if (k < 0) {
                assert_int_equal(out.len, 0);
                assert_non_null(err);
                snprintf(last_kind, sizeof last_kind, "%s",
                         protocol_error_code_to_string(protocol_error_code_from_error(k, err)));
                return k;
        }
        assert_null(err);
        *ret = parse(&out);
        return 0;
}

static int read_file(const char *path, uint64_t offset, uint64_t limit, JsonlMsg *ret) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        ProtocolReadFileRequest q = { .path = path, .offset = offset, .limit = limit };
        assert_int_equal(protocol_encode_read_file_request(&b, 7, &q), 0);
        return serve(&b, fileops_read_file, false, ret);
}

static int write_file(const char *path, const void *data, size_t len, const char *if_sha256, bool parents,
                      int mode, JsonlMsg *ret) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        ProtocolWriteFileRequest q = { .path = path, .if_sha256 = if_sha256, .create_parents = parents,
                                       .has_mode = mode >= 0, .mode = mode >= 0 ? (uint64_t) mode : 0 };
        assert_int_equal(protocol_encode_write_file_request(&b, 8, &q, data, len), 0);
        return serve(&b, NULL, true, ret);
}

/* A refusal with this errno and kind. */
static void assert_refused(int k, int want_errno, const char *want_kind) {
        assert_int_equal(k, -want_errno);
        assert_string_equal(last_kind, want_kind);
}

static void test_read_window_and_hash(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(read_file("a.txt", 6, 3, &m), 0);
        ProtocolReadFileReply r;
        assert_int_equal(protocol_decode_read_file_reply(m.obj, &r, NULL), 0);
        /* The window is [6, 9); size and hash are the whole file's. */
        assert_int_equal(m.raw_len, 3);
        assert_memory_equal(m.raw, "wor", 3);
        assert_int_equal(r.size, 12);
        assert_int_equal(r.offset, 6);
        assert_false(r.eof);
        char want[SHA256_HEX_LEN + 1];
        sha256_hex("hello world\n", 12, want);
        assert_string_equal(r.sha256, want);
        jsonl_msg_done(&m);

        /* Up to the end: eof; past the end: nothing, still eof. */
        assert_int_equal(read_file("a.txt", 6, 0, &m), 0);
        assert_int_equal(protocol_decode_read_file_reply(m.obj, &r, NULL), 0);
        assert_int_equal(m.raw_len, 6);
        assert_true(r.eof);
        jsonl_msg_done(&m);
        assert_int_equal(read_file("a.txt", 100, 0, &m), 0);
        assert_int_equal(protocol_decode_read_file_reply(m.obj, &r, NULL), 0);
        assert_int_equal(m.raw_len, 0);
        assert_true(r.eof);
        jsonl_msg_done(&m);
}

static void test_read_refusals(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        /* A window over one raw payload is refused before anything is read. */
        assert_refused(read_file("a.txt", 0, JSONL_MAX_RAW + 1ull, &m), EFBIG, "too_large");
        assert_refused(read_file("missing", 0, 0, &m), ENOENT, "not_found");
        assert_refused(read_file("sub", 0, 0, &m), EINVAL, "bad_request");
        assert_refused(read_file(".env", 0, 0, &m), EACCES, "denied");
        assert_refused(read_file("secrets/key", 0, 0, &m), EACCES, "denied");
        /* A FIFO would block the worker: refused as not a regular file,
         * without waiting for a writer. */
        _cleanup_free_ char *fifo = at("fifo");
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_refused(read_file("fifo", 0, 0, &m), EINVAL, "bad_request");
        assert_int_equal(unlink(fifo), 0);
}

/* Bytes that are not UTF-8, NULs and a CR go through both ways unchanged. */
static void test_binary_round_trip(void **state) {
        static const char bin[] = { 'a', 0, '\xff', '\xfe', '\r', '\n', '\xc3', 0, '\xe2', '\x82' };
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(write_file("bin.dat", bin, sizeof bin, NULL, false, -1, &m), 0);
        ProtocolWriteFileReply w;
        assert_int_equal(protocol_decode_write_file_reply(m.obj, &w, NULL), 0);
        assert_int_equal(w.size, sizeof bin);
        assert_true(w.created);
        char want[SHA256_HEX_LEN + 1];
        sha256_hex(bin, sizeof bin, want);
        assert_string_equal(w.sha256, want);
        jsonl_msg_done(&m);
        size_t n;
        _cleanup_free_ char *disk = slurp("bin.dat", &n);
        assert_int_equal(n, sizeof bin);
        assert_memory_equal(disk, bin, sizeof bin);

        assert_int_equal(read_file("bin.dat", 0, 0, &m), 0);
        ProtocolReadFileReply r;
        assert_int_equal(protocol_decode_read_file_reply(m.obj, &r, NULL), 0);
        assert_int_equal(m.raw_len, sizeof bin);
        assert_memory_equal(m.raw, bin, sizeof bin);
        assert_string_equal(r.sha256, want);
        jsonl_msg_done(&m);
}

static void test_write_preconditions(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        char old[SHA256_HEX_LEN + 1], other[SHA256_HEX_LEN + 1];
        sha256_hex("hello world\n", 12, old);
        sha256_hex("something else", 14, other);

        /* "": must not exist. */
        assert_refused(write_file("a.txt", "x", 1, "", false, -1, &m), EEXIST, "precondition_failed");
        /* The hash of what the caller read: refused once the file changed. */
        assert_refused(write_file("a.txt", "x", 1, other, false, -1, &m), ESTALE,
                       "precondition_failed");
        assert_refused(write_file("gone.txt", "x", 1, old, false, -1, &m), ENOENT,
                       "precondition_failed");
        size_t n;
        _cleanup_free_ char *still = slurp("a.txt", &n);
        assert_string_equal(still, "hello world\n"); /* nothing was written by a refusal */

        assert_int_equal(write_file("a.txt", "new\n", 4, old, false, -1, &m), 0);
        ProtocolWriteFileReply w;
        assert_int_equal(protocol_decode_write_file_reply(m.obj, &w, NULL), 0);
        assert_false(w.created);
        jsonl_msg_done(&m);
        _cleanup_free_ char *now = slurp("a.txt", &n);
        assert_string_equal(now, "new\n");
        /* The same hash again is stale now. */
        assert_refused(write_file("a.txt", "x", 1, old, false, -1, &m), ESTALE, "precondition_failed");

        /* Absent, with "": created. */
        assert_int_equal(write_file("fresh.txt", "f", 1, "", false, -1, &m), 0);
        assert_int_equal(protocol_decode_write_file_reply(m.obj, &w, NULL), 0);
        assert_true(w.created);
        jsonl_msg_done(&m);
}

static void test_write_mode_parents_and_refusals(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        struct stat st;

        /* An overwrite keeps the file's mode; an asked mode is set. */
        put("keep.sh", "#!/bin/sh\n", 10);
        _cleanup_free_ char *keep = at("keep.sh");
        assert_int_equal(chmod(keep, 0751), 0);
        assert_int_equal(write_file("keep.sh", "echo\n", 5, NULL, false, -1, &m), 0);
        jsonl_msg_done(&m);
        assert_int_equal(stat(keep, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);
        assert_int_equal(write_file("keep.sh", "echo\n", 5, NULL, false, 0600, &m), 0);
        jsonl_msg_done(&m);
        assert_int_equal(stat(keep, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* A new file: 0666 under the umask. */
        mode_t um = umask(022);
        assert_int_equal(write_file("new.txt", "n", 1, NULL, false, -1, &m), 0);
        umask(um);
        jsonl_msg_done(&m);
        _cleanup_free_ char *nw = at("new.txt");
        assert_int_equal(stat(nw, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);

        /* Missing parents only on request. */
        assert_refused(write_file("d1/d2/f", "x", 1, NULL, false, -1, &m), ENOENT, "not_found");
        assert_int_equal(write_file("d1/d2/f", "x", 1, NULL, true, -1, &m), 0);
        jsonl_msg_done(&m);

        /* Not over a directory, a FIFO, or a masked name; no empty content
         * left in their place. */
        assert_refused(write_file("sub", "x", 1, NULL, false, -1, &m), EISDIR, "io");
        _cleanup_free_ char *fifo = at("wfifo");
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_refused(write_file("wfifo", "x", 1, NULL, false, -1, &m), EINVAL, "bad_request");
        assert_refused(write_file(".env", "x", 1, NULL, false, -1, &m), EACCES, "denied");
        assert_refused(write_file("sub/.env", "x", 1, NULL, false, -1, &m), EACCES, "denied");
        size_t n;
        _cleanup_free_ char *env = slurp(".env", &n);
        assert_string_equal(env, "SECRET=1\n");

        /* No write leaves its temp file behind. */
        DIR *d = opendir(ws);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                if (sweep_is_temp_name(de->d_name))
                        fail_msg("temp file left: %s", de->d_name);
        closedir(d);
}

static void test_stat_and_list_dir(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_stat_request(&b, 9, "sub/b.txt"), 0);
        assert_int_equal(serve(&b, fileops_stat, false, &m), 0);
        ProtocolStatReply st;
        assert_int_equal(protocol_decode_stat_reply(m.obj, &st, NULL), 0);
        assert_int_equal(st.type, PROTOCOL_FILE_FILE);
        assert_int_equal(st.size, 2);
        assert_int_equal(st.mode, 0640);
        jsonl_msg_done(&m);
        strbuf_clear(&b);
        assert_int_equal(protocol_encode_stat_request(&b, 9, ".env"), 0);
        assert_refused(serve(&b, fileops_stat, false, &m), EACCES, "denied");

        /* Sorted, typed, and the masked names are not there to list. */
        _cleanup_free_ char *lnk = at("sub/link");
        assert_int_equal(symlink("b.txt", lnk), 0);
        strbuf_clear(&b);
        assert_int_equal(protocol_encode_list_dir_request(&b, 10, &(ProtocolListDirRequest){ .path = "sub" }), 0);
        assert_int_equal(serve(&b, fileops_list_dir, false, &m), 0);
        ProtocolListDirReply l;
        assert_int_equal(protocol_decode_list_dir_reply(m.obj, &l, NULL), 0);
        _cleanup_strbuf_ StrBuf names = STRBUF_INIT;
        for (size_t i = 0; i < l.n_entries; i++)
                assert_int_equal(strbuf_appendf(&names, "%s%s:%d", i ? " " : "", l.entries[i].name,
                                                (int) l.entries[i].type), 0);
        char want[128];
        snprintf(want, sizeof want, "b.txt:%d inner:%d link:%d", PROTOCOL_FILE_FILE, PROTOCOL_FILE_DIR,
                 PROTOCOL_FILE_SYMLINK);
        assert_string_equal(names.data, want);
        assert_int_equal(l.total, 3);
        assert_false(l.truncated);
        assert_int_equal(l.entries[0].size, 2); /* "b\n" */
        protocol_list_dir_reply_done(&l);
        jsonl_msg_done(&m);

        /* max_entries: the first by name, and the reply says what was left. */
        strbuf_clear(&b);
        assert_int_equal(protocol_encode_list_dir_request(&b, 11, &(ProtocolListDirRequest){ .path = "sub", .max_entries = 2 }), 0);
        assert_int_equal(serve(&b, fileops_list_dir, false, &m), 0);
        assert_int_equal(protocol_decode_list_dir_reply(m.obj, &l, NULL), 0);
        assert_int_equal(l.n_entries, 2);
        assert_int_equal(l.total, 3);
        assert_true(l.truncated);
        assert_string_equal(l.entries[1].name, "inner");
        protocol_list_dir_reply_done(&l);
        jsonl_msg_done(&m);
        assert_int_equal(unlink(lnk), 0);
}

/* Makes rel a temp file of a killed write: ages seconds old. */
static void temp_file(const char *rel, time_t age) {
        put(rel, "partial", 7);
        _cleanup_free_ char *p = at(rel);
        struct timeval tv[2];
        gettimeofday(&tv[0], NULL);
        tv[0].tv_sec -= age;
        tv[1] = tv[0];
        assert_int_equal(utimes(p, tv), 0);
}

static bool exists(const char *rel) {
        _cleanup_free_ char *p = at(rel);
        return access(p, F_OK) == 0;
}

static void test_sweep(void **state) {
        assert_true(sweep_is_temp_name(".vectora-tmp-aB3xY9"));
        assert_false(sweep_is_temp_name(".vectora-tmp-aB3xY"));   /* five */
        assert_false(sweep_is_temp_name(".vectora-tmp-aB3xY9z")); /* seven */
        assert_false(sweep_is_temp_name(".vectora-tmp-aB3-Y9"));
        assert_false(sweep_is_temp_name("vectora-tmp-aB3xY9"));

        temp_file(".vectora-tmp-old001", 60);
        temp_file("sub/.vectora-tmp-old002", 60);
        temp_file(".vectora-tmp-young1", 0);
        temp_file("secrets/.vectora-tmp-inmask", 60); /* below a masked directory: never entered */
        temp_file(".vectora-tmp-locked", 60);
        temp_file("keep-me", 60);
        /* A live write holds its temp file's lock: not taken. */
        _cleanup_free_ char *locked = at(".vectora-tmp-locked");
        int lfd = open(locked, O_RDONLY | O_CLOEXEC);
        assert_true(lfd >= 0);
        assert_int_equal(flock(lfd, LOCK_EX), 0);

        size_t young = 99;
        assert_int_equal(sweep_temp_files(&policy, &young, NULL), 2);
        assert_int_equal(young, 1);
        assert_false(exists(".vectora-tmp-old001"));
        assert_false(exists("sub/.vectora-tmp-old002"));
        assert_true(exists(".vectora-tmp-young1"));
        assert_true(exists("secrets/.vectora-tmp-inmask"));
        assert_true(exists(".vectora-tmp-locked"));
        assert_true(exists("keep-me"));

        /* The writer died: its lock is gone, the next sweep takes it. */
        close(lfd);
        assert_int_equal(sweep_temp_files(&policy, NULL, NULL), 1);
        assert_false(exists(".vectora-tmp-locked"));
}

/* The results of a glob or grep request, as "path:line:match" or
 * "path:type" items joined by spaces, and the reply's limit. */
static void find(const ProtocolFindRequest *q, char *ret, size_t size, const char **ret_limit) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        assert_int_equal(protocol_encode_find_request(&b, 12, q), 0);
        JsonlMsg m;
        assert_int_equal(serve(&b, find_run, false, &m), 0);
        ProtocolFindReply r;
        assert_int_equal(protocol_decode_find_reply(m.obj, q->head.op, &r, NULL), 0);
        size_t i, n = 0;
        json_t *e;
        ret[0] = 0;
        json_array_foreach(r.results, i, e) {
                json_t *line = json_object_get(e, "line");
                n += (size_t)snprintf(ret + n, size - n, "%s%s:%s", i ? " " : "", json_string_value(json_object_get(e, "path")),
                                      line ? json_is_true(json_object_get(e, "match")) ? "m" : "c"
                                           : json_string_value(json_object_get(e, "type")));
                assert_true(n < size);
        }
        static char limit[32];
        snprintf(limit, sizeof limit, "%s", r.limit ? r.limit : "");
        *ret_limit = limit;
        jsonl_msg_done(&m);
}

static void test_glob_and_grep(void **state) {
        char got[512];
        const char *limit;
        _cleanup_free_ char *out = at("sub/out");
        assert_int_equal(symlink("/etc", out), 0);
        put("sub/bin", "hello\0x", 7);
        put("sub/c.txt", "one\nhello\ntwo\nthree\nhello\n", 26);

        /* Masked names are not listed (sub/.env, secrets/), a symlink is
         * listed and not entered. */
        ProtocolFindRequest q = { .head.op = PROTOCOL_OP_GLOB, .path = "sub", .pattern = "*" };
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "b.txt:file bin:file c.txt:file inner:dir out:symlink");
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GLOB, .path = ".", .pattern = "**/key" };
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "");
        q.path = "sub";
        q.pattern = "*.txt";
        q.max_results = 1;
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "b.txt:file");
        assert_string_equal(limit, "max_results");

        /* grep: masked files never read, the binary one skipped, the
         * symlink not followed; context lines once each. */
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GREP, .path = ".", .pattern = "SECRET|root:" };
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "");
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GREP, .path = "sub", .pattern = "HEL+O", .ignore_case = true,
                                   .context = 1 };
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "c.txt:c c.txt:m c.txt:c c.txt:c c.txt:m");
        assert_string_equal(limit, "");
        q.fixed = true;
        q.pattern = "HELLO";
        q.context = 0;
        q.max_results = 1;
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "c.txt:m");
        assert_string_equal(limit, "max_results");

        /* \d is a digit, as an agent used to PCRE means it (GNU regex would
         * take it for a d), outside brackets only. */
        put("sub/c.txt", "id 42\nd only\nback\\slash\n", 24);
        static const struct {
                const char *pattern, *want;
        } digits[] = {
                { "\\d+", "c.txt:m" },
                { "[[:digit:]]\\d$", "c.txt:m" },
                { "^\\D\\D ", "c.txt:m" },
                { "[\\d]", "c.txt:m c.txt:m c.txt:m" }, /* a bracket's backslash and d are literal */
        };
        for (size_t i = 0; i < ELEMENTSOF(digits); i++) {
                q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GREP, .path = "sub/c.txt", .pattern = digits[i].pattern };
                find(&q, got, sizeof got, &limit);
                assert_string_equal(got, digits[i].want);
        }

        /* Lines cut at 400 bytes; results cut where the reply line would
         * grow past its share, said as such. */
        size_t big_len = 3000 * 1001;
        _cleanup_free_ char *big = malloc(big_len);
        assert_non_null(big);
        for (size_t i = 0; i < 3000; i++) {
                memset(big + i * 1001, 'x', 1000);
                big[i * 1001 + 1000] = '\n';
        }
        put("sub/c.txt", big, big_len);
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GREP, .path = "sub/c.txt", .pattern = "x", .max_results = 5000 };
        {
                _cleanup_strbuf_ StrBuf rb = STRBUF_INIT;
                JsonlMsg rm;
                assert_int_equal(protocol_encode_find_request(&rb, 15, &q), 0);
                assert_int_equal(serve(&rb, find_run, false, &rm), 0);
                ProtocolFindReply r;
                assert_int_equal(protocol_decode_find_reply(rm.obj, PROTOCOL_OP_GREP, &r, NULL), 0);
                assert_string_equal(r.limit, "reply_size");
                assert_true(json_array_size(r.results) > 1000 && json_array_size(r.results) < 3000);
                const char *text = json_string_value(json_object_get(json_array_get(r.results, 0), "text"));
                assert_int_equal(strlen(text), 400 + strlen(" [...]"));
                jsonl_msg_done(&rm);
        }

        /* The deadline: a walk of 10000 entries does not fit in 1 ms; it
         * stops and says so. */
        _cleanup_free_ char *many = at("many");
        assert_int_equal(mkdir(many, 0755), 0);
        for (int i = 0; i < 10000; i++) {
                char name[32];
                snprintf(name, sizeof name, "many/f%05d", i);
                put(name, "", 0);
        }
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GLOB, .path = "many", .pattern = "nothing", .deadline_ms = 1 };
        find(&q, got, sizeof got, &limit);
        assert_string_equal(got, "");
        assert_string_equal(limit, "deadline");

        /* A bad regex, a masked path: refused. */
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        JsonlMsg m;
        q = (ProtocolFindRequest){ .head.op = PROTOCOL_OP_GREP, .path = ".", .pattern = "a(" };
        assert_int_equal(protocol_encode_find_request(&b, 13, &q), 0);
        assert_refused(serve(&b, find_run, false, &m), EINVAL, "bad_request");
        strbuf_clear(&b);
        q.path = "secrets";
        q.pattern = "k";
        assert_int_equal(protocol_encode_find_request(&b, 14, &q), 0);
        assert_refused(serve(&b, find_run, false, &m), EACCES, "denied");
        _cleanup_free_ char *bin = at("sub/bin"), *c = at("sub/c.txt");
        assert_int_equal(unlink(out), 0);
        assert_int_equal(unlink(bin), 0);
        assert_int_equal(unlink(c), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read_window_and_hash),
                cmocka_unit_test(test_read_refusals),
                cmocka_unit_test(test_binary_round_trip),
                cmocka_unit_test(test_write_preconditions),
                cmocka_unit_test(test_write_mode_parents_and_refusals),
                cmocka_unit_test(test_stat_and_list_dir),
                cmocka_unit_test(test_glob_and_grep),
                cmocka_unit_test(test_sweep),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
