/* SPDX-License-Identifier: MIT */
/* What an MCP client sends, from arbitrary bytes: the JSON-RPC line parser,
 * the envelope check, initialize and tools/call decoding; every call that
 * decodes is turned into its daemon request and, with the message itself
 * as an arbitrary reply and the input as its raw payload, into a tool
 * result, which must encode as one line. */
#include <stdint.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(json_t *msg, const uint8_t *data, size_t size) {
        JsonRpcMessage m;
        json_t *id = NULL;
        VsError *e = NULL;
        if (jsonrpc_decode(msg, &m, &id, &e) < 0) {
                vs_error_free(e);
                if (id && !json_is_integer(id) && !json_is_string(id))
                        __builtin_trap();
                return;
        }
        if (m.kind != JSONRPC_RESPONSE && !m.method)
                __builtin_trap();
        McpInitialize in;
        if (mcp_decode_initialize(m.params, &in, &e) == 0 && !mcp_negotiate_version(in.protocol_version))
                __builtin_trap();
        vs_error_free(e), e = NULL;
        McpCall c;
        if (mcp_decode_call(m.params, &c, &e) < 0) {
                vs_error_free(e);
                return;
        }
        if (c.tool >= _MCP_TOOL_MAX || (c.tool == MCP_TOOL_FILE_READ && (c.limit == 0 || c.limit > MCP_READ_MAX_LIMIT)))
                __builtin_trap();
        json_t *req = NULL;
        const char *raw;
        size_t raw_len;
        if (mcp_call_request(&c, "/ws", &req, &raw, &raw_len) == 0)
                json_decref(req);
        for (int structured = 0; structured < 2; structured++) {
                json_t *res = NULL;
                if (mcp_call_result(&c, msg, (const char *)data, size, "embedded", structured, &res) < 0)
                        continue;
                StrBuf b = STRBUF_INIT;
                json_t *resp = jsonrpc_response(m.id, res, 0, NULL);
                if (!resp || jsonrpc_encode_line(&b, resp) < 0 || memchr(b.data, '\n', b.len) != b.data + b.len - 1)
                        __builtin_trap();
                strbuf_done(&b);
                json_decref(resp);
                json_decref(res);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *v = NULL;
        VsError *e = NULL;
        if (jsonrpc_parse_line((const char *)data, size, &v, &e) < 0) {
                vs_error_free(e);
                return 0;
        }
        if (json_is_array(v)) {
                size_t i;
                json_t *msg;
                json_array_foreach(v, i, msg) one(msg, data, size);
        } else
                one(v, data, size);
        json_decref(v);
        return 0;
}
