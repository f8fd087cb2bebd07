/* SPDX-License-Identifier: MIT */
/* A request from the daemon's socket to its reply, through the daemon's
 * own server (server.c), dispatch (tools.c, tools_handle) and end
 * (request.c, request_finish), with the test as the client on the socket
 * and as the worker on a socketpair (fake-worker.h): unknown tools, bad
 * envelopes and bad arguments are refused by name before any worker
 * starts, a line that is not JSON gets its error, and a file_read goes to
 * the worker and its bytes come back in the reply. */
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
#include <sys/un.h>
#include <unistd.h>

#include "daemon-tools.h"
#include "fake-worker.h"
#include "path-util.h"
#include "terminal.h"
#include "workspace.h"

static char tmp[64];
static char *dir;
static uv_loop_t loop;
static Server srv;
static int client = -1;
static StrBuf inbox = STRBUF_INIT; /* what the client read, not yet a whole line */

static const ServerHandlers handlers = {
        .request = tools_handle,
        .bad_line = tools_reply_bad_line,
        .client_closing = pty_close_all,
        .client_resumed = pty_resume,
};

static int setup(void **state) {
        snprintf(tmp, sizeof tmp, "/tmp/vs-req-XXXXXX");
        assert_non_null(mkdtemp(tmp));
        fw_server(&srv, &loop, tmp);
        srv.handlers = &handlers;
        srv.opt.max_clients = 16;
        srv.opt.socket_path = path_join(tmp, "d.sock");
        VsError *err = NULL;
        if (server_start(&srv, &err) < 0)
                fail_msg("server_start: %s", vs_error_message(err));
        dir = fw_workspace(tmp, "[sandbox]\nenabled = false\n");

        client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(client >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", srv.opt.socket_path);
        assert_int_equal(connect(client, (struct sockaddr *) &sa, sizeof sa), 0);
        return 0;
}

static int teardown(void **state) {
        close(client);
        client = -1;
        strbuf_done(&inbox);
        srv.shutting_down = true;
        server_stop(&srv);
        workspaces_free_all(&srv);
        fw_server_done(&srv);
        free(srv.opt.socket_path);
        free(dir);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        return system(cmd) == 0 ? 0 : -1;
}

/* The daemon's next reply line to the client, the loop run meanwhile. */
static json_t *reply(void) {
        uint64_t end = now_ms() + 5000;
        for (;;) {
                char *nl = inbox.len ? memchr(inbox.data, '\n', inbox.len) : NULL;
                if (nl) {
                        json_error_t je;
                        json_t *o = json_loadb(inbox.data, (size_t) (nl - inbox.data), 0, &je);
                        if (!o)
                                fail_msg("reply is not JSON: %s", je.text);
                        strbuf_consume(&inbox, (size_t) (nl - inbox.data) + 1);
                        return o;
                }
                if (now_ms() > end)
                        fail_msg("no reply in 5 s");
                uv_run(&loop, UV_RUN_NOWAIT);
                struct pollfd p = { .fd = client, .events = POLLIN };
                if (poll(&p, 1, 1) > 0) {
                        char buf[65536];
                        ssize_t n = read(client, buf, sizeof buf);
                        assert_true(n > 0);
                        assert_int_equal(strbuf_append(&inbox, buf, (size_t) n), 0);
                }
        }
}

static json_t *call(const char *line) {
        size_t n = strlen(line);
        assert_int_equal(write(client, line, n), (ssize_t) n);
        return reply();
}

/* The reply refuses with code, its message holding what; nothing was
 * spawned for it. */
static void assert_refused(const char *line, const char *code, const char *what) {
        json_t *o = call(line);
        if (!json_is_false(json_object_get(o, "ok")))
                fail_msg("%s: not refused", line);
        json_t *e = json_object_get(o, "error");
        const char *got = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        if (!got || !streq(got, code) || !msg || !strstr(msg, what))
                fail_msg("%s: refused with %s \"%s\", not %s \"...%s...\"", line, got, msg, code, what);
        assert_int_equal(fw_spawns, 0);
        json_decref(o);
}

static void test_unknown_tool_and_envelope(void **state) {
        assert_refused("{\"id\":1,\"tool\":\"format_disk\",\"workspace\":\"/\"}\n", "unknown_tool", "known: terminal");
        assert_refused("{\"id\":2,\"workspace\":\"/\"}\n", "bad_request", "missing \"tool\"");
        assert_refused("{\"id\":[3],\"tool\":\"terminal\"}\n", "bad_request", "\"id\" must be an integer or a string");
        assert_refused("{\"id\":4,\"tool\":\"terminal\",\"command\":\"true\"}\n", "bad_request", "missing \"workspace\"");
        assert_refused("{\"id\":5,\"tool\":\"terminal\",\"workspace\":\"rel/dir\",\"command\":\"true\"}\n", "bad_request",
                       "absolute path");
        /* The id comes back as it was sent, whatever the outcome. */
        json_t *o = call("{\"id\":\"abc\",\"tool\":\"nope\"}\n");
        assert_string_equal(json_string_value(json_object_get(o, "id")), "abc");
        json_decref(o);
}

static void test_bad_line(void **state) {
        assert_refused("this is not json\n", "bad_request", "");
}

static void test_bad_arguments(void **state) {
        char line[1024];
        snprintf(line, sizeof line, "{\"id\":1,\"tool\":\"file_read\",\"workspace\":\"%s\",\"path\":\"a\",\"colour\":1}\n",
                 dir);
        assert_refused(line, "bad_request", "unknown field 'colour'");
        snprintf(line, sizeof line, "{\"id\":2,\"tool\":\"file_read\",\"workspace\":\"%s\"}\n", dir);
        assert_refused(line, "bad_request", "'path'");
        snprintf(line, sizeof line, "{\"id\":3,\"tool\":\"file_read\",\"workspace\":\"%s\",\"path\":7}\n", dir);
        assert_refused(line, "bad_request", "'path'");
        snprintf(line, sizeof line,
                 "{\"id\":4,\"tool\":\"terminal\",\"workspace\":\"%s\",\"command\":\"x\",\"argv\":[\"y\"]}\n", dir);
        assert_refused(line, "bad_request", "");
        snprintf(line, sizeof line,
                 "{\"id\":5,\"tool\":\"terminal\",\"workspace\":\"%s\",\"command\":\"x\",\"require_sandbox\":\"yes\"}\n",
                 dir);
        assert_refused(line, "bad_request", "\"require_sandbox\" must be a boolean");
        /* Unsandboxed, and the call requires a sandbox: nothing runs. */
        snprintf(line, sizeof line,
                 "{\"id\":6,\"tool\":\"terminal\",\"workspace\":\"%s\",\"command\":\"x\",\"require_sandbox\":true}\n",
                 dir);
        assert_refused(line, "sandbox_required", "nothing ran");
}

/* A call that passes: the worker is started for it, gets the request with
 * the path under the workspace, and its bytes are the reply's. */
static void test_file_read_through_the_worker(void **state) {
        char line[1024];
        snprintf(line, sizeof line, "{\"id\":9,\"tool\":\"file_read\",\"workspace\":\"%s\",\"path\":\"a.txt\"}\n", dir);
        assert_int_equal(write(client, line, strlen(line)), (ssize_t) strlen(line));
        uint64_t end = now_ms() + 5000;
        while (fw_spawns == 0 && now_ms() < end) {
                uv_run(&loop, UV_RUN_NOWAIT);
                usleep(1000);
        }
        assert_int_equal(fw_spawns, 1);
        fw_handshake(&loop);
        JsonlMsg m;
        assert_int_equal(fw_recv(&loop, &m), 0);
        ProtocolReadFileRequest q;
        assert_int_equal(protocol_decode_read_file_request(m.obj, &q, NULL), 0);
        assert_string_equal(q.path, "a.txt");
        StrBuf out = STRBUF_INIT;
        ProtocolReadFileReply rep = { .size = 6, .sha256 = "0000000000000000000000000000000000000000000000000000000000000000",
                                      .eof = true };
        assert_int_equal(protocol_encode_read_file_reply(&out, q.head.id, &rep, "hello\n", 6), 0);
        jsonl_msg_done(&m);
        fw_send(&out);
        json_t *o = reply();
        if (!json_is_true(json_object_get(o, "ok")))
                fail_msg("not ok: %s", json_dumps(o, 0));
        assert_int_equal(json_integer_value(json_object_get(o, "id")), 9);
        assert_string_equal(json_string_value(json_object_get(o, "content")), "hello\n");
        assert_false(json_is_true(json_object_get(o, "sandboxed")));
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_unknown_tool_and_envelope, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_file_read_through_the_worker, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
