/* SPDX-License-Identifier: MIT */
/* The worker protocol, message by message: every encoder's output decodes
 * back to what was encoded, and every decoder refuses the same message with
 * an unknown field added, with any required field taken away, or with any
 * field of the wrong type (each field of each message, not a sample). The
 * optional fields may go: the decoder then leaves them at zero. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "msg-fixture.h"
#include "protocol.h"
#include "strv.h"

/* One message: how to write it, how to read it back (0 or a negative
 * errno; the decoded struct is checked and freed inside), and which of its
 * fields a decoder must insist on. */
typedef struct Case {
        const char *name;
        int (*encode)(StrBuf *out);
        int (*decode)(json_t *obj, size_t raw_len, bool check, VsError **err);
        const char *const *required; /* NULL-terminated */
        bool head_only; /* decoded by protocol_decode_reply_head alone, which leaves other fields to the per-op decoders */
} Case;

#define REQ(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- handshake ---- */

static int enc_hello(StrBuf *out) {
        char *can[] = { (char *)"no_new_privs", (char *)"seccomp", NULL };
        ProtocolHello h = { .version = PROTOCOL_VERSION, .arch = "x86_64", .pid = 77, .landlock_abi = 4, .can = can };
        return protocol_encode_hello(out, &h);
}

static int dec_hello(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolHello h = {};
        int r = protocol_decode_hello(obj, &h, err);
        if (r < 0)
                return r;
        if (check) {
                assert_int_equal(h.version, PROTOCOL_VERSION);
                assert_string_equal(h.arch, "x86_64");
                assert_int_equal(h.pid, 77);
                assert_int_equal(h.landlock_abi, 4);
                assert_int_equal(strv_length(h.can), 2);
                assert_string_equal(h.can[1], "seccomp");
        }
        protocol_hello_done(&h);
        return 0;
}

static int enc_ready(StrBuf *out) {
        char *degraded[] = { (char *)"landlock: not supported by this kernel", NULL };
        ProtocolReady r = { .no_new_privs = true, .seccomp = true, .landlock_abi = 0, .degraded = degraded };
        return protocol_encode_ready(out, &r);
}

static int dec_ready(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolReady r = {};
        int k = protocol_decode_ready(obj, &r, err);
        if (k < 0)
                return k;
        if (check) {
                assert_true(r.no_new_privs);
                assert_true(r.seccomp);
                assert_int_equal(r.landlock_abi, 0);
                assert_int_equal(strv_length(r.degraded), 1);
                assert_string_equal(r.degraded[0], "landlock: not supported by this kernel");
        }
        protocol_ready_done(&r);
        return 0;
}

static int enc_init_failed(StrBuf *out) {
        return protocol_encode_init_failed(out, "lockdown: seccomp is required");
}

static int dec_init_failed(json_t *obj, size_t raw_len, bool check, VsError **err) {
        const char *m = NULL;
        int k = protocol_decode_init_failed(obj, &m, err);
        if (k >= 0 && check)
                assert_string_equal(m, "lockdown: seccomp is required");
        return k;
}

/* 16 bytes: two BPF instructions. */
static const char bpf[16] = "0123456789abcdef";

static int enc_init(StrBuf *out) {
        char *rw[] = { (char *)"/ws", (char *)"/cache", NULL }, *ro[] = { (char *)"/usr/share/doc", NULL };
        char *mask[] = { (char *)".env", (char *)"*.pem", NULL }, *prot[] = { (char *)"/ws/.git/hooks", NULL };
        char *protect[] = { (char *)".envrc", NULL }, *ve[] = { (char *)"/ws/.env", NULL };
        char *vr[] = { (char *)"/ws/.git/config", NULL }, *env[] = { (char *)"LANG=C.UTF-8", (char *)"A=b=c", NULL };
        char *ll[] = { (char *)"/ws", (char *)"/tmp", NULL }, *req[] = { (char *)"seccomp", NULL };
        ProtocolInit i = {
                .mode = PROTOCOL_MODE_JAIL, .workspace = "/ws", .rw_paths = rw, .ro_paths = ro, .mask = mask,
                .protected_paths = prot, .protect = protect, .verify_empty = ve, .verify_readonly = vr,
                .env = env, .seccomp_bpf = (void *)bpf, .seccomp_bpf_len = sizeof bpf, .landlock = true,
                .landlock_rw = ll, .require = req,
                .limits = { .timeout_ms = 1000, .max_output = 4096, .pids = 64, .memory = 1 << 30 },
                .proxy_socket = "/run/vectora/proxy.sock", .proxy_port = 3128,
        };
        return protocol_encode_init(out, &i);
}

static int dec_init(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolInit i = {};
        int k = protocol_decode_init(obj, &i, err);
        if (k < 0)
                return k;
        if (check) {
                assert_int_equal(i.mode, PROTOCOL_MODE_JAIL);
                assert_string_equal(i.workspace, "/ws");
                assert_int_equal(strv_length(i.rw_paths), 2);
                assert_string_equal(i.rw_paths[1], "/cache");
                assert_string_equal(i.ro_paths[0], "/usr/share/doc");
                assert_string_equal(i.mask[1], "*.pem");
                assert_string_equal(i.protected_paths[0], "/ws/.git/hooks");
                assert_string_equal(i.protect[0], ".envrc");
                assert_string_equal(i.verify_empty[0], "/ws/.env");
                assert_string_equal(i.verify_readonly[0], "/ws/.git/config");
                assert_int_equal(strv_length(i.env), 2);
                assert_true(strv_contains(i.env, "LANG=C.UTF-8"));
                assert_true(strv_contains(i.env, "A=b=c"));
                assert_int_equal(i.seccomp_bpf_len, sizeof bpf);
                assert_memory_equal(i.seccomp_bpf, bpf, sizeof bpf);
                assert_true(i.landlock);
                assert_string_equal(i.landlock_rw[1], "/tmp");
                assert_string_equal(i.require[0], "seccomp");
                assert_int_equal(i.limits.timeout_ms, 1000);
                assert_int_equal(i.limits.max_output, 4096);
                assert_int_equal(i.limits.pids, 64);
                assert_int_equal(i.limits.memory, 1 << 30);
                assert_string_equal(i.proxy_socket, "/run/vectora/proxy.sock");
                assert_int_equal(i.proxy_port, 3128);
        }
        protocol_init_done(&i);
        return 0;
}

/* ---- requests ---- */

static int enc_exec(StrBuf *out) {
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"cat", NULL }, *env[] = { (char *)"K=V", NULL };
        ProtocolExecRequest r = { .argv = argv, .cwd = "sub", .env = env, .timeout_ms = 5, .max_output = 9 };
        return protocol_encode_exec_request(out, 42, &r, "in", 2);
}

static int dec_exec(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolExecRequest r = {};
        int k = protocol_decode_exec_request(obj, &r, err);
        if (k < 0)
                return k;
        if (check) {
                assert_int_equal(r.head.id, 42);
                assert_int_equal(r.head.op, PROTOCOL_OP_EXEC);
                assert_int_equal(strv_length(r.argv), 3);
                assert_string_equal(r.argv[2], "cat");
                assert_string_equal(r.cwd, "sub");
                assert_int_equal(strv_length(r.env), 1);
                assert_string_equal(r.env[0], "K=V");
                assert_int_equal(r.timeout_ms, 5);
                assert_int_equal(r.max_output, 9);
                assert_int_equal(raw_len, 2);
        }
        protocol_exec_request_done(&r);
        return 0;
}

static int enc_read_file(StrBuf *out) {
        ProtocolReadFileRequest r = { .path = "src/main.c", .offset = 10, .limit = 20 };
        return protocol_encode_read_file_request(out, 7, &r);
}

static int dec_read_file(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolReadFileRequest r = {};
        int k = protocol_decode_read_file_request(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.head.id, 7);
                assert_int_equal(r.head.op, PROTOCOL_OP_READ_FILE);
                assert_string_equal(r.path, "src/main.c");
                assert_int_equal(r.offset, 10);
                assert_int_equal(r.limit, 20);
        }
        return k;
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static int enc_write_file(StrBuf *out) {
        ProtocolWriteFileRequest r = { .path = "a/b.txt", .has_mode = true, .mode = 0640, .create_parents = true,
                                       .if_sha256 = SHA_A };
        return protocol_encode_write_file_request(out, 8, &r, "data", 4);
}

static int dec_write_file(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolWriteFileRequest r = {};
        int k = protocol_decode_write_file_request(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.head.id, 8);
                assert_string_equal(r.path, "a/b.txt");
                assert_true(r.has_mode);
                assert_int_equal(r.mode, 0640);
                assert_true(r.create_parents);
                assert_string_equal(r.if_sha256, SHA_A);
                assert_int_equal(raw_len, 4);
        }
        return k;
}

static int enc_stat(StrBuf *out) {
        return protocol_encode_stat_request(out, 9, "x/y");
}

static int dec_stat(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolPathRequest r = {};
        int k = protocol_decode_stat_request(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.head.id, 9);
                assert_int_equal(r.head.op, PROTOCOL_OP_STAT);
                assert_string_equal(r.path, "x/y");
        }
        return k;
}

static int enc_list_dir(StrBuf *out) {
        return protocol_encode_list_dir_request(out, 10, &(ProtocolListDirRequest){ .path = ".", .max_entries = 5 });
}

static int dec_list_dir(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolListDirRequest r = {};
        int k = protocol_decode_list_dir_request(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.head.id, 10);
                assert_int_equal(r.head.op, PROTOCOL_OP_LIST_DIR);
                assert_string_equal(r.path, ".");
                assert_int_equal(r.max_entries, 5);
        }
        return k;
}

static int enc_cancel(StrBuf *out) {
        return protocol_encode_cancel_request(out, 11, 42);
}

static int dec_cancel(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolCancelRequest r = {};
        int k = protocol_decode_cancel_request(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.head.id, 11);
                assert_int_equal(r.target, 42);
        }
        return k;
}

static int enc_shutdown(StrBuf *out) {
        return protocol_encode_shutdown_request(out, 12);
}

static int dec_shutdown(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolRequestHead h = {};
        int k = protocol_decode_shutdown_request(obj, &h, err);
        if (k >= 0 && check) {
                assert_int_equal(h.id, 12);
                assert_int_equal(h.op, PROTOCOL_OP_SHUTDOWN);
        }
        return k;
}

static int enc_session_open(StrBuf *out) {
        char *argv[] = { (char *)"bash", NULL }, *env[] = { (char *)"TERM=xterm", NULL };
        ProtocolSessionOpenRequest r = { .argv = argv, .cwd = "sub", .env = env, .pty = true, .cols = 80,
                                         .rows = 24, .timeout_ms = 600 };
        return protocol_encode_session_open_request(out, 13, &r);
}

static int dec_session_open(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionOpenRequest r = {};
        int k = protocol_decode_session_open_request(obj, &r, err);
        if (k < 0)
                return k;
        if (check) {
                assert_int_equal(r.head.id, 13);
                assert_string_equal(r.argv[0], "bash");
                assert_null(r.argv[1]);
                assert_string_equal(r.cwd, "sub");
                assert_string_equal(r.env[0], "TERM=xterm");
                assert_true(r.pty);
                assert_int_equal(r.cols, 80);
                assert_int_equal(r.rows, 24);
                assert_int_equal(r.timeout_ms, 600);
        }
        protocol_session_open_request_done(&r);
        return 0;
}

/* Instead of a process: a connection to a forwarded port in the jail. */
static int enc_session_connect(StrBuf *out) {
        ProtocolSessionOpenRequest r = { .connect = 3000 };
        return protocol_encode_session_open_request(out, 27, &r);
}

static int dec_session_connect(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionOpenRequest r = {};
        int k = protocol_decode_session_open_request(obj, &r, err);
        if (k < 0)
                return k;
        if (check) {
                assert_int_equal(r.head.id, 27);
                assert_int_equal(r.connect, 3000);
                assert_null(r.argv);
                assert_false(r.pty);
        }
        protocol_session_open_request_done(&r);
        return 0;
}

static int dec_session(json_t *obj, ProtocolOp op, ProtocolSessionRequest *ret, VsError **err) {
        int k = protocol_decode_session_request(obj, ret, err);
        if (k >= 0) {
                assert_int_equal(ret->head.op, op);
                assert_int_equal(ret->session, 13);
        }
        return k;
}

static int enc_session_input(StrBuf *out) {
        ProtocolSessionRequest r = { .session = 13, .eof = true };
        return protocol_encode_session_request(out, 14, PROTOCOL_OP_SESSION_INPUT, &r, "ls\n", 3);
}

static int dec_session_input(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = dec_session(obj, PROTOCOL_OP_SESSION_INPUT, &r, err);
        if (k >= 0 && check) {
                assert_true(r.eof);
                assert_int_equal(raw_len, 3);
        }
        return k;
}

static int enc_session_resize(StrBuf *out) {
        ProtocolSessionRequest r = { .session = 13, .cols = 132, .rows = 50 };
        return protocol_encode_session_request(out, 15, PROTOCOL_OP_SESSION_RESIZE, &r, NULL, 0);
}

static int dec_session_resize(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = dec_session(obj, PROTOCOL_OP_SESSION_RESIZE, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.cols, 132);
                assert_int_equal(r.rows, 50);
        }
        return k;
}

static int enc_session_signal(StrBuf *out) {
        ProtocolSessionRequest r = { .session = 13, .signal = 2 };
        return protocol_encode_session_request(out, 16, PROTOCOL_OP_SESSION_SIGNAL, &r, NULL, 0);
}

static int dec_session_signal(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = dec_session(obj, PROTOCOL_OP_SESSION_SIGNAL, &r, err);
        if (k >= 0 && check)
                assert_int_equal(r.signal, 2);
        return k;
}

static int enc_session_pause(StrBuf *out) {
        ProtocolSessionRequest r = { .session = 13, .paused = true };
        return protocol_encode_session_request(out, 17, PROTOCOL_OP_SESSION_PAUSE, &r, NULL, 0);
}

static int dec_session_pause(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionRequest r = {};
        int k = dec_session(obj, PROTOCOL_OP_SESSION_PAUSE, &r, err);
        if (k >= 0 && check)
                assert_true(r.paused);
        return k;
}

/* ---- replies and events ---- */

static int enc_error(StrBuf *out) {
        return protocol_encode_error(out, true, 18, PROTOCOL_ERROR_DENIED, "masked");
}

static int dec_error(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolReplyHead h = {};
        int k = protocol_decode_reply_head(obj, &h, err);
        if (k >= 0 && check) {
                assert_true(h.has_id);
                assert_int_equal(h.id, 18);
                assert_false(h.ok);
                assert_int_equal(h.error_code, PROTOCOL_ERROR_DENIED);
                assert_string_equal(h.error_message, "masked");
        }
        return k;
}

static int enc_ok(StrBuf *out) {
        return protocol_encode_ok(out, 19);
}

static int dec_ok(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolReplyHead h = {};
        int k = protocol_decode_reply_head(obj, &h, err);
        if (k >= 0 && check) {
                assert_int_equal(h.id, 19);
                assert_true(h.ok);
        }
        return k;
}

static int enc_exec_reply(StrBuf *out) {
        ProtocolExecReply r = { .exit_code = 137, .signal = 9, .timed_out = true, .cancelled = true,
                                .stdout_len = 3, .stderr_len = 2, .stdout_total = 30, .stderr_total = 20,
                                .duration_us = 1234 };
        return protocol_encode_exec_reply(out, 20, &r, "out", "er");
}

static int dec_exec_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolExecReply r = {};
        int k = protocol_decode_exec_reply(obj, raw_len, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.exit_code, 137);
                assert_int_equal(r.signal, 9);
                assert_true(r.timed_out);
                assert_true(r.cancelled);
                assert_int_equal(r.stdout_len, 3);
                assert_int_equal(r.stderr_len, 2);
                assert_int_equal(r.stdout_total, 30);
                assert_int_equal(r.stderr_total, 20);
                assert_int_equal(r.duration_us, 1234);
        }
        return k;
}

static int enc_read_file_reply(StrBuf *out) {
        ProtocolReadFileReply r = { .size = 100, .sha256 = SHA_A, .offset = 10, .eof = true };
        return protocol_encode_read_file_reply(out, 21, &r, "abc", 3);
}

static int dec_read_file_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolReadFileReply r = {};
        int k = protocol_decode_read_file_reply(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.size, 100);
                assert_string_equal(r.sha256, SHA_A);
                assert_int_equal(r.offset, 10);
                assert_true(r.eof);
                assert_int_equal(raw_len, 3);
        }
        return k;
}

static int enc_write_file_reply(StrBuf *out) {
        ProtocolWriteFileReply r = { .size = 4, .sha256 = SHA_A, .created = true };
        return protocol_encode_write_file_reply(out, 22, &r);
}

static int dec_write_file_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolWriteFileReply r = {};
        int k = protocol_decode_write_file_reply(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.size, 4);
                assert_string_equal(r.sha256, SHA_A);
                assert_true(r.created);
        }
        return k;
}

static int enc_stat_reply(StrBuf *out) {
        ProtocolStatReply r = { .type = PROTOCOL_FILE_SYMLINK, .size = 5, .mode = 0777, .mtime_ns = -3 };
        return protocol_encode_stat_reply(out, 23, &r);
}

static int dec_stat_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolStatReply r = {};
        int k = protocol_decode_stat_reply(obj, &r, err);
        if (k >= 0 && check) {
                assert_int_equal(r.type, PROTOCOL_FILE_SYMLINK);
                assert_int_equal(r.size, 5);
                assert_int_equal(r.mode, 0777);
                assert_int_equal(r.mtime_ns, -3);
        }
        return k;
}

static int enc_list_dir_reply(StrBuf *out) {
        ProtocolDirEntry e[] = { { "a", PROTOCOL_FILE_FILE }, { "d", PROTOCOL_FILE_DIR } };
        ProtocolListDirReply r = { .entries = e, .n_entries = 2 };
        return protocol_encode_list_dir_reply(out, 24, &r);
}

static int dec_list_dir_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolListDirReply r = {};
        int k = protocol_decode_list_dir_reply(obj, &r, err);
        if (k < 0)
                return k;
        if (check) {
                assert_int_equal(r.n_entries, 2);
                assert_string_equal(r.entries[0].name, "a");
                assert_int_equal(r.entries[0].type, PROTOCOL_FILE_FILE);
                assert_string_equal(r.entries[1].name, "d");
                assert_int_equal(r.entries[1].type, PROTOCOL_FILE_DIR);
        }
        protocol_list_dir_reply_done(&r);
        return 0;
}

static int enc_cancel_reply(StrBuf *out) {
        return protocol_encode_cancel_reply(out, 25, true);
}

static int dec_cancel_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        bool found = false;
        int k = protocol_decode_cancel_reply(obj, &found, err);
        if (k >= 0 && check)
                assert_true(found);
        return k;
}

static int enc_session_open_reply(StrBuf *out) {
        return protocol_encode_session_open_reply(out, 26, 31337);
}

static int dec_session_open_reply(json_t *obj, size_t raw_len, bool check, VsError **err) {
        int64_t pid = 0;
        int k = protocol_decode_session_open_reply(obj, &pid, err);
        if (k >= 0 && check)
                assert_int_equal(pid, 31337);
        return k;
}

static int enc_session_output(StrBuf *out) {
        ProtocolSessionEvent e = { .type = PROTOCOL_SESSION_OUTPUT, .session = 13, .is_stderr = true };
        return protocol_encode_session_event(out, &e, "oops", 4);
}

static int dec_session_output(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionEvent e = {};
        int k = protocol_decode_session_event(obj, &e, err);
        if (k >= 0 && check) {
                assert_int_equal(e.type, PROTOCOL_SESSION_OUTPUT);
                assert_int_equal(e.session, 13);
                assert_true(e.is_stderr);
                assert_int_equal(raw_len, 4);
        }
        return k;
}

static int enc_session_exit(StrBuf *out) {
        ProtocolSessionEvent e = { .type = PROTOCOL_SESSION_EXIT, .session = 13, .exit_code = 130, .signal = 2,
                                   .timed_out = true };
        return protocol_encode_session_event(out, &e, NULL, 0);
}

static int dec_session_exit(json_t *obj, size_t raw_len, bool check, VsError **err) {
        ProtocolSessionEvent e = {};
        int k = protocol_decode_session_event(obj, &e, err);
        if (k >= 0 && check) {
                assert_int_equal(e.type, PROTOCOL_SESSION_EXIT);
                assert_int_equal(e.session, 13);
                assert_int_equal(e.exit_code, 130);
                assert_int_equal(e.signal, 2);
                assert_true(e.timed_out);
        }
        return k;
}

static const Case cases[] = {
        { "hello", enc_hello, dec_hello, REQ("type", "version", "arch", "pid") },
        { "ready", enc_ready, dec_ready, REQ("type", "enforced") },
        { "init_failed", enc_init_failed, dec_init_failed, REQ("type", "error") },
        { "init", enc_init, dec_init, REQ("type", "mode", "workspace") },
        { "exec", enc_exec, dec_exec, REQ("id", "op", "argv") },
        { "read_file", enc_read_file, dec_read_file, REQ("id", "op", "path") },
        { "write_file", enc_write_file, dec_write_file, REQ("id", "op", "path") },
        { "stat", enc_stat, dec_stat, REQ("id", "op", "path") },
        { "list_dir", enc_list_dir, dec_list_dir, REQ("id", "op", "path") },
        { "cancel", enc_cancel, dec_cancel, REQ("id", "op", "target") },
        { "shutdown", enc_shutdown, dec_shutdown, REQ("id", "op") },
        /* With pty, cols and rows are required, and cols and rows need pty. */
        { "session_open", enc_session_open, dec_session_open, REQ("id", "op", "argv", "pty", "cols", "rows") },
        { "session_open connect", enc_session_connect, dec_session_connect, REQ("id", "op", "connect") },
        { "session_input", enc_session_input, dec_session_input, REQ("id", "op", "session") },
        { "session_resize", enc_session_resize, dec_session_resize, REQ("id", "op", "session", "cols", "rows") },
        { "session_signal", enc_session_signal, dec_session_signal, REQ("id", "op", "session", "signal") },
        { "session_pause", enc_session_pause, dec_session_pause, REQ("id", "op", "session", "paused") },
        { "error", enc_error, dec_error, REQ("id", "ok", "error") },
        { "ok", enc_ok, dec_ok, REQ("id", "ok"), .head_only = true },
        { "exec reply", enc_exec_reply, dec_exec_reply, REQ("id", "ok", "exit_code", "stdout_len", "stderr_len") },
        { "read_file reply", enc_read_file_reply, dec_read_file_reply, REQ("id", "ok", "size", "sha256") },
        { "write_file reply", enc_write_file_reply, dec_write_file_reply, REQ("id", "ok", "size", "sha256") },
        { "stat reply", enc_stat_reply, dec_stat_reply, REQ("id", "ok", "type") },
        { "list_dir reply", enc_list_dir_reply, dec_list_dir_reply, REQ("id", "ok", "entries") },
        { "cancel reply", enc_cancel_reply, dec_cancel_reply, REQ("id", "ok", "found") },
        { "session_open reply", enc_session_open_reply, dec_session_open_reply, REQ("id", "ok", "pid") },
        { "session_output", enc_session_output, dec_session_output, REQ("event", "session", "stream") },
        { "session_exit", enc_session_exit, dec_session_exit, REQ("event", "session", "exit_code", "signal") },
};

static JsonlMsg encoded(const Case *c) {
        StrBuf b = STRBUF_INIT;
        assert_int_equal(c->encode(&b), 0);
        JsonlMsg m = parse(&b);
        strbuf_done(&b);
        return m;
}

static bool is_required(const Case *c, const char *key) {
        for (const char *const *r = c->required; *r; r++)
                if (streq(*r, key))
                        return true;
        return false;
}

/* A value of another JSON type than v: each decoder must refuse it. */
static json_t *mistyped(const json_t *v) {
        if (json_is_string(v))
                return json_object();
        if (json_is_array(v) || json_is_object(v) || json_is_null(v))
                return json_integer(42);
        return json_string("x"); /* numbers and booleans */
}

static void test_roundtrip(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JsonlMsg m = encoded(&cases[i]);
                _cleanup_(vs_error_freep) VsError *err = NULL;
                int r = cases[i].decode(m.obj, m.raw_len, true, &err);
                if (r < 0)
                        fail_msg("%s: %s", cases[i].name, vs_error_message(err));
                /* Every field a decoder insists on is written by its encoder. */
                for (const char *const *k = cases[i].required; *k; k++)
                        if (!json_object_get(m.obj, *k))
                                fail_msg("%s: the encoder left out required field '%s'", cases[i].name, *k);
                jsonl_msg_done(&m);
        }
}

static void test_unknown_field(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (cases[i].head_only)
                        continue;
                JsonlMsg m = encoded(&cases[i]);
                _cleanup_(vs_error_freep) VsError *err = NULL;
                assert_int_equal(json_object_set_new(m.obj, "surplus", json_integer(1)), 0);
                if (cases[i].decode(m.obj, m.raw_len, false, &err) != -EINVAL)
                        fail_msg("%s: an unknown field was accepted", cases[i].name);
                assert_non_null(strstr(vs_error_message(err), "surplus"));
                jsonl_msg_done(&m);
        }
}

static void test_each_field_missing(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JsonlMsg m = encoded(&cases[i]);
                const char *key;
                json_t *v;
                void *tmp;
                json_object_foreach_safe(m.obj, tmp, key, v) {
                        json_t *copy = json_deep_copy(m.obj);
                        assert_non_null(copy);
                        assert_int_equal(json_object_del(copy, key), 0);
                        _cleanup_(vs_error_freep) VsError *err = NULL;
                        int r = cases[i].decode(copy, m.raw_len, false, &err);
                        if (is_required(&cases[i], key) && r >= 0)
                                fail_msg("%s: accepted without required field '%s'", cases[i].name, key);
                        if (!is_required(&cases[i], key) && r < 0)
                                fail_msg("%s: refused without optional field '%s': %s", cases[i].name, key,
                                         vs_error_message(err));
                        if (r < 0)
                                assert_non_null(err);
                        json_decref(copy);
                }
                jsonl_msg_done(&m);
        }
}

static void test_each_field_mistyped(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JsonlMsg m = encoded(&cases[i]);
                const char *key;
                json_t *v;
                void *tmp;
                json_object_foreach_safe(m.obj, tmp, key, v) {
                        json_t *copy = json_deep_copy(m.obj);
                        assert_non_null(copy);
                        assert_int_equal(json_object_set_new(copy, key, mistyped(v)), 0);
                        _cleanup_(vs_error_freep) VsError *err = NULL;
                        if (cases[i].decode(copy, m.raw_len, false, &err) >= 0)
                                fail_msg("%s: accepted field '%s' of the wrong type", cases[i].name, key);
                        assert_non_null(err);
                        json_decref(copy);
                }
                jsonl_msg_done(&m);
        }
}

/* Limits a type check alone does not catch, one per message that has one. */
static void test_limits(void **state) {
        static const struct {
                const char *name; /* a case */
                const char *key;
                const char *json; /* the value to set */
        } bad[] = {
                { "init", "mode", "\"chroot\"" },
                { "init", "workspace", "\"relative\"" },
                { "init", "rw_paths", "[\"/ok\", \"relative\"]" },
                { "init", "require", "[\"apparmor\"]" },
                { "init", "seccomp_bpf", "\"AAAA\"" },      /* 3 bytes: not whole instructions */
                { "init", "seccomp_bpf", "\"not base64!\"" },
                { "init", "env", "{\"A=B\": \"c\"}" },
                { "init", "proxy", "{\"socket\": \"/s\", \"port\": 70000}" },
                { "init", "proxy", "{\"socket\": \"rel\", \"port\": 80}" },
                { "init", "landlock", "{\"rw\": [\"rel\"]}" },
                { "exec", "argv", "[]" },
                { "exec", "argv", "[\"\"]" },
                { "exec", "id", "-1" },
                { "exec", "op", "\"exec_as_root\"" },
                { "read_file", "path", "\"\"" },
                { "write_file", "mode", "4096" },
                { "write_file", "if_sha256", "\"ABC\"" },
                { "session_open", "cols", "0" },
                { "session_open", "connect", "3000" },          /* with argv: one or the other */
                { "session_open connect", "connect", "0" },
                { "session_open connect", "connect", "65536" },
                { "session_open connect", "pty", "true" },
                { "session_open connect", "env", "{\"A\": \"b\"}" },
                { "session_open connect", "timeout_ms", "5" },
                { "session_open", "rows", "10001" },
                { "session_resize", "cols", "0" },
                { "session_signal", "signal", "65" },
                { "session_signal", "signal", "0" },
                { "stat reply", "type", "\"socket-ish\"" },
                { "session_output", "stream", "\"stdin\"" },
                { "session_exit", "exit_code", "256" },
                { "session_exit", "signal", "65" },
                { "exec reply", "stdout_len", "4" }, /* no longer matches the raw payload */
                { "session_open reply", "pid", "4294967297" }, /* truncated to 1: kill(-1) */
                { "session_open reply", "pid", "-5" },
        };
        for (size_t b = 0; b < ELEMENTSOF(bad); b++) {
                const Case *c = NULL;
                for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                        if (streq(cases[i].name, bad[b].name))
                                c = &cases[i];
                assert_non_null(c);
                JsonlMsg m = encoded(c);
                json_t *v = json_loads(bad[b].json, JSON_DECODE_ANY, NULL);
                assert_non_null(v);
                assert_int_equal(json_object_set_new(m.obj, bad[b].key, v), 0);
                _cleanup_(vs_error_freep) VsError *err = NULL;
                if (c->decode(m.obj, m.raw_len, false, &err) >= 0)
                        fail_msg("%s: accepted %s = %s", c->name, bad[b].key, bad[b].json);
                assert_non_null(err);
                jsonl_msg_done(&m);
        }
}

/* What the encoders refuse to write at all. */
static void test_encoder_refusals(void **state) {
        _cleanup_strbuf_ StrBuf b = STRBUF_INIT;
        char *none[] = { NULL };
        assert_int_equal(protocol_encode_exec_request(&b, 1, &(ProtocolExecRequest){ .argv = none }, NULL, 0), -EINVAL);
        assert_int_equal(protocol_encode_init(&b, &(ProtocolInit){ .mode = PROTOCOL_MODE_JAIL }), -EINVAL);
        assert_int_equal(protocol_encode_init(&b, &(ProtocolInit){ .mode = _PROTOCOL_MODE_MAX, .workspace = "/w" }),
                         -EINVAL);
        char *argv[] = { (char *)"sh", NULL };
        assert_int_equal(protocol_encode_session_open_request(
                                 &b, 1, &(ProtocolSessionOpenRequest){ .argv = argv, .pty = true, .cols = 0, .rows = 5 }),
                         -EINVAL);
        assert_int_equal(protocol_encode_session_open_request(
                                 &b, 1, &(ProtocolSessionOpenRequest){ .argv = argv, .connect = 80 }),
                         -EINVAL);
        assert_int_equal(protocol_encode_session_open_request(&b, 1, &(ProtocolSessionOpenRequest){ .connect = 70000 }),
                         -EINVAL);
        assert_int_equal(protocol_encode_session_request(&b, 1, PROTOCOL_OP_EXEC, &(ProtocolSessionRequest){}, NULL, 0),
                         -EINVAL);
        assert_int_equal(protocol_encode_stat_reply(&b, 1, &(ProtocolStatReply){ .type = _PROTOCOL_FILE_MAX }), -EINVAL);
        assert_int_equal(protocol_encode_error(&b, true, 1, _PROTOCOL_ERROR_MAX, "x"), -EINVAL);
        assert_int_equal(protocol_encode_session_event(&b, &(ProtocolSessionEvent){ .type = _PROTOCOL_SESSION_EVENT_MAX },
                                                       NULL, 0),
                         -EINVAL);
        assert_int_equal(b.len, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_roundtrip),
                cmocka_unit_test(test_unknown_field),
                cmocka_unit_test(test_each_field_missing),
                cmocka_unit_test(test_each_field_mistyped),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_encoder_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
