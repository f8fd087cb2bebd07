/* SPDX-License-Identifier: MIT */
/* The core's tool call (tool-call.h) against a worker simulated in
 * memory: each request it encodes is decoded with the worker's own
 * decoders and answered with the worker's encoders, so the round trip is
 * the protocol's. Checks the limits as ceilings, the edit's
 * read-apply-write with its retry when another writer gets in between,
 * the worker's errors passed on, and malformed replies refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "msg-fixture.h"
#include "config.h"
#include "tool-call.h"

/* ---- the simulated worker: one file ---- */

static char file[256];
static unsigned interlopers;      /* writes by someone else, one after each of our reads */
static unsigned requests;
static ProtocolExecRequest last_exec;
static bool break_replies;        /* answer with a reply missing its fields */

/* Answers one request line as vectora-worker would, for this one file. */
static JsonlMsg serve(const StrBuf *req) {
        requests++;
        JsonlMsg q = parse(req);
        ProtocolRequestHead h;
        assert_int_equal(protocol_decode_request_head(q.obj, &h, NULL), 0);
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        char sha[SHA256_HEX_LEN + 1];
        sha256_hex(file, strlen(file), sha);
        if (break_replies)
                assert_true(strbuf_appendf(&out, "{\"id\":%llu,\"ok\":true}\n", (unsigned long long)h.id) >= 0);
        else if (h.op == PROTOCOL_OP_EXEC) {
                protocol_exec_request_done(&last_exec);
                assert_int_equal(protocol_decode_exec_request(q.obj, &last_exec, NULL), 0);
                ProtocolExecReply e = { .exit_code = 3, .stdout_len = 2, .stderr_len = 1, .stdout_total = 5,
                                        .stderr_total = 1, .duration_us = 7 };
                assert_int_equal(protocol_encode_exec_reply(&out, h.id, &e, "hi", "!"), 0);
        } else if (h.op == PROTOCOL_OP_READ_FILE) {
                ProtocolReadFileRequest r;
                assert_int_equal(protocol_decode_read_file_request(q.obj, &r, NULL), 0);
                assert_string_equal(r.path, "f.txt");
                ProtocolReadFileReply rf = { .size = strlen(file), .sha256 = sha, .offset = 0, .eof = true };
                assert_int_equal(protocol_encode_read_file_reply(&out, h.id, &rf, file, strlen(file)), 0);
                /* Someone else edits the file right after our read. */
                if (interlopers) {
                        interlopers--;
                        size_t n = strlen(file);
                        snprintf(file + n, sizeof file - n, "+");
                }
        } else if (h.op == PROTOCOL_OP_WRITE_FILE) {
                ProtocolWriteFileRequest w;
                assert_int_equal(protocol_decode_write_file_request(q.obj, &w, NULL), 0);
                if (w.if_sha256 && !streq(w.if_sha256, sha))
                        assert_int_equal(protocol_encode_error(&out, true, h.id, PROTOCOL_ERROR_PRECONDITION_FAILED,
                                                               "the file changed"), 0);
                else if (streq(w.path, "vectora.toml"))
                        assert_int_equal(protocol_encode_error(&out, true, h.id, PROTOCOL_ERROR_DENIED,
                                                               "vectora.toml is protected"), 0);
                else {
                        snprintf(file, sizeof file, "%.*s", (int)q.raw_len, q.raw ? q.raw : "");
                        sha256_hex(file, strlen(file), sha);
                        ProtocolWriteFileReply wr = { .size = strlen(file), .sha256 = sha };
                        assert_int_equal(protocol_encode_write_file_reply(&out, h.id, &wr), 0);
                }
        } else
                fail_msg("unexpected op %d", (int)h.op);
        jsonl_msg_done(&q);
        return parse(&out);
}

/* Drives c as the daemon and the blocking driver do. */
static int drive(VsToolCall *c, json_t **ret, JsonlMsg *ret_msg, VsError **err) {
        for (uint64_t id = 1;; id++) {
                _cleanup_strbuf_ StrBuf req = STRBUF_INIT;
                assert_int_equal(tool_call_encode(c, id, &req), 0);
                JsonlMsg m = serve(&req);
                int r = tool_call_feed(c, &m, ret, err);
                if (r == TOOL_CALL_AGAIN) {
                        jsonl_msg_done(&m);
                        continue;
                }
                if (r == 0 && ret_msg)
                        *ret_msg = m;
                else
                        jsonl_msg_done(&m);
                return r;
        }
}

static int setup(void **state) {
        snprintf(file, sizeof file, "one two three\n");
        interlopers = requests = 0;
        break_replies = false;
        return 0;
}

static int teardown(void **state) {
        protocol_exec_request_done(&last_exec);
        return 0;
}

static VsPolicy sandboxed = { .sandboxed = true, .limits = { .timeout_s = 2, .max_output = 1000 } };
static VsPolicy unsandboxed = { .sandboxed = false, .limits = { .timeout_s = 2, .max_output = 1000 } };

static void run_exec(const VsPolicy *p, uint64_t timeout_ms, uint64_t max_output) {
        char *argv[] = { (char *)"true", NULL };
        VsToolArgs a = { .tool = VS_TOOL_TERMINAL, .argv = argv, .timeout_ms = timeout_ms, .max_output = max_output };
        VsToolCall c;
        tool_call_init(&c, &a, p);
        json_t *res = NULL;
        assert_int_equal(drive(&c, &res, NULL, NULL), 0);
        json_decref(res);
        tool_call_done(&c);
}

static void test_limits_are_ceilings(void **state) {
        run_exec(&sandboxed, 10000, 5000);
        assert_int_equal(last_exec.timeout_ms, 2000);
        assert_int_equal(last_exec.max_output, 1000);
        /* Lower is allowed. */
        run_exec(&sandboxed, 500, 10);
        assert_int_equal(last_exec.timeout_ms, 500);
        assert_int_equal(last_exec.max_output, 10);
        /* Not asked: the request says the policy's limit. */
        run_exec(&sandboxed, 0, 0);
        assert_int_equal(last_exec.timeout_ms, 2000);
        assert_int_equal(last_exec.max_output, 1000);
        /* Unsandboxed: no ceiling, as on the host. */
        run_exec(&unsandboxed, 10000, 0);
        assert_int_equal(last_exec.timeout_ms, 10000);
        assert_int_equal(last_exec.max_output, 0);
        run_exec(NULL, 10000, 0);
        assert_int_equal(last_exec.timeout_ms, 10000);
}

static void test_exec_result(void **state) {
        char *argv[] = { (char *)"x", NULL };
        VsToolArgs a = { .tool = VS_TOOL_TERMINAL, .argv = argv };
        VsToolCall c;
        tool_call_init(&c, &a, &sandboxed);
        json_t *res = NULL;
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(drive(&c, &res, &m, NULL), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "exit_code")), 3);
        assert_int_equal(json_integer_value(json_object_get(res, "stdout_len")), 2);
        assert_int_equal(json_integer_value(json_object_get(res, "stderr_len")), 1);
        assert_true(json_is_true(json_object_get(res, "truncated")));
        assert_null(json_object_get(res, "ok"));
        assert_int_equal(m.raw_len, 3);
        assert_memory_equal(m.raw, "hi!", 3);
        jsonl_msg_done(&m);
        json_decref(res);
        tool_call_done(&c);
}

static int edit(const char *old_text, const char *new_text, bool all, json_t **ret, VsError **err) {
        VsToolArgs a = { .tool = VS_TOOL_FILE_EDIT, .path = "f.txt", .old_text = old_text, .new_text = new_text,
                         .replace_all = all };
        VsToolCall c;
        tool_call_init(&c, &a, &sandboxed);
        int r = drive(&c, ret, NULL, err);
        tool_call_done(&c);
        return r;
}

static void test_edit(void **state) {
        json_t *res = NULL;
        assert_int_equal(edit("two", "2", false, &res, NULL), 0);
        assert_string_equal(file, "one 2 three\n");
        assert_int_equal(json_integer_value(json_object_get(res, "replacements")), 1);
        assert_int_equal(json_integer_value(json_object_get(res, "retries")), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "size")), strlen(file));
        assert_int_equal(requests, 2);
        json_decref(res);
}

/* Another writer between our read and our write: its change is kept, ours
 * applied again on top of it. */
static void test_edit_concurrent_write(void **state) {
        interlopers = 3;
        json_t *res = NULL;
        assert_int_equal(edit("two", "2", false, &res, NULL), 0);
        assert_string_equal(file, "one 2 three\n+++");
        assert_int_equal(json_integer_value(json_object_get(res, "retries")), 3);
        json_decref(res);
}

static void test_edit_conflict(void **state) {
        interlopers = 1000;
        VsError *err = NULL;
        json_t *res = NULL;
        assert_true(edit("two", "2", false, &res, &err) < 0);
        assert_string_equal(vs_error_kind(err), "conflict");
        assert_null(strstr(file, " 2 "));
        /* One read and one refused write per attempt. */
        assert_int_equal(requests, 2 * TOOL_EDIT_MAX_ATTEMPTS);
        vs_error_free(err);
}

static void test_edit_refusals(void **state) {
        VsError *err = NULL;
        json_t *res = NULL;
        assert_true(edit("absent", "x", false, &res, &err) < 0);
        assert_string_equal(vs_error_kind(err), "edit_not_found");
        vs_error_free(TAKE_PTR(err));
        snprintf(file, sizeof file, "a a\n");
        assert_true(edit("a", "b", false, &res, &err) < 0);
        assert_string_equal(vs_error_kind(err), "edit_not_unique");
        vs_error_free(TAKE_PTR(err));
        assert_int_equal(edit("a", "b", true, &res, NULL), 0);
        assert_string_equal(file, "b b\n");
        assert_int_equal(json_integer_value(json_object_get(res, "replacements")), 2);
        json_decref(res);
}

/* The worker's own code reaches the caller. */
static void test_worker_error_passed_on(void **state) {
        VsToolArgs a = { .tool = VS_TOOL_FILE_WRITE, .path = "vectora.toml", .data = "x", .data_len = 1 };
        VsToolCall c;
        tool_call_init(&c, &a, &sandboxed);
        VsError *err = NULL;
        json_t *res = NULL;
        assert_true(drive(&c, &res, NULL, &err) < 0);
        assert_string_equal(vs_error_kind(err), "denied");
        assert_string_equal(vs_error_message(err), "vectora.toml is protected");
        vs_error_free(err);
        tool_call_done(&c);
}

static void test_malformed_reply(void **state) {
        break_replies = true;
        VsToolKind kinds[] = { VS_TOOL_TERMINAL, VS_TOOL_FILE_READ, VS_TOOL_FILE_WRITE, VS_TOOL_FILE_EDIT };
        char *argv[] = { (char *)"x", NULL };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                VsToolArgs a = { .tool = kinds[i], .argv = argv, .path = "f.txt", .old_text = "one", .new_text = "1" };
                VsToolCall c;
                tool_call_init(&c, &a, &sandboxed);
                VsError *err = NULL;
                json_t *res = NULL;
                assert_true(drive(&c, &res, NULL, &err) < 0);
                assert_string_equal(vs_error_kind(err), "worker_crashed");
                vs_error_free(err);
                tool_call_done(&c);
        }
        assert_string_equal(file, "one two three\n");
}

static void test_read_and_write(void **state) {
        VsToolArgs w = { .tool = VS_TOOL_FILE_WRITE, .path = "f.txt", .data = "new\n", .data_len = 4 };
        VsToolCall c;
        tool_call_init(&c, &w, &sandboxed);
        json_t *res = NULL;
        assert_int_equal(drive(&c, &res, NULL, NULL), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "size")), 4);
        json_decref(res);
        tool_call_done(&c);
        VsToolArgs r = { .tool = VS_TOOL_FILE_READ, .path = "f.txt" };
        tool_call_init(&c, &r, &sandboxed);
        JsonlMsg m = JSONL_MSG_INIT;
        assert_int_equal(drive(&c, &res, &m, NULL), 0);
        assert_int_equal(json_integer_value(json_object_get(res, "length")), 4);
        assert_true(json_is_true(json_object_get(res, "eof")));
        char sha[SHA256_HEX_LEN + 1];
        sha256_hex("new\n", 4, sha);
        assert_string_equal(json_string_value(json_object_get(res, "sha256")), sha);
        assert_memory_equal(m.raw, "new\n", 4);
        jsonl_msg_done(&m);
        json_decref(res);
        tool_call_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_limits_are_ceilings, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_result, setup, teardown),
                cmocka_unit_test_setup_teardown(test_edit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_edit_concurrent_write, setup, teardown),
                cmocka_unit_test_setup_teardown(test_edit_conflict, setup, teardown),
                cmocka_unit_test_setup_teardown(test_edit_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_worker_error_passed_on, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed_reply, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_and_write, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
