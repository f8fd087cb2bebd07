/* SPDX-License-Identifier: MIT */
/* The daemon API's names and argument tables (api.h): every tool and code
 * round-trips through its one name, every worker code passes through
 * under its own, a lower layer's kind becomes the documented code, and the
 * shared decoding of terminal's and process_start's arguments refuses
 * what the daemon refused before. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api.h"
#include "protocol.h"

static void test_names(void **state) {
        for (int t = 0; t < _API_TOOL_MAX; t++) {
                assert_non_null(api_tool_name((ApiTool)t));
                assert_int_equal(api_tool_from_name(api_tool_name((ApiTool)t)), t);
        }
        assert_null(api_tool_name(_API_TOOL_MAX));
        assert_int_equal(api_tool_from_name("exec"), _API_TOOL_INVALID);
        assert_int_equal(api_tool_from_name(NULL), _API_TOOL_INVALID);
        assert_string_equal(api_tool_name(API_TOOL_TERMINAL), "terminal");

        assert_null(api_error_name(API_OK));
        for (int e = API_OK + 1; e < _API_ERROR_MAX; e++) {
                assert_non_null(api_error_name((ApiError)e));
                assert_int_equal(api_error_from_name(api_error_name((ApiError)e)), e);
        }
        assert_int_equal(api_error_from_name("ok"), _API_ERROR_INVALID);
        assert_true(api_error_is("worker_crashed", API_ERROR_WORKER_CRASHED));
        assert_false(api_error_is(NULL, API_ERROR_WORKER_CRASHED));
        assert_false(api_error_is("worker_crashed", API_OK));
}

/* What the worker may answer reaches the client under the same name: no
 * worker code is turned into io on the way. */
static void test_worker_codes_pass(void **state) {
        for (int c = 0; c < _PROTOCOL_ERROR_MAX; c++) {
                const char *name = protocol_error_code_to_string((ProtocolErrorCode)c);
                assert_non_null(name);
                ApiError e = api_error_from_kind(name, API_ERROR_INTERNAL);
                assert_string_equal(api_error_name(e), name);
        }
}

static void test_from_kind(void **state) {
        assert_int_equal(api_error_from_kind(NULL, API_ERROR_WORKER_CRASHED), API_ERROR_WORKER_CRASHED);
        assert_int_equal(api_error_from_kind("conflict", API_ERROR_WORKER_CRASHED), API_ERROR_CONFLICT);
        /* config_locate's "not a directory": the documented code. */
        assert_int_equal(api_error_from_kind("workspace_invalid", API_ERROR_BAD_REQUEST), API_ERROR_WORKSPACE_NOT_FOUND);
        /* A code this side does not know: io, as the protocol says. */
        assert_int_equal(api_error_from_kind("something_new", API_ERROR_BAD_REQUEST), API_ERROR_IO);
}

static void test_outcome(void **state) {
        assert_string_equal(api_error_outcome(API_OK), "ok");
        assert_string_equal(api_error_outcome(API_ERROR_CONFIG_INVALID), "refused");
        assert_string_equal(api_error_outcome(API_ERROR_SANDBOX_UNAVAILABLE), "refused");
        assert_string_equal(api_error_outcome(API_ERROR_SANDBOX_REQUIRED), "refused");
        assert_string_equal(api_error_outcome(API_ERROR_FORBIDDEN), "refused");
        assert_string_equal(api_error_outcome(API_ERROR_DENIED), "denied");
        assert_string_equal(api_error_outcome(API_ERROR_WORKER_CRASHED), "error");
        assert_string_equal(api_error_outcome(API_ERROR_NOT_FOUND), "error");
}

/* Decodes line (with raw bytes when raw != NULL) with the run table and
 * prepares it; returns what api_run_args_prepare returned, or the
 * dispatch's failure. */
static int run_args(const char *line, const char *raw, ApiRunArgs *a, JsonlMsg *msg, VsError **err) {
        *msg = (JsonlMsg)JSONL_MSG_INIT;
        msg->obj = json_loads(line, 0, NULL);
        assert_non_null(msg->obj);
        if (raw) {
                msg->has_raw = true;
                msg->raw = strdup(raw);
                msg->raw_owner = msg->raw;
                msg->raw_len = strlen(raw);
        }
        memset(a, 0, sizeof *a);
        int r = json_dispatch(msg->obj, api_run_table, a, err);
        if (r < 0)
                return r;
        return api_run_args_prepare(a, msg, err);
}

static void run_done(ApiRunArgs *a, JsonlMsg *msg) {
        api_run_args_done(a);
        json_dispatch_done(api_run_table, a);
        jsonl_msg_done(msg);
}

static void test_run_args(void **state) {
        ApiRunArgs a;
        JsonlMsg m;
        VsError *err = NULL;

        assert_int_equal(run_args("{\"tool\":\"terminal\",\"workspace\":\"/w\",\"command\":\"echo hi\",\"env\":{\"A\":\"1\"},"
                                  "\"stdin\":\"in\"}", NULL, &a, &m, &err), 0);
        char **argv = api_run_argv(&a);
        assert_string_equal(argv[0], "/bin/sh");
        assert_string_equal(argv[1], "-c");
        assert_string_equal(argv[2], "echo hi");
        assert_null(argv[3]);
        assert_string_equal(a.envv[0], "A=1");
        assert_null(a.envv[1]);
        assert_int_equal(a.stdin_len, 2);
        assert_memory_equal(a.stdin_data, "in", 2);
        json_t *t = api_run_target(&a);
        assert_string_equal(json_string_value(t), "echo hi");
        json_decref(t);
        run_done(&a, &m);

        /* argv, stdin from the raw payload (taken from the message). */
        assert_int_equal(run_args("{\"argv\":[\"/bin/cat\",\"-\"]}", "abc", &a, &m, &err), 0);
        assert_string_equal(api_run_argv(&a)[0], "/bin/cat");
        assert_int_equal(a.stdin_len, 3);
        assert_memory_equal(a.stdin_data, "abc", 3);
        t = api_run_target(&a);
        assert_int_equal(json_array_size(t), 2);
        json_decref(t);
        run_done(&a, &m);

        static const char *const refused[][2] = {
                { "{\"command\":\"x\",\"argv\":[\"y\"]}", "give exactly one of" },
                { "{}", "give exactly one of" },
                { "{\"argv\":[]}", "give exactly one of" },
                { "{\"command\":\"x\",\"env\":{\"A=B\":\"1\"}}", "\"env\" keys" },
                { "{\"command\":\"x\",\"env\":{\"\":\"1\"}}", "\"env\" keys" },
                { "{\"command\":\"x\",\"stdin\":\"a\",\"stdin_base64\":\"YQ==\"}", "give stdin once" },
                { "{\"command\":\"x\",\"stdin_base64\":\"not base64!\"}", "not valid base64" },
        };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
                assert_int_equal(run_args(refused[i][0], NULL, &a, &m, &err), -EINVAL);
                assert_string_equal(vs_error_kind(err), "bad_request");
                assert_non_null(strstr(vs_error_message(err), refused[i][1]));
                vs_error_free(err);
                err = NULL;
                run_done(&a, &m);
        }
        /* stdin twice: a field and the raw payload. */
        assert_int_equal(run_args("{\"command\":\"x\",\"stdin\":\"a\"}", "b", &a, &m, &err), -EINVAL);
        vs_error_free(err);
        err = NULL;
        run_done(&a, &m);
        /* Unknown fields are refused by the table. */
        assert_true(run_args("{\"command\":\"x\",\"shell\":true}", NULL, &a, &m, &err) < 0);
        vs_error_free(err);
        err = NULL;
        run_done(&a, &m);
}

/* process_start shares the table and refuses what only terminal takes. */
static void test_terminal_only(void **state) {
        json_t *o = json_loads("{\"command\":\"x\",\"timeout\":5}", 0, NULL);
        assert_null(api_run_terminal_only(o));
        json_decref(o);
        static const char *const only[] = { "timeout_ms", "max_output", "binary" };
        for (size_t i = 0; i < 3; i++) {
                o = json_pack("{s:s,s:i}", "command", "x", only[i], 1);
                assert_string_equal(api_run_terminal_only(o), only[i]);
                json_decref(o);
        }
}

static void test_write_args(void **state) {
        JsonlMsg m = JSONL_MSG_INIT;
        ApiWriteArgs a = { 0 };
        VsError *err = NULL;
        m.obj = json_loads("{\"path\":\"f\",\"content_base64\":\"aGk=\",\"mode\":420}", 0, NULL);
        assert_int_equal(json_dispatch(m.obj, api_file_write_table, &a, &err), 0);
        assert_int_equal(api_write_args_prepare(&a, m.obj, &m, &err), 0);
        assert_true(a.has_mode);
        assert_int_equal(a.mode, 0644);
        assert_int_equal(a.len, 2);
        assert_memory_equal(a.data, "hi", 2);
        free(a.data);
        json_dispatch_done(api_file_write_table, &a);
        jsonl_msg_done(&m);

        static const char *const refused[][2] = {
                { "{\"path\":\"f\",\"content\":\"x\",\"mode\":4096}", "permission bits" },
                { "{\"path\":\"f\"}", "give the content once" },
                { "{\"path\":\"f\",\"content\":\"x\",\"content_base64\":\"eA==\"}", "give the content once" },
                { "{\"path\":\"f\",\"content_base64\":\"***\"}", "not valid base64" },
        };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
                m = (JsonlMsg)JSONL_MSG_INIT;
                a = (ApiWriteArgs){ 0 };
                m.obj = json_loads(refused[i][0], 0, NULL);
                assert_int_equal(json_dispatch(m.obj, api_file_write_table, &a, &err), 0);
                assert_int_equal(api_write_args_prepare(&a, m.obj, &m, &err), -EINVAL);
                assert_non_null(strstr(vs_error_message(err), refused[i][1]));
                vs_error_free(err);
                err = NULL;
                free(a.data);
                json_dispatch_done(api_file_write_table, &a);
                jsonl_msg_done(&m);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_worker_codes_pass),
                cmocka_unit_test(test_from_kind),
                cmocka_unit_test(test_outcome),
                cmocka_unit_test(test_run_args),
                cmocka_unit_test(test_terminal_only),
                cmocka_unit_test(test_write_args),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
