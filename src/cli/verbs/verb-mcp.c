/* SPDX-License-Identifier: MIT */
/* vectora-sandbox mcp: an MCP server over stdio (JSON-RPC 2.0, one message
 * per line) exposing the workspace's tools. A call goes through
 * vectora-sandboxd when its socket answers, otherwise to a worker this
 * process keeps for the session (src/cli/mcp/mcp-embedded.c). Standard output
 * carries only protocol messages; diagnostics go to standard error. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "audit.h"
#include "cli.h"
#include "client.h"
#include "fd-util.h"
#include "jsonl.h"
#include "jsonrpc.h"
#include "mcp-input.h"
#include "mcp-serve.h"
#include "vs-build-config.h"

/* MCP: a request other than ping before initialize. */
#define MCP_NOT_INITIALIZED -32002

typedef struct McpServer {
        char *workspace;     /* absolute */
        const char *version; /* negotiated; NULL before initialize */
        char *socket;        /* the daemon's, or NULL */
        int fd;              /* connection to the daemon, or -EBADF */
        JsonlReader *rd;
        uint64_t next_id;
        const char *mode;    /* what served the last call, for the log */
        bool require_sandbox; /* every request carries "require_sandbox": true */
        McpEmbedded emb;
        McpInput *in;        /* stdin, read while a call runs */
} McpServer;

static void daemon_close(McpServer *s) {
        if (s->fd >= 0)
                mcp_input_call_fd(s->in, -1); /* before the descriptor can be reused */
        s->fd = safe_close(s->fd);
        jsonl_reader_free(TAKE_PTR(s->rd));
}

/* Connects when the daemon's socket answers; quiet otherwise (the caller
 * then serves the call embedded). */
static bool daemon_connect(McpServer *s) {
        if (s->fd >= 0)
                return true;
        _cleanup_free_ char *why = NULL;
        if (!s->socket || client_connect(s->socket, &s->fd, &why) < 0)
                return false;
        if (jsonl_reader_new(&s->rd) < 0) {
                daemon_close(s);
                return false;
        }
        return true;
}

/* One daemon API call over the CLI's one transport (client.h). */
static int daemon_call(McpServer *s, json_t *req, const char *raw, size_t raw_len, JsonlMsg *ret, bool *ret_sent) {
        return client_call(s->fd, s->rd, ++s->next_id, req, raw, raw_len, ret, ret_sent);
}

static json_t *serve_call(McpServer *s, const McpCall *c) {
        json_t *reply = NULL;
        _cleanup_free_ char *raw = NULL;
        size_t raw_len = 0;
        const char *mode;
        if (daemon_connect(s)) {
                mode = "daemon";
                mcp_input_call_fd(s->in, s->fd);
                json_t *req = NULL;
                const char *in = NULL;
                size_t in_len = 0;
                if (mcp_call_request(c, s->workspace, &req, &in, &in_len) < 0)
                        return NULL;
                if (s->require_sandbox && json_object_set_new(req, "require_sandbox", json_true()) < 0) {
                        json_decref(req);
                        return NULL;
                }
                JsonlMsg m = JSONL_MSG_INIT;
                bool sent;
                int r = daemon_call(s, req, in, in_len, &m, &sent);
                json_decref(req);
                if (r == -ENOMEM)
                        return NULL;
                if (r < 0) {
                        /* Not re-run embedded: the command may have run. */
                        daemon_close(s);
                        if (!mcp_input_call_cancelled(s->in)) /* else closed by us: the daemon cancelled it */
                                fprintf(stderr, "vectora-sandbox: mcp: lost vectora-sandboxd at %s: %s\n", s->socket,
                                        strerror(-r));
                        return sent ? mcp_tool_error("daemon_lost",
                                                     "the connection to vectora-sandboxd was lost during the call; it may or may not have run. "
                                                     "Check its effect before retrying")
                                    : mcp_tool_error("daemon_unreachable",
                                                     "the call could not be sent to vectora-sandboxd; nothing ran. Retry it");
                }
                reply = TAKE_PTR(m.obj);
                if (m.has_raw)
                        raw = jsonl_msg_steal_raw(&m, &raw_len);
                jsonl_msg_done(&m);
        } else if (mcp_tool_needs_daemon(c->tool)) {
                return mcp_tool_error(api_error_name(API_ERROR_DAEMON_REQUIRED),
                                      "background processes are kept by vectora-sandboxd, and none is reachable; run the "
                                      "command with the terminal tool instead, or ask the user to start the daemon");
        } else {
                mode = "embedded";
                if (mcp_embedded_call(&s->emb, c, &reply, &raw, &raw_len) < 0)
                        return NULL;
        }
        if (!s->mode || !streq(s->mode, mode))
                fprintf(stderr, "vectora-sandbox: mcp: serving %s %s\n", s->workspace,
                        streq(mode, "daemon") ? "through vectora-sandboxd" : "with its own worker (no daemon reachable)");
        s->mode = mode;
        json_t *res = NULL;
        (void)mcp_call_result(c, reply, raw, raw_len, mode, mcp_version_has_structured(s->version), &res);
        json_decref(reply);
        return res;
}

static json_t *on_initialize(McpServer *s, json_t *params, int *ret_code, const char **ret_msg, VsError **err) {
        McpInitialize in;
        if (mcp_decode_initialize(params, &in, err) < 0) {
                *ret_code = JSONRPC_INVALID_PARAMS;
                *ret_msg = vs_error_message(*err);
                return NULL;
        }
        s->version = mcp_negotiate_version(in.protocol_version);
        return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s++}", "protocolVersion", s->version, "capabilities", "tools",
                         "listChanged", false, "serverInfo", "name", "vectora-sandbox", "version", VS_VERSION,
                         "instructions", /* s++: three strings, concatenated */
                         "These tools act on the workspace ", s->workspace,
                         " inside its sandbox (vectora.toml's [sandbox]). Use terminal to run commands and the file "
                         "tools to read and change files. Each result ends with a line saying how it was sandboxed. "
                         "A refusal (masked secret, read-only path, path outside the workspace) is final: report it, "
                         "do not try to get around it.");
}

/* One message; the response to send, or NULL for none (a notification, a
 * response, or out of memory). */
static json_t *on_message(McpServer *s, json_t *msg) {
        JsonRpcMessage m;
        json_t *id = NULL;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (jsonrpc_decode(msg, &m, &id, &err) < 0)
                return jsonrpc_response(id, NULL, JSONRPC_INVALID_REQUEST, vs_error_message(err));
        if (m.kind != JSONRPC_REQUEST)
                return NULL; /* notifications/initialized, cancelled, progress: nothing to answer */
        json_t *result = NULL;
        int code = 0;
        const char *why = NULL;
        if (streq(m.method, "initialize"))
                result = on_initialize(s, m.params, &code, &why, &err);
        else if (streq(m.method, "ping"))
                result = json_object();
        else if (!s->version) {
                code = MCP_NOT_INITIALIZED;
                why = "send initialize first";
        } else if (streq(m.method, "tools/list"))
                result = mcp_tools_list();
        else if (streq(m.method, "tools/call")) {
                McpCall c;
                if (mcp_decode_call(m.params, &c, &err) == 0) {
                        /* Cancelled (notifications/cancelled): no response. */
                        if (!mcp_input_call_begin(s->in, m.id))
                                return NULL;
                        result = serve_call(s, &c);
                        if (mcp_input_call_end(s->in)) {
                                json_decref(result);
                                return NULL;
                        }
                } else if (streq_ptr(vs_error_kind(err), "bad_arguments"))
                        result = mcp_tool_error("bad_arguments", vs_error_message(err));
                else {
                        code = JSONRPC_INVALID_PARAMS;
                        why = vs_error_message(err);
                }
        } else {
                code = JSONRPC_METHOD_NOT_FOUND;
                why = "this server has: initialize, ping, tools/list, tools/call";
        }
        if (!result && !code) {
                code = JSONRPC_INTERNAL_ERROR;
                why = "out of memory";
        }
        json_t *resp = jsonrpc_response(m.id, result, code, why);
        json_decref(result);
        return resp;
}

static int on_line(McpServer *s, const char *p, size_t n, StrBuf *out) {
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
        if (n == 0)
                return 0;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        _cleanup_(json_decrefp) json_t *v = NULL;
        int r = jsonrpc_parse_line(p, n, &v, &err);
        if (r == -ENOMEM)
                return r;
        _cleanup_(json_decrefp) json_t *id = r == -EBADMSG ? jsonrpc_salvage_id(p, n) : NULL;
        if (id)
                return jsonrpc_encode_error(out, id, JSONRPC_INVALID_PARAMS,
                                            "a string holds \\u0000 (a NUL byte) or a lone UTF-16 surrogate, which "
                                            "file content and commands cannot carry; send the text without it (write "
                                            "bytes like these with the terminal tool, e.g. printf)");
        if (r < 0)
                return jsonrpc_encode_error(out, NULL, r == -EINVAL ? JSONRPC_INVALID_REQUEST : JSONRPC_PARSE_ERROR,
                                            vs_error_message(err));
        if (json_is_object(v)) {
                _cleanup_(json_decrefp) json_t *resp = on_message(s, v);
                return resp ? jsonrpc_encode_line(out, resp) : 0;
        }
        /* A batch: part of revision 2025-03-26 only. */
        if (!s->version || !streq(s->version, "2025-03-26"))
                return jsonrpc_encode_error(out, NULL, JSONRPC_INVALID_REQUEST,
                                            "batches are not part of the negotiated MCP revision; send one message per line");
        _cleanup_(json_decrefp) json_t *all = json_array();
        size_t i;
        json_t *msg;
        json_array_foreach(v, i, msg) {
                json_t *resp = on_message(s, msg);
                if (resp && json_array_append_new(all, resp) < 0)
                        return -ENOMEM;
        }
        return json_array_size(all) ? jsonrpc_encode_line(out, all) : 0;
}

int verb_mcp(const CliArgs *a) {
        const char *ws = a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".";
        if (a->json)
                return cli_fail_code(a, EXIT_USAGE, "usage", "mcp: its standard output is JSON-RPC already; drop --json");
        /* As written: the core checks a path through a symlink against the
         * workspace it lies in as spelled (config_locate()). */
        _cleanup_free_ char *abs = cli_workspace_abs(a);
        if (!abs)
                return cli_fail(EXIT_REFUSED, "mcp: workspace %s: %s", ws, strerror(errno));
        /* Calls served here are audited here; through the daemon, by it. */
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (a->val[OPT_AUDIT_LOG] && audit_open(a->val[OPT_AUDIT_LOG], &err) < 0)
                return cli_fail(EXIT_REFUSED, "mcp: %s", vs_error_message(err));
        McpServer s = { .fd = -EBADF, .workspace = abs, .require_sandbox = a->require_sandbox,
                        .emb = { .workspace = abs, .require_sandbox = a->require_sandbox, .cancel_fd = -EBADF } };
        /* The daemon named, or the one at the default socket when it starts:
         * cli_socket() checks that socket is the caller's own. */
        _cleanup_free_ char *sock = NULL;
        if (cli_socket(a) && !(sock = strdup(cli_socket(a))))
                return cli_fail(EXIT_REFUSED, "mcp: out of memory");
        s.socket = sock;
        /* A client that goes away ends us through EOF or EPIPE, not a signal. */
        signal(SIGPIPE, SIG_IGN);

        int rc = 0;
        int r = mcp_input_start(&s.in);
        if (r < 0)
                return cli_fail(EXIT_REFUSED, "mcp: cannot start reading standard input: %s", strerror(-r));
        s.emb.cancel_fd = mcp_input_cancel_fd(s.in);
        for (;;) {
                size_t n = 0;
                _cleanup_free_ char *line = mcp_input_next(s.in, &n);
                if (!line)
                        break;
                _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
                if ((r = on_line(&s, line, n, &out)) < 0) {
                        rc = cli_fail(EXIT_REFUSED, "mcp: %s", strerror(-r));
                        break;
                }
                /* Answer each message as it is done: a client may wait for it. */
                if (out.len && mcp_output(s.in, out.data, out.len) < 0)
                        break;
        }
        mcp_input_stop(s.in);
        daemon_close(&s);
        mcp_embedded_done(&s.emb);
        return rc;
}
