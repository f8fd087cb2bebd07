/* SPDX-License-Identifier: MIT */
/* JSON-RPC 2.0 line framing (src/cli/mcp/jsonrpc.h) and the MCP tool
 * server's pure part (src/cli/mcp/mcp.h). Expected values come from the
 * JSON-RPC 2.0 specification, the MCP revisions and the headers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"

static json_t *parse_ok(const char *line) {
        json_t *v = NULL;
        VsError *err = NULL;
        assert_int_equal(jsonrpc_parse_line(line, strlen(line), &v, &err), 0);
        assert_null(err);
        return v;
}

static int parse_fails(const char *line) {
        json_t *v = NULL;
        VsError *err = NULL;
        int r = jsonrpc_parse_line(line, strlen(line), &v, &err);
        assert_true(r < 0);
        assert_null(v);
        assert_non_null(err);
        vs_error_free(err);
        return r;
}

static void test_parse_line(void **state) {
        json_decref(parse_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"));
        json_t *b = parse_ok("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        assert_true(json_is_array(b));
        json_decref(b);
        assert_int_equal(parse_fails("{\"a\":"), -EBADMSG);
        assert_int_equal(parse_fails("42"), -EBADMSG);
        assert_int_equal(parse_fails("\"x\""), -EBADMSG);
        assert_int_equal(parse_fails("{\"a\":1,\"a\":2}"), -EBADMSG); /* duplicate key */
        assert_int_equal(parse_fails("[]"), -EINVAL);                   /* empty batch: invalid request */
        /* 33 levels: over JSONRPC_MAX_DEPTH, refused before parsing. */
        char deep[200] = "";
        for (int i = 0; i < 33; i++)
                strcat(deep, "[");
        for (int i = 0; i < 33; i++)
                strcat(deep, "]");
        assert_int_equal(parse_fails(deep), -EBADMSG);
        /* A batch over JSONRPC_MAX_BATCH. */
        char big[2000] = "[";
        for (int i = 0; i <= JSONRPC_MAX_BATCH; i++)
                strcat(big, i ? ",{}" : "{}");
        strcat(big, "]");
        assert_int_equal(parse_fails(big), -EINVAL);
}

static int decode(const char *line, JsonRpcMessage *m, json_t **ret_id, json_t **keep) {
        *keep = parse_ok(line);
        VsError *err = NULL;
        int r = jsonrpc_decode(*keep, m, ret_id, &err);
        if (r < 0)
                assert_non_null(err);
        vs_error_free(err);
        return r;
}

/* A line refused only for \u0000 or a lone surrogate still gives its id;
 * other bad lines, a surrogate pair and an escaped backslash give none. */
static void test_salvage_id(void **state) {
        static const char *const with_id[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\",\"params\":{\"a\":\"x\\u0000\"}}",
                "{\"id\":\"k\",\"params\":{\"a\":\"\\uD800\"}}",
                "{\"id\":3,\"params\":{\"a\":\"\\udc00\\ud800 \\\\\\u0000\"}}",
        };
        static const char *const without[] = {
                "{\"id\":3,\"params\":{\"a\":\"\\ud83d\\ude00\"}",      /* cut short */
                "{\"id\":3,\"a\":\"\\\\u0000\",}",                          /* \\ then text, and bad JSON */
                "{\"a\":\"\\u0000\"}",                                     /* no id */
                "{\"id\":[1],\"a\":\"\\u0000\"}",                          /* an id that is not one */
        };
        (void)state;
        for (size_t i = 0; i < sizeof with_id / sizeof *with_id; i++) {
                json_t *id = jsonrpc_salvage_id(with_id[i], strlen(with_id[i]));
                assert_non_null(id);
                assert_true(json_is_integer(id) || json_is_string(id));
                json_decref(id);
        }
        for (size_t i = 0; i < sizeof without / sizeof *without; i++)
                assert_null(jsonrpc_salvage_id(without[i], strlen(without[i])));
}

static void test_decode(void **state) {
        JsonRpcMessage m;
        json_t *id, *v;
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\",\"params\":{}}", &m, &id, &v), 0);
        assert_int_equal(m.kind, JSONRPC_REQUEST);
        assert_string_equal(m.method, "tools/list");
        assert_string_equal(json_string_value(m.id), "a");
        assert_true(json_is_object(m.params));
        json_decref(v);

        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, &id, &v), 0);
        assert_int_equal(m.kind, JSONRPC_NOTIFICATION);
        assert_null(m.id);
        json_decref(v);

        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &m, &id, &v), 0);
        assert_int_equal(m.kind, JSONRPC_RESPONSE);
        json_decref(v);

        /* Invalid requests; the id is still handed out for the error response. */
        assert_int_equal(decode("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}", &m, &id, &v), -EINVAL);
        assert_int_equal(json_integer_value(id), 7);
        json_decref(v);
        assert_int_equal(decode("{\"id\":7,\"method\":\"ping\"}", &m, &id, &v), -EINVAL);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", &m, &id, &v), -EINVAL);
        assert_null(id);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", &m, &id, &v), -EINVAL);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}", &m, &id, &v), -EINVAL);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"extra\":0}", &m, &id, &v), -EINVAL);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"result\":0}", &m, &id, &v), -EINVAL);
        json_decref(v);
        assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1}", &m, &id, &v), -EINVAL);
        json_decref(v);
}

static void test_encode(void **state) {
        StrBuf b = STRBUF_INIT;
        json_t *id = json_integer(4), *res = json_pack("{s:s}", "a", "line\nbreak");
        assert_int_equal(jsonrpc_encode_result(&b, id, res), 0);
        /* One line: the newline inside the string is escaped. */
        assert_string_equal(b.data, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"a\":\"line\\nbreak\"}}\n");
        strbuf_clear(&b);
        assert_int_equal(jsonrpc_encode_error(&b, NULL, JSONRPC_PARSE_ERROR, "bad"), 0);
        assert_string_equal(b.data, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"bad\"}}\n");
        strbuf_done(&b);
        json_decref(id);
        json_decref(res);
}

static void test_versions(void **state) {
        assert_string_equal(mcp_negotiate_version("2025-06-18"), "2025-06-18");
        assert_string_equal(mcp_negotiate_version("2025-03-26"), "2025-03-26");
        assert_string_equal(mcp_negotiate_version("2024-11-05"), "2024-11-05");
        assert_string_equal(mcp_negotiate_version("2023-01-01"), MCP_PROTOCOL_LATEST);
        assert_string_equal(mcp_negotiate_version(NULL), MCP_PROTOCOL_LATEST);
        assert_true(mcp_version_has_structured("2025-06-18"));
        assert_false(mcp_version_has_structured("2025-03-26"));
        assert_false(mcp_version_has_structured("2024-11-05"));

        McpInitialize in;
        VsError *err = NULL;
        json_t *p = json_loads("{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"},\"future\":1}", 0, NULL);
        assert_int_equal(mcp_decode_initialize(p, &in, &err), 0);
        assert_string_equal(in.protocol_version, "2025-06-18");
        assert_string_equal(in.client_name, "c");
        json_decref(p);
        p = json_loads("{\"capabilities\":{}}", 0, NULL);
        assert_int_equal(mcp_decode_initialize(p, &in, &err), -EINVAL);
        vs_error_free(err);
        json_decref(p);
}

static void test_tools_list(void **state) {
        json_t *l = mcp_tools_list(true, true, false, true);
        assert_non_null(l);
        json_t *tools = json_object_get(l, "tools");
        assert_int_equal(json_array_size(tools), _MCP_TOOL_MAX);
        for (size_t i = 0; i < json_array_size(tools); i++) {
                json_t *t = json_array_get(tools, i);
                assert_string_equal(json_string_value(json_object_get(t, "name")), mcp_tool_name((McpTool)i));
                json_t *s = json_object_get(t, "inputSchema");
                assert_string_equal(json_string_value(json_object_get(s, "type")), "object");
                assert_true(json_is_false(json_object_get(s, "additionalProperties")));
                /* process_list and list_dir (the root by default) need no argument. */
                assert_true(json_array_size(json_object_get(s, "required")) >= 1 || i == MCP_TOOL_PROCESS_LIST ||
                            i == MCP_TOOL_LIST_DIR);
                assert_int_equal(mcp_tool_needs_daemon((McpTool)i), i >= MCP_TOOL_PROCESS_START);
        }
        json_decref(l);
        /* Without commands (an allowlist, no daemon): no terminal, the file tools stay. */
        l = mcp_tools_list(false, false, true, true);
        assert_non_null(l);
        tools = json_object_get(l, "tools");
        bool terminal = false, file_read = false;
        for (size_t i = 0; i < json_array_size(tools); i++) {
                const char *n = json_string_value(json_object_get(json_array_get(tools, i), "name"));
                terminal |= strcmp(n, mcp_tool_name(MCP_TOOL_TERMINAL)) == 0;
                file_read |= strcmp(n, mcp_tool_name(MCP_TOOL_FILE_READ)) == 0;
                assert_true(strncmp(n, "process_", 8) != 0);
        }
        assert_false(terminal);
        assert_true(file_read);
        json_decref(l);
}

static int call(const char *params, McpCall *c, const char **kind, json_t **keep) {
        *keep = json_loads(params, 0, NULL);
        assert_non_null(*keep);
        VsError *err = NULL;
        int r = mcp_decode_call(*keep, c, &err);
        static char k[64];
        k[0] = 0;
        if (r < 0) {
                assert_non_null(err);
                snprintf(k, sizeof k, "%s", vs_error_kind(err) ? vs_error_kind(err) : "");
        }
        *kind = k;
        vs_error_free(err);
        return r;
}

static void test_decode_call(void **state) {
        McpCall c;
        const char *kind;
        json_t *v;
        assert_int_equal(call("{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"timeout\":5,\"cwd\":\"src\"}}", &c, &kind, &v), 0);
        assert_int_equal(c.tool, MCP_TOOL_TERMINAL);
        assert_string_equal(c.command, "ls");
        assert_string_equal(c.cwd, "src");
        assert_int_equal(c.timeout_s, 5);
        json_decref(v);

        assert_int_equal(call("{\"name\":\"file_read\",\"arguments\":{\"path\":\"a\"}}", &c, &kind, &v), 0);
        assert_int_equal(c.limit, MCP_READ_DEFAULT_LIMIT);
        json_decref(v);

        assert_int_equal(call("{\"name\":\"file_write\",\"arguments\":{\"path\":\"a\",\"content\":\"x\\u00e9\"}}", &c, &kind, &v), 0);
        assert_int_equal(c.content_len, 3); /* bytes, not characters */
        json_decref(v);

        assert_int_equal(call("{\"name\":\"file_edit\",\"arguments\":{\"path\":\"a\",\"old_string\":\"x\",\"new_string\":\"\",\"replace_all\":true}}", &c, &kind, &v), 0);
        assert_true(c.replace_all);
        json_decref(v);

        /* Protocol errors: unknown tool, malformed envelope. */
        assert_int_equal(call("{\"name\":\"rm\",\"arguments\":{}}", &c, &kind, &v), -ENOENT);
        assert_string_equal(kind, "unknown_tool");
        json_decref(v);
        assert_int_equal(call("{\"arguments\":{}}", &c, &kind, &v), -EINVAL);
        assert_string_equal(kind, "invalid_params");
        json_decref(v);
        assert_int_equal(call("{\"name\":\"terminal\",\"arguments\":[]}", &c, &kind, &v), -EINVAL);
        assert_string_equal(kind, "invalid_params");
        json_decref(v);

        /* Tool errors the agent can fix. */
        static const char *const bad[] = {
                "{\"name\":\"terminal\",\"arguments\":{}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"bogus\":1}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":1}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"timeout\":0}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"timeout\":604801}}",
                "{\"name\":\"file_read\",\"arguments\":{\"path\":\"a\",\"limit\":0}}",
                "{\"name\":\"file_read\",\"arguments\":{\"path\":\"a\",\"limit\":8388609}}",
                "{\"name\":\"file_read\",\"arguments\":{\"path\":\"\"}}",
                "{\"name\":\"file_write\",\"arguments\":{\"path\":\"a\"}}",
                "{\"name\":\"file_write\",\"arguments\":{\"path\":\"a\",\"content\":\"x\",\"content_base64\":\"eA==\"}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"env\":{\"A=B\":\"x\"}}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"env\":{\"\":\"x\"}}}",
                "{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\",\"env\":{\"A\":1}}}",
                "{\"name\":\"list_dir\",\"arguments\":{\"max_entries\":2001}}",
                "{\"name\":\"glob\",\"arguments\":{}}",
                "{\"name\":\"glob\",\"arguments\":{\"pattern\":\"\"}}",
                "{\"name\":\"glob\",\"arguments\":{\"pattern\":\"*\",\"max_results\":0}}",
                "{\"name\":\"grep\",\"arguments\":{\"pattern\":\"x\",\"context\":11}}",
                "{\"name\":\"grep\",\"arguments\":{\"pattern\":\"x\",\"max_matches\":5001}}",
                "{\"name\":\"grep\",\"arguments\":{\"pattern\":\"x\",\"glob\":\"\"}}",
                "{\"name\":\"file_edit\",\"arguments\":{\"path\":\"a\",\"old_string\":\"\",\"new_string\":\"b\"}}",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_int_equal(call(bad[i], &c, &kind, &v), -EINVAL);
                assert_string_equal(kind, "bad_arguments");
                json_decref(v);
        }
}

static void test_request(void **state) {
        McpCall c = { .tool = MCP_TOOL_FILE_WRITE, .path = "f", .content = "data", .content_len = 4 };
        json_t *req;
        const char *raw;
        size_t n;
        assert_int_equal(mcp_call_request(&c, "/ws", &req, &raw, &n), 0);
        assert_string_equal(json_string_value(json_object_get(req, "tool")), "file_write");
        assert_string_equal(json_string_value(json_object_get(req, "workspace")), "/ws");
        assert_null(json_object_get(req, "content")); /* sent raw: no 1 MiB header limit */
        assert_int_equal(n, 4);
        assert_memory_equal(raw, "data", 4);
        json_decref(req);
        c = (McpCall) { .tool = MCP_TOOL_TERMINAL, .command = "ls" };
        assert_int_equal(mcp_call_request(&c, "/ws", &req, &raw, &n), 0);
        assert_true(json_is_true(json_object_get(req, "binary")));
        assert_null(json_object_get(req, "timeout"));
        assert_null(json_object_get(req, "env"));
        assert_null(raw);
        json_decref(req);
        /* env and content_base64 go to the daemon API as they came. */
        json_t *env = json_pack("{s:s}", "K", "v");
        c = (McpCall) { .tool = MCP_TOOL_PROCESS_START, .command = "ls", .env = env };
        assert_int_equal(mcp_call_request(&c, "/ws", &req, &raw, &n), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(req, "env"), "K")), "v");
        json_decref(req);
        json_decref(env);
        c = (McpCall) { .tool = MCP_TOOL_FILE_WRITE, .path = "f", .content_base64 = "AAE=" };
        assert_int_equal(mcp_call_request(&c, "/ws", &req, &raw, &n), 0);
        assert_string_equal(json_string_value(json_object_get(req, "content_base64")), "AAE=");
        assert_null(raw);
        json_decref(req);
}

static const char *text0(json_t *res) {
        return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
}

/* A grep result a model could not hold is cut at 24 KiB, saying how to
 * see the rest; a small one is shown whole, grep -n style. */
static void test_find_text(void **state) {
        McpCall c = { .tool = MCP_TOOL_GREP, .pattern = "x" };
        json_t *reply = json_pack("{s:b,s:[],s:I,s:I,s:I,s:I}", "ok", 1, "matches", "match_count", (json_int_t)500,
                                  "files_matched", (json_int_t)1, "files_searched", (json_int_t)1, "files_skipped", (json_int_t)0);
        char text[201];
        memset(text, 'x', 200);
        text[200] = 0;
        for (int i = 1; i <= 500; i++)
                assert_int_equal(json_array_append_new(json_object_get(reply, "matches"),
                                                       json_pack("{s:s,s:i,s:s,s:b}", "path", "a.c", "line", i, "text", text,
                                                                 "match", 1)), 0);
        json_t *res = NULL;
        assert_int_equal(mcp_call_result(&c, reply, NULL, 0, "daemon", false, &res), 0);
        const char *t = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
        assert_true(strlen(t) < 26 * 1024);
        assert_non_null(strstr(t, "[text cut at 24 KiB: "));
        assert_non_null(strstr(t, " of 500 lines shown; lower context or max_matches"));
        assert_true(strncmp(t, "a.c:1:xx", 8) == 0);
        json_decref(res);
        json_decref(reply);
}

static void test_result(void **state) {
        McpCall c = { .tool = MCP_TOOL_TERMINAL, .command = "x" };
        json_t *reply = json_loads("{\"id\":1,\"ok\":true,\"exit_code\":2,\"stdout_len\":3,\"stderr_len\":2,"
                                   "\"sandboxed\":true,\"sandbox\":{\"backend\":\"local\",\"layers\":[\"namespaces\",\"seccomp\"],"
                                   "\"degraded\":[\"landlock: not supported\"]}}", 0, NULL);
        json_t *res = NULL;
        /* Invalid UTF-8 in the output becomes U+FFFD; the result stays a JSON string. */
        assert_int_equal(mcp_call_result(&c, reply, "a\xff\n" "e\n", 5, "daemon", true, &res), 0);
        assert_string_equal(text0(res), "a\xef\xbf\xbd\n[stderr]\ne\n[exit code 2]\n"
                                        "[sandbox: local jail (namespaces, seccomp); DEGRADED: landlock: not supported]");
        assert_true(json_is_false(json_object_get(res, "isError")));
        json_t *sc = json_object_get(res, "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "served_by")), "daemon");
        assert_null(json_object_get(sc, "id"));
        assert_int_equal(json_array_size(json_object_get(res, "content")), 2);
        json_decref(res);
        /* Without structured (older revisions): one text block, no structuredContent. */
        assert_int_equal(mcp_call_result(&c, reply, "abc" "de", 5, "daemon", false, &res), 0);
        assert_null(json_object_get(res, "structuredContent"));
        assert_int_equal(json_array_size(json_object_get(res, "content")), 1);
        json_decref(res);
        json_decref(reply);

        /* A refusal is a tool error with the code and the reason. */
        c = (McpCall) { .tool = MCP_TOOL_FILE_READ, .path = ".env" };
        reply = json_loads("{\"ok\":false,\"error\":{\"code\":\"denied\",\"message\":\"'.env' is masked\"},"
                           "\"sandboxed\":true,\"sandbox\":{\"backend\":\"local\",\"layers\":[]}}", 0, NULL);
        assert_int_equal(mcp_call_result(&c, reply, NULL, 0, "embedded", false, &res), 0);
        assert_true(json_is_true(json_object_get(res, "isError")));
        assert_string_equal(text0(res), "refused (denied): '.env' is masked\n[sandbox: local jail]");
        json_decref(res);
        json_decref(reply);

        /* Binary content is described, not dumped; a partial read says where to go on. */
        reply = json_loads("{\"ok\":true,\"offset\":0,\"size\":10,\"eof\":false,\"sandboxed\":false,"
                           "\"sandbox\":{\"backend\":\"none\"}}", 0, NULL);
        assert_int_equal(mcp_call_result(&c, reply, "\x80\x81", 2, "embedded", false, &res), 0);
        assert_string_equal(text0(res), "[binary content: 2 bytes at offset 0 of 10; not shown as text, inspect it with the terminal tool]\n"
                                        "[8 more bytes: call file_read with offset 2 to go on]\n"
                                        "[not sandboxed: the workspace has no [sandbox] in vectora.toml; this ran on the host]");
        json_decref(res);
        json_decref(reply);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_line),
                cmocka_unit_test(test_salvage_id),
                cmocka_unit_test(test_decode),
                cmocka_unit_test(test_encode),
                cmocka_unit_test(test_versions),
                cmocka_unit_test(test_tools_list),
                cmocka_unit_test(test_decode_call),
                cmocka_unit_test(test_request),
                cmocka_unit_test(test_find_text), cmocka_unit_test(test_result),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
